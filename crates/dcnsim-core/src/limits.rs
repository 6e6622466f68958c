//! Resource limits: what a scenario may cost in memory, checked before and during a run.
//!
//! No input may exhaust memory or abort the process. Two kinds of guard:
//!
//! * **Before the run** ([`check`], called by scenario validation): an estimate of the
//!   memory the run's size-dependent structures take, refused beyond `run.memory_limit` with
//!   an error naming the field that drives the largest part. The estimate counts
//!   - the flows: [`BYTES_PER_FLOW`] per expected flow (the flow list, the runner's per-flow
//!     records, the transport's per-flow state and the output table);
//!   - the samples: with `output.sample_interval` and a `run.time_limit`, one link row per
//!     sampled port and sample plus, at worst, one queue row per priority class, times two
//!     (the core's columns and the copy handed to the caller);
//!   - the network: the routing tables and the ports' state ([`network_bytes`], also
//!     checked on their own before the network is built, [`check_topology`]). Packets in
//!     switch buffers are not counted: a large buffer is a common stand-in for "infinite",
//!     and the packets that fill it are bounded by what the senders send, which the
//!     runner's own limits watch.
//! * **During the run** (the runner): where no bound is known in advance the structure that
//!   grows is checked as it grows, and the run ends with a [`RunError`] naming the host or
//!   field instead of growing without bound. The sampler stops at the rows the memory limit
//!   leaves (a run without a time limit has no known number of samples); a host NIC queue
//!   may not hold more than `run.nic_queue_limit` bytes (a transport that hands its NIC
//!   more than the link can ever drain, e.g. at a 1 Kbps host rate).
//!
//! Input files are read with a ceiling of their own, `run.input_file_limit`
//! (`workload::read`).

use crate::config::FieldError;
use crate::scenario::{PortSelection, Scenario};
use crate::units::Bytes;
use std::fmt;

/// Estimated bytes per flow: its spec, the runner's records, a transport's per-flow state
/// (sender and receiver) and its output row. A generous round figure, not a measurement of
/// one transport.
pub const BYTES_PER_FLOW: u64 = 512;
/// Bytes of one egress port's state (the port, its queue policy and small queues), rounded up.
pub const PORT_BYTES: u64 = 2048;
/// Bytes of one link-sample row (time, port, bytes, utilization).
pub const LINK_ROW: u64 = 28;
/// Bytes of one queue-sample row (time, port, class, bytes).
pub const QUEUE_ROW: u64 = 21;
/// Copies of the sample columns alive at the end of a run (the core's and the caller's).
const SAMPLE_COPIES: u64 = 2;

/// `run.memory_limit` when the scenario does not give it: 8 GB.
pub const DEFAULT_MEMORY_LIMIT: Bytes = Bytes(8_000_000_000);
/// `run.nic_queue_limit` when the scenario does not give it: 1 GB per host NIC.
pub const DEFAULT_NIC_QUEUE_LIMIT: Bytes = Bytes(1_000_000_000);

/// The parts of a scenario's memory estimate, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryEstimate {
    pub flows: u64,
    /// Samples over the whole run; 0 without sampling or without a time limit.
    pub samples: u64,
    /// Routing tables and ports.
    pub network: u64,
}

impl MemoryEstimate {
    pub fn total(&self) -> u64 {
        self.flows.saturating_add(self.samples).saturating_add(self.network)
    }
}

/// Number of ports `sel` samples in `sc`'s network.
pub fn sampled_ports(sc: &Scenario) -> u64 {
    match &sc.output.sample_ports {
        PortSelection::Ids(v) => v.len() as u64,
        PortSelection::Named(s) => {
            let mut n = 0u64;
            for l in &sc.topology.links {
                for node in [l.a, l.b] {
                    let host = sc.topology.is_host(node);
                    n += match s.as_str() {
                        "host" => host as u64,
                        "all" => 1,
                        _ => !host as u64,
                    };
                }
            }
            n
        }
    }
}

/// Bytes one sample of every sampled port may take, at worst (all classes non-empty).
pub fn bytes_per_sample(sc: &Scenario) -> u64 {
    sampled_ports(sc).saturating_mul(LINK_ROW + QUEUE_ROW * sc.network.priorities as u64) * SAMPLE_COPIES
}

/// The memory estimate of `sc` (see the module docs).
pub fn estimate(sc: &Scenario) -> MemoryEstimate {
    let flows =
        (sc.workload.expected_flows().max(0.0).min(u64::MAX as f64 / 2.0) as u64).saturating_mul(BYTES_PER_FLOW);
    let samples = match (sc.output.sample_interval, sc.run.time_limit) {
        (Some(iv), Some(limit)) if iv.0 > 0 => (limit.0 / iv.0).saturating_add(1).saturating_mul(bytes_per_sample(sc)),
        _ => 0,
    };
    MemoryEstimate { flows, samples, network: network_bytes(&sc.topology) }
}

