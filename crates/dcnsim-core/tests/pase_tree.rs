//! PASE's in-network arbitration on the paper's 3-tier tree (§4, Fig. 8), left-right scenario,
//! reduced: 160 hosts (4 ToRs of 40, 2 aggregation switches, 1 core), 1 Gbps host links,
//! 10 Gbps above, 25 us per link (300 us base RTT through the core), 750 KB port buffers
//! (500 packets, Table 3), sizes uniform in [2 KB, 198 KB]; the 80 hosts of the left
//! aggregation switch send to the 80 of the right one, so every flow crosses the
//! aggregation-core links, the bottleneck (80 x 1 Gbps of senders on 10 Gbps: the senders'
//! load 0.1375 offers 1.1 times that link's capacity while the 1500 flows arrive, about 87 ms).
//! No background flows.
//!
//! Expectations, each from the mechanism:
//! - end-to-end arbitration (Fig. 12(a) direction) gives a lower AFCT than endpoint-only: with
//!   only the access links arbitrated, nearly every flow is alone on its 1 Gbps links, so all
//!   of them take the top queue at line rate and share the overloaded aggregation-core link
//!   first-come first-served (its buffer overflows; the losses cost 10 ms timeouts), while the
//!   arbitrators of that link admit flows to the top queue only up to its capacity, smallest
//!   remaining first, and hold the rest in lower queues;
//! - early pruning and delegation cut the arbitration messages (Fig. 11(b) direction): with
//!   delegation a request stops at the ToR, which arbitrates its virtual share of the
//!   aggregation-core link, so the aggregation switches process only the ToRs' periodic
//!   reports; pruning stops the flows below the top two queues at the lower arbitrators.
//!
//! Measured (seed 5): AFCT 7.37 ms end-to-end (with or without the optimisations) vs 19.4 ms
//! endpoint-only (2307 drops, 298 timeouts; none end-to-end); arbitration packets sent 167,326
//! with pruning and delegation vs 244,364 without (-32%), messages processed 99,249 vs 174,426
//! (-43%), of which 259 vs 36,469 at the aggregation-to-core arbitrators.
//!
//! Where the paper's claims do not hold here (not asserted; mechanisms in the `pase` module
//! documentation): below overload of the aggregation-core link end-to-end arbitration is not
//! better (1000 flows: AFCT 2.34 ms vs 1.28 ms endpoint-only at load 0.7 of that link; 3.82
//! vs 4.42 ms at 0.9, but 4.00 vs 3.63 ms with 2000 flows), and pruning plus delegation do
//! not lower the AFCT (Fig. 11(a)): 2.34 vs 2.24 ms at 0.7, 7.37 vs 7.37 ms here.

mod common;

use dcnsim_core::output::RunOutput;
use dcnsim_core::sim::run;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

fn doc(transport: &str) -> String {
    format!(
        r#"{{"seed": 5,
            "topology": {{"kind": "three_tier", "tors": 4, "hosts_per_tor": 40, "aggs": 2, "cores": 1,
                          "host_rate": "1Gbps", "tor_rate": "10Gbps", "core_rate": "10Gbps",
                          "host_delay": "25us", "tor_delay": "25us", "core_delay": "25us"}},
            "network": {{"buffer": "750KB", "ecn_k": "97500B"}},
            "transport": {transport},
            "workload": [{{"pattern": "left_right", "cdf": "uniform_pase", "load": 0.1375, "flows": 1500}}],
            "output": {{"audit": true}}}}"#
    )
}

fn run_doc(d: &str) -> RunOutput {
    let sc = parse_scenario(d, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    run(&sc, &mut |_| true)
}

fn afct_us(out: &RunOutput) -> f64 {
    let f = &out.flows;
    f.fct_ps.iter().map(|&t| t as f64).sum::<f64>() / f.id.len() as f64 / 1e6
}

/// Messages processed by the arbitrators of the aggregation-to-core links.
fn agg_core_msgs(out: &RunOutput) -> u64 {
    let p = &out.ports;
    (0..p.id.len()).filter(|&i| p.node_kind[i] == "agg" && p.peer_kind[i] == "core").map(|i| p.arb_msgs[i]).sum()
}

#[test]
fn left_right_end_to_end_beats_endpoint_and_pruning_with_delegation_cut_messages() {
    let endpoint = run_doc(&doc(r#"{"protocol": "pase", "arbitration": "endpoint"}"#));
    let full = run_doc(&doc(r#"{"protocol": "pase"}"#));
    let plain = run_doc(&doc(r#"{"protocol": "pase", "pruning": false, "delegation": false}"#));
    for (name, out) in [("endpoint", &endpoint), ("end-to-end", &full), ("no optimisations", &plain)] {
        assert!(out.audit_errors.is_empty(), "{name}: {:?}", out.audit_errors);
        assert!(out.flows.finish_ps.iter().all(|&t| t != u64::MAX), "{name}: unfinished flows");
        eprintln!(
            "{name}: AFCT {:.0} us, timeouts {}, drops {:?}, arbitration packets sent {}, processed {} ({} at the Agg->Core arbitrators)",
            afct_us(out),
            out.flows.timeouts.iter().sum::<u32>(),
            out.counters.drops,
            out.counters.arb_msgs_sent,
            out.ports.arb_msgs.iter().sum::<u64>(),
            agg_core_msgs(out)
        );
    }
    // Fig. 12(a) direction, with and without the optimisations.
    assert!(afct_us(&full) < 0.95 * afct_us(&endpoint), "{} vs {}", afct_us(&full), afct_us(&endpoint));
    assert!(afct_us(&plain) < 0.95 * afct_us(&endpoint), "{} vs {}", afct_us(&plain), afct_us(&endpoint));
    // Endpoint-only arbitration leaves the aggregation-core link uncontrolled: it overflows.
    assert!(endpoint.counters.drops.iter().map(|d| d.1).sum::<u64>() > 0);
    // Fig. 11(b) direction: fewer arbitration packets, and the aggregation switches process
    // only the delegation reports.
    let (sent_full, sent_plain) = (full.counters.arb_msgs_sent, plain.counters.arb_msgs_sent);
    assert!(sent_full < sent_plain * 8 / 10, "{sent_full} vs {sent_plain}");
    let (proc_full, proc_plain): (u64, u64) = (full.ports.arb_msgs.iter().sum(), plain.ports.arb_msgs.iter().sum());
    assert!(proc_full < proc_plain * 8 / 10, "{proc_full} vs {proc_plain}");
    assert!(agg_core_msgs(&full) * 5 < agg_core_msgs(&plain), "{} vs {}", agg_core_msgs(&full), agg_core_msgs(&plain));
    // Endpoint-only: no arbitrator above the ToRs is ever asked.
    assert_eq!(agg_core_msgs(&endpoint), 0);
}
