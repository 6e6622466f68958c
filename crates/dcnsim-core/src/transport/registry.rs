//! The one place transports are registered: protocol name -> constructor.
//!
//! To add a protocol: write its module under `transport/`, give it a config struct
//! parsed from the scenario's `[transport]` table, and add one arm to [`build`] and
//! one name to [`PROTOCOLS`] (and to [`derive`] if the protocol's paper prescribes settings
//! the scenario may leave out). Nothing in the network layer changes.

use super::d2tcp::D2tcpConfigError;
use super::expresspass::{ExpressPass, ExpressPassConfigError};
use super::homa::{Homa, HomaConfigError};
use super::hpcc::{Hpcc, HpccConfigError};
use super::iatcp::IatcpConfigError;
use super::ictcp::IctcpConfigError;
use super::l2dct::L2dctConfigError;
use super::m21tcp::M21tcpConfigError;
use super::ndp::{Ndp, NdpConfigError};
use super::pase::{Pase, PaseConfigError};
use super::pdq::{Pdq, PdqConfigError};
use super::pfabric::{Pfabric, PfabricConfigError};
use super::phost::{Phost, PhostConfigError};
use super::pias::{Pias, PiasConfigError};
use super::ppt::{Ppt, PptConfigError};
use super::ptcp::PtcpConfigError;
use super::rc3::{Rc3, Rc3ConfigError};
use super::rpo::{Rpo, RpoConfigError};
use super::swift::{Swift, SwiftConfigError};
use super::tcp::{Tcp, TcpConfigError};
use super::{Derived, NetInfo, Transport};
use std::fmt;

/// Protocol names accepted in `transport.protocol`.
pub const PROTOCOLS: &[&str] = &[
    "tcp",
    "dctcp",
    "d2tcp",
    "l2dct",
    "pias",
    "rc3",
    "ppt",
    "ndp",
    "phost",
    "homa",
    "expresspass",
    "swift",
    "ppt_swift",
    "ptcp",
    "ictcp",
    "pfabric",
    "pase",
    "rpo",
    "hpcc",
    "iatcp",
    "m21tcp",
    "pdq",
];

/// Errors building a transport from its scenario table.
#[derive(Debug)]
pub enum TransportError {
    /// `transport.protocol` names no registered protocol.
    UnknownProtocol {
        name: String,
    },
    /// The TCP/DCTCP configuration is invalid.
    Tcp(TcpConfigError),
    /// The D2TCP configuration is invalid.
    D2tcp(D2tcpConfigError),
    /// The L2DCT configuration is invalid.
    L2dct(L2dctConfigError),
    /// The PIAS configuration is invalid.
    Pias(PiasConfigError),
    /// The RC3 configuration is invalid.
    Rc3(Rc3ConfigError),
    /// The PPT configuration is invalid.
    Ppt(PptConfigError),
    /// The NDP configuration is invalid.
    Ndp(NdpConfigError),
    /// The pHost configuration is invalid.
    Phost(PhostConfigError),
    /// The Homa configuration is invalid.
    Homa(HomaConfigError),
    /// The ExpressPass configuration is invalid.
    ExpressPass(ExpressPassConfigError),
    /// The Swift configuration is invalid (`swift`; `ppt_swift` reports through `Ppt`).
    Swift(SwiftConfigError),
    /// The PTCP configuration is invalid.
    Ptcp(PtcpConfigError),
    /// The ICTCP configuration is invalid.
    Ictcp(IctcpConfigError),
    /// The pFabric end-host configuration is invalid.
    Pfabric(PfabricConfigError),
    /// The PASE configuration is invalid.
    Pase(PaseConfigError),
    /// The RPO configuration is invalid.
    Rpo(RpoConfigError),
    /// The HPCC configuration is invalid.
    Hpcc(HpccConfigError),
    /// The IA-TCP configuration is invalid.
    Iatcp(IatcpConfigError),
    /// The M21TCP configuration is invalid.
    M21tcp(M21tcpConfigError),
    Pdq(PdqConfigError),
}

