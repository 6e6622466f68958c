//! Building blocks that protocols are assembled from; none of them is a protocol on its own,
//! except the TCP engine, which is also registered as `tcp` and `dctcp`.
//!
//! - [`tcp`]: the TCP engine (sender with SACK recovery, RTO, pacing, per-flow NIC limit,
//!   window validation; receiver with delayed ACKs), generic over a congestion-control law;
//! - [`cc`]: the congestion-control laws the engine is generic over (Reno, DCTCP, ...);
//! - [`swift_law`]: Swift's delay-based window law, run by the engine in place of a `cc` law;
//! - [`lowprio`]: the low-priority opportunistic loop (RC3, PPT) beside a window transport;
//! - [`tagging`]: priority tagging of a window transport's packets (PIAS, PPT) and the split
//!   of a protocol's configuration table into its own fields and TCP's;
//! - [`pias_thresholds`]: demotion thresholds from a queueing model of the workload;
//! - [`aeolus`]: Aeolus' first-RTT unscheduled packets with selective dropping, for any
//!   credit/grant transport;
//! - [`rcvctl`]: receiver-side control of a TCP sender (advertised window, held ACKs, one-way
//!   delay, incoming-rate meter), for PTCP, ICTCP and their kin;
//! - [`segset`]: a set of packet indices kept as a window from the lowest missing one;
//! - [`bitmap`]: packet-index bitmaps that grow on demand (the receiver-driven transports).
//!
//! Blocks depend only on the transport interface (`crate::transport`) and the layers below it
//! (packets, units, the host model), and on one another, never on a protocol family.

pub mod aeolus;
pub mod bitmap;
pub mod cc;
pub mod lowprio;
pub mod pias_thresholds;
pub mod rcvctl;
pub mod segset;
pub mod swift_law;
pub mod tagging;
pub mod tcp;
