//! pFabric's end host (Alizadeh et al., "pFabric: Minimal Near-Optimal Datacenter Transport",
//! SIGCOMM 2013, §4.2 "rate control"), as the `pfabric` protocol. It is meant to run over the
//! `pfabric` switch policy (`network.queue_policy = "pfabric"`, `queue/pfabric.rs`), which
//! serves the smallest rank first and drops the largest rank when its small buffer is full;
//! together they approximate shortest-remaining-processing-time scheduling of the fabric.
//!
//! # What is modelled
//! - **Priority in every packet**: a data packet's `rank` is the flow's remaining size at the
//!   moment it is sent: the flow size minus the payload bytes acknowledged so far (cumulative
//!   and selective), so the rank falls as the flow progresses (pFabric §4.1 "the remaining
//!   flow size"). ACKs and probes carry rank 0 (they are tiny; pFabric's ACKs ride at the top).
//! - **Start at line rate**: a flow starts with `init_cwnd` packets, one bandwidth-delay
//!   product of its path by default (the paper's "flows start at line rate").
//! - **Window** (in packets): +1 per newly acknowledged packet below `ssthresh` (slow start),
//!   +1/cwnd above (additive increase). There is no reaction to ECN (pFabric does not mark).
//! - **No fast retransmit, no duplicate-ACK recovery**: loss is found only by the
//!   retransmission timer, a small fixed `min_rto` (about three RTTs). On a timeout:
//!   `ssthresh = max(cwnd/2, 2)`, `cwnd = 1` and the sender goes back to the first
//!   unacknowledged packet, resending every packet it holds no acknowledgement for (the
//!   receiver acknowledges each packet selectively, so delivered ones are skipped).
//! - **Probe mode**: after `prob_cap` consecutive timeouts (no new data acknowledged in
//!   between), the flow stops sending data and sends one minimum-size probe per timeout
//!   instead; the first acknowledgement of a probe (or of data) ends probe mode, and the flow
//!   restarts from one packet in slow start (the ns-2 pFabric agent's behaviour, `prob_cap_`
//!   = 5 in the published scripts).
//!
//! # Choices where the paper leaves room
//! - The timeout is fixed (no exponential back-off): the paper's "fixed RTO"; repeated
//!   timeouts lead to probe mode instead of ever longer waits.
//! - Default `min_rto` = 3 x the flow's base RTT (pFabric's "about 3 RTTs"; PASE's Table 3
//!   sets 1 ms for its 300 us RTT, which a scenario writes explicitly).
//! - The probe is a header-only control packet (`net.ctrl_size` on the wire) rather than a
//!   1-byte segment: the network sees the same minimum-size packet, and the receiver answers
//!   it with its cumulative ACK.
//! - Every data packet is acknowledged at once (no delayed ACK); an ACK carries the
//!   cumulative ACK and the one packet it answers (a one-block SACK), which is all the sender
//!   needs to skip delivered packets when it goes back.
//! - Sender and receiver keep the packets acknowledged / held as a window from the first
//!   missing one ([`SegSet`]), so a long-lived background flow costs memory for its flight
//!   only. `pase` reuses it.
//! - No cap on the window (`max_cwnd` optional): pFabric's switches, not the window, decide
//!   who is served; a flow's excess is dropped by rank.
//! - All packets use one priority class (`prio`, default 0): pFabric's switch ignores classes.
//!   The host NIC discipline is the scenario's `[host]` setting (a Linux host interleaves its
//!   own flows by round robin; the test scenarios use one flow per sender most of the time).
//!
//! # Header layout
//! Data (`kind = KIND_DATA`, flag `DATA`): `seq` = byte offset, `payload`, `rank` = remaining
//! bytes (saturated to `u32::MAX`), `ts` = send time. ACK (`KIND_ACK`): `ack` = cumulative
//! byte, `seq`/`aux` = the byte range of the packet acknowledged (empty for a probe's ACK),
//! `ts` echoed. Probe (`KIND_PROBE`): `ts` = send time.
//!
//! # Configuration (`protocol = "pfabric"`)
//! `init_cwnd` (packets; default one BDP of the flow's path, rounded up), `min_rto` (default
//! 3 x base RTT), `prob_cap` (5), `max_cwnd` (packets, none), `prio` (0).

