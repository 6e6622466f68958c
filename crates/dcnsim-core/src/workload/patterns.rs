//! Arrival patterns: validation of each pattern's raw table into a typed component, flow
//! generation, and the normalized description.
//!
//! Every component draws from its own generator, and inside a component arrival times,
//! endpoints, sizes and deadlines come from separate streams, so changing the size
//! distribution of a Poisson component leaves its arrival times and endpoints unchanged.

use super::flowfile;
use super::raw::{
    self, size_fields, DeadlineVal, HostsVal, RangeOf, RawBackground, RawExplicit, RawHpcc, RawIncast, RawLeftRight,
    RawPermutation, RawPoisson, SendersVal, Split, TimeUnit,
};
use super::sizes::SizeDist;
use super::{FlowSpec, WorkloadEnv, WorkloadError, MAX_FLOWS_PER_COMPONENT};
use crate::rng::Rng;
use crate::units::{Bytes, Time, PS_PER_S};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::path::PathBuf;

/// Default size of an incast response (64 KB, 1 KB = 1000 B).
pub(crate) const DEFAULT_INCAST_SIZE: Bytes = Bytes(64_000);
/// Default size of a background flow: effectively endless.
pub(crate) const DEFAULT_BACKGROUND_SIZE: Bytes = Bytes(u64::MAX / 4);

/// Validation context: the table's path and the network.
struct Ctx<'a> {
    prefix: String,
    env: &'a WorkloadEnv,
}

impl Ctx<'_> {
    fn field(&self, name: &str) -> String {
        format!("{}.{name}", self.prefix)
    }

    fn host(&self, name: &str, h: u32) -> Result<u32, WorkloadError> {
        if h < self.env.num_hosts {
            Ok(h)
        } else {
            Err(WorkloadError::UnknownHost { field: self.field(name), host: h as u64, num_hosts: self.env.num_hosts })
        }
    }

    /// Distinct existing hosts; `None` or "all" = every host.
    fn hosts(&self, name: &str, v: Option<&HostsVal>) -> Result<Vec<u32>, WorkloadError> {
        match v {
            None | Some(HostsVal::All) => Ok((0..self.env.num_hosts).collect()),
            Some(HostsVal::List(list)) => {
                let mut seen = HashSet::new();
                for &h in list {
                    self.host(name, h)?;
                    if !seen.insert(h) {
                        return Err(WorkloadError::DuplicateHost { field: self.field(name), host: h });
                    }
                }
                Ok(list.clone())
            }
        }
    }

    fn at_least(&self, name: &str, hosts: &[u32], need: usize) -> Result<(), WorkloadError> {
        if hosts.len() < need {
            Err(WorkloadError::TooFewHosts { field: self.field(name), need, got: hosts.len() })
        } else {
            Ok(())
        }
    }

    /// Sum of the link rates of `hosts`, in bit/s.
    fn rate_sum(&self, name: &str, hosts: &[u32]) -> Result<f64, WorkloadError> {
        let mut sum = 0.0;
        for &h in hosts {
            match self.env.host_rates.get(h as usize) {
                Some(r) if r.0 > 0 => sum += r.0 as f64,
                _ => return Err(WorkloadError::NoLinkRate { field: self.field(name), host: h }),
            }
        }
        Ok(sum)
    }

    fn out_of_range(&self, name: &str, got: impl ToString, constraint: &str, hint: &str) -> WorkloadError {
        WorkloadError::OutOfRange {
            field: self.field(name),
            got: got.to_string(),
            constraint: constraint.to_string(),
            hint: hint.to_string(),
        }
    }

    fn missing(&self, name: &str, hint: &str) -> WorkloadError {
        WorkloadError::MissingField { field: self.field(name), hint: hint.to_string() }
    }

    fn load(&self, load: Option<f64>) -> Result<f64, WorkloadError> {
        let l = load.ok_or_else(|| self.missing("load", "set the offered load, e.g. load = 0.5"))?;
        if l > 0.0 && l < 1.0 {
            Ok(l)
        } else {
            let hint = if l >= 1.0 { "set a load below 1" } else { "set a load above 0" };
            Err(self.out_of_range("load", l, "in (0, 1)", hint))
        }
    }

    fn deadline(&self, d: Option<DeadlineVal>) -> Result<Option<(Time, Time)>, WorkloadError> {
        match d.map(|v| v.0) {
            None => Ok(None),
            Some(RangeOf { min, max }) if min.0 > 0 && min <= max => Ok(Some((min, max))),
            Some(RangeOf { min, max }) => Err(self.out_of_range(
                "deadline",
                format!("{{min = {}, max = {}}}", min.0, max.0),
                "0 < min <= max",
                "give e.g. deadline = {min = \"1ms\", max = \"5ms\"}",
            )),
        }
    }

    fn check_count(&self, name: &str, expected: f64) -> Result<(), WorkloadError> {
        if expected > MAX_FLOWS_PER_COMPONENT as f64 {
            Err(WorkloadError::TooManyFlows { field: self.field(name), expected, limit: MAX_FLOWS_PER_COMPONENT })
        } else {
            Ok(())
        }
    }
}

/// Uniform deadline in [min, max] (min >= 1 ps, so the width cannot overflow).
fn draw_deadline(d: Option<(Time, Time)>, rng: &mut Rng) -> Option<Time> {
    d.map(|(lo, hi)| Time(lo.0 + rng.below(hi.0 - lo.0 + 1)))
}

fn deadline_json(d: Option<(Time, Time)>) -> Value {
    d.map_or(Value::Null, |(lo, hi)| json!({"min": lo, "max": hi}))
}

fn hosts_json(all: bool, hosts: &[u32]) -> Value {
    if all {
        json!("all")
    } else {
        json!(hosts)
    }
}

