//! In-band network telemetry (INT) stamped by switch egress ports, as HPCC uses it (Li et al.,
//! "HPCC: High Precision Congestion Control", SIGCOMM 2019, §3.1 and §4.1: every switch on the
//! path appends, to each data packet it forwards, its egress port's queue length, cumulative
//! transmitted bytes, a timestamp and the link's rate; the receiver echoes the stack on its
//! ACK and the sender derives each hop's utilisation from two consecutive samples).
//!
//! [`IntStamp`] wraps any switch policy: admission and scheduling stay the inner policy's; when
//! the inner policy hands a packet to the link, the wrapper writes one hop record into it if
//! it is a data packet. The network builds it around every switch port when the run's
//! protocol asks for telemetry (`Derived::int`, `QueueConfig::int`); host NICs never stamp (in
//! HPCC the sending NIC paces itself and only switches push INT).
//!
//! # Where the stack lives
//! A [`Packet`] is a fixed 72-byte value, too small for five hops of raw counters next to the
//! transport's own fields. The stack takes 256 bits of a data packet's transport header,
//! the fields a data packet of an INT-reading protocol leaves free: `ack`, `aux`, `ts` and
//! `rank`/`aux2` (words 0-3 of [`block`]). A protocol that reads INT therefore must not use
//! those fields on its data packets (HPCC does not: it needs no RTT sample, its T is fixed);
//! on its ACKs it copies the block wherever it likes. Nothing outside the packet is stored,
//! so no side table follows packets around and the hot path allocates nothing.
//!
//! # Record of one hop (50 bits)
//! Each hop is normalised to time at the switch, which keeps the sender's law exact while
//! dropping the per-hop rate field: with `B` the port's rate,
//! - `ts`: the dequeue time, in nanoseconds, modulo 2^20 (20 bits);
//! - `busy`: the port's cumulative serialization time of every packet it dequeued *before*
//!   this one (`txBytes / B`), in nanoseconds, modulo 2^20 (20 bits);
//! - `qdelay`: the bytes still queued at the port once this packet has left (`qLen / B`), in
//!   nanoseconds, as a 10-bit float (5-bit exponent, 5-bit mantissa: exact below 32 ns, then
//!   truncated to 1/32 relative precision; saturates near 68 s).
//!
//! The paper's per-hop utilisation `txRate / B + min(qLen, qLen') / (B T)` is then
//! `Δbusy / Δts + min(qdelay, qdelay') / T` (the same quantity: `txRate = ΔtxBytes / Δts`).
//! Deltas are taken modulo 2^20 ns (about 1.05 ms), so they are right while two consecutive
//! samples of one flow at one hop are less than that apart; the sender discards a sample pair
//! taken further apart (see `transport/window/hpcc.rs`). The counters are truncated, not
//! rounded, so the error of one delta is below 1 ns and does not accumulate: a sum of deltas
//! telescopes to the difference of two exact counters (at most 1 ns off).
//!
//! Bits 0..250 of the block hold up to [`MAX_HOPS`] = 5 records (hop `i` at bits
//! `50 i .. 50 i + 50`, in path order), bits 250..253 the number of records, bit 253 an
//! overflow flag set by a sixth stamping hop (which writes nothing else). Five is the stack
//! depth of the HPCC authors' simulator and covers a three-tier fat tree; the scenario
//! refuses topologies with longer switch paths when telemetry is on, so the flag only guards.

use super::hook::{Hooked, PortHook};
use super::QueueDisc;
use crate::packet::{Packet, PacketArena, PktIdx};
use crate::units::{Bytes, Rate, Time, PS_PER_NS};

/// Most hop records a stack holds.
pub const MAX_HOPS: usize = 5;
/// Bits of one hop record.
const HOP_BITS: u32 = 50;
/// Bits of the timestamp and busy-time counters.
pub const COUNTER_BITS: u32 = 20;
/// The counters' period: they wrap every 2^20 ns.
pub const COUNTER_WRAP: Time = Time((1 << COUNTER_BITS) * PS_PER_NS);
const COUNTER_MASK: u64 = (1 << COUNTER_BITS) - 1;
const Q_BITS: u32 = 10;
const COUNT_AT: u32 = HOP_BITS * MAX_HOPS as u32;
const OVERFLOW_AT: u32 = COUNT_AT + 3;

/// One hop's record, decoded (all in nanoseconds; `ts` and `busy` modulo 2^20).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    pub ts: u32,
    pub busy: u32,
    pub qdelay: u64,
}

impl IntHop {
    /// `ts` advance from `prev` to `self`, nanoseconds (modulo 2^20).
    #[inline]
    pub fn dts(&self, prev: &IntHop) -> u64 {
        (self.ts as u64).wrapping_sub(prev.ts as u64) & COUNTER_MASK
    }
    /// `busy` advance from `prev` to `self`, nanoseconds (modulo 2^20).
    #[inline]
    pub fn dbusy(&self, prev: &IntHop) -> u64 {
        (self.busy as u64).wrapping_sub(prev.busy as u64) & COUNTER_MASK
    }
}

