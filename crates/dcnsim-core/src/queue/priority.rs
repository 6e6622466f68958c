//! Strict-priority queues with a shared per-port buffer, drop-tail and DCTCP marking.
//!
//! Models the switch egress port of docs/conventions.md: up to 8 FIFO queues served in strict
//! priority (class 0 first), all sharing one byte limit; a packet that does not fit is
//! dropped (drop-tail); an ECN-capable packet is marked CE on enqueue when the
//! instantaneous occupancy, *before* the packet is added, exceeds K (DCTCP, Alizadeh et
//! al. 2010 §3.1). Occupancy counts waiting packets only (the one being serialized has
//! left the queue). K applies to the class's own queue by default, or to the whole port
//! when `per_port` is set, or to the whole port for a chosen set of classes only
//! ([`PriorityEcn::with_port_classes`]).
//!
//! Optionally each class has its own admission limit on top of the shared buffer
//! ([`PriorityEcn::with_class_limits`], scenario `network.class_buffer`): a packet whose class
//! would then hold more than its limit is dropped (cause `class_limit`), even if the shared
//! buffer has room. This is the switch of PPT appendix D (Fig. 24), where RC3's low-priority
//! queues may use only a share of the buffer, and the usual static per-queue threshold of
//! shared-memory switches.
//!
//! Optionally (`with_pushout`, scenario `network.pushout_classes`; none by default, when the
//! port is docs/conventions.md's drop-tail buffer) a packet that does not fit in the shared buffer
//! *pushes out* queued packets of the listed classes that are below its own class: the tail
//! packet of the lowest such non-empty class is dropped (cause `pushout`), then the next,
//! until the arrival fits; if even all of them would not make room, the arrival is dropped
//! and nothing is pushed out. Packets of unlisted classes are never pushed out (PPT: list the
//! LCP classes 4-7, so HCP packets make room only by evicting opportunistic ones). Low-priority packets then use only buffer that higher classes
//! do not need (PPT §6.3.2: under incast "the high priority traffic almost saturate the
//! switch buffer ..., leaving little space for low priority opportunistic packets"). The
//! per-class limits apply first (an arrival over its class limit pushes nothing out); ECN
//! marking then sees the occupancy left after the push-out.

use super::{PortEffects, QueueDisc, DROP_OVERFLOW};

/// Drop cause: the packet's class reached its own admission limit (`network.class_buffer`).
pub const DROP_CLASS_LIMIT: &str = "class_limit";
/// Drop cause: a queued lower-priority packet made room for a higher-priority arrival
/// (`network.pushout`).
pub const DROP_PUSHOUT: &str = "pushout";
use crate::packet::{Ecn, Packet, PacketArena, PktIdx};
use crate::units::{Bytes, Time};
use std::collections::VecDeque;

/// Reusable multi-class FIFO storage with byte accounting; other policies build on it.
///
/// Entries carry the packet's wire size next to its index, so dequeuing (and the byte
/// accounting) never has to read the packet itself. The totals and class 0's queue and byte
/// count share the first 64-byte line (a port whose traffic is all in class 0, the common
/// case, touches one line of this state per enqueue or dequeue).
#[derive(Debug)]
#[repr(C)]
pub struct ClassQueues {
    total: u64,
    /// Bit i set when queue i is non-empty.
    nonempty: u32,
    classes: u8,
    slots: [ClassSlot; 8],
}

/// One class: its FIFO and its byte count, side by side.
#[derive(Debug, Default)]
#[repr(C)]
struct ClassSlot {
    bytes: u64,
    queue: VecDeque<(PktIdx, u32)>,
}

