//! State-machine tests of PASE: each names the state and the event it drives.

use super::*;
use crate::packet::NodeId;
use crate::transport::{Actions, PathHop};
use crate::units::Bytes;

const MSS: u64 = 1460;

fn flow(id: FlowId, src: NodeId, dst: NodeId, size: u64) -> FlowInfo {
    FlowInfo {
        id,
        src,
        dst,
        size: Bytes(size),
        start: Time::ZERO,
        base_rtt: Time::us(12),
        path_rate: Rate::gbps(10),
        host_rate: Rate::gbps(10),
        deadline: None,
        background: false,
    }
}

struct H {
    t: Pase,
    flows: Vec<FlowInfo>,
}

impl H {
    fn new(cfg: serde_json::Value, flows: Vec<FlowInfo>) -> H {
        let net = NetInfo::for_tests(1500, Time::us(12), Rate::gbps(10));
        H { t: Pase::from_config(&cfg, &net).unwrap(), flows }
    }
    fn call(&mut self, now: Time, host: NodeId, f: impl FnOnce(&mut Pase, &mut Ctx)) -> Actions {
        let mut out = Actions::new();
        let mut ctx = Ctx { now, host, flows: &self.flows, out: &mut out };
        f(&mut self.t, &mut ctx);
        out
    }
    fn start(&mut self, f: FlowId) -> Actions {
        let host = self.flows[f as usize].src;
        self.call(Time::ZERO, host, |t, c| t.start_flow(c, f))
    }
    fn deliver(&mut self, now: Time, p: &Packet) -> Actions {
        self.call(now, p.dst, |t, c| t.on_packet(c, p))
    }
    fn deliver_all(&mut self, now: Time, ps: &[Packet]) -> Vec<Packet> {
        ps.iter().flat_map(|p| self.deliver(now, p).sends).collect()
    }
    fn fire(&mut self, now: Time, host: NodeId, tok: u64) -> Actions {
        self.call(now, host, |t, c| t.on_timer(c, tok))
    }
    fn snd(&self, f: FlowId) -> &PaseSender {
        self.t.sender(f).unwrap()
    }
}

fn data(ps: &[Packet]) -> Vec<Packet> {
    ps.iter().filter(|p| p.kind == KIND_DATA).copied().collect()
}
fn of_kind(ps: &[Packet], kind: u8) -> Vec<Packet> {
    ps.iter().filter(|p| p.kind == kind).copied().collect()
}
/// The latest timer of `kind` in `a`.
fn timer(a: &Actions, kind: u8) -> (Time, u64) {
    *a.timers.iter().rev().find(|t| untoken(t.1).1 == kind).expect("timer armed")
}

#[test]
fn start_in_top_queue_sends_rref_times_rtt_and_asks_the_destination() {
    let mut h = H::new(serde_json::Value::Null, vec![flow(0, 0, 1, 100 * MSS)]);
    let a = h.start(0);
    // Alone on its uplink: top queue, R_ref = demand = min(10 Gbps, 146 000 B x 8 / 12 us)
    // = 10 Gbps; cwnd = 10 Gbps x 12 us / (8 x 1500 B) = 10 packets.
    let d = data(&a.sends);
    assert_eq!(d.len(), 10);
    assert!(d.iter().all(|p| p.prio == 0 && p.ecn == Ecn::Ect));
    let req = of_kind(&a.sends, KIND_ARB_REQ);
    assert_eq!(req.len(), 1);
    assert_eq!((req[0].aux, req[0].aux2, req[0].ack, req[0].prio), (100 * MSS, 10_000_000, u64::MAX, 0));
    assert_eq!(timer(&a, TIMER_ARB).0, Time::us(12), "refresh every base RTT");
    assert_eq!(timer(&a, TIMER_RTO).0, Time::ms(10), "top-queue timeout");
    assert_eq!(h.t.uplink(0).unwrap().requests(), 1);
}

