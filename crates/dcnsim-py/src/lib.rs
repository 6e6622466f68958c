//! Python binding of the dcnsim core: the extension module `dcnsim._core`.
//!
//! The module is deliberately thin; the Python package `dcnsim` wraps it:
//!
//! * `validate(text, format, base_dir) -> str` parses and validates a scenario
//!   (`format` is `"toml"` or `"json"`, relative paths resolve against `base_dir`)
//!   and returns the normalized scenario as JSON.
//! * `shipped_cdf_stats(name, limits) -> (mean, fractions) | None` reads a shipped
//!   flow-size distribution in its native reading: its mean in bytes and, per limit, the
//!   probability that a drawn size is below it (analytic models use it).
//! * `run(text, format, base_dir, progress=None, interval=0.25) -> dict` runs it.
//!   The GIL is released for the whole run and taken back only to call `progress`
//!   (at most once per `interval` seconds of wall time) and to check for Ctrl-C.
//!   `progress` receives a dict and may return `False` to stop the run early.
//!
//! Result columns are handed over as `(dtype, bytes)` pairs, little-endian, so the
//! Python side wraps them with `numpy.frombuffer` without per-element conversion;
//! string columns come as lists of `str`. Scenario errors are raised as
//! `dcnsim.errors.ScenarioError(field, message)` (a `ValueError` subclass); a run that a
//! resource limit ends early (`run.max_live_packets`, `run.nic_queue_limit`, the sampler's
//! share of `run.memory_limit`) raises `dcnsim.errors.RunError(field, message)`, a subclass of
//! both `ScenarioError` and `RuntimeError`: no results are returned.

use std::path::Path;
use std::time::{Duration, Instant};

use dcnsim_core::output::{
    Counters, FlowTable, LinkSamples, PacketTrace, PortTable, Progress, QueueSamples, RunOutput,
};
use dcnsim_core::{Format, RunError, Scenario, ScenarioError};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

/// A fixed-width value that crosses into Python as little-endian bytes.
trait Column: Copy {
    /// numpy dtype string of the encoding.
    const DTYPE: &'static str;
    const WIDTH: usize;
    fn put(self, out: &mut Vec<u8>);
}

macro_rules! le_column {
    ($t:ty, $dtype:expr) => {
        impl Column for $t {
            const DTYPE: &'static str = $dtype;
            const WIDTH: usize = std::mem::size_of::<$t>();
            #[inline]
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}
le_column!(u8, "|u1");
le_column!(u32, "<u4");
le_column!(u64, "<u8");
le_column!(f64, "<f8");

impl Column for bool {
    const DTYPE: &'static str = "|b1";
    const WIDTH: usize = 1;
    #[inline]
    fn put(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
}

/// `(dtype, bytes)` for one column.
fn column<'py, T: Column>(py: Python<'py>, values: &[T]) -> Bound<'py, PyTuple> {
    let mut buf = Vec::with_capacity(values.len() * T::WIDTH);
    for &v in values {
        v.put(&mut buf);
    }
    PyTuple::new(py, [T::DTYPE.into_pyobject(py).unwrap().into_any(), PyBytes::new(py, &buf).into_any()])
        .expect("a 2-tuple")
}

fn strings<'py>(py: Python<'py>, values: &[String]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, values)
}

fn parse_format(format: &str) -> PyResult<Format> {
    match format.to_ascii_lowercase().as_str() {
        "toml" => Ok(Format::Toml),
        "json" => Ok(Format::Json),
        other => Err(PyValueError::new_err(format!("unknown scenario format '{other}' (use \"toml\" or \"json\")"))),
    }
}

/// Turn a core scenario error into `dcnsim.errors.ScenarioError(field, message)`,
/// falling back to a plain `ValueError` if the Python class cannot be imported.
fn scenario_error(py: Python<'_>, err: &ScenarioError) -> PyErr {
    let field = err.field();
    let full = err.to_string();
    // The core's message starts with "<field>: "; the Python exception keeps them apart.
    let message = match full.strip_prefix(field.as_str()).and_then(|m| m.strip_prefix(": ")) {
        Some(rest) if !field.is_empty() => rest.to_string(),
        _ => full.clone(),
    };
    field_error(py, field, message)
}

