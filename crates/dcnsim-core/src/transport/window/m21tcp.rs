//! M21TCP: a switch-computed maximum window for many-to-one traffic (Adesanmi and Mhamdi,
//! "M21TCP: Overcoming TCP Incast Congestion in Data Centres", CloudNet 2015), **as
//! reconstructed**: one of the baselines of PTCP (PTCP §II-B, §V; PTCP cites it once as "[7]",
//! a citation slip for its reference [11]).
//!
//! # Status: as reconstructed
//! No public implementation exists. PTCP's description: the switch "calculates the maximum
//! congestion window in every RTT" and "informs all parallel senders to send the maximum rate
//! of packets, which will not cause the buffer overflow". The mechanism built here, every
//! rule an assumption of this reconstruction:
//!
//! - **Switch** (`queue/winstamp.rs`, asked for through `Derived::window_stamp`, so the
//!   network never learns this protocol's name): each egress port counts the flows `N` it
//!   carries per round trip (the base RTT plus the port's queueing delay: see that module for
//!   why the base RTT alone is not enough) and stamps `w_max = (B + C x RTT) / N` (buffer plus pipe, shared equally:
//!   PTCP's Eq. 3 solved for the window) into each data packet's `rank` field, keeping the
//!   smallest value along the path.
//! - **Receiver**: echoes the stamp of the latest data packet of the flow in every ACK, in the
//!   advertised-window field (whole segments, at least one: `w_max` below one segment, as at
//!   96 senders behind a 96 KB buffer, is floored at one segment). It runs on the
//!   receiver-side blocks of `rcvctl.rs` ([`RcvTcp`]) and never holds ACKs.
//! - **Sender**: standard TCP (NewReno/SACK, no ECN) that keeps at most `min(cwnd, w_max)` in
//!   flight: the echoed window caps the congestion window's effect. The congestion window
//!   itself is left to TCP's rules rather than overwritten with `min(cwnd, w_max)`, so when
//!   the stamp rises again (flows finishing) the sender may use it at once, up to its own
//!   window; a lower stamp takes effect on the next ACK either way.
//! - Before the first echoed stamp the sender's initial window applies: `init_cwnd` defaults
//!   to 2 segments, the initial window PTCP's Table 1 gives its TCP-based baselines (DCTCP,
//!   ICTCP).
//!
//! # Configuration (`protocol = "m21tcp"`)
//! No fields of its own; every `tcp` field (`init_cwnd` defaults to 2, `min_rto`, ...). The
//! flow-counting period of the switches is the network's largest base RTT.

use crate::packet::{NodeId, Packet};
use crate::transport::rcvctl::{AckVerdict, RcvPolicy, RcvTcp};
use crate::transport::tagging::{split_table, ExtConfigError};
use crate::transport::tcp::{Tcp, TcpConfig};
use crate::transport::{Derived, FlowInfo, NetInfo};
use crate::units::Time;

/// Errors of the `m21tcp` table.
pub type M21tcpConfigError = ExtConfigError;

/// M21TCP's receiver state of one flow: the latest stamp received (bytes; 0: none yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct M21Flow {
    pub stamp: u64,
}

/// The M21TCP receiver ([`RcvPolicy`]): echo the switches' maximum window.
#[derive(Clone, Copy, Debug, Default)]
pub struct M21Policy;

impl RcvPolicy for M21Policy {
    type Flow = M21Flow;
    fn name(&self) -> &'static str {
        "m21tcp"
    }
    fn new_flow(&mut self, _now: Time, _flow: &FlowInfo) -> M21Flow {
        M21Flow::default()
    }
    fn on_data(&mut self, _now: Time, _host: NodeId, _flow: &FlowInfo, st: &mut M21Flow, pkt: &Packet) {
        if pkt.rank > 0 {
            st.stamp = pkt.rank as u64;
        }
    }
    fn ack_verdict(&mut self, _now: Time, _flow: &FlowInfo, st: &mut M21Flow) -> AckVerdict {
        AckVerdict { rwnd: (st.stamp > 0).then_some(st.stamp), delay: Time::ZERO }
    }
}

/// The `m21tcp` transport.
pub type M21tcp = RcvTcp<M21Policy>;

/// What M21TCP asks of the network: every switch port stamps its maximum window.
pub fn derive() -> Derived {
    Derived { window_stamp: true, ..Derived::default() }
}

