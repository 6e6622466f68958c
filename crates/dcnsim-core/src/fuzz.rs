//! Fuzzing harness for the input readers: scenario documents (TOML and JSON), flow lists
//! (`explicit` CSV), traces (HPCC `flow.txt`) and flow-size CDF files.
//!
//! No input may panic the core. Each [`Target`] feeds one reader arbitrary bytes and checks
//! that it returns (a value or an error) without panicking; a reader that accepts its input
//! is also exercised further (a parsed CDF is sampled and summarised, a parsed scenario
//! generates its flows and serializes its normalized form, which must parse again).
//!
//! Inputs come from a deterministic mutator ([`Mutator`], seeded, so a run is repeatable):
//! seed inputs (the repository's own scenario, flow and CDF files, passed in by the caller,
//! plus the corpus kept in `fuzz/corpus/<target>/`) are changed by
//! * structure-aware edits: a number replaced by an extreme one (0, -1, 2^64, 1e308, nan,
//!   inf, ...), a quantity string replaced by an odd unit ("1ps", "20kb", "1kbps", "0B", a
//!   bare number ...), a line deleted, duplicated or swapped, a `key = value` line or a JSON
//!   member from the dictionary (the field names found in the seeds) inserted;
//! * byte-level edits: bit flips, random bytes inserted, ranges deleted or duplicated, and
//!   splices of two seeds.
//!
//! The driver (`src/bin/fuzz.rs`) runs targets for a time budget and keeps every input that
//! panics in the corpus folder; `tests/fuzz.rs` replays the corpus and a bounded number of
//! mutations on every test run. This is a mutation fuzzer without coverage feedback (the
//! build has no coverage instrumentation on the stable toolchain): it relies on the seeds and
//! the structure-aware edits to reach deep validation code.

use crate::rng::Rng;
use crate::workload::{flowfile, CdfFormat, CdfOptions, CdfUnit, EmpiricalCdf, Reading};
use crate::{parse_scenario, Format};
use std::path::Path;

/// One reader under test.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Target {
    ScenarioToml,
    ScenarioJson,
    FlowList,
    Trace,
    Cdf,
}

impl Target {
    pub const ALL: [Target; 5] =
        [Target::ScenarioToml, Target::ScenarioJson, Target::FlowList, Target::Trace, Target::Cdf];

    pub fn name(self) -> &'static str {
        match self {
            Target::ScenarioToml => "scenario_toml",
            Target::ScenarioJson => "scenario_json",
            Target::FlowList => "flowlist",
            Target::Trace => "trace",
            Target::Cdf => "cdf",
        }
    }

    pub fn from_name(s: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == s)
    }

    /// Feed `input` to the reader (may panic: callers catch it). `base_dir` is where a
    /// scenario's relative paths resolve.
    pub fn run(self, input: &[u8], base_dir: &Path) {
        let text = String::from_utf8_lossy(input);
        match self {
            Target::ScenarioToml | Target::ScenarioJson => {
                let fmt = if self == Target::ScenarioToml { Format::Toml } else { Format::Json };
                let text = with_memory_limit(&text, fmt);
                if let Ok(sc) = parse_scenario(&text, fmt, base_dir) {
                    // The normalized form must be accepted again, with the same flows.
                    let again = parse_scenario(&sc.to_json(), Format::Json, base_dir)
                        .unwrap_or_else(|e| panic!("normalized scenario rejected: {e}\n{}", sc.to_json()));
                    if sc.workload.expected_flows() <= 10_000.0 {
                        assert_eq!(sc.flows(), again.flows(), "normalized scenario generates other flows");
                    }
                }
            }
            Target::FlowList | Target::Trace => {
                // The first byte picks the host count, the second the time unit of CSV cells.
                let hosts = input.first().map(|&b| b as u32 % 64 + 1).unwrap_or(4);
                let unit = [1u64, 1_000, 1_000_000, 1_000_000_000, 1_000_000_000_000]
                    [input.get(1).map(|&b| b as usize % 5).unwrap_or(2)];
                let body = String::from_utf8_lossy(input.get(2..).unwrap_or_default());
                let flows = if self == Target::FlowList {
                    flowfile::parse_csv(&body, unit, hosts)
                } else {
                    flowfile::parse_hpcc(&body, hosts)
                };
                if let Ok(flows) = flows {
                    for f in &flows {
                        assert!(f.src < hosts && f.dst < hosts && f.src != f.dst && f.size.0 > 0, "{f:?}");
                    }
                }
            }
            Target::Cdf => {
                let b0 = input.first().copied().unwrap_or(0);
                let opts = CdfOptions {
                    format: [CdfFormat::Auto, CdfFormat::Pct, CdfFormat::Frac, CdfFormat::Ns2, CdfFormat::Homa]
                        [b0 as usize % 5],
                    unit: if b0 & 4 != 0 { CdfUnit::Packets } else { CdfUnit::Bytes },
                    packet_size: (b0 & 8 != 0).then_some(input.get(1).copied().unwrap_or(1) as u64 * 100),
                    reading: [Reading::Linear, Reading::Step][(b0 as usize >> 4) % 2],
                };
                let body = String::from_utf8_lossy(input.get(2..).unwrap_or_default());
                if let Ok(cdf) = EmpiricalCdf::parse(&body, &opts) {
                    let mut rng = Rng::new(b0 as u64);
                    for _ in 0..16 {
                        let s = cdf.sample(&mut rng);
                        assert!(
                            s.0 >= 1 && s.0 <= cdf.max_bytes().max(1),
                            "sample {} above max {}",
                            s.0,
                            cdf.max_bytes()
                        );
                    }
                    let m = cdf.mean_bytes();
                    assert!(m.is_finite() && m >= 0.0, "mean {m}");
                    let pts = cdf.step_points();
                    assert!(pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "step points not increasing");
                    let _ = cdf.fraction_below(crate::units::Bytes(1500));
                    let _ = cdf.quantile(0.5);
                }
            }
        }
    }
}