/// Two flows into host 2 from different hosts: each source's uplink puts its flow on top,
/// the destination's downlink arbitrator does not.
fn two_into_one() -> (H, Vec<Packet>, Vec<Packet>) {
    let mut h = H::new(serde_json::Value::Null, vec![flow(0, 0, 2, 100 * MSS), flow(1, 1, 2, 200 * MSS)]);
    let a0 = h.start(0).sends;
    let a1 = h.start(1).sends;
    (h, a0, a1)
}

#[test]
fn destination_arbitration_demotes_the_larger_flow_to_an_intermediate_queue() {
    let (mut h, a0, a1) = two_into_one();
    let r0 = h.deliver_all(Time::us(3), &of_kind(&a0, KIND_ARB_REQ));
    assert_eq!((r0[0].kind, r0[0].rank, r0[0].aux2), (KIND_ARB_RESP, 0, 10_000_000));
    // Flow 1 ranks below flow 0 (larger): ADH = 10 Gbps = C -> queue 1, base rate one
    // MTU per RTT = 1500 x 8 / 12 us = 1 Gbps.
    let r1 = h.deliver_all(Time::us(3), &of_kind(&a1, KIND_ARB_REQ));
    assert_eq!((r1[0].rank, r1[0].aux2), (1, 1_000_000));
    assert_eq!(h.t.downlink(2).unwrap().requests(), 2);
    let sent = h.deliver_all(Time::us(6), &r1);
    assert!(sent.is_empty(), "10 packets already out, the new window is 1");
    let s = h.snd(1);
    assert_eq!((s.queue, s.cwnd, s.inter, s.rref), (1, 1.0, true, Rate::gbps(1)));
    // An unmarked ACK in an intermediate queue: cwnd = 1 + 1/1 = 2 (DCTCP increase); the
    // first window ends at once and alpha = 15/16 x 1 + 1/16 x 0 = 0.9375.
    let acks = h.deliver_all(Time::us(8), &data(&a1)[..1]);
    h.deliver_all(Time::us(10), &acks);
    assert_eq!(h.snd(1).cwnd, 2.0);
    assert_eq!(h.snd(1).alpha, 0.9375);
    // A marked ACK: cwnd = 2 x (1 - 0.9375 / 2) = 1.0625.
    let mut ce = data(&a1)[1];
    ce.ecn = Ecn::Ce;
    let acks = h.deliver_all(Time::us(11), &[ce]);
    assert_eq!(acks[0].aux2 & ACK_ECE, ACK_ECE);
    h.deliver_all(Time::us(12), &acks);
    assert_eq!(h.snd(1).cwnd, 1.0625);
}

#[test]
fn reordering_guard_holds_a_promoted_flow_until_its_flight_is_acknowledged() {
    let (mut h, a0, a1) = two_into_one();
    h.deliver_all(Time::us(3), &of_kind(&a0, KIND_ARB_REQ));
    let r1 = h.deliver_all(Time::us(3), &of_kind(&a1, KIND_ARB_REQ));
    h.deliver_all(Time::us(6), &r1);
    // Flow 1 in queue 1 with 10 packets out. Flow 0 runs to its end.
    let acks0 = h.deliver_all(Time::us(7), &data(&a0));
    let more0 = h.deliver_all(Time::us(8), &acks0);
    let rest: Vec<Packet> = data(&more0);
    let mut pending = rest;
    let mut t = 9;
    while !pending.is_empty() {
        let acks = h.deliver_all(Time::us(t), &pending);
        pending = data(&h.deliver_all(Time::us(t + 1), &acks));
        t += 2;
    }
    // Flow 0 is done; the destination forgot it and holds flow 1 alone.
    assert!(h.t.sender(0).is_none());
    assert_eq!(h.t.downlink(2).unwrap().len(), 1);
    // Flow 1 refreshes: the destination now puts it on top.
    // Its refresh timer (generation 1, armed at its start) fires.
    let refresh = h.fire(Time::us(t), 1, token(1, TIMER_ARB, 1));
    let r = h.deliver_all(Time::us(t + 1), &of_kind(&refresh.sends, KIND_ARB_REQ));
    assert_eq!(r[0].rank, 0);
    let sent = h.deliver_all(Time::us(t + 2), &r);
    // Its first ten packets are still unacknowledged: nothing new is sent.
    assert!(sent.is_empty());
    assert_eq!(h.snd(1).pending_up, Some(0));
    assert_eq!(h.snd(1).queue, 1);
    // The flight drains: then the flow moves up and sends a full R_ref x RTT window.
    let old: Vec<Packet> = data(&a1);
    let acks = h.deliver_all(Time::us(t + 3), &old);
    let sent = data(&h.deliver_all(Time::us(t + 4), &acks));
    assert_eq!(h.snd(1).queue, 0);
    assert!(h.snd(1).pending_up.is_none());
    assert!(!sent.is_empty() && sent.iter().all(|p| p.prio == 0));
}