impl ClassQueues {
    pub fn new(classes: u8) -> Self {
        ClassQueues { total: 0, nonempty: 0, classes: classes.clamp(1, 8), slots: Default::default() }
    }
    #[inline]
    pub fn classes(&self) -> u8 {
        self.classes
    }
    /// Clamp a packet's priority to the available classes.
    #[inline]
    pub fn class_of(&self, prio: u8) -> usize {
        (prio.min(self.classes - 1)) as usize
    }
    #[inline]
    pub fn push_back(&mut self, class: usize, idx: PktIdx, size: u64) {
        let slot = &mut self.slots[class];
        slot.queue.push_back((idx, size as u32));
        slot.bytes += size;
        self.total += size;
        self.nonempty |= 1 << class;
    }
    /// Pop from the highest-priority non-empty class: (packet, wire size).
    #[inline]
    pub fn pop_highest(&mut self) -> Option<(PktIdx, u32)> {
        if self.nonempty == 0 {
            return None;
        }
        let c = self.nonempty.trailing_zeros() as usize;
        self.pop_class(c)
    }
    #[inline]
    pub fn pop_class(&mut self, c: usize) -> Option<(PktIdx, u32)> {
        let slot = &mut self.slots[c];
        let (idx, sz) = slot.queue.pop_front()?;
        slot.bytes -= sz as u64;
        self.total -= sz as u64;
        if slot.queue.is_empty() {
            self.nonempty &= !(1 << c);
        }
        Some((idx, sz))
    }
    /// The most recently queued packet of class `c`: (packet, wire size).
    pub fn back_class(&self, c: usize) -> Option<(PktIdx, u32)> {
        self.slots[c].queue.back().copied()
    }
    /// Remove the most recently queued packet of class `c`: (packet, wire size).
    pub fn pop_back_class(&mut self, c: usize) -> Option<(PktIdx, u32)> {
        let slot = &mut self.slots[c];
        let (idx, sz) = slot.queue.pop_back()?;
        slot.bytes -= sz as u64;
        self.total -= sz as u64;
        if slot.queue.is_empty() {
            self.nonempty &= !(1 << c);
        }
        Some((idx, sz))
    }
    #[inline]
    pub fn total(&self) -> u64 {
        self.total
    }
    #[inline]
    pub fn class_bytes(&self, c: usize) -> u64 {
        self.slots[c].bytes
    }
    pub fn class_len(&self, c: usize) -> usize {
        self.slots[c].queue.len()
    }
    /// Push-out (`network.pushout_classes`): make room in a `buffer`-byte port for `size`
    /// bytes of class `c` by dropping the newest packets of the lowest non-empty classes
    /// below `c` whose bit is set in `mask` (cause `pushout`); false, with nothing dropped,
    /// when those classes cannot free enough.
    pub fn push_out(&mut self, c: usize, size: u64, buffer: u64, mask: u8, fx: &mut PortEffects) -> bool {
        let need = (self.total + size).saturating_sub(buffer);
        let victims = (c + 1..self.classes as usize).filter(|&k| mask & (1 << k) != 0);
        let lower: u64 = victims.clone().map(|k| self.class_bytes(k)).sum();
        if lower < need {
            return false;
        }
        let mut freed = 0;
        for k in victims.rev() {
            while freed < need {
                let Some((victim, sz)) = self.pop_back_class(k) else { break };
                fx.drops.push((victim, DROP_PUSHOUT));
                freed += sz as u64;
            }
        }
        true
    }
}

/// The bit mask of `network.pushout_classes` (classes 8 and above ignored).
pub fn pushout_mask(classes: &[u8]) -> u8 {
    classes.iter().fold(0u8, |m, &c| if c < 8 { m | (1 << c) } else { m })
}

/// DCTCP marking on enqueue, shared by every policy that keeps ECN: per-class thresholds
/// K, each compared with the class's own queue or (for the classes in `port_classes`) with
/// the whole port's occupancy, before the arriving packet is added.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct EcnMarker {
    /// Bit c set: class c compares K with the port's total occupancy.
    port_classes: u8,
    k: [u64; 8],
}