/// Pick `k` distinct entries of `pool` into `pool[..k]` (partial Fisher–Yates).
fn choose(pool: &mut [u32], k: usize, rng: &mut Rng) {
    let n = pool.len();
    for i in 0..k.min(n) {
        let j = i + rng.below((n - i) as u64) as usize;
        pool.swap(i, j);
    }
}

/// The `flows`, `duration` and `start` fields of a Poisson-type table.
struct Stop {
    flows: Option<u64>,
    duration: Option<Time>,
    start: Option<Time>,
}

/// Poisson arrivals at rate `lambda` per second from `start`, until `flows` flows have
/// arrived or `start + duration` is reached, whichever comes first.
#[derive(Clone, Debug)]
struct Arrivals {
    lambda: f64,
    start: Time,
    flows: Option<u64>,
    duration: Option<Time>,
    sizes: SizeDist,
    deadline: Option<(Time, Time)>,
}

impl Arrivals {
    /// Validate `load`-calibrated Poisson arrivals whose senders' links sum to `sender_bps`.
    fn build(
        ctx: &Ctx,
        load: f64,
        sender_bps: f64,
        stop: Stop,
        sizes: SizeDist,
        deadline: Option<(Time, Time)>,
    ) -> Result<Arrivals, WorkloadError> {
        let Stop { flows, duration, start } = stop;
        if flows.is_none() && duration.is_none() {
            return Err(WorkloadError::MissingStop { field: ctx.field("flows") });
        }
        if flows == Some(0) {
            return Err(ctx.out_of_range(
                "flows",
                0,
                "at least 1",
                "give a positive number of flows or remove `flows`",
            ));
        }
        let start = start.unwrap_or(Time::ZERO);
        if let Some(d) = duration {
            if d == Time::ZERO {
                return Err(ctx.out_of_range("duration", 0, "> 0", "give a positive time such as \"10ms\""));
            }
            if start.0.checked_add(d.0).is_none() {
                return Err(ctx.out_of_range(
                    "duration",
                    d.0,
                    "such that start + duration fits in 2^64 ps",
                    "shorten it",
                ));
            }
        }
        // lambda = rho x (sum of sender link rates) / (8 x mean flow size)  (docs/metrics.md)
        let lambda = load * sender_bps / (8.0 * sizes.mean_bytes());
        let by_time = duration.map_or(f64::INFINITY, |d| lambda * d.as_secs_f64());
        let by_count = flows.map_or(f64::INFINITY, |f| f as f64);
        ctx.check_count(if by_count <= by_time { "flows" } else { "duration" }, by_time.min(by_count))?;
        Ok(Arrivals { lambda, start, flows, duration, sizes, deadline })
    }

    fn expected_flows(&self) -> f64 {
        let by_time = self.duration.map_or(f64::INFINITY, |d| self.lambda * d.as_secs_f64());
        by_time.min(self.flows.map_or(f64::INFINITY, |f| f as f64))
    }

    fn generate(&self, rng: &mut Rng, out: &mut Vec<FlowSpec>, mut endpoints: impl FnMut(&mut Rng) -> (u32, u32)) {
        let mut arrivals = Rng::new(rng.next_u64());
        let mut ends = Rng::new(rng.next_u64());
        let mut sizes = Rng::new(rng.next_u64());
        let mut deadlines = Rng::new(rng.next_u64());
        let gap_ps = PS_PER_S as f64 / self.lambda;
        let end_time = self.duration.map(|d| Time(self.start.0 + d.0));
        let end = end_time.map_or(u64::MAX as f64, |e| e.0 as f64);
        // `Arrivals::build` bounds the expected count; the hard cap only guards memory.
        let limit = self.flows.unwrap_or(u64::MAX).min(2 * MAX_FLOWS_PER_COMPONENT);
        let mut t = self.start.0 as f64;
        for _ in 0..limit {
            t += arrivals.exp(gap_ps);
            if t >= end {
                break;
            }
            // Rounding down keeps every arrival strictly before `start + duration`.
            let start = Time(t as u64);
            if end_time.is_some_and(|e| start >= e) {
                break;
            }
            let (src, dst) = endpoints(&mut ends);
            out.push(FlowSpec {
                src,
                dst,
                size: self.sizes.sample(&mut sizes),
                start,
                deadline: draw_deadline(self.deadline, &mut deadlines),
                background: false,
            });
        }
    }

    fn describe(&self, table: &mut Map<String, Value>, derived: &mut Map<String, Value>) {
        table.insert("flows".into(), json!(self.flows));
        table.insert("duration".into(), json!(self.duration));
        table.insert("start".into(), json!(self.start));
        table.insert("deadline".into(), deadline_json(self.deadline));
        self.sizes.describe(table, derived);
        derived.insert("arrival_rate_per_s".into(), json!(self.lambda));
        derived.insert("expected_flows".into(), json!(self.expected_flows()));
    }
}

/// All-to-all Poisson traffic among `hosts`; or, with `receivers`, many-to-few traffic from
/// the other hosts of `hosts` to `receivers`, with the load defined on the receivers' links
/// (the bottleneck; e.g. PPT Fig. 1/20: two senders, one receiver, load 0.5 of its link).
#[derive(Clone, Debug)]
pub(crate) struct Poisson {
    load: f64,
    hosts: Vec<u32>,
    all_hosts: bool,
    receivers: Option<Vec<u32>>,
    sender_bps: f64,
    arrivals: Arrivals,
}

