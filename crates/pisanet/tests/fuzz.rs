//! Fuzzing of every parser a user feeds (issue: trust, "Hostile inputs"):
//! the TOML config, its `--set` overrides, flow-list CSVs, CDF files and
//! custom topology files. Each input is a valid sample mutated by random
//! edits (characters flipped, tokens such as `1e300`, `nan`, `2^64`, a BOM or
//! a NUL inserted, spans deleted or repeated) or random text. No input may
//! panic, hang or allocate without bound: it resolves, or it is refused as an
//! input error in one line (exit 2 in the CLI).
//!
//! The suite runs a short pass (`PISANET_FUZZ_CASES`, default 256 per parser).
//! A long one, a million inputs per parser (hours on one core):
//!
//! ```sh
//! PISANET_FUZZ_CASES=1000000 cargo test --release -p pisanet --test fuzz
//! ```
//!
//! proptest shrinks a failing input to a small one and prints it; add it to
//! `regressions()` below with the fix.

use pisanet::{resolve_toml, ErrorKind};
use proptest::prelude::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn cases() -> u32 {
    std::env::var("PISANET_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        // NOTE: a failing input is printed and shrunk; no regression files
        // are written next to the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const BASE: &str = r#"
[run]
max_sim_time_ms = 10
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
[workload]
flows = 5
load = 0.3
"#;

const FLOWS_CSV: &str = "start_us,src,dst,bytes\n0,0,1,1000\n5,2,3,20000\n7.5,1,0,1460\n";

const CDF: &str = "# size probability\n0 0.0\n10000 0.15\n20000 0.2\n1000000 0.9\n30000000 1.0\n";

const TOPOLOGY: &str = r#"
[[nodes]]
name = "h0"
kind = "host"
[[nodes]]
name = "h1"
kind = "host"
[[nodes]]
name = "s0"
kind = "switch"
[[nodes]]
name = "s1"
kind = "switch"
tier = 1
[[links]]
a = "h0"
b = "s0"
gbps = 10
[[links]]
a = "h1"
b = "s0"
gbps = 10
delay_us = 2
[[links]]
a = "s0"
b = "s1"
gbps = 40
"#;

/// Tokens that have broken parsers before: extreme numbers, odd characters.
const TOKENS: &[&str] = &[
    "0",
    "-1",
    "1e300",
    "-1e300",
    "5e-324",
    "nan",
    "inf",
    "-inf",
    "18446744073709551616",
    "4294967296",
    "999999999999",
    "1e10",
    "0x10",
    "\u{feff}",
    "\0",
    "\r\n",
    "\n",
    ",",
    ";",
    "=",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    "[[",
    "#",
    " ",
    "\t",
    ".",
    "é",
    "\u{1F600}",
    "h0",
    "s0",
    "leaf0",
    "kind",
    "host",
    "switch",
];

/// One edit of a text: (kind, position, token or length).
#[derive(Clone, Debug)]
enum Edit {
    Insert(usize, usize),
    Replace(usize, usize),
    Delete(usize, usize),
    Repeat(usize, usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(p, t)| Edit::Insert(p, t)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(p, t)| Edit::Replace(p, t)),
        (any::<usize>(), 1usize..40).prop_map(|(p, n)| Edit::Delete(p, n)),
        (any::<usize>(), 1usize..60, 2usize..5).prop_map(|(p, n, k)| Edit::Repeat(p, n, k)),
    ]
}

fn boundary(text: &str, pos: usize) -> usize {
    let mut p = pos % (text.len() + 1);
    while !text.is_char_boundary(p) {
        p -= 1;
    }
    p
}

fn apply(seed: &str, edits: &[Edit]) -> String {
    let mut text = seed.to_string();
    for e in edits {
        match *e {
            Edit::Insert(p, t) => {
                let p = boundary(&text, p);
                text.insert_str(p, TOKENS[t]);
            }
            Edit::Replace(p, t) => {
                let p = boundary(&text, p);
                let end = text[p..].chars().next().map_or(p, |c| p + c.len_utf8());
                text.replace_range(p..end, TOKENS[t]);
            }
            Edit::Delete(p, n) => {
                let p = boundary(&text, p);
                let end = boundary(&text, p + n).max(p);
                text.replace_range(p..end, "");
            }
            Edit::Repeat(p, n, k) => {
                let p = boundary(&text, p);
                let end = boundary(&text, p + n).max(p);
                let span = text[p..end].repeat(k);
                text.insert_str(end, &span);
            }
        }
    }
    text
}

/// A mutated `seed` (mostly), or random text.
fn input(seed: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![
        8 => proptest::collection::vec(edit(), 1..6).prop_map(move |e| apply(seed, &e)),
        1 => "\\PC{0,200}",
        1 => proptest::collection::vec(0..TOKENS.len(), 0..40)
            .prop_map(|t| t.iter().map(|&i| TOKENS[i]).collect::<String>()),
    ]
}

/// The outcome of one input: resolved, or refused in one line as an input
/// error, within a few seconds.
fn check(what: &str, text: &str, dir: Option<&std::path::Path>, sets: &[String]) {
    std::env::set_var("PISANET_MEMORY_LIMIT_MB", "1000");
    let started = Instant::now();
    let out = resolve_toml(text, dir, sets);
    let took = started.elapsed();
    if let Err(e) = &out {
        assert_eq!(e.kind, ErrorKind::Input, "{what} {text:?} {sets:?}: {e}");
        assert!(
            !e.message.contains('\n') && !e.message.is_empty(),
            "{what} {text:?} {sets:?}: not one line: {e}"
        );
    }
    assert!(
        took < Duration::from_secs(10),
        "{what} {text:?} {sets:?}: took {took:?}"
    );
}

/// A directory of its own for each test thread's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "pisanet-fuzz-{}-{name}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A config that reads `file` (in `dir`) through `key`.
fn with_file(dir: &std::path::Path, name: &str, content: &str, sets: &[&str]) {
    std::fs::write(dir.join(name), content).unwrap();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    check(name, BASE, Some(dir), &sets);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn config_text(text in input(BASE)) {
        check("config", &text, None, &[]);
    }

    #[test]
    fn set_overrides(
        sets in proptest::collection::vec(
            prop_oneof![
                input("topology.leaves=4"),
                input("workload.load=0.5"),
                input("scheme.kind=\"hula\""),
                input("events=[{at_ms=1, kind=\"link_down\", link=\"leaf0-spine0\"}]"),
                input("metrics.queue_sample_ports=[\"leaf0->spine0\"]"),
            ],
            1..4,
        )
    ) {
        check("--set", BASE, None, &sets);
    }

    #[test]
    fn flow_list_csv(text in input(FLOWS_CSV)) {
        let dir = scratch("csv");
        with_file(&dir, "flows.csv", &text, &[
            "run.unused_keys=ignore", "workload.pattern=\"file\"", "workload.file=\"flows.csv\"",
        ]);
    }

    #[test]
    fn cdf_file(text in input(CDF)) {
        let dir = scratch("cdf");
        with_file(&dir, "sizes.cdf", &text, &["workload.cdf=\"sizes.cdf\""]);
        // The parser alone, too: its error names the origin.
        if let Err(e) = pisanet_workload::Cdf::parse(&text, "sizes.cdf") {
            prop_assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn custom_topology(text in input(TOPOLOGY)) {
        let dir = scratch("topo");
        with_file(&dir, "topo.toml", &text, &[
            "run.unused_keys=ignore", "topology.kind=\"custom\"", "topology.file=\"topo.toml\"",
        ]);
    }
}

/// Inputs the fuzzer (or a user) found, kept as regressions.
#[test]
fn regressions() {
    let dir = scratch("regress");
    // A flow list saved by a spreadsheet: BOM and CRLF line ends.
    with_file(
        &dir,
        "bom.csv",
        "\u{feff}start_us,src,dst,bytes\r\n0,0,1,1000\r\n",
        &[
            "run.unused_keys=ignore",
            "workload.pattern=\"file\"",
            "workload.file=\"bom.csv\"",
        ],
    );
    // Extreme values in a CDF: refused in one line, or accepted.
    for text in [
        "0 0\n",
        "\0",
        "nan nan\n1 1\n",
        "1e300 1\n",
        "18446744073709551616 1\n",
    ] {
        if let Err(e) = pisanet_workload::Cdf::parse(text, "x.cdf") {
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
