//! Pauses: periods during which a flow's source does not answer its receiver (`[[pause]]`).
//!
//! Two situations of the RPO paper (§II-C, Fig. 2 and 12: ON/OFF flows; §VIII-B, Fig. 19:
//! unresponsive senders) are one mechanism here: while a flow is paused, its source does not
//! act on what its receiver sends it for that flow (grants, tokens, credits, pulls, RESENDs,
//! ACKs). A receiver-driven sender sends only what its receiver asks for (after the first
//! RTT), so it sends nothing new for the flow: the flow is OFF, or its sender is busy
//! elsewhere. Two readings of "does not act on", chosen per rule by `mode`:
//! - `"defer"` (default): the source holds those packets and hands them to its transport, in
//!   arrival order, the moment the pause ends: a busy sender (Homa's "unresponsive sender")
//!   or an application that has no data for a while acts on its grants late, and a grant that
//!   expires meanwhile (pHost's tokens) expires;
//! - `"ignore"`: the source discards them; the receiver's own recovery (re-sent grants,
//!   RESENDs, token timeouts) brings the flow back after the pause.
//!
//! Nothing else changes: the source's own timers keep running and what they send goes out (a
//! sender timeout's retransmission, pHost's RTS). So how fast each transport resumes, and
//! what its receiver does with the bandwidth meanwhile, is the transport's own behaviour;
//! for RPO that is the point of Fig. 2, 12 and 19.
//!
//! For window-based transports a pause loses their ACKs, which their loss recovery treats
//! as losses; it is meaningful mainly for receiver-driven transports.
//!
//! # Fields (one `[[pause]]` table per rule; any number of rules)
//! Exactly one selector:
//! - `flows`: flow ids (positions in the run's flow table, which is sorted by start time;
//!   for an explicit flow list that is its order by start);
//! - `hosts`: source hosts: every flow they send is paused;
//! - `fraction`: each foreground flow independently with this probability (0 to 1; 0
//!   pauses nothing, convenient in sweeps);
//! - `host_fraction`: this fraction (0 to 1, rounded to the nearest whole number of hosts)
//!   of the hosts that send foreground flows, drawn at random; every flow they send is
//!   paused.
//!
//! The schedule, as offsets from each selected flow's own start time:
//! - `start` (default 0): when the first pause begins;
//! - `off` (required, > 0): how long each pause lasts;
//! - `on` (optional, > 0): the time between the end of a pause and the start of the next;
//!   without it the flow pauses once;
//! - `mode`: `"defer"` (default) or `"ignore"`, above.
//!
//! The wrapper's own timer (the end of a deferring pause) uses tokens with bit 63 set, which
//! [`crate::transport::token`] never produces for flow and host ids below 2^31.
//!
//! Random choices draw from the scenario seed's stream [`crate::rng::streams::PAUSE`], so
//! adding pauses never changes the flows the workload generates.

use crate::config::{from_table, FieldError};
use crate::packet::{FlowId, Packet};
use crate::rng::Rng;
use crate::transport::{Ctx, FlowStats, Transport};
use crate::units::Time;
use crate::workload::FlowSpec;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One `[[pause]]` table.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PauseRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_fraction: Option<f64>,
    #[serde(default)]
    pub start: Time,
    pub off: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<Time>,
    #[serde(default)]
    pub mode: PauseMode,
}

/// What a paused source does with the packets its receiver sends it.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum PauseMode {
    /// Hold them and hand them to the transport when the pause ends.
    #[default]
    Defer,
    /// Discard them.
    Ignore,
}

/// One flow's pause schedule (offsets from the flow's start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: Time,
    pub off: Time,
    /// `off + on`, or `None` for a single pause.
    pub period: Option<Time>,
    pub mode: PauseMode,
}

impl Window {
    /// Whether a flow that started at `flow_start` is paused at `now`.
    #[inline]
    pub fn covers(&self, flow_start: Time, now: Time) -> bool {
        let Some(t) = now.0.checked_sub(flow_start.0).and_then(|t| t.checked_sub(self.start.0)) else {
            return false;
        };
        match self.period {
            None => t < self.off.0,
            Some(p) => t % p.0 < self.off.0,
        }
    }