impl Poisson {
    fn build(r: RawPoisson, ctx: &Ctx) -> Result<Poisson, WorkloadError> {
        let load = ctx.load(r.load)?;
        let all_hosts = !matches!(r.hosts, Some(HostsVal::List(_)));
        let mut hosts = ctx.hosts("hosts", r.hosts.as_ref())?;
        let (receivers, sender_bps) = match r.receivers {
            None => {
                ctx.at_least("hosts", &hosts, 2)?;
                (None, ctx.rate_sum("hosts", &hosts)?)
            }
            Some(list) => {
                let rx = ctx.hosts("receivers", Some(&HostsVal::List(list)))?;
                ctx.at_least("receivers", &rx, 1)?;
                hosts.retain(|h| !rx.contains(h));
                ctx.at_least("hosts", &hosts, 1)?;
                let bps = ctx.rate_sum("receivers", &rx)?;
                (Some(rx), bps)
            }
        };
        let deadline = ctx.deadline(r.deadline)?;
        let stop = Stop { flows: r.flows, duration: r.duration, start: r.start };
        let sizes = SizeDist::resolve(size_fields!(r), &ctx.prefix, ctx.env, None)?;
        let arrivals = Arrivals::build(ctx, load, sender_bps, stop, sizes, deadline)?;
        Ok(Poisson { load, hosts, all_hosts, receivers, sender_bps, arrivals })
    }

    fn generate(&self, rng: &mut Rng, out: &mut Vec<FlowSpec>) {
        let n = self.hosts.len() as u64;
        if let Some(rx) = &self.receivers {
            let m = rx.len() as u64;
            self.arrivals.generate(rng, out, |r| (self.hosts[r.below(n) as usize], rx[r.below(m) as usize]));
            return;
        }
        self.arrivals.generate(rng, out, |r| {
            let s = r.below(n);
            let mut d = r.below(n - 1);
            if d >= s {
                d += 1;
            }
            (self.hosts[s as usize], self.hosts[d as usize])
        });
    }

    fn describe(&self) -> Value {
        let (mut t, mut d) = (Map::new(), Map::new());
        t.insert("pattern".into(), json!("poisson"));
        t.insert("load".into(), json!(self.load));
        match &self.receivers {
            None => {
                t.insert("hosts".into(), hosts_json(self.all_hosts, &self.hosts));
            }
            Some(rx) => {
                // `hosts` is written as the senders it resolved to (receivers removed), which
                // re-parses to the same pattern.
                t.insert("hosts".into(), json!(self.hosts));
                t.insert("receivers".into(), json!(rx));
            }
        }
        self.arrivals.describe(&mut t, &mut d);
        d.insert("sender_link_bps".into(), json!(self.sender_bps));
        t.insert("derived".into(), Value::Object(d));
        Value::Object(t)
    }
}

/// Poisson traffic from the left half of the hosts (or racks) to the right half.
#[derive(Clone, Debug)]
pub(crate) struct LeftRight {
    load: f64,
    split: Split,
    left: Vec<u32>,
    right: Vec<u32>,
    sender_bps: f64,
    arrivals: Arrivals,
}

impl LeftRight {
    fn build(r: RawLeftRight, ctx: &Ctx) -> Result<LeftRight, WorkloadError> {
        let load = ctx.load(r.load)?;
        let split = r.split.unwrap_or(Split::Hosts);
        let (left, right): (Vec<u32>, Vec<u32>) = match split {
            Split::Hosts => {
                let n = ctx.env.num_hosts;
                ((0..n / 2).collect(), (n / 2..n).collect())
            }
            Split::Racks => {
                let racks = &ctx.env.racks;
                if racks.len() < 2 {
                    return Err(ctx.out_of_range(
                        "split",
                        format!("\"racks\" with {} rack(s)", racks.len()),
                        "used with a topology of at least 2 racks",
                        "use split = \"hosts\" or a topology with several racks",
                    ));
                }
                let half = racks.len() / 2;
                (racks[..half].concat(), racks[half..].concat())
            }
        };
        for &h in left.iter().chain(&right) {
            ctx.host("split", h)?;
        }
        ctx.at_least("split", &left, 1)?;
        ctx.at_least("split", &right, 1)?;
        let sender_bps = ctx.rate_sum("split", &left)?;
        let deadline = ctx.deadline(r.deadline)?;
        let stop = Stop { flows: r.flows, duration: r.duration, start: r.start };
        let sizes = SizeDist::resolve(size_fields!(r), &ctx.prefix, ctx.env, None)?;
        let arrivals = Arrivals::build(ctx, load, sender_bps, stop, sizes, deadline)?;
        Ok(LeftRight { load, split, left, right, sender_bps, arrivals })
    }

    fn generate(&self, rng: &mut Rng, out: &mut Vec<FlowSpec>) {
        let (nl, nr) = (self.left.len() as u64, self.right.len() as u64);
        self.arrivals.generate(rng, out, |r| (self.left[r.below(nl) as usize], self.right[r.below(nr) as usize]));
    }

    fn describe(&self) -> Value {
        let (mut t, mut d) = (Map::new(), Map::new());
        t.insert("pattern".into(), json!("left_right"));
        t.insert("load".into(), json!(self.load));
        t.insert("split".into(), json!(self.split.as_str()));
        self.arrivals.describe(&mut t, &mut d);
        d.insert("left_hosts".into(), json!(self.left));
        d.insert("right_hosts".into(), json!(self.right));
        d.insert("sender_link_bps".into(), json!(self.sender_bps));
        t.insert("derived".into(), Value::Object(d));
        Value::Object(t)
    }
}

#[derive(Clone, Debug)]
enum Senders {
    /// `count` distinct random senders per round, drawn from every host but the receiver.
    Random {
        count: usize,
        pool: Vec<u32>,
    },
    Listed(Vec<u32>),
}

#[derive(Clone, Copy, Debug)]
enum Spacing {
    /// Round r starts at start + r x interval.
    Interval(Time),
    /// Round starts form a Poisson process of this rate (first round at `start`).
    Poisson(f64),
}

