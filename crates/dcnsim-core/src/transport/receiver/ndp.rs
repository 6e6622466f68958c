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
// Configuration
// ------------------------------------------------------------------------------------------

/// The scenario's `[transport]` table for `ndp` (without `protocol`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NdpConfig {
    /// Packets of the first window; `None` = one BDP (see the module docs).
    pub initial_window: Option<u64>,
    /// Flag data packets trimmable; `None` = true, false with `aeolus`.
    pub trimming: Option<bool>,
    /// Sender timeout.
    pub rto: Time,
    /// Rate that spaces PULLs; `None` = the fastest host link.
    pub pull_rate: Option<Rate>,
    /// Priority class of data packets; `None` = 1 (0 with a single class).
    pub data_prio: Option<u8>,
    /// Add the Aeolus first-RTT building block (see "NDP + Aeolus").
    pub aeolus: bool,
    /// With `aeolus`: send the probe after the first window (Aeolus Fig. 22 compares without).
    pub aeolus_probe: bool,
}

impl Default for NdpConfig {
    fn default() -> Self {
        NdpConfig {
            initial_window: None,
            trimming: None,
            rto: Time::ms(1),
            pull_rate: None,
            data_prio: None,
            aeolus: false,
            aeolus_probe: true,
        }
    }
}

/// A `[transport]` table error for `ndp`. `field()` names the offending key.
#[derive(Clone, Debug, PartialEq)]
pub enum NdpConfigError {
    /// An unknown field, a value of the wrong type or an unparsable time/rate.
    Parse(FieldError),
    /// A well-formed value outside its range; `fix` says what to write instead.
    OutOfRange { field: String, value: String, fix: String },
    /// The network description makes NDP impossible.
    Network { field: String, msg: String },
}

impl NdpConfigError {
    /// The offending key, e.g. `transport.rto`.
    pub fn field(&self) -> String {
        match self {
            NdpConfigError::Parse(e) => e.field(),
            NdpConfigError::OutOfRange { field, .. } => format!("transport.{field}"),
            NdpConfigError::Network { field, .. } => field.clone(),
        }
    }
}

impl fmt::Display for NdpConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NdpConfigError::Parse(e) => write!(f, "{e}"),
            NdpConfigError::OutOfRange { value, fix, .. } => write!(f, "{} = {value}: {fix}", self.field()),
            NdpConfigError::Network { field, msg } => write!(f, "{field}: {msg}"),
        }
    }
}

impl std::error::Error for NdpConfigError {}

/// Resolved, validated parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct NdpParams {
    /// Payload bytes of a full packet.
    pub mss: u64,
    pub header: u64,
    pub mtu: u64,
    pub ctrl_size: u64,
    /// Explicit first window in packets (`None` = one BDP per flow).
    pub initial_window: Option<u64>,
    /// Largest base RTT of the network (for the default first window).
    pub max_base_rtt: Time,
    pub trimming: bool,
    pub rto: Time,
    pub pull_rate: Rate,
    /// The Aeolus building block, when enabled (selective dropping mode only).
    pub aeolus: Option<AeolusConfig>,
    /// Spacing of PULLs: one MTU at `pull_rate`.
    pub pull_interval: Time,
    pub data_prio: u8,
}

/// One bandwidth-delay product in MTU-sized packets, rounded up, at least 1.
pub fn bdp_window(rate: Rate, rtt: Time, mtu: u64) -> u64 {
    rate.bdp(rtt).0.div_ceil(mtu.max(1)).max(1)
}

impl NdpConfig {
    pub const FIELDS: &'static [&'static str] =
        &["initial_window", "trimming", "rto", "pull_rate", "data_prio", "aeolus", "aeolus_probe"];

    /// Parse a `[transport]` table (JSON form, `protocol` removed). `null` means all defaults.
    pub fn parse(cfg: &serde_json::Value) -> Result<NdpConfig, NdpConfigError> {
        if cfg.is_null() {
            return Ok(NdpConfig::default());
        }
        if !cfg.is_object() {
            return Err(NdpConfigError::Parse(FieldError::invalid(
                "transport",
                format!("expected a table of ndp settings, found {cfg}"),
                "write the settings as key = value pairs under [transport]",
            )));
        }
        crate::config::from_table(cfg, "transport").map_err(NdpConfigError::Parse)
    }

    /// Validate and resolve against the network.
    pub fn resolve(&self, net: &NetInfo) -> Result<NdpParams, NdpConfigError> {
        let bad =
            |field: &str, value: String, fix: String| NdpConfigError::OutOfRange { field: field.into(), value, fix };
        if net.mtu.0 <= net.header.0 {
            return Err(NdpConfigError::Network {
                field: "network.mtu".into(),
                msg: format!("MTU {} leaves no payload after the {} header; raise the MTU", net.mtu, net.header),
            });
        }
        if let Some(0) = self.initial_window {
            return Err(bad(
                "initial_window",
                "0".into(),
                "must be at least 1 packet; remove it for one bandwidth-delay product".into(),
            ));
        }
        if self.rto == Time::ZERO {
            return Err(bad("rto", "\"0ps\"".into(), "must be > 0, e.g. \"1ms\"".into()));
        }
        if self.aeolus && self.trimming == Some(true) {
            return Err(bad(
                "trimming",
                "true".into(),
                "Aeolus replaces payload trimming (Aeolus §V-D): remove `trimming` or set it to false, \
                 and run on network.queue_policy = \"selective_drop\""
                    .into(),
            ));
        }
        if !self.aeolus && !self.aeolus_probe {
            return Err(bad(
                "aeolus_probe",
                "false".into(),
                "the probe is part of Aeolus: set aeolus = true as well, or remove aeolus_probe".into(),
            ));
        }
        let pull_rate = match self.pull_rate {
            Some(r) if r.0 == 0 => {
                return Err(bad(
                    "pull_rate",
                    "\"0Gbps\"".into(),
                    "must be > 0; remove it to pace PULLs at the host link rate".into(),
                ))
            }
            Some(r) => r,
            None if net.max_host_rate.0 == 0 => {
                return Err(NdpConfigError::Network {
                    field: "topology.host_rate".into(),
                    msg: "no host link has a positive rate; NDP paces PULLs at the host rate".into(),
                })
            }
            None => net.max_host_rate,
        };
        let classes = net.priorities.clamp(1, 8);
        let data_prio = match self.data_prio {
            Some(p) if p >= classes => {
                return Err(bad(
                    "data_prio",
                    p.to_string(),
                    format!("must be below the {classes} priority classes (0 = highest)"),
                ))
            }
            Some(p) => p,
            None => 1.min(classes - 1),
        };
        Ok(NdpParams {
            mss: net.mss(),
            header: net.header.0,
            mtu: net.mtu.0,
            ctrl_size: net.ctrl_size.0,
            initial_window: self.initial_window,
            max_base_rtt: net.max_base_rtt,
            trimming: self.trimming.unwrap_or(!self.aeolus),
            rto: self.rto,
            pull_rate,
            aeolus: self.aeolus.then_some(AeolusConfig { mode: UnschedMode::SelectiveDrop, probe: self.aeolus_probe }),
            pull_interval: pull_rate.tx_time(net.mtu),
            data_prio,
        })
    }
}

