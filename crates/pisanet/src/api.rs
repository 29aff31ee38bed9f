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
    /// 0 = TCP, 1 = UDP.
    pub transport: Vec<u8>,
    /// Strict-priority queue of the flow's packets.
    pub priority: Vec<u8>,
    /// Flow group (0 = `[workload]`, k + 1 = `workload.groups[k]`).
    pub group: Vec<u32>,
    /// Data packets lost (TCP: dropped in the network; UDP: sent, not received).
    pub lost_packets: Vec<u32>,
    pub lost_bytes: Vec<u64>,
    /// With `metrics.flow_stats` (else NaN / 0): one-way delay of delivered
    /// data packets (us), RTT samples (us), deadline misses.
    pub delay_mean_us: Vec<f64>,
    pub delay_p50_us: Vec<f64>,
    pub delay_p99_us: Vec<f64>,
    pub delay_max_us: Vec<f64>,
    pub rtt_mean_us: Vec<f64>,
    pub rtt_p99_us: Vec<f64>,
    pub rtt_max_us: Vec<f64>,
    pub deadline_missed_packets: Vec<u64>,
    /// With `metrics.flow_stats` (else 0; 0 for UDP): the TCP sender's
    /// duplicate ACKs (RFC 5681 section 2), fast retransmits and
    /// retransmission timeouts.
    pub dup_acks: Vec<u32>,
    pub fast_retransmits: Vec<u32>,
    pub timeouts: Vec<u32>,
    /// Delivered data packets whose one-way delay was measured (the
    /// denominator of `deadline_missed_packets`).
    pub delay_packets: Vec<u64>,
    /// Bytes delivered in order to the receiver (all of them for a finished
    /// flow; so far for one still running when the run stopped).
    pub delivered: Vec<u64>,
}

/// Per-flow goodput series, as columns (present when `metrics.goodput_interval_us` > 0):
/// one row per flow and interval in which the flow delivered bytes.
#[derive(Clone, Debug, Default)]
pub struct GoodputSeries {
    /// End of the interval.
    pub time_us: Vec<f64>,
    pub flow: Vec<u32>,
    /// Payload bytes delivered to the receiving application in the interval.
    pub bytes: Vec<u64>,
    /// The same as a rate over the interval (Gb/s).
    pub gbps: Vec<f64>,
}

/// Queue-depth samples, as columns (present when `metrics.queue_sample_interval_us` > 0).
#[derive(Clone, Debug, Default)]
pub struct QueueSamples {
    pub time_us: Vec<f64>,
    /// Link name, e.g. "leaf0->spine1".
    pub port: Vec<String>,
    /// Bytes queued: the port's total with one priority queue
    /// (`topology.priorities = 1`), else that priority queue's.
    pub depth_bytes: Vec<u64>,
    /// The priority queue a row is about (0 with one queue per port).
    pub priority: Vec<u8>,
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
    /// Per-flow goodput series (`metrics.goodput_interval_us`).
    pub goodput: GoodputSeries,
    /// Per-port counters, one JSON object per port (name, tx_packets, tx_bytes, drops, ecn_marks).
    pub ports: serde_json::Value,
    /// pcap files and the per-packet trace (`[metrics.pcap]`, `[metrics.trace]`).
    pub capture: crate::capture::CaptureOutput,
}
