//! NDP's scenario fields (`protocol = "ndp"`) and the run parameters resolved from them; see the
//! parent module for what each field models.

use super::*;

/// The scenario's `[transport]` table for `ndp` (without `protocol`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NdpConfig {
    /// Packets of the first window; `None` = one BDP (see the module docs).
    pub initial_window: Option<u64>,
    /// Flag data packets trimmable; `None` = true, false with `aeolus`.
    pub trimming: Option<bool>,
    /// Sender timeout.
    pub rto: Time,
    /// Rate that spaces PULLs; `None` = the fastest host link.
    pub pull_rate: Option<Rate>,
    /// Priority class of data packets; `None` = 1 (0 with a single class).
    pub data_prio: Option<u8>,
    /// Add the Aeolus first-RTT building block (see "NDP + Aeolus").
    pub aeolus: bool,
    /// With `aeolus`: send the probe after the first window (Aeolus Fig. 22 compares without).
    pub aeolus_probe: bool,
}

impl Default for NdpConfig {
    fn default() -> Self {
        NdpConfig {
            initial_window: None,
            trimming: None,
            rto: Time::ms(1),
            pull_rate: None,
            data_prio: None,
            aeolus: false,
            aeolus_probe: true,
        }
    }
}

/// A `[transport]` table error for `ndp`. `field()` names the offending key.
#[derive(Clone, Debug, PartialEq)]
pub enum NdpConfigError {
    /// An unknown field, a value of the wrong type or an unparsable time/rate.
    Parse(FieldError),
    /// A well-formed value outside its range; `fix` says what to write instead.
    OutOfRange { field: String, value: String, fix: String },
    /// The network description makes NDP impossible.
    Network { field: String, msg: String },
}

impl NdpConfigError {
    /// The offending key, e.g. `transport.rto`.
    pub fn field(&self) -> String {
        match self {
            NdpConfigError::Parse(e) => e.field(),
            NdpConfigError::OutOfRange { field, .. } => format!("transport.{field}"),
            NdpConfigError::Network { field, .. } => field.clone(),
        }
    }
}

impl fmt::Display for NdpConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NdpConfigError::Parse(e) => write!(f, "{e}"),
            NdpConfigError::OutOfRange { value, fix, .. } => write!(f, "{} = {value}: {fix}", self.field()),
            NdpConfigError::Network { field, msg } => write!(f, "{field}: {msg}"),
        }
    }
}

impl std::error::Error for NdpConfigError {}

/// Resolved, validated parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct NdpParams {
    /// Payload bytes of a full packet.
    pub mss: u64,
    pub header: u64,
    pub mtu: u64,
    pub ctrl_size: u64,
    /// Explicit first window in packets (`None` = one BDP per flow).
    pub initial_window: Option<u64>,
    /// Largest base RTT of the network (for the default first window).
    pub max_base_rtt: Time,
    pub trimming: bool,
    pub rto: Time,
    pub pull_rate: Rate,
    /// The Aeolus building block, when enabled (selective dropping mode only).
    pub aeolus: Option<AeolusConfig>,
    /// Spacing of PULLs: one MTU at `pull_rate`.
    pub pull_interval: Time,
    pub data_prio: u8,
}

/// One bandwidth-delay product in MTU-sized packets, rounded up, at least 1.
pub fn bdp_window(rate: Rate, rtt: Time, mtu: u64) -> u64 {
    rate.bdp(rtt).0.div_ceil(mtu.max(1)).max(1)
}