/// The memory limit fuzzed scenarios run under ([`with_memory_limit`]).
pub const FUZZ_MEMORY_LIMIT: &str = "1GB";

/// `text` with `run.memory_limit` set to [`FUZZ_MEMORY_LIMIT`] when it parses as a table
/// whose `run` is a table or absent (otherwise unchanged). A scenario the default limit
/// (8 GB) accepts may legitimately need more memory than a fuzzing process is allowed
/// (`ulimit -v`); with the lower limit, memory the validation lets through and the process
/// cannot get is a finding, not an artefact of the cap.
pub fn with_memory_limit(text: &str, fmt: Format) -> std::borrow::Cow<'_, str> {
    match fmt {
        Format::Toml => {
            let Ok(mut v) = toml::from_str::<toml::Value>(text) else { return text.into() };
            let Some(t) = v.as_table_mut() else { return text.into() };
            let run = t.entry("run").or_insert_with(|| toml::Value::Table(Default::default()));
            let Some(run) = run.as_table_mut() else { return text.into() };
            run.insert("memory_limit".into(), toml::Value::String(FUZZ_MEMORY_LIMIT.into()));
            toml::to_string(&v).map(Into::into).unwrap_or_else(|_| text.into())
        }
        Format::Json => {
            let Ok(mut v) = serde_json::from_str::<serde_json::Value>(text) else { return text.into() };
            let Some(t) = v.as_object_mut() else { return text.into() };
            let run = t.entry("run").or_insert_with(|| serde_json::json!({}));
            let Some(run) = run.as_object_mut() else { return text.into() };
            run.insert("memory_limit".into(), serde_json::json!(FUZZ_MEMORY_LIMIT));
            serde_json::to_string(&v).map(Into::into).unwrap_or_else(|_| text.into())
        }
    }
}

/// Numbers the structure-aware mutator writes in place of a number.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "255",
    "256",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "1e308",
    "1e-308",
    "-0.0",
    "0.5",
    "1e9",
    "nan",
    "inf",
    "-inf",
    "NaN",
    "Infinity",
    "3.4e38",
    "100000000",
];

/// Quantity strings the mutator writes in place of a string.
const QUANTITIES: &[&str] = &[
    "\"1ps\"",
    "\"0ps\"",
    "\"0us\"",
    "\"1us\"",
    "\"18446744073709551615ps\"",
    "\"1e30s\"",
    "\"100\"",
    "\"20kb\"",
    "\"20KB\"",
    "\"1kbps\"",
    "\"1bps\"",
    "\"0Gbps\"",
    "\"1Tbps\"",
    "\"100G\"",
    "\"0B\"",
    "\"1B\"",
    "\"1GiB\"",
    "\"1e20GB\"",
    "\"nan us\"",
    "\"-5us\"",
    "\"\"",
    "\"all\"",
    "\"host\"",
    "\"switch\"",
    "\"websearch\"",
    "\"flows.csv\"",
    "\"flow.txt\"",
    "\"cdf.txt\"",
    "\"/dev/null\"",
    "\"poisson\"",
    "\"incast\"",
    "\"leaf_spine\"",
    "\"fat_tree\"",
    "\"single_switch\"",
    "\"dctcp\"",
    "\"ndp\"",
    "\"homa\"",
    "\"ppt\"",
];

