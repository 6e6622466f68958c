//! PDQ's end hosts (Hong, Caesar and Godfrey, "Finishing Flows Quickly with Preemptive
//! Scheduling", SIGCOMM 2012, §3.1), as the `pdq` protocol. The switch side (the per-link flow
//! list, rate allocation, pausing, Early Start, dampening, suppressed probing, the rate
//! controller) is `queue/pdq.rs`, which the protocol asks the network to put on every port
//! (`Derived::pdq`); PASE's Fig. 2 compares PDQ with DCTCP.
//!
//! # What is modelled
//! - **Sender**: a flow starts with a header-only probe (PDQ's SYN) carrying its demand
//!   `R_H` (the NIC rate), deadline `D_H`, expected remaining transmission time `T_H`
//!   (remaining bytes at the NIC rate) and RTT `RTT_H`. Each link lowers `R_H` to what it
//!   grants, or pauses the flow (`R_H = 0`, `P_H` = the link). The receiver echoes the
//!   header in its ACK; the sender then sends data paced at the echoed `R_H`, every data
//!   packet carrying the same header so that the links re-evaluate the flow on each packet.
//! - **Paused sender**: sends nothing but one probe every `I_H` RTTs (`I_H` from the links,
//!   suppressed probing; at least one RTT), carrying `P_H` so that the other links on its path
//!   do not reserve capacity for it. When it learns it was paused it probes at once (see the
//!   choices).
//! - **Receiver**: acknowledges every data packet and probe at once, with the cumulative ACK,
//!   the one packet it answers (a one-block SACK), and the packet's PDQ header.
//! - **Loss recovery**: PDQ's rate allocation keeps queues short and losses rare; a sender
//!   whose data stays unacknowledged for its timeout goes back to the first unacknowledged
//!   packet (acknowledged packets are skipped). The timeout is `rto`, but at least three
//!   smoothed RTTs and three packet times at the granted rate, and it does not run while the
//!   flow is paused (its probes run instead). A lost set-up probe is resent on the timeout.
//!
//! # Choices where the paper is silent or this model simplifies
//! - The switches' reverse-path processing (ACKs updating the links on their way back) is
//!   replaced by the immediate probe of a newly paused sender, which reaches the links before
//!   the pausing one within half an RTT (`queue/pdq.rs`).
//! - Early termination of deadline flows that cannot make it is not modelled (PASE's Fig. 2
//!   measures completion times without deadlines); `run.abort_at_deadline` is the runner's.
//!   When the application abandons a flow there (`Transport::on_flow_abandoned`), the sender
//!   stops at once and sends one header-only packet of the kind that ends a flow at the
//!   switches (`KIND_DATA_FIN`, no payload, `seq` past the flow's last byte, so the receiver
//!   stores nothing): every link of the path removes the flow from its list as it does after
//!   a flow's last data packet, instead of holding its rate until `expiry`. The receiver
//!   ignores that packet and forgets the flow.
//! - The RTT in `RTT_H`, the probe period and the pacing is the smoothed RTT (7/8 EWMA of the
//!   samples echoed in ACKs), the base RTT before the first sample.
//! - Default `rto` = 4 x the flow's base RTT (PDQ's simulator uses a small fixed timeout; the
//!   paper does not give one). `kappa` = 100, `k` = 2 RTTs, `x` = 0.2, `dampening` = 10 us:
//!   the values of a public PDQ simulator; the paper names the mechanisms without numbers
//!   except Early Start's K = 2.
//! - All packets use priority class 0 (`prio`): PDQ needs no priority queues.
//!
//! # Header layout
//! Forward packets (data `KIND_DATA` / `KIND_DATA_FIN` with flag `DATA`, probes
//! `KIND_PROBE`): `aux2` = `R_H` | `RTT_H`, `rank` = `P_H` | `I_H`, `aux` = absolute deadline
//! (ps, `u64::MAX` none), `ack` = `T_H` (ns), `seq` = byte offset, `ts` = send time (see
//! `queue/pdq.rs` for the bit layout). ACK (`KIND_ACK`): `ack` = cumulative byte, `[seq, aux)`
//! = the data packet answered (empty for a probe), `aux2` and `rank` echoed, `ts` echoed.
//!
//! # Configuration (`protocol = "pdq"`)
//! `rto` (4 x base RTT), `kappa` (100), `k` (2.0), `x` (0.2), `dampening` ("10us"),
//! `prio` (0). `kappa`, `k`, `x` and `dampening` configure the switches.

