//! HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019) as the `hpcc`
//! protocol: a window- and rate-based sender steered by in-band network telemetry (INT).
//!
//! # What is modelled
//! - **Telemetry** (§3.1, §4.1): every switch egress port stamps each data packet it sends
//!   with its queue, cumulative transmitted bytes, a timestamp and its rate; the receiver
//!   echoes the stack on the ACK of that packet. The stamping is the queue layer's
//!   `queue::int::IntStamp`, which the network puts around every switch policy because this
//!   protocol asks for it (`Derived::int`); the record format (normalised to time at the
//!   switch, five hops in 256 bits of the header) is documented there.
//! - **Per-hop utilisation and its estimate U** (§3.2, Algorithm 1 `MeasureInflight`): for
//!   each hop `i`, from the previous ACK's record and this one,
//!   `u_i = txRate_i / B_i + min(qLen_i, qLen_i') / (B_i T)`; the most utilised hop gives
//!   `u` and its sample interval `tau`; `U = (1 - tau/T) U + (tau/T) u` with `tau <= T`.
//! - **Window** (Algorithm 1 `ComputeWind`): if `U >= eta` or `incStage >= maxStage`,
//!   `W = W^c / (U / eta) + W_AI`, else `W = W^c + W_AI`. An ACK acknowledging beyond
//!   `lastUpdateSeq` (once per RTT) also sets `W^c = W` and resets or advances `incStage`, and
//!   sets `lastUpdateSeq` to the next sequence to send; every other ACK computes `W` from the
//!   same `W^c` without touching it (the per-ACK "fast reaction", §3.2).
//! - **Sending** (§3.3): at most `W` bytes in flight, paced at `R = W / T`: after a packet of
//!   `s` wire bytes, the next may leave `s T / W` later. A flow starts at line rate,
//!   `W = W^c = W_init = B_nic T`, and `W` stays within `[min_rate T, W_init]`.
//! - **Loss recovery** (the RDMA NIC HPCC runs on): the receiver accepts data in order only
//!   and acknowledges every data packet; the first out-of-order packet for a given missing
//!   byte is answered with a NACK, and the sender goes back to the NACKed byte (go-back-N). A
//!   retransmission timer (`rto`) goes back to the first unacknowledged byte when nothing
//!   arrives for that long.
//!
//! # Choices where the paper leaves room
//! - **Telemetry carried as per-hop records, not one aggregate.** The sender keeps, per flow,
//!   the last record of every hop and evaluates Algorithm 1 exactly as written (per-hop deltas,
//!   then the maximum, then the EWMA). Carrying only the switch's own utilisation estimate
//!   (the later PINT variant) would change the law: a per-port average is shared by all flows
//!   and takes the maximum after averaging instead of before. The records are normalised to
//!   time at the switch (`busy = txBytes / B`, `qdelay = qLen / B`), which is the same law
//!   (`txRate / B = Δbusy / Δts`, `qLen / (B T) = qdelay / T`) without a rate field; the
//!   switch's counters have 1 ns resolution (the authors' simulator's timestamp unit; its
//!   byte and queue counters are coarser, 128 B and 80 B units).
//! - **Stale samples**: the counters wrap every 2^20 ns (about 1.05 ms). If the previous
//!   feedback of a flow is more than half that old (`queue::int::COUNTER_WRAP / 2`), or the
//!   number of hops changed, the records are stored without a measurement (as for the first
//!   ACK of a flow, which only stores them and sets `lastUpdateSeq`). Two samples of one
//!   hop with equal timestamps (less than 1 ns apart) give no `u` for that hop.
//! - **T** (`t`): the largest base RTT of the network (the authors' simulator's "global T"
//!   default); `W_init = B_nic T` with `B_nic` the flow's host link rate.
//! - **W_AI** (`w_ai`): the paper asks that the additive increases of all flows sharing a
//!   link stay within the headroom, `W_AI <= W_init (1 - eta) / N` for `N` concurrent flows;
//!   the default takes `N = 100`, which at 100 Gbps is exactly the 50 Mbps rate increase of
//!   the authors' simulator's configuration.
//! - **maxStage = 5, eta = 0.95**: the paper's values (the simulator's shipped configuration
//!   uses maxStage 0, i.e. a multiplicative step on every update; set `max_stage = 0` for it).
//! - **U starts at 1** (the authors' simulator's initial value), so a new flow's first
//!   samples pull U down from "fully used" rather than up from idle.
//! - **Window floor**: `min_rate T`, with `min_rate` = 100 Mbps (the simulator's default).
//! - **INT overhead**: each data packet carries `int_header` bytes of telemetry (default
//!   42 B: five 8-byte hop records and a 2-byte hop count, the simulator's stack) out of its
//!   MTU, and each ACK is `ctrl_size + int_header` on the wire.
//! - **ACKs** ride in the data's priority class (the simulator's default, no ACK priority).
//! - The receiver answers a duplicate (already received) data packet with an ACK too, so a
//!   sender whose ACKs were lost recovers after its timeout; the simulator's lossless fabric
//!   never needed it.
//! - **rto** default 1 ms, the TCP engine's minimum RTO: HPCC's own fabric is lossless (PFC),
//!   this one drops at a full buffer, so a lost tail needs a timer.
//!
//! # Behaviour outside the paper's regime
//! HPCC is designed for bandwidth-delay products of many packets (the paper's 100 Gbps
//! fabric: about a hundred). Where one packet is a sizeable part of `B T` (10 Gbps with
//! T = 10 us: 8 packets, one packet = 11% of it), long flows' shares drift apart instead of
//! converging (measured: four flows into one 10 Gbps port, 80% of it to one flow after
//! 10 ms; at 100 Gbps the same setup converges, slowly, since only `W_AI` evens shares out).
//! The likely cause, not verified packet by packet: the queue a flow's packets leave behind
//! depends on its rate (a fast paced flow rarely leaves another flow's packet queued behind
//! its own, a slow flow's packets usually wait behind the fast flow's), so slow flows see a
//! larger `U` and cut more; one queued packet is worth 0.11 of `U` at 10 Gbps and 0.01 at
//! 100 Gbps. Nothing here departs from the law to hide it.
//!
//! # Header layout
//! Data (`kind = KIND_DATA`, flag `DATA`): `seq` = byte offset, `payload`; `ack`, `aux`, `ts`,
//! `rank`, `aux2` are the INT block (zero when sent, filled in by switches). ACK / NACK
//! (`KIND_ACK`, `KIND_NACK`): `ack` = the next byte the receiver expects; the INT block of the
//! data packet it answers in `seq` (word 0), `aux`, `ts`, `rank`/`aux2` (words 1-3).
//!
//! # Configuration (`protocol = "hpcc"`)
//! `eta` (0.95), `max_stage` (5), `w_ai` (bytes; `W_init (1 - eta) / 100`), `t` (the largest
//! base RTT), `min_rate` ("100Mbps"), `fast_react` (true), `int_header` ("42B"), `rto`
//! ("1ms"), `prio` (0).