impl NdpParams {
    /// Packets of `flow`'s first window (before capping at the flow's length).
    pub fn first_window(&self, flow: &FlowInfo) -> u64 {
        match self.initial_window {
            Some(w) => w,
            None => bdp_window(flow.host_rate, self.max_base_rtt, self.mtu),
        }
    }
    /// Number of packets of a flow of `size` bytes (at least 1).
    pub fn packets(&self, size: u64) -> u64 {
        size.div_ceil(self.mss).max(1)
    }
}

// ------------------------------------------------------------------------------------------
// Sender
// ------------------------------------------------------------------------------------------

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

// ------------------------------------------------------------------------------------------
// Receiver
// ------------------------------------------------------------------------------------------

/// The receiving end of one NDP flow.
#[derive(Debug)]
pub struct NdpReceiver {
    src: NodeId,
    size: u64,
    npk: u64,
    /// Bitset of packets held (freed on completion).
    got: Vec<u64>,
    /// Per packet: PULLs returned for its copies, and the highest token count a copy
    /// carried (`aux`), saturating; see "Pull-loop tokens". Freed on completion.
    returned: Vec<u8>,
    stamp: Vec<u8>,
    count: u64,
    /// First packet not held (in-order prefix).
    cum: u64,
    complete: bool,
    /// Pull number of the last PULL sent.
    pulls: u64,
    /// PULLs waiting in the host's pull queue.
    pending: u32,
    /// Aeolus' first-RTT state (with `aeolus`).
    aeolus: Option<AeolusReceiver>,
    /// Packets the sender sends unscheduled (its first window), known from the flow size.
    n_unsched: u64,
}

impl NdpReceiver {
    pub fn new(flow: &FlowInfo, p: &NdpParams) -> NdpReceiver {
        let npk = p.packets(flow.size.0);
        NdpReceiver {
            src: flow.src,
            size: flow.size.0,
            npk,
            got: vec![0; npk.div_ceil(64) as usize],
            returned: vec![0; npk as usize],
            stamp: vec![0; npk as usize],
            count: 0,
            cum: 0,
            complete: false,
            pulls: 0,
            pending: 0,
            aeolus: p.aeolus.map(|_| AeolusReceiver::new()),
            n_unsched: p.first_window(flow).min(npk),
        }
    }
    /// The Aeolus receiver state (with `aeolus`).
    pub fn aeolus(&self) -> Option<&AeolusReceiver> {
        self.aeolus.as_ref()
    }
    pub fn has(&self, idx: u64) -> bool {
        self.complete || (idx < self.npk && self.got[(idx / 64) as usize] & (1 << (idx % 64)) != 0)
    }
    /// Record packet `idx`; true if it is new.
    fn record(&mut self, idx: u64) -> bool {
        if idx >= self.npk || self.has(idx) {
            return false;
        }
        self.got[(idx / 64) as usize] |= 1 << (idx % 64);
        self.count += 1;
        while self.cum < self.npk && self.has(self.cum) {
            self.cum += 1;
        }
        if self.count == self.npk {
            self.complete = true;
            self.got = Vec::new();
            self.returned = Vec::new();
            self.stamp = Vec::new();
        }
        true
    }
    /// Whether the arrival of a copy of packet `idx` carrying token count `tokens` (the
    /// token-taking transmissions of the packet up to this copy) returns a PULL: while the
    /// PULLs returned for the packet are fewer than the highest count seen, yes. Each
    /// token-taking transmission gets one PULL back, whichever copies arrive and in what
    /// order; a timeout resend (which takes no token) stands in for a lost one.
    fn pulls_for(&mut self, idx: u64, tokens: u64) -> bool {
        let i = idx as usize;
        if i >= self.returned.len() {
            return false;
        }
        // A copy always carries at least its own token or its original's.
        let k = tokens.clamp(1, u8::MAX as u64) as u8;
        self.stamp[i] = self.stamp[i].max(k);
        if self.returned[i] < self.stamp[i] {
            self.returned[i] += 1;
            return true;
        }
        false
    }
    /// Bytes held in order from byte 0.
    pub fn cum_bytes(&self, mss: u64) -> u64 {
        (self.cum * mss).min(self.size)
    }
    pub fn is_complete(&self) -> bool {
        self.complete
    }
    /// PULLs waiting in the host's pull queue.
    pub fn pending_pulls(&self) -> u32 {
        self.pending
    }
    /// PULLs sent so far (the last pull number).
    pub fn pulls_sent(&self) -> u64 {
        self.pulls
    }
}

/// One receiving host's pull queue and pacer.
#[derive(Debug, Default)]
pub struct PullQueue {
    /// Flows with pending PULLs, served round robin (stale entries of completed flows are
    /// skipped).
    ring: VecDeque<FlowId>,
    /// Earliest time the next PULL may leave.
    next_at: Time,
    timer: TimerSlot,
    released: u64,
}

