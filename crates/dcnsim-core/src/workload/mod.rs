//! Workloads: flow-size distributions and arrival patterns.
//!
//! A scenario's `[[workload]]` tables each describe one *component*; [`build`] validates
//! them into a [`Workload`] and [`Workload::generate`] draws the merged flow list (sorted
//! by start time, ties in generation order) from the workload RNG stream. The tables, their
//! fields, units and defaults are documented in `docs/workloads.md`.
//!
//! What is modelled (definitions in `docs/conventions.md`, "Workloads", and `docs/metrics.md`, "Load"):
//! * **Flow sizes** come from an empirical CDF ([`cdf`]), read piecewise-linearly by default
//!   (ns-2, HPCC, PIAS, ExpressPass, YAPS) or as a step function (HomaSimulation), from a
//!   uniform range, or are fixed. The shipped CDFs ([`builtin`]) are byte-for-byte copies of
//!   the public files listed in `data/cdf/PROVENANCE.md` (sources: DCTCP web
//!   search and VL2 data mining via HPCC, PIAS-NS2 and ns2-xpass; Facebook web server,
//!   cache follower and Hadoop via HomaSimulation, ns2-xpass and HPCC; Homa W1–W5 via
//!   HomaSimulation; YAPS' "aditya" file; PASE and D2TCP uniform ranges); each file's
//!   origin is in `data/cdf/PROVENANCE.md`.
//! * **Arrivals** are open-loop: all-to-all Poisson at offered load rho, where
//!   lambda = rho x (sum of the senders' link rates) / (8 x mean flow size) and sources and
//!   destinations are uniform with src != dst (`poisson`); Poisson from one half of the
//!   network to the other with the load on the senders' links (`left_right`); rounds of
//!   N-to-1 incast (`incast`); a permutation (`permutation`); long-lived flows
//!   (`background`); or flows read from a file (`explicit` CSV, `hpcc` flow.txt).
//!   The mean flow size used for lambda is the exact mean of the sizes the sampler draws,
//!   so the offered load is the load asked for.
//! * **Randomness**: every component draws from its own generator seeded from the stream
//!   passed to [`Workload::generate`], so adding a component at the end, or changing one,
//!   leaves the flows of the others unchanged; the same seed gives the same flows.
//!
//! Hosts are the topology's hosts, numbered `0..num_hosts` (host index == node id).

pub mod builtin;
pub mod cdf;
mod error;
pub(crate) mod flowfile;
mod patterns;
mod raw;
pub mod read;
mod sizes;

pub use builtin::{ShippedCdf, SHIPPED};
pub use cdf::{CdfFormat, CdfOptions, CdfUnit, EmpiricalCdf, ParetoTail, Reading};
pub use error::{CdfProblem, FlowFileProblem, WorkloadError};

use crate::rng::Rng;
pub use crate::transport::WorkloadFacts;
use crate::units::{Bytes, Rate, Time};
use patterns::Component;
use std::path::PathBuf;

/// One flow the application hands to a transport.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub src: u32,
    pub dst: u32,
    pub size: Bytes,
    pub start: Time,
    /// Deadline relative to `start`, if the workload gives one.
    pub deadline: Option<Time>,
    /// Long-lived background flow (never completes; excluded from FCT statistics).
    pub background: bool,
}

/// The flows of a workload and its barrier rounds ([`Workload::plan`]).
#[derive(Clone, Debug, Default)]
pub struct FlowPlan {
    pub flows: Vec<FlowSpec>,
    pub chains: Vec<BarrierChain>,
}

/// One `incast` component with `barrier = true`: `rounds` rounds of `per_round` flows, flow
/// ids `first .. first + rounds x per_round` round by round. Round 0 starts at `start`, round
/// r + 1 `gap` after the last flow of round r completed; a flow starts at its round's start
/// plus its offset (its jitter draw), `offsets[i]` for the i-th flow of the chain.
#[derive(Clone, Debug, PartialEq)]
pub struct BarrierChain {
    pub start: Time,
    pub gap: Time,
    pub first: usize,
    pub per_round: usize,
    pub rounds: usize,
    pub offsets: Vec<Time>,
    /// `persistent = true`: connections stay open across rounds. The k-th block a sender sends
    /// to the receiver in a round goes on the connection that carried its k-th block of its
    /// most recent earlier round (a message appended to that flow: the transport keeps its
    /// window, RTT estimate and receiver state); a sender's first block opens the connection.
    pub persistent: bool,
}

/// What a workload needs to know about the network.
#[derive(Clone, Debug)]
pub struct WorkloadEnv {
    pub num_hosts: u32,
    /// Line rate of each host's link, indexed by host.
    pub host_rates: Vec<Rate>,
    /// Hosts grouped by rack (ToR/leaf), for patterns that need it; may be one group.
    pub racks: Vec<Vec<u32>>,
    /// Directory relative paths in the scenario are resolved against.
    pub base_dir: PathBuf,
    /// Most bytes an input file (flow list, CDF) may hold (`run.input_file_limit`).
    pub file_limit: u64,
}

/// `run.input_file_limit` when the scenario does not give it: 1 GB.
pub const DEFAULT_INPUT_FILE_LIMIT: u64 = 1_000_000_000;

pub type RawWorkload = serde_json::Value;

/// The values of the `pattern` field.
pub const PATTERNS: &[&str] = &["poisson", "incast", "permutation", "left_right", "background", "explicit", "hpcc"];

/// Most flows one component may generate (bounds memory: about 1 GB of [`FlowSpec`]s).
pub const MAX_FLOWS_PER_COMPONENT: u64 = 20_000_000;

/// A validated workload: one component per `[[workload]]` table.
#[derive(Clone, Debug)]
pub struct Workload {
    components: Vec<Component>,
}

