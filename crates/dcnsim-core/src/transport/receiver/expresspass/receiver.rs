//! ExpressPass' receiving end: the credit feedback control (ExpressPass Algorithm 1), credits
//! paced at the flow's rate, data arrival, loss detection by credit sequence, probes and the
//! retransmission timeout.

use super::*;
use crate::transport::blocks::bitmap;

/// The credit feedback control of one flow (paper Algorithm 1), with rates expressed as
/// fractions of `max_rate` (so `max_rate` = 1).
#[derive(Clone, Debug, PartialEq)]
pub struct CreditFeedback {
    /// `cur_rate / max_rate`.
    pub rate: f64,
    /// Aggressiveness w.
    pub w: f64,
    /// The previous update was an increase.
    pub prev_increase: bool,
    pub w_max: f64,
    pub w_min: f64,
    pub target_loss: f64,
}

impl CreditFeedback {
    pub fn new(p: &ExpressPassParams) -> Self {
        CreditFeedback {
            rate: p.alpha,
            w: p.w_init,
            prev_increase: false,
            w_max: p.w_max,
            w_min: p.w_min,
            target_loss: p.target_loss,
        }
    }
    /// One update with the credit loss of the last period; `min_rate` (fraction of
    /// `max_rate`) is the floor.
    pub fn update(&mut self, loss: f64, min_rate: f64) {
        if loss <= self.target_loss {
            if self.prev_increase {
                self.w = (self.w + self.w_max) / 2.0;
            }
            self.rate = (1.0 - self.w) * self.rate + self.w * (1.0 + self.target_loss);
            self.prev_increase = true;
        } else {
            self.rate *= (1.0 - loss) * (1.0 + self.target_loss);
            self.w = (self.w / 2.0).max(self.w_min);
            self.prev_increase = false;
        }
        self.rate = self.rate.min(1.0).max(min_rate.min(1.0));
    }
}

/// Receiver-side state of one flow.
#[derive(Debug)]
pub(super) struct RecvFlow {
    pub(super) src: NodeId,
    pub(super) size: u64,
    pub(super) n_pkts: u64,
    pub(super) got: Vec<u64>,
    pub(super) got_pkts: u64,
    pub(super) complete: bool,
    pub(super) fb: CreditFeedback,
    pub(super) pacer: TimerSlot,
    /// Sequence number of the next credit.
    pub(super) next_seq: u64,
    /// Next credit number expected in the echoes.
    pub(super) expect: u64,
    /// Credits answered and dropped since the last update.
    pub(super) answered: u64,
    pub(super) dropped: u64,
    pub(super) last_update: Time,
    pub(super) srtt: Option<Time>,
    /// Aeolus: which unscheduled packets arrived or are known lost (None: plain ExpressPass).
    pub(super) aeolus: Option<AeolusReceiver>,
    /// Aeolus: packets `0..unsched` are (or were planned as) unscheduled: the planned
    /// count until the probe or a scheduled packet tells how many the sender actually sent.
    pub(super) unsched: u64,
    /// Aeolus: unscheduled packets still on their way (not held, not declared lost): the
    /// receiver does not credit for them.
    pub(super) expected: u64,
    /// Aeolus: the pacer is stopped because every missing packet is expected unscheduled.
    pub(super) paused: bool,
    /// Aeolus: the last-resort timer fired (or CREDIT_STOP found data missing): every
    /// missing packet now needs a credit.
    pub(super) gave_up: bool,
    pub(super) rto: TimerSlot,
    pub(super) last_progress: Time,
    /// Aeolus with `credit_from_request`: credit every packet not held, expected
    /// unscheduled or not.
    pub(super) credit_all: bool,
}

