//! RPO cross-queue ECN marking (RPO, "receiver-driven transport with opportunistic
//! packets", §III-A(2) and §III-B "Cross-queue Congestion Feedback").
//!
//! What it models: a strict-priority switch port where *normal* packets (high priority)
//! and *opportunistic* packets ([`PacketFlags::OPPORTUNISTIC`], low priority) wait in
//! separate classes. While the opportunistic backlog exceeds a threshold k, every normal
//! data packet *leaving* the port is marked CE, so the receiver echoes the congestion of
//! the low-priority queue in its grants and senders stop emitting opportunistic packets.
//! Admission is drop-tail on the shared per-port buffer; optional DCTCP marking on enqueue
//! (K per class) and RPO's optional small drop threshold for normal data packets (§III-A:
//! "1 packet") are available.
//!
//! Two modes for k:
//! - fixed (default): k is a configured byte count.
//! - adaptive (the paper's rule k = (C - C_d) x t / MSS): every period t (RPO: one RTT,
//!   50 us) the port measures C_d, the output rate of normal (non-opportunistic) packets,
//!   and sets k to the bytes the spare capacity carries in t. It needs the port's link rate
//!   C: [`CrossMark::new`] takes it as `link_rate` (`queue::build` passes the rate of the
//!   port's [`super::PortCtx`]), and the adaptive mode falls back to the fixed k when it is
//!   `None`.
//!
//! Choices the paper leaves open, and ours:
//! - Units: k is kept in bytes; the paper's k in packets equals k_bytes / MSS, so
//!   (C - C_d) x t / MSS packets is (C - C_d) x t / 8 bytes and no MSS parameter is needed.
//!   The low-priority "queue length" is the bytes of OPPORTUNISTIC packets waiting at the
//!   port, whichever class they are in (tracked in O(1) at enqueue/dequeue), so the rule
//!   does not depend on how a transport maps opportunistic packets to classes.
//! - Which packets are marked: packets leaving the port that carry DATA, are not
//!   OPPORTUNISTIC and are ECN-capable (ECT). Not-ECT packets cannot carry CE; control
//!   packets (grants) are not "normal packets" in the paper's sense.
//! - Comparison: strictly greater than k ("exceeds"), like DCTCP marking here.
//! - Adaptive update: lazy, at the first dequeue at or after the end of the current period
//!   (no timers). C_d = normal bytes sent / elapsed time of the closing window (which may
//!   be longer than t if the port was idle); k = max(0, C x t / 8 - C_d x t / 8). Before
//!   the first window closes k = C x t / 8 (no normal traffic observed yet). Normal bytes
//!   counted for C_d include control packets: they use capacity opportunistic packets
//!   cannot.
//! - The normal-packet drop threshold (`drop_threshold`) compares the arriving normal data
//!   packet's own class backlog with the threshold (strictly greater), cause
//!   `rpo_normal_drop`; it is off by default because it only makes sense with RPO's
//!   loss recovery.
//! - The same rule restricted to normal data packets flagged
//!   [`PacketFlags::UNSCHEDULED`] (`unscheduled_threshold`, default one 1500 B packet): the
//!   paper justifies its small drop threshold with Aeolus, which drops only packets sent
//!   before any grant, so the RPO transport flags its first-RTT packets and granted normal
//!   packets are dropped only on buffer overflow (the transport's `normal_drop` chooses).
//!   Transports that flag nothing are not affected.
//!
//! Checked against the paper (§IV-B) and extended:
//! - **t** (`period`): the paper updates k every round-trip time; without a value a
//!   scenario with `queue_policy = "rpo_crossmark"` sets the network's largest base RTT
//!   ([`CrossMarkConfig::period`] is then filled in and shown in the normalized scenario;
//!   other policies get [`DEFAULT_PERIOD`], the former fixed default, so their normalized
//!   scenarios and fingerprints are unchanged). A port built without one uses
//!   [`DEFAULT_PERIOD`].
//! - **Packets or bytes** (`count_packets`): the paper's k is a number of packets,
//!   (C - C_d) x t / MSS, compared with the number of opportunistic packets waiting. With
//!   `count_packets = true` the port counts opportunistic packets and marks while
//!   count x MSS > k_bytes, i.e. count > (C - C_d) x t / MSS exactly (no rounding), MSS
//!   being the network's `mtu - header` (set by the scenario). The default compares bytes
//!   (k_bytes with the opportunistic bytes waiting), as before.
//!
//! Per-packet work is O(1).