use crate::packet::{FlowId, Packet, PacketFlags};
use crate::queue::pdq::{
    ih_of, pack_pause, pack_rate, paused_by_of, rate_of, PdqSwitchParams, KIND_ACK, KIND_DATA, KIND_DATA_FIN,
    KIND_PROBE,
};
use crate::transport::segset::SegSet;
use crate::transport::{token, untoken, Ctx, Derived, FlowInfo, FlowStats, NetInfo, TimerSlot, Transport};
use crate::units::{Rate, Time};
use serde::Deserialize;

pub const TIMER_PACE: u8 = 1;
pub const TIMER_RTO: u8 = 2;
pub const TIMER_PROBE: u8 = 3;

/// The `[transport]` table of `protocol = "pdq"` (without `protocol`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PdqConfig {
    /// Retransmission timeout; `None` = 4 x the flow's base RTT.
    pub rto: Option<Time>,
    /// Flow-list size of a link: `2 kappa`.
    pub kappa: Option<u64>,
    /// Early Start horizon, RTTs (0 = off).
    pub k: Option<f64>,
    /// Suppressed probing factor (0 = off).
    pub x: Option<f64>,
    /// Dampening window ("0us" = off).
    pub dampening: Option<Time>,
    /// Priority class of every packet.
    pub prio: Option<u8>,
}

/// Errors of the protocol's table (the shared shape, [`crate::config::ProtocolConfigError`]).
pub type PdqConfigError = crate::config::ProtocolConfigError;

/// Resolved PDQ parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct PdqParams {
    pub mtu: u64,
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    pub rto: Option<Time>,
    pub prio: u8,
    pub switch: PdqSwitchParams,
}

impl PdqParams {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<PdqParams, PdqConfigError> {
        let c: PdqConfig = if cfg.is_null() {
            PdqConfig::default()
        } else {
            crate::config::from_table(cfg, "transport").map_err(PdqConfigError::Parse)?
        };
        let bad = |field: &str, value: String, fix: &str| PdqConfigError::OutOfRange {
            field: field.into(),
            value,
            fix: fix.into(),
        };
        if c.rto == Some(Time::ZERO) {
            return Err(bad("rto", "\"0ps\"".into(), "must be > 0; remove it for 4 x the base RTT"));
        }
        let kappa = c.kappa.unwrap_or(100);
        if kappa == 0 || kappa > 100_000 {
            return Err(bad("kappa", kappa.to_string(), "must be in 1..=100000 (PDQ: 100)"));
        }
        let k = c.k.unwrap_or(2.0);
        if !(k.is_finite() && (0.0..=1000.0).contains(&k)) {
            return Err(bad("k", k.to_string(), "must be in [0, 1000] RTTs (PDQ: 2; 0 = no Early Start)"));
        }
        let x = c.x.unwrap_or(0.2);
        if !(x.is_finite() && (0.0..=100.0).contains(&x)) {
            return Err(bad("x", x.to_string(), "must be in [0, 100] (PDQ: 0.2; 0 = no suppressed probing)"));
        }
        let classes = net.priorities.clamp(1, 8);
        let prio = c.prio.unwrap_or(0);
        if prio >= classes {
            return Err(bad("prio", prio.to_string(), "must be below network.priorities (0 = highest)"));
        }
        if net.mtu.0 <= net.header.0 {
            return Err(bad("mtu", net.mtu.0.to_string(), "the MTU must exceed the header (network.mtu)"));
        }
        let rtt = net.max_base_rtt.max(Time(1));
        // The longest a paused flow waits between probes (x times the last list position), plus
        // margin: a listed flow silent for longer has gone.
        let max_ih = (x * 2.0 * kappa as f64).max(1.0);
        let expiry = Time((rtt.0 as f64 * (max_ih + 8.0)).min(1e18) as u64);
        Ok(PdqParams {
            mtu: net.mtu.0,
            mss: net.mss(),
            header: net.header.0,
            ctrl_size: net.ctrl_size.0,
            rto: c.rto,
            prio,
            switch: PdqSwitchParams {
                kappa: kappa as usize,
                k,
                x,
                dampening: c.dampening.unwrap_or(Time::us(10)),
                rtt,
                expiry,
            },
        })
    }

    fn rto(&self, f: &FlowInfo) -> Time {
        self.rto.unwrap_or(Time(f.base_rtt.0.saturating_mul(4).max(1)))
    }
}

/// Sender state of one flow.
#[derive(Debug)]
pub struct PdqSender {
    size: u64,
    nseg: u64,
    acked: SegSet,
    acked_bytes: u64,
    una: u64,
    nxt: u64,
    high: u64,
    deadline: u64,
    nic_mbps: u64,
    /// Rate granted by the path (Mbit/s; 0 = paused or not yet answered).
    pub rate: u64,
    /// The link that paused the flow (0 = none).
    pub paused_by: u32,
    /// Inter-probe time, tenths of an RTT.
    pub ih: u32,
    /// An answer to the set-up probe arrived.
    pub started: bool,
    pub srtt: Time,
    pace: TimerSlot,
    rto_timer: TimerSlot,
    probe: TimerSlot,
    rto: Time,
    pub stats: FlowStats,
}

