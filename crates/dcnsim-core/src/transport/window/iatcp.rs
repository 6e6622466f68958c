//! IA-TCP: rate-based incast avoidance by the receiver's window and ACK interval (Hwang, Yoo
//! and Choi, "IA-TCP: A Rate Based Incast-Avoidance Algorithm for TCP in Data Center
//! Networks", ICC 2012), **as reconstructed**: one of the baselines of PTCP (PTCP §II-B, §V).
//!
//! # Status: as reconstructed
//! No public implementation of IA-TCP exists, and PTCP describes it in one sentence (it
//! "controls the number of packets in the network pipe" and "adjusts the ACK interval to
//! control the sending rate of the workers"). This module builds the smallest mechanism that
//! fits that description and IA-TCP's stated aim, keeping the total in flight towards one
//! receiver at about one bandwidth-delay product. Every rule below is an assumption of this
//! reconstruction, not a transcription of the paper:
//!
//! - **Connections** `n`: the connections currently delivering data to the receiving host,
//!   counted from a connection's first data packet to its completion.
//! - **Window** (advertised in every ACK): `w = max(1, floor((C x RTT / MSS) / n))` segments,
//!   with `C` the receiver's link rate, `RTT` the connection's base RTT and `MSS` the payload
//!   of a full segment: the receiver's bandwidth-delay product shared equally.
//! - **ACK interval** `Delta = max(0, n x w x MTU / C - RTT)`, `MTU` the wire size of a full
//!   segment: each connection then sends `w` segments per `RTT + Delta`, and the `n`
//!   connections together `n w MTU / (RTT + Delta) = C`, the link rate, once the floor of one
//!   segment per connection would otherwise overload it. Every ACK is held `Delta` after the
//!   data packet that triggered it, in order ([`crate::transport::rcvctl::AckHold`]), so that
//!   a window's ACKs leave spaced as its data came and the window slides once per
//!   `RTT + Delta`.
//! - **Desynchronisation**: the first ACK of each connection is held a uniform random time in
//!   `[0, Delta]` instead (`random_first_delay`), so that connections started together do not
//!   send their next windows together. The draws come from the transport's own random stream
//!   (the scenario seed decides them).
//! - The ACK-delay log (`[output] ack_delays`) records with each ACK `n`, `w` (`w_segs`) and
//!   `Delta` (`delta_us`).
//! - `n`, `w` and `Delta` are evaluated when the ACK is made, with the `n` of that moment:
//!   a connection arriving or leaving changes the window and interval of every connection's
//!   next ACK.
//! - The sender is standard TCP (NewReno/SACK, no ECN) obeying the advertised window; its
//!   initial congestion window is 1 segment (`init_cwnd` defaults to 1 here): the window this
//!   receiver grants once about BDP / MSS connections share it, which is every incast of the
//!   PTCP experiments.
//!
//! # Configuration (`protocol = "iatcp"`)
//! IA-TCP's own fields: `ack_delay` (true: hold ACKs by `Delta`; false: the window alone),
//! `random_first_delay` (true). Every `tcp` field too (`init_cwnd` defaults to 1, `min_rto`,
//! `sack`, ...).

use crate::packet::{NodeId, Packet};
use crate::rng::Rng;
use crate::transport::rcvctl::{AckVerdict, RcvPolicy, RcvTcp};
use crate::transport::tagging::{split_table, ExtConfigError};
use crate::transport::tcp::{Tcp, TcpConfig, ACK_RWND_MAX_SEGS};
use crate::transport::{FlowInfo, NetInfo, ACK_STATE_MAX};
use crate::units::{Rate, Time};
use serde::Deserialize;

/// Errors of the `iatcp` table.
pub type IatcpConfigError = ExtConfigError;