use super::priority::{ClassQueues, EcnMarker};
use super::{PortEffects, QueueDisc, DROP_OVERFLOW};
use crate::packet::{Ecn, PacketArena, PacketFlags, PktIdx};
use crate::units::{Bytes, Rate, Time};

/// Drop cause: a normal data packet arrived above RPO's small high-priority threshold.
pub const DROP_RPO_NORMAL: &str = "rpo_normal_drop";

/// Update period of the adaptive rule for a port built without one (the RPO testbed's RTT).
pub const DEFAULT_PERIOD: Time = Time::us(50);

/// RPO cross-queue marking parameters.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CrossMarkConfig {
    /// Fixed cross-queue marking threshold k on the opportunistic backlog. The paper uses
    /// only the adaptive rule; the default (8 packets of 1.5 KB) is ours.
    pub k: Bytes,
    /// Use k = (C - C_d) x t (needs the port's link rate; else falls back to `k`).
    pub adaptive: bool,
    /// Update period t of the adaptive rule (RPO: one RTT). `None`: the scenario sets the
    /// network's largest base RTT; a port built without one uses [`DEFAULT_PERIOD`].
    pub period: Option<Time>,
    /// Count the opportunistic backlog in packets of `mss` (the paper's unit) instead of bytes.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub count_packets: bool,
    /// RPO's drop threshold for normal data packets (paper: 1 packet); None = off.
    pub drop_threshold: Option<Bytes>,
    /// The same threshold for normal data packets flagged `UNSCHEDULED` only (RPO's first-RTT
    /// packets); None = off. Left out of the normalized scenario at its default.
    #[serde(skip_serializing_if = "is_default_unscheduled")]
    pub unscheduled_threshold: Option<Bytes>,
    /// MSS of `count_packets` (set by the scenario from the network: `mtu - header`).
    #[serde(skip)]
    pub mss: Bytes,
}

fn is_default_unscheduled(v: &Option<Bytes>) -> bool {
    *v == CrossMarkConfig::default().unscheduled_threshold
}

impl Default for CrossMarkConfig {
    fn default() -> Self {
        CrossMarkConfig {
            k: Bytes(12_000),
            adaptive: false,
            period: None,
            count_packets: false,
            drop_threshold: None,
            unscheduled_threshold: Some(Bytes(1500)),
            mss: Bytes(1460),
        }
    }
}

/// Strict-priority port with RPO cross-queue ECN marking.
#[derive(Debug)]
pub struct CrossMark {
    q: ClassQueues,
    buffer: u64,
    ecn: EcnMarker,
    drop_threshold: u64,
    unsched_threshold: u64,
    /// Current cross-queue threshold (bytes of opportunistic backlog).
    k: u64,
    /// Opportunistic bytes waiting.
    opp: u64,
    /// Opportunistic packets waiting, and the MSS they count for (`count_packets`; 0 = bytes).
    opp_pkts: u64,
    mss: u64,
    adaptive: Option<Adaptive>,
}

#[derive(Debug)]
struct Adaptive {
    rate: Rate,
    period: Time,
    window_start: Time,
    normal_bytes: u64,
}

impl CrossMark {
    pub fn new(
        buffer: Bytes,
        classes: u8,
        cfg: &CrossMarkConfig,
        ecn_k: &[Option<Bytes>],
        ecn_per_port: bool,
        link_rate: Option<Rate>,
    ) -> Self {
        let period = cfg.period.unwrap_or(DEFAULT_PERIOD);
        let adaptive = match (cfg.adaptive, link_rate) {
            (true, Some(rate)) if rate.0 > 0 && period.0 > 0 => {
                Some(Adaptive { rate, period, window_start: Time::ZERO, normal_bytes: 0 })
            }
            _ => None,
        };
        let k0 = match &adaptive {
            Some(a) => a.rate.bytes_in(a.period).0,
            None => cfg.k.0,
        };
        CrossMark {
            q: ClassQueues::new(classes),
            buffer: buffer.0,
            ecn: EcnMarker::new(ecn_k, ecn_per_port),
            drop_threshold: cfg.drop_threshold.map(|b| b.0).unwrap_or(u64::MAX),
            unsched_threshold: cfg.unscheduled_threshold.map(|b| b.0).unwrap_or(u64::MAX),
            k: k0,
            opp: 0,
            opp_pkts: 0,
            mss: if cfg.count_packets { cfg.mss.0.max(1) } else { 0 },
            adaptive,
        }
    }
    /// The cross-queue threshold currently in force (bytes).
    pub fn current_k(&self) -> Bytes {
        Bytes(self.k)
    }
    /// Opportunistic bytes waiting.
    pub fn opportunistic_bytes(&self) -> Bytes {
        Bytes(self.opp)
    }
    /// The opportunistic backlog as the marking rule measures it: bytes, or (with
    /// `count_packets`) the packet count x MSS, to compare with k in bytes.
    #[inline]
    fn backlog(&self) -> u64 {
        if self.mss == 0 {
            self.opp
        } else {
            self.opp_pkts * self.mss
        }
    }
}

