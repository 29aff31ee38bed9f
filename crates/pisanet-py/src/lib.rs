//! `pisanet._core`: the native module behind the `pisanet` Python package.
//!
//! Owns: converting between Python values and the `pisanet` facade, and
//! nothing else. Every function is a wrapper of a few lines around
//! `pisanet::*`; the Python package (`python/pisanet`) re-exports them.
//!
//! Guarantees:
//! - `run` releases the GIL while the simulation runs and honours Ctrl-C: the
//!   progress hook re-attaches briefly (at most every `PROGRESS_INTERVAL`),
//!   runs pending signal handlers and the user's callback, and stops the run
//!   when either raises or the callback returns `False`.
//! - Columns cross as little-endian byte buffers tagged with a numpy dtype
//!   string (`numpy.frombuffer`), never as one Python object per flow or
//!   per sample. The ports of queue samples and port rates are
//!   dictionary-encoded: `port` holds `<u4` codes into the `port_names` list.
//! - Errors map to `ConfigError` (input), `InvariantError` (a run broke an
//!   invariant) and `KeyboardInterrupt` (interrupted).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(
    pisanet,
    ConfigError,
    PyValueError,
    "The config or another input (CDF, flow list, topology file) is invalid."
);
create_exception!(
    pisanet,
    InvariantError,
    PyRuntimeError,
    "A run violated an invariant (packet conservation, exactly-once delivery)."
);

/// How often, at most, `run` re-attaches to Python to check signals and report progress.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// `(summary_json, flows, queues, ports_json, port_rates, capture, goodput)`; see `run`.
type RunTuple<'py> = (
    String,
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
    String,
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
);

fn to_py_err(error: pisanet::Error) -> PyErr {
    match error.kind {
        pisanet::ErrorKind::Input => ConfigError::new_err(error.message),
        pisanet::ErrorKind::Invariant => InvariantError::new_err(error.message),
        pisanet::ErrorKind::Interrupted => PyKeyboardInterrupt::new_err(error.message),
    }
}

/// A fixed-width value that crosses as a little-endian buffer.
trait Column: Sized {
    /// The numpy dtype string of the buffer.
    const DTYPE: &'static str;
    fn le_bytes(values: &[Self]) -> Vec<u8>;
}

macro_rules! column {
    ($t:ty, $dtype:literal) => {
        impl Column for $t {
            const DTYPE: &'static str = $dtype;
            fn le_bytes(values: &[Self]) -> Vec<u8> {
                values.iter().flat_map(|v| v.to_le_bytes()).collect()
            }
        }
    };
}
column!(u8, "|u1");
column!(u32, "<u4");
column!(u64, "<u8");
column!(f64, "<f8");

/// Sets `columns[name] = (dtype, bytes)`.
fn put<T: Column>(columns: &Bound<'_, PyDict>, name: &str, values: &[T]) -> PyResult<()> {
    let buffer = PyBytes::new(columns.py(), &T::le_bytes(values));
    columns.set_item(name, (T::DTYPE, buffer))
}

fn flow_columns<'py>(py: Python<'py>, f: &pisanet::FlowTable) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    put(&d, "id", &f.id)?;
    put(&d, "src", &f.src)?;
    put(&d, "dst", &f.dst)?;
    put(&d, "bytes", &f.bytes)?;
    put(&d, "class", &f.class)?;
    put(&d, "start_us", &f.start_us)?;
    put(&d, "finish_us", &f.finish_us)?;
    put(&d, "fct_us", &f.fct_us)?;
    put(&d, "slowdown", &f.slowdown)?;
    put(&d, "retransmissions", &f.retransmissions)?;
    put(&d, "reordered", &f.reordered)?;
    put(&d, "transport", &f.transport)?;
    put(&d, "priority", &f.priority)?;
    put(&d, "group", &f.group)?;
    put(&d, "lost_packets", &f.lost_packets)?;
    put(&d, "lost_bytes", &f.lost_bytes)?;
    put(&d, "delay_mean_us", &f.delay_mean_us)?;
    put(&d, "delay_p50_us", &f.delay_p50_us)?;
    put(&d, "delay_p99_us", &f.delay_p99_us)?;
    put(&d, "delay_max_us", &f.delay_max_us)?;
    put(&d, "rtt_mean_us", &f.rtt_mean_us)?;
    put(&d, "rtt_p99_us", &f.rtt_p99_us)?;
    put(&d, "rtt_max_us", &f.rtt_max_us)?;
    put(&d, "deadline_missed_packets", &f.deadline_missed_packets)?;
    put(&d, "dup_acks", &f.dup_acks)?;
    put(&d, "fast_retransmits", &f.fast_retransmits)?;
    put(&d, "timeouts", &f.timeouts)?;
    put(&d, "delay_packets", &f.delay_packets)?;
    put(&d, "delivered", &f.delivered)?;
    Ok(d)
}

