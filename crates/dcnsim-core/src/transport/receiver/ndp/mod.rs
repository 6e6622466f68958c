//! NDP: receiver-pulled transport over trimming switches (Handley et al., "Re-architecting
//! Datacenter Networks and Stacks for Low Latency and High Performance", SIGCOMM 2017),
//! optionally with the Aeolus first-RTT building block instead of trimming (Hu et al.,
//! "Aeolus", IEEE/ACM ToN 2021, §III and §V-D; see "NDP + Aeolus" below).
//!
//! # What is modelled
//! - **First window at line rate** (NDP §3, the transport protocol; zero-RTT start): a
//!   new flow sends its first `initial_window` packets back to back, without waiting for
//!   anything. Every data packet is flagged `TRIMMABLE`, so an `ndp_trim` switch port whose
//!   data queue is full cuts it to a header instead of dropping it (the switch side is
//!   [`crate::queue::trim`]). The first-window packets are also flagged `UNSCHEDULED` (sent
//!   without a pull); the trimming switch ignores that flag, Aeolus' selective dropping acts
//!   on it. The whole first-window decision is [`NdpSender::send_first_window`], the one
//!   place a building block such as Aeolus replaces or extends.
//! - **ACK, NACK, PULL** (NDP §3, transport protocol): the receiver ACKs every data packet at
//!   once and NACKs every trimmed header at once (the header arrives in class 0 because the
//!   switch puts headers in its priority queue, and every control packet rides class 0, so
//!   feedback overtakes data at every port and NIC). For each arriving data packet or
//!   header it also queues one PULL.
//! - **One pull queue per receiving host** (NDP §3, "pull queue"), shared by all the flows
//!   arriving at that host, paced so that the data the PULLs release arrives at the rate
//!   the receiver's link absorbs: one PULL per serialization time of an MTU packet at
//!   `pull_rate`. Flows with pending PULLs are served round robin (NDP's default "fair"
//!   pull queue; the paper notes a receiver may prioritise instead). When a flow
//!   completes, its pending PULLs are removed so they do not waste pacing slots.
//! - **Pull counter** (NDP §3): each PULL carries the flow's cumulative pull number
//!   (`aux`); the sender sends as many packets as the number advanced since the last PULL
//!   it saw (one per PULL normally; more when earlier PULLs were lost; none for a PULL
//!   overtaken by a later one). Lost PULLs therefore cost nothing as long as a later PULL
//!   of the same flow arrives.
//! - **Retransmission on NACK** (NDP §3, "RTX queue"): a NACK puts the packet in the
//!   flow's retransmission queue; on the next PULL the sender sends the head of that queue
//!   before any new data. So a trimmed packet is resent exactly once per trim, paced by the
//!   receiver, and never causes a timeout.
//! - **Per-packet multipath** (NDP §3, routing): the simulator's `network.routing = "spray"`
//!   picks a random equal-cost port per packet at every switch. Each data packet also
//!   carries a per-packet `entropy` (its packet index + 1), for engines that spray on it.
//! - **Timeout as the last resort**: the sender times a packet from its last transmission
//!   until its ACK or NACK; one not answered within `rto` is resent at once (its header or
//!   its NACK was lost, or, without trimming, the packet itself). See "Loss detection".
//!
//! Not modelled: return-to-sender (NDP's optional bouncing of headers when the header
//! queue overflows; headers are dropped instead and the timeout repairs them), the
//! sender's own path permutation (the engine sprays at the switches), the receiver's
//! reorder buffer (the receiver holds everything), connection setup (the paper's
//! zero-RTT handshake is implied by the first window), pull prioritisation policies other
//! than fair round robin, and the ACK/NACK "pull bit" piggybacking optimisation of the
//! htsim code (PULLs are always separate packets).
//!
//! # Configuration (`protocol = "ndp"`)
//! | field | default | meaning |
//! |---|---|---|
//! | `initial_window` | ceil(BDP / MTU), BDP = the source host's rate x the network's largest base RTT | packets sent at line rate before any PULL |
//! | `trimming` | true (false with `aeolus`) | flag data `TRIMMABLE`; false for a network that does not trim (see below) |
//! | `rto` | 1 ms | sender timeout of an unanswered packet, and of a stalled pull loop |
//! | `pull_rate` | the fastest host link rate | rate whose MTU serialization time spaces PULLs |
//! | `data_prio` | 1 (0 with a single class) | priority class of data packets; control rides class 0 |
//! | `aeolus` | false | add the Aeolus building block (see "NDP + Aeolus"); implies `trimming = false` |
//! | `aeolus_probe` | true | with `aeolus`: false = Aeolus without the probe (Aeolus Fig. 22) |
//!
//! # Loss detection
//! With trimming, data is never lost, only trimmed; the NACK repairs it. What can be lost
//! is a header or a control packet, only when a port's whole buffer overflows
//! (`header_overflow`): a lost header or NACK leaves its packet unanswered and the
//! per-packet timeout resends it; a lost PULL is covered by the next PULL's counter; if the
//! lost PULL was the flow's last one, nothing is in flight and no PULL arrives, so the
//! sender sends one packet after `rto` without a PULL ("stall timeout"), which restarts the
//! loop.
//!
//! With `trimming = false` (NDP over a non-trimming switch, the NDP+Aeolus baseline of
//! Aeolus §V-D, where unscheduled packets are selectively dropped), a dropped data packet
//! produces neither ACK nor NACK. The per-packet timeout is then the loss detector: a
//! packet unanswered `rto` after its last transmission is considered lost and resent at
//! once, without waiting for a PULL, because the dropped packet also took its PULL with it
//! (the pull loop lost one token, which the direct resend restores; being sent without a
//! PULL, the resend is flagged `UNSCHEDULED`). The timeout is the only detector in this
//! mode, so `rto` should then be set near the scenario's tail RTT (e.g. Aeolus' 100 us).
//! With `aeolus = true` Aeolus' probe and selective-ACK loss detection find first-window
//! losses instead, through two entry points: [`NdpSender::mark_lost`] at the sender queues
//! a packet for the next PULL exactly as a NACK does, and [`Ndp::queue_pulls`] at the
//! receiver queues the PULLs that will fetch packets it learned are missing; the timeout
//! is then only the last resort.
//!
//! # NDP + Aeolus (`aeolus = true`)
//! Aeolus §V-D runs NDP on switches that cannot trim: Aeolus' selective dropping
//! (`network.queue_policy = "selective_drop"`, [`crate::queue::selective`]) replaces
//! trimming, and Aeolus' loss recovery ([`crate::transport::aeolus`]) replaces the NACK. Mapping:
//! - **Unscheduled packets** = NDP's first window (sent at line rate without a PULL, the
//!   pre-credit burst of Aeolus §III-A), flagged `UNSCHEDULED` and not `TRIMMABLE`. PULLs
//!   are Aeolus' credits; a pulled packet is a scheduled packet. The first PULL ends the
//!   pre-credit state (NDP hands the whole first window to the NIC at once, so normally
//!   nothing of it is left to convert).
//! - **Probe** (§III-C): right after the last first-window packet, in the data class (so it
//!   stays behind them in every FIFO), control size, carrying that packet's index and the
//!   flow size; never flagged `UNSCHEDULED`. The receiver answers it with a probe ACK.
//! - **Per-packet selective ACKs**: NDP already ACKs every data packet at once; an ACK of
//!   the original transmission of a first-window packet carries [`ACK_UNSCHEDULED`] and is
//!   Aeolus' SACK (ACKs of resends do not count: they say nothing about the first window).
//! - **Loss detection without a timeout**: a SACK of packet j proves every earlier
//!   first-window packet still unacknowledged dropped; the probe ACK proves it for the
//!   tail. The sender queues each such packet once in NDP's retransmission queue
//!   ([`NdpSender::mark_lost`]), so the next PULL resends it, scheduled, ahead of new data
//!   (Aeolus' order: loss-detected, then new). The receiver applies the same rule when the
//!   later packet or the probe arrives and queues one extra PULL per packet it declares lost
//!   ([`Ndp::queue_pulls`]): a dropped packet took its PULL with it, so this restores the
//!   pull loop's token and fetches the resend.
//! - **Exactly once**: a packet Aeolus declared lost is handed to the retransmission queue
//!   once ([`AeolusSender`] never declares it again). If that scheduled copy is lost too
//!   (only a full buffer can drop it) or the probe is, NDP's per-packet timeout `rto`
//!   remains the last resort.
//! - **Without the probe** (`aeolus_probe = false`, Fig. 22): tail losses are found only by
//!   Aeolus' class (3): a PULL that finds neither a loss-detected packet nor new data resends
//!   the oldest sent-but-unacknowledged first-window packet (once each) instead of being
//!   banked. NDP sends a PULL for every arriving packet, so near the end of a flow such
//!   PULLs are common and may resend packets whose ACK is merely still on its way; this
//!   is the redundancy the paper accepts for class (3). With the probe, class (3) is not
//!   used: after the probe ACK every first-window packet is either ACKed or loss-detected,
//!   and before it a surplus PULL would resend packets still in flight.
//! - Routing: Aeolus' inference assumes one FIFO path per flow (per-flow ECMP). With
//!   `routing = "spray"` a reordered first-window packet can be declared lost and resent
//!   needlessly (a harmless duplicate; its extra PULL adds one token to the pull loop).
//! - The selective-dropping threshold is measured per queue (`selective.per_port = false`):
//!   NDP sends scheduled and unscheduled data in one class, the single FIFO of §III-B;
//!   control packets ride class 0 and do not count.
//!
//! # Pull-loop tokens
//! A flow's pull loop holds a fixed number of tokens, its first window: each packet sent
//! on a PULL (or in the first window) takes one, and the PULL its arrival releases gives it
//! back. That invariant is what bounds NDP's packets: nothing else limits a sender, and a
//! host NIC never drops. Two sends create a token instead of taking one: a stall send (the
//! loop lost its last token) and a timeout resend (the copy was presumed lost with its
//! token). A timeout resend whose copy was not lost but late (queued behind other flows'
//! packets in its sender's NIC, or dropped only as far as its ACK) would then return two
//! PULLs for one token. Left alone this runs away: with drop-tail switches (no trimming)
//! under data mining at 40G, each spurious resend added a token, the extra packets made
//! more queueing, losses and timeouts, and the senders' NIC queues grew without bound
//! (a 40-host 40G leaf-spine with 384 KB drop-tail buffers and 1,200 data-mining flows at
//! load 0.6: 12.4 million packets alive at 100 ms of simulated time, gigabytes of memory;
//! the reduced form in `tests/run_limits.rs`, 600 flows at load 0.8: 3.6 million at 80 ms).
//!
//! So every data copy carries in `aux` its packet's token count: how many of the packet's
//! transmissions so far took a token (first window, pulled, stall sends; a timeout resend,
//! flagged [`DATA_TOKENLESS`], takes none and repeats its predecessor's count). The
//! receiver keeps per packet the PULLs it returned and the highest count seen, and pulls for
//! an arriving copy (data or header) only while the PULLs returned are fewer: each
//! token-taking transmission gets exactly one PULL back, whichever copies arrive and in
//! what order, and a timeout resend returns the token of a copy that was lost. Without
//! timeout resends every copy has a distinct count and every arrival is pulled for, as
//! before. Cost: two bytes per packet at the receiver while the flow is incomplete.
//! Measured on the 1,200-flow scenario: every flow finishes, at most about 3,100 packets
//! alive at once (`docs/run_limits.md` has the survey of the receiver-driven transports).
//!
//! # Choices where the paper leaves room
//! - `initial_window` default: one bandwidth-delay product, in MTU-sized packets rounded
//!   up (so the pipe is full until the first PULL returns), with the source host's rate
//!   and the network's largest base RTT (docs/metrics.md definition), as NDP sizes its
//!   initial window to the network rather than to the path.
//! - Pull pacing: one PULL per MTU serialization time at `pull_rate`, whatever the size of
//!   the packet it releases (the last packet of a flow may be shorter; the slot is not
//!   shortened). The pacer keeps the time the next PULL may leave; a PULL queued when that
//!   time has passed leaves at once. Default `pull_rate` = the fastest host link: the
//!   topologies here give every host the same rate; set it for heterogeneous hosts.
//! - Round robin across flows: a flow with pending PULLs gets one per turn.
//! - Surplus PULLs: a PULL arriving when the flow has nothing to send (all new data sent,
//!   retransmission queue empty) is banked; a later NACK is then served at once with the
//!   banked PULL instead of waiting. This covers a PULL that overtook the NACK of the same
//!   header on another path (with spraying), which would otherwise stall the flow until the
//!   timeout. (The htsim code resends at once on a NACK once all new data has been sent;
//!   banking is the same idea limited to PULLs the receiver actually released.)
//! - A header (or data packet) of a packet the receiver already holds is answered with an
//!   ACK, not a NACK: nothing needs resending.
//! - The receiver queues a PULL for every data packet or header it receives until the flow
//!   is complete (each arrival returns the token it consumed), except a copy too many of a
//!   packet resent on a timeout (see "Pull-loop tokens"); the packet that completes the
//!   flow queues none.
//! - `rto` default 1 ms: the Aeolus evaluation's NDP/Homa timeout (Aeolus §V, "1ms/100us in
//!   different experiments"); with trimming it only fires after a header or control
//!   packet was lost, so it can be far above the RTT. Queueing in NDP is bounded by the
//!   8-packet data queues, so an unanswered packet is legitimately late by far less. A
//!   packet waiting in the retransmission queue is not timed (its NACK answered it; a PULL
//!   will come), only the pull loop as a whole (stall timeout).
//! - `UNSCHEDULED` marks every data packet sent without a PULL: the first window, timeout
//!   resends and stall sends. The trimming switch ignores it; under Aeolus selective
//!   dropping this keeps the invariant that a pulled ("scheduled") packet is never dropped
//!   for being above the threshold, at the price that a timeout resend into a standing
//!   queue is dropped again and retried one `rto` later (a 16-to-1 incast of 22 jumbo
//!   packets per sender over `selective_drop` with `trimming = false`, `rto = 100us`:
//!   629 selective drops, no overflow, last flow at 1.71 ms; sending them as scheduled
//!   instead overflowed the 120 KB buffer with 283 scheduled packets, last flow at
//!   0.81 ms). Aeolus' own loss recovery replaces this fallback.
//! - `FlowStats::timeouts` counts timer expiries that sent something (one expiry may
//!   resend several packets); `retx_bytes` counts the payload of every resent packet
//!   (NACK-driven and timeout-driven).
//! - Segmentation: packets of `mtu - header` payload bytes on a grid from byte 0; the last
//!   one carries the rest. A flow of 0 bytes sends one empty data packet.
//! - The sender hands every packet to its NIC at once (no `on_nic_idle`): the NIC queue of
//!   a sender is bounded by the first windows plus one packet per PULL, since the pull loop
//!   of each flow holds a fixed number of tokens.
//! - Window and spraying: the pull loop of a flow holds as many tokens as its first
//!   window, so its rate is at most `initial_window` packets per (current) RTT. With the
//!   default one-BDP window any queueing in the core costs throughput. The engine sprays
//!   each packet on a random equal-cost port at every hop, which queues packets
//!   transiently even on a full-bisection core; NDP's senders instead permute paths, and
//!   the NDP authors' notes on their simulator say switch-level per-packet balancing
//!   needs slightly larger buffers (10 packets instead of 8) for full use. Measured: a
//!   16-host permutation of 2 MB flows on a 4 x 4 leaf-spine at 40G (9 KB MTU, window 9)
//!   finishes its slowest flow at 1.34x its ideal FCT; with `initial_window = 16` at 1.10x.
//!   Scenarios reproducing NDP's permutation throughput may raise `initial_window`.
//!
//! # Header layout
//! Data (`kind = KIND_DATA`, flags `DATA` [+ `TRIMMABLE`] [+ `UNSCHEDULED`]): `seq` = byte
//! offset, `payload`, `size = payload + header`, `ts` = send time, `aux2` bit 0 = this is a
//! retransmission, bit 1 ([`DATA_TOKENLESS`]) = a timeout resend, `aux` = the packet's
//! token count (see "Pull-loop tokens"), `entropy` = packet index + 1 (wrapping, never
//! 0), `prio = data_prio`. A
//! trimmed header keeps all of these with `TRIMMED` set and payload 0.
//!
//! ACK (`KIND_ACK`) / NACK (`KIND_NACK`), `ctrl_size` bytes, class 0: `seq` = the data
//! packet's offset, `ack` = cumulative bytes held in order, `ts` = echoed send time.
//! PULL (`KIND_PULL`), `ctrl_size` bytes, class 0: `aux` = the flow's cumulative pull number
//! (1, 2, ...), `ack` = cumulative bytes held in order.
//! With Aeolus: ACK `aux2` = [`ACK_UNSCHEDULED`] for a selective ACK of a first-window
//! packet; PROBE (`KIND_PROBE`, `ctrl_size`, class `data_prio`): `seq`/`aux` = offset/index
//! of the last first-window packet, `ack` = flow size; PROBE_ACK (`KIND_PROBE_ACK`, class
//! 0): `seq`/`aux` echo the probe's.
//!
//! Timers: [`TIMER_RTO`] per flow at the sender (token flow id, generation from a
//! [`TimerSlot`], re-armed lazily so the common path pushes about one timer per `rto`), and
//! [`TIMER_PULL`] per receiving host (the pacer; the token's flow field holds the host id).
//!
//! Per-packet work is O(1) amortized.

