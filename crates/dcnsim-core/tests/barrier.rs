//! Barrier-synchronised incast rounds (`incast` with `barrier = true`): the runner starts
//! round r + 1 `gap` after the last flow of round r completed, and reports each flow's round
//! and the round's start.

use dcnsim_core::output::RunOutput;
use dcnsim_core::sim::Sim;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

fn run(workload: &str, transport: &str) -> RunOutput {
    let doc = format!(
        r#"{{"topology":{{"kind":"single_switch","hosts":4,"host_rate":"1Gbps","host_delay":"25us"}},
            "transport":{transport},"network":{{"buffer":"96KB"}},"output":{{"audit":true}},
            "workload":[{workload}]}}"#
    );
    let sc = parse_scenario(&doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let out = Sim::new(&sc).run(&mut |_| true);
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    out
}

/// Per round (ordered by round id): (start, last finish), ps.
fn rounds(out: &RunOutput) -> Vec<(u64, u64)> {
    let f = &out.flows;
    let n = f.round.iter().filter(|&&r| r != u32::MAX).map(|&r| r + 1).max().unwrap_or(0);
    (0..n)
        .map(|r| {
            let idx: Vec<usize> = (0..f.id.len()).filter(|&i| f.round[i] == r).collect();
            let start = f.round_start_ps[idx[0]];
            assert!(idx.iter().all(|&i| f.round_start_ps[i] == start));
            (start, idx.iter().map(|&i| f.finish_ps[i]).max().unwrap())
        })
        .collect()
}

/// Two senders, one 1460 B segment each (1500 B on the wire, 12 us per hop at 1 Gbps), 25 us
/// per link. Both packets reach the switch at 12 + 25 = 37 us; the first leaves at 49 us and
/// arrives at 74 us, the second waits behind it and arrives at 86 us: each round takes 86 us,
/// and with a 10 us gap round r starts at r x 96 us.
#[test]
fn barrier_round_times_match_hand_computed_uncongested_case() {
    let out = run(
        r#"{"pattern":"incast","receiver":0,"senders":[1,2],"size":"1460B","rounds":4,"barrier":true,"gap":"10us"}"#,
        r#"{"protocol":"tcp"}"#,
    );
    let us = 1_000_000u64;
    let r = rounds(&out);
    assert_eq!(r.len(), 4);
    for (k, &(start, end)) in r.iter().enumerate() {
        assert_eq!(start, k as u64 * 96 * us, "round {k} start");
        assert_eq!(end - start, 86 * us, "round {k} query completion time");
    }
    assert_eq!(out.flows.start_ps[2], 96 * us, "flows start with their round");
}

/// Rounds never overlap, whatever the protocol's round times: every flow of round r + 1
/// starts at or after the last completion of round r plus the gap (exactly there without
/// jitter). Eight senders of 64 KB through a shared 96 KB buffer; flows outside the barrier
/// component keep their own schedule.
#[test]
fn barrier_rounds_never_overlap_and_open_flows_keep_schedule() {
    for proto in ["dctcp", "ptcp", "iatcp"] {
        let out = run(
            r#"{"pattern":"incast","receiver":3,"senders":[0,1,2],"flows_per_sender":3,"rounds":5,"barrier":true,"gap":"20us","jitter":"5us"},
               {"pattern":"incast","receiver":0,"senders":[1],"rounds":3,"round_interval":"1ms","size":"10KB"}"#,
            &format!(r#"{{"protocol":"{proto}"}}"#),
        );
        let f = &out.flows;
        // The open-loop component: 3 flows at 0, 1, 2 ms, ids first, no round.
        assert_eq!(&f.round[..3], &[u32::MAX; 3]);
        assert_eq!(&f.start_ps[..3], &[0, 1_000_000_000, 2_000_000_000]);
        let r = rounds(&out);
        assert_eq!(r.len(), 5, "{proto}");
        for k in 1..r.len() {
            assert_eq!(r[k].0, r[k - 1].1 + 20_000_000, "{proto}: round {k} starts gap after round {}", k - 1);
        }
        for i in 3..f.id.len() {
            let rs = f.round_start_ps[i];
            assert!(f.start_ps[i] >= rs && f.start_ps[i] <= rs + 5_000_000, "{proto}: jitter within 5 us");
            assert!(f.finish_ps[i] != u64::MAX);
        }
    }
}
