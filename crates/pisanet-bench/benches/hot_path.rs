//! The engine's hot path: event-queue churn at a realistic pending size, an
//! egress queue's enqueue/dequeue over the packet arena, and a whole small
//! run end to end.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use pisanet_engine::heap_queue::HeapQueue;
use pisanet_engine::{EventQueue, SimTime};
use pisanet_net::arena::PacketArena;
use pisanet_net::queue::{EgressQueue, QueueConfig};
use pisanet_net::Packet;

/// The classic "hold" model: pop one, push one a random time (up to 1 us,
/// about a packet's serialization and propagation) later, at a steady
/// number of pending events. `hold_N` is the simulator's queue (a timing
/// wheel with an adaptive slot width in front of a heap), `hold_N_heap` the
/// 4-ary heap it replaced (docs/performance.md, "Session 8: event loop" and
/// "Session 9: event loop"); the runs hold about 100 (demo) to 600 (k=8
/// bench) events.
macro_rules! hold {
    ($g:expr, $name:expr, $pending:expr, $q:expr) => {
        $g.bench_function($name, |b| {
            let mut q = $q;
            let mut x: u64 = 1;
            for i in 0..$pending {
                q.schedule(SimTime(i * 1000), i as u32);
            }
            b.iter(|| {
                for _ in 0..$pending {
                    let (t, e) = q.next().unwrap();
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    q.schedule(t + SimTime(x % 1_000_000), e);
                }
            });
        });
    };
}

fn event_queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_queue");
    for pending in [100u64, 1_000, 100_000] {
        g.throughput(Throughput::Elements(pending));
        hold!(g, format!("hold_{pending}"), pending, EventQueue::new());
        hold!(g, format!("hold_{pending}_heap"), pending, HeapQueue::new());
    }
    g.finish();
}

fn egress_queue(c: &mut Criterion) {
    let cfg = QueueConfig {
        buffer_bytes: 1 << 30,
        buffer_packets: u32::MAX,
        ecn_threshold_bytes: Some(65_000),
        ecn_threshold_packets: u32::MAX,
        priorities: 1,
    };
    // 1000 packets through the arena and one port's queue, as the loop
    // moves them: stored once, queued and dequeued by id, then freed.
    c.bench_function("egress_queue/enqueue_dequeue_1000", |b| {
        b.iter_batched(
            || (EgressQueue::new(cfg), PacketArena::new()),
            |(mut q, mut arena)| {
                for i in 0..1000u32 {
                    let id = arena.insert(Packet {
                        size: 1518,
                        uid: i as u64,
                        ..Default::default()
                    });
                    if q.enqueue(id, arena.get_mut(id), None).is_err() {
                        arena.free(id);
                    }
                }
                while let Some(e) = q.dequeue(None) {
                    arena.free(e.id);
                }
                (q, arena)
            },
            BatchSize::SmallInput,
        )
    });
    // The arena alone at a steady state of 1000 packets in flight: one
    // packet in, the oldest out (a FIFO of ids, as a wire holds them).
    c.bench_function("arena/insert_remove_steady_1000", |b| {
        let mut arena = PacketArena::new();
        let mut fifo = std::collections::VecDeque::new();
        for i in 0..1000u64 {
            fifo.push_back(arena.insert(Packet {
                uid: i,
                size: 1518,
                ..Default::default()
            }));
        }
        let mut uid = 1000u64;
        b.iter(|| {
            for _ in 0..1000 {
                let old = fifo.pop_front().unwrap();
                let pkt = arena.remove(old);
                uid += 1;
                fifo.push_back(arena.insert(Packet { uid, ..pkt }));
            }
        });
    });
}

fn small_run(c: &mut Criterion) {
    let cfg = r#"
[topology]
kind = "leaf_spine"
leaves = 4
spines = 4
hosts_per_leaf = 4
[workload]
flows = 300
load = 0.5
"#;
    let mut g = c.benchmark_group("run");
    g.sample_size(10);
    g.bench_function("leaf_spine_16_hosts_300_flows", |b| {
        b.iter(|| pisanet::run_toml(cfg, None, &[], &mut |_| true).expect("run"))
    });
    g.finish();
}

