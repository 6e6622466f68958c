//! # dcnsim-core
//!
//! The simulation core of dcnsim, a packet-level simulator for datacenter transport
//! protocols. It models hosts and store-and-forward switches joined by full-duplex links
//! (rate + propagation delay), switch egress ports with up to 8 strict-priority queues
//! sharing a per-port buffer under a pluggable queue policy, shortest-path ECMP routing
//! or per-packet spraying, and transports as pure state machines driven by a generic
//! discrete-event runner. Definitions follow `docs/conventions.md` (units, packets, network)
//! and `docs/metrics.md` (metrics).
//!
//! Layers, bottom up (a module may use only those above it in this list):
//! `units`, `rng`, `config`, `host` -> `packet`, `event` -> `queue` -> `topology` -> `network`
//! -> `transport` (interface + protocols + registry) -> `workload` -> `scenario` -> `sim`.
//! See `docs/ARCHITECTURE.md`.

pub mod config;
pub mod event;
pub mod fuzz;
pub mod host;
pub mod limits;
pub mod linkdelay;
pub mod network;
mod nonfinite;
pub mod output;
pub mod packet;
pub mod pause;
pub mod queue;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod topology;
pub mod trace;
pub mod transport;
pub mod units;
pub mod workload;

pub use limits::RunError;
pub use output::{Progress, RunOutput};
pub use scenario::{parse_scenario, Format, Scenario, ScenarioError};

/// Run a validated scenario; `progress` is called periodically and may return false to stop.
/// Panics if the run cannot finish within the scenario's limits; [`try_run`] returns that
/// as a [`RunError`] instead.
pub fn run(sc: &Scenario, progress: &mut dyn FnMut(&Progress) -> bool) -> RunOutput {
    sim::run(sc, progress)
}

/// Run a validated scenario; a run that cannot make progress (more than
/// `run.max_live_packets` packets alive) ends with a [`RunError`] naming that field.
pub fn try_run(sc: &Scenario, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<RunOutput, RunError> {
    sim::try_run(sc, progress)
}
