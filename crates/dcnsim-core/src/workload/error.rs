//! Errors of workload building: one typed variant per kind of mistake.
//!
//! Every variant carries `field`, the path of the offending scenario field
//! (`workload[1].load`, `workload[0].cdf`, ...), and its `Display` says what is wrong
//! and what would fix it. Problems inside a data file (a CDF or a flow list) also name
//! the file and the 1-based line.

use std::fmt;

/// What is wrong inside a CDF file (see [`WorkloadError::Cdf`]).
#[derive(Clone, Debug, PartialEq)]
pub enum CdfProblem {
    /// A line could not be read as numbers in the expected layout.
    Syntax { message: String },
    /// A size or CDF value is negative, NaN or infinite.
    BadNumber { value: String },
    /// A line has another number of columns than the format has.
    ColumnCount { expected: usize, got: usize },
    /// A Homa-format file must start with a line holding only the mean size.
    MissingMeanHeader,
    /// A size is smaller than the one on the line before.
    SizeDecreasing { previous: f64, got: f64 },
    /// A CDF value is smaller than the one on the line before.
    CdfDecreasing { previous: f64, got: f64 },
    /// The last CDF value is not the end of the scale (1, or 100 for percent files).
    NotReachingOne { last: f64, expected: f64 },
    /// Fewer than two points.
    TooFewPoints { got: usize },
    /// A size (or a Homa file's mean), in bytes after the unit is applied, is above
    /// [`crate::workload::cdf::MAX_CDF_SIZE_BYTES`].
    SizeTooLarge { bytes: f64 },
}

