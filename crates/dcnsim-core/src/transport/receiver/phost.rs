//! pHost: receiver-driven transport with per-packet tokens (Gao, Narayan, Kumar, Agarwal,
//! Ratnasamy, Shenker, "pHost: Distributed Near-Optimal Datacenter Transport Over Commodity
//! Network Fabric", CoNEXT 2015), optionally with the Aeolus first-RTT building block (Hu et
//! al., IEEE/ACM ToN 2021, §III; see "pHost + Aeolus").
//!
//! Sources. The paper's full text is not in this project's reference corpora, so no section
//! of it is cited here. The mechanism follows the paper's design as the task states it and
//! as the papers that use pHost as a baseline summarise it (Aeolus §II-D, RPO §I-II); every number comes from the authors' own public simulator
//! (NetSys/simulator: the "capability" flow and host its pHost runs use, and the pHost
//! configuration in its `py/run_experiments.py`). Each parameter says where its default
//! comes from.
//!
//! # What is modelled
//! - **RTS**: at flow start the source sends a request-to-send carrying the flow
//!   size to the destination (control class). Every data packet also carries the flow size,
//!   so a lost RTS is replaced by the first data packet that arrives.
//! - **Free tokens** (the first BDP of every flow): the source holds, at flow start, one token for
//!   each of the first `free_tokens` packets (one BDP) and sends them at once, back to back at
//!   line rate, without waiting for the destination. This phase is isolated in
//!   [`FreeTokens`] so that a generic Aeolus building block can flag these packets
//!   `UNSCHEDULED` (via [`FreeTokens::flags`]) and recognise the last one ([`is_free_data`],
//!   [`FreeTokens::count`]) to add its probe; everything else in pHost is unchanged by that.
//! - **Tokens**: each destination emits one token per MTU transmission time at its
//!   line rate (a paced timer), to one flow at a time. A token names one packet of the flow
//!   (so the same mechanism retransmits), carries the data priority the destination wants,
//!   the flow's remaining bytes and a time to live. The source sends exactly one data packet
//!   per token it uses.
//! - **Destination policy**: SRPT. Among its flows with a pending RTS that are
//!   eligible (below), the destination gives the next token to the flow with the fewest
//!   bytes still missing (ties: earlier start, then lower flow id).
//! - **Source policy**: among its flows that hold an unexpired token, the source
//!   sends for the flow with the fewest remaining bytes (as last reported by that flow's
//!   destination in a token; ties: earlier start, lower id), using that flow's token that
//!   expires first. Expired tokens are discarded, never used (so a source cannot hoard
//!   tokens it does not use). The source decides only when its NIC is idle (pull-based: at most one data
//!   packet waits in the NIC), so its choice uses the tokens it holds at that moment.
//! - **Downgrade of unresponsive sources**: a destination counts, per flow, the tokens
//!   it sent that are not yet answered (tokens issued after the newest token whose data
//!   packet arrived). A flow with `downgrade_tokens` or more unanswered tokens is skipped, so
//!   the tokens go to other flows, until data arrives again or `downgrade_time` has passed
//!   since its last token; then it gets one more token (a probe) and, if that is not
//!   answered either, waits `downgrade_time` again.
//! - **Retransmission** (receiver-driven): once a destination has issued a token for
//!   every packet of a flow, it waits `retx_timeout` after the last token; then it issues
//!   tokens again, in SRPT order with the other flows, for each packet still missing (one
//!   round over the missing packets), and waits again after the round's last token. A lost
//!   data packet, a token lost or expired at the source and a free packet that was never
//!   sent are all repaired this way. Each round counts as one timeout in [`FlowStats`].
//! - **Completion**: when the destination holds every byte it reports the flow complete and
//!   sends an ACK (control class); the source then forgets the flow.
//! - **Priorities** (commodity switches with a few strict-priority classes): control
//!   packets (RTS, token, ACK) in `ctrl_prio` (0, highest; the authors' simulator sends all
//!   control packets in its top class); free-token data in `free_prio` (1); token-triggered
//!   data in `data_prio` (2). Unscheduled (free-token) data goes ahead of scheduled data:
//!   Aeolus §II-D counts pHost, with Homa, among the designs that give first-RTT packets
//!   precedence over scheduled ones. The authors' simulator, as configured by its script, ends up with all
//!   data in one class below control (its third level applies to flows above
//!   `capability_prio_thresh`, which the script leaves at 0): `free_prio = 2` reproduces
//!   that. The destination writes `data_prio` into each token (the simulator fixes the class
//!   at the source; the effect is the same).
//!
//! # Configuration (`protocol = "phost"`)
//! T below is the MTU transmission time at the fastest host rate (`network.mtu` at
//! `NetInfo::max_host_rate`; 1.2 us for 1500 B at 10 Gbps). The authors' simulator states
//! its timers in units of T.
//!
//! | field | default | meaning (authors' simulator name) |
//! |---|---|---|
//! | `free_tokens` | BDP in packets: ceil(max host rate x max base RTT / MTU) | free tokens per flow (`capability_initial` = 8, the BDP of their topology) |
//! | `free_tokens_short_only` | false | true: only flows of at most `free_tokens` packets get free tokens (what the authors' simulator does) |
//! | `reserve_free` | true | the destination keeps token-driven data out of the downlink time announced free packets will take (see below; the authors' `CAPABILITY_HOLD`) |
//! | `token_ttl` | 1.5 T | lifetime of a token at the source (`capability_timeout` = 1.5) |
//! | `downgrade_tokens` | BDP in packets (as `free_tokens`) | unanswered tokens that downgrade a flow (`capability_window` = 8 = BDP) |
//! | `downgrade_time` | 25 T | how long a downgraded flow is skipped (`capability_window_timeout` = 25) |
//! | `retx_timeout` | max(9 T, max base RTT + 2 T) | wait after a flow's last token before re-issuing tokens for missing packets (`capability_resend_timeout` = 9), see below |
//! | `rts_timeout` | 10 x max base RTT | a source that heard nothing (no token, no ACK) for this long resends its RTS |
//! | `ctrl_prio`, `free_prio`, `data_prio` | 0, 1, 2 (clamped to `network.priorities` - 1); with `aeolus`, `free_prio` = `data_prio` | classes, see above |
//! | `aeolus` | false | add the Aeolus building block (see below); run with `network.queue_policy = "selective_drop"` |
//! | `aeolus_probe` | true | with `aeolus`: false = Aeolus without the probe (Aeolus Fig. 22) |
//!
//! # pHost + Aeolus (`aeolus = true`)
//! The free-token packets (the first BDP) are Aeolus' unscheduled packets (§III-A): flagged
//! `UNSCHEDULED` through [`FreeTokens::flags`], so a `selective_drop` switch drops them above
//! its threshold while token-driven (scheduled) packets are only dropped on overflow. Tokens
//! are Aeolus' credits. Mapping and choices:
//! - **One FIFO** (§III-B): by default free data rides the scheduled data's class
//!   (`free_prio` = `data_prio`), so the per-queue threshold sees the scheduled backlog and
//!   scheduled packets are never behind unscheduled ones in priority. (pHost's own default
//!   puts free data above scheduled data, the opposite of Aeolus' "scheduled packet first";
//!   setting `free_prio` explicitly then needs `selective.per_port = true`.)
//! - **End of the free phase and probe** (§III-A, §III-C): the source leaves the free phase
//!   when it has sent its last free packet, when its free tokens expired unused, or at once
//!   when its first (scheduled) token arrives; in the last case the free tokens it still
//!   holds are discarded and those packets go as scheduled packets. Right after the last
//!   free packet sent (same class, so behind it in every FIFO) it sends the probe, carrying
//!   that packet's index and the flow size (a destination that lost the RTS and every free
//!   packet learns the flow from it). A flow whose free tokens all expired unsent sends no
//!   probe (there is no last packet to name); pHost's retransmission round covers it.
//! - **Loss detection at the destination**: a pHost token names the packet it pays for, so
//!   the destination, not the source, decides what is resent; it therefore applies Aeolus'
//!   inference itself ([`AeolusReceiver`]): a free packet's arrival proves the earlier free
//!   packets not held lost, and the probe proves it for the tail; the probe also tells it
//!   that free packets after the one it names were never sent. Aeolus' per-packet ACKs and
//!   probe ACK exist to carry this knowledge to a source that picks what to resend; a pHost
//!   source never picks, so they are not sent (this saves one 64 B packet per free packet
//!   on the reverse path and changes no decision).
//! - **Resent once, scheduled, first** (§III-C order): each packet declared lost (or unsent)
//!   gets exactly one token, ahead of tokens for new packets, subject to pHost's usual
//!   start time, downgrade and SRPT rules. If that scheduled copy is lost as well, pHost's
//!   retransmission round (`retx_timeout` after the flow's last token) is the last resort;
//!   a token for a lost packet restarts that wait.
//! - **Downlink reservation** (`reserve_free`): free packets declared lost release the
//!   downlink time booked for them, since they will not arrive (without this a 16-to-1
//!   incast idles the receiver link for the dropped packets' booked time: measured 8.5%
//!   above the line-rate bound instead of 1.4%).
//! - Without the probe (`aeolus_probe = false`) tail losses are found by the
//!   retransmission round.
//!
//! # Choices where the paper leaves room
//! - **Token lifetime** is counted from the token's arrival at the source: the token carries
//!   its TTL and the source computes the expiry (the authors' simulator does this; an
//!   absolute expiry stamped at the destination would, with a 1.5 T lifetime, expire before
//!   the token even arrives).
//! - **Free-token expiry**: free tokens expire `free_tokens x T + token_ttl` after the flow
//!   starts (the authors' simulator), i.e. they are meant to be used in the initial burst.
//! - **When scheduled tokens start.** With free tokens for every flow (the first BDP, as the
//!   paper describes), a destination that issued tokens as soon as the RTS arrives would have
//!   them reach the source while it is still sending its free burst: the source can send one
//!   packet per T, so one of the two streams would expire and need a retransmission round.
//!   The destination therefore starts a flow's scheduled tokens at t1 + n x T_src - RTT,
//!   where t1 is the arrival of the flow's first free packet, n its free-packet count, T_src
//!   the MTU time at the source's rate and RTT the flow's base RTT: the first token then
//!   reaches the source just as its free burst ends and its data follows the last free packet
//!   back to back (before any free packet arrives, the provisional start is RTS arrival +
//!   n x T_src). The authors' simulator avoids the overlap differently: flows longer than
//!   one BDP get no free tokens at all (`free_tokens_short_only = true`).
//! - **Free data on the downlink** (`reserve_free`). Free packets are unscheduled: tokens at
//!   line rate plus a free burst overfill the destination's link, and since tokens keep the
//!   link exactly busy the excess never drains. In a 16-to-1 incast of 100 KB flows without
//!   it, the 96 free packets stay queued for the whole run, every token's loop takes ~115 us,
//!   all flows get downgraded in turn and retransmit spuriously, and SRPT order is lost
//!   (all 16 finish within 1.12-1.40 ms). So each RTS books n x T of the downlink after what
//!   is already booked (the data of tokens issued so far, each token booking until its issue
//!   time + the flow's base RTT), and a flow's tokens start no earlier than the end of the
//!   booked free time minus its base RTT: their data then arrives just after the free data.
//!   The authors' simulator has the same idea as a slot count (`CAPABILITY_HOLD`: skip one
//!   token slot per announced free packet), disabled there because their long flows send no
//!   free packets. `reserve_free = false` gives the destination that ignores free data.
//! - **Downgrade** counts only tokens the destination actually sent (free tokens are not
//!   sent, and their data may legitimately queue behind other flows' free bursts). "Tokens
//!   after the newest answered one" is the authors' simulator's gap count.
//! - **Retransmission timeout floor.** By our estimate the authors' 9 T (2.7 us) was about
//!   one base RTT plus a packet or two in the configuration their script runs (40 Gbps,
//!   0.2 us per link, cut-through switches, 4-link paths); with longer links a fixed 9 T
//!   fires before the last token's data can be back (1 us links at 10 Gbps: base
//!   RTT 11.1 us > 9 T = 10.8 us) and every flow would retransmit its tail. The default is
//!   therefore at least the largest base RTT plus 2 T (the sender's and the receiver's NIC
//!   may each be busy with one packet).
//! - **Retransmission timer** for a flow sent entirely on free tokens: RTS arrival +
//!   n x T_src + `retx_timeout` (the authors wait twice the free burst's duration).
//! - **Receiver pacing rate**: the destination paces at the fastest host rate of the network
//!   (hosts usually share one rate; the transport is not told each host's own rate).
//! - **RTS retransmission and the completion ACK** are not described in the paper (its
//!   simulator assumes control packets are never lost). Here a source resends its RTS if it
//!   heard nothing for `rts_timeout`; a destination answers an RTS for a flow it already
//!   completed with the ACK again, so a lost ACK is repaired too.
//! - **Source NIC**: the source only hands a data packet to its NIC when the NIC is idle;
//!   control packets (RTS, its own tokens as a destination) go in whenever they are made and
//!   overtake queued data by priority.
//!
//! # Packet fields (this module's meaning)
//! `kind`: [`KIND_RTS`], [`KIND_TOKEN`], [`KIND_DATA`], [`KIND_ACK`].
//! RTS: `seq` = flow size. Token: `seq` = byte offset of the packet to send, `aux` = token
//! serial, `ack` = bytes the destination still misses, `ts` = token TTL, `rank` = data
//! priority. Data: `seq`/`payload` as usual, `aux` = serial of the token used, `ack` = flow
//! size, `aux2` bit [`AUX2_FREE`] = sent on a free token, `ts` = send time. Aeolus probe
//! ([`KIND_PROBE`], `ctrl_size`, class `free_prio`): `seq`/`aux` = offset/index of the last
//! free packet sent, `ack` = flow size.

