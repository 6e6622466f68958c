//! State-machine tests of PPT: each names the state and the event it drives (the dual loop, the
//! opportunistic window, buffer-aware flow scheduling, and the ECN thresholds).

use super::*;
use crate::packet::{Ecn, PacketFlags};
use crate::transport::lowprio::{
    parse_lp_ack, LpCx, LpReceiver, LpSender, KIND_LP_ACK, KIND_LP_DATA, TIMER_LP_IDLE, TIMER_LP_PACE,
};
use crate::transport::tcp::KIND_DATA;
use crate::transport::{untoken, Actions, FlowInfo};
use crate::units::{Rate, Time};
use serde_json::json;

const MSS: u64 = 1460;

fn net() -> NetInfo {
    NetInfo {
        mtu: Bytes(1500),
        header: Bytes(40),
        ctrl_size: Bytes(64),
        num_nodes: 4,
        max_base_rtt: Time::us(40),
        max_host_rate: Rate::gbps(10),
        priorities: 8,
        size_cdf: None,
        workload: None,
        host: crate::host::HostSpec { tsq: false, ..crate::host::HostSpec::default() },
    }
}

fn flow(size: u64, rtt_us: u64) -> FlowInfo {
    FlowInfo {
        id: 0,
        src: 0,
        dst: 1,
        size: Bytes(size),
        start: Time::ZERO,
        base_rtt: Time::us(rtt_us),
        path_rate: Rate::gbps(10),
        host_rate: Rate::gbps(10),
        deadline: None,
        background: false,
    }
}

/// An ideal network around one `Ppt`: packets sent in a step arrive at the next step.
struct H {
    t: Ppt,
    flows: Vec<FlowInfo>,
    now: Time,
    wire: Vec<Packet>,
    timers: Vec<(Time, u64, u32)>,
    /// Every packet sent: (time, packet).
    log: Vec<(Time, Packet)>,
    completions: u32,
}

impl H {
    fn new(cfg: serde_json::Value, f: FlowInfo) -> H {
        Self::with(Ppt::from_config(&cfg, &net()).unwrap(), f)
    }
    fn new_swift(cfg: serde_json::Value, f: FlowInfo) -> H {
        Self::with(Ppt::from_config_swift(&cfg, &net()).unwrap(), f)
    }
    fn with(t: Ppt, f: FlowInfo) -> H {
        H { t, flows: vec![f], now: Time::ZERO, wire: Vec::new(), timers: Vec::new(), log: Vec::new(), completions: 0 }
    }
    fn call(&mut self, host: u32, f: impl FnOnce(&mut Ppt, &mut Ctx)) -> Vec<Packet> {
        let mut out = Actions::new();
        f(&mut self.t, &mut Ctx { now: self.now, host, flows: &self.flows, out: &mut out });
        for &(at, tok) in &out.timers {
            self.timers.push((at, tok, host));
        }
        self.completions += out.completions.len() as u32;
        for p in &out.sends {
            self.log.push((self.now, *p));
        }
        out.sends
    }
    fn start(&mut self) -> Vec<Packet> {
        let s = self.call(0, |t, c| t.start_flow(c, 0));
        self.wire.extend(s.iter().copied());
        s
    }
    fn deliver(&mut self, p: &Packet) -> Vec<Packet> {
        let host = p.dst;
        self.call(host, |t, c| t.on_packet(c, p))
    }
    /// Advance to `at`, firing due timers in order.
    fn advance(&mut self, at: Time) {
        loop {
            self.timers.sort_by_key(|x| x.0);
            match self.timers.first() {
                Some(&(t, tok, host)) if t <= at => {
                    self.timers.remove(0);
                    self.now = self.now.max(t);
                    let s = self.call(host, |tr, c| tr.on_timer(c, tok));
                    self.wire.extend(s);
                }
                _ => break,
            }
        }
        self.now = at;
    }
    /// Deliver everything on the wire at `now + dt` (after due timers).
    fn step(&mut self, dt: Time) {
        let at = self.now + dt;
        self.advance(at);
        let w: Vec<Packet> = std::mem::take(&mut self.wire);
        for p in w {
            let s = self.deliver(&p);
            self.wire.extend(s);
        }
    }
}

fn lp_params() -> LpParams {
    LpParams {
        mss: MSS,
        header: 40,
        ctrl_size: 64,
        ect: true,
        react_ece: true,
        release: Release::Ewd,
        pace: true,
        idle_rtts: 2,
        ack_every: 2,
        late_acks: false,
        lp_rtt: false,
    }
}

fn lp_ack(r1: (u64, u64), r2: (u64, u64), ece: bool) -> Packet {
    let mut aux2 = (r2.1 - r2.0) as u32;
    if ece {
        aux2 |= crate::transport::lowprio::LP_ACK_ECE;
    }
    Packet { kind: KIND_LP_ACK, seq: r1.0, rank: (r1.1 - r1.0) as u32, aux: r2.0, aux2, ..Packet::default() }
}

#[test]
fn ecn_marked_lp_ack_releases_nothing_plain_one_releases_one() {
    let f = flow(1_000_000, 40);
    let p = lp_params();
    let mut lp = LpSender::new(&f);
    let mut out = Actions::new();
    let mut lx = cx(Time::ZERO, &f, &p, &mut out, 14_600, 1_000_000);
    assert!(lp.open(&mut lx, 10 * MSS, Time::us(40)));
    assert_eq!(out.sends.len(), 1, "paced: one packet now");
    out.clear();
    let mut lx = cx(Time::us(45), &f, &p, &mut out, 14_600, 1_000_000);
    lp.on_ack(&mut lx, &lp_ack((998_540, 1_000_000), (997_080, 998_540), true));
    assert!(out.sends.is_empty(), "ECE: no release");
    assert_eq!(lp.stats().ece_acks, 1);
    let mut lx = cx(Time::us(46), &f, &p, &mut out, 14_600, 1_000_000);
    lp.on_ack(&mut lx, &lp_ack((995_620, 997_080), (994_160, 995_620), false));
    assert_eq!(out.sends.len(), 1, "no ECE: exactly one release");
    let q = out.sends[0];
    assert_eq!(q.kind, KIND_LP_DATA);
    assert!(q.flags.has(PacketFlags::OPPORTUNISTIC) && q.flags.has(PacketFlags::DATA));
    assert_eq!((q.prio, q.ecn), (4, Ecn::Ect));
    // Both ACKs' ranges are known delivered, whatever their ECE.
    assert_eq!(lp.pending_delivered(), &[(994_160, 1_000_000)]);
}

