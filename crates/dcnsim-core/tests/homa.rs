//! Scenario tests of Homa (Montazeri et al., SIGCOMM 2018) and Homa + Aeolus (Hu et al.,
//! ToN 2021): uncontended FCT equals the ideal, a 16-to-1 incast completes with bytes
//! conserved, and with a small buffer plain Homa needs its timeouts while Homa + Aeolus
//! (selective dropping) needs none and never loses a scheduled packet.

mod common;

use common::*;
use dcnsim_core::output::RunOutput;
use dcnsim_core::packet::{FlowId, Packet, PacketFlags};
use dcnsim_core::sim::Sim;
use dcnsim_core::transport::{registry, Ctx, FlowStats, Transport};
use dcnsim_core::units::Time;
use std::cell::RefCell;
use std::rc::Rc;

const STAR: &str = r#"{"kind":"single_switch","hosts":17,"host_rate":"10Gbps","host_delay":"1us"}"#;
const LEAF_SPINE: &str = r#"{"kind":"leaf_spine","leaves":4,"hosts_per_leaf":4,"spines":2,"host_rate":"10Gbps","core_rate":"40Gbps","host_delay":"1us","core_delay":"1us"}"#;
const HOMA: &str = r#"{"protocol":"homa"}"#;

fn check(out: &RunOutput) {
    assert!(out.audit_errors.is_empty(), "{:?}", &out.audit_errors[..out.audit_errors.len().min(5)]);
    let f = &out.flows;
    let unfinished = (0..f.id.len()).filter(|&i| f.fct_ps[i] == u64::MAX).count();
    assert_eq!(unfinished, 0, "every flow completes");
    assert_eq!(out.counters.packets_left, 0, "no packet left in the network");
}

fn drops(out: &RunOutput, cause: &str) -> u64 {
    out.counters.drops.iter().filter(|d| d.0 == cause).map(|d| d.1).sum()
}

/// A message alone in the network finishes exactly at the ideal FCT (docs/metrics.md): its
/// unscheduled packets leave at line rate, and the grants of the scheduled part reach the
/// sender before it runs out of granted bytes (rtt_bytes = one BDP of the largest base RTT),
/// so the NIC never idles. No RTS: every data packet carries the length. Checked below
/// rtt_bytes (all unscheduled), just above it, and at 100 KB and 1 MB, on one switch and
/// across a leaf-spine fabric (3 switches, mixed 10/40 Gbps).
#[test]
fn uncontended_message_fct_is_ideal() {
    for topo in [STAR, LEAF_SPINE] {
        let sc = scenario(topo, HOMA, "{}");
        let dst = if topo == STAR { 1 } else { 15 };
        for size in [1_000u64, 8_000, 20_000, 100_000, 1_000_000] {
            let (out, _) = run_flows(&sc, vec![flow(0, dst, size, Time::ZERO)]);
            check(&out);
            let f = &out.flows;
            assert_eq!(f.fct_ps[0], f.ideal_fct_ps[0], "size {size}: ideal {} ps", f.ideal_fct_ps[0]);
            assert_eq!((f.sent_bytes[0], f.retx_bytes[0], f.timeouts[0]), (size, 0, 0));
        }
    }
}

/// Counts data packets by kind as they are sent and as they arrive (a wrapper around the
/// transport): scheduled = data not flagged `UNSCHEDULED`.
#[derive(Default, Debug)]
struct Count {
    sched_sent: u64,
    sched_recv: u64,
    unsched_sent: u64,
    unsched_recv: u64,
}

struct Counter {
    inner: Box<dyn Transport>,
    c: Rc<RefCell<Count>>,
}

impl Counter {
    fn sent(&self, out: &dcnsim_core::transport::Actions) {
        let mut c = self.c.borrow_mut();
        for p in out.sends.iter().filter(|p| p.is_data()) {
            if p.flags.has(PacketFlags::UNSCHEDULED) {
                c.unsched_sent += 1;
            } else {
                c.sched_sent += 1;
            }
        }
    }
}

impl Transport for Counter {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.start_flow(ctx, flow);
        self.sent(ctx.out);
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if pkt.is_data() {
            let mut c = self.c.borrow_mut();
            if pkt.flags.has(PacketFlags::UNSCHEDULED) {
                c.unsched_recv += 1;
            } else {
                c.sched_recv += 1;
            }
        }
        self.inner.on_packet(ctx, pkt);
        self.sent(ctx.out);
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.inner.on_timer(ctx, token);
        self.sent(ctx.out);
    }
    fn on_nic_idle(&mut self, ctx: &mut Ctx) {
        self.inner.on_nic_idle(ctx);
        self.sent(ctx.out);
    }
    fn wants_nic_idle(&self) -> bool {
        self.inner.wants_nic_idle()
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.inner.flow_stats(flow)
    }
}

fn incast_run(transport: &str, network: &str, n: u32, size: u64) -> (RunOutput, Count) {
    let sc = scenario(STAR, transport, network);
    let flows = (0..n).map(|i| flow(i, 16, size, Time::ZERO)).collect();
    let inner = registry::build(&sc.protocol, &sc.transport_cfg, &sc.net_info).unwrap();
    let c = Rc::new(RefCell::new(Count::default()));
    let out = Sim::with_parts(&sc, flows, Box::new(Counter { inner, c: c.clone() })).run(&mut |_| true);
    check(&out);
    let count = std::mem::take(&mut *c.borrow_mut());
    (out, count)
}

fn summary(out: &RunOutput) -> String {
    let f = &out.flows;
    format!(
        "last {:.1} us, timeouts {:?}, retx {} B, drops {:?}",
        *f.fct_ps.iter().max().unwrap() as f64 / 1e6,
        f.timeouts,
        f.retx_bytes.iter().sum::<u64>(),
        out.counters.drops
    )
}