#[test]
fn bottom_queue_probe_reveals_a_loss_and_the_packet_is_resent() {
    // 3 queues: 0 top, 1 bottom for flows, 2 background.
    let cfg = serde_json::json!({"num_que": 3});
    let mut h = H::new(cfg, vec![flow(0, 0, 2, 100 * MSS), flow(1, 1, 2, 200 * MSS)]);
    let a0 = h.start(0).sends;
    let a1 = h.start(1).sends;
    h.deliver_all(Time::us(3), &of_kind(&a0, KIND_ARB_REQ));
    let r1 = h.deliver_all(Time::us(3), &of_kind(&a1, KIND_ARB_REQ));
    assert_eq!(r1[0].rank, 1, "the bottom queue");
    let resp = h.deliver(Time::us(6), &r1[0]);
    assert_eq!(h.snd(1).cwnd, 1.0);
    // Every packet of its first window is lost. A probe timer runs one RTT (12 us).
    let (at, tok) = timer(&resp, TIMER_PROBE);
    assert_eq!(at, Time::us(18));
    let pr = h.fire(at, 1, tok);
    let probe = of_kind(&pr.sends, KIND_PROBE);
    assert_eq!(probe.len(), 1);
    assert_eq!((probe[0].prio, probe[0].seq, probe[0].size), (1, 10 * MSS, 64));
    let pack = h.deliver_all(Time::us(20), &probe);
    assert_eq!((pack[0].kind, pack[0].ack), (KIND_PROBE_ACK, 0));
    // The probe arrived, the data sent before it did not: resend from packet 0, one packet.
    let resent = data(&h.deliver_all(Time::us(22), &pack));
    assert_eq!(resent.iter().map(|p| p.seq / MSS).collect::<Vec<_>>(), vec![0]);
    assert_eq!(resent[0].prio, 1);
    assert_eq!(h.snd(1).stats.retx_bytes, MSS);
}

#[test]
fn lower_queue_timeout_sends_a_probe_and_backs_off() {
    let cfg = serde_json::json!({"probing": false});
    let mut h = H::new(cfg, vec![flow(0, 0, 2, 100 * MSS), flow(1, 1, 2, 200 * MSS)]);
    let a0 = h.start(0).sends;
    let a1 = h.start(1).sends;
    h.deliver_all(Time::us(3), &of_kind(&a0, KIND_ARB_REQ));
    let r1 = h.deliver_all(Time::us(3), &of_kind(&a1, KIND_ARB_REQ));
    let resp = h.deliver(Time::us(6), &r1[0]);
    assert!(resp.timers.iter().all(|t| untoken(t.1).1 != TIMER_PROBE), "probing off");
    // The RTO armed at the start (top queue, 10 ms) fires while the flow is in queue 1:
    // a probe instead of data (generation 1: the only arming), and the next timeout is
    // 200 ms x 2 later.
    let t = h.fire(Time::ms(10), 1, token(1, TIMER_RTO, 1));
    assert_eq!(of_kind(&t.sends, KIND_PROBE).len(), 1);
    assert!(data(&t.sends).is_empty());
    assert_eq!(timer(&t, TIMER_RTO).0, Time::ms(10) + Time::ms(400));
    assert_eq!(h.snd(1).stats.timeouts, 1);
}

