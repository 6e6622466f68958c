//! pHost's destination side: admitting a flow (RTS, or the first data packet or probe that
//! carries its size), the paced tokens in SRPT order with downgrade and retransmission
//! rounds, completion, and the Aeolus loss inference on free-token packets.

use super::*;
use crate::transport::blocks::bitmap;

impl Phost {
    /// Create the destination's state for flow `f` of `size` bytes from `src`.
    fn admit(&mut self, ctx: &mut Ctx, f: FlowId, src: NodeId, size: u64) {
        let now = ctx.now;
        let n = self.n_pkts(size);
        if n == 0 {
            self.rcv[f as usize] = Rcv::Done;
            ctx.out.complete(f);
            let a = self.ctrl(KIND_ACK, f, ctx.host, src);
            self.emit(ctx, a);
            return;
        }
        let info = ctx.flows.get(f as usize);
        let start = info.map(|i| i.start).unwrap_or(now);
        let rtt = info.map(|i| i.base_rtt).unwrap_or(Time::ZERO);
        let n_free = self.p.free.count(n);
        let t_src = info.map(|i| i.host_rate.tx_time(Bytes(self.p.mtu))).unwrap_or(self.p.token_interval);
        let burst_end = now + t_src * n_free;
        if self.p.reserve_free && n_free > 0 {
            let hs = &mut self.hosts[ctx.host as usize];
            hs.free_until = hs.free_until.max(hs.booked_until).max(now) + self.p.token_interval * n_free;
        }
        let r = RecvFlow {
            src,
            size,
            start,
            n_pkts: n,
            n_free,
            got: Vec::new(),
            got_pkts: 0,
            got_bytes: 0,
            issued: n_free,
            answered: 0,
            next_new: n_free,
            cursor: None,
            retx_at: burst_end + self.p.retx_timeout,
            sched_from: if n_free == 0 { now } else { burst_end },
            sched_refined: n_free == 0,
            last_token: now,
            rtt,
            aeolus: self.p.aeolus.map(|_| AeolusReceiver::new()),
            lost: VecDeque::new(),
        };
        self.rcv[f as usize] = Rcv::Active(Box::new(r));
        self.hosts[ctx.host as usize].receiving.push(f);
        self.kick(ctx);
    }

    pub(super) fn on_rts(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        match &self.rcv[pkt.flow as usize] {
            Rcv::Unknown => self.admit(ctx, pkt.flow, pkt.src, pkt.seq),
            Rcv::Active(_) => {}
            Rcv::Done => {
                // The source did not hear the ACK: repeat it.
                let a = self.ctrl(KIND_ACK, pkt.flow, ctx.host, pkt.src);
                self.emit(ctx, a);
            }
        }
    }