/// 16 senders each start a 100 KB message to one receiver at t = 0 (default 120 KB buffer).
/// Every message completes, the receiver holds exactly its bytes (audit), and every byte
/// handed to a NIC is either a first transmission or a retransmission the transport
/// reported: sent = size + retx for each flow. The receiver grants in SRPT order with ties
/// by arrival and id, so equal messages finish in flow-id order and the last one ends close
/// to the time the receiver's link needs for all 1.6 MB.
#[test]
fn incast_16_to_1_completes_with_bytes_conserved() {
    let (out, _) = incast_run(HOMA, "{}", 16, 100_000);
    eprintln!(
        "homa incast: {} fct {:?}",
        summary(&out),
        out.flows.fct_ps.iter().map(|x| x / 1_000_000).collect::<Vec<_>>()
    );
    let f = &out.flows;
    for i in 0..16 {
        assert_eq!(f.sent_bytes[i], f.size[i] + f.retx_bytes[i], "flow {i}");
    }
    let sent: u64 = f.sent_bytes.iter().sum();
    assert_eq!(out.counters.data_payload_sent, sent);
    let wire: u64 = 16 * (68 * 1500 + (100_000 - 68 * 1460) + 40);
    let bound = dcnsim_core::units::Rate::gbps(10).tx_time(dcnsim_core::units::Bytes(wire));
    let last = *f.fct_ps.iter().max().unwrap();
    assert!(last >= bound.0);
}

const SMALL_BUF: &str = r#"{"buffer":"60KB"}"#;
const SMALL_BUF_AEOLUS: &str =
    r#"{"buffer":"60KB","queue_policy":"selective_drop","selective":{"threshold":"6KB","per_port":true}}"#;

/// A 60 KB buffer and a 16-to-1 incast of 30 KB messages (10 Gbps, one BDP = 6 packets of
/// unscheduled data per message, overcommitment 2, resend_timeout 1 ms): the 16 unscheduled
/// bursts (144 KB) overflow the receiver's port.
/// - Plain Homa loses unscheduled packets (and scheduled ones behind them) and repairs them
///   with RESENDs after `resend_timeout`: some flows time out and finish after 1 ms.
/// - Homa + Aeolus with per-port selective dropping (6 KB): every drop is a selective drop
///   of an unscheduled packet, no buffer overflow, every scheduled packet sent arrives, no
///   flow times out (SACKs and the probe find every loss), every lost unscheduled packet is
///   sent again exactly once, and the incast ends well before one timeout.
#[test]
fn small_buffer_homa_times_out_homa_aeolus_does_not() {
    let homa = r#"{"protocol":"homa","overcommitment":2,"resend_timeout":"1ms"}"#;
    let (plain, pc) = incast_run(homa, SMALL_BUF, 16, 30_000);
    eprintln!("homa: {} {pc:?}", summary(&plain));
    let f = &plain.flows;
    let timed_out: Vec<usize> = (0..16).filter(|&i| f.timeouts[i] > 0).collect();
    assert!(!timed_out.is_empty(), "plain Homa needs its timeout");
    assert!(timed_out.iter().all(|&i| f.fct_ps[i] > Time::ms(1).0), "they wait for resend_timeout");
    assert!(drops(&plain, "buffer_overflow") > 0);

    let aeo = r#"{"protocol":"homa","overcommitment":2,"aeolus":true,"resend_timeout":"1ms"}"#;
    let (with, ac) = incast_run(aeo, SMALL_BUF_AEOLUS, 16, 30_000);
    eprintln!("homa+aeolus: {} {ac:?}", summary(&with));
    let f = &with.flows;
    assert_eq!(f.timeouts, vec![0; 16], "no flow waits for a timeout");
    assert_eq!(drops(&with, "buffer_overflow"), 0);
    let selective = drops(&with, "selective_drop");
    assert!(selective > 0, "unscheduled packets are dropped selectively");
    assert_eq!(selective, ac.unsched_sent - ac.unsched_recv, "only unscheduled packets are dropped");
    assert_eq!(ac.sched_sent, ac.sched_recv, "no scheduled packet is lost");
    // Each dropped unscheduled packet (all full-size here) is resent exactly once.
    assert_eq!(f.retx_bytes.iter().sum::<u64>(), selective * 1460);
    for i in 0..16 {
        assert_eq!(f.sent_bytes[i], f.size[i] + f.retx_bytes[i]);
    }
    let last = *f.fct_ps.iter().max().unwrap();
    assert!(last < Time::ms(1).0, "done before one resend_timeout: {last} ps");
}

/// The same 16-to-1 incast of 100 KB messages over per-port selective dropping with
/// Aeolus: every message completes without a timeout and no packet is lost to overflow.
#[test]
fn incast_16_to_1_with_aeolus_has_no_timeout() {
    let (out, c) = incast_run(
        r#"{"protocol":"homa","aeolus":true}"#,
        r#"{"queue_policy":"selective_drop","selective":{"per_port":true}}"#,
        16,
        100_000,
    );
    eprintln!("homa+aeolus incast: {} {c:?}", summary(&out));
    let f = &out.flows;
    assert_eq!(f.timeouts, vec![0; 16]);
    assert_eq!(drops(&out, "buffer_overflow"), 0);
    assert_eq!(c.sched_sent, c.sched_recv);
    assert_eq!(f.retx_bytes.iter().sum::<u64>(), drops(&out, "selective_drop") * 1460);
}

fn poisson(
    transport: &str,
    network: &str,
    flows: usize,
) -> (dcnsim_core::Scenario, Vec<dcnsim_core::workload::FlowSpec>) {
    let doc = format!(
        r#"{{"seed":11,"topology":{LEAF_SPINE},"transport":{transport},"network":{network},
            "workload":{{"pattern":"poisson","cdf":"websearch","load":0.5,"flows":{flows}}},
            "output":{{"audit":true}}}}"#
    );
    let sc = dcnsim_core::parse_scenario(&doc, dcnsim_core::Format::Json, std::path::Path::new("."))
        .unwrap_or_else(|e| panic!("{e}"));
    let flows = sc.flows();
    (sc, flows)
}

/// The workload's CDF reaches the transport: web search at 10 Gbps (rtt_bytes ~ 13 KB)
/// has few unscheduled bytes, so one unscheduled level and seven scheduled ones.
#[test]
fn scenario_hands_the_workload_cdf_to_homa() {
    let (sc, _) = poisson(HOMA, "{}", 10);
    let cdf = sc.net_info.size_cdf.as_ref().expect("a CDF");
    assert_eq!(cdf.last().unwrap().1, 1.0);
    let h = dcnsim_core::transport::homa::Homa::from_config(&sc.transport_cfg, &sc.net_info).unwrap();
    let p = h.params();
    assert!(p.from_cdf);
    let f = dcnsim_core::transport::homa::unsched_byte_fraction(cdf, p.rtt_bytes);
    assert!(f < 1.0 / 16.0, "web search is mostly scheduled bytes: {f}");
    assert_eq!((p.unsched_prios, p.sched_prios, p.overcommitment), (1, 7, 7));
}

