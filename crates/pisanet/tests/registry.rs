//! The scheme registry is the one list of schemes: the README's table, the
//! config schema and the docs each scheme names are checked against it.

use pisanet_schemes::REGISTRY;

fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_readme_table_lists_every_scheme_of_the_registry_and_no_other() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let rows: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    for row in REGISTRY {
        assert!(
            rows.contains(&row.name),
            "README.md's scheme table has no row for `{}` (registry: {})",
            row.name,
            row.about
        );
    }
    for name in &rows {
        assert!(
            REGISTRY.iter().any(|r| r.name == *name),
            "README.md lists `{name}`, which the registry does not have"
        );
    }
}

#[test]
fn every_scheme_names_docs_that_exist_and_is_in_the_schema() {
    for row in REGISTRY {
        for doc in row.docs.split(", ") {
            assert!(
                repo().join(doc).exists(),
                "{}: {doc} does not exist",
                row.name
            );
        }
    }
    let schema = pisanet::config_schema_json();
    for row in REGISTRY {
        assert!(
            schema.contains(&format!("\"const\": \"{}\"", row.name)),
            "{}",
            row.name
        );
    }
}

#[test]
fn every_scheme_builds_on_the_demo_fabric_and_runs() {
    let demo =
        std::fs::read_to_string(repo().join("experiments/demo/leaf_spine_ecmp.toml")).unwrap();
    for row in REGISTRY {
        let sets = [
            format!("scheme.kind={}", row.name),
            "workload.flows=20".to_string(),
            "run.unused_keys=ignore".to_string(),
        ];
        let out = pisanet::run_toml(&demo, None, &sets, &mut |_| true)
            .unwrap_or_else(|e| panic!("{}: {e}", row.name));
        assert_eq!(out.summary["flows"]["completed"], 20, "{}", row.name);
    }
}
