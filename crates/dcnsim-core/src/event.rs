//! The discrete-event queue: events ordered by (time, sequence number).
//!
//! The sequence number is the order of insertion, so two events at the same picosecond
//! run in the order they were scheduled: ties are deterministic and independent of the
//! heap's internals. Link arrivals and transmission ends, the bulk of the events, are kept
//! in a timing wheel spanning the largest serialization plus propagation delay, everything
//! else in a binary heap. Timers are never removed from the queue: cancellation is lazy
//! (see [`crate::transport::TimerSlot`]).

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
    /// The application abandons flow `flow` if it is still incomplete (`run.abort_at_deadline`).
    Abort { flow: u32 },
    /// Flow `flow` of a barrier round arrives (its round was released when the previous
    /// round ended).
    Start { flow: u32 },
    /// Change `idx` of the run's `[[link_delay]]` schedule takes effect.
    LinkDelay { idx: u32 },
}

/// An event outside the wheel (timers, flow arrivals, samples, and link events too far
/// ahead), keyed by its full (time, sequence).
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

/// A link arrival or transmission end in the wheel: a node of its bucket's list. `port`
/// has its top bit set for `TxDone`. 24 bytes, aligned to 32 so that a node never spans
/// two cache lines.
#[derive(Copy, Clone, Debug)]
#[repr(C, align(32))]
struct Node {
    t: u64,
    seq: u64,
    port: u32,
    /// Next node of the bucket (NIL after the tail), or of the free list.
    next: u32,
}

/// A bucket of the wheel: the first and last node of its list (NIL: empty). Both ends side by
/// side, so a pop reads the head without going through the tail node.
#[derive(Copy, Clone, Debug)]
#[repr(C, align(8))]
struct Bucket {
    head: u32,
    tail: u32,
}

const EMPTY: Bucket = Bucket { head: NIL, tail: NIL };

const NIL: u32 = u32::MAX;
const TX_BIT: u32 = 1 << 31;
/// Largest port id a network event can carry.
pub const MAX_PORTS: usize = TX_BIT as usize;

#[inline]
fn net_event(port: u32) -> Event {
    if port & TX_BIT != 0 {
        Event::TxDone { port: port & !TX_BIT }
    } else {
        Event::LinkArrive { port }
    }
}

/// Number of wheel buckets: 128 x 64, so a two-level bitmap (a `u128` over 128 words) finds
/// the next one.
const BUCKETS: usize = 8192;
const WORDS: usize = BUCKETS / 64;

