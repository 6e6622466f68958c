//! The end-host model: what sits between a transport and its host's link.
//!
//! A real sender does not hand the network everything its congestion window allows. Three
//! mechanisms of the Linux stack (the stack the seeds' testbeds ran and datacenter
//! deployments use) shape what reaches the wire, and each is a field of the scenario's
//! `[host]` section:
//!
//! - **Per-flow NIC occupancy limit** (`tsq`, `tsq_limit`, `tsq_pacing_shift`; Linux's TCP
//!   Small Queues). A window-based flow may keep at most a limited number of bytes below the
//!   transport (queued in the NIC or being transmitted); the transport holds the rest until
//!   the NIC has sent some of them. The limit is the larger of two full packets and about
//!   1 ms of the flow's pacing rate (the rate divided by 2^`tsq_pacing_shift`, 2^10: 0.98 ms),
//!   capped at `tsq_limit` (Linux's `tcp_limit_output_bytes`, 1 MB from Linux 4.x to 6.x;
//!   the newest kernels raised it to 4 MB). The pacing rate is Linux's: the window over the
//!   smoothed RTT, times 2 while the window is below half the slow-start threshold and 1.2
//!   after; before the first RTT sample the cap alone applies. A packet's bytes count from
//!   the moment the transport hands it to the NIC until its last bit has crossed the host's
//!   link (Linux releases them on the NIC's transmit completion, which follows the end of
//!   serialization by the completion latency; the link's propagation delay stands for that
//!   latency here).
//! - **The NIC's queueing discipline** (`nic_qdisc`): `"prio_fq"` (default) serves the
//!   priority classes in strict order and, inside a class, the flows with packets waiting
//!   in turn by deficit round robin (quantum `nic_quantum`, one MTU by default), as a Linux
//!   host's multi-band fair-queueing setup does for DSCP-tagged traffic (fq/fq_codel give each
//!   flow its own queue and serve them round robin); `"fq"` is per-flow round robin ignoring
//!   classes (Linux fq/fq_codel alone); `"fifo"` is one FIFO per class in strict priority
//!   (the ns-2/ns-3/OMNeT++ hosts of the seeds' simulations, and dcnsim before this model).
//!   A flow's packets and the ACKs the same host sends for it are one flow.
//! - **Congestion-window validation** (`cwnd_validation`; RFC 7661's principle as Linux
//!   implements it in `tcp_is_cwnd_limited`): the window grows only while the flow uses it.
//!   Per round (from a send until `snd_una` passes the `snd_nxt` of the round's start), the
//!   sender remembers whether a send was stopped by the window and the largest flight it had;
//!   an ACK may grow the window only if the round was window-limited, or, in slow start,
//!   while the window is below twice that largest flight. A flow held back by the NIC limit,
//!   or with nothing more to send, is not window-limited.
//!
//! Receiver-driven transports (Homa, NDP, pHost, ExpressPass) keep their own pacing: they
//! release packets on grants, pulls or credits that arrive at most at the host's line rate,
//! so they need no NIC limit (the host-model tests check that none of them builds a NIC
//! backlog). `host.legacy()` gives the hosts of the seeds' simulators (FIFO NIC, no limit,
//! no validation), for reproductions that must match them.

use crate::config::FieldError;
use crate::units::Bytes;
use serde::{Deserialize, Serialize};

/// The NIC's queueing discipline (`host.nic_qdisc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NicQdisc {
    /// Strict priority between classes, FIFO inside each.
    Fifo,
    /// Per-flow deficit round robin, classes ignored.
    Fq,
    /// Strict priority between classes, per-flow deficit round robin inside each.
    PrioFq,
}

fn d_qdisc() -> NicQdisc {
    NicQdisc::PrioFq
}
fn d_true() -> bool {
    true
}
fn d_tsq_limit() -> Bytes {
    Bytes(1_000_000)
}
fn d_shift() -> u8 {
    10
}

/// `[host]`: the end-host model (see the module documentation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    #[serde(default = "d_qdisc")]
    pub nic_qdisc: NicQdisc,
    /// Deficit round-robin quantum; `None`: one MTU.
    #[serde(default)]
    pub nic_quantum: Option<Bytes>,
    /// Limit each window-based flow's bytes below the transport (TCP Small Queues).
    #[serde(default = "d_true")]
    pub tsq: bool,
    /// The cap of that limit (Linux `tcp_limit_output_bytes`).
    #[serde(default = "d_tsq_limit")]
    pub tsq_limit: Bytes,
    /// The limit is the pacing rate x 2^-shift seconds (Linux `sk_pacing_shift`).
    #[serde(default = "d_shift")]
    pub tsq_pacing_shift: u8,
    /// Grow the congestion window only while the flow is window-limited.
    #[serde(default = "d_true")]
    pub cwnd_validation: bool,
}

