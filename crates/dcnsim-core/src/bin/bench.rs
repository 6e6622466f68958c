//! `dcnsim-bench`: the fixed performance scenarios of BENCHMARKS.md.
//!
//! - **perm**: k=8 fat tree (128 hosts), every link 100 Gbps / 1 us, MTU 1500, 150 KB port
//!   buffers, DCTCP with K = 15 packets; host h sends one 2,000,000 B flow to host
//!   (h + 64) mod 128 at t = 0 (every path crosses 6 links).
//! - **short**: the same network; 12,800 flows between uniformly random distinct hosts,
//!   sizes log-uniform in [1 KB, 1 MB] (size = 1000 x 1000^u), starts uniform over 2 ms.
//! - **train** (not a benchmark): the profile-guided build's training run (`make bench-pgo`),
//!   the same network with a workload unlike both: a shift-37 permutation of 300 KB flows and
//!   4,000 random flows of 0.5-200 KB over 0.8 ms from another generator seed.
//!
//! Prints a human-readable report and one machine-readable line per scenario:
//! `bench NAME wall_s=... events_per_s=... packet_hops_per_s=... peak_rss_mb=... cpu_s=...
//! packet_hops_per_cpu_s=...` (`cpu_s`: the CPU time of the run, including the small output
//! assembly after the loop; on a busy machine it is the figure that does not count waiting for
//! a core), then a
//! `fingerprint` line: an FNV-1a hash of the flow table (finish times, sent and retransmitted
//! bytes, timeouts) and of the port table (bytes sent, drops), so a change to the engine can
//! be checked to leave results byte-identical.
//! Each scenario runs in its own process so peak RSS is its own. `--legacy-host` runs them
//! with the hosts of ns-2-style simulators (`[host]` FIFO NIC, no per-flow NIC limit, no window
//! validation), the model dcnsim had before `crate::host`.

use dcnsim_core::rng::Rng;
use dcnsim_core::sim::Sim;
use dcnsim_core::units::{Bytes, Time};
use dcnsim_core::workload::FlowSpec;
use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

const NET: &str = r#"{
  "name": "bench",
  "seed": 42,
  "topology": {"kind": "fat_tree", "k": 8, "host_rate": "100Gbps", "core_rate": "100Gbps",
               "host_delay": "1us", "core_delay": "1us"},
  "network": {"mtu": "1500B", "buffer": "150KB", "ecn_k": "22500B"},
  "transport": {"protocol": "dctcp"},
  "workload": [{"pattern": "permutation", "shift": 64, "size": "2000000B"}]
}"#;

/// A uniformly random ordered pair of distinct hosts of the 128.
fn random_pair(rng: &mut Rng) -> (u32, u32) {
    let src = rng.below(128) as u32;
    let mut dst = rng.below(127) as u32;
    if dst >= src {
        dst += 1;
    }
    (src, dst)
}

/// Host h sends one flow of `size` bytes to host (h + shift) mod 128, all at t = 0.
fn permutation(shift: u32, size: u64) -> Vec<FlowSpec> {
    (0..128u32)
        .map(|h| FlowSpec {
            src: h,
            dst: (h + shift) % 128,
            size: Bytes(size),
            start: Time::ZERO,
            deadline: None,
            background: false,
        })
        .collect()
}

fn flows(name: &str) -> Vec<FlowSpec> {
    match name {
        "perm" => permutation(64, 2_000_000),
        "short" => {
            let mut rng = Rng::new(20261122);
            let mut v: Vec<FlowSpec> = (0..12_800)
                .map(|_| {
                    let (src, dst) = random_pair(&mut rng);
                    let size = (1000.0 * 1000f64.powf(rng.f64())).round() as u64;
                    let start = Time((rng.f64() * Time::ms(2).0 as f64) as u64);
                    FlowSpec { src, dst, size: Bytes(size), start, deadline: None, background: false }
                })
                .collect();
            v.sort_by_key(|f| f.start);
            v
        }
        "train" => {
            // Not a benchmark: the training run of `make bench-pgo` (BENCHMARKS.md), a workload
            // unlike both benchmarks (another permutation, flow sizes and generator seed).
            let mut v = permutation(37, 300_000);
            let mut rng = Rng::new(7);
            v.extend((0..4_000).map(|_| {
                let (src, dst) = random_pair(&mut rng);
                let size = (500.0 * 400f64.powf(rng.f64())).round() as u64;
                let start = Time((rng.f64() * Time::us(800).0 as f64) as u64);
                FlowSpec { src, dst, size: Bytes(size), start, deadline: None, background: false }
            }));
            v.sort_by_key(|f| f.start);
            v
        }
        other => panic!("unknown bench scenario {other}"),
    }
}