use crate::packet::{FlowId, Packet, PacketFlags};
pub use crate::transport::segset::SegSet;
use crate::transport::{token, untoken, Ctx, FlowInfo, FlowStats, NetInfo, TimerSlot, Transport};
use crate::units::Time;
use serde::Deserialize;

/// `Packet::kind` of a data packet.
pub const KIND_DATA: u8 = 1;
/// `Packet::kind` of an acknowledgement.
pub const KIND_ACK: u8 = 2;
/// `Packet::kind` of a probe (probe mode).
pub const KIND_PROBE: u8 = 3;
/// Timer kind of the retransmission timer.
pub const TIMER_RTO: u8 = 1;

/// The `[transport]` table of `protocol = "pfabric"` (without `protocol`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PfabricConfig {
    /// Initial window, packets; `None` = one BDP of the flow's path.
    pub init_cwnd: Option<u64>,
    /// Fixed retransmission timeout; `None` = 3 x the flow's base RTT.
    pub min_rto: Option<Time>,
    /// Consecutive timeouts after which the flow enters probe mode.
    pub prob_cap: Option<u32>,
    /// Cap on the window, packets; `None` = no cap.
    pub max_cwnd: Option<u64>,
    /// Priority class of every packet.
    pub prio: Option<u8>,
}

/// Errors of the protocol's table (the shared shape, [`crate::config::ProtocolConfigError`]).
pub type PfabricConfigError = crate::config::ProtocolConfigError;

/// Resolved pFabric parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct PfabricParams {
    pub mtu: u64,
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    pub init_cwnd: Option<u64>,
    pub min_rto: Option<Time>,
    pub prob_cap: u32,
    pub max_cwnd: Option<u64>,
    pub prio: u8,
}

impl PfabricParams {
    /// Parse and validate the `[transport]` table.
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<PfabricParams, PfabricConfigError> {
        let c: PfabricConfig = if cfg.is_null() {
            PfabricConfig::default()
        } else {
            crate::config::from_table(cfg, "transport").map_err(PfabricConfigError::Parse)?
        };
        let bad = |field: &str, value: String, fix: &str| PfabricConfigError::OutOfRange {
            field: field.into(),
            value,
            fix: fix.into(),
        };
        if c.init_cwnd == Some(0) {
            return Err(bad("init_cwnd", "0".into(), "must be at least 1 packet; remove it for one BDP"));
        }
        if c.max_cwnd == Some(0) {
            return Err(bad("max_cwnd", "0".into(), "must be at least 1 packet; remove it for no cap"));
        }
        if c.min_rto == Some(Time::ZERO) {
            return Err(bad("min_rto", "\"0ps\"".into(), "must be > 0; remove it for 3 x the base RTT"));
        }
        if c.prob_cap == Some(0) {
            return Err(bad("prob_cap", "0".into(), "must be at least 1 timeout (pFabric: 5)"));
        }
        let classes = net.priorities.clamp(1, 8);
        let prio = c.prio.unwrap_or(0);
        if prio >= classes {
            return Err(bad("prio", prio.to_string(), "must be below network.priorities (0 = highest)"));
        }
        if net.mtu.0 <= net.header.0 {
            return Err(bad("mtu", net.mtu.0.to_string(), "the MTU must exceed the header (network.mtu)"));
        }
        Ok(PfabricParams {
            mtu: net.mtu.0,
            mss: net.mss(),
            header: net.header.0,
            ctrl_size: net.ctrl_size.0,
            init_cwnd: c.init_cwnd,
            min_rto: c.min_rto,
            prob_cap: c.prob_cap.unwrap_or(5),
            max_cwnd: c.max_cwnd,
            prio,
        })
    }

    /// The flow's initial window in packets: `init_cwnd`, or its path's BDP in MTU-sized
    /// packets, rounded up (at least 1).
    pub fn init_window(&self, f: &FlowInfo) -> f64 {
        let w = self.init_cwnd.unwrap_or_else(|| f.path_rate.bdp(f.base_rtt).0.div_ceil(self.mtu).max(1));
        self.max_cwnd.map_or(w, |m| w.min(m)) as f64
    }

    /// The flow's retransmission timeout.
    pub fn rto(&self, f: &FlowInfo) -> Time {
        self.min_rto.unwrap_or(Time(f.base_rtt.0.saturating_mul(3).max(1)))
    }
}

