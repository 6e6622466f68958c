use super::*;
use crate::packet::NodeId;
use crate::units::Rate;
use serde_json::json;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const MSS: u64 = 1460;

fn net() -> NetInfo {
    NetInfo {
        mtu: Bytes(1500),
        header: Bytes(40),
        ctrl_size: Bytes(64),
        num_nodes: 4,
        max_base_rtt: Time::us(10),
        max_host_rate: Rate::gbps(10),
        priorities: 8,
        size_cdf: None,
        workload: None,
        host: crate::host::HostSpec { tsq: false, ..crate::host::HostSpec::default() },
    }
}

fn flow(id: FlowId, src: NodeId, dst: NodeId, size: u64) -> FlowInfo {
    FlowInfo {
        id,
        src,
        dst,
        size: Bytes(size),
        start: Time::ZERO,
        base_rtt: Time::us(10),
        path_rate: Rate::gbps(10),
        host_rate: Rate::gbps(10),
        deadline: None,
        background: false,
    }
}

/// Drives one `Tcp` by hand: every call returns the actions it produced.
struct H {
    tcp: Tcp,
    flows: Vec<FlowInfo>,
}

impl H {
    fn new(cfg: serde_json::Value, dctcp: bool, sizes: &[u64]) -> H {
        let tcp = Tcp::from_config(&cfg, &net(), dctcp).expect("valid config");
        let flows = sizes.iter().enumerate().map(|(i, &s)| flow(i as FlowId, 0, 1, s)).collect();
        H { tcp, flows }
    }
    fn call(&mut self, now: Time, host: NodeId, f: impl FnOnce(&mut Tcp, &mut Ctx)) -> Actions {
        let mut out = Actions::new();
        let mut ctx = Ctx { now, host, flows: &self.flows, out: &mut out };
        f(&mut self.tcp, &mut ctx);
        out
    }
    fn start(&mut self, now: Time, f: FlowId) -> Actions {
        let host = self.flows[f as usize].src;
        self.call(now, host, |t, c| t.start_flow(c, f))
    }
    fn deliver(&mut self, now: Time, p: &Packet) -> Actions {
        let host = p.dst;
        self.call(now, host, |t, c| t.on_packet(c, p))
    }
    fn fire(&mut self, now: Time, host: NodeId, tok: u64) -> Actions {
        self.call(now, host, |t, c| t.on_timer(c, tok))
    }
    /// Deliver data packets to the receiver; return the ACKs.
    fn deliver_data(&mut self, now: Time, data: &[Packet]) -> Vec<Packet> {
        let mut acks = Vec::new();
        for d in data {
            acks.extend(self.deliver(now, d).sends);
        }
        acks
    }
    /// Deliver ACKs to the sender; return the data packets sent in response.
    fn deliver_acks(&mut self, now: Time, acks: &[Packet]) -> Vec<Packet> {
        let mut data = Vec::new();
        for a in acks {
            data.extend(self.deliver(now, a).sends);
        }
        data
    }
    fn snd(&self, f: FlowId) -> &TcpSender {
        self.tcp.sender(f).expect("live sender")
    }
}

fn seqs(ps: &[Packet]) -> Vec<u64> {
    ps.iter().map(|p| p.seq / MSS).collect()
}

fn ce(mut p: Packet) -> Packet {
    p.ecn = Ecn::Ce;
    p
}

fn ece(a: &Packet) -> bool {
    a.aux2 & ACK_ECE != 0
}

fn covered(a: &Packet) -> u64 {
    (a.aux2 & ACK_COVERED_MASK) as u64
}

// ---------------------------------------------------------------- host model

/// The test network with the per-flow NIC limit on, capped at `limit` bytes, and window
/// validation as given.
fn net_nic_limited(limit: u64, validation: bool) -> NetInfo {
    let mut n = net();
    n.host = crate::host::HostSpec {
        tsq: true,
        tsq_limit: Bytes(limit),
        cwnd_validation: validation,
        ..crate::host::HostSpec::default()
    };
    n
}

fn h_with(cfg: serde_json::Value, n: &NetInfo, size: u64) -> H {
    let tcp = Tcp::from_config(&cfg, n, false).expect("valid config");
    H { tcp, flows: vec![flow(0, 0, 1, size)] }
}

fn tx_complete(h: &mut H, now: Time, p: &Packet) -> Vec<Packet> {
    h.call(now, p.src, |t, c| t.on_tx_complete(c, p)).sends
}

#[test]
fn nic_limited_sender_stops_above_the_limit_and_each_completion_releases_one_more() {
    // A 100-packet window, a NIC limit of 4,500 B (three 1,500 B packets): the sender
    // sends while the flow's NIC bytes do not exceed the limit, so four packets leave
    // (the last overshoots by one packet, as in Linux) and the sender waits.
    let mut h = h_with(json!({"init_cwnd": 100}), &net_nic_limited(4500, true), 1000 * MSS);
    assert!(h.tcp.wants_tx_complete());
    let a = h.start(Time::ZERO, 0).sends;
    assert_eq!(seqs(&a), vec![0, 1, 2, 3]);
    assert!(h.snd(0).tsq_throttled());
    assert_eq!(h.snd(0).nic_bytes(), 6000);
    // The NIC transmits the first: 4,500 B remain, one more packet goes.
    let b = tx_complete(&mut h, Time::us(1), &a[0]);
    assert_eq!(seqs(&b), vec![4]);
    assert_eq!(h.snd(0).nic_bytes(), 6000);
    // ACKs alone release nothing at the NIC: an ACK for all four sends no packet.
    let acks = h.deliver_data(Time::us(2), &a);
    let c = h.deliver_acks(Time::us(3), &acks);
    assert!(c.is_empty(), "NIC limit holds: {:?}", seqs(&c));
    assert_eq!(h.snd(0).max_nic_bytes(), 4500 + 1500);
}

