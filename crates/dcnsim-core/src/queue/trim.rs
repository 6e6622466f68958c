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
//! - Which packet is trimmed: always the arriving one. NDP trims the arriving packet or the
//!   tail of the data queue with equal probability to break phase effects; that needs a
//!   per-port random stream the `queue::build` interface does not provide, so we do not
//!   implement it (a deterministic coin keyed on packet fields would be a possible
//!   extension).
//! - Header queue full: the header queue has no separate limit; it shares the port buffer
//!   with the data queue. A header or control packet that does not fit in the remaining
//!   buffer is dropped with cause `header_overflow` (NDP drops headers only in this
//!   pathological case; the sender then relies on its timeout).
//! - Non-trimmable data (no `TRIMMABLE` flag) finding the data queue full is dropped with
//!   the ordinary `buffer_overflow` cause.
//! - Weighted round-robin: when both queues are backlogged, up to `header_weight` headers
//!   are served for every data packet (counted in packets; default 10, the ratio the
//!   original NDP simulator uses). `header_weight = 0` means strict priority for headers.
//!   When only one queue is backlogged it is served (work conserving).
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
use crate::packet::{PacketArena, PacketFlags, PktIdx};
use crate::units::{Bytes, Time};

/// Drop cause: a header or control packet found the port buffer full.
pub const DROP_HEADER_OVERFLOW: &str = "header_overflow";

const HDR: usize = 0;
const DATA: usize = 1;

/// NDP trimming parameters.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrimConfig {
    /// Data-queue capacity in packets before trimming starts (NDP: 8 packets).
    pub trim_threshold: u32,
    /// Wire size of a trimmed header (CONVENTIONS.md: 64 B).
    #[serde(skip)]
    pub header_size: Bytes,
    /// The network's MTU: the data queue holds `trim_threshold` x `mtu` bytes.
    #[serde(skip)]
    pub mtu: Bytes,
    /// Headers served per data packet when both queues are backlogged (0: strict priority).
    pub header_weight: u32,
}

impl Default for TrimConfig {
    fn default() -> Self {
        TrimConfig { trim_threshold: 8, header_size: Bytes(64), mtu: Bytes(1500), header_weight: 10 }
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
}

impl NdpTrim {
    pub fn new(buffer: Bytes, cfg: &TrimConfig) -> Self {
        NdpTrim {
            q: ClassQueues::new(2),
            buffer: buffer.0,
            data_limit: cfg.trim_threshold as u64 * cfg.mtu.0,
            header_size: cfg.header_size.0.min(u32::MAX as u64) as u32,
            weight: cfg.header_weight,
            run: 0,
        }
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
            // Cut the payload; the header joins the header queue below.
            p.size = self.header_size.min(p.size);
            p.payload = 0;
            p.prio = 0;
            p.flags.set(PacketFlags::TRIMMED);
            fx.trims += 1;
        }
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
    use crate::packet::Packet;

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

    #[test]
    fn packet_above_threshold_is_trimmed_and_served_before_queued_data() {
        let mut a = PacketArena::new();
        let mut q = NdpTrim::new(Bytes(200_000), &TrimConfig::default());
        let mut fx = PortEffects::default();
        let queued: Vec<_> = (0..8).map(|i| data(&mut a, i * 1460, true)).collect();
        for &i in &queued {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
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
        let mut q = NdpTrim::new(Bytes(200_000), &TrimConfig::default());
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
        let mut a = PacketArena::new();
        let mut q = NdpTrim::new(Bytes(3064), &TrimConfig { trim_threshold: 2, ..Default::default() });
        let mut fx = PortEffects::default();
        let ids: Vec<_> = (0..4).map(|i| data(&mut a, i * 1460, true)).collect();
        for &i in &ids {
            q.enqueue(Time(0), i, &mut a, &mut fx);
        }
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
}
