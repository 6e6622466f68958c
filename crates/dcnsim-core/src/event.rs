//! The discrete-event queue: events ordered by (time, sequence number).
//!
//! The sequence number is the order of insertion, so two events at the same picosecond
//! run in the order they were scheduled: ties are deterministic and independent of the
//! heap's internals. Time and sequence are packed into one `u128` key so a comparison is
//! a single integer compare. Timers are never removed from the queue: cancellation is
//! lazy (see [`crate::transport::TimerSlot`]).

use crate::packet::NodeId;
use crate::units::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens at an event.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The packet at the head of egress port `port`'s link (its "pipe") arrives, last
    /// bit, at the port's peer node. A link delivers in FIFO order, so only the head of
    /// each link is in the event queue; the rest wait in the port's pipe.
    LinkArrive { port: u32 },
    /// Egress port `port` finished serializing its current packet.
    TxDone { port: u32 },
    /// A transport timer at `host`.
    Timer { host: NodeId, token: u64 },
    /// The next flow of the workload arrives.
    FlowArrival,
    /// Periodic sampling of queues and links.
    Sample,
}

#[derive(Copy, Clone, Debug)]
struct Entry {
    key: u128,
    ev: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        // Reverse: BinaryHeap is a max-heap, we want the smallest key first.
        o.key.cmp(&self.key)
    }
}

#[derive(Default)]
pub struct EventQueue { heap: BinaryHeap<Entry>, seq: u64, now: Time }
impl EventQueue {
    pub fn new() -> Self { Self::default() }
    #[inline] pub fn push(&mut self, at: Time, ev: Event) { let key = ((at.0 as u128) << 64) | self.seq as u128; self.seq += 1; self.heap.push(Entry { key, ev }); }
    #[inline] pub fn pop(&mut self) -> Option<(Time, Event)> { let e = self.heap.pop()?; let t = Time((e.key >> 64) as u64); self.now = t; Some((t, e.ev)) }
    pub fn peek_time(&mut self) -> Option<Time> { self.heap.peek().map(|e| Time((e.key >> 64) as u64)) }
    pub fn now(&self) -> Time { self.now }
    pub fn len(&self) -> usize { self.heap.len() }
    pub fn is_empty(&self) -> bool { self.heap.is_empty() }
    pub fn scheduled(&self) -> u64 { self.seq }
}
#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn orders_by_time_then_sequence() {
        let mut q = EventQueue::new();
        q.push(Time(10), Event::TxDone { port: 1 });
        q.push(Time(5), Event::TxDone { port: 2 });
        q.push(Time(10), Event::TxDone { port: 3 });
        q.push(Time(5), Event::TxDone { port: 4 });
        let order: Vec<u32> = std::iter::from_fn(|| q.pop())
            .map(|(_, e)| match e {
                Event::TxDone { port } => port,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
    }

    /// The calendar queue pops exactly the (time, sequence) order of a reference heap,
    /// across bucket boundaries, the wheel horizon and far-future overflow.
    #[test]
    fn matches_reference_order() {
        let mut rng = crate::rng::Rng::new(9);
        let mut q = EventQueue::new();
        let mut reference: Vec<(u64, u64)> = vec![]; // (time, seq)
        let mut popped = vec![];
        let mut seq = 0u64;
        let mut now = 0u64;
        for round in 0..20_000 {
            let k = rng.below(4);
            for _ in 0..k {
                let dt = match rng.below(4) {
                    0 => rng.below(5),
                    1 => rng.below(100_000),
                    2 => rng.below(1 << 30),
                    _ => rng.below(1 << 40),
                };
                q.push(Time(now + dt), Event::TxDone { port: seq as u32 });
                reference.push((now + dt, seq));
                seq += 1;
            }
            if round % 3 != 0 {
                if let Some((t, Event::TxDone { port })) = q.pop() {
                    now = t.0;
                    popped.push((t.0, port as u64));
                }
            }
        }
        while let Some((t, Event::TxDone { port })) = q.pop() {
            popped.push((t.0, port as u64));
        }
        assert!(q.is_empty());
        // Popped order must be non-decreasing in (time, seq) and contain everything.
        assert_eq!(popped.len(), reference.len());
        for w in popped.windows(2) {
            assert!(w[0] < w[1], "{:?} before {:?}", w[0], w[1]);
        }
        let mut r = reference.clone();
        r.sort();
        let mut p = popped.clone();
        p.sort();
        assert_eq!(r, p);
    }
}
