//! MLFQ demotion thresholds from the flow-size distribution and the load (PIAS §3.2).
//!
//! PIAS (Bai et al., "Information-Agnostic Flow Scheduling for Commodity Data Centers",
//! NSDI 2015) tags packets with a multi-level feedback queue
//! ([`crate::transport::tagging::Mlfq`]) and, in §3.2, derives its demotion thresholds from the
//! flow-size distribution and the network load: it models the bottleneck as a queue with
//! strict-priority classes fed by Poisson flow arrivals and picks the thresholds that minimise
//! the model's mean flow completion time. This module does the same. The paper's own
//! equations are not available to us: the model below is our formulation of that approach,
//! written out so that each step can be checked, and it need not match the paper's equations
//! term by term.
//!
//! # The model
//! - Flow sizes X (bytes) follow the workload's step CDF (`NetInfo::size_cdf`): points
//!   `(s_i, F_i)` with `P(X = s_i) = F_i - F_{i-1}`.
//! - K classes, 1 the highest, thresholds `0 = a_0 < a_1 < ... < a_{K-1} < a_K = inf`
//!   (bytes). A flow's bytes in `[a_{l-1}, a_l)` are sent in class l (the tagger compares
//!   the payload bytes sent before a packet with the thresholds), so a flow of size x ends in
//!   the class l with `a_{l-1} < x <= a_l`.
//! - One bottleneck port: a single server at load rho with Poisson flow arrivals; classes in
//!   preemptive-resume strict priority, first come first served inside a class (in the order
//!   flows enter it). Time is counted in bytes at the port's rate (one byte takes one unit),
//!   so the link rate cancels out of the optimisation; the flow arrival rate is
//!   `lambda = rho / E[X]`.
//! - Notation: `sigma_l = lambda E[min(X, a_l)]`, the load of the work done in classes 1..l
//!   (`sigma_0 = 0`, `sigma_K = rho`), and `V_l = lambda E[min(X, a_l)^2] / 2`.
//! - Mean FCT of a flow of size x that ends in class l:
//!   `T(x) = x / (1 - sigma_{l-1}) + V_l / ((1 - sigma_{l-1}) (1 - sigma_l))`.
//!   Derivation: every flow already present is ahead of the tagged flow in each class it will
//!   still visit, and a flow arriving later is behind it in class l, so the tagged flow is
//!   done exactly when the server has worked off (a) the work present at its arrival, each
//!   flow truncated at `a_l`, (b) its own x, and (c) the first `a_{l-1}` bytes of every flow
//!   arriving before it is done. The server never idles nor serves anything else meanwhile,
//!   so the FCT is a busy period started by (a) + (b) with arrivals bringing
//!   `min(X, a_{l-1})` each: mean `(E[(a)] + x) / (1 - sigma_{l-1})`. Work truncated at `a_l`
//!   is served whenever present (classes <= l come first), so it evolves as the workload of
//!   an FCFS M/G/1 queue with service `min(X, a_l)`, whose time-average (seen by a Poisson
//!   arrival) is `V_l / (1 - sigma_l)` (Pollaczek-Khinchine). This is the form of the
//!   classical analysis of the M/G/1 queue with feedback to lower-priority queues (Schrage,
//!   1967); the tests check it against a direct simulation of the queue.
//! - The model's mean FCT, minimised over the thresholds:
//!   `sum_l [ E[X; a_{l-1} < X <= a_l] / (1 - sigma_{l-1}) + P(a_{l-1} < X <= a_l) V_l /
//!   ((1 - sigma_{l-1}) (1 - sigma_l)) ]` (bytes; divide by the link rate for time). With K = 1 it is the Pollaczek-Khinchine mean response time of
//!   FCFS M/G/1, `E[X] + lambda E[X^2] / (2 (1 - rho))`.
//! - Not the per-segment decomposition. Treating each flow's segment in class l as an
//!   independent class-l job (response `E[S_l] / (1 - sigma_{l-1}) + R_l / ((1 -
//!   sigma_{l-1}) (1 - sigma_l))`, `R_l = (lambda / 2) sum_{m <= l} E[b_m(X)^2]` with
//!   `b_m(x) = min(x, a_m) - min(x, a_{m-1})`, summed over a flow's segments) undercounts
//!   the residual work, since `sum_m b_m^2 < (sum_m b_m)^2`, and so rewards splitting flows
//!   for its own sake: with every flow of one size s at rho = 0.5 it rates a threshold at
//!   0.2 s at 1.478 s against FCFS's 1.5 s, and would demote flows of a single size, where
//!   any real MLFQ is slower than FCFS (the analysis above: 1.667 s). On the simulation test's
//!   distribution it is 14-25% below the simulated mean FCT, the formula above within 1%.
//!
//! What the model leaves out: one bottleneck per flow, no rate control or ECN, no
//! propagation delay, no packet headers; sizes are payload bytes.
//!
//! # The optimiser ([`optimal_thresholds`])
//! - **Whole packets.** Thresholds are multiples of `unit`, the payload bytes of a full
//!   packet (`NetInfo::mss`): the tagger compares the payload a flow has sent, which grows in
//!   whole packets, so any threshold acts as the next multiple of the packet payload.
//! - **The cost separates by class.** The class-l term of the mean FCT depends only on
//!   `a_{l-1}` and `a_l`, so the minimum over the thresholds is a shortest path through
//!   the candidates: a dynamic program over (threshold index, candidate) in
//!   O(K x candidates^2) steps, exact over the candidate set (no local search, no starting
//!   point).
//! - **Candidates**: one packet; every CDF size rounded up to whole packets; 16 log-spaced
//!   sizes per decade from one packet to the largest size, rounded to whole packets; and the
//!   K packet multiples just past the largest size (so classes can be left unused). Why the
//!   rounded CDF sizes suffice: between two consecutive sizes of the CDF no flow ends, so
//!   moving a threshold up inside such a gap moves no flow to another class and only raises
//!   `sigma(a)` and `E[min(X, a)^2]`, with which both terms it enters grow; the best place for a
//!   threshold inside a gap is therefore the smallest packet multiple in it, the rounded-up
//!   size (or one packet below the smallest size). This covers every placement with at most
//!   one threshold per gap; the log-spaced points only add room for two thresholds in one
//!   gap. The tests compare the result with exhaustive search over every packet multiple
//!   (2 and 3 classes) and with the PIAS authors' web-search set and quantile thresholds (8).
//! - **Ties** (costs within a relative 1e-12) go to the smaller threshold at each step of the
//!   program, and to the smaller last threshold.
//! - Deterministic: plain `f64` arithmetic in a fixed order, no randomness, no state.
//!
//! # Degenerate inputs (never a panic)
//! - rho is clamped to [[`RHO_MIN`], [`RHO_MAX`]]; a non-finite rho is read as 0.5. At
//!   rho >= 1 the lowest class is unstable and every threshold set has an infinite mean FCT;
//!   0.99 keeps the heavy-load ranking. (The workload's loads are each below 1; only a sum
//!   of several components can reach 1.)
//! - `classes <= 1`: no thresholds.
//! - One flow size, or fewer distinct sizes than classes: classes nobody needs stay unused,
//!   their thresholds at the largest size rounded up to whole packets (`top`) and the
//!   packets after it (`top + unit`, `top + 2 unit`, ...): all such placements tie, and ties
//!   go to the smallest. For a single size the model prefers not to split flows at all
//!   (every threshold at or past the size: FCFS). A distribution within one packet gives 1, 2,
//!   ..., K-1 packets.
//! - An empty CDF, or one with no positive probability or a zero mean: thresholds 1, 2, ...,
//!   K-1 packets (nothing to optimise). `unit = 0` is read as 1 byte.
//! - Points are read in the given order as a CDF (a point whose probability does not exceed
//!   the previous maximum carries no mass); masses are normalised to sum to 1.

