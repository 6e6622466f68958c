//! Small-scenario tests of deadlines: the runner's abort at the deadline
//! (`run.abort_at_deadline`), and the deadline-aware window laws D2TCP and L2DCT against
//! DCTCP.
//!
//! Each test states its independent expectation: a run cut at the deadline by `time_limit`
//! (what the sender handed to its NIC by then), byte identity with DCTCP where the paper says
//! the law reduces to DCTCP, and conservation (audit).

mod common;

use common::*;
use dcnsim_core::units::Time;
use dcnsim_core::workload::FlowSpec;

const TOPO: &str = r#"{"kind":"single_switch","hosts":9,"host_rate":"10Gbps","host_delay":"2us"}"#;
const NET: &str = r#"{"buffer":"200KB","ecn_k":"30KB"}"#;

/// 8-to-1 incast of 300 KB flows (ECN marks at the receiver's port), with optional deadlines.
fn incast(deadline: impl Fn(u32) -> Option<Time>) -> Vec<FlowSpec> {
    (1..9).map(|s| FlowSpec { deadline: deadline(s), ..flow(s, 0, 300_000, Time::us(s as u64)) }).collect()
}

/// A flow without a deadline runs D2TCP's law with d = 1, DCTCP's (D2TCP §3.2): a whole run
/// of D2TCP without deadlines is byte-identical to DCTCP's. With tight deadlines it is not
/// (the penalty changes), so the comparison is not vacuous.
#[test]
fn d2tcp_without_deadlines_is_byte_identical_to_dctcp() {
    let dctcp = scenario(TOPO, r#"{"protocol":"dctcp"}"#, NET);
    let d2tcp = scenario(TOPO, r#"{"protocol":"d2tcp"}"#, NET);
    let (a, _) = run_flows(&dctcp, incast(|_| None));
    let (b, _) = run_flows(&d2tcp, incast(|_| None));
    assert!(a.audit_errors.is_empty() && b.audit_errors.is_empty());
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.ports.tx_bytes, b.ports.tx_bytes);
    assert_eq!(a.counters.events, b.counters.events);
    // Deadlines from 300 us to 1 ms: near-deadline flows back off less, far ones more.
    let (c, _) = run_flows(&d2tcp, incast(|s| Some(Time::us(200 + 100 * s as u64))));
    assert!(c.audit_errors.is_empty());
    assert_ne!(a.flows.fct_ps, c.flows.fct_ps, "tight deadlines must change the run");
    // Even with deadlines D2TCP only changes the ECN cut: every flow still finishes.
    assert!(c.flows.finish_ps.iter().all(|&f| f != u64::MAX));
}

/// L2DCT changes both the cut and the increase: the same incast differs from DCTCP, and
/// every flow still finishes with every byte delivered.
#[test]
fn l2dct_runs_and_differs_from_dctcp() {
    let dctcp = scenario(TOPO, r#"{"protocol":"dctcp"}"#, NET);
    let l2dct = scenario(TOPO, r#"{"protocol":"l2dct","s_min":"20KB","s_max":"200KB"}"#, NET);
    let (a, _) = run_flows(&dctcp, incast(|_| None));
    let (b, _) = run_flows(&l2dct, incast(|_| None));
    assert!(b.audit_errors.is_empty(), "{:?}", b.audit_errors);
    assert!(b.flows.finish_ps.iter().all(|&f| f != u64::MAX));
    assert_ne!(a.flows.fct_ps, b.flows.fct_ps);
}

/// With `abort_at_deadline` a flow still running at its deadline stops: the bytes its sender
/// handed to the NIC are exactly those of the same run cut at the deadline by `time_limit`
/// (nothing is sent after it), it is marked aborted and unfinished, and the run ends although
/// the flow never completes. A flow that meets its deadline is unaffected.
#[test]
fn abort_at_deadline_stops_the_flow() {
    for proto in [r#"{"protocol":"dctcp"}"#, r#"{"protocol":"tcp"}"#, r#"{"protocol":"homa"}"#] {
        let deadline = Time::us(100);
        let start = Time::us(3);
        let flows = vec![
            FlowSpec { deadline: Some(deadline), ..flow(1, 0, 10_000_000, start) },
            FlowSpec { deadline: Some(Time::ms(5)), ..flow(2, 3, 20_000, start) },
        ];
        let abort = scenario_full(TOPO, proto, NET, r#"{"abort_at_deadline":true}"#, r#"{"audit":true}"#);
        let (a, _) = run_flows(&abort, flows.clone());
        // start + deadline = 103 us.
        let cut = scenario_full(TOPO, proto, NET, r#"{"time_limit":"103us"}"#, r#"{"audit":true}"#);
        let (c, _) = run_flows(&cut, flows.clone());
        assert!(a.audit_errors.is_empty(), "{proto}: {:?}", a.audit_errors);
        assert_eq!(a.flows.aborted, vec![true, false], "{proto}");
        assert_eq!(a.flows.finish_ps[0], u64::MAX);
        assert!(a.flows.sent_bytes[0] > 0 && a.flows.sent_bytes[0] < 10_000_000);
        assert_eq!(a.flows.sent_bytes[0], c.flows.sent_bytes[0], "{proto}: bytes sent by the deadline");
        assert!(a.flows.fct_ps[1] <= Time::ms(5).0, "{proto}: the second flow meets its deadline");
        assert!(!a.counters.cut_at_limit, "{proto}: the run ends by itself");
        // Without the abort the same flow runs to completion, long after its deadline.
        let plain = scenario(TOPO, proto, NET);
        let (p, _) = run_flows(&plain, flows);
        assert!(p.flows.fct_ps[0] > deadline.0 && p.flows.fct_ps[0] != u64::MAX);
        assert_eq!(p.flows.aborted, vec![false, false]);
    }
}

/// A flow that completes exactly at its deadline has met it and is not abandoned: its last
/// ACKs, which reach the sender after the deadline, still count (no spurious timeout or
/// retransmission), so its row equals that of the run without the abort.
#[test]
fn abort_spares_a_flow_finishing_at_its_deadline() {
    for proto in [r#"{"protocol":"dctcp"}"#, r#"{"protocol":"tcp"}"#, r#"{"protocol":"homa"}"#] {
        let start = Time::us(3);
        let plain = scenario(TOPO, proto, NET);
        let (p, _) = run_flows(&plain, vec![flow(2, 3, 200_000, start)]);
        let fct = Time(p.flows.fct_ps[0]);
        let abort = scenario_full(TOPO, proto, NET, r#"{"abort_at_deadline":true}"#, r#"{"audit":true}"#);
        let (a, _) = run_flows(&abort, vec![FlowSpec { deadline: Some(fct), ..flow(2, 3, 200_000, start) }]);
        assert!(a.audit_errors.is_empty(), "{proto}: {:?}", a.audit_errors);
        assert_eq!(a.flows.aborted, vec![false], "{proto}");
        assert_eq!(a.flows.fct_ps[0], fct.0, "{proto}");
        assert_eq!(
            (a.flows.sent_bytes[0], a.flows.retx_bytes[0], a.flows.timeouts[0]),
            (p.flows.sent_bytes[0], p.flows.retx_bytes[0], p.flows.timeouts[0]),
            "{proto}"
        );
        // One picosecond less and it is abandoned, unfinished.
        let early = Time(fct.0 - 1);
        let (b, _) = run_flows(&abort, vec![FlowSpec { deadline: Some(early), ..flow(2, 3, 200_000, start) }]);
        assert_eq!((b.flows.aborted[0], b.flows.finish_ps[0]), (true, u64::MAX), "{proto}");
    }
}

/// PDQ with `abort_at_deadline`: two flows into host 0, the one with a deadline (the most
/// critical, earliest deadline first) takes the receiver's link and the other is paused. At
/// the deadline the first is abandoned; its sender's end packet removes it from the links'
/// lists at once, so the paused flow is granted the link within a few round trips and
/// finishes about one line-rate transfer after the deadline. Were the abandoned flow left in
/// the lists, the second would wait for the list entry to expire (48 RTTs, ~400 us here).
#[test]
fn pdq_abandoned_flow_frees_the_link_for_the_paused_one() {
    let sc = scenario_full(TOPO, r#"{"protocol":"pdq"}"#, NET, r#"{"abort_at_deadline":true}"#, r#"{"audit":true}"#);
    let deadline = Time::us(300);
    let flows = vec![
        FlowSpec { deadline: Some(deadline), ..flow(1, 0, 2_000_000, Time::ZERO) },
        flow(2, 0, 500_000, Time::us(1)),
    ];
    let (a, _) = run_flows(&sc, flows);
    assert!(a.audit_errors.is_empty(), "{:?}", a.audit_errors);
    assert_eq!(a.flows.aborted, vec![true, false]);
    assert_eq!(a.flows.finish_ps[0], u64::MAX);
    // 500 KB at 10 Gbit/s = 400 us; paused until the deadline, then at line rate.
    let fct = a.flows.fct_ps[1];
    assert!(fct > deadline.0 + Time::us(400).0, "the second flow waited for the first: {fct}");
    assert!(fct < deadline.0 + Time::us(500).0, "granted within a few RTTs of the abort: {fct}");
}
