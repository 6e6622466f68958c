//! pFabric (the `pfabric` end host over the `pfabric` switch policy) against its analytic
//! target: shortest-remaining-processing-time scheduling of the bottleneck.
//!
//! The independent expectation is the M/G/1 queue under preemptive SRPT, whose mean response
//! time for a job of size x is Schrage and Miller's formula (1966):
//!
//! T(x) = lambda (m2(x) + x^2 (1 - F(x))) / (2 (1 - rho(x))^2) + integral_0^x dt / (1 - rho(t))
//!
//! with F the job-size CDF, rho(x) = lambda integral_0^x t dF(t) the load of jobs no larger
//! than x and m2(x) = integral_0^x t^2 dF(t). The first term is the time the job waits for
//! work smaller than itself (present at arrival or arriving before it starts); the second its
//! residence time, stretched by the smaller jobs that arrive while it is served. [`srpt`]
//! computes it numerically for a piecewise-linear CDF and is checked against the closed form
//! for a uniform distribution.
//!
//! The network run: 16 senders to one receiver on one 10 Gbps switch, Poisson arrivals at
//! load 0.6 of the receiver's link, sizes uniform in [2 KB, 198 KB] (the PASE workload). The
//! receiver's downlink is the only bottleneck, so each flow is a job whose work is its wire
//! bytes at 10 Gbps; its modelled FCT is its ideal FCT (propagation and store-and-forward of an
//! idle path) plus the SRPT queueing delay T(s) - s. The switch buffer is pFabric's two
//! bandwidth-delay products. The mean simulated FCT of each of the three smaller quarters of
//! the size range must be within `TOLERANCE` of the model's mean over the same flows; the
//! largest quarter, where pFabric's losses concentrate, within [0.95, 1.6] x the model.
//!
//! Measured (3000 flows, seed 7): ratios 1.04, 1.06, 1.11, 1.25 by quarter; DCTCP on the
//! same flows 2.02, 2.14, 1.73, 1.33. With 1500 flows and seeds 1, 2, 3, 7 the pFabric ratios
//! ranged 1.03-1.14 (first quarter and second), 1.11-1.22 (third) and 1.18-1.55 (largest).

mod common;

use dcnsim_core::output::RunOutput;
use dcnsim_core::sim::run;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

