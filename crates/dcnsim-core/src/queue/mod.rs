//! Egress-port queue policies.
//!
//! A switch egress port (and a host NIC) holds its waiting packets in a [`QueueDisc`]:
//! the policy decides admission (accept, drop, trim, mark) when a packet is offered and
//! which packet leaves next when the link frees. The packet being serialized has left
//! the queue. The default policy is [`priority::PriorityEcn`]: up to 8 strict-priority
//! FIFO queues sharing one per-port byte limit, drop-tail, DCTCP ECN marking on enqueue.
//!
//! New policies (Aeolus selective dropping, NDP trimming, RPO cross-queue marking,
//! pFabric priority dropping) are new modules implementing [`QueueDisc`], registered in
//! [`build`] only. Drop causes are free-form static names, so a policy adds its own
//! cause without editing any shared enum. What a policy may know about its port (role,
//! link rate, its own random stream) comes in one [`PortCtx`], so a policy that needs more
//! of the port extends that context, not the network layer.

pub mod credit;
pub mod crossmark;
pub mod hook;
pub mod int;
pub mod nic;
pub mod pdq;
pub mod pfabric;
pub mod priority;
pub mod selective;
pub mod trim;
pub mod winstamp;

use crate::host::NicQdisc;
use crate::packet::{PacketArena, PktIdx};
use crate::rng::Rng;
use crate::units::{Bytes, Rate, Time};

/// Drop cause: the queue's shared buffer was full.
pub const DROP_OVERFLOW: &str = "buffer_overflow";

/// What an enqueue did besides queueing the offered packet.
#[derive(Default, Debug)]
pub struct PortEffects {
    /// Packets dropped (possibly the offered one, possibly evicted ones) with their cause.
    pub drops: Vec<(PktIdx, &'static str)>,
    /// Packets whose payload was trimmed.
    pub trims: u64,
    /// Bytes the trims removed (wire size before minus after), for the port's byte balance.
    pub trimmed_bytes: u64,
    /// Packets already queued (not the offered one) whose payload this enqueue cut, for the
    /// packet trace (`crate::trace`); pushed only when a trim happens.
    pub trimmed_queued: Vec<PktIdx>,
}

impl PortEffects {
    pub fn clear(&mut self) {
        self.drops.clear();
        self.trims = 0;
        self.trimmed_bytes = 0;
        self.trimmed_queued.clear();
    }
}

/// A queueing discipline of one egress port.
pub trait QueueDisc {
    /// Offer packet `idx` (already in the arena). Dropped packets (the offered one or
    /// evicted ones) are reported in `fx.drops`; the caller frees them.
    fn enqueue(&mut self, now: Time, idx: PktIdx, pkts: &mut PacketArena, fx: &mut PortEffects);
    /// Take the next packet to serialize: (packet, its wire size). A policy that shapes
    /// (holds packets until a later time) may return `None` while packets wait; it must
    /// then say when to ask again through [`QueueDisc::next_ready`].
    fn dequeue(&mut self, now: Time, pkts: &mut PacketArena) -> Option<(PktIdx, u32)>;
    /// [`QueueDisc::dequeue`], and whether packets still wait after it (`!is_empty()`): what
    /// the runner asks at the end of every transmission, in one call where a policy can
    /// answer both at once (the default makes the two calls).
    #[inline]
    fn dequeue_more(&mut self, now: Time, pkts: &mut PacketArena) -> Option<(PktIdx, u32, bool)> {
        let (idx, size) = self.dequeue(now, pkts)?;
        Some((idx, size, !self.is_empty()))
    }
    /// Called by the engine when `dequeue(now)` returned `None` although the queue is not
    /// empty: the earliest time a waiting packet becomes eligible. The engine wakes the idle
    /// port then (a `TxDone` event) and calls `dequeue` again. Work-conserving policies
    /// never return `None` from a non-empty queue and keep this default.
    fn next_ready(&self, _now: Time) -> Option<Time> {
        None
    }
    /// Bytes waiting in all queues.
    fn bytes(&self) -> Bytes;
    /// Bytes waiting in priority class `prio`.
    fn queue_bytes(&self, prio: u8) -> Bytes;
    /// Number of priority classes.
    fn classes(&self) -> u8;
    fn is_empty(&self) -> bool {
        self.bytes().0 == 0
    }
    /// Largest wire size of a packet that, offered while this queue is empty and its port
    /// idle, would be accepted unchanged (no drop, mark or trim), leave the policy's state
    /// as it was, and be the very next packet dequeued. The runner sends such a packet
    /// straight to the link without calling `enqueue` and `dequeue` (a fast path for
    /// uncontended ports). Queried once when the port is built; 0 (the default) never
    /// bypasses the policy.
    fn idle_passthrough(&self) -> u32 {
        0
    }
}

/// Where a port sits, for policies whose parameters depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortRole {
    /// A host's NIC: never drops data, never marks (under `expresspass_credit` it drops
    /// credits above its credit queue, as switch ports do).
    HostNic,
    /// A switch egress port.
    Switch,
}

