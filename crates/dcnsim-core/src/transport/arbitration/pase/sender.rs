//! PASE's sending end (§3.2, Algorithm 2): the window each queue sets (reference rate in the
//! top queue, DCTCP's laws below it), the reordering guard, the timeouts and probes, and the
//! source's refresh timer and end of a flow.

use super::*;

/// Sender state of one flow.
#[derive(Debug)]
pub struct PaseSender {
    size: u64,
    nseg: u64,
    acked: SegSet,
    acked_bytes: u64,
    una: u64,
    nxt: u64,
    high: u64,
    outstanding: u64,
    /// Window, packets.
    pub cwnd: f64,
    pub alpha: f64,
    win_end: u64,
    win_acked: u64,
    win_marked: u64,
    cwr_end: u64,
    /// Class of the packets sent now.
    pub queue: u8,
    /// A higher queue waiting for the flight to drain (reordering guard).
    pub pending_up: Option<u8>,
    pub inter: bool,
    /// The source's own answer and the destination's (once received).
    pub src_dec: Decision,
    pub dst_dec: Option<Decision>,
    /// The answer of the source half's upper arbitrators (none: not asked or pruned), and the
    /// request times of the answers held (older answers are ignored).
    pub src_half: Option<Decision>,
    pub(super) src_half_ts: Time,
    pub(super) dst_ts: Time,
    /// Data may be sent (false while an inter-rack flow waits for its source half).
    pub started: bool,
    /// PASE-DCTCP: still in slow start.
    ss: bool,
    /// The source half climbed above the source at least once (a release is due at the end).
    pub climbed: bool,
    pub rref: Rate,
    pub srtt: Option<Time>,
    background: bool,
    backoff: u32,
    last_progress: Time,
    pub(super) rto_timer: TimerSlot,
    probe_timer: TimerSlot,
    pub(super) arb_timer: TimerSlot,
    pub probes: u64,
    pub stats: FlowStats,
}

impl PaseSender {
    pub(super) fn new(f: &FlowInfo, p: &PaseParams, src_dec: Decision) -> PaseSender {
        let nseg = f.size.0.div_ceil(p.mss).max(1);
        PaseSender {
            size: f.size.0,
            nseg,
            acked: SegSet::default(),
            acked_bytes: 0,
            una: 0,
            nxt: 0,
            high: 0,
            outstanding: 0,
            cwnd: if p.reference_rate { 1.0 } else { PASE_DCTCP_INIT_CWND },
            alpha: 1.0,
            win_end: 0,
            win_acked: 0,
            win_marked: 0,
            cwr_end: 0,
            queue: if f.background { p.num_que - 1 } else { src_dec.queue },
            pending_up: None,
            inter: f.background,
            src_dec,
            dst_dec: None,
            src_half: None,
            src_half_ts: Time::ZERO,
            dst_ts: Time::ZERO,
            started: true,
            ss: true,
            climbed: false,
            rref: src_dec.rate,
            srtt: None,
            background: f.background,
            backoff: 0,
            last_progress: f.start,
            rto_timer: TimerSlot::default(),
            probe_timer: TimerSlot::default(),
            arb_timer: TimerSlot::default(),
            probes: 0,
            stats: FlowStats::default(),
        }
    }

