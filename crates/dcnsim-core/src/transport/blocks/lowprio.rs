//! The low-priority opportunistic loop and the dual-loop engine that RC3 and PPT share.
//!
//! # What is modelled
//! A flow runs two control loops over one send buffer (RC3, Mittal et al. NSDI 2014, §3;
//! PPT, Suo et al. SIGCOMM 2024, §3 and §5):
//! - the **high-priority loop (HCP)** is an unmodified [`TcpSender`]/[`TcpReceiver`] (DCTCP or
//!   TCP) sending from the head of the buffer;
//! - the **low-priority loop (LCP)** ([`LpSender`], [`LpReceiver`]) sends *opportunistic*
//!   packets (flag `OPPORTUNISTIC`, lower classes) from the tail of the buffer backwards, one
//!   MSS-grid segment at a time, and never below the highest byte the HCP has sent (the loops
//!   "meet in the middle"). The LCP never retransmits: a lost opportunistic packet is left for
//!   the HCP, which sends every byte not known to be delivered.
//!
//! LCP state machine ([`LpSender`]): `open(I, rtt)` starts a loop with an initial window of
//! `I` bytes, either paced evenly over one RTT (PPT §3.2: rate I/RTT) or sent at once (RC3's
//! line-rate first window, PPT "w/o EWD"). The receiver returns one low-priority ACK per
//! `ack_every` (= 2) opportunistic packets. Each LP ACK releases packets according to
//! [`Release`]: `Ewd` one packet per ACK (so the window halves every RTT: PPT's exponential
//! window decrease), `Clock` one packet per packet acknowledged (constant window: RC3's ACK
//! clocking), `LineRate` none, since the loop then sends at the host's line rate from its
//! opening until it closes (PPT "w/o EWD"). With `ecn` on, opportunistic packets are
//! ECN-capable and an LP ACK whose ECE bit is set releases nothing (PPT §3.2, first remark)
//! and stops a paced or line-rate sequence. A loop ends when `idle_rtts` (= 2)
//! RTTs pass without an LP ACK (PPT §3.2, second remark) or when the tail reaches the HCP.
//!
//! Meeting in the middle (PPT §5.2): every LP ACK names the byte ranges of the opportunistic
//! packets it acknowledges; the HCP's ACKs also carry the receiver's lowest out-of-order block
//! (its SACK block). The sender keeps these *known delivered* ranges and hands them to the
//! HCP at the next HCP ACK or RTO as skip ranges ([`TcpSender::note_delivered`]), so the HCP
//! neither sends them nor counts them in flight; when the receiver's cumulative ACK jumps over
//! LCP data, the HCP's `snd_una`/`snd_nxt` jump with it (the embedded sender accepts ACKs
//! above `snd_max`).
//!
//! # Header layout
//! - LP data (`kind = KIND_LP_DATA`, flags `DATA | OPPORTUNISTIC`): `seq` = byte offset,
//!   `payload` <= MSS on the MSS grid, `ts` = send time, `ecn = Ect` iff LCP ECN is on.
//! - LP ACK (`kind = KIND_LP_ACK`, `ctrl_size` bytes, class of the data it answers):
//!   first range `[seq, seq + rank)`, second range `[aux, aux + (aux2 & LP_LEN_MASK))` (empty
//!   when one packet is acknowledged), `aux2` bit 31 = ECE (some acknowledged packet was CE),
//!   `ack` = the receiver's cumulative ACK, `ts` = echoed send time of the last packet.
//!
//! Timers (token kinds, generation from a [`TimerSlot`]): [`TIMER_LP_PACE`],
//! [`TIMER_LP_IDLE`] at the sender. (A delayed case-1 loop opens at the flow's first HCP
//! ACK, not by a timer; [`TIMER_LP_OPEN`] is no longer armed.)
//!
//! # Choices where the papers leave room
//! - The delivered ranges are not SACK blocks for the HCP: the embedded RFC 6675 sender
//!   counts SACKed bytes above a hole as loss evidence, so LCP ranges above its window would
//!   make in-flight HCP data look lost and cause spurious retransmissions where the loops
//!   meet. Only the receiver's own SACK blocks (on HCP ACKs, below `snd_max`) are loss
//!   evidence. (Earlier versions SACK-tagged them lazily, within reach of the HCP's window.)
//!   This applies to RC3 too (shared engine).
//! - With `react_ece` (PPT), an LP ACK with ECE also cancels the rest of a paced initial
//!   window.
//! - What opens a case-2 loop is the HCP transport's congestion signal, a [`Case2`] trigger:
//!   DCTCP's alpha (PPT §3.1; alpha at its minimum since start-up, at most one loop per
//!   congestion episode, a round in which alpha rose or the end of start-up, and
//!   I = min(Eq. 2, W_max - cwnd); see ppt.rs) or Swift's delay below its target (PPT §6.2
//!   Fig. 14). Everything else (case 1, EWD, LCP ECN, meeting in the middle, tagging) is the
//!   same code for both.
//! - Opportunistic data is stored by the same [`TcpReceiver`] (so completion is reported
//!   exactly once, when every byte is held, whichever loop brought it); the ACKs it would
//!   generate for an opportunistic packet are forwarded to the HCP only when they advance
//!   the cumulative ACK (the loops crossed), never as duplicate ACKs.
//! - The initial window in packets is I / MSS rounded to the nearest integer; a window
//!   below half a packet opens no loop.
//! - A packet released while nothing is left between the HCP and the tail is not sent and
//!   the loop closes.
//! - The RTT used for pacing and the idle timeout is max(base RTT, HCP smoothed RTT), taken
//!   when the loop opens; with `lp_rtt` (PPT `lcp_rtt = "lp"`) the idle timeout uses at least
//!   the smoothed LP ACK round trip, updated per LP ACK (see ppt.rs, "Which RTT").

use crate::packet::{Ecn, FlowId, Packet, PacketFlags};
use crate::transport::tcp::{
    ack_after_completion, ConstPrio, FlowCtx, PriorityPolicy, TcpParams, TcpReceiver, TcpSender, KIND_ACK, KIND_DATA,
    TIMER_DELACK, TIMER_PACE, TIMER_RTO,
};
use crate::transport::{token, untoken, Actions, Ctx, FlowInfo, FlowStats, TimerSlot};
use crate::units::Time;

/// `Packet::kind` of an opportunistic data packet.
pub const KIND_LP_DATA: u8 = 16;
/// `Packet::kind` of a low-priority ACK.
pub const KIND_LP_ACK: u8 = 17;
/// Timer kind: the next paced opportunistic packet.
pub const TIMER_LP_PACE: u8 = 16;
/// Timer kind: check whether the loop has been idle for `idle_rtts` RTTs.
pub const TIMER_LP_IDLE: u8 = 17;
/// Timer kind once used for a delayed loop initialisation (kept reserved; unused).
pub const TIMER_LP_OPEN: u8 = 18;
/// LP ACK `aux2` bit: ECN-Echo.
pub const LP_ACK_ECE: u32 = 1 << 31;
/// LP ACK `aux2` bits: length of the second acknowledged range.
pub const LP_LEN_MASK: u32 = LP_ACK_ECE - 1;

