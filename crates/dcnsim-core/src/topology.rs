//! Topologies built from parameters or from an explicit node/link list.
//!
//! A [`Topology`] is a graph of hosts and switches joined by full-duplex links, each
//! with a rate and a one-way propagation delay (docs/conventions.md "Network"). Hosts always
//! get node ids `0..num_hosts`, so a host index is its node id; switches follow.
//!
//! Kinds (field `topology.kind`):
//! - `single_switch`: `hosts` hosts on one switch (star; incast experiments).
//! - `dumbbell`: `left` and `right` hosts on two switches joined by one bottleneck link.
//! - `leaf_spine`: `leaves` x `hosts_per_leaf` hosts, every leaf linked to every one of
//!   `spines` spines; host links at `host_rate`, leaf-spine links at `core_rate`
//!   (oversubscription = hosts_per_leaf x host_rate / (spines x core_rate)).
//! - `fat_tree`: the k-ary fat tree of Al-Fares et al.: k pods of k/2 edge and k/2
//!   aggregation switches, (k/2)^2 cores, k^3/4 hosts.
//! - `three_tier`: the ToR / aggregation / core tree of the PASE paper (§4): `tors` ToRs
//!   of `hosts_per_tor` hosts; each ToR joins one aggregation switch (`tor_uplinks =
//!   "tree"`, ToRs split evenly) or all of them (`"full"`); every aggregation switch
//!   joins every core.
//! - `explicit`: `nodes = [{name, kind = "host"|"switch"}]` and `links = [{a, b, rate,
//!   delay}]` naming nodes.

use crate::config::{from_table, positive, FieldError};
use crate::packet::NodeId;
use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::fmt;

/// Role of a node, for port naming, sampling selection and plots.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    Host,
    Tor,
    Leaf,
    Spine,
    Agg,
    Core,
    Switch,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Host => "host",
            Tier::Tor => "tor",
            Tier::Leaf => "leaf",
            Tier::Spine => "spine",
            Tier::Agg => "agg",
            Tier::Core => "core",
            Tier::Switch => "switch",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LinkDef {
    pub a: NodeId,
    pub b: NodeId,
    pub rate: Rate,
    pub delay: Time,
}

/// A validated topology.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub tiers: Vec<Tier>,
    pub names: Vec<String>,
    pub links: Vec<LinkDef>,
    pub num_hosts: u32,
    /// Hosts grouped by the switch they hang off (racks), in order.
    pub racks: Vec<Vec<u32>>,
    /// The normalized parameters (for the scenario echo).
    pub spec: serde_json::Value,
}

/// Explicit topologies with at most this many hosts have their largest base RTT taken over
/// all host pairs.
pub const RTT_PROBE_ALL_HOSTS: u32 = 2048;

impl Topology {
    /// The hosts whose paths to every other host give the largest base RTT. The generated
    /// kinds are host-symmetric up to rack position, so the first and the last host (which
    /// sit at the two ends of the host numbering, in different racks when there are several)
    /// see every distance; an explicit topology has no such symmetry, so every host is probed
    /// (all pairs) up to [`RTT_PROBE_ALL_HOSTS`] hosts, and beyond that an evenly spaced
    /// [`RTT_PROBE_ALL_HOSTS`] of them, first and last included, to bound the set-up time.
    pub fn rtt_probe_hosts(&self) -> Vec<u32> {
        let explicit = self.spec.get("kind").and_then(|k| k.as_str()) == Some("explicit");
        let n = self.num_hosts;
        if !explicit {
            return vec![0, n - 1];
        }
        if n <= RTT_PROBE_ALL_HOSTS {
            return (0..n).collect();
        }
        let m = RTT_PROBE_ALL_HOSTS as u64;
        (0..m).map(|i| (i * (n as u64 - 1) / (m - 1)) as u32).collect()
    }
}

