//! Small-scenario tests of NDP (Handley et al., SIGCOMM 2017) over the `ndp_trim` switch.
//!
//! Each test states the independent expectation it checks: the network's ideal FCT for an
//! uncontended flow, the receiver link's serialization bound for an incast, even load on
//! the spine uplinks under per-packet spraying, byte conservation (audit), determinism.

mod common;

use common::*;
use dcnsim_core::output::RunOutput;
use dcnsim_core::scenario::Scenario;
use dcnsim_core::transport::ndp::bdp_window;
use dcnsim_core::units::{Bytes, Rate, Time};
use dcnsim_core::workload::FlowSpec;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

/// Payload of a full 9000 B packet (40 B of headers).
const MSS: u64 = 8960;

fn total_drops(out: &RunOutput) -> u64 {
    out.counters.drops.iter().map(|d| d.1).sum()
}

/// Every flow finished, the audit found nothing, nothing is left in the network, and each
/// flow sent its size plus exactly what it reports as retransmitted.
fn assert_clean(out: &RunOutput, flows: &[FlowSpec]) {
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    assert!(!out.counters.cut_at_limit);
    assert_eq!(out.counters.packets_left, 0);
    let f = &out.flows;
    for (i, spec) in flows.iter().enumerate() {
        assert_ne!(f.finish_ps[i], u64::MAX, "flow {i} did not finish");
        assert_eq!(f.sent_bytes[i], spec.size.0 + f.retx_bytes[i], "flow {i}: sent = size + retransmitted");
    }
}

