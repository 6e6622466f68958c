//! PTCP: priority-driven congestion control at the receiver (Zhuang, Jiang, Jin, Zhu and Chen,
//! "PTCP: A Priority-Driven Congestion Control Algorithm to Tame TCP Incast in Data Centers",
//! IEEE Access 2019), as the `ptcp` protocol.
//!
//! # What is modelled
//! Everything happens at the receiver; the sender is standard TCP (NewReno/SACK, no ECN) that
//! obeys the advertised receive window. PTCP runs on the receiver-side building blocks of
//! `rcvctl.rs` ([`RcvTcp`]): per flow, at its receiver,
//! - **Size priority P1** (§IV-A.2, Eq. 4-6): with `b` the payload bytes received so far and
//!   `x = b / 1 MB`: `P1 = 1` for `b <= 10 KB` (small), `P1 = 0.1` for `b > 10 MB` (large),
//!   and `P1 = S(x) = 1 / (15.5 - 14.5 e^-x)` in between (medium).
//! - **Deadline priority P2** (§IV-A.3, Eq. 7): `P2 = 1.58 e^(-Tc/D) - 0.58`, with `D` the
//!   flow's deadline (relative to its start) and `Tc` the time left until it (clamped at 0, so
//!   `P2 <= 1`); `P2 = 0` for a flow without a deadline. The receiver learns `D` and the start
//!   from the flow table, as the application would hand them over. The paper drops a flow at
//!   `Tc = 0`: that is the runner's `run.abort_at_deadline` option, not done here.
//! - **P_sum = max(P1, P2)** (Eq. 8).
//! - **One-way queuing delay** (§IV-B.1, Algorithm 1): [`OneWayDelay`] on the data packets'
//!   send timestamps.
//! - **Congestion estimate alpha** (§IV-B.2, Algorithm 2): for every data packet,
//!   `packet_num += 1` if its queuing delay is at least `target`, and `packet_count += 1`; every
//!   `interval` packets `F = packet_num / interval`, `alpha = (1 - g) alpha + g F`, and both
//!   counters restart.
//! - **Receive window** (§IV-B.3, Eq. 9), updated right after each alpha update: a decrease
//!   `rwnd = rwnd (1 - alpha^P_sum / 2)` or an increase `rwnd = rwnd + 1 MSS` (see the rules
//!   below), never below 1 MSS. Every ACK advertises it.
//! - **ACK regulation** (§IV-C, Eq. 10): every ACK is held for `alpha^P_sum x queuing_delay`
//!   (the current alpha, and the queuing delay of the latest data packet), in order
//!   ([`crate::transport::rcvctl::AckHold`]). The ACK-delay log (`[output] ack_delays`)
//!   records with each ACK the three inputs: `alpha`, `p_sum` and `queuing_us`.
//!
//! # Where the paper's formulas contradict its text (defaults follow the text)
//! - **Eq. 9, the decrease** (`rwnd_rule`): the formula reads `(1 - alpha^(P_sum/2)) rwnd`,
//!   which gives `rwnd = 0` at `alpha = 1`; the text says "alpha = 1, the window size is reduced
//!   to half" and that the rule is inspired by DCTCP. Default `"text"`: `rwnd (1 -
//!   alpha^P_sum / 2)` (a high-priority flow, `P_sum = 1`, cuts by `alpha / 2` like DCTCP; a
//!   low-priority one, `P_sum = 0.1`, by about a half). `"literal"`: the formula as printed.
//! - **Eq. 9, when it decreases** (`decrease_on`): the formula decreases whenever `alpha > 0`
//!   and increases only at `alpha = 0`; but alpha is an EWMA that never returns to exactly 0
//!   after the first congested interval, so read literally every window only shrinks from then
//!   on, against the text's "adds a segment similar to TCP" and its DCTCP model (which cuts
//!   only in windows that saw congestion). Default `"congestion"`: decrease after an interval
//!   in which some packet saw a queuing delay of at least `target` (`F > 0`), increase after
//!   an interval without (`F = 0`). `"alpha"`: the literal condition.
//! - **Eq. 9, how fast it increases** (`increase_on`): the paper does not say how often the
//!   "+1" applies, only that the window "adds a segment similar to TCP". Applied once per
//!   `interval` (the rate at which alpha moves), a flow that starts at Table 1's 1 MSS needs
//!   `interval` round trips per segment of window: 20 at 1 Gbps, 65 at 10 Gbps; a 100 KB flow
//!   then spends about 20 round trips at a window of 1, and every PTCP flow is slower than
//!   DCTCP's, whatever the congestion. That contradicts both the text's "similar to TCP" and
//!   the paper's results (PTCP's small flows at or below DCTCP's without incast, Fig. 11-12).
//!   Default `"packet"`: one MSS per received data packet whose queuing delay is below
//!   `target` while no packet of the running interval has been at or above it, i.e. TCP's
//!   per-ACK growth while uncongested (a flow's first packet, which gives no delay sample,
//!   grows nothing: without it, every flow of a 56-sender incast doubles its window in the
//!   second round trip before any packet can report the queue; the
//!   sender's own slow start then sets the pace, as in TCP); the first packet at or above
//!   `target` stops the growth, and the interval's end applies the decrease, once per
//!   interval as DCTCP cuts once per window. `"interval"`: one MSS at the end of a clean
//!   interval. Measured on the Fig. 11 setting (web search, 1 Gbps, small flows beside a
//!   background flow, load 0.1): small-flow average 2,926 us with `"interval"`, 1,145 us with
//!   `"packet"` (DCTCP 3,385 us).
//! - **Eq. 6, P1 of medium flows** (`p1_rule`): the text wants a monotone curve from about 1
//!   down to 0.1 and says `S(10) = 0.1`, but `S(10) = 0.0645` and `S(x) < 0.1` from `x = ln(14.5 / 5.5) = 0.97`
//!   (S(0.01) = 0.874, S(0.1) = 0.42, S(1) = 0.098). Default `"clamped"`: `max(0.1, S(x))`,
//!   monotone and continuous at 10 MB. `"literal"`: `S(x)`. Eq. 6's case labels
//!   (`n = 0`, `n in (0, 10)`, `n = 10`) are read as the byte classes of the text.
//! - **Algorithm 2** never increments `packet_count`; the text computes alpha "every few
//!   packets" (`interval`), so it is incremented for every received packet.
//! - Eq. 10's text says the full delay is "by Eq. (5)": Eq. 10 is meant.
//!
//! # Choices where the paper leaves room
//! - The initial receive window (`init_rwnd`) is 1 MSS, the initial window of Table 1; the
//!   sender's initial congestion window is also 1 MSS (`init_cwnd` defaults to 1 here).
//! - **Algorithm 1's initial `base_delay`** (`base_from_rtt`): the algorithm takes "an initial
//!   one-way delay value" and lowers it to the smallest delay seen. Default: half the flow's
//!   base RTT (the receiver knows its path's base RTT as the application does), so that flows
//!   whose very first packets already queue behind a synchronized burst still see that
//!   queue; the estimate then errs by half the difference between the data and ACK paths'
//!   serialization (one MTU at 1 Gbps is 12 us against the Target of 120 us). `false`: an
//!   infinite initial value, the base learnt from the packets alone; in an incast every
//!   flow's second packet then already sits behind the burst, the queue becomes part of the
//!   base, and PTCP sees no congestion.
//! - alpha starts at 0 (`init_alpha`); the first packet of a flow gives no delay sample
//!   (Algorithm 1), so it counts as below `target`.
//! - `b` counts every payload byte that arrives, duplicates included (the paper counts bytes
//!   "when packets are delivered").
//! - Delayed ACKs stay off (TCP default): one ACK per data packet, each held by Eq. 10.
//! - The receive window field carries whole segments up to 2047 (`tcp.rs`): a larger window
//!   than that is never needed by the paper's settings.
//! - **Table 1 defaults**: `target` = 120 us and `interval` = 20 at 1 Gbps, 100 us and 65 at
//!   10 Gbps; `g` = 0.0625 for both. `setting` (`"1G"` or `"10G"`) picks the set; left out,
//!   it is `"10G"` when the fastest host link is at least 10 Gbps and `"1G"` otherwise.
//!   Explicit `target` or `interval` override the set. The paper's `RTO_min` of 200 ms is the
//!   TCP field `min_rto` (the simulator's default is 1 ms; reproductions set it).
//!
//! # Configuration (`protocol = "ptcp"`)
//! PTCP's own fields: `setting`, `target`, `interval`, `g`, `init_alpha`, `init_rwnd`
//! (packets), `rwnd_rule`, `decrease_on`, `increase_on`, `p1_rule`, `ack_delay` (true: Eq. 10 on; false:
//! ACKs leave at once), `base_from_rtt`. Every `tcp` field too (`init_cwnd` defaults to 1,
//! `min_rto`, `sack`, ...); `g` and `init_alpha` are PTCP's, since the sender runs no DCTCP.

