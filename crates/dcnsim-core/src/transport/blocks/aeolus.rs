//! Aeolus: the first-RTT building block for credit-based (proactive) transports (Hu et al.,
//! "Aeolus: A Building Block for Proactive Transport in Datacenter Networks", IEEE/ACM ToN
//! 2021; §III rate control, selective dropping and loss recovery, §IV-B host state, §V-E
//! priority-queueing alternative, §VI multi-queue discussion).
//!
//! What it models, transport-agnostically (no packet kinds, no credit mechanism of its own):
//! - **Pre-credit line-rate burst** (§III-A): a flow sends up to one BDP of *unscheduled*
//!   packets at line rate as it starts, flagged [`PacketFlags::UNSCHEDULED`] (see
//!   [`UNSCHEDULED_FLAGS`]), and leaves the pre-credit state as soon as its first credit
//!   (grant, token, pull) arrives, even if part of the burst is still unsent
//!   ([`AeolusSender::exit_precredit`]); what is left goes out as scheduled packets.
//! - **Selective dropping** is the switch's part ([`crate::queue::selective`]): unscheduled
//!   packets are dropped above a tiny threshold (6 KB), scheduled ones are queued. A
//!   transport that keeps its own priority classes for unscheduled packets (Homa) needs the
//!   per-port measurement (`network.selective.per_port = true`, §VI).
//! - **Probe** (§III-C): right after the last unscheduled packet the sender sends one
//!   minimum-size probe carrying the index of that packet (and, per §IV-B, the flow size so
//!   a receiver that lost every unscheduled packet still learns the flow). The probe is a
//!   *scheduled* packet for the network (never flagged `UNSCHEDULED`): the transport sends it
//!   in the same priority class as the flow's unscheduled packets so that, on a per-flow
//!   path, it leaves every queue behind them ([`AeolusSender::probe_due`]).
//! - **Per-packet selective ACKs of unscheduled packets** (§III-C): the receiver ACKs every
//!   unscheduled packet it gets ([`AeolusReceiver::on_unscheduled`]) and the probe
//!   ([`AeolusReceiver::on_probe`]). Scheduled packets are not ACKed by Aeolus (the
//!   transport's own feedback covers them).
//! - **Loss detection without timeouts**: unscheduled packets of one flow travel one FIFO
//!   path (one class, per-flow ECMP), so an ACK of packet j proves that every unscheduled
//!   packet before j still unacknowledged was dropped ("loss detection in the middle"),
//!   and the probe ACK proves it for every one before the probe (tail losses). Both
//!   sides apply the same rule: the sender to choose what to retransmit, the receiver to know
//!   how much credit the retransmissions need ([`AeolusReceiver::declared_lost`]).
//! - **Retransmission once, as scheduled packets, in the paper's order** (§III-C): when
//!   a credit lets the sender send one packet it picks, in this order, (1) a loss-detected
//!   unscheduled packet ([`AeolusSender::pop_lost`]), (2) unsent new data (the
//!   transport's), (3) a sent but unacknowledged unscheduled packet
//!   ([`AeolusSender::pop_unacked`]). Each unscheduled packet is retransmitted by Aeolus at
//!   most once; if that scheduled copy is lost too (only a buffer overflow can do it), the
//!   transport's own last-resort timeout repairs it.
//! - **Priority-queueing alternative** (§V-E, Tables VI-VII): instead of selective
//!   dropping, unscheduled packets ride a lower priority class than every scheduled packet
//!   ([`UnschedMode::LowPriority`]; the transport picks that class). The paper shows its two
//!   weaknesses, both reproduced by the model: the ambiguity between a lost and a trapped
//!   unscheduled packet (here the probe rides the same low class, so it is trapped with
//!   them and detection waits; without the probe only the transport's timeout detects
//!   losses), and unscheduled packets filling the shared buffer so that scheduled packets
//!   overflow.
//!
//! # Choices where the paper leaves room
//! - The probe's class: "treat them as scheduled in the network" is read as *not
//!   selectively droppable*; its class is the flow's unscheduled class so that FIFO order
//!   (on which the loss inference rests) holds on every hop. A probe in a higher class
//!   would overtake queued unscheduled packets and declare them lost while still in flight.
//! - ACK classes: control class of the transport (the paper only requires them to be
//!   scheduled). Per-packet ACKs and the probe ACK of one flow leave the receiver in the
//!   order the packets arrived and share one class, so the sender sees them in order.
//! - When the first credit arrives before the burst is over, the probe is sent at that
//!   moment (after the last packet actually sent unscheduled), not skipped.
//! - With per-packet spraying the FIFO premise fails: a reordered packet is declared lost
//!   and resent once needlessly (harmless duplicate). Aeolus assumes one path per flow.
//! - Fig. 22's "without probe" variant is [`AeolusConfig::probe`] = false: losses in the
//!   middle are still found by SACK; tail losses are repaired only if the transport keeps
//!   granting the flow, which spends a credit on an unacknowledged packet once no new data
//!   is left (ExpressPass with its default receiver, `credit_from_request`), otherwise they
//!   wait for the transport's timeout.
//!
//! Per-packet work is O(1) amortized; state is two bytes per unscheduled packet.