#[test]
fn window_does_not_grow_while_the_nic_limit_holds_the_flow() {
    // Rounds of: the NIC transmits what the flow queued, the receiver ACKs it. Under a
    // 4,500 B NIC limit with validation the 100-packet window never fills, so it does not
    // grow; with validation off (or without the NIC limit) the same ACKs grow it.
    let run = |n: &NetInfo| -> (u64, u64) {
        let mut h = h_with(json!({"init_cwnd": 100}), n, 100_000 * MSS);
        let mut wire = h.start(Time::ZERO, 0).sends;
        let mut now = Time::ZERO;
        for _ in 0..6 {
            now += Time::us(1);
            let mut released = vec![];
            for p in &wire {
                released.extend(tx_complete(&mut h, now, p));
            }
            let acks = h.deliver_data(now, &wire);
            let mut next = h.deliver_acks(now, &acks);
            next.extend(released);
            wire = next;
        }
        (h.snd(0).cwnd(), h.snd(0).snd_una())
    };
    let (w_limited, una_limited) = run(&net_nic_limited(4500, true));
    assert_eq!(w_limited, 100 * MSS, "NIC-limited: the window stays");
    assert!(una_limited > 15 * MSS, "the flow progresses: {una_limited}");
    let (w_unvalidated, _) = run(&net_nic_limited(4500, false));
    assert!(w_unvalidated > 100 * MSS + 15 * MSS, "without validation it grows: {w_unvalidated}");
    let (w_free, _) = run(&net());
    assert!(w_free > 1000 * MSS, "window-limited without the NIC limit it grows: {w_free}");
}

#[test]
fn slow_start_grows_only_while_the_window_is_below_twice_the_flight() {
    // A 25-packet flow with a 100-packet initial window sends everything at once: the
    // window never fills (application-limited), the round's largest flight is 25 packets
    // and the window (100 packets) is already above twice that, so the ACKs of 24 of them
    // grow nothing; without validation slow start adds one packet per ACK.
    for (validation, want) in [(true, 100), (false, 124)] {
        let mut h = h_with(json!({"init_cwnd": 100}), &net_nic_limited(1_000_000, validation), 25 * MSS);
        let a = h.start(Time::ZERO, 0).sends;
        assert_eq!(a.len(), 25);
        let acks = h.deliver_data(Time::us(5), &a[..24]);
        h.deliver_acks(Time::us(10), &acks);
        assert_eq!(h.snd(0).cwnd(), want * MSS, "validation {validation}");
    }
    // Window-limited rounds grow as before: a 10-packet window on a long flow doubles.
    let mut h = h_with(json!({}), &net_nic_limited(1_000_000, true), 1000 * MSS);
    let a = h.start(Time::ZERO, 0).sends;
    let acks = h.deliver_data(Time::us(5), &a);
    let b = h.deliver_acks(Time::us(10), &acks);
    assert_eq!((b.len(), h.snd(0).cwnd()), (20, 20 * MSS));
}

// ---------------------------------------------------------------- windows

#[test]
fn initial_window_is_init_cwnd_packets() {
    let mut h = H::new(json!({}), false, &[100 * MSS]);
    let a = h.start(Time::ZERO, 0);
    assert_eq!(a.sends.len(), 10);
    for (i, p) in a.sends.iter().enumerate() {
        assert!(p.is_data());
        assert_eq!(p.kind, KIND_DATA);
        assert_eq!(p.seq, i as u64 * MSS);
        assert_eq!(p.payload as u64, MSS);
        assert_eq!(p.size, 1500);
        assert_eq!((p.src, p.dst, p.flow), (0, 1, 0));
        assert_eq!(p.prio, 0);
        assert_eq!(p.ecn, Ecn::NotEct, "plain tcp is not ECT by default");
        assert_eq!(p.aux2 & DATA_RETX, 0);
    }
    // One RTO timer at max(min_rto, 3 x base RTT) = 1 ms.
    assert_eq!(a.timers.len(), 1);
    assert_eq!(a.timers[0].0, Time::ms(1));
    assert_eq!(untoken(a.timers[0].1), (0, TIMER_RTO, untoken(a.timers[0].1).2));
    assert_eq!(h.snd(0).cwnd(), 10 * MSS);

    let mut h = H::new(json!({"init_cwnd": 4, "prio": 2}), true, &[100 * MSS]);
    let a = h.start(Time::ZERO, 0);
    assert_eq!(a.sends.len(), 4);
    assert!(a.sends.iter().all(|p| p.ecn == Ecn::Ect && p.prio == 2));
}

#[test]
fn last_packet_carries_the_remainder() {
    let size = 3 * MSS + 100;
    let mut h = H::new(json!({}), false, &[size]);
    let a = h.start(Time::ZERO, 0);
    assert_eq!(a.sends.len(), 4);
    let last = a.sends[3];
    assert_eq!(last.seq, 3 * MSS);
    assert_eq!(last.payload as u64, size - 3 * MSS);
    assert_eq!(last.size as u64, size - 3 * MSS + 40);
    assert_eq!(a.sends.iter().map(|p| p.payload as u64).sum::<u64>(), size);
}

#[test]
fn slow_start_doubles_per_rtt() {
    for delayed in [false, true] {
        let mut h = H::new(json!({ "delayed_ack": delayed }), false, &[10_000 * MSS]);
        let mut data = h.start(Time::ZERO, 0).sends;
        let mut t = Time::ZERO;
        for round in 1..=4u64 {
            t += Time::us(10);
            let acks = h.deliver_data(t, &data);
            if delayed {
                assert_eq!(acks.len(), data.len() / 2, "delayed ACKs: one per two segments");
            }
            data = h.deliver_acks(t + Time::us(5), &acks);
            assert_eq!(h.snd(0).cwnd(), (10 << round) * MSS, "round {round}, delayed {delayed}");
            assert_eq!(data.len() as u64, 10 << round, "round {round}");
        }
    }
}