/// Errors building a topology.
#[derive(Clone, Debug, PartialEq)]
pub enum TopologyError {
    /// A field is unknown, missing or out of range.
    Field(FieldError),
    /// `kind` names no known topology.
    UnknownKind { kind: String },
    /// An explicit link names a node that is not in `nodes`.
    UnknownNode { path: String, name: String },
    /// Two explicit nodes share a name.
    DuplicateNode { path: String, name: String },
    /// Some host cannot reach some other host.
    Disconnected { from: String, to: String },
    /// A link joins a node to itself.
    SelfLoop { path: String },
    /// A host has more than one link (hosts have one NIC).
    MultiHomedHost { name: String },
}

impl TopologyError {
    pub fn field(&self) -> String {
        match self {
            TopologyError::Field(f) => f.field(),
            TopologyError::UnknownKind { .. } => "topology.kind".into(),
            TopologyError::UnknownNode { path, .. }
            | TopologyError::DuplicateNode { path, .. }
            | TopologyError::SelfLoop { path } => path.clone(),
            TopologyError::Disconnected { .. } => "topology.links".into(),
            TopologyError::MultiHomedHost { .. } => "topology.links".into(),
        }
    }
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::Field(e) => write!(f, "{e}"),
            TopologyError::UnknownKind { kind } => write!(
                f,
                "topology.kind: unknown topology '{kind}'; use one of single_switch, dumbbell, leaf_spine, fat_tree, three_tier, explicit"
            ),
            TopologyError::UnknownNode { path, name } => {
                write!(f, "{path}: no node named '{name}'; add it to topology.nodes or fix the name")
            }
            TopologyError::DuplicateNode { path, name } => {
                write!(f, "{path}: node name '{name}' is used twice; give each node a unique name")
            }
            TopologyError::Disconnected { from, to } => write!(
                f,
                "topology.links: host '{from}' cannot reach host '{to}'; add links so every host reaches every other"
            ),
            TopologyError::SelfLoop { path } => write!(f, "{path}: a link joins a node to itself; remove it"),
            TopologyError::MultiHomedHost { name } => write!(
                f,
                "topology.links: host '{name}' has more than one link; hosts have one NIC, put a switch in between"
            ),
        }
    }
}

impl std::error::Error for TopologyError {}

impl From<FieldError> for TopologyError {
    fn from(e: FieldError) -> Self {
        TopologyError::Field(e)
    }
}

