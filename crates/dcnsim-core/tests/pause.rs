//! Scenario tests of `[[pause]]` (pause.rs): a paused flow's source ignores its receiver, so a
//! receiver-driven flow sends (almost) nothing during the pause, resumes through its
//! transport's own recovery afterwards and completes with every byte delivered once; under
//! RPO the other flow to the same receiver fills the bandwidth the paused one leaves. Both
//! modes (`defer`: grants acted on when the pause ends; `ignore`: discarded).

mod common;

use common::*;
use dcnsim_core::packet::FlowId;
use dcnsim_core::scenario::Scenario;
use dcnsim_core::units::Time;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

/// 9 hosts on one switch, 10 Gbps, 5 us per link: base RTT about 23 us.
const STAR: &str = r#"{"kind":"single_switch","hosts":9,"host_rate":"10Gbps","host_delay":"5us"}"#;

fn paused_scenario(transport: &str, network: &str, pause: &str) -> Scenario {
    let doc = format!(
        r#"{{"topology":{STAR},"transport":{transport},"network":{network},
            "output":{{"audit":true,"sample_interval":"20us"}},"pause":{pause},
            "workload":[{{"pattern":"incast","receiver":8,"senders":2,"size":"3MB"}}]}}"#
    );
    parse_scenario(&doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

const T0: Time = Time::us(500);
const T1: Time = Time::us(1500);

/// Runs `sc` with its own flows; returns the payload flow 0 delivered well inside its pause
/// (from 3 base RTTs after it began to its end), the receiver link's utilisation there,
/// and the run output.
fn run(sc: &Scenario) -> (u64, f64, dcnsim_core::output::RunOutput) {
    let flows = sc.flows();
    let (out, rec) = run_flows(sc, flows.clone());
    assert!(out.audit_errors.is_empty(), "{:?}", &out.audit_errors[..out.audit_errors.len().min(5)]);
    for (i, f) in flows.iter().enumerate() {
        assert_ne!(out.flows.fct_ps[i], u64::MAX, "{}: flow {i} completes", sc.protocol);
        assert_eq!(rec.borrow().unique_bytes(i as FlowId), f.size.0, "{}: flow {i} delivered once", sc.protocol);
    }
    let settle = Time(T0.0 + 3 * out.flows.base_rtt_ps[0]);
    let during = rec.borrow().bytes_between(0, settle, T1);
    let (util, _) = port_stats(&out, bottleneck_port(&out, 8), Time(settle.0 + 100_000_000), T1);
    (during, util, out)
}

#[test]
fn rpo_paused_flow_goes_silent_and_the_other_flow_fills_the_link() {
    let net = r#"{"queue_policy":"rpo_crossmark","crossmark":{"adaptive":true}}"#;
    let pause = r#"[{"flows":[0],"start":"500us","off":"1ms","mode":"ignore"}]"#;
    let (during, util, out) = run(&paused_scenario(r#"{"protocol":"rpo"}"#, net, pause));
    eprintln!("rpo: flow 0 delivered {during} B during its pause, receiver link utilisation {util:.3}");
    // The sender timeout (2 x grant_timeout of silence) may send a packet now and then.
    assert!(during < 20 * 1460, "flow 0 delivered {during} B while paused");
    // Opportunistic packets of flow 1 take the freed half of the link.
    assert!(util > 0.9, "receiver link utilisation {util:.3} while flow 0 is paused");
    // Both flows' 6 MB need 4.9 ms at line rate; the pause costs flow 0 about its length.
    assert!(out.flows.fct_ps[0] > T1.0);
}

#[test]
fn paused_flows_of_other_receiver_driven_transports_go_silent_and_complete() {
    for (transport, net) in [
        (r#"{"protocol":"phost"}"#, "{}"),
        (r#"{"protocol":"homa","resend_timeout":"200us"}"#, "{}"),
        (r#"{"protocol":"ndp"}"#, r#"{"queue_policy":"ndp_trim"}"#),
        (r#"{"protocol":"rpo"}"#, r#"{"queue_policy":"rpo_crossmark","crossmark":{"adaptive":true}}"#),
    ] {
        for mode in ["defer", "ignore"] {
            let pause = format!(r#"[{{"flows":[0],"start":"500us","off":"1ms","mode":"{mode}"}}]"#);
            let sc = paused_scenario(transport, net, &pause);
            let (during, util, out) = run(&sc);
            eprintln!(
                "{} {mode}: flow 0 delivered {during} B during its pause, utilisation {util:.3}, FCT {} us",
                sc.protocol,
                out.flows.fct_ps[0] / 1_000_000
            );
            assert!(during < 20 * 1460, "{} {mode}: flow 0 delivered {during} B while paused", sc.protocol);
            assert!(out.flows.fct_ps[0] > T1.0);
        }
    }
}

#[test]
fn periodic_pauses_by_host_fraction_are_seeded_and_shown_in_the_normalized_scenario() {
    let pause = r#"[{"host_fraction":0.5,"off":"100us","on":"300us"}]"#;
    let sc = paused_scenario(r#"{"protocol":"rpo"}"#, r#"{"queue_policy":"rpo_crossmark"}"#, pause);
    let json: serde_json::Value = serde_json::from_str(&sc.to_json()).unwrap();
    assert_eq!(json["pause"][0]["host_fraction"], 0.5);
    assert_eq!(json["pause"][0]["on"], "300us");
    // Exactly one of the two sending hosts is unresponsive; the same seed gives the same run.
    let a = run(&sc);
    let b = run(&sc);
    assert_eq!(a.2.flows.fct_ps, b.2.flows.fct_ps);
    let (f0, f1) = (a.2.flows.fct_ps[0], a.2.flows.fct_ps[1]);
    assert_ne!(f0, f1, "one flow paused every 400 us, the other not");
}
