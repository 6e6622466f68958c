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
//! Not modelled: the threshold optimisation itself (PIAS §3.2 derives thresholds from the
//! flow-size distribution and load by a queueing model); thresholds are an input.
//!
//! # Configuration (`protocol = "pias"`)
//! - `thresholds`: list of byte sizes, K-1 entries for K classes (K <= network.priorities).
//!   Default: the eight-queue web-search thresholds of the PIAS authors' public ns-2
//!   scripts (HKUST-SING/PIAS-NS2, `scripts/run_pias_dctcp.py`): 46, 1084, 1717, 1943, 1989,
//!   1999 and 2001 packets of 1460 B, i.e. 67,160 B, 1,582,640 B, 2,506,820 B, 2,836,780 B,
//!   2,903,940 B, 2,918,540 B and 2,921,460 B. Those were computed by the paper's method for
//!   the web-search distribution; other workloads should set their own.
//! - every `dctcp` field (`init_cwnd`, `min_rto`, `g`, ...) with the same defaults.
//!
//! # Choices where the paper leaves room
//! - The network side of PIAS (the paper's ECN marking per port, RED thresholds) is a
//!   `[network]` setting: PIAS scenarios should set `ecn_per_port = true` and the DCTCP `ecn_k`,
//!   as the PIAS ns-2 scripts do ("per-port ECN marking").
//! - Bytes sent include retransmissions (the kernel module counts what leaves the host).

use crate::packet::{FlowId, Packet};
use crate::transport::tagging::{check_thresholds, split_table, ExtConfigError, Mlfq};
use crate::transport::tcp::{PriorityPolicy, Tcp, TcpConfig};
use crate::transport::{Ctx, FlowInfo, FlowStats, NetInfo, Transport};
use crate::units::Bytes;
use serde::Deserialize;

/// Errors of the `pias` table.
pub type PiasConfigError = ExtConfigError;

/// PIAS's default thresholds in packets of 1460 B (web search, 8 classes).
pub const WEBSEARCH_THRESHOLDS_PKTS: [u64; 7] = [46, 1084, 1717, 1943, 1989, 1999, 2001];

/// The default thresholds in bytes.
pub fn default_thresholds() -> Vec<u64> {
    WEBSEARCH_THRESHOLDS_PKTS.iter().map(|p| p * 1460).collect()
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
struct PiasOwn {
    thresholds: Vec<Bytes>,
}

impl Default for PiasOwn {
    fn default() -> Self {
        PiasOwn { thresholds: default_thresholds().into_iter().map(Bytes).collect() }
    }
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
        let t: Vec<u64> = own.thresholds.iter().map(|b| b.0).collect();
        let classes = net.priorities.clamp(1, 8) as usize;
        check_thresholds("thresholds", &t, classes - 1)?;
        let params = TcpConfig::parse(&tcp)?.resolve(net, true)?;
        let inner = Tcp::new(params).with_priority_policy(Box::new(PiasPolicy { mlfq: Mlfq::new(t.clone()) }));
        Ok(Pias { inner, thresholds: t })
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
        let mut p = Pias::from_config(&json!({"thresholds": [2920, 5840, "8760B"]}), &net()).unwrap();
        let data = run(&mut p, 20 * 1460);
        let prios: Vec<u8> = data.iter().map(|d| d.prio).collect();
        // 2 packets (2920 B) in class 0, 2 in class 1, 2 in class 2, the rest in class 3.
        let mut want = vec![0, 0, 1, 1, 2, 2];
        want.extend(std::iter::repeat_n(3, 14));
        assert_eq!(prios, want);
        assert!(p.tcp().receiver_complete(0));
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
        let e = Pias::from_config(&json!({"thresholds": [10, 5]}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.thresholds[1]");
        let e = Pias::from_config(&json!({"thresholds": [1, 2, 3, 4, 5, 6, 7, 8]}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.thresholds");
        let e = Pias::from_config(&json!({"min_rto": 0}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.min_rto");
        let e = Pias::from_config(&json!({"nope": 0}), &net()).err().unwrap();
        assert_eq!(e.field(), "transport.nope");
    }
}