use crate::config::FieldError;
use crate::packet::{FlowId, NodeId, Packet, PacketFlags};
use crate::transport::aeolus::{self, AeolusConfig, AeolusReceiver, AeolusSender, UnschedMode};
use crate::transport::{token, untoken, Ctx, FlowInfo, FlowStats, NetInfo, TimerSlot, Transport};
use crate::units::{Bytes, Time};
use serde::Deserialize;
use std::collections::VecDeque;
use std::fmt;

/// Request to send (source -> destination), `seq` = flow size.
pub const KIND_RTS: u8 = 1;
/// Token (destination -> source).
pub const KIND_TOKEN: u8 = 2;
/// Data packet.
pub const KIND_DATA: u8 = 3;
/// Completion ACK (destination -> source).
pub const KIND_ACK: u8 = 4;
/// `aux2` bit of a data packet sent on a free token.
pub const AUX2_FREE: u32 = 1;
/// Aeolus probe (source -> destination, after the last free-token packet).
pub const KIND_PROBE: u8 = 5;

const TIMER_PACER: u8 = 1;
const TIMER_RTS: u8 = 2;

/// True for a pHost data packet sent on a free token (the first-BDP phase).
pub fn is_free_data(p: &Packet) -> bool {
    p.kind == KIND_DATA && p.is_data() && p.aux2 & AUX2_FREE != 0
}

