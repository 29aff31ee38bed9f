//! The user-facing parameters of the hosts' transport (`[transport]` in a
//! run's TOML), declared once here, next to the model that reads them: each
//! with its doc comment, default, unit (`x-unit`), range and, for keys only
//! some transports read, `x-applies-when`. The simulator's config composes
//! this struct ([`TransportParams`]); `pisanet schema` shows it.
//!
//! Units follow the TOML keys (microseconds, KB = 1000 B, Gb/s);
//! [`TransportParams::tcp_config`] converts them into a [`TcpConfig`].

use crate::rate::dcqcn::{DcqcnNpParams, DcqcnParams};
use crate::rate::qcn::QcnParams;
use crate::rate::RateParams;
use crate::tcp::{CcKind, TcpConfig};
use pisanet_engine::SimTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    /// TCP NewReno (RFC 5681, RFC 6582).
    Newreno,
    /// DCTCP (RFC 8257).
    Dctcp,
    /// UDP at `udp_rate_gbps`, paced by `transport.reaction_point` (default
    /// "fixed": constant bit rate).
    Udp,
    /// TCP CUBIC (RFC 9438), with `cubic_c` and `cubic_beta`.
    Cubic,
}

/// `[transport]`: the hosts' transport, for every flow of a run. Keys,
/// units and ranges are those of the TOML file; [`TransportParams::tcp_config`]
/// turns them into the [`TcpConfig`] the endpoints take.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "TransportCfg")]
#[serde(deny_unknown_fields, default)]
pub struct TransportParams {
    pub kind: TransportKind,
    /// Whose behaviour the TCP options take where the config does not set
    /// them: "pisanet" (default: each option's own default, close to Linux)
    /// or "ns3" (ns-3 3.44's `TcpSocketBase`, as docs/results/crosscheck.md
    /// measured it against ns-3: `tsq_kb = 0`, `handshake`,
    /// `limited_transmit`, `rto_granularity_us = 1000`, `rtt_every_ack`
    /// with `ts_clock_us = 1000`, `cwr_freeze`, `cwr_ends_at_timeout`,
    /// `full_segment_window`, `ce_new_seq_only`, `rto_reset_on_ack`,
    /// `unvalidated_cwnd`; for NewReno `newreno_ack_adder`; for DCTCP
    /// `dctcp_dupack_bytes`, `dctcp_no_floor`, `dctcp_loss_uses_alpha`,
    /// `dctcp_window_end_next_tx`, `slow_start_all_acked` and
    /// `ca_segment_count`; without SACK `cwr_ignores_dupacks`,
    /// `ece_ends_recovery` and `reno_scoreboard`). A key the config gives
    /// wins over the profile. ns-3's packet-counted queues and ECN
    /// threshold are the topology's (`topology.buffer_pkts`,
    /// `topology.ecn_threshold_pkts`), set with the scenario's values. See
    /// docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub profile: TransportProfile,
    /// Minimum retransmission timeout (us).
    #[schemars(range(min = 1, max = 100000000), extend("x-unit" = "us"), extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub min_rto_us: f64,
    /// Maximum retransmission timeout (us).
    #[schemars(range(min = 1, max = 1000000000), extend("x-unit" = "us"), extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub max_rto_us: f64,
    /// RTO before any RTT sample (us).
    #[schemars(range(min = 1, max = 1000000000), extend("x-unit" = "us"), extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub initial_rto_us: f64,
    /// Maximum segment size: payload bytes per packet.
    #[schemars(range(min = 64, max = 9000), extend("x-unit" = "bytes"))]
    pub mss: u32,
    /// Initial congestion window (segments).
    #[schemars(range(min = 1, max = 1000000), extend("x-unit" = "segments"), extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub init_cwnd: u32,
    /// ACK every second segment, with a timer.
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub delayed_ack: bool,
    /// Delayed-ACK timer (us).
    #[schemars(range(min = 0.001, max = 1000000), extend("x-unit" = "us"), extend("x-applies-when" = {"key": "transport.delayed_ack", "in": [true]}))]
    pub delayed_ack_us: f64,
    /// Receiver's advertised window (KB).
    #[schemars(range(min = 0.064, max = 4294967), extend("x-unit" = "KB"), extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub rwnd_kb: f64,
    /// DCTCP: g = 1 / 2^dctcp_g_shift (RFC 8257: 1/16).
    #[schemars(range(min = 0, max = 16), extend("x-applies-when" = {"key": "transport.kind", "in": ["dctcp"]}))]
    pub dctcp_g_shift: u8,
    /// UDP: sending rate of each flow (Gb/s).
    #[schemars(range(min = 0.000001, max = 100000), extend("x-unit" = "Gb/s"), extend("x-applies-when" = {"key": "transport.kind", "in": ["udp"]}))]
    pub udp_rate_gbps: f64,
    /// TCP Small Queues: wire bytes (KB = 1000 B) of one TCP flow's packets
    /// its host's NIC queue may hold; the sender waits for its packets to
    /// leave before sending more. Default 131.072 (131072 B, Linux's
    /// `tcp_limit_output_bytes` default as TSQ introduced it: two 64 KB TSO
    /// packets). 0 disables the limit (a flow may fill the NIC with its whole
    /// window). Range >= 0. See docs/model.md, "Hosts".
    #[schemars(range(min = 0, max = 10000000), extend("x-unit" = "KB"), extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub tsq_kb: f64,
    /// Open each TCP connection with a SYN / SYN-ACK before data (one RTT;
    /// the SYN's RTT is the first sample), as Linux and ns-3 do. Default false. See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub handshake: bool,
    /// RFC 3042 limited transmit: the first two duplicate ACKs each send one new segment beyond cwnd, as Linux and ns-3 do. Default false. See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub limited_transmit: bool,
    /// Classic ECN (RFC 3168) for NewReno and CUBIC: data is sent ECT(0), the receiver echoes CE with ECE until it sees CWR, and the sender cuts its window as for a loss at most once per window of data, without retransmitting. DCTCP always uses ECN its own way. Default false. See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "cubic"]}))]
    pub ecn: bool,
    /// SACK (RFC 2018; up to 3 blocks per ACK, counted in its size) with RFC 6675 loss recovery. Linux and ns-3 have it on; default false keeps the results in docs/results. See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub sack: bool,
    /// Clock granularity G of the RTO (RFC 6298 section 2: RTO = SRTT + max(G, 4 RTTVAR), then clamped to [min_rto_us, max_rto_us]). ns-3 uses 1000 (its ClockGranularity, 1 ms); Linux's RTO is SRTT + max(4 mdev, rto_min), i.e. G = min_rto_us. Default 0: one tick of the simulator's clock, RTO = max(min_rto_us, SRTT + 4 RTTVAR). See docs/model.md, "Hosts".
    #[schemars(range(min = 0, max = 1000000000), extend("x-unit" = "us"), extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub rto_granularity_us: f64,
    /// ns-3's CA_CWR: after an ECN window reduction (DCTCP's or classic ECN's), until an ACK passes the highest byte sent then, duplicate ACKs trigger neither limited transmit nor fast retransmit (a loss waits for the RTO). ns-3 3.44 does this; Linux and RFC 3168 do not. Default false. See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub cwr_ignores_dupacks: bool,
    /// ns-3's and Linux's window in CWR: after an ECN window reduction (DCTCP's or classic ECN's), cwnd does not grow until an ACK passes the highest byte sent at the cut, and is then set to ssthresh (ns-3 3.44 CA_CWR; Linux `tcp_cwnd_reduction` / `tcp_end_cwnd_reduction`). Default false: cwnd grows by NewReno's rule after the cut. See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub cwr_freeze: bool,
    /// ns-3's CA_CWR ends at a retransmission timeout: the once-per-window guard on ECN cuts (DCTCP's or classic ECN's) is forgotten at a timeout, so the next ECE on new data cuts (and, with `cwr_ignores_dupacks`, enters CA_CWR) at once, also while the timeout's resends are outstanding (ns-3 3.44: `ReTxTimeout` enters CA_LOSS, `ReceivedAck` calls `EnterCwr` in any state but CA_CWR). Linux forgets it too but ignores ECE until the loss is repaired. Default false: the guard outlives the timeout (RFC 3168 section 6.1.2). See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub cwr_ends_at_timeout: bool,
    /// ns-3's window growth without congestion-window validation: every ACK of new data grows cwnd by the congestion controller's rule, also when the flow did not use its window (e.g. limited by the receive window), so cwnd can grow far past what is in flight and an ECN cut of it (DCTCP's (1 - alpha / 2) x cwnd) may leave the sending rate unchanged. ns-3 3.44's `TcpNewReno` and `TcpDctcp` do this. Default false: cwnd grows only when the flow was cwnd-limited, or in slow start below twice the largest flight (RFC 7661 section 4.2, Linux `tcp_is_cwnd_limited`). See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub unvalidated_cwnd: bool,
    /// ns-3's and Linux's slow start: cwnd grows by every byte an ACK acknowledges, up to ssthresh, the rest counting towards congestion avoidance (ns-3 3.44 `TcpLinuxReno::SlowStart`, used by `TcpDctcp`: cwnd += segmentsAcked x SMSS; Linux `tcp_slow_start`; ns-3's `TcpNewReno` adds one SMSS per ACK instead: `newreno_ack_adder`). It differs when one ACK covers many segments, as after a timeout without SACK when the resend of a hole acknowledges what the receiver held beyond it. Default false: cwnd += min(N, SMSS) per ACK (RFC 5681 section 3.1, equation (2)). See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub slow_start_all_acked: bool,
    /// ns-3's EnterCwr from fast recovery: an ACK of new data with ECE during NewReno fast recovery (DCTCP, or classic `ecn`) ends the recovery and enters ns-3's CA_CWR (window cut by the ECN reduction of the recovery's window; remaining losses wait for the RTO). ns-3 3.44 does this; Linux and RFC 3168 do not. Needs `cwr_ignores_dupacks`; without SACK only. Default false. See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.cwr_ignores_dupacks", "in": [true]}))]
    pub ece_ends_recovery: bool,
    /// DCTCP: a duplicate ACK counts as one MSS acknowledged in alpha's estimate (and as one MSS marked if it carries ECE), as Linux 4.x (`dctcp_update_alpha`) and ns-3 3.44 (`PktsAcked(1)` on a duplicate ACK) do. Default false: only newly acknowledged bytes count (RFC 8257 section 3.3). See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["dctcp"]}))]
    pub dctcp_dupack_bytes: bool,
    /// DCTCP: a loss (fast retransmit, or a timeout of a segment not yet resent by the timer) sets ssthresh to (1 - alpha / 2) x cwnd (at least 2 segments), as ns-3 3.44 (`TcpDctcp::GetSsThresh`, called by `EnterRecovery` and `ReTxTimeout`) and Linux 4.x (`dctcp_ssthresh`) do. Default false: halve as conventional TCP (RFC 8257 section 3.5), as current Linux does (`dctcp_react_to_loss`). See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["dctcp"]}))]
    pub dctcp_loss_uses_alpha: bool,
    /// DCTCP: the alpha-scaled cut (cwnd x (1 - alpha / 2), on an ECN echo and, with `dctcp_loss_uses_alpha`, on a loss) has no floor, so cwnd may fall below one segment, as ns-3 3.44's `TcpDctcp::GetSsThresh` (tcp-dctcp.cc) returns it. Default false: at least 2 SMSS, as Linux's `dctcp_ssthresh`. See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["dctcp"]}))]
    pub dctcp_no_floor: bool,
    /// DCTCP: alpha's observation window ends when the cumulative ACK reaches one past the last segment sent, resends included, as ns-3 3.44's `TcpDctcp::PktsAcked` (`m_nextSeq = m_nextTxSequence`, which a timeout moves back to the first unacknowledged byte), so after a timeout windows end a few segments apart and alpha decays fast. Default false: it ends when the ACK passes SND.NXT as it stood at the window's start (RFC 8257 section 3.3, Linux `dctcp_update_alpha`). See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["dctcp"]}))]
    pub dctcp_window_end_next_tx: bool,
    /// Congestion avoidance counts whole segments acknowledged, as ns-3 3.44's `TcpLinuxReno::CongestionAvoidance` (used by `TcpDctcp`): one segment is added each time the count reaches floor(cwnd / MSS), and a window cut does not reset the count. Default false: one MSS per cwnd of bytes acknowledged, the count reset at each cut (RFC 3465 byte counting; Linux's `tcp_init_cwnd_reduction` zeroes `snd_cwnd_cnt`). See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp"]}))]
    pub ca_segment_count: bool,
    /// NewReno grows once per ACK, as ns-3 3.44's `TcpNewReno::IncreaseWindow`: acknowledged bytes are counted in whole segments (the remainder carried); an ACK of at least one segment adds one MSS in slow start, whatever it covers, and in congestion avoidance max(1, MSS x MSS / cwnd) bytes, once per ACK however many segments it covers. ns-3's `TcpDctcp` grows as `TcpLinuxReno` instead (`ca_segment_count`). Not with `ca_segment_count` or `slow_start_all_acked`. Default false: RFC 5681 slow start (cwnd += min(N, MSS)) and byte counting (RFC 3465). See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno"]}))]
    pub newreno_ack_adder: bool,
    /// The receiver echoes a CE mark only on a segment whose sequence number is above that of the last CE-marked segment it echoed, as ns-3 3.44's `TcpSocketBase::ForwardUp` (`m_ecnCESeq`): a marked resend below it counts as unmarked, so (DCTCP) its ACK carries no ECE. Default false: every CE mark is echoed (RFC 8257 section 3.2, RFC 3168 section 6.1.3, Linux). See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub ce_new_seq_only: bool,
    /// ns-3's silly-window avoidance: new data leaves only when the usable window holds a full segment or all the data left (ns-3 3.44 tcp-socket-base.cc, `SendPendingData`); with nothing in flight and a window under one segment the sender waits for the retransmission timer, whose expiry is a timeout (`ReTxTimeout`: ssthresh from the congestion control, cwnd = 1 SMSS, RTO doubled) that sends one segment. Linux counts cwnd in whole segments (`tcp_cwnd_test` in `tcp_write_xmit`), so this never arises there. Default false: with nothing in flight, send what the window allows at once. See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub full_segment_window: bool,
    /// Every ACK of new data that restarts the retransmission timer recomputes the RTO from SRTT and RTTVAR first (SRTT + max(G, 4 RTTVAR), clamped), so a backoff ends at the first new ACK after a timeout, RTT sample or not, as ns-3 3.44's `TcpSocketBase::NewAck` does. Default false: RFC 6298 section 5, the backed-off RTO kept until a valid RTT sample (Karn's algorithm; Linux clears its backoff only with a sample, which its timestamps give on a retransmission's ACK too). See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub rto_reset_on_ack: bool,
    /// Without SACK, ns-3 3.44's per-segment loss bookkeeping (`TcpTxBuffer`): each duplicate ACK marks one more segment SACKed (pipe = sent - SACKed - lost + resent), a timeout marks every outstanding segment lost and resends them all oldest first as the window allows, and marks left above a cumulative ACK mark the next segment lost (resent at once; one duplicate ACK then starts recovery). Linux keeps only counts (`tcp_add_reno_sack`) and does not resend a segment still in the host's queue. Default false. See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.sack", "in": [false]}))]
    pub reno_scoreboard: bool,
    /// RTT samples from every ACK of new data that covers the oldest segment in flight, timed from that segment's last send (whose timestamp the receiver echoes, RFC 7323 section 4.3), as ns-3 3.44's `EstimateRtt` and Linux take them, instead of one timed segment per round trip (RFC 6298's minimum). Karn's rule on that segment unless `ts_clock_us` is set (TCP timestamps make a resend's sample unambiguous, as ns-3's `CalculateRttSample` reads it); a timeout forgets the segments sent before it (ns-3 empties `m_history`). Default false. See docs/model.md, "Hosts".
    #[schemars(extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub rtt_every_ack: bool,
    /// Tick of the TCP timestamp clock the per-ACK RTT samples are read from: a sample is (ticks now - ticks at the echoed send) x tick, 0 ticks counting as 1 us, and the ACK of a resent segment gives one too (timed from the resend). ns-3 3.44: 1000 (millisecond timestamps). Default 0: the simulator's clock, Karn's rule on resent segments (Linux times its samples in microseconds). See docs/model.md, "Hosts".
    #[schemars(range(min = 0, max = 1000000), extend("x-unit" = "us"), extend("x-applies-when" = {"key": "transport.rtt_every_ack", "in": [true]}))]
    pub ts_clock_us: f64,
    /// CUBIC: the constant C of W_cubic(t) = C (t - K)^3 + W_max, in segments per second cubed (RFC 9438 section 5: 0.4).
    #[schemars(range(min = 0.000001, max = 1000000), extend("x-unit" = "segments/s^3"), extend("x-applies-when" = {"key": "transport.kind", "in": ["cubic"]}))]
    pub cubic_c: f64,
    /// CUBIC: multiplicative decrease factor beta_cubic (RFC 9438 section 5: 0.7).
    #[schemars(range(min = 0.5, max = 0.99), extend("x-applies-when" = {"key": "transport.kind", "in": ["cubic"]}))]
    pub cubic_beta: f64,
    /// Application rate cap of every TCP flow (iperf3 -b): a token bucket in the sender lets new payload leave at most at this rate (Gb/s of payload). 0 (default) = no cap.
    #[schemars(range(min = 0, max = 100000), extend("x-unit" = "Gb/s"), extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub app_rate_gbps: f64,
    /// Depth of the application token bucket (KB = 1000 B of payload); 0 (default) = one MSS, so segments are paced one by one.
    #[schemars(range(min = 0, max = 1000000), extend("x-unit" = "KB"), extend("x-applies-when" = {"key": "transport.kind", "in": ["newreno", "dctcp", "cubic"]}))]
    pub app_burst_kb: f64,
    /// UDP flows: how long after a sender's last datagram has left its NIC
    /// the flow waits for stragglers before it ends, counting what did not
    /// arrive as lost (us). 0 (default) = automatic: the worst-case time
    /// across the flow's path with every switch buffer full (docs/metrics.md,
    /// "UDP flows"). Read by every run (flows may be UDP per row or group).
    #[schemars(range(min = 0, max = 1e10), extend("x-unit" = "us"))]
    pub udp_drain_us: f64,
    /// Reaction point of rate-based UDP flows that name none (`cc` of a flow
    /// row or group): "fixed" (default: constant rate, plain UDP), "halve"
    /// (test: halves the rate on every feedback packet), "qcn" (P4QCN's RP,
    /// section 3.1.2), "qcn_cnp" (the same RP fed by CNPs from the
    /// receiver's notification point: P4QCN's 3-point variant) or "dcqcn"
    /// (DCQCN's RP and NP). See docs/model.md, "UDP and rate-based hosts".
    pub reaction_point: ReactionPointKind,
    /// P4QCN's (QCN's) reaction point, for flows whose reaction point is
    /// "qcn" or "qcn_cnp" (docs/schemes/p4qcn.md). Read by every run.
    pub qcn: QcnParams,
    /// DCQCN's reaction point, for flows whose reaction point is "dcqcn"
    /// (docs/schemes/p4qcn.md). Read by every run.
    pub dcqcn: DcqcnParams,
    /// DCQCN's notification point at the receivers of "dcqcn" and "qcn_cnp"
    /// flows. Read by every run.
    pub dcqcn_np: DcqcnNpParams,
    /// Go-back-N for every rate-based (UDP) flow of the run, those of a
    /// `transport.kind = "udp"` run and the per-flow UDP flows (flow-list
    /// rows, flow groups) of a TCP run alike (RoCEv2 reliable connection,
    /// IBTA vol. 1 section 9.7): datagrams carry a PSN, the receiver
    /// accepts only in order, ACKs every `gbn_ack_every` packets and the
    /// flow's last, NAKs the first packet beyond a gap, and the sender goes
    /// back to the NAK's PSN (or, after `gbn_timeout_us` without progress,
    /// to the oldest unacknowledged packet) at its reaction point's rate. A
    /// flow completes when every byte is acknowledged. Default false: no
    /// retransmission, loss stays visible. Read by every run. See
    /// docs/model.md, "UDP and rate-based hosts".
    pub go_back_n: bool,
    /// Go-back-N: the sender's local ACK timeout (us): without an ACK that
    /// advances for this long, it goes back to the oldest unacknowledged
    /// packet (RoCE's 4.096 us x 2^timeout; 4000, about timeout = 10).
    #[schemars(range(min = 1, max = 1e10), extend("x-unit" = "us"), extend("x-applies-when" = {"key": "transport.go_back_n", "in": [true]}))]
    pub gbn_timeout_us: f64,
    /// Go-back-N: the receiver ACKs every this many packets accepted in
    /// order (ACK coalescing), and always the flow's last packet. Default 16.
    #[schemars(range(min = 1, max = 1000000), extend("x-unit" = "packets"), extend("x-applies-when" = {"key": "transport.go_back_n", "in": [true]}))]
    pub gbn_ack_every: u32,
}

