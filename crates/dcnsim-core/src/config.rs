//! Helpers for turning scenario tables into typed configuration with field-named errors.
//!
//! Scenario sections arrive as `serde_json::Value` (TOML is converted to JSON first).
//! [`from_table`] deserializes one section into a `deny_unknown_fields` struct and turns
//! serde's message into a [`FieldError`] that names the full field path.

use serde::de::DeserializeOwned;
use std::fmt;

/// A problem with one field of a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldError {
    /// A field that the section does not have.
    Unknown { path: String, expected: String },
    /// A required field is absent.
    Missing { path: String },
    /// A field has a value of the wrong type or outside its range.
    Invalid { path: String, problem: String, fix: String },
}

impl FieldError {
    pub fn field(&self) -> String {
        match self {
            FieldError::Unknown { path, .. } | FieldError::Missing { path } | FieldError::Invalid { path, .. } => {
                path.clone()
            }
        }
    }
    pub fn invalid(path: impl Into<String>, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        FieldError::Invalid { path: path.into(), problem: problem.into(), fix: fix.into() }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldError::Unknown { path, expected } => {
                write!(f, "{path}: unknown field; remove it or use one of: {expected}")
            }
            FieldError::Missing { path } => write!(f, "{path}: required field is missing; add it"),
            FieldError::Invalid { path, problem, fix } => write!(f, "{path}: {problem}; {fix}"),
        }
    }
}

impl std::error::Error for FieldError {}

/// Join a section path and a field name.
pub fn join(section: &str, field: &str) -> String {
    if section.is_empty() {
        field.to_string()
    } else {
        format!("{section}.{field}")
    }
}

/// Deserialize `v` (the table at `section`) into `T`, naming the offending field on error.
pub fn from_table<T: DeserializeOwned>(v: &serde_json::Value, section: &str) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let inner = e.path().to_string();
        let at = if inner == "." || inner.is_empty() { section.to_string() } else { join(section, &inner) };
        let msg = e.into_inner().to_string();
        match serde_to_field(&msg, section) {
            // For an unknown field the path already ends with its name.
            FieldError::Unknown { expected, .. } => FieldError::Unknown { path: at, expected },
            // For a missing field the path points at the table that lacks it.
            FieldError::Missing { path } => {
                let name = path.rsplit('.').next().unwrap_or_default().to_string();
                FieldError::Missing { path: join(&at, &name) }
            }
            FieldError::Invalid { problem, fix, .. } => FieldError::Invalid { path: at, problem, fix },
        }
    })
}

/// Map a serde error message to a field error.
pub fn serde_to_field(msg: &str, section: &str) -> FieldError {
    // serde's messages: "unknown field `x`, expected one of `a`, `b`", "missing field `x`",
    // "invalid type: ..., expected ...", or a custom message from a field's deserializer.
    let tick = |m: &str| -> Option<String> {
        let a = m.find('`')?;
        let b = m[a + 1..].find('`')?;
        Some(m[a + 1..a + 1 + b].to_string())
    };
    if let Some(rest) = msg.strip_prefix("unknown field ") {
        let name = tick(rest).unwrap_or_default();
        let expected = rest
            .split_once("expected ")
            .map(|(_, e)| e.replace("one of ", "").replace(" or ", ", ").replace('`', ""))
            .unwrap_or_default();
        return FieldError::Unknown { path: join(section, &name), expected };
    }
    if let Some(rest) = msg.strip_prefix("missing field ") {
        return FieldError::Missing { path: join(section, &tick(rest).unwrap_or_default()) };
    }
    if let Some(rest) = msg.strip_prefix("unknown variant ") {
        let name = tick(rest).unwrap_or_default();
        let expected = rest.split_once("expected ").map(|(_, e)| e.replace('`', "")).unwrap_or_default();
        return FieldError::invalid(section, format!("unknown value '{name}'"), format!("use {expected}"));
    }
    FieldError::invalid(section, msg.to_string(), "see docs/scenario.md for the field's type and unit")
}

/// Require a strictly positive value.
pub fn positive<T: PartialOrd + Default + fmt::Display>(v: T, path: &str, what: &str) -> Result<T, FieldError> {
    if v > T::default() {
        Ok(v)
    } else {
        Err(FieldError::invalid(path, format!("must be > 0, got {v}"), format!("give a positive {what}")))
    }
}

/// The configuration error of a protocol whose own fields are all it reads: a field that does
/// not parse, or a well-formed value outside its range. Protocols alias it
/// (`pub type PaseConfigError = ProtocolConfigError;`) instead of each writing the same enum.
#[derive(Debug)]
pub enum ProtocolConfigError {
    /// An unknown field, a value of the wrong type or an unparsable quantity.
    Parse(FieldError),
    /// A well-formed value outside its range; `fix` says what to write instead.
    OutOfRange { field: String, value: String, fix: String },
}

impl ProtocolConfigError {
    /// The offending key, e.g. `transport.num_que`.
    pub fn field(&self) -> String {
        match self {
            ProtocolConfigError::Parse(e) => e.field(),
            ProtocolConfigError::OutOfRange { field, .. } => format!("transport.{field}"),
        }
    }
}

impl std::fmt::Display for ProtocolConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtocolConfigError::Parse(e) => write!(f, "{e}"),
            ProtocolConfigError::OutOfRange { value, fix, .. } => write!(f, "{} = {value}: {fix}", self.field()),
        }
    }
}

impl std::error::Error for ProtocolConfigError {}

#[cfg(test)]
mod tests {
    use super::*;
    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct S {
        a: u32,
        #[serde(default)]
        b: u32,
    }
    #[test]
    fn errors_name_the_field() {
        let e = from_table::<S>(&serde_json::json!({"a": 1, "zz": 2}), "topology").unwrap_err();
        assert_eq!(e.field(), "topology.zz");
        assert!(e.to_string().contains("a, b"), "{e}");
        let e = from_table::<S>(&serde_json::json!({"b": 1}), "topology").unwrap_err();
        assert_eq!(e.field(), "topology.a");
        let e = from_table::<S>(&serde_json::json!({"a": "x"}), "topology").unwrap_err();
        assert_eq!(e.field(), "topology.a");
    }
}
