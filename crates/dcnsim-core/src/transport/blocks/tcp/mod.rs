//! TCP NewReno / SACK and DCTCP: one window-based sender and one cumulative-ACK receiver
//! per flow, used by the `tcp` and `dctcp` protocols and embeddable by other transports.
//!
//! # What is modelled
//! - **Congestion control (RFC 5681)**: slow start and congestion avoidance on a byte-counted
//!   window (`cwnd` in bytes). Slow start adds the bytes newly acknowledged, at most
//!   2 x MSS per ACK (RFC 3465 appropriate byte counting, L = 2), so the window doubles per RTT
//!   with or without delayed ACKs; congestion avoidance adds MSS x acked / cwnd per ACK (that is
//!   MSS x MSS / cwnd for one full segment), the fractional remainder carried exactly, i.e. one
//!   MSS per window of data.
//! - **Loss recovery**: fast retransmit after `dupack_threshold` duplicate ACKs with
//!   ssthresh = max(FlightSize / 2, 2 x MSS). Without SACK this is NewReno (RFC 6582): window
//!   inflation by one MSS per further duplicate ACK, a partial ACK retransmits the next hole and
//!   deflates the window, the first partial ACK restarts the RTO ("impatient" variant), recovery
//!   ends when the cumulative ACK reaches the recovery point, with
//!   cwnd = min(ssthresh, max(FlightSize, MSS) + MSS). With SACK (RFC 6675, conservative
//!   loss recovery): a scoreboard of SACKed ranges, `IsLost` (more than (DupThresh-1) x MSS bytes
//!   or at least DupThresh segments SACKed above), `pipe` as in SetPipe, `NextSeg` rules 1-3
//!   (lowest lost hole above HighRxt, then new data, then the lowest un-SACKed hole below the
//!   highest SACKed byte) and rule 4 (one rescue retransmission of the highest un-SACKed
//!   segment per recovery), cwnd = ssthresh during and after recovery; recovery is also
//!   entered when `IsLost(snd_una)` holds before the third duplicate ACK. A duplicate ACK
//!   counts toward the threshold only if it carries new SACK information (RFC 6675
//!   definition) when SACK is on. Limited transmit (RFC 3042), RACK/TLP, lost-retransmission
//!   detection and PRR are not modelled: a lost retransmission is repaired by the RTO.
//! - **RTO (RFC 6298)**: SRTT/RTTVAR by Jacobson/Karels (first sample R: SRTT = R,
//!   RTTVAR = R/2; then RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|, SRTT = 7/8 SRTT + 1/8 R),
//!   RTO = clamp(SRTT + 4 RTTVAR, min_rto, max_rto); the timer is restarted by every ACK that
//!   advances `snd_una` and stopped when everything is acknowledged; on expiry the RTO doubles
//!   (up to `max_rto`), ssthresh = max(FlightSize / 2, 2 x MSS) (only on the first expiry of a
//!   series, RFC 5681 §3.1), cwnd = 1 MSS and the sender goes back N from `snd_una`, skipping
//!   ranges the SACK scoreboard holds (the receiver never reneges). After a timeout,
//!   duplicate ACKs do not start a fast retransmit until `snd_una` reaches the highest byte sent
//!   at the timeout (RFC 6582 §4.2, avoiding repeated fast retransmits of go-back-N data).
//! - **RTT samples**: from the timestamp echo (RFC 7323 RTTM): every data packet carries its send
//!   time in `ts`, every ACK echoes it, and the sender samples `now - ts` only on ACKs that
//!   advance `snd_una`. The echoed time belongs to the very transmission that triggered the ACK,
//!   so retransmissions give valid samples: this replaces Karn's rule (which exists because
//!   plain TCP cannot tell which transmission an ACK answers) and is what Linux does with
//!   timestamps on. A delayed ACK echoes the earliest segment it covers, so the delay is part
//!   of the sample (RFC 7323 §4.3).
//! - **DCTCP** (Alizadeh et al., SIGCOMM 2010, §3.1; RFC 8257): data packets are ECT; the
//!   receiver sets ECE on an ACK iff the packets it covers were CE-marked, and with delayed
//!   ACKs runs the two-state machine (an ACK is sent at once when the CE state of arriving
//!   packets changes, so each ACK covers packets of a single state and ECE is exact). Every ACK
//!   also states how many payload bytes it covers, so the sender computes
//!   F = marked bytes / acknowledged bytes exactly over each observation window (one window of
//!   data: from the `snd_nxt` at the previous update until `snd_una` passes it) and updates
//!   alpha = (1 - g) alpha + g F. On the first ECE outside a reduction window the sender sets
//!   ssthresh = cwnd = max(cwnd (1 - alpha/2), min_cwnd) and ignores further ECE until
//!   `snd_una` passes the `snd_nxt` of that moment (at most one cut per window, like Linux's
//!   CWR state); the ACK carrying the cutting ECE does not grow the window. Alpha is updated
//!   before the cut reacts on the same ACK (Linux order). ECE during loss recovery is ignored
//!   (the loss reaction already cut the window once in that window). Loss reactions are
//!   NewReno/SACK (RFC 8257 §3.5). Plain `tcp` with `ecn = true` reacts to ECE the same way
//!   with alpha fixed at 1, i.e. it halves once per window (RFC 3168).
//!
//! - **Window laws** (`cc.rs`): the sender is generic over a [`CongestionControl`] law that
//!   supplies the numbers of the rules above (alpha's update at the end of an observation
//!   window, the window after an ECN cut, the congestion-avoidance credit, ssthresh at fast
//!   retransmit, the window after a timeout); the sender keeps the rules' timing (observation
//!   and CWR windows, recovery states, slow start). `tcp`/`dctcp` and every transport that
//!   embeds the sender use [`Standard`] (Reno or DCTCP by `TcpParams::dctcp`); D2TCP and L2DCT
//!   are further laws.
//! - **Swift** (`swift.rs`): with `TcpParams::swift` set, Swift's delay-based window law
//!   replaces slow start, congestion avoidance, ECN and the loss reactions' window changes
//!   (see `swift.rs`); the sending machinery (SACK recovery, RTO, go-back-N) stays, plus a
//!   pacing gate when Swift's window is below one packet.
//!
//! - **Receive window**: the receiver buffers everything, so the plain receiver advertises
//!   no window; a receiver-side controller (`rcvctl.rs`: PTCP, ICTCP ...) may write one into
//!   its ACKs ([`set_ack_rwnd`]), and the sender then keeps at most min(cwnd, rwnd) bytes in
//!   flight (or in `pipe` during SACK recovery). The window of the latest ACK that does not
//!   move backwards (`ack >= snd_una`) counts; an ACK without a window keeps the previous
//!   one. Window validation (`host.cwnd_validation`) counts a send stopped by the receive
//!   window as not window-limited, as Linux does. The receiver never advertises less than one
//!   segment, so no zero-window probing is needed.
//!
//! Not modelled: connection setup and teardown, Nagle, pacing (except Swift's below one
//! packet), spurious-retransmission undo, ACK loss detection.
//!
//! # Choices where the sources leave room
//! - `min_rto` default **1 ms**: Linux's 200 ms default makes a single incast timeout cost
//!   1000+ datacenter RTTs (PTCP §II: timeouts "of hundreds of milliseconds"); 1 ms is the
//!   usual datacenter tuning (the smallest value Linux's `rto_min` route option takes with a
//!   1 kHz clock) and stays an order of magnitude above datacenter RTTs, so spurious timeouts
//!   are rare. Scenarios reproducing a paper's RTOmin set it explicitly.
//! - `initial_rto` default **max(min_rto, 3 x base RTT of the flow)**: connection setup is not
//!   simulated; RFC 6298 applied to the handshake's RTT sample R gives SRTT = R, RTTVAR = R/2,
//!   RTO = 3R, so this is the RTO an established connection would start the data with (RFC
//!   6298's 1 s applies to the SYN only).
//! - `max_rto` default **1 s**: RFC 6298 allows 60 s; in a simulation, backing off beyond
//!   1 s only stretches the run, and 1 s is 1000 x the default minimum.
//! - `init_alpha` default **1.0**: Linux's default (`dctcp_alpha_on_init`), which makes a new
//!   flow's first reaction as cautious as TCP's (halving) until it has measured the marking
//!   fraction; set 0 for the original ns-2 behaviour.
//! - `min_cwnd` (floor of an ECN cut) default **2 packets**, as Linux's DCTCP.
//! - `delayed_ack_timeout` default **40 us**: Linux's 40 ms delayed-ACK minimum scaled to
//!   datacenter time, like `min_rto`; it only fires when an odd segment is left without a
//!   successor. With delayed ACKs on, the receiver ACKs every second full segment
//!   (2 x MSS bytes pending) and immediately for out-of-order, hole-filling and duplicate
//!   segments, for the segment that completes the flow and on a CE state change.
//! - On leaving SACK recovery cwnd = ssthresh (pipe already limited the flight to ssthresh);
//!   on leaving NewReno recovery the RFC 6582 burst-avoiding form min(ssthresh, flight + MSS)
//!   is used, because window deflation can otherwise release a burst.
//! - Segments are aligned to a grid of MSS-sized segments from byte 0, so the last packet of
//!   a flow carries `size - (n-1) x MSS` bytes and retransmissions resend whole segments.
//! - A flow of 0 bytes sends one empty DATA packet (so that it completes) and is not
//!   retransmitted.
//!
//! # Header layout
//! Data packet (`kind = KIND_DATA`, flag `DATA`): `seq` = byte offset of the payload,
//! `payload` <= MSS, `size` = payload + header, `ts` = send time, `aux2` bit 0 = this is a
//! retransmission (informational), `ecn = Ect` when ECN is on, `prio` from the
//! [`PriorityPolicy`], `ack`/`aux`/`rank` = 0.
//!
//! ACK (`kind = KIND_ACK`, `net.ctrl_size` bytes, Not-ECT): `ack` = cumulative ACK (next byte
//! expected); `[seq, aux)` = one SACK block, the receiver's out-of-order range holding the
//! segment that triggered the ACK (RFC 2018's first block), or the lowest out-of-order range,
//! or empty (`aux <= seq`) when the receiver holds no out-of-order data; `aux2` bit 31 = ECE,
//! bits 20..30 = the advertised receive window in segments (0: none, see above), bits 0..19 =
//! payload bytes of the data packets this ACK covers (duplicates included: the DCTCP fraction
//! counts packets, not unique bytes); `ts` = echoed data timestamp; `prio` from
//! [`PriorityPolicy::ack_prio`] (by default the class of the data packet it answers); `rank` =
//! the receiver's hold time in ns (from the arrival of the oldest data packet the ACK covers
//! to the ACK: 0 without delayed ACKs), Swift's remote-queuing delay.
//!
//! Timers: token kind [`TIMER_RTO`] (and, for Swift, [`TIMER_PACE`]) at the sender,
//! [`TIMER_DELACK`] at the receiver, generation
//! from a [`TimerSlot`]. The RTO is re-armed lazily: moving the deadline later keeps the armed
//! event and re-arms when it fires early, so the common path pushes no timer per ACK.
//!
//! # Reuse
//! [`TcpSender`] and [`TcpReceiver`] are plain state machines driven through a [`FlowCtx`];
//! another transport (PIAS, PPT's high-priority loop ...) can embed them, choose each data
//! packet's class with its own [`PriorityPolicy`], and route [`TIMER_RTO`] / [`TIMER_PACE`] /
//! [`TIMER_DELACK`] tokens and `KIND_DATA` / `KIND_ACK` packets to them (its own kinds should use values >= 16).
//!
//! Per-packet work on the in-order path is O(1): the SACK scoreboard and the receiver's
//! out-of-order list are empty (and unallocated) unless there is loss or reordering.