/// How an LP ACK releases new opportunistic packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// One packet per (non-ECE) LP ACK: the window halves every RTT (PPT EWD).
    Ewd,
    /// One packet per packet acknowledged: constant window (RC3 ACK clocking).
    Clock,
    /// Nothing: only the initial window is sent (the "hypothetical DCTCP" refill per RTT).
    None,
    /// No window at all: once open, the loop sends at the host's line rate until it closes
    /// (PPT "w/o EWD", Fig. 16); LP ACKs release nothing extra.
    LineRate,
}

/// Parameters of the low-priority loop.
#[derive(Clone, Debug, PartialEq)]
pub struct LpParams {
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    /// Opportunistic packets are ECN-capable (ECT).
    pub ect: bool,
    /// An LP ACK with ECE set releases nothing.
    pub react_ece: bool,
    pub release: Release,
    /// Pace the initial window over one RTT (else send it at once).
    pub pace: bool,
    /// Close the loop after this many RTTs without an LP ACK.
    pub idle_rtts: u32,
    /// The receiver sends one LP ACK per this many opportunistic packets.
    pub ack_every: u32,
    /// LP ACKs that arrive after their loop has ended (idle rule) still release packets
    /// under `Ewd` (PPT `lcp_late_acks`, see ppt.rs); false: a closed loop sends nothing.
    pub late_acks: bool,
    /// The idle rule's RTT also covers the loop's own measured round trip: idle length =
    /// `idle_rtts` x max(the RTT given at opening, the smoothed LP ACK round trip) (PPT
    /// `lcp_rtt = "lp"`, see ppt.rs); false: `idle_rtts` x the RTT given at opening.
    pub lp_rtt: bool,
}

/// What an LCP call needs besides the loop's own state.
pub struct LpCx<'a> {
    pub now: Time,
    pub flow: &'a FlowInfo,
    pub p: &'a LpParams,
    pub out: &'a mut Actions,
    /// Never send below this byte offset (the HCP's highest byte sent + 1).
    pub floor: u64,
    /// End of the application data currently in the send buffer.
    pub buf_end: u64,
    /// Class of an opportunistic packet starting at the given offset.
    pub prio: &'a dyn Fn(u64) -> u8,
    /// Wire bytes of this flow the host NIC may still take under the per-flow NIC limit
    /// (`host.tsq`) once the HCP's own bytes there are counted; `u64::MAX` without a limit.
    pub nic_room: u64,
}

/// Counters of one flow's low-priority loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LpStats {
    pub loops: u32,
    pub pkts: u64,
    pub bytes: u64,
    pub acks: u64,
    pub ece_acks: u64,
    /// Loops opened by PPT's case 2 (Eq. 2).
    pub case2_loops: u32,
    /// Opportunistic packets sent as part of an initial window (the rest were released by
    /// LP ACKs).
    pub window_pkts: u64,
    /// Opportunistic packets sent by case-2 loops (window and released).
    pub case2_pkts: u64,
    /// Sum over LP ACKs of (arrival time - send time of the last packet it acknowledges), ps:
    /// with `acks`, the mean low-priority round trip including queueing.
    pub ack_rtt_ps: u64,
    /// Loops ended by the idle rule (`idle_rtts` RTTs without an LP ACK).
    pub closed_idle: u32,
    /// Loops ended because nothing was left between the HCP and the tail (the loops met).
    pub closed_met: u32,
    /// LP ACKs that arrived while no loop was open.
    pub late_acks: u64,
    /// ... of which carried ECE.
    pub late_ece: u64,
    /// Opportunistic packets released by such late LP ACKs (`late_acks` option).
    pub late_pkts: u64,
    /// Releases held back because the flow's bytes in the host NIC were at the per-flow
    /// limit (`host.tsq`); each is sent when the NIC drains, or forgotten if the loop closes
    /// first. `window_pkts`, `case2_pkts` and `late_pkts` count releases, held back or not.
    pub deferred: u64,
}

/// Insert `[a, b)` into sorted disjoint ranges, merging touching ones.
pub(crate) fn insert_range(v: &mut Vec<(u64, u64)>, a: u64, b: u64) {
    if a >= b {
        return;
    }
    let i = v.partition_point(|&(_, y)| y < a);
    let mut j = i;
    let (mut na, mut nb) = (a, b);
    while j < v.len() && v[j].0 <= b {
        na = na.min(v[j].0);
        nb = nb.max(v[j].1);
        j += 1;
    }
    if j == i + 1 && v[i] == (na, nb) {
        return;
    }
    v.splice(i..j, std::iter::once((na, nb)));
}

/// The sending half of a low-priority opportunistic loop.
#[derive(Clone, Debug)]
pub struct LpSender {
    id: FlowId,
    size: u64,
    open: bool,
    to_pace: u64,
    pace_gap: Time,
    pace: TimerSlot,
    idle: TimerSlot,
    last_ack: Time,
    idle_len: Time,
    /// The RTT given when the open loop opened.
    rtt_open: Time,
    /// Smoothed round trip of LP ACKs (arrival - echoed send time), over every loop of the
    /// flow (gain 1/8, the first sample taken as is); None before the first LP ACK.
    lp_srtt: Option<Time>,
    /// The open loop is a case-2 loop (statistics only).
    case2: bool,
    /// Ranges this loop has sent (sorted, disjoint).
    sent: Vec<(u64, u64)>,
    /// Ranges known delivered, not yet handed to the HCP (sorted, disjoint).
    delivered: Vec<(u64, u64)>,
    /// Wire bytes of this loop's packets still in the host NIC (per-flow NIC limit).
    nic_bytes: u64,
    /// Releases of the open loop held back by the per-flow NIC limit, sent as the NIC drains.
    deferred: u64,
    stats: LpStats,
}

impl LpSender {
    pub fn new(flow: &FlowInfo) -> LpSender {
        LpSender {
            id: flow.id,
            size: flow.size.0,
            open: false,
            to_pace: 0,
            pace_gap: Time::ZERO,
            pace: TimerSlot::default(),
            idle: TimerSlot::default(),
            last_ack: Time::ZERO,
            idle_len: Time::ZERO,
            rtt_open: Time::ZERO,
            lp_srtt: None,
            case2: false,
            sent: Vec::new(),
            delivered: Vec::new(),
            nic_bytes: 0,
            deferred: 0,
            stats: LpStats::default(),
        }
    }
    pub fn is_open(&self) -> bool {
        self.open
    }
    pub fn stats(&self) -> LpStats {
        self.stats
    }
    /// Ranges sent by this loop.
    pub fn sent(&self) -> &[(u64, u64)] {
        &self.sent
    }
    /// Known-delivered ranges not yet handed to the HCP.
    pub fn pending_delivered(&self) -> &[(u64, u64)] {
        &self.delivered
    }
    /// Opportunistic packets still to be paced out of the initial window.
    pub fn to_pace(&self) -> u64 {
        self.to_pace
    }
    /// Smoothed LP ACK round trip (None before the first LP ACK).
    pub fn lp_srtt(&self) -> Option<Time> {
        self.lp_srtt
    }
    /// How long the open loop may go without an LP ACK before the idle rule ends it.
    pub fn idle_len(&self) -> Time {
        self.idle_len
    }