/// What is wrong inside a flow list (`explicit` CSV or `hpcc` flow.txt).
#[derive(Clone, Debug, PartialEq)]
pub enum FlowFileProblem {
    /// The file has no header / count line.
    Empty,
    /// A cell could not be read.
    Syntax { message: String },
    /// The CSV header lacks a required column.
    MissingColumn { column: &'static str },
    /// The CSV header has a column this reader does not know.
    UnknownColumn { column: String },
    /// The CSV header names a column twice.
    DuplicateColumn { column: String },
    /// A row has another number of cells than the header (CSV) or than 6 (hpcc).
    WrongCellCount { expected: usize, got: usize },
    /// A flow names a host that does not exist.
    UnknownHost { host: u64, num_hosts: u32 },
    /// A flow from a host to itself.
    SelfFlow { host: u32 },
    /// A flow of 0 bytes.
    ZeroSize,
    /// The deadline of a flow is 0.
    ZeroDeadline,
    /// The hpcc count line disagrees with the number of flow lines.
    CountMismatch { declared: u64, found: u64 },
}

/// Any problem with the `[[workload]]` tables of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadError {
    /// A `[[workload]]` entry is not a table.
    NotATable { field: String, got: String },
    /// A required field is absent; `hint` says what to add.
    MissingField { field: String, hint: String },
    /// `pattern` names no known arrival pattern.
    UnknownPattern { field: String, got: String },
    /// A field the pattern does not have.
    UnknownField { field: String, pattern: String, allowed: Vec<&'static str> },
    /// A value of the wrong type or form; `expected` describes the right one.
    InvalidValue { field: String, message: String, expected: String },
    /// A value outside its allowed range.
    OutOfRange { field: String, got: String, constraint: String, hint: String },
    /// Two fields that cannot be given together.
    Conflict { field: String, other: String, hint: String },
    /// A Poisson-type pattern with neither `flows` nor `duration`.
    MissingStop { field: String },
    /// A host index that the topology does not have.
    UnknownHost { field: String, host: u64, num_hosts: u32 },
    /// A host listed twice where hosts must be distinct.
    DuplicateHost { field: String, host: u32 },
    /// Not enough hosts to build the pattern.
    TooFewHosts { field: String, need: usize, got: usize },
    /// A sending host whose link rate is missing or 0 (load cannot be calibrated).
    NoLinkRate { field: String, host: u32 },
    /// The component would generate more flows than the simulator accepts.
    TooManyFlows { field: String, expected: f64, limit: u64 },
    /// `cdf` is neither a shipped CDF name nor a readable file.
    CdfNotFound { field: String, name: String, path: String, reason: String },
    /// A CDF file (shipped or the user's) is malformed.
    Cdf { field: String, file: String, line: Option<usize>, problem: CdfProblem },
    /// A flow-list file cannot be read.
    FileRead { field: String, file: String, reason: String },
    /// An input file (flow list or CDF) is longer than `run.input_file_limit`, or endless.
    FileTooLarge { field: String, file: String, limit: u64 },
    /// A flow-list file is malformed or names hosts that do not exist.
    FlowFile { field: String, file: String, line: usize, problem: FlowFileProblem },
}

impl WorkloadError {
    /// Path of the offending field, e.g. `workload[1].load`.
    pub fn field(&self) -> String {
        use WorkloadError::*;
        match self {
            NotATable { field, .. }
            | MissingField { field, .. }
            | UnknownPattern { field, .. }
            | UnknownField { field, .. }
            | InvalidValue { field, .. }
            | OutOfRange { field, .. }
            | Conflict { field, .. }
            | MissingStop { field }
            | UnknownHost { field, .. }
            | DuplicateHost { field, .. }
            | TooFewHosts { field, .. }
            | NoLinkRate { field, .. }
            | TooManyFlows { field, .. }
            | CdfNotFound { field, .. }
            | Cdf { field, .. }
            | FileRead { field, .. }
            | FileTooLarge { field, .. }
            | FlowFile { field, .. } => field.clone(),
        }
    }
}

impl fmt::Display for CdfProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CdfProblem::*;
        match self {
            Syntax { message } => write!(f, "{message}; write one point per line as `size cdf` (or `size 1 cdf` for ns-2 files)"),
            BadNumber { value } => write!(f, "'{value}' is negative or not a finite number; sizes and CDF values must be >= 0"),
            SizeTooLarge { bytes } => write!(
                f,
                "size {bytes:e} B (after the unit) is above the largest flow size dcnsim accepts, {:e} B; check cdf_unit and cdf_packet_size",
                crate::workload::cdf::MAX_CDF_SIZE_BYTES
            ),
            ColumnCount { expected, got } => write!(
                f,
                "has {got} columns, expected {expected} (pct/frac: `size cdf`; ns2: `size 1 cdf`; homa: a mean line, then `size cdf`); use one layout on every line or set cdf_format"
            ),
            MissingMeanHeader => write!(
                f,
                "a Homa-format file starts with a line holding only the mean size; add it or set cdf_format to \"pct\", \"frac\" or \"ns2\""
            ),
            SizeDecreasing { previous, got } => write!(
                f,
                "size {got} is smaller than the size {previous} on the line before; sizes must be non-decreasing"
            ),
            CdfDecreasing { previous, got } => write!(
                f,
                "CDF value {got} is smaller than the value {previous} on the line before; CDF values must be non-decreasing"
            ),
            NotReachingOne { last, expected } => write!(
                f,
                "the last CDF value is {last}, not {expected}; end the file with a point at CDF {expected} (or set cdf_format if the scale is wrong)"
            ),
            TooFewPoints { got } => write!(f, "has {got} point(s); a CDF needs at least 2"),
        }
    }
}

