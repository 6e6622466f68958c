//! Flow-size distributions: a fixed size, a uniform range, or an empirical CDF (shipped
//! or from the user's file), chosen by the `size`, `uniform` and `cdf*` fields.

use super::builtin::{self, ShippedCdf};
use super::cdf::{CdfFormat, CdfOptions, CdfUnit, EmpiricalCdf, Reading};
use super::error::WorkloadError;
use super::raw::SizeFields;
use super::WorkloadEnv;
use crate::rng::Rng;
use crate::units::Bytes;
use serde_json::{json, Map, Value};
use std::path::PathBuf;

/// Where an empirical CDF came from.
#[derive(Clone, Debug)]
pub(crate) enum CdfSource {
    Shipped(&'static ShippedCdf),
    File { given: String, resolved: PathBuf },
}

/// A validated flow-size distribution.
#[derive(Clone, Debug)]
pub(crate) enum SizeDist {
    Fixed(Bytes),
    /// Whole bytes uniform in [min, max].
    Uniform {
        min: Bytes,
        max: Bytes,
    },
    Cdf {
        cdf: EmpiricalCdf,
        source: CdfSource,
    },
}

fn field(prefix: &str, name: &str) -> String {
    format!("{prefix}.{name}")
}

impl SizeDist {
    /// Validate the size fields of the table at `prefix`. `default` is used when none of
    /// `size`, `uniform`, `cdf` is given; without a default one of them is required.
    pub fn resolve(
        f: SizeFields,
        prefix: &str,
        env: &WorkloadEnv,
        default: Option<SizeDist>,
    ) -> Result<SizeDist, WorkloadError> {
        let given: Vec<&str> = [("size", f.size.is_some()), ("uniform", f.uniform.is_some()), ("cdf", f.cdf.is_some())]
            .iter()
            .filter(|(_, g)| *g)
            .map(|(n, _)| *n)
            .collect();
        if given.len() > 1 {
            return Err(WorkloadError::Conflict {
                field: field(prefix, given[1]),
                other: given[0].to_string(),
                hint: "give exactly one flow-size distribution: `cdf`, `uniform` or `size`".into(),
            });
        }
        let cdf_options = [
            ("cdf_reading", f.cdf_reading.is_some()),
            ("cdf_format", f.cdf_format.is_some()),
            ("cdf_unit", f.cdf_unit.is_some()),
            ("cdf_packet_size", f.cdf_packet_size.is_some()),
        ];
        if f.cdf.is_none() {
            if let Some((name, _)) = cdf_options.iter().find(|(_, g)| *g) {
                return Err(match given.first() {
                    Some(other) => WorkloadError::Conflict {
                        field: field(prefix, name),
                        other: other.to_string(),
                        hint: format!("`{name}` only applies to `cdf`; remove it"),
                    },
                    None => WorkloadError::MissingField {
                        field: field(prefix, "cdf"),
                        hint: format!(
                            "`{name}` only applies to a CDF; add `cdf = \"websearch\"` (or a file) or remove `{name}`"
                        ),
                    },
                });
            }
        }
        if let Some(size) = f.size {
            if size.0 == 0 {
                return Err(WorkloadError::OutOfRange {
                    field: field(prefix, "size"),
                    got: "0".into(),
                    constraint: "at least 1 B".into(),
                    hint: "give a positive size such as \"64KB\"".into(),
                });
            }
            return Ok(SizeDist::Fixed(size));
        }
        if let Some(u) = f.uniform {
            if u.min.0 == 0 || u.max < u.min {
                return Err(WorkloadError::OutOfRange {
                    field: field(prefix, "uniform"),
                    got: format!("{{min = {}, max = {}}}", u.min.0, u.max.0),
                    constraint: "1 B <= min <= max".into(),
                    hint: "give e.g. uniform = {min = \"2KB\", max = \"198KB\"}".into(),
                });
            }
            return Ok(SizeDist::Uniform { min: u.min, max: u.max });
        }
        let Some(name) = f.cdf else {
            return default.ok_or_else(|| WorkloadError::MissingField {
                field: field(prefix, "cdf"),
                hint: "set a flow-size distribution: `cdf = \"websearch\"` (a shipped name or a CDF file), `uniform = {min = \"2KB\", max = \"198KB\"}` or `size = \"64KB\"`".into(),
            });
        };
        if let Some(shipped) = builtin::find(&name) {
            if let Some((opt, _)) = cdf_options[1..].iter().find(|(_, g)| *g) {
                return Err(WorkloadError::Conflict {
                    field: field(prefix, opt),
                    other: "cdf".into(),
                    hint: format!(
                        "the shipped CDF '{}' has a known layout and unit; remove `{opt}` (or copy the file and point `cdf` at the copy)",
                        shipped.name
                    ),
                });
            }
            let reading = f.cdf_reading.unwrap_or(shipped.reading);
            let cdf = shipped.load(reading).map_err(|e| WorkloadError::Cdf {
                field: field(prefix, "cdf"),
                file: format!("shipped {}", shipped.file),
                line: e.line,
                problem: e.problem,
            })?;
            return Ok(SizeDist::Cdf { cdf, source: CdfSource::Shipped(shipped) });
        }
        let resolved = env.base_dir.join(&name);
        let text = super::read::read_file_capped(&resolved, env.file_limit).map_err(|e| match e {
            super::read::ReadProblem::TooLarge { limit } => {
                WorkloadError::FileTooLarge { field: field(prefix, "cdf"), file: resolved.display().to_string(), limit }
            }
            e => WorkloadError::CdfNotFound {
                field: field(prefix, "cdf"),
                name: name.clone(),
                path: resolved.display().to_string(),
                reason: e.to_string(),
            },
        })?;
        if f.cdf_packet_size == Some(Bytes(0)) {
            return Err(WorkloadError::OutOfRange {
                field: field(prefix, "cdf_packet_size"),
                got: "0".into(),
                constraint: "at least 1 B".into(),
                hint: "give the payload bytes per packet, e.g. 1460".into(),
            });
        }
        let opts = CdfOptions {
            format: f.cdf_format.unwrap_or(CdfFormat::Auto),
            unit: f.cdf_unit.unwrap_or(CdfUnit::Bytes),
            packet_size: f.cdf_packet_size.map(|b| b.0),
            reading: f.cdf_reading.unwrap_or(Reading::Linear),
        };
        let cdf = EmpiricalCdf::parse(&text, &opts).map_err(|e| WorkloadError::Cdf {
            field: field(prefix, "cdf"),
            file: resolved.display().to_string(),
            line: e.line,
            problem: e.problem,
        })?;
        Ok(SizeDist::Cdf { cdf, source: CdfSource::File { given: name, resolved } })
    }