/// Per-flow NIC limit (`host.tsq`): with room for two packets left by the HCP, an
/// unpaced 5-packet window sends two and holds three back; each packet that leaves the
/// NIC lets one more go; closing the loop forgets what is still held back.
#[test]
fn nic_limit_holds_back_lp_releases_until_the_nic_drains() {
    let f = flow(1_000_000, 40);
    let p = LpParams { pace: false, ..lp_params() };
    // The loop starts at the tail: a 1,360 B segment (1,400 B on the wire), then full ones.
    let (tail, wire) = (1_360 + 40, MSS + 40);
    let room = tail + wire;
    let mut lp = LpSender::new(&f);
    let mut out = Actions::new();
    let mut lx = cx(Time::ZERO, &f, &p, &mut out, 14_600, 1_000_000);
    lx.nic_room = room;
    assert!(lp.open(&mut lx, 5 * MSS, Time::us(40)));
    assert_eq!(out.sends.len(), 2, "two fit under the limit");
    assert_eq!((lp.stats().pkts, lp.stats().deferred), (2, 3));
    out.clear();
    let mut lx = cx(Time::us(1), &f, &p, &mut out, 14_600, 1_000_000);
    lx.nic_room = room;
    lp.on_tx_complete(&mut lx, tail);
    assert_eq!(out.sends.len(), 1, "one left the NIC: one more goes");
    // The HCP's own bytes shrink the room: nothing goes although one LP packet left.
    out.clear();
    let mut lx = cx(Time::us(2), &f, &p, &mut out, 14_600, 1_000_000);
    lx.nic_room = wire;
    lp.on_tx_complete(&mut lx, wire);
    assert!(out.sends.is_empty());
    lp.close();
    let mut lx = cx(Time::us(3), &f, &p, &mut out, 14_600, 1_000_000);
    lp.on_tx_complete(&mut lx, wire);
    lp.flush(&mut lx);
    assert!(out.sends.is_empty(), "a closed loop sends nothing held back");
    assert_eq!(lp.stats().pkts, 3);
}

/// `lcp_late_acks`: a loop opened at t = 0 (4-packet window paced over a 40 us RTT) gets
/// no LP ACK, so the idle rule ends it at 80 us. LP ACKs delayed behind HCP packets then
/// arrive at 500 us and 501 us: by default they release nothing (the loop is closed);
/// with `late_acks` the plain one releases exactly one packet and the ECE one none, and
/// the loop stays closed.
#[test]
fn late_lp_acks_release_only_with_the_option_and_without_ece() {
    for late in [false, true] {
        let f = flow(1_000_000, 40);
        let mut p = lp_params();
        p.late_acks = late;
        let mut lp = LpSender::new(&f);
        let mut out = Actions::new();
        let mut lx = cx(Time::ZERO, &f, &p, &mut out, 0, 1_000_000);
        assert!(lp.open(&mut lx, 4 * MSS, Time::us(40)));
        let (closed, paced) = drive_lp_timers(&mut lp, &f, &p, out.timers.clone());
        assert_eq!(closed, Some(Time::us(80)), "idle rule: 2 RTTs without an LP ACK");
        assert_eq!(out.sends.len() + paced, 4);
        assert!(!lp.is_open());
        out.clear();
        let mut lx = cx(Time::us(500), &f, &p, &mut out, 0, 1_000_000);
        lp.on_ack(&mut lx, &lp_ack((998_540, 1_000_000), (997_080, 998_540), false));
        assert_eq!(out.sends.len(), late as usize, "plain late LP ACK (late_acks = {late})");
        if late {
            assert_eq!(out.sends[0].seq, (1_000_000 / MSS) * MSS - 4 * MSS, "the segment below the window");
        }
        out.clear();
        let mut lx = cx(Time::us(501), &f, &p, &mut out, 0, 1_000_000);
        lp.on_ack(&mut lx, &lp_ack((995_620, 997_080), (994_160, 995_620), true));
        assert!(out.sends.is_empty(), "an ECE late LP ACK releases nothing");
        assert!(!lp.is_open() && out.timers.is_empty(), "no loop reopens");
        let st = lp.stats();
        assert_eq!((st.late_acks, st.late_ece, st.late_pkts), (2, 1, late as u64));
    }
}

/// Opportunistic packets' class in these tests.
fn p4(_s: u64) -> u8 {
    4
}

/// The LP loop's context at `now`: class 4, the HCP's highest byte `floor`, `buf_end`
/// bytes written into the send buffer.
fn cx<'a>(now: Time, f: &'a FlowInfo, p: &'a LpParams, out: &'a mut Actions, floor: u64, buf_end: u64) -> LpCx<'a> {
    LpCx { now, flow: f, p, out, floor, buf_end, prio: &p4, nic_room: u64::MAX }
}

/// Drive an LpSender's timers (pace, idle) in time order until the loop closes or none is
/// left; returns the time at which the loop closed, if it did, and the number of packets
/// the timers released.
fn drive_lp_timers(lp: &mut LpSender, f: &FlowInfo, p: &LpParams, timers: Vec<(Time, u64)>) -> (Option<Time>, usize) {
    let mut timers = timers;
    let mut out = Actions::new();
    let mut sent = 0;
    while let Some(i) = (0..timers.len()).min_by_key(|&i| timers[i].0) {
        let (at, tok) = timers.remove(i);
        out.clear();
        let (_, k, g) = untoken(tok);
        let mut lx = cx(at, f, p, &mut out, 0, 1_000_000);
        let was_open = lp.is_open();
        lp.on_timer(&mut lx, k, g);
        sent += out.sends.len();
        timers.extend(out.timers.iter().copied());
        if was_open && !lp.is_open() {
            return (Some(at), sent);
        }
    }
    (None, sent)
}

