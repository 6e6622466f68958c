//! The TCP sender: window, SACK recovery, RTO, pacing gate, per-flow NIC limit and window
//! validation (see the module documentation of `tcp`).

use super::*;

// ------------------------------------------------------------------------------------------
// Sender
// ------------------------------------------------------------------------------------------

/// Loss-recovery state of a sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// No loss recovery in progress.
    Open,
    /// NewReno fast recovery (SACK off).
    NewReno,
    /// RFC 6675 SACK-based recovery.
    Sack,
}

#[derive(Clone, Copy)]
enum NextSeg {
    Hole,
    New,
    Rescue,
}

/// The sending half of one TCP/DCTCP flow, generic over its window law (`cc.rs`).
#[derive(Clone, Debug)]
pub struct TcpSender<C: CongestionControl = Standard> {
    id: FlowId,
    size: u64,
    /// Start of the MSS grid segments at or above it are cut on: 0, or the flow's size before
    /// the latest [`TcpSender::append`] (a message appended to an open connection starts on a
    /// fresh grid, as a write to a real socket does).
    grid: u64,
    mss: u64,
    una: u64,
    nxt: u64,
    max: u64,
    cwnd: u64,
    ssthresh: u64,
    ca_credit: u64,
    dupacks: u32,
    recovery: Recovery,
    recover: u64,
    high_rxt: u64,
    rescue_rxt: Option<u64>,
    partial_seen: bool,
    /// SACK scoreboard: sorted disjoint ranges above `una`.
    sb: Vec<(u64, u64)>,
    /// Ranges delivered by other means ([`TcpSender::note_delivered`]): skipped when
    /// sending, never loss evidence. Sorted, disjoint, above `una`.
    known: Vec<(u64, u64)>,
    srtt: u64,
    rttvar: u64,
    has_rtt: bool,
    rto: Time,
    rto_series: u32,
    rto_timer: TimerSlot,
    rto_on: bool,
    rto_deadline: Time,
    /// The window law (DCTCP's alpha lives there).
    cc: C,
    win_acked: u64,
    win_marked: u64,
    alpha_end: u64,
    in_cwr: bool,
    cwr_end: u64,
    bytes_sent: u64,
    retx_bytes: u64,
    timeouts: u32,
    ecn_cuts: u32,
    fast_retx: u32,
    max_cwnd_seen: u64,
    /// Swift's window law (None: Reno/DCTCP).
    swift: Option<Box<SwiftCc>>,
    /// Wire bytes of this sender's data packets handed to the NIC and not yet transmitted
    /// (`host.tsq`): released by [`TcpSender::on_tx_complete`].
    nic_bytes: u64,
    /// A send stopped at the NIC limit: the next transmit completion resumes sending.
    tsq_throttled: bool,
    /// Window validation: the current round ends when `una` reaches `round_end`.
    round_end: u64,
    /// A send was stopped by the window in the current round.
    round_cwnd_limited: bool,
    /// The largest flight (bytes) seen at a send in the current round.
    round_max_flight: u64,
    /// Peak of `nic_bytes` (diagnostics, tests).
    max_nic_bytes: u64,
    /// The receive window the receiver last advertised, bytes (`u64::MAX`: none yet). The
    /// sender keeps at most min(cwnd, rwnd) in flight.
    rwnd: u64,
}

impl TcpSender<Standard> {
    /// A sender with `tcp`'s or `dctcp`'s law (by `p.dctcp`).
    pub fn new(flow: &FlowInfo, p: &TcpParams) -> TcpSender {
        TcpSender::with_law(flow, p, &p.standard_law())
    }
}

