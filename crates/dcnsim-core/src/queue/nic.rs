//! A host NIC's queueing discipline: per-flow fair queueing, optionally inside strict
//! priority classes (`host.nic_qdisc = "prio_fq"` / `"fq"`; see `crate::host`).
//!
//! Each flow with packets waiting has its own FIFO; the FIFOs of one class are served by
//! deficit round robin (Shreedhar and Varghese, SIGCOMM 1995): the flow at the head of the
//! class's round sends packets while its deficit covers them; when it cannot, it gets one
//! quantum more and moves to the back. A flow that empties leaves the round and forgets its
//! deficit, so a flow that sends one small packet at a time (ACKs, a short request) is
//! served within one round of the backlogged flows, not behind their backlog. With
//! `prio_fq` the classes are served in strict priority (class 0 first) and a flow's packets
//! of different classes wait in different FIFOs; with `fq` every packet of a flow waits in
//! one FIFO whatever its class (Linux's fq and fq_codel ignore DSCP).
//!
//! A NIC never drops and never marks (the host's own buffer is the socket's; what limits
//! it is the transport, see the per-flow NIC limit in `crate::host`). The packets of one
//! flow leave in the order they were queued (per class with `prio_fq`), so the ordering a
//! transport relies on within a class is kept.
//!
//! The flow table maps a flow (and class) to a slot; slots and their FIFOs are recycled,
//! so after warm-up enqueue and dequeue allocate nothing.

use super::{PortEffects, QueueDisc};
use crate::packet::{FlowId, PacketArena, PktIdx};
use crate::units::{Bytes, Time};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hasher for the flow table's integer keys (lookups only: no result
/// depends on an iteration order).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = (k ^ (k >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

struct FlowQueue {
    key: u64,
    pkts: VecDeque<(PktIdx, u32)>,
    deficit: u64,
}

/// Per-flow deficit round robin, with or without strict priority between classes.
pub struct FairNic {
    classes: u8,
    /// Strict priority between classes (`prio_fq`); otherwise one round for every class.
    by_class: bool,
    quantum: u64,
    slots: Vec<FlowQueue>,
    free: Vec<u32>,
    index: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
    /// The round of each class: slots with packets waiting, head served first.
    rounds: [VecDeque<u32>; 8],
    /// Bit c set when class c's round is not empty.
    nonempty: u32,
    total: u64,
    class_bytes: [u64; 8],
}

impl FairNic {
    /// `classes` priority classes; `by_class`: strict priority between them (`prio_fq`);
    /// `quantum`: bytes a flow may send per turn (at least one packet).
    pub fn new(classes: u8, by_class: bool, quantum: Bytes) -> Self {
        FairNic {
            classes: classes.clamp(1, 8),
            by_class,
            quantum: quantum.0.max(1),
            slots: vec![],
            free: vec![],
            index: HashMap::default(),
            rounds: Default::default(),
            nonempty: 0,
            total: 0,
            class_bytes: [0; 8],
        }
    }

    fn class_of(&self, prio: u8) -> usize {
        prio.min(self.classes - 1) as usize
    }

    /// The round a packet of class `c` joins.
    fn round_of(&self, c: usize) -> usize {
        if self.by_class {
            c
        } else {
            0
        }
    }

    fn key(&self, flow: FlowId, round: usize) -> u64 {
        ((flow as u64) << 3) | round as u64
    }

    /// Number of flows with packets waiting (all classes).
    pub fn active_flows(&self) -> usize {
        self.index.len()
    }
}

impl QueueDisc for FairNic {
    fn enqueue(&mut self, _now: Time, idx: PktIdx, pkts: &mut PacketArena, _fx: &mut PortEffects) {
        let p = pkts.get(idx);
        let (size, c) = (p.size as u64, self.class_of(p.prio));
        let r = self.round_of(c);
        let key = self.key(p.flow, r);
        let slot = match self.index.get(&key) {
            Some(&s) => s,
            None => {
                let s = match self.free.pop() {
                    Some(s) => {
                        let q = &mut self.slots[s as usize];
                        q.key = key;
                        q.deficit = 0;
                        s
                    }
                    None => {
                        self.slots.push(FlowQueue { key, pkts: VecDeque::new(), deficit: 0 });
                        (self.slots.len() - 1) as u32
                    }
                };
                self.index.insert(key, s);
                self.rounds[r].push_back(s);
                self.nonempty |= 1 << r;
                s
            }
        };
        self.slots[slot as usize].pkts.push_back((idx, size as u32));
        self.total += size;
        self.class_bytes[c] += size;
    }

    fn dequeue(&mut self, _now: Time, pkts: &mut PacketArena) -> Option<(PktIdx, u32)> {
        if self.nonempty == 0 {
            return None;
        }
        let r = self.nonempty.trailing_zeros() as usize;
        loop {
            let s = *self.rounds[r].front().expect("a non-empty round has a head");
            let q = &mut self.slots[s as usize];
            let &(idx, size) = q.pkts.front().expect("a flow in the round has a packet");
            if q.deficit < size as u64 {
                q.deficit += self.quantum;
                self.rounds[r].rotate_left(1);
                continue;
            }
            q.deficit -= size as u64;
            q.pkts.pop_front();
            if q.pkts.is_empty() {
                let key = q.key;
                self.index.remove(&key);
                self.rounds[r].pop_front();
                self.free.push(s);
                if self.rounds[r].is_empty() {
                    self.nonempty &= !(1 << r);
                }
            }
            self.total -= size as u64;
            let c = self.class_of(pkts.get(idx).prio);
            self.class_bytes[c] -= size as u64;
            return Some((idx, size));
        }
    }

