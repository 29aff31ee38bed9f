//! The user-facing parameters of the fabric (`[topology]` in a run's TOML,
//! with `topology.pfc`) and the custom-topology file format, declared once
//! here, next to the topology builders and queues that read them: each with
//! its doc comment, default, unit (`x-unit`), range and, for keys only some
//! topologies read, `x-applies-when`. The simulator's config composes
//! [`TopologyParams`]; `pisanet schema` shows it.
//!
//! Units follow the TOML keys (microseconds, KB = 1000 B, Gb/s). The PFC
//! formulas (`headroom_bytes`, the thresholds) and the traffic manager that
//! uses [`PfcParams`] are in the facade crate (pisanet/src/pfc.rs and
//! sim/pfc.rs).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TopologyKind {
    LeafSpine,
    FatTree,
    Hula3tier,
    Custom,
}

// `[topology]`: the fabric (its shape, links, the switch ports' buffers and
// queues, PFC). Keys, units and ranges are those of the TOML file. (No doc
// comment: it would become the schema's description of the table.)
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "TopologyCfg")]
#[serde(deny_unknown_fields, default)]
pub struct TopologyParams {
    pub kind: TopologyKind,
    /// leaf_spine: number of leaf (ToR) switches (each rack is a /24 of
    /// 10.0.0.0/8, so at most 65536).
    #[schemars(range(min = 1, max = 65536), extend("x-applies-when" = {"key": "topology.kind", "in": ["leaf_spine"]}))]
    pub leaves: u32,
    /// leaf_spine: number of spine switches.
    #[schemars(range(min = 1, max = 1000000), extend("x-applies-when" = {"key": "topology.kind", "in": ["leaf_spine"]}))]
    pub spines: u32,
    /// leaf_spine: hosts under each leaf.
    #[schemars(range(min = 1, max = 250), extend("x-applies-when" = {"key": "topology.kind", "in": ["leaf_spine"]}))]
    pub hosts_per_leaf: u32,
    /// fat_tree: arity k (even); k^3/4 hosts.
    #[schemars(range(min = 2, max = 64), extend("x-applies-when" = {"key": "topology.kind", "in": ["fat_tree"]}))]
    pub k: u32,
    /// hula3tier: servers per ToR (the paper: 8).
    #[schemars(range(min = 1, max = 250), extend("x-applies-when" = {"key": "topology.kind", "in": ["hula3tier"]}))]
    pub hosts_per_tor: u32,
    /// custom: path to a TOML file with [[nodes]] and [[links]].
    #[schemars(extend("x-applies-when" = {"key": "topology.kind", "in": ["custom"]}))]
    pub file: Option<String>,
    /// Host-to-ToR link rate (Gb/s); custom: the rate of a host link whose
    /// `gbps` the file leaves out.
    #[schemars(range(min = 0.000001, max = 100000), extend("x-unit" = "Gb/s"))]
    pub host_link_gbps: f64,
    /// Switch-to-switch link rate (Gb/s); custom: the rate of a switch-to-
    /// switch link whose `gbps` the file leaves out.
    #[schemars(range(min = 0.000001, max = 100000), extend("x-unit" = "Gb/s"))]
    pub fabric_link_gbps: f64,
    /// Propagation delay of every link (us); custom: of every link whose
    /// `delay_us` the file leaves out.
    #[schemars(range(min = 0, max = 1000000), extend("x-unit" = "us"))]
    pub link_delay_us: f64,
    /// Per-port drop-tail buffer of switch ports (KB = 1000 bytes).
    #[schemars(range(min = 0.064, max = 10000000), extend("x-unit" = "KB"))]
    pub buffer_kb: f64,
    /// Per-port drop-tail limit of switch ports in packets as well (ACKs
    /// count as one each, as in ns-3's queue discs); 0 = bytes only (default).
    #[schemars(range(min = 0, max = 100000000), extend("x-unit" = "packets"))]
    pub buffer_pkts: u32,
    /// ECN marking threshold K of switch ports (KB); 0 disables marking.
    #[schemars(range(min = 0, max = 10000000), extend("x-unit" = "KB"))]
    pub ecn_threshold_kb: f64,
    /// ECN marking threshold of switch ports in packets as well: CE on an
    /// ECT packet arriving to a port holding at least this many packets,
    /// ACKs included (ns-3's RED with MinTh = MaxTh = K, QW = 1); a packet
    /// is marked when either threshold is reached; 0 = bytes only (default).
    #[schemars(range(min = 0, max = 100000000), extend("x-unit" = "packets"))]
    pub ecn_threshold_pkts: u32,
    /// Strict-priority queues per switch port (1..=8).
    #[schemars(range(min = 1, max = 8))]
    pub priorities: u8,
    /// Switch-wide shared buffer (KB); 0 = per-port buffers only.
    #[schemars(range(min = 0, max = 100000000), extend("x-unit" = "KB"))]
    pub shared_buffer_kb: f64,
    /// Dynamic-threshold alpha of the shared buffer.
    #[schemars(range(min = 0.001, max = 1000), extend("x-applies-when" = {"key": "topology.shared_buffer_kb", "nonzero": true}))]
    pub shared_buffer_alpha: f64,
    /// Probability that a link corrupts (drops) a packet, on every link; for loss experiments and tests.
    #[schemars(range(min = 0, max = 0.99))]
    pub link_loss_rate: f64,
    /// Random link loss draws from one random stream per link direction
    /// (seeded by the run's seed and the port) instead of one stream for
    /// the whole run, drawn in the order of every link's arrivals. Off by
    /// default (existing configs keep their digests). Needed for random
    /// link loss in parallel mode (`run.threads`): each direction's draws
    /// are then made in its receiving partition, in the single-thread
    /// run's order, so both modes drop the same packets.
    #[schemars(extend("x-applies-when" = {"key": "topology.link_loss_rate", "nonzero": true}))]
    pub link_loss_per_link: bool,
    /// custom and hula3tier: cut the topology into partitions (groups of
    /// racks, each ToR with its hosts; a switch without hosts joins the
    /// partition of the switches between it and the hosts, or is dealt
    /// round-robin when they are in several; links of zero delay never
    /// cross) and give the run the lookahead of that cut (the smallest
    /// delay of a link between partitions), as a fat_tree or leaf_spine
    /// always has: a TCP receiver lingers a lookahead after its sender
    /// completes and the run checks for its end between windows of the
    /// lookahead (docs/architecture.md, "Parallel mode"). Needed for
    /// `run.threads` on these topologies, whose results at every number of
    /// threads are then this setting's with `run.threads` unset. Off by
    /// default: existing configs keep their digests.
    #[schemars(extend("x-applies-when" = {"key": "topology.kind", "in": ["hula3tier", "custom"]}))]
    pub partitioned: bool,
    /// Priority flow control (IEEE 802.1Qbb) in the switches' traffic
    /// managers and the host NICs (crates/pisanet/src/pfc.rs).
    pub pfc: PfcParams,
}