    /// When the pause covering `now` ends (`now` must be covered).
    pub fn end(&self, flow_start: Time, now: Time) -> Time {
        let begin = flow_start.0.saturating_add(self.start.0);
        let t = now.0.saturating_sub(begin);
        let cycle = match self.period {
            None => 0,
            Some(p) => t - t % p.0,
        };
        Time(begin.saturating_add(cycle).saturating_add(self.off.0))
    }
}

/// Token bit of the wrapper's own timers.
const DEFER_BIT: u64 = 1 << 63;

/// Parse and check the scenario's `pause` array (`None` or an empty array: no pauses).
/// `num_hosts` bounds `hosts`; `num_flows` (when the scenario's flow count is needed, i.e.
/// some rule names `flows`) bounds `flows`.
pub fn parse(
    raw: Option<&serde_json::Value>,
    num_hosts: u32,
    num_flows: &mut dyn FnMut() -> usize,
) -> Result<Vec<PauseRule>, FieldError> {
    let Some(v) = raw else { return Ok(Vec::new()) };
    let arr = v.as_array().ok_or_else(|| {
        FieldError::invalid("pause", "must be an array of tables", "write [[pause]] tables (docs/scenario.md)")
    })?;
    let mut rules = Vec::with_capacity(arr.len());
    for (i, t) in arr.iter().enumerate() {
        let at = format!("pause[{i}]");
        let r: PauseRule = from_table(t, &at)?;
        let selectors = [r.flows.is_some(), r.hosts.is_some(), r.fraction.is_some(), r.host_fraction.is_some()];
        if selectors.iter().filter(|&&s| s).count() != 1 {
            return Err(FieldError::invalid(
                at,
                "needs exactly one of flows, hosts, fraction, host_fraction",
                "name the flows, the source hosts, or a fraction of flows or of sending hosts",
            ));
        }
        if r.off == Time::ZERO {
            return Err(FieldError::invalid(format!("{at}.off"), "must be > 0", "give a duration such as \"100us\""));
        }
        if r.on == Some(Time::ZERO) {
            return Err(FieldError::invalid(
                format!("{at}.on"),
                "must be > 0",
                "give the time between pauses, or leave it out for a single pause",
            ));
        }
        if let Some(on) = r.on {
            if r.off.0.checked_add(on.0).is_none() {
                return Err(FieldError::invalid(format!("{at}.on"), "off + on is too long", "use shorter periods"));
            }
        }
        for (name, f) in [("fraction", r.fraction), ("host_fraction", r.host_fraction)] {
            if let Some(f) = f {
                if !(0.0..=1.0).contains(&f) {
                    return Err(FieldError::invalid(
                        format!("{at}.{name}"),
                        format!("must lie in [0, 1], got {f}"),
                        "give a probability such as 0.5",
                    ));
                }
            }
        }
        if let Some(h) = &r.hosts {
            if let Some(bad) = h.iter().find(|&&h| h >= num_hosts) {
                return Err(FieldError::invalid(
                    format!("{at}.hosts"),
                    format!("host {bad} does not exist (there are {num_hosts})"),
                    "list host ids from 0 to hosts - 1",
                ));
            }
        }
        if let Some(fl) = &r.flows {
            if fl.is_empty() {
                return Err(FieldError::invalid(format!("{at}.flows"), "is empty", "list at least one flow id"));
            }
            let n = num_flows();
            if let Some(bad) = fl.iter().find(|&&f| f as usize >= n) {
                return Err(FieldError::invalid(
                    format!("{at}.flows"),
                    format!("flow {bad} does not exist (the workload has {n} flows)"),
                    "list flow ids from 0 to flows - 1 (the flow table's order, by start time)",
                ));
            }
        }
        rules.push(r);
    }
    Ok(rules)
}

