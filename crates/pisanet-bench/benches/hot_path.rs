//! The engine's hot path: event-queue churn at a realistic pending size, an
//! egress queue's enqueue/dequeue, and a whole small run end to end.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use pisanet_engine::{EventQueue, SimTime};
use pisanet_net::queue::{EgressQueue, QueueConfig, Queued};
use pisanet_net::Packet;

fn event_queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_queue");
    for pending in [1_000u64, 100_000] {
        g.throughput(Throughput::Elements(pending));
        g.bench_function(format!("hold_{pending}"), |b| {
            let mut q = EventQueue::new();
            let mut x: u64 = 1;
            for i in 0..pending {
                q.schedule(SimTime(i * 1000), i as u32);
            }
            b.iter(|| {
                // The classic "hold" model: pop one, push one a random time later.
                for _ in 0..pending {
                    let (t, e) = q.next().unwrap();
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    q.schedule(t + SimTime(x % 1_000_000), e);
                }
            });
        });
    }
    g.finish();
}

fn egress_queue(c: &mut Criterion) {
    let cfg = QueueConfig {
        buffer_bytes: 1 << 30,
        ecn_threshold_bytes: Some(65_000),
        priorities: 1,
    };
    c.bench_function("egress_queue/enqueue_dequeue_1000", |b| {
        b.iter_batched(
            || EgressQueue::new(cfg),
            |mut q| {
                for i in 0..1000u32 {
                    let pkt = Packet {
                        size: 1518,
                        uid: i as u64,
                        ..Default::default()
                    };
                    let _ = q.enqueue(
                        Queued {
                            pkt,
                            enq_time: SimTime::ZERO,
                            enq_qdepth: 0,
                            user_meta: [0; 2],
                            instance_type: 0,
                            ingress_port: 0,
                            egress_rid: 0,
                        },
                        None,
                    );
                }
                while q.dequeue(None).is_some() {}
                q
            },
            BatchSize::SmallInput,
        )
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

criterion_group!(benches, event_queue, egress_queue, small_run);
criterion_main!(benches);