    fn idle_len_for(&self, p: &LpParams) -> Time {
        let rtt = match (p.lp_rtt, self.lp_srtt) {
            (true, Some(s)) => self.rtt_open.max(s),
            _ => self.rtt_open,
        };
        rtt * p.idle_rtts.max(1) as u64
    }

    /// Start a loop with an initial window of `init_bytes`; returns false (and stays closed)
    /// if a loop is already open, the window is below half a packet, or nothing is left.
    pub fn open(&mut self, lx: &mut LpCx, init_bytes: u64, rtt: Time) -> bool {
        let mss = lx.p.mss;
        let n = (init_bytes + mss / 2) / mss;
        if self.open || n == 0 || self.next_segment(lx.floor, lx.buf_end, mss).is_none() {
            return false;
        }
        self.open = true;
        self.case2 = false;
        self.stats.loops += 1;
        self.last_ack = lx.now;
        self.rtt_open = rtt;
        self.idle_len = self.idle_len_for(lx.p);
        let g = self.idle.arm(lx.now + self.idle_len);
        lx.out.timer(lx.now + self.idle_len, token(self.id, TIMER_LP_IDLE, g));
        if lx.p.release == Release::LineRate {
            self.pace_gap = lx.flow.host_rate.tx_time(crate::units::Bytes(mss + lx.p.header));
            self.to_pace = u64::MAX;
            if self.send_one(lx) {
                self.stats.window_pkts += 1;
                let at = lx.now + self.pace_gap;
                let g = self.pace.arm(at);
                lx.out.timer(at, token(self.id, TIMER_LP_PACE, g));
            }
        } else if lx.p.pace && n > 1 {
            self.pace_gap = Time(rtt.0 / n);
            self.to_pace = n - 1;
            if self.send_one(lx) {
                self.stats.window_pkts += 1;
                let at = lx.now + self.pace_gap;
                let g = self.pace.arm(at);
                lx.out.timer(at, token(self.id, TIMER_LP_PACE, g));
            }
        } else {
            for _ in 0..n {
                if !self.send_one(lx) {
                    break;
                }
                self.stats.window_pkts += 1;
            }
        }
        true
    }

    /// Count the open loop as a case-2 loop in the statistics (`pkts_before` = the packet
    /// count before it opened).
    pub fn mark_case2(&mut self, pkts_before: u64) {
        self.case2 = true;
        self.stats.case2_pkts += self.stats.pkts - pkts_before;
    }

    /// End the loop (timers become stale).
    pub fn close(&mut self) {
        self.open = false;
        self.to_pace = 0;
        self.deferred = 0;
        self.pace.cancel();
        self.idle.cancel();
    }

    /// Record bytes the receiver is known to hold.
    pub fn note_delivered(&mut self, a: u64, b: u64) {
        insert_range(&mut self.delivered, a, b.min(self.size));
    }

    /// Hand every known-delivered range starting below `horizon` to `f` and forget it.
    pub fn hand_over(&mut self, horizon: u64, mut f: impl FnMut(u64, u64)) {
        let k = self.delivered.partition_point(|&(a, _)| a < horizon);
        if k > 0 {
            for &(a, b) in &self.delivered[..k] {
                f(a, b);
            }
            self.delivered.drain(..k);
        }
    }

    /// Process an LP ACK (`kind == KIND_LP_ACK`).
    pub fn on_ack(&mut self, lx: &mut LpCx, pkt: &Packet) {
        let (r1, r2, ece) = parse_lp_ack(pkt);
        let count = (r1.1 > r1.0) as u64 + (r2.1 > r2.0) as u64;
        self.note_delivered(r1.0, r1.1);
        self.note_delivered(r2.0, r2.1);
        self.stats.acks += 1;
        let sample = Time(lx.now.0.saturating_sub(pkt.ts.0));
        self.stats.ack_rtt_ps += sample.0;
        self.lp_srtt = Some(match self.lp_srtt {
            None => sample,
            Some(s) => Time(s.0 - s.0 / 8 + sample.0 / 8),
        });
        if !self.open {
            self.stats.late_acks += 1;
            self.stats.late_ece += ece as u64;
            // `late_acks`: a plain LP ACK releases one packet even after the idle rule ended
            // its loop (PPT §3.2 / §5.2 `tcp_ack_loops` release on every non-ECE LP ACK); an
            // ECE one releases nothing. No loop reopens and no timer is armed.
            if lx.p.late_acks && lx.p.release == Release::Ewd && !(ece && lx.p.react_ece) && self.send_one(lx) {
                self.stats.late_pkts += 1;
            }
            return;
        }
        self.last_ack = lx.now;
        if lx.p.lp_rtt {
            // The idle length follows the measured LP round trip; if it shrank below the armed
            // check, re-arm at the new deadline (a longer one is handled when the check fires).
            self.idle_len = self.idle_len_for(lx.p);
            let due = self.last_ack + self.idle_len;
            if self.idle.is_armed() && due < self.idle.at {
                let g = self.idle.arm(due);
                lx.out.timer(due, token(self.id, TIMER_LP_IDLE, g));
            }
        }
        if ece && lx.p.react_ece {
            // PPT §3.2 / §6.1.2: congestion suspends opportunistic sending, including what is
            // left of a paced initial window.
            self.stats.ece_acks += 1;
            self.to_pace = 0;
            self.pace.cancel();
            return;
        }
        let n = match lx.p.release {
            Release::Ewd => 1,
            Release::Clock => count.max(1),
            Release::None | Release::LineRate => 0,
        };
        for _ in 0..n {
            if !self.send_one(lx) {
                break;
            }
        }
    }

    /// Handle a firing LP timer (`kind` is [`TIMER_LP_PACE`] or [`TIMER_LP_IDLE`]).
    // `fire` disarms the slot: keeping it out of a match guard keeps that side effect visible.
    #[allow(clippy::collapsible_match)]
    pub fn on_timer(&mut self, lx: &mut LpCx, kind: u8, gen: u32) {
        match kind {
            TIMER_LP_PACE => {
                if self.pace.fire(gen) && self.open && self.to_pace > 0 {
                    self.to_pace -= 1;
                    let sent = self.send_one(lx);
                    self.stats.window_pkts += sent as u64;
                    if sent && self.to_pace > 0 {
                        let at = lx.now + self.pace_gap;
                        let g = self.pace.arm(at);
                        lx.out.timer(at, token(self.id, TIMER_LP_PACE, g));
                    }
                }
            }
            TIMER_LP_IDLE => {
                if self.idle.fire(gen) && self.open {
                    let due = self.last_ack + self.idle_len;
                    if lx.now >= due {
                        self.stats.closed_idle += 1;
                        self.close();
                    } else {
                        let g = self.idle.arm(due);
                        lx.out.timer(due, token(self.id, TIMER_LP_IDLE, g));
                    }
                }
            }
            _ => {}
        }
    }

