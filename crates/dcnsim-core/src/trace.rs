//! Packet traces: a per-packet event log of chosen egress ports and/or flows
//! (`output.trace_ports`, `output.trace_flows`, `output.trace_limit`; schema of
//! `packets.parquet` in docs/results.md).
//!
//! # How a port is traced
//! The runner wraps the queue discipline of every traced port in a [`Traced`] policy, the
//! way in-band telemetry wraps a switch policy (`queue::int`): admission and scheduling stay
//! the inner policy's, and the wrapper appends one [`TraceEvent`] per thing that happened to
//! a selected packet. Ports that are not traced keep their own policy object, so a run without
//! tracing executes exactly the code it executed before (no check of any flag on the
//! per-packet path). A traced port also gives up the runner's idle fast path (its
//! passthrough size is 0): a packet offered to it is always enqueued and then dequeued
//! through the policy, which the fast path guarantees to be equivalent, so tracing changes
//! no result (a test compares the flow tables of a traced and an untraced run).
//!
//! # Events
//! - `enqueue`: the policy accepted the offered packet; `queue_bytes` counts it.
//! - `dequeue`: the packet left the queue and its serialization starts now.
//! - `drop`: the policy dropped the packet (the offered one, or one it evicted).
//! - `mark`: the policy set the offered packet's ECN codepoint to CE while admitting it.
//! - `trim`: the policy cut a packet's payload while admitting the offered one (NDP): the
//!   offered packet, or a queued one it trimmed instead (NDP's tail trimming, reported by
//!   the policy in `PortEffects::trimmed_queued`); the packet's fields are the trimmed ones.
//!
//! Marks are detected on the offered packet by comparing its ECN codepoint before and after
//! the enqueue, trims of the offered packet by its `TRIMMED` flag likewise. A policy that marks a packet at another
//! moment (RPO's cross-queue marking marks packets already queued) produces no `mark`
//! event; the `ecn` column of each event holds the codepoint at that moment, so such a mark
//! shows on the packet's `dequeue`.
//!
//! `queue_bytes` is the port's total queued bytes (all classes) right after the event.
//!
//! # Memory
//! Events go to one log shared by the traced ports (appended in the order they happen, which
//! is simulated-time order), reserved up front for `min(limit, 65536)` events and grown by
//! doubling; nothing else is allocated per packet. At `trace_limit` events the log stops
//! recording and counts what it left out (`trace_events_lost` in counters.json); the limit
//! itself is bounded by [`MAX_TRACE_EVENTS`], so no scenario can make the log exhaust memory.

use std::cell::RefCell;
use std::rc::Rc;

use crate::packet::{Ecn, FlowId, NodeId, PacketArena, PacketFlags, PktIdx};
use crate::queue::hook::{Hooked, PortHook};
use crate::queue::{PortEffects, QueueDisc};
use crate::units::{Bytes, Time};

/// The largest `output.trace_limit` a scenario may give (each event takes 72 bytes in the
/// core, about as much again once handed to Python: about 1.5 GB at this limit).
pub const MAX_TRACE_EVENTS: u64 = 10_000_000;
/// `output.trace_limit` when the scenario gives none.
pub const DEFAULT_TRACE_EVENTS: u64 = 1_000_000;

/// What happened to a packet ([`TraceEvent::event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EventKind {
    Enqueue = 0,
    Dequeue = 1,
    Drop = 2,
    Mark = 3,
    Trim = 4,
}

impl EventKind {
    /// Names of the kinds, indexed by their code (the `event` column of packets.parquet).
    pub const NAMES: [&'static str; 5] = ["enqueue", "dequeue", "drop", "mark", "trim"];
}

/// One event of the log: the packet's fields at that moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    pub t: Time,
    /// Bytes queued at the port (all classes) right after the event.
    pub queue_bytes: u64,
    pub seq: u64,
    pub ack: u64,
    pub port: u32,
    pub node: NodeId,
    pub flow: FlowId,
    pub src: NodeId,
    pub dst: NodeId,
    /// Wire size.
    pub size: u32,
    pub payload: u32,
    pub flags: u16,
    pub event: EventKind,
    pub class: u8,
    pub kind: u8,
    pub ecn: Ecn,
}

/// Which packets a traced port records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlowFilter {
    All,
    /// Flow ids, sorted.
    Only(Vec<FlowId>),
}

