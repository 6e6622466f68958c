//! PASE (Munir et al., "Friends, not Foes: Synthesizing Existing Transport Strategies for Data
//! Center Networks", SIGCOMM 2014), as the `pase` protocol: per-link arbitration in a control
//! plane (§3.1), strict-priority queues with ECN in the switches (the `priority_ecn` policy,
//! unchanged), and a self-adjusting end host that follows the arbitrators' answers (§3.2).
//!
//! # What is modelled
//! - **Arbitration (§3.1.1, Algorithm 1)** by [`crate::transport::arbiter::Arbitrator`]: flows ordered
//!   by deadline, then remaining size; each gets a priority queue `floor(ADH / C)` and a
//!   reference rate `min(demand, C - ADH)` (or one packet per RTT once the link is full).
//! - **Bottom-up arbitration (§3.1.2)** over every link of the path
//!   ([`crate::transport::arbitration::bottomup`]: the halves, their stops, pruning and
//!   delegation). The source arbitrates its own access link at once (no message) and sends
//!   two requests, real 64 B control packets in the top class: one up its half to its ToR
//!   (unless pruned), one to the destination, which arbitrates the link into itself and sends
//!   the request up its own half. Each stop adds its answer to the one the request carries
//!   (the lower queue, the smaller rate) and forwards it to the next stop, or, at the top of
//!   the half or when it prunes the flow, answers the source directly. The switches' stops
//!   are agents the runner hands the packets addressed to a switch
//!   ([`Transport::on_switch_packet`]). A flow uses the combination of its own answer and the
//!   latest answer of each half. With `wait_child_answer` an inter-rack flow sends nothing
//!   until its source half has answered ("a flow starts as soon as it receives arbitration
//!   information from the child arbitrator": the ToR with delegation, the aggregation switch
//!   without); a flow inside a rack, or one its own link prunes, starts at once. Every
//!   `refresh` the source asks again with its remaining size (the list follows "the latest
//!   FlowSize"). A flow that ends sends a release up each half that it climbed (the source
//!   when its last ACK arrives, the destination when it holds every byte); each stop forgets
//!   the flow and relays the release while the flow was known there. Inside one rack only the
//!   endpoints arbitrate; `arbitration = "endpoint"` keeps only the two access links for every
//!   flow (Fig. 12(a)'s local arbitration).
//! - **Rate control (Algorithm 2)**, per ACK: an ECN-Echo cuts `cwnd (1 - alpha/2)` (DCTCP,
//!   at most once per window of data); otherwise a flow in the top queue sets
//!   `cwnd = R_ref x RTT`, a flow in an intermediate queue grows by `1/cwnd` per ACK (DCTCP's
//!   increase) after starting at one packet when it enters that queue, and a flow in the
//!   bottom queue keeps `cwnd = 1`. `alpha` is DCTCP's EWMA of the marked fraction per window
//!   (gain `g`). The same rules apply when a new answer arrives, so a flow starts at
//!   `R_ref x RTT` in the top queue (no slow start). The restart at one packet is the paper's,
//!   not a choice: §3.2's prose sets the window of every flow outside the top queue to one
//!   packet and lets DCTCP's laws act only on the ACKs after that, and Algorithm 2 sets
//!   `isInterQueue` and `cwnd = 1` on entry to an intermediate queue. `isInterQueue` is cleared
//!   only in the top and bottom queues, so a flow moved from one intermediate queue to another
//!   keeps its window; one arriving from the top or the bottom queue starts again at one.
//! - **Loss recovery (§3.2)**: in the top queue a timeout (`min_rto_top`) resends from the
//!   first unacknowledged packet. In lower queues a timeout (`min_rto_other`) sends a
//!   header-only probe in the flow's queue instead, and doubles the timeout; with `probing`
//!   (§4.3.2) a flow in the bottom queue also probes every RTT while its data is
//!   unacknowledged. The probe travels behind the flow's data in the same FIFO class, so when
//!   its ACK shows a hole below the probe's position, that data was lost and is resent at once.
//! - **Reordering guard (§3.2)**: a flow moved to a higher-priority queue sends nothing new
//!   until every packet it already sent is acknowledged, then sends in the new queue.
//! - **Queues**: `num_que` classes (Table 3: 8); the lowest is kept for background traffic
//!   (§3.3: "a separate, strictly lower priority queue is maintained for background traffic"),
//!   so arbitrated flows use `num_que - 1` queues. Background flows are not arbitrated: they
//!   run the intermediate-queue law (DCTCP increase and decrease) in the background class.
//!
//! # Choices where the paper is silent (what its ns-2 setting most plausibly was)
//! - Link capacities: the source's arbitrator has the source's link rate; the destination's
//!   the path's bottleneck rate (the destination's access link in every topology of the paper,
//!   where host links are the slowest).
//! - Arbitrators above the ToR run at the switch owning the link's lower end (see
//!   `bottomup`), process a message in zero time, and forget a flow not refreshed for two
//!   refresh periods (a pruned flow stops refreshing there; a lost release). The paper says
//!   nothing of a flow's end at the arbitrators: without the release message, the entries of
//!   finished flows held capacity for up to two RTTs and, in the left-right scenario at load
//!   0.7 of the aggregation-core link, pushed half of the data packets out of the top queue
//!   (AFCT 3.13 ms vs 2.34 ms with releases).
//! - Links are arbitrated only while switch agents exist, i.e. in full runs; a transport
//!   built without the paths (unit tests) arbitrates the access links only.
//!
//! # Where the model departs from the paper's results, and why
//! In the left-right scenario below overload of the aggregation-core link, end-to-end
//! arbitration does not beat endpoint-only arbitration (PASE Fig. 12(a) reports up to 60%).
//! Measured (1000 flows, seed 5): AFCT 2.34 ms vs 1.28 ms at load 0.7 of that link, 3.8 vs
//! 4.4 ms at 0.9 (but 4.0 vs 3.6 ms with 2000 flows); at 1.1 it is 5.8 vs 19.5 ms. The
//! mechanism: endpoint-only, nearly every flow is alone on its 1 Gbps access links and takes
//! the top queue at line rate; below overload the 10 Gbps link then adds only queueing delay
//! (no losses at 0.7), and each flow is limited by its own access link anyway. End-to-end,
//! the aggregation-core arbitrator moves flows beyond the first 10 Gbps of demand into the
//! intermediate queues, where Algorithm 2 restarts them at one packet and grows them by one
//! packet per RTT (300 us here), and promotes them only at a refresh and after their flight
//! drained. With that restart replaced by keeping the window (a diagnostic run, not a model
//! option) the AFCT at 0.7 fell from 2.34 to about 1.6 ms. The source also waits for its
//! half's answer (one ToR round trip with delegation). Pruning plus delegation do not lower
//! the AFCT either (2.34 vs 2.24 ms without them at 0.7; equal at 1.1; the paper's
//! Fig. 11(a): 4-10% better): the answers are one ToR round trip sooner, but the virtual
//! shares lag the demand of each ToR by up to one `delegation_period`.
//! - `demand = min(NIC rate, remaining x 8 / RTT)`: the paper says short flows ask "a lower
//!   value" than the NIC rate; this is the rate that would finish the flow in one RTT.
//! - Refresh once per RTT (`refresh`, default the flow's base RTT: "after one RTT all flows
//!   obtain their global priorities"); an arbitrator forgets a flow not refreshed for
//!   4 refresh periods; a flow that ends is removed at once by both endpoints.
//! - RTT in `R_ref x RTT` and in the probe period: the smoothed RTT (7/8 EWMA of the samples
//!   echoed in ACKs), the base RTT before the first sample. The base rate is one MTU per RTT.
//! - The timeouts are `min_rto_top` / `min_rto_other` (Table 3: 10 ms, 200 ms) doubled per
//!   consecutive expiry without progress; the paper's RTO floors dominate any RTT here.
//! - Every data packet is acknowledged at once, with the cumulative ACK and the one packet it
//!   answers (a one-block SACK); delivered packets are skipped when going back.
//! - ACKs, probe ACKs and arbitration messages ride in class 0; probes in the flow's class.
//!
//! # Header layout
//! Data (`KIND_DATA`, `DATA`, ECT): `seq`, `payload`, `ts` = send time, `prio` = queue. ACK
//! (`KIND_ACK`): `ack` = cumulative byte, `[seq, aux)` = the packet answered, `aux2` bit 31 =
//! ECN-Echo, `ts` echoed. Probe (`KIND_PROBE`): `seq` = the byte the sender had sent up to.
//! Probe ACK (`KIND_PROBE_ACK`): `ack` = cumulative byte, `seq` echoed. Arbitration request
//! (`KIND_ARB_REQ`): `aux` = remaining bytes, `ack` = absolute deadline in ps (`u64::MAX`:
//! none), `aux2` = demand in kbit/s, `ts` = when the source issued it, `rank` = the combined
//! answer's queue (low 8 bits) with flags [`REQ_SOURCE_HALF`], [`REQ_HAS_ANSWER`],
//! [`REQ_RELEASE`], `seq` = the combined answer's rate in bit/s. Answer (`KIND_ARB_RESP`, to
//! the source): `rank` = queue, `aux2` = rate in kbit/s, `aux` = 1 for the source half, 0 for
//! the destination half, `ts` = the request's. Delegation report (`KIND_DELEG_REPORT`, child
//! to the delegated link's owner): `aux` = the link's port, `aux2` = the child's demand in
//! kbit/s. Share (`KIND_DELEG_SHARE`, owner to child): `aux` = port, `seq` = share in bit/s.
//!
//! # Configuration (`protocol = "pase"`)
//! `num_que` (8), `min_rto_top` ("10ms"), `min_rto_other` ("200ms"), `g` (1/16), `probing`
//! (true), `refresh` (the flow's base RTT), `arbitration` ("end_to_end" | "endpoint"),
//! `pruning` (true), `prune_queues` (2), `delegation` (true), `delegation_period` ("1ms"),
//! `wait_child_answer` (true), `reference_rate` (true; false = PASE-DCTCP, §4.3.2: every flow
//! runs DCTCP's slow start from 10 packets and its additive increase and decrease in the
//! queue its arbitration gives).
//!
//! Overhead (§4.3.1): the ports table's `arb_msgs` counts, per link direction, the messages
//! its arbitrator processed (requests, releases, delegation reports; the source's own
//! arbitration of its uplink is local and not counted); the counter `arb_msgs_sent` counts
//! every arbitration packet sent.