use crate::config::FieldError;
use crate::packet::{FlowId, NodeId, Packet, PacketFlags};
use crate::transport::aeolus::{self, AeolusConfig, AeolusReceiver, AeolusSender, UnschedMode};
use crate::transport::{token, untoken, Actions, Ctx, FlowInfo, FlowStats, NetInfo, TimerSlot, Transport};
use crate::units::{Rate, Time};
use serde::Deserialize;
use std::collections::VecDeque;
use std::fmt;

mod config;
pub use config::*;
mod sender;
pub use sender::*;
mod receiver;
pub use receiver::*;
#[cfg(test)]
mod tests;

/// `Packet::kind` of a data packet (or of its trimmed header).
pub const KIND_DATA: u8 = 1;
/// `Packet::kind` of a per-packet acknowledgement.
pub const KIND_ACK: u8 = 2;
/// `Packet::kind` of a negative acknowledgement (the receiver got a trimmed header).
pub const KIND_NACK: u8 = 3;
/// `Packet::kind` of a PULL.
pub const KIND_PULL: u8 = 4;
/// Timer kind of a sender's timeout.
pub const TIMER_RTO: u8 = 1;
/// Timer kind of a receiving host's pull pacer.
pub const TIMER_PULL: u8 = 2;
/// Data `aux2` bit: the packet is a retransmission.
pub const DATA_RETX: u32 = 1;
/// Data `aux2` bit: a timeout resend, sent without a PULL in place of an unanswered copy;
/// it carries no pull-loop token of its own (see "Pull-loop tokens").
pub const DATA_TOKENLESS: u32 = 2;
/// `Packet::kind` of an Aeolus probe (follows the first window; `aux` = last packet's index).
pub const KIND_PROBE: u8 = 5;
/// `Packet::kind` of the ACK of an Aeolus probe.
pub const KIND_PROBE_ACK: u8 = 6;
/// ACK `aux2` bit (with Aeolus): the acknowledged copy was the packet's original unscheduled
/// (first-window) transmission, so the ACK is one of Aeolus' selective ACKs.
pub const ACK_UNSCHEDULED: u32 = 1;