impl Default for TopologyParams {
    fn default() -> Self {
        TopologyParams {
            kind: TopologyKind::LeafSpine,
            leaves: 4,
            spines: 4,
            hosts_per_leaf: 4,
            k: 4,
            hosts_per_tor: 8,
            file: None,
            host_link_gbps: 10.0,
            fabric_link_gbps: 10.0,
            link_delay_us: 1.0,
            buffer_kb: 200.0,
            buffer_pkts: 0,
            ecn_threshold_kb: 65.0,
            ecn_threshold_pkts: 0,
            priorities: 1,
            shared_buffer_kb: 0.0,
            shared_buffer_alpha: 1.0,
            link_loss_rate: 0.0,
            link_loss_per_link: false,
            partitioned: false,
            pfc: Default::default(),
        }
    }
}

impl TopologyParams {
    /// The rules between `[topology]` keys (single-key ranges are in the
    /// schema). `packet` is the wire size of a full segment (the transport's
    /// MSS plus headers): a buffer must hold one. The error is one line
    /// naming the key and what is allowed.
    pub fn check(&self, packet: u64) -> Result<(), String> {
        if self.kind == TopologyKind::FatTree && !self.k.is_multiple_of(2) {
            return Err(format!(
                "topology.k: must be even and in 2..=64, got {}",
                self.k
            ));
        }
        if self.kind == TopologyKind::LeafSpine
            && (self.leaves as u64 * self.hosts_per_leaf as u64) < 2
        {
            return Err(
                "topology: a leaf_spine needs at least 2 hosts in all (topology.leaves x topology.hosts_per_leaf)"
                    .into(),
            );
        }
        if self.kind == TopologyKind::Custom && self.file.is_none() {
            return Err("topology.file: required when topology.kind = \"custom\"".into());
        }
        // Progress must be possible: a queue below one full packet would
        // never let one through.
        if ((self.buffer_kb * 1000.0) as u64) < packet {
            return Err(format!(
                "topology.buffer_kb: must hold one full packet (transport.mss + headers = {packet} bytes, so at least {}), got {}",
                packet as f64 / 1000.0,
                self.buffer_kb
            ));
        }
        if self.shared_buffer_kb > 0.0 && ((self.shared_buffer_kb * 1000.0) as u64) < packet {
            return Err(format!(
                "topology.shared_buffer_kb: must be 0 (off) or hold one full packet (at least {}), got {}",
                packet as f64 / 1000.0,
                self.shared_buffer_kb
            ));
        }
        self.pfc.validate(self.priorities)
    }
}