/// Mean response time T(x) of a job of size `x` under preemptive SRPT in an M/G/1 queue with
/// arrival rate `lambda` and job sizes distributed by the piecewise-linear CDF `cdf` (points
/// `(size, F)`, sizes increasing, F from 0 to 1; sizes and 1/lambda in the same time unit).
pub fn srpt(x: f64, lambda: f64, cdf: &[(f64, f64)]) -> f64 {
    // Partial moments up to `y`: integral of t^k dF over (0, y]; the density is constant on
    // each segment, so each piece is exact.
    let moments = |y: f64| -> (f64, f64, f64) {
        let (mut f, mut m1, mut m2) = (0.0, 0.0, 0.0);
        for w in cdf.windows(2) {
            let ((a, fa), (b, fb)) = (w[0], w[1]);
            if y <= a || b <= a {
                continue;
            }
            let hi = y.min(b);
            let dens = (fb - fa) / (b - a);
            f += dens * (hi - a);
            m1 += dens * (hi * hi - a * a) / 2.0;
            m2 += dens * (hi.powi(3) - a.powi(3)) / 3.0;
        }
        (f, m1, m2)
    };
    let (fx, m1x, m2x) = moments(x);
    let rho_x = lambda * m1x;
    assert!(rho_x < 1.0, "load of jobs up to x must be below 1");
    let wait = lambda * (m2x + x * x * (1.0 - fx)) / (2.0 * (1.0 - rho_x).powi(2));
    // Residence: Simpson's rule on 1 / (1 - rho(t)), smooth on [0, x].
    let n = 2000;
    let h = x / n as f64;
    let g = |t: f64| 1.0 / (1.0 - lambda * moments(t).1);
    let mut s = g(0.0) + g(x);
    for i in 1..n {
        s += g(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    wait + s * h / 3.0
}

/// Closed form of [`srpt`] for sizes uniform in [a, b].
fn srpt_uniform(x: f64, lambda: f64, a: f64, b: f64) -> f64 {
    let c = lambda / (2.0 * (b - a));
    let xc = x.clamp(a, b);
    let f = (xc - a) / (b - a);
    let rho = c * (xc * xc - a * a);
    let m2 = (xc.powi(3) - a.powi(3)) / (3.0 * (b - a));
    let wait = lambda * (m2 + x * x * (1.0 - f)) / (2.0 * (1.0 - rho).powi(2));
    // integral_0^x dt / (1 - rho(t)): t < a contributes a; beyond, 1 / (k - c t^2) with
    // k = 1 + c a^2, whose antiderivative is atanh(t sqrt(c / k)) / sqrt(c k).
    let k = 1.0 + c * a * a;
    let anti = |t: f64| (t * (c / k).sqrt()).atanh() / (c * k).sqrt();
    wait + x.min(a) + if x > a { anti(xc) - anti(a) } else { 0.0 }
}

#[test]
fn srpt_formula_matches_the_uniform_closed_form() {
    let (a, b) = (2.0, 198.0);
    let cdf = [(0.0, 0.0), (a, 0.0), (b, 1.0)];
    // Load 0.8: lambda x mean size (100).
    let lambda = 0.8 / 100.0;
    for x in [1.0, 2.0, 10.0, 50.0, 100.0, 150.0, 198.0] {
        let num = srpt(x, lambda, &cdf);
        let exact = srpt_uniform(x, lambda, a, b);
        assert!((num / exact - 1.0).abs() < 1e-9, "x = {x}: {num} vs {exact}");
    }
    // The largest job at load 0.8: wait lambda E[S^2] / (2 (1 - 0.8)^2) = 0.008 x 13201.33
    // / 0.08 = 1320.13; residence = 2 + integral_2^198 dt / (1 - 0.008 (t^2 - 4) / 392).
    let t = srpt(198.0, lambda, &cdf);
    assert!((t - srpt_uniform(198.0, lambda, a, b)).abs() < 1e-6);
    assert!(t > 1320.13 + 198.0, "the residence time is stretched: {t}");
}

#[test]
fn srpt_formula_limits_and_optimality() {
    let cdf = [(0.0, 0.0), (2.0, 0.0), (198.0, 1.0)];
    // Light load: a job's response time is its size.
    for x in [2.0, 100.0, 198.0] {
        assert!((srpt(x, 1e-9, &cdf) / x - 1.0).abs() < 1e-6);
    }
    // SRPT minimises the mean response time: below processor sharing (E[S] / (1 - rho)) and
    // FCFS (E[S] + lambda E[S^2] / (2 (1 - rho))), both exact for M/G/1.
    let lambda = 0.6 / 100.0;
    let n = 2000;
    let mean: f64 =
        (0..n).map(|i| srpt(2.0 + 196.0 * (i as f64 + 0.5) / n as f64, lambda, &cdf)).sum::<f64>() / n as f64;
    let es2 = (198f64.powi(3) - 8.0) / (3.0 * 196.0);
    let ps = 100.0 / 0.4;
    let fcfs = 100.0 + lambda * es2 / (2.0 * 0.4);
    assert!(mean < ps && mean < fcfs, "SRPT {mean} vs PS {ps}, FCFS {fcfs}");
    // And small jobs barely wait: T(2) / 2 close to 1, far below PS's 1 / (1 - rho) = 2.5.
    assert!(srpt(2.0, lambda, &cdf) / 2.0 < 1.1);
}

const RATE_BPS: f64 = 10e9;
const MSS: f64 = 1460.0;
const HEADER: f64 = 40.0;
const LOAD: f64 = 0.6;
/// Largest relative gap allowed between the simulated and the modelled mean FCT of a size
/// quarter. The gap has three honest sources: the finite sample (a few hundred flows per
/// quarter: the M/G/1 busy periods make the mean queueing delay of large flows vary by about
/// 10% between seeds), pFabric only approximating SRPT (ranks are remaining sizes as of the
/// last ACK, a flow's first window arrives at the bottleneck at the sender's line rate rather
/// than at once, and the small buffer drops low-priority packets that then wait for a timeout)
/// and the per-packet store-and-forward the fluid model lacks. Processor sharing, the
/// alternative a fair transport gives, is 2.5x the size for every flow at this load, far
/// outside this band for the smaller flows (checked below with DCTCP).
const TOLERANCE: f64 = 0.25;
/// pFabric's buffer: two bandwidth-delay products (pFabric §4.1; PASE Table 3 "2 x BDP").
const PFABRIC_BUFFER: &str = r#", "pfabric": {"buffer": "16KB"}"#;

fn scenario_doc(protocol: &str, queue: &str, net: &str) -> String {
    format!(
        r#"{{"seed": 7,
            "topology": {{"kind": "single_switch", "hosts": 17, "host_rate": "10Gbps", "host_delay": "1us"}},
            "network": {{"queue_policy": "{queue}"{net}}},
            "transport": {{"protocol": "{protocol}"}},
            "workload": [{{"pattern": "poisson", "cdf": "uniform_pase", "load": {LOAD}, "flows": 3000,
                           "receivers": [0]}}],
            "output": {{"audit": true}}}}"#
    )
}

