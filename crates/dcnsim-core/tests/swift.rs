//! Small-scenario tests of Swift (Kumar et al., SIGCOMM 2020) and of PPT over Swift (PPT
//! §6.2, Fig. 14).
//!
//! Each test states the independent expectation it checks: the network's ideal FCT for an
//! uncontended flow, Jain's fairness index and a queueing delay held near Swift's target for
//! long flows sharing a bottleneck, byte conservation (audit).

mod common;

use common::*;
use dcnsim_core::units::{Bytes, Rate, Time};
use dcnsim_core::workload::FlowSpec;

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

/// An uncontended Swift flow whose initial window covers the path's BDP finishes in exactly
/// its ideal FCT, for sizes from one packet to 1 MB (about 70 RTTs of data at 40 Gbps).
///
/// Why: the window starts at one BDP plus two packets, so the NIC never idles waiting for an
/// ACK; the packets beyond the BDP wait in the sender's NIC, adding at most two packets'
/// serialization to the RTT, far below Swift's target (2 x base RTT by default), so every ACK
/// is an additive increase and the window never shrinks below the BDP.
#[test]
fn uncontended_swift_flow_finishes_in_ideal_fct() {
    let topos = [
        (r#"{"kind":"single_switch","hosts":4,"host_rate":"10Gbps","host_delay":"2us"}"#, 0, 3, Rate::gbps(10)),
        (
            r#"{"kind":"leaf_spine","leaves":3,"hosts_per_leaf":4,"spines":2,"host_rate":"40Gbps","core_rate":"100Gbps"}"#,
            0,
            11,
            Rate::gbps(40),
        ),
    ];
    for (topo, src, dst, rate) in topos {
        let probe = scenario(topo, r#"{"protocol":"swift"}"#, "{}");
        let bdp = rate.bdp(probe.net_info.max_base_rtt).0;
        let init = bdp.div_ceil(1460) + 2;
        let sc = scenario(topo, &format!(r#"{{"protocol":"swift","init_cwnd":{init}}}"#), r#"{"buffer":"1MB"}"#);
        for size in [1u64, 1460, 1461, 64_000, 1_000_003] {
            let flows = vec![flow(src, dst, size, Time::us(3))];
            let (out, _) = run_flows(&sc, flows);
            assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
            let (fct, ideal) = (out.flows.fct_ps[0], out.flows.ideal_fct_ps[0]);
            assert_eq!(fct, ideal, "{topo} size {size}: fct {fct} ideal {ideal} (init_cwnd {init})");
            assert_eq!((out.flows.retx_bytes[0], out.flows.timeouts[0]), (0, 0));
        }
    }
}

/// Two long-lived Swift flows through one 10G bottleneck (base RTT 14.5 us) share it
/// fairly (Jain >= 0.95 over the steady state), keep it busy (>= 95%), and hold the
/// bottleneck's queueing delay near Swift's target minus the base RTT: with
/// `base_target = base RTT + 20 us` and no flow scaling, the average queue divided by the
/// link rate lies within [0.7, 1.3] x 20 us.
#[test]
fn two_long_swift_flows_share_fairly_with_delay_near_target() {
    let topo = r#"{"kind":"single_switch","hosts":3,"host_rate":"10Gbps","host_delay":"3us"}"#;
    let probe = scenario(topo, r#"{"protocol":"swift"}"#, "{}");
    let base = probe.net_info.max_base_rtt;
    let queueing = Time::us(20);
    let target = base + queueing;
    let sc = scenario_full(
        topo,
        &format!(r#"{{"protocol":"swift","base_target":"{}ps","flow_scaling":false}}"#, target.0),
        r#"{"buffer":"1MB"}"#,
        r#"{"time_limit":"40ms"}"#,
        r#"{"sample_interval":"10us","sample_ports":"switch","audit":true}"#,
    );
    let flows: Vec<FlowSpec> = (0..2).map(|i| background(i, 2, Time::us(i as u64 * 50))).collect();
    let (out, rec) = run_flows(&sc, flows);
    let (t0, t1) = (Time::ms(10), Time::ms(40));
    let rates: Vec<f64> = (0..2).map(|f| rec.borrow().bytes_between(f, t0, t1) as f64).collect();
    let j = jain(&rates);
    let port = bottleneck_port(&out, 2);
    let (util, avg_q) = port_stats(&out, port, t0, t1);
    let rate = Rate::gbps(10);
    let qdelay = rate.tx_time(Bytes(avg_q as u64));
    let drops: u64 = out.counters.drops.iter().map(|d| d.1).sum();
    eprintln!(
        "swift 2 flows: base RTT {base}, target {target}, jain {j:.4}, util {util:.4}, avg queue {avg_q:.0} B = {qdelay}, drops {drops}"
    );
    assert!(j >= 0.95, "Jain {j:.4} rates {rates:?}");
    assert!(util >= 0.95, "utilization {util:.4}");
    let ratio = qdelay.0 as f64 / queueing.0 as f64;
    assert!((0.7..=1.3).contains(&ratio), "queueing delay {qdelay} vs target - base RTT {queueing} ({ratio:.3})");
    assert_eq!(drops, 0);
}