use crate::packet::{FlowId, Packet, PacketFlags};
use crate::queue::int::{IntHop, IntStack, COUNTER_WRAP, MAX_HOPS};
use crate::transport::{token, untoken, Ctx, Derived, FlowInfo, FlowStats, NetInfo, TimerSlot, Transport};
use crate::units::{Bytes, Rate, Time, PS_PER_NS};
use serde::Deserialize;

/// `Packet::kind` of a data packet.
pub const KIND_DATA: u8 = 1;
/// `Packet::kind` of an acknowledgement.
pub const KIND_ACK: u8 = 2;
/// `Packet::kind` of a negative acknowledgement (go back to `ack`).
pub const KIND_NACK: u8 = 3;
/// Timer kind: pacing.
pub const TIMER_PACE: u8 = 1;
/// Timer kind: retransmission timeout.
pub const TIMER_RTO: u8 = 2;

/// The `[transport]` table of `protocol = "hpcc"` (without `protocol`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HpccConfig {
    /// Target utilisation eta.
    pub eta: Option<f64>,
    /// maxStage: additive-increase stages before a multiplicative step.
    pub max_stage: Option<u32>,
    /// Additive increase W_AI; `None` = W_init (1 - eta) / 100.
    pub w_ai: Option<Bytes>,
    /// T, the base RTT of the law; `None` = the network's largest base RTT.
    pub t: Option<Time>,
    /// Floor of the sending rate (the window floor is `min_rate T`).
    pub min_rate: Option<Rate>,
    /// React on every ACK (true) or once per RTT only (false).
    pub fast_react: Option<bool>,
    /// Telemetry bytes each data packet and ACK carries.
    pub int_header: Option<Bytes>,
    /// Retransmission timeout.
    pub rto: Option<Time>,
    /// Priority class of data and ACKs.
    pub prio: Option<u8>,
}

/// Errors of the protocol's table (the shared shape, [`crate::config::ProtocolConfigError`]).
pub type HpccConfigError = crate::config::ProtocolConfigError;

/// Resolved HPCC parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct HpccParams {
    pub eta: f64,
    pub max_stage: u32,
    pub w_ai: Option<u64>,
    pub t: Time,
    pub min_rate: Rate,
    pub fast_react: bool,
    pub rto: Time,
    pub prio: u8,
    /// Payload bytes per data packet (MTU - header - INT).
    pub mss: u64,
    /// Wire bytes of a data packet beyond its payload (header + INT).
    pub overhead: u64,
    /// Wire bytes of an ACK / NACK.
    pub ack_size: u64,
}

/// Per-hop telemetry the paper's authors' simulator uses (five 8-byte records + 2 bytes).
const DEFAULT_INT_HEADER: u64 = 42;
/// `N` of the default `W_AI = W_init (1 - eta) / N`.
const DEFAULT_AI_FLOWS: f64 = 100.0;

