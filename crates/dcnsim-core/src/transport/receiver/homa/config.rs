//! Homa's scenario fields (`protocol = "homa"`), the run parameters resolved from them, and the
//! unscheduled priority cutoffs of Homa §3.4; see the parent module for what each field models.

use super::*;

/// The `[transport]` table of `protocol = "homa"`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HomaConfig {
    pub rtt_bytes: Option<Bytes>,
    pub overcommitment: Option<u32>,
    pub unsched_prios: Option<u8>,
    pub sched_prios: Option<u8>,
    pub unsched_cutoffs: Option<Vec<Bytes>>,
    pub resend_timeout: Time,
    pub resend_ranges: ResendRanges,
    pub resend_per_peer: ResendPerPeer,
    pub rank_until_received: bool,
    pub resend_class: ResendClass,
    pub sender_timeout: Option<Time>,
    pub aeolus: bool,
    pub aeolus_mode: UnschedMode,
    pub aeolus_probe: bool,
    pub aeolus_probe_class: ProbeClass,
}

/// The class of the Aeolus probe (`aeolus_probe_class`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ProbeClass {
    /// The message's unscheduled class, behind its unscheduled packets on every hop.
    #[default]
    Unscheduled,
    /// Class 0, with the control packets: it overtakes unscheduled packets waiting in the
    /// lowest class (`aeolus_mode = "low_priority"`), which it then declares lost.
    Control,
}

/// Which missing packet ranges one RESEND round of a message asks for (`resend_ranges`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ResendRanges {
    /// Only the first missing range (the one with the lowest offset).
    First,
    /// Every missing range below the offset the sender's new data has reached.
    #[default]
    All,
}

/// The class a RESEND asks the sender to retransmit in (`resend_class`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ResendClass {
    /// The message's current scheduled class (its unscheduled class if it needs no grants).
    #[default]
    Message,
    /// Class 0, the highest.
    Highest,
}

/// How many RESENDs a receiving host may have outstanding to one sending host
/// (`resend_per_peer`): `true` (= 1), a count, or `false` (= 0, no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResendPerPeer(pub u32);

impl<'de> Deserialize<'de> for ResendPerPeer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ResendPerPeer;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "true (one outstanding RESEND per sending host), false (no limit) or a count")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<ResendPerPeer, E> {
                Ok(ResendPerPeer(v as u32))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ResendPerPeer, E> {
                u32::try_from(v).map(ResendPerPeer).map_err(|_| E::custom(format!("{v} is too large a count")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ResendPerPeer, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("{v} is negative: use false for no limit")))
                    .and_then(|v| self.visit_u64(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Default for HomaConfig {
    fn default() -> Self {
        HomaConfig {
            rtt_bytes: None,
            overcommitment: None,
            unsched_prios: None,
            sched_prios: None,
            unsched_cutoffs: None,
            resend_timeout: Time::ms(5),
            resend_ranges: ResendRanges::All,
            resend_per_peer: ResendPerPeer(0),
            rank_until_received: false,
            resend_class: ResendClass::Message,
            sender_timeout: None,
            aeolus: false,
            aeolus_mode: UnschedMode::SelectiveDrop,
            aeolus_probe: true,
            aeolus_probe_class: ProbeClass::Unscheduled,
        }
    }
}

/// A `[transport]` table error for `homa`. `field()` names the offending key.
#[derive(Clone, Debug, PartialEq)]
pub enum HomaConfigError {
    /// An unknown field, a value of the wrong type or an unparsable time/size.
    Parse(FieldError),
    /// A well-formed value outside its range; `fix` says what to write instead.
    OutOfRange { field: String, value: String, fix: String },
    /// The network description makes Homa impossible.
    Network { field: String, msg: String },
}

impl HomaConfigError {
    /// The offending key, e.g. `transport.rtt_bytes`.
    pub fn field(&self) -> String {
        match self {
            HomaConfigError::Parse(e) => e.field(),
            HomaConfigError::OutOfRange { field, .. } => format!("transport.{field}"),
            HomaConfigError::Network { field, .. } => field.clone(),
        }
    }
}

impl fmt::Display for HomaConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HomaConfigError::Parse(e) => write!(f, "{e}"),
            HomaConfigError::OutOfRange { value, fix, .. } => write!(f, "{} = {value}: {fix}", self.field()),
            HomaConfigError::Network { field, msg } => write!(f, "{field}: {msg}"),
        }
    }
}

impl std::error::Error for HomaConfigError {}

/// Resolved Homa parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct HomaParams {
    pub mtu: u64,
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    pub rtt_bytes: u64,
    pub overcommitment: u32,
    /// Priority classes of the network.
    pub classes: u8,
    pub unsched_prios: u8,
    pub sched_prios: u8,
    /// `unsched_prios - 1` increasing message sizes; a message of at most `cutoffs[j]`
    /// bytes (and above `cutoffs[j-1]`) uses unscheduled level j.
    pub cutoffs: Vec<u64>,
    /// Whether the split and the cutoffs came from the workload's CDF.
    pub from_cdf: bool,
    pub resend_timeout: Time,
    pub resend_ranges: ResendRanges,
    /// RESENDs a receiving host may have outstanding to one sending host; 0 = no limit.
    pub resend_per_peer: u32,
    /// A granted message keeps its rank and overcommitment slot until its last byte
    /// arrives (not only until it is fully granted).
    pub rank_until_received: bool,
    pub resend_class: ResendClass,
    pub sender_timeout: Time,
    pub aeolus: Option<AeolusConfig>,
    /// The Aeolus probe rides class 0 instead of the message's unscheduled class.
    pub probe_control: bool,
}

