//! Property tests: random small scenarios (topology, transport, workload) drawn from a seeded
//! generator, each run and checked against the runner's invariants:
//!
//! * every foreground flow finished, or the run says why not (`stop_reason` is not `done`,
//!   and an unfinished flow has no finish time); a finished flow's sender put at least its
//!   size on the wire, and the receiver held every byte when it finished (`output.audit`);
//! * conservation: the per-flow payload sent adds up to the run's payload counter; the
//!   per-port drop counts add up to the run's drop causes, none of them misrouted;
//! * buffer bounds: no sampled switch port ever holds more than `network.buffer`
//!   (policy `priority_ecn`, whose admission enforces that buffer);
//! * determinism: the same scenario run twice gives identical results.
//!
//! The generator is the crate's own [`Rng`], seeded per case, so a failure names the case
//! and its scenario to reproduce it.

use dcnsim_core::output::{RunOutput, StopReason};
use dcnsim_core::rng::Rng;
use dcnsim_core::transport::registry::PROTOCOLS;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

/// Cases per test run (each a few milliseconds of simulated time on a handful of hosts).
const CASES: u64 = 96;

fn pick<'a>(r: &mut Rng, v: &[&'a str]) -> &'a str {
    v[r.below(v.len() as u64) as usize]
}

/// A random small scenario (TOML) for case `case`.
fn scenario(case: u64) -> String {
    let mut r = Rng::new(0x5eed_0000 + case);
    let protocol = PROTOCOLS[(case % PROTOCOLS.len() as u64) as usize];
    let (topo, hosts) = if r.below(2) == 0 {
        let h = 3 + r.below(4);
        (
            format!(
                "kind = \"single_switch\"\nhosts = {h}\nhost_rate = \"{}Gbps\"\n",
                pick(&mut r, &["10", "25", "40"])
            ),
            h,
        )
    } else {
        let (l, hp, s) = (2, 2 + r.below(2), 1 + r.below(2));
        (
            format!(
                "kind = \"leaf_spine\"\nleaves = {l}\nhosts_per_leaf = {hp}\nspines = {s}\nhost_rate = \"10Gbps\"\ncore_rate = \"{}Gbps\"\n",
                pick(&mut r, &["10", "40"])
            ),
            l * hp,
        )
    };
    let policy = match protocol {
        "ndp" => "ndp_trim",
        "expresspass" => "expresspass_credit",
        _ => "priority_ecn",
    };
    let buffer = pick(&mut r, &["60KB", "120KB", "300KB"]);
    let size = |r: &mut Rng| format!("{}KB", 1 + r.below(200));
    let workload = match r.below(3) {
        0 => format!(
            "pattern = \"incast\"\nsenders = {}\nreceiver = 0\nsize = \"{}\"\n",
            (1 + r.below(hosts - 1)).min(hosts - 1),
            size(&mut r)
        ),
        1 => format!(
            "pattern = \"poisson\"\nuniform = [\"1KB\", \"{}\"]\nload = 0.{}\nflows = {}\n",
            size(&mut r),
            2 + r.below(6),
            5 + r.below(20)
        ),
        _ => format!("pattern = \"permutation\"\nsize = \"{}\"\n", size(&mut r)),
    };
    format!(
        "seed = {}\n[topology]\n{topo}\n[network]\nbuffer = \"{buffer}\"\nqueue_policy = \"{policy}\"\n\n[transport]\nprotocol = \"{protocol}\"\n\n[[workload]]\n{workload}\n[run]\ntime_limit = \"50ms\"\n\n[output]\nsample_interval = \"5us\"\nsample_ports = \"switch\"\naudit = true\n",
        1 + r.below(1000)
    )
}