/// Rounds of N senders to one receiver.
#[derive(Clone, Debug)]
pub(crate) struct Incast {
    receiver: u32,
    senders: Senders,
    /// Flows each sender starts per round (`flows_per_sender`, default 1).
    per_sender: u64,
    rounds: u64,
    spacing: Option<Spacing>,
    start: Time,
    jitter: Time,
    sizes: SizeDist,
    deadline: Option<(Time, Time)>,
    /// `barrier = true`: the gap between the end of a round and the start of the next one.
    pub(crate) barrier: Option<Time>,
    /// `persistent = true` (barrier rounds only): a sender's block of round r + 1 goes on the
    /// connection that carried its block of an earlier round (see `BarrierChain::persistent`).
    pub(crate) persistent: bool,
}

impl Incast {
    fn build(r: RawIncast, ctx: &Ctx) -> Result<Incast, WorkloadError> {
        let receiver =
            r.receiver.ok_or_else(|| ctx.missing("receiver", "set the receiving host, e.g. receiver = 0"))?;
        let receiver = ctx.host("receiver", receiver)?;
        let senders = match &r.senders {
            None => {
                return Err(ctx.missing(
                    "senders",
                    "set senders = 16 (distinct random senders per round) or a list of sending hosts",
                ))
            }
            Some(SendersVal::Count(0)) => {
                return Err(ctx.out_of_range("senders", 0, "at least 1", "give a positive number of senders"))
            }
            Some(SendersVal::Count(n)) => {
                let pool: Vec<u32> = (0..ctx.env.num_hosts).filter(|&h| h != receiver).collect();
                if *n > pool.len() as u64 {
                    return Err(WorkloadError::TooFewHosts {
                        field: ctx.field("senders"),
                        need: usize::try_from(*n).unwrap_or(usize::MAX).saturating_add(1),
                        got: ctx.env.num_hosts as usize,
                    });
                }
                Senders::Random { count: *n as usize, pool }
            }
            Some(SendersVal::List(list)) => {
                let list = ctx.hosts("senders", Some(&HostsVal::List(list.clone())))?;
                ctx.at_least("senders", &list, 1)?;
                if list.contains(&receiver) {
                    return Err(ctx.out_of_range(
                        "senders",
                        format!("a list containing host {receiver}"),
                        "a list of hosts other than the receiver",
                        "remove the receiver from `senders`",
                    ));
                }
                Senders::Listed(list)
            }
        };
        let per_sender = r.flows_per_sender.unwrap_or(1);
        if per_sender == 0 {
            return Err(ctx.out_of_range("flows_per_sender", 0, "at least 1", "give a positive number of flows"));
        }
        // Flows per round: the load formula counts every flow.
        let n_senders = match &senders {
            Senders::Random { count, .. } => *count,
            Senders::Listed(l) => l.len(),
        } * per_sender as usize;
        let rounds = r.rounds.unwrap_or(1);
        if rounds == 0 {
            return Err(ctx.out_of_range("rounds", 0, "at least 1", "give a positive number of rounds"));
        }
        let deadline = ctx.deadline(r.deadline)?;
        let sizes =
            SizeDist::resolve(size_fields!(r), &ctx.prefix, ctx.env, Some(SizeDist::Fixed(DEFAULT_INCAST_SIZE)))?;
        // `load`: Poisson rounds offering this load on the receiver's link,
        // rounds_per_second = load x receiver rate / (8 x senders x mean flow size).
        let by_load = match r.load {
            None => None,
            Some(_) if r.round_interval.is_some() || r.rounds_per_second.is_some() => {
                return Err(WorkloadError::Conflict {
                    field: ctx.field("load"),
                    other: if r.round_interval.is_some() { "round_interval" } else { "rounds_per_second" }.into(),
                    hint: "give one of `load`, `round_interval` or `rounds_per_second`".into(),
                })
            }
            Some(l) => {
                let load = ctx.load(Some(l))?;
                let rx_bps = ctx.rate_sum("receiver", &[receiver])?;
                Some(load * rx_bps / (8.0 * n_senders as f64 * sizes.mean_bytes()))
            }
        };
        let barrier = match (r.barrier, r.gap) {
            (Some(true), gap) => {
                for (given, name) in [
                    (r.round_interval.is_some(), "round_interval"),
                    (r.rounds_per_second.is_some(), "rounds_per_second"),
                    (r.load.is_some(), "load"),
                ] {
                    if given {
                        return Err(WorkloadError::Conflict {
                            field: ctx.field("barrier"),
                            other: name.into(),
                            hint: "barrier rounds start when the previous round ends; remove the round schedule or set barrier = false".into(),
                        });
                    }
                }
                Some(gap.unwrap_or(Time::ZERO))
            }
            (_, Some(_)) => {
                return Err(ctx.out_of_range(
                    "gap",
                    "a gap without barrier = true",
                    "only with barrier = true",
                    "set barrier = true, or remove gap",
                ))
            }
            _ => None,
        };
        let persistent = r.persistent.unwrap_or(false);
        if persistent && barrier.is_none() {
            return Err(ctx.out_of_range(
                "persistent",
                "persistent connections without barrier = true",
                "only with barrier = true",
                "set barrier = true (rounds that start when the previous one ends), or remove persistent",
            ));
        }
        if persistent && r.deadline.is_some() {
            return Err(ctx.out_of_range(
                "persistent",
                "persistent connections with a deadline",
                "no deadline on persistent barrier rounds",
                "remove deadline, or set persistent = false",
            ));
        }
        let spacing = match (r.round_interval, r.rounds_per_second.or(by_load)) {
            (Some(_), Some(_)) => {
                return Err(WorkloadError::Conflict {
                    field: ctx.field("rounds_per_second"),
                    other: "round_interval".into(),
                    hint: "give `round_interval` for evenly spaced rounds or `rounds_per_second` for Poisson rounds, not both".into(),
                })
            }
            (Some(iv), None) if iv == Time::ZERO => {
                return Err(ctx.out_of_range("round_interval", 0, "> 0", "give a positive time such as \"100us\""))
            }
            (Some(iv), None) => Some(Spacing::Interval(iv)),
            (None, Some(rate)) if !(rate.is_finite() && rate > 0.0) => {
                return Err(ctx.out_of_range("rounds_per_second", rate, "a positive number", "give e.g. rounds_per_second = 1000"))
            }
            (None, Some(rate)) => Some(Spacing::Poisson(rate)),
            (None, None) if rounds > 1 && barrier.is_none() => {
                return Err(ctx.missing(
                    "round_interval",
                    &format!("rounds = {rounds} needs `round_interval = \"100us\"` (fixed spacing of round starts) or `rounds_per_second = 1000` (Poisson round arrivals)"),
                ))
            }
            (None, None) => None,
        };
        let start = r.start.unwrap_or(Time::ZERO);
        let jitter = r.jitter.unwrap_or(Time::ZERO);
        if let Some(Spacing::Interval(iv)) = spacing {
            let last =
                iv.0.checked_mul(rounds - 1).and_then(|x| x.checked_add(start.0)).and_then(|x| x.checked_add(jitter.0));
            if last.is_none() {
                return Err(ctx.out_of_range(
                    "round_interval",
                    iv.0,
                    "such that the last round starts before 2^64 ps",
                    "use fewer rounds or a shorter interval",
                ));
            }
        }
        ctx.check_count("rounds", rounds as f64 * n_senders as f64)?;
        Ok(Incast {
            receiver,
            senders,
            per_sender,
            rounds,
            spacing,
            start,
            jitter,
            sizes,
            deadline,
            barrier,
            persistent,
        })
    }

