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
//!
//! Symmetric routing. The per-hop hash of a flow towards `dst` says nothing about the path
//! of the same flow's packets going the other way, so a packet flagged
//! [`PacketFlags::REVERSE_PATH`] (ExpressPass credits, which must cross the links of their
//! flow's data in reverse) is instead routed along the exact reverse of the ECMP path the
//! flow's data takes from the packet's destination to its source: at node `n` the engine
//! walks that forward path (at most a few hops) to the port entering `n` and sends the
//! packet out of the same link's other direction ([`Network::reverse_port`]). This holds
//! for any topology, unlike hashing the sorted address pair (which gives reverse paths only
//! on regular, symmetrically wired trees). Under spraying there is no per-flow path and the
//! flag is ignored.

use crate::packet::{FlowId, NodeId, Packet, PacketFlags, PktIdx};
use crate::queue::{self, PortCtx, PortRole, QueueConfig, QueueDisc};
use crate::topology::Topology;
use crate::units::{Bytes, Rate, Time};
use std::collections::VecDeque;

/// One direction of a link.
///
/// The fields a forwarded packet touches (the pipe and the transmission state) come first
/// and fit one 64-byte cache line; the port starts on a line boundary.
#[repr(C, align(64))]
pub struct Port {
    /// End of the current serialization.
    pub busy_until: Time,
    pub delay: Time,
    /// Bytes serialized so far.
    pub tx_bytes: u64,
    /// Packets on the wire towards `peer`: (arrival time of the last bit, packet), in
    /// FIFO order; the head has a `LinkArrive` event in the event queue.
    pub pipe: Pipe,
    pub peer: NodeId,
    /// Picoseconds per byte when the rate divides 8 x 10^12 exactly (fast path), else 0.
    ps_per_byte: u32,
    /// The policy's [`QueueDisc::idle_passthrough`]: packets up to this size offered to
    /// the idle port with an empty queue go straight to the link.
    pub passthrough: u32,
    /// A `TxDone` event for this port is in the event queue.
    pub txdone_pending: bool,
    /// A `[[link_delay]]` change has lowered this port's delay: a transmission's arrival is
    /// then kept at or after the previous packet's (the wire is FIFO). Never set otherwise,
    /// so ports of runs without such a change skip the comparison.
    pub fifo_clamp: bool,
    // ---- second cache line ----
    /// Time of the wake-up (`TxDone`) scheduled because the queue held packets none of which
    /// could leave yet ([`QueueDisc::next_ready`]); `Time::MAX` when none.
    pub wake_at: Time,
    pub node: NodeId,
    pub rate: Rate,
    pub disc: Box<dyn QueueDisc>,
    pub drops: u64,
    /// `tx_bytes` at the previous sample (link utilization series).
    pub sampled_tx: u64,
    /// Bytes offered to the port (wire sizes as they arrive, before any drop or trim): with
    /// the run's dropped, trimmed-off and still-queued bytes of the port, the other side of
    /// its byte balance (ports.csv `rx_bytes`).
    pub rx_bytes: u64,
}

impl Port {
    /// Serialization time of `bytes` on this port's link.
    #[inline]
    pub fn tx_time(&self, bytes: u64) -> Time {
        match self.ps_per_byte {
            0 => self.rate.tx_time(Bytes(bytes)),
            k => Time(bytes * k as u64),
        }
    }
}

/// The packets on a link, in FIFO order: (arrival time of the last bit, packet). A ring
/// buffer of power-of-two capacity, 24 bytes, so it shares its port's hot cache line.
///
/// Invariant: `buf` is empty or has a power-of-two length, `len <= buf.len()`, and
/// `head < buf.len()` whenever `len > 0`; the hot accessors skip the bounds checks it makes
/// redundant (checked in debug builds).
#[derive(Default)]
pub struct Pipe {
    buf: Box<[(Time, PktIdx)]>,
    head: u32,
    len: u32,
}