/// Sender state of one flow.
#[derive(Debug)]
pub struct PfSender {
    size: u64,
    nseg: u64,
    acked: SegSet,
    acked_bytes: u64,
    /// First unacknowledged packet.
    una: u64,
    /// Next packet of the current pass (new data, or a go-back pass after a timeout).
    nxt: u64,
    /// One past the highest packet ever sent.
    high: u64,
    /// Packets of the current pass sent and not yet acknowledged.
    outstanding: u64,
    /// Window, packets.
    pub cwnd: f64,
    pub ssthresh: f64,
    rto: Time,
    rto_timer: TimerSlot,
    /// Timeouts since new data was last acknowledged.
    pub consecutive_timeouts: u32,
    pub probing: bool,
    pub stats: FlowStats,
}

impl PfSender {
    pub fn new(f: &FlowInfo, p: &PfabricParams) -> PfSender {
        let nseg = f.size.0.div_ceil(p.mss).max(1);
        PfSender {
            size: f.size.0,
            nseg,
            acked: SegSet::default(),
            acked_bytes: 0,
            una: 0,
            nxt: 0,
            high: 0,
            outstanding: 0,
            cwnd: p.init_window(f),
            ssthresh: f64::INFINITY,
            rto: p.rto(f),
            rto_timer: TimerSlot::default(),
            consecutive_timeouts: 0,
            probing: false,
            stats: FlowStats::default(),
        }
    }
    pub fn is_done(&self) -> bool {
        self.una >= self.nseg
    }
    pub fn remaining(&self) -> u64 {
        self.size - self.acked_bytes
    }
    fn seg_len(&self, s: u64, mss: u64) -> u64 {
        self.size.saturating_sub(s * mss).min(mss)
    }
    /// Record packet `s` (sent) as acknowledged; true if it was not before.
    fn mark(&mut self, s: u64, mss: u64) -> bool {
        if s >= self.high || !self.acked.insert(s) {
            return false;
        }
        self.acked_bytes += self.seg_len(s, mss);
        if s < self.nxt {
            self.outstanding = self.outstanding.saturating_sub(1);
        }
        true
    }
    fn arm(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let at = ctx.now + self.rto;
        let gen = self.rto_timer.arm(at);
        ctx.out.timer(at, token(flow, TIMER_RTO, gen));
    }

    /// Send what the window allows from `nxt`, skipping acknowledged packets.
    fn fill(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PfabricParams) {
        if self.probing {
            return;
        }
        let window = (self.cwnd.floor() as u64).max(1);
        let mut sent = false;
        while self.outstanding < window {
            while self.nxt < self.nseg && self.acked.has(self.nxt) {
                self.nxt += 1;
            }
            if self.nxt >= self.nseg {
                break;
            }
            let s = self.nxt;
            let len = self.seg_len(s, p.mss);
            if s < self.high {
                self.stats.retx_bytes += len;
            }
            ctx.out.send(Packet {
                src: f.src,
                dst: f.dst,
                flow: f.id,
                size: (len + p.header) as u32,
                prio: p.prio,
                flags: PacketFlags(PacketFlags::DATA),
                kind: KIND_DATA,
                payload: len as u32,
                rank: self.remaining().min(u32::MAX as u64) as u32,
                seq: s * p.mss,
                ts: ctx.now,
                ..Default::default()
            });
            self.nxt += 1;
            self.high = self.high.max(self.nxt);
            self.outstanding += 1;
            sent = true;
        }
        if sent && !self.rto_timer.is_armed() {
            self.arm(ctx, f.id);
        }
    }

    fn send_probe(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PfabricParams) {
        ctx.out.send(Packet {
            src: f.src,
            dst: f.dst,
            flow: f.id,
            size: p.ctrl_size as u32,
            prio: p.prio,
            kind: KIND_PROBE,
            ts: ctx.now,
            ..Default::default()
        });
    }

    pub fn start(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PfabricParams) {
        self.fill(ctx, f, p);
    }

