//! Port hooks: per-port behaviour placed around any queue policy without being one.
//!
//! Several mechanisms read or write the packets an egress port handles while leaving
//! admission and scheduling to the port's own policy: HPCC's in-band telemetry stamps each
//! departing data packet ([`crate::queue::int`]), M21TCP's switches stamp a per-port maximum
//! window on arriving data ([`crate::queue::winstamp`]), PDQ's flow controller rewrites the
//! rate header of each departing packet ([`crate::queue::pdq`]), and the packet trace records
//! every event of a traced port ([`crate::trace`]). Each is a [`PortHook`]; [`Hooked`] is the
//! one wrapper that runs a hook around a policy and forwards everything else of
//! [`QueueDisc`] to it, so no hook repeats the pass-throughs.
//!
//! A hooked port never takes the runner's idle fast path (`idle_passthrough` stays 0): every
//! packet goes through `enqueue` and `dequeue`, where the hook sees it.

use crate::packet::{PacketArena, PktIdx};
use crate::queue::{PortEffects, QueueDisc};
use crate::units::{Bytes, Time};

/// What a hook does at an egress port. Both methods have pass-through defaults.
pub trait PortHook {
    /// A packet is offered to the port: the default hands it to the inner policy. A hook may
    /// change the packet first, or look at what the policy did with it afterwards
    /// (`fx.drops`, `fx.trimmed_queued` past their lengths before the call).
    #[inline]
    fn enqueue(
        &mut self,
        now: Time,
        idx: PktIdx,
        pkts: &mut PacketArena,
        fx: &mut PortEffects,
        inner: &mut dyn QueueDisc,
    ) {
        inner.enqueue(now, idx, pkts, fx)
    }
    /// Packet `idx` of wire size `size` left the inner policy for the link (through `dequeue`
    /// or `dequeue_more`); `inner` is the policy after its departure.
    #[inline]
    fn dequeued(&mut self, _now: Time, _idx: PktIdx, _size: u32, _pkts: &mut PacketArena, _inner: &dyn QueueDisc) {}
}

/// A queue policy with a [`PortHook`] around it.
pub struct Hooked<H: PortHook> {
    hook: H,
    inner: Box<dyn QueueDisc>,
}

impl<H: PortHook> Hooked<H> {
    pub fn new(hook: H, inner: Box<dyn QueueDisc>) -> Hooked<H> {
        Hooked { hook, inner }
    }
    /// The hook (for its own state).
    pub fn hook(&self) -> &H {
        &self.hook
    }
}

impl<H: PortHook> QueueDisc for Hooked<H> {
    #[inline]
    fn enqueue(&mut self, now: Time, idx: PktIdx, pkts: &mut PacketArena, fx: &mut PortEffects) {
        self.hook.enqueue(now, idx, pkts, fx, self.inner.as_mut())
    }
    #[inline]
    fn dequeue(&mut self, now: Time, pkts: &mut PacketArena) -> Option<(PktIdx, u32)> {
        let (idx, size) = self.inner.dequeue(now, pkts)?;
        self.hook.dequeued(now, idx, size, pkts, self.inner.as_ref());
        Some((idx, size))
    }
    #[inline]
    fn dequeue_more(&mut self, now: Time, pkts: &mut PacketArena) -> Option<(PktIdx, u32, bool)> {
        let (idx, size, more) = self.inner.dequeue_more(now, pkts)?;
        self.hook.dequeued(now, idx, size, pkts, self.inner.as_ref());
        Some((idx, size, more))
    }
    fn next_ready(&self, now: Time) -> Option<Time> {
        self.inner.next_ready(now)
    }
    fn bytes(&self) -> Bytes {
        self.inner.bytes()
    }
    fn queue_bytes(&self, prio: u8) -> Bytes {
        self.inner.queue_bytes(prio)
    }
    fn classes(&self) -> u8 {
        self.inner.classes()
    }
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
    // `idle_passthrough` stays 0: the hook must see every packet.
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Packet, PacketFlags};
    use crate::queue::priority::PriorityEcn;

    /// Counts what it sees and stamps `rank` on enqueue with the queue's bytes before it.
    #[derive(Default)]
    struct Counter {
        offered: u32,
        left: Vec<(PktIdx, u32, u64)>,
    }
    impl PortHook for Counter {
        fn enqueue(
            &mut self,
            now: Time,
            idx: PktIdx,
            pkts: &mut PacketArena,
            fx: &mut PortEffects,
            inner: &mut dyn QueueDisc,
        ) {
            self.offered += 1;
            pkts.get_mut(idx).rank = inner.bytes().0 as u32;
            inner.enqueue(now, idx, pkts, fx);
        }
        fn dequeued(&mut self, _now: Time, idx: PktIdx, size: u32, _pkts: &mut PacketArena, inner: &dyn QueueDisc) {
            self.left.push((idx, size, inner.bytes().0));
        }
    }

    fn data(size: u32) -> Packet {
        Packet { size, flags: PacketFlags(PacketFlags::DATA), ..Packet::default() }
    }

    #[test]
    fn hooked_port_forwards_to_its_policy_and_shows_the_hook_every_packet() {
        let inner = Box::new(PriorityEcn::new(Bytes(10_000), 2, vec![None, None], false));
        let mut q = Hooked::new(Counter::default(), inner);
        let mut pkts = PacketArena::new();
        let mut fx = PortEffects::default();
        let a = pkts.alloc(data(1000));
        let b = pkts.alloc(Packet { prio: 1, ..data(1500) });
        q.enqueue(Time::ZERO, a, &mut pkts, &mut fx);
        q.enqueue(Time::ZERO, b, &mut pkts, &mut fx);
        assert_eq!(
            (q.bytes(), q.queue_bytes(0), q.queue_bytes(1), q.classes()),
            (Bytes(2500), Bytes(1000), Bytes(1500), 2)
        );
        assert_eq!((pkts.get(a).rank, pkts.get(b).rank), (0, 1000), "the hook saw the queue before each packet");
        assert_eq!(q.idle_passthrough(), 0, "a hooked port never bypasses its hook");
        assert_eq!(q.dequeue(Time::ZERO, &mut pkts), Some((a, 1000)));
        assert_eq!(q.dequeue_more(Time::ZERO, &mut pkts), Some((b, 1500, false)));
        assert!(q.is_empty() && q.dequeue(Time::ZERO, &mut pkts).is_none());
        assert_eq!(q.hook().offered, 2);
        assert_eq!(q.hook().left, vec![(a, 1000, 1500), (b, 1500, 0)], "each departure seen once, after it left");
    }
}
