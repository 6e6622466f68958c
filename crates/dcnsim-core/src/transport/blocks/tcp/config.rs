//! The TCP block's configuration: the `[transport]` fields of `tcp`/`dctcp` and the
//! variants built on them, their defaults and errors, resolved into [`TcpParams`]; and the
//! priority policy a transport embedding the sender chooses classes with.

use super::*;

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