/// Validate the scenario's `[[workload]]` tables (TOML converted to JSON), in order.
///
/// Relative file paths (`cdf`, `file`) are resolved against `env.base_dir`; files are read
/// here, so a missing or malformed file is reported before the run starts.
pub fn build(raw: &[serde_json::Value], env: &WorkloadEnv) -> Result<Workload, WorkloadError> {
    // A `derived` sub-table (written by `describe`) is informational: drop it so a saved
    // normalized scenario is accepted again as input.
    let strip = |v: &serde_json::Value| {
        let mut v = v.clone();
        if let serde_json::Value::Object(m) = &mut v {
            m.remove("derived");
        }
        v
    };
    let components =
        raw.iter().enumerate().map(|(i, v)| Component::build(i, &strip(v), env)).collect::<Result<Vec<_>, _>>()?;
    Ok(Workload { components })
}

impl Workload {
    /// Draw every component's flows and merge them, sorted by start time; flows with equal
    /// start times keep generation order (component order, then order within a component).
    ///
    /// Flows of barrier rounds come last (see [`Workload::plan`]), with the first round's
    /// start plus their jitter as a provisional `start`.
    pub fn generate(&self, rng: &mut Rng) -> Vec<FlowSpec> {
        self.plan(rng).flows
    }

    /// Index of the first component whose barrier rounds keep connections open
    /// (`persistent = true`), if any: the scenario checks that the transport can append.
    pub fn persistent_component(&self) -> Option<usize> {
        self.components.iter().position(|c| c.barrier().is_some_and(|b| b.4))
    }

    /// [`Workload::generate`] with the barrier rounds described: the flows of open-loop
    /// components first, sorted by start time (stable), then the flows of each barrier
    /// component (`incast` with `barrier = true`) in component order, round by round, each
    /// described by one [`BarrierChain`]. The runner starts a barrier round when the last flow
    /// of the round before it completes (plus the gap), so those flows' start times are
    /// decided during the run.
    pub fn plan(&self, rng: &mut Rng) -> FlowPlan {
        let mut flows = Vec::new();
        let mut gated: Vec<(BarrierChain, Vec<FlowSpec>)> = Vec::new();
        for c in &self.components {
            let mut own = Rng::new(rng.next_u64());
            match c.barrier() {
                Some((start, gap, per_round, rounds, persistent)) => {
                    let mut g = Vec::new();
                    c.generate(&mut own, &mut g);
                    let offsets = g.iter().map(|f| f.start.saturating_sub(start)).collect();
                    gated.push((BarrierChain { start, gap, first: 0, per_round, rounds, offsets, persistent }, g));
                }
                None => c.generate(&mut own, &mut flows),
            }
        }
        flows.sort_by_key(|f| f.start); // stable
        let mut chains = Vec::with_capacity(gated.len());
        for (mut ch, g) in gated {
            ch.first = flows.len();
            flows.extend(g);
            chains.push(ch);
        }
        FlowPlan { flows, chains }
    }

    /// The normalized workload: an array with one table per component, every default filled
    /// in (times, sizes and rates as strings with their unit). Each table also has a `derived` sub-table (mean
    /// flow size, arrival rate, ...) that is informational: [`build`] ignores it, and the
    /// array is a valid input that generates the same flows.
    pub fn describe(&self) -> serde_json::Value {
        serde_json::Value::Array(self.components.iter().map(Component::describe).collect())
    }

    /// The flow-size distribution of the whole workload as step-CDF points
    /// `(size in bytes, P(size <= s))`, sizes strictly increasing and the last probability 1:
    /// a flow has size `s_i` with probability `P_i - P_{i-1}`. Components are mixed in
    /// proportion to the number of flows each is expected to generate; background flows are
    /// left out. `None` when no component generates sized flows. Linear CDF segments and
    /// uniform ranges are cut into equal-probability steps (see
    /// [`EmpiricalCdf::step_points`]). Transports that derive parameters from the workload
    /// (Homa's unscheduled priority cutoffs) read it through `NetInfo::size_cdf`.
    pub fn size_cdf(&self) -> Option<Vec<(u64, f64)>> {
        let mut mass: Vec<(u64, f64)> = Vec::new();
        let mut total = 0.0;
        for c in &self.components {
            if let patterns::SizeMix::Known(pts, weight) = c.size_mix() {
                if weight <= 0.0 || !weight.is_finite() {
                    continue;
                }
                let mut prev = 0.0;
                for (s, p) in pts {
                    mass.push((s, (p - prev) * weight));
                    prev = p;
                }
                total += weight;
            }
        }
        if total <= 0.0 || mass.is_empty() {
            return None;
        }
        mass.sort_by_key(|m| m.0); // stable: deterministic
        let mut out: Vec<(u64, f64)> = Vec::new();
        let mut acc = 0.0;
        for (s, m) in mass {
            acc += m / total;
            match out.last_mut() {
                Some(l) if l.0 == s => l.1 = acc,
                _ => out.push((s, acc)),
            }
        }
        if let Some(l) = out.last_mut() {
            l.1 = 1.0;
        }
        Some(out)
    }

    /// What a transport may derive defaults from besides [`Workload::size_cdf`]: the shipped
    /// CDF every sized component draws from (if they all use the same one) and the summed
    /// load of the Poisson components (see [`WorkloadFacts`]). Components without sized
    /// flows (background flows) are left out, as in [`Workload::size_cdf`].
    pub fn facts(&self) -> WorkloadFacts {
        let mut shipped: Option<Option<&'static str>> = None; // None = no sized component yet
        let mut load: Option<f64> = None;
        for c in &self.components {
            if let Some(l) = c.poisson_load() {
                load = Some(load.unwrap_or(0.0) + l);
            }
            if !matches!(c.size_mix(), patterns::SizeMix::Known(_, w) if w > 0.0 && w.is_finite()) {
                continue;
            }
            let name = c.shipped_cdf();
            shipped = Some(match shipped {
                None => name,
                Some(prev) if prev == name => prev,
                Some(_) => None,
            });
        }
        WorkloadFacts { shipped_cdf: shipped.flatten(), load }
    }

    /// The number of flows the workload is expected to generate (background flows left out):
    /// the memory estimate's flow count (`limits::estimate`).
    pub fn expected_flows(&self) -> f64 {
        self.components
            .iter()
            .map(|c| match c.size_mix() {
                patterns::SizeMix::Known(_, w) if w.is_finite() && w > 0.0 => w,
                _ => 0.0,
            })
            .sum()
    }

