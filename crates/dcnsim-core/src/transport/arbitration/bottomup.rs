//! PASE's bottom-up arbitration hierarchy (Munir et al., SIGCOMM 2014, §3.1.2): which
//! arbitrators a flow's request visits, in which order, and how a parent link's capacity is
//! delegated to its children. Pure functions and state, tested without a network; the `pase`
//! transport moves the messages.
//!
//! # The two halves and their stops
//! A flow's data path (source to destination, `n` links) is split at its apex into a source
//! half (the `n / 2` links going up) and a destination half (the links coming down). Each half
//! is arbitrated from its leaf upwards: the request visits one **stop** per level, and the stop
//! at a node arbitrates the half's link whose **lower end** is that node. So the source host
//! arbitrates its own uplink, the source's ToR the ToR-to-aggregation link, the aggregation
//! switch the aggregation-to-core link; on the other side the destination host arbitrates the
//! link into itself, its ToR the aggregation-to-ToR link, the aggregation switch the
//! core-to-aggregation link. The paper places one arbitrator per link direction and lets end
//! hosts arbitrate their own links; putting every arbitrator at the link's lower end is our
//! choice (the paper's figure is not in our text): it is where a bottom-up request meets the
//! link first, and it puts the ToR-to-aggregation arbitrators of both directions in the rack,
//! where the paper places the children that links are delegated to. Paths are up-down
//! (trees, fat-trees, leaf-spine), so the apex is the middle node of the path.
//!
//! Inside a rack (two links) each half is its endpoint alone: no message leaves the endpoints
//! ("arbitration is done solely at the endpoints").
//!
//! # Early pruning (§3.1.2)
//! A stop that is not the last of its half forwards the request to the next stop only if the
//! flow's combined answer so far puts it in one of the top `prune_queues` queues (the paper's
//! tuned choice: the top two); otherwise it answers the source at once with that answer ("a
//! flow mapped to a lower priority queue on one of its links will never make it to the highest
//! priority queue"). The source host prunes too: a flow its own uplink puts below those queues
//! does not contact its ToR.
//!
//! # Delegation (§3.1.2)
//! The links at level 2 (aggregation-to-core and core-to-aggregation in the 3-tier tree: "PASE
//! only delegates the Aggregation-Core link capacity to its children") are split into virtual
//! links, one per child at level 1 (the ToRs below), of capacity `a_i C`; the child runs
//! Algorithm 1 on its virtual link beside its own link, so an inter-rack request stops at the
//! ToR. The shares follow the children's reports ("updated periodically, reflecting the
//! PrioQue of flows received by each child"). The paper gives neither the report nor the rule;
//! ours ([`Delegated`]):
//! - a child reports the summed demand of the live flows on its virtual link (at most `C`: the
//!   demand that the full link would put in its top queue), lazily: when it handles a request
//!   and its last report is at least one `delegation_period` old (so an idle child sends
//!   nothing, and a child that wakes up reports at its first request);
//! - the parent keeps each child's latest report for two periods (older ones count as no
//!   demand) and answers the reporting child with its new share: with `D` the reports and
//!   `N` the children, each child gets its demand plus an equal part of the spare capacity
//!   when `sum D <= C`, and `C D_i / sum D` otherwise, at least one MTU per RTT (the floor the
//!   caller gives);
//! - before its first answer a child assumes an equal share `C / N`.
//!
//! Deeper trees: links above level 2 are not delegated; the level-2 stop then only relays.

use crate::packet::NodeId;
use crate::transport::PathHop;
use crate::units::{Rate, Time};

/// Most stops of one half; longer halves are arbitrated at their endpoints only.
pub const MAX_STOPS: usize = 8;

/// Which half of the path a request arbitrates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    /// Source up to the apex.
    Source,
    /// Destination up to the apex.
    Destination,
}

/// One stop of a half: the node that handles the request, the link it arbitrates (its own)
/// and, under delegation, the parent link whose virtual share it arbitrates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stop {
    pub node: NodeId,
    pub own: Option<PathHop>,
    pub virt: Option<PathHop>,
}