/// `lcp_rtt`: the idle rule's RTT. A first loop (opened at 0 with a 40 us RTT, no LP
/// round trip known yet) ends at 80 us either way. Its LP ACK arrives late, at 300 us,
/// echoing a send time of 0: the smoothed LP round trip is 300 us (recorded in both
/// modes). A second loop opens at 1,000 us with the same 40 us RTT: with `lp_rtt` its idle
/// length is 2 x 300 = 600 us, else 80 us. An LP ACK at 1,010 us with a 5 us round trip
/// brings the LP estimate to 300 - 300/8 + 5/8 = 263.125 us: with `lp_rtt` the idle length
/// becomes 526.25 us and, being shorter than the armed check (1,600 us), is re-armed at
/// 1,010 + 526.25 = 1,536.25 us, where the loop ends; without, it ends at 1,010 + 80 us.
#[test]
fn idle_rule_counts_the_lp_round_trip_with_lp_rtt() {
    for lp_rtt in [false, true] {
        let f = flow(1_000_000, 40);
        let mut p = lp_params();
        p.lp_rtt = lp_rtt;
        let mut lp = LpSender::new(&f);
        let mut out = Actions::new();
        let mut lx = cx(Time::ZERO, &f, &p, &mut out, 0, 1_000_000);
        assert!(lp.open(&mut lx, 4 * MSS, Time::us(40)));
        assert_eq!(lp.idle_len(), Time::us(80));
        let closed = drive_lp_timers(&mut lp, &f, &p, out.timers.clone()).0;
        assert_eq!(closed, Some(Time::us(80)), "first loop: no LP round trip known (lp_rtt = {lp_rtt})");
        out.clear();
        let mut ack = lp_ack((998_540, 1_000_000), (997_080, 998_540), false);
        ack.ts = Time::ZERO;
        let mut lx = cx(Time::us(300), &f, &p, &mut out, 0, 1_000_000);
        lp.on_ack(&mut lx, &ack);
        assert_eq!(lp.lp_srtt(), Some(Time::us(300)));
        assert!(out.sends.is_empty() && !lp.is_open(), "late ACK: no release, no reopening by default");
        out.clear();
        let mut lx = cx(Time::us(1_000), &f, &p, &mut out, 0, 1_000_000);
        assert!(lp.open(&mut lx, 4 * MSS, Time::us(40)));
        assert_eq!(lp.idle_len(), if lp_rtt { Time::us(600) } else { Time::us(80) });
        let mut timers = out.timers.clone();
        out.clear();
        let mut ack = lp_ack((992_700, 994_160), (991_240, 992_700), false);
        ack.ts = Time::us(1_005);
        let mut lx = cx(Time::us(1_010), &f, &p, &mut out, 0, 1_000_000);
        lp.on_ack(&mut lx, &ack);
        assert_eq!(lp.lp_srtt(), Some(Time(263_125_000)));
        assert_eq!(out.sends.len(), 1, "an ACK in an open loop releases one packet");
        let want = if lp_rtt { Time(526_250_000) } else { Time::us(80) };
        assert_eq!(lp.idle_len(), want);
        timers.extend(out.timers.iter().copied());
        let closed = drive_lp_timers(&mut lp, &f, &p, timers).0;
        let want = if lp_rtt { Time(1_536_250_000) } else { Time::us(1_090) };
        assert_eq!(closed, Some(want), "second loop ends 2 RTTs after its last LP ACK (lp_rtt = {lp_rtt})");
        assert_eq!(lp.stats().closed_idle, 2);
    }
}

#[test]
fn initial_window_is_paced_over_one_rtt_from_the_tail() {
    let f = flow(1_000_000, 40);
    let p = lp_params();
    let mut lp = LpSender::new(&f);
    let prio = |_s: u64| 5u8;
    let mut out = Actions::new();
    let rtt = Time::us(40);
    let mut lx = LpCx {
        now: Time::ZERO,
        flow: &f,
        p: &p,
        out: &mut out,
        floor: 0,
        buf_end: 1_000_000,
        prio: &prio,
        nic_room: u64::MAX,
    };
    lp.open(&mut lx, 8 * MSS, rtt);
    let mut seqs = vec![out.sends[0].seq];
    let mut times = vec![Time::ZERO];
    while let Some(&(at, tok)) = out.timers.iter().find(|&&(_, t)| untoken(t).1 == TIMER_LP_PACE) {
        let (_, kind, gen) = untoken(tok);
        out.clear();
        let mut lx = LpCx {
            now: at,
            flow: &f,
            p: &p,
            out: &mut out,
            floor: 0,
            buf_end: 1_000_000,
            prio: &prio,
            nic_room: u64::MAX,
        };
        lp.on_timer(&mut lx, kind, gen);
        for s in &out.sends {
            seqs.push(s.seq);
            times.push(at);
        }
    }
    assert_eq!(seqs.len(), 8);
    assert_eq!(seqs[0], (1_000_000 / MSS) * MSS, "the last (partial) segment first");
    assert!(seqs.windows(2).all(|w| w[1] + MSS == w[0]), "backwards by one segment: {seqs:?}");
    assert_eq!(times[7], Time::us(35), "8 packets at RTT/8 = 5 us spacing");
}

