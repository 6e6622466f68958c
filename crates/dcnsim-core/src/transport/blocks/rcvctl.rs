//! Receiver-side control of a TCP sender: the building blocks of the incast transports that
//! act at the receiver (PTCP, ICTCP, and any other receiver-driven TCP variant).
//!
//! # What is modelled
//! A receiver can steer a standard TCP sender in two ways without touching it: it
//! **advertises a receive window** in its ACKs (the sender keeps at most min(cwnd, rwnd) in
//! flight; `tcp.rs`, "Receive window"), and it **holds ACKs back** (the sender's window
//! slides later, so it sends later). The pieces:
//!
//! - [`RcvPolicy`]: a receiver-side control law. It sees every data packet a receiver gets
//!   (before the TCP receiver processes it) and decides, whenever the TCP receiver emits an
//!   ACK, the window to advertise and how long to hold the ACK ([`AckVerdict`]). Per-flow
//!   state lives in the policy's `Flow` type; per-host state (ICTCP's link meter) in the
//!   policy itself.
//! - [`RcvTcp`]: the transport that runs any [`RcvPolicy`] on top of the TCP building block
//!   (`tcp::Tcp`, NewReno/SACK, optionally DCTCP): senders are unmodified TCP senders; at the
//!   receiver the policy's window is written into each ACK ([`crate::transport::tcp::set_ack_rwnd`])
//!   and the ACK is held in an [`AckHold`] queue when the verdict asks for a delay.
//! - [`AckHold`]: a per-flow FIFO of held ACKs released by one timer ([`TIMER_ACK_HOLD`]).
//!   An ACK is released at `max(now + delay, release time of the ACK before it)`, so ACKs
//!   leave in the order the receiver made them (a cumulative ACK never overtakes an older
//!   one). A held ACK's `rank` (the receiver's hold time in ns, `tcp.rs`) grows by the extra
//!   hold, and its echoed timestamp is kept, so the sender's RTT samples include the hold, as
//!   with delayed ACKs.
//! - [`OneWayDelay`]: the one-way queuing delay of a flow's data from the sender's timestamp
//!   (every TCP data packet carries its send time in `ts`; the simulator's clocks are
//!   synchronised). PTCP Algorithm 1: `current = now - send_time`, `base = min(base,
//!   current)`, `queuing = current - base`; the first packet only initialises (gives no
//!   sample), as in the algorithm. The base starts at infinity, or at a known value
//!   ([`OneWayDelay::with_base`]).
//! - [`RateMeter`]: a per-host meter of incoming bytes over a measurement period (ICTCP's
//!   measured incoming traffic `BW_T`).
//! - The ACK-delay log (`[output] ack_delays`, [`crate::transport::AckDelayLog`]): when the
//!   runner asks for it ([`Transport::record_ack_delays`]), [`RcvTcp`] records every ACK it
//!   stamps: when it was made and when it leaves, the window, the hold the policy asked for,
//!   and the policy's own quantities that explain that hold ([`RcvPolicy::state_names`],
//!   [`RcvPolicy::explain`], read right after the verdict). Without it the cost is one branch
//!   per ACK and nothing is allocated.
//!
//! # Choices
//! - The policy is consulted for every ACK the TCP receiver emits, including delayed-ACK
//!   timer ACKs and ACKs of duplicates after completion (which then carry the flow's last
//!   window and no hold).
//! - A policy that advertises no window (`rwnd: None`) leaves the ACK's window field empty,
//!   and the sender keeps the window it had: with a policy that never advertises and never
//!   holds, `RcvTcp` behaves exactly like the plain `tcp`/`dctcp` transport.

use crate::packet::{FlowId, NodeId, Packet};
use crate::transport::tcp::{ack_rwnd, set_ack_rwnd, Tcp, KIND_ACK, KIND_DATA, TIMER_DELACK};
use crate::transport::{
    token, untoken, AckDelayLog, Actions, Ctx, FlowInfo, FlowStats, TimerSlot, Transport, ACK_STATE_MAX,
};
use crate::units::Time;
use std::collections::VecDeque;

