//! Swift's window law (Kumar et al., SIGCOMM 2020, §3 Algorithm 1 and §3.3-3.5): the fabric and
//! endpoint windows, their targets and the once-per-RTT decrease, as a pure state machine
//! driven with explicit times.
//!
//! It is a building block below the TCP engine: [`crate::transport::tcp::TcpSender`] runs it
//! in place of Reno/DCTCP when `TcpParams::swift` is set. The `swift` protocol
//! ([`crate::transport::swift`]) documents the model, its parameters and the choices made, and
//! resolves the configuration into [`SwiftParams`].

use crate::transport::TimerSlot;
use crate::units::Time;

#[derive(Clone, Debug, PartialEq)]
pub struct SwiftParams {
    pub base_target: Time,
    pub topology_scaling: bool,
    /// Per-hop addition to the target.
    pub h: Time,
    pub flow_scaling: bool,
    pub fs_range: Time,
    pub fs_min_cwnd: f64,
    pub fs_max_cwnd: f64,
    pub ai: f64,
    pub beta: f64,
    pub max_mdf: f64,
    pub min_cwnd: f64,
    pub max_cwnd: f64,
    pub endpoint_target: Time,
    pub retx_reset_threshold: u32,
}

impl SwiftParams {
    /// The fabric target delay for a fabric window of `fcwnd` packets over a path of `hops`
    /// switches (Swift §3.5).
    pub fn fabric_target(&self, fcwnd: f64, hops: u32) -> Time {
        let mut t = self.base_target.0 as f64;
        if self.topology_scaling {
            t += hops as f64 * self.h.0 as f64;
        }
        if self.flow_scaling {
            let range = self.fs_range.0 as f64;
            let alpha = range / (1.0 / self.fs_min_cwnd.sqrt() - 1.0 / self.fs_max_cwnd.sqrt());
            let beta = -alpha / self.fs_max_cwnd.sqrt();
            t += (alpha / fcwnd.max(f64::MIN_POSITIVE).sqrt() + beta).min(range).max(0.0);
        }
        Time(t.round() as u64)
    }
}

/// Swift's per-flow congestion state (Algorithm 1). Windows are in packets.
#[derive(Clone, Debug)]
pub struct SwiftCc {
    fcwnd: f64,
    ecwnd: f64,
    last_decrease: Option<Time>,
    retransmit_cnt: u32,
    rtt: Time,
    fabric_delay: Option<Time>,
    endpoint_delay: Time,
    target: Time,
    hops: u32,
    decreases: u32,
    next_tx: Time,
    /// The pacing timer (armed by the embedding sender).
    pub pace: TimerSlot,
}

impl SwiftCc {
    /// A flow starting with `init_cwnd` packets on a path of base RTT `base_rtt`.
    pub fn new(p: &SwiftParams, init_cwnd: f64, base_rtt: Time) -> SwiftCc {
        let w = init_cwnd.clamp(p.min_cwnd, p.max_cwnd);
        SwiftCc {
            fcwnd: w,
            ecwnd: w,
            last_decrease: None,
            retransmit_cnt: 0,
            rtt: base_rtt,
            fabric_delay: None,
            endpoint_delay: Time::ZERO,
            target: p.fabric_target(w, 0),
            hops: 0,
            decreases: 0,
            next_tx: Time::ZERO,
            pace: TimerSlot::default(),
        }
    }