/// A deterministic input generator over a set of seed inputs.
pub struct Mutator {
    rng: Rng,
    seeds: Vec<Vec<u8>>,
    /// Field names found in the seeds (`name =` and `"name":`).
    keys: Vec<String>,
}

impl Mutator {
    pub fn new(seed: u64, seeds: Vec<Vec<u8>>) -> Mutator {
        let mut keys: Vec<String> = Vec::new();
        for s in &seeds {
            for line in String::from_utf8_lossy(s).lines() {
                let l = line.trim().trim_start_matches('"');
                let end = l.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(l.len());
                let rest = l[end..].trim_start_matches('"').trim_start();
                if end > 0 && (rest.starts_with('=') || rest.starts_with(':')) && !keys.iter().any(|k| k == &l[..end]) {
                    keys.push(l[..end].to_string());
                }
            }
        }
        keys.sort();
        let seeds = if seeds.is_empty() { vec![Vec::new()] } else { seeds };
        Mutator { rng: Rng::new(seed), seeds, keys }
    }

    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.rng.below(v.len() as u64) as usize]
    }

    /// The next input: a seed with 1 to 8 edits.
    pub fn next_input(&mut self) -> Vec<u8> {
        let mut cur = self.seeds[self.rng.below(self.seeds.len() as u64) as usize].clone();
        let edits = 1 + self.rng.below(8);
        for _ in 0..edits {
            self.mutate(&mut cur);
        }
        // Keep inputs small: a reader's cost grows with its input, not its bugs.
        cur.truncate(1 << 16);
        cur
    }

    fn mutate(&mut self, cur: &mut Vec<u8>) {
        let len = cur.len() as u64;
        match self.rng.below(12) {
            0 | 1 => self.replace_token(cur, true),
            2 | 3 => self.replace_token(cur, false),
            4 => self.line_edit(cur),
            5 => self.insert_field(cur),
            6 if len > 0 => {
                let i = self.rng.below(len) as usize;
                cur[i] ^= 1 << self.rng.below(8);
            }
            7 => {
                let i = self.rng.below(len + 1) as usize;
                let n = 1 + self.rng.below(4) as usize;
                let bytes: Vec<u8> = (0..n).map(|_| self.rng.below(256) as u8).collect();
                cur.splice(i..i, bytes);
            }
            8 if len > 0 => {
                let a = self.rng.below(len) as usize;
                let b = (a + 1 + self.rng.below(32) as usize).min(cur.len());
                cur.drain(a..b);
            }
            9 if len > 0 => {
                let a = self.rng.below(len) as usize;
                let b = (a + 1 + self.rng.below(64) as usize).min(cur.len());
                let chunk = cur[a..b].to_vec();
                let at = self.rng.below(cur.len() as u64 + 1) as usize;
                cur.splice(at..at, chunk);
            }
            10 => {
                // Splice: the head of this input and the tail of another seed.
                let other = self.seeds[self.rng.below(self.seeds.len() as u64) as usize].clone();
                let a = self.rng.below(len + 1) as usize;
                let b = self.rng.below(other.len() as u64 + 1) as usize;
                cur.truncate(a);
                cur.extend_from_slice(&other[b..]);
            }
            _ => {
                // A structural character inserted or removed.
                let i = self.rng.below(len + 1) as usize;
                let c = *self.pick(b"[]{}\",=\n#.:");
                cur.insert(i, c);
            }
        }
    }

    /// Replace a number (`numbers`) or a quoted string by an interesting value.
    fn replace_token(&mut self, cur: &mut Vec<u8>, numbers: bool) {
        let spans = token_spans(cur, numbers);
        if spans.is_empty() {
            return;
        }
        let (a, b) = *self.pick(&spans);
        let with: &&str = if numbers { self.pick(NUMBERS) } else { self.pick(QUANTITIES) };
        cur.splice(a..b, with.bytes());
    }

    fn line_edit(&mut self, cur: &mut Vec<u8>) {
        let text = String::from_utf8_lossy(cur).into_owned();
        let mut lines: Vec<&str> = text.lines().collect();
        if lines.is_empty() {
            return;
        }
        let i = self.rng.below(lines.len() as u64) as usize;
        let j = self.rng.below(lines.len() as u64) as usize;
        match self.rng.below(3) {
            0 => {
                lines.remove(i);
            }
            1 => lines.insert(j, lines[i]),
            _ => lines.swap(i, j),
        }
        *cur = (lines.join("\n") + "\n").into_bytes();
    }

    /// Insert `key = value` (TOML) or `"key": value,` (JSON) with a dictionary key after a
    /// random line.
    fn insert_field(&mut self, cur: &mut Vec<u8>) {
        if self.keys.is_empty() {
            return;
        }
        let key = self.pick(&self.keys.clone()).clone();
        let value: &&str = if self.rng.below(2) == 0 { self.pick(NUMBERS) } else { self.pick(QUANTITIES) };
        let json = cur.first() == Some(&b'{');
        let line = if json { format!("\"{key}\": {value},\n") } else { format!("{key} = {value}\n") };
        let text = String::from_utf8_lossy(cur).into_owned();
        let starts: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        let at = *self.pick(&starts);
        let mut out = text[..at].to_string();
        out.push_str(&line);
        out.push_str(&text[at..]);
        *cur = out.into_bytes();
    }
}

