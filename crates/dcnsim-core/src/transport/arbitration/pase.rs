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

/// The `[transport]` table of `protocol = "pase"` (without `protocol`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PaseConfig {
    /// Priority queues (Table 3 `numQue`), the lowest kept for background traffic.
    pub num_que: Option<u8>,
    /// Timeout of flows in the top queue (Table 3 "minRTO (flows in top queue)").
    pub min_rto_top: Option<Time>,
    /// Timeout of flows in the other queues (Table 3 "minRTO (flows in other queues)").
    pub min_rto_other: Option<Time>,
    /// DCTCP's alpha gain.
    pub g: Option<f64>,
    /// Bottom-queue flows probe every RTT (§4.3.2).
    pub probing: Option<bool>,
    /// Arbitration refresh period; `None` = the flow's base RTT.
    pub refresh: Option<Time>,
    /// `"end_to_end"` (every link of the path, bottom-up, §3.1.2) or `"endpoint"` (the two
    /// access links only: Fig. 12(a)'s local arbitration).
    pub arbitration: Option<String>,
    /// Early pruning (§3.1.2).
    pub pruning: Option<bool>,
    /// Flows in the top `prune_queues` queues climb further (the paper: 2).
    pub prune_queues: Option<u8>,
    /// Delegation of the level-2 links to the ToRs (§3.1.2).
    pub delegation: Option<bool>,
    /// Smallest time between two reports of a child to its parent.
    pub delegation_period: Option<Time>,
    /// An inter-rack flow starts when its source half has answered ("a flow starts as soon as
    /// it receives arbitration information from the child arbitrator").
    pub wait_child_answer: Option<bool>,
    /// Follow the reference rate (Algorithm 2); false is PASE-DCTCP (§4.3.2: every flow a
    /// DCTCP source in the queue its arbitration gives).
    pub reference_rate: Option<bool>,
}

/// Errors of the protocol's table (the shared shape, [`crate::config::ProtocolConfigError`]).
pub type PaseConfigError = crate::config::ProtocolConfigError;

/// Resolved PASE parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct PaseParams {
    pub mtu: u64,
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    pub num_que: u8,
    pub min_rto_top: Time,
    pub min_rto_other: Time,
    pub g: f64,
    pub probing: bool,
    pub refresh: Option<Time>,
    pub end_to_end: bool,
    pub pruning: bool,
    pub prune_queues: u8,
    pub delegation: bool,
    pub delegation_period: Time,
    pub wait_child_answer: bool,
    pub reference_rate: bool,
}

impl PaseParams {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<PaseParams, PaseConfigError> {
        let c: PaseConfig = if cfg.is_null() {
            PaseConfig::default()
        } else {
            crate::config::from_table(cfg, "transport").map_err(PaseConfigError::Parse)?
        };
        let bad =
            |field: &str, value: String, fix: String| PaseConfigError::OutOfRange { field: field.into(), value, fix };
        let classes = net.priorities.clamp(1, 8);
        let num_que = c.num_que.unwrap_or(8);
        if num_que < 2 || num_que > classes {
            return Err(bad(
                "num_que",
                num_que.to_string(),
                format!("must be in 2..={classes} (network.priorities; PASE: 8, the lowest for background traffic)"),
            ));
        }
        let min_rto_top = c.min_rto_top.unwrap_or(Time::ms(10));
        let min_rto_other = c.min_rto_other.unwrap_or(Time::ms(200));
        for (name, v) in [("min_rto_top", min_rto_top), ("min_rto_other", min_rto_other)] {
            if v == Time::ZERO {
                return Err(bad(name, "\"0ps\"".into(), "must be > 0 (PASE: 10 ms top queue, 200 ms others)".into()));
            }
        }
        let g = c.g.unwrap_or(1.0 / 16.0);
        if !(g > 0.0 && g <= 1.0) {
            return Err(bad("g", g.to_string(), "must be in (0, 1]; DCTCP uses 1/16".into()));
        }
        if c.refresh == Some(Time::ZERO) {
            return Err(bad("refresh", "\"0ps\"".into(), "must be > 0; remove it for one base RTT".into()));
        }
        let end_to_end = match c.arbitration.as_deref() {
            None | Some("end_to_end") => true,
            Some("endpoint") => false,
            Some(o) => {
                return Err(bad("arbitration", format!("{o:?}"), "use \"end_to_end\" or \"endpoint\"".into()));
            }
        };
        let prune_queues = c.prune_queues.unwrap_or(2);
        if prune_queues < 1 || prune_queues >= num_que {
            return Err(bad(
                "prune_queues",
                prune_queues.to_string(),
                format!("must be in 1..={} (below num_que; PASE: 2, the top two queues climb)", num_que - 1),
            ));
        }
        let delegation_period = c.delegation_period.unwrap_or(Time::ms(1));
        if delegation_period == Time::ZERO {
            return Err(bad("delegation_period", "\"0ps\"".into(), "must be > 0 (default 1 ms)".into()));
        }
        if net.mtu.0 <= net.header.0 {
            return Err(bad("mtu", net.mtu.0.to_string(), "the MTU must exceed the header (network.mtu)".into()));
        }
        Ok(PaseParams {
            mtu: net.mtu.0,
            mss: net.mss(),
            header: net.header.0,
            ctrl_size: net.ctrl_size.0,
            num_que,
            min_rto_top,
            min_rto_other,
            g,
            probing: c.probing.unwrap_or(true),
            refresh: c.refresh,
            end_to_end,
            pruning: c.pruning.unwrap_or(true),
            prune_queues,
            delegation: c.delegation.unwrap_or(true),
            delegation_period,
            wait_child_answer: c.wait_child_answer.unwrap_or(true),
            reference_rate: c.reference_rate.unwrap_or(true),
        })
    }

    /// Queues arbitrated flows use (the lowest class is kept for background traffic).
    pub fn flow_queues(&self) -> u8 {
        self.num_que - 1
    }
    pub fn bottom(&self) -> u8 {
        self.num_que - 2
    }
    fn refresh(&self, f: &FlowInfo) -> Time {
        self.refresh.unwrap_or(Time(f.base_rtt.0.max(1)))
    }
}

/// PASE-DCTCP's initial window, packets (the simulator's TCP default).
pub const PASE_DCTCP_INIT_CWND: f64 = 10.0;

fn kbps(r: Rate) -> u32 {
    (r.0 / 1000).min(u32::MAX as u64) as u32
}

/// Sender state of one flow.
#[derive(Debug)]
pub struct PaseSender {
    size: u64,
    nseg: u64,
    acked: SegSet,
    acked_bytes: u64,
    una: u64,
    nxt: u64,
    high: u64,
    outstanding: u64,
    /// Window, packets.
    pub cwnd: f64,
    pub alpha: f64,
    win_end: u64,
    win_acked: u64,
    win_marked: u64,
    cwr_end: u64,
    /// Class of the packets sent now.
    pub queue: u8,
    /// A higher queue waiting for the flight to drain (reordering guard).
    pub pending_up: Option<u8>,
    pub inter: bool,
    /// The source's own answer and the destination's (once received).
    pub src_dec: Decision,
    pub dst_dec: Option<Decision>,
    /// The answer of the source half's upper arbitrators (none: not asked or pruned), and the
    /// request times of the answers held (older answers are ignored).
    pub src_half: Option<Decision>,
    src_half_ts: Time,
    dst_ts: Time,
    /// Data may be sent (false while an inter-rack flow waits for its source half).
    pub started: bool,
    /// PASE-DCTCP: still in slow start.
    ss: bool,
    /// The source half climbed above the source at least once (a release is due at the end).
    pub climbed: bool,
    pub rref: Rate,
    pub srtt: Option<Time>,
    background: bool,
    backoff: u32,
    last_progress: Time,
    rto_timer: TimerSlot,
    probe_timer: TimerSlot,
    arb_timer: TimerSlot,
    pub probes: u64,
    pub stats: FlowStats,
}

