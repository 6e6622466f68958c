//! pFabric priority scheduling and dropping (Alizadeh et al., "pFabric: Minimal
//! Near-Optimal Datacenter Transport", SIGCOMM 2013, §4.1 "switch design").
//!
//! What it models: a switch port with a very small buffer (pFabric uses about two
//! bandwidth-delay products, 36 KB at 10 Gbps) in which every packet carries a priority
//! number, its `rank` (the flow's remaining size; smaller = more urgent).
//! - Dequeue: find the packet with the smallest rank; with starvation prevention on
//!   (pFabric's rule), send the *earliest-arrived* packet of that packet's flow instead,
//!   so a flow's packets leave in order even when their ranks decrease along the flow.
//!   With it off, the smallest-rank packet itself leaves (ties: earliest arrival).
//! - Enqueue into a full buffer: the packet with the largest rank is dropped, possibly the
//!   arriving one; cause `priority_drop`. Evictions repeat while the arriving packet still
//!   does not fit and is not itself the largest rank.
//!
//! Choices the paper leaves open, and ours:
//! - Ties on the largest rank: the arriving packet is dropped when its rank is greater than
//!   *or equal to* every buffered rank (do not evict an equally urgent packet that already
//!   waited); among buffered packets with the same largest rank, the latest arrival goes.
//! - Priority classes are ignored (pFabric uses a single queue); `classes()` is 1 and
//!   `queue_bytes` reports the whole port for any class.
//! - Control packets compete by their rank like data; a transport that wants its ACKs
//!   protected gives them rank 0 (pFabric's ACKs carry the flow's priority and are tiny).
//! - Flow identity for the starvation rule is the packet's `flow` field.
//! - No ECN marking (pFabric does not use it).
//!
//! Cost: the buffer is a small arrival-ordered vector that is scanned linearly on dequeue
//! and on a full-buffer enqueue: O(n) with n = packets in the buffer (about 24 with
//! pFabric's buffer), as in the paper's own hardware argument (a small, flat comparator
//! tree over a few dozen entries). Do not pair this policy with a large buffer.

use super::{PortEffects, QueueDisc};
use crate::packet::{FlowId, PacketArena, PktIdx};
use crate::units::{Bytes, Time};

/// Drop cause: the packet had the largest rank in a full pFabric buffer.
pub const DROP_PRIORITY: &str = "priority_drop";

/// pFabric switch parameters.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PFabricConfig {
    /// Per-port buffer (pFabric: ~2 x BDP, 36 KB in its 10 Gbps fabric).
    pub buffer: Bytes,
    /// Dequeue the earliest packet of the flow holding the smallest rank (pFabric §4.1).
    pub starvation_prevention: bool,
}

impl Default for PFabricConfig {
    fn default() -> Self {
        PFabricConfig { buffer: Bytes(36_000), starvation_prevention: true }
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    idx: PktIdx,
    size: u32,
    rank: u32,
    flow: FlowId,
}

/// pFabric port: smallest-rank-first service, largest-rank-first dropping.
#[derive(Debug)]
pub struct PFabric {
    /// Buffered packets in arrival order.
    buf: Vec<Entry>,
    total: u64,
    buffer: u64,
    starvation_prevention: bool,
}

impl PFabric {
    pub fn new(cfg: &PFabricConfig) -> Self {
        PFabric {
            buf: Vec::with_capacity(32),
            total: 0,
            buffer: cfg.buffer.0,
            starvation_prevention: cfg.starvation_prevention,
        }
    }
    /// Position of the buffered packet with the largest rank (ties: latest arrival).
    fn largest(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, e) in self.buf.iter().enumerate() {
            if best.is_none_or(|b| e.rank >= self.buf[b].rank) {
                best = Some(i);
            }
        }
        best
    }
    fn remove(&mut self, i: usize) -> Entry {
        let e = self.buf.remove(i);
        self.total -= e.size as u64;
        e
    }
}

