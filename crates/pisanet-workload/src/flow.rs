//! Flows as the rest of the simulator sees them, and flow-list files.
//!
//! Owns: [`FlowSpec`] with its per-flow attributes ([`FlowAttrs`]), the
//! short/large classification and the CSV flow-list format
//! `start_us,src,dst,bytes[,named columns]` ([`FlowListRules`] says which
//! values the named columns may take).

use pisanet_engine::SimTime;
use pisanet_net::packet::{FlowId, HostId, TC_LARGE, TC_SHORT};

/// One flow to start: `bytes` from `src` to `dst` at `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub id: FlowId,
    pub src: HostId,
    pub dst: HostId,
    /// Payload bytes the flow carries (at least 1); `u64::MAX` for a flow
    /// that only its duration ends (`attrs.duration`, bytes left empty).
    pub bytes: u64,
    pub start: SimTime,
    /// Traffic class, [`TC_SHORT`] or [`TC_LARGE`] (see [`classify`]).
    pub class: u8,
    /// Persistent connection the flow runs on (client-server): flows with
    /// the same id reuse one 5-tuple. `None`: a fresh connection per flow.
    pub conn: Option<u32>,
    /// The flow group it belongs to (0: the `[workload]` table itself).
    pub group: u16,
    /// Per-flow transport attributes; unset ones take the group's, then the
    /// config's values.
    pub attrs: FlowAttrs,
}

/// A flow's transport protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    Udp,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
        }
    }
}

/// Per-flow transport attributes; `None` takes the group's, then the
/// config's value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowAttrs {
    pub transport: Option<Transport>,
    /// Congestion control or reaction point: an index into
    /// [`FlowListRules::cc_names`] (the workload does not know the names).
    pub cc: Option<u8>,
    /// UDP: the sending rate (a rate-based flow's initial rate); TCP: the
    /// application's rate cap (iperf3 `-b`).
    pub rate_bps: Option<u64>,
    /// Send for this long after the start instead of (or besides) `bytes`
    /// (iperf3 `-t`).
    pub duration: Option<SimTime>,
    /// Payload bytes per packet (TCP MSS, UDP datagram payload).
    pub mss: Option<u32>,
    /// Strict-priority queue index of the flow's packets (0 = highest).
    pub priority: Option<u8>,
    /// One-way delay budget of each data packet (P4QoS-style latency deadline).
    pub deadline: Option<SimTime>,
}

impl FlowAttrs {
    /// Each unset attribute taken from `defaults`.
    pub fn or(self, defaults: FlowAttrs) -> FlowAttrs {
        FlowAttrs {
            transport: self.transport.or(defaults.transport),
            cc: self.cc.or(defaults.cc),
            rate_bps: self.rate_bps.or(defaults.rate_bps),
            duration: self.duration.or(defaults.duration),
            mss: self.mss.or(defaults.mss),
            priority: self.priority.or(defaults.priority),
            deadline: self.deadline.or(defaults.deadline),
        }
    }
}

/// What the named columns of a flow list may hold (the config decides).
#[derive(Clone, Copy, Debug)]
pub struct FlowListRules<'a> {
    /// Host ids must be in `0..n_hosts` (`None`: not checked here).
    pub n_hosts: Option<u32>,
    /// The names `cc` may take, each with the transport it belongs to.
    pub cc_names: &'a [(&'a str, Transport)],
    /// `priority` must be below this (the ports' priority queues).
    pub priorities: u8,
    /// The key that sets `priorities`, for messages.
    pub priorities_key: &'a str,
    /// `None` accepts `deadline_us`; `Some(why)` refuses it with `why`.
    pub deadline_refused: Option<&'a str>,
    /// The transport of a row that names neither `transport` nor `cc`.
    pub default_transport: Transport,
    /// `bytes` may be empty in a row without `duration_us` (a duration
    /// comes from elsewhere, e.g. the flow group).
    pub default_duration: bool,
    /// `Some(why)` refuses `rate_gbps` and `duration_us` on TCP rows.
    pub tcp_limits_refused: Option<&'a str>,
    /// `Some(why)` refuses UDP rows (a run in parallel mode, which does
    /// not support them).
    pub udp_refused: Option<&'a str>,
}

