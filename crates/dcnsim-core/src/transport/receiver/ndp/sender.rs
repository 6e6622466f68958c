//! NDP's sending end of one flow: the first window sent at line rate, one packet per PULL
//! after it, the retransmission queue fed by NACKs and timeouts (NDP §3; Aeolus' first-RTT
//! packets when enabled).

use super::*;

/// Where one packet of a flow stands at its sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PktState {
    /// Sent and not yet answered.
    InFlight,
    /// NACKed (or declared lost): waits in the retransmission queue for a PULL.
    QueuedRtx,
    /// ACKed.
    Acked,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    state: PktState,
    /// Incremented at every transmission; a timeout entry is valid only for its epoch.
    epoch: u32,
    /// Transmissions so far that took a pull-loop token (all but timeout resends).
    tokens: u8,
}

/// The sending end of one NDP flow.
#[derive(Debug)]
pub struct NdpSender {
    id: FlowId,
    dst: NodeId,
    size: u64,
    npk: u64,
    /// One slot per packet sent at least once (`slots.len() == next_new`).
    slots: Vec<Slot>,
    next_new: u64,
    /// Packets waiting for a PULL to be resent (may hold stale entries, skipped).
    rtx: VecDeque<u32>,
    /// (deadline, packet, epoch) of transmissions, in send order (deadlines increase).
    watch: VecDeque<(Time, u32, u32)>,
    inflight: u64,
    acked: u64,
    /// Highest pull number seen.
    last_pull: u64,
    /// PULLs that found nothing to send.
    banked: u64,
    /// Last PULL (or start, or stall send): the stall timeout runs from here.
    last_pull_at: Time,
    timer: TimerSlot,
    done: bool,
    stats: FlowStats,
    pulls: u64,
    nacks: u64,
    /// Aeolus' first-RTT state (with `aeolus`): the first window's packets are its
    /// unscheduled packets.
    aeolus: Option<AeolusSender>,
    prio: u8,
}

impl NdpSender {
    pub fn new(flow: &FlowInfo, p: &NdpParams) -> NdpSender {
        NdpSender {
            id: flow.id,
            dst: flow.dst,
            size: flow.size.0,
            npk: p.packets(flow.size.0),
            slots: Vec::new(),
            next_new: 0,
            rtx: VecDeque::new(),
            watch: VecDeque::new(),
            inflight: 0,
            acked: 0,
            last_pull: 0,
            banked: 0,
            last_pull_at: Time::ZERO,
            timer: TimerSlot::default(),
            done: false,
            stats: FlowStats::default(),
            pulls: 0,
            nacks: 0,
            aeolus: p.aeolus.map(|c| AeolusSender::new(p.first_window(flow).min(p.packets(flow.size.0)) as u32, &c)),
            prio: p.data_prio,
        }
    }

    /// Start the flow: send the first window.
    pub fn start(&mut self, now: Time, p: &NdpParams, flow: &FlowInfo, out: &mut Actions) {
        self.last_pull_at = now;
        self.send_first_window(now, p, p.first_window(flow), out);
    }

    /// The first-RTT policy, in one place: `window` packets (at most the flow) back to back
    /// at line rate, flagged `UNSCHEDULED` (and `TRIMMABLE` with trimming).
    /// With Aeolus these are its unscheduled packets, and the probe follows the last one.
    pub fn send_first_window(&mut self, now: Time, p: &NdpParams, window: u64, out: &mut Actions) {
        for _ in 0..window.min(self.npk) {
            let idx = self.next_new;
            if self.send_new(now, p, true, out) {
                if let Some(a) = self.aeolus.as_mut() {
                    a.on_sent(idx);
                }
            }
        }
        self.send_probe_if_due(p, out);
        self.arm(now, p, out);
    }

    /// Aeolus: the probe, right after the last unscheduled packet, in the data class (so it
    /// stays behind them in every FIFO), never flagged `UNSCHEDULED`.
    fn send_probe_if_due(&mut self, p: &NdpParams, out: &mut Actions) {
        if let Some(last) = self.aeolus.as_mut().and_then(|a| a.probe_due()) {
            out.send(aeolus::probe_packet(
                aeolus::Wire { mss: p.mss, ctrl_size: p.ctrl_size },
                KIND_PROBE,
                self.dst,
                self.id,
                last,
                self.size,
                self.prio,
            ));
        }
    }

    /// The Aeolus sender state (with `aeolus`).
    pub fn aeolus(&self) -> Option<&AeolusSender> {
        self.aeolus.as_ref()
    }

    pub fn stats(&self) -> FlowStats {
        self.stats
    }
    /// Every packet has been ACKed.
    pub fn is_done(&self) -> bool {
        self.done
    }
    pub fn packets(&self) -> u64 {
        self.npk
    }
    /// Packets sent at least once.
    pub fn sent_new(&self) -> u64 {
        self.next_new
    }
    /// Packets sent and not yet answered.
    pub fn in_flight(&self) -> u64 {
        self.inflight
    }
    /// Packets waiting in the retransmission queue.
    pub fn queued_rtx(&self) -> usize {
        self.rtx.iter().filter(|&&i| self.slots.get(i as usize).map(|s| s.state) == Some(PktState::QueuedRtx)).count()
    }
    /// State of packet `idx` (`None` if never sent).
    pub fn state(&self, idx: u64) -> Option<PktState> {
        self.slots.get(idx as usize).map(|s| s.state)
    }
    pub fn banked_pulls(&self) -> u64 {
        self.banked
    }
    pub fn pulls_received(&self) -> u64 {
        self.pulls
    }
    pub fn nacks_received(&self) -> u64 {
        self.nacks
    }