/// A 10 000-flow run (the demo config: 4x4 leaf-spine, 16 hosts, DCTCP,
/// websearch at load 0.6): the whole loop with realistic queue and event
/// heap sizes. Slow (seconds per iteration); alone with
/// `cargo bench -p pisanet-bench -- run_10k`.
fn run_10k(c: &mut Criterion) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/demo/leaf_spine_ecmp.toml"
    );
    let text = std::fs::read_to_string(path).expect("demo config");
    let sets = ["workload.flows=10000".to_string()];
    let mut g = c.benchmark_group("run_10k");
    g.sample_size(10);
    g.bench_function("leaf_spine_demo_10000_flows", |b| {
        b.iter(|| pisanet::run_toml(&text, None, &sets, &mut |_| true).expect("run"))
    });
    g.finish();
}

/// One ingress pass of every scheme that builds with default parameters on
/// a k=8 fat tree's edge switch (the others need a planned configuration),
/// over packets to every host.
fn scheme_pass(c: &mut Criterion) {
    let mut g = c.benchmark_group("scheme_pass");
    for kind in pisanet_schemes::SchemeKind::all() {
        let Some((mut switch, _, _, pkts)) = pisanet_bench::scheme_fixture(kind) else {
            continue;
        };
        g.throughput(Throughput::Elements(pkts.len() as u64));
        let mut out = Vec::with_capacity(4);
        g.bench_function(kind.name(), |b| {
            b.iter(|| {
                for p in &pkts {
                    out.clear();
                    let mut p = p.clone();
                    let _ = switch.ingress_unicast(SimTime::ZERO, 0, &mut p, &mut out);
                }
                out.len()
            })
        });
    }
    g.finish();
}

/// One ingress pass of the `ecmp` program against the hand-written reference
/// ECMP, on an edge switch of a k=8 fat tree, over packets to every host: the
/// model's per-pass cost with hot caches (`ecmp_program` runs the program's
/// ingress form, `ecmp_program_interpreted` its `ingress`).
fn pipeline_pass(c: &mut Criterion) {
    let pisanet_bench::PassFixture {
        mut switch,
        native,
        sw,
        pkts,
    } = pisanet_bench::pass_fixture();
    let mut g = c.benchmark_group("pipeline_pass");
    g.throughput(Throughput::Elements(pkts.len() as u64));
    let mut out = Vec::with_capacity(4);
    g.bench_function("ecmp_program", |b| {
        b.iter(|| {
            for p in &pkts {
                out.clear();
                let mut p = p.clone();
                let _ = switch.ingress_unicast(SimTime::ZERO, 0, &mut p, &mut out);
            }
            out.len()
        })
    });
    // The same program with its ingress form off: every pass calls the
    // program's `ingress` through the general interpreter.
    switch.use_ingress_form(false);
    g.bench_function("ecmp_program_interpreted", |b| {
        b.iter(|| {
            for p in &pkts {
                out.clear();
                let mut p = p.clone();
                let _ = switch.ingress_unicast(SimTime::ZERO, 0, &mut p, &mut out);
            }
            out.len()
        })
    });
    g.bench_function("ecmp_native", |b| {
        b.iter(|| {
            let mut n = 0u32;
            for p in &pkts {
                n += native.route(sw, p).unwrap_or(0) as u32;
            }
            n
        })
    });
    g.finish();
}

fn crc_small(c: &mut Criterion) {
    use pisanet_pisa::HashAlgo;
    let inputs: Vec<[u8; 13]> = (0..128u32)
        .map(|i| {
            let mut b = [7u8; 13];
            b[..4].copy_from_slice(&i.to_be_bytes());
            b
        })
        .collect();
    c.bench_function("crc32_13_bytes/hash_extern", |b| {
        b.iter(|| {
            inputs
                .iter()
                .map(|x| HashAlgo::Crc32.compute(criterion::black_box(&x[..])))
                .fold(0u32, |a, h| a ^ h)
        })
    });
}

criterion_group!(
    benches,
    event_queue,
    egress_queue,
    small_run,
    pipeline_pass,
    scheme_pass,
    crc_small,
    run_10k
);
criterion_main!(benches);