use crate::config::FieldError;
use crate::host::TsqParams;
use crate::packet::{Ecn, FlowId, Packet, PacketFlags};
use crate::transport::cc::{CcState, CongestionControl, DctcpParams, Standard, StandardParams};
use crate::transport::swift_law::{SwiftCc, SwiftParams};
use crate::transport::{token, untoken, Actions, Ctx, FlowInfo, FlowStats, NetInfo, TimerSlot, Transport};
use crate::units::{Bytes, Time};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// `Packet::kind` of a TCP data segment.
pub const KIND_DATA: u8 = 1;
/// `Packet::kind` of a TCP acknowledgement.
pub const KIND_ACK: u8 = 2;
/// Timer kind of the sender's retransmission timer.
pub const TIMER_RTO: u8 = 1;
/// Timer kind of the receiver's delayed-ACK timer.
pub const TIMER_DELACK: u8 = 2;
/// Timer kind of the sender's pacing timer (Swift below one packet of window).
pub const TIMER_PACE: u8 = 3;
/// ACK `aux2` bit: ECN-Echo.
pub const ACK_ECE: u32 = 1 << 31;
/// ACK `aux2` bits holding the payload bytes the ACK covers (bits 0..19; saturating at
/// 1 MiB - 1, far above the at most three segments an ACK covers).
pub const ACK_COVERED_MASK: u32 = (1 << 20) - 1;
/// ACK `aux2` bits 20..30: the advertised receive window in whole segments (0 = none
/// advertised: the sender keeps the window it had, initially unlimited). See
/// [`set_ack_rwnd`] and `rcvctl.rs`.
pub const ACK_RWND_MASK: u32 = 0x7FF << 20;
/// Bit position of [`ACK_RWND_MASK`].
pub const ACK_RWND_SHIFT: u32 = 20;
/// The largest receive window an ACK can advertise, segments (11 bits).
pub const ACK_RWND_MAX_SEGS: u64 = 0x7FF;
/// Data `aux2` bit: the segment is a retransmission.
pub const DATA_RETX: u32 = 1;

