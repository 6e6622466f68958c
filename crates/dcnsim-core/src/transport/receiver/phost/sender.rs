//! pHost's source side: the RTS, the free-token burst, data sent on the best token held when
//! the NIC is idle (the flow with the fewest remaining bytes first), the Aeolus probe, the
//! completion ACK and the RTS retransmission timer.

use super::*;
use crate::transport::blocks::bitmap;

impl Phost {
    /// If the NIC of `ctx.host` is idle, send one data packet on the best token held.
    pub(super) fn try_send(&mut self, ctx: &mut Ctx) {
        let h = ctx.host as usize;
        if self.hosts[h].nic_busy {
            return;
        }
        let now = ctx.now;
        let mut best: Option<(u64, Time, FlowId)> = None;
        for &f in &self.hosts[h].sending {
            if let Snd::Active(s) = &mut self.snd[f as usize] {
                s.tokens.retain(|t| t.expiry >= now);
                if !s.tokens.is_empty() {
                    let key = (s.remaining, s.start, f);
                    if best.is_none_or(|b| key < b) {
                        best = Some(key);
                    }
                }
            }
        }
        if self.p.aeolus.is_some() {
            // Free tokens that expired unused end a flow's free phase too.
            for i in 0..self.hosts[h].sending.len() {
                let f = self.hosts[h].sending[i];
                if let Snd::Active(s) = &mut self.snd[f as usize] {
                    if let Some(pr) = Self::end_of_free_phase(s, f, &self.p) {
                        ctx.out.send(pr);
                    }
                }
            }
        }
        let Some((_, _, f)) = best else { return };
        let (pkt, size, dst, tok) = {
            let Snd::Active(s) = &mut self.snd[f as usize] else { unreachable!() };
            let i = (0..s.tokens.len()).min_by_key(|&i| (s.tokens[i].expiry, s.tokens[i].pkt)).expect("a token");
            let tok = s.tokens.swap_remove(i);
            let again = bitmap::set(&mut s.sent, tok.pkt);
            (again, s.size, s.dst, tok)
        };
        let payload = self.payload_of(size, tok.pkt);
        if pkt {
            self.stats[f as usize].retx_bytes += payload;
        }
        let mut flags = PacketFlags(PacketFlags::DATA);
        let mut aux2 = 0;
        if tok.free {
            flags.set(self.p.free.flags);
            aux2 |= AUX2_FREE;
        }
        let p = Packet {
            src: ctx.host,
            dst,
            flow: f,
            size: (payload + self.p.header) as u32,
            payload: payload as u32,
            prio: tok.prio,
            flags,
            kind: KIND_DATA,
            seq: tok.pkt * self.p.mss,
            ack: size,
            aux: tok.serial,
            aux2,
            ts: now,
            ..Packet::default()
        };
        self.emit(ctx, p);
        if let Snd::Active(s) = &mut self.snd[f as usize] {
            if tok.free {
                if let Some(a) = s.aeolus.as_mut() {
                    a.on_sent(tok.pkt);
                }
            }
            // The probe goes right behind the last free packet (same class, FIFO).
            if let Some(pr) = Self::end_of_free_phase(s, f, &self.p) {
                ctx.out.send(pr);
            }
        }
    }

    /// Aeolus: if flow `f`'s free phase is over (no free token left), leave the pre-credit
    /// state and return the probe if it is due.
    fn end_of_free_phase(s: &mut SendFlow, f: FlowId, p: &PhostParams) -> Option<Packet> {
        let a = s.aeolus.as_mut()?;
        if a.in_precredit() && !s.tokens.iter().any(|t| t.free) {
            a.exit_precredit();
        }
        if a.in_precredit() {
            return None;
        }
        let last = a.probe_due()?;
        Some(aeolus::probe_packet(
            aeolus::Wire { mss: p.mss, ctrl_size: p.ctrl_size },
            KIND_PROBE,
            s.dst,
            f,
            last,
            s.size,
            p.free.prio,
        ))
    }

    pub(super) fn on_token(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let mss = self.p.mss;
        let Some(Snd::Active(s)) = self.snd.get_mut(pkt.flow as usize) else { return };
        if s.aeolus.as_ref().is_some_and(|a| a.in_precredit()) {
            // Aeolus §III-A: the first credit ends the pre-credit state at once; free
            // packets not sent yet go as scheduled packets (the probe tells the destination
            // where the free phase ended, and it sends tokens for them).
            s.tokens.retain(|t| !t.free);
            let p = &self.p;
            if let Some(pr) = Self::end_of_free_phase(s, pkt.flow, p) {
                ctx.out.send(pr);
            }
        }
        s.remaining = pkt.ack;
        s.last_heard = ctx.now;
        s.tokens.push(Tok {
            pkt: pkt.seq / mss,
            serial: pkt.aux,
            expiry: ctx.now + pkt.ts,
            prio: pkt.rank as u8,
            free: false,
        });
        self.try_send(ctx);
    }

    pub(super) fn on_ack(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        if let Some(st @ Snd::Active(_)) = self.snd.get_mut(f as usize) {
            *st = Snd::Done;
            self.hosts[ctx.host as usize].sending.retain(|&x| x != f);
        }
    }

    pub(super) fn send_rts(&mut self, ctx: &mut Ctx, f: FlowId, dst: NodeId, size: u64) {
        let mut p = self.ctrl(KIND_RTS, f, ctx.host, dst);
        p.seq = size;
        self.emit(ctx, p);
    }

    pub(super) fn on_rts_timer(&mut self, ctx: &mut Ctx, f: FlowId, gen: u32) {
        let timeout = self.p.rts_timeout;
        let Some(Snd::Active(s)) = self.snd.get_mut(f as usize) else { return };
        if !s.rts_timer.fire(gen) {
            return;
        }
        let due = s.last_heard + timeout;
        if ctx.now < due {
            let g = s.rts_timer.arm(due);
            ctx.out.timer(due, token(f, TIMER_RTS, g));
            return;
        }
        // Heard nothing for a whole timeout: the RTS (or the ACK) may be lost.
        s.last_heard = ctx.now;
        let at = ctx.now + timeout;
        let g = s.rts_timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_RTS, g));
        let (dst, size) = (s.dst, s.size);
        self.send_rts(ctx, f, dst, size);
    }
}