fn d_host_rate() -> Rate {
    Rate::gbps(40)
}
fn d_core_rate() -> Rate {
    Rate::gbps(100)
}
fn d_delay() -> Time {
    Time::us(1)
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct SingleSwitch {
    hosts: u32,
    #[serde(default = "d_host_rate")]
    host_rate: Rate,
    #[serde(default = "d_delay")]
    host_delay: Time,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Dumbbell {
    left: u32,
    right: u32,
    #[serde(default = "d_host_rate")]
    host_rate: Rate,
    #[serde(default = "d_delay")]
    host_delay: Time,
    #[serde(default = "d_host_rate")]
    bottleneck_rate: Rate,
    #[serde(default = "d_delay")]
    bottleneck_delay: Time,
}

fn d_leaves() -> u32 {
    9
}
fn d_hpl() -> u32 {
    16
}
fn d_spines() -> u32 {
    4
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct LeafSpine {
    #[serde(default = "d_leaves")]
    leaves: u32,
    #[serde(default = "d_hpl")]
    hosts_per_leaf: u32,
    #[serde(default = "d_spines")]
    spines: u32,
    #[serde(default = "d_host_rate")]
    host_rate: Rate,
    #[serde(default = "d_core_rate")]
    core_rate: Rate,
    #[serde(default = "d_delay")]
    host_delay: Time,
    #[serde(default = "d_delay")]
    core_delay: Time,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct FatTree {
    k: u32,
    #[serde(default = "d_core_rate")]
    host_rate: Rate,
    /// Rate of switch-to-switch links; defaults to `host_rate`.
    #[serde(default)]
    core_rate: Option<Rate>,
    #[serde(default = "d_delay")]
    host_delay: Time,
    #[serde(default = "d_delay")]
    core_delay: Time,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Uplinks {
    Tree,
    Full,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ThreeTier {
    tors: u32,
    hosts_per_tor: u32,
    #[serde(default = "one")]
    aggs: u32,
    #[serde(default = "one")]
    cores: u32,
    #[serde(default = "d_host_rate")]
    host_rate: Rate,
    /// ToR-aggregation link rate.
    #[serde(default = "d_core_rate")]
    tor_rate: Rate,
    /// Aggregation-core link rate.
    #[serde(default = "d_core_rate")]
    core_rate: Rate,
    #[serde(default = "d_delay")]
    host_delay: Time,
    #[serde(default = "d_delay")]
    tor_delay: Time,
    #[serde(default = "d_delay")]
    core_delay: Time,
    #[serde(default = "tree")]
    tor_uplinks: Uplinks,
}
fn one() -> u32 {
    1
}
fn tree() -> Uplinks {
    Uplinks::Tree
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ExplicitNode {
    name: String,
    kind: ExplicitKind,
}
#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum ExplicitKind {
    Host,
    Switch,
}
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ExplicitLink {
    a: String,
    b: String,
    rate: Rate,
    #[serde(default = "d_delay")]
    delay: Time,
}
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Explicit {
    nodes: Vec<ExplicitNode>,
    links: Vec<ExplicitLink>,
}

/// Incremental builder: hosts first, then switches.
struct Builder {
    tiers: Vec<Tier>,
    names: Vec<String>,
    links: Vec<LinkDef>,
    racks: Vec<Vec<u32>>,
    num_hosts: u32,
}

impl Builder {
    fn new(num_hosts: u32) -> Self {
        Builder {
            tiers: vec![Tier::Host; num_hosts as usize],
            names: (0..num_hosts).map(|i| format!("h{i}")).collect(),
            links: vec![],
            racks: vec![],
            num_hosts,
        }
    }
    fn switch(&mut self, tier: Tier, name: String) -> NodeId {
        self.tiers.push(tier);
        self.names.push(name);
        (self.tiers.len() - 1) as NodeId
    }
    fn link(&mut self, a: NodeId, b: NodeId, rate: Rate, delay: Time) {
        self.links.push(LinkDef { a, b, rate, delay });
    }
    fn finish(self, spec: serde_json::Value) -> Topology {
        Topology {
            tiers: self.tiers,
            names: self.names,
            links: self.links,
            num_hosts: self.num_hosts,
            racks: self.racks,
            spec,
        }
    }
}

fn rate_ok(r: Rate, path: &str) -> Result<Rate, FieldError> {
    if r.0 == 0 {
        Err(FieldError::invalid(path, "rate must be > 0", "give a positive rate such as \"40Gbps\""))
    } else {
        Ok(r)
    }
}

fn with_kind<T: Serialize>(kind: &str, t: &T) -> serde_json::Value {
    let mut v = serde_json::to_value(t).expect("serializable");
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("kind".into(), serde_json::Value::String(kind.into()));
    }
    v
}

/// Largest topology accepted, to fail clearly instead of exhausting memory.
pub const MAX_NODES: u64 = 1 << 20;

fn count_ok(n: u64, path: &str) -> Result<(), FieldError> {
    if n > MAX_NODES {
        Err(FieldError::invalid(
            path,
            format!("gives {n} nodes, more than the {MAX_NODES} supported"),
            "use a smaller topology",
        ))
    } else {
        Ok(())
    }
}

/// Most links accepted (each is two ports of state), to fail clearly instead of exhausting memory.
pub const MAX_LINKS: u64 = 1 << 24;

/// Refuse a topology of `nodes` nodes and `links` links beyond [`MAX_NODES`] / [`MAX_LINKS`]
/// before it is built; `path` names the field to lower.
fn size_ok(nodes: u64, links: u64, path: &str) -> Result<(), FieldError> {
    count_ok(nodes, path)?;
    if links > MAX_LINKS {
        return Err(FieldError::invalid(
            path,
            format!("gives {links} links, more than the {MAX_LINKS} supported"),
            "use a smaller topology",
        ));
    }
    Ok(())
}

/// Build and validate a topology from its scenario table.
pub fn build(raw: &serde_json::Value) -> Result<Topology, TopologyError> {
    let sec = "topology";
    let obj = raw.as_object().ok_or_else(|| FieldError::invalid(sec, "must be a table", "write a [topology] table"))?;
    let kind = obj
        .get("kind")
        .ok_or(FieldError::Missing { path: "topology.kind".into() })?
        .as_str()
        .ok_or_else(|| FieldError::invalid("topology.kind", "must be a string", "e.g. kind = \"leaf_spine\""))?
        .to_string();
    let mut rest = obj.clone();
    rest.remove("kind");
    let rest = serde_json::Value::Object(rest);
    let topo = match kind.as_str() {
        "single_switch" | "star" => {
            let t: SingleSwitch = from_table(&rest, sec)?;
            positive(t.hosts, "topology.hosts", "host count (at least 2)")?;
            if t.hosts < 2 {
                return Err(FieldError::invalid("topology.hosts", "must be at least 2", "give 2 or more hosts").into());
            }
            count_ok(t.hosts as u64, "topology.hosts")?;
            rate_ok(t.host_rate, "topology.host_rate")?;
            let mut b = Builder::new(t.hosts);
            let s = b.switch(Tier::Tor, "sw0".into());
            for h in 0..t.hosts {
                b.link(h, s, t.host_rate, t.host_delay);
            }
            b.racks.push((0..t.hosts).collect());
            b.finish(with_kind("single_switch", &t))
        }
        "dumbbell" => {
            let t: Dumbbell = from_table(&rest, sec)?;
            positive(t.left, "topology.left", "host count")?;
            positive(t.right, "topology.right", "host count")?;
            count_ok(t.left as u64 + t.right as u64, "topology.left")?;
            rate_ok(t.host_rate, "topology.host_rate")?;
            rate_ok(t.bottleneck_rate, "topology.bottleneck_rate")?;
            let n = t.left + t.right;
            let mut b = Builder::new(n);
            let l = b.switch(Tier::Tor, "swL".into());
            let r = b.switch(Tier::Tor, "swR".into());
            for h in 0..t.left {
                b.link(h, l, t.host_rate, t.host_delay);
            }
            for h in t.left..n {
                b.link(h, r, t.host_rate, t.host_delay);
            }
            b.link(l, r, t.bottleneck_rate, t.bottleneck_delay);
            b.racks.push((0..t.left).collect());
            b.racks.push((t.left..n).collect());
            b.finish(with_kind("dumbbell", &t))
        }
        "leaf_spine" => {
            let t: LeafSpine = from_table(&rest, sec)?;
            positive(t.leaves, "topology.leaves", "number of leaves")?;
            positive(t.hosts_per_leaf, "topology.hosts_per_leaf", "number of hosts per leaf")?;
            positive(t.spines, "topology.spines", "number of spines")?;
            count_ok(t.leaves as u64 * t.hosts_per_leaf as u64, "topology.hosts_per_leaf")?;
            if t.leaves * t.hosts_per_leaf < 2 {
                return Err(FieldError::invalid(
                    "topology.hosts_per_leaf",
                    "the topology has fewer than 2 hosts",
                    "give at least 2 hosts",
                )
                .into());
            }
            let (hosts, leaves, spines) = (t.leaves as u64 * t.hosts_per_leaf as u64, t.leaves as u64, t.spines as u64);
            size_ok(hosts + leaves + spines, hosts + leaves * spines, "topology.spines")?;
            rate_ok(t.host_rate, "topology.host_rate")?;
            rate_ok(t.core_rate, "topology.core_rate")?;
            let n = t.leaves * t.hosts_per_leaf;
            let mut b = Builder::new(n);
            let leaves: Vec<NodeId> = (0..t.leaves).map(|i| b.switch(Tier::Leaf, format!("leaf{i}"))).collect();
            let spines: Vec<NodeId> = (0..t.spines).map(|i| b.switch(Tier::Spine, format!("spine{i}"))).collect();
            for (li, &l) in leaves.iter().enumerate() {
                let hosts: Vec<u32> = (0..t.hosts_per_leaf).map(|j| li as u32 * t.hosts_per_leaf + j).collect();
                for &h in &hosts {
                    b.link(h, l, t.host_rate, t.host_delay);
                }
                b.racks.push(hosts);
                for &s in &spines {
                    b.link(l, s, t.core_rate, t.core_delay);
                }
            }
            b.finish(with_kind("leaf_spine", &t))
        }
        "fat_tree" => {
            let t: FatTree = from_table(&rest, sec)?;
            if t.k < 2 || !t.k.is_multiple_of(2) {
                return Err(FieldError::invalid(
                    "topology.k",
                    format!("must be an even number >= 2, got {}", t.k),
                    "use k = 4, 8, 16 ...",
                )
                .into());
            }
            count_ok((t.k as u64).pow(3) / 4, "topology.k")?;
            rate_ok(t.host_rate, "topology.host_rate")?;
            let core_rate = rate_ok(t.core_rate.unwrap_or(t.host_rate), "topology.core_rate")?;
            let k = t.k;
            let half = k / 2;
            let n = k * k * k / 4;
            let mut b = Builder::new(n);
            let mut edges = vec![];
            let mut aggs = vec![];
            for p in 0..k {
                for i in 0..half {
                    edges.push(b.switch(Tier::Tor, format!("edge{p}_{i}")));
                }
                for i in 0..half {
                    aggs.push(b.switch(Tier::Agg, format!("agg{p}_{i}")));
                }
            }
            let cores: Vec<NodeId> = (0..half * half).map(|i| b.switch(Tier::Core, format!("core{i}"))).collect();
            for p in 0..k {
                for i in 0..half {
                    let e = edges[(p * half + i) as usize];
                    let hosts: Vec<u32> = (0..half).map(|j| (p * half + i) * half + j).collect();
                    for &h in &hosts {
                        b.link(h, e, t.host_rate, t.host_delay);
                    }
                    b.racks.push(hosts);
                    for j in 0..half {
                        b.link(e, aggs[(p * half + j) as usize], core_rate, t.core_delay);
                    }
                }
                for j in 0..half {
                    let a = aggs[(p * half + j) as usize];
                    for c in 0..half {
                        b.link(a, cores[(j * half + c) as usize], core_rate, t.core_delay);
                    }
                }
            }
            let mut spec = with_kind("fat_tree", &t);
            spec["core_rate"] = serde_json::json!(core_rate);
            b.finish(spec)
        }
        "three_tier" => {
            let t: ThreeTier = from_table(&rest, sec)?;
            positive(t.tors, "topology.tors", "number of ToR switches")?;
            positive(t.hosts_per_tor, "topology.hosts_per_tor", "number of hosts per ToR")?;
            positive(t.aggs, "topology.aggs", "number of aggregation switches")?;
            positive(t.cores, "topology.cores", "number of core switches")?;
            count_ok(t.tors as u64 * t.hosts_per_tor as u64, "topology.hosts_per_tor")?;
            if t.tors * t.hosts_per_tor < 2 {
                return Err(FieldError::invalid(
                    "topology.hosts_per_tor",
                    "the topology has fewer than 2 hosts",
                    "give at least 2 hosts",
                )
                .into());
            }
            let (hosts, tors, aggs, cores) =
                (t.tors as u64 * t.hosts_per_tor as u64, t.tors as u64, t.aggs as u64, t.cores as u64);
            size_ok(hosts + tors + aggs + cores, hosts + tors * aggs + aggs * cores, "topology.aggs")?;
            rate_ok(t.host_rate, "topology.host_rate")?;
            rate_ok(t.tor_rate, "topology.tor_rate")?;
            rate_ok(t.core_rate, "topology.core_rate")?;
            if t.tor_uplinks == Uplinks::Tree && t.aggs > t.tors {
                return Err(FieldError::invalid(
                    "topology.aggs",
                    "more aggregation switches than ToRs in a tree",
                    "use tor_uplinks = \"full\" or fewer aggs",
                )
                .into());
            }
            let n = t.tors * t.hosts_per_tor;
            let mut b = Builder::new(n);
            let tors: Vec<NodeId> = (0..t.tors).map(|i| b.switch(Tier::Tor, format!("tor{i}"))).collect();
            let aggs: Vec<NodeId> = (0..t.aggs).map(|i| b.switch(Tier::Agg, format!("agg{i}"))).collect();
            let cores: Vec<NodeId> = (0..t.cores).map(|i| b.switch(Tier::Core, format!("core{i}"))).collect();
            for (ti, &tor) in tors.iter().enumerate() {
                let hosts: Vec<u32> = (0..t.hosts_per_tor).map(|j| ti as u32 * t.hosts_per_tor + j).collect();
                for &h in &hosts {
                    b.link(h, tor, t.host_rate, t.host_delay);
                }
                b.racks.push(hosts);
                match t.tor_uplinks {
                    Uplinks::Tree => {
                        let a = aggs[ti * t.aggs as usize / t.tors as usize];
                        b.link(tor, a, t.tor_rate, t.tor_delay);
                    }
                    Uplinks::Full => {
                        for &a in &aggs {
                            b.link(tor, a, t.tor_rate, t.tor_delay);
                        }
                    }
                }
            }
            for &a in &aggs {
                for &c in &cores {
                    b.link(a, c, t.core_rate, t.core_delay);
                }
            }
            b.finish(with_kind("three_tier", &t))
        }
        "explicit" => build_explicit(&rest)?,
        other => return Err(TopologyError::UnknownKind { kind: other.to_string() }),
    };
    check_connected(&topo)?;
    Ok(topo)
}

fn build_explicit(rest: &serde_json::Value) -> Result<Topology, TopologyError> {
    let t: Explicit = from_table(rest, "topology")?;
    let mut id_of: HashMap<&str, NodeId> = HashMap::new();
    let hosts: Vec<&ExplicitNode> = t.nodes.iter().filter(|n| n.kind == ExplicitKind::Host).collect();
    let switches: Vec<&ExplicitNode> = t.nodes.iter().filter(|n| n.kind == ExplicitKind::Switch).collect();
    if hosts.len() < 2 {
        return Err(FieldError::invalid(
            "topology.nodes",
            "fewer than 2 hosts",
            "declare at least 2 nodes with kind = \"host\"",
        )
        .into());
    }
    count_ok(t.nodes.len() as u64, "topology.nodes")?;
    let mut b = Builder::new(hosts.len() as u32);
    for (i, h) in hosts.iter().enumerate() {
        b.names[i] = h.name.clone();
    }
    for s in &switches {
        b.switch(Tier::Switch, s.name.clone());
    }
    for (i, name) in b.names.iter().enumerate() {
        if id_of.insert(name.as_str(), i as NodeId).is_some() {
            let pos = t.nodes.iter().rposition(|n| &n.name == name).unwrap_or(0);
            return Err(TopologyError::DuplicateNode {
                path: format!("topology.nodes[{pos}].name"),
                name: name.clone(),
            });
        }
    }
    let mut links = vec![];
    let mut host_links = vec![0u32; hosts.len()];
    for (i, l) in t.links.iter().enumerate() {
        let a = *id_of
            .get(l.a.as_str())
            .ok_or_else(|| TopologyError::UnknownNode { path: format!("topology.links[{i}].a"), name: l.a.clone() })?;
        let bb = *id_of
            .get(l.b.as_str())
            .ok_or_else(|| TopologyError::UnknownNode { path: format!("topology.links[{i}].b"), name: l.b.clone() })?;
        if a == bb {
            return Err(TopologyError::SelfLoop { path: format!("topology.links[{i}]") });
        }
        rate_ok(l.rate, &format!("topology.links[{i}].rate"))?;
        for x in [a, bb] {
            if (x as usize) < hosts.len() {
                host_links[x as usize] += 1;
                if host_links[x as usize] > 1 {
                    return Err(TopologyError::MultiHomedHost { name: b.names[x as usize].clone() });
                }
            }
        }
        links.push(LinkDef { a, b: bb, rate: l.rate, delay: l.delay });
    }
    b.links = links;
    // Racks: hosts grouped by the switch they attach to, in order of first appearance.
    let mut rack_of: HashMap<NodeId, usize> = HashMap::new();
    for h in 0..hosts.len() as u32 {
        if let Some(l) = b.links.iter().find(|l| l.a == h || l.b == h) {
            let sw = if l.a == h { l.b } else { l.a };
            let r = *rack_of.entry(sw).or_insert_with(|| {
                b.racks.push(vec![]);
                b.racks.len() - 1
            });
            b.racks[r].push(h);
        }
    }
    let spec = with_kind("explicit", &t);
    Ok(b.finish(spec))
}

fn check_connected(t: &Topology) -> Result<(), TopologyError> {
    let n = t.tiers.len();
    let mut adj = vec![vec![]; n];
    for l in &t.links {
        adj[l.a as usize].push(l.b);
        adj[l.b as usize].push(l.a);
    }
    // BFS from host 0 through switches only (hosts do not forward).
    let mut seen = vec![false; n];
    let mut q = VecDeque::from([0u32]);
    seen[0] = true;
    while let Some(u) = q.pop_front() {
        if u != 0 && (u as usize) < t.num_hosts as usize {
            continue;
        }
        for &v in &adj[u as usize] {
            if !seen[v as usize] {
                seen[v as usize] = true;
                q.push_back(v);
            }
        }
    }
    if let Some(h) = (0..t.num_hosts as usize).find(|&h| !seen[h]) {
        return Err(TopologyError::Disconnected { from: t.names[0].clone(), to: t.names[h].clone() });
    }
    Ok(())
}

impl Topology {
    pub fn num_nodes(&self) -> usize {
        self.tiers.len()
    }
    pub fn is_host(&self, n: NodeId) -> bool {
        n < self.num_hosts
    }
    /// Rate of each host's (single) link.
    pub fn host_rates(&self) -> Vec<Rate> {
        let mut r = vec![Rate(0); self.num_hosts as usize];
        for l in &self.links {
            for x in [l.a, l.b] {
                if self.is_host(x) {
                    r[x as usize] = l.rate;
                }
            }
        }
        r
    }

    /// The most switches any shortest host-to-host path crosses (the switch egress ports a
    /// packet leaves through, e.g. 3 in a leaf-spine, 5 in a fat tree); 0 without two
    /// connected hosts. Hosts with the same neighbours are equivalent, so one breadth-first
    /// search per distinct neighbour set suffices (one per rack in the built-in kinds).
    pub fn max_switch_hops(&self) -> u32 {
        let n = self.num_nodes();
        let mut adj: Vec<Vec<NodeId>> = vec![vec![]; n];
        for l in &self.links {
            adj[l.a as usize].push(l.b);
            adj[l.b as usize].push(l.a);
        }
        let mut seen_sets: std::collections::HashSet<Vec<NodeId>> = std::collections::HashSet::new();
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        let mut best = 0;
        for h in 0..self.num_hosts {
            let mut key = adj[h as usize].clone();
            key.sort_unstable();
            if !seen_sets.insert(key) {
                continue;
            }
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[h as usize] = 0;
            queue.clear();
            queue.push_back(h);
            while let Some(x) = queue.pop_front() {
                let d = dist[x as usize];
                if x != h && self.is_host(x) {
                    // A host ends a path: it does not forward.
                    best = best.max(d.saturating_sub(1));
                    continue;
                }
                for &y in &adj[x as usize] {
                    if dist[y as usize] == u32::MAX {
                        dist[y as usize] = d + 1;
                        queue.push_back(y);
                    }
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_of_parametric_topologies() {
        let t = build(&json!({"kind": "leaf_spine"})).unwrap();
        assert_eq!(t.num_hosts, 144);
        assert_eq!(t.num_nodes(), 144 + 9 + 4);
        assert_eq!(t.links.len(), 144 + 9 * 4);
        let f = build(&json!({"kind": "fat_tree", "k": 8})).unwrap();
        assert_eq!(f.num_hosts, 128);
        assert_eq!(f.num_nodes(), 128 + 64 + 16);
        assert_eq!(f.links.len(), 128 * 3);
        let p = build(&json!({"kind": "three_tier", "tors": 4, "hosts_per_tor": 40, "aggs": 2, "cores": 1,
                              "host_rate": "1Gbps", "tor_rate": "10Gbps", "core_rate": "10Gbps"}))
        .unwrap();
        assert_eq!(p.num_hosts, 160);
        assert_eq!(p.links.len(), 160 + 4 + 2);
        let d = build(&json!({"kind": "dumbbell", "left": 2, "right": 3})).unwrap();
        assert_eq!(d.racks, vec![vec![0, 1], vec![2, 3, 4]]);
    }

    /// Switch hops of the longest shortest path: one per switch egress port crossed.
    #[test]
    fn max_switch_hops_of_each_kind() {
        let hops = |v: serde_json::Value| build(&v).unwrap().max_switch_hops();
        assert_eq!(hops(json!({"kind": "single_switch", "hosts": 4})), 1);
        assert_eq!(hops(json!({"kind": "dumbbell", "left": 2, "right": 3})), 2);
        assert_eq!(hops(json!({"kind": "leaf_spine"})), 3);
        assert_eq!(hops(json!({"kind": "fat_tree", "k": 4})), 5);
        // A chain of four switches with a host at each end: 4.
        let chain = json!({"kind": "explicit",
            "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"},
                      {"name": "s1", "kind": "switch"}, {"name": "s2", "kind": "switch"},
                      {"name": "s3", "kind": "switch"}, {"name": "s4", "kind": "switch"}],
            "links": [{"a": "a", "b": "s1", "rate": "10Gbps"}, {"a": "s1", "b": "s2", "rate": "10Gbps"},
                      {"a": "s2", "b": "s3", "rate": "10Gbps"}, {"a": "s3", "b": "s4", "rate": "10Gbps"},
                      {"a": "s4", "b": "b", "rate": "10Gbps"}]});
        assert_eq!(hops(chain), 4);
    }

    #[test]
    fn explicit_topology() {
        let t = build(&json!({"kind": "explicit",
            "nodes": [{"name": "s", "kind": "switch"}, {"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
            "links": [{"a": "a", "b": "s", "rate": "10Gbps"}, {"a": "s", "b": "b", "rate": "10Gbps", "delay": "2us"}]}))
        .unwrap();
        assert_eq!(t.num_hosts, 2);
        assert_eq!(t.names, vec!["a", "b", "s"]);
        assert_eq!(t.links[1], LinkDef { a: 2, b: 1, rate: Rate::gbps(10), delay: Time::us(2) });
    }

    #[test]
    fn bad_topologies_name_the_field() {
        let cases = [
            (json!({"kind": "leaf_spine", "leaves": 0}), "topology.leaves"),
            (json!({"kind": "leaf_spine", "host_rate": "0Gbps"}), "topology.host_rate"),
            (json!({"kind": "leaf_spine", "host_rate": -5}), "topology.host_rate"),
            (json!({"kind": "leaf_spine", "colour": 1}), "topology.colour"),
            (json!({"kind": "fat_tree", "k": 5}), "topology.k"),
            // A bare number has no unit (bits? gigabits?): refused naming the field.
            (json!({"kind": "leaf_spine", "host_rate": 40}), "topology.host_rate"),
            // Sizes checked before anything is allocated.
            (json!({"kind": "leaf_spine", "spines": 4294967295u32}), "topology.spines"),
            (json!({"kind": "leaf_spine", "leaves": 1000000, "hosts_per_leaf": 1, "spines": 1000}), "topology.spines"),
            (
                json!({"kind": "three_tier", "tors": 2, "hosts_per_tor": 2, "aggs": 100000, "cores": 100000}),
                "topology.aggs",
            ),
            (json!({"kind": "torus"}), "topology.kind"),
            (json!({"kind": "single_switch"}), "topology.hosts"),
            (
                json!({"kind": "explicit", "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
                    "links": [{"a": "a", "b": "c", "rate": "1bps"}]}),
                "topology.links[0].b",
            ),
            (
                json!({"kind": "explicit", "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"},
                    {"name": "s", "kind": "switch"}], "links": [{"a": "a", "b": "s", "rate": "1bps"}]}),
                "topology.links",
            ),
        ];
        for (raw, field) in cases {
            let e = build(&raw).unwrap_err();
            assert_eq!(e.field(), field, "{raw}: {e}");
        }
    }
}