mod config;
mod receiver;
mod sender;
#[cfg(test)]
mod tests;

pub use config::*;
pub use receiver::*;
pub use sender::*;

// ------------------------------------------------------------------------------------------
// Shared helpers
// ------------------------------------------------------------------------------------------

/// What a sender or receiver callback needs besides its own state.
pub struct FlowCtx<'a> {
    pub now: Time,
    pub flow: &'a FlowInfo,
    pub params: &'a TcpParams,
    pub policy: &'a dyn PriorityPolicy,
    pub out: &'a mut Actions,
}

/// Insert `[a, b)` into a sorted list of disjoint, non-adjacent ranges, merging; returns the
/// number of bytes that were not already covered.
fn range_insert(v: &mut Vec<(u64, u64)>, a: u64, b: u64) -> u64 {
    if a >= b {
        return 0;
    }
    let i = v.partition_point(|&(_, y)| y < a);
    let mut j = i;
    let (mut na, mut nb) = (a, b);
    let mut covered = 0;
    while j < v.len() && v[j].0 <= b {
        let (x, y) = v[j];
        covered += y.min(b).saturating_sub(x.max(a));
        na = na.min(x);
        nb = nb.max(y);
        j += 1;
    }
    if j == i + 1 && v[i] == (na, nb) {
        return 0;
    }
    v.splice(i..j, std::iter::once((na, nb)));
    (b - a) - covered
}

