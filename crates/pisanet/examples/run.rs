//! Runs a config without Python: `cargo run --release --example run -- CONFIG.toml [key=value ...]`.
//! Prints summary.json to stdout. For the experiment scripts, the environment
//! asks for more:
//! - `PISANET_PORTS=1`: `{"summary": ..., "ports": [...]}` (per-port counters);
//! - `PISANET_COLUMNS=1`: one compact JSON object with the summary, the queue
//!   samples, the port-rate samples and the per-port counters.
//! - `PISANET_FLOWS=1` (with `PISANET_PORTS` or `PISANET_COLUMNS`): the same
//!   object, compact, with `"flows": {"bytes", "class", "fct_us"}` added (one
//!   entry per flow, in flow id order; an unfinished flow's FCT is null).

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
    let out = match pisanet::run_toml(&text, base, &sets, &mut |_| true) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(if e.kind == pisanet::ErrorKind::Input {
                2
            } else {
                1
            });
        }
    };
    let flows = std::env::var_os("PISANET_FLOWS").is_some().then(|| {
        let f = &out.flows;
        serde_json::json!({"bytes": f.bytes, "class": f.class, "fct_us": f.fct_us})
    });
    if std::env::var_os("PISANET_COLUMNS").is_some() {
        let (q, r) = (&out.queues, &out.port_rates);
        let mut v = serde_json::json!({
            "summary": out.summary,
            "queues": {"time_us": q.time_us, "port": q.port, "depth_bytes": q.depth_bytes},
            "port_rates": {"time_us": r.time_us, "port": r.port, "tx_gbps": r.tx_gbps, "carried_gbps": r.carried_gbps},
            "ports": out.ports,
        });
        if let Some(f) = flows {
            v["flows"] = f;
        }
        println!("{v}");
    } else if std::env::var_os("PISANET_PORTS").is_some() {
        let mut v = serde_json::json!({"summary": out.summary, "ports": out.ports});
        if let Some(f) = flows {
            v["flows"] = f;
            println!("{v}");
        } else {
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
    } else {
        println!(
            "{}",
            serde_json::to_string_pretty(&out.summary).unwrap_or_default()
        );
    }
}
