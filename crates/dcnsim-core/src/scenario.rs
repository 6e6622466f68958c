//! Scenarios: parse a TOML/JSON document, validate every section into typed form.
//!
//! "Parse, don't validate": [`parse_scenario`] deserializes the document, hands each
//! section to the module that owns it (topology, queue/network, transport registry,
//! workload), and returns a [`Scenario`] only when everything is valid. Each error names
//! the field and what would fix it. The schema is documented in `docs/scenario.md`.

use crate::config::{from_table, FieldError};
use crate::host::HostSpec;
use crate::network::{Network, Routing};
use crate::queue::{NicConfig, QueueConfig, QueuePolicyKind};
use crate::rng::{streams, Rng};
use crate::topology::{self, Topology, TopologyError};
use crate::transport::registry::{self, TransportError};
use crate::transport::{NetInfo, Transport};
use crate::units::{Bytes, Time};
use crate::workload::{self, Workload, WorkloadEnv, WorkloadError};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// Input format of a scenario document.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

/// Any problem with a scenario.
#[derive(Debug)]
pub enum ScenarioError {
    /// The document is not valid TOML/JSON.
    Syntax {
        message: String,
    },
    /// A top-level or `[network]`/`[run]`/`[output]` field is wrong.
    Field(FieldError),
    Topology(TopologyError),
    Transport(TransportError),
    Workload(WorkloadError),
}