impl PullQueue {
    /// PULLs this host has sent.
    pub fn released(&self) -> u64 {
        self.released
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;
    use serde_json::json;

    fn net() -> NetInfo {
        NetInfo::for_tests(9000, Time::us(10), Rate::gbps(100))
    }

    fn flow(id: FlowId, src: NodeId, dst: NodeId, size: u64) -> FlowInfo {
        FlowInfo {
            id,
            src,
            dst,
            size: Bytes(size),
            start: Time::ZERO,
            base_rtt: Time::us(10),
            path_rate: Rate::gbps(100),
            host_rate: Rate::gbps(100),
            deadline: None,
            background: false,
        }
    }

    const MSS: u64 = 8960;

    fn call<F: FnOnce(&mut Ndp, &mut Ctx)>(n: &mut Ndp, flows: &[FlowInfo], now: Time, host: NodeId, f: F) -> Actions {
        let mut out = Actions::new();
        let mut ctx = Ctx { now, host, flows, out: &mut out };
        f(n, &mut ctx);
        out
    }

    fn kinds(a: &Actions, kind: u8) -> Vec<Packet> {
        a.sends.iter().filter(|p| p.kind == kind).copied().collect()
    }

    #[test]
    fn first_window_is_one_bdp_at_line_rate() {
        // 100 Gbps x 10 us = 125,000 B = 13.9 packets of 9000 B: 14 packets.
        let mut n = Ndp::from_config(&serde_json::Value::Null, &net()).unwrap();
        assert_eq!(bdp_window(Rate::gbps(100), Time::us(10), 9000), 14);
        let flows = vec![flow(0, 0, 1, 100 * MSS), flow(1, 2, 1, 3 * MSS)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        let data = kinds(&a, KIND_DATA);
        assert_eq!(data.len(), 14);
        for (i, d) in data.iter().enumerate() {
            assert_eq!(d.seq, i as u64 * MSS);
            assert_eq!((d.payload, d.size, d.prio), (MSS as u32, 9000, 1));
            assert!(d.flags.has(PacketFlags::DATA | PacketFlags::TRIMMABLE | PacketFlags::UNSCHEDULED));
            assert_eq!(d.flags.0, PacketFlags::DATA | PacketFlags::TRIMMABLE | PacketFlags::UNSCHEDULED);
        }
        // All of them leave in the same callback: the NIC serializes them back to back.
        assert_eq!(n.sender(0).unwrap().in_flight(), 14);
        // A shorter flow sends all of itself.
        let a = call(&mut n, &flows, Time::ZERO, 2, |n, c| n.start_flow(c, 1));
        assert_eq!(kinds(&a, KIND_DATA).len(), 3);
        // The window follows the network's BDP and can be set explicitly.
        let mut slow = net();
        slow.max_base_rtt = Time::us(5);
        let n2 = Ndp::from_config(&serde_json::Value::Null, &slow).unwrap();
        assert_eq!(n2.params().first_window(&flows[0]), 7); // 62,500 B / 9000 B = 6.9
        let n3 = Ndp::from_config(&json!({"initial_window": 4}), &net()).unwrap();
        assert_eq!(n3.params().first_window(&flows[0]), 4);
        // Without trimming the data is not trimmable.
        let mut n4 = Ndp::from_config(&json!({"trimming": false}), &net()).unwrap();
        let a = call(&mut n4, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        assert!(a.sends.iter().all(|d| !d.flags.has(PacketFlags::TRIMMABLE)));
    }

    #[test]
    fn trimmed_header_is_nacked_and_that_sequence_resent_on_the_next_pull() {
        let mut n = Ndp::from_config(&json!({"initial_window": 4}), &net()).unwrap();
        let flows = vec![flow(0, 0, 1, 20 * MSS)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        let mut data = kinds(&a, KIND_DATA);
        assert_eq!(data.len(), 4);
        // Packet 1 is trimmed by a switch: payload cut, class 0.
        let mut hdr = data.remove(1);
        hdr.flags.set(PacketFlags::TRIMMED);
        hdr.payload = 0;
        hdr.size = 64;
        hdr.prio = 0;
        let t1 = Time::us(3);
        let a = call(&mut n, &flows, t1, 1, |n, c| n.on_packet(c, &hdr));
        let nacks = kinds(&a, KIND_NACK);
        assert_eq!(nacks.len(), 1);
        assert_eq!((nacks[0].seq, nacks[0].dst, nacks[0].prio, nacks[0].size), (MSS, 0, 0, 64));
        assert!(kinds(&a, KIND_ACK).is_empty());
        let pulls = kinds(&a, KIND_PULL);
        assert_eq!(pulls.len(), 1, "the header also queues a PULL; the idle pacer releases it");
        assert_eq!(pulls[0].aux, 1);
        // The NACK alone sends nothing: the retransmission waits for a PULL.
        let a = call(&mut n, &flows, t1 + Time::us(2), 0, |n, c| n.on_packet(c, &nacks[0]));
        assert!(a.sends.is_empty());
        assert_eq!(n.sender(0).unwrap().state(1), Some(PktState::QueuedRtx));
        // The next PULL resends exactly packet 1, ahead of new data (packet 4).
        let a = call(&mut n, &flows, t1 + Time::us(3), 0, |n, c| n.on_packet(c, &pulls[0]));
        let d = kinds(&a, KIND_DATA);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].seq, d[0].payload, d[0].aux2), (MSS, MSS as u32, DATA_RETX));
        assert!(!d[0].flags.has(PacketFlags::UNSCHEDULED), "pulled packets are scheduled");
        assert_eq!(n.flow_stats(0).retx_bytes, MSS);
        // A further PULL (pull number 2) sends new data.
        let mut p2 = pulls[0];
        p2.aux = 2;
        let a = call(&mut n, &flows, t1 + Time::us(4), 0, |n, c| n.on_packet(c, &p2));
        let d = kinds(&a, KIND_DATA);
        assert_eq!((d.len(), d[0].seq, d[0].aux2), (1, 4 * MSS, 0));
        // A stale PULL (number 2 again) sends nothing; a jump to 4 sends two packets.
        let a = call(&mut n, &flows, t1 + Time::us(5), 0, |n, c| n.on_packet(c, &p2));
        assert!(a.sends.is_empty());
        p2.aux = 4;
        let a = call(&mut n, &flows, t1 + Time::us(6), 0, |n, c| n.on_packet(c, &p2));
        let seqs: Vec<u64> = kinds(&a, KIND_DATA).iter().map(|d| d.seq / MSS).collect();
        assert_eq!(seqs, vec![5, 6]);
        assert_eq!(n.flow_stats(0).timeouts, 0);
    }

    /// Drive the receiving host: deliver `arrivals` (time, packet) and fire pacer timers in
    /// time order; return (time, flow, pull number) of every PULL sent.
    fn drive_receiver(
        n: &mut Ndp,
        flows: &[FlowInfo],
        host: NodeId,
        arrivals: Vec<(Time, Packet)>,
    ) -> Vec<(Time, u32, u64)> {
        let mut pulls = Vec::new();
        let mut timers: Vec<(Time, u64)> = Vec::new();
        let mut arr: VecDeque<(Time, Packet)> = arrivals.into();
        loop {
            timers.sort();
            let next_t = timers.first().map(|t| t.0);
            let next_a = arr.front().map(|a| a.0);
            let a = match (next_a, next_t) {
                (None, None) => break,
                (Some(ta), Some(tt)) if ta <= tt => {
                    let (t, p) = arr.pop_front().unwrap();
                    (t, call(n, flows, t, host, |n, c| n.on_packet(c, &p)))
                }
                (Some(_), None) => {
                    let (t, p) = arr.pop_front().unwrap();
                    (t, call(n, flows, t, host, |n, c| n.on_packet(c, &p)))
                }
                _ => {
                    let (t, tok) = timers.remove(0);
                    (t, call(n, flows, t, host, |n, c| n.on_timer(c, tok)))
                }
            };
            let (t, out) = a;
            for p in out.sends.iter().filter(|p| p.kind == KIND_PULL) {
                pulls.push((t, p.flow, p.aux));
            }
            timers.extend(out.timers.iter().copied());
        }
        pulls
    }

    #[test]
    fn pulls_are_paced_one_mtu_apart_and_shared_fairly_across_senders() {
        let mut n = Ndp::from_config(&serde_json::Value::Null, &net()).unwrap();
        // Three senders (hosts 0, 1, 2) to host 3; a burst of 3 packets from each at t0.
        let flows: Vec<FlowInfo> = (0..3).map(|i| flow(i, i, 3, 50 * MSS)).collect();
        let t0 = Time::us(7);
        let mut arrivals = Vec::new();
        for k in 0..3u64 {
            for f in 0..3u32 {
                let pkt = Packet {
                    dst: 3,
                    src: f,
                    flow: f,
                    kind: KIND_DATA,
                    seq: k * MSS,
                    payload: MSS as u32,
                    size: 9000,
                    flags: PacketFlags(PacketFlags::DATA),
                    ..Default::default()
                };
                arrivals.push((t0, pkt));
            }
        }
        let pulls = drive_receiver(&mut n, &flows, 3, arrivals);
        assert_eq!(pulls.len(), 9);
        let gap = Rate::gbps(100).tx_time(Bytes(9000)); // 720 ns
        assert_eq!(gap, Time::ns(720));
        for (i, &(t, _, _)) in pulls.iter().enumerate() {
            assert_eq!(t, t0 + gap * i as u64, "PULL {i}");
        }
        // Round robin over the three flows, pull numbers counting up per flow.
        let order: Vec<(u32, u64)> = pulls.iter().map(|p| (p.1, p.2)).collect();
        assert_eq!(order, vec![(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2), (0, 3), (1, 3), (2, 3)]);
        assert_eq!(n.pull_queue(3).unwrap().released(), 9);
        // After an idle period the next PULL leaves at once.
        let late = t0 + Time::us(100);
        let pkt = Packet {
            dst: 3,
            flow: 0,
            kind: KIND_DATA,
            seq: 3 * MSS,
            payload: MSS as u32,
            size: 9000,
            flags: PacketFlags(PacketFlags::DATA),
            ..Default::default()
        };
        let p = drive_receiver(&mut n, &flows, 3, vec![(late, pkt)]);
        assert_eq!(p, vec![(late, 0, 4)]);
    }

    #[test]
    fn completion_acks_and_withdraws_pending_pulls() {
        let mut n = Ndp::from_config(&serde_json::Value::Null, &net()).unwrap();
        let flows = vec![flow(0, 0, 2, 2 * MSS + 5), flow(1, 1, 2, 10 * MSS)];
        let mk = |f: u32, idx: u64, payload: u64| Packet {
            dst: 2,
            flow: f,
            kind: KIND_DATA,
            seq: idx * MSS,
            payload: payload as u32,
            size: (payload + 40) as u32,
            flags: PacketFlags(PacketFlags::DATA),
            ..Default::default()
        };
        // Flow 1 arrives first (its PULL leaves at once), then flow 0's three packets: their
        // PULLs queue behind the pacer.
        let t = Time::us(1);
        let arr = vec![(t, mk(1, 0, MSS)), (t, mk(0, 0, MSS)), (t, mk(0, 2, 5))];
        let mut outs = Vec::new();
        for (at, p) in &arr {
            outs.push(call(&mut n, &flows, *at, 2, |n, c| n.on_packet(c, p)));
        }
        assert_eq!(n.receiver(0).unwrap().pending_pulls(), 2);
        // The last missing packet completes flow 0: ACK, completion, no PULL, pending gone.
        let a = call(&mut n, &flows, t, 2, |n, c| n.on_packet(c, &mk(0, 1, MSS)));
        assert_eq!(a.completions, vec![0]);
        assert_eq!(kinds(&a, KIND_ACK).len(), 1);
        assert_eq!(kinds(&a, KIND_ACK)[0].ack, 2 * MSS + 5);
        assert!(kinds(&a, KIND_PULL).is_empty());
        assert_eq!(n.receiver(0).unwrap().pending_pulls(), 0);
        // A duplicate after completion is ACKed again, never completes twice, never pulls.
        let a = call(&mut n, &flows, t, 2, |n, c| n.on_packet(c, &mk(0, 1, MSS)));
        assert!(a.completions.is_empty());
        assert_eq!(kinds(&a, KIND_ACK).len(), 1);
        // A trimmed header of a packet already held (of a pulled retransmission: its second
        // token) is ACKed, not NACKed, and returns its PULL.
        let mut h = mk(1, 0, 0);
        h.flags.set(PacketFlags::TRIMMED);
        h.aux = 2;
        let a = call(&mut n, &flows, t, 2, |n, c| n.on_packet(c, &h));
        assert_eq!((kinds(&a, KIND_ACK).len(), kinds(&a, KIND_NACK).len()), (1, 0));
        // The pacer's next slot goes to flow 1 (flow 0's stale ring entry is skipped).
        let tok = outs.iter().flat_map(|o| o.timers.iter()).last().unwrap().1;
        let at = t + n.params().pull_interval;
        let a = call(&mut n, &flows, at, 2, |n, c| n.on_timer(c, tok));
        let p = kinds(&a, KIND_PULL);
        assert_eq!((p.len(), p[0].flow, p[0].aux), (1, 1, 2));
    }

    #[test]
    fn sender_acks_finish_the_flow_and_stop_the_timer() {
        let mut n = Ndp::from_config(&json!({"initial_window": 2}), &net()).unwrap();
        let flows = vec![flow(0, 0, 1, 2 * MSS)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        assert_eq!(a.timers.len(), 1);
        assert_eq!(a.timers[0].0, Time::ms(1));
        for i in 0..2 {
            let mut ack = Packet { dst: 0, flow: 0, kind: KIND_ACK, seq: i * MSS, ..Default::default() };
            ack.src = 1;
            call(&mut n, &flows, Time::us(5), 0, |n, c| n.on_packet(c, &ack));
        }
        assert!(n.sender(0).unwrap().is_done());
        let tok = a.timers[0].1;
        let a = call(&mut n, &flows, Time::ms(1), 0, |n, c| n.on_timer(c, tok));
        assert!(a.sends.is_empty());
        assert_eq!(n.flow_stats(0), FlowStats::default());
    }

    #[test]
    fn timeout_resends_an_unanswered_packet_at_once() {
        // Without trimming a dropped packet gets neither ACK nor NACK.
        let mut n = Ndp::from_config(&json!({"initial_window": 3, "trimming": false, "rto": "100us"}), &net()).unwrap();
        let flows = vec![flow(0, 0, 1, 3 * MSS)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        let tok = a.timers[0].1;
        assert_eq!(a.timers[0].0, Time::us(100));
        // Packets 0 and 2 are ACKed (their PULLs find nothing new to send); packet 1 was dropped.
        for i in [0u64, 2] {
            let ack = Packet { dst: 0, flow: 0, kind: KIND_ACK, seq: i * MSS, ..Default::default() };
            call(&mut n, &flows, Time::us(10), 0, |n, c| n.on_packet(c, &ack));
        }
        let a = call(&mut n, &flows, Time::us(100), 0, |n, c| n.on_timer(c, tok));
        let d = kinds(&a, KIND_DATA);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].seq, d[0].aux2), (MSS, DATA_RETX | DATA_TOKENLESS));
        assert!(d[0].flags.has(PacketFlags::UNSCHEDULED), "sent without a PULL");
        assert_eq!(n.flow_stats(0), FlowStats { retx_bytes: MSS, timeouts: 1, ..FlowStats::default() });
        // The next deadline is one rto after the resend.
        assert_eq!(a.timers.len(), 1);
        assert_eq!(a.timers[0].0, Time::us(200));
    }

