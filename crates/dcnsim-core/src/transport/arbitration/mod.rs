//! Arbitrated protocols: flows ask per-link arbitrators for a priority queue and a reference
//! rate (PASE), with the arbitration itself as one reusable control-plane piece
//! ([`arbiter`]: per-link ordering by deadline then remaining size, queue and rate
//! assignment), which PDQ's switch-side flow list can reuse.
//!
//! Protocols here depend on the building blocks and on the arbiter, never on the registry or
//! another family.

pub mod arbiter;
pub mod bottomup;
pub mod pase;
pub mod pdq;