impl HpccParams {
    /// Parse and validate the `[transport]` table.
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<HpccParams, HpccConfigError> {
        let c: HpccConfig = if cfg.is_null() {
            HpccConfig::default()
        } else {
            crate::config::from_table(cfg, "transport").map_err(HpccConfigError::Parse)?
        };
        let bad = |field: &str, value: String, fix: &str| HpccConfigError::OutOfRange {
            field: field.into(),
            value,
            fix: fix.into(),
        };
        let eta = c.eta.unwrap_or(0.95);
        if !(eta > 0.0 && eta <= 1.0) {
            return Err(bad("eta", eta.to_string(), "must be a utilisation in (0, 1] (HPCC: 0.95)"));
        }
        if c.w_ai == Some(Bytes(0)) {
            return Err(bad("w_ai", "\"0B\"".into(), "must be > 0; remove it for W_init (1 - eta) / 100"));
        }
        if c.t == Some(Time::ZERO) {
            return Err(bad("t", "\"0ps\"".into(), "must be > 0; remove it for the largest base RTT"));
        }
        if c.min_rate == Some(Rate(0)) {
            return Err(bad("min_rate", "\"0bps\"".into(), "must be > 0 (HPCC's simulator: \"100Mbps\")"));
        }
        if c.rto == Some(Time::ZERO) {
            return Err(bad("rto", "\"0ps\"".into(), "must be > 0, e.g. \"1ms\""));
        }
        let prio = c.prio.unwrap_or(0);
        if prio >= net.priorities.clamp(1, 8) {
            return Err(bad("prio", prio.to_string(), "must be below network.priorities (0 = highest)"));
        }
        let int_header = c.int_header.unwrap_or(Bytes(DEFAULT_INT_HEADER)).0;
        if net.mtu.0 <= net.header.0.saturating_add(int_header) {
            return Err(bad(
                "int_header",
                format!("\"{int_header}B\""),
                "the MTU must exceed network.header + int_header; lower it or raise network.mtu",
            ));
        }
        let t = c.t.unwrap_or(net.max_base_rtt).max(Time(1));
        Ok(HpccParams {
            eta,
            max_stage: c.max_stage.unwrap_or(5),
            w_ai: c.w_ai.map(|b| b.0),
            t,
            min_rate: c.min_rate.unwrap_or(Rate::mbps(100)),
            fast_react: c.fast_react.unwrap_or(true),
            rto: c.rto.unwrap_or(Time::ms(1)),
            prio,
            mss: net.mtu.0 - net.header.0 - int_header,
            overhead: net.header.0 + int_header,
            ack_size: net.ctrl_size.0 + int_header,
        })
    }
}

/// The law's constants for one flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Law {
    pub eta: f64,
    pub max_stage: u32,
    /// T in picoseconds.
    pub t: Time,
    pub w_init: f64,
    pub w_min: f64,
    pub w_ai: f64,
    pub fast_react: bool,
}

impl Law {
    pub fn for_flow(f: &FlowInfo, p: &HpccParams) -> Law {
        let w_init = (f.host_rate.bdp(p.t).0 as f64).max(p.mss as f64);
        let w_min = (p.min_rate.bdp(p.t).0 as f64).clamp(1.0, w_init);
        let w_ai = p.w_ai.map_or(w_init * (1.0 - p.eta) / DEFAULT_AI_FLOWS, |w| w as f64);
        Law { eta: p.eta, max_stage: p.max_stage, t: p.t, w_init, w_min, w_ai, fast_react: p.fast_react }
    }
}

/// HPCC's congestion state of one flow (Algorithm 1's variables).
#[derive(Clone, Debug, PartialEq)]
pub struct HpccState {
    pub law: Law,
    /// Current window W, bytes.
    pub w: f64,
    /// Reference window W^c, bytes.
    pub wc: f64,
    /// Utilisation estimate U.
    pub u: f64,
    pub inc_stage: u32,
    pub last_update_seq: u64,
    /// The last record of every hop, and how many there are.
    pub hops: [IntHop; MAX_HOPS],
    pub nhop: usize,
    /// Time of the last feedback taken in (`None` before the first ACK).
    pub last_feedback: Option<Time>,
}

impl HpccState {
    pub fn new(law: Law) -> HpccState {
        HpccState {
            law,
            w: law.w_init,
            wc: law.w_init,
            u: 1.0,
            inc_stage: 0,
            last_update_seq: 0,
            hops: [IntHop::default(); MAX_HOPS],
            nhop: 0,
            last_feedback: None,
        }
    }

    fn store(&mut self, s: &IntStack) {
        self.nhop = s.nhop();
        for i in 0..self.nhop {
            self.hops[i] = s.hop(i);
        }
    }

    /// Algorithm 1 `MeasureInflight`: update `U` from the per-hop deltas between the stored
    /// records and `s` (which become the stored records). Returns false when no hop gave a
    /// sample.
    pub fn measure(&mut self, s: &IntStack) -> bool {
        let t_ns = self.law.t.0 as f64 / PS_PER_NS as f64;
        let mut best: Option<(f64, u64)> = None;
        for i in 0..self.nhop {
            let (old, new) = (self.hops[i], s.hop(i));
            let dts = new.dts(&old);
            if dts == 0 {
                continue;
            }
            let u = new.dbusy(&old) as f64 / dts as f64 + new.qdelay.min(old.qdelay) as f64 / t_ns;
            if best.is_none_or(|(b, _)| u > b) {
                best = Some((u, dts));
            }
        }
        self.store(s);
        match best {
            Some((u, dts_ns)) => {
                let tau = (dts_ns * PS_PER_NS).min(self.law.t.0) as f64;
                let t = self.law.t.0 as f64;
                self.u = (self.u * (t - tau) + u * tau) / t;
                true
            }
            None => false,
        }
    }

