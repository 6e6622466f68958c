//! The network model: egress ports over full-duplex links, and shortest-path routing.
//!
//! Every link of the [`Topology`] becomes two egress ports, one per direction. A port
//! serializes one packet at a time at its link rate; the packet's last bit reaches the
//! peer node one propagation delay after its serialization ends (store-and-forward:
//! a node acts on a packet only once all of it has arrived). Waiting packets sit in the
//! port's [`QueueDisc`]. Host NICs are ports too, with a policy that never drops.
//!
//! Routing is shortest path in hops. Each node keeps, per destination host, the set of
//! egress ports on a shortest path; a flow is hashed onto one of them at each hop (ECMP,
//! per-flow), or each packet is sent on a uniformly random one (spraying). Hosts never
//! forward transit traffic.

use crate::packet::{FlowId, NodeId};
use crate::queue::{self, PortRole, QueueConfig, QueueDisc};
use crate::topology::Topology;
use crate::units::{Bytes, Rate, Time};
use std::collections::VecDeque;

/// One direction of a link.
pub struct Port {
    pub node: NodeId,
    pub peer: NodeId,
    pub rate: Rate,
    pub delay: Time,
    pub disc: Box<dyn QueueDisc>,
    /// End of the current serialization.
    pub busy_until: Time,
    /// A `TxDone` event for this port is in the event queue.
    pub txdone_pending: bool,
    /// Bytes serialized so far.
    pub tx_bytes: u64,
    pub drops: u64,
    /// `tx_bytes` at the previous sample (link utilization series).
    pub sampled_tx: u64,
    /// Packets on the wire towards `peer`: (arrival time of the last bit, packet), in
    /// FIFO order; the head has a `LinkArrive` event in the event queue.
    pub pipe: VecDeque<(Time, crate::packet::PktIdx)>,
    /// Picoseconds per byte when the rate divides 8 x 10^12 exactly (fast path).
    ps_per_byte: Option<u64>,
}

impl Port {
    /// Serialization time of `bytes` on this port's link.
    #[inline]
    pub fn tx_time(&self, bytes: u64) -> Time {
        match self.ps_per_byte {
            Some(k) => Time(bytes * k),
            None => self.rate.tx_time(Bytes(bytes)),
        }
    }
}

/// How a node picks among equal-cost next hops.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// Per-flow ECMP hashing.
    Ecmp,
    /// Per-packet random spraying over equal-cost next hops.
    Spray,
}

/// Per-(node, destination host) equal-cost next-hop ports.
pub struct Routes {
    hosts: u32,
    /// (start, len) into `ports`, indexed by node * hosts + dst.
    idx: Vec<(u32, u32)>,
    ports: Vec<u32>,
    salt: u64,
}

#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Routes {
    /// Equal-cost egress ports at `node` towards host `dst`.
    #[inline]
    pub fn next_hops(&self, node: NodeId, dst: NodeId) -> &[u32] {
        let (s, l) = self.idx[node as usize * self.hosts as usize + dst as usize];
        &self.ports[s as usize..(s + l) as usize]
    }
    /// The ECMP choice of flow `flow` at `node` towards `dst`.
    #[inline]
    pub fn ecmp(&self, node: NodeId, dst: NodeId, flow: FlowId) -> u32 {
        let hops = self.next_hops(node, dst);
        if hops.len() == 1 {
            return hops[0];
        }
        let h = mix(self.salt ^ ((flow as u64) << 32) ^ node as u64);
        hops[((h as u128 * hops.len() as u128) >> 64) as usize]
    }
}

/// Ports plus routes.
pub struct Network {
    pub ports: Vec<Port>,
    /// Egress ports of each node.
    pub node_ports: Vec<Vec<u32>>,
    pub routes: Routes,
    pub num_hosts: u32,
}

