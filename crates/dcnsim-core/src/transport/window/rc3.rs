//! RC3: Recursively Cautious Congestion Control (Mittal, Sherry, Ratnasamy, Shenker,
//! NSDI 2014), as the datacenter baseline of PPT (Suo et al., SIGCOMM 2024, §1, §3, §6,
//! appendix D).
//!
//! # What is modelled
//! - **Primary loop**: DCTCP (default, as PPT §6.1 runs RC3 "for a fair comparison in DCN") or
//!   plain TCP (`hcp = "tcp"`), from the head of the send buffer, in class 0, unchanged.
//! - **Low-priority loop** ([`crate::transport::lowprio`]): at flow start it sends
//!   I = BDP - initial window bytes from the tail of the send buffer backwards at line rate
//!   (not paced), so that the two loops together put a whole BDP on the wire in the first RTT;
//!   afterwards every low-priority ACK releases as many packets as it acknowledges (ACK
//!   clocking: the loop keeps its window, i.e. fills a BDP every RTT). It ignores ECN, never
//!   retransmits, and stops when it meets the primary loop's data ("RC3 keeps the LCP loop
//!   opened until it crosses with HCP loop's traffic", PPT §3). The primary loop skips the
//!   bytes the receiver is known to hold (SACK).
//! - **Recursive low priority (RC3 §3.2, RLP)**: the opportunistic packets are classed by
//!   their distance from the end of the flow: the last `levels[0]` packets in class 1, the
//!   next `levels[1]` in class 2, and so on, the rest one class lower. Default
//!   `levels = [40, 400, 4000]` (classes 1-4, each level ten times the one before it, our
//!   reading of RC3's geometric level sizes). `levels = []` gives the single-level variant
//!   (every opportunistic packet in class 1).
//! - **Send buffer**: RC3's recommended large buffer, default 2 GB (PPT §6.2: "we set the
//!   send buffer to its recommended value -- 2GB"), so the tail is the end of the flow.
//!
//! # Limited low-priority buffer (PPT appendix D)
//! The variant that lets low-priority queues use only a share of the switch buffer is a
//! switch property, which a transport cannot set. The exact model is the scenario's per-class
//! admission limit `network.class_buffer` (see `queue/priority.rs`; `repro/ppt_fig24_rc3_lp_buffer`
//! uses it with `levels = []`, so that every opportunistic packet is in the one limited
//! class). An older transport-side emulation remains available with `lp_buffer_limit =
//! true`: opportunistic packets become ECN-capable, the scenario sets the low-priority classes'
//! marking threshold to the allowed share (see [`lp_limited_ecn_k`]) and the receiver discards
//! every CE-marked opportunistic packet as if the switch had refused it (the sender does not
//! react to ECN, so the loop loses those packets exactly as with a drop). Inexact: a
//! discarded packet still occupied the buffer and the downstream links; a queue policy with a
//! per-class admission limit would model it exactly. The threshold is compared with each
//! class's own queue, so use `levels = []` with this variant.
//!
//! # Configuration (`protocol = "rc3"`)
//! `hcp` ("dctcp" | "tcp", default "dctcp"), `send_buffer` (size, default "2GB"), `levels`
//! (list of packet counts, default [40, 400, 4000]), `lp_buffer_limit` (bool, default false),
//! plus every `tcp`/`dctcp` field (same defaults).
//!
//! # Choices where the papers leave room
//! - The first-RTT low-priority burst is I = BDP - init_cwnd with BDP = path rate x base RTT
//!   of the flow (the same amount PPT's case 1 uses, PPT §3.1), sent back to back.
//! - The LP ACK covers two packets (as PPT's receiver does); RC3's per-packet ACK would
//!   release the same number of packets per RTT with twice the ACK traffic.
//! - A low-priority loop that lost every packet in flight gets no more ACKs and closes after
//!   2 RTTs; it is not reopened.

use crate::packet::{FlowId, Packet};
use crate::transport::lowprio::{DualLoop, DualParams, LpParams, LpStats, OpenPolicy, Release, Tagging};
use crate::transport::tagging::{split_table, ExtConfigError};
use crate::transport::tcp::TcpConfig;
use crate::transport::{Ctx, FlowStats, NetInfo, Transport};
use crate::units::Bytes;
use serde::Deserialize;

/// Errors of the `rc3` table.
pub type Rc3ConfigError = ExtConfigError;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
struct Rc3Own {
    hcp: String,
    send_buffer: Bytes,
    levels: Vec<u64>,
    lp_buffer_limit: bool,
}

impl Default for Rc3Own {
    fn default() -> Self {
        Rc3Own {
            hcp: "dctcp".into(),
            send_buffer: Bytes(2_000_000_000),
            levels: vec![40, 400, 4000],
            lp_buffer_limit: false,
        }
    }
}

/// `[network] ecn_k_per_queue` for the limited-buffer variant: DCTCP's `hcp_k` in class 0,
/// `share x buffer` in every other class.
pub fn lp_limited_ecn_k(hcp_k: Bytes, buffer: Bytes, share: f64, classes: u8) -> Vec<Bytes> {
    let lp = Bytes((buffer.0 as f64 * share).round() as u64);
    (0..classes).map(|c| if c == 0 { hcp_k } else { lp }).collect()
}