impl PaseSender {
    fn new(f: &FlowInfo, p: &PaseParams, src_dec: Decision) -> PaseSender {
        let nseg = f.size.0.div_ceil(p.mss).max(1);
        PaseSender {
            size: f.size.0,
            nseg,
            acked: SegSet::default(),
            acked_bytes: 0,
            una: 0,
            nxt: 0,
            high: 0,
            outstanding: 0,
            cwnd: if p.reference_rate { 1.0 } else { PASE_DCTCP_INIT_CWND },
            alpha: 1.0,
            win_end: 0,
            win_acked: 0,
            win_marked: 0,
            cwr_end: 0,
            queue: if f.background { p.num_que - 1 } else { src_dec.queue },
            pending_up: None,
            inter: f.background,
            src_dec,
            dst_dec: None,
            src_half: None,
            src_half_ts: Time::ZERO,
            dst_ts: Time::ZERO,
            started: true,
            ss: true,
            climbed: false,
            rref: src_dec.rate,
            srtt: None,
            background: f.background,
            backoff: 0,
            last_progress: f.start,
            rto_timer: TimerSlot::default(),
            probe_timer: TimerSlot::default(),
            arb_timer: TimerSlot::default(),
            probes: 0,
            stats: FlowStats::default(),
        }
    }

    pub fn is_done(&self) -> bool {
        self.una >= self.nseg
    }
    pub fn remaining(&self) -> u64 {
        self.size - self.acked_bytes
    }
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }
    fn rtt(&self, f: &FlowInfo) -> Time {
        self.srtt.unwrap_or(f.base_rtt)
    }
    fn seg_len(&self, s: u64, mss: u64) -> u64 {
        self.size.saturating_sub(s * mss).min(mss)
    }
    /// `R_ref x RTT` in packets (at least 1).
    fn top_window(&self, f: &FlowInfo, p: &PaseParams) -> f64 {
        let bytes = self.rref.0 as f64 * self.rtt(f).as_secs_f64() / 8.0;
        (bytes / p.mtu as f64).max(1.0)
    }
    /// Algorithm 2 without the ECN branch: the window an unmarked ACK (or a new answer) sets.
    fn adjust(&mut self, f: &FlowInfo, p: &PaseParams, acked: u64) {
        if !p.reference_rate && !self.background {
            // PASE-DCTCP: DCTCP's slow start and additive increase in every queue.
            for _ in 0..acked {
                self.cwnd += if self.ss { 1.0 } else { 1.0 / self.cwnd };
            }
            return;
        }
        if self.background {
            for _ in 0..acked {
                self.cwnd += 1.0 / self.cwnd;
            }
            return;
        }
        let q = self.queue;
        if q == 0 {
            self.cwnd = self.top_window(f, p);
            self.inter = false;
        } else if q < p.bottom() {
            if self.inter {
                for _ in 0..acked {
                    self.cwnd += 1.0 / self.cwnd;
                }
            } else {
                self.inter = true;
                self.cwnd = 1.0;
            }
        } else {
            self.cwnd = 1.0;
            self.inter = false;
        }
    }

    fn rto(&self, p: &PaseParams) -> Time {
        let base = if self.queue == 0 { p.min_rto_top } else { p.min_rto_other };
        Time(base.0.saturating_mul(1u64 << self.backoff.min(16)))
    }

    fn arm_rto(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        let at = ctx.now + self.rto(p);
        let gen = self.rto_timer.arm(at);
        ctx.out.timer(at, token(f.id, TIMER_RTO, gen));
    }

    fn arm_probe(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        if p.probing && !self.background && self.queue == p.bottom() && !self.probe_timer.is_armed() {
            let at = ctx.now + self.rtt(f);
            let gen = self.probe_timer.arm(at);
            ctx.out.timer(at, token(f.id, TIMER_PROBE, gen));
        }
    }

    /// A new path answer (the source's own combined with the destination's, if any).
    pub fn apply(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        if self.background {
            return;
        }
        let mut d = self.src_dec;
        for o in [self.src_half, self.dst_dec].into_iter().flatten() {
            d = d.combine(o);
        }
        self.rref = d.rate;
        if d.queue < self.queue && self.outstanding > 0 {
            // Reordering guard: wait for the flight before sending in the higher queue.
            self.pending_up = Some(d.queue);
        } else {
            self.pending_up = None;
            self.queue = d.queue;
        }
        self.adjust(f, p, 0);
        self.fill(ctx, f, p);
    }

    /// Send what the window allows.
    pub fn fill(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        if !self.started {
            return;
        }
        if let Some(q) = self.pending_up {
            if self.outstanding > 0 {
                return;
            }
            self.queue = q;
            self.pending_up = None;
            self.adjust(f, p, 0);
        }
        let window = (self.cwnd.floor() as u64).max(1);
        let mut sent = false;
        while self.outstanding < window {
            while self.nxt < self.nseg && self.acked.has(self.nxt) {
                self.nxt += 1;
            }
            if self.nxt >= self.nseg {
                break;
            }
            let s = self.nxt;
            let len = self.seg_len(s, p.mss);
            if s < self.high {
                self.stats.retx_bytes += len;
            }
            ctx.out.send(Packet {
                src: f.src,
                dst: f.dst,
                flow: f.id,
                size: (len + p.header) as u32,
                prio: self.queue,
                ecn: Ecn::Ect,
                flags: PacketFlags(PacketFlags::DATA),
                kind: KIND_DATA,
                payload: len as u32,
                seq: s * p.mss,
                ts: ctx.now,
                ..Default::default()
            });
            self.nxt += 1;
            self.high = self.high.max(self.nxt);
            self.outstanding += 1;
            sent = true;
        }
        if sent && !self.rto_timer.is_armed() {
            self.arm_rto(ctx, f, p);
        }
        if self.outstanding > 0 {
            self.arm_probe(ctx, f, p);
        }
    }

    fn send_probe(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        self.probes += 1;
        ctx.out.send(Packet {
            src: f.src,
            dst: f.dst,
            flow: f.id,
            size: p.ctrl_size as u32,
            prio: self.queue,
            kind: KIND_PROBE,
            seq: self.nxt * p.mss,
            ts: ctx.now,
            ..Default::default()
        });
    }

    fn mark(&mut self, s: u64, mss: u64) -> bool {
        if s < self.high && self.acked.insert(s) {
            self.acked_bytes += self.seg_len(s, mss);
            if s < self.nxt {
                self.outstanding = self.outstanding.saturating_sub(1);
            }
            true
        } else {
            false
        }
    }

    /// Apply a cumulative ACK of `ack` bytes; newly acknowledged packets.
    fn cumulative(&mut self, ack: u64, mss: u64) -> u64 {
        let cum = if ack >= self.size { self.nseg } else { ack / mss };
        let mut newly = 0;
        let mut s = self.una;
        while s < cum.min(self.high) {
            newly += self.mark(s, mss) as u64;
            s += 1;
        }
        self.una = self.acked.base();
        newly
    }

    /// A data ACK reached the sender.
    pub fn on_ack(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, pkt: &Packet) {
        if pkt.ts <= ctx.now {
            let r = ctx.now - pkt.ts;
            self.srtt = Some(match self.srtt {
                None => r,
                Some(s) => Time((s.0 * 7 + r.0) / 8),
            });
        }
        let mut newly = 0;
        if pkt.aux > pkt.seq {
            newly += self.mark(pkt.seq / p.mss, p.mss) as u64;
            self.una = self.acked.base();
        }
        newly += self.cumulative(pkt.ack, p.mss);
        let ece = pkt.aux2 & ACK_ECE != 0;
        // DCTCP's observation window: one window of data.
        self.win_acked += newly;
        if ece {
            self.win_marked += newly;
        }
        if self.una >= self.win_end && self.win_acked > 0 {
            let frac = self.win_marked as f64 / self.win_acked as f64;
            self.alpha = (1.0 - p.g) * self.alpha + p.g * frac;
            self.win_acked = 0;
            self.win_marked = 0;
            self.win_end = self.high;
        }
        if ece {
            if self.una >= self.cwr_end {
                self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(1.0);
                self.cwr_end = self.high;
                self.ss = false;
            }
        } else {
            self.adjust(f, p, newly);
        }
        if newly > 0 {
            self.backoff = 0;
            self.last_progress = ctx.now;
        }
        if self.is_done() {
            self.rto_timer.cancel();
            self.probe_timer.cancel();
            self.arb_timer.cancel();
            return;
        }
        if newly > 0 {
            self.arm_rto(ctx, f, p);
        }
        self.fill(ctx, f, p);
    }

    /// The ACK of a probe: a hole below the probe's position means lost data: resend it.
    pub fn on_probe_ack(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, pkt: &Packet) {
        let newly = self.cumulative(pkt.ack, p.mss);
        if newly > 0 {
            self.backoff = 0;
            self.last_progress = ctx.now;
        }
        if self.is_done() {
            self.rto_timer.cancel();
            self.probe_timer.cancel();
            self.arb_timer.cancel();
            return;
        }
        let boundary = pkt.seq / p.mss;
        if self.una < boundary {
            // Everything sent before the probe and still unacknowledged was lost.
            self.nxt = self.una;
            self.outstanding = 0;
            self.backoff = 0;
            self.last_progress = ctx.now;
            self.arm_rto(ctx, f, p);
        }
        self.fill(ctx, f, p);
    }

    pub fn on_rto(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, gen: u32) {
        if !self.rto_timer.fire(gen) || self.is_done() {
            return;
        }
        self.stats.timeouts += 1;
        if self.queue == 0 && !self.background {
            self.nxt = self.una;
            self.outstanding = 0;
            self.backoff += 1;
            self.fill(ctx, f, p);
        } else {
            self.send_probe(ctx, f, p);
            self.backoff += 1;
        }
        if !self.rto_timer.is_armed() {
            self.arm_rto(ctx, f, p);
        }
    }

    pub fn on_probe_timer(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, gen: u32) {
        if !self.probe_timer.fire(gen) || self.is_done() {
            return;
        }
        if self.outstanding > 0 && self.queue == p.bottom() && ctx.now - self.last_progress >= self.rtt(f) {
            self.send_probe(ctx, f, p);
        }
        if self.outstanding > 0 {
            self.arm_probe(ctx, f, p);
        }
    }
}