impl QueueDisc for PFabric {
    fn enqueue(&mut self, _now: Time, idx: PktIdx, pkts: &mut PacketArena, fx: &mut PortEffects) {
        let p = pkts.get(idx);
        let e = Entry { idx, size: p.size, rank: p.rank, flow: p.flow };
        while self.total + e.size as u64 > self.buffer {
            match self.largest() {
                Some(j) if self.buf[j].rank > e.rank => {
                    let victim = self.remove(j);
                    fx.drops.push((victim.idx, DROP_PRIORITY));
                }
                _ => {
                    fx.drops.push((idx, DROP_PRIORITY));
                    return;
                }
            }
        }
        self.total += e.size as u64;
        self.buf.push(e);
    }
    fn dequeue(&mut self, _now: Time, _pkts: &mut PacketArena) -> Option<(PktIdx, u32)> {
        // Smallest rank; strict `<` keeps the earliest arrival among equal ranks.
        let mut best = 0;
        for (i, e) in self.buf.iter().enumerate().skip(1) {
            if e.rank < self.buf[best].rank {
                best = i;
            }
        }
        let first = self.buf.get(best)?;
        if self.starvation_prevention {
            let flow = first.flow;
            // The earliest packet of that flow is the first one in arrival order.
            best = self.buf.iter().position(|e| e.flow == flow).unwrap_or(best);
        }
        let e = self.remove(best);
        Some((e.idx, e.size))
    }
    fn bytes(&self) -> Bytes {
        Bytes(self.total)
    }
    fn queue_bytes(&self, _prio: u8) -> Bytes {
        Bytes(self.total)
    }
    fn classes(&self) -> u8 {
        1
    }
    fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Packet, PacketFlags};

    fn pkt(a: &mut PacketArena, flow: FlowId, rank: u32) -> PktIdx {
        let flags = PacketFlags(PacketFlags::DATA);
        a.alloc(Packet { size: 1500, payload: 1460, flow, rank, flags, ..Default::default() })
    }

    fn port(buffer: u64, starvation_prevention: bool) -> PFabric {
        PFabric::new(&PFabricConfig { buffer: Bytes(buffer), starvation_prevention })
    }

    fn drain(q: &mut PFabric, a: &mut PacketArena) -> Vec<PktIdx> {
        std::iter::from_fn(|| q.dequeue(Time(0), a).map(|x| x.0)).collect()
    }

    #[test]
    fn smallest_rank_served_first() {
        let mut a = PacketArena::new();
        let mut q = port(36_000, false);
        let mut fx = PortEffects::default();
        let big = pkt(&mut a, 1, 900_000);
        let small = pkt(&mut a, 2, 3_000);
        let mid = pkt(&mut a, 3, 50_000);
        let small2 = pkt(&mut a, 4, 3_000);
        for i in [big, small, mid, small2] {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(drain(&mut q, &mut a), vec![small, small2, mid, big]);
    }

    #[test]
    fn starvation_prevention_sends_earliest_packet_of_the_best_flow() {
        // Flow 1's ranks shrink along the flow (remaining size): its later packet has the
        // smallest rank in the buffer, but its earliest packet must leave first.
        let mut a = PacketArena::new();
        let mut fx = PortEffects::default();
        let mut with = port(36_000, true);
        let mut without = port(36_000, false);
        let mk = |a: &mut PacketArena| [pkt(a, 1, 10_000), pkt(a, 2, 5_000), pkt(a, 1, 4_000)];
        let p = mk(&mut a);
        for i in p {
            with.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(drain(&mut with, &mut a), vec![p[0], p[2], p[1]]);
        let r = mk(&mut a);
        for i in r {
            without.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(drain(&mut without, &mut a), vec![r[2], r[1], r[0]]);
    }

    #[test]
    fn overflow_evicts_the_largest_rank() {
        let mut a = PacketArena::new();
        let mut q = port(4500, true);
        let mut fx = PortEffects::default();
        let p: Vec<_> = [(1, 20_000), (2, 90_000), (3, 30_000)].iter().map(|&(f, r)| pkt(&mut a, f, r)).collect();
        for &i in &p {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert!(fx.drops.is_empty());
        let urgent = pkt(&mut a, 4, 1_000);
        q.enqueue(Time(0), urgent, &mut a, &mut fx);
        assert_eq!(fx.drops, vec![(p[1], DROP_PRIORITY)], "rank 90000 evicted");
        assert_eq!(q.bytes(), Bytes(4500));
        assert_eq!(drain(&mut q, &mut a), vec![urgent, p[0], p[2]]);
    }

    #[test]
    fn overflow_drops_the_arrival_when_it_is_the_largest() {
        let mut a = PacketArena::new();
        let mut q = port(3000, true);
        let mut fx = PortEffects::default();
        let p = [pkt(&mut a, 1, 20_000), pkt(&mut a, 2, 30_000)];
        for i in p {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        let lazy = pkt(&mut a, 3, 80_000);
        q.enqueue(Time(0), lazy, &mut a, &mut fx);
        let tie = pkt(&mut a, 4, 30_000);
        q.enqueue(Time(0), tie, &mut a, &mut fx);
        assert_eq!(fx.drops, vec![(lazy, DROP_PRIORITY), (tie, DROP_PRIORITY)], "equal rank: arrival dropped");
        assert_eq!(drain(&mut q, &mut a), vec![p[0], p[1]]);
    }

    #[test]
    fn small_arrival_evicts_until_it_fits() {
        // A 3000 B arrival needs two 1500 B evictions.
        let mut a = PacketArena::new();
        let mut q = port(4500, true);
        let mut fx = PortEffects::default();
        let p: Vec<_> = (0..3).map(|i| pkt(&mut a, i, 10_000 * (i + 1))).collect();
        for &i in &p {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        let jumbo = a.alloc(Packet { size: 3000, flow: 9, rank: 5, ..Default::default() });
        q.enqueue(Time(0), jumbo, &mut a, &mut fx);
        assert_eq!(fx.drops, vec![(p[2], DROP_PRIORITY), (p[1], DROP_PRIORITY)]);
        assert_eq!(q.bytes(), Bytes(4500));
    }
}
