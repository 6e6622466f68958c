//! A switch-computed maximum window stamped into data packets: each egress port counts the
//! flows it carries per round-trip time and writes the largest window that lets all of them
//! send at once without overflowing its buffer, as M21TCP's switches do (Adesanmi and Mhamdi,
//! "M21TCP: Overcoming TCP Incast Congestion in Data Centres", CloudNet 2015; PTCP §II-B
//! describes it as a switch that "calculates the maximum congestion window in every RTT" and
//! informs the parallel senders). **As reconstructed**: no public code exists; the rules are
//! the minimum mechanism consistent with PTCP's Eq. 3 (`N <= (B + C x RTT) / w`), stated here.
//!
//! [`WindowStamp`] wraps any switch policy: admission and scheduling stay the inner policy's.
//! When a data packet is offered to the port (before the inner policy admits or drops it):
//! - the port notes the packet's flow among the flows active in the current period. A period
//!   is one round-trip time through this port: the network's largest base RTT (`period`, set
//!   by the scenario) plus the port's queueing delay when the period begins (its queued bytes
//!   over its rate). Every window-limited flow sends at least once per round trip, and its
//!   round trip through this port is at least that long, so a period sees every flow that
//!   is active here; a period of the base RTT alone would miss most flows of an incast whose
//!   queue holds many round trips of data and let their windows grow into an overflow;
//! - `N` = the larger of the number of distinct flows in the previous period and the number
//!   seen so far in the current one (so a burst of new flows counts at once, and a flow that
//!   paused for less than a period still counts);
//! - `w_max = (B + C x RTT) / N` bytes, with `B` the port's buffer, `C` its link rate and
//!   `RTT` the base RTT (`period`); it is written into the packet's `rank` field as `min(rank, w_max)`
//!   (0 = nothing stamped yet), so a packet leaves the last switch of its path with the
//!   smallest maximum window along it.
//!
//! The floor of one segment is the receiver's and sender's business (a window field carries
//! whole segments, at least one). A protocol that asks for this stamping
//! (`transport::Derived::window_stamp`) leaves `rank` zero on its data packets and reads it at
//! the receiver; it must not be combined with a queue policy that schedules by `rank`
//! (pFabric). Host NICs never stamp. The per-period flow set is a hash set cleared at each
//! period (its capacity kept), so the hot path allocates nothing once warm; only its size is
//! used, never its iteration order, so runs stay deterministic.

use super::hook::{Hooked, PortHook};
use super::{PortEffects, QueueDisc};
use crate::packet::{FlowId, PacketArena, PktIdx};
use crate::units::{Bytes, Rate, Time};
use std::collections::HashSet;

/// A switch port that stamps M21TCP's maximum window into the data packets offered to it.
pub struct WindowStamp {
    /// `B + C x RTT`, bytes.
    budget: u64,
    /// The base RTT.
    period: Time,
    rate: Rate,
    /// Length of the current period (base RTT + queueing delay at its start).
    len: Time,
    /// End of the current period.
    period_end: Time,
    /// Distinct flows seen in the current period.
    cur: HashSet<FlowId>,
    /// Distinct flows of the previous period.
    prev: u64,
}

impl WindowStamp {
    /// Wrap `inner` at a port of `buffer` bytes and link rate `rate`, counting flows per
    /// `period` (> 0).
    pub fn new(inner: Box<dyn QueueDisc>, buffer: Bytes, rate: Rate, period: Time) -> Hooked<WindowStamp> {
        let period = period.max(Time(1));
        let budget = buffer.0.saturating_add(rate.bdp(period).0);
        Hooked::new(
            WindowStamp { budget, period, rate, len: period, period_end: period, cur: HashSet::new(), prev: 0 },
            inner,
        )
    }

    /// Flows counted now (`N`).
    pub fn active(&self) -> u64 {
        self.prev.max(self.cur.len() as u64)
    }

    /// `w_max` for `n` flows, bytes.
    pub fn w_max(&self, n: u64) -> u64 {
        self.budget / n.max(1)
    }

    fn roll(&mut self, now: Time, queued: Bytes) {
        if now < self.period_end {
            return;
        }
        // An idle gap of a whole period or more: the previous period had no flow.
        self.prev = if now.0 - self.period_end.0 < self.len.0 { self.cur.len() as u64 } else { 0 };
        self.cur.clear();
        self.len = self.period + self.rate.tx_time(queued);
        self.period_end = now + self.len;
    }
}