impl<C: CongestionControl> TcpSender<C> {
    /// A sender with the window law `C` (parameters `law`).
    pub fn with_law(flow: &FlowInfo, p: &TcpParams, law: &C::Params) -> TcpSender<C> {
        let rto = p.initial_rto.unwrap_or_else(|| p.min_rto.max(flow.base_rtt * 3)).min(p.max_rto);
        TcpSender {
            id: flow.id,
            size: flow.size.0,
            grid: 0,
            mss: p.mss,
            una: 0,
            nxt: 0,
            max: 0,
            cwnd: p.init_cwnd,
            ssthresh: p.init_ssthresh,
            ca_credit: 0,
            dupacks: 0,
            recovery: Recovery::Open,
            recover: 0,
            high_rxt: 0,
            rescue_rxt: None,
            partial_seen: false,
            sb: Vec::new(),
            known: Vec::new(),
            srtt: 0,
            rttvar: 0,
            has_rtt: false,
            rto,
            rto_series: 0,
            rto_timer: TimerSlot::default(),
            rto_on: false,
            rto_deadline: Time::ZERO,
            cc: C::new(flow, law),
            win_acked: 0,
            win_marked: 0,
            alpha_end: 0,
            in_cwr: false,
            cwr_end: 0,
            bytes_sent: 0,
            retx_bytes: 0,
            timeouts: 0,
            ecn_cuts: 0,
            fast_retx: 0,
            max_cwnd_seen: p.init_cwnd,
            swift: None,
            nic_bytes: 0,
            tsq_throttled: false,
            round_end: 0,
            round_cwnd_limited: false,
            round_max_flight: 0,
            max_nic_bytes: 0,
            rwnd: u64::MAX,
        }
        .with_swift(flow, p)
    }

    fn with_swift(mut self, flow: &FlowInfo, p: &TcpParams) -> TcpSender<C> {
        if let Some(sp) = &p.swift {
            let sw = SwiftCc::new(sp, p.init_cwnd as f64 / p.mss as f64, flow.base_rtt);
            self.swift = Some(Box::new(sw));
            self.sync_swift();
            self.max_cwnd_seen = self.cwnd;
        }
        self
    }

    /// Swift's state, when this sender runs Swift's window law.
    pub fn swift(&self) -> Option<&SwiftCc> {
        self.swift.as_deref()
    }

    /// Copy Swift's window into the byte window (and ssthresh, which leaving SACK recovery
    /// restores).
    fn sync_swift(&mut self) {
        if let Some(sw) = &self.swift {
            self.cwnd = sw.cwnd_bytes(self.mss);
            self.ssthresh = self.cwnd;
            self.ca_credit = 0;
            self.max_cwnd_seen = self.max_cwnd_seen.max(self.cwnd);
        }
    }

    /// Run Swift's ACK law for `acked` newly acknowledged bytes.
    fn swift_ack(&mut self, p: &TcpParams, now: Time, pkt: &Packet, acked: u64) {
        if let (Some(sw), Some(sp)) = (self.swift.as_deref_mut(), p.swift.as_ref()) {
            let rtt = now.saturating_sub(pkt.ts);
            let remote = Time(pkt.rank as u64 * 1000);
            let hops = (pkt.hops as u32).saturating_sub(1);
            sw.on_ack(sp, now, rtt, remote, hops, acked as f64 / self.mss as f64);
            self.sync_swift();
        }
    }

    /// Handle a firing [`TIMER_PACE`] token generation (Swift's pacing below one packet).
    pub fn on_pace_timer(&mut self, cx: &mut FlowCtx, gen: u32) {
        let fired = self.swift.as_deref_mut().is_some_and(|sw| sw.pace.fire(gen));
        if fired && self.una < self.size {
            self.send_available(cx);
        }
    }

    /// Swift's pacing gate: true if a packet may leave now; otherwise arms the pacing timer.
    fn pace_ok(&mut self, cx: &mut FlowCtx) -> bool {
        let Some(sw) = self.swift.as_deref_mut() else { return true };
        if sw.may_send(cx.now) {
            return true;
        }
        let at = sw.next_tx();
        if !(sw.pace.is_armed() && sw.pace.at == at) {
            let g = sw.pace.arm(at);
            cx.out.timer(at, token(self.id, TIMER_PACE, g));
        }
        false
    }

