//! Runs a config without Python: `cargo run --release --example run -- CONFIG.toml [key=value ...]`.
//! Prints summary.json to stdout. For profiling and whole-process timing (the
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
    println!(
        "{}",
        serde_json::to_string_pretty(&out.summary).unwrap_or_default()
    );
}