    /// The congestion window, packets: min(fabric window, endpoint window).
    pub fn cwnd(&self) -> f64 {
        self.fcwnd.min(self.ecwnd)
    }
    pub fn fcwnd(&self) -> f64 {
        self.fcwnd
    }
    pub fn ecwnd(&self) -> f64 {
        self.ecwnd
    }
    /// The window in bytes the TCP machinery uses: floor(cwnd x MSS), at least one MSS.
    pub fn cwnd_bytes(&self, mss: u64) -> u64 {
        ((self.cwnd() * mss as f64) as u64).max(mss)
    }
    /// Latest RTT sample (the base RTT before the first).
    pub fn rtt(&self) -> Time {
        self.rtt
    }
    /// Latest fabric delay, once an ACK arrived.
    pub fn fabric_delay(&self) -> Option<Time> {
        self.fabric_delay
    }
    pub fn endpoint_delay(&self) -> Time {
        self.endpoint_delay
    }
    /// The fabric target delay used at the latest ACK.
    pub fn target(&self) -> Time {
        self.target
    }
    /// Switches on the path, from the latest ACK.
    pub fn hops(&self) -> u32 {
        self.hops
    }
    /// The latest fabric delay is below its target (false before the first ACK).
    pub fn below_target(&self) -> bool {
        self.fabric_delay.is_some_and(|d| d < self.target)
    }
    /// Window decreases so far.
    pub fn decreases(&self) -> u32 {
        self.decreases
    }
    pub fn retransmit_cnt(&self) -> u32 {
        self.retransmit_cnt
    }
    /// Gap between transmissions: RTT / cwnd below one packet, else 0.
    pub fn pacing_delay(&self) -> Time {
        let w = self.cwnd();
        if w < 1.0 {
            self.rtt.mul_f64(1.0 / w)
        } else {
            Time::ZERO
        }
    }
    /// Earliest time of the next transmission under pacing.
    pub fn next_tx(&self) -> Time {
        self.next_tx
    }
    /// Whether a packet may leave now (pacing gate; the window is checked by the sender).
    pub fn may_send(&self, now: Time) -> bool {
        self.cwnd() >= 1.0 || now >= self.next_tx
    }
    /// Record a transmission at `now`.
    pub fn on_sent(&mut self, now: Time) {
        if self.cwnd() < 1.0 {
            self.next_tx = now + self.pacing_delay();
        }
    }

    fn can_decrease(&self, now: Time) -> bool {
        self.last_decrease.is_none_or(|t| now.saturating_sub(t) >= self.rtt)
    }

    fn aimd(p: &SwiftParams, w: f64, delay: Time, target: Time, can: bool, acked: f64) -> f64 {
        if delay < target {
            if w >= 1.0 {
                w + p.ai * acked / w
            } else {
                w + p.ai * acked
            }
        } else if can {
            let d = delay.0 as f64;
            let excess = (d - target.0 as f64) / d;
            w * (1.0 - p.beta * excess).max(1.0 - p.max_mdf)
        } else {
            w
        }
    }

    fn finish(&mut self, p: &SwiftParams, now: Time, prev: f64) {
        self.fcwnd = self.fcwnd.clamp(p.min_cwnd, p.max_cwnd);
        self.ecwnd = self.ecwnd.clamp(p.min_cwnd, p.max_cwnd);
        if self.cwnd() < prev {
            self.last_decrease = Some(now);
            self.decreases += 1;
        }
    }

    /// An ACK newly acknowledging `acked` packets: RTT sample `rtt`, receiver hold time
    /// `remote` (endpoint delay), `hops` switches on the path.
    pub fn on_ack(&mut self, p: &SwiftParams, now: Time, rtt: Time, remote: Time, hops: u32, acked: f64) {
        self.retransmit_cnt = 0;
        self.rtt = rtt;
        self.hops = hops;
        let prev = self.cwnd();
        let can = self.can_decrease(now);
        let fabric = rtt.saturating_sub(remote);
        self.target = p.fabric_target(self.fcwnd, hops);
        self.fcwnd = Self::aimd(p, self.fcwnd, fabric, self.target, can, acked);
        self.ecwnd = Self::aimd(p, self.ecwnd, remote, p.endpoint_target, can, acked);
        self.fabric_delay = Some(fabric);
        self.endpoint_delay = remote;
        self.finish(p, now, prev);
    }

    /// A retransmission timeout.
    pub fn on_rto(&mut self, p: &SwiftParams, now: Time) {
        self.retransmit_cnt += 1;
        let prev = self.cwnd();
        if self.retransmit_cnt >= p.retx_reset_threshold {
            self.fcwnd = p.min_cwnd;
            self.ecwnd = p.min_cwnd;
        } else if self.can_decrease(now) {
            self.fcwnd *= 1.0 - p.max_mdf;
            self.ecwnd *= 1.0 - p.max_mdf;
        }
        self.finish(p, now, prev);
    }

    /// Entry into fast recovery.
    pub fn on_fast_recovery(&mut self, p: &SwiftParams, now: Time) {
        self.retransmit_cnt = 0;
        let prev = self.cwnd();
        if self.can_decrease(now) {
            self.fcwnd *= 1.0 - p.max_mdf;
            self.ecwnd *= 1.0 - p.max_mdf;
        }
        self.finish(p, now, prev);
    }
}