/// `transport.profile`: whose behaviour the TCP options default to.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TransportProfile {
    /// Each option's own default (TSQ, no handshake, RFC 6298's RTO, ...).
    #[default]
    Pisanet,
    /// ns-3 3.44's `TcpSocketBase` behaviour ([`TransportParams::apply_profile`]).
    Ns3,
}

/// `transport.reaction_point`: a rate-based sender's reaction point.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReactionPointKind {
    /// No reaction: the configured rate throughout.
    #[default]
    Fixed,
    /// Halves the rate on every feedback packet (a test reaction point).
    Halve,
    /// P4QCN's reaction point (QCN's three-state machine, section 3.1.2).
    Qcn,
    /// P4QCN's reaction point fed by the receiver's CNPs (section 4.2.4).
    QcnCnp,
    /// DCQCN's reaction point, with its notification point at the receiver.
    Dcqcn,
}

impl ReactionPointKind {
    pub fn kind(self) -> crate::rate::ReactionKind {
        use crate::rate::ReactionKind as K;
        match self {
            ReactionPointKind::Fixed => K::Fixed,
            ReactionPointKind::Halve => K::Halve,
            ReactionPointKind::Qcn => K::Qcn,
            ReactionPointKind::QcnCnp => K::QcnCnp,
            ReactionPointKind::Dcqcn => K::Dcqcn,
        }
    }
}