fn run_doc(doc: &str) -> RunOutput {
    let sc = parse_scenario(doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    run(&sc, &mut |_| true)
}

/// Wire bytes of a flow of `size` payload bytes.
fn wire(size: f64) -> f64 {
    size + (size / MSS).ceil().max(1.0) * HEADER
}

/// Per size quarter: (simulated mean FCT, modelled mean FCT), seconds.
fn by_quarter(out: &RunOutput) -> Vec<(f64, f64)> {
    let f = &out.flows;
    let n = f.id.len();
    // Arrival rate measured on the run's own arrivals.
    let t0 = *f.start_ps.iter().min().unwrap() as f64 * 1e-12;
    let t1 = *f.start_ps.iter().max().unwrap() as f64 * 1e-12;
    let lambda = (n - 1) as f64 / (t1 - t0);
    // Job sizes in seconds of bottleneck work: payload uniform in [2 KB, 198 KB], in wire
    // bytes (the header of each 1460 B segment scales the range by 1500 / 1460; the partial
    // last segment is ignored here, at most 40 B).
    let sec = |bytes: f64| bytes * (MSS + HEADER) / MSS * 8.0 / RATE_BPS;
    let cdf = [(0.0, 0.0), (sec(2000.0), 0.0), (sec(198_000.0), 1.0)];
    let mut q = [(0.0, 0.0, 0usize); 4];
    for i in 0..n {
        assert_ne!(f.finish_ps[i], u64::MAX, "flow {i} unfinished");
        let s = wire(f.size[i] as f64) * 8.0 / RATE_BPS;
        let model = f.ideal_fct_ps[i] as f64 * 1e-12 + srpt(s, lambda, &cdf) - s;
        let k = (((f.size[i] as f64 - 2000.0) / 49_000.0) as usize).min(3);
        q[k].0 += f.fct_ps[i] as f64 * 1e-12;
        q[k].1 += model;
        q[k].2 += 1;
    }
    q.iter().map(|&(a, b, c)| (a / c as f64, b / c as f64)).collect()
}

#[test]
fn pfabric_mean_fct_by_size_is_close_to_mg1_srpt() {
    let out = run_doc(&scenario_doc("pfabric", "pfabric", PFABRIC_BUFFER));
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    // The buffer is two bandwidth-delay products of this network (pFabric §4.1).
    assert_eq!(out.flows.base_rtt_ps[0], 6_502_400, "base RTT 6.5 us: BDP 8.1 KB");
    let q = by_quarter(&out);
    for (k, &(sim, model)) in q.iter().enumerate() {
        eprintln!(
            "pfabric quarter {k}: sim {:.1} us, SRPT model {:.1} us, ratio {:.3}",
            sim * 1e6,
            model * 1e6,
            sim / model
        );
    }
    // The small buffer drops: pFabric's loss recovery is exercised, not idle.
    let drops: u64 = out.counters.drops.iter().map(|d| d.1).sum();
    eprintln!(
        "pfabric drops {drops}, timeouts {}, retx bytes {}, payload {}",
        out.flows.timeouts.iter().sum::<u32>(),
        out.flows.retx_bytes.iter().sum::<u64>(),
        out.flows.size.iter().sum::<u64>()
    );
    for (k, &(sim, model)) in q.iter().enumerate().take(3) {
        assert!((sim / model - 1.0).abs() <= TOLERANCE, "quarter {k}: sim {sim:e} s vs SRPT {model:e} s");
    }
    // The largest quarter is where pFabric departs from SRPT: these flows are preempted most
    // often, and each preemption costs them timeouts, a restart from one packet and
    // retransmissions of packets that were only waiting (bottleneck capacity SRPT never
    // spends). SRPT is the optimum, so pFabric cannot beat it by more than sampling noise; the
    // excess stays bounded (measured 1.18-1.55 over four seeds, see the module doc).
    let r = q[3].0 / q[3].1;
    assert!((0.95..=1.6).contains(&r), "largest quarter: ratio {r}");
}

/// The negative control: DCTCP on drop-tail queues shares the bottleneck fairly, so its
/// small flows wait behind the large ones, and the same comparison fails for them.
#[test]
fn dctcp_on_the_same_workload_is_far_from_srpt_for_small_flows() {
    let out = run_doc(&scenario_doc("dctcp", "priority_ecn", ""));
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    let q = by_quarter(&out);
    for (k, &(sim, model)) in q.iter().enumerate() {
        eprintln!(
            "dctcp quarter {k}: sim {:.1} us, SRPT model {:.1} us, ratio {:.3}",
            sim * 1e6,
            model * 1e6,
            sim / model
        );
    }
    assert!(q[0].0 / q[0].1 > 1.0 + TOLERANCE, "DCTCP's small flows are slower than SRPT's");
}
