//! TCP NewReno / SACK and DCTCP: one window-based sender and one cumulative-ACK receiver
//! per flow, used by the `tcp` and `dctcp` protocols and embeddable by other transports.
//!
//! # What is modelled
//! - **Congestion control (RFC 5681)**: slow start and congestion avoidance on a byte-counted
//!   window (`cwnd` in bytes). Slow start adds the bytes newly acknowledged, at most
//!   2 x MSS per ACK (RFC 3465 appropriate byte counting, L = 2), so the window doubles per RTT
//!   with or without delayed ACKs; congestion avoidance adds MSS x acked / cwnd per ACK (that is
//!   MSS x MSS / cwnd for one full segment), the fractional remainder carried exactly, i.e. one
//!   MSS per window of data.
//! - **Loss recovery**: fast retransmit after `dupack_threshold` duplicate ACKs with
//!   ssthresh = max(FlightSize / 2, 2 x MSS). Without SACK this is NewReno (RFC 6582): window
//!   inflation by one MSS per further duplicate ACK, a partial ACK retransmits the next hole and
//!   deflates the window, the first partial ACK restarts the RTO ("impatient" variant), recovery
//!   ends when the cumulative ACK reaches the recovery point, with
//!   cwnd = min(ssthresh, max(FlightSize, MSS) + MSS). With SACK (RFC 6675, conservative
//!   loss recovery): a scoreboard of SACKed ranges, `IsLost` (more than (DupThresh-1) x MSS bytes
//!   or at least DupThresh segments SACKed above), `pipe` as in SetPipe, `NextSeg` rules 1-3
//!   (lowest lost hole above HighRxt, then new data, then the lowest un-SACKed hole below the
//!   highest SACKed byte) and rule 4 (one rescue retransmission of the highest un-SACKed
//!   segment per recovery), cwnd = ssthresh during and after recovery; recovery is also
//!   entered when `IsLost(snd_una)` holds before the third duplicate ACK. A duplicate ACK
//!   counts toward the threshold only if it carries new SACK information (RFC 6675
//!   definition) when SACK is on. Limited transmit (RFC 3042), RACK/TLP, lost-retransmission
//!   detection and PRR are not modelled: a lost retransmission is repaired by the RTO.
//! - **RTO (RFC 6298)**: SRTT/RTTVAR by Jacobson/Karels (first sample R: SRTT = R,
//!   RTTVAR = R/2; then RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|, SRTT = 7/8 SRTT + 1/8 R),
//!   RTO = clamp(SRTT + 4 RTTVAR, min_rto, max_rto); the timer is restarted by every ACK that
//!   advances `snd_una` and stopped when everything is acknowledged; on expiry the RTO doubles
//!   (up to `max_rto`), ssthresh = max(FlightSize / 2, 2 x MSS) (only on the first expiry of a
//!   series, RFC 5681 §3.1), cwnd = 1 MSS and the sender goes back N from `snd_una`, skipping
//!   ranges the SACK scoreboard holds (the receiver never reneges). After a timeout,
//!   duplicate ACKs do not start a fast retransmit until `snd_una` reaches the highest byte sent
//!   at the timeout (RFC 6582 §4.2, avoiding repeated fast retransmits of go-back-N data).
//! - **RTT samples**: from the timestamp echo (RFC 7323 RTTM): every data packet carries its send
//!   time in `ts`, every ACK echoes it, and the sender samples `now - ts` only on ACKs that
//!   advance `snd_una`. The echoed time belongs to the very transmission that triggered the ACK,
//!   so retransmissions give valid samples: this replaces Karn's rule (which exists because
//!   plain TCP cannot tell which transmission an ACK answers) and is what Linux does with
//!   timestamps on. A delayed ACK echoes the earliest segment it covers, so the delay is part
//!   of the sample (RFC 7323 §4.3).
//! - **DCTCP** (Alizadeh et al., SIGCOMM 2010, §3.1; RFC 8257): data packets are ECT; the
//!   receiver sets ECE on an ACK iff the packets it covers were CE-marked, and with delayed
//!   ACKs runs the two-state machine (an ACK is sent at once when the CE state of arriving
//!   packets changes, so each ACK covers packets of a single state and ECE is exact). Every ACK
//!   also states how many payload bytes it covers, so the sender computes
//!   F = marked bytes / acknowledged bytes exactly over each observation window (one window of
//!   data: from the `snd_nxt` at the previous update until `snd_una` passes it) and updates
//!   alpha = (1 - g) alpha + g F. On the first ECE outside a reduction window the sender sets
//!   ssthresh = cwnd = max(cwnd (1 - alpha/2), min_cwnd) and ignores further ECE until
//!   `snd_una` passes the `snd_nxt` of that moment (at most one cut per window, like Linux's
//!   CWR state); the ACK carrying the cutting ECE does not grow the window. Alpha is updated
//!   before the cut reacts on the same ACK (Linux order). ECE during loss recovery is ignored
//!   (the loss reaction already cut the window once in that window). Loss reactions are
//!   NewReno/SACK (RFC 8257 §3.5). Plain `tcp` with `ecn = true` reacts to ECE the same way
//!   with alpha fixed at 1, i.e. it halves once per window (RFC 3168).
//!
//! - **Window laws** (`cc.rs`): the sender is generic over a [`CongestionControl`] law that
//!   supplies the numbers of the rules above (alpha's update at the end of an observation
//!   window, the window after an ECN cut, the congestion-avoidance credit, ssthresh at fast
//!   retransmit, the window after a timeout); the sender keeps the rules' timing (observation
//!   and CWR windows, recovery states, slow start). `tcp`/`dctcp` and every transport that
//!   embeds the sender use [`Standard`] (Reno or DCTCP by `TcpParams::dctcp`); D2TCP and L2DCT
//!   are further laws.
//! - **Swift** (`swift.rs`): with `TcpParams::swift` set, Swift's delay-based window law
//!   replaces slow start, congestion avoidance, ECN and the loss reactions' window changes
//!   (see `swift.rs`); the sending machinery (SACK recovery, RTO, go-back-N) stays, plus a
//!   pacing gate when Swift's window is below one packet.
//!
//! - **Receive window**: the receiver buffers everything, so the plain receiver advertises
//!   no window; a receiver-side controller (`rcvctl.rs`: PTCP, ICTCP ...) may write one into
//!   its ACKs ([`set_ack_rwnd`]), and the sender then keeps at most min(cwnd, rwnd) bytes in
//!   flight (or in `pipe` during SACK recovery). The window of the latest ACK that does not
//!   move backwards (`ack >= snd_una`) counts; an ACK without a window keeps the previous
//!   one. Window validation (`host.cwnd_validation`) counts a send stopped by the receive
//!   window as not window-limited, as Linux does. The receiver never advertises less than one
//!   segment, so no zero-window probing is needed.
//!
//! Not modelled: connection setup and teardown, Nagle, pacing (except Swift's below one
//! packet), spurious-retransmission undo, ACK loss detection.
//!
//! # Choices where the sources leave room
//! - `min_rto` default **1 ms**: Linux's 200 ms default makes a single incast timeout cost
//!   1000+ datacenter RTTs (PTCP §II: timeouts "of hundreds of milliseconds"); 1 ms is the
//!   usual datacenter tuning (the smallest value Linux's `rto_min` route option takes with a
//!   1 kHz clock) and stays an order of magnitude above datacenter RTTs, so spurious timeouts
//!   are rare. Scenarios reproducing a paper's RTOmin set it explicitly.
//! - `initial_rto` default **max(min_rto, 3 x base RTT of the flow)**: connection setup is not
//!   simulated; RFC 6298 applied to the handshake's RTT sample R gives SRTT = R, RTTVAR = R/2,
//!   RTO = 3R, so this is the RTO an established connection would start the data with (RFC
//!   6298's 1 s applies to the SYN only).
//! - `max_rto` default **1 s**: RFC 6298 allows 60 s; in a simulation, backing off beyond
//!   1 s only stretches the run, and 1 s is 1000 x the default minimum.
//! - `init_alpha` default **1.0**: Linux's default (`dctcp_alpha_on_init`), which makes a new
//!   flow's first reaction as cautious as TCP's (halving) until it has measured the marking
//!   fraction; set 0 for the original ns-2 behaviour.
//! - `min_cwnd` (floor of an ECN cut) default **2 packets**, as Linux's DCTCP.
//! - `delayed_ack_timeout` default **40 us**: Linux's 40 ms delayed-ACK minimum scaled to
//!   datacenter time, like `min_rto`; it only fires when an odd segment is left without a
//!   successor. With delayed ACKs on, the receiver ACKs every second full segment
//!   (2 x MSS bytes pending) and immediately for out-of-order, hole-filling and duplicate
//!   segments, for the segment that completes the flow and on a CE state change.
//! - On leaving SACK recovery cwnd = ssthresh (pipe already limited the flight to ssthresh);
//!   on leaving NewReno recovery the RFC 6582 burst-avoiding form min(ssthresh, flight + MSS)
//!   is used, because window deflation can otherwise release a burst.
//! - Segments are aligned to a grid of MSS-sized segments from byte 0, so the last packet of
//!   a flow carries `size - (n-1) x MSS` bytes and retransmissions resend whole segments.
//! - A flow of 0 bytes sends one empty DATA packet (so that it completes) and is not
//!   retransmitted.
//!
//! # Header layout
//! Data packet (`kind = KIND_DATA`, flag `DATA`): `seq` = byte offset of the payload,
//! `payload` <= MSS, `size` = payload + header, `ts` = send time, `aux2` bit 0 = this is a
//! retransmission (informational), `ecn = Ect` when ECN is on, `prio` from the
//! [`PriorityPolicy`], `ack`/`aux`/`rank` = 0.
//!
//! ACK (`kind = KIND_ACK`, `net.ctrl_size` bytes, Not-ECT): `ack` = cumulative ACK (next byte
//! expected); `[seq, aux)` = one SACK block, the receiver's out-of-order range holding the
//! segment that triggered the ACK (RFC 2018's first block), or the lowest out-of-order range,
//! or empty (`aux <= seq`) when the receiver holds no out-of-order data; `aux2` bit 31 = ECE,
//! bits 20..30 = the advertised receive window in segments (0: none, see above), bits 0..19 =
//! payload bytes of the data packets this ACK covers (duplicates included: the DCTCP fraction
//! counts packets, not unique bytes); `ts` = echoed data timestamp; `prio` from
//! [`PriorityPolicy::ack_prio`] (by default the class of the data packet it answers); `rank` =
//! the receiver's hold time in ns (from the arrival of the oldest data packet the ACK covers
//! to the ACK: 0 without delayed ACKs), Swift's remote-queuing delay.
//!
//! Timers: token kind [`TIMER_RTO`] (and, for Swift, [`TIMER_PACE`]) at the sender,
//! [`TIMER_DELACK`] at the receiver, generation
//! from a [`TimerSlot`]. The RTO is re-armed lazily: moving the deadline later keeps the armed
//! event and re-arms when it fires early, so the common path pushes no timer per ACK.
//!
//! # Reuse
//! [`TcpSender`] and [`TcpReceiver`] are plain state machines driven through a [`FlowCtx`];
//! another transport (PIAS, PPT's high-priority loop ...) can embed them, choose each data
//! packet's class with its own [`PriorityPolicy`], and route [`TIMER_RTO`] / [`TIMER_PACE`] /
//! [`TIMER_DELACK`] tokens and `KIND_DATA` / `KIND_ACK` packets to them (its own kinds should use values >= 16).
//!
//! Per-packet work on the in-order path is O(1): the SACK scoreboard and the receiver's
//! out-of-order list are empty (and unallocated) unless there is loss or reordering.

use crate::config::FieldError;
use crate::host::TsqParams;
use crate::packet::{Ecn, FlowId, Packet, PacketFlags};
use crate::transport::cc::{CcState, CongestionControl, DctcpParams, Standard, StandardParams};
use crate::transport::swift_law::{SwiftCc, SwiftParams};
use crate::transport::{token, untoken, Actions, Ctx, FlowInfo, FlowStats, NetInfo, TimerSlot, Transport};
use crate::units::{Bytes, Time};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// `Packet::kind` of a TCP data segment.
pub const KIND_DATA: u8 = 1;
/// `Packet::kind` of a TCP acknowledgement.
pub const KIND_ACK: u8 = 2;
/// Timer kind of the sender's retransmission timer.
pub const TIMER_RTO: u8 = 1;
/// Timer kind of the receiver's delayed-ACK timer.
pub const TIMER_DELACK: u8 = 2;
/// Timer kind of the sender's pacing timer (Swift below one packet of window).
pub const TIMER_PACE: u8 = 3;
/// ACK `aux2` bit: ECN-Echo.
pub const ACK_ECE: u32 = 1 << 31;
/// ACK `aux2` bits holding the payload bytes the ACK covers (bits 0..19; saturating at
/// 1 MiB - 1, far above the at most three segments an ACK covers).
pub const ACK_COVERED_MASK: u32 = (1 << 20) - 1;
/// ACK `aux2` bits 20..30: the advertised receive window in whole segments (0 = none
/// advertised: the sender keeps the window it had, initially unlimited). See
/// [`set_ack_rwnd`] and `rcvctl.rs`.
pub const ACK_RWND_MASK: u32 = 0x7FF << 20;
/// Bit position of [`ACK_RWND_MASK`].
pub const ACK_RWND_SHIFT: u32 = 20;
/// The largest receive window an ACK can advertise, segments (11 bits).
pub const ACK_RWND_MAX_SEGS: u64 = 0x7FF;
/// Data `aux2` bit: the segment is a retransmission.
pub const DATA_RETX: u32 = 1;

// ------------------------------------------------------------------------------------------
// Priority policy
// ------------------------------------------------------------------------------------------

/// Chooses the priority class of each data packet (and of ACKs). The default is a constant
/// class; PIAS-like schemes demote a flow as its sent bytes grow.
pub trait PriorityPolicy: Send {
    /// Class (0 = highest) of the data packet carrying `[seq, ...)`, sent after
    /// `bytes_sent_before` payload bytes of this flow (retransmissions included).
    fn prio(&self, flow: &FlowInfo, bytes_sent_before: u64, seq: u64) -> u8;
    /// Class of an ACK answering a data packet that arrived in class `data_prio`.
    fn ack_prio(&self, _flow: &FlowInfo, data_prio: u8) -> u8 {
        data_prio
    }
}

/// Every packet in one class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstPrio(pub u8);

impl PriorityPolicy for ConstPrio {
    #[inline]
    fn prio(&self, _flow: &FlowInfo, _bytes_sent_before: u64, _seq: u64) -> u8 {
        self.0
    }
    #[inline]
    fn ack_prio(&self, _flow: &FlowInfo, _data_prio: u8) -> u8 {
        self.0
    }
}

// ------------------------------------------------------------------------------------------
// Configuration
// ------------------------------------------------------------------------------------------

/// A window bound: a number of packets (MSS) or, written as a string, a size ("64KB").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    Packets(u64),
    Size(Bytes),
}