/// Smallest load the optimiser uses (smaller loads are raised to it).
pub const RHO_MIN: f64 = 0.01;
/// Largest load the optimiser uses (a load of 1 or more is lowered to it).
pub const RHO_MAX: f64 = 0.99;
/// Log-spaced candidate thresholds per decade of sizes.
const LOG_POINTS_PER_DECADE: f64 = 16.0;
/// Relative cost difference below which two threshold sets tie.
const TIE: f64 = 1e-12;

/// A flow-size distribution prepared for the model: distinct sizes in increasing order with
/// prefix sums of probability, first and second moments.
#[derive(Clone, Debug)]
pub struct SizeModel {
    sizes: Vec<u64>,
    /// `cum_p[i]` = P(X <= sizes[i-1]); `cum_p[0] = 0`, `cum_p[n] = 1`.
    cum_p: Vec<f64>,
    /// Prefix sums of p x s.
    cum_m1: Vec<f64>,
    /// Prefix sums of p x s^2.
    cum_m2: Vec<f64>,
    mean: f64,
}

impl SizeModel {
    /// Prepare step-CDF points `(size, P(X <= size))`. `None` if no point carries
    /// probability or the mean size is 0.
    pub fn new(cdf: &[(u64, f64)]) -> Option<SizeModel> {
        let mut mass: Vec<(u64, f64)> = Vec::with_capacity(cdf.len());
        let mut prev = 0.0f64;
        for &(s, f) in cdf {
            if f.is_finite() && f > prev {
                mass.push((s, f - prev));
                prev = f;
            }
        }
        let total: f64 = mass.iter().map(|m| m.1).sum();
        if mass.is_empty() || total.is_nan() || total <= 0.0 {
            return None;
        }
        mass.sort_by_key(|m| m.0); // stable: deterministic
        let mut sizes: Vec<u64> = Vec::with_capacity(mass.len());
        let mut probs: Vec<f64> = Vec::with_capacity(mass.len());
        for (s, p) in mass {
            match sizes.last() {
                Some(&l) if l == s => *probs.last_mut().expect("same length") += p / total,
                _ => {
                    sizes.push(s);
                    probs.push(p / total);
                }
            }
        }
        let n = sizes.len();
        let (mut cum_p, mut cum_m1, mut cum_m2) = (vec![0.0; n + 1], vec![0.0; n + 1], vec![0.0; n + 1]);
        for i in 0..n {
            let (s, p) = (sizes[i] as f64, probs[i]);
            cum_p[i + 1] = cum_p[i] + p;
            cum_m1[i + 1] = cum_m1[i] + p * s;
            cum_m2[i + 1] = cum_m2[i] + p * s * s;
        }
        cum_p[n] = 1.0;
        let mean = cum_m1[n];
        if !(mean > 0.0 && mean.is_finite()) {
            return None;
        }
        Some(SizeModel { sizes, cum_p, cum_m1, cum_m2, mean })
    }

