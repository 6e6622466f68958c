//! The switch side of PDQ (Hong, Caesar and Godfrey, "Finishing Flows Quickly with Preemptive
//! Scheduling", SIGCOMM 2012, §3-4): every link keeps a list of the flows crossing it, ordered
//! by criticality, and writes into each packet of a flow the rate the link grants it, or pauses
//! it. The `pdq` transport (`transport/arbitration/pdq.rs`) sends at the smallest rate its path
//! granted.
//!
//! [`PdqStamp`] wraps any port policy, as `int.rs` does for HPCC: admission and scheduling stay
//! the inner policy's; when the inner policy hands a PDQ packet (data or probe) to the link, the
//! wrapper runs the link's flow controller on it. The network builds it around every port (host
//! NICs too: a sender's own link is the first one its flows share) when the run's protocol asks
//! for it (`Derived::pdq`, `QueueConfig::pdq`); the network layer never learns the protocol.
//!
//! # What is modelled
//! - **Flow list (§3.2)**: at most `2 kappa` flows, sorted by criticality: the earlier deadline
//!   first (flows without one after every flow with one), then the smaller expected remaining
//!   transmission time `T_H`, then the flow id. A flow not in a full list is admitted if it is
//!   more critical than the least critical listed flow, which is evicted.
//! - **Rate allocation (Algorithm 1)**: a flow gets `min(R_H, C' - sum of the rates of the more
//!   critical flows)`; flows paused by another link and, with **Early Start** (§3.3.1), flows
//!   that will finish within `K` of their RTTs (`T_H < K x RTT_H`) are not counted. A flow that
//!   gets nothing (less than 1 Mbit/s, the header's unit) is **paused**: `R_H = 0`, `P_H = this link`.
//! - **Paused elsewhere**: a packet whose `P_H` names another link leaves this link's entry at
//!   rate 0 (the flow's capacity is free here) and its header unchanged.
//! - **Dampening (§3.3.3)**: a paused (or new) flow is not accepted if this link accepted
//!   another paused or new flow less than `dampening` ago; it stays paused.
//! - **Suppressed probing (§3.3.4)**: a paused flow's inter-probe time becomes
//!   `I_H = max(I_H, X x index)` RTTs, `index` its position in the list.
//! - **Rate controller (§3.2.3)**: every `2 x rtt`, `C' = max(0, C - q / (2 rtt))`, `q` the
//!   bytes queued at the port: a standing queue is drained within two RTTs.
//! - A flow leaves the list with its last data packet (`KIND_DATA_FIN`), or when no packet of
//!   it passed for `expiry` (a flow whose last packet never arrives: lost and resent, or the
//!   run ended).
//!
//! # Choices where the paper is silent or this model simplifies
//! - The paper's switches also act on the reverse path (ACKs carry the final `R_H`/`P_H` back
//!   through every switch). Here only forward packets pass the controller; a sender that
//!   learns it was paused sends a probe at once carrying `P_H`, which frees its rate at the
//!   links before the pausing one within half an RTT instead of on the ACK's way back.
//! - A flow that finds the list full and is not more critical than its least critical flow
//!   is paused (the paper gives it RCP's fair share, which needs an RCP estimator per link; in
//!   the experiments here lists never fill: `kappa` is 100, a port sees tens of flows).
//! - `rtt` of the rate controller is the largest base RTT of the network; Early Start uses
//!   each flow's own `RTT_H` from its header.
//! - Link ids in `P_H` are the port id plus one (0 = not paused) in 20 bits (port ids beyond
//!   2^20 - 2 wrap; the topologies here have hundreds of ports).
//!
//! # Header layout (forward packets of the `pdq` transport)
//! `aux2`: bits 0..20 `R_H` in Mbit/s, bits 20..32 `RTT_H` in microseconds (saturating at
//! 4095). `rank`: bits 0..20 `P_H`, bits 20..32 `I_H` in tenths of an RTT (saturating).
//! `aux`: absolute deadline in picoseconds (`u64::MAX`: none). `ack`: `T_H` in nanoseconds.