    /// The highest MSS-grid segment below the buffer end that this loop has not sent and
    /// that lies above `floor`.
    fn next_segment(&self, floor: u64, buf_end: u64, mss: u64) -> Option<(u64, u64)> {
        let mut end = if buf_end >= self.size { self.size } else { (buf_end / mss) * mss };
        for &(a, b) in self.sent.iter().rev() {
            if a >= end {
                continue;
            }
            if b >= end {
                end = a;
            } else {
                break;
            }
        }
        if end <= floor || end == 0 {
            return None;
        }
        let start = (((end - 1) / mss) * mss).max(floor);
        Some((start, end))
    }

    /// Release one opportunistic packet: sent now, or held back while the flow's bytes in the
    /// host NIC are at the per-flow limit (sent by [`LpSender::on_tx_complete`] as the NIC
    /// drains). False (and the loop closes) if nothing is left to send.
    fn send_one(&mut self, lx: &mut LpCx) -> bool {
        if self.next_segment(lx.floor, lx.buf_end, lx.p.mss).is_none() {
            self.stats.closed_met += self.open as u32;
            self.close();
            return false;
        }
        if self.nic_bytes >= lx.nic_room {
            self.deferred += 1;
            self.stats.deferred += 1;
            return true;
        }
        self.send_now(lx);
        true
    }

    /// One of this loop's packets (`wire` bytes) left the host NIC: send releases held back
    /// by the per-flow NIC limit while there is room.
    pub fn on_tx_complete(&mut self, lx: &mut LpCx, wire: u64) {
        self.nic_bytes = self.nic_bytes.saturating_sub(wire);
        self.flush(lx);
    }

    /// Whether releases are held back by the per-flow NIC limit (only then can a packet
    /// leaving the NIC let one go).
    pub fn has_deferred(&self) -> bool {
        self.deferred > 0
    }

    /// Send held-back releases while the per-flow NIC limit has room (the HCP's packets
    /// leaving the NIC make room too).
    pub fn flush(&mut self, lx: &mut LpCx) {
        while self.deferred > 0 && self.nic_bytes < lx.nic_room {
            if self.next_segment(lx.floor, lx.buf_end, lx.p.mss).is_none() {
                self.deferred = 0;
                break;
            }
            self.deferred -= 1;
            self.send_now(lx);
        }
    }

    fn send_now(&mut self, lx: &mut LpCx) {
        let Some((s, e)) = self.next_segment(lx.floor, lx.buf_end, lx.p.mss) else { return };
        let payload = e - s;
        self.nic_bytes += payload + lx.p.header;
        lx.out.send(Packet {
            src: lx.flow.src,
            dst: lx.flow.dst,
            flow: self.id,
            size: (payload + lx.p.header) as u32,
            payload: payload as u32,
            prio: (lx.prio)(s),
            ecn: if lx.p.ect { Ecn::Ect } else { Ecn::NotEct },
            flags: PacketFlags(PacketFlags::DATA | PacketFlags::OPPORTUNISTIC),
            kind: KIND_LP_DATA,
            seq: s,
            ts: lx.now,
            ..Packet::default()
        });
        insert_range(&mut self.sent, s, e);
        self.stats.pkts += 1;
        self.stats.case2_pkts += self.case2 as u64;
        self.stats.bytes += payload;
    }
}

/// Decode an LP ACK: (first range, second range, ECE).
pub fn parse_lp_ack(pkt: &Packet) -> ((u64, u64), (u64, u64), bool) {
    let r1 = (pkt.seq, pkt.seq + pkt.rank as u64);
    let len2 = (pkt.aux2 & LP_LEN_MASK) as u64;
    let r2 = (pkt.aux, pkt.aux + len2);
    (r1, r2, pkt.aux2 & LP_ACK_ECE != 0)
}

/// The receiving half of a low-priority loop: one LP ACK per `ack_every` opportunistic
/// packets. It does not store data (the embedding transport's receiver does).
#[derive(Clone, Debug, Default)]
pub struct LpReceiver {
    pending: u32,
    first: (u64, u64),
    ce: bool,
    pkts: u64,
}

impl LpReceiver {
    pub fn new() -> LpReceiver {
        LpReceiver::default()
    }
    /// Opportunistic packets received.
    pub fn packets(&self) -> u64 {
        self.pkts
    }
    /// Account an opportunistic packet; returns the LP ACK to send, if this packet completes
    /// a group of `ack_every`. `rcv_nxt` is the receiver's cumulative ACK after storing it.
    pub fn on_data(&mut self, p: &LpParams, flow: &FlowInfo, pkt: &Packet, rcv_nxt: u64) -> Option<Packet> {
        self.pkts += 1;
        let r = (pkt.seq, pkt.seq + pkt.payload as u64);
        let ce = pkt.ecn == Ecn::Ce;
        if self.pending == 0 {
            self.first = r;
            self.ce = ce;
        } else {
            self.ce |= ce;
        }
        self.pending += 1;
        if self.pending < p.ack_every.max(1) {
            return None;
        }
        let (r1, r2) = if self.pending == 1 { (r, (0, 0)) } else { (self.first, r) };
        let mut aux2 = ((r2.1 - r2.0) as u32) & LP_LEN_MASK;
        if self.ce {
            aux2 |= LP_ACK_ECE;
        }
        self.pending = 0;
        self.ce = false;
        Some(Packet {
            src: flow.dst,
            dst: flow.src,
            flow: flow.id,
            size: p.ctrl_size as u32,
            payload: 0,
            prio: pkt.prio,
            ecn: Ecn::NotEct,
            flags: PacketFlags::default(),
            kind: KIND_LP_ACK,
            seq: r1.0,
            rank: (r1.1 - r1.0) as u32,
            aux: r2.0,
            aux2,
            ack: rcv_nxt,
            ts: pkt.ts,
            ..Packet::default()
        })
    }
}

// ------------------------------------------------------------------------------------------
// The dual-loop engine
// ------------------------------------------------------------------------------------------

/// When low-priority loops open.
#[derive(Clone, Debug, PartialEq)]
pub enum OpenPolicy {
    /// RC3: one loop at flow start with I = BDP - initial window, never reopened.
    AtStart,
    /// PPT §3.1: case 1 at start (I = BDP - initial window; one RTT later for identified
    /// large flows, with `delay_large`), case 2 as `case2` says.
    Intermittent { case2: Case2, delay_large: bool },
    /// PPT §2.3's "hypothetical DCTCP": at flow start and at every HCP round a fresh loop
    /// sends fill x MW - cwnd bytes (nothing when negative) paced over the round, where
    /// MW = max(path BDP, largest cwnd so far) stands in for the maximum window recorded in
    /// a previous plain-DCTCP run. `fill = 1.0` fills the gap to MW (Fig. 2); Fig. 3 varies
    /// it from 0.5 to 1.5.
    Hypothetical { fill: f64 },
}