#[test]
fn congestion_avoidance_adds_one_mss_per_window() {
    let mut h = H::new(json!({ "ssthresh": 10 }), false, &[10_000 * MSS]);
    let data = h.start(Time::ZERO, 0).sends;
    let acks = h.deliver_data(Time::us(10), &data);
    h.deliver_acks(Time::us(20), &acks);
    // 10 ACKs of one MSS at cwnd ~ 10 MSS: + ~1 MSS (exactly sum of MSS^2 / cwnd_i).
    let c = h.snd(0).cwnd();
    assert!(c > 10 * MSS + MSS - 100 && c <= 11 * MSS, "{c}");
}

// ---------------------------------------------------------------- loss recovery

#[test]
fn three_dupacks_fast_retransmit_newreno() {
    let mut h = H::new(json!({ "sack": false }), false, &[1000 * MSS]);
    let w = h.start(Time::ZERO, 0).sends;
    let t = Time::us(10);
    let delivered: Vec<Packet> = w.iter().copied().filter(|p| p.seq != MSS).collect();
    let acks = h.deliver_data(t, &delivered);
    assert_eq!(acks.len(), 9);
    assert_eq!(acks[0].ack, MSS);
    assert!(acks[1..].iter().all(|a| a.ack == MSS), "duplicate ACKs");
    // First ACK advances: slow start sends two more (segments 10, 11).
    let mut more = h.deliver_acks(t, &acks[..1]);
    assert_eq!(seqs(&more), vec![10, 11]);
    assert!(h.deliver_acks(t, &acks[1..3]).is_empty(), "two dupacks: nothing");
    let r = h.deliver_acks(t, &acks[3..4]);
    assert_eq!(r.len(), 1, "third dupack: exactly one retransmission");
    assert_eq!(r[0].seq, MSS);
    assert_ne!(r[0].aux2 & DATA_RETX, 0);
    let s = h.snd(0);
    assert_eq!(s.recovery(), Recovery::NewReno);
    let flight = 11 * MSS; // snd_max 12 MSS - snd_una 1 MSS
    assert_eq!(s.ssthresh(), flight / 2, "ssthresh = FlightSize / 2");
    assert_eq!(s.cwnd(), flight / 2 + 3 * MSS, "inflated by the three dupacks");
    // More dupacks inflate; what is sent is new data only.
    let later = h.deliver_acks(t, &acks[4..]);
    assert!(later.iter().all(|p| p.seq >= 12 * MSS), "{:?}", seqs(&later));
    more.extend(later);
    // Deliver the new segments (more dupacks), then the retransmission: full ACK.
    let acks2 = h.deliver_data(t, &more);
    h.deliver_acks(t, &acks2);
    let full = h.deliver_data(t + Time::us(10), &r);
    assert!(full[0].ack >= 12 * MSS, "ACK reaches the recovery point");
    h.deliver_acks(t + Time::us(10), &full);
    let s = h.snd(0);
    assert_eq!(s.recovery(), Recovery::Open);
    assert!(s.cwnd() <= flight / 2, "window halved after recovery: {}", s.cwnd());
    assert_eq!(s.retx_bytes(), MSS);
    assert_eq!(s.fast_retransmits(), 1);
}

#[test]
fn newreno_partial_ack_retransmits_next_hole() {
    let mut h = H::new(json!({ "sack": false }), false, &[1000 * MSS]);
    let w = h.start(Time::ZERO, 0).sends;
    let t = Time::us(10);
    let delivered: Vec<Packet> = w.iter().copied().filter(|p| p.seq != MSS && p.seq != 4 * MSS).collect();
    let acks = h.deliver_data(t, &delivered);
    let mut sent = Vec::new();
    for a in &acks {
        sent.extend(h.deliver_acks(t, std::slice::from_ref(a)));
    }
    let retx: Vec<&Packet> = sent.iter().filter(|p| p.seq < 10 * MSS).collect();
    assert_eq!(retx.len(), 1);
    assert_eq!(retx[0].seq, MSS);
    // The retransmission fills the first hole: the receiver acks up to the second hole.
    let partial = h.deliver_data(t + Time::us(10), &[*retx[0]]);
    assert_eq!(partial[0].ack, 4 * MSS);
    let r = h.deliver_acks(t + Time::us(10), &partial);
    assert_eq!(r[0].seq, 4 * MSS, "partial ACK retransmits the next hole at once");
    assert_ne!(r[0].aux2 & DATA_RETX, 0);
    assert_eq!(h.snd(0).recovery(), Recovery::NewReno, "still in recovery");
}

#[test]
fn sack_recovery_retransmits_only_the_holes() {
    for sack in [true, false] {
        let mut sim = Sim::new(json!({ "sack": sack }), false, &[60 * MSS]);
        sim.drop_first = vec![2 * MSS, 5 * MSS, 7 * MSS];
        sim.run(Time::ms(100));
        let retx: Vec<u64> = sim.sent.iter().filter(|p| p.aux2 & DATA_RETX != 0).map(|p| p.seq / MSS).collect();
        if sack {
            assert_eq!(retx, vec![2, 5, 7], "SACK retransmits exactly the three holes");
        } else {
            let mut r = retx.clone();
            r.sort();
            r.dedup();
            assert_eq!(r.len(), retx.len(), "NewReno retransmits each segment once: {retx:?}");
            assert!([2, 5, 7].iter().all(|s| retx.contains(s)), "{retx:?}");
        }
        assert_eq!(sim.completions.len(), 1);
        let st = sim.h.tcp.flow_stats(0);
        assert_eq!(st.timeouts, 0, "sack={sack}: recovered without a timeout");
        assert!(sim.h.tcp.sender_done(0));
    }
}