/// Encode a queueing delay in nanoseconds as the 10-bit float of the record.
#[inline]
pub fn encode_q(ns: u64) -> u64 {
    if ns < 32 {
        return ns;
    }
    let p = 63 - ns.leading_zeros(); // position of the leading one, >= 5
    let e = (p - 4) as u64;
    if e > 31 {
        return (31 << 5) | 31;
    }
    (e << 5) | ((ns >> (p - 5)) & 31)
}

/// Decode [`encode_q`] (the value truncated to its 6 leading bits).
#[inline]
pub fn decode_q(code: u64) -> u64 {
    let (e, m) = (code >> 5, code & 31);
    if e == 0 {
        m
    } else {
        (32 + m) << (e - 1)
    }
}

#[inline]
fn get_bits(w: &[u64; 4], at: u32, n: u32) -> u64 {
    let (i, o) = ((at / 64) as usize, at % 64);
    let mut v = w[i] >> o;
    if o + n > 64 {
        v |= w[i + 1] << (64 - o);
    }
    v & ((1u64 << n) - 1)
}

#[inline]
fn set_bits(w: &mut [u64; 4], at: u32, n: u32, v: u64) {
    let mask = (1u64 << n) - 1;
    let v = v & mask;
    let (i, o) = ((at / 64) as usize, at % 64);
    w[i] = (w[i] & !(mask << o)) | (v << o);
    if o + n > 64 {
        let hi = o + n - 64;
        let m2 = (1u64 << hi) - 1;
        w[i + 1] = (w[i + 1] & !m2) | (v >> (64 - o));
    }
}

/// The 256-bit INT block of a data packet: `[ack, aux, ts, rank << 32 | aux2]`.
#[inline]
pub fn block(p: &Packet) -> [u64; 4] {
    [p.ack, p.aux, p.ts.0, ((p.rank as u64) << 32) | p.aux2 as u64]
}

/// Write `w` as the data packet's INT block (see [`block`]).
#[inline]
pub fn set_block(p: &mut Packet, w: &[u64; 4]) {
    p.ack = w[0];
    p.aux = w[1];
    p.ts = Time(w[2]);
    p.rank = (w[3] >> 32) as u32;
    p.aux2 = w[3] as u32;
}

/// A decoded view of an INT block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntStack(pub [u64; 4]);

impl IntStack {
    /// Number of hop records held.
    #[inline]
    pub fn nhop(&self) -> usize {
        (get_bits(&self.0, COUNT_AT, 3) as usize).min(MAX_HOPS)
    }
    /// True if more hops than [`MAX_HOPS`] tried to stamp.
    #[inline]
    pub fn overflow(&self) -> bool {
        get_bits(&self.0, OVERFLOW_AT, 1) == 1
    }
    /// Record `i` (`i < nhop()`).
    #[inline]
    pub fn hop(&self, i: usize) -> IntHop {
        let at = HOP_BITS * i as u32;
        IntHop {
            ts: get_bits(&self.0, at, COUNTER_BITS) as u32,
            busy: get_bits(&self.0, at + COUNTER_BITS, COUNTER_BITS) as u32,
            qdelay: decode_q(get_bits(&self.0, at + 2 * COUNTER_BITS, Q_BITS)),
        }
    }
    /// Append a record: `now` the dequeue time, `busy` the port's cumulative serialization
    /// time before this packet, `queued` its queueing delay left behind (exact values, encoded
    /// here). A full stack only sets the overflow flag.
    #[inline]
    pub fn push(&mut self, now: Time, busy: Time, queued: Time) {
        let n = get_bits(&self.0, COUNT_AT, 3) as usize;
        if n >= MAX_HOPS {
            set_bits(&mut self.0, OVERFLOW_AT, 1, 1);
            return;
        }
        let at = HOP_BITS * n as u32;
        set_bits(&mut self.0, at, COUNTER_BITS, now.0 / PS_PER_NS);
        set_bits(&mut self.0, at + COUNTER_BITS, COUNTER_BITS, busy.0 / PS_PER_NS);
        set_bits(&mut self.0, at + 2 * COUNTER_BITS, Q_BITS, encode_q(queued.0 / PS_PER_NS));
        set_bits(&mut self.0, COUNT_AT, 3, n as u64 + 1);
    }
}

/// A switch port policy that stamps an INT record into every data packet it sends.
pub struct IntStamp {
    rate: Rate,
    /// Cumulative serialization time of every packet this port has dequeued.
    busy: Time,
}

impl IntStamp {
    /// The stamping hook around `inner`, a port of rate `rate`.
    pub fn new(inner: Box<dyn QueueDisc>, rate: Rate) -> Hooked<IntStamp> {
        Hooked::new(IntStamp { rate, busy: Time::ZERO }, inner)
    }
}

