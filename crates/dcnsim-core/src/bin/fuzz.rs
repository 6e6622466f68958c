//! `dcnsim-fuzz`: run one fuzz target of `dcnsim_core::fuzz` for a time budget.
//!
//! ```text
//! dcnsim-fuzz TARGET [--seconds N] [--cpu-seconds C] [--seed S] [--state DIR]
//! ```
//! TARGET is `scenario_toml`, `scenario_json`, `flowlist`, `trace` or `cdf`. The process
//! supervises a worker (itself with `--worker`): the worker generates inputs from the seed,
//! catches panics and saves each panicking input as `panic-<hash>` in the target's corpus
//! folder (`crates/dcnsim-core/fuzz/corpus/TARGET/`); it writes every input to
//! `DIR/TARGET.cur` before running it, so when the worker dies without unwinding (an abort on
//! allocation failure under a memory cap, a stack overflow) the supervisor saves that input as
//! `abort-<hash>` and starts a new worker with the next seed. Inputs slower than 2 s are
//! saved as `slow-<hash>` in `DIR`. `--seconds` bounds the wall time (default 60 s);
//! `--cpu-seconds` also bounds the CPU time the workers spend in total, so a run on a shared
//! machine can be given a fixed amount of work (the wall bound then defaults to ten times
//! it). `DIR` (default: the system's temporary folder) receives a write per input: put it on a
//! memory file system (e.g. `/dev/shm`) or the writes, not the fuzzing, set the pace.
//! Progress lines and a final summary go to stdout:
//! `fuzz TARGET inputs=... panics=... aborts=... wall_s=... cpu_s=...`.

use dcnsim_core::fuzz::{self, Outcome, Target};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn repo_root() -> PathBuf {
    crate_dir().join("../..")
}

/// CPU seconds (user + system) of this process and its waited-for children, from /proc.
fn cpu_seconds(children: bool) -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which is in parentheses): utime is field 14, stime 15,
    // cutime 16, cstime 17 (1-based), in clock ticks of 1/100 s.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    let get = |i: usize| f.get(i - 3).copied().unwrap_or(0.0);
    let own = get(14) + get(15);
    (if children { own + get(16) + get(17) } else { own }) / 100.0
}

struct Args {
    target: Target,
    seconds: u64,
    /// CPU-time budget of the workers together (the supervisor passes each worker what is
    /// left of it).
    cpu_seconds: Option<u64>,
    seed: u64,
    state: PathBuf,
    worker: bool,
    /// Skip replaying the seeds (a restarted worker: the input that killed the last one
    /// is now in the corpus).
    no_seeds: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let name = it.next().ok_or("usage: dcnsim-fuzz TARGET [--seconds N] [--cpu-seconds C] [--seed S] [--state DIR]")?;
    let target = Target::from_name(&name)
        .ok_or_else(|| format!("unknown target '{name}'; use one of: {}", Target::ALL.map(|t| t.name()).join(", ")))?;
    let mut a = Args {
        target,
        seconds: 60,
        cpu_seconds: None,
        seed: 1,
        state: std::env::temp_dir().join("dcnsim-fuzz"),
        worker: false,
        no_seeds: false,
    };
    let mut seconds_given = false;
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--seconds" => {
                a.seconds = val()?.parse().map_err(|_| "--seconds: a whole number")?;
                seconds_given = true;
            }
            "--cpu-seconds" => a.cpu_seconds = Some(val()?.parse().map_err(|_| "--cpu-seconds: a whole number")?),
            "--seed" => a.seed = val()?.parse().map_err(|_| "--seed: a whole number")?,
            "--state" => a.state = PathBuf::from(val()?),
            "--worker" => a.worker = true,
            "--no-seeds" => a.no_seeds = true,
            _ => return Err(format!("unknown option {k}")),
        }
    }
    if let (Some(c), false) = (a.cpu_seconds, seconds_given) {
        a.seconds = c.saturating_mul(10);
    }
    Ok(a)
}

fn save(dir: &Path, prefix: &str, input: &[u8]) -> PathBuf {
    let _ = std::fs::create_dir_all(dir);
    let p = dir.join(format!("{prefix}-{}", fuzz::input_name(input)));
    let _ = std::fs::write(&p, input);
    p
}