impl TransportError {
    pub fn field(&self) -> String {
        match self {
            TransportError::UnknownProtocol { .. } => "transport.protocol".into(),
            TransportError::Tcp(e) => e.field(),
            TransportError::D2tcp(e) => e.field(),
            TransportError::L2dct(e) => e.field(),
            TransportError::Pias(e) => e.field(),
            TransportError::Rc3(e) => e.field(),
            TransportError::Ppt(e) => e.field(),
            TransportError::Ndp(e) => e.field(),
            TransportError::Phost(e) => e.field(),
            TransportError::Homa(e) => e.field(),
            TransportError::ExpressPass(e) => e.field(),
            TransportError::Swift(e) => e.field(),
            TransportError::Ptcp(e) => e.field(),
            TransportError::Ictcp(e) => e.field(),
            TransportError::Pfabric(e) => e.field(),
            TransportError::Pase(e) => e.field(),
            TransportError::Rpo(e) => e.field(),
            TransportError::Hpcc(e) => e.field(),
            TransportError::Iatcp(e) => e.field(),
            TransportError::M21tcp(e) => e.field(),
            TransportError::Pdq(e) => e.field(),
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
            TransportError::D2tcp(e) => write!(f, "{e}"),
            TransportError::L2dct(e) => write!(f, "{e}"),
            TransportError::Pias(e) => write!(f, "{e}"),
            TransportError::Rc3(e) => write!(f, "{e}"),
            TransportError::Ppt(e) => write!(f, "{e}"),
            TransportError::Ndp(e) => write!(f, "{e}"),
            TransportError::Phost(e) => write!(f, "{e}"),
            TransportError::Homa(e) => write!(f, "{e}"),
            TransportError::ExpressPass(e) => write!(f, "{e}"),
            TransportError::Swift(e) => write!(f, "{e}"),
            TransportError::Ptcp(e) => write!(f, "{e}"),
            TransportError::Ictcp(e) => write!(f, "{e}"),
            TransportError::Pfabric(e) => write!(f, "{e}"),
            TransportError::Pase(e) => write!(f, "{e}"),
            TransportError::Rpo(e) => write!(f, "{e}"),
            TransportError::Hpcc(e) => write!(f, "{e}"),
            TransportError::Iatcp(e) => write!(f, "{e}"),
            TransportError::M21tcp(e) => write!(f, "{e}"),
            TransportError::Pdq(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TransportError {}

/// What `protocol` derives where the scenario is silent (see [`Derived`]). PPT (`ppt`,
/// `ppt_swift`): its per-class ECN thresholds (Eq. 3) and low-priority marking on buffer
/// occupancy, and its demotion `thresholds`; PIAS: its demotion `thresholds` (both the
/// workload's default, `pias::default_thresholds`); PPT and RC3: the classes of their
/// opportunistic packets (`lp_classes`); RPO: the class of its opportunistic packets; HPCC: in-band
/// telemetry at the switches (`int`); M21TCP: the switches' maximum-window stamp
/// (`window_stamp`). Other protocols: nothing.
pub fn derive(protocol: &str, cfg: &serde_json::Value, net: &NetInfo) -> Result<Derived, TransportError> {
    match protocol {
        "pias" => Pias::derive(cfg, net).map_err(TransportError::Pias),
        "ppt" => Ppt::derive(cfg, net, false).map_err(TransportError::Ppt),
        "ppt_swift" => Ppt::derive(cfg, net, true).map_err(TransportError::Ppt),
        "rc3" => Ok(Rc3::derive(net)),
        "rpo" => Ok(Derived { lp_classes: Rpo::lp_classes(net, cfg), ..Derived::default() }),
        "hpcc" => Ok(Hpcc::derive()),
        "m21tcp" => Ok(super::m21tcp::derive()),
        "pdq" => Pdq::derive(cfg, net).map_err(TransportError::Pdq),
        p if PROTOCOLS.contains(&p) => Ok(Derived::default()),
        other => Err(TransportError::UnknownProtocol { name: other.to_string() }),
    }
}

/// Build the transport named `protocol` from its configuration table (`cfg` is the
/// `[transport]` table without the `protocol` key), with random seed 0 (validation, tests).
pub fn build(protocol: &str, cfg: &serde_json::Value, net: &NetInfo) -> Result<Box<dyn Transport>, TransportError> {
    build_seeded(protocol, cfg, net, 0)
}

/// [`build`] with the seed of the transport's random stream (the runner derives it from the
/// scenario seed: `sim::build_transport`). Transports without randomness ignore it.
pub fn build_seeded(
    protocol: &str,
    cfg: &serde_json::Value,
    net: &NetInfo,
    seed: u64,
) -> Result<Box<dyn Transport>, TransportError> {
    match protocol {
        "tcp" => Ok(Box::new(Tcp::from_config(cfg, net, false).map_err(TransportError::Tcp)?)),
        "dctcp" => Ok(Box::new(Tcp::from_config(cfg, net, true).map_err(TransportError::Tcp)?)),
        "d2tcp" => Ok(Box::new(super::d2tcp::from_config(cfg, net).map_err(TransportError::D2tcp)?)),
        "l2dct" => Ok(Box::new(super::l2dct::from_config(cfg, net).map_err(TransportError::L2dct)?)),
        "pias" => Ok(Box::new(Pias::from_config(cfg, net).map_err(TransportError::Pias)?)),
        "rc3" => Ok(Box::new(Rc3::from_config(cfg, net).map_err(TransportError::Rc3)?)),
        "ppt" => Ok(Box::new(Ppt::from_config(cfg, net).map_err(TransportError::Ppt)?)),
        "ndp" => Ok(Box::new(Ndp::from_config(cfg, net).map_err(TransportError::Ndp)?)),
        "phost" => Ok(Box::new(Phost::from_config(cfg, net).map_err(TransportError::Phost)?)),
        "homa" => Ok(Box::new(Homa::from_config(cfg, net).map_err(TransportError::Homa)?)),
        "expresspass" => Ok(Box::new(ExpressPass::from_config(cfg, net, seed).map_err(TransportError::ExpressPass)?)),
        "swift" => Ok(Box::new(Swift::from_config(cfg, net).map_err(TransportError::Swift)?)),
        "ppt_swift" => Ok(Box::new(Ppt::from_config_swift(cfg, net).map_err(TransportError::Ppt)?)),
        "ptcp" => Ok(Box::new(super::ptcp::from_config(cfg, net).map_err(TransportError::Ptcp)?)),
        "ictcp" => Ok(Box::new(super::ictcp::from_config(cfg, net).map_err(TransportError::Ictcp)?)),
        "pfabric" => Ok(Box::new(Pfabric::from_config(cfg, net).map_err(TransportError::Pfabric)?)),
        "pase" => Ok(Box::new(Pase::from_config(cfg, net).map_err(TransportError::Pase)?)),
        "rpo" => Ok(Box::new(Rpo::from_config(cfg, net).map_err(TransportError::Rpo)?)),
        "hpcc" => Ok(Box::new(Hpcc::from_config(cfg, net).map_err(TransportError::Hpcc)?)),
        "iatcp" => Ok(Box::new(super::iatcp::from_config(cfg, net, seed).map_err(TransportError::Iatcp)?)),
        "m21tcp" => Ok(Box::new(super::m21tcp::from_config(cfg, net).map_err(TransportError::M21tcp)?)),
        "pdq" => Ok(Box::new(Pdq::from_config(cfg, net).map_err(TransportError::Pdq)?)),
        other => Err(TransportError::UnknownProtocol { name: other.to_string() }),
    }
}
