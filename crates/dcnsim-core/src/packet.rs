//! Packets: compact `Copy` values stored in a recycled arena and addressed by index.
//!
//! The network layer reads only the generic fields of a [`Packet`] (addresses, wire
//! size, priority class, ECN codepoint and the [`PacketFlags`] a queue policy may act
//! on). Everything protocol-specific rides in the transport header fields (`kind`,
//! `seq`, `ack`, `aux`, `aux2`, `ts`, `rank`), whose meaning each transport defines in
//! its own module: adding a transport never edits a packet-kind enum here.
//!
//! The one cross-layer convention: a packet with the `DATA` flag carries the flow's
//! payload bytes `[seq, seq + payload)`. The runner uses this (and only this) to count
//! packet-hops and sent payload and, in audit mode, to check byte conservation.

use crate::units::{Bytes, Time};

/// Index of a host or switch in the topology.
pub type NodeId = u32;
/// Dense flow identifier (index into the run's flow table).
pub type FlowId = u32;

/// ECN codepoint of a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Ecn {
    #[default]
    NotEct = 0,
    Ect = 1,
    Ce = 2,
}

/// Network-visible per-packet flags. Queue policies may read and set these.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct PacketFlags(pub u16);

impl PacketFlags {
    /// Carries flow payload bytes `[seq, seq+payload)`.
    pub const DATA: u16 = 1 << 0;
    /// Sent without a grant/credit in the first RTT (Aeolus selective dropping acts on it).
    pub const UNSCHEDULED: u16 = 1 << 1;
    /// Payload was cut by a trimming switch; only the header remains.
    pub const TRIMMED: u16 = 1 << 2;
    /// A switch may cut this packet's payload instead of dropping it (NDP).
    pub const TRIMMABLE: u16 = 1 << 3;
    /// Opportunistic / low-priority-loop packet (PPT LCP, RC3, RPO).
    pub const OPPORTUNISTIC: u16 = 1 << 4;
    /// Credit / token packet subject to per-port credit rate limiting (ExpressPass).
    pub const CREDIT: u16 = 1 << 5;
    /// Route along the reverse of the ECMP path the flow's data takes from `dst` to `src`
    /// (ExpressPass credits: the credit path is the data path reversed). Ignored under
    /// per-packet spraying, where a flow has no single path.
    pub const REVERSE_PATH: u16 = 1 << 6;

    #[inline]
    pub fn has(self, f: u16) -> bool {
        self.0 & f != 0
    }
    #[inline]
    pub fn set(&mut self, f: u16) {
        self.0 |= f
    }
    #[inline]
    pub fn clear(&mut self, f: u16) {
        self.0 &= !f
    }
}

/// A packet. 72 bytes; copied by value into the arena.
///
/// `repr(C)` keeps the fields a switch reads per hop (addresses, flow, wire size, priority,
/// ECN, flags, hop count) together in the first 22 bytes, so that a packet in the arena (at
/// any 8-byte offset) spreads them over two cache lines in at most 2 cases out of 8 rather
/// than the 4 of the compiler's own layout, which put them between bytes 32 and 68.
#[derive(Copy, Clone, Debug, Default)]
#[repr(C)]
pub struct Packet {
    // ---- network header ----
    pub src: NodeId,
    pub dst: NodeId,
    pub flow: FlowId,
    /// Bytes on the wire (headers included).
    pub size: u32,
    /// Priority class, 0 = highest, 7 = lowest.
    pub prio: u8,
    pub ecn: Ecn,
    pub flags: PacketFlags,
    pub hops: u8,
    // ---- transport header (meaning defined by the transport module) ----
    pub kind: u8,
    /// Per-packet path entropy for spraying (set by the sender; 0 = use the flow hash only).
    pub entropy: u16,
    /// Payload bytes carried (0 for control packets).
    pub payload: u32,
    /// Transport-defined rank (pFabric remaining size, Homa priority hints...).
    pub rank: u32,
    pub aux2: u32,
    /// Byte offset of the payload (for DATA packets), or a transport-defined value.
    pub seq: u64,
    pub ack: u64,
    pub aux: u64,
    /// Timestamp a transport may stamp (e.g. send time for RTT samples).
    pub ts: Time,
}

impl Packet {
    #[inline]
    pub fn is_data(&self) -> bool {
        self.flags.has(PacketFlags::DATA)
    }
    #[inline]
    pub fn wire(&self) -> Bytes {
        Bytes(self.size as u64)
    }
}

/// Index of a packet slot in the [`PacketArena`].
pub type PktIdx = u32;

/// Recycling packet store: a slab of packets with a free list. No allocation on the
/// hot path once the high-water mark is reached.
#[derive(Default)]
pub struct PacketArena {
    slots: Vec<Packet>,
    free: Vec<PktIdx>,
    live: usize,
}

impl PacketArena {
    pub fn new() -> Self {
        Self::default()
    }
    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PktIdx {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            i
        } else {
            self.slots.push(p);
            (self.slots.len() - 1) as PktIdx
        }
    }
    #[inline]
    pub fn free(&mut self, i: PktIdx) {
        self.live -= 1;
        self.free.push(i);
    }
    #[inline]
    pub fn get(&self, i: PktIdx) -> &Packet {
        &self.slots[i as usize]
    }
    #[inline]
    pub fn get_mut(&mut self, i: PktIdx) -> &mut Packet {
        &mut self.slots[i as usize]
    }
    /// Hint the CPU to bring packet `i` into cache (no effect on results).
    #[inline]
    pub fn prefetch(&self, i: PktIdx) {
        #[cfg(target_arch = "x86_64")]
        if let Some(p) = self.slots.get(i as usize) {
            // SAFETY: prefetching a valid address has no side effects.
            unsafe {
                std::arch::x86_64::_mm_prefetch(p as *const Packet as *const i8, std::arch::x86_64::_MM_HINT_T0);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }
    /// Packets currently allocated (in queues or on links).
    pub fn live(&self) -> usize {
        self.live
    }
    /// High-water mark of simultaneously live packets.
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn packet_is_compact() {
        assert!(std::mem::size_of::<Packet>() <= 72, "{}", std::mem::size_of::<Packet>());
        // The per-hop fields share the first 24 bytes (see the struct's documentation).
        let p = Packet::default();
        let base = &p as *const Packet as usize;
        for off in
            [&p.hops as *const u8 as usize, &p.flags as *const PacketFlags as usize, &p.size as *const u32 as usize]
        {
            assert!(off - base < 24);
        }
    }
    #[test]
    fn arena_recycles() {
        let mut a = PacketArena::new();
        let i = a.alloc(Packet::default());
        a.free(i);
        let j = a.alloc(Packet::default());
        assert_eq!(i, j);
        assert_eq!(a.live(), 1);
        assert_eq!(a.capacity_used(), 1);
    }
}
