//! Raw results of one run, as columns: the Python side turns them into Parquet/CSV tables
//! and the JSON summary (schema in `docs/results.md`).

/// Per-flow table, one entry per flow in flow-id order. Times in picoseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowTable {
    pub id: Vec<u32>,
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    pub size: Vec<u64>,
    pub start_ps: Vec<u64>,
    /// Completion time; `u64::MAX` if the flow did not finish.
    pub finish_ps: Vec<u64>,
    /// `finish - start`; `u64::MAX` if unfinished.
    pub fct_ps: Vec<u64>,
    pub ideal_fct_ps: Vec<u64>,
    /// Base RTT of the flow's path (docs/metrics.md).
    pub base_rtt_ps: Vec<u64>,
    /// Payload bytes the sender put on the wire (first transmissions and retransmissions).
    pub sent_bytes: Vec<u64>,
    pub retx_bytes: Vec<u64>,
    pub timeouts: Vec<u32>,
    /// Opportunistic (low-priority loop) payload bytes sent, included in `sent_bytes`; 0 for
    /// transports without such a loop.
    pub lp_sent_bytes: Vec<u64>,
    /// Opportunistic payload bytes that reached the receiving host.
    pub lp_rcvd_bytes: Vec<u64>,
    /// Largest payload the receiver held above the flow's in-order prefix (its re-sequencing
    /// buffer); 0 for transports that do not report it.
    pub reorder_max_bytes: Vec<u64>,
    pub background: Vec<bool>,
    /// Deadline relative to start; `u64::MAX` if none.
    pub deadline_ps: Vec<u64>,
    /// The application abandoned the flow at its deadline (`run.abort_at_deadline`).
    pub aborted: Vec<bool>,
    /// Barrier round of the flow (numbered across the barrier components in order);
    /// `u32::MAX` for a flow outside barrier rounds.
    pub round: Vec<u32>,
    /// Start of the flow's barrier round; `u64::MAX` outside barrier rounds or for a round
    /// that never started.
    pub round_start_ps: Vec<u64>,
}

/// Static description of every egress port.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PortTable {
    pub id: Vec<u32>,
    pub node: Vec<u32>,
    pub peer: Vec<u32>,
    pub rate_bps: Vec<u64>,
    pub delay_ps: Vec<u64>,
    /// "host", "tor", "leaf", "spine", "agg", "core" or "switch" (of `node`).
    pub node_kind: Vec<String>,
    pub peer_kind: Vec<String>,
    /// Bytes serialized over the whole run.
    pub tx_bytes: Vec<u64>,
    pub drops: Vec<u64>,
    /// Bytes offered to the port over the whole run (wire sizes on arrival).
    pub rx_bytes: Vec<u64>,
    /// Bytes of the packets the port dropped (their size when dropped).
    pub dropped_bytes: Vec<u64>,
    /// Bytes the port's trimming cut off packets.
    pub trimmed_bytes: Vec<u64>,
    /// Bytes still queued at the port when the run ended. Per port,
    /// `rx_bytes = tx_bytes + dropped_bytes + trimmed_bytes + queued_bytes`.
    pub queued_bytes: Vec<u64>,
    /// Control messages the arbitrator of this link direction processed (arbitration
    /// requests and delegation reports; 0 for transports without per-link arbitrators).
    pub arb_msgs: Vec<u64>,
    /// On a host's port: the largest re-sequencing buffer the host needed as a receiver
    /// (`Transport::host_reorder_max_bytes`); 0 on switch ports.
    pub host_reorder_max_bytes: Vec<u64>,
}

/// Queue occupancy samples: one row per (time, port, priority) with a non-empty queue.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueSamples {
    pub t_ps: Vec<u64>,
    pub port: Vec<u32>,
    pub prio: Vec<u8>,
    pub bytes: Vec<u64>,
}

/// Link samples: bytes serialized by each sampled port during the interval ending at `t_ps`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkSamples {
    pub t_ps: Vec<u64>,
    pub port: Vec<u32>,
    pub tx_bytes: Vec<u64>,
    /// tx_bytes * 8 / (rate * interval).
    pub utilization: Vec<f64>,
}

