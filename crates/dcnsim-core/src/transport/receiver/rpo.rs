//! RPO: receiver-driven transport with opportunistic transmission (Hu, Huang, Li, Li,
//! Jiang, Chen, Wang, He, "RPO: Receiver-driven Transport Protocol Using Opportunistic
//! Transmission in Data Center"; §III overview, §IV-A sender, §IV-B switch, §IV-C receiver).
//!
//! # What is modelled
//! - **Grant-clocked sender** (§IV-A): every grant releases one *normal* packet (high
//!   priority, class `normal_prio`) taken in order from the head of the send buffer and, if
//!   the grant does not carry ECN-Echo, one *opportunistic* packet (flag
//!   [`PacketFlags::OPPORTUNISTIC`], class `opp_prio`, the lowest) taken in reverse order
//!   from the tail. A grant with ECN-Echo releases the normal packet only; the next grant
//!   without it releases opportunistic packets again (the paper's "stops sending
//!   opportunistic packets until receiving grant without ECN mark" is exactly this per-grant
//!   rule, so no sender state is kept for it).
//! - **Meeting in the middle** (§IV-A): once the highest normal packet sent reaches the
//!   lowest opportunistic packet sent, no new opportunistic packet exists; each grant's
//!   normal packet is then an opportunistic packet not yet reported delivered, resent as a
//!   normal packet (once each, lowest first), so packets trapped in a low-priority queue do
//!   not hold up the flow's completion.
//! - **First RTT** (§III(1)): a new flow sends one BDP (`bdp_bytes`, the flow's host rate x
//!   its base RTT, in MTU-sized packets rounded up) of normal packets at once, without grants.
//! - **Switch** (§IV-B): two strict-priority queues per port and the cross-queue ECN marking
//!   of [`crate::queue::crossmark`] (`network.queue_policy = "rpo_crossmark"`, with
//!   `network.crossmark.adaptive = true` for the paper's adaptive threshold). The paper's
//!   "like Aeolus, drop normal packets above a very small threshold (1 packet)" is
//!   `normal_drop` (below).
//! - **Receiver** (§IV-C): one grant per arriving data packet, normal or opportunistic,
//!   while the flow is incomplete (not for duplicates nor resent first-RTT packets, see
//!   below). The grant carries ECN-Echo when the packet was a CE-marked normal packet. A re-sequencing buffer holds the bytes received
//!   above the in-order prefix; its largest size is reported per flow
//!   ([`FlowStats::reorder_max_bytes`]) and per receiving host ([`Rpo::max_reorder_bytes`]).
//! - **Per-grant timer** (§IV-C): a grant whose packets have not arrived `grant_timeout`
//!   (3 x RTT) after it was sent is sent again. The first-RTT packets count as grants the
//!   receiver gave implicitly: once the receiver knows the flow (its first packet arrived) it
//!   expects every first-RTT packet within `grant_timeout` too.
//! - **Retransmission** (§IV-C): a re-sent grant names the grant it repeats; the sender
//!   resends what that grant released and is not yet reported delivered. A lost normal
//!   packet goes again as a normal packet; a lost opportunistic packet goes as a normal
//!   packet if the highest normal packet sent is above the lowest opportunistic one (the
//!   loops met), else again as an opportunistic packet.
//! - **Completion**: when the receiver holds every byte it reports the flow complete and
//!   sends an ACK; the sender then forgets the flow.
//!
//! # Configuration (`protocol = "rpo"`)
//! | field | default | meaning |
//! |---|---|---|
//! | `bdp_bytes` | flow's host rate x its base RTT | bytes of normal packets sent in the first RTT (the paper's BDP_bytes), rounded up to whole MTU-sized packets |
//! | `host_opp_queue` | one BDP in packets (fastest host rate x largest base RTT / MTU, rounded up) | opportunistic releases a sender keeps waiting for its idle NIC (see below) |
//! | `grant_timeout` | 3 x the flow's RTT (`grant_rtt`) | per-grant timer at the receiver (§IV-C: 3 x RTT); a time here fixes it |
//! | `grant_rtt` | `"measured"` | the RTT the timer multiplies: `"measured"` (the receiver's smoothed grant-to-data round trip of the flow, starting at the base RTT and never below it) or `"base"` (the flow's base RTT) |
//! | `sender_timeout` | 2 x `grant_timeout` | a sender that heard no news of an unfinished flow for this long resends its lowest unreported packet (see "Choices") |
//! | `normal_drop` | `"first_rtt"` | which normal packets the switches may drop above their small threshold: `"first_rtt"` (the first-RTT packets, flagged `UNSCHEDULED`), `"all"` (every normal data packet flagged `UNSCHEDULED`), `"off"` (none flagged) |
//! | `ctrl_prio`, `normal_prio`, `opp_prio` | 0, min(1, P - 2), P - 1 with P = `network.priorities` | classes of grants/ACKs, normal and opportunistic packets |
//!
//! # Choices where the paper leaves room
//! - **Normal-packet dropping.** Aeolus, which the paper cites for the rule, drops only
//!   unscheduled (first-RTT) packets; dropping granted packets too would discard packets the
//!   receiver's grants paid for. The transport flags the droppable packets `UNSCHEDULED` and
//!   the `rpo_crossmark` switch drops flagged normal packets when their class already holds
//!   more than `network.crossmark.unscheduled_threshold` (1 packet of 1500 B); unflagged
//!   normal packets are dropped only on buffer overflow. `normal_drop = "all"` is the
//!   paper's literal wording.
//! - **What a grant's "corresponding packet" is.** Every data packet carries the serial of
//!   the grant that released it; the grant is answered when the normal packet it released
//!   arrives. A grant's opportunistic packet is flagged ([`DATA_OPP_SLOT`]) and never
//!   answers it, not even when it is resent as a normal packet where the loops met: if it
//!   did, a grant whose normal packet was lost would count as answered, and nothing would
//!   recover that packet (measured: on the 400-host network of the paper's §VIII-A, 2,400
//!   web-search flows at load 0.6, half of them ON/OFF with deferred grants, one 3.97 MB
//!   flow kept four such packets missing for the whole 200 ms run). Opportunistic packets do
//!   not answer grants: they may wait in a
//!   low-priority queue for many RTTs by design (the paper's Fig. 11 shows 15 of them
//!   staying), and timing them out made every such wait a retransmission, each of which
//!   was granted again: the run grew without bound (a 4-to-1 test with 2 MB flows reached
//!   10 million live packets). A lost opportunistic packet is recovered where the loops
//!   meet (not reported delivered, so resent as a normal packet), or by the §IV-C rule
//!   when its grant is re-sent because the normal packet was lost as well.
//! - **Grants keep the flow's packet count.** A grant per arrival keeps the number of a
//!   flow's packets in flight constant, except that each opportunistic arrival adds one
//!   (that is how RPO grows into spare bandwidth). Granting duplicates or the
//!   retransmissions of dropped first-RTT packets would add packets that no spare
//!   bandwidth called for: the first-RTT drop rule exists to trim a burst of BDPs to what
//!   the bottleneck holds, and re-granting the dropped packets undid it (their retransmissions
//!   queued past the grant timeout, were resent again, and so on). So a duplicate arrival
//!   and a retransmitted first-RTT packet (flag [`DATA_RETX`], serial below the first-RTT
//!   count) are not granted; a retransmission answering a re-sent grant is, since it
//!   replaces a granted packet that was lost.
//! - **Opportunistic packets and the sender's own link.** The host NIC neither marks nor
//!   drops, so opportunistic packets handed to a NIC that its normal packets keep busy (a
//!   flow alone, whose grants arrive at line rate) would pile up there without any ECN
//!   feedback: one per grant, the whole flow's worth. The sender therefore hands an
//!   opportunistic packet to its NIC only when the NIC has gone idle (the idle report of
//!   the runner), one at a time, picking it from the tail at that moment; releases wait in
//!   a per-host FIFO of `host_opp_queue` entries, and releases beyond it are discarded (as
//!   a full low-priority queue would drop them).
//! - **Delivery reports.** Each grant carries the offset of the packet that caused it and
//!   the receiver's in-order prefix, so the sender knows exactly which packets arrived
//!   (needed to skip delivered opportunistic packets where the loops meet, the notes'
//!   "resend only those still unacknowledged").
//! - **A packet still in the sender's own NIC is not sent again.** A sender with several
//!   flows to different receivers releases one flow's worth of normal packets per flow
//!   into the same NIC, so its NIC queue can hold them for longer than the receivers'
//!   `grant_timeout` (3 x RTT). Re-sending those on each re-sent grant added copies to the
//!   same queue, which made more timers fire: on 8 hosts at 10 Gbps under all-to-all
//!   web-search load 0.6 a host's NIC queue grew without bound. The host reports when each
//!   data packet's last bit has left its NIC (`on_tx_complete`); until then a re-sent grant
//!   or the sender timeout does not resend that packet. Linux's TCP makes the same check
//!   before a retransmission (a segment still in the host's queue is not sent again).
//! - **Which RTT the per-grant timer counts.** The paper's "3 x RTT" does not say whether
//!   the RTT is the idle path's or the one measured. With the base RTT, every queue longer
//!   than 3 base RTTs (a 60 KB buffer drains in 48 us at 10 Gbps, against 3 x 7 us) makes
//!   timers fire for packets that are only waiting; each re-sent grant resends its packet
//!   into the same queue. Measured on 8 hosts at 10 Gbps, 60 KB buffers, all-to-all
//!   web-search load 0.6, 300 flows, seed 1: 378 MB retransmitted for 535 MB of flows,
//!   56,493 drops, mean FCT 14.3 ms. A timer on the measured RTT, as TCP's RTO is (its
//!   SRTT, gain 1/8, Karn's rule), retransmits 1.7 MB with 549 drops, mean FCT 5.2 ms
//!   (a fixed 100 us: 1.1 MB, 546 drops, 5.4 ms). The receiver samples the RTT from the
//!   grant's send time, which the sender echoes in the first transmission of the normal
//!   packet that grant released. `grant_rtt = "base"` keeps the literal reading.
//! - **A re-sent grant keeps its serial** and the ECN-Echo bit of the original; if the
//!   original grant was lost, the sender treats the re-sent one as the original. A grant
//!   that released nothing (the sender had nothing left) is re-sent every `grant_timeout`
//!   until the flow completes; the sender ignores it. Each re-sent grant counts as one
//!   timeout in [`FlowStats`].
//! - **Multi-flow fairness at one receiver:** none; grants are clocked per flow by arrivals
//!   (the paper describes no receiver pacing or SRPT, and "each receiver sends grants to all
//!   senders").
//! - **Grants and ACKs** are 64 B control packets in the highest class.
//! - Opportunistic packets are ECN-capable, but only CE on normal packets is echoed.
//! - The re-sequencing buffer is unbounded; its size is the payload held above the
//!   in-order prefix.
//! - The sender timeout (not in the paper) repairs a flow whose every first-RTT packet was
//!   lost (the receiver never learns it), a lost completion ACK, and a packet no grant
//!   covers any more (an opportunistic packet lost after its grant was answered, which the
//!   walk where the loops meet passed while no fresh grant came). It counts from the last
//!   *news* (a grant reporting a packet not known delivered, a longer in-order prefix, or a
//!   grant serial not seen before): grants re-sent for packets already delivered arrive
//!   every `grant_timeout` until the flow completes, and in the run above they kept putting
//!   the timeout off for good. When it fires after the loops met, later grants walk the
//!   unreported packets again from the one it resent.
//!
//! # Packet fields (this module's meaning)
//! `kind`: [`KIND_DATA`], [`KIND_GRANT`], [`KIND_ACK`]. Data: `seq`/`payload` as usual,
//! `aux` = serial of the grant that released it ([`NO_SERIAL`] for a sender-timeout
//! packet), `aux2` bits [`DATA_RETX`] = sent before and [`DATA_OPP_SLOT`] = fills its
//! grant's opportunistic slot, `ts` = send time, `ack` = the send time
//! (ps) of the fresh grant that released this first transmission of a normal packet, else 0.
//! Grant: `aux` = serial, `seq` = offset of the data packet that caused it, `ack` =
//! receiver's in-order prefix (bytes), `ts` = the grant's send time, `aux2` bits
//! [`GRANT_ECE`], [`GRANT_RESENT`].
//!
//! Per-packet work is O(1) amortized; state is a few bits per packet of each active flow.