/// CPU time this thread has run, in seconds (`/proc/thread-self/schedstat`, nanoseconds):
/// on a shared machine the wall time includes waiting for a core, the CPU time does not.
fn thread_cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|t| t.parse::<f64>().ok()))
        .map(|ns| ns / 1e9)
        .unwrap_or(f64::NAN)
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<f64>().ok()))
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

/// FNV-1a over a sequence of u64 values.
fn fnv(vals: impl Iterator<Item = u64>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in vals {
        for b in v.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// `legacy`: the hosts of ns-2-style simulators (FIFO NIC, no per-flow NIC limit, no window
/// validation), which dcnsim had before its host model: the engine-cost comparison across
/// that change runs the same simulation on both binaries.
fn run_one(name: &str, legacy: bool) {
    let mut doc: serde_json::Value = serde_json::from_str(NET).expect("bench scenario is JSON");
    if legacy {
        doc["host"] = serde_json::json!({"nic_qdisc": "fifo", "tsq": false, "cwnd_validation": false});
    }
    let sc = parse_scenario(&doc.to_string(), Format::Json, Path::new(".")).expect("bench scenario is valid");
    let fl = flows(name);
    let nflows = fl.len();
    let sim = Sim::with_flows(&sc, fl);
    let cpu0 = thread_cpu_s();
    let out = sim.run(&mut |_| true);
    let cpu = thread_cpu_s() - cpu0;
    let c = &out.counters;
    let finished = out.flows.finish_ps.iter().filter(|&&f| f != u64::MAX).count();
    assert_eq!(finished, nflows, "every bench flow must finish");
    let wall = c.wall_s;
    println!(
        "{name}: {nflows} flows, simulated {:.3} ms, {} events, {} data packet-hops, {} packet-hops, drops {:?}",
        c.sim_end_ps as f64 / 1e9,
        c.events,
        c.data_packet_hops,
        c.packet_hops,
        c.drops
    );
    println!(
        "bench {name} wall_s={wall:.3} events_per_s={:.0} packet_hops_per_s={:.0} peak_rss_mb={:.1} cpu_s={cpu:.3} \
         packet_hops_per_cpu_s={:.0}",
        c.events as f64 / wall,
        c.data_packet_hops as f64 / wall,
        peak_rss_mb(),
        c.data_packet_hops as f64 / cpu
    );
    let f = &out.flows;
    let flows_fp =
        fnv((0..nflows).flat_map(|i| [f.finish_ps[i], f.sent_bytes[i], f.retx_bytes[i], f.timeouts[i] as u64]));
    let p = &out.ports;
    let ports_fp = fnv((0..p.id.len()).flat_map(|i| [p.tx_bytes[i], p.drops[i]]));
    println!(
        "fingerprint {name} flows={flows_fp:016x} ports={ports_fp:016x} packet_hops={} data_packet_hops={}",
        c.packet_hops, c.data_packet_hops
    );
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let legacy = args.iter().any(|a| a == "--legacy-host");
    args.retain(|a| a != "--legacy-host");
    let names: Vec<String> = if args.is_empty() { vec!["perm".into(), "short".into()] } else { args };
    if names.len() == 1 {
        run_one(&names[0], legacy);
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    for n in names {
        let mut cmd = std::process::Command::new(&exe);
        cmd.arg(&n);
        if legacy {
            cmd.arg("--legacy-host");
        }
        let st = cmd.status().expect("spawn bench");
        if !st.success() {
            eprintln!("bench {n} failed");
            std::process::exit(1);
        }
    }
}
