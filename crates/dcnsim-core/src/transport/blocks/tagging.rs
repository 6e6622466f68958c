//! Priority tagging and configuration helpers shared by PIAS, RC3 and PPT.
//!
//! # What is modelled
//! - [`Mlfq`]: the multi-level feedback queue tagger of PIAS (Bai et al., NSDI 2015, §3.1 and
//!   §4.1): a flow starts in the highest class and is demoted one class each time the payload
//!   bytes it has already sent reach the next demotion threshold. It never reads the flow
//!   size (information-agnostic). PPT's buffer-aware scheduling (PPT §4.1, last paragraph)
//!   falls back to the same tagger for flows it has not identified as large.
//! - [`split_table`]: the `[transport]` table of a protocol built on TCP/DCTCP holds the TCP
//!   fields ([`TcpConfig::FIELDS`]) and the protocol's own fields; this splits them and rejects
//!   unknown keys naming every accepted field.
//! - [`ExtConfigError`]: the typed error of those protocols (`field()` names the key).
//!
//! # Choices where the sources leave room
//! - A threshold is reached when the bytes sent *before* a packet are at least the
//!   threshold: with thresholds `[t0, ...]` exactly the first `t0` bytes go in class 0 (the
//!   PIAS ns-2 code compares the packet's byte offset with the threshold the same way).
//!   Bytes sent count retransmissions, as the PIAS kernel module counts what leaves the host.

use crate::config::FieldError;
use crate::transport::tcp::{TcpConfig, TcpConfigError};
use std::fmt;

/// Multi-level feedback queue tagging by bytes sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mlfq {
    /// Demotion thresholds in bytes, strictly increasing; `len() + 1` classes.
    pub thresholds: Vec<u64>,
}

impl Mlfq {
    pub fn new(thresholds: Vec<u64>) -> Mlfq {
        Mlfq { thresholds }
    }
    /// Class (0-based, relative to the first class of the scheme) of a packet sent after
    /// `bytes_sent` payload bytes of its flow. At most 7 comparisons.
    #[inline]
    pub fn class(&self, bytes_sent: u64) -> u8 {
        self.thresholds.iter().take_while(|&&t| bytes_sent >= t).count() as u8
    }
    /// Number of classes the tagger uses.
    pub fn classes(&self) -> u8 {
        self.thresholds.len() as u8 + 1
    }
}

/// Check that a threshold list is strictly increasing and positive.
pub fn check_thresholds(field: &str, t: &[u64], max_len: usize) -> Result<(), ExtConfigError> {
    if t.len() > max_len {
        return Err(ExtConfigError::OutOfRange {
            field: field.into(),
            value: format!("{t:?}"),
            fix: format!("give at most {max_len} thresholds (one fewer than the classes used)"),
        });
    }
    for (i, w) in t.windows(2).enumerate() {
        if w[1] <= w[0] {
            return Err(ExtConfigError::OutOfRange {
                field: format!("{field}[{}]", i + 1),
                value: w[1].to_string(),
                fix: "thresholds must be strictly increasing".into(),
            });
        }
    }
    if t.first() == Some(&0) {
        return Err(ExtConfigError::OutOfRange {
            field: format!("{field}[0]"),
            value: "0".into(),
            fix: "a threshold of 0 B demotes every packet; give a positive size".into(),
        });
    }
    Ok(())
}

/// Split a `[transport]` table into (the protocol's own fields, the TCP fields). `null` gives
/// two empty tables. Keys that are neither are rejected, listing every accepted field.
pub fn split_table(
    cfg: &serde_json::Value,
    protocol: &str,
    own: &[&str],
) -> Result<(serde_json::Value, serde_json::Value), ExtConfigError> {
    let mut mine = serde_json::Map::new();
    let mut tcp = serde_json::Map::new();
    if cfg.is_null() {
        return Ok((mine.into(), tcp.into()));
    }
    let obj = cfg.as_object().ok_or_else(|| {
        ExtConfigError::Field(FieldError::invalid(
            "transport",
            format!("expected a table of {protocol} settings, found {cfg}"),
            "write the settings as key = value pairs under [transport]",
        ))
    })?;
    for (k, v) in obj {
        if own.contains(&k.as_str()) {
            mine.insert(k.clone(), v.clone());
        } else if TcpConfig::FIELDS.contains(&k.as_str()) {
            tcp.insert(k.clone(), v.clone());
        } else {
            let mut all: Vec<&str> = own.to_vec();
            all.extend_from_slice(TcpConfig::FIELDS);
            return Err(ExtConfigError::Field(FieldError::Unknown {
                path: format!("transport.{k}"),
                expected: all.join(", "),
            }));
        }
    }
    Ok((mine.into(), tcp.into()))
}

/// A `[transport]` table error of PIAS, RC3 or PPT.
#[derive(Clone, Debug, PartialEq)]
pub enum ExtConfigError {
    /// A TCP/DCTCP field is invalid (the embedded high-priority loop).
    Tcp(TcpConfigError),
    /// Unknown field, wrong type or unparsable value of the protocol's own fields.
    Field(FieldError),
    /// A well-formed value outside its range; `fix` says what to write instead.
    OutOfRange { field: String, value: String, fix: String },
}

impl ExtConfigError {
    /// The offending key, e.g. `transport.thresholds`.
    pub fn field(&self) -> String {
        match self {
            ExtConfigError::Tcp(e) => e.field(),
            ExtConfigError::Field(e) => e.field(),
            ExtConfigError::OutOfRange { field, .. } => format!("transport.{field}"),
        }
    }
}

impl fmt::Display for ExtConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExtConfigError::Tcp(e) => write!(f, "{e}"),
            ExtConfigError::Field(e) => write!(f, "{e}"),
            ExtConfigError::OutOfRange { value, fix, .. } => write!(f, "{} = {value}: {fix}", self.field()),
        }
    }
}

impl std::error::Error for ExtConfigError {}

impl From<TcpConfigError> for ExtConfigError {
    fn from(e: TcpConfigError) -> Self {
        ExtConfigError::Tcp(e)
    }
}

impl From<FieldError> for ExtConfigError {
    fn from(e: FieldError) -> Self {
        ExtConfigError::Field(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mlfq_demotes_exactly_at_the_thresholds() {
        let m = Mlfq::new(vec![100, 1000]);
        assert_eq!(m.class(0), 0);
        assert_eq!(m.class(99), 0);
        assert_eq!(m.class(100), 1);
        assert_eq!(m.class(999), 1);
        assert_eq!(m.class(1000), 2);
        assert_eq!(m.class(u64::MAX), 2);
        assert_eq!(m.classes(), 3);
    }

    #[test]
    fn split_rejects_unknown_keys_listing_all_fields() {
        let (a, b) = split_table(&json!({"thresholds": [1], "min_rto": "1ms"}), "pias", &["thresholds"]).unwrap();
        assert_eq!(a, json!({"thresholds": [1]}));
        assert_eq!(b, json!({"min_rto": "1ms"}));
        let e = split_table(&json!({"bogus": 1}), "pias", &["thresholds"]).unwrap_err();
        assert_eq!(e.field(), "transport.bogus");
        assert!(e.to_string().contains("thresholds") && e.to_string().contains("min_rto"), "{e}");
    }

    #[test]
    fn thresholds_must_increase() {
        assert!(check_thresholds("thresholds", &[1, 2, 3], 7).is_ok());
        assert_eq!(check_thresholds("thresholds", &[5, 5], 7).unwrap_err().field(), "transport.thresholds[1]");
        assert!(check_thresholds("thresholds", &[1, 2, 3], 2).is_err());
    }
}
