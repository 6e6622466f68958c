//! Homa's sending end: unscheduled packets at once, scheduled packets as grants allow (the
//! shortest remaining message first), the sender timeout, and the answers to RESEND, BUSY and
//! Aeolus' ACKs.

use super::*;

impl Homa {
    /// Whether message `m` has a packet it may send now.
    fn can_send(m: &SendMsg) -> bool {
        if !m.resend.is_empty() {
            return true;
        }
        let credit = m.charged < m.granted;
        if let Some(a) = &m.aeolus {
            if credit && a.has_lost() {
                return true;
            }
        }
        if m.next_new < m.npk {
            let unsched = match &m.aeolus {
                Some(a) => a.may_send_unscheduled(m.next_new),
                None => m.next_new < m.u_pkts,
            };
            if unsched || credit {
                return true;
            }
            return false;
        }
        credit && m.aeolus.as_ref().is_some_and(|a| a.has_unacked())
    }

    /// Pick the next transmission of message `m` (Aeolus §III-C order for credited packets).
    fn take(m: &mut SendMsg, p: &HomaParams) -> Option<Tx> {
        if let Some(r) = m.resend.pop_front() {
            return Some(Tx {
                idx: r.idx,
                prio: r.prio,
                unscheduled: false,
                retx: true,
                sender_timeout: r.sender_timeout,
                resend: !r.sender_timeout,
                charged: r.charged,
            });
        }
        let credit = m.charged < m.granted;
        if credit {
            if let Some(i) = m.aeolus.as_mut().and_then(|a| a.pop_lost()) {
                m.charged += m.payload_of(i, p.mss);
                return Some(Tx::aeolus_retx(i, m.sched_prio));
            }
        }
        if m.next_new < m.npk {
            let i = m.next_new;
            let unsched = match &m.aeolus {
                Some(a) => a.may_send_unscheduled(i),
                None => i < m.u_pkts,
            };
            if unsched || credit {
                m.next_new += 1;
                m.charged += m.payload_of(i, p.mss);
                if unsched {
                    if let Some(a) = m.aeolus.as_mut() {
                        a.on_sent(i);
                    }
                    return Some(Tx::new_data(i, m.unsched_prio, true));
                }
                return Some(Tx::new_data(i, m.sched_prio, false));
            }
            return None;
        }
        if credit {
            if let Some(i) = m.aeolus.as_mut().and_then(|a| a.pop_unacked()) {
                m.charged += m.payload_of(i, p.mss);
                return Some(Tx::aeolus_retx(i, m.sched_prio));
            }
        }
        None
    }

    /// If the NIC of `ctx.host` is idle, send one data packet of the best message (SRPT).
    pub(super) fn try_send(&mut self, ctx: &mut Ctx) {
        let h = ctx.host;
        if self.host(h).nic_busy {
            return;
        }
        let mut best: Option<(u64, Time, FlowId)> = None;
        for &f in &self.hosts[h as usize].sending {
            if let Snd::Active(m) = &self.snd[f as usize] {
                if Self::can_send(m) {
                    let key = (m.size - (m.next_new * self.p.mss).min(m.size), m.start, f);
                    if best.is_none_or(|b| key < b) {
                        best = Some(key);
                    }
                }
            }
        }
        let Some((_, _, f)) = best else { return };
        let now = ctx.now;
        let p = &self.p;
        let Snd::Active(m) = &mut self.snd[f as usize] else { return };
        let Some(tx) = Self::take(m, p) else { return };
        m.last_sent = now;
        let payload = m.payload_of(tx.idx, p.mss);
        let mut flags = PacketFlags(PacketFlags::DATA);
        if tx.unscheduled {
            flags.set(aeolus::UNSCHEDULED_FLAGS);
        }
        let mut aux2 = 0;
        if tx.retx {
            aux2 |= DATA_RETX;
            self.stats[f as usize].retx_bytes += payload;
        }
        if tx.sender_timeout {
            aux2 |= DATA_SENDER_TIMEOUT;
        }
        if tx.resend {
            aux2 |= DATA_RESEND;
        }
        if tx.charged {
            aux2 |= DATA_CHARGED;
        }
        let pkt = Packet {
            dst: m.dst,
            flow: f,
            size: (payload + p.header) as u32,
            payload: payload as u32,
            prio: tx.prio,
            flags,
            kind: KIND_DATA,
            seq: tx.idx * p.mss,
            ack: m.size,
            ts: now,
            aux2,
            ..Packet::default()
        };
        let probe = if tx.unscheduled {
            let w = aeolus::Wire { mss: p.mss, ctrl_size: p.ctrl_size };
            m.aeolus
                .as_mut()
                .and_then(|a| a.probe_due())
                .map(|last| aeolus::probe_packet(w, KIND_PROBE, m.dst, f, last, m.size, p.probe_prio(m.unsched_prio)))
        } else {
            None
        };
        self.emit(ctx, pkt);
        if let Some(pr) = probe {
            self.emit(ctx, pr);
        }
    }

