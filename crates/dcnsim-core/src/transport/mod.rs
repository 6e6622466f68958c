//! The transport interface: how protocol logic meets the network.
//!
//! A transport is one object per run that holds the state of every host's endpoint
//! for one protocol. The runner calls it with the current time and the host an event
//! happens at; the transport answers by filling an [`Actions`] value (packets to send
//! from that host's NIC, timers to arm, flows the receiver now holds completely). It
//! never touches the network itself, so every mechanism is testable with explicit
//! timestamps and hand-made packets (smoltcp's process/dispatch/poll_at style).
//!
//! Contract (see `docs/ARCHITECTURE.md`, "Transport contract"):
//! - `start_flow` is called at the flow's source host at its arrival time;
//! - `on_packet` is called at the host a packet is addressed to, when its last bit arrives;
//! - `on_timer` is called at the host that armed the timer, at the armed time, with the
//!   opaque token it gave. Timers are never cancelled by the runner: a transport encodes
//!   a generation in the token and ignores stale ones ([`TimerSlot`] helps);
//! - `on_nic_idle` is called at a host whose NIC queue just became empty, only when
//!   `wants_nic_idle` returns true (pull-based senders such as Homa or pacing);
//! - `on_tx_complete` is called at a data packet's source host when the NIC has
//!   transmitted it (its last bit crossed the host's link), only when `wants_tx_complete`
//!   returns true (window-based senders under the per-flow NIC limit, `crate::host`);
//! - `on_switch_packet` is called at a switch for a packet addressed to it, only when
//!   `wants_switch_packets` returns true (control planes at switches, PASE's arbitrators);
//!   such a transport also receives every flow's data path once (`set_flow_paths`);
//! - a transport only reads and writes the state of the `host` it is called for; it learns
//!   what the application handed over only from `flows` (the flow table: size, endpoints,
//!   start, base RTT), never from the other endpoint's state;
//! - it reports a flow complete exactly once, from the receiving host, at the moment the
//!   receiver holds every byte of it.
//!
//! Window-based (TCP, DCTCP), rate-based (ExpressPass credits, PASE) and receiver-driven
//! (Homa, pHost, NDP pulls) transports all fit: the receiver side is just another host's
//! endpoint state, and pacing is a timer.
//!
//! New transports live in their own module and are added to [`registry`] only.

// The families (see docs/ARCHITECTURE.md, "Layers"): building blocks depend only on this
// interface and the layers below it; protocols (window-based, receiver-driven, arbitrated) depend on the
// blocks and on their own family; the registry, the one place that names every protocol,
// depends on all of them and nothing in `transport` depends on the registry.
pub mod arbitration;
pub mod blocks;
pub mod layer;
pub mod receiver;
pub mod registry;
pub mod window;

// Every module keeps its short path (`crate::transport::tcp`, `crate::transport::homa`, ...).
pub use arbitration::{arbiter, pase, pdq};
pub use blocks::{aeolus, cc, lowprio, pias_thresholds, rcvctl, segset, swift_law, tagging, tcp};
pub use receiver::{expresspass, homa, ndp, phost, rpo};
pub use window::{d2tcp, hpcc, iatcp, ictcp, l2dct, m21tcp, pfabric, pias, ppt, ptcp, rc3, swift};

use crate::host::HostSpec;
use crate::packet::{FlowId, NodeId, Packet};
use crate::units::{Bytes, Rate, Time};

/// Settings a protocol derives from the network and the workload where the scenario is
/// silent (`registry::derive`). The scenario validation applies them before building the run, and
/// the normalized scenario (`scenario.json`) shows the values used.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Derived {
    /// `[transport]` fields to fill in when the scenario's table does not give them.
    pub transport: serde_json::Map<String, serde_json::Value>,
    /// Per-class ECN thresholds for the switches when `[network]` gives neither `ecn_k` nor
    /// `ecn_k_per_queue` (instead of `network.ecn_lambda` for every class).
    pub ecn_k_per_queue: Option<Vec<Bytes>>,
    /// `[network] ecn_port_classes` when the scenario does not give it.
    pub ecn_port_classes: Option<Vec<u8>>,
    /// The `[transport]` keys (full paths) the table gives that act only through
    /// `ecn_k_per_queue`: the scenario rejects them next to explicit network thresholds,
    /// where they would have no effect.
    pub ecn_from: Vec<String>,
    /// The priority classes the protocol's opportunistic (low-priority loop) packets use,
    /// whatever the scenario says: reports split a port's occupancy by them (PPT Fig. 28).
    /// Written to `scenario.json` as `derived.lp_classes`. Empty: no such loop.
    pub lp_classes: Vec<u8>,
    /// The protocol reads in-band telemetry: every switch port stamps an INT record into the
    /// data packets it sends (`queue::int`). Shown in `scenario.json` as `derived.int`.
    pub int: bool,
    /// The protocol reads a per-port maximum window that every switch port stamps into the
    /// data packets it is offered (`queue::winstamp`, M21TCP). Shown in `scenario.json` as
    /// `derived.window_stamp_period_ps` (the flow-counting period: the largest base RTT).
    pub window_stamp: bool,
    /// The protocol runs PDQ's flow controller on every port (`queue::pdq`), with these
    /// parameters. Shown in `scenario.json` as `derived.pdq`.
    pub pdq: Option<crate::queue::pdq::PdqSwitchParams>,
}

