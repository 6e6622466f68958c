//! Timed changes of a link's propagation delay (`[[link_delay]]`).
//!
//! What it models: a link whose one-way propagation delay changes during a run, so that the
//! round trip of the flows crossing it grows or shrinks at given times while nothing else
//! about the network changes. The RPO paper's Fig. 1(c) (§II-B) has a flow whose round trip
//! grows for a while (there because of flows by-passing it at another bottleneck); this
//! mechanism sets such a growth directly, by an amount the scenario states.
//!
//! # Semantics (physical, deterministic)
//! - A link direction is a FIFO wire. A packet takes the delay the link has when its first
//!   bit enters the wire, i.e. when its serialization at the egress port starts: a change
//!   at time `t` applies to every packet whose serialization starts at or after `t`;
//!   packets already on the wire, or being serialized, keep the delay they started with.
//!   The changes are scheduled before the run starts, so a change at `t` takes effect
//!   before anything else the run does at `t`.
//! - No packet overtakes one sent before it on the same link. When the delay drops, a
//!   packet whose last bit would reach the far end before that of the packet sent before
//!   it arrives together with it instead: arrival = max(end of serialization + delay,
//!   arrival of the previous packet on that link). With a constant delay the second term
//!   never wins (serializations end in order), so runs without `[[link_delay]]` are
//!   unchanged.
//! - `end` (optional): at that time the delay returns to the topology's value, by the same
//!   rules; without it the new delay lasts to the end of the run.
//! - Two rules may not change the same link direction during overlapping periods (the
//!   delay in between would be ambiguous); they may follow each other.
//! - A change is an event of the run: a run that ends only when nothing is left to happen
//!   (`run.stop_when_done = false` and no `time_limit`) lasts at least until its last change.
//!   The default stop (every foreground flow done, no packet in flight) and a time limit do
//!   not wait for changes.
//! - Unchanged by a rule: each flow's `base_rtt` and ideal FCT (computed from the
//!   topology's delays when the flow table is built) and `ports.csv`'s `delay_us` (the
//!   topology's delay).
//!
//! # Fields (one `[[link_delay]]` table per rule)
//! - `a`, `b`: the two nodes the link joins, by name (an explicit topology's node names;
//!   generated topologies name hosts `h0`, `h1`, ... and switches as `scenario.json`'s
//!   topology echo and the topology documentation say, e.g. `leaf0`, `spine1`);
//! - `direction`: `"both"` (default: the cable changes, both directions) or `"a_to_b"`
//!   (only packets going from `a` to `b`);
//! - `start` (required): when the new delay takes effect;
//! - `delay` (required): the new one-way propagation delay, 0 to 1 s;
//! - `end` (optional, after `start`): when the topology's delay comes back.

use crate::config::{from_table, FieldError};
use crate::topology::Topology;
use crate::units::Time;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Largest delay a rule may set: far beyond any datacenter path; a longer one is a typo
/// (and would keep a whole run's packets on one wire).
pub const MAX_DELAY: Time = Time(1_000_000_000_000);

/// Which directions of the link a rule changes.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Both directions (the cable itself).
    #[default]
    Both,
    /// Only from `a` to `b`.
    AToB,
}

/// One `[[link_delay]]` table, as given.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkDelayRule {
    pub a: String,
    pub b: String,
    #[serde(default)]
    pub direction: Direction,
    pub start: Time,
    pub delay: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Time>,
}

/// One scheduled change: from `at` on, egress port `port` gives new packets `delay`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    pub at: Time,
    pub port: u32,
    pub delay: Time,
}

/// The egress ports of topology link `link`: from its `a` to its `b`, then back (the
/// numbering [`crate::network::Network::build`] gives them).
pub fn link_ports(link: usize) -> [u32; 2] {
    [2 * link as u32, 2 * link as u32 + 1]
}