impl fmt::Display for FlowFileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use FlowFileProblem::*;
        match self {
            Empty => write!(f, "the file is empty; add the header (CSV) or the flow count line (hpcc)"),
            Syntax { message } => write!(f, "{message}"),
            MissingColumn { column } => write!(f, "the header has no '{column}' column; the header must name src,dst,size,start (and optionally deadline)"),
            UnknownColumn { column } => write!(f, "unknown column '{column}'; allowed columns are src, dst, size, start, deadline"),
            DuplicateColumn { column } => write!(f, "column '{column}' appears twice in the header; keep one"),
            WrongCellCount { expected, got } => write!(f, "has {got} fields, expected {expected}; give one value per column"),
            UnknownHost { host, num_hosts } => write!(
                f,
                "flow uses host {host}, but the topology has {num_hosts} hosts (0..{}); fix the host index or use a bigger topology",
                num_hosts.saturating_sub(1)
            ),
            SelfFlow { host } => write!(f, "flow from host {host} to itself; source and destination must differ"),
            ZeroSize => write!(f, "flow of 0 bytes; every flow needs at least 1 byte"),
            ZeroDeadline => write!(f, "deadline is 0; give a positive deadline or leave the cell empty"),
            CountMismatch { declared, found } => write!(
                f,
                "the first line declares {declared} flows but the file has {found}; make the count match the flow lines"
            ),
        }
    }
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use WorkloadError::*;
        match self {
            NotATable { field, got } => write!(f, "{field}: must be a table, got {got}; write it as a [[workload]] section"),
            MissingField { field, hint } => write!(f, "{field}: required field is missing; {hint}"),
            UnknownPattern { field, got } => write!(
                f,
                "{field}: unknown pattern '{got}'; use one of: {}",
                super::PATTERNS.join(", ")
            ),
            UnknownField { field, pattern, allowed } => write!(
                f,
                "{field}: unknown field for pattern \"{pattern}\"; remove it or use one of: pattern, {}",
                allowed.join(", ")
            ),
            InvalidValue { field, message, expected } => write!(f, "{field}: {message}; expected {expected}"),
            OutOfRange { field, got, constraint, hint } => write!(f, "{field}: must be {constraint}, got {got}; {hint}"),
            Conflict { field, other, hint } => write!(f, "{field}: cannot be combined with `{other}`; {hint}"),
            MissingStop { field } => write!(
                f,
                "{field}: neither `flows` nor `duration` is set, so arrivals would never stop; set `flows = 10000` and/or `duration = \"10ms\"`"
            ),
            UnknownHost { field, host, num_hosts } => write!(
                f,
                "{field}: host {host} does not exist, the topology has {num_hosts} hosts (0..{}); use an index below {num_hosts}",
                num_hosts.saturating_sub(1)
            ),
            DuplicateHost { field, host } => write!(f, "{field}: host {host} is listed twice; list each host once"),
            TooFewHosts { field, need, got } => write!(
                f,
                "{field}: the pattern needs at least {need} hosts, got {got}; add hosts or use a bigger topology"
            ),
            NoLinkRate { field, host } => write!(
                f,
                "{field}: host {host} has no link rate in the topology, so the load cannot be calibrated; leave the host out of `hosts`"
            ),
            TooManyFlows { field, expected, limit } => write!(
                f,
                "{field}: this component would generate about {expected:.0} flows, more than the limit of {limit}; shorten `duration`, lower `flows` or split the run"
            ),
            CdfNotFound { field, name, path, reason } => write!(
                f,
                "{field}: '{name}' is not a shipped CDF and the file {path} cannot be read ({reason}); use a shipped name ({}) or a path to a CDF file relative to the scenario",
                super::builtin::names().join(", ")
            ),
            Cdf { field, file, line, problem } => match line {
                Some(l) => write!(f, "{field}: {file} line {l}: {problem}"),
                None => write!(f, "{field}: {file}: {problem}"),
            },
            FileRead { field, file, reason } => write!(
                f,
                "{field}: cannot read {file} ({reason}); give a path relative to the scenario file"
            ),
            FileTooLarge { field, file, limit } => write!(
                f,
                "{field}: {file} holds more than run.input_file_limit = {limit} bytes (or never ends, as a FIFO or device may); point to a regular file, or raise run.input_file_limit"
            ),
            FlowFile { field, file, line, problem } => write!(f, "{field}: {file} line {line}: {problem}"),
        }
    }
}

impl std::error::Error for WorkloadError {}
