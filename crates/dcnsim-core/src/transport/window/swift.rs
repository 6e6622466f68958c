//! Swift: delay-based congestion control (Kumar et al., "Swift: Delay is Simple and Effective
//! for Congestion Control in the Datacenter", SIGCOMM 2020), as the `swift` protocol and as
//! the high-priority loop of `ppt_swift` (PPT, Suo et al., SIGCOMM 2024, §6.2 Fig. 14).
//!
//! # What is modelled
//! - **Window law (Swift §3, Algorithm 1)** in [`SwiftCc`], a pure state machine driven with
//!   explicit times. Two windows in packets (real numbers): the *fabric* window `fcwnd` reacts
//!   to the fabric delay, the *endpoint* window `ecwnd` to the endpoint delay; the sender uses
//!   `cwnd = min(fcwnd, ecwnd)`. On every ACK that newly acknowledges data, each window does
//!   additive increase when its delay is below its target (`w += ai x acked / w` for `w >= 1`,
//!   `w += ai x acked` below one packet, i.e. `ai` packets per RTT), and otherwise, if a
//!   decrease is allowed, multiplicative decrease
//!   `w *= max(1 - beta x (delay - target) / delay, 1 - max_mdf)`. A decrease is allowed
//!   when no decrease happened yet or at least one RTT (the latest RTT sample) has passed
//!   since the last one, so the window is cut at most once per RTT. Both windows are clamped
//!   to `[min_cwnd, max_cwnd]`.
//! - **Delays (Swift §3.1)**: every data packet carries its send time (`ts`), every ACK echoes
//!   it, so `RTT = now - ts`. The ACK also carries the receiver's hold time (from the arrival
//!   of the oldest data packet it covers to the ACK; non-zero only with delayed ACKs): this is
//!   Swift's *remote queuing* delay, the endpoint delay (the model has no NIC or host
//!   processing queues, so local NIC Rx delay is 0). Fabric delay = RTT - endpoint delay.
//! - **Target delay (Swift §3.5)**: fabric target =
//!   `base_target + hops x h + max(0, min(alpha / sqrt(fcwnd) + beta_fs, fs_range))` with
//!   `alpha = fs_range / (1/sqrt(fs_min_cwnd) - 1/sqrt(fs_max_cwnd))`,
//!   `beta_fs = -alpha / sqrt(fs_max_cwnd)`. The hop term (topology-based scaling) and the
//!   flow term (flow-based scaling) are each optional (`topology_scaling`, `flow_scaling`).
//!   The endpoint target is the constant `endpoint_target`.
//! - **Pacing below one packet (Swift §3.3)**: with `cwnd < 1` the window admits one packet
//!   and consecutive transmissions are spaced by `pacing_delay = RTT / cwnd` (a pacing timer,
//!   token kind [`crate::transport::tcp::TIMER_PACE`]); down to `min_cwnd` (0.001).
//! - **Loss recovery (Swift §3.4)**: the TCP machinery of [`crate::transport::tcp`]: SACK
//!   fast recovery (RFC 6675) and the RTO. Swift's reactions replace TCP's: entering fast
//!   recovery resets `retransmit_cnt` and, if a decrease is allowed, multiplies both windows
//!   by `1 - max_mdf`; an RTO increments `retransmit_cnt` and sets both windows to `min_cwnd`
//!   once it reaches `retx_reset_threshold`, otherwise multiplies them by `1 - max_mdf` if a
//!   decrease is allowed. There is no slow start and no ssthresh; ECN is not used.
//!
//! # Configuration (`protocol = "swift"`)
//! | field | default | meaning |
//! |---|---|---|
//! | `base_target` | 2 x the network's largest base RTT | base of the fabric target delay |
//! | `topology_scaling` | false | add `h` per switch on the path to the target |
//! | `h` | 1 us | per-hop scaling of the target (with `topology_scaling`) |
//! | `flow_scaling` | true | add the flow-based term to the target |
//! | `fs_range` | the network's largest base RTT | largest flow-based addition |
//! | `fs_min_cwnd`, `fs_max_cwnd` | 0.1, 100 | packets: windows where the flow term is `fs_range` and 0 |
//! | `ai` | 1.0 | additive increase, packets per RTT |
//! | `beta` | 0.8 | multiplicative decrease factor |
//! | `max_mdf` | 0.5 | largest multiplicative decrease per RTT |
//! | `min_cwnd`, `max_cwnd` | 0.001, 10000 | window bounds, packets (real numbers) |
//! | `endpoint_target` | 20 us | endpoint target delay |
//! | `retx_reset_threshold` | 5 | consecutive RTOs that reset the window to `min_cwnd` |
//!
//! plus the TCP fields `init_cwnd` (default 10 packets, the starting value of both windows),
//! `min_rto`, `max_rto`, `initial_rto`, `dupack_threshold`, `delayed_ack`,
//! `delayed_ack_timeout`, `prio` (same defaults as `tcp`). `sack` must stay true; `ecn`, `g`,
//! `init_alpha` and `ssthresh` are rejected (Swift does not use them).
//!
//! # Choices where the paper leaves room
//! - Parameter values: the paper publishes the algorithm but few deployment values. `beta`
//!   0.8, `max_mdf` 0.5, `fs_min_cwnd` 0.1, `fs_max_cwnd` 100 and `min_cwnd` 0.001 packets are
//!   the values commonly used with it (the last is stated in §3.3); `ai` = 1 packet per RTT
//!   (TCP's rate of increase); `retx_reset_threshold` = 5.
//! - The target defaults are scaled to the network rather than absolute: `base_target` =
//!   2 x the largest base RTT between two hosts (the base RTT of the longest path plus as much
//!   again of queueing) and `fs_range` = the largest base RTT, so the largest flow-scaled
//!   target stays within twice the base RTT of queueing. With `topology_scaling`, set
//!   `base_target` to the one-hop value. On the PPT 40/100G leaf-spine (8.9 us) this is
//!   17.8 us, i.e. about 44 KB of queueing at 40 Gbps, below DCTCP's K = 96 KB.
//! - Hop count: the number of switches on the reverse path of the ACK (links traversed minus
//!   one, from `Packet::hops`, which the network increments per link, like an IP TTL); ECMP
//!   paths between two hosts have the same length both ways.
//! - "rtt" in the once-per-RTT rule and in the pacing delay is the latest RTT sample (the flow's
//!   base RTT before the first one).
//! - The window law runs on ACKs that advance the cumulative ACK (acked = newly acknowledged
//!   bytes / MSS) and on duplicate ACKs that carry new SACK information (acked = newly
//!   SACKed bytes / MSS); a plain duplicate ACK carries no delay information about new data.
//! - The byte window the TCP machinery uses is `floor(cwnd x MSS)` (one MSS below one packet);
//!   during SACK recovery `pipe` is limited by it, and leaving recovery keeps Swift's window.
//! - The first fast retransmission is sent at once; later transmissions follow the pacing gate.

