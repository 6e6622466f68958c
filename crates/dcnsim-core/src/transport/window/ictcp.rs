//! ICTCP: incast congestion control by the receive window (Wu, Feng, Guo and Zhang, "ICTCP:
//! Incast Congestion Control for TCP in Data Center Networks", CoNEXT 2010), as the `ictcp`
//! protocol: one of the baselines of PTCP (PTCP §II-B, §V).
//!
//! # What is modelled
//! The sender is standard TCP obeying the advertised window; the receiver runs ICTCP on the
//! building blocks of `rcvctl.rs` ([`RcvTcp`]), per receiving host and per connection:
//! - **Available bandwidth** (ICTCP §4.1): `BW_A = max(0, alpha x C - BW_T)`, with `C` the
//!   receiver's link rate, `alpha` = 0.9 and `BW_T` the incoming traffic measured on the
//!   host ([`RateMeter`]) over the first subslot of the current slot.
//! - **Two-subslot rhythm** (ICTCP §4.1): time at each host is cut into slots of two
//!   subslots of length `T`, the traffic-weighted mean RTT of its connections (each
//!   connection's RTT weighted by the bytes it brought in the previous slot). The first
//!   subslot only measures `BW_T`; in the second, `BW_A` is a quota: a window increase of
//!   one MSS on a connection with RTT `r` uses `MSS / r` of it, and no increase happens
//!   without enough quota. Windows never grow in the first subslot.
//! - **Per-connection control** (ICTCP §4.2-4.3), once per RTT of the connection: the
//!   measured throughput `b_s` (bytes received over the last RTT), smoothed as
//!   `b_m = max(b_s, beta b_m + (1 - beta) b_s)`; the expected throughput
//!   `b_e = max(b_m, rwnd / RTT)`; the ratio `d_b = (b_e - b_m) / b_e`. If `d_b <= gamma1`
//!   or `d_b <= MSS / rwnd`, the window grows by one MSS (second subslot, quota, and at
//!   least two RTTs since this connection's last increase); if `d_b > gamma2` for three RTTs
//!   in a row, it shrinks by one MSS; otherwise it stays. It never goes below `min_rwnd`
//!   (2 MSS).
//!
//! # Choices where the sources leave room
//! - The connection's RTT at the receiver is its path's base RTT plus the one-way queuing
//!   delay of its latest data packet ([`OneWayDelay`] on the data timestamps): a receiver
//!   cannot time its own ACKs' round trip without timestamps echoed the other way, and the
//!   forward queue is where incast builds up. The one-way base starts at half the base RTT
//!   (as PTCP's `base_from_rtt`), so a queue that exists from the first packets on counts.
//! - `C` is the fastest host link of the network (every host of the incast topologies has
//!   the same link); `BW_T` counts the wire bytes of the data packets arriving at the host.
//! - The increase step is one MSS, and `beta` = 0.2 (the values of a public ICTCP
//!   implementation's parameters); `gamma1` = 0.1 and `gamma2` = 0.5 (PTCP Table 1 and the
//!   ICTCP paper). The initial window is `min_rwnd` = 2 MSS and the sender's initial
//!   congestion window 2 MSS (PTCP Table 1: `init_cwnd` defaults to 2 here).
//! - The slot rhythm advances lazily, on data arrivals at the host (between arrivals
//!   nothing could change anyway): when more than one subslot has passed with no arrival, a
//!   new slot starts at the arrival.
//! - Before a host has an RTT estimate (its first slot), `T` is the base RTT of the first
//!   flow it receives.
//!
//! # Configuration (`protocol = "ictcp"`)
//! ICTCP's own fields: `alpha` (0.9), `beta` (0.2), `gamma1` (0.1), `gamma2` (0.5),
//! `min_rwnd` (packets, 2), `decrease_rtts` (3). Every `tcp` field too (`init_cwnd` defaults
//! to 2, `min_rto`, ...).

