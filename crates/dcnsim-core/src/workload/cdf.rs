//! Empirical flow-size CDFs: parsing the public file formats, validating them, sampling
//! and computing the mean exactly as sampling reads the points.
//!
//! Formats (the formats of the public CDF files, `data/cdf/PROVENANCE.md`):
//! * `pct`: `size cdf` per line, CDF on a 0–100 scale (HPCC, parsimon-eval);
//! * `frac`: `size cdf` per line, CDF on a 0–1 scale, space- or comma-separated (PowerTCP, opera);
//! * `ns2`: `size 1 cdf` per line (ns-2 `loadCDF` reads columns 1 and 3, the middle one is ignored);
//! * `homa`: a first line holding the file's own mean size, then `size cdf` lines on 0–1.
//!
//! Sizes are bytes, KB (1 KB = 1000 B, docs/conventions.md) or packets (1460 B each, or 1442 B
//! for Homa files, as the README converts them).
//!
//! Two readings of the same points ([`Reading`]):
//! * `linear` (ns-2, HPCC, PIAS, ExpressPass, YAPS): draw u ~ U(0,1) and interpolate the size
//!   linearly between the two points around u;
//! * `step` (HomaSimulation): the size is the first point whose CDF is >= u.
//!
//! Probability mass at the first point (a first CDF value above 0) is placed at that point
//! in both readings. A drawn size is rounded up to a whole byte and is at least 1 B, and
//! [`EmpiricalCdf::mean_bytes`] is the exact mean of those drawn sizes (the trapezoid rule
//! for `linear`, sum of x_i (F_i - F_{i-1}) for `step`, each plus the effect of rounding up),
//! so a load-calibrated generator offers exactly the load it is asked for.

use super::error::CdfProblem;
use crate::rng::Rng;
use crate::units::Bytes;
use serde::{Deserialize, Serialize};

/// Steps per linear segment in [`EmpiricalCdf::step_points`].
pub const STEP_POINTS_PER_SEGMENT: usize = 16;

/// How the points of a CDF are read between points.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reading {
    /// Piecewise-linear between points (ns-2, HPCC, PIAS, ExpressPass, YAPS).
    #[serde(alias = "lin")]
    Linear,
    /// Discrete: the first point whose CDF is >= u (HomaSimulation).
    Step,
}

impl Reading {
    pub fn as_str(self) -> &'static str {
        match self {
            Reading::Linear => "linear",
            Reading::Step => "step",
        }
    }
}

/// Layout of a CDF file.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CdfFormat {
    /// Infer the layout from the file (see [`EmpiricalCdf::parse`]).
    Auto,
    /// `size cdf`, CDF 0–100.
    Pct,
    /// `size cdf`, CDF 0–1.
    Frac,
    /// `size 1 cdf`, CDF 0–1 (middle column ignored).
    Ns2,
    /// First line = mean size, then `size cdf`, CDF 0–1.
    Homa,
}

impl CdfFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            CdfFormat::Auto => "auto",
            CdfFormat::Pct => "pct",
            CdfFormat::Frac => "frac",
            CdfFormat::Ns2 => "ns2",
            CdfFormat::Homa => "homa",
        }
    }
    /// The CDF value that ends the scale.
    fn scale(self) -> f64 {
        if self == CdfFormat::Pct {
            100.0
        } else {
            1.0
        }
    }
}

/// Unit of the size column of a CDF file.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum CdfUnit {
    #[serde(rename = "bytes", alias = "B")]
    Bytes,
    /// 1 KB = 1000 B.
    #[serde(rename = "KB", alias = "kb")]
    Kilobytes,
    /// Packets of `packet_size` payload bytes (1460 B, or 1442 B for Homa-format files).
    #[serde(rename = "packets")]
    Packets,
}

impl CdfUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            CdfUnit::Bytes => "bytes",
            CdfUnit::Kilobytes => "KB",
            CdfUnit::Packets => "packets",
        }
    }
}

/// Payload bytes per packet for packet-unit files (pFabric/PIAS/YAPS MSS).
pub const DEFAULT_PACKET_BYTES: u64 = 1460;
/// Payload bytes per packet for Homa-format packet files (HomaSimulation maxDataBytesPerPkt).
pub const HOMA_PACKET_BYTES: u64 = 1442;

/// How to read a CDF file.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CdfOptions {
    pub format: CdfFormat,
    pub unit: CdfUnit,
    /// Bytes per packet when `unit` is packets; `None` = 1460, or 1442 for `homa` files.
    pub packet_size: Option<u64>,
    pub reading: Reading,
}

