//! Scenario tests of RPO (receiver-driven transport with opportunistic packets): conservation
//! and utilisation of a many-to-one bottleneck, and one flow growing into an idle link through
//! its opportunistic packets as the paper's model (§V, Eq. 1-3) predicts.

mod common;

use common::*;
use dcnsim_core::output::RunOutput;
use dcnsim_core::units::{Bytes, Rate, Time};

/// 9 hosts on one switch, 10 Gbps, 5 us per link: base RTT about 23 us, BDP about 19 packets.
const STAR: &str = r#"{"kind":"single_switch","hosts":9,"host_rate":"10Gbps","host_delay":"5us"}"#;
const NET: &str = r#"{"queue_policy":"rpo_crossmark","crossmark":{"adaptive":true}}"#;

/// Every flow finished, the audit is clean, nothing is left in the network, and the
/// receiver got exactly the bytes of each flow.
fn check(out: &RunOutput, rec: &Record, sizes: &[u64]) {
    assert!(out.audit_errors.is_empty(), "{:?}", &out.audit_errors[..out.audit_errors.len().min(5)]);
    assert_eq!(out.counters.packets_left, 0, "no packet left in the network");
    for (i, &s) in sizes.iter().enumerate() {
        assert_ne!(out.flows.fct_ps[i], u64::MAX, "flow {i} completes");
        assert_eq!(rec.unique_bytes(i as u32), s, "flow {i}: bytes delivered = size");
        assert!(out.flows.sent_bytes[i] >= s);
    }
}