/// Receiver state of one flow.
#[derive(Debug)]
pub struct PaseReceiver {
    /// Packets held; its base is the first missing packet.
    got: SegSet,
    nseg: u64,
    pub done: bool,
}

impl PaseReceiver {
    fn new(f: &FlowInfo, p: &PaseParams) -> PaseReceiver {
        PaseReceiver { got: SegSet::default(), nseg: f.size.0.div_ceil(p.mss).max(1), done: false }
    }
    fn cum_bytes(&self, f: &FlowInfo, p: &PaseParams) -> u64 {
        (self.got.base() * p.mss).min(f.size.0)
    }
    /// Data: acknowledge it (ECN-Echo if it was marked); true when the flow just completed.
    fn on_data(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, pkt: &Packet) -> bool {
        let s = pkt.seq / p.mss;
        let mut completed = false;
        if s < self.nseg && self.got.insert(s) && self.got.base() >= self.nseg && !self.done {
            self.done = true;
            completed = true;
        }
        ctx.out.send(Packet {
            src: f.dst,
            dst: f.src,
            flow: f.id,
            size: p.ctrl_size as u32,
            kind: KIND_ACK,
            ack: self.cum_bytes(f, p),
            seq: pkt.seq,
            aux: pkt.seq + (pkt.payload as u64).max(1),
            aux2: if pkt.ecn == Ecn::Ce { ACK_ECE } else { 0 },
            ts: pkt.ts,
            ..Default::default()
        });
        completed
    }
    fn on_probe(&self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, pkt: &Packet) {
        ctx.out.send(Packet {
            src: f.dst,
            dst: f.src,
            flow: f.id,
            size: p.ctrl_size as u32,
            kind: KIND_PROBE_ACK,
            ack: self.cum_bytes(f, p),
            seq: pkt.seq,
            ts: pkt.ts,
            ..Default::default()
        });
    }
}

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

    /// The flow's request: its key, demand, base rate and time to live.
    fn request(p: &PaseParams, f: &FlowInfo, remaining: u64, rtt: Time) -> (ArbKey, Rate, Rate, Time) {
        let key = ArbKey { deadline: f.deadline.map(|d| f.start + d), remaining, flow: f.id };
        let secs = rtt.as_secs_f64().max(1e-12);
        let demand = Rate(f.host_rate.0.min((remaining as f64 * 8.0 / secs) as u64).max(1));
        let base = Rate(((p.mtu * 8) as f64 / secs) as u64);
        (key, demand, base, Time(p.refresh(f).0.saturating_mul(4)))
    }

    /// An arbitration request of flow `f` to `to`: its key and demand, the half it
    /// arbitrates and the answer combined so far (if any), issued by the source at `issued`.
    #[allow(clippy::too_many_arguments)]
    fn request_packet(
        f: &FlowInfo,
        p: &PaseParams,
        to: NodeId,
        key: ArbKey,
        demand_kbps: u32,
        half: Half,
        acc: Option<Decision>,
        issued: Time,
    ) -> Packet {
        let mut rank = if half == Half::Source { REQ_SOURCE_HALF } else { 0 };
        if let Some(a) = acc {
            rank |= REQ_HAS_ANSWER | a.queue as u32;
        }
        Packet {
            dst: to,
            flow: f.id,
            size: p.ctrl_size as u32,
            kind: KIND_ARB_REQ,
            aux: key.remaining,
            ack: key.deadline.map_or(u64::MAX, |t| t.0),
            aux2: demand_kbps,
            rank,
            seq: acc.map_or(u64::MAX, |a| a.rate.0),
            ts: issued,
            ..Default::default()
        }
    }

    /// The source arbitrates its uplink, asks its ToR for the rest of the source half (unless
    /// pruned or endpoint-only) and the destination for the destination half. Returns its own
    /// answer and whether the source half climbs.
    fn arbitrate_at_source(&mut self, ctx: &mut Ctx, f: &FlowInfo, remaining: u64, rtt: Time) -> (Decision, bool) {
        let p = &self.params;
        let (key, demand, base, ttl) = Pase::request(p, f, remaining, rtt);
        let q = p.flow_queues();
        let arb = self.up[f.src as usize].get_or_insert_with(|| Arbitrator::new(f.host_rate, q));
        let d = arb.arbitrate(ctx.now, key, demand, base, ttl);
        let path = self.paths.get(f.id);
        let mut climbs = false;
        if p.end_to_end && path.len() > 2 && !(p.pruning && d.queue >= p.prune_queues) {
            let pl = plan(path, Half::Source, true, p.delegation);
            if let Some(next) = pl.stops().get(1) {
                let pkt = Pase::request_packet(f, p, next.node, key, kbps(demand), Half::Source, Some(d), ctx.now);
                if let Some(s) = self.senders.get_mut(f.id as usize).and_then(|s| s.as_mut()) {
                    s.climbed = true;
                }
                ctx.out.send(pkt);
                self.sent += 1;
                climbs = true;
            }
        }
        ctx.out.send(Pase::request_packet(f, p, f.dst, key, kbps(demand), Half::Destination, None, ctx.now));
        self.sent += 1;
        (d, climbs)
    }

    /// A request reached one of its stops (a switch, or the destination host for the
    /// destination half): arbitrate the stop's links, then forward or answer the source.
    fn at_stop(&mut self, ctx: &mut Ctx, f: &FlowInfo, pkt: &Packet) {
        let half = if pkt.rank & REQ_SOURCE_HALF != 0 { Half::Source } else { Half::Destination };
        if pkt.rank & REQ_RELEASE != 0 {
            return self.on_release(ctx, f, pkt, half);
        }
        let p = &self.params;
        let acc = (pkt.rank & REQ_HAS_ANSWER != 0).then_some(Decision { queue: pkt.rank as u8, rate: Rate(pkt.seq) });
        let key = ArbKey { deadline: (pkt.ack != u64::MAX).then_some(Time(pkt.ack)), remaining: pkt.aux, flow: f.id };
        let demand = Rate(pkt.aux2 as u64 * 1000);
        let (_, _, base, host_ttl) = Pase::request(p, f, pkt.aux, f.base_rtt);
        let switch_ttl = Time(p.refresh(f).0.saturating_mul(2));
        let path = self.paths.get(f.id);
        let pl = plan(path, half, p.end_to_end, p.delegation);
        let q = p.flow_queues();
        let at_host = ctx.host == f.dst && half == Half::Destination;
        let at = if at_host { 0 } else { pl.find(ctx.host).unwrap_or(usize::MAX) };
        if at == usize::MAX || (at == 0 && !at_host) {
            return; // not a stop of this request (a stale or misdirected message)
        }
        let stop = pl.stops().get(at).copied();
        let mut d: Option<Decision> = acc;
        let mut add = |x: Decision| d = Some(d.map_or(x, |y| y.combine(x)));
        if at_host {
            let cap = path.last().map_or(f.path_rate, |h| h.rate);
            let arb = self.down[f.dst as usize].get_or_insert_with(|| Arbitrator::new(cap, q));
            add(arb.arbitrate(ctx.now, key, demand, base, host_ttl));
            if let Some(h) = path.last() {
                count(&mut self.msgs, h.port);
            }
        } else if let Some(h) = stop.and_then(|s| s.own) {
            if self.links.len() <= h.port as usize {
                self.links.resize_with(h.port as usize + 1, || None);
            }
            let arb = self.links[h.port as usize].get_or_insert_with(|| Arbitrator::new(h.rate, q));
            add(arb.arbitrate(ctx.now, key, demand, base, switch_ttl));
            count(&mut self.msgs, h.port);
        }
        if let Some(v) = stop.and_then(|s| s.virt) {
            let n = self.children.get(&v.port).map_or(1, |c| c.len());
            let (arb, last) = self
                .virt
                .entry((v.port, ctx.host))
                .or_insert_with(|| (Arbitrator::new(Delegated::initial_share(v.rate, n), q), None));
            add(arb.arbitrate(ctx.now, key, demand, base, switch_ttl));
            if last.is_none_or(|t| ctx.now >= t + p.delegation_period) {
                *last = Some(ctx.now);
                let owner = if half == Half::Source { v.node } else { v.peer };
                let live = Rate(arb.live_demand(ctx.now).min(v.rate.0));
                ctx.out.send(Packet {
                    dst: owner,
                    flow: f.id,
                    size: p.ctrl_size as u32,
                    kind: KIND_DELEG_REPORT,
                    aux: v.port as u64,
                    aux2: kbps(live),
                    ts: ctx.now,
                    ..Default::default()
                });
                self.sent += 1;
            }
        }
        let Some(d) = d else { return };
        let last_stop = at + 1 >= pl.len().max(1);
        if last_stop || (p.pruning && d.queue >= p.prune_queues) {
            ctx.out.send(Packet {
                dst: f.src,
                flow: f.id,
                size: p.ctrl_size as u32,
                kind: KIND_ARB_RESP,
                rank: d.queue as u32,
                aux2: kbps(d.rate),
                aux: (half == Half::Source) as u64,
                ts: pkt.ts,
                ..Default::default()
            });
        } else {
            let next = pl.stops()[at + 1].node;
            ctx.out.send(Pase::request_packet(f, p, next, key, pkt.aux2, half, Some(d), pkt.ts));
        }
        self.sent += 1;
    }

    /// A child's report reached the owner of a delegated link: answer with its new share.
    fn on_report(&mut self, ctx: &mut Ctx, f: &FlowInfo, pkt: &Packet) {
        let port = pkt.aux as u32;
        let Some(hop) = self.paths.get(f.id).iter().find(|h| h.port == port).copied() else { return };
        let p = &self.params;
        count(&mut self.msgs, port);
        let children = self.children.get(&port).map_or(&[][..], |c| &c[..]);
        let dl = self.deleg.entry(port).or_insert_with(|| Delegated::new(hop.rate, children));
        let floor = Rate(((p.mtu * 8) as f64 / f.base_rtt.as_secs_f64().max(1e-12)) as u64);
        let share = dl.report(pkt.src, Rate(pkt.aux2 as u64 * 1000), ctx.now, p.delegation_period, floor);
        ctx.out.send(Packet {
            dst: pkt.src,
            flow: f.id,
            size: p.ctrl_size as u32,
            kind: KIND_DELEG_SHARE,
            aux: port as u64,
            seq: share.0,
            ts: ctx.now,
            ..Default::default()
        });
        self.sent += 1;
    }

    fn arm_refresh(s: &mut PaseSender, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams) {
        let at = ctx.now + p.refresh(f);
        let gen = s.arb_timer.arm(at);
        ctx.out.timer(at, token(f.id, TIMER_ARB, gen));
    }

    fn finish(&mut self, ctx: &mut Ctx, f: &FlowInfo) {
        let id = f.id as usize;
        if let Some(s) = self.senders[id].take() {
            self.stats[id] = s.stats;
            if s.climbed {
                self.release(ctx, f, Half::Source);
            }
        }
        if let Some(a) = self.up[f.src as usize].as_mut() {
            a.remove(f.id);
        }
    }

    /// The flow ended: tell the next stop of `half` to forget it (it relays the release up).
    fn release(&mut self, ctx: &mut Ctx, f: &FlowInfo, half: Half) {
        let p = &self.params;
        let pl = plan(self.paths.get(f.id), half, p.end_to_end, p.delegation);
        if let Some(next) = pl.stops().get(1) {
            let key = ArbKey { deadline: None, remaining: 0, flow: f.id };
            let mut pkt = Pase::request_packet(f, p, next.node, key, 0, half, None, ctx.now);
            pkt.rank |= REQ_RELEASE;
            ctx.out.send(pkt);
            self.sent += 1;
        }
    }

    /// A release reached a stop: forget the flow; relay it up if the flow was known here.
    fn on_release(&mut self, ctx: &mut Ctx, f: &FlowInfo, pkt: &Packet, half: Half) {
        let p = &self.params;
        let pl = plan(self.paths.get(f.id), half, p.end_to_end, p.delegation);
        let Some(at) = pl.find(ctx.host).filter(|&a| a > 0) else { return };
        let stop = pl.stops()[at];
        let mut known = false;
        if let Some(h) = stop.own {
            count(&mut self.msgs, h.port);
            if let Some(Some(a)) = self.links.get_mut(h.port as usize) {
                known |= a.remove(f.id);
            }
        }
        if let Some(v) = stop.virt {
            if let Some(a) = self.virt.get_mut(&(v.port, ctx.host)) {
                known |= a.0.remove(f.id);
            }
        }
        if known {
            if let Some(next) = pl.stops().get(at + 1) {
                let mut fwd = *pkt;
                fwd.dst = next.node;
                ctx.out.send(fwd);
                self.sent += 1;
            }
        }
    }
}