impl Pipe {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    #[inline]
    pub fn front(&self) -> Option<&(Time, PktIdx)> {
        if self.len == 0 {
            None
        } else {
            debug_assert!((self.head as usize) < self.buf.len());
            // SAFETY: `len > 0`, so `head < buf.len()` (the type's invariant).
            Some(unsafe { self.buf.get_unchecked(self.head as usize) })
        }
    }
    /// Arrival time of the last packet on the wire (the pipe must not be empty).
    #[inline]
    pub fn back_time(&self) -> Time {
        debug_assert!(self.len > 0);
        let i = (self.head + self.len - 1) as usize & (self.buf.len() - 1);
        // SAFETY: `len > 0`, so `buf` is not empty and the mask keeps `i` in range.
        unsafe { self.buf.get_unchecked(i).0 }
    }
    #[inline]
    pub fn pop_front(&mut self) -> Option<(Time, PktIdx)> {
        if self.len == 0 {
            return None;
        }
        debug_assert!((self.head as usize) < self.buf.len());
        // SAFETY: `len > 0`, so `head < buf.len()` (the type's invariant).
        let e = unsafe { *self.buf.get_unchecked(self.head as usize) };
        self.head = (self.head + 1) & (self.buf.len() as u32 - 1);
        self.len -= 1;
        Some(e)
    }
    /// Remove the head (the pipe must not be empty) and return it with the arrival time of
    /// the packet behind it, if any: one emptiness test for what `pop_front` and `front`
    /// would do.
    #[inline]
    pub fn pop_front_and_next(&mut self) -> ((Time, PktIdx), Option<Time>) {
        assert!(self.len > 0, "pop from an empty pipe");
        debug_assert!((self.head as usize) < self.buf.len());
        // SAFETY: `len > 0`, so `head < buf.len()` (the type's invariant).
        let e = unsafe { *self.buf.get_unchecked(self.head as usize) };
        self.head = (self.head + 1) & (self.buf.len() as u32 - 1);
        self.len -= 1;
        if self.len == 0 {
            return (e, None);
        }
        // SAFETY: the new `head` is masked to the power-of-two length of `buf`.
        let next = unsafe { self.buf.get_unchecked(self.head as usize) };
        (e, Some(next.0))
    }
    #[inline]
    pub fn push_back(&mut self, e: (Time, PktIdx)) {
        if self.len as usize == self.buf.len() {
            self.grow();
        }
        // `buf.len()` is a power of two above `len` here, so the mask keeps `i` in range.
        let i = (self.head + self.len) as usize & (self.buf.len() - 1);
        debug_assert!(i < self.buf.len());
        // SAFETY: `i <= buf.len() - 1` by the mask, and `buf` is not empty (`len < buf.len()`).
        unsafe { *self.buf.get_unchecked_mut(i) = e };
        self.len += 1;
    }
    #[cold]
    fn grow(&mut self) {
        let cap = (self.buf.len() * 2).max(8);
        let mut v = Vec::with_capacity(cap);
        v.extend((0..self.len as usize).map(|i| self.buf[(self.head as usize + i) & (self.buf.len() - 1)]));
        v.resize(cap, (Time::ZERO, 0));
        self.buf = v.into_boxed_slice();
        self.head = 0;
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

/// Links of a flow's path a [`FlowRoute`] holds per direction; longer paths are routed
/// hop by hop through the table.
pub const FLOW_ROUTE_HOPS: usize = 6;

/// The ECMP path of one flow in both directions, memoized so that a packet in flight finds
/// its next port with one read of a cache line its flow's other packets keep warm, instead of
/// the per-(node, destination) table, the port list and the hash. One 64-byte line.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct FlowRoute {
    /// The flow's endpoints: a packet from `ends[d]` to `ends[1 - d]` follows `ports[d]`.
    ends: [NodeId; 2],
    /// Each direction's egress ports, hop by hop, then [`NO_PORT`] (all of them when the
    /// path is not memoized: the table decides).
    ports: [[u32; FLOW_ROUTE_HOPS]; 2],
}

/// Filler of a [`FlowRoute`] beyond its path's end.
const NO_PORT: u32 = u32::MAX;

/// Ports plus routes.
pub struct Network {
    pub ports: Vec<Port>,
    /// Egress ports of each node.
    pub node_ports: Vec<Vec<u32>>,
    pub routes: Routes,
    pub num_hosts: u32,
    /// Per-flow memoized ECMP paths ([`Network::memoize_flow_routes`]), indexed by flow id.
    flow_routes: Vec<FlowRoute>,
}

impl Network {
    /// The network of `topo`, every port's queue built from `qcfg`; `salt` keys the ECMP
    /// hash, `queue_seed` the ports' random streams ([`queue::PortCtx`]).
    pub fn build(topo: &Topology, qcfg: &QueueConfig, salt: u64, queue_seed: u64) -> Network {
        let n = topo.num_nodes();
        let mut ports = Vec::with_capacity(topo.links.len() * 2);
        let mut node_ports = vec![vec![]; n];
        // adjacency: (neighbor, egress port id)
        let mut adj: Vec<Vec<(NodeId, u32)>> = vec![vec![]; n];
        for l in &topo.links {
            for (a, b) in [(l.a, l.b), (l.b, l.a)] {
                let id = ports.len() as u32;
                let role = if topo.is_host(a) { PortRole::HostNic } else { PortRole::Switch };
                let disc = queue::build(qcfg, &PortCtx { role, rate: l.rate, id, seed: queue_seed });
                let ps_per_byte = match (8 * crate::units::PS_PER_S).is_multiple_of(l.rate.0) {
                    true => u32::try_from(8 * crate::units::PS_PER_S / l.rate.0).unwrap_or(0),
                    false => 0,
                };
                ports.push(Port {
                    node: a,
                    peer: b,
                    rate: l.rate,
                    delay: l.delay,
                    passthrough: disc.idle_passthrough(),
                    disc,
                    busy_until: Time::ZERO,
                    txdone_pending: false,
                    fifo_clamp: false,
                    wake_at: Time::MAX,
                    tx_bytes: 0,
                    drops: 0,
                    sampled_tx: 0,
                    rx_bytes: 0,
                    pipe: Pipe::default(),
                    ps_per_byte,
                });
                node_ports[a as usize].push(id);
                adj[a as usize].push((b, id));
            }
        }
        let routes = compute_routes(topo, &adj, salt);
        Network { ports, node_ports, routes, num_hosts: topo.num_hosts, flow_routes: Vec::new() }
    }