fn goodput_columns<'py>(
    py: Python<'py>,
    g: &pisanet::GoodputSeries,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    put(&d, "time_us", &g.time_us)?;
    put(&d, "flow", &g.flow)?;
    put(&d, "bytes", &g.bytes)?;
    put(&d, "gbps", &g.gbps)?;
    Ok(d)
}

/// Dictionary-encodes port names: `(codes, names)` with `names[codes[i]] == ports[i]`.
fn encode_ports(ports: &[String]) -> (Vec<u32>, Vec<&str>) {
    // NOTE: so that a long sampling run does not create one Python string per sample.
    let mut names: Vec<&str> = Vec::new();
    let mut index: HashMap<&str, u32> = HashMap::new();
    let codes = ports
        .iter()
        .map(|p| {
            *index.entry(p.as_str()).or_insert_with(|| {
                names.push(p.as_str());
                (names.len() - 1) as u32
            })
        })
        .collect();
    (codes, names)
}

/// Sets `columns["port"]` (codes) and `columns["port_names"]`.
fn put_ports(columns: &Bound<'_, PyDict>, ports: &[String]) -> PyResult<()> {
    let (codes, names) = encode_ports(ports);
    put(columns, "port", &codes)?;
    columns.set_item("port_names", ("str", names))
}

fn queue_columns<'py>(py: Python<'py>, q: &pisanet::QueueSamples) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    put(&d, "time_us", &q.time_us)?;
    put_ports(&d, &q.port)?;
    put(&d, "depth_bytes", &q.depth_bytes)?;
    put(&d, "priority", &q.priority)?;
    Ok(d)
}

fn port_rate_columns<'py>(py: Python<'py>, r: &pisanet::PortRates) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    put(&d, "time_us", &r.time_us)?;
    put_ports(&d, &r.port)?;
    put(&d, "tx_gbps", &r.tx_gbps)?;
    put(&d, "carried_gbps", &r.carried_gbps)?;
    Ok(d)
}

/// `{"pcap": [(port, file bytes)], "trace": columns}`: the trace's `node`
/// and `port` dictionary-encoded, `event` codes into `event_names`.
fn capture_columns<'py>(
    py: Python<'py>,
    c: &pisanet::capture::CaptureOutput,
) -> PyResult<Bound<'py, PyDict>> {
    let pcaps: Vec<(&str, Bound<'py, PyBytes>)> = c
        .pcaps
        .iter()
        .map(|(name, bytes)| (name.as_str(), PyBytes::new(py, bytes)))
        .collect();
    let t = &c.trace;
    let d = PyDict::new(py);
    put(&d, "time_us", &t.time_us)?;
    let (codes, names) = encode_ports(&t.node);
    put(&d, "node", &codes)?;
    d.set_item("node_names", ("str", names))?;
    put_ports(&d, &t.port)?;
    put(&d, "queue", &t.queue)?;
    put(&d, "event", &t.event)?;
    d.set_item(
        "event_names",
        ("str", pisanet::capture::TRACE_EVENTS.to_vec()),
    )?;
    put(&d, "depth_bytes", &t.depth_bytes)?;
    put(&d, "packet", &t.packet)?;
    put(&d, "flow", &t.flow)?;
    put(&d, "seq", &t.seq)?;
    put(&d, "size", &t.size)?;
    let out = PyDict::new(py);
    out.set_item("pcap", pcaps)?;
    out.set_item("trace", d)?;
    Ok(out)
}

/// Runs pending signal handlers (Ctrl-C raises here), then the user's callback.
/// `Ok(false)` asks the run to stop.
fn report(py: Python<'_>, callback: Option<&Py<PyAny>>, p: pisanet::Progress) -> PyResult<bool> {
    py.check_signals()?;
    let Some(callback) = callback else {
        return Ok(true);
    };
    let answer = callback.call1(py, (p.sim_time_s, p.flows_completed, p.flows_total))?;
    Ok(answer.is_none(py) || answer.bind(py).is_truthy()?)
}