/// What the application handed to the transport, plus path facts the runner computed.
#[derive(Clone, Debug)]
pub struct FlowInfo {
    pub id: FlowId,
    pub src: NodeId,
    pub dst: NodeId,
    pub size: Bytes,
    /// Arrival time at the sender (the application hands over its data).
    pub start: Time,
    /// Base RTT of the flow's path (docs/metrics.md definition).
    pub base_rtt: Time,
    /// Bottleneck rate along the flow's path.
    pub path_rate: Rate,
    /// Line rate of the source host's NIC.
    pub host_rate: Rate,
    /// Optional deadline, relative to `start`.
    pub deadline: Option<Time>,
    /// A long-lived background flow: never completes, excluded from FCT statistics.
    pub background: bool,
}

/// Facts about the network a transport may use at construction.
#[derive(Clone, Debug)]
pub struct NetInfo {
    /// Maximum packet size on the wire.
    pub mtu: Bytes,
    /// Transport/IP header bytes of a data packet (payload per packet = mtu - header).
    pub header: Bytes,
    /// Wire size of a control packet (ACK, grant, credit ...).
    pub ctrl_size: Bytes,
    pub num_nodes: usize,
    /// Largest base RTT between any two hosts.
    pub max_base_rtt: Time,
    /// Fastest host link rate.
    pub max_host_rate: Rate,
    /// Number of strict-priority classes the switches provide.
    pub priorities: u8,
    /// The workload's flow-size distribution, when the scenario knows it: step-CDF points
    /// `(size in bytes, P(size <= s))`, sizes increasing, last probability 1 (see
    /// `Workload::size_cdf`). Homa derives its unscheduled priority cutoffs from it.
    pub size_cdf: Option<Vec<(u64, f64)>>,
    /// What else the scenario knows about its workload (see [`WorkloadFacts`]), `None` when it
    /// is not known (unit-test fixtures). PIAS and PPT pick their default demotion thresholds
    /// from it.
    pub workload: Option<WorkloadFacts>,
    /// The end-host model (`[host]`): window-based senders take their per-flow NIC limit
    /// and window validation from it.
    pub host: HostSpec,
}

/// Facts about the scenario's workload a transport may derive defaults from (filled in from
/// `Workload::facts`).
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadFacts {
    /// The canonical name of the shipped CDF (`"websearch"`, `"datamining"`, ...) when every
    /// component that generates sized flows draws its sizes from that one shipped CDF (any
    /// reading); `None` for user CDF files, uniform ranges, fixed sizes, flow lists, mixes of
    /// several CDFs, or no sized flows at all. Background flows are left out.
    pub shipped_cdf: Option<&'static str>,
    /// The offered load of the workload's Poisson flow arrivals: the sum of the `load` of its
    /// `poisson` and `left_right` components (each a fraction of its own senders' or
    /// receivers' links, so the sum is the load of links they share); `None` when it has no
    /// such component (incast rounds, permutations, flow lists, background flows only).
    pub load: Option<f64>,
}

impl NetInfo {
    pub fn mss(&self) -> u64 {
        self.mtu.0 - self.header.0
    }

