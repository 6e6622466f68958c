//! ExpressPass credit rate limiting (Cho et al., "Credit-Scheduled Delay-Bounded Congestion
//! Control for Datacenters", SIGCOMM 2017, §3 "switch" and §4).
//!
//! What it models: an egress port where [`PacketFlags::CREDIT`] packets are limited to the
//! share of the link that the data they trigger will need in the reverse direction: one
//! credit per (credit + MTU data packet) transmission time, i.e. a share
//! credit_size / (credit_size + MTU) of the capacity (the paper's 84 / (84 + 1538), about
//! 5%, counts Ethernet framing; with this engine's 64 B credits and 1500 B MTU it is
//! 64 / 1564, about 4.1%). `share` overrides it. Credits wait in a small credit queue
//! (ExpressPass: 8 credits); a credit arriving when that queue is full is dropped
//! (`credit_drop`), which is the congestion signal ExpressPass's feedback loop reacts to.
//! Every other packet uses strict-priority classes sharing the per-port buffer, drop-tail,
//! with optional DCTCP marking, as in [`super::priority::PriorityEcn`]; data is never
//! credit-limited.
//!
//! The shaper. Each admitted credit gets a release time on a virtual schedule:
//! `release = max(now, previous release + gap)`, `gap` being the transmission time of the
//! previous credit at the credit share of the link rate: `interval` (with the default
//! share, the time of credit_size + MTU at the link rate) for a credit of the nominal size
//! `network.ctrl_size`, proportionally more or less for a larger or smaller one (a byte
//! token bucket, as the authors' ns-2 switch; ExpressPass senders randomise credit sizes). A credit leaves at the first dequeue at or after its
//! release; credits go ahead of data (they are tiny and ExpressPass serves them first), data
//! takes the link while no credit is due. When only credits wait and none is due, `dequeue`
//! returns `None` and [`QueueDisc::next_ready`] gives the head credit's release time, at
//! which the engine wakes the port: credits alone leave exactly `interval` apart.
//!
//! Choices the paper leaves open:
//! - The schedule is virtual: when a due credit has to wait for a data packet in
//!   serialization (at most one MTU time), the next release is still counted from the
//!   scheduled one, not the late departure, so data never lowers the long-run credit rate.
//!   Two credits may then leave closer than `interval` (a momentary burst of 2, the token
//!   bucket depth of the authors' ns-2 switch, `max_tokens_` = 2 credits).
//! - Credits still waiting at `now` are those whose release lies after `now`; an arriving
//!   credit is dropped when admitting it would put its release more than `credit_queue`
//!   intervals after `now`, i.e. when `credit_queue` credits already wait for their slot.
//! - Credits do not count against the shared data buffer (they have their own queue);
//!   they are reported as class-0 occupancy. Per-packet work is O(1).
//! - Host NICs use this policy too when it is selected (`queue::build`), with an unlimited
//!   data buffer: the receiver's uplink is where all the credits for its downlink meet.
//!
//! # With Aeolus selective dropping (`network.credit.selective = true`)
//! ExpressPass + Aeolus (Aeolus §III-B, §V-B) needs ports that both limit credits and drop
//! *unscheduled* data above a tiny threshold. With `selective` on, a switch port applies
//! Aeolus' rule of [`super::selective`] to packets flagged [`PacketFlags::UNSCHEDULED`]
//! before admitting them: dropped (cause `selective_drop`) when the data occupancy they find
//! exceeds `network.selective.threshold` (6 KB by default), measured over the packet's class
//! queue, or over all data classes with `network.selective.per_port`. Waiting credits are
//! not counted (they sit in their own credit queue and are not data the unscheduled packet
//! would queue behind). Scheduled data, credits and control packets are unaffected. Host
//! NICs never drop data, so they ignore `selective`.
//!
//! # Push-out (`network.pushout_classes`)
//! As in [`super::priority::PriorityEcn`]: a data packet that does not fit in the full
//! buffer evicts the newest queued data of the lowest listed classes below its own (cause
//! `pushout`), and is dropped only if they cannot free enough. With Aeolus' low-priority
//! alternative (`transport.aeolus_mode = "low_priority"`, unscheduled packets in the lowest
//! class) and that class listed, unscheduled packets use only capacity that scheduled ones
//! leave idle and never take buffer from them: the "no interference" first RTT of the
//! idealised ExpressPass of Aeolus §II-C (Fig. 3). Waiting credits are never pushed out.

use super::priority::{ClassQueues, EcnMarker};
use super::selective::{SelectiveDropConfig, DROP_SELECTIVE};
use super::{PortEffects, QueueDisc, DROP_OVERFLOW};
use crate::packet::{PacketArena, PacketFlags, PktIdx};
use crate::units::{Bytes, Rate, Time};
use std::collections::VecDeque;

