//! Window-based (sender-driven) protocols: each wraps the TCP engine of
//! [`crate::transport::blocks::tcp`] with its own congestion-control law, priority tagging or
//! opportunistic loop. Swift (delay-based), D2TCP and L2DCT (deadline- and
//! size-aware DCTCP), PIAS (priority tagging by bytes sent), RC3 and PPT (an opportunistic
//! low-priority loop beside the window). HPCC (in-band telemetry, paced window) keeps its own
//! RDMA-style go-back-N sender instead of the TCP engine.
//!
//! Protocols here depend on the building blocks and on one another (PPT reuses PIAS's tagging
//! and Swift's law), never on the registry or the receiver-driven family.

pub mod d2tcp;
pub mod hpcc;
pub mod iatcp;
pub mod ictcp;
pub mod l2dct;
pub mod m21tcp;
pub mod pfabric;
pub mod pias;
pub mod ppt;
pub mod ptcp;
pub mod rc3;
pub mod swift;
