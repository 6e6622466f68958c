//! PIAS: information-agnostic flow scheduling over DCTCP (Bai et al., "Information-Agnostic
//! Flow Scheduling for Commodity Data Centers", NSDI 2015).
//!
//! # What is modelled
//! - **Rate control** is DCTCP, unchanged: the `dctcp` sender and receiver of
//!   [`crate::transport::tcp`] (every TCP/DCTCP field of the `[transport]` table applies).
//! - **Packet tagging** (PIAS §3.1, §4.1): a multi-level feedback queue ([`Mlfq`]). Every flow
//!   starts in class 0 and is demoted to class i+1 once the payload bytes it has already sent
//!   reach `thresholds[i]`; it never reads the flow size. The switches serve the classes in
//!   strict priority (the default `priority_ecn` queue policy).
//! - **ACKs** go in the highest class (0), so the reverse path never delays the feedback.
//!
//! - **Demotion thresholds suited to the workload** (PIAS §3.2): when the scenario leaves
//!   `thresholds` out, they are the PIAS authors' published sets for the two workloads they
//!   published them for, and otherwise those of our model of §3.2
//!   ([`crate::transport::pias_thresholds`]) for the scenario's flow-size distribution and
//!   load (see "Default thresholds").
//!
//! # Configuration (`protocol = "pias"`)
//! - `thresholds`: list of byte sizes, K-1 entries for K classes (K <= network.priorities).
//!   Explicit thresholds always win. Default: see below.
//! - every `dctcp` field (`init_cwnd`, `min_rto`, `g`, ...) with the same defaults.
//!
//! # Default thresholds
//! K = `network.priorities` classes (8 by default). The load is the workload's Poisson load
//! (`WorkloadFacts::load`: the summed `load` of its `poisson` and `left_right` components),
//! or [`DEFAULT_LOAD`] = 0.5 when it has none (incast rounds, permutations, flow lists): the
//! model needs Poisson flow arrivals, and 0.5 is the middle of the loads the PIAS paper
//! evaluates and the load of the PPT paper's comparison with PIAS.
//! 1. **Web search** (every sized component draws from the shipped `websearch` or
//!    `websearch_pias` CDF, any `cdf_reading`), K = 8: the authors' web-search set
//!    (HKUST-SING/PIAS-NS2, `scripts/run_pias_dctcp.py`, used there for every load 0.1-0.9):
//!    46, 1084, 1717, 1943, 1989, 1999 and 2001 packets of 1460 B, i.e. 67,160 B,
//!    1,582,640 B, 2,506,820 B, 2,836,780 B, 2,903,940 B, 2,918,540 B and 2,921,460 B
//!    ([`WEBSEARCH_THRESHOLDS_PKTS`]).
//! 2. **Data mining** (`datamining` or `datamining_xpass`), K = 8, at a load the authors
//!    published a set for
//!    (`scripts/run_pias_vl2.py`: 0.5, 0.6, 0.7, 0.8, 0.9): that set
//!    ([`DATAMINING_THRESHOLDS_PKTS`]); at load 0.5, 805, 1106, 1401, 10693, 11970, 21162
//!    and 22272 packets of 1460 B (1,175,300 B to 32,517,120 B).
//! 3. **Anything else** (other shipped CDFs, user CDFs, uniform or fixed sizes, mixes, data
//!    mining at another load, web search or data mining with K != 8): the thresholds of
//!    [`pias_thresholds::optimal_thresholds`] for `NetInfo::size_cdf`, the load above and K
//!    classes, on whole packets of the scenario's payload (`mtu - header`, 1460 B by
//!    default). Examples (Homa's W1 = `memcached_w1` and others) are in docs/scenario.md.
//! 4. No sized flows at all (background flows only): the web-search set, its first K-1
//!    entries.
//!
//! Which shipped files count as the two workloads: those whose mean is within 3% of the
//! file the authors used (`websearch_pias` and `datamining` are the PIAS authors' own ns-2
//! files; `websearch`, HPCC's byte file, mean 1.711 vs 1.666 MB; `datamining_xpass`, 7.488 vs
//! 7.470 MB). Homa's W5 (`websearch_w5`, a 400-point rescaling of web search with mean
//! 2.516 MB) gets the model.
//!
//! Why the published sets for those two workloads rather than the model: they are what the
//! PIAS authors ran, so PIAS results on them stay comparable with theirs (and web-search
//! results with this simulator's earlier ones, which used the web-search set everywhere).
//! They were computed for 8 queues, so with another K the model is used. The data-mining
//! sets are keyed by the exact load (within 1e-9); between published loads the model is used
//! rather than a neighbour's set.
//!
//! # Choices where the paper leaves room
//! - The network side of PIAS (the paper's ECN marking per port, RED thresholds) is a
//!   `[network]` setting: PIAS scenarios should set `ecn_per_port = true` and the DCTCP `ecn_k`,
//!   as the PIAS ns-2 scripts do ("per-port ECN marking").
//! - Bytes sent include retransmissions (the kernel module counts what leaves the host).