    /// Algorithm 1 `ComputeWind`: the window from `U`; with `update_wc` also the reference
    /// window and the stage counter.
    pub fn compute_wind(&mut self, update_wc: bool) -> f64 {
        let l = self.law;
        let (w, stage) = if self.u >= l.eta || self.inc_stage >= l.max_stage {
            let w = if self.u > 0.0 { self.wc / (self.u / l.eta) + l.w_ai } else { l.w_init };
            (w, 0)
        } else {
            (self.wc + l.w_ai, self.inc_stage + 1)
        };
        let w = w.clamp(l.w_min, l.w_init);
        if update_wc {
            self.wc = w;
            self.inc_stage = stage;
        }
        self.w = w;
        w
    }

    /// Algorithm 1 `NewAck`: feedback `s` arrives at `now` on an ACK for bytes below
    /// `ack_seq`, while the sender's next new byte is `snd_nxt`.
    pub fn on_feedback(&mut self, now: Time, ack_seq: u64, snd_nxt: u64, s: &IntStack) {
        let stale = self.last_feedback.is_none_or(|t| now.0.saturating_sub(t.0) >= COUNTER_WRAP.0 / 2);
        if stale || s.nhop() != self.nhop {
            // First feedback (or none usable): keep the records, measure from the next one.
            if self.last_feedback.is_none() {
                self.last_update_seq = snd_nxt;
            }
            self.store(s);
            self.last_feedback = Some(now);
            return;
        }
        let update = ack_seq > self.last_update_seq;
        if !update && !self.law.fast_react {
            return;
        }
        self.last_feedback = Some(now);
        if self.measure(s) {
            self.compute_wind(update);
        }
        if update {
            self.last_update_seq = snd_nxt;
        }
    }
}

/// Sender state of one flow.
#[derive(Debug)]
pub struct HpSender {
    size: u64,
    /// First unacknowledged byte.
    pub una: u64,
    /// Next byte to send.
    pub nxt: u64,
    /// One past the highest byte ever sent.
    high: u64,
    /// The single packet of a 0-byte flow has left.
    zero_sent: bool,
    pub done: bool,
    pub cc: HpccState,
    /// Earliest time the pacer lets the next packet leave.
    pub next_send: Time,
    pace_timer: TimerSlot,
    rto_timer: TimerSlot,
    pub stats: FlowStats,
}

impl HpSender {
    pub fn new(f: &FlowInfo, p: &HpccParams) -> HpSender {
        HpSender {
            size: f.size.0,
            una: 0,
            nxt: 0,
            high: 0,
            zero_sent: false,
            done: false,
            cc: HpccState::new(Law::for_flow(f, p)),
            next_send: Time::ZERO,
            pace_timer: TimerSlot::default(),
            rto_timer: TimerSlot::default(),
            stats: FlowStats::default(),
        }
    }

    fn arm_rto(&mut self, ctx: &mut Ctx, f: FlowId, p: &HpccParams) {
        let at = ctx.now + p.rto;
        let gen = self.rto_timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_RTO, gen));
    }

    /// Send what the window and the pacer allow.
    pub fn pump(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &HpccParams) {
        while !self.done {
            let zero = self.size == 0 && !self.zero_sent;
            if self.nxt >= self.size && !zero {
                break;
            }
            if (self.nxt - self.una) as f64 >= self.cc.w {
                break;
            }
            if self.next_send > ctx.now {
                if !(self.pace_timer.is_armed() && self.pace_timer.at == self.next_send) {
                    let gen = self.pace_timer.arm(self.next_send);
                    ctx.out.timer(self.next_send, token(f.id, TIMER_PACE, gen));
                }
                break;
            }
            let len = (self.size - self.nxt).min(p.mss);
            if self.nxt < self.high {
                self.stats.retx_bytes += len;
            }
            let wire = len + p.overhead;
            ctx.out.send(Packet {
                src: f.src,
                dst: f.dst,
                flow: f.id,
                size: wire as u32,
                prio: p.prio,
                flags: PacketFlags(PacketFlags::DATA),
                kind: KIND_DATA,
                payload: len as u32,
                seq: self.nxt,
                ..Default::default()
            });
            self.zero_sent = true;
            self.nxt += len;
            self.high = self.high.max(self.nxt);
            // Pacing at R = W / T: this packet occupies s T / W of the sender's time.
            let gap = ((wire as f64 * self.cc.law.t.0 as f64 / self.cc.w).ceil() as u64).max(1);
            self.next_send = self.next_send.max(ctx.now) + Time(gap);
            if !self.rto_timer.is_armed() {
                self.arm_rto(ctx, f.id, p);
            }
        }
    }

    /// An ACK or NACK reached the sender.
    pub fn on_ack(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &HpccParams, pkt: &Packet) {
        if self.done {
            return;
        }
        let ack = pkt.ack.min(self.size).min(self.high);
        let progress = ack > self.una;
        if progress {
            self.una = ack;
            self.nxt = self.nxt.max(ack);
        }
        if pkt.kind == KIND_NACK && ack >= self.una && ack < self.nxt {
            self.nxt = ack; // go back N
        }
        self.cc.on_feedback(ctx.now, ack, self.nxt, &IntStack(ack_block(pkt)));
        if self.una >= self.size && (self.size > 0 || self.zero_sent) {
            self.done = true;
            self.rto_timer.cancel();
            self.pace_timer.cancel();
            return;
        }
        if progress {
            self.arm_rto(ctx, f.id, p);
        }
        self.pump(ctx, f, p);
    }

    pub fn on_timer(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &HpccParams, kind: u8, gen: u32) {
        match kind {
            TIMER_PACE if self.pace_timer.fire(gen) => self.pump(ctx, f, p),
            TIMER_RTO if self.rto_timer.fire(gen) && !self.done => {
                self.stats.timeouts += 1;
                self.nxt = self.una;
                if self.size == 0 {
                    self.zero_sent = false;
                }
                self.arm_rto(ctx, f.id, p);
                self.pump(ctx, f, p);
            }
            _ => {}
        }
    }
}