use crate::packet::{FlowId, NodeId, Packet, PacketFlags};
use std::collections::VecDeque;

/// Flags of an unscheduled (pre-credit) data packet, on top of `DATA`.
pub const UNSCHEDULED_FLAGS: u16 = PacketFlags::UNSCHEDULED;

/// Where unscheduled packets go in the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnschedMode {
    /// Flag them `UNSCHEDULED` for the switches' selective dropping (Aeolus proper, §III-B).
    SelectiveDrop,
    /// Send them in a class below every scheduled packet (the §V-E alternative).
    LowPriority,
}

/// Aeolus settings a transport reads from its `[transport]` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AeolusConfig {
    pub mode: UnschedMode,
    /// Send the probe after the last unscheduled packet (§III-C; Fig. 22 compares without).
    pub probe: bool,
}

impl Default for AeolusConfig {
    fn default() -> Self {
        AeolusConfig { mode: UnschedMode::SelectiveDrop, probe: true }
    }
}

/// Sender-side state of one unscheduled packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UState {
    /// Not sent (yet, or ever: the flow left the pre-credit state first).
    Unsent,
    /// Sent unscheduled, no ACK yet, not known lost.
    InFlight,
    /// The receiver holds it.
    Acked,
    /// Known dropped; waits for a credit to be retransmitted as a scheduled packet.
    Lost,
    /// Retransmitted once as a scheduled packet by Aeolus.
    Resent,
}

/// The sending side of one flow's first RTT.
#[derive(Clone, Debug)]
pub struct AeolusSender {
    st: Vec<UState>,
    /// Unscheduled packets actually sent (indices `0..sent`, in order).
    sent: u32,
    /// Packets still allowed to go unscheduled (`st.len()` until the first credit).
    limit: u32,
    acked: u32,
    lost_q: VecDeque<u32>,
    /// Next index to consider for "sent but unacknowledged" retransmission.
    unacked_cursor: u32,
    probe_sent: bool,
    probe_acked: bool,
    probe: bool,
    resent: u32,
    detected: u32,
}

impl AeolusSender {
    /// A flow that plans `n_unsched` unscheduled packets (its indices `0..n_unsched`).
    pub fn new(n_unsched: u32, cfg: &AeolusConfig) -> AeolusSender {
        AeolusSender {
            st: vec![UState::Unsent; n_unsched as usize],
            sent: 0,
            limit: n_unsched,
            acked: 0,
            lost_q: VecDeque::new(),
            unacked_cursor: 0,
            probe_sent: false,
            probe_acked: false,
            probe: cfg.probe,
            resent: 0,
            detected: 0,
        }
    }

    /// Unscheduled packets planned at start.
    pub fn planned(&self) -> u32 {
        self.st.len() as u32
    }
    /// Unscheduled packets sent.
    pub fn sent(&self) -> u32 {
        self.sent
    }
    /// True while packet `idx` may still be sent unscheduled (the pre-credit phase).
    pub fn may_send_unscheduled(&self, idx: u64) -> bool {
        idx < self.limit as u64 && idx == self.sent as u64
    }
    /// Record that packet `idx` (the next in order) went out unscheduled.
    pub fn on_sent(&mut self, idx: u64) {
        if self.may_send_unscheduled(idx) {
            self.st[idx as usize] = UState::InFlight;
            self.sent += 1;
        }
    }
    /// The first credit arrived (§III-A): leave the pre-credit state. Packets not yet sent
    /// will go as scheduled packets. Call [`Self::probe_due`] afterwards.
    pub fn exit_precredit(&mut self) {
        self.limit = self.sent;
    }
    /// In the pre-credit state still.
    pub fn in_precredit(&self) -> bool {
        self.sent < self.limit
    }
    /// If the probe should go now (right after the last unscheduled packet), the index of
    /// that packet; marks the probe sent. `None` when probes are off, nothing was sent
    /// unscheduled, the burst is not over, or the probe already went.
    pub fn probe_due(&mut self) -> Option<u32> {
        if !self.probe || self.probe_sent || self.sent == 0 || self.in_precredit() {
            return None;
        }
        self.probe_sent = true;
        Some(self.sent - 1)
    }
    pub fn probe_sent(&self) -> bool {
        self.probe_sent
    }
    pub fn probe_acked(&self) -> bool {
        self.probe_acked
    }
    pub fn state(&self, idx: u64) -> Option<UState> {
        self.st.get(idx as usize).copied()
    }