/// The stops of one half, leaf first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    stops: [Stop; MAX_STOPS],
    len: usize,
}

impl Plan {
    pub fn stops(&self) -> &[Stop] {
        &self.stops[..self.len]
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The index of `node`'s stop.
    pub fn find(&self, node: NodeId) -> Option<usize> {
        self.stops().iter().position(|s| s.node == node)
    }
}

/// The stops of `half` on `path` (source to destination). `end_to_end = false` keeps the
/// leaf only (endpoint arbitration); `delegation` moves the level-2 link to the level-1 stop.
pub fn plan(path: &[PathHop], half: Half, end_to_end: bool, delegation: bool) -> Plan {
    let mut pl = Plan::default();
    let n = path.len();
    if n == 0 {
        return pl;
    }
    let up = n / 2;
    let count = match half {
        Half::Source => up,
        Half::Destination => n - up,
    };
    let count = if end_to_end && count <= MAX_STOPS { count } else { 1 };
    for s in 0..count {
        pl.stops[s] = match half {
            Half::Source => Stop { node: path[s].node, own: Some(path[s]), virt: None },
            Half::Destination => {
                let hop = path[n - 1 - s];
                Stop { node: hop.peer, own: Some(hop), virt: None }
            }
        };
    }
    pl.len = count;
    if delegation && count >= 3 {
        pl.stops[1].virt = pl.stops[2].own.take();
        if count == 3 {
            pl.len = 2;
        }
    }
    pl
}

/// The delegated link's side of delegation, kept by the link's owner (see the module doc).
#[derive(Clone, Debug)]
pub struct Delegated {
    capacity: u64,
    /// Every child (known from the flows' paths), with its latest report and its time.
    children: Vec<(NodeId, u64, Option<Time>)>,
}

impl Delegated {
    /// A link of `capacity` delegated to `children` (sorted, without repeats).
    pub fn new(capacity: Rate, children: &[NodeId]) -> Delegated {
        Delegated { capacity: capacity.0.max(1), children: children.iter().map(|&c| (c, 0, None)).collect() }
    }

    /// The equal share a child assumes before its first answer.
    pub fn initial_share(capacity: Rate, children: usize) -> Rate {
        Rate(capacity.0 / children.max(1) as u64)
    }

