//! Flows as the rest of the simulator sees them, and flow-list files.
//!
//! Owns: [`FlowSpec`], the short/large classification and the CSV flow-list
//! format `start_us,src,dst,bytes`.

use pisanet_engine::SimTime;
use pisanet_net::packet::{FlowId, HostId, TC_LARGE, TC_SHORT};

/// One flow to start: `bytes` from `src` to `dst` at `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub id: FlowId,
    pub src: HostId,
    pub dst: HostId,
    /// Payload bytes the flow carries (at least 1).
    pub bytes: u64,
    pub start: SimTime,
    /// Traffic class, [`TC_SHORT`] or [`TC_LARGE`] (see [`classify`]).
    pub class: u8,
    /// Persistent connection the flow runs on (client-server): flows with
    /// the same id reuse one 5-tuple. `None`: a fresh connection per flow.
    pub conn: Option<u32>,
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

/// Parses a flow list: CSV rows `start_us,src,dst,bytes`, optionally after a
/// header line naming exactly those columns; `#` starts a comment, blank
/// lines are ignored.
///
/// Rows are checked one by one (start a finite number >= 0, src and dst whole
/// numbers and different, bytes >= 1), then sorted stably by start time, and
/// ids 0, 1, 2, ... are given in that order. Host ids cannot be range-checked
/// here (see [`parse_flow_file_for_hosts`]); the generator checks them again.
/// `class` is [`TC_SHORT`] until the generator classifies each flow with the
/// workload's threshold.
pub fn parse_flow_file(text: &str, origin: &str) -> Result<Vec<FlowSpec>, String> {
    parse_rows(text, origin, None)
}

/// [`parse_flow_file`], also checking that every host id is in `0..n_hosts`,
/// so range errors name their line: `flow file line 3: src 99 out of range 0..16`.
pub fn parse_flow_file_for_hosts(
    text: &str,
    origin: &str,
    n_hosts: u32,
) -> Result<Vec<FlowSpec>, String> {
    parse_rows(text, origin, Some(n_hosts))
}

fn parse_rows(text: &str, origin: &str, n_hosts: Option<u32>) -> Result<Vec<FlowSpec>, String> {
    // A UTF-8 byte-order mark, as spreadsheet programs write one, is not data.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut flows = Vec::new();
    let mut seen_content = false;
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
            if names != HEADER {
                return Err(at(format!(
                    "header must be 'start_us,src,dst,bytes', got '{line}'"
                )));
            }
            continue;
        }
        if fields.len() != 4 {
            return Err(at(format!(
                "expected 4 fields 'start_us,src,dst,bytes', got {} in '{line}'",
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
            match n_hosts {
                Some(n) if h >= n => Err(format!("{name} {h} out of range 0..{n}")),
                _ => Ok(h),
            }
        };
        let src = host("src", fields[1]).map_err(at)?;
        let dst = host("dst", fields[2]).map_err(at)?;
        if src == dst {
            return Err(at(format!("src and dst must differ, both are {src}")));
        }
        let bytes = match fields[3].parse::<u64>() {
            Ok(b) if b >= 1 => b,
            _ => {
                return Err(at(format!(
                    "bytes must be a whole number >= 1, got '{}'",
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
            ("src,dst,start_us,bytes\n1,0,1,5", "flow file line 1: header must be 'start_us,src,dst,bytes', got 'src,dst,start_us,bytes'"),
            ("0,0,1\n", "flow file line 1: expected 4 fields 'start_us,src,dst,bytes', got 3 in '0,0,1'"),
            ("0,0,1,5\n-1,0,1,5", "flow file line 2: start_us must be a finite number >= 0, got '-1'"),
            ("0,0,1,5\nNaN,0,1,5", "flow file line 2: start_us must be a finite number >= 0, got 'NaN'"),
            ("0,x,1,5", "flow file line 1: src must be a host id (a whole number >= 0), got 'x'"),
            ("0,1,-2,5", "flow file line 1: dst must be a host id (a whole number >= 0), got '-2'"),
            ("0,4,4,5", "flow file line 1: src and dst must differ, both are 4"),
            ("0,1,2,0", "flow file line 1: bytes must be a whole number >= 1, got '0'"),
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

    #[test]
    fn classify_uses_strictly_greater() {
        assert_eq!(classify(100, 100), TC_SHORT);
        assert_eq!(classify(101, 100), TC_LARGE);
    }
}
