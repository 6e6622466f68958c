//! PASE's scenario fields (`protocol = "pase"`), their errors and the run parameters resolved
//! from them; see the parent module for what each field models.

use super::*;

/// The `[transport]` table of `protocol = "pase"` (without `protocol`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PaseConfig {
    /// Priority queues (Table 3 `numQue`), the lowest kept for background traffic.
    pub num_que: Option<u8>,
    /// Timeout of flows in the top queue (Table 3 "minRTO (flows in top queue)").
    pub min_rto_top: Option<Time>,
    /// Timeout of flows in the other queues (Table 3 "minRTO (flows in other queues)").
    pub min_rto_other: Option<Time>,
    /// DCTCP's alpha gain.
    pub g: Option<f64>,
    /// Bottom-queue flows probe every RTT (§4.3.2).
    pub probing: Option<bool>,
    /// Arbitration refresh period; `None` = the flow's base RTT.
    pub refresh: Option<Time>,
    /// `"end_to_end"` (every link of the path, bottom-up, §3.1.2) or `"endpoint"` (the two
    /// access links only: Fig. 12(a)'s local arbitration).
    pub arbitration: Option<String>,
    /// Early pruning (§3.1.2).
    pub pruning: Option<bool>,
    /// Flows in the top `prune_queues` queues climb further (the paper: 2).
    pub prune_queues: Option<u8>,
    /// Delegation of the level-2 links to the ToRs (§3.1.2).
    pub delegation: Option<bool>,
    /// Smallest time between two reports of a child to its parent.
    pub delegation_period: Option<Time>,
    /// An inter-rack flow starts when its source half has answered ("a flow starts as soon as
    /// it receives arbitration information from the child arbitrator").
    pub wait_child_answer: Option<bool>,
    /// Follow the reference rate (Algorithm 2); false is PASE-DCTCP (§4.3.2: every flow a
    /// DCTCP source in the queue its arbitration gives).
    pub reference_rate: Option<bool>,
}

/// Errors of the protocol's table (the shared shape, [`crate::config::ProtocolConfigError`]).
pub type PaseConfigError = crate::config::ProtocolConfigError;

/// Resolved PASE parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct PaseParams {
    pub mtu: u64,
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    pub num_que: u8,
    pub min_rto_top: Time,
    pub min_rto_other: Time,
    pub g: f64,
    pub probing: bool,
    pub refresh: Option<Time>,
    pub end_to_end: bool,
    pub pruning: bool,
    pub prune_queues: u8,
    pub delegation: bool,
    pub delegation_period: Time,
    pub wait_child_answer: bool,
    pub reference_rate: bool,
}

impl PaseParams {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<PaseParams, PaseConfigError> {
        let c: PaseConfig = if cfg.is_null() {
            PaseConfig::default()
        } else {
            crate::config::from_table(cfg, "transport").map_err(PaseConfigError::Parse)?
        };
        let bad =
            |field: &str, value: String, fix: String| PaseConfigError::OutOfRange { field: field.into(), value, fix };
        let classes = net.priorities.clamp(1, 8);
        let num_que = c.num_que.unwrap_or(8);
        if num_que < 2 || num_que > classes {
            return Err(bad(
                "num_que",
                num_que.to_string(),
                format!("must be in 2..={classes} (network.priorities; PASE: 8, the lowest for background traffic)"),
            ));
        }
        let min_rto_top = c.min_rto_top.unwrap_or(Time::ms(10));
        let min_rto_other = c.min_rto_other.unwrap_or(Time::ms(200));
        for (name, v) in [("min_rto_top", min_rto_top), ("min_rto_other", min_rto_other)] {
            if v == Time::ZERO {
                return Err(bad(name, "\"0ps\"".into(), "must be > 0 (PASE: 10 ms top queue, 200 ms others)".into()));
            }
        }
        let g = c.g.unwrap_or(1.0 / 16.0);
        if !(g > 0.0 && g <= 1.0) {
            return Err(bad("g", g.to_string(), "must be in (0, 1]; DCTCP uses 1/16".into()));
        }
        if c.refresh == Some(Time::ZERO) {
            return Err(bad("refresh", "\"0ps\"".into(), "must be > 0; remove it for one base RTT".into()));
        }
        let end_to_end = match c.arbitration.as_deref() {
            None | Some("end_to_end") => true,
            Some("endpoint") => false,
            Some(o) => {
                return Err(bad("arbitration", format!("{o:?}"), "use \"end_to_end\" or \"endpoint\"".into()));
            }
        };
        let prune_queues = c.prune_queues.unwrap_or(2);
        if prune_queues < 1 || prune_queues >= num_que {
            return Err(bad(
                "prune_queues",
                prune_queues.to_string(),
                format!("must be in 1..={} (below num_que; PASE: 2, the top two queues climb)", num_que - 1),
            ));
        }
        let delegation_period = c.delegation_period.unwrap_or(Time::ms(1));
        if delegation_period == Time::ZERO {
            return Err(bad("delegation_period", "\"0ps\"".into(), "must be > 0 (default 1 ms)".into()));
        }
        if net.mtu.0 <= net.header.0 {
            return Err(bad("mtu", net.mtu.0.to_string(), "the MTU must exceed the header (network.mtu)".into()));
        }
        Ok(PaseParams {
            mtu: net.mtu.0,
            mss: net.mss(),
            header: net.header.0,
            ctrl_size: net.ctrl_size.0,
            num_que,
            min_rto_top,
            min_rto_other,
            g,
            probing: c.probing.unwrap_or(true),
            refresh: c.refresh,
            end_to_end,
            pruning: c.pruning.unwrap_or(true),
            prune_queues,
            delegation: c.delegation.unwrap_or(true),
            delegation_period,
            wait_child_answer: c.wait_child_answer.unwrap_or(true),
            reference_rate: c.reference_rate.unwrap_or(true),
        })
    }

    /// Queues arbitrated flows use (the lowest class is kept for background traffic).
    pub fn flow_queues(&self) -> u8 {
        self.num_que - 1
    }
    pub fn bottom(&self) -> u8 {
        self.num_que - 2
    }
    pub(super) fn refresh(&self, f: &FlowInfo) -> Time {
        self.refresh.unwrap_or(Time(f.base_rtt.0.max(1)))
    }
}