impl Default for CdfOptions {
    fn default() -> Self {
        CdfOptions { format: CdfFormat::Auto, unit: CdfUnit::Bytes, packet_size: None, reading: Reading::Linear }
    }
}

/// A malformed CDF: the problem and the 1-based line it was found on (if one line).
#[derive(Clone, Debug, PartialEq)]
pub struct CdfError {
    pub line: Option<usize>,
    pub problem: CdfProblem,
}

/// How many times [`EmpiricalCdf::step_points`] halves the last step of a Pareto tail.
pub const TAIL_HALVINGS: u32 = 30;

/// A generalized-Pareto tail that continues a partial CDF (Homa W1, whose file stops at
/// CDF 0.47): for u > `from_cdf`, size = location + (((1 - from_cdf)/(1 - u))^shape - 1) * scale/shape,
/// at most `cap` (HomaSimulation `MsgSizeDistributions::getFacebookSizeInterarrival`, as
/// written out in `data/cdf/PROVENANCE.md`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ParetoTail {
    pub from_cdf: f64,
    pub location: f64,
    pub shape: f64,
    pub scale: f64,
    pub cap: f64,
}

impl ParetoTail {
    fn quantile(&self, u: f64) -> f64 {
        let ratio = (1.0 - self.from_cdf) / (1.0 - u);
        let y = (ratio.powf(self.shape) - 1.0) * self.scale / self.shape;
        (self.location + y).min(self.cap)
    }
    /// The tail's probability range [from_cdf, 1] cut into steps for [`EmpiricalCdf::step_points`]:
    /// `k - 1` equal steps, then the last 1/k halved again and again ([`TAIL_HALVINGS`]
    /// times, the rest in one last step), so the heavy end (most of the tail's bytes) is
    /// resolved instead of lumped into one step at its median.
    fn step_intervals(&self, k: usize) -> Vec<(f64, f64)> {
        let (f, k) = (self.from_cdf, k.max(1) as f64);
        let w = 1.0 - f;
        let mut cuts: Vec<f64> = (0..k as usize).map(|j| f + w * j as f64 / k).collect();
        for m in 1..=TAIL_HALVINGS {
            cuts.push(1.0 - w / k * 0.5f64.powi(m as i32));
        }
        cuts.push(1.0);
        cuts.windows(2).map(|c| (c[0], c[1])).collect()
    }
    /// Mean of the (capped) size over the quantiles in [u0, u1], from_cdf <= u0 < u1 <= 1:
    /// the quantile function averaged by a 64-point midpoint rule (within one step 1 - u
    /// changes at most by a factor 2 except in the first, equal steps, where the quantile
    /// is smooth).
    fn mean_between(&self, u0: f64, u1: f64) -> f64 {
        const N: usize = 64;
        let h = (u1 - u0) / N as f64;
        (0..N).map(|i| self.quantile(u0 + (i as f64 + 0.5) * h)).sum::<f64>() / N as f64
    }
    /// P(Y > y) of the uncapped excess Y = size - location.
    fn survival(&self, y: f64) -> f64 {
        (1.0 + self.shape * y / self.scale).powf(-1.0 / self.shape)
    }
    /// Mean of the drawn (capped, rounded-up) size given u > from_cdf.
    ///
    /// E[min(Y, c)] = scale/(1-shape) * (1 - (1 + shape*c/scale)^(1 - 1/shape)) for the
    /// generalized Pareto excess; rounding up adds 1/2 B on average (the density spreads
    /// over hundreds of bytes, so the fractional part is uniform to within 1e-3).
    fn mean(&self) -> f64 {
        let c = (self.cap - self.location).max(0.0);
        let capped =
            self.scale / (1.0 - self.shape) * (1.0 - (1.0 + self.shape * c / self.scale).powf(1.0 - 1.0 / self.shape));
        self.location + capped + 0.5
    }
}

/// A validated empirical CDF with its reading; sizes in bytes, CDF values on 0–1.
#[derive(Clone, Debug, PartialEq)]
pub struct EmpiricalCdf {
    sizes: Vec<f64>,
    probs: Vec<f64>,
    reading: Reading,
    tail: Option<ParetoTail>,
    format: CdfFormat,
    unit: CdfUnit,
    packet_size: u64,
    declared_mean: Option<f64>,
    mean: f64,
}

