//! NDP payload trimming (Handley et al., "Re-architecting Datacenter Networks and Stacks for
//! Low Latency and High Performance", SIGCOMM 2017, §3.1 "switch service model").
//!
//! What it models: an NDP switch egress port with two queues. The *data queue* holds at
//! most `trim_threshold` MTU-sized packets' worth of bytes (NDP: 8 packets, 72 KB with its
//! 9 KB MTU, as the Aeolus paper states it). A data packet carrying
//! [`PacketFlags::TRIMMABLE`] that finds the data queue full is not dropped: its payload is
//! cut and the remaining header (flag [`PacketFlags::TRIMMED`] set, `payload = 0`, wire size
//! `header_size`, priority class 0) joins the *header queue*, which also carries every
//! control packet (ACK, NACK, PULL, credit, any packet without `DATA`) and headers trimmed
//! upstream. Each trim is counted in [`PortEffects::trims`]. Headers are served ahead of
//! data, with a weighted round-robin so that data still drains under a header storm.
//!
//! Choices the paper leaves open (or that depend on the engine), and ours:
//! - Threshold semantics: the data queue holds at most `trim_threshold` x MTU bytes; a data
//!   packet that would take it beyond that is trimmed. The threshold is given in packets, as
//!   the papers give it, but measured in bytes, as a switch's queue is (NDP's own simulator
//!   compares the queued bytes plus the arriving packet's size with the queue's byte size):
//!   a queue of small packets (a workload of tiny RPCs, or the short last packets of flows)
//!   holds more of them than eight. The shared per-port byte buffer also applies: a data
//!   packet that would overflow it is trimmed as well.
//! - Which packet is trimmed (NDP §3.1: a switch that always trimmed the arriving packet
//!   would let periodic senders lock into phase with the queue and be trimmed every time,
//!   so the NDP switch trims either the arriving packet or the packet at the tail of the
//!   data queue, with equal probability; NDP's own simulator, htsim, draws the coin on
//!   every data packet that finds the data queue full). The probability of trimming the
//!   tail is `tail_trim_probability` (default 0.5, NDP's; 0 = always the arriving packet,
//!   the rule before this option existed). The coin comes from the port's own random
//!   stream ([`super::PortCtx::rng`], derived from the scenario seed and the port id), drawn
//!   once per trimmable packet that finds the data queue full, so runs stay deterministic.
//!   When the tail is chosen it leaves the data queue, is cut to a header and joins the
//!   header queue's tail (as an arriving header would, served ahead of the data it was
//!   queued behind), and the arriving packet takes its place at the data queue's tail.
//!   The tail is trimmed only if that makes room for the arriving packet (in the data
//!   queue and in the port buffer, which gains the tail's payload back) and the tail is
//!   itself trimmable; otherwise the arriving packet is trimmed whatever the coin said.
//!   htsim assumes equal-sized packets, where one tail always makes room; with a byte
//!   threshold a short tail (a flow's last packet) can free less than a full arrival needs,
//!   and we then trim only the arriving packet rather than several queued ones.
//! - Header queue full: the header queue has no separate limit; it shares the port buffer
//!   with the data queue. A header or control packet that does not fit in the remaining
//!   buffer is dropped with cause `header_overflow` (NDP drops headers only in this
//!   pathological case; the sender then relies on its timeout). NDP's own simulator differs
//!   here in two ways we do not model: it caps the header queue separately (at the data
//!   queue's byte size), and it returns an overflowing header to its sender
//!   ("return-to-sender") instead of dropping it when the packet carries a reverse route.
//! - Non-trimmable data (no `TRIMMABLE` flag) finding the data queue full is dropped with
//!   the ordinary `buffer_overflow` cause.
//! - Weighted round-robin: when both queues are backlogged, up to `header_weight` headers
//!   are served for every data packet (counted in packets; default 10, the ratio the
//!   original NDP simulator uses). `header_weight = 0` means strict priority for headers.
//!   When only one queue is backlogged it is served (work conserving). Our count is of
//!   headers served since the last data packet, including headers served while the data
//!   queue was empty; NDP's simulator advances its 10:1 cycle only while both queues are
//!   backlogged. The two differ only in which slot of the cycle a newly backlogged data
//!   queue starts at.
//! - The trimmed header keeps `seq`, `flow` and the other transport fields (the receiver
//!   needs them to NACK and pull) and keeps `DATA` with payload 0, so the runner's payload
//!   accounting sees no bytes; its priority class becomes 0 so that downstream
//!   strict-priority ports (and NICs) also serve it first.
//! - No ECN marking: NDP does not use it.
//! - Occupancy reported per class: class 0 is the header queue, every other class reports
//!   the data queue (`classes() == 2`).
//!
//! Per-packet work is O(1).