/// 4 senders start 1 MB each towards one receiver at once. The first-RTT bursts (4 BDPs)
/// meet RPO's one-packet drop threshold for first-RTT packets; the flows that got through
/// are clocked by grants and the dropped packets are recovered by the per-grant timer.
/// Conservation holds and the receiver's link is busy: the last flow ends within 10% of
/// the line-rate time of the 4 MB (payload 1460 B per 1500 B packet).
#[test]
fn many_to_one_completes_with_conservation_and_high_utilisation() {
    let sc = scenario(STAR, r#"{"protocol":"rpo"}"#, NET);
    let sizes = [1_000_000u64; 4];
    let flows = sizes.iter().enumerate().map(|(i, &s)| flow(i as u32, 8, s, Time::ZERO)).collect();
    let (out, rec) = run_flows(&sc, flows);
    check(&out, &rec.borrow(), &sizes);
    let last = *out.flows.fct_ps.iter().max().unwrap();
    let total: u64 = sizes.iter().sum();
    let line = Rate::gbps(10).tx_time(Bytes(total.div_ceil(1460) * 1500));
    let util = line.0 as f64 / last as f64;
    eprintln!("utilisation {util:.3}, drops {:?}, retx {:?}", out.counters.drops, out.flows.retx_bytes);
    assert!(util > 0.9, "receiver link utilisation {util:.3} (last flow at {} us)", last / 1_000_000);
    // The receiver's re-sequencing peak over all its flows at once (port table, host 8's
    // port) is at least the largest single flow's and at most the flows' peaks added up;
    // the senders received nothing out of order.
    let p = &out.ports;
    let host_peak = |h: u32| (0..p.id.len()).find(|&i| p.node[i] == h).map(|i| p.host_reorder_max_bytes[i]).unwrap();
    let per_flow = &out.flows.reorder_max_bytes;
    let (hi, sum) = (*per_flow.iter().max().unwrap(), per_flow.iter().sum::<u64>());
    eprintln!("receiver reorder peak {} B, per-flow peaks {per_flow:?}", host_peak(8));
    assert!(hi > 0 && (hi..=sum).contains(&host_peak(8)), "host peak {} vs {hi}..{sum}", host_peak(8));
    assert!((0..4).all(|h| host_peak(h) == 0));
    assert!((0..p.id.len()).filter(|&i| p.node_kind[i] != "host").all(|i| p.host_reorder_max_bytes[i] == 0));
    // Drops happen only at the first-RTT threshold, never by overflow.
    assert!(out.counters.drops.iter().all(|(cause, _)| *cause == "rpo_normal_drop"), "{:?}", out.counters.drops);
}

/// One 500-packet flow whose first RTT carries only 2 packets (`bdp_bytes` = 3000 B) on an
/// idle path. Grants alone would keep 2 packets per round in flight (the paper's T_2 = S / R
/// = 250 rounds); every opportunistic arrival adds a packet, so the flow doubles its rate
/// each round until the link is full (Eq. 1: T_f = ceil(log2(C / R)) rounds) and then runs
/// at C: Eq. 3 gives T_1 = T_f + (S - R (2^T_f - 1)) / C rounds. Measured against Eq. 3 with
/// C = the packets one base RTT carries.
#[test]
fn one_flow_grows_into_the_idle_link_as_the_model_predicts() {
    let sc = scenario(STAR, r#"{"protocol":"rpo","bdp_bytes":"3000B"}"#, NET);
    let size = 500 * 1460;
    let (out, rec) = run_flows(&sc, vec![flow(0, 1, size, Time::ZERO)]);
    check(&out, &rec.borrow(), &[size]);
    let rtt = out.flows.base_rtt_ps[0] as f64;
    let c = Rate::gbps(10).bdp(Time(rtt as u64)).0 as f64 / 1500.0;
    let (r, s) = (2.0f64, 500.0f64);
    let t_f = (c / r).log2().ceil();
    let t_1 = t_f + (s - r * (2f64.powf(t_f) - 1.0)) / c;
    let fct_rounds = out.flows.fct_ps[0] as f64 / rtt;
    eprintln!("C = {c:.2} packets/round, T_1 = {t_1:.2} rounds, measured {fct_rounds:.2} rounds");
    assert!(fct_rounds < 1.25 * t_1, "FCT {fct_rounds:.1} rounds vs Eq. 3 T_1 = {t_1:.1}");
    assert!(fct_rounds > 0.9 * t_1, "faster than the model's full-rate bound?");
    assert!(out.flows.lp_sent_bytes[0] > 0 && out.flows.lp_rcvd_bytes[0] > 0);
    // Opportunistic packets come from the tail, so the receiver held at least one above the
    // in-order prefix, and never more than the flow.
    let held = out.flows.reorder_max_bytes[0];
    assert!((1460..size).contains(&held), "re-sequencing buffer peak {held} B");
}

/// The adaptive marking period t defaults to one RTT (the largest base RTT) under
/// `rpo_crossmark`; other policies keep the former 50 us, and their normalized scenario
/// does not list the new cross-marking fields at their defaults.
#[test]
fn crossmark_period_defaults_to_the_base_rtt_under_rpo_crossmark() {
    let sc = scenario(STAR, r#"{"protocol":"rpo"}"#, NET);
    assert_eq!(sc.queue.crossmark.period, Some(sc.net_info.max_base_rtt));
    assert_eq!(sc.queue.crossmark.mss, Bytes(1460));
    let plain = scenario(STAR, r#"{"protocol":"dctcp"}"#, "{}");
    assert_eq!(plain.queue.crossmark.period, Some(Time::us(50)));
    let json = plain.to_json();
    assert!(!json.contains("unscheduled_threshold") && !json.contains("count_packets"), "{json}");
    let given =
        scenario(STAR, r#"{"protocol":"rpo"}"#, r#"{"queue_policy":"rpo_crossmark","crossmark":{"period":"7us"}}"#);
    assert_eq!(given.queue.crossmark.period, Some(Time::us(7)));
}

/// RPO's simulation network (400 hosts, 40 Gbps, 200 Gbps spine, 384 KB buffers, base RTT
/// about 25 us) with 2,400 web-search flows at load 0.6, half of them ON/OFF: paused 100 us
/// of every 200 us, their grants held and answered when each pause ends. The bursts at each
/// pause's end lose normal packets at full receiver downlinks. One flow of this run (3.97 MB)
/// once never finished: a lost normal packet whose grant was answered by the grant's
/// opportunistic packet (resent as a normal packet) had no grant left to recover it, and
/// grants re-sent for delivered packets kept putting off the sender timeout (module doc of
/// `transport::receiver::rpo`). Every flow must finish well before the 30 ms limit:
/// arrivals end near 1.7 ms and the largest flow (30 MB) alone needs 6 ms.
#[test]
fn on_off_flows_with_deferred_grants_all_finish_in_a_loaded_leaf_spine() {
    let doc = r#"
        seed = 1
        [topology]
        kind = "leaf_spine"
        leaves = 10
        hosts_per_leaf = 40
        spines = 8
        host_rate = "40Gbps"
        core_rate = "200Gbps"
        host_delay = "2.95us"
        core_delay = "2.95us"
        [network]
        buffer = "384KB"
        priorities = 8
        queue_policy = "rpo_crossmark"
        crossmark = { adaptive = true }
        [transport]
        protocol = "rpo"
        [[workload]]
        pattern = "poisson"
        cdf = "websearch"
        load = 0.6
        flows = 2400
        [[pause]]
        fraction = 0.5
        off = "100us"
        on = "100us"
        [run]
        time_limit = "30ms"
    "#;
    let sc = dcnsim_core::parse_scenario(doc, dcnsim_core::Format::Toml, std::path::Path::new("."))
        .unwrap_or_else(|e| panic!("{e}"));
    let out = dcnsim_core::try_run(&sc, &mut |_| true).expect("within limits");
    assert!(out.audit_errors.is_empty(), "{:?}", &out.audit_errors[..out.audit_errors.len().min(5)]);
    let unfinished: Vec<u32> =
        (0..out.flows.id.len()).filter(|&i| out.flows.fct_ps[i] == u64::MAX).map(|i| out.flows.id[i]).collect();
    assert_eq!(unfinished, Vec::<u32>::new(), "every flow finishes");
    assert_eq!(out.counters.packets_left, 0, "no packet left in the network");
}