    /// Mean flow size `E[X]` in bytes.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Largest flow size.
    pub fn max_size(&self) -> u64 {
        *self.sizes.last().expect("SizeModel::new keeps at least one size")
    }

    /// Number of sizes <= `a`.
    fn count_le(&self, a: u64) -> usize {
        self.sizes.partition_point(|&s| s <= a)
    }

    /// The model's mean FCT (bytes of serialization time at the bottleneck's rate) with
    /// thresholds `t` (bytes, strictly increasing; `t.len() + 1` classes) at load `rho`,
    /// taken as given (not clamped). Infinite when a class that some flow reaches has
    /// cumulative load >= 1.
    pub fn mean_fct(&self, rho: f64, t: &[u64]) -> f64 {
        let bounds: Vec<(f64, usize)> = t.iter().map(|&a| (a as f64, self.count_le(a))).collect();
        self.cost(rho, &bounds)
    }

    /// [`SizeModel::mean_fct`] with each threshold given as (bytes, number of sizes <= it).
    fn cost(&self, rho: f64, bounds: &[(f64, usize)]) -> f64 {
        let n = self.sizes.len();
        let lambda = rho / self.mean;
        let (mut ic, mut free_prev, mut total) = (0usize, 1.0f64, 0.0f64);
        for l in 0..=bounds.len() {
            if ic >= n {
                break; // no flow reaches this class or any later one
            }
            // E[min(X, d)] and E[min(X, d)^2] for the class's upper threshold d.
            let (id, m1_min, m2_min) = match bounds.get(l) {
                Some(&(d, id)) => {
                    let beyond = self.cum_p[n] - self.cum_p[id];
                    (id, self.cum_m1[id] + d * beyond, self.cum_m2[id] + d * d * beyond)
                }
                None => (n, self.cum_m1[n], self.cum_m2[n]),
            };
            let free = 1.0 - lambda * m1_min;
            if !(free_prev > 0.0 && free > 0.0) {
                return f64::INFINITY;
            }
            // Flows ending in this class: sizes in (a_{l-1}, a_l].
            let p = self.cum_p[id] - self.cum_p[ic];
            let m1 = self.cum_m1[id] - self.cum_m1[ic];
            total += class_term(p, m1, 1.0 - free_prev, 1.0 - free, lambda * m2_min / 2.0);
            free_prev = free;
            ic = id;
        }
        total
    }
}

