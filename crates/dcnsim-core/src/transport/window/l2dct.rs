//! L2DCT: low-latency datacenter transport (Munir, Qazi, Uzmi, Mushtaq, Ismail, Iqbal and
//! Khan, "Minimizing Flow Completion Times in Data Centers", INFOCOM 2013), as the `l2dct`
//! protocol: DCTCP whose back-off and additive increase are weighted by how much a flow has
//! already sent, approximating least-attained-service scheduling without knowing flow sizes.
//!
//! # What is modelled
//! - **Weight (L2DCT §IV-B)**: each flow has a weight `w_c` that depends only on the bytes it
//!   has sent so far, `s`: `w_c = w_max` while `s <= s_min`, `w_c = w_min` once `s >= s_max`,
//!   and in between it falls linearly from `w_max` to `w_min`. Young (probably short) flows
//!   have large weights, flows that have sent a lot small ones.
//! - **Decrease (L2DCT §IV-C)**: on an ECN-Echo the window is cut to `W (1 - b/2)` with the
//!   penalty `b = alpha^{w_c}`, `alpha` DCTCP's EWMA of the marked fraction (same gain, same
//!   observation window, at most one cut per window, as in `tcp.rs`). With `alpha <= 1`, a
//!   large weight gives a small penalty (short flows back off less), a small weight a large one.
//! - **Increase (L2DCT §IV-C)**: in congestion avoidance the window grows by
//!   `k = w_c / w_max` segments per RTT instead of one (the TCP sender's credit per ACKed byte
//!   is scaled by `k`), so long flows give way to new ones. Slow start is unchanged.
//! - Loss reactions and the RTO are DCTCP's (the TCP sender's).
//!
//! # Choices where the paper leaves room
//! - Constants: `w_min` = 0.125, `w_max` = 2.5, `s_min` = 200 KiB (204,800 B), `s_max` = 1 MiB
//!   (1,048,576 B), the values the authors' simulation scripts use (the paper gives the shape
//!   of the weight function, not every constant).
//! - "Bytes sent" is the highest byte offset sent (distinct payload, retransmissions not
//!   counted twice): the service the flow has attained. It is read at each decision, so the
//!   weight of the cut and of the increase is the weight at that ACK.
//! - The increase keeps TCP's exact byte accounting: `k x MSS x acked` of credit per ACK,
//!   rounded down to whole bytes, one MSS added per `cwnd` of credit.
//!
//! # Configuration (`protocol = "l2dct"`)
//! Every `dctcp` field (same defaults: ECN on, `g` = 1/16, ...) plus `w_min` (0.125), `w_max`
//! (2.5), `s_min` ("200KiB" = 204800 B) and `s_max` ("1MiB" = 1048576 B); sizes as bytes or
//! size strings.

use crate::transport::cc::{CcState, CongestionControl, Dctcp, DctcpParams};
use crate::transport::tagging::{split_table, ExtConfigError};
use crate::transport::tcp::{Tcp, TcpConfig};
use crate::transport::{FlowInfo, NetInfo};
use crate::units::Bytes;
use serde::Deserialize;

/// Errors of the `l2dct` table.
pub type L2dctConfigError = ExtConfigError;

/// L2DCT's own fields in `[transport]`.
pub const FIELDS: &[&str] = &["w_min", "w_max", "s_min", "s_max"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct L2dctOwn {
    w_min: f64,
    w_max: f64,
    s_min: Bytes,
    s_max: Bytes,
}

impl Default for L2dctOwn {
    fn default() -> Self {
        L2dctOwn { w_min: 0.125, w_max: 2.5, s_min: Bytes(204_800), s_max: Bytes(1_048_576) }
    }
}

/// Resolved L2DCT parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct L2dctParams {
    pub dctcp: DctcpParams,
    pub w_min: f64,
    pub w_max: f64,
    /// Bytes sent up to which the weight is `w_max`.
    pub s_min: u64,
    /// Bytes sent from which the weight is `w_min`.
    pub s_max: u64,
}

impl L2dctParams {
    /// The weight `w_c` of a flow that has sent `s` bytes.
    pub fn weight(&self, s: u64) -> f64 {
        if s <= self.s_min {
            self.w_max
        } else if s >= self.s_max {
            self.w_min
        } else {
            let x = (s - self.s_min) as f64 / (self.s_max - self.s_min) as f64;
            self.w_max - (self.w_max - self.w_min) * x
        }
    }
}