impl Default for HostSpec {
    fn default() -> Self {
        HostSpec {
            nic_qdisc: d_qdisc(),
            nic_quantum: None,
            tsq: true,
            tsq_limit: d_tsq_limit(),
            tsq_pacing_shift: d_shift(),
            cwnd_validation: true,
        }
    }
}

impl HostSpec {
    /// The hosts of ns-2/ns-3/OMNeT++ (and of dcnsim before the host model): one FIFO per
    /// class, no NIC limit, no window validation.
    pub fn legacy() -> Self {
        HostSpec { nic_qdisc: NicQdisc::Fifo, tsq: false, cwnd_validation: false, ..HostSpec::default() }
    }

    /// Check the values (field paths under `host.`).
    pub fn validate(&self, mtu: Bytes) -> Result<(), FieldError> {
        if let Some(q) = self.nic_quantum {
            if q.0 < mtu.0 {
                return Err(FieldError::invalid(
                    "host.nic_quantum",
                    format!("{} B is below the MTU ({} B)", q.0, mtu.0),
                    "give at least one MTU, or remove it (default: one MTU)",
                ));
            }
        }
        if self.tsq && self.tsq_limit.0 < 2 * mtu.0 {
            return Err(FieldError::invalid(
                "host.tsq_limit",
                format!("{} B is below two packets ({} B)", self.tsq_limit.0, 2 * mtu.0),
                "give at least two MTUs (Linux's default is \"1MB\"), or set host.tsq = false",
            ));
        }
        if self.tsq_pacing_shift > 30 {
            return Err(FieldError::invalid(
                "host.tsq_pacing_shift",
                format!("{} would make the limit below a nanosecond of the rate", self.tsq_pacing_shift),
                "use 10 (Linux's default, about 1 ms) or a value in 0..=30",
            ));
        }
        Ok(())
    }

    /// The per-flow NIC limit's parameters, if the limit is on.
    pub fn tsq_params(&self) -> Option<TsqParams> {
        self.tsq.then_some(TsqParams { limit: self.tsq_limit.0, pacing_shift: self.tsq_pacing_shift })
    }
}

/// The per-flow NIC occupancy limit as a sender applies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TsqParams {
    /// Cap in bytes.
    pub limit: u64,
    /// The limit is the pacing rate over 2^`pacing_shift` seconds.
    pub pacing_shift: u8,
}

impl TsqParams {
    /// The limit in bytes for a flow with window `cwnd`, slow-start threshold `ssthresh`
    /// and smoothed RTT `srtt_ps` (None before the first sample); `mtu` the packet size.
    pub fn limit(&self, cwnd: u64, ssthresh: u64, srtt_ps: Option<u64>, mtu: u64) -> u64 {
        let Some(srtt) = srtt_ps.filter(|&s| s > 0) else { return self.limit };
        // Pacing rate in bytes per second: ratio x cwnd / srtt (ratio 2.0 or 1.2).
        let ratio_pct: u128 = if cwnd < ssthresh / 2 { 200 } else { 120 };
        let rate = cwnd as u128 * ratio_pct * crate::units::PS_PER_S as u128 / (100 * srtt as u128);
        let bytes = (rate >> self.pacing_shift).min(u64::MAX as u128) as u64;
        bytes.max(2 * mtu).min(self.limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsq_limit_is_about_one_ms_of_the_pacing_rate_capped() {
        let t = TsqParams { limit: 1_000_000, pacing_shift: 10 };
        // No RTT sample yet: the cap.
        assert_eq!(t.limit(14_600, u64::MAX, None, 1500), 1_000_000);
        // cwnd 100 KB, srtt 1 ms, congestion avoidance: 1.2 x 100 KB / 1 ms = 120 MB/s;
        // 2^-10 s of it = 117,187 B.
        assert_eq!(t.limit(100_000, 100_000, Some(1_000_000_000), 1500), 117_187);
        // Slow start below ssthresh / 2: ratio 2.
        assert_eq!(t.limit(100_000, 1_000_000, Some(1_000_000_000), 1500), 195_312);
        // A 20 us RTT makes the rate 50x: capped.
        assert_eq!(t.limit(100_000, 100_000, Some(20_000_000), 1500), 1_000_000);
        // A tiny window over a long RTT: floor of two packets.
        assert_eq!(t.limit(1460, 1460, Some(1_000_000_000_000), 1500), 3000);
    }

    #[test]
    fn validation_names_the_field() {
        let mut h = HostSpec { tsq_limit: Bytes(2000), ..HostSpec::default() };
        assert_eq!(h.validate(Bytes(1500)).unwrap_err().field(), "host.tsq_limit");
        h.tsq = false;
        assert!(h.validate(Bytes(1500)).is_ok());
        let h = HostSpec { nic_quantum: Some(Bytes(100)), ..HostSpec::default() };
        assert_eq!(h.validate(Bytes(1500)).unwrap_err().field(), "host.nic_quantum");
    }
}