use crate::packet::{NodeId, Packet};
use crate::transport::rcvctl::{AckVerdict, OneWayDelay, RcvPolicy, RcvTcp};
use crate::transport::tagging::{split_table, ExtConfigError};
use crate::transport::tcp::{Tcp, TcpConfig, ACK_RWND_MAX_SEGS};
use crate::transport::{FlowInfo, NetInfo, ACK_STATE_MAX};
use crate::units::{Rate, Time};
use serde::Deserialize;

/// Errors of the `ptcp` table.
pub type PtcpConfigError = ExtConfigError;

/// PTCP's own fields in `[transport]`.
pub const FIELDS: &[&str] = &[
    "setting",
    "target",
    "interval",
    "g",
    "init_alpha",
    "init_rwnd",
    "rwnd_rule",
    "decrease_on",
    "increase_on",
    "p1_rule",
    "ack_delay",
    "base_from_rtt",
];

/// Largest payload received by a "small" flow (P1 = 1).
pub const SMALL_BYTES: u64 = 10_000;
/// Payload received above which a flow is "large" (P1 = 0.1).
pub const LARGE_BYTES: u64 = 10_000_000;
/// The unit of `x` in Eq. 4 (1 MB).
pub const X_UNIT_BYTES: f64 = 1_000_000.0;