#[allow(clippy::too_many_arguments)]
fn ack_packet(
    cx: &FlowCtx,
    ack: u64,
    block: (u64, u64),
    covered: u64,
    ece: bool,
    ts: Time,
    data_prio: u8,
    hold: Time,
) -> Packet {
    let mut aux2 = covered.min(ACK_COVERED_MASK as u64) as u32;
    if ece {
        aux2 |= ACK_ECE;
    }
    Packet {
        src: cx.flow.dst,
        dst: cx.flow.src,
        flow: cx.flow.id,
        size: cx.params.ctrl_size as u32,
        payload: 0,
        prio: cx.policy.ack_prio(cx.flow, data_prio),
        ecn: Ecn::NotEct,
        flags: PacketFlags::default(),
        kind: KIND_ACK,
        seq: block.0,
        ack,
        aux: block.1,
        ts,
        aux2,
        rank: (hold.0 / 1000).min(u32::MAX as u64) as u32,
        ..Packet::default()
    }
}

// ------------------------------------------------------------------------------------------
// The transport
// ------------------------------------------------------------------------------------------

#[derive(Default)]
enum Half<T> {
    #[default]
    Idle,
    Active(Box<T>),
    Done,
}

struct Slot<C: CongestionControl> {
    snd: Half<TcpSender<C>>,
    rcv: Half<TcpReceiver>,
    stats: FlowStats,
}

impl<C: CongestionControl> Default for Slot<C> {
    fn default() -> Self {
        Slot { snd: Half::Idle, rcv: Half::Idle, stats: FlowStats::default() }
    }
}

/// A window-based TCP sender/receiver pair for every host of a run, with the window law `C`:
/// TCP (NewReno/SACK) or DCTCP by default ([`Standard`]).
pub struct Tcp<C: CongestionControl = Standard> {
    params: TcpParams,
    law: C::Params,
    name: &'static str,
    policy: Box<dyn PriorityPolicy>,
    slots: Vec<Slot<C>>,
    /// Persistent connections ([`Transport::keep_open`]), by flow id (empty: none): their
    /// sender and receiver stay active when every byte is through, for later appends.
    persistent: Vec<bool>,
}

