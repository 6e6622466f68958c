//! ExpressPass credit rate limiting (Cho et al., "Credit-Scheduled Delay-Bounded Congestion
//! Control for Datacenters", SIGCOMM 2017, §3 "switch" and §4).
//!
//! What it models: an egress port where [`PacketFlags::CREDIT`] packets are limited to the
//! share of the link that the data they trigger will need in the reverse direction: one
//! credit per (credit + MTU data packet) transmission time, i.e. a share
//! credit_size / (credit_size + MTU) of the capacity (64 / 1564, about 4.1%, with this engine's sizes). Credits wait in
//! a small credit queue (ExpressPass: 8 credits); a credit arriving when that queue is full
//! is dropped (`credit_drop`), which is the congestion signal ExpressPass's feedback loop
//! reacts to. Every other packet uses strict-priority classes sharing the per-port buffer,
//! drop-tail, with optional DCTCP marking, as in [`super::priority::PriorityEcn`].
//!
//! Timer-free design. The engine asks a port for its next packet only when the link frees
//! or a packet arrives at an idle port; a policy cannot ask to be woken later. So:
//! - Each admitted credit gets a virtual release time on a shaper schedule:
//!   `release = max(now, previous release + interval)` with `interval` the transmission
//!   time of credit_size + MTU at the link rate. The credits still waiting at `now` are
//!   those whose release is later than `now`; an arriving credit is dropped when admitting
//!   it would put its release more than `credit_queue` intervals past `now`. These drop
//!   decisions are exactly those of a shaper with a `credit_queue`-credit buffer.
//! - On dequeue, a credit whose release time has come goes first (credits are tiny and
//!   ExpressPass serves them ahead of data); otherwise the highest data/control class is
//!   served. If *only* credits wait and none is due, the head credit is sent early (the
//!   port would otherwise idle with nobody to wake it), so spacing is exact while the port
//!   has other traffic and approximate on an otherwise idle link. The schedule itself is
//!   not shifted, so the long-run credit rate and the drop decisions stay exact.
//!
//! An exact shaper needs the engine to offer `QueueDisc::next_ready(now) -> Option<Time>`
//! and, in `start_tx`, to schedule a `TxDone` at that time when `dequeue` returns `None`
//! while the port is not empty. It also needs the port's link rate, which
//! [`CreditLimit::new`] takes as an argument (`queue::build` must pass it).
//!
//! Other choices: credits do not count against the shared data buffer (they have their own
//! queue); they are reported as class-0 occupancy. Per-packet work is O(1).

use super::priority::{ClassQueues, EcnMarker};
use super::{PortEffects, QueueDisc, DROP_OVERFLOW};
use crate::packet::{PacketArena, PacketFlags, PktIdx};
use crate::units::{Bytes, Rate, Time};
use std::collections::VecDeque;

/// Drop cause: a credit arrived when the port's credit queue was full.
pub const DROP_CREDIT: &str = "credit_drop";

/// ExpressPass switch credit-limiter parameters.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CreditConfig {
    /// Credit queue capacity in credits (ExpressPass: 8).
    pub credit_queue: u32,
    /// Wire size of a credit (CONVENTIONS.md: 64 B).
    #[serde(skip)]
    pub credit_size: Bytes,
    /// Largest data packet a credit triggers (the scenario MTU, 1500 B by default).
    #[serde(skip)]
    pub mtu: Bytes,
}

impl Default for CreditConfig {
    fn default() -> Self {
        CreditConfig { credit_queue: 8, credit_size: Bytes(64), mtu: Bytes(1500) }
    }
}

/// Strict-priority port with an ExpressPass credit rate limiter.
#[derive(Debug)]
pub struct CreditLimit {
    q: ClassQueues,
    buffer: u64,
    ecn: EcnMarker,
    /// Waiting credits with their release times.
    credits: VecDeque<(PktIdx, u32, Time)>,
    credit_bytes: u64,
    interval: Time,
    capacity: u64,
    last_release: Option<Time>,
}

impl CreditLimit {
    pub fn new(
        buffer: Bytes,
        classes: u8,
        cfg: &CreditConfig,
        ecn_k: &[Option<Bytes>],
        ecn_per_port: bool,
        link_rate: Rate,
    ) -> Self {
        let interval =
            if link_rate.0 == 0 { Time::ZERO } else { link_rate.tx_time(Bytes(cfg.credit_size.0 + cfg.mtu.0)) };
        CreditLimit {
            q: ClassQueues::new(classes),
            buffer: buffer.0,
            ecn: EcnMarker::new(ecn_k, ecn_per_port),
            credits: VecDeque::with_capacity(cfg.credit_queue as usize + 1),
            credit_bytes: 0,
            interval,
            capacity: cfg.credit_queue as u64,
            last_release: None,
        }
    }
    /// Time between two credit releases.
    pub fn interval(&self) -> Time {
        self.interval
    }
}