/// The curve `S(x)` of Eq. 4.
pub fn s_curve(x: f64) -> f64 {
    1.0 / (15.5 - 14.5 * (-x).exp())
}

/// Eq. 9's decrease (`rwnd_rule`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RwndRule {
    /// `rwnd (1 - alpha^P / 2)` (the text: alpha = 1 halves).
    Text,
    /// `rwnd (1 - alpha^(P / 2))` (the formula as printed).
    Literal,
}

/// When Eq. 9 decreases (`decrease_on`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DecreaseOn {
    /// After an interval with a packet at or above `target` (F > 0).
    Congestion,
    /// Whenever alpha > 0 (the formula's condition).
    Alpha,
}

/// How often Eq. 9's increase applies (`increase_on`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum IncreaseOn {
    /// One MSS per received packet while the running interval has seen no packet at or
    /// above `target` (TCP's per-ACK growth).
    Packet,
    /// One MSS at the end of an interval without congestion.
    Interval,
}

/// P1 of medium flows (`p1_rule`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum P1Rule {
    /// `max(0.1, S(x))`.
    Clamped,
    /// `S(x)`.
    Literal,
}

/// The Table 1 parameter set (`setting`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum Setting {
    #[serde(rename = "1G")]
    OneG,
    #[serde(rename = "10G")]
    TenG,
}