use crate::packet::{Ecn, FlowId, NodeId, Packet, PacketFlags};
use crate::transport::arbiter::{ArbKey, Arbitrator, Decision};
use crate::transport::arbitration::bottomup::{plan, Delegated, Half};
use crate::transport::segset::SegSet;
use crate::transport::{token, untoken, Ctx, FlowInfo, FlowPaths, FlowStats, NetInfo, TimerSlot, Transport};
use crate::units::{Rate, Time};
use serde::Deserialize;
use std::collections::BTreeMap;

mod agent;
mod config;
pub use config::*;
mod receiver;
pub use receiver::PaseReceiver;
mod sender;
pub use sender::PaseSender;
#[cfg(test)]
mod tests;

pub const KIND_DATA: u8 = 1;
pub const KIND_ACK: u8 = 2;
pub const KIND_PROBE: u8 = 3;
pub const KIND_PROBE_ACK: u8 = 4;
pub const KIND_ARB_REQ: u8 = 5;
pub const KIND_ARB_RESP: u8 = 6;
pub const KIND_DELEG_REPORT: u8 = 7;
pub const KIND_DELEG_SHARE: u8 = 8;
/// Request `rank` bits: the request arbitrates the source half; it carries a combined answer.
pub const REQ_SOURCE_HALF: u32 = 1 << 8;
pub const REQ_HAS_ANSWER: u32 = 1 << 9;
/// Request `rank` bit: the flow ended; the stops forget it (a release climbs as far as the
/// flow's requests did).
pub const REQ_RELEASE: u32 = 1 << 10;
pub const TIMER_RTO: u8 = 1;
pub const TIMER_PROBE: u8 = 2;
pub const TIMER_ARB: u8 = 3;
/// ACK `aux2` bit: ECN-Echo.
pub const ACK_ECE: u32 = 1 << 31;