use super::priority::ClassQueues;
use super::{PortEffects, QueueDisc, DROP_OVERFLOW};
use crate::packet::{Packet, PacketArena, PacketFlags, PktIdx};
use crate::rng::Rng;
use crate::units::{Bytes, Time};

/// Drop cause: a header or control packet found the port buffer full.
pub const DROP_HEADER_OVERFLOW: &str = "header_overflow";

const HDR: usize = 0;
const DATA: usize = 1;

/// NDP trimming parameters.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrimConfig {
    /// Data-queue capacity in packets before trimming starts (NDP: 8 packets).
    pub trim_threshold: u32,
    /// Wire size of a trimmed header (docs/conventions.md: 64 B).
    #[serde(skip)]
    pub header_size: Bytes,
    /// The network's MTU: the data queue holds `trim_threshold` x `mtu` bytes.
    #[serde(skip)]
    pub mtu: Bytes,
    /// Headers served per data packet when both queues are backlogged (0: strict priority).
    pub header_weight: u32,
    /// Probability that a trimmable data packet finding the data queue full has the data
    /// queue's tail trimmed instead of itself (NDP's phase-effect breaking: 0.5; 0 = always
    /// trim the arriving packet).
    pub tail_trim_probability: f64,
}

impl Default for TrimConfig {
    fn default() -> Self {
        TrimConfig {
            trim_threshold: 8,
            header_size: Bytes(64),
            mtu: Bytes(1500),
            header_weight: 10,
            tail_trim_probability: 0.5,
        }
    }
}

/// NDP switch port: header queue + small data queue with payload trimming.
#[derive(Debug)]
pub struct NdpTrim {
    q: ClassQueues,
    buffer: u64,
    /// Bytes the data queue holds before arriving data is trimmed.
    data_limit: u64,
    header_size: u32,
    weight: u32,
    /// Headers served since the last data packet.
    run: u32,
    /// Probability of trimming the data queue's tail instead of the arriving packet.
    tail_p: f64,
    /// The port's coin for that choice.
    rng: Rng,
}

impl NdpTrim {
    /// A port with `cfg`'s parameters; its coin is seeded with 0 until [`NdpTrim::with_rng`]
    /// gives it the port's own stream (as [`super::build`] does).
    pub fn new(buffer: Bytes, cfg: &TrimConfig) -> Self {
        NdpTrim {
            q: ClassQueues::new(2),
            buffer: buffer.0,
            data_limit: cfg.trim_threshold as u64 * cfg.mtu.0,
            header_size: cfg.header_size.0.min(u32::MAX as u64) as u32,
            weight: cfg.header_weight,
            run: 0,
            tail_p: cfg.tail_trim_probability,
            rng: Rng::new(0),
        }
    }
    /// Draw the tail-or-arrival coin from `rng` (the port's own stream).
    pub fn with_rng(mut self, rng: Rng) -> Self {
        self.rng = rng;
        self
    }
    /// Cut `p` to a header of at most `header_size` bytes (class 0, `TRIMMED`); returns the
    /// bytes removed.
    #[inline]
    fn cut(p: &mut Packet, header_size: u32) -> u64 {
        let before = p.size;
        p.size = header_size.min(p.size);
        p.payload = 0;
        p.prio = 0;
        p.flags.set(PacketFlags::TRIMMED);
        (before - p.size) as u64
    }
    /// Trim the data queue's tail to make room for an arriving data packet of `size` bytes,
    /// if the tail is trimmable and removing its payload makes room; its header joins the
    /// header queue. Returns the bytes it cut, if it did.
    fn trim_tail(&mut self, size: u64, pkts: &mut PacketArena) -> Option<u64> {
        let (tail, tail_size) = self.q.back_class(DATA)?;
        let t = pkts.get_mut(tail);
        let tail_size = tail_size as u64;
        let hdr = (self.header_size as u64).min(tail_size);
        if !t.flags.has(PacketFlags::TRIMMABLE)
            || self.q.class_bytes(DATA) - tail_size + size > self.data_limit
            || self.q.total() - tail_size + hdr + size > self.buffer
        {
            return None;
        }
        let cut = Self::cut(t, self.header_size);
        debug_assert_eq!(t.size as u64, hdr);
        self.q.pop_back_class(DATA);
        self.q.push_back(HDR, tail, hdr);
        Some(cut)
    }
    /// Packets waiting in the data queue.
    pub fn data_len(&self) -> usize {
        self.q.class_len(DATA)
    }
    /// Packets waiting in the header queue.
    pub fn header_len(&self) -> usize {
        self.q.class_len(HDR)
    }
}