#[test]
fn without_ewd_the_loop_sends_at_line_rate_until_ece_or_idle() {
    // "w/o EWD" (Fig. 16): once open, opportunistic packets leave at the host's line rate
    // (10 Gbps: 1500 B every 1.2 us), beyond the initial window, until an ECE LP ACK or
    // the 2-RTT idle rule stops them; a plain LP ACK releases nothing extra.
    let f = flow(10_000_000, 40);
    let mut p = lp_params();
    p.release = Release::LineRate;
    p.pace = false;
    let mut lp = LpSender::new(&f);
    let mut out = Actions::new();
    let rtt = Time::us(40);
    let mut lx = cx(Time::ZERO, &f, &p, &mut out, 0, 10_000_000);
    assert!(lp.open(&mut lx, 4 * MSS, rtt), "a 4-packet initial window opens the loop");
    let mut times = vec![Time::ZERO];
    let pace = |o: &Actions| o.timers.iter().copied().find(|&(_, t)| untoken(t).1 == TIMER_LP_PACE);
    // A small event loop over every LP timer, with one plain LP ACK at 30 us.
    let mut timers: Vec<(Time, u64)> = out.timers.clone();
    let mut acked = false;
    while !timers.is_empty() {
        timers.sort_by_key(|x| x.0);
        let (at, tok) = timers.remove(0);
        if at > Time::us(300) {
            break;
        }
        out.clear();
        if !acked && at >= Time::us(30) {
            let mut lx = cx(at, &f, &p, &mut out, 0, 10_000_000);
            lp.on_ack(&mut lx, &lp_ack((9_998_540, 10_000_000), (9_997_080, 9_998_540), false));
            assert!(out.sends.is_empty(), "no release per ACK without EWD");
            acked = true;
        }
        let (_, k, g) = untoken(tok);
        let mut lx = cx(at, &f, &p, &mut out, 0, 10_000_000);
        lp.on_timer(&mut lx, k, g);
        times.extend(out.sends.iter().map(|_| at));
        timers.extend(out.timers.iter().copied());
    }
    // Idle rule: no LP ACK since 30 us, so the loop ends at 30 + 2 x 40 = 110 us.
    assert!(!lp.is_open());
    let n = times.len();
    assert_eq!(times[1], Time(1_200_000), "one 1500 B packet per 1.2 us");
    assert!(times.windows(2).all(|w| w[1] - w[0] == Time(1_200_000)));
    let last = *times.last().unwrap();
    assert!(last < Time::us(110) && last + Time(1_200_000) >= Time::us(110), "{last:?}");
    assert!(n > 4 * 10, "far beyond the 4-packet initial window: {n} packets");
    // ECE stops the line-rate sending at once.
    let mut lp = LpSender::new(&f);
    out.clear();
    let mut lx = cx(Time::ZERO, &f, &p, &mut out, 0, 10_000_000);
    lp.open(&mut lx, 4 * MSS, rtt);
    let (at, tok) = pace(&out).unwrap();
    out.clear();
    let mut lx = cx(at, &f, &p, &mut out, 0, 10_000_000);
    lp.on_ack(&mut lx, &lp_ack((9_998_540, 10_000_000), (0, 0), true));
    let (_, k, g) = untoken(tok);
    lp.on_timer(&mut lx, k, g);
    assert!(out.sends.is_empty() && pace(&out).is_none(), "ECE: sending suspended");
}

#[test]
fn delayed_case1_loop_opens_at_the_first_ack_unless_the_hcp_has_cut_its_window() {
    // An identified large flow opens its case-1 loop in its 2nd RTT, i.e. at its first HCP
    // ACK (here at 70 us, later than the 40 us base RTT, as under a queue), with
    // I = BDP - the HCP's 2nd-round window. If that ACK carries ECE (DCTCP cuts its window and leaves
    // start-up: the window has reached its maximum, PPT §3.1), no case-1 loop opens.
    for ece in [false, true] {
        let mut h = H::new(json!({}), flow(1_000_000, 40));
        let s = h.start();
        assert!(s.iter().all(|p| p.kind == KIND_DATA), "large: no LCP in the 1st RTT");
        h.wire.clear();
        h.advance(Time::us(60));
        assert!(h.log.iter().all(|(_, p)| p.kind == KIND_DATA), "no LCP before the first ACK");
        let mut d = s[0];
        if ece {
            d.ecn = Ecn::Ce;
        }
        let acks = h.deliver(&d);
        h.advance(Time::us(70));
        for a in acks {
            let out = h.deliver(&a);
            h.wire.extend(out);
        }
        assert_eq!(h.t.engine().hcp(0).unwrap().ssthresh() != u64::MAX, ece, "start-up over iff marked");
        let lp: Vec<Time> = h.log.iter().filter(|(_, p)| p.kind == KIND_LP_DATA).map(|(t, _)| *t).collect();
        if ece {
            assert!(lp.is_empty(), "{lp:?}");
            assert_eq!(h.t.lp_stats(0).loops, 0);
        } else {
            assert_eq!(lp, vec![Time::us(70)], "paced: the first packet at the ACK");
            let lcp = h.t.engine().lcp(0).unwrap();
            // BDP 50 KB minus the HCP's 2nd-round window (2 x 14.6 KB): 20.8 KB, 14
            // packets, so that HCP + LCP stay within the BDP (PPT §3).
            assert_eq!(lcp.stats().pkts + lcp.to_pace(), 14);
        }
        // Later ACKs open no further case-1 loop.
        h.advance(Time::us(500));
        assert!(h.t.lp_stats(0).loops <= 1);
    }
}

#[test]
fn loop_ends_after_two_rtts_without_lp_acks() {
    let f = flow(1_000_000, 40);
    let mut p = lp_params();
    p.pace = false;
    let mut lp = LpSender::new(&f);
    let rtt = Time::us(40);
    let mut out = Actions::new();
    let mut lx = cx(Time::ZERO, &f, &p, &mut out, 0, 1_000_000);
    lp.open(&mut lx, 4 * MSS, rtt);
    let idle = |o: &Actions| o.timers.iter().copied().find(|&(_, t)| untoken(t).1 == TIMER_LP_IDLE).unwrap();
    let (at, tok) = idle(&out);
    assert_eq!(at, Time::us(80));
    // An LP ACK at 60 us postpones the end to 60 + 80 = 140 us.
    out.clear();
    let mut lx = cx(Time::us(60), &f, &p, &mut out, 0, 1_000_000);
    lp.on_ack(&mut lx, &lp_ack((998_540, 1_000_000), (0, 0), false));
    out.clear();
    let (_, k, g) = untoken(tok);
    let mut lx = cx(at, &f, &p, &mut out, 0, 1_000_000);
    lp.on_timer(&mut lx, k, g);
    assert!(lp.is_open(), "an LP ACK came 20 us ago");
    let (at2, tok2) = idle(&out);
    assert_eq!(at2, Time::us(140));
    out.clear();
    let (_, k, g) = untoken(tok2);
    let mut lx = cx(Time::us(139), &f, &p, &mut out, 0, 1_000_000);
    lp.on_timer(&mut lx, k, g);
    assert!(lp.is_open(), "an early (stale-time) firing does not close it");
    let (at3, tok3) = idle(&out);
    let (_, k, g) = untoken(tok3);
    out.clear();
    let mut lx = cx(at3, &f, &p, &mut out, 0, 1_000_000);
    lp.on_timer(&mut lx, k, g);
    assert!(!lp.is_open(), "2 RTTs without LP ACK end the loop");
    // A late LP ACK records its range but releases nothing.
    out.clear();
    let mut lx = cx(Time::us(200), &f, &p, &mut out, 0, 1_000_000);
    lp.on_ack(&mut lx, &lp_ack((995_620, 997_080), (0, 0), false));
    assert!(out.sends.is_empty());
}