impl Setting {
    /// (Target, interval) of Table 1.
    pub fn table1(self) -> (Time, u32) {
        match self {
            Setting::OneG => (Time::us(120), 20),
            Setting::TenG => (Time::us(100), 65),
        }
    }
    /// The set for a network whose fastest host link is `rate`.
    pub fn for_rate(rate: Rate) -> Setting {
        if rate >= Rate::gbps(10) {
            Setting::TenG
        } else {
            Setting::OneG
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct PtcpOwn {
    setting: Option<Setting>,
    target: Option<Time>,
    interval: Option<u32>,
    g: Option<f64>,
    init_alpha: Option<f64>,
    init_rwnd: Option<u64>,
    rwnd_rule: Option<RwndRule>,
    decrease_on: Option<DecreaseOn>,
    increase_on: Option<IncreaseOn>,
    p1_rule: Option<P1Rule>,
    ack_delay: Option<bool>,
    base_from_rtt: Option<bool>,
}

/// Resolved PTCP parameters (names as in the paper).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PtcpParams {
    /// Queuing-delay threshold of Algorithm 2.
    pub target: Time,
    /// Packets per alpha update (Algorithm 2).
    pub interval: u32,
    /// EWMA gain of alpha.
    pub g: f64,
    pub init_alpha: f64,
    /// Initial receive window, bytes.
    pub init_rwnd: u64,
    pub mss: u64,
    pub rwnd_rule: RwndRule,
    pub decrease_on: DecreaseOn,
    pub increase_on: IncreaseOn,
    pub p1_rule: P1Rule,
    /// Hold ACKs by Eq. 10.
    pub ack_delay: bool,
    /// Algorithm 1's initial `base_delay` is half the flow's base RTT (else infinite).
    pub base_from_rtt: bool,
}

impl PtcpParams {
    /// Table 1 at `setting`, everything else at its default, for payloads of `mss` bytes.
    pub fn table1(setting: Setting, mss: u64) -> PtcpParams {
        let (target, interval) = setting.table1();
        PtcpParams {
            target,
            interval,
            g: 0.0625,
            init_alpha: 0.0,
            init_rwnd: mss,
            mss,
            rwnd_rule: RwndRule::Text,
            decrease_on: DecreaseOn::Congestion,
            increase_on: IncreaseOn::Packet,
            p1_rule: P1Rule::Clamped,
            ack_delay: true,
            base_from_rtt: true,
        }
    }

    /// Size priority of a flow that has received `b` payload bytes (Eq. 6).
    pub fn p1(&self, b: u64) -> f64 {
        if b <= SMALL_BYTES {
            1.0
        } else if b > LARGE_BYTES {
            0.1
        } else {
            let s = s_curve(b as f64 / X_UNIT_BYTES);
            match self.p1_rule {
                P1Rule::Clamped => s.max(0.1),
                P1Rule::Literal => s,
            }
        }
    }
}

/// Deadline priority (Eq. 7) at `now` of a flow started at `start` with deadline `d`
/// (relative); 0 without a deadline.
pub fn p2(now: Time, start: Time, d: Option<Time>) -> f64 {
    let Some(d) = d.filter(|d| *d > Time::ZERO) else { return 0.0 };
    let tc = (start + d).saturating_sub(now);
    1.58 * (-(tc.0 as f64) / d.0 as f64).exp() - 0.58
}

/// PTCP's per-flow receiver state.
#[derive(Clone, Debug, PartialEq)]
pub struct PtcpFlow {
    /// Payload bytes received (`b`).
    pub bytes: u64,
    pub owd: OneWayDelay,
    /// Algorithm 2's counters.
    pub packet_count: u32,
    pub packet_num: u32,
    pub alpha: f64,
    /// Receive window, bytes (fractional: Eq. 9 multiplies it).
    pub rwnd: f64,
    /// The ACK delay of the latest verdict.
    pub last_delay: Time,
    /// alpha updates so far.
    pub updates: u32,
}

/// The PTCP receiver law ([`RcvPolicy`]).
#[derive(Clone, Debug)]
pub struct PtcpPolicy {
    pub p: PtcpParams,
}

impl PtcpPolicy {
    /// P_sum (Eq. 8) of `st` at `now`.
    pub fn p_sum(&self, now: Time, flow: &FlowInfo, st: &PtcpFlow) -> f64 {
        self.p.p1(st.bytes).max(p2(now, flow.start, flow.deadline))
    }

    /// Algorithm 2's per-packet step for a packet with queuing delay `qd`, then Eq. 9 after
    /// an alpha update.
    pub fn on_queuing_delay(&self, now: Time, flow: &FlowInfo, st: &mut PtcpFlow, qd: Time) {
        self.on_sample(now, flow, st, Some(qd));
    }

    /// As [`Self::on_queuing_delay`] for a packet whose queuing delay may be unknown (`None`:
    /// a flow's first packet, Algorithm 1). Such a packet counts as below `target` in
    /// Algorithm 2 but, carrying no evidence of an empty path, does not grow the window.
    pub fn on_sample(&self, now: Time, flow: &FlowInfo, st: &mut PtcpFlow, qd: Option<Time>) {
        let p = &self.p;
        if qd.is_some_and(|q| q >= p.target) {
            st.packet_num += 1;
        }
        st.packet_count += 1;
        let mss = p.mss as f64;
        let cap = (ACK_RWND_MAX_SEGS * p.mss) as f64;
        if p.increase_on == IncreaseOn::Packet && st.packet_num == 0 && qd.is_some() {
            st.rwnd = (st.rwnd + mss).min(cap);
        }
        if st.packet_count < p.interval {
            return;
        }
        let f = st.packet_num as f64 / p.interval as f64;
        st.alpha = (1.0 - p.g) * st.alpha + p.g * f;
        st.packet_num = 0;
        st.packet_count = 0;
        st.updates += 1;
        let decrease = match p.decrease_on {
            DecreaseOn::Congestion => f > 0.0,
            DecreaseOn::Alpha => st.alpha > 0.0,
        };
        if decrease {
            let ps = self.p_sum(now, flow, st);
            let keep = match p.rwnd_rule {
                RwndRule::Text => 1.0 - st.alpha.powf(ps) / 2.0,
                RwndRule::Literal => 1.0 - st.alpha.powf(ps / 2.0),
            };
            st.rwnd *= keep;
        } else if p.increase_on == IncreaseOn::Interval {
            st.rwnd += mss;
        }
        st.rwnd = st.rwnd.clamp(mss, cap);
    }
}

impl RcvPolicy for PtcpPolicy {
    type Flow = PtcpFlow;
    fn name(&self) -> &'static str {
        "ptcp"
    }
    fn new_flow(&mut self, _now: Time, flow: &FlowInfo) -> PtcpFlow {
        PtcpFlow {
            bytes: 0,
            owd: if self.p.base_from_rtt { OneWayDelay::with_base(flow.base_rtt / 2) } else { OneWayDelay::default() },
            packet_count: 0,
            packet_num: 0,
            alpha: self.p.init_alpha,
            rwnd: self.p.init_rwnd as f64,
            last_delay: Time::ZERO,
            updates: 0,
        }
    }
    fn on_data(&mut self, now: Time, _host: NodeId, flow: &FlowInfo, st: &mut PtcpFlow, pkt: &Packet) {
        st.bytes += pkt.payload as u64;
        let qd = st.owd.sample(now, pkt.ts);
        self.on_sample(now, flow, st, qd);
    }
    fn ack_verdict(&mut self, now: Time, flow: &FlowInfo, st: &mut PtcpFlow) -> AckVerdict {
        let delay = if self.p.ack_delay && st.alpha > 0.0 {
            st.owd.queuing.mul_f64(st.alpha.powf(self.p_sum(now, flow, st)))
        } else {
            Time::ZERO
        };
        st.last_delay = delay;
        AckVerdict { rwnd: Some(st.rwnd as u64), delay }
    }
    /// The ACK-delay log's columns: Eq. 10's inputs.
    fn state_names(&self) -> &'static [&'static str] {
        &["alpha", "p_sum", "queuing_us"]
    }
    fn explain(&self, now: Time, flow: &FlowInfo, st: &PtcpFlow) -> [f64; ACK_STATE_MAX] {
        [st.alpha, self.p_sum(now, flow, st), st.owd.queuing.as_us_f64()]
    }
}

/// The `ptcp` transport.
pub type Ptcp = RcvTcp<PtcpPolicy>;