    fn generate(&self, rng: &mut Rng, out: &mut Vec<FlowSpec>) {
        let mut select = Rng::new(rng.next_u64());
        let mut gaps = Rng::new(rng.next_u64());
        let mut jitters = Rng::new(rng.next_u64());
        let mut sizes = Rng::new(rng.next_u64());
        let mut deadlines = Rng::new(rng.next_u64());
        let mut pool = match &self.senders {
            Senders::Random { pool, .. } => pool.clone(),
            Senders::Listed(_) => Vec::new(),
        };
        let mut t = self.start.0 as f64;
        for round in 0..self.rounds {
            let round_start = match self.spacing {
                Some(Spacing::Interval(iv)) => Time(self.start.0 + iv.0 * round),
                Some(Spacing::Poisson(rate)) => {
                    if round > 0 {
                        t += gaps.exp(PS_PER_S as f64 / rate);
                    }
                    Time(t as u64)
                }
                None => self.start,
            };
            let senders: &[u32] = match &self.senders {
                Senders::Listed(l) => l,
                Senders::Random { count, .. } => {
                    choose(&mut pool, *count, &mut select);
                    &pool[..*count]
                }
            };
            for &src in senders.iter().flat_map(|s| std::iter::repeat_n(s, self.per_sender as usize)) {
                let jitter = if self.jitter.0 > 0 { jitters.below(self.jitter.0.saturating_add(1)) } else { 0 };
                out.push(FlowSpec {
                    src,
                    dst: self.receiver,
                    size: self.sizes.sample(&mut sizes),
                    start: Time(round_start.0.saturating_add(jitter)),
                    deadline: draw_deadline(self.deadline, &mut deadlines),
                    background: false,
                });
            }
        }
    }

    fn describe(&self) -> Value {
        let (mut t, mut d) = (Map::new(), Map::new());
        t.insert("pattern".into(), json!("incast"));
        t.insert("receiver".into(), json!(self.receiver));
        t.insert(
            "senders".into(),
            match &self.senders {
                Senders::Random { count, .. } => json!(count),
                Senders::Listed(l) => json!(l),
            },
        );
        if self.per_sender != 1 {
            t.insert("flows_per_sender".into(), json!(self.per_sender));
        }
        t.insert("rounds".into(), json!(self.rounds));
        match self.spacing {
            Some(Spacing::Interval(iv)) => {
                t.insert("round_interval".into(), json!(iv));
            }
            Some(Spacing::Poisson(rate)) => {
                t.insert("rounds_per_second".into(), json!(rate));
            }
            None => {}
        }
        if let Some(gap) = self.barrier {
            t.insert("barrier".into(), json!(true));
            t.insert("gap".into(), json!(gap));
            t.insert("persistent".into(), json!(self.persistent));
        }
        t.insert("start".into(), json!(self.start));
        t.insert("jitter".into(), json!(self.jitter));
        t.insert("deadline".into(), deadline_json(self.deadline));
        self.sizes.describe(&mut t, &mut d);
        d.insert("senders_chosen_per_round".into(), json!(matches!(self.senders, Senders::Random { .. })));
        t.insert("derived".into(), Value::Object(d));
        Value::Object(t)
    }
}

/// Every host sends one flow, no host receives two.
#[derive(Clone, Debug)]
pub(crate) struct Permutation {
    hosts: Vec<u32>,
    all_hosts: bool,
    /// `Some(s)`: host i sends to host (i + s) mod n; `None`: a random derangement.
    shift: Option<u64>,
    start: Time,
    sizes: SizeDist,
    deadline: Option<(Time, Time)>,
}