impl Window {
    fn bytes(self, mss: u64) -> u64 {
        match self {
            Window::Packets(n) => n.saturating_mul(mss),
            Window::Size(b) => b.0,
        }
    }
    fn show(self) -> String {
        match self {
            Window::Packets(n) => n.to_string(),
            Window::Size(b) => format!("\"{b}\""),
        }
    }
}

/// The scenario's `[transport]` table for `tcp` / `dctcp` (without `protocol`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Initial window, packets.
    pub init_cwnd: u64,
    /// Floor of an ECN window cut, packets.
    pub min_cwnd: u64,
    /// Optional cap on cwnd: packets, or a size string.
    #[serde(deserialize_with = "de_opt_window")]
    pub max_cwnd: Option<Window>,
    /// Initial slow-start threshold: packets or a size string; `None` = infinite.
    #[serde(deserialize_with = "de_opt_window")]
    pub ssthresh: Option<Window>,
    #[serde(deserialize_with = "de_time")]
    pub min_rto: Time,
    #[serde(deserialize_with = "de_time")]
    pub max_rto: Time,
    /// `None` = max(min_rto, 3 x the flow's base RTT).
    #[serde(deserialize_with = "de_opt_time")]
    pub initial_rto: Option<Time>,
    pub dupack_threshold: u32,
    pub sack: bool,
    pub delayed_ack: bool,
    #[serde(deserialize_with = "de_time")]
    pub delayed_ack_timeout: Time,
    /// DCTCP EWMA gain.
    pub g: f64,
    /// DCTCP initial alpha.
    pub init_alpha: f64,
    /// `None` = on for dctcp, off for tcp.
    pub ecn: Option<bool>,
    /// Priority class of data and ACKs (with the default constant policy).
    pub prio: u8,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            init_cwnd: 10,
            min_cwnd: 2,
            max_cwnd: None,
            ssthresh: None,
            min_rto: Time::ms(1),
            max_rto: Time::ms(1000),
            initial_rto: None,
            dupack_threshold: 3,
            sack: true,
            delayed_ack: false,
            delayed_ack_timeout: Time::us(40),
            g: 1.0 / 16.0,
            init_alpha: 1.0,
            ecn: None,
            prio: 0,
        }
    }
}

impl TcpConfig {
    /// Field names accepted in the table.
    pub const FIELDS: &'static [&'static str] = &[
        "init_cwnd",
        "min_cwnd",
        "max_cwnd",
        "ssthresh",
        "min_rto",
        "max_rto",
        "initial_rto",
        "dupack_threshold",
        "sack",
        "delayed_ack",
        "delayed_ack_timeout",
        "g",
        "init_alpha",
        "ecn",
        "prio",
    ];

    /// Parse a `[transport]` table (JSON form, `protocol` removed). `null` means all defaults.
    pub fn parse(cfg: &serde_json::Value) -> Result<TcpConfig, TcpConfigError> {
        if cfg.is_null() {
            return Ok(TcpConfig::default());
        }
        if !cfg.is_object() {
            return Err(TcpConfigError::Parse(FieldError::invalid(
                "transport",
                format!("expected a table of tcp/dctcp settings, found {cfg}"),
                "write the settings as key = value pairs under [transport]",
            )));
        }
        crate::config::from_table(cfg, "transport").map_err(TcpConfigError::Parse)
    }

    /// Validate and resolve against the network.
    pub fn resolve(&self, net: &NetInfo, dctcp: bool) -> Result<TcpParams, TcpConfigError> {
        let bad =
            |field: &str, value: String, fix: String| TcpConfigError::OutOfRange { field: field.into(), value, fix };
        if net.mtu.0 <= net.header.0 {
            return Err(TcpConfigError::Network {
                field: "network.mtu".into(),
                msg: format!("MTU {} leaves no payload after the {} header; raise the MTU", net.mtu, net.header),
            });
        }
        let mss = net.mss();
        if self.init_cwnd == 0 {
            return Err(bad("init_cwnd", "0".into(), "must be at least 1 packet (10 is the usual value)".into()));
        }
        if self.min_cwnd == 0 {
            return Err(bad("min_cwnd", "0".into(), "must be at least 1 packet (2 as in Linux DCTCP)".into()));
        }
        let init_cwnd = self.init_cwnd.saturating_mul(mss);
        let min_cwnd = self.min_cwnd.saturating_mul(mss);
        let max_cwnd = match self.max_cwnd {
            None => u64::MAX,
            Some(w) => {
                let b = w.bytes(mss);
                if b < init_cwnd.max(min_cwnd) {
                    return Err(bad(
                        "max_cwnd",
                        w.show(),
                        format!(
                            "must be at least init_cwnd and min_cwnd ({} B); remove it for no cap",
                            init_cwnd.max(min_cwnd)
                        ),
                    ));
                }
                b
            }
        };
        let init_ssthresh = match self.ssthresh {
            None => u64::MAX,
            Some(w) => {
                let b = w.bytes(mss);
                if b < mss {
                    return Err(bad("ssthresh", w.show(), "must be at least 1 packet; remove it for infinite".into()));
                }
                b
            }
        };
        if self.min_rto == Time::ZERO {
            return Err(bad(
                "min_rto",
                format!("\"{}\"", self.min_rto),
                "must be > 0, e.g. \"1ms\" (a zero floor makes every queueing delay a timeout)".into(),
            ));
        }
        if self.max_rto < self.min_rto {
            return Err(bad(
                "max_rto",
                format!("\"{}\"", self.max_rto),
                format!("must be >= transport.min_rto ({})", self.min_rto),
            ));
        }
        if let Some(t) = self.initial_rto {
            if t == Time::ZERO {
                return Err(bad(
                    "initial_rto",
                    "\"0ps\"".into(),
                    "must be > 0; remove it for max(min_rto, 3 x base RTT)".into(),
                ));
            }
        }
        if self.dupack_threshold == 0 {
            return Err(bad("dupack_threshold", "0".into(), "must be at least 1 (3 is standard)".into()));
        }
        if self.delayed_ack_timeout == Time::ZERO {
            return Err(bad("delayed_ack_timeout", "\"0ps\"".into(), "must be > 0, e.g. \"40us\"".into()));
        }
        if !(self.g > 0.0 && self.g <= 1.0) {
            return Err(bad("g", self.g.to_string(), "must be in (0, 1]; DCTCP uses 1/16 = 0.0625".into()));
        }
        if !(0.0..=1.0).contains(&self.init_alpha) {
            return Err(bad("init_alpha", self.init_alpha.to_string(), "must be in [0, 1]".into()));
        }
        let ecn = self.ecn.unwrap_or(dctcp);
        if dctcp && !ecn {
            return Err(bad(
                "ecn",
                "false".into(),
                "DCTCP needs ECN; remove transport.ecn or use protocol = \"tcp\"".into(),
            ));
        }
        let classes = net.priorities.clamp(1, 8);
        if self.prio >= classes {
            return Err(bad(
                "prio",
                self.prio.to_string(),
                format!("must be below the {classes} priority classes (0 = highest)"),
            ));
        }
        Ok(TcpParams {
            mss,
            header: net.header.0,
            ctrl_size: net.ctrl_size.0,
            init_cwnd: init_cwnd.min(max_cwnd),
            min_cwnd,
            max_cwnd,
            init_ssthresh,
            min_rto: self.min_rto,
            max_rto: self.max_rto,
            initial_rto: self.initial_rto,
            dupack_threshold: self.dupack_threshold,
            sack: self.sack,
            delayed_ack: self.delayed_ack,
            delayed_ack_timeout: self.delayed_ack_timeout,
            dctcp,
            ecn,
            g: self.g,
            init_alpha: if dctcp { self.init_alpha } else { 1.0 },
            prio: self.prio,
            swift: None,
            tsq: net.host.tsq_params(),
            cwnd_validation: net.host.cwnd_validation,
        })
    }
}

/// Resolved, validated parameters (sizes in bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct TcpParams {
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    pub init_cwnd: u64,
    pub min_cwnd: u64,
    /// `u64::MAX` = no cap.
    pub max_cwnd: u64,
    /// `u64::MAX` = infinite.
    pub init_ssthresh: u64,
    pub min_rto: Time,
    pub max_rto: Time,
    pub initial_rto: Option<Time>,
    pub dupack_threshold: u32,
    pub sack: bool,
    pub delayed_ack: bool,
    pub delayed_ack_timeout: Time,
    /// DCTCP window law (else RFC 3168 halving on ECE when `ecn`).
    pub dctcp: bool,
    pub ecn: bool,
    pub g: f64,
    pub init_alpha: f64,
    pub prio: u8,
    /// Swift's delay-based window law instead of Reno/DCTCP (set by `swift.rs`).
    pub swift: Option<SwiftParams>,
    /// The per-flow NIC occupancy limit (`host.tsq`; None: off).
    pub tsq: Option<TsqParams>,
    /// Grow the window only while the flow is window-limited (`host.cwnd_validation`).
    pub cwnd_validation: bool,
}

impl TcpParams {
    /// The parameters of [`Standard`]: DCTCP's law when `dctcp`, Reno's otherwise.
    pub fn standard_law(&self) -> StandardParams {
        self.dctcp.then_some(DctcpParams { g: self.g, init_alpha: self.init_alpha })
    }
}

/// A `[transport]` table error for tcp/dctcp. `field()` names the offending key.
#[derive(Clone, Debug, PartialEq)]
pub enum TcpConfigError {
    /// An unknown field, a value of the wrong type or an unparsable time/size
    /// (from [`crate::config::from_table`], which names the field).
    Parse(FieldError),
    /// A well-formed value outside its range; `fix` says what to write instead.
    OutOfRange { field: String, value: String, fix: String },
    /// The network description makes TCP impossible.
    Network { field: String, msg: String },
}

impl TcpConfigError {
    /// The offending key, e.g. `transport.min_rto`.
    pub fn field(&self) -> String {
        match self {
            TcpConfigError::Parse(e) => e.field(),
            TcpConfigError::OutOfRange { field, .. } => format!("transport.{field}"),
            TcpConfigError::Network { field, .. } => field.clone(),
        }
    }
}

impl fmt::Display for TcpConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TcpConfigError::Parse(e) => write!(f, "{e}"),
            TcpConfigError::OutOfRange { value, fix, .. } => {
                write!(f, "{} = {value}: {fix}", self.field())
            }
            TcpConfigError::Network { field, msg } => write!(f, "{field}: {msg}"),
        }
    }
}

impl std::error::Error for TcpConfigError {}

struct TimeVisitor;

