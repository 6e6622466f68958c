//! Per-link flow arbitration: the control-plane building block of PASE (Munir et al.,
//! "Friends, not Foes: Synthesizing Existing Transport Strategies for Data Center Networks",
//! SIGCOMM 2014, §3.1.1, Algorithm 1), reusable by any protocol that ranks the flows of a link
//! and hands each a priority queue and a reference rate (PDQ's switch flow list is the same
//! ordering with a different allocation).
//!
//! # What is modelled
//! An [`Arbitrator`] owns one link direction of capacity `C`. It keeps the flows that asked it,
//! sorted by their [`ArbKey`]: earliest deadline first, then (for equal or no deadlines)
//! smallest remaining size, then flow id, so the order is total and deterministic (PASE
//! §3.1.1: "FlowSize ... can be replaced by deadline"; flows without a deadline rank after
//! every flow with one). A request carries the flow's latest key and its demand (the most it
//! can send); the entry is inserted or moved to its new place, and Algorithm 1 answers from
//! `ADH`, the summed demand of the flows ranked above it:
//! - reference rate: `min(demand, C - ADH)` if `ADH < C`, else the base rate (one packet per
//!   RTT, given by the caller);
//! - priority queue: `floor(ADH / C)`, at most the lowest queue (`queues - 1`); 0 is the top.
//!   The paper prints `ceil(ADH / C)`, which would put a flow with `0 < ADH < C` one queue
//!   below the flows with `ADH = 0` although the prose puts every flow with `ADH < C` in the
//!   top queue ("each intermediate queue accommodates flows with an aggregate demand of C");
//!   `floor` on 0-based queues is the prose's reading.
//!
//! # Choices where the paper leaves room
//! - Soft state: an entry not refreshed within its time to live (given with each request,
//!   a few refresh periods) is dropped at the next request, so a flow whose end was never
//!   announced (its source stopped, a lost message) cannot hold capacity forever. A flow that
//!   ends normally is removed explicitly ([`Arbitrator::remove`]).
//! - Requests counted per arbitrator ([`Arbitrator::requests`]): the paper's "control messages
//!   processed" overhead.
//!
//! The list is a sorted vector: a request costs O(n) in the flows on the link (arbitration is
//! per flow and per refresh period, not per packet).

use crate::packet::FlowId;
use crate::units::{Rate, Time};
use std::cmp::Ordering;

/// The scheduling criterion of a flow at an arbitrator (smaller = more urgent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArbKey {
    /// Absolute deadline, if the flow has one.
    pub deadline: Option<Time>,
    /// Remaining bytes.
    pub remaining: u64,
    pub flow: FlowId,
}

impl Ord for ArbKey {
    fn cmp(&self, o: &Self) -> Ordering {
        let d = match (self.deadline, o.deadline) {
            (Some(a), Some(b)) => a.cmp(&b),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        d.then(self.remaining.cmp(&o.remaining)).then(self.flow.cmp(&o.flow))
    }
}

impl PartialOrd for ArbKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// An arbitrator's answer: Algorithm 1's `<PrioQue, R_ref>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Priority queue, 0 = top.
    pub queue: u8,
    /// Reference rate.
    pub rate: Rate,
}

impl Decision {
    /// The answer of a path from the answers of its links: the lowest queue (the bottleneck)
    /// and the smallest reference rate (PASE §3.1.2: "a flow always uses the lowest of the
    /// priority queues assigned by all the arbitrators").
    pub fn combine(self, o: Decision) -> Decision {
        Decision { queue: self.queue.max(o.queue), rate: Rate(self.rate.0.min(o.rate.0)) }
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    key: ArbKey,
    demand: u64,
    expires: Time,
}

/// The arbitrator of one link direction (see the module documentation).
#[derive(Clone, Debug)]
pub struct Arbitrator {
    capacity: u64,
    queues: u8,
    entries: Vec<Entry>,
    requests: u64,
}

impl Arbitrator {
    /// A link of `capacity` with `queues` priority queues (at least 1).
    pub fn new(capacity: Rate, queues: u8) -> Arbitrator {
        Arbitrator { capacity: capacity.0.max(1), queues: queues.max(1), entries: Vec::new(), requests: 0 }
    }

    pub fn capacity(&self) -> Rate {
        Rate(self.capacity)
    }

    /// Flows currently on the list.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Requests processed so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Algorithm 1 for one request: insert or update the flow with `key` and `demand`, valid
    /// until `now + ttl`, and answer with its queue and reference rate (`base_rate` when the
    /// flows above it already fill the link).
    pub fn arbitrate(&mut self, now: Time, key: ArbKey, demand: Rate, base_rate: Rate, ttl: Time) -> Decision {
        self.requests += 1;
        self.entries.retain(|e| e.key.flow != key.flow && e.expires > now);
        let at = self.entries.partition_point(|e| e.key < key);
        self.entries.insert(at, Entry { key, demand: demand.0, expires: now + ttl });
        let adh: u64 = self.entries[..at].iter().map(|e| e.demand).sum();
        self.decide(adh, demand.0, base_rate)
    }

    /// Algorithm 1's two steps for a flow with `adh` of higher-priority demand.
    pub fn decide(&self, adh: u64, demand: u64, base_rate: Rate) -> Decision {
        let rate = if adh < self.capacity { demand.min(self.capacity - adh) } else { base_rate.0 };
        let queue = (adh / self.capacity).min(self.queues as u64 - 1) as u8;
        Decision { queue, rate: Rate(rate) }
    }