impl Permutation {
    fn build(r: RawPermutation, ctx: &Ctx) -> Result<Permutation, WorkloadError> {
        let all_hosts = !matches!(r.hosts, Some(HostsVal::List(_)));
        let hosts = ctx.hosts("hosts", r.hosts.as_ref())?;
        ctx.at_least("hosts", &hosts, 2)?;
        let n = hosts.len() as i64;
        let shift = match r.shift {
            None => None,
            Some(s) if s.rem_euclid(n) == 0 => {
                return Err(ctx.out_of_range(
                    "shift",
                    s,
                    &format!("not a multiple of the number of hosts ({n})"),
                    "a shift of 0 mod n would make every host send to itself; use e.g. shift = 1",
                ))
            }
            Some(s) => Some(s.rem_euclid(n) as u64),
        };
        let deadline = ctx.deadline(r.deadline)?;
        let start = r.start.unwrap_or(Time::ZERO);
        let sizes = SizeDist::resolve(size_fields!(r), &ctx.prefix, ctx.env, None)?;
        Ok(Permutation { hosts, all_hosts, shift, start, sizes, deadline })
    }

    /// A uniformly random derangement of 0..n (n >= 2) by rejection: about e tries.
    fn derangement(n: usize, rng: &mut Rng) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        loop {
            for i in (1..n).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                p.swap(i, j);
            }
            if p.iter().enumerate().all(|(i, &v)| i != v) {
                return p;
            }
        }
    }

    fn generate(&self, rng: &mut Rng, out: &mut Vec<FlowSpec>) {
        let mut perm_rng = Rng::new(rng.next_u64());
        let mut sizes = Rng::new(rng.next_u64());
        let mut deadlines = Rng::new(rng.next_u64());
        let n = self.hosts.len();
        let target: Vec<usize> = match self.shift {
            Some(s) => (0..n).map(|i| (i + s as usize) % n).collect(),
            None => Self::derangement(n, &mut perm_rng),
        };
        for (i, &j) in target.iter().enumerate() {
            out.push(FlowSpec {
                src: self.hosts[i],
                dst: self.hosts[j],
                size: self.sizes.sample(&mut sizes),
                start: self.start,
                deadline: draw_deadline(self.deadline, &mut deadlines),
                background: false,
            });
        }
    }

    fn describe(&self) -> Value {
        let (mut t, mut d) = (Map::new(), Map::new());
        t.insert("pattern".into(), json!("permutation"));
        t.insert("hosts".into(), hosts_json(self.all_hosts, &self.hosts));
        t.insert("shift".into(), json!(self.shift));
        t.insert("start".into(), json!(self.start));
        t.insert("deadline".into(), deadline_json(self.deadline));
        self.sizes.describe(&mut t, &mut d);
        t.insert("derived".into(), Value::Object(d));
        Value::Object(t)
    }
}

#[derive(Clone, Debug)]
enum Pairs {
    Listed(Vec<(u32, u32)>),
    /// `count` distinct random (src, dst) pairs among `hosts`.
    Random {
        count: u64,
        hosts: Vec<u32>,
        all_hosts: bool,
    },
}

/// Long-lived flows.
#[derive(Clone, Debug)]
pub(crate) struct Background {
    pairs: Pairs,
    size: Bytes,
    start: Time,
}

impl Background {
    fn build(r: RawBackground, ctx: &Ctx) -> Result<Background, WorkloadError> {
        let pairs = match (r.pairs, r.count) {
            (Some(_), Some(_)) => {
                return Err(WorkloadError::Conflict {
                    field: ctx.field("count"),
                    other: "pairs".into(),
                    hint: "give explicit `pairs` or a random `count`, not both".into(),
                })
            }
            (None, None) => {
                return Err(ctx.missing("pairs", "give pairs = [[0, 1], [2, 3]] or count = 4 (random distinct pairs)"))
            }
            (Some(list), None) => {
                if r.hosts.is_some() {
                    return Err(WorkloadError::Conflict {
                        field: ctx.field("hosts"),
                        other: "pairs".into(),
                        hint: "`hosts` selects the hosts of random pairs; remove it when you list `pairs`".into(),
                    });
                }
                if list.is_empty() {
                    return Err(ctx.out_of_range(
                        "pairs",
                        "[]",
                        "a non-empty list",
                        "list at least one [src, dst] pair",
                    ));
                }
                let mut out = Vec::with_capacity(list.len());
                for (j, [s, d]) in list.into_iter().enumerate() {
                    let name = format!("pairs[{j}]");
                    ctx.host(&name, s)?;
                    ctx.host(&name, d)?;
                    if s == d {
                        return Err(ctx.out_of_range(
                            &name,
                            format!("[{s}, {d}]"),
                            "a pair of two different hosts",
                            "fix the pair",
                        ));
                    }
                    out.push((s, d));
                }
                Pairs::Listed(out)
            }
            (None, Some(count)) => {
                let all_hosts = !matches!(r.hosts, Some(HostsVal::List(_)));
                let hosts = ctx.hosts("hosts", r.hosts.as_ref())?;
                ctx.at_least("hosts", &hosts, 2)?;
                let n = hosts.len() as u64;
                let max = n * (n - 1);
                if count == 0 || count > max {
                    return Err(ctx.out_of_range(
                        "count",
                        count,
                        &format!("between 1 and {max} (the number of distinct ordered pairs of {n} hosts)"),
                        "lower `count` or add hosts",
                    ));
                }
                ctx.check_count("count", count as f64)?;
                Pairs::Random { count, hosts, all_hosts }
            }
        };
        let size = r.size.unwrap_or(DEFAULT_BACKGROUND_SIZE);
        if size.0 == 0 {
            return Err(ctx.out_of_range(
                "size",
                0,
                "at least 1 B",
                "give a positive size or remove `size` for an endless flow",
            ));
        }
        Ok(Background { pairs, size, start: r.start.unwrap_or(Time::ZERO) })
    }