/// RC3 for every host of a run.
pub struct Rc3 {
    inner: DualLoop,
}

impl Rc3 {
    pub const FIELDS: &'static [&'static str] = &["hcp", "send_buffer", "levels", "lp_buffer_limit"];

    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Rc3, Rc3ConfigError> {
        let (own, tcp) = split_table(cfg, "rc3", Self::FIELDS)?;
        let own: Rc3Own = crate::config::from_table(&own, "transport")?;
        let dctcp = match own.hcp.as_str() {
            "dctcp" => true,
            "tcp" => false,
            other => {
                return Err(ExtConfigError::OutOfRange {
                    field: "hcp".into(),
                    value: format!("\"{other}\""),
                    fix: "use \"dctcp\" or \"tcp\"".into(),
                })
            }
        };
        if net.priorities < 2 {
            return Err(ExtConfigError::OutOfRange {
                field: "protocol".into(),
                value: "\"rc3\"".into(),
                fix: format!("RC3 needs at least 2 priority classes; network.priorities is {}", net.priorities),
            });
        }
        if own.send_buffer.0 == 0 {
            return Err(ExtConfigError::OutOfRange {
                field: "send_buffer".into(),
                value: "0".into(),
                fix: "give a positive size, e.g. \"2GB\"".into(),
            });
        }
        if let Some(i) = own.levels.iter().position(|&n| n == 0) {
            return Err(ExtConfigError::OutOfRange {
                field: format!("levels[{i}]"),
                value: "0".into(),
                fix: "each level holds at least one packet; remove it instead".into(),
            });
        }
        let tcp = TcpConfig::parse(&tcp)?.resolve(net, dctcp)?;
        let lp = LpParams {
            mss: tcp.mss,
            header: tcp.header,
            ctrl_size: tcp.ctrl_size,
            ect: own.lp_buffer_limit,
            react_ece: false,
            release: Release::Clock,
            pace: false,
            idle_rtts: 2,
            ack_every: 2,
            late_acks: false,
            lp_rtt: false,
        };
        let max_levels = (net.priorities.min(8) as usize).saturating_sub(2);
        let mut levels = own.levels;
        levels.truncate(max_levels);
        let p = DualParams {
            name: "rc3",
            tcp,
            lp,
            lcp: true,
            open: OpenPolicy::AtStart,
            tagging: Tagging::Rc3 { hcp: 0, first_lp: 1, levels },
            send_buffer: own.send_buffer.0,
            identify_above: None,
            discard_ce_lp: own.lp_buffer_limit,
            ack_prio: 0,
        };
        Ok(Rc3 { inner: DualLoop::new(p) })
    }

    /// What RC3 declares for the scenario (the registry's `derive`): its opportunistic
    /// packets use every class below the primary loop's class 0 (`levels` picks which of
    /// them, so reports count them all).
    pub fn derive(net: &NetInfo) -> crate::transport::Derived {
        crate::transport::Derived { lp_classes: (1..net.priorities.clamp(1, 8)).collect(), ..Default::default() }
    }

    /// The engine (per-flow state inspection).
    pub fn engine(&self) -> &DualLoop {
        &self.inner
    }
    pub fn lp_stats(&self, flow: FlowId) -> LpStats {
        self.inner.lp_stats(flow)
    }
}