    #[test]
    fn receiver_pulls_once_per_token_taking_transmission_whichever_copies_arrive() {
        // A copy carries in `aux` how many of its packet's transmissions so far took a
        // pull-loop token; a timeout resend takes none and repeats its predecessor's count.
        let mut n = Ndp::from_config(&serde_json::Value::Null, &net()).unwrap();
        let flows = vec![flow(0, 0, 2, 8 * MSS)];
        let mk = |idx: u64, tokens: u64, tokenless: bool, trimmed: bool| {
            let mut flags = PacketFlags(PacketFlags::DATA | PacketFlags::TRIMMABLE);
            if tokenless {
                flags.set(PacketFlags::UNSCHEDULED);
            }
            if trimmed {
                flags.set(PacketFlags::TRIMMED);
            }
            let payload = if trimmed { 0 } else { MSS };
            Packet {
                dst: 2,
                flow: 0,
                kind: KIND_DATA,
                seq: idx * MSS,
                payload: payload as u32,
                size: (payload + 40) as u32,
                flags,
                aux: tokens,
                aux2: if tokenless { DATA_RETX | DATA_TOKENLESS } else { 0 },
                ..Default::default()
            }
        };
        let t = Time::us(1);
        let mut pulls_after = |p: Packet| {
            call(&mut n, &flows, t, 2, |n, c| n.on_packet(c, &p));
            let r = n.receiver(0).unwrap();
            r.pulls_sent() + r.pending_pulls() as u64
        };
        // Original, then its timeout resend (the original was late, not lost): one PULL.
        assert_eq!(pulls_after(mk(0, 1, false, false)), 1);
        assert_eq!(pulls_after(mk(0, 1, true, false)), 1);
        // The resend first, then the late original: one PULL.
        assert_eq!(pulls_after(mk(1, 1, true, false)), 2);
        assert_eq!(pulls_after(mk(1, 1, false, false)), 2);
        // The trimmed header of a third copy (another timeout resend): ACKed, no PULL.
        assert_eq!(pulls_after(mk(1, 1, true, true)), 2);
        // A resend of a packet really lost is pulled for (it restores the lost token).
        assert_eq!(pulls_after(mk(2, 1, true, false)), 3);
        // Header of a trimmed original, then its pulled retransmission: two PULLs.
        assert_eq!(pulls_after(mk(3, 1, false, true)), 4);
        assert_eq!(pulls_after(mk(3, 2, false, false)), 5);
        // Original lost; a pulled resend (2nd token) and a timeout resend of that resend both
        // arrive, the later-stamped first: two PULLs, the lost token is restored.
        assert_eq!(pulls_after(mk(4, 2, true, false)), 6);
        assert_eq!(pulls_after(mk(4, 2, false, false)), 7);
        // A pulled duplicate of a held packet returns its own token.
        assert_eq!(pulls_after(mk(0, 2, false, false)), 8);
    }

