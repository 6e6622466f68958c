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

/// Min-heap of `u128` keys (16-byte entries) on top of the standard binary heap.
#[derive(Default)]
struct KeyHeap {
    v: BinaryHeap<std::cmp::Reverse<u128>>,
}

impl KeyHeap {
    #[inline]
    fn push(&mut self, k: u128) {
        self.v.push(std::cmp::Reverse(k));
    }
    #[inline]
    fn peek(&self) -> Option<u128> {
        self.v.peek().map(|r| r.0)
    }
    #[inline]
    fn pop(&mut self) -> Option<u128> {
        self.v.pop().map(|r| r.0)
    }
    fn len(&self) -> usize {
        self.v.len()
    }
}

// Layout of a network-event key: time (64 bits) | sequence (40 bits) | kind (2) | port (22).
const SEQ_SHIFT: u32 = 24;
const KIND_SHIFT: u32 = 22;
const PORT_MASK: u128 = (1 << KIND_SHIFT) - 1;
/// Largest port id a network event can carry.
pub const MAX_PORTS: usize = 1 << KIND_SHIFT;
const K_LINK: u128 = 0;
const K_TX: u128 = 1;
const K_FLOW: u128 = 2;
const K_SAMPLE: u128 = 3;

/// Min-priority queue of events keyed by (time, insertion sequence).
///
/// Network events (link arrivals, transmissions, flow arrivals, samples) are encoded
/// entirely in one `u128` key, time in the high 64 bits, the insertion sequence below
/// it, then the event kind and port, and kept in a binary heap of 16-byte entries.
/// Transport timers live in a separate binary heap: most armed retransmission timers
/// never fire before being re-armed, so keeping them apart keeps the busy heap small
/// (about one entry per busy link). Both heaps share the sequence counter and `pop`
/// compares their tops, so the order is exactly (time, sequence) over all events.
#[derive(Default)]
pub struct EventQueue {
    net: KeyHeap,
    timers: BinaryHeap<Entry>,
    seq: u64,
    now: Time,
}

#[inline]
fn decode(k: u128) -> Event {
    let port = (k & PORT_MASK) as u32;
    match (k >> KIND_SHIFT) & 3 {
        K_LINK => Event::LinkArrive { port },
        K_TX => Event::TxDone { port },
        K_FLOW => Event::FlowArrival,
        _ => Event::Sample,
    }
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }
    /// Schedule `ev` at `at`. Scheduling in the past is a logic error (checked in debug).
    #[inline]
    pub fn push(&mut self, at: Time, ev: Event) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let seq = self.seq;
        self.seq += 1;
        let base = ((at.0 as u128) << 64) | ((seq as u128 & ((1 << 40) - 1)) << SEQ_SHIFT);
        match ev {
            Event::Timer { .. } => self.timers.push(Entry { key: ((at.0 as u128) << 64) | seq as u128, ev }),
            Event::LinkArrive { port } => self.net.push(base | (K_LINK << KIND_SHIFT) | port as u128),
            Event::TxDone { port } => self.net.push(base | (K_TX << KIND_SHIFT) | port as u128),
            Event::FlowArrival => self.net.push(base | (K_FLOW << KIND_SHIFT)),
            Event::Sample => self.net.push(base | (K_SAMPLE << KIND_SHIFT)),
        }
    }
    #[inline]
    fn timer_first(&self) -> Option<bool> {
        match (self.net.peek(), self.timers.peek()) {
            (None, None) => None,
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            // Compare (time, sequence): the net key's sequence sits 24 bits lower.
            (Some(n), Some(t)) => {
                let (nt, ns) = ((n >> 64) as u64, ((n >> SEQ_SHIFT) as u64) & ((1 << 40) - 1));
                let (tt, ts) = ((t.key >> 64) as u64, (t.key as u64) & ((1 << 40) - 1));
                Some((tt, ts) < (nt, ns))
            }
        }
    }
    /// Remove and return the earliest event, advancing `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        let (t, ev) = if self.timer_first()? {
            let e = self.timers.pop().expect("peeked");
            (Time((e.key >> 64) as u64), e.ev)
        } else {
            let k = self.net.pop().expect("peeked");
            (Time((k >> 64) as u64), decode(k))
        };
        self.now = t;
        Some((t, ev))
    }
    /// The earliest pending non-timer event, if it is earlier than every timer (for
    /// prefetching the packet it will touch).
    #[inline]
    pub fn peek_net(&self) -> Option<Event> {
        if self.timer_first()? {
            None
        } else {
            self.net.peek().map(decode)
        }
    }
    /// Time of the earliest pending event.
    pub fn peek_time(&mut self) -> Option<Time> {
        let k = if self.timer_first()? { self.timers.peek()?.key } else { self.net.peek()? };
        Some(Time((k >> 64) as u64))
    }
    pub fn now(&self) -> Time {
        self.now
    }
    pub fn len(&self) -> usize {
        self.net.len() + self.timers.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Total events ever scheduled.
    pub fn scheduled(&self) -> u64 {
        self.seq
    }
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

    fn id(ev: Event) -> u64 {
        match ev {
            Event::TxDone { port } => port as u64,
            Event::Timer { host, .. } => host as u64,
            _ => unreachable!(),
        }
    }

    /// The queue pops exactly the (time, sequence) order of a reference heap,
    /// with timers and network events interleaved, near and far in time.
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
                // Mix timer and network events: both heaps must interleave exactly.
                let ev = if rng.below(3) == 0 {
                    Event::Timer { host: seq as u32, token: 0 }
                } else {
                    Event::TxDone { port: seq as u32 }
                };
                q.push(Time(now + dt), ev);
                reference.push((now + dt, seq));
                seq += 1;
            }
            if round % 3 != 0 {
                if let Some((t, ev)) = q.pop() {
                    now = t.0;
                    popped.push((t.0, id(ev)));
                }
            }
        }
        while let Some((t, ev)) = q.pop() {
            popped.push((t.0, id(ev)));
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
