//! The one place transports are registered: protocol name -> constructor.
//!
//! To add a protocol: write its module under `transport/`, give it a config struct
//! parsed from the scenario's `[transport]` table, and add one arm to [`build`] and
//! one name to [`PROTOCOLS`]. Nothing in the network layer changes.

use super::pias::{Pias, PiasConfigError};
use super::ppt::{Ppt, PptConfigError};
use super::rc3::{Rc3, Rc3ConfigError};
use super::tcp::{Tcp, TcpConfigError};
use super::{NetInfo, Transport};
use std::fmt;

/// Protocol names accepted in `transport.protocol`.
pub const PROTOCOLS: &[&str] = &["tcp", "dctcp", "pias", "rc3", "ppt"];

/// Errors building a transport from its scenario table.
#[derive(Debug)]
pub enum TransportError {
    /// `transport.protocol` names no registered protocol.
    UnknownProtocol { name: String },
    /// The TCP/DCTCP configuration is invalid.
    Tcp(TcpConfigError),
    /// The PIAS configuration is invalid.
    Pias(PiasConfigError),
    /// The RC3 configuration is invalid.
    Rc3(Rc3ConfigError),
    /// The PPT configuration is invalid.
    Ppt(PptConfigError),
}

impl TransportError {
    pub fn field(&self) -> String {
        match self {
            TransportError::UnknownProtocol { .. } => "transport.protocol".into(),
            TransportError::Tcp(e) => e.field(),
            TransportError::Pias(e) => e.field(),
            TransportError::Rc3(e) => e.field(),
            TransportError::Ppt(e) => e.field(),
        }
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::UnknownProtocol { name } => {
                write!(f, "transport.protocol: unknown protocol '{name}'; use one of: {}", PROTOCOLS.join(", "))
            }
            TransportError::Tcp(e) => write!(f, "{e}"),
            TransportError::Pias(e) => write!(f, "{e}"),
            TransportError::Rc3(e) => write!(f, "{e}"),
            TransportError::Ppt(e) => write!(f, "{e}"),
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
        "pias" => Ok(Box::new(Pias::from_config(cfg, net).map_err(TransportError::Pias)?)),
        "rc3" => Ok(Box::new(Rc3::from_config(cfg, net).map_err(TransportError::Rc3)?)),
        "ppt" => Ok(Box::new(Ppt::from_config(cfg, net).map_err(TransportError::Ppt)?)),
        other => Err(TransportError::UnknownProtocol { name: other.to_string() }),
    }
}