/// `topology.pfc`: priority flow control in every switch's traffic manager
/// and every host NIC (off by default).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[schemars(rename = "PfcCfg")]
#[serde(deny_unknown_fields, default)]
pub struct PfcParams {
    /// Turn PFC on: switches account each packet to its (ingress port,
    /// priority), send PAUSE (XOFF) upstream above `xoff_kb` and resume
    /// (XON) at `xon_kb`; the lossless priorities never drop while the
    /// headroom suffices. `topology.pfc.enabled = true` alone gives a
    /// working lossless fabric (every priority lossless, thresholds and
    /// headroom computed).
    pub enabled: bool,
    /// The lossless priorities (queue indices 0..topology.priorities); empty
    /// (the default) makes every priority lossless.
    #[schemars(extend("x-applies-when" = {"key": "topology.pfc.enabled", "in": [true]}))]
    pub priorities: Vec<u8>,
    /// XOFF threshold per (ingress port, priority), static, in KB (1000
    /// bytes): a PAUSE goes upstream when the bytes that came in on that
    /// port and priority and are still queued in the switch exceed it.
    /// Unset: seed 002's bound Q_PFC = (Q - P n H) / (P n) per switch (Q the
    /// switch's buffer, n its ports, P the lossless priorities, H the
    /// largest headroom of its ports), docs/model.md.
    #[schemars(range(min = 0, max = 10000000), extend("x-unit" = "KB"), extend("x-applies-when" = {"key": "topology.pfc.enabled", "in": [true]}))]
    pub xoff_kb: Option<f64>,
    /// XON threshold (KB): the release (zero quanta) goes upstream when the
    /// (port, priority)'s bytes fall to it. Must not exceed the XOFF
    /// threshold. Unset: XOFF minus two full packets (at least 0).
    #[schemars(range(min = 0, max = 10000000), extend("x-unit" = "KB"), extend("x-applies-when" = {"key": "topology.pfc.enabled", "in": [true]}))]
    pub xon_kb: Option<f64>,
    /// Headroom per (ingress port, priority) above XOFF, in KB, or "auto"
    /// (default): what each link needs by [`headroom_bytes`]. A smaller
    /// number is allowed but warned about in summary.json, and what it then
    /// drops is counted (`pfc.lossless_drops`), not an invariant violation.
    #[schemars(extend("x-applies-when" = {"key": "topology.pfc.enabled", "in": [true]}))]
    pub headroom_kb: Headroom,
    /// Pause quanta an XOFF frame carries (units of 512 bit times at the
    /// link's rate); the sender refreshes it every half of that time while
    /// the threshold stays exceeded.
    #[schemars(range(min = 1, max = 65535), extend("x-unit" = "quanta"), extend("x-applies-when" = {"key": "topology.pfc.enabled", "in": [true]}))]
    pub quanta: u16,
    /// Deadlock detector: a cycle of the buffer-dependency graph whose every
    /// (port, priority) stayed paused this long ends the run with an error
    /// naming the cycle; 0 turns the detector off.
    #[schemars(range(min = 0, max = 100000000), extend("x-unit" = "ms"), extend("x-applies-when" = {"key": "topology.pfc.enabled", "in": [true]}))]
    pub deadlock_ms: f64,
}

impl Default for PfcParams {
    fn default() -> Self {
        PfcParams {
            enabled: false,
            priorities: Vec::new(),
            xoff_kb: None,
            xon_kb: None,
            headroom_kb: Headroom::Auto(AutoKw::Auto),
            quanta: 65535,
            deadlock_ms: 10.0,
        }
    }
}