impl Tcp<Standard> {
    /// Build from the scenario's `[transport]` table (without `protocol`); `dctcp` selects
    /// the DCTCP window law and ECN by default.
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo, dctcp: bool) -> Result<Tcp, TcpConfigError> {
        let params = TcpConfig::parse(cfg)?.resolve(net, dctcp)?;
        Ok(Tcp::new(params))
    }

    pub fn new(params: TcpParams) -> Tcp {
        let law = params.standard_law();
        let name = if params.dctcp { "dctcp" } else { "tcp" };
        Tcp::with_law(params, law, name)
    }
}

impl<C: CongestionControl> Tcp<C> {
    /// Every flow with the window law `C` (parameters `law`); `name` is the protocol name.
    pub fn with_law(params: TcpParams, law: C::Params, name: &'static str) -> Tcp<C> {
        let policy = Box::new(ConstPrio(params.prio));
        Tcp { params, law, name, policy, slots: Vec::new(), persistent: Vec::new() }
    }

    /// Replace the constant-priority policy.
    pub fn with_priority_policy(mut self, policy: Box<dyn PriorityPolicy>) -> Tcp<C> {
        self.policy = policy;
        self
    }

    pub fn params(&self) -> &TcpParams {
        &self.params
    }

    /// The live sender state of `flow` (None before start and after every byte is acked).
    pub fn sender(&self, flow: FlowId) -> Option<&TcpSender<C>> {
        match self.slots.get(flow as usize).map(|s| &s.snd) {
            Some(Half::Active(s)) => Some(s),
            _ => None,
        }
    }

    /// The live receiver state of `flow` (None before the first packet and after completion).
    pub fn receiver(&self, flow: FlowId) -> Option<&TcpReceiver> {
        match self.slots.get(flow as usize).map(|s| &s.rcv) {
            Some(Half::Active(r)) => Some(r),
            _ => None,
        }
    }

    /// The receiver of `flow` holds every byte.
    pub fn receiver_complete(&self, flow: FlowId) -> bool {
        matches!(self.slots.get(flow as usize).map(|s| &s.rcv), Some(Half::Done))
    }

    /// The sender of `flow` has every byte acknowledged.
    pub fn sender_done(&self, flow: FlowId) -> bool {
        matches!(self.slots.get(flow as usize).map(|s| &s.snd), Some(Half::Done))
    }

    #[inline]
    fn is_persistent(&self, id: usize) -> bool {
        !self.persistent.is_empty() && self.persistent.get(id).copied().unwrap_or(false)
    }

    #[inline]
    fn ensure(&mut self, n: usize) {
        if self.slots.len() < n {
            self.slots.resize_with(n, Slot::default);
        }
    }
}

fn finish_sender<C: CongestionControl>(slot: &mut Slot<C>) {
    if let Half::Active(s) = &slot.snd {
        if s.is_done() {
            slot.stats = s.stats();
            slot.snd = Half::Done;
        }
    }
}

