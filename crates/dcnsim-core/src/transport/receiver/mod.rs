//! Receiver-driven protocols: the receiver schedules the sender with grants, credits or pull
//! requests (Homa, pHost, NDP, ExpressPass, RPO, whose grants also release opportunistic low-priority
//! packets). Each may run with the Aeolus building block
//! ([`crate::transport::blocks::aeolus`]) for its first-RTT unscheduled packets.
//!
//! Protocols here depend on the building blocks, never on the registry or the window-based
//! family.

pub mod expresspass;
pub mod homa;
pub mod ndp;
pub mod phost;
pub mod rpo;
#[cfg(test)]
pub(crate) mod testkit;