use super::hook::{Hooked, PortHook};
use super::QueueDisc;
use crate::packet::{Packet, PacketArena, PktIdx};
use crate::units::{Bytes, Rate, Time};

/// `Packet::kind` of a PDQ data packet.
pub const KIND_DATA: u8 = 1;
/// `Packet::kind` of a PDQ acknowledgement (not processed by the switches).
pub const KIND_ACK: u8 = 2;
/// `Packet::kind` of a PDQ probe (flow set-up and paused flows).
pub const KIND_PROBE: u8 = 3;
/// `Packet::kind` of the data packet carrying a flow's last byte.
pub const KIND_DATA_FIN: u8 = 4;

const FIELD_BITS: u32 = 20;
const FIELD_MASK: u32 = (1 << FIELD_BITS) - 1;
const HIGH_MAX: u32 = (1 << (32 - FIELD_BITS)) - 1;

/// `R_H` (Mbit/s) and `RTT_H` (us) into `aux2`, both saturating.
#[inline]
pub fn pack_rate(rate_mbps: u64, rtt: Time) -> u32 {
    let r = rate_mbps.min(FIELD_MASK as u64) as u32;
    let t = (rtt.0 / 1_000_000).min(HIGH_MAX as u64) as u32;
    r | (t << FIELD_BITS)
}
/// `R_H` in Mbit/s from `aux2`.
#[inline]
pub fn rate_of(aux2: u32) -> u64 {
    (aux2 & FIELD_MASK) as u64
}
/// `RTT_H` from `aux2`.
#[inline]
pub fn rtt_of(aux2: u32) -> Time {
    Time::us((aux2 >> FIELD_BITS) as u64)
}
/// `P_H` and `I_H` (tenths of an RTT) into `rank`, saturating.
#[inline]
pub fn pack_pause(paused_by: u32, ih_tenths: u32) -> u32 {
    (paused_by & FIELD_MASK) | (ih_tenths.min(HIGH_MAX) << FIELD_BITS)
}
/// `P_H` from `rank` (0 = not paused).
#[inline]
pub fn paused_by_of(rank: u32) -> u32 {
    rank & FIELD_MASK
}
/// `I_H` in tenths of an RTT from `rank`.
#[inline]
pub fn ih_of(rank: u32) -> u32 {
    rank >> FIELD_BITS
}

/// Parameters of the switch side, set by the `pdq` transport's table (`Derived::pdq`).
#[derive(Clone, Debug, PartialEq)]
pub struct PdqSwitchParams {
    /// Flows a list holds: `2 kappa`.
    pub kappa: usize,
    /// Early Start: flows finishing within `k` RTTs are not counted (0 = off).
    pub k: f64,
    /// Suppressed probing: `I_H = max(I_H, x x index)` (0 = off).
    pub x: f64,
    /// Dampening window (0 = off).
    pub dampening: Time,
    /// RTT of the rate controller.
    pub rtt: Time,
    /// A flow not seen for this long leaves the list.
    pub expiry: Time,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    flow: u32,
    deadline: u64,
    t_h: u64,
    rtt: Time,
    /// Granted rate, Mbit/s (0 = paused here or elsewhere).
    rate: u64,
    paused_elsewhere: bool,
    last_seen: Time,
}

impl Entry {
    #[inline]
    fn key(&self) -> (u64, u64, u32) {
        (self.deadline, self.t_h, self.flow)
    }
}

/// One link's PDQ flow controller (independent of any queue, unit-tested alone).
#[derive(Debug)]
pub struct PdqLink {
    params: PdqSwitchParams,
    /// Link capacity, Mbit/s.
    cap: f64,
    /// `C'`, Mbit/s.
    c_eff: f64,
    next_ctrl: Time,
    me: u32,
    flows: Vec<Entry>,
    last_accept: Option<Time>,
}

impl PdqLink {
    pub fn new(params: PdqSwitchParams, rate: Rate, port_id: u32) -> PdqLink {
        let cap = rate.0 as f64 / 1e6;
        let n = 2 * params.kappa.max(1);
        PdqLink {
            params,
            cap,
            c_eff: cap,
            next_ctrl: Time::ZERO,
            me: (port_id % FIELD_MASK) + 1,
            flows: Vec::with_capacity(n + 1),
            last_accept: None,
        }
    }