// ------------------------------------------------------------------------------------------
// The transport
// ------------------------------------------------------------------------------------------

/// NDP for every host of a run.
pub struct Ndp {
    p: NdpParams,
    senders: Vec<Option<NdpSender>>,
    receivers: Vec<Option<NdpReceiver>>,
    pullq: Vec<PullQueue>,
}

impl Ndp {
    pub fn new(p: NdpParams) -> Ndp {
        Ndp { p, senders: Vec::new(), receivers: Vec::new(), pullq: Vec::new() }
    }

    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Ndp, NdpConfigError> {
        Ok(Ndp::new(NdpConfig::parse(cfg)?.resolve(net)?))
    }

    pub fn params(&self) -> &NdpParams {
        &self.p
    }
    pub fn sender(&self, flow: FlowId) -> Option<&NdpSender> {
        self.senders.get(flow as usize).and_then(|s| s.as_ref())
    }
    pub fn receiver(&self, flow: FlowId) -> Option<&NdpReceiver> {
        self.receivers.get(flow as usize).and_then(|r| r.as_ref())
    }
    pub fn pull_queue(&self, host: NodeId) -> Option<&PullQueue> {
        self.pullq.get(host as usize)
    }

    fn ctrl(&self, kind: u8, dst: NodeId, flow: FlowId) -> Packet {
        Packet { dst, flow, size: self.p.ctrl_size as u32, prio: 0, kind, ..Default::default() }
    }