/// `dcnsim.errors.ScenarioError(field, message)` (a plain `ValueError` if the class cannot be
/// imported).
fn field_error(py: Python<'_>, field: String, message: String) -> PyErr {
    let made = py
        .import("dcnsim.errors")
        .and_then(|m| m.getattr("ScenarioError"))
        .and_then(|cls| cls.call1((field.clone(), message.clone())));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(_) => PyValueError::new_err(format!("{field}: {message}")),
    }
}

/// Turn a core run error into `dcnsim.errors.RunError(field, message)`, falling back to a
/// plain `RuntimeError` if the Python class cannot be imported.
fn run_error(py: Python<'_>, err: &RunError) -> PyErr {
    let (field, full) = (err.field(), err.to_string());
    let message = full.strip_prefix(&format!("{field}: ")).unwrap_or(&full).to_string();
    let made = py
        .import("dcnsim.errors")
        .and_then(|m| m.getattr("RunError"))
        .and_then(|cls| cls.call1((field.clone(), &message)));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(_) => PyRuntimeError::new_err(format!("{field}: {message}")),
    }
}

fn parse(py: Python<'_>, text: &str, format: &str, base_dir: &str) -> PyResult<Scenario> {
    let format = parse_format(format)?;
    let base = Path::new(base_dir);
    let parsed = py.allow_threads(|| dcnsim_core::parse_scenario(text, format, base));
    parsed.map_err(|e| scenario_error(py, &e))
}

/// Parse and validate a scenario; return the normalized scenario as JSON.
#[pyfunction]
#[pyo3(signature = (text, format, base_dir))]
fn validate(py: Python<'_>, text: &str, format: &str, base_dir: &str) -> PyResult<String> {
    let sc = parse(py, text, format, base_dir)?;
    Ok(sc.to_json())
}

fn progress_dict<'py>(py: Python<'py>, p: &Progress, wall_s: f64) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("sim_time_ps", p.sim_time_ps)?;
    d.set_item("horizon_ps", p.horizon_ps)?;
    d.set_item("flows_done", p.flows_done)?;
    d.set_item("flows_total", p.flows_total)?;
    d.set_item("events", p.events)?;
    d.set_item("wall_s", wall_s)?;
    Ok(d)
}

/// Run a scenario; return its output columns as a dict (see the module docs).
#[pyfunction]
#[pyo3(signature = (text, format, base_dir, progress=None, interval=0.25))]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    format: &str,
    base_dir: &str,
    progress: Option<PyObject>,
    interval: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse(py, text, format, base_dir)?;
    let interval = if interval.is_finite() { interval.clamp(0.0, 3600.0) } else { 0.25 };
    let interval = Duration::from_secs_f64(interval);
    let started = Instant::now();
    let mut last = started;
    let mut failure: Option<PyErr> = None;
    let out: Result<RunOutput, RunError> = py.allow_threads(|| {
        let mut stopped = false;
        let mut on_progress = |p: &Progress| -> bool {
            if stopped {
                return false;
            }
            if last.elapsed() < interval {
                return true;
            }
            last = Instant::now();
            let go_on = Python::with_gil(|py| {
                // Ctrl-C lands here: stop the run and re-raise KeyboardInterrupt.
                if let Err(e) = py.check_signals() {
                    failure = Some(e);
                    return false;
                }
                let Some(cb) = progress.as_ref() else {
                    return true;
                };
                let called = progress_dict(py, p, started.elapsed().as_secs_f64()).and_then(|d| cb.call1(py, (d,)));
                match called {
                    // Only an explicit `False` stops the run (None means "go on").
                    Ok(ret) => ret.extract::<bool>(py).unwrap_or(true),
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            });
            stopped = !go_on;
            go_on
        };
        dcnsim_core::try_run(&sc, &mut on_progress)
    });
    if let Some(e) = failure {
        return Err(e);
    }
    match out {
        Ok(out) => output_dict(py, &out),
        Err(e) => Err(run_error(py, &e)),
    }
}

