//! Persistent connections across barrier incast rounds (`incast` with `barrier = true,
//! persistent = true`): a sender's block of round r + 1 is appended to the connection that
//! carried its block of round r, so the transport keeps its window, RTT estimate and receiver
//! state; the flows table still has one row per block, with the block's own size, start,
//! finish and share of the connection's counters.

use dcnsim_core::output::RunOutput;
use dcnsim_core::packet::{FlowId, Packet};
use dcnsim_core::scenario::Scenario;
use dcnsim_core::sim::Sim;
use dcnsim_core::transport::tcp::Tcp;
use dcnsim_core::transport::{Ctx, FlowStats, Transport};
use dcnsim_core::{parse_scenario, Format};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

const US: u64 = 1_000_000;

fn scenario(workload: &str, transport: &str) -> Scenario {
    let doc = format!(
        r#"{{"topology":{{"kind":"single_switch","hosts":4,"host_rate":"1Gbps","host_delay":"25us"}},
            "transport":{transport},"network":{{"buffer":"96KB"}},"output":{{"audit":true}},
            "workload":[{workload}]}}"#
    );
    parse_scenario(&doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

fn run(workload: &str, transport: &str) -> RunOutput {
    let sc = scenario(workload, transport);
    let out = Sim::new(&sc).run(&mut |_| true);
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    out
}

/// Per round: (start, last finish), ps.
fn rounds(out: &RunOutput) -> Vec<(u64, u64)> {
    let f = &out.flows;
    let n = f.round.iter().filter(|&&r| r != u32::MAX).map(|&r| r + 1).max().unwrap_or(0);
    (0..n)
        .map(|r| {
            let idx: Vec<usize> = (0..f.id.len()).filter(|&i| f.round[i] == r).collect();
            (f.round_start_ps[idx[0]], idx.iter().map(|&i| f.finish_ps[i]).max().unwrap())
        })
        .collect()
}

const TWO_SEGS: &str =
    r#""pattern":"incast","receiver":0,"senders":[1,2],"size":"2920B","rounds":4,"barrier":true,"gap":"100us""#;
const SLOW_START_1: &str = r#"{"protocol":"tcp","init_cwnd":1}"#;

/// Two senders, two 1460 B segments each, initial window 1 segment, no delayed ACKs; 1 Gbps
/// links of 25 us, 12 us per data packet and 0.512 us per 64 B ACK per hop.
///
/// A fresh round: both first segments reach the switch at 37 us and arrive at 74 and 86 us;
/// their ACKs reach the senders 51.024 us later (125.024, 137.024 us), each sender's window is
/// now 2 segments and it sends its second segment, which arrives 74 us later: 199.024 and
/// 211.024 us. Every round of fresh connections takes 211.024 us.
///
/// Persistent: round 1 is the same; its last ACKs reach the senders at 250.048 and 262.048 us
/// (before round 2 starts at 211.024 + 100 = 311.024 us) and leave each window at 2 segments
/// or more (see the next test). Round 2 sends both segments of each sender at once:
/// they reach the switch at 37 and 49 us, the port serialises four packets from 37 us and the
/// last arrives at 37 + 4 x 12 + 25 = 110 us. Rounds 2-4 take 110 us.
#[test]
fn persistent_rounds_match_hand_computed_two_sender_case() {
    let fresh = run(&format!("{{{TWO_SEGS}}}"), SLOW_START_1);
    let kept = run(&format!("{{{TWO_SEGS},\"persistent\":true}}"), SLOW_START_1);
    let (rf, rk) = (rounds(&fresh), rounds(&kept));
    assert_eq!(rf.len(), 4);
    assert_eq!(rk.len(), 4);
    for (k, &(s, e)) in rf.iter().enumerate() {
        assert_eq!(e - s, 211_024_000, "fresh round {k}");
    }
    assert_eq!(rk[0].1 - rk[0].0, 211_024_000, "the first persistent round starts fresh");
    for (k, &(s, e)) in rk.iter().enumerate().skip(1) {
        assert_eq!(e - s, 110 * US, "persistent round {k}");
        assert_eq!(s, rk[k - 1].1 + 100 * US, "round {k} starts a gap after round {}", k - 1);
    }
    assert_eq!(rk[1].0, 311_024_000);
}

/// Bytes are conserved per block: every row of the flows table has its own size, the bytes
/// sent for it (no loss here: exactly its size) and its own FCT; the run's payload counter is
/// the sum, and the audit (every completed block's bytes held by the receiver) passes.
#[test]
fn persistent_blocks_keep_their_own_rows_and_bytes_are_conserved() {
    let out = run(&format!("{{{TWO_SEGS},\"persistent\":true}}"), SLOW_START_1);
    let f = &out.flows;
    assert_eq!(f.id.len(), 8);
    assert!(f.size.iter().all(|&s| s == 2920), "{:?}", f.size);
    assert!(f.sent_bytes.iter().all(|&s| s == 2920), "{:?}", f.sent_bytes);
    assert!(f.finish_ps.iter().all(|&t| t != u64::MAX));
    assert_eq!(out.counters.data_payload_sent, 8 * 2920);
    for i in 0..8 {
        assert_eq!(f.fct_ps[i], f.finish_ps[i] - f.start_ps[i]);
        assert_eq!(f.start_ps[i], f.round_start_ps[i]);
    }
}

/// Records each sender's congestion window when a message is appended to its connection.
struct AppendWatch {
    tcp: Tcp,
    at_append: Rc<RefCell<Vec<(FlowId, u64)>>>,
}

impl Transport for AppendWatch {
    fn name(&self) -> &'static str {
        self.tcp.name()
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.tcp.start_flow(ctx, flow)
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.tcp.on_packet(ctx, pkt)
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.tcp.on_timer(ctx, token)
    }
    fn on_tx_complete(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.tcp.on_tx_complete(ctx, pkt)
    }
    fn wants_tx_complete(&self) -> bool {
        self.tcp.wants_tx_complete()
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.tcp.flow_stats(flow)
    }
    fn supports_append(&self) -> bool {
        self.tcp.supports_append()
    }
    fn keep_open(&mut self, flow: FlowId) {
        self.tcp.keep_open(flow)
    }
    fn append(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let cwnd = self.tcp.sender(flow).map(|s| s.cwnd()).expect("an open connection keeps its sender");
        self.at_append.borrow_mut().push((flow, cwnd));
        self.tcp.append(ctx, flow)
    }
}