/// Each flow's pause windows under `rules` (empty for a flow no rule selects).
pub fn resolve(rules: &[PauseRule], flows: &[FlowSpec], rng: &mut Rng) -> Vec<Vec<Window>> {
    let mut out = vec![Vec::new(); flows.len()];
    for r in rules {
        let w = Window { start: r.start, off: r.off, period: r.on.map(|on| Time(r.off.0 + on.0)), mode: r.mode };
        let mut pick = |f: usize| out[f].push(w);
        if let Some(ids) = &r.flows {
            for &f in ids {
                if (f as usize) < flows.len() {
                    pick(f as usize);
                }
            }
        } else if let Some(hosts) = &r.hosts {
            for (f, spec) in flows.iter().enumerate() {
                if hosts.contains(&spec.src) {
                    pick(f);
                }
            }
        } else if let Some(p) = r.fraction {
            for (f, spec) in flows.iter().enumerate() {
                if !spec.background && rng.f64() < p {
                    pick(f);
                }
            }
        } else if let Some(p) = r.host_fraction {
            let mut senders: Vec<u32> = flows.iter().filter(|s| !s.background).map(|s| s.src).collect();
            senders.sort_unstable();
            senders.dedup();
            let k = ((p * senders.len() as f64).round() as usize).min(senders.len());
            // Partial Fisher-Yates: the first k of a random permutation.
            for i in 0..k {
                let j = i + rng.below((senders.len() - i) as u64) as usize;
                senders.swap(i, j);
            }
            let chosen = &mut senders[..k];
            chosen.sort_unstable();
            for (f, spec) in flows.iter().enumerate() {
                if chosen.binary_search(&spec.src).is_ok() {
                    pick(f);
                }
            }
        }
    }
    out
}

/// Wraps a run's transport: a packet of a paused flow that reaches the flow's source host
/// is held (and handed over when the pause ends) or discarded, before the transport sees
/// it. Runs without pauses are not wrapped.
pub struct Paused {
    inner: Box<dyn Transport>,
    windows: Vec<Vec<Window>>,
    /// Packets discarded so far, per flow.
    ignored: Vec<u64>,
    /// Packets held for the end of a deferring pause, per flow (allocated on first use).
    held: Vec<VecDeque<Packet>>,
    /// A flow's end-of-pause timer is armed.
    armed: Vec<bool>,
}

impl Paused {
    pub fn new(inner: Box<dyn Transport>, windows: Vec<Vec<Window>>) -> Paused {
        let n = windows.len();
        Paused { inner, windows, ignored: vec![0; n], held: vec![VecDeque::new(); n], armed: vec![false; n] }
    }

    /// The first window of flow `f` (started at `start`) that covers `now`.
    pub fn pause_at(&self, f: FlowId, start: Time, now: Time) -> Option<Window> {
        self.windows.get(f as usize)?.iter().find(|w| w.covers(start, now)).copied()
    }

    /// Whether flow `f` (started at `start`) is paused at `now`.
    pub fn paused(&self, f: FlowId, start: Time, now: Time) -> bool {
        self.pause_at(f, start, now).is_some()
    }

    /// When every pause of flow `f` covering `now` has ended (the latest end among them;
    /// overlapping rules are followed until none covers).
    fn resume_at(&self, f: FlowId, start: Time, now: Time) -> Time {
        let mut t = now;
        while let Some(e) =
            self.windows[f as usize].iter().filter(|w| w.covers(start, t)).map(|w| w.end(start, t)).max()
        {
            if e <= t {
                break;
            }
            t = e;
        }
        t
    }

    /// Packets of flow `f` its paused source discarded.
    pub fn ignored(&self, f: FlowId) -> u64 {
        self.ignored.get(f as usize).copied().unwrap_or(0)
    }
}