    /// An ACK (of data or of a probe) reached the sender.
    pub fn on_ack(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PfabricParams, pkt: &Packet) {
        let mut newly = 0u64;
        // The selectively acknowledged packet, and every packet below the cumulative ACK.
        if pkt.aux > pkt.seq {
            newly += self.mark(pkt.seq / p.mss, p.mss) as u64;
        }
        let cum = if pkt.ack >= self.size { self.nseg } else { pkt.ack / p.mss };
        let mut s = self.una;
        while s < cum.min(self.high) {
            newly += self.mark(s, p.mss) as u64;
            s += 1;
        }
        self.una = self.acked.base();
        let probe_answered = pkt.aux <= pkt.seq && self.probing;
        if newly > 0 || probe_answered {
            self.consecutive_timeouts = 0;
        }
        if self.probing && (newly > 0 || probe_answered) {
            // Probe mode ends: restart from one packet in slow start at the first hole.
            self.probing = false;
            self.cwnd = 1.0;
            self.nxt = self.una;
            self.outstanding = 0;
        } else {
            for _ in 0..newly {
                self.cwnd += if self.cwnd < self.ssthresh { 1.0 } else { 1.0 / self.cwnd };
            }
            if let Some(m) = p.max_cwnd {
                self.cwnd = self.cwnd.min(m as f64);
            }
        }
        if self.is_done() {
            self.rto_timer.cancel();
            return;
        }
        if newly > 0 || probe_answered {
            self.arm(ctx, f.id);
        }
        self.fill(ctx, f, p);
    }

    /// The retransmission timer fired (`gen` from its token).
    pub fn on_rto(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PfabricParams, gen: u32) {
        if !self.rto_timer.fire(gen) || self.is_done() {
            return;
        }
        self.stats.timeouts += 1;
        self.consecutive_timeouts += 1;
        if self.probing || self.consecutive_timeouts >= p.prob_cap {
            self.probing = true;
            self.send_probe(ctx, f, p);
        } else {
            self.ssthresh = (self.cwnd / 2.0).max(2.0);
            self.cwnd = 1.0;
            self.nxt = self.una;
            self.outstanding = 0;
            self.fill(ctx, f, p);
        }
        if !self.rto_timer.is_armed() {
            self.arm(ctx, f.id);
        }
    }
}

/// Receiver state of one flow.
#[derive(Debug)]
pub struct PfReceiver {
    /// Packets held; its base is the first missing packet.
    got: SegSet,
    nseg: u64,
    pub done: bool,
}

impl PfReceiver {
    pub fn new(f: &FlowInfo, p: &PfabricParams) -> PfReceiver {
        PfReceiver { got: SegSet::default(), nseg: f.size.0.div_ceil(p.mss).max(1), done: false }
    }

    fn cum_bytes(&self, f: &FlowInfo, p: &PfabricParams) -> u64 {
        (self.got.base() * p.mss).min(f.size.0)
    }

    /// A data packet or probe arrived: acknowledge it; returns true when the flow just became
    /// complete.
    pub fn on_packet(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PfabricParams, pkt: &Packet) -> bool {
        let mut completed = false;
        let (a, b) = if pkt.kind == KIND_DATA {
            let s = pkt.seq / p.mss;
            if s < self.nseg && self.got.insert(s) && self.got.base() >= self.nseg && !self.done {
                self.done = true;
                completed = true;
            }
            // An empty range for a 0-byte flow's single packet would read as a probe ACK.
            (pkt.seq, pkt.seq + (pkt.payload as u64).max(1))
        } else {
            (0, 0)
        };
        ctx.out.send(Packet {
            src: f.dst,
            dst: f.src,
            flow: f.id,
            size: p.ctrl_size as u32,
            prio: p.prio,
            kind: KIND_ACK,
            ack: self.cum_bytes(f, p),
            seq: a,
            aux: b,
            ts: pkt.ts,
            ..Default::default()
        });
        completed
    }
}

/// The `pfabric` transport: every host's senders and receivers.
pub struct Pfabric {
    params: PfabricParams,
    senders: Vec<Option<Box<PfSender>>>,
    receivers: Vec<Option<Box<PfReceiver>>>,
    stats: Vec<FlowStats>,
}

impl Pfabric {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Pfabric, PfabricConfigError> {
        Ok(Pfabric::new(PfabricParams::from_config(cfg, net)?))
    }
    pub fn new(params: PfabricParams) -> Pfabric {
        Pfabric { params, senders: Vec::new(), receivers: Vec::new(), stats: Vec::new() }
    }
    pub fn sender(&self, f: FlowId) -> Option<&PfSender> {
        self.senders.get(f as usize).and_then(|s| s.as_deref())
    }
    fn ensure(&mut self, n: usize) {
        if self.senders.len() < n {
            self.senders.resize_with(n, || None);
            self.receivers.resize_with(n, || None);
            self.stats.resize(n, FlowStats::default());
        }
    }
}