    fn declare_lost_before(&mut self, end: u32) -> u32 {
        let mut n = 0;
        for i in 0..end.min(self.sent) {
            if self.st[i as usize] == UState::InFlight {
                self.st[i as usize] = UState::Lost;
                self.lost_q.push_back(i);
                n += 1;
            }
        }
        self.detected += n;
        n
    }

    /// A selective ACK of unscheduled packet `idx`. Returns the number of packets newly
    /// found lost (unacknowledged unscheduled packets sent before `idx`).
    pub fn on_ack(&mut self, idx: u64) -> u32 {
        let Some(s) = self.st.get_mut(idx as usize) else { return 0 };
        match *s {
            UState::InFlight | UState::Lost => {
                if *s == UState::Lost {
                    // Declared lost but arrived after all (reordering): no retransmission.
                    self.lost_q.retain(|&i| i as u64 != idx);
                }
                *s = UState::Acked;
                self.acked += 1;
            }
            _ => return 0,
        }
        self.declare_lost_before(idx as u32)
    }

    /// The probe's ACK: every unscheduled packet sent before the probe and not ACKed is lost.
    pub fn on_probe_ack(&mut self) -> u32 {
        if self.probe_acked {
            return 0;
        }
        self.probe_acked = true;
        self.declare_lost_before(self.sent)
    }

    /// Class (1): the next loss-detected unscheduled packet to retransmit as a scheduled
    /// packet; it will not be offered again.
    pub fn pop_lost(&mut self) -> Option<u64> {
        while let Some(i) = self.lost_q.pop_front() {
            if self.st[i as usize] == UState::Lost {
                self.st[i as usize] = UState::Resent;
                self.resent += 1;
                return Some(i as u64);
            }
        }
        None
    }
    /// Loss-detected packets waiting for a credit.
    pub fn lost_pending(&self) -> usize {
        self.lost_q.iter().filter(|&&i| self.st[i as usize] == UState::Lost).count()
    }
    pub fn has_lost(&self) -> bool {
        self.lost_q.iter().any(|&i| self.st[i as usize] == UState::Lost)
    }

    /// Class (3): the next sent but unacknowledged unscheduled packet, to retransmit with a
    /// credit that found no loss-detected packet and no new data; offered once.
    pub fn pop_unacked(&mut self) -> Option<u64> {
        while self.unacked_cursor < self.sent {
            let i = self.unacked_cursor;
            self.unacked_cursor += 1;
            if self.st[i as usize] == UState::InFlight {
                self.st[i as usize] = UState::Resent;
                self.resent += 1;
                return Some(i as u64);
            }
        }
        None
    }

    /// The transport retransmits unscheduled packet `idx` by its own means (e.g. the
    /// receiver asked for it by NACK): if it is still in flight, Aeolus will neither declare
    /// it lost nor offer it again. Returns whether it was in flight. Not counted in
    /// [`Self::resent`].
    pub fn take_over(&mut self, idx: u64) -> bool {
        match self.st.get_mut(idx as usize) {
            Some(s @ UState::InFlight) => {
                *s = UState::Resent;
                true
            }
            _ => false,
        }
    }

    /// The transport retransmits unscheduled packet `idx`, which Aeolus found lost and has
    /// not yet resent (it waits for a credit), by its own means (e.g. a timeout-driven
    /// request): Aeolus will not resend it again. Returns whether it was such a packet.
    /// Not counted in [`Self::resent`].
    pub fn take_over_lost(&mut self, idx: u64) -> bool {
        match self.st.get_mut(idx as usize) {
            Some(s @ UState::Lost) => {
                *s = UState::Resent;
                true
            }
            _ => false,
        }
    }

