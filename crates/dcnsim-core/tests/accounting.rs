//! The run's own accounting against identities that hold whatever the transport does:
//!
//! - **Per-port byte balance.** Every byte offered to an egress port is serialized, dropped,
//!   cut off by trimming or still queued when the run ends:
//!   `rx_bytes = tx_bytes + dropped_bytes + trimmed_bytes + queued_bytes`. The four terms are
//!   counted in different places (the offer, the start of each serialization, each drop, each
//!   trim, the queue policy's own byte count at the end), so a packet a policy loses or
//!   double-counts breaks it.
//! - **Per-link balance.** With nothing left in the network, the bytes a switch's ingress
//!   links delivered (the `tx_bytes` of the ports whose peer is the switch) equal the bytes
//!   offered to its egress ports.
//! - **Little's law on a sample path.** The loop's integral of the number of foreground flows
//!   in the system over [0, end] equals, for the flow table, the sum over flows of the time
//!   each spent in the system inside that window: the FCT of a finished flow, `end - start`
//!   of a flow still running at the end. Exact in integer picoseconds.

mod common;

use dcnsim_core::output::RunOutput;
use dcnsim_core::sim::run;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

fn run_doc(protocol: &str, net: &str, extra: &str) -> RunOutput {
    let doc = format!(
        r#"{{"seed": 3,
            "topology": {{"kind": "single_switch", "hosts": 8, "host_rate": "10Gbps", "host_delay": "1us"}},
            "network": {{"buffer": "60KB"{net}}},
            "transport": {{"protocol": "{protocol}"}},
            "workload": [{{"pattern": "poisson", "load": 0.6, "cdf": "websearch", "flows": 150}}]{extra}}}"#
    );
    let sc = parse_scenario(&doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    run(&sc, &mut |_| true)
}

fn assert_port_balance(out: &RunOutput, what: &str) {
    let p = &out.ports;
    for i in 0..p.id.len() {
        assert_eq!(
            p.rx_bytes[i],
            p.tx_bytes[i] + p.dropped_bytes[i] + p.trimmed_bytes[i] + p.queued_bytes[i],
            "{what}: port {i}"
        );
    }
}

fn assert_link_balance(out: &RunOutput, what: &str) {
    let p = &out.ports;
    assert_eq!(out.counters.packets_left, 0, "{what}");
    let switches: Vec<u32> =
        (0..p.id.len()).filter(|&i| p.node_kind[i] != "host").map(|i| p.node[i]).collect::<Vec<_>>();
    for &s in &switches {
        let delivered: u64 = (0..p.id.len()).filter(|&i| p.peer[i] == s).map(|i| p.tx_bytes[i]).sum();
        let offered: u64 = (0..p.id.len()).filter(|&i| p.node[i] == s).map(|i| p.rx_bytes[i]).sum();
        assert_eq!(delivered, offered, "{what}: switch {s}");
    }
}

/// Time each flow spent in the system within [0, end] by the flow table, in ps.
fn flow_table_area(out: &RunOutput) -> u128 {
    let f = &out.flows;
    let end = out.counters.sim_end_ps;
    (0..f.id.len())
        .filter(|&i| !f.background[i] && f.start_ps[i] <= end)
        .map(|i| if f.finish_ps[i] == u64::MAX { end - f.start_ps[i] } else { f.fct_ps[i] } as u128)
        .sum()
}

#[test]
fn byte_balance_holds_per_port_and_per_switch_on_lossy_runs() {
    // Drop-tail losses (tcp), drops of queued packets by a priority policy (pfabric evicts
    // the lowest-priority packet in the buffer) and trimming (ndp).
    for (protocol, net) in [
        ("tcp", ""),
        ("pfabric", r#", "queue_policy": "pfabric""#),
        ("ndp", r#", "queue_policy": "ndp_trim", "routing": "spray""#),
    ] {
        let out = run_doc(protocol, net, "");
        assert_port_balance(&out, protocol);
        assert_link_balance(&out, protocol);
        let p = &out.ports;
        let lost: u64 = p.dropped_bytes.iter().sum::<u64>() + p.trimmed_bytes.iter().sum::<u64>();
        assert!(lost > 0, "{protocol}: the run exercises losses");
        if protocol == "ndp" {
            assert!(p.trimmed_bytes.iter().sum::<u64>() > 0 && out.counters.trims > 0);
        }
    }
}

#[test]
fn byte_balance_counts_queued_bytes_when_the_run_is_cut() {
    let out = run_doc("tcp", "", r#", "run": {"time_limit": "2ms"}"#);
    assert!(out.counters.cut_at_limit);
    assert!(out.ports.queued_bytes.iter().sum::<u64>() > 0, "packets are queued at the cut");
    assert_port_balance(&out, "tcp cut at 2 ms");
}

#[test]
fn flows_in_system_integral_is_the_flow_tables_time_in_system() {
    // Every flow finishes: the system is empty at both ends of [0, end].
    let out = run_doc("dctcp", "", "");
    assert!(out.flows.finish_ps.iter().all(|&f| f != u64::MAX));
    let area = out.counters.flows_in_system_integral_ps;
    assert!(area > 0.0);
    assert_eq!(area, flow_table_area(&out) as f64);
    // Cut in the middle: flows still running count until the end of the window.
    let out = run_doc("dctcp", "", r#", "run": {"time_limit": "3ms"}"#);
    let unfinished = out.flows.finish_ps.iter().filter(|&&f| f == u64::MAX).count();
    assert!(unfinished > 0);
    assert_eq!(out.counters.sim_end_ps, 3_000_000_000);
    assert_eq!(out.counters.flows_in_system_integral_ps, flow_table_area(&out) as f64);
}
