//! Runs a config without Python: `cargo run --release --example run -- CONFIG.toml [key=value ...]`.
//! Prints summary.json to stdout (with PISANET_PORTS=1, the per-port counters
//! too). For profiling and quick checks.

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: run CONFIG.toml [key.path=value ...]");
        std::process::exit(2);
    };
    let sets: Vec<String> = args.collect();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {path}: {e}");
            std::process::exit(2);
        }
    };
    let base = std::path::Path::new(&path).parent();
    match pisanet::run_toml(&text, base, &sets, &mut |_| true) {
        // PISANET_PORTS=1: {"summary": ..., "ports": [...]} (per-port counters too).
        Ok(out) if std::env::var_os("PISANET_PORTS").is_some() => {
            let v = serde_json::json!({"summary": out.summary, "ports": out.ports});
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default())
        }
        Ok(out) => println!(
            "{}",
            serde_json::to_string_pretty(&out.summary).unwrap_or_default()
        ),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(if e.kind == pisanet::ErrorKind::Input {
                2
            } else {
                1
            });
        }
    }
}
