//! Criterion benchmarks live in `benches/`, the pass counter in `examples/`;
//! this library holds what they share.

use pisanet::forward::NativeEcmp;
use pisanet_engine::{BitRate, RngStreams, SimTime, StreamKind};
use pisanet_net::{Ipv4, Packet, Tcp, L4, PROTO_TCP};
use pisanet_pisa::Switch;

/// The switch-pass fixture: edge switch 0 of a k=8 fat tree running the
/// `ecmp` program, the hand-written reference for the same fabric, and one
/// TCP packet from host 0 to every host.
pub struct PassFixture {
    pub switch: Switch,
    pub native: NativeEcmp,
    /// The switch's index (for `NativeEcmp::route`).
    pub sw: u32,
    pub pkts: Vec<Packet>,
}

pub fn pass_fixture() -> PassFixture {
    let fx = scheme_fixture(pisanet_schemes::SchemeKind::default()).expect("ecmp builds");
    PassFixture {
        switch: fx.0,
        native: fx.1,
        sw: fx.2,
        pkts: fx.3,
    }
}

/// Edge switch 0 of a k=8 fat tree running scheme `kind` with its default
/// parameters, the reference ECMP, the switch index and one TCP packet from
/// host 0 to every host; `None` if the scheme does not build on that switch
/// with default parameters (e.g. one that needs a planned configuration).
pub fn scheme_fixture(
    kind: pisanet_schemes::SchemeKind,
) -> Option<(Switch, NativeEcmp, u32, Vec<Packet>)> {
    let topo = pisanet_net::topology::fat_tree(
        8,
        BitRate::from_gbps(10.0),
        BitRate::from_gbps(40.0),
        SimTime::from_us(1),
    )
    .expect("fat_tree k=8");
    let shared = pisanet::forward::Shared::new(&topo);
    let sw = 0u32;
    let info = pisanet::forward::switch_info(&topo, &shared, sw);
    let rng = RngStreams::new(1).stream(StreamKind::Switch, 0);
    let params = pisanet_schemes::SchemeParams {
        kind,
        ..Default::default()
    };
    let switch = pisanet_schemes::build(&params, &info, rng, Default::default()).ok()?;
    let native = NativeEcmp::new(&topo, &shared.routes, true);
    let pkts = (0..topo.n_hosts)
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
    Some((switch, native, sw, pkts))
}