/// Round a continuous size up to whole bytes, at least 1 B.
#[inline]
fn whole_bytes(x: f64) -> u64 {
    // `as` saturates; NaN (impossible for validated data) maps to 0 and then to 1.
    (x.ceil() as u64).max(1)
}

/// Integral over [0, x] of (ceil(t) - t), x >= 0: 1/2 per whole unit plus the partial one.
fn ceil_excess_integral(x: f64) -> f64 {
    let whole = x.floor();
    let f = x - whole;
    0.5 * whole + if f > 0.0 { f - 0.5 * f * f } else { 0.0 }
}

/// Mean of max(1, ceil(X)) for X ~ U[a, b], 0 <= a < b.
fn mean_rounded_up_uniform(a: f64, b: f64) -> f64 {
    // ceil(t) >= 1 for every t > 0, so the max(1, .) only matters on a null set.
    0.5 * (a + b) + (ceil_excess_integral(b) - ceil_excess_integral(a)) / (b - a)
}

/// The largest size a CDF may give, in bytes after its unit is applied (10^15 B = 1 PB: far
/// beyond any flow a simulation can finish, and small enough that sizes, their squares and
/// means stay finite and exact to the byte in floating point).
pub const MAX_CDF_SIZE_BYTES: f64 = 1e15;

fn parse_number(tok: &str, line: usize) -> Result<f64, CdfError> {
    let v: f64 = tok.parse().map_err(|_| CdfError {
        line: Some(line),
        problem: CdfProblem::Syntax { message: format!("'{tok}' is not a number") },
    })?;
    if !v.is_finite() || v < 0.0 {
        return Err(CdfError { line: Some(line), problem: CdfProblem::BadNumber { value: tok.to_string() } });
    }
    Ok(v)
}

impl EmpiricalCdf {
    /// Parse and validate a CDF file.
    ///
    /// With `CdfFormat::Auto` the layout is inferred from the first data line: one number →
    /// `homa`; three columns → `ns2`; two columns → `pct` if the largest CDF value exceeds 1,
    /// else `frac`. The unit cannot be inferred and is `opts.unit`. Blank lines and lines
    /// starting with `#` are skipped; columns are separated by spaces, tabs or commas.
    pub fn parse(text: &str, opts: &CdfOptions) -> Result<EmpiricalCdf, CdfError> {
        Self::parse_with_tail(text, opts, None)
    }