/// Fraction of a workload's bytes that are unscheduled: E[min(size, rtt_bytes)] / E[size],
/// for step-CDF points `(size, P(size <= s))`.
pub fn unsched_byte_fraction(cdf: &[(u64, f64)], rtt_bytes: u64) -> f64 {
    let (mut all, mut un, mut prev) = (0.0, 0.0, 0.0);
    for &(s, p) in cdf {
        let m = (p - prev).max(0.0);
        prev = p;
        all += m * s as f64;
        un += m * s.min(rtt_bytes) as f64;
    }
    if all > 0.0 {
        un / all
    } else {
        1.0
    }
}

/// Homa §3.4 unscheduled cutoffs: `levels - 1` message sizes such that each of the `levels`
/// unscheduled priority levels carries the same share of the workload's unscheduled bytes
/// (a message of size s contributes min(s, `rtt_bytes`)). Cutoff j is the smallest CDF size
/// at which the cumulative unscheduled bytes reach (j + 1) / `levels` of the total.
pub fn unsched_cutoffs(cdf: &[(u64, f64)], rtt_bytes: u64, levels: u8) -> Vec<u64> {
    let levels = levels.max(1) as usize;
    let mut total = 0.0;
    let mut prev = 0.0;
    let mut cum = Vec::with_capacity(cdf.len());
    for &(s, p) in cdf {
        total += (p - prev).max(0.0) * s.min(rtt_bytes) as f64;
        prev = p;
        cum.push((s, total));
    }
    let mut out = Vec::with_capacity(levels - 1);
    for j in 1..levels {
        let target = total * j as f64 / levels as f64;
        // Relative tolerance so that exact shares are not missed by rounding.
        let s = cum.iter().find(|&&(_, c)| c >= target * (1.0 - 1e-12)).map(|c| c.0).unwrap_or(u64::MAX);
        out.push(s);
    }
    out
}