/// What a queue discipline is told about the port it serves when the network is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortCtx {
    pub role: PortRole,
    /// The rate of the port's link.
    pub rate: Rate,
    /// The port's id (its index among the network's egress ports).
    pub id: u32,
    /// The run's queue seed, derived from the scenario seed (stream
    /// [`crate::rng::streams::QUEUE`]); the same for every port of the run.
    pub seed: u64,
}

impl PortCtx {
    /// This port's own random stream: a function of the run's queue seed and the port id
    /// only, so the draws of one port never shift another port's (nor any other
    /// component's). Policies that decide nothing at random never call it.
    pub fn rng(&self) -> Rng {
        Rng::stream(self.seed, self.id as u64)
    }
}

/// Validated queue configuration shared by every switch port.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueConfig {
    pub policy: QueuePolicyKind,
    /// Per-port buffer limit shared by the priority queues.
    pub buffer: Bytes,
    pub classes: u8,
    /// ECN threshold per priority class (None: no marking in that class).
    pub ecn_k: Vec<Option<Bytes>>,
    /// Compare K with the port's total occupancy instead of the class's own.
    pub ecn_per_port: bool,
    /// Classes that compare K with the port's total occupancy even when `ecn_per_port` is
    /// off (default policy only).
    pub ecn_port_classes: Vec<u8>,
    /// Per-class admission limits, one per class (empty: none; default policy only).
    pub class_buffer: Vec<Bytes>,
    /// Classes whose queued packets a higher-class arrival may push out of a full buffer
    /// (default policy only; empty = drop-tail).
    pub pushout_classes: Vec<u8>,
    /// Parameters of the other policies (used only by the policy they belong to).
    pub selective: selective::SelectiveDropConfig,
    pub trim: trim::TrimConfig,
    pub pfabric: pfabric::PFabricConfig,
    pub crossmark: crossmark::CrossMarkConfig,
    pub credit: credit::CreditConfig,
    /// The host NICs' queueing discipline (`[host]`).
    pub nic: NicConfig,
    /// Wrap every switch port's policy in [`int::IntStamp`] (in-band telemetry), because the
    /// run's protocol reads it (`transport::Derived::int`).
    pub int: bool,
    /// Wrap every switch port's policy in [`winstamp::WindowStamp`] (a per-port maximum window
    /// stamped into data packets, counting flows per this period), because the run's protocol
    /// reads it (`transport::Derived::window_stamp`). `None`: no stamping.
    pub window_stamp: Option<Time>,
    /// Run PDQ's flow controller on every port (switches and host NICs), for `pdq`.
    pub pdq: Option<pdq::PdqSwitchParams>,
}

/// How host NICs queue (`host.nic_qdisc`, `host.nic_quantum`; see `crate::host`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NicConfig {
    pub qdisc: NicQdisc,
    /// Deficit round-robin quantum of the fair disciplines.
    pub quantum: Bytes,
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig { qdisc: NicQdisc::PrioFq, quantum: Bytes(1500) }
    }
}

/// The queue policies this build knows, registered here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueuePolicyKind {
    PriorityEcn,
    /// Aeolus selective dropping of unscheduled packets.
    SelectiveDrop,
    /// NDP payload trimming.
    NdpTrim,
    /// pFabric priority scheduling and dropping.
    PFabric,
    /// RPO cross-queue ECN marking.
    CrossMark,
    /// ExpressPass per-port credit rate limiting.
    CreditLimit,
}

impl QueuePolicyKind {
    pub const NAMES: &'static [&'static str] =
        &["priority_ecn", "selective_drop", "ndp_trim", "pfabric", "rpo_crossmark", "expresspass_credit"];
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "priority_ecn" | "droptail" | "default" => Some(Self::PriorityEcn),
            "selective_drop" | "aeolus" => Some(Self::SelectiveDrop),
            "ndp_trim" | "ndp" | "trim" => Some(Self::NdpTrim),
            "pfabric" => Some(Self::PFabric),
            "rpo_crossmark" | "rpo" | "crossmark" => Some(Self::CrossMark),
            "expresspass_credit" | "credit_limit" => Some(Self::CreditLimit),
            _ => None,
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Self::PriorityEcn => "priority_ecn",
            Self::SelectiveDrop => "selective_drop",
            Self::NdpTrim => "ndp_trim",
            Self::PFabric => "pfabric",
            Self::CrossMark => "rpo_crossmark",
            Self::CreditLimit => "expresspass_credit",
        }
    }
}