use crate::config::FieldError;
use crate::packet::{Ecn, FlowId, NodeId, Packet, PacketFlags};
use crate::transport::blocks::bitmap;
use crate::transport::{token, untoken, Ctx, FlowInfo, FlowStats, NetInfo, TimerSlot, Transport};
use crate::units::{Bytes, Time};
use serde::Deserialize;
use std::collections::VecDeque;

/// Data packet.
pub const KIND_DATA: u8 = 1;
/// Grant (receiver -> sender).
pub const KIND_GRANT: u8 = 2;
/// Completion ACK (receiver -> sender).
pub const KIND_ACK: u8 = 3;
/// Grant `aux2` bit: ECN-Echo (the packet that caused it was a CE-marked normal packet).
pub const GRANT_ECE: u32 = 1;
/// Grant `aux2` bit: this grant repeats an unanswered one (same serial).
pub const GRANT_RESENT: u32 = 2;
/// Data `aux` of a packet no grant released (sender timeout).
pub const NO_SERIAL: u64 = u64::MAX;
/// Data `aux2` bit: a retransmission.
pub const DATA_RETX: u32 = 1;
/// Data `aux2` bit: the packet fills its grant's opportunistic slot (sent as an
/// opportunistic packet, or resent as a normal one where the loops met); it does not answer
/// the grant.
pub const DATA_OPP_SLOT: u32 = 2;

const TIMER_GRANT: u8 = 1;
const TIMER_SENDER: u8 = 2;
/// Grant map entry: no packet.
const NONE: u32 = u32::MAX;
/// Grant map entry: this serial's grant has not been received.
const UNSEEN: u32 = u32::MAX - 1;

/// How a data packet is sent: which slot of its grant it fills, and in which class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// The grant's normal packet (or a first-RTT or sender-timeout packet): it answers the grant.
    Normal,
    /// The grant's opportunistic packet, sent as an opportunistic packet.
    Opp,
    /// The grant's opportunistic packet resent as a normal packet (the loops met).
    OppAsNormal,
}

/// Which normal packets are flagged droppable (`UNSCHEDULED`) for the switches.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NormalDrop {
    /// Only the first-RTT (ungranted) packets.
    FirstRtt,
    /// Every normal data packet.
    All,
    /// None.
    Off,
}

/// Which RTT the per-grant timer multiplies.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantRtt {
    /// The receiver's smoothed grant-to-data round trip of the flow (starts at the base RTT).
    Measured,
    /// The flow's base RTT (the idle path).
    Base,
}

/// The `[transport]` table of `protocol = "rpo"`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RpoConfig {
    pub bdp_bytes: Option<Bytes>,
    pub host_opp_queue: Option<u64>,
    pub grant_timeout: Option<Time>,
    pub grant_rtt: Option<GrantRtt>,
    pub sender_timeout: Option<Time>,
    pub normal_drop: Option<NormalDrop>,
    pub ctrl_prio: Option<u8>,
    pub normal_prio: Option<u8>,
    pub opp_prio: Option<u8>,
}

/// Errors of the protocol's table (the shared shape, [`crate::config::ProtocolConfigError`]).
pub type RpoConfigError = crate::config::ProtocolConfigError;

impl From<FieldError> for RpoConfigError {
    fn from(e: FieldError) -> Self {
        RpoConfigError::Parse(e)
    }
}

/// Resolved RPO parameters (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct RpoParams {
    pub mtu: u64,
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    /// Fixed first-RTT bytes; `None`: each flow's host rate x base RTT.
    pub bdp_bytes: Option<u64>,
    /// Opportunistic releases a host keeps waiting for its idle NIC.
    pub host_opp_queue: u64,
    /// Fixed grant timeout; `None`: 3 x the flow's RTT (`grant_rtt`).
    pub grant_timeout: Option<Time>,
    pub grant_rtt: GrantRtt,
    /// Fixed sender timeout; `None`: 2 x the flow's grant timeout.
    pub sender_timeout: Option<Time>,
    pub normal_drop: NormalDrop,
    pub ctrl_prio: u8,
    pub normal_prio: u8,
    pub opp_prio: u8,
}