    fn generate(&self, rng: &mut Rng, out: &mut Vec<FlowSpec>) {
        let mut pick = Rng::new(rng.next_u64());
        let pairs: Vec<(u32, u32)> = match &self.pairs {
            Pairs::Listed(l) => l.clone(),
            Pairs::Random { count, hosts, .. } => {
                let n = hosts.len() as u64;
                if count.saturating_mul(2) > n * (n - 1) {
                    // Dense: shuffle-select from all pairs.
                    let mut all: Vec<(u32, u32)> = hosts
                        .iter()
                        .flat_map(|&s| hosts.iter().filter(move |&&d| d != s).map(move |&d| (s, d)))
                        .collect();
                    for i in 0..*count as usize {
                        let j = i + pick.below((all.len() - i) as u64) as usize;
                        all.swap(i, j);
                    }
                    all.truncate(*count as usize);
                    all
                } else {
                    // Sparse: rejection of repeated pairs (accepts with probability > 1/2).
                    let mut seen = HashSet::new();
                    let mut v = Vec::with_capacity(*count as usize);
                    while (v.len() as u64) < *count {
                        let s = pick.below(n);
                        let mut d = pick.below(n - 1);
                        if d >= s {
                            d += 1;
                        }
                        let p = (hosts[s as usize], hosts[d as usize]);
                        if seen.insert(p) {
                            v.push(p);
                        }
                    }
                    v
                }
            }
        };
        out.extend(pairs.into_iter().map(|(src, dst)| FlowSpec {
            src,
            dst,
            size: self.size,
            start: self.start,
            deadline: None,
            background: true,
        }));
    }

    fn describe(&self) -> Value {
        let mut t = Map::new();
        t.insert("pattern".into(), json!("background"));
        match &self.pairs {
            Pairs::Listed(l) => {
                t.insert("pairs".into(), json!(l.iter().map(|&(s, d)| [s, d]).collect::<Vec<_>>()));
            }
            Pairs::Random { count, hosts, all_hosts } => {
                t.insert("count".into(), json!(count));
                t.insert("hosts".into(), hosts_json(*all_hosts, hosts));
            }
        }
        t.insert("size".into(), json!(self.size));
        t.insert("start".into(), json!(self.start));
        t.insert("derived".into(), json!({"endless": self.size == DEFAULT_BACKGROUND_SIZE}));
        Value::Object(t)
    }
}

/// Which flow-list reader a [`FlowList`] used.
#[derive(Clone, Copy, Debug)]
enum ListFormat {
    Csv(TimeUnit),
    Hpcc,
}

/// Flows read from a file at build time.
#[derive(Clone, Debug)]
pub(crate) struct FlowList {
    format: ListFormat,
    given: String,
    resolved: PathBuf,
    flows: Vec<FlowSpec>,
}

impl FlowList {
    fn build(file: Option<String>, format: ListFormat, ctx: &Ctx) -> Result<FlowList, WorkloadError> {
        let hint = match format {
            ListFormat::Csv(_) => "set file = \"flows.csv\" (a CSV with header src,dst,size,start)",
            ListFormat::Hpcc => "set file = \"flow.txt\" (HPCC's flow file)",
        };
        let given = file.ok_or_else(|| ctx.missing("file", hint))?;
        let resolved = ctx.env.base_dir.join(&given);
        let display = resolved.display().to_string();
        let text = super::read::read_file_capped(&resolved, ctx.env.file_limit).map_err(|e| match e {
            super::read::ReadProblem::TooLarge { limit } => {
                WorkloadError::FileTooLarge { field: ctx.field("file"), file: display.clone(), limit }
            }
            e => WorkloadError::FileRead { field: ctx.field("file"), file: display.clone(), reason: e.to_string() },
        })?;
        let parsed = match format {
            ListFormat::Csv(unit) => flowfile::parse_csv(&text, unit.picoseconds(), ctx.env.num_hosts),
            ListFormat::Hpcc => flowfile::parse_hpcc(&text, ctx.env.num_hosts),
        };
        let flows = parsed.map_err(|(line, problem)| WorkloadError::FlowFile {
            field: ctx.field("file"),
            file: display,
            line,
            problem,
        })?;
        Ok(FlowList { format, given, resolved, flows })
    }

    fn describe(&self) -> Value {
        let mut t = Map::new();
        match self.format {
            ListFormat::Csv(unit) => {
                t.insert("pattern".into(), json!("explicit"));
                t.insert("file".into(), json!(self.given));
                t.insert("time_unit".into(), json!(unit.as_str()));
            }
            ListFormat::Hpcc => {
                t.insert("pattern".into(), json!("hpcc"));
                t.insert("file".into(), json!(self.given));
            }
        }
        let bytes: u64 = self.flows.iter().map(|f| f.size.0).fold(0, u64::saturating_add);
        t.insert(
            "derived".into(),
            json!({"path": self.resolved.display().to_string(), "flows": self.flows.len(), "total_bytes": bytes}),
        );
        Value::Object(t)
    }
}

/// What one component contributes to the workload's flow-size mix.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SizeMix {
    /// No sized flows (long-lived background flows).
    Nothing,
    /// Step-CDF points of its sizes and the expected number of flows it generates.
    Known(Vec<(u64, f64)>, f64),
}

/// One validated `[[workload]]` table.
#[derive(Clone, Debug)]
pub(crate) enum Component {
    Poisson(Poisson),
    LeftRight(LeftRight),
    Incast(Incast),
    Permutation(Permutation),
    Background(Background),
    FlowList(FlowList),
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a table",
    }
}

