//! Runs a config like `run`, and prints one JSON object with the summary and
//! the column outputs (queue samples, port rates, port counters), for the
//! experiment scripts (experiments/hula/run.py) that need more than the
//! summary without the Python binding:
//! `cargo run --release --example run_columns -- CONFIG.toml [key=value ...]`.

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: run_columns CONFIG.toml [key.path=value ...]");
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
        Ok(out) => {
            let q = &out.queues;
            let r = &out.port_rates;
            let v = serde_json::json!({
                "summary": out.summary,
                "queues": {"time_us": q.time_us, "port": q.port, "depth_bytes": q.depth_bytes},
                "port_rates": {"time_us": r.time_us, "port": r.port, "tx_gbps": r.tx_gbps, "carried_gbps": r.carried_gbps},
                "ports": out.ports,
            });
            println!("{v}");
        }
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