impl HomaConfig {
    pub const FIELDS: &'static [&'static str] = &[
        "rtt_bytes",
        "overcommitment",
        "unsched_prios",
        "sched_prios",
        "unsched_cutoffs",
        "resend_timeout",
        "resend_ranges",
        "resend_per_peer",
        "rank_until_received",
        "resend_class",
        "sender_timeout",
        "aeolus",
        "aeolus_mode",
        "aeolus_probe",
        "aeolus_probe_class",
    ];

    /// Parse a `[transport]` table (JSON form, `protocol` removed). `null` means all defaults.
    pub fn parse(cfg: &serde_json::Value) -> Result<HomaConfig, HomaConfigError> {
        if cfg.is_null() {
            return Ok(HomaConfig::default());
        }
        if !cfg.is_object() {
            return Err(HomaConfigError::Parse(FieldError::invalid(
                "transport",
                format!("expected a table of homa settings, found {cfg}"),
                "write the settings as key = value pairs under [transport]",
            )));
        }
        crate::config::from_table(cfg, "transport").map_err(HomaConfigError::Parse)
    }

    /// Validate and resolve against the network (and the workload's size CDF in `net`).
    pub fn resolve(&self, net: &NetInfo) -> Result<HomaParams, HomaConfigError> {
        let bad =
            |field: &str, value: String, fix: String| HomaConfigError::OutOfRange { field: field.into(), value, fix };
        if net.mtu.0 <= net.header.0 {
            return Err(HomaConfigError::Network {
                field: "network.mtu".into(),
                msg: format!("MTU {} leaves no payload after the {} header; raise the MTU", net.mtu, net.header),
            });
        }
        let rtt_bytes = match self.rtt_bytes {
            Some(b) if b.0 == 0 => {
                return Err(bad(
                    "rtt_bytes",
                    "0".into(),
                    "must be at least 1 byte; remove it for one bandwidth-delay product".into(),
                ))
            }
            Some(b) => b.0,
            None => {
                let b = net.max_host_rate.bdp(net.max_base_rtt).0;
                if b == 0 {
                    return Err(HomaConfigError::Network {
                        field: "topology.host_rate".into(),
                        msg: "the bandwidth-delay product is 0; set transport.rtt_bytes".into(),
                    });
                }
                b
            }
        };
        if self.aeolus_probe_class == ProbeClass::Control
            && !(self.aeolus && self.aeolus_probe && self.aeolus_mode == UnschedMode::LowPriority)
        {
            return Err(bad(
                "aeolus_probe_class",
                "\"control\"".into(),
                "a probe in the control class is for unscheduled packets in the lowest class: set aeolus = true and aeolus_mode = \"low_priority\" (with the probe on), or remove aeolus_probe_class".into(),
            ));
        }
        if self.resend_timeout == Time::ZERO {
            return Err(bad("resend_timeout", "\"0ps\"".into(), "must be > 0, e.g. \"1ms\"".into()));
        }
        if self.sender_timeout == Some(Time::ZERO) {
            return Err(bad(
                "sender_timeout",
                "\"0ps\"".into(),
                "must be > 0; remove it for twice resend_timeout".into(),
            ));
        }
        let classes = net.priorities.clamp(1, 8);
        let level = |field: &str, v: u8| -> Result<u8, HomaConfigError> {
            if v == 0 || (v > classes.saturating_sub(1) && classes > 1) {
                Err(bad(
                    field,
                    v.to_string(),
                    format!(
                        "must be between 1 and {} (network.priorities = {classes}; unscheduled and scheduled levels share them)",
                        classes.saturating_sub(1).max(1)
                    ),
                ))
            } else {
                Ok(v)
            }
        };
        let cdf = net.size_cdf.as_deref().filter(|c| !c.is_empty());
        let (unsched_prios, sched_prios) = if classes == 1 {
            for (f, v) in [("unsched_prios", self.unsched_prios), ("sched_prios", self.sched_prios)] {
                if let Some(x) = v {
                    if x != 1 {
                        return Err(bad(
                            f,
                            x.to_string(),
                            "network.priorities is 1: use 1 (everything rides class 0)".into(),
                        ));
                    }
                }
            }
            (1, 1)
        } else {
            match (self.unsched_prios, self.sched_prios) {
                (Some(u), Some(s)) => {
                    let (u, s) = (level("unsched_prios", u)?, level("sched_prios", s)?);
                    if u + s > classes {
                        return Err(bad(
                            "sched_prios",
                            s.to_string(),
                            format!("unsched_prios + sched_prios = {} exceeds network.priorities = {classes}", u + s),
                        ));
                    }
                    (u, s)
                }
                (Some(u), None) => {
                    let u = level("unsched_prios", u)?;
                    (u, classes - u)
                }
                (None, Some(s)) => {
                    let s = level("sched_prios", s)?;
                    (classes - s, s)
                }
                (None, None) => {
                    let u = match cdf {
                        Some(c) => {
                            let f = unsched_byte_fraction(c, rtt_bytes);
                            ((classes as f64 * f).round() as u8).clamp(1, classes - 1)
                        }
                        None => 2.min(classes - 1),
                    };
                    (u, classes - u)
                }
            }
        };
        let cutoffs = match &self.unsched_cutoffs {
            Some(list) => {
                let v: Vec<u64> = list.iter().map(|b| b.0).collect();
                if v.len() != unsched_prios as usize - 1 || v.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(bad(
                        "unsched_cutoffs",
                        format!("{v:?}"),
                        format!(
                            "give {} strictly increasing message sizes (one fewer than the {unsched_prios} unscheduled levels)",
                            unsched_prios - 1
                        ),
                    ));
                }
                v
            }
            None => match cdf {
                Some(c) => unsched_cutoffs(c, rtt_bytes, unsched_prios),
                None => (1..unsched_prios as u64).map(|j| rtt_bytes * j / unsched_prios as u64).collect(),
            },
        };
        let overcommitment = match self.overcommitment {
            Some(0) => {
                return Err(bad(
                    "overcommitment",
                    "0".into(),
                    "must be at least 1 message; remove it for one per scheduled level".into(),
                ))
            }
            Some(k) => k,
            None => sched_prios as u32,
        };
        Ok(HomaParams {
            mtu: net.mtu.0,
            mss: net.mss(),
            header: net.header.0,
            ctrl_size: net.ctrl_size.0,
            rtt_bytes,
            overcommitment,
            classes,
            unsched_prios,
            sched_prios,
            cutoffs,
            from_cdf: cdf.is_some() && self.unsched_cutoffs.is_none(),
            resend_timeout: self.resend_timeout,
            resend_ranges: self.resend_ranges,
            resend_per_peer: self.resend_per_peer.0,
            rank_until_received: self.rank_until_received,
            resend_class: self.resend_class,
            sender_timeout: self.sender_timeout.unwrap_or(self.resend_timeout * 2),
            aeolus: self.aeolus.then_some(AeolusConfig { mode: self.aeolus_mode, probe: self.aeolus_probe }),
            probe_control: self.aeolus_probe_class == ProbeClass::Control,
        })
    }
}