/// PASE-DCTCP's initial window, packets (the simulator's TCP default).
pub const PASE_DCTCP_INIT_CWND: f64 = 10.0;

/// The `pase` transport: every host's senders, receivers and access-link arbitrators, and the
/// arbitrators of the links above the ToRs, run by switch-side agents.
pub struct Pase {
    params: PaseParams,
    senders: Vec<Option<Box<PaseSender>>>,
    receivers: Vec<Option<Box<PaseReceiver>>>,
    stats: Vec<FlowStats>,
    /// Per host: the arbitrator of its uplink (host to ToR) and of its downlink.
    up: Vec<Option<Arbitrator>>,
    down: Vec<Option<Arbitrator>>,
    /// The flows' data paths (empty without switch agents, e.g. in unit tests: then only the
    /// access links are arbitrated).
    paths: FlowPaths,
    /// Arbitrators of switch-owned link directions, by port id.
    links: Vec<Option<Arbitrator>>,
    /// Virtual links at the children: (delegated port, child node) -> (arbitrator, time of
    /// the child's last report).
    virt: BTreeMap<(u32, NodeId), (Arbitrator, Option<Time>)>,
    /// Delegated links at their owners, by port.
    deleg: BTreeMap<u32, Delegated>,
    /// The children of each delegatable (level-2) link, from the paths.
    children: BTreeMap<u32, Vec<NodeId>>,
    /// Control messages processed per link direction (port), and arbitration packets sent.
    msgs: Vec<u64>,
    sent: u64,
}