    /// Whether a sent but unacknowledged unscheduled packet is left for class (3).
    pub fn has_unacked(&self) -> bool {
        (self.unacked_cursor..self.sent).any(|i| self.st[i as usize] == UState::InFlight)
    }

    /// Unscheduled packets Aeolus retransmitted (each at most once).
    pub fn resent(&self) -> u32 {
        self.resent
    }
    /// Unscheduled packets found lost by SACK or probe ACK.
    pub fn detected_lost(&self) -> u32 {
        self.detected
    }
    pub fn acked(&self) -> u32 {
        self.acked
    }
}

/// The receiving side of one flow's first RTT: which unscheduled packets arrived, and
/// which are known lost (an unscheduled packet or the probe arrived after them).
#[derive(Clone, Debug, Default)]
pub struct AeolusReceiver {
    /// 0 = not seen, 1 = held, 2 = declared lost (and not held).
    st: Vec<u8>,
    /// Whether the credit for a retransmission of the packet has been counted: set when it
    /// is declared lost, or when a retransmission the sender paid with a credit arrives for
    /// a packet this side never declared lost ([`AeolusReceiver::sender_charged`]).
    counted: Vec<bool>,
    /// Packets below this index have all been classified (held or declared lost).
    frontier: u32,
    lost: u32,
    probe_seen: bool,
}

impl AeolusReceiver {
    pub fn new() -> AeolusReceiver {
        AeolusReceiver::default()
    }

    fn grow(&mut self, n: usize) {
        if self.st.len() < n {
            self.st.resize(n, 0);
            self.counted.resize(n, false);
        }
    }

    /// Everything before `end` not held is lost; indices appended to `newly_lost`.
    fn classify_before(&mut self, end: u32, newly_lost: &mut Vec<u32>) {
        self.grow(end as usize);
        for i in self.frontier..end {
            if self.st[i as usize] == 0 {
                self.st[i as usize] = 2;
                self.lost += 1;
                // A paid retransmission that arrived first was counted then.
                if !std::mem::replace(&mut self.counted[i as usize], true) {
                    newly_lost.push(i);
                }
            }
        }
        self.frontier = self.frontier.max(end);
    }

    /// Unscheduled packet `idx` arrived (the caller ACKs it). Returns whether it is new;
    /// unscheduled packets before it that never arrived are appended to `newly_lost`.
    pub fn on_unscheduled(&mut self, idx: u32, newly_lost: &mut Vec<u32>) -> bool {
        self.grow(idx as usize + 1);
        let was = self.st[idx as usize];
        if was == 2 {
            // Declared lost, arrived after all (reordering): it is no longer missing.
            self.lost -= 1;
        }
        self.st[idx as usize] = 1;
        self.classify_before(idx, newly_lost);
        self.frontier = self.frontier.max(idx + 1);
        was != 1
    }

    /// The probe naming `last` as the last unscheduled packet arrived (the caller ACKs it).
    /// Unscheduled packets up to `last` that never arrived are appended to `newly_lost`.
    pub fn on_probe(&mut self, last: u32, newly_lost: &mut Vec<u32>) {
        self.probe_seen = true;
        self.classify_before(last + 1, newly_lost);
    }

    /// A retransmission of unscheduled packet `idx` that the sender paid with a credit
    /// arrived. Returns true when this side had never declared `idx` lost (the two ends'
    /// inferences differ: the sender saw the probe's ACK before the packet's own, or the
    /// packet's ACK was lost), so the caller must count one more retransmission's credit;
    /// false when it was already counted. Each packet is counted at most once.
    pub fn sender_charged(&mut self, idx: u32) -> bool {
        self.grow(idx as usize + 1);
        !std::mem::replace(&mut self.counted[idx as usize], true)
    }

    /// Unscheduled packets known lost and not (yet) received again as unscheduled.
    pub fn declared_lost(&self) -> u32 {
        self.lost
    }
    /// Whether `idx` was declared lost (its retransmission is a scheduled packet).
    pub fn is_declared_lost(&self, idx: u32) -> bool {
        self.st.get(idx as usize) == Some(&2)
    }
    pub fn probe_seen(&self) -> bool {
        self.probe_seen
    }
}

/// Wire facts the packet helpers need: payload bytes per full packet and the size of a
/// control packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wire {
    pub mss: u64,
    pub ctrl_size: u64,
}