/// Timer kind of the ACK-hold release timer (distinct from the TCP kinds 1-3).
pub const TIMER_ACK_HOLD: u8 = 16;

/// What to do with an ACK the TCP receiver just made.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AckVerdict {
    /// Receive window to advertise, bytes (`None`: advertise none).
    pub rwnd: Option<u64>,
    /// How long to hold the ACK before sending it.
    pub delay: Time,
}

/// A receiver-side control law (PTCP, ICTCP, ...). All calls happen at the flow's receiver.
pub trait RcvPolicy {
    /// Per-flow receiver state.
    type Flow;
    /// Protocol name.
    fn name(&self) -> &'static str;
    /// The first data packet of `flow` reached its receiver.
    fn new_flow(&mut self, now: Time, flow: &FlowInfo) -> Self::Flow;
    /// A data packet of `flow` reached its receiver `host` (called before the TCP receiver
    /// processes it, for every data packet, duplicates included).
    fn on_data(&mut self, now: Time, host: NodeId, flow: &FlowInfo, st: &mut Self::Flow, pkt: &Packet);
    /// The TCP receiver emits an ACK for `flow`: the window to write into it and its hold.
    fn ack_verdict(&mut self, now: Time, flow: &FlowInfo, st: &mut Self::Flow) -> AckVerdict;
    /// The receiver now holds every byte of `flow` (called once per message: once, unless
    /// `flow` is a persistent connection).
    fn on_complete(&mut self, _now: Time, _host: NodeId, _flow: &FlowInfo, _st: &mut Self::Flow) {}
    /// The first data packet of a message appended to the persistent connection `flow`
    /// reached its receiver after [`RcvPolicy::on_complete`] (the state `st` carries over).
    fn on_reopen(&mut self, _now: Time, _host: NodeId, _flow: &FlowInfo, _st: &mut Self::Flow) {}
    /// Names of the receiver quantities [`RcvPolicy::explain`] reports (columns of the
    /// ACK-delay log, at most [`ACK_STATE_MAX`]; the unit in the name, e.g. `queuing_us`).
    fn state_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// The quantities named by [`RcvPolicy::state_names`] that produced the verdict just given
    /// for `flow` at `now` (called right after [`RcvPolicy::ack_verdict`], only while the
    /// ACK-delay log records); unused entries are ignored.
    fn explain(&self, _now: Time, _flow: &FlowInfo, _st: &Self::Flow) -> [f64; ACK_STATE_MAX] {
        [f64::NAN; ACK_STATE_MAX]
    }
}

// ------------------------------------------------------------------------------------------
// One-way delay
// ------------------------------------------------------------------------------------------

/// PTCP Algorithm 1: one-way queuing delay from the sender's timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OneWayDelay {
    /// The smallest one-way delay seen (`Time::MAX` before the second packet).
    pub base: Time,
    /// The latest queuing delay (0 before the first sample).
    pub queuing: Time,
    /// A packet has initialised the estimator (Algorithm 1's `timestamp` flag).
    started: bool,
}

impl Default for OneWayDelay {
    fn default() -> Self {
        OneWayDelay { base: Time::MAX, queuing: Time::ZERO, started: false }
    }
}

impl OneWayDelay {
    /// An estimator whose base delay starts at `base` (Algorithm 1's "initial one-way delay
    /// value") instead of infinity: a receiver whose first packets already queue behind an
    /// incast burst would otherwise take a queued delay for the base and see no queuing.
    pub fn with_base(base: Time) -> OneWayDelay {
        OneWayDelay { base, ..OneWayDelay::default() }
    }

    /// A packet sent at `sent` arrives at `now`: the queuing delay it saw, or `None` for the
    /// first packet (which only sets the flag, Algorithm 1 lines 12-13).
    pub fn sample(&mut self, now: Time, sent: Time) -> Option<Time> {
        if !self.started {
            self.started = true;
            return None;
        }
        let current = now.saturating_sub(sent);
        self.base = self.base.min(current);
        self.queuing = current - self.base;
        Some(self.queuing)
    }
}