impl Network {
    pub fn build(topo: &Topology, qcfg: &QueueConfig, salt: u64) -> Network {
        let n = topo.num_nodes();
        let mut ports = Vec::with_capacity(topo.links.len() * 2);
        let mut node_ports = vec![vec![]; n];
        // adjacency: (neighbor, egress port id)
        let mut adj: Vec<Vec<(NodeId, u32)>> = vec![vec![]; n];
        for l in &topo.links {
            for (a, b) in [(l.a, l.b), (l.b, l.a)] {
                let id = ports.len() as u32;
                let role = if topo.is_host(a) { PortRole::HostNic } else { PortRole::Switch };
                ports.push(Port {
                    node: a,
                    peer: b,
                    rate: l.rate,
                    delay: l.delay,
                    disc: queue::build(qcfg, role, l.rate),
                    busy_until: Time::ZERO,
                    txdone_pending: false,
                    tx_bytes: 0,
                    drops: 0,
                    sampled_tx: 0,
                    pipe: VecDeque::new(),
                    ps_per_byte: (8 * crate::units::PS_PER_S)
                        .is_multiple_of(l.rate.0)
                        .then(|| 8 * crate::units::PS_PER_S / l.rate.0),
                });
                node_ports[a as usize].push(id);
                adj[a as usize].push((b, id));
            }
        }
        let routes = compute_routes(topo, &adj, salt);
        Network { ports, node_ports, routes, num_hosts: topo.num_hosts }
    }

    /// The ports a flow's packets take from `src` to `dst` under ECMP.
    pub fn flow_path(&self, flow: FlowId, src: NodeId, dst: NodeId) -> Vec<u32> {
        let mut path = vec![];
        let mut at = src;
        while at != dst {
            let p = self.routes.ecmp(at, dst, flow);
            path.push(p);
            at = self.ports[p as usize].peer;
            if path.len() > self.ports.len() {
                break; // unreachable for validated topologies
            }
        }
        path
    }

    /// Base RTT of a path (CONVENTIONS.md): twice the one-way propagation delay plus the
    /// store-and-forward time of one MTU packet and one control packet over each hop.
    pub fn base_rtt(&self, path: &[u32], mtu: Bytes, ctrl: Bytes) -> Time {
        path.iter().fold(Time::ZERO, |acc, &p| {
            let pt = &self.ports[p as usize];
            acc + pt.delay * 2 + pt.rate.tx_time(mtu) + pt.rate.tx_time(ctrl)
        })
    }

    /// Slowest link rate along a path.
    pub fn bottleneck(&self, path: &[u32]) -> Rate {
        path.iter().map(|&p| self.ports[p as usize].rate).min().unwrap_or(Rate(0))
    }

    /// Ideal FCT of `size` payload bytes alone on `path`: the exact store-and-forward
    /// pipeline of back-to-back packets (MTU-sized, the last one carrying the rest).
    ///
    /// With n packets of wire size S followed by a last one of size s, the first
    /// packet finishes hop h at F1(h) = sum_{j<=h}(ser_j(S)) + sum_{j<h} p_j, and packet i
    /// at F1(h) + (i-1) max_{j<=h} ser_j(S) (deterministic tandem of servers); the last
    /// packet then follows the recursion F(h) = max(F(h-1) + p_{h-1}, F_prev(h)) + ser_h(s).
    /// This is CONVENTIONS.md's "propagation + store-and-forward of the first packet on
    /// every hop + the remaining bytes at the bottleneck rate" computed exactly: the two
    /// agree to the picosecond whenever link rates are equal along the path or the last
    /// packet is full-sized, and differ by less than one packet's serialization otherwise.
    pub fn ideal_fct(&self, path: &[u32], size: Bytes, mss: u64, header: u64) -> Time {
        let npk = size.0.div_ceil(mss).max(1);
        let last_wire = Bytes(size.0 - (npk - 1) * mss + header);
        let full = Bytes(mss + header);
        let mut f1 = 0u64; // finish of packet 1 at hop h
        let mut m = 0u64; // max ser(S) so far
        let mut prev_last_f = 0u64; // F(last, h-1) + p_{h-1}
        for (h, &p) in path.iter().enumerate() {
            let pt = &self.ports[p as usize];
            let ser_full = pt.rate.tx_time(full).0;
            let ser_last = pt.rate.tx_time(last_wire).0;
            if h > 0 {
                f1 += self.ports[path[h - 1] as usize].delay.0;
            }
            f1 += ser_full;
            m = m.max(ser_full);
            // packet n-1 (the last full one) finishes this hop at f1 + (npk-2)*m
            let prev_pkt_f = if npk >= 2 { f1 + (npk - 2) * m } else { 0 };
            let start = prev_last_f.max(prev_pkt_f);
            let f_last = start + ser_last;
            prev_last_f = f_last + pt.delay.0;
        }
        Time(prev_last_f)
    }
}