    /// Mean of the sizes [`SizeDist::sample`] draws, in bytes.
    pub fn mean_bytes(&self) -> f64 {
        match self {
            SizeDist::Fixed(b) => b.0 as f64,
            SizeDist::Uniform { min, max } => (min.0 as f64 + max.0 as f64) / 2.0,
            SizeDist::Cdf { cdf, .. } => cdf.mean_bytes(),
        }
    }

    /// The size distribution as step-CDF points `(size, P(X <= size))` (see
    /// [`EmpiricalCdf::step_points`]). A uniform range is cut into 64 equal-probability
    /// steps, each carrying its sub-range's midpoint.
    pub fn step_points(&self) -> Vec<(u64, f64)> {
        match self {
            SizeDist::Fixed(b) => vec![(b.0, 1.0)],
            SizeDist::Uniform { min, max } => {
                let k = 64u64.min(max.0 - min.0 + 1);
                let mut v: Vec<(u64, f64)> = Vec::new();
                for j in 1..=k {
                    // Midpoint of the j-th of k equal sub-ranges (the mean stays exact).
                    let s = min.0 + ((max.0 - min.0) as u128 * (2 * j - 1) as u128 / (2 * k) as u128) as u64;
                    let p = j as f64 / k as f64;
                    match v.last_mut() {
                        Some(l) if l.0 >= s => l.1 = p,
                        _ => v.push((s, p)),
                    }
                }
                v
            }
            SizeDist::Cdf { cdf, .. } => cdf.step_points(),
        }
    }

    /// The canonical name of the shipped CDF the sizes come from, if any.
    pub fn shipped_name(&self) -> Option<&'static str> {
        match self {
            SizeDist::Cdf { source: CdfSource::Shipped(s), .. } => Some(s.name),
            _ => None,
        }
    }

    /// Draw one size.
    pub fn sample(&self, rng: &mut Rng) -> Bytes {
        match self {
            SizeDist::Fixed(b) => *b,
            // min >= 1, so max - min + 1 cannot overflow.
            SizeDist::Uniform { min, max } => Bytes(min.0 + rng.below(max.0 - min.0 + 1)),
            SizeDist::Cdf { cdf, .. } => cdf.sample(rng),
        }
    }

    /// Add the normalized size fields to `table` and derived facts to `derived`.
    pub fn describe(&self, table: &mut Map<String, Value>, derived: &mut Map<String, Value>) {
        match self {
            SizeDist::Fixed(b) => {
                table.insert("size".into(), json!(b));
            }
            SizeDist::Uniform { min, max } => {
                table.insert("uniform".into(), json!({"min": min, "max": max}));
            }
            SizeDist::Cdf { cdf, source } => {
                table.insert("cdf_reading".into(), json!(cdf.reading().as_str()));
                match source {
                    CdfSource::Shipped(s) => {
                        table.insert("cdf".into(), json!(s.name));
                        derived.insert("cdf_file".into(), json!(s.file));
                        derived.insert("cdf_description".into(), json!(s.description));
                    }
                    CdfSource::File { given, resolved } => {
                        table.insert("cdf".into(), json!(given));
                        table.insert("cdf_format".into(), json!(cdf.format().as_str()));
                        table.insert("cdf_unit".into(), json!(cdf.unit().as_str()));
                        table.insert("cdf_packet_size".into(), json!(Bytes(cdf.packet_size())));
                        derived.insert("cdf_file".into(), json!(resolved.display().to_string()));
                    }
                }
                derived.insert("cdf_points".into(), json!(cdf.len()));
                derived.insert("max_size_bytes".into(), json!(cdf.max_bytes()));
                if let Some(m) = cdf.declared_mean() {
                    derived.insert("cdf_declared_mean_bytes".into(), json!(m));
                }
            }
        }
        derived.insert("mean_size_bytes".into(), json!(self.mean_bytes()));
    }
}