// ------------------------------------------------------------------------------------------
// Incoming-rate meter
// ------------------------------------------------------------------------------------------

/// Bytes arriving at a host over a measurement period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateMeter {
    /// Start of the current period.
    pub since: Time,
    /// Bytes counted since `since`.
    pub bytes: u64,
}

impl RateMeter {
    pub fn add(&mut self, bytes: u64) {
        self.bytes += bytes;
    }
    /// The mean rate since the period began, bits per second (0 for an empty period), and a
    /// new period from `now`.
    pub fn take_bps(&mut self, now: Time) -> f64 {
        let dt = now.saturating_sub(self.since);
        let r = if dt > Time::ZERO { self.bytes as f64 * 8.0 / dt.as_secs_f64() } else { 0.0 };
        self.since = now;
        self.bytes = 0;
        r
    }
}

// ------------------------------------------------------------------------------------------
// ACK hold
// ------------------------------------------------------------------------------------------

/// A per-flow FIFO of held ACKs with its release timer.
#[derive(Clone, Debug, Default)]
pub struct AckHold {
    /// (release time, the time the ACK was made, the ACK).
    q: VecDeque<(Time, Time, Packet)>,
    timer: TimerSlot,
    /// Release time of the newest held ACK.
    last: Time,
}

impl AckHold {
    /// Number of ACKs waiting.
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// Send `ack` after `delay` (and after every ACK held before it); without a delay and
    /// with nothing held it leaves at once. Returns when it leaves.
    pub fn push(&mut self, now: Time, ack: Packet, delay: Time, out: &mut Actions) -> Time {
        if delay == Time::ZERO && self.q.is_empty() {
            out.send(ack);
            return now;
        }
        let at = (now + delay).max(self.last);
        self.last = at;
        self.q.push_back((at, now, ack));
        if self.q.len() == 1 {
            self.arm(ack.flow, at, out);
        }
        at
    }

    fn arm(&mut self, flow: FlowId, at: Time, out: &mut Actions) {
        let g = self.timer.arm(at);
        out.timer(at, token(flow, TIMER_ACK_HOLD, g));
    }

    /// The release timer fired (generation `gen`): send every ACK due.
    pub fn on_timer(&mut self, now: Time, gen: u32, out: &mut Actions) {
        if !self.timer.fire(gen) {
            return;
        }
        while let Some(&(at, made, mut ack)) = self.q.front() {
            if at > now {
                self.arm(ack.flow, at, out);
                return;
            }
            self.q.pop_front();
            let extra = (now - made).0 / 1000;
            ack.rank = (ack.rank as u64 + extra).min(u32::MAX as u64) as u32;
            out.send(ack);
        }
    }
}

// ------------------------------------------------------------------------------------------
// The transport
// ------------------------------------------------------------------------------------------

struct RcvFlow<F> {
    st: F,
    hold: AckHold,
    done: bool,
    /// The flow's size when `done` was set (a persistent connection reopens when it grows).
    done_size: u64,
}

/// TCP with a receiver-side control law `P` (see the module documentation).
pub struct RcvTcp<P: RcvPolicy> {
    tcp: Tcp,
    policy: P,
    mss: u64,
    flows: Vec<Option<Box<RcvFlow<P::Flow>>>>,
    /// The ACK-delay log, while recording (`[output] ack_delays`).
    log: Option<Box<AckDelayLog>>,
}