/// The first-BDP phase ("free tokens"), kept apart from the token machinery so that a
/// generic Aeolus building block can reuse pHost with its own marking of these packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeTokens {
    /// Packets a flow sends at start without tokens (one BDP).
    pub packets: u64,
    /// Only flows of at most `packets` packets get free tokens.
    pub short_flows_only: bool,
    /// Priority class of free-token data.
    pub prio: u8,
    /// Extra [`PacketFlags`] bits set on free-token data (none for pHost; an Aeolus wrapper
    /// sets `PacketFlags::UNSCHEDULED`).
    pub flags: u16,
}

impl FreeTokens {
    /// Free tokens of a flow of `flow_pkts` packets (packets 0..count are sent on them).
    pub fn count(&self, flow_pkts: u64) -> u64 {
        if self.short_flows_only && flow_pkts > self.packets {
            0
        } else {
            flow_pkts.min(self.packets)
        }
    }
    /// One BDP in MTU-sized packets, rounded up.
    pub fn bdp_packets(net: &NetInfo) -> u64 {
        net.max_host_rate.bdp(net.max_base_rtt).0.div_ceil(net.mtu.0.max(1))
    }
}

/// The `[transport]` table of `protocol = "phost"`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PhostConfig {
    pub free_tokens: Option<u64>,
    pub free_tokens_short_only: bool,
    pub reserve_free: Option<bool>,
    pub token_ttl: Option<Time>,
    pub downgrade_tokens: Option<u64>,
    pub downgrade_time: Option<Time>,
    pub retx_timeout: Option<Time>,
    pub rts_timeout: Option<Time>,
    pub ctrl_prio: Option<u8>,
    pub free_prio: Option<u8>,
    pub data_prio: Option<u8>,
    /// Add the Aeolus building block (see "pHost + Aeolus").
    pub aeolus: bool,
    /// With `aeolus`: send the probe after the free-token packets (Aeolus Fig. 22).
    pub aeolus_probe: Option<bool>,
}

/// Errors of the `phost` table.
#[derive(Debug, Clone, PartialEq)]
pub enum PhostConfigError {
    /// An unknown field, a value of the wrong type or an unparsable time.
    Parse(FieldError),
    /// A well-formed value outside its range; `fix` says what to write instead.
    OutOfRange { field: String, value: String, fix: String },
}

impl PhostConfigError {
    /// The offending key, e.g. `transport.token_ttl`.
    pub fn field(&self) -> String {
        match self {
            PhostConfigError::Parse(e) => e.field(),
            PhostConfigError::OutOfRange { field, .. } => format!("transport.{field}"),
        }
    }
}

impl fmt::Display for PhostConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhostConfigError::Parse(e) => write!(f, "{e}"),
            PhostConfigError::OutOfRange { value, fix, .. } => write!(f, "{} = {value}: {fix}", self.field()),
        }
    }
}

impl std::error::Error for PhostConfigError {}

impl From<FieldError> for PhostConfigError {
    fn from(e: FieldError) -> Self {
        PhostConfigError::Parse(e)
    }
}

/// Resolved pHost parameters (see the module documentation for each).
#[derive(Clone, Debug, PartialEq)]
pub struct PhostParams {
    pub mtu: u64,
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    /// T: MTU transmission time at the destination's (fastest host) rate: token spacing.
    pub token_interval: Time,
    pub free: FreeTokens,
    /// Keep token-driven data out of the downlink time announced free packets occupy.
    pub reserve_free: bool,
    pub token_ttl: Time,
    pub downgrade_tokens: u64,
    pub downgrade_time: Time,
    pub retx_timeout: Time,
    pub rts_timeout: Time,
    pub ctrl_prio: u8,
    pub data_prio: u8,
    /// The Aeolus building block, when enabled.
    pub aeolus: Option<AeolusConfig>,
}

impl PhostConfig {
    pub fn resolve(&self, net: &NetInfo) -> Result<PhostParams, PhostConfigError> {
        let range =
            |field: &str, value: String, fix: String| PhostConfigError::OutOfRange { field: field.into(), value, fix };
        let classes = net.priorities.clamp(1, 8);
        let prio = |field: &str, v: Option<u8>, default: u8| -> Result<u8, PhostConfigError> {
            match v {
                None => Ok(default.min(classes - 1)),
                Some(p) if p < classes => Ok(p),
                Some(p) => Err(range(
                    field,
                    p.to_string(),
                    format!("network.priorities is {classes}: use a class from 0 to {}", classes - 1),
                )),
            }
        };
        let mtu = net.mtu.0;
        let t = net.max_host_rate.tx_time(net.mtu);
        let pos_time = |field: &str, v: Option<Time>, default: Time| -> Result<Time, PhostConfigError> {
            match v {
                None => Ok(default),
                Some(x) if x > Time::ZERO => Ok(x),
                Some(x) => Err(range(field, format!("\"{x}\""), "give a positive time, e.g. \"2us\"".into())),
            }
        };
        let free_pkts = self.free_tokens.unwrap_or_else(|| FreeTokens::bdp_packets(net));
        let downgrade_tokens = match self.downgrade_tokens {
            None => FreeTokens::bdp_packets(net).max(1),
            Some(0) => {
                return Err(range(
                    "downgrade_tokens",
                    "0".into(),
                    "at least 1 unanswered token must be allowed; the default is one BDP of tokens".into(),
                ))
            }
            Some(n) => n,
        };
        if !self.aeolus && self.aeolus_probe.is_some() {
            return Err(range(
                "aeolus_probe",
                self.aeolus_probe.unwrap_or(true).to_string(),
                "the probe is part of Aeolus: set aeolus = true as well, or remove aeolus_probe".into(),
            ));
        }
        let data_prio = prio("data_prio", self.data_prio, 2)?;
        // With Aeolus, free (unscheduled) data shares the scheduled data's FIFO by default
        // (Aeolus §III-B), so that scheduled packets come first through selective dropping.
        let free_prio = prio("free_prio", self.free_prio, if self.aeolus { data_prio } else { 1 })?;
        Ok(PhostParams {
            mtu,
            mss: net.mss(),
            header: net.header.0,
            ctrl_size: net.ctrl_size.0,
            token_interval: t,
            free: FreeTokens {
                packets: free_pkts,
                short_flows_only: self.free_tokens_short_only,
                prio: free_prio,
                flags: if self.aeolus { aeolus::UNSCHEDULED_FLAGS } else { 0 },
            },
            reserve_free: self.reserve_free.unwrap_or(true),
            token_ttl: pos_time("token_ttl", self.token_ttl, t.mul_f64(1.5))?,
            downgrade_tokens,
            downgrade_time: pos_time("downgrade_time", self.downgrade_time, t * 25)?,
            retx_timeout: pos_time("retx_timeout", self.retx_timeout, (t * 9).max(net.max_base_rtt + t * 2))?,
            rts_timeout: pos_time("rts_timeout", self.rts_timeout, (net.max_base_rtt * 10).max(t))?,
            ctrl_prio: prio("ctrl_prio", self.ctrl_prio, 0)?,
            data_prio,
            aeolus: self
                .aeolus
                .then_some(AeolusConfig { mode: UnschedMode::SelectiveDrop, probe: self.aeolus_probe.unwrap_or(true) }),
        })
    }
}

