//! pHost's scenario fields (`protocol = "phost"`), the errors they can raise and the run
//! parameters resolved from them; see the parent module for what each field models.

use super::*;

/// The `[transport]` table of `protocol = "phost"`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PhostConfig {
    pub free_tokens: Option<u64>,
    pub free_tokens_short_only: bool,
    pub reserve_free: Option<bool>,
    pub token_ttl: Option<Time>,
    pub downgrade_tokens: Option<u64>,
    pub downgrade_time: Option<Time>,
    pub retx_timeout: Option<Time>,
    pub rts_timeout: Option<Time>,
    pub ctrl_prio: Option<u8>,
    pub free_prio: Option<u8>,
    pub data_prio: Option<u8>,
    /// Add the Aeolus building block (see "pHost + Aeolus").
    pub aeolus: bool,
    /// With `aeolus`: send the probe after the free-token packets (Aeolus Fig. 22).
    pub aeolus_probe: Option<bool>,
}

/// Errors of the `phost` table.
#[derive(Debug, Clone, PartialEq)]
pub enum PhostConfigError {
    /// An unknown field, a value of the wrong type or an unparsable time.
    Parse(FieldError),
    /// A well-formed value outside its range; `fix` says what to write instead.
    OutOfRange { field: String, value: String, fix: String },
}

impl PhostConfigError {
    /// The offending key, e.g. `transport.token_ttl`.
    pub fn field(&self) -> String {
        match self {
            PhostConfigError::Parse(e) => e.field(),
            PhostConfigError::OutOfRange { field, .. } => format!("transport.{field}"),
        }
    }
}

impl fmt::Display for PhostConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhostConfigError::Parse(e) => write!(f, "{e}"),
            PhostConfigError::OutOfRange { value, fix, .. } => write!(f, "{} = {value}: {fix}", self.field()),
        }
    }
}

impl std::error::Error for PhostConfigError {}

impl From<FieldError> for PhostConfigError {
    fn from(e: FieldError) -> Self {
        PhostConfigError::Parse(e)
    }
}

/// Resolved pHost parameters (see the parent module's documentation for each).
#[derive(Clone, Debug, PartialEq)]
pub struct PhostParams {
    pub mtu: u64,
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    /// T: MTU transmission time at the destination's (fastest host) rate: token spacing.
    pub token_interval: Time,
    pub free: FreeTokens,
    /// Keep token-driven data out of the downlink time announced free packets occupy.
    pub reserve_free: bool,
    pub token_ttl: Time,
    pub downgrade_tokens: u64,
    pub downgrade_time: Time,
    pub retx_timeout: Time,
    pub rts_timeout: Time,
    pub ctrl_prio: u8,
    pub data_prio: u8,
    /// The Aeolus building block, when enabled.
    pub aeolus: Option<AeolusConfig>,
}

impl PhostConfig {
    pub fn resolve(&self, net: &NetInfo) -> Result<PhostParams, PhostConfigError> {
        let range =
            |field: &str, value: String, fix: String| PhostConfigError::OutOfRange { field: field.into(), value, fix };
        let classes = net.priorities.clamp(1, 8);
        let prio = |field: &str, v: Option<u8>, default: u8| -> Result<u8, PhostConfigError> {
            match v {
                None => Ok(default.min(classes - 1)),
                Some(p) if p < classes => Ok(p),
                Some(p) => Err(range(
                    field,
                    p.to_string(),
                    format!("network.priorities is {classes}: use a class from 0 to {}", classes - 1),
                )),
            }
        };
        let mtu = net.mtu.0;
        let t = net.max_host_rate.tx_time(net.mtu);
        let pos_time = |field: &str, v: Option<Time>, default: Time| -> Result<Time, PhostConfigError> {
            match v {
                None => Ok(default),
                Some(x) if x > Time::ZERO => Ok(x),
                Some(x) => Err(range(field, format!("\"{x}\""), "give a positive time, e.g. \"2us\"".into())),
            }
        };
        let free_pkts = self.free_tokens.unwrap_or_else(|| FreeTokens::bdp_packets(net));
        let downgrade_tokens = match self.downgrade_tokens {
            None => FreeTokens::bdp_packets(net).max(1),
            Some(0) => {
                return Err(range(
                    "downgrade_tokens",
                    "0".into(),
                    "at least 1 unanswered token must be allowed; the default is one BDP of tokens".into(),
                ))
            }
            Some(n) => n,
        };
        if !self.aeolus && self.aeolus_probe.is_some() {
            return Err(range(
                "aeolus_probe",
                self.aeolus_probe.unwrap_or(true).to_string(),
                "the probe is part of Aeolus: set aeolus = true as well, or remove aeolus_probe".into(),
            ));
        }
        let data_prio = prio("data_prio", self.data_prio, 2)?;
        // With Aeolus, free (unscheduled) data shares the scheduled data's FIFO by default
        // (Aeolus §III-B), so that scheduled packets come first through selective dropping.
        let free_prio = prio("free_prio", self.free_prio, if self.aeolus { data_prio } else { 1 })?;
        Ok(PhostParams {
            mtu,
            mss: net.mss(),
            header: net.header.0,
            ctrl_size: net.ctrl_size.0,
            token_interval: t,
            free: FreeTokens {
                packets: free_pkts,
                short_flows_only: self.free_tokens_short_only,
                prio: free_prio,
                flags: if self.aeolus { aeolus::UNSCHEDULED_FLAGS } else { 0 },
            },
            reserve_free: self.reserve_free.unwrap_or(true),
            token_ttl: pos_time("token_ttl", self.token_ttl, t.mul_f64(1.5))?,
            downgrade_tokens,
            downgrade_time: pos_time("downgrade_time", self.downgrade_time, t * 25)?,
            retx_timeout: pos_time("retx_timeout", self.retx_timeout, (t * 9).max(net.max_base_rtt + t * 2))?,
            rts_timeout: pos_time("rts_timeout", self.rts_timeout, (net.max_base_rtt * 10).max(t))?,
            ctrl_prio: prio("ctrl_prio", self.ctrl_prio, 0)?,
            data_prio,
            aeolus: self
                .aeolus
                .then_some(AeolusConfig { mode: UnschedMode::SelectiveDrop, probe: self.aeolus_probe.unwrap_or(true) }),
        })
    }
}