impl<'de> Visitor<'de> for TimeVisitor {
    type Value = Time;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a time: a string with a unit such as \"200us\" or \"1ms\"")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Time, E> {
        Err(E::custom(crate::units::bare_number_error(v, "time")))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Time, E> {
        Err(E::custom(crate::units::bare_number_error(v, "time")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Time, E> {
        Err(E::custom(crate::units::bare_number_error(v, "time")))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Time, E> {
        Time::parse(v).map_err(E::custom)
    }
}

fn de_time<'de, D: Deserializer<'de>>(d: D) -> Result<Time, D::Error> {
    d.deserialize_any(TimeVisitor)
}

fn de_opt_time<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Time>, D::Error> {
    d.deserialize_any(TimeVisitor).map(Some)
}

struct WindowVisitor;

impl<'de> Visitor<'de> for WindowVisitor {
    type Value = Window;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a window: a number of packets, or a size string such as \"64KB\"")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Window, E> {
        Ok(Window::Packets(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Window, E> {
        u64::try_from(v).map(Window::Packets).map_err(|_| E::custom(format!("window {v} is negative")))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Window, E> {
        Bytes::parse(v).map(Window::Size).map_err(E::custom)
    }
}

fn de_opt_window<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Window>, D::Error> {
    d.deserialize_any(WindowVisitor).map(Some)
}

// ------------------------------------------------------------------------------------------
// Shared helpers
// ------------------------------------------------------------------------------------------

/// What a sender or receiver callback needs besides its own state.
pub struct FlowCtx<'a> {
    pub now: Time,
    pub flow: &'a FlowInfo,
    pub params: &'a TcpParams,
    pub policy: &'a dyn PriorityPolicy,
    pub out: &'a mut Actions,
}

/// Insert `[a, b)` into a sorted list of disjoint, non-adjacent ranges, merging; returns the
/// number of bytes that were not already covered.
fn range_insert(v: &mut Vec<(u64, u64)>, a: u64, b: u64) -> u64 {
    if a >= b {
        return 0;
    }
    let i = v.partition_point(|&(_, y)| y < a);
    let mut j = i;
    let (mut na, mut nb) = (a, b);
    let mut covered = 0;
    while j < v.len() && v[j].0 <= b {
        let (x, y) = v[j];
        covered += y.min(b).saturating_sub(x.max(a));
        na = na.min(x);
        nb = nb.max(y);
        j += 1;
    }
    if j == i + 1 && v[i] == (na, nb) {
        return 0;
    }
    v.splice(i..j, std::iter::once((na, nb)));
    (b - a) - covered
}

#[allow(clippy::too_many_arguments)]
fn ack_packet(
    cx: &FlowCtx,
    ack: u64,
    block: (u64, u64),
    covered: u64,
    ece: bool,
    ts: Time,
    data_prio: u8,
    hold: Time,
) -> Packet {
    let mut aux2 = covered.min(ACK_COVERED_MASK as u64) as u32;
    if ece {
        aux2 |= ACK_ECE;
    }
    Packet {
        src: cx.flow.dst,
        dst: cx.flow.src,
        flow: cx.flow.id,
        size: cx.params.ctrl_size as u32,
        payload: 0,
        prio: cx.policy.ack_prio(cx.flow, data_prio),
        ecn: Ecn::NotEct,
        flags: PacketFlags::default(),
        kind: KIND_ACK,
        seq: block.0,
        ack,
        aux: block.1,
        ts,
        aux2,
        rank: (hold.0 / 1000).min(u32::MAX as u64) as u32,
        ..Packet::default()
    }
}

// ------------------------------------------------------------------------------------------
// Sender
// ------------------------------------------------------------------------------------------

/// Loss-recovery state of a sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// No loss recovery in progress.
    Open,
    /// NewReno fast recovery (SACK off).
    NewReno,
    /// RFC 6675 SACK-based recovery.
    Sack,
}

#[derive(Clone, Copy)]
enum NextSeg {
    Hole,
    New,
    Rescue,
}

/// The sending half of one TCP/DCTCP flow, generic over its window law (`cc.rs`).
#[derive(Clone, Debug)]
pub struct TcpSender<C: CongestionControl = Standard> {
    id: FlowId,
    size: u64,
    mss: u64,
    una: u64,
    nxt: u64,
    max: u64,
    cwnd: u64,
    ssthresh: u64,
    ca_credit: u64,
    dupacks: u32,
    recovery: Recovery,
    recover: u64,
    high_rxt: u64,
    rescue_rxt: Option<u64>,
    partial_seen: bool,
    /// SACK scoreboard: sorted disjoint ranges above `una`.
    sb: Vec<(u64, u64)>,
    /// Ranges delivered by other means ([`TcpSender::note_delivered`]): skipped when
    /// sending, never loss evidence. Sorted, disjoint, above `una`.
    known: Vec<(u64, u64)>,
    srtt: u64,
    rttvar: u64,
    has_rtt: bool,
    rto: Time,
    rto_series: u32,
    rto_timer: TimerSlot,
    rto_on: bool,
    rto_deadline: Time,
    /// The window law (DCTCP's alpha lives there).
    cc: C,
    win_acked: u64,
    win_marked: u64,
    alpha_end: u64,
    in_cwr: bool,
    cwr_end: u64,
    bytes_sent: u64,
    retx_bytes: u64,
    timeouts: u32,
    ecn_cuts: u32,
    fast_retx: u32,
    max_cwnd_seen: u64,
    /// Swift's window law (None: Reno/DCTCP).
    swift: Option<Box<SwiftCc>>,
    /// Wire bytes of this sender's data packets handed to the NIC and not yet transmitted
    /// (`host.tsq`): released by [`TcpSender::on_tx_complete`].
    nic_bytes: u64,
    /// A send stopped at the NIC limit: the next transmit completion resumes sending.
    tsq_throttled: bool,
    /// Window validation: the current round ends when `una` reaches `round_end`.
    round_end: u64,
    /// A send was stopped by the window in the current round.
    round_cwnd_limited: bool,
    /// The largest flight (bytes) seen at a send in the current round.
    round_max_flight: u64,
    /// Peak of `nic_bytes` (diagnostics, tests).
    max_nic_bytes: u64,
    /// The receive window the receiver last advertised, bytes (`u64::MAX`: none yet). The
    /// sender keeps at most min(cwnd, rwnd) in flight.
    rwnd: u64,
}

impl TcpSender<Standard> {
    /// A sender with `tcp`'s or `dctcp`'s law (by `p.dctcp`).
    pub fn new(flow: &FlowInfo, p: &TcpParams) -> TcpSender {
        TcpSender::with_law(flow, p, &p.standard_law())
    }
}

impl<C: CongestionControl> TcpSender<C> {
    /// A sender with the window law `C` (parameters `law`).
    pub fn with_law(flow: &FlowInfo, p: &TcpParams, law: &C::Params) -> TcpSender<C> {
        let rto = p.initial_rto.unwrap_or_else(|| p.min_rto.max(flow.base_rtt * 3)).min(p.max_rto);
        TcpSender {
            id: flow.id,
            size: flow.size.0,
            mss: p.mss,
            una: 0,
            nxt: 0,
            max: 0,
            cwnd: p.init_cwnd,
            ssthresh: p.init_ssthresh,
            ca_credit: 0,
            dupacks: 0,
            recovery: Recovery::Open,
            recover: 0,
            high_rxt: 0,
            rescue_rxt: None,
            partial_seen: false,
            sb: Vec::new(),
            known: Vec::new(),
            srtt: 0,
            rttvar: 0,
            has_rtt: false,
            rto,
            rto_series: 0,
            rto_timer: TimerSlot::default(),
            rto_on: false,
            rto_deadline: Time::ZERO,
            cc: C::new(flow, law),
            win_acked: 0,
            win_marked: 0,
            alpha_end: 0,
            in_cwr: false,
            cwr_end: 0,
            bytes_sent: 0,
            retx_bytes: 0,
            timeouts: 0,
            ecn_cuts: 0,
            fast_retx: 0,
            max_cwnd_seen: p.init_cwnd,
            swift: None,
            nic_bytes: 0,
            tsq_throttled: false,
            round_end: 0,
            round_cwnd_limited: false,
            round_max_flight: 0,
            max_nic_bytes: 0,
            rwnd: u64::MAX,
        }
        .with_swift(flow, p)
    }

    fn with_swift(mut self, flow: &FlowInfo, p: &TcpParams) -> TcpSender<C> {
        if let Some(sp) = &p.swift {
            let sw = SwiftCc::new(sp, p.init_cwnd as f64 / p.mss as f64, flow.base_rtt);
            self.swift = Some(Box::new(sw));
            self.sync_swift();
            self.max_cwnd_seen = self.cwnd;
        }
        self
    }

    /// Swift's state, when this sender runs Swift's window law.
    pub fn swift(&self) -> Option<&SwiftCc> {
        self.swift.as_deref()
    }

    /// Copy Swift's window into the byte window (and ssthresh, which leaving SACK recovery
    /// restores).
    fn sync_swift(&mut self) {
        if let Some(sw) = &self.swift {
            self.cwnd = sw.cwnd_bytes(self.mss);
            self.ssthresh = self.cwnd;
            self.ca_credit = 0;
            self.max_cwnd_seen = self.max_cwnd_seen.max(self.cwnd);
        }
    }

    /// Run Swift's ACK law for `acked` newly acknowledged bytes.
    fn swift_ack(&mut self, p: &TcpParams, now: Time, pkt: &Packet, acked: u64) {
        if let (Some(sw), Some(sp)) = (self.swift.as_deref_mut(), p.swift.as_ref()) {
            let rtt = now.saturating_sub(pkt.ts);
            let remote = Time(pkt.rank as u64 * 1000);
            let hops = (pkt.hops as u32).saturating_sub(1);
            sw.on_ack(sp, now, rtt, remote, hops, acked as f64 / self.mss as f64);
            self.sync_swift();
        }
    }

    /// Handle a firing [`TIMER_PACE`] token generation (Swift's pacing below one packet).
    pub fn on_pace_timer(&mut self, cx: &mut FlowCtx, gen: u32) {
        let fired = self.swift.as_deref_mut().is_some_and(|sw| sw.pace.fire(gen));
        if fired && self.una < self.size {
            self.send_available(cx);
        }
    }

    /// Swift's pacing gate: true if a packet may leave now; otherwise arms the pacing timer.
    fn pace_ok(&mut self, cx: &mut FlowCtx) -> bool {
        let Some(sw) = self.swift.as_deref_mut() else { return true };
        if sw.may_send(cx.now) {
            return true;
        }
        let at = sw.next_tx();
        if !(sw.pace.is_armed() && sw.pace.at == at) {
            let g = sw.pace.arm(at);
            cx.out.timer(at, token(self.id, TIMER_PACE, g));
        }
        false
    }

    // ---- read-only state ----
    /// Wire bytes of this flow's data waiting in (or being sent by) the host NIC.
    pub fn nic_bytes(&self) -> u64 {
        self.nic_bytes
    }
    /// The largest `nic_bytes` so far.
    pub fn max_nic_bytes(&self) -> u64 {
        self.max_nic_bytes
    }
    /// The last send stopped at the per-flow NIC limit.
    pub fn tsq_throttled(&self) -> bool {
        self.tsq_throttled
    }
    /// The per-flow NIC limit in force now, bytes (`None`: `host.tsq` off).
    pub fn tsq_limit(&self, p: &TcpParams) -> Option<u64> {
        let t = p.tsq?;
        Some(t.limit(self.cwnd, self.ssthresh, self.has_rtt.then_some(self.srtt), self.mss + p.header))
    }
    /// Window validation: may an ACK grow the window now (`host.cwnd_validation`)?
    pub fn cwnd_limited(&self) -> bool {
        self.round_cwnd_limited || (self.cwnd < self.ssthresh && self.cwnd < 2 * self.round_max_flight)
    }
    /// Congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }
    /// The receiver's advertised window, bytes (`u64::MAX` until an ACK advertises one).
    pub fn rwnd(&self) -> u64 {
        self.rwnd
    }
    /// Slow-start threshold, bytes (`u64::MAX` = infinite).
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    /// DCTCP's estimate of the marked fraction.
    pub fn alpha(&self) -> f64 {
        self.cc.alpha()
    }
    /// The window law's state.
    pub fn law(&self) -> &C {
        &self.cc
    }
    /// Smoothed RTT, once sampled.
    pub fn srtt(&self) -> Option<Time> {
        self.has_rtt.then_some(Time(self.srtt))
    }
    pub fn rttvar(&self) -> Option<Time> {
        self.has_rtt.then_some(Time(self.rttvar))
    }
    /// Current retransmission timeout (backoff included).
    pub fn rto(&self) -> Time {
        self.rto
    }
    pub fn snd_una(&self) -> u64 {
        self.una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.nxt
    }
    /// Highest byte offset sent + 1.
    pub fn snd_max(&self) -> u64 {
        self.max
    }
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }
    pub fn in_cwr(&self) -> bool {
        self.in_cwr
    }
    /// Payload bytes put on the wire (retransmissions included).
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent
    }
    pub fn retx_bytes(&self) -> u64 {
        self.retx_bytes
    }
    pub fn timeouts(&self) -> u32 {
        self.timeouts
    }
    /// Window cuts caused by ECN-Echo.
    pub fn ecn_cuts(&self) -> u32 {
        self.ecn_cuts
    }
    /// Fast retransmits (entries into loss recovery by duplicate ACKs / SACK).
    pub fn fast_retransmits(&self) -> u32 {
        self.fast_retx
    }
    /// Largest cwnd this flow has had, bytes.
    pub fn max_cwnd_seen(&self) -> u64 {
        self.max_cwnd_seen
    }
    /// The SACK scoreboard (sorted, disjoint ranges above `snd_una`).
    pub fn scoreboard(&self) -> &[(u64, u64)] {
        &self.sb
    }
    /// Every byte has been acknowledged.
    pub fn is_done(&self) -> bool {
        self.una >= self.size && self.max >= self.size
    }
    pub fn stats(&self) -> FlowStats {
        FlowStats { retx_bytes: self.retx_bytes, timeouts: self.timeouts, ..FlowStats::default() }
    }

    // ---- driving ----

    /// Send the initial window.
    pub fn start(&mut self, cx: &mut FlowCtx) {
        if self.size == 0 {
            self.send_seg(cx, 0, 0);
            self.stop_rto();
            return;
        }
        self.send_available(cx);
        self.alpha_end = self.max;
    }

    /// Send whatever the window (or, in SACK recovery, the pipe) allows.
    pub fn send_available(&mut self, cx: &mut FlowCtx) {
        if self.recovery == Recovery::Sack {
            self.fill_sack(cx);
        } else {
            self.fill_normal(cx);
        }
    }

    /// One of this sender's data packets (`wire` bytes) has been transmitted by the host NIC:
    /// release its bytes from the NIC limit and, if that limit had stopped a send, send on.
    pub fn on_tx_complete(&mut self, cx: &mut FlowCtx, wire: u64) {
        self.nic_bytes = self.nic_bytes.saturating_sub(wire);
        if self.tsq_throttled {
            self.tsq_throttled = false;
            if self.una < self.size {
                self.send_available(cx);
            }
        }
    }

    /// The per-flow NIC limit (`host.tsq`) in force for the sends of one call (`u64::MAX`
    /// when off): computed once per call, since the window and RTT do not change within it.
    #[inline]
    fn nic_limit(&self, p: &TcpParams) -> u64 {
        if p.tsq.is_none() {
            return u64::MAX;
        }
        self.tsq_limit(p).unwrap_or(u64::MAX)
    }

    /// May a data packet go to the NIC under `limit`? Linux sends while the flow's queued
    /// bytes do not exceed the limit, so one packet may overshoot it; otherwise the sender
    /// is marked throttled until a transmit completion.
    #[inline]
    fn nic_room(&mut self, limit: u64) -> bool {
        if self.nic_bytes > limit {
            self.tsq_throttled = true;
            return false;
        }
        true
    }

    /// Window validation bookkeeping at the end of a send attempt: `flight` bytes in
    /// flight, `window_full` whether the window stopped it. A round lasts until `una`
    /// passes the `snd_nxt` of its start; within it a window-limited attempt is
    /// remembered, otherwise the largest flight.
    fn note_send_attempt(&mut self, flight: u64, window_full: bool) {
        if self.una >= self.round_end || window_full || (!self.round_cwnd_limited && flight > self.round_max_flight) {
            self.round_cwnd_limited = window_full;
            self.round_max_flight = flight;
            self.round_end = self.nxt;
        }
    }

    /// Record bytes delivered by other means (e.g. a second loop of an embedding transport)
    /// so the sender skips them.
    pub fn mark_delivered(&mut self, a: u64, b: u64) {
        let a = a.max(self.una);
        let b = b.min(self.size);
        range_insert(&mut self.sb, a, b);
    }

    /// Record bytes the receiver is known to hold through other means (an embedding
    /// transport's second loop). Unlike [`TcpSender::mark_delivered`] they are not SACKed:
    /// the sender skips them when sending (and does not count them in flight), but they are
    /// not evidence that the bytes below them are lost (RFC 6675 IsLost counts SACKs only).
    pub fn note_delivered(&mut self, a: u64, b: u64) {
        let a = a.max(self.una);
        let b = b.min(self.size);
        range_insert(&mut self.known, a, b);
    }

    /// Process an ACK (`kind == KIND_ACK`).
    pub fn on_ack(&mut self, cx: &mut FlowCtx, pkt: &Packet) {
        let p = cx.params;
        let ack = pkt.ack.min(self.size);
        let ece = pkt.aux2 & ACK_ECE != 0;
        let covered = (pkt.aux2 & ACK_COVERED_MASK) as u64;
        if ack >= self.una {
            if let Some(w) = ack_rwnd(pkt, self.mss) {
                self.rwnd = w;
            }
        }
        if ack > self.max {
            // Delivered by someone else (an embedding transport's second loop).
            self.max = ack;
        }
        let mut new_sack = 0;
        if p.sack && pkt.aux > pkt.seq && pkt.aux > ack {
            new_sack = range_insert(&mut self.sb, pkt.seq.max(ack), pkt.aux.min(self.max));
        }
        if p.ecn {
            self.win_acked += covered;
            if ece {
                self.win_marked += covered;
            }
        }
        if ack > self.una {
            let newly = ack - self.una;
            self.una = ack;
            if self.nxt < ack {
                self.nxt = ack;
            }
            if !self.sb.is_empty() || !self.known.is_empty() {
                self.trim_scoreboard();
            }
            self.dupacks = 0;
            self.rto_series = 0;
            self.rtt_sample(p, cx.now.saturating_sub(pkt.ts));
            self.swift_ack(p, cx.now, pkt, newly);
            if p.ecn && self.una >= self.alpha_end {
                self.update_alpha();
            }
            if self.in_cwr && self.una >= self.cwr_end {
                self.in_cwr = false;
            }
            let cut = ece && self.ecn_react(cx);
            let mut restart = true;
            match self.recovery {
                Recovery::Open => {
                    if !cut && self.swift.is_none() {
                        self.grow(cx, newly);
                    }
                }
                Recovery::NewReno => {
                    if self.una >= self.recover {
                        let flight = self.max - self.una;
                        self.cwnd = self.ssthresh.min(flight.max(self.mss) + self.mss);
                        self.recovery = Recovery::Open;
                    } else {
                        // Partial ACK: retransmit the next hole, deflate.
                        let e = self.seg_end(self.una);
                        self.send_seg(cx, self.una, e);
                        self.cwnd = self.cwnd.saturating_sub(newly);
                        if newly >= self.mss {
                            self.cwnd += self.mss;
                        }
                        self.cwnd = self.cwnd.max(self.mss);
                        restart = !self.partial_seen;
                        self.partial_seen = true;
                    }
                }
                Recovery::Sack => {
                    if self.una >= self.recover {
                        self.cwnd = self.ssthresh;
                        self.recovery = Recovery::Open;
                    } else if self.high_rxt < self.una {
                        self.high_rxt = self.una;
                    }
                }
            }
            if self.una >= self.max {
                self.stop_rto();
            } else if restart {
                self.restart_rto(cx);
            }
        } else if ack == self.una && self.una < self.max {
            if !p.sack || new_sack > 0 {
                self.dupacks += 1;
            }
            if new_sack > 0 {
                self.swift_ack(p, cx.now, pkt, new_sack);
            }
            if ece {
                self.ecn_react(cx);
            }
            match self.recovery {
                Recovery::NewReno => self.cwnd += self.mss,
                Recovery::Sack => {}
                Recovery::Open => {
                    if self.una >= self.recover
                        && (self.dupacks >= p.dupack_threshold || (p.sack && self.is_lost(p, self.una)))
                    {
                        self.enter_recovery(cx);
                        return;
                    }
                }
            }
        }
        if self.una < self.size {
            self.send_available(cx);
        }
    }

    /// Handle a firing [`TIMER_RTO`] token generation. Returns true if a timeout was processed.
    pub fn on_rto_timer(&mut self, cx: &mut FlowCtx, gen: u32) -> bool {
        if !self.rto_timer.fire(gen) || !self.rto_on {
            return false;
        }
        if cx.now < self.rto_deadline {
            // The deadline moved later since this event was armed: re-arm.
            let d = self.rto_deadline;
            let g = self.rto_timer.arm(d);
            cx.out.timer(d, token(self.id, TIMER_RTO, g));
            return false;
        }
        if self.is_done() {
            self.rto_on = false;
            return false;
        }
        let p = cx.params;
        self.timeouts += 1;
        if let (Some(sw), Some(sp)) = (self.swift.as_deref_mut(), p.swift.as_ref()) {
            sw.on_rto(sp, cx.now);
            self.sync_swift();
        } else {
            let st = self.cc_state(cx);
            let (ssthresh, cwnd) = self.cc.on_timeout(&st, self.rto_series == 0);
            if let Some(t) = ssthresh {
                self.ssthresh = t;
            }
            self.cwnd = cwnd;
        }
        self.rto_series += 1;
        self.ca_credit = 0;
        self.recovery = Recovery::Open;
        self.dupacks = 0;
        self.recover = self.max;
        self.high_rxt = self.una;
        self.nxt = self.una;
        self.in_cwr = false;
        self.rto = (self.rto * 2).min(p.max_rto);
        self.restart_rto(cx);
        self.fill_normal(cx);
        true
    }

    // ---- internals ----

    fn rtt_sample(&mut self, p: &TcpParams, r: Time) {
        let r = r.0;
        if !self.has_rtt {
            self.srtt = r;
            self.rttvar = r / 2;
            self.has_rtt = true;
        } else {
            let d = self.srtt.abs_diff(r);
            self.rttvar = (3 * self.rttvar + d) / 4;
            self.srtt = (7 * self.srtt + r) / 8;
        }
        let rto = Time(self.srtt.saturating_add(self.rttvar.saturating_mul(4)));
        self.rto = rto.max(p.min_rto).min(p.max_rto);
    }

    /// What the window law may read (see [`CcState`]).
    #[inline]
    fn cc_state(&self, cx: &FlowCtx) -> CcState {
        CcState {
            now: cx.now,
            mss: self.mss,
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            una: self.una,
            max: self.max,
            size: self.size,
            srtt: self.srtt(),
            base_rtt: cx.flow.base_rtt,
        }
    }

    fn update_alpha(&mut self) {
        if self.win_acked > 0 {
            self.cc.on_window_end(self.win_acked, self.win_marked);
        }
        self.win_acked = 0;
        self.win_marked = 0;
        self.alpha_end = self.max;
    }

    /// React to ECE; returns true if the window was cut.
    fn ecn_react(&mut self, cx: &FlowCtx) -> bool {
        let p = cx.params;
        if !p.ecn || self.in_cwr || self.recovery != Recovery::Open {
            return false;
        }
        let st = self.cc_state(cx);
        let w = self.cc.ecn_window(&st).max(p.min_cwnd);
        self.ssthresh = w;
        self.cwnd = w.min(self.cwnd);
        self.ca_credit = 0;
        self.in_cwr = true;
        self.cwr_end = self.max;
        self.ecn_cuts += 1;
        true
    }

    fn grow(&mut self, cx: &FlowCtx, newly: u64) {
        let p = cx.params;
        if p.cwnd_validation && !self.cwnd_limited() {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + newly.min(2 * self.mss)).min(self.ssthresh);
        } else {
            let st = self.cc_state(cx);
            self.ca_credit += self.cc.ca_credit(&st, newly);
            if self.ca_credit >= self.cwnd {
                let inc = self.ca_credit / self.cwnd;
                self.ca_credit -= inc * self.cwnd;
                self.cwnd += inc;
            }
        }
        if self.cwnd > p.max_cwnd {
            self.cwnd = p.max_cwnd;
        }
        if self.cwnd > self.max_cwnd_seen {
            self.max_cwnd_seen = self.cwnd;
        }
    }

    fn enter_recovery(&mut self, cx: &mut FlowCtx) {
        let p = cx.params;
        self.fast_retx += 1;
        if let (Some(sw), Some(sp)) = (self.swift.as_deref_mut(), p.swift.as_ref()) {
            sw.on_fast_recovery(sp, cx.now);
            self.sync_swift();
        } else {
            let st = self.cc_state(cx);
            self.ssthresh = self.cc.loss_ssthresh(&st);
        }
        self.recover = self.max;
        self.in_cwr = false;
        self.ca_credit = 0;
        let s = self.una;
        let e = self.seg_end(s);
        if p.sack {
            self.recovery = Recovery::Sack;
            self.rescue_rxt = None;
            self.cwnd = self.ssthresh;
            self.send_seg(cx, s, e);
            self.high_rxt = e;
            self.fill_sack(cx);
        } else {
            self.recovery = Recovery::NewReno;
            self.partial_seen = false;
            self.send_seg(cx, s, e);
            self.cwnd = self.ssthresh + p.dupack_threshold as u64 * self.mss;
            self.fill_normal(cx);
        }
    }

    fn trim_scoreboard(&mut self) {
        let una = self.una;
        for v in [&mut self.sb, &mut self.known] {
            let k = v.partition_point(|&(_, b)| b <= una);
            if k > 0 {
                v.drain(..k);
            }
            if let Some(first) = v.first_mut() {
                if first.0 < una {
                    first.0 = una;
                }
            }
        }
    }

    /// End of the segment starting at `s`: the MSS grid, the flow end, the next SACKed range.
    fn seg_end(&self, s: u64) -> u64 {
        let mut e = ((s / self.mss + 1) * self.mss).min(self.size);
        for v in [&self.sb, &self.known] {
            // The first range starting after `s` (ranges are sorted and disjoint).
            if let Some(&(a, _)) = v.get(v.partition_point(|&(a, _)| a <= s)) {
                e = e.min(a);
            }
        }
        e
    }

    /// First byte at or after `s` that is neither SACKed nor known delivered.
    fn skip_sacked(&self, mut s: u64) -> u64 {
        loop {
            let t = skip_in(&self.known, skip_in(&self.sb, s));
            if t == s {
                return s;
            }
            s = t;
        }
    }

    /// Known-delivered bytes in `[a, b)` that are not SACKed.
    fn known_unsacked(&self, a: u64, b: u64) -> u64 {
        let mut n = 0;
        // Only the known ranges that intersect [a, b): from the first ending after `a`.
        for &(x, y) in &self.known[self.known.partition_point(|&(_, y)| y <= a)..] {
            if x >= b {
                break;
            }
            let (x, y) = (x.max(a), y.min(b));
            if x < y {
                n += (y - x) - overlap(&self.sb, x, y);
            }
        }
        n
    }

    fn sacked_between(&self, a: u64, b: u64) -> u64 {
        overlap(&self.sb, a, b)
    }

    /// Start of the range below which every un-SACKed byte is deemed lost (RFC 6675 IsLost).
    fn lost_boundary(&self, p: &TcpParams) -> u64 {
        let thr = (p.dupack_threshold as u64 - 1) * self.mss;
        let mut bytes = 0;
        let mut segs = 0;
        for &(a, b) in self.sb.iter().rev() {
            bytes += b - a;
            segs += (b - 1) / self.mss - a / self.mss + 1;
            if bytes > thr || segs >= p.dupack_threshold as u64 {
                return a;
            }
        }
        self.una
    }

    fn is_lost(&self, p: &TcpParams, s: u64) -> bool {
        s < self.lost_boundary(p)
    }

    /// RFC 6675 SetPipe.
    fn pipe(&self, p: &TcpParams) -> u64 {
        let l = self.lost_boundary(p);
        let hr = self.high_rxt;
        let mut pipe = 0;
        let mut pos = self.una;
        let hole = |a: u64, b: u64| -> u64 {
            if a >= b {
                return 0;
            }
            // Not lost: counted once; retransmitted: counted (again).
            b.saturating_sub(a.max(l)) + hr.min(b).saturating_sub(a)
        };
        for &(a, b) in &self.sb {
            pipe += hole(pos, a.min(self.max));
            pos = pos.max(b);
        }
        pipe += hole(pos, self.max);
        if !self.known.is_empty() {
            // Known-delivered holes are not in flight.
            pipe = pipe.saturating_sub(self.known_unsacked(l.max(self.una), self.max));
        }
        pipe
    }

    fn fill_normal(&mut self, cx: &mut FlowCtx) {
        // Bytes outstanding below the next segment: neither SACKed nor known delivered.
        // Computed once; each segment sent then adds exactly its length, since a segment
        // never holds SACKed or known bytes (`seg_end` stops at the next range) and the bytes
        // `skip_sacked` passes over are all SACKed or known (so they add nothing). Summing the
        // ranges afresh for every segment cost O(ranges) per packet for flows holding
        // hundreds of them (many losses, or ranges another loop delivered).
        let plain = self.sb.is_empty() && self.known.is_empty();
        let mut s = self.nxt;
        let mut outstanding = if plain {
            s - self.una
        } else {
            s = self.skip_sacked(s);
            (s - self.una) - self.sacked_between(self.una, s) - self.known_unsacked(self.una, s)
        };
        let mut window_full = false;
        let limit = self.nic_limit(cx.params);
        while s < self.size {
            let e = self.seg_end(s);
            if outstanding + (e - s) > self.cwnd.min(self.rwnd) {
                // Window validation counts only the congestion window's limit.
                window_full = self.cwnd <= self.rwnd;
                break;
            }
            if !self.nic_room(limit) || !self.pace_ok(cx) {
                break;
            }
            self.send_seg(cx, s, e);
            self.nxt = e;
            outstanding += e - s;
            s = if plain { e } else { self.skip_sacked(e) };
        }
        self.note_send_attempt(outstanding, window_full);
    }

    fn fill_sack(&mut self, cx: &mut FlowCtx) {
        let p = cx.params;
        let mut pipe = self.pipe(p);
        let limit = self.nic_limit(p);
        loop {
            let l = self.lost_boundary(p);
            let high_sacked = self.sb.last().map_or(self.una, |r| r.1);
            let s1 = self.skip_sacked(self.high_rxt.max(self.una));
            let s2 = self.skip_sacked(self.nxt);
            let (s, e, kind) = if s1 < l && s1 < self.max {
                // Rule 1: the lowest lost hole above HighRxt.
                (s1, self.seg_end(s1), NextSeg::Hole)
            } else if s2 < self.size {
                // Rule 2: new data.
                (s2, self.seg_end(s2), NextSeg::New)
            } else if s1 < high_sacked {
                // Rule 3: an un-SACKed hole below the highest SACKed byte, not yet deemed lost.
                (s1, self.seg_end(s1), NextSeg::Hole)
            } else if let Some(h) = self.rescue_candidate() {
                // Rule 4: once per recovery, the segment holding the highest un-SACKed byte.
                let a = ((h / self.mss) * self.mss).max(self.una);
                (a, self.seg_end(a), NextSeg::Rescue)
            } else {
                break;
            };
            if pipe + (e - s) > self.cwnd.min(self.rwnd) {
                self.note_send_attempt(pipe, self.cwnd <= self.rwnd);
                break;
            }
            if !self.nic_room(limit) || !self.pace_ok(cx) {
                break;
            }
            self.send_seg(cx, s, e);
            pipe += e - s;
            match kind {
                NextSeg::Hole => self.high_rxt = e,
                NextSeg::New => self.nxt = e,
                NextSeg::Rescue => self.rescue_rxt = Some(self.recover),
            }
        }
    }

    /// RFC 6675 NextSeg rule 4: the highest un-SACKed outstanding byte, if no rescue
    /// retransmission happened in this recovery yet.
    fn rescue_candidate(&self) -> Option<u64> {
        if self.rescue_rxt.is_some_and(|r| r >= self.una) || self.una >= self.max {
            return None;
        }
        let h = match self.sb.last() {
            Some(&(a, b)) if b >= self.max => a.checked_sub(1)?,
            _ => self.max - 1,
        };
        (h >= self.una && h >= self.high_rxt).then_some(h)
    }

    fn send_seg(&mut self, cx: &mut FlowCtx, s: u64, e: u64) {
        let p = cx.params;
        let payload = e - s;
        let retx = s < self.max;
        let pkt = Packet {
            src: cx.flow.src,
            dst: cx.flow.dst,
            flow: self.id,
            size: (payload + p.header) as u32,
            payload: payload as u32,
            prio: cx.policy.prio(cx.flow, self.bytes_sent, s),
            ecn: if p.ecn { Ecn::Ect } else { Ecn::NotEct },
            flags: PacketFlags(PacketFlags::DATA),
            kind: KIND_DATA,
            seq: s,
            ts: cx.now,
            aux2: if retx { DATA_RETX } else { 0 },
            ..Packet::default()
        };
        cx.out.send(pkt);
        self.nic_bytes += payload + p.header;
        self.max_nic_bytes = self.max_nic_bytes.max(self.nic_bytes);
        if let Some(sw) = self.swift.as_deref_mut() {
            sw.on_sent(cx.now);
        }
        self.bytes_sent += payload;
        if retx {
            self.retx_bytes += e.min(self.max) - s;
        }
        if e > self.max {
            self.max = e;
        }
        if !self.rto_on {
            self.restart_rto(cx);
        }
    }

    fn restart_rto(&mut self, cx: &mut FlowCtx) {
        let d = cx.now + self.rto;
        self.rto_on = true;
        self.rto_deadline = d;
        if self.rto_timer.is_armed() && self.rto_timer.at <= d {
            return; // the armed event fires first and re-arms to the deadline
        }
        let g = self.rto_timer.arm(d);
        cx.out.timer(d, token(self.id, TIMER_RTO, g));
    }

    fn stop_rto(&mut self) {
        self.rto_on = false;
    }
}

// ------------------------------------------------------------------------------------------
// Receiver
// ------------------------------------------------------------------------------------------

/// The receiving half of one TCP/DCTCP flow.
#[derive(Clone, Debug)]
pub struct TcpReceiver {
    size: u64,
    rcv_nxt: u64,
    /// Out-of-order ranges above `rcv_nxt`, sorted, disjoint.
    ooo: Vec<(u64, u64)>,
    complete: bool,
    /// Payload bytes received since the last ACK.
    pend_bytes: u64,
    pend_ts: Time,
    /// Arrival time of the oldest data packet the pending ACK covers.
    pend_at: Time,
    pend_ce: bool,
    pend_prio: u8,
    delack: TimerSlot,
    dup_bytes: u64,
}

impl TcpReceiver {
    pub fn new(flow: &FlowInfo) -> TcpReceiver {
        TcpReceiver {
            size: flow.size.0,
            rcv_nxt: 0,
            ooo: Vec::new(),
            complete: false,
            pend_bytes: 0,
            pend_ts: Time::ZERO,
            pend_at: Time::ZERO,
            pend_ce: false,
            pend_prio: 0,
            delack: TimerSlot::default(),
            dup_bytes: 0,
        }
    }

    /// Next byte expected (cumulative ACK).
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn is_complete(&self) -> bool {
        self.complete
    }
    pub fn out_of_order(&self) -> &[(u64, u64)] {
        &self.ooo
    }
    /// Payload bytes received more than once.
    pub fn duplicate_bytes(&self) -> u64 {
        self.dup_bytes
    }

    fn sack_block(&self, s: u64) -> (u64, u64) {
        if self.ooo.is_empty() {
            return (self.rcv_nxt, self.rcv_nxt);
        }
        // The out-of-order range holding `s`, if any (sorted, disjoint ranges).
        match self.ooo.get(self.ooo.partition_point(|&(_, b)| b <= s)) {
            Some(&(a, b)) if a <= s => (a, b),
            _ => self.ooo[0],
        }
    }

    fn send_ack(&mut self, cx: &mut FlowCtx, block: (u64, u64)) {
        let hold = cx.now.saturating_sub(self.pend_at);
        let pkt =
            ack_packet(cx, self.rcv_nxt, block, self.pend_bytes, self.pend_ce, self.pend_ts, self.pend_prio, hold);
        cx.out.send(pkt);
        self.pend_bytes = 0;
        if self.delack.is_armed() {
            self.delack.cancel();
        }
    }

    /// Process a data packet. Reports completion through `cx.out` (once) and returns true
    /// when this packet completed the flow.
    pub fn on_data(&mut self, cx: &mut FlowCtx, pkt: &Packet) -> bool {
        let p = cx.params;
        let ce = pkt.ecn == Ecn::Ce;
        let (s, e) = (pkt.seq, pkt.seq + pkt.payload as u64);
        if self.pend_bytes > 0 && ce != self.pend_ce {
            // DCTCP two-state machine: ACK what came before in the old state.
            let b = self.sack_block(self.rcv_nxt);
            self.send_ack(cx, b);
        }
        let had_ooo = !self.ooo.is_empty();
        let before = self.rcv_nxt;
        let mut ooo_seg = false;
        let newly;
        if s <= self.rcv_nxt {
            if e > self.rcv_nxt {
                newly = (e - self.rcv_nxt) - overlap(&self.ooo, self.rcv_nxt, e);
                self.rcv_nxt = e;
                if had_ooo {
                    let mut k = 0;
                    while k < self.ooo.len() && self.ooo[k].0 <= self.rcv_nxt {
                        self.rcv_nxt = self.rcv_nxt.max(self.ooo[k].1);
                        k += 1;
                    }
                    self.ooo.drain(..k);
                }
            } else {
                newly = 0;
            }
        } else {
            ooo_seg = true;
            newly = range_insert(&mut self.ooo, s, e);
        }
        let dup = newly < e - s;
        if dup {
            self.dup_bytes += (e - s) - newly;
        }
        if self.pend_bytes == 0 {
            self.pend_ts = pkt.ts;
            self.pend_at = cx.now;
        }
        self.pend_ce = ce;
        self.pend_prio = pkt.prio;
        self.pend_bytes += pkt.payload as u64;
        let mut completed = false;
        if !self.complete && self.rcv_nxt >= self.size {
            self.complete = true;
            completed = true;
            cx.out.complete(cx.flow.id);
        }
        let hole_fill = had_ooo && self.rcv_nxt > before;
        let immediate = !p.delayed_ack || ooo_seg || hole_fill || dup || self.complete || self.pend_bytes >= 2 * p.mss;
        if immediate {
            let b = self.sack_block(s);
            self.send_ack(cx, b);
        } else if !self.delack.is_armed() {
            let at = cx.now + p.delayed_ack_timeout;
            let g = self.delack.arm(at);
            cx.out.timer(at, token(cx.flow.id, TIMER_DELACK, g));
        }
        completed
    }

    /// Handle a firing [`TIMER_DELACK`] token generation.
    pub fn on_delack_timer(&mut self, cx: &mut FlowCtx, gen: u32) {
        if self.delack.fire(gen) && self.pend_bytes > 0 {
            let b = self.sack_block(self.rcv_nxt);
            self.send_ack(cx, b);
        }
    }
}

/// Write the advertised receive window `rwnd` (bytes) into an ACK: whole segments of `mss`,
/// at least 1 and at most [`ACK_RWND_MAX_SEGS`] (a larger window is advertised as the
/// largest one the field holds, as TCP's window field is bounded).
pub fn set_ack_rwnd(ack: &mut Packet, rwnd: u64, mss: u64) {
    let segs = (rwnd / mss.max(1)).clamp(1, ACK_RWND_MAX_SEGS) as u32;
    ack.aux2 = (ack.aux2 & !ACK_RWND_MASK) | (segs << ACK_RWND_SHIFT);
}

/// The receive window (bytes) an ACK advertises, if any.
#[inline]
pub fn ack_rwnd(ack: &Packet, mss: u64) -> Option<u64> {
    let segs = ((ack.aux2 & ACK_RWND_MASK) >> ACK_RWND_SHIFT) as u64;
    (segs > 0).then(|| segs * mss)
}

/// First byte at or after `s` outside the range of `v` that holds `s`, if any. `v` is
/// sorted and disjoint, so the range that can hold `s` is the first one ending after it
/// (binary search: a flow recovering many losses, or with many ranges delivered by another
/// loop, keeps hundreds of ranges).
fn skip_in(v: &[(u64, u64)], s: u64) -> u64 {
    match v.get(v.partition_point(|&(_, b)| b <= s)) {
        Some(&(a, b)) if a <= s => b,
        _ => s,
    }
}

/// Bytes of `[a, b)` covered by the sorted, disjoint ranges `v` (from the first range
/// ending after `a`, found by binary search).
fn overlap(v: &[(u64, u64)], a: u64, b: u64) -> u64 {
    let mut n = 0;
    for &(x, y) in &v[v.partition_point(|&(_, y)| y <= a)..] {
        if x >= b {
            break;
        }
        n += y.min(b).saturating_sub(x.max(a));
    }
    n
}

/// ACK a data packet that arrives after the receiver completed (and freed its state).
pub fn ack_after_completion(cx: &mut FlowCtx, pkt: &Packet) {
    let size = cx.flow.size.0;
    let p = ack_packet(cx, size, (size, size), pkt.payload as u64, pkt.ecn == Ecn::Ce, pkt.ts, pkt.prio, Time::ZERO);
    cx.out.send(p);
}

// ------------------------------------------------------------------------------------------
// The transport
// ------------------------------------------------------------------------------------------

#[derive(Default)]
enum Half<T> {
    #[default]
    Idle,
    Active(Box<T>),
    Done,
}

struct Slot<C: CongestionControl> {
    snd: Half<TcpSender<C>>,
    rcv: Half<TcpReceiver>,
    stats: FlowStats,
}

impl<C: CongestionControl> Default for Slot<C> {
    fn default() -> Self {
        Slot { snd: Half::Idle, rcv: Half::Idle, stats: FlowStats::default() }
    }
}

/// A window-based TCP sender/receiver pair for every host of a run, with the window law `C`:
/// TCP (NewReno/SACK) or DCTCP by default ([`Standard`]).
pub struct Tcp<C: CongestionControl = Standard> {
    params: TcpParams,
    law: C::Params,
    name: &'static str,
    policy: Box<dyn PriorityPolicy>,
    slots: Vec<Slot<C>>,
}

impl Tcp<Standard> {
    /// Build from the scenario's `[transport]` table (without `protocol`); `dctcp` selects
    /// the DCTCP window law and ECN by default.
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo, dctcp: bool) -> Result<Tcp, TcpConfigError> {
        let params = TcpConfig::parse(cfg)?.resolve(net, dctcp)?;
        Ok(Tcp::new(params))
    }

    pub fn new(params: TcpParams) -> Tcp {
        let law = params.standard_law();
        let name = if params.dctcp { "dctcp" } else { "tcp" };
        Tcp::with_law(params, law, name)
    }
}

impl<C: CongestionControl> Tcp<C> {
    /// Every flow with the window law `C` (parameters `law`); `name` is the protocol name.
    pub fn with_law(params: TcpParams, law: C::Params, name: &'static str) -> Tcp<C> {
        let policy = Box::new(ConstPrio(params.prio));
        Tcp { params, law, name, policy, slots: Vec::new() }
    }

    /// Replace the constant-priority policy.
    pub fn with_priority_policy(mut self, policy: Box<dyn PriorityPolicy>) -> Tcp<C> {
        self.policy = policy;
        self
    }

    pub fn params(&self) -> &TcpParams {
        &self.params
    }

    /// The live sender state of `flow` (None before start and after every byte is acked).
    pub fn sender(&self, flow: FlowId) -> Option<&TcpSender<C>> {
        match self.slots.get(flow as usize).map(|s| &s.snd) {
            Some(Half::Active(s)) => Some(s),
            _ => None,
        }
    }

    /// The live receiver state of `flow` (None before the first packet and after completion).
    pub fn receiver(&self, flow: FlowId) -> Option<&TcpReceiver> {
        match self.slots.get(flow as usize).map(|s| &s.rcv) {
            Some(Half::Active(r)) => Some(r),
            _ => None,
        }
    }

    /// The receiver of `flow` holds every byte.
    pub fn receiver_complete(&self, flow: FlowId) -> bool {
        matches!(self.slots.get(flow as usize).map(|s| &s.rcv), Some(Half::Done))
    }

    /// The sender of `flow` has every byte acknowledged.
    pub fn sender_done(&self, flow: FlowId) -> bool {
        matches!(self.slots.get(flow as usize).map(|s| &s.snd), Some(Half::Done))
    }

    #[inline]
    fn ensure(&mut self, n: usize) {
        if self.slots.len() < n {
            self.slots.resize_with(n, Slot::default);
        }
    }
}

fn finish_sender<C: CongestionControl>(slot: &mut Slot<C>) {
    if let Half::Active(s) = &slot.snd {
        if s.is_done() {
            slot.stats = s.stats();
            slot.snd = Half::Done;
        }
    }
}

impl<C: CongestionControl + 'static> Transport for Tcp<C> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let id = flow as usize;
        self.ensure(ctx.flows.len());
        let info = &ctx.flows[id];
        let mut cx =
            FlowCtx { now: ctx.now, flow: info, params: &self.params, policy: &*self.policy, out: &mut *ctx.out };
        let mut s = Box::new(TcpSender::<C>::with_law(info, &self.params, &self.law));
        s.start(&mut cx);
        let slot = &mut self.slots[id];
        slot.snd = Half::Active(s);
        finish_sender(slot);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let id = pkt.flow as usize;
        if id >= ctx.flows.len() {
            return;
        }
        self.ensure(ctx.flows.len());
        let info = &ctx.flows[id];
        let mut cx =
            FlowCtx { now: ctx.now, flow: info, params: &self.params, policy: &*self.policy, out: &mut *ctx.out };
        let slot = &mut self.slots[id];
        match pkt.kind {
            KIND_DATA => {
                let done = match &mut slot.rcv {
                    Half::Done => {
                        ack_after_completion(&mut cx, pkt);
                        false
                    }
                    Half::Active(r) => {
                        r.on_data(&mut cx, pkt);
                        r.is_complete()
                    }
                    Half::Idle => {
                        let mut r = Box::new(TcpReceiver::new(info));
                        r.on_data(&mut cx, pkt);
                        let c = r.is_complete();
                        slot.rcv = Half::Active(r);
                        c
                    }
                };
                if done {
                    slot.rcv = Half::Done;
                }
            }
            KIND_ACK => {
                if let Half::Active(s) = &mut slot.snd {
                    s.on_ack(&mut cx, pkt);
                    finish_sender(slot);
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, tok: u64) {
        let (flow, kind, gen) = untoken(tok);
        let id = flow as usize;
        if id >= self.slots.len() || id >= ctx.flows.len() {
            return;
        }
        let info = &ctx.flows[id];
        let mut cx =
            FlowCtx { now: ctx.now, flow: info, params: &self.params, policy: &*self.policy, out: &mut *ctx.out };
        let slot = &mut self.slots[id];
        match kind {
            TIMER_RTO => {
                if let Half::Active(s) = &mut slot.snd {
                    s.on_rto_timer(&mut cx, gen);
                    finish_sender(slot);
                }
            }
            TIMER_PACE => {
                if let Half::Active(s) = &mut slot.snd {
                    s.on_pace_timer(&mut cx, gen);
                    finish_sender(slot);
                }
            }
            TIMER_DELACK => {
                if let Half::Active(r) = &mut slot.rcv {
                    r.on_delack_timer(&mut cx, gen);
                }
            }
            _ => {}
        }
    }

    fn on_tx_complete(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let id = pkt.flow as usize;
        if let (Some(slot), Some(info)) = (self.slots.get_mut(id), ctx.flows.get(id)) {
            if let Half::Active(s) = &mut slot.snd {
                let mut cx = FlowCtx {
                    now: ctx.now,
                    flow: info,
                    params: &self.params,
                    policy: &*self.policy,
                    out: &mut *ctx.out,
                };
                s.on_tx_complete(&mut cx, pkt.size as u64);
                finish_sender(slot);
            }
        }
    }

    fn wants_tx_complete(&self) -> bool {
        self.params.tsq.is_some()
    }

    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        match self.slots.get(flow as usize) {
            Some(Slot { snd: Half::Active(s), .. }) => s.stats(),
            Some(slot) => slot.stats,
            None => FlowStats::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::NodeId;
    use crate::units::Rate;
    use serde_json::json;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    const MSS: u64 = 1460;

    fn net() -> NetInfo {
        NetInfo {
            mtu: Bytes(1500),
            header: Bytes(40),
            ctrl_size: Bytes(64),
            num_nodes: 4,
            max_base_rtt: Time::us(10),
            max_host_rate: Rate::gbps(10),
            priorities: 8,
            size_cdf: None,
            workload: None,
            host: crate::host::HostSpec { tsq: false, ..crate::host::HostSpec::default() },
        }
    }

    fn flow(id: FlowId, src: NodeId, dst: NodeId, size: u64) -> FlowInfo {
        FlowInfo {
            id,
            src,
            dst,
            size: Bytes(size),
            start: Time::ZERO,
            base_rtt: Time::us(10),
            path_rate: Rate::gbps(10),
            host_rate: Rate::gbps(10),
            deadline: None,
            background: false,
        }
    }

    /// Drives one `Tcp` by hand: every call returns the actions it produced.
    struct H {
        tcp: Tcp,
        flows: Vec<FlowInfo>,
    }

    impl H {
        fn new(cfg: serde_json::Value, dctcp: bool, sizes: &[u64]) -> H {
            let tcp = Tcp::from_config(&cfg, &net(), dctcp).expect("valid config");
            let flows = sizes.iter().enumerate().map(|(i, &s)| flow(i as FlowId, 0, 1, s)).collect();
            H { tcp, flows }
        }
        fn call(&mut self, now: Time, host: NodeId, f: impl FnOnce(&mut Tcp, &mut Ctx)) -> Actions {
            let mut out = Actions::new();
            let mut ctx = Ctx { now, host, flows: &self.flows, out: &mut out };
            f(&mut self.tcp, &mut ctx);
            out
        }
        fn start(&mut self, now: Time, f: FlowId) -> Actions {
            let host = self.flows[f as usize].src;
            self.call(now, host, |t, c| t.start_flow(c, f))
        }
        fn deliver(&mut self, now: Time, p: &Packet) -> Actions {
            let host = p.dst;
            self.call(now, host, |t, c| t.on_packet(c, p))
        }
        fn fire(&mut self, now: Time, host: NodeId, tok: u64) -> Actions {
            self.call(now, host, |t, c| t.on_timer(c, tok))
        }
        /// Deliver data packets to the receiver; return the ACKs.
        fn deliver_data(&mut self, now: Time, data: &[Packet]) -> Vec<Packet> {
            let mut acks = Vec::new();
            for d in data {
                acks.extend(self.deliver(now, d).sends);
            }
            acks
        }
        /// Deliver ACKs to the sender; return the data packets sent in response.
        fn deliver_acks(&mut self, now: Time, acks: &[Packet]) -> Vec<Packet> {
            let mut data = Vec::new();
            for a in acks {
                data.extend(self.deliver(now, a).sends);
            }
            data
        }
        fn snd(&self, f: FlowId) -> &TcpSender {
            self.tcp.sender(f).expect("live sender")
        }
    }

    fn seqs(ps: &[Packet]) -> Vec<u64> {
        ps.iter().map(|p| p.seq / MSS).collect()
    }

    fn ce(mut p: Packet) -> Packet {
        p.ecn = Ecn::Ce;
        p
    }

    fn ece(a: &Packet) -> bool {
        a.aux2 & ACK_ECE != 0
    }

    fn covered(a: &Packet) -> u64 {
        (a.aux2 & ACK_COVERED_MASK) as u64
    }

    // ---------------------------------------------------------------- host model

    /// The test network with the per-flow NIC limit on, capped at `limit` bytes, and window
    /// validation as given.
    fn net_nic_limited(limit: u64, validation: bool) -> NetInfo {
        let mut n = net();
        n.host = crate::host::HostSpec {
            tsq: true,
            tsq_limit: Bytes(limit),
            cwnd_validation: validation,
            ..crate::host::HostSpec::default()
        };
        n
    }

    fn h_with(cfg: serde_json::Value, n: &NetInfo, size: u64) -> H {
        let tcp = Tcp::from_config(&cfg, n, false).expect("valid config");
        H { tcp, flows: vec![flow(0, 0, 1, size)] }
    }

    fn tx_complete(h: &mut H, now: Time, p: &Packet) -> Vec<Packet> {
        h.call(now, p.src, |t, c| t.on_tx_complete(c, p)).sends
    }

    #[test]
    fn nic_limited_sender_stops_above_the_limit_and_each_completion_releases_one_more() {
        // A 100-packet window, a NIC limit of 4,500 B (three 1,500 B packets): the sender
        // sends while the flow's NIC bytes do not exceed the limit, so four packets leave
        // (the last overshoots by one packet, as in Linux) and the sender waits.
        let mut h = h_with(json!({"init_cwnd": 100}), &net_nic_limited(4500, true), 1000 * MSS);
        assert!(h.tcp.wants_tx_complete());
        let a = h.start(Time::ZERO, 0).sends;
        assert_eq!(seqs(&a), vec![0, 1, 2, 3]);
        assert!(h.snd(0).tsq_throttled());
        assert_eq!(h.snd(0).nic_bytes(), 6000);
        // The NIC transmits the first: 4,500 B remain, one more packet goes.
        let b = tx_complete(&mut h, Time::us(1), &a[0]);
        assert_eq!(seqs(&b), vec![4]);
        assert_eq!(h.snd(0).nic_bytes(), 6000);
        // ACKs alone release nothing at the NIC: an ACK for all four sends no packet.
        let acks = h.deliver_data(Time::us(2), &a);
        let c = h.deliver_acks(Time::us(3), &acks);
        assert!(c.is_empty(), "NIC limit holds: {:?}", seqs(&c));
        assert_eq!(h.snd(0).max_nic_bytes(), 4500 + 1500);
    }

    #[test]
    fn window_does_not_grow_while_the_nic_limit_holds_the_flow() {
        // Rounds of: the NIC transmits what the flow queued, the receiver ACKs it. Under a
        // 4,500 B NIC limit with validation the 100-packet window never fills, so it does not
        // grow; with validation off (or without the NIC limit) the same ACKs grow it.
        let run = |n: &NetInfo| -> (u64, u64) {
            let mut h = h_with(json!({"init_cwnd": 100}), n, 100_000 * MSS);
            let mut wire = h.start(Time::ZERO, 0).sends;
            let mut now = Time::ZERO;
            for _ in 0..6 {
                now += Time::us(1);
                let mut released = vec![];
                for p in &wire {
                    released.extend(tx_complete(&mut h, now, p));
                }
                let acks = h.deliver_data(now, &wire);
                let mut next = h.deliver_acks(now, &acks);
                next.extend(released);
                wire = next;
            }
            (h.snd(0).cwnd(), h.snd(0).snd_una())
        };
        let (w_limited, una_limited) = run(&net_nic_limited(4500, true));
        assert_eq!(w_limited, 100 * MSS, "NIC-limited: the window stays");
        assert!(una_limited > 15 * MSS, "the flow progresses: {una_limited}");
        let (w_unvalidated, _) = run(&net_nic_limited(4500, false));
        assert!(w_unvalidated > 100 * MSS + 15 * MSS, "without validation it grows: {w_unvalidated}");
        let (w_free, _) = run(&net());
        assert!(w_free > 1000 * MSS, "window-limited without the NIC limit it grows: {w_free}");
    }

    #[test]
    fn slow_start_grows_only_while_the_window_is_below_twice_the_flight() {
        // A 25-packet flow with a 100-packet initial window sends everything at once: the
        // window never fills (application-limited), the round's largest flight is 25 packets
        // and the window (100 packets) is already above twice that, so the ACKs of 24 of them
        // grow nothing; without validation slow start adds one packet per ACK.
        for (validation, want) in [(true, 100), (false, 124)] {
            let mut h = h_with(json!({"init_cwnd": 100}), &net_nic_limited(1_000_000, validation), 25 * MSS);
            let a = h.start(Time::ZERO, 0).sends;
            assert_eq!(a.len(), 25);
            let acks = h.deliver_data(Time::us(5), &a[..24]);
            h.deliver_acks(Time::us(10), &acks);
            assert_eq!(h.snd(0).cwnd(), want * MSS, "validation {validation}");
        }
        // Window-limited rounds grow as before: a 10-packet window on a long flow doubles.
        let mut h = h_with(json!({}), &net_nic_limited(1_000_000, true), 1000 * MSS);
        let a = h.start(Time::ZERO, 0).sends;
        let acks = h.deliver_data(Time::us(5), &a);
        let b = h.deliver_acks(Time::us(10), &acks);
        assert_eq!((b.len(), h.snd(0).cwnd()), (20, 20 * MSS));
    }

    // ---------------------------------------------------------------- windows

    #[test]
    fn initial_window_is_init_cwnd_packets() {
        let mut h = H::new(json!({}), false, &[100 * MSS]);
        let a = h.start(Time::ZERO, 0);
        assert_eq!(a.sends.len(), 10);
        for (i, p) in a.sends.iter().enumerate() {
            assert!(p.is_data());
            assert_eq!(p.kind, KIND_DATA);
            assert_eq!(p.seq, i as u64 * MSS);
            assert_eq!(p.payload as u64, MSS);
            assert_eq!(p.size, 1500);
            assert_eq!((p.src, p.dst, p.flow), (0, 1, 0));
            assert_eq!(p.prio, 0);
            assert_eq!(p.ecn, Ecn::NotEct, "plain tcp is not ECT by default");
            assert_eq!(p.aux2 & DATA_RETX, 0);
        }
        // One RTO timer at max(min_rto, 3 x base RTT) = 1 ms.
        assert_eq!(a.timers.len(), 1);
        assert_eq!(a.timers[0].0, Time::ms(1));
        assert_eq!(untoken(a.timers[0].1), (0, TIMER_RTO, untoken(a.timers[0].1).2));
        assert_eq!(h.snd(0).cwnd(), 10 * MSS);

        let mut h = H::new(json!({"init_cwnd": 4, "prio": 2}), true, &[100 * MSS]);
        let a = h.start(Time::ZERO, 0);
        assert_eq!(a.sends.len(), 4);
        assert!(a.sends.iter().all(|p| p.ecn == Ecn::Ect && p.prio == 2));
    }

    #[test]
    fn last_packet_carries_the_remainder() {
        let size = 3 * MSS + 100;
        let mut h = H::new(json!({}), false, &[size]);
        let a = h.start(Time::ZERO, 0);
        assert_eq!(a.sends.len(), 4);
        let last = a.sends[3];
        assert_eq!(last.seq, 3 * MSS);
        assert_eq!(last.payload as u64, size - 3 * MSS);
        assert_eq!(last.size as u64, size - 3 * MSS + 40);
        assert_eq!(a.sends.iter().map(|p| p.payload as u64).sum::<u64>(), size);
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        for delayed in [false, true] {
            let mut h = H::new(json!({ "delayed_ack": delayed }), false, &[10_000 * MSS]);
            let mut data = h.start(Time::ZERO, 0).sends;
            let mut t = Time::ZERO;
            for round in 1..=4u64 {
                t += Time::us(10);
                let acks = h.deliver_data(t, &data);
                if delayed {
                    assert_eq!(acks.len(), data.len() / 2, "delayed ACKs: one per two segments");
                }
                data = h.deliver_acks(t + Time::us(5), &acks);
                assert_eq!(h.snd(0).cwnd(), (10 << round) * MSS, "round {round}, delayed {delayed}");
                assert_eq!(data.len() as u64, 10 << round, "round {round}");
            }
        }
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window() {
        let mut h = H::new(json!({ "ssthresh": 10 }), false, &[10_000 * MSS]);
        let data = h.start(Time::ZERO, 0).sends;
        let acks = h.deliver_data(Time::us(10), &data);
        h.deliver_acks(Time::us(20), &acks);
        // 10 ACKs of one MSS at cwnd ~ 10 MSS: + ~1 MSS (exactly sum of MSS^2 / cwnd_i).
        let c = h.snd(0).cwnd();
        assert!(c > 10 * MSS + MSS - 100 && c <= 11 * MSS, "{c}");
    }

    // ---------------------------------------------------------------- loss recovery

    #[test]
    fn three_dupacks_fast_retransmit_newreno() {
        let mut h = H::new(json!({ "sack": false }), false, &[1000 * MSS]);
        let w = h.start(Time::ZERO, 0).sends;
        let t = Time::us(10);
        let delivered: Vec<Packet> = w.iter().copied().filter(|p| p.seq != MSS).collect();
        let acks = h.deliver_data(t, &delivered);
        assert_eq!(acks.len(), 9);
        assert_eq!(acks[0].ack, MSS);
        assert!(acks[1..].iter().all(|a| a.ack == MSS), "duplicate ACKs");
        // First ACK advances: slow start sends two more (segments 10, 11).
        let mut more = h.deliver_acks(t, &acks[..1]);
        assert_eq!(seqs(&more), vec![10, 11]);
        assert!(h.deliver_acks(t, &acks[1..3]).is_empty(), "two dupacks: nothing");
        let r = h.deliver_acks(t, &acks[3..4]);
        assert_eq!(r.len(), 1, "third dupack: exactly one retransmission");
        assert_eq!(r[0].seq, MSS);
        assert_ne!(r[0].aux2 & DATA_RETX, 0);
        let s = h.snd(0);
        assert_eq!(s.recovery(), Recovery::NewReno);
        let flight = 11 * MSS; // snd_max 12 MSS - snd_una 1 MSS
        assert_eq!(s.ssthresh(), flight / 2, "ssthresh = FlightSize / 2");
        assert_eq!(s.cwnd(), flight / 2 + 3 * MSS, "inflated by the three dupacks");
        // More dupacks inflate; what is sent is new data only.
        let later = h.deliver_acks(t, &acks[4..]);
        assert!(later.iter().all(|p| p.seq >= 12 * MSS), "{:?}", seqs(&later));
        more.extend(later);
        // Deliver the new segments (more dupacks), then the retransmission: full ACK.
        let acks2 = h.deliver_data(t, &more);
        h.deliver_acks(t, &acks2);
        let full = h.deliver_data(t + Time::us(10), &r);
        assert!(full[0].ack >= 12 * MSS, "ACK reaches the recovery point");
        h.deliver_acks(t + Time::us(10), &full);
        let s = h.snd(0);
        assert_eq!(s.recovery(), Recovery::Open);
        assert!(s.cwnd() <= flight / 2, "window halved after recovery: {}", s.cwnd());
        assert_eq!(s.retx_bytes(), MSS);
        assert_eq!(s.fast_retransmits(), 1);
    }

    #[test]
    fn newreno_partial_ack_retransmits_next_hole() {
        let mut h = H::new(json!({ "sack": false }), false, &[1000 * MSS]);
        let w = h.start(Time::ZERO, 0).sends;
        let t = Time::us(10);
        let delivered: Vec<Packet> = w.iter().copied().filter(|p| p.seq != MSS && p.seq != 4 * MSS).collect();
        let acks = h.deliver_data(t, &delivered);
        let mut sent = Vec::new();
        for a in &acks {
            sent.extend(h.deliver_acks(t, std::slice::from_ref(a)));
        }
        let retx: Vec<&Packet> = sent.iter().filter(|p| p.seq < 10 * MSS).collect();
        assert_eq!(retx.len(), 1);
        assert_eq!(retx[0].seq, MSS);
        // The retransmission fills the first hole: the receiver acks up to the second hole.
        let partial = h.deliver_data(t + Time::us(10), &[*retx[0]]);
        assert_eq!(partial[0].ack, 4 * MSS);
        let r = h.deliver_acks(t + Time::us(10), &partial);
        assert_eq!(r[0].seq, 4 * MSS, "partial ACK retransmits the next hole at once");
        assert_ne!(r[0].aux2 & DATA_RETX, 0);
        assert_eq!(h.snd(0).recovery(), Recovery::NewReno, "still in recovery");
    }

    #[test]
    fn sack_recovery_retransmits_only_the_holes() {
        for sack in [true, false] {
            let mut sim = Sim::new(json!({ "sack": sack }), false, &[60 * MSS]);
            sim.drop_first = vec![2 * MSS, 5 * MSS, 7 * MSS];
            sim.run(Time::ms(100));
            let retx: Vec<u64> = sim.sent.iter().filter(|p| p.aux2 & DATA_RETX != 0).map(|p| p.seq / MSS).collect();
            if sack {
                assert_eq!(retx, vec![2, 5, 7], "SACK retransmits exactly the three holes");
            } else {
                let mut r = retx.clone();
                r.sort();
                r.dedup();
                assert_eq!(r.len(), retx.len(), "NewReno retransmits each segment once: {retx:?}");
                assert!([2, 5, 7].iter().all(|s| retx.contains(s)), "{retx:?}");
            }
            assert_eq!(sim.completions.len(), 1);
            let st = sim.h.tcp.flow_stats(0);
            assert_eq!(st.timeouts, 0, "sack={sack}: recovered without a timeout");
            assert!(sim.h.tcp.sender_done(0));
        }
    }

    #[test]
    fn sack_recovery_sets_cwnd_to_ssthresh_and_uses_pipe() {
        let mut h = H::new(json!({}), false, &[1000 * MSS]);
        let w = h.start(Time::ZERO, 0).sends;
        let t = Time::us(10);
        let delivered: Vec<Packet> = w.iter().copied().filter(|p| p.seq != 2 * MSS).collect();
        let acks = h.deliver_data(t, &delivered);
        assert_eq!((acks[2].seq, acks[2].aux), (3 * MSS, 4 * MSS), "SACK block of the triggering segment");
        let mut sent = Vec::new();
        for a in &acks {
            sent.extend(h.deliver_acks(t, std::slice::from_ref(a)));
        }
        let s = h.snd(0);
        assert_eq!(s.recovery(), Recovery::Sack);
        assert_eq!(s.cwnd(), s.ssthresh());
        assert_eq!(s.fast_retransmits(), 1);
        let retx: Vec<u64> = sent.iter().filter(|p| p.seq < 10 * MSS).map(|p| p.seq / MSS).collect();
        assert_eq!(retx, vec![2]);
    }

    // ---------------------------------------------------------------- RTO

    #[test]
    fn rto_fires_after_min_rto_and_backs_off() {
        let mut h = H::new(json!({}), false, &[100 * MSS]);
        let a = h.start(Time::ZERO, 0);
        let (t1, tok1) = a.timers[0];
        assert_eq!(t1, Time::ms(1));
        let b = h.fire(t1, 0, tok1);
        assert_eq!(b.sends.len(), 1);
        assert_eq!(b.sends[0].seq, 0, "go back to snd_una");
        assert_ne!(b.sends[0].aux2 & DATA_RETX, 0);
        let s = h.snd(0);
        assert_eq!(s.cwnd(), MSS);
        assert_eq!(s.timeouts(), 1);
        assert_eq!(s.ssthresh(), 5 * MSS, "FlightSize / 2");
        assert_eq!(b.timers.len(), 1);
        let (t2, tok2) = b.timers[0];
        assert_eq!(t2, t1 + Time::ms(2), "backoff x2");
        // A stale token (the one that already fired) does nothing.
        let stale = h.fire(t1 + Time::us(1), 0, tok1);
        assert!(stale.sends.is_empty() && stale.timers.is_empty());
        let c = h.fire(t2, 0, tok2);
        assert_eq!(c.sends.len(), 1);
        assert_eq!(c.sends[0].seq, 0);
        assert_eq!(c.timers[0].0, t2 + Time::ms(4), "backoff x4");
        let s = h.snd(0);
        assert_eq!(s.timeouts(), 2);
        assert_eq!(s.cwnd(), MSS);
        assert_eq!(s.ssthresh(), 5 * MSS, "ssthresh kept on a repeated timeout");
        let st = h.tcp.flow_stats(0);
        assert_eq!(st, FlowStats { retx_bytes: 2 * MSS, timeouts: 2, ..FlowStats::default() });
    }

    #[test]
    fn rearmed_rto_token_does_not_fire() {
        let mut h = H::new(json!({}), false, &[100 * MSS]);
        let a = h.start(Time::ZERO, 0);
        let (t1, tok1) = a.timers[0];
        // An ACK at 100 us moves the deadline to 1.1 ms without a new timer event.
        let acks = h.deliver_data(Time::us(50), &a.sends[..1]);
        let r = h.deliver(Time::us(100), &acks[0]);
        assert!(r.timers.is_empty(), "lazy re-arm: no timer per ACK");
        assert_eq!(h.snd(0).srtt(), Some(Time::us(100)), "RTT from the timestamp echo");
        // The old event fires at 1 ms: no timeout, one re-arm at the new deadline.
        let b = h.fire(t1, 0, tok1);
        assert!(b.sends.is_empty());
        assert_eq!(h.snd(0).timeouts(), 0);
        assert_eq!(b.timers.len(), 1);
        let (t2, tok2) = b.timers[0];
        assert_eq!(t2, Time::us(1100));
        assert!(h.fire(t1, 0, tok1).timers.is_empty(), "stale generation ignored");
        let c = h.fire(t2, 0, tok2);
        assert_eq!(h.snd(0).timeouts(), 1);
        assert_eq!(c.sends[0].seq, MSS);
    }

    #[test]
    fn rto_is_srtt_plus_four_rttvar_with_floor() {
        let mut h = H::new(json!({ "min_rto": "10us" }), false, &[100 * MSS]);
        let a = h.start(Time::ZERO, 0);
        let acks = h.deliver_data(Time::us(10), &a.sends[..2]);
        h.deliver(Time::us(20), &acks[0]); // R = 20us: srtt 20, rttvar 10
        assert_eq!(h.snd(0).rto(), Time::us(60));
        let mut late = acks[1];
        late.ts = Time::us(4); // R = 36us: rttvar = (30 + 16)/4 = 11.5, srtt = (140+36)/8 = 22
        h.deliver(Time::us(40), &late);
        let s = h.snd(0);
        assert_eq!(s.srtt(), Some(Time::us(22)));
        assert_eq!(s.rttvar(), Some(Time::ns(11_500)));
        assert_eq!(s.rto(), Time::us(68));
    }

    // ---------------------------------------------------------------- receiver / ECN

    #[test]
    fn receiver_acks_every_packet_with_exact_ece() {
        let mut h = H::new(json!({}), true, &[100 * MSS]);
        let w = h.start(Time::ZERO, 0).sends;
        let marked = [3usize, 7];
        let d: Vec<Packet> = w.iter().enumerate().map(|(i, p)| if marked.contains(&i) { ce(*p) } else { *p }).collect();
        let acks = h.deliver_data(Time::us(10), &d);
        assert_eq!(acks.len(), 10);
        for (i, a) in acks.iter().enumerate() {
            assert_eq!(a.kind, KIND_ACK);
            assert!(!a.is_data());
            assert_eq!(a.size, 64);
            assert_eq!(a.ecn, Ecn::NotEct);
            assert_eq!((a.src, a.dst), (1, 0));
            assert_eq!(a.ack, (i as u64 + 1) * MSS);
            assert_eq!(a.ts, w[i].ts);
            assert_eq!(covered(a), MSS);
            assert_eq!(ece(a), marked.contains(&i), "ack {i}");
        }
    }

    #[test]
    fn delayed_ack_dctcp_state_machine() {
        let mut h = H::new(json!({ "delayed_ack": true }), true, &[100 * MSS]);
        let w = h.start(Time::ZERO, 0).sends;
        let t = Time::us(10);
        // N N | C C | C N | (timer)
        let a1 = h.deliver(t, &w[0]);
        assert!(a1.sends.is_empty());
        assert_eq!(a1.timers.len(), 1, "delayed-ACK timer armed");
        assert_eq!(a1.timers[0].0, t + Time::us(40));
        let a2 = h.deliver(t, &w[1]);
        assert_eq!(a2.sends.len(), 1);
        assert_eq!((a2.sends[0].ack, covered(&a2.sends[0]), ece(&a2.sends[0])), (2 * MSS, 2 * MSS, false));
        assert!(h.deliver(t, &ce(w[2])).sends.is_empty());
        let a4 = h.deliver(t, &ce(w[3])).sends;
        assert_eq!((a4[0].ack, covered(&a4[0]), ece(&a4[0])), (4 * MSS, 2 * MSS, true));
        assert!(h.deliver(t, &ce(w[4])).sends.is_empty());
        // CE state changes with one CE packet pending: ACK it at once, with ECE.
        let a6 = h.deliver(t, &w[5]);
        assert_eq!(a6.sends.len(), 1);
        assert_eq!((a6.sends[0].ack, covered(&a6.sends[0]), ece(&a6.sends[0])), (5 * MSS, MSS, true));
        let (at, tok) = a6.timers[0];
        let a7 = h.fire(at, 1, tok);
        assert_eq!(a7.sends.len(), 1, "delayed-ACK timeout");
        assert_eq!((a7.sends[0].ack, covered(&a7.sends[0]), ece(&a7.sends[0])), (6 * MSS, MSS, false));
        // The first timer (cancelled by the ACK of segment 2) is stale.
        assert!(h.fire(a1.timers[0].0, 1, a1.timers[0].1).sends.is_empty());
        // Out-of-order data is ACKed at once.
        assert_eq!(h.deliver(t, &w[8]).sends.len(), 1);
    }

    #[test]
    fn dctcp_alpha_after_one_window() {
        for init_alpha in [1.0, 0.0, 0.4] {
            let g = 1.0 / 16.0;
            let mut h = H::new(json!({ "init_alpha": init_alpha }), true, &[1000 * MSS]);
            let w = h.start(Time::ZERO, 0).sends;
            let d: Vec<Packet> = w.iter().enumerate().map(|(i, p)| if i >= 7 { ce(*p) } else { *p }).collect();
            let acks = h.deliver_data(Time::us(10), &d);
            h.deliver_acks(Time::us(20), &acks[..9]);
            assert_eq!(h.snd(0).alpha(), init_alpha, "no update before the window is acknowledged");
            h.deliver_acks(Time::us(20), &acks[9..]);
            let f = 3.0 / 10.0;
            let want = (1.0 - g) * init_alpha + g * f;
            assert!((h.snd(0).alpha() - want).abs() < 1e-12, "{} vs {want}", h.snd(0).alpha());
        }
    }

    #[test]
    fn dctcp_alpha_counts_bytes_not_acks() {
        // A short last segment weighs by its bytes.
        let size = 3 * MSS + 365;
        let mut h = H::new(json!({ "init_alpha": 0.0, "g": 1.0 }), true, &[size]);
        let w = h.start(Time::ZERO, 0).sends;
        let d = vec![w[0], w[1], w[2], ce(w[3])];
        let acks = h.deliver_data(Time::us(10), &d);
        // The sender finishes with the last ACK; read alpha just before.
        h.deliver_acks(Time::us(20), &acks[..3]);
        assert_eq!(h.snd(0).alpha(), 0.0);
        let mut s = h.snd(0).clone();
        let mut out = Actions::new();
        let p = h.tcp.params().clone();
        let mut cx = FlowCtx { now: Time::us(20), flow: &h.flows[0], params: &p, policy: &ConstPrio(0), out: &mut out };
        s.on_ack(&mut cx, &acks[3]);
        assert!((s.alpha() - 365.0 / size as f64).abs() < 1e-12);
    }

    #[test]
    fn dctcp_cuts_at_most_once_per_window() {
        let mut h = H::new(json!({ "init_alpha": 0.5 }), true, &[1000 * MSS]);
        let w = h.start(Time::ZERO, 0).sends;
        let d: Vec<Packet> = w.iter().map(|p| ce(*p)).collect();
        let acks = h.deliver_data(Time::us(10), &d);
        h.deliver_acks(Time::us(20), &acks[..1]);
        let s = h.snd(0);
        assert_eq!(s.ecn_cuts(), 1);
        assert_eq!(s.cwnd(), (10.0 * MSS as f64 * 0.75) as u64, "cwnd x (1 - alpha/2)");
        assert_eq!(s.ssthresh(), s.cwnd());
        assert!(s.in_cwr());
        h.deliver_acks(Time::us(20), &acks[1..9]);
        assert_eq!(h.snd(0).ecn_cuts(), 1, "no second cut within the window");
        // The ACK that ends the window (snd_una reaches the snd_nxt of the cut) may cut again,
        // with the freshly updated alpha.
        let before = h.snd(0).cwnd();
        h.deliver_acks(Time::us(20), &acks[9..]);
        let s = h.snd(0);
        let alpha = 0.5 * 15.0 / 16.0 + 1.0 / 16.0;
        assert!((s.alpha() - alpha).abs() < 1e-12);
        assert_eq!(s.ecn_cuts(), 2);
        assert_eq!(s.cwnd(), (before as f64 * (1.0 - alpha / 2.0)) as u64);
    }

    #[test]
    fn plain_tcp_with_ecn_halves_once_per_window() {
        let mut h = H::new(json!({ "ecn": true }), false, &[1000 * MSS]);
        let w = h.start(Time::ZERO, 0).sends;
        assert!(w.iter().all(|p| p.ecn == Ecn::Ect));
        let d: Vec<Packet> = w.iter().map(|p| ce(*p)).collect();
        let acks = h.deliver_data(Time::us(10), &d);
        h.deliver_acks(Time::us(20), &acks[..5]);
        assert_eq!(h.snd(0).ecn_cuts(), 1);
        assert_eq!(h.snd(0).ssthresh(), 5 * MSS);
        // Without ECN, CE marks are ignored.
        let mut h = H::new(json!({}), false, &[1000 * MSS]);
        let w = h.start(Time::ZERO, 0).sends;
        let acks = h.deliver_data(Time::us(10), &w.iter().map(|p| ce(*p)).collect::<Vec<_>>());
        h.deliver_acks(Time::us(20), &acks);
        assert_eq!(h.snd(0).ecn_cuts(), 0);
        assert_eq!(h.snd(0).cwnd(), 20 * MSS);
    }

    // ---------------------------------------------------------------- completion

    #[test]
    fn completion_exactly_once_when_every_byte_is_held() {
        let size = 4 * MSS + 500;
        let mut h = H::new(json!({}), false, &[size]);
        let w = h.start(Time::ZERO, 0).sends;
        assert_eq!(w.len(), 5);
        let t = Time::us(10);
        let mut total = 0;
        let expect = [
            (4, 0, (4 * MSS, size)),
            (2, 0, (2 * MSS, 3 * MSS)),
            (0, MSS, (2 * MSS, 3 * MSS)),
            (3, MSS, (2 * MSS, size)),
        ];
        for (i, ack, block) in expect {
            let a = h.deliver(t, &w[i]);
            assert!(a.completions.is_empty(), "segment 1 is still missing");
            assert_eq!(a.sends[0].ack, ack);
            assert_eq!((a.sends[0].seq, a.sends[0].aux), block, "SACK block for segment {i}");
        }
        let a = h.call(t, 1, |tcp, c| tcp.on_packet(c, &w[1]));
        assert_eq!(a.completions, vec![0], "completed at the receiving host");
        assert_eq!(a.sends[0].ack, size);
        total += a.completions.len();
        assert!(h.tcp.receiver_complete(0));
        // Duplicates after completion are ACKed without a second report.
        for i in [1, 3, 0] {
            let a = h.deliver(t, &w[i]);
            assert!(a.completions.is_empty());
            assert_eq!(a.sends.len(), 1);
            assert_eq!(a.sends[0].ack, size);
        }
        assert_eq!(total, 1);
    }

    #[test]
    fn sender_state_is_freed_when_everything_is_acked() {
        let mut h = H::new(json!({}), false, &[3 * MSS]);
        let w = h.start(Time::ZERO, 0).sends;
        let acks = h.deliver_data(Time::us(10), &w);
        assert!(h.deliver_acks(Time::us(20), &acks).is_empty());
        assert!(h.tcp.sender(0).is_none());
        assert!(h.tcp.sender_done(0));
        assert_eq!(h.tcp.flow_stats(0), FlowStats::default());
    }

    // ---------------------------------------------------------------- priority hook

    struct Demote;
    impl PriorityPolicy for Demote {
        fn prio(&self, _f: &FlowInfo, sent: u64, _seq: u64) -> u8 {
            if sent < 2 * MSS {
                0
            } else {
                3
            }
        }
    }

    #[test]
    fn priority_policy_chooses_each_packet_class() {
        let mut h = H::new(json!({}), false, &[100 * MSS]);
        h.tcp = Tcp::from_config(&json!({}), &net(), false).unwrap().with_priority_policy(Box::new(Demote));
        let w = h.start(Time::ZERO, 0).sends;
        let prios: Vec<u8> = w.iter().map(|p| p.prio).collect();
        assert_eq!(prios, vec![0, 0, 3, 3, 3, 3, 3, 3, 3, 3]);
        let acks = h.deliver_data(Time::us(10), &w[..3]);
        assert_eq!(acks.iter().map(|a| a.prio).collect::<Vec<_>>(), vec![0, 0, 3], "ACKs follow their data");
    }

    // ---------------------------------------------------------------- config

    #[test]
    fn config_defaults_and_units() {
        let t = Tcp::from_config(&serde_json::Value::Null, &net(), true).unwrap();
        let p = t.params();
        assert_eq!(p.mss, MSS);
        assert_eq!(p.init_cwnd, 10 * MSS);
        assert_eq!(p.min_rto, Time::ms(1));
        assert_eq!(p.max_rto, Time::ms(1000));
        assert_eq!(p.dupack_threshold, 3);
        assert!(p.sack && !p.delayed_ack && p.ecn && p.dctcp);
        assert_eq!(p.g, 1.0 / 16.0);
        assert_eq!(p.init_ssthresh, u64::MAX);
        assert_eq!(t.name(), "dctcp");
        let t = Tcp::from_config(&json!({}), &net(), false).unwrap();
        assert!(!t.params().ecn);
        assert_eq!(t.name(), "tcp");

        let t = Tcp::from_config(
            &json!({"min_rto": "200us", "max_rto": "5ms", "initial_rto": "3ms",
                    "max_cwnd": "64KB", "ssthresh": 20, "delayed_ack_timeout": "1.5us", "g": 0.125}),
            &net(),
            true,
        )
        .unwrap();
        let p = t.params();
        assert_eq!(p.min_rto, Time::us(200));
        assert_eq!(p.max_rto, Time::ms(5));
        assert_eq!(p.initial_rto, Some(Time::ms(3)));
        assert_eq!(p.max_cwnd, 64_000);
        assert_eq!(p.init_ssthresh, 20 * MSS);
        assert_eq!(p.delayed_ack_timeout, Time::ns(1500));
        assert_eq!(p.g, 0.125);
        // Every listed field is accepted.
        let all = json!({"init_cwnd": 4, "min_cwnd": 1, "max_cwnd": 100, "ssthresh": 50, "min_rto": "1ms",
            "max_rto": "1s", "initial_rto": "2ms", "dupack_threshold": 3, "sack": false, "delayed_ack": true,
            "delayed_ack_timeout": "40us", "g": 0.0625, "init_alpha": 0.0, "ecn": true, "prio": 7});
        assert_eq!(all.as_object().unwrap().len(), TcpConfig::FIELDS.len());
        Tcp::from_config(&all, &net(), true).unwrap();
    }

    #[test]
    fn config_errors_name_the_field() {
        let err = |v: serde_json::Value, dctcp: bool| Tcp::from_config(&v, &net(), dctcp).err().expect("an error");
        let cases = [
            (json!({"min_rtt": "1ms"}), false, "transport.min_rtt"),
            (json!({"min_rto": "0us"}), false, "transport.min_rto"),
            (json!({"min_rto": "soon"}), false, "transport.min_rto"),
            (json!({"init_cwnd": 0}), false, "transport.init_cwnd"),
            (json!({"init_cwnd": "ten"}), false, "transport.init_cwnd"),
            (json!({"max_rto": "10us"}), false, "transport.max_rto"),
            (json!({"g": 2.0}), true, "transport.g"),
            (json!({"ecn": false}), true, "transport.ecn"),
            (json!({"prio": 8}), false, "transport.prio"),
            (json!({"max_cwnd": 5}), false, "transport.max_cwnd"),
            (json!({"dupack_threshold": 0}), false, "transport.dupack_threshold"),
            (json!({"sack": "yes"}), false, "transport.sack"),
        ];
        for (v, dctcp, field) in cases {
            let e = err(v.clone(), dctcp);
            assert_eq!(e.field(), field, "{v}: {e}");
            assert!(e.to_string().starts_with(field), "message names the field: {e}");
        }
        assert_eq!(err(json!([1, 2]), false).field(), "transport");
        let e = err(json!({"min_rto": "0us"}), false).to_string();
        assert!(e.contains("must be > 0"), "{e}");
        let e = err(json!({"bogus": 1}), false).to_string();
        assert!(e.contains("min_rto") && e.contains("unknown field"), "lists the known fields: {e}");
    }

    // ---------------------------------------------------------------- end to end

    enum Ev {
        Start(FlowId),
        Pkt(Packet),
        Timer(NodeId, u64),
    }

    /// A loopback harness: each host's NIC serializes at `rate`, every packet then takes
    /// `delay` (+ optional random jitter, which reorders); chosen packets are dropped or marked.
    struct Sim {
        h: H,
        heap: BinaryHeap<Reverse<(Time, u64)>>,
        evs: Vec<Option<Ev>>,
        nic_free: Vec<Time>,
        now: Time,
        rate: Rate,
        delay: Time,
        rng: u64,
        data_loss: f64,
        ack_loss: f64,
        ce_prob: f64,
        jitter: u64,
        drop_first: Vec<u64>,
        sent: Vec<Packet>,
        completions: Vec<(Time, FlowId, NodeId)>,
    }

    impl Sim {
        fn new(cfg: serde_json::Value, dctcp: bool, sizes: &[u64]) -> Sim {
            let h = H::new(cfg, dctcp, sizes);
            let mut s = Sim {
                h,
                heap: BinaryHeap::new(),
                evs: Vec::new(),
                nic_free: vec![Time::ZERO; 4],
                now: Time::ZERO,
                rate: Rate::gbps(10),
                delay: Time::us(2),
                rng: 0x9E37_79B9_7F4A_7C15,
                data_loss: 0.0,
                ack_loss: 0.0,
                ce_prob: 0.0,
                jitter: 0,
                drop_first: Vec::new(),
                sent: Vec::new(),
                completions: Vec::new(),
            };
            for f in 0..sizes.len() {
                s.push(Time::ZERO, Ev::Start(f as FlowId));
            }
            s
        }
        fn with_flows(mut self, flows: Vec<FlowInfo>) -> Sim {
            self.h.flows = flows;
            self
        }
        fn rand(&mut self) -> f64 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            (self.rng >> 11) as f64 / (1u64 << 53) as f64
        }
        fn push(&mut self, t: Time, e: Ev) {
            self.evs.push(Some(e));
            self.heap.push(Reverse((t, self.evs.len() as u64 - 1)));
        }
        fn apply(&mut self, host: NodeId, a: Actions) {
            for mut p in a.sends {
                assert_eq!(p.src, host, "a host only sends its own packets");
                let depart = self.now.max(self.nic_free[host as usize]) + self.rate.tx_time(p.wire());
                self.nic_free[host as usize] = depart;
                let mut arrive = depart + self.delay;
                if self.jitter > 0 {
                    arrive += Time((self.rand() * self.jitter as f64) as u64);
                }
                if p.is_data() {
                    self.sent.push(p);
                    if p.aux2 & DATA_RETX == 0 && self.drop_first.contains(&p.seq) {
                        continue;
                    }
                    if self.rand() < self.data_loss {
                        continue;
                    }
                    if p.ecn == Ecn::Ect && self.rand() < self.ce_prob {
                        p.ecn = Ecn::Ce;
                    }
                } else if self.rand() < self.ack_loss {
                    continue;
                }
                self.push(arrive, Ev::Pkt(p));
            }
            for (t, tok) in a.timers {
                assert!(t >= self.now);
                self.push(t, Ev::Timer(host, tok));
            }
            for f in a.completions {
                self.completions.push((self.now, f, host));
            }
        }
        fn run(&mut self, limit: Time) {
            while let Some(Reverse((t, i))) = self.heap.pop() {
                if t > limit {
                    break;
                }
                self.now = t;
                match self.evs[i as usize].take().unwrap() {
                    Ev::Start(f) => {
                        let host = self.h.flows[f as usize].src;
                        let a = self.h.call(t, host, |tcp, c| tcp.start_flow(c, f));
                        self.apply(host, a);
                    }
                    Ev::Pkt(p) => {
                        let a = self.h.deliver(t, &p);
                        self.apply(p.dst, a);
                    }
                    Ev::Timer(host, tok) => {
                        let a = self.h.fire(t, host, tok);
                        self.apply(host, a);
                    }
                }
            }
        }
    }

    #[test]
    fn lossless_transfer_has_no_retransmissions() {
        for (dctcp, delayed) in [(false, false), (false, true), (true, false), (true, true)] {
            let size = 200 * MSS + 17;
            let mut sim = Sim::new(json!({ "delayed_ack": delayed }), dctcp, &[size]);
            sim.run(Time::ms(100));
            assert_eq!(sim.completions.len(), 1);
            assert_eq!(sim.completions[0].2, 1);
            assert_eq!(sim.h.tcp.flow_stats(0), FlowStats::default());
            assert_eq!(sim.sent.iter().map(|p| p.payload as u64).sum::<u64>(), size);
            assert!(sim.h.tcp.sender_done(0));
        }
    }

    #[test]
    fn random_loss_reordering_and_marking_always_complete() {
        let mut total_retx = 0;
        let mut total_to = 0;
        for seed in 1..=6u64 {
            for (dctcp, sack, delayed) in [
                (false, true, false),
                (false, false, false),
                (false, true, true),
                (false, false, true),
                (true, true, false),
                (true, false, true),
            ] {
                let sizes = [1, 700, 3 * MSS, 40 * MSS + 3, 300 * MSS];
                let flows: Vec<FlowInfo> = sizes
                    .iter()
                    .enumerate()
                    .map(|(i, &s)| flow(i as FlowId, (i % 3) as NodeId, ((i + 1) % 3) as NodeId, s))
                    .collect();
                let cfg = json!({ "sack": sack, "delayed_ack": delayed, "min_rto": "200us" });
                let mut sim = Sim::new(cfg, dctcp, &sizes).with_flows(flows);
                sim.rng ^= seed.wrapping_mul(0x2545_F491_4F6C_DD1D);
                sim.data_loss = 0.03;
                sim.ack_loss = 0.03;
                sim.ce_prob = if dctcp { 0.2 } else { 0.0 };
                sim.jitter = if seed.is_multiple_of(2) { Time::us(3).0 } else { 0 };
                sim.run(Time::ms(2000));
                let ctx = format!("seed {seed} dctcp {dctcp} sack {sack} delayed {delayed}");
                let mut done: Vec<FlowId> = sim.completions.iter().map(|c| c.1).collect();
                done.sort();
                assert_eq!(done, vec![0, 1, 2, 3, 4], "each flow completes exactly once ({ctx})");
                for &(_, f, host) in &sim.completions {
                    assert_eq!(host, sim.h.flows[f as usize].dst, "{ctx}");
                }
                for f in 0..5 {
                    assert!(sim.h.tcp.sender_done(f), "sender {f} finished ({ctx})");
                    let st = sim.h.tcp.flow_stats(f);
                    total_retx += st.retx_bytes;
                    total_to += st.timeouts;
                }
                assert!(sim.heap.is_empty(), "run went quiet ({ctx})");
            }
        }
        assert!(total_retx > 0 && total_to > 0);
    }

    /// The range helpers find their starting range by binary search; they must agree with a
    /// byte-by-byte reading of the sorted, disjoint (possibly touching) range lists.
    #[test]
    fn range_helpers_agree_with_a_byte_by_byte_reference() {
        let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        for _ in 0..300 {
            // A random sorted, disjoint list over [0, 200): gaps of 0..6, lengths 1..8.
            let mut v = Vec::new();
            let mut x = next(6);
            while x < 190 && v.len() < 40 {
                let len = 1 + next(8);
                v.push((x, x + len));
                x += len + next(6);
            }
            let covered = |b: u64| v.iter().any(|&(p, q)| p <= b && b < q);
            for s in 0..210 {
                let mut r = s;
                if let Some(&(_, q)) = v.iter().find(|&&(p, q)| p <= s && s < q) {
                    r = q;
                }
                assert_eq!(skip_in(&v, s), r, "skip_in({v:?}, {s})");
                let e = s + next(40);
                let n = (s..e).filter(|&b| covered(b)).count() as u64;
                assert_eq!(overlap(&v, s, e), n, "overlap({v:?}, {s}, {e})");
            }
        }
    }
}