/// Drop cause: a credit arrived when the port's credit queue was full.
pub const DROP_CREDIT: &str = "credit_drop";

/// ExpressPass switch credit-limiter parameters.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CreditConfig {
    /// Credit queue capacity in credits (ExpressPass: 8).
    pub credit_queue: u32,
    /// Fraction of the link rate credits may use; None: credit_size / (credit_size + mtu)
    /// (ExpressPass §3: the data one credit triggers fills the rest of the reverse link).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// Also drop unscheduled packets above the Aeolus threshold of `[network.selective]`
    /// (switch ports only): ExpressPass + Aeolus.
    pub selective: bool,
    /// Wire size of a credit (docs/conventions.md: 64 B).
    #[serde(skip)]
    pub credit_size: Bytes,
    /// Largest data packet a credit triggers (the scenario MTU, 1500 B by default).
    #[serde(skip)]
    pub mtu: Bytes,
}

impl Default for CreditConfig {
    fn default() -> Self {
        CreditConfig { credit_queue: 8, share: None, selective: false, credit_size: Bytes(64), mtu: Bytes(1500) }
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
    /// Nominal credit size (the interval is one nominal credit's share of link time).
    credit_size: u64,
    /// Release time and size-proportional gap of the last admitted credit.
    last_release: Option<(Time, Time)>,
    /// Aeolus selective dropping: (threshold in bytes, measure over the whole port).
    selective: Option<(u64, bool)>,
    /// Bit c set: queued class-c data may be pushed out by a higher-class arrival
    /// (`network.pushout_classes`).
    pushout: u8,
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
        let interval = Self::interval_for(cfg, link_rate);
        CreditLimit {
            q: ClassQueues::new(classes),
            buffer: buffer.0,
            ecn: EcnMarker::new(ecn_k, ecn_per_port),
            credits: VecDeque::with_capacity((cfg.credit_queue as usize).saturating_add(1).min(64)),
            credit_bytes: 0,
            interval,
            capacity: cfg.credit_queue as u64,
            credit_size: cfg.credit_size.0,
            last_release: None,
            selective: None,
            pushout: 0,
        }
    }
    /// Add Aeolus selective dropping of unscheduled packets (see the module documentation).
    pub fn with_selective(mut self, cfg: &SelectiveDropConfig) -> Self {
        self.selective = Some((cfg.threshold.0, cfg.per_port));
        self
    }
    /// Let a data packet that does not fit push out queued data of the lower classes among
    /// `classes`, as the `priority_ecn` policy does (see below).
    pub fn with_pushout(mut self, classes: &[u8]) -> Self {
        self.pushout = super::priority::pushout_mask(classes);
        self
    }
    /// Time between two credit releases.
    pub fn interval(&self) -> Time {
        self.interval
    }
    /// Time between two credit releases on a link of `rate` under `cfg`.
    pub fn interval_for(cfg: &CreditConfig, rate: Rate) -> Time {
        if rate.0 == 0 {
            return Time::ZERO;
        }
        match cfg.share {
            None => rate.tx_time(Bytes(cfg.credit_size.0 + cfg.mtu.0)),
            Some(share) => {
                let ps = cfg.credit_size.0 as f64 * 8.0 * crate::units::PS_PER_S as f64 / (share * rate.0 as f64);
                Time(ps.ceil() as u64)
            }
        }
    }
}