impl Default for TransportParams {
    fn default() -> Self {
        TransportParams {
            kind: TransportKind::Dctcp,
            profile: TransportProfile::Pisanet,
            min_rto_us: 1000.0,
            max_rto_us: 1_000_000.0,
            initial_rto_us: 3000.0,
            mss: 1460,
            init_cwnd: 10,
            delayed_ack: false,
            delayed_ack_us: 40.0,
            rwnd_kb: 4096.0,
            dctcp_g_shift: 4,
            udp_rate_gbps: 1.0,
            tsq_kb: 131.072,
            handshake: false,
            limited_transmit: false,
            ecn: false,
            sack: false,
            rto_granularity_us: 0.0,
            cwr_ignores_dupacks: false,
            cwr_freeze: false,
            cwr_ends_at_timeout: false,
            unvalidated_cwnd: false,
            slow_start_all_acked: false,
            ece_ends_recovery: false,
            dctcp_dupack_bytes: false,
            dctcp_loss_uses_alpha: false,
            dctcp_no_floor: false,
            dctcp_window_end_next_tx: false,
            ca_segment_count: false,
            newreno_ack_adder: false,
            ce_new_seq_only: false,
            full_segment_window: false,
            rto_reset_on_ack: false,
            reno_scoreboard: false,
            rtt_every_ack: false,
            ts_clock_us: 0.0,
            cubic_c: 0.4,
            cubic_beta: 0.7,
            app_rate_gbps: 0.0,
            app_burst_kb: 0.0,
            udp_drain_us: 0.0,
            reaction_point: ReactionPointKind::Fixed,
            qcn: QcnParams::default(),
            dcqcn: DcqcnParams::default(),
            dcqcn_np: DcqcnNpParams::default(),
            go_back_n: false,
            gbn_timeout_us: 4000.0,
            gbn_ack_every: 16,
        }
    }
}