impl HomaParams {
    /// Packets of a message of `size` bytes (at least 1).
    pub fn packets(&self, size: u64) -> u64 {
        size.div_ceil(self.mss).max(1)
    }
    /// Unscheduled packets of a message.
    pub fn unsched_packets(&self, size: u64) -> u64 {
        self.packets(size).min(self.rtt_bytes.div_ceil(self.mss).max(1))
    }
    /// Unscheduled bytes of a message.
    pub fn unsched_bytes(&self, size: u64) -> u64 {
        (self.unsched_packets(size) * self.mss).min(size)
    }
    fn low_priority(&self) -> bool {
        matches!(self.aeolus, Some(AeolusConfig { mode: UnschedMode::LowPriority, .. }))
    }
    /// Unscheduled level of a message of `size` bytes (0 = smallest messages).
    pub fn unsched_level(&self, size: u64) -> u8 {
        self.cutoffs.partition_point(|&c| c < size) as u8
    }
    /// Class of a message's unscheduled packets (and of its Aeolus probe).
    pub fn unsched_prio(&self, size: u64) -> u8 {
        if self.low_priority() {
            return self.classes - 1;
        }
        self.unsched_level(size).min(self.classes - 1)
    }
    /// Class of the Aeolus probe of a message whose unscheduled packets ride `unsched_prio`.
    pub fn probe_prio(&self, unsched_prio: u8) -> u8 {
        if self.probe_control {
            0
        } else {
            unsched_prio
        }
    }
    /// Class of the scheduled packets of the message ranked `rank` (0 = fewest remaining
    /// bytes) among `n` messages being granted.
    pub fn sched_prio(&self, rank: usize, n: usize) -> u8 {
        let s = self.sched_prios as usize;
        let off = (rank + s.saturating_sub(n)).min(s - 1) as u8;
        let base = if self.low_priority() {
            // Just above the lowest class, which holds the unscheduled packets.
            (self.classes - 1).saturating_sub(self.sched_prios)
        } else {
            self.unsched_prios
        };
        (base + off).min(self.classes - 1)
    }
}
