//! Congestion-control laws: the window arithmetic the TCP sender (`tcp.rs`) is generic over.
//!
//! # What is modelled
//! The TCP sender owns the machinery every window-based law shares: segmentation, the SACK
//! scoreboard and loss recovery (RFC 6675 / RFC 6582), the RTO (RFC 6298), the DCTCP
//! observation window (one window of data, counting acknowledged and CE-marked bytes from the
//! ACKs) and the CWR rule (at most one ECN cut per window). A [`CongestionControl`] law decides
//! only the numbers, from a read-only view of the sender ([`CcState`]):
//! - the marked-fraction estimate at the end of each observation window
//!   ([`CongestionControl::on_window_end`]; DCTCP's `alpha = (1 - g) alpha + g F`, Alizadeh et
//!   al. SIGCOMM 2010 §3.1 Eq. 1);
//! - the window after an ECN-Echo cut ([`CongestionControl::ecn_window`]; RFC 3168 halving,
//!   DCTCP's `cwnd (1 - alpha/2)`, D2TCP's and L2DCT's variants);
//! - the additive increase of congestion avoidance ([`CongestionControl::ca_credit`]: the
//!   credit an ACK of `acked` bytes adds; the sender adds one MSS to cwnd each time the credit
//!   reaches cwnd, so `acked x MSS` is RFC 5681's one MSS per window);
//! - ssthresh at a fast retransmit ([`CongestionControl::loss_ssthresh`]) and the window after
//!   a retransmission timeout ([`CongestionControl::on_timeout`]), both RFC 5681 §3.1/§3.2 by
//!   default.
//!
//! Slow start (RFC 3465 byte counting, L = 2) is the sender's, unchanged by every law here.
//! A law is built per flow from the flow's [`FlowInfo`] (what the application told the
//! transport: size, deadline) and its protocol-wide parameters.
//!
//! Laws in this module: [`Reno`] (RFC 5681 with RFC 3168 ECN halving), [`Dctcp`] and
//! [`Standard`] (either of the two, chosen at run time: the law of `tcp`/`dctcp` and of the
//! transports that embed the TCP sender). D2TCP and L2DCT live in `d2tcp.rs` and `l2dct.rs`.
//! Swift's delay-based law does not fit this per-event arithmetic (it needs per-ACK delays and
//! a pacing gate) and stays a special case of the sender.

use crate::transport::FlowInfo;
use crate::units::Time;
use std::fmt;

/// What a law may read of its sender when asked for a number.
#[derive(Clone, Copy, Debug)]
pub struct CcState {
    pub now: Time,
    /// Sender maximum segment size, bytes.
    pub mss: u64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes (`u64::MAX` = infinite).
    pub ssthresh: u64,
    /// Lowest unacknowledged byte.
    pub una: u64,
    /// Highest byte sent + 1 (so `max - una` is the flight size and `max` the distinct payload
    /// bytes sent so far).
    pub max: u64,
    /// Flow size, bytes.
    pub size: u64,
    /// Smoothed RTT, once sampled.
    pub srtt: Option<Time>,
    /// The flow's base RTT (used before the first RTT sample).
    pub base_rtt: Time,
}

impl CcState {
    /// RFC 5681 Eq. 4: max(FlightSize / 2, 2 x MSS).
    #[inline]
    pub fn half_flight(&self) -> u64 {
        ((self.max - self.una) / 2).max(2 * self.mss)
    }
    /// The smoothed RTT, or the base RTT before the first sample.
    #[inline]
    pub fn rtt(&self) -> Time {
        self.srtt.unwrap_or(self.base_rtt)
    }
}

/// A window law of the TCP sender (see the module docs for who does what).
pub trait CongestionControl: Clone + fmt::Debug + Send {
    /// Protocol-wide parameters of the law.
    type Params: Clone + fmt::Debug + PartialEq + Send;
    /// The law's state for a new flow.
    fn new(flow: &FlowInfo, p: &Self::Params) -> Self;
    /// The marked-fraction estimate (1 for laws without one: they cut as if every packet was
    /// marked).
    fn alpha(&self) -> f64;
    /// An observation window ended with `acked > 0` bytes acknowledged, `marked` of them
    /// CE-marked.
    fn on_window_end(&mut self, acked: u64, marked: u64);
    /// The window (bytes) after an ECN-Echo cut, before the sender's `min_cwnd` floor.
    fn ecn_window(&mut self, s: &CcState) -> u64;
    /// Congestion-avoidance credit for `acked` newly acknowledged bytes (cwnd grows by one MSS
    /// per cwnd of credit).
    #[inline]
    fn ca_credit(&mut self, s: &CcState, acked: u64) -> u64 {
        acked * s.mss
    }
    /// ssthresh on entering fast retransmit / recovery.
    #[inline]
    fn loss_ssthresh(&mut self, s: &CcState) -> u64 {
        s.half_flight()
    }
    /// (new ssthresh if it changes, new cwnd) on a retransmission timeout; `first` is true for
    /// the first expiry of a series (RFC 5681 §3.1 sets ssthresh only then).
    #[inline]
    fn on_timeout(&mut self, s: &CcState, first: bool) -> (Option<u64>, u64) {
        (first.then(|| s.half_flight()), s.mss)
    }
}

/// RFC 5681 NewReno window law, with RFC 3168's halving on ECN-Echo when ECN is on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reno;