/// Web search, Poisson all-to-all at load 0.5 on a 16-host leaf-spine (120 KB buffers):
/// every flow finishes, the audit finds nothing, no flow beats its ideal FCT, and small
/// flows are mostly near their ideal, for Homa and for Homa + Aeolus (per-port selective
/// dropping). Runs are deterministic.
#[test]
fn leaf_spine_poisson_load_half_finishes_every_flow() {
    for (t, n) in [
        (HOMA, "{}"),
        (r#"{"protocol":"homa","aeolus":true}"#, r#"{"queue_policy":"selective_drop","selective":{"per_port":true}}"#),
    ] {
        let (sc, flows) = poisson(t, n, 500);
        let out = Sim::with_flows(&sc, flows.clone()).run(&mut |_| true);
        check(&out);
        let f = &out.flows;
        let k = f.id.len();
        let slow: Vec<f64> = (0..k).map(|i| f.fct_ps[i] as f64 / f.ideal_fct_ps[i] as f64).collect();
        assert!(slow.iter().all(|&s| s >= 1.0), "no flow beats the ideal");
        let mut small: Vec<f64> = (0..k).filter(|&i| f.size[i] <= 100_000).map(|i| slow[i]).collect();
        small.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let median = small[small.len() / 2];
        let p99 = small[(small.len() * 99).div_ceil(100) - 1];
        let avg = slow.iter().sum::<f64>() / k as f64;
        eprintln!(
            "{t} {n}: flows {k} small median slowdown {median:.3} p99 {p99:.2} avg {avg:.2} retx {} timeouts {} drops {:?} wall {:.2}s",
            f.retx_bytes.iter().sum::<u64>(),
            f.timeouts.iter().sum::<u32>(),
            out.counters.drops,
            out.counters.wall_s
        );
        assert!(median < 1.5, "median small-flow slowdown {median}");
        let again = Sim::with_flows(&sc, flows).run(&mut |_| true);
        assert_eq!(out.flows.fct_ps, again.flows.fct_ps, "deterministic");
        assert_eq!(out.counters.events, again.counters.events);
    }
}

fn example(name: &str) -> dcnsim_core::Scenario {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples");
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    dcnsim_core::parse_scenario(&text, dcnsim_core::Format::Toml, &dir).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Small-flow (<= 100 KB) FCT figures of a run: (p99, median, mean) in us, flows with a
/// timeout, and drops by cause.
fn small_flow_figures(out: &RunOutput) -> (f64, f64, f64, usize) {
    let f = &out.flows;
    let mut small: Vec<u64> = (0..f.id.len()).filter(|&i| f.size[i] <= 100_000).map(|i| f.fct_ps[i]).collect();
    small.sort_unstable();
    let n = small.len();
    let us = |x: u64| x as f64 / 1e6;
    let timed_out = f.timeouts.iter().filter(|&&t| t > 0).count();
    (
        us(small[(n * 99).div_ceil(100) - 1]),
        us(small[n.div_ceil(2) - 1]),
        small.iter().map(|&x| us(x)).sum::<f64>() / n as f64,
        timed_out,
    )
}

/// The shipped examples parse, and their first 300 flows all complete.
#[test]
fn examples_parse_and_run() {
    for name in ["homa.toml", "homa_aeolus.toml"] {
        let sc = example(name);
        assert_eq!(sc.protocol, "homa");
        let h = dcnsim_core::transport::homa::Homa::from_config(&sc.transport_cfg, &sc.net_info).unwrap();
        assert_eq!((h.params().unsched_prios, h.params().sched_prios, h.params().overcommitment), (2, 6, 6));
        assert_eq!(h.params().aeolus.is_some(), name == "homa_aeolus.toml");
        let flows: Vec<_> = sc.flows().into_iter().take(300).collect();
        let out = Sim::with_flows(&sc, flows).run(&mut |_| true);
        assert_eq!(out.flows.fct_ps.iter().filter(|&&x| x == u64::MAX).count(), 0, "{name}");
    }
}

/// The full examples (Aeolus §V-C setting): prints the figures of Aeolus Tables II-IV and
/// Fig. 16 for Homa and Homa + Aeolus. Slow; run with `--ignored --nocapture`.
#[test]
#[ignore]
fn examples_full_figures() {
    for name in ["homa.toml", "homa_aeolus.toml"] {
        let sc = example(name);
        let out = Sim::with_flows(&sc, sc.flows()).run(&mut |_| true);
        let (p99, med, avg, to) = small_flow_figures(&out);
        eprintln!(
            "{name}: flows {} small-flow FCT p99 {p99:.2} us median {med:.2} us mean {avg:.2} us; flows with a timeout {to}; drops {:?}; retx {} B; wall {:.1} s",
            out.flows.id.len(),
            out.counters.drops,
            out.flows.retx_bytes.iter().sum::<u64>(),
            out.counters.wall_s
        );
    }
}

/// Aeolus §V-E (Tables VI-VII): the priority-queueing alternative. Unscheduled packets (and
/// their probes) in the lowest class are not dropped early: in a 16-to-1 incast of 100 KB
/// messages over a 60 KB shared buffer they wait behind the scheduled traffic and the
/// buffer overflows; probes are lost with them, so the losses are found only by the
/// timeout (1 ms) and the incast ends after it. Selective dropping in the same setting has
/// no overflow, no timeout, and ends well before 1.5 ms (measured: 2.12 ms vs 1.32 ms).
#[test]
fn low_priority_alternative_lets_unscheduled_packets_crowd_out_scheduled_ones() {
    let t = |mode: &str| format!(r#"{{"protocol":"homa","overcommitment":2,"aeolus":true,"aeolus_mode":"{mode}"}}"#);
    let (pq, pc) = incast_run(&t("low_priority"), SMALL_BUF, 16, 100_000);
    eprintln!("low priority: {} {pc:?}", summary(&pq));
    let (sd, sc) = incast_run(&t("selective_drop"), SMALL_BUF_AEOLUS, 16, 100_000);
    eprintln!("selective drop: {} {sc:?}", summary(&sd));
    assert!(drops(&pq, "buffer_overflow") > 0);
    assert!(pq.flows.timeouts.iter().sum::<u32>() > 0);
    let last = |o: &RunOutput| *o.flows.fct_ps.iter().max().unwrap();
    assert!(last(&pq) > Time::ms(1).0 + last(&sd) / 2);
    assert_eq!(drops(&sd, "buffer_overflow"), 0);
    assert_eq!(sd.flows.timeouts, vec![0; 16]);
    assert_eq!(sc.sched_sent, sc.sched_recv);
    assert!(last(&sd) < Time::us(1500).0);
}

// ------------------------------------------------------------------------------------------
// Diagnostics of the Aeolus §V-C reproduction (repro/aeolus_homa_*)
// ------------------------------------------------------------------------------------------

/// Data packets by what they are, as sent and as received: unscheduled, scheduled (new
/// data), Aeolus retransmission (scheduled copy of a lost unscheduled packet), RESEND
/// retransmission, sender-timeout retransmission.
const CATS: [&str; 5] = ["unsched", "sched", "aeolus_retx", "resend_retx", "sender_to"];

fn cat(p: &Packet) -> usize {
    use dcnsim_core::transport::homa::{DATA_RESEND, DATA_RETX, DATA_SENDER_TIMEOUT};
    if p.aux2 & DATA_SENDER_TIMEOUT != 0 {
        4
    } else if p.aux2 & DATA_RESEND != 0 {
        3
    } else if p.aux2 & DATA_RETX != 0 {
        2
    } else if p.flags.has(PacketFlags::UNSCHEDULED) {
        0
    } else {
        1
    }
}

/// What the diagnostic wrapper saw.
#[derive(Default, Debug)]
struct Diag {
    sent: [u64; 5],
    recv: [u64; 5],
    /// Arrivals of a packet index the receiver already held.
    dup: [u64; 5],
    /// Packet indices named by RESENDs, and how many of them were still in flight (a copy
    /// sent before the RESEND arrived after it): spurious requests.
    resend_asked: u64,
    resend_spurious: u64,
    /// Flows with at least one RESEND, and those whose every requested packet was in flight.
    flows_resent: u64,
    flows_all_spurious: u64,
    held: std::collections::HashMap<FlowId, Vec<bool>>,
    /// (flow, idx) -> time of the latest RESEND naming it.
    asked: std::collections::HashMap<(FlowId, u64), Time>,
    /// per flow: (requested, spurious)
    per_flow: std::collections::HashMap<FlowId, (u64, u64)>,
    /// per flow: (receiver, grant offset, unique bytes received, complete)
    grants: std::collections::HashMap<FlowId, (u32, u64, u64, bool)>,
    /// per receiver: granted-but-not-received bytes over its incomplete messages, and the
    /// largest value seen
    outstanding: std::collections::HashMap<u32, u64>,
    max_outstanding: u64,
    /// largest in-flight volume a receiver believed it had granted (granted - received - lost)
    max_believed: u64,
    /// Drops by (egress node tier -> peer tier, cause, packet type (CATS, or "ctrl"), class).
    drop_at: std::collections::BTreeMap<(String, &'static str, &'static str, u8), u64>,
    /// Over the overflow drops of data at switch ports towards a host: the summed bytes
    /// waiting per class, the summed port total, and the summed granted-but-not-received
    /// bytes of the receiver (as this wrapper tracks them) at the drop.
    downlink_class_sum: [u64; 8],
    downlink_total_sum: u64,
    downlink_outstanding_sum: u64,
    downlink_outstanding_max: u64,
    downlink_n: u64,
    /// Per host, what the receiver itself counts as granted and not yet received
    /// (`Homa::receiver_outstanding`, messages it knows), after its latest event; summed,
    /// maximum, and how many downlink drops saw more than the port's buffer.
    believed: std::collections::HashMap<u32, u64>,
    downlink_believed_sum: u64,
    downlink_believed_max: u64,
    downlink_believed_over_buffer: u64,
    buffer: u64,
    /// Incomplete messages to that receiver with bytes granted (or unscheduled) and not yet
    /// received, at the downlink drops: summed and maximum.
    downlink_msgs_sum: u64,
    downlink_msgs_max: u64,
}

struct Diagnoser {
    trace: Option<FlowId>,
    inner: dcnsim_core::transport::homa::Homa,
    d: Rc<RefCell<Diag>>,
    mss: u64,
    rtt_bytes: u64,
}

impl Diagnoser {
    fn after(&self, now: Time, host: u32, out: &dcnsim_core::transport::Actions) {
        use dcnsim_core::transport::homa::{KIND_GRANT, KIND_RESEND};
        let mut g = self.d.borrow_mut();
        let d = &mut *g;
        let believed = self.inner.receiver_outstanding(host);
        d.believed.insert(host, believed);
        if out.sends.iter().any(|p| p.kind == KIND_GRANT) {
            d.max_believed = d.max_believed.max(believed);
        }
        for p in out.sends.iter() {
            if Some(p.flow) == self.trace {
                eprintln!(
                    "  {:.3} us host {host} sends kind {} seq {} ack {} prio {} rank {} aux2 {}",
                    now.0 as f64 / 1e6,
                    p.kind,
                    p.seq / self.mss,
                    p.ack,
                    p.prio,
                    p.rank,
                    p.aux2
                );
            }
            if p.kind == KIND_GRANT {
                if let Some(e) = d.grants.get_mut(&p.flow) {
                    if p.seq > e.1 && !e.3 {
                        let before = e.1.saturating_sub(e.2);
                        e.1 = p.seq;
                        let after = e.1.saturating_sub(e.2);
                        *d.outstanding.entry(e.0).or_default() += after - before;
                        let o = d.outstanding[&e.0];
                        d.max_outstanding = d.max_outstanding.max(o);
                    }
                }
            }
            if p.is_data() {
                d.sent[cat(p)] += 1;
            } else if p.kind == KIND_RESEND {
                let (a, b) = (p.seq / self.mss, (p.seq + p.ack).div_ceil(self.mss));
                for i in a..b {
                    d.asked.insert((p.flow, i), now);
                    d.resend_asked += 1;
                    d.per_flow.entry(p.flow).or_default().0 += 1;
                }
            }
        }
    }
}

impl Transport for Diagnoser {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.start_flow(ctx, flow);
        self.after(ctx.now, ctx.host, ctx.out);
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if Some(pkt.flow) == self.trace {
            eprintln!(
                "  {:.3} us host {} got kind {} seq {} ack {} prio {} rank {} aux2 {} ts {:.3} unsched {}",
                ctx.now.0 as f64 / 1e6,
                ctx.host,
                pkt.kind,
                pkt.seq / self.mss,
                pkt.ack,
                pkt.prio,
                pkt.rank,
                pkt.aux2,
                pkt.ts.0 as f64 / 1e6,
                pkt.flags.has(PacketFlags::UNSCHEDULED)
            );
        }
        if pkt.is_data() {
            let mut g = self.d.borrow_mut();
            let d = &mut *g;
            let c = cat(pkt);
            d.recv[c] += 1;
            let idx = pkt.seq / self.mss;
            let npk = pkt.ack.div_ceil(self.mss).max(1) as usize;
            let held = d.held.entry(pkt.flow).or_insert_with(|| vec![false; npk]);
            if held[idx as usize] {
                d.dup[c] += 1;
            }
            let fresh = !held[idx as usize];
            held[idx as usize] = true;
            let complete = held.iter().all(|&h| h);
            let unsched = (self.rtt_bytes.div_ceil(self.mss) * self.mss).min(pkt.ack);
            if let std::collections::hash_map::Entry::Vacant(v) = d.grants.entry(pkt.flow) {
                v.insert((ctx.host, unsched, 0, false));
                *d.outstanding.entry(ctx.host).or_default() += unsched;
            }
            let e = d.grants.get_mut(&pkt.flow).unwrap();
            if !e.3 {
                let before = e.1.saturating_sub(e.2);
                if fresh {
                    e.2 += pkt.payload as u64;
                }
                e.3 = complete;
                let after = if complete { 0 } else { e.1.saturating_sub(e.2) };
                let o = d.outstanding.entry(e.0).or_default();
                *o = *o + after - before;
                d.max_outstanding = d.max_outstanding.max(*o);
            }
            if let Some(&t) = d.asked.get(&(pkt.flow, idx)) {
                if pkt.ts < t && ctx.now > t {
                    d.resend_spurious += 1;
                    d.per_flow.entry(pkt.flow).or_default().1 += 1;
                    d.asked.remove(&(pkt.flow, idx));
                }
            }
        }
        self.inner.on_packet(ctx, pkt);
        self.after(ctx.now, ctx.host, ctx.out);
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.inner.on_timer(ctx, token);
        self.after(ctx.now, ctx.host, ctx.out);
    }
    fn on_nic_idle(&mut self, ctx: &mut Ctx) {
        self.inner.on_nic_idle(ctx);
        self.after(ctx.now, ctx.host, ctx.out);
    }
    fn wants_nic_idle(&self) -> bool {
        self.inner.wants_nic_idle()
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.inner.flow_stats(flow)
    }
}

/// The repro/aeolus_homa_* scenario (base.toml with the repro's settings) as JSON.
fn aeolus_repro_scenario(full: bool, cdf: &str, load: f64, aeolus: bool, extra: &str) -> dcnsim_core::Scenario {
    let net_extra = std::env::var("DIAG_NET_EXTRA").unwrap_or_default();
    aeolus_repro_scenario_net(full, cdf, load, aeolus, extra, &net_extra)
}

/// [`aeolus_repro_scenario`] with extra network JSON fields (e.g. `,"routing":"spray"`).
fn aeolus_repro_scenario_net(
    full: bool,
    cdf: &str,
    load: f64,
    aeolus: bool,
    extra: &str,
    net_extra: &str,
) -> dcnsim_core::Scenario {
    let (leaves, hpl, spines, flows) = if full { (8, 8, 8, 5000) } else { (4, 4, 4, 1500) };
    let buf = std::env::var("DIAG_BUFFER").unwrap_or_else(|_| "200KB".into());
    let network = if aeolus {
        format!(
            r#"{{"buffer":"{buf}","priorities":8,"queue_policy":"selective_drop","selective":{{"threshold":"6KB","per_port":true}}{net_extra}}}"#
        )
    } else {
        format!(r#"{{"buffer":"{buf}","priorities":8{net_extra}}}"#)
    };
    let doc = format!(
        r#"{{"seed":1,
            "topology":{{"kind":"leaf_spine","leaves":{leaves},"hosts_per_leaf":{hpl},"spines":{spines},
              "host_rate":"100Gbps","core_rate":"100Gbps","host_delay":"0.5us","core_delay":"0.5us"}},
            "network":{network},
            "transport":{{"protocol":"homa","overcommitment":6,"resend_timeout":"1ms","aeolus":{aeolus}{extra}}},
            "workload":{{"pattern":"poisson","cdf":"{cdf}","load":{load},"flows":{flows}}}}}"#
    );
    dcnsim_core::parse_scenario(&doc, dcnsim_core::Format::Json, std::path::Path::new("."))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn diagnose(sc: &dcnsim_core::Scenario) -> (RunOutput, Diag) {
    let inner = dcnsim_core::transport::homa::Homa::from_config(&sc.transport_cfg, &sc.net_info).unwrap();
    let d = Rc::new(RefCell::new(Diag { buffer: sc.queue.buffer.0, ..Diag::default() }));
    let mss = sc.net_info.mss();
    let rtt_bytes =
        dcnsim_core::transport::homa::Homa::from_config(&sc.transport_cfg, &sc.net_info).unwrap().params().rtt_bytes;
    let dp = d.clone();
    let tiers: Vec<&'static str> = sc.topology.tiers.iter().map(|t| t.name()).collect();
    let probe = move |x: &dcnsim_core::sim::DropInfo| {
        let mut g = dp.borrow_mut();
        let d = &mut *g;
        let typ = if x.pkt.is_data() { CATS[cat(x.pkt)] } else { "ctrl" };
        let at = format!("{}->{}", tiers[x.node as usize], tiers[x.peer as usize]);
        *d.drop_at.entry((at, x.cause, typ, x.pkt.prio)).or_default() += 1;
        if x.pkt.is_data() && x.cause == "buffer_overflow" && tiers[x.peer as usize] == "host" {
            for c in 0..8 {
                d.downlink_class_sum[c] += x.class_bytes[c];
            }
            d.downlink_total_sum += x.total_bytes;
            let o = d.outstanding.get(&x.peer).copied().unwrap_or(0);
            d.downlink_outstanding_sum += o;
            d.downlink_outstanding_max = d.downlink_outstanding_max.max(o);
            d.downlink_n += 1;
            let b = d.believed.get(&x.peer).copied().unwrap_or(0);
            d.downlink_believed_sum += b;
            d.downlink_believed_max = d.downlink_believed_max.max(b);
            if b > d.buffer {
                d.downlink_believed_over_buffer += 1;
            }
            let msgs = d.grants.values().filter(|e| e.0 == x.peer && !e.3 && e.1 > e.2).count();
            d.downlink_msgs_sum += msgs as u64;
            d.downlink_msgs_max = d.downlink_msgs_max.max(msgs as u64);
        }
    };
    let out = Sim::with_parts(
        sc,
        sc.flows(),
        Box::new(Diagnoser {
            trace: std::env::var("DIAG_TRACE").ok().and_then(|v| v.parse().ok()),
            inner,
            d: d.clone(),
            mss,
            rtt_bytes,
        }),
    )
    .with_drop_probe(Box::new(probe))
    .run(&mut |_| true);
    let mut diag = std::mem::take(&mut *d.borrow_mut());
    diag.flows_resent = diag.per_flow.len() as u64;
    diag.flows_all_spurious = diag.per_flow.values().filter(|(a, s)| a == s).count() as u64;
    (out, diag)
}

fn report(label: &str, out: &RunOutput, d: &Diag) {
    let (p99, med, avg, to) = small_flow_figures(out);
    let lost: Vec<String> =
        (0..5).map(|c| format!("{} {}/{} (dup {})", CATS[c], d.sent[c] - d.recv[c], d.sent[c], d.dup[c])).collect();
    let p = &out.ports;
    let (mut host_port, mut core_port) = (0u64, 0u64);
    for i in 0..p.id.len() {
        if p.peer_kind[i] == "host" {
            host_port += p.drops[i];
        } else if p.node_kind[i] != "host" {
            core_port += p.drops[i];
        }
    }
    eprintln!(
        "{label}: small p99 {p99:.1} med {med:.2} avg {avg:.2} us; flows with timeout {to} (timeouts {}); drops {:?} (to-host ports {host_port}, core ports {core_port}); lost/sent by type: {}; RESEND: packets asked {} of which in flight {}; flows with RESEND {} of which all-spurious {}; max granted-not-received at a receiver {} B (believed by the receiver {} B); wall {:.1}s",
        out.flows.timeouts.iter().sum::<u32>(),
        out.counters.drops,
        lost.join(", "),
        d.resend_asked,
        d.resend_spurious,
        d.flows_resent,
        d.flows_all_spurious,
        d.max_outstanding,
        d.max_believed,
        out.counters.wall_s
    );
    for ((at, cause, typ, prio), n) in &d.drop_at {
        eprintln!("  drops at {at:<12} {cause:<16} {typ:<12} class {prio}: {n}");
    }
    if d.downlink_n > 0 {
        let n = d.downlink_n;
        let cls: Vec<u64> = d.downlink_class_sum.iter().map(|b| b / n).collect();
        eprintln!(
            "  overflow drops of data at downlinks to hosts: {n}; port held on average {} B, per class {cls:?}; receiver's granted-not-received bytes at the drop: mean {} B, max {} B",
            d.downlink_total_sum / n,
            d.downlink_outstanding_sum / n,
            d.downlink_outstanding_max
        );
        eprintln!(
            "  the receiver's own count of granted-not-received bytes (messages it knows) at those drops: mean {} B, max {} B, above the {} B buffer at {} of {n}",
            d.downlink_believed_sum / n,
            d.downlink_believed_max,
            d.buffer,
            d.downlink_believed_over_buffer
        );
        eprintln!(
            "  incomplete messages to that receiver with bytes owed at those drops: mean {:.1}, max {}",
            d.downlink_msgs_sum as f64 / n as f64,
            d.downlink_msgs_max
        );
    }
}

/// Counts, for the Aeolus §V-C scenario, drops by cause and by packet type and RESENDs that
/// were spurious (the packet was still queued); with the engine's drop probe, drops by
/// switch level (egress tier -> peer tier), packet type and class, and for the overflow
/// drops at receivers' downlinks what the port held per class, the receiver's own count of
/// granted-not-received bytes and how many of its messages were owed bytes.
/// DIAG_BUFFER (200KB) and DIAG_NET_EXTRA (extra network JSON fields, e.g.
/// `,"routing":"spray"`) change the network. Env: DIAG_FULL=1 (64 hosts, 5000 flows;
/// default the reduced 16 hosts, 1500 flows), DIAG_CDF (websearch), DIAG_LOAD (0.4),
/// DIAG_EXTRA (extra transport JSON fields, e.g. `,"rtt_bytes":"20KB"`). Run with
/// `--ignored --nocapture`.
#[test]
#[ignore]
fn diagnose_aeolus_repro() {
    let full = std::env::var("DIAG_FULL").is_ok_and(|v| v == "1");
    let cdf = std::env::var("DIAG_CDF").unwrap_or_else(|_| "websearch".into());
    let load: f64 = std::env::var("DIAG_LOAD").ok().and_then(|v| v.parse().ok()).unwrap_or(0.4);
    let extra = std::env::var("DIAG_EXTRA").unwrap_or_default();
    for aeolus in [false, true] {
        let sc = aeolus_repro_scenario(full, &cdf, load, aeolus, &extra);
        let (out, d) = diagnose(&sc);
        report(&format!("{cdf} load {load} aeolus {aeolus}"), &out, &d);
        let f = &out.flows;
        let mut slow: Vec<usize> = (0..f.id.len()).filter(|&i| f.size[i] <= 100_000).collect();
        slow.sort_by_key(|&i| std::cmp::Reverse(f.fct_ps[i]));
        let to: Vec<u32> = (0..f.id.len()).filter(|&i| f.timeouts[i] > 0).map(|i| f.id[i]).take(10).collect();
        eprintln!("  flows with a timeout (first 10): {to:?}");
        for &i in slow.iter().take(8) {
            eprintln!(
                "  slow small flow {}: {} -> {} size {} fct {:.1} us (ideal {:.1}) timeouts {} retx {}",
                f.id[i],
                f.src[i],
                f.dst[i],
                f.size[i],
                f.fct_ps[i] as f64 / 1e6,
                f.ideal_fct_ps[i] as f64 / 1e6,
                f.timeouts[i],
                f.retx_bytes[i]
            );
        }
    }
}

/// What Aeolus does not protect against (the measured cause of the timeouts left in
/// repro/aeolus_homa_*): selective dropping keeps *unscheduled* packets from crowding out
/// scheduled ones, but Homa's own grants keep `rtt_bytes` in flight for each of the
/// `overcommitment` messages a receiver grants to, so k senders transmitting at once queue
/// about (k - 1) x `rtt_bytes` at the receiver's port (one BDP is on the wire). Seven 1 MB
/// messages to one receiver (10 Gbps, rtt_bytes ~ 8 KB, overcommitment 6, so about
/// 5 x 8 KB = 41 KB of scheduled backlog), Homa + Aeolus with per-port selective dropping:
/// - with a 24 KB port buffer (below that backlog) scheduled packets overflow and the
///   receiver needs its RESEND timeout;
/// - with a 64 KB buffer (above it) no scheduled packet is lost and no flow times out.
#[test]
fn aeolus_does_not_protect_scheduled_packets_from_homa_overcommitment() {
    let t = r#"{"protocol":"homa","aeolus":true,"overcommitment":6}"#;
    let net = |buf: &str| {
        format!(
            r#"{{"buffer":"{buf}","queue_policy":"selective_drop","selective":{{"threshold":"6KB","per_port":true}}}}"#
        )
    };
    let sc = scenario(STAR, t, &net("24KB"));
    let h = dcnsim_core::transport::homa::Homa::from_config(&sc.transport_cfg, &sc.net_info).unwrap();
    let backlog = 5 * h.params().rtt_bytes;
    assert!(backlog > 24_000 && backlog < 64_000, "rtt_bytes {}", h.params().rtt_bytes);
    let (small, cs) = incast_run(t, &net("24KB"), 7, 1_000_000);
    eprintln!("24 KB: {} {cs:?}", summary(&small));
    assert!(drops(&small, "buffer_overflow") > 0);
    assert!(cs.sched_sent > cs.sched_recv, "scheduled packets lost to overflow");
    assert!(small.flows.timeouts.iter().sum::<u32>() > 0, "repaired by RESEND");
    let (big, cb) = incast_run(t, &net("64KB"), 7, 1_000_000);
    eprintln!("64 KB: {} {cb:?}", summary(&big));
    assert_eq!(drops(&big, "buffer_overflow"), 0);
    assert_eq!(cb.sched_sent, cb.sched_recv);
    assert_eq!(big.flows.timeouts, vec![0; 7]);
}

/// The diagnostic counts of [`diagnose_aeolus_repro`] for scenario files, e.g. one run of a
/// reproduction as printed by `dcnsim validate ... --set ... --json`: DIAG_SCENARIO =
/// comma-separated paths (JSON; the printed `derived` block is ignored). Run with
/// `--ignored --nocapture`.
#[test]
#[ignore]
fn diagnose_scenario() {
    let paths = std::env::var("DIAG_SCENARIO").expect("DIAG_SCENARIO=path.json[,path.json...]");
    for path in paths.split(',') {
        let text = std::fs::read_to_string(path).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        if let Some(o) = v.as_object_mut() {
            o.remove("derived");
        }
        let sc = dcnsim_core::parse_scenario(&v.to_string(), dcnsim_core::Format::Json, std::path::Path::new("."))
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let (out, d) = diagnose(&sc);
        report(path, &out, &d);
        let f = &out.flows;
        let n = f.id.len();
        let unfinished = (0..n).filter(|&i| f.fct_ps[i] == u64::MAX).count();
        let slow: f64 = (0..n).map(|i| f.fct_ps[i] as f64 / f.ideal_fct_ps[i] as f64).sum::<f64>() / n as f64;
        let with_to = (0..n).filter(|&i| f.timeouts[i] > 0).count();
        eprintln!("  flows {n}, unfinished {unfinished}, avg slowdown {slow:.2}, flows with a timeout {with_to}");
        let mut pf: Vec<_> = d.per_flow.iter().filter(|e| e.1 .1 > 0).map(|(&f, &(a, s))| (f, a, s)).collect();
        pf.sort_unstable();
        eprintln!("  (flow, packets asked by RESEND, of which in flight), first 12: {:?}", &pf[..pf.len().min(12)]);
    }
}

/// The incast in which the RESEND rule was decided (repro/aeolus_fig20_incast, reduced: 32
/// hosts at 100 Gbps, 500 KB ports, 62 flows of 64 KB to one host, Homa+Aeolus,
/// overcommitment 6, 40 us timeout). Almost every unscheduled packet is dropped, so nearly
/// every message first waits for grants and then has its whole first RTT retransmitted in
/// the lowest scheduled class, behind the ~430 KB the receiver has granted. A timer counted
/// from the grant (or from the probe) fired about 40 us later, just before those
/// retransmissions arrived, and its unpaced RESEND copies overflowed the port; counting from
/// when the receiver's link could have delivered what it asked for, no RESEND names a
/// packet that is still on its way.
#[test]
fn incast_with_the_first_rtt_dropped_sends_no_spurious_resend() {
    let doc = r#"{"seed":1,
        "topology":{"kind":"leaf_spine","leaves":4,"hosts_per_leaf":8,"spines":2,
          "host_rate":"100Gbps","core_rate":"400Gbps","host_delay":"0.325us","core_delay":"0.45us"},
        "network":{"buffer":"500KB","priorities":8,"queue_policy":"selective_drop",
          "selective":{"threshold":"6KB","per_port":true}},
        "transport":{"protocol":"homa","overcommitment":6,"resend_timeout":"40us","aeolus":true},
        "workload":{"pattern":"incast","receiver":0,"senders":31,"size":"64KB","rounds":2,"round_interval":"1ns"}}"#;
    let sc = dcnsim_core::parse_scenario(doc, dcnsim_core::Format::Json, std::path::Path::new(".")).unwrap();
    let (out, d) = diagnose(&sc);
    check(&out);
    assert_eq!(out.flows.id.len(), 62);
    assert!(d.sent[0] - d.recv[0] > d.sent[0] * 9 / 10, "the first RTT is dropped: {:?} {:?}", d.sent, d.recv);
    assert_eq!(d.resend_spurious, 0, "RESENDs named {} packets still in flight", d.resend_spurious);
    assert_eq!(drops(&out, "buffer_overflow"), 0, "no scheduled packet overflows");
}

/// The engine's drop probe (`Sim::with_drop_probe`, used by the diagnostics above) sees every
/// drop the run counts, at the port that dropped it, with what that port held: a 7-to-1
/// incast of 1 MB messages (Homa + Aeolus, 24 KB ports, per-port 6 KB selective dropping)
/// drops only at the switch port towards the receiver (host 16); each selective drop is an
/// unscheduled packet that found more than 6 KB queued, each overflow drop a packet that
/// did not fit in the 24 KB left.
#[test]
fn drop_probe_reports_every_drop_with_its_port_and_queue() {
    let t = r#"{"protocol":"homa","aeolus":true,"overcommitment":6}"#;
    let net = r#"{"buffer":"24KB","queue_policy":"selective_drop","selective":{"threshold":"6KB","per_port":true}}"#;
    let sc = scenario(STAR, t, net);
    let flows = (0..7).map(|i| flow(i, 16, 1_000_000, Time::ZERO)).collect();
    type Seen = Vec<(u32, &'static str, bool, u64, u32)>;
    let seen: Rc<RefCell<Seen>> = Rc::default();
    let s2 = seen.clone();
    let probe = move |x: &dcnsim_core::sim::DropInfo| {
        assert_eq!(x.class_bytes.iter().sum::<u64>(), x.total_bytes);
        s2.borrow_mut().push((x.peer, x.cause, x.pkt.flags.has(PacketFlags::UNSCHEDULED), x.total_bytes, x.pkt.size));
    };
    let out = Sim::with_flows(&sc, flows).with_drop_probe(Box::new(probe)).run(&mut |_| true);
    check(&out);
    let seen = seen.borrow();
    for cause in ["selective_drop", "buffer_overflow"] {
        let n = seen.iter().filter(|e| e.1 == cause).count() as u64;
        assert_eq!(n, drops(&out, cause), "{cause}");
        assert!(n > 0, "{cause}");
    }
    for &(peer, cause, unsched, total, size) in seen.iter() {
        assert_eq!(peer, 16, "only the receiver's downlink drops");
        if cause == "selective_drop" {
            assert!(unsched && total > 6_000);
        } else {
            assert!(total + size as u64 > 24_000);
        }
    }
}

/// Where Homa + Aeolus still loses scheduled packets in the Aeolus §V-C setting (the gap in
/// repro/aeolus_homa_*): at the receivers' downlinks, because the receiver has granted more
/// than the port holds. Reduced repro scenario (16 hosts, web search, load 0.6, 200 KB
/// ports, `rtt_bytes` one BDP = 56 KB, overcommitment 6) with packet spraying over the
/// spines, as HomaSimulation's two-tier topology does, so that no core port is congested by
/// ECMP collisions. Measured (seed 1): 478 overflow drops, all at downlinks, unscheduled
/// classes holding 24 B of the ~199.5 KB queued there on average, and at 476 of them the
/// receiver's own count of granted-not-received bytes above 200 KB (mean 325 KB, 6.5
/// messages owed bytes).
#[test]
fn aeolus_scheduled_losses_are_downlink_overflow_from_grants_beyond_the_buffer() {
    let sc = aeolus_repro_scenario_net(false, "websearch", 0.6, true, "", r#","routing":"spray""#);
    let unsched = dcnsim_core::transport::homa::Homa::from_config(&sc.transport_cfg, &sc.net_info)
        .unwrap()
        .params()
        .unsched_prios as usize;
    let (out, d) = diagnose(&sc);
    check(&out);
    assert!(drops(&out, "selective_drop") > 0);
    let overflow = drops(&out, "buffer_overflow");
    let at_downlinks: u64 = d
        .drop_at
        .iter()
        .filter(|((at, cause, _, _), _)| *cause == "buffer_overflow" && at.ends_with("->host"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(at_downlinks, overflow, "no overflow in the sprayed core: {:?}", d.drop_at);
    let unsched_overflow: u64 = d
        .drop_at
        .iter()
        .filter(|((_, cause, typ, _), _)| *cause == "buffer_overflow" && *typ == "unsched")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(unsched_overflow, 0, "unscheduled packets are only dropped selectively");
    let n = d.downlink_n;
    assert!(n > 100 && d.sent[1] > d.recv[1], "scheduled packets are lost: {n}");
    let unsched_bytes: u64 = d.downlink_class_sum[..unsched].iter().sum();
    assert!(unsched_bytes * 100 < d.downlink_total_sum, "the full ports hold scheduled packets");
    assert!(
        d.downlink_believed_over_buffer * 100 >= n * 95,
        "granted beyond the buffer at {} of {n} drops",
        d.downlink_believed_over_buffer
    );
}

/// The validation suite's heaviest SRPT row: 16 senders -> 1 receiver on one 10 Gbps
/// switch, a 20 MB buffer (nothing is ever dropped), Poisson arrivals at load 0.8 of 1-10 MB
/// messages. With no loss every retransmission a RESEND causes is spurious: packets queued
/// in a lower class behind more urgent messages. With the 1 ms timer of the Aeolus and PPT
/// papers thousands of timeouts fire; with the default 5 ms (Homa's Linux implementation)
/// several times fewer do, and fewer bytes are sent twice.
#[test]
fn lossless_bottleneck_at_high_load_the_default_timer_sends_far_fewer_spurious_resends() {
    let run = |extra: &str| {
        let doc = format!(
            r#"{{"seed":1,"topology":{STAR},"network":{{"buffer":"20MB"}},
                "transport":{{"protocol":"homa"{extra}}},
                "workload":{{"pattern":"poisson","load":0.8,"receivers":[16],
                             "uniform":{{"min":"1MB","max":"10MB"}},"flows":400}}}}"#
        );
        let sc = dcnsim_core::parse_scenario(&doc, dcnsim_core::Format::Json, std::path::Path::new("."))
            .unwrap_or_else(|e| panic!("{e}"));
        let out = Sim::new(&sc).run(&mut |_| true);
        check(&out);
        let f = &out.flows;
        assert_eq!(out.counters.drops.iter().map(|d| d.1).sum::<u64>(), 0, "nothing is lost");
        (f.timeouts.iter().map(|&t| t as u64).sum::<u64>(), f.retx_bytes.iter().sum::<u64>())
    };
    let (t1, r1) = run(r#","resend_timeout":"1ms""#);
    let (t5, r5) = run("");
    eprintln!("1 ms: {t1} timeouts, {r1} B resent; 5 ms: {t5} timeouts, {r5} B resent");
    assert!(t1 > 1000, "the 1 ms timer fires on queued packets: {t1}");
    assert!(t5 * 4 < t1 && r5 * 4 < r1, "1 ms: {t1} / {r1} B; 5 ms: {t5} / {r5} B");
}
