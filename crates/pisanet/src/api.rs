//! The public API the CLI and the Python binding use. Stable: scripts depend on it.

/// What went wrong, and whose fault it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The user's input (config, CDF file, flow list, topology file) is invalid.
    /// The CLI exits with code 2.
    Input,
    /// A run violated an invariant (conservation, exactly-once delivery).
    /// The CLI exits with code 1.
    Invariant,
    /// The run was interrupted (Ctrl-C / progress callback asked to stop).
    Interrupted,
}

/// An error with a one-line message naming the key and what is allowed,
/// e.g. `topology.k: must be even, got 5`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    /// An input error. Its message is kept to one line: a line break or
    /// another control character quoted from the user's input (a key, a
    /// file's row) is shown escaped (`\n`), never printed.
    pub fn input(message: impl Into<String>) -> Self {
        let message: String = message.into();
        let message = if message.chars().any(char::is_control) {
            message
                .chars()
                .map(|c| {
                    if c.is_control() {
                        c.escape_default().to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect()
        } else {
            message
        };
        Error {
            kind: ErrorKind::Input,
            message,
        }
    }
    pub fn invariant(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Invariant,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
impl std::error::Error for Error {}

/// Per-flow records, as columns (one entry per flow, in flow id order).
/// Times are in microseconds; unfinished flows have NaN finish, fct and slowdown.
#[derive(Clone, Debug, Default)]
pub struct FlowTable {
    pub id: Vec<u32>,
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    pub bytes: Vec<u64>,
    /// 0 = short, 1 = large (the IPv4 traffic class written by the workload).
    pub class: Vec<u8>,
    pub start_us: Vec<f64>,
    pub finish_us: Vec<f64>,
    pub fct_us: Vec<f64>,
    pub slowdown: Vec<f64>,
    pub retransmissions: Vec<u32>,
    pub reordered: Vec<u32>,
    /// Bytes delivered in order to the receiver (all of them for a finished
    /// flow; so far for one still running when the run stopped).
    pub delivered: Vec<u64>,
}

/// Queue-depth samples, as columns (present when `metrics.queue_sample_interval_us` > 0).
#[derive(Clone, Debug, Default)]
pub struct QueueSamples {
    pub time_us: Vec<f64>,
    /// Link name, e.g. "leaf0->spine1".
    pub port: Vec<String>,
    pub depth_bytes: Vec<u64>,
}

/// Per-port transmit rates, as columns (present when `metrics.port_rate_interval_us` > 0).
#[derive(Clone, Debug, Default)]
pub struct PortRates {
    /// End of each sampling interval.
    pub time_us: Vec<f64>,
    /// Link name, e.g. "S1->A3".
    pub port: Vec<String>,
    /// Rate the port's transmitter sent at over the interval (Gb/s), onto a failed link too.
    pub tx_gbps: Vec<f64>,
    /// Rate that went onto a working link (Gb/s): zero while the link is down.
    pub carried_gbps: Vec<f64>,
}

/// Progress reported during a run.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub sim_time_s: f64,
    pub flows_completed: u64,
    pub flows_total: u64,
}

/// Everything a run produces.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// `summary.json` contents (see docs/results-format.md).
    pub summary: serde_json::Value,
    pub flows: FlowTable,
    pub queues: QueueSamples,
    pub port_rates: PortRates,
    /// Per-port counters, one JSON object per port (name, tx_packets, tx_bytes, drops, ecn_marks).
    pub ports: serde_json::Value,
    /// pcap files and the per-packet trace (`[metrics.pcap]`, `[metrics.trace]`).
    pub capture: crate::capture::CaptureOutput,
}