/// A probe: a control-size packet that follows a flow's last unscheduled packet.
/// `seq` = byte offset of that packet, `aux` = its index, `ack` = the flow size (§IV-B), in
/// class `prio` (the flow's unscheduled class), never flagged `UNSCHEDULED`. `kind` is the
/// transport's packet kind for probes.
pub fn probe_packet(w: Wire, kind: u8, dst: NodeId, flow: FlowId, last_idx: u32, flow_size: u64, prio: u8) -> Packet {
    Packet {
        dst,
        flow,
        size: w.ctrl_size as u32,
        prio,
        kind,
        seq: last_idx as u64 * w.mss,
        aux: last_idx as u64,
        ack: flow_size,
        ..Default::default()
    }
}

/// A per-packet ACK of unscheduled packet `idx` (or, with `kind` the probe-ACK kind, the
/// probe's ACK): `seq` = byte offset, `aux` = index.
pub fn ack_packet(w: Wire, kind: u8, dst: NodeId, flow: FlowId, idx: u32, prio: u8) -> Packet {
    Packet {
        dst,
        flow,
        size: w.ctrl_size as u32,
        prio,
        kind,
        seq: idx as u64 * w.mss,
        aux: idx as u64,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sack_finds_losses_in_the_middle_and_the_probe_ack_the_tail() {
        let mut s = AeolusSender::new(6, &AeolusConfig::default());
        for i in 0..6 {
            assert!(s.may_send_unscheduled(i));
            s.on_sent(i);
            assert_eq!(s.probe_due().is_some(), i == 5, "probe right after the last one");
        }
        assert_eq!(s.probe_due(), None, "one probe");
        // 1 and 4, 5 dropped: the ACK of 2 proves 1 lost; 0 is acked.
        assert_eq!(s.on_ack(0), 0);
        assert_eq!(s.on_ack(2), 1);
        assert_eq!(s.on_ack(3), 0);
        assert_eq!(s.state(1), Some(UState::Lost));
        assert_eq!(s.state(4), Some(UState::InFlight), "tail loss unknown before the probe ACK");
        assert_eq!(s.on_probe_ack(), 2);
        assert_eq!(s.on_probe_ack(), 0);
        assert_eq!(s.detected_lost(), 3);
        // Retransmitted once each, in order, then nothing.
        assert_eq!((s.pop_lost(), s.pop_lost(), s.pop_lost(), s.pop_lost()), (Some(1), Some(4), Some(5), None));
        assert_eq!(s.resent(), 3);
        assert_eq!(s.pop_unacked(), None, "nothing else unacknowledged");
    }

    #[test]
    fn first_credit_ends_the_burst_and_releases_the_probe() {
        let mut s = AeolusSender::new(10, &AeolusConfig::default());
        for i in 0..4 {
            s.on_sent(i);
        }
        assert_eq!(s.probe_due(), None);
        s.exit_precredit();
        assert!(!s.may_send_unscheduled(4), "the rest goes scheduled");
        assert_eq!(s.probe_due(), Some(3));
        // Unacknowledged packets are offered once as class (3).
        s.on_ack(0);
        assert_eq!(
            (s.pop_unacked(), s.pop_unacked(), s.pop_unacked(), s.pop_unacked()),
            (Some(1), Some(2), Some(3), None)
        );
        assert_eq!(s.on_probe_ack(), 0, "already resent: not declared lost again");
        assert_eq!(s.pop_lost(), None);
    }

    #[test]
    fn no_probe_when_disabled() {
        let mut s = AeolusSender::new(2, &AeolusConfig { probe: false, ..Default::default() });
        s.on_sent(0);
        s.on_sent(1);
        assert_eq!(s.probe_due(), None);
    }

    #[test]
    fn receiver_declares_the_same_losses() {
        let mut r = AeolusReceiver::new();
        let mut lost = Vec::new();
        assert!(r.on_unscheduled(0, &mut lost));
        assert!(r.on_unscheduled(2, &mut lost));
        assert_eq!(lost, vec![1]);
        assert!(r.on_unscheduled(3, &mut lost));
        r.on_probe(5, &mut lost);
        assert_eq!(lost, vec![1, 4, 5]);
        assert_eq!(r.declared_lost(), 3);
        assert!(r.is_declared_lost(4));
        assert!(!r.on_unscheduled(3, &mut lost), "duplicate");
        // A declared-lost packet that shows up after all is no longer counted.
        assert!(r.on_unscheduled(4, &mut lost));
        assert_eq!(r.declared_lost(), 2);
        assert_eq!(lost.len(), 3);
    }
}