    /// This link's id as written in `P_H`.
    pub fn id(&self) -> u32 {
        self.me
    }
    /// Flows listed.
    pub fn len(&self) -> usize {
        self.flows.len()
    }
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }
    /// `C'` in Mbit/s.
    pub fn c_eff(&self) -> f64 {
        self.c_eff
    }
    /// The rate granted to `flow` (Mbit/s), if listed.
    pub fn granted(&self, flow: u32) -> Option<u64> {
        self.flows.iter().find(|e| e.flow == flow).map(|e| e.rate)
    }

    fn position(&self, key: (u64, u64, u32)) -> usize {
        self.flows.partition_point(|e| e.key() < key)
    }

    /// Run the controller on a forward packet of the `pdq` transport; `queued` = the bytes
    /// waiting at the port.
    pub fn on_packet(&mut self, now: Time, p: &mut Packet, queued: Bytes) {
        if p.kind != KIND_DATA && p.kind != KIND_DATA_FIN && p.kind != KIND_PROBE {
            return;
        }
        if now >= self.next_ctrl {
            let rtt_s = self.params.rtt.0 as f64 * 1e-12;
            let drain = if rtt_s > 0.0 { queued.0 as f64 * 8.0 / (2.0 * rtt_s) / 1e6 } else { 0.0 };
            self.c_eff = (self.cap - drain).max(0.0);
            self.next_ctrl = now + Time(self.params.rtt.0.saturating_mul(2).max(1));
        }
        let expiry = self.params.expiry;
        self.flows.retain(|e| now.0.saturating_sub(e.last_seen.0) <= expiry.0);

        let rtt_h = rtt_of(p.aux2);
        let mut e = match self.flows.iter().position(|e| e.flow == p.flow) {
            Some(i) => self.flows.remove(i),
            None => Entry {
                flow: p.flow,
                deadline: 0,
                t_h: 0,
                rtt: rtt_h,
                rate: 0,
                paused_elsewhere: false,
                last_seen: now,
            },
        };
        e.deadline = p.aux;
        e.t_h = p.ack;
        e.rtt = rtt_h;
        e.last_seen = now;
        let was_sending = e.rate > 0;
        let mut i = self.position(e.key());
        let cap = 2 * self.params.kappa.max(1);
        if self.flows.len() >= cap {
            if i >= cap {
                // Less critical than every listed flow of a full list: paused.
                p.aux2 = pack_rate(0, rtt_h);
                p.rank = pack_pause(self.me, ih_of(p.rank));
                return;
            }
            self.flows.pop();
            i = i.min(self.flows.len());
        }
        let fin = p.kind == KIND_DATA_FIN;
        let ph = paused_by_of(p.rank);
        if ph != 0 && ph != self.me {
            e.paused_elsewhere = true;
            e.rate = 0;
        } else {
            e.paused_elsewhere = false;
            let mut used = 0.0;
            for m in &self.flows[..i] {
                if m.paused_elsewhere || m.rate == 0 {
                    continue;
                }
                if self.params.k > 0.0 && (m.t_h as f64) * 1e3 < self.params.k * m.rtt.0 as f64 {
                    continue; // Early Start: about to finish.
                }
                used += m.rate as f64;
            }
            let avail = (self.c_eff - used).max(0.0);
            // Below 1 Mbit/s (the header's unit) nothing is left: paused.
            let mut r = ((rate_of(p.aux2) as f64).min(avail) + 1e-6).floor();
            if r > 0.0 && !was_sending {
                let damped = self.params.dampening > Time::ZERO
                    && self.last_accept.is_some_and(|t| now.0.saturating_sub(t.0) < self.params.dampening.0);
                if damped {
                    r = 0.0;
                } else {
                    self.last_accept = Some(now);
                }
            }
            e.rate = r as u64;
            if e.rate == 0 {
                p.aux2 = pack_rate(0, rtt_h);
                let ih = ih_of(p.rank).max((self.params.x * i as f64 * 10.0).round() as u32);
                p.rank = pack_pause(self.me, ih);
            } else {
                p.aux2 = pack_rate(e.rate, rtt_h);
                p.rank = pack_pause(0, ih_of(p.rank));
            }
        }
        if !fin {
            self.flows.insert(i, e);
        }
    }
}