/// Refuse `sc` when its estimate exceeds `run.memory_limit`, naming the field that drives
/// the largest part and how to fix it.
pub fn check(sc: &Scenario) -> Result<(), FieldError> {
    let limit = sc.run.memory_limit.0;
    let e = estimate(sc);
    if e.total() <= limit {
        return Ok(());
    }
    let gb = |b: u64| format!("{:.1} GB", b as f64 / 1e9);
    let what = format!(
        "the run would need about {} (flows {}, samples {}, network {}), more than run.memory_limit = {}",
        gb(e.total()),
        gb(e.flows),
        gb(e.samples),
        gb(e.network),
        gb(limit)
    );
    let err = if e.samples >= e.flows && e.samples >= e.network {
        FieldError::invalid(
            "output.sample_interval",
            what,
            format!(
                "sample less often (e.g. \"100us\"), sample fewer ports (output.sample_ports), shorten run.time_limit, or raise run.memory_limit; {} ports x {} samples",
                sampled_ports(sc),
                sc.run.time_limit.map(|l| l.0 / sc.output.sample_interval.map(|i| i.0.max(1)).unwrap_or(1)).unwrap_or(0)
            ),
        )
    } else if e.flows >= e.network {
        FieldError::invalid(
            "workload",
            what,
            "generate fewer flows (flows, duration, rounds), or raise run.memory_limit",
        )
    } else {
        FieldError::invalid("topology", what, "use a smaller topology, or raise run.memory_limit")
    };
    Err(err)
}

/// Bytes of the network of `topo`: routing tables (an (offset, length) entry per node and
/// destination host, plus about two equal-cost ports per entry) and [`PORT_BYTES`] per port.
pub fn network_bytes(topo: &crate::topology::Topology) -> u64 {
    let routes = (topo.num_nodes() as u64).saturating_mul(topo.num_hosts as u64).saturating_mul(8 + 2 * 4);
    routes.saturating_add((topo.links.len() as u64 * 2).saturating_mul(PORT_BYTES))
}

/// Refuse a topology whose routing tables alone exceed `limit` (checked before the network
/// is built).
pub fn check_topology(topo: &crate::topology::Topology, limit: Bytes) -> Result<(), FieldError> {
    let need = network_bytes(topo);
    if need <= limit.0 {
        return Ok(());
    }
    Err(FieldError::invalid(
        "topology",
        format!(
            "{} hosts, {} nodes and {} links need about {:.1} GB of routing tables and port state, more than run.memory_limit = {:.1} GB",
            topo.num_hosts,
            topo.num_nodes(),
            topo.links.len(),
            need as f64 / 1e9,
            limit.0 as f64 / 1e9
        ),
        "use a smaller topology, or raise run.memory_limit",
    ))
}

/// Rows of samples (one row set = one sample of every sampled port) the memory limit leaves
/// after the rest of the estimate: the runner's sampler stops the run beyond it.
pub fn sample_budget(sc: &Scenario) -> u64 {
    let e = estimate(sc);
    let left = sc.run.memory_limit.0.saturating_sub(e.flows.saturating_add(e.network));
    left / bytes_per_sample(sc).max(1)
}

/// Why a run ended early with an error (the results are incomplete and are not written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// The sampler reached the number of samples `run.memory_limit` leaves room for.
    SampleLimit { samples: u64, limit: Bytes },
    /// A host NIC queue held more than `run.nic_queue_limit`.
    NicQueue { host: u32, bytes: u64, limit: Bytes },
    /// More packets were alive at once (queued or on links) than `run.max_live_packets`:
    /// the transport's packets grow without bound, so the run cannot finish.
    TooManyLivePackets { limit: u64, live: u64, sim_time: crate::units::Time, flows_done: u64, flows_total: u64 },
}

impl RunError {
    /// The scenario field that bounds what was exceeded.
    pub fn field(&self) -> String {
        match self {
            RunError::SampleLimit { .. } => "output.sample_interval".into(),
            RunError::NicQueue { .. } => "run.nic_queue_limit".into(),
            RunError::TooManyLivePackets { .. } => "run.max_live_packets".into(),
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::SampleLimit { samples, limit } => write!(
                f,
                "{}: the run was stopped after {samples} samples, all that run.memory_limit = {} B leaves room for; sample less often, sample fewer ports (output.sample_ports), set a run.time_limit, or raise run.memory_limit",
                self.field(),
                limit.0
            ),
            RunError::NicQueue { host, bytes, limit } => write!(
                f,
                "{}: the NIC queue of host {host} grew to {bytes} B, more than run.nic_queue_limit = {} B (the transport hands the host link more than it can send: check the host rate and the transport's window); raise run.nic_queue_limit if this is intended",
                self.field(),
                limit.0
            ),
            RunError::TooManyLivePackets { limit, live, sim_time, flows_done, flows_total } => write!(
                f,
                "{}: the run stopped at simulated time {:.3} ms with {live} packets alive at once, above the \
                 limit of {limit}, and {flows_done} of {flows_total} flows finished: the transport's packets \
                 grow without bound, so the run cannot finish. Check the transport and queue settings \
                 (e.g. a protocol run on a queue policy it was not built for), or raise run.max_live_packets \
                 if the network really holds this many packets",
                self.field(),
                sim_time.as_secs_f64() * 1e3,
            ),
        }
    }
}

impl std::error::Error for RunError {}