/// Round 2 on a persistent connection starts at the window round 1 ended with, not the
/// initial window of 1 segment. With window validation on (the `[host]` default) a window
/// grows only while it limits the sender: round 1's first ACK grows 1 -> 2 segments (the
/// window held the sender back), its second does not (2 segments open, 1 left to send), so
/// round 2 starts at 2; in round 2 both segments fill the window and both ACKs grow it to 4;
/// in round 3 the window of 4 never limits 2 segments, so round 4 starts at 4 too. Only the
/// blocks of round 1 (flows 0 and 1) open connections; later blocks go on them.
#[test]
fn persistent_connection_starts_round_two_at_round_one_window() {
    let sc = scenario(&format!("{{{TWO_SEGS},\"persistent\":true}}"), SLOW_START_1);
    let tcp = Tcp::from_config(&sc.transport_cfg, &sc.net_info, false).expect("valid");
    let log = Rc::new(RefCell::new(Vec::new()));
    let t = AppendWatch { tcp, at_append: log.clone() };
    let out = Sim::with_plan(&sc, sc.flow_plan(), Box::new(t)).run(&mut |_| true);
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    let mss = 1460;
    let got = log.borrow().clone();
    assert_eq!(got, vec![(0, 2 * mss), (1, 2 * mss), (0, 4 * mss), (1, 4 * mss), (0, 4 * mss), (1, 4 * mss)]);
}

/// Every window-based transport the scenario accepts keeps rounds apart and completes every
/// block; the receiver-windowed ones (PTCP, IA-TCP, ICTCP, M21TCP) keep their receiver state.
#[test]
fn persistent_rounds_complete_for_every_window_transport() {
    for proto in ["tcp", "dctcp", "d2tcp", "l2dct", "ptcp", "ictcp", "iatcp", "m21tcp"] {
        let out = run(
            r#"{"pattern":"incast","receiver":3,"senders":2,"flows_per_sender":2,"rounds":5,"barrier":true,"persistent":true,"size":"20KB"}"#,
            &format!(r#"{{"protocol":"{proto}"}}"#),
        );
        let f = &out.flows;
        assert_eq!(f.id.len(), 20, "{proto}");
        assert!(f.finish_ps.iter().all(|&t| t != u64::MAX), "{proto}: every block completes");
        assert!(f.sent_bytes.iter().all(|&s| s >= 20_000), "{proto}: {:?}", f.sent_bytes);
        assert_eq!(f.sent_bytes.iter().sum::<u64>(), out.counters.data_payload_sent, "{proto}");
        let r = rounds(&out);
        for k in 1..r.len() {
            assert!(r[k].0 >= r[k - 1].1, "{proto}: round {k} overlaps");
        }
    }
}

/// `persistent` is checked field by field: only with barrier rounds, no deadline, and only for
/// a transport that can append to an open flow.
#[test]
fn persistent_errors_name_the_field() {
    let base = r#""pattern":"incast","receiver":0,"senders":[1,2],"rounds":2"#;
    for (w, proto) in [
        (format!("{{{base},\"persistent\":true}}"), "tcp"),
        (format!("{{{base},\"barrier\":true,\"persistent\":true,\"deadline\":\"1ms\"}}"), "tcp"),
        (format!("{{{base},\"barrier\":true,\"persistent\":true}}"), "homa"),
        (format!("{{{base},\"barrier\":true,\"persistent\":\"yes\"}}"), "tcp"),
    ] {
        let doc = format!(
            r#"{{"topology":{{"kind":"single_switch","hosts":4}},"transport":{{"protocol":"{proto}"}},"workload":[{w}]}}"#
        );
        let e = parse_scenario(&doc, Format::Json, Path::new(".")).err().unwrap_or_else(|| panic!("accepted {w}"));
        assert_eq!(e.field(), "workload[0].persistent", "{w}: {e}");
    }
}