#[test]
fn lcp_stops_at_the_hcp_frontier() {
    let f = flow(10 * MSS, 40);
    let mut p = lp_params();
    p.pace = false;
    let mut lp = LpSender::new(&f);
    let mut out = Actions::new();
    let mut lx = cx(Time::ZERO, &f, &p, &mut out, 7 * MSS, 10 * MSS);
    assert!(lp.open(&mut lx, 10 * MSS, Time::us(40)));
    assert_eq!(out.sends.iter().map(|s| s.seq / MSS).collect::<Vec<_>>(), vec![9, 8, 7]);
    assert!(!lp.is_open(), "met the HCP: closed");
}

#[test]
fn receiver_acks_every_second_opportunistic_packet_with_both_ranges() {
    let f = flow(1_000_000, 40);
    let p = lp_params();
    let mut r = LpReceiver::new();
    let d = |seq: u64, ce: bool| Packet {
        kind: KIND_LP_DATA,
        seq,
        payload: MSS as u32,
        prio: 6,
        ecn: if ce { Ecn::Ce } else { Ecn::Ect },
        ..Packet::default()
    };
    assert!(r.on_data(&p, &f, &d(10 * MSS, false), 0).is_none());
    let a = r.on_data(&p, &f, &d(9 * MSS, true), 0).expect("second packet: ACK");
    let (r1, r2, ece) = parse_lp_ack(&a);
    assert_eq!((r1, r2, ece), ((10 * MSS, 11 * MSS), (9 * MSS, 10 * MSS), true));
    assert_eq!((a.kind, a.prio, a.src, a.dst, a.size), (KIND_LP_ACK, 6, 1, 0, 64));
    assert!(r.on_data(&p, &f, &d(8 * MSS, false), 0).is_none());
    let a = r.on_data(&p, &f, &d(7 * MSS, false), 0).unwrap();
    assert!(!parse_lp_ack(&a).2, "ECE state resets per ACK");
    // Through the transport: only every second LP packet produces an LP ACK.
    let mut h = H::new(json!({"identification": false}), flow(1_000_000, 40));
    let sent = h.start();
    let lps: Vec<Packet> = sent.iter().copied().filter(|p| p.kind == KIND_LP_DATA).collect();
    assert!(!lps.is_empty());
    let mut all_lp = lps.clone();
    h.advance(Time::us(40));
    all_lp.extend(h.wire.iter().copied().filter(|p| p.kind == KIND_LP_DATA));
    assert!(all_lp.len() >= 4, "{}", all_lp.len());
    let mut n_acks = Vec::new();
    for p in &all_lp[..4] {
        n_acks.push(h.deliver(p).iter().filter(|a| a.kind == KIND_LP_ACK).count());
    }
    assert_eq!(n_acks, vec![0, 1, 0, 1]);
}

#[test]
fn large_first_write_tags_p3_p7_small_flows_start_at_p0_p4() {
    // Large: 1 MB with the default 2 GB buffer (first write 1 MB > 100 KB).
    let mut h = H::new(json!({}), flow(1_000_000, 40));
    let s = h.start();
    assert!(s.iter().all(|p| p.kind == KIND_DATA && p.prio == 3), "large: P3, LCP delayed to the 2nd RTT");
    assert!(h.t.view(0).unwrap().large);
    h.step(Time::us(20)); // data arrives
    h.step(Time::us(20)); // ACKs arrive at 40 us: the 2nd RTT, the LCP opens
    let lp: Vec<Packet> = h.wire.iter().copied().filter(|p| p.kind == KIND_LP_DATA).collect();
    assert!(!lp.is_empty() && lp.iter().all(|p| p.prio == 7), "LCP of a large flow: P7");
    // A small first write (send buffer 64 KB < threshold 100 KB): unidentified, P0 / P4.
    let mut h = H::new(json!({"send_buffer": "64KB"}), flow(1_000_000, 40));
    let s = h.start();
    assert!(!h.t.view(0).unwrap().large);
    assert!(s.iter().filter(|p| p.kind == KIND_DATA).all(|p| p.prio == 0));
    assert!(s.iter().filter(|p| p.kind == KIND_LP_DATA).all(|p| p.prio == 4));
    // The LCP tail is the end of the buffered data (64 KB), not the end of the flow.
    let top = s.iter().filter(|p| p.kind == KIND_LP_DATA).map(|p| p.seq + p.payload as u64).max().unwrap();
    assert_eq!(top, (64_000 / MSS) * MSS);
    // Demotion in step: thresholds [4 pkts, 8 pkts, 12 pkts] of bytes sent by both loops.
    let th: Vec<Bytes> = [4, 8, 12].iter().map(|k| Bytes(k * MSS)).collect();
    let cfg = json!({"identification": false, "thresholds": th, "init_cwnd": 2});
    let mut h = H::new(cfg, flow(100 * MSS, 40));
    h.start();
    let mut guard = 0;
    while h.completions == 0 && guard < 200 {
        h.step(Time::us(20));
        guard += 1;
    }
    assert_eq!(h.completions, 1);
    let mut sent = 0u64;
    for (_, p) in h.log.iter().filter(|(_, p)| p.is_data()) {
        let cls = (sent / (4 * MSS)).min(3) as u8;
        let want = if p.kind == KIND_LP_DATA { cls + 4 } else { cls };
        assert!(p.prio == want || p.prio + 1 == want, "packet {} in P{} after {sent} B (want P{want})", p.seq, p.prio);
        sent += p.payload as u64;
    }
    assert!(h.log.iter().any(|(_, p)| p.prio == 3) && h.log.iter().any(|(_, p)| p.prio == 0));
}