impl CongestionControl for Reno {
    type Params = ();
    #[inline]
    fn new(_flow: &FlowInfo, _p: &()) -> Reno {
        Reno
    }
    #[inline]
    fn alpha(&self) -> f64 {
        1.0
    }
    #[inline]
    fn on_window_end(&mut self, _acked: u64, _marked: u64) {}
    #[inline]
    fn ecn_window(&mut self, s: &CcState) -> u64 {
        (s.cwnd as f64 * 0.5) as u64
    }
}

/// DCTCP's parameters (Alizadeh et al. §3.1): EWMA gain `g` and the initial `alpha`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DctcpParams {
    pub g: f64,
    pub init_alpha: f64,
}

/// DCTCP's window law: `alpha` tracks the fraction of marked bytes per window, an ECN-Echo cuts
/// the window to `cwnd (1 - alpha/2)`; everything else is Reno.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dctcp {
    pub alpha: f64,
    pub g: f64,
}

impl Dctcp {
    /// The window after a cut with penalty `p` in [0, 1]: `cwnd (1 - p/2)` (DCTCP: p = alpha).
    #[inline]
    pub fn cut(cwnd: u64, p: f64) -> u64 {
        (cwnd as f64 * (1.0 - p / 2.0)) as u64
    }
}

impl CongestionControl for Dctcp {
    type Params = DctcpParams;
    #[inline]
    fn new(_flow: &FlowInfo, p: &DctcpParams) -> Dctcp {
        Dctcp { alpha: p.init_alpha, g: p.g }
    }
    #[inline]
    fn alpha(&self) -> f64 {
        self.alpha
    }
    #[inline]
    fn on_window_end(&mut self, acked: u64, marked: u64) {
        let f = marked as f64 / acked as f64;
        self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
    }
    #[inline]
    fn ecn_window(&mut self, s: &CcState) -> u64 {
        Dctcp::cut(s.cwnd, self.alpha)
    }
}

/// `tcp`'s or `dctcp`'s law, chosen at run time (`TcpParams::dctcp`): the law of the embedding
/// transports (PIAS, PPT, RC3, Swift's sending machinery), which choose per scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Standard {
    Reno(Reno),
    Dctcp(Dctcp),
}

/// [`Standard`]'s parameters: DCTCP's when `Some`, Reno otherwise.
pub type StandardParams = Option<DctcpParams>;

impl CongestionControl for Standard {
    type Params = StandardParams;
    #[inline]
    fn new(flow: &FlowInfo, p: &StandardParams) -> Standard {
        match p {
            Some(d) => Standard::Dctcp(Dctcp::new(flow, d)),
            None => Standard::Reno(Reno),
        }
    }
    #[inline]
    fn alpha(&self) -> f64 {
        match self {
            Standard::Reno(r) => r.alpha(),
            Standard::Dctcp(d) => d.alpha(),
        }
    }
    #[inline]
    fn on_window_end(&mut self, acked: u64, marked: u64) {
        if let Standard::Dctcp(d) = self {
            d.on_window_end(acked, marked)
        }
    }
    #[inline]
    fn ecn_window(&mut self, s: &CcState) -> u64 {
        match self {
            Standard::Reno(r) => r.ecn_window(s),
            Standard::Dctcp(d) => d.ecn_window(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Bytes, Rate};

    fn flow() -> FlowInfo {
        FlowInfo {
            id: 0,
            src: 0,
            dst: 1,
            size: Bytes(1_000_000),
            start: Time::ZERO,
            base_rtt: Time::us(10),
            path_rate: Rate::gbps(10),
            host_rate: Rate::gbps(10),
            deadline: None,
            background: false,
        }
    }

    fn st(cwnd: u64) -> CcState {
        CcState {
            now: Time::ZERO,
            mss: 1000,
            cwnd,
            ssthresh: u64::MAX,
            una: 0,
            max: 40_000,
            size: 1_000_000,
            srtt: None,
            base_rtt: Time::us(10),
        }
    }

    #[test]
    fn reno_ecn_halves_and_defaults_follow_rfc5681() {
        let mut r = Reno::new(&flow(), &());
        assert_eq!(r.ecn_window(&st(10_000)), 5_000);
        assert_eq!(r.alpha(), 1.0);
        // FlightSize 40 000 B: ssthresh 20 000 B; a timeout sets cwnd = 1 MSS.
        assert_eq!(r.loss_ssthresh(&st(10_000)), 20_000);
        assert_eq!(r.on_timeout(&st(10_000), true), (Some(20_000), 1000));
        assert_eq!(r.on_timeout(&st(10_000), false), (None, 1000));
        assert_eq!(r.ca_credit(&st(10_000), 1500), 1_500_000);
    }

    #[test]
    fn dctcp_alpha_ewma_and_cut() {
        let mut d = Dctcp::new(&flow(), &DctcpParams { g: 0.5, init_alpha: 0.0 });
        d.on_window_end(1000, 1000);
        assert_eq!(d.alpha(), 0.5);
        d.on_window_end(1000, 0);
        assert_eq!(d.alpha(), 0.25);
        // cwnd (1 - alpha/2) = 10 000 x 0.875.
        assert_eq!(d.ecn_window(&st(10_000)), 8_750);
    }

    #[test]
    fn standard_dispatches_on_params() {
        let mut s = Standard::new(&flow(), &None);
        s.on_window_end(1000, 0);
        assert_eq!(s.alpha(), 1.0);
        assert_eq!(s.ecn_window(&st(10_000)), 5_000);
        let mut s = Standard::new(&flow(), &Some(DctcpParams { g: 1.0, init_alpha: 1.0 }));
        s.on_window_end(1000, 0);
        assert_eq!(s.alpha(), 0.0);
        assert_eq!(s.ecn_window(&st(10_000)), 10_000);
    }
}
