//! Shared helpers for the integration tests: scenario construction and a recording
//! wrapper that observes what a transport receives.
#![allow(dead_code)]

use dcnsim_core::output::RunOutput;
use dcnsim_core::packet::{FlowId, Packet};
use dcnsim_core::scenario::Scenario;
use dcnsim_core::sim::Sim;
use dcnsim_core::transport::{Ctx, FlowStats, Transport};
use dcnsim_core::units::{Bytes, Time};
use dcnsim_core::workload::FlowSpec;
use dcnsim_core::{parse_scenario, Format};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

pub fn scenario(topo: &str, transport: &str, network: &str) -> Scenario {
    scenario_full(topo, transport, network, "{}", r#"{"audit":true}"#)
}

pub fn scenario_full(topo: &str, transport: &str, network: &str, run: &str, output: &str) -> Scenario {
    // The workload table is required by the schema; tests pass their own flows.
    let doc = format!(
        r#"{{"topology":{topo},"transport":{transport},"network":{network},"run":{run},"output":{output},
            "workload":[{{"pattern":"permutation","size":"1000B"}}]}}"#
    );
    parse_scenario(&doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

pub fn flow(src: u32, dst: u32, size: u64, start: Time) -> FlowSpec {
    FlowSpec { src, dst, size: Bytes(size), start, deadline: None, background: false }
}

pub fn background(src: u32, dst: u32, start: Time) -> FlowSpec {
    FlowSpec { src, dst, size: Bytes(u64::MAX / 4), start, deadline: None, background: true }
}

/// What the recorder saw at receivers.
#[derive(Default)]
pub struct Record {
    /// (arrival time, flow, seq, payload) of every data packet at its destination.
    pub data: Vec<(Time, FlowId, u64, u32)>,
    /// (arrival time, seq) of data packets of flow 0.
    pub data_arrivals: Vec<(Time, u64)>,
}

impl Record {
    /// Payload bytes of `flow` arriving in [t0, t1).
    pub fn bytes_between(&self, flow: FlowId, t0: Time, t1: Time) -> u64 {
        self.data.iter().filter(|d| d.1 == flow && d.0 >= t0 && d.0 < t1).map(|d| d.3 as u64).sum()
    }
    /// Distinct payload bytes of `flow` received.
    pub fn unique_bytes(&self, flow: FlowId) -> u64 {
        let mut iv: Vec<(u64, u64)> =
            self.data.iter().filter(|d| d.1 == flow).map(|d| (d.2, d.2 + d.3 as u64)).collect();
        iv.sort();
        let mut total = 0;
        let mut end = 0;
        for (a, b) in iv {
            let a = a.max(end);
            if b > a {
                total += b - a;
                end = b;
            }
        }
        total
    }
}

/// Wraps a transport and records every data packet it receives.
pub struct Recorder {
    pub inner: Box<dyn Transport>,
    pub rec: Rc<RefCell<Record>>,
}

impl Transport for Recorder {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.start_flow(ctx, flow)
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if pkt.is_data() {
            let mut r = self.rec.borrow_mut();
            r.data.push((ctx.now, pkt.flow, pkt.seq, pkt.payload));
            if pkt.flow == 0 {
                r.data_arrivals.push((ctx.now, pkt.seq));
            }
        }
        self.inner.on_packet(ctx, pkt)
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.inner.on_timer(ctx, token)
    }
    fn on_nic_idle(&mut self, ctx: &mut Ctx) {
        self.inner.on_nic_idle(ctx)
    }
    fn wants_nic_idle(&self) -> bool {
        self.inner.wants_nic_idle()
    }
    fn on_tx_complete(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.inner.on_tx_complete(ctx, pkt)
    }
    fn wants_tx_complete(&self) -> bool {
        self.inner.wants_tx_complete()
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.inner.flow_stats(flow)
    }
    fn host_reorder_max_bytes(&self, host: u32) -> u64 {
        self.inner.host_reorder_max_bytes(host)
    }
    fn wants_switch_packets(&self) -> bool {
        self.inner.wants_switch_packets()
    }
    fn set_flow_paths(&mut self, paths: dcnsim_core::transport::FlowPaths) {
        self.inner.set_flow_paths(paths)
    }
    fn on_switch_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.inner.on_switch_packet(ctx, pkt)
    }
    fn arb_msgs(&self, port: u32) -> u64 {
        self.inner.arb_msgs(port)
    }
    fn arb_msgs_sent(&self) -> u64 {
        self.inner.arb_msgs_sent()
    }
    fn on_flow_abandoned(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.on_flow_abandoned(ctx, flow)
    }
}