/// A token held by a source.
#[derive(Clone, Copy, Debug)]
struct Tok {
    pkt: u64,
    serial: u64,
    expiry: Time,
    prio: u8,
    free: bool,
}

/// Source-side state of one flow.
#[derive(Debug)]
struct SendFlow {
    dst: NodeId,
    size: u64,
    start: Time,
    /// Bytes the destination still misses, from its latest token (the flow size at first).
    remaining: u64,
    tokens: Vec<Tok>,
    /// Packets sent at least once (bitmap).
    sent: Vec<u64>,
    last_heard: Time,
    rts_timer: TimerSlot,
    /// Aeolus: the free-token packets are its unscheduled packets (probe timing).
    aeolus: Option<AeolusSender>,
}

#[derive(Debug)]
enum Snd {
    Unknown,
    Active(Box<SendFlow>),
    Done,
}

/// Destination-side state of one flow.
#[derive(Debug)]
struct RecvFlow {
    src: NodeId,
    size: u64,
    start: Time,
    n_pkts: u64,
    n_free: u64,
    /// Packets received (bitmap, grown on demand).
    got: Vec<u64>,
    got_pkts: u64,
    got_bytes: u64,
    /// Token serials used so far, free tokens (serials 0..n_free) included.
    issued: u64,
    /// 1 + the newest token serial answered by a data packet.
    answered: u64,
    /// Next packet that never had a token.
    next_new: u64,
    /// In a retransmission round: the next packet index to consider.
    cursor: Option<u64>,
    /// When the next retransmission round may start (once every packet had a token).
    retx_at: Time,
    /// Scheduled tokens start no earlier than this (end of the free burst).
    sched_from: Time,
    sched_refined: bool,
    /// When the destination last sent this flow a token.
    last_token: Time,
    /// Base RTT of the flow's path (token issue to data arrival when nothing queues).
    rtt: Time,
    /// Aeolus: which free-token packets arrived or are known lost.
    aeolus: Option<AeolusReceiver>,
    /// Aeolus: free-token packets known lost (or never sent, per the probe), each to get
    /// one token ahead of new packets.
    lost: VecDeque<u64>,
}

impl RecvFlow {
    fn next_missing(&self, from: u64) -> Option<u64> {
        (from..self.n_pkts).find(|&i| !bit_get(&self.got, i))
    }
    fn unanswered(&self) -> u64 {
        self.issued - self.answered.max(self.n_free).min(self.issued)
    }
}

#[derive(Debug)]
enum Rcv {
    Unknown,
    Active(Box<RecvFlow>),
    Done,
}

/// Per-host state.
#[derive(Debug, Default)]
struct HostState {
    /// The NIC holds or serializes a packet this transport handed it.
    nic_busy: bool,
    /// Flows this host sends (not yet acknowledged complete).
    sending: Vec<FlowId>,
    /// Flows this host receives (not yet complete).
    receiving: Vec<FlowId>,
    pacer: TimerSlot,
    /// When this host last issued a token (to any flow).
    last_token: Option<Time>,
    /// Until when the downlink is booked by data of tokens already issued (estimate).
    booked_until: Time,
    /// Until when the downlink is booked by announced free packets (estimate).
    free_until: Time,
}

/// What a destination can do for one flow at a token slot.
enum Next {
    /// Issue a token for this packet index.
    Pkt(u64),
    /// Nothing before this time.
    Wait(Time),
}

/// pHost for every host of a run.
pub struct Phost {
    p: PhostParams,
    hosts: Vec<HostState>,
    snd: Vec<Snd>,
    rcv: Vec<Rcv>,
    stats: Vec<FlowStats>,
}

/// Bitmaps of packet indices grow on demand (a long flow's bitmap covers only what it used).
fn bit_get(v: &[u64], i: u64) -> bool {
    v.get((i / 64) as usize).is_some_and(|w| w & (1u64 << (i % 64)) != 0)
}

/// Set bit `i`; returns whether it was set before.
fn bit_set(v: &mut Vec<u64>, i: u64) -> bool {
    let w = (i / 64) as usize;
    if v.len() <= w {
        v.resize(w + 1, 0);
    }
    let m = 1u64 << (i % 64);
    let was = v[w] & m != 0;
    v[w] |= m;
    was
}

impl Phost {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Phost, PhostConfigError> {
        let c: PhostConfig =
            if cfg.is_null() { PhostConfig::default() } else { crate::config::from_table(cfg, "transport")? };
        Ok(Phost::new(c.resolve(net)?, net.num_nodes))
    }

    pub fn new(p: PhostParams, num_nodes: usize) -> Phost {
        Phost {
            p,
            hosts: (0..num_nodes).map(|_| HostState::default()).collect(),
            snd: vec![],
            rcv: vec![],
            stats: vec![],
        }
    }

    pub fn params(&self) -> &PhostParams {
        &self.p
    }
    /// The first-BDP phase's parameters.
    pub fn free_tokens(&self) -> &FreeTokens {
        &self.p.free
    }
    /// Replace the first-BDP phase's parameters (e.g. an Aeolus wrapper setting `flags`).
    pub fn set_free_tokens(&mut self, f: FreeTokens) {
        self.p.free = f;
    }

