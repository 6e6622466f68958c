//! The runner's switch-side agents (`Transport::wants_switch_packets`): a packet addressed
//! to a switch is handed to the transport there, its answers leave from the switch over real
//! links, and without agents (or when the addressee is not adjacent) it is misrouted.
//!
//! Network: one 10 Gbps switch (node 2) and two hosts, 1 us links. A 64 B packet crosses a
//! link in 64 x 8 / 10^10 s = 51.2 ns plus 1 us, so the switch receives the host's message at
//! 1.0512 us and the host its answer at 2.1024 us.

use dcnsim_core::packet::{FlowId, Packet, PacketFlags};
use dcnsim_core::sim::Sim;
use dcnsim_core::transport::{Ctx, FlowPaths, Transport};
use dcnsim_core::units::{Bytes, Time};
use dcnsim_core::workload::FlowSpec;
use dcnsim_core::{parse_scenario, Format};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

#[derive(Default)]
struct Log {
    at_switch: Vec<(Time, u32, u32)>,
    answers: Vec<Time>,
    paths: Vec<Vec<(u32, u32)>>,
}

struct Agents {
    on: bool,
    log: Rc<RefCell<Log>>,
}

impl Transport for Agents {
    fn name(&self) -> &'static str {
        "agents"
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let f = &ctx.flows[flow as usize];
        // A message to the switch, one to a node that does not exist, and the flow's data.
        for dst in [2, 40] {
            ctx.out.send(Packet { dst, flow, size: 64, kind: 1, ..Default::default() });
        }
        ctx.out.send(Packet {
            dst: f.dst,
            flow,
            size: 1000,
            payload: f.size.0 as u32,
            flags: PacketFlags(PacketFlags::DATA),
            ..Default::default()
        });
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if pkt.is_data() {
            ctx.out.complete(pkt.flow);
        } else if pkt.kind == 2 {
            self.log.borrow_mut().answers.push(ctx.now);
        }
    }
    fn on_timer(&mut self, _ctx: &mut Ctx, _token: u64) {}
    fn wants_switch_packets(&self) -> bool {
        self.on
    }
    fn set_flow_paths(&mut self, paths: FlowPaths) {
        let v = (0..paths.len()).map(|i| paths.get(i as FlowId).iter().map(|h| (h.node, h.peer)).collect()).collect();
        self.log.borrow_mut().paths = v;
    }
    fn on_switch_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.log.borrow_mut().at_switch.push((ctx.now, ctx.host, pkt.src));
        ctx.out.send(Packet { dst: pkt.src, flow: pkt.flow, size: 64, kind: 2, ..Default::default() });
    }
}

fn run(on: bool) -> (dcnsim_core::output::RunOutput, Log) {
    let doc = r#"{"topology": {"kind": "single_switch", "hosts": 2, "host_rate": "10Gbps", "host_delay": "1us"},
                  "transport": {"protocol": "dctcp"},
                  "workload": [{"pattern": "permutation", "size": "1000B"}]}"#;
    let sc = parse_scenario(doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let flows =
        vec![FlowSpec { src: 0, dst: 1, size: Bytes(900), start: Time::ZERO, deadline: None, background: false }];
    let log = Rc::new(RefCell::new(Log::default()));
    let out = Sim::with_parts(&sc, flows, Box::new(Agents { on, log: log.clone() })).run(&mut |_| true);
    let l = std::mem::take(&mut *log.borrow_mut());
    (out, l)
}

fn misrouted(out: &dcnsim_core::output::RunOutput) -> u64 {
    out.counters.drops.iter().filter(|d| d.0 == "misrouted").map(|d| d.1).sum()
}

#[test]
fn a_switch_agent_answers_over_real_links_and_non_adjacent_addressees_are_misrouted() {
    let (out, log) = run(true);
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    assert_eq!(log.paths, vec![vec![(0, 2), (2, 1)]]);
    assert_eq!(log.at_switch, vec![(Time(1_051_200), 2, 0)]);
    assert_eq!(log.answers, vec![Time(2_102_400)]);
    // Node 40 does not exist: dropped at the source.
    assert_eq!(misrouted(&out), 1);
    assert!(out.flows.finish_ps[0] != u64::MAX);
}

#[test]
fn without_agents_a_packet_to_a_switch_is_misrouted() {
    let (out, log) = run(false);
    assert!(log.at_switch.is_empty() && log.answers.is_empty() && log.paths.is_empty());
    assert_eq!(misrouted(&out), 2);
    assert!(out.flows.finish_ps[0] != u64::MAX);
}