impl RecvFlow {
    fn has(&self, i: u64) -> bool {
        bitmap::get(&self.got, i)
    }
    /// Whether the receiver should be sending credits for this flow.
    fn needs_credit(&self) -> bool {
        if self.aeolus.is_none() {
            return true;
        }
        !self.complete && (self.credit_all || self.gave_up || self.n_pkts - self.got_pkts > self.expected)
    }
    fn declared_lost(&self, i: u64) -> bool {
        self.aeolus.as_ref().is_some_and(|a| a.is_declared_lost(i as u32))
    }
    /// The sender sent only `n` packets unscheduled: the rest of the planned ones are no
    /// longer expected unscheduled.
    fn refine_unsched(&mut self, n: u64) {
        if n >= self.unsched {
            return;
        }
        for i in n..self.unsched {
            if !self.has(i) && !self.declared_lost(i) {
                self.expected = self.expected.saturating_sub(1);
            }
        }
        self.unsched = n;
    }
}

impl ExpressPass {
    fn admit(&mut self, ctx: &mut Ctx, f: FlowId, src: NodeId, size: u64) {
        let n_pkts = size.div_ceil(self.p.mss);
        let unsched = self.p.unsched_pkts.min(n_pkts);
        let mut r = RecvFlow {
            src,
            size,
            n_pkts,
            got: Vec::new(),
            got_pkts: 0,
            complete: false,
            fb: CreditFeedback::new(&self.p),
            pacer: TimerSlot::default(),
            next_seq: 0,
            expect: 0,
            answered: 0,
            dropped: 0,
            last_update: ctx.now,
            srtt: None,
            aeolus: self.p.aeolus.map(|_| AeolusReceiver::new()),
            unsched,
            expected: unsched,
            paused: false,
            gave_up: false,
            rto: TimerSlot::default(),
            last_progress: ctx.now,
            credit_all: self.p.credit_from_request,
        };
        if self.p.aeolus.is_some() || !self.p.nack {
            let at = ctx.now + self.p.rto;
            let g = r.rto.arm(at);
            ctx.out.timer(at, token(f, TIMER_RTO, g));
        }
        self.rcv[f as usize] = Rcv::Active(Box::new(r));
        if size == 0 {
            self.mark_complete(ctx, f);
            if self.p.aeolus.is_some() {
                return;
            }
        }
        // The first credit leaves at once (with Aeolus: if some packet will not come
        // unscheduled).
        self.send_credit(ctx, f);
    }

    fn mark_complete(&mut self, ctx: &mut Ctx, f: FlowId) {
        if let Rcv::Active(r) = &mut self.rcv[f as usize] {
            if !r.complete {
                r.complete = true;
                ctx.out.complete(f);
                if r.aeolus.is_some() {
                    // Aeolus §IV-B: the receiver returns to listening once it holds every
                    // byte; credits stop without waiting for CREDIT_STOP.
                    r.pacer.cancel();
                    r.rto.cancel();
                    let credits = r.next_seq;
                    self.rcv[f as usize] = Rcv::Done { credits };
                }
            }
        }
    }

    pub(super) fn on_request(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if let Rcv::Unknown = self.rcv[pkt.flow as usize] {
            self.admit(ctx, pkt.flow, pkt.src, pkt.seq);
        }
    }

    /// The inter-credit gap at `rate` (fraction of `max_rate`), with jitter.
    fn gap(&mut self, rate: f64) -> Time {
        let base = self.p.min_gap.0 as f64 / rate;
        let j = if self.p.jitter > 0.0 { (2.0 * self.rng.f64() - 1.0) * self.p.jitter } else { 0.0 };
        Time((base * (1.0 + j)).round().max(1.0) as u64)
    }