/// Byte ranges of number tokens (`numbers`) or double-quoted strings (quotes included).
fn token_spans(s: &[u8], numbers: bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if numbers && (s[i].is_ascii_digit() || (s[i] == b'-' && s.get(i + 1).is_some_and(u8::is_ascii_digit))) {
            let prev_word = i > 0 && (s[i - 1].is_ascii_alphanumeric() || s[i - 1] == b'_');
            let a = i;
            i += 1;
            while i < s.len() && (s[i].is_ascii_digit() || b".eE+-".contains(&s[i])) {
                i += 1;
            }
            if !prev_word {
                out.push((a, i));
            }
        } else if !numbers && s[i] == b'"' {
            let a = i;
            i += 1;
            while i < s.len() && s[i] != b'"' && s[i] != b'\n' {
                i += 1;
            }
            if i < s.len() && s[i] == b'"' {
                out.push((a, i + 1));
            }
            i += 1;
        } else {
            i += 1;
        }
    }
    out
}

/// Built-in seeds of each target, besides the repository files the caller adds: small
/// valid inputs that reach past the first checks.
pub fn builtin_seeds(t: Target) -> Vec<Vec<u8>> {
    let v: &[&str] = match t {
        Target::ScenarioToml => &[
            "[topology]\nkind = \"single_switch\"\nhosts = 4\nhost_rate = \"10Gbps\"\n[transport]\nprotocol = \"dctcp\"\n[[workload]]\npattern = \"incast\"\nsenders = 2\nreceiver = 0\nsize = \"10KB\"\n[run]\ntime_limit = \"1ms\"\n[output]\nsample_interval = \"10us\"\n",
            "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 1\n[network]\nbuffer = \"100KB\"\necn_k = \"20KB\"\n[transport]\nprotocol = \"tcp\"\n[[workload]]\npattern = \"poisson\"\ncdf = \"websearch\"\nload = 0.3\nflows = 20\n[[workload]]\npattern = \"background\"\ncount = 2\n",
            "[topology]\nkind = \"single_switch\"\nhosts = 3\n[transport]\nprotocol = \"homa\"\n[[workload]]\npattern = \"explicit\"\nfile = \"flows.csv\"\n[[workload]]\npattern = \"hpcc\"\nfile = \"flow.txt\"\n[[workload]]\npattern = \"poisson\"\ncdf = \"cdf.txt\"\nload = 0.2\nduration = \"1ms\"\n",
        ],
        Target::ScenarioJson => &[
            "{\"topology\": {\"kind\": \"single_switch\", \"hosts\": 4, \"host_rate\": \"10Gbps\"}, \"transport\": {\"protocol\": \"ndp\"}, \"workload\": [{\"pattern\": \"permutation\", \"size\": \"50KB\"}], \"run\": {\"time_limit\": \"2ms\"}, \"output\": {\"sample_interval\": \"20us\", \"sample_ports\": [0, 1]}}",
            "{\"seed\": 3, \"topology\": {\"kind\": \"leaf_spine\", \"leaves\": 2, \"hosts_per_leaf\": 2, \"spines\": 2}, \"network\": {\"queue_policy\": \"ndp_trim\", \"mtu\": \"9000B\"}, \"transport\": {\"protocol\": \"ppt\"}, \"workload\": {\"pattern\": \"left_right\", \"cdf\": \"datamining\", \"load\": 0.5, \"flows\": 10}}",
        ],
        Target::FlowList => &[
            "\x08\x02src,dst,size,start\n0,1,1000,0\n1,2,64KB,1.5\n",
            "\x04\x01start,src,dst,size,deadline\n0,0,1,100,\n3us,1,0,5,1ms\n# comment\n\n2,3,1,7,20\n",
        ],
        Target::Trace => &["\x08\x002\n0 1 3 100 1000 2.0\n1 0 3 100 2000 2.000001\n", "\x04\x003\n0 1 3 100 10 0\n2 3 3 100 10 0.5\n3 2 3 100 10 1e-6\n"],
        Target::Cdf => &[
            "\x00\x0e100 0\n1000 50\n10000 100\n",
            "\x02\x0e1 0.0\n10 0.5\n100 1.0\n",
            "\x14\x0f1 0.1\n2 0.6\n4 1\n",
            "\x03\x0e1000 1\n1 0.5\n5000 1\n",
        ],
    };
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// The files a fuzzed scenario's relative paths may point at, written into `dir`.
pub fn write_fixture_files(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("flows.csv"), "src,dst,size,start\n0,1,1000,0\n1,2,64KB,1.5\n")?;
    std::fs::write(dir.join("flow.txt"), "2\n0 1 3 100 1000 0.000001\n1 0 3 100 2000 0.000002\n")?;
    std::fs::write(dir.join("cdf.txt"), "100 0\n1000 50\n10000 100\n")?;
    Ok(())
}

