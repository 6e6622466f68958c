//! The ACK-delay log (`[output] ack_delays`): every ACK a receiver-side control makes is one
//! row, checked here against the network's own byte counters (conservation), and nothing is
//! recorded when the field is off.

use dcnsim_core::output::RunOutput;
use dcnsim_core::scenario::Scenario;
use dcnsim_core::sim::Sim;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

/// 24 senders x 64 KB to host 0 on one 1 Gbps switch (96 KB buffer), two barrier rounds.
fn scenario(protocol: &str, output: &str) -> Result<Scenario, String> {
    let doc = format!(
        r#"{{"topology":{{"kind":"single_switch","hosts":25,"host_rate":"1Gbps","host_delay":"25us"}},
            "transport":{{"protocol":"{protocol}","min_rto":"200ms"}},"network":{{"buffer":"96KB"}},
            "output":{output},
            "workload":[{{"pattern":"incast","receiver":0,"senders":24,"size":"64KB","rounds":2,"barrier":true}}]}}"#
    );
    parse_scenario(&doc, Format::Json, Path::new(".")).map_err(|e| e.to_string())
}

fn run(protocol: &str, output: &str) -> RunOutput {
    let sc = scenario(protocol, output).unwrap_or_else(|e| panic!("{e}"));
    let out = Sim::new(&sc).run(&mut |_| true);
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    assert_eq!(out.counters.stop_reason.as_str(), "done");
    out
}

/// Rows = ACKs the receiver handed to its NIC (its port's offered bytes / 64 B per ACK; host
/// 0 sends nothing else) + ACKs still held when the run stopped (release after the end).
/// Every row's release is at or after its making, and at least its own delay later.
#[test]
fn ack_delay_rows_equal_acks_the_receiver_nic_got_plus_those_still_held() {
    for protocol in ["ptcp", "iatcp"] {
        let out = run(protocol, r#"{"audit":true,"ack_delays":true}"#);
        let log = out.ack_delays.as_ref().unwrap_or_else(|| panic!("{protocol}: no log"));
        let p = &out.ports;
        let nic = (0..p.id.len()).find(|&i| p.node[i] == 0).unwrap();
        assert_eq!(p.rx_bytes[nic] % 64, 0);
        let sent = p.rx_bytes[nic] / 64;
        let end = out.counters.sim_end_ps;
        let still_held = log.release_ps.iter().filter(|&&r| r > end).count() as u64;
        assert_eq!(log.len() as u64, sent + still_held, "{protocol}: rows vs ACKs");
        assert_eq!(log.lost, 0);
        let held = (0..log.len()).filter(|&i| log.release_ps[i] > log.made_ps[i]).count();
        assert!(held > 0, "{protocol}: some ACK was held");
        for i in 0..log.len() {
            assert!(log.release_ps[i] >= log.made_ps[i] + log.delay_ps[i], "{protocol} row {i}");
            assert!(log.host[i] == 0 && log.flow[i] < 48);
        }
        assert!(log.made_ps.windows(2).all(|w| w[0] <= w[1]), "rows in the order the ACKs were made");
        // One ACK per data packet (no delayed ACKs): at least one per segment of 64 KB.
        assert!(log.len() >= 48 * 44, "{protocol}: {} rows", log.len());
    }
}

/// Off (the default): no log, and the run is packet-for-packet the same as with it on.
#[test]
fn ack_delays_off_records_nothing_and_recording_changes_nothing() {
    let off = run("ptcp", r#"{"audit":true}"#);
    let on = run("ptcp", r#"{"audit":true,"ack_delays":true}"#);
    assert!(off.ack_delays.is_none());
    assert_eq!(off.flows, on.flows);
    assert_eq!(off.ports, on.ports);
    assert_eq!(off.counters.events, on.counters.events);
}

/// A protocol that holds no ACKs, and a limit outside its range, are refused naming the field.
#[test]
fn ack_delays_for_a_protocol_without_receiver_control_or_a_bad_limit_is_refused() {
    let e = scenario("dctcp", r#"{"ack_delays":true}"#).err().unwrap();
    assert!(e.contains("output.ack_delays") && e.contains("dctcp"), "{e}");
    let e = scenario("ptcp", r#"{"ack_delays":true,"ack_delays_limit":0}"#).err().unwrap();
    assert!(e.contains("output.ack_delays_limit"), "{e}");
    assert!(scenario("dctcp", r#"{"ack_delays":false}"#).is_ok());
    let sc = scenario("ptcp", r#"{"ack_delays":true,"ack_delays_limit":10}"#).unwrap();
    let out = Sim::new(&sc).run(&mut |_| true);
    let log = out.ack_delays.unwrap();
    assert_eq!(log.len(), 10);
    assert!(log.lost > 0);
}