#[test]
fn sack_recovery_sets_cwnd_to_ssthresh_and_uses_pipe() {
    let mut h = H::new(json!({}), false, &[1000 * MSS]);
    let w = h.start(Time::ZERO, 0).sends;
    let t = Time::us(10);
    let delivered: Vec<Packet> = w.iter().copied().filter(|p| p.seq != 2 * MSS).collect();
    let acks = h.deliver_data(t, &delivered);
    assert_eq!((acks[2].seq, acks[2].aux), (3 * MSS, 4 * MSS), "SACK block of the triggering segment");
    let mut sent = Vec::new();
    for a in &acks {
        sent.extend(h.deliver_acks(t, std::slice::from_ref(a)));
    }
    let s = h.snd(0);
    assert_eq!(s.recovery(), Recovery::Sack);
    assert_eq!(s.cwnd(), s.ssthresh());
    assert_eq!(s.fast_retransmits(), 1);
    let retx: Vec<u64> = sent.iter().filter(|p| p.seq < 10 * MSS).map(|p| p.seq / MSS).collect();
    assert_eq!(retx, vec![2]);
}

// ---------------------------------------------------------------- RTO

#[test]
fn rto_fires_after_min_rto_and_backs_off() {
    let mut h = H::new(json!({}), false, &[100 * MSS]);
    let a = h.start(Time::ZERO, 0);
    let (t1, tok1) = a.timers[0];
    assert_eq!(t1, Time::ms(1));
    let b = h.fire(t1, 0, tok1);
    assert_eq!(b.sends.len(), 1);
    assert_eq!(b.sends[0].seq, 0, "go back to snd_una");
    assert_ne!(b.sends[0].aux2 & DATA_RETX, 0);
    let s = h.snd(0);
    assert_eq!(s.cwnd(), MSS);
    assert_eq!(s.timeouts(), 1);
    assert_eq!(s.ssthresh(), 5 * MSS, "FlightSize / 2");
    assert_eq!(b.timers.len(), 1);
    let (t2, tok2) = b.timers[0];
    assert_eq!(t2, t1 + Time::ms(2), "backoff x2");
    // A stale token (the one that already fired) does nothing.
    let stale = h.fire(t1 + Time::us(1), 0, tok1);
    assert!(stale.sends.is_empty() && stale.timers.is_empty());
    let c = h.fire(t2, 0, tok2);
    assert_eq!(c.sends.len(), 1);
    assert_eq!(c.sends[0].seq, 0);
    assert_eq!(c.timers[0].0, t2 + Time::ms(4), "backoff x4");
    let s = h.snd(0);
    assert_eq!(s.timeouts(), 2);
    assert_eq!(s.cwnd(), MSS);
    assert_eq!(s.ssthresh(), 5 * MSS, "ssthresh kept on a repeated timeout");
    let st = h.tcp.flow_stats(0);
    assert_eq!(st, FlowStats { retx_bytes: 2 * MSS, timeouts: 2, ..FlowStats::default() });
}

#[test]
fn rearmed_rto_token_does_not_fire() {
    let mut h = H::new(json!({}), false, &[100 * MSS]);
    let a = h.start(Time::ZERO, 0);
    let (t1, tok1) = a.timers[0];
    // An ACK at 100 us moves the deadline to 1.1 ms without a new timer event.
    let acks = h.deliver_data(Time::us(50), &a.sends[..1]);
    let r = h.deliver(Time::us(100), &acks[0]);
    assert!(r.timers.is_empty(), "lazy re-arm: no timer per ACK");
    assert_eq!(h.snd(0).srtt(), Some(Time::us(100)), "RTT from the timestamp echo");
    // The old event fires at 1 ms: no timeout, one re-arm at the new deadline.
    let b = h.fire(t1, 0, tok1);
    assert!(b.sends.is_empty());
    assert_eq!(h.snd(0).timeouts(), 0);
    assert_eq!(b.timers.len(), 1);
    let (t2, tok2) = b.timers[0];
    assert_eq!(t2, Time::us(1100));
    assert!(h.fire(t1, 0, tok1).timers.is_empty(), "stale generation ignored");
    let c = h.fire(t2, 0, tok2);
    assert_eq!(h.snd(0).timeouts(), 1);
    assert_eq!(c.sends[0].seq, MSS);
}

#[test]
fn rto_is_srtt_plus_four_rttvar_with_floor() {
    let mut h = H::new(json!({ "min_rto": "10us" }), false, &[100 * MSS]);
    let a = h.start(Time::ZERO, 0);
    let acks = h.deliver_data(Time::us(10), &a.sends[..2]);
    h.deliver(Time::us(20), &acks[0]); // R = 20us: srtt 20, rttvar 10
    assert_eq!(h.snd(0).rto(), Time::us(60));
    let mut late = acks[1];
    late.ts = Time::us(4); // R = 36us: rttvar = (30 + 16)/4 = 11.5, srtt = (140+36)/8 = 22
    h.deliver(Time::us(40), &late);
    let s = h.snd(0);
    assert_eq!(s.srtt(), Some(Time::us(22)));
    assert_eq!(s.rttvar(), Some(Time::ns(11_500)));
    assert_eq!(s.rto(), Time::us(68));
}

// ---------------------------------------------------------------- receiver / ECN

