//! Scenario tests of pHost (Gao et al., CoNEXT 2015): uncontended FCT against the ideal, a
//! 16-to-1 incast served in SRPT order, a leaf-spine Poisson run, determinism.

mod common;

use common::*;
use dcnsim_core::output::RunOutput;
use dcnsim_core::sim::Sim;
use dcnsim_core::units::{Bytes, Rate, Time};
use dcnsim_core::workload::FlowSpec;

const STAR: &str = r#"{"kind":"single_switch","hosts":17,"host_rate":"10Gbps","host_delay":"1us"}"#;
const LEAF_SPINE: &str = r#"{"kind":"leaf_spine","leaves":4,"hosts_per_leaf":4,"spines":2,"host_rate":"10Gbps","core_rate":"40Gbps","host_delay":"1us","core_delay":"1us"}"#;
const PHOST: &str = r#"{"protocol":"phost"}"#;

fn check(out: &RunOutput) {
    assert!(out.audit_errors.is_empty(), "{:?}", &out.audit_errors[..out.audit_errors.len().min(5)]);
    let f = &out.flows;
    let unfinished = (0..f.id.len()).filter(|&i| f.fct_ps[i] == u64::MAX).count();
    assert_eq!(unfinished, 0, "every flow completes");
    assert_eq!(out.counters.packets_left, 0, "no packet left in the network");
}

/// A flow alone in the network finishes at the ideal FCT plus exactly one control-packet
/// serialization at the sender: the RTS (64 B) leaves the NIC just before the first data
/// packet. Everything after is back to back at line rate: the free packets (one BDP), then
/// token-driven packets whose first token reaches the sender as its free burst ends (the
/// destination times it from the first free packet's arrival and the path's base RTT).
/// Checked below one BDP (all free), above it, at 1 MB, on one switch and across a
/// leaf-spine fabric (3 switches, mixed 10/40 Gbps).
#[test]
fn uncontended_flow_fct_is_ideal_plus_the_rts() {
    let rts = Rate::gbps(10).tx_time(Bytes(64)); // 51.2 ns
    for topo in [STAR, LEAF_SPINE] {
        let sc = scenario(topo, PHOST, "{}");
        let dst = if topo == STAR { 1 } else { 15 };
        for size in [1_000u64, 8_000, 20_000, 100_000, 1_000_000] {
            let (out, _) = run_flows(&sc, vec![flow(0, dst, size, Time::ZERO)]);
            check(&out);
            let f = &out.flows;
            assert_eq!(f.fct_ps[0], f.ideal_fct_ps[0] + rts.0, "size {size}: ideal {} ps", f.ideal_fct_ps[0]);
            assert_eq!((f.sent_bytes[0], f.retx_bytes[0], f.timeouts[0]), (size, 0, 0));
        }
    }
}

fn incast(sizes: &[u64]) -> RunOutput {
    incast_with(PHOST, sizes)
}

fn incast_with(transport: &str, sizes: &[u64]) -> RunOutput {
    let sc = scenario(STAR, transport, "{}");
    let flows = sizes.iter().enumerate().map(|(i, &s)| flow(i as u32, 16, s, Time::ZERO)).collect();
    let (out, _) = run_flows(&sc, flows);
    check(&out);
    out
}

/// 16 senders each start a 100 KB flow to one receiver at t = 0 (default 120 KB buffer). The
/// 16 free bursts (6 packets each, 144 KB) overflow the receiver's port; the lost free
/// packets come back through the retransmission rounds. The receiver then serves the flows
/// one at a time (SRPT, ties by flow id): completions are spaced by one flow's
/// token-driven part (63 packets, about 76 us at 10 Gbps) instead of finishing together as
/// under fair sharing, and the last one ends within 5% of the line-rate bound.
#[test]
fn incast_16_to_1_completes_one_flow_at_a_time() {
    let out = incast(&[100_000; 16]);
    let f = &out.flows;
    let mut fin: Vec<(u64, usize)> = (0..16).map(|i| (f.fct_ps[i], i)).collect();
    fin.sort();
    let order: Vec<usize> = fin.iter().map(|x| x.1).collect();
    assert_eq!(order, (0..16).collect::<Vec<_>>(), "equal sizes: served in flow-id order");
    let t = Rate::gbps(10).tx_time(Bytes(1500));
    let per_flow = t * 63;
    for w in fin.windows(2) {
        let gap = w[1].0 - w[0].0;
        assert!(
            gap > per_flow.mul_f64(0.7).0 && gap < per_flow.mul_f64(1.3).0,
            "completion gap {} us vs one flow's scheduled part {} us",
            gap as f64 / 1e6,
            per_flow.as_us_f64()
        );
    }
    // Line-rate bound: every byte (headers included) through the receiver's 10G link.
    let wire: u64 = 16 * (68 * 1500 + (100_000 - 68 * 1460) + 40);
    let bound = Rate::gbps(10).tx_time(Bytes(wire));
    let last = fin[15].0;
    eprintln!("makespan {} us, bound {} us, drops {:?}", last as f64 / 1e6, bound.as_us_f64(), out.counters.drops);
    assert!(last < bound.mul_f64(1.05).0);
    assert!(last > bound.0);
    let retx: u64 = f.retx_bytes.iter().sum();
    let drops: u64 = out.counters.drops.iter().map(|d| d.1).sum();
    assert!(retx >= drops * 1460, "every dropped packet was sent again");
}

