//! TCP incast against PTCP's bound (Eq. 1-3): N synchronized senders each put a window w
//! into a bottleneck of capacity C with buffer B; the first RTT overflows the buffer when
//! N x w > B + C x RTT. Losses of a whole-window flow cannot be repaired by duplicate ACKs,
//! so each overflow costs a retransmission timeout: the FCT jumps by at least RTOmin.

mod common;

use common::*;
use dcnsim_core::units::{Rate, Time};

const RTO_MIN_MS: u64 = 200;

fn incast(proto: &str, n: u32, iw: u64, size: u64) -> (f64, u32, u64) {
    let sc = scenario_full(
        &format!(r#"{{"kind":"single_switch","hosts":{},"host_rate":"1Gbps","host_delay":"25us"}}"#, n + 1),
        &format!(r#"{{"protocol":"{proto}","min_rto":"{RTO_MIN_MS}ms","init_cwnd":{iw}}}"#),
        r#"{"buffer":"96KB","ecn_k":"15KB"}"#,
        "{}",
        r#"{"audit":true}"#,
    );
    let flows = (0..n).map(|i| flow(i, n, size, Time::ZERO)).collect();
    let (out, _) = run_flows(&sc, flows);
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    let max_ms = *out.flows.fct_ps.iter().max().unwrap() as f64 / 1e9;
    let timeouts = out.flows.timeouts.iter().sum();
    let drops = out.counters.drops.iter().map(|d| d.1).sum();
    (max_ms, timeouts, drops)
}

/// One-window flows: the threshold is exactly Eq. 3.
#[test]
fn tcp_incast_collapses_beyond_the_buffer_bound() {
    let iw = 4u64;
    let w = iw * 1500; // bytes on the wire per sender in the first RTT
    let b = 96_000f64;
    // Base RTT: 4 x 25 us propagation + store-and-forward of one MTU and one ACK per hop.
    let c = Rate::gbps(1);
    let rtt =
        Time::us(100) + (c.tx_time(dcnsim_core::units::Bytes(1500)) + c.tx_time(dcnsim_core::units::Bytes(64))) * 2;
    let bound = (b + c.bdp(rtt).0 as f64) / w as f64; // about 18.3 senders
    assert!((18.0..19.0).contains(&bound), "{bound}");
    for n in [4u32, 8, 12, 16] {
        let (max_ms, to, drops) = incast("tcp", n, iw, iw * 1460);
        assert_eq!(drops, 0, "N={n} <= bound {bound:.1}: the buffer absorbs the burst");
        assert_eq!(to, 0);
        assert!(max_ms < RTO_MIN_MS as f64 / 10.0, "N={n}: {max_ms} ms");
    }
    for n in [20u32, 24, 32, 48] {
        let (max_ms, to, drops) = incast("tcp", n, iw, iw * 1460);
        assert!(drops > 0 && to > 0, "N={n} > bound {bound:.1}: overflow and timeouts ({drops} drops, {to} timeouts)");
        assert!(max_ms >= RTO_MIN_MS as f64, "N={n}: FCT {max_ms} ms jumps by at least RTOmin");
    }
}

/// 64 KB per sender (PTCP Fig. 4) with DCTCP at its 2-packet minimum window: no timeout
/// well below the bound (B + C x RTT) / w = 36 senders, collapse well above it.
#[test]
fn dctcp_64kb_incast_follows_the_bound() {
    for n in [8u32, 16, 24] {
        let (max_ms, to, _) = incast("dctcp", n, 2, 64_000);
        assert_eq!(to, 0, "N={n}: no timeout below the bound");
        // No-loss completion: N x 64 KB (plus headers) at 1 Gbps.
        let ideal_ms = n as f64 * 64_000.0 * 8.0 / 1e9 * 1e3 * 1500.0 / 1460.0;
        assert!(max_ms < ideal_ms * 1.1, "N={n}: {max_ms} ms vs {ideal_ms} ms");
    }
    let (max_ms, to, _) = incast("dctcp", 64, 2, 64_000);
    assert!(to > 0 && max_ms >= RTO_MIN_MS as f64, "N=64: {max_ms} ms, {to} timeouts");
}
