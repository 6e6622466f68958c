//! The one place transports are registered: protocol name -> constructor.
//!
//! To add a protocol: write its module under `transport/`, give it a config struct
//! parsed from the scenario's `[transport]` table, and add one arm to [`build`] and
//! one name to [`PROTOCOLS`]. Nothing in the network layer changes.

use super::tcp::{Tcp, TcpConfigError};
use super::{NetInfo, Transport};
use std::fmt;

/// Protocol names accepted in `transport.protocol`.
pub const PROTOCOLS: &[&str] = &["tcp", "dctcp"];

/// Errors building a transport from its scenario table.
#[derive(Debug)]
pub enum TransportError {
    /// `transport.protocol` names no registered protocol.
    UnknownProtocol { name: String },
    /// The TCP/DCTCP configuration is invalid.
    Tcp(TcpConfigError),
}

impl TransportError {
    pub fn field(&self) -> String {
        match self {
            TransportError::UnknownProtocol { .. } => "transport.protocol".into(),
            TransportError::Tcp(e) => e.field(),
        }
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::UnknownProtocol { name } => write!(
                f,
                "transport.protocol: unknown protocol '{name}'; use one of: {}",
                PROTOCOLS.join(", ")
            ),
            TransportError::Tcp(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TransportError {}

/// Build the transport named `protocol` from its configuration table (`cfg` is the
/// `[transport]` table without the `protocol` key).
pub fn build(protocol: &str, cfg: &serde_json::Value, net: &NetInfo) -> Result<Box<dyn Transport>, TransportError> {
    match protocol {
        "tcp" => Ok(Box::new(Tcp::from_config(cfg, net, false).map_err(TransportError::Tcp)?)),
        "dctcp" => Ok(Box::new(Tcp::from_config(cfg, net, true).map_err(TransportError::Tcp)?)),
        other => Err(TransportError::UnknownProtocol { name: other.to_string() }),
    }
}