impl<P: RcvPolicy> RcvTcp<P> {
    pub fn new(tcp: Tcp, policy: P) -> RcvTcp<P> {
        let mss = tcp.params().mss;
        RcvTcp { tcp, policy, mss, flows: Vec::new(), log: None }
    }
    /// The embedded TCP (sender and receiver inspection in tests).
    pub fn tcp(&self) -> &Tcp {
        &self.tcp
    }
    pub fn policy(&self) -> &P {
        &self.policy
    }
    /// The receiver-side state of `flow`, once its first data packet arrived.
    pub fn flow_state(&self, flow: FlowId) -> Option<&P::Flow> {
        self.flows.get(flow as usize)?.as_deref().map(|f| &f.st)
    }
    /// ACKs of `flow` held at its receiver now.
    pub fn held_acks(&self, flow: FlowId) -> usize {
        self.flows.get(flow as usize).and_then(|f| f.as_deref()).map_or(0, |f| f.hold.len())
    }

    /// Stamp (and hold) the ACKs the TCP receiver of `flow` appended to `ctx.out.sends` from
    /// index `from`.
    fn after_receiver(&mut self, ctx: &mut Ctx, flow: FlowId, from: usize) {
        let flows = ctx.flows;
        let info = &flows[flow as usize];
        let Some(f) = self.flows.get_mut(flow as usize).and_then(|f| f.as_deref_mut()) else { return };
        if !f.done && ctx.out.completions.contains(&flow) {
            f.done = true;
            f.done_size = info.size.0;
            self.policy.on_complete(ctx.now, ctx.host, info, &mut f.st);
        }
        if ctx.out.sends.len() <= from {
            return;
        }
        let v = self.policy.ack_verdict(ctx.now, info, &mut f.st);
        if v.rwnd.is_none() && v.delay == Time::ZERO && f.hold.is_empty() && self.log.is_none() {
            return;
        }
        let mut i = from;
        while i < ctx.out.sends.len() {
            if ctx.out.sends[i].kind != KIND_ACK || ctx.out.sends[i].flow != flow {
                i += 1;
                continue;
            }
            if let Some(w) = v.rwnd {
                set_ack_rwnd(&mut ctx.out.sends[i], w, self.mss);
            }
            let acked = ctx.out.sends[i].ack;
            let carried = if self.log.is_some() { ack_rwnd(&ctx.out.sends[i], self.mss) } else { None };
            let release = if v.delay == Time::ZERO && f.hold.is_empty() {
                i += 1;
                ctx.now
            } else {
                let ack = ctx.out.sends.remove(i);
                f.hold.push(ctx.now, ack, v.delay, ctx.out)
            };
            if let Some(log) = self.log.as_deref_mut() {
                let state = self.policy.explain(ctx.now, info, &f.st);
                log_ack(log, ctx, info, (acked, carried), release, v.delay, state);
            }
        }
    }
}

/// Append one row to the ACK-delay log (or count it lost when the log is full).
#[cold]
fn log_ack(
    log: &mut AckDelayLog,
    ctx: &Ctx,
    info: &FlowInfo,
    (ack, rwnd): (u64, Option<u64>),
    release: Time,
    delay: Time,
    state: [f64; ACK_STATE_MAX],
) {
    if log.len() as u64 >= log.limit {
        log.lost += 1;
        return;
    }
    log.made_ps.push(ctx.now.0);
    log.release_ps.push(release.0);
    log.host.push(ctx.host);
    log.flow.push(info.id);
    log.ack.push(ack);
    log.rwnd.push(rwnd.unwrap_or(u64::MAX));
    log.delay_ps.push(delay.0);
    for (k, col) in log.state.iter_mut().enumerate().take(log.state_names.len()) {
        col.push(state[k]);
    }
}