    /// The flow ended: forget it. True if it was on the list.
    pub fn remove(&mut self, flow: FlowId) -> bool {
        let n = self.entries.len();
        self.entries.retain(|e| e.key.flow != flow);
        self.entries.len() < n
    }

    /// A new capacity (a delegated virtual link whose share changed).
    pub fn set_capacity(&mut self, capacity: Rate) {
        self.capacity = capacity.0.max(1);
    }

    /// The summed demand of the flows still live at `now` (entries not yet expired).
    pub fn live_demand(&self, now: Time) -> u64 {
        self.entries.iter().filter(|e| e.expires > now).map(|e| e.demand).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(flow: FlowId, remaining: u64, deadline: Option<u64>) -> ArbKey {
        ArbKey { deadline: deadline.map(Time::us), remaining, flow }
    }

    const BASE: Rate = Rate(40_000_000);
    const TTL: Time = Time(1_000_000_000);

    #[test]
    fn order_is_deadline_then_remaining_size_then_id() {
        let mut ks =
            [key(1, 500, None), key(2, 100, None), key(3, 900, Some(50)), key(4, 10, Some(80)), key(0, 100, None)];
        ks.sort();
        let ids: Vec<_> = ks.iter().map(|k| k.flow).collect();
        assert_eq!(ids, vec![3, 4, 0, 2, 1]);
    }

    #[test]
    fn algorithm1_rates_and_queues_on_a_10g_link() {
        // C = 10 Gbps, 4 queues. Demands of 4 Gbps each, sizes 1..6 (arrival order mixed).
        let mut a = Arbitrator::new(Rate::gbps(10), 4);
        let g4 = Rate::gbps(4);
        let t = Time::ZERO;
        // Alone: ADH = 0 -> top queue, its full demand.
        assert_eq!(a.arbitrate(t, key(3, 3, None), g4, BASE, TTL), Decision { queue: 0, rate: g4 });
        // A smaller flow: ADH = 0 for it as well.
        assert_eq!(a.arbitrate(t, key(1, 1, None), g4, BASE, TTL), Decision { queue: 0, rate: g4 });
        // Size 2: ADH = 4 G -> top queue, min(4, 10 - 4) = 4 G.
        assert_eq!(a.arbitrate(t, key(2, 2, None), g4, BASE, TTL), Decision { queue: 0, rate: g4 });
        // Flow 3 again: ADH = 8 G -> top queue, the 2 G left.
        assert_eq!(a.arbitrate(t, key(3, 3, None), g4, BASE, TTL), Decision { queue: 0, rate: Rate::gbps(2) });
        // Size 4: ADH = 12 G -> queue floor(1.2) = 1, base rate.
        assert_eq!(a.arbitrate(t, key(4, 4, None), g4, BASE, TTL), Decision { queue: 1, rate: BASE });
        // Size 5: ADH = 16 G -> queue 1; size 6: ADH = 20 G -> queue 2.
        assert_eq!(a.arbitrate(t, key(5, 5, None), g4, BASE, TTL).queue, 1);
        assert_eq!(a.arbitrate(t, key(6, 6, None), g4, BASE, TTL).queue, 2);
        // Far below: clamped to the lowest queue (3).
        for f in 7..12 {
            a.arbitrate(t, key(f, f as u64, None), g4, BASE, TTL);
        }
        assert_eq!(a.arbitrate(t, key(20, 20, None), g4, BASE, TTL), Decision { queue: 3, rate: BASE });
        assert_eq!(a.len(), 12);
        assert_eq!(a.requests(), 13);
    }

    #[test]
    fn a_deadline_flow_overtakes_smaller_flows_and_removal_frees_capacity() {
        let mut a = Arbitrator::new(Rate::gbps(1), 8);
        let g1 = Rate::gbps(1);
        let t = Time::ZERO;
        a.arbitrate(t, key(1, 10_000, None), g1, BASE, TTL);
        // A large flow with a deadline ranks above it: top queue, full rate.
        assert_eq!(a.arbitrate(t, key(2, 1_000_000, Some(5_000)), g1, BASE, TTL), Decision { queue: 0, rate: g1 });
        // Flow 1 refreshes: now ADH = 1 G = C -> queue 1, base rate.
        assert_eq!(a.arbitrate(t, key(1, 9_000, None), g1, BASE, TTL), Decision { queue: 1, rate: BASE });
        a.remove(2);
        assert_eq!(a.arbitrate(t, key(1, 8_000, None), g1, BASE, TTL), Decision { queue: 0, rate: g1 });
    }

    #[test]
    fn stale_entries_expire_at_the_next_request() {
        let mut a = Arbitrator::new(Rate::gbps(1), 8);
        let g1 = Rate::gbps(1);
        a.arbitrate(Time::ZERO, key(1, 10, None), g1, BASE, Time::us(100));
        assert_eq!(a.arbitrate(Time::us(50), key(2, 20, None), g1, BASE, Time::us(100)).queue, 1);
        // At 120 us flow 1 (refreshed at 0, valid until 100 us) has expired; flow 2 (until 150 us)
        // has not.
        assert_eq!(a.arbitrate(Time::us(120), key(3, 30, None), g1, BASE, Time::us(100)).queue, 1);
        assert_eq!(a.len(), 2);
        assert_eq!(a.arbitrate(Time::us(121), key(2, 20, None), g1, BASE, Time::us(100)).queue, 0);
    }

    #[test]
    fn combine_takes_the_lowest_queue_and_smallest_rate() {
        let a = Decision { queue: 0, rate: Rate::gbps(1) };
        let b = Decision { queue: 2, rate: Rate::gbps(3) };
        assert_eq!(a.combine(b), Decision { queue: 2, rate: Rate::gbps(1) });
    }
}