    pub fn is_done(&self) -> bool {
        self.una >= self.nseg
    }
    pub fn remaining(&self) -> u64 {
        self.size - self.acked_bytes
    }
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }
    pub(super) fn rtt(&self, f: &FlowInfo) -> Time {
        self.srtt.unwrap_or(f.base_rtt)
    }
    fn seg_len(&self, s: u64, mss: u64) -> u64 {
        self.size.saturating_sub(s * mss).min(mss)
    }
    /// `R_ref x RTT` in packets (at least 1).
    fn top_window(&self, f: &FlowInfo, p: &PaseParams) -> f64 {
        let bytes = self.rref.0 as f64 * self.rtt(f).as_secs_f64() / 8.0;
        (bytes / p.mtu as f64).max(1.0)
    }
    /// Algorithm 2 without the ECN branch: the window an unmarked ACK (or a new answer) sets.
    pub(super) fn adjust(&mut self, f: &FlowInfo, p: &PaseParams, acked: u64) {
        if !p.reference_rate && !self.background {
            // PASE-DCTCP: DCTCP's slow start and additive increase in every queue.
            for _ in 0..acked {
                self.cwnd += if self.ss { 1.0 } else { 1.0 / self.cwnd };
            }
            return;
        }
        if self.background {
            for _ in 0..acked {
                self.cwnd += 1.0 / self.cwnd;
            }
            return;
        }
        let q = self.queue;
        if q == 0 {
            self.cwnd = self.top_window(f, p);
            self.inter = false;
        } else if q < p.bottom() {
            if self.inter {
                for _ in 0..acked {
                    self.cwnd += 1.0 / self.cwnd;
                }
            } else {
                self.inter = true;
                self.cwnd = 1.0;
            }
        } else {
            self.cwnd = 1.0;
            self.inter = false;
        }
    }

    fn rto(&self, p: &PaseParams) -> Time {
        let base = if self.queue == 0 { p.min_rto_top } else { p.min_rto_other };
        Time(base.0.saturating_mul(1u64 << self.backoff.min(16)))
    }

    fn arm_rto(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        let at = ctx.now + self.rto(p);
        let gen = self.rto_timer.arm(at);
        ctx.out.timer(at, token(f.id, TIMER_RTO, gen));
    }

    fn arm_probe(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        if p.probing && !self.background && self.queue == p.bottom() && !self.probe_timer.is_armed() {
            let at = ctx.now + self.rtt(f);
            let gen = self.probe_timer.arm(at);
            ctx.out.timer(at, token(f.id, TIMER_PROBE, gen));
        }
    }

    /// A new path answer (the source's own combined with the destination's, if any).
    pub fn apply(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        if self.background {
            return;
        }
        let mut d = self.src_dec;
        for o in [self.src_half, self.dst_dec].into_iter().flatten() {
            d = d.combine(o);
        }
        self.rref = d.rate;
        if d.queue < self.queue && self.outstanding > 0 {
            // Reordering guard: wait for the flight before sending in the higher queue.
            self.pending_up = Some(d.queue);
        } else {
            self.pending_up = None;
            self.queue = d.queue;
        }
        self.adjust(f, p, 0);
        self.fill(ctx, f, p);
    }

    /// Send what the window allows.
    pub fn fill(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        if !self.started {
            return;
        }
        if let Some(q) = self.pending_up {
            if self.outstanding > 0 {
                return;
            }
            self.queue = q;
            self.pending_up = None;
            self.adjust(f, p, 0);
        }
        let window = (self.cwnd.floor() as u64).max(1);
        let mut sent = false;
        while self.outstanding < window {
            while self.nxt < self.nseg && self.acked.has(self.nxt) {
                self.nxt += 1;
            }
            if self.nxt >= self.nseg {
                break;
            }
            let s = self.nxt;
            let len = self.seg_len(s, p.mss);
            if s < self.high {
                self.stats.retx_bytes += len;
            }
            ctx.out.send(Packet {
                src: f.src,
                dst: f.dst,
                flow: f.id,
                size: (len + p.header) as u32,
                prio: self.queue,
                ecn: Ecn::Ect,
                flags: PacketFlags(PacketFlags::DATA),
                kind: KIND_DATA,
                payload: len as u32,
                seq: s * p.mss,
                ts: ctx.now,
                ..Default::default()
            });
            self.nxt += 1;
            self.high = self.high.max(self.nxt);
            self.outstanding += 1;
            sent = true;
        }
        if sent && !self.rto_timer.is_armed() {
            self.arm_rto(ctx, f, p);
        }
        if self.outstanding > 0 {
            self.arm_probe(ctx, f, p);
        }
    }

    fn send_probe(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        self.probes += 1;
        ctx.out.send(Packet {
            src: f.src,
            dst: f.dst,
            flow: f.id,
            size: p.ctrl_size as u32,
            prio: self.queue,
            kind: KIND_PROBE,
            seq: self.nxt * p.mss,
            ts: ctx.now,
            ..Default::default()
        });
    }

    fn mark(&mut self, s: u64, mss: u64) -> bool {
        if s < self.high && self.acked.insert(s) {
            self.acked_bytes += self.seg_len(s, mss);
            if s < self.nxt {
                self.outstanding = self.outstanding.saturating_sub(1);
            }
            true
        } else {
            false
        }
    }

    /// Apply a cumulative ACK of `ack` bytes; newly acknowledged packets.
    fn cumulative(&mut self, ack: u64, mss: u64) -> u64 {
        let cum = if ack >= self.size { self.nseg } else { ack / mss };
        let mut newly = 0;
        let mut s = self.una;
        while s < cum.min(self.high) {
            newly += self.mark(s, mss) as u64;
            s += 1;
        }
        self.una = self.acked.base();
        newly
    }

    /// A data ACK reached the sender.
    pub fn on_ack(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, pkt: &Packet) {
        if pkt.ts <= ctx.now {
            let r = ctx.now - pkt.ts;
            self.srtt = Some(match self.srtt {
                None => r,
                Some(s) => Time((s.0 * 7 + r.0) / 8),
            });
        }
        let mut newly = 0;
        if pkt.aux > pkt.seq {
            newly += self.mark(pkt.seq / p.mss, p.mss) as u64;
            self.una = self.acked.base();
        }
        newly += self.cumulative(pkt.ack, p.mss);
        let ece = pkt.aux2 & ACK_ECE != 0;
        // DCTCP's observation window: one window of data.
        self.win_acked += newly;
        if ece {
            self.win_marked += newly;
        }
        if self.una >= self.win_end && self.win_acked > 0 {
            let frac = self.win_marked as f64 / self.win_acked as f64;
            self.alpha = (1.0 - p.g) * self.alpha + p.g * frac;
            self.win_acked = 0;
            self.win_marked = 0;
            self.win_end = self.high;
        }
        if ece {
            if self.una >= self.cwr_end {
                self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(1.0);
                self.cwr_end = self.high;
                self.ss = false;
            }
        } else {
            self.adjust(f, p, newly);
        }
        if newly > 0 {
            self.backoff = 0;
            self.last_progress = ctx.now;
        }
        if self.is_done() {
            self.rto_timer.cancel();
            self.probe_timer.cancel();
            self.arb_timer.cancel();
            return;
        }
        if newly > 0 {
            self.arm_rto(ctx, f, p);
        }
        self.fill(ctx, f, p);
    }

    /// The ACK of a probe: a hole below the probe's position means lost data: resend it.
    pub fn on_probe_ack(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, pkt: &Packet) {
        let newly = self.cumulative(pkt.ack, p.mss);
        if newly > 0 {
            self.backoff = 0;
            self.last_progress = ctx.now;
        }
        if self.is_done() {
            self.rto_timer.cancel();
            self.probe_timer.cancel();
            self.arb_timer.cancel();
            return;
        }
        let boundary = pkt.seq / p.mss;
        if self.una < boundary {
            // Everything sent before the probe and still unacknowledged was lost.
            self.nxt = self.una;
            self.outstanding = 0;
            self.backoff = 0;
            self.last_progress = ctx.now;
            self.arm_rto(ctx, f, p);
        }
        self.fill(ctx, f, p);
    }

    pub fn on_rto(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, gen: u32) {
        if !self.rto_timer.fire(gen) || self.is_done() {
            return;
        }
        self.stats.timeouts += 1;
        if self.queue == 0 && !self.background {
            self.nxt = self.una;
            self.outstanding = 0;
            self.backoff += 1;
            self.fill(ctx, f, p);
        } else {
            self.send_probe(ctx, f, p);
            self.backoff += 1;
        }
        if !self.rto_timer.is_armed() {
            self.arm_rto(ctx, f, p);
        }
    }

    pub fn on_probe_timer(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, gen: u32) {
        if !self.probe_timer.fire(gen) || self.is_done() {
            return;
        }
        if self.outstanding > 0 && self.queue == p.bottom() && ctx.now - self.last_progress >= self.rtt(f) {
            self.send_probe(ctx, f, p);
        }
        if self.outstanding > 0 {
            self.arm_probe(ctx, f, p);
        }
    }
}

impl Pase {
    pub(super) fn arm_refresh(s: &mut PaseSender, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        let at = ctx.now + p.refresh(f);
        let gen = s.arb_timer.arm(at);
        ctx.out.timer(at, token(f.id, TIMER_ARB, gen));
    }

    pub(super) fn finish(&mut self, ctx: &mut Ctx, f: &FlowInfo) {
        let id = f.id as usize;
        if let Some(s) = self.senders[id].take() {
            self.stats[id] = s.stats;
            if s.climbed {
                self.release(ctx, f, Half::Source);
            }
        }
        if let Some(a) = self.up[f.src as usize].as_mut() {
            a.remove(f.id);
        }
    }
}