impl TransportParams {
    /// Sets what `profile` selects on every option the config did not give
    /// (`given(key)`: the key, without `transport.`, is in the config or an
    /// override). Called once, by the config's parse, after the ranges and
    /// before the unread-key check and the rules between keys, so `pisanet
    /// validate` and a run see the same values, and the resolved
    /// config (`config.resolved.toml`) holds them explicitly.
    pub fn apply_profile(&mut self, given: impl Fn(&str) -> bool) {
        if self.profile != TransportProfile::Ns3 || self.kind == TransportKind::Udp {
            return;
        }
        macro_rules! ns3 {
            ($($key:ident = $value:expr),* $(,)?) => {
                $(if !given(stringify!($key)) { self.$key = $value; })*
            };
        }
        // docs/results/crosscheck.md, "What moves the numbers": what ns-3
        // 3.44 does, option by option, and the finding that measured it.
        ns3! {
            tsq_kb = 0.0,
            handshake = true,
            limited_transmit = true,
            rto_granularity_us = 1000.0,
            rtt_every_ack = true,
            ts_clock_us = 1000.0,
            cwr_freeze = true,
            cwr_ends_at_timeout = true,
            full_segment_window = true,
            ce_new_seq_only = true,
            rto_reset_on_ack = true,
            unvalidated_cwnd = true,
        }
        if self.kind == TransportKind::Dctcp {
            // `TcpDctcp` and the `TcpLinuxReno` growth it inherits
            // (findings 16, 20, 23 and 29: measured together in finding 31).
            ns3! {
                dctcp_dupack_bytes = true,
                dctcp_no_floor = true,
                dctcp_loss_uses_alpha = true,
                dctcp_window_end_next_tx = true,
                slow_start_all_acked = true,
                ca_segment_count = true,
            }
        }
        // ns-3's TcpNewReno growth, unless a key given asks for its
        // TcpLinuxReno growth (the two cannot be combined).
        if self.kind == TransportKind::Newreno
            && !self.ca_segment_count
            && !self.slow_start_all_acked
        {
            ns3! { newreno_ack_adder = true }
        }
        // ns-3's CA_CWR and loss bookkeeping without SACK; its SACK path
        // recovers from CA_CWR (docs/model.md, "Hosts").
        if !self.sack {
            ns3! { cwr_ignores_dupacks = true, reno_scoreboard = true }
            if self.cwr_ignores_dupacks {
                ns3! { ece_ends_recovery = true }
            }
        }
    }