/// A port policy that runs PDQ's flow controller on every PDQ packet it sends.
pub struct PdqStamp {
    link: PdqLink,
}

impl PdqStamp {
    /// The flow controller of port `port_id` (rate `rate`) as a hook around `inner`.
    pub fn new(inner: Box<dyn QueueDisc>, params: PdqSwitchParams, rate: Rate, port_id: u32) -> Hooked<PdqStamp> {
        Hooked::new(PdqStamp { link: PdqLink::new(params, rate, port_id) }, inner)
    }
}

impl PortHook for PdqStamp {
    #[inline]
    fn dequeued(&mut self, now: Time, idx: PktIdx, _size: u32, pkts: &mut PacketArena, inner: &dyn QueueDisc) {
        self.link.on_packet(now, pkts.get_mut(idx), inner.bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketFlags;

    fn params() -> PdqSwitchParams {
        PdqSwitchParams { kappa: 100, k: 2.0, x: 0.2, dampening: Time::ZERO, rtt: Time::us(100), expiry: Time::ms(10) }
    }
    /// A forward data packet of `flow` asking for `want` Mbit/s, deadline (ps) and T_H (ns).
    fn pkt(flow: u32, want: u64, deadline: u64, t_h_ns: u64) -> Packet {
        Packet {
            flow,
            size: 1500,
            flags: PacketFlags(PacketFlags::DATA),
            kind: KIND_DATA,
            aux2: pack_rate(want, Time::us(100)),
            rank: pack_pause(0, 10),
            aux: deadline,
            ack: t_h_ns,
            ..Default::default()
        }
    }
    const NONE: u64 = u64::MAX;
    const LONG: u64 = 10_000_000; // 10 ms of remaining transmission: no Early Start

    #[test]
    fn header_fields_round_trip_and_saturate() {
        let a = pack_rate(1_000, Time::us(300));
        assert_eq!((rate_of(a), rtt_of(a)), (1_000, Time::us(300)));
        let b = pack_rate(u64::MAX, Time::ms(100));
        assert_eq!((rate_of(b), rtt_of(b)), (FIELD_MASK as u64, Time::us(HIGH_MAX as u64)));
        let r = pack_pause(17, 35);
        assert_eq!((paused_by_of(r), ih_of(r)), (17, 35));
    }

    #[test]
    fn empty_link_grants_the_requested_rate_capped_at_capacity() {
        let mut l = PdqLink::new(params(), Rate::gbps(1), 4);
        let mut p = pkt(1, 10_000, NONE, LONG);
        l.on_packet(Time::ZERO, &mut p, Bytes(0));
        assert_eq!(rate_of(p.aux2), 1_000);
        assert_eq!(paused_by_of(p.rank), 0);
        let mut q = pkt(2, 300, NONE, LONG);
        let mut l2 = PdqLink::new(params(), Rate::gbps(1), 4);
        l2.on_packet(Time::ZERO, &mut q, Bytes(0));
        assert_eq!(rate_of(q.aux2), 300);
    }

    #[test]
    fn less_critical_flow_is_paused_by_this_link_then_more_critical_preempts() {
        let mut l = PdqLink::new(params(), Rate::gbps(1), 4);
        // Flow 1 (T_H 10 ms) takes the link.
        let mut a = pkt(1, 1_000, NONE, LONG);
        l.on_packet(Time::ZERO, &mut a, Bytes(0));
        assert_eq!(rate_of(a.aux2), 1_000);
        // Flow 2, longer: nothing left, paused by this link with I_H raised by its index.
        let mut b = pkt(2, 1_000, NONE, 2 * LONG);
        l.on_packet(Time::us(1), &mut b, Bytes(0));
        assert_eq!(rate_of(b.aux2), 0);
        assert_eq!(paused_by_of(b.rank), l.id());
        assert_eq!(ih_of(b.rank), 10, "index 1 x 0.2 = 0.2 RTT < the sender's 1 RTT");
        // Flow 3, shorter than flow 1: preempts it (gets the whole link) ...
        let mut c = pkt(3, 1_000, NONE, LONG / 2);
        l.on_packet(Time::us(2), &mut c, Bytes(0));
        assert_eq!(rate_of(c.aux2), 1_000);
        // ... and flow 1's next packet finds nothing left: paused.
        let mut a2 = pkt(1, 1_000, NONE, LONG);
        l.on_packet(Time::us(3), &mut a2, Bytes(0));
        assert_eq!(rate_of(a2.aux2), 0);
        assert_eq!(paused_by_of(a2.rank), l.id());
    }

    #[test]
    fn earlier_deadline_ranks_before_shorter_flow_without_deadline() {
        let mut l = PdqLink::new(params(), Rate::gbps(1), 0);
        let mut short = pkt(1, 1_000, NONE, 1_000_000);
        l.on_packet(Time::ZERO, &mut short, Bytes(0));
        assert_eq!(rate_of(short.aux2), 1_000);
        let mut dl = pkt(2, 1_000, Time::ms(5).0, LONG);
        l.on_packet(Time::us(1), &mut dl, Bytes(0));
        assert_eq!(rate_of(dl.aux2), 1_000, "the deadline flow is more critical");
        let mut short2 = pkt(1, 1_000, NONE, 1_000_000);
        l.on_packet(Time::us(2), &mut short2, Bytes(0));
        assert_eq!(rate_of(short2.aux2), 0);
    }

    #[test]
    fn early_start_ignores_a_more_critical_flow_about_to_finish() {
        let mut l = PdqLink::new(params(), Rate::gbps(1), 0);
        // Flow 1 finishes within 2 RTTs (T_H = 150 us < 2 x 100 us).
        let mut a = pkt(1, 1_000, NONE, 150_000);
        l.on_packet(Time::ZERO, &mut a, Bytes(0));
        let mut b = pkt(2, 1_000, NONE, LONG);
        l.on_packet(Time::us(1), &mut b, Bytes(0));
        assert_eq!(rate_of(b.aux2), 1_000, "Early Start");
        let mut off = params();
        off.k = 0.0;
        let mut l = PdqLink::new(off, Rate::gbps(1), 0);
        let mut a = pkt(1, 1_000, NONE, 150_000);
        l.on_packet(Time::ZERO, &mut a, Bytes(0));
        let mut b = pkt(2, 1_000, NONE, LONG);
        l.on_packet(Time::us(1), &mut b, Bytes(0));
        assert_eq!(rate_of(b.aux2), 0, "without Early Start the second flow waits");
    }

    #[test]
    fn flow_paused_elsewhere_frees_its_rate_here_and_keeps_its_header() {
        let mut l = PdqLink::new(params(), Rate::gbps(1), 0);
        let mut a = pkt(1, 1_000, NONE, LONG);
        l.on_packet(Time::ZERO, &mut a, Bytes(0));
        // Flow 1's probe says another link (id 99) paused it.
        let mut probe = pkt(1, 1_000, NONE, LONG);
        probe.kind = KIND_PROBE;
        probe.rank = pack_pause(99, 30);
        let before = probe.aux2;
        l.on_packet(Time::us(1), &mut probe, Bytes(0));
        assert_eq!((probe.aux2, paused_by_of(probe.rank), ih_of(probe.rank)), (before, 99, 30));
        assert_eq!(l.granted(1), Some(0));
        let mut b = pkt(2, 1_000, NONE, 2 * LONG);
        l.on_packet(Time::us(2), &mut b, Bytes(0));
        assert_eq!(rate_of(b.aux2), 1_000, "the less critical flow gets the freed capacity");
    }

    #[test]
    fn dampening_holds_a_second_acceptance_within_the_window() {
        let mut p = params();
        p.dampening = Time::us(10);
        let mut l = PdqLink::new(p, Rate::gbps(10), 0);
        let mut a = pkt(1, 1_000, NONE, LONG);
        l.on_packet(Time::ZERO, &mut a, Bytes(0));
        assert_eq!(rate_of(a.aux2), 1_000);
        let mut b = pkt(2, 1_000, NONE, LONG * 2);
        l.on_packet(Time::us(5), &mut b, Bytes(0));
        assert_eq!(rate_of(b.aux2), 0, "accepted 5 us after another: damped");
        let mut b2 = pkt(2, 1_000, NONE, LONG * 2);
        l.on_packet(Time::us(11), &mut b2, Bytes(0));
        assert_eq!(rate_of(b2.aux2), 1_000);
    }

    #[test]
    fn rate_controller_drains_a_standing_queue_within_two_rtts() {
        let mut l = PdqLink::new(params(), Rate::gbps(1), 0);
        // 12.5 KB queued: 100 Mbit/s over 2 x 100 us.
        let mut a = pkt(1, 1_000, NONE, LONG);
        l.on_packet(Time::ZERO, &mut a, Bytes(25_000));
        assert!((l.c_eff() - 0.0).abs() < 1e-9, "25 KB over 200 us = 1 Gbit/s: C' = 0");
        assert_eq!(rate_of(a.aux2), 0);
        let mut b = pkt(1, 1_000, NONE, LONG);
        l.on_packet(Time::us(200), &mut b, Bytes(12_500));
        assert!((l.c_eff() - 500.0).abs() < 1e-6, "{}", l.c_eff());
        assert_eq!(rate_of(b.aux2), 500);
    }

    #[test]
    fn last_packet_and_expiry_remove_the_flow() {
        let mut l = PdqLink::new(params(), Rate::gbps(1), 0);
        let mut a = pkt(1, 1_000, NONE, LONG);
        l.on_packet(Time::ZERO, &mut a, Bytes(0));
        let mut fin = pkt(1, 1_000, NONE, 0);
        fin.kind = KIND_DATA_FIN;
        l.on_packet(Time::us(1), &mut fin, Bytes(0));
        assert!(l.is_empty());
        let mut b = pkt(2, 1_000, NONE, LONG);
        l.on_packet(Time::us(2), &mut b, Bytes(0));
        assert_eq!(l.len(), 1);
        let mut c = pkt(3, 1_000, NONE, LONG);
        l.on_packet(Time::ms(11), &mut c, Bytes(0));
        assert_eq!(l.len(), 1, "flow 2 expired");
        assert_eq!(rate_of(c.aux2), 1_000);
    }

    #[test]
    fn full_list_admits_more_critical_and_pauses_less_critical() {
        let mut p = params();
        p.kappa = 1; // two flows
        let mut l = PdqLink::new(p, Rate::gbps(10), 0);
        for f in 1..=2 {
            let mut a = pkt(f, 1_000, NONE, LONG * f as u64);
            l.on_packet(Time::ZERO, &mut a, Bytes(0));
        }
        let mut late = pkt(3, 1_000, NONE, LONG * 5);
        l.on_packet(Time::us(1), &mut late, Bytes(0));
        assert_eq!((rate_of(late.aux2), paused_by_of(late.rank)), (0, l.id()));
        assert_eq!(l.len(), 2);
        let mut early = pkt(4, 1_000, NONE, 1_000_000);
        l.on_packet(Time::us(2), &mut early, Bytes(0));
        assert_eq!(rate_of(early.aux2), 1_000);
        assert_eq!(l.len(), 2);
        assert_eq!(l.granted(2), None, "the least critical flow was evicted");
    }

    #[test]
    fn acks_pass_untouched() {
        let mut l = PdqLink::new(params(), Rate::gbps(1), 0);
        let mut ack = pkt(1, 1_000, NONE, LONG);
        ack.kind = KIND_ACK;
        let before = ack;
        l.on_packet(Time::ZERO, &mut ack, Bytes(0));
        assert_eq!((ack.aux2, ack.rank), (before.aux2, before.rank));
        assert!(l.is_empty());
    }
}