    /// Like [`EmpiricalCdf::parse`] for a partial CDF that a [`ParetoTail`] continues: the
    /// file's last CDF value must be the tail's `from_cdf` instead of 1.
    pub fn parse_with_tail(text: &str, opts: &CdfOptions, tail: Option<ParetoTail>) -> Result<EmpiricalCdf, CdfError> {
        let lines: Vec<(usize, Vec<&str>)> = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
            .map(|(i, l)| (i, l.split(|c: char| c == ',' || c.is_whitespace()).filter(|t| !t.is_empty()).collect()))
            .collect();
        let Some((first_line, first)) = lines.first() else {
            return Err(CdfError { line: None, problem: CdfProblem::TooFewPoints { got: 0 } });
        };
        let mut format = match opts.format {
            CdfFormat::Auto => match first.len() {
                1 => CdfFormat::Homa,
                3 => CdfFormat::Ns2,
                2 => CdfFormat::Frac, // refined to Pct below once the CDF values are known
                n => {
                    let message = format!("has {n} columns; a CDF file has 2 or 3");
                    let problem = CdfProblem::Syntax { message };
                    return Err(CdfError { line: Some(*first_line), problem });
                }
            },
            f => f,
        };

        let mut body: &[(usize, Vec<&str>)] = &lines;
        let mut declared_mean = None;
        if format == CdfFormat::Homa {
            if first.len() != 1 {
                return Err(CdfError { line: Some(*first_line), problem: CdfProblem::MissingMeanHeader });
            }
            declared_mean = Some(parse_number(first[0], *first_line)?);
            body = &lines[1..];
        }
        let (columns, cdf_col) = if format == CdfFormat::Ns2 { (3, 2) } else { (2, 1) };

        let mut raw: Vec<(usize, f64, f64)> = Vec::with_capacity(body.len());
        for (line, toks) in body {
            if toks.len() != columns {
                return Err(CdfError {
                    line: Some(*line),
                    problem: CdfProblem::ColumnCount { expected: columns, got: toks.len() },
                });
            }
            let size = parse_number(toks[0], *line)?;
            let cdf = parse_number(toks[cdf_col], *line)?;
            raw.push((*line, size, cdf));
        }
        if raw.len() < 2 {
            return Err(CdfError { line: None, problem: CdfProblem::TooFewPoints { got: raw.len() } });
        }
        for w in raw.windows(2) {
            let ((_, s0, c0), (line, s1, c1)) = (w[0], w[1]);
            if s1 < s0 {
                return Err(CdfError {
                    line: Some(line),
                    problem: CdfProblem::SizeDecreasing { previous: s0, got: s1 },
                });
            }
            if c1 < c0 {
                return Err(CdfError {
                    line: Some(line),
                    problem: CdfProblem::CdfDecreasing { previous: c0, got: c1 },
                });
            }
        }
        let (last_line, _, last) = raw[raw.len() - 1];
        if opts.format == CdfFormat::Auto && format == CdfFormat::Frac && last > 1.0 + 1e-6 {
            format = CdfFormat::Pct;
        }
        let scale = format.scale();
        let end = tail.map_or(1.0, |t| t.from_cdf);
        if (last / scale - end).abs() > 1e-6 {
            return Err(CdfError {
                line: Some(last_line),
                problem: CdfProblem::NotReachingOne { last, expected: end * scale },
            });
        }

        let packet_size = opts.packet_size.unwrap_or(if format == CdfFormat::Homa {
            HOMA_PACKET_BYTES
        } else {
            DEFAULT_PACKET_BYTES
        });
        let mult = match opts.unit {
            CdfUnit::Bytes => 1.0,
            CdfUnit::Kilobytes => 1000.0,
            CdfUnit::Packets => packet_size as f64,
        };
        for &(line, s, _) in &raw {
            if s * mult > MAX_CDF_SIZE_BYTES {
                return Err(CdfError { line: Some(line), problem: CdfProblem::SizeTooLarge { bytes: s * mult } });
            }
        }
        if let Some(m) = declared_mean.map(|m| m * mult).filter(|m| *m > MAX_CDF_SIZE_BYTES) {
            return Err(CdfError { line: None, problem: CdfProblem::SizeTooLarge { bytes: m } });
        }
        // Normalize so that the last value is exactly `end` (removes the <= 1e-6 slack).
        let sizes = raw.iter().map(|&(_, s, _)| s * mult).collect();
        let probs = raw.iter().map(|&(_, _, c)| (c / last * end).min(end)).collect();
        let mut cdf = EmpiricalCdf {
            sizes,
            probs,
            reading: opts.reading,
            tail,
            format,
            unit: opts.unit,
            packet_size,
            declared_mean: declared_mean.map(|m| m * mult),
            mean: 0.0,
        };
        cdf.mean = cdf.compute_mean();
        Ok(cdf)
    }

    /// The same points read another way.
    pub fn with_reading(mut self, reading: Reading) -> EmpiricalCdf {
        self.reading = reading;
        self.mean = self.compute_mean();
        self
    }

    fn compute_mean(&self) -> f64 {
        let (xs, ps) = (&self.sizes, &self.probs);
        // Mass at the first point sits at the first point in both readings.
        let mut m = ps[0] * whole_bytes(xs[0]) as f64;
        for i in 1..xs.len() {
            let dp = ps[i] - ps[i - 1];
            if dp <= 0.0 {
                continue;
            }
            let seg = match self.reading {
                Reading::Step => whole_bytes(xs[i]) as f64,
                Reading::Linear if xs[i] > xs[i - 1] => mean_rounded_up_uniform(xs[i - 1], xs[i]),
                Reading::Linear => whole_bytes(xs[i]) as f64,
            };
            m += dp * seg;
        }
        if let Some(t) = &self.tail {
            m += (1.0 - t.from_cdf) * t.mean();
        }
        m
    }

    /// The continuous size at CDF value `u` in [0, 1) (before rounding up to whole bytes).
    pub fn quantile(&self, u: f64) -> f64 {
        if let Some(t) = &self.tail {
            if u > t.from_cdf {
                return t.quantile(u);
            }
        }
        let n = self.sizes.len();
        let i = self.probs.partition_point(|&p| p < u).min(n - 1);
        match self.reading {
            Reading::Step => self.sizes[i],
            Reading::Linear if i == 0 || self.probs[i] <= self.probs[i - 1] => self.sizes[i],
            Reading::Linear => {
                let (p0, p1) = (self.probs[i - 1], self.probs[i]);
                let (x0, x1) = (self.sizes[i - 1], self.sizes[i]);
                x0 + (u - p0) / (p1 - p0) * (x1 - x0)
            }
        }
    }