/// What opens a case-2 loop (spare bandwidth after start-up): the congestion signal of the
/// high-priority loop's transport.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Case2 {
    /// No case-2 loops.
    Off,
    /// DCTCP HCP (PPT §3.1): after start-up, at the end of an HCP round whose alpha is the
    /// minimum of the last `window` rounds (`window = 0`: of every round since start-up),
    /// once per congestion episode; I = min((1/2 - alpha_min) x W_max, W_max - cwnd) (Eq. 2
    /// within the gap to W_max).
    Alpha { window: usize },
    /// Swift HCP (PPT §6.2, "PPT on delay-based transport"): on an HCP ACK at which the fabric
    /// delay falls below Swift's target delay (the previous ACK's was at or above it);
    /// I = min(W_max - cwnd, max_mdf x W_max): the gap to the largest window since the flow
    /// started (PPT §3: LCP + HCP windows stay within W_max), bounded as Eq. 2 bounds it
    /// (DCTCP's largest cut 1/2 replaced by Swift's `max_mdf`).
    Delay,
}

/// How packets are classed.
#[derive(Clone, Debug, PartialEq)]
pub enum Tagging {
    /// RC3: HCP in `hcp`; opportunistic packets by distance from the end of the flow: the
    /// last `levels[0]` packets in class `first_lp`, the next `levels[1]` in `first_lp + 1`,
    /// ..., the rest in `first_lp + levels.len()`.
    Rc3 { hcp: u8, first_lp: u8, levels: Vec<u64> },
    /// PPT §4.2 mirror-symmetric tagging: HCP in `0..half`, LCP in `half..2 half`; identified
    /// large flows use the last class of each half, others start at the first and are
    /// demoted by `mlfq` (bytes sent by both loops). `scheduling = false` puts every HCP
    /// packet in class 0 and every LCP packet in class `half`.
    Mirror { mlfq: crate::transport::tagging::Mlfq, half: u8, scheduling: bool },
}

/// Parameters of a dual-loop transport.
#[derive(Clone, Debug, PartialEq)]
pub struct DualParams {
    pub name: &'static str,
    pub tcp: TcpParams,
    pub lp: LpParams,
    /// Run the low-priority loop at all.
    pub lcp: bool,
    pub open: OpenPolicy,
    pub tagging: Tagging,
    /// Application send buffer (bytes): the first write is min(size, send_buffer) and the
    /// tail the LCP sends from is min(size, snd_una + send_buffer).
    pub send_buffer: u64,
    /// Flows whose first write exceeds this are identified as large (None: never).
    pub identify_above: Option<u64>,
    /// Emulate a per-class admission limit for low-priority packets: the receiver discards
    /// CE-marked opportunistic packets (see rc3.rs).
    pub discard_ce_lp: bool,
    /// Class of HCP ACKs.
    pub ack_prio: u8,
}

struct SndFlow {
    hcp: TcpSender,
    lp: LpSender,
    large: bool,
    startup_over: bool,
    w_max: u64,
    round_end: u64,
    alphas: [f64; 32],
    n_alpha: usize,
    /// The lowest alpha sample since start-up ended (`alpha_window = 0`).
    amin_all: f64,
    /// A congestion episode (a round in which alpha rose, or the end of start-up) has begun
    /// and no case-2 loop has been opened for it yet.
    episode: bool,
    /// The latest HCP ACK's fabric delay was at or above Swift's target (delay trigger).
    delay_above: bool,
    /// A delayed case-1 loop (identified large flow) waits for the flow's 2nd round, i.e.
    /// its first HCP ACK.
    case1_pending: bool,
}

struct RcvFlow {
    tcp: TcpReceiver,
    lp: LpReceiver,
    last_ack: u64,
}

#[derive(Default)]
enum Half<T> {
    #[default]
    Idle,
    Active(Box<T>),
    Done,
}

#[derive(Default)]
struct Slot {
    snd: Half<SndFlow>,
    rcv: Half<RcvFlow>,
    stats: FlowStats,
    lp_stats: LpStats,
    /// Payload bytes of opportunistic packets that reached the receiver (any state, after
    /// the emulated admission drop of `discard_ce_lp`).
    lp_rcvd: u64,
}

/// The HCP's priority policy for one call.
struct HcpPolicy<'a> {
    tagging: &'a Tagging,
    large: bool,
    extra: u64,
    ack: u8,
}

impl HcpPolicy<'_> {
    fn hcp_class(&self, sent: u64) -> u8 {
        match self.tagging {
            Tagging::Rc3 { hcp, .. } => *hcp,
            Tagging::Mirror { mlfq, half, scheduling } => {
                if !*scheduling {
                    0
                } else if self.large {
                    half - 1
                } else {
                    mlfq.class(sent + self.extra).min(half - 1)
                }
            }
        }
    }
}

impl PriorityPolicy for HcpPolicy<'_> {
    fn prio(&self, _flow: &FlowInfo, bytes_sent_before: u64, _seq: u64) -> u8 {
        self.hcp_class(bytes_sent_before)
    }
    fn ack_prio(&self, _flow: &FlowInfo, _data_prio: u8) -> u8 {
        self.ack
    }
}

/// HCP + LCP for every host of a run (the engine behind `rc3` and `ppt`).
pub struct DualLoop {
    p: DualParams,
    slots: Vec<Slot>,
    scratch: Actions,
}

/// Per-flow observations for tests and diagnostics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DualView {
    pub large: bool,
    pub lp_open: bool,
    pub lp: LpStats,
    pub cwnd: u64,
    pub alpha: f64,
    pub w_max: u64,
    pub startup_over: bool,
    pub snd_una: u64,
    pub snd_max: u64,
}

impl DualLoop {
    pub fn new(p: DualParams) -> DualLoop {
        DualLoop { p, slots: Vec::new(), scratch: Actions::new() }
    }
    pub fn params(&self) -> &DualParams {
        &self.p
    }
    /// State of a live sender.
    pub fn view(&self, flow: FlowId) -> Option<DualView> {
        match self.slots.get(flow as usize).map(|s| &s.snd) {
            Some(Half::Active(f)) => Some(DualView {
                large: f.large,
                lp_open: f.lp.is_open(),
                lp: f.lp.stats(),
                cwnd: f.hcp.cwnd(),
                alpha: f.hcp.alpha(),
                w_max: f.w_max,
                startup_over: f.startup_over,
                snd_una: f.hcp.snd_una(),
                snd_max: f.hcp.snd_max(),
            }),
            _ => None,
        }
    }
    /// Low-priority counters of a flow (live or finished).
    pub fn lp_stats(&self, flow: FlowId) -> LpStats {
        match self.slots.get(flow as usize) {
            Some(Slot { snd: Half::Active(f), .. }) => f.lp.stats(),
            Some(s) => s.lp_stats,
            None => LpStats::default(),
        }
    }
    /// The live HCP sender of a flow.
    pub fn hcp(&self, flow: FlowId) -> Option<&TcpSender> {
        match self.slots.get(flow as usize).map(|s| &s.snd) {
            Some(Half::Active(f)) => Some(&f.hcp),
            _ => None,
        }
    }
    /// The live LCP sender of a flow.
    pub fn lcp(&self, flow: FlowId) -> Option<&LpSender> {
        match self.slots.get(flow as usize).map(|s| &s.snd) {
            Some(Half::Active(f)) => Some(&f.lp),
            _ => None,
        }
    }
    /// The live receiver of a flow.
    pub fn receiver(&self, flow: FlowId) -> Option<&TcpReceiver> {
        match self.slots.get(flow as usize).map(|s| &s.rcv) {
            Some(Half::Active(r)) => Some(&r.tcp),
            _ => None,
        }
    }
    pub fn receiver_complete(&self, flow: FlowId) -> bool {
        matches!(self.slots.get(flow as usize).map(|s| &s.rcv), Some(Half::Done))
    }
    pub fn sender_done(&self, flow: FlowId) -> bool {
        matches!(self.slots.get(flow as usize).map(|s| &s.snd), Some(Half::Done))
    }