impl PdqSender {
    pub fn new(f: &FlowInfo, p: &PdqParams) -> PdqSender {
        PdqSender {
            size: f.size.0,
            nseg: f.size.0.div_ceil(p.mss).max(1),
            acked: SegSet::default(),
            acked_bytes: 0,
            una: 0,
            nxt: 0,
            high: 0,
            deadline: f.deadline.map_or(u64::MAX, |d| (f.start + d).0),
            nic_mbps: (f.host_rate.0 / 1_000_000).max(1),
            rate: 0,
            paused_by: 0,
            ih: 10,
            started: false,
            srtt: f.base_rtt.max(Time(1)),
            pace: TimerSlot::default(),
            rto_timer: TimerSlot::default(),
            probe: TimerSlot::default(),
            rto: p.rto(f),
            stats: FlowStats::default(),
        }
    }
    pub fn is_done(&self) -> bool {
        self.una >= self.nseg
    }
    fn seg_len(&self, s: u64, mss: u64) -> u64 {
        self.size.saturating_sub(s * mss).min(mss)
    }
    /// `T_H`: the remaining bytes at the NIC rate, ns.
    fn t_h(&self) -> u64 {
        let rem = self.size - self.acked_bytes.min(self.size);
        ((rem as u128 * 8 * 1000) / self.nic_mbps as u128).min(u64::MAX as u128) as u64
    }
    fn header(&self, mut pkt: Packet) -> Packet {
        pkt.aux2 = pack_rate(self.nic_mbps, self.srtt);
        pkt.rank = pack_pause(self.paused_by, 10);
        pkt.aux = self.deadline;
        pkt.ack = self.t_h();
        pkt
    }
    fn send_probe(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PdqParams) {
        let pkt = self.header(Packet {
            src: f.src,
            dst: f.dst,
            flow: f.id,
            size: p.ctrl_size as u32,
            prio: p.prio,
            kind: KIND_PROBE,
            ts: ctx.now,
            ..Default::default()
        });
        ctx.out.send(pkt);
    }
    /// The timeout in force: `rto`, but at least three smoothed RTTs and three packet gaps
    /// at the granted rate (a slow or queued flow is not a lost one).
    fn rto_now(&self, mtu: u64) -> Time {
        let gap =
            if self.rate > 0 { Rate(self.rate * 1_000_000).tx_time(crate::units::Bytes(mtu)) } else { Time::ZERO };
        self.rto.max(Time(self.srtt.0.saturating_mul(3))).max(Time(gap.0.saturating_mul(3)))
    }
    fn arm_rto(&mut self, ctx: &mut Ctx, flow: FlowId, mtu: u64) {
        let at = ctx.now + self.rto_now(mtu);
        let gen = self.rto_timer.arm(at);
        ctx.out.timer(at, token(flow, TIMER_RTO, gen));
    }
    fn arm_probe(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let tenths = self.ih.max(10) as u64;
        let at = ctx.now + Time(self.srtt.0.saturating_mul(tenths) / 10);
        let gen = self.probe.arm(at);
        ctx.out.timer(at, token(flow, TIMER_PROBE, gen));
    }

    pub fn start(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PdqParams) {
        self.send_probe(ctx, f, p);
        self.arm_rto(ctx, f.id, p.mtu);
    }

    /// Send the next packet not known to be delivered, then schedule the next one at the
    /// granted rate.
    fn send_one(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PdqParams) {
        while self.nxt < self.nseg && self.acked.has(self.nxt) {
            self.nxt += 1;
        }
        if self.nxt >= self.nseg || self.rate == 0 {
            return;
        }
        let s = self.nxt;
        let len = self.seg_len(s, p.mss);
        if s < self.high {
            self.stats.retx_bytes += len;
        }
        let last = s + 1 == self.nseg;
        let pkt = self.header(Packet {
            src: f.src,
            dst: f.dst,
            flow: f.id,
            size: (len + p.header) as u32,
            prio: p.prio,
            flags: PacketFlags(PacketFlags::DATA),
            kind: if last { KIND_DATA_FIN } else { KIND_DATA },
            payload: len as u32,
            seq: s * p.mss,
            ts: ctx.now,
            ..Default::default()
        });
        ctx.out.send(pkt);
        self.nxt += 1;
        self.high = self.high.max(self.nxt);
        if !self.rto_timer.is_armed() {
            self.arm_rto(ctx, f.id, p.mtu);
        }
        let gap = Rate(self.rate * 1_000_000).tx_time(crate::units::Bytes(len + p.header));
        let at = ctx.now + gap.max(Time(1));
        let gen = self.pace.arm(at);
        ctx.out.timer(at, token(f.id, TIMER_PACE, gen));
    }