    fn grow(&mut self, n: usize) {
        if self.snd.len() < n {
            self.snd.resize_with(n, || Snd::Unknown);
            self.rcv.resize_with(n, || Rcv::Unknown);
            self.stats.resize(n, FlowStats::default());
        }
    }

    fn n_pkts(&self, size: u64) -> u64 {
        size.div_ceil(self.p.mss)
    }

    fn payload_of(&self, size: u64, pkt: u64) -> u64 {
        let off = pkt * self.p.mss;
        (size - off).min(self.p.mss)
    }

    /// Hand a packet to the NIC of `host`.
    fn emit(&mut self, ctx: &mut Ctx, p: Packet) {
        self.hosts[ctx.host as usize].nic_busy = true;
        ctx.out.send(p);
    }

    fn ctrl(&self, kind: u8, flow: FlowId, src: NodeId, dst: NodeId) -> Packet {
        Packet { src, dst, flow, size: self.p.ctrl_size as u32, prio: self.p.ctrl_prio, kind, ..Packet::default() }
    }

    // ------------------------------------------------------------------ source side

    /// If the NIC of `ctx.host` is idle, send one data packet on the best token held.
    fn try_send(&mut self, ctx: &mut Ctx) {
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
            let again = bit_set(&mut s.sent, tok.pkt);
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

    fn on_token(&mut self, ctx: &mut Ctx, pkt: &Packet) {
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

    fn on_ack(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        if let Some(st @ Snd::Active(_)) = self.snd.get_mut(f as usize) {
            *st = Snd::Done;
            self.hosts[ctx.host as usize].sending.retain(|&x| x != f);
        }
    }

    fn send_rts(&mut self, ctx: &mut Ctx, f: FlowId, dst: NodeId, size: u64) {
        let mut p = self.ctrl(KIND_RTS, f, ctx.host, dst);
        p.seq = size;
        self.emit(ctx, p);
    }

    fn on_rts_timer(&mut self, ctx: &mut Ctx, f: FlowId, gen: u32) {
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

    // ------------------------------------------------------------- destination side

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

    fn on_rts(&mut self, ctx: &mut Ctx, pkt: &Packet) {
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

    fn on_data(&mut self, ctx: &mut Ctx, pkt: &Packet) {
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
            // tokens one base RTT before that (see the module documentation).
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
                    if !bit_get(&r.got, j as u64) {
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
        if i < r.n_pkts && !bit_set(&mut r.got, i) {
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
    fn on_probe(&mut self, ctx: &mut Ctx, pkt: &Packet) {
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
            if !bit_get(&r.got, j) && !r.lost.contains(&j) {
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
        while r.lost.front().is_some_and(|&i| bit_get(&r.got, i)) {
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

    fn on_pacer(&mut self, ctx: &mut Ctx, gen: u32) {
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

impl Transport for Phost {
    fn name(&self) -> &'static str {
        "phost"
    }

    fn start_flow(&mut self, ctx: &mut Ctx, f: FlowId) {
        self.grow(ctx.flows.len().max(f as usize + 1));
        let info: &FlowInfo = &ctx.flows[f as usize];
        let (dst, size, start) = (info.dst, info.size.0, info.start);
        let t_src = info.host_rate.tx_time(Bytes(self.p.mtu));
        let now = ctx.now;
        let n = self.n_pkts(size);
        let n_free = self.p.free.count(n);
        let expiry = now + t_src * n_free + self.p.token_ttl;
        let prio = self.p.free.prio;
        let tokens = (0..n_free).map(|i| Tok { pkt: i, serial: i, expiry, prio, free: true }).collect::<Vec<_>>();
        let mut s = SendFlow {
            dst,
            size,
            start,
            remaining: size,
            tokens,
            sent: Vec::new(),
            last_heard: now,
            rts_timer: TimerSlot::default(),
            aeolus: self.p.aeolus.map(|c| AeolusSender::new(n_free as u32, &c)),
        };
        let at = now + self.p.rts_timeout;
        let g = s.rts_timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_RTS, g));
        self.snd[f as usize] = Snd::Active(Box::new(s));
        self.hosts[ctx.host as usize].sending.push(f);
        self.send_rts(ctx, f, dst, size);
        self.try_send(ctx);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.grow(ctx.flows.len().max(pkt.flow as usize + 1));
        match pkt.kind {
            KIND_RTS => self.on_rts(ctx, pkt),
            KIND_TOKEN => self.on_token(ctx, pkt),
            KIND_DATA => self.on_data(ctx, pkt),
            KIND_ACK => self.on_ack(ctx, pkt),
            KIND_PROBE => self.on_probe(ctx, pkt),
            _ => {}
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, tok: u64) {
        let (id, kind, gen) = untoken(tok);
        match kind {
            TIMER_PACER => self.on_pacer(ctx, gen),
            TIMER_RTS => self.on_rts_timer(ctx, id, gen),
            _ => {}
        }
    }

    fn on_nic_idle(&mut self, ctx: &mut Ctx) {
        self.hosts[ctx.host as usize].nic_busy = false;
        self.try_send(ctx);
    }

    fn wants_nic_idle(&self) -> bool {
        true
    }

    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.stats.get(flow as usize).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Actions;
    use crate::units::Rate;
    use serde_json::json;

    const MSS: u64 = 1460;
    /// Base RTT of a one-switch path at 10 Gbps with 1 us links (4 x 1 us + 2 x (1500 B + 64 B)).
    const RTT_PS: u64 = 6_502_400;

    fn net() -> NetInfo {
        NetInfo::for_tests(1500, Time(RTT_PS), Rate::gbps(10))
    }

    /// T: one MTU at 10 Gbps.
    fn t() -> Time {
        Rate::gbps(10).tx_time(Bytes(1500))
    }

    fn flows(spec: &[(NodeId, NodeId, u64)]) -> Vec<FlowInfo> {
        spec.iter()
            .enumerate()
            .map(|(i, &(src, dst, pkts))| FlowInfo {
                id: i as FlowId,
                src,
                dst,
                size: Bytes(pkts * MSS),
                start: Time::ZERO,
                base_rtt: Time(RTT_PS),
                path_rate: Rate::gbps(10),
                host_rate: Rate::gbps(10),
                deadline: None,
                background: false,
            })
            .collect()
    }

    fn phost(cfg: serde_json::Value) -> Phost {
        Phost::from_config(&cfg, &net()).unwrap()
    }

    fn call(host: NodeId, now: Time, fl: &[FlowInfo], f: impl FnOnce(&mut Ctx)) -> Actions {
        let mut out = Actions::new();
        f(&mut Ctx { now, host, flows: fl, out: &mut out });
        out
    }

    fn data_for(tok: &Packet, size: u64) -> Packet {
        let payload = (size - tok.seq).min(MSS);
        Packet {
            src: tok.dst,
            dst: tok.src,
            flow: tok.flow,
            size: (payload + 40) as u32,
            payload: payload as u32,
            flags: PacketFlags(PacketFlags::DATA),
            kind: KIND_DATA,
            seq: tok.seq,
            ack: size,
            aux: tok.aux,
            ..Packet::default()
        }
    }

    fn rts(f: &FlowInfo) -> Packet {
        Packet { src: f.src, dst: f.dst, flow: f.id, size: 64, kind: KIND_RTS, seq: f.size.0, ..Packet::default() }
    }

    /// Tokens issued (time, packet) and completions (time, flow).
    type Driven = (Vec<(Time, Packet)>, Vec<(Time, FlowId)>);

    /// Drive one receiver: deliver the RTSs at t = 0, fire its timers, and answer each token
    /// with its data packet `delay(flow, pkt)` later (None: the sender never answers / the
    /// data is lost). Returns every token issued (time, packet) and the completions.
    fn drive(p: &mut Phost, fl: &[FlowInfo], until: Time, delay: impl Fn(FlowId, u64) -> Option<Time>) -> Driven {
        enum Ev {
            Timer(u64),
            Pkt(Packet),
        }
        let host = fl[0].dst;
        let mut q: Vec<(Time, u64, Ev)> = Vec::new();
        let mut seq = 0u64;
        for f in fl {
            q.push((Time::ZERO, seq, Ev::Pkt(rts(f))));
            seq += 1;
        }
        let mut tokens = Vec::new();
        let mut done = Vec::new();
        loop {
            q.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
            let Some((now, _, ev)) = q.pop() else { break };
            if now > until {
                break;
            }
            let out = call(host, now, fl, |ctx| match ev {
                Ev::Timer(tk) => p.on_timer(ctx, tk),
                Ev::Pkt(pk) => p.on_packet(ctx, &pk),
            });
            for &(at, tk) in &out.timers {
                q.push((at, seq, Ev::Timer(tk)));
                seq += 1;
            }
            for &f in &out.completions {
                done.push((now, f));
            }
            for s in &out.sends {
                if s.kind == KIND_TOKEN {
                    tokens.push((now, *s));
                    if let Some(d) = delay(s.flow, s.seq / MSS) {
                        q.push((now + d, seq, Ev::Pkt(data_for(s, fl[s.flow as usize].size.0))));
                        seq += 1;
                    }
                }
            }
        }
        (tokens, done)
    }

    #[test]
    fn free_tokens_cover_exactly_one_bdp() {
        // One BDP at 10 Gbps over 6.5024 us is 8128 B: 6 packets of 1500 B (rounded up).
        let bdp_pkts = (10e9 * RTT_PS as f64 * 1e-12 / 8.0 / 1500.0).ceil() as u64;
        assert_eq!(bdp_pkts, 6);
        let send_all = |p: &mut Phost, fl: &[FlowInfo]| -> (Vec<Packet>, Vec<Packet>) {
            let out = call(0, Time::ZERO, fl, |ctx| p.start_flow(ctx, 0));
            let ctrl: Vec<Packet> = out.sends.clone();
            let mut data = Vec::new();
            // The NIC drains every T; no token ever arrives.
            for k in 1..20u64 {
                let out = call(0, t() * k, fl, |ctx| p.on_nic_idle(ctx));
                data.extend(out.sends);
            }
            (ctrl, data)
        };
        let fl = flows(&[(0, 1, 100)]);
        let mut p = phost(json!({}));
        let (ctrl, data) = send_all(&mut p, &fl);
        assert_eq!(ctrl.len(), 1);
        assert_eq!((ctrl[0].kind, ctrl[0].seq, ctrl[0].prio), (KIND_RTS, 100 * MSS, 0), "RTS with the size, class 0");
        assert_eq!(data.len() as u64, bdp_pkts, "exactly one BDP of free packets");
        for (i, d) in data.iter().enumerate() {
            assert!(is_free_data(d));
            assert_eq!((d.seq, d.payload as u64, d.prio), (i as u64 * MSS, MSS, 1));
            assert!(!d.flags.has(PacketFlags::UNSCHEDULED), "pHost itself does not flag them");
        }
        // A flow shorter than one BDP sends all of itself.
        let fl3 = flows(&[(0, 1, 3)]);
        assert_eq!(send_all(&mut phost(json!({})), &fl3).1.len(), 3);
        // The authors' simulator's variant: flows longer than one BDP get none.
        assert_eq!(send_all(&mut phost(json!({"free_tokens_short_only": true})), &fl).1.len(), 0);
        assert_eq!(send_all(&mut phost(json!({"free_tokens_short_only": true})), &fl3).1.len(), 3);
        // The isolated first-BDP phase: an Aeolus wrapper flags these packets UNSCHEDULED.
        let mut p = phost(json!({}));
        let f = FreeTokens { flags: PacketFlags::UNSCHEDULED, ..*p.free_tokens() };
        p.set_free_tokens(f);
        let (_, data) = send_all(&mut p, &fl);
        assert_eq!(data.len(), 6);
        assert!(data.iter().all(|d| d.flags.has(PacketFlags::UNSCHEDULED) && d.is_data()));
    }

    #[test]
    fn tokens_go_in_srpt_order_one_mtu_time_apart() {
        // Three flows to host 3: 30, 10 and 20 packets; senders answer every token 2 us later.
        let fl = flows(&[(0, 3, 30), (1, 3, 10), (2, 3, 20)]);
        let mut p = phost(json!({"free_tokens": 0}));
        let (tokens, done) = drive(&mut p, &fl, Time::ms(1), |_, _| Some(Time::us(2)));
        let order: Vec<FlowId> = tokens.iter().map(|(_, tk)| tk.flow).collect();
        let mut want = vec![1; 10];
        want.extend(vec![2; 20]);
        want.extend(vec![0; 30]);
        assert_eq!(order, want, "shortest flow first, then the next shortest");
        for w in tokens.windows(2) {
            assert_eq!(w[1].0 - w[0].0, t(), "one token per MTU transmission time");
        }
        assert_eq!(tokens[0].0, Time::ZERO);
        // Every token names the next packet of its flow, carries the TTL and the data class.
        let pkts: Vec<u64> = tokens.iter().filter(|x| x.1.flow == 1).map(|x| x.1.seq / MSS).collect();
        assert_eq!(pkts, (0..10).collect::<Vec<_>>());
        assert!(tokens.iter().all(|x| x.1.ts == t().mul_f64(1.5) && x.1.rank == 2 && x.1.prio == 0));
        let order_done: Vec<FlowId> = done.iter().map(|d| d.1).collect();
        assert_eq!(order_done, vec![1, 2, 0]);
        assert_eq!(p.flow_stats(0).timeouts, 0);
    }

    #[test]
    fn an_expired_token_is_not_used() {
        let fl = flows(&[(0, 1, 100), (0, 2, 50)]);
        let mut p = phost(json!({"free_tokens": 0}));
        let out = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
        assert_eq!(out.sends.len(), 1, "RTS only, the NIC is now busy");
        let ttl = t().mul_f64(1.5);
        let mut tok = Packet {
            src: 1,
            dst: 0,
            flow: 0,
            size: 64,
            kind: KIND_TOKEN,
            seq: 0,
            aux: 0,
            ack: 100 * MSS,
            ts: ttl,
            rank: 2,
            ..Packet::default()
        };
        let t0 = Time::us(1);
        let out = call(0, t0, &fl, |ctx| p.on_packet(ctx, &tok));
        assert!(out.sends.is_empty(), "the NIC is still busy with the RTS");
        // The NIC frees up just after the token expired: nothing is sent.
        let out = call(0, t0 + ttl + Time(1), &fl, |ctx| p.on_nic_idle(ctx));
        assert!(out.sends.is_empty(), "an expired token is discarded");
        // A fresh token is used at once (the NIC is idle).
        tok.seq = MSS;
        tok.aux = 1;
        let out = call(0, Time::us(5), &fl, |ctx| p.on_packet(ctx, &tok));
        assert_eq!(out.sends.len(), 1);
        let d = out.sends[0];
        assert_eq!((d.kind, d.seq, d.aux, d.prio, is_free_data(&d)), (KIND_DATA, MSS, 1, 2, false));
        // Source policy: with tokens of two flows held, the one with fewer remaining bytes
        // (as its destination reported) goes first, even if its token arrived later.
        let _ = call(0, Time::us(6), &fl, |ctx| p.start_flow(ctx, 1));
        let mut a = tok;
        a.seq = 2 * MSS;
        a.aux = 2;
        a.ack = 98 * MSS;
        let mut b = tok;
        b.src = 2;
        b.flow = 1;
        b.seq = 0;
        b.aux = 0;
        b.ack = 50 * MSS;
        let t1 = Time::us(7);
        assert!(call(0, t1, &fl, |ctx| p.on_packet(ctx, &a)).sends.is_empty());
        assert!(call(0, t1, &fl, |ctx| p.on_packet(ctx, &b)).sends.is_empty());
        let out = call(0, t1 + Time::ns(100), &fl, |ctx| p.on_nic_idle(ctx));
        assert_eq!((out.sends[0].flow, out.sends[0].seq), (1, 0));
        let out = call(0, t1 + Time::ns(200), &fl, |ctx| p.on_nic_idle(ctx));
        assert_eq!((out.sends[0].flow, out.sends[0].seq), (0, 2 * MSS));
    }

    #[test]
    fn an_unresponsive_sender_is_downgraded_and_the_next_flow_gets_the_tokens() {
        // Flow 0 (10 packets, preferred by SRPT) never answers; flow 1 (100 packets) does.
        let fl = flows(&[(0, 3, 10), (1, 3, 100)]);
        let mut p = phost(json!({"free_tokens": 0}));
        assert_eq!(p.params().downgrade_tokens, 6, "default: one BDP of tokens");
        assert_eq!(p.params().downgrade_time, t() * 25);
        let until = t() * 79;
        let (tokens, _) = drive(&mut p, &fl, until, |f, _| (f == 1).then(|| Time::us(2)));
        let slot = |x: &(Time, Packet)| x.0 .0 / t().0;
        let to0: Vec<u64> = tokens.iter().filter(|x| x.1.flow == 0).map(slot).collect();
        // 6 tokens unanswered -> skipped; one probe token 25 T after its last token, again.
        assert_eq!(to0, vec![0, 1, 2, 3, 4, 5, 30, 55]);
        // Every other slot went to flow 1: the receiver never idled.
        let to1: Vec<u64> = tokens.iter().filter(|x| x.1.flow == 1).map(slot).collect();
        let want: Vec<u64> = (6..=79).filter(|s| ![30, 55].contains(s)).collect();
        assert_eq!(to1, want);
    }

    #[test]
    fn missing_packets_get_tokens_again_after_the_retransmission_timeout() {
        // 5 packets, no free tokens; the data for packet 2 is lost the first time.
        let fl = flows(&[(0, 3, 5)]);
        let mut p = phost(json!({"free_tokens": 0}));
        let rto = p.params().retx_timeout;
        assert_eq!(rto, (t() * 9).max(Time(RTT_PS) + t() * 2));
        let lost = std::cell::Cell::new(true);
        let (tokens, done) =
            drive(
                &mut p,
                &fl,
                Time::ms(1),
                |_, pkt| {
                    if pkt == 2 && lost.replace(false) {
                        None
                    } else {
                        Some(Time::us(2))
                    }
                },
            );
        let seen: Vec<(u64, u64)> = tokens.iter().map(|x| (x.0 .0, x.1.seq / MSS)).collect();
        let last_first_pass = t() * 4;
        // The retransmission round starts at the first pacer slot after last token + timeout.
        assert_eq!(seen[..5], [(0, 0), (t().0, 1), (2 * t().0, 2), (3 * t().0, 3), (4 * t().0, 4)]);
        assert_eq!(seen.len(), 6);
        assert_eq!(seen[5], ((last_first_pass + rto).0, 2));
        assert_eq!(p.flow_stats(0).timeouts, 1);
        assert_eq!(done, vec![(last_first_pass + rto + Time::us(2), 0)]);
    }

    #[test]
    fn config_defaults_and_errors_name_the_field() {
        let p = phost(serde_json::Value::Null).params().clone();
        assert_eq!(p.free.packets, 6);
        assert_eq!(p.token_interval, t());
        assert_eq!(p.token_ttl, Time(1_800_000));
        assert_eq!((p.ctrl_prio, p.free.prio, p.data_prio), (0, 1, 2));
        let mut one = net();
        one.priorities = 1;
        let q = Phost::from_config(&json!({}), &one).unwrap();
        assert_eq!((q.params().ctrl_prio, q.params().free.prio, q.params().data_prio), (0, 0, 0));
        let err = |v: serde_json::Value| Phost::from_config(&v, &net()).err().unwrap();
        assert_eq!(err(json!({"nope": 1})).field(), "transport.nope");
        assert_eq!(err(json!({"token_ttl": "abc"})).field(), "transport.token_ttl");
        assert_eq!(err(json!({"token_ttl": 0})).field(), "transport.token_ttl");
        assert_eq!(err(json!({"downgrade_tokens": 0})).field(), "transport.downgrade_tokens");
        assert_eq!(err(json!({"data_prio": 8})).field(), "transport.data_prio");
        let e = Phost::from_config(&json!({"free_prio": 1}), &one).err().unwrap();
        assert_eq!(e.field(), "transport.free_prio");
        assert!(e.to_string().contains("network.priorities is 1"), "{e}");
    }

    // ------------------------------------------------------------ pHost + Aeolus

    /// Source with Aeolus: the free-token packets go flagged UNSCHEDULED in the scheduled
    /// data's class (one FIFO), the probe right behind the last one; a scheduled token that
    /// arrives during the free burst ends it at once (probe now, the rest goes scheduled).
    #[test]
    fn aeolus_free_packets_are_unscheduled_and_the_probe_follows_them() {
        let p0 = phost(json!({"aeolus": true}));
        assert_eq!((p0.params().free.prio, p0.params().data_prio), (2, 2));
        assert_eq!(p0.params().free.flags, PacketFlags::UNSCHEDULED);
        let fl = flows(&[(0, 1, 100)]);
        let mut p = phost(json!({"aeolus": true}));
        call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
        let mut sent = Vec::new();
        for k in 1..10u64 {
            let out = call(0, t() * k, &fl, |ctx| p.on_nic_idle(ctx));
            sent.extend(out.sends);
        }
        let kinds: Vec<u8> = sent.iter().map(|x| x.kind).collect();
        assert_eq!(kinds, [[KIND_DATA; 6].as_slice(), &[KIND_PROBE]].concat());
        for d in &sent[..6] {
            assert!(is_free_data(d) && d.flags.has(PacketFlags::UNSCHEDULED));
            assert_eq!(d.prio, 2);
        }
        let pr = sent[6];
        assert_eq!((pr.prio, pr.size, pr.aux, pr.ack, pr.dst), (2, 64, 5, 100 * MSS, 1));
        assert!(!pr.flags.has(PacketFlags::UNSCHEDULED) && !pr.is_data());
        // A token during the burst: probe at once (naming packet 2), free tokens dropped;
        // only the token's packet follows, scheduled.
        let mut p = phost(json!({"aeolus": true}));
        call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
        let mut sent = Vec::new();
        for k in 1..4u64 {
            sent.extend(call(0, t() * k, &fl, |ctx| p.on_nic_idle(ctx)).sends);
        }
        assert_eq!(sent.len(), 3);
        let tok = Packet {
            src: 1,
            dst: 0,
            flow: 0,
            kind: KIND_TOKEN,
            seq: 6 * MSS,
            aux: 6,
            ack: 97 * MSS,
            ts: t() * 2,
            rank: 2,
            ..Packet::default()
        };
        let out = call(0, t() * 3 + Time::ns(1), &fl, |ctx| p.on_packet(ctx, &tok));
        assert_eq!(out.sends.len(), 1);
        assert_eq!((out.sends[0].kind, out.sends[0].aux), (KIND_PROBE, 2));
        let out = call(0, t() * 4, &fl, |ctx| p.on_nic_idle(ctx));
        assert_eq!(out.sends.len(), 1);
        assert_eq!((out.sends[0].seq, out.sends[0].flags.0), (6 * MSS, PacketFlags::DATA));
        assert!(call(0, t() * 5, &fl, |ctx| p.on_nic_idle(ctx)).sends.is_empty());
    }

    /// Destination with Aeolus: of the 6 free packets of a 20-packet flow, 1, 4 and 5 are
    /// dropped. Packet 2's arrival proves 1 lost, the probe proves 4 and 5 lost; each gets
    /// exactly one token, ahead of the new packets still waiting for theirs, with no
    /// retransmission round; the flow completes.
    #[test]
    fn aeolus_destination_tokens_each_lost_free_packet_once() {
        let fl = flows(&[(0, 1, 20)]);
        let mut p = phost(json!({"aeolus": true}));
        let free = |i: u64| Packet {
            src: 0,
            dst: 1,
            flow: 0,
            size: 1500,
            payload: MSS as u32,
            flags: PacketFlags(PacketFlags::DATA | PacketFlags::UNSCHEDULED),
            kind: KIND_DATA,
            seq: i * MSS,
            ack: 20 * MSS,
            aux: i,
            aux2: AUX2_FREE,
            ..Packet::default()
        };
        let probe = aeolus::probe_packet(aeolus::Wire { mss: MSS, ctrl_size: 64 }, KIND_PROBE, 1, 0, 5, 20 * MSS, 2);
        let t1 = Time::us(5);
        let mut q: Vec<(Time, u64, Packet)> = vec![(Time::ZERO, 0, rts(&fl[0]))];
        for (k, i) in [(0u64, 0u64), (2, 2), (3, 3)] {
            q.push((t1 + t() * k, 1 + k, free(i)));
        }
        q.push((t1 + t() * 6, 9, probe));
        let mut timers: Vec<(Time, u64)> = Vec::new();
        let mut tokens: Vec<(Time, u64)> = Vec::new();
        let mut done = None;
        let mut seq = 100;
        loop {
            q.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
            timers.sort_by_key(|e| std::cmp::Reverse(e.0));
            let tq = timers.last().map(|x| x.0);
            let pq = q.last().map(|x| x.0);
            let out = match (pq, tq) {
                (None, None) => break,
                (Some(a), Some(b)) if b < a => {
                    let (now, tk) = timers.pop().unwrap();
                    (now, call(1, now, &fl, |ctx| p.on_timer(ctx, tk)))
                }
                (None, Some(_)) => {
                    let (now, tk) = timers.pop().unwrap();
                    (now, call(1, now, &fl, |ctx| p.on_timer(ctx, tk)))
                }
                _ => {
                    let (now, _, pk) = q.pop().unwrap();
                    (now, call(1, now, &fl, |ctx| p.on_packet(ctx, &pk)))
                }
            };
            let (now, out) = out;
            if now > Time::us(200) {
                break;
            }
            timers.extend(out.timers.iter().copied());
            if !out.completions.is_empty() {
                done = Some(now);
            }
            for tk in out.sends.iter().filter(|x| x.kind == KIND_TOKEN) {
                tokens.push((now, tk.seq / MSS));
                q.push((now + Time(RTT_PS), seq, data_for(tk, 20 * MSS)));
                seq += 1;
            }
        }
        let order: Vec<u64> = tokens.iter().map(|x| x.1).collect();
        for i in [1u64, 4, 5] {
            assert_eq!(order.iter().filter(|&&j| j == i).count(), 1, "packet {i} tokened once: {order:?}");
        }
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, [1, 4, 5].iter().copied().chain(6..20).collect::<Vec<_>>(), "{order:?}");
        // 1's token in the first pacer slot after packet 2 arrived; 4 and 5 right after the probe.
        let at = |i: u64| tokens.iter().find(|x| x.1 == i).unwrap().0;
        assert!(at(1) > t1 + t() * 2 && at(1) <= t1 + t() * 3, "{:?}", at(1));
        assert!(at(4) > t1 + t() * 6 && at(5) <= t1 + t() * 8, "{:?} {:?}", at(4), at(5));
        assert!(done.is_some(), "the flow completes");
        assert_eq!(p.flow_stats(0).timeouts, 0, "no retransmission round");
    }

    #[test]
    fn aeolus_config() {
        let e = Phost::from_config(&json!({"aeolus_probe": false}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.aeolus_probe");
        let e = Phost::from_config(&json!({"aeolus": "on"}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.aeolus");
        let p = phost(json!({"aeolus": true, "aeolus_probe": false, "free_prio": 1}));
        assert_eq!(p.params().aeolus, Some(AeolusConfig { mode: UnschedMode::SelectiveDrop, probe: false }));
        assert_eq!(p.params().free.prio, 1, "an explicit class is kept");
    }
}