/// L2DCT's per-flow law: DCTCP's alpha and the weight parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct L2dct {
    pub dctcp: Dctcp,
    pub p: L2dctParams,
}

impl L2dct {
    /// The current weight `w_c` (from the bytes sent in `s`).
    pub fn weight(&self, s: &CcState) -> f64 {
        self.p.weight(s.max)
    }
}

impl CongestionControl for L2dct {
    type Params = L2dctParams;
    fn new(flow: &FlowInfo, p: &L2dctParams) -> L2dct {
        L2dct { dctcp: Dctcp::new(flow, &p.dctcp), p: *p }
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
        Dctcp::cut(s.cwnd, self.dctcp.alpha.powf(self.weight(s)))
    }
    fn ca_credit(&mut self, s: &CcState, acked: u64) -> u64 {
        let k = self.weight(s) / self.p.w_max;
        ((acked * s.mss) as f64 * k) as u64
    }
}

/// Build the `l2dct` transport from its `[transport]` table (without `protocol`).
pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Tcp<L2dct>, L2dctConfigError> {
    let (own, tcp) = split_table(cfg, "l2dct", FIELDS)?;
    let o: L2dctOwn = crate::config::from_table(&own, "transport")?;
    let bad = |field: &str, v: String, fix: &str| ExtConfigError::OutOfRange {
        field: field.into(),
        value: v,
        fix: fix.into(),
    };
    if !(o.w_min > 0.0 && o.w_min.is_finite()) {
        return Err(bad("w_min", o.w_min.to_string(), "must be > 0 (L2DCT: 0.125)"));
    }
    if !(o.w_max >= o.w_min && o.w_max.is_finite()) {
        return Err(bad("w_max", o.w_max.to_string(), "must be finite and >= w_min (L2DCT: 2.5)"));
    }
    if o.s_max <= o.s_min {
        return Err(bad("s_max", format!("\"{}\"", o.s_max), "must be above s_min (L2DCT: 1MiB and 200KiB)"));
    }
    let params = TcpConfig::parse(&tcp)?.resolve(net, true)?;
    let dctcp = DctcpParams { g: params.g, init_alpha: params.init_alpha };
    let law = L2dctParams { dctcp, w_min: o.w_min, w_max: o.w_max, s_min: o.s_min.0, s_max: o.s_max.0 };
    Ok(Tcp::with_law(params, law, "l2dct"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::FlowId;
    use crate::transport::{Actions, Ctx, Transport};
    use crate::units::{Rate, Time};
    use serde_json::json;

    fn flow(id: FlowId, size: u64) -> FlowInfo {
        FlowInfo {
            id,
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

    fn params() -> L2dctParams {
        L2dctParams {
            dctcp: DctcpParams { g: 1.0 / 16.0, init_alpha: 0.5 },
            w_min: 0.125,
            w_max: 2.5,
            s_min: 204_800,
            s_max: 1_048_576,
        }
    }

    fn state(sent: u64) -> CcState {
        CcState {
            now: Time::ZERO,
            mss: 1000,
            cwnd: 40_000,
            ssthresh: 40_000,
            una: sent.saturating_sub(40_000),
            max: sent,
            size: 10_000_000,
            srtt: None,
            base_rtt: Time::us(10),
        }
    }

    #[test]
    fn weight_is_flat_then_falls_linearly_then_flat() {
        let p = params();
        assert_eq!(p.weight(0), 2.5);
        assert_eq!(p.weight(204_800), 2.5);
        let mid = (204_800 + 1_048_576) / 2;
        assert!((p.weight(mid) - (2.5 + 0.125) / 2.0).abs() < 1e-12);
        assert_eq!(p.weight(1_048_576), 0.125);
        assert_eq!(p.weight(u64::MAX), 0.125);
        let mut last = f64::INFINITY;
        for s in (0..2_000_000).step_by(10_000) {
            let w = p.weight(s);
            assert!(w <= last, "weight rises at {s}");
            last = w;
        }
    }

    #[test]
    fn decrease_penalty_is_alpha_to_the_weight() {
        let mut l = L2dct::new(&flow(0, 10_000_000), &params());
        // alpha 0.5. A young flow: b = 0.5^2.5, it backs off less than DCTCP (0.25).
        let young = l.ecn_window(&state(1000));
        assert_eq!(young, (40_000.0 * (1.0 - 0.5f64.powf(2.5) / 2.0)) as u64);
        assert!(young > 30_000);
        // An old flow: b = 0.5^0.125, more than DCTCP's cut.
        let old = l.ecn_window(&state(2_000_000));
        assert_eq!(old, (40_000.0 * (1.0 - 0.5f64.powf(0.125) / 2.0)) as u64);
        assert!(old < 30_000);
        // With alpha = 1 every weight halves (1^w = 1).
        l.dctcp.alpha = 1.0;
        assert_eq!((l.ecn_window(&state(1000)), l.ecn_window(&state(2_000_000))), (20_000, 20_000));
    }

    #[test]
    fn increase_is_weight_over_wmax_segments_per_rtt() {
        let mut l = L2dct::new(&flow(0, 10_000_000), &params());
        // Young: k = 1, TCP's credit. Old: k = 0.125 / 2.5 = 0.05.
        assert_eq!(l.ca_credit(&state(1000), 1000), 1000 * 1000);
        assert_eq!(l.ca_credit(&state(2_000_000), 1000), 50_000);
        let mid = (204_800 + 1_048_576) / 2;
        assert_eq!(l.ca_credit(&state(mid), 1000), (1_000_000.0 * (1.3125 / 2.5)) as u64);
    }

    /// Through the TCP sender: four ACKs of one MSS each in congestion avoidance (cwnd = 4
    /// MSS = 5840 B). Each ACK adds `k x MSS x MSS` of credit and cwnd grows by credit / cwnd
    /// (remainder carried): k = 1 gives 365 + 343 + 326 + 310 = 1344 B (about one MSS per
    /// window), k = w_min / w_max = 0.05 gives 4 x 18 = 72 B (about 1/20 of it).
    #[test]
    fn sender_congestion_avoidance_growth_follows_the_weight() {
        let net = NetInfo::for_tests(1500, Time::us(10), Rate::gbps(10));
        // s_min/s_max tiny so the second flow is past s_max after its initial window.
        for (cfg, want_inc) in [
            (json!({"ssthresh": 4, "init_cwnd": 4}), 1344u64),
            (json!({"ssthresh": 4, "init_cwnd": 4, "s_min": "100B", "s_max": "1000B"}), 72),
        ] {
            let mut t = from_config(&cfg, &net).unwrap();
            let flows = vec![flow(0, 10_000_000)];
            let mut out = Actions::new();
            t.start_flow(&mut Ctx { now: Time::ZERO, host: 0, flows: &flows, out: &mut out }, 0);
            assert_eq!(out.sends.len(), 4);
            let w = t.sender(0).unwrap().cwnd();
            for p in out.sends.clone() {
                let mut acks = Actions::new();
                t.on_packet(&mut Ctx { now: Time::us(5), host: 1, flows: &flows, out: &mut acks }, &p);
                let mut more = Actions::new();
                t.on_packet(&mut Ctx { now: Time::us(10), host: 0, flows: &flows, out: &mut more }, &acks.sends[0]);
            }
            assert_eq!(t.sender(0).unwrap().cwnd() - w, want_inc, "{cfg}");
        }
    }

    #[test]
    fn config_errors_name_the_field() {
        let net = NetInfo::for_tests(1500, Time::us(10), Rate::gbps(10));
        for (cfg, field) in [
            (json!({"w_min": 0}), "transport.w_min"),
            (json!({"w_max": 0.1}), "transport.w_max"),
            (json!({"s_max": "100KB"}), "transport.s_max"),
            (json!({"s_min": "lots"}), "transport.s_min"),
            (json!({"init_cwnd": 0}), "transport.init_cwnd"),
            (json!({"wmax": 1}), "transport.wmax"),
        ] {
            let e = from_config(&cfg, &net).err().unwrap_or_else(|| panic!("{cfg} accepted"));
            assert_eq!(e.field(), field, "{cfg}: {e}");
        }
        let t = from_config(&json!({"s_min": "10KB", "s_max": "2MB"}), &net).unwrap();
        assert_eq!(t.name(), "l2dct");
    }
}