    // ---- read-only state ----
    /// Wire bytes of this flow's data waiting in (or being sent by) the host NIC.
    pub fn nic_bytes(&self) -> u64 {
        self.nic_bytes
    }
    /// The largest `nic_bytes` so far.
    pub fn max_nic_bytes(&self) -> u64 {
        self.max_nic_bytes
    }
    /// The last send stopped at the per-flow NIC limit.
    pub fn tsq_throttled(&self) -> bool {
        self.tsq_throttled
    }
    /// The per-flow NIC limit in force now, bytes (`None`: `host.tsq` off).
    pub fn tsq_limit(&self, p: &TcpParams) -> Option<u64> {
        let t = p.tsq?;
        Some(t.limit(self.cwnd, self.ssthresh, self.has_rtt.then_some(self.srtt), self.mss + p.header))
    }
    /// Window validation: may an ACK grow the window now (`host.cwnd_validation`)?
    pub fn cwnd_limited(&self) -> bool {
        self.round_cwnd_limited || (self.cwnd < self.ssthresh && self.cwnd < 2 * self.round_max_flight)
    }
    /// Congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }
    /// The receiver's advertised window, bytes (`u64::MAX` until an ACK advertises one).
    pub fn rwnd(&self) -> u64 {
        self.rwnd
    }
    /// Slow-start threshold, bytes (`u64::MAX` = infinite).
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    /// DCTCP's estimate of the marked fraction.
    pub fn alpha(&self) -> f64 {
        self.cc.alpha()
    }
    /// The window law's state.
    pub fn law(&self) -> &C {
        &self.cc
    }
    /// Smoothed RTT, once sampled.
    pub fn srtt(&self) -> Option<Time> {
        self.has_rtt.then_some(Time(self.srtt))
    }
    pub fn rttvar(&self) -> Option<Time> {
        self.has_rtt.then_some(Time(self.rttvar))
    }
    /// Current retransmission timeout (backoff included).
    pub fn rto(&self) -> Time {
        self.rto
    }
    pub fn snd_una(&self) -> u64 {
        self.una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.nxt
    }
    /// Highest byte offset sent + 1.
    pub fn snd_max(&self) -> u64 {
        self.max
    }
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }
    pub fn in_cwr(&self) -> bool {
        self.in_cwr
    }
    /// Payload bytes put on the wire (retransmissions included).
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent
    }
    pub fn retx_bytes(&self) -> u64 {
        self.retx_bytes
    }
    pub fn timeouts(&self) -> u32 {
        self.timeouts
    }
    /// Window cuts caused by ECN-Echo.
    pub fn ecn_cuts(&self) -> u32 {
        self.ecn_cuts
    }
    /// Fast retransmits (entries into loss recovery by duplicate ACKs / SACK).
    pub fn fast_retransmits(&self) -> u32 {
        self.fast_retx
    }
    /// Largest cwnd this flow has had, bytes.
    pub fn max_cwnd_seen(&self) -> u64 {
        self.max_cwnd_seen
    }
    /// The SACK scoreboard (sorted, disjoint ranges above `snd_una`).
    pub fn scoreboard(&self) -> &[(u64, u64)] {
        &self.sb
    }
    /// Every byte has been acknowledged.
    pub fn is_done(&self) -> bool {
        self.una >= self.size && self.max >= self.size
    }
    pub fn stats(&self) -> FlowStats {
        FlowStats { retx_bytes: self.retx_bytes, timeouts: self.timeouts, ..FlowStats::default() }
    }

    // ---- driving ----

    /// Send the initial window.
    pub fn start(&mut self, cx: &mut FlowCtx) {
        if self.size == 0 {
            self.send_seg(cx, 0, 0);
            self.stop_rto();
            return;
        }
        self.send_available(cx);
        self.alpha_end = self.max;
    }

    /// The application appended bytes to this open connection: the flow now ends at
    /// `cx.flow.size` (persistent connections, `Transport::append`). Window, ssthresh, alpha,
    /// RTT estimate and RTO carry over; the new bytes are cut on an MSS grid starting at the
    /// old end, and sent as far as the window allows.
    pub fn append(&mut self, cx: &mut FlowCtx) {
        let new = cx.flow.size.0;
        if new <= self.size {
            return;
        }
        self.grid = self.size;
        self.size = new;
        self.send_available(cx);
    }

    /// Send whatever the window (or, in SACK recovery, the pipe) allows.
    pub fn send_available(&mut self, cx: &mut FlowCtx) {
        if self.recovery == Recovery::Sack {
            self.fill_sack(cx);
        } else {
            self.fill_normal(cx);
        }
    }

    /// One of this sender's data packets (`wire` bytes) has been transmitted by the host NIC:
    /// release its bytes from the NIC limit and, if that limit had stopped a send, send on.
    pub fn on_tx_complete(&mut self, cx: &mut FlowCtx, wire: u64) {
        self.nic_bytes = self.nic_bytes.saturating_sub(wire);
        if self.tsq_throttled {
            self.tsq_throttled = false;
            if self.una < self.size {
                self.send_available(cx);
            }
        }
    }

    /// The per-flow NIC limit (`host.tsq`) in force for the sends of one call (`u64::MAX`
    /// when off): computed once per call, since the window and RTT do not change within it.
    #[inline]
    fn nic_limit(&self, p: &TcpParams) -> u64 {
        if p.tsq.is_none() {
            return u64::MAX;
        }
        self.tsq_limit(p).unwrap_or(u64::MAX)
    }

    /// May a data packet go to the NIC under `limit`? Linux sends while the flow's queued
    /// bytes do not exceed the limit, so one packet may overshoot it; otherwise the sender
    /// is marked throttled until a transmit completion.
    #[inline]
    fn nic_room(&mut self, limit: u64) -> bool {
        if self.nic_bytes > limit {
            self.tsq_throttled = true;
            return false;
        }
        true
    }

    /// Window validation bookkeeping at the end of a send attempt: `flight` bytes in
    /// flight, `window_full` whether the window stopped it. A round lasts until `una`
    /// passes the `snd_nxt` of its start; within it a window-limited attempt is
    /// remembered, otherwise the largest flight.
    fn note_send_attempt(&mut self, flight: u64, window_full: bool) {
        if self.una >= self.round_end || window_full || (!self.round_cwnd_limited && flight > self.round_max_flight) {
            self.round_cwnd_limited = window_full;
            self.round_max_flight = flight;
            self.round_end = self.nxt;
        }
    }

    /// Record bytes delivered by other means (e.g. a second loop of an embedding transport)
    /// so the sender skips them.
    pub fn mark_delivered(&mut self, a: u64, b: u64) {
        let a = a.max(self.una);
        let b = b.min(self.size);
        range_insert(&mut self.sb, a, b);
    }

    /// Record bytes the receiver is known to hold through other means (an embedding
    /// transport's second loop). Unlike [`TcpSender::mark_delivered`] they are not SACKed:
    /// the sender skips them when sending (and does not count them in flight), but they are
    /// not evidence that the bytes below them are lost (RFC 6675 IsLost counts SACKs only).
    pub fn note_delivered(&mut self, a: u64, b: u64) {
        let a = a.max(self.una);
        let b = b.min(self.size);
        range_insert(&mut self.known, a, b);
    }

    /// Process an ACK (`kind == KIND_ACK`).
    pub fn on_ack(&mut self, cx: &mut FlowCtx, pkt: &Packet) {
        let p = cx.params;
        let ack = pkt.ack.min(self.size);
        let ece = pkt.aux2 & ACK_ECE != 0;
        let covered = (pkt.aux2 & ACK_COVERED_MASK) as u64;
        if ack >= self.una {
            if let Some(w) = ack_rwnd(pkt, self.mss) {
                self.rwnd = w;
            }
        }
        if ack > self.max {
            // Delivered by someone else (an embedding transport's second loop).
            self.max = ack;
        }
        let mut new_sack = 0;
        if p.sack && pkt.aux > pkt.seq && pkt.aux > ack {
            new_sack = range_insert(&mut self.sb, pkt.seq.max(ack), pkt.aux.min(self.max));
        }
        if p.ecn {
            self.win_acked += covered;
            if ece {
                self.win_marked += covered;
            }
        }
        if ack > self.una {
            let newly = ack - self.una;
            self.una = ack;
            if self.nxt < ack {
                self.nxt = ack;
            }
            if !self.sb.is_empty() || !self.known.is_empty() {
                self.trim_scoreboard();
            }
            self.dupacks = 0;
            self.rto_series = 0;
            self.rtt_sample(p, cx.now.saturating_sub(pkt.ts));
            self.swift_ack(p, cx.now, pkt, newly);
            if p.ecn && self.una >= self.alpha_end {
                self.update_alpha();
            }
            if self.in_cwr && self.una >= self.cwr_end {
                self.in_cwr = false;
            }
            let cut = ece && self.ecn_react(cx);
            let mut restart = true;
            match self.recovery {
                Recovery::Open => {
                    if !cut && self.swift.is_none() {
                        self.grow(cx, newly);
                    }
                }
                Recovery::NewReno => {
                    if self.una >= self.recover {
                        let flight = self.max - self.una;
                        self.cwnd = self.ssthresh.min(flight.max(self.mss) + self.mss);
                        self.recovery = Recovery::Open;
                    } else {
                        // Partial ACK: retransmit the next hole, deflate.
                        let e = self.seg_end(self.una);
                        self.send_seg(cx, self.una, e);
                        self.cwnd = self.cwnd.saturating_sub(newly);
                        if newly >= self.mss {
                            self.cwnd += self.mss;
                        }
                        self.cwnd = self.cwnd.max(self.mss);
                        restart = !self.partial_seen;
                        self.partial_seen = true;
                    }
                }
                Recovery::Sack => {
                    if self.una >= self.recover {
                        self.cwnd = self.ssthresh;
                        self.recovery = Recovery::Open;
                    } else if self.high_rxt < self.una {
                        self.high_rxt = self.una;
                    }
                }
            }
            if self.una >= self.max {
                self.stop_rto();
            } else if restart {
                self.restart_rto(cx);
            }
        } else if ack == self.una && self.una < self.max {
            if !p.sack || new_sack > 0 {
                self.dupacks += 1;
            }
            if new_sack > 0 {
                self.swift_ack(p, cx.now, pkt, new_sack);
            }
            if ece {
                self.ecn_react(cx);
            }
            match self.recovery {
                Recovery::NewReno => self.cwnd += self.mss,
                Recovery::Sack => {}
                Recovery::Open => {
                    if self.una >= self.recover
                        && (self.dupacks >= p.dupack_threshold || (p.sack && self.is_lost(p, self.una)))
                    {
                        self.enter_recovery(cx);
                        return;
                    }
                }
            }
        }
        if self.una < self.size {
            self.send_available(cx);
        }
    }

    /// Handle a firing [`TIMER_RTO`] token generation. Returns true if a timeout was processed.
    pub fn on_rto_timer(&mut self, cx: &mut FlowCtx, gen: u32) -> bool {
        if !self.rto_timer.fire(gen) || !self.rto_on {
            return false;
        }
        if cx.now < self.rto_deadline {
            // The deadline moved later since this event was armed: re-arm.
            let d = self.rto_deadline;
            let g = self.rto_timer.arm(d);
            cx.out.timer(d, token(self.id, TIMER_RTO, g));
            return false;
        }
        if self.is_done() {
            self.rto_on = false;
            return false;
        }
        let p = cx.params;
        self.timeouts += 1;
        if let (Some(sw), Some(sp)) = (self.swift.as_deref_mut(), p.swift.as_ref()) {
            sw.on_rto(sp, cx.now);
            self.sync_swift();
        } else {
            let st = self.cc_state(cx);
            let (ssthresh, cwnd) = self.cc.on_timeout(&st, self.rto_series == 0);
            if let Some(t) = ssthresh {
                self.ssthresh = t;
            }
            self.cwnd = cwnd;
        }
        self.rto_series += 1;
        self.ca_credit = 0;
        self.recovery = Recovery::Open;
        self.dupacks = 0;
        self.recover = self.max;
        self.high_rxt = self.una;
        self.nxt = self.una;
        self.in_cwr = false;
        self.rto = (self.rto * 2).min(p.max_rto);
        self.restart_rto(cx);
        self.fill_normal(cx);
        true
    }

    // ---- internals ----

    fn rtt_sample(&mut self, p: &TcpParams, r: Time) {
        let r = r.0;
        if !self.has_rtt {
            self.srtt = r;
            self.rttvar = r / 2;
            self.has_rtt = true;
        } else {
            let d = self.srtt.abs_diff(r);
            self.rttvar = (3 * self.rttvar + d) / 4;
            self.srtt = (7 * self.srtt + r) / 8;
        }
        let rto = Time(self.srtt.saturating_add(self.rttvar.saturating_mul(4)));
        self.rto = rto.max(p.min_rto).min(p.max_rto);
    }

    /// What the window law may read (see [`CcState`]).
    #[inline]
    fn cc_state(&self, cx: &FlowCtx) -> CcState {
        CcState {
            now: cx.now,
            mss: self.mss,
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            una: self.una,
            max: self.max,
            size: self.size,
            srtt: self.srtt(),
            base_rtt: cx.flow.base_rtt,
        }
    }

    fn update_alpha(&mut self) {
        if self.win_acked > 0 {
            self.cc.on_window_end(self.win_acked, self.win_marked);
        }
        self.win_acked = 0;
        self.win_marked = 0;
        self.alpha_end = self.max;
    }

    /// React to ECE; returns true if the window was cut.
    fn ecn_react(&mut self, cx: &FlowCtx) -> bool {
        let p = cx.params;
        if !p.ecn || self.in_cwr || self.recovery != Recovery::Open {
            return false;
        }
        let st = self.cc_state(cx);
        let w = self.cc.ecn_window(&st).max(p.min_cwnd);
        self.ssthresh = w;
        self.cwnd = w.min(self.cwnd);
        self.ca_credit = 0;
        self.in_cwr = true;
        self.cwr_end = self.max;
        self.ecn_cuts += 1;
        true
    }

    fn grow(&mut self, cx: &FlowCtx, newly: u64) {
        let p = cx.params;
        if p.cwnd_validation && !self.cwnd_limited() {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + newly.min(2 * self.mss)).min(self.ssthresh);
        } else {
            let st = self.cc_state(cx);
            self.ca_credit += self.cc.ca_credit(&st, newly);
            if self.ca_credit >= self.cwnd {
                let inc = self.ca_credit / self.cwnd;
                self.ca_credit -= inc * self.cwnd;
                self.cwnd += inc;
            }
        }
        if self.cwnd > p.max_cwnd {
            self.cwnd = p.max_cwnd;
        }
        if self.cwnd > self.max_cwnd_seen {
            self.max_cwnd_seen = self.cwnd;
        }
    }

    fn enter_recovery(&mut self, cx: &mut FlowCtx) {
        let p = cx.params;
        self.fast_retx += 1;
        if let (Some(sw), Some(sp)) = (self.swift.as_deref_mut(), p.swift.as_ref()) {
            sw.on_fast_recovery(sp, cx.now);
            self.sync_swift();
        } else {
            let st = self.cc_state(cx);
            self.ssthresh = self.cc.loss_ssthresh(&st);
        }
        self.recover = self.max;
        self.in_cwr = false;
        self.ca_credit = 0;
        let s = self.una;
        let e = self.seg_end(s);
        if p.sack {
            self.recovery = Recovery::Sack;
            self.rescue_rxt = None;
            self.cwnd = self.ssthresh;
            self.send_seg(cx, s, e);
            self.high_rxt = e;
            self.fill_sack(cx);
        } else {
            self.recovery = Recovery::NewReno;
            self.partial_seen = false;
            self.send_seg(cx, s, e);
            self.cwnd = self.ssthresh + p.dupack_threshold as u64 * self.mss;
            self.fill_normal(cx);
        }
    }

    fn trim_scoreboard(&mut self) {
        let una = self.una;
        for v in [&mut self.sb, &mut self.known] {
            let k = v.partition_point(|&(_, b)| b <= una);
            if k > 0 {
                v.drain(..k);
            }
            if let Some(first) = v.first_mut() {
                if first.0 < una {
                    first.0 = una;
                }
            }
        }
    }

    /// End of the segment starting at `s`: the MSS grid, the flow end, the next SACKed range.
    fn seg_end(&self, s: u64) -> u64 {
        let mut e = if s >= self.grid {
            (self.grid + ((s - self.grid) / self.mss + 1) * self.mss).min(self.size)
        } else {
            ((s / self.mss + 1) * self.mss).min(self.grid)
        };
        for v in [&self.sb, &self.known] {
            // The first range starting after `s` (ranges are sorted and disjoint).
            if let Some(&(a, _)) = v.get(v.partition_point(|&(a, _)| a <= s)) {
                e = e.min(a);
            }
        }
        e
    }

    /// First byte at or after `s` that is neither SACKed nor known delivered.
    fn skip_sacked(&self, mut s: u64) -> u64 {
        loop {
            let t = skip_in(&self.known, skip_in(&self.sb, s));
            if t == s {
                return s;
            }
            s = t;
        }
    }

    /// Known-delivered bytes in `[a, b)` that are not SACKed.
    fn known_unsacked(&self, a: u64, b: u64) -> u64 {
        let mut n = 0;
        // Only the known ranges that intersect [a, b): from the first ending after `a`.
        for &(x, y) in &self.known[self.known.partition_point(|&(_, y)| y <= a)..] {
            if x >= b {
                break;
            }
            let (x, y) = (x.max(a), y.min(b));
            if x < y {
                n += (y - x) - overlap(&self.sb, x, y);
            }
        }
        n
    }

    fn sacked_between(&self, a: u64, b: u64) -> u64 {
        overlap(&self.sb, a, b)
    }

    /// Start of the range below which every un-SACKed byte is deemed lost (RFC 6675 IsLost).
    fn lost_boundary(&self, p: &TcpParams) -> u64 {
        let thr = (p.dupack_threshold as u64 - 1) * self.mss;
        let mut bytes = 0;
        let mut segs = 0;
        for &(a, b) in self.sb.iter().rev() {
            bytes += b - a;
            segs += (b - 1) / self.mss - a / self.mss + 1;
            if bytes > thr || segs >= p.dupack_threshold as u64 {
                return a;
            }
        }
        self.una
    }

    fn is_lost(&self, p: &TcpParams, s: u64) -> bool {
        s < self.lost_boundary(p)
    }

    /// RFC 6675 SetPipe.
    fn pipe(&self, p: &TcpParams) -> u64 {
        let l = self.lost_boundary(p);
        let hr = self.high_rxt;
        let mut pipe = 0;
        let mut pos = self.una;
        let hole = |a: u64, b: u64| -> u64 {
            if a >= b {
                return 0;
            }
            // Not lost: counted once; retransmitted: counted (again).
            b.saturating_sub(a.max(l)) + hr.min(b).saturating_sub(a)
        };
        for &(a, b) in &self.sb {
            pipe += hole(pos, a.min(self.max));
            pos = pos.max(b);
        }
        pipe += hole(pos, self.max);
        if !self.known.is_empty() {
            // Known-delivered holes are not in flight.
            pipe = pipe.saturating_sub(self.known_unsacked(l.max(self.una), self.max));
        }
        pipe
    }

    fn fill_normal(&mut self, cx: &mut FlowCtx) {
        // Bytes outstanding below the next segment: neither SACKed nor known delivered.
        // Computed once; each segment sent then adds exactly its length, since a segment
        // never holds SACKed or known bytes (`seg_end` stops at the next range) and the bytes
        // `skip_sacked` passes over are all SACKed or known (so they add nothing). Summing the
        // ranges afresh for every segment cost O(ranges) per packet for flows holding
        // hundreds of them (many losses, or ranges another loop delivered).
        let plain = self.sb.is_empty() && self.known.is_empty();
        let mut s = self.nxt;
        let mut outstanding = if plain {
            s - self.una
        } else {
            s = self.skip_sacked(s);
            (s - self.una) - self.sacked_between(self.una, s) - self.known_unsacked(self.una, s)
        };
        let mut window_full = false;
        let limit = self.nic_limit(cx.params);
        while s < self.size {
            let e = self.seg_end(s);
            if outstanding + (e - s) > self.cwnd.min(self.rwnd) {
                // Window validation counts only the congestion window's limit.
                window_full = self.cwnd <= self.rwnd;
                break;
            }
            if !self.nic_room(limit) || !self.pace_ok(cx) {
                break;
            }
            self.send_seg(cx, s, e);
            self.nxt = e;
            outstanding += e - s;
            s = if plain { e } else { self.skip_sacked(e) };
        }
        self.note_send_attempt(outstanding, window_full);
    }

    fn fill_sack(&mut self, cx: &mut FlowCtx) {
        let p = cx.params;
        let mut pipe = self.pipe(p);
        let limit = self.nic_limit(p);
        loop {
            let l = self.lost_boundary(p);
            let high_sacked = self.sb.last().map_or(self.una, |r| r.1);
            let s1 = self.skip_sacked(self.high_rxt.max(self.una));
            let s2 = self.skip_sacked(self.nxt);
            let (s, e, kind) = if s1 < l && s1 < self.max {
                // Rule 1: the lowest lost hole above HighRxt.
                (s1, self.seg_end(s1), NextSeg::Hole)
            } else if s2 < self.size {
                // Rule 2: new data.
                (s2, self.seg_end(s2), NextSeg::New)
            } else if s1 < high_sacked {
                // Rule 3: an un-SACKed hole below the highest SACKed byte, not yet deemed lost.
                (s1, self.seg_end(s1), NextSeg::Hole)
            } else if let Some(h) = self.rescue_candidate() {
                // Rule 4: once per recovery, the segment holding the highest un-SACKed byte.
                let a = ((h / self.mss) * self.mss).max(self.una);
                (a, self.seg_end(a), NextSeg::Rescue)
            } else {
                break;
            };
            if pipe + (e - s) > self.cwnd.min(self.rwnd) {
                self.note_send_attempt(pipe, self.cwnd <= self.rwnd);
                break;
            }
            if !self.nic_room(limit) || !self.pace_ok(cx) {
                break;
            }
            self.send_seg(cx, s, e);
            pipe += e - s;
            match kind {
                NextSeg::Hole => self.high_rxt = e,
                NextSeg::New => self.nxt = e,
                NextSeg::Rescue => self.rescue_rxt = Some(self.recover),
            }
        }
    }

    /// RFC 6675 NextSeg rule 4: the highest un-SACKed outstanding byte, if no rescue
    /// retransmission happened in this recovery yet.
    fn rescue_candidate(&self) -> Option<u64> {
        if self.rescue_rxt.is_some_and(|r| r >= self.una) || self.una >= self.max {
            return None;
        }
        let h = match self.sb.last() {
            Some(&(a, b)) if b >= self.max => a.checked_sub(1)?,
            _ => self.max - 1,
        };
        (h >= self.una && h >= self.high_rxt).then_some(h)
    }

    fn send_seg(&mut self, cx: &mut FlowCtx, s: u64, e: u64) {
        let p = cx.params;
        let payload = e - s;
        let retx = s < self.max;
        let pkt = Packet {
            src: cx.flow.src,
            dst: cx.flow.dst,
            flow: self.id,
            size: (payload + p.header) as u32,
            payload: payload as u32,
            prio: cx.policy.prio(cx.flow, self.bytes_sent, s),
            ecn: if p.ecn { Ecn::Ect } else { Ecn::NotEct },
            flags: PacketFlags(PacketFlags::DATA),
            kind: KIND_DATA,
            seq: s,
            ts: cx.now,
            aux2: if retx { DATA_RETX } else { 0 },
            ..Packet::default()
        };
        cx.out.send(pkt);
        self.nic_bytes += payload + p.header;
        self.max_nic_bytes = self.max_nic_bytes.max(self.nic_bytes);
        if let Some(sw) = self.swift.as_deref_mut() {
            sw.on_sent(cx.now);
        }
        self.bytes_sent += payload;
        if retx {
            self.retx_bytes += e.min(self.max) - s;
        }
        if e > self.max {
            self.max = e;
        }
        if !self.rto_on {
            self.restart_rto(cx);
        }
    }

    fn restart_rto(&mut self, cx: &mut FlowCtx) {
        let d = cx.now + self.rto;
        self.rto_on = true;
        self.rto_deadline = d;
        if self.rto_timer.is_armed() && self.rto_timer.at <= d {
            return; // the armed event fires first and re-arms to the deadline
        }
        let g = self.rto_timer.arm(d);
        cx.out.timer(d, token(self.id, TIMER_RTO, g));
    }

    fn stop_rto(&mut self) {
        self.rto_on = false;
    }
}