use crate::packet::{FlowId, Packet};
use crate::transport::pias_thresholds;
use crate::transport::tagging::{check_thresholds, split_table, ExtConfigError, Mlfq};
use crate::transport::tcp::{PriorityPolicy, Tcp, TcpConfig};
use crate::transport::Derived;
use crate::transport::{Ctx, FlowInfo, FlowStats, NetInfo, Transport};
use crate::units::Bytes;
use serde::Deserialize;

/// Errors of the `pias` table.
pub type PiasConfigError = ExtConfigError;

/// Payload bytes per packet of the PIAS authors' published thresholds.
pub const PUBLISHED_PACKET_BYTES: u64 = 1460;

/// PIAS's web-search thresholds in packets of 1460 B (8 classes; every load 0.1-0.9).
pub const WEBSEARCH_THRESHOLDS_PKTS: [u64; 7] = [46, 1084, 1717, 1943, 1989, 1999, 2001];

/// PIAS's data-mining thresholds in packets of 1460 B (8 classes), per published load.
pub const DATAMINING_THRESHOLDS_PKTS: [(f64, [u64; 7]); 5] = [
    (0.5, [805, 1106, 1401, 10693, 11970, 21162, 22272]),
    (0.6, [840, 1232, 1617, 11950, 12238, 21494, 25720]),
    (0.7, [907, 1301, 1619, 12166, 12915, 21313, 26374]),
    (0.8, [745, 1083, 1391, 13689, 14936, 21149, 27245]),
    (0.9, [750, 1083, 1416, 13705, 14952, 21125, 28253]),
];

/// Shipped CDFs of the web-search distribution (the published web-search set applies).
pub const WEBSEARCH_CDFS: &[&str] = &["websearch", "websearch_pias"];
/// Shipped CDFs of the VL2 data-mining distribution (the published data-mining sets apply).
pub const DATAMINING_CDFS: &[&str] = &["datamining", "datamining_xpass"];

/// The load assumed for a workload without Poisson flow arrivals.
pub const DEFAULT_LOAD: f64 = 0.5;

/// The web-search set in bytes.
pub fn websearch_thresholds() -> Vec<u64> {
    WEBSEARCH_THRESHOLDS_PKTS.iter().map(|p| p * PUBLISHED_PACKET_BYTES).collect()
}

/// The published data-mining set in bytes for `load`, if there is one (exact match within
/// 1e-9).
pub fn datamining_thresholds(load: f64) -> Option<Vec<u64>> {
    DATAMINING_THRESHOLDS_PKTS
        .iter()
        .find(|(l, _)| (l - load).abs() < 1e-9)
        .map(|(_, t)| t.iter().map(|p| p * PUBLISHED_PACKET_BYTES).collect())
}

