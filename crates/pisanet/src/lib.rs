//! pisanet facade: config (TOML, serde) -> build -> run -> results.
//!
//! Owns: the config schema and its validation, assembling a network from
//! the model crates, the event loop that drives it, metrics, the invariant
//! checks every run ends with, and the results (summary + per-flow columns).

mod api;
pub mod capture;
pub mod config;
mod dbb_plan;
pub mod forward;
pub mod memory;
pub mod pfc;
mod qos_deadlines;
pub mod run;
pub mod sim;

pub use api::*;
pub use dbb_plan::dbb_plan;

use std::path::Path;

/// Runs the config in `text` (TOML). `base_dir` resolves relative paths in the
/// config (CDF files, flow lists, topology files); `overrides` are
/// `key.path=value` strings applied before validation (`--set`).
/// `progress` is called now and then; returning false stops the run with
/// `ErrorKind::Interrupted`.
pub fn run_toml(
    text: &str,
    base_dir: Option<&Path>,
    overrides: &[String],
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<RunOutput, Error> {
    let cfg = config::Config::parse(text, overrides)?;
    run::run_config(&cfg, base_dir, progress, None)
}

/// Like [`run_toml`], but the flow table's rows go to `sink` in batches of
/// at most [`sim::records::BATCH_ROWS`] rows as flows end (finished flows in
/// the order they ended, then those still running at the end, by id), so a
/// run's memory follows the flows still running. The output's `flows` is
/// empty. An error of the sink stops the run and is returned.
pub fn run_toml_streaming(
    text: &str,
    base_dir: Option<&Path>,
    overrides: &[String],
    progress: &mut dyn FnMut(Progress) -> bool,
    sink: sim::FlowSink,
) -> Result<RunOutput, Error> {
    let cfg = config::Config::parse(text, overrides)?;
    run::run_config(&cfg, base_dir, progress, Some(sink))
}

/// Validates the config and returns it resolved, every default filled in, as TOML.
pub fn resolve_toml(
    text: &str,
    base_dir: Option<&Path>,
    overrides: &[String],
) -> Result<String, Error> {
    let cfg = config::Config::parse(text, overrides)?;
    // Building the topology and the workload checks files and cross-field rules too.
    run::check_inputs(&cfg, base_dir)?;
    Ok(cfg.to_toml())
}

/// The config resolved, every default filled in, as TOML, with its keys,
/// types and ranges validated but without building the network and the
/// workload (files and cross-field rules): for a caller that runs the
/// config next, where the run checks those, so the topology is built once.
pub fn resolve_toml_keys(text: &str, overrides: &[String]) -> Result<String, Error> {
    Ok(config::Config::parse(text, overrides)?.to_toml())
}

/// The keys of the config (with `overrides`) that it does not read, each
/// with when it applies, as `run.unused_keys = "refuse"` would name them.
/// Sweeps use this: a key is refused only when no point reads it.
pub fn unused_keys(text: &str, overrides: &[String]) -> Result<Vec<String>, Error> {
    let mut o = overrides.to_vec();
    o.push("run.unused_keys=ignore".into());
    Ok(config::Config::parse(text, &o)?.unused)
}

/// The JSON Schema of the config: every key with its default, unit
/// (`x-unit`), range and when it applies (`x-applies-when`).
pub fn config_schema_json() -> String {
    serde_json::to_string_pretty(&config::schema_value()).unwrap_or_default()
}

/// The standard benchmark scenarios, by name ("fat_tree_k8", "fat_tree_k16").
pub fn bench_config_toml(name: &str) -> Option<&'static str> {
    match name {
        "fat_tree_k8" => Some(include_str!("../../../experiments/bench/fat_tree_k8.toml")),
        "fat_tree_k16" => Some(include_str!("../../../experiments/bench/fat_tree_k16.toml")),
        _ => None,
    }
}

/// The resource report of a scheme's switch programs, as text.
pub fn resources_report(scheme: &str) -> Result<String, Error> {
    pisanet_schemes::resources(scheme)
        .map(|r| r.to_string())
        .map_err(|e| Error::input(format!("scheme: {e}")))
}