impl QueueDisc for CreditLimit {
    #[inline]
    fn enqueue(&mut self, now: Time, idx: PktIdx, pkts: &mut PacketArena, fx: &mut PortEffects) {
        let p = pkts.get_mut(idx);
        let size = p.size as u64;
        if p.flags.has(PacketFlags::CREDIT) {
            let release = match self.last_release {
                Some((t, gap)) => (t + gap).max(now),
                None => now,
            };
            if release.0 - now.0 > self.capacity * self.interval.0 {
                fx.drops.push((idx, DROP_CREDIT));
                return;
            }
            // A credit uses link time in proportion to its size (a byte token bucket):
            // the nominal interval for a nominal-size credit.
            let gap = if size == self.credit_size {
                self.interval
            } else {
                Time((self.interval.0 as u128 * size as u128 / self.credit_size.max(1) as u128) as u64)
            };
            self.last_release = Some((release, gap));
            self.credits.push_back((idx, size as u32, release));
            self.credit_bytes += size;
            return;
        }
        let c = self.q.class_of(p.prio);
        if let Some((threshold, per_port)) = self.selective {
            if p.flags.has(PacketFlags::UNSCHEDULED) {
                let occ = if per_port { self.q.total() } else { self.q.class_bytes(c) };
                if occ > threshold {
                    fx.drops.push((idx, DROP_SELECTIVE));
                    return;
                }
            }
        }
        if self.q.total() + size > self.buffer
            && !(self.pushout != 0 && self.q.push_out(c, size, self.buffer, self.pushout, fx))
        {
            fx.drops.push((idx, DROP_OVERFLOW));
            return;
        }
        self.ecn.mark(&self.q, c, p);
        self.q.push_back(c, idx, size);
    }
    #[inline]
    fn dequeue(&mut self, now: Time, _pkts: &mut PacketArena) -> Option<(PktIdx, u32)> {
        if self.credits.front().is_some_and(|c| c.2 <= now) {
            let (idx, sz, _) = self.credits.pop_front().expect("a due credit");
            self.credit_bytes -= sz as u64;
            return Some((idx, sz));
        }
        self.q.pop_highest()
    }
    fn next_ready(&self, _now: Time) -> Option<Time> {
        self.credits.front().map(|c| c.2)
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

    /// A full 4500 B port holding three lowest-class (unscheduled, class 7) packets and one
    /// credit: a class-1 (scheduled) arrival evicts the newest class-7 packet and is queued;
    /// without push-out it is dropped. The credit is never a victim.
    #[test]
    fn full_port_with_pushout_evicts_lowest_class_data_for_scheduled_arrival() {
        for pushout in [false, true] {
            let mut a = PacketArena::new();
            let classes: &[u8] = if pushout { &[7] } else { &[] };
            let mut q = CreditLimit::new(Bytes(4500), 8, &CreditConfig::default(), &[], false, Rate::gbps(10))
                .with_pushout(classes);
            let mut fx = PortEffects::default();
            let low: Vec<_> = (0..3)
                .map(|_| {
                    let i = data(&mut a);
                    a.get_mut(i).prio = 7;
                    i
                })
                .collect();
            let c = credit(&mut a);
            for &i in low.iter().chain([&c]) {
                q.enqueue(Time(0), i, &mut a, &mut fx);
            }
            assert!(fx.drops.is_empty());
            let sched = data(&mut a);
            q.enqueue(Time(0), sched, &mut a, &mut fx);
            if pushout {
                assert_eq!(fx.drops, vec![(low[2], crate::queue::priority::DROP_PUSHOUT)]);
                assert_eq!(q.bytes(), Bytes(4500 + 64));
                assert_eq!(q.dequeue(Time(0), &mut a), Some((c, 64)));
                assert_eq!(q.dequeue(Time(0), &mut a), Some((sched, 1500)), "scheduled first");
            } else {
                assert_eq!(fx.drops, vec![(sched, DROP_OVERFLOW)]);
            }
        }
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
    fn lone_credits_wait_for_their_release() {
        let mut a = PacketArena::new();
        let mut q = port();
        let mut fx = PortEffects::default();
        let iv = q.interval();
        let c: Vec<_> = (0..3).map(|_| credit(&mut a)).collect();
        for &i in &c {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(q.dequeue(Time(0), &mut a), Some((c[0], 64)));
        // The next credit is not due: nothing leaves, and the port is told when to ask again.
        assert_eq!(q.dequeue(Time(0), &mut a), None);
        assert_eq!(q.next_ready(Time(0)), Some(iv));
        assert_eq!(q.dequeue(iv - Time(1), &mut a), None);
        assert_eq!(q.dequeue(iv, &mut a), Some((c[1], 64)));
        assert_eq!(q.next_ready(iv), Some(iv * 2));
        assert_eq!(q.dequeue(iv * 2, &mut a), Some((c[2], 64)));
        assert_eq!(q.next_ready(iv * 2), None);
        assert!(q.is_empty());
    }

    #[test]
    fn credits_offered_above_the_share_are_dropped_down_to_it() {
        // Credits arrive every interval / 2 (twice the share) for 2000 intervals while the
        // port serves them as they come due: the port passes one per interval, drops the
        // rest once its 8-credit queue has filled.
        let mut a = PacketArena::new();
        let mut q = port();
        let mut fx = PortEffects::default();
        let iv = q.interval();
        let mut sent = Vec::new();
        let n = 4000u64;
        for k in 0..n {
            let now = Time(k * iv.0 / 2);
            let c = credit(&mut a);
            q.enqueue(now, c, &mut a, &mut fx);
            while let Some((i, _)) = q.dequeue(now, &mut a) {
                sent.push((now, i));
            }
        }
        let dropped = fx.drops.iter().filter(|d| d.1 == DROP_CREDIT).count() as u64;
        assert_eq!(dropped + sent.len() as u64 + q.credits.len() as u64, n);
        assert_eq!(q.credits.len(), 8, "the credit queue stays full");
        // Served at exactly the share: one per interval from t = 0.
        assert_eq!(sent.len() as u64, n / 2, "one credit per interval");
        for w in sent.windows(2) {
            assert_eq!(w[1].0 - w[0].0, iv);
        }
        assert_eq!(dropped, n - sent.len() as u64 - 8);
    }

    #[test]
    fn a_credit_uses_link_time_in_proportion_to_its_size() {
        // Credits of 56 and 72 B (ExpressPass randomises credit sizes): the slot after each
        // is its size at the credit share, 56/64 and 72/64 of the nominal interval.
        let mut a = PacketArena::new();
        let mut q = port();
        let mut fx = PortEffects::default();
        let iv = q.interval();
        let mk = |a: &mut PacketArena, size| {
            a.alloc(Packet { size, flags: PacketFlags(PacketFlags::CREDIT), ..Default::default() })
        };
        let c: Vec<_> = [56, 72, 64].into_iter().map(|s| mk(&mut a, s)).collect();
        for &i in &c {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(q.dequeue(Time(0), &mut a), Some((c[0], 56)));
        let t1 = Time(iv.0 * 56 / 64);
        assert_eq!(q.next_ready(Time(0)), Some(t1));
        assert_eq!(q.dequeue(t1, &mut a), Some((c[1], 72)));
        assert_eq!(q.next_ready(t1), Some(t1 + Time(iv.0 * 72 / 64)));
    }

    #[test]
    fn selective_dropping_of_unscheduled_data_while_credits_stay_shaped() {
        // ExpressPass + Aeolus port: 5 scheduled packets (7.5 KB > 6 KB) and 3 credits wait.
        let mut a = PacketArena::new();
        let mut q = port().with_selective(&SelectiveDropConfig::default());
        let mut fx = PortEffects::default();
        let un = |a: &mut PacketArena| {
            let i = data(a);
            a.get_mut(i).flags.set(PacketFlags::UNSCHEDULED);
            i
        };
        // Below the threshold an unscheduled packet is admitted (0 B of data waiting) ...
        let u0 = un(&mut a);
        q.enqueue(Time(0), u0, &mut a, &mut fx);
        let c: Vec<_> = (0..3).map(|_| credit(&mut a)).collect();
        for &i in &c {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        let s: Vec<_> = (0..4).map(|_| data(&mut a)).collect();
        for &i in &s {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert!(fx.drops.is_empty());
        assert_eq!(q.bytes(), Bytes(5 * 1500 + 3 * 64));
        // ... above it (7.5 KB of data; the 192 B of credits do not count) it is dropped,
        // while a scheduled packet is still queued.
        let u1 = un(&mut a);
        q.enqueue(Time(0), u1, &mut a, &mut fx);
        assert_eq!(fx.drops, vec![(u1, DROP_SELECTIVE)]);
        let s5 = data(&mut a);
        q.enqueue(Time(0), s5, &mut a, &mut fx);
        assert_eq!(fx.drops.len(), 1, "scheduled data is never selectively dropped");
        // Credits still leave one interval apart, data in between.
        let iv = q.interval();
        assert_eq!(q.dequeue(Time(0), &mut a), Some((c[0], 64)));
        assert_eq!(q.dequeue(Time(0), &mut a), Some((u0, 1500)));
        assert_eq!(q.dequeue(Time(1), &mut a), Some((s[0], 1500)));
        assert_eq!(q.dequeue(iv, &mut a), Some((c[1], 64)));
        assert_eq!(q.dequeue(iv, &mut a), Some((s[1], 1500)));
        assert_eq!(q.dequeue(iv * 2, &mut a), Some((c[2], 64)));
        // The same port without `selective` admits unscheduled packets up to the buffer.
        let mut plain = port();
        for _ in 0..6 {
            let s = data(&mut a);
            plain.enqueue(Time(0), s, &mut a, &mut fx);
        }
        let u2 = un(&mut a);
        plain.enqueue(Time(0), u2, &mut a, &mut fx);
        assert_eq!(fx.drops.len(), 1);
        assert_eq!(plain.bytes(), Bytes(7 * 1500));
    }

    #[test]
    fn a_configured_share_sets_the_interval() {
        let cfg = CreditConfig { share: Some(0.05), ..Default::default() };
        // 64 B at 5% of 10 Gbps = 64 B at 500 Mbps = 1.024 us.
        assert_eq!(CreditLimit::interval_for(&cfg, Rate::gbps(10)), Time(1_024_000));
        assert_eq!(CreditLimit::interval_for(&CreditConfig::default(), Rate::gbps(100)), Time(125_120));
    }
}