    /// Arm (lazily) the sender's nothing-heard timer of `f`.
    pub(super) fn arm_sender_timer(&mut self, ctx: &mut Ctx, f: FlowId) {
        let t = self.p.sender_timeout;
        let Some(Snd::Active(m)) = self.snd.get_mut(f as usize) else { return };
        if m.heard || m.timer.is_armed() {
            return;
        }
        let at = m.last_sent.max(ctx.now) + t;
        let g = m.timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_SEND, g));
    }

    pub(super) fn on_sender_timer(&mut self, ctx: &mut Ctx, f: FlowId, gen: u32) {
        let t = self.p.sender_timeout;
        let Some(Snd::Active(m)) = self.snd.get_mut(f as usize) else { return };
        if !m.timer.fire(gen) || m.heard {
            return;
        }
        let due = m.last_sent + t;
        if ctx.now < due {
            let g = m.timer.arm(due);
            ctx.out.timer(due, token(f, TIMER_SEND, g));
            return;
        }
        // Nothing heard about this message: the receiver may not know it. Resend its first
        // packet (a RESEND-like query carrying the length).
        if m.resend.iter().all(|r| !r.sender_timeout) {
            m.resend.push_back(Resend { idx: 0, prio: m.unsched_prio, sender_timeout: true, charged: false });
        }
        m.last_sent = ctx.now;
        let at = ctx.now + t;
        let g = m.timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_SEND, g));
        self.try_send(ctx);
    }

    fn sender_msg(&mut self, f: FlowId) -> Option<&mut SendMsg> {
        match self.snd.get_mut(f as usize) {
            Some(Snd::Active(m)) => Some(m),
            _ => None,
        }
    }

    pub(super) fn on_grant(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let (p_mss, ctrl, probe_control) = (self.p.mss, self.p.ctrl_size, self.p.probe_control);
        let f = pkt.flow;
        let Some(m) = self.sender_msg(f) else { return };
        m.heard = true;
        m.granted = m.granted.max(pkt.seq);
        m.sched_prio = pkt.rank as u8;
        let mut probe = None;
        if !m.got_grant {
            m.got_grant = true;
            if let Some(a) = m.aeolus.as_mut() {
                a.exit_precredit();
                let w = aeolus::Wire { mss: p_mss, ctrl_size: ctrl };
                probe = a.probe_due().map(|last| {
                    let prio = if probe_control { 0 } else { m.unsched_prio };
                    aeolus::probe_packet(w, KIND_PROBE, m.dst, f, last, m.size, prio)
                });
            }
        }
        if let Some(pr) = probe {
            self.emit(ctx, pr);
        }
        self.try_send(ctx);
    }

    pub(super) fn on_resend(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let mss = self.p.mss;
        let f = pkt.flow;
        let Some(m) = self.sender_msg(f) else { return };
        m.heard = true;
        let first = pkt.seq / mss;
        let asked_end = (pkt.seq + pkt.ack).div_ceil(mss);
        // A RESEND also grants the range it asks for: a lost GRANT (or, with Aeolus, credit
        // spent on a retransmission the receiver did not count) must not leave the receiver
        // waiting for bytes the sender may not send. Unsent bytes of the range get credit
        // beyond what is charged; without Aeolus this is the grant offset itself.
        let unsent = (pkt.seq + pkt.ack).min(m.size).saturating_sub(m.next_new * mss);
        m.granted = m.granted.max(pkt.seq + pkt.ack).max(m.charged + unsent);
        let end = asked_end.min(m.next_new);
        let mut queued = 0;
        for idx in first..end {
            let took = m.aeolus.as_mut().is_some_and(|a| a.take_over_lost(idx));
            if took {
                // Aeolus found it lost and waits for a credit to resend it: this copy is its
                // one retransmission and spends the credit the receiver granted for it.
                m.charged += m.payload_of(idx, mss);
            }
            match m.resend.iter_mut().find(|r| r.idx == idx) {
                Some(r) => r.charged |= took,
                None => {
                    m.resend.push_back(Resend { idx, prio: pkt.rank as u8, sender_timeout: false, charged: took });
                    queued += 1;
                }
            }
        }
        let busy = asked_end > m.next_new;
        if queued > 0 {
            self.stats[f as usize].timeouts += 1;
        }
        if busy {
            // Part of the range was never sent: the sender is busy with shorter messages.
            let b = self.ctrl(KIND_BUSY, f, pkt.src);
            self.emit(ctx, b);
        }
        self.try_send(ctx);
    }

    /// BUSY at the sender (the receiver knows the message) or at the receiver (the sender
    /// is alive but sending shorter messages first): either way, no timeout for now.
    pub(super) fn on_busy(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow as usize;
        if ctx.flows.get(f).is_some_and(|i| i.src == ctx.host) {
            if let Some(m) = self.sender_msg(pkt.flow) {
                m.heard = true;
            }
        } else if let Some(Rcv::Active(r)) = self.rcv.get_mut(f) {
            r.last_progress = ctx.now;
            if r.resend_out {
                let src = r.src;
                self.resend_answered(ctx, pkt.flow, src);
            }
        }
    }

    pub(super) fn on_sender_ack(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        if let Some(st @ Snd::Active(_)) = self.snd.get_mut(f as usize) {
            *st = Snd::Done;
            self.host(ctx.host).sending.retain(|&x| x != f);
        }
    }

    pub(super) fn on_uack(&mut self, ctx: &mut Ctx, pkt: &Packet, probe: bool) {
        let Some(m) = self.sender_msg(pkt.flow) else { return };
        m.heard = true;
        if let Some(a) = m.aeolus.as_mut() {
            if probe {
                a.on_probe_ack();
            } else {
                a.on_ack(pkt.aux);
            }
        }
        self.try_send(ctx);
    }
}
