//! A run that cannot make progress ends with a typed error, never by exhausting memory; and
//! the case that once did (NDP's pull loop gaining tokens from duplicate copies) finishes.
//!
//! - NDP under data mining on a 40G leaf-spine of drop-tail switches: before the fix, each
//!   timeout resend whose original also arrived was pulled for twice, the pull loops gained
//!   tokens, the senders' NICs (which never drop) grew without bound and the run used
//!   gigabytes. The test asserts every flow finishes and the packets alive at once stay below
//!   a ceiling derived from the network (stated at [`ceiling`]).
//! - The runner's guard (`run.max_live_packets`): a transport whose every arrival sends two
//!   packets multiplies its packets without end; the run must stop with
//!   [`RunError::TooManyLivePackets`] naming the field.

mod common;

use common::*;
use dcnsim_core::packet::{FlowId, Packet, PacketFlags};
use dcnsim_core::scenario::Scenario;
use dcnsim_core::sim::Sim;
use dcnsim_core::transport::ndp::bdp_window;
use dcnsim_core::transport::{Ctx, Transport};
use dcnsim_core::units::Time;
use dcnsim_core::{parse_scenario, Format, RunError};
use std::path::Path;

/// The issue's network (4 leaves x 10 hosts, 2 spines, 40G links of 3 us, 384 KB drop-tail
/// buffers, the default `priority_ecn` policy and 1500 B MTU, so nothing trims) and NDP with
/// its defaults, under data mining; reduced from 1,200 flows at load 0.6 to 600 at load 0.8
/// (the smallest of the variants tried whose unfixed run still exploded: 3.6 million packets
/// alive at 80 ms of simulated time).
fn ndp_datamining(max_live: u64) -> Scenario {
    let text = format!(
        r#"
name = "ndp-dm-reduced"
seed = 11
[topology]
kind = "leaf_spine"
leaves = 4
hosts_per_leaf = 10
spines = 2
host_rate = "40Gbps"
core_rate = "40Gbps"
host_delay = "3us"
core_delay = "3us"
[network]
buffer = "384KB"
[transport]
protocol = "ndp"
[[workload]]
pattern = "poisson"
cdf = "datamining"
load = 0.8
flows = 600
[run]
max_live_packets = {max_live}
"#
    );
    parse_scenario(&text, Format::Toml, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

/// Packets a healthy NDP run of `sc` can hold at once, from the network alone: every switch
/// egress buffer full of MTU-sized packets, plus, per host, one first window of data in
/// flight with an ACK and a PULL for each of its packets (a pull loop holds as many tokens
/// as its first window; control packets are counted as if each needed its own slot).
fn ceiling(sc: &Scenario) -> u64 {
    let hosts = sc.topology.num_hosts as u64;
    // Every link is two egress ports; each host owns one of them (its NIC).
    let switch_ports = 2 * sc.topology.links.len() as u64 - hosts;
    let per_port = sc.network.buffer.0 / sc.network.mtu.0;
    let window = bdp_window(sc.net_info.max_host_rate, sc.net_info.max_base_rtt, sc.network.mtu.0);
    switch_ports * per_port + hosts * 3 * window
}

#[test]
fn ndp_datamining_on_drop_tail_finishes_every_flow_with_bounded_packets() {
    let probe = ndp_datamining(1);
    let limit = ceiling(&probe);
    // 56 switch ports x 256 packets + 40 hosts x 3 x the first window: about 24,000.
    assert!((10_000..40_000).contains(&limit), "ceiling {limit}");
    // The guard at the ceiling: a regression ends in seconds with the guard's error instead
    // of using gigabytes.
    let sc = ndp_datamining(limit);
    let out = Sim::new(&sc).try_run(&mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    let f = &out.flows;
    let unfinished: Vec<usize> = (0..f.id.len()).filter(|&i| f.finish_ps[i] == u64::MAX).collect();
    assert!(unfinished.is_empty(), "{} of {} flows unfinished: {unfinished:?}", unfinished.len(), f.id.len());
    assert!(!out.counters.cut_at_limit);
    assert_eq!(out.counters.packets_left, 0);
    assert!(
        out.counters.peak_live_packets < limit,
        "peak {} packets alive, ceiling {limit}",
        out.counters.peak_live_packets
    );
    // The drop-tail buffers did drop (the losses the timeouts repair): the case is exercised.
    assert!(out.counters.drops.iter().map(|d| d.1).sum::<u64>() > 0);
    assert!(f.timeouts.iter().sum::<u32>() > 0);
}

/// A broken transport: the first packet of a flow, and every packet arriving anywhere, sends
/// two packets to the other end. Nothing completes; the packets double every round trip.
struct Multiplier;

impl Multiplier {
    fn two(ctx: &mut Ctx, dst: u32, flow: FlowId) {
        for _ in 0..2 {
            ctx.out.send(Packet {
                dst,
                flow,
                size: 1500,
                payload: 1460,
                flags: PacketFlags(PacketFlags::DATA),
                ..Default::default()
            });
        }
    }
}

impl Transport for Multiplier {
    fn name(&self) -> &'static str {
        "multiplier"
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let dst = ctx.flows[flow as usize].dst;
        Self::two(ctx, dst, flow);
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        Self::two(ctx, pkt.src, pkt.flow);
    }
    fn on_timer(&mut self, _ctx: &mut Ctx, _token: u64) {}
}

#[test]
fn packets_multiplying_without_end_stop_the_run_with_the_live_packet_error() {
    let limit = 50_000;
    let sc = scenario_full(
        r#"{"kind":"single_switch","hosts":2,"host_rate":"10Gbps"}"#,
        r#"{"protocol":"tcp"}"#,
        r#"{"buffer":"10MB"}"#,
        &format!(r#"{{"max_live_packets":{limit}}}"#),
        "{}",
    );
    let flows = vec![flow(0, 1, 1_000_000, Time::ZERO)];
    let err = Sim::with_parts(&sc, flows, Box::new(Multiplier)).try_run(&mut |_| true).err();
    let Some(RunError::TooManyLivePackets { limit: l, live, flows_done, flows_total, sim_time }) = err.clone() else {
        panic!("expected the live-packet error, got {err:?}");
    };
    assert_eq!((l, flows_done, flows_total), (limit, 0, 1));
    // The guard looks every 65,536 events, and each event adds at most one packet here.
    assert!(live > limit && live <= limit + 65_536, "{live}");
    assert!(sim_time > Time::ZERO);
    let e = err.unwrap();
    assert_eq!(e.field(), "run.max_live_packets");
    let msg = e.to_string();
    assert!(msg.contains("run.max_live_packets") && msg.contains("0 of 1 flows"), "{msg}");
}

#[test]
fn max_live_packets_of_zero_is_rejected_naming_the_field() {
    let doc = r#"{"topology":{"kind":"single_switch","hosts":2},"transport":{"protocol":"tcp"},
        "run":{"max_live_packets":0},"workload":[{"pattern":"permutation","size":1000}]}"#;
    let Err(e) = parse_scenario(doc, Format::Json, Path::new(".")) else { panic!("accepted") };
    assert_eq!(e.field(), "run.max_live_packets", "{e}");
}

#[test]
fn the_default_limit_is_ten_million_packets() {
    let sc = scenario(r#"{"kind":"single_switch","hosts":2}"#, r#"{"protocol":"tcp"}"#, "{}");
    assert_eq!(sc.run.max_live_packets, 10_000_000);
}