/// Without the destination's reservation of announced free data (`reserve_free = false`)
/// the 16 free bursts stay queued behind line-rate tokens for the whole incast: every
/// token's data waits ~100 us, flows are downgraded in turn and retransmit spuriously, and
/// the flows finish together instead of one by one (the choice documented in phost/mod.rs).
#[test]
fn incast_without_free_reservation_loses_the_srpt_order() {
    let with = incast(&[100_000; 16]);
    let without = incast_with(r#"{"protocol":"phost","reserve_free":false}"#, &[100_000; 16]);
    let first = |o: &RunOutput| *o.flows.fct_ps.iter().min().unwrap();
    let last = |o: &RunOutput| *o.flows.fct_ps.iter().max().unwrap();
    let retx = |o: &RunOutput| o.flows.retx_bytes.iter().sum::<u64>();
    eprintln!(
        "with: first {} last {} retx {}; without: first {} last {} retx {}",
        first(&with) / 1_000_000,
        last(&with) / 1_000_000,
        retx(&with),
        first(&without) / 1_000_000,
        last(&without) / 1_000_000,
        retx(&without)
    );
    assert!(first(&with) < last(&with) / 4, "with the reservation the first flow is done early");
    assert!(first(&without) > last(&without) / 2, "without it every flow finishes late");
    assert!(retx(&without) > 2 * retx(&with));
}

/// Staggered sizes (60 KB + 8 KB x rank, ranks shuffled over the senders): with SRPT at the
/// receiver, smaller flows finish first: the completion order is the size order.
#[test]
fn incast_with_staggered_sizes_finishes_in_size_order() {
    let sizes: Vec<u64> = (0..16u64).map(|i| 60_000 + 8_000 * ((i * 7) % 16)).collect();
    let out = incast(&sizes);
    let f = &out.flows;
    let mut fin: Vec<(u64, u64)> = (0..16).map(|i| (f.fct_ps[i], sizes[i])).collect();
    fin.sort();
    let by_finish: Vec<u64> = fin.iter().map(|x| x.1).collect();
    let mut sorted = sizes.clone();
    sorted.sort();
    assert_eq!(by_finish, sorted);
}

fn poisson_flows() -> (dcnsim_core::Scenario, Vec<FlowSpec>) {
    let doc = format!(
        r#"{{"seed":11,"topology":{LEAF_SPINE},"transport":{PHOST},"network":{{}},
            "workload":{{"pattern":"poisson","cdf":"websearch","load":0.5,"flows":500}},
            "output":{{"audit":true}}}}"#
    );
    let sc = dcnsim_core::parse_scenario(&doc, dcnsim_core::Format::Json, std::path::Path::new("."))
        .unwrap_or_else(|e| panic!("{e}"));
    let flows = sc.flows();
    (sc, flows)
}

/// Web search, Poisson all-to-all at load 0.5 on a 16-host leaf-spine: every flow finishes,
/// the audit finds nothing, and the slowdowns are sane (>= 1; small flows mostly near 1).
#[test]
fn leaf_spine_poisson_load_half_finishes_every_flow() {
    let (sc, flows) = poisson_flows();
    let out = Sim::with_flows(&sc, flows).run(&mut |_| true);
    check(&out);
    let f = &out.flows;
    let n = f.id.len();
    let slow: Vec<f64> = (0..n).map(|i| f.fct_ps[i] as f64 / f.ideal_fct_ps[i] as f64).collect();
    assert!(slow.iter().all(|&s| s >= 1.0), "no flow beats the ideal");
    let mut small: Vec<f64> = (0..n).filter(|&i| f.size[i] <= 100_000).map(|i| slow[i]).collect();
    small.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = small[small.len() / 2];
    let retx: u64 = f.retx_bytes.iter().sum();
    let sent: u64 = f.sent_bytes.iter().sum();
    let drops: u64 = out.counters.drops.iter().map(|d| d.1).sum();
    let avg = slow.iter().sum::<f64>() / n as f64;
    eprintln!(
        "flows {n} small {} median small slowdown {median:.3} avg slowdown {avg:.2} retx {:.4} drops {drops} timeouts {}",
        small.len(),
        retx as f64 / sent as f64,
        f.timeouts.iter().sum::<u32>()
    );
    assert!(median < 1.5, "median small-flow slowdown {median}");
}