fn flows_dict<'py>(py: Python<'py>, f: &FlowTable) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", column(py, &f.id))?;
    d.set_item("src", column(py, &f.src))?;
    d.set_item("dst", column(py, &f.dst))?;
    d.set_item("size", column(py, &f.size))?;
    d.set_item("start_ps", column(py, &f.start_ps))?;
    d.set_item("finish_ps", column(py, &f.finish_ps))?;
    d.set_item("fct_ps", column(py, &f.fct_ps))?;
    d.set_item("ideal_fct_ps", column(py, &f.ideal_fct_ps))?;
    d.set_item("base_rtt_ps", column(py, &f.base_rtt_ps))?;
    d.set_item("sent_bytes", column(py, &f.sent_bytes))?;
    d.set_item("retx_bytes", column(py, &f.retx_bytes))?;
    d.set_item("timeouts", column(py, &f.timeouts))?;
    d.set_item("lp_sent_bytes", column(py, &f.lp_sent_bytes))?;
    d.set_item("lp_rcvd_bytes", column(py, &f.lp_rcvd_bytes))?;
    d.set_item("reorder_max_bytes", column(py, &f.reorder_max_bytes))?;
    d.set_item("background", column(py, &f.background))?;
    d.set_item("deadline_ps", column(py, &f.deadline_ps))?;
    d.set_item("aborted", column(py, &f.aborted))?;
    d.set_item("round", column(py, &f.round))?;
    d.set_item("round_start_ps", column(py, &f.round_start_ps))?;
    Ok(d)
}

fn ports_dict<'py>(py: Python<'py>, p: &PortTable) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", column(py, &p.id))?;
    d.set_item("node", column(py, &p.node))?;
    d.set_item("peer", column(py, &p.peer))?;
    d.set_item("rate_bps", column(py, &p.rate_bps))?;
    d.set_item("delay_ps", column(py, &p.delay_ps))?;
    d.set_item("node_kind", strings(py, &p.node_kind)?)?;
    d.set_item("peer_kind", strings(py, &p.peer_kind)?)?;
    d.set_item("tx_bytes", column(py, &p.tx_bytes))?;
    d.set_item("drops", column(py, &p.drops))?;
    d.set_item("rx_bytes", column(py, &p.rx_bytes))?;
    d.set_item("dropped_bytes", column(py, &p.dropped_bytes))?;
    d.set_item("trimmed_bytes", column(py, &p.trimmed_bytes))?;
    d.set_item("queued_bytes", column(py, &p.queued_bytes))?;
    d.set_item("arb_msgs", column(py, &p.arb_msgs))?;
    d.set_item("host_reorder_max_bytes", column(py, &p.host_reorder_max_bytes))?;
    Ok(d)
}

fn queue_dict<'py>(py: Python<'py>, q: &QueueSamples) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("t_ps", column(py, &q.t_ps))?;
    d.set_item("port", column(py, &q.port))?;
    d.set_item("prio", column(py, &q.prio))?;
    d.set_item("bytes", column(py, &q.bytes))?;
    Ok(d)
}

fn link_dict<'py>(py: Python<'py>, l: &LinkSamples) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("t_ps", column(py, &l.t_ps))?;
    d.set_item("port", column(py, &l.port))?;
    d.set_item("tx_bytes", column(py, &l.tx_bytes))?;
    d.set_item("utilization", column(py, &l.utilization))?;
    Ok(d)
}

/// The packet trace's columns (one entry per event), and `lost`/`limit` as integers.
fn trace_dict<'py>(py: Python<'py>, t: &PacketTrace) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let e = &t.events;
    macro_rules! col {
        ($name:expr, $f:expr) => {
            d.set_item($name, column(py, &e.iter().map($f).collect::<Vec<_>>()))?;
        };
    }
    col!("t_ps", |x| x.t.0);
    col!("event", |x| x.event as u8);
    col!("node", |x| x.node);
    col!("port", |x| x.port);
    col!("class", |x| x.class);
    col!("flow", |x| x.flow);
    col!("seq", |x| x.seq);
    col!("ack", |x| x.ack);
    col!("size", |x| x.size);
    col!("payload", |x| x.payload);
    col!("kind", |x| x.kind);
    col!("flags", |x| x.flags as u32);
    col!("ecn", |x| x.ecn as u8);
    col!("src", |x| x.src);
    col!("dst", |x| x.dst);
    col!("queue_bytes", |x| x.queue_bytes);
    d.set_item("lost", t.lost)?;
    d.set_item("limit", t.limit)?;
    d.set_item("event_names", PyList::new(py, dcnsim_core::trace::EventKind::NAMES)?)?;
    Ok(d)
}