    /// The TCP endpoints' configuration these parameters give.
    pub fn tcp_config(&self) -> TcpConfig {
        TcpConfig {
            mss: self.mss,
            init_cwnd_segments: self.init_cwnd,
            min_rto: SimTime::from_us_f64(self.min_rto_us),
            max_rto: SimTime::from_us_f64(self.max_rto_us),
            initial_rto: SimTime::from_us_f64(self.initial_rto_us),
            delayed_ack: self.delayed_ack,
            delayed_ack_timeout: SimTime::from_us_f64(self.delayed_ack_us),
            rwnd_bytes: (self.rwnd_kb * 1000.0) as u32,
            dupack_threshold: 3,
            cc: match self.kind {
                TransportKind::Dctcp => CcKind::Dctcp {
                    g_shift: self.dctcp_g_shift,
                },
                TransportKind::Cubic => CcKind::Cubic {
                    c: self.cubic_c,
                    beta: self.cubic_beta,
                },
                _ => CcKind::NewReno,
            },
            handshake: self.handshake, // docs/model.md "Hosts"
            limited_transmit: self.limited_transmit,
            ecn: self.ecn,
            sack: self.sack,
            rto_granularity: SimTime::from_us_f64(self.rto_granularity_us),
            cwr_ignores_dupacks: self.cwr_ignores_dupacks,
            cwr_freeze: self.cwr_freeze,
            cwr_ends_at_timeout: self.cwr_ends_at_timeout,
            unvalidated_cwnd: self.unvalidated_cwnd,
            slow_start_all_acked: self.slow_start_all_acked,
            rtt_every_ack: self.rtt_every_ack,
            ece_ends_recovery: self.ece_ends_recovery,
            dctcp_dupack_bytes: self.dctcp_dupack_bytes,
            dctcp_loss_uses_alpha: self.dctcp_loss_uses_alpha,
            dctcp_no_floor: self.dctcp_no_floor,
            dctcp_window_end_next_tx: self.dctcp_window_end_next_tx,
            ca_segment_count: self.ca_segment_count,
            newreno_ack_adder: self.newreno_ack_adder,
            ce_new_seq_only: self.ce_new_seq_only,
            full_segment_window: self.full_segment_window,
            rto_reset_on_ack: self.rto_reset_on_ack,
            reno_scoreboard: self.reno_scoreboard,
            ts_clock: SimTime::from_us_f64(self.ts_clock_us),
            app_rate_bps: (self.app_rate_gbps > 0.0)
                .then(|| (self.app_rate_gbps * 1e9).round() as u64),
            app_burst_bytes: (self.app_burst_kb * 1000.0).round() as u64,
        }
    }