    /// Memoize the ECMP paths of flows `0..ends.len()` (flow `i` between `ends[i].0` and
    /// `ends[i].1`, both directions) for [`Network::route_in_flight`]. Paths longer than
    /// [`FLOW_ROUTE_HOPS`] links are not memoized. Only speed depends on it.
    pub fn memoize_flow_routes(&mut self, ends: &[(NodeId, NodeId)]) {
        let mut v = Vec::with_capacity(ends.len());
        for (i, &(a, b)) in ends.iter().enumerate() {
            let mut r = FlowRoute { ends: [a, b], ports: [[NO_PORT; FLOW_ROUTE_HOPS]; 2] };
            if a != b {
                for (d, (x, y)) in [(a, b), (b, a)].into_iter().enumerate() {
                    let path = self.flow_path(i as FlowId, x, y);
                    if !path.is_empty() && path.len() <= FLOW_ROUTE_HOPS {
                        r.ports[d][..path.len()].copy_from_slice(&path);
                    }
                }
            }
            v.push(r);
        }
        self.flow_routes = v;
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

    /// The egress port of the same link in the other direction. Every link becomes two
    /// consecutive ports (`a -> b` at an even id, `b -> a` right after it).
    #[inline]
    pub fn reverse_port(port: u32) -> u32 {
        port ^ 1
    }

    /// Where node `node` sends a packet of `flow` that retraces, backwards, the ECMP path of
    /// the flow's data from `data_src` to `data_dst`: the reverse of the forward port that
    /// enters `node`. None if `node` is not on that path (then the caller routes normally).
    #[inline]
    pub fn reverse_hop(&self, node: NodeId, flow: FlowId, data_src: NodeId, data_dst: NodeId) -> Option<u32> {
        let mut at = data_src;
        for _ in 0..64 {
            if at == data_dst {
                return None;
            }
            let p = self.routes.ecmp(at, data_dst, flow);
            let next = self.ports[p as usize].peer;
            if next == node {
                return Some(Self::reverse_port(p));
            }
            at = next;
        }
        None
    }

    /// The egress port at `node` for packet `p` under per-flow ECMP: the flow's hash towards
    /// `p.dst`, or, for [`PacketFlags::REVERSE_PATH`] packets, the reverse of the path the
    /// flow's data takes from `p.dst` to `p.src`.
    #[inline]
    pub fn route(&self, node: NodeId, p: &Packet) -> u32 {
        if p.flags.has(PacketFlags::REVERSE_PATH) {
            if let Some(port) = self.reverse_hop(node, p.flow, p.dst, p.src) {
                return port;
            }
        }
        self.routes.ecmp(node, p.dst, p.flow)
    }

    /// [`Network::route`] for a packet the runner moves: one that entered the network at
    /// `p.src` with `p.hops == 0` and has since crossed exactly `p.hops` links, each chosen by
    /// this function (so `node` is the `p.hops`-th node of its flow's ECMP path). Such a
    /// packet of a flow whose path is memoized ([`Network::memoize_flow_routes`]) and that
    /// travels between the flow's endpoints takes the memoized port; any other packet is
    /// routed by [`Network::route`]. Both give the same port.
    #[inline(always)]
    pub fn route_in_flight(&self, node: NodeId, p: &Packet) -> u32 {
        if let Some(r) = self.flow_routes.get(p.flow as usize) {
            // Direction 1 if the packet comes from the flow's receiver, else 0 (checked below).
            let d = (p.src == r.ends[1]) as usize;
            if p.src == r.ends[d] && p.dst == r.ends[d ^ 1] && !p.flags.has(PacketFlags::REVERSE_PATH) {
                if let Some(&port) = r.ports[d].get(p.hops as usize) {
                    if port != NO_PORT {
                        debug_assert_eq!(port, self.route(node, p), "memoized route of flow {}", p.flow);
                        return port;
                    }
                }
            }
        }
        self.route_uncached(node, p)
    }

    #[inline(never)]
    fn route_uncached(&self, node: NodeId, p: &Packet) -> u32 {
        self.route(node, p)
    }

    /// Base RTT of a path (docs/metrics.md): twice the one-way propagation delay plus the
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
    /// This is the short form in docs/metrics.md (propagation, plus one packet's serialization
    /// on every hop, plus the remaining bytes at the slowest rate) computed exactly: the two
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
            class_buffer: vec![],
            pushout_classes: vec![],
            selective: Default::default(),
            trim: Default::default(),
            pfabric: Default::default(),
            crossmark: Default::default(),
            credit: Default::default(),
            nic: Default::default(),
            int: false,
            window_stamp: None,
            pdq: None,
        }
    }