use crate::config::FieldError;
use crate::packet::{FlowId, Packet};
pub use crate::transport::swift_law::{SwiftCc, SwiftParams};
use crate::transport::tagging::{split_table, ExtConfigError};
use crate::transport::tcp::{Tcp, TcpConfig, TcpParams, TcpSender};
use crate::transport::{Ctx, FlowStats, NetInfo, Transport};
use crate::units::Time;
use serde::Deserialize;

/// Errors of the `swift` table.
pub type SwiftConfigError = ExtConfigError;

/// Resolved Swift parameters (windows in packets).

// ------------------------------------------------------------------------------------------
// Configuration
// ------------------------------------------------------------------------------------------

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
struct SwiftOwn {
    base_target: Option<Time>,
    topology_scaling: bool,
    h: Time,
    flow_scaling: bool,
    fs_range: Option<Time>,
    fs_min_cwnd: f64,
    fs_max_cwnd: f64,
    ai: f64,
    beta: f64,
    max_mdf: f64,
    min_cwnd: f64,
    max_cwnd: f64,
    endpoint_target: Time,
    retx_reset_threshold: u32,
}

impl Default for SwiftOwn {
    fn default() -> Self {
        SwiftOwn {
            base_target: None,
            topology_scaling: false,
            h: Time::us(1),
            flow_scaling: true,
            fs_range: None,
            fs_min_cwnd: 0.1,
            fs_max_cwnd: 100.0,
            ai: 1.0,
            beta: 0.8,
            max_mdf: 0.5,
            min_cwnd: 0.001,
            max_cwnd: 10_000.0,
            endpoint_target: Time::us(20),
            retx_reset_threshold: 5,
        }
    }
}