impl Pase {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Pase, PaseConfigError> {
        Ok(Pase::new(PaseParams::from_config(cfg, net)?))
    }
    pub fn new(params: PaseParams) -> Pase {
        Pase {
            params,
            senders: Vec::new(),
            receivers: Vec::new(),
            stats: Vec::new(),
            up: Vec::new(),
            down: Vec::new(),
            paths: FlowPaths::default(),
            links: Vec::new(),
            virt: BTreeMap::new(),
            deleg: BTreeMap::new(),
            children: BTreeMap::new(),
            msgs: Vec::new(),
            sent: 0,
        }
    }
    pub fn sender(&self, f: FlowId) -> Option<&PaseSender> {
        self.senders.get(f as usize).and_then(|s| s.as_deref())
    }
    /// The arbitrator of `host`'s uplink, once used.
    pub fn uplink(&self, host: u32) -> Option<&Arbitrator> {
        self.up.get(host as usize).and_then(|a| a.as_ref())
    }
    /// The arbitrator of `host`'s downlink, once used.
    pub fn downlink(&self, host: u32) -> Option<&Arbitrator> {
        self.down.get(host as usize).and_then(|a| a.as_ref())
    }
    /// The arbitrator of the switch-owned link direction `port`, once used.
    pub fn link(&self, port: u32) -> Option<&Arbitrator> {
        self.links.get(port as usize).and_then(|a| a.as_ref())
    }
    /// The virtual link of delegated `port` at `child`, once used.
    pub fn virtual_link(&self, port: u32, child: NodeId) -> Option<&Arbitrator> {
        self.virt.get(&(port, child)).map(|v| &v.0)
    }
    fn ensure(&mut self, flows: usize, host: u32) {
        if self.senders.len() < flows {
            self.senders.resize_with(flows, || None);
            self.receivers.resize_with(flows, || None);
            self.stats.resize(flows, FlowStats::default());
        }
        if self.up.len() <= host as usize {
            self.up.resize_with(host as usize + 1, || None);
            self.down.resize_with(host as usize + 1, || None);
        }
    }
}