/// Run `sc`'s network and transport on `flows`, recording receptions.
pub fn run_flows(sc: &Scenario, flows: Vec<FlowSpec>) -> (RunOutput, Rc<RefCell<Record>>) {
    let inner = dcnsim_core::sim::build_transport(sc);
    let rec = Rc::new(RefCell::new(Record::default()));
    let t = Recorder { inner, rec: rec.clone() };
    let out = Sim::with_parts(sc, flows, Box::new(t)).run(&mut |_| true);
    (out, rec)
}

/// The switch egress port towards host `host`.
pub fn bottleneck_port(out: &RunOutput, host: u32) -> u32 {
    let p = &out.ports;
    (0..p.id.len()).find(|&i| p.peer[i] == host && p.node_kind[i] != "host").map(|i| p.id[i]).expect("port to host")
}

/// (utilization, average queue bytes) of `port` over samples in (t0, t1].
pub fn port_stats(out: &RunOutput, port: u32, t0: Time, t1: Time) -> (f64, f64) {
    let l = &out.link_samples;
    let idx: Vec<usize> =
        (0..l.t_ps.len()).filter(|&i| l.port[i] == port && l.t_ps[i] > t0.0 && l.t_ps[i] <= t1.0).collect();
    let util = idx.iter().map(|&i| l.utilization[i]).sum::<f64>() / idx.len() as f64;
    let nsamples = idx.len() as f64;
    let q = &out.queue_samples;
    let qsum: u64 = (0..q.t_ps.len())
        .filter(|&i| q.port[i] == port && q.t_ps[i] > t0.0 && q.t_ps[i] <= t1.0)
        .map(|i| q.bytes[i])
        .sum();
    (util, qsum as f64 / nsamples)
}

/// PTCP §V-A's incast (reduced, PTCP Table 1 at 1 G): `n` synchronized senders each send
/// [`INCAST_SIZE`] bytes to one receiver through one switch (1 Gbps links, 25 us per link, a
/// 96 KB buffer, RTO_min 200 ms), on the Linux host model.
pub const INCAST_SIZE: u64 = 64_000;
pub const INCAST_MSS: u64 = 1460;
pub const INCAST_RTO_MIN_MS: f64 = 200.0;

/// One incast round's outcome.
pub struct IncastRound {
    /// Query completion time: the last flow's FCT (all start at 0), ms.
    pub qct_ms: f64,
    pub timeouts: u32,
    pub drops: u64,
}

/// Run the incast with `proto` (`extra`: more `[transport]` JSON fields, each with a leading
/// comma). Asserts conservation: the audit holds, every flow finished once, and each receiver
/// got exactly the flow's bytes.
pub fn incast(proto: &str, extra: &str, n: u32) -> IncastRound {
    let sc = scenario_full(
        &format!(r#"{{"kind":"single_switch","hosts":{},"host_rate":"1Gbps","host_delay":"25us"}}"#, n + 1),
        &format!(r#"{{"protocol":"{proto}","min_rto":"200ms"{extra}}}"#),
        r#"{"buffer":"96KB","ecn_k":"15KB"}"#,
        "{}",
        r#"{"audit":true}"#,
    );
    let flows = (0..n).map(|i| flow(i, n, INCAST_SIZE, Time::ZERO)).collect();
    let (out, rec) = run_flows(&sc, flows);
    assert!(out.audit_errors.is_empty(), "{proto} N={n}: {:?}", out.audit_errors);
    assert_eq!(out.flows.fct_ps.len(), n as usize);
    assert!(out.flows.fct_ps.iter().all(|&f| f > 0), "{proto} N={n}: every flow finishes");
    for f in 0..n {
        assert_eq!(rec.borrow().unique_bytes(f), INCAST_SIZE, "{proto} N={n}: flow {f} bytes delivered = size");
    }
    IncastRound {
        qct_ms: *out.flows.fct_ps.iter().max().unwrap() as f64 / 1e9,
        timeouts: out.flows.timeouts.iter().sum(),
        drops: out.counters.drops.iter().map(|d| d.1).sum(),
    }
}

/// The time the 1 Gbps bottleneck needs for the incast's n blocks, ms (40 B of header per
/// packet).
pub fn incast_ideal_ms(n: u32) -> f64 {
    let pkts = INCAST_SIZE.div_ceil(INCAST_MSS);
    n as f64 * (INCAST_SIZE + pkts * 40) as f64 * 8.0 / 1e9 * 1e3
}
