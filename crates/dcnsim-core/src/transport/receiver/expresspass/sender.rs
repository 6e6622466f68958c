//! ExpressPass' sending end: the credit request, one data packet per credit received, the
//! credit stop, NACK and unscheduled-ACK handling, and the pre-credit packets with Aeolus
//! (Aeolus §III for the pre-credit packets).

use super::*;

/// Sender-side state of one flow.
#[derive(Debug)]
pub(super) struct SendFlow {
    pub(super) dst: NodeId,
    pub(super) size: u64,
    pub(super) n_pkts: u64,
    /// Next packet never sent.
    pub(super) next_new: u64,
    /// Scheduled retransmissions, served before new data.
    pub(super) retx: VecDeque<u64>,
    pub(super) got_credit: bool,
    pub(super) request_timer: TimerSlot,
    pub(super) stop_sent_at: Option<Time>,
    pub(super) credits: u64,
    pub(super) wasted: u64,
    /// Aeolus first-RTT state (None: plain ExpressPass).
    pub(super) aeolus: Option<AeolusSender>,
}

impl SendFlow {
    /// With Aeolus: packet `next_new` may still go unscheduled (pre-credit state).
    pub(super) fn may_send_unscheduled(&self) -> bool {
        self.next_new < self.n_pkts && self.aeolus.as_ref().is_some_and(|a| a.may_send_unscheduled(self.next_new))
    }
}

impl ExpressPass {
    fn data(&self, flow: FlowId, src: NodeId, s: &SendFlow, pkt: u64) -> Packet {
        let off = pkt * self.p.mss;
        let payload = (s.size - off).min(self.p.mss);
        Packet {
            src,
            dst: s.dst,
            flow,
            size: (payload + self.p.header) as u32,
            payload: payload as u32,
            prio: self.p.data_prio,
            flags: PacketFlags(PacketFlags::DATA),
            kind: KIND_DATA,
            seq: off,
            ack: s.size,
            ..Packet::default()
        }
    }

    // ------------------------------------------------------------------ sender side

