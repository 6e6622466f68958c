//! PASE's arbitration control plane (§3.1.2): the requests a source sends after arbitrating its
//! own uplink, the stops that arbitrate them (the switch-side agents and the destination),
//! delegation reports and shares, and the releases of ended flows.

use super::*;

fn kbps(r: Rate) -> u32 {
    (r.0 / 1000).min(u32::MAX as u64) as u32
}

impl Pase {
    /// The flow's request: its key, demand, base rate and time to live.
    fn request(p: &PaseParams, f: &FlowInfo, remaining: u64, rtt: Time) -> (ArbKey, Rate, Rate, Time) {
        let key = ArbKey { deadline: f.deadline.map(|d| f.start + d), remaining, flow: f.id };
        let secs = rtt.as_secs_f64().max(1e-12);
        let demand = Rate(f.host_rate.0.min((remaining as f64 * 8.0 / secs) as u64).max(1));
        let base = Rate(((p.mtu * 8) as f64 / secs) as u64);
        (key, demand, base, Time(p.refresh(f).0.saturating_mul(4)))
    }

    /// An arbitration request of flow `f` to `to`: its key and demand, the half it
    /// arbitrates and the answer combined so far (if any), issued by the source at `issued`.
    #[allow(clippy::too_many_arguments)]
    fn request_packet(
        f: &FlowInfo,
        p: &PaseParams,
        to: NodeId,
        key: ArbKey,
        demand_kbps: u32,
        half: Half,
        acc: Option<Decision>,
        issued: Time,
    ) -> Packet {
        let mut rank = if half == Half::Source { REQ_SOURCE_HALF } else { 0 };
        if let Some(a) = acc {
            rank |= REQ_HAS_ANSWER | a.queue as u32;
        }
        Packet {
            dst: to,
            flow: f.id,
            size: p.ctrl_size as u32,
            kind: KIND_ARB_REQ,
            aux: key.remaining,
            ack: key.deadline.map_or(u64::MAX, |t| t.0),
            aux2: demand_kbps,
            rank,
            seq: acc.map_or(u64::MAX, |a| a.rate.0),
            ts: issued,
            ..Default::default()
        }
    }

    /// The source arbitrates its uplink, asks its ToR for the rest of the source half (unless
    /// pruned or endpoint-only) and the destination for the destination half. Returns its own
    /// answer and whether the source half climbs.
    pub(super) fn arbitrate_at_source(
        &mut self,
        ctx: &mut Ctx,
        f: &FlowInfo,
        remaining: u64,
        rtt: Time,
    ) -> (Decision, bool) {
        let p = &self.params;
        let (key, demand, base, ttl) = Pase::request(p, f, remaining, rtt);
        let q = p.flow_queues();
        let arb = self.up[f.src as usize].get_or_insert_with(|| Arbitrator::new(f.host_rate, q));
        let d = arb.arbitrate(ctx.now, key, demand, base, ttl);
        let path = self.paths.get(f.id);
        let mut climbs = false;
        if p.end_to_end && path.len() > 2 && !(p.pruning && d.queue >= p.prune_queues) {
            let pl = plan(path, Half::Source, true, p.delegation);
            if let Some(next) = pl.stops().get(1) {
                let pkt = Pase::request_packet(f, p, next.node, key, kbps(demand), Half::Source, Some(d), ctx.now);
                if let Some(s) = self.senders.get_mut(f.id as usize).and_then(|s| s.as_mut()) {
                    s.climbed = true;
                }
                ctx.out.send(pkt);
                self.sent += 1;
                climbs = true;
            }
        }
        ctx.out.send(Pase::request_packet(f, p, f.dst, key, kbps(demand), Half::Destination, None, ctx.now));
        self.sent += 1;
        (d, climbs)
    }

