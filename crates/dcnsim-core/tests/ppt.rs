//! Small-scenario tests of PIAS, RC3 and PPT against DCTCP (PPT paper §6 / Fig. 1, 12, 20).

use dcnsim_core::output::RunOutput;
use dcnsim_core::transport::ppt;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

/// FCT summary per docs/metrics.md (small = at most 100 KB), in microseconds.
#[allow(dead_code)] // large_avg is printed, not asserted
#[derive(Debug, Clone, Copy)]
struct Fct {
    all: f64,
    small_avg: f64,
    small_p99: f64,
    large_avg: f64,
    n: usize,
    unfinished: usize,
}

fn summarize(out: &RunOutput) -> Fct {
    let f = &out.flows;
    let mut all = Vec::new();
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut unfinished = 0;
    for i in 0..f.id.len() {
        if f.background[i] {
            continue;
        }
        if f.fct_ps[i] == u64::MAX {
            unfinished += 1;
            continue;
        }
        let us = f.fct_ps[i] as f64 / 1e6;
        all.push(us);
        if f.size[i] <= 100_000 {
            small.push(us);
        } else {
            large.push(us);
        }
    }
    let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    small.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let p99 = if small.is_empty() { 0.0 } else { small[((0.99 * small.len() as f64).ceil() as usize).max(1) - 1] };
    Fct { all: avg(&all), small_avg: avg(&small), small_p99: p99, large_avg: avg(&large), n: all.len(), unfinished }
}

fn net_info_of(doc: &str) -> dcnsim_core::transport::NetInfo {
    parse_scenario(doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}")).net_info
}

const TOPO: &str = r#"{"kind":"leaf_spine","leaves":4,"hosts_per_leaf":4,"spines":2,"host_rate":"10Gbps","core_rate":"40Gbps","host_delay":"4us","core_delay":"4us"}"#;

fn doc(transport: &str, network: &str, workload: &str, output: &str) -> String {
    format!(
        r#"{{"seed":7,"topology":{TOPO},"transport":{transport},"network":{network},"workload":{workload},"output":{output}}}"#
    )
}