/// One class's contribution to the model's mean FCT (module doc, "The model"): the flows
/// ending in class l, with probability `p` and `m` = E[X; a_{l-1} < X <= a_l], each wait
/// for their own bytes slowed by `sigma_prev` = sigma_{l-1} and for the residual work
/// `v` = V_l, behind `sigma` = sigma_l: `m / (1 - sigma_prev) + p v / ((1 - sigma_prev)
/// (1 - sigma))`. The one formula both the evaluation and the optimiser use.
fn class_term(p: f64, m: f64, sigma_prev: f64, sigma: f64, v: f64) -> f64 {
    m / (1.0 - sigma_prev) + p * v / ((1.0 - sigma_prev) * (1.0 - sigma))
}

/// The model's mean FCT (bytes at the bottleneck rate) of the distribution `cdf` with
/// thresholds `t` at load `rho` (not clamped); `None` for an empty distribution. See the
/// module documentation.
pub fn mean_fct(cdf: &[(u64, f64)], rho: f64, t: &[u64]) -> Option<f64> {
    SizeModel::new(cdf).map(|m| m.mean_fct(rho, t))
}

/// The load the optimiser uses for `rho`: clamped to [[`RHO_MIN`], [`RHO_MAX`]], 0.5 when not
/// finite.
pub fn effective_rho(rho: f64) -> f64 {
    if rho.is_finite() {
        rho.clamp(RHO_MIN, RHO_MAX)
    } else {
        0.5
    }
}

/// `x` rounded up to whole packets of `unit` bytes, at least one packet.
fn packets_up(x: u64, unit: u64) -> u64 {
    x.div_ceil(unit).max(1).saturating_mul(unit)
}