    /// The fixture of the transports' unit tests: 8 hosts, 8 priority classes, 40 B headers,
    /// 64 B control packets, no size CDF.
    #[cfg(test)]
    pub fn for_tests(mtu: u64, max_base_rtt: Time, max_host_rate: Rate) -> NetInfo {
        NetInfo {
            mtu: Bytes(mtu),
            header: Bytes(40),
            ctrl_size: Bytes(64),
            num_nodes: 8,
            max_base_rtt,
            max_host_rate,
            priorities: 8,
            size_cdf: None,
            workload: None,
            host: HostSpec::default(),
        }
    }
}

/// Effects requested by a transport callback.
#[derive(Default, Debug)]
pub struct Actions {
    /// Packets to hand to the calling host's NIC, in order.
    pub sends: Vec<Packet>,
    /// Timers to arm at the calling host: (absolute time, opaque token).
    pub timers: Vec<(Time, u64)>,
    /// Flows whose receiver (the calling host) now holds every byte.
    pub completions: Vec<FlowId>,
}

impl Actions {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn clear(&mut self) {
        self.sends.clear();
        self.timers.clear();
        self.completions.clear();
    }
    #[inline]
    pub fn send(&mut self, p: Packet) {
        self.sends.push(p)
    }
    #[inline]
    pub fn timer(&mut self, at: Time, token: u64) {
        self.timers.push((at, token))
    }
    #[inline]
    pub fn complete(&mut self, f: FlowId) {
        self.completions.push(f)
    }
}

/// The context of one callback.
pub struct Ctx<'a> {
    pub now: Time,
    /// The host the event happens at.
    pub host: NodeId,
    /// The run's flow table, indexed by `FlowId`.
    pub flows: &'a [FlowInfo],
    pub out: &'a mut Actions,
}

/// One link of a flow's data path, as the runner routes it ([`FlowPaths`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathHop {
    /// The egress port (one link direction; ids as in the ports table).
    pub port: u32,
    /// The node that owns the port (the link's near end) and the node it leads to.
    pub node: NodeId,
    pub peer: NodeId,
    pub rate: Rate,
}

/// The ECMP data path (source to destination) of every flow of the run, handed once to a
/// transport with switch-side agents ([`Transport::wants_switch_packets`]) before the run.
#[derive(Clone, Debug, Default)]
pub struct FlowPaths {
    start: Vec<u32>,
    hops: Vec<PathHop>,
}

impl FlowPaths {
    /// Append the path of the next flow id.
    pub fn push(&mut self, path: &[PathHop]) {
        if self.start.is_empty() {
            self.start.push(0);
        }
        self.hops.extend_from_slice(path);
        self.start.push(self.hops.len() as u32);
    }
    /// The path of `flow` (empty if unknown).
    pub fn get(&self, flow: FlowId) -> &[PathHop] {
        let i = flow as usize;
        match (self.start.get(i), self.start.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.hops[a as usize..b as usize],
            _ => &[],
        }
    }
    /// Number of flows held.
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Per-flow counters a transport reports at the end of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowStats {
    /// Payload bytes sent again after having been sent once (retransmissions).
    pub retx_bytes: u64,
    /// Retransmission timeouts that fired for this flow.
    pub timeouts: u32,
    /// Payload bytes of opportunistic (low-priority loop) packets the sender put on the wire
    /// (RC3, PPT; 0 for transports without such a loop). Included in the flow's sent bytes.
    pub lp_sent_bytes: u64,
    /// Payload bytes of opportunistic packets that reached the receiving host (counted on
    /// arrival, whether or not the receiver still needed them).
    pub lp_rcvd_bytes: u64,
    /// Largest re-sequencing buffer the flow needed at its receiver: payload bytes held
    /// above its in-order prefix (RPO Fig. 18; 0 for transports that do not track it).
    pub reorder_max_bytes: u64,
}

/// Most rows an ACK-delay log keeps (`[output] ack_delays`) unless the scenario says
/// otherwise (`output.ack_delays_limit`).
pub const DEFAULT_ACK_DELAY_ROWS: u64 = 1_000_000;
/// The largest `output.ack_delays_limit` accepted (a row takes about 70 B in the simulator).
pub const MAX_ACK_DELAY_ROWS: u64 = 10_000_000;

/// The ACKs a receiver-side control made, one entry per ACK, in the order the receiver made
/// them (`[output] ack_delays`; `rcvctl::RcvTcp` records it, `ack_delays.parquet` in
/// docs/results.md). Times in picoseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AckDelayLog {
    /// When the receiver made the ACK (and the control decided its hold).
    pub made_ps: Vec<u64>,
    /// When the ACK leaves the receiver: `made_ps` plus the hold, or later when it waits
    /// behind an earlier held ACK of its flow (ACKs leave in order).
    pub release_ps: Vec<u64>,
    /// The receiving host.
    pub host: Vec<u32>,
    pub flow: Vec<u32>,
    /// The ACK's cumulative acknowledgment (bytes).
    pub ack: Vec<u64>,
    /// The receive window the ACK carries (bytes: whole segments, as the window field holds
    /// it); `u64::MAX` when it advertises none.
    pub rwnd: Vec<u64>,
    /// The hold the control asked for (its delay law's value).
    pub delay_ps: Vec<u64>,
    /// Names of the receiver quantities that explain the hold (the control's own; at most
    /// [`ACK_STATE_MAX`]), one column each in `state`.
    pub state_names: &'static [&'static str],
    /// Per name, its value when the ACK was made (unit as the name says).
    pub state: [Vec<f64>; ACK_STATE_MAX],
    /// ACKs not recorded because the log held `limit` rows.
    pub lost: u64,
    /// Most rows kept.
    pub limit: u64,
}