impl RpoConfig {
    pub fn resolve(&self, net: &NetInfo) -> Result<RpoParams, RpoConfigError> {
        let range =
            |field: &str, value: String, fix: String| RpoConfigError::OutOfRange { field: field.into(), value, fix };
        let classes = net.priorities.clamp(1, 8);
        if classes < 2 {
            return Err(range(
                "opp_prio",
                "(none)".into(),
                "RPO needs two strict-priority classes (normal and opportunistic): set network.priorities >= 2".into(),
            ));
        }
        let prio = |field: &str, v: Option<u8>, default: u8| -> Result<u8, RpoConfigError> {
            match v {
                None => Ok(default),
                Some(p) if p < classes => Ok(p),
                Some(p) => Err(range(
                    field,
                    p.to_string(),
                    format!("network.priorities is {classes}: use a class from 0 to {}", classes - 1),
                )),
            }
        };
        let pos_time = |field: &str, v: Option<Time>| -> Result<Option<Time>, RpoConfigError> {
            match v {
                Some(x) if x == Time::ZERO => {
                    Err(range(field, format!("\"{x}\""), "give a positive time, e.g. \"75us\"".into()))
                }
                v => Ok(v),
            }
        };
        let ctrl_prio = prio("ctrl_prio", self.ctrl_prio, 0)?;
        let normal_prio = prio("normal_prio", self.normal_prio, 1.min(classes - 2))?;
        let opp_prio = prio("opp_prio", self.opp_prio, classes - 1)?;
        if opp_prio <= normal_prio {
            return Err(range(
                "opp_prio",
                opp_prio.to_string(),
                format!("opportunistic packets need a class below the normal class {normal_prio}: use a larger number"),
            ));
        }
        if self.bdp_bytes == Some(Bytes::ZERO) {
            return Err(range("bdp_bytes", "\"0B\"".into(), "give a positive size, e.g. \"50KB\"".into()));
        }
        Ok(RpoParams {
            mtu: net.mtu.0,
            mss: net.mss(),
            header: net.header.0,
            ctrl_size: net.ctrl_size.0,
            bdp_bytes: self.bdp_bytes.map(|b| b.0),
            host_opp_queue: self
                .host_opp_queue
                .unwrap_or_else(|| net.max_host_rate.bdp(net.max_base_rtt).0.div_ceil(net.mtu.0.max(1)).max(1)),
            grant_timeout: pos_time("grant_timeout", self.grant_timeout)?,
            grant_rtt: self.grant_rtt.unwrap_or(GrantRtt::Measured),
            sender_timeout: pos_time("sender_timeout", self.sender_timeout)?,
            normal_drop: self.normal_drop.unwrap_or(NormalDrop::FirstRtt),
            ctrl_prio,
            normal_prio,
            opp_prio,
        })
    }
}

impl RpoParams {
    fn n_pkts(&self, size: u64) -> u64 {
        size.div_ceil(self.mss).max(1)
    }
    /// Packets sent in the first RTT (packets `0..first_rtt_pkts`, serials likewise).
    pub fn first_rtt_pkts(&self, flow: &FlowInfo) -> u64 {
        let bdp = self.bdp_bytes.unwrap_or_else(|| flow.host_rate.bdp(flow.base_rtt).0);
        bdp.div_ceil(self.mtu).max(1).min(self.n_pkts(flow.size.0))
    }
    /// The grant timeout of a flow whose receiver has not measured its RTT yet.
    pub fn grant_timeout(&self, flow: &FlowInfo) -> Time {
        self.grant_timeout.unwrap_or(flow.base_rtt * 3).max(Time(1))
    }
    /// The grant timeout once the smoothed grant-to-data RTT is `srtt`.
    fn grant_timeout_at(&self, flow: &FlowInfo, srtt: Time) -> Time {
        match (self.grant_timeout, self.grant_rtt) {
            (Some(t), _) => t.max(Time(1)),
            (None, GrantRtt::Base) => self.grant_timeout(flow),
            (None, GrantRtt::Measured) => (srtt.max(flow.base_rtt) * 3).max(Time(1)),
        }
    }
    pub fn sender_timeout(&self, flow: &FlowInfo) -> Time {
        self.sender_timeout.unwrap_or_else(|| self.grant_timeout(flow) * 2)
    }
}

/// Source-side state of one flow.
#[derive(Debug)]
struct SendFlow {
    dst: NodeId,
    size: u64,
    n: u64,
    /// Packets reported delivered.
    delivered: Vec<u64>,
    /// Highest in-order prefix reported (packets).
    cum: u64,
    /// Packets sent at least once.
    sent: Vec<u64>,
    /// Packets with a copy still in this host's NIC (handed to it, last bit not yet sent).
    in_nic: Vec<u64>,
    /// Next new normal packet (head pointer); the highest normal packet sent is `next_new - 1`.
    next_new: u64,
    /// Lowest opportunistic packet sent (`n` when none).
    opp_low: u64,
    /// Where the loops met: the next opportunistic packet to consider resending as normal.
    scan: u64,
    /// Grant serial -> (normal packet, opportunistic packet) it released; index = serial - base.
    grants: VecDeque<(u32, u32)>,
    base: u64,
    last_heard: Time,
    timer: TimerSlot,
}

impl SendFlow {
    fn met(&self) -> bool {
        self.next_new >= self.opp_low
    }
    fn is_delivered(&self, i: u64) -> bool {
        i < self.cum || bitmap::get(&self.delivered, i)
    }
    /// Whether packet `i` needs sending again: not reported delivered and no copy of it
    /// still waiting in this host's NIC.
    fn needs_resend(&self, i: u64) -> bool {
        !self.is_delivered(i) && !bitmap::get(&self.in_nic, i)
    }
    /// The grant map entry of `serial`, growing the map with unseen entries.
    fn entry(&mut self, serial: u64) -> Option<&mut (u32, u32)> {
        if serial < self.base {
            return None;
        }
        let i = (serial - self.base) as usize;
        if i >= self.grants.len() {
            self.grants.resize(i + 1, (UNSEEN, UNSEEN));
        }
        self.grants.get_mut(i)
    }
    /// Drop resolved entries from the front of the grant map.
    fn trim(&mut self) {
        while let Some(&(a, b)) = self.grants.front() {
            let done = |x: u32| x == NONE || (x != UNSEEN && self.is_delivered(x as u64));
            if a == UNSEEN || !done(a) || !done(b) {
                break;
            }
            self.grants.pop_front();
            self.base += 1;
        }
    }
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
    n: u64,
    got: Vec<u64>,
    got_pkts: u64,
    /// In-order prefix (packets).
    cum: u64,
    /// Payload held above the in-order prefix (the re-sequencing buffer).
    held: u64,
    /// Grant serials answered by an arriving packet.
    answered: Vec<u64>,
    /// Outstanding grants in order of deadline: (serial, deadline, ECN-Echo).
    pending: VecDeque<(u64, Time, bool)>,
    next_serial: u64,
    /// First-RTT packets (their serials are `0..first`).
    first: u64,
    timeout: Time,
    /// Smoothed grant-to-data round trip (gain 1/8, as TCP's SRTT); starts at the base RTT.
    srtt: Time,
    timer: TimerSlot,
}

#[derive(Debug)]
enum Rcv {
    Unknown,
    Active(Box<RecvFlow>),
    Done,
}

/// Per-host sender state.
#[derive(Debug, Default)]
struct HostState {
    /// The NIC holds or serializes a packet this transport handed it.
    nic_busy: bool,
    /// Opportunistic releases waiting for the idle NIC: (flow, serial of the grant).
    opp_wait: VecDeque<(FlowId, u64)>,
}

/// RPO for every host of a run.
pub struct Rpo {
    p: RpoParams,
    hosts: Vec<HostState>,
    snd: Vec<Snd>,
    rcv: Vec<Rcv>,
    stats: Vec<FlowStats>,
    /// Per host: current and largest re-sequencing buffer (sum over its flows).
    held: Vec<u64>,
    held_max: Vec<u64>,
}

impl Rpo {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Rpo, RpoConfigError> {
        let c: RpoConfig =
            if cfg.is_null() { RpoConfig::default() } else { crate::config::from_table(cfg, "transport")? };
        Ok(Rpo::new(c.resolve(net)?, net.num_nodes))
    }

    pub fn new(p: RpoParams, num_nodes: usize) -> Rpo {
        Rpo {
            p,
            hosts: (0..num_nodes).map(|_| HostState::default()).collect(),
            snd: vec![],
            rcv: vec![],
            stats: vec![],
            held: vec![0; num_nodes],
            held_max: vec![0; num_nodes],
        }
    }

    pub fn params(&self) -> &RpoParams {
        &self.p
    }

    /// Largest re-sequencing buffer (payload bytes held above the in-order prefixes of all its
    /// flows at once) host `host` needed so far.
    pub fn max_reorder_bytes(&self, host: NodeId) -> u64 {
        self.held_max.get(host as usize).copied().unwrap_or(0)
    }

    /// The classes of RPO's opportunistic packets (for queue reports).
    pub fn lp_classes(net: &NetInfo, cfg: &serde_json::Value) -> Vec<u8> {
        let c: RpoConfig = if cfg.is_null() {
            RpoConfig::default()
        } else {
            crate::config::from_table(cfg, "transport").unwrap_or_default()
        };
        c.resolve(net).map(|p| vec![p.opp_prio]).unwrap_or_default()
    }

    fn grow(&mut self, n: usize) {
        if self.snd.len() < n {
            self.snd.resize_with(n, || Snd::Unknown);
            self.rcv.resize_with(n, || Rcv::Unknown);
            self.stats.resize(n, FlowStats::default());
        }
    }

    /// Whatever a callback handed the NIC keeps it busy until its next idle report.
    fn note_busy(&mut self, ctx: &Ctx) {
        if !ctx.out.sends.is_empty() {
            self.hosts[ctx.host as usize].nic_busy = true;
        }
    }

    fn ctrl(&self, kind: u8, flow: FlowId, src: NodeId, dst: NodeId) -> Packet {
        Packet { src, dst, flow, size: self.p.ctrl_size as u32, prio: self.p.ctrl_prio, kind, ..Packet::default() }
    }