fn run(doc: &str) -> RunOutput {
    let sc = parse_scenario(doc, Format::Toml, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{doc}"));
    let mut out = dcnsim_core::run(&sc, &mut |_| true);
    out.counters.wall_s = 0.0;
    out
}

fn check_invariants(case: u64, doc: &str, out: &RunOutput) {
    let ctx = || format!("case {case}:\n{doc}");
    let f = &out.flows;
    assert!(out.error.is_none(), "{:?} {}", out.error, ctx());
    assert!(out.audit_errors.is_empty(), "{:?} {}", out.audit_errors, ctx());
    let mut unfinished = 0;
    for i in 0..f.id.len() {
        if f.background[i] {
            continue;
        }
        if f.finish_ps[i] == u64::MAX {
            unfinished += 1;
            assert_eq!(f.fct_ps[i], u64::MAX, "{}", ctx());
        } else {
            assert!(f.finish_ps[i] >= f.start_ps[i], "flow {i} finished before it started {}", ctx());
            assert!(
                f.sent_bytes[i] >= f.size[i],
                "flow {i} finished having sent {} of {} B {}",
                f.sent_bytes[i],
                f.size[i],
                ctx()
            );
            assert!(f.fct_ps[i] >= f.ideal_fct_ps[i], "flow {i} beat its ideal FCT {}", ctx());
        }
    }
    let reason = out.counters.stop_reason;
    if unfinished > 0 {
        assert_ne!(reason, StopReason::Done, "{unfinished} flows unfinished but the run says done {}", ctx());
        if reason == StopReason::TimeLimit {
            assert!(out.counters.cut_at_limit, "{}", ctx());
        }
    } else {
        assert!(!out.counters.cut_at_limit, "{}", ctx());
    }
    // Conservation of payload and drops.
    assert_eq!(f.sent_bytes.iter().sum::<u64>(), out.counters.data_payload_sent, "{}", ctx());
    let causes: u64 = out.counters.drops.iter().map(|(_, n)| n).sum();
    assert!(out.counters.drops.iter().all(|(c, n)| c != "misrouted" || *n == 0), "{:?} {}", out.counters.drops, ctx());
    assert_eq!(out.ports.drops.iter().sum::<u64>(), causes, "{}", ctx());
    // Buffer bound at every sampled switch port.
    if doc.contains("queue_policy = \"priority_ecn\"") {
        let buffer: u64 = doc
            .lines()
            .find_map(|l| l.strip_prefix("buffer = \"")?.strip_suffix("KB\"")?.parse::<u64>().ok())
            .expect("buffer")
            * 1000;
        let q = &out.queue_samples;
        let mut total: std::collections::BTreeMap<(u64, u32), u64> = Default::default();
        for i in 0..q.t_ps.len() {
            *total.entry((q.t_ps[i], q.port[i])).or_default() += q.bytes[i];
        }
        for ((t, p), b) in total {
            assert!(b <= buffer, "port {p} held {b} B > buffer {buffer} B at {t} ps {}", ctx());
        }
    }
}

#[test]
fn random_small_scenarios_keep_the_runners_invariants() {
    let (mut flows, mut finished, mut samples) = (0, 0, 0);
    for case in 0..CASES {
        let doc = scenario(case);
        let out = run(&doc);
        check_invariants(case, &doc, &out);
        flows += out.flows.id.len();
        finished += out.flows.finish_ps.iter().filter(|&&f| f != u64::MAX).count();
        samples += out.link_samples.t_ps.len();
    }
    // The cases do run traffic: most flows finish within the time limit, and samples are taken.
    assert!(flows as u64 >= CASES && finished * 10 >= flows * 9, "{finished} of {flows} flows finished");
    assert!(samples > 0);
}

#[test]
fn random_small_scenarios_are_deterministic() {
    // Every fourth case, so each protocol is drawn at least once over the 11 protocols.
    for case in (0..CASES).step_by(4) {
        let doc = scenario(case);
        let (a, b) = (run(&doc), run(&doc));
        assert!(a == b, "case {case}: two runs of the same scenario differ\n{doc}");
    }
}