impl EcnMarker {
    /// `ecn_k`: K per class (None: never mark that class); `per_port`: every class marks on
    /// the port's occupancy.
    pub fn new(ecn_k: &[Option<Bytes>], per_port: bool) -> Self {
        let mut k = [u64::MAX; 8];
        for (i, slot) in k.iter_mut().enumerate() {
            *slot = ecn_k.get(i).copied().flatten().map(|b| b.0).unwrap_or(u64::MAX);
        }
        EcnMarker { k, port_classes: if per_port { 0xFF } else { 0 } }
    }
    /// Additionally mark the classes in `classes` on the port's occupancy.
    pub fn with_port_classes(mut self, classes: &[u8]) -> Self {
        self.port_classes |= classes.iter().fold(0u8, |m, &c| if c < 8 { m | (1 << c) } else { m });
        self
    }
    /// Mark `p` (about to join class `c` of `q`) CE if it is ECN-capable and the occupancy
    /// it finds exceeds K.
    #[inline]
    pub fn mark(&self, q: &ClassQueues, c: usize, p: &mut Packet) {
        if p.ecn == Ecn::Ect {
            let occ = if self.port_classes & (1 << c) != 0 { q.total() } else { q.class_bytes(c) };
            if occ > self.k[c] {
                p.ecn = Ecn::Ce;
            }
        }
    }
}

/// The default switch port policy.
///
/// Laid out (`repr(C)`, line-aligned) so that an enqueue or dequeue of class 0 touches two
/// cache lines of it: the queues' totals with class 0 ([`ClassQueues`]), and the buffer
/// size with the ECN thresholds; the per-class limits are read only when some are set.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct PriorityEcn {
    q: ClassQueues,
    buffer: u64,
    /// Some class has an admission limit (`class_limit` is not all `u64::MAX`).
    limited: bool,
    ecn: EcnMarker,
    /// Per-class admission limit in bytes (u64::MAX: only the shared buffer applies).
    class_limit: [u64; 8],
    /// Bit c set: queued class-c packets may be pushed out by a higher-class arrival.
    pushout: u8,
}

impl PriorityEcn {
    pub fn new(buffer: Bytes, classes: u8, ecn_k: Vec<Option<Bytes>>, per_port: bool) -> Self {
        PriorityEcn {
            q: ClassQueues::new(classes),
            buffer: buffer.0,
            limited: false,
            ecn: EcnMarker::new(&ecn_k, per_port),
            class_limit: [u64::MAX; 8],
            pushout: 0,
        }
    }
}

impl PriorityEcn {
    /// Mark the classes in `classes` against the port's total occupancy and the others
    /// against their own queue (PPT §3.2 marks opportunistic packets on buffer occupancy
    /// while the high-priority loop keeps DCTCP's per-queue marking).
    pub fn with_port_classes(mut self, classes: &[u8]) -> Self {
        self.ecn = self.ecn.with_port_classes(classes);
        self
    }
    /// Give class i at most `limits[i]` bytes of the shared buffer (missing entries: no limit).
    pub fn with_class_limits(mut self, limits: &[Bytes]) -> Self {
        for (slot, b) in self.class_limit.iter_mut().zip(limits) {
            *slot = b.0;
        }
        self.limited = self.class_limit.iter().any(|&l| l != u64::MAX);
        self
    }
    /// Let an arrival that does not fit push out queued packets of the lower classes among
    /// `classes` (module docs).
    pub fn with_pushout(mut self, classes: &[u8]) -> Self {
        self.pushout = pushout_mask(classes);
        self
    }
}