    /// Run the feedback control if an update period has passed, send one credit and arm
    /// the pacer for the next. With Aeolus, a flow whose missing packets are all expected
    /// unscheduled gets no credit: its pacer pauses until [`Self::resume`].
    fn send_credit(&mut self, ctx: &mut Ctx, f: FlowId) {
        let now = ctx.now;
        let fixed = self.p.update_period;
        let min_gap = self.p.min_gap;
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        if !r.needs_credit() {
            r.paused = true;
            return;
        }
        r.paused = false;
        let period = fixed.or(r.srtt);
        if let Some(period) = period {
            let total = r.answered + r.dropped;
            if total > 0 && now >= r.last_update + period {
                let loss = r.dropped as f64 / total as f64;
                let min_rate = min_gap.0 as f64 / period.0.max(1) as f64;
                r.fb.update(loss, min_rate);
                r.answered = 0;
                r.dropped = 0;
                r.last_update = now;
            }
        }
        let spread = self.p.credit_size_spread;
        let size =
            if spread > 0 { self.p.ctrl_size - spread + self.rng.below(2 * spread + 1) } else { self.p.ctrl_size };
        let mut flags = PacketFlags(PacketFlags::CREDIT);
        if self.p.symmetric_routing {
            flags.set(PacketFlags::REVERSE_PATH);
        }
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        let credit = Packet {
            src: ctx.host,
            dst: r.src,
            flow: f,
            size: size as u32,
            prio: self.p.credit_prio,
            flags,
            kind: KIND_CREDIT,
            aux: r.next_seq,
            ts: now,
            ..Packet::default()
        };
        r.next_seq += 1;
        let rate = r.fb.rate;
        ctx.out.send(credit);
        let at = now + self.gap(rate);
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        let g = r.pacer.arm(at);
        ctx.out.timer(at, token(f, TIMER_CREDIT, g));
    }

    /// Aeolus: restart a paused pacer if the flow needs credits again.
    fn resume(&mut self, ctx: &mut Ctx, f: FlowId) {
        if let Rcv::Active(r) = &self.rcv[f as usize] {
            if r.paused && r.needs_credit() {
                self.send_credit(ctx, f);
            }
        }
    }