/// Most receiver quantities an [`AckDelayLog`] row carries.
pub const ACK_STATE_MAX: usize = 3;

impl AckDelayLog {
    /// An empty log keeping at most `limit` rows, with the given state names.
    pub fn new(limit: u64, state_names: &'static [&'static str]) -> AckDelayLog {
        AckDelayLog { state_names, limit, ..AckDelayLog::default() }
    }
    /// Rows held.
    pub fn len(&self) -> usize {
        self.made_ps.len()
    }
    pub fn is_empty(&self) -> bool {
        self.made_ps.is_empty()
    }
}

/// A transport protocol. See the module documentation for the contract.
///
/// Run-wide wrappers go through [`layer::Layered`], the one place that forwards every method
/// to a wrapped transport: a method added here must be forwarded there too (its tests call
/// each one).
pub trait Transport {
    /// Protocol name as written in scenarios.
    fn name(&self) -> &'static str;
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId);
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet);
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64);
    fn on_nic_idle(&mut self, _ctx: &mut Ctx) {}
    fn wants_nic_idle(&self) -> bool {
        false
    }
    /// Called at a packet's source host when the host NIC has transmitted one of the data
    /// packets it sent (its last bit has crossed the host's link), only if
    /// `wants_tx_complete` returns true: window-based senders release the packet's bytes
    /// from their per-flow NIC limit here (`crate::host`).
    fn on_tx_complete(&mut self, _ctx: &mut Ctx, _pkt: &Packet) {}
    fn wants_tx_complete(&self) -> bool {
        false
    }
    fn flow_stats(&self, _flow: FlowId) -> FlowStats {
        FlowStats::default()
    }
    /// Switch-side agents: when true, the runner hands the transport every flow's data path
    /// once before the run ([`Transport::set_flow_paths`]), delivers a packet addressed to a
    /// switch node to [`Transport::on_switch_packet`] there, and sends the packets an agent
    /// emits from that switch. A packet addressed to a switch must be sent by a node adjacent
    /// to it (agents relay hop by hop); otherwise it is dropped as misrouted. Without this
    /// (the default) a packet addressed to a switch is dropped as misrouted.
    fn wants_switch_packets(&self) -> bool {
        false
    }
    /// The data paths of the run's flows (only if `wants_switch_packets`).
    fn set_flow_paths(&mut self, _paths: FlowPaths) {}
    /// A packet addressed to switch `ctx.host` reached it (only if `wants_switch_packets`).
    /// The agent may send packets (from the switch); it arms no timers and completes no
    /// flows (the runner reports either as an audit error).
    fn on_switch_packet(&mut self, _ctx: &mut Ctx, _pkt: &Packet) {}
    /// Control messages processed by the arbitrator of link direction `port` over the run
    /// (the ports table's `arb_msgs`; 0 for transports without per-link arbitrators).
    fn arb_msgs(&self, _port: u32) -> u64 {
        0
    }
    /// Arbitration packets every host and switch sent over the run (`arb_msgs_sent`).
    fn arb_msgs_sent(&self) -> u64 {
        0
    }
    /// The largest re-sequencing buffer host `host` needed as a receiver: payload bytes it
    /// held above the in-order prefixes of all its flows at once (RPO Fig. 18; 0 for
    /// transports that do not track it). Reported in the port table on the host's port.
    fn host_reorder_max_bytes(&self, _host: NodeId) -> u64 {
        0
    }
    /// `run.abort_at_deadline` abandoned `flow` at `ctx.now`: called once at its source and
    /// once at its destination (`ctx.host`), after which nothing of the flow reaches the
    /// transport. A transport that keeps per-flow state outside the two ends (arbitrators)
    /// releases it here; packets it sends are delivered, timers and completions ignored.
    fn on_flow_abandoned(&mut self, _ctx: &mut Ctx, _flow: FlowId) {}
    /// Persistent connections (barrier incast rounds with `persistent = true`): whether the
    /// transport can carry further application messages on a flow after its receiver held
    /// every byte ([`Transport::keep_open`], [`Transport::append`]). The scenario refuses
    /// `persistent` for a transport that answers false (the default).
    fn supports_append(&self) -> bool {
        false
    }
    /// Before the run: `flow` is a persistent connection. Its state at both ends (window,
    /// RTT estimate, receiver state) must outlive the moment its receiver holds every byte.
    fn keep_open(&mut self, _flow: FlowId) {}
    /// At `flow`'s source host (`ctx.host`): the application appended a message to the open
    /// connection `flow`; `ctx.flows[flow].size` is the new total. The connection sends the
    /// new bytes with the state it has, and its receiver reports the flow complete again
    /// (once) when it holds every byte of the new total. Only called when
    /// `supports_append` answers true, and only after the previous total was reported
    /// complete.
    fn append(&mut self, _ctx: &mut Ctx, _flow: FlowId) {}
    /// `[output] ack_delays`: from now on, record every ACK the transport's receivers make
    /// with the hold they give it, keeping at most `limit` rows ([`AckDelayLog`]). Answers
    /// false (the default) for a transport that does not decide ACK holds at its receivers;
    /// the scenario then refuses the field.
    fn record_ack_delays(&mut self, _limit: u64) -> bool {
        false
    }
    /// The log [`Transport::record_ack_delays`] started (once; `None` when none was started).
    fn take_ack_delays(&mut self) -> Option<AckDelayLog> {
        None
    }
}