/// Parse and check the scenario's `link_delay` array against the topology (`None` or an
/// empty array: no rules).
pub fn parse(raw: Option<&serde_json::Value>, topo: &Topology) -> Result<Vec<LinkDelayRule>, FieldError> {
    let Some(v) = raw else { return Ok(Vec::new()) };
    let arr = v.as_array().ok_or_else(|| {
        FieldError::invalid(
            "link_delay",
            "must be an array of tables",
            "write [[link_delay]] tables (docs/scenario.md)",
        )
    })?;
    let mut rules = Vec::with_capacity(arr.len());
    let index = Index::new(topo);
    // (port, start, end, rule) of every rule, to refuse overlaps.
    let mut spans: Vec<(u32, Time, Time, usize)> = Vec::new();
    for (i, t) in arr.iter().enumerate() {
        let at = format!("link_delay[{i}]");
        let r: LinkDelayRule = from_table(t, &at)?;
        if r.delay > MAX_DELAY {
            return Err(FieldError::invalid(
                format!("{at}.delay"),
                format!("{} is longer than the 1 s allowed", r.delay),
                "give a one-way propagation delay such as \"20us\"",
            ));
        }
        if let Some(end) = r.end {
            if end <= r.start {
                return Err(FieldError::invalid(
                    format!("{at}.end"),
                    format!("{end} is not after start ({})", r.start),
                    "give an end later than start, or leave it out to keep the new delay to the end of the run",
                ));
            }
        }
        for port in index.ports_of(&r, &at)? {
            spans.push((port, r.start, r.end.unwrap_or(Time::MAX), i));
        }
        rules.push(r);
    }
    // Overlaps, in O(n log n): sorted by port and start, if two periods of a port overlap,
    // some two adjacent ones do (a period between them starts before the first one ends).
    spans.sort_unstable_by_key(|&(p, s, _, i)| (p, s, i));
    if let Some(w) = spans.windows(2).find(|w| w[0].0 == w[1].0 && w[1].1 < w[0].2) {
        let (first, second) = (w[0].3.min(w[1].3), w[0].3.max(w[1].3));
        return Err(FieldError::invalid(
            format!("link_delay[{second}]"),
            format!("changes the link during link_delay[{first}]'s period"),
            "give each link direction periods that do not overlap (end one before the next starts)",
        ));
    }
    Ok(rules)
}

/// Node ids by name, and the topology links between each (unordered) pair of nodes.
struct Index<'t> {
    topo: &'t Topology,
    ids: HashMap<&'t str, u32>,
    links: HashMap<(u32, u32), Vec<usize>>,
}

impl<'t> Index<'t> {
    fn new(topo: &'t Topology) -> Self {
        let ids = topo.names.iter().enumerate().map(|(i, n)| (n.as_str(), i as u32)).collect();
        let mut links: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
        for (k, l) in topo.links.iter().enumerate() {
            links.entry((l.a.min(l.b), l.a.max(l.b))).or_default().push(k);
        }
        Index { topo, ids, links }
    }

    /// The egress ports a (parsed) rule changes; errors name `at`'s fields.
    fn ports_of(&self, r: &LinkDelayRule, at: &str) -> Result<Vec<u32>, FieldError> {
        let id = |name: &str, field: &str| {
            self.ids.get(name).copied().ok_or_else(|| {
                FieldError::invalid(
                    format!("{at}.{field}"),
                    format!("no node named '{name}'"),
                    "name a node of the topology (an explicit topology's names; h0, h1, ... for hosts of a generated one)",
                )
            })
        };
        let (a, b) = (id(&r.a, "a")?, id(&r.b, "b")?);
        let links = self.links.get(&(a.min(b), a.max(b))).map_or(&[][..], |v| v.as_slice());
        let &[k] = links else {
            let problem = match links.len() {
                0 => format!("no link joins '{}' and '{}'", r.a, r.b),
                n => format!("{n} links join '{}' and '{}'; a rule must name one", r.a, r.b),
            };
            return Err(FieldError::invalid(at, problem, "name the two ends of one link of the topology"));
        };
        let [fwd, back] = link_ports(k);
        // `fwd` leaves the topology link's own `a`; the rule's `a` may be either end.
        let a_to_b = if self.topo.links[k].a == a { fwd } else { back };
        Ok(match r.direction {
            Direction::AToB => vec![a_to_b],
            Direction::Both => vec![fwd, back],
        })
    }
}