impl Transport for Rc3 {
    fn name(&self) -> &'static str {
        "rc3"
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.start_flow_impl(ctx, flow)
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.inner.on_packet_impl(ctx, pkt)
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.inner.on_timer_impl(ctx, token)
    }
    fn on_tx_complete(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.inner.on_tx_complete_impl(ctx, pkt)
    }
    fn wants_tx_complete(&self) -> bool {
        self.inner.wants_tx_complete_impl()
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.inner.flow_stats_impl(flow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketFlags;
    use crate::transport::lowprio::{KIND_LP_ACK, KIND_LP_DATA};
    use crate::transport::{Actions, FlowInfo};
    use crate::units::{Rate, Time};
    use serde_json::json;

    fn net() -> NetInfo {
        NetInfo {
            mtu: Bytes(1500),
            header: Bytes(40),
            ctrl_size: Bytes(64),
            num_nodes: 4,
            max_base_rtt: Time::us(40),
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
            base_rtt: Time::us(40),
            path_rate: Rate::gbps(10),
            host_rate: Rate::gbps(10),
            deadline: None,
            background: false,
        }
    }

    fn call(t: &mut Rc3, flows: &[FlowInfo], now: Time, host: u32, f: impl FnOnce(&mut Rc3, &mut Ctx)) -> Actions {
        let mut out = Actions::new();
        f(t, &mut Ctx { now, host, flows, out: &mut out });
        out
    }

    #[test]
    fn first_rtt_fills_the_bdp_from_the_tail_at_line_rate() {
        let mut t = Rc3::from_config(&json!({"levels": [3, 5]}), &net()).unwrap();
        let flows = vec![flow(1_000_000)];
        let a = call(&mut t, &flows, Time::ZERO, 0, |t, c| t.start_flow(c, 0));
        let hcp: Vec<&Packet> = a.sends.iter().filter(|p| p.kind != KIND_LP_DATA).collect();
        let lcp: Vec<&Packet> = a.sends.iter().filter(|p| p.kind == KIND_LP_DATA).collect();
        assert_eq!(hcp.len(), 10);
        assert!(hcp.iter().all(|p| p.prio == 0 && p.seq < 14_600));
        // BDP = 10 Gbps x 40 us = 50 KB; minus the 14.6 KB initial window = 35.4 KB = 24 packets.
        assert_eq!(lcp.len(), 24);
        assert!(lcp.iter().all(|p| p.flags.has(PacketFlags::OPPORTUNISTIC) && p.flags.has(PacketFlags::DATA)));
        assert_eq!(lcp[0].seq + lcp[0].payload as u64, 1_000_000, "starts at the tail");
        assert!(lcp.windows(2).all(|w| w[1].seq + w[1].payload as u64 == w[0].seq), "backwards, contiguous");
        // Recursive levels: 3 packets in class 1, 5 in class 2, the rest in class 3.
        let prios: Vec<u8> = lcp.iter().map(|p| p.prio).collect();
        assert_eq!(&prios[..9], &[1, 1, 1, 2, 2, 2, 2, 2, 3]);
        assert!(a.timers.iter().all(|&(at, _)| at > Time::ZERO), "nothing is paced: all sent now");
    }

    #[test]
    fn lp_ack_clocks_one_packet_per_packet_acked_and_ignores_ecn() {
        let mut t = Rc3::from_config(&json!({"levels": []}), &net()).unwrap();
        let flows = vec![flow(1_000_000)];
        let a = call(&mut t, &flows, Time::ZERO, 0, |t, c| t.start_flow(c, 0));
        let lcp: Vec<Packet> = a.sends.iter().copied().filter(|p| p.kind == KIND_LP_DATA).collect();
        assert!(lcp.iter().all(|p| p.prio == 1));
        // Deliver two (one CE-marked) to the receiver: one LP ACK.
        let mut acks = Vec::new();
        for (i, p) in lcp[..2].iter().enumerate() {
            let mut q = *p;
            if i == 1 {
                q.ecn = crate::packet::Ecn::Ce;
            }
            let r = call(&mut t, &flows, Time::us(20), 1, |t, c| t.on_packet(c, &q));
            acks.extend(r.sends.into_iter().filter(|p| p.kind == KIND_LP_ACK));
        }
        assert_eq!(acks.len(), 1);
        let r = call(&mut t, &flows, Time::us(40), 0, |t, c| t.on_packet(c, &acks[0]));
        let sent: Vec<&Packet> = r.sends.iter().filter(|p| p.kind == KIND_LP_DATA).collect();
        assert_eq!(sent.len(), 2, "constant window: two packets acked, two released, ECE ignored");
    }

    #[test]
    fn limited_lp_buffer_discards_ce_marked_opportunistic_packets() {
        let mut t = Rc3::from_config(&json!({"lp_buffer_limit": true, "levels": []}), &net()).unwrap();
        let flows = vec![flow(1_000_000)];
        let a = call(&mut t, &flows, Time::ZERO, 0, |t, c| t.start_flow(c, 0));
        let mut lcp: Vec<Packet> = a.sends.iter().copied().filter(|p| p.kind == KIND_LP_DATA).collect();
        assert!(lcp.iter().all(|p| p.ecn == crate::packet::Ecn::Ect));
        lcp[0].ecn = crate::packet::Ecn::Ce;
        let r0 = call(&mut t, &flows, Time::us(20), 1, |t, c| t.on_packet(c, &lcp[0]));
        assert!(r0.sends.is_empty());
        let r1 = call(&mut t, &flows, Time::us(20), 1, |t, c| t.on_packet(c, &lcp[1]));
        assert!(r1.sends.is_empty(), "the discarded packet does not count toward the LP ACK");
        assert_eq!(t.engine().receiver(0).unwrap().out_of_order().len(), 1);
        assert_eq!(lp_limited_ecn_k(Bytes(96_000), Bytes(120_000), 0.2, 8)[1], Bytes(24_000));
    }

    #[test]
    fn config_errors_name_the_field() {
        assert_eq!(Rc3::from_config(&json!({"hcp": "bbr"}), &net()).err().unwrap().field(), "transport.hcp");
        assert_eq!(Rc3::from_config(&json!({"levels": [1, 0]}), &net()).err().unwrap().field(), "transport.levels[1]");
        assert_eq!(
            Rc3::from_config(&json!({"send_buffer": 0}), &net()).err().unwrap().field(),
            "transport.send_buffer"
        );
        assert_eq!(Rc3::from_config(&json!({"g": 2.0}), &net()).err().unwrap().field(), "transport.g");
        assert!(Rc3::from_config(&json!({"hcp": "tcp", "send_buffer": "128KB"}), &net()).is_ok());
    }
}