    // ------------------------------------------------------------------ sender

    /// Send packet `i` of flow `f`: as a normal packet (`opp` false) or opportunistic one.
    /// `echo`: the send time of the fresh grant that released this first transmission (the
    /// receiver's RTT sample), else 0.
    #[allow(clippy::too_many_arguments)]
    fn send_data(&mut self, ctx: &mut Ctx, f: FlowId, i: u64, slot: Slot, serial: u64, droppable: bool, echo: u64) {
        let opp = slot == Slot::Opp;
        let p = &self.p;
        let Snd::Active(s) = &mut self.snd[f as usize] else { return };
        let off = i * p.mss;
        let payload = s.size.saturating_sub(off).min(p.mss);
        let again = bitmap::set(&mut s.sent, i);
        bitmap::set(&mut s.in_nic, i);
        let st = &mut self.stats[f as usize];
        if again {
            st.retx_bytes += payload;
        }
        let mut flags = PacketFlags(PacketFlags::DATA);
        if opp {
            flags.set(PacketFlags::OPPORTUNISTIC);
            st.lp_sent_bytes += payload;
        } else if droppable {
            flags.set(PacketFlags::UNSCHEDULED);
        }
        ctx.out.send(Packet {
            src: ctx.host,
            dst: s.dst,
            flow: f,
            size: (payload + p.header) as u32,
            payload: payload as u32,
            prio: if opp { p.opp_prio } else { p.normal_prio },
            ecn: Ecn::Ect,
            flags,
            kind: KIND_DATA,
            seq: off,
            ack: if again { 0 } else { echo },
            aux: serial,
            aux2: if again { DATA_RETX } else { 0 } | if slot == Slot::Normal { 0 } else { DATA_OPP_SLOT },
            ts: ctx.now,
            ..Packet::default()
        });
    }

    fn arm_sender_timer(&mut self, ctx: &mut Ctx, f: FlowId) {
        let to = self.p.sender_timeout(&ctx.flows[f as usize]);
        if let Snd::Active(s) = &mut self.snd[f as usize] {
            let at = s.last_heard + to;
            if !s.timer.is_armed() {
                let g = s.timer.arm(at);
                ctx.out.timer(at, token(f, TIMER_SENDER, g));
            }
        }
    }

    /// The normal packet a fresh grant releases (see the module doc), or `None`.
    fn next_normal(s: &mut SendFlow) -> Option<u64> {
        if !s.met() {
            let i = s.next_new;
            s.next_new += 1;
            return Some(i);
        }
        while s.scan < s.n {
            let i = s.scan;
            s.scan += 1;
            if !s.is_delivered(i) {
                return Some(i);
            }
        }
        None
    }

    /// The opportunistic packet a grant without ECN-Echo releases, or `None`.
    fn next_opp(s: &mut SendFlow) -> Option<u64> {
        if s.met() {
            return None;
        }
        if s.opp_low > s.next_new {
            s.opp_low -= 1;
            s.scan = s.opp_low;
            return Some(s.opp_low);
        }
        None
    }

    fn on_grant(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        let Some(Snd::Active(s)) = self.snd.get_mut(f as usize) else { return };
        let mss = self.p.mss;
        // Delivery report: the packet that caused the grant and the in-order prefix. Only
        // news (a packet not known delivered, a longer prefix, a grant never seen) puts off
        // the sender timeout: grants re-sent for packets already delivered do not.
        let mut news = false;
        if pkt.aux2 & GRANT_RESENT == 0 {
            news |= !bitmap::set(&mut s.delivered, pkt.seq / mss);
        }
        let cum = pkt.ack.div_ceil(mss).min(s.n);
        news |= cum > s.cum;
        s.cum = s.cum.max(cum);
        let serial = pkt.aux;
        let ece = pkt.aux2 & GRANT_ECE != 0;
        let Some(&mut (a, b)) = s.entry(serial) else {
            if news {
                s.last_heard = ctx.now;
            }
            s.trim();
            self.arm_sender_timer(ctx, f);
            return;
        };
        if news || a == UNSEEN {
            s.last_heard = ctx.now;
        }
        let mut out: [(u64, Slot); 2] = [(u64::MAX, Slot::Normal); 2];
        let mut echo = 0;
        let mut release_opp = false;
        if a == UNSEEN {
            // A fresh grant (or the re-sent copy of one that was lost). Its opportunistic
            // packet waits for the idle NIC (`host_opp_queue`) and is recorded when sent.
            let n = Self::next_normal(s);
            release_opp = !ece && !s.met();
            let e = s.entry(serial).expect("entry exists");
            *e = (n.map_or(NONE, |x| x as u32), NONE);
            if let Some(n) = n {
                out[0] = (n, Slot::Normal);
                echo = pkt.ts.0;
            }
        } else if pkt.aux2 & GRANT_RESENT != 0 {
            // Re-sent grant: resend what it released and is not reported delivered.
            if a != NONE && s.needs_resend(a as u64) {
                out[0] = (a as u64, Slot::Normal);
            }
            if b != NONE && s.needs_resend(b as u64) {
                // §IV-C: as a normal packet once the normal packets passed the
                // opportunistic ones, else again as an opportunistic packet.
                out[1] = (b as u64, if s.met() { Slot::OppAsNormal } else { Slot::Opp });
            }
        }
        s.trim();
        let all = self.p.normal_drop == NormalDrop::All;
        for (i, slot) in out {
            if i != u64::MAX {
                let normal = slot == Slot::Normal;
                self.send_data(ctx, f, i, slot, serial, all && slot != Slot::Opp, if normal { echo } else { 0 });
            }
        }
        if release_opp {
            let h = &mut self.hosts[ctx.host as usize];
            if (h.opp_wait.len() as u64) < self.p.host_opp_queue {
                h.opp_wait.push_back((f, serial));
            }
            self.try_send_opp(ctx);
        }
        self.arm_sender_timer(ctx, f);
    }

    /// If the NIC of `ctx.host` is idle, send the opportunistic packet of the oldest waiting
    /// release that still has one.
    fn try_send_opp(&mut self, ctx: &mut Ctx) {
        let h = ctx.host as usize;
        if self.hosts[h].nic_busy || !ctx.out.sends.is_empty() {
            return;
        }
        while let Some((f, serial)) = self.hosts[h].opp_wait.pop_front() {
            let Some(Snd::Active(s)) = self.snd.get_mut(f as usize) else { continue };
            let Some(o) = Self::next_opp(s) else { continue };
            if let Some(e) = s.entry(serial) {
                e.1 = o as u32;
            }
            self.send_data(ctx, f, o, Slot::Opp, serial, false, 0);
            return;
        }
    }

    fn on_sender_timer(&mut self, ctx: &mut Ctx, f: FlowId) {
        let to = self.p.sender_timeout(&ctx.flows[f as usize]);
        let Some(Snd::Active(s)) = self.snd.get_mut(f as usize) else { return };
        if ctx.now < s.last_heard + to {
            self.arm_sender_timer(ctx, f);
            return;
        }
        // No news for a whole timeout: resend the lowest packet not reported delivered,
        // unless a copy of it is still in this host's NIC. Once the loops met, the packets
        // above it that are still unreported may have no grant left to recover them (see
        // the module doc): later grants walk them again from there.
        let lowest = (s.cum..s.n).find(|&i| !s.is_delivered(i));
        s.last_heard = ctx.now;
        let i = lowest.unwrap_or(0);
        if s.met() && lowest.is_some() {
            s.scan = s.scan.min(i + 1);
        }
        if !bitmap::get(&s.in_nic, i) {
            self.stats[f as usize].timeouts += 1;
            self.send_data(ctx, f, i, Slot::Normal, NO_SERIAL, false, 0);
        }
        self.arm_sender_timer(ctx, f);
    }

    // ------------------------------------------------------------------ receiver

    fn send_grant(&mut self, ctx: &mut Ctx, f: FlowId, serial: u64, seq: u64, ece: bool, resent: bool) {
        let Rcv::Active(r) = &self.rcv[f as usize] else { return };
        let mut g = self.ctrl(KIND_GRANT, f, ctx.host, r.src);
        g.aux = serial;
        g.seq = seq;
        g.ack = (r.cum * self.p.mss).min(ctx.flows[f as usize].size.0);
        g.aux2 = if ece { GRANT_ECE } else { 0 } | if resent { GRANT_RESENT } else { 0 };
        g.ts = ctx.now;
        ctx.out.send(g);
    }

    fn arm_grant_timer(ctx: &mut Ctx, f: FlowId, r: &mut RecvFlow) {
        while let Some(&(serial, _, _)) = r.pending.front() {
            if bitmap::get(&r.answered, serial) {
                r.pending.pop_front();
            } else {
                break;
            }
        }
        if let Some(&(_, at, _)) = r.pending.front() {
            if !r.timer.is_armed() {
                let g = r.timer.arm(at);
                ctx.out.timer(at, token(f, TIMER_GRANT, g));
            }
        }
    }

