//! Small-scenario tests of the network model and TCP/DCTCP against analytic results.
//!
//! Each test states the independent expectation it checks: an exact ideal FCT, one
//! serialization time between back-to-back packets, Jain's fairness and the queue around
//! K for DCTCP, link utilization equal to the offered load, byte conservation, the incast
//! bound of PTCP Eq. 3, and determinism.

mod common;

use common::*;
use dcnsim_core::units::{Bytes, Rate, Time};
use dcnsim_core::workload::FlowSpec;

/// An uncontended flow finishes in exactly its ideal FCT, for several sizes, link rates
/// and hop counts (1 switch = 2 hops, leaf-spine = 4 hops with 40G/100G/40G, fat tree = 6).
#[test]
fn single_flow_finishes_in_ideal_fct() {
    let topos = [
        (r#"{"kind":"single_switch","hosts":4,"host_rate":"10Gbps","host_delay":"2us"}"#, 0, 3, 2),
        (r#"{"kind":"leaf_spine","leaves":3,"hosts_per_leaf":4,"spines":2}"#, 0, 11, 4),
        (r#"{"kind":"fat_tree","k":4,"host_rate":"100Gbps"}"#, 0, 15, 6),
        (r#"{"kind":"dumbbell","left":2,"right":2,"host_rate":"40Gbps","bottleneck_rate":"10Gbps"}"#, 0, 3, 3),
    ];
    for (topo, src, dst, hops) in topos {
        for size in [1u64, 1460, 1461, 64_000, 1_000_003] {
            let sc = scenario(topo, r#"{"protocol":"dctcp","init_cwnd":100000}"#, r#"{"buffer":"100MB"}"#);
            let flows = vec![flow(src, dst, size, Time::us(3))];
            let (out, _) = run_flows(&sc, flows);
            assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
            assert_eq!(
                out.flows.fct_ps[0], out.flows.ideal_fct_ps[0],
                "{topo} size {size}: fct {} ideal {}",
                out.flows.fct_ps[0], out.flows.ideal_fct_ps[0]
            );
            // Independent check of the ideal for the equal-rate single switch:
            // prop 2 x 2us + first packet twice + remaining bytes once, at 10G.
            if hops == 2 {
                let r = Rate::gbps(10);
                let npk = size.div_ceil(1460);
                let wire = size + 40 * npk;
                let first = 1500.min(wire);
                let expect = Time::us(4) + r.tx_time(Bytes(first)) * 2 + r.tx_time(Bytes(wire - first));
                assert!(
                    out.flows.fct_ps[0].abs_diff(expect.0) <= npk,
                    "size {size}: {} vs analytic {}",
                    out.flows.fct_ps[0],
                    expect.0
                );
            }
        }
    }
}

/// Back-to-back packets of one flow arrive exactly one serialization time apart.
#[test]
fn back_to_back_packets_are_one_serialization_apart() {
    let sc = scenario(
        r#"{"kind":"single_switch","hosts":2,"host_rate":"40Gbps"}"#,
        r#"{"protocol":"tcp","init_cwnd":1000}"#,
        r#"{"buffer":"10MB"}"#,
    );
    let (out, rec) = run_flows(&sc, vec![flow(0, 1, 200 * 1460, Time::ZERO)]);
    assert_eq!(out.flows.finish_ps[0], out.flows.start_ps[0] + out.flows.fct_ps[0]);
    let arr = &rec.borrow().data_arrivals;
    assert_eq!(arr.len(), 200);
    let ser = Rate::gbps(40).tx_time(Bytes(1500));
    for w in arr.windows(2) {
        assert_eq!(w[1].0 - w[0].0, ser, "gap between consecutive arrivals");
    }
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

/// N long-lived DCTCP flows through one 10G bottleneck share it fairly (Jain >= 0.98 over
/// the steady state), keep the bottleneck queue near K, and keep the link >= 95% busy.
#[test]
fn dctcp_long_flows_share_fairly_with_queue_near_k() {
    for n in [2u32, 8] {
        let k = 30_000u64;
        let sc = scenario_full(
            &format!(r#"{{"kind":"single_switch","hosts":{},"host_rate":"10Gbps","host_delay":"5us"}}"#, n + 1),
            r#"{"protocol":"dctcp"}"#,
            &format!(r#"{{"buffer":"400KB","ecn_k":"{k}B"}}"#),
            r#"{"time_limit":"60ms"}"#,
            r#"{"sample_interval":"10us","sample_ports":"switch","audit":true}"#,
        );
        let flows: Vec<FlowSpec> = (0..n).map(|i| background(i, n, Time::us(i as u64))).collect();
        let (out, rec) = run_flows(&sc, flows);
        let (t0, t1) = (Time::ms(20), Time::ms(60));
        let rates: Vec<f64> = (0..n).map(|f| rec.borrow().bytes_between(f, t0, t1) as f64).collect();
        let j = jain(&rates);
        assert!(j >= 0.98, "n={n}: Jain {j:.4} rates {rates:?}");
        let port = bottleneck_port(&out, n);
        let (util, avg_q) = port_stats(&out, port, t0, t1);
        eprintln!("dctcp n={n}: jain={j:.4} util={util:.4} avg_queue={avg_q:.0}B K={k}");
        // Utilization of the bottleneck (switch -> receiver) in the steady state.
        assert!(util >= 0.95, "n={n}: utilization {util:.4}");
        // DCTCP keeps the queue oscillating around K: its average within [K/2, K + n MSS].
        let lo = k as f64 * 0.5;
        let hi = (k + n as u64 * 1500) as f64;
        assert!(avg_q >= lo && avg_q <= hi, "n={n}: average queue {avg_q:.0} B not in [{lo}, {hi}] (K = {k})");
        assert_eq!(out.counters.drops.iter().map(|d| d.1).sum::<u64>(), 0, "no drops with K well below the buffer");
    }
}

/// Byte conservation with losses: every finished flow's bytes are all held by its receiver
/// exactly when it reports completion, and nothing is left in the network at the end.
#[test]
fn conservation_under_loss() {
    let sc = scenario_full(
        r#"{"kind":"single_switch","hosts":9,"host_rate":"10Gbps"}"#,
        r#"{"protocol":"tcp","init_cwnd":20}"#,
        r#"{"buffer":"20KB"}"#,
        r#"{}"#,
        r#"{"audit":true}"#,
    );
    // 8-to-1 incast plus crossing flows: plenty of drops.
    let mut flows: Vec<FlowSpec> = (0..8).map(|i| flow(i, 8, 300_000, Time::ZERO)).collect();
    flows.extend((0..7).map(|i| flow(8, i, 100_000, Time::us(50))));
    flows.sort_by_key(|f| f.start);
    let (out, rec) = run_flows(&sc, flows.clone());
    let dropped: u64 = out.counters.drops.iter().map(|d| d.1).sum();
    assert!(dropped > 0, "the scenario must exercise loss recovery");
    assert!(out.audit_errors.is_empty(), "{:?}", out.audit_errors);
    assert_eq!(out.counters.packets_left, 0);
    assert!(!out.counters.cut_at_limit);
    for (i, f) in flows.iter().enumerate() {
        assert_ne!(out.flows.finish_ps[i], u64::MAX, "flow {i} finished");
        // Unique payload received equals the size; what was sent covers it.
        assert_eq!(rec.borrow().unique_bytes(i as u32), f.size.0);
        assert!(out.flows.sent_bytes[i] >= f.size.0);
        assert_eq!(out.flows.sent_bytes[i] - f.size.0, out.flows.retx_bytes[i], "sent = size + retransmitted");
    }
}

/// The same scenario twice gives identical flow tables; another seed gives different ones.
#[test]
fn deterministic_in_the_seed() {
    let mk = |seed: u64| {
        let doc = format!(
            r#"{{"seed":{seed},"topology":{{"kind":"leaf_spine","leaves":4,"hosts_per_leaf":4,"spines":2}},
                "transport":{{"protocol":"dctcp"}},"network":{{"buffer":"60KB"}},
                "workload":[{{"pattern":"poisson","cdf":"websearch","load":0.6,"flows":300}}]}}"#
        );
        dcnsim_core::parse_scenario(&doc, dcnsim_core::Format::Json, std::path::Path::new(".")).unwrap()
    };
    let a = dcnsim_core::run(&mk(1), &mut |_| true);
    let b = dcnsim_core::run(&mk(1), &mut |_| true);
    let c = dcnsim_core::run(&mk(2), &mut |_| true);
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.ports, b.ports);
    assert_ne!(a.flows, c.flows);
}

/// Poisson all-to-all arrivals at load rho on one switch (every host link is a
/// bottleneck): all flows finish, the mean slowdown is finite and grows with rho, and the
/// measured goodput utilization of the host links equals rho within 0.02.
#[test]
fn poisson_load_gives_matching_utilization_and_growing_slowdown() {
    let mut slowdowns = vec![];
    for rho in [0.3, 0.5, 0.7] {
        let doc = format!(
            r#"{{"seed":3,"topology":{{"kind":"single_switch","hosts":8,"host_rate":"10Gbps"}},
                "transport":{{"protocol":"dctcp"}},"network":{{"buffer":"200KB","ecn_k":"30KB"}},
                "workload":[{{"pattern":"poisson","cdf":"webserver","load":{rho},"flows":40000}}]}}"#
        );
        let sc = dcnsim_core::parse_scenario(&doc, dcnsim_core::Format::Json, std::path::Path::new(".")).unwrap();
        let flows = sc.flows();
        let (t_first, t_last) = (flows[0].start, flows.last().unwrap().start);
        let (out, rec) = run_flows(&sc, flows);
        let n = out.flows.id.len();
        let finished = out.flows.finish_ps.iter().filter(|&&f| f != u64::MAX).count();
        assert_eq!(finished, n, "rho={rho}: every flow finishes");
        let sd: f64 =
            (0..n).map(|i| out.flows.fct_ps[i] as f64 / out.flows.ideal_fct_ps[i] as f64).sum::<f64>() / n as f64;
        assert!(sd.is_finite() && sd >= 1.0, "rho={rho}: mean slowdown {sd}");
        slowdowns.push(sd);
        // Goodput over the middle 80% of the arrival period.
        let span = t_last.0 - t_first.0;
        let (t0, t1) = (Time(t_first.0 + span / 10), Time(t_last.0 - span / 10));
        let bytes: u64 = rec.borrow().data.iter().filter(|d| d.0 >= t0 && d.0 < t1).map(|d| d.3 as u64).sum();
        let util = bytes as f64 * 8.0 / (8.0 * 10e9 * (t1 - t0).as_secs_f64());
        eprintln!("poisson rho={rho}: utilization {util:.4}, mean slowdown {sd:.3}");
        assert!((util - rho).abs() <= 0.02, "rho={rho}: measured utilization {util:.4}");
    }
    assert!(slowdowns[0] < slowdowns[1] && slowdowns[1] < slowdowns[2], "slowdown grows with load: {slowdowns:?}");
}

/// Every registered queue policy runs under the generic runner. Selective dropping acts
/// only on unscheduled packets and cross-queue marking only while opportunistic packets
/// wait, so with TCP traffic (neither kind) both must reproduce the default policy's run
/// exactly; trimming, pFabric and credit limiting must still deliver every byte.
#[test]
fn queue_policies_compose_with_the_runner() {
    let run_policy = |policy: &str| {
        let doc = format!(
            r#"{{"seed":4,"topology":{{"kind":"leaf_spine","leaves":2,"hosts_per_leaf":4,"spines":2,"host_rate":"10Gbps","core_rate":"10Gbps"}},
                "transport":{{"protocol":"dctcp"}},
                "network":{{"buffer":"60KB","ecn_k":"20KB","queue_policy":"{policy}","pfabric":{{"buffer":"60KB"}}}},
                "workload":[{{"pattern":"poisson","cdf":"webserver","load":0.6,"flows":600}}],
                "output":{{"audit":true}}}}"#
        );
        let sc = dcnsim_core::parse_scenario(&doc, dcnsim_core::Format::Json, std::path::Path::new("."))
            .unwrap_or_else(|e| panic!("{e}"));
        dcnsim_core::run(&sc, &mut |_| true)
    };
    let base = run_policy("priority_ecn");
    for same in ["selective_drop", "rpo_crossmark"] {
        let out = run_policy(same);
        assert_eq!(out.flows, base.flows, "{same} must equal priority_ecn without unscheduled/opportunistic packets");
    }
    for other in ["ndp_trim", "pfabric", "expresspass_credit"] {
        let out = run_policy(other);
        assert!(out.audit_errors.is_empty(), "{other}: {:?}", out.audit_errors);
        let unfinished = out.flows.finish_ps.iter().filter(|&&f| f == u64::MAX).count();
        assert_eq!(unfinished, 0, "{other}: every flow finishes");
        assert_eq!(out.counters.packets_left, 0, "{other}");
    }
}