#[test]
fn top_queue_timeout_resends_from_the_first_unacknowledged_packet() {
    let mut h = H::new(serde_json::Value::Null, vec![flow(0, 0, 1, 20 * MSS)]);
    let a = h.start(0);
    let d = data(&a.sends);
    // Packets 1..9 delivered, packet 0 lost.
    let acks = h.deliver_all(Time::us(5), &d[1..]);
    h.deliver_all(Time::us(10), &acks);
    // The live RTO was re-armed by the last ACK (10 ms after it).
    let fired = h.fire(Time::us(10) + Time::ms(10), 0, token(0, TIMER_RTO, h_rto_gen(&h)));
    let re = data(&fired.sends);
    assert_eq!(re[0].seq, 0, "go back to packet 0");
    assert!(re.iter().all(|p| p.seq / MSS == 0 || p.seq / MSS >= 10), "delivered packets skipped");
}

/// The generation of the sender's live RTO.
fn h_rto_gen(h: &H) -> u32 {
    let mut slot = h.snd(0).rto_timer;
    slot.arm(Time::ZERO) - 1
}

#[test]
fn config_errors_name_the_field() {
    let net = NetInfo::for_tests(1500, Time::us(12), Rate::gbps(10));
    for (cfg, field) in [
        (serde_json::json!({"num_que": 1}), "transport.num_que"),
        (serde_json::json!({"num_que": 9}), "transport.num_que"),
        (serde_json::json!({"min_rto_top": "0us"}), "transport.min_rto_top"),
        (serde_json::json!({"g": 0}), "transport.g"),
        (serde_json::json!({"refresh": "0us"}), "transport.refresh"),
        (serde_json::json!({"window": 1}), "transport.window"),
        (serde_json::json!({"arbitration": "global"}), "transport.arbitration"),
        (serde_json::json!({"prune_queues": 8}), "transport.prune_queues"),
        (serde_json::json!({"delegation_period": "0us"}), "transport.delegation_period"),
    ] {
        assert_eq!(Pase::from_config(&cfg, &net).err().expect("rejected").field(), field, "{cfg}");
    }
}

/// 3-tier paths, every link 10 Gbps: host 0 or 1 -> ToR 10 -> Agg 20 -> Core 30 -> Agg 21
/// -> ToR 11 -> host 5 (ports 100 + hop, host 1's uplink 110), and host 2 -> ToR 12 -> Agg
/// 20 -> Core 30 -> Agg 21 -> ToR 13 -> host 6 (ports 200 + hop, the Agg-Core hop shared).
fn tree(h: &mut H) {
    let hop = |port, node, peer| PathHop { port, node, peer, rate: Rate::gbps(10) };
    let mut paths = FlowPaths::default();
    for f in &h.flows {
        let p = match f.src {
            0 | 1 => vec![
                hop(if f.src == 0 { 100 } else { 110 }, f.src, 10),
                hop(101, 10, 20),
                hop(102, 20, 30),
                hop(103, 30, 21),
                hop(104, 21, 11),
                hop(105, 11, 5),
            ],
            _ => vec![
                hop(200, 2, 12),
                hop(201, 12, 20),
                hop(102, 20, 30),
                hop(203, 30, 21),
                hop(204, 21, 13),
                hop(205, 13, 6),
            ],
        };
        paths.push(&p);
    }
    h.t.set_flow_paths(paths);
}

fn at_switch(h: &mut H, now: Time, p: &Packet) -> Vec<Packet> {
    h.call(now, p.dst, |t, c| t.on_switch_packet(c, p)).sends
}

