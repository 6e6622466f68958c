//! Scenario tests of `[[link_delay]]` (linkdelay.rs): a link's one-way propagation delay
//! changes at given times. Arrival times of single packets sent before, at and after a
//! change, computed by hand; the FIFO rule when the delay drops (no packet overtakes the one
//! before it: it arrives with it); a change at time 0 equals the same delay in the
//! topology; and a grant-clocked flow whose FCT follows the window-limited rate
//! W / RTT before and after its round trip grows.

mod common;

use common::*;
use dcnsim_core::scenario::Scenario;
use dcnsim_core::units::Time;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

/// h0 - s - h1, 10 Gbps: h0 - s 1 us, s - h1 `d1` (a Time string).
fn line(d1: &str, transport: &str, network: &str, link_delay: &str) -> Scenario {
    let doc = format!(
        r#"{{"topology":{{"kind":"explicit",
              "nodes":[{{"name":"h0","kind":"host"}},{{"name":"h1","kind":"host"}},{{"name":"s","kind":"switch"}}],
              "links":[{{"a":"h0","b":"s","rate":"10Gbps","delay":"1us"}},
                       {{"a":"s","b":"h1","rate":"10Gbps","delay":"{d1}"}}]}},
            "transport":{transport},"network":{network},"output":{{"audit":true}},"link_delay":{link_delay},
            "workload":[{{"pattern":"permutation","size":"1000B"}}]}}"#
    );
    parse_scenario(&doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

const US: u64 = 1_000_000;
/// Serialization of a 1500-byte packet at 10 Gbps (1.2 us), of a 1040-byte one (0.832 us).
const P: u64 = 1_200_000;
const P1040: u64 = 832_000;

/// A flow sends one 1000-byte packet (1040 B on the wire) at its start. The switch
/// starts serializing it at start + 0.832 us + 1 us; it reaches h1 0.832 us later plus
/// the delay s -> h1 has at that moment: 5 us, 20 us from 100 us to 300 us.
#[test]
fn single_packets_take_the_delay_of_the_moment_their_serialization_starts() {
    let sc = line(
        "5us",
        r#"{"protocol":"dctcp"}"#,
        "{}",
        r#"[{"a":"s","b":"h1","direction":"a_to_b","start":"100us","delay":"20us","end":"300us"}]"#,
    );
    let at_switch = P1040 + US; // from the flow's start to the switch's serialization start
    let starts = [
        0,
        100 * US - at_switch - 1, // starts 1 ps before the change: old delay
        100 * US - at_switch,     // starts exactly at the change: new delay
        150 * US,
        300 * US - at_switch - 1, // 1 ps before the end: still 20 us
        300 * US - at_switch,     // at the end: 5 us again
        400 * US,
    ];
    let delays = [5, 5, 20, 20, 20, 5, 5];
    // One run per start time, so that every packet is alone on the path.
    for (&s, &d) in starts.iter().zip(&delays) {
        let (out, rec) = run_flows(&sc, vec![flow(0, 1, 1000, Time(s))]);
        assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
        let rec = rec.borrow();
        assert_eq!(rec.data.len(), 1);
        let expect = s + at_switch + P1040 + d * US;
        assert_eq!(rec.data[0].0 .0, expect, "flow started at {s} ps: delay {d} us");
        assert_eq!(out.flows.fct_ps[0], expect - s);
    }
    let (out, _) = run_flows(&sc, vec![flow(0, 1, 1000, Time::ZERO)]);
    // ports.csv keeps the topology's delay.
    assert_eq!(out.ports.delay_ps[2], 5 * US);
}

/// The delay s -> h1 drops from 20 us to 1 us while DCTCP's first window (10 packets of
/// 1500 B, back to back at 10 Gbps, no queue at the switch) crosses it. Packet k starts
/// serializing at the switch at (k + 1) P + 1 us and ends P later; with the change at
/// 1 us + 4.5 P, packets 0-3 arrive at (k + 2) P + 21 us, and packets 4-9, which would
/// arrive at (k + 2) P + 2 us (before packet 3), arrive together with packet 3, at
/// 5 P + 21 us.
#[test]
fn delay_drop_never_lets_a_packet_overtake_the_one_sent_before_it() {
    let change = US + 9 * P / 2;
    let sc = line(
        "20us",
        r#"{"protocol":"dctcp"}"#,
        "{}",
        &format!(r#"[{{"a":"s","b":"h1","direction":"a_to_b","start":"{}ps","delay":"1us"}}]"#, change),
    );
    let (out, rec) = run_flows(&sc, vec![flow(0, 1, 200 * 1460, Time::ZERO)]);
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    assert_ne!(out.flows.fct_ps[0], u64::MAX);
    let arr = &rec.borrow().data_arrivals;
    for (k, &(t, seq)) in arr.iter().take(10).enumerate() {
        assert_eq!(seq, k as u64 * 1460, "packet {k} in order");
        let expect = if k < 4 { (k as u64 + 2) * P + 21 * US } else { 5 * P + 21 * US };
        assert_eq!(t.0, expect, "packet {k}");
    }
    // One path, no loss: every packet arrives in the order it was sent, none before another.
    assert!(arr.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1), "FIFO order");
    assert!(out.counters.drops.iter().all(|d| d.1 == 0), "{:?}", out.counters.drops);
}

/// A change at time 0 is the same network as the delay written into the topology: the
/// same run, to the picosecond.
#[test]
fn change_at_time_zero_equals_the_delay_in_the_topology() {
    let flows = || (0..3).map(|i| flow(0, 1, 300_000, Time(i * 40 * US))).collect::<Vec<_>>();
    let (a, _) = run_flows(&line("30us", r#"{"protocol":"dctcp"}"#, "{}", "[]"), flows());
    let (b, _) = run_flows(
        &line("5us", r#"{"protocol":"dctcp"}"#, "{}", r#"[{"a":"s","b":"h1","start":"0us","delay":"30us"}]"#),
        flows(),
    );
    assert_eq!(a.flows.fct_ps, b.flows.fct_ps);
    assert_eq!(a.counters.packet_hops, b.counters.packet_hops);
}

/// A grant-clocked flow (RPO's grant clock without opportunistic packets) keeps W = 4
/// packets in flight: alone on an uncongested path it delivers W packets per round trip T.
/// Both directions of s - h1 grow by 15 us at 1 ms (T grows by 30 us), so the flow's rate
/// falls from W / T to W / (T + 30 us). Expected FCT: 1 ms plus the packets left at 1 ms
/// at the new rate, within one new round trip (the packets in flight at the change).
#[test]
fn grant_clocked_flow_slows_to_its_window_over_the_longer_round_trip() {
    const W: u64 = 4;
    const N: u64 = 400;
    let transport = format!(r#"{{"protocol":"rpo","host_opp_queue":0,"bdp_bytes":"{}B"}}"#, W * 1460);
    let net = r#"{"queue_policy":"rpo_crossmark","crossmark":{"adaptive":true}}"#;
    let flows = || vec![flow(0, 1, N * 1460, Time::ZERO)];
    let (base, _) = run_flows(&line("5us", &transport, net, "[]"), flows());
    let (out, rec) =
        run_flows(&line("5us", &transport, net, r#"[{"a":"s","b":"h1","start":"1ms","delay":"20us"}]"#), flows());
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    // T: data h0 -> h1 (two 1500 B serializations, 6 us) and the grant back (two 64 B ones).
    let t = 2 * P + 6 * US + 2 * 51_200 + 6 * US;
    assert_eq!(out.flows.base_rtt_ps[0], t);
    let t_new = t + 30 * US;
    // Without the change: N / W round trips (the first packet needs 2 P + 6 us).
    let fct0 = base.flows.fct_ps[0] as f64;
    let expect0 = (N / W) as f64 * t as f64;
    assert!((fct0 - expect0).abs() < t as f64, "FCT {fct0} ps without the change, expected {expect0}");
    let fct = out.flows.fct_ps[0] as f64;
    let done_at_change = rec.borrow().data.iter().filter(|d| d.0 .0 <= 1000 * US).count() as u64;
    let expect = 1000.0 * US as f64 + (N - done_at_change) as f64 / W as f64 * t_new as f64;
    eprintln!(
        "T {t} ps, T' {t_new} ps; {done_at_change} packets by 1 ms; FCT {:.1} us, expected {:.1} us (without the change {:.1} us)",
        fct / 1e6,
        expect / 1e6,
        fct0 / 1e6
    );
    assert!((fct - expect).abs() < t_new as f64, "FCT {fct} ps, expected {expect} ps");
    // The packets delivered by 1 ms came at W per T.
    let rate_before = done_at_change as f64 / (1000.0 * US as f64 / t as f64);
    assert!((rate_before - W as f64).abs() < 0.1, "{rate_before} packets per round trip before the change");
}