impl ScenarioError {
    /// Dotted path of the offending field ("" for a syntax error).
    pub fn field(&self) -> String {
        match self {
            ScenarioError::Syntax { .. } => String::new(),
            ScenarioError::Field(e) => e.field(),
            ScenarioError::Topology(e) => e.field(),
            ScenarioError::Transport(e) => e.field(),
            ScenarioError::Workload(e) => e.field(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::Syntax { message } => write!(f, "scenario is not well-formed: {message}"),
            ScenarioError::Field(e) => write!(f, "{e}"),
            ScenarioError::Topology(e) => write!(f, "{e}"),
            ScenarioError::Transport(e) => write!(f, "{e}"),
            ScenarioError::Workload(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ScenarioError {}

impl From<FieldError> for ScenarioError {
    fn from(e: FieldError) -> Self {
        ScenarioError::Field(e)
    }
}

fn d_seed() -> u64 {
    1
}
fn d_name() -> String {
    "scenario".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    #[serde(default = "d_name")]
    name: String,
    #[serde(default = "d_seed")]
    seed: u64,
    topology: serde_json::Value,
    #[serde(default)]
    network: Option<serde_json::Value>,
    #[serde(default)]
    host: Option<serde_json::Value>,
    transport: serde_json::Value,
    workload: serde_json::Value,
    #[serde(default)]
    run: Option<serde_json::Value>,
    #[serde(default)]
    output: Option<serde_json::Value>,
    /// `[[pause]]` rules (`pause.rs`).
    #[serde(default)]
    pause: Option<serde_json::Value>,
    /// `[[link_delay]]` rules (`linkdelay.rs`).
    #[serde(default)]
    link_delay: Option<serde_json::Value>,
    /// Facts `to_json` adds for readers (host count, base RTT ...); ignored on input so
    /// that a saved `scenario.json` runs again as it is.
    #[serde(default, rename = "derived")]
    _derived: Option<serde_json::Value>,
}

fn d_mtu() -> Bytes {
    Bytes(1500)
}
fn d_header() -> Bytes {
    Bytes(40)
}
fn d_ctrl() -> Bytes {
    Bytes(64)
}
fn d_buffer() -> Bytes {
    Bytes(120_000)
}
fn d_prios() -> u8 {
    8
}
/// `network.ecn_lambda` when the scenario does not give it (DCTCP's 0.17).
pub const DEFAULT_ECN_LAMBDA: f64 = 0.17;
fn d_policy() -> String {
    "priority_ecn".into()
}
fn d_routing() -> Routing {
    Routing::Ecmp
}

/// `[network]`: packet sizes, switch buffers, queues, ECN, routing.
#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// Largest packet on the wire.
    #[serde(default = "d_mtu")]
    pub mtu: Bytes,
    /// Header bytes of a data packet.
    #[serde(default = "d_header")]
    pub header: Bytes,
    /// Wire size of control packets.
    #[serde(default = "d_ctrl")]
    pub ctrl_size: Bytes,
    /// Per-port buffer of switch egress ports, shared by the priority queues.
    #[serde(default = "d_buffer")]
    pub buffer: Bytes,
    /// Strict-priority classes per port (1-8).
    #[serde(default = "d_prios")]
    pub priorities: u8,
    /// DCTCP marking threshold applied to every class.
    #[serde(default)]
    pub ecn_k: Option<Bytes>,
    /// Per-class thresholds (overrides `ecn_k`); list of sizes, one per class.
    #[serde(default)]
    pub ecn_k_per_queue: Option<Vec<Bytes>>,
    /// When neither `ecn_k` nor `ecn_k_per_queue` is given and the protocol prescribes no
    /// per-class thresholds of its own (PPT does, `registry::derive`): K = ecn_lambda x C x
    /// RTT for every class (PPT Eq. 3), with C the fastest host rate and RTT the largest base
    /// RTT. Absent: [`DEFAULT_ECN_LAMBDA`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_lambda: Option<f64>,
    /// Compare K with the port's total occupancy instead of the class's own queue.
    #[serde(default)]
    pub ecn_per_port: bool,
    /// Classes that compare K with the port's total occupancy while the others keep
    /// per-queue marking (PPT marks its low-priority classes on buffer occupancy). Absent:
    /// the protocol's default (PPT: its LCP classes), else none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_port_classes: Option<Vec<u8>>,
    /// Per-class admission limits (one size per class; empty: none): a packet is dropped
    /// when its class would hold more than this (policy `priority_ecn` only).
    #[serde(default)]
    pub class_buffer: Vec<Bytes>,
    /// Classes whose queued packets an arrival of a higher class that does not fit in the
    /// shared buffer may push out (policy `priority_ecn` only; default none: drop-tail).
    #[serde(default)]
    pub pushout_classes: Vec<u8>,
    #[serde(default = "d_policy")]
    pub queue_policy: String,
    #[serde(default = "d_routing")]
    pub routing: Routing,
    /// `[network.selective]`: Aeolus selective dropping (policy `selective_drop`).
    #[serde(default)]
    pub selective: crate::queue::selective::SelectiveDropConfig,
    /// `[network.trim]`: NDP trimming (policy `ndp_trim`).
    #[serde(default)]
    pub trim: crate::queue::trim::TrimConfig,
    /// `[network.pfabric]`: pFabric (policy `pfabric`).
    #[serde(default)]
    pub pfabric: crate::queue::pfabric::PFabricConfig,
    /// `[network.crossmark]`: RPO cross-queue marking (policy `rpo_crossmark`).
    #[serde(default)]
    pub crossmark: crate::queue::crossmark::CrossMarkConfig,
    /// `[network.credit]`: ExpressPass credit limiting (policy `expresspass_credit`).
    #[serde(default)]
    pub credit: crate::queue::credit::CreditConfig,
}

fn d_true() -> bool {
    true
}

/// `[run]`: when to stop.
#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Stop at this simulated time even if flows are unfinished.
    #[serde(default)]
    pub time_limit: Option<Time>,
    /// Once every (non-background) flow has finished and no packet is in flight, stop.
    #[serde(default = "d_true")]
    pub stop_when_done: bool,
    /// The application abandons a flow that has not finished by its deadline: from then on
    /// nothing of it is sent or delivered, and it counts as missed (see `sim.rs`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub abort_at_deadline: bool,
    /// End the run with an error when more packets than this are alive at once (in queues,
    /// on links): a run whose packets grow without bound stops before memory runs out.
    #[serde(default = "d_max_live_packets")]
    pub max_live_packets: u64,
    /// Refuse a scenario whose estimated memory exceeds this (`limits::check`); the sampler
    /// also stops at it when the number of samples is not known in advance.
    #[serde(default = "d_memory_limit")]
    pub memory_limit: Bytes,
    /// Most bytes any host NIC queue may hold; beyond it the run ends with an error.
    #[serde(default = "d_nic_queue_limit")]
    pub nic_queue_limit: Bytes,
    /// Most bytes an input file (flow list, CDF) may hold; a longer (or endless) one is refused.
    #[serde(default = "d_input_file_limit")]
    pub input_file_limit: Bytes,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Default of `run.max_live_packets`: 10 million packets, about 1 GB of packet state.
pub const DEFAULT_MAX_LIVE_PACKETS: u64 = 10_000_000;

fn d_max_live_packets() -> u64 {
    DEFAULT_MAX_LIVE_PACKETS
}

fn d_memory_limit() -> Bytes {
    crate::limits::DEFAULT_MEMORY_LIMIT
}
fn d_nic_queue_limit() -> Bytes {
    crate::limits::DEFAULT_NIC_QUEUE_LIMIT
}
fn d_input_file_limit() -> Bytes {
    Bytes(workload::DEFAULT_INPUT_FILE_LIMIT)
}

/// Which ports the samplers record.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum PortSelection {
    /// "switch" (switch egress ports), "host" (host NICs) or "all".
    Named(String),
    /// Explicit port ids (see ports.csv).
    Ids(Vec<u32>),
}

fn d_ports() -> PortSelection {
    PortSelection::Named("switch".into())
}

/// `[output]`: time series and checking.
#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Sample queue lengths and link utilization at this interval (off when absent).
    #[serde(default)]
    pub sample_interval: Option<Time>,
    #[serde(default = "d_ports")]
    pub sample_ports: PortSelection,
    /// Check byte conservation of every flow at its receiver (slower; for tests).
    #[serde(default)]
    pub audit: bool,
    /// Ports whose packets are traced (`packets.parquet`, `crate::trace`): "switch", "host",
    /// "all" or port ids; absent: every port when `trace_flows` is given, else no tracing.
    #[serde(default)]
    pub trace_ports: Option<PortSelection>,
    /// Flows whose packets are traced (flow ids); absent: every flow at the traced ports.
    #[serde(default)]
    pub trace_flows: Option<Vec<u32>>,
    /// Most trace events recorded; later ones are counted, not kept.
    #[serde(default = "d_trace_limit")]
    pub trace_limit: u64,
    /// Record every ACK a receiver-side control makes, with its hold (`ack_delays.parquet`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub ack_delays: bool,
    /// Most ACK-delay rows kept; later ones are counted, not kept.
    #[serde(default = "d_ack_delays_limit", skip_serializing_if = "is_default_ack_limit")]
    pub ack_delays_limit: u64,
}

fn d_ack_delays_limit() -> u64 {
    crate::transport::DEFAULT_ACK_DELAY_ROWS
}

// Left out of the normalized scenario at their defaults, so that scenarios from before the
// fields keep their fingerprints.
fn is_default_ack_limit(l: &u64) -> bool {
    *l == crate::transport::DEFAULT_ACK_DELAY_ROWS
}

fn d_trace_limit() -> u64 {
    crate::trace::DEFAULT_TRACE_EVENTS
}

impl OutputSpec {
    /// Packet tracing is on.
    pub fn tracing(&self) -> bool {
        self.trace_ports.is_some() || self.trace_flows.is_some()
    }
}

/// Checks of the packet-trace fields of `[output]`.
fn check_trace(output: &OutputSpec, nports: u32) -> Result<(), ScenarioError> {
    match &output.trace_ports {
        Some(PortSelection::Named(n)) if !["switch", "host", "all"].contains(&n.as_str()) => {
            return Err(FieldError::invalid(
                "output.trace_ports",
                format!("unknown selection '{n}'"),
                "use \"switch\", \"host\", \"all\" or a list of port ids",
            )
            .into());
        }
        Some(PortSelection::Ids(ids)) => {
            if let Some(bad) = ids.iter().find(|&&i| i >= nports) {
                return Err(FieldError::invalid(
                    "output.trace_ports",
                    format!("port {bad} does not exist (there are {nports})"),
                    "use ids from ports.csv",
                )
                .into());
            }
        }
        _ => {}
    }
    let max = crate::trace::MAX_TRACE_EVENTS;
    if output.trace_limit == 0 || output.trace_limit > max {
        return Err(FieldError::invalid(
            "output.trace_limit",
            format!("{} is outside 1..={max}", output.trace_limit),
            "trace fewer ports or flows (trace_ports, trace_flows) and give a limit within the range",
        )
        .into());
    }
    Ok(())
}

/// Checks of `output.ack_delays` and `output.ack_delays_limit` against the built transport.
fn check_ack_delays(output: &OutputSpec, protocol: &str, built: &mut dyn Transport) -> Result<(), ScenarioError> {
    if output.ack_delays && !built.record_ack_delays(1) {
        return Err(FieldError::invalid(
            "output.ack_delays",
            format!("protocol `{protocol}` does not hold ACKs at its receivers"),
            "remove it, or use a receiver-side control (ptcp, iatcp, ictcp, m21tcp)",
        )
        .into());
    }
    {
        let (l, max) = (output.ack_delays_limit, crate::transport::MAX_ACK_DELAY_ROWS);
        if l == 0 || l > max {
            return Err(FieldError::invalid(
                "output.ack_delays_limit",
                format!("{l} is outside 1..={max}"),
                "give a limit within the range (the run warns when ACKs are left out)",
            )
            .into());
        }
    }
    Ok(())
}

/// A validated scenario, ready to run (any number of times).
#[derive(Debug)]
pub struct Scenario {
    pub name: String,
    pub seed: u64,
    pub topology: Topology,
    pub network: NetworkSpec,
    /// `[host]`: the end-host model (NIC discipline, per-flow NIC limit, window validation).
    pub host: HostSpec,
    pub queue: QueueConfig,
    pub protocol: String,
    pub transport_cfg: serde_json::Value,
    pub workload: Workload,
    pub run: RunSpec,
    pub output: OutputSpec,
    pub net_info: NetInfo,
    pub base_dir: PathBuf,
    /// The classes of the transport's opportunistic packets (`registry::Derived::lp_classes`).
    pub lp_classes: Vec<u8>,
    /// `[[pause]]`: periods in which flows' sources ignore their receivers (`pause.rs`).
    pub pauses: Vec<crate::pause::PauseRule>,
    /// `[[link_delay]]`: timed changes of links' propagation delays (`linkdelay.rs`).
    pub link_delays: Vec<crate::linkdelay::LinkDelayRule>,
}

/// Parse and validate a scenario document.
pub fn parse_scenario(text: &str, format: Format, base_dir: &Path) -> Result<Scenario, ScenarioError> {
    let doc: serde_json::Value = match format {
        Format::Json => crate::nonfinite::parse_json(text)?,
        Format::Toml => {
            let t: toml::Value = toml::from_str(text).map_err(|e| ScenarioError::Syntax { message: e.to_string() })?;
            // JSON has no NaN or infinity: the conversion would turn them into null.
            crate::nonfinite::check_toml(&t)?;
            serde_json::to_value(t).map_err(|e| ScenarioError::Syntax { message: e.to_string() })?
        }
    };
    from_value(&doc, base_dir)
}

/// Validate an already-parsed document.
pub fn from_value(doc: &serde_json::Value, base_dir: &Path) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = from_table(doc, "")?;
    let run: RunSpec = from_table(&raw.run.clone().unwrap_or(serde_json::json!({})), "run")?;
    if run.time_limit == Some(Time::ZERO) {
        return Err(FieldError::invalid(
            "run.time_limit",
            "must be > 0",
            "give a positive time such as \"10ms\" or remove it",
        )
        .into());
    }
    if run.max_live_packets == 0 {
        return Err(FieldError::invalid(
            "run.max_live_packets",
            "must be > 0",
            format!("give a packet count such as {DEFAULT_MAX_LIVE_PACKETS} or remove it"),
        )
        .into());
    }
    for (name, v) in [("run.nic_queue_limit", run.nic_queue_limit), ("run.input_file_limit", run.input_file_limit)] {
        if v.0 == 0 {
            return Err(FieldError::invalid(name, "must be > 0", "give a size such as \"1GB\" or remove it").into());
        }
    }
    let topology = topology::build(&raw.topology).map_err(ScenarioError::Topology)?;
    crate::limits::check_topology(&topology, run.memory_limit)?;

    let network: NetworkSpec = from_table(&raw.network.clone().unwrap_or(serde_json::json!({})), "network")?;
    if network.mtu.0 <= network.header.0 {
        return Err(FieldError::invalid(
            "network.mtu",
            format!("must exceed the header ({} B)", network.header.0),
            "use an MTU such as 1500",
        )
        .into());
    }
    if network.mtu.0 > u32::MAX as u64 / 2 {
        return Err(
            FieldError::invalid("network.mtu", "is unreasonably large", "use an MTU such as 1500 or 9000").into()
        );
    }
    if network.ctrl_size.0 == 0 || network.ctrl_size.0 > network.mtu.0 {
        return Err(FieldError::invalid("network.ctrl_size", "must be between 1 B and the MTU", "use 64").into());
    }
    if network.buffer.0 < network.mtu.0 {
        return Err(FieldError::invalid(
            "network.buffer",
            format!("{} B cannot hold one {} B packet", network.buffer.0, network.mtu.0),
            "give a buffer of at least one MTU",
        )
        .into());
    }
    if !(1..=8).contains(&network.priorities) {
        return Err(FieldError::invalid(
            "network.priorities",
            format!("must be 1..8, got {}", network.priorities),
            "use up to 8 classes",
        )
        .into());
    }
    if let Some(l) = network.ecn_lambda {
        if !(l > 0.0 && l.is_finite()) {
            return Err(FieldError::invalid("network.ecn_lambda", "must be > 0", "use e.g. 0.17").into());
        }
    }
    let policy = QueuePolicyKind::from_name(&network.queue_policy).ok_or_else(|| {
        FieldError::invalid(
            "network.queue_policy",
            format!("unknown queue policy '{}'", network.queue_policy),
            format!("use one of: {}", QueuePolicyKind::NAMES.join(", ")),
        )
    })?;

    // Network facts (base RTTs) from a routed instance of the topology.
    check_classes("network.ecn_port_classes", network.ecn_port_classes.as_deref().unwrap_or(&[]), network.priorities)?;
    if !network.class_buffer.is_empty() {
        if network.class_buffer.len() != network.priorities as usize {
            return Err(FieldError::invalid(
                "network.class_buffer",
                format!("{} sizes for {} priorities", network.class_buffer.len(), network.priorities),
                "give one size per priority class, or leave it out for no per-class limit",
            )
            .into());
        }
        if let Some(i) = network.class_buffer.iter().position(|b| b.0 < network.mtu.0) {
            return Err(FieldError::invalid(
                format!("network.class_buffer[{i}]"),
                format!("{} B cannot hold one {} B packet", network.class_buffer[i].0, network.mtu.0),
                "give each class at least one MTU",
            )
            .into());
        }
        if policy != QueuePolicyKind::PriorityEcn {
            return Err(FieldError::invalid(
                "network.class_buffer",
                format!("is not supported by queue_policy '{}'", network.queue_policy),
                "use queue_policy = \"priority_ecn\" or leave class_buffer out",
            )
            .into());
        }
    }
    check_classes("network.pushout_classes", &network.pushout_classes, network.priorities)?;
    if !network.pushout_classes.is_empty()
        && !matches!(policy, QueuePolicyKind::PriorityEcn | QueuePolicyKind::CreditLimit)
    {
        return Err(FieldError::invalid(
            "network.pushout_classes",
            format!("is not supported by queue_policy '{}'", network.queue_policy),
            "use queue_policy = \"priority_ecn\" or \"expresspass_credit\", or leave pushout_classes out",
        )
        .into());
    }
    if network.trim.trim_threshold == 0 {
        return Err(
            FieldError::invalid("network.trim.trim_threshold", "must be at least 1 packet", "use e.g. 8").into()
        );
    }
    let tail_p = network.trim.tail_trim_probability;
    if !(0.0..=1.0).contains(&tail_p) {
        return Err(FieldError::invalid(
            "network.trim.tail_trim_probability",
            format!("must be a probability in [0, 1], got {tail_p}"),
            "use 0.5 (NDP: the arriving packet or the data queue's tail, equally likely) or 0 (always the arriving packet)",
        )
        .into());
    }
    if network.pfabric.buffer.0 < network.mtu.0 {
        return Err(FieldError::invalid(
            "network.pfabric.buffer",
            "cannot hold one MTU packet",
            "give at least one MTU",
        )
        .into());
    }
    if network.crossmark.period == Some(Time::ZERO) {
        return Err(FieldError::invalid("network.crossmark.period", "must be > 0", "use e.g. \"50us\"").into());
    }
    if network.credit.credit_queue == 0 {
        return Err(
            FieldError::invalid("network.credit.credit_queue", "must be at least 1 credit", "use e.g. 8").into()
        );
    }
    if let Some(share) = network.credit.share {
        if !(share > 0.0 && share < 1.0) {
            return Err(FieldError::invalid(
                "network.credit.share",
                format!("must be a fraction in (0, 1), got {share}"),
                "leave it out for ctrl_size / (ctrl_size + mtu), or give e.g. 0.05",
            )
            .into());
        }
    }
    if network.credit.selective && policy != QueuePolicyKind::CreditLimit {
        return Err(FieldError::invalid(
            "network.credit.selective",
            format!("only applies to queue_policy \"expresspass_credit\", not '{}'", network.queue_policy),
            "use queue_policy = \"expresspass_credit\" (ExpressPass + Aeolus) or queue_policy = \"selective_drop\"",
        )
        .into());
    }
    let mut trim = network.trim.clone();
    trim.header_size = network.ctrl_size;
    trim.mtu = network.mtu;
    let mut credit = network.credit.clone();
    credit.credit_size = network.ctrl_size;
    credit.mtu = network.mtu;
    let host: HostSpec = from_table(&raw.host.clone().unwrap_or(serde_json::json!({})), "host")?;
    host.validate(network.mtu)?;
    let probe_q = QueueConfig {
        policy: policy.clone(),
        buffer: network.buffer,
        classes: network.priorities,
        ecn_k: vec![None; network.priorities as usize],
        ecn_per_port: network.ecn_per_port,
        ecn_port_classes: network.ecn_port_classes.clone().unwrap_or_default(),
        class_buffer: network.class_buffer.clone(),
        pushout_classes: network.pushout_classes.clone(),
        selective: network.selective.clone(),
        trim: trim.clone(),
        pfabric: network.pfabric.clone(),
        crossmark: network.crossmark.clone(),
        credit: credit.clone(),
        nic: NicConfig { qdisc: host.nic_qdisc, quantum: host.nic_quantum.unwrap_or(network.mtu) },
        int: false,
        window_stamp: None,
        pdq: None,
    };
    let net = Network::build(&topology, &probe_q, 0, 0);
    let mut max_rtt = Time::ZERO;
    for src in topology.rtt_probe_hosts() {
        for dst in 0..topology.num_hosts {
            if dst != src {
                let p = net.flow_path(0, src, dst);
                max_rtt = max_rtt.max(net.base_rtt(&p, network.mtu, network.ctrl_size));
            }
        }
    }
    let host_rates = topology.host_rates();
    let max_host_rate = host_rates.iter().copied().max().unwrap_or_default();
    let mut net_info = NetInfo {
        mtu: network.mtu,
        header: network.header,
        ctrl_size: network.ctrl_size,
        num_nodes: topology.num_nodes(),
        max_base_rtt: max_rtt,
        max_host_rate,
        priorities: network.priorities,
        size_cdf: None,
        workload: None,
        host: host.clone(),
    };

    let (protocol, mut transport_cfg) = split_protocol(&raw.transport)?;

    let wl_tables: Vec<serde_json::Value> = match &raw.workload {
        serde_json::Value::Array(a) => a.clone(),
        serde_json::Value::Object(_) => vec![raw.workload.clone()],
        _ => {
            return Err(FieldError::invalid(
                "workload",
                "must be a table or an array of tables",
                "write [[workload]] sections",
            )
            .into())
        }
    };
    if wl_tables.is_empty() {
        return Err(FieldError::invalid("workload", "is empty", "add at least one [[workload]] section").into());
    }
    let env = WorkloadEnv {
        num_hosts: topology.num_hosts,
        host_rates,
        racks: topology.racks.clone(),
        base_dir: base_dir.to_path_buf(),
        file_limit: run.input_file_limit.0,
    };
    let workload = workload::build(&wl_tables, &env).map_err(ScenarioError::Workload)?;
    // The transport is built after the workload so that it may use the workload's size
    // distribution (Homa's priority cutoffs).
    net_info.size_cdf = workload.size_cdf();
    net_info.workload = Some(workload.facts());

    // What the protocol derives where the scenario is silent: [transport] fields filled in
    // (the normalized scenario shows them), its switch settings (PPT's Eq. 3 thresholds).
    let derived = registry::derive(&protocol, &transport_cfg, &net_info).map_err(ScenarioError::Transport)?;
    if let serde_json::Value::Object(m) = &mut transport_cfg {
        for (k, v) in &derived.transport {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    let mut built = registry::build(&protocol, &transport_cfg, &net_info).map_err(ScenarioError::Transport)?;
    if let Some(i) = workload.persistent_component() {
        if !built.supports_append() {
            return Err(FieldError::invalid(
                format!("workload[{i}].persistent"),
                format!("asks for connections kept open across rounds, which protocol `{protocol}` cannot carry"),
                "set persistent = false, or use a window-based TCP transport (tcp, dctcp, d2tcp, l2dct, ptcp, ictcp, iatcp, m21tcp)",
            )
            .into());
        }
    }

    let classes = network.priorities as usize;
    let explicit_k: Option<Vec<Bytes>> = if let Some(per_q) = &network.ecn_k_per_queue {
        if per_q.len() != classes {
            return Err(FieldError::invalid(
                "network.ecn_k_per_queue",
                format!("has {} entries for {} priority classes", per_q.len(), classes),
                "give one threshold per class",
            )
            .into());
        }
        Some(per_q.clone())
    } else {
        network.ecn_k.map(|k| vec![k; classes])
    };
    let ecn_k: Vec<Bytes> = match (explicit_k, &derived.ecn_k_per_queue) {
        (Some(k), Some(d)) => {
            // The protocol's own threshold parameters act only through its default: given
            // next to different explicit thresholds they would be silently ignored.
            if let Some(f) = derived.ecn_from.first() {
                if &k != d {
                    return Err(FieldError::invalid(
                        f.clone(),
                        "has no effect: network.ecn_k / network.ecn_k_per_queue set the thresholds",
                        "remove it, or remove the network thresholds to use the protocol's",
                    )
                    .into());
                }
            }
            k
        }
        (Some(k), None) => k,
        (None, Some(d)) => {
            if network.ecn_lambda.is_some() {
                return Err(FieldError::invalid(
                    "network.ecn_lambda",
                    format!("does not apply to protocol '{protocol}', which sets one threshold per class"),
                    "give network.ecn_k_per_queue, or the protocol's own lambda fields (see docs/scenario.md)",
                )
                .into());
            }
            d.clone()
        }
        (None, None) => {
            let bdp = max_host_rate.bdp(max_rtt);
            let lambda = network.ecn_lambda.unwrap_or(DEFAULT_ECN_LAMBDA);
            vec![Bytes(((bdp.0 as f64) * lambda).round() as u64); classes]
        }
    };
    let mut network = network;
    if network.ecn_port_classes.is_none() {
        if let Some(c) = &derived.ecn_port_classes {
            check_classes("network.ecn_port_classes", c, network.priorities)?;
            network.ecn_port_classes = Some(c.clone());
        }
    }
    // RPO's adaptive marking period t: one RTT (the largest base RTT) unless given. Other
    // policies keep the former fixed default, so their normalized scenario is unchanged.
    if network.crossmark.period.is_none() {
        network.crossmark.period = Some(if policy == QueuePolicyKind::CrossMark {
            max_rtt.max(Time(1))
        } else {
            crate::queue::crossmark::DEFAULT_PERIOD
        });
    }
    network.crossmark.mss = Bytes(network.mtu.0.saturating_sub(network.header.0).max(1));
    // In-band telemetry for a protocol that reads it: every switch on a path adds a record,
    // and the stack holds `queue::int::MAX_HOPS` of them.
    if derived.int {
        let hops = topology.max_switch_hops();
        if hops as usize > crate::queue::int::MAX_HOPS {
            return Err(FieldError::invalid(
                "topology",
                format!(
                    "paths cross up to {hops} switches, but protocol '{protocol}' carries in-band telemetry for at most {}",
                    crate::queue::int::MAX_HOPS
                ),
                "use a topology whose host-to-host paths cross at most 5 switches (a fat tree crosses 5)",
            )
            .into());
        }
    }
    let queue = QueueConfig {
        int: derived.int,
        // A per-port maximum window for a protocol that reads it, counted per largest base RTT.
        window_stamp: derived.window_stamp.then_some(max_rtt.max(Time(1))),
        pdq: derived.pdq.clone(),
        crossmark: network.crossmark.clone(),
        ecn_k: ecn_k.into_iter().map(Some).collect(),
        ecn_port_classes: network.ecn_port_classes.clone().unwrap_or_default(),
        ..probe_q
    };

    let output: OutputSpec = from_table(&raw.output.clone().unwrap_or(serde_json::json!({})), "output")?;
    if output.sample_interval == Some(Time::ZERO) {
        return Err(
            FieldError::invalid("output.sample_interval", "must be > 0", "give e.g. \"100us\" or remove it").into()
        );
    }
    check_trace(&output, topology.links.len() as u32 * 2)?;
    check_ack_delays(&output, &protocol, built.as_mut())?;
    match &output.sample_ports {
        PortSelection::Named(n) if !["switch", "host", "all"].contains(&n.as_str()) => {
            return Err(FieldError::invalid(
                "output.sample_ports",
                format!("unknown selection '{n}'"),
                "use \"switch\", \"host\", \"all\" or a list of port ids",
            )
            .into());
        }
        PortSelection::Ids(ids) => {
            let nports = topology.links.len() as u32 * 2;
            if let Some(bad) = ids.iter().find(|&&i| i >= nports) {
                return Err(FieldError::invalid(
                    "output.sample_ports",
                    format!("port {bad} does not exist (there are {nports})"),
                    "use ids from ports.csv",
                )
                .into());
            }
        }
        _ => {}
    }

    let pauses = crate::pause::parse(raw.pause.as_ref(), topology.num_hosts, &mut || {
        workload.generate(&mut Rng::stream(raw.seed, streams::WORKLOAD)).len()
    })?;
    let link_delays = crate::linkdelay::parse(raw.link_delay.as_ref(), &topology)?;
    let sc = Scenario {
        name: raw.name,
        seed: raw.seed,
        topology,
        network,
        host,
        queue,
        protocol,
        transport_cfg,
        workload,
        run,
        output,
        net_info,
        base_dir: base_dir.to_path_buf(),
        lp_classes: derived.lp_classes,
        pauses,
        link_delays,
    };
    crate::limits::check(&sc)?;
    // Only now (the memory estimate passed) are the flows drawn to count them.
    if let Some(ids) = &sc.output.trace_flows {
        if !ids.is_empty() {
            check_trace_flows(ids, sc.flows().len())?;
        }
    }
    Ok(sc)
}

/// `output.trace_flows` names flows of the workload: ids below its flow count (the flow
/// table's order). An unknown id would silently trace nothing.
fn check_trace_flows(ids: &[u32], nflows: usize) -> Result<(), FieldError> {
    match ids.iter().find(|&&f| f as usize >= nflows) {
        Some(bad) => Err(FieldError::invalid(
            "output.trace_flows",
            format!("flow {bad} does not exist (the workload has {nflows} flows)"),
            "list flow ids from 0 to flows - 1 (the flow table's order, by start time), or remove the field to trace every flow",
        )),
        None => Ok(()),
    }
}

/// Every class in `classes` (the list at `field`) must exist among `priorities` classes.
fn check_classes(field: &str, classes: &[u8], priorities: u8) -> Result<(), ScenarioError> {
    match classes.iter().find(|&&c| c >= priorities) {
        Some(c) => Err(FieldError::invalid(
            field,
            format!("class {c} does not exist with {priorities} priorities"),
            "list classes from 0 to priorities - 1",
        )
        .into()),
        None => Ok(()),
    }
}

fn split_protocol(t: &serde_json::Value) -> Result<(String, serde_json::Value), ScenarioError> {
    let obj = t.as_object().ok_or_else(|| {
        FieldError::invalid("transport", "must be a table", "write a [transport] table with protocol = \"dctcp\"")
    })?;
    let proto = obj
        .get("protocol")
        .ok_or(FieldError::Missing { path: "transport.protocol".into() })?
        .as_str()
        .ok_or_else(|| {
            FieldError::invalid(
                "transport.protocol",
                "must be a string",
                format!("use one of: {}", registry::PROTOCOLS.join(", ")),
            )
        })?
        .to_string();
    let mut rest = obj.clone();
    rest.remove("protocol");
    Ok((proto, serde_json::Value::Object(rest)))
}

impl Scenario {
    /// The normalized scenario as JSON: every section with its defaults filled in.
    pub fn to_json(&self) -> String {
        let mut transport = self.transport_cfg.clone();
        if let serde_json::Value::Object(m) = &mut transport {
            m.insert("protocol".into(), serde_json::Value::String(self.protocol.clone()));
        }
        let mut network = serde_json::to_value(&self.network).unwrap_or_default();
        network["ecn_k_per_queue"] =
            serde_json::json!(self.queue.ecn_k.iter().map(|k| k.map(|b| b.to_unit_string())).collect::<Vec<_>>());
        network["ecn_port_classes"] = serde_json::json!(self.queue.ecn_port_classes);
        let v = serde_json::json!({
            "name": self.name,
            "seed": self.seed,
            "topology": self.topology.spec,
            "network": network,
            "host": self.host,
            "transport": transport,
            "workload": self.workload.describe(),
            "run": self.run,
            "output": self.output,
            "derived": {
                "hosts": self.topology.num_hosts,
                "nodes": self.topology.num_nodes(),
                "links": self.topology.links.len(),
                "max_base_rtt_ps": self.net_info.max_base_rtt.0,
                "lp_classes": self.lp_classes,
            },
        });
        let mut v = v;
        if !self.pauses.is_empty() {
            v["pause"] = serde_json::json!(self.pauses);
        }
        if !self.link_delays.is_empty() {
            v["link_delay"] = serde_json::json!(self.link_delays);
        }
        if self.queue.int {
            // Only runs with in-band telemetry say so (other runs' scenario.json is unchanged).
            v["derived"]["int"] = serde_json::Value::Bool(true);
        }
        if let Some(p) = self.queue.window_stamp {
            // Only runs with window stamping say so.
            v["derived"]["window_stamp_period_ps"] = serde_json::json!(p.0);
        }
        if self.queue.pdq.is_some() {
            // Only PDQ runs say so: every port runs PDQ's flow controller.
            v["derived"]["pdq"] = serde_json::Value::Bool(true);
        }
        serde_json::to_string_pretty(&v).unwrap_or_default()
    }

    /// The RNG stream for `component` of this scenario.
    pub fn rng(&self, component: u64) -> Rng {
        Rng::stream(self.seed, component)
    }

    /// The workload's flows (deterministic in the seed).
    pub fn flows(&self) -> Vec<workload::FlowSpec> {
        self.workload.generate(&mut self.rng(streams::WORKLOAD))
    }

    /// The workload's flows with its barrier rounds (see `workload::Workload::plan`).
    pub fn flow_plan(&self) -> workload::FlowPlan {
        self.workload.plan(&mut self.rng(streams::WORKLOAD))
    }
}