use crate::packet::{NodeId, Packet};
use crate::transport::rcvctl::{AckVerdict, OneWayDelay, RateMeter, RcvPolicy, RcvTcp};
use crate::transport::tagging::{split_table, ExtConfigError};
use crate::transport::tcp::{Tcp, TcpConfig, ACK_RWND_MAX_SEGS};
use crate::transport::{FlowInfo, NetInfo};
use crate::units::{Rate, Time};
use serde::Deserialize;

/// Errors of the `ictcp` table.
pub type IctcpConfigError = ExtConfigError;

/// ICTCP's own fields in `[transport]`.
pub const FIELDS: &[&str] = &["alpha", "beta", "gamma1", "gamma2", "min_rwnd", "decrease_rtts"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct IctcpOwn {
    alpha: f64,
    beta: f64,
    gamma1: f64,
    gamma2: f64,
    min_rwnd: u64,
    decrease_rtts: u32,
}

impl Default for IctcpOwn {
    fn default() -> Self {
        IctcpOwn { alpha: 0.9, beta: 0.2, gamma1: 0.1, gamma2: 0.5, min_rwnd: 2, decrease_rtts: 3 }
    }
}

/// Resolved ICTCP parameters (names as in the paper).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IctcpParams {
    pub alpha: f64,
    pub beta: f64,
    pub gamma1: f64,
    pub gamma2: f64,
    /// Minimum (and initial) receive window, bytes.
    pub min_rwnd: u64,
    /// RTTs in a row with `d_b > gamma2` before a decrease.
    pub decrease_rtts: u32,
    pub mss: u64,
    /// Receiver link rate `C`.
    pub link_rate: Rate,
}

/// Which subslot a host is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subslot {
    /// Measuring `BW_T`; no increase.
    First,
    /// Increases allowed within the quota.
    Second,
}

/// ICTCP's per-host state.
#[derive(Clone, Debug, PartialEq)]
pub struct IctcpHost {
    pub meter: RateMeter,
    pub subslot: Subslot,
    /// End of the current subslot.
    pub sub_end: Time,
    /// Subslot length `T`.
    pub t: Time,
    /// Remaining available-bandwidth quota of the second subslot, bits per second.
    pub quota_bps: f64,
    /// Measured `BW_T` of the last first subslot, bits per second.
    pub bw_t: f64,
    /// Traffic weights of the current slot: sum of bytes, and of bytes x RTT (ps).
    w_bytes: f64,
    w_rtt: f64,
    started: bool,
}

impl Default for IctcpHost {
    fn default() -> Self {
        IctcpHost {
            meter: RateMeter::default(),
            subslot: Subslot::First,
            sub_end: Time::ZERO,
            t: Time::ZERO,
            quota_bps: 0.0,
            bw_t: 0.0,
            w_bytes: 0.0,
            w_rtt: 0.0,
            started: false,
        }
    }
}

impl IctcpHost {
    /// Advance the slot rhythm to `now` (a data packet arrives). `first_rtt`: `T` before the
    /// host has weights.
    pub fn advance(&mut self, now: Time, p: &IctcpParams, first_rtt: Time) {
        if !self.started {
            self.started = true;
            self.t = first_rtt.max(Time::ns(1));
            self.start_slot(now);
            return;
        }
        if now < self.sub_end {
            return;
        }
        if self.subslot == Subslot::First && now < self.sub_end + self.t {
            // Second subslot: BW_A = max(0, alpha C - BW_T) is the quota.
            self.bw_t = self.meter.take_bps(self.sub_end);
            self.quota_bps = (p.alpha * p.link_rate.0 as f64 - self.bw_t).max(0.0);
            self.subslot = Subslot::Second;
            self.sub_end += self.t;
            return;
        }
        // A new slot: T from the traffic-weighted RTTs of the slot that ended.
        if self.w_bytes > 0.0 {
            self.t = Time((self.w_rtt / self.w_bytes) as u64).max(Time::ns(1));
        }
        let start = if self.subslot == Subslot::Second && now < self.sub_end + self.t { self.sub_end } else { now };
        self.start_slot(start);
    }

    fn start_slot(&mut self, start: Time) {
        self.subslot = Subslot::First;
        self.sub_end = start + self.t;
        self.meter = RateMeter { since: start, bytes: 0 };
        self.quota_bps = 0.0;
        self.w_bytes = 0.0;
        self.w_rtt = 0.0;
    }
}

