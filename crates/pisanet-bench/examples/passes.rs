//! Runs N ingress passes of the `ecmp` program (its ingress form, or with
//! `interpreted` its `ingress` through the general path), or N routes of the
//! hand-written reference, over the packets of every host pair of a
//! fat_tree k=8 edge switch, with hot caches:
//! `passes program|interpreted|native N`. Meant for
//! `perf stat -e instructions` (instructions per pass = count / N).

use pisanet_engine::SimTime;

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "program".into());
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let pisanet_bench::PassFixture {
        mut switch,
        native,
        sw,
        pkts,
    } = pisanet_bench::pass_fixture();
    if what == "interpreted" {
        switch.use_ingress_form(false);
    }
    let mut out = Vec::with_capacity(4);
    let mut acc = 0u64;
    for i in 0..n {
        let mut p = pkts[(i % pkts.len() as u64) as usize].clone();
        if what == "native" {
            acc += native.route(sw, &p).unwrap_or(0) as u64;
        } else {
            out.clear();
            if let Some((port, _)) = switch.ingress_unicast(SimTime::ZERO, 0, &mut p, &mut out) {
                acc += port as u64;
            }
        }
        std::hint::black_box(&p);
    }
    println!("{acc}");
}