    /// A data packet or trimmed header at its receiver.
    fn on_data(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow as usize;
        let Some(info) = ctx.flows.get(f) else { return };
        if self.receivers.len() <= f {
            self.receivers.resize_with(f + 1, || None);
        }
        let p = &self.p;
        let r = self.receivers[f].get_or_insert_with(|| NdpReceiver::new(info, p));
        let idx = pkt.seq / p.mss;
        let trimmed = pkt.flags.has(PacketFlags::TRIMMED);
        // Aeolus: the original transmission of a first-window (unscheduled) packet is
        // selectively ACKed, and proves lost the unscheduled packets before it not yet held.
        let sack = !trimmed
            && pkt.flags.has(PacketFlags::UNSCHEDULED)
            && pkt.aux2 & DATA_RETX == 0
            && idx < r.n_unsched
            && r.aeolus.is_some();
        let mut lost = 0;
        if sack {
            if let Some(a) = r.aeolus.as_mut() {
                let mut newly = Vec::new();
                a.on_unscheduled(idx as u32, &mut newly);
                lost = newly.iter().filter(|&&i| !r.has(i as u64)).count() as u32;
            }
        }
        let was_complete = r.complete;
        let pull = !was_complete && r.pulls_for(idx, pkt.aux);
        let new = !trimmed && r.record(idx);
        let nack = trimmed && !r.has(idx);
        let (src, cum) = (r.src, r.cum_bytes(p.mss));
        let completes = new && r.complete && !was_complete;
        if completes {
            // Pending PULLs of a complete flow are withdrawn (stale ring entries skipped).
            r.pending = 0;
        }
        let mut fb = self.ctrl(if nack { KIND_NACK } else { KIND_ACK }, src, pkt.flow);
        fb.seq = pkt.seq;
        fb.ack = cum;
        fb.ts = pkt.ts;
        if sack {
            fb.aux2 = ACK_UNSCHEDULED;
        }
        ctx.out.send(fb);
        if completes {
            ctx.out.complete(pkt.flow);
        } else if !was_complete {
            // One PULL for this arrival (unless a copy of the same packet already returned
            // the token it carried), plus (Aeolus) one per packet now known lost: the
            // dropped packets took their PULLs with them.
            self.queue_pulls(ctx, pkt.flow, pull as u32 + lost);
        }
    }