    fn on_data(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        let h = ctx.host as usize;
        let opp = pkt.flags.has(PacketFlags::OPPORTUNISTIC);
        if opp {
            self.stats[f as usize].lp_rcvd_bytes += pkt.payload as u64;
        }
        if matches!(self.rcv[f as usize], Rcv::Done) {
            let a = self.ctrl(KIND_ACK, f, ctx.host, pkt.src);
            ctx.out.send(a);
            return;
        }
        if matches!(self.rcv[f as usize], Rcv::Unknown) {
            let fi = &ctx.flows[f as usize];
            let timeout = self.p.grant_timeout(fi);
            let first = self.p.first_rtt_pkts(fi);
            // The first-RTT packets are implicitly granted (serials 0..first).
            let at = ctx.now + timeout;
            let pending = (0..first).map(|s| (s, at, false)).collect();
            self.rcv[f as usize] = Rcv::Active(Box::new(RecvFlow {
                src: fi.src,
                n: self.p.n_pkts(fi.size.0),
                got: vec![],
                got_pkts: 0,
                cum: 0,
                held: 0,
                answered: vec![],
                pending,
                next_serial: first,
                first,
                timeout,
                srtt: fi.base_rtt,
                timer: TimerSlot::default(),
            }));
        }
        let mss = self.p.mss;
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        if pkt.aux != NO_SERIAL && !opp && pkt.aux2 & DATA_OPP_SLOT == 0 {
            bitmap::set(&mut r.answered, pkt.aux);
        }
        // RTT sample: a first transmission released by a fresh grant echoes the grant's send
        // time in `ack` (Karn's rule: never a retransmission).
        if !opp && pkt.ack != 0 && pkt.aux2 & DATA_RETX == 0 && ctx.now.0 > pkt.ack {
            let sample = ctx.now.0 - pkt.ack;
            r.srtt = Time(r.srtt.0 - r.srtt.0 / 8 + sample / 8);
            r.timeout = self.p.grant_timeout_at(&ctx.flows[f as usize], r.srtt);
        }
        let i = pkt.seq / mss;
        let fresh = i < r.n && !bitmap::get(&r.got, i);
        if fresh {
            bitmap::set(&mut r.got, i);
            r.got_pkts += 1;
            if i == r.cum {
                r.cum += 1;
                while bitmap::get(&r.got, r.cum) {
                    r.cum += 1;
                    let b = mss.min(ctx.flows[f as usize].size.0.saturating_sub((r.cum - 1) * mss));
                    r.held -= b;
                    self.held[h] -= b;
                }
            } else {
                r.held += pkt.payload as u64;
                self.held[h] += pkt.payload as u64;
                self.held_max[h] = self.held_max[h].max(self.held[h]);
                let st = &mut self.stats[f as usize];
                st.reorder_max_bytes = st.reorder_max_bytes.max(r.held);
            }
        }
        if r.got_pkts == r.n {
            self.held[h] -= r.held;
            let src = r.src;
            self.rcv[f as usize] = Rcv::Done;
            ctx.out.complete(f);
            let a = self.ctrl(KIND_ACK, f, ctx.host, src);
            ctx.out.send(a);
            return;
        }
        // One grant per arriving data packet; ECN-Echo for a CE-marked normal packet. Not for
        // a duplicate, nor for a resent first-RTT packet (see the module doc).
        let first_rtt_retx = pkt.aux2 & DATA_RETX != 0 && pkt.aux < r.first;
        if !fresh || first_rtt_retx {
            return;
        }
        let serial = r.next_serial;
        r.next_serial += 1;
        let ece = !opp && pkt.ecn == Ecn::Ce;
        let at = ctx.now + r.timeout;
        r.pending.push_back((serial, at, ece));
        Self::arm_grant_timer(ctx, f, r);
        self.send_grant(ctx, f, serial, pkt.seq, ece, false);
    }

    fn on_grant_timer(&mut self, ctx: &mut Ctx, f: FlowId) {
        let now = ctx.now;
        let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) else { return };
        let mut resend: Vec<(u64, bool)> = Vec::new();
        while let Some(&(serial, at, ece)) = r.pending.front() {
            if bitmap::get(&r.answered, serial) {
                r.pending.pop_front();
                continue;
            }
            if at > now {
                break;
            }
            r.pending.pop_front();
            r.pending.push_back((serial, now + r.timeout, ece));
            resend.push((serial, ece));
        }
        Self::arm_grant_timer(ctx, f, r);
        for (serial, ece) in resend {
            self.stats[f as usize].timeouts += 1;
            self.send_grant(ctx, f, serial, 0, ece, true);
        }
    }
}