/// Runs a config (TOML text) and returns `(summary_json, flows, queues, ports_json, port_rates, capture, goodput)`.
/// With `flows` (a callable), the flow table goes to it instead, a batch
/// of columns at a time as flows end (`pisanet::run_toml_streaming`), and
/// the returned `flows` columns are empty.
#[pyfunction]
#[pyo3(signature = (text, base_dir=None, overrides=Vec::new(), progress=None, flows=None))]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    base_dir: Option<PathBuf>,
    overrides: Vec<String>,
    progress: Option<Py<PyAny>>,
    flows: Option<Py<PyAny>>,
) -> PyResult<RunTuple<'py>> {
    // NOTE: shared with the flow sink, which lives as long as the run's
    // records (a 'static box).
    let raised: Arc<Mutex<Option<PyErr>>> = Arc::default();
    let mut last_report: Option<Instant> = None;
    let result = py.detach(|| {
        let mut on_progress = |p: pisanet::Progress| {
            if last_report.is_some_and(|t| t.elapsed() < PROGRESS_INTERVAL) {
                return true;
            }
            last_report = Some(Instant::now());
            Python::attach(|py| report(py, progress.as_ref(), p)).unwrap_or_else(|e| {
                stash(&raised, e);
                false
            })
        };
        let Some(callback) = flows else {
            return pisanet::run_toml(text, base_dir.as_deref(), &overrides, &mut on_progress);
        };
        let stashed = raised.clone();
        let sink: pisanet::sim::FlowSink = Box::new(move |table| {
            Python::attach(|py| {
                let columns = flow_columns(py, &table)?;
                drop(table);
                callback.call1(py, (columns,)).map(drop)
            })
            .map_err(|e| {
                stash(&stashed, e);
                pisanet::Error {
                    kind: pisanet::ErrorKind::Interrupted,
                    message: "the flow table's writer failed".into(),
                }
            })
        });
        pisanet::run_toml_streaming(
            text,
            base_dir.as_deref(),
            &overrides,
            &mut on_progress,
            sink,
        )
    });
    // NOTE: an exception raised by a signal handler, the callback or the
    // flow writer wins over the run's own result: the user asked to stop,
    // or the results could not be written.
    if let Some(e) = raised.lock().ok().and_then(|mut r| r.take()) {
        return Err(e);
    }
    let out = result.map_err(to_py_err)?;
    Ok((
        out.summary.to_string(),
        flow_columns(py, &out.flows)?,
        queue_columns(py, &out.queues)?,
        ports_json(&out.ports),
        port_rate_columns(py, &out.port_rates)?,
        capture_columns(py, &out.capture)?,
        goodput_columns(py, &out.goodput)?,
    ))
}

/// ports.json's text: the array of per-port objects, one port a line
/// (compact, so that a fabric of 400 000 ports is written and read in a
/// moment, and readable with line tools); any other value as serde writes it.
fn ports_json(ports: &serde_json::Value) -> String {
    match ports {
        serde_json::Value::Array(items) if !items.is_empty() => {
            let lines: Vec<String> = items.iter().map(|p| p.to_string()).collect();
            format!("[\n{}\n]", lines.join(",\n"))
        }
        other => other.to_string(),
    }
}

/// Keeps the first exception raised during a run.
fn stash(raised: &Mutex<Option<PyErr>>, e: PyErr) {
    if let Ok(mut r) = raised.lock() {
        r.get_or_insert(e);
    }
}

/// Validates a config and returns it resolved, every default filled in, as TOML.
/// With `check = false` only keys, types and ranges are validated (the
/// network and workload are not built): for a caller that runs it next.
#[pyfunction]
#[pyo3(signature = (text, base_dir=None, overrides=Vec::new(), check=true))]
fn resolve(
    text: &str,
    base_dir: Option<PathBuf>,
    overrides: Vec<String>,
    check: bool,
) -> PyResult<String> {
    if check {
        pisanet::resolve_toml(text, base_dir.as_deref(), &overrides).map_err(to_py_err)
    } else {
        pisanet::resolve_toml_keys(text, &overrides).map_err(to_py_err)
    }
}

/// The JSON Schema of the config.
/// The keys the config does not read (for sweeps: refused only if no point reads them).
#[pyfunction]
fn unused_keys(text: &str, overrides: Vec<String>) -> PyResult<Vec<String>> {
    pisanet::unused_keys(text, &overrides).map_err(to_py_err)
}

#[pyfunction]
fn schema() -> String {
    pisanet::config_schema_json()
}

/// A standard benchmark scenario's config (TOML), or None for an unknown name.
#[pyfunction]
fn bench_config(name: &str) -> Option<&'static str> {
    pisanet::bench_config_toml(name)
}

/// The resource report of a scheme's switch programs, as text.
#[pyfunction]
fn resources(scheme: &str) -> PyResult<String> {
    pisanet::resources_report(scheme).map_err(to_py_err)
}

/// DBB's plan of one source-sink switch pair of a config's topology, as JSON.
#[pyfunction]
#[pyo3(signature = (text, src, sink, base_dir=None, overrides=Vec::new()))]
fn dbb_plan(
    text: &str,
    src: &str,
    sink: &str,
    base_dir: Option<PathBuf>,
    overrides: Vec<String>,
) -> PyResult<String> {
    pisanet::dbb_plan(text, base_dir.as_deref(), &overrides, src, sink)
        .map(|v| v.to_string())
        .map_err(to_py_err)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("InvariantError", m.py().get_type::<InvariantError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(unused_keys, m)?)?;
    m.add_function(wrap_pyfunction!(bench_config, m)?)?;
    m.add_function(wrap_pyfunction!(resources, m)?)?;
    m.add_function(wrap_pyfunction!(dbb_plan, m)?)?;
    Ok(())
}
