//! The switch-local control plane: a CPU agent per switch (P4TE section 3.3).
//!
//! Packets (with their metadata, as P4Runtime packet-ins) and digests sent to
//! the CPU reach the agent after `to_cpu_latency`.
//! The agent's writes (P4Runtime `Update`s: table entries, selector groups,
//! register values, meter rates, multicast groups, clone sessions) take effect
//! after `write_latency`, one entry at a time, `write_interval` apart: a batch
//! is not atomic, and a packet between two writes sees the first only.
//! Writes issued at start-up (before traffic) apply at once.

use crate::info::SwitchInfo;
use crate::meta::UserMeta;
use crate::pipeline::{Digest, Pipeline, Write};
use pisanet_engine::SimTime;
use pisanet_net::{Packet, PortNo};

/// Latencies of a switch's CPU agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlPlaneConfig {
    /// Packet-in or digest from the data plane to the agent.
    pub to_cpu_latency: SimTime,
    /// From a write being issued to its taking effect (also packet-out).
    pub write_latency: SimTime,
    /// Between two consecutive writes taking effect.
    pub write_interval: SimTime,
}

impl Default for ControlPlaneConfig {
    fn default() -> Self {
        ControlPlaneConfig {
            to_cpu_latency: SimTime::from_us(10),
            write_latency: SimTime::from_us(50),
            write_interval: SimTime::from_us(5),
        }
    }
}

/// What the agent can do: read the pipeline (P4Runtime reads), issue writes,
/// send packets out through the pipeline (packet-out), and set a wake-up.
pub struct CpuApi<'a> {
    pub now: SimTime,
    pipe: &'a Pipeline,
    pub(crate) writes: &'a mut Vec<Write>,
    pub(crate) packet_outs: &'a mut Vec<Packet>,
    pub(crate) wake: &'a mut Option<SimTime>,
}

impl<'a> CpuApi<'a> {
    pub(crate) fn new(
        now: SimTime,
        pipe: &'a Pipeline,
        writes: &'a mut Vec<Write>,
        packet_outs: &'a mut Vec<Packet>,
        wake: &'a mut Option<SimTime>,
    ) -> Self {
        CpuApi {
            now,
            pipe,
            writes,
            packet_outs,
            wake,
        }
    }

    /// Current state of the pipeline (reads are immediate).
    pub fn pipeline(&self) -> &Pipeline {
        self.pipe
    }

    /// Issues a write; it takes effect later, in issue order.
    pub fn write(&mut self, w: Write) {
        self.writes.push(w);
    }

    /// Writes issued so far in this call (they are queued when it returns,
    /// in issue order), so an agent can follow its own write backlog.
    pub fn writes_issued(&self) -> usize {
        self.writes.len()
    }

    /// Sends a packet into ingress (on [`CPU_PORT`](crate::CPU_PORT)); the
    /// switch counts it as injected.
    pub fn packet_out(&mut self, pkt: Packet) {
        self.packet_outs.push(pkt);
    }

    /// Calls the agent's `on_wake` at `at` (each request, one call).
    pub fn wake_at(&mut self, at: SimTime) {
        *self.wake = Some(at);
    }
}

/// A switch's CPU agent: the control-plane half of a scheme.
pub trait ControlAgent: Send {
    /// Initial installation at time zero, before traffic (writes apply at once).
    fn on_start(&mut self, info: &SwitchInfo, cpu: &mut CpuApi<'_>);
    /// A packet the data plane sent to the CPU.
    fn on_packet(&mut self, _pkt: Packet, _cpu: &mut CpuApi<'_>) {}
    /// A packet-in with its metadata (P4Runtime `PacketIn.metadata`: the
    /// user metadata of the pass that sent it, preserved across a clone).
    /// By default the metadata is ignored and [`on_packet`](Self::on_packet) runs.
    fn on_packet_in(&mut self, pkt: Packet, _meta: UserMeta, cpu: &mut CpuApi<'_>) {
        self.on_packet(pkt, cpu)
    }
    /// A digest from the data plane.
    fn on_digest(&mut self, _digest: Digest, _cpu: &mut CpuApi<'_>) {}
    /// A link went down or came up.
    fn on_port_status(&mut self, _port: PortNo, _up: bool, _cpu: &mut CpuApi<'_>) {}
    /// A wake-up the agent asked for.
    fn on_wake(&mut self, _cpu: &mut CpuApi<'_>) {}
}