impl QueueDisc for CreditLimit {
    #[inline]
    fn enqueue(&mut self, now: Time, idx: PktIdx, pkts: &mut PacketArena, fx: &mut PortEffects) {
        let p = pkts.get_mut(idx);
        let size = p.size as u64;
        if p.flags.has(PacketFlags::CREDIT) {
            let release = match self.last_release {
                Some(t) => (t + self.interval).max(now),
                None => now,
            };
            if release.0 - now.0 > self.capacity * self.interval.0 {
                fx.drops.push((idx, DROP_CREDIT));
                return;
            }
            self.last_release = Some(release);
            self.credits.push_back((idx, size as u32, release));
            self.credit_bytes += size;
            return;
        }
        if self.q.total() + size > self.buffer {
            fx.drops.push((idx, DROP_OVERFLOW));
            return;
        }
        let c = self.q.class_of(p.prio);
        self.ecn.mark(&self.q, c, p);
        self.q.push_back(c, idx, size);
    }
    #[inline]
    fn dequeue(&mut self, now: Time, _pkts: &mut PacketArena) -> Option<(PktIdx, u32)> {
        let due = self.credits.front().is_some_and(|c| c.2 <= now);
        if due || self.q.total() == 0 {
            if let Some((idx, sz, _)) = self.credits.pop_front() {
                self.credit_bytes -= sz as u64;
                return Some((idx, sz));
            }
        }
        self.q.pop_highest()
    }
    fn bytes(&self) -> Bytes {
        Bytes(self.q.total() + self.credit_bytes)
    }
    fn queue_bytes(&self, prio: u8) -> Bytes {
        let c = self.q.class_of(prio);
        Bytes(self.q.class_bytes(c) + if c == 0 { self.credit_bytes } else { 0 })
    }
    fn classes(&self) -> u8 {
        self.q.classes()
    }
    fn is_empty(&self) -> bool {
        self.q.total() == 0 && self.credits.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;

    fn credit(a: &mut PacketArena) -> PktIdx {
        a.alloc(Packet { size: 64, flags: PacketFlags(PacketFlags::CREDIT), ..Default::default() })
    }
    fn data(a: &mut PacketArena) -> PktIdx {
        a.alloc(Packet {
            size: 1500,
            payload: 1460,
            prio: 1,
            flags: PacketFlags(PacketFlags::DATA),
            ..Default::default()
        })
    }
    fn port() -> CreditLimit {
        // 10 Gbps: (64 + 1500) B take 1251.2 ns -> interval 1_251_200 ps.
        CreditLimit::new(Bytes(200_000), 8, &CreditConfig::default(), &[], false, Rate::gbps(10))
    }

    #[test]
    fn burst_beyond_credit_queue_is_dropped() {
        let mut a = PacketArena::new();
        let mut q = port();
        assert_eq!(q.interval(), Time(1_251_200));
        let mut fx = PortEffects::default();
        // At one instant: the first credit is due now, 8 more fit in the credit queue
        // (release at now + 1..8 intervals), the 10th would be 9 intervals out.
        let ids: Vec<_> = (0..10).map(|_| credit(&mut a)).collect();
        for &i in &ids {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(fx.drops, vec![(ids[9], DROP_CREDIT)]);
        // Once time passes, the schedule frees a slot.
        let late = credit(&mut a);
        q.enqueue(q.interval(), late, &mut a, &mut fx);
        assert_eq!(fx.drops.len(), 1);
    }

    #[test]
    fn credits_are_spaced_while_data_waits() {
        let mut a = PacketArena::new();
        let mut q = port();
        let mut fx = PortEffects::default();
        let c: Vec<_> = (0..2).map(|_| credit(&mut a)).collect();
        let d: Vec<_> = (0..2).map(|_| data(&mut a)).collect();
        for &i in c.iter().chain(&d) {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        let iv = q.interval();
        assert_eq!(q.dequeue(Time(0), &mut a), Some((c[0], 64)), "first credit due at once");
        assert_eq!(q.dequeue(Time::ns(100), &mut a), Some((d[0], 1500)), "second credit not yet due");
        assert_eq!(q.dequeue(iv, &mut a), Some((c[1], 64)), "due after one interval");
        assert_eq!(q.dequeue(iv, &mut a), Some((d[1], 1500)));
        assert!(q.is_empty());
    }

    #[test]
    fn lone_credits_are_sent_early_without_shifting_the_schedule() {
        let mut a = PacketArena::new();
        let mut q = port();
        let mut fx = PortEffects::default();
        let c: Vec<_> = (0..3).map(|_| credit(&mut a)).collect();
        for &i in &c {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        let out: Vec<_> = std::iter::from_fn(|| q.dequeue(Time(0), &mut a).map(|x| x.0)).collect();
        assert_eq!(out, c);
        // The schedule still holds releases at 1 and 2 intervals: 6 more fit now, not 8.
        let more: Vec<_> = (0..7).map(|_| credit(&mut a)).collect();
        for &i in &more {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(fx.drops, vec![(more[6], DROP_CREDIT)]);
    }
}