/// Drive one flow with 5 us steps (RTT 10 us), marking CE on every data packet on the wire
/// during the steps for which `mark(step)` is true; stop at the first case-2 loop.
/// Returns (step of the opening, state then, initial window in packets, alpha samples seen
/// after start-up ended).
fn run_until_case2(
    cfg: serde_json::Value,
    steps: usize,
    mark: impl Fn(usize) -> bool,
) -> Option<(usize, DualView, u64, Vec<f64>)> {
    let mut h = H::new(cfg, flow(1_000_000_000, 10));
    h.start();
    assert_eq!(h.t.lp_stats(0).loops, 0, "BDP 12.5 KB < initial window: no case-1 loop");
    let mut alphas = Vec::new();
    for i in 0..steps {
        if mark(i) {
            for p in h.wire.iter_mut().filter(|p| p.kind == KIND_DATA) {
                p.ecn = Ecn::Ce;
            }
        }
        let before = h.t.lp_stats(0).pkts;
        h.step(Time::us(5));
        let v = h.t.view(0).unwrap();
        if v.lp.case2_loops > 0 {
            let lcp = h.t.engine().lcp(0).unwrap();
            return Some((i, v, lcp.stats().pkts - before + lcp.to_pace(), alphas));
        }
        if v.startup_over {
            alphas.push(v.alpha);
        }
    }
    None
}

#[test]
fn case2_window_is_eq2_within_the_gap_to_w_max() {
    // A tiny g keeps alpha at its initial value. Marks at step 0 end start-up (first cut);
    // W_max then only counts windows after that cut, so while cwnd grows the gap
    // W_max - cwnd is 0 and no case-2 loop opens, whatever Eq. 2 says.
    let never_again = |i: usize| i == 0;
    for init_alpha in [0.1, 0.45] {
        let cfg = json!({"init_alpha": init_alpha, "g": 1e-6, "alpha_window": 1});
        let r = run_until_case2(cfg, 200, never_again);
        assert!(r.is_none(), "alpha {init_alpha}: no gap, no loop: {:?}", r.map(|x| (x.0, x.1, x.2)));
    }
    // A second cut at step 100 (cwnd x (1 - alpha/2)) opens a gap. With alpha = 0.1 the
    // gap (alpha/2 = 5% of W_max) is below Eq. 2's (1/2 - 0.1) = 40% of W_max: I = the gap.
    // With alpha = 0.45, Eq. 2's 5% is below the gap (22.5%): I = Eq. 2.
    for init_alpha in [0.1, 0.45] {
        let cfg = json!({"init_alpha": init_alpha, "g": 1e-6, "alpha_window": 1});
        let (i, v, pkts, _) = run_until_case2(cfg, 400, |i| i == 0 || i == 100).expect("a loop after the 2nd cut");
        assert!(i > 100, "opened at step {i}");
        let eq2 = ((0.5 - v.alpha) * v.w_max as f64) as u64;
        let gap = v.w_max - v.cwnd;
        let want = eq2.min(gap);
        if init_alpha < 0.2 {
            assert!(gap < eq2, "{v:?}");
        } else {
            assert!(eq2 < gap, "{v:?}");
        }
        assert_eq!(pkts, (want + MSS / 2) / MSS, "alpha {init_alpha}: I = min(Eq. 2, W_max - cwnd) = {want} B, {v:?}");
    }
}

#[test]
fn case2_waits_for_alpha_to_reach_its_minimum_since_start_up() {
    // A large initial window (200 packets) so that regrowth (1 packet per round) does not
    // close the gap before alpha has decayed. Start-up ends at step 0; 40 unmarked steps
    // let alpha decay (g = 1/16); marks on every packet for steps 40..52 raise alpha and
    // cut the window. The loop opens only once alpha is back at the lowest value it had
    // since start-up (with the minimum over the last 8 rounds it opened 8 rounds = 16
    // steps after the marks, at alpha well above that).
    let mark = |i: usize| i == 0 || (40..52).contains(&i);
    let cfg = json!({"init_alpha": 0.5, "init_cwnd": 200});
    let (i, v, pkts, alphas) = run_until_case2(cfg, 1000, mark).expect("a case-2 loop in the end");
    let lowest = alphas[..alphas.len() - 1].iter().copied().fold(f64::INFINITY, f64::min);
    assert!(v.alpha <= lowest, "opened at alpha {} above the minimum since start-up {lowest}", v.alpha);
    let peak = alphas.iter().copied().fold(0.0, f64::max);
    assert!(peak > 2.0 * lowest, "the marks raised alpha: {peak} vs {lowest}");
    assert!(i > 52 + 16 + 4, "opened at step {i}");
    assert!(pkts > 0 && v.cwnd < v.w_max, "{v:?}");
}

#[test]
fn ppt_swift_opens_a_loop_when_the_delay_falls_below_target() {
    // Base RTT 10 us: BDP 12.5 KB < the 10-packet initial window, so case 1 opens nothing.
    // Target 30 us. Steps of 20 us give an RTT of 40 us (above), steps of 5 us 10 us (below).
    let cfg = json!({"identification": false, "base_target": "30us", "flow_scaling": false});
    let mut h = H::new_swift(cfg, flow(20_000_000, 10));
    assert_eq!(h.t.name(), "ppt_swift");
    let s = h.start();
    assert!(s.iter().all(|p| p.kind == KIND_DATA && p.ecn == Ecn::NotEct), "Swift HCP: not ECT");
    // Steps below target until the `n`-th case-2 loop opens; returns the state right after
    // the ACK that opened it and the loop's initial window in packets.
    fn fall_below(h: &mut H, n: u32) -> (DualView, u64) {
        let before = h.t.lp_stats(0).pkts;
        for _ in 0..4 {
            h.advance(h.now + Time::us(5));
            let w: Vec<Packet> = std::mem::take(&mut h.wire);
            let mut opened = None;
            for p in w {
                let out = h.deliver(&p);
                h.wire.extend(out);
                if opened.is_none() && h.t.lp_stats(0).case2_loops == n {
                    let lcp = h.t.engine().lcp(0).unwrap();
                    opened = Some((h.t.view(0).unwrap(), lcp.stats().pkts - before + lcp.to_pace()));
                }
            }
            if let Some(o) = opened {
                return o;
            }
        }
        panic!("no loop opened when the delay fell below target: {:?}", h.t.view(0));
    }
    // Above target for 6 RTTs: Swift cuts (x 0.8 per RTT), no loop opens.
    for _ in 0..12 {
        h.step(Time::us(20));
    }
    let v = h.t.view(0).unwrap();
    assert_eq!(h.t.lp_stats(0).loops, 0, "{v:?}");
    assert!(v.cwnd < v.w_max / 2, "{v:?}");
    // The delay falls below target: the first such ACK opens one loop with
    // I = min(W_max - cwnd, max_mdf x W_max) = W_max / 2 here (the gap is larger).
    let (v, pkts) = fall_below(&mut h, 1);
    assert!(v.w_max - v.cwnd > v.w_max / 2);
    assert_eq!(pkts, (v.w_max / 2 + MSS / 2) / MSS, "I = W_max / 2, {v:?}");
    assert!(h.log.iter().filter(|(_, p)| p.kind == KIND_LP_DATA).all(|(_, p)| p.ecn == Ecn::Ect && p.prio == 4));
    // Staying below target opens nothing more (the delay does not fall again); the window
    // grows back past W_max.
    for _ in 0..80 {
        h.step(Time::us(5));
    }
    assert_eq!(h.t.lp_stats(0).case2_loops, 1);
    let v = h.t.view(0).unwrap();
    assert!(!v.lp_open && v.cwnd == v.w_max, "{v:?}");
    // One RTT above target (one cut, x 0.8), then below: I = the gap W_max - cwnd.
    h.step(Time::us(20));
    h.step(Time::us(20));
    let (v, pkts) = fall_below(&mut h, 2);
    let gap = v.w_max - v.cwnd;
    assert!(gap > 0 && gap < v.w_max / 2, "{v:?}");
    assert_eq!(pkts, (gap + MSS / 2) / MSS, "I = W_max - cwnd, {v:?}");
}