#[test]
fn receiver_acks_every_packet_with_exact_ece() {
    let mut h = H::new(json!({}), true, &[100 * MSS]);
    let w = h.start(Time::ZERO, 0).sends;
    let marked = [3usize, 7];
    let d: Vec<Packet> = w.iter().enumerate().map(|(i, p)| if marked.contains(&i) { ce(*p) } else { *p }).collect();
    let acks = h.deliver_data(Time::us(10), &d);
    assert_eq!(acks.len(), 10);
    for (i, a) in acks.iter().enumerate() {
        assert_eq!(a.kind, KIND_ACK);
        assert!(!a.is_data());
        assert_eq!(a.size, 64);
        assert_eq!(a.ecn, Ecn::NotEct);
        assert_eq!((a.src, a.dst), (1, 0));
        assert_eq!(a.ack, (i as u64 + 1) * MSS);
        assert_eq!(a.ts, w[i].ts);
        assert_eq!(covered(a), MSS);
        assert_eq!(ece(a), marked.contains(&i), "ack {i}");
    }
}

#[test]
fn delayed_ack_dctcp_state_machine() {
    let mut h = H::new(json!({ "delayed_ack": true }), true, &[100 * MSS]);
    let w = h.start(Time::ZERO, 0).sends;
    let t = Time::us(10);
    // N N | C C | C N | (timer)
    let a1 = h.deliver(t, &w[0]);
    assert!(a1.sends.is_empty());
    assert_eq!(a1.timers.len(), 1, "delayed-ACK timer armed");
    assert_eq!(a1.timers[0].0, t + Time::us(40));
    let a2 = h.deliver(t, &w[1]);
    assert_eq!(a2.sends.len(), 1);
    assert_eq!((a2.sends[0].ack, covered(&a2.sends[0]), ece(&a2.sends[0])), (2 * MSS, 2 * MSS, false));
    assert!(h.deliver(t, &ce(w[2])).sends.is_empty());
    let a4 = h.deliver(t, &ce(w[3])).sends;
    assert_eq!((a4[0].ack, covered(&a4[0]), ece(&a4[0])), (4 * MSS, 2 * MSS, true));
    assert!(h.deliver(t, &ce(w[4])).sends.is_empty());
    // CE state changes with one CE packet pending: ACK it at once, with ECE.
    let a6 = h.deliver(t, &w[5]);
    assert_eq!(a6.sends.len(), 1);
    assert_eq!((a6.sends[0].ack, covered(&a6.sends[0]), ece(&a6.sends[0])), (5 * MSS, MSS, true));
    let (at, tok) = a6.timers[0];
    let a7 = h.fire(at, 1, tok);
    assert_eq!(a7.sends.len(), 1, "delayed-ACK timeout");
    assert_eq!((a7.sends[0].ack, covered(&a7.sends[0]), ece(&a7.sends[0])), (6 * MSS, MSS, false));
    // The first timer (cancelled by the ACK of segment 2) is stale.
    assert!(h.fire(a1.timers[0].0, 1, a1.timers[0].1).sends.is_empty());
    // Out-of-order data is ACKed at once.
    assert_eq!(h.deliver(t, &w[8]).sends.len(), 1);
}

#[test]
fn dctcp_alpha_after_one_window() {
    for init_alpha in [1.0, 0.0, 0.4] {
        let g = 1.0 / 16.0;
        let mut h = H::new(json!({ "init_alpha": init_alpha }), true, &[1000 * MSS]);
        let w = h.start(Time::ZERO, 0).sends;
        let d: Vec<Packet> = w.iter().enumerate().map(|(i, p)| if i >= 7 { ce(*p) } else { *p }).collect();
        let acks = h.deliver_data(Time::us(10), &d);
        h.deliver_acks(Time::us(20), &acks[..9]);
        assert_eq!(h.snd(0).alpha(), init_alpha, "no update before the window is acknowledged");
        h.deliver_acks(Time::us(20), &acks[9..]);
        let f = 3.0 / 10.0;
        let want = (1.0 - g) * init_alpha + g * f;
        assert!((h.snd(0).alpha() - want).abs() < 1e-12, "{} vs {want}", h.snd(0).alpha());
    }
}

#[test]
fn dctcp_alpha_counts_bytes_not_acks() {
    // A short last segment weighs by its bytes.
    let size = 3 * MSS + 365;
    let mut h = H::new(json!({ "init_alpha": 0.0, "g": 1.0 }), true, &[size]);
    let w = h.start(Time::ZERO, 0).sends;
    let d = vec![w[0], w[1], w[2], ce(w[3])];
    let acks = h.deliver_data(Time::us(10), &d);
    // The sender finishes with the last ACK; read alpha just before.
    h.deliver_acks(Time::us(20), &acks[..3]);
    assert_eq!(h.snd(0).alpha(), 0.0);
    let mut s = h.snd(0).clone();
    let mut out = Actions::new();
    let p = h.tcp.params().clone();
    let mut cx = FlowCtx { now: Time::us(20), flow: &h.flows[0], params: &p, policy: &ConstPrio(0), out: &mut out };
    s.on_ack(&mut cx, &acks[3]);
    assert!((s.alpha() - 365.0 / size as f64).abs() < 1e-12);
}