    /// Aeolus: the probe at the receiver. ACK it; every unscheduled packet up to the one it
    /// names that is not held is lost, and gets the PULL that will fetch it again.
    fn on_probe(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow as usize;
        let Some(info) = ctx.flows.get(f) else { return };
        if info.dst != ctx.host {
            return;
        }
        if self.receivers.len() <= f {
            self.receivers.resize_with(f + 1, || None);
        }
        let p = &self.p;
        let r = self.receivers[f].get_or_insert_with(|| NdpReceiver::new(info, p));
        let mut lost = 0;
        if !r.complete {
            if let Some(a) = r.aeolus.as_mut() {
                let mut newly = Vec::new();
                let last = (pkt.aux as u32).min(r.n_unsched.saturating_sub(1) as u32);
                a.on_probe(last, &mut newly);
                lost = newly.iter().filter(|&&i| !r.has(i as u64)).count() as u32;
            }
        }
        let ack = aeolus::ack_packet(
            aeolus::Wire { mss: p.mss, ctrl_size: p.ctrl_size },
            KIND_PROBE_ACK,
            r.src,
            pkt.flow,
            pkt.aux as u32,
            0,
        );
        ctx.out.send(ack);
        self.queue_pulls(ctx, pkt.flow, lost);
    }

    /// Queue `n` PULLs for `flow` in the pull queue of `ctx.host` (its receiver) and
    /// release what the pacer allows. NDP queues one per arriving packet or header; a
    /// building block that learns of lost packets another way (Aeolus' probe) queues the
    /// PULLs that will fetch them. Nothing is queued for a complete flow.
    pub fn queue_pulls(&mut self, ctx: &mut Ctx, flow: FlowId, n: u32) {
        let f = flow as usize;
        let Some(info) = ctx.flows.get(f) else { return };
        if n == 0 || info.dst != ctx.host {
            return;
        }
        if self.receivers.len() <= f {
            self.receivers.resize_with(f + 1, || None);
        }
        let p = &self.p;
        let r = self.receivers[f].get_or_insert_with(|| NdpReceiver::new(info, p));
        if r.complete {
            return;
        }
        let was_idle = r.pending == 0;
        r.pending += n;
        let h = ctx.host as usize;
        if self.pullq.len() <= h {
            self.pullq.resize_with(h + 1, PullQueue::default);
        }
        if was_idle {
            self.pullq[h].ring.push_back(flow);
        }
        self.pump(ctx.now, ctx.host, ctx.out);
    }

