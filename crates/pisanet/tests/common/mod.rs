//! Helpers shared by the end-to-end tests: scratch directories, the small
//! 2 x 2 leaf-spine most of them run on, and runs of a flow list.
#![allow(dead_code)] // each test file uses part of this

use pisanet::{run_toml, RunOutput};
use std::path::PathBuf;

/// A fresh scratch directory for test `name` of the file `file`.
pub fn tmpdir(file: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pisanet-{file}-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A 2 x 2 leaf-spine (hosts 0, 1 under leaf0; 2, 3 under leaf1), 10 Gb/s,
/// 1 us links, switch ports of `$buffer_kb` KB with ECN threshold `$ecn_kb`
/// KB: a `&'static str`, usable in a `const`.
#[macro_export]
macro_rules! small_leaf_spine {
    ($buffer_kb:literal, $ecn_kb:literal) => {
        concat!(
            "\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n",
            "host_link_gbps = 10.0\nfabric_link_gbps = 10.0\nlink_delay_us = 1.0\n",
            "buffer_kb = ",
            $buffer_kb,
            "\necn_threshold_kb = ",
            $ecn_kb,
            "\n"
        )
    };
}

/// Runs `cfg` with the flow list `flows` (CSV, "start_us,src,dst,bytes" and
/// optional columns), written to a scratch directory of `file`/`name`, and
/// the `--set` overrides `sets`.
pub fn try_flows(
    file: &str,
    name: &str,
    cfg: &str,
    flows: &str,
    sets: &[&str],
) -> Result<RunOutput, pisanet::Error> {
    let d = tmpdir(file, name);
    std::fs::write(d.join("flows.csv"), flows).unwrap();
    let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let text = format!("{cfg}\n[workload]\npattern = \"file\"\nfile = \"flows.csv\"\n");
    run_toml(&text, Some(&d), &o, &mut |_| true)
}

/// `try_flows`, which must succeed.
pub fn run_flows(file: &str, name: &str, cfg: &str, flows: &str, sets: &[&str]) -> RunOutput {
    try_flows(file, name, cfg, flows, sets).unwrap_or_else(|e| panic!("run failed: {e}"))
}