impl QueueDisc for NdpTrim {
    #[inline]
    fn enqueue(&mut self, _now: Time, idx: PktIdx, pkts: &mut PacketArena, fx: &mut PortEffects) {
        let p = pkts.get_mut(idx);
        let is_full_data = p.flags.has(PacketFlags::DATA) && !p.flags.has(PacketFlags::TRIMMED);
        if is_full_data {
            let size = p.size as u64;
            if self.q.class_bytes(DATA) + size <= self.data_limit && self.q.total() + size <= self.buffer {
                self.q.push_back(DATA, idx, size);
                return;
            }
            if !p.flags.has(PacketFlags::TRIMMABLE) {
                fx.drops.push((idx, DROP_OVERFLOW));
                return;
            }
            fx.trims += 1;
            // NDP's coin: trim the data queue's tail and queue the arriving packet instead.
            if self.tail_p > 0.0 && self.rng.f64() < self.tail_p {
                if let Some(cut) = self.trim_tail(size, pkts) {
                    fx.trimmed_bytes += cut;
                    if let Some((tail, _)) = self.q.back_class(HDR) {
                        fx.trimmed_queued.push(tail);
                    }
                    self.q.push_back(DATA, idx, size);
                    return;
                }
            }
            // Cut the arriving packet's payload; the header joins the header queue below.
            let p = pkts.get_mut(idx);
            fx.trimmed_bytes += Self::cut(p, self.header_size);
        }
        let p = pkts.get(idx);
        let size = p.size as u64;
        if self.q.total() + size > self.buffer {
            fx.drops.push((idx, DROP_HEADER_OVERFLOW));
            return;
        }
        self.q.push_back(HDR, idx, size);
    }
    #[inline]
    fn dequeue(&mut self, _now: Time, _pkts: &mut PacketArena) -> Option<(PktIdx, u32)> {
        let hdr = self.q.class_len(HDR) > 0;
        let data = self.q.class_len(DATA) > 0;
        if hdr && (!data || self.weight == 0 || self.run < self.weight) {
            self.run = self.run.saturating_add(1);
            self.q.pop_class(HDR)
        } else if data {
            self.run = 0;
            self.q.pop_class(DATA)
        } else {
            None
        }
    }
    fn bytes(&self) -> Bytes {
        Bytes(self.q.total())
    }
    fn queue_bytes(&self, prio: u8) -> Bytes {
        Bytes(self.q.class_bytes(if prio == 0 { HDR } else { DATA }))
    }
    fn classes(&self) -> u8 {
        2
    }
    fn is_empty(&self) -> bool {
        self.q.total() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::PortCtx;

    fn data(a: &mut PacketArena, seq: u64, trimmable: bool) -> PktIdx {
        let mut flags = PacketFlags(PacketFlags::DATA);
        if trimmable {
            flags.set(PacketFlags::TRIMMABLE);
        }
        a.alloc(Packet { size: 1500, payload: 1460, prio: 3, seq, flags, ..Default::default() })
    }

    fn ctrl(a: &mut PacketArena) -> PktIdx {
        a.alloc(Packet { size: 64, prio: 0, ..Default::default() })
    }

    /// NDP's rules with the coin fixed: `p` = probability of trimming the tail.
    fn cfg_tail(p: f64) -> TrimConfig {
        TrimConfig { tail_trim_probability: p, ..Default::default() }
    }

    /// A port of `buffer` bytes offered `n` full trimmable packets (seq 0, 1460, ...) in
    /// turn: the arena, the port, what the offers did, and the packets.
    fn offered(buffer: u64, cfg: &TrimConfig, n: u64) -> (PacketArena, NdpTrim, PortEffects, Vec<PktIdx>) {
        let mut a = PacketArena::new();
        let mut q = NdpTrim::new(Bytes(buffer), cfg);
        let mut fx = PortEffects::default();
        let ids: Vec<_> = (0..n).map(|i| data(&mut a, i * 1460, true)).collect();
        for &i in &ids {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        (a, q, fx, ids)
    }

    /// A 200 KB port whose data queue holds eight full packets, the coin trimming the tail
    /// with probability `p`.
    fn eight_queued(p: f64) -> (PacketArena, NdpTrim, PortEffects, Vec<PktIdx>) {
        offered(200_000, &cfg_tail(p), 8)
    }

    #[test]
    fn packet_above_threshold_is_trimmed_and_served_before_queued_data() {
        let (mut a, mut q, mut fx, queued) = eight_queued(0.0);
        assert_eq!((q.data_len(), fx.trims), (8, 0));
        let ninth = data(&mut a, 8 * 1460, true);
        q.enqueue(Time(0), ninth, &mut a, &mut fx);
        assert_eq!(fx.trims, 1);
        assert!(fx.drops.is_empty());
        let h = a.get(ninth);
        assert!(h.flags.has(PacketFlags::TRIMMED) && h.flags.has(PacketFlags::DATA));
        assert_eq!((h.size, h.payload, h.prio, h.seq), (64, 0, 0, 8 * 1460));
        assert_eq!(q.queue_bytes(0), Bytes(64));
        assert_eq!(q.queue_bytes(1), Bytes(8 * 1500));
        // The header leaves before the 8 queued data packets.
        assert_eq!(q.dequeue(Time(0), &mut a), Some((ninth, 64)));
        for &i in &queued {
            assert_eq!(q.dequeue(Time(0), &mut a), Some((i, 1500)));
        }
        assert_eq!(q.dequeue(Time(0), &mut a), None);
    }

    #[test]
    fn threshold_counts_bytes_so_small_packets_queue_beyond_eight() {
        // 8 x 1500 B = 12,000 B of data queue: 53 packets of 225 B (a one-packet RPC of
        // 185 B of payload) fit, the 54th is trimmed; a full packet then finds too little room.
        let mut a = PacketArena::new();
        let mut q = NdpTrim::new(Bytes(200_000), &cfg_tail(0.0));
        let mut fx = PortEffects::default();
        let small = |a: &mut PacketArena, seq| {
            let flags = PacketFlags(PacketFlags::DATA | PacketFlags::TRIMMABLE);
            a.alloc(Packet { size: 225, payload: 185, prio: 3, seq, flags, ..Default::default() })
        };
        for i in 0..53 {
            let p = small(&mut a, i);
            q.enqueue(Time(0), p, &mut a, &mut fx);
        }
        assert_eq!((q.data_len(), fx.trims), (53, 0));
        assert_eq!(q.queue_bytes(1), Bytes(53 * 225));
        let p = small(&mut a, 53);
        q.enqueue(Time(0), p, &mut a, &mut fx);
        assert_eq!((q.data_len(), fx.trims), (53, 1));
        let full = data(&mut a, 0, true);
        q.enqueue(Time(0), full, &mut a, &mut fx);
        assert_eq!(fx.trims, 2);
        assert!(a.get(full).flags.has(PacketFlags::TRIMMED));
    }

    #[test]
    fn control_goes_to_header_queue_and_untrimmable_data_is_dropped() {
        let mut a = PacketArena::new();
        let mut q = NdpTrim::new(Bytes(200_000), &TrimConfig { trim_threshold: 1, ..Default::default() });
        let mut fx = PortEffects::default();
        let d = data(&mut a, 0, false);
        let c = ctrl(&mut a);
        let d2 = data(&mut a, 1460, false);
        for i in [d, c, d2] {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        assert_eq!(fx.drops, vec![(d2, DROP_OVERFLOW)]);
        assert_eq!(fx.trims, 0);
        assert_eq!(q.dequeue(Time(0), &mut a), Some((c, 64)));
        assert_eq!(q.dequeue(Time(0), &mut a), Some((d, 1500)));
    }

    #[test]
    fn header_overflow_when_buffer_is_full() {
        // Buffer 3064 B: two data packets fill the data queue (threshold 2); the first
        // trimmed header (64 B) fits exactly, the second does not.
        let (_a, q, fx, ids) = offered(3064, &TrimConfig { trim_threshold: 2, ..cfg_tail(0.0) }, 4);
        assert_eq!(fx.trims, 2);
        assert_eq!(fx.drops, vec![(ids[3], DROP_HEADER_OVERFLOW)]);
        assert_eq!(q.bytes(), Bytes(3064));
    }

    #[test]
    fn weighted_round_robin_between_headers_and_data() {
        let mut a = PacketArena::new();
        let cfg = TrimConfig { header_weight: 2, ..Default::default() };
        let mut q = NdpTrim::new(Bytes(200_000), &cfg);
        let mut fx = PortEffects::default();
        let d: Vec<_> = (0..2).map(|i| data(&mut a, i * 1460, true)).collect();
        let h: Vec<_> = (0..5).map(|_| ctrl(&mut a)).collect();
        for &i in d.iter().chain(&h) {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.dequeue(Time(0), &mut a).map(|x| x.0)).collect();
        assert_eq!(order, vec![h[0], h[1], d[0], h[2], h[3], d[1], h[4]]);
    }

    #[test]
    fn zero_weight_is_strict_priority() {
        let mut a = PacketArena::new();
        let cfg = TrimConfig { header_weight: 0, ..Default::default() };
        let mut q = NdpTrim::new(Bytes(200_000), &cfg);
        let mut fx = PortEffects::default();
        let d = data(&mut a, 0, true);
        let h: Vec<_> = (0..20).map(|_| ctrl(&mut a)).collect();
        for &i in std::iter::once(&d).chain(&h) {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.dequeue(Time(0), &mut a).map(|x| x.0)).collect();
        assert_eq!(order.last(), Some(&d));
    }

    /// The header queue's packets then the data queue's, in service order, with sizes.
    fn drain(q: &mut NdpTrim, a: &mut PacketArena) -> Vec<(PktIdx, u32)> {
        std::iter::from_fn(|| q.dequeue(Time(0), a)).collect()
    }

    #[test]
    fn coin_on_tail_trims_the_queued_tail_and_queues_the_arrival() {
        // Coin forced to "tail": the 8th queued packet becomes the header (served first),
        // the arriving 9th joins the data queue in its place; bytes are conserved.
        let (mut a, mut q, mut fx, queued) = eight_queued(1.0);
        let ninth = data(&mut a, 8 * 1460, true);
        q.enqueue(Time(0), ninth, &mut a, &mut fx);
        assert_eq!(fx.trims, 1);
        assert!(fx.drops.is_empty());
        let tail = queued[7];
        // The queued packet it cut is reported (the packet trace logs it).
        assert_eq!(fx.trimmed_queued, vec![tail]);
        let h = a.get(tail);
        assert!(h.flags.has(PacketFlags::TRIMMED) && h.flags.has(PacketFlags::DATA));
        assert_eq!((h.size, h.payload, h.prio, h.seq), (64, 0, 0, 7 * 1460));
        let n = a.get(ninth);
        assert!(!n.flags.has(PacketFlags::TRIMMED));
        assert_eq!((n.size, n.payload, n.prio), (1500, 1460, 3));
        // Accounting: 8 full packets in the data queue, one header in the header queue.
        assert_eq!((q.data_len(), q.header_len()), (8, 1));
        assert_eq!(q.queue_bytes(0), Bytes(64));
        assert_eq!(q.queue_bytes(1), Bytes(8 * 1500));
        assert_eq!(q.bytes(), Bytes(8 * 1500 + 64));
        let mut want = vec![(tail, 64)];
        want.extend(queued[..7].iter().map(|&i| (i, 1500)));
        want.push((ninth, 1500));
        assert_eq!(drain(&mut q, &mut a), want);
        assert_eq!((q.bytes(), q.queue_bytes(0), q.queue_bytes(1)), (Bytes(0), Bytes(0), Bytes(0)));
        assert!(q.is_empty());
    }

    #[test]
    fn tail_is_trimmed_only_when_that_makes_room() {
        // Coin forced to "tail", but the tail cannot be trimmed in its place:
        // (a) a 225 B tail frees too little for a 1500 B arrival;
        // (b) a non-trimmable tail;
        // (c) the port buffer (not the data queue) is the limit and one tail's payload is
        //     not enough room. Each time the arriving packet is trimmed instead.
        let small = |a: &mut PacketArena, seq| {
            let flags = PacketFlags(PacketFlags::DATA | PacketFlags::TRIMMABLE);
            a.alloc(Packet { size: 225, payload: 185, prio: 3, seq, flags, ..Default::default() })
        };
        // (a) 7 full packets + 6 small ones: 10,500 + 1,350 = 11,850 B; a full arrival needs 1500.
        let mut a = PacketArena::new();
        let mut q = NdpTrim::new(Bytes(200_000), &cfg_tail(1.0));
        let mut fx = PortEffects::default();
        for i in 0..7 {
            let p = data(&mut a, i, true);
            q.enqueue(Time(0), p, &mut a, &mut fx);
        }
        let smalls: Vec<_> = (0..6).map(|i| small(&mut a, 100 + i)).collect();
        for &p in &smalls {
            q.enqueue(Time(0), p, &mut a, &mut fx);
        }
        assert_eq!(fx.trims, 0);
        let full = data(&mut a, 7, true);
        q.enqueue(Time(0), full, &mut a, &mut fx);
        assert_eq!(fx.trims, 1);
        assert!(a.get(full).flags.has(PacketFlags::TRIMMED));
        assert!(!a.get(smalls[5]).flags.has(PacketFlags::TRIMMED));
        assert_eq!(q.queue_bytes(1), Bytes(7 * 1500 + 6 * 225));
        // A small arrival fits once the small tail is trimmed.
        let s = small(&mut a, 106);
        q.enqueue(Time(0), s, &mut a, &mut fx);
        assert_eq!(fx.trims, 2);
        assert!(a.get(smalls[5]).flags.has(PacketFlags::TRIMMED) && !a.get(s).flags.has(PacketFlags::TRIMMED));
        assert_eq!(q.queue_bytes(1), Bytes(7 * 1500 + 6 * 225));
        assert_eq!(q.queue_bytes(0), Bytes(2 * 64));

        // (b) a non-trimmable tail stays; the trimmable arrival is cut.
        let mut a = PacketArena::new();
        let mut q = NdpTrim::new(Bytes(200_000), &TrimConfig { trim_threshold: 1, ..cfg_tail(1.0) });
        let mut fx = PortEffects::default();
        let keep = data(&mut a, 0, false);
        let arr = data(&mut a, 1460, true);
        q.enqueue(Time(0), keep, &mut a, &mut fx);
        q.enqueue(Time(0), arr, &mut a, &mut fx);
        assert_eq!(fx.trims, 1);
        assert!(!a.get(keep).flags.has(PacketFlags::TRIMMED) && a.get(arr).flags.has(PacketFlags::TRIMMED));
        assert_eq!(drain(&mut q, &mut a), vec![(arr, 64), (keep, 1500)]);

        // (c) buffer 3,000 B: two full packets fill it (threshold 8); trimming the tail
        // would leave 1,500 + 64 + 1,500 > 3,000, so the arrival is cut (its header then
        // finds no room either: header_overflow, as without the coin).
        let (a, q, fx, ids) = offered(3_000, &cfg_tail(1.0), 3);
        assert_eq!(fx.trims, 1);
        assert_eq!(fx.drops, vec![(ids[2], DROP_HEADER_OVERFLOW)]);
        assert!(!a.get(ids[1]).flags.has(PacketFlags::TRIMMED));
        assert_eq!(q.bytes(), Bytes(3_000));
    }

    /// Offer `n` full trimmable packets to a port whose data queue is kept full, draining the
    /// header after each; returns, per arrival, whether the queued tail (true) or the
    /// arriving packet (false) was trimmed, checking the byte accounting as it goes.
    fn choices(port: &PortCtx, cfg: &TrimConfig, n: usize) -> Vec<bool> {
        let mut a = PacketArena::new();
        // Headers strictly first, so that each dequeue below takes the one header.
        let cfg = TrimConfig { header_weight: 0, ..cfg.clone() };
        let mut q = NdpTrim::new(Bytes(200_000), &cfg).with_rng(port.rng());
        let mut fx = PortEffects::default();
        let mut fifo: std::collections::VecDeque<PktIdx> = (0..8).map(|i| data(&mut a, i * 1460, true)).collect();
        for &i in &fifo {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
        let mut out = Vec::with_capacity(n);
        for k in 0..n {
            let arr = data(&mut a, (8 + k as u64) * 1460, true);
            let tail = *fifo.back().unwrap();
            q.enqueue(Time(0), arr, &mut a, &mut fx);
            let tail_trimmed = a.get(tail).flags.has(PacketFlags::TRIMMED);
            assert_ne!(tail_trimmed, a.get(arr).flags.has(PacketFlags::TRIMMED), "exactly one is trimmed");
            assert_eq!((q.data_len(), q.header_len(), q.bytes()), (8, 1, Bytes(8 * 1500 + 64)));
            let h = q.dequeue(Time(0), &mut a).unwrap();
            if tail_trimmed {
                assert_eq!(h, (tail, 64));
                fifo.pop_back();
                fifo.push_back(arr);
                a.free(tail);
            } else {
                assert_eq!(h, (arr, 64));
                a.free(arr);
            }
            out.push(tail_trimmed);
        }
        assert_eq!(fx.trims, n as u64);
        assert!(fx.drops.is_empty());
        out
    }

    fn port(id: u32, seed: u64) -> PortCtx {
        PortCtx { role: super::super::PortRole::Switch, rate: crate::units::Rate(100_000_000_000), id, seed }
    }

    #[test]
    fn coin_splits_tail_and_arrival_evenly() {
        // n = 20,000 fair coins: the tail count is Binomial(n, 1/2), standard deviation
        // sqrt(n)/2 = 70.7; the bound is 5 standard deviations (two-sided p < 1e-6).
        let n = 20_000;
        for seed in [1, 2, 3] {
            let tails = choices(&port(5, seed), &TrimConfig::default(), n).iter().filter(|&&t| t).count();
            let sd = (n as f64).sqrt() / 2.0;
            assert!((tails as f64 - n as f64 / 2.0).abs() < 5.0 * sd, "seed {seed}: {tails} tails of {n}");
        }
        // Probability 0: never the tail (the arriving-only rule); 1: always the tail.
        assert!(choices(&port(5, 1), &cfg_tail(0.0), 1000).iter().all(|&t| !t));
        assert!(choices(&port(5, 1), &cfg_tail(1.0), 1000).iter().all(|&t| t));
    }

    #[test]
    fn same_seed_same_choices_other_ports_other_streams() {
        let cfg = TrimConfig { header_weight: 0, ..Default::default() };
        let a = choices(&port(3, 42), &cfg, 256);
        assert_eq!(a, choices(&port(3, 42), &cfg, 256));
        // Another port of the same run, or the same port under another seed: another
        // sequence (equal by chance with probability 2^-256).
        assert_ne!(a, choices(&port(4, 42), &cfg, 256));
        assert_ne!(a, choices(&port(3, 43), &cfg, 256));
        // The queue built by `queue::build` draws from its port's stream.
        let qcfg = crate::queue::QueueConfig {
            policy: crate::queue::QueuePolicyKind::NdpTrim,
            buffer: Bytes(200_000),
            classes: 2,
            ecn_k: vec![None; 2],
            ecn_per_port: false,
            ecn_port_classes: vec![],
            class_buffer: vec![],
            pushout_classes: vec![],
            selective: Default::default(),
            trim: cfg.clone(),
            pfabric: Default::default(),
            crossmark: Default::default(),
            credit: Default::default(),
            nic: Default::default(),
            int: false,
            window_stamp: None,
            pdq: None,
        };
        let mut built = crate::queue::build(&qcfg, &port(3, 42));
        let mut direct = NdpTrim::new(Bytes(200_000), &cfg).with_rng(port(3, 42).rng());
        let mut arena = PacketArena::new();
        let mut fx = PortEffects::default();
        for q in [&mut *built as &mut dyn QueueDisc, &mut direct as &mut dyn QueueDisc] {
            for i in 0..8 {
                let p = data(&mut arena, i, true);
                q.enqueue(Time(0), p, &mut arena, &mut fx);
            }
        }
        let mut seq = (vec![], vec![]);
        for k in 0..64 {
            for (q, out) in
                [(&mut *built as &mut dyn QueueDisc, &mut seq.0), (&mut direct as &mut dyn QueueDisc, &mut seq.1)]
            {
                let p = data(&mut arena, 100 + k, true);
                q.enqueue(Time(0), p, &mut arena, &mut fx);
                out.push(arena.get(p).flags.has(PacketFlags::TRIMMED));
                q.dequeue(Time(0), &mut arena);
            }
        }
        assert_eq!(seq.0, seq.1);
        assert!(seq.0.contains(&true) && seq.0.contains(&false));
    }
}