    /// The sender state of `flow` (for building blocks that add their own loss detection).
    pub fn sender_mut(&mut self, flow: FlowId) -> Option<&mut NdpSender> {
        self.senders.get_mut(flow as usize).and_then(|s| s.as_mut())
    }

    /// Release one PULL if the pacer allows, and arm the pacer if more wait.
    fn pump(&mut self, now: Time, host: NodeId, out: &mut Actions) {
        let Some(q) = self.pullq.get_mut(host as usize) else { return };
        if now >= q.next_at {
            while let Some(f) = q.ring.pop_front() {
                let Some(r) = self.receivers.get_mut(f as usize).and_then(|r| r.as_mut()) else { continue };
                if r.pending == 0 {
                    continue;
                }
                r.pending -= 1;
                r.pulls += 1;
                let mut pull = Packet {
                    dst: r.src,
                    flow: f,
                    size: self.p.ctrl_size as u32,
                    prio: 0,
                    kind: KIND_PULL,
                    ..Default::default()
                };
                pull.aux = r.pulls;
                pull.ack = r.cum_bytes(self.p.mss);
                out.send(pull);
                if r.pending > 0 {
                    q.ring.push_back(f);
                }
                q.next_at = now + self.p.pull_interval;
                q.released += 1;
                break;
            }
        }
        if !q.ring.is_empty() && (!q.timer.is_armed() || q.timer.at != q.next_at) {
            let at = q.next_at.max(now);
            let g = q.timer.arm(at);
            out.timer(at, token(host, TIMER_PULL, g));
        }
    }
}

