//! D2TCP: deadline-aware datacenter TCP (Vamanan, Hasan and Vijaykumar, "Deadline-Aware
//! Datacenter TCP (D2TCP)", SIGCOMM 2012), as the `d2tcp` protocol: DCTCP whose ECN back-off
//! depends on how close a flow is to missing its deadline.
//!
//! # What is modelled
//! - **Gamma correction (D2TCP §3.2, Eq. 2-3)**: on an ECN-Echo the window is cut to
//!   `W (1 - p/2)` with the penalty `p = alpha^d` instead of DCTCP's `p = alpha`. `alpha` is
//!   DCTCP's EWMA of the marked fraction (same gain `g`, same observation window, same "at most
//!   one cut per window" rule of the TCP sender, see `tcp.rs`). Since `alpha <= 1`, `d > 1`
//!   (a near-deadline flow) gives a smaller penalty, hence a smaller back-off, and `d < 1` (a
//!   far-deadline flow) a larger one; `d = 1` is exactly DCTCP.
//! - **Deadline imminence factor (D2TCP §3.2)**: `d = Tc / D`, where `D` is the time left
//!   until the deadline and `Tc` the time the flow still needs at its current rate, taken as
//!   three quarters of a window per RTT (the paper's approximation: a sawtooth between `W/2`
//!   and `W` averages `3W/4`): `Tc = B / (3/4 x W / RTT)` with `B` the bytes still to deliver.
//!   `d` is clamped to `[d_min, d_max]` = `[0.5, 2]` (D2TCP §3.2). A flow whose deadline has
//!   passed (`D <= 0`) uses `d_max`.
//! - **Flows without a deadline** use `d = 1`: the DCTCP cut, computed by the same expression
//!   as `dctcp` (so they behave byte-identically to DCTCP).
//! - Everything else (slow start, additive increase of one MSS per RTT, SACK recovery, RTO) is
//!   DCTCP's, i.e. the TCP sender's.
//!
//! # Choices where the paper leaves room
//! - `B` is the flow's unacknowledged remainder (size minus the cumulative ACK): what must
//!   still reach the receiver before the deadline. `W` is the congestion window at the cut and
//!   RTT the smoothed RTT (the path's base RTT before the first sample). `d` is computed at
//!   each cut, i.e. from the state at the moment the back-off happens.
//! - The deadline is the application's (the flow's `deadline` from the workload, relative to
//!   its arrival): the transport reads it from the flow table, as the paper's sockets receive
//!   it from the application. D2TCP does not stop a flow at its deadline; whether an
//!   application abandons a late flow is the runner's `run.abort_at_deadline`.
//! - `d_min` and `d_max` are configurable (default the paper's 0.5 and 2) for sensitivity
//!   studies; `1 <= d_max` and `0 < d_min <= 1` so that `d = 1` stays reachable.
//!
//! # Configuration (`protocol = "d2tcp"`)
//! Every `dctcp` field (same defaults: ECN on, `g` = 1/16, ...) plus `d_min` (0.5) and
//! `d_max` (2.0).

use crate::transport::cc::{CcState, CongestionControl, Dctcp, DctcpParams};
use crate::transport::tagging::{split_table, ExtConfigError};
use crate::transport::tcp::{Tcp, TcpConfig};
use crate::transport::{FlowInfo, NetInfo};
use crate::units::Time;
use serde::Deserialize;

/// Errors of the `d2tcp` table.
pub type D2tcpConfigError = ExtConfigError;

/// D2TCP's own fields in `[transport]`.
pub const FIELDS: &[&str] = &["d_min", "d_max"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct D2tcpOwn {
    d_min: f64,
    d_max: f64,
}

impl Default for D2tcpOwn {
    fn default() -> Self {
        D2tcpOwn { d_min: 0.5, d_max: 2.0 }
    }
}

/// Resolved D2TCP parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct D2tcpParams {
    pub dctcp: DctcpParams,
    /// Clamp of the deadline imminence factor `d`.
    pub d_min: f64,
    pub d_max: f64,
}

/// D2TCP's per-flow law: DCTCP's alpha, and the flow's absolute deadline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct D2tcp {
    pub dctcp: Dctcp,
    /// Absolute deadline (arrival + deadline), if the flow has one.
    pub deadline_at: Option<Time>,
    pub d_min: f64,
    pub d_max: f64,
    /// The `d` of the latest cut (1 before any, and for flows without a deadline).
    pub last_d: f64,
}

impl D2tcp {
    /// The deadline imminence factor `d` for the state `s` (1 without a deadline).
    pub fn imminence(&self, s: &CcState) -> f64 {
        let Some(at) = self.deadline_at else { return 1.0 };
        if s.now >= at {
            return self.d_max;
        }
        let left = (at - s.now).0 as f64;
        let remaining = s.size.saturating_sub(s.una) as f64;
        let rate = 0.75 * s.cwnd.max(1) as f64 / s.rtt().0.max(1) as f64; // bytes per ps
        let tc = remaining / rate;
        (tc / left).clamp(self.d_min, self.d_max)
    }
}