impl PortHook for WindowStamp {
    fn enqueue(
        &mut self,
        now: Time,
        idx: PktIdx,
        pkts: &mut PacketArena,
        fx: &mut PortEffects,
        inner: &mut dyn QueueDisc,
    ) {
        self.roll(now, inner.bytes());
        let p = pkts.get_mut(idx);
        if p.is_data() {
            self.cur.insert(p.flow);
            let w = self.w_max(self.active()).min(u32::MAX as u64) as u32;
            p.rank = if p.rank == 0 { w } else { p.rank.min(w) };
        }
        inner.enqueue(now, idx, pkts, fx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Packet, PacketFlags};
    use crate::queue::priority::PriorityEcn;

    fn port() -> Hooked<WindowStamp> {
        // PTCP Table 1 at 1 G: 96 KB buffer, 100 us RTT: B + C RTT = 96 000 + 12 500 B.
        let inner = Box::new(PriorityEcn::new(Bytes(96_000), 1, vec![None], false));
        WindowStamp::new(inner, Bytes(96_000), Rate::gbps(1), Time::us(100))
    }

    fn offer(
        q: &mut Hooked<WindowStamp>,
        arena: &mut PacketArena,
        now: Time,
        flow: u32,
        rank: u32,
        data: bool,
    ) -> Packet {
        let flags = if data { PacketFlags(PacketFlags::DATA) } else { PacketFlags::default() };
        let idx = arena.alloc(Packet { size: 1500, flow, rank, flags, ..Default::default() });
        let mut fx = PortEffects::default();
        q.enqueue(now, idx, arena, &mut fx);
        let p = *arena.get(idx);
        // Drain at once so the buffer never limits these tests.
        while q.dequeue(now, arena).is_some() {}
        p
    }

    /// State: an empty period; events: data packets of 1, 2, then 4 distinct flows. Each
    /// packet carries (B + C RTT) / N for the flows seen so far.
    #[test]
    fn period_new_flows_lower_the_stamp_at_once() {
        let mut q = port();
        let mut a = PacketArena::new();
        assert_eq!(offer(&mut q, &mut a, Time::us(1), 7, 0, true).rank, 108_500);
        assert_eq!(offer(&mut q, &mut a, Time::us(2), 7, 0, true).rank, 108_500, "same flow: N = 1");
        assert_eq!(offer(&mut q, &mut a, Time::us(3), 8, 0, true).rank, 54_250);
        offer(&mut q, &mut a, Time::us(4), 9, 0, true);
        assert_eq!(offer(&mut q, &mut a, Time::us(5), 10, 0, true).rank, 27_125);
        assert_eq!(q.hook().active(), 4);
    }

    /// State: 4 flows in the last period; event: a new period where only one has sent yet.
    /// N stays 4 (the previous period's count); a period later with one flow it is 1; after
    /// an idle gap of more than a period the count restarts.
    #[test]
    fn period_end_keeps_the_previous_count_then_forgets_it() {
        let mut q = port();
        let mut a = PacketArena::new();
        for f in 0..4 {
            offer(&mut q, &mut a, Time::us(10), f, 0, true);
        }
        // The first period ends at 100 us; the next one starts at the packet (110 us).
        assert_eq!(offer(&mut q, &mut a, Time::us(110), 0, 0, true).rank, 27_125, "previous period had 4");
        assert_eq!(offer(&mut q, &mut a, Time::us(210), 0, 0, true).rank, 108_500, "previous period had 1");
        for f in 0..3 {
            offer(&mut q, &mut a, Time::us(250), f, 0, true);
        }
        assert_eq!(offer(&mut q, &mut a, Time::us(650), 5, 0, true).rank, 108_500, "idle gap: previous = 0");
    }

    /// State: 40 packets (60 KB = 480 us at 1 Gbps) queued when a period begins; the period
    /// lasts the base RTT plus that queueing delay, so flows sending once per (longer) round
    /// trip are all still counted 300 us later.
    #[test]
    fn period_with_standing_queue_lasts_base_rtt_plus_queueing_delay() {
        let inner = Box::new(PriorityEcn::new(Bytes(96_000), 1, vec![None], false));
        let mut q = WindowStamp::new(inner, Bytes(96_000), Rate::gbps(1), Time::us(100));
        let mut a = PacketArena::new();
        let mut fx = PortEffects::default();
        for f in 0..40 {
            let idx =
                a.alloc(Packet { size: 1500, flow: f, flags: PacketFlags(PacketFlags::DATA), ..Default::default() });
            q.enqueue(Time::us(1), idx, &mut a, &mut fx);
        }
        // A packet at 120 us begins the second period with 60 KB queued: it lasts 580 us.
        let idx = a.alloc(Packet { size: 1500, flow: 0, flags: PacketFlags(PacketFlags::DATA), ..Default::default() });
        q.enqueue(Time::us(120), idx, &mut a, &mut fx);
        assert_eq!(q.hook().len, Time::us(100) + Rate::gbps(1).tx_time(Bytes(60_000)));
        for f in 1..30 {
            let idx =
                a.alloc(Packet { size: 1500, flow: f, flags: PacketFlags(PacketFlags::DATA), ..Default::default() });
            q.enqueue(Time::us(400), idx, &mut a, &mut fx);
        }
        assert_eq!(q.hook().active(), 40, "still the previous period's 40 (the period has not ended)");
        let idx = a.alloc(Packet { size: 1500, flow: 0, flags: PacketFlags(PacketFlags::DATA), ..Default::default() });
        q.enqueue(Time::us(700), idx, &mut a, &mut fx);
        assert_eq!(q.hook().active(), 30, "the 580 us period saw 30 flows");
    }

    /// An earlier hop's smaller stamp is kept; control packets are not stamped or counted.
    #[test]
    fn stamp_is_the_minimum_along_the_path_and_skips_control() {
        let mut q = port();
        let mut a = PacketArena::new();
        assert_eq!(offer(&mut q, &mut a, Time::us(1), 1, 5_000, true).rank, 5_000);
        assert_eq!(offer(&mut q, &mut a, Time::us(2), 2, 200_000, true).rank, 54_250);
        assert_eq!(offer(&mut q, &mut a, Time::us(3), 3, 0, false).rank, 0, "control untouched");
        assert_eq!(q.hook().active(), 2, "control packets are not flows");
        assert_eq!(q.idle_passthrough(), 0);
    }

    /// 96 senders: w_max = 108 500 / 96 = 1130 B, below one segment (the receiver floors it).
    #[test]
    fn ninety_six_flows_give_less_than_one_segment() {
        let mut q = port();
        let mut a = PacketArena::new();
        let mut last = 0;
        for f in 0..96 {
            last = offer(&mut q, &mut a, Time::us(1), f, 0, true).rank;
        }
        assert_eq!(last, 1130);
    }
}