/// Where the default thresholds of a scenario come from (module doc, "Default thresholds").
#[derive(Clone, Debug, PartialEq)]
pub enum DefaultSource {
    /// The PIAS authors' web-search set.
    WebSearch,
    /// The PIAS authors' data-mining set for this load.
    DataMining { load: f64 },
    /// Our model of PIAS §3.2 at this load (as given to the optimiser, before clamping).
    Model { load: f64 },
    /// No flow-size distribution: the web-search set.
    NoSizes,
}

/// The default demotion thresholds (bytes; `network.priorities - 1` of them) for the
/// scenario's workload, and where they come from.
pub fn default_thresholds_with_source(net: &NetInfo) -> (Vec<u64>, DefaultSource) {
    let classes = net.priorities.clamp(1, 8) as usize;
    let facts = net.workload.as_ref();
    let shipped = facts.and_then(|w| w.shipped_cdf);
    let load = facts.and_then(|w| w.load).unwrap_or(DEFAULT_LOAD);
    if classes == 8 {
        if shipped.is_some_and(|n| WEBSEARCH_CDFS.contains(&n)) {
            return (websearch_thresholds(), DefaultSource::WebSearch);
        }
        if shipped.is_some_and(|n| DATAMINING_CDFS.contains(&n)) {
            if let Some(t) = datamining_thresholds(load) {
                return (t, DefaultSource::DataMining { load });
            }
        }
    }
    match net.size_cdf.as_deref().filter(|c| !c.is_empty()) {
        Some(cdf) => {
            (pias_thresholds::optimal_thresholds(cdf, load, classes, net.mss()), DefaultSource::Model { load })
        }
        None => (websearch_thresholds().into_iter().take(classes - 1).collect(), DefaultSource::NoSizes),
    }
}

/// The default demotion thresholds for the scenario's workload (PPT takes its first ones).
pub fn default_thresholds(net: &NetInfo) -> Vec<u64> {
    default_thresholds_with_source(net).0
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
struct PiasOwn {
    /// `None`: the workload's default ([`default_thresholds`]).
    thresholds: Option<Vec<Bytes>>,
}

/// The PIAS tagger as a [`PriorityPolicy`] for the embedded DCTCP.
#[derive(Clone, Debug)]
pub struct PiasPolicy {
    pub mlfq: Mlfq,
}

impl PriorityPolicy for PiasPolicy {
    #[inline]
    fn prio(&self, _flow: &FlowInfo, bytes_sent_before: u64, _seq: u64) -> u8 {
        self.mlfq.class(bytes_sent_before)
    }
    #[inline]
    fn ack_prio(&self, _flow: &FlowInfo, _data_prio: u8) -> u8 {
        0
    }
}

/// PIAS for every host of a run: DCTCP with the MLFQ tagger.
pub struct Pias {
    inner: Tcp,
    thresholds: Vec<u64>,
}

impl Pias {
    pub const FIELDS: &'static [&'static str] = &["thresholds"];

    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Pias, PiasConfigError> {
        let (own, tcp) = split_table(cfg, "pias", Self::FIELDS)?;
        let own: PiasOwn = crate::config::from_table(&own, "transport")?;
        let t: Vec<u64> = match &own.thresholds {
            Some(t) => t.iter().map(|b| b.0).collect(),
            None => default_thresholds(net),
        };
        let classes = net.priorities.clamp(1, 8) as usize;
        check_thresholds("thresholds", &t, classes - 1)?;
        let params = TcpConfig::parse(&tcp)?.resolve(net, true)?;
        let inner = Tcp::new(params).with_priority_policy(Box::new(PiasPolicy { mlfq: Mlfq::new(t.clone()) }));
        Ok(Pias { inner, thresholds: t })
    }

    /// The `[transport]` fields PIAS fills in where the scenario is silent (the registry's
    /// `derive`): `thresholds`, the workload's default ([`default_thresholds`]), so the
    /// normalized scenario shows the thresholds used. Nothing when the table gives them.
    pub fn derive(cfg: &serde_json::Value, net: &NetInfo) -> Result<Derived, PiasConfigError> {
        let (own, _) = split_table(cfg, "pias", Self::FIELDS)?;
        let mut d = Derived::default();
        if own.get("thresholds").is_none() {
            d.transport.insert(
                "thresholds".into(),
                serde_json::json!(default_thresholds(net).into_iter().map(Bytes).collect::<Vec<_>>()),
            );
        }
        Ok(d)
    }

    pub fn thresholds(&self) -> &[u64] {
        &self.thresholds
    }
    /// The embedded DCTCP (sender/receiver inspection in tests).
    pub fn tcp(&self) -> &Tcp {
        &self.inner
    }
}

