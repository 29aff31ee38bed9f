//! Runs N ingress passes of the `ecmp` program, or N routes of the hand-written
//! reference, over the packets of every host pair of a fat_tree k=8 edge
//! switch, with hot caches: `passes program|native N`. Meant for
//! `perf stat -e instructions` (instructions per pass = count / N).

use pisanet_engine::{BitRate, RngStreams, SimTime, StreamKind};
use pisanet_net::{Ipv4, Packet, Tcp, L4, PROTO_TCP};

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "program".into());
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let topo = pisanet_net::topology::fat_tree(
        8,
        BitRate::from_gbps(10.0),
        BitRate::from_gbps(40.0),
        SimTime::from_us(1),
    )
    .expect("fat_tree");
    let routes = topo.compute_routes();
    let sw = 0u32;
    let info = pisanet::forward::switch_info(&topo, &routes, sw);
    let rng = RngStreams::new(1).stream(StreamKind::Switch, 0);
    let mut switch =
        pisanet_schemes::build("ecmp", &Default::default(), &info, rng, Default::default())
            .expect("ecmp");
    let native = pisanet::forward::NativeEcmp::new(&topo, true);
    let pkts: Vec<Packet> = (0..topo.n_hosts)
        .map(|h| Packet {
            size: 1518,
            ip: Ipv4 {
                src: topo.host_addr[0],
                dst: topo.host_addr[h as usize],
                proto: PROTO_TCP,
                ..Default::default()
            },
            l4: L4::Tcp(Tcp {
                sport: 1000 + h as u16,
                dport: 80,
                ..Default::default()
            }),
            ..Default::default()
        })
        .collect();
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