    /// The fields a forwarded packet touches share the port's first cache line.
    #[test]
    fn port_hot_fields_fill_one_cache_line() {
        use std::mem::offset_of;
        assert_eq!(std::mem::align_of::<Port>(), 64);
        for end in [
            offset_of!(Port, busy_until) + 8,
            offset_of!(Port, delay) + 8,
            offset_of!(Port, tx_bytes) + 8,
            offset_of!(Port, pipe) + std::mem::size_of::<Pipe>(),
            offset_of!(Port, peer) + 4,
            offset_of!(Port, ps_per_byte) + 4,
            offset_of!(Port, passthrough) + 4,
            offset_of!(Port, txdone_pending) + 1,
            offset_of!(Port, fifo_clamp) + 1,
        ] {
            assert!(end <= 64, "{end}");
        }
    }

    #[test]
    fn fat_tree_paths_and_ecmp_spread() {
        let t = topology::build(&json!({"kind": "fat_tree", "k": 8})).unwrap();
        let net = Network::build(&t, &qcfg(), 1, 0);
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

    /// Next hops from `u` to host `d` by the definition: a BFS from `d` in which hosts other
    /// than `d` do not forward, then every neighbor one hop closer (a host only if it is `d`).
    fn reference_hops(topo: &Topology, net: &Network, u: NodeId, d: NodeId) -> Vec<u32> {
        let n = topo.num_nodes();
        let mut dist = vec![u32::MAX; n];
        dist[d as usize] = 0;
        let mut q = VecDeque::from([d]);
        while let Some(x) = q.pop_front() {
            if x != d && topo.is_host(x) {
                continue;
            }
            for &p in &net.node_ports[x as usize] {
                let v = net.ports[p as usize].peer;
                if dist[v as usize] == u32::MAX {
                    dist[v as usize] = dist[x as usize] + 1;
                    q.push_back(v);
                }
            }
        }
        if dist[u as usize] == u32::MAX {
            return vec![];
        }
        net.node_ports[u as usize]
            .iter()
            .copied()
            .filter(|&p| {
                let v = net.ports[p as usize].peer;
                (v == d || !topo.is_host(v)) && dist[v as usize] != u32::MAX && dist[v as usize] + 1 == dist[u as usize]
            })
            .collect()
    }

    /// The per-ToR routing table gives every node exactly the equal-cost next hops of the
    /// per-host definition, in the same order (so ECMP picks the same port).
    #[test]
    fn grouped_routes_equal_per_host_shortest_paths() {
        // Two parallel links s-t; hosts on three different switches.
        let explicit_links = [["a", "s"], ["s", "t"], ["s", "t"], ["s", "u"], ["u", "t"], ["b", "t"], ["c", "u"]]
            .map(|[a, b]| json!({"a": a, "b": b, "rate": "10Gbps"}));
        // (topology, whether some node has several equal-cost next hops)
        let topos = [
            (json!({"kind": "fat_tree", "k": 4}), true),
            (json!({"kind": "leaf_spine", "leaves": 3, "hosts_per_leaf": 4, "spines": 2}), true),
            (json!({"kind": "three_tier", "tors": 4, "hosts_per_tor": 3, "aggs": 2, "cores": 1}), false),
            (
                json!({"kind": "three_tier", "tors": 4, "hosts_per_tor": 2, "aggs": 2, "cores": 2, "tor_uplinks": "full"}),
                true,
            ),
            (json!({"kind": "dumbbell", "left": 3, "right": 2}), false),
            (json!({"kind": "single_switch", "hosts": 3}), false),
            (
                json!({"kind": "explicit",
                "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}, {"name": "c", "kind": "host"},
                          {"name": "s", "kind": "switch"}, {"name": "t", "kind": "switch"}, {"name": "u", "kind": "switch"}],
                "links": explicit_links}),
                true,
            ),
        ];
        for (spec, multipath) in topos {
            let t = topology::build(&spec).unwrap();
            let net = Network::build(&t, &qcfg(), 7, 0);
            let mut multi = 0;
            for d in 0..t.num_hosts {
                for u in 0..t.num_nodes() as u32 {
                    if u == d {
                        continue;
                    }
                    let want = reference_hops(&t, &net, u, d);
                    assert!(!want.is_empty(), "{spec}: {u} reaches {d}");
                    assert_eq!(net.routes.next_hops(u, d), want.as_slice(), "{spec}: node {u} to host {d}");
                    multi += (want.len() > 1) as u32;
                }
            }
            assert_eq!(multi > 0, multipath, "{spec}: some node has a choice");
        }
    }

