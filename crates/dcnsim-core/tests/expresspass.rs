//! Scenario tests of ExpressPass (Cho et al., SIGCOMM 2017) and of the engine support it
//! needs: the credit shaper's wake-ups (`QueueDisc::next_ready`), symmetric (reverse-path)
//! routing of credits, uncontended FCT against the analytic pipeline, fairness and the
//! bounded data queue with 2 and 8 senders, an incast, byte conservation, determinism.

mod common;

use common::*;
use dcnsim_core::network::Network;
use dcnsim_core::output::RunOutput;
use dcnsim_core::packet::{FlowId, Packet, PacketFlags};
use dcnsim_core::rng::streams;
use dcnsim_core::scenario::Scenario;
use dcnsim_core::sim::{build_transport, Sim};
use dcnsim_core::transport::{Ctx, FlowStats, Transport};
use dcnsim_core::units::{Bytes, Rate, Time};
use dcnsim_core::workload::FlowSpec;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

const STAR: &str = r#"{"kind":"single_switch","hosts":17,"host_rate":"10Gbps","host_delay":"1us"}"#;
const LEAF_SPINE: &str = r#"{"kind":"leaf_spine","leaves":4,"hosts_per_leaf":4,"spines":2,"host_rate":"10Gbps","core_rate":"40Gbps","host_delay":"1us","core_delay":"1us"}"#;
const NET: &str = r#"{"queue_policy":"expresspass_credit"}"#;
const XP: &str = r#"{"protocol":"expresspass"}"#;

/// 64 B at 10 Gbps.
const C10: Time = Time(51_200);
/// 1500 B at 10 Gbps.
const S10: Time = Time(1_200_000);
/// (64 + 1500) B at 10 Gbps: the credit interval of a 10 Gbps port.
const I10: Time = Time(1_251_200);

fn check(out: &RunOutput) {
    assert!(out.audit_errors.is_empty(), "{:?}", &out.audit_errors[..out.audit_errors.len().min(5)]);
    let f = &out.flows;
    assert!(f.fct_ps.iter().all(|&x| x != u64::MAX), "every flow completes");
    assert_eq!(out.counters.packets_left, 0, "no packet left in the network");
    for (cause, n) in &out.counters.drops {
        assert_eq!(cause, "credit_drop", "only credits are ever dropped ({n} {cause})");
    }
    for i in 0..f.id.len() {
        assert_eq!(f.sent_bytes[i], f.size[i] + f.retx_bytes[i], "flow {i}: bytes sent = size + retransmitted");
    }
}

// ------------------------------------------------------------------ engine: shaper wake-ups

/// A transport that only emits `per_host` credits towards host 0 at each flow start, and
/// records when credits reach host 0.
struct CreditBurst {
    per_host: u32,
    arrivals: Rc<RefCell<Vec<Time>>>,
}

impl Transport for CreditBurst {
    fn name(&self) -> &'static str {
        "credit_burst"
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        for _ in 0..self.per_host {
            ctx.out.send(Packet {
                dst: 0,
                flow,
                size: 64,
                flags: PacketFlags(PacketFlags::CREDIT),
                ..Packet::default()
            });
        }
    }
    fn on_packet(&mut self, ctx: &mut Ctx, _pkt: &Packet) {
        self.arrivals.borrow_mut().push(ctx.now);
    }
    fn on_timer(&mut self, _ctx: &mut Ctx, _token: u64) {}
    fn flow_stats(&self, _flow: FlowId) -> FlowStats {
        FlowStats::default()
    }
}

