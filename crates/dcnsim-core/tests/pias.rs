//! PIAS's and PPT's default demotion thresholds at the scenario level: which set a workload
//! gets, that the normalized scenario shows it, and the threshold model on the shipped
//! web-search CDF against the PIAS authors' set and quantile thresholds.

use dcnsim_core::transport::pias::{self, DefaultSource, WEBSEARCH_THRESHOLDS_PKTS};
use dcnsim_core::transport::pias_thresholds::{mean_fct, optimal_thresholds};
use dcnsim_core::workload::{builtin, Reading};
use dcnsim_core::{parse_scenario, Format, Scenario};
use serde_json::Value;
use std::path::Path;

const TOPO: &str = r#"{"kind":"leaf_spine","leaves":2,"hosts_per_leaf":4,"spines":2,"host_rate":"10Gbps","core_rate":"40Gbps","host_delay":"2us","core_delay":"2us"}"#;

fn scenario(transport: &str, workload: &str) -> Scenario {
    let doc = format!(r#"{{"seed":1,"topology":{TOPO},"transport":{transport},"workload":{workload}}}"#);
    parse_scenario(&doc, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

/// The `[transport] thresholds` of the normalized scenario (scenario.json), in bytes.
fn shown(sc: &Scenario) -> Vec<u64> {
    let v: Value = serde_json::from_str(&sc.to_json()).unwrap();
    v["transport"]["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| dcnsim_core::units::Bytes::parse(x.as_str().unwrap()).unwrap().0)
        .collect()
}

fn packets(t: &[u64]) -> Vec<u64> {
    t.iter().map(|b| b / 1460).collect()
}

fn poisson(cdf: &str, load: f64) -> String {
    format!(r#"{{"pattern":"poisson","cdf":"{cdf}","load":{load},"flows":100}}"#)
}

#[test]
fn web_search_gets_the_published_set_and_it_is_written_out() {
    for (proto, n) in [("pias", 7), ("ppt", 3), ("ppt_swift", 3)] {
        for load in [0.3, 0.5, 0.8] {
            let sc = scenario(&format!(r#"{{"protocol":"{proto}"}}"#), &poisson("websearch", load));
            assert_eq!(packets(&shown(&sc)), WEBSEARCH_THRESHOLDS_PKTS[..n], "{proto} at {load}");
        }
    }
    // Incast rounds of web-search flows (no Poisson load): still web search.
    let incast =
        r#"{"pattern":"incast","receiver":0,"senders":4,"rounds":3,"round_interval":"1ms","cdf":"websearch_pias"}"#;
    assert_eq!(packets(&shown(&scenario(r#"{"protocol":"pias"}"#, incast))), WEBSEARCH_THRESHOLDS_PKTS);
}

#[test]
fn data_mining_gets_the_published_set_of_its_load() {
    let sc = scenario(r#"{"protocol":"pias"}"#, &poisson("datamining", 0.5));
    assert_eq!(packets(&shown(&sc)), [805, 1106, 1401, 10693, 11970, 21162, 22272]);
    let sc = scenario(r#"{"protocol":"pias"}"#, &poisson("datamining", 0.8));
    assert_eq!(packets(&shown(&sc)), [745, 1083, 1391, 13689, 14936, 21149, 27245]);
    let sc = scenario(r#"{"protocol":"ppt"}"#, &poisson("vl2", 0.5));
    assert_eq!(packets(&shown(&sc)), [805, 1106, 1401]);
    // At a load the authors did not publish: the model, at that load.
    let sc = scenario(r#"{"protocol":"pias"}"#, &poisson("datamining", 0.4));
    let cdf = sc.net_info.size_cdf.clone().unwrap();
    assert_eq!(shown(&sc), optimal_thresholds(&cdf, 0.4, 8, 1460));
    assert_eq!(pias::default_thresholds_with_source(&sc.net_info).1, DefaultSource::Model { load: 0.4 });
}

#[test]
fn other_workloads_get_the_model_written_out_and_explicit_thresholds_win() {
    for cdf in ["memcached_w1", "hadoop", "websearch_w5"] {
        let sc = scenario(r#"{"protocol":"pias"}"#, &poisson(cdf, 0.6));
        let size_cdf = sc.net_info.size_cdf.clone().unwrap();
        let model = optimal_thresholds(&size_cdf, 0.6, 8, 1460);
        assert_eq!(shown(&sc), model, "{cdf}");
        assert_ne!(packets(&model), WEBSEARCH_THRESHOLDS_PKTS, "{cdf}");
        let sc = scenario(r#"{"protocol":"ppt"}"#, &poisson(cdf, 0.6));
        assert_eq!(shown(&sc), model[..3], "{cdf}");
    }
    // Explicit thresholds win, and the normalized scenario keeps them.
    let sc = scenario(r#"{"protocol":"pias","thresholds":["3000B","9000B"]}"#, &poisson("datamining", 0.5));
    assert_eq!(shown(&sc), [3000, 9000]);
    let sc = scenario(r#"{"protocol":"ppt","thresholds":["5000B"]}"#, &poisson("hadoop", 0.5));
    assert_eq!(shown(&sc), [5000]);
    // The normalized scenario parses back to the same thresholds.
    let sc = scenario(r#"{"protocol":"pias"}"#, &poisson("hadoop", 0.6));
    let again = dcnsim_core::scenario::from_value(&serde_json::from_str(&sc.to_json()).unwrap(), Path::new("."))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shown(&again), shown(&sc));
    // Fewer classes: the model for that many classes, also for web search.
    let doc = format!(
        r#"{{"topology":{TOPO},"network":{{"priorities":4}},"transport":{{"protocol":"pias"}},"workload":{}}}"#,
        poisson("websearch", 0.5)
    );
    let sc = parse_scenario(&doc, Format::Json, Path::new(".")).unwrap();
    assert_eq!(shown(&sc), optimal_thresholds(sc.net_info.size_cdf.as_ref().unwrap(), 0.5, 4, 1460));
}

/// The model on the web-search CDF: its thresholds are no worse under the model than the PIAS
/// authors' set and than thresholds at evenly spaced quantiles of the flow count.
#[test]
fn model_thresholds_beat_the_published_and_quantile_sets_under_the_model() {
    let cdf = builtin::find("websearch").unwrap().load(Reading::Linear).unwrap().step_points();
    let published: Vec<u64> = WEBSEARCH_THRESHOLDS_PKTS.iter().map(|p| p * 1460).collect();
    // The size at each l/8 quantile of the flow count, rounded up to whole packets.
    let mut quantiles: Vec<u64> = (1..8)
        .map(|l| {
            let s = cdf.iter().find(|p| p.1 >= l as f64 / 8.0).unwrap().0;
            s.div_ceil(1460) * 1460
        })
        .collect();
    quantiles.dedup();
    assert_eq!(quantiles.len(), 7, "{quantiles:?}");
    for rho in [0.3, 0.5, 0.8] {
        let t = optimal_thresholds(&cdf, rho, 8, 1460);
        let (m, p, q) = (
            mean_fct(&cdf, rho, &t).unwrap(),
            mean_fct(&cdf, rho, &published).unwrap(),
            mean_fct(&cdf, rho, &quantiles).unwrap(),
        );
        let fcfs = mean_fct(&cdf, rho, &[]).unwrap();
        eprintln!("rho {rho}: model {:?} pkts {m:.0}, published {p:.0}, quantiles {q:.0}, FCFS {fcfs:.0}", packets(&t));
        assert!(m <= p && m <= q && m < fcfs, "rho {rho}: {m} vs published {p}, quantiles {q}");
    }
}