impl CongestionControl for D2tcp {
    type Params = D2tcpParams;
    fn new(flow: &FlowInfo, p: &D2tcpParams) -> D2tcp {
        D2tcp {
            dctcp: Dctcp::new(flow, &p.dctcp),
            deadline_at: flow.deadline.map(|d| flow.start + d),
            d_min: p.d_min,
            d_max: p.d_max,
            last_d: 1.0,
        }
    }
    #[inline]
    fn alpha(&self) -> f64 {
        self.dctcp.alpha
    }
    #[inline]
    fn on_window_end(&mut self, acked: u64, marked: u64) {
        self.dctcp.on_window_end(acked, marked)
    }
    fn ecn_window(&mut self, s: &CcState) -> u64 {
        if self.deadline_at.is_none() {
            return self.dctcp.ecn_window(s);
        }
        let d = self.imminence(s);
        self.last_d = d;
        Dctcp::cut(s.cwnd, self.dctcp.alpha.powf(d))
    }
}

/// Build the `d2tcp` transport from its `[transport]` table (without `protocol`).
pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Tcp<D2tcp>, D2tcpConfigError> {
    let (own, tcp) = split_table(cfg, "d2tcp", FIELDS)?;
    let o: D2tcpOwn = crate::config::from_table(&own, "transport")?;
    let bad = |field: &str, v: f64, fix: &str| ExtConfigError::OutOfRange {
        field: field.into(),
        value: v.to_string(),
        fix: fix.into(),
    };
    if !(o.d_min > 0.0 && o.d_min <= 1.0) {
        return Err(bad("d_min", o.d_min, "must be in (0, 1] (D2TCP: 0.5)"));
    }
    if !(o.d_max >= 1.0 && o.d_max.is_finite()) {
        return Err(bad("d_max", o.d_max, "must be a finite number >= 1 (D2TCP: 2)"));
    }
    let params = TcpConfig::parse(&tcp)?.resolve(net, true)?;
    let dctcp = DctcpParams { g: params.g, init_alpha: params.init_alpha };
    let law = D2tcpParams { dctcp, d_min: o.d_min, d_max: o.d_max };
    Ok(Tcp::with_law(params, law, "d2tcp"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Ecn, FlowId};
    use crate::transport::{Actions, Ctx, Transport};
    use crate::units::{Bytes, Rate};
    use serde_json::json;

    fn flow(id: FlowId, size: u64, deadline: Option<Time>) -> FlowInfo {
        FlowInfo {
            id,
            src: 0,
            dst: 1,
            size: Bytes(size),
            start: Time::ZERO,
            base_rtt: Time::us(10),
            path_rate: Rate::gbps(10),
            host_rate: Rate::gbps(10),
            deadline,
            background: false,
        }
    }

    fn params() -> D2tcpParams {
        D2tcpParams { dctcp: DctcpParams { g: 1.0 / 16.0, init_alpha: 0.5 }, d_min: 0.5, d_max: 2.0 }
    }

    /// cwnd 40 000 B, smoothed RTT 10 us: 3/4 W / RTT = 30 000 B per 10 us.
    fn state(now: Time, una: u64, size: u64) -> CcState {
        CcState {
            now,
            mss: 1000,
            cwnd: 40_000,
            ssthresh: 40_000,
            una,
            max: una + 40_000,
            size,
            srtt: Some(Time::us(10)),
            base_rtt: Time::us(10),
        }
    }

    #[test]
    fn imminence_one_gives_exactly_dctcps_cut() {
        // 30 000 B left need Tc = 10 us at 3/4 W per RTT; deadline 10 us away: d = 1.
        let mut law = D2tcp::new(&flow(0, 100_000, Some(Time::us(50))), &params());
        let s = state(Time::us(40), 70_000, 100_000);
        assert_eq!(law.imminence(&s), 1.0);
        let mut dctcp = Dctcp::new(&flow(0, 100_000, None), &params().dctcp);
        assert_eq!(law.ecn_window(&s), dctcp.ecn_window(&s));
        assert_eq!(law.ecn_window(&s), 30_000, "40 000 x (1 - 0.5/2)");
    }

    #[test]
    fn imminence_is_time_needed_over_time_left() {
        // 30 000 B need 10 us; 16 us left: d = 0.625; penalty 0.5^0.625.
        let mut law = D2tcp::new(&flow(0, 100_000, Some(Time::us(56))), &params());
        let s = state(Time::us(40), 70_000, 100_000);
        assert!((law.imminence(&s) - 0.625).abs() < 1e-12);
        let want = (40_000.0 * (1.0 - 0.5f64.powf(0.625) / 2.0)) as u64;
        assert_eq!(law.ecn_window(&s), want);
        assert_eq!(law.last_d, law.imminence(&s));
    }

    #[test]
    fn imminence_clamps_at_two_near_and_past_the_deadline() {
        let mut law = D2tcp::new(&flow(0, 100_000, Some(Time::us(41))), &params());
        // 10 us needed, 1 us left: Tc/D = 10, clamped to 2; penalty 0.25.
        let s = state(Time::us(40), 70_000, 100_000);
        assert_eq!(law.imminence(&s), 2.0);
        assert_eq!(law.ecn_window(&s), 35_000, "40 000 x (1 - 0.25/2)");
        // Past the deadline: d_max.
        assert_eq!(law.imminence(&state(Time::us(41), 70_000, 100_000)), 2.0);
        assert_eq!(law.imminence(&state(Time::us(500), 70_000, 100_000)), 2.0);
    }

    #[test]
    fn imminence_clamps_at_half_for_far_deadlines() {
        // 10 us needed, 1 ms left: 0.01, clamped to 0.5; penalty sqrt(0.5): backs off more than DCTCP.
        let mut law = D2tcp::new(&flow(0, 100_000, Some(Time::ms(1))), &params());
        let s = state(Time::ZERO, 70_000, 100_000);
        assert_eq!(law.imminence(&s), 0.5);
        let w = law.ecn_window(&s);
        assert_eq!(w, (40_000.0 * (1.0 - 0.5f64.sqrt() / 2.0)) as u64);
        assert!(w < 30_000);
    }

    #[test]
    fn no_deadline_is_dctcp_for_any_alpha() {
        let mut law = D2tcp::new(&flow(0, 100_000, None), &params());
        let mut dctcp = Dctcp::new(&flow(0, 100_000, None), &params().dctcp);
        for (acked, marked) in [(1000, 1000), (1000, 300), (7000, 1)] {
            law.on_window_end(acked, marked);
            dctcp.on_window_end(acked, marked);
            assert_eq!(law.alpha(), dctcp.alpha());
            for now in [Time::ZERO, Time::ms(100)] {
                let s = state(now, 0, 100_000);
                assert_eq!(law.imminence(&s), 1.0);
                assert_eq!(law.ecn_window(&s), dctcp.ecn_window(&s));
            }
        }
    }

    /// Through the TCP sender: the first ECE cuts a flow without a deadline to DCTCP's
    /// `W (1 - alpha/2)` and a late flow to `W (1 - alpha^2/2)`.
    #[test]
    fn sender_first_ece_cut_by_deadline() {
        let net = NetInfo::for_tests(1500, Time::us(10), Rate::gbps(10));
        let mut t = from_config(&json!({"init_alpha": 0.5}), &net).unwrap();
        assert_eq!(t.name(), "d2tcp");
        let flows = vec![flow(0, 1_000_000, None), flow(1, 1_000_000, Some(Time::us(1)))];
        let w0 = 10 * 1460;
        for f in 0..2u32 {
            let mut out = Actions::new();
            t.start_flow(&mut Ctx { now: Time::ZERO, host: 0, flows: &flows, out: &mut out }, f);
            let mut first = out.sends[0];
            first.ecn = Ecn::Ce;
            let mut acks = Actions::new();
            t.on_packet(&mut Ctx { now: Time::us(5), host: 1, flows: &flows, out: &mut acks }, &first);
            let mut more = Actions::new();
            t.on_packet(&mut Ctx { now: Time::us(10), host: 0, flows: &flows, out: &mut more }, &acks.sends[0]);
            let s = t.sender(f).unwrap();
            let want = if f == 0 { (w0 as f64 * 0.75) as u64 } else { (w0 as f64 * 0.875) as u64 };
            assert_eq!((s.cwnd(), s.ecn_cuts()), (want, 1), "flow {f}");
            assert_eq!(s.law().last_d, if f == 0 { 1.0 } else { 2.0 });
        }
    }

    #[test]
    fn config_errors_name_the_field() {
        let net = NetInfo::for_tests(1500, Time::us(10), Rate::gbps(10));
        for (cfg, field) in [
            (json!({"d_min": 0}), "transport.d_min"),
            (json!({"d_min": 1.5}), "transport.d_min"),
            (json!({"d_max": 0.9}), "transport.d_max"),
            (json!({"d_max": "x"}), "transport.d_max"),
            (json!({"g": 0}), "transport.g"),
            (json!({"ecn": false}), "transport.ecn"),
            (json!({"dmax": 2}), "transport.dmax"),
        ] {
            let e = from_config(&cfg, &net).err().unwrap_or_else(|| panic!("{cfg} accepted"));
            assert_eq!(e.field(), field, "{cfg}: {e}");
        }
        assert!(from_config(&json!({"d_min": 0.25, "d_max": 4, "g": 0.1}), &net).is_ok());
    }
}