fn worker(a: &Args) -> i32 {
    let fixtures = a.state.join(format!("{}-files", a.target.name()));
    if let Err(e) = fuzz::write_fixture_files(&fixtures) {
        eprintln!("cannot write fixture files: {e}");
        return 2;
    }
    // Panics are expected findings: keep their messages short on stderr.
    std::panic::set_hook(Box::new(|_| {}));
    let corpus = fuzz::corpus_dir(&crate_dir(), a.target);
    let seeds = fuzz::seeds(a.target, &repo_root(), &crate_dir());
    let mut m = fuzz::Mutator::new(a.seed, seeds.clone());
    let cur_path = a.state.join(format!("{}.cur", a.target.name()));
    let start = Instant::now();
    let deadline = start + Duration::from_secs(a.seconds);
    let (mut inputs, mut panics) = (0u64, 0u64);
    let mut last_report = start;
    // The seeds themselves first, then mutations.
    let mut queue: Vec<Vec<u8>> = if a.no_seeds { Vec::new() } else { seeds };
    queue.reverse();
    // One saved input per distinct panic message (its first line): a bug found once is
    // usually hit again and again.
    let mut seen: std::collections::HashSet<String> = Default::default();
    let mut out = std::io::stdout();
    let cpu_budget = a.cpu_seconds.map(|c| c as f64);
    let mut cpu_spent = false;
    while Instant::now() < deadline && !cpu_spent {
        let input = queue.pop().unwrap_or_else(|| m.next_input());
        let _ = std::fs::write(&cur_path, &input);
        let t0 = Instant::now();
        let outcome = fuzz::check(a.target, &input, &fixtures);
        let took = t0.elapsed();
        inputs += 1;
        if let Outcome::Panic(msg) = outcome {
            panics += 1;
            let first: String = msg.lines().next().unwrap_or("").chars().filter(|c| !c.is_ascii_digit()).collect();
            if seen.insert(first.clone()) {
                let p = save(&corpus, "panic", &input);
                let _ = writeln!(
                    out,
                    "PANIC {} saved {}: {}",
                    a.target.name(),
                    p.display(),
                    msg.lines().next().unwrap_or("")
                );
            }
        }
        if took > Duration::from_secs(2) {
            let p = save(&a.state.join("slow").join(a.target.name()), "slow", &input);
            let _ = writeln!(out, "SLOW {} {:.1}s saved {}", a.target.name(), took.as_secs_f64(), p.display());
        }
        if inputs % 256 == 0 {
            cpu_spent = cpu_budget.is_some_and(|b| cpu_seconds(false) >= b);
        }
        if last_report.elapsed() > Duration::from_secs(30) {
            last_report = Instant::now();
            let _ = writeln!(out, "progress inputs={inputs} panics={panics}");
            let _ = out.flush();
        }
    }
    let _ = writeln!(out, "progress inputs={inputs} panics={panics}");
    let _ = writeln!(out, "worker-done cpu_s={:.1}", cpu_seconds(false));
    0
}

fn supervise(a: &Args) -> i32 {
    let _ = std::fs::create_dir_all(&a.state);
    let exe = std::env::current_exe().expect("own path");
    let start = Instant::now();
    let deadline = start + Duration::from_secs(a.seconds);
    let (mut inputs, mut panics, mut aborts, mut restarts) = (0u64, 0u64, 0u64, 0u64);
    let cur_path = a.state.join(format!("{}.cur", a.target.name()));
    let cpu_left = || a.cpu_seconds.map(|c| (c as f64 - cpu_seconds(true)).floor().max(0.0) as u64);
    while Instant::now() < deadline && cpu_left() != Some(0) {
        let left = deadline.saturating_duration_since(Instant::now()).as_secs().max(1);
        let budget: Vec<String> = match cpu_left() {
            Some(c) => vec!["--cpu-seconds".into(), c.to_string()],
            None => Vec::new(),
        };
        let mut child = match Command::new(&exe)
            .arg(a.target.name())
            .args(["--seconds", &left.to_string(), "--seed", &(a.seed + restarts).to_string(), "--worker"])
            .args(&budget)
            .args(if restarts > 0 { &["--no-seeds"][..] } else { &[][..] })
            .arg("--state")
            .arg(&a.state)
            .stdout(Stdio::piped())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                eprintln!("cannot start a worker: {e}");
                return 2;
            }
        };
        let (mut w_inputs, mut w_panics) = (0u64, 0u64);
        if let Some(so) = child.stdout.take() {
            for line in BufReader::new(so).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("progress ") {
                    for kv in rest.split_whitespace() {
                        match kv.split_once('=') {
                            Some(("inputs", v)) => w_inputs = v.parse().unwrap_or(w_inputs),
                            Some(("panics", v)) => w_panics = v.parse().unwrap_or(w_panics),
                            _ => {}
                        }
                    }
                } else {
                    println!("{line}");
                }
            }
        }
        let status = child.wait().map(|s| s.success()).unwrap_or(false);
        inputs += w_inputs;
        panics += w_panics;
        restarts += 1;
        if !status {
            aborts += 1;
            let input = std::fs::read(&cur_path).unwrap_or_default();
            let p = save(&fuzz::corpus_dir(&crate_dir(), a.target), "abort", &input);
            println!("ABORT {} worker died; input saved {}", a.target.name(), p.display());
        }
    }
    println!(
        "fuzz {} inputs={inputs} (at least; a worker that died lost up to 30 s of its count) panics={panics} aborts={aborts} workers={restarts} wall_s={:.0} cpu_s={:.0} seed={}",
        a.target.name(),
        start.elapsed().as_secs_f64(),
        cpu_seconds(true),
        a.seed
    );
    i32::from(panics + aborts > 0)
}

fn main() {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    std::process::exit(if a.worker { worker(&a) } else { supervise(&a) });
}