/// Whole-run counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counters {
    pub events: u64,
    /// Data packets delivered x links on their path (hops traversed by data packets that
    /// reached their destination host).
    pub data_packet_hops: u64,
    /// All packet hops (data and control, delivered or not).
    pub packet_hops: u64,
    /// Data payload bytes put on the wire by senders (retransmissions included).
    pub data_payload_sent: u64,
    /// Drops by cause name ("buffer_overflow", "selective_drop", ...).
    pub drops: Vec<(String, u64)>,
    /// Packets trimmed (payload cut) by switches.
    pub trims: u64,
    /// Simulated time at which the run ended.
    pub sim_end_ps: u64,
    /// The run stopped at its `run.time_limit` with work outstanding (false for every other
    /// way of stopping; see `stop_reason`).
    pub cut_at_limit: bool,
    /// Why the run ended.
    pub stop_reason: StopReason,
    /// Packets still in queues or on links when the run ended.
    pub packets_left: u64,
    /// Wall-clock seconds spent in the event loop.
    pub wall_s: f64,
    /// Peak number of simultaneously live packets.
    pub peak_live_packets: u64,
    /// Integral over [0, `sim_end_ps`] of the number of foreground flows in the system
    /// (arrived, not finished, not abandoned), in flows x ps, counted by the event loop at
    /// each arrival and departure.
    pub flows_in_system_integral_ps: f64,
    /// Arbitration packets (requests, answers, delegation reports and shares) every host and
    /// switch sent; 0 for transports without arbitration.
    pub arb_msgs_sent: u64,
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StopReason {
    /// Every foreground flow finished and the network drained (or nothing was left to do).
    #[default]
    Done,
    /// The next event lay beyond `run.time_limit`.
    TimeLimit,
    /// Every foreground flow finished; background flows were still running and were cut.
    ForegroundDone,
    /// No event was left although flows were unfinished (the transport gave up or stalled).
    Stalled,
    /// The progress callback asked to stop (e.g. Ctrl-C).
    Interrupted,
    /// A resource limit was reached ([`RunOutput::error`] says which).
    Error,
}

impl StopReason {
    /// The name written to the results ("done", "time_limit", ...).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Done => "done",
            StopReason::TimeLimit => "time_limit",
            StopReason::ForegroundDone => "foreground_done",
            StopReason::Stalled => "stalled",
            StopReason::Interrupted => "interrupted",
            StopReason::Error => "error",
        }
    }
}

/// Everything a run produces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    pub flows: FlowTable,
    pub ports: PortTable,
    pub queue_samples: QueueSamples,
    pub link_samples: LinkSamples,
    pub counters: Counters,
    /// The validated scenario, normalized, as JSON (every default filled in).
    pub scenario_json: String,
    /// Inconsistencies the runner found: a flow reported complete twice, by the wrong
    /// host, or (with `output.audit`) before its receiver held every byte. Empty in a
    /// correct run.
    pub audit_errors: Vec<String>,
    /// A resource limit that ended the run early (`stop_reason` is then `Error`); the
    /// results are incomplete and callers report this error instead of writing them.
    pub error: Option<crate::limits::RunError>,
    /// The packet trace, when the scenario asks for one (`output.trace_ports`/`trace_flows`).
    pub trace: Option<PacketTrace>,
    /// The ACK-delay log, when the scenario asks for one (`output.ack_delays`).
    pub ack_delays: Option<crate::transport::AckDelayLog>,
}

/// The events of a run's packet trace, in the order they happened (`crate::trace`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PacketTrace {
    pub events: Vec<crate::trace::TraceEvent>,
    /// Events left out because the log held `output.trace_limit` events.
    pub lost: u64,
    /// `output.trace_limit`.
    pub limit: u64,
}

/// Progress report handed to a callback during a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    pub sim_time_ps: u64,
    /// Time of the last flow arrival (a rough end estimate), or the time limit if set.
    pub horizon_ps: u64,
    pub flows_done: u64,
    pub flows_total: u64,
    pub events: u64,
}