/// Build the `ptcp` transport from its `[transport]` table (without `protocol`).
pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Ptcp, PtcpConfigError> {
    let (own, mut tcp) = split_table(cfg, "ptcp", FIELDS)?;
    let o: PtcpOwn = crate::config::from_table(&own, "transport")?;
    let bad = |field: &str, v: String, fix: &str| ExtConfigError::OutOfRange {
        field: field.into(),
        value: v,
        fix: fix.into(),
    };
    if let Some(t) = tcp.as_object_mut() {
        t.entry("init_cwnd").or_insert(serde_json::json!(1));
    }
    let tp = TcpConfig::parse(&tcp)?.resolve(net, false)?;
    if tp.ecn {
        return Err(bad("ecn", "true".into(), "PTCP's sender is plain TCP; remove transport.ecn"));
    }
    let setting = o.setting.unwrap_or_else(|| Setting::for_rate(net.max_host_rate));
    let mut p = PtcpParams::table1(setting, tp.mss);
    if let Some(t) = o.target {
        if t == Time::ZERO {
            return Err(bad("target", "\"0ps\"".into(), "must be > 0 (Table 1: \"120us\" at 1G, \"100us\" at 10G)"));
        }
        p.target = t;
    }
    if let Some(i) = o.interval {
        if i == 0 {
            return Err(bad("interval", "0".into(), "must be at least 1 packet (Table 1: 20 at 1G, 65 at 10G)"));
        }
        p.interval = i;
    }
    if let Some(g) = o.g {
        if !(g > 0.0 && g <= 1.0) {
            return Err(bad("g", g.to_string(), "must be in (0, 1] (PTCP: 0.0625)"));
        }
        p.g = g;
    }
    if let Some(a) = o.init_alpha {
        if !(0.0..=1.0).contains(&a) {
            return Err(bad("init_alpha", a.to_string(), "must be in [0, 1]"));
        }
        p.init_alpha = a;
    }
    if let Some(w) = o.init_rwnd {
        if w == 0 || w > ACK_RWND_MAX_SEGS {
            return Err(bad("init_rwnd", w.to_string(), "must be 1 to 2047 packets (Table 1: 1)"));
        }
        p.init_rwnd = w * tp.mss;
    }
    p.rwnd_rule = o.rwnd_rule.unwrap_or(p.rwnd_rule);
    p.decrease_on = o.decrease_on.unwrap_or(p.decrease_on);
    p.increase_on = o.increase_on.unwrap_or(p.increase_on);
    p.p1_rule = o.p1_rule.unwrap_or(p.p1_rule);
    p.ack_delay = o.ack_delay.unwrap_or(p.ack_delay);
    p.base_from_rtt = o.base_from_rtt.unwrap_or(p.base_from_rtt);
    Ok(RcvTcp::new(Tcp::new(tp), PtcpPolicy { p }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::FlowId;
    use crate::transport::tcp::ack_rwnd;
    use crate::transport::{Actions, Ctx, Transport};
    use crate::units::Bytes;
    use serde_json::json;

    const MSS: u64 = 1460;

    fn flow(size: u64, deadline: Option<Time>) -> FlowInfo {
        FlowInfo {
            id: 0,
            src: 0,
            dst: 1,
            size: Bytes(size),
            start: Time::ZERO,
            base_rtt: Time::us(100),
            path_rate: Rate::gbps(1),
            host_rate: Rate::gbps(1),
            deadline,
            background: false,
        }
    }

    /// One transport callback on `host` at `now`; the actions it produced.
    fn call_at(t: &mut Ptcp, flows: &[FlowInfo], now: Time, host: NodeId, f: &dyn Fn(&mut Ptcp, &mut Ctx)) -> Actions {
        let mut out = Actions::new();
        f(t, &mut Ctx { now, host, flows, out: &mut out });
        out
    }

    fn policy() -> PtcpPolicy {
        PtcpPolicy { p: PtcpParams::table1(Setting::OneG, MSS) }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn p1_small_medium_large_classes_hand_computed() {
        let p = PtcpParams::table1(Setting::OneG, MSS);
        assert_eq!(p.p1(0), 1.0);
        assert_eq!(p.p1(10_000), 1.0, "10 KB is still small");
        // S(0.1) = 1 / (15.5 - 14.5 e^-0.1) = 1 / (15.5 - 13.1201) = 0.420168...
        assert!(close(p.p1(100_000), 1.0 / (15.5 - 14.5 * (-0.1f64).exp())));
        assert!((p.p1(100_000) - 0.4202).abs() < 1e-4);
        assert!((p.p1(10_001) - 0.8739).abs() < 1e-3, "S(0.01) = 0.874");
        // S(1) = 0.0980 < 0.1: clamped to 0.1 by default, literal keeps it.
        assert_eq!(p.p1(1_000_000), 0.1);
        let lit = PtcpParams { p1_rule: P1Rule::Literal, ..p };
        assert!((lit.p1(1_000_000) - 0.09837).abs() < 1e-5);
        assert!((lit.p1(10_000_000) - 0.0645).abs() < 1e-4, "S(10) = 0.0645, not 0.1");
        assert_eq!(p.p1(10_000_001), 0.1);
        // Monotone non-increasing over the whole range (clamped).
        let mut last = 1.0;
        for b in (0..12_000_000).step_by(50_000) {
            assert!(p.p1(b) <= last + 1e-12);
            last = p.p1(b);
        }
    }

    #[test]
    fn p2_deadline_priority_hand_computed() {
        assert_eq!(p2(Time::ms(1), Time::ZERO, None), 0.0, "no deadline");
        // At the start Tc = D: 1.58 e^-1 - 0.58 = 0.001251...
        assert!(close(p2(Time::ZERO, Time::ZERO, Some(Time::ms(10))), 1.58 * (-1f64).exp() - 0.58));
        // Half way: Tc/D = 0.5: 1.58 e^-0.5 - 0.58 = 0.37831...
        assert!((p2(Time::ms(5), Time::ZERO, Some(Time::ms(10))) - 0.378318).abs() < 1e-6);
        // At and past the deadline Tc = 0: P2 = 1.
        assert!(close(p2(Time::ms(10), Time::ZERO, Some(Time::ms(10))), 1.0));
        assert!(close(p2(Time::ms(50), Time::ZERO, Some(Time::ms(10))), 1.0));
        // P_sum takes the larger: a 1 MB flow (P1 = 0.1) half way to its deadline.
        let pol = policy();
        let f = flow(2_000_000, Some(Time::ms(10)));
        let st = PtcpFlow { bytes: 1_000_000, ..pol.clone().new_flow(Time::ZERO, &f) };
        assert!((pol.p_sum(Time::ms(5), &f, &st) - 0.378318).abs() < 1e-6);
        assert_eq!(pol.p_sum(Time::ZERO, &flow(2_000_000, None), &st), 0.1);
    }

    /// Algorithm 2: alpha moves only at the end of an interval, and only packets at or above
    /// Target count.
    #[test]
    fn alpha_interval_end_counts_only_packets_above_target() {
        let pol = policy();
        let f = flow(1_000_000, None);
        let mut st = pol.clone().new_flow(Time::ZERO, &f);
        // 19 packets: no update yet, whatever their delay.
        for i in 0..19 {
            let qd = if i < 5 { Time::us(120) } else { Time::us(119) };
            pol.on_queuing_delay(Time::ZERO, &f, &mut st, qd);
        }
        assert_eq!((st.alpha, st.packet_num, st.packet_count), (0.0, 5, 19));
        pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::us(500));
        // F = 6/20 = 0.3; alpha = 0.0625 x 0.3 = 0.01875.
        assert!(close(st.alpha, 0.01875));
        assert_eq!((st.packet_num, st.packet_count, st.updates), (0, 0, 1));
        // A clean interval: alpha decays by (1 - g), never back to 0.
        for _ in 0..20 {
            pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::us(119));
        }
        assert!(close(st.alpha, 0.01875 * 0.9375));
    }

    /// Eq. 9 as the text reads it: a congested interval cuts by alpha^P / 2, a clean one adds
    /// one MSS (`increase_on = "interval"`).
    #[test]
    fn rwnd_interval_end_text_rule_cut_and_increase() {
        let mut pol = policy();
        pol.p.increase_on = IncreaseOn::Interval;
        pol.p.init_alpha = 0.5;
        let f = flow(5_000, None); // P1 = 1
        let mut st = pol.clone().new_flow(Time::ZERO, &f);
        st.rwnd = 10.0 * MSS as f64;
        st.bytes = 5_000;
        for _ in 0..20 {
            pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::us(200));
        }
        // F = 1: alpha = 0.9375 x 0.5 + 0.0625 = 0.53125; P_sum = 1: rwnd x (1 - 0.265625).
        assert!(close(st.alpha, 0.53125));
        assert!(close(st.rwnd, 10.0 * MSS as f64 * (1.0 - 0.53125 / 2.0)));
        let before = st.rwnd;
        for _ in 0..20 {
            pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::ZERO);
        }
        assert!(close(st.rwnd, before + MSS as f64), "clean interval: + 1 MSS although alpha > 0");
        // A low-priority flow (P_sum = 0.1) at the same alpha cuts far more.
        let mut big = PtcpFlow { bytes: 20_000_000, rwnd: 10.0 * MSS as f64, alpha: 0.5, ..st.clone() };
        for _ in 0..20 {
            pol.on_queuing_delay(Time::ZERO, &f, &mut big, Time::us(200));
        }
        assert!(close(big.rwnd, 10.0 * MSS as f64 * (1.0 - 0.53125f64.powf(0.1) / 2.0)));
        assert!(big.rwnd < st.rwnd);
    }

    #[test]
    fn rwnd_interval_end_literal_rules_and_floor() {
        let mut pol = policy();
        pol.p.increase_on = IncreaseOn::Interval;
        pol.p.rwnd_rule = RwndRule::Literal;
        pol.p.decrease_on = DecreaseOn::Alpha;
        pol.p.init_alpha = 1.0;
        let f = flow(5_000, None);
        let mut st = pol.clone().new_flow(Time::ZERO, &f);
        st.rwnd = 4.0 * MSS as f64;
        // A clean interval still decreases under the literal condition (alpha > 0):
        // alpha = 0.9375, rwnd x (1 - 0.9375^0.5) = 4 MSS x 0.03175 -> floor 1 MSS.
        for _ in 0..20 {
            pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::ZERO);
        }
        assert!(close(st.alpha, 0.9375));
        assert_eq!(st.rwnd, MSS as f64, "floored at 1 MSS");
        // With the text's condition, a clean interval grows the window.
        pol.p.decrease_on = DecreaseOn::Congestion;
        for _ in 0..20 {
            pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::ZERO);
        }
        assert_eq!(st.rwnd, 2.0 * MSS as f64);
    }

    /// The default increase: one MSS per packet while the running interval is clean; the
    /// first packet at or above Target stops the growth, and the interval's end cuts.
    #[test]
    fn rwnd_clean_packets_add_one_mss_each_until_a_congested_packet() {
        let pol = policy();
        assert_eq!(pol.p.increase_on, IncreaseOn::Packet, "default");
        let f = flow(5_000, None);
        let mut st = pol.clone().new_flow(Time::ZERO, &f);
        assert_eq!(st.rwnd, MSS as f64, "Table 1: 1 MSS");
        // 5 clean packets: 1 + 5 MSS, alpha untouched (mid-interval).
        for _ in 0..5 {
            pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::us(119));
        }
        assert_eq!((st.rwnd, st.alpha), (6.0 * MSS as f64, 0.0));
        // A packet at Target: no growth from it on in this interval.
        pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::us(120));
        for _ in 0..13 {
            pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::ZERO);
        }
        assert_eq!((st.rwnd, st.packet_count), (6.0 * MSS as f64, 19));
        // The 20th packet ends the interval: F = 1/20, alpha = 0.0625 x 0.05 = 0.003125,
        // P_sum = 1: rwnd x (1 - 0.003125 / 2).
        pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::ZERO);
        assert!(close(st.alpha, 0.003125));
        assert!(close(st.rwnd, 6.0 * MSS as f64 * (1.0 - 0.003125 / 2.0)));
        // The next interval is clean again: every packet adds one MSS, the end adds none.
        let before = st.rwnd;
        for _ in 0..20 {
            pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::ZERO);
        }
        assert!(close(st.rwnd, before + 20.0 * MSS as f64));
        // Capped at the largest advertisable window.
        st.rwnd = (ACK_RWND_MAX_SEGS * MSS) as f64;
        pol.on_queuing_delay(Time::ZERO, &f, &mut st, Time::ZERO);
        assert_eq!(st.rwnd, (ACK_RWND_MAX_SEGS * MSS) as f64);
    }

    /// Eq. 10 through the transport: an ACK is held for alpha^P_sum x queuing delay and
    /// advertises the window.
    #[test]
    fn ack_on_data_is_held_for_alpha_pow_psum_times_queuing_delay() {
        let net = NetInfo::for_tests(1500, Time::us(100), Rate::gbps(1));
        let mut t = from_config(&json!({"init_alpha": 0.25}), &net).unwrap();
        assert_eq!(t.name(), "ptcp");
        let flows = vec![flow(20_000_000, None)];
        let call =
            |t: &mut Ptcp, now: Time, host: NodeId, f: &dyn Fn(&mut Ptcp, &mut Ctx)| call_at(t, &flows, now, host, f);
        let w = call(&mut t, Time::ZERO, 0, &|t, c| t.start_flow(c, 0 as FlowId)).sends;
        assert_eq!(w.len(), 1, "initial window 1 MSS");
        // First packet: initialises only, no delay sample, so no growth: window 1 MSS.
        let a = call(&mut t, Time::us(50), 1, &|t, c| t.on_packet(c, &w[0]));
        assert_eq!(a.sends.len(), 1);
        assert_eq!(ack_rwnd(&a.sends[0], MSS), Some(MSS));
        // The base starts at half the base RTT, 50 us. A second packet sent at 100 us
        // arriving at 150 us: no queuing; then one sent at 200 us arriving at 290 us: queuing
        // 40 us. P_sum = 1 (b <= 10 KB): delay 0.25 x 40 us = 10 us.
        let mut p2 = w[0];
        p2.seq = MSS;
        p2.ts = Time::us(100);
        let a = call(&mut t, Time::us(150), 1, &|t, c| t.on_packet(c, &p2));
        assert_eq!(a.sends.len(), 1, "no queuing: not held");
        assert_eq!(ack_rwnd(&a.sends[0], MSS), Some(2 * MSS), "a clean sample grows the window");
        let mut p3 = w[0];
        p3.seq = 2 * MSS;
        p3.ts = Time::us(200);
        let a = call(&mut t, Time::us(290), 1, &|t, c| t.on_packet(c, &p3));
        assert!(a.sends.is_empty());
        assert_eq!(a.timers[0].0, Time::us(300));
        assert_eq!(t.flow_state(0).unwrap().last_delay, Time::us(10));
        assert_eq!(t.held_acks(0), 1);
    }

    /// The ACK-delay log: state alpha = 0.25 with a standing base of 50 us; event: data
    /// packets whose queuing delays are chosen by hand. Each row's delay is Eq. 10,
    /// alpha^P_sum x queuing delay, computed here from the packets alone, and the row carries
    /// those three inputs; an ACK made while an earlier one is held leaves after it.
    #[test]
    fn ack_delay_log_rows_hold_eq10_of_hand_built_queuing_delays() {
        let net = NetInfo::for_tests(1500, Time::us(100), Rate::gbps(1));
        let mut t = from_config(&json!({"init_alpha": 0.25}), &net).unwrap();
        assert!(t.take_ack_delays().is_none(), "nothing recorded unless asked");
        assert!(t.record_ack_delays(100));
        let flows = vec![flow(20_000_000, None)];
        let call =
            |t: &mut Ptcp, now: Time, host: NodeId, f: &dyn Fn(&mut Ptcp, &mut Ctx)| call_at(t, &flows, now, host, f);
        let w = call(&mut t, Time::ZERO, 0, &|t, c| t.start_flow(c, 0 as FlowId)).sends;
        // Packet k sent at k x 100 us arrives 50 us later plus its queuing delay q[k].
        let q = [0u64, 0, 0, 0, 0, 0, 0, 90, 10];
        let mut made = Vec::new();
        for (k, qk) in q.iter().enumerate() {
            let mut p = w[0];
            p.seq = k as u64 * MSS;
            p.ts = Time::us(100 * k as u64);
            let now = p.ts + Time::us(50 + qk);
            made.push(now.0);
            call(&mut t, now, 1, &|t, c| t.on_packet(c, &p));
        }
        let log = t.take_ack_delays().unwrap();
        assert_eq!(log.state_names, ["alpha", "p_sum", "queuing_us"]);
        assert_eq!(log.len(), q.len(), "one row per ACK");
        assert_eq!(log.made_ps, made);
        assert_eq!(log.lost, 0);
        for (k, qk) in q.iter().enumerate() {
            // b = (k + 1) x 1460 B: P1 = 1 up to 10 KB, then S(b / 1 MB) (Eq. 4).
            let b = (k as u64 + 1) * MSS;
            let p_sum = if b <= 10_000 { 1.0 } else { 1.0 / (15.5 - 14.5 * (-(b as f64) / 1e6).exp()) };
            let want = (*qk as f64 * 1e6 * 0.25f64.powf(p_sum)).round() as u64;
            assert_eq!(log.delay_ps[k], want, "row {k}");
            assert!(close(log.state[0][k], 0.25));
            assert!(close(log.state[1][k], p_sum), "row {k}: p_sum {}", log.state[1][k]);
            assert!(close(log.state[2][k], *qk as f64), "row {k}");
            assert_eq!((log.flow[k], log.host[k], log.ack[k]), (0, 1, b));
            assert!(log.rwnd[k] >= MSS && log.rwnd[k].is_multiple_of(MSS), "whole segments as the ACK carries them");
        }
        assert!(log.state[1][7] < 1.0, "the eighth packet passes 10 KB: P_sum below 1");
        // Row 7 (made at 840 us) is held its own delay, about 27 us; row 8 (made at 860 us,
        // about 3 us of delay) waits for it: ACKs leave in order.
        assert_eq!(log.release_ps[7] - log.made_ps[7], log.delay_ps[7]);
        assert!(log.made_ps[8] + log.delay_ps[8] < log.release_ps[7]);
        assert_eq!(log.release_ps[8], log.release_ps[7]);
        for k in 0..7 {
            assert_eq!((log.delay_ps[k], log.release_ps[k]), (0, log.made_ps[k]), "no queuing: sent at once");
        }
    }

    #[test]
    fn config_table1_defaults_and_errors_name_the_field() {
        let n1 = NetInfo::for_tests(1500, Time::us(100), Rate::gbps(1));
        let n10 = NetInfo::for_tests(1500, Time::us(100), Rate::gbps(10));
        let t = from_config(&json!({}), &n1).unwrap();
        let p = t.policy().p;
        assert_eq!((p.target, p.interval, p.g, p.init_rwnd), (Time::us(120), 20, 0.0625, MSS));
        assert_eq!(t.tcp().params().init_cwnd, MSS, "Table 1: initial window 1 MSS");
        let p = from_config(&serde_json::Value::Null, &n10).unwrap().policy().p;
        assert_eq!((p.target, p.interval), (Time::us(100), 65));
        let p = from_config(&json!({"setting": "1G", "interval": 7, "init_cwnd": 2}), &n10).unwrap();
        assert_eq!((p.policy().p.target, p.policy().p.interval), (Time::us(120), 7));
        assert_eq!(p.tcp().params().init_cwnd, 2 * MSS);
        for (cfg, field) in [
            (json!({"target": "0us"}), "transport.target"),
            (json!({"target": 5}), "transport.target"),
            (json!({"interval": 0}), "transport.interval"),
            (json!({"g": 0}), "transport.g"),
            (json!({"init_alpha": 2}), "transport.init_alpha"),
            (json!({"init_rwnd": 0}), "transport.init_rwnd"),
            (json!({"rwnd_rule": "other"}), "transport.rwnd_rule"),
            (json!({"increase_on": "rtt"}), "transport.increase_on"),
            (json!({"setting": "40G"}), "transport.setting"),
            (json!({"ecn": true}), "transport.ecn"),
            (json!({"targte": "1us"}), "transport.targte"),
        ] {
            let e = from_config(&cfg, &n1).err().unwrap_or_else(|| panic!("{cfg} accepted"));
            assert_eq!(e.field(), field, "{cfg}: {e}");
        }
    }
}