    /// Number of components.
    pub fn len(&self) -> usize {
        self.components.len()
    }

    pub fn is_empty(&self) -> bool {
        self.components.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::collections::{BTreeMap, BTreeSet};

    fn env(n: u32) -> WorkloadEnv {
        WorkloadEnv {
            num_hosts: n,
            host_rates: vec![Rate::gbps(100); n as usize],
            racks: (0..n).collect::<Vec<_>>().chunks(4).map(|c| c.to_vec()).collect(),
            base_dir: scratch_dir(),
            file_limit: DEFAULT_INPUT_FILE_LIMIT,
        }
    }

    fn scratch_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("dcnsim-workload-tests-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write(name: &str, text: &str) -> String {
        std::fs::write(scratch_dir().join(name), text).unwrap();
        name.to_string()
    }

    fn gen(tables: Value, env: &WorkloadEnv, seed: u64) -> Vec<FlowSpec> {
        build(tables.as_array().unwrap(), env).unwrap().generate(&mut Rng::new(seed))
    }

    fn err(tables: Value, env: &WorkloadEnv) -> WorkloadError {
        let e = build(tables.as_array().unwrap(), env).unwrap_err();
        assert!(e.to_string().starts_with(&format!("{}: ", e.field())), "{e}");
        e
    }

    #[test]
    fn size_cdf_mixes_components_by_expected_flows() {
        let e = env(16);
        let w = build(
            json!([
                {"pattern": "poisson", "load": 0.3, "size": "1000B", "flows": 300},
                {"pattern": "incast", "receiver": 0, "senders": 4, "rounds": 25, "round_interval": "10us", "size": "5KB"},
                {"pattern": "background", "pairs": [[0, 1]]}
            ])
            .as_array()
            .unwrap(),
            &e,
        )
        .unwrap();
        // 300 flows of 1000 B and 100 of 5000 B; the background flow is left out.
        assert_eq!(w.size_cdf(), Some(vec![(1000, 0.75), (5000, 1.0)]));
        let bg = build(json!([{"pattern": "background", "pairs": [[0, 1]]}]).as_array().unwrap(), &e).unwrap();
        assert_eq!(bg.size_cdf(), None);
        // A shipped CDF read as steps gives its points; read linearly, 16 steps per segment
        // whose mean matches the sampler's mean to within a sub-step.
        for reading in ["step", "linear"] {
            let w = build(
                json!([{"pattern": "poisson", "load": 0.3, "cdf": "websearch", "cdf_reading": reading, "flows": 10}])
                    .as_array()
                    .unwrap(),
                &e,
            )
            .unwrap();
            let pts = w.size_cdf().unwrap();
            assert!(pts.windows(2).all(|p| p[0].0 < p[1].0 && p[0].1 <= p[1].1));
            assert_eq!(pts.last().unwrap().1, 1.0);
            let mut prev = 0.0;
            let mean: f64 = pts
                .iter()
                .map(|&(s, p)| {
                    let m = (p - prev) * s as f64;
                    prev = p;
                    m
                })
                .sum();
            let exact = builtin::find("websearch")
                .unwrap()
                .load(if reading == "step" { Reading::Step } else { Reading::Linear })
                .unwrap()
                .mean_bytes();
            let tol = if reading == "step" { 1e-9 } else { 1e-4 };
            assert!((mean - exact).abs() / exact < tol, "{reading}: {mean} vs {exact}");
        }
    }

    #[test]
    fn facts_name_the_one_shipped_cdf_and_sum_the_poisson_loads() {
        let e = env(16);
        let facts = |tables: Value| build(tables.as_array().unwrap(), &e).unwrap().facts();
        let f = |cdf: Option<&'static str>, load: Option<f64>| WorkloadFacts { shipped_cdf: cdf, load };
        assert_eq!(
            facts(
                json!([{"pattern": "poisson", "load": 0.5, "cdf": "WEB_SEARCH", "cdf_reading": "step", "flows": 10}])
            ),
            f(Some("websearch"), Some(0.5))
        );
        // Two Poisson components on one CDF plus background flows: loads add up.
        assert_eq!(
            facts(json!([
                {"pattern": "poisson", "load": 0.3, "cdf": "vl2", "flows": 10},
                {"pattern": "left_right", "load": 0.2, "cdf": "datamining", "flows": 10},
                {"pattern": "background", "count": 2}
            ])),
            f(Some("datamining"), Some(0.5))
        );
        // Incast rounds on the CDF: no Poisson load, the CDF is still the one CDF.
        assert_eq!(
            facts(json!([{"pattern": "incast", "receiver": 0, "senders": 4, "cdf": "websearch"}])),
            f(Some("websearch"), None)
        );
        // A mix with a fixed size, two shipped CDFs, a uniform range: no single shipped CDF.
        assert_eq!(
            facts(json!([
                {"pattern": "poisson", "load": 0.4, "cdf": "websearch", "flows": 10},
                {"pattern": "incast", "receiver": 0, "senders": 4}
            ])),
            f(None, Some(0.4))
        );
        assert_eq!(
            facts(json!([
                {"pattern": "poisson", "load": 0.4, "cdf": "websearch", "flows": 10},
                {"pattern": "permutation", "cdf": "hadoop"}
            ])),
            f(None, Some(0.4))
        );
        assert_eq!(facts(json!([{"pattern": "permutation", "uniform": {"min": "1B", "max": "9B"}}])), f(None, None));
        assert_eq!(facts(json!([{"pattern": "background", "count": 2}])), f(None, None));
    }

    #[test]
    fn poisson_offers_the_requested_load() {
        let e = env(16);
        let mean = builtin::find("websearch").unwrap().load(Reading::Linear).unwrap().mean_bytes();
        // lambda = 0.5 x 16 x 100 Gbps / (8 x mean): run long enough for ~200k flows.
        let lambda = 0.5 * 16.0 * 100e9 / (8.0 * mean);
        let secs = 200_000.0 / lambda;
        let dur = Time::from_secs_f64(secs);
        let flows = gen(json!([{"pattern": "poisson", "load": 0.5, "cdf": "websearch", "duration": dur}]), &e, 7);
        let bytes: f64 = flows.iter().map(|f| f.size.0 as f64).sum();
        let offered = bytes * 8.0 / (dur.as_secs_f64() * 16.0 * 100e9);
        assert!((offered - 0.5).abs() / 0.5 < 0.03, "offered load {offered}");
        assert!((flows.len() as f64 - 200_000.0).abs() < 2_000.0, "{} flows", flows.len());
        assert!(flows.iter().all(|f| f.src != f.dst && f.src < 16 && f.dst < 16 && !f.background));
        assert!(flows.windows(2).all(|w| w[0].start <= w[1].start));
        assert!(flows.last().unwrap().start < dur);
        // Sources and destinations are uniform: every host sends about 1/16 of the flows.
        let mut per_src = [0usize; 16];
        flows.iter().for_each(|f| per_src[f.src as usize] += 1);
        assert!(per_src.iter().all(|&c| (c as f64 - 12_500.0).abs() < 500.0), "{per_src:?}");
    }

    #[test]
    fn poisson_stops_after_flows_and_respects_hosts_and_deadlines() {
        let e = env(32);
        let flows = gen(
            json!([{"pattern": "poisson", "load": 0.3, "uniform": {"min": "2KB", "max": "198KB"},
                    "hosts": [3, 5, 7], "flows": 1000, "start": "1ms",
                    "deadline": {"min": "100us", "max": "200us"}}]),
            &e,
            1,
        );
        assert_eq!(flows.len(), 1000);
        let hosts: BTreeSet<u32> = flows.iter().flat_map(|f| [f.src, f.dst]).collect();
        assert_eq!(hosts, BTreeSet::from([3, 5, 7]));
        assert!(flows.iter().all(|f| f.src != f.dst && f.start > Time::ms(1)));
        assert!(flows.iter().all(|f| (2_000..=198_000).contains(&f.size.0)));
        assert!(flows.iter().all(|f| matches!(f.deadline, Some(d) if d >= Time::us(100) && d <= Time::us(200))));
        let mean = flows.iter().map(|f| f.size.0 as f64).sum::<f64>() / 1000.0;
        assert!((mean - 100_000.0).abs() < 5_000.0, "{mean}");
    }

    /// `deadline = "2ms"` gives every flow that deadline (as `{min = max}`); a bad time or a
    /// zero deadline names the field.
    #[test]
    fn fixed_deadline_is_the_same_for_every_flow() {
        let e = env(8);
        for spec in [json!("2ms"), json!({"min": "2ms", "max": "2ms"})] {
            let flows =
                gen(json!([{"pattern": "poisson", "load": 0.3, "size": "10KB", "flows": 50, "deadline": spec}]), &e, 1);
            assert!(flows.iter().all(|f| f.deadline == Some(Time::ms(2))), "{spec}");
        }
        let a =
            gen(json!([{"pattern": "incast", "receiver": 0, "senders": 3, "size": "10KB", "deadline": "3us"}]), &e, 1);
        assert!(!a.is_empty() && a.iter().all(|f| f.deadline == Some(Time::us(3))));
        for bad in [json!("soon"), json!("0ms"), json!([1, 2])] {
            let x = err(json!([{"pattern": "poisson", "load": 0.3, "size": "10KB", "flows": 5, "deadline": bad}]), &e);
            assert_eq!(x.field(), "workload[0].deadline", "{bad}: {x}");
        }
    }

    #[test]
    fn poisson_with_receivers_loads_the_receivers_links() {
        let e = env(4);
        let mean = builtin::find("websearch").unwrap().load(Reading::Linear).unwrap().mean_bytes();
        // Two senders, one receiver: lambda = 0.5 x (one 100G link) / (8 x mean).
        let lambda = 0.5 * 100e9 / (8.0 * mean);
        let dur = Time::from_secs_f64(50_000.0 / lambda);
        let flows = gen(
            json!([{"pattern": "poisson", "load": 0.5, "cdf": "websearch", "hosts": [0, 1, 2],
                    "receivers": [2], "duration": dur}]),
            &e,
            5,
        );
        assert!(flows.iter().all(|f| f.dst == 2 && f.src < 2));
        let per0 = flows.iter().filter(|f| f.src == 0).count() as f64 / flows.len() as f64;
        assert!((per0 - 0.5).abs() < 0.02, "{per0}");
        let offered = flows.iter().map(|f| f.size.0 as f64).sum::<f64>() * 8.0 / (dur.as_secs_f64() * 100e9);
        assert!((offered - 0.5).abs() < 0.03, "offered load on the receiver's link {offered}");
        let e2 = err(json!([{"pattern": "poisson", "load": 0.5, "flows": 10, "receivers": [9]}]), &e);
        assert_eq!(e2.field(), "workload[0].receivers");
    }

    #[test]
    fn incast_load_sets_the_poisson_round_rate_on_the_receivers_link() {
        let e = env(64);
        // 32 senders x 64 KB per round at load 0.6 of one 100G link: 0.6e11 / (8 x 32 x 64e3)
        // = 3662 rounds/s; 2000 rounds take ~0.546 s.
        let flows =
            gen(json!([{"pattern": "incast", "receiver": 0, "senders": 32, "rounds": 2000, "load": 0.6}]), &e, 9);
        assert_eq!(flows.len(), 64_000);
        let span = flows.iter().map(|f| f.start).max().unwrap().as_secs_f64();
        let offered = flows.iter().map(|f| f.size.0 as f64).sum::<f64>() * 8.0 / (span * 100e9);
        assert!((offered - 0.6).abs() < 0.03, "offered load on the receiver's link {offered}");
        let e2 = err(
            json!([{"pattern": "incast", "receiver": 0, "senders": 4, "rounds": 3, "load": 0.5, "round_interval": "1us"}]),
            &e,
        );
        assert_eq!(e2.field(), "workload[0].load");
    }

    #[test]
    fn incast_flows_per_sender_gives_more_flows_than_hosts() {
        // 8 hosts, 7 senders x 3 flows = 21 flows per round (PPT Fig. 23's N > hosts).
        let e = env(8);
        let w = json!([{"pattern": "incast", "receiver": 0, "senders": 7, "flows_per_sender": 3, "rounds": 2,
                        "round_interval": "100us"}]);
        let flows = gen(w, &e, 3);
        assert_eq!(flows.len(), 42);
        for start in [Time::ZERO, Time::us(100)] {
            let mut per: BTreeMap<u32, u32> = BTreeMap::new();
            for f in flows.iter().filter(|f| f.start == start) {
                *per.entry(f.src).or_default() += 1;
            }
            assert_eq!(per.len(), 7);
            assert!(per.values().all(|&n| n == 3) && !per.contains_key(&0), "{per:?}");
        }
        // The load formula counts every flow: 3x the flows per round, 1/3 the round rate.
        let one = gen(json!([{"pattern": "incast", "receiver": 0, "senders": 7, "rounds": 400, "load": 0.5}]), &e, 9);
        let three = gen(
            json!([{"pattern": "incast", "receiver": 0, "senders": 7, "flows_per_sender": 3, "rounds": 400, "load": 0.5}]),
            &e,
            9,
        );
        let span = |v: &[FlowSpec]| v.iter().map(|f| f.start.0).max().unwrap() as f64;
        let ratio = span(&three) / span(&one);
        assert!((2.5..3.5).contains(&ratio), "{ratio}");
        let bad = json!([{"pattern": "incast", "receiver": 0, "senders": 7, "flows_per_sender": 0}]);
        assert_eq!(err(bad, &e).field(), "workload[0].flows_per_sender");
    }

    #[test]
    fn incast_barrier_plan_puts_rounds_last_and_errors_name_the_field() {
        let e = env(8);
        let w = json!([
            {"pattern": "incast", "receiver": 0, "senders": [1, 2, 3], "rounds": 4, "barrier": true, "gap": "5us",
             "start": "1ms", "jitter": "2us"},
            {"pattern": "incast", "receiver": 4, "senders": [5], "rounds": 2, "round_interval": "3ms"}
        ]);
        let wl = build(w.as_array().unwrap(), &e).unwrap();
        let plan = wl.plan(&mut Rng::new(3));
        assert_eq!(plan.flows.len(), 2 + 12);
        assert_eq!(plan.flows[0].dst, 4, "open-loop flows first");
        assert_eq!(plan.chains.len(), 1);
        let ch = &plan.chains[0];
        assert_eq!((ch.start, ch.gap, ch.first, ch.per_round, ch.rounds), (Time::ms(1), Time::us(5), 2, 3, 4));
        assert_eq!(ch.offsets.len(), 12);
        assert!(ch.offsets.iter().all(|o| *o <= Time::us(2)));
        assert_eq!(wl.generate(&mut Rng::new(3)), plan.flows);
        // Without barrier components the plan is the sorted flow list of before.
        let plain = json!([{"pattern": "incast", "receiver": 0, "senders": 3, "rounds": 2, "round_interval": "1us"}]);
        assert!(build(plain.as_array().unwrap(), &e).unwrap().plan(&mut Rng::new(1)).chains.is_empty());
        for (bad, field) in [
            (json!({"barrier": true, "round_interval": "1ms"}), "workload[0].barrier"),
            (json!({"barrier": true, "load": 0.5}), "workload[0].barrier"),
            (json!({"barrier": true, "rounds_per_second": 10}), "workload[0].barrier"),
            (json!({"gap": "1us"}), "workload[0].gap"),
            (json!({"barrier": false, "gap": "1us"}), "workload[0].gap"),
            (json!({"barrier": "yes"}), "workload[0].barrier"),
        ] {
            let mut t = json!({"pattern": "incast", "receiver": 0, "senders": 2, "rounds": 3});
            for (k, v) in bad.as_object().unwrap() {
                t[k] = v.clone();
            }
            let x = err(json!([t]), &e);
            assert_eq!(x.field(), field, "{bad}: {x}");
        }
    }

    #[test]
    fn incast_rounds_have_the_declared_structure() {
        let e = env(32);
        let flows = gen(
            json!([{"pattern": "incast", "receiver": 5, "senders": 8, "rounds": 4, "round_interval": "100us"}]),
            &e,
            3,
        );
        assert_eq!(flows.len(), 32);
        let mut rounds: BTreeMap<Time, Vec<u32>> = BTreeMap::new();
        for f in &flows {
            assert_eq!((f.dst, f.size, f.deadline), (5, Bytes(64_000), None));
            rounds.entry(f.start).or_default().push(f.src);
        }
        let starts: Vec<Time> = rounds.keys().copied().collect();
        assert_eq!(starts, vec![Time::ZERO, Time::us(100), Time::us(200), Time::us(300)]);
        let mut sets = BTreeSet::new();
        for senders in rounds.values() {
            let distinct: BTreeSet<u32> = senders.iter().copied().collect();
            assert_eq!(distinct.len(), 8, "{senders:?}");
            assert!(!distinct.contains(&5));
            sets.insert(distinct);
        }
        assert!(sets.len() > 1, "senders are redrawn every round");

        // Listed senders with jitter: every round has exactly those senders within the jitter.
        let flows = gen(
            json!([{"pattern": "incast", "receiver": 0, "senders": [1, 2, 3], "rounds": 3,
                    "round_interval": "1ms", "jitter": "2us", "size": "10KB"}]),
            &e,
            3,
        );
        assert_eq!(flows.len(), 9);
        for f in &flows {
            let round = f.start.0 / Time::ms(1).0;
            assert!(f.start.0 - round * Time::ms(1).0 <= Time::us(2).0);
            assert_eq!(f.size, Bytes(10_000));
        }
        for r in 0..3u64 {
            let mut s: Vec<u32> = flows.iter().filter(|f| f.start.0 / Time::ms(1).0 == r).map(|f| f.src).collect();
            s.sort_unstable();
            assert_eq!(s, vec![1, 2, 3]);
        }

        // Poisson rounds: mean gap between round starts ~ 1 / rounds_per_second.
        let flows = gen(
            json!([{"pattern": "incast", "receiver": 0, "senders": 2, "rounds": 2000, "rounds_per_second": 10000}]),
            &e,
            9,
        );
        let starts: BTreeSet<Time> = flows.iter().map(|f| f.start).collect();
        assert_eq!(starts.len(), 2000);
        let span = starts.last().unwrap().as_secs_f64() - starts.first().unwrap().as_secs_f64();
        let mean_gap = span / 1999.0;
        assert!((mean_gap - 1e-4).abs() < 0.1e-4, "{mean_gap}");
    }

    #[test]
    fn permutation_is_a_derangement() {
        let e = env(24);
        for seed in 0..20 {
            let flows = gen(json!([{"pattern": "permutation", "size": "1MB"}]), &e, seed);
            assert_eq!(flows.len(), 24);
            let srcs: BTreeSet<u32> = flows.iter().map(|f| f.src).collect();
            let dsts: BTreeSet<u32> = flows.iter().map(|f| f.dst).collect();
            assert_eq!(srcs.len(), 24);
            assert_eq!(dsts.len(), 24);
            assert!(flows.iter().all(|f| f.src != f.dst && f.size == Bytes(1_000_000) && f.start == Time::ZERO));
        }
        let flows = gen(json!([{"pattern": "permutation", "shift": -1, "cdf": "hadoop", "start": "5us"}]), &e, 0);
        assert!(flows.iter().all(|f| f.dst == (f.src + 23) % 24 && f.start == Time::us(5)));
    }

    #[test]
    fn left_right_sends_across_at_the_senders_load() {
        let e = env(16);
        let flows = gen(
            json!([{"pattern": "left_right", "load": 0.4, "uniform": {"min": "1000B", "max": "99000B"}, "duration": "20ms"}]),
            &e,
            5,
        );
        assert!(flows.iter().all(|f| f.src < 8 && f.dst >= 8));
        let bytes: f64 = flows.iter().map(|f| f.size.0 as f64).sum();
        let offered = bytes * 8.0 / (0.02 * 8.0 * 100e9);
        assert!((offered - 0.4).abs() < 0.02, "{offered} over {} flows", flows.len());
        // By racks (4 racks of 4 hosts): racks 0-1 send to racks 2-3.
        let flows = gen(
            json!([{"pattern": "left_right", "load": 0.2, "split": "racks", "size": "1000B", "flows": 500}]),
            &e,
            5,
        );
        assert!(flows.iter().all(|f| f.src < 8 && f.dst >= 8));
    }

    #[test]
    fn background_flows_are_long_lived() {
        let e = env(8);
        let flows = gen(json!([{"pattern": "background", "pairs": [[0, 1], [2, 3]], "start": "1us"}]), &e, 0);
        assert_eq!(flows.len(), 2);
        assert!(flows.iter().all(|f| f.background && f.size == Bytes(u64::MAX / 4) && f.start == Time::us(1)));
        assert_eq!((flows[0].src, flows[0].dst, flows[1].src, flows[1].dst), (0, 1, 2, 3));
        for count in [5, 50, 56] {
            let flows = gen(json!([{"pattern": "background", "count": count, "size": "1GB"}]), &e, 4);
            let pairs: BTreeSet<(u32, u32)> = flows.iter().map(|f| (f.src, f.dst)).collect();
            assert_eq!(pairs.len(), count);
            assert!(flows.iter().all(|f| f.src != f.dst && f.size == Bytes(1_000_000_000)));
        }
    }

    #[test]
    fn explicit_and_hpcc_files_are_read() {
        let e = env(4);
        let csv = write("flows_ok.csv", "src,dst,size,start,deadline\n0,1,1500,10,\n2,3,64KB,5,100\n");
        let flows = gen(json!([{"pattern": "explicit", "file": csv}]), &e, 0);
        assert_eq!(flows.len(), 2);
        assert_eq!((flows[0].src, flows[0].start, flows[0].deadline), (2, Time::us(5), Some(Time::us(100))));
        assert_eq!((flows[1].size, flows[1].start), (Bytes(1500), Time::us(10)));
        let flows = gen(json!([{"pattern": "explicit", "file": csv, "time_unit": "ns"}]), &e, 0);
        assert_eq!(flows[0].start, Time::ns(5));
        let hp = write("flow_ok.txt", "2\n0 1 3 100 1000 2.0\n1 0 3 100 2000 1.5\n");
        let flows = gen(json!([{"pattern": "hpcc", "file": hp}]), &e, 0);
        assert_eq!(flows.len(), 2);
        assert_eq!((flows[0].src, flows[0].size, flows[0].start), (1, Bytes(2000), Time::ms(1500)));
    }

    #[test]
    fn components_merge_sorted_with_ties_in_generation_order() {
        let e = env(8);
        let flows = gen(
            json!([
                {"pattern": "background", "pairs": [[7, 6]]},
                {"pattern": "permutation", "shift": 1, "size": "100B"},
                {"pattern": "incast", "receiver": 0, "senders": [1, 2], "start": "1us"},
            ]),
            &e,
            0,
        );
        assert_eq!(flows.len(), 1 + 8 + 2);
        assert!(flows[0].background && flows[0].src == 7);
        let perm: Vec<u32> = flows[1..9].iter().map(|f| f.src).collect();
        assert_eq!(perm, (0..8).collect::<Vec<_>>());
        assert!(flows[9..].iter().all(|f| f.dst == 0 && f.start == Time::us(1)));
    }

    #[test]
    fn same_seed_same_flows_other_seed_differs() {
        let e = env(16);
        let tables = json!([
            {"pattern": "poisson", "load": 0.6, "cdf": "datamining", "flows": 2000},
            {"pattern": "incast", "receiver": 3, "senders": 10, "rounds": 5, "rounds_per_second": 1e4, "jitter": "1us"},
            {"pattern": "permutation", "cdf": "w1"},
            {"pattern": "background", "count": 3},
        ]);
        let a = gen(tables.clone(), &e, 42);
        let b = gen(tables.clone(), &e, 42);
        let c = gen(tables.clone(), &e, 43);
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Appending a component leaves the earlier components' flows unchanged.
        let mut more = tables.as_array().unwrap().clone();
        more.push(json!({"pattern": "permutation", "size": "5B"}));
        let d = gen(Value::Array(more), &e, 42);
        let without: Vec<FlowSpec> = d.into_iter().filter(|f| f.size != Bytes(5)).collect();
        assert_eq!(a.iter().filter(|f| f.size != Bytes(5)).cloned().collect::<Vec<_>>(), without);
    }

    #[test]
    fn describe_fills_defaults_and_round_trips() {
        let e = env(16);
        let cdf = write("mine_ns2.txt", "1 1 0\n10 1 0.5\n100 1 1\n");
        let tables = json!([
            {"pattern": "poisson", "load": 0.5, "cdf": "WebSearch", "flows": 300},
            {"pattern": "poisson", "load": 0.5, "cdf": cdf, "cdf_unit": "packets", "duration": "1ms"},
            {"pattern": "left_right", "load": 0.1, "size": "1KB", "flows": 10, "split": "racks"},
            {"pattern": "incast", "receiver": 1, "senders": 4},
            {"pattern": "permutation", "uniform": {"min": "1B", "max": "10B"}},
            {"pattern": "background", "count": 2},
            {"pattern": "explicit", "file": write("rt.csv", "src,dst,size,start\n0,1,1,1\n")},
            {"pattern": "hpcc", "file": write("rt.txt", "1\n0 1 3 100 10 0\n")},
        ]);
        let w = build(tables.as_array().unwrap(), &e).unwrap();
        let d = w.describe();
        let arr = d.as_array().unwrap();
        assert_eq!(arr.len(), 8);
        assert_eq!(arr[0]["cdf"], "websearch");
        assert_eq!(arr[0]["cdf_reading"], "linear");
        assert_eq!(arr[0]["hosts"], "all");
        assert_eq!(arr[0]["start"], "0ps");
        assert_eq!(arr[0]["duration"], Value::Null);
        assert!((arr[0]["derived"]["mean_size_bytes"].as_f64().unwrap() - 1.711e6).abs() < 0.01e6);
        assert_eq!(arr[1]["cdf_format"], "ns2");
        assert_eq!(arr[1]["cdf_packet_size"], "1460B");
        assert_eq!(arr[3]["size"], "64KB");
        assert_eq!(arr[3]["rounds"], 1);
        assert_eq!(arr[5]["size"], format!("{}B", u64::MAX / 4));
        assert_eq!(arr[6]["time_unit"], "us");
        let stripped: Vec<Value> = arr
            .iter()
            .map(|t| {
                let mut t = t.as_object().unwrap().clone();
                t.remove("derived");
                Value::Object(t)
            })
            .collect();
        let again = build(&stripped, &e).unwrap();
        assert_eq!(again.describe(), d);
        assert_eq!(again.generate(&mut Rng::new(9)), w.generate(&mut Rng::new(9)));
    }

    #[test]
    fn cdf_reading_can_be_overridden_and_user_files_are_read() {
        let e = env(4);
        let w = build(&[json!({"pattern": "permutation", "cdf": "websearch", "cdf_reading": "step"})], &e).unwrap();
        let mean = w.describe()[0]["derived"]["mean_size_bytes"].as_f64().unwrap();
        assert!((mean - 2.435e6).abs() / 2.435e6 < 0.005, "{mean}");
        let f = write("user_pct.csv", "0,0\n1000,50\n3000,100\n");
        let w = build(&[json!({"pattern": "permutation", "cdf": f, "cdf_unit": "KB"})], &e).unwrap();
        let mean = w.describe()[0]["derived"]["mean_size_bytes"].as_f64().unwrap();
        assert!((mean - 1_250_000.5).abs() < 1e-6, "{mean}");
        assert_eq!(w.describe()[0]["cdf_format"], "pct");
    }

    #[test]
    fn bad_inputs_name_their_field() {
        let e = env(8);
        let ok = |extra: Value| {
            let mut t = json!({"pattern": "poisson", "load": 0.5, "cdf": "websearch", "flows": 10});
            for (k, v) in extra.as_object().unwrap() {
                if v.is_null() {
                    t.as_object_mut().unwrap().remove(k);
                } else {
                    t[k] = v.clone();
                }
            }
            json!([{"pattern": "permutation", "size": "1B"}, t])
        };
        assert!(build(ok(json!({})).as_array().unwrap(), &e).is_ok());

        let x = err(ok(json!({"pattern": "gossip"})), &e);
        assert!(matches!(&x, WorkloadError::UnknownPattern { got, .. } if got == "gossip"));
        assert_eq!(x.field(), "workload[1].pattern");
        assert!(x.to_string().contains("poisson, incast"), "{x}");

        let x = err(ok(json!({"pattern": null})), &e);
        assert!(matches!(x, WorkloadError::MissingField { .. }));
        assert_eq!(x.field(), "workload[1].pattern");

        let x = err(ok(json!({"laod": 0.5})), &e);
        assert!(matches!(x, WorkloadError::UnknownField { .. }));
        assert_eq!(x.field(), "workload[1].laod");

        for bad in [1.0, 1.2, 0.0, -0.1] {
            let x = err(ok(json!({"load": bad})), &e);
            assert!(matches!(x, WorkloadError::OutOfRange { .. }), "{x:?}");
            assert_eq!(x.field(), "workload[1].load");
        }
        assert_eq!(
            err(ok(json!({"load": 1.2})), &e).to_string(),
            "workload[1].load: must be in (0, 1), got 1.2; set a load below 1"
        );

        let x = err(ok(json!({"flows": null})), &e);
        assert!(matches!(x, WorkloadError::MissingStop { .. }));
        assert!(x.field().starts_with("workload[1]"));
        assert!(x.to_string().contains("duration"), "{x}");

        let x = err(ok(json!({"load": "half"})), &e);
        assert!(matches!(x, WorkloadError::InvalidValue { .. }));
        assert_eq!(x.field(), "workload[1].load");

        let x = err(ok(json!({"size": "64KB"})), &e);
        assert!(matches!(x, WorkloadError::Conflict { .. }));

        let x = err(ok(json!({"cdf_format": "pct"})), &e);
        assert!(matches!(x, WorkloadError::Conflict { .. }));
        assert_eq!(x.field(), "workload[1].cdf_format");

        let x = err(ok(json!({"cdf": null})), &e);
        assert!(matches!(x, WorkloadError::MissingField { .. }));
        assert_eq!(x.field(), "workload[1].cdf");

        let x = err(ok(json!({"cdf": "no_such_cdf.txt"})), &e);
        assert!(matches!(x, WorkloadError::CdfNotFound { .. }));
        assert_eq!(x.field(), "workload[1].cdf");
        assert!(x.to_string().contains("websearch"), "{x}");

        let f = write("bad_monotone.txt", "0 0\n100 0.5\n200 0.4\n300 1\n");
        let x = err(ok(json!({"cdf": f})), &e);
        assert!(
            matches!(&x, WorkloadError::Cdf { line: Some(3), problem: CdfProblem::CdfDecreasing { .. }, .. }),
            "{x:?}"
        );
        assert_eq!(x.field(), "workload[1].cdf");
        assert!(x.to_string().contains("bad_monotone.txt line 3"), "{x}");

        let f = write("bad_end.txt", "0 0\n100 50\n200 90\n");
        let x = err(ok(json!({"cdf": f})), &e);
        assert!(
            matches!(&x, WorkloadError::Cdf { line: Some(3), problem: CdfProblem::NotReachingOne { .. }, .. }),
            "{x:?}"
        );

        let x = err(ok(json!({"hosts": [1, 9]})), &e);
        assert!(matches!(x, WorkloadError::UnknownHost { host: 9, .. }));
        assert_eq!(x.field(), "workload[1].hosts");

        let x = err(ok(json!({"hosts": [1, 1]})), &e);
        assert!(matches!(x, WorkloadError::DuplicateHost { host: 1, .. }));

        let x = err(ok(json!({"hosts": [1]})), &e);
        assert!(matches!(x, WorkloadError::TooFewHosts { .. }));

        let x = err(ok(json!({"duration": "1000s", "flows": null})), &e);
        assert!(matches!(x, WorkloadError::TooManyFlows { .. }));
        assert_eq!(x.field(), "workload[1].duration");

        let x = err(json!([42]), &e);
        assert!(matches!(x, WorkloadError::NotATable { .. }));
        assert_eq!(x.field(), "workload[0]");

        let mut slow = env(8);
        slow.host_rates[2] = Rate(0);
        let x = err(ok(json!({})), &slow);
        assert!(matches!(x, WorkloadError::NoLinkRate { host: 2, .. }));
    }

    #[test]
    fn bad_pattern_specific_inputs() {
        let e = env(8);
        let x = err(json!([{"pattern": "incast", "receiver": 8, "senders": 2}]), &e);
        assert!(matches!(x, WorkloadError::UnknownHost { host: 8, .. }));
        assert_eq!(x.field(), "workload[0].receiver");
        let x = err(json!([{"pattern": "incast", "receiver": 0, "senders": 8}]), &e);
        assert!(matches!(x, WorkloadError::TooFewHosts { .. }));
        let x = err(json!([{"pattern": "incast", "receiver": 0, "senders": [0, 1]}]), &e);
        assert_eq!(x.field(), "workload[0].senders");
        let x = err(json!([{"pattern": "incast", "receiver": 0, "senders": 2, "rounds": 3}]), &e);
        assert!(matches!(x, WorkloadError::MissingField { .. }));
        assert_eq!(x.field(), "workload[0].round_interval");
        let x = err(
            json!([{"pattern": "incast", "receiver": 0, "senders": 2, "rounds": 3, "round_interval": "1us", "rounds_per_second": 5}]),
            &e,
        );
        assert!(matches!(x, WorkloadError::Conflict { .. }));
        let x = err(json!([{"pattern": "permutation", "shift": 8, "size": "1B"}]), &e);
        assert_eq!(x.field(), "workload[0].shift");
        let x = err(json!([{"pattern": "permutation"}]), &e);
        assert_eq!(x.field(), "workload[0].cdf");
        let x = err(json!([{"pattern": "background", "pairs": [[0, 1], [3, 3]]}]), &e);
        assert_eq!(x.field(), "workload[0].pairs[1]");
        let x = err(json!([{"pattern": "background", "count": 57}]), &e);
        assert_eq!(x.field(), "workload[0].count");
        let x = err(json!([{"pattern": "left_right", "load": 0.5, "size": "1B", "flows": 1, "split": "racks"}]), &{
            let mut one = env(8);
            one.racks = vec![(0..8).collect()];
            one
        });
        assert_eq!(x.field(), "workload[0].split");

        let csv = write("bad_host.csv", "src,dst,size,start\n0,1,100,0\n1,12,100,0\n");
        let x = err(json!([{"pattern": "explicit", "file": csv}]), &e);
        assert!(matches!(
            &x,
            WorkloadError::FlowFile { line: 3, problem: FlowFileProblem::UnknownHost { host: 12, num_hosts: 8 }, .. }
        ));
        assert_eq!(x.field(), "workload[0].file");
        assert!(x.to_string().contains("bad_host.csv line 3"), "{x}");
        let hp = write("bad_host.txt", "1\n0 8 3 100 10 0\n");
        let x = err(json!([{"pattern": "hpcc", "file": hp}]), &e);
        assert!(matches!(&x, WorkloadError::FlowFile { line: 2, problem: FlowFileProblem::UnknownHost { .. }, .. }));
        let x = err(json!([{"pattern": "hpcc", "file": "nope/flow.txt"}]), &e);
        assert!(matches!(x, WorkloadError::FileRead { .. }));
        let x = err(json!([{"pattern": "explicit", "file": csv, "time_unit": "fortnights"}]), &e);
        assert_eq!(x.field(), "workload[0].time_unit");
    }

    #[test]
    fn empty_workload_generates_nothing() {
        let w = build(&[], &env(2)).unwrap();
        assert!(w.is_empty());
        assert!(w.generate(&mut Rng::new(1)).is_empty());
        assert_eq!(w.describe(), json!([]));
    }
}