impl PortHook for IntStamp {
    #[inline]
    fn dequeued(&mut self, now: Time, idx: PktIdx, size: u32, pkts: &mut PacketArena, inner: &dyn QueueDisc) {
        let p = pkts.get_mut(idx);
        if p.is_data() {
            let queued = self.rate.tx_time(inner.bytes());
            let mut s = IntStack(block(p));
            s.push(now, self.busy, queued);
            set_block(p, &s.0);
        }
        self.busy += self.rate.tx_time(Bytes(size as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketFlags;
    use crate::queue::priority::PriorityEcn;
    use crate::queue::PortEffects;

    #[test]
    fn q_float_is_exact_below_32ns_and_within_1_32_above() {
        for v in 0..32 {
            assert_eq!(decode_q(encode_q(v)), v);
        }
        for v in [32u64, 33, 63, 64, 65, 100, 1_000, 12_345, 1_000_000, 987_654_321] {
            let d = decode_q(encode_q(v));
            assert!(d <= v && (v - d) as f64 <= v as f64 / 32.0, "{v} -> {d}");
        }
        assert!(encode_q(u64::MAX) < 1 << Q_BITS);
    }

    #[test]
    fn five_hops_round_trip_through_packet_fields_then_overflow() {
        let mut p = Packet { flags: PacketFlags(PacketFlags::DATA), ..Default::default() };
        for i in 0..MAX_HOPS as u64 {
            let mut s = IntStack(block(&p));
            s.push(Time::ns(1_000 * i + 7), Time::ns(500 * i + 3), Time::ns(10 + i));
            set_block(&mut p, &s.0);
        }
        let s = IntStack(block(&p));
        assert_eq!(s.nhop(), 5);
        assert!(!s.overflow());
        for i in 0..5u64 {
            assert_eq!(
                s.hop(i as usize),
                IntHop { ts: (1_000 * i + 7) as u32, busy: (500 * i + 3) as u32, qdelay: 10 + i }
            );
        }
        let mut s2 = s;
        s2.push(Time::ns(1), Time::ns(1), Time::ns(1));
        assert!(s2.overflow());
        assert_eq!(s2.nhop(), 5);
        assert_eq!(s2.hop(4), s.hop(4));
    }

    #[test]
    fn counter_deltas_wrap_modulo_2_pow_20_ns() {
        let mut a = IntStack::default();
        a.push(Time::ns((1 << 20) - 10), Time::ns((1 << 20) - 4), Time::ZERO);
        let mut b = IntStack::default();
        // 30 ns later, 20 ns more busy: both counters wrapped.
        b.push(Time::ns((1 << 20) + 20), Time::ns((1 << 20) + 16), Time::ZERO);
        assert_eq!(b.hop(0).dts(&a.hop(0)), 30);
        assert_eq!(b.hop(0).dbusy(&a.hop(0)), 20);
    }

    /// The wrapper stamps at dequeue: the dequeue time, the serialization time of the packets
    /// sent before (all kinds), and the queue left behind; non-data packets are not touched.
    #[test]
    fn stamp_at_dequeue_records_busy_before_and_queue_after() {
        let rate = Rate::gbps(10); // 1000 B = 800 ns
        let mut q = IntStamp::new(Box::new(PriorityEcn::new(Bytes(1 << 20), 1, vec![None], false)), rate);
        let mut arena = PacketArena::new();
        let mut fx = PortEffects::default();
        let data = |n: u32| Packet { size: 1000, flow: n, flags: PacketFlags(PacketFlags::DATA), ..Default::default() };
        let ctrl = Packet { size: 500, ack: 77, ..Default::default() };
        let ids: Vec<PktIdx> = vec![arena.alloc(ctrl), arena.alloc(data(1)), arena.alloc(data(2))];
        for &i in &ids {
            q.enqueue(Time::ZERO, i, &mut arena, &mut fx);
        }
        let (c, _) = q.dequeue(Time::ns(0), &mut arena).unwrap();
        assert_eq!(arena.get(c).ack, 77, "a control packet keeps its fields");
        let (d1, _, more) = q.dequeue_more(Time::ns(400), &mut arena).unwrap();
        assert!(more);
        let s1 = IntStack(block(arena.get(d1)));
        assert_eq!(s1.nhop(), 1);
        // Busy before: the 500 B control packet = 400 ns; left behind: one 1000 B packet.
        assert_eq!(s1.hop(0), IntHop { ts: 400, busy: 400, qdelay: decode_q(encode_q(800)) });
        let (d2, _) = q.dequeue(Time::ns(1_200), &mut arena).unwrap();
        let s2 = IntStack(block(arena.get(d2)));
        assert_eq!(s2.hop(0), IntHop { ts: 1_200, busy: 1_200, qdelay: 0 });
        assert_eq!(s2.hop(0).dbusy(&s1.hop(0)) as f64 / s2.hop(0).dts(&s1.hop(0)) as f64, 1.0);
        assert_eq!(q.idle_passthrough(), 0);
    }
}