    /// An ACK reached the sender.
    pub fn on_ack(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PdqParams, pkt: &Packet) {
        if pkt.ts <= ctx.now {
            let sample = ctx.now - pkt.ts;
            self.srtt = Time((self.srtt.0 / 8) * 7 + sample.0 / 8).max(Time(1));
        }
        let mut progress = false;
        if pkt.aux > pkt.seq {
            progress |= self.mark(pkt.seq / p.mss, p.mss);
        }
        let cum = if pkt.ack >= self.size { self.nseg } else { pkt.ack / p.mss };
        let mut s = self.una;
        while s < cum.min(self.high) {
            progress |= self.mark(s, p.mss);
            s += 1;
        }
        self.una = self.acked.base();
        if self.is_done() {
            self.pace.cancel();
            self.rto_timer.cancel();
            self.probe.cancel();
            return;
        }
        self.started = true;
        if progress {
            self.arm_rto(ctx, f.id, p.mtu);
        }
        let was_sending = self.rate > 0;
        self.rate = rate_of(pkt.aux2);
        self.paused_by = paused_by_of(pkt.rank);
        self.ih = ih_of(pkt.rank);
        if self.rate > 0 {
            self.paused_by = 0;
            self.probe.cancel();
            if !self.pace.is_armed() {
                self.send_one(ctx, f, p);
            }
            // Everything may have been sent before a pause, with a loss among it: the timeout
            // must run again, or nothing would ever resend it.
            if !self.rto_timer.is_armed() {
                self.arm_rto(ctx, f.id, p.mtu);
            }
        } else {
            // Paused: no timeout while the links hold the flow back; probes keep it alive.
            self.pace.cancel();
            self.rto_timer.cancel();
            if was_sending {
                // Tell the other links on the path at once that this flow is paused.
                self.send_probe(ctx, f, p);
            }
            if !self.probe.is_armed() {
                self.arm_probe(ctx, f.id);
            }
        }
    }

    fn mark(&mut self, s: u64, mss: u64) -> bool {
        if s >= self.high || !self.acked.insert(s) {
            return false;
        }
        self.acked_bytes += self.seg_len(s, mss);
        true
    }

    pub fn on_timer(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PdqParams, kind: u8, gen: u32) {
        if self.is_done() {
            return;
        }
        match kind {
            TIMER_PACE if self.pace.fire(gen) => self.send_one(ctx, f, p),
            TIMER_PROBE if self.probe.fire(gen) && self.rate == 0 => {
                self.send_probe(ctx, f, p);
                self.arm_probe(ctx, f.id);
            }
            TIMER_RTO if self.rto_timer.fire(gen) => {
                self.stats.timeouts += 1;
                if !self.started || self.rate == 0 {
                    self.send_probe(ctx, f, p);
                } else {
                    self.nxt = self.una;
                    self.pace.cancel();
                    self.send_one(ctx, f, p);
                }
                if !self.rto_timer.is_armed() {
                    self.arm_rto(ctx, f.id, p.mtu);
                }
            }
            _ => {}
        }
    }
}

/// Receiver state of one flow.
#[derive(Debug)]
pub struct PdqReceiver {
    got: SegSet,
    nseg: u64,
    pub done: bool,
}

impl PdqReceiver {
    pub fn new(f: &FlowInfo, p: &PdqParams) -> PdqReceiver {
        PdqReceiver { got: SegSet::default(), nseg: f.size.0.div_ceil(p.mss).max(1), done: false }
    }

    /// A data packet or probe arrived: acknowledge it with its PDQ header; true when the flow
    /// just became complete.
    pub fn on_packet(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PdqParams, pkt: &Packet) -> bool {
        let mut completed = false;
        let (a, b) = if pkt.kind == KIND_DATA || pkt.kind == KIND_DATA_FIN {
            let s = pkt.seq / p.mss;
            if s < self.nseg && self.got.insert(s) && self.got.base() >= self.nseg && !self.done {
                self.done = true;
                completed = true;
            }
            (pkt.seq, pkt.seq + (pkt.payload as u64).max(1))
        } else {
            (0, 0)
        };
        ctx.out.send(Packet {
            src: f.dst,
            dst: f.src,
            flow: f.id,
            size: p.ctrl_size as u32,
            prio: p.prio,
            kind: KIND_ACK,
            ack: (self.got.base() * p.mss).min(f.size.0),
            seq: a,
            aux: b,
            aux2: pkt.aux2,
            rank: pkt.rank,
            ts: pkt.ts,
            ..Default::default()
        });
        completed
    }
}

