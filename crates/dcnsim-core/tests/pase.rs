//! PASE on a small network: conservation, and the paper's qualitative result against DCTCP.
//!
//! One rack (16 hosts on one 10 Gbps switch, 1 us links), all-to-all Poisson arrivals with
//! sizes uniform in [2 KB, 198 KB] (PASE §4.1's workload) at loads 0.5 and 0.7. Inside a rack
//! PASE's bottom-up arbitration is complete with the endpoints' arbitrators alone (§3.1.2), so
//! this is the setting where the model holds without the in-network arbitrators.
//!
//! Expectations, each from the mechanism:
//! - conservation: every flow completes and the audit finds every byte at its receiver;
//! - PASE's mean FCT is below DCTCP's (PASE Fig. 9(c)/10(c)/13(a) direction): the arbitrators
//!   put the flows with the least remaining bytes into the top queue at their reference rate,
//!   so at a contended receiver one flow at a time drains at line rate while the others wait
//!   in lower queues (an approximation of shortest-remaining-first), whereas DCTCP shares the
//!   link fairly and every flow's completion is delayed by every other's;
//! - the gain is largest for the smallest flows, which always win arbitration, and it grows
//!   with load (more flows contend, so ordering them matters more; PASE §4.2.1 "especially at
//!   high loads").
//!
//! Measured (seed 3, 1500 flows): mean FCT 273 us (PASE) vs 314 us (DCTCP) at load 0.5, 13%
//! lower; 663 us vs 678 us at 0.7, 2% lower. Flows up to 50 KB: 45.5 vs 65.9 us (31% lower)
//! at 0.5, 52.9 vs 125.3 us (58% lower) at 0.7. No timeouts or retransmissions in PASE's runs
//! (300 KB buffers). The overall gain at 0.7 is thin: the largest flows pay for the cautious
//! restart of the intermediate queues (one packet, then one more per RTT) whenever a smaller
//! flow pushes them down, so the overall mean is asserted at 0.5 only.

mod common;

use dcnsim_core::output::RunOutput;
use dcnsim_core::sim::run;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

fn scenario_doc(transport: &str, load: f64) -> String {
    format!(
        r#"{{"seed": 3,
            "topology": {{"kind": "single_switch", "hosts": 16, "host_rate": "10Gbps", "host_delay": "1us"}},
            "network": {{"buffer": "300KB"}},
            "transport": {transport},
            "workload": [{{"pattern": "poisson", "cdf": "uniform_pase", "load": {load}, "flows": 1500}}],
            "output": {{"audit": true}}}}"#
    )
}

fn run_doc(doc: &str) -> RunOutput {
    let sc = parse_scenario(doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    run(&sc, &mut |_| true)
}

/// (mean FCT of all flows, mean FCT of flows up to 50 KB), microseconds.
fn afct(out: &RunOutput) -> (f64, f64) {
    let f = &out.flows;
    let n = f.id.len();
    let all = f.fct_ps.iter().map(|&t| t as f64).sum::<f64>() / n as f64 / 1e6;
    let small: Vec<f64> = (0..n).filter(|&i| f.size[i] <= 50_000).map(|i| f.fct_ps[i] as f64).collect();
    (all, small.iter().sum::<f64>() / small.len() as f64 / 1e6)
}

#[test]
fn pase_completes_every_flow_and_beats_dctcp_on_mean_fct() {
    let mut gains = Vec::new();
    for load in [0.5, 0.7] {
        let pase = run_doc(&scenario_doc(r#"{"protocol": "pase"}"#, load));
        let dctcp = run_doc(&scenario_doc(r#"{"protocol": "dctcp"}"#, load));
        for (name, out) in [("pase", &pase), ("dctcp", &dctcp)] {
            assert!(out.audit_errors.is_empty(), "{name}: {:?}", out.audit_errors);
            assert!(out.flows.finish_ps.iter().all(|&t| t != u64::MAX), "{name}: unfinished flows");
        }
        let (p_all, p_small) = afct(&pase);
        let (d_all, d_small) = afct(&dctcp);
        eprintln!(
            "load {load}: AFCT pase {p_all:.1} us, dctcp {d_all:.1} us ({:.0}% lower); flows <= 50 KB: pase {p_small:.1} us, dctcp {d_small:.1} us ({:.0}% lower); pase timeouts {}, retx {} B",
            100.0 * (1.0 - p_all / d_all),
            100.0 * (1.0 - p_small / d_small),
            pase.flows.timeouts.iter().sum::<u32>(),
            pase.flows.retx_bytes.iter().sum::<u64>()
        );
        gains.push(1.0 - p_small / d_small);
        if load == 0.5 {
            assert!(p_all < 0.95 * d_all, "load {load}: PASE AFCT {p_all} us vs DCTCP {d_all} us");
        }
        assert!(p_small < 0.75 * d_small, "load {load}: small flows {p_small} us vs {d_small} us");
    }
    assert!(gains[1] > gains[0], "the small flows' gain grows with load: {gains:?}");
}