/// Build the `m21tcp` transport from its `[transport]` table (without `protocol`).
pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<M21tcp, M21tcpConfigError> {
    let (_own, mut tcp) = split_table(cfg, "m21tcp", &[])?;
    if let Some(t) = tcp.as_object_mut() {
        t.entry("init_cwnd").or_insert(serde_json::json!(2));
    }
    let tp = TcpConfig::parse(&tcp)?.resolve(net, false)?;
    if tp.ecn {
        return Err(ExtConfigError::OutOfRange {
            field: "ecn".into(),
            value: "true".into(),
            fix: "M21TCP's sender is plain TCP; remove transport.ecn".into(),
        });
    }
    Ok(RcvTcp::new(Tcp::new(tp), M21Policy))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketFlags;
    use crate::transport::tcp::{ack_rwnd, KIND_DATA};
    use crate::transport::{Actions, Ctx, Transport};
    use crate::units::{Bytes, Rate};
    use serde_json::json;

    const MSS: u64 = 1460;

    fn flow() -> FlowInfo {
        FlowInfo {
            id: 0,
            src: 1,
            dst: 0,
            size: Bytes(64_000),
            start: Time::ZERO,
            base_rtt: Time::us(100),
            path_rate: Rate::gbps(1),
            host_rate: Rate::gbps(1),
            deadline: None,
            background: false,
        }
    }

    fn net() -> NetInfo {
        let mut n = NetInfo::for_tests(1500, Time::us(100), Rate::gbps(1));
        n.host.tsq = false;
        n
    }

    /// State: a flow with no stamp yet; event: an unstamped data packet (no switch on the
    /// path). The ACK advertises nothing.
    #[test]
    fn unstamped_data_ack_advertises_nothing() {
        let mut p = M21Policy;
        let mut st = p.new_flow(Time::ZERO, &flow());
        p.on_data(Time::ZERO, 0, &flow(), &mut st, &Packet::default());
        assert_eq!(p.ack_verdict(Time::ZERO, &flow(), &mut st), AckVerdict { rwnd: None, delay: Time::ZERO });
    }

    /// State: stamped 27 125 B; event: a packet stamped 1130 B. The ACK echoes the latest.
    #[test]
    fn stamped_data_ack_echoes_the_latest_stamp() {
        let mut p = M21Policy;
        let mut st = p.new_flow(Time::ZERO, &flow());
        let pk = |r: u32| Packet { rank: r, ..Packet::default() };
        p.on_data(Time::ZERO, 0, &flow(), &mut st, &pk(27_125));
        assert_eq!(p.ack_verdict(Time::ZERO, &flow(), &mut st).rwnd, Some(27_125));
        p.on_data(Time::ZERO, 0, &flow(), &mut st, &pk(1_130));
        assert_eq!(p.ack_verdict(Time::ZERO, &flow(), &mut st).rwnd, Some(1_130));
    }

    /// Through the transport: the sender starts with 2 segments, the stamp comes back in the
    /// ACK's window field (whole segments, at least one) and caps the flight.
    #[test]
    fn sender_open_state_flight_capped_by_echoed_stamp() {
        let mut t = from_config(&json!({}), &net()).unwrap();
        assert_eq!(t.name(), "m21tcp");
        let flows = vec![flow()];
        let mut out = Actions::new();
        t.start_flow(&mut Ctx { now: Time::ZERO, host: 1, flows: &flows, out: &mut out }, 0);
        assert_eq!(out.sends.len(), 2, "init_cwnd 2");
        let mut d0 = out.sends[0];
        assert_eq!((d0.kind, d0.rank), (KIND_DATA, 0), "the sender leaves rank free");
        assert!(d0.flags.0 & PacketFlags::DATA != 0);
        d0.rank = 1_130; // a switch stamped less than a segment
        let mut acks = Actions::new();
        t.on_packet(&mut Ctx { now: Time::us(60), host: 0, flows: &flows, out: &mut acks }, &d0);
        assert_eq!(ack_rwnd(&acks.sends[0], MSS), Some(MSS), "floored at one segment");
        let mut more = Actions::new();
        t.on_packet(&mut Ctx { now: Time::us(110), host: 1, flows: &flows, out: &mut more }, &acks.sends[0]);
        let s = t.tcp().sender(0).unwrap();
        assert_eq!(s.rwnd(), MSS);
        assert!(s.cwnd() > MSS, "cwnd grew by slow start");
        assert!(more.sends.is_empty(), "one segment still in flight = w_max: nothing more");
    }

    #[test]
    fn derive_asks_for_window_stamping_only() {
        assert_eq!(derive(), Derived { window_stamp: true, ..Derived::default() });
    }

    #[test]
    fn config_errors_name_the_field() {
        for (cfg, field) in [
            (json!({"ecn": true}), "transport.ecn"),
            (json!({"w_max": 3}), "transport.w_max"),
            (json!({"init_cwnd": 0}), "transport.init_cwnd"),
        ] {
            let e = from_config(&cfg, &net()).err().unwrap_or_else(|| panic!("{cfg} accepted"));
            assert_eq!(e.field(), field, "{cfg}: {e}");
        }
    }
}