/// The same scenario twice gives identical per-flow results.
#[test]
fn runs_are_deterministic() {
    let (sc, flows) = poisson_flows();
    let flows: Vec<FlowSpec> = flows.into_iter().take(200).collect();
    let a = Sim::with_flows(&sc, flows.clone()).run(&mut |_| true);
    let b = Sim::with_flows(&sc, flows).run(&mut |_| true);
    check(&a);
    assert_eq!(a.flows.fct_ps, b.flows.fct_ps);
    assert_eq!(a.flows.sent_bytes, b.flows.sent_bytes);
    assert_eq!(a.flows.retx_bytes, b.flows.retx_bytes);
    assert_eq!(a.counters.events, b.counters.events);
}

/// pHost + Aeolus (free tokens = Aeolus' unscheduled packets) on the same 16-to-1 incast of
/// 100 KB flows, over a selective-dropping switch (6 KB threshold, 120 KB buffer). The free
/// bursts are cut down to what the port absorbs below the threshold: the switch drops only
/// unscheduled packets; the destination learns each loss from a later free packet or the
/// probe and gives it one token ahead of new data, so no retransmission round (timeout)
/// runs, each dropped packet is resent exactly once, and flows still finish one at a time
/// (SRPT: the flow that lost fewest free packets first) within 5% of the line-rate bound. Plain pHost on a drop-tail port needs retransmission
/// rounds for the same incast.
#[test]
fn aeolus_incast_resends_each_selective_drop_once_without_a_timeout() {
    let sc = scenario(STAR, r#"{"protocol":"phost","aeolus":true}"#, r#"{"queue_policy":"selective_drop"}"#);
    let flows: Vec<FlowSpec> = (0..16).map(|i| flow(i, 16, 100_000, Time::ZERO)).collect();
    let (out, _) = run_flows(&sc, flows);
    check(&out);
    let f = &out.flows;
    let drops: u64 = out.counters.drops.iter().map(|d| d.1).sum();
    let retx: u64 = f.retx_bytes.iter().sum();
    let timeouts: u32 = f.timeouts.iter().sum();
    let wire: u64 = 16 * (68 * 1500 + (100_000 - 68 * 1460) + 40);
    let bound = Rate::gbps(10).tx_time(Bytes(wire));
    let mut fin: Vec<(u64, usize)> = (0..16).map(|i| (f.fct_ps[i], i)).collect();
    fin.sort();
    let plain = incast(&[100_000; 16]);
    eprintln!(
        "aeolus: drops {:?} retx {retx} timeouts {timeouts} avg {:.1} us last {:.1} us (bound {:.1}); plain: drops {:?} timeouts {} avg {:.1} us last {:.1} us",
        out.counters.drops,
        f.fct_ps.iter().sum::<u64>() as f64 / 16e6,
        fin[15].0 as f64 / 1e6,
        bound.as_us_f64(),
        plain.counters.drops,
        plain.flows.timeouts.iter().sum::<u32>(),
        plain.flows.fct_ps.iter().sum::<u64>() as f64 / 16e6,
        *plain.flows.fct_ps.iter().max().unwrap() as f64 / 1e6,
    );
    assert!(drops > 20, "the free bursts must overflow the threshold ({drops})");
    assert!(out.counters.drops.iter().all(|d| d.0 == "selective_drop"), "{:?}", out.counters.drops);
    assert_eq!(timeouts, 0, "no retransmission round");
    assert_eq!(retx, drops * 1460, "every dropped (full) free packet resent exactly once");
    // One flow at a time (SRPT): completions spaced by about one flow's time on the link.
    let per_flow = bound / 16;
    for w in fin.windows(2) {
        let gap = w[1].0 - w[0].0;
        assert!(gap > per_flow.mul_f64(0.7).0 && gap < per_flow.mul_f64(1.3).0, "gap {gap} per flow {per_flow}");
    }
    assert!(fin[15].0 > bound.0 && fin[15].0 < bound.mul_f64(1.05).0);
    assert!(plain.flows.timeouts.iter().sum::<u32>() > 0, "plain pHost needs retransmission rounds here");
}