/// IA-TCP's own fields in `[transport]`.
pub const FIELDS: &[&str] = &["ack_delay", "random_first_delay"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct IatcpOwn {
    ack_delay: bool,
    random_first_delay: bool,
}

impl Default for IatcpOwn {
    fn default() -> Self {
        IatcpOwn { ack_delay: true, random_first_delay: true }
    }
}

/// Resolved IA-TCP parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IatcpParams {
    /// Payload of a full segment, bytes.
    pub mss: u64,
    /// Wire size of a full segment, bytes.
    pub mtu: u64,
    /// Receiver link rate `C`.
    pub link_rate: Rate,
    /// Hold ACKs by `Delta`.
    pub ack_delay: bool,
    /// Hold the first ACK of a connection a uniform time in `[0, Delta]` instead.
    pub random_first_delay: bool,
}

impl IatcpParams {
    /// The window for `n` connections on a path of base RTT `rtt`, segments.
    pub fn window_segs(&self, n: u64, rtt: Time) -> u64 {
        let bdp = self.link_rate.bdp(rtt).0;
        (bdp / self.mss / n.max(1)).clamp(1, ACK_RWND_MAX_SEGS)
    }

    /// The ACK interval `Delta` for `n` connections with window `w` segments.
    pub fn delta(&self, n: u64, w: u64, rtt: Time) -> Time {
        let pipe = self.link_rate.tx_time(crate::units::Bytes(n * w * self.mtu));
        pipe.saturating_sub(rtt)
    }
}

/// IA-TCP's per-connection receiver state.
#[derive(Clone, Debug, PartialEq)]
pub struct IatcpFlow {
    /// ACKs made so far.
    pub acks: u64,
    /// Window of the latest ACK, segments.
    pub last_w: u64,
    /// Hold of the latest ACK.
    pub last_delay: Time,
    /// The connection is counted in its host's `n`.
    counted: bool,
}

/// The IA-TCP receiver law ([`RcvPolicy`]).
#[derive(Clone, Debug)]
pub struct IatcpPolicy {
    pub p: IatcpParams,
    /// Connections delivering data, per receiving host.
    pub active: Vec<u64>,
    rng: Rng,
}

impl IatcpPolicy {
    pub fn new(p: IatcpParams, seed: u64) -> IatcpPolicy {
        IatcpPolicy { p, active: Vec::new(), rng: Rng::new(seed) }
    }

    /// Connections delivering data to `host` now.
    pub fn n(&self, host: NodeId) -> u64 {
        self.active.get(host as usize).copied().unwrap_or(0)
    }
}

impl RcvPolicy for IatcpPolicy {
    type Flow = IatcpFlow;
    fn name(&self) -> &'static str {
        "iatcp"
    }
    fn new_flow(&mut self, _now: Time, flow: &FlowInfo) -> IatcpFlow {
        let h = flow.dst as usize;
        if self.active.len() <= h {
            self.active.resize(h + 1, 0);
        }
        self.active[h] += 1;
        IatcpFlow { acks: 0, last_w: 0, last_delay: Time::ZERO, counted: true }
    }
    fn on_data(&mut self, _now: Time, _host: NodeId, _flow: &FlowInfo, _st: &mut IatcpFlow, _pkt: &Packet) {}
    fn ack_verdict(&mut self, _now: Time, flow: &FlowInfo, st: &mut IatcpFlow) -> AckVerdict {
        let n = self.n(flow.dst).max(1);
        let w = self.p.window_segs(n, flow.base_rtt);
        let mut delay = if self.p.ack_delay { self.p.delta(n, w, flow.base_rtt) } else { Time::ZERO };
        if st.acks == 0 && self.p.random_first_delay && delay > Time::ZERO {
            delay = Time(self.rng.below(delay.0 + 1));
        }
        st.acks += 1;
        st.last_w = w;
        st.last_delay = delay;
        AckVerdict { rwnd: Some(w * self.p.mss), delay }
    }
    /// The ACK-delay log's columns: the connection count, the window and the ACK interval
    /// the verdict used (the hold equals `delta_us` except for a first ACK's random draw).
    fn state_names(&self) -> &'static [&'static str] {
        &["n", "w_segs", "delta_us"]
    }
    fn explain(&self, _now: Time, flow: &FlowInfo, st: &IatcpFlow) -> [f64; ACK_STATE_MAX] {
        let n = self.n(flow.dst).max(1);
        let delta = if self.p.ack_delay { self.p.delta(n, st.last_w, flow.base_rtt) } else { Time::ZERO };
        [n as f64, st.last_w as f64, delta.as_us_f64()]
    }
    /// A persistent connection's next message: the flow is active at its receiver again.
    fn on_reopen(&mut self, _now: Time, host: NodeId, _flow: &FlowInfo, st: &mut IatcpFlow) {
        if !st.counted {
            st.counted = true;
            if let Some(a) = self.active.get_mut(host as usize) {
                *a += 1;
            }
        }
    }
    fn on_complete(&mut self, _now: Time, host: NodeId, _flow: &FlowInfo, st: &mut IatcpFlow) {
        if st.counted {
            st.counted = false;
            if let Some(a) = self.active.get_mut(host as usize) {
                *a = a.saturating_sub(1);
            }
        }
    }
}