    pub(super) fn on_data(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        if let Rcv::Unknown = self.rcv[f as usize] {
            // The RTS was lost: the data packet carries the flow size.
            self.admit(ctx, f, pkt.src, pkt.ack);
        }
        let mss = self.p.mss;
        let window = self.p.downgrade_tokens;
        let now = ctx.now;
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        let was_downgraded = r.unanswered() >= window;
        let serial = pkt.aux;
        if serial < r.issued {
            r.answered = r.answered.max(serial + 1);
        }
        let mut kick = was_downgraded && r.unanswered() < window;
        if pkt.aux2 & AUX2_FREE != 0 && !r.sched_refined {
            // First free packet: the burst ends n_free packets after it; start the scheduled
            // tokens one base RTT before that (see the parent module's documentation).
            r.sched_refined = true;
            let t_src = ctx.flows.get(f as usize).map(|i| (i.host_rate, i.base_rtt));
            if let Some((rate, rtt)) = t_src {
                let end = now + rate.tx_time(Bytes(self.p.mtu)) * r.n_free;
                let from = end.saturating_sub(rtt).max(now);
                if from < r.sched_from {
                    r.sched_from = from;
                    kick = true;
                }
            }
        }
        let i = pkt.seq / mss;
        if pkt.aux2 & AUX2_FREE != 0 && pkt.flags.has(PacketFlags::UNSCHEDULED) && i < r.n_free {
            // Aeolus: free packets before this one that never arrived are lost.
            if let Some(a) = r.aeolus.as_mut() {
                let mut newly = Vec::new();
                a.on_unscheduled(i as u32, &mut newly);
                let mut n = 0;
                for j in newly {
                    if !bitmap::get(&r.got, j as u64) {
                        r.lost.push_back(j as u64);
                        n += 1;
                    }
                }
                if n > 0 {
                    kick = true;
                    // Lost free packets will not take the downlink time booked for them.
                    let hs = &mut self.hosts[ctx.host as usize];
                    hs.free_until = hs.free_until.saturating_sub(self.p.token_interval * n);
                }
            }
        }
        if i < r.n_pkts && !bitmap::set(&mut r.got, i) {
            r.got_pkts += 1;
            r.got_bytes += pkt.payload as u64;
        }
        if r.got_pkts == r.n_pkts {
            let src = r.src;
            self.rcv[f as usize] = Rcv::Done;
            self.hosts[ctx.host as usize].receiving.retain(|&x| x != f);
            ctx.out.complete(f);
            let a = self.ctrl(KIND_ACK, f, ctx.host, src);
            self.emit(ctx, a);
            return;
        }
        if kick {
            self.kick(ctx);
        }
    }

    /// Aeolus: the probe that follows a flow's last free packet. Every free packet up to the
    /// one it names that has not arrived is lost; free packets after it were never sent
    /// (the source left the free phase early). Each gets one token ahead of new packets.
    pub(super) fn on_probe(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        if let Rcv::Unknown = self.rcv[f as usize] {
            // The RTS and every free packet were lost: the probe carries the flow size.
            self.admit(ctx, f, pkt.src, pkt.ack);
        }
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        let Some(a) = r.aeolus.as_mut() else { return };
        if r.n_free == 0 {
            return;
        }
        let last = pkt.aux.min(r.n_free - 1);
        let mut newly = Vec::new();
        a.on_probe(last as u32, &mut newly);
        let unsent = last + 1..r.n_free;
        let mut n = 0;
        for j in newly.into_iter().map(|j| j as u64).chain(unsent) {
            if !bitmap::get(&r.got, j) && !r.lost.contains(&j) {
                r.lost.push_back(j);
                n += 1;
            }
        }
        if n > 0 {
            // Lost (or unsent) free packets will not take the downlink time booked for them.
            let hs = &mut self.hosts[ctx.host as usize];
            hs.free_until = hs.free_until.saturating_sub(self.p.token_interval * n);
            self.kick(ctx);
        }
    }

    /// Make sure the pacer of `ctx.host` runs at the earliest allowed slot.
    fn kick(&mut self, ctx: &mut Ctx) {
        let t = self.p.token_interval;
        let hs = &mut self.hosts[ctx.host as usize];
        let at = hs.last_token.map(|l| l + t).unwrap_or(ctx.now).max(ctx.now);
        if !hs.pacer.is_armed() || hs.pacer.at > at {
            let g = hs.pacer.arm(at);
            ctx.out.timer(at, token(ctx.host, TIMER_PACER, g));
        }
    }