    pub(super) fn on_pacer(&mut self, ctx: &mut Ctx, f: FlowId, gen: u32) {
        let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) else { return };
        if r.pacer.fire(gen) {
            self.send_credit(ctx, f);
        }
    }

    /// Aeolus bookkeeping of packets `lost` newly declared lost at the receiver of `r`.
    fn count_lost(r: &mut RecvFlow, lost: &[u32]) {
        for &i in lost {
            if !r.has(i as u64) && (i as u64) < r.unsched {
                r.expected = r.expected.saturating_sub(1);
            }
        }
    }

    pub(super) fn on_data(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        if let Rcv::Unknown = self.rcv[f as usize] {
            // First-RTT data (or a lost request): the packet carries the flow size.
            self.admit(ctx, f, pkt.src, pkt.ack);
        }
        let now = ctx.now;
        let mss = self.p.mss;
        let (prio, ctrl) = (self.p.data_prio, self.p.ctrl_size);
        let mut lost = std::mem::take(&mut self.lost_scratch);
        lost.clear();
        let Rcv::Active(r) = &mut self.rcv[f as usize] else {
            self.lost_scratch = lost;
            return;
        };
        let i = pkt.seq / mss;
        let mut uack = None;
        if pkt.aux2 & AUX2_SCHEDULED != 0 {
            let s = pkt.aux;
            if s >= r.expect {
                r.dropped += s - r.expect;
                r.answered += 1;
                r.expect = s + 1;
            }
            let sample = now.saturating_sub(pkt.ts);
            r.srtt = Some(match r.srtt {
                None => sample,
                Some(old) => Time((old.0 as f64 * (1.0 - RTT_GAIN) + sample.0 as f64 * RTT_GAIN).round() as u64),
            });
            if r.aeolus.is_some() {
                r.refine_unsched(pkt.rank as u64);
            }
        }
        let was_lost = r.declared_lost(i);
        if let Some(a) = r.aeolus.as_mut() {
            if is_unscheduled_data(pkt) && i < r.n_pkts {
                a.on_unscheduled(i as u32, &mut lost);
                uack = Some(aeolus::ack_packet(
                    aeolus::Wire { mss, ctrl_size: ctrl },
                    KIND_UACK,
                    r.src,
                    f,
                    i as u32,
                    prio,
                ));
            }
        }
        let new = i < r.n_pkts && !bitmap::set(&mut r.got, i);
        if new {
            r.got_pkts += 1;
            r.last_progress = now;
            if i < r.unsched && !was_lost {
                r.expected = r.expected.saturating_sub(1);
            }
        }
        Self::count_lost(r, &lost);
        let complete = r.got_pkts == r.n_pkts;
        self.lost_scratch = lost;
        if let Some(u) = uack {
            ctx.out.send(u);
        }
        if complete {
            self.mark_complete(ctx, f);
        } else {
            self.resume(ctx, f);
        }
    }

    /// The Aeolus probe at the receiver: every unscheduled packet up to the one it names
    /// that has not arrived is lost; ACK the probe.
    pub(super) fn on_probe(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        if let Rcv::Unknown = self.rcv[f as usize] {
            // Every unscheduled packet and the request were lost: the probe carries the size.
            self.admit(ctx, f, pkt.src, pkt.ack);
        }
        let (mss, prio, ctrl) = (self.p.mss, self.p.data_prio, self.p.ctrl_size);
        let mut lost = std::mem::take(&mut self.lost_scratch);
        lost.clear();
        if let Rcv::Active(r) = &mut self.rcv[f as usize] {
            r.last_progress = ctx.now;
            if let Some(a) = r.aeolus.as_mut() {
                a.on_probe(pkt.aux as u32, &mut lost);
            }
            Self::count_lost(r, &lost);
            r.refine_unsched(pkt.aux + 1);
        }
        self.lost_scratch = lost;
        ctx.out.send(aeolus::ack_packet(
            aeolus::Wire { mss, ctrl_size: ctrl },
            KIND_PROBE_ACK,
            pkt.src,
            f,
            pkt.aux as u32,
            prio,
        ));
        self.resume(ctx, f);
    }

    pub(super) fn on_rto(&mut self, ctx: &mut Ctx, f: FlowId, gen: u32) {
        let (t, nack) = (self.p.rto, self.p.nack);
        let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) else { return };
        if !r.rto.fire(gen) || r.complete || (nack && r.gave_up) {
            return;
        }
        let due = r.last_progress + t;
        if ctx.now < due {
            let g = r.rto.arm(due);
            ctx.out.timer(due, token(f, TIMER_RTO, g));
            return;
        }
        let at = ctx.now + t;
        if !nack {
            // Without NACKs the timeout is the only recovery (the Aeolus authors'
            // ExpressPass, §V-E): ask for every missing packet, credit them, and keep
            // watching.
            r.gave_up = true;
            self.stats[f as usize].timeouts += 1;
            self.nack_missing(ctx, f);
            self.resume(ctx, f);
        } else if r.expected > 0 {
            // No progress for rto while waiting for unscheduled packets (the probe or the
            // packets after a loss were lost too, or they are trapped in a low class):
            // credit every missing packet.
            r.gave_up = true;
            self.stats[f as usize].timeouts += 1;
            self.resume(ctx, f);
            return;
        }
        // Nothing awaited unscheduled (or the NACKs just went): the credits and
        // CREDIT_STOP recover; watch again.
        if let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) {
            let g = r.rto.arm(at);
            ctx.out.timer(at, token(f, TIMER_RTO, g));
        }
    }

    /// One NACK per missing range of flow `f` (receiver side).
    fn nack_missing(&mut self, ctx: &mut Ctx, f: FlowId) {
        let mss = self.p.mss;
        let Rcv::Active(r) = &self.rcv[f as usize] else { return };
        let (src, size) = (r.src, r.size);
        let mut ranges = vec![];
        let mut i = 0;
        while i < r.n_pkts {
            if bitmap::get(&r.got, i) {
                i += 1;
                continue;
            }
            let a = i;
            while i < r.n_pkts && !bitmap::get(&r.got, i) {
                i += 1;
            }
            ranges.push((a * mss, (i * mss).min(size)));
        }
        for (a, b) in ranges {
            let mut n = self.ctrl(KIND_NACK, f, ctx.host, src);
            n.seq = a;
            n.ack = b;
            ctx.out.send(n);
        }
    }

    pub(super) fn on_stop(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        if r.complete {
            r.pacer.cancel();
            self.rcv[f as usize] = Rcv::Done { credits: r.next_seq };
            return;
        }
        // Data is missing although the sender has sent everything: ask for it again (with
        // `nack`; otherwise `rto` will) and keep crediting (with Aeolus: for every missing
        // packet, as CREDIT_STOP follows the unscheduled packets on the flow's path).
        r.gave_up = true;
        if self.p.nack {
            self.nack_missing(ctx, f);
        }
        self.resume(ctx, f);
    }
}