/// The `classes - 1` demotion thresholds (bytes, multiples of `unit`, strictly increasing)
/// that minimise the model's mean FCT for the distribution `cdf` at load `rho`. See the
/// module documentation for the search and the degenerate cases.
pub fn optimal_thresholds(cdf: &[(u64, f64)], rho: f64, classes: usize, unit: u64) -> Vec<u64> {
    let unit = unit.max(1);
    let k = classes.saturating_sub(1);
    if k == 0 {
        return Vec::new();
    }
    let Some(model) = SizeModel::new(cdf) else {
        return (1..=k as u64).map(|i| i.saturating_mul(unit)).collect();
    };
    let lambda = effective_rho(rho) / model.mean;

    // Candidates.
    let top = packets_up(model.max_size(), unit);
    let mut cands: Vec<u64> = vec![unit];
    cands.extend(model.sizes.iter().map(|&s| packets_up(s, unit)));
    let steps = ((top as f64 / unit as f64).log10() * LOG_POINTS_PER_DECADE).ceil() as u64;
    for j in 0..=steps {
        let x = 10f64.powf(j as f64 / LOG_POINTS_PER_DECADE);
        let pk = (x.round() as u64).max(1).saturating_mul(unit);
        if pk <= top {
            cands.push(pk);
        }
    }
    for j in 1..=classes as u64 {
        cands.push(top.saturating_add(j.saturating_mul(unit)));
    }
    cands.sort_unstable();
    cands.dedup();
    let nc = cands.len(); // >= classes > k: K-1 increasing thresholds always fit

    // Points of the path: 0 = a_0 (no bytes), 1..=nc the candidates, nc + 1 = infinity.
    // For each: P(X <= a), E[X; X <= a], sigma(a) = lambda E[min(X, a)], E[min(X, a)^2].
    let n = model.sizes.len();
    let mut pts: Vec<(f64, f64, f64, f64)> = Vec::with_capacity(nc + 2);
    pts.push((0.0, 0.0, 0.0, 0.0));
    for &a in &cands {
        let i = model.count_le(a);
        let (a, beyond) = (a as f64, model.cum_p[n] - model.cum_p[i]);
        let m1 = model.cum_m1[i];
        pts.push((model.cum_p[i], m1, lambda * (m1 + a * beyond), model.cum_m2[i] + a * a * beyond));
    }
    pts.push((model.cum_p[n], model.cum_m1[n], lambda * model.cum_m1[n], model.cum_m2[n]));
    // The class term between thresholds at points i < j (module doc, "The model").
    let term = |i: usize, j: usize| -> f64 {
        let ((p0, m0, s0, _), (p1, m1, s1, h1)) = (pts[i], pts[j]);
        let (p, m) = (p1 - p0, m1 - m0);
        if p <= 0.0 && m <= 0.0 {
            return 0.0;
        }
        class_term(p, m, s0, s1, lambda * h1 / 2.0)
    };
    let better = |c: f64, best: f64| if best.is_finite() { c < best - TIE * best.abs() } else { c < best };

    // best[j]: cheapest cost of classes 1..l with the l-th threshold at point j.
    let mut best = vec![f64::INFINITY; nc + 2];
    best[0] = 0.0;
    let mut parent: Vec<Vec<usize>> = Vec::with_capacity(k);
    for l in 1..=k {
        let mut next = vec![f64::INFINITY; nc + 2];
        let mut from = vec![0usize; nc + 2];
        for j in l..=nc {
            for (i, &b) in best.iter().enumerate().take(j).skip(l - 1) {
                if b.is_finite() {
                    let c = b + term(i, j);
                    if better(c, next[j]) {
                        next[j] = c;
                        from[j] = i;
                    }
                }
            }
        }
        parent.push(from);
        best = next;
    }
    let (mut last, mut min) = (k, f64::INFINITY);
    for (j, &b) in best.iter().enumerate().take(nc + 1).skip(k) {
        let c = b + term(j, nc + 1);
        if better(c, min) {
            last = j;
            min = c;
        }
    }
    let mut idx = vec![0usize; k];
    let mut j = last;
    for l in (0..k).rev() {
        idx[l] = j;
        j = parent[l][j];
    }
    idx.iter().map(|&i| cands[i - 1]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// E[X] and E[X^2] computed straight from the points.
    fn moments(cdf: &[(u64, f64)]) -> (f64, f64) {
        let mut prev = 0.0;
        let (mut m1, mut m2) = (0.0, 0.0);
        for &(s, f) in cdf {
            let p = f - prev;
            prev = f;
            m1 += p * s as f64;
            m2 += p * (s as f64).powi(2);
        }
        (m1, m2)
    }

    #[test]
    fn one_class_is_the_pollaczek_khinchine_mean() {
        let cdf = [(1_000, 0.3), (5_000, 0.7), (80_000, 0.95), (2_000_000, 1.0)];
        let (m1, m2) = moments(&cdf);
        for rho in [0.1, 0.5, 0.9] {
            let pk = m1 + (rho / m1) * m2 / (2.0 * (1.0 - rho));
            let got = mean_fct(&cdf, rho, &[]).unwrap();
            assert!((got - pk).abs() / pk < 1e-12, "rho {rho}: {got} vs {pk}");
            // Thresholds past the largest flow change nothing.
            let got = mean_fct(&cdf, rho, &[3_000_000, 4_000_000]).unwrap();
            assert!((got - pk).abs() / pk < 1e-12, "rho {rho}: {got} vs {pk}");
        }
        assert!(mean_fct(&cdf, 1.0, &[]).unwrap().is_infinite());
    }

    /// Mean FCT of a direct simulation of the modelled queue: one server, Poisson arrivals,
    /// levels in preemptive-resume priority, FCFS inside a level (by entry into it).
    fn simulate(dist: &[(u64, f64)], t: &[u64], rho: f64, jobs: usize, seed: u64) -> f64 {
        use std::collections::VecDeque;
        let mean: f64 = dist.iter().map(|&(s, p)| s as f64 * p).sum();
        let mut rng = crate::rng::Rng::new(seed);
        let draw = |rng: &mut crate::rng::Rng| {
            let (u, mut acc) = (rng.f64(), 0.0);
            for &(s, p) in dist {
                acc += p;
                if u < acc {
                    return s as f64;
                }
            }
            dist[dist.len() - 1].0 as f64
        };
        let bound = |l: usize| t.get(l).map_or(f64::INFINITY, |&a| a as f64);
        let mut levels: Vec<VecDeque<usize>> = vec![VecDeque::new(); t.len() + 1];
        let mut job: Vec<(f64, f64, f64)> = Vec::new(); // arrival, size, work done
        let (mut now, mut next, mut sum, mut done) = (0.0, rng.exp(mean / rho), 0.0, 0usize);
        loop {
            let Some(l) = levels.iter().position(|q| !q.is_empty()) else {
                if job.len() == jobs {
                    break;
                }
                now = next;
                job.push((now, draw(&mut rng), 0.0));
                levels[0].push_back(job.len() - 1);
                next = now + rng.exp(mean / rho);
                continue;
            };
            let j = levels[l][0];
            let end = job[j].1.min(bound(l));
            let finish = now + (end - job[j].2);
            if job.len() < jobs && next < finish {
                job[j].2 += next - now;
                now = next;
                job.push((now, draw(&mut rng), 0.0));
                levels[0].push_back(job.len() - 1);
                next = now + rng.exp(mean / rho);
            } else {
                now = finish;
                job[j].2 = end;
                levels[l].pop_front();
                if end >= job[j].1 {
                    sum += now - job[j].0;
                    done += 1;
                } else {
                    levels[l + 1].push_back(j);
                }
            }
        }
        sum / done as f64
    }

    #[test]
    fn the_formula_matches_a_simulation_of_the_queue() {
        let dist = [(1_000, 0.6), (4_000, 0.3), (20_000, 0.1)];
        let cdf = [(1_000, 0.6), (4_000, 0.9), (20_000, 1.0)];
        for (t, rho) in [(&[][..], 0.7), (&[2_000][..], 0.7), (&[2_000, 10_000][..], 0.7), (&[1_000, 4_000][..], 0.5)] {
            let sim = simulate(&dist, t, rho, 400_000, 7);
            let model = mean_fct(&cdf, rho, t).unwrap();
            assert!((sim - model).abs() / model < 0.02, "{t:?} at {rho}: simulated {sim}, model {model}");
        }
    }

    /// Two classes, two sizes, threshold between them, written out by hand.
    #[test]
    fn two_classes_written_out() {
        let (s1, s2, p1) = (2_000.0, 1_000_000.0, 0.9);
        let cdf = [(2_000, p1), (1_000_000, 1.0)];
        let (a, rho) = (10_000.0, 0.6);
        let lambda = rho / (p1 * s1 + (1.0 - p1) * s2);
        // Small flows end in class 1: an FCFS queue of the work truncated at a.
        let sigma1 = lambda * (p1 * s1 + (1.0 - p1) * a);
        let t1 = s1 + lambda * (p1 * s1 * s1 + (1.0 - p1) * a * a) / 2.0 / (1.0 - sigma1);
        // Large flows: slowed by class-1 arrivals, behind all work present.
        let t2 =
            s2 / (1.0 - sigma1) + lambda * (p1 * s1 * s1 + (1.0 - p1) * s2 * s2) / 2.0 / ((1.0 - sigma1) * (1.0 - rho));
        let want = p1 * t1 + (1.0 - p1) * t2;
        let got = mean_fct(&cdf, rho, &[10_000]).unwrap();
        assert!((got - want).abs() / want < 1e-12, "{got} vs {want}");
    }

    #[test]
    fn two_point_distribution_splits_between_the_sizes_and_beats_fcfs() {
        // 95% flows of 3 packets, 5% of 700 packets.
        let cdf = [(3 * 1460, 0.95), (700 * 1460, 1.0)];
        for rho in [0.3, 0.6, 0.9] {
            let t = optimal_thresholds(&cdf, rho, 2, 1460);
            assert_eq!(t.len(), 1);
            assert!(t[0] >= 3 * 1460 && t[0] < 700 * 1460, "rho {rho}: {t:?}");
            let fcfs = mean_fct(&cdf, rho, &[]).unwrap();
            let got = mean_fct(&cdf, rho, &t).unwrap();
            assert!(got < fcfs, "rho {rho}: {got} vs FCFS {fcfs}");
        }
    }

    /// Exhaustive search over every packet-multiple threshold pair/triple on a small grid.
    #[test]
    fn matches_exhaustive_search_for_two_and_three_classes() {
        let u = 1000;
        let cdf = [(1_000, 0.4), (3_000, 0.6), (10_000, 0.75), (40_000, 0.9), (100_000, 0.97), (300_000, 1.0)];
        let grid: Vec<u64> = (1..=301).map(|i| i * u).collect();
        for rho in [0.4, 0.8] {
            let mut best2 = f64::INFINITY;
            for &a in &grid {
                best2 = best2.min(mean_fct(&cdf, rho, &[a]).unwrap());
            }
            let got2 = mean_fct(&cdf, rho, &optimal_thresholds(&cdf, rho, 2, u)).unwrap();
            assert!(got2 <= best2 * (1.0 + 1e-9), "rho {rho}, 2 classes: {got2} vs {best2}");
            let mut best3 = f64::INFINITY;
            for (i, &a) in grid.iter().enumerate() {
                for &b in &grid[i + 1..] {
                    best3 = best3.min(mean_fct(&cdf, rho, &[a, b]).unwrap());
                }
            }
            let t3 = optimal_thresholds(&cdf, rho, 3, u);
            let got3 = mean_fct(&cdf, rho, &t3).unwrap();
            assert!(got3 <= best3 * (1.0 + 1e-9), "rho {rho}, 3 classes {t3:?}: {got3} vs {best3}");
            assert!(got3 < got2, "a third class helps on this distribution");
        }
    }

    #[test]
    fn deterministic_and_well_formed() {
        let cdf = [(500, 0.2), (1_460, 0.5), (20_000, 0.8), (1_000_000, 0.99), (30_000_000, 1.0)];
        let a = optimal_thresholds(&cdf, 0.7, 8, 1460);
        assert_eq!(a, optimal_thresholds(&cdf, 0.7, 8, 1460));
        assert_eq!(a.len(), 7);
        assert!(a.windows(2).all(|w| w[0] < w[1]) && a[0] > 0, "{a:?}");
        assert!(a.iter().all(|t| t % 1460 == 0), "{a:?}");
    }

    #[test]
    fn degenerate_inputs() {
        // One size: the model does not split flows; thresholds past the size, consecutive.
        let one = [(10 * 1460, 1.0)];
        let t = optimal_thresholds(&one, 0.5, 4, 1460);
        assert_eq!(t, vec![10 * 1460, 11 * 1460, 12 * 1460]);
        // Fewer sizes than classes: the spare thresholds sit just past the largest size.
        let two = [(1460, 0.9), (100 * 1460, 1.0)];
        let t = optimal_thresholds(&two, 0.5, 8, 1460);
        assert_eq!(t.len(), 7);
        assert!(t[0] < 100 * 1460 && t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
        let t2 = optimal_thresholds(&two, 0.5, 2, 1460);
        let (c8, c2) = (mean_fct(&two, 0.5, &t).unwrap(), mean_fct(&two, 0.5, &t2).unwrap());
        assert!(c8 <= c2 * (1.0 + 1e-12), "{c8} vs {c2}");
        // rho >= 1, not finite, or tiny: clamped, still a valid answer.
        for rho in [1.0, 7.0, f64::NAN, f64::INFINITY, 0.0, -1.0] {
            let t = optimal_thresholds(&two, rho, 3, 1460);
            assert_eq!(t.len(), 2, "rho {rho}");
            assert!(t[0] > 0 && t[0] < t[1], "rho {rho}: {t:?}");
        }
        assert_eq!(optimal_thresholds(&two, 1.0, 3, 1460), optimal_thresholds(&two, RHO_MAX, 3, 1460));
        // Empty or massless CDFs, one class, unit 0.
        assert_eq!(optimal_thresholds(&[], 0.5, 4, 1460), vec![1460, 2920, 4380]);
        assert_eq!(optimal_thresholds(&[(100, 0.0)], 0.5, 3, 1000), vec![1000, 2000]);
        assert_eq!(optimal_thresholds(&[(0, 1.0)], 0.5, 3, 1000), vec![1000, 2000]);
        assert!(optimal_thresholds(&two, 0.5, 1, 1460).is_empty());
        assert!(optimal_thresholds(&two, 0.5, 0, 1460).is_empty());
        let t = optimal_thresholds(&two, 0.5, 3, 0);
        assert!(t.len() == 2 && t[0] < t[1] && t[0] > 0, "{t:?}");
        // Huge sizes do not overflow.
        let t = optimal_thresholds(&[(1, 0.5), (u64::MAX / 2, 1.0)], 0.5, 3, 1460);
        assert!(t.len() == 2 && t[0] < t[1], "{t:?}");
    }
}
