//! The largest base RTT that sizes every transport's defaults (BDP, RTTbytes, marking periods)
//! is the longest host-to-host path's, also in an explicit topology whose first and last hosts
//! sit in the middle of it.

use dcnsim_core::{parse_scenario, Format};
use std::path::Path;

/// A chain of four 10 Gbps switches A - B - C - D, every link 1 us. Host 0 and host 3 (the
/// first and the last) hang off B; host 1 off A, host 2 off D. The longest path, host 1 to
/// host 2, crosses 5 links: base RTT = 2 x 5 x 1 us of propagation + 5 x 1.2 us (a 1500 B
/// packet at 10 Gbps) + 5 x 0.0512 us (a 64 B control packet) = 16.256 us. Paths from the
/// first and last hosts alone reach only 4 links (13.0048 us).
#[test]
fn explicit_chain_largest_base_rtt_is_between_middle_hosts() {
    let d = r#"{"topology":{"kind":"explicit",
        "nodes":[{"name":"h0","kind":"host"},{"name":"h1","kind":"host"},{"name":"h2","kind":"host"},
                 {"name":"h3","kind":"host"},
                 {"name":"A","kind":"switch"},{"name":"B","kind":"switch"},{"name":"C","kind":"switch"},
                 {"name":"D","kind":"switch"}],
        "links":[{"a":"h0","b":"B","rate":"10Gbps","delay":"1us"},{"a":"h3","b":"B","rate":"10Gbps","delay":"1us"},
                 {"a":"h1","b":"A","rate":"10Gbps","delay":"1us"},{"a":"h2","b":"D","rate":"10Gbps","delay":"1us"},
                 {"a":"A","b":"B","rate":"10Gbps","delay":"1us"},{"a":"B","b":"C","rate":"10Gbps","delay":"1us"},
                 {"a":"C","b":"D","rate":"10Gbps","delay":"1us"}]},
        "network":{"mtu":"1500B","ctrl_size":"64B"},"transport":{"protocol":"homa"},
        "workload":{"pattern":"permutation","size":"1000B"}}"#;
    let sc = parse_scenario(d, Format::Json, Path::new(".")).unwrap();
    assert_eq!(sc.net_info.max_base_rtt.0, 16_256_000);
}
