//! Transport layers: run-wide behaviour placed around a run's transport without being a
//! protocol (the runner's `run.abort_at_deadline`, `[[pause]]`'s unresponsive sources).
//!
//! A layer sees the events on their way into the transport and the actions on their way
//! out; it never reimplements the transport's interface. [`Layered`] is the single place
//! that forwards every method of [`Transport`] to the wrapped transport, so a method added
//! to the trait is forwarded here once (and checked by this module's tests) instead of in
//! each wrapper, where a forgotten pass-through would silently fall back to the trait's
//! default (as the pause wrapper once lost PASE's arbitrators). Layers nest: a `Layered`
//! is itself a transport, and the outer layer sees what the inner one let through.

use crate::packet::{FlowId, NodeId, Packet};
use crate::transport::{AckDelayLog, Ctx, FlowPaths, FlowStats, Transport};

/// What a layer may do around the transport it wraps. Every hook has a pass-through
/// default; a layer overrides only the ones it needs.
pub trait Layer {
    /// A packet addressed to host `ctx.host` arrived; return false to withhold it from the
    /// transport (the layer then owns it: discards it, or holds it to deliver later through
    /// [`Layer::own_timer`]).
    fn admit_packet(&mut self, _ctx: &mut Ctx, _pkt: &Packet) -> bool {
        true
    }
    /// A packet addressed to switch `ctx.host` arrived; return false to withhold it. Switch
    /// agents are the network's control plane: what they send is not passed to
    /// [`Layer::after`].
    fn admit_switch_packet(&mut self, _ctx: &mut Ctx, _pkt: &Packet) -> bool {
        true
    }
    /// A timer fired. Return true if `token` is the layer's own (it never reaches the
    /// transport); the layer may hand packets to `inner` here.
    fn own_timer(&mut self, _ctx: &mut Ctx, _token: u64, _inner: &mut dyn Transport) -> bool {
        false
    }
    /// After the transport handled an event at a host (every one but `on_flow_abandoned`,
    /// whose release messages always leave): `ctx.out.sends[sends_from..]` and
    /// `ctx.out.completions[completions_from..]` are what it added; the layer may remove
    /// entries from those ranges (never from before them) or note them.
    fn after(&mut self, _ctx: &mut Ctx, _sends_from: usize, _completions_from: usize) {}
}

/// A transport wrapped in a [`Layer`].
pub struct Layered<L: Layer> {
    layer: L,
    inner: Box<dyn Transport>,
}

impl<L: Layer> Layered<L> {
    pub fn new(layer: L, inner: Box<dyn Transport>) -> Layered<L> {
        Layered { layer, inner }
    }

    /// The layer (for its own counters).
    pub fn layer(&self) -> &L {
        &self.layer
    }

    /// Run `f` on the inner transport, then let the layer see what it added.
    #[inline]
    fn guarded(&mut self, ctx: &mut Ctx, f: impl FnOnce(&mut dyn Transport, &mut Ctx)) {
        let (s, c) = (ctx.out.sends.len(), ctx.out.completions.len());
        f(self.inner.as_mut(), ctx);
        self.layer.after(ctx, s, c);
    }
}