/// Outcome of feeding one input to a target.
pub enum Outcome {
    Ok,
    /// The reader panicked, with this message.
    Panic(String),
}

/// Run `t` on `input`, catching a panic.
pub fn check(t: Target, input: &[u8], base_dir: &Path) -> Outcome {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.run(input, base_dir))) {
        Ok(()) => Outcome::Ok,
        Err(p) => Outcome::Panic(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into()),
        ),
    }
}

/// The corpus folder of `t` under the crate's `fuzz/corpus`.
pub fn corpus_dir(crate_dir: &Path, t: Target) -> std::path::PathBuf {
    crate_dir.join("fuzz").join("corpus").join(t.name())
}

/// Every file of a folder, sorted by name (empty if the folder does not exist).
pub fn read_dir_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| Some((e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).ok()?)))
        .collect();
    v.sort();
    v
}

/// A short stable name for an input (FNV-1a of its bytes, hex).
pub fn input_name(input: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in input {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// Seeds of `t`: the built-in ones, the repository's own files of its kind (under
/// `repo_root`) and the corpus folder (under `crate_dir`).
pub fn seeds(t: Target, repo_root: &Path, crate_dir: &Path) -> Vec<Vec<u8>> {
    let mut out = builtin_seeds(t);
    let files_in = |dir: &Path, ext: &str| -> Vec<Vec<u8>> {
        read_dir_files(dir).into_iter().filter(|(n, _)| n.ends_with(ext)).map(|(_, b)| b).collect()
    };
    let mut scenario_files: Vec<Vec<u8>> = Vec::new();
    if matches!(t, Target::ScenarioToml | Target::ScenarioJson) {
        scenario_files.extend(files_in(&repo_root.join("docs/examples"), ".toml"));
        scenario_files.extend(files_in(&repo_root.join("python/dcnsim/scenarios"), ".toml"));
        if let Ok(rd) = std::fs::read_dir(repo_root.join("repro")) {
            let mut dirs: Vec<_> = rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
            dirs.sort();
            for d in dirs {
                if let Ok(b) = std::fs::read(d.join("base.toml")) {
                    scenario_files.push(b);
                }
            }
        }
    }
    match t {
        Target::ScenarioToml => out.extend(scenario_files),
        Target::ScenarioJson => {
            let toml_seeds = builtin_seeds(Target::ScenarioToml).into_iter().chain(scenario_files);
            for b in toml_seeds {
                let Ok(v) = toml::from_str::<toml::Value>(&String::from_utf8_lossy(&b)) else { continue };
                if let Ok(j) = serde_json::to_string_pretty(&v) {
                    out.push(j.into_bytes());
                }
            }
        }
        Target::Cdf => {
            for (i, b) in files_in(&crate_dir.join("data/cdf"), ".txt").into_iter().enumerate() {
                let mut s = vec![(i * 3) as u8 % 32, 14];
                s.extend(b);
                out.push(s);
            }
        }
        Target::FlowList | Target::Trace => {}
    }
    out.extend(read_dir_files(&corpus_dir(crate_dir, t)).into_iter().map(|(_, b)| b));
    out
}