    pub(super) fn send_request(&mut self, ctx: &mut Ctx, f: FlowId) {
        let Snd::Active(s) = &mut self.snd[f as usize] else { return };
        let at = ctx.now + self.p.request_timeout;
        let g = s.request_timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_REQUEST, g));
        let mut p = Packet {
            src: ctx.host,
            dst: s.dst,
            flow: f,
            size: self.p.ctrl_size as u32,
            prio: self.p.data_prio,
            kind: KIND_CREDIT_REQUEST,
            ..Packet::default()
        };
        p.seq = s.size;
        ctx.out.send(p);
    }

    /// Send flow `f`'s next unscheduled packet (and the probe right after the last one).
    fn send_unscheduled(&mut self, ctx: &mut Ctx, f: FlowId) -> bool {
        let pre = self.pre;
        let Some(Snd::Active(s)) = self.snd.get(f as usize) else { return false };
        if !s.may_send_unscheduled() {
            return false;
        }
        let i = s.next_new;
        let mut d = self.data(f, ctx.host, s, i);
        d.flags.set(pre.flags);
        d.prio = pre.prio;
        d.ts = ctx.now;
        let (mss, ctrl) = (self.p.mss, self.p.ctrl_size);
        let Some(Snd::Active(s)) = self.snd.get_mut(f as usize) else { return false };
        s.next_new += 1;
        let a = s.aeolus.as_mut().expect("unscheduled packets only with Aeolus");
        a.on_sent(i);
        let probe = a.probe_due().map(|last| {
            aeolus::probe_packet(aeolus::Wire { mss, ctrl_size: ctrl }, KIND_PROBE, s.dst, f, last, s.size, pre.prio)
        });
        ctx.out.send(d);
        if let Some(p) = probe {
            ctx.out.send(p);
        }
        true
    }

    /// The host's NIC is idle: send one unscheduled packet, round robin over the host's
    /// flows in the pre-credit state (the Aeolus control logic, §IV-B).
    pub(super) fn pump(&mut self, ctx: &mut Ctx) {
        let h = ctx.host;
        if self.host(h).busy {
            return;
        }
        while let Some(f) = self.host(h).precredit.pop_front() {
            if self.send_unscheduled(ctx, f) {
                let more = matches!(&self.snd[f as usize], Snd::Active(s) if s.may_send_unscheduled());
                if more {
                    self.host(h).precredit.push_back(f);
                }
                return;
            }
        }
    }

    pub(super) fn on_credit(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        let now = ctx.now;
        let stop_timeout = self.p.stop_timeout;
        let (mss, ctrl, uprio) = (self.p.mss, self.p.ctrl_size, self.p.unsched_prio);
        let Some(Snd::Active(s)) = self.snd.get_mut(f as usize) else { return };
        s.credits += 1;
        let mut probe = None;
        if !s.got_credit {
            s.got_credit = true;
            s.request_timer.cancel();
            // Aeolus §III-A: the first credit ends the pre-credit state at once; the probe
            // follows the last packet that actually went unscheduled.
            if let Some(a) = s.aeolus.as_mut() {
                a.exit_precredit();
                probe = a.probe_due().map(|last| {
                    aeolus::probe_packet(
                        aeolus::Wire { mss, ctrl_size: ctrl },
                        KIND_PROBE,
                        s.dst,
                        f,
                        last,
                        s.size,
                        uprio,
                    )
                });
            }
        }
        if let Some(p) = probe {
            ctx.out.send(p);
        }
        // Aeolus §III-C order: loss-detected unscheduled packets, (NACKed packets,) new
        // data, sent but unacknowledged unscheduled packets.
        let lost = s.aeolus.as_mut().and_then(|a| a.pop_lost());
        let mut unacked = false;
        let (idx, retx) = if let Some(i) = lost {
            (Some(i), true)
        } else if let Some(i) = s.retx.pop_front() {
            (Some(i), true)
        } else if s.next_new < s.n_pkts {
            s.next_new += 1;
            (Some(s.next_new - 1), false)
        } else if let Some(i) = s.aeolus.as_mut().and_then(|a| a.pop_unacked()) {
            unacked = true;
            (Some(i), true)
        } else {
            (None, false)
        };
        let Some(i) = idx else {
            // Nothing to send: the credit is wasted. Repeat a CREDIT_STOP that seems lost.
            s.wasted += 1;
            let repeat = s.stop_sent_at.is_none_or(|t| now >= t + stop_timeout);
            if repeat {
                self.send_stop(ctx, f);
            }
            return;
        };
        let s = match &self.snd[f as usize] {
            Snd::Active(s) => s,
            Snd::Unknown => return,
        };
        let mut d = self.data(f, ctx.host, s, i);
        d.aux2 = AUX2_SCHEDULED;
        d.aux = pkt.aux;
        d.ts = pkt.ts;
        if let Some(a) = &s.aeolus {
            // Tells the receiver how many packets went unscheduled (final once credited).
            d.rank = a.sent();
        }
        // CREDIT_STOP right behind the last packet that had to go (a speculative resend of
        // an unacknowledged unscheduled packet repeats no CREDIT_STOP already sent).
        let done = s.retx.is_empty()
            && s.next_new == s.n_pkts
            && !s.aeolus.as_ref().is_some_and(|a| a.has_lost())
            && !(unacked && s.stop_sent_at.is_some());
        if retx {
            self.stats[f as usize].retx_bytes += d.payload as u64;
        }
        ctx.out.send(d);
        if done {
            self.send_stop(ctx, f);
        }
    }

    fn send_stop(&mut self, ctx: &mut Ctx, f: FlowId) {
        let Snd::Active(s) = &mut self.snd[f as usize] else { return };
        s.stop_sent_at = Some(ctx.now);
        let (dst, sent) = (s.dst, (s.next_new * self.p.mss).min(s.size));
        let mut p = self.ctrl(KIND_CREDIT_STOP, f, ctx.host, dst);
        p.seq = sent;
        ctx.out.send(p);
    }

    pub(super) fn on_nack(&mut self, pkt: &Packet) {
        let mss = self.p.mss;
        let f = pkt.flow;
        let Some(Snd::Active(s)) = self.snd.get(f as usize) else { return };
        let (a, b) = (pkt.seq / mss, pkt.ack.div_ceil(mss).min(s.n_pkts));
        for i in a..b {
            // Already queued, never sent or to be resent by Aeolus: nothing to do.
            self.queue_retransmission(f, i);
        }
    }

    /// An Aeolus ACK of an unscheduled packet (`probe`: of the probe) at the sender.
    pub(super) fn on_uack(&mut self, pkt: &Packet, probe: bool) {
        let Some(Snd::Active(s)) = self.snd.get_mut(pkt.flow as usize) else { return };
        // The receiver knows the flow: the request needs no repeating.
        s.request_timer.cancel();
        if let Some(a) = s.aeolus.as_mut() {
            if probe {
                a.on_probe_ack();
            } else {
                a.on_ack(pkt.aux);
            }
        }
    }

    pub(super) fn on_request_timer(&mut self, ctx: &mut Ctx, f: FlowId, gen: u32) {
        let Some(Snd::Active(s)) = self.snd.get_mut(f as usize) else { return };
        if !s.request_timer.fire(gen) || s.got_credit {
            return;
        }
        self.stats[f as usize].timeouts += 1;
        self.send_request(ctx, f);
    }
}