    fn payload_of(&self, idx: u64, mss: u64) -> u64 {
        (self.size - (idx * mss).min(self.size)).min(mss)
    }

    fn send_new(&mut self, now: Time, p: &NdpParams, unscheduled: bool, out: &mut Actions) -> bool {
        if self.next_new >= self.npk {
            return false;
        }
        let idx = self.next_new as u32;
        self.next_new += 1;
        self.slots.push(Slot { state: PktState::QueuedRtx, epoch: 0, tokens: 0 });
        self.emit(now, p, idx, unscheduled, false, false, out);
        true
    }

    /// Transmit packet `idx` (new when `!retx`); `unscheduled`: sent without a PULL;
    /// `tokenless`: a timeout resend, standing in for its unanswered copy (flagged
    /// [`DATA_TOKENLESS`]).
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        now: Time,
        p: &NdpParams,
        idx: u32,
        unscheduled: bool,
        retx: bool,
        tokenless: bool,
        out: &mut Actions,
    ) {
        let slot = &mut self.slots[idx as usize];
        if slot.state != PktState::InFlight {
            self.inflight += 1;
        }
        slot.state = PktState::InFlight;
        slot.epoch = slot.epoch.wrapping_add(1);
        if !tokenless {
            slot.tokens = slot.tokens.saturating_add(1);
        }
        let (epoch, tokens) = (slot.epoch, slot.tokens);
        let payload = self.payload_of(idx as u64, p.mss);
        if retx {
            self.stats.retx_bytes += payload;
        }
        let mut flags = PacketFlags(PacketFlags::DATA);
        if p.trimming {
            flags.set(PacketFlags::TRIMMABLE);
        }
        if unscheduled {
            flags.set(PacketFlags::UNSCHEDULED);
        }
        out.send(Packet {
            dst: self.dst,
            flow: self.id,
            size: (payload + p.header) as u32,
            payload: payload as u32,
            prio: p.data_prio,
            flags,
            entropy: (idx % 0xFFFF) as u16 + 1,
            kind: KIND_DATA,
            seq: idx as u64 * p.mss,
            ts: now,
            aux2: if retx { DATA_RETX } else { 0 } | if tokenless { DATA_TOKENLESS } else { 0 },
            aux: tokens as u64,
            ..Default::default()
        });
        self.watch.push_back((now + p.rto, idx, epoch));
    }

    /// Send one packet on a PULL's authority: the head of the retransmission queue, else
    /// the next new packet. False if there is nothing to send.
    fn send_one(&mut self, now: Time, p: &NdpParams, unscheduled: bool, out: &mut Actions) -> bool {
        while let Some(i) = self.rtx.pop_front() {
            if self.slots[i as usize].state == PktState::QueuedRtx {
                self.emit(now, p, i, unscheduled, true, false, out);
                return true;
            }
        }
        self.send_new(now, p, unscheduled, out)
    }

    fn has_work(&self) -> bool {
        !self.rtx.is_empty() || self.next_new < self.npk
    }

    /// Drop timeout entries whose transmission has been answered or superseded.
    fn clean_front(&mut self) {
        while let Some(&(_, i, ep)) = self.watch.front() {
            let s = self.slots[i as usize];
            if s.state == PktState::InFlight && s.epoch == ep {
                break;
            }
            self.watch.pop_front();
        }
    }

    /// Make sure the timer fires no later than the earliest deadline.
    fn arm(&mut self, now: Time, p: &NdpParams, out: &mut Actions) {
        if self.done {
            self.timer.cancel();
            return;
        }
        self.clean_front();
        let mut due = self.watch.front().map(|w| w.0);
        if self.inflight == 0 && self.has_work() {
            let stall = (self.last_pull_at + p.rto).max(now);
            due = Some(due.map_or(stall, |d| d.min(stall)));
        }
        if let Some(d) = due {
            if !self.timer.is_armed() || self.timer.at > d {
                let g = self.timer.arm(d);
                out.timer(d, token(self.id, TIMER_RTO, g));
            }
        }
    }

    /// A PULL carrying cumulative pull number `pull_no`.
    pub fn on_pull(&mut self, now: Time, p: &NdpParams, pull_no: u64, out: &mut Actions) {
        self.pulls += 1;
        if self.done || pull_no <= self.last_pull {
            return;
        }
        let n = pull_no - self.last_pull;
        self.last_pull = pull_no;
        self.last_pull_at = now;
        if let Some(a) = self.aeolus.as_mut() {
            if a.in_precredit() {
                // The first credit ends the pre-credit state (Aeolus §III-A).
                a.exit_precredit();
                self.send_probe_if_due(p, out);
            }
        }
        for _ in 0..n {
            if !self.send_one(now, p, false, out) && !self.send_unacked(now, p, out) {
                self.banked += 1;
            }
        }
        self.arm(now, p, out);
    }

    /// Aeolus class (3), only without the probe: a PULL that finds neither a loss-detected
    /// packet nor new data resends a sent but unacknowledged unscheduled packet, once.
    fn send_unacked(&mut self, now: Time, p: &NdpParams, out: &mut Actions) -> bool {
        let Some(a) = self.aeolus.as_mut() else { return false };
        if p.aeolus.is_some_and(|c| c.probe) {
            return false;
        }
        while let Some(i) = a.pop_unacked() {
            if self.slots.get(i as usize).is_some_and(|s| s.state == PktState::InFlight) {
                self.emit(now, p, i as u32, false, true, false, out);
                return true;
            }
        }
        false
    }

    /// Aeolus: a selective ACK of the original unscheduled transmission of packet `idx`
    /// (after [`Self::on_ack`] recorded it). Unscheduled packets sent before it and still
    /// unacknowledged are lost: each is queued, once, for the next PULL.
    pub fn on_unscheduled_ack(&mut self, now: Time, p: &NdpParams, idx: u64, out: &mut Actions) {
        if self.done {
            return;
        }
        if let Some(a) = self.aeolus.as_mut() {
            a.on_ack(idx);
            self.queue_aeolus_losses(now, p, out);
        }
    }

    /// Aeolus: the probe's ACK. Every unscheduled packet not acknowledged by now is lost.
    pub fn on_probe_ack(&mut self, now: Time, p: &NdpParams, out: &mut Actions) {
        if self.done {
            return;
        }
        if let Some(a) = self.aeolus.as_mut() {
            a.on_probe_ack();
            self.queue_aeolus_losses(now, p, out);
        }
    }

    /// Hand Aeolus' loss-detected packets to the retransmission queue (each once).
    fn queue_aeolus_losses(&mut self, now: Time, p: &NdpParams, out: &mut Actions) {
        while let Some(i) = self.aeolus.as_mut().and_then(|a| a.pop_lost()) {
            self.mark_lost(now, p, i, out);
        }
    }

    /// The receiver holds packet `idx`.
    pub fn on_ack(&mut self, now: Time, p: &NdpParams, idx: u64, out: &mut Actions) {
        if self.done {
            return;
        }
        let Some(s) = self.slots.get_mut(idx as usize) else { return };
        match s.state {
            PktState::InFlight => self.inflight -= 1,
            PktState::QueuedRtx => {}
            PktState::Acked => return,
        }
        s.state = PktState::Acked;
        self.acked += 1;
        if self.acked == self.npk {
            self.done = true;
            self.timer.cancel();
            self.slots = Vec::new();
            self.rtx = VecDeque::new();
            self.watch = VecDeque::new();
            return;
        }
        self.arm(now, p, out);
    }

    /// The receiver got only the header of packet `idx`.
    pub fn on_nack(&mut self, now: Time, p: &NdpParams, idx: u64, out: &mut Actions) {
        self.nacks += 1;
        self.mark_lost(now, p, idx, out);
    }

    /// Queue packet `idx` for retransmission on the next PULL, ahead of new data (a NACK,
    /// or a loss another mechanism detected). Uses a banked PULL at once if there is one.
    pub fn mark_lost(&mut self, now: Time, p: &NdpParams, idx: u64, out: &mut Actions) {
        if self.done {
            return;
        }
        let Some(s) = self.slots.get_mut(idx as usize) else { return };
        if s.state != PktState::InFlight {
            return;
        }
        s.state = PktState::QueuedRtx;
        self.inflight -= 1;
        self.rtx.push_back(idx as u32);
        if self.banked > 0 {
            self.banked -= 1;
            self.send_one(now, p, false, out);
        }
        self.arm(now, p, out);
    }

    /// The flow's timer fired with generation `gen`.
    pub fn on_timer(&mut self, now: Time, p: &NdpParams, gen: u32, out: &mut Actions) {
        if !self.timer.fire(gen) || self.done {
            return;
        }
        let mut expired = Vec::new();
        while let Some(&(dl, i, ep)) = self.watch.front() {
            let s = self.slots[i as usize];
            if s.state == PktState::InFlight && s.epoch == ep {
                if dl > now {
                    break;
                }
                expired.push(i);
            }
            self.watch.pop_front();
        }
        let mut fired = !expired.is_empty();
        for i in expired {
            // Unanswered for rto: resend at once (its pull-loop token was lost with it).
            self.emit(now, p, i, true, true, true, out);
        }
        if self.inflight == 0 && self.has_work() && now >= self.last_pull_at + p.rto && self.send_one(now, p, true, out)
        {
            // Stall: nothing in flight, work left and no PULL for rto (the last PULL was lost).
            self.last_pull_at = now;
            fired = true;
        }
        if fired {
            self.stats.timeouts += 1;
        }
        self.arm(now, p, out);
    }
}