impl Transport for Pase {
    fn name(&self) -> &'static str {
        "pase"
    }

    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let f = &ctx.flows[flow as usize];
        self.ensure(ctx.flows.len(), f.src.max(f.dst));
        let (d, climbs) = if f.background {
            (Decision { queue: self.params.num_que - 1, rate: f.host_rate }, false)
        } else {
            self.arbitrate_at_source(ctx, f, f.size.0, f.base_rtt)
        };
        let p = &self.params;
        let mut s = Box::new(PaseSender::new(f, p, d));
        s.climbed = climbs;
        if climbs && p.wait_child_answer {
            s.started = false;
        }
        if !f.background {
            Pase::arm_refresh(&mut s, ctx, f, p);
        }
        s.apply(ctx, f, p);
        if f.background {
            s.fill(ctx, f, p);
        }
        self.senders[flow as usize] = Some(s);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let id = pkt.flow as usize;
        if id >= ctx.flows.len() {
            return;
        }
        let f = &ctx.flows[id];
        self.ensure(ctx.flows.len(), f.src.max(f.dst));
        let p = &self.params;
        if ctx.host == f.dst {
            match pkt.kind {
                KIND_DATA => {
                    let r = self.receivers[id].get_or_insert_with(|| Box::new(PaseReceiver::new(f, p)));
                    if r.on_data(ctx, f, p, pkt) {
                        ctx.out.complete(f.id);
                        if let Some(a) = self.down[f.dst as usize].as_mut() {
                            a.remove(f.id);
                        }
                        self.release(ctx, f, Half::Destination);
                    }
                }
                KIND_PROBE => {
                    let r = self.receivers[id].get_or_insert_with(|| Box::new(PaseReceiver::new(f, p)));
                    r.on_probe(ctx, f, p, pkt);
                }
                KIND_ARB_REQ => {
                    if self.receivers[id].as_ref().is_some_and(|r| r.done) {
                        return;
                    }
                    self.at_stop(ctx, f, pkt);
                }
                _ => {}
            }
            return;
        }
        if ctx.host != f.src {
            return;
        }
        let Some(s) = self.senders[id].as_mut() else { return };
        match pkt.kind {
            KIND_ACK => s.on_ack(ctx, f, p, pkt),
            KIND_PROBE_ACK => s.on_probe_ack(ctx, f, p, pkt),
            KIND_ARB_RESP => {
                let d = Decision { queue: pkt.rank as u8, rate: Rate(pkt.aux2 as u64 * 1000) };
                if pkt.aux == 1 {
                    if pkt.ts >= s.src_half_ts {
                        s.src_half = Some(d);
                        s.src_half_ts = pkt.ts;
                        s.started = true;
                    }
                } else if pkt.ts >= s.dst_ts {
                    s.dst_dec = Some(d);
                    s.dst_ts = pkt.ts;
                }
                s.apply(ctx, f, p);
            }
            _ => {}
        }
        if s.is_done() {
            self.finish(ctx, f);
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, tok: u64) {
        let (flow, kind, gen) = untoken(tok);
        let id = flow as usize;
        if id >= self.senders.len() {
            return;
        }
        let f = &ctx.flows[id];
        let Some(s) = self.senders[id].as_mut() else { return };
        let p = &self.params;
        match kind {
            TIMER_RTO => s.on_rto(ctx, f, p, gen),
            TIMER_PROBE => s.on_probe_timer(ctx, f, p, gen),
            TIMER_ARB => {
                if !s.arb_timer.fire(gen) || s.is_done() {
                    return;
                }
                let (remaining, rtt) = (s.remaining(), s.rtt(f));
                let (d, climbs) = self.arbitrate_at_source(ctx, f, remaining, rtt);
                let p = &self.params;
                let Some(s) = self.senders[id].as_mut() else { return };
                s.src_dec = d;
                if !climbs {
                    // Pruned at the source (or nothing above it): its own answer stands.
                    s.src_half = None;
                    s.src_half_ts = ctx.now;
                    s.started = true;
                }
                Pase::arm_refresh(s, ctx, f, p);
                s.apply(ctx, f, p);
            }
            _ => {}
        }
    }

    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        match self.sender(flow) {
            Some(s) => s.stats,
            None => self.stats.get(flow as usize).copied().unwrap_or_default(),
        }
    }

    fn wants_switch_packets(&self) -> bool {
        true
    }

    /// An abandoned flow leaves the arbitration as a finished one does: the source forgets
    /// its sender and releases the source half, the destination the destination half.
    fn on_flow_abandoned(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let id = flow as usize;
        if id >= ctx.flows.len() {
            return;
        }
        let f = &ctx.flows[id];
        self.ensure(ctx.flows.len(), f.src.max(f.dst));
        if ctx.host == f.src {
            self.finish(ctx, f);
        } else if ctx.host == f.dst {
            let r = self.receivers[id].get_or_insert_with(|| Box::new(PaseReceiver::new(f, &self.params)));
            if r.done {
                return;
            }
            r.done = true;
            if let Some(a) = self.down[f.dst as usize].as_mut() {
                a.remove(f.id);
            }
            self.release(ctx, f, Half::Destination);
        }
    }

    fn set_flow_paths(&mut self, paths: FlowPaths) {
        let mut children: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
        for i in 0..paths.len() {
            let path = paths.get(i as FlowId);
            for half in [Half::Source, Half::Destination] {
                let pl = plan(path, half, true, true);
                if let (Some(child), Some(v)) = (pl.stops().get(1), pl.stops().get(1).and_then(|s| s.virt)) {
                    children.entry(v.port).or_default().push(child.node);
                }
            }
        }
        for c in children.values_mut() {
            c.sort_unstable();
            c.dedup();
        }
        self.children = children;
        self.paths = paths;
    }

    fn on_switch_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let id = pkt.flow as usize;
        if id >= ctx.flows.len() {
            return;
        }
        let f = &ctx.flows[id];
        match pkt.kind {
            KIND_ARB_REQ => self.at_stop(ctx, f, pkt),
            KIND_DELEG_REPORT => self.on_report(ctx, f, pkt),
            KIND_DELEG_SHARE => {
                if let Some(v) = self.virt.get_mut(&(pkt.aux as u32, ctx.host)) {
                    v.0.set_capacity(Rate(pkt.seq));
                }
            }
            _ => {}
        }
    }

    fn arb_msgs(&self, port: u32) -> u64 {
        self.msgs.get(port as usize).copied().unwrap_or(0)
    }

    fn arb_msgs_sent(&self) -> u64 {
        self.sent
    }
}