/// `topology.pfc.headroom_kb`: a number of KB, or "auto".
#[derive(Clone, Copy, Debug, Serialize, JsonSchema, PartialEq)]
#[serde(untagged)]
pub enum Headroom {
    /// Computed per link by [`headroom_bytes`].
    Auto(AutoKw),
    /// KB (1000 bytes) per (port, priority).
    Kb(f64),
}

impl<'de> Deserialize<'de> for Headroom {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Unexpected, Visitor};
        struct V;
        impl Visitor<'_> for V {
            type Value = Headroom;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"auto\" or a number of KB")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Headroom, E> {
                if s == "auto" {
                    Ok(Headroom::Auto(AutoKw::Auto))
                } else {
                    Err(E::invalid_value(Unexpected::Str(s), &self))
                }
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Headroom, E> {
                Ok(Headroom::Kb(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Headroom, E> {
                Ok(Headroom::Kb(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Headroom, E> {
                Ok(Headroom::Kb(v as f64))
            }
        }
        d.deserialize_any(V)
    }
}

/// The word "auto".
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AutoKw {
    Auto,
}

impl PfcParams {
    /// The rules between keys (`priorities` needs `topology.priorities`).
    pub fn validate(&self, queues: u8) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        for &p in &self.priorities {
            if p >= queues {
                return Err(format!(
                    "topology.pfc.priorities: {p} is not a priority of this fabric (topology.priorities = {queues}, so 0..={})",
                    queues - 1
                ));
            }
        }
        if let (Some(xoff), Some(xon)) = (self.xoff_kb, self.xon_kb) {
            if xon > xoff {
                return Err(format!(
                    "topology.pfc.xon_kb: must be at most topology.pfc.xoff_kb ({xoff}), got {xon}"
                ));
            }
        }
        if let Headroom::Kb(h) = self.headroom_kb {
            if !(h.is_finite() && (0.0..=1e7).contains(&h)) {
                return Err(format!(
                    "topology.pfc.headroom_kb: must be \"auto\" or in [0, 10000000] KB, got {h}"
                ));
            }
        }
        Ok(())
    }

    /// Bit mask of the lossless priorities among `queues` queues.
    pub fn lossless_mask(&self, queues: u8) -> u8 {
        if self.priorities.is_empty() {
            (((1u16 << queues) - 1) & 0xff) as u8
        } else {
            self.priorities.iter().fold(0u8, |m, &p| m | (1 << p))
        }
    }
}

/// A custom topology file.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomTopology {
    pub nodes: Vec<CustomNode>,
    pub links: Vec<CustomLink>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomNode {
    pub name: String,
    /// "host" or "switch".
    pub kind: String,
    /// Switch tier: 0 = ToR; higher toward the core. Default 0.
    #[serde(default)]
    pub tier: u8,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomLink {
    pub a: String,
    pub b: String,
    /// Link rate (Gb/s); default: the config's `topology.host_link_gbps` for
    /// a link with a host at either end, else `topology.fabric_link_gbps`.
    #[serde(default)]
    pub gbps: Option<f64>,
    /// Propagation delay (us); default: the config's `topology.link_delay_us`.
    #[serde(default)]
    pub delay_us: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topology_rules_name_the_key() {
        let t = TopologyParams::default();
        assert!(t.check(1518).is_ok());
        let fat = TopologyParams {
            kind: TopologyKind::FatTree,
            k: 5,
            ..Default::default()
        };
        assert_eq!(
            fat.check(1518).unwrap_err(),
            "topology.k: must be even and in 2..=64, got 5"
        );
        let custom = TopologyParams {
            kind: TopologyKind::Custom,
            ..Default::default()
        };
        assert_eq!(
            custom.check(1518).unwrap_err(),
            "topology.file: required when topology.kind = \"custom\""
        );
        let small = TopologyParams {
            buffer_kb: 1.0,
            ..Default::default()
        };
        assert!(small
            .check(1518)
            .unwrap_err()
            .starts_with("topology.buffer_kb: must hold one full packet"));
        // A buffer that holds the packet passes; the packet size is the caller's.
        assert!(small.check(1000).is_ok());
        let pfc = TopologyParams {
            pfc: PfcParams {
                enabled: true,
                priorities: vec![1],
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(pfc
            .check(1518)
            .unwrap_err()
            .starts_with("topology.pfc.priorities: 1 is not a priority"));
    }
}