/// The INT block an ACK carries (see the header layout).
#[inline]
pub fn ack_block(p: &Packet) -> [u64; 4] {
    [p.seq, p.aux, p.ts.0, ((p.rank as u64) << 32) | p.aux2 as u64]
}

/// Receiver state of one flow.
#[derive(Debug, Default)]
pub struct HpReceiver {
    /// Next byte expected in order.
    pub expected: u64,
    /// The missing byte last NACKed.
    last_nack: Option<u64>,
    pub done: bool,
}

impl HpReceiver {
    /// A data packet arrived: answer it (ACK, or NACK for the first out-of-order packet past
    /// a given hole), echoing its INT block. Returns true when the flow just became complete.
    pub fn on_data(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &HpccParams, pkt: &Packet) -> bool {
        let mut kind = KIND_ACK;
        if pkt.seq == self.expected {
            self.expected += pkt.payload as u64;
        } else if pkt.seq > self.expected && self.last_nack != Some(self.expected) {
            self.last_nack = Some(self.expected);
            kind = KIND_NACK;
        }
        let b = crate::queue::int::block(pkt);
        ctx.out.send(Packet {
            src: f.dst,
            dst: f.src,
            flow: f.id,
            size: p.ack_size as u32,
            prio: p.prio,
            kind,
            ack: self.expected,
            seq: b[0],
            aux: b[1],
            ts: Time(b[2]),
            rank: (b[3] >> 32) as u32,
            aux2: b[3] as u32,
            ..Default::default()
        });
        if !self.done && self.expected >= f.size.0 {
            self.done = true;
            return true;
        }
        false
    }
}

/// The `hpcc` transport: every host's senders and receivers.
pub struct Hpcc {
    params: HpccParams,
    senders: Vec<Option<Box<HpSender>>>,
    receivers: Vec<Option<Box<HpReceiver>>>,
    stats: Vec<FlowStats>,
}