/// An uncontended flow finishes in its ideal FCT (the network's exact store-and-forward
/// pipeline at line rate), within one control-packet serialization at the host rate.
///
/// Why it should be exact or nearly: the first window is ceil(BDP / MTU) packets, so the
/// sender's NIC is still busy with it when the PULL triggered by the first packet returns
/// (one base RTT after the start, by the definition of the base RTT: one MTU and one
/// control packet per hop plus propagation both ways); from then on every arriving packet
/// releases one PULL, paced one MTU time apart, and every PULL one packet, so the NIC never
/// idles. The one slack: the receiver sends the ACK of a packet before its PULL, so the
/// PULL can come back up to one 64 B serialization later than the base RTT; if the first
/// window leaves less slack than that, the flow's tail shifts by at most that much.
#[test]
fn uncontended_flow_finishes_in_ideal_fct() {
    let topos = [
        // (topology, source, destination, host rate)
        (r#"{"kind":"single_switch","hosts":4,"host_rate":"100Gbps","host_delay":"DELAY"}"#, 0, 3, Rate::gbps(100)),
        (
            r#"{"kind":"leaf_spine","leaves":3,"hosts_per_leaf":4,"spines":2,"host_rate":"40Gbps","core_rate":"100Gbps","host_delay":"DELAY"}"#,
            0,
            11,
            Rate::gbps(40),
        ),
    ];
    let mut cases = 0;
    for (topo, src, dst, rate) in topos {
        for delay in ["1us", "1.3us", "0.7us"] {
            let topo = topo.replace("DELAY", delay);
            for mtu in [9000u64, 1500] {
                let net = format!(r#"{{"mtu":"{mtu}B","queue_policy":"ndp_trim"}}"#);
                let sc = scenario(&topo, r#"{"protocol":"ndp"}"#, &net);
                let mss = mtu - 40;
                for size in [1u64, mss, 5 * mss, 100 * mss + 7, 1_000_003] {
                    let flows = vec![flow(src, dst, size, Time::us(3))];
                    let (out, _) = run_flows(&sc, flows.clone());
                    assert_clean(&out, &flows);
                    let (fct, ideal) = (out.flows.fct_ps[0], out.flows.ideal_fct_ps[0]);
                    let slack = rate.tx_time(Bytes(64)).0;
                    assert!(
                        fct >= ideal && fct <= ideal + slack,
                        "{topo} mtu {mtu} size {size}: fct {fct} ideal {ideal} (slack {slack})"
                    );
                    assert_eq!((out.counters.trims, total_drops(&out)), (0, 0));
                    assert_eq!((out.flows.retx_bytes[0], out.flows.timeouts[0]), (0, 0));
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 60);
}

/// 32-to-1 incast of 22 jumbo packets per sender on one 40G switch with NDP trimming
/// (threshold 8 packets): the first windows (one BDP = 5 packets each, 160 in all) overflow
/// the receiver's port, which trims instead of dropping. Every flow completes, no packet is
/// dropped, every trimmed packet is resent exactly once (on a PULL, never by a timeout),
/// and the receiver link stays busy: the last flow finishes within 2% of the time the
/// link needs to carry all the data.
#[test]
fn incast_32_to_1_trims_never_drops_and_keeps_the_receiver_link_busy() {
    let n = 32u32;
    let sc = scenario(
        &format!(r#"{{"kind":"single_switch","hosts":{},"host_rate":"40Gbps"}}"#, n + 1),
        r#"{"protocol":"ndp"}"#,
        r#"{"mtu":"9000B","queue_policy":"ndp_trim"}"#,
    );
    // Base RTT 2 x (2 x 1 us + 9000 B and 64 B at 40G) = 7.63 us; BDP 38.1 KB = 5 packets.
    assert_eq!(bdp_window(Rate::gbps(40), sc.net_info.max_base_rtt, 9000), 5);
    let start = Time::us(1);
    let flows: Vec<FlowSpec> = (0..n).map(|i| flow(i, n, 22 * MSS, start)).collect();
    let (out, rec) = run_flows(&sc, flows.clone());
    assert_clean(&out, &flows);
    assert!(out.counters.trims > 100, "trims {}", out.counters.trims);
    assert_eq!(total_drops(&out), 0, "{:?}", out.counters.drops);
    let f = &out.flows;
    assert_eq!(f.timeouts.iter().sum::<u32>(), 0, "trimming needs no timeout");
    // Full-sized packets only: each trim costs exactly one retransmitted packet.
    assert_eq!(f.retx_bytes.iter().sum::<u64>(), out.counters.trims * MSS);
    // Receiver-side: every byte arrived, and the link carried the data back to back.
    for i in 0..n {
        assert_eq!(rec.borrow().unique_bytes(i), 22 * MSS);
    }
    let last = *f.finish_ps.iter().max().unwrap();
    let bound = start.0 + Rate::gbps(40).tx_time(Bytes(n as u64 * 22 * 9000)).0;
    eprintln!("incast: trims {} last finish {last} link bound {bound}", out.counters.trims);
    assert!(last >= bound);
    assert!((last - start.0) as f64 <= 1.02 * (bound - start.0) as f64, "last {last} bound {bound}");
}

/// The same 32-to-1 incast with the trimming switch's tail-or-arrival coin forced each way
/// (`tail_trim_probability` 0: always the arriving packet; 1: the data queue's tail whenever
/// that makes room) and at NDP's 0.5. Whichever packet is cut, the guarantees are those of
/// trimming: a trimmed tail's header leaves the data queue for the header queue, reaches the
/// receiver, is NACKed and resent once on a PULL; so every flow completes with all its bytes
/// (audit), nothing is dropped, no timeout fires, retransmitted bytes are exactly one MSS per
/// trim, and the receiver link stays busy (within 2% of its serialization bound). The coin
/// changes which packets are cut, hence the flows' finish times.
#[test]
fn incast_guarantees_hold_whichever_packet_the_coin_trims() {
    let n = 32u32;
    let start = Time::us(1);
    let flows: Vec<FlowSpec> = (0..n).map(|i| flow(i, n, 22 * MSS, start)).collect();
    let bound = start.0 + Rate::gbps(40).tx_time(Bytes(n as u64 * 22 * 9000)).0;
    let mut finish = vec![];
    for p in [0.0, 0.5, 1.0] {
        let sc = scenario(
            &format!(r#"{{"kind":"single_switch","hosts":{},"host_rate":"40Gbps"}}"#, n + 1),
            r#"{"protocol":"ndp"}"#,
            &format!(r#"{{"mtu":"9000B","queue_policy":"ndp_trim","trim":{{"tail_trim_probability":{p}}}}}"#),
        );
        let (out, rec) = run_flows(&sc, flows.clone());
        assert_clean(&out, &flows);
        let f = &out.flows;
        assert!(out.counters.trims > 100, "p {p}: trims {}", out.counters.trims);
        assert_eq!(total_drops(&out), 0, "p {p}: {:?}", out.counters.drops);
        assert_eq!(f.timeouts.iter().sum::<u32>(), 0, "p {p}");
        assert_eq!(f.retx_bytes.iter().sum::<u64>(), out.counters.trims * MSS, "p {p}");
        for i in 0..n {
            assert_eq!(rec.borrow().unique_bytes(i), 22 * MSS);
        }
        let last = *f.finish_ps.iter().max().unwrap();
        eprintln!("p {p}: trims {} last finish {last} bound {bound}", out.counters.trims);
        assert!(last >= bound && (last - start.0) as f64 <= 1.02 * (bound - start.0) as f64, "p {p}: last {last}");
        finish.push(f.finish_ps.clone());
    }
    assert_ne!(finish[0], finish[2], "the coin changes which packets are trimmed");
}

const LEAF_SPINE: &str =
    r#"{"kind":"leaf_spine","leaves":4,"hosts_per_leaf":4,"spines":4,"host_rate":"40Gbps","core_rate":"40Gbps"}"#;

/// A run of NDP on the non-oversubscribed 4 x 4 leaf-spine with the given seed and routing.
fn leaf_spine(seed: u64, routing: &str) -> Scenario {
    let doc = format!(
        r#"{{"seed":{seed},"topology":{LEAF_SPINE},"transport":{{"protocol":"ndp"}},
            "network":{{"mtu":"9000B","queue_policy":"ndp_trim","routing":"{routing}"}},"output":{{"audit":true}},
            "workload":[{{"pattern":"permutation","size":"1000B"}}]}}"#
    );
    parse_scenario(&doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

/// Every host sends 2 MB to the host four places on (always on another leaf).
fn permutation() -> Vec<FlowSpec> {
    (0..16).map(|i| flow(i, (i + 4) % 16, 2_000_000, Time::ZERO)).collect()
}

/// Leaf -> spine port byte counts.
fn uplinks(out: &RunOutput) -> Vec<u64> {
    let p = &out.ports;
    (0..p.id.len()).filter(|&i| p.node_kind[i] == "leaf" && p.peer_kind[i] == "spine").map(|i| p.tx_bytes[i]).collect()
}

/// Per-packet spraying on a full-bisection leaf-spine with a permutation: each leaf's
/// four flows spread over all four spine uplinks, every uplink within 15% of the mean
/// (ECMP instead pins each flow to one uplink, so colliding flows share one while another
/// idles), and the permutation finishes well before the ECMP run's.
#[test]
fn spraying_keeps_every_spine_uplink_in_use() {
    let flows = permutation();
    let (spray, _) = run_flows(&leaf_spine(1, "spray"), flows.clone());
    assert_clean(&spray, &flows);
    let up = uplinks(&spray);
    assert_eq!(up.len(), 16);
    let mean = up.iter().sum::<u64>() as f64 / up.len() as f64;
    // All data crosses the core once: 32 MB of payload plus headers and PULL/ACK traffic.
    assert!(mean * 16.0 >= 32e6, "mean {mean}");
    for (i, &b) in up.iter().enumerate() {
        assert!((b as f64 - mean).abs() <= 0.15 * mean, "uplink {i}: {b} B vs mean {mean:.0}: {up:?}");
    }
    // Slowdown: random per-hop spraying queues packets transiently in the core, which
    // stretches the RTT beyond the one-BDP first window's reach (see the module docs of
    // transport/receiver/ndp/); every flow still finishes within 1.6x its ideal FCT.
    let f = &spray.flows;
    let worst = (0..16).map(|i| f.fct_ps[i] as f64 / f.ideal_fct_ps[i] as f64).fold(0.0, f64::max);
    let (ecmp, _) = run_flows(&leaf_spine(1, "ecmp"), flows.clone());
    assert_clean(&ecmp, &flows);
    let last = |o: &RunOutput| *o.flows.finish_ps.iter().max().unwrap();
    eprintln!("spray: uplinks {up:?} worst slowdown {worst:.3}; ecmp uplinks {:?}", uplinks(&ecmp));
    assert!(worst <= 1.6, "worst slowdown {worst}");
    assert!(last(&spray) < last(&ecmp), "spray {} ecmp {}", last(&spray), last(&ecmp));
}

/// The same scenario gives identical flow and port tables; spraying follows the seed.
#[test]
fn deterministic_in_the_seed() {
    let flows = permutation();
    let run = |seed| run_flows(&leaf_spine(seed, "spray"), flows.clone()).0;
    let (a, b, c) = (run(1), run(1), run(2));
    assert_eq!(a.flows.fct_ps, b.flows.fct_ps);
    assert_eq!(a.flows.retx_bytes, b.flows.retx_bytes);
    assert_eq!(a.ports.tx_bytes, b.ports.tx_bytes);
    assert_eq!(a.counters.trims, b.counters.trims);
    assert_ne!(a.ports.tx_bytes, c.ports.tx_bytes, "another seed sprays differently");
}

/// `trimming = false`: over a drop-tail switch (and over Aeolus selective dropping) lost
/// data packets produce no NACK; the per-packet timeout finds and resends them, and every
/// flow still completes with all its bytes. Over selective dropping, the only packets lost
/// are those sent without a PULL (flagged unscheduled), never a pulled one.
#[test]
fn without_trimming_timeouts_repair_losses() {
    let n = 16u32;
    let topo = format!(r#"{{"kind":"single_switch","hosts":{},"host_rate":"40Gbps"}}"#, n + 1);
    let tr = r#"{"protocol":"ndp","trimming":false,"rto":"100us"}"#;
    let flows: Vec<FlowSpec> = (0..n).map(|i| flow(i, n, 22 * MSS, Time::us(1))).collect();
    for (net, only_cause) in [
        (r#"{"mtu":"9000B","buffer":"50KB"}"#, "buffer_overflow"),
        (r#"{"mtu":"9000B","queue_policy":"ndp_trim"}"#, "buffer_overflow"),
        (r#"{"mtu":"9000B","queue_policy":"selective_drop"}"#, "selective_drop"),
    ] {
        let sc = scenario(&topo, tr, net);
        let (out, rec) = run_flows(&sc, flows.clone());
        assert_clean(&out, &flows);
        assert_eq!(out.counters.trims, 0, "{net}: untrimmable data is never trimmed");
        assert!(total_drops(&out) > 0, "{net}: the incast must lose packets");
        assert!(out.counters.drops.iter().all(|d| d.0 == only_cause), "{net}: {:?}", out.counters.drops);
        assert!(out.flows.timeouts.iter().sum::<u32>() > 0);
        for i in 0..n {
            assert_eq!(rec.borrow().unique_bytes(i), 22 * MSS);
        }
        eprintln!(
            "{net}: drops {:?} timeouts {} last finish {}",
            out.counters.drops,
            out.flows.timeouts.iter().sum::<u32>(),
            out.flows.finish_ps.iter().max().unwrap()
        );
    }
}

/// A bad `[transport]` value for ndp is rejected at parse time, naming the field.
#[test]
fn bad_ndp_settings_name_their_field() {
    for (tr, field) in [
        (r#"{"protocol":"ndp","rto":0}"#, "transport.rto"),
        (r#"{"protocol":"ndp","initial_window":0}"#, "transport.initial_window"),
        (r#"{"protocol":"ndp","pull_rate":"fast"}"#, "transport.pull_rate"),
        (r#"{"protocol":"ndp","window":4}"#, "transport.window"),
    ] {
        let doc = format!(
            r#"{{"topology":{LEAF_SPINE},"transport":{tr},"workload":[{{"pattern":"permutation","size":"1000B"}}]}}"#
        );
        let e = parse_scenario(&doc, Format::Json, Path::new(".")).err().unwrap_or_else(|| panic!("{tr} accepted"));
        assert_eq!(e.field(), field, "{tr}: {e}");
    }
}

/// NDP + Aeolus (Aeolus §V-D) against plain NDP with trimming, on the same 16-to-1 incast
/// of 22 jumbo packets per sender at 100G (one switch, 200 KB per port).
///
/// NDP + Aeolus runs without trimming over `selective_drop` (threshold 6 KB): the first
/// windows (one BDP each) overflow the receiver's port; the switch drops unscheduled
/// packets above the threshold, never a pulled one. Expectations: every flow completes
/// with all its bytes; zero timeouts (every loss is found by a later packet's ACK or the
/// probe's ACK and resent once on a PULL); the only drops are `selective_drop`; each
/// dropped packet is resent exactly once (retransmitted bytes = drops x MSS); the receiver
/// link stays busy (the last flow within 3% of the link's serialization bound). Plain NDP
/// with trimming completes as well; both FCTs are reported.
#[test]
fn aeolus_incast_recovers_every_selective_drop_without_a_timeout() {
    let n = 16u32;
    let topo = format!(r#"{{"kind":"single_switch","hosts":{},"host_rate":"100Gbps"}}"#, n + 1);
    let start = Time::us(1);
    let flows: Vec<FlowSpec> = (0..n).map(|i| flow(i, n, 22 * MSS, start)).collect();
    let bound = start.0 + Rate::gbps(100).tx_time(Bytes(n as u64 * 22 * 9000)).0;
    let mut last_finish = Vec::new();
    for (tr, net) in [
        (r#"{"protocol":"ndp","aeolus":true}"#, r#"{"mtu":"9000B","buffer":"200KB","queue_policy":"selective_drop"}"#),
        (r#"{"protocol":"ndp"}"#, r#"{"mtu":"9000B","buffer":"200KB","queue_policy":"ndp_trim"}"#),
    ] {
        let sc = scenario(&topo, tr, net);
        let (out, rec) = run_flows(&sc, flows.clone());
        assert_clean(&out, &flows);
        for i in 0..n {
            assert_eq!(rec.borrow().unique_bytes(i), 22 * MSS);
        }
        let f = &out.flows;
        let last = *f.finish_ps.iter().max().unwrap();
        let fct: Vec<f64> = f.fct_ps.iter().map(|&x| x as f64 / 1e6).collect();
        let avg = fct.iter().sum::<f64>() / fct.len() as f64;
        eprintln!(
            "{tr}: drops {:?} trims {} timeouts {} retx {} avg fct {avg:.2} us last {:.2} us bound {:.2} us",
            out.counters.drops,
            out.counters.trims,
            f.timeouts.iter().sum::<u32>(),
            f.retx_bytes.iter().sum::<u64>(),
            (last - start.0) as f64 / 1e6,
            (bound - start.0) as f64 / 1e6
        );
        assert_eq!(f.timeouts.iter().sum::<u32>(), 0, "{tr}: no timeout");
        // Full-sized packets only: each loss (or trim) costs exactly one resent packet.
        let lost = total_drops(&out) + out.counters.trims;
        assert!(lost > 50, "{tr}: the first windows must overflow the port ({lost})");
        assert_eq!(f.retx_bytes.iter().sum::<u64>(), lost * MSS, "{tr}: each loss resent exactly once");
        assert!(last >= bound);
        assert!((last - start.0) as f64 <= 1.03 * (bound - start.0) as f64, "{tr}: last {last} bound {bound}");
        last_finish.push(last);
        if tr.contains("aeolus") {
            assert_eq!(out.counters.trims, 0);
            assert!(out.counters.drops.iter().all(|d| d.0 == "selective_drop"), "{:?}", out.counters.drops);
        } else {
            assert_eq!(total_drops(&out), 0, "trimming never drops here");
        }
    }
    // Same order of magnitude: NDP + Aeolus finishes the incast within 2% of NDP.
    let (a, b) = (last_finish[0] as f64, last_finish[1] as f64);
    assert!((a - b).abs() <= 0.02 * b, "aeolus {a} ndp {b}");
}

/// NDP + Aeolus on an idle network: nothing is dropped (an unscheduled packet finds the
/// queue below the threshold at every hop), nothing is resent, and the flow finishes in
/// its ideal FCT within two control-packet serializations (the probe rides behind the
/// first window, so pulled packets queue behind its 64 B at the sender; plus NDP's ACK
/// before the PULL).
#[test]
fn aeolus_uncontended_flow_finishes_in_ideal_fct() {
    let topo = r#"{"kind":"leaf_spine","leaves":3,"hosts_per_leaf":4,"spines":2,"host_rate":"100Gbps","core_rate":"100Gbps","host_delay":"0.5us","core_delay":"0.5us"}"#;
    let sc =
        scenario(topo, r#"{"protocol":"ndp","aeolus":true}"#, r#"{"mtu":"9000B","queue_policy":"selective_drop"}"#);
    for size in [1u64, MSS, 3 * MSS, 100 * MSS + 7, 1_000_003] {
        let flows = vec![flow(0, 11, size, Time::us(3))];
        let (out, _) = run_flows(&sc, flows.clone());
        assert_clean(&out, &flows);
        let (fct, ideal) = (out.flows.fct_ps[0], out.flows.ideal_fct_ps[0]);
        let slack = 2 * Rate::gbps(100).tx_time(Bytes(64)).0;
        assert!(fct >= ideal && fct <= ideal + slack, "size {size}: fct {fct} ideal {ideal}");
        assert_eq!((total_drops(&out), out.flows.retx_bytes[0], out.flows.timeouts[0]), (0, 0, 0));
    }
}