/// Swift's own `[transport]` fields.
pub const FIELDS: &[&str] = &[
    "base_target",
    "topology_scaling",
    "h",
    "flow_scaling",
    "fs_range",
    "fs_min_cwnd",
    "fs_max_cwnd",
    "ai",
    "beta",
    "max_mdf",
    "min_cwnd",
    "max_cwnd",
    "endpoint_target",
    "retx_reset_threshold",
];

/// TCP fields Swift does not use (rejected so that a setting never silently does nothing).
const TCP_FIELDS_REJECTED: &[(&str, &str)] = &[
    ("ecn", "Swift reacts to delay, not ECN; remove transport.ecn"),
    ("g", "g is DCTCP's alpha gain; Swift has no alpha, remove it"),
    ("init_alpha", "init_alpha is DCTCP's; Swift has no alpha, remove it"),
    ("ssthresh", "Swift has no slow start; remove transport.ssthresh (set init_cwnd instead)"),
];

/// Resolve Swift's own table `own` and the TCP table `tcp` (split by [`split_table`]) into
/// the parameters of the embedded TCP sender with Swift's window law.
pub fn resolve(own: &serde_json::Value, tcp: &serde_json::Value, net: &NetInfo) -> Result<TcpParams, ExtConfigError> {
    let o: SwiftOwn = crate::config::from_table(own, "transport")?;
    let bad = |field: &str, value: String, fix: &str| ExtConfigError::OutOfRange {
        field: field.into(),
        value,
        fix: fix.into(),
    };
    if let Some(t) = tcp.as_object() {
        for (k, fix) in TCP_FIELDS_REJECTED {
            if let Some(v) = t.get(*k) {
                return Err(bad(k, v.to_string(), fix));
            }
        }
        if t.get("sack") == Some(&serde_json::Value::Bool(false)) {
            return Err(bad("sack", "false".into(), "Swift's loss recovery is SACK-based; remove transport.sack"));
        }
    }
    let pos = |field: &str, v: f64, fix: &str| -> Result<(), ExtConfigError> {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(bad(field, v.to_string(), fix))
        }
    };
    pos("ai", o.ai, "must be > 0 packets per RTT (1 by default)")?;
    pos("beta", o.beta, "must be in (0, 1] (0.8 by default)")?;
    if o.beta > 1.0 {
        return Err(bad("beta", o.beta.to_string(), "must be in (0, 1] (0.8 by default)"));
    }
    if !(o.max_mdf > 0.0 && o.max_mdf < 1.0) {
        return Err(bad("max_mdf", o.max_mdf.to_string(), "must be in (0, 1) (0.5 by default)"));
    }
    pos("min_cwnd", o.min_cwnd, "must be > 0 packets (Swift: 0.001)")?;
    if !(o.max_cwnd.is_finite() && o.max_cwnd >= o.min_cwnd.max(1.0)) {
        return Err(bad("max_cwnd", o.max_cwnd.to_string(), "must be at least 1 packet and at least min_cwnd"));
    }
    pos("fs_min_cwnd", o.fs_min_cwnd, "must be > 0 packets (0.1 by default)")?;
    if !(o.fs_max_cwnd.is_finite() && o.fs_max_cwnd > o.fs_min_cwnd) {
        return Err(bad("fs_max_cwnd", o.fs_max_cwnd.to_string(), "must be above fs_min_cwnd (100 by default)"));
    }
    if o.retx_reset_threshold == 0 {
        return Err(bad("retx_reset_threshold", "0".into(), "must be at least 1 RTO (5 by default)"));
    }
    if o.endpoint_target == Time::ZERO {
        return Err(bad("endpoint_target", "\"0ps\"".into(), "must be > 0, e.g. \"20us\""));
    }
    if o.topology_scaling && o.h == Time::ZERO {
        return Err(bad("h", "\"0ps\"".into(), "must be > 0 with topology_scaling, e.g. \"1us\""));
    }
    let base_target = match o.base_target {
        Some(Time::ZERO) => {
            return Err(bad("base_target", "\"0ps\"".into(), "must be > 0; remove it for 2 x the largest base RTT"))
        }
        Some(t) => t,
        None => net.max_base_rtt * 2,
    };
    if base_target == Time::ZERO {
        return Err(ExtConfigError::Field(FieldError::invalid(
            "transport.base_target",
            "the network's base RTT is 0, so the default target is 0",
            "set transport.base_target explicitly",
        )));
    }
    let fs_range = o.fs_range.unwrap_or(net.max_base_rtt);
    let mut params = TcpConfig::parse(tcp)?.resolve(net, false)?;
    params.swift = Some(SwiftParams {
        base_target,
        topology_scaling: o.topology_scaling,
        h: o.h,
        flow_scaling: o.flow_scaling,
        fs_range,
        fs_min_cwnd: o.fs_min_cwnd,
        fs_max_cwnd: o.fs_max_cwnd,
        ai: o.ai,
        beta: o.beta,
        max_mdf: o.max_mdf,
        min_cwnd: o.min_cwnd,
        max_cwnd: o.max_cwnd,
        endpoint_target: o.endpoint_target,
        retx_reset_threshold: o.retx_reset_threshold,
    });
    Ok(params)
}