impl NdpConfig {
    pub const FIELDS: &'static [&'static str] =
        &["initial_window", "trimming", "rto", "pull_rate", "data_prio", "aeolus", "aeolus_probe"];

    /// Parse a `[transport]` table (JSON form, `protocol` removed). `null` means all defaults.
    pub fn parse(cfg: &serde_json::Value) -> Result<NdpConfig, NdpConfigError> {
        if cfg.is_null() {
            return Ok(NdpConfig::default());
        }
        if !cfg.is_object() {
            return Err(NdpConfigError::Parse(FieldError::invalid(
                "transport",
                format!("expected a table of ndp settings, found {cfg}"),
                "write the settings as key = value pairs under [transport]",
            )));
        }
        crate::config::from_table(cfg, "transport").map_err(NdpConfigError::Parse)
    }

    /// Validate and resolve against the network.
    pub fn resolve(&self, net: &NetInfo) -> Result<NdpParams, NdpConfigError> {
        let bad =
            |field: &str, value: String, fix: String| NdpConfigError::OutOfRange { field: field.into(), value, fix };
        if net.mtu.0 <= net.header.0 {
            return Err(NdpConfigError::Network {
                field: "network.mtu".into(),
                msg: format!("MTU {} leaves no payload after the {} header; raise the MTU", net.mtu, net.header),
            });
        }
        if let Some(0) = self.initial_window {
            return Err(bad(
                "initial_window",
                "0".into(),
                "must be at least 1 packet; remove it for one bandwidth-delay product".into(),
            ));
        }
        if self.rto == Time::ZERO {
            return Err(bad("rto", "\"0ps\"".into(), "must be > 0, e.g. \"1ms\"".into()));
        }
        if self.aeolus && self.trimming == Some(true) {
            return Err(bad(
                "trimming",
                "true".into(),
                "Aeolus replaces payload trimming (Aeolus §V-D): remove `trimming` or set it to false, \
                 and run on network.queue_policy = \"selective_drop\""
                    .into(),
            ));
        }
        if !self.aeolus && !self.aeolus_probe {
            return Err(bad(
                "aeolus_probe",
                "false".into(),
                "the probe is part of Aeolus: set aeolus = true as well, or remove aeolus_probe".into(),
            ));
        }
        let pull_rate = match self.pull_rate {
            Some(r) if r.0 == 0 => {
                return Err(bad(
                    "pull_rate",
                    "\"0Gbps\"".into(),
                    "must be > 0; remove it to pace PULLs at the host link rate".into(),
                ))
            }
            Some(r) => r,
            None if net.max_host_rate.0 == 0 => {
                return Err(NdpConfigError::Network {
                    field: "topology.host_rate".into(),
                    msg: "no host link has a positive rate; NDP paces PULLs at the host rate".into(),
                })
            }
            None => net.max_host_rate,
        };
        let classes = net.priorities.clamp(1, 8);
        let data_prio = match self.data_prio {
            Some(p) if p >= classes => {
                return Err(bad(
                    "data_prio",
                    p.to_string(),
                    format!("must be below the {classes} priority classes (0 = highest)"),
                ))
            }
            Some(p) => p,
            None => 1.min(classes - 1),
        };
        Ok(NdpParams {
            mss: net.mss(),
            header: net.header.0,
            mtu: net.mtu.0,
            ctrl_size: net.ctrl_size.0,
            initial_window: self.initial_window,
            max_base_rtt: net.max_base_rtt,
            trimming: self.trimming.unwrap_or(!self.aeolus),
            rto: self.rto,
            pull_rate,
            aeolus: self.aeolus.then_some(AeolusConfig { mode: UnschedMode::SelectiveDrop, probe: self.aeolus_probe }),
            pull_interval: pull_rate.tx_time(net.mtu),
            data_prio,
        })
    }
}

impl NdpParams {
    /// Packets of `flow`'s first window (before capping at the flow's length).
    pub fn first_window(&self, flow: &FlowInfo) -> u64 {
        match self.initial_window {
            Some(w) => w,
            None => bdp_window(flow.host_rate, self.max_base_rtt, self.mtu),
        }
    }
    /// Number of packets of a flow of `size` bytes (at least 1).
    pub fn packets(&self, size: u64) -> u64 {
        size.div_ceil(self.mss).max(1)
    }
}