impl Transport for Rpo {
    fn name(&self) -> &'static str {
        "rpo"
    }

    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.grow(ctx.flows.len());
        let fi = &ctx.flows[flow as usize];
        let n = self.p.n_pkts(fi.size.0);
        let first = self.p.first_rtt_pkts(fi);
        let s = SendFlow {
            dst: fi.dst,
            size: fi.size.0,
            n,
            delivered: vec![],
            cum: 0,
            sent: vec![],
            in_nic: vec![],
            next_new: first,
            opp_low: n,
            scan: n,
            grants: (0..first).map(|i| (i as u32, NONE)).collect(),
            base: 0,
            last_heard: ctx.now,
            timer: TimerSlot::default(),
        };
        self.snd[flow as usize] = Snd::Active(Box::new(s));
        let droppable = self.p.normal_drop != NormalDrop::Off;
        for i in 0..first {
            self.send_data(ctx, flow, i, Slot::Normal, i, droppable, 0);
        }
        self.arm_sender_timer(ctx, flow);
        self.note_busy(ctx);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.grow(ctx.flows.len());
        match pkt.kind {
            KIND_DATA => self.on_data(ctx, pkt),
            KIND_GRANT => self.on_grant(ctx, pkt),
            KIND_ACK => {
                if let Some(s) = self.snd.get_mut(pkt.flow as usize) {
                    *s = Snd::Done;
                }
            }
            _ => {}
        }
        self.note_busy(ctx);
    }

    fn on_nic_idle(&mut self, ctx: &mut Ctx) {
        self.hosts[ctx.host as usize].nic_busy = false;
        self.try_send_opp(ctx);
        self.note_busy(ctx);
    }

    fn wants_nic_idle(&self) -> bool {
        true
    }

    fn on_tx_complete(&mut self, _ctx: &mut Ctx, pkt: &Packet) {
        if pkt.kind != KIND_DATA {
            return;
        }
        if let Some(Snd::Active(s)) = self.snd.get_mut(pkt.flow as usize) {
            bitmap::clear(&mut s.in_nic, pkt.seq / self.p.mss);
        }
    }

    fn wants_tx_complete(&self) -> bool {
        true
    }

    fn on_timer(&mut self, ctx: &mut Ctx, tok: u64) {
        let (f, kind, gen) = untoken(tok);
        self.grow(ctx.flows.len());
        match kind {
            TIMER_GRANT => {
                let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) else { return };
                if r.timer.fire(gen) {
                    self.on_grant_timer(ctx, f);
                }
            }
            TIMER_SENDER => {
                let Some(Snd::Active(s)) = self.snd.get_mut(f as usize) else { return };
                if s.timer.fire(gen) {
                    self.on_sender_timer(ctx, f);
                }
            }
            _ => {}
        }
        self.note_busy(ctx);
    }

    fn host_reorder_max_bytes(&self, host: NodeId) -> u64 {
        self.max_reorder_bytes(host)
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
    /// 12 us base RTT at 10 Gbps: BDP = 15,000 B = 10 packets of 1500 B.
    const RTT: Time = Time::us(12);

    fn net() -> NetInfo {
        NetInfo::for_tests(1500, RTT, Rate::gbps(10))
    }

    /// Flow 0 from host 0 to host 1 of `pkts` full packets.
    fn flows(pkts: u64) -> Vec<FlowInfo> {
        vec![FlowInfo {
            id: 0,
            src: 0,
            dst: 1,
            size: Bytes(pkts * MSS),
            start: Time::ZERO,
            base_rtt: RTT,
            path_rate: Rate::gbps(10),
            host_rate: Rate::gbps(10),
            deadline: None,
            background: false,
        }]
    }

    fn rpo(cfg: serde_json::Value) -> Rpo {
        Rpo::from_config(&cfg, &net()).unwrap()
    }

    fn call(host: NodeId, now: Time, fl: &[FlowInfo], f: impl FnOnce(&mut Ctx)) -> Actions {
        let mut out = Actions::new();
        f(&mut Ctx { now, host, flows: fl, out: &mut out });
        out
    }

    /// The sender's NIC (host 0) reports every data packet of `out` transmitted.
    fn nic_done(r: &mut Rpo, fl: &[FlowInfo], now: Time, out: &Actions) {
        for p in out.sends.iter().filter(|p| p.is_data()) {
            call(0, now, fl, |ctx| r.on_tx_complete(ctx, p));
        }
    }

    /// A grant arrives at the sender (host 0), then its NIC reports idle: every packet the
    /// grant released, the opportunistic one included; all of them are transmitted.
    fn grant_idle(r: &mut Rpo, fl: &[FlowInfo], now: Time, g: &Packet) -> Actions {
        let mut out = call(0, now, fl, |ctx| r.on_packet(ctx, g));
        let idle = call(0, now, fl, |ctx| r.on_nic_idle(ctx));
        out.sends.extend(idle.sends);
        out.timers.extend(idle.timers);
        nic_done(r, fl, now, &out);
        out
    }

    fn grant(serial: u64, report: u64, ece: bool) -> Packet {
        Packet {
            src: 1,
            dst: 0,
            flow: 0,
            size: 64,
            kind: KIND_GRANT,
            aux: serial,
            seq: report * MSS,
            aux2: if ece { GRANT_ECE } else { 0 },
            ..Packet::default()
        }
    }

    fn resent(serial: u64) -> Packet {
        Packet { aux2: GRANT_RESENT, seq: 0, ..grant(serial, 0, false) }
    }

    fn data(i: u64, serial: u64, opp: bool, ce: bool) -> Packet {
        let mut flags = PacketFlags(PacketFlags::DATA);
        if opp {
            flags.set(PacketFlags::OPPORTUNISTIC);
        }
        Packet {
            src: 0,
            dst: 1,
            flow: 0,
            size: 1500,
            payload: MSS as u32,
            flags,
            ecn: if ce { Ecn::Ce } else { Ect },
            kind: KIND_DATA,
            seq: i * MSS,
            aux: serial,
            ..Packet::default()
        }
    }
    use Ecn::Ect;

    /// (packet index, opportunistic, class, serial) of the data packets in `out`.
    fn sent(out: &Actions) -> Vec<(u64, bool, u8, u64)> {
        out.sends
            .iter()
            .filter(|p| p.is_data())
            .map(|p| (p.seq / MSS, p.flags.has(PacketFlags::OPPORTUNISTIC), p.prio, p.aux))
            .collect()
    }

    #[test]
    fn idle_start_sends_one_bdp_of_normal_packets_flagged_droppable() {
        let fl = flows(100);
        let mut r = rpo(json!({}));
        let out = call(0, Time::ZERO, &fl, |ctx| r.start_flow(ctx, 0));
        // 10 Gbps x 12 us = 15,000 B = 10 packets of 1500 B; normal class 1; serials 0..9.
        let want: Vec<_> = (0..10).map(|i| (i, false, 1, i)).collect();
        assert_eq!(sent(&out), want);
        assert!(out.sends.iter().all(|p| p.flags.has(PacketFlags::UNSCHEDULED) && p.ecn == Ect));
        // A flow shorter than the BDP sends all of it; "off" flags nothing.
        let mut r = rpo(json!({"normal_drop": "off"}));
        let out = call(0, Time::ZERO, &flows(4), |ctx| r.start_flow(ctx, 0));
        assert_eq!(sent(&out).len(), 4);
        assert!(out.sends.iter().all(|p| !p.flags.has(PacketFlags::UNSCHEDULED)));
    }

    #[test]
    fn sending_grant_without_ece_releases_head_normal_and_tail_opportunistic() {
        let fl = flows(100);
        let mut r = rpo(json!({}));
        call(0, Time::ZERO, &fl, |ctx| r.start_flow(ctx, 0));
        // The opportunistic packet waits until the NIC, busy with the normal one, goes idle.
        let out = call(0, Time::us(13), &fl, |ctx| r.on_packet(ctx, &grant(10, 0, false)));
        assert_eq!(sent(&out), vec![(10, false, 1, 10)]);
        assert!(!out.sends[0].flags.has(PacketFlags::UNSCHEDULED), "granted packets are not droppable");
        let out = call(0, Time::us(13), &fl, |ctx| r.on_nic_idle(ctx));
        assert_eq!(sent(&out), vec![(99, true, 7, 10)]);
        let out = grant_idle(&mut r, &fl, Time::us(14), &grant(11, 1, false));
        assert_eq!(sent(&out), vec![(11, false, 1, 11), (98, true, 7, 11)]);
        assert_eq!(r.flow_stats(0).lp_sent_bytes, 2 * MSS);
    }

    #[test]
    fn sending_grant_with_ece_releases_no_opportunistic_packet() {
        let fl = flows(100);
        let mut r = rpo(json!({}));
        call(0, Time::ZERO, &fl, |ctx| r.start_flow(ctx, 0));
        let out = grant_idle(&mut r, &fl, Time::us(13), &grant(10, 0, true));
        assert_eq!(sent(&out), vec![(10, false, 1, 10)]);
        // The next unmarked grant releases opportunistic packets again, from the tail.
        let out = grant_idle(&mut r, &fl, Time::us(14), &grant(11, 1, false));
        assert_eq!(sent(&out), vec![(11, false, 1, 11), (99, true, 7, 11)]);
    }

    #[test]
    fn loops_met_grant_resends_unreported_opportunistic_packets_as_normal_once() {
        // 14 packets: 0..9 in the first RTT; g10 -> 10 + opp 13, g11 -> 11 + opp 12: met.
        let fl = flows(14);
        let mut r = rpo(json!({}));
        call(0, Time::ZERO, &fl, |ctx| r.start_flow(ctx, 0));
        grant_idle(&mut r, &fl, Time::us(13), &grant(10, 0, false));
        let out = grant_idle(&mut r, &fl, Time::us(14), &grant(11, 1, false));
        assert_eq!(sent(&out), vec![(11, false, 1, 11), (12, true, 7, 11)]);
        // Grant 12 reports opportunistic packet 13 delivered: 12 is not, and goes as normal.
        let out = grant_idle(&mut r, &fl, Time::us(15), &grant(12, 13, false));
        assert_eq!(sent(&out), vec![(12, false, 1, 12)], "no new opportunistic packet once met");
        assert_eq!(r.flow_stats(0).retx_bytes, MSS);
        // Nothing else is left to resend: later grants release nothing.
        let out = grant_idle(&mut r, &fl, Time::us(16), &grant(13, 2, false));
        assert!(sent(&out).is_empty());
    }

    #[test]
    fn sending_resent_grant_resends_lost_normal_as_normal_and_lost_opportunistic_by_the_rule() {
        let fl = flows(100);
        let mut r = rpo(json!({}));
        let out = call(0, Time::ZERO, &fl, |ctx| r.start_flow(ctx, 0));
        nic_done(&mut r, &fl, Time::us(12), &out);
        grant_idle(&mut r, &fl, Time::us(13), &grant(10, 0, false));
        // Grant 10 released 10 and opp 99; neither arrived. Before the loops meet the
        // opportunistic packet goes again as opportunistic; both keep serial 10.
        let out = grant_idle(&mut r, &fl, Time::us(50), &resent(10));
        assert_eq!(sent(&out), vec![(10, false, 1, 10), (99, true, 7, 10)]);
        assert_eq!(r.flow_stats(0).retx_bytes, 2 * MSS);
        // A re-sent first-RTT grant resends that packet, normal and no longer droppable.
        let out = grant_idle(&mut r, &fl, Time::us(51), &resent(3));
        assert_eq!(sent(&out), vec![(3, false, 1, 3)]);
        assert!(!out.sends[0].flags.has(PacketFlags::UNSCHEDULED));
        // Reported delivered: a re-sent grant resends nothing.
        grant_idle(&mut r, &fl, Time::us(52), &grant(11, 3, false));
        let out = grant_idle(&mut r, &fl, Time::us(53), &resent(3));
        assert!(sent(&out).is_empty());

        // After the loops met, a lost opportunistic packet goes as a normal packet.
        let fl = flows(12);
        let mut r = rpo(json!({}));
        call(0, Time::ZERO, &fl, |ctx| r.start_flow(ctx, 0));
        let out = grant_idle(&mut r, &fl, Time::us(13), &grant(10, 0, false));
        assert_eq!(sent(&out), vec![(10, false, 1, 10), (11, true, 7, 10)]);
        let out = grant_idle(&mut r, &fl, Time::us(50), &resent(10));
        assert_eq!(sent(&out), vec![(10, false, 1, 10), (11, false, 1, 10)]);
        // Only the normal packet answers grant 10; the opportunistic one says which slot it fills.
        let slots: Vec<u32> = out.sends.iter().map(|p| p.aux2 & DATA_OPP_SLOT).collect();
        assert_eq!(slots, vec![0, DATA_OPP_SLOT]);
    }

    #[test]
    fn receiving_opportunistic_slot_resent_as_normal_leaves_its_grant_unanswered() {
        // bdp_bytes 3000 B: first RTT = packets 0 and 1 (serials 0, 1); grants 2, 3 follow.
        let fl = flows(10);
        for (slot, resent_serials) in [(DATA_OPP_SLOT, vec![2]), (0, vec![])] {
            let mut r = rpo(json!({"bdp_bytes": "3000B"}));
            let out = call(1, Time::us(10), &fl, |ctx| r.on_packet(ctx, &data(0, 0, false, false)));
            let (at, tok) = out.timers[0];
            call(1, Time::us(11), &fl, |ctx| r.on_packet(ctx, &data(1, 1, false, false)));
            // Grant 2's packets: the normal one (2) is lost; its opportunistic one (9) arrives
            // as a normal packet with serial 2.
            let mut d = data(9, 2, false, false);
            d.aux2 = DATA_RETX | slot;
            call(1, Time::us(20), &fl, |ctx| r.on_packet(ctx, &d));
            call(1, Time::us(21), &fl, |ctx| r.on_packet(ctx, &data(3, 3, false, false)));
            // Expiries up to 3 x RTT after grant 3 (sent at 11 us; grant 4 at 20 us, 5 at 21 us).
            let out = call(1, at, &fl, |ctx| r.on_timer(ctx, tok));
            let (at2, tok2) = out.timers[0];
            assert_eq!(at2, Time::us(56), "grant 4, sent at 20 us, is next due");
            let mut again: Vec<u64> = out.sends.iter().map(|p| p.aux).collect();
            let out = call(1, at2, &fl, |ctx| r.on_timer(ctx, tok2));
            again.extend(out.sends.iter().filter(|p| p.aux <= 3).map(|p| p.aux));
            assert_eq!(
                again, resent_serials,
                "opportunistic slot {slot}: grant 2 re-sent only while packet 2 is missing"
            );
        }
    }

    #[test]
    fn sending_resent_grant_for_packets_still_in_the_nic_resends_nothing_until_they_leave() {
        let fl = flows(100);
        let mut r = rpo(json!({}));
        let first = call(0, Time::ZERO, &fl, |ctx| r.start_flow(ctx, 0));
        // Grant 10 releases packet 10; the NIC has not sent it (nor the first RTT's 0..9).
        let g10 = call(0, Time::us(13), &fl, |ctx| r.on_packet(ctx, &grant(10, 0, false)));
        assert_eq!(sent(&g10), vec![(10, false, 1, 10)]);
        for serial in [10, 4] {
            let out = call(0, Time::us(50), &fl, |ctx| r.on_packet(ctx, &resent(serial)));
            assert!(sent(&out).is_empty(), "serial {serial}: its packet still waits in the NIC");
        }
        assert_eq!(r.flow_stats(0).retx_bytes, 0);
        // Once transmitted (and still not reported delivered) the same re-sent grants resend.
        nic_done(&mut r, &fl, Time::us(60), &first);
        nic_done(&mut r, &fl, Time::us(60), &g10);
        let out = call(0, Time::us(70), &fl, |ctx| r.on_packet(ctx, &resent(10)));
        assert_eq!(sent(&out), vec![(10, false, 1, 10)]);
        let out = call(0, Time::us(70), &fl, |ctx| r.on_packet(ctx, &resent(4)));
        assert_eq!(sent(&out), vec![(4, false, 1, 4)]);
        // The copies just resent are in the NIC again: a third re-sent grant adds nothing.
        let out = call(0, Time::us(80), &fl, |ctx| r.on_packet(ctx, &resent(10)));
        assert!(sent(&out).is_empty());
    }

    #[test]
    fn receiving_granted_data_measures_the_grant_rtt_and_stretches_the_grant_timer() {
        let fl = flows(100);
        // The sender echoes the send time of the fresh grant in the normal packet it releases.
        let mut snd = rpo(json!({}));
        call(0, Time::ZERO, &fl, |ctx| snd.start_flow(ctx, 0));
        let mut g = grant(10, 0, false);
        g.ts = Time::us(13);
        let out = call(0, Time::us(14), &fl, |ctx| snd.on_packet(ctx, &g));
        assert_eq!(out.sends[0].ack, Time::us(13).0);
        // Receiver: flow known at 10 us with 3 x 12 us timers; a grant sent at 20 us whose
        // packet arrives 92 us later: SRTT = 12 + (92 - 12) / 8 = 22 us, timer 66 us.
        let mut r = rpo(json!({}));
        call(1, Time::us(10), &fl, |ctx| r.on_packet(ctx, &data(0, 0, false, false)));
        let mut d = data(10, 10, false, false);
        d.ack = Time::us(20).0;
        let out = call(1, Time::us(112), &fl, |ctx| r.on_packet(ctx, &d));
        let Rcv::Active(rf) = &r.rcv[0] else { panic!("flow active") };
        assert_eq!((rf.srtt, rf.timeout), (Time::us(22), Time::us(66)));
        assert_eq!(out.sends[0].ts, Time::us(112), "grants carry their send time");
        // A retransmission gives no sample (Karn); "base" keeps 3 x the base RTT.
        let mut d = data(11, 11, false, false);
        d.ack = Time::us(20).0;
        d.aux2 = DATA_RETX;
        call(1, Time::us(300), &fl, |ctx| r.on_packet(ctx, &d));
        let Rcv::Active(rf) = &r.rcv[0] else { panic!("flow active") };
        assert_eq!(rf.srtt, Time::us(22));
        let mut r = rpo(json!({"grant_rtt": "base"}));
        call(1, Time::us(10), &fl, |ctx| r.on_packet(ctx, &data(0, 0, false, false)));
        let mut d = data(10, 10, false, false);
        d.ack = Time::us(20).0;
        call(1, Time::us(112), &fl, |ctx| r.on_packet(ctx, &d));
        let Rcv::Active(rf) = &r.rcv[0] else { panic!("flow active") };
        assert_eq!(rf.timeout, Time::us(36));
    }

    #[test]
    fn sending_resent_grant_whose_original_was_lost_acts_as_the_original() {
        let fl = flows(100);
        let mut r = rpo(json!({}));
        call(0, Time::ZERO, &fl, |ctx| r.start_flow(ctx, 0));
        // Grant 10 lost; grant 11 arrives first and releases the head packet.
        let out = grant_idle(&mut r, &fl, Time::us(13), &grant(11, 0, false));
        assert_eq!(sent(&out), vec![(10, false, 1, 11), (99, true, 7, 11)]);
        let mut g = resent(10);
        g.aux2 |= GRANT_ECE;
        let out = grant_idle(&mut r, &fl, Time::us(50), &g);
        assert_eq!(sent(&out), vec![(11, false, 1, 10)], "new data; the original ECN-Echo holds");
        // The late original of an already-served serial releases nothing more.
        let out = grant_idle(&mut r, &fl, Time::us(51), &grant(10, 1, false));
        assert!(sent(&out).is_empty());
    }

    #[test]
    fn receiving_data_grants_each_arrival_and_echoes_ce_of_normal_packets_only() {
        let fl = flows(100);
        let mut r = rpo(json!({}));
        let out = call(1, Time::us(10), &fl, |ctx| r.on_packet(ctx, &data(0, 0, false, true)));
        assert_eq!(out.sends.len(), 1);
        let g = out.sends[0];
        assert_eq!((g.kind, g.dst, g.size, g.prio, g.aux, g.seq, g.ack), (KIND_GRANT, 0, 64, 0, 10, 0, MSS));
        assert_eq!(g.aux2, GRANT_ECE, "a CE normal packet is echoed");
        let out = call(1, Time::us(11), &fl, |ctx| r.on_packet(ctx, &data(99, 10, true, true)));
        assert_eq!(
            (out.sends[0].aux, out.sends[0].aux2, out.sends[0].seq),
            (11, 0, 99 * MSS),
            "opportunistic CE is not"
        );
        // A duplicate is not granted; nor is a resent first-RTT packet (serial < 10).
        let out = call(1, Time::us(12), &fl, |ctx| r.on_packet(ctx, &data(99, 10, true, false)));
        assert!(out.sends.is_empty());
        assert_eq!(r.flow_stats(0).lp_rcvd_bytes, 2 * MSS);
        let mut again = data(5, 5, false, false);
        again.aux2 = DATA_RETX;
        assert!(call(1, Time::us(13), &fl, |ctx| r.on_packet(ctx, &again)).sends.is_empty());
        let out = call(1, Time::us(14), &fl, |ctx| r.on_packet(ctx, &data(6, 6, false, false)));
        assert_eq!(out.sends[0].aux, 12, "a first transmission is granted");
    }

    #[test]
    fn receiving_grant_timeout_resends_unanswered_grants_with_their_serial() {
        // bdp_bytes 3000 B: first RTT = packets 0 and 1 (serials 0, 1). Timeout 3 x 12 us.
        let fl = flows(10);
        let mut r = rpo(json!({"bdp_bytes": "3000B"}));
        let t0 = Time::us(10);
        let out = call(1, t0, &fl, |ctx| r.on_packet(ctx, &data(0, 0, false, false)));
        assert_eq!(out.sends[0].aux, 2);
        assert_eq!(out.timers.len(), 1);
        let (at, tok) = out.timers[0];
        assert_eq!(at, t0 + Time::us(36), "first-RTT packet 1 expected within 3 x RTT");
        // Grant 2's packet (normal 2) arrives; packet 1 and grant 3's packet never do.
        call(1, Time::us(20), &fl, |ctx| r.on_packet(ctx, &data(2, 2, false, true)));
        let out = call(1, at, &fl, |ctx| r.on_timer(ctx, tok));
        let g: Vec<_> = out.sends.iter().map(|p| (p.kind, p.aux, p.aux2)).collect();
        assert_eq!(g, vec![(KIND_GRANT, 1, GRANT_RESENT)], "serial 1 again; 0 and 2 were answered");
        // Next expiry: grant 3 (sent at 20 us with ECN-Echo) at 56 us; then serial 1 at 82 us.
        let (at2, tok2) = out.timers[0];
        assert_eq!(at2, Time::us(56));
        let out = call(1, at2, &fl, |ctx| r.on_timer(ctx, tok2));
        let g: Vec<_> = out.sends.iter().map(|p| (p.aux, p.aux2)).collect();
        assert_eq!(g, vec![(3, GRANT_RESENT | GRANT_ECE)]);
        assert_eq!(out.timers[0].0, Time::us(82));
        assert_eq!(r.flow_stats(0).timeouts, 2);
        // A stale timer token does nothing.
        assert!(call(1, at2, &fl, |ctx| r.on_timer(ctx, tok2)).sends.is_empty());
    }

    #[test]
    fn receiving_out_of_order_data_tracks_the_resequencing_buffer_and_completes() {
        let fl = flows(10);
        let mut r = rpo(json!({}));
        for (k, i) in [0u64, 9, 8, 7].iter().enumerate() {
            call(1, Time::us(k as u64), &fl, |ctx| r.on_packet(ctx, &data(*i, 0, *i > 5, false)));
        }
        assert_eq!(r.max_reorder_bytes(1), 3 * MSS);
        let mut done = None;
        for i in 1..7u64 {
            let out = call(1, Time::us(10 + i), &fl, |ctx| r.on_packet(ctx, &data(i, 0, false, false)));
            if !out.completions.is_empty() {
                done = Some(i);
                let kinds: Vec<u8> = out.sends.iter().map(|p| p.kind).collect();
                assert_eq!(kinds, vec![KIND_ACK], "completion: ACK, no grant");
            }
        }
        assert_eq!(done, Some(6));
        assert_eq!(r.flow_stats(0).reorder_max_bytes, 3 * MSS);
        assert_eq!(r.held[1], 0, "buffer empty at completion");
        // A late duplicate gets the ACK again, never a grant.
        let out = call(1, Time::us(30), &fl, |ctx| r.on_packet(ctx, &data(5, 0, false, false)));
        assert_eq!(out.sends.iter().map(|p| p.kind).collect::<Vec<_>>(), vec![KIND_ACK]);
        assert!(out.completions.is_empty());
    }

    #[test]
    fn sending_timeout_without_news_resends_lowest_unreported_packet() {
        let fl = flows(100);
        let mut r = rpo(json!({}));
        let out = call(0, Time::ZERO, &fl, |ctx| r.start_flow(ctx, 0));
        nic_done(&mut r, &fl, Time::us(12), &out);
        let (at, tok) = out.timers[0];
        assert_eq!(at, Time::us(72), "2 x grant timeout = 6 x RTT");
        let out = call(0, at, &fl, |ctx| r.on_timer(ctx, tok));
        assert_eq!(sent(&out), vec![(0, false, 1, NO_SERIAL)]);
        assert!(!out.sends[0].flags.has(PacketFlags::UNSCHEDULED));
        assert_eq!(r.flow_stats(0).timeouts, 1);
        // A grant reporting packet 0 moves the deadline; at the old time nothing is sent.
        let (at2, tok2) = out.timers[0];
        grant_idle(&mut r, &fl, Time::us(100), &grant(10, 0, false));
        let out = call(0, at2, &fl, |ctx| r.on_timer(ctx, tok2));
        assert!(sent(&out).is_empty());
        assert_eq!(out.timers[0].0, Time::us(172));
        // After the completion ACK the sender is done: its timer sends nothing.
        let mut ack = grant(0, 0, false);
        ack.kind = KIND_ACK;
        call(0, Time::us(120), &fl, |ctx| r.on_packet(ctx, &ack));
        assert!(call(0, Time::us(172), &fl, |ctx| r.on_timer(ctx, out.timers[0].1)).sends.is_empty());
    }

    #[test]
    fn sending_timeout_is_not_put_off_by_resent_grants_for_delivered_packets() {
        let fl = flows(100);
        let mut r = rpo(json!({}));
        let out = call(0, Time::ZERO, &fl, |ctx| r.start_flow(ctx, 0));
        nic_done(&mut r, &fl, Time::us(12), &out);
        let (at, tok) = out.timers[0];
        // News at 13 us (packet 3 delivered); at 60 us grant 3 comes again: nothing to resend.
        grant_idle(&mut r, &fl, Time::us(13), &grant(10, 3, false));
        assert!(sent(&grant_idle(&mut r, &fl, Time::us(60), &resent(3))).is_empty());
        let out = call(0, at, &fl, |ctx| r.on_timer(ctx, tok));
        assert!(sent(&out).is_empty());
        let (at2, tok2) = out.timers[0];
        assert_eq!(at2, Time::us(13 + 72), "6 x RTT after the last news, not after the re-sent grant");
        let out = call(0, at2, &fl, |ctx| r.on_timer(ctx, tok2));
        assert_eq!(sent(&out), vec![(0, false, 1, NO_SERIAL)]);
    }

    #[test]
    fn sending_timeout_after_loops_met_walks_unreported_packets_again() {
        // 12 packets: 0..9 in the first RTT; grant 10 releases 10 and opportunistic 11: met.
        let fl = flows(12);
        let mut r = rpo(json!({}));
        let out = call(0, Time::ZERO, &fl, |ctx| r.start_flow(ctx, 0));
        nic_done(&mut r, &fl, Time::us(1), &out);
        grant_idle(&mut r, &fl, Time::us(13), &grant(10, 0, false));
        // Every packet but 5 and 8 is reported; the walk from 11 finds nothing: grants release nothing.
        for (k, i) in [11u64, 1, 2, 3, 4, 6, 7, 9, 10].into_iter().enumerate() {
            let out = grant_idle(&mut r, &fl, Time::us(14 + k as u64), &grant(11 + k as u64, i, false));
            assert!(sent(&out).is_empty(), "report {i}");
        }
        // No news for 6 x RTT: the timeout resends 5, and the next grant walks on to 8.
        let out = call(0, Time::us(200), &fl, |ctx| r.on_sender_timer(ctx, 0));
        assert_eq!(sent(&out), vec![(5, false, 1, NO_SERIAL)]);
        nic_done(&mut r, &fl, Time::us(201), &out);
        let out = grant_idle(&mut r, &fl, Time::us(210), &grant(20, 5, false));
        assert_eq!(sent(&out), vec![(8, false, 1, 20)]);
        let out = grant_idle(&mut r, &fl, Time::us(211), &grant(21, 8, false));
        assert!(sent(&out).is_empty(), "nothing unreported is left");
    }

    #[test]
    fn config_defaults_and_errors_name_the_field() {
        let p = rpo(serde_json::Value::Null).params().clone();
        assert_eq!((p.ctrl_prio, p.normal_prio, p.opp_prio), (0, 1, 7));
        assert_eq!(p.normal_drop, NormalDrop::FirstRtt);
        assert_eq!(p.grant_timeout(&flows(1)[0]), Time::us(36));
        let mut two = net();
        two.priorities = 2;
        let q = Rpo::from_config(&json!({}), &two).unwrap();
        assert_eq!((q.params().normal_prio, q.params().opp_prio), (0, 1));
        let mut one = net();
        one.priorities = 1;
        assert!(Rpo::from_config(&json!({}), &one).err().unwrap().to_string().contains("network.priorities >= 2"));
        let err = |v: serde_json::Value| Rpo::from_config(&v, &net()).err().unwrap().field();
        assert_eq!(err(json!({"nope": 1})), "transport.nope");
        assert_eq!(err(json!({"grant_timeout": "abc"})), "transport.grant_timeout");
        assert_eq!(err(json!({"grant_timeout": "0us"})), "transport.grant_timeout");
        assert_eq!(err(json!({"normal_drop": "some"})), "transport.normal_drop");
        assert_eq!(err(json!({"opp_prio": 1})), "transport.opp_prio");
        assert_eq!(err(json!({"opp_prio": 8})), "transport.opp_prio");
        assert_eq!(err(json!({"bdp_bytes": "0B"})), "transport.bdp_bytes");
    }
}