    /// The rate-based hosts' reaction and notification point parameters.
    pub fn rate_params(&self) -> RateParams {
        RateParams {
            qcn: self.qcn.clone(),
            dcqcn: self.dcqcn.clone(),
            dcqcn_np: self.dcqcn_np.clone(),
            go_back_n: self.go_back_n.then(|| crate::rate::gbn::GbnParams {
                timeout: SimTime::from_us_f64(self.gbn_timeout_us),
                ack_every: self.gbn_ack_every.max(1),
            }),
        }
    }

    /// The rules between keys (single-key ranges are in the schema).
    /// `packet` is the wire size of a full segment (MSS plus headers).
    /// The error is one line naming the key and what is allowed.
    pub fn check(&self, packet: u64) -> Result<(), String> {
        self.qcn
            .validate()
            .map_err(|e| format!("transport.qcn.{e}"))?;
        self.dcqcn
            .validate()
            .map_err(|e| format!("transport.dcqcn.{e}"))?;
        if self.kind != TransportKind::Udp {
            if self.max_rto_us < self.min_rto_us {
                return Err(format!(
                    "transport.max_rto_us: must be at least transport.min_rto_us ({}), got {}",
                    self.min_rto_us, self.max_rto_us
                ));
            }
            if ((self.rwnd_kb * 1000.0) as u64) < self.mss as u64 {
                return Err(format!(
                    "transport.rwnd_kb: must hold one segment (transport.mss = {} bytes, so at least {}), got {}",
                    self.mss,
                    self.mss as f64 / 1000.0,
                    self.rwnd_kb
                ));
            }
            if self.newreno_ack_adder && (self.ca_segment_count || self.slow_start_all_acked) {
                let other = if self.ca_segment_count {
                    "ca_segment_count"
                } else {
                    "slow_start_all_acked"
                };
                return Err(format!(
                    "transport.newreno_ack_adder: is ns-3's TcpNewReno growth and cannot be combined with transport.{other} (ns-3's TcpLinuxReno growth); set one of them"
                ));
            }
            if self.tsq_kb > 0.0 && (self.tsq_kb * 1000.0).round() < packet as f64 {
                return Err(format!(
                    "transport.tsq_kb: must be 0 (off) or hold one full packet (transport.mss + headers = {packet} bytes, so at least {}), got {}",
                    packet as f64 / 1000.0,
                    self.tsq_kb
                ));
            }
        }
        Ok(())
    }
}