    fn bytes(&self) -> Bytes {
        Bytes(self.total)
    }
    fn queue_bytes(&self, prio: u8) -> Bytes {
        Bytes(self.class_bytes[self.class_of(prio)])
    }
    fn classes(&self) -> u8 {
        self.classes
    }
    fn is_empty(&self) -> bool {
        self.total == 0
    }
    /// An empty NIC serves any arriving packet at once, unchanged, and keeps no state for it.
    fn idle_passthrough(&self) -> u32 {
        u32::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Packet, PacketFlags};

    fn pkt(a: &mut PacketArena, flow: FlowId, size: u32, prio: u8) -> PktIdx {
        a.alloc(Packet { flow, size, prio, flags: PacketFlags(PacketFlags::DATA), ..Packet::default() })
    }

    fn drain(q: &mut FairNic, a: &mut PacketArena) -> Vec<(FlowId, u32)> {
        let mut out = vec![];
        while let Some((i, s)) = q.dequeue(Time::ZERO, a) {
            out.push((a.get(i).flow, s));
            a.free(i);
        }
        out
    }

    #[test]
    fn backlogged_flow_and_late_small_flow_alternate() {
        // Flow 1 queues 10 full packets, then flow 2 one small packet: flow 2's packet
        // leaves second (within one round), not eleventh as in a FIFO.
        let (mut a, mut fx) = (PacketArena::new(), PortEffects::default());
        let mut q = FairNic::new(8, true, Bytes(1500));
        for _ in 0..10 {
            let i = pkt(&mut a, 1, 1500, 0);
            q.enqueue(Time::ZERO, i, &mut a, &mut fx);
        }
        let i = pkt(&mut a, 2, 64, 0);
        q.enqueue(Time::ZERO, i, &mut a, &mut fx);
        assert_eq!(q.bytes(), Bytes(15_064));
        let order = drain(&mut q, &mut a);
        assert_eq!(order[0], (1, 1500));
        assert_eq!(order[1], (2, 64));
        assert!(order[2..].iter().all(|&(f, _)| f == 1));
        assert!(q.is_empty() && q.active_flows() == 0);
    }

    #[test]
    fn two_backlogged_flows_share_bytes_equally_whatever_their_packet_sizes() {
        // Flow 1 sends 1500 B packets, flow 2 500 B packets, both backlogged: over the first
        // 30 KB served each gets half of the bytes (within one quantum).
        let (mut a, mut fx) = (PacketArena::new(), PortEffects::default());
        let mut q = FairNic::new(1, true, Bytes(1500));
        for _ in 0..40 {
            let i = pkt(&mut a, 1, 1500, 0);
            q.enqueue(Time::ZERO, i, &mut a, &mut fx);
        }
        for _ in 0..120 {
            let i = pkt(&mut a, 2, 500, 0);
            q.enqueue(Time::ZERO, i, &mut a, &mut fx);
        }
        let (mut b1, mut b2) = (0u64, 0u64);
        while b1 + b2 < 30_000 {
            let (i, s) = q.dequeue(Time::ZERO, &mut a).unwrap();
            if a.get(i).flow == 1 {
                b1 += s as u64
            } else {
                b2 += s as u64
            }
            a.free(i);
        }
        assert!(b1.abs_diff(b2) <= 1500, "{b1} vs {b2}");
    }

    #[test]
    fn prio_fq_serves_classes_in_strict_order_fq_ignores_them() {
        let mut a = PacketArena::new();
        let mut fx = PortEffects::default();
        for (by_class, expect_first) in [(true, 2), (false, 1)] {
            let mut q = FairNic::new(8, by_class, Bytes(1500));
            for _ in 0..3 {
                let i = pkt(&mut a, 1, 1500, 5);
                q.enqueue(Time::ZERO, i, &mut a, &mut fx);
            }
            let i = pkt(&mut a, 2, 1500, 0);
            q.enqueue(Time::ZERO, i, &mut a, &mut fx);
            assert_eq!(q.queue_bytes(5), Bytes(4500));
            assert_eq!(q.queue_bytes(0), Bytes(1500));
            let order = drain(&mut q, &mut a);
            assert_eq!(order[0].0, expect_first, "by_class {by_class}");
            assert_eq!(q.queue_bytes(5), Bytes(0));
        }
    }

    #[test]
    fn one_flow_keeps_its_order_across_classes_under_fq() {
        // fq: a flow's packets of two classes wait in one FIFO and leave in arrival order.
        let (mut a, mut fx) = (PacketArena::new(), PortEffects::default());
        let mut q = FairNic::new(8, false, Bytes(1500));
        let seq: Vec<PktIdx> = [4u8, 0, 4, 0]
            .iter()
            .map(|&p| {
                let i = pkt(&mut a, 7, 1000, p);
                q.enqueue(Time::ZERO, i, &mut a, &mut fx);
                i
            })
            .collect();
        let got: Vec<PktIdx> = std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut a).map(|x| x.0)).collect();
        assert_eq!(got, seq);
    }

    #[test]
    fn slots_are_recycled() {
        let (mut a, mut fx) = (PacketArena::new(), PortEffects::default());
        let mut q = FairNic::new(8, true, Bytes(1500));
        for round in 0..100u32 {
            for f in 0..4 {
                let i = pkt(&mut a, round * 4 + f, 100, 0);
                q.enqueue(Time::ZERO, i, &mut a, &mut fx);
            }
            drain(&mut q, &mut a);
        }
        assert_eq!(q.slots.len(), 4, "four flows at a time need four slots");
    }
}