    /// What the destination can do for flow `f` at `now` (may start a retransmission round).
    fn next_for(&mut self, f: FlowId, now: Time, free_until: Time) -> Next {
        let p = &self.p;
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return Next::Wait(Time::MAX) };
        let from = r.sched_from.max(free_until.saturating_sub(r.rtt));
        if now < from {
            return Next::Wait(from);
        }
        while r.lost.front().is_some_and(|&i| bitmap::get(&r.got, i)) {
            r.lost.pop_front();
        }
        let pkt = if let Some(&i) = r.lost.front() {
            // Aeolus: a lost free packet, resent once as a scheduled packet, first.
            i
        } else if r.next_new < r.n_pkts {
            r.next_new
        } else if let Some(c) = r.cursor {
            match r.next_missing(c) {
                Some(i) => i,
                None => {
                    // Round over: wait again after its last token.
                    r.cursor = None;
                    r.retx_at = r.last_token + p.retx_timeout;
                    return Next::Wait(r.retx_at);
                }
            }
        } else if now >= r.retx_at {
            let i = r.next_missing(0).expect("an incomplete flow misses a packet");
            r.cursor = Some(i);
            self.stats[f as usize].timeouts += 1;
            i
        } else {
            return Next::Wait(r.retx_at);
        };
        if r.unanswered() >= p.downgrade_tokens {
            let until = r.last_token + p.downgrade_time;
            if now < until {
                return Next::Wait(until);
            }
        }
        Next::Pkt(pkt)
    }

    pub(super) fn on_pacer(&mut self, ctx: &mut Ctx, gen: u32) {
        let h = ctx.host as usize;
        if !self.hosts[h].pacer.fire(gen) {
            return;
        }
        let now = ctx.now;
        let t = self.p.token_interval;
        if let Some(l) = self.hosts[h].last_token {
            if now < l + t {
                let g = self.hosts[h].pacer.arm(l + t);
                ctx.out.timer(l + t, token(ctx.host, TIMER_PACER, g));
                return;
            }
        }
        let flows = std::mem::take(&mut self.hosts[h].receiving);
        let free_until = self.hosts[h].free_until;
        let mut best: Option<((u64, Time, FlowId), u64)> = None;
        let mut wake = Time::MAX;
        for &f in &flows {
            match self.next_for(f, now, free_until) {
                Next::Pkt(i) => {
                    let Rcv::Active(r) = &self.rcv[f as usize] else { continue };
                    let key = (r.size - r.got_bytes, r.start, f);
                    if best.is_none_or(|(b, _)| key < b) {
                        best = Some((key, i));
                    }
                }
                Next::Wait(at) => wake = wake.min(at),
            }
        }
        self.hosts[h].receiving = flows;
        if let Some(((_, _, f), i)) = best {
            self.issue(ctx, f, i);
            let g = self.hosts[h].pacer.arm(now + t);
            ctx.out.timer(now + t, token(ctx.host, TIMER_PACER, g));
        } else if wake < Time::MAX {
            let at = wake.max(now);
            let g = self.hosts[h].pacer.arm(at);
            ctx.out.timer(at, token(ctx.host, TIMER_PACER, g));
        }
    }

    /// Send flow `f`'s source a token for packet `i`.
    fn issue(&mut self, ctx: &mut Ctx, f: FlowId, i: u64) {
        let now = ctx.now;
        let retx = self.p.retx_timeout;
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        if r.lost.front() == Some(&i) {
            r.lost.pop_front();
            if r.next_new == r.n_pkts && r.cursor.is_none() {
                // Give this resend a full timeout before a retransmission round.
                r.retx_at = r.retx_at.max(now + retx);
            }
        } else if i == r.next_new {
            r.next_new += 1;
            if r.next_new == r.n_pkts {
                r.retx_at = now + retx;
            }
        } else {
            r.cursor = Some(i + 1);
        }
        let serial = r.issued;
        r.issued += 1;
        r.last_token = now;
        let (src, missing, rtt) = (r.src, r.size - r.got_bytes, r.rtt);
        let hs = &mut self.hosts[ctx.host as usize];
        hs.last_token = Some(now);
        hs.booked_until = hs.booked_until.max(now + rtt);
        let mut p = self.ctrl(KIND_TOKEN, f, ctx.host, src);
        p.seq = i * self.p.mss;
        p.aux = serial;
        p.ack = missing;
        p.ts = self.p.token_ttl;
        p.rank = self.p.data_prio as u32;
        self.emit(ctx, p);
    }
}