#[test]
fn inter_rack_flow_waits_for_its_tor_which_answers_for_the_delegated_core_link() {
    let mut h = H::new(serde_json::Value::Null, vec![flow(0, 0, 5, 100 * MSS), flow(1, 2, 6, 100 * MSS)]);
    tree(&mut h);
    let a = h.start(0);
    // No data yet: the source waits for its ToR. Two requests: the source half to ToR 10
    // (carrying the source's own answer: top queue, 10 Gbps) and the destination half to 5.
    assert!(data(&a.sends).is_empty());
    assert!(!h.snd(0).started);
    let req = of_kind(&a.sends, KIND_ARB_REQ);
    assert_eq!(req.iter().map(|p| p.dst).collect::<Vec<_>>(), vec![10, 5]);
    assert_eq!((req[0].rank, req[0].seq), (REQ_SOURCE_HALF | REQ_HAS_ANSWER, 10_000_000_000));
    assert_eq!(req[1].rank, 0);
    // ToR 10 arbitrates its uplink (port 101: alone, top queue, 10 Gbps) and its virtual
    // share of the Agg-Core link 102, delegated to ToRs 10 and 12: 10 / 2 = 5 Gbps, so
    // R_ref = min(10, 5) = 5 Gbps. It reports its demand (10 Gbps) to Agg 20 and answers
    // the source itself: the half ends at the ToR.
    let out = at_switch(&mut h, Time::us(1), &req[0]);
    let rep = of_kind(&out, KIND_DELEG_REPORT);
    assert_eq!((rep[0].dst, rep[0].aux, rep[0].aux2), (20, 102, 10_000_000));
    let ans = of_kind(&out, KIND_ARB_RESP);
    assert_eq!((ans[0].dst, ans[0].aux, ans[0].rank, ans[0].aux2), (0, 1, 0, 5_000_000));
    assert_eq!(h.t.link(101).unwrap().len(), 1);
    assert_eq!(h.t.virtual_link(102, 10).unwrap().capacity(), Rate::gbps(5));
    // The answer starts the flow: window = 5 Gbps x 12 us / 12 000 bit = 5 packets.
    let sent = h.deliver(Time::us(2), &ans[0]).sends;
    assert!(h.snd(0).started);
    assert_eq!(data(&sent).len(), 5);
    // Agg 20 gives ToR 10 the whole link (10 G reported, nothing from ToR 12: spare 0).
    // (The runner stamps a packet's source; here by hand.)
    let report = Packet { src: 10, ..rep[0] };
    let share = at_switch(&mut h, Time::us(2), &report);
    assert_eq!((share[0].kind, share[0].dst, share[0].seq), (KIND_DELEG_SHARE, 10, 10_000_000_000));
    at_switch(&mut h, Time::us(3), &share[0]);
    assert_eq!(h.t.virtual_link(102, 10).unwrap().capacity(), Rate::gbps(10));
    // A second request within the delegation period sends no second report.
    let again = at_switch(&mut h, Time::us(4), &req[0]);
    assert!(of_kind(&again, KIND_DELEG_REPORT).is_empty());
    assert_eq!(h.t.arb_msgs(101), 2);
    assert_eq!(h.t.arb_msgs(102), 1, "the report, at the Agg-Core link's owner");
}