/// `[network]` for PPT's Eq. 3 thresholds on this topology, and the same HCP K everywhere
/// for DCTCP/PIAS/RC3.
fn networks() -> (String, String) {
    let probe = doc(r#"{"protocol":"dctcp"}"#, "{}", r#"{"pattern":"permutation","size":"1000B"}"#, "{}");
    let ni = net_info_of(&probe);
    let k = ppt::recommended_ecn_k(&ni, ppt::LAMBDA_HCP, ppt::LAMBDA_LCP);
    let ks: Vec<String> = k.iter().map(|b| format!("\"{}B\"", b.0)).collect();
    let ppt_net = format!(r#"{{"buffer":"120KB","ecn_k_per_queue":[{}],"ecn_port_classes":[4,5,6,7]}}"#, ks.join(","));
    let dctcp_net = format!(r#"{{"buffer":"120KB","ecn_k":"{}B"}}"#, k[0].0);
    (ppt_net, dctcp_net)
}

fn run(transport: &str, network: &str, workload: &str, output: &str) -> RunOutput {
    let d = doc(transport, network, workload, output);
    let sc = parse_scenario(&d, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let out = dcnsim_core::run(&sc, &mut |_| true);
    assert!(out.audit_errors.is_empty(), "{transport}: {:?}", &out.audit_errors[..out.audit_errors.len().min(5)]);
    out
}

const WEBSEARCH: &str = r#"{"pattern":"poisson","cdf":"websearch","load":0.5,"flows":2000}"#;

/// Web search at load 0.5, 2000 flows, 16 hosts at 10G (PPT Fig. 12 reduced): PPT's overall
/// average FCT is below DCTCP's; its small-flow average and p99 below DCTCP's and RC3's.
/// A PPT scenario whose `[network]` gives no ECN thresholds gets the paper's (§3.2, Eq. 3):
/// K = lambda x C x RTT per class, lambda = 0.17 for the HCP classes P0-P3 and 0.1 for the
/// LCP classes P4-P7, with the LCP classes marked on the port's occupancy; the scenario's
/// own settings win, and the normalized scenario runs again to the same switches.
#[test]
fn ppt_without_network_thresholds_gets_eq3_per_class_k_and_lcp_port_marking() {
    // Two hosts on one 10 Gbps switch, 1 us links. Base RTT (docs/metrics.md) = 4 x 1 us of
    // propagation + a 1500 B and a 64 B packet serialized on each of the 2 hops at 10 Gbps
    // (2 x 1.2512 us) = 6.5024 us; BDP = 10 Gbps x 6.5024 us = 8,128 B;
    // K_HCP = 0.17 x 8,128 = 1,381.76 -> 1,382 B, K_LCP = 0.1 x 8,128 = 812.8 -> 813 B.
    let sc = |transport: &str, network: &str| {
        let d = format!(
            r#"{{"topology":{{"kind":"single_switch","hosts":2,"host_rate":"10Gbps","host_delay":"1us"}},
               "transport":{transport},"network":{network},"workload":{{"pattern":"permutation","size":"1000B"}}}}"#
        );
        parse_scenario(&d, Format::Json, Path::new("."))
    };
    let ks = |s: &dcnsim_core::Scenario| s.queue.ecn_k.iter().map(|k| k.unwrap().0).collect::<Vec<_>>();
    let ppt = sc(r#"{"protocol":"ppt"}"#, "{}").unwrap();
    assert_eq!(ppt.net_info.max_base_rtt.0, 6_502_400);
    assert_eq!(ks(&ppt), [1382, 1382, 1382, 1382, 813, 813, 813, 813]);
    assert_eq!(ppt.queue.ecn_port_classes, [4, 5, 6, 7]);
    // Swift's HCP ignores ECN, but PPT over Swift marks its LCP the same way.
    let over_swift = sc(r#"{"protocol":"ppt_swift"}"#, "{}").unwrap();
    assert_eq!(ks(&over_swift)[4..], [813, 813, 813, 813]);
    assert_eq!(over_swift.queue.ecn_port_classes, [4, 5, 6, 7]);
    // lambda is PPT's parameter; 0.2 x 8,128 = 1,625.6 -> 1,626.
    let l = sc(r#"{"protocol":"ppt","lambda_lcp":0.2}"#, "{}").unwrap();
    assert_eq!(ks(&l), [1382, 1382, 1382, 1382, 1626, 1626, 1626, 1626]);
    // With 4 classes the halves are P0-P1 / P2-P3.
    let four = sc(r#"{"protocol":"ppt"}"#, r#"{"priorities":4}"#).unwrap();
    assert_eq!((ks(&four), four.queue.ecn_port_classes.clone()), (vec![1382, 1382, 813, 813], vec![2, 3]));
    // The paper's explicit settings (§6.2: 96 KB / 86 KB) and explicit marking win.
    let explicit = sc(
        r#"{"protocol":"ppt"}"#,
        r#"{"ecn_k_per_queue":["96KB","96KB","96KB","96KB","86KB","86KB","86KB","86KB"],"ecn_port_classes":[]}"#,
    )
    .unwrap();
    assert_eq!(ks(&explicit), [96_000, 96_000, 96_000, 96_000, 86_000, 86_000, 86_000, 86_000]);
    assert!(explicit.queue.ecn_port_classes.is_empty());
    assert_eq!(ks(&sc(r#"{"protocol":"ppt"}"#, r#"{"ecn_k":"50KB"}"#).unwrap()), [50_000; 8]);
    // Other protocols keep network.ecn_lambda for every class and no port-marked class.
    let dctcp = sc(r#"{"protocol":"dctcp"}"#, "{}").unwrap();
    assert_eq!((ks(&dctcp), dctcp.queue.ecn_port_classes.len()), (vec![1382; 8], 0));
    // The normalized scenario (scenario.json) is explicit and runs again to the same switches.
    for s in [&ppt, &l, &explicit] {
        let again = parse_scenario(&s.to_json(), Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((ks(&again), again.queue.ecn_port_classes.clone()), (ks(s), s.queue.ecn_port_classes.clone()));
    }
    // The classes of the opportunistic packets, for reports (scenario.json derived.lp_classes):
    // PPT's LCP half whatever the marking; RC3 every class below its primary loop's; none for
    // a transport without a low-priority loop.
    let lp = |s: &dcnsim_core::Scenario| {
        let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        v["derived"]["lp_classes"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(
        (lp(&ppt), lp(&explicit), lp(&four), lp(&over_swift)),
        (vec![4, 5, 6, 7], vec![4, 5, 6, 7], vec![2, 3], vec![4, 5, 6, 7])
    );
    assert_eq!(lp(&sc(r#"{"protocol":"rc3"}"#, "{}").unwrap()), [1, 2, 3, 4, 5, 6, 7]);
    assert!(lp(&dctcp).is_empty() && lp(&sc(r#"{"protocol":"pias"}"#, "{}").unwrap()).is_empty());
}

#[test]
fn ppt_beats_dctcp_and_rc3_on_websearch() {
    let (ppt_net, dctcp_net) = networks();
    let audit = r#"{"audit":true}"#;
    let mut res = Vec::new();
    for (proto, net) in [("dctcp", &dctcp_net), ("rc3", &dctcp_net), ("ppt", &ppt_net)] {
        let out = run(&format!(r#"{{"protocol":"{proto}"}}"#), net, WEBSEARCH, audit);
        let drops: u64 = out.counters.drops.iter().map(|d| d.1).sum();
        let timeouts: u32 = out.flows.timeouts.iter().sum();
        let s = summarize(&out);
        eprintln!("{proto:5} drops {drops} timeouts {timeouts} {s:?}");
        res.push(s);
    }
    let (dctcp, rc3, ppt) = (res[0], res[1], res[2]);
    for s in [&dctcp, &rc3, &ppt] {
        assert_eq!((s.n, s.unfinished), (2000, 0));
    }
    // With the Linux host model (per-flow NIC limit, fair NIC, window validation) these hold
    // on seeds 1-7: PPT below RC3 below DCTCP overall, PPT's small-flow average about half of
    // theirs. Its small-flow p99 is below both on 5 of those 7 seeds only (here, seed 7, and
    // seed 2 it sits at one 1 ms RTO like theirs: PPT's small flows time out 2-3x as often,
    // its opportunistic packets filling the shared buffer), so it is not asserted on one run.
    assert!(
        ppt.all < rc3.all && rc3.all < dctcp.all,
        "overall avg: ppt {} rc3 {} dctcp {}",
        ppt.all,
        rc3.all,
        dctcp.all
    );
    assert!(ppt.small_avg < 0.7 * dctcp.small_avg && ppt.small_avg < 0.7 * rc3.small_avg, "small avg");
}

/// PIAS schedules small flows ahead of large ones: lower small-flow FCT than DCTCP
/// (per-port ECN marking, as PIAS's evaluation configures it).
#[test]
fn pias_improves_small_flows_over_dctcp() {
    let (_, dctcp_net) = networks();
    let pias_net = dctcp_net.replace('}', r#","ecn_per_port":true}"#);
    let audit = r#"{"audit":true}"#;
    let dctcp = summarize(&run(r#"{"protocol":"dctcp"}"#, &dctcp_net, WEBSEARCH, audit));
    let pias = summarize(&run(r#"{"protocol":"pias"}"#, &pias_net, WEBSEARCH, audit));
    eprintln!("dctcp {dctcp:?}\npias  {pias:?}");
    assert_eq!(pias.unfinished, 0);
    assert!(pias.small_avg < dctcp.small_avg, "small avg: pias {} vs dctcp {}", pias.small_avg, dctcp.small_avg);
    assert!(pias.all < dctcp.all);
}

/// Fig. 1 / Fig. 20 style: two senders, one receiver, web search at load 0.5 of the receiver's
/// link, utilization sampled every 100 us. PPT keeps the bottleneck busier than DCTCP.
#[test]
fn ppt_utilizes_the_bottleneck_better_than_dctcp_two_to_one() {
    let topo = r#"{"kind":"single_switch","hosts":4,"host_rate":"10Gbps","host_delay":"9us"}"#;
    let probe = format!(
        r#"{{"seed":3,"topology":{topo},"transport":{{"protocol":"dctcp"}},"workload":{{"pattern":"permutation","size":"1000B"}}}}"#
    );
    let ni = net_info_of(&probe);
    let k = ppt::recommended_ecn_k(&ni, ppt::LAMBDA_HCP, ppt::LAMBDA_LCP);
    let ks: Vec<String> = k.iter().map(|b| format!("\"{}B\"", b.0)).collect();
    let mut res = Vec::new();
    for (proto, net) in [
        ("dctcp", format!(r#"{{"buffer":"120KB","ecn_k":"{}B"}}"#, k[0].0)),
        ("ppt", format!(r#"{{"buffer":"120KB","ecn_k_per_queue":[{}],"ecn_port_classes":[4,5,6,7]}}"#, ks.join(","))),
    ] {
        // Load 0.125 over 4 hosts = load 0.5 of one host link; all flows go 0/1 -> 2.
        let d = format!(
            r#"{{"seed":3,"topology":{topo},"transport":{{"protocol":"{proto}"}},"network":{net},
                "workload":{{"pattern":"poisson","cdf":"websearch","load":0.125,"flows":1500}},
                "output":{{"audit":true,"sample_interval":"100us"}}}}"#
        );
        let sc = parse_scenario(&d, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        let flows: Vec<_> = sc
            .flows()
            .into_iter()
            .enumerate()
            .map(|(i, mut f)| {
                f.src = (i % 2) as u32;
                f.dst = 2;
                f
            })
            .collect();
        let last_arrival = flows.iter().map(|f| f.start.0).max().unwrap();
        let out = dcnsim_core::sim::Sim::with_flows(&sc, flows).run(&mut |_| true);
        assert!(out.audit_errors.is_empty(), "{:?}", &out.audit_errors[..1]);
        let port =
            (0..out.ports.id.len()).find(|&i| out.ports.peer[i] == 2 && out.ports.node_kind[i] != "host").unwrap();
        let port = out.ports.id[port];
        let l = &out.link_samples;
        // Steady state: from 10% of the arrival period to its end.
        let t0 = last_arrival / 10;
        let u: Vec<f64> = (0..l.t_ps.len())
            .filter(|&i| l.port[i] == port && l.t_ps[i] > t0 && l.t_ps[i] <= last_arrival)
            .map(|i| l.utilization[i])
            .collect();
        let mean = u.iter().sum::<f64>() / u.len() as f64;
        let busy = u.iter().filter(|&&x| x > 0.0).count() as f64;
        let low = u.iter().filter(|&&x| x > 0.0 && x < 0.5).count() as f64 / busy;
        let s = summarize(&out);
        let drops: u64 = out.counters.drops.iter().map(|d| d.1).sum();
        let timeouts: u32 = out.flows.timeouts.iter().sum();
        eprintln!(
            "{proto}: mean util {mean:.3}, busy samples below 50% {low:.3}, drops {drops}, timeouts {timeouts}, {s:?}"
        );
        res.push((mean, low, s));
    }
    let (d, p) = (&res[0], &res[1]);
    assert!(p.0 > d.0, "PPT's mean utilization {} above DCTCP's {}", p.0, d.0);
    assert!(p.1 < d.1, "PPT has fewer under-utilized intervals: {} vs {}", p.1, d.1);
    // PPT's FCTs, drops and timeouts in this 2-to-1 setting: ppt_two_to_one_fct_not_worse_than_dctcp.
}

// ------------------------------------------------------------------------------------------
// Diagnostic of the 2-to-1 case: drops per class, LCP loops per flow, queue per class.
// ------------------------------------------------------------------------------------------

use dcnsim_core::packet::{Ecn, FlowId, Packet, PacketFlags};
use dcnsim_core::transport::{registry, Ctx, FlowStats, Transport};
use std::cell::RefCell;
use std::rc::Rc;

#[derive(Default, Debug)]
struct Tap {
    sent: [u64; 8],
    rcvd: [u64; 8],
    /// Data packets received CE-marked, per class.
    rcvd_ce: [u64; 8],
    /// Payload bytes of opportunistic packets sent / arriving at the receiving host.
    opp_sent_bytes: u64,
    opp_rcvd_bytes: u64,
}

struct Tapped<T: Transport> {
    inner: Rc<RefCell<T>>,
    tap: Rc<RefCell<Tap>>,
}

impl<T: Transport> Tapped<T> {
    fn count(&self, ctx: &Ctx, from: usize) {
        let mut t = self.tap.borrow_mut();
        for p in &ctx.out.sends[from..] {
            if p.is_data() {
                t.sent[p.prio as usize] += 1;
                if p.flags.has(PacketFlags::OPPORTUNISTIC) {
                    t.opp_sent_bytes += p.payload as u64;
                }
            }
        }
    }
}

impl<T: Transport> Transport for Tapped<T> {
    fn name(&self) -> &'static str {
        "tapped"
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let n = ctx.out.sends.len();
        self.inner.borrow_mut().start_flow(ctx, flow);
        self.count(ctx, n);
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if pkt.is_data() {
            let mut t = self.tap.borrow_mut();
            t.rcvd[pkt.prio as usize] += 1;
            t.rcvd_ce[pkt.prio as usize] += (pkt.ecn == Ecn::Ce) as u64;
            if pkt.flags.has(PacketFlags::OPPORTUNISTIC) {
                t.opp_rcvd_bytes += pkt.payload as u64;
            }
        }
        let n = ctx.out.sends.len();
        self.inner.borrow_mut().on_packet(ctx, pkt);
        self.count(ctx, n);
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        let n = ctx.out.sends.len();
        self.inner.borrow_mut().on_timer(ctx, token);
        self.count(ctx, n);
    }
    fn on_tx_complete(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let n = ctx.out.sends.len();
        self.inner.borrow_mut().on_tx_complete(ctx, pkt);
        self.count(ctx, n);
    }
    fn wants_tx_complete(&self) -> bool {
        self.inner.borrow().wants_tx_complete()
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.inner.borrow().flow_stats(flow)
    }
}

struct Dyn(Box<dyn Transport>);

impl Transport for Dyn {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.0.start_flow(ctx, flow)
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.0.on_packet(ctx, pkt)
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.0.on_timer(ctx, token)
    }
    fn on_tx_complete(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.0.on_tx_complete(ctx, pkt)
    }
    fn wants_tx_complete(&self) -> bool {
        self.0.wants_tx_complete()
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.0.flow_stats(flow)
    }
}

const TWO_TO_ONE_TOPO: &str = r#"{"kind":"single_switch","hosts":4,"host_rate":"10Gbps","host_delay":"9us"}"#;

struct TwoToOne {
    /// The run's flow table (per-flow opportunistic bytes included).
    flows: dcnsim_core::output::FlowTable,
    /// Opportunistic payload bytes sent / received as the tap counted them.
    opp_bytes: (u64, u64),
    fct: Fct,
    drops: u64,
    timeouts: u32,
    /// Data packets lost per class (sent - received).
    lost: [u64; 8],
    sent: [u64; 8],
    /// Average queue bytes per class at the bottleneck over samples.
    q_avg: [f64; 8],
    q_max_total: u64,
    loops: u64,
    flows_with_lcp: u64,
    lp_acks: u64,
    lp_ece: u64,
    case2: u64,
    window_pkts: u64,
    lp_pkts: u64,
    case2_pkts: u64,
    lp_ack_rtt_us: f64,
    rcvd: [u64; 8],
    rcvd_ce: [u64; 8],
    closed_idle: u64,
    closed_met: u64,
    /// LP ACKs arriving with no loop open, of which with ECE, packets they released.
    late: (u64, u64, u64),
    /// Payload bytes delivered / payload bytes sent (PPT Fig. 29's transfer efficiency).
    efficiency: f64,
    /// Drops per cause.
    drop_causes: Vec<(String, u64)>,
}

fn two_to_one(proto: &str, transport_extra: &str, flows_n: usize) -> TwoToOne {
    two_to_one_on(proto, transport_extra, flows_n, TWO_TO_ONE_TOPO, None, 3)
}

/// The 2-to-1 case on `topo`, with `net` as the `[network]` table (None: Eq. 3 thresholds,
/// PPT's LCP classes on port occupancy).
fn two_to_one_on(
    proto: &str,
    transport_extra: &str,
    flows_n: usize,
    topo: &str,
    net: Option<&str>,
    seed: u64,
) -> TwoToOne {
    let probe = format!(
        r#"{{"seed":3,"topology":{topo},"transport":{{"protocol":"dctcp"}},"workload":{{"pattern":"permutation","size":"1000B"}}}}"#
    );
    let ni = net_info_of(&probe);
    let k = ppt::recommended_ecn_k(&ni, ppt::LAMBDA_HCP, ppt::LAMBDA_LCP);
    let ks: Vec<String> = k.iter().map(|b| format!("\"{}B\"", b.0)).collect();
    let net = if let Some(n) = net {
        n.to_string()
    } else if proto == "ppt" {
        format!(r#"{{"buffer":"120KB","ecn_k_per_queue":[{}],"ecn_port_classes":[4,5,6,7]}}"#, ks.join(","))
    } else {
        format!(r#"{{"buffer":"120KB","ecn_k":"{}B"}}"#, k[0].0)
    };
    let d = format!(
        r#"{{"seed":{seed},"topology":{topo},"transport":{{"protocol":"{proto}"{transport_extra}}},"network":{net},
            "workload":{{"pattern":"poisson","cdf":"websearch","load":0.125,"flows":{flows_n}}},
            "output":{{"audit":true,"sample_interval":"10us"}}}}"#
    );
    let sc = parse_scenario(&d, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let flows: Vec<_> = sc
        .flows()
        .into_iter()
        .enumerate()
        .map(|(i, mut f)| {
            f.src = (i % 2) as u32;
            f.dst = 2;
            f
        })
        .collect();
    let nflows = flows.len();
    let tap = Rc::new(RefCell::new(Tap::default()));
    let mut lp = (0u64, 0u64, 0u64, 0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut closed = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut add = |s: dcnsim_core::transport::lowprio::LpStats| {
        lp.0 += s.loops as u64;
        lp.1 += (s.loops > 0) as u64;
        lp.2 += s.acks;
        lp.3 += s.ece_acks;
        lp.4 += s.case2_loops as u64;
        lp.5 += s.window_pkts;
        lp.6 += s.pkts;
        lp.7 += s.case2_pkts;
        lp.8 += s.ack_rtt_ps;
        closed.0 += s.closed_idle as u64;
        closed.1 += s.closed_met as u64;
        closed.2 += s.late_acks;
        closed.3 += s.late_ece;
        closed.4 += s.late_pkts;
    };
    let out = if proto == "ppt" {
        let inner = Rc::new(RefCell::new(ppt::Ppt::from_config(&sc.transport_cfg, &sc.net_info).unwrap()));
        let t = Tapped { inner: inner.clone(), tap: tap.clone() };
        let out = dcnsim_core::sim::Sim::with_parts(&sc, flows, Box::new(t)).run(&mut |_| true);
        let p = inner.borrow();
        for f in 0..nflows as FlowId {
            add(p.lp_stats(f));
        }
        out
    } else if proto == "rc3" {
        let inner = Rc::new(RefCell::new(
            dcnsim_core::transport::rc3::Rc3::from_config(&sc.transport_cfg, &sc.net_info).unwrap(),
        ));
        let t = Tapped { inner: inner.clone(), tap: tap.clone() };
        let out = dcnsim_core::sim::Sim::with_parts(&sc, flows, Box::new(t)).run(&mut |_| true);
        let p = inner.borrow();
        for f in 0..nflows as FlowId {
            add(p.lp_stats(f));
        }
        out
    } else {
        let inner = Rc::new(RefCell::new(Dyn(registry::build(&sc.protocol, &sc.transport_cfg, &sc.net_info).unwrap())));
        let t = Tapped { inner, tap: tap.clone() };
        dcnsim_core::sim::Sim::with_parts(&sc, flows, Box::new(t)).run(&mut |_| true)
    };
    assert!(out.audit_errors.is_empty(), "{:?}", &out.audit_errors[..1]);
    // LCP stats, if PPT: rebuild is not possible, so query through a fresh PPT is useless; use
    // the concrete type via a second run below when needed.
    let port = common_bottleneck(&out, 2);
    let q = &out.queue_samples;
    let nsamples = out.link_samples.t_ps.iter().zip(&out.link_samples.port).filter(|(_, &p)| p == port).count();
    let mut q_avg = [0.0; 8];
    let mut tot: std::collections::BTreeMap<u64, u64> = Default::default();
    for i in 0..q.t_ps.len() {
        if q.port[i] == port {
            q_avg[q.prio[i] as usize] += q.bytes[i] as f64 / nsamples.max(1) as f64;
            *tot.entry(q.t_ps[i]).or_default() += q.bytes[i];
        }
    }
    let total: u64 = out.flows.size.iter().sum();
    let retx: u64 = out.flows.retx_bytes.iter().sum();
    eprintln!(
        "  payload sent / flow bytes = {:.4}, hcp retx bytes / flow bytes = {:.4}",
        out.counters.data_payload_sent as f64 / total as f64,
        retx as f64 / total as f64
    );
    let tp = tap.borrow();
    let mut lost = [0; 8];
    for (c, l) in lost.iter_mut().enumerate() {
        *l = tp.sent[c].saturating_sub(tp.rcvd[c]);
    }
    let _ = nflows;
    TwoToOne {
        flows: out.flows.clone(),
        opp_bytes: (tp.opp_sent_bytes, tp.opp_rcvd_bytes),
        fct: summarize(&out),
        drops: out.counters.drops.iter().map(|d| d.1).sum(),
        timeouts: out.flows.timeouts.iter().sum(),
        lost,
        sent: tp.sent,
        q_avg,
        q_max_total: tot.values().copied().max().unwrap_or(0),
        loops: lp.0,
        flows_with_lcp: lp.1,
        lp_acks: lp.2,
        lp_ece: lp.3,
        case2: lp.4,
        window_pkts: lp.5,
        lp_pkts: lp.6,
        case2_pkts: lp.7,
        lp_ack_rtt_us: lp.8 as f64 / 1e6 / lp.2.max(1) as f64,
        rcvd: tp.rcvd,
        rcvd_ce: tp.rcvd_ce,
        closed_idle: closed.0,
        closed_met: closed.1,
        late: (closed.2, closed.3, closed.4),
        efficiency: total as f64 / out.counters.data_payload_sent.max(1) as f64,
        drop_causes: out.counters.drops.iter().map(|d| (d.0.to_string(), d.1)).collect(),
    }
}

/// Print the low-priority mechanics of a run: marks, loop ends, buffer split.
fn print_mechanics(name: &str, r: &TwoToOne) {
    // RC3: HCP in class 0, opportunistic packets from class 1; PPT: 0-3 / 4-7.
    let l = if name.contains("rc3") { 1 } else { 4 };
    let lp_sent: u64 = r.sent[l..].iter().sum();
    let lp_rcvd: u64 = r.rcvd[l..].iter().sum();
    let lp_ce: u64 = r.rcvd_ce[l..].iter().sum();
    let hp_q: f64 = r.q_avg[..l].iter().sum();
    let lp_q: f64 = r.q_avg[l..].iter().sum();
    eprintln!(
        "{name}: avg {:.0} small avg {:.0} p99 {:.0} large {:.0} us | drops {} {:?} timeouts {} | efficiency {:.4} LP {:.4}",
        r.fct.all,
        r.fct.small_avg,
        r.fct.small_p99,
        r.fct.large_avg,
        r.drops,
        r.drop_causes,
        r.timeouts,
        r.efficiency,
        r.opp_bytes.1 as f64 / r.opp_bytes.0.max(1) as f64
    );
    eprintln!(
        "  LP pkts sent {lp_sent} rcvd {lp_rcvd} ({:.1}% lost) CE-marked {lp_ce} ({:.1}% of rcvd) | LP ACKs {} with ECE {} (in open loops; late {:?}) | loops {} ended idle {} met {} | LP RTT {:.1} us",
        100.0 * (1.0 - lp_rcvd as f64 / lp_sent.max(1) as f64),
        100.0 * lp_ce as f64 / lp_rcvd.max(1) as f64,
        r.lp_acks,
        r.lp_ece,
        r.late,
        r.loops,
        r.closed_idle,
        r.closed_met,
        r.lp_ack_rtt_us
    );
    eprintln!(
        "  bottleneck avg occupancy: HP {:.1} KB, LP {:.1} KB (LP {:.1}% of {:.1} KB) max {:.1} KB | window pkts {} case2 loops {} pkts {}",
        hp_q / 1e3,
        lp_q / 1e3,
        100.0 * lp_q / (hp_q + lp_q).max(1e-9),
        (hp_q + lp_q) / 1e3,
        r.q_max_total as f64 / 1e3,
        r.window_pkts,
        r.case2,
        r.case2_pkts
    );
}

/// PPT appendix F, Fig. 28/29: 2 senders to 1 receiver, 40 Gbps, 120 KB buffer, web search at
/// load 0.5 of the receiver's link, the same K for every class at 60% and 80% of the buffer
/// (72 / 96 KB): average bottleneck occupancy of the high- and low-priority classes and
/// transfer efficiency for DCTCP, RC3 and PPT (PPT's LCP classes mark on port occupancy).
/// `PPT_NET_EXTRA` adds fields to the `[network]` table (e.g. `,"pushout_classes":[4,5,6,7]`).
#[test]
#[ignore]
fn diag_fig28_buffer_split() {
    let topo = r#"{"kind":"single_switch","hosts":4,"host_rate":"40Gbps","host_delay":"2us"}"#;
    let extra = std::env::var("PPT_NET_EXTRA").unwrap_or_default();
    let flows: usize = std::env::var("PPT_FLOWS").ok().and_then(|s| s.parse().ok()).unwrap_or(1500);
    for k in ["72KB", "96KB"] {
        for proto in ["dctcp", "rc3", "ppt"] {
            let ports = if proto == "ppt" { r#","ecn_port_classes":[4,5,6,7]"# } else { "" };
            // PPT_PUSHOUT=1: the opportunistic classes may be pushed out (RC3: 1-7, PPT: 4-7).
            let po = match (std::env::var("PPT_PUSHOUT").is_ok(), proto) {
                (true, "rc3") => r#","pushout_classes":[1,2,3,4,5,6,7]"#,
                (true, "ppt") => r#","pushout_classes":[4,5,6,7]"#,
                _ => "",
            };
            let net = format!(r#"{{"buffer":"120KB","ecn_k":"{k}"{ports}{po}{extra}}}"#);
            let r = two_to_one_on(proto, "", flows, topo, Some(&net), 3);
            print_mechanics(&format!("K={k} {proto}{po}{extra}"), &r);
        }
    }
}

/// The per-flow opportunistic counters the flow table reports (`lp_sent_bytes`,
/// `lp_rcvd_bytes`: PPT Fig. 29's low-priority transfer efficiency) equal the opportunistic
/// payload a tap between the hosts and the transport sees leave the senders and reach the
/// receiver, for RC3 and PPT in the Fig. 28 setup (K = 72 KB); DCTCP reports none.
#[test]
fn opportunistic_bytes_in_the_flow_table_match_the_packets_on_the_wire() {
    let topo = r#"{"kind":"single_switch","hosts":4,"host_rate":"40Gbps","host_delay":"2us"}"#;
    for proto in ["dctcp", "rc3", "ppt"] {
        let ports = if proto == "ppt" { r#","ecn_port_classes":[4,5,6,7]"# } else { "" };
        let net = format!(r#"{{"buffer":"120KB","ecn_k":"72KB"{ports}}}"#);
        let r = two_to_one_on(proto, "", 300, topo, Some(&net), 1);
        let f = &r.flows;
        let sent: u64 = f.lp_sent_bytes.iter().sum();
        let rcvd: u64 = f.lp_rcvd_bytes.iter().sum();
        assert_eq!((sent, rcvd), r.opp_bytes, "{proto}");
        for i in 0..f.id.len() {
            assert!(f.lp_rcvd_bytes[i] <= f.lp_sent_bytes[i], "{proto} flow {i}");
            assert!(f.lp_sent_bytes[i] <= f.sent_bytes[i], "{proto} flow {i}");
        }
        if proto == "dctcp" {
            assert_eq!(sent, 0);
        } else {
            // Some opportunistic packets are lost in this setup (drop-tail, 120 KB).
            assert!(0 < rcvd && rcvd < sent, "{proto}: {rcvd} of {sent}");
        }
    }
}

/// The LCP-ECN ablation's mechanics (PPT Fig. 15) in the 2-to-1 case with the paper's §6.2
/// thresholds (96 KB HCP / 86 KB LCP on a 120 KB buffer, LCP classes on port occupancy), at
/// 10 Gbps / 37 us (the default 2-to-1) or 40 Gbps / ~9 us: how many opportunistic packets
/// are marked, what ends the loops, PPT with and without LCP ECN.
#[test]
#[ignore]
fn diag_lcp_ecn_ablation() {
    let extra = std::env::var("PPT_NET_EXTRA").unwrap_or_default();
    let t40 = r#"{"kind":"single_switch","hosts":4,"host_rate":"40Gbps","host_delay":"2us"}"#;
    for (label, topo) in [("10G", TWO_TO_ONE_TOPO), ("40G", t40)] {
        let net = format!(
            r#"{{"buffer":"120KB","ecn_k_per_queue":["96KB","96KB","96KB","96KB","86KB","86KB","86KB","86KB"],"ecn_port_classes":[4,5,6,7]{extra}}}"#
        );
        let late = std::env::var("PPT_EXTRA").unwrap_or_default();
        for (name, tx) in [("ppt", String::new()), ("no_lcp_ecn", r#","lcp_ecn":false"#.to_string())] {
            let r = two_to_one_on("ppt", &format!("{tx}{late}"), 1500, topo, Some(&net), 3);
            print_mechanics(&format!("{label} {name}{late}{extra}"), &r);
        }
    }
}

fn common_bottleneck(out: &RunOutput, host: u32) -> u32 {
    let p = &out.ports;
    (0..p.id.len()).find(|&i| p.peer[i] == host && p.node_kind[i] != "host").map(|i| p.id[i]).unwrap()
}

/// The 2-to-1 web-search case (load 0.5 of the receiver's link, 1500 flows, 120 KB buffers,
/// PPT's LCP classes marked on port occupancy): PPT's average FCT and small-flow p99 are not
/// worse than DCTCP's (seeds 1-6 with the Linux host model, all six).
/// Drops and timeouts: with the hosts of ns-2-style simulators PPT had 4,507 drops and 98
/// timeouts against DCTCP's 1,176 drops (the guard was "timeouts < 2x DCTCP's"). With the
/// Linux host DCTCP's own NIC keeps its backlog (1 MB per flow) and its drops fall to 446-1,065
/// and timeouts to 4-20 on seeds 1-6, while PPT's opportunistic packets still overflow the
/// shared buffer: 4,747-6,207 drops, 58-101 timeouts. The bounds below are regression guards
/// with a margin on those figures (at most 10% of flows with a timeout, 8,000 drops), not the
/// paper's numbers.
#[test]
fn ppt_two_to_one_fct_not_worse_than_dctcp() {
    let d = two_to_one("dctcp", "", 1500);
    let p = two_to_one("ppt", "", 1500);
    eprintln!("dctcp drops {} timeouts {} {:?}", d.drops, d.timeouts, d.fct);
    eprintln!("ppt   drops {} timeouts {} {:?}", p.drops, p.timeouts, p.fct);
    for s in [&d, &p] {
        assert_eq!((s.fct.n, s.fct.unfinished), (1500, 0));
    }
    assert!(p.fct.all <= d.fct.all, "avg FCT: ppt {} vs dctcp {}", p.fct.all, d.fct.all);
    assert!(p.fct.small_p99 <= d.fct.small_p99, "small p99: ppt {} vs dctcp {}", p.fct.small_p99, d.fct.small_p99);
    assert!(p.timeouts < 150, "timeouts: ppt {} vs dctcp {}", p.timeouts, d.timeouts);
    assert!(p.drops < 8_000, "drops: ppt {} vs dctcp {} (regression guard)", p.drops, d.drops);
    // Case-2 loops: alpha at its minimum since start-up, at most once per congestion
    // episode, within the gap to W_max: fewer than one per flow here (2,959 for 1,239 flows
    // with the 8-round minimum), and a minority of the opportunistic packets (below a quarter
    // with the ns-2-style hosts; 34% with the Linux host, whose delayed case-1 loops are
    // smaller: BDP minus the HCP's 2nd-round window).
    assert!(p.case2 < p.flows_with_lcp, "case-2 loops {} for {} flows", p.case2, p.flows_with_lcp);
    assert!(2 * p.case2_pkts < p.lp_pkts, "case-2 packets {} of {}", p.case2_pkts, p.lp_pkts);
}

#[test]
#[ignore]
fn diag_two_to_one() {
    let ex = std::env::var("PPT_EXTRA").unwrap_or_default();
    for (proto, extra) in [("dctcp", ""), ("ppt", ex.as_str())] {
        let r = two_to_one(proto, extra, 1500);
        eprintln!(
            "{proto}{extra}: drops {} timeouts {} {:?}\n  sent {:?}\n  lost {:?}\n  q_avg {:?} q_max_total {}\n  loops {} lp_acks {} ece {}",
            r.drops, r.timeouts, r.fct, r.sent, r.lost, r.q_avg.map(|x| x.round()), r.q_max_total, r.loops, r.lp_acks, r.lp_ece
        );
        eprintln!(
            "  flows with lcp {} case2 loops {} lp pkts {} window pkts {} case2 pkts {} mean LP ACK RTT {:.1} us",
            r.flows_with_lcp, r.case2, r.lp_pkts, r.window_pkts, r.case2_pkts, r.lp_ack_rtt_us
        );
    }
}