    #[test]
    fn timeout_resend_repeats_the_token_count_of_the_copy_it_replaces() {
        let mut n = Ndp::from_config(&json!({"initial_window": 2, "trimming": false, "rto": "100us"}), &net()).unwrap();
        let flows = vec![flow(0, 0, 1, 2 * MSS)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        let d = kinds(&a, KIND_DATA);
        assert_eq!((d[0].aux, d[1].aux), (1, 1));
        let tok = a.timers[0].1;
        let a = call(&mut n, &flows, Time::us(100), 0, |n, c| n.on_timer(c, tok));
        let d = kinds(&a, KIND_DATA);
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|p| p.aux == 1 && p.aux2 == DATA_RETX | DATA_TOKENLESS));
    }

    #[test]
    fn nacked_packet_waits_for_a_pull_not_for_the_timer() {
        let mut n = Ndp::from_config(&json!({"initial_window": 3, "rto": "100us"}), &net()).unwrap();
        let flows = vec![flow(0, 0, 1, 10 * MSS)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        let tok = a.timers[0].1;
        for (kind, i) in [(KIND_NACK, 0u64), (KIND_NACK, 1), (KIND_ACK, 2)] {
            let fb = Packet { dst: 0, flow: 0, kind, seq: i * MSS, ..Default::default() };
            call(&mut n, &flows, Time::us(5), 0, |n, c| n.on_packet(c, &fb));
        }
        // A PULL at 90 us resends packet 0; packet 1 stays queued for the next PULL.
        let pull = Packet { dst: 0, flow: 0, kind: KIND_PULL, aux: 1, ..Default::default() };
        let a = call(&mut n, &flows, Time::us(90), 0, |n, c| n.on_packet(c, &pull));
        assert_eq!(kinds(&a, KIND_DATA)[0].seq, 0);
        // The first deadline (100 us) passes: nothing is resent, packet 1 still waits.
        let a = call(&mut n, &flows, Time::us(100), 0, |n, c| n.on_timer(c, tok));
        assert!(a.sends.is_empty());
        assert_eq!(n.sender(0).unwrap().state(1), Some(PktState::QueuedRtx));
        assert_eq!(n.flow_stats(0).timeouts, 0);
        // The timer is re-armed for packet 0's resend (90 us + rto).
        assert_eq!(a.timers.len(), 1);
        assert_eq!(a.timers[0].0, Time::us(190));
    }

    #[test]
    fn stalled_pull_loop_is_restarted_and_banked_pulls_serve_late_nacks() {
        let mut n = Ndp::from_config(&json!({"initial_window": 1, "rto": "100us"}), &net()).unwrap();
        let flows = vec![flow(0, 0, 1, 4 * MSS)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        let tok = a.timers[0].1;
        // Its header is NACKed at 5 us, and the matching PULL is lost.
        let nack = Packet { dst: 0, flow: 0, kind: KIND_NACK, seq: 0, ..Default::default() };
        let a = call(&mut n, &flows, Time::us(5), 0, |n, c| n.on_packet(c, &nack));
        assert!(a.sends.is_empty());
        // The old deadline (100 us) fires: the packet is queued, not in flight; the stall
        // timer runs from the start (no PULL yet): 100 us -> resend packet 0 now.
        let a = call(&mut n, &flows, Time::us(100), 0, |n, c| n.on_timer(c, tok));
        let d = kinds(&a, KIND_DATA);
        assert_eq!((d.len(), d[0].seq, d[0].aux2), (1, 0, DATA_RETX));
        assert_eq!(n.flow_stats(0).timeouts, 1);
        // A PULL that overtook a NACK is banked and serves the NACK at once.
        let ack = Packet { dst: 0, flow: 0, kind: KIND_ACK, seq: 0, ..Default::default() };
        call(&mut n, &flows, Time::us(110), 0, |n, c| n.on_packet(c, &ack));
        let mut pull = Packet { dst: 0, flow: 0, kind: KIND_PULL, aux: 1, ..Default::default() };
        let a = call(&mut n, &flows, Time::us(111), 0, |n, c| n.on_packet(c, &pull));
        assert_eq!(kinds(&a, KIND_DATA)[0].seq, MSS);
        pull.aux = 4; // three more PULLs: packets 2 and 3, then one banked
        let a = call(&mut n, &flows, Time::us(112), 0, |n, c| n.on_packet(c, &pull));
        assert_eq!(kinds(&a, KIND_DATA).len(), 2);
        assert_eq!(n.sender(0).unwrap().banked_pulls(), 1);
        let nack = Packet { dst: 0, flow: 0, kind: KIND_NACK, seq: 3 * MSS, ..Default::default() };
        let a = call(&mut n, &flows, Time::us(113), 0, |n, c| n.on_packet(c, &nack));
        let d = kinds(&a, KIND_DATA);
        assert_eq!((d.len(), d[0].seq), (1, 3 * MSS));
        assert_eq!(n.sender(0).unwrap().banked_pulls(), 0);
    }

    #[test]
    fn mark_lost_queues_for_the_next_pull() {
        let p = NdpConfig::default().resolve(&net()).unwrap();
        let f = flow(0, 0, 1, 10 * MSS);
        let mut s = NdpSender::new(&f, &p);
        let mut out = Actions::new();
        s.send_first_window(Time::ZERO, &p, 3, &mut out);
        assert_eq!(out.sends.len(), 3);
        out.clear();
        s.mark_lost(Time::us(1), &p, 2, &mut out);
        assert!(out.sends.is_empty());
        assert_eq!(s.queued_rtx(), 1);
        s.on_pull(Time::us(2), &p, 1, &mut out);
        assert_eq!(out.sends[0].seq, 2 * MSS);
    }

    #[test]
    fn extra_pulls_from_another_building_block_are_paced_too() {
        let mut n = Ndp::from_config(&serde_json::Value::Null, &net()).unwrap();
        let flows = vec![flow(0, 0, 1, 10 * MSS)];
        // No data has arrived yet (e.g. only a probe did): three PULLs, one MTU time apart.
        let t = Time::us(2);
        let a = call(&mut n, &flows, t, 1, |n, c| n.queue_pulls(c, 0, 3));
        assert_eq!(kinds(&a, KIND_PULL).len(), 1);
        assert_eq!(n.receiver(0).unwrap().pending_pulls(), 2);
        let (at, tok) = a.timers[0];
        assert_eq!(at, t + Time::ns(720));
        let a = call(&mut n, &flows, at, 1, |n, c| n.on_timer(c, tok));
        assert_eq!(kinds(&a, KIND_PULL)[0].aux, 2);
        // Only the receiving host queues PULLs.
        let a = call(&mut n, &flows, at, 0, |n, c| n.queue_pulls(c, 0, 3));
        assert!(a.sends.is_empty() && a.timers.is_empty());
    }

    #[test]
    fn config_errors_name_the_field() {
        let cases = [
            (json!({"initial_window": 0}), "transport.initial_window"),
            (json!({"rto": 0}), "transport.rto"),
            (json!({"rto": "soon"}), "transport.rto"),
            (json!({"pull_rate": 0}), "transport.pull_rate"),
            (json!({"data_prio": 8}), "transport.data_prio"),
            (json!({"trimming": "yes"}), "transport.trimming"),
            (json!({"cwnd": 3}), "transport.cwnd"),
        ];
        for (cfg, field) in cases {
            let e = Ndp::from_config(&cfg, &net()).err().unwrap_or_else(|| panic!("{cfg} accepted"));
            assert_eq!(e.field(), field, "{cfg}: {e}");
            assert!(e.to_string().contains(field), "{e}");
        }
        let mut one = net();
        one.priorities = 1;
        assert_eq!(Ndp::from_config(&serde_json::Value::Null, &one).unwrap().params().data_prio, 0);
        let mut tiny = net();
        tiny.mtu = Bytes(40);
        assert_eq!(Ndp::from_config(&serde_json::Value::Null, &tiny).err().unwrap().field(), "network.mtu");
        let p = Ndp::from_config(&json!({"pull_rate": "40Gbps", "rto": "200us"}), &net()).unwrap();
        assert_eq!(p.params().pull_interval, Time::ns(1800));
        assert_eq!(p.params().rto, Time::us(200));
    }

    // ------------------------------------------------------------- NDP + Aeolus

    fn aeolus_ndp(extra: serde_json::Value) -> Ndp {
        let mut cfg = json!({"aeolus": true, "initial_window": 4});
        for (k, v) in extra.as_object().unwrap() {
            cfg[k] = v.clone();
        }
        Ndp::from_config(&cfg, &net()).unwrap()
    }

    fn ack_of(d: &Packet, unscheduled: bool) -> Packet {
        Packet {
            dst: 0,
            src: 1,
            flow: d.flow,
            kind: KIND_ACK,
            seq: d.seq,
            aux2: if unscheduled { ACK_UNSCHEDULED } else { 0 },
            ..Default::default()
        }
    }

    fn pull(no: u64) -> Packet {
        Packet { dst: 0, src: 1, flow: 0, kind: KIND_PULL, aux: no, ..Default::default() }
    }

    #[test]
    fn aeolus_first_window_is_unscheduled_and_the_probe_follows_it() {
        let mut n = aeolus_ndp(json!({}));
        assert!(!n.params().trimming, "aeolus turns trimming off by default");
        let flows = vec![flow(0, 0, 1, 10 * MSS + 5)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        assert_eq!(a.sends.len(), 5);
        for (i, d) in a.sends[..4].iter().enumerate() {
            assert_eq!((d.kind, d.seq), (KIND_DATA, i as u64 * MSS));
            assert_eq!(d.flags.0, PacketFlags::DATA | PacketFlags::UNSCHEDULED, "not trimmable");
        }
        // The probe: last in the NIC, same class as the data, control size, never dropped
        // selectively; it names the last unscheduled packet and carries the flow size.
        let pr = a.sends[4];
        assert_eq!((pr.kind, pr.prio, pr.size, pr.aux, pr.seq, pr.ack), (KIND_PROBE, 1, 64, 3, 3 * MSS, 10 * MSS + 5));
        assert!(!pr.flags.has(PacketFlags::UNSCHEDULED) && !pr.is_data());
        // A flow shorter than the window probes after its last packet.
        let flows = vec![flow(0, 0, 1, 2 * MSS)];
        let mut n = aeolus_ndp(json!({}));
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        assert_eq!(a.sends.iter().map(|p| p.kind).collect::<Vec<_>>(), vec![KIND_DATA, KIND_DATA, KIND_PROBE]);
        assert_eq!(a.sends[2].aux, 1);
        // Without the probe: no probe.
        let mut n = aeolus_ndp(json!({"aeolus_probe": false}));
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        assert!(kinds(&a, KIND_PROBE).is_empty());
    }

    /// Sender: packet 1 of the first window (0..4) is dropped by a selective-dropping
    /// switch. The ACK of packet 2 proves it lost (SACK in the middle) long before the
    /// timeout; the next PULL resends it, as a scheduled packet, ahead of new data; it is
    /// never resent again (later SACKs, the probe ACK, further PULLs, the old deadline).
    #[test]
    fn aeolus_sack_in_the_middle_resends_a_lost_packet_once_on_the_next_pull() {
        let mut n = aeolus_ndp(json!({"rto": "100us"}));
        let flows = vec![flow(0, 0, 1, 10 * MSS)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        let data = kinds(&a, KIND_DATA);
        let tok = a.timers[0].1;
        // ACK of 0: nothing lost. ACK of 2: 1 is lost and queued (no send without a PULL).
        let a = call(&mut n, &flows, Time::us(3), 0, |n, c| n.on_packet(c, &ack_of(&data[0], true)));
        assert!(a.sends.is_empty());
        let a = call(&mut n, &flows, Time::us(4), 0, |n, c| n.on_packet(c, &ack_of(&data[2], true)));
        assert!(a.sends.is_empty());
        assert_eq!(n.sender(0).unwrap().state(1), Some(PktState::QueuedRtx));
        assert_eq!(n.sender(0).unwrap().aeolus().unwrap().detected_lost(), 1);
        // A plain (non-SACK) ACK proves nothing: packet 3 stays in flight.
        assert_eq!(n.sender(0).unwrap().state(3), Some(PktState::InFlight));
        // The next PULL resends 1, scheduled.
        let a = call(&mut n, &flows, Time::us(5), 0, |n, c| n.on_packet(c, &pull(1)));
        let d = kinds(&a, KIND_DATA);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].seq, d[0].aux2), (MSS, DATA_RETX));
        assert!(!d[0].flags.has(PacketFlags::UNSCHEDULED), "a pulled resend is scheduled");
        // ACK of 3 and the probe ACK: nothing more lost; 1 is not queued again.
        call(&mut n, &flows, Time::us(6), 0, |n, c| n.on_packet(c, &ack_of(&data[3], true)));
        let pa = Packet { dst: 0, flow: 0, kind: KIND_PROBE_ACK, aux: 3, ..Default::default() };
        call(&mut n, &flows, Time::us(6), 0, |n, c| n.on_packet(c, &pa));
        assert_eq!(n.sender(0).unwrap().queued_rtx(), 0);
        let a = call(&mut n, &flows, Time::us(7), 0, |n, c| n.on_packet(c, &pull(3)));
        let seqs: Vec<u64> = kinds(&a, KIND_DATA).iter().map(|d| d.seq / MSS).collect();
        assert_eq!(seqs, vec![4, 5], "new data only");
        // The first deadline (100 us) passes: nothing to time out (1 was resent at 5 us and
        // is timed from then; ACK it).
        call(&mut n, &flows, Time::us(8), 0, |n, c| n.on_packet(c, &ack_of(&d[0], false)));
        let a = call(&mut n, &flows, Time::us(100), 0, |n, c| n.on_timer(c, tok));
        assert!(kinds(&a, KIND_DATA).iter().all(|d| d.seq != MSS));
        let s = n.sender(0).unwrap();
        assert_eq!(s.aeolus().unwrap().resent(), 1);
        assert_eq!(n.flow_stats(0), FlowStats { retx_bytes: MSS, timeouts: 0, ..FlowStats::default() });
    }

    /// Sender: the last two unscheduled packets are dropped (tail loss). No later packet
    /// reveals them; the probe's ACK does, and the next two PULLs resend them, once each.
    #[test]
    fn aeolus_probe_ack_reveals_tail_losses_without_a_timeout() {
        let mut n = aeolus_ndp(json!({}));
        let flows = vec![flow(0, 0, 1, 4 * MSS)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        let data = kinds(&a, KIND_DATA);
        for d in &data[..2] {
            call(&mut n, &flows, Time::us(3), 0, |n, c| n.on_packet(c, &ack_of(d, true)));
        }
        // Their PULLs find nothing new: banked.
        call(&mut n, &flows, Time::us(4), 0, |n, c| n.on_packet(c, &pull(2)));
        assert_eq!(n.sender(0).unwrap().banked_pulls(), 2);
        assert_eq!(n.sender(0).unwrap().state(2), Some(PktState::InFlight));
        // The probe ACK: 2 and 3 are lost; the two banked PULLs resend them at once.
        let pa = Packet { dst: 0, flow: 0, kind: KIND_PROBE_ACK, aux: 3, ..Default::default() };
        let a = call(&mut n, &flows, Time::us(5), 0, |n, c| n.on_packet(c, &pa));
        let seqs: Vec<u64> = kinds(&a, KIND_DATA).iter().map(|d| d.seq / MSS).collect();
        assert_eq!(seqs, vec![2, 3]);
        assert!(kinds(&a, KIND_DATA).iter().all(|d| d.aux2 == DATA_RETX && !d.flags.has(PacketFlags::UNSCHEDULED)));
        // The receiver's extra PULLs for them (3, 4) now find nothing; a second probe ACK
        // (duplicate) declares nothing.
        let a = call(&mut n, &flows, Time::us(6), 0, |n, c| n.on_packet(c, &pull(4)));
        assert!(a.sends.is_empty());
        call(&mut n, &flows, Time::us(6), 0, |n, c| n.on_packet(c, &pa));
        assert_eq!(n.sender(0).unwrap().queued_rtx(), 0);
        assert_eq!(n.flow_stats(0), FlowStats { retx_bytes: 2 * MSS, timeouts: 0, ..FlowStats::default() });
        assert_eq!(n.sender(0).unwrap().aeolus().unwrap().resent(), 2);
    }

    /// Receiver: unscheduled packets 0 and 2 of 4 arrive, then the probe naming 3. Each
    /// original unscheduled arrival is ACKed with the SACK bit; packet 2 proves 1 lost and
    /// the probe proves 3 lost, and each loss adds one PULL to the one per arrival: four
    /// PULLs in all, as many as the window's tokens, paced one MTU time apart.
    #[test]
    fn aeolus_receiver_pulls_for_every_declared_loss() {
        let mut n = aeolus_ndp(json!({}));
        let flows = vec![flow(0, 0, 1, 10 * MSS)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        let sent = a.sends.clone();
        let t = Time::us(3);
        let arrivals = vec![(t, sent[0]), (t, sent[2]), (t + Time::ns(10), sent[4])];
        // Check the feedback of each arrival first.
        let mut m = aeolus_ndp(json!({}));
        let a0 = call(&mut m, &flows, t, 1, |n, c| n.on_packet(c, &sent[0]));
        assert_eq!(kinds(&a0, KIND_ACK)[0].aux2, ACK_UNSCHEDULED);
        let a2 = call(&mut m, &flows, t, 1, |n, c| n.on_packet(c, &sent[2]));
        assert_eq!(kinds(&a2, KIND_ACK)[0].aux2, ACK_UNSCHEDULED);
        assert_eq!(m.receiver(0).unwrap().aeolus().unwrap().declared_lost(), 1);
        assert_eq!(m.receiver(0).unwrap().pending_pulls(), 2, "one for 2, one for lost 1");
        let ap = call(&mut m, &flows, t, 1, |n, c| n.on_packet(c, &sent[4]));
        let pa = kinds(&ap, KIND_PROBE_ACK);
        assert_eq!((pa.len(), pa[0].aux, pa[0].dst, pa[0].prio), (1, 3, 0, 0));
        assert_eq!(m.receiver(0).unwrap().aeolus().unwrap().declared_lost(), 2);
        // A scheduled resend is ACKed without the SACK bit and declares nothing.
        let mut r1 = sent[1];
        r1.flags = PacketFlags(PacketFlags::DATA);
        r1.aux2 = DATA_RETX;
        let a = call(&mut m, &flows, t, 1, |n, c| n.on_packet(c, &r1));
        assert_eq!(kinds(&a, KIND_ACK)[0].aux2, 0);
        // Paced: the four PULLs leave one MTU time apart, numbered 1..4.
        let pulls = drive_receiver(&mut n, &flows, 1, arrivals);
        let gap = n.params().pull_interval;
        assert_eq!(pulls.iter().map(|p| p.2).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
        for (i, p) in pulls.iter().enumerate() {
            assert_eq!(p.0, t + gap * i as u64);
        }
        // A probe for a flow whose packets were all lost still starts its pull loop.
        let mut m = aeolus_ndp(json!({}));
        let a = call(&mut m, &flows, t, 1, |n, c| n.on_packet(c, &sent[4]));
        assert_eq!(kinds(&a, KIND_PULL).len(), 1);
        assert_eq!(m.receiver(0).unwrap().pending_pulls(), 3);
    }

    /// Without the probe a tail loss is found only by Aeolus' class (3): a PULL that finds
    /// no lost and no new packet resends the oldest unacknowledged unscheduled packet, once.
    #[test]
    fn aeolus_without_probe_resends_unacked_packets_on_surplus_pulls_once() {
        let mut n = aeolus_ndp(json!({"aeolus_probe": false}));
        let flows = vec![flow(0, 0, 1, 4 * MSS)];
        let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
        let data = kinds(&a, KIND_DATA);
        for d in &data[..3] {
            call(&mut n, &flows, Time::us(3), 0, |n, c| n.on_packet(c, &ack_of(d, true)));
        }
        // Three PULLs (one per arrival): the first resends 3, the others are banked.
        let a = call(&mut n, &flows, Time::us(4), 0, |n, c| n.on_packet(c, &pull(3)));
        let d = kinds(&a, KIND_DATA);
        assert_eq!((d.len(), d[0].seq, d[0].aux2), (1, 3 * MSS, DATA_RETX));
        assert_eq!(n.sender(0).unwrap().banked_pulls(), 2);
        assert_eq!(n.flow_stats(0).timeouts, 0);
    }

    #[test]
    fn aeolus_config_errors_name_the_field() {
        let e = Ndp::from_config(&json!({"aeolus": true, "trimming": true}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.trimming", "{e}");
        let e = Ndp::from_config(&json!({"aeolus_probe": false}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.aeolus_probe", "{e}");
        let e = Ndp::from_config(&json!({"aeolus": 1}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.aeolus", "{e}");
        let p = Ndp::from_config(&json!({"aeolus": true, "trimming": false}), &net()).unwrap();
        assert_eq!(p.params().aeolus, Some(AeolusConfig { mode: UnschedMode::SelectiveDrop, probe: true }));
        assert!(Ndp::from_config(&serde_json::Value::Null, &net()).unwrap().params().aeolus.is_none());
    }
}