/// Lazy timer cancellation with a generation counter.
///
/// `arm` returns the generation to put in the token; `is_current(gen)` tells whether a
/// firing timer is the latest armed one; `cancel` makes every armed instance stale.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimerSlot {
    gen: u32,
    armed: bool,
    /// Absolute expiry time of the current arming.
    pub at: Time,
}

impl TimerSlot {
    /// Arm (or re-arm) the timer; returns the 24-bit generation to put in the token.
    pub fn arm(&mut self, at: Time) -> u32 {
        self.gen = (self.gen + 1) & 0xFF_FFFF;
        self.armed = true;
        self.at = at;
        self.gen
    }
    pub fn cancel(&mut self) {
        self.gen = (self.gen + 1) & 0xFF_FFFF;
        self.armed = false;
    }
    pub fn is_armed(&self) -> bool {
        self.armed
    }
    /// True if a timer fired with generation `gen` is the live one; disarms it.
    pub fn fire(&mut self, gen: u32) -> bool {
        if self.armed && gen == self.gen {
            self.armed = false;
            true
        } else {
            false
        }
    }
}

/// Pack a timer token: flow id (32 bits), timer kind (8 bits), generation (24 bits).
#[inline]
pub fn token(flow: FlowId, kind: u8, gen: u32) -> u64 {
    ((flow as u64) << 32) | ((kind as u64) << 24) | (gen as u64 & 0xFF_FFFF)
}

/// Unpack a token made by [`token`]: (flow, kind, generation).
#[inline]
pub fn untoken(t: u64) -> (FlowId, u8, u32) {
    ((t >> 32) as FlowId, (t >> 24) as u8, (t & 0xFF_FFFF) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn timer_slot_lazy_cancel() {
        let mut s = TimerSlot::default();
        let g1 = s.arm(Time::us(1));
        let g2 = s.arm(Time::us(2));
        assert!(!s.fire(g1), "re-armed timer makes the old one stale");
        assert!(s.fire(g2));
        assert!(!s.fire(g2), "a timer fires once");
        let g3 = s.arm(Time::us(3));
        s.cancel();
        assert!(!s.fire(g3));
    }
    #[test]
    fn token_roundtrip() {
        let t = token(123_456, 7, 0xABCDEF);
        assert_eq!(untoken(t), (123_456, 7, 0xABCDEF));
    }
}