impl Transport for Pfabric {
    fn name(&self) -> &'static str {
        "pfabric"
    }

    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.ensure(ctx.flows.len());
        let f = &ctx.flows[flow as usize];
        let mut s = Box::new(PfSender::new(f, &self.params));
        s.start(ctx, f, &self.params);
        self.senders[flow as usize] = Some(s);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let id = pkt.flow as usize;
        if id >= ctx.flows.len() {
            return;
        }
        self.ensure(ctx.flows.len());
        let f = &ctx.flows[id];
        match pkt.kind {
            KIND_DATA | KIND_PROBE if ctx.host == f.dst => {
                let r = self.receivers[id].get_or_insert_with(|| Box::new(PfReceiver::new(f, &self.params)));
                if r.on_packet(ctx, f, &self.params, pkt) {
                    ctx.out.complete(f.id);
                }
            }
            KIND_ACK if ctx.host == f.src => {
                if let Some(s) = self.senders[id].as_mut() {
                    s.on_ack(ctx, f, &self.params, pkt);
                    if s.is_done() {
                        self.stats[id] = s.stats;
                        self.senders[id] = None;
                    }
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, tok: u64) {
        let (flow, kind, gen) = untoken(tok);
        let id = flow as usize;
        if kind != TIMER_RTO || id >= self.senders.len() {
            return;
        }
        let f = &ctx.flows[id];
        if let Some(s) = self.senders[id].as_mut() {
            s.on_rto(ctx, f, &self.params, gen);
        }
    }

    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        match self.senders.get(flow as usize).and_then(|s| s.as_deref()) {
            Some(s) => s.stats,
            None => self.stats.get(flow as usize).copied().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::NodeId;
    use crate::transport::Actions;
    use crate::units::{Bytes, Rate};

    const MSS: u64 = 1460;

    fn flow(size: u64) -> FlowInfo {
        FlowInfo {
            id: 0,
            src: 0,
            dst: 1,
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
        t: Pfabric,
        flows: Vec<FlowInfo>,
    }

    impl H {
        fn new(cfg: serde_json::Value, size: u64) -> H {
            let net = NetInfo::for_tests(1500, Time::us(12), Rate::gbps(10));
            H { t: Pfabric::from_config(&cfg, &net).unwrap(), flows: vec![flow(size)] }
        }
        fn call(&mut self, now: Time, host: NodeId, f: impl FnOnce(&mut Pfabric, &mut Ctx)) -> Actions {
            let mut out = Actions::new();
            let mut ctx = Ctx { now, host, flows: &self.flows, out: &mut out };
            f(&mut self.t, &mut ctx);
            out
        }
        fn start(&mut self) -> Actions {
            self.call(Time::ZERO, 0, |t, c| t.start_flow(c, 0))
        }
        fn deliver(&mut self, now: Time, p: &Packet) -> Actions {
            self.call(now, p.dst, |t, c| t.on_packet(c, p))
        }
        /// Deliver `ps` to their destination; every packet they trigger.
        fn deliver_all(&mut self, now: Time, ps: &[Packet]) -> Vec<Packet> {
            ps.iter().flat_map(|p| self.deliver(now, p).sends).collect()
        }
        fn fire(&mut self, now: Time, tok: u64) -> Actions {
            self.call(now, 0, |t, c| t.on_timer(c, tok))
        }
        fn snd(&self) -> &PfSender {
            self.t.sender(0).unwrap()
        }
    }

    fn segs(ps: &[Packet]) -> Vec<u64> {
        ps.iter().map(|p| p.seq / MSS).collect()
    }

    #[test]
    fn start_sends_one_bdp_with_remaining_size_as_rank() {
        // 10 Gbps x 12 us = 15 000 B = 10 packets of 1500 B.
        let mut h = H::new(serde_json::Value::Null, 100 * MSS);
        let a = h.start();
        assert_eq!(segs(&a.sends), (0..10).collect::<Vec<_>>());
        assert!(a.sends.iter().all(|p| p.rank == (100 * MSS) as u32), "nothing acknowledged yet");
        assert_eq!(a.timers.len(), 1);
        assert_eq!(a.timers[0].0, Time::us(36), "RTO = 3 x base RTT");
    }

    #[test]
    fn acks_grow_the_window_in_slow_start_and_rank_falls() {
        let mut h = H::new(serde_json::json!({"init_cwnd": 2}), 100 * MSS);
        let d = h.start().sends;
        assert_eq!(d.len(), 2);
        let acks = h.deliver_all(Time::us(5), &d);
        assert_eq!(acks.len(), 2);
        assert_eq!(acks[1].ack, 2 * MSS);
        let more = h.deliver_all(Time::us(10), &acks);
        // cwnd 2 -> 4: two new packets per ACK.
        assert_eq!(h.snd().cwnd, 4.0);
        assert_eq!(segs(&more), vec![2, 3, 4, 5]);
        assert_eq!(more[0].rank, (99 * MSS) as u32, "one packet acknowledged at the first ACK");
        assert_eq!(more[3].rank, (98 * MSS) as u32);
    }

    #[test]
    fn duplicate_acks_do_not_retransmit() {
        let mut h = H::new(serde_json::json!({"init_cwnd": 4}), 10 * MSS);
        let d = h.start().sends;
        // Packet 0 lost: 1, 2, 3 arrive; their ACKs are duplicates of cum 0.
        let acks = h.deliver_all(Time::us(5), &d[1..]);
        assert!(acks.iter().all(|a| a.ack == 0));
        let resp = h.deliver_all(Time::us(10), &acks);
        // Each selective ACK grows the window (4 -> 7) and frees a slot: six new packets
        // (only packet 0 outstanding), none of them a retransmission of packet 0.
        assert!(!segs(&resp).contains(&0), "no fast retransmit");
        assert_eq!(segs(&resp), vec![4, 5, 6, 7, 8, 9]);
        assert_eq!(h.snd().stats.retx_bytes, 0);
    }

    #[test]
    fn timeout_halves_ssthresh_and_goes_back_skipping_delivered_packets() {
        let mut h = H::new(serde_json::json!({"init_cwnd": 4, "min_rto": "100us"}), 6 * MSS);
        let a = h.start();
        let tok = a.timers[0].1;
        // Packets 0 and 2 lost; 1 and 3 delivered and acknowledged.
        let acks = h.deliver_all(Time::us(5), &[a.sends[1], a.sends[3]]);
        let resp = h.deliver_all(Time::us(10), &acks);
        // cwnd 6, outstanding {0, 2} plus the new 4, 5.
        assert_eq!(segs(&resp), vec![4, 5]);
        assert_eq!(h.snd().cwnd, 6.0);
        // The RTO was re-armed by those ACKs: the first token is stale.
        assert!(h.fire(Time::us(100), tok).sends.is_empty());
        let t = h.fire(Time::us(110), live_rto(&h));
        assert_eq!(h.snd().ssthresh, 3.0, "max(6 / 2, 2)");
        assert_eq!(h.snd().cwnd, 1.0);
        // Go back to packet 0; one packet (window 1).
        assert_eq!(segs(&t.sends), vec![0]);
        assert_eq!(h.snd().stats.timeouts, 1);
        assert_eq!(h.snd().stats.retx_bytes, MSS);
        // Its ACK: cwnd 2 (slow start), next in the pass are 2 (1 is skipped) and 4.
        let acks = h.deliver_all(Time::us(115), &t.sends);
        let resp = h.deliver_all(Time::us(120), &acks);
        assert_eq!(segs(&resp), vec![2, 4]);
    }

    /// The live RTO token of the sender (the generation the slot holds).
    fn live_rto(h: &H) -> u64 {
        let mut slot = h.snd().rto_timer;
        token(0, TIMER_RTO, slot.arm(Time::ZERO) - 1)
    }

    #[test]
    fn prob_cap_timeouts_enter_probe_mode_and_a_probe_ack_restarts_slow_start() {
        let mut h = H::new(serde_json::json!({"init_cwnd": 3, "min_rto": "50us", "prob_cap": 3}), 5 * MSS);
        h.start();
        // Everything is lost, twice: two go-back retransmissions of packet 0.
        for i in 1..=2u64 {
            let t = h.fire(Time::us(50 * i), live_rto(&h));
            assert_eq!(segs(&t.sends), vec![0], "timeout {i}: go back one packet");
            assert!(!h.snd().probing);
        }
        // Third consecutive timeout: a probe, no data.
        let t = h.fire(Time::us(150), live_rto(&h));
        assert_eq!(t.sends.len(), 1);
        assert_eq!(t.sends[0].kind, KIND_PROBE);
        assert!(!t.sends[0].is_data());
        assert_eq!(t.sends[0].size, 64);
        assert!(h.snd().probing);
        // A further timeout: another probe.
        let t2 = h.fire(Time::us(200), live_rto(&h));
        assert_eq!(t2.sends[0].kind, KIND_PROBE);
        assert_eq!(h.snd().stats.timeouts, 4);
        // The probe reaches the receiver, which answers with its cumulative ACK (0).
        let ack = h.deliver_all(Time::us(205), &t2.sends);
        assert_eq!((ack[0].kind, ack[0].ack, ack[0].aux), (KIND_ACK, 0, 0));
        let resp = h.deliver_all(Time::us(210), &ack);
        assert!(!h.snd().probing);
        assert_eq!(h.snd().consecutive_timeouts, 0);
        assert_eq!(h.snd().cwnd, 1.0);
        assert_eq!(segs(&resp), vec![0], "slow start from one packet at the first hole");
    }

    #[test]
    fn receiver_completes_once_and_sender_is_freed() {
        let mut h = H::new(serde_json::json!({"init_cwnd": 8}), 3 * MSS + 100);
        let d = h.start().sends;
        assert_eq!(d.len(), 4);
        assert_eq!(d[3].payload, 100);
        let mut completions = 0;
        let mut acks = Vec::new();
        for p in d.iter().rev().chain(d.iter()) {
            let a = h.deliver(Time::us(5), p);
            completions += a.completions.len();
            acks.extend(a.sends);
        }
        assert_eq!(completions, 1, "complete exactly once, duplicates included");
        h.deliver_all(Time::us(10), &acks);
        assert!(h.t.sender(0).is_none(), "sender state freed when everything is acknowledged");
        assert_eq!(h.t.flow_stats(0).retx_bytes, 0);
    }

    #[test]
    fn zero_byte_flow_sends_one_empty_packet_and_completes() {
        let mut h = H::new(serde_json::Value::Null, 0);
        let d = h.start().sends;
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].payload, 0);
        let a = h.deliver(Time::us(5), &d[0]);
        assert_eq!(a.completions, vec![0]);
        h.deliver_all(Time::us(10), &a.sends);
        assert!(h.t.sender(0).is_none());
    }

    #[test]
    fn seg_set_keeps_a_window_from_the_first_missing_index() {
        let mut s = SegSet::default();
        assert!(s.insert(2) && s.insert(0));
        assert_eq!(s.base(), 1);
        assert!(!s.insert(0) && !s.insert(2), "already held");
        assert!(s.has(2) && !s.has(1) && !s.has(3));
        assert!(s.insert(1));
        assert_eq!(s.base(), 3);
        assert_eq!(s.held(), 0, "nothing held above the base");
    }

    #[test]
    fn a_long_lived_flow_costs_memory_for_its_flight_only() {
        // A background flow's nominal size (u64::MAX / 4) must not size any table.
        let mut h = H::new(serde_json::Value::Null, u64::MAX / 4);
        let d = h.start().sends;
        assert_eq!(d.len(), 10);
        let acks = h.deliver_all(Time::us(5), &d);
        let more = h.deliver_all(Time::us(10), &acks);
        assert_eq!(more.len(), 20, "slow start: two packets per ACK");
        assert_eq!(h.snd().acked.base(), 10);
        assert_eq!(h.snd().acked.held(), 0);
    }

    #[test]
    fn config_errors_name_the_field() {
        let net = NetInfo::for_tests(1500, Time::us(12), Rate::gbps(10));
        for (cfg, field) in [
            (serde_json::json!({"init_cwnd": 0}), "transport.init_cwnd"),
            (serde_json::json!({"prob_cap": 0}), "transport.prob_cap"),
            (serde_json::json!({"min_rto": "0us"}), "transport.min_rto"),
            (serde_json::json!({"prio": 8}), "transport.prio"),
            (serde_json::json!({"window": 3}), "transport.window"),
        ] {
            let e = Pfabric::from_config(&cfg, &net).err().expect("rejected");
            assert_eq!(e.field(), field, "{cfg}");
        }
    }
}
