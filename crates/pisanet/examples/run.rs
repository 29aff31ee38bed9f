//! Runs a config without Python: `cargo run --release --example run -- CONFIG.toml [key=value ...]`.
//! Prints summary.json to stdout. The flow table's rows are streamed
//! (`run_toml_streaming`) and counted, not kept: memory follows the flows
//! still running, as with `pisanet run`. For profiling and whole-process timing (the
//! simulator alone, no interpreter); experiments run through `pisanet.sweep`
//! (experiments/points.py) and read per-flow, queue and port results from the
//! sweep directories.

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
    let rows = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = rows.clone();
    let sink: pisanet::sim::FlowSink = Box::new(move |t: pisanet::FlowTable| {
        counted.fetch_add(t.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    });
    let out = match pisanet::run_toml_streaming(&text, base, &sets, &mut |_| true, sink) {
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
    let started = out.summary["flows"]["started"].as_u64().unwrap_or(0);
    let rows = rows.load(std::sync::atomic::Ordering::Relaxed);
    if rows != started {
        eprintln!("error: {rows} flow rows streamed for {started} flows started");
        std::process::exit(1);
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&out.summary).unwrap_or_default()
    );
}
