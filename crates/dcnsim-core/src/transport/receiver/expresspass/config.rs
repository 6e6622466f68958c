//! ExpressPass' scenario fields (`protocol = "expresspass"`), the pre-credit (first-RTT) phase and the
//! run parameters resolved from them; see the parent module for what each field models.

use super::*;

/// The pre-credit (first-RTT) phase. ExpressPass sends nothing before the first credit
/// (`packets = 0`); with Aeolus a flow sends up to `packets` (one BDP) unscheduled packets
/// with `flags` (`UNSCHEDULED` for selective dropping) in class `prio`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreCredit {
    /// Packets a flow sends at start, at line rate, before any credit.
    pub packets: u64,
    /// Extra [`PacketFlags`] bits on those packets.
    pub flags: u16,
    /// Their priority class.
    pub prio: u8,
}

/// The `[transport]` table of `protocol = "expresspass"`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ExpressPassConfig {
    pub alpha: Option<f64>,
    pub w_init: Option<f64>,
    pub w_max: Option<f64>,
    pub w_min: Option<f64>,
    pub target_loss: Option<f64>,
    pub jitter: Option<f64>,
    pub credit_size_spread: Option<Bytes>,
    pub symmetric_routing: Option<bool>,
    pub update_period: Option<Time>,
    pub request_timeout: Option<Time>,
    pub stop_timeout: Option<Time>,
    pub data_prio: Option<u8>,
    pub credit_prio: Option<u8>,
    pub aeolus: Option<bool>,
    pub aeolus_mode: Option<UnschedMode>,
    pub aeolus_probe: Option<bool>,
    pub unsched_bytes: Option<Bytes>,
    pub rto: Option<Time>,
    pub nack: Option<bool>,
    pub credit_from_request: Option<bool>,
}

/// Errors of the `expresspass` table.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpressPassConfigError {
    /// An unknown field, a value of the wrong type or an unparsable time.
    Parse(FieldError),
    /// A well-formed value outside its range; `fix` says what to write instead.
    OutOfRange { field: String, value: String, fix: String },
}

impl ExpressPassConfigError {
    /// The offending key, e.g. `transport.alpha`.
    pub fn field(&self) -> String {
        match self {
            ExpressPassConfigError::Parse(e) => e.field(),
            ExpressPassConfigError::OutOfRange { field, .. } => format!("transport.{field}"),
        }
    }
}

impl fmt::Display for ExpressPassConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpressPassConfigError::Parse(e) => write!(f, "{e}"),
            ExpressPassConfigError::OutOfRange { value, fix, .. } => write!(f, "{} = {value}: {fix}", self.field()),
        }
    }
}

impl std::error::Error for ExpressPassConfigError {}

impl From<FieldError> for ExpressPassConfigError {
    fn from(e: FieldError) -> Self {
        ExpressPassConfigError::Parse(e)
    }
}

/// Resolved ExpressPass parameters (see the module documentation for each).
#[derive(Clone, Debug, PartialEq)]
pub struct ExpressPassParams {
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    /// Credit gap at `max_rate`: one (credit + MTU) transmission time at the host rate.
    pub min_gap: Time,
    pub alpha: f64,
    pub w_init: f64,
    pub w_max: f64,
    pub w_min: f64,
    pub target_loss: f64,
    pub jitter: f64,
    /// Credits are `ctrl_size` +- up to this many bytes (uniform), 0 = fixed size.
    pub credit_size_spread: u64,
    /// Credits retrace the data path ([`PacketFlags::REVERSE_PATH`]).
    pub symmetric_routing: bool,
    pub update_period: Option<Time>,
    pub request_timeout: Time,
    pub stop_timeout: Time,
    pub data_prio: u8,
    pub credit_prio: u8,
    /// The Aeolus building block (None: plain ExpressPass).
    pub aeolus: Option<AeolusConfig>,
    /// Unscheduled packets a flow may send before its first credit (Aeolus: one BDP).
    pub unsched_pkts: u64,
    /// Class of unscheduled packets and of the probe (`data_prio`, or the lowest class
    /// in `low_priority` mode).
    pub unsched_prio: u8,
    /// Receiver's last-resort timeout (Aeolus; and every loss without `nack`).
    pub rto: Time,
    /// A CREDIT_STOP that finds data missing is answered by NACKs (false: only `rto`).
    pub nack: bool,
    /// Aeolus: the receiver credits every flow from its request on, including bytes still
    /// expected unscheduled (the Aeolus paper's ExpressPass); false: it credits only bytes
    /// that will not come unscheduled ("Receiver accounting").
    pub credit_from_request: bool,
}

