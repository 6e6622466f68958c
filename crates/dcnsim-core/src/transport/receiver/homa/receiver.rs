//! Homa's receiving end: message admission, data arrival, grants to the messages with the
//! fewest remaining bytes up to the overcommitment degree, Aeolus' probe, and the no-progress
//! timer with its RESEND rounds.

use super::*;

impl Homa {
    /// The receiver's state for `f`, created from a packet carrying the length `size`.
    /// Returns false if the message is already complete.
    fn admit(&mut self, ctx: &mut Ctx, f: FlowId, src: NodeId, size: u64) -> bool {
        match self.rcv[f as usize] {
            Rcv::Done => return false,
            Rcv::Active(_) => return true,
            Rcv::Unknown => {}
        }
        let now = ctx.now;
        let start = ctx.flows.get(f as usize).map(|i| i.start).unwrap_or(now);
        let npk = self.p.packets(size);
        let mut r = RecvMsg {
            src,
            size,
            start,
            npk,
            got: vec![0; npk.div_ceil(64) as usize],
            got_pkts: 0,
            received: 0,
            granted: self.p.unsched_bytes(size),
            lost_bytes: 0,
            aeolus: self.p.aeolus.map(|_| AeolusReceiver::new()),
            last_progress: now,
            timer: TimerSlot::default(),
            sched_prio: self.p.sched_prio(0, 1),
            unsched_prio: self.p.unsched_prio(size),
            last_resend: None,
            resend_out: false,
        };
        let at = now + self.p.resend_timeout;
        let g = r.timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_RECV, g));
        self.rcv[f as usize] = Rcv::Active(Box::new(r));
        self.host(ctx.host).receiving.push(f);
        true
    }

    pub(super) fn on_data(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        let known = matches!(self.rcv[f as usize], Rcv::Active(_));
        if !self.admit(ctx, f, pkt.src, pkt.ack) {
            // Complete already: the sender missed the ACK (or this is a late duplicate).
            let a = self.ctrl(KIND_ACK, f, pkt.src);
            self.emit(ctx, a);
            return;
        }
        if pkt.aux2 & DATA_SENDER_TIMEOUT != 0 {
            if known {
                let b = self.ctrl(KIND_BUSY, f, pkt.src);
                self.emit(ctx, b);
            } else {
                // The sender timeout was needed: the receiver did not know the message.
                self.stats[f as usize].timeouts += 1;
            }
        }
        let mss = self.p.mss;
        let ctrl = self.p.ctrl_size;
        let now = ctx.now;
        let idx = pkt.seq / mss;
        let mut lost = std::mem::take(&mut self.lost_scratch);
        lost.clear();
        let mut uack = None;
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        if let Some(a) = r.aeolus.as_mut() {
            if pkt.flags.has(PacketFlags::UNSCHEDULED) {
                a.on_unscheduled(idx as u32, &mut lost);
                uack =
                    Some(aeolus::ack_packet(aeolus::Wire { mss, ctrl_size: ctrl }, KIND_UACK, r.src, f, idx as u32, 0));
            }
        }
        if pkt.aux2 & DATA_CHARGED != 0 {
            if let Some(a) = r.aeolus.as_mut() {
                // The sender paid for this retransmission with a credit although this side
                // never declared the packet lost: count it, or the grant falls one packet short
                // of what the sender may send (see "Two views of one loss").
                if a.sender_charged(idx as u32) {
                    lost.push(idx as u32);
                }
            }
        }
        for &i in &lost {
            let pay = (r.size - (i as u64 * mss).min(r.size)).min(mss);
            r.lost_bytes += pay;
        }
        let mut new = false;
        if idx < r.npk && !r.has(idx) {
            r.got[(idx / 64) as usize] |= 1u64 << (idx % 64);
            r.got_pkts += 1;
            r.received += pkt.payload as u64;
            r.last_progress = now;
            new = true;
        }
        let complete = r.got_pkts == r.npk;
        let src = r.src;
        // The sender's answer to a RESEND that counts against its per-peer limit.
        let answered = r.resend_out && (complete || pkt.aux2 & DATA_RESEND != 0);
        self.lost_scratch = lost;
        if let Some(u) = uack {
            self.emit(ctx, u);
        }
        if complete {
            self.rcv[f as usize] = Rcv::Done;
            self.host(ctx.host).receiving.retain(|&x| x != f);
            ctx.out.complete(f);
            let a = self.ctrl(KIND_ACK, f, src);
            self.emit(ctx, a);
            self.grant(ctx);
        } else if new || !self.lost_scratch.is_empty() {
            self.grant(ctx);
        }
        if answered {
            self.resend_answered(ctx, f, src);
        }
    }

    pub(super) fn on_probe(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        if !self.admit(ctx, f, pkt.src, pkt.ack) {
            let a = self.ctrl(KIND_ACK, f, pkt.src);
            self.emit(ctx, a);
            return;
        }
        let (mss, ctrl) = (self.p.mss, self.p.ctrl_size);
        let mut lost = std::mem::take(&mut self.lost_scratch);
        lost.clear();
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        r.last_progress = ctx.now;
        let src = r.src;
        if let Some(a) = r.aeolus.as_mut() {
            a.on_probe(pkt.aux as u32, &mut lost);
        }
        for &i in &lost {
            r.lost_bytes += (r.size - (i as u64 * mss).min(r.size)).min(mss);
        }
        self.lost_scratch = lost;
        let ack = aeolus::ack_packet(aeolus::Wire { mss, ctrl_size: ctrl }, KIND_PROBE_ACK, src, f, pkt.aux as u32, 0);
        self.emit(ctx, ack);
        self.grant(ctx);
    }

    /// Homa's grant decision at the receiving host: SRPT over the messages that need
    /// grants, top `overcommitment` of them, each kept `rtt_bytes` ahead of what arrived.
    fn grant(&mut self, ctx: &mut Ctx) {
        let h = ctx.host as usize;
        let mut cand = std::mem::take(&mut self.scratch);
        cand.clear();
        let keep = self.p.rank_until_received;
        for &f in &self.hosts[h].receiving {
            if let Rcv::Active(r) = &self.rcv[f as usize] {
                // With `rank_until_received` a message granted beyond its unscheduled bytes
                // stays ranked (and holds its slot) while its granted bytes are on the way.
                if r.needs_grant() || (keep && r.granted > self.p.unsched_bytes(r.size)) {
                    cand.push((r.size - r.received, r.start, f));
                }
            }
        }
        cand.sort_unstable();
        let k = (self.p.overcommitment as usize).min(cand.len());
        let mut woken = std::mem::take(&mut self.woken_scratch);
        woken.clear();
        for (rank, &(_, _, f)) in cand[..k].iter().enumerate() {
            let prio = self.p.sched_prio(rank, k);
            let rtt = self.p.rtt_bytes;
            let Rcv::Active(r) = &mut self.rcv[f as usize] else { continue };
            let target = r.cap().min(r.received + r.lost_bytes + rtt);
            r.sched_prio = prio;
            if target > r.granted {
                if !r.awaits_data() {
                    // It was waiting for grants: its no-progress clock starts below.
                    woken.push(f);
                }
                r.granted = target;
                let src = r.src;
                let mut g = self.ctrl(KIND_GRANT, f, src);
                g.seq = target;
                g.rank = prio as u32;
                self.emit(ctx, g);
            }
        }
        if !woken.is_empty() {
            // A message that waited for grants expects data again from now on, but its
            // packets queue at this host's downlink behind every byte the host has already
            // asked for (granted or unscheduled, not yet here): its no-progress clock starts
            // when the downlink could have delivered all of them.
            let outstanding = self.receiver_outstanding(ctx.host);
            for &f in &woken {
                let rate = ctx.flows.get(f as usize).map(|i| i.path_rate);
                if let Rcv::Active(r) = &mut self.rcv[f as usize] {
                    r.last_progress = ctx.now + rate.map_or(Time::ZERO, |x| x.tx_time(Bytes(outstanding)));
                }
            }
        }
        self.woken_scratch = woken;
        self.scratch = cand;
    }

    pub(super) fn on_recv_timer(&mut self, ctx: &mut Ctx, f: FlowId, gen: u32) {
        let t = self.p.resend_timeout;
        let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) else { return };
        if !r.timer.fire(gen) {
            return;
        }
        if !r.awaits_data() {
            // Everything granted (unscheduled bytes included) is here or declared lost with
            // its retransmission not yet paid for: the message waits for grants, not for the
            // network. Its clock stays at zero until a grant makes it expect bytes again.
            r.last_progress = ctx.now;
        }
        let due = r.last_progress + t;
        if ctx.now < due {
            let g = r.timer.arm(due);
            ctx.out.timer(due, token(f, TIMER_RECV, g));
            return;
        }
        if self.p.resend_per_peer == 0 {
            self.send_resend(ctx, f);
            return;
        }
        // One limited pool of RESENDs per sending host: hand its free slots to the due
        // messages of that host that were asked least recently (this one among them).
        let src = r.src;
        self.resend_round(ctx, src);
        if let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) {
            if r.last_resend != Some(ctx.now) {
                // Still waiting for a slot: look again when the oldest outstanding RESEND
                // to that host stops counting (an answer may free it earlier).
                let free_at =
                    self.hosts[ctx.host as usize].peers[src as usize].out.front().map_or(ctx.now + t, |e| e.0 + t);
                let g = r.timer.arm(free_at);
                ctx.out.timer(free_at, token(f, TIMER_RECV, g));
            }
        }
    }

    /// Whether message `r` may get a RESEND now: it expects bytes, none came for
    /// `resend_timeout`, and its last RESEND (if any) was at least that long ago.
    fn resend_due(r: &RecvMsg, now: Time, t: Time) -> bool {
        r.awaits_data() && r.last_progress + t <= now && r.last_resend.is_none_or(|x| x + t <= now) && !r.resend_out
    }

    /// Per-peer limit (`resend_per_peer` > 0): forget the RESENDs to `peer` that stopped
    /// counting, then, while fewer than the limit remain, send one to the due message of
    /// `peer` whose last RESEND is oldest (never asked first, then arrival, then flow id): the
    /// rotation among a peer's messages.
    fn resend_round(&mut self, ctx: &mut Ctx, peer: NodeId) {
        let t = self.p.resend_timeout;
        let now = ctx.now;
        let limit = self.p.resend_per_peer as usize;
        let h = ctx.host as usize;
        if self.hosts.len() <= h {
            self.hosts.resize_with(h + 1, HostState::default);
        }
        loop {
            let host = &mut self.hosts[h];
            if host.peers.len() <= peer as usize {
                host.peers.resize_with(peer as usize + 1, PeerResends::default);
            }
            let q = &mut host.peers[peer as usize].out;
            while let Some(&(at, g)) = q.front() {
                if at + t > now {
                    break;
                }
                q.pop_front();
                if let Some(Rcv::Active(r)) = self.rcv.get_mut(g as usize) {
                    r.resend_out = false;
                }
            }
            if q.len() >= limit {
                return;
            }
            let mut best: Option<(Option<Time>, Time, FlowId)> = None;
            for &g in &host.receiving {
                if let Some(Rcv::Active(r)) = self.rcv.get(g as usize) {
                    if r.src == peer && Self::resend_due(r, now, t) {
                        let key = (r.last_resend, r.start, g);
                        if best.is_none_or(|b| key < b) {
                            best = Some(key);
                        }
                    }
                }
            }
            let Some((_, _, g)) = best else { return };
            self.hosts[h].peers[peer as usize].out.push_back((now, g));
            if let Some(Rcv::Active(r)) = self.rcv.get_mut(g as usize) {
                r.resend_out = true;
            }
            self.send_resend(ctx, g);
        }
    }

    /// The sender answered a RESEND of `f` (a packet it sent because of it, or BUSY): that
    /// RESEND stops counting against the sender's limit, and the freed slot goes to another
    /// due message of the same sender.
    /// Also when `f` completes with a RESEND outstanding. `src` is its sender.
    pub(super) fn resend_answered(&mut self, ctx: &mut Ctx, f: FlowId, src: NodeId) {
        if let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) {
            r.resend_out = false;
        }
        if let Some(p) = self.hosts.get_mut(ctx.host as usize).and_then(|x| x.peers.get_mut(src as usize)) {
            p.out.retain(|e| e.1 != f);
        }
        self.resend_round(ctx, src);
    }

    /// One RESEND round for message `f`: ask for the first missing packet range, or every
    /// one (`resend_ranges`), below the offset the sender's new data may have reached;
    /// re-arm its timer one `resend_timeout` later.
    fn send_resend(&mut self, ctx: &mut Ctx, f: FlowId) {
        let t = self.p.resend_timeout;
        let mss = self.p.mss;
        let ctrl = self.p.ctrl_size;
        let first_only = self.p.resend_ranges == ResendRanges::First;
        let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) else { return };
        // Bytes the receiver expects have not arrived for resend_timeout: ask for missing
        // packets the sender may have sent, i.e. below the new-data offset min(length,
        // grant - lost) (each declared-lost unscheduled byte's retransmission took one byte
        // of the grant), declared-lost packets included.
        let expected = r.size.min(r.granted.saturating_sub(r.lost_bytes)).div_ceil(mss).min(r.npk);
        let prio = if self.p.resend_class == ResendClass::Highest {
            0
        } else if r.size > self.p.unsched_bytes(r.size) {
            r.sched_prio
        } else {
            r.unsched_prio
        };
        r.last_resend = Some(ctx.now);
        let at = ctx.now + t;
        let g = r.timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_RECV, g));
        let (src, size) = (r.src, r.size);
        let mut i = 0;
        while i < expected {
            let Rcv::Active(r) = &self.rcv[f as usize] else { return };
            if r.has(i) {
                i += 1;
                continue;
            }
            let a = i;
            while i < expected && !r.has(i) {
                i += 1;
            }
            let first = a * mss;
            let end = (i * mss).min(size);
            let mut q =
                Packet { dst: src, flow: f, size: ctrl as u32, prio: 0, kind: KIND_RESEND, ..Packet::default() };
            q.seq = first;
            q.ack = end - first;
            q.rank = prio as u32;
            self.emit(ctx, q);
            if first_only {
                break;
            }
        }
    }
}