impl QueueDisc for CrossMark {
    #[inline]
    fn enqueue(&mut self, _now: Time, idx: PktIdx, pkts: &mut PacketArena, fx: &mut PortEffects) {
        let p = pkts.get_mut(idx);
        let size = p.size as u64;
        let c = self.q.class_of(p.prio);
        let opportunistic = p.flags.has(PacketFlags::OPPORTUNISTIC);
        if !opportunistic && p.flags.has(PacketFlags::DATA) {
            let threshold = if p.flags.has(PacketFlags::UNSCHEDULED) {
                self.drop_threshold.min(self.unsched_threshold)
            } else {
                self.drop_threshold
            };
            if self.q.class_bytes(c) > threshold {
                fx.drops.push((idx, DROP_RPO_NORMAL));
                return;
            }
        }
        if self.q.total() + size > self.buffer {
            fx.drops.push((idx, DROP_OVERFLOW));
            return;
        }
        self.ecn.mark(&self.q, c, p);
        if opportunistic {
            self.opp += size;
            self.opp_pkts += 1;
        }
        self.q.push_back(c, idx, size);
    }
    #[inline]
    fn dequeue(&mut self, now: Time, pkts: &mut PacketArena) -> Option<(PktIdx, u32)> {
        if let Some(a) = &mut self.adaptive {
            let elapsed = now.0.saturating_sub(a.window_start.0);
            if elapsed >= a.period.0 {
                // C x t and C_d x t, in bytes; C_d = normal_bytes / elapsed.
                let full = a.rate.bytes_in(a.period).0 as u128;
                let used = a.normal_bytes as u128 * a.period.0 as u128 / elapsed as u128;
                self.k = full.saturating_sub(used) as u64;
                a.window_start = now;
                a.normal_bytes = 0;
            }
        }
        let (idx, sz) = self.q.pop_highest()?;
        let p = pkts.get_mut(idx);
        if p.flags.has(PacketFlags::OPPORTUNISTIC) {
            self.opp -= sz as u64;
            self.opp_pkts -= 1;
        } else {
            if let Some(a) = &mut self.adaptive {
                a.normal_bytes += sz as u64;
            }
            if p.flags.has(PacketFlags::DATA) && p.ecn == Ecn::Ect && self.backlog() > self.k {
                p.ecn = Ecn::Ce;
            }
        }
        Some((idx, sz))
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;

    fn normal(a: &mut PacketArena) -> PktIdx {
        let flags = PacketFlags(PacketFlags::DATA);
        a.alloc(Packet { size: 1500, payload: 1460, prio: 0, flags, ecn: Ecn::Ect, ..Default::default() })
    }
    fn opportunistic(a: &mut PacketArena) -> PktIdx {
        let flags = PacketFlags(PacketFlags::DATA | PacketFlags::OPPORTUNISTIC);
        a.alloc(Packet { size: 1500, payload: 1460, prio: 7, flags, ecn: Ecn::Ect, ..Default::default() })
    }
    fn fixed(k: u64) -> CrossMark {
        let cfg = CrossMarkConfig { k: Bytes(k), ..Default::default() };
        CrossMark::new(Bytes(1_000_000), 8, &cfg, &[], false, None)
    }

    #[test]
    fn normal_packets_marked_on_dequeue_while_opportunistic_backlog_exceeds_k() {
        let mut a = PacketArena::new();
        let mut q = fixed(3000);
        let mut fx = PortEffects::default();
        // Three opportunistic packets (4500 B > 3000 B) and two normal packets.
        let o: Vec<_> = (0..3).map(|_| opportunistic(&mut a)).collect();
        let n: Vec<_> = (0..2).map(|_| normal(&mut a)).collect();
        for &i in o.iter().chain(&n) {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert!(n.iter().all(|&i| a.get(i).ecn == Ecn::Ect), "not marked on enqueue");
        assert_eq!(q.dequeue(Time(0), &mut a), Some((n[0], 1500)));
        assert_eq!(a.get(n[0]).ecn, Ecn::Ce);
        // Opportunistic packets drain only after normal ones (strict priority) and are
        // themselves never cross-marked.
        assert_eq!(q.dequeue(Time(0), &mut a), Some((n[1], 1500)));
        assert_eq!(a.get(n[1]).ecn, Ecn::Ce);
        assert_eq!(q.dequeue(Time(0), &mut a), Some((o[0], 1500)));
        assert!(o.iter().all(|&i| a.get(i).ecn == Ecn::Ect));
        assert_eq!(q.opportunistic_bytes(), Bytes(3000));
        // Backlog now 3000 B, not above k: a new normal packet leaves unmarked.
        let n2 = normal(&mut a);
        q.enqueue(Time(0), n2, &mut a, &mut fx);
        assert_eq!(q.dequeue(Time(0), &mut a), Some((n2, 1500)));
        assert_eq!(a.get(n2).ecn, Ecn::Ect);
    }

    #[test]
    fn not_ect_and_control_packets_are_not_marked() {
        let mut a = PacketArena::new();
        let mut q = fixed(0);
        let mut fx = PortEffects::default();
        let o = opportunistic(&mut a);
        let grant = a.alloc(Packet { size: 64, ecn: Ecn::Ect, ..Default::default() });
        let plain = a.alloc(Packet { size: 1500, flags: PacketFlags(PacketFlags::DATA), ..Default::default() });
        for i in [o, grant, plain] {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        q.dequeue(Time(0), &mut a);
        q.dequeue(Time(0), &mut a);
        assert_eq!(a.get(grant).ecn, Ecn::Ect);
        assert_eq!(a.get(plain).ecn, Ecn::NotEct);
    }

    #[test]
    fn adaptive_k_follows_spare_capacity() {
        // 1 Gbps, t = 12 us: C x t = 1500 B. Start: k = 1500 B (no normal traffic seen).
        let mut a = PacketArena::new();
        let cfg = CrossMarkConfig { adaptive: true, period: Some(Time::us(12)), ..Default::default() };
        let mut q = CrossMark::new(Bytes(1_000_000), 8, &cfg, &[], false, Some(Rate::gbps(1)));
        let mut fx = PortEffects::default();
        assert_eq!(q.current_k(), Bytes(1500));
        // One normal packet (1500 B) leaves in the first window: the link was full of
        // normal traffic, so at the next window k drops to 0.
        let n = normal(&mut a);
        q.enqueue(Time(0), n, &mut a, &mut fx);
        q.dequeue(Time::us(1), &mut a);
        let n2 = normal(&mut a);
        q.enqueue(Time::us(12), n2, &mut a, &mut fx);
        q.dequeue(Time::us(12), &mut a);
        assert_eq!(q.current_k(), Bytes(0));
        // The second window (12-30 us) carried 1500 B of normal traffic in 18 us.
        let o = opportunistic(&mut a);
        q.enqueue(Time::us(30), o, &mut a, &mut fx);
        q.dequeue(Time::us(30), &mut a);
        assert_eq!(q.current_k(), Bytes(500), "1500 B over 18 us: C_d = 2/3 C, k = C x t / 3");
        // The third window (30-60 us) carried no normal traffic: k returns to C x t.
        let o2 = opportunistic(&mut a);
        q.enqueue(Time::us(60), o2, &mut a, &mut fx);
        q.dequeue(Time::us(60), &mut a);
        assert_eq!(q.current_k(), Bytes(1500));
        // Without a link rate the adaptive mode falls back to the fixed k.
        let q2 = CrossMark::new(Bytes(1_000_000), 8, &cfg, &[], false, None);
        assert_eq!(q2.current_k(), cfg.k);
    }

    #[test]
    fn rpo_normal_drop_threshold() {
        let mut a = PacketArena::new();
        let cfg = CrossMarkConfig { drop_threshold: Some(Bytes(1500)), ..Default::default() };
        let mut q = CrossMark::new(Bytes(1_000_000), 8, &cfg, &[], false, None);
        let mut fx = PortEffects::default();
        let n: Vec<_> = (0..3).map(|_| normal(&mut a)).collect();
        let o: Vec<_> = (0..3).map(|_| opportunistic(&mut a)).collect();
        for &i in n.iter().chain(&o) {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(fx.drops, vec![(n[2], DROP_RPO_NORMAL)], "0 and 1500 B ahead admitted; 3000 B dropped");
    }
    /// k = (C - C_d) x t / MSS by hand: C = 10 Gbps, t = 50 us, so C x t = 62,500 B. The
    /// first window carries 24,500 B of normal packets, so C_d x t = 24,500 B and
    /// k = 38,000 B = 26.03 packets of 1460 B. Counting packets (the paper's unit), 26
    /// opportunistic packets waiting (26 x 1460 = 37,960 B) do not exceed k and 27 do;
    /// counting bytes, 26 packets of 1500 B (39,000 B) already do.
    #[test]
    fn adaptive_k_in_packets_matches_hand_computed_threshold() {
        let run = |count_packets: bool| {
            let mut a = PacketArena::new();
            let cfg =
                CrossMarkConfig { adaptive: true, period: Some(Time::us(50)), count_packets, ..Default::default() };
            let mut q = CrossMark::new(Bytes(10_000_000), 8, &cfg, &[], false, Some(Rate::gbps(10)));
            let mut fx = PortEffects::default();
            assert_eq!(q.current_k(), Bytes(62_500), "before any measurement: C x t");
            let big = a.alloc(Packet {
                size: 24_500,
                prio: 0,
                flags: PacketFlags(PacketFlags::DATA),
                ecn: Ecn::Ect,
                ..Default::default()
            });
            q.enqueue(Time(0), big, &mut a, &mut fx);
            q.dequeue(Time(0), &mut a);
            for _ in 0..26 {
                let o = opportunistic(&mut a);
                q.enqueue(Time::us(1), o, &mut a, &mut fx);
            }
            let n2 = normal(&mut a);
            q.enqueue(Time::us(50), n2, &mut a, &mut fx);
            assert_eq!(q.dequeue(Time::us(50), &mut a), Some((n2, 1500)));
            assert_eq!(q.current_k(), Bytes(38_000));
            let o = opportunistic(&mut a);
            q.enqueue(Time::us(50), o, &mut a, &mut fx);
            let n3 = normal(&mut a);
            q.enqueue(Time::us(50), n3, &mut a, &mut fx);
            q.dequeue(Time::us(50), &mut a);
            (a.get(n2).ecn, a.get(n3).ecn)
        };
        assert_eq!(run(true), (Ecn::Ect, Ecn::Ce), "26 packets <= 26.03 < 27 packets");
        assert_eq!(run(false), (Ecn::Ce, Ecn::Ce), "39,000 B > 38,000 B");
        // A port built without a period uses the default one.
        let cfg = CrossMarkConfig { adaptive: true, ..Default::default() };
        let q = CrossMark::new(Bytes(1_000_000), 8, &cfg, &[], false, Some(Rate::gbps(10)));
        assert_eq!(q.current_k(), Rate::gbps(10).bytes_in(DEFAULT_PERIOD));
    }

    #[test]
    fn unscheduled_normal_packets_dropped_above_one_packet_others_only_on_overflow() {
        let mut a = PacketArena::new();
        let mut q = CrossMark::new(Bytes(6000), 8, &CrossMarkConfig::default(), &[], false, None);
        let mut fx = PortEffects::default();
        let unsched = |a: &mut PacketArena| {
            let flags = PacketFlags(PacketFlags::DATA | PacketFlags::UNSCHEDULED);
            a.alloc(Packet { size: 1500, prio: 1, flags, ecn: Ecn::Ect, ..Default::default() })
        };
        let u: Vec<_> = (0..3).map(|_| unsched(&mut a)).collect();
        for &i in &u {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(fx.drops, vec![(u[2], DROP_RPO_NORMAL)], "0 and 1500 B ahead admitted; 3000 B dropped");
        // A granted normal packet in the same class is admitted up to the buffer.
        let mut n = |a: &mut PacketArena| {
            let i =
                a.alloc(Packet { size: 1500, prio: 1, flags: PacketFlags(PacketFlags::DATA), ..Default::default() });
            q.enqueue(Time(0), i, a, &mut fx);
            i
        };
        n(&mut a);
        n(&mut a);
        let third = n(&mut a);
        assert_eq!(fx.drops[1..], [(third, DROP_OVERFLOW)], "6000 B buffer full");
    }
}