#[test]
fn early_pruning_stops_low_flows_at_the_source_and_at_the_tor() {
    // Without delegation the source half is host -> ToR 10 -> Agg 20; 4 queues; only the
    // top queue climbs.
    let cfg = serde_json::json!({"num_que": 4, "prune_queues": 1, "delegation": false});
    let flows = vec![flow(0, 0, 5, 100 * MSS), flow(1, 0, 5, 200 * MSS), flow(2, 1, 5, 300 * MSS)];
    let mut h = H::new(cfg, flows);
    tree(&mut h);
    let a0 = h.start(0).sends;
    // Flow 1 shares host 0's uplink below flow 0: ADH = 10 G = C -> queue 1, pruned at the
    // source: no request to the ToR, and it sends at once (one packet in queue 1).
    let a1 = h.start(1).sends;
    assert_eq!(of_kind(&a1, KIND_ARB_REQ).iter().map(|p| p.dst).collect::<Vec<_>>(), vec![5]);
    assert!(h.snd(1).started);
    assert_eq!(data(&a1).iter().map(|p| p.prio).collect::<Vec<_>>(), vec![1]);
    // Flow 0 climbs: ToR 10 (port 101, top queue) forwards to Agg 20 with the answer so far.
    let up = at_switch(&mut h, Time::us(1), &of_kind(&a0, KIND_ARB_REQ)[0]);
    assert_eq!((up[0].kind, up[0].dst, up[0].rank & 0xFF, up[0].seq), (KIND_ARB_REQ, 20, 0, 10_000_000_000));
    // Agg 20 is the top of the half: it answers the source.
    let top = at_switch(&mut h, Time::us(2), &up[0]);
    assert_eq!((top[0].kind, top[0].dst, top[0].rank, top[0].aux), (KIND_ARB_RESP, 0, 0, 1));
    // Flow 2 (host 1, alone on its uplink) reaches ToR 10 below flow 0: ADH = 10 G ->
    // queue 1, pruned at the ToR: answered there with the base rate, 1500 B x 8 / 12 us
    // = 1 Gbps; Agg 20 never sees it.
    let a2 = h.start(2).sends;
    let r = at_switch(&mut h, Time::us(3), &of_kind(&a2, KIND_ARB_REQ)[0]);
    assert_eq!((r[0].kind, r[0].dst, r[0].rank, r[0].aux2), (KIND_ARB_RESP, 1, 1, 1_000_000));
    assert_eq!(h.t.link(102).unwrap().len(), 1);
    assert_eq!(h.t.link(101).unwrap().len(), 2);
}

#[test]
fn a_release_climbs_as_far_as_the_flow_was_known() {
    let cfg = serde_json::json!({"delegation": false});
    let mut h = H::new(cfg, vec![flow(0, 0, 5, 100 * MSS)]);
    tree(&mut h);
    let a = h.start(0).sends;
    let up = at_switch(&mut h, Time::us(1), &of_kind(&a, KIND_ARB_REQ)[0]);
    at_switch(&mut h, Time::us(2), &up[0]);
    assert_eq!((h.t.link(101).unwrap().len(), h.t.link(102).unwrap().len()), (1, 1));
    // The flow ends: the source's release reaches ToR 10, which forgets the flow and
    // relays to Agg 20, which forgets it and stops (the top of the half).
    let mut rel = of_kind(&a, KIND_ARB_REQ)[0];
    rel.rank = REQ_SOURCE_HALF | REQ_RELEASE;
    let fwd = at_switch(&mut h, Time::us(9), &rel);
    assert_eq!((fwd[0].dst, fwd[0].rank & REQ_RELEASE), (20, REQ_RELEASE));
    assert!(at_switch(&mut h, Time::us(10), &fwd[0]).is_empty());
    assert_eq!((h.t.link(101).unwrap().len(), h.t.link(102).unwrap().len()), (0, 0));
    // A second release finds nothing at the ToR and goes no further.
    assert!(at_switch(&mut h, Time::us(11), &rel).is_empty());
}

/// `run.abort_at_deadline` abandons a flow whose source half climbed to ToR 10: at the
/// source the sender is gone and a source-half release goes to ToR 10; at the destination
/// a destination-half release goes to its ToR 11; later arbitration requests for the flow
/// are ignored there, and a second call sends nothing.
#[test]
fn abandoned_flow_releases_both_halves_and_is_forgotten() {
    let cfg = serde_json::json!({"delegation": false});
    let mut h = H::new(cfg, vec![flow(0, 0, 5, 100 * MSS)]);
    tree(&mut h);
    let a = h.start(0).sends;
    let up = at_switch(&mut h, Time::us(1), &of_kind(&a, KIND_ARB_REQ)[0]);
    at_switch(&mut h, Time::us(2), &up[0]);
    assert_eq!(h.t.link(101).unwrap().len(), 1);
    let src = h.call(Time::us(20), 0, |t, c| t.on_flow_abandoned(c, 0)).sends;
    assert!(h.t.sender(0).is_none());
    let rel = of_kind(&src, KIND_ARB_REQ);
    assert_eq!(rel.len(), 1);
    assert_eq!((rel[0].dst, rel[0].rank & (REQ_RELEASE | REQ_SOURCE_HALF)), (10, REQ_RELEASE | REQ_SOURCE_HALF));
    let fwd = at_switch(&mut h, Time::us(21), &rel[0]);
    at_switch(&mut h, Time::us(22), &fwd[0]);
    assert_eq!(h.t.link(101).unwrap().len(), 0);
    let dst = h.call(Time::us(20), 5, |t, c| t.on_flow_abandoned(c, 0)).sends;
    let rel = of_kind(&dst, KIND_ARB_REQ);
    assert_eq!(rel.len(), 1);
    assert_eq!((rel[0].dst, rel[0].rank & (REQ_RELEASE | REQ_SOURCE_HALF)), (11, REQ_RELEASE));
    assert!(h.call(Time::us(30), 5, |t, c| t.on_flow_abandoned(c, 0)).sends.is_empty());
}

