//! The forwarding seam between the event loop and the switches.
//!
//! `Native` is a hand-written ECMP kept as the reference the PISA programs
//! are measured against (speed and behaviour).

use pisanet_engine::SimTime;
use pisanet_net::packet::{Packet, PortNo};
use pisanet_net::topology::Topology;

/// What a switch decided for a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Forward(PortNo),
    Drop,
}

const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

/// The CRC-32 of a packet's 5-tuple, as a switch's hash unit computes it.
pub fn hash_five_tuple(pkt: &Packet, salt: u32) -> u32 {
    let (src, dst, proto, sport, dport) = pkt.five_tuple();
    let mut b = [0u8; 17];
    b[0..4].copy_from_slice(&src.to_be_bytes());
    b[4..8].copy_from_slice(&dst.to_be_bytes());
    b[8] = proto;
    b[9..11].copy_from_slice(&sport.to_be_bytes());
    b[11..13].copy_from_slice(&dport.to_be_bytes());
    b[13..17].copy_from_slice(&salt.to_be_bytes());
    CRC32.checksum(&b)
}

/// Hand-written ECMP: per switch, a next-hop group per destination rack and
/// a host port per local host.
pub struct NativeEcmp {
    /// groups[sw][rack] = ports on shortest paths toward that rack.
    groups: Vec<Vec<Vec<PortNo>>>,
    topo_racks: Vec<u32>,
    host_port: Vec<PortNo>,
    host_rack: Vec<u32>,
    plan: Topology,
}

impl NativeEcmp {
    pub fn new(topo: &Topology) -> Self {
        let groups = topo.compute_routes();
        let host_port = (0..topo.n_hosts).map(|h| topo.nodes[h as usize].ports[0].peer_port).collect();
        NativeEcmp {
            groups,
            topo_racks: topo.racks.clone(),
            host_port,
            host_rack: topo.host_rack.clone(),
            plan: topo.clone(),
        }
    }

    fn ingress(&self, sw: u32, pkt: &Packet) -> Verdict {
        let Some(host) = self.plan.host_of_addr(pkt.ip.dst) else { return Verdict::Drop };
        let rack = self.host_rack[host as usize];
        let node = sw + self.plan.n_hosts;
        if self.topo_racks[rack as usize] == node {
            return Verdict::Forward(self.host_port[host as usize]);
        }
        let g = &self.groups[sw as usize][rack as usize];
        match g.len() {
            0 => Verdict::Drop,
            1 => Verdict::Forward(g[0]),
            n => Verdict::Forward(g[(hash_five_tuple(pkt, sw) % n as u32) as usize]),
        }
    }
}

/// The forwarding of every switch in a run.
pub enum Forwarding {
    Native(NativeEcmp),
}

impl Forwarding {
    pub fn ingress(&mut self, _now: SimTime, sw: u32, _in_port: PortNo, pkt: &mut Packet) -> Verdict {
        match self {
            Forwarding::Native(e) => e.ingress(sw, pkt),
        }
    }

    pub fn port_status(&mut self, _now: SimTime, _sw: u32, _port: PortNo, _up: bool) {}

    /// Packets held inside switches (recirculation, CPU queues).
    pub fn held_packets(&self) -> u64 {
        0
    }
}