/// Min-priority queue of events keyed by (time, insertion sequence).
///
/// Link arrivals and transmission ends, the bulk of the events, lie at most one
/// serialization plus one propagation delay (the *horizon*) ahead of the clock. They go to
/// a timing wheel of [`BUCKETS`] buckets of 2^`shift` ps that spans at least the horizon:
/// an event at time t sits in bucket (t >> shift) mod BUCKETS while it lies less than the
/// wheel's span ahead of the clock's bucket, so every bucket holds one time slice only.
/// A bucket is a list of nodes sorted by (time, sequence), entered at its tail;
/// since every new event has the largest sequence so far, it goes after every node at or
/// before its time, which is usually the tail. A two-level
/// bitmap of non-empty buckets finds the next event. Everything else (transport timers,
/// flow arrivals, samples, and link events beyond the span) lives in a binary heap keyed
/// by the full (time, sequence); most armed retransmission timers never fire before being
/// re-armed, so keeping them apart also keeps them out of the busy path. Both share the
/// sequence counter and `pop` compares their heads, so the order is exactly (time,
/// sequence) over all events, whatever the horizon.
pub struct EventQueue {
    /// First and last node of each bucket's list.
    buckets: Box<[Bucket; BUCKETS]>,
    /// Node storage; free nodes form a list through `next` from `free`.
    nodes: Vec<Node>,
    free: u32,
    /// Bit b of word w: bucket 64 w + b is non-empty; bit w of `summary`: word w is not 0.
    bits: [u64; WORDS],
    summary: u128,
    shift: u32,
    /// Bucket (absolute, not reduced mod BUCKETS) of the clock.
    cur: u64,
    other: BinaryHeap<Entry>,
    /// Time of `other`'s top (`u64::MAX` when empty): a wheel event before it comes first
    /// without a look at the heap.
    other_t: u64,
    seq: u64,
    now: Time,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::with_horizon(Time::us(2))
    }
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }
    /// A queue whose wheel spans at least `horizon` (the largest serialization plus
    /// propagation delay of any link). Only speed depends on it, never the order.
    pub fn with_horizon(horizon: Time) -> Self {
        let width = horizon.0.div_ceil(BUCKETS as u64).max(1).next_power_of_two();
        EventQueue {
            buckets: Box::new([EMPTY; BUCKETS]),
            nodes: vec![],
            free: NIL,
            bits: [0; WORDS],
            summary: 0,
            shift: width.trailing_zeros(),
            cur: 0,
            other: BinaryHeap::new(),
            other_t: u64::MAX,
            seq: 0,
            now: Time::ZERO,
        }
    }
    /// Schedule `ev` at `at`. Scheduling in the past is a logic error (checked in debug).
    #[inline(always)]
    pub fn push(&mut self, at: Time, ev: Event) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let seq = self.seq;
        self.seq += 1;
        if let Event::LinkArrive { port } | Event::TxDone { port } = ev {
            debug_assert!(port < TX_BIT, "port id out of range");
        }
        let port = match ev {
            Event::LinkArrive { port } => port,
            Event::TxDone { port } => port | TX_BIT,
            _ => return self.push_other(at.0, seq, ev),
        };
        self.push_wheel(at.0, seq, port);
    }
    /// An event for the heap, keyed by its full (time, sequence).
    #[inline(never)]
    fn push_other(&mut self, t: u64, seq: u64, ev: Event) {
        self.other.push(Entry { key: ((t as u128) << 64) | seq as u128, ev });
        self.other_t = self.other_t.min(t);
    }
    /// A network event: into its bucket, usually at the tail (the common cases are inlined at
    /// every call site; the rare ones are out of line).
    #[inline(always)]
    fn push_wheel(&mut self, t: u64, seq: u64, port: u32) {
        let b = t >> self.shift;
        if b.wrapping_sub(self.cur) >= BUCKETS as u64 {
            // Beyond the wheel's span (or, in error, in the past): exact in the heap.
            return self.push_other(t, seq, net_event(port));
        }
        let s = b as usize & (BUCKETS - 1);
        if self.free == NIL {
            self.grow_nodes();
        }
        let n = self.free;
        self.free = self.node(n).next;
        // The bucket is a list entered at its tail. The new node goes after every node at
        // or before `t` (they have smaller sequence numbers): usually at the tail.
        *self.node_mut(n) = Node { t, seq, port, next: NIL };
        let tail = self.buckets[s].tail;
        if tail == NIL {
            self.buckets[s] = Bucket { head: n, tail: n };
            self.bits[s / 64] |= 1 << (s % 64);
            self.summary |= 1 << (s / 64);
            return;
        }
        let tail_node = self.node_mut(tail);
        if tail_node.t <= t {
            tail_node.next = n;
            self.buckets[s].tail = n;
            return;
        }
        self.insert_before_later(s, n, t);
    }
    /// Node `n` of the wheel. Every index the wheel follows (`free` when not NIL, a
    /// non-NIL bucket end, the non-NIL `next` of a linked node) is one `grow_nodes` handed out,
    /// below `nodes.len()`, and nodes are never removed: the bounds check is skipped on this,
    /// the busiest path of the simulator (checked in debug builds).
    #[inline(always)]
    fn node(&self, n: u32) -> &Node {
        debug_assert!((n as usize) < self.nodes.len(), "wheel node {n} out of range");
        // SAFETY: `n < nodes.len()` by the invariant above.
        unsafe { self.nodes.get_unchecked(n as usize) }
    }
    #[inline(always)]
    fn node_mut(&mut self, n: u32) -> &mut Node {
        debug_assert!((n as usize) < self.nodes.len(), "wheel node {n} out of range");
        // SAFETY: `n < nodes.len()` by the invariant of `node`.
        unsafe { self.nodes.get_unchecked_mut(n as usize) }
    }
    /// Put a new node on the (empty) free list.
    #[cold]
    #[inline(never)]
    fn grow_nodes(&mut self) {
        self.nodes.push(Node { t: 0, seq: 0, port: 0, next: self.free });
        self.free = (self.nodes.len() - 1) as u32;
    }
    /// Link node `n` (time `t`, the largest sequence) into bucket `s`, whose tail is later than
    /// `t`: before the first node later than `t` (the walk ends at the tail at the latest).
    #[inline(never)]
    fn insert_before_later(&mut self, s: usize, n: u32, t: u64) {
        let head = self.buckets[s].head;
        if self.node(head).t > t {
            self.node_mut(n).next = head;
            self.buckets[s].head = n;
            return;
        }
        let mut prev = head;
        let mut cur = self.node(head).next;
        while self.node(cur).t <= t {
            prev = cur;
            cur = self.node(cur).next;
        }
        self.node_mut(n).next = cur;
        self.node_mut(prev).next = n;
    }
    /// Slot of the first non-empty bucket at or after the clock's, in time order.
    #[inline]
    fn first_slot(&self) -> Option<usize> {
        let start = self.cur as usize & (BUCKETS - 1);
        let w = start / 64;
        let word = self.bits[w] & (!0u64 << (start % 64));
        if word != 0 {
            // The usual case: a non-empty bucket in the clock's own word.
            return Some(w * 64 + word.trailing_zeros() as usize);
        }
        if self.summary == 0 {
            return None;
        }
        // The next non-empty word after `w`, else (wrapping round) the first one: it holds
        // the latest times, possibly in word `w` itself, before `start`.
        let later = self.summary & (!1u128 << w);
        let w = if later != 0 { later.trailing_zeros() } else { self.summary.trailing_zeros() } as usize;
        Some(w * 64 + self.bits[w % WORDS].trailing_zeros() as usize)
    }
    /// The earliest wheel event: (slot, node index, node).
    #[inline]
    fn wheel_head(&self) -> Option<(usize, u32, Node)> {
        let s = self.first_slot()?;
        let n = self.buckets[s % BUCKETS].head;
        Some((s, n, *self.node(n)))
    }
    /// Whether the heap's head comes before the wheel's (None: both empty).
    #[inline]
    fn other_first(&self, wheel: Option<&Node>) -> Option<bool> {
        if let Some(w) = wheel {
            if w.t < self.other_t {
                return Some(false);
            }
        }
        match (wheel, self.other.peek()) {
            (None, None) => None,
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            (Some(w), Some(o)) => Some((((o.key >> 64) as u64), o.key as u64) < (w.t, w.seq)),
        }
    }
    /// Remove and return the earliest event, advancing `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        let head = self.wheel_head();
        let (t, ev) = if self.other_first(head.as_ref().map(|h| &h.2))? {
            let e = self.other.pop().expect("peeked");
            self.other_t = self.other.peek().map_or(u64::MAX, |o| (o.key >> 64) as u64);
            (Time((e.key >> 64) as u64), e.ev)
        } else {
            let (s, n, e) = head.expect("peeked");
            let s = s % BUCKETS;
            let bucket = &mut self.buckets[s];
            if bucket.tail == n {
                *bucket = EMPTY;
                self.bits[s / 64] &= !(1 << (s % 64));
                if self.bits[s / 64] == 0 {
                    self.summary &= !(1 << (s / 64));
                }
            } else {
                bucket.head = e.next;
            }
            self.node_mut(n).next = self.free;
            self.free = n;
            (Time(e.t), net_event(e.port))
        };
        self.now = t;
        self.cur = t.0 >> self.shift;
        Some((t, ev))
    }
    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Time> {
        let head = self.wheel_head();
        if self.other_first(head.as_ref().map(|h| &h.2))? {
            Some(Time((self.other.peek()?.key >> 64) as u64))
        } else {
            head.map(|h| Time(h.2.t))
        }
    }
    pub fn now(&self) -> Time {
        self.now
    }
    /// Events pending. Walks the wheel's free list (no counter is kept on the hot path):
    /// for tests and diagnostics, not for a loop over events.
    pub fn len(&self) -> usize {
        let mut free = 0;
        let mut n = self.free;
        while n != NIL {
            free += 1;
            n = self.node(n).next;
        }
        self.nodes.len() - free + self.other.len()
    }
    pub fn is_empty(&self) -> bool {
        self.summary == 0 && self.other.is_empty()
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
            Event::TxDone { port } | Event::LinkArrive { port } => port as u64,
            Event::Timer { host, .. } => host as u64,
            _ => unreachable!(),
        }
    }

    /// The queue pops exactly the (time, sequence) order of a reference heap,
    /// with timers and network events interleaved, near and far in time.
    #[test]
    fn matches_reference_order() {
        check_reference_order(EventQueue::new(), 1 << 40);
    }

    /// The same for wheels of any span: 1024 ps (network events spill to the heap all the
    /// time), 2^20 ps, and 2^40 ps (buckets of 2^30 ps holding many events, inserted out of
    /// time order).
    #[test]
    fn matches_reference_order_for_any_horizon() {
        for h in [1u64, 1 << 10, 1 << 20, 1 << 40, 1 << 50] {
            let spilled = check_reference_order(EventQueue::with_horizon(Time(h)), 1 << 40);
            assert!(spilled || h > 1 << 20, "horizon {h}: network events must have used the heap");
        }
    }

    /// Returns whether network events went to the heap.
    fn check_reference_order(mut q: EventQueue, far: u64) -> bool {
        let mut spilled = false;
        let mut rng = crate::rng::Rng::new(9);
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
                    _ => rng.below(far),
                };
                // Mix timer and network events: both heaps must interleave exactly.
                let ev = match rng.below(3) {
                    0 => Event::Timer { host: seq as u32, token: 0 },
                    1 => Event::TxDone { port: seq as u32 },
                    _ => Event::LinkArrive { port: seq as u32 },
                };
                q.push(Time(now + dt), ev);
                reference.push((now + dt, seq));
                seq += 1;
            }
            if round % 64 == 0 {
                spilled |= q.other.iter().any(|e| !matches!(e.ev, Event::Timer { .. }));
            }
            // Let the queue grow, but not without bound, so the clock moves far.
            while round % 3 != 0 || q.len() > 1000 {
                if let Some((t, ev)) = q.pop() {
                    now = t.0;
                    popped.push((t.0, id(ev)));
                }
                if q.len() <= 1000 {
                    break;
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
        spilled
    }
}