// ------------------------------------------------------------------------------------------
// The transport
// ------------------------------------------------------------------------------------------

/// Swift for every host of a run: the TCP sender/receiver with Swift's window law.
pub struct Swift {
    inner: Tcp,
}

impl Swift {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Swift, SwiftConfigError> {
        let (own, tcp) = split_table(cfg, "swift", FIELDS)?;
        let params = resolve(&own, &tcp, net)?;
        Ok(Swift { inner: Tcp::new(params) })
    }
    /// The embedded TCP machinery (sender/receiver inspection in tests).
    pub fn tcp(&self) -> &Tcp {
        &self.inner
    }
    /// The live sender of `flow`.
    pub fn sender(&self, flow: FlowId) -> Option<&TcpSender> {
        self.inner.sender(flow)
    }
}

impl Transport for Swift {
    fn name(&self) -> &'static str {
        "swift"
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.start_flow(ctx, flow)
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.inner.on_packet(ctx, pkt)
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.inner.on_timer(ctx, token)
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Ecn, NodeId};
    use crate::transport::tcp::{KIND_ACK, KIND_DATA, TIMER_DELACK, TIMER_PACE};
    use crate::transport::{untoken, Actions, FlowInfo};
    use crate::units::{Bytes, Rate};
    use serde_json::json;

    const MSS: u64 = 1460;

    fn net() -> NetInfo {
        NetInfo {
            mtu: Bytes(1500),
            header: Bytes(40),
            ctrl_size: Bytes(64),
            num_nodes: 4,
            max_base_rtt: Time::us(10),
            max_host_rate: Rate::gbps(10),
            priorities: 8,
            size_cdf: None,
            workload: None,
            host: crate::host::HostSpec { tsq: false, ..crate::host::HostSpec::default() },
        }
    }

    fn params(cfg: serde_json::Value) -> SwiftParams {
        let (own, tcp) = split_table(&cfg, "swift", FIELDS).unwrap();
        resolve(&own, &tcp, &net()).unwrap().swift.unwrap()
    }

    fn flow(size: u64) -> FlowInfo {
        FlowInfo {
            id: 0,
            src: 0,
            dst: 1,
            size: Bytes(size),
            start: Time::ZERO,
            base_rtt: Time::us(10),
            path_rate: Rate::gbps(10),
            host_rate: Rate::gbps(10),
            deadline: None,
            background: false,
        }
    }

    /// Drives one `Swift` transport by hand.
    struct H {
        t: Swift,
        flows: Vec<FlowInfo>,
    }

    impl H {
        fn new(cfg: serde_json::Value, size: u64) -> H {
            H { t: Swift::from_config(&cfg, &net()).expect("valid config"), flows: vec![flow(size)] }
        }
        fn call(&mut self, now: Time, host: NodeId, f: impl FnOnce(&mut Swift, &mut Ctx)) -> Actions {
            let mut out = Actions::new();
            let mut ctx = Ctx { now, host, flows: &self.flows, out: &mut out };
            f(&mut self.t, &mut ctx);
            out
        }
        fn start(&mut self, now: Time) -> Actions {
            self.call(now, 0, |t, c| t.start_flow(c, 0))
        }
        fn deliver(&mut self, now: Time, p: &Packet) -> Actions {
            let host = p.dst;
            self.call(now, host, |t, c| t.on_packet(c, p))
        }
        fn fire(&mut self, now: Time, host: NodeId, tok: u64) -> Actions {
            self.call(now, host, |t, c| t.on_timer(c, tok))
        }
        fn cc(&self) -> &SwiftCc {
            self.t.sender(0).unwrap().swift().unwrap()
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn md_cuts_by_the_formula_at_most_once_per_rtt() {
        let p = params(json!({"base_target": "20us", "flow_scaling": false}));
        let mut cc = SwiftCc::new(&p, 10.0, Time::us(10));
        // delay 30 us > target 20 us: cwnd x (1 - 0.8 x 10/30).
        let f = 1.0 - 0.8 * (10.0 / 30.0);
        cc.on_ack(&p, Time::us(100), Time::us(30), Time::ZERO, 0, 1.0);
        assert!(close(cc.cwnd(), 10.0 * f), "{}", cc.cwnd());
        assert_eq!(cc.decreases(), 1);
        // Within one RTT (30 us) of that cut: no further decrease, however high the delay.
        for t in [101, 110, 129] {
            cc.on_ack(&p, Time::us(t), Time::us(30), Time::ZERO, 0, 1.0);
        }
        assert!(close(cc.cwnd(), 10.0 * f));
        assert_eq!(cc.decreases(), 1);
        // One RTT after the cut: cut again by the same formula.
        cc.on_ack(&p, Time::us(130), Time::us(30), Time::ZERO, 0, 1.0);
        assert!(close(cc.cwnd(), 10.0 * f * f), "{}", cc.cwnd());
        assert_eq!(cc.decreases(), 2);
        // A large excess is bounded by max_mdf: 200 us vs 20 us would be x 0.28, max_mdf gives 0.5.
        let before = cc.cwnd();
        cc.on_ack(&p, Time::us(400), Time::us(200), Time::ZERO, 0, 1.0);
        assert!(close(cc.cwnd(), before * 0.5));
    }

    #[test]
    fn ai_adds_ai_packets_per_window_below_target() {
        let p = params(json!({"base_target": "20us", "flow_scaling": false, "ai": 2.0}));
        let mut cc = SwiftCc::new(&p, 10.0, Time::us(10));
        let mut want = 10.0;
        for i in 0..10 {
            cc.on_ack(&p, Time::us(10 + i), Time::us(12), Time::ZERO, 0, 1.0);
            want += 2.0 / want;
        }
        assert!(close(cc.cwnd(), want), "{} vs {want}", cc.cwnd());
        assert!(cc.cwnd() > 11.8 && cc.cwnd() < 12.0, "about ai = 2 packets per window");
        assert_eq!(cc.decreases(), 0);
        // Below one packet: + ai x acked.
        let mut cc = SwiftCc::new(&p, 0.25, Time::us(10));
        cc.on_ack(&p, Time::us(10), Time::us(12), Time::ZERO, 0, 0.5);
        assert!(close(cc.cwnd(), 1.25));
    }

    #[test]
    fn target_scales_with_flow_window_and_hops() {
        let p = params(json!({"base_target": "20us", "fs_range": "30us", "topology_scaling": true, "h": "2us"}));
        let us = |t: Time| t.as_us_f64();
        assert!((us(p.fabric_target(0.1, 0)) - 50.0).abs() < 1e-3, "fs_min_cwnd: base + fs_range");
        assert!((us(p.fabric_target(0.01, 0)) - 50.0).abs() < 1e-3, "capped at fs_range");
        assert!((us(p.fabric_target(100.0, 0)) - 20.0).abs() < 1e-3, "fs_max_cwnd: base");
        assert!((us(p.fabric_target(1000.0, 0)) - 20.0).abs() < 1e-3, "never below base");
        // At 1 packet: alpha (1 - 1/10), alpha = 30 / (1/sqrt(0.1) - 1/10).
        let alpha = 30.0 / (1.0 / 0.1f64.sqrt() - 0.1);
        assert!((us(p.fabric_target(1.0, 0)) - (20.0 + alpha * 0.9)).abs() < 1e-3);
        assert!((us(p.fabric_target(100.0, 3)) - 26.0).abs() < 1e-3, "3 hops x 2 us");
        // The hop count comes from the ACK: links traversed - 1.
        let mut h = H::new(json!({"base_target": "20us", "flow_scaling": false, "topology_scaling": true}), 100 * MSS);
        let data = h.start(Time::ZERO).sends;
        let mut ack = h.deliver(Time::us(5), &data[0]).sends[0];
        ack.hops = 4;
        h.deliver(Time::us(10), &ack);
        assert_eq!(h.cc().hops(), 3);
        assert_eq!(h.cc().target(), Time::us(23));
        // Defaults: 2 x and 1 x the largest base RTT (10 us).
        let d = params(json!({}));
        assert_eq!((d.base_target, d.fs_range), (Time::us(20), Time::us(10)));
    }

    #[test]
    fn rto_and_fast_recovery_reactions() {
        let p = params(json!({"retx_reset_threshold": 3}));
        let mut cc = SwiftCc::new(&p, 8.0, Time::us(10));
        cc.on_rto(&p, Time::us(100));
        assert!(close(cc.cwnd(), 4.0), "x (1 - max_mdf)");
        cc.on_rto(&p, Time::us(105));
        assert!(close(cc.cwnd(), 4.0), "no second decrease within an RTT");
        cc.on_rto(&p, Time::us(106));
        assert_eq!(cc.retransmit_cnt(), 3);
        assert!(close(cc.cwnd(), 0.001), "third consecutive RTO: min_cwnd");
        // An ACK resets the count; fast recovery also halves once per RTT.
        let mut cc = SwiftCc::new(&p, 8.0, Time::us(10));
        cc.on_rto(&p, Time::us(100));
        cc.on_ack(&p, Time::us(120), Time::us(5), Time::ZERO, 0, 1.0);
        assert_eq!(cc.retransmit_cnt(), 0);
        let w = cc.cwnd();
        cc.on_fast_recovery(&p, Time::us(200));
        assert!(close(cc.cwnd(), w * 0.5));
        cc.on_fast_recovery(&p, Time::us(201));
        assert!(close(cc.cwnd(), w * 0.5));
    }

    #[test]
    fn sender_paces_one_packet_per_rtt_over_cwnd_below_one() {
        // Target 1 us, every RTT 10 us: each RTT the window halves (max_mdf bound).
        let mut h = H::new(json!({"init_cwnd": 1, "base_target": "1us", "flow_scaling": false}), 100 * MSS);
        let a = h.start(Time::ZERO);
        assert_eq!(a.sends.len(), 1);
        let mut sends = vec![(Time::ZERO, a.sends[0])];
        let rtt = Time::us(10);
        // Each sent packet is delivered after 5 us and its ACK 5 us later; pacing timers fire
        // when due.
        let mut timers: Vec<(Time, u64)> = Vec::new();
        let mut i = 0;
        while sends.len() < 5 {
            let (t, d) = sends[i];
            i += 1;
            let acks = h.deliver(t + rtt / 2, &d).sends;
            assert_eq!(acks.len(), 1);
            let at = t + rtt;
            // Fire pacing timers due before this ACK.
            timers.sort();
            while let Some(&(tt, tok)) = timers.first().filter(|x| x.0 <= at) {
                timers.remove(0);
                for p in h.fire(tt, 0, tok).sends {
                    sends.push((tt, p));
                }
            }
            let out = h.deliver(at, &acks[0]);
            for p in out.sends {
                sends.push((at, p));
            }
            timers.extend(out.timers.iter().copied().filter(|&(_, tok)| untoken(tok).1 == TIMER_PACE));
            if i == sends.len() {
                timers.sort();
                let (tt, tok) = timers.remove(0);
                for p in h.fire(tt, 0, tok).sends {
                    sends.push((tt, p));
                }
            }
        }
        let times: Vec<u64> = sends.iter().map(|s| s.0 .0 / 1_000_000).collect();
        // cwnd 1 -> 0.5 at 10 us (sent at once: nothing paced yet), gap 10/0.5 = 20 us;
        // -> 0.25 at 20 us, next at 30 us, gap 40 us; -> 0.125 at 40 us, next at 70 us, gap 80.
        assert_eq!(times, vec![0, 10, 30, 70, 150], "send times (us)");
        assert!(sends.iter().all(|s| s.1.kind == KIND_DATA && s.1.ecn == Ecn::NotEct));
        assert!(h.cc().cwnd() < 0.1);
    }

    #[test]
    fn delayed_ack_hold_time_is_the_endpoint_delay() {
        let mut h = H::new(json!({"init_cwnd": 1, "delayed_ack": true}), 100 * MSS);
        let d = h.start(Time::ZERO).sends[0];
        let a = h.deliver(Time::us(5), &d);
        assert!(a.sends.is_empty(), "one segment: the ACK is delayed");
        let (at, tok) = a.timers[0];
        assert_eq!((at, untoken(tok).1), (Time::us(45), TIMER_DELACK));
        let ack = h.fire(at, 1, tok).sends[0];
        assert_eq!((ack.kind, ack.rank), (KIND_ACK, 40_000), "hold time 40 us in ns");
        h.deliver(Time::us(50), &ack);
        let cc = h.cc();
        assert_eq!((cc.fabric_delay(), cc.endpoint_delay()), (Some(Time::us(10)), Time::us(40)));
        // Endpoint delay 40 us > endpoint target 20 us: ecwnd x max(1 - 0.8 x 0.5, 0.5) = 0.6;
        // fabric delay 10 us below its target: fcwnd 1 + 1.
        assert!(close(cc.ecwnd(), 0.6) && close(cc.fcwnd(), 2.0), "{} {}", cc.ecwnd(), cc.fcwnd());
        assert!(close(cc.cwnd(), 0.6));
    }

    #[test]
    fn config_errors_name_the_field() {
        let e = |v| Swift::from_config(&v, &net()).err().unwrap().field();
        assert_eq!(e(json!({"ecn": true})), "transport.ecn");
        assert_eq!(e(json!({"g": 0.1})), "transport.g");
        assert_eq!(e(json!({"ssthresh": 10})), "transport.ssthresh");
        assert_eq!(e(json!({"sack": false})), "transport.sack");
        assert_eq!(e(json!({"max_mdf": 1.0})), "transport.max_mdf");
        assert_eq!(e(json!({"beta": 0})), "transport.beta");
        assert_eq!(e(json!({"fs_max_cwnd": 0.05})), "transport.fs_max_cwnd");
        assert_eq!(e(json!({"base_target": "0us"})), "transport.base_target");
        assert_eq!(e(json!({"base_target": "soon"})), "transport.base_target");
        assert_eq!(e(json!({"topology_scaling": true, "h": 0})), "transport.h");
        assert_eq!(e(json!({"retx_reset_threshold": 0})), "transport.retx_reset_threshold");
        assert_eq!(e(json!({"min_cwnd": -1.0})), "transport.min_cwnd");
        assert_eq!(e(json!({"bogus": 1})), "transport.bogus");
        assert_eq!(e(json!({"init_cwnd": 0})), "transport.init_cwnd");
        assert!(Swift::from_config(&json!({"min_rto": "2ms", "delayed_ack": true}), &net()).is_ok());
    }
}