impl ExpressPassConfig {
    pub fn resolve(&self, net: &NetInfo) -> Result<ExpressPassParams, ExpressPassConfigError> {
        let range = |field: &str, value: String, fix: &str| ExpressPassConfigError::OutOfRange {
            field: field.into(),
            value,
            fix: fix.into(),
        };
        // A fraction in (lo_open? lo : [lo], hi].
        let frac = |field: &str, v: Option<f64>, default: f64, zero_ok: bool, hi: f64, fix: &str| {
            let x = v.unwrap_or(default);
            let lo_ok = if zero_ok { x >= 0.0 } else { x > 0.0 };
            if x.is_finite() && lo_ok && x <= hi {
                Ok(x)
            } else {
                Err(range(field, x.to_string(), fix))
            }
        };
        let w_max = frac("w_max", self.w_max, 0.5, false, 1.0, "give a fraction in (0, 1]; the default is 0.5")?;
        let alpha =
            frac("alpha", self.alpha, 1.0 / 16.0, false, 1.0, "give a fraction of max_rate in (0, 1], e.g. 0.0625")?;
        let w_init = frac("w_init", self.w_init, 1.0 / 16.0, false, w_max, "give a value in (0, w_max], e.g. 0.0625")?;
        let w_min = frac("w_min", self.w_min, 0.01, false, w_max, "give a value in (0, w_max], e.g. 0.01")?;
        let target_loss =
            frac("target_loss", self.target_loss, 0.1, true, 0.99, "give a loss fraction in [0, 1), e.g. 0.1")?;
        let jitter = frac("jitter", self.jitter, 0.1, true, 0.99, "give a relative jitter in [0, 1), e.g. 0.1")?;
        let classes = net.priorities.clamp(1, 8);
        let prio = |field: &str, v: Option<u8>| -> Result<u8, ExpressPassConfigError> {
            match v {
                None => Ok(0),
                Some(p) if p < classes => Ok(p),
                Some(p) => Err(range(
                    field,
                    p.to_string(),
                    &format!("network.priorities is {classes}: use a class from 0 to {}", classes - 1),
                )),
            }
        };
        let pos_time = |field: &str, v: Option<Time>| -> Result<Option<Time>, ExpressPassConfigError> {
            match v {
                Some(x) if x == Time::ZERO => {
                    Err(range(field, format!("\"{x}\""), "give a positive time, e.g. \"20us\""))
                }
                other => Ok(other),
            }
        };
        let spread = self.credit_size_spread.map(|b| b.0).unwrap_or(8);
        if spread >= net.ctrl_size.0 {
            return Err(range(
                "credit_size_spread",
                format!("\"{spread}B\""),
                &format!("must be below network.ctrl_size ({} B); the default is 8 B", net.ctrl_size.0),
            ));
        }
        let rtt = net.max_base_rtt.max(Time(1));
        let data_prio = prio("data_prio", self.data_prio)?;
        let aeolus = self.aeolus.unwrap_or(false).then(|| AeolusConfig {
            mode: self.aeolus_mode.unwrap_or(UnschedMode::SelectiveDrop),
            probe: self.aeolus_probe.unwrap_or(true),
        });
        let unsched_bytes = self.unsched_bytes.unwrap_or_else(|| net.max_host_rate.bdp(net.max_base_rtt));
        if aeolus.is_some() && unsched_bytes.0 == 0 {
            return Err(range(
                "unsched_bytes",
                "\"0B\"".into(),
                "give a positive size (the default is one BDP: host rate x largest base RTT)",
            ));
        }
        let unsched_pkts = match aeolus {
            Some(_) => unsched_bytes.0.div_ceil(net.mss().max(1)),
            None => 0,
        };
        if aeolus.is_none() && self.credit_from_request.is_some() {
            return Err(range(
                "credit_from_request",
                self.credit_from_request.unwrap_or(false).to_string(),
                "only changes the receiver of ExpressPass+Aeolus (plain ExpressPass credits every flow from its request anyway): set aeolus = true as well, or remove credit_from_request",
            ));
        }
        let lowest = classes - 1;
        let unsched_prio = match aeolus {
            Some(AeolusConfig { mode: UnschedMode::LowPriority, .. }) => {
                if data_prio >= lowest {
                    return Err(range(
                        "aeolus_mode",
                        "\"low_priority\"".into(),
                        &format!(
                            "needs a class below data_prio ({data_prio}): use network.priorities >= {} or a lower data_prio",
                            data_prio + 2
                        ),
                    ));
                }
                lowest
            }
            _ => data_prio,
        };
        Ok(ExpressPassParams {
            mss: net.mss(),
            header: net.header.0,
            ctrl_size: net.ctrl_size.0,
            min_gap: net.max_host_rate.tx_time(Bytes(net.ctrl_size.0 + net.mtu.0)),
            alpha,
            w_init,
            w_max,
            w_min,
            target_loss,
            jitter,
            credit_size_spread: spread,
            symmetric_routing: self.symmetric_routing.unwrap_or(true),
            update_period: pos_time("update_period", self.update_period)?,
            request_timeout: pos_time("request_timeout", self.request_timeout)?.unwrap_or(rtt * 10),
            stop_timeout: pos_time("stop_timeout", self.stop_timeout)?.unwrap_or(rtt * 2),
            data_prio,
            credit_prio: prio("credit_prio", self.credit_prio)?,
            aeolus,
            unsched_pkts,
            unsched_prio,
            rto: pos_time("rto", self.rto)?.unwrap_or(Time::ms(10)),
            nack: self.nack.unwrap_or(true),
            credit_from_request: self.credit_from_request.unwrap_or(true),
        })
    }
}
