//! The TCP receiver: cumulative and selective acknowledgements, delayed ACKs, ECN echo.

use super::*;

// ------------------------------------------------------------------------------------------
// Receiver
// ------------------------------------------------------------------------------------------

/// The receiving half of one TCP/DCTCP flow.
#[derive(Clone, Debug)]
pub struct TcpReceiver {
    size: u64,
    rcv_nxt: u64,
    /// Out-of-order ranges above `rcv_nxt`, sorted, disjoint.
    ooo: Vec<(u64, u64)>,
    complete: bool,
    /// Payload bytes received since the last ACK.
    pend_bytes: u64,
    pend_ts: Time,
    /// Arrival time of the oldest data packet the pending ACK covers.
    pend_at: Time,
    pend_ce: bool,
    pend_prio: u8,
    delack: TimerSlot,
    dup_bytes: u64,
}

impl TcpReceiver {
    pub fn new(flow: &FlowInfo) -> TcpReceiver {
        TcpReceiver {
            size: flow.size.0,
            rcv_nxt: 0,
            ooo: Vec::new(),
            complete: false,
            pend_bytes: 0,
            pend_ts: Time::ZERO,
            pend_at: Time::ZERO,
            pend_ce: false,
            pend_prio: 0,
            delack: TimerSlot::default(),
            dup_bytes: 0,
        }
    }

    /// The flow now ends at `size` (a message appended to a persistent connection): the
    /// receiver reports completion again when it holds every byte up to it.
    pub fn extend(&mut self, size: u64) {
        if size > self.size {
            self.size = size;
            self.complete = false;
        }
    }

    /// Next byte expected (cumulative ACK).
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn is_complete(&self) -> bool {
        self.complete
    }
    pub fn out_of_order(&self) -> &[(u64, u64)] {
        &self.ooo
    }
    /// Payload bytes received more than once.
    pub fn duplicate_bytes(&self) -> u64 {
        self.dup_bytes
    }

    fn sack_block(&self, s: u64) -> (u64, u64) {
        if self.ooo.is_empty() {
            return (self.rcv_nxt, self.rcv_nxt);
        }
        // The out-of-order range holding `s`, if any (sorted, disjoint ranges).
        match self.ooo.get(self.ooo.partition_point(|&(_, b)| b <= s)) {
            Some(&(a, b)) if a <= s => (a, b),
            _ => self.ooo[0],
        }
    }

    fn send_ack(&mut self, cx: &mut FlowCtx, block: (u64, u64)) {
        let hold = cx.now.saturating_sub(self.pend_at);
        let pkt =
            ack_packet(cx, self.rcv_nxt, block, self.pend_bytes, self.pend_ce, self.pend_ts, self.pend_prio, hold);
        cx.out.send(pkt);
        self.pend_bytes = 0;
        if self.delack.is_armed() {
            self.delack.cancel();
        }
    }

    /// Process a data packet. Reports completion through `cx.out` (once) and returns true
    /// when this packet completed the flow.
    pub fn on_data(&mut self, cx: &mut FlowCtx, pkt: &Packet) -> bool {
        let p = cx.params;
        let ce = pkt.ecn == Ecn::Ce;
        let (s, e) = (pkt.seq, pkt.seq + pkt.payload as u64);
        if self.pend_bytes > 0 && ce != self.pend_ce {
            // DCTCP two-state machine: ACK what came before in the old state.
            let b = self.sack_block(self.rcv_nxt);
            self.send_ack(cx, b);
        }
        let had_ooo = !self.ooo.is_empty();
        let before = self.rcv_nxt;
        let mut ooo_seg = false;
        let newly;
        if s <= self.rcv_nxt {
            if e > self.rcv_nxt {
                newly = (e - self.rcv_nxt) - overlap(&self.ooo, self.rcv_nxt, e);
                self.rcv_nxt = e;
                if had_ooo {
                    let mut k = 0;
                    while k < self.ooo.len() && self.ooo[k].0 <= self.rcv_nxt {
                        self.rcv_nxt = self.rcv_nxt.max(self.ooo[k].1);
                        k += 1;
                    }
                    self.ooo.drain(..k);
                }
            } else {
                newly = 0;
            }
        } else {
            ooo_seg = true;
            newly = range_insert(&mut self.ooo, s, e);
        }
        let dup = newly < e - s;
        if dup {
            self.dup_bytes += (e - s) - newly;
        }
        if self.pend_bytes == 0 {
            self.pend_ts = pkt.ts;
            self.pend_at = cx.now;
        }
        self.pend_ce = ce;
        self.pend_prio = pkt.prio;
        self.pend_bytes += pkt.payload as u64;
        let mut completed = false;
        if !self.complete && self.rcv_nxt >= self.size {
            self.complete = true;
            completed = true;
            cx.out.complete(cx.flow.id);
        }
        let hole_fill = had_ooo && self.rcv_nxt > before;
        let immediate = !p.delayed_ack || ooo_seg || hole_fill || dup || self.complete || self.pend_bytes >= 2 * p.mss;
        if immediate {
            let b = self.sack_block(s);
            self.send_ack(cx, b);
        } else if !self.delack.is_armed() {
            let at = cx.now + p.delayed_ack_timeout;
            let g = self.delack.arm(at);
            cx.out.timer(at, token(cx.flow.id, TIMER_DELACK, g));
        }
        completed
    }

    /// Handle a firing [`TIMER_DELACK`] token generation.
    pub fn on_delack_timer(&mut self, cx: &mut FlowCtx, gen: u32) {
        if self.delack.fire(gen) && self.pend_bytes > 0 {
            let b = self.sack_block(self.rcv_nxt);
            self.send_ack(cx, b);
        }
    }
}

/// Write the advertised receive window `rwnd` (bytes) into an ACK: whole segments of `mss`,
/// at least 1 and at most [`ACK_RWND_MAX_SEGS`] (a larger window is advertised as the
/// largest one the field holds, as TCP's window field is bounded).
pub fn set_ack_rwnd(ack: &mut Packet, rwnd: u64, mss: u64) {
    let segs = (rwnd / mss.max(1)).clamp(1, ACK_RWND_MAX_SEGS) as u32;
    ack.aux2 = (ack.aux2 & !ACK_RWND_MASK) | (segs << ACK_RWND_SHIFT);
}

/// The receive window (bytes) an ACK advertises, if any.
#[inline]
pub fn ack_rwnd(ack: &Packet, mss: u64) -> Option<u64> {
    let segs = ((ack.aux2 & ACK_RWND_MASK) >> ACK_RWND_SHIFT) as u64;
    (segs > 0).then(|| segs * mss)
}

/// ACK a data packet that arrives after the receiver completed (and freed its state).
pub fn ack_after_completion(cx: &mut FlowCtx, pkt: &Packet) {
    let size = cx.flow.size.0;
    let p = ack_packet(cx, size, (size, size), pkt.payload as u64, pkt.ecn == Ecn::Ce, pkt.ts, pkt.prio, Time::ZERO);
    cx.out.send(p);
}