    /// Child `child` reports `demand` at `now`; its new share (at least `floor`). Reports
    /// older than `2 x period` count as no demand.
    pub fn report(&mut self, child: NodeId, demand: Rate, now: Time, period: Time, floor: Rate) -> Rate {
        match self.children.iter_mut().find(|c| c.0 == child) {
            Some(c) => {
                c.1 = demand.0;
                c.2 = Some(now);
            }
            None => {
                let at = self.children.partition_point(|c| c.0 < child);
                self.children.insert(at, (child, demand.0, Some(now)));
            }
        }
        let cap = self.capacity;
        let fresh = |c: &(NodeId, u64, Option<Time>)| match c.2 {
            Some(t) if t + period * 2 > now => c.1.min(cap),
            _ => 0,
        };
        let total: u64 = self.children.iter().map(fresh).sum();
        let mine = demand.0.min(cap);
        let n = self.children.len() as u64;
        let share =
            if total <= cap { mine + (cap - total) / n } else { (cap as u128 * mine as u128 / total as u128) as u64 };
        Rate(share.max(floor.0).min(cap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 3-tier path of the PASE paper: host 0 -> ToR 10 -> Agg 20 -> Core 30 -> Agg 21 ->
    /// ToR 11 -> host 5 (ports 100..105).
    fn tree_path() -> Vec<PathHop> {
        let nodes = [0, 10, 20, 30, 21, 11, 5];
        let rates = [1, 10, 10, 10, 10, 1];
        (0..6)
            .map(|i| PathHop { port: 100 + i as u32, node: nodes[i], peer: nodes[i + 1], rate: Rate::gbps(rates[i]) })
            .collect()
    }

    fn nodes(p: &Plan) -> Vec<(NodeId, Option<u32>, Option<u32>)> {
        p.stops().iter().map(|s| (s.node, s.own.map(|h| h.port), s.virt.map(|h| h.port))).collect()
    }

    #[test]
    fn inter_pod_halves_visit_each_links_lower_end() {
        let p = tree_path();
        // Source half: host (its uplink), ToR (ToR->Agg), Agg (Agg->Core).
        let s = plan(&p, Half::Source, true, false);
        assert_eq!(nodes(&s), vec![(0, Some(100), None), (10, Some(101), None), (20, Some(102), None)]);
        // Destination half: host 5 (ToR->host), ToR 11 (Agg->ToR), Agg 21 (Core->Agg).
        let d = plan(&p, Half::Destination, true, false);
        assert_eq!(nodes(&d), vec![(5, Some(105), None), (11, Some(104), None), (21, Some(103), None)]);
        assert_eq!(d.find(11), Some(1));
        assert_eq!(d.find(20), None);
    }

    #[test]
    fn delegation_moves_the_aggregation_core_link_to_the_tor() {
        let p = tree_path();
        let s = plan(&p, Half::Source, true, true);
        assert_eq!(nodes(&s), vec![(0, Some(100), None), (10, Some(101), Some(102))]);
        let d = plan(&p, Half::Destination, true, true);
        assert_eq!(nodes(&d), vec![(5, Some(105), None), (11, Some(104), Some(103))]);
    }

    #[test]
    fn endpoint_mode_and_intra_rack_paths_keep_the_leaf_only() {
        let p = tree_path();
        assert_eq!(nodes(&plan(&p, Half::Source, false, true)), vec![(0, Some(100), None)]);
        assert_eq!(nodes(&plan(&p, Half::Destination, false, false)), vec![(5, Some(105), None)]);
        let rack = &[
            PathHop { port: 7, node: 0, peer: 10, rate: Rate::gbps(1) },
            PathHop { port: 8, node: 10, peer: 3, rate: Rate::gbps(1) },
        ];
        assert_eq!(nodes(&plan(rack, Half::Source, true, true)), vec![(0, Some(7), None)]);
        assert_eq!(nodes(&plan(rack, Half::Destination, true, true)), vec![(3, Some(8), None)]);
        // Same pod, two ToRs (4 links): the ToRs are the halves' tops; nothing to delegate.
        let pod: Vec<PathHop> = tree_path().into_iter().take(2).chain(tree_path().into_iter().skip(4)).collect();
        assert_eq!(plan(&pod, Half::Source, true, true).len(), 2);
        assert!(plan(&[], Half::Source, true, true).is_empty());
    }

    #[test]
    fn shares_give_each_child_its_demand_plus_an_equal_part_of_the_spare() {
        // A 10 Gbps link, children 10, 11, 12; period 1 ms; floor 40 Mbps.
        let (period, floor) = (Time::ms(1), Rate::mbps(40));
        let mut d = Delegated::new(Rate::gbps(10), &[10, 11, 12]);
        assert_eq!(Delegated::initial_share(Rate::gbps(10), 3), Rate(3_333_333_333));
        // Child 10 reports 2 G alone: spare 8 G split in 3 -> 2 + 2.667 G.
        assert_eq!(d.report(10, Rate::gbps(2), Time::ZERO, period, floor), Rate(4_666_666_666));
        // Child 11 reports 4 G: total 6 G, spare 4 G / 3 -> 4 + 1.333 G.
        assert_eq!(d.report(11, Rate::gbps(4), Time::us(10), period, floor), Rate(5_333_333_333));
        // Child 12 reports 12 G (capped at 10): total 16 G > C -> 10 x 10 / 16 = 6.25 G.
        assert_eq!(d.report(12, Rate::gbps(12), Time::us(20), period, floor), Rate(6_250_000_000));
        // Child 10 again, no demand: its share is the floor (total 14 G > C).
        assert_eq!(d.report(10, Rate(0), Time::us(30), period, floor), floor);
        // 2.5 ms later the other reports are stale: child 11 alone with 1 G -> 1 + 9/3 = 4 G.
        assert_eq!(d.report(11, Rate::gbps(1), Time::us(2_530), period, floor), Rate::gbps(4));
    }
}