    #[test]
    fn reverse_path_packets_retrace_the_data_path_backwards() {
        let t = topology::build(&json!({"kind": "fat_tree", "k": 4})).unwrap();
        let net = Network::build(&t, &qcfg(), 7, 0);
        for (i, p) in net.ports.iter().enumerate() {
            let r = &net.ports[Network::reverse_port(i as u32) as usize];
            assert_eq!((r.node, r.peer), (p.peer, p.node), "port {i} and its reverse share a link");
        }
        let mut differs = 0;
        for flow in 0..200u32 {
            let (src, dst) = (flow % 16, (flow * 7 + 5) % 16);
            if src == dst {
                continue;
            }
            let fwd = net.flow_path(flow, src, dst);
            // A packet of the flow going dst -> src with the flag, routed hop by hop.
            let pkt = Packet {
                src: dst,
                dst: src,
                flow,
                flags: PacketFlags(PacketFlags::REVERSE_PATH),
                ..Default::default()
            };
            let mut back = vec![];
            let mut at = dst;
            while at != src {
                let port = net.route(at, &pkt);
                back.push(port);
                at = net.ports[port as usize].peer;
                assert!(back.len() <= fwd.len(), "flow {flow}: the reverse path is not longer");
            }
            let want: Vec<u32> = fwd.iter().rev().map(|&p| Network::reverse_port(p)).collect();
            assert_eq!(back, want, "flow {flow}");
            // Plain per-flow ECMP in the other direction often picks another path.
            if net.flow_path(flow, dst, src) != want {
                differs += 1;
            }
        }
        assert!(differs > 20, "without the flag the reverse direction is hashed independently ({differs})");
    }

    /// Memoized per-flow routes give exactly the table's port at every hop, both ways, and
    /// packets that do not travel between their flow's endpoints (or are flagged) fall back.
    #[test]
    fn memoized_flow_routes_equal_table_routes() {
        let t = topology::build(&json!({"kind": "fat_tree", "k": 4})).unwrap();
        let mut net = Network::build(&t, &qcfg(), 7, 0);
        let ends: Vec<(NodeId, NodeId)> = (0..300u32).map(|f| (f % 16, (f * 7 + 5) % 16)).collect();
        net.memoize_flow_routes(&ends);
        for (flow, &(a, b)) in ends.iter().enumerate() {
            for (src, dst, flags) in [(a, b, 0), (b, a, 0), (a, b, PacketFlags::REVERSE_PATH), ((a + 1) % 16, b, 0)] {
                if src == dst {
                    continue;
                }
                let mut p = Packet { src, dst, flow: flow as FlowId, flags: PacketFlags(flags), ..Default::default() };
                let mut at = src;
                while at != dst {
                    let port = net.route_in_flight(at, &p);
                    assert_eq!(port, net.route(at, &p), "flow {flow} at {at}");
                    at = net.ports[port as usize].peer;
                    p.hops += 1;
                    assert!(p.hops <= 6);
                }
            }
        }
    }

    #[test]
    fn ideal_fct_matches_the_conventions_formula_on_equal_rates() {
        let t = topology::build(&json!({"kind": "fat_tree", "k": 4, "host_rate": "100Gbps"})).unwrap();
        let net = Network::build(&t, &qcfg(), 1, 0);
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