    fn ensure(&mut self, n: usize) {
        if self.slots.len() < n {
            self.slots.resize_with(n, Slot::default);
        }
    }
}

fn rtt_of(f: &SndFlow, info: &FlowInfo) -> Time {
    f.hcp.srtt().unwrap_or(info.base_rtt).max(info.base_rtt)
}

fn lp_class(p: &DualParams, f: &SndFlow, info: &FlowInfo, seq: u64) -> u8 {
    match &p.tagging {
        Tagging::Rc3 { .. } => lp_class_rc3(p, info, seq),
        Tagging::Mirror { half, .. } => {
            let pol = HcpPolicy { tagging: &p.tagging, large: f.large, extra: f.lp.stats().bytes, ack: p.ack_prio };
            pol.hcp_class(f.hcp.bytes_sent()) + half
        }
    }
}

/// Run one LCP operation with a context built from the flow's HCP state.
fn with_lcp(
    p: &DualParams,
    f: &mut SndFlow,
    info: &FlowInfo,
    now: Time,
    out: &mut Actions,
    op: impl FnOnce(&mut LpSender, &mut LpCx),
) {
    let floor = f.hcp.snd_max();
    let buf_end = info.size.0.min(f.hcp.snd_una().saturating_add(p.send_buffer));
    // Mirror tagging gives every packet of a call the same class; RC3's depends on the offset.
    let fixed = lp_class(p, f, info, 0);
    let rc3 = matches!(p.tagging, Tagging::Rc3 { .. });
    let prio = |s: u64| if rc3 { lp_class_rc3(p, info, s) } else { fixed };
    let nic_room = f.hcp.tsq_limit(&p.tcp).map_or(u64::MAX, |l| l.saturating_sub(f.hcp.nic_bytes()));
    let mut lx = LpCx { now, flow: info, p: &p.lp, out, floor, buf_end, prio: &prio, nic_room };
    op(&mut f.lp, &mut lx);
}

/// The hypothetical DCTCP's target window: `fill` x MW, rounded to the nearest byte (MW
/// itself at `fill = 1.0`: windows are far below 2^53 bytes, so the product is exact).
fn fill_target(mw: u64, fill: f64) -> u64 {
    (mw as f64 * fill).round() as u64
}

fn lp_class_rc3(p: &DualParams, info: &FlowInfo, seq: u64) -> u8 {
    if let Tagging::Rc3 { first_lp, levels, .. } = &p.tagging {
        let from_end = (info.size.0 - seq.min(info.size.0)).saturating_sub(1) / p.tcp.mss;
        let mut acc = 0;
        for (i, &n) in levels.iter().enumerate() {
            acc += n;
            if from_end < acc {
                return (*first_lp as usize + i).min(7) as u8;
            }
        }
        (*first_lp as usize + levels.len()).min(7) as u8
    } else {
        0
    }
}

/// Hand the LCP's known-delivered ranges to the HCP as ranges to skip, not as SACKed bytes
/// ([`TcpSender::note_delivered`]): they never count as loss evidence.
fn hand_over(f: &mut SndFlow) {
    let hcp = &mut f.hcp;
    f.lp.hand_over(u64::MAX, |a, b| hcp.note_delivered(a, b));
}

impl DualLoop {
    fn case1_window(&self, info: &FlowInfo) -> u64 {
        info.path_rate.bdp(info.base_rtt).0.saturating_sub(self.p.tcp.init_cwnd)
    }

    /// PPT case 2 bookkeeping after an HCP ACK; opens a loop when the trigger says so.
    fn after_ack(&mut self, id: usize, info: &FlowInfo, now: Time, out: &mut Actions) {
        match self.p.open {
            OpenPolicy::Hypothetical { fill } => self.hypothetical_round(id, info, now, out, fill),
            OpenPolicy::Intermittent { case2: Case2::Alpha { window }, .. } => {
                self.alpha_trigger(id, info, now, out, window)
            }
            OpenPolicy::Intermittent { case2: Case2::Delay, .. } => self.delay_trigger(id, info, now, out),
            _ => {}
        }
    }

    /// Case 2 on a delay-based HCP: when the fabric delay *falls* below Swift's target (this
    /// ACK's is below, the previous ACK's was not) and no loop is open (nor a case-1 loop
    /// pending), a loop opens with I = min(W_max - cwnd, max_mdf x W_max).
    fn delay_trigger(&mut self, id: usize, info: &FlowInfo, now: Time, out: &mut Actions) {
        let p = &self.p;
        let Half::Active(f) = &mut self.slots[id].snd else { return };
        let Some(sw) = f.hcp.swift() else { return };
        let below = sw.below_target();
        let fell = below && f.delay_above;
        f.delay_above = !below;
        f.startup_over = true;
        let cwnd = f.hcp.cwnd();
        f.w_max = f.w_max.max(cwnd);
        let max_mdf = p.tcp.swift.as_ref().map_or(0.5, |s| s.max_mdf);
        if p.lcp && fell && !f.lp.is_open() && !f.case1_pending {
            let init = (f.w_max - cwnd).min((max_mdf * f.w_max as f64) as u64);
            let rtt = rtt_of(f, info);
            let mut opened = false;
            let before = f.lp.stats.pkts;
            with_lcp(p, f, info, now, out, |lp, lx| {
                opened = lp.open(lx, init, rtt);
            });
            if opened {
                f.lp.mark_case2(before);
                f.lp.stats.case2_loops += 1;
            }
        }
    }