#[test]
fn dctcp_cuts_at_most_once_per_window() {
    let mut h = H::new(json!({ "init_alpha": 0.5 }), true, &[1000 * MSS]);
    let w = h.start(Time::ZERO, 0).sends;
    let d: Vec<Packet> = w.iter().map(|p| ce(*p)).collect();
    let acks = h.deliver_data(Time::us(10), &d);
    h.deliver_acks(Time::us(20), &acks[..1]);
    let s = h.snd(0);
    assert_eq!(s.ecn_cuts(), 1);
    assert_eq!(s.cwnd(), (10.0 * MSS as f64 * 0.75) as u64, "cwnd x (1 - alpha/2)");
    assert_eq!(s.ssthresh(), s.cwnd());
    assert!(s.in_cwr());
    h.deliver_acks(Time::us(20), &acks[1..9]);
    assert_eq!(h.snd(0).ecn_cuts(), 1, "no second cut within the window");
    // The ACK that ends the window (snd_una reaches the snd_nxt of the cut) may cut again,
    // with the freshly updated alpha.
    let before = h.snd(0).cwnd();
    h.deliver_acks(Time::us(20), &acks[9..]);
    let s = h.snd(0);
    let alpha = 0.5 * 15.0 / 16.0 + 1.0 / 16.0;
    assert!((s.alpha() - alpha).abs() < 1e-12);
    assert_eq!(s.ecn_cuts(), 2);
    assert_eq!(s.cwnd(), (before as f64 * (1.0 - alpha / 2.0)) as u64);
}

#[test]
fn plain_tcp_with_ecn_halves_once_per_window() {
    let mut h = H::new(json!({ "ecn": true }), false, &[1000 * MSS]);
    let w = h.start(Time::ZERO, 0).sends;
    assert!(w.iter().all(|p| p.ecn == Ecn::Ect));
    let d: Vec<Packet> = w.iter().map(|p| ce(*p)).collect();
    let acks = h.deliver_data(Time::us(10), &d);
    h.deliver_acks(Time::us(20), &acks[..5]);
    assert_eq!(h.snd(0).ecn_cuts(), 1);
    assert_eq!(h.snd(0).ssthresh(), 5 * MSS);
    // Without ECN, CE marks are ignored.
    let mut h = H::new(json!({}), false, &[1000 * MSS]);
    let w = h.start(Time::ZERO, 0).sends;
    let acks = h.deliver_data(Time::us(10), &w.iter().map(|p| ce(*p)).collect::<Vec<_>>());
    h.deliver_acks(Time::us(20), &acks);
    assert_eq!(h.snd(0).ecn_cuts(), 0);
    assert_eq!(h.snd(0).cwnd(), 20 * MSS);
}

// ---------------------------------------------------------------- completion

#[test]
fn completion_exactly_once_when_every_byte_is_held() {
    let size = 4 * MSS + 500;
    let mut h = H::new(json!({}), false, &[size]);
    let w = h.start(Time::ZERO, 0).sends;
    assert_eq!(w.len(), 5);
    let t = Time::us(10);
    let mut total = 0;
    let expect =
        [(4, 0, (4 * MSS, size)), (2, 0, (2 * MSS, 3 * MSS)), (0, MSS, (2 * MSS, 3 * MSS)), (3, MSS, (2 * MSS, size))];
    for (i, ack, block) in expect {
        let a = h.deliver(t, &w[i]);
        assert!(a.completions.is_empty(), "segment 1 is still missing");
        assert_eq!(a.sends[0].ack, ack);
        assert_eq!((a.sends[0].seq, a.sends[0].aux), block, "SACK block for segment {i}");
    }
    let a = h.call(t, 1, |tcp, c| tcp.on_packet(c, &w[1]));
    assert_eq!(a.completions, vec![0], "completed at the receiving host");
    assert_eq!(a.sends[0].ack, size);
    total += a.completions.len();
    assert!(h.tcp.receiver_complete(0));
    // Duplicates after completion are ACKed without a second report.
    for i in [1, 3, 0] {
        let a = h.deliver(t, &w[i]);
        assert!(a.completions.is_empty());
        assert_eq!(a.sends.len(), 1);
        assert_eq!(a.sends[0].ack, size);
    }
    assert_eq!(total, 1);
}

#[test]
fn sender_state_is_freed_when_everything_is_acked() {
    let mut h = H::new(json!({}), false, &[3 * MSS]);
    let w = h.start(Time::ZERO, 0).sends;
    let acks = h.deliver_data(Time::us(10), &w);
    assert!(h.deliver_acks(Time::us(20), &acks).is_empty());
    assert!(h.tcp.sender(0).is_none());
    assert!(h.tcp.sender_done(0));
    assert_eq!(h.tcp.flow_stats(0), FlowStats::default());
}

// ---------------------------------------------------------------- priority hook

struct Demote;
impl PriorityPolicy for Demote {
    fn prio(&self, _f: &FlowInfo, sent: u64, _seq: u64) -> u8 {
        if sent < 2 * MSS {
            0
        } else {
            3
        }
    }
}

#[test]
fn priority_policy_chooses_each_packet_class() {
    let mut h = H::new(json!({}), false, &[100 * MSS]);
    h.tcp = Tcp::from_config(&json!({}), &net(), false).unwrap().with_priority_policy(Box::new(Demote));
    let w = h.start(Time::ZERO, 0).sends;
    let prios: Vec<u8> = w.iter().map(|p| p.prio).collect();
    assert_eq!(prios, vec![0, 0, 3, 3, 3, 3, 3, 3, 3, 3]);
    let acks = h.deliver_data(Time::us(10), &w[..3]);
    assert_eq!(acks.iter().map(|a| a.prio).collect::<Vec<_>>(), vec![0, 0, 3], "ACKs follow their data");
}

// ---------------------------------------------------------------- config

