//! The generic runner: one event loop for every scenario and protocol.
//!
//! It owns the event queue, the packet arena, the network and the transport, feeds the
//! workload's flows to the transport at their arrival times, moves packets hop by hop,
//! and records the results. Per hop a packet costs one `LinkArrive` event, plus one
//! `TxDone` event when it had to wait behind another packet (a port that finds its queue
//! empty after a transmission schedules nothing). A packet offered to an idle port with an
//! empty queue goes straight to the link when the port's policy allows it
//! ([`crate::queue::QueueDisc::idle_passthrough`]). A link delivers in FIFO order, so only
//! the packet at the head of each link is in the event queue (the rest wait in the
//! port's pipe): the queue holds about one entry per busy link and per armed timer rather
//! than one per packet in flight, which keeps it small and cache-resident.
//!
//! A shaping queue policy (ExpressPass' credit limiter) may hold packets that are not yet
//! eligible: when `dequeue` returns nothing from a non-empty queue, the port asks the
//! policy for `next_ready` and schedules a wake-up (`TxDone`) then; the port's
//! `txdone_pending` / `wake_at` tell an end of serialization from a wake-up.

use crate::event::{Event, EventQueue};
use crate::limits::RunError;
use crate::network::{Network, Port, Routing};
use crate::output::StopReason;
use crate::output::{Counters, FlowTable, LinkSamples, PortTable, Progress, QueueSamples, RunOutput};
use crate::packet::{FlowId, NodeId, Packet, PacketArena, PktIdx};
use crate::queue::PortEffects;
use crate::rng::{streams, Rng};
use crate::scenario::{PortSelection, Scenario};
use crate::transport::layer::Layered;
use crate::transport::{registry, Actions, Ctx, FlowInfo, FlowStats, Transport};
use crate::units::{Bytes, Time};
use std::time::Instant;

/// Drop cause: a packet reached a host it was not addressed to (a routing bug).
pub const DROP_MISROUTED: &str = "misrouted";

/// How often (in events) the progress callback is invoked.
pub const PROGRESS_EVERY: u64 = 1 << 16;

struct Sampler {
    interval: Time,
    /// Samples taken, and the most `run.memory_limit` leaves room for (`limits::sample_budget`).
    taken: u64,
    budget: u64,
    ports: Vec<u32>,
    queue: QueueSamples,
    link: LinkSamples,
}

/// Byte-coverage audit of one flow at its receiver.
#[derive(Default, Clone)]
struct Coverage {
    /// Disjoint sorted intervals [a, b) of received payload.
    iv: Vec<(u64, u64)>,
}

impl Coverage {
    fn add(&mut self, a: u64, b: u64) {
        if a >= b {
            return;
        }
        // Fast path: extends the last interval.
        if let Some(last) = self.iv.last_mut() {
            if a >= last.0 && a <= last.1 {
                last.1 = last.1.max(b);
                return;
            }
        }
        self.iv.push((a, b));
        self.iv.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(self.iv.len());
        for &(x, y) in &self.iv {
            match out.last_mut() {
                Some(l) if x <= l.1 => l.1 = l.1.max(y),
                _ => out.push((x, y)),
            }
        }
        self.iv = out;
    }
    fn covers(&self, size: u64) -> bool {
        self.iv.len() == 1 && self.iv[0] == (0, size)
    }
}

/// What a drop probe ([`Sim::with_drop_probe`]) sees of one dropped packet: where, which
/// packet, why, and what the port held at that moment (after the enqueue that dropped it).
pub struct DropInfo<'p> {
    pub now: Time,
    /// Egress port of the drop, its node and the node at the link's other end.
    pub port: u32,
    pub node: NodeId,
    pub peer: NodeId,
    pub pkt: &'p crate::packet::Packet,
    pub cause: &'static str,
    /// Bytes waiting in each priority class of the port, and in all of them.
    pub class_bytes: [u64; 8],
    pub total_bytes: u64,
}

/// A diagnostic callback for every dropped packet (tests, investigations).
pub type DropProbe<'a> = Box<dyn FnMut(&DropInfo) + 'a>;

/// One run of a scenario.
pub struct Sim<'a> {
    sc: &'a Scenario,
    q: EventQueue,
    arena: PacketArena,
    net: Network,
    transport: Box<dyn Transport>,
    nic_idle: bool,
    /// The transport wants [`Transport::on_tx_complete`] calls.
    tx_complete: bool,
    flows: Vec<FlowInfo>,
    ideal: Vec<Time>,
    finish: Vec<u64>,
    sent: Vec<u64>,
    /// With `run.abort_at_deadline`: the flows the application abandoned at their deadline.
    aborted: Option<Vec<bool>>,
    next_flow: usize,
    /// Flows `0..open_end` arrive on schedule (in order); the rest belong to barrier rounds.
    open_end: usize,
    /// Barrier round of each flow (`u32::MAX`: none); empty without barrier rounds.
    gate: Vec<u32>,
    rounds: Vec<RoundState>,
    /// Start offset of each flow within its barrier round (empty without barrier rounds).
    offsets: Vec<Time>,
    /// Flows of barrier rounds that have not arrived yet.
    gated_unstarted: u64,
    /// Persistent connections (barrier rounds with `persistent = true`); `None` without.
    conns: Option<Box<Conns>>,
    fg_total: u64,
    fg_done: u64,
    /// Every foreground flow has arrived and completed and the run stops when done
    /// (`fg_total > 0`, `fg_done == fg_total`, `next_flow == flows.len()`, `stop_when_done`):
    /// updated where those change, so the loop tests one flag per event.
    all_done: bool,
    /// Event count at which the loop next looks at progress and the end condition: the
    /// next multiple of [`PROGRESS_EVERY`], or 0 (every event) once `all_done` holds.
    check_at: u64,
    actions: Actions,
    fx: PortEffects,
    spray: Option<Rng>,
    // counters
    packet_hops: u64,
    data_hops: u64,
    payload_sent: u64,
    drops: Vec<(&'static str, u64)>,
    trims: u64,
    /// Per port: bytes dropped there and bytes its trims cut off (ports.csv; counted only
    /// when a port drops or trims, off the per-packet path).
    port_lost: Vec<PortLost>,
    /// Foreground flows in the system (arrived, neither finished nor abandoned), the time of
    /// its last change and its integral over time until then (flows x ps): Little's law's L,
    /// counted by the loop itself (two updates per flow), not derived from the flow table.
    in_system: u64,
    in_system_since: Time,
    in_system_area: u128,
    peak_live: usize,
    sampler: Option<Sampler>,
    audit: Option<Vec<Coverage>>,
    /// Problems the audit found (empty when the run is consistent).
    pub audit_errors: Vec<String>,
    drop_probe: Option<DropProbe<'a>>,
    /// `run.nic_queue_limit` in bytes.
    nic_limit: u64,
    /// A resource limit that ends the run (checked where `check_at` sends the loop).
    failure: Option<RunError>,
    /// The transport runs switch-side agents ([`Transport::wants_switch_packets`]).
    switch_agents: bool,
    /// The packet trace's log, shared with the traced ports' policies (`crate::trace`).
    trace: Option<crate::trace::SharedLog>,
    /// `[[link_delay]]`: the propagation-delay changes, in the order they apply.
    delay_changes: Vec<crate::linkdelay::Change>,
}