impl FlowFilter {
    #[inline]
    fn wants(&self, flow: FlowId) -> bool {
        match self {
            FlowFilter::All => true,
            FlowFilter::Only(v) => v.binary_search(&flow).is_ok(),
        }
    }
}

/// The log shared by the traced ports of one run.
#[derive(Debug, Default)]
pub struct TraceLog {
    pub events: Vec<TraceEvent>,
    /// Events not recorded because the log was full.
    pub lost: u64,
    limit: u64,
}

impl TraceLog {
    pub fn new(limit: u64) -> TraceLog {
        let limit = limit.min(MAX_TRACE_EVENTS);
        TraceLog { events: Vec::with_capacity(limit.min(1 << 16) as usize), lost: 0, limit }
    }

    #[inline]
    fn push(&mut self, e: TraceEvent) {
        if (self.events.len() as u64) < self.limit {
            self.events.push(e);
        } else {
            self.lost += 1;
        }
    }
}

/// A shared handle on a run's [`TraceLog`].
pub type SharedLog = Rc<RefCell<TraceLog>>;

/// A queue policy whose events are logged; see the module docs.
pub struct Traced {
    log: SharedLog,
    filter: FlowFilter,
    port: u32,
    node: NodeId,
}

impl Traced {
    /// The trace of port `port` (at node `node`) as a hook around `inner`.
    pub fn new(
        inner: Box<dyn QueueDisc>,
        log: SharedLog,
        filter: FlowFilter,
        port: u32,
        node: NodeId,
    ) -> Hooked<Traced> {
        Hooked::new(Traced { log, filter, port, node }, inner)
    }

    /// Log `event` of packet `idx`, with the bytes `queued` at the port after it.
    fn record(&self, now: Time, event: EventKind, idx: PktIdx, pkts: &PacketArena, queued: Bytes) {
        let p = pkts.get(idx);
        if !self.filter.wants(p.flow) {
            return;
        }
        self.log.borrow_mut().push(TraceEvent {
            t: now,
            queue_bytes: queued.0,
            seq: p.seq,
            ack: p.ack,
            port: self.port,
            node: self.node,
            flow: p.flow,
            src: p.src,
            dst: p.dst,
            size: p.size,
            payload: p.payload,
            flags: p.flags.0,
            event,
            class: p.prio,
            kind: p.kind,
            ecn: p.ecn,
        });
    }
}

impl PortHook for Traced {
    fn enqueue(
        &mut self,
        now: Time,
        idx: PktIdx,
        pkts: &mut PacketArena,
        fx: &mut PortEffects,
        inner: &mut dyn QueueDisc,
    ) {
        let before = pkts.get(idx);
        let (ecn0, trimmed0) = (before.ecn, before.flags.has(PacketFlags::TRIMMED));
        let (first, first_trim) = (fx.drops.len(), fx.trimmed_queued.len());
        inner.enqueue(now, idx, pkts, fx);
        let q = inner.bytes();
        let offered_dropped = fx.drops[first..].iter().any(|&(d, _)| d == idx);
        if !offered_dropped {
            self.record(now, EventKind::Enqueue, idx, pkts, q);
            let p = pkts.get(idx);
            if p.ecn == Ecn::Ce && ecn0 != Ecn::Ce {
                self.record(now, EventKind::Mark, idx, pkts, q);
            }
            if p.flags.has(PacketFlags::TRIMMED) && !trimmed0 {
                self.record(now, EventKind::Trim, idx, pkts, q);
            }
        }
        for &t in &fx.trimmed_queued[first_trim..] {
            self.record(now, EventKind::Trim, t, pkts, q);
        }
        for &(d, _) in &fx.drops[first..] {
            self.record(now, EventKind::Drop, d, pkts, q);
        }
    }