#[test]
fn config_defaults_and_units() {
    let t = Tcp::from_config(&serde_json::Value::Null, &net(), true).unwrap();
    let p = t.params();
    assert_eq!(p.mss, MSS);
    assert_eq!(p.init_cwnd, 10 * MSS);
    assert_eq!(p.min_rto, Time::ms(1));
    assert_eq!(p.max_rto, Time::ms(1000));
    assert_eq!(p.dupack_threshold, 3);
    assert!(p.sack && !p.delayed_ack && p.ecn && p.dctcp);
    assert_eq!(p.g, 1.0 / 16.0);
    assert_eq!(p.init_ssthresh, u64::MAX);
    assert_eq!(t.name(), "dctcp");
    let t = Tcp::from_config(&json!({}), &net(), false).unwrap();
    assert!(!t.params().ecn);
    assert_eq!(t.name(), "tcp");

    let t = Tcp::from_config(
        &json!({"min_rto": "200us", "max_rto": "5ms", "initial_rto": "3ms",
                "max_cwnd": "64KB", "ssthresh": 20, "delayed_ack_timeout": "1.5us", "g": 0.125}),
        &net(),
        true,
    )
    .unwrap();
    let p = t.params();
    assert_eq!(p.min_rto, Time::us(200));
    assert_eq!(p.max_rto, Time::ms(5));
    assert_eq!(p.initial_rto, Some(Time::ms(3)));
    assert_eq!(p.max_cwnd, 64_000);
    assert_eq!(p.init_ssthresh, 20 * MSS);
    assert_eq!(p.delayed_ack_timeout, Time::ns(1500));
    assert_eq!(p.g, 0.125);
    // Every listed field is accepted.
    let all = json!({"init_cwnd": 4, "min_cwnd": 1, "max_cwnd": 100, "ssthresh": 50, "min_rto": "1ms",
        "max_rto": "1s", "initial_rto": "2ms", "dupack_threshold": 3, "sack": false, "delayed_ack": true,
        "delayed_ack_timeout": "40us", "g": 0.0625, "init_alpha": 0.0, "ecn": true, "prio": 7});
    assert_eq!(all.as_object().unwrap().len(), TcpConfig::FIELDS.len());
    Tcp::from_config(&all, &net(), true).unwrap();
}

#[test]
fn config_errors_name_the_field() {
    let err = |v: serde_json::Value, dctcp: bool| Tcp::from_config(&v, &net(), dctcp).err().expect("an error");
    let cases = [
        (json!({"min_rtt": "1ms"}), false, "transport.min_rtt"),
        (json!({"min_rto": "0us"}), false, "transport.min_rto"),
        (json!({"min_rto": "soon"}), false, "transport.min_rto"),
        (json!({"init_cwnd": 0}), false, "transport.init_cwnd"),
        (json!({"init_cwnd": "ten"}), false, "transport.init_cwnd"),
        (json!({"max_rto": "10us"}), false, "transport.max_rto"),
        (json!({"g": 2.0}), true, "transport.g"),
        (json!({"ecn": false}), true, "transport.ecn"),
        (json!({"prio": 8}), false, "transport.prio"),
        (json!({"max_cwnd": 5}), false, "transport.max_cwnd"),
        (json!({"dupack_threshold": 0}), false, "transport.dupack_threshold"),
        (json!({"sack": "yes"}), false, "transport.sack"),
    ];
    for (v, dctcp, field) in cases {
        let e = err(v.clone(), dctcp);
        assert_eq!(e.field(), field, "{v}: {e}");
        assert!(e.to_string().starts_with(field), "message names the field: {e}");
    }
    assert_eq!(err(json!([1, 2]), false).field(), "transport");
    let e = err(json!({"min_rto": "0us"}), false).to_string();
    assert!(e.contains("must be > 0"), "{e}");
    let e = err(json!({"bogus": 1}), false).to_string();
    assert!(e.contains("min_rto") && e.contains("unknown field"), "lists the known fields: {e}");
}

// ---------------------------------------------------------------- end to end

enum Ev {
    Start(FlowId),
    Pkt(Packet),
    Timer(NodeId, u64),
}

/// A loopback harness: each host's NIC serializes at `rate`, every packet then takes
/// `delay` (+ optional random jitter, which reorders); chosen packets are dropped or marked.
struct Sim {
    h: H,
    heap: BinaryHeap<Reverse<(Time, u64)>>,
    evs: Vec<Option<Ev>>,
    nic_free: Vec<Time>,
    now: Time,
    rate: Rate,
    delay: Time,
    rng: u64,
    data_loss: f64,
    ack_loss: f64,
    ce_prob: f64,
    jitter: u64,
    drop_first: Vec<u64>,
    sent: Vec<Packet>,
    completions: Vec<(Time, FlowId, NodeId)>,
}