impl Default for FlowListRules<'_> {
    fn default() -> Self {
        FlowListRules {
            n_hosts: None,
            cc_names: &[],
            priorities: 8,
            priorities_key: "priorities",
            deadline_refused: None,
            default_transport: Transport::Tcp,
            default_duration: false,
            tcp_limits_refused: None,
            udp_refused: None,
        }
    }
}

/// The traffic class of a flow of `bytes`: [`TC_LARGE`] if it is larger than
/// `short_threshold_bytes`, else [`TC_SHORT`] (P4TE section 4.1.3, where the
/// threshold is the CDF's 90th percentile).
pub fn classify(bytes: u64, short_threshold_bytes: u64) -> u8 {
    if bytes > short_threshold_bytes {
        TC_LARGE
    } else {
        TC_SHORT
    }
}

const HEADER: [&str; 4] = ["start_us", "src", "dst", "bytes"];

/// The optional named columns, in the order the docs list them.
pub const FLOW_COLUMNS: [&str; 7] = [
    "transport",
    "cc",
    "rate_gbps",
    "duration_us",
    "mss",
    "priority",
    "deadline_us",
];

/// Parses a flow list: CSV rows `start_us,src,dst,bytes`, optionally after a
/// header line naming those columns; `#` starts a comment, blank lines are
/// ignored. A header may name more columns after `bytes`, each at most once
/// and in any order ([`FLOW_COLUMNS`]); an empty cell takes the config's
/// value. See [`parse_flow_list`].
pub fn parse_flow_file(text: &str, origin: &str) -> Result<Vec<FlowSpec>, String> {
    parse_flow_list(text, origin, &FlowListRules::default())
}

/// [`parse_flow_file`], also checking that every host id is in `0..n_hosts`,
/// so range errors name their line: `flow file line 3: src 99 out of range 0..16`.
pub fn parse_flow_file_for_hosts(
    text: &str,
    origin: &str,
    n_hosts: u32,
) -> Result<Vec<FlowSpec>, String> {
    let rules = FlowListRules {
        n_hosts: Some(n_hosts),
        ..FlowListRules::default()
    };
    parse_flow_list(text, origin, &rules)
}