/// The `pdq` transport: every host's senders and receivers.
pub struct Pdq {
    params: PdqParams,
    senders: Vec<Option<Box<PdqSender>>>,
    receivers: Vec<Option<Box<PdqReceiver>>>,
    stats: Vec<FlowStats>,
    /// Flows the application abandoned (the receiver ignores their packets).
    abandoned: Vec<bool>,
}

impl Pdq {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Pdq, PdqConfigError> {
        Ok(Pdq::new(PdqParams::from_config(cfg, net)?))
    }
    pub fn new(params: PdqParams) -> Pdq {
        Pdq { params, senders: Vec::new(), receivers: Vec::new(), stats: Vec::new(), abandoned: Vec::new() }
    }
    /// The switch side the protocol needs on every port.
    pub fn derive(cfg: &serde_json::Value, net: &NetInfo) -> Result<Derived, PdqConfigError> {
        let p = PdqParams::from_config(cfg, net)?;
        Ok(Derived { pdq: Some(p.switch), ..Derived::default() })
    }
    pub fn sender(&self, f: FlowId) -> Option<&PdqSender> {
        self.senders.get(f as usize).and_then(|s| s.as_deref())
    }
    fn ensure(&mut self, n: usize) {
        if self.senders.len() < n {
            self.senders.resize_with(n, || None);
            self.receivers.resize_with(n, || None);
            self.stats.resize(n, FlowStats::default());
            self.abandoned.resize(n, false);
        }
    }
    fn retire(&mut self, id: usize) {
        if let Some(s) = self.senders[id].as_ref() {
            if s.is_done() {
                self.stats[id] = s.stats;
                self.senders[id] = None;
            }
        }
    }
}