/// Two hosts each hand 9 credits to their NIC at t = 0: each NIC lets them out one credit
/// interval I = (64 + 1500) B / 10 Gbps = 1.2512 us apart (the first at once, 8 in its
/// credit queue). At the switch port towards host 0 the two streams meet at twice the
/// credit share; that port holds only credits, so between releases it must sleep and be
/// woken by the engine at the next release time (`QueueDisc::next_ready`). Host 0 receives
/// the credits exactly I apart; the port drops exactly one: at the 9th pair the second
/// credit would wait 9 intervals (> 8 credits queued).
#[test]
fn credits_alone_leave_a_port_exactly_one_credit_interval_apart() {
    let sc = scenario(STAR, XP, NET);
    let arrivals = Rc::new(RefCell::new(vec![]));
    let t = CreditBurst { per_host: 9, arrivals: arrivals.clone() };
    let flows = vec![flow(1, 0, 1000, Time::ZERO), flow(2, 0, 1000, Time::ZERO)];
    let out = Sim::with_parts(&sc, flows, Box::new(t)).run(&mut |_| true);
    let a = arrivals.borrow();
    assert_eq!(a.len(), 17);
    assert_eq!(out.counters.drops, vec![("credit_drop".to_string(), 1)]);
    // The first: host NIC (64 B) + 1 us + switch port (64 B) + 1 us.
    assert_eq!(a[0], C10 * 2 + Time::us(2));
    for (k, w) in a.windows(2).enumerate() {
        assert_eq!(w[1] - w[0], I10, "credits {k} and {} at host 0", k + 1);
    }
}

// ---------------------------------------------------------------- symmetric routing