impl<'a> Sim<'a> {
    pub fn new(sc: &'a Scenario) -> Sim<'a> {
        Sim::with_plan(sc, sc.flow_plan(), build_transport(sc))
    }

    /// A run of `sc` with a given flow plan (open-loop flows sorted by start time, then the
    /// barrier rounds' flows it describes) and transport object.
    pub fn with_plan(sc: &'a Scenario, plan: crate::workload::FlowPlan, transport: Box<dyn Transport>) -> Sim<'a> {
        let n = plan.flows.len();
        let mut sim = Sim::with_parts(sc, plan.flows, transport);
        if plan.chains.is_empty() {
            return sim;
        }
        sim.gate = vec![u32::MAX; n];
        sim.offsets = vec![Time::ZERO; n];
        sim.open_end = plan.chains.iter().map(|c| c.first).min().unwrap_or(n);
        for ch in &plan.chains {
            let base = sim.rounds.len();
            for r in 0..ch.rounds {
                let first = ch.first + r * ch.per_round;
                let idx = sim.rounds.len() as u32;
                for (k, f) in (first..first + ch.per_round).enumerate() {
                    sim.gate[f] = idx;
                    sim.offsets[f] = ch.offsets[r * ch.per_round + k];
                }
                sim.rounds.push(RoundState {
                    first,
                    count: ch.per_round,
                    remaining: ch.per_round,
                    start: if r == 0 { ch.start } else { Time::MAX },
                    gap: ch.gap,
                    next: (r + 1 < ch.rounds).then_some(base + r + 1),
                });
            }
        }
        sim.gated_unstarted = (n - sim.open_end) as u64;
        if plan.chains.iter().any(|c| c.persistent) {
            let mut cs = Conns::new(&sim.flows);
            for ch in plan.chains.iter().filter(|c| c.persistent) {
                cs.assign(&sim.flows, ch);
            }
            for (f, &c) in cs.conn.iter().enumerate() {
                if c as usize == f && cs.persistent[f] {
                    sim.transport.keep_open(c);
                }
            }
            sim.conns = Some(Box::new(cs));
        }
        sim
    }

    /// A run of `sc`'s network and transport with a given flow list instead of the
    /// scenario's workload (benchmarks, tests). Flows must be sorted by start time.
    pub fn with_flows(sc: &'a Scenario, specs: Vec<crate::workload::FlowSpec>) -> Sim<'a> {
        Sim::with_parts(sc, specs, build_transport(sc))
    }

    /// A run with a given flow list and transport object (tests, embedding, wrappers that
    /// observe a transport). Flows must be sorted by start time.
    pub fn with_parts(
        sc: &'a Scenario,
        specs: Vec<crate::workload::FlowSpec>,
        transport: Box<dyn Transport>,
    ) -> Sim<'a> {
        let salt = sc.rng(streams::ROUTING).next_u64();
        let mut net = Network::build(&sc.topology, &sc.queue, salt, sc.rng(streams::QUEUE).next_u64());
        net.memoize_flow_routes(&specs.iter().map(|f| (f.src, f.dst)).collect::<Vec<_>>());
        let trace = sc.output.tracing().then(|| trace_ports(sc, &mut net));
        let mss = sc.network.mtu.0 - sc.network.header.0;
        let mut flows = Vec::with_capacity(specs.len());
        let mut ideal = Vec::with_capacity(specs.len());
        for (i, f) in specs.iter().enumerate() {
            let path = net.flow_path(i as FlowId, f.src, f.dst);
            let base_rtt = net.base_rtt(&path, sc.network.mtu, sc.network.ctrl_size);
            ideal.push(if f.background { Time::MAX } else { net.ideal_fct(&path, f.size, mss, sc.network.header.0) });
            flows.push(FlowInfo {
                id: i as FlowId,
                src: f.src,
                dst: f.dst,
                size: f.size,
                start: f.start,
                base_rtt,
                path_rate: net.bottleneck(&path),
                host_rate: net.ports[path[0] as usize].rate,
                deadline: f.deadline,
                background: f.background,
            });
        }
        let fg_total = flows.iter().filter(|f| !f.background).count() as u64;
        let n = flows.len();
        let mut transport = transport;
        let switch_agents = transport.wants_switch_packets();
        if switch_agents {
            let mut paths = crate::transport::FlowPaths::default();
            let mut hops = Vec::new();
            for f in &flows {
                hops.clear();
                for p in net.flow_path(f.id, f.src, f.dst) {
                    let pt = &net.ports[p as usize];
                    hops.push(crate::transport::PathHop { port: p, node: pt.node, peer: pt.peer, rate: pt.rate });
                }
                paths.push(&hops);
            }
            transport.set_flow_paths(paths);
        }
        if sc.output.ack_delays {
            // The scenario refused the field for a transport that cannot record it.
            transport.record_ack_delays(sc.output.ack_delays_limit);
        }
        let sampler = sc.output.sample_interval.map(|interval| {
            let ports = match &sc.output.sample_ports {
                PortSelection::Ids(v) => v.clone(),
                PortSelection::Named(s) => (0..net.ports.len() as u32)
                    .filter(|&p| {
                        let host = sc.topology.is_host(net.ports[p as usize].node);
                        match s.as_str() {
                            "host" => host,
                            "all" => true,
                            _ => !host,
                        }
                    })
                    .collect(),
            };
            Sampler {
                interval,
                taken: 0,
                budget: crate::limits::sample_budget(sc),
                ports,
                queue: QueueSamples::default(),
                link: LinkSamples::default(),
            }
        });
        let spray = (sc.network.routing == Routing::Spray).then(|| sc.rng(streams::ROUTING + 100));
        let port_lost = vec![PortLost::default(); net.ports.len()];
        // How far ahead link events lie: one MTU's serialization plus propagation.
        let delay_changes = crate::linkdelay::schedule(&sc.link_delays, &sc.topology);
        let horizon = net
            .ports
            .iter()
            .map(|p| p.tx_time(sc.network.mtu.0) + p.delay)
            .chain(delay_changes.iter().map(|c| net.ports[c.port as usize].tx_time(sc.network.mtu.0) + c.delay))
            .max()
            .unwrap_or_default();
        Sim {
            sc,
            q: EventQueue::with_horizon(horizon),
            arena: PacketArena::new(),
            nic_idle: transport.wants_nic_idle(),
            tx_complete: transport.wants_tx_complete(),
            net,
            ideal,
            finish: vec![u64::MAX; n],
            sent: vec![0; n],
            aborted: sc.run.abort_at_deadline.then(|| vec![false; n]),
            transport: {
                let t: Box<dyn Transport> = if sc.run.abort_at_deadline {
                    Box::new(Layered::new(AbortAtDeadline { done: Vec::new() }, transport))
                } else {
                    transport
                };
                if sc.pauses.is_empty() {
                    t
                } else {
                    let windows = crate::pause::resolve(&sc.pauses, &specs, &mut sc.rng(streams::PAUSE));
                    Box::new(Layered::new(crate::pause::Paused::new(windows), t))
                }
            },
            flows,
            next_flow: 0,
            open_end: n,
            gate: Vec::new(),
            rounds: Vec::new(),
            offsets: Vec::new(),
            conns: None,
            gated_unstarted: 0,
            fg_total,
            fg_done: 0,
            all_done: false,
            check_at: PROGRESS_EVERY,
            actions: Actions::new(),
            fx: PortEffects::default(),
            spray,
            packet_hops: 0,
            data_hops: 0,
            payload_sent: 0,
            drops: vec![],
            trims: 0,
            port_lost,
            in_system: 0,
            in_system_since: Time::ZERO,
            in_system_area: 0,
            peak_live: 0,
            sampler,
            audit: sc.output.audit.then(|| vec![Coverage::default(); n]),
            audit_errors: vec![],
            drop_probe: None,
            nic_limit: sc.run.nic_queue_limit.0,
            failure: None,
            switch_agents,
            trace,
            delay_changes,
        }
    }

    /// Calls `probe` for every packet a switch port drops, before it is freed (diagnostics;
    /// a run without a probe pays one branch per drop).
    pub fn with_drop_probe(mut self, probe: DropProbe<'a>) -> Self {
        self.drop_probe = Some(probe);
        self
    }

    /// [`Self::run`], with a run that a resource limit ended early (`RunOutput::error`) as
    /// the error instead of its incomplete results.
    pub fn try_run(self, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<RunOutput, RunError> {
        let mut out = self.run(progress);
        match out.error.take() {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Run to the end; `progress` is called every [`PROGRESS_EVERY`] events and may
    /// return false to stop early. Every [`PROGRESS_EVERY`] events the packets alive are
    /// compared with `run.max_live_packets`; above it, as at the other resource limits, the
    /// run ends early with the error in `RunOutput::error` (a run that cannot progress must
    /// not exhaust memory).
    pub fn run(mut self, progress: &mut dyn FnMut(&Progress) -> bool) -> RunOutput {
        let wall = Instant::now();
        // First, so that a change at time t precedes everything else the run does at t.
        for (i, c) in self.delay_changes.iter().enumerate() {
            self.q.push(c.at, Event::LinkDelay { idx: i as u32 });
        }
        if self.open_end > 0 {
            self.q.push(self.flows[0].start, Event::FlowArrival);
        }
        // The first round of every barrier chain starts on schedule.
        for r in 0..self.rounds.len() {
            if self.rounds[r].start != Time::MAX {
                self.release(r, self.rounds[r].start);
            }
        }
        if let Some(s) = &self.sampler {
            self.q.push(s.interval, Event::Sample);
        }
        let limit = match self.sc.run.time_limit {
            Some(l) => l,
            // Background flows alone never finish; without a time limit stop at once.
            None if self.fg_total == 0 && !self.flows.is_empty() => Time::ZERO,
            None => Time::MAX,
        };
        let horizon = self.sc.run.time_limit.unwrap_or_else(|| self.flows.last().map(|f| f.start).unwrap_or_default());
        let mut events: u64 = 0;
        let mut reason = None;
        let mut now = Time::ZERO;
        while let Some((t, ev)) = self.q.pop() {
            if t > limit {
                // The popped event lies beyond the limit: the run ends at the limit.
                reason = Some(match self.sc.run.time_limit {
                    Some(_) => StopReason::TimeLimit,
                    None => StopReason::ForegroundDone,
                });
                now = limit;
                break;
            }
            // The next event's packet is far away in memory: start loading it now.
            now = t;
            events += 1;
            match ev {
                Event::LinkArrive { port } => {
                    let pt = &mut self.net.ports[port as usize];
                    // A LinkArrive event has a packet in its pipe.
                    let ((at, pkt), next) = pt.pipe.pop_front_and_next();
                    debug_assert_eq!(at, t);
                    if let Some(next) = next {
                        self.q.push(next, Event::LinkArrive { port });
                    }
                    let node = pt.peer;
                    self.arrive(t, node, pkt)
                }
                Event::TxDone { port } => {
                    let (nic_idle, hosts) = (self.nic_idle, self.net.num_hosts);
                    let pt = &mut self.net.ports[port as usize];
                    let start = if pt.txdone_pending && pt.busy_until == t {
                        // The port finished serializing.
                        pt.txdone_pending = false;
                        true
                    } else if pt.wake_at == t {
                        // A wake-up the queue policy asked for (`QueueDisc::next_ready`).
                        pt.wake_at = Time::MAX;
                        !pt.txdone_pending && pt.busy_until <= t
                    } else {
                        false
                    };
                    if start {
                        if let Some(host) = start_tx(pt, &mut self.q, &mut self.arena, t, port, nic_idle, hosts) {
                            self.nic_idle_at(t, host);
                        }
                    }
                }
                Event::Timer { host, token } => {
                    let mut out = std::mem::take(&mut self.actions);
                    out.clear();
                    let mut ctx = Ctx { now: t, host, flows: &self.flows, out: &mut out };
                    self.transport.on_timer(&mut ctx, token);
                    self.apply(t, host, &mut out);
                    self.actions = out;
                }
                Event::FlowArrival => self.flow_arrival(t),
                Event::Sample => self.sample(t),
                Event::Abort { flow } => self.abort(t, flow as usize),
                Event::Start { flow } => {
                    self.gated_unstarted -= 1;
                    self.start_one(t, flow as usize)
                }
                Event::LinkDelay { idx } => {
                    let c = self.delay_changes[idx as usize];
                    let pt = &mut self.net.ports[c.port as usize];
                    pt.fifo_clamp |= c.delay < pt.delay;
                    pt.delay = c.delay;
                }
            }
            // One test per event: `check_at` is the next multiple of PROGRESS_EVERY, or 0
            // once every foreground flow is done (the end condition is then checked each time).
            if events >= self.check_at {
                if self.failure.is_some() {
                    reason = Some(StopReason::Error);
                    break;
                }
                if events.is_multiple_of(PROGRESS_EVERY) {
                    let live = self.arena.live();
                    self.peak_live = self.peak_live.max(live);
                    if live as u64 > self.sc.run.max_live_packets {
                        self.fail(RunError::TooManyLivePackets {
                            limit: self.sc.run.max_live_packets,
                            live: live as u64,
                            sim_time: t,
                            flows_done: self.fg_done,
                            flows_total: self.fg_total,
                        });
                        reason = Some(StopReason::Error);
                        break;
                    }
                    let p = Progress {
                        sim_time_ps: t.0,
                        horizon_ps: horizon.0,
                        flows_done: self.fg_done,
                        flows_total: self.fg_total,
                        events,
                    };
                    if !progress(&p) {
                        reason = Some(StopReason::Interrupted);
                        break;
                    }
                }
                // With only background flows there is nothing to wait for: run to the time limit.
                if self.all_done {
                    if self.arena.live() == 0 {
                        reason = Some(StopReason::Done);
                        break;
                    }
                    if self.flows.iter().any(|f| f.background) {
                        // Background flows never end: stop once the foreground work is done.
                        reason = Some(StopReason::ForegroundDone);
                        break;
                    }
                } else {
                    self.check_at = (events / PROGRESS_EVERY + 1) * PROGRESS_EVERY;
                }
            }
        }
        self.peak_live = self.peak_live.max(self.arena.live());
        let wall_s = wall.elapsed().as_secs_f64();
        progress(&Progress {
            sim_time_ps: now.0,
            horizon_ps: horizon.0,
            flows_done: self.fg_done,
            flows_total: self.fg_total,
            events,
        });
        // The queue ran dry: done, unless foreground flows never finished.
        let reason = reason.unwrap_or(if self.failure.is_some() {
            StopReason::Error
        } else if self.fg_done < self.fg_total || self.next_flow < self.open_end || self.gated_unstarted > 0 {
            StopReason::Stalled
        } else {
            StopReason::Done
        });
        self.finish_output(now, events, reason, wall_s)
    }

    /// A resource limit was reached: the loop stops at its next check (the next event).
    #[cold]
    #[inline(never)]
    fn fail(&mut self, e: RunError) {
        if self.failure.is_none() {
            self.failure = Some(e);
        }
        self.check_at = 0;
    }

    #[inline]
    fn arrive(&mut self, now: Time, node: NodeId, idx: PktIdx) {
        self.packet_hops += 1;
        let p = self.arena.get_mut(idx);
        p.hops = p.hops.wrapping_add(1);
        if p.hops == 1 && self.tx_complete && p.is_data() {
            // The packet has just crossed its source host's link: the NIC's transmit
            // completion (`crate::host`).
            let pkt = *p;
            self.tx_complete_at(now, pkt);
        }
        let p = self.arena.get_mut(idx);
        let dst = p.dst;
        if node < self.net.num_hosts {
            if dst != node {
                self.drop_pkt(idx, DROP_MISROUTED);
                return;
            }
            if p.is_data() {
                self.data_hops += p.hops as u64;
                if let Some(a) = &mut self.audit {
                    let f = p.flow as usize;
                    if f < a.len() {
                        a[f].add(p.seq, p.seq + p.payload as u64);
                    }
                }
            }
            let mut out = std::mem::take(&mut self.actions);
            out.clear();
            let mut ctx = Ctx { now, host: node, flows: &self.flows, out: &mut out };
            // The transport reads the packet in place; its slot is freed before the actions
            // are applied, so the first packet sent reuses it (as when freed first).
            self.transport.on_packet(&mut ctx, self.arena.get(idx));
            self.arena.free(idx);
            self.apply(now, node, &mut out);
            self.actions = out;
        } else {
            if dst >= self.net.num_hosts {
                self.at_switch(now, node, idx);
                return;
            }
            let size = p.size;
            let port = match &mut self.spray {
                None => self.net.route_in_flight(node, p),
                Some(rng) => {
                    let hops = self.net.routes.next_hops(node, dst);
                    hops[rng.below(hops.len() as u64) as usize]
                }
            };
            self.enqueue(now, port, idx, size);
        }
    }

    fn drop_pkt(&mut self, idx: PktIdx, cause: &'static str) {
        drop_into(&mut self.arena, &mut self.drops, idx, cause);
    }

    /// A packet addressed to a switch reached switch `node`: its agent takes it there
    /// ([`Transport::on_switch_packet`]); elsewhere it goes on to the adjacent addressee.
    /// Without switch agents it is misrouted.
    #[cold]
    #[inline(never)]
    fn at_switch(&mut self, now: Time, node: NodeId, idx: PktIdx) {
        if !self.switch_agents {
            self.drop_pkt(idx, DROP_MISROUTED);
            return;
        }
        if self.arena.get(idx).dst != node {
            self.send_to_adjacent_switch(now, node, idx);
            return;
        }
        let mut out = std::mem::take(&mut self.actions);
        out.clear();
        let mut ctx = Ctx { now, host: node, flows: &self.flows, out: &mut out };
        self.transport.on_switch_packet(&mut ctx, self.arena.get(idx));
        self.arena.free(idx);
        self.apply_agent(now, node, &mut out);
        self.actions = out;
    }

    /// Send packet `idx`, addressed to a switch, from `node` over the link to it; misrouted
    /// when the switch is not adjacent to `node` (or agents are off).
    #[cold]
    #[inline(never)]
    fn send_to_adjacent_switch(&mut self, now: Time, node: NodeId, idx: PktIdx) {
        let p = self.arena.get(idx);
        let (dst, size) = (p.dst, p.size);
        let port = match self.switch_agents && dst != node && (dst as usize) < self.net.node_ports.len() {
            true => {
                self.net.node_ports[node as usize].iter().copied().find(|&q| self.net.ports[q as usize].peer == dst)
            }
            false => None,
        };
        match port {
            Some(port) => self.enqueue(now, port, idx, size),
            None => self.drop_pkt(idx, DROP_MISROUTED),
        }
    }

    /// Carry out a switch agent's actions at switch `node`: it only sends packets.
    #[cold]
    #[inline(never)]
    fn apply_agent(&mut self, now: Time, node: NodeId, out: &mut Actions) {
        for i in 0..out.sends.len() {
            let p = &mut out.sends[i];
            p.hops = 0;
            p.src = node;
            let dst = p.dst;
            let idx = self.arena.alloc(*p);
            if dst >= self.net.num_hosts {
                self.send_to_adjacent_switch(now, node, idx);
                continue;
            }
            let (port, size) = (self.net.route_in_flight(node, p), p.size);
            self.enqueue(now, port, idx, size);
        }
        if !out.timers.is_empty() || !out.completions.is_empty() {
            self.audit_errors.push(format!("the switch agent at node {node} armed timers or completed flows"));
        }
    }

    /// Offer packet `idx` (of wire size `size`) to egress port `port`.
    #[inline(always)]
    fn enqueue(&mut self, now: Time, port: u32, idx: PktIdx, size: u32) {
        let (nic_idle, hosts) = (self.nic_idle, self.net.num_hosts);
        // One bounds check: the port is borrowed once for the whole offer.
        let pt = &mut self.net.ports[port as usize];
        pt.rx_bytes += size as u64;
        // Fast path: the port is idle and (no TxDone pending) its queue empty, and the
        // policy would admit the packet unchanged and serve it at once.
        if !pt.txdone_pending && pt.busy_until <= now && size <= pt.passthrough {
            transmit(pt, &mut self.q, now, port, idx, size, false, nic_idle, hosts);
            return;
        }
        pt.disc.enqueue(now, idx, &mut self.arena, &mut self.fx);
        if !self.fx.drops.is_empty() || self.fx.trims > 0 {
            pt.drops += self.fx.drops.len() as u64;
            self.trims += self.fx.trims;
            if let Some(probe) = self.drop_probe.as_mut() {
                let mut class_bytes = [0u64; 8];
                for (c, b) in class_bytes.iter_mut().enumerate().take(pt.disc.classes() as usize) {
                    *b = pt.disc.queue_bytes(c as u8).0;
                }
                for &(d, cause) in &self.fx.drops {
                    probe(&DropInfo {
                        now,
                        port,
                        node: pt.node,
                        peer: pt.peer,
                        pkt: self.arena.get(d),
                        cause,
                        class_bytes,
                        total_bytes: pt.disc.bytes().0,
                    });
                }
            }
            let lost = &mut self.port_lost[port as usize];
            lost.trimmed += self.fx.trimmed_bytes;
            for &(d, cause) in &self.fx.drops {
                lost.dropped += self.arena.get(d).size as u64;
                drop_into(&mut self.arena, &mut self.drops, d, cause);
            }
            self.fx.clear();
        }
        if !pt.txdone_pending {
            if pt.busy_until <= now {
                if let Some(host) = start_tx(pt, &mut self.q, &mut self.arena, now, port, nic_idle, hosts) {
                    self.nic_idle_at(now, host);
                }
            } else {
                pt.txdone_pending = true;
                let at = pt.busy_until;
                self.q.push(at, Event::TxDone { port });
            }
        }
    }

    /// Tell the packet's source host that its NIC transmitted it ([`Transport::on_tx_complete`]).
    #[inline(never)]
    fn tx_complete_at(&mut self, now: Time, pkt: crate::packet::Packet) {
        let host = pkt.src;
        let mut out = std::mem::take(&mut self.actions);
        out.clear();
        let mut ctx = Ctx { now, host, flows: &self.flows, out: &mut out };
        self.transport.on_tx_complete(&mut ctx, &pkt);
        self.apply(now, host, &mut out);
        self.actions = out;
    }

    /// Tell the transport that `host`'s NIC went idle ([`Transport::wants_nic_idle`]).
    #[inline(never)]
    fn nic_idle_at(&mut self, now: Time, host: NodeId) {
        let mut out = std::mem::take(&mut self.actions);
        out.clear();
        let mut ctx = Ctx { now, host, flows: &self.flows, out: &mut out };
        self.transport.on_nic_idle(&mut ctx);
        self.apply(now, host, &mut out);
        self.actions = out;
    }

    fn flow_arrival(&mut self, now: Time) {
        let f = self.next_flow;
        self.next_flow += 1;
        self.start_one(now, f);
        if self.next_flow < self.open_end {
            self.q.push(self.flows[self.next_flow].start.max(now), Event::FlowArrival);
        }
    }

    /// Barrier round `r` starts at `at`: each of its flows arrives at `at` plus its offset.
    fn release(&mut self, r: usize, at: Time) {
        let rs = &mut self.rounds[r];
        rs.start = at;
        for f in rs.first..rs.first + rs.count {
            let t = Time(at.0.saturating_add(self.offsets[f].0));
            self.flows[f].start = t;
            self.q.push(t, Event::Start { flow: f as u32 });
        }
    }

    /// Flow `f` completed or was abandoned at `now`: if it was the last of its barrier round,
    /// the next round starts after the gap.
    fn round_flow_done(&mut self, now: Time, f: usize) {
        let Some(&r) = self.gate.get(f) else { return };
        if r == u32::MAX {
            return;
        }
        let rs = &mut self.rounds[r as usize];
        rs.remaining -= 1;
        if rs.remaining == 0 {
            if let Some(nx) = rs.next {
                let at = Time(now.0.saturating_add(rs.gap.0));
                self.release(nx, at);
            }
        }
    }

    /// Flow `f` arrives at its source at `now`.
    fn start_one(&mut self, now: Time, f: usize) {
        if !self.flows[f].background {
            self.in_system_change(now, true);
        }
        self.update_all_done();
        let host = self.flows[f].src;
        let mut out = std::mem::take(&mut self.actions);
        out.clear();
        // A block of a persistent connection: appended to the connection's flow (the
        // transport sees the connection grow), or opening it.
        let carrier = match self.conns.as_deref_mut() {
            Some(cs) if cs.persistent[f] => {
                let c = cs.conn[f] as usize;
                cs.begin(f, self.transport.flow_stats(c as FlowId), self.sent[c]);
                if c != f {
                    self.flows[c].size = Bytes(self.flows[c].size.0 + self.flows[f].size.0);
                    Some(c)
                } else {
                    None
                }
            }
            _ => None,
        };
        let mut ctx = Ctx { now, host, flows: &self.flows, out: &mut out };
        match carrier {
            Some(c) => self.transport.append(&mut ctx, c as FlowId),
            None => self.transport.start_flow(&mut ctx, f as FlowId),
        }
        self.apply(now, host, &mut out);
        self.actions = out;
        let fl = &self.flows[f];
        if let (Some(_), Some(d), false) = (&self.aborted, fl.deadline, fl.background) {
            // One picosecond after the deadline, so a flow finishing exactly at it has met it.
            let at = fl.start.0.saturating_add(d.0).saturating_add(1);
            if at < u64::MAX {
                self.q.push(Time(at), Event::Abort { flow: f as u32 });
            }
        }
    }

    #[inline]
    fn is_aborted(&self, flow: FlowId) -> bool {
        self.aborted.as_ref().is_some_and(|a| a.get(flow as usize).copied().unwrap_or(false))
    }

    /// The deadline of flow `f` has passed: if it is still incomplete, the application
    /// abandons it (`run.abort_at_deadline`).
    fn abort(&mut self, now: Time, f: usize) {
        let Some(a) = &mut self.aborted else { return };
        if self.finish[f] != u64::MAX || a[f] {
            return;
        }
        a[f] = true;
        self.in_system_change(now, false);
        self.fg_done += 1;
        self.update_all_done();
        self.round_flow_done(now, f);
        // Tell the transport at both ends, so per-flow state kept elsewhere (arbitrators)
        // can be released; what it sends for the flow here is not filtered.
        let (src, dst) = (self.flows[f].src, self.flows[f].dst);
        for host in [src, dst] {
            let mut out = std::mem::take(&mut self.actions);
            out.clear();
            let mut ctx = Ctx { now, host, flows: &self.flows, out: &mut out };
            self.transport.on_flow_abandoned(&mut ctx, f as FlowId);
            out.timers.clear();
            out.completions.clear();
            self.apply(now, host, &mut out);
            self.actions = out;
        }
    }

    /// Carry out a transport's actions at `host`.
    fn apply(&mut self, now: Time, host: NodeId, out: &mut Actions) {
        for i in 0..out.sends.len() {
            // Stamped in place and copied once, straight into the arena.
            let p = &mut out.sends[i];
            p.hops = 0;
            p.src = host;
            if p.is_data() {
                self.payload_sent += p.payload as u64;
                if let Some(s) = self.sent.get_mut(p.flow as usize) {
                    *s += p.payload as u64;
                }
            }
            let dst = p.dst;
            let idx = self.arena.alloc(*p);
            if dst >= self.net.num_hosts || dst == host {
                // Addressed to a switch (its agent, if the transport runs agents) or to itself.
                self.send_to_adjacent_switch(now, host, idx);
                continue;
            }
            let (port, size) = (self.net.route_in_flight(host, p), p.size);
            self.enqueue(now, port, idx, size);
            let queued = self.net.ports[port as usize].disc.bytes().0;
            if queued > self.nic_limit {
                let limit = self.sc.run.nic_queue_limit;
                self.fail(RunError::NicQueue { host, bytes: queued, limit });
            }
        }
        for &(at, token) in &out.timers {
            self.q.push(at.max(now), Event::Timer { host, token });
        }
        for &f in &out.completions {
            let mut fi = f as usize;
            if fi >= self.flows.len() {
                self.audit_errors.push(format!("completion of unknown flow {f}"));
                continue;
            }
            if self.flows[fi].dst != host {
                self.audit_errors.push(format!("flow {f} reported complete at host {host}, not its receiver"));
                continue;
            }
            // A persistent connection completes the block it carries now.
            let conn = fi;
            if let Some(cs) = self.conns.as_deref_mut() {
                if cs.persistent[fi] {
                    match cs.current[fi] {
                        u32::MAX => {
                            self.audit_errors.push(format!("connection {f} reported complete with no block in flight"));
                            continue;
                        }
                        b => {
                            cs.current[fi] = u32::MAX;
                            fi = b as usize;
                        }
                    }
                }
            }
            if self.finish[fi] != u64::MAX {
                self.audit_errors.push(format!("flow {f} reported complete twice"));
                continue;
            }
            if self.is_aborted(f) {
                continue;
            }
            self.finish[fi] = now.0;
            if !self.flows[fi].background {
                self.in_system_change(now, false);
                self.fg_done += 1;
                self.update_all_done();
            }
            if !self.gate.is_empty() {
                self.round_flow_done(now, fi);
            }
            if let Some(a) = &self.audit {
                if !a[conn].covers(self.flows[conn].size.0) {
                    self.audit_errors.push(format!(
                        "flow {f} reported complete holding {:?} of {} bytes",
                        a[conn].iv, self.flows[conn].size.0
                    ));
                }
            }
        }
    }

    /// A foreground flow entered (`arrived`) or left the system at `now`.
    #[inline]
    fn in_system_change(&mut self, now: Time, arrived: bool) {
        self.in_system_area += self.in_system as u128 * (now.0 - self.in_system_since.0) as u128;
        self.in_system_since = now;
        if arrived {
            self.in_system += 1;
        } else {
            // Saturating: a transport completing a flow that never arrived must not panic
            // (the integral then disagrees with the flow table, which the validation shows).
            self.in_system = self.in_system.saturating_sub(1);
        }
    }

    fn update_all_done(&mut self) {
        self.all_done = self.fg_total > 0
            && self.fg_done == self.fg_total
            && self.next_flow >= self.open_end
            && self.gated_unstarted == 0
            && self.sc.run.stop_when_done;
        if self.all_done {
            self.check_at = 0;
        }
    }

    fn sample(&mut self, now: Time) {
        let Some(s) = &mut self.sampler else { return };
        if s.taken >= s.budget {
            let e = RunError::SampleLimit { samples: s.taken, limit: self.sc.run.memory_limit };
            self.fail(e);
            return;
        }
        s.taken += 1;
        let secs = s.interval.as_secs_f64();
        for &p in &s.ports {
            let pt = &mut self.net.ports[p as usize];
            for c in 0..pt.disc.classes() {
                let b = pt.disc.queue_bytes(c).0;
                if b > 0 {
                    s.queue.t_ps.push(now.0);
                    s.queue.port.push(p);
                    s.queue.prio.push(c);
                    s.queue.bytes.push(b);
                }
            }
            let tx = pt.tx_bytes - pt.sampled_tx;
            pt.sampled_tx = pt.tx_bytes;
            s.link.t_ps.push(now.0);
            s.link.port.push(p);
            s.link.tx_bytes.push(tx);
            s.link.utilization.push(tx as f64 * 8.0 / (pt.rate.0 as f64 * secs));
        }
        let done = self.fg_total > 0
            && self.fg_done == self.fg_total
            && self.next_flow >= self.open_end
            && self.gated_unstarted == 0;
        if !done {
            let at = now + s.interval;
            self.q.push(at, Event::Sample);
        }
    }

    fn finish_output(mut self, now: Time, events: u64, reason: StopReason, wall_s: f64) -> RunOutput {
        let sc = self.sc;
        let n = self.flows.len();
        let mut ft = FlowTable::default();
        for (i, f) in self.flows.iter().enumerate() {
            let (st, sent, size) = match self.conns.as_deref() {
                Some(cs) if cs.persistent[i] => {
                    let c = cs.conn[i] as usize;
                    let (st, sent) = cs.block_share(i, self.transport.flow_stats(c as FlowId), self.sent[c]);
                    (st, sent, cs.size[i])
                }
                _ => (self.transport.flow_stats(i as FlowId), self.sent[i], f.size.0),
            };
            ft.id.push(i as u32);
            ft.src.push(f.src);
            ft.dst.push(f.dst);
            ft.size.push(size);
            // A flow of a barrier round that never started has no start time.
            let unstarted =
                self.gate.get(i).is_some_and(|&r| r != u32::MAX && self.rounds[r as usize].start == Time::MAX);
            ft.start_ps.push(if unstarted { u64::MAX } else { f.start.0 });
            ft.finish_ps.push(self.finish[i]);
            ft.fct_ps.push(if self.finish[i] == u64::MAX { u64::MAX } else { self.finish[i] - f.start.0 });
            ft.ideal_fct_ps.push(self.ideal[i].0);
            ft.base_rtt_ps.push(f.base_rtt.0);
            ft.sent_bytes.push(sent);
            ft.retx_bytes.push(st.retx_bytes);
            ft.timeouts.push(st.timeouts);
            ft.lp_sent_bytes.push(st.lp_sent_bytes);
            ft.lp_rcvd_bytes.push(st.lp_rcvd_bytes);
            ft.reorder_max_bytes.push(st.reorder_max_bytes);
            ft.background.push(f.background);
            ft.deadline_ps.push(f.deadline.map(|d| d.0).unwrap_or(u64::MAX));
            ft.aborted.push(self.aborted.as_ref().is_some_and(|a| a[i]));
            let round = self.gate.get(i).copied().unwrap_or(u32::MAX);
            ft.round.push(round);
            let rs = self.rounds.get(round as usize).map_or(Time::MAX, |r| r.start);
            ft.round_start_ps.push(rs.0);
        }
        debug_assert_eq!(ft.id.len(), n);
        let mut pt = PortTable::default();
        for (i, p) in self.net.ports.iter().enumerate() {
            pt.id.push(i as u32);
            pt.node.push(p.node);
            pt.peer.push(p.peer);
            pt.rate_bps.push(p.rate.0);
            // The topology's delay (a `[[link_delay]]` change is not reflected).
            pt.delay_ps.push(sc.topology.links[i / 2].delay.0);
            pt.node_kind.push(sc.topology.tiers[p.node as usize].name().to_string());
            pt.peer_kind.push(sc.topology.tiers[p.peer as usize].name().to_string());
            pt.tx_bytes.push(p.tx_bytes);
            pt.drops.push(p.drops);
            pt.rx_bytes.push(p.rx_bytes);
            let lost = self.port_lost.get(i).copied().unwrap_or_default();
            pt.dropped_bytes.push(lost.dropped);
            pt.trimmed_bytes.push(lost.trimmed);
            pt.queued_bytes.push(p.disc.bytes().0);
            pt.arb_msgs.push(self.transport.arb_msgs(i as u32));
            pt.host_reorder_max_bytes.push(if sc.topology.is_host(p.node) {
                self.transport.host_reorder_max_bytes(p.node)
            } else {
                0
            });
        }
        let in_system_area = self.in_system_area + self.in_system as u128 * (now.0 - self.in_system_since.0) as u128;
        let (queue_samples, link_samples) = match self.sampler {
            Some(s) => (s.queue, s.link),
            None => (QueueSamples::default(), LinkSamples::default()),
        };
        let live = self.arena.live() as u64;
        let counters = Counters {
            events,
            data_packet_hops: self.data_hops,
            packet_hops: self.packet_hops,
            data_payload_sent: self.payload_sent,
            drops: self.drops.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
            trims: self.trims,
            sim_end_ps: now.0,
            cut_at_limit: reason == StopReason::TimeLimit && (live > 0 || self.fg_done < self.fg_total),
            stop_reason: reason,
            packets_left: live,
            wall_s,
            peak_live_packets: self.peak_live as u64,
            flows_in_system_integral_ps: in_system_area as f64,
            arb_msgs_sent: self.transport.arb_msgs_sent(),
        };
        RunOutput {
            flows: ft,
            ports: pt,
            queue_samples,
            link_samples,
            counters,
            scenario_json: sc.to_json(),
            audit_errors: self.audit_errors,
            error: self.failure,
            ack_delays: if sc.output.ack_delays { self.transport.take_ack_delays() } else { None },
            trace: self.trace.map(|log| {
                let log = log.take();
                crate::output::PacketTrace { events: log.events, lost: log.lost, limit: sc.output.trace_limit }
            }),
        }
    }
}

/// Wrap the policies of the ports `output.trace_ports` selects (every port when only
/// `trace_flows` is given) in [`crate::trace::Traced`], recording into one new log.
fn trace_ports(sc: &Scenario, net: &mut Network) -> crate::trace::SharedLog {
    use crate::trace::{FlowFilter, SharedLog, TraceLog, Traced};
    let log: SharedLog = std::rc::Rc::new(std::cell::RefCell::new(TraceLog::new(sc.output.trace_limit)));
    let filter = match &sc.output.trace_flows {
        Some(v) => {
            let mut v = v.clone();
            v.sort_unstable();
            v.dedup();
            FlowFilter::Only(v)
        }
        None => FlowFilter::All,
    };
    let all = PortSelection::Named("all".into());
    let sel = sc.output.trace_ports.as_ref().unwrap_or(&all);
    for (i, pt) in net.ports.iter_mut().enumerate() {
        let host = sc.topology.is_host(pt.node);
        let chosen = match sel {
            PortSelection::Ids(v) => v.contains(&(i as u32)),
            PortSelection::Named(s) => match s.as_str() {
                "host" => host,
                "all" => true,
                _ => !host,
            },
        };
        if chosen {
            let inner = std::mem::replace(
                &mut pt.disc,
                Box::new(crate::queue::priority::PriorityEcn::new(crate::units::Bytes(0), 1, vec![None], false)),
            );
            pt.disc = Box::new(Traced::new(inner, log.clone(), filter.clone(), i as u32, pt.node));
            pt.passthrough = 0;
        }
    }
    log
}

/// One barrier round in the runner.
#[derive(Clone, Copy, Debug)]
struct RoundState {
    /// Its flows: `first .. first + count`.
    first: usize,
    count: usize,
    /// Flows not yet completed (or abandoned).
    remaining: usize,
    /// Its start (`Time::MAX` until released).
    start: Time,
    /// Gap before the next round.
    gap: Time,
    /// The round after it.
    next: Option<usize>,
}

/// The persistent connections of barrier rounds (`persistent = true`): which connection
/// carries each block, the block each connection carries now, and what each block's share
/// of its connection's counters is.
struct Conns {
    /// The flow belongs to a persistent chain.
    persistent: Vec<bool>,
    /// The connection (the flow id of the block that opened it) carrying each block.
    conn: Vec<u32>,
    /// Per connection: the block it carries now (`u32::MAX`: none in flight).
    current: Vec<u32>,
    /// Each block's own size (a connection's entry in the flow table grows as blocks are
    /// appended; the flows table reports the block's).
    size: Vec<u64>,
    /// Per block: its connection's counters when the block started, and the next block of
    /// the same connection (`u32::MAX`: none started yet).
    at_start: Vec<(FlowStats, u64)>,
    started: Vec<bool>,
    next: Vec<u32>,
    /// Per connection: its latest started block.
    last: Vec<u32>,
}

impl Conns {
    fn new(flows: &[FlowInfo]) -> Conns {
        let n = flows.len();
        Conns {
            persistent: vec![false; n],
            conn: (0..n as u32).collect(),
            current: vec![u32::MAX; n],
            size: flows.iter().map(|f| f.size.0).collect(),
            at_start: vec![(FlowStats::default(), 0); n],
            started: vec![false; n],
            next: vec![u32::MAX; n],
            last: vec![u32::MAX; n],
        }
    }

    /// The blocks of a persistent chain: the k-th block from a sender to the receiver in a
    /// round goes on the k-th connection of that pair (opened by the pair's first such block).
    fn assign(&mut self, flows: &[FlowInfo], ch: &crate::workload::BarrierChain) {
        let mut open: std::collections::BTreeMap<(NodeId, NodeId, usize), u32> = Default::default();
        for r in 0..ch.rounds {
            let first = ch.first + r * ch.per_round;
            let mut seen: std::collections::BTreeMap<(NodeId, NodeId), usize> = Default::default();
            for (f, fl) in flows.iter().enumerate().skip(first).take(ch.per_round) {
                let k = seen.entry((fl.src, fl.dst)).or_insert(0);
                let c = *open.entry((fl.src, fl.dst, *k)).or_insert(f as u32);
                *k += 1;
                self.persistent[f] = true;
                self.conn[f] = c;
            }
        }
    }

    /// Block `f` starts on its connection, whose counters are `st` and `sent` now.
    fn begin(&mut self, f: usize, st: FlowStats, sent: u64) {
        let c = self.conn[f] as usize;
        if self.last[c] != u32::MAX {
            self.next[self.last[c] as usize] = f as u32;
        }
        self.last[c] = f as u32;
        self.current[c] = f as u32;
        self.at_start[f] = (st, sent);
        self.started[f] = true;
    }

    /// Block `f`'s share of its connection's counters (`end_st`, `end_sent` at the end of the
    /// run): from its start to the start of the connection's next block, or to the end.
    fn block_share(&self, f: usize, end_st: FlowStats, end_sent: u64) -> (FlowStats, u64) {
        if !self.started[f] {
            return (FlowStats::default(), 0);
        }
        let (to_st, to_sent) = match self.next[f] {
            u32::MAX => (end_st, end_sent),
            nx => self.at_start[nx as usize],
        };
        let (from_st, from_sent) = self.at_start[f];
        let st = FlowStats {
            retx_bytes: to_st.retx_bytes.saturating_sub(from_st.retx_bytes),
            timeouts: to_st.timeouts.saturating_sub(from_st.timeouts),
            lp_sent_bytes: to_st.lp_sent_bytes.saturating_sub(from_st.lp_sent_bytes),
            lp_rcvd_bytes: to_st.lp_rcvd_bytes.saturating_sub(from_st.lp_rcvd_bytes),
            reorder_max_bytes: to_st.reorder_max_bytes,
        };
        (st, to_sent.saturating_sub(from_sent))
    }
}

/// Bytes a port lost: dropped, and cut off by trimming.
#[derive(Clone, Copy, Debug, Default)]
struct PortLost {
    dropped: u64,
    trimmed: u64,
}

/// Count a dropped packet under `cause` and free it.
fn drop_into(arena: &mut PacketArena, drops: &mut Vec<(&'static str, u64)>, idx: PktIdx, cause: &'static str) {
    arena.free(idx);
    match drops.iter_mut().find(|(c, _)| *c == cause) {
        Some((_, n)) => *n += 1,
        None => drops.push((cause, 1)),
    }
}

/// Dequeue the next packet of idle port `pt` (id `port`) and start serializing it. When
/// nothing leaves, returns the port's node if it is a host whose transport wants to hear
/// that its NIC went idle (`nic_idle`; hosts are the nodes below `hosts`). The port is
/// passed in, borrowed once by the caller, so the per-hop path indexes the port table once.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn start_tx(
    pt: &mut Port,
    q: &mut EventQueue,
    arena: &mut PacketArena,
    now: Time,
    port: u32,
    nic_idle: bool,
    hosts: u32,
) -> Option<NodeId> {
    match pt.disc.dequeue_more(now, arena) {
        Some((idx, size, queued)) => {
            transmit(pt, q, now, port, idx, size, queued, nic_idle, hosts);
            None
        }
        None => {
            if !pt.disc.is_empty() {
                // Packets wait but none may leave yet (a shaper): wake the port when
                // the policy says one becomes eligible, unless an earlier wake-up is set.
                if let Some(at) = pt.disc.next_ready(now) {
                    let at = at.max(now + Time(1));
                    if !(pt.wake_at > now && pt.wake_at <= at) {
                        pt.wake_at = at;
                        q.push(at, Event::TxDone { port });
                    }
                }
            }
            (nic_idle && pt.node < hosts).then_some(pt.node)
        }
    }
}

/// Start serializing packet `idx` (of wire size `size`, already out of the queue) on idle
/// port `pt` (id `port`); `queued`: packets are still waiting in its queue.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn transmit(
    pt: &mut Port,
    q: &mut EventQueue,
    now: Time,
    port: u32,
    idx: PktIdx,
    size: u32,
    queued: bool,
    nic_idle: bool,
    hosts: u32,
) {
    let size = size as u64;
    let end = now + pt.tx_time(size);
    pt.busy_until = end;
    pt.tx_bytes += size;
    let mut arrive = end + pt.delay;
    let more = queued || (nic_idle && pt.node < hosts);
    if more {
        pt.txdone_pending = true;
    }
    if pt.pipe.is_empty() {
        q.push(arrive, Event::LinkArrive { port });
    } else if pt.fifo_clamp {
        // FIFO wire: after a `[[link_delay]]` drop a packet does not overtake the one before
        // it (with a constant delay the previous arrival is always earlier).
        arrive = arrive.max(pt.pipe.back_time());
    }
    pt.pipe.push_back((arrive, idx));
    if more {
        q.push(end, Event::TxDone { port });
    }
}

/// The transport of a validated scenario, seeded from the scenario's seed (stream
/// [`streams::TRANSPORT`]), as [`Sim::new`] builds it.
pub fn build_transport(sc: &Scenario) -> Box<dyn Transport> {
    registry::build_seeded(&sc.protocol, &sc.transport_cfg, &sc.net_info, sc.rng(streams::TRANSPORT).next_u64())
        .expect("transport config was validated when the scenario was parsed")
}

/// Run a validated scenario (panics if it cannot finish; see [`try_run`]).
pub fn run(sc: &Scenario, progress: &mut dyn FnMut(&Progress) -> bool) -> RunOutput {
    Sim::new(sc).run(progress)
}

/// `run.abort_at_deadline`: wraps the run's transport so that nothing of a flow abandoned at
/// its deadline reaches the transport or leaves it: packets of it arriving at a host are
/// discarded, packets the transport sends for it are dropped before the NIC, its completion
/// is ignored; only switch agents (arbitration messages) still handle it. A flow is abandoned
/// if it has not completed by one picosecond after its deadline, the instant the runner's
/// `Event::Abort` marks it (that event, pushed at the flow's arrival, precedes the flow's own
/// events at the same instant). A flow that
/// completed in time is never filtered (its last ACKs still reach the sender). Runs without
/// the option pay nothing for it on the per-packet path.
struct AbortAtDeadline {
    /// Flows whose completion passed (completed before their deadline).
    done: Vec<bool>,
}

impl AbortAtDeadline {
    /// Flow `f` is abandoned at `now`: past its deadline and not completed.
    #[inline]
    fn late(&self, flows: &[FlowInfo], f: FlowId, now: Time) -> bool {
        let Some(fl) = flows.get(f as usize) else { return false };
        match fl.deadline {
            Some(d) if !fl.background && now.0 > fl.start.0.saturating_add(d.0) => {
                !self.done.get(f as usize).copied().unwrap_or(false)
            }
            _ => false,
        }
    }

    /// Drop what the inner transport just added for abandoned flows; note completions.
    fn filter(&mut self, ctx: &mut Ctx, from: usize, from_c: usize) {
        let (flows, now) = (ctx.flows, ctx.now);
        let mut i = from;
        while i < ctx.out.sends.len() {
            if self.late(flows, ctx.out.sends[i].flow, now) {
                ctx.out.sends.remove(i);
            } else {
                i += 1;
            }
        }
        let mut i = from_c;
        while i < ctx.out.completions.len() {
            let f = ctx.out.completions[i];
            if self.late(flows, f, now) {
                ctx.out.completions.remove(i);
            } else {
                if self.done.len() < flows.len() {
                    self.done.resize(flows.len(), false);
                }
                if let Some(d) = self.done.get_mut(f as usize) {
                    *d = true;
                }
                i += 1;
            }
        }
    }
}

impl crate::transport::layer::Layer for AbortAtDeadline {
    fn admit_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) -> bool {
        !self.late(ctx.flows, pkt.flow, ctx.now)
    }
    // Switch agents are the network's control plane, not the application: they handle an
    // abandoned flow's messages (the default `admit_switch_packet`) and what they send is not
    // filtered (`Layered` does not call `after` for them), so the release its ends send when
    // it is abandoned climbs to every arbitrator that holds it; packets of it that reach a
    // host are still discarded there.
    fn after(&mut self, ctx: &mut Ctx, sends_from: usize, completions_from: usize) {
        self.filter(ctx, sends_from, completions_from);
    }
}

/// Run a validated scenario; a run that cannot finish within the scenario's limits ends
/// with a [`RunError`] naming the limit.
pub fn try_run(sc: &Scenario, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<RunOutput, RunError> {
    Sim::new(sc).try_run(progress)
}

#[cfg(test)]
mod abort_tests {
    use super::*;
    use crate::transport::Actions;
    use crate::units::{Bytes, Rate};

    /// Forwards every packet it gets back out, from a host or a switch.
    struct Echo;
    impl Transport for Echo {
        fn name(&self) -> &'static str {
            "echo"
        }
        fn start_flow(&mut self, _ctx: &mut Ctx, _flow: FlowId) {}
        fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
            ctx.out.send(*pkt);
        }
        fn on_timer(&mut self, _ctx: &mut Ctx, _token: u64) {}
        fn on_switch_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
            ctx.out.send(*pkt);
        }
    }

    #[test]
    fn abandoned_flow_is_filtered_at_hosts_but_its_switch_messages_pass() {
        let flows = vec![FlowInfo {
            id: 0,
            src: 0,
            dst: 1,
            size: Bytes(100_000),
            start: Time::ZERO,
            base_rtt: Time::us(10),
            path_rate: Rate::gbps(1),
            host_rate: Rate::gbps(1),
            deadline: Some(Time::us(50)),
            background: false,
        }];
        let mut w = Layered::new(AbortAtDeadline { done: Vec::new() }, Box::new(Echo));
        let pkt = Packet { src: 0, dst: 1, flow: 0, size: 64, ..Default::default() };
        let mut call = |now: Time, switch: bool| {
            let mut out = Actions::new();
            let mut ctx = Ctx { now, host: 0, flows: &flows, out: &mut out };
            if switch {
                w.on_switch_packet(&mut ctx, &pkt);
            } else {
                w.on_packet(&mut ctx, &pkt);
            }
            out.sends.len()
        };
        // Before the deadline both pass; after it, a host drops the flow's packets, while a
        // switch agent still handles them and its messages leave.
        assert_eq!((call(Time::us(40), false), call(Time::us(40), true)), (1, 1));
        assert_eq!((call(Time::us(60), false), call(Time::us(60), true)), (0, 1));
    }
}