/// Parses a flow list under `rules`.
///
/// Rows are checked one by one (start a finite number >= 0, src and dst whole
/// numbers and different, bytes >= 1 or empty when the row has a
/// `duration_us`; named cells as [`FLOW_COLUMNS`] documents), then sorted
/// stably by start time, and ids 0, 1, 2, ... are given in that order. An
/// empty `transport` with a `cc` takes the transport that `cc` belongs to.
/// `class` is [`TC_SHORT`] until the generator classifies each flow with the
/// workload's threshold. Every error is one line naming the row and field.
pub fn parse_flow_list(
    text: &str,
    origin: &str,
    rules: &FlowListRules,
) -> Result<Vec<FlowSpec>, String> {
    // A UTF-8 byte-order mark, as spreadsheet programs write one, is not data.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut flows = Vec::new();
    let mut seen_content = false;
    // Column index of each named column, from the header.
    let mut named: Vec<usize> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |msg: String| format!("{origin} line {line_no}: {msg}");
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let first_content = !seen_content;
        seen_content = true;
        if first_content && fields[0].parse::<f64>().is_err() {
            let names: Vec<String> = fields.iter().map(|f| f.to_ascii_lowercase()).collect();
            if names.len() < 4 || names[..4] != HEADER {
                return Err(at(format!(
                    "header must start 'start_us,src,dst,bytes', got '{line}'"
                )));
            }
            for name in &names[4..] {
                let Some(k) = FLOW_COLUMNS.iter().position(|c| c == name) else {
                    return Err(at(format!(
                        "unknown column '{name}'; after start_us,src,dst,bytes a header may name {}",
                        FLOW_COLUMNS.join(", ")
                    )));
                };
                if named.contains(&k) {
                    return Err(at(format!("column '{name}' is named twice")));
                }
                named.push(k);
            }
            continue;
        }
        let want = 4 + named.len();
        if fields.len() != want {
            let what = if named.is_empty() {
                "4 fields 'start_us,src,dst,bytes'".to_string()
            } else {
                format!("{want} fields, as the header names")
            };
            return Err(at(format!(
                "expected {what}, got {} in '{line}'",
                fields.len()
            )));
        }
        let start_us = match fields[0].parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => v,
            _ => {
                return Err(at(format!(
                    "start_us must be a finite number >= 0, got '{}'",
                    fields[0]
                )))
            }
        };
        let host = |name: &str, field: &str| -> Result<HostId, String> {
            let h = field.parse::<HostId>().map_err(|_| {
                format!("{name} must be a host id (a whole number >= 0), got '{field}'")
            })?;
            match rules.n_hosts {
                Some(n) if h >= n => Err(format!("{name} {h} out of range 0..{n}")),
                _ => Ok(h),
            }
        };
        let src = host("src", fields[1]).map_err(at)?;
        let dst = host("dst", fields[2]).map_err(at)?;
        if src == dst {
            return Err(at(format!("src and dst must differ, both are {src}")));
        }
        let mut attrs = FlowAttrs::default();
        for (j, &k) in named.iter().enumerate() {
            let cell = fields[4 + j];
            if !cell.is_empty() {
                parse_cell(&mut attrs, FLOW_COLUMNS[k], cell, rules).map_err(at)?;
            }
        }
        if let Some(cc) = attrs.cc {
            let (name, kind) = rules.cc_names[cc as usize];
            match attrs.transport {
                None => attrs.transport = Some(kind),
                Some(t) if t != kind => {
                    return Err(at(format!(
                        "cc: '{name}' is for transport {}, but this row has transport {}",
                        kind.name(),
                        t.name()
                    )))
                }
                Some(_) => {}
            }
        }
        if let Some(why) = rules.udp_refused {
            if attrs.transport.unwrap_or(rules.default_transport) == Transport::Udp {
                return Err(at(format!("a UDP flow: {why}")));
            }
        }
        if let Some(why) = rules.tcp_limits_refused {
            if attrs.transport.unwrap_or(rules.default_transport) == Transport::Tcp {
                for (set, field) in [
                    (attrs.rate_bps.is_some(), "rate_gbps"),
                    (attrs.duration.is_some(), "duration_us"),
                ] {
                    if set {
                        return Err(at(format!("{field}: {why}")));
                    }
                }
            }
        }
        let bytes = match fields[3].parse::<u64>() {
            Ok(b) if b >= 1 => b,
            _ if fields[3].is_empty() && (attrs.duration.is_some() || rules.default_duration) => {
                u64::MAX
            }
            _ => {
                return Err(at(format!(
                    "bytes must be a whole number >= 1 (or empty with a duration_us), got '{}'",
                    fields[3]
                )))
            }
        };
        if flows.len() > FlowId::MAX as usize {
            return Err(at(format!(
                "too many flows; at most {} fit 32-bit flow ids",
                FlowId::MAX as u64 + 1
            )));
        }
        flows.push(FlowSpec {
            id: 0,
            src,
            dst,
            bytes,
            start: SimTime::from_us_f64(start_us),
            class: TC_SHORT,
            conn: None,
            group: 0,
            attrs,
        });
    }
    if flows.is_empty() {
        return Err(format!(
            "{origin}: no flows; expected rows 'start_us,src,dst,bytes'"
        ));
    }
    flows.sort_by_key(|f| f.start); // stable: equal starts keep file order
    for (id, f) in flows.iter_mut().enumerate() {
        f.id = id as FlowId;
    }
    Ok(flows)
}

/// A positive finite number of microseconds or Gb/s.
fn positive(field: &str, cell: &str) -> Result<f64, String> {
    match cell.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{field} must be a number > 0, got '{cell}'")),
    }
}