#[test]
fn loops_meet_without_resending_known_delivered_bytes() {
    for cfg in [json!({}), json!({"ewd": false}), json!({"send_buffer": "64KB"})] {
        let size = 300 * MSS + 17;
        let mut h = H::new(cfg.clone(), flow(size, 40));
        h.start();
        // Known delivered at the sender, by time: ranges from LP ACKs and cumulative ACKs.
        let mut known: Vec<(u64, u64)> = Vec::new();
        let mut steps = 0;
        while h.completions == 0 && steps < 2000 {
            steps += 1;
            h.advance(h.now + Time::us(20));
            let w: Vec<Packet> = std::mem::take(&mut h.wire);
            for p in w {
                if p.dst == 0 {
                    match p.kind {
                        KIND_LP_ACK => {
                            let (r1, r2, _) = parse_lp_ack(&p);
                            crate::transport::lowprio::insert_range(&mut known, r1.0, r1.1);
                            crate::transport::lowprio::insert_range(&mut known, r2.0, r2.1);
                        }
                        _ => crate::transport::lowprio::insert_range(&mut known, 0, p.ack),
                    }
                }
                let before = known.clone();
                let s = h.deliver(&p);
                for q in s.iter().filter(|q| q.is_data()) {
                    let (a, b) = (q.seq, q.seq + q.payload as u64);
                    for &(x, y) in &before {
                        assert!(b <= x || a >= y, "{cfg}: sent [{a},{b}) already known delivered in [{x},{y})");
                    }
                }
                h.wire.extend(s);
            }
        }
        assert_eq!(h.completions, 1, "{cfg}: completes exactly once");
        assert!(h.t.engine().receiver_complete(0));
        let lp_bytes = h.t.lp_stats(0).bytes;
        assert!(lp_bytes > 0, "{cfg}: the LCP contributed");
        // Bytes still in flight from the LCP when the HCP reaches them are sent twice (the
        // HCP cannot know yet); that is bounded by the two windows in flight at the crossing.
        let sent: u64 = h.log.iter().filter(|(_, p)| p.is_data()).map(|(_, p)| p.payload as u64).sum();
        assert!(sent >= size && sent - size <= 40 * MSS, "{cfg}: {} duplicate bytes", sent - size);
    }
}

#[test]
fn hypothetical_fills_the_gap_to_a_fraction_of_mw_each_round() {
    // 10 Gbps, base RTT 40 us (20 us each way): BDP = 50,000 B; initial window
    // 10 x 1460 = 14,600 B; no ECN marks, so the HCP stays in slow start (+1 MSS per
    // ACK). MW = max(BDP, largest cwnd so far). At each round end (and at the start) a
    // fresh loop sends n = (fill x MW - cwnd + MSS/2) / MSS opportunistic packets, 0 when
    // fill x MW <= cwnd, paced over the round (RTT 40 us). The rounds, by hand:
    //   round 1, t = 0 (start): cwnd 14,600, MW 50,000;
    //   round 2, t = 40 us, 1st ACK (snd_una 1,460 >= round end 0): cwnd 16,060, MW 50,000,
    //     next round end = snd_max = 14,600 + 2 x 1,460 = 17,520;
    //   round 3, t = 80 us, 2nd ACK of that step (snd_una 17,520): cwnd = 29,200 (after
    //     round 1's 10 ACKs) + 2 x 1,460 = 32,120, MW 50,000; next end 43,800 + 4 x 1,460 = 49,640;
    //   round 4, t = 120 us, 4th ACK (snd_una 49,640): cwnd = 58,400 + 4 x 1,460 = 64,240 = MW.
    // fill 0.5: 25,000 - 14,600 = 10,400 B -> 7; 25,000 - 16,060 = 8,940 -> 6; then < 0 -> 0, 0.
    // fill 1.0: 35,400 -> 24; 33,940 -> 23; 17,880 -> 12; 0 -> 0.
    // fill 1.5: 75,000 - 14,600 = 60,400 -> 41; 58,940 -> 40; 42,880 -> 29;
    //           96,360 - 64,240 = 32,120 -> 22.
    // fill 0.25: 12,500 < every cwnd -> 0 in every round.
    let cases: [(f64, [usize; 4]); 4] =
        [(0.25, [0, 0, 0, 0]), (0.5, [7, 6, 0, 0]), (1.0, [24, 23, 12, 0]), (1.5, [41, 40, 29, 22])];
    for (fill, want) in cases {
        // fill 1.0 is the default: leave the field out.
        let cfg = if fill == 1.0 {
            json!({"hypothetical": true})
        } else {
            json!({"hypothetical": true, "hypothetical_fill": fill})
        };
        let mut h = H::new(cfg, flow(10_000_000, 40));
        h.start();
        for _ in 0..8 {
            h.step(Time::us(20));
        }
        assert_eq!(h.now, Time::us(160));
        if fill == 1.0 {
            // 1.0 given explicitly is the default, packet for packet; the counts above for
            // fill 1.0 are the rule before the option existed (MW - cwnd each round).
            let mut e = H::new(json!({"hypothetical": true, "hypothetical_fill": 1.0}), flow(10_000_000, 40));
            e.start();
            for _ in 0..8 {
                e.step(Time::us(20));
            }
            assert_eq!(format!("{:?}", e.log), format!("{:?}", h.log));
        }
        let lp: Vec<(Time, Packet)> = h.log.iter().filter(|(_, p)| p.kind == KIND_LP_DATA).copied().collect();
        assert!(lp.iter().all(|(_, p)| p.prio == 4 && p.ecn == Ecn::NotEct), "no scheduling, no LCP ECN");
        let v = h.t.view(0).unwrap();
        assert_eq!(v.w_max, v.cwnd.max(50_000), "fill {fill}: MW = the largest cwnd, at least the BDP");
        for (r, &n) in want.iter().enumerate() {
            let (from, to) = (Time::us(40 * r as u64), Time::us(40 * (r as u64 + 1)));
            let round: Vec<Time> = lp.iter().map(|x| x.0).filter(|t| *t >= from && *t < to).collect();
            assert_eq!(round.len(), n, "fill {fill}: round {}", r + 1);
            // Paced: packet k at the round's start + k x (40 us / n).
            for (k, t) in round.iter().enumerate() {
                assert_eq!(*t, from + Time(Time::us(40).0 / n as u64 * k as u64), "fill {fill}, round {}", r + 1);
            }
        }
    }
}

