//! Every numeric key of the config, at and beyond its declared range: the
//! value either runs (and conserves) or gets one line naming the key, an
//! input error (exit 2 in the CLI). Never a panic, a wrong answer from a
//! wrapped clock, or an unbounded allocation (issue: bad input).

use pisanet::{run_toml, ErrorKind};

/// Every numeric key of the schema, as a path ("topology.link_delay_us"),
/// with the `scheme.kind` that reads it (scheme sub-keys).
fn numeric_keys() -> Vec<(String, Option<String>, Vec<String>)> {
    let schema: serde_json::Value = serde_json::from_str(&pisanet::config_schema_json()).unwrap();
    let defs = schema["$defs"].clone();
    let resolve = |v: &serde_json::Value| -> serde_json::Value {
        let mut v = v.clone();
        for _ in 0..4 {
            let r = v
                .get("$ref")
                .or_else(|| v.get("allOf").and_then(|a| a.get(0)?.get("$ref")))
                .and_then(|r| r.as_str())
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .map(|s| s.to_string());
            match r {
                Some(name) => v = defs[&name].clone(),
                None => break,
            }
        }
        v
    };
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), resolve(&schema))];
    while let Some((prefix, node)) = stack.pop() {
        let Some(props) = node.get("properties").and_then(|p| p.as_object()) else {
            continue;
        };
        for (k, v) in props {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            let v = resolve(v);
            let ty = v.get("type").map(|t| t.to_string()).unwrap_or_default();
            if v.get("properties").is_some() {
                stack.push((path, v));
            } else if ty.contains("number") || ty.contains("integer") {
                // A key read only under some setting is tried under it.
                let when = v.get("x-applies-when").and_then(|w| {
                    let key = w.get("key")?.as_str()?;
                    let value = w.get("in")?.get(0)?;
                    (!key.starts_with("scheme.")).then(|| format!("{key}={value}"))
                });
                let kind = pisanet_schemes::REGISTRY
                    .iter()
                    .find(|r| {
                        path.strip_prefix("scheme.")
                            .and_then(|s| s.split('.').next())
                            .is_some_and(|s| r.reads.contains(&s))
                    })
                    .map(|r| format!("scheme.kind={}", r.name))
                    .or(when);
                // The declared bounds themselves are tried too.
                let bounds = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
                    .iter()
                    .filter_map(|b| v.get(*b).and_then(|x| x.as_f64()))
                    .map(|x| format!("{x:?}"))
                    .collect();
                out.push((path, kind, bounds));
            }
        }
    }
    out.sort();
    out
}

const BASE: &str = r#"
[run]
max_sim_time_ms = 2
unused_keys = "ignore"
[topology]
leaves = 2
spines = 2
hosts_per_leaf = 2
[workload]
flows = 5
load = 0.3
"#;

#[test]
fn every_numeric_key_at_and_beyond_its_range_runs_or_is_refused_in_one_line() {
    let keys = numeric_keys();
    assert!(keys.len() > 40, "{} keys", keys.len());
    let values = [
        "0",
        "-1",
        "5e-324",
        "1e300",
        "nan",
        "inf",
        "-inf",
        "18446744073709551616",
    ];
    let mut refused = 0;
    // Runs are held to a 1 GB budget, as the issue asks: a larger estimate
    // is refused before anything is allocated.
    std::env::set_var("PISANET_MEMORY_LIMIT_MB", "1000");
    let mut total = 0;
    for (key, kind, bounds) in &keys {
        if key == "run.max_sim_time_ms" || key == "workload.flows" || key == "run.seed" {
            continue; // set by the harness below (checked by the config tests)
        }
        for v in values
            .iter()
            .copied()
            .chain(bounds.iter().map(|b| b.as_str()))
        {
            total += 1;
            let mut sets = vec![format!("{key}={v}")];
            if let Some(setting) = kind {
                sets.push(setting.clone());
            }
            let started = std::time::Instant::now();
            match run_toml(BASE, None, &sets, &mut |_| true) {
                Ok(out) => {
                    assert_eq!(out.summary["conservation_ok"], true, "{key}={v}");
                }
                Err(e) => {
                    assert_eq!(e.kind, ErrorKind::Input, "{key}={v}: {e}");
                    assert!(!e.message.contains('\n'), "{key}={v}: {e}");
                    let top = key.split('.').next().unwrap();
                    assert!(e.message.starts_with(top), "{key}={v}: {e}");
                    refused += 1;
                }
            }
            if started.elapsed().as_secs() >= 1 {
                eprintln!("{key}={v}: {:?}", started.elapsed());
            }
            assert!(
                started.elapsed().as_secs() < 10,
                "{key}={v} took {:?}",
                started.elapsed()
            );
        }
    }
    eprintln!("{total} cases, {refused} refused");
    assert!(
        refused > keys.len() && refused < total,
        "{refused} of {total} refused"
    );
}

/// `validate` (resolve) answers what `run` answers: both build everything
/// a run builds before its first event.
fn same_answer(sets: &[String]) {
    let validated = pisanet::resolve_toml(BASE, None, sets);
    let mut run_sets = sets.to_vec();
    run_sets.push("run.max_sim_time_ms=0.001".into());
    let ran = run_toml(BASE, None, &run_sets, &mut |_| true);
    match (&validated, &ran) {
        (Ok(_), Ok(_)) => {}
        (Err(a), Err(b)) => assert_eq!(a.message, b.message, "{sets:?}"),
        _ => panic!(
            "{sets:?}: validate {:?}, run {:?}",
            validated.err(),
            ran.err()
        ),
    }
}

#[test]
fn validate_refuses_what_run_refuses() {
    for sets in [
        // HULA's per-ToR registers smaller than the fabric's ToRs.
        vec!["scheme.kind=hula", "scheme.hula.tor_slots=1"],
        // A failure on a link that does not exist.
        vec!["events=[{at_ms=1, kind=\"link_down\", link=\"leaf9->spine7\"}]"],
        vec!["events=[{at_ms=1, kind=\"link_down\", link=\"leaf0-spine9\"}]"],
        vec!["scheme.kind=conga", "topology.kind=fat_tree"],
        vec![
            "workload.pattern=file",
            "workload.file=\"/nonexistent.csv\"",
        ],
    ] {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        same_answer(&sets);
        assert!(
            pisanet::resolve_toml(BASE, None, &sets).is_err(),
            "{sets:?}"
        );
    }
    let e = pisanet::resolve_toml(
        BASE,
        None,
        &["events=[{at_ms=1, kind=\"link_down\", link=\"leaf9->spine7\"}]".into()],
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "events[0].link: no link \"leaf9->spine7\" (name its two end nodes as \"A-B\", e.g. \"leaf0-spine0\")"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    #[test]
    fn validate_and_run_agree_on_generated_configs(
        picks in proptest::collection::vec((0usize..1000, 0usize..12), 1..4)
    ) {
        let keys = numeric_keys();
        let values = ["0", "-1", "1", "2", "4", "0.5", "100", "1e300", "nan", "3.5", "64", "1000"];
        let sets: Vec<String> = picks
            .iter()
            .map(|(k, v)| (&keys[k % keys.len()], values[*v]))
            .filter(|((key, _, _), _)| key != "run.max_sim_time_ms" && key != "workload.flows")
            .map(|((key, _, _), v)| format!("{key}={v}"))
            .collect();
        std::env::set_var("PISANET_MEMORY_LIMIT_MB", "1000");
        same_answer(&sets);
    }
}