    /// Draw one flow size (whole bytes, at least 1 B).
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> Bytes {
        Bytes(whole_bytes(self.quantile(rng.f64())))
    }

    /// Exact mean of the sizes [`EmpiricalCdf::sample`] draws, in bytes.
    pub fn mean_bytes(&self) -> f64 {
        self.mean
    }

    /// P(X <= x) of the continuous size X under this reading.
    fn cdf_at(&self, x: f64) -> f64 {
        let n = self.sizes.len();
        let j = self.sizes.partition_point(|&s| s <= x);
        if j == 0 {
            return 0.0;
        }
        if j == n {
            return match &self.tail {
                Some(t) if x >= t.cap => 1.0,
                Some(t) if x >= t.location => t.from_cdf + (1.0 - t.from_cdf) * (1.0 - t.survival(x - t.location)),
                _ => self.probs[n - 1],
            };
        }
        match self.reading {
            Reading::Step => self.probs[j - 1],
            Reading::Linear => {
                let (x0, x1) = (self.sizes[j - 1], self.sizes[j]);
                let (p0, p1) = (self.probs[j - 1], self.probs[j]);
                p0 + (x - x0) / (x1 - x0) * (p1 - p0)
            }
        }
    }

    /// The distribution of drawn sizes as the points of a step CDF: `(size, P(X <= size))`
    /// with sizes in whole bytes, strictly increasing, the last probability 1. A drawn size
    /// is read as `s_i` with probability `P_i - P_{i-1}`. Under the `step` reading this is
    /// exact. Under the `linear` reading each segment between two points is cut into
    /// [`STEP_POINTS_PER_SEGMENT`] equal-probability sub-segments, each step carrying its
    /// sub-segment's midpoint size (so the mean is the reading's mean, up to rounding to
    /// whole bytes). A Pareto tail is cut into `STEP_POINTS_PER_SEGMENT - 1` equal-probability
    /// steps and a last one halved [`TAIL_HALVINGS`] times, each step carrying the mean size
    /// of its quantile range, so the heavy end is resolved (W1: 1.7% of messages above one
    /// packet) and the mean is the tail's. Integrals over sizes (e.g. bytes below a cutoff)
    /// are accurate to one sub-step. For consumers that need the workload's size
    /// distribution rather than samples (Homa's priority cutoffs, PIAS's thresholds).
    pub fn step_points(&self) -> Vec<(u64, f64)> {
        let k = STEP_POINTS_PER_SEGMENT;
        let mut pts: Vec<(u64, f64)> = Vec::new();
        let mut push = |x: f64, p: f64| {
            let s = whole_bytes(x);
            match pts.last_mut() {
                Some(last) if last.0 >= s => last.1 = last.1.max(p),
                _ => pts.push((s, p)),
            }
        };
        let (xs, ps) = (&self.sizes, &self.probs);
        if ps[0] > 0.0 {
            push(xs[0], ps[0]);
        }
        for i in 1..xs.len() {
            let (p0, p1) = (ps[i - 1], ps[i]);
            if p1 <= p0 {
                continue;
            }
            match self.reading {
                Reading::Linear if xs[i] > xs[i - 1] => {
                    for j in 1..=k {
                        let (f, mid) = (j as f64 / k as f64, (j as f64 - 0.5) / k as f64);
                        push(xs[i - 1] + mid * (xs[i] - xs[i - 1]), p0 + f * (p1 - p0));
                    }
                }
                _ => push(xs[i], p1),
            }
        }
        if let Some(t) = &self.tail {
            for (u0, u1) in t.step_intervals(k) {
                push(t.mean_between(u0, u1), u1);
            }
        }
        if let Some(last) = pts.last_mut() {
            last.1 = 1.0;
        }
        pts
    }

    /// Probability that a drawn size is below `limit` bytes.
    pub fn fraction_below(&self, limit: Bytes) -> f64 {
        if limit.0 <= 1 {
            0.0
        } else {
            // A drawn size ceil(X) < L  <=>  X <= L - 1 for whole L.
            self.cdf_at((limit.0 - 1) as f64)
        }
    }