/// The ACK-delay log's columns (one entry per ACK), its state columns under the names the
/// receiver control gave them, and `lost`/`limit` as integers.
fn ack_delays_dict<'py>(py: Python<'py>, l: &dcnsim_core::transport::AckDelayLog) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("made_ps", column(py, &l.made_ps))?;
    d.set_item("release_ps", column(py, &l.release_ps))?;
    d.set_item("host", column(py, &l.host))?;
    d.set_item("flow", column(py, &l.flow))?;
    d.set_item("ack", column(py, &l.ack))?;
    d.set_item("rwnd", column(py, &l.rwnd))?;
    d.set_item("delay_ps", column(py, &l.delay_ps))?;
    let state = PyDict::new(py);
    for (name, col) in l.state_names.iter().zip(&l.state) {
        state.set_item(*name, column(py, col))?;
    }
    d.set_item("state", state)?;
    d.set_item("state_names", PyList::new(py, l.state_names)?)?;
    d.set_item("lost", l.lost)?;
    d.set_item("limit", l.limit)?;
    Ok(d)
}

fn counters_dict<'py>(py: Python<'py>, c: &Counters) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("events", c.events)?;
    d.set_item("data_packet_hops", c.data_packet_hops)?;
    d.set_item("packet_hops", c.packet_hops)?;
    d.set_item("data_payload_sent", c.data_payload_sent)?;
    let drops = PyDict::new(py);
    for (cause, n) in &c.drops {
        drops.set_item(cause, n)?;
    }
    d.set_item("drops", drops)?;
    d.set_item("trims", c.trims)?;
    d.set_item("sim_end_ps", c.sim_end_ps)?;
    d.set_item("cut_at_limit", c.cut_at_limit)?;
    d.set_item("stop_reason", c.stop_reason.as_str())?;
    d.set_item("packets_left", c.packets_left)?;
    d.set_item("wall_s", c.wall_s)?;
    d.set_item("peak_live_packets", c.peak_live_packets)?;
    d.set_item("flows_in_system_integral_ps", c.flows_in_system_integral_ps)?;
    d.set_item("arb_msgs_sent", c.arb_msgs_sent)?;
    Ok(d)
}

fn output_dict<'py>(py: Python<'py>, out: &RunOutput) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("flows", flows_dict(py, &out.flows)?)?;
    d.set_item("ports", ports_dict(py, &out.ports)?)?;
    d.set_item("queue_samples", queue_dict(py, &out.queue_samples)?)?;
    d.set_item("link_samples", link_dict(py, &out.link_samples)?)?;
    d.set_item("counters", counters_dict(py, &out.counters)?)?;
    d.set_item("scenario_json", &out.scenario_json)?;
    if let Some(t) = &out.trace {
        d.set_item("trace", trace_dict(py, t)?)?;
    }
    if let Some(l) = &out.ack_delays {
        d.set_item("ack_delays", ack_delays_dict(py, l)?)?;
    }
    Ok(d)
}

/// The mean (bytes) of the shipped flow-size distribution `name` in its native reading and,
/// for each of `limits` (bytes), the probability that a drawn size is below it; `None` when
/// no shipped distribution has that name or alias.
#[pyfunction]
fn shipped_cdf_stats(name: &str, limits: Vec<u64>) -> PyResult<Option<(f64, Vec<f64>)>> {
    use dcnsim_core::units::Bytes;
    use dcnsim_core::workload::builtin;
    let Some(shipped) = builtin::find(name) else { return Ok(None) };
    let cdf = shipped.load(shipped.reading).map_err(|e| PyRuntimeError::new_err(format!("{e:?}")))?;
    Ok(Some((cdf.mean_bytes(), limits.into_iter().map(|l| cdf.fraction_below(Bytes(l))).collect())))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(shipped_cdf_stats, m)?)?;
    Ok(())
}