    /// Case 2 on DCTCP: opens a loop when alpha is at its minimum (PPT §3.1, Eq. 2).
    fn alpha_trigger(&mut self, id: usize, info: &FlowInfo, now: Time, out: &mut Actions, alpha_window: usize) {
        let p = &self.p;
        let Half::Active(f) = &mut self.slots[id].snd else { return };
        if !f.startup_over {
            if f.hcp.ssthresh() == u64::MAX {
                return;
            }
            f.startup_over = true;
            f.episode = true;
            f.round_end = f.hcp.snd_max();
        }
        // W_max: windows from the end of the first round after start-up (footnote 3: only
        // windows after the start-up phase; the first round still holds the reduction).
        if f.n_alpha > 0 {
            f.w_max = f.w_max.max(f.hcp.cwnd());
        }
        if f.hcp.snd_una() < f.round_end {
            return;
        }
        f.round_end = f.hcp.snd_max();
        f.w_max = f.w_max.max(f.hcp.cwnd());
        let a = f.hcp.alpha();
        let w = alpha_window.clamp(1, 32);
        if f.n_alpha > 0 && a > f.alphas[(f.n_alpha - 1) % 32] {
            f.episode = true;
        }
        f.alphas[f.n_alpha % 32] = a;
        f.n_alpha += 1;
        let k = f.n_alpha.min(w);
        let mut amin = f64::INFINITY;
        for i in 0..k {
            amin = amin.min(f.alphas[(f.n_alpha - 1 - i) % 32]);
        }
        if alpha_window == 0 {
            f.amin_all = f.amin_all.min(a);
            amin = f.amin_all;
        }
        if p.lcp && f.episode && a <= amin && !f.lp.is_open() {
            // Eq. 2, within the gap to W_max: PPT §3 "the window summation of LCP and HCP
            // will not exceed the MW a flow experienced in the past".
            let eq2 = ((0.5 - amin).max(0.0) * f.w_max as f64) as u64;
            let init = eq2.min(f.w_max.saturating_sub(f.hcp.cwnd()));
            let rtt = rtt_of(f, info);
            let mut opened = false;
            let before = f.lp.stats.pkts;
            with_lcp(p, f, info, now, out, |lp, lx| {
                opened = lp.open(lx, init, rtt);
            });
            if opened {
                f.lp.mark_case2(before);
                f.lp.stats.case2_loops += 1;
                f.episode = false;
            }
        }
    }

    fn hypothetical_round(&mut self, id: usize, info: &FlowInfo, now: Time, out: &mut Actions, fill: f64) {
        let p = &self.p;
        let Half::Active(f) = &mut self.slots[id].snd else { return };
        let bdp = info.path_rate.bdp(info.base_rtt).0;
        f.w_max = f.w_max.max(f.hcp.cwnd()).max(bdp);
        if !p.lcp || f.hcp.snd_una() < f.round_end {
            return;
        }
        f.round_end = f.hcp.snd_max();
        let init = fill_target(f.w_max, fill).saturating_sub(f.hcp.cwnd());
        let rtt = rtt_of(f, info);
        f.lp.close();
        with_lcp(p, f, info, now, out, |lp, lx| {
            lp.open(lx, init, rtt);
        });
    }

    fn finish(slot: &mut Slot) {
        if let Half::Active(f) = &slot.snd {
            if f.hcp.is_done() {
                slot.stats = f.hcp.stats();
                slot.lp_stats = f.lp.stats();
                slot.snd = Half::Done;
            }
        }
    }

    /// Feed a data packet to the receiver's TCP state; forward completions and the ACKs that
    /// should reach the HCP. Returns true if the flow completed.
    fn feed_receiver(
        &mut self,
        id: usize,
        info: &FlowInfo,
        now: Time,
        pkt: &Packet,
        lp: bool,
        out: &mut Actions,
    ) -> bool {
        let Half::Active(r) = &mut self.slots[id].rcv else { return false };
        self.scratch.clear();
        let pol = ConstPrio(self.p.ack_prio);
        let mut cx = FlowCtx { now, flow: info, params: &self.p.tcp, policy: &pol, out: &mut self.scratch };
        let done = r.tcp.on_data(&mut cx, pkt);
        for a in self.scratch.sends.drain(..) {
            if !lp || a.ack > r.last_ack {
                r.last_ack = r.last_ack.max(a.ack);
                out.send(a);
            }
        }
        for &t in &self.scratch.timers {
            out.timer(t.0, t.1);
        }
        for &c in &self.scratch.completions {
            out.complete(c);
        }
        done
    }
}

impl DualLoop {
    pub fn start_flow_impl(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let id = flow as usize;
        self.ensure(ctx.flows.len());
        let info = &ctx.flows[id];
        let large = self.p.identify_above.is_some_and(|t| info.size.0.min(self.p.send_buffer) > t);
        let mut f = Box::new(SndFlow {
            hcp: TcpSender::new(info, &self.p.tcp),
            lp: LpSender::new(info),
            large,
            startup_over: false,
            w_max: 0,
            round_end: 0,
            alphas: [0.0; 32],
            n_alpha: 0,
            amin_all: f64::INFINITY,
            episode: false,
            delay_above: false,
            case1_pending: false,
        });
        {
            let pol = HcpPolicy { tagging: &self.p.tagging, large, extra: 0, ack: self.p.ack_prio };
            let mut cx = FlowCtx { now: ctx.now, flow: info, params: &self.p.tcp, policy: &pol, out: &mut *ctx.out };
            f.hcp.start(&mut cx);
        }
        if self.p.lcp {
            let init = match self.p.open {
                // The hypothetical DCTCP's first round: fill x MW - initial window, with MW =
                // max(BDP, initial window) (= BDP - initial window, case 1's, at fill 1).
                OpenPolicy::Hypothetical { fill } => {
                    let iw = self.p.tcp.init_cwnd;
                    fill_target(info.path_rate.bdp(info.base_rtt).0.max(iw), fill).saturating_sub(iw)
                }
                _ => self.case1_window(info),
            };
            let delay = matches!(self.p.open, OpenPolicy::Intermittent { delay_large: true, .. }) && large;
            if delay {
                f.case1_pending = true;
            } else {
                let rtt = info.base_rtt;
                with_lcp(&self.p, &mut f, info, ctx.now, ctx.out, |lp, lx| {
                    lp.open(lx, init, rtt);
                });
            }
        }
        let slot = &mut self.slots[id];
        slot.snd = Half::Active(f);
        Self::finish(slot);
    }