impl Transport for Ndp {
    fn name(&self) -> &'static str {
        "ndp"
    }

    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let f = flow as usize;
        let Some(info) = ctx.flows.get(f) else { return };
        if self.senders.len() <= f {
            self.senders.resize_with(f + 1, || None);
        }
        let mut s = NdpSender::new(info, &self.p);
        s.start(ctx.now, &self.p, info, ctx.out);
        self.senders[f] = Some(s);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        match pkt.kind {
            KIND_DATA => self.on_data(ctx, pkt),
            KIND_PROBE => self.on_probe(ctx, pkt),
            KIND_ACK | KIND_NACK | KIND_PULL | KIND_PROBE_ACK => {
                let p = &self.p;
                let Some(s) = self.senders.get_mut(pkt.flow as usize).and_then(|s| s.as_mut()) else { return };
                match pkt.kind {
                    KIND_ACK => {
                        s.on_ack(ctx.now, p, pkt.seq / p.mss, ctx.out);
                        if pkt.aux2 & ACK_UNSCHEDULED != 0 {
                            s.on_unscheduled_ack(ctx.now, p, pkt.seq / p.mss, ctx.out);
                        }
                    }
                    KIND_NACK => s.on_nack(ctx.now, p, pkt.seq / p.mss, ctx.out),
                    KIND_PROBE_ACK => s.on_probe_ack(ctx.now, p, ctx.out),
                    _ => s.on_pull(ctx.now, p, pkt.aux, ctx.out),
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, tok: u64) {
        let (id, kind, gen) = untoken(tok);
        match kind {
            TIMER_RTO => {
                let p = &self.p;
                if let Some(s) = self.senders.get_mut(id as usize).and_then(|s| s.as_mut()) {
                    s.on_timer(ctx.now, p, gen, ctx.out);
                }
            }
            TIMER_PULL => {
                let fire = self.pullq.get_mut(ctx.host as usize).is_some_and(|q| q.timer.fire(gen));
                if fire {
                    self.pump(ctx.now, ctx.host, ctx.out);
                }
            }
            _ => {}
        }
    }

    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.sender(flow).map(|s| s.stats()).unwrap_or_default()
    }
}