/// The `iatcp` transport.
pub type Iatcp = RcvTcp<IatcpPolicy>;

/// Build the `iatcp` transport from its `[transport]` table (without `protocol`); `seed`
/// seeds the first-ACK draws.
pub fn from_config(cfg: &serde_json::Value, net: &NetInfo, seed: u64) -> Result<Iatcp, IatcpConfigError> {
    let (own, mut tcp) = split_table(cfg, "iatcp", FIELDS)?;
    let o: IatcpOwn = crate::config::from_table(&own, "transport")?;
    if let Some(t) = tcp.as_object_mut() {
        t.entry("init_cwnd").or_insert(serde_json::json!(1));
    }
    let tp = TcpConfig::parse(&tcp)?.resolve(net, false)?;
    if tp.ecn {
        return Err(ExtConfigError::OutOfRange {
            field: "ecn".into(),
            value: "true".into(),
            fix: "IA-TCP's sender is plain TCP; remove transport.ecn".into(),
        });
    }
    let p = IatcpParams {
        mss: tp.mss,
        mtu: net.mtu.0,
        link_rate: net.max_host_rate,
        ack_delay: o.ack_delay,
        random_first_delay: o.random_first_delay,
    };
    Ok(RcvTcp::new(Tcp::new(tp), IatcpPolicy::new(p, seed)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tcp::ack_rwnd;
    use crate::transport::{Actions, Ctx, Transport};
    use crate::units::Bytes;
    use serde_json::json;

    const MSS: u64 = 1460;

    fn params() -> IatcpParams {
        IatcpParams { mss: MSS, mtu: 1500, link_rate: Rate::gbps(1), ack_delay: true, random_first_delay: false }
    }

    fn flow(id: u32, src: u32) -> FlowInfo {
        FlowInfo {
            id,
            src,
            dst: 0,
            size: Bytes(64_000),
            start: Time::ZERO,
            base_rtt: Time::us(100),
            path_rate: Rate::gbps(1),
            host_rate: Rate::gbps(1),
            deadline: None,
            background: false,
        }
    }

    /// 1 Gbps x 100 us = 12 500 B = 8.56 segments of 1460 B.
    #[test]
    fn window_is_the_bdp_shared_by_n_floored_at_one_segment() {
        let p = params();
        assert_eq!(p.window_segs(1, Time::us(100)), 8);
        assert_eq!(p.window_segs(2, Time::us(100)), 4);
        assert_eq!(p.window_segs(4, Time::us(100)), 2);
        assert_eq!(p.window_segs(8, Time::us(100)), 1);
        assert_eq!(p.window_segs(96, Time::us(100)), 1, "floor");
    }

    /// Delta = n w 1500 B x 8 / 1 Gbps - RTT: zero while the windows fit the pipe.
    #[test]
    fn ack_interval_fills_the_link_and_is_zero_below_it() {
        let p = params();
        assert_eq!(p.delta(1, 8, Time::us(100)), Time::ZERO, "8 x 12 us = 96 us < RTT");
        assert_eq!(p.delta(8, 1, Time::us(100)), Time::ZERO);
        // 96 x 12 us = 1152 us; minus 100 us.
        assert_eq!(p.delta(96, 1, Time::us(100)), Time::us(1052));
        assert_eq!(p.delta(16, 1, Time::us(100)), Time::us(92));
    }

    /// State: one connection open at the host; event: a second connection's first data
    /// packet. Both connections' next ACKs carry the halved window.
    #[test]
    fn second_connection_arrival_halves_every_window() {
        let mut pol = IatcpPolicy::new(params(), 1);
        let (a, b) = (flow(0, 1), flow(1, 2));
        let mut sa = pol.new_flow(Time::ZERO, &a);
        let v = pol.ack_verdict(Time::ZERO, &a, &mut sa);
        assert_eq!((v.rwnd, v.delay), (Some(8 * MSS), Time::ZERO));
        let mut sb = pol.new_flow(Time::us(1), &b);
        assert_eq!(pol.n(0), 2);
        assert_eq!(pol.ack_verdict(Time::us(2), &a, &mut sa).rwnd, Some(4 * MSS));
        assert_eq!(pol.ack_verdict(Time::us(2), &b, &mut sb).rwnd, Some(4 * MSS));
    }

    /// State: 16 connections; event: one completes. The remaining 15 get Delta for 15.
    #[test]
    fn connection_completion_shrinks_the_interval_of_the_others() {
        let mut pol = IatcpPolicy::new(params(), 1);
        let flows: Vec<FlowInfo> = (0..16).map(|i| flow(i, i + 1)).collect();
        let mut st: Vec<IatcpFlow> = flows.iter().map(|f| pol.new_flow(Time::ZERO, f)).collect();
        let v = pol.ack_verdict(Time::ZERO, &flows[1], &mut st[1]);
        assert_eq!((v.rwnd, v.delay), (Some(MSS), Time::us(92)));
        pol.on_complete(Time::us(5), 0, &flows[0], &mut st[0]);
        pol.on_complete(Time::us(6), 0, &flows[0], &mut st[0]);
        assert_eq!(pol.n(0), 15, "a completion counts once");
        let v = pol.ack_verdict(Time::us(7), &flows[1], &mut st[1]);
        assert_eq!(v.delay, Time::us(80), "15 x 12 us - 100 us");
    }

    /// State: a new connection among 96; event: its first ACK. With `random_first_delay` the
    /// hold is drawn in [0, Delta] (and differs between connections); later ACKs hold Delta.
    #[test]
    fn first_ack_random_hold_within_delta_then_delta() {
        let p = IatcpParams { random_first_delay: true, ..params() };
        let mut pol = IatcpPolicy::new(p, 7);
        let flows: Vec<FlowInfo> = (0..96).map(|i| flow(i, i + 1)).collect();
        let mut st: Vec<IatcpFlow> = flows.iter().map(|f| pol.new_flow(Time::ZERO, f)).collect();
        let firsts: Vec<Time> = (0..96).map(|i| pol.ack_verdict(Time::ZERO, &flows[i], &mut st[i]).delay).collect();
        assert!(firsts.iter().all(|d| *d <= Time::us(1052)));
        let distinct: std::collections::BTreeSet<u64> = firsts.iter().map(|d| d.0).collect();
        assert!(distinct.len() > 90, "draws spread the first ACKs");
        let mean = firsts.iter().map(|d| d.as_secs_f64()).sum::<f64>() / 96.0;
        assert!((mean - 526e-6).abs() < 120e-6, "uniform on [0, 1052 us]: mean {mean}");
        assert_eq!(pol.ack_verdict(Time::ZERO, &flows[0], &mut st[0]).delay, Time::us(1052));
    }

    #[test]
    fn ack_delay_off_leaves_the_window_alone() {
        let p = IatcpParams { ack_delay: false, ..params() };
        let mut pol = IatcpPolicy::new(p, 1);
        let flows: Vec<FlowInfo> = (0..32).map(|i| flow(i, i + 1)).collect();
        let mut st: Vec<IatcpFlow> = flows.iter().map(|f| pol.new_flow(Time::ZERO, f)).collect();
        let v = pol.ack_verdict(Time::ZERO, &flows[3], &mut st[3]);
        assert_eq!((v.rwnd, v.delay), (Some(MSS), Time::ZERO));
    }

    /// Through the transport: the receiver's ACK advertises the window and is held.
    #[test]
    fn transport_receiver_holds_ack_and_advertises_window() {
        let net = NetInfo::for_tests(1500, Time::us(100), Rate::gbps(1));
        let mut t = from_config(&json!({"random_first_delay": false}), &net, 3).unwrap();
        assert_eq!(t.name(), "iatcp");
        assert!(t.record_ack_delays(1000));
        assert_eq!(t.tcp().params().init_cwnd, MSS);
        let flows: Vec<FlowInfo> = (0..20).map(|i| flow(i, i + 1)).collect();
        let mut firsts = Vec::new();
        for f in 0..20u32 {
            let mut out = Actions::new();
            t.start_flow(&mut Ctx { now: Time::ZERO, host: f + 1, flows: &flows, out: &mut out }, f);
            assert_eq!(out.sends.len(), 1, "one segment");
            firsts.push(out.sends[0]);
        }
        let mut acks = Actions::new();
        for p in &firsts {
            acks.clear();
            t.on_packet(&mut Ctx { now: Time::us(60), host: 0, flows: &flows, out: &mut acks }, p);
        }
        // The last connection's ACK: n = 20, w = 1, Delta = 20 x 12 us - 100 us = 140 us.
        assert!(acks.sends.is_empty());
        assert_eq!(acks.timers.len(), 1);
        assert_eq!(acks.timers[0].0, Time::us(200));
        let tok = acks.timers[0].1;
        let mut rel = Actions::new();
        t.on_timer(&mut Ctx { now: Time::us(200), host: 0, flows: &flows, out: &mut rel }, tok);
        assert_eq!(rel.sends.len(), 1);
        assert_eq!(ack_rwnd(&rel.sends[0], MSS), Some(MSS));
        // The ACK-delay log: connection k's ACK saw n = k + 1 connections, w = floor(8 / n)
        // (at least 1) and Delta = max(0, n w 12 us - 100 us), and was held Delta.
        let log = t.take_ack_delays().unwrap();
        assert_eq!(log.state_names, ["n", "w_segs", "delta_us"]);
        assert_eq!(log.len(), 20);
        for k in 0..20u64 {
            let n = k + 1;
            let w = (8 / n).max(1);
            let delta_us = (n * w * 12).saturating_sub(100);
            let row = k as usize;
            assert_eq!(
                (log.state[0][row], log.state[1][row], log.state[2][row]),
                (n as f64, w as f64, delta_us as f64)
            );
            assert_eq!(log.delay_ps[row], delta_us * 1_000_000);
            assert_eq!(log.release_ps[row] - log.made_ps[row], log.delay_ps[row], "each flow's first ACK: no wait");
            assert_eq!(log.rwnd[row], w * MSS);
        }
    }

    #[test]
    fn config_errors_name_the_field() {
        let net = NetInfo::for_tests(1500, Time::us(100), Rate::gbps(1));
        for (cfg, field) in [
            (json!({"ack_delay": 1}), "transport.ack_delay"),
            (json!({"random_first_delay": "yes"}), "transport.random_first_delay"),
            (json!({"ecn": true}), "transport.ecn"),
            (json!({"ack_dealy": true}), "transport.ack_dealy"),
            (json!({"init_cwnd": 0}), "transport.init_cwnd"),
        ] {
            let e = from_config(&cfg, &net, 0).err().unwrap_or_else(|| panic!("{cfg} accepted"));
            assert_eq!(e.field(), field, "{cfg}: {e}");
        }
    }
}