fn compute_routes(topo: &Topology, adj: &[Vec<(NodeId, u32)>], salt: u64) -> Routes {
    let n = topo.num_nodes();
    let hosts = topo.num_hosts;
    let mut idx = vec![(0u32, 0u32); n * hosts as usize];
    let mut ports = vec![];
    let mut dist = vec![u32::MAX; n];
    let mut q = VecDeque::new();
    for dst in 0..hosts {
        dist.iter_mut().for_each(|d| *d = u32::MAX);
        dist[dst as usize] = 0;
        q.clear();
        q.push_back(dst);
        while let Some(u) = q.pop_front() {
            // Hosts other than the destination do not forward.
            if u != dst && topo.is_host(u) {
                continue;
            }
            for &(v, _) in &adj[u as usize] {
                if dist[v as usize] == u32::MAX {
                    dist[v as usize] = dist[u as usize] + 1;
                    q.push_back(v);
                }
            }
        }
        for u in 0..n as u32 {
            if u == dst || dist[u as usize] == u32::MAX {
                continue;
            }
            let start = ports.len() as u32;
            for &(v, port) in &adj[u as usize] {
                let via_ok = v == dst || !topo.is_host(v);
                if via_ok && dist[v as usize] != u32::MAX && dist[v as usize] + 1 == dist[u as usize] {
                    ports.push(port);
                }
            }
            idx[u as usize * hosts as usize + dst as usize] = (start, ports.len() as u32 - start);
        }
    }
    Routes { hosts, idx, ports, salt }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::QueuePolicyKind;
    use crate::topology;
    use serde_json::json;

    fn qcfg() -> QueueConfig {
        QueueConfig {
            policy: QueuePolicyKind::PriorityEcn,
            buffer: Bytes(100_000),
            classes: 8,
            ecn_k: vec![None; 8],
            ecn_per_port: false,
            ecn_port_classes: vec![],
            selective: Default::default(),
            trim: Default::default(),
            pfabric: Default::default(),
            crossmark: Default::default(),
            credit: Default::default(),
        }
    }

    #[test]
    fn fat_tree_paths_and_ecmp_spread() {
        let t = topology::build(&json!({"kind": "fat_tree", "k": 8})).unwrap();
        let net = Network::build(&t, &qcfg(), 1);
        // Across pods: 6 hops; same edge switch: 2 hops; same pod: 4 hops.
        assert_eq!(net.flow_path(0, 0, 64).len(), 6);
        assert_eq!(net.flow_path(0, 0, 1).len(), 2);
        assert_eq!(net.flow_path(0, 0, 4).len(), 4);
        // At an edge switch towards another pod there are k/2 = 4 equal-cost uplinks.
        let edge = net.ports[net.flow_path(0, 0, 64)[0] as usize].peer;
        assert_eq!(net.routes.next_hops(edge, 64).len(), 4);
        // ECMP spreads many flows over all 4 uplinks roughly evenly.
        let mut counts = std::collections::HashMap::new();
        for f in 0..4000 {
            *counts.entry(net.routes.ecmp(edge, 64, f)).or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 4);
        assert!(counts.values().all(|&c| (800..1200).contains(&c)), "{counts:?}");
    }

    #[test]
    fn ideal_fct_matches_the_conventions_formula_on_equal_rates() {
        let t = topology::build(&json!({"kind": "fat_tree", "k": 4, "host_rate": "100Gbps"})).unwrap();
        let net = Network::build(&t, &qcfg(), 1);
        let path = net.flow_path(0, 0, 15);
        assert_eq!(path.len(), 6);
        // 10 full packets + one of 100 B payload: prop 6us + first pkt 6 x 120ns + rest at 100G.
        let size = Bytes(1460 * 10 + 100);
        let f = net.ideal_fct(&path, size, 1460, 40);
        let r = Rate::gbps(100);
        let expect = Time::us(6) + r.tx_time(Bytes(1500)) * 6 + r.tx_time(Bytes(1500 * 9 + 140));
        assert_eq!(f, expect);
    }
}