    pub fn reading(&self) -> Reading {
        self.reading
    }
    /// The resolved file layout (never `Auto`).
    pub fn format(&self) -> CdfFormat {
        self.format
    }
    pub fn unit(&self) -> CdfUnit {
        self.unit
    }
    /// Bytes per packet used when the unit is packets.
    pub fn packet_size(&self) -> u64 {
        self.packet_size
    }
    /// The mean written in a Homa file's first line, converted to bytes.
    pub fn declared_mean(&self) -> Option<f64> {
        self.declared_mean
    }
    /// Number of points in the file.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }
    /// Always false: a valid CDF has at least two points.
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }
    /// Largest size the CDF can produce, in bytes.
    pub fn max_bytes(&self) -> u64 {
        match &self.tail {
            Some(t) => whole_bytes(t.cap),
            None => whole_bytes(self.sizes[self.sizes.len() - 1]),
        }
    }
    pub fn tail(&self) -> Option<ParetoTail> {
        self.tail
    }

    /// Second moment of the continuous size (ignoring rounding), for test tolerances.
    #[cfg(test)]
    pub(crate) fn second_moment(&self) -> f64 {
        let (xs, ps) = (&self.sizes, &self.probs);
        let mut m = ps[0] * xs[0] * xs[0];
        for i in 1..xs.len() {
            let dp = ps[i] - ps[i - 1];
            let (a, b) = (xs[i - 1], xs[i]);
            m += dp
                * match self.reading {
                    Reading::Step => b * b,
                    Reading::Linear => (a * a + a * b + b * b) / 3.0,
                };
        }
        if let Some(t) = &self.tail {
            let (k, s, l) = (t.shape, t.scale, t.location);
            let ey = s / (1.0 - k);
            let ey2 = 2.0 * s * s / ((1.0 - k) * (1.0 - 2.0 * k));
            m += (1.0 - t.from_cdf) * (l * l + 2.0 * l * ey + ey2);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(format: CdfFormat, unit: CdfUnit, reading: Reading) -> CdfOptions {
        CdfOptions { format, unit, packet_size: None, reading }
    }

    #[test]
    fn formats_are_inferred_and_scaled() {
        let pct = EmpiricalCdf::parse("0 0\n1000 50\n3000 100\n", &CdfOptions::default()).unwrap();
        assert_eq!(pct.format(), CdfFormat::Pct);
        let frac = EmpiricalCdf::parse("0,0\r\n1000, 0.5\r\n3000,1\r\n", &CdfOptions::default()).unwrap();
        assert_eq!(frac.format(), CdfFormat::Frac);
        let ns2 = EmpiricalCdf::parse("0 1 0\n1000 1 0.5\n3000 1 1\n\n", &CdfOptions::default()).unwrap();
        assert_eq!(ns2.format(), CdfFormat::Ns2);
        let homa = EmpiricalCdf::parse("1234\n0 0\n1000 0.5\n3000 1\n", &CdfOptions::default()).unwrap();
        assert_eq!(homa.format(), CdfFormat::Homa);
        assert_eq!(homa.declared_mean(), Some(1234.0));
        // Same points, same linear mean: 0.5*500 + 0.5*2000 = 1250, plus 0.5 B for rounding up.
        for c in [&pct, &frac, &ns2, &homa] {
            assert!((c.mean_bytes() - 1250.5).abs() < 1e-9, "{}", c.mean_bytes());
        }
    }

    /// The step points a model consumer reads (Homa's cutoffs, PIAS's thresholds) carry the
    /// distribution's mean and, for W1's Pareto tail, its heavy end: the 1.7% of messages
    /// above one packet, which the tail's one step at its median used to drop (step mean
    /// 170.6 B against the distribution's 185.4 B, nothing above 1,459 B).
    #[test]
    fn step_points_keep_the_mean_and_the_pareto_tail() {
        let step_mean = |pts: &[(u64, f64)]| {
            let mut prev = 0.0;
            pts.iter()
                .map(|&(s, p)| {
                    let m = s as f64 * (p - prev);
                    prev = p;
                    m
                })
                .sum::<f64>()
        };
        for shipped in crate::workload::builtin::SHIPPED {
            for reading in [Reading::Step, Reading::Linear] {
                let c = shipped.load(reading).unwrap();
                let pts = c.step_points();
                assert!(pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "{}", shipped.name);
                let (m, want) = (step_mean(&pts), c.mean_bytes());
                assert!(
                    (m - want).abs() <= 0.005 * want + 1.0,
                    "{} {reading:?}: step mean {m} vs {want}",
                    shipped.name
                );
            }
        }
        // W1: P(size > 1460 B) = (1 - 0.47) x the generalized Pareto survival of the excess
        // over the location (the file part stops below 1460 B).
        let w1 = crate::workload::builtin::find("memcached_w1").unwrap().load(Reading::Step).unwrap();
        let t = crate::workload::builtin::W1_TAIL;
        let want = (1.0 - t.from_cdf) * (1.0 + t.shape * (1460.0 - t.location) / t.scale).powf(-1.0 / t.shape);
        let pts = w1.step_points();
        let above = 1.0 - pts.iter().filter(|p| p.0 <= 1460).map(|p| p.1).fold(0.0, f64::max);
        assert!((above - want).abs() < 0.15 * want, "P(> 1460 B): steps {above}, analytic {want}");
        assert!(pts.last().unwrap().0 > 100_000, "the tail reaches far: {:?}", pts.last());
    }

    #[test]
    fn units_multiply_sizes() {
        let kb = EmpiricalCdf::parse("1 0\n3 1\n", &opts(CdfFormat::Frac, CdfUnit::Kilobytes, Reading::Step)).unwrap();
        assert_eq!(kb.mean_bytes(), 3000.0);
        let pk =
            EmpiricalCdf::parse("1 1 0.5\n3 1 1\n", &opts(CdfFormat::Ns2, CdfUnit::Packets, Reading::Step)).unwrap();
        assert_eq!(pk.mean_bytes(), 0.5 * 1460.0 + 0.5 * 4380.0);
        let hp = EmpiricalCdf::parse("2\n2 1\n", &opts(CdfFormat::Homa, CdfUnit::Packets, Reading::Step));
        assert!(matches!(hp, Err(CdfError { problem: CdfProblem::TooFewPoints { got: 1 }, .. })));
        let hp = EmpiricalCdf::parse("2\n1 0\n2 1\n", &opts(CdfFormat::Homa, CdfUnit::Packets, Reading::Step)).unwrap();
        assert_eq!(hp.mean_bytes(), 2.0 * 1442.0);
        assert_eq!(hp.declared_mean(), Some(2.0 * 1442.0));
    }

    #[test]
    fn readings_differ_as_documented() {
        // Mass 0.2 at 10 B, then a segment to 110 B.
        let text = "10 0.2\n110 1\n";
        let lin = EmpiricalCdf::parse(text, &opts(CdfFormat::Frac, CdfUnit::Bytes, Reading::Linear)).unwrap();
        let step = lin.clone().with_reading(Reading::Step);
        assert!((lin.mean_bytes() - (0.2 * 10.0 + 0.8 * 60.5)).abs() < 1e-9);
        assert!((step.mean_bytes() - (0.2 * 10.0 + 0.8 * 110.0)).abs() < 1e-9);
        assert_eq!(lin.quantile(0.1), 10.0);
        assert!((lin.quantile(0.6) - 60.0).abs() < 1e-9);
        assert_eq!(step.quantile(0.6), 110.0);
        assert!((lin.fraction_below(Bytes(61)) - 0.6).abs() < 1e-9);
        assert!((step.fraction_below(Bytes(61)) - 0.2).abs() < 1e-9);
    }

    #[test]
    fn rounding_up_is_in_the_mean() {
        // U[0, 1] bytes: every draw becomes 1 B.
        let c = EmpiricalCdf::parse("0 0\n1 1\n", &opts(CdfFormat::Frac, CdfUnit::Bytes, Reading::Linear)).unwrap();
        assert!((c.mean_bytes() - 1.0).abs() < 1e-12);
        let mut rng = Rng::new(3);
        assert!((0..1000).all(|_| c.sample(&mut rng) == Bytes(1)));
        // U[0.5, 2.5]: ceil gives 1 w.p. 1/4, 2 w.p. 1/2, 3 w.p. 1/4 -> mean 2.
        let c = EmpiricalCdf::parse("0.5 0\n2.5 1\n", &opts(CdfFormat::Frac, CdfUnit::Bytes, Reading::Linear)).unwrap();
        assert!((c.mean_bytes() - 2.0).abs() < 1e-12, "{}", c.mean_bytes());
    }

    #[test]
    fn validation_names_the_line() {
        let o = CdfOptions::default();
        let e = EmpiricalCdf::parse("0 0\n10 0.6\n20 0.4\n30 1\n", &o).unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(matches!(e.problem, CdfProblem::CdfDecreasing { .. }));
        let e = EmpiricalCdf::parse("0 0\n10 0.6\n5 0.7\n30 1\n", &o).unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(matches!(e.problem, CdfProblem::SizeDecreasing { .. }));
        let e = EmpiricalCdf::parse("0 0\n10 0.6\n30 0.99\n", &o).unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(matches!(e.problem, CdfProblem::NotReachingOne { .. }));
        let e = EmpiricalCdf::parse("0 0\n10 x\n", &o).unwrap_err();
        assert!(matches!(e.problem, CdfProblem::Syntax { .. }) && e.line == Some(2));
        let e = EmpiricalCdf::parse("0 0\n-10 0.5\n20 1\n", &o).unwrap_err();
        assert!(matches!(e.problem, CdfProblem::BadNumber { .. }) && e.line == Some(2));
        let e = EmpiricalCdf::parse("0 0\nNaN 0.5\n20 1\n", &o).unwrap_err();
        assert!(matches!(e.problem, CdfProblem::BadNumber { .. }));
        let e = EmpiricalCdf::parse("5 1\n", &o).unwrap_err();
        assert!(matches!(e.problem, CdfProblem::TooFewPoints { got: 1 }));
        // Found by the fuzzer: 1e308 packets of 4900 B is an infinite number of bytes (the
        // mean was NaN); any size above 1 PB after the unit is refused, naming the line.
        let pk = CdfOptions { unit: CdfUnit::Packets, packet_size: Some(4900), ..CdfOptions::default() };
        let e = EmpiricalCdf::parse("0 0\n1e308 100\n", &pk).unwrap_err();
        assert!(matches!(e.problem, CdfProblem::SizeTooLarge { .. }) && e.line == Some(2), "{e:?}");
        let e = EmpiricalCdf::parse("0 0\n2e15 1\n", &o).unwrap_err();
        assert!(matches!(e.problem, CdfProblem::SizeTooLarge { .. }));
        assert!(EmpiricalCdf::parse("0 0\n1e15 1\n", &o).is_ok());
        let e = EmpiricalCdf::parse("", &o).unwrap_err();
        assert!(matches!(e.problem, CdfProblem::TooFewPoints { got: 0 }));
        let e = EmpiricalCdf::parse("0 1 0\n5 1\n", &o).unwrap_err();
        assert!(matches!(e.problem, CdfProblem::ColumnCount { expected: 3, got: 2 }) && e.line == Some(2));
        let e = EmpiricalCdf::parse("0 0\n5 1\n", &opts(CdfFormat::Homa, CdfUnit::Bytes, Reading::Step)).unwrap_err();
        assert!(matches!(e.problem, CdfProblem::MissingMeanHeader));
        // A percent file forced to be read as frac does not end at 1.
        let e =
            EmpiricalCdf::parse("0 0\n5 100\n", &opts(CdfFormat::Frac, CdfUnit::Bytes, Reading::Linear)).unwrap_err();
        assert!(matches!(e.problem, CdfProblem::NotReachingOne { .. }));
    }

    #[test]
    fn tolerance_on_the_last_value_is_normalized_away() {
        let c = EmpiricalCdf::parse("0 0\n10 0.9999995\n", &CdfOptions::default()).unwrap();
        assert_eq!(c.probs[1], 1.0);
    }

    #[test]
    fn pareto_tail_continues_the_partial_cdf() {
        let tail = ParetoTail { from_cdf: 0.5, location: 10.0, shape: 0.3, scale: 100.0, cap: 1e12 };
        let c = EmpiricalCdf::parse_with_tail("10 0.5\n", &CdfOptions::default(), Some(tail));
        assert!(c.is_err(), "one point is too few");
        let c = EmpiricalCdf::parse_with_tail(
            "5 0.1\n10 0.5\n",
            &opts(CdfFormat::Frac, CdfUnit::Bytes, Reading::Step),
            Some(tail),
        )
        .unwrap();
        let expect = 0.1 * 5.0 + 0.4 * 10.0 + 0.5 * (10.0 + 100.0 / 0.7 + 0.5);
        assert!((c.mean_bytes() - expect).abs() < 1e-6, "{} vs {expect}", c.mean_bytes());
        assert_eq!(c.quantile(0.5), 10.0);
        // u = 0.75: ((0.5/0.25)^0.3 - 1) * 100/0.3 + 10
        assert!((c.quantile(0.75) - (10.0 + (2f64.powf(0.3) - 1.0) * 100.0 / 0.3)).abs() < 1e-9);
    }
}