impl<L: Layer> Transport for Layered<L> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.guarded(ctx, |t, ctx| t.start_flow(ctx, flow));
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if self.layer.admit_packet(ctx, pkt) {
            self.guarded(ctx, |t, ctx| t.on_packet(ctx, pkt));
        }
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        let (s, c) = (ctx.out.sends.len(), ctx.out.completions.len());
        if !self.layer.own_timer(ctx, token, self.inner.as_mut()) {
            self.inner.on_timer(ctx, token);
        }
        self.layer.after(ctx, s, c);
    }
    fn on_nic_idle(&mut self, ctx: &mut Ctx) {
        self.guarded(ctx, |t, ctx| t.on_nic_idle(ctx));
    }
    fn wants_nic_idle(&self) -> bool {
        self.inner.wants_nic_idle()
    }
    fn on_tx_complete(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.guarded(ctx, |t, ctx| t.on_tx_complete(ctx, pkt));
    }
    fn wants_tx_complete(&self) -> bool {
        self.inner.wants_tx_complete()
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.inner.flow_stats(flow)
    }
    fn wants_switch_packets(&self) -> bool {
        self.inner.wants_switch_packets()
    }
    fn set_flow_paths(&mut self, paths: FlowPaths) {
        self.inner.set_flow_paths(paths)
    }
    fn on_switch_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if self.layer.admit_switch_packet(ctx, pkt) {
            self.inner.on_switch_packet(ctx, pkt);
        }
    }
    fn arb_msgs(&self, port: u32) -> u64 {
        self.inner.arb_msgs(port)
    }
    fn arb_msgs_sent(&self) -> u64 {
        self.inner.arb_msgs_sent()
    }
    fn host_reorder_max_bytes(&self, host: NodeId) -> u64 {
        self.inner.host_reorder_max_bytes(host)
    }
    fn supports_append(&self) -> bool {
        self.inner.supports_append()
    }
    fn keep_open(&mut self, flow: FlowId) {
        self.inner.keep_open(flow)
    }
    fn append(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.guarded(ctx, |t, ctx| t.append(ctx, flow));
    }
    fn record_ack_delays(&mut self, limit: u64) -> bool {
        self.inner.record_ack_delays(limit)
    }
    fn take_ack_delays(&mut self) -> Option<AckDelayLog> {
        self.inner.take_ack_delays()
    }
    // Not passed through `after`: what a transport sends to release an abandoned flow's
    // state elsewhere (PASE's arbitrators) must leave even though the flow is abandoned.
    fn on_flow_abandoned(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.on_flow_abandoned(ctx, flow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::{Actions, FlowInfo};
    use crate::units::Time;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A transport that records every call and answers every query with a value no
    /// default gives, so a method `Layered` does not forward shows up as a missing call or a
    /// default answer.
    struct Recorder {
        calls: Rc<RefCell<Vec<&'static str>>>,
    }

    impl Recorder {
        fn log(&self, m: &'static str) {
            self.calls.borrow_mut().push(m);
        }
    }

    impl Transport for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }
        fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
            self.log("start_flow");
            ctx.out.complete(flow);
        }
        fn on_packet(&mut self, _ctx: &mut Ctx, _pkt: &Packet) {
            self.log("on_packet");
        }
        fn on_timer(&mut self, _ctx: &mut Ctx, _token: u64) {
            self.log("on_timer");
        }
        fn on_nic_idle(&mut self, _ctx: &mut Ctx) {
            self.log("on_nic_idle");
        }
        fn wants_nic_idle(&self) -> bool {
            true
        }
        fn on_tx_complete(&mut self, _ctx: &mut Ctx, _pkt: &Packet) {
            self.log("on_tx_complete");
        }
        fn wants_tx_complete(&self) -> bool {
            true
        }
        fn flow_stats(&self, _flow: FlowId) -> FlowStats {
            FlowStats { timeouts: 7, ..FlowStats::default() }
        }
        fn wants_switch_packets(&self) -> bool {
            true
        }
        fn set_flow_paths(&mut self, _paths: FlowPaths) {
            self.log("set_flow_paths");
        }
        fn on_switch_packet(&mut self, _ctx: &mut Ctx, _pkt: &Packet) {
            self.log("on_switch_packet");
        }
        fn arb_msgs(&self, port: u32) -> u64 {
            100 + port as u64
        }
        fn arb_msgs_sent(&self) -> u64 {
            42
        }
        fn host_reorder_max_bytes(&self, host: NodeId) -> u64 {
            1000 + host as u64
        }
        fn on_flow_abandoned(&mut self, _ctx: &mut Ctx, _flow: FlowId) {
            self.log("on_flow_abandoned");
        }
        fn supports_append(&self) -> bool {
            true
        }
        fn keep_open(&mut self, _flow: FlowId) {
            self.log("keep_open");
        }
        fn append(&mut self, _ctx: &mut Ctx, _flow: FlowId) {
            self.log("append");
        }
        fn record_ack_delays(&mut self, limit: u64) -> bool {
            self.log("record_ack_delays");
            limit == 5
        }
        fn take_ack_delays(&mut self) -> Option<AckDelayLog> {
            Some(AckDelayLog::new(77, &[]))
        }
    }

    struct PassThrough;
    impl Layer for PassThrough {}

    /// Withholds every packet and completion, and owns timer token 9.
    struct Blocker {
        afters: u32,
    }
    impl Layer for Blocker {
        fn admit_packet(&mut self, _ctx: &mut Ctx, _pkt: &Packet) -> bool {
            false
        }
        fn admit_switch_packet(&mut self, _ctx: &mut Ctx, _pkt: &Packet) -> bool {
            false
        }
        fn own_timer(&mut self, _ctx: &mut Ctx, token: u64, _inner: &mut dyn Transport) -> bool {
            token == 9
        }
        fn after(&mut self, ctx: &mut Ctx, _s: usize, c: usize) {
            self.afters += 1;
            ctx.out.completions.truncate(c);
        }
    }

    fn with_ctx(f: impl FnOnce(&mut Ctx)) {
        let flows: Vec<FlowInfo> = Vec::new();
        let mut out = Actions::new();
        let mut ctx = Ctx { now: Time::ZERO, host: 0, flows: &flows, out: &mut out };
        f(&mut ctx);
    }

    fn wrapped<L: Layer>(layer: L) -> (Layered<L>, Rc<RefCell<Vec<&'static str>>>) {
        let calls = Rc::new(RefCell::new(Vec::new()));
        (Layered::new(layer, Box::new(Recorder { calls: calls.clone() })), calls)
    }

    #[test]
    fn pass_through_layer_forwards_every_call_and_query() {
        let (mut t, calls) = wrapped(PassThrough);
        let pkt = Packet::default();
        with_ctx(|ctx| {
            t.start_flow(ctx, 0);
            t.on_packet(ctx, &pkt);
            t.on_timer(ctx, 9);
            t.on_nic_idle(ctx);
            t.on_tx_complete(ctx, &pkt);
            t.set_flow_paths(FlowPaths::default());
            t.on_switch_packet(ctx, &pkt);
            t.on_flow_abandoned(ctx, 0);
            t.keep_open(0);
            t.append(ctx, 0);
            assert!(t.record_ack_delays(5));
            assert_eq!(ctx.out.completions.len(), 1, "the inner completion passes");
        });
        assert_eq!(
            *calls.borrow(),
            [
                "start_flow",
                "on_packet",
                "on_timer",
                "on_nic_idle",
                "on_tx_complete",
                "set_flow_paths",
                "on_switch_packet",
                "on_flow_abandoned",
                "keep_open",
                "append",
                "record_ack_delays"
            ]
        );
        assert_eq!(t.name(), "recorder");
        assert!(t.wants_nic_idle() && t.wants_tx_complete() && t.wants_switch_packets() && t.supports_append());
        assert_eq!(t.flow_stats(3).timeouts, 7);
        assert_eq!(t.arb_msgs(5), 105);
        assert_eq!(t.arb_msgs_sent(), 42);
        assert_eq!(t.host_reorder_max_bytes(2), 1002);
        assert_eq!(t.take_ack_delays().map(|l| l.limit), Some(77));
    }

    #[test]
    fn withholding_layer_keeps_packets_and_its_own_timer_and_sees_every_output() {
        let (mut t, calls) = wrapped(Blocker { afters: 0 });
        let pkt = Packet::default();
        with_ctx(|ctx| {
            t.on_packet(ctx, &pkt);
            t.on_switch_packet(ctx, &pkt);
            t.on_timer(ctx, 9);
            t.on_timer(ctx, 8);
            t.start_flow(ctx, 0);
            assert!(ctx.out.completions.is_empty(), "the layer removed the completion");
        });
        assert_eq!(*calls.borrow(), ["on_timer", "start_flow"]);
        assert_eq!(t.layer().afters, 3, "after() runs for each host event that reached the transport and each timer");
    }

    #[test]
    fn layers_nest_and_the_outer_sees_what_the_inner_let_through() {
        let calls = Rc::new(RefCell::new(Vec::new()));
        let inner = Layered::new(Blocker { afters: 0 }, Box::new(Recorder { calls: calls.clone() }));
        let mut outer = Layered::new(PassThrough, Box::new(inner));
        with_ctx(|ctx| {
            outer.on_packet(ctx, &Packet::default());
            outer.on_nic_idle(ctx);
        });
        assert_eq!(*calls.borrow(), ["on_nic_idle"]);
        assert_eq!(outer.arb_msgs_sent(), 42);
    }
}