/// Build the queue discipline of the port described by `port`: the configured policy, wrapped
/// in the maximum-window stamper at switch ports when `cfg.window_stamp` is set, and in the INT
/// stamper when `cfg.int` is set.
pub fn build(cfg: &QueueConfig, port: &PortCtx) -> Box<dyn QueueDisc> {
    let q = build_policy(cfg, port);
    let q: Box<dyn QueueDisc> = match cfg.window_stamp {
        Some(period) if port.role == PortRole::Switch => {
            Box::new(winstamp::WindowStamp::new(q, cfg.buffer, port.rate, period))
        }
        _ => q,
    };
    let q: Box<dyn QueueDisc> =
        if cfg.int && port.role == PortRole::Switch { Box::new(int::IntStamp::new(q, port.rate)) } else { q };
    match &cfg.pdq {
        Some(p) => Box::new(pdq::PdqStamp::new(q, p.clone(), port.rate, port.id)),
        None => q,
    }
}

fn build_policy(cfg: &QueueConfig, port: &PortCtx) -> Box<dyn QueueDisc> {
    let rate = port.rate;
    match (port.role, &cfg.policy) {
        // ExpressPass throttles credits at every link, the receiver's own uplink included:
        // its NIC is the only place where the credits of all the flows it receives (whose
        // data will share its downlink) pass together. The NIC's data buffer stays
        // unlimited; only credits above the credit queue are dropped.
        (PortRole::HostNic, QueuePolicyKind::CreditLimit) => {
            Box::new(credit::CreditLimit::new(Bytes(u64::MAX), cfg.classes, &cfg.credit, &[], false, rate))
        }
        (PortRole::HostNic, _) => match cfg.nic.qdisc {
            NicQdisc::Fifo => Box::new(priority::PriorityEcn::new(
                Bytes(u64::MAX),
                cfg.classes,
                vec![None; cfg.classes as usize],
                false,
            )),
            NicQdisc::Fq => Box::new(nic::FairNic::new(cfg.classes, false, cfg.nic.quantum)),
            NicQdisc::PrioFq => Box::new(nic::FairNic::new(cfg.classes, true, cfg.nic.quantum)),
        },
        (PortRole::Switch, QueuePolicyKind::PriorityEcn) => Box::new(
            priority::PriorityEcn::new(cfg.buffer, cfg.classes, cfg.ecn_k.clone(), cfg.ecn_per_port)
                .with_port_classes(&cfg.ecn_port_classes)
                .with_class_limits(&cfg.class_buffer)
                .with_pushout(&cfg.pushout_classes),
        ),
        (PortRole::Switch, QueuePolicyKind::SelectiveDrop) => Box::new(selective::SelectiveDrop::new(
            cfg.buffer,
            cfg.classes,
            &cfg.selective,
            &cfg.ecn_k,
            cfg.ecn_per_port,
        )),
        (PortRole::Switch, QueuePolicyKind::NdpTrim) => {
            Box::new(trim::NdpTrim::new(cfg.buffer, &cfg.trim).with_rng(port.rng()))
        }
        (PortRole::Switch, QueuePolicyKind::PFabric) => Box::new(pfabric::PFabric::new(&cfg.pfabric)),
        (PortRole::Switch, QueuePolicyKind::CrossMark) => Box::new(crossmark::CrossMark::new(
            cfg.buffer,
            cfg.classes,
            &cfg.crossmark,
            &cfg.ecn_k,
            cfg.ecn_per_port,
            Some(rate),
        )),
        (PortRole::Switch, QueuePolicyKind::CreditLimit) => {
            let q = credit::CreditLimit::new(cfg.buffer, cfg.classes, &cfg.credit, &cfg.ecn_k, cfg.ecn_per_port, rate)
                .with_pushout(&cfg.pushout_classes);
            // ExpressPass + Aeolus: the Aeolus threshold of `[network.selective]` as well.
            Box::new(if cfg.credit.selective { q.with_selective(&cfg.selective) } else { q })
        }
    }
}