/// ICTCP's per-connection receiver state.
#[derive(Clone, Debug, PartialEq)]
pub struct IctcpFlow {
    /// Receive window, bytes.
    pub rwnd: u64,
    pub owd: OneWayDelay,
    /// Current RTT estimate.
    pub rtt: Time,
    /// Start of the current per-RTT measurement and the bytes received since.
    pub meas_start: Time,
    pub meas_bytes: u64,
    /// Smoothed measured throughput `b_m`, bytes per second.
    pub b_m: f64,
    /// `d_b` of the latest evaluation.
    pub d_b: f64,
    /// RTTs in a row with `d_b > gamma2`.
    pub over: u32,
    /// Time of the last increase (None: never).
    pub last_increase: Option<Time>,
    pub increases: u32,
    pub decreases: u32,
}

/// The ICTCP receiver law ([`RcvPolicy`]).
#[derive(Clone, Debug)]
pub struct IctcpPolicy {
    pub p: IctcpParams,
    pub hosts: Vec<IctcpHost>,
}

impl IctcpPolicy {
    pub fn new(p: IctcpParams) -> IctcpPolicy {
        IctcpPolicy { p, hosts: Vec::new() }
    }

    /// The per-RTT evaluation of one connection at `now` (ICTCP §4.2-4.3), given its host.
    pub fn evaluate(p: &IctcpParams, host: &mut IctcpHost, st: &mut IctcpFlow, now: Time) {
        let dt = now.saturating_sub(st.meas_start);
        let rtt_s = st.rtt.as_secs_f64().max(1e-12);
        let b_s = st.meas_bytes as f64 / dt.as_secs_f64().max(1e-12);
        st.b_m = b_s.max(p.beta * st.b_m + (1.0 - p.beta) * b_s);
        let b_e = st.b_m.max(st.rwnd as f64 / rtt_s);
        st.d_b = if b_e > 0.0 { (b_e - st.b_m) / b_e } else { 0.0 };
        st.meas_start = now;
        st.meas_bytes = 0;
        let mss = p.mss as f64;
        if st.d_b <= p.gamma1 || st.d_b <= mss / st.rwnd as f64 {
            st.over = 0;
            let cost = mss * 8.0 / rtt_s;
            let waited = st.last_increase.is_none_or(|t| now.saturating_sub(t) >= st.rtt * 2);
            if host.subslot == Subslot::Second && waited && host.quota_bps >= cost {
                host.quota_bps -= cost;
                st.rwnd = (st.rwnd + p.mss).min(ACK_RWND_MAX_SEGS * p.mss);
                st.last_increase = Some(now);
                st.increases += 1;
            }
        } else if st.d_b > p.gamma2 {
            st.over += 1;
            if st.over >= p.decrease_rtts {
                st.over = 0;
                if st.rwnd > p.min_rwnd {
                    st.rwnd = (st.rwnd - p.mss).max(p.min_rwnd);
                    st.decreases += 1;
                }
            }
        } else {
            st.over = 0;
        }
    }
}

impl RcvPolicy for IctcpPolicy {
    type Flow = IctcpFlow;
    fn name(&self) -> &'static str {
        "ictcp"
    }
    fn new_flow(&mut self, now: Time, flow: &FlowInfo) -> IctcpFlow {
        IctcpFlow {
            rwnd: self.p.min_rwnd,
            owd: OneWayDelay::with_base(flow.base_rtt / 2),
            rtt: flow.base_rtt,
            meas_start: now,
            meas_bytes: 0,
            b_m: 0.0,
            d_b: 0.0,
            over: 0,
            last_increase: None,
            increases: 0,
            decreases: 0,
        }
    }
    fn on_data(&mut self, now: Time, host: NodeId, flow: &FlowInfo, st: &mut IctcpFlow, pkt: &Packet) {
        let h = host as usize;
        if self.hosts.len() <= h {
            self.hosts.resize_with(h + 1, IctcpHost::default);
        }
        let hs = &mut self.hosts[h];
        hs.advance(now, &self.p, flow.base_rtt);
        hs.meter.add(pkt.size as u64);
        if let Some(q) = st.owd.sample(now, pkt.ts) {
            st.rtt = flow.base_rtt + q;
        }
        hs.w_bytes += pkt.payload as f64;
        hs.w_rtt += pkt.payload as f64 * st.rtt.0 as f64;
        st.meas_bytes += pkt.payload as u64;
        if now.saturating_sub(st.meas_start) >= st.rtt {
            Self::evaluate(&self.p, hs, st, now);
        }
    }
    fn ack_verdict(&mut self, _now: Time, _flow: &FlowInfo, st: &mut IctcpFlow) -> AckVerdict {
        AckVerdict { rwnd: Some(st.rwnd), delay: Time::ZERO }
    }
}