#[test]
fn switches_and_ablations() {
    // lcp = false: plain DCTCP with scheduling; no opportunistic packet ever.
    let mut h = H::new(json!({"lcp": false}), flow(1_000_000, 40));
    h.start();
    for _ in 0..50 {
        h.step(Time::us(20));
    }
    assert!(h.log.iter().all(|(_, p)| !p.flags.has(PacketFlags::OPPORTUNISTIC)));
    // scheduling = false: HCP in P0, LCP in P4 even for an identified large flow.
    let mut h = H::new(json!({"scheduling": false}), flow(1_000_000, 40));
    h.start();
    h.step(Time::us(20));
    h.step(Time::us(20));
    assert!(h.log.iter().all(|(_, p)| p.prio == 0 || p.prio == 4));
    assert!(h.wire.iter().any(|p| p.kind == KIND_LP_DATA));
    // lcp_ecn = false: opportunistic packets are Not-ECT.
    let mut h = H::new(json!({"lcp_ecn": false, "identification": false}), flow(1_000_000, 40));
    let s = h.start();
    assert!(s.iter().filter(|p| p.kind == KIND_LP_DATA).all(|p| p.ecn == Ecn::NotEct));
    // ewd = false: line rate from the first packet (see without_ewd_the_loop_sends_at_line_rate).
    let mut h = H::new(json!({"ewd": false, "identification": false}), flow(1_000_000, 40));
    let s = h.start();
    assert_eq!(s.iter().filter(|p| p.kind == KIND_LP_DATA).count(), 1);
    // Identified large flows open their LCP one RTT late; unidentified ones at once.
    let mut h = H::new(json!({"identification": false}), flow(1_000_000, 40));
    assert_eq!(h.start().iter().filter(|p| p.kind == KIND_LP_DATA).count(), 1, "paced: first packet now");
    let ecn_k = recommended_ecn_k(&net(), LAMBDA_HCP, LAMBDA_LCP);
    // C x RTT = 10 Gbps x 40 us = 50 KB.
    assert_eq!(ecn_k[0], Bytes(8_500));
    assert_eq!(ecn_k[3], Bytes(8_500));
    assert_eq!(ecn_k[4], Bytes(5_000));
    assert_eq!(ecn_k.len(), 8);
}

#[test]
fn config_errors_name_the_field() {
    let e = |v| Ppt::from_config(&v, &net()).err().unwrap().field();
    assert_eq!(e(json!({"thresholds": ["1B", "2B", "3B", "4B"]})), "transport.thresholds");
    assert_eq!(e(json!({"alpha_window": 33})), "transport.alpha_window");
    assert_eq!(e(json!({"ewd": "yes"})), "transport.ewd");
    assert_eq!(e(json!({"lcp_idle_rtts": 0})), "transport.lcp_idle_rtts");
    assert_eq!(e(json!({"lcp_rtt": "srtt"})), "transport.lcp_rtt");
    assert!(Ppt::from_config(&json!({"lcp_rtt": "lp"}), &net()).is_ok());
    assert!(Ppt::from_config(&json!({"lcp_rtt": "hcp"}), &net()).is_ok());
    assert_eq!(e(json!({"ecn": false})), "transport.ecn");
    assert_eq!(e(json!({"lambda": 0.1})), "transport.lambda");
    for bad in [json!(0.0), json!(-0.5), json!("1.0")] {
        assert_eq!(e(json!({"hypothetical": true, "hypothetical_fill": bad})), "transport.hypothetical_fill");
    }
    // Only meaningful in the hypothetical DCTCP: given without it, an error (even at 1.0).
    for fill in [1.0, 0.5] {
        let err = Ppt::from_config(&json!({"hypothetical_fill": fill}), &net()).err().unwrap();
        assert_eq!(err.field(), "transport.hypothetical_fill");
        assert!(err.to_string().contains("hypothetical = true"), "{err}");
    }
    assert!(Ppt::from_config(&json!({"hypothetical": true, "hypothetical_fill": 1.5}), &net()).is_ok());
    let mut n = net();
    n.priorities = 1;
    assert_eq!(Ppt::from_config(&json!({}), &n).err().unwrap().field(), "transport.lcp");
    assert!(Ppt::from_config(&json!({"lcp": false}), &n).is_ok());
    let e = |v| Ppt::from_config_swift(&v, &net()).err().unwrap().field();
    assert_eq!(e(json!({"alpha_window": 4})), "transport.alpha_window");
    assert_eq!(e(json!({"hypothetical_fill": 0.5})), "transport.hypothetical_fill");
    assert_eq!(e(json!({"ecn": true})), "transport.ecn");
    assert_eq!(e(json!({"max_mdf": 2})), "transport.max_mdf");
    assert_eq!(e(json!({"lcp_idle_rtts": 0})), "transport.lcp_idle_rtts");
    assert!(Ppt::from_config_swift(&json!({"base_target": "20us", "send_buffer": "1MB"}), &net()).is_ok());
}