/// Algorithm 2 and §3.2: a flow entering an intermediate queue from the top or the bottom
/// queue (or at its start) is set to one packet; one moving between intermediate queues
/// keeps its window and grows by DCTCP's 1/cwnd per ACK; the top queue sets R_ref x RTT
/// and the bottom queue one packet.
#[test]
fn intermediate_queue_entry_restarts_at_one_packet_and_moves_between_them_keep_the_window() {
    let h = H::new(serde_json::Value::Null, vec![flow(0, 0, 1, 1000 * MSS)]);
    let (f, p) = (&h.flows[0], &h.t.params);
    assert_eq!(p.bottom(), 6);
    let mut s = PaseSender::new(f, p, Decision { queue: 2, rate: Rate::gbps(1) });
    s.adjust(f, p, 0);
    assert_eq!((s.cwnd, s.inter), (1.0, true), "a new flow in an intermediate queue starts at one packet");
    s.adjust(f, p, 3);
    let grown = s.cwnd;
    assert!(grown > 2.0 && grown < 3.0, "three ACKs of 1/cwnd each: {grown}");
    // Demoted from queue 2 to queue 5, both intermediate: the window stays and grows on.
    s.queue = 5;
    s.adjust(f, p, 0);
    assert_eq!((s.cwnd, s.inter), (grown, true));
    s.adjust(f, p, 1);
    assert_eq!(s.cwnd, grown + 1.0 / grown);
    // Promoted to the top: R_ref x RTT = 10 Gbit/s x 12 us / (8 x 1500 B) = 10 packets.
    s.queue = 0;
    s.rref = Rate::gbps(10);
    s.adjust(f, p, 0);
    assert_eq!((s.cwnd, s.inter), (10.0, false));
    // Demoted from the top into an intermediate queue: back to one packet.
    s.queue = 1;
    s.adjust(f, p, 0);
    assert_eq!((s.cwnd, s.inter), (1.0, true));
    s.adjust(f, p, 4);
    assert!(s.cwnd > 2.0);
    // The bottom queue holds one packet; coming back up into an intermediate queue restarts.
    s.queue = 6;
    s.adjust(f, p, 5);
    assert_eq!((s.cwnd, s.inter), (1.0, false));
    s.queue = 3;
    s.adjust(f, p, 0);
    assert_eq!((s.cwnd, s.inter), (1.0, true));
}

#[test]
fn pase_dctcp_ignores_the_reference_rate() {
    let cfg = serde_json::json!({"reference_rate": false});
    let mut h = H::new(cfg, vec![flow(0, 0, 1, 100 * MSS)]);
    let a = h.start(0);
    // Top queue, but the window is DCTCP's initial 10 packets, not R_ref x RTT; each
    // unmarked ACK in slow start adds one packet.
    assert_eq!(data(&a.sends).len(), 10);
    let acks = h.deliver_all(Time::us(5), &data(&a.sends)[..2]);
    h.deliver_all(Time::us(6), &acks);
    assert_eq!(h.snd(0).cwnd, 12.0);
}