impl Transport for Pdq {
    fn name(&self) -> &'static str {
        "pdq"
    }

    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.ensure(ctx.flows.len());
        let f = &ctx.flows[flow as usize];
        let mut s = Box::new(PdqSender::new(f, &self.params));
        s.start(ctx, f, &self.params);
        self.senders[flow as usize] = Some(s);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let id = pkt.flow as usize;
        if id >= ctx.flows.len() {
            return;
        }
        self.ensure(ctx.flows.len());
        let f = &ctx.flows[id];
        match pkt.kind {
            KIND_DATA | KIND_DATA_FIN | KIND_PROBE if ctx.host == f.dst && !self.abandoned[id] => {
                let r = self.receivers[id].get_or_insert_with(|| Box::new(PdqReceiver::new(f, &self.params)));
                if r.on_packet(ctx, f, &self.params, pkt) {
                    ctx.out.complete(f.id);
                }
            }
            KIND_ACK if ctx.host == f.src => {
                if let Some(s) = self.senders[id].as_mut() {
                    s.on_ack(ctx, f, &self.params, pkt);
                }
                self.retire(id);
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, tok: u64) {
        let (flow, kind, gen) = untoken(tok);
        let id = flow as usize;
        if id >= ctx.flows.len() || id >= self.senders.len() {
            return;
        }
        let f = &ctx.flows[id];
        if let Some(s) = self.senders[id].as_mut() {
            s.on_timer(ctx, f, &self.params, kind, gen);
        }
    }

    /// An abandoned flow (`run.abort_at_deadline`): the source stops sending and tells the
    /// links on its path to drop the flow; the destination forgets it.
    fn on_flow_abandoned(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let id = flow as usize;
        if id >= ctx.flows.len() {
            return;
        }
        self.ensure(ctx.flows.len());
        let f = &ctx.flows[id];
        if ctx.host == f.src {
            if let Some(s) = self.senders[id].take() {
                self.stats[id] = s.stats;
                if !s.is_done() {
                    ctx.out.send(s.header(Packet {
                        src: f.src,
                        dst: f.dst,
                        flow: f.id,
                        size: self.params.ctrl_size as u32,
                        prio: self.params.prio,
                        kind: KIND_DATA_FIN,
                        seq: s.nseg * self.params.mss,
                        ts: ctx.now,
                        ..Default::default()
                    }));
                }
            }
        } else if ctx.host == f.dst {
            self.receivers[id] = None;
            self.abandoned[id] = true;
        }
    }

    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        match self.senders.get(flow as usize).and_then(|s| s.as_deref()) {
            Some(s) => s.stats,
            None => self.stats.get(flow as usize).copied().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::NodeId;
    use crate::queue::pdq::PdqLink;
    use crate::transport::Actions;
    use crate::units::{Bytes, Rate};

    const MSS: u64 = 1460;

    fn flow(size: u64) -> FlowInfo {
        FlowInfo {
            id: 0,
            src: 0,
            dst: 1,
            size: Bytes(size),
            start: Time::ZERO,
            base_rtt: Time::us(100),
            path_rate: Rate::gbps(1),
            host_rate: Rate::gbps(1),
            deadline: None,
            background: false,
        }
    }

    struct H {
        t: Pdq,
        flows: Vec<FlowInfo>,
    }

    impl H {
        fn new(size: u64) -> H {
            let net = NetInfo::for_tests(1500, Time::us(100), Rate::gbps(1));
            H { t: Pdq::from_config(&serde_json::Value::Null, &net).unwrap(), flows: vec![flow(size)] }
        }
        fn call(&mut self, now: Time, host: NodeId, f: impl FnOnce(&mut Pdq, &mut Ctx)) -> Actions {
            let mut out = Actions::new();
            let mut ctx = Ctx { now, host, flows: &self.flows, out: &mut out };
            f(&mut self.t, &mut ctx);
            out
        }
        fn start(&mut self) -> Actions {
            self.call(Time::ZERO, 0, |t, c| t.start_flow(c, 0))
        }
        /// The receiver's ACK for `pkt` after it crossed `link` (if any).
        fn through(&mut self, now: Time, mut pkt: Packet, link: Option<&mut PdqLink>) -> Packet {
            if let Some(l) = link {
                l.on_packet(now, &mut pkt, Bytes(0));
            }
            let out = self.call(now, 1, |t, c| t.on_packet(c, &pkt));
            out.sends[0]
        }
        fn ack(&mut self, now: Time, ack: Packet) -> Actions {
            self.call(now, 0, |t, c| t.on_packet(c, &ack))
        }
        fn fire(&mut self, a: &Actions, kind: u8) -> Actions {
            let &(at, tok) = a.timers.iter().rev().find(|(_, tok)| untoken(*tok).1 == kind).expect("timer armed");
            self.call(at, 0, |t, c| t.on_timer(c, tok))
        }
    }

    #[test]
    fn start_sends_only_a_probe_with_demand_and_remaining_time() {
        let mut h = H::new(10 * MSS);
        let a = h.start();
        assert_eq!(a.sends.len(), 1);
        let p = a.sends[0];
        assert_eq!(p.kind, KIND_PROBE);
        assert!(!p.is_data());
        assert_eq!(rate_of(p.aux2), 1_000, "demand = NIC rate");
        assert_eq!(p.ack, 10 * MSS * 8, "T_H = 14600 B at 1 Gbit/s = 116.8 us, in ns");
        assert_eq!(p.aux, u64::MAX, "no deadline");
        assert_eq!(paused_by_of(p.rank), 0);
    }

    #[test]
    fn granted_answer_starts_data_paced_at_the_granted_rate() {
        let mut h = H::new(10 * MSS);
        let a = h.start();
        let mut link = PdqLink::new(h.t.params.switch.clone(), Rate::mbps(500), 7);
        let ack = h.through(Time::us(100), a.sends[0], Some(&mut link));
        assert_eq!(rate_of(ack.aux2), 500);
        let b = h.ack(Time::us(100), ack);
        assert_eq!(b.sends.len(), 1);
        assert!(b.sends[0].is_data());
        assert_eq!(b.sends[0].kind, KIND_DATA);
        // Next packet one 1500 B serialization at 500 Mbit/s later: 24 us.
        let (at, _) = b.timers.iter().copied().find(|(_, t)| untoken(*t).1 == TIMER_PACE).unwrap();
        assert_eq!(at, Time::us(100) + Time::us(24));
        let c = h.fire(&b, TIMER_PACE);
        assert_eq!(c.sends.len(), 1);
        assert_eq!(c.sends[0].seq, MSS);
    }

    #[test]
    fn last_packet_is_marked_fin_and_the_flow_completes() {
        let mut h = H::new(2 * MSS);
        let a = h.start();
        let ack = h.through(Time::us(100), a.sends[0], None);
        let b = h.ack(Time::us(100), ack);
        let c = h.fire(&b, TIMER_PACE);
        assert_eq!(c.sends[0].kind, KIND_DATA_FIN);
        let out1 = h.call(Time::us(150), 1, |t, cx| t.on_packet(cx, &b.sends[0]));
        assert!(out1.completions.is_empty());
        let out2 = h.call(Time::us(151), 1, |t, cx| t.on_packet(cx, &c.sends[0]));
        assert_eq!(out2.completions, vec![0]);
        h.ack(Time::us(200), out1.sends[0]);
        h.ack(Time::us(201), out2.sends[0]);
        assert!(h.t.sender(0).is_none(), "done sender retired");
    }

    #[test]
    fn paused_sender_stops_data_probes_at_once_then_every_ih_rtts() {
        let mut h = H::new(100 * MSS);
        let a = h.start();
        let ack = h.through(Time::us(100), a.sends[0], None);
        let b = h.ack(Time::us(100), ack);
        // A link pauses the flow on its first data packet, I_H = 2.5 RTTs.
        let mut d = b.sends[0];
        d.aux2 = pack_rate(0, Time::us(100));
        d.rank = pack_pause(42, 25);
        let ack2 = h.through(Time::us(150), d, None);
        let c = h.ack(Time::us(200), ack2);
        assert_eq!(c.sends.len(), 1);
        assert_eq!(c.sends[0].kind, KIND_PROBE, "immediate probe carrying P_H");
        assert_eq!(paused_by_of(c.sends[0].rank), 42);
        let s = h.t.sender(0).unwrap();
        assert_eq!((s.rate, s.paused_by, s.ih), (0, 42, 25));
        assert!(!s.rto_timer.is_armed(), "no timeout while paused");
        // The pacing timer of the data is dead; the probe timer fires 2.5 srtt later.
        let stale = h.call(Time::us(300), 0, |t, cx| {
            let tok = b.timers.iter().find(|(_, t)| untoken(*t).1 == TIMER_PACE).unwrap().1;
            t.on_timer(cx, tok)
        });
        assert!(stale.sends.is_empty());
        let (at, _) = c.timers.iter().copied().find(|(_, t)| untoken(*t).1 == TIMER_PROBE).unwrap();
        let srtt = h.t.sender(0).unwrap().srtt;
        assert_eq!(at, Time::us(200) + Time(srtt.0 * 25 / 10));
        let p = h.fire(&c, TIMER_PROBE);
        assert_eq!(p.sends[0].kind, KIND_PROBE);
    }

    #[test]
    fn unpaused_by_a_probe_answer_the_sender_resumes_data() {
        let mut h = H::new(100 * MSS);
        let a = h.start();
        let mut probe = a.sends[0];
        probe.aux2 = pack_rate(0, Time::us(100));
        probe.rank = pack_pause(5, 10);
        let ack = h.through(Time::us(100), probe, None);
        let b = h.ack(Time::us(100), ack);
        assert!(b.sends.is_empty(), "paused before sending: nothing, not even the at-once probe");
        let p = h.fire(&b, TIMER_PROBE);
        let ack2 = h.through(Time::us(250), p.sends[0], None); // nobody pauses it now
        let c = h.ack(Time::us(300), ack2);
        assert!(c.sends[0].is_data());
        assert_eq!(paused_by_of(c.sends[0].rank), 0);
    }

    #[test]
    fn abandoned_sending_flow_stops_and_its_end_packet_clears_the_links() {
        let mut h = H::new(100 * MSS);
        let a = h.start();
        let mut link = PdqLink::new(h.t.params.switch.clone(), Rate::gbps(1), 3);
        let ack = h.through(Time::us(100), a.sends[0], Some(&mut link));
        let b = h.ack(Time::us(100), ack);
        let d = b.sends[0];
        let ack2 = h.through(Time::us(150), d, Some(&mut link));
        assert_eq!(link.len(), 1, "the link holds the sending flow");
        // The application abandons the flow: the source sends one header-only end packet.
        let src = h.call(Time::us(160), 0, |t, c| t.on_flow_abandoned(c, 0));
        assert_eq!(src.sends.len(), 1);
        let end = src.sends[0];
        assert_eq!(end.kind, KIND_DATA_FIN);
        assert!(!end.is_data());
        assert_eq!((end.payload, end.size as u64), (0, h.t.params.ctrl_size));
        assert_eq!(end.seq, 100 * MSS, "past the last byte");
        assert!(h.t.sender(0).is_none(), "sender forgotten");
        let dst = h.call(Time::us(160), 1, |t, c| t.on_flow_abandoned(c, 0));
        assert!(dst.sends.is_empty());
        // Crossing the link, the end packet removes the flow at once (not after `expiry`).
        let mut e = end;
        link.on_packet(Time::us(170), &mut e, Bytes(0));
        assert_eq!(link.len(), 0, "the link forgot the flow");
        // The receiver ignores it and the flow's late packets; the sender's timers and a late
        // ACK send nothing.
        let r = h.call(Time::us(180), 1, |t, c| t.on_packet(c, &e));
        assert!(r.sends.is_empty() && r.completions.is_empty());
        let r2 = h.call(Time::us(181), 1, |t, c| t.on_packet(c, &d));
        assert!(r2.sends.is_empty() && r2.completions.is_empty());
        assert!(h.fire(&b, TIMER_PACE).sends.is_empty());
        assert!(h.fire(&a, TIMER_RTO).sends.is_empty());
        assert!(h.ack(Time::us(200), ack2).sends.is_empty());
        // Abandoning again (or a finished flow) sends nothing more.
        assert!(h.call(Time::us(210), 0, |t, c| t.on_flow_abandoned(c, 0)).sends.is_empty());
    }

    #[test]
    fn timeout_goes_back_to_the_first_unacknowledged_packet() {
        let mut h = H::new(3 * MSS);
        let a = h.start();
        let ack = h.through(Time::us(100), a.sends[0], None);
        let b = h.ack(Time::us(100), ack);
        let c = h.fire(&b, TIMER_PACE);
        let d = h.fire(&c, TIMER_PACE);
        assert_eq!(d.sends[0].kind, KIND_DATA_FIN);
        // Packet 0 lost; 1 and 2 acknowledged (SACK).
        for pkt in [c.sends[0], d.sends[0]] {
            let out = h.call(Time::us(200), 1, |t, cx| t.on_packet(cx, &pkt));
            h.ack(Time::us(250), out.sends[0]);
        }
        let rto = h.call(Time::ms(2), 0, |t, cx| {
            let s = t.senders[0].as_mut().unwrap();
            let gen = s.rto_timer.arm(Time::ms(2));
            let tok = token(0, TIMER_RTO, gen);
            t.on_timer(cx, tok)
        });
        assert_eq!(rto.sends.len(), 1);
        assert_eq!(rto.sends[0].seq, 0);
        assert_eq!(h.t.sender(0).unwrap().stats.timeouts, 1);
        assert_eq!(h.t.sender(0).unwrap().stats.retx_bytes, MSS);
    }

    /// Every packet was sent, one was lost, then the flow was paused (no timeout while
    /// paused). When a probe's answer unpauses it there is nothing new to send: the timeout
    /// must run again and resend the lost packet.
    #[test]
    fn unpaused_with_everything_sent_rearms_the_timeout_and_resends_the_loss() {
        let mut h = H::new(2 * MSS);
        let a = h.start();
        let ack = h.through(Time::us(100), a.sends[0], None);
        let b = h.ack(Time::us(100), ack);
        let c = h.fire(&b, TIMER_PACE);
        assert_eq!(c.sends[0].kind, KIND_DATA_FIN);
        // Packet 0 is lost; packet 1's ACK says a link paused the flow.
        let mut last = c.sends[0];
        last.aux2 = pack_rate(0, Time::us(100));
        last.rank = pack_pause(9, 10);
        let ack1 = h.through(Time::us(150), last, None);
        let d = h.ack(Time::us(200), ack1);
        assert!(!h.t.senders[0].as_ref().unwrap().rto_timer.is_armed());
        // The probe finds the link free again.
        let pr = h.fire(&d, TIMER_PROBE);
        let ack2 = h.through(Time::us(350), pr.sends[0], None);
        let e = h.ack(Time::us(400), ack2);
        assert!(e.sends.is_empty(), "nothing new to send");
        assert!(h.t.senders[0].as_ref().unwrap().rto_timer.is_armed());
        let f = h.fire(&e, TIMER_RTO);
        assert_eq!((f.sends[0].seq, f.sends[0].kind), (0, KIND_DATA));
    }

    #[test]
    fn deadline_is_carried_as_absolute_time() {
        let mut h = H::new(10 * MSS);
        h.flows[0].deadline = Some(Time::ms(5));
        h.flows[0].start = Time::ms(1);
        let a = h.call(Time::ms(1), 0, |t, c| t.start_flow(c, 0));
        assert_eq!(a.sends[0].aux, Time::ms(6).0);
    }

    #[test]
    fn config_errors_name_the_field_and_derive_asks_for_the_switch_side() {
        let net = NetInfo::for_tests(1500, Time::us(100), Rate::gbps(1));
        for (cfg, field) in [
            (serde_json::json!({"kappa": 0}), "transport.kappa"),
            (serde_json::json!({"k": -1.0}), "transport.k"),
            (serde_json::json!({"x": 1000.0}), "transport.x"),
            (serde_json::json!({"rto": "0us"}), "transport.rto"),
            (serde_json::json!({"prio": 8}), "transport.prio"),
        ] {
            let e = PdqParams::from_config(&cfg, &net).unwrap_err();
            assert_eq!(e.field(), field, "{cfg}");
        }
        let d = Pdq::derive(&serde_json::json!({"dampening": "0us"}), &net).unwrap();
        let sw = d.pdq.unwrap();
        assert_eq!((sw.kappa, sw.k, sw.x, sw.dampening, sw.rtt), (100, 2.0, 0.2, Time::ZERO, Time::us(100)));
    }
}