impl<C: CongestionControl + 'static> Transport for Tcp<C> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let id = flow as usize;
        self.ensure(ctx.flows.len());
        let info = &ctx.flows[id];
        let mut cx =
            FlowCtx { now: ctx.now, flow: info, params: &self.params, policy: &*self.policy, out: &mut *ctx.out };
        let mut s = Box::new(TcpSender::<C>::with_law(info, &self.params, &self.law));
        s.start(&mut cx);
        let keep = self.is_persistent(id);
        let slot = &mut self.slots[id];
        slot.snd = Half::Active(s);
        if !keep {
            finish_sender(slot);
        }
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let id = pkt.flow as usize;
        if id >= ctx.flows.len() {
            return;
        }
        self.ensure(ctx.flows.len());
        let info = &ctx.flows[id];
        let keep = self.is_persistent(id);
        let mut cx =
            FlowCtx { now: ctx.now, flow: info, params: &self.params, policy: &*self.policy, out: &mut *ctx.out };
        let slot = &mut self.slots[id];
        match pkt.kind {
            KIND_DATA => {
                let done = match &mut slot.rcv {
                    Half::Done => {
                        ack_after_completion(&mut cx, pkt);
                        false
                    }
                    Half::Active(r) if keep => {
                        // An open connection: the flow may have grown since the last packet.
                        r.extend(info.size.0);
                        r.on_data(&mut cx, pkt);
                        false
                    }
                    Half::Active(r) => {
                        r.on_data(&mut cx, pkt);
                        r.is_complete()
                    }
                    Half::Idle => {
                        let mut r = Box::new(TcpReceiver::new(info));
                        r.on_data(&mut cx, pkt);
                        let c = r.is_complete() && !keep;
                        slot.rcv = Half::Active(r);
                        c
                    }
                };
                if done {
                    slot.rcv = Half::Done;
                }
            }
            KIND_ACK => {
                if let Half::Active(s) = &mut slot.snd {
                    s.on_ack(&mut cx, pkt);
                    if !keep {
                        finish_sender(slot);
                    }
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, tok: u64) {
        let (flow, kind, gen) = untoken(tok);
        let id = flow as usize;
        if id >= self.slots.len() || id >= ctx.flows.len() {
            return;
        }
        let info = &ctx.flows[id];
        let keep = self.is_persistent(id);
        let mut cx =
            FlowCtx { now: ctx.now, flow: info, params: &self.params, policy: &*self.policy, out: &mut *ctx.out };
        let slot = &mut self.slots[id];
        match kind {
            TIMER_RTO => {
                if let Half::Active(s) = &mut slot.snd {
                    s.on_rto_timer(&mut cx, gen);
                    if !keep {
                        finish_sender(slot);
                    }
                }
            }
            TIMER_PACE => {
                if let Half::Active(s) = &mut slot.snd {
                    s.on_pace_timer(&mut cx, gen);
                    if !keep {
                        finish_sender(slot);
                    }
                }
            }
            TIMER_DELACK => {
                if let Half::Active(r) = &mut slot.rcv {
                    r.on_delack_timer(&mut cx, gen);
                }
            }
            _ => {}
        }
    }

    fn on_tx_complete(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let id = pkt.flow as usize;
        let keep = self.is_persistent(id);
        if let (Some(slot), Some(info)) = (self.slots.get_mut(id), ctx.flows.get(id)) {
            if let Half::Active(s) = &mut slot.snd {
                let mut cx = FlowCtx {
                    now: ctx.now,
                    flow: info,
                    params: &self.params,
                    policy: &*self.policy,
                    out: &mut *ctx.out,
                };
                s.on_tx_complete(&mut cx, pkt.size as u64);
                if !keep {
                    finish_sender(slot);
                }
            }
        }
    }

    fn wants_tx_complete(&self) -> bool {
        self.params.tsq.is_some()
    }

    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        match self.slots.get(flow as usize) {
            Some(Slot { snd: Half::Active(s), .. }) => s.stats(),
            Some(slot) => slot.stats,
            None => FlowStats::default(),
        }
    }

    fn supports_append(&self) -> bool {
        true
    }

    fn keep_open(&mut self, flow: FlowId) {
        let id = flow as usize;
        if self.persistent.len() <= id {
            self.persistent.resize(id + 1, false);
        }
        self.persistent[id] = true;
    }

    fn append(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let id = flow as usize;
        let (Some(slot), Some(info)) = (self.slots.get_mut(id), ctx.flows.get(id)) else { return };
        if let Half::Active(s) = &mut slot.snd {
            let mut cx =
                FlowCtx { now: ctx.now, flow: info, params: &self.params, policy: &*self.policy, out: &mut *ctx.out };
            s.append(&mut cx);
        }
    }
}

/// First byte at or after `s` outside the range of `v` that holds `s`, if any. `v` is
/// sorted and disjoint, so the range that can hold `s` is the first one ending after it
/// (binary search: a flow recovering many losses, or with many ranges delivered by another
/// loop, keeps hundreds of ranges).
fn skip_in(v: &[(u64, u64)], s: u64) -> u64 {
    match v.get(v.partition_point(|&(_, b)| b <= s)) {
        Some(&(a, b)) if a <= s => b,
        _ => s,
    }
}

/// Bytes of `[a, b)` covered by the sorted, disjoint ranges `v` (from the first range
/// ending after `a`, found by binary search).
fn overlap(v: &[(u64, u64)], a: u64, b: u64) -> u64 {
    let mut n = 0;
    for &(x, y) in &v[v.partition_point(|&(_, y)| y <= a)..] {
        if x >= b {
            break;
        }
        n += y.min(b).saturating_sub(x.max(a));
    }
    n
}
