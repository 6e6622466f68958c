//! Shared scaffolding of the receiver-driven transports' state-machine tests (Homa,
//! ExpressPass, pHost): one switch between 10 Gbps hosts on 1 us links, the flows of a test
//! on it, and one transport callback at a time. Each test file keeps only what is its
//! protocol's own (its packet builders, its configuration).

use crate::packet::{FlowId, NodeId};
use crate::transport::{Actions, Ctx, FlowInfo, NetInfo};
use crate::units::{Bytes, Rate, Time};

/// Payload of a 1500 B packet.
pub const MSS: u64 = 1460;
/// Base RTT of a one-switch path at 10 Gbps with 1 us links: 4 x 1 us of propagation plus
/// the serialization of a 1500 B packet and a 64 B control packet at each of two hops.
pub const RTT_PS: u64 = 6_502_400;

/// The network of these tests: 1500 B MTU, base RTT [`RTT_PS`], 10 Gbps.
pub fn net() -> NetInfo {
    NetInfo::for_tests(1500, Time(RTT_PS), Rate::gbps(10))
}

/// Flows `(src, dst, size in bytes)` on that network, ids in order, all starting at 0.
pub fn flows(spec: &[(NodeId, NodeId, u64)]) -> Vec<FlowInfo> {
    spec.iter()
        .enumerate()
        .map(|(i, &(src, dst, size))| FlowInfo {
            id: i as FlowId,
            src,
            dst,
            size: Bytes(size),
            start: Time::ZERO,
            base_rtt: Time(RTT_PS),
            path_rate: Rate::gbps(10),
            host_rate: Rate::gbps(10),
            deadline: None,
            background: false,
        })
        .collect()
}

/// One transport callback on `host` at `now`; the actions it produced.
pub fn call(host: NodeId, now: Time, fl: &[FlowInfo], f: impl FnOnce(&mut Ctx)) -> Actions {
    let mut out = Actions::new();
    f(&mut Ctx { now, host, flows: fl, out: &mut out });
    out
}