impl Transport for Paused {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.start_flow(ctx, flow);
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if let Some(fl) = ctx.flows.get(pkt.flow as usize) {
            if fl.src == ctx.host {
                let f = pkt.flow as usize;
                match self.pause_at(pkt.flow, fl.start, ctx.now).map(|w| w.mode) {
                    Some(PauseMode::Ignore) => {
                        self.ignored[f] += 1;
                        return;
                    }
                    Some(PauseMode::Defer) => {
                        self.held[f].push_back(*pkt);
                        if !self.armed[f] {
                            self.armed[f] = true;
                            let at = self.resume_at(pkt.flow, fl.start, ctx.now);
                            ctx.out.timer(at, DEFER_BIT | pkt.flow as u64);
                        }
                        return;
                    }
                    None => {}
                }
            }
        }
        self.inner.on_packet(ctx, pkt);
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        if token & DEFER_BIT == 0 {
            self.inner.on_timer(ctx, token);
            return;
        }
        let f = (token & 0xFFFF_FFFF) as usize;
        let Some(start) = ctx.flows.get(f).map(|fl| fl.start) else { return };
        if self.paused(f as FlowId, start, ctx.now) {
            // Another pause began at this instant: wait for it too.
            let at = self.resume_at(f as FlowId, start, ctx.now);
            ctx.out.timer(at, token);
            return;
        }
        self.armed[f] = false;
        while let Some(p) = self.held[f].pop_front() {
            self.inner.on_packet(ctx, &p);
        }
    }
    fn on_nic_idle(&mut self, ctx: &mut Ctx) {
        self.inner.on_nic_idle(ctx);
    }
    fn wants_nic_idle(&self) -> bool {
        self.inner.wants_nic_idle()
    }
    fn on_tx_complete(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.inner.on_tx_complete(ctx, pkt);
    }
    fn wants_tx_complete(&self) -> bool {
        self.inner.wants_tx_complete()
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.inner.flow_stats(flow)
    }
    fn supports_append(&self) -> bool {
        self.inner.supports_append()
    }
    fn keep_open(&mut self, flow: FlowId) {
        self.inner.keep_open(flow)
    }
    fn append(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.append(ctx, flow)
    }
    fn host_reorder_max_bytes(&self, host: crate::packet::NodeId) -> u64 {
        self.inner.host_reorder_max_bytes(host)
    }
    // Switch-side agents (PASE's arbitrators) are not sources: their messages pass unpaused.
    fn wants_switch_packets(&self) -> bool {
        self.inner.wants_switch_packets()
    }
    fn set_flow_paths(&mut self, paths: crate::transport::FlowPaths) {
        self.inner.set_flow_paths(paths)
    }
    fn on_switch_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.inner.on_switch_packet(ctx, pkt)
    }
    fn arb_msgs(&self, port: u32) -> u64 {
        self.inner.arb_msgs(port)
    }
    fn arb_msgs_sent(&self) -> u64 {
        self.inner.arb_msgs_sent()
    }
    fn on_flow_abandoned(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.on_flow_abandoned(ctx, flow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;

    fn spec(src: u32, start: Time) -> FlowSpec {
        FlowSpec { src, dst: 9, size: Bytes(1000), start, deadline: None, background: false }
    }

    #[test]
    fn window_single_pause_covers_start_to_start_plus_off() {
        let w = Window { start: Time::us(10), off: Time::us(5), period: None, mode: PauseMode::Defer };
        assert_eq!(w.end(Time::us(100), Time::us(112)), Time::us(115));
        let s = Time::us(100);
        assert!(!w.covers(s, Time::us(109)));
        assert!(w.covers(s, Time::us(110)));
        assert!(w.covers(s, Time(Time::us(115).0 - 1)));
        assert!(!w.covers(s, Time::us(115)));
        assert!(!w.covers(s, Time::us(500)));
        assert!(!w.covers(s, Time::us(50)), "before the flow started");
    }

    #[test]
    fn window_periodic_repeats_every_off_plus_on() {
        // OFF 2 us, ON 3 us from the flow's start: paused in [0,2), [5,7), [10,12) ...
        let w = Window { start: Time::ZERO, off: Time::us(2), period: Some(Time::us(5)), mode: PauseMode::Ignore };
        assert_eq!(w.end(Time::ZERO, Time::us(6)), Time::us(7));
        assert_eq!(w.end(Time::ZERO, Time::us(10)), Time::us(12));
        let paused: Vec<u64> = (0..12).filter(|&t| w.covers(Time::ZERO, Time::us(t))).collect();
        assert_eq!(paused, vec![0, 1, 5, 6, 10, 11]);
    }

    #[test]
    fn parse_errors_name_the_field() {
        let mut n = || 4usize;
        let p = |s: serde_json::Value, n: &mut dyn FnMut() -> usize| parse(Some(&s), 8, n).unwrap_err().field();
        use serde_json::json;
        assert_eq!(p(json!([{"off": "1us"}]), &mut n), "pause[0]");
        assert_eq!(p(json!([{"hosts": [1], "fraction": 0.5, "off": "1us"}]), &mut n), "pause[0]");
        assert_eq!(p(json!([{"hosts": [1]}]), &mut n), "pause[0].off");
        assert_eq!(p(json!([{"hosts": [1], "off": "0us"}]), &mut n), "pause[0].off");
        assert_eq!(p(json!([{"hosts": [1], "off": "1us", "on": "0us"}]), &mut n), "pause[0].on");
        assert_eq!(p(json!([{"hosts": [8], "off": "1us"}]), &mut n), "pause[0].hosts");
        assert_eq!(p(json!([{"flows": [4], "off": "1us"}]), &mut n), "pause[0].flows");
        assert_eq!(
            p(json!([{"flows": [0], "off": "1us"}, {"fraction": 1.5, "off": "1us"}]), &mut n),
            "pause[1].fraction"
        );
        assert_eq!(p(json!([{"host_fraction": 1.01, "off": "1us"}]), &mut n), "pause[0].host_fraction");
        assert_eq!(p(json!([{"host_fraction": -0.1, "off": "1us"}]), &mut n), "pause[0].host_fraction");
        assert_eq!(p(json!([{"hosts": [1], "off": "1us", "of": 1}]), &mut n), "pause[0].of");
        assert_eq!(p(json!([{"hosts": [1], "off": 5}]), &mut n), "pause[0].off");
        assert_eq!(p(json!({"hosts": [1]}), &mut n), "pause");
        assert_eq!(p(json!([{"hosts": [1], "off": "1us", "mode": "drop"}]), &mut n), "pause[0].mode");
        assert!(parse(Some(&json!([{"flows": [3], "off": "1us", "on": "2us", "start": "1ms"}])), 8, &mut n).is_ok());
    }

    #[test]
    fn resolve_selects_by_flow_host_and_host_fraction() {
        let flows: Vec<FlowSpec> = (0..6).map(|i| spec(i % 3, Time::us(i as u64))).collect();
        let rule = |flows: Option<Vec<u32>>, hosts: Option<Vec<u32>>, hf: Option<f64>| PauseRule {
            flows,
            hosts,
            fraction: None,
            host_fraction: hf,
            start: Time::ZERO,
            off: Time::us(1),
            on: None,
            mode: PauseMode::Defer,
        };
        let mut rng = Rng::new(7);
        let by = |w: &Vec<Vec<Window>>| w.iter().map(|v| v.len()).collect::<Vec<_>>();
        assert_eq!(by(&resolve(&[rule(Some(vec![1, 4]), None, None)], &flows, &mut rng)), vec![0, 1, 0, 0, 1, 0]);
        assert_eq!(by(&resolve(&[rule(None, Some(vec![2]), None)], &flows, &mut rng)), vec![0, 0, 1, 0, 0, 1]);
        // 2 of the 3 sending hosts (round(0.6 x 3)): exactly the flows of two hosts.
        let w = resolve(&[rule(None, None, Some(0.6))], &flows, &mut rng);
        let hosts: std::collections::BTreeSet<u32> =
            flows.iter().zip(&w).filter(|(_, w)| !w.is_empty()).map(|(f, _)| f.src).collect();
        assert_eq!(hosts.len(), 2);
        assert_eq!(by(&w).iter().sum::<usize>(), 4);
        // The same seed draws the same hosts.
        let again = resolve(&[rule(None, None, Some(0.6))], &flows, &mut Rng::new(7));
        let first = resolve(&[rule(None, None, Some(0.6))], &flows, &mut Rng::new(7));
        assert_eq!(again, first);
    }
}