impl Component {
    /// Validate table `index` of the scenario's `[[workload]]` list.
    pub(crate) fn build(index: usize, v: &Value, env: &WorkloadEnv) -> Result<Component, WorkloadError> {
        let prefix = format!("workload[{index}]");
        let Some(obj) = v.as_object() else {
            return Err(WorkloadError::NotATable { field: prefix, got: json_type(v).into() });
        };
        let ctx = Ctx { prefix, env };
        let pattern = match obj.get("pattern") {
            None => {
                return Err(ctx.missing("pattern", &format!("set pattern to one of: {}", super::PATTERNS.join(", "))))
            }
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(WorkloadError::InvalidValue {
                    field: ctx.field("pattern"),
                    message: format!("must be a string, got {}", json_type(other)),
                    expected: format!("one of: {}", super::PATTERNS.join(", ")),
                })
            }
        };
        let p = &ctx.prefix;
        Ok(match pattern {
            "poisson" => Component::Poisson(Poisson::build(raw::parse_table(obj, p, pattern)?, &ctx)?),
            "left_right" => Component::LeftRight(LeftRight::build(raw::parse_table(obj, p, pattern)?, &ctx)?),
            "incast" => Component::Incast(Incast::build(raw::parse_table(obj, p, pattern)?, &ctx)?),
            "permutation" => Component::Permutation(Permutation::build(raw::parse_table(obj, p, pattern)?, &ctx)?),
            "background" => Component::Background(Background::build(raw::parse_table(obj, p, pattern)?, &ctx)?),
            "explicit" => {
                let r: RawExplicit = raw::parse_table(obj, p, pattern)?;
                let unit = r.time_unit.unwrap_or(TimeUnit::Us);
                Component::FlowList(FlowList::build(r.file, ListFormat::Csv(unit), &ctx)?)
            }
            "hpcc" => {
                let r: RawHpcc = raw::parse_table(obj, p, pattern)?;
                Component::FlowList(FlowList::build(r.file, ListFormat::Hpcc, &ctx)?)
            }
            other => return Err(WorkloadError::UnknownPattern { field: ctx.field("pattern"), got: other.to_string() }),
        })
    }

    /// Barrier rounds (`incast` with `barrier = true`): (first round's start, gap, flows per
    /// round, rounds, persistent connections).
    pub(crate) fn barrier(&self) -> Option<(Time, Time, usize, usize, bool)> {
        match self {
            Component::Incast(c) => c.barrier.map(|gap| {
                let n = match &c.senders {
                    Senders::Random { count, .. } => *count,
                    Senders::Listed(l) => l.len(),
                };
                (c.start, gap, n * c.per_sender as usize, c.rounds as usize, c.persistent)
            }),
            _ => None,
        }
    }

    /// Append this component's flows (in generation order) to `out`.
    pub(crate) fn generate(&self, rng: &mut Rng, out: &mut Vec<FlowSpec>) {
        match self {
            Component::Poisson(c) => c.generate(rng, out),
            Component::LeftRight(c) => c.generate(rng, out),
            Component::Incast(c) => c.generate(rng, out),
            Component::Permutation(c) => c.generate(rng, out),
            Component::Background(c) => c.generate(rng, out),
            Component::FlowList(c) => out.extend_from_slice(&c.flows),
        }
    }

    /// The component's flow-size distribution, weighted by its expected flow count.
    pub(crate) fn size_mix(&self) -> SizeMix {
        match self {
            Component::Poisson(c) => SizeMix::Known(c.arrivals.sizes.step_points(), c.arrivals.expected_flows()),
            Component::LeftRight(c) => SizeMix::Known(c.arrivals.sizes.step_points(), c.arrivals.expected_flows()),
            Component::Incast(c) => {
                let n = match &c.senders {
                    Senders::Random { count, .. } => *count,
                    Senders::Listed(l) => l.len(),
                };
                SizeMix::Known(c.sizes.step_points(), (n as u64 * c.rounds) as f64)
            }
            Component::Permutation(c) => SizeMix::Known(c.sizes.step_points(), c.hosts.len() as f64),
            Component::Background(_) => SizeMix::Nothing,
            Component::FlowList(c) => {
                let mut sizes: Vec<u64> = c.flows.iter().filter(|f| !f.background).map(|f| f.size.0).collect();
                if sizes.is_empty() {
                    return SizeMix::Nothing;
                }
                sizes.sort_unstable();
                let n = sizes.len() as f64;
                let mut pts: Vec<(u64, f64)> = Vec::new();
                for (i, s) in sizes.iter().enumerate() {
                    let p = (i + 1) as f64 / n;
                    match pts.last_mut() {
                        Some(l) if l.0 == *s => l.1 = p,
                        _ => pts.push((*s, p)),
                    }
                }
                SizeMix::Known(pts, n)
            }
        }
    }

    /// The shipped CDF the component's sizes come from (`None`: a CDF file, a uniform range,
    /// a fixed size, a flow list or background flows).
    pub(crate) fn shipped_cdf(&self) -> Option<&'static str> {
        match self {
            Component::Poisson(c) => c.arrivals.sizes.shipped_name(),
            Component::LeftRight(c) => c.arrivals.sizes.shipped_name(),
            Component::Incast(c) => c.sizes.shipped_name(),
            Component::Permutation(c) => c.sizes.shipped_name(),
            Component::Background(_) | Component::FlowList(_) => None,
        }
    }

    /// The offered load of a component with Poisson flow arrivals (`poisson`, `left_right`).
    pub(crate) fn poisson_load(&self) -> Option<f64> {
        match self {
            Component::Poisson(c) => Some(c.load),
            Component::LeftRight(c) => Some(c.load),
            _ => None,
        }
    }

    /// The normalized table (every default filled in) plus a `derived` sub-table.
    pub(crate) fn describe(&self) -> Value {
        match self {
            Component::Poisson(c) => c.describe(),
            Component::LeftRight(c) => c.describe(),
            Component::Incast(c) => c.describe(),
            Component::Permutation(c) => c.describe(),
            Component::Background(c) => c.describe(),
            Component::FlowList(c) => c.describe(),
        }
    }
}