/// The `ictcp` transport.
pub type Ictcp = RcvTcp<IctcpPolicy>;

/// Build the `ictcp` transport from its `[transport]` table (without `protocol`).
pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Ictcp, IctcpConfigError> {
    let (own, mut tcp) = split_table(cfg, "ictcp", FIELDS)?;
    let o: IctcpOwn = crate::config::from_table(&own, "transport")?;
    let bad = |field: &str, v: String, fix: &str| ExtConfigError::OutOfRange {
        field: field.into(),
        value: v,
        fix: fix.into(),
    };
    let unit = |x: f64| x > 0.0 && x <= 1.0;
    if !unit(o.alpha) {
        return Err(bad("alpha", o.alpha.to_string(), "must be in (0, 1] (ICTCP: 0.9)"));
    }
    if !(0.0..1.0).contains(&o.beta) {
        return Err(bad("beta", o.beta.to_string(), "must be in [0, 1) (0.2)"));
    }
    if !unit(o.gamma1) {
        return Err(bad("gamma1", o.gamma1.to_string(), "must be in (0, 1] (ICTCP: 0.1)"));
    }
    if !(o.gamma2 >= o.gamma1 && o.gamma2 < 1.0) {
        return Err(bad("gamma2", o.gamma2.to_string(), "must be in [gamma1, 1) (ICTCP: 0.5)"));
    }
    if o.min_rwnd == 0 || o.min_rwnd > ACK_RWND_MAX_SEGS {
        return Err(bad("min_rwnd", o.min_rwnd.to_string(), "must be 1 to 2047 packets (ICTCP: 2)"));
    }
    if o.decrease_rtts == 0 {
        return Err(bad("decrease_rtts", "0".into(), "must be at least 1 (ICTCP: 3)"));
    }
    if let Some(t) = tcp.as_object_mut() {
        t.entry("init_cwnd").or_insert(serde_json::json!(2));
    }
    let tp = TcpConfig::parse(&tcp)?.resolve(net, false)?;
    if tp.ecn {
        return Err(bad("ecn", "true".into(), "ICTCP's sender is plain TCP; remove transport.ecn"));
    }
    let p = IctcpParams {
        alpha: o.alpha,
        beta: o.beta,
        gamma1: o.gamma1,
        gamma2: o.gamma2,
        min_rwnd: o.min_rwnd * tp.mss,
        decrease_rtts: o.decrease_rtts,
        mss: tp.mss,
        link_rate: net.max_host_rate,
    };
    Ok(RcvTcp::new(Tcp::new(tp), IctcpPolicy::new(p)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tcp::ack_rwnd;
    use crate::transport::{Actions, Ctx, Transport};
    use crate::units::Bytes;
    use serde_json::json;

    const MSS: u64 = 1460;

    fn params() -> IctcpParams {
        IctcpParams {
            alpha: 0.9,
            beta: 0.2,
            gamma1: 0.1,
            gamma2: 0.5,
            min_rwnd: 2 * MSS,
            decrease_rtts: 3,
            mss: MSS,
            link_rate: Rate::gbps(1),
        }
    }

    fn flow() -> FlowInfo {
        FlowInfo {
            id: 0,
            src: 0,
            dst: 1,
            size: Bytes(10_000_000),
            start: Time::ZERO,
            base_rtt: Time::us(100),
            path_rate: Rate::gbps(1),
            host_rate: Rate::gbps(1),
            deadline: None,
            background: false,
        }
    }

    fn fresh(rwnd: u64) -> IctcpFlow {
        let mut st = IctcpPolicy::new(params()).new_flow(Time::ZERO, &flow());
        st.rwnd = rwnd;
        st
    }

    fn host_in(sub: Subslot, quota_bps: f64) -> IctcpHost {
        IctcpHost { subslot: sub, quota_bps, started: true, t: Time::us(100), ..IctcpHost::default() }
    }

    /// A connection receiving exactly rwnd per RTT: d_b = 0, so it may grow, but never in the
    /// first subslot.
    #[test]
    fn first_subslot_full_throughput_never_increases() {
        let p = params();
        let mut h = host_in(Subslot::First, 1e9);
        let mut st = fresh(4 * MSS);
        st.meas_bytes = 4 * MSS;
        IctcpPolicy::evaluate(&p, &mut h, &mut st, Time::us(100));
        assert_eq!(st.d_b, 0.0);
        assert_eq!((st.rwnd, st.increases, h.quota_bps), (4 * MSS, 0, 1e9));
    }

    #[test]
    fn second_subslot_full_throughput_increases_by_one_mss_and_uses_quota() {
        let p = params();
        let mut h = host_in(Subslot::Second, 1e9);
        let mut st = fresh(4 * MSS);
        st.meas_bytes = 4 * MSS;
        IctcpPolicy::evaluate(&p, &mut h, &mut st, Time::us(100));
        assert_eq!(st.rwnd, 5 * MSS);
        // Cost: 1460 B x 8 / 100 us = 116.8 Mbps.
        assert!((h.quota_bps - (1e9 - 116.8e6)).abs() < 1.0);
        // Within two RTTs of the increase: no second one.
        st.meas_bytes = 5 * MSS;
        IctcpPolicy::evaluate(&p, &mut h, &mut st, Time::us(200));
        assert_eq!(st.rwnd, 5 * MSS, "last increase only 1 RTT ago");
        st.meas_bytes = 5 * MSS;
        IctcpPolicy::evaluate(&p, &mut h, &mut st, Time::us(300));
        assert_eq!(st.rwnd, 6 * MSS, "two RTTs later");
    }

    #[test]
    fn second_subslot_without_quota_keeps_window() {
        let p = params();
        let mut h = host_in(Subslot::Second, 100e6); // below one MSS per 100 us
        let mut st = fresh(4 * MSS);
        st.meas_bytes = 4 * MSS;
        IctcpPolicy::evaluate(&p, &mut h, &mut st, Time::us(100));
        assert_eq!((st.rwnd, h.quota_bps), (4 * MSS, 100e6));
    }

    /// Measured far below expected (d_b > gamma2) three RTTs in a row: one MSS less, never
    /// below 2 MSS.
    #[test]
    fn low_throughput_three_rtts_decreases_to_the_minimum() {
        let p = params();
        let mut h = host_in(Subslot::Second, 1e9);
        let mut st = fresh(4 * MSS);
        // 1 MSS per RTT against an expected 4: b_m = 1 MSS/RTT, d_b = 0.75.
        for (k, want) in [(1, 4), (2, 4), (3, 3)] {
            st.meas_bytes = MSS;
            IctcpPolicy::evaluate(&p, &mut h, &mut st, Time::us(100 * k));
            assert!((st.d_b - if k == 1 { 0.75 } else { st.d_b }).abs() < 1e-9);
            assert_eq!(st.rwnd, want * MSS, "after {k} RTTs");
        }
        for k in 4..20 {
            st.meas_bytes = 0;
            IctcpPolicy::evaluate(&p, &mut h, &mut st, Time::us(100 * k));
        }
        assert_eq!(st.rwnd, 2 * MSS, "floor: min_rwnd");
    }

    #[test]
    fn middle_ratio_resets_the_decrease_count() {
        let p = params();
        let mut h = host_in(Subslot::First, 0.0);
        let mut st = fresh(10 * MSS);
        st.meas_bytes = MSS; // d_b = 0.9
        IctcpPolicy::evaluate(&p, &mut h, &mut st, Time::us(100));
        st.meas_bytes = MSS;
        IctcpPolicy::evaluate(&p, &mut h, &mut st, Time::us(200));
        assert_eq!(st.over, 2);
        // b_m = max(b_s, 0.2 b_m + 0.8 b_s); 7 MSS this RTT: d_b = 0.3, between the gammas.
        st.meas_bytes = 7 * MSS;
        IctcpPolicy::evaluate(&p, &mut h, &mut st, Time::us(300));
        assert!((st.d_b - 0.3).abs() < 1e-9, "{}", st.d_b);
        assert_eq!((st.over, st.rwnd), (0, 10 * MSS));
    }

    /// The slot rhythm: BW_T measured over the first subslot gives the quota of the second.
    #[test]
    fn slot_rhythm_first_subslot_measures_second_gets_quota() {
        let p = params();
        let mut h = IctcpHost::default();
        h.advance(Time::ZERO, &p, Time::us(100));
        assert_eq!((h.subslot, h.sub_end), (Subslot::First, Time::us(100)));
        // 5000 B in the first 100 us = 400 Mbps; quota = 900 - 400 = 500 Mbps.
        h.meter.add(5000);
        h.advance(Time::us(50), &p, Time::us(100));
        assert_eq!(h.subslot, Subslot::First);
        h.advance(Time::us(120), &p, Time::us(100));
        assert_eq!((h.subslot, h.sub_end), (Subslot::Second, Time::us(200)));
        assert!((h.bw_t - 400e6).abs() < 1.0);
        assert!((h.quota_bps - 500e6).abs() < 1.0);
        // Next slot; then an idle gap of several subslots starts a slot at the arrival.
        h.advance(Time::us(210), &p, Time::us(100));
        assert_eq!((h.subslot, h.sub_end, h.quota_bps), (Subslot::First, Time::us(300), 0.0));
        h.advance(Time::ms(5), &p, Time::us(100));
        assert_eq!((h.subslot, h.sub_end), (Subslot::First, Time::ms(5) + Time::us(100)));
    }

    #[test]
    fn ack_advertises_the_connection_window() {
        let net = NetInfo::for_tests(1500, Time::us(100), Rate::gbps(1));
        let mut t = from_config(&json!({}), &net).unwrap();
        assert_eq!(t.name(), "ictcp");
        assert_eq!(t.tcp().params().init_cwnd, 2 * MSS);
        let flows = vec![flow()];
        let mut out = Actions::new();
        t.start_flow(&mut Ctx { now: Time::ZERO, host: 0, flows: &flows, out: &mut out }, 0);
        assert_eq!(out.sends.len(), 2);
        let mut acks = Actions::new();
        t.on_packet(&mut Ctx { now: Time::us(60), host: 1, flows: &flows, out: &mut acks }, &out.sends[0]);
        assert_eq!(ack_rwnd(&acks.sends[0], MSS), Some(2 * MSS));
        assert_eq!(acks.timers.len(), 0, "ICTCP never holds ACKs");
    }

    #[test]
    fn config_errors_name_the_field() {
        let net = NetInfo::for_tests(1500, Time::us(100), Rate::gbps(1));
        for (cfg, field) in [
            (json!({"alpha": 0}), "transport.alpha"),
            (json!({"beta": 1.0}), "transport.beta"),
            (json!({"gamma1": 0}), "transport.gamma1"),
            (json!({"gamma2": 0.05}), "transport.gamma2"),
            (json!({"min_rwnd": 0}), "transport.min_rwnd"),
            (json!({"decrease_rtts": 0}), "transport.decrease_rtts"),
            (json!({"ecn": true}), "transport.ecn"),
            (json!({"gama1": 0.1}), "transport.gama1"),
        ] {
            let e = from_config(&cfg, &net).err().unwrap_or_else(|| panic!("{cfg} accepted"));
            assert_eq!(e.field(), field, "{cfg}: {e}");
        }
    }
}