/// Sets the attribute of column `field` from a non-empty `cell`.
fn parse_cell(
    attrs: &mut FlowAttrs,
    field: &str,
    cell: &str,
    rules: &FlowListRules,
) -> Result<(), String> {
    match field {
        "transport" => {
            attrs.transport = Some(match cell.to_ascii_lowercase().as_str() {
                "tcp" => Transport::Tcp,
                "udp" => Transport::Udp,
                _ => return Err(format!("transport must be tcp or udp, got '{cell}'")),
            })
        }
        "cc" => {
            let lower = cell.to_ascii_lowercase();
            let Some(k) = rules.cc_names.iter().position(|(n, _)| *n == lower) else {
                let names: Vec<&str> = rules.cc_names.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "cc must be one of {}, got '{cell}'",
                    if names.is_empty() {
                        "(none here)".to_string()
                    } else {
                        names.join(", ")
                    }
                ));
            };
            attrs.cc = Some(k as u8);
        }
        "rate_gbps" => {
            let v = positive(field, cell)?;
            if v > 100_000.0 {
                return Err(format!("rate_gbps must be at most 100000, got '{cell}'"));
            }
            attrs.rate_bps = Some((v * 1e9).round().max(1.0) as u64);
        }
        "duration_us" => {
            let v = positive(field, cell)?;
            if v > 1e10 {
                return Err(format!("duration_us must be at most 1e10, got '{cell}'"));
            }
            attrs.duration = Some(SimTime::from_us_f64(v));
        }
        "mss" => match cell.parse::<u32>() {
            Ok(m) if (64..=9000).contains(&m) => attrs.mss = Some(m),
            _ => return Err(format!("mss must be a whole number in 64..=9000, got '{cell}'")),
        },
        "priority" => match cell.parse::<u8>() {
            Ok(p) if p < rules.priorities => attrs.priority = Some(p),
            _ => {
                return Err(format!(
                    "priority must be a whole number below {} = {} (the ports' priority queues), got '{cell}'",
                    rules.priorities_key, rules.priorities
                ))
            }
        },
        "deadline_us" => {
            if let Some(why) = rules.deadline_refused {
                return Err(format!("deadline_us: {why}"));
            }
            let v = positive(field, cell)?;
            if v > 1e10 {
                return Err(format!("deadline_us must be at most 1e10, got '{cell}'"));
            }
            attrs.deadline = Some(SimTime::from_us_f64(v));
        }
        _ => return Err(format!("unknown column '{field}'")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_with_and_without_header_and_sorts_stably() {
        let text = "start_us,src,dst,bytes\n# comment\n\n10.5, 1, 2, 1000\n0,3,1,50\n10.5,2,3,7 # same time as row 1\n";
        let flows = parse_flow_file(text, "flow file").unwrap();
        let got: Vec<(FlowId, HostId, HostId, u64, u64)> = flows
            .iter()
            .map(|f| (f.id, f.src, f.dst, f.bytes, f.start.ps()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 3, 1, 50, 0),
                (1, 1, 2, 1000, 10_500_000),
                (2, 2, 3, 7, 10_500_000)
            ]
        );
        let no_header = parse_flow_file("1,0,1,5", "flow file").unwrap();
        assert_eq!(no_header.len(), 1);
        assert_eq!(no_header[0].start, SimTime::from_us(1));
    }

    #[test]
    fn each_rule_has_a_one_line_error() {
        let cases = [
            ("src,dst,start_us,bytes\n1,0,1,5", "flow file line 1: header must start 'start_us,src,dst,bytes', got 'src,dst,start_us,bytes'"),
            ("0,0,1\n", "flow file line 1: expected 4 fields 'start_us,src,dst,bytes', got 3 in '0,0,1'"),
            ("0,0,1,5\n-1,0,1,5", "flow file line 2: start_us must be a finite number >= 0, got '-1'"),
            ("0,0,1,5\nNaN,0,1,5", "flow file line 2: start_us must be a finite number >= 0, got 'NaN'"),
            ("0,x,1,5", "flow file line 1: src must be a host id (a whole number >= 0), got 'x'"),
            ("0,1,-2,5", "flow file line 1: dst must be a host id (a whole number >= 0), got '-2'"),
            ("0,4,4,5", "flow file line 1: src and dst must differ, both are 4"),
            ("0,1,2,0", "flow file line 1: bytes must be a whole number >= 1 (or empty with a duration_us), got '0'"),
            ("# nothing\n", "flow file: no flows; expected rows 'start_us,src,dst,bytes'"),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_flow_file(text, "flow file").unwrap_err(),
                want,
                "input {text:?}"
            );
        }
    }

    #[test]
    fn host_range_is_checked_with_the_line() {
        let text = "start_us,src,dst,bytes\n0,1,2,10\n1,99,2,10\n";
        assert_eq!(
            parse_flow_file_for_hosts(text, "flow file", 16).unwrap_err(),
            "flow file line 3: src 99 out of range 0..16"
        );
        assert!(parse_flow_file(text, "flow file").is_ok());
    }

    const CC: [(&str, Transport); 4] = [
        ("newreno", Transport::Tcp),
        ("dctcp", Transport::Tcp),
        ("fixed", Transport::Udp),
        ("halve", Transport::Udp),
    ];

    fn rules() -> FlowListRules<'static> {
        FlowListRules {
            n_hosts: Some(8),
            cc_names: &CC,
            priorities: 2,
            priorities_key: "topology.priorities",
            deadline_refused: None,
            ..FlowListRules::default()
        }
    }

    #[test]
    fn named_columns_set_attributes_and_empty_cells_defer() {
        let text =
            "start_us,src,dst,bytes,priority,transport,cc,rate_gbps,duration_us,mss,deadline_us\n\
            0,1,2,1000,1,tcp,dctcp,,,9000,\n\
            5,3,4,,,,halve,2.5,100,,50\n\
            7,3,4,10,,,,,,,\n";
        let flows = parse_flow_list(text, "f", &rules()).unwrap();
        let a = flows[0].attrs;
        assert_eq!(a.transport, Some(Transport::Tcp));
        assert_eq!(a.cc, Some(1));
        assert_eq!(
            (a.priority, a.mss, a.rate_bps, a.duration),
            (Some(1), Some(9000), None, None)
        );
        let b = flows[1].attrs;
        // An empty transport takes the kind of its cc.
        assert_eq!(b.transport, Some(Transport::Udp));
        assert_eq!(b.cc, Some(3));
        assert_eq!(b.rate_bps, Some(2_500_000_000));
        assert_eq!(b.duration, Some(SimTime::from_us(100)));
        assert_eq!(b.deadline, Some(SimTime::from_us(50)));
        assert_eq!(flows[1].bytes, u64::MAX);
        assert_eq!(flows[2].attrs, FlowAttrs::default());
        // Defaults fill only what a flow leaves unset.
        let d = FlowAttrs {
            mss: Some(1000),
            priority: Some(0),
            ..FlowAttrs::default()
        };
        assert_eq!(a.or(d).mss, Some(9000));
        assert_eq!(b.or(d).mss, Some(1000));
    }

    #[test]
    fn bad_named_columns_say_row_and_field() {
        let refused = FlowListRules {
            deadline_refused: Some("needs metrics.flow_stats = true"),
            ..rules()
        };
        let cases = [
            ("start_us,src,dst,bytes,colour\n0,1,2,5,red", "f line 1: unknown column 'colour'; after start_us,src,dst,bytes a header may name transport, cc, rate_gbps, duration_us, mss, priority, deadline_us"),
            ("start_us,src,dst,bytes,cc,cc\n0,1,2,5,,", "f line 1: column 'cc' is named twice"),
            ("start_us,src,dst,bytes,cc\n0,1,2,5", "f line 2: expected 5 fields, as the header names, got 4 in '0,1,2,5'"),
            ("start_us,src,dst,bytes,transport\n0,1,2,5,sctp", "f line 2: transport must be tcp or udp, got 'sctp'"),
            ("start_us,src,dst,bytes,cc\n0,1,2,5,vegas", "f line 2: cc must be one of newreno, dctcp, fixed, halve, got 'vegas'"),
            ("start_us,src,dst,bytes,transport,cc\n0,1,2,5,tcp,halve", "f line 2: cc: 'halve' is for transport udp, but this row has transport tcp"),
            ("start_us,src,dst,bytes,priority\n0,1,2,5,2", "f line 2: priority must be a whole number below topology.priorities = 2 (the ports' priority queues), got '2'"),
            ("start_us,src,dst,bytes,rate_gbps\n0,1,2,5,-1", "f line 2: rate_gbps must be a number > 0, got '-1'"),
            ("start_us,src,dst,bytes,mss\n0,1,2,5,10", "f line 2: mss must be a whole number in 64..=9000, got '10'"),
            ("start_us,src,dst,bytes,duration_us\n0,1,2,,", "f line 2: bytes must be a whole number >= 1 (or empty with a duration_us), got ''"),
            ("0,1,2,5,tcp", "f line 1: expected 4 fields 'start_us,src,dst,bytes', got 5 in '0,1,2,5,tcp'"),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_flow_list(text, "f", &rules()).unwrap_err(),
                want,
                "{text:?}"
            );
        }
        assert_eq!(
            parse_flow_list(
                "start_us,src,dst,bytes,deadline_us\n0,1,2,5,\n1,1,2,5,100",
                "f",
                &refused
            )
            .unwrap_err(),
            "f line 3: deadline_us: needs metrics.flow_stats = true"
        );
    }

    #[test]
    fn classify_uses_strictly_greater() {
        assert_eq!(classify(100, 100), TC_SHORT);
        assert_eq!(classify(101, 100), TC_LARGE);
    }
}