/// Every change the rules make, in the order they apply (by time, then rule order; a
/// rule's `end` restores the topology's delay).
pub fn schedule(rules: &[LinkDelayRule], topo: &Topology) -> Vec<Change> {
    let mut out = Vec::new();
    let index = Index::new(topo);
    for (i, r) in rules.iter().enumerate() {
        let ports = index.ports_of(r, &format!("link_delay[{i}]")).expect("validated when the scenario was parsed");
        for port in ports {
            out.push(Change { at: r.start, port, delay: r.delay });
            if let Some(end) = r.end {
                out.push(Change { at: end, port, delay: topo.links[port as usize / 2].delay });
            }
        }
    }
    // Stable: equal times keep rule order.
    out.sort_by_key(|c| c.at);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chain() -> Topology {
        crate::topology::build(&json!({"kind": "explicit",
            "nodes": [{"name": "h", "kind": "host"}, {"name": "g", "kind": "host"},
                      {"name": "A", "kind": "switch"}, {"name": "B", "kind": "switch"}],
            "links": [{"a": "h", "b": "A", "rate": "10Gbps"}, {"a": "A", "b": "B", "rate": "10Gbps", "delay": "5us"},
                      {"a": "g", "b": "B", "rate": "10Gbps"}]}))
        .unwrap()
    }

    fn field_of(v: serde_json::Value) -> String {
        parse(Some(&v), &chain()).unwrap_err().field()
    }

    #[test]
    fn rule_both_directions_changes_and_restores_both_ports() {
        let t = chain();
        let rules =
            parse(Some(&json!([{"a": "B", "b": "A", "start": "1ms", "delay": "20us", "end": "2ms"}])), &t).unwrap();
        let s = schedule(&rules, &t);
        let at = |ms: u64| Time::us(ms * 1000);
        assert_eq!(
            s,
            vec![
                Change { at: at(1), port: 2, delay: Time::us(20) },
                Change { at: at(1), port: 3, delay: Time::us(20) },
                Change { at: at(2), port: 2, delay: Time::us(5) },
                Change { at: at(2), port: 3, delay: Time::us(5) },
            ]
        );
    }

    #[test]
    fn rule_a_to_b_named_against_the_links_order_picks_the_reverse_port() {
        let t = chain();
        // Topology link 1 is A -> B (port 2) and B -> A (port 3); the rule goes B -> A.
        let rules =
            parse(Some(&json!([{"a": "B", "b": "A", "direction": "a_to_b", "start": "0us", "delay": "0us"}])), &t)
                .unwrap();
        assert_eq!(schedule(&rules, &t), vec![Change { at: Time::ZERO, port: 3, delay: Time::ZERO }]);
        // The port numbering is the network's.
        let sc = crate::scenario::parse_scenario(
            r#"
            name = "x"
            [topology]
            kind = "leaf_spine"
            [transport]
            protocol = "dctcp"
            [[workload]]
            pattern = "incast"
            receiver = 0
            senders = 1
            "#,
            crate::scenario::Format::Toml,
            std::path::Path::new("."),
        )
        .unwrap();
        let net = crate::network::Network::build(&t, &sc.queue, 1, 0);
        let [f, b] = link_ports(1);
        assert_eq!((net.ports[f as usize].node, net.ports[f as usize].peer), (2, 3));
        assert_eq!((net.ports[b as usize].node, net.ports[b as usize].peer), (3, 2));
    }

    #[test]
    fn bad_rules_name_the_field() {
        let ok = json!({"a": "A", "b": "B", "start": "1ms", "delay": "20us"});
        let with = |k: &str, v: serde_json::Value| {
            let mut r = ok.clone();
            r[k] = v;
            json!([r])
        };
        assert_eq!(field_of(with("a", json!("Z"))), "link_delay[0].a");
        assert_eq!(field_of(with("b", json!("g"))), "link_delay[0]"); // A and g are not linked
        assert_eq!(field_of(with("delay", json!("-3us"))), "link_delay[0].delay");
        assert_eq!(field_of(with("delay", json!("2s"))), "link_delay[0].delay");
        assert_eq!(field_of(with("end", json!("1ms"))), "link_delay[0].end");
        assert_eq!(field_of(with("end", json!("500us"))), "link_delay[0].end");
        assert_eq!(field_of(with("direction", json!("b_to_a"))), "link_delay[0].direction");
        assert_eq!(field_of(with("colour", json!(1))), "link_delay[0].colour");
        assert_eq!(field_of(json!({"a": "A"})), "link_delay");
        // Overlap on one direction is refused; periods that follow each other are not.
        let two = |s2: &str| {
            json!([{"a": "A", "b": "B", "start": "1ms", "end": "2ms", "delay": "20us"},
                   {"a": "B", "b": "A", "direction": "a_to_b", "start": s2, "delay": "1us"}])
        };
        assert_eq!(field_of(two("1500us")), "link_delay[1]");
        assert!(parse(Some(&two("2ms")), &chain()).is_ok());
        // An overlap between rules far apart in the list, among others that do not overlap.
        let many = json!([{"a": "A", "b": "B", "start": "1ms", "end": "2ms", "delay": "20us"},
                          {"a": "h", "b": "A", "start": "0ms", "delay": "2us"},
                          {"a": "A", "b": "B", "direction": "a_to_b", "start": "3ms", "delay": "1us"},
                          {"a": "B", "b": "A", "direction": "a_to_b", "start": "2ms", "end": "3ms", "delay": "9us"},
                          {"a": "B", "b": "A", "direction": "a_to_b", "start": "1999us", "delay": "9us"}]);
        let e = parse(Some(&many), &chain()).unwrap_err();
        assert_eq!(e.field(), "link_delay[4]");
        assert!(e.to_string().contains("link_delay[0]'s period"), "{e}");
    }
}