    pub fn on_packet_impl(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let id = pkt.flow as usize;
        if id >= ctx.flows.len() {
            return;
        }
        self.ensure(ctx.flows.len());
        let info = &ctx.flows[id];
        let now = ctx.now;
        match pkt.kind {
            KIND_DATA | KIND_LP_DATA => {
                let lp = pkt.kind == KIND_LP_DATA;
                if lp && self.p.discard_ce_lp && pkt.ecn == Ecn::Ce {
                    return; // emulated low-priority admission drop
                }
                let slot = &mut self.slots[id];
                if lp {
                    slot.lp_rcvd += pkt.payload as u64;
                }
                match slot.rcv {
                    Half::Done => {
                        if !lp {
                            let pol = ConstPrio(self.p.ack_prio);
                            let mut cx =
                                FlowCtx { now, flow: info, params: &self.p.tcp, policy: &pol, out: &mut *ctx.out };
                            ack_after_completion(&mut cx, pkt);
                        }
                        return;
                    }
                    Half::Idle => {
                        slot.rcv = Half::Active(Box::new(RcvFlow {
                            tcp: TcpReceiver::new(info),
                            lp: LpReceiver::new(),
                            last_ack: 0,
                        }))
                    }
                    Half::Active(_) => {}
                }
                let done = if lp {
                    // Store it like an HCP segment, without disturbing DCTCP's CE state.
                    let mut q = *pkt;
                    q.kind = KIND_DATA;
                    q.ecn = Ecn::Ect;
                    self.feed_receiver(id, info, now, &q, true, ctx.out)
                } else {
                    self.feed_receiver(id, info, now, pkt, false, ctx.out)
                };
                let slot = &mut self.slots[id];
                if done {
                    slot.rcv = Half::Done;
                } else if lp {
                    if let Half::Active(r) = &mut slot.rcv {
                        let rn = r.tcp.rcv_nxt();
                        if let Some(a) = r.lp.on_data(&self.p.lp, info, pkt, rn) {
                            ctx.out.send(a);
                        }
                    }
                }
            }
            KIND_ACK => {
                let p = &self.p;
                let slot = &mut self.slots[id];
                let Half::Active(f) = &mut slot.snd else { return };
                // The receiver's SACK block above what the HCP has sent is LCP data it holds.
                let smax = f.hcp.snd_max();
                if pkt.aux > pkt.seq && pkt.aux > smax {
                    f.lp.note_delivered(pkt.seq.max(smax), pkt.aux);
                }
                hand_over(f);
                let pol = HcpPolicy { tagging: &p.tagging, large: f.large, extra: f.lp.stats().bytes, ack: p.ack_prio };
                let mut cx = FlowCtx { now, flow: info, params: &p.tcp, policy: &pol, out: &mut *ctx.out };
                f.hcp.on_ack(&mut cx, pkt);
                if f.hcp.is_done() {
                    Self::finish(slot);
                    return;
                }
                if f.case1_pending {
                    // The flow's 2nd RTT begins: the delayed case-1 loop opens, unless the HCP
                    // has already cut its window ("before the flow's window reaches the MW",
                    // PPT §3.1; e.g. ECN marks on the first window under incast), when only
                    // case 2 applies (DCTCP HCP).
                    f.case1_pending = false;
                    let past_startup =
                        matches!(p.open, OpenPolicy::Intermittent { case2: Case2::Alpha { .. } | Case2::Off, .. })
                            && f.hcp.ssthresh() != u64::MAX;
                    if !past_startup {
                        // The two loops together stay within MW = BDP (PPT §3): in this round
                        // the HCP sends its whole window, which slow start doubles from the
                        // initial window (a Swift HCP, with no slow start, keeps its window).
                        let hcp = f.hcp.cwnd();
                        let hcp_round =
                            if hcp < f.hcp.ssthresh() { (2 * p.tcp.init_cwnd).min(f.hcp.ssthresh()) } else { hcp };
                        let init = info.path_rate.bdp(info.base_rtt).0.saturating_sub(hcp_round);
                        let rtt = rtt_of(f, info);
                        with_lcp(p, f, info, now, ctx.out, |lp, lx| {
                            lp.open(lx, init, rtt);
                        });
                    }
                }
                self.after_ack(id, info, now, ctx.out);
            }
            KIND_LP_ACK => {
                let p = &self.p;
                let Half::Active(f) = &mut self.slots[id].snd else { return };
                with_lcp(p, f, info, now, ctx.out, |lp, lx| lp.on_ack(lx, pkt));
            }
            _ => {}
        }
    }

    pub fn on_timer_impl(&mut self, ctx: &mut Ctx, tok: u64) {
        let (flow, kind, gen) = untoken(tok);
        let id = flow as usize;
        if id >= self.slots.len() || id >= ctx.flows.len() {
            return;
        }
        let info = &ctx.flows[id];
        let now = ctx.now;
        match kind {
            TIMER_DELACK => {
                let Half::Active(r) = &mut self.slots[id].rcv else { return };
                self.scratch.clear();
                let pol = ConstPrio(self.p.ack_prio);
                let mut cx = FlowCtx { now, flow: info, params: &self.p.tcp, policy: &pol, out: &mut self.scratch };
                r.tcp.on_delack_timer(&mut cx, gen);
                for a in self.scratch.sends.drain(..) {
                    r.last_ack = r.last_ack.max(a.ack);
                    ctx.out.send(a);
                }
            }
            TIMER_RTO | TIMER_PACE => {
                let p = &self.p;
                let slot = &mut self.slots[id];
                let Half::Active(f) = &mut slot.snd else { return };
                hand_over(f);
                let pol = HcpPolicy { tagging: &p.tagging, large: f.large, extra: f.lp.stats().bytes, ack: p.ack_prio };
                let mut cx = FlowCtx { now, flow: info, params: &p.tcp, policy: &pol, out: &mut *ctx.out };
                if kind == TIMER_RTO {
                    f.hcp.on_rto_timer(&mut cx, gen);
                } else {
                    f.hcp.on_pace_timer(&mut cx, gen);
                }
                Self::finish(slot);
            }
            TIMER_LP_PACE | TIMER_LP_IDLE => {
                let p = &self.p;
                let Half::Active(f) = &mut self.slots[id].snd else { return };
                with_lcp(p, f, info, now, ctx.out, |lp, lx| lp.on_timer(lx, kind, gen));
            }
            _ => {}
        }
    }

    /// The host NIC transmitted one of this host's data packets (`crate::host`'s per-flow
    /// NIC limit). An HCP packet releases its bytes from the HCP's limit; an opportunistic
    /// packet from its loop's count. Either makes room for the loop's held-back releases:
    /// the loop sends only while the flow's bytes in the NIC, both loops' together, are
    /// below the limit, while the HCP counts its own bytes only, so opportunistic packets
    /// waiting in the NIC's lower class never hold the HCP back.
    pub fn on_tx_complete_impl(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let id = pkt.flow as usize;
        let lp = pkt.kind == KIND_LP_DATA;
        if !(pkt.kind == KIND_DATA || lp) || id >= self.slots.len() || id >= ctx.flows.len() {
            return;
        }
        let info = &ctx.flows[id];
        let p = &self.p;
        let slot = &mut self.slots[id];
        let Half::Active(f) = &mut slot.snd else { return };
        if lp {
            with_lcp(p, f, info, ctx.now, ctx.out, |l, lx| l.on_tx_complete(lx, pkt.size as u64));
            return;
        }
        hand_over(f);
        let pol = HcpPolicy { tagging: &p.tagging, large: f.large, extra: f.lp.stats().bytes, ack: p.ack_prio };
        let mut cx = FlowCtx { now: ctx.now, flow: info, params: &p.tcp, policy: &pol, out: &mut *ctx.out };
        f.hcp.on_tx_complete(&mut cx, pkt.size as u64);
        if f.lp.has_deferred() {
            with_lcp(p, f, info, ctx.now, ctx.out, |l, lx| l.flush(lx));
        }
        Self::finish(slot);
    }

    /// Whether the HCP runs under the per-flow NIC limit.
    pub fn wants_tx_complete_impl(&self) -> bool {
        self.p.tcp.tsq.is_some()
    }

    /// The HCP's counters plus the opportunistic payload sent and received.
    pub fn flow_stats_impl(&self, flow: FlowId) -> FlowStats {
        match self.slots.get(flow as usize) {
            Some(s) => {
                let (hcp, lp) = match &s.snd {
                    Half::Active(f) => (f.hcp.stats(), f.lp.stats()),
                    _ => (s.stats, s.lp_stats),
                };
                FlowStats { lp_sent_bytes: lp.bytes, lp_rcvd_bytes: s.lp_rcvd, ..hcp }
            }
            None => FlowStats::default(),
        }
    }
}