impl Hpcc {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Hpcc, HpccConfigError> {
        Ok(Hpcc::new(HpccParams::from_config(cfg, net)?))
    }
    pub fn new(params: HpccParams) -> Hpcc {
        Hpcc { params, senders: Vec::new(), receivers: Vec::new(), stats: Vec::new() }
    }
    /// What HPCC needs from the network: switch ports that stamp in-band telemetry.
    pub fn derive() -> Derived {
        Derived { int: true, ..Derived::default() }
    }
    pub fn sender(&self, f: FlowId) -> Option<&HpSender> {
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

impl Transport for Hpcc {
    fn name(&self) -> &'static str {
        "hpcc"
    }

    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.ensure(ctx.flows.len());
        let f = &ctx.flows[flow as usize];
        let mut s = Box::new(HpSender::new(f, &self.params));
        s.pump(ctx, f, &self.params);
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
            KIND_DATA if ctx.host == f.dst => {
                let r = self.receivers[id].get_or_insert_with(Box::default);
                if r.on_data(ctx, f, &self.params, pkt) {
                    ctx.out.complete(f.id);
                }
            }
            KIND_ACK | KIND_NACK if ctx.host == f.src => {
                if let Some(s) = self.senders[id].as_mut() {
                    s.on_ack(ctx, f, &self.params, pkt);
                    if s.done {
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
        if id >= ctx.flows.len() {
            return;
        }
        self.ensure(ctx.flows.len());
        let f = &ctx.flows[id];
        if let Some(s) = self.senders[id].as_mut() {
            s.on_timer(ctx, f, &self.params, kind, gen);
        }
    }

    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        match self.sender(flow) {
            Some(s) => s.stats,
            None => self.stats.get(flow as usize).copied().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Actions;

    const T: Time = Time::us(10);

    /// 10 Gbps host, T = 10 us: W_init = 12,500 B, W_AI = 12,500 x 0.05 / 100 = 6.25 B,
    /// window floor 100 Mbps x 10 us = 125 B.
    fn law() -> Law {
        Law { eta: 0.95, max_stage: 5, t: T, w_init: 12_500.0, w_min: 125.0, w_ai: 6.25, fast_react: true }
    }

    fn net() -> NetInfo {
        NetInfo::for_tests(1500, T, Rate::gbps(10))
    }

    fn params() -> HpccParams {
        HpccParams::from_config(&serde_json::json!({}), &net()).unwrap()
    }

    fn flow_info(size: u64) -> FlowInfo {
        FlowInfo {
            id: 0,
            src: 0,
            dst: 1,
            size: Bytes(size),
            start: Time::ZERO,
            base_rtt: T,
            path_rate: Rate::gbps(10),
            host_rate: Rate::gbps(10),
            deadline: None,
            background: false,
        }
    }

    /// A one-hop stack: timestamp and busy counter in ns, queueing delay in ns.
    fn stack1(ts: u64, busy: u64, q: u64) -> IntStack {
        let mut s = IntStack::default();
        s.push(Time::ns(ts), Time::ns(busy), Time::ns(q));
        s
    }

    fn stack2(a: (u64, u64, u64), b: (u64, u64, u64)) -> IntStack {
        let mut s = stack1(a.0, a.1, a.2);
        s.push(Time::ns(b.0), Time::ns(b.1), Time::ns(b.2));
        s
    }

    /// A state that has taken in its first feedback (records seeded at ts 0, busy 0, queue
    /// `q0` ns) with `lastUpdateSeq` = 10,000.
    fn seeded(q0: u64) -> HpccState {
        let mut s = HpccState::new(law());
        s.on_feedback(Time::us(1), 0, 10_000, &stack1(0, 0, q0));
        s
    }

    #[test]
    fn defaults_follow_the_paper_and_its_simulator() {
        let p = params();
        assert_eq!((p.eta, p.max_stage, p.fast_react, p.prio), (0.95, 5, true, 0));
        assert_eq!((p.t, p.min_rate, p.rto), (T, Rate::mbps(100), Time::ms(1)));
        assert_eq!((p.mss, p.overhead, p.ack_size), (1500 - 40 - 42, 82, 64 + 42));
        let l = Law::for_flow(&flow_info(1), &p);
        assert!((l.w_ai - 6.25).abs() < 1e-9, "{}", l.w_ai);
        assert_eq!(Law { w_ai: 6.25, ..l }, law());
        // At 100 Gbps the default W_AI is the simulator's 50 Mbps of rate: 50 Mbps x T.
        let mut f = flow_info(1);
        f.host_rate = Rate::gbps(100);
        let l = Law::for_flow(&f, &p);
        assert!((l.w_ai - 50e6 / 8.0 * 10e-6).abs() < 1e-9, "{}", l.w_ai);
    }

    #[test]
    fn config_errors_name_the_field() {
        let cases = [
            (serde_json::json!({"eta": 0.0}), "transport.eta"),
            (serde_json::json!({"eta": 1.5}), "transport.eta"),
            (serde_json::json!({"w_ai": "0B"}), "transport.w_ai"),
            (serde_json::json!({"t": "0us"}), "transport.t"),
            (serde_json::json!({"min_rate": "0Gbps"}), "transport.min_rate"),
            (serde_json::json!({"rto": "0ms"}), "transport.rto"),
            (serde_json::json!({"prio": 8}), "transport.prio"),
            (serde_json::json!({"int_header": "1460B"}), "transport.int_header"),
            (serde_json::json!({"eta": "high"}), "transport.eta"),
            (serde_json::json!({"max_stages": 5}), "transport.max_stages"),
        ];
        for (cfg, field) in cases {
            let e = HpccParams::from_config(&cfg, &net()).unwrap_err();
            assert_eq!(e.field(), field, "{cfg}: {e}");
        }
    }

    #[test]
    fn new_flow_starts_at_line_rate_with_u_one() {
        let s = HpccState::new(law());
        assert_eq!((s.w, s.wc, s.u, s.inc_stage), (12_500.0, 12_500.0, 1.0, 0));
    }

    #[test]
    fn first_ack_stores_records_and_sets_last_update_seq_without_changing_window() {
        let mut s = HpccState::new(law());
        s.on_feedback(Time::us(1), 1_418, 20_000, &stack1(500, 400, 3_000));
        assert_eq!((s.w, s.wc, s.u, s.last_update_seq), (12_500.0, 12_500.0, 1.0, 20_000));
        assert_eq!((s.nhop, s.hops[0]), (1, stack1(500, 400, 3_000).hop(0)));
    }

    /// One hop at u = 1.2: over tau = T = 10 us the port was busy 9.952 us (txRate / B =
    /// 0.9952) and its queue held 2.048 us of drain time at both samples (min / T = 0.2048).
    /// tau = T, so U = u = 1.2, and W = W^c / (1.2 / 0.95) + W_AI = 12,500 x 0.95 / 1.2 +
    /// 6.25 = 9,902.083.
    #[test]
    fn update_ack_one_hop_u_1_2_cuts_window_to_wc_eta_over_u_plus_wai() {
        let mut s = seeded(2_048);
        s.on_feedback(Time::us(11), 10_001, 30_000, &stack1(10_000, 9_952, 2_048));
        assert!((s.u - 1.2).abs() < 1e-12, "U {}", s.u);
        let w = 12_500.0 * 0.95 / 1.2 + 6.25;
        assert!((s.w - w).abs() < 1e-9, "W {} expected {w}", s.w);
        assert_eq!((s.wc, s.inc_stage, s.last_update_seq), (s.w, 0, 30_000));
    }

    /// Below the target with stages left: W = W^c + W_AI and the stage advances.
    #[test]
    fn update_ack_below_target_adds_wai_and_advances_stage() {
        let mut s = seeded(0);
        s.wc = 5_000.0;
        // Busy 5 us of 10 us, no queue: u = 0.5 = U (tau = T).
        s.on_feedback(Time::us(11), 10_001, 30_000, &stack1(10_000, 5_000, 0));
        assert!((s.u - 0.5).abs() < 1e-12);
        assert_eq!((s.w, s.wc, s.inc_stage), (5_006.25, 5_006.25, 1));
    }

    /// Below the target after maxStage additive stages: a multiplicative increase,
    /// W = W^c / (U / eta) + W_AI = 5,000 x 0.95 / 0.5 + 6.25 = 9,506.25, stage back to 0.
    #[test]
    fn update_ack_below_target_at_max_stage_scales_up_multiplicatively() {
        let mut s = seeded(0);
        s.wc = 5_000.0;
        s.inc_stage = 5;
        s.on_feedback(Time::us(11), 10_001, 30_000, &stack1(10_000, 5_000, 0));
        assert!((s.w - 9_506.25).abs() < 1e-9, "W {}", s.w);
        assert_eq!((s.wc, s.inc_stage), (s.w, 0));
    }

    /// An ACK not beyond lastUpdateSeq reacts (W from the same W^c) but keeps W^c, the stage
    /// and lastUpdateSeq.
    #[test]
    fn fast_react_ack_sets_window_but_keeps_reference_and_stage() {
        let mut s = seeded(2_048);
        s.inc_stage = 3;
        s.on_feedback(Time::us(11), 9_000, 30_000, &stack1(10_000, 9_952, 2_048));
        let w = 12_500.0 * 0.95 / 1.2 + 6.25;
        assert!((s.w - w).abs() < 1e-9);
        assert_eq!((s.wc, s.inc_stage, s.last_update_seq), (12_500.0, 3, 10_000));
        // With fast reaction off, the same ACK changes nothing.
        let mut s = seeded(2_048);
        s.law.fast_react = false;
        let before = s.clone();
        s.on_feedback(Time::us(11), 9_000, 30_000, &stack1(10_000, 9_952, 2_048));
        assert_eq!(s, before);
    }

    /// The EWMA weighs the sample by tau / T: tau = T / 4 gives U = 0.75 x 1 + 0.25 x 0.5.
    #[test]
    fn short_sample_moves_u_by_tau_over_t() {
        let mut s = seeded(0);
        s.on_feedback(Time::us(4), 5_000, 30_000, &stack1(2_500, 1_250, 0));
        assert!((s.u - 0.875).abs() < 1e-12, "U {}", s.u);
        // A sample longer than T counts as T (U = u).
        let mut s = seeded(0);
        s.on_feedback(Time::us(30), 5_000, 30_000, &stack1(25_000, 12_500, 0));
        assert!((s.u - 0.5).abs() < 1e-12, "U {}", s.u);
    }

    /// Two hops: the most utilised hop gives u and tau. Hop 0 idle half the time (0.5), hop 1
    /// busy all the time with 1.024 us of queue at both samples (1.1024).
    #[test]
    fn two_hops_take_the_most_utilised_hop() {
        let mut s = HpccState::new(law());
        s.on_feedback(Time::us(1), 0, 10_000, &stack2((0, 0, 0), (100, 0, 1_024)));
        s.on_feedback(Time::us(11), 10_001, 30_000, &stack2((10_000, 5_000, 0), (10_100, 10_000, 1_024)));
        assert!((s.u - 1.1024).abs() < 1e-12, "U {}", s.u);
    }

    /// The queue term takes the smaller of the two samples' queues (a queue that just formed
    /// does not count until it persists).
    #[test]
    fn queue_term_takes_min_of_consecutive_samples() {
        let mut s = seeded(0);
        s.on_feedback(Time::us(11), 10_001, 30_000, &stack1(10_000, 10_000, 5_000));
        assert!((s.u - 1.0).abs() < 1e-12, "U {}", s.u);
    }

    /// Feedback more than half the counters' period after the previous one only reseeds.
    #[test]
    fn stale_feedback_reseeds_without_measuring() {
        let mut s = seeded(0);
        let before = (s.w, s.wc, s.u);
        s.on_feedback(Time::us(1) + COUNTER_WRAP, 10_001, 30_000, &stack1(700, 100, 0));
        assert_eq!((s.w, s.wc, s.u), before);
        assert_eq!(s.hops[0], stack1(700, 100, 0).hop(0));
    }

    fn ctx<'a>(now: Time, host: u32, flows: &'a [FlowInfo], out: &'a mut Actions) -> Ctx<'a> {
        Ctx { now, host, flows, out }
    }

    /// At line rate the pacer spaces packets by their wire time at B (W = W_init, R = B):
    /// one packet per call, the next at 1,500 B x 8 / 10 Gbps = 1.2 us.
    #[test]
    fn start_sends_one_packet_and_arms_pacer_at_wire_time() {
        let p = params();
        let flows = [flow_info(100_000)];
        let mut s = HpSender::new(&flows[0], &p);
        let mut out = Actions::new();
        s.pump(&mut ctx(Time::ZERO, 0, &flows, &mut out), &flows[0], &p);
        assert_eq!(out.sends.len(), 1);
        let d = &out.sends[0];
        assert_eq!((d.seq, d.payload, d.size, d.kind), (0, 1_418, 1_500, KIND_DATA));
        assert_eq!(IntStack(crate::queue::int::block(d)).nhop(), 0);
        let pace: Vec<_> = out.timers.iter().filter(|t| untoken(t.1).1 == TIMER_PACE).collect();
        assert_eq!(pace.len(), 1);
        assert_eq!(pace[0].0, Rate::gbps(10).tx_time(Bytes(1_500)));
    }

    /// The window stops sending: with W = 3,000 B, two packets (2,836 B) are in flight and a
    /// third may go (2,836 < 3,000), then none.
    #[test]
    fn window_limits_bytes_in_flight() {
        let p = params();
        let flows = [flow_info(100_000)];
        let mut s = HpSender::new(&flows[0], &p);
        s.cc.w = 3_000.0;
        let mut out = Actions::new();
        for i in 0..10 {
            s.pump(&mut ctx(Time::us(100 * i), 0, &flows, &mut out), &flows[0], &p);
        }
        assert_eq!(out.sends.len(), 3);
        assert_eq!(s.nxt, 3 * 1_418);
    }

    /// A NACK sends the sender back to the NACKed byte; a timeout back to the first
    /// unacknowledged one. Both count the resent bytes.
    #[test]
    fn nack_goes_back_to_acked_byte_and_timeout_to_una() {
        let p = params();
        let flows = [flow_info(100_000)];
        let mut s = HpSender::new(&flows[0], &p);
        let mut out = Actions::new();
        for i in 0..5 {
            s.pump(&mut ctx(Time::us(10 * i), 0, &flows, &mut out), &flows[0], &p);
        }
        assert_eq!(s.nxt, 5 * 1_418);
        let nack = Packet { kind: KIND_NACK, ack: 1_418, flow: 0, ..Default::default() };
        out.clear();
        s.on_ack(&mut ctx(Time::us(60), 0, &flows, &mut out), &flows[0], &p, &nack);
        assert_eq!(s.una, 1_418);
        assert_eq!(out.sends[0].seq, 1_418, "resends from the NACKed byte");
        assert_eq!(s.stats.retx_bytes, 1_418);
        let rto = out.timers.iter().rev().find(|t| untoken(t.1).1 == TIMER_RTO).copied().unwrap();
        out.clear();
        let (_, kind, gen) = untoken(rto.1);
        s.on_timer(&mut ctx(rto.0, 0, &flows, &mut out), &flows[0], &p, kind, gen);
        assert_eq!(s.stats.timeouts, 1);
        assert_eq!(out.sends[0].seq, 1_418, "timeout resends from snd_una");
    }

    /// The receiver acknowledges in-order data with the next expected byte and echoes the INT
    /// block; the first packet past a hole gets a NACK, later ones plain ACKs; completion
    /// once, when the last byte arrives.
    #[test]
    fn receiver_acks_in_order_nacks_first_gap_and_completes_once() {
        let p = params();
        let flows = [flow_info(2_000)];
        let mut r = HpReceiver::default();
        let mut out = Actions::new();
        let mut d0 = Packet { kind: KIND_DATA, seq: 0, payload: 1_418, flow: 0, ..Default::default() };
        let mut s = IntStack::default();
        s.push(Time::ns(123), Time::ns(45), Time::ns(6));
        crate::queue::int::set_block(&mut d0, &s.0);
        assert!(!r.on_data(&mut ctx(Time::us(1), 1, &flows, &mut out), &flows[0], &p, &d0));
        let a = out.sends[0];
        assert_eq!((a.kind, a.ack, a.size, a.src, a.dst), (KIND_ACK, 1_418, 106, 1, 0));
        assert_eq!(IntStack(ack_block(&a)), s, "the ACK echoes the data packet's INT");
        out.clear();
        let late = Packet { kind: KIND_DATA, seq: 2_836, payload: 100, ..Default::default() };
        r.on_data(&mut ctx(Time::us(2), 1, &flows, &mut out), &flows[0], &p, &late);
        r.on_data(&mut ctx(Time::us(3), 1, &flows, &mut out), &flows[0], &p, &late);
        assert_eq!(
            out.sends.iter().map(|a| (a.kind, a.ack)).collect::<Vec<_>>(),
            [(KIND_NACK, 1_418), (KIND_ACK, 1_418)]
        );
        let d1 = Packet { kind: KIND_DATA, seq: 1_418, payload: 582, ..Default::default() };
        assert!(r.on_data(&mut ctx(Time::us(4), 1, &flows, &mut out), &flows[0], &p, &d1));
        assert!(!r.on_data(&mut ctx(Time::us(5), 1, &flows, &mut out), &flows[0], &p, &d1));
    }

    /// A 0-byte flow sends one empty data packet and finishes on its ACK.
    #[test]
    fn zero_byte_flow_sends_one_packet_and_finishes_on_its_ack() {
        let p = params();
        let flows = [flow_info(0)];
        let mut s = HpSender::new(&flows[0], &p);
        let mut out = Actions::new();
        s.pump(&mut ctx(Time::ZERO, 0, &flows, &mut out), &flows[0], &p);
        assert_eq!(out.sends.len(), 1);
        assert_eq!(out.sends[0].payload, 0);
        let ack = Packet { kind: KIND_ACK, ack: 0, ..Default::default() };
        s.on_ack(&mut ctx(Time::us(10), 0, &flows, &mut out), &flows[0], &p, &ack);
        assert!(s.done);
    }
}