impl Sim {
    fn new(cfg: serde_json::Value, dctcp: bool, sizes: &[u64]) -> Sim {
        let h = H::new(cfg, dctcp, sizes);
        let mut s = Sim {
            h,
            heap: BinaryHeap::new(),
            evs: Vec::new(),
            nic_free: vec![Time::ZERO; 4],
            now: Time::ZERO,
            rate: Rate::gbps(10),
            delay: Time::us(2),
            rng: 0x9E37_79B9_7F4A_7C15,
            data_loss: 0.0,
            ack_loss: 0.0,
            ce_prob: 0.0,
            jitter: 0,
            drop_first: Vec::new(),
            sent: Vec::new(),
            completions: Vec::new(),
        };
        for f in 0..sizes.len() {
            s.push(Time::ZERO, Ev::Start(f as FlowId));
        }
        s
    }
    fn with_flows(mut self, flows: Vec<FlowInfo>) -> Sim {
        self.h.flows = flows;
        self
    }
    fn rand(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }
    fn push(&mut self, t: Time, e: Ev) {
        self.evs.push(Some(e));
        self.heap.push(Reverse((t, self.evs.len() as u64 - 1)));
    }
    fn apply(&mut self, host: NodeId, a: Actions) {
        for mut p in a.sends {
            assert_eq!(p.src, host, "a host only sends its own packets");
            let depart = self.now.max(self.nic_free[host as usize]) + self.rate.tx_time(p.wire());
            self.nic_free[host as usize] = depart;
            let mut arrive = depart + self.delay;
            if self.jitter > 0 {
                arrive += Time((self.rand() * self.jitter as f64) as u64);
            }
            if p.is_data() {
                self.sent.push(p);
                if p.aux2 & DATA_RETX == 0 && self.drop_first.contains(&p.seq) {
                    continue;
                }
                if self.rand() < self.data_loss {
                    continue;
                }
                if p.ecn == Ecn::Ect && self.rand() < self.ce_prob {
                    p.ecn = Ecn::Ce;
                }
            } else if self.rand() < self.ack_loss {
                continue;
            }
            self.push(arrive, Ev::Pkt(p));
        }
        for (t, tok) in a.timers {
            assert!(t >= self.now);
            self.push(t, Ev::Timer(host, tok));
        }
        for f in a.completions {
            self.completions.push((self.now, f, host));
        }
    }
    fn run(&mut self, limit: Time) {
        while let Some(Reverse((t, i))) = self.heap.pop() {
            if t > limit {
                break;
            }
            self.now = t;
            match self.evs[i as usize].take().unwrap() {
                Ev::Start(f) => {
                    let host = self.h.flows[f as usize].src;
                    let a = self.h.call(t, host, |tcp, c| tcp.start_flow(c, f));
                    self.apply(host, a);
                }
                Ev::Pkt(p) => {
                    let a = self.h.deliver(t, &p);
                    self.apply(p.dst, a);
                }
                Ev::Timer(host, tok) => {
                    let a = self.h.fire(t, host, tok);
                    self.apply(host, a);
                }
            }
        }
    }
}

#[test]
fn lossless_transfer_has_no_retransmissions() {
    for (dctcp, delayed) in [(false, false), (false, true), (true, false), (true, true)] {
        let size = 200 * MSS + 17;
        let mut sim = Sim::new(json!({ "delayed_ack": delayed }), dctcp, &[size]);
        sim.run(Time::ms(100));
        assert_eq!(sim.completions.len(), 1);
        assert_eq!(sim.completions[0].2, 1);
        assert_eq!(sim.h.tcp.flow_stats(0), FlowStats::default());
        assert_eq!(sim.sent.iter().map(|p| p.payload as u64).sum::<u64>(), size);
        assert!(sim.h.tcp.sender_done(0));
    }
}

#[test]
fn random_loss_reordering_and_marking_always_complete() {
    let mut total_retx = 0;
    let mut total_to = 0;
    for seed in 1..=6u64 {
        for (dctcp, sack, delayed) in [
            (false, true, false),
            (false, false, false),
            (false, true, true),
            (false, false, true),
            (true, true, false),
            (true, false, true),
        ] {
            let sizes = [1, 700, 3 * MSS, 40 * MSS + 3, 300 * MSS];
            let flows: Vec<FlowInfo> = sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| flow(i as FlowId, (i % 3) as NodeId, ((i + 1) % 3) as NodeId, s))
                .collect();
            let cfg = json!({ "sack": sack, "delayed_ack": delayed, "min_rto": "200us" });
            let mut sim = Sim::new(cfg, dctcp, &sizes).with_flows(flows);
            sim.rng ^= seed.wrapping_mul(0x2545_F491_4F6C_DD1D);
            sim.data_loss = 0.03;
            sim.ack_loss = 0.03;
            sim.ce_prob = if dctcp { 0.2 } else { 0.0 };
            sim.jitter = if seed.is_multiple_of(2) { Time::us(3).0 } else { 0 };
            sim.run(Time::ms(2000));
            let ctx = format!("seed {seed} dctcp {dctcp} sack {sack} delayed {delayed}");
            let mut done: Vec<FlowId> = sim.completions.iter().map(|c| c.1).collect();
            done.sort();
            assert_eq!(done, vec![0, 1, 2, 3, 4], "each flow completes exactly once ({ctx})");
            for &(_, f, host) in &sim.completions {
                assert_eq!(host, sim.h.flows[f as usize].dst, "{ctx}");
            }
            for f in 0..5 {
                assert!(sim.h.tcp.sender_done(f), "sender {f} finished ({ctx})");
                let st = sim.h.tcp.flow_stats(f);
                total_retx += st.retx_bytes;
                total_to += st.timeouts;
            }
            assert!(sim.heap.is_empty(), "run went quiet ({ctx})");
        }
    }
    assert!(total_retx > 0 && total_to > 0);
}

/// The range helpers find their starting range by binary search; they must agree with a
/// byte-by-byte reading of the sorted, disjoint (possibly touching) range lists.
#[test]
fn range_helpers_agree_with_a_byte_by_byte_reference() {
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |m: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % m
    };
    for _ in 0..300 {
        // A random sorted, disjoint list over [0, 200): gaps of 0..6, lengths 1..8.
        let mut v = Vec::new();
        let mut x = next(6);
        while x < 190 && v.len() < 40 {
            let len = 1 + next(8);
            v.push((x, x + len));
            x += len + next(6);
        }
        let covered = |b: u64| v.iter().any(|&(p, q)| p <= b && b < q);
        for s in 0..210 {
            let mut r = s;
            if let Some(&(_, q)) = v.iter().find(|&&(p, q)| p <= s && s < q) {
                r = q;
            }
            assert_eq!(skip_in(&v, s), r, "skip_in({v:?}, {s})");
            let e = s + next(40);
            let n = (s..e).filter(|&b| covered(b)).count() as u64;
            assert_eq!(overlap(&v, s, e), n, "overlap({v:?}, {s}, {e})");
        }
    }
}