    /// A request reached one of its stops (a switch, or the destination host for the
    /// destination half): arbitrate the stop's links, then forward or answer the source.
    pub(super) fn at_stop(&mut self, ctx: &mut Ctx, f: &FlowInfo, pkt: &Packet) {
        let half = if pkt.rank & REQ_SOURCE_HALF != 0 { Half::Source } else { Half::Destination };
        if pkt.rank & REQ_RELEASE != 0 {
            return self.on_release(ctx, f, pkt, half);
        }
        let p = &self.params;
        let acc = (pkt.rank & REQ_HAS_ANSWER != 0).then_some(Decision { queue: pkt.rank as u8, rate: Rate(pkt.seq) });
        let key = ArbKey { deadline: (pkt.ack != u64::MAX).then_some(Time(pkt.ack)), remaining: pkt.aux, flow: f.id };
        let demand = Rate(pkt.aux2 as u64 * 1000);
        let (_, _, base, host_ttl) = Pase::request(p, f, pkt.aux, f.base_rtt);
        let switch_ttl = Time(p.refresh(f).0.saturating_mul(2));
        let path = self.paths.get(f.id);
        let pl = plan(path, half, p.end_to_end, p.delegation);
        let q = p.flow_queues();
        let at_host = ctx.host == f.dst && half == Half::Destination;
        let at = if at_host { 0 } else { pl.find(ctx.host).unwrap_or(usize::MAX) };
        if at == usize::MAX || (at == 0 && !at_host) {
            return; // not a stop of this request (a stale or misdirected message)
        }
        let stop = pl.stops().get(at).copied();
        let mut d: Option<Decision> = acc;
        let mut add = |x: Decision| d = Some(d.map_or(x, |y| y.combine(x)));
        if at_host {
            let cap = path.last().map_or(f.path_rate, |h| h.rate);
            let arb = self.down[f.dst as usize].get_or_insert_with(|| Arbitrator::new(cap, q));
            add(arb.arbitrate(ctx.now, key, demand, base, host_ttl));
            if let Some(h) = path.last() {
                count(&mut self.msgs, h.port);
            }
        } else if let Some(h) = stop.and_then(|s| s.own) {
            if self.links.len() <= h.port as usize {
                self.links.resize_with(h.port as usize + 1, || None);
            }
            let arb = self.links[h.port as usize].get_or_insert_with(|| Arbitrator::new(h.rate, q));
            add(arb.arbitrate(ctx.now, key, demand, base, switch_ttl));
            count(&mut self.msgs, h.port);
        }
        if let Some(v) = stop.and_then(|s| s.virt) {
            let n = self.children.get(&v.port).map_or(1, |c| c.len());
            let (arb, last) = self
                .virt
                .entry((v.port, ctx.host))
                .or_insert_with(|| (Arbitrator::new(Delegated::initial_share(v.rate, n), q), None));
            add(arb.arbitrate(ctx.now, key, demand, base, switch_ttl));
            if last.is_none_or(|t| ctx.now >= t + p.delegation_period) {
                *last = Some(ctx.now);
                let owner = if half == Half::Source { v.node } else { v.peer };
                let live = Rate(arb.live_demand(ctx.now).min(v.rate.0));
                ctx.out.send(Packet {
                    dst: owner,
                    flow: f.id,
                    size: p.ctrl_size as u32,
                    kind: KIND_DELEG_REPORT,
                    aux: v.port as u64,
                    aux2: kbps(live),
                    ts: ctx.now,
                    ..Default::default()
                });
                self.sent += 1;
            }
        }
        let Some(d) = d else { return };
        let last_stop = at + 1 >= pl.len().max(1);
        if last_stop || (p.pruning && d.queue >= p.prune_queues) {
            ctx.out.send(Packet {
                dst: f.src,
                flow: f.id,
                size: p.ctrl_size as u32,
                kind: KIND_ARB_RESP,
                rank: d.queue as u32,
                aux2: kbps(d.rate),
                aux: (half == Half::Source) as u64,
                ts: pkt.ts,
                ..Default::default()
            });
        } else {
            let next = pl.stops()[at + 1].node;
            ctx.out.send(Pase::request_packet(f, p, next, key, pkt.aux2, half, Some(d), pkt.ts));
        }
        self.sent += 1;
    }

    /// A child's report reached the owner of a delegated link: answer with its new share.
    pub(super) fn on_report(&mut self, ctx: &mut Ctx, f: &FlowInfo, pkt: &Packet) {
        let port = pkt.aux as u32;
        let Some(hop) = self.paths.get(f.id).iter().find(|h| h.port == port).copied() else { return };
        let p = &self.params;
        count(&mut self.msgs, port);
        let children = self.children.get(&port).map_or(&[][..], |c| &c[..]);
        let dl = self.deleg.entry(port).or_insert_with(|| Delegated::new(hop.rate, children));
        let floor = Rate(((p.mtu * 8) as f64 / f.base_rtt.as_secs_f64().max(1e-12)) as u64);
        let share = dl.report(pkt.src, Rate(pkt.aux2 as u64 * 1000), ctx.now, p.delegation_period, floor);
        ctx.out.send(Packet {
            dst: pkt.src,
            flow: f.id,
            size: p.ctrl_size as u32,
            kind: KIND_DELEG_SHARE,
            aux: port as u64,
            seq: share.0,
            ts: ctx.now,
            ..Default::default()
        });
        self.sent += 1;
    }

    /// The flow ended: tell the next stop of `half` to forget it (it relays the release up).
    pub(super) fn release(&mut self, ctx: &mut Ctx, f: &FlowInfo, half: Half) {
        let p = &self.params;
        let pl = plan(self.paths.get(f.id), half, p.end_to_end, p.delegation);
        if let Some(next) = pl.stops().get(1) {
            let key = ArbKey { deadline: None, remaining: 0, flow: f.id };
            let mut pkt = Pase::request_packet(f, p, next.node, key, 0, half, None, ctx.now);
            pkt.rank |= REQ_RELEASE;
            ctx.out.send(pkt);
            self.sent += 1;
        }
    }

    /// A release reached a stop: forget the flow; relay it up if the flow was known here.
    fn on_release(&mut self, ctx: &mut Ctx, f: &FlowInfo, pkt: &Packet, half: Half) {
        let p = &self.params;
        let pl = plan(self.paths.get(f.id), half, p.end_to_end, p.delegation);
        let Some(at) = pl.find(ctx.host).filter(|&a| a > 0) else { return };
        let stop = pl.stops()[at];
        let mut known = false;
        if let Some(h) = stop.own {
            count(&mut self.msgs, h.port);
            if let Some(Some(a)) = self.links.get_mut(h.port as usize) {
                known |= a.remove(f.id);
            }
        }
        if let Some(v) = stop.virt {
            if let Some(a) = self.virt.get_mut(&(v.port, ctx.host)) {
                known |= a.0.remove(f.id);
            }
        }
        if known {
            if let Some(next) = pl.stops().get(at + 1) {
                let mut fwd = *pkt;
                fwd.dst = next.node;
                ctx.out.send(fwd);
                self.sent += 1;
            }
        }
    }
}

fn count(msgs: &mut Vec<u64>, port: u32) {
    if msgs.len() <= port as usize {
        msgs.resize(port as usize + 1, 0);
    }
    msgs[port as usize] += 1;
}