impl QueueDisc for PriorityEcn {
    #[inline]
    fn enqueue(&mut self, _now: Time, idx: PktIdx, pkts: &mut PacketArena, fx: &mut PortEffects) {
        let p = pkts.get_mut(idx);
        let size = p.size as u64;
        let c = self.q.class_of(p.prio);
        if self.q.total() + size > self.buffer {
            let fits_class = !self.limited || self.q.class_bytes(c) + size <= self.class_limit[c];
            if !(self.pushout != 0 && fits_class && self.q.push_out(c, size, self.buffer, self.pushout, fx)) {
                fx.drops.push((idx, DROP_OVERFLOW));
                return;
            }
        }
        if self.limited && self.q.class_bytes(c) + size > self.class_limit[c] {
            fx.drops.push((idx, DROP_CLASS_LIMIT));
            return;
        }
        self.ecn.mark(&self.q, c, p);
        self.q.push_back(c, idx, size);
    }
    #[inline]
    fn dequeue(&mut self, _now: Time, _pkts: &mut PacketArena) -> Option<(PktIdx, u32)> {
        self.q.pop_highest()
    }
    #[inline]
    fn dequeue_more(&mut self, _now: Time, _pkts: &mut PacketArena) -> Option<(PktIdx, u32, bool)> {
        let (idx, size) = self.q.pop_highest()?;
        Some((idx, size, self.q.total() > 0))
    }
    fn bytes(&self) -> Bytes {
        Bytes(self.q.total())
    }
    fn queue_bytes(&self, prio: u8) -> Bytes {
        Bytes(self.q.class_bytes(self.q.class_of(prio)))
    }
    fn classes(&self) -> u8 {
        self.q.classes()
    }
    fn is_empty(&self) -> bool {
        self.q.total() == 0
    }
    /// An empty queue admits any packet that fits the buffer and marks none (the occupancy
    /// it finds, 0, never exceeds K), and the packet is the next one served.
    fn idle_passthrough(&self) -> u32 {
        self.buffer.min(u32::MAX as u64) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;

    fn pkt(arena: &mut PacketArena, size: u32, prio: u8, ecn: Ecn) -> PktIdx {
        arena.alloc(Packet { size, prio, ecn, ..Default::default() })
    }

    /// Class 0's queue and the totals share one line; the buffer and K share another.
    #[test]
    fn class_zero_state_is_two_cache_lines() {
        use std::mem::{offset_of, size_of};
        assert_eq!(std::mem::align_of::<PriorityEcn>(), 64);
        let q = offset_of!(PriorityEcn, q);
        assert!(q + offset_of!(ClassQueues, slots) + size_of::<ClassSlot>() <= 64);
        let line = offset_of!(PriorityEcn, buffer) / 64;
        let ecn = offset_of!(PriorityEcn, ecn);
        for end in [offset_of!(PriorityEcn, limited) + 1, ecn + offset_of!(EcnMarker, k) + 8, ecn + 1] {
            assert_eq!((end - 1) / 64, line);
        }
    }

    #[test]
    fn strict_priority_serves_higher_class_first() {
        let mut a = PacketArena::new();
        let mut q = PriorityEcn::new(Bytes(100_000), 8, vec![], false);
        let mut fx = PortEffects::default();
        let lo = pkt(&mut a, 1500, 5, Ecn::NotEct);
        let hi = pkt(&mut a, 1500, 1, Ecn::NotEct);
        let lo2 = pkt(&mut a, 1500, 5, Ecn::NotEct);
        for i in [lo, hi, lo2] {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(q.dequeue(Time(0), &mut a), Some((hi, 1500)));
        assert_eq!(q.dequeue(Time(0), &mut a), Some((lo, 1500)));
        assert_eq!(q.dequeue(Time(0), &mut a), Some((lo2, 1500)));
        assert_eq!(q.dequeue(Time(0), &mut a), None);
        assert!(fx.drops.is_empty());
    }

    #[test]
    fn full_shared_buffer_drops_tail() {
        let mut a = PacketArena::new();
        let mut q = PriorityEcn::new(Bytes(4500), 8, vec![], false);
        let mut fx = PortEffects::default();
        let ids: Vec<_> = (0..4).map(|i| pkt(&mut a, 1500, (i % 2) as u8, Ecn::NotEct)).collect();
        for &i in &ids {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(fx.drops, vec![(ids[3], DROP_OVERFLOW)]);
        assert_eq!(q.bytes(), Bytes(4500));
    }

    #[test]
    fn class_limit_drops_only_the_limited_class() {
        // Shared buffer 9000 B; class 1 may hold at most 3000 B (two packets).
        let mut a = PacketArena::new();
        let mut q = PriorityEcn::new(Bytes(9000), 8, vec![], false).with_class_limits(&[Bytes(u64::MAX), Bytes(3000)]);
        let mut fx = PortEffects::default();
        let lo: Vec<_> = (0..3).map(|_| pkt(&mut a, 1500, 1, Ecn::NotEct)).collect();
        for &i in &lo {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(fx.drops, vec![(lo[2], DROP_CLASS_LIMIT)], "third class-1 packet exceeds 3000 B");
        // Class 0 still gets the rest of the shared buffer (6000 B), then overflows.
        let hi: Vec<_> = (0..5).map(|_| pkt(&mut a, 1500, 0, Ecn::NotEct)).collect();
        for &i in &hi {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(fx.drops[1..], [(hi[4], DROP_OVERFLOW)]);
        assert_eq!(q.queue_bytes(1), Bytes(3000));
        assert_eq!(q.bytes(), Bytes(9000));
    }

    /// `network.pushout_classes = [4, 5, 6, 7]`: a full 4500 B port (two class-5 packets
    /// queued at t = 0 and 1 us, one class-0 at 2 us). At 3 us a class-0 packet arrives:
    /// drop-tail drops it; with push-out the newest class-5 packet (t = 1 us) is dropped
    /// instead and the arrival is served second. A class-5 or class-7 arrival finds nothing
    /// below it to push out.
    #[test]
    fn pushout_drops_lower_class_tail_for_higher_arrival() {
        for pushout in [false, true] {
            let mut a = PacketArena::new();
            let classes: &[u8] = if pushout { &[4, 5, 6, 7] } else { &[] };
            let mut q = PriorityEcn::new(Bytes(4500), 8, vec![], false).with_pushout(classes);
            let mut fx = PortEffects::default();
            let lo0 = pkt(&mut a, 1500, 5, Ecn::NotEct);
            let lo1 = pkt(&mut a, 1500, 5, Ecn::NotEct);
            let hi0 = pkt(&mut a, 1500, 0, Ecn::NotEct);
            for (t, i) in [(0, lo0), (1, lo1), (2, hi0)] {
                q.enqueue(Time::us(t), i, &mut a, &mut fx);
            }
            assert!(fx.drops.is_empty());
            let hi1 = pkt(&mut a, 1500, 0, Ecn::NotEct);
            q.enqueue(Time::us(3), hi1, &mut a, &mut fx);
            if pushout {
                assert_eq!(fx.drops, vec![(lo1, DROP_PUSHOUT)], "the newest lowest-class packet leaves");
                assert_eq!(q.queue_bytes(0), Bytes(3000));
                assert_eq!(q.queue_bytes(5), Bytes(1500));
            } else {
                assert_eq!(fx.drops, vec![(hi1, DROP_OVERFLOW)], "drop-tail drops the arrival");
            }
            fx.clear();
            // An arrival of the lowest occupied class, or below it, pushes nothing out.
            for prio in [5, 7] {
                let x = pkt(&mut a, 1500, prio, Ecn::NotEct);
                q.enqueue(Time::us(4), x, &mut a, &mut fx);
                assert_eq!(fx.drops, vec![(x, DROP_OVERFLOW)]);
                fx.clear();
            }
            let order: Vec<_> = std::iter::from_fn(|| q.dequeue(Time::us(5), &mut a).map(|x| x.0)).collect();
            if pushout {
                assert_eq!(order, vec![hi0, hi1, lo0]);
            } else {
                assert_eq!(order, vec![hi0, lo0, lo1]);
            }
        }
    }

    /// Push-out needs enough bytes in lower push-out classes: a 1500 B class-1 arrival at a
    /// full 4000 B port holding 3000 B of class 0 and 1000 B of class 6 cannot fit (500 B
    /// short after pushing out all of class 6), so it is dropped and class 6 keeps its
    /// packet; a 900 B arrival fits once the 1000 B class-6 packet is gone.
    #[test]
    fn pushout_only_when_lower_classes_free_enough() {
        let mut a = PacketArena::new();
        let mut q = PriorityEcn::new(Bytes(4000), 8, vec![], false).with_pushout(&[4, 5, 6, 7]);
        let mut fx = PortEffects::default();
        for (t, size, prio) in [(0, 1500, 0), (1, 1500, 0), (2, 1000, 6)] {
            let x = pkt(&mut a, size, prio, Ecn::NotEct);
            q.enqueue(Time::us(t), x, &mut a, &mut fx);
        }
        let big = pkt(&mut a, 1500, 1, Ecn::NotEct);
        q.enqueue(Time::us(3), big, &mut a, &mut fx);
        assert_eq!(fx.drops, vec![(big, DROP_OVERFLOW)]);
        assert_eq!(q.queue_bytes(6), Bytes(1000));
        fx.clear();
        let small = pkt(&mut a, 900, 1, Ecn::NotEct);
        q.enqueue(Time::us(4), small, &mut a, &mut fx);
        assert_eq!(fx.drops.len(), 1);
        assert_eq!(fx.drops[0].1, DROP_PUSHOUT);
        assert_eq!((q.queue_bytes(6), q.queue_bytes(1), q.bytes()), (Bytes(0), Bytes(900), Bytes(3900)));
    }

    /// Only listed classes are pushed out: with classes [4..7], a full 3000 B port holding a
    /// class-3 packet (t = 0) and a class-0 packet (t = 1 us) drops a class-0 arrival at
    /// 2 us (drop-tail) rather than evicting the class-3 packet.
    #[test]
    fn pushout_spares_unlisted_classes() {
        let mut a = PacketArena::new();
        let mut q = PriorityEcn::new(Bytes(3000), 8, vec![], false).with_pushout(&[4, 5, 6, 7]);
        let mut fx = PortEffects::default();
        for (t, prio) in [(0, 3), (1, 0)] {
            let x = pkt(&mut a, 1500, prio, Ecn::NotEct);
            q.enqueue(Time::us(t), x, &mut a, &mut fx);
        }
        let hi = pkt(&mut a, 1500, 0, Ecn::NotEct);
        q.enqueue(Time::us(2), hi, &mut a, &mut fx);
        assert_eq!(fx.drops, vec![(hi, DROP_OVERFLOW)]);
        assert_eq!(q.queue_bytes(3), Bytes(1500));
    }

    #[test]
    fn ecn_marks_exactly_above_k() {
        // K = 3000 B: the 1st, 2nd and 3rd packet see 0, 1500, 3000 B ahead (not above K);
        // the 4th sees 4500 > 3000 and is marked, and so is every later one.
        let mut a = PacketArena::new();
        let mut q = PriorityEcn::new(Bytes(1_000_000), 8, vec![Some(Bytes(3000)); 8], false);
        let mut fx = PortEffects::default();
        let ids: Vec<_> = (0..6).map(|_| pkt(&mut a, 1500, 0, Ecn::Ect)).collect();
        for &i in &ids {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        let marks: Vec<bool> = ids.iter().map(|&i| a.get(i).ecn == Ecn::Ce).collect();
        assert_eq!(marks, vec![false, false, false, true, true, true]);
        // Not-ECT packets are never marked.
        let n = pkt(&mut a, 1500, 0, Ecn::NotEct);
        q.enqueue(Time(0), n, &mut a, &mut fx);
        assert_eq!(a.get(n).ecn, Ecn::NotEct);
    }

    /// The runner's fast path relies on `idle_passthrough`: up to that size, a packet
    /// offered to the empty queue is admitted unmarked and is the next one served, with
    /// K = 0 (the smallest threshold) and on a port-marked class too; a larger one is not
    /// covered (it is dropped).
    #[test]
    fn idle_passthrough_admits_unchanged_and_serves_next() {
        let mut a = PacketArena::new();
        let mut q = PriorityEcn::new(Bytes(3000), 8, vec![Some(Bytes(0)); 8], false).with_port_classes(&[2]);
        assert_eq!(q.idle_passthrough(), 3000);
        let mut fx = PortEffects::default();
        for (size, prio) in [(3000, 0), (64, 2), (1500, 7)] {
            let x = pkt(&mut a, size, prio, Ecn::Ect);
            q.enqueue(Time(0), x, &mut a, &mut fx);
            assert!(fx.drops.is_empty());
            assert_eq!(a.get(x).ecn, Ecn::Ect, "an empty queue never marks");
            assert_eq!(q.dequeue(Time(0), &mut a), Some((x, size)));
            assert!(q.is_empty());
        }
        let big = pkt(&mut a, 3001, 0, Ecn::Ect);
        q.enqueue(Time(0), big, &mut a, &mut fx);
        assert_eq!(fx.drops, vec![(big, DROP_OVERFLOW)]);
        // Host NICs (unbounded buffer) pass every packet through.
        assert_eq!(PriorityEcn::new(Bytes(u64::MAX), 8, vec![], false).idle_passthrough(), u32::MAX);
    }

    #[test]
    fn chosen_classes_mark_on_port_occupancy() {
        // Class 0 holds 3000 B. K = 1000 B everywhere; class 5 marks on the port, class 3 on
        // its own (empty) queue.
        let mut a = PacketArena::new();
        let mut q = PriorityEcn::new(Bytes(1_000_000), 8, vec![Some(Bytes(1000)); 8], false).with_port_classes(&[5]);
        let mut fx = PortEffects::default();
        for _ in 0..2 {
            let x = pkt(&mut a, 1500, 0, Ecn::NotEct);
            q.enqueue(Time(0), x, &mut a, &mut fx);
        }
        let lo = pkt(&mut a, 1500, 5, Ecn::Ect);
        q.enqueue(Time(0), lo, &mut a, &mut fx);
        let mid = pkt(&mut a, 1500, 3, Ecn::Ect);
        q.enqueue(Time(0), mid, &mut a, &mut fx);
        assert_eq!(a.get(lo).ecn, Ecn::Ce, "class 5 sees the port's 3000 B > K");
        assert_eq!(a.get(mid).ecn, Ecn::Ect, "class 3 sees only its own empty queue");
    }

    #[test]
    fn per_queue_vs_per_port_marking() {
        let mut a = PacketArena::new();
        let k = vec![Some(Bytes(1000)); 8];
        let mut per_q = PriorityEcn::new(Bytes(1_000_000), 8, k.clone(), false);
        let mut per_p = PriorityEcn::new(Bytes(1_000_000), 8, k, true);
        let mut fx = PortEffects::default();
        for q in [&mut per_q as &mut dyn QueueDisc, &mut per_p] {
            let x = pkt(&mut a, 1500, 0, Ecn::Ect);
            q.enqueue(Time(0), x, &mut a, &mut fx);
        }
        let y1 = pkt(&mut a, 1500, 3, Ecn::Ect);
        per_q.enqueue(Time(0), y1, &mut a, &mut fx);
        let y2 = pkt(&mut a, 1500, 3, Ecn::Ect);
        per_p.enqueue(Time(0), y2, &mut a, &mut fx);
        assert_eq!(a.get(y1).ecn, Ecn::Ect, "class 3 is empty: no mark per queue");
        assert_eq!(a.get(y2).ecn, Ecn::Ce, "port holds 1500 > 1000: mark per port");
    }
}