/// Every credit retraces its flow's data path backwards, link by link, on a fat tree (many
/// equal-cost paths): the egress ports credits of flow f cross are exactly the reverse
/// directions of the ports its data crosses. Observed through the credit limiter's drop
/// accounting would be indirect, so this checks the routing function the runner uses.
#[test]
fn credits_take_the_reverse_of_the_data_path() {
    let sc = scenario(r#"{"kind":"fat_tree","k":4,"host_rate":"10Gbps"}"#, XP, NET);
    let net =
        Network::build(&sc.topology, &sc.queue, sc.rng(streams::ROUTING).next_u64(), sc.rng(streams::QUEUE).next_u64());
    for f in 0..100u32 {
        let (src, dst) = (f % 16, (5 * f + 3) % 16);
        if src == dst {
            continue;
        }
        let data = net.flow_path(f, src, dst);
        let credit = Packet {
            src: dst,
            dst: src,
            flow: f,
            flags: PacketFlags(PacketFlags::CREDIT | PacketFlags::REVERSE_PATH),
            ..Packet::default()
        };
        let mut at = dst;
        let mut path = vec![];
        while at != src {
            let p = net.route(at, &credit);
            path.push(p);
            at = net.ports[p as usize].peer;
        }
        let want: Vec<u32> = data.iter().rev().map(|&p| Network::reverse_port(p)).collect();
        assert_eq!(path, want, "flow {f}");
    }
}

// ------------------------------------------------------------------- uncontended FCT

/// Control-packet one-way time over the star (2 hops) and the leaf-spine (4 hops: 10, 40,
/// 40, 10 Gbps), 1 us per link.
fn ctrl_one_way(topo: &str) -> Time {
    if topo == STAR {
        C10 * 2 + Time::us(2)
    } else {
        let c40 = Rate::gbps(40).tx_time(Bytes(64));
        C10 * 2 + c40 * 2 + Time::us(4)
    }
}

/// A single-packet flow alone: the CREDIT_REQUEST goes to the receiver, the first credit
/// (sent at once) comes back, the packet follows. FCT = ideal FCT + one control-packet
/// round trip (request one way + credit the other way), exactly, on one switch and on a
/// leaf-spine fabric. Holds for the default configuration (jitter does not delay the first
/// credit); the credit size spread is off so that the credit's serialization is 64 B.
#[test]
fn single_packet_flow_takes_ideal_plus_the_credit_request_round_trip() {
    for topo in [STAR, LEAF_SPINE] {
        let sc = scenario(topo, r#"{"protocol":"expresspass","credit_size_spread":"0B"}"#, NET);
        let dst = if topo == STAR { 1 } else { 15 };
        for size in [100u64, 1000, 1460] {
            let (out, _) = run_flows(&sc, vec![flow(0, dst, size, Time::ZERO)]);
            check(&out);
            let f = &out.flows;
            let rtt = ctrl_one_way(topo) * 2;
            assert_eq!(f.fct_ps[0], f.ideal_fct_ps[0] + rtt.0, "size {size}: ideal {}", f.ideal_fct_ps[0]);
        }
    }
}

/// Starting at max_rate (`alpha = 1`, no jitter, fixed credit size), credits leave the
/// receiver one credit interval I = 1.2512 us apart and each releases one packet: packet j
/// leaves the sender at T + j I, T = the control round trip 4 x 51.2 ns + 4 us. On one
/// switch a packet then needs ser(size) + 1 us per hop and never waits (I > 1.2 us), except
/// that a short last packet may catch up with the previous one at the switch. So, with N
/// packets, the last of s bytes on the wire and S = ser(1500):
///   FCT = T + max((N-1) I + ser(s) + d, (N-2) I + 2 S + d) + ser(s) + d.
/// The transfer runs at the credit-limited data rate MTU / (credit + MTU) of the link
/// (95.9%), so FCT - ideal grows by ser(64 B) per packet: that is the credit share. Exact.
#[test]
fn flow_at_max_credit_rate_follows_the_credit_clock_exactly() {
    let sc = scenario(STAR, r#"{"protocol":"expresspass","alpha":1,"jitter":0,"credit_size_spread":"0B"}"#, NET);
    let d = Time::us(1);
    let t = C10 * 4 + d * 4;
    for size in [1460u64 * 10, 100_000, 1_000_000] {
        let (out, _) = run_flows(&sc, vec![flow(0, 1, size, Time::ZERO)]);
        check(&out);
        let n = size.div_ceil(1460);
        let s = Rate::gbps(10).tx_time(Bytes(size - (n - 1) * 1460 + 40));
        let last = (I10 * (n - 1) + s + d).max(I10 * (n - 2) + S10 * 2 + d);
        let want = t + last + s + d;
        let f = &out.flows;
        assert_eq!(Time(f.fct_ps[0]), want, "size {size}");
        let extra = Time(f.fct_ps[0] - f.ideal_fct_ps[0]);
        eprintln!(
            "size {size}: FCT {} us, ideal {} us, extra {} us",
            want.as_us_f64(),
            f.ideal_fct_ps[0] as f64 / 1e6,
            extra.as_us_f64()
        );
        assert!(extra >= t && extra <= t + C10 * n, "ideal + control RTT + at most ser(credit) per packet");
    }
}

/// With the default start (alpha = 1/16) a long flow ramps up over a few update periods;
/// the cost is bounded: a 1 MB flow alone finishes within 12% of its ideal FCT, and no
/// faster than the credit-limited data rate allows (1564/1500 of the ideal).
#[test]
fn default_start_ramps_up_within_a_few_rtts() {
    let sc = scenario(STAR, XP, NET);
    let (out, _) = run_flows(&sc, vec![flow(0, 1, 1_000_000, Time::ZERO)]);
    check(&out);
    let f = &out.flows;
    let slowdown = f.fct_ps[0] as f64 / f.ideal_fct_ps[0] as f64;
    eprintln!(
        "1 MB alone, default: FCT {} us, ideal {} us, slowdown {slowdown:.3}",
        f.fct_ps[0] / 1_000_000,
        f.ideal_fct_ps[0] / 1_000_000
    );
    assert!(slowdown > 1564.0 / 1500.0 && slowdown < 1.12, "{slowdown}");
}

// --------------------------------------------------------- fairness and bounded queue

/// Records, per data packet, when the sender handed it to its NIC and when it arrived.
#[derive(Default)]
struct Timing {
    sent: BTreeMap<(FlowId, u64), Time>,
    /// (arrival, flow, seq, payload, one-way delay)
    arrived: Vec<(Time, FlowId, u64, u32, Time)>,
}

struct Timed {
    inner: Box<dyn Transport>,
    rec: Rc<RefCell<Timing>>,
}

impl Timed {
    fn note_sends(&self, ctx: &Ctx) {
        let mut r = self.rec.borrow_mut();
        for p in ctx.out.sends.iter().filter(|p| p.is_data()) {
            r.sent.insert((p.flow, p.seq), ctx.now);
        }
    }
}

impl Transport for Timed {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.start_flow(ctx, flow);
        self.note_sends(ctx);
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if pkt.is_data() {
            let mut r = self.rec.borrow_mut();
            let sent = r.sent.get(&(pkt.flow, pkt.seq)).copied().unwrap_or(ctx.now);
            r.arrived.push((ctx.now, pkt.flow, pkt.seq, pkt.payload, ctx.now - sent));
        }
        self.inner.on_packet(ctx, pkt);
        self.note_sends(ctx);
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.inner.on_timer(ctx, token);
        self.note_sends(ctx);
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.inner.flow_stats(flow)
    }
}

fn run_timed(sc: &Scenario, flows: Vec<FlowSpec>) -> (RunOutput, Rc<RefCell<Timing>>) {
    let rec = Rc::new(RefCell::new(Timing::default()));
    let t = Timed { inner: build_transport(sc), rec: rec.clone() };
    (Sim::with_parts(sc, flows, Box::new(t)).run(&mut |_| true), rec)
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    s * s / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
}

/// n senders each start a 3 MB flow to one receiver at t = 0 (star, 10 Gbps, 1 us links,
/// default ExpressPass). While all are active (from 200 us to 90% of the first FCT):
/// - fair shares: Jain's index of the bytes each flow delivered >= 0.95;
/// - the link is used: aggregate payload >= 90% of the credit-limited maximum
///   10 Gbps x 1500/1564 x 1460/1500 = 9.335 Gbps;
/// - the data queue stays bounded (ExpressPass' delay bound): no data packet spends more
///   than 2 MTU serializations (2.4 us) beyond its unloaded one-way time of 2 x ser + 2 us,
///   i.e. at most two full packets ever wait ahead of one at the switch;
/// - no data packet is dropped (only credits are), no retransmission, every byte arrives.
fn fair_share(n: u32) {
    let sc = scenario(STAR, XP, NET);
    let size = 3_000_000;
    let flows = (0..n).map(|i| flow(i + 1, 0, size, Time::ZERO)).collect();
    let (out, rec) = run_timed(&sc, flows);
    check(&out);
    let f = &out.flows;
    assert!(f.retx_bytes.iter().all(|&r| r == 0));
    let r = rec.borrow();
    let first = Time(*f.fct_ps.iter().min().unwrap());
    let (t0, t1) = (Time::us(200), first.mul_f64(0.9));
    let bytes: Vec<f64> = (0..n)
        .map(|i| r.arrived.iter().filter(|a| a.1 == i && a.0 >= t0 && a.0 < t1).map(|a| a.3 as f64).sum())
        .collect();
    let j = jain(&bytes);
    let gbps = bytes.iter().sum::<f64>() * 8.0 / (t1 - t0).as_secs_f64() / 1e9;
    let max_payload_gbps = 10.0 * 1500.0 / 1564.0 * 1460.0 / 1500.0;
    let max_wait = r
        .arrived
        .iter()
        .map(|a| {
            let ser = Rate::gbps(10).tx_time(Bytes(a.3 as u64 + 40));
            a.4 - (ser * 2 + Time::us(2))
        })
        .max()
        .unwrap();
    // Fairness over shorter windows (reported, not asserted: the shares oscillate).
    let win = Time::us(500);
    let mut w_jain = vec![];
    let mut a = t0;
    while a + win <= t1 {
        let b: Vec<f64> = (0..n)
            .map(|i| r.arrived.iter().filter(|x| x.1 == i && x.0 >= a && x.0 < a + win).map(|x| x.3 as f64).sum())
            .collect();
        w_jain.push(jain(&b));
        a += win;
    }
    let w_min = w_jain.iter().cloned().fold(1.0, f64::min);
    let w_mean = w_jain.iter().sum::<f64>() / w_jain.len() as f64;
    eprintln!("{n} flows: Jain over 500 us windows: mean {w_mean:.3}, min {w_min:.3} ({} windows)", w_jain.len());
    let credit_drops: u64 = out.counters.drops.iter().map(|d| d.1).sum();
    eprintln!(
        "{n} flows: Jain {j:.4}, payload {gbps:.3} Gbps ({:.1}% of {max_payload_gbps:.3}), max data wait {:.3} us ({:.2} MTU), credit drops {credit_drops}, FCTs {:?} us",
        100.0 * gbps / max_payload_gbps,
        max_wait.as_us_f64(),
        max_wait.0 as f64 / S10.0 as f64,
        f.fct_ps.iter().map(|x| x / 1_000_000).collect::<Vec<_>>()
    );
    assert!(j >= 0.95, "Jain {j}: {bytes:?}");
    assert!(gbps >= 0.9 * max_payload_gbps, "{gbps} Gbps");
    assert!(max_wait <= S10 * 2, "data waited {max_wait}");
    assert!(credit_drops > 0, "the receiver's NIC limiter dropped the excess credits");
}

#[test]
fn two_flows_share_a_receiver_fairly_with_a_bounded_queue() {
    fair_share(2);
}

#[test]
fn eight_flows_share_a_receiver_fairly_with_a_bounded_queue() {
    fair_share(8);
}

/// 16-to-1 incast of 64 KB flows (the flow size of Aeolus Fig. 20) at t = 0 with a small
/// 30 KB switch buffer (20 packets): the credits of all 16 flows meet at the receiver's NIC
/// limiter, which lets one through per credit interval, so the data converging on the
/// receiver's link never exceeds it. No data packet is dropped, the data queue stays within
/// 2 packets, and the incast ends within 25% of one packet per credit interval for all its
/// packets (the request round trip and the rate ramp-up are the rest).
#[test]
fn incast_drops_no_data_even_with_a_small_buffer() {
    let sc = scenario(STAR, XP, r#"{"queue_policy":"expresspass_credit","buffer":"30KB"}"#);
    let flows = (0..16).map(|i| flow(i + 1, 0, 64_000, Time::ZERO)).collect();
    let (out, rec) = run_timed(&sc, flows);
    check(&out);
    let r = rec.borrow();
    let max_wait = r
        .arrived
        .iter()
        .map(|a| a.4 - (Rate::gbps(10).tx_time(Bytes(a.3 as u64 + 40)) * 2 + Time::us(2)))
        .max()
        .unwrap();
    // Every byte through the receiver's link at the credit-limited rate (one packet per
    // credit interval), plus the request round trip.
    let pkts = 16 * 64_000u64.div_ceil(1460);
    let bound = I10 * pkts;
    let last = Time(*out.flows.fct_ps.iter().max().unwrap());
    eprintln!(
        "incast: last FCT {} us, bound {} us, max data wait {} us",
        last.as_us_f64(),
        bound.as_us_f64(),
        max_wait.as_us_f64()
    );
    assert!(max_wait <= S10 * 2, "data waited {max_wait}");
    assert!(last > bound, "cannot beat one packet per credit interval");
    assert!(last < bound.mul_f64(1.25), "{last} vs {bound}");
}

// ---------------------------------------------------------------- multi-path fabric

/// Four flows from leaf 0 to leaf 1 of a leaf-spine with 2 spines and 10 Gbps core links:
/// per-flow ECMP puts them on the spines unevenly, so core links are the bottlenecks. With
/// symmetric routing the credits of the flows sharing a core link are throttled together at
/// that link's reverse port, and the data queue stays bounded (no drops, at most a few
/// packets). With `symmetric_routing = false` the credits are hashed independently of the
/// data; some core link then carries more data than its reverse carried credits, and its
/// queue builds up (here past 50 packets, with buffer overflow) — the gap that symmetric
/// routing closes.
#[test]
fn symmetric_routing_is_what_bounds_the_core_queue() {
    let topo = r#"{"kind":"leaf_spine","leaves":2,"hosts_per_leaf":4,"spines":2,"host_rate":"10Gbps","core_rate":"10Gbps","host_delay":"1us","core_delay":"1us"}"#;
    let run = |sym: bool| {
        let tr = format!(r#"{{"protocol":"expresspass","symmetric_routing":{sym}}}"#);
        let sc = scenario_full(topo, &tr, NET, "{}", r#"{"audit":true,"sample_interval":"500ns"}"#);
        let flows = (0..4).map(|i| flow(i, 4 + i, 2_000_000, Time::ZERO)).collect();
        let (out, _) = run_flows(&sc, flows);
        let q = &out.queue_samples;
        let max_q = (0..q.t_ps.len()).filter(|&i| q.prio[i] == 0).map(|i| q.bytes[i]).max().unwrap_or(0);
        (out, max_q)
    };
    let (sym, sym_q) = run(true);
    check(&sym);
    let (asym, asym_q) = run(false);
    let data_drops = |o: &RunOutput| o.counters.drops.iter().filter(|d| d.0 != "credit_drop").map(|d| d.1).sum::<u64>();
    eprintln!(
        "symmetric: max switch queue {sym_q} B, drops {:?}; independent hashing: max queue {asym_q} B, drops {:?}",
        sym.counters.drops, asym.counters.drops
    );
    assert!(sym_q <= 3 * 1564, "symmetric: {sym_q} B");
    assert_eq!(data_drops(&sym), 0);
    assert!(asym_q > 50 * 1500 && data_drops(&asym) > 0, "independent hashing: {asym_q} B");
    // The lost data is recovered (NACK on CREDIT_STOP, retransmission on later credits).
    assert!(asym.audit_errors.is_empty() && asym.flows.fct_ps.iter().all(|&x| x != u64::MAX));
    let retx: u64 = asym.flows.retx_bytes.iter().sum();
    assert!(retx >= data_drops(&asym) * 1460, "every lost packet was sent again ({retx} B)");
}

// ------------------------------------------------------------------- determinism

/// Web search, Poisson all-to-all at load 0.4 on a 16-host leaf-spine: every flow finishes,
/// only credits are dropped, and the same scenario twice gives identical results.
#[test]
fn leaf_spine_poisson_runs_are_complete_and_deterministic() {
    let doc = format!(
        r#"{{"seed":5,"topology":{LEAF_SPINE},"transport":{XP},"network":{NET},
            "workload":{{"pattern":"poisson","cdf":"websearch","load":0.4,"flows":300}},
            "output":{{"audit":true}}}}"#
    );
    let sc = dcnsim_core::parse_scenario(&doc, dcnsim_core::Format::Json, std::path::Path::new("."))
        .unwrap_or_else(|e| panic!("{e}"));
    let a = Sim::new(&sc).run(&mut |_| true);
    check(&a);
    let b = Sim::new(&sc).run(&mut |_| true);
    assert_eq!(a.flows.fct_ps, b.flows.fct_ps);
    assert_eq!(a.counters.events, b.counters.events);
    let f = &a.flows;
    let n = f.id.len();
    let mut slow: Vec<f64> = (0..n).map(|i| f.fct_ps[i] as f64 / f.ideal_fct_ps[i] as f64).collect();
    assert!(slow.iter().all(|&s| s >= 1.0));
    slow.sort_by(|x, y| x.partial_cmp(y).unwrap());
    eprintln!(
        "poisson: {n} flows, median slowdown {:.2}, p99 {:.2}, drops {:?}",
        slow[n / 2],
        slow[n * 99 / 100],
        a.counters.drops
    );
    // The transport's random stream (jitter, credit sizes) comes from the seed it is given.
    let other =
        dcnsim_core::transport::registry::build_seeded(&sc.protocol, &sc.transport_cfg, &sc.net_info, 12345).unwrap();
    let c = Sim::with_parts(&sc, sc.flows(), other).run(&mut |_| true);
    check(&c);
    assert_ne!(a.flows.fct_ps, c.flows.fct_ps, "another transport seed, another run");
}

/// The documented example (docs/examples/expresspass.toml) parses, and its first 300 flows
/// (100 Gbps leaf-spine, web server workload at load 0.4) all complete with only credits
/// dropped.
#[test]
fn the_documented_example_runs() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/expresspass.toml");
    let text = std::fs::read_to_string(&path).expect("example file");
    let sc = dcnsim_core::parse_scenario(&text, dcnsim_core::Format::Toml, path.parent().unwrap())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sc.protocol, "expresspass");
    let flows: Vec<FlowSpec> = sc.flows().into_iter().take(300).collect();
    let out = Sim::with_flows(&sc, flows).run(&mut |_| true);
    assert!(out.flows.fct_ps.iter().all(|&x| x != u64::MAX));
    assert!(out.counters.drops.iter().all(|d| d.0 == "credit_drop"), "{:?}", out.counters.drops);
    assert_eq!(out.counters.packets_left, 0);
}