impl Transport for Pias {
    fn name(&self) -> &'static str {
        "pias"
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.start_flow(ctx, flow)
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.inner.on_packet(ctx, pkt)
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.inner.on_timer(ctx, token)
    }
    fn on_tx_complete(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.inner.on_tx_complete(ctx, pkt)
    }
    fn wants_tx_complete(&self) -> bool {
        self.inner.wants_tx_complete()
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.inner.flow_stats(flow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Actions;
    use crate::units::{Rate, Time};
    use serde_json::json;

    fn net() -> NetInfo {
        NetInfo {
            mtu: Bytes(1500),
            header: Bytes(40),
            ctrl_size: Bytes(64),
            num_nodes: 4,
            max_base_rtt: Time::us(10),
            max_host_rate: Rate::gbps(10),
            priorities: 8,
            size_cdf: None,
            workload: None,
            host: crate::host::HostSpec { tsq: false, ..crate::host::HostSpec::default() },
        }
    }

    fn flow(size: u64) -> FlowInfo {
        FlowInfo {
            id: 0,
            src: 0,
            dst: 1,
            size: Bytes(size),
            start: Time::ZERO,
            base_rtt: Time::us(10),
            path_rate: Rate::gbps(10),
            host_rate: Rate::gbps(10),
            deadline: None,
            background: false,
        }
    }

    /// Drive a flow to completion by delivering every packet without loss; return the data
    /// packets in send order.
    fn run(p: &mut Pias, size: u64) -> Vec<Packet> {
        let flows = vec![flow(size)];
        let mut data = Vec::new();
        let mut out = Actions::new();
        let mut now = Time::ZERO;
        p.start_flow(&mut Ctx { now, host: 0, flows: &flows, out: &mut out }, 0);
        let mut wire: Vec<Packet> = out.sends.drain(..).collect();
        while !wire.is_empty() {
            now += Time::us(1);
            let mut next = Vec::new();
            for pkt in wire {
                if pkt.is_data() {
                    data.push(pkt);
                }
                let mut o = Actions::new();
                p.on_packet(&mut Ctx { now, host: pkt.dst, flows: &flows, out: &mut o }, &pkt);
                next.extend(o.sends);
            }
            wire = next;
        }
        data
    }

    #[test]
    fn demotes_exactly_at_the_thresholds_and_acks_ride_class_0() {
        let mut p = Pias::from_config(&json!({"thresholds": ["2920B", "5840B", "8760B"]}), &net()).unwrap();
        let data = run(&mut p, 20 * 1460);
        let prios: Vec<u8> = data.iter().map(|d| d.prio).collect();
        // 2 packets (2920 B) in class 0, 2 in class 1, 2 in class 2, the rest in class 3.
        let mut want = vec![0, 0, 1, 1, 2, 2];
        want.extend(std::iter::repeat_n(3, 14));
        assert_eq!(prios, want);
        assert!(p.tcp().receiver_complete(0));
    }

    fn net_with(
        priorities: u8,
        cdf: Option<Vec<(u64, f64)>>,
        shipped: Option<&'static str>,
        load: Option<f64>,
    ) -> NetInfo {
        let mut n = net();
        n.priorities = priorities;
        n.size_cdf = cdf;
        n.workload = Some(crate::transport::WorkloadFacts { shipped_cdf: shipped, load });
        n
    }

    #[test]
    fn default_thresholds_follow_the_workload() {
        let pk = |t: &[u64]| t.iter().map(|b| b / 1460).collect::<Vec<_>>();
        let cdf = Some(vec![(1460, 0.6), (14_600, 0.9), (1_460_000, 1.0)]);
        // Web search, 8 classes: the published set whatever the load.
        for load in [None, Some(0.2), Some(0.5), Some(0.9)] {
            let (t, src) = default_thresholds_with_source(&net_with(8, cdf.clone(), Some("websearch_pias"), load));
            assert_eq!((pk(&t), src), (WEBSEARCH_THRESHOLDS_PKTS.to_vec(), DefaultSource::WebSearch));
        }
        // Data mining at a published load: that load's set; no load stated means 0.5.
        let (t, src) = default_thresholds_with_source(&net_with(8, cdf.clone(), Some("datamining"), Some(0.7)));
        assert_eq!(
            (pk(&t), src),
            (vec![907, 1301, 1619, 12166, 12915, 21313, 26374], DefaultSource::DataMining { load: 0.7 })
        );
        let (t, src) = default_thresholds_with_source(&net_with(8, cdf.clone(), Some("datamining_xpass"), None));
        assert_eq!(
            (pk(&t), src),
            (vec![805, 1106, 1401, 10693, 11970, 21162, 22272], DefaultSource::DataMining { load: 0.5 })
        );
        // Data mining at another load, another CDF, or fewer classes: the model.
        let model = |k: usize, load: f64| pias_thresholds::optimal_thresholds(cdf.as_deref().unwrap(), load, k, 1460);
        for (n, k, load) in [
            (net_with(8, cdf.clone(), Some("datamining"), Some(0.55)), 8, 0.55),
            (net_with(8, cdf.clone(), Some("hadoop"), Some(0.3)), 8, 0.3),
            (net_with(8, cdf.clone(), None, None), 8, 0.5),
            (net_with(4, cdf.clone(), Some("websearch"), Some(0.5)), 4, 0.5),
        ] {
            let (t, src) = default_thresholds_with_source(&n);
            assert_eq!((t, src), (model(k, load), DefaultSource::Model { load }));
        }
        // No sized flows: the web-search set, as many as the classes take.
        let (t, src) = default_thresholds_with_source(&net_with(3, None, None, Some(0.5)));
        assert_eq!((pk(&t), src), (vec![46, 1084], DefaultSource::NoSizes));
        // The model's set is what PIAS uses; explicit thresholds win.
        let n = net_with(8, cdf.clone(), Some("hadoop"), Some(0.3));
        assert_eq!(Pias::from_config(&serde_json::Value::Null, &n).unwrap().thresholds(), model(8, 0.3));
        let p = Pias::from_config(&json!({"thresholds": ["1000B", "2000B"]}), &n).unwrap();
        assert_eq!(p.thresholds(), [1000, 2000]);
    }

    #[test]
    fn default_thresholds_are_the_pias_websearch_ones() {
        let p = Pias::from_config(&serde_json::Value::Null, &net()).unwrap();
        assert_eq!(p.thresholds()[0], 67_160);
        assert_eq!(p.thresholds().len(), 7);
        let pol = PiasPolicy { mlfq: Mlfq::new(p.thresholds().to_vec()) };
        let f = flow(10_000_000);
        assert_eq!(pol.prio(&f, 67_159, 0), 0);
        assert_eq!(pol.prio(&f, 67_160, 0), 1);
        assert_eq!(pol.prio(&f, 2_921_460, 0), 7);
        assert_eq!(pol.ack_prio(&f, 5), 0);
    }

    #[test]
    fn config_errors_name_the_field() {
        let e = Pias::from_config(&json!({"thresholds": ["10B", "5B"]}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.thresholds[1]");
        let e = Pias::from_config(&json!({"thresholds": ["1B", "2B", "3B", "4B", "5B", "6B", "7B", "8B"]}), &net())
            .err()
            .unwrap();
        assert_eq!(e.field(), "transport.thresholds");
        let e = Pias::from_config(&json!({"min_rto": 0}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.min_rto");
        let e = Pias::from_config(&json!({"nope": 0}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.nope");
    }
}