fn count(msgs: &mut Vec<u64>, port: u32) {
    if msgs.len() <= port as usize {
        msgs.resize(port as usize + 1, 0);
    }
    msgs[port as usize] += 1;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::NodeId;
    use crate::transport::{Actions, PathHop};
    use crate::units::Bytes;

    const MSS: u64 = 1460;

    fn flow(id: FlowId, src: NodeId, dst: NodeId, size: u64) -> FlowInfo {
        FlowInfo {
            id,
            src,
            dst,
            size: Bytes(size),
            start: Time::ZERO,
            base_rtt: Time::us(12),
            path_rate: Rate::gbps(10),
            host_rate: Rate::gbps(10),
            deadline: None,
            background: false,
        }
    }

    struct H {
        t: Pase,
        flows: Vec<FlowInfo>,
    }

    impl H {
        fn new(cfg: serde_json::Value, flows: Vec<FlowInfo>) -> H {
            let net = NetInfo::for_tests(1500, Time::us(12), Rate::gbps(10));
            H { t: Pase::from_config(&cfg, &net).unwrap(), flows }
        }
        fn call(&mut self, now: Time, host: NodeId, f: impl FnOnce(&mut Pase, &mut Ctx)) -> Actions {
            let mut out = Actions::new();
            let mut ctx = Ctx { now, host, flows: &self.flows, out: &mut out };
            f(&mut self.t, &mut ctx);
            out
        }
        fn start(&mut self, f: FlowId) -> Actions {
            let host = self.flows[f as usize].src;
            self.call(Time::ZERO, host, |t, c| t.start_flow(c, f))
        }
        fn deliver(&mut self, now: Time, p: &Packet) -> Actions {
            self.call(now, p.dst, |t, c| t.on_packet(c, p))
        }
        fn deliver_all(&mut self, now: Time, ps: &[Packet]) -> Vec<Packet> {
            ps.iter().flat_map(|p| self.deliver(now, p).sends).collect()
        }
        fn fire(&mut self, now: Time, host: NodeId, tok: u64) -> Actions {
            self.call(now, host, |t, c| t.on_timer(c, tok))
        }
        fn snd(&self, f: FlowId) -> &PaseSender {
            self.t.sender(f).unwrap()
        }
    }

    fn data(ps: &[Packet]) -> Vec<Packet> {
        ps.iter().filter(|p| p.kind == KIND_DATA).copied().collect()
    }
    fn of_kind(ps: &[Packet], kind: u8) -> Vec<Packet> {
        ps.iter().filter(|p| p.kind == kind).copied().collect()
    }
    /// The latest timer of `kind` in `a`.
    fn timer(a: &Actions, kind: u8) -> (Time, u64) {
        *a.timers.iter().rev().find(|t| untoken(t.1).1 == kind).expect("timer armed")
    }

    #[test]
    fn start_in_top_queue_sends_rref_times_rtt_and_asks_the_destination() {
        let mut h = H::new(serde_json::Value::Null, vec![flow(0, 0, 1, 100 * MSS)]);
        let a = h.start(0);
        // Alone on its uplink: top queue, R_ref = demand = min(10 Gbps, 146 000 B x 8 / 12 us)
        // = 10 Gbps; cwnd = 10 Gbps x 12 us / (8 x 1500 B) = 10 packets.
        let d = data(&a.sends);
        assert_eq!(d.len(), 10);
        assert!(d.iter().all(|p| p.prio == 0 && p.ecn == Ecn::Ect));
        let req = of_kind(&a.sends, KIND_ARB_REQ);
        assert_eq!(req.len(), 1);
        assert_eq!((req[0].aux, req[0].aux2, req[0].ack, req[0].prio), (100 * MSS, 10_000_000, u64::MAX, 0));
        assert_eq!(timer(&a, TIMER_ARB).0, Time::us(12), "refresh every base RTT");
        assert_eq!(timer(&a, TIMER_RTO).0, Time::ms(10), "top-queue timeout");
        assert_eq!(h.t.uplink(0).unwrap().requests(), 1);
    }

    /// Two flows into host 2 from different hosts: each source's uplink puts its flow on top,
    /// the destination's downlink arbitrator does not.
    fn two_into_one() -> (H, Vec<Packet>, Vec<Packet>) {
        let mut h = H::new(serde_json::Value::Null, vec![flow(0, 0, 2, 100 * MSS), flow(1, 1, 2, 200 * MSS)]);
        let a0 = h.start(0).sends;
        let a1 = h.start(1).sends;
        (h, a0, a1)
    }

    #[test]
    fn destination_arbitration_demotes_the_larger_flow_to_an_intermediate_queue() {
        let (mut h, a0, a1) = two_into_one();
        let r0 = h.deliver_all(Time::us(3), &of_kind(&a0, KIND_ARB_REQ));
        assert_eq!((r0[0].kind, r0[0].rank, r0[0].aux2), (KIND_ARB_RESP, 0, 10_000_000));
        // Flow 1 ranks below flow 0 (larger): ADH = 10 Gbps = C -> queue 1, base rate one
        // MTU per RTT = 1500 x 8 / 12 us = 1 Gbps.
        let r1 = h.deliver_all(Time::us(3), &of_kind(&a1, KIND_ARB_REQ));
        assert_eq!((r1[0].rank, r1[0].aux2), (1, 1_000_000));
        assert_eq!(h.t.downlink(2).unwrap().requests(), 2);
        let sent = h.deliver_all(Time::us(6), &r1);
        assert!(sent.is_empty(), "10 packets already out, the new window is 1");
        let s = h.snd(1);
        assert_eq!((s.queue, s.cwnd, s.inter, s.rref), (1, 1.0, true, Rate::gbps(1)));
        // An unmarked ACK in an intermediate queue: cwnd = 1 + 1/1 = 2 (DCTCP increase); the
        // first window ends at once and alpha = 15/16 x 1 + 1/16 x 0 = 0.9375.
        let acks = h.deliver_all(Time::us(8), &data(&a1)[..1]);
        h.deliver_all(Time::us(10), &acks);
        assert_eq!(h.snd(1).cwnd, 2.0);
        assert_eq!(h.snd(1).alpha, 0.9375);
        // A marked ACK: cwnd = 2 x (1 - 0.9375 / 2) = 1.0625.
        let mut ce = data(&a1)[1];
        ce.ecn = Ecn::Ce;
        let acks = h.deliver_all(Time::us(11), &[ce]);
        assert_eq!(acks[0].aux2 & ACK_ECE, ACK_ECE);
        h.deliver_all(Time::us(12), &acks);
        assert_eq!(h.snd(1).cwnd, 1.0625);
    }

    #[test]
    fn reordering_guard_holds_a_promoted_flow_until_its_flight_is_acknowledged() {
        let (mut h, a0, a1) = two_into_one();
        h.deliver_all(Time::us(3), &of_kind(&a0, KIND_ARB_REQ));
        let r1 = h.deliver_all(Time::us(3), &of_kind(&a1, KIND_ARB_REQ));
        h.deliver_all(Time::us(6), &r1);
        // Flow 1 in queue 1 with 10 packets out. Flow 0 runs to its end.
        let acks0 = h.deliver_all(Time::us(7), &data(&a0));
        let more0 = h.deliver_all(Time::us(8), &acks0);
        let rest: Vec<Packet> = data(&more0);
        let mut pending = rest;
        let mut t = 9;
        while !pending.is_empty() {
            let acks = h.deliver_all(Time::us(t), &pending);
            pending = data(&h.deliver_all(Time::us(t + 1), &acks));
            t += 2;
        }
        // Flow 0 is done; the destination forgot it and holds flow 1 alone.
        assert!(h.t.sender(0).is_none());
        assert_eq!(h.t.downlink(2).unwrap().len(), 1);
        // Flow 1 refreshes: the destination now puts it on top.
        // Its refresh timer (generation 1, armed at its start) fires.
        let refresh = h.fire(Time::us(t), 1, token(1, TIMER_ARB, 1));
        let r = h.deliver_all(Time::us(t + 1), &of_kind(&refresh.sends, KIND_ARB_REQ));
        assert_eq!(r[0].rank, 0);
        let sent = h.deliver_all(Time::us(t + 2), &r);
        // Its first ten packets are still unacknowledged: nothing new is sent.
        assert!(sent.is_empty());
        assert_eq!(h.snd(1).pending_up, Some(0));
        assert_eq!(h.snd(1).queue, 1);
        // The flight drains: then the flow moves up and sends a full R_ref x RTT window.
        let old: Vec<Packet> = data(&a1);
        let acks = h.deliver_all(Time::us(t + 3), &old);
        let sent = data(&h.deliver_all(Time::us(t + 4), &acks));
        assert_eq!(h.snd(1).queue, 0);
        assert!(h.snd(1).pending_up.is_none());
        assert!(!sent.is_empty() && sent.iter().all(|p| p.prio == 0));
    }

    #[test]
    fn bottom_queue_probe_reveals_a_loss_and_the_packet_is_resent() {
        // 3 queues: 0 top, 1 bottom for flows, 2 background.
        let cfg = serde_json::json!({"num_que": 3});
        let mut h = H::new(cfg, vec![flow(0, 0, 2, 100 * MSS), flow(1, 1, 2, 200 * MSS)]);
        let a0 = h.start(0).sends;
        let a1 = h.start(1).sends;
        h.deliver_all(Time::us(3), &of_kind(&a0, KIND_ARB_REQ));
        let r1 = h.deliver_all(Time::us(3), &of_kind(&a1, KIND_ARB_REQ));
        assert_eq!(r1[0].rank, 1, "the bottom queue");
        let resp = h.deliver(Time::us(6), &r1[0]);
        assert_eq!(h.snd(1).cwnd, 1.0);
        // Every packet of its first window is lost. A probe timer runs one RTT (12 us).
        let (at, tok) = timer(&resp, TIMER_PROBE);
        assert_eq!(at, Time::us(18));
        let pr = h.fire(at, 1, tok);
        let probe = of_kind(&pr.sends, KIND_PROBE);
        assert_eq!(probe.len(), 1);
        assert_eq!((probe[0].prio, probe[0].seq, probe[0].size), (1, 10 * MSS, 64));
        let pack = h.deliver_all(Time::us(20), &probe);
        assert_eq!((pack[0].kind, pack[0].ack), (KIND_PROBE_ACK, 0));
        // The probe arrived, the data sent before it did not: resend from packet 0, one packet.
        let resent = data(&h.deliver_all(Time::us(22), &pack));
        assert_eq!(resent.iter().map(|p| p.seq / MSS).collect::<Vec<_>>(), vec![0]);
        assert_eq!(resent[0].prio, 1);
        assert_eq!(h.snd(1).stats.retx_bytes, MSS);
    }

    #[test]
    fn lower_queue_timeout_sends_a_probe_and_backs_off() {
        let cfg = serde_json::json!({"probing": false});
        let mut h = H::new(cfg, vec![flow(0, 0, 2, 100 * MSS), flow(1, 1, 2, 200 * MSS)]);
        let a0 = h.start(0).sends;
        let a1 = h.start(1).sends;
        h.deliver_all(Time::us(3), &of_kind(&a0, KIND_ARB_REQ));
        let r1 = h.deliver_all(Time::us(3), &of_kind(&a1, KIND_ARB_REQ));
        let resp = h.deliver(Time::us(6), &r1[0]);
        assert!(resp.timers.iter().all(|t| untoken(t.1).1 != TIMER_PROBE), "probing off");
        // The RTO armed at the start (top queue, 10 ms) fires while the flow is in queue 1:
        // a probe instead of data (generation 1: the only arming), and the next timeout is
        // 200 ms x 2 later.
        let t = h.fire(Time::ms(10), 1, token(1, TIMER_RTO, 1));
        assert_eq!(of_kind(&t.sends, KIND_PROBE).len(), 1);
        assert!(data(&t.sends).is_empty());
        assert_eq!(timer(&t, TIMER_RTO).0, Time::ms(10) + Time::ms(400));
        assert_eq!(h.snd(1).stats.timeouts, 1);
    }

    #[test]
    fn top_queue_timeout_resends_from_the_first_unacknowledged_packet() {
        let mut h = H::new(serde_json::Value::Null, vec![flow(0, 0, 1, 20 * MSS)]);
        let a = h.start(0);
        let d = data(&a.sends);
        // Packets 1..9 delivered, packet 0 lost.
        let acks = h.deliver_all(Time::us(5), &d[1..]);
        h.deliver_all(Time::us(10), &acks);
        // The live RTO was re-armed by the last ACK (10 ms after it).
        let fired = h.fire(Time::us(10) + Time::ms(10), 0, token(0, TIMER_RTO, h_rto_gen(&h)));
        let re = data(&fired.sends);
        assert_eq!(re[0].seq, 0, "go back to packet 0");
        assert!(re.iter().all(|p| p.seq / MSS == 0 || p.seq / MSS >= 10), "delivered packets skipped");
    }

    /// The generation of the sender's live RTO.
    fn h_rto_gen(h: &H) -> u32 {
        let mut slot = h.snd(0).rto_timer;
        slot.arm(Time::ZERO) - 1
    }

    #[test]
    fn config_errors_name_the_field() {
        let net = NetInfo::for_tests(1500, Time::us(12), Rate::gbps(10));
        for (cfg, field) in [
            (serde_json::json!({"num_que": 1}), "transport.num_que"),
            (serde_json::json!({"num_que": 9}), "transport.num_que"),
            (serde_json::json!({"min_rto_top": "0us"}), "transport.min_rto_top"),
            (serde_json::json!({"g": 0}), "transport.g"),
            (serde_json::json!({"refresh": "0us"}), "transport.refresh"),
            (serde_json::json!({"window": 1}), "transport.window"),
            (serde_json::json!({"arbitration": "global"}), "transport.arbitration"),
            (serde_json::json!({"prune_queues": 8}), "transport.prune_queues"),
            (serde_json::json!({"delegation_period": "0us"}), "transport.delegation_period"),
        ] {
            assert_eq!(Pase::from_config(&cfg, &net).err().expect("rejected").field(), field, "{cfg}");
        }
    }

    /// 3-tier paths, every link 10 Gbps: host 0 or 1 -> ToR 10 -> Agg 20 -> Core 30 -> Agg 21
    /// -> ToR 11 -> host 5 (ports 100 + hop, host 1's uplink 110), and host 2 -> ToR 12 -> Agg
    /// 20 -> Core 30 -> Agg 21 -> ToR 13 -> host 6 (ports 200 + hop, the Agg-Core hop shared).
    fn tree(h: &mut H) {
        let hop = |port, node, peer| PathHop { port, node, peer, rate: Rate::gbps(10) };
        let mut paths = FlowPaths::default();
        for f in &h.flows {
            let p = match f.src {
                0 | 1 => vec![
                    hop(if f.src == 0 { 100 } else { 110 }, f.src, 10),
                    hop(101, 10, 20),
                    hop(102, 20, 30),
                    hop(103, 30, 21),
                    hop(104, 21, 11),
                    hop(105, 11, 5),
                ],
                _ => vec![
                    hop(200, 2, 12),
                    hop(201, 12, 20),
                    hop(102, 20, 30),
                    hop(203, 30, 21),
                    hop(204, 21, 13),
                    hop(205, 13, 6),
                ],
            };
            paths.push(&p);
        }
        h.t.set_flow_paths(paths);
    }

    fn at_switch(h: &mut H, now: Time, p: &Packet) -> Vec<Packet> {
        h.call(now, p.dst, |t, c| t.on_switch_packet(c, p)).sends
    }

    #[test]
    fn inter_rack_flow_waits_for_its_tor_which_answers_for_the_delegated_core_link() {
        let mut h = H::new(serde_json::Value::Null, vec![flow(0, 0, 5, 100 * MSS), flow(1, 2, 6, 100 * MSS)]);
        tree(&mut h);
        let a = h.start(0);
        // No data yet: the source waits for its ToR. Two requests: the source half to ToR 10
        // (carrying the source's own answer: top queue, 10 Gbps) and the destination half to 5.
        assert!(data(&a.sends).is_empty());
        assert!(!h.snd(0).started);
        let req = of_kind(&a.sends, KIND_ARB_REQ);
        assert_eq!(req.iter().map(|p| p.dst).collect::<Vec<_>>(), vec![10, 5]);
        assert_eq!((req[0].rank, req[0].seq), (REQ_SOURCE_HALF | REQ_HAS_ANSWER, 10_000_000_000));
        assert_eq!(req[1].rank, 0);
        // ToR 10 arbitrates its uplink (port 101: alone, top queue, 10 Gbps) and its virtual
        // share of the Agg-Core link 102, delegated to ToRs 10 and 12: 10 / 2 = 5 Gbps, so
        // R_ref = min(10, 5) = 5 Gbps. It reports its demand (10 Gbps) to Agg 20 and answers
        // the source itself: the half ends at the ToR.
        let out = at_switch(&mut h, Time::us(1), &req[0]);
        let rep = of_kind(&out, KIND_DELEG_REPORT);
        assert_eq!((rep[0].dst, rep[0].aux, rep[0].aux2), (20, 102, 10_000_000));
        let ans = of_kind(&out, KIND_ARB_RESP);
        assert_eq!((ans[0].dst, ans[0].aux, ans[0].rank, ans[0].aux2), (0, 1, 0, 5_000_000));
        assert_eq!(h.t.link(101).unwrap().len(), 1);
        assert_eq!(h.t.virtual_link(102, 10).unwrap().capacity(), Rate::gbps(5));
        // The answer starts the flow: window = 5 Gbps x 12 us / 12 000 bit = 5 packets.
        let sent = h.deliver(Time::us(2), &ans[0]).sends;
        assert!(h.snd(0).started);
        assert_eq!(data(&sent).len(), 5);
        // Agg 20 gives ToR 10 the whole link (10 G reported, nothing from ToR 12: spare 0).
        // (The runner stamps a packet's source; here by hand.)
        let report = Packet { src: 10, ..rep[0] };
        let share = at_switch(&mut h, Time::us(2), &report);
        assert_eq!((share[0].kind, share[0].dst, share[0].seq), (KIND_DELEG_SHARE, 10, 10_000_000_000));
        at_switch(&mut h, Time::us(3), &share[0]);
        assert_eq!(h.t.virtual_link(102, 10).unwrap().capacity(), Rate::gbps(10));
        // A second request within the delegation period sends no second report.
        let again = at_switch(&mut h, Time::us(4), &req[0]);
        assert!(of_kind(&again, KIND_DELEG_REPORT).is_empty());
        assert_eq!(h.t.arb_msgs(101), 2);
        assert_eq!(h.t.arb_msgs(102), 1, "the report, at the Agg-Core link's owner");
    }

    #[test]
    fn early_pruning_stops_low_flows_at_the_source_and_at_the_tor() {
        // Without delegation the source half is host -> ToR 10 -> Agg 20; 4 queues; only the
        // top queue climbs.
        let cfg = serde_json::json!({"num_que": 4, "prune_queues": 1, "delegation": false});
        let flows = vec![flow(0, 0, 5, 100 * MSS), flow(1, 0, 5, 200 * MSS), flow(2, 1, 5, 300 * MSS)];
        let mut h = H::new(cfg, flows);
        tree(&mut h);
        let a0 = h.start(0).sends;
        // Flow 1 shares host 0's uplink below flow 0: ADH = 10 G = C -> queue 1, pruned at the
        // source: no request to the ToR, and it sends at once (one packet in queue 1).
        let a1 = h.start(1).sends;
        assert_eq!(of_kind(&a1, KIND_ARB_REQ).iter().map(|p| p.dst).collect::<Vec<_>>(), vec![5]);
        assert!(h.snd(1).started);
        assert_eq!(data(&a1).iter().map(|p| p.prio).collect::<Vec<_>>(), vec![1]);
        // Flow 0 climbs: ToR 10 (port 101, top queue) forwards to Agg 20 with the answer so far.
        let up = at_switch(&mut h, Time::us(1), &of_kind(&a0, KIND_ARB_REQ)[0]);
        assert_eq!((up[0].kind, up[0].dst, up[0].rank & 0xFF, up[0].seq), (KIND_ARB_REQ, 20, 0, 10_000_000_000));
        // Agg 20 is the top of the half: it answers the source.
        let top = at_switch(&mut h, Time::us(2), &up[0]);
        assert_eq!((top[0].kind, top[0].dst, top[0].rank, top[0].aux), (KIND_ARB_RESP, 0, 0, 1));
        // Flow 2 (host 1, alone on its uplink) reaches ToR 10 below flow 0: ADH = 10 G ->
        // queue 1, pruned at the ToR: answered there with the base rate, 1500 B x 8 / 12 us
        // = 1 Gbps; Agg 20 never sees it.
        let a2 = h.start(2).sends;
        let r = at_switch(&mut h, Time::us(3), &of_kind(&a2, KIND_ARB_REQ)[0]);
        assert_eq!((r[0].kind, r[0].dst, r[0].rank, r[0].aux2), (KIND_ARB_RESP, 1, 1, 1_000_000));
        assert_eq!(h.t.link(102).unwrap().len(), 1);
        assert_eq!(h.t.link(101).unwrap().len(), 2);
    }

    #[test]
    fn a_release_climbs_as_far_as_the_flow_was_known() {
        let cfg = serde_json::json!({"delegation": false});
        let mut h = H::new(cfg, vec![flow(0, 0, 5, 100 * MSS)]);
        tree(&mut h);
        let a = h.start(0).sends;
        let up = at_switch(&mut h, Time::us(1), &of_kind(&a, KIND_ARB_REQ)[0]);
        at_switch(&mut h, Time::us(2), &up[0]);
        assert_eq!((h.t.link(101).unwrap().len(), h.t.link(102).unwrap().len()), (1, 1));
        // The flow ends: the source's release reaches ToR 10, which forgets the flow and
        // relays to Agg 20, which forgets it and stops (the top of the half).
        let mut rel = of_kind(&a, KIND_ARB_REQ)[0];
        rel.rank = REQ_SOURCE_HALF | REQ_RELEASE;
        let fwd = at_switch(&mut h, Time::us(9), &rel);
        assert_eq!((fwd[0].dst, fwd[0].rank & REQ_RELEASE), (20, REQ_RELEASE));
        assert!(at_switch(&mut h, Time::us(10), &fwd[0]).is_empty());
        assert_eq!((h.t.link(101).unwrap().len(), h.t.link(102).unwrap().len()), (0, 0));
        // A second release finds nothing at the ToR and goes no further.
        assert!(at_switch(&mut h, Time::us(11), &rel).is_empty());
    }

    /// `run.abort_at_deadline` abandons a flow whose source half climbed to ToR 10: at the
    /// source the sender is gone and a source-half release goes to ToR 10; at the destination
    /// a destination-half release goes to its ToR 11; later arbitration requests for the flow
    /// are ignored there, and a second call sends nothing.
    #[test]
    fn abandoned_flow_releases_both_halves_and_is_forgotten() {
        let cfg = serde_json::json!({"delegation": false});
        let mut h = H::new(cfg, vec![flow(0, 0, 5, 100 * MSS)]);
        tree(&mut h);
        let a = h.start(0).sends;
        let up = at_switch(&mut h, Time::us(1), &of_kind(&a, KIND_ARB_REQ)[0]);
        at_switch(&mut h, Time::us(2), &up[0]);
        assert_eq!(h.t.link(101).unwrap().len(), 1);
        let src = h.call(Time::us(20), 0, |t, c| t.on_flow_abandoned(c, 0)).sends;
        assert!(h.t.sender(0).is_none());
        let rel = of_kind(&src, KIND_ARB_REQ);
        assert_eq!(rel.len(), 1);
        assert_eq!((rel[0].dst, rel[0].rank & (REQ_RELEASE | REQ_SOURCE_HALF)), (10, REQ_RELEASE | REQ_SOURCE_HALF));
        let fwd = at_switch(&mut h, Time::us(21), &rel[0]);
        at_switch(&mut h, Time::us(22), &fwd[0]);
        assert_eq!(h.t.link(101).unwrap().len(), 0);
        let dst = h.call(Time::us(20), 5, |t, c| t.on_flow_abandoned(c, 0)).sends;
        let rel = of_kind(&dst, KIND_ARB_REQ);
        assert_eq!(rel.len(), 1);
        assert_eq!((rel[0].dst, rel[0].rank & (REQ_RELEASE | REQ_SOURCE_HALF)), (11, REQ_RELEASE));
        assert!(h.call(Time::us(30), 5, |t, c| t.on_flow_abandoned(c, 0)).sends.is_empty());
    }

    /// Algorithm 2 and §3.2: a flow entering an intermediate queue from the top or the bottom
    /// queue (or at its start) is set to one packet; one moving between intermediate queues
    /// keeps its window and grows by DCTCP's 1/cwnd per ACK; the top queue sets R_ref x RTT
    /// and the bottom queue one packet.
    #[test]
    fn intermediate_queue_entry_restarts_at_one_packet_and_moves_between_them_keep_the_window() {
        let h = H::new(serde_json::Value::Null, vec![flow(0, 0, 1, 1000 * MSS)]);
        let (f, p) = (&h.flows[0], &h.t.params);
        assert_eq!(p.bottom(), 6);
        let mut s = PaseSender::new(f, p, Decision { queue: 2, rate: Rate::gbps(1) });
        s.adjust(f, p, 0);
        assert_eq!((s.cwnd, s.inter), (1.0, true), "a new flow in an intermediate queue starts at one packet");
        s.adjust(f, p, 3);
        let grown = s.cwnd;
        assert!(grown > 2.0 && grown < 3.0, "three ACKs of 1/cwnd each: {grown}");
        // Demoted from queue 2 to queue 5, both intermediate: the window stays and grows on.
        s.queue = 5;
        s.adjust(f, p, 0);
        assert_eq!((s.cwnd, s.inter), (grown, true));
        s.adjust(f, p, 1);
        assert_eq!(s.cwnd, grown + 1.0 / grown);
        // Promoted to the top: R_ref x RTT = 10 Gbit/s x 12 us / (8 x 1500 B) = 10 packets.
        s.queue = 0;
        s.rref = Rate::gbps(10);
        s.adjust(f, p, 0);
        assert_eq!((s.cwnd, s.inter), (10.0, false));
        // Demoted from the top into an intermediate queue: back to one packet.
        s.queue = 1;
        s.adjust(f, p, 0);
        assert_eq!((s.cwnd, s.inter), (1.0, true));
        s.adjust(f, p, 4);
        assert!(s.cwnd > 2.0);
        // The bottom queue holds one packet; coming back up into an intermediate queue restarts.
        s.queue = 6;
        s.adjust(f, p, 5);
        assert_eq!((s.cwnd, s.inter), (1.0, false));
        s.queue = 3;
        s.adjust(f, p, 0);
        assert_eq!((s.cwnd, s.inter), (1.0, true));
    }

    #[test]
    fn pase_dctcp_ignores_the_reference_rate() {
        let cfg = serde_json::json!({"reference_rate": false});
        let mut h = H::new(cfg, vec![flow(0, 0, 1, 100 * MSS)]);
        let a = h.start(0);
        // Top queue, but the window is DCTCP's initial 10 packets, not R_ref x RTT; each
        // unmarked ACK in slow start adds one packet.
        assert_eq!(data(&a.sends).len(), 10);
        let acks = h.deliver_all(Time::us(5), &data(&a.sends)[..2]);
        h.deliver_all(Time::us(6), &acks);
        assert_eq!(h.snd(0).cwnd, 12.0);
    }
}