    fn dequeued(&mut self, now: Time, idx: PktIdx, _size: u32, pkts: &mut PacketArena, inner: &dyn QueueDisc) {
        self.record(now, EventKind::Dequeue, idx, pkts, inner.bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;
    use crate::queue::priority::PriorityEcn;

    fn data(flow: FlowId, seq: u64, size: u32) -> Packet {
        let mut p = Packet { flow, seq, size, payload: size - 40, ecn: Ecn::Ect, ..Default::default() };
        p.flags.set(PacketFlags::DATA);
        p
    }

    fn traced(buffer: u64, k: Option<u64>, filter: FlowFilter, limit: u64) -> (Hooked<Traced>, SharedLog) {
        let log: SharedLog = Rc::new(RefCell::new(TraceLog::new(limit)));
        let inner = Box::new(PriorityEcn::new(Bytes(buffer), 1, vec![k.map(Bytes)], false));
        (Traced::new(inner, log.clone(), filter, 7, 3), log)
    }

    #[test]
    fn event_is_72_bytes_as_the_memory_bound_assumes() {
        assert_eq!(std::mem::size_of::<TraceEvent>(), 72);
    }

    #[test]
    fn enqueue_then_dequeue_logs_both_with_queue_bytes_after_each() {
        let (mut q, log) = traced(10_000, None, FlowFilter::All, 100);
        let mut arena = PacketArena::new();
        let mut fx = PortEffects::default();
        let a = arena.alloc(data(1, 0, 1000));
        let b = arena.alloc(data(1, 960, 1000));
        q.enqueue(Time(5), a, &mut arena, &mut fx);
        q.enqueue(Time(6), b, &mut arena, &mut fx);
        assert_eq!(q.dequeue_more(Time(9), &mut arena).map(|x| x.0), Some(a));
        let ev = &log.borrow().events;
        let got: Vec<_> = ev.iter().map(|e| (e.t.0, e.event, e.queue_bytes, e.seq, e.port, e.node)).collect();
        assert_eq!(
            got,
            vec![
                (5, EventKind::Enqueue, 1000, 0, 7, 3),
                (6, EventKind::Enqueue, 2000, 960, 7, 3),
                (9, EventKind::Dequeue, 1000, 0, 7, 3),
            ]
        );
    }

    #[test]
    fn full_buffer_logs_drop_of_offered_packet_and_no_enqueue() {
        let (mut q, log) = traced(1500, None, FlowFilter::All, 100);
        let mut arena = PacketArena::new();
        let mut fx = PortEffects::default();
        let a = arena.alloc(data(1, 0, 1000));
        let b = arena.alloc(data(1, 960, 1000));
        q.enqueue(Time(1), a, &mut arena, &mut fx);
        q.enqueue(Time(2), b, &mut arena, &mut fx);
        assert_eq!(fx.drops.len(), 1);
        let kinds: Vec<_> = log.borrow().events.iter().map(|e| (e.event, e.seq, e.queue_bytes)).collect();
        assert_eq!(kinds, vec![(EventKind::Enqueue, 0, 1000), (EventKind::Drop, 960, 1000)]);
    }

    #[test]
    fn ecn_threshold_crossing_logs_mark_after_enqueue() {
        // K = 999 B: the second packet finds 1000 B (> K) queued and is marked.
        let (mut q, log) = traced(100_000, Some(999), FlowFilter::All, 100);
        let mut arena = PacketArena::new();
        let mut fx = PortEffects::default();
        for s in 0..2 {
            let i = arena.alloc(data(1, s * 960, 1000));
            q.enqueue(Time(s), i, &mut arena, &mut fx);
        }
        let ev: Vec<_> = log.borrow().events.iter().map(|e| (e.event, e.ecn)).collect();
        assert_eq!(ev[0], (EventKind::Enqueue, Ecn::Ect));
        assert_eq!(ev.last(), Some(&(EventKind::Mark, Ecn::Ce)));
        assert_eq!(ev.iter().filter(|e| e.0 == EventKind::Mark).count(), 1);
    }

    #[test]
    fn flow_filter_skips_other_flows_and_limit_counts_lost_events() {
        let (mut q, log) = traced(1 << 30, None, FlowFilter::Only(vec![2]), 3);
        let mut arena = PacketArena::new();
        let mut fx = PortEffects::default();
        for i in 0..6u64 {
            let idx = arena.alloc(data(1 + (i % 2) as u32, i * 1000, 1000));
            q.enqueue(Time(i), idx, &mut arena, &mut fx);
        }
        // Flow 2 offered 3 packets; flow 1's 3 are not logged.
        while q.dequeue_more(Time(10), &mut arena).is_some() {}
        let l = log.borrow();
        assert!(l.events.iter().all(|e| e.flow == 2));
        assert_eq!(l.events.len(), 3);
        assert_eq!(l.lost, 3); // flow 2's three dequeues
    }
}