impl<P: RcvPolicy> Transport for RcvTcp<P> {
    fn name(&self) -> &'static str {
        self.policy.name()
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.tcp.start_flow(ctx, flow)
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let id = pkt.flow as usize;
        if pkt.kind != KIND_DATA || id >= ctx.flows.len() {
            self.tcp.on_packet(ctx, pkt);
            return;
        }
        if self.flows.len() < ctx.flows.len() {
            self.flows.resize_with(ctx.flows.len(), || None);
        }
        let flows = ctx.flows;
        let info = &flows[id];
        let f = self.flows[id].get_or_insert_with(|| {
            Box::new(RcvFlow {
                st: self.policy.new_flow(ctx.now, info),
                hold: AckHold::default(),
                done: false,
                done_size: 0,
            })
        });
        if f.done && info.size.0 > f.done_size {
            f.done = false;
            self.policy.on_reopen(ctx.now, ctx.host, info, &mut f.st);
        }
        if !f.done {
            self.policy.on_data(ctx.now, ctx.host, info, &mut f.st, pkt);
        }
        let from = ctx.out.sends.len();
        self.tcp.on_packet(ctx, pkt);
        self.after_receiver(ctx, pkt.flow, from);
    }
    fn on_timer(&mut self, ctx: &mut Ctx, tok: u64) {
        let (flow, kind, gen) = untoken(tok);
        match kind {
            TIMER_ACK_HOLD => {
                if let Some(f) = self.flows.get_mut(flow as usize).and_then(|f| f.as_deref_mut()) {
                    f.hold.on_timer(ctx.now, gen, ctx.out);
                }
            }
            TIMER_DELACK if (flow as usize) < ctx.flows.len() => {
                let from = ctx.out.sends.len();
                self.tcp.on_timer(ctx, tok);
                self.after_receiver(ctx, flow, from);
            }
            _ => self.tcp.on_timer(ctx, tok),
        }
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
        self.tcp.append(ctx, flow)
    }
    fn record_ack_delays(&mut self, limit: u64) -> bool {
        let names = self.policy.state_names();
        self.log = Some(Box::new(AckDelayLog::new(limit, &names[..names.len().min(ACK_STATE_MAX)])));
        true
    }
    fn take_ack_delays(&mut self) -> Option<AckDelayLog> {
        self.log.take().map(|b| *b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tcp::{ack_rwnd, ACK_RWND_MAX_SEGS};
    use crate::transport::NetInfo;
    use crate::units::{Bytes, Rate};
    use serde_json::json;

    const MSS: u64 = 1460;

    fn net() -> NetInfo {
        let mut n = NetInfo::for_tests(1500, Time::us(10), Rate::gbps(10));
        n.host.tsq = false;
        n
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

    /// A scripted policy: a fixed window and delay; counts what it saw.
    #[derive(Default)]
    struct Fixed {
        rwnd: Option<u64>,
        delay: Time,
        seen: u32,
        completed: u32,
    }

    impl RcvPolicy for Fixed {
        type Flow = u32;
        fn name(&self) -> &'static str {
            "fixed"
        }
        fn new_flow(&mut self, _now: Time, _flow: &FlowInfo) -> u32 {
            0
        }
        fn on_data(&mut self, _now: Time, _host: NodeId, _flow: &FlowInfo, st: &mut u32, _pkt: &Packet) {
            *st += 1;
            self.seen += 1;
        }
        fn ack_verdict(&mut self, _now: Time, _flow: &FlowInfo, _st: &mut u32) -> AckVerdict {
            AckVerdict { rwnd: self.rwnd, delay: self.delay }
        }
        fn on_complete(&mut self, _now: Time, _host: NodeId, _flow: &FlowInfo, _st: &mut u32) {
            self.completed += 1;
        }
    }

    fn call<T: Transport>(
        t: &mut T,
        flows: &[FlowInfo],
        now: Time,
        host: NodeId,
        f: impl FnOnce(&mut T, &mut Ctx),
    ) -> Actions {
        let mut out = Actions::new();
        f(t, &mut Ctx { now, host, flows, out: &mut out });
        out
    }

    #[test]
    fn one_way_delay_first_packet_only_initialises_then_min_filter() {
        let mut d = OneWayDelay::default();
        assert_eq!(d.sample(Time::us(30), Time::us(0)), None, "first packet: flag only");
        assert_eq!(d.base, Time::MAX);
        assert_eq!(d.sample(Time::us(50), Time::us(10)), Some(Time::ZERO), "base 40 us");
        assert_eq!(d.sample(Time::us(80), Time::us(20)), Some(Time::us(20)), "60 - 40");
        assert_eq!(d.sample(Time::us(100), Time::us(65)), Some(Time::ZERO), "new base 35 us");
        assert_eq!((d.base, d.queuing), (Time::us(35), Time::ZERO));
        assert_eq!(d.sample(Time::us(200), Time::us(100)), Some(Time::us(65)));
    }

    #[test]
    fn one_way_delay_with_known_base_sees_a_standing_queue() {
        let mut d = OneWayDelay::with_base(Time::us(40));
        assert_eq!(d.sample(Time::us(100), Time::ZERO), None);
        // Every packet queued 60 us: measured from the packets alone that would be the base.
        assert_eq!(d.sample(Time::us(200), Time::us(100)), Some(Time::us(60)));
        assert_eq!(d.base, Time::us(40));
        assert_eq!(d.sample(Time::us(235), Time::us(200)), Some(Time::ZERO), "a smaller delay lowers the base");
        assert_eq!(d.base, Time::us(35));
    }

    #[test]
    fn rate_meter_mean_over_the_period() {
        let mut m = RateMeter::default();
        m.add(1250);
        m.add(1250);
        // 2500 B in 20 us = 1 Gbps.
        assert!((m.take_bps(Time::us(20)) - 1e9).abs() < 1.0);
        assert_eq!((m.since, m.bytes), (Time::us(20), 0));
        assert_eq!(m.take_bps(Time::us(20)), 0.0, "empty period");
    }

    #[test]
    fn ack_rwnd_field_roundtrip_floor_and_cap() {
        let mut a = Packet { aux2: crate::transport::tcp::ACK_ECE | 2920, ..Packet::default() };
        assert_eq!(ack_rwnd(&a, MSS), None, "no window advertised");
        set_ack_rwnd(&mut a, 5 * MSS + 700, MSS);
        assert_eq!(ack_rwnd(&a, MSS), Some(5 * MSS), "whole segments");
        assert_eq!(a.aux2 & crate::transport::tcp::ACK_COVERED_MASK, 2920, "covered bytes kept");
        assert_ne!(a.aux2 & crate::transport::tcp::ACK_ECE, 0, "ECE kept");
        set_ack_rwnd(&mut a, 10, MSS);
        assert_eq!(ack_rwnd(&a, MSS), Some(MSS), "at least one segment");
        set_ack_rwnd(&mut a, u64::MAX, MSS);
        assert_eq!(ack_rwnd(&a, MSS), Some(ACK_RWND_MAX_SEGS * MSS), "field's largest value");
    }

    #[test]
    fn ack_hold_keeps_order_and_releases_at_the_later_time() {
        let mut h = AckHold::default();
        let mut out = Actions::new();
        let ack = |n: u64| Packet { kind: KIND_ACK, ack: n, rank: 0, ..Packet::default() };
        h.push(Time::us(0), ack(1), Time::us(10), &mut out);
        assert!(out.sends.is_empty());
        assert_eq!(out.timers.len(), 1);
        let (at, tok) = out.timers[0];
        assert_eq!(at, Time::us(10));
        // A later ACK with a shorter delay waits for the earlier one.
        h.push(Time::us(2), ack(2), Time::us(1), &mut out);
        // And a zero delay while ACKs are held also queues.
        h.push(Time::us(3), ack(3), Time::ZERO, &mut out);
        assert_eq!((out.sends.len(), out.timers.len(), h.len()), (0, 1, 3));
        let mut rel = Actions::new();
        h.on_timer(at, untoken(tok).2, &mut rel);
        let acks: Vec<(u64, u32)> = rel.sends.iter().map(|p| (p.ack, p.rank)).collect();
        assert_eq!(acks, vec![(1, 10_000), (2, 8_000), (3, 7_000)], "in order, rank grows by the hold in ns");
        assert!(h.is_empty());
        // Nothing held and no delay: straight out.
        let mut o = Actions::new();
        h.push(Time::us(20), ack(4), Time::ZERO, &mut o);
        assert_eq!((o.sends.len(), o.timers.len()), (1, 0));
    }

    #[test]
    fn ack_hold_stale_timer_is_ignored_and_rearms_for_later_acks() {
        let mut h = AckHold::default();
        let mut out = Actions::new();
        let ack = |n: u64| Packet { kind: KIND_ACK, ack: n, ..Packet::default() };
        h.push(Time::ZERO, ack(1), Time::us(5), &mut out);
        h.push(Time::us(1), ack(2), Time::us(20), &mut out);
        let (at, tok) = out.timers[0];
        let mut rel = Actions::new();
        h.on_timer(at, untoken(tok).2, &mut rel);
        assert_eq!(rel.sends.len(), 1);
        assert_eq!(rel.timers.len(), 1, "re-armed for the second ACK");
        assert_eq!(rel.timers[0].0, Time::us(21));
        let mut again = Actions::new();
        h.on_timer(at, untoken(tok).2, &mut again);
        assert!(again.sends.is_empty(), "a stale generation does nothing");
    }

    /// With a policy that advertises nothing and holds nothing, the wrapper emits exactly what
    /// plain TCP emits (the default is behaviour-neutral).
    #[test]
    fn neutral_policy_matches_plain_tcp_packet_for_packet() {
        let flows = vec![flow(30 * MSS)];
        let mut plain = Tcp::from_config(&json!({}), &net(), false).unwrap();
        let mut wrapped = RcvTcp::new(Tcp::from_config(&json!({}), &net(), false).unwrap(), Fixed::default());
        let a = call(&mut plain, &flows, Time::ZERO, 0, |t, c| t.start_flow(c, 0));
        let b = call(&mut wrapped, &flows, Time::ZERO, 0, |t, c| t.start_flow(c, 0));
        assert_eq!(format!("{:?}", a.sends), format!("{:?}", b.sends));
        let mut wire = a.sends;
        let mut now = Time::ZERO;
        while !wire.is_empty() {
            now += Time::us(5);
            let mut next = Vec::new();
            for p in &wire {
                let x = call(&mut plain, &flows, now, p.dst, |t, c| t.on_packet(c, p));
                let y = call(&mut wrapped, &flows, now, p.dst, |t, c| t.on_packet(c, p));
                assert_eq!(format!("{:?}", x.sends), format!("{:?}", y.sends));
                assert_eq!(x.completions, y.completions);
                next.extend(x.sends);
            }
            wire = next;
        }
        assert!(plain.receiver_complete(0) && wrapped.tcp().receiver_complete(0));
        assert_eq!(wrapped.policy().completed, 1);
        assert_eq!(wrapped.policy().seen, 30);
    }

    /// The sender obeys the advertised window: with rwnd = 3 segments it never has more than 3
    /// in flight although its congestion window is 10.
    #[test]
    fn sender_in_open_state_obeys_advertised_window() {
        let flows = vec![flow(40 * MSS)];
        let pol = Fixed { rwnd: Some(3 * MSS), ..Fixed::default() };
        let mut t = RcvTcp::new(Tcp::from_config(&json!({}), &net(), false).unwrap(), pol);
        let w = call(&mut t, &flows, Time::ZERO, 0, |t, c| t.start_flow(c, 0)).sends;
        assert_eq!(w.len(), 10, "initial window: no advertisement yet");
        let acks = call(&mut t, &flows, Time::us(5), 1, |t, c| t.on_packet(c, &w[0])).sends;
        assert_eq!(ack_rwnd(&acks[0], MSS), Some(3 * MSS));
        let more = call(&mut t, &flows, Time::us(10), 0, |t, c| t.on_packet(c, &acks[0])).sends;
        let s = t.tcp().sender(0).unwrap();
        assert_eq!(s.rwnd(), 3 * MSS);
        assert!(s.cwnd() > 3 * MSS);
        assert!(more.is_empty(), "9 segments in flight > rwnd 3: nothing sent");
        // Deliver the rest of the first window: each ACK still holds the flight above 3.
        let mut wire = Vec::new();
        for p in &w[1..] {
            wire.extend(call(&mut t, &flows, Time::us(20), 1, |t, c| t.on_packet(c, p)).sends);
        }
        let mut sent = Vec::new();
        for a in &wire {
            sent.extend(call(&mut t, &flows, Time::us(30), 0, |t, c| t.on_packet(c, a)).sends);
        }
        let s = t.tcp().sender(0).unwrap();
        assert_eq!(s.snd_nxt() - s.snd_una(), 3 * MSS, "flight = rwnd");
        assert_eq!(sent.len(), 3);
    }

    /// State: recording with room for 3 rows; event: 5 ACKs of a policy that holds nothing
    /// and advertises nothing. Every ACK is recorded as it leaves (at once, no window) until
    /// the log is full; the rest are counted lost. Not recording: nothing is kept.
    #[test]
    fn ack_delay_log_full_counts_the_rest_and_off_keeps_nothing() {
        let flows = vec![flow(5 * MSS)];
        let mut t = RcvTcp::new(Tcp::from_config(&json!({}), &net(), false).unwrap(), Fixed::default());
        let mut off = RcvTcp::new(Tcp::from_config(&json!({}), &net(), false).unwrap(), Fixed::default());
        assert!(t.record_ack_delays(3));
        let w = call(&mut t, &flows, Time::ZERO, 0, |t, c| t.start_flow(c, 0)).sends;
        call(&mut off, &flows, Time::ZERO, 0, |t, c| t.start_flow(c, 0));
        assert_eq!(w.len(), 5);
        for (i, p) in w.iter().enumerate() {
            let now = Time::us(10 + i as u64);
            let a = call(&mut t, &flows, now, 1, |t, c| t.on_packet(c, p));
            let b = call(&mut off, &flows, now, 1, |t, c| t.on_packet(c, p));
            assert_eq!(format!("{:?}", a.sends), format!("{:?}", b.sends), "recording changes no packet");
        }
        let log = t.take_ack_delays().unwrap();
        assert_eq!((log.len(), log.lost, log.limit), (3, 2, 3));
        assert_eq!(log.made_ps, log.release_ps, "no hold");
        assert_eq!(log.rwnd, vec![u64::MAX; 3], "no window advertised");
        assert_eq!(log.ack, vec![MSS, 2 * MSS, 3 * MSS]);
        assert!(log.state_names.is_empty() && log.state.iter().all(|c| c.is_empty()));
        assert!(t.take_ack_delays().is_none(), "taken once");
        assert!(off.take_ack_delays().is_none());
    }

    #[test]
    fn receiver_with_delay_holds_acks_until_the_timer() {
        let flows = vec![flow(4 * MSS)];
        let pol = Fixed { rwnd: Some(2 * MSS), delay: Time::us(7), ..Fixed::default() };
        let mut t = RcvTcp::new(Tcp::from_config(&json!({}), &net(), false).unwrap(), pol);
        let w = call(&mut t, &flows, Time::ZERO, 0, |t, c| t.start_flow(c, 0)).sends;
        let a = call(&mut t, &flows, Time::us(5), 1, |t, c| t.on_packet(c, &w[0]));
        assert!(a.sends.is_empty(), "held");
        assert_eq!(t.held_acks(0), 1);
        assert_eq!(a.timers.len(), 1);
        let (at, tok) = a.timers[0];
        assert_eq!(at, Time::us(12));
        let r = call(&mut t, &flows, at, 1, |t, c| t.on_timer(c, tok));
        assert_eq!(r.sends.len(), 1);
        assert_eq!(r.sends[0].ack, MSS);
        assert_eq!(ack_rwnd(&r.sends[0], MSS), Some(2 * MSS));
        assert_eq!(r.sends[0].rank, 7_000, "hold time 7 us in ns");
        assert_eq!(t.held_acks(0), 0);
    }
}
