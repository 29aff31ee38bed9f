//! Parallel mode (`run.threads`): a conservative parallel discrete-event
//! simulation of one run (docs/architecture.md, "Parallel mode").
//!
//! The topology is cut into partitions by its structure alone (a fat tree's
//! pods, each with its hosts, edge and aggregation switches, the cores
//! dealt round-robin over the pods; a leaf-spine's groups of leaves with
//! their hosts, the spines dealt round-robin over the groups), never by the
//! number of threads. Each partition is a [`World`] of its own, with its
//! own event queue, that runs only the events of its nodes. The partitions
//! advance together in windows `[start, start + lookahead)`, where the
//! lookahead is the smallest propagation delay of a link between two
//! partitions: a packet put on such a link at time `t >= start` arrives at
//! `t + serialization + delay >= start + lookahead`, so no partition can
//! receive, within a window, anything another sends in it (Chandy-Misra-
//! Bryant's conservative rule, with the synchronous windows of UNISON,
//! Bai et al., EuroSys 2024). The packets that crossed are
//! handed to their receiving partition at the end of the window. Every
//! partition orders its events by the same (time, key) as a single-thread
//! run (sim/order.rs), so it pops exactly that run's events restricted to
//! its nodes: the results and digest are the single-thread run's, for every
//! number of threads.
//!
//! What crosses besides packets: a flow's two endpoints live with their
//! hosts, so when a sender completes its flow at T the receiver's
//! partition learns it at the end of that window (no later than T + L)
//! and releases the receiver at T + L, as a single-thread run does
//! (`World::complete_flow`). Losses of a sender's data dropped in another
//! partition are logged there with their time and charged to the flow at
//! the end if they happened no later than the flow finished (the
//! single-thread rule). A duration-limited sender's close hands the
//! flow's size to its receiver's partition (`Part::closed`); a link
//! failure is applied by the partitions of both ends at its instant
//! (`World::link_event_part`); per-flow measurement is held by receivers
//! until the window's end, cut at their sender's completion, and put
//! together and closed by the [`Collector`]; capture and trace rows are
//! tagged with their events and merged in their order (`Tap::merge`); PFC
//! is per port, but for its deadlock detector, which the coordinator
//! replays from what the partitions logged (`pfc_window`)
//! (docs/architecture.md, "Parallel mode").

use super::flow::{ActiveFlow, Endpoints, Plan};
use super::meter::{FlowMeter, FlowStats, Meter};
use super::*;
use crate::config::Config;
use pisanet_net::topology::NodeKind;
use pisanet_workload::Transport;
use rayon::prelude::*;

/// The schemes checked to run in parallel mode: every switch's state (its
/// registers, tables, meters, flowlet and path tables, random stream, its
/// control agent and the agent's writes) is its own, its timers (probe and
/// packet generators, control-plane wake-ups, recirculation) are events of
/// its own partition, and what it tells other switches or hosts travels
/// as ordinary packets over links (HULA's probes, CONGA's feedback, P4TE's
/// in-band telemetry and fake ACKs, P4QCN's feedback); DBB's plan is
/// computed once before the run, from the topology alone, and only read.
/// A scheme added to the registry is refused until checked and tested
/// (crates/pisanet/tests/parallel.rs,
/// `every_scheme_gives_the_single_thread_runs_results`).
pub const SCHEMES: &[&str] = &[
    "ecmp",
    "ecmp_native",
    "flowlet_ecmp",
    "rps",
    "hula",
    "conga",
    "conga_prime",
    "p4te",
    "dbb",
    "p4qcn",
    "dcqcn_cp",
    "p4qos",
    "p4qos_codel",
    "p4qos_interval",
    "noaqm",
    "codel",
    "prio",
];

/// Why `cfg` cannot run in parallel mode, as the one line the user gets
/// (`None`: it can, or `run.threads` is unset).
pub fn refusal(cfg: &Config) -> Option<String> {
    cfg.run.threads?;
    let what: Option<String> = {
        use crate::config::TopologyKind;
        let t = &cfg.topology;
        let scheme = cfg.scheme.kind.name();
        if !matches!(t.kind, TopologyKind::FatTree | TopologyKind::LeafSpine) && !t.partitioned {
            Some(format!(
                "topology.kind {:?} without topology.partitioned = true (a single-thread run of it has no lookahead: it releases a TCP receiver at its sender's completion and checks for the run's end before every event, which partitions cannot; topology.partitioned = true cuts it by racks and gives both modes the lookahead, as a fat_tree or leaf_spine has, which changes its results from those with the key off)",
                if t.kind == TopologyKind::Custom { "custom" } else { "hula3tier" }
            ))
        } else if !SCHEMES.contains(&scheme) {
            Some(format!(
                "scheme.kind {scheme:?} (only {})",
                SCHEMES.join(", ")
            ))
        } else if t.pfc.enabled && t.pfc.deadlock_ms > 0.0 && t.kind != TopologyKind::Custom && {
            // The next check is armed at the end of a window (`pfc_window`):
            // half of deadlock_ms must be at least the lookahead, a fat
            // tree's, leaf-spine's or hula3tier's link delay (`run_parallel`
            // checks it on the built network, where a custom file's links
            // give the lookahead).
            let after = SimTime::from_us_f64(t.pfc.deadlock_ms * 1000.0);
            after.ps() / 2 < SimTime::from_us_f64(t.link_delay_us).ps()
        } {
            Some(format!(
                "topology.pfc.deadlock_ms = {} below twice topology.link_delay_us (the lookahead: the deadlock detector's next check is armed at the end of a window; use deadlock_ms >= {} or 0, the detector off)",
                t.pfc.deadlock_ms,
                2.0 * t.link_delay_us / 1000.0
            ))
        } else if t.link_loss_rate > 0.0 && !t.link_loss_per_link {
            Some(
                "topology.link_loss_rate with one random stream for every link (the default: it is drawn in the order of the whole run's arrivals, which the partitions make side by side; drawing it for them before each window would need every packet's arrival time, which the wires do not keep for the first packet; topology.link_loss_per_link = true gives each link direction its own stream, drawn alike in both modes, with other draws than the shared stream's)"
                    .into(),
            )
        } else if cfg.transport.kind == pisanet_transport::params::TransportKind::Udp {
            Some(
                "transport.kind \"udp\" (UDP and rate-based flows: whether a flow is done is decided at each event of either end from both ends' state and the sender's NIC queue at that instant (received against sent bytes, the drain deadline), and it ends for both ends at once; in another partition that state is known only a lookahead later, and delaying the decision would change single-thread results)"
                    .into(),
            )
        } else {
            cfg.workload.groups.iter().enumerate().find_map(|(k, g)| {
                let udp = crate::config::group_transport(g, cfg) == Transport::Udp;
                // NOTE: a flow list's UDP rows are refused as the list is
                // read (run.rs, `build_generator`).
                if udp {
                    Some(format!(
                        "workload.groups[{k}] with UDP (UDP and rate-based flows: whether a flow is done is decided at each event of either end from both ends' state at that instant, known in another partition only a lookahead later)"
                    ))
                } else {
                    None
                }
            })
        }
    };
    what.map(|w| format!("run.threads: the parallel mode does not support {w} yet; unset run.threads to run it on one thread (it supports fat_tree and leaf_spine topologies, hula3tier and custom ones with topology.partitioned, every scheme, TCP flows (duration-limited too), link failures, random link loss with topology.link_loss_per_link, per-flow measurement, samples, capture (metrics.pcap, metrics.trace), PFC with its deadlock detector, and streaming: docs/architecture.md, \"Parallel mode\")"))
}

/// A partition's view of the cut: which nodes are its own, and what it
/// hands to the others at the end of a window.
pub(crate) struct Part {
    /// This partition.
    pub(crate) me: u32,
    /// The partition of every node.
    pub(crate) node_part: Vec<u32>,
    /// Per global port: its peer is in another partition.
    pub(crate) remote_port: Vec<bool>,
    /// Per global port: the partition of its peer.
    port_to: Vec<u32>,
    /// Packets put this window on links to other partitions, by receiving
    /// partition: (arrival time, sending port, packet).
    outbox: Vec<Vec<Crossing>>,
    /// Data of senders in other partitions dropped here this window:
    /// (flow, time, payload bytes, the host that sent it).
    pub(crate) losses: Vec<(FlowId, SimTime, u32, HostId)>,
    /// Duration-limited flows whose senders closed here this window, with
    /// their receivers in other partitions: (flow, receiver, when, size).
    closed: Vec<(FlowId, HostId, SimTime, u64)>,
    /// Links to other partitions that failed this window: (sending port,
    /// packets it put in the outbox this window before its last failure).
    /// They were on the wire when it failed; the receiving partition adds
    /// them to the wire's lost count (`World::link_event_part`).
    lost_on_wire: Vec<(PortIdx, u32)>,
    /// Per-flow measurement that left this window (`meter_part`): (flow,
    /// which side, the (time, key) of the event that closed it, its state).
    meters: Vec<MeterPart>,
    /// Partition 0 only: the flows that arrived this window (their
    /// attributes), for the collector to open their rows in id order.
    started: Vec<(FlowId, FlowRecord)>,
    /// What flows left here this window (`Ended`), handed to the
    /// [`Collector`] at its end: nothing of a flow stays in a partition
    /// once it has ended there.
    pub(crate) ended: Vec<Ended>,
    /// With PFC's deadlock detector: the (time, key) of the event being
    /// handled, of the PAUSE frames received this window (each could arm
    /// the detector), and what this partition's ports showed at each
    /// check this window (`pfc_window`).
    pub(crate) at: (SimTime, u64),
    pub(crate) pfc_pauses: Vec<(SimTime, u64)>,
    pub(crate) pfc_checks: Vec<super::pfc::PfcSnapshot>,
}

/// Which part of a flow's row an [`Ended`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// The sender completed (or the run stopped with it running) here: the
    /// flow's record; its receiver (here or elsewhere) is not yet released.
    Sender,
    /// The receiver of a sender in another partition was released here:
    /// what it measured (`reordered`, `delivered`).
    Receiver,
    /// Sender and receiver are here and the receiver was released: the
    /// whole record.
    Whole,
}

/// A flow's part of its row, from the partition where it ended.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ended {
    pub(crate) id: FlowId,
    pub(crate) side: Side,
    /// The (time, key) of the event that released the receiver: where a
    /// single-thread run writes the flow's row (`None` when the run stopped).
    pub(crate) at: Option<(SimTime, u64)>,
    pub(crate) rec: FlowRecord,
}

/// A flow's measurement leaving a partition: (flow, which side, the
/// (time, key) of the event that closed it, its state).
type MeterPart = (FlowId, Side, (SimTime, u64), Box<FlowMeter>);

/// A packet on a link between partitions: (arrival time, sending port,
/// packet, its queueing metadata). It left the sender's arena and enters
/// the receiver's at the end of the window.
type Crossing = (SimTime, PortIdx, Packet, TmMeta);

/// A wire's packets: (arrival time, arena id).
use super::port::Wire;

impl Part {
    /// A packet leaves on a link to another partition (the transmit hook).
    #[inline]
    pub(crate) fn send(&mut self, arrive: SimTime, p: PortIdx, pkt: Packet, tm: TmMeta) {
        let to = self.port_to[p as usize] as usize;
        self.outbox[to].push((arrive, p, pkt, tm));
    }

    #[inline]
    pub(crate) fn local_host(&self, h: HostId) -> bool {
        self.node_part[h as usize] == self.me
    }

    /// Flow `id`'s part of its row leaves this partition (`Side`): released
    /// by the event at (`now`, its key) (`Ev::Release`), or, with `now`
    /// `None`, as the run stops.
    pub(crate) fn end(&mut self, id: FlowId, rec: &FlowRecord, now: Option<SimTime>) {
        let side = match (self.local_host(rec.src), self.local_host(rec.dst)) {
            (true, true) => Side::Whole,
            (true, false) => Side::Sender,
            _ => Side::Receiver,
        };
        self.ended.push(Ended {
            id,
            side,
            at: now.map(|t| (t, Ev::Release(id).key(t))),
            rec: *rec,
        });
    }

    /// A duration-limited flow's sender closed at `now` (its application's
    /// duration is over): the flow's size is what it sent (`rec.bytes`).
    /// A single-thread run tells the receiver at once
    /// (`TcpReceiver::set_size`); a receiver in another partition learns
    /// it at the end of the window, before anything the sender sends at
    /// or after `now` (its FIN) can reach it.
    pub(crate) fn closed(&mut self, id: FlowId, rec: &FlowRecord, now: SimTime) {
        if !self.local_host(rec.dst) {
            self.closed.push((id, rec.dst, now, rec.bytes));
        }
    }

    /// Flow `id`'s sender completed here at `rec.finish`, in the event at
    /// `at` (known with per-flow measurement): the collector learns when
    /// (what losses elsewhere it is charged), and, if its receiver is in
    /// another partition, that partition releases it (and stops measuring
    /// it from `at` on).
    pub(crate) fn sender_completed(
        &mut self,
        id: FlowId,
        rec: &FlowRecord,
        at: Option<(SimTime, u64)>,
    ) {
        self.ended.push(Ended {
            id,
            side: Side::Sender,
            at,
            rec: *rec,
        });
    }

    /// Flow `id`'s measurement here (`fm`) is over, closed by the event at
    /// `at` (its sender's completion, or the end of the run): it goes to
    /// the collector, which puts the sender's and the receiver's parts
    /// together and closes it (`Collector::write`).
    pub(crate) fn meter_part(
        &mut self,
        id: FlowId,
        rec: &FlowRecord,
        at: (SimTime, u64),
        fm: Option<Box<FlowMeter>>,
    ) {
        let side = match (self.local_host(rec.src), self.local_host(rec.dst)) {
            (true, true) => Side::Whole,
            (true, false) => Side::Sender,
            _ => Side::Receiver,
        };
        if let Some(fm) = fm {
            self.meters.push((id, side, at, fm));
        }
    }
}

/// The partition of every node of `topo` (fat tree: pods; leaf-spine:
/// groups of leaves; with `general`, `topology.partitioned`, any other
/// topology: [`partition_general`]), and how many there are.
pub fn partition(topo: &Topology, general: bool) -> Result<(Vec<u32>, u32), String> {
    let n = topo.nodes.len();
    let nh = topo.n_hosts as usize;
    let racks = topo.racks.len() as u32;
    // The partition of each rack (its ToR and hosts).
    let (rack_part, parts): (Vec<u32>, u32) = match topo.kind.as_str() {
        "fat_tree" => {
            // racks = k * k/2, rack = pod * k/2 + edge.
            let k = (1..=64u32)
                .find(|k| k * k / 2 == racks)
                .ok_or("run.threads: not a fat tree")?;
            ((0..racks).map(|r| r / (k / 2)).collect(), k)
        }
        "leaf_spine" => {
            // Groups of consecutive leaves, at most MAX_GROUPS of them.
            let p = racks.clamp(1, MAX_GROUPS);
            ((0..racks).map(|r| r * p / racks).collect(), p)
        }
        _ if general => return Ok(partition_general(topo)),
        other => return Err(format!("run.threads: cannot partition a {other} topology")),
    };
    let mut part = vec![u32::MAX; n];
    for (r, &tor) in topo.racks.iter().enumerate() {
        part[tor as usize] = rack_part[r];
    }
    for h in 0..nh {
        part[h] = rack_part[topo.host_rack[h] as usize];
    }
    // The other switches: a fat tree's aggregation switch goes with the
    // pod of its first downlink (an edge); the top tier (cores, spines) is
    // dealt round-robin.
    let mut top = 0u32;
    for id in nh..n {
        if part[id] != u32::MAX {
            continue;
        }
        let node = &topo.nodes[id];
        let tier = match node.kind {
            NodeKind::Switch { tier } => tier,
            NodeKind::Host => 0,
        };
        let below = node
            .ports
            .iter()
            .map(|p| p.peer_node as usize)
            .find(|&peer| match topo.nodes[peer].kind {
                NodeKind::Switch { tier: t } => t < tier && part[peer] != u32::MAX,
                NodeKind::Host => false,
            });
        let top_tier = topo.kind == "leaf_spine" || tier >= 2;
        part[id] = match below {
            Some(peer) if !top_tier => part[peer],
            _ => {
                top += 1;
                (top - 1) % parts
            }
        };
    }
    Ok((part, parts))
}

/// At most this many groups of racks (a leaf-spine's, and
/// [`partition_general`]'s).
const MAX_GROUPS: u32 = 16;

/// A cut of any topology (custom files, hula3tier; `topology.partitioned`),
/// from its graph alone:
///
/// 1. Racks (each switch with hosts, in node order, with its hosts) go in
///    at most [`MAX_GROUPS`] groups of consecutive racks, as a
///    leaf-spine's leaves.
/// 2. Every other switch, in order of its hop distance from the nearest
///    rack switch (then node order), joins the partition of its
///    neighbours one hop closer to the racks if they are all in one (an
///    aggregation switch of one group), else it is dealt round-robin over
///    the partitions (a spine or core, which links several).
/// 3. The nodes joined by links of zero delay (possible in a custom file)
///    are put in one partition, with the hosts of their racks, the one of
///    their lowest node, so that every link between partitions has a
///    positive delay: the lookahead.
///
/// Partitions left empty by step 3 are dropped and the rest renumbered in
/// order. The cut depends on the topology only, never on the number of
/// threads; which cut it is does not change any result (every partition
/// runs the single-thread run's events of its nodes), only the speed and,
/// through the smallest delay of a link it cuts, the lookahead.
pub fn partition_general(topo: &Topology) -> (Vec<u32>, u32) {
    let n = topo.nodes.len();
    let nh = topo.n_hosts as usize;
    let racks = topo.racks.len() as u32;
    let groups = racks.clamp(1, MAX_GROUPS);
    let mut part = vec![u32::MAX; n];
    for (r, &tor) in topo.racks.iter().enumerate() {
        part[tor as usize] = r as u32 * groups / racks.max(1);
    }
    for h in 0..nh {
        part[h] = part[topo.racks[topo.host_rack[h] as usize] as usize];
    }
    // Hop distance of every switch from the nearest rack switch, over
    // switch-to-switch links (every switch is reached: the topology is
    // connected and hosts hang off rack switches only).
    let mut dist = vec![u32::MAX; n];
    let mut queue: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    for &tor in &topo.racks {
        dist[tor as usize] = 0;
        queue.push_back(tor as usize);
    }
    let mut order = Vec::new();
    while let Some(id) = queue.pop_front() {
        if dist[id] > 0 {
            order.push(id);
        }
        for p in &topo.nodes[id].ports {
            let peer = p.peer_node as usize;
            if peer >= nh && dist[peer] == u32::MAX {
                dist[peer] = dist[id] + 1;
                queue.push_back(peer);
            }
        }
    }
    order.sort_by_key(|&id| (dist[id], id));
    let mut dealt = 0u32;
    for &id in &order {
        let mut closer = topo.nodes[id]
            .ports
            .iter()
            .map(|p| p.peer_node as usize)
            .filter(|&peer| peer >= nh && dist[peer] + 1 == dist[id])
            .map(|peer| part[peer]);
        let first = closer.next();
        part[id] = match first {
            Some(p) if closer.all(|q| q == p) => p,
            _ => {
                dealt += 1;
                (dealt - 1) % groups
            }
        };
    }
    for p in part.iter_mut().filter(|p| **p == u32::MAX) {
        // Not reached from a rack over switches: cannot happen in a
        // connected topology whose hosts hang off switches; kept defined.
        *p = 0;
    }
    // Zero-delay links never cross: union-find over them, each set taking
    // its lowest node's partition.
    let mut root: Vec<usize> = (0..n).collect();
    fn find(root: &mut [usize], mut x: usize) -> usize {
        while root[x] != x {
            root[x] = root[root[x]];
            x = root[x];
        }
        x
    }
    // A host stays with its ToR, whatever the delay of its link.
    for (id, node) in topo.nodes.iter().enumerate() {
        for p in &node.ports {
            if p.delay == SimTime::ZERO || id < nh {
                let (a, b) = (find(&mut root, id), find(&mut root, p.peer_node as usize));
                // The lower node is the root: a set's root is its lowest.
                let (lo, hi) = if a < b { (a, b) } else { (b, a) };
                root[hi] = lo;
            }
        }
    }
    for id in 0..n {
        let r = find(&mut root, id);
        part[id] = part[r];
    }
    // Number the partitions in use in order of their first node.
    let mut used = vec![u32::MAX; groups as usize];
    let mut next = 0u32;
    for p in part.iter_mut() {
        let u = &mut used[*p as usize];
        if *u == u32::MAX {
            *u = next;
            next += 1;
        }
        *p = *u;
    }
    (part, next)
}

/// The smallest propagation delay of a link between two partitions (`None`
/// if no link crosses).
pub fn lookahead(w: &World, part: &[u32]) -> Option<SimTime> {
    w.ports
        .iter()
        .filter(|p| part[p.node as usize] != part[w.ports[p.peer as usize].node as usize])
        .map(|p| p.delay)
        .min()
}

/// Statistics of a parallel run (summary.json `parallel`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ParStats {
    pub threads: u32,
    pub partitions: u32,
    pub windows: u64,
    pub lookahead: SimTime,
    /// Packets handed from one partition to another.
    pub cross_packets: u64,
    /// Events of the busiest partition (the critical path is at least this).
    pub max_partition_events: u64,
    /// For each thread count of [`BOUND_THREADS`]: the sum over windows of
    /// the events of the busiest thread when each window's partitions are
    /// dealt to that many threads (largest first, each to the least loaded
    /// thread). Events divided by it bound the speed-up by the load balance
    /// alone, before any cost of synchronisation (docs/performance.md,
    /// "Parallel mode").
    pub critical_events: [u64; BOUND_THREADS.len()],
}

/// The thread counts `ParStats::critical_events` is kept for.
pub const BOUND_THREADS: [u32; 6] = [2, 4, 8, 16, 24, 64];

/// Adds one window's busiest-thread events for each of [`BOUND_THREADS`]:
/// `per_part` holds each partition's events in the window.
fn bound_window(per_part: &mut [u64], critical: &mut [u64; BOUND_THREADS.len()]) {
    per_part.sort_unstable_by(|a, b| b.cmp(a));
    let mut bins = [0u64; 64];
    for (k, &n) in BOUND_THREADS.iter().enumerate() {
        let bins = &mut bins[..n as usize];
        bins.fill(0);
        for &e in per_part.iter() {
            if let Some(min) = bins.iter_mut().min() {
                *min += e;
            }
        }
        critical[k] += bins.iter().copied().max().unwrap_or(0);
    }
}

impl World {
    /// Makes this world partition `me` of the cut `node_part`.
    pub(crate) fn make_partition(&mut self, me: u32, node_part: Vec<u32>) {
        let port_to: Vec<u32> = self
            .ports
            .iter()
            .map(|p| node_part[self.ports[p.peer as usize].node as usize])
            .collect();
        let remote_port = port_to.iter().map(|&to| to != me).collect();
        let parts = node_part.iter().max().map_or(1, |&m| m as usize + 1);
        if let Some(t) = self.tap.as_deref_mut() {
            t.make_partition();
        }
        self.part = Some(Box::new(Part {
            me,
            node_part,
            remote_port,
            port_to,
            outbox: (0..parts).map(|_| Vec::new()).collect(),
            losses: Vec::new(),
            closed: Vec::new(),
            lost_on_wire: Vec::new(),
            meters: Vec::new(),
            started: Vec::new(),
            ended: Vec::new(),
            at: (SimTime::ZERO, 0),
            pfc_pauses: Vec::new(),
            pfc_checks: Vec::new(),
        }));
    }

    /// `World::run`'s start, for a partition: every partition draws the
    /// whole flow sequence (the generator is cheap and must stay one
    /// sequence), and arms its own switches.
    fn start_partition(&mut self) {
        self.pending_flow = self.gen.next();
        if let Some(f) = &self.pending_flow {
            self.q.schedule(f.start, Ev::NextFlow);
        }
        // Link failures: the partitions of the link's two ends each apply
        // their own end at the event's instant (`link_event_part`).
        let me = self.part.as_ref().map_or(0, |p| p.me);
        for i in 0..self.link_events.len() {
            let e = &self.link_events[i];
            let node_part = &self.part.as_ref().expect("parallel mode").node_part;
            let mine = e
                .ports
                .iter()
                .any(|&p| node_part[self.ports[p as usize].node as usize] == me);
            if mine {
                self.q.schedule(e.at, Ev::LinkEvent(i as u32));
            }
        }
        // Samples: every partition samples every selected port at the
        // single-thread run's instants (the rows line up); `merge` keeps
        // each value from the port's own partition.
        if let Some(iv) = self.sample_interval {
            self.q.schedule(iv, Ev::Sample);
        }
        if let Some(iv) = self.rates.interval {
            self.rates.last = vec![(0, 0); self.rates.ports.len()];
            self.q.schedule(iv, Ev::RateSample);
        }
        if let Forwarding::Pisa(switches) = &self.fwd {
            let n = switches.len() as u32;
            for sw in 0..n {
                let node = (sw + self.topo.n_hosts) as usize;
                if self.part.as_ref().is_some_and(|p| p.node_part[node] == me) {
                    self.arm_switch(sw);
                }
            }
        }
    }

    /// Runs this partition's events before `end` (and not after `max_time`).
    fn run_window(&mut self, end: SimTime, max_time: SimTime) {
        let copy = self.part.as_ref().is_some_and(|p| p.me != 0);
        let detector = self
            .pfc
            .as_ref()
            .is_some_and(|p| p.deadlock_after.is_some());
        while let Some((now, ev)) = self.q.next_before(end, max_time) {
            if detector {
                if let Some(part) = self.part.as_deref_mut() {
                    part.at = (now, ev.key(now));
                }
            }
            if copy && matches!(ev, Ev::Sample | Ev::RateSample | Ev::PfcCheck) {
                // Every partition runs its copy: one counts (`start_partition`).
                self.q.uncount();
            }
            if let Ev::LinkEvent(i) = ev {
                if let Some(t) = self.tap.as_deref_mut() {
                    t.at = (now, ev.key(now), 0);
                }
                self.link_event_part(now, i);
                continue;
            }
            if let Some(m) = self.meter.as_deref_mut() {
                // Per-flow measurement keys what it holds and writes by
                // the event (`Meter::at`).
                m.at = (now, ev.key(now));
            }
            if let Some(t) = self.tap.as_deref_mut() {
                // So do capture and trace (`Tap::merge`).
                t.at = (now, ev.key(now), 0);
            }
            self.handle(now, ev);
        }
    }

    /// Applies what this partition's receivers measured and held this
    /// window (`FlowMeter::pending`), in event order.
    fn apply_held_measurements(&mut self) {
        let Some(m) = self.meter.as_deref_mut() else {
            return;
        };
        let touched = std::mem::take(&mut m.touched);
        for &id in &touched {
            if let Some(Some(af)) = self.active.get_mut(id as usize) {
                if let Some(fm) = af.meter.as_deref_mut() {
                    m.apply_pending(fm, id, None);
                }
            }
        }
        m.touched = touched;
        m.touched.clear();
    }

    /// `on_link_event` (sim/port.rs) in a partition: a link's state is
    /// read by the sender of each direction (the port's `up`, and its
    /// switch's control plane, told of the change) and by its receiver
    /// (the wire's `lost`: the packets on the wire when the link failed
    /// are lost as they arrive). Each partition applies what it owns at
    /// the event's instant, in the event's (time, key) place, as the
    /// single-thread run does: the sender's side sets `up` and tells its
    /// switch; the receiver's side counts the packets on its copy of the
    /// wire; the packets the sender put on the link this window, still in
    /// its outbox, were on the wire too, and are added to the count when
    /// they are handed over (`exchange`). The event is counted once, by
    /// the partition of its first port's node.
    fn link_event_part(&mut self, now: SimTime, i: u32) {
        let (up, ends) = {
            let e = &self.link_events[i as usize];
            (e.up, e.ports)
        };
        let part = self.part.as_deref().expect("parallel mode");
        let me = part.me;
        let owners = ends.map(|p| {
            let port = &self.ports[p as usize];
            (
                part.node_part[port.node as usize],
                part.node_part[port.peer_node as usize],
            )
        });
        if owners[0].0 != me {
            self.q.uncount();
        }
        for (end, (p, (port_owner, peer_owner))) in ends.into_iter().zip(owners).enumerate() {
            if let Some(t) = self.tap.as_deref_mut() {
                // What each end does, in the single-thread run's order.
                t.at.2 = end as u64;
            }
            if peer_owner == me && !up {
                let wire = &mut self.ports[p as usize].wire;
                wire.lost = wire.len() as u32;
            }
            if port_owner != me {
                continue;
            }
            if peer_owner != me && !up {
                let part = self.part.as_deref_mut().expect("parallel mode");
                let sent = part.outbox[peer_owner as usize]
                    .iter()
                    .filter(|c| c.1 == p)
                    .count() as u32;
                // NOTE: a later failure in the same window replaces the
                // count, as it replaces the wire's (`on_link_event`).
                match part.lost_on_wire.iter_mut().find(|x| x.0 == p) {
                    Some(x) => x.1 = sent,
                    None => part.lost_on_wire.push((p, sent)),
                }
            }
            self.set_port_up(now, p, up);
        }
    }

    /// A flow arrives in a partition: the sender's partition starts it as
    /// the single-thread run does; the receiver's partition (if another)
    /// makes the receiver; every other partition keeps only its record.
    pub(crate) fn start_flow_part(&mut self, now: SimTime, f: FlowSpec) {
        let part = self.part.as_deref_mut().expect("parallel mode");
        let id = f.id;
        let prio = f.attrs.priority.unwrap_or(0);
        // Partition 0 tells the collector the flow arrived (its row opens,
        // in id order); the receiver's partition keeps it with the receiver
        // and fills in what it measured.
        let rec = FlowRecord {
            src: f.src,
            dst: f.dst,
            bytes: f.bytes,
            class: f.class,
            transport: 0,
            prio,
            group: f.group,
            arrival: now,
            first_sent: None,
            finish: None,
            retransmissions: 0,
            reordered: 0,
            lost_packets: 0,
            lost_bytes: 0,
            ideal: SimTime::ZERO,
            delivered: 0,
        };
        let (src_here, dst_here) = (part.local_host(f.src), part.local_host(f.dst));
        if part.me == 0 {
            part.started.push((id, rec));
        }
        if let Some(t) = self.tap.as_deref_mut() {
            // One `NextFlow` may start flows in several partitions: their
            // rows go in flow order, as a single-thread run writes them.
            t.at.2 = u64::from(id);
        }
        if src_here {
            return self.start_flow(now, f);
        }
        if !dst_here {
            return;
        }
        let Plan::Tcp(cfg) = self.plan(&f) else {
            // `refusal` keeps rate-based flows out of parallel runs.
            self.violations
                .push(format!("flow {id}: a rate-based flow in a parallel run"));
            return;
        };
        let ends = self.flow_ends(id, &f, prio);
        // The sender here is never started: it only fills the pair.
        let tx = TcpSender::new(&cfg, ends, f.bytes);
        let rx = TcpReceiver::new(&cfg, ends.reversed(), f.bytes);
        if self.active.len() <= id as usize {
            self.active.resize_with(id as usize + 1, || None);
        }
        // A receiver whose sender is elsewhere holds what it measures
        // until the end of the window (`FlowMeter::pending`).
        let meter = self.meter.as_deref_mut().map(|m| {
            let mut fm = m.new_flow(f.attrs.deadline);
            fm.pending = Some(Vec::new());
            fm
        });
        self.active[id as usize] = Some(Box::new(ActiveFlow::new(
            ends.src_addr,
            rec,
            Endpoints::Tcp { tx, rx },
            false,
            None,
            meter,
        )));
        // NOTE: not counted in `active_count`: the flow is active in its
        // sender's partition (the run ends when no partition has one).
    }

    /// `lose` in parallel mode: data of a sender in another partition is
    /// logged, to be charged by the collector (`Collector::window`).
    /// Returns whether it was (else `lose` charges it here as usual). The
    /// sender is the host whose address the packet carries (data only:
    /// payload > 0): whether it is the flow's sender, the collector checks.
    #[cold]
    pub(crate) fn lose_elsewhere(&mut self, pkt: &Packet) -> bool {
        let pisanet_net::packet::L4::Tcp(t) = pkt.l4 else {
            return false;
        };
        if t.payload == 0 {
            // Charged nowhere (`lose`).
            return false;
        }
        let Some(part) = self.part.as_deref_mut() else {
            return false;
        };
        let Some(host) = self.topo.host_of_addr(pkt.ip.src) else {
            // Not a host's: charged to no flow.
            return true;
        };
        if part.local_host(host) {
            return false;
        }
        part.losses.push((pkt.flow, self.q.now(), t.payload, host));
        true
    }

    /// `lose` of a TCP packet whose flow has no state here: the flow's
    /// sender, in this partition, completed at this instant, before the
    /// drop (the receiver lingers in another partition). Charged as a
    /// single-thread run charges it to the lingering flow.
    #[cold]
    pub(crate) fn lose_after_completion(&mut self, pkt: &Packet, now: SimTime, payload: u32) {
        let src_addr = |h: HostId| self.topo.host_addr[h as usize];
        let Some(part) = self.part.as_deref_mut() else {
            return;
        };
        // This window's completions (the drop is at the instant of one).
        let Some(e) = part
            .ended
            .iter_mut()
            .rev()
            .find(|e| e.id == pkt.flow && e.side == Side::Sender)
        else {
            return;
        };
        let rec = &mut e.rec;
        if rec.finish == Some(now) && pkt.ip.src == src_addr(rec.src) {
            rec.lost_packets += 1;
            rec.lost_bytes += u64::from(payload);
        }
    }

    /// The sender of `id`, in another partition, closed at `at` with
    /// `size` bytes sent (`Part::closed`): the receiver here is told, as
    /// a single-thread run tells it at `at`.
    fn closed_elsewhere(&mut self, id: FlowId, at: SimTime, size: u64) {
        if let Some(Some(af)) = self.active.get_mut(id as usize) {
            af.rec.bytes = size;
            if let Endpoints::Tcp { rx, .. } = &mut af.ends {
                rx.set_size(at, size);
            }
        }
    }

    /// The sender of `id` completed at `finish` in another partition: the
    /// receiver here lingers until `finish + lookahead` (as in a
    /// single-thread run, `complete_flow`), then `release` checks what it
    /// delivered. Called at the end of the window, which is no later than
    /// `finish + lookahead`.
    ///
    /// With per-flow measurement, what the receiver measured before the
    /// completion's event `at` (held this window, `FlowMeter::pending`)
    /// is applied, the rest dropped (a single-thread run measures nothing
    /// after it), and the measurement is returned for the collector.
    fn sender_completed_elsewhere(
        &mut self,
        id: FlowId,
        finish: SimTime,
        at: Option<(SimTime, u64)>,
    ) -> Option<Box<FlowMeter>> {
        let Some(Some(af)) = self.active.get_mut(id as usize) else {
            return None;
        };
        af.finish_sender(finish);
        self.q.schedule(finish + self.lookahead, Ev::Release(id));
        let (m, mut fm) = (self.meter.as_deref_mut()?, af.meter.take()?);
        m.apply_pending(&mut fm, id, at);
        Some(fm)
    }
}

/// The end of a window: packets that crossed go to their receiving
/// partition's wire (each partition takes its own, in sending-partition
/// order, in parallel), completions to the receivers' partitions (in
/// partition order): the result does not depend on which thread ran what.
fn exchange(worlds: &mut [World], parallel: bool, stats: &mut ParStats, collector: &mut Collector) {
    let n = worlds.len();
    // inbox[to][from]: what partition `from` sent to `to` this window.
    let mut inbox: Vec<Vec<Vec<Crossing>>> = (0..n).map(|_| Vec::with_capacity(n)).collect();
    for w in worlds.iter_mut() {
        let part = w.part.as_deref_mut().expect("parallel mode");
        for (to, out) in part.outbox.iter_mut().enumerate() {
            stats.cross_packets += out.len() as u64;
            inbox[to].push(std::mem::take(out));
        }
    }
    let deliver = |w: &mut World, lists: &mut Vec<Vec<Crossing>>| {
        for list in lists.iter_mut() {
            for (arrive, p, pkt, tm) in list.drain(..) {
                let id = w.arena.insert_with(pkt, tm);
                let port = &mut w.ports[p as usize];
                if port.wire.is_empty() {
                    w.q.schedule(arrive, Ev::Arrive(p));
                }
                port.wire.push_back((arrive, id));
            }
        }
    };
    if parallel {
        worlds
            .par_iter_mut()
            .zip(inbox.par_iter_mut())
            .for_each(|(w, lists)| deliver(w, lists));
    } else {
        for (w, lists) in worlds.iter_mut().zip(inbox.iter_mut()) {
            deliver(w, lists);
        }
    }
    // Packets put on links that failed this window were on the wire when
    // they failed: the receiving partition drops them as they arrive.
    for i in 0..n {
        let part = worlds[i].part.as_deref_mut().expect("parallel mode");
        let lost = std::mem::take(&mut part.lost_on_wire);
        for &(p, sent) in &lost {
            let to = part.port_to[p as usize] as usize;
            worlds[to].ports[p as usize].wire.lost += sent;
        }
    }
    // The emptied buffers go back, to keep their capacity.
    for (to, lists) in inbox.into_iter().enumerate() {
        for (from, list) in lists.into_iter().enumerate() {
            if let Some(part) = worlds[from].part.as_deref_mut() {
                part.outbox[to] = list;
            }
        }
    }
    // What flows left: a sender that completed here with its receiver in
    // another partition has it released there; every part goes to the
    // collector, which writes the rows complete this window.
    collector.open_flows(&mut worlds[0]);
    // Duration-limited senders that closed this window tell their
    // receivers the flow's size.
    for i in 0..n {
        let part = worlds[i].part.as_deref_mut().expect("parallel mode");
        let mut closed = std::mem::take(&mut part.closed);
        for &(id, dst, at, size) in &closed {
            let to = node_part(&worlds[i])[dst as usize] as usize;
            worlds[to].closed_elsewhere(id, at, size);
        }
        closed.clear();
        worlds[i].part.as_deref_mut().expect("parallel mode").closed = closed;
    }
    for i in 0..n {
        let part = worlds[i].part.as_deref_mut().expect("parallel mode");
        let mut ended = std::mem::take(&mut part.ended);
        for e in &ended {
            if let (Side::Sender, Some(finish)) = (e.side, e.rec.finish) {
                let to = node_part(&worlds[i])[e.rec.dst as usize] as usize;
                if to != i {
                    if let Some(fm) = worlds[to].sender_completed_elsewhere(e.id, finish, e.at) {
                        let end = e.at.unwrap_or_default();
                        collector.meter_part(e.id, Side::Receiver, end, fm);
                    }
                }
            }
            collector.take(e);
        }
        ended.clear();
        worlds[i].part.as_deref_mut().expect("parallel mode").ended = ended;
    }
    // Per-flow measurement: what receivers held this window is applied
    // (their senders did not complete in it), and what left goes to the
    // collector.
    for w in worlds.iter_mut() {
        w.apply_held_measurements();
        collector.meters_from(w);
    }
    collector.charge_losses(worlds);
    collector.write_ready();
}

/// PFC's deadlock detector at the end of a window: a single-thread run
/// arms it at the first PAUSE received while no check is pending (a check
/// `deadlock_after` later) and, at each check, reads every port: it ends
/// the run on a deadlock, else looks again half of `deadlock_after` later
/// while some queue is paused, or disarms. Here every partition logged
/// the PAUSE frames it received and took its ports' part at each check
/// (each runs its copy of the check, at the single-thread run's place in
/// its events); the coordinator replays the arming and the checks in
/// (time, key) order over the whole network, and schedules the next
/// checks in every partition: no earlier than the window's end, as
/// `deadlock_after / 2` is at least the lookahead (`run_parallel`).
/// The state (pending, the deadlock found) is partition 0's.
fn pfc_window(worlds: &mut [World]) {
    let Some(after) = worlds[0].pfc.as_ref().and_then(|p| p.deadlock_after) else {
        return;
    };
    let mut pauses: Vec<(SimTime, u64)> = Vec::new();
    let mut checks: Vec<(SimTime, Vec<super::pfc::PfcSnapshot>)> = Vec::new();
    for w in worlds.iter_mut() {
        let part = w.part.as_deref_mut().expect("parallel mode");
        pauses.append(&mut part.pfc_pauses);
        for snap in part.pfc_checks.drain(..) {
            match checks.iter_mut().find(|c| c.0 == snap.at) {
                Some(c) => c.1.push(snap),
                None => checks.push((snap.at, vec![snap])),
            }
        }
    }
    if pauses.is_empty() && checks.is_empty() {
        return;
    }
    // (time, key, the check's snapshots) in event order.
    type Step = (SimTime, u64, Option<Vec<super::pfc::PfcSnapshot>>);
    let mut steps: Vec<Step> = pauses.into_iter().map(|(t, k)| (t, k, None)).collect();
    for (t, snaps) in checks {
        steps.push((t, Ev::PfcCheck.key(t), Some(snaps)));
    }
    steps.sort_by_key(|s| (s.0, s.1));
    let mut arm: Vec<SimTime> = Vec::new();
    for (t, _, snaps) in steps {
        let pending = worlds[0].pfc.as_ref().is_some_and(|p| p.check_pending);
        let Some(snaps) = snaps else {
            if !pending {
                set_pending(&mut worlds[0], true);
                arm.push(t + after);
            }
            continue;
        };
        let Some(snap) = super::pfc::PfcSnapshot::join(snaps) else {
            continue;
        };
        if let Some(msg) = worlds[0].pfc_verdict(t, &snap) {
            let pfc = worlds[0].pfc.as_deref_mut().expect("PFC");
            pfc.fatal.get_or_insert(msg);
            pfc.check_pending = false;
            return;
        }
        set_pending(&mut worlds[0], snap.any_paused);
        if snap.any_paused {
            arm.push(t + super::pfc::pfc_check_step(after));
        }
    }
    for at in arm {
        for w in worlds.iter_mut() {
            w.q.schedule(at, Ev::PfcCheck);
        }
    }
}

fn set_pending(w: &mut World, pending: bool) {
    if let Some(pfc) = w.pfc.as_deref_mut() {
        pfc.check_pending = pending;
    }
}

fn node_part(w: &World) -> &[u32] {
    &w.part.as_deref().expect("parallel mode").node_part
}

/// A flow whose row is not written yet.
struct Open {
    /// Its attributes, then the sender's record once it came.
    rec: FlowRecord,
    /// The sender's record came (`Side::Sender` or `Side::Whole`).
    sender: bool,
    /// What its receiver measured in another partition, once released
    /// there: (reordered, delivered).
    recv: Option<(u32, u64)>,
    /// Data of its sender dropped in other partitions, charged (no later
    /// than the flow completed: the single-thread rule, `World::lose`).
    lost_packets: u32,
    lost_bytes: u64,
    /// Per-flow measurement: the sender's part (RTT samples, TCP
    /// counters) and the receiver's (one-way delays, deadline misses,
    /// goodput), or, with both in one partition, the whole (`rx`,
    /// `whole`); `at`: the (time, key) of the event that closed it.
    meter_tx: Option<Box<FlowMeter>>,
    meter_rx: Option<Box<FlowMeter>>,
    meter_whole: bool,
    meter_at: (SimTime, u64),
}

/// The rows of a parallel run's flows, put together from the partitions
/// at the end of each window and written in the order a single-thread run
/// writes them (by the time and key of the event that released each
/// receiver, then, when the run stops, the lingering receivers' and the
/// running flows' by id): so the table streamed to the sink, the digest
/// (folded in flow id order by [`FlowRecords`]) and the summary are the
/// single-thread run's, and memory follows the flows still open, not every
/// flow of the run.
pub struct Collector {
    pub(crate) records: FlowRecords,
    /// Per-flow measurement (`None` when off): the run's totals, folded
    /// as each flow's row is written, and the goodput rows written then.
    pub(crate) meter: Option<Meter>,
    open: std::collections::HashMap<FlowId, Open>,
    /// Rows complete this window: (time, key) of their release, id.
    ready: Vec<(SimTime, u64, FlowId)>,
    /// Inconsistencies (a part of a flow with no open row): invariant
    /// violations of the run.
    pub(crate) violations: Vec<String>,
}

impl Collector {
    /// A collector writing to `records` (`FlowRecords::new`, with the
    /// run's sink or none).
    pub fn new(records: FlowRecords) -> Self {
        Collector {
            records,
            meter: None,
            open: std::collections::HashMap::new(),
            ready: Vec::new(),
            violations: Vec::new(),
        }
    }

    /// Flows still open (not yet written).
    pub fn open_rows(&self) -> usize {
        self.open.len()
    }

    /// The flows that arrived this window (partition 0 reports them).
    fn open_flows(&mut self, w0: &mut World) {
        let part = w0.part.as_deref_mut().expect("parallel mode");
        for (id, rec) in part.started.drain(..) {
            self.records.start(id);
            self.open.insert(
                id,
                Open {
                    rec,
                    sender: false,
                    recv: None,
                    lost_packets: 0,
                    lost_bytes: 0,
                    meter_tx: None,
                    meter_rx: None,
                    meter_whole: false,
                    meter_at: (SimTime::ZERO, 0),
                },
            );
        }
    }

    /// A part of flow `id`'s measurement (`Part::meter_part`).
    fn meter_part(&mut self, id: FlowId, side: Side, at: (SimTime, u64), fm: Box<FlowMeter>) {
        let Some(o) = self.open.get_mut(&id) else {
            self.violations.push(format!(
                "parallel mode: flow {id}'s measurement ({side:?}) with no open row"
            ));
            return;
        };
        match side {
            Side::Sender => {
                o.meter_tx = Some(fm);
                o.meter_at = at;
            }
            Side::Receiver => o.meter_rx = Some(fm),
            Side::Whole => {
                o.meter_rx = Some(fm);
                o.meter_whole = true;
                o.meter_at = at;
            }
        }
    }

    /// The measurement parts partition `w` handed over.
    fn meters_from(&mut self, w: &mut World) {
        let part = w.part.as_deref_mut().expect("parallel mode");
        let mut parts = std::mem::take(&mut part.meters);
        for (id, side, at, fm) in parts.drain(..) {
            self.meter_part(id, side, at, fm);
        }
        w.part.as_deref_mut().expect("parallel mode").meters = parts;
    }

    /// Flow `id`'s measurement, put together and closed as a
    /// single-thread run closes it when the sender completes (or the run
    /// stops): the receiver's delays, deadline misses and goodput, the
    /// sender's RTT samples and TCP counters; its last goodput row takes
    /// the closing event's (time, key).
    fn close_meter(&mut self, id: FlowId, o: &mut Open) -> FlowStats {
        let Some(m) = self.meter.as_mut() else {
            return FlowStats::default();
        };
        let mut fm = match (o.meter_rx.take(), o.meter_tx.take()) {
            (Some(rx), _) if o.meter_whole => rx,
            (rx, tx) => {
                let Some(tx) = tx else {
                    self.violations.push(format!(
                        "parallel mode: flow {id}'s row written without its sender's measurement"
                    ));
                    return FlowStats::default();
                };
                let mut fm = rx.unwrap_or_else(|| {
                    Box::new(FlowMeter {
                        deadline: tx.deadline,
                        ..FlowMeter::default()
                    })
                });
                fm.rtt = tx.rtt;
                fm.rtt_seen = tx.rtt_seen;
                fm.tcp = tx.tcp;
                fm
            }
        };
        m.at = o.meter_at;
        m.close(&mut fm, id).unwrap_or_default()
    }

    /// A part of flow `e.id`'s row.
    fn take(&mut self, e: &Ended) {
        let Some(o) = self.open.get_mut(&e.id) else {
            self.violations.push(format!(
                "parallel mode: flow {} ended ({:?}) with no open row",
                e.id, e.side
            ));
            return;
        };
        match e.side {
            Side::Sender => {
                o.rec = e.rec;
                o.sender = true;
            }
            Side::Whole => {
                o.rec = e.rec;
                o.sender = true;
            }
            Side::Receiver => o.recv = Some((e.rec.reordered, e.rec.delivered)),
        }
        if let (Side::Whole | Side::Receiver, Some((t, key))) = (e.side, e.at) {
            self.ready.push((t, key, e.id));
        }
    }

    /// Charges the window's logged drops to their flows: data of the
    /// flow's sender, dropped no later than it completed. A flow whose
    /// sender has not reported its completion by the end of the window
    /// completes after it; a flow already written completed before it.
    fn charge_losses(&mut self, worlds: &mut [World]) {
        for w in worlds.iter_mut() {
            let part = w.part.as_deref_mut().expect("parallel mode");
            for (id, t, payload, host) in part.losses.drain(..) {
                let Some(o) = self.open.get_mut(&id) else {
                    continue;
                };
                if host == o.rec.src && (!o.sender || o.rec.finish.is_none_or(|f| t <= f)) {
                    o.lost_packets += 1;
                    o.lost_bytes += u64::from(payload);
                }
            }
        }
    }

    /// Writes the rows complete this window, in release order.
    fn write_ready(&mut self) {
        let mut ready = std::mem::take(&mut self.ready);
        ready.sort_unstable();
        for &(_, _, id) in &ready {
            self.write(id);
        }
        ready.clear();
        self.ready = ready;
    }

    fn write(&mut self, id: FlowId) {
        let Some(mut o) = self.open.remove(&id) else {
            return;
        };
        let stats = self.close_meter(id, &mut o);
        let mut row = o.rec;
        if !o.sender {
            self.violations.push(format!(
                "parallel mode: flow {id}'s row written without its sender's record"
            ));
        }
        if let Some((reordered, delivered)) = o.recv {
            row.reordered = reordered;
            row.delivered = delivered;
        }
        row.lost_packets += o.lost_packets;
        row.lost_bytes += o.lost_bytes;
        self.records.end(id, &row, &stats);
    }

    /// The run stopped and every partition recorded its flows
    /// (`World::check_unfinished`): the rows still open, as a single-thread
    /// run writes them: those of lingering receivers (the sender completed)
    /// by id, then those of the flows still running by id.
    fn finish(&mut self, worlds: &mut [World]) {
        self.open_flows(&mut worlds[0]);
        for w in worlds.iter_mut() {
            let ended = std::mem::take(&mut w.part.as_deref_mut().expect("parallel mode").ended);
            for e in &ended {
                self.take(e);
            }
        }
        self.charge_losses(worlds);
        for w in worlds.iter_mut() {
            self.meters_from(w);
        }
        self.ready.clear();
        let mut ids: Vec<(bool, FlowId)> = self
            .open
            .iter()
            .map(|(&id, o)| (o.rec.finish.is_none(), id))
            .collect();
        ids.sort_unstable();
        for (_, id) in ids {
            self.write(id);
        }
    }
}

/// Runs windows until the run ends (`Some`) or about `budget` events have
/// been processed (`None`). With `parallel`, on the current rayon pool.
fn windows(
    worlds: &mut [World],
    parallel: bool,
    lookahead: SimTime,
    max_time: SimTime,
    budget: u64,
    stats: &mut ParStats,
    collector: &mut Collector,
) -> Option<StopReason> {
    let mut events: u64 = 0;
    let mut before: Vec<u64> = vec![0; worlds.len()];
    loop {
        if worlds
            .iter()
            .all(|w| w.pending_flow.is_none() && w.active_count == 0)
        {
            return Some(StopReason::AllFlowsDone);
        }
        let Some(start) = worlds.iter().filter_map(|w| w.q.peek_time()).min() else {
            return Some(StopReason::TimeLimit);
        };
        if start > max_time {
            return Some(StopReason::TimeLimit);
        }
        let end = SimTime(start.ps().saturating_add(lookahead.ps()));
        for (b, w) in before.iter_mut().zip(worlds.iter()) {
            *b = w.q.events_processed();
        }
        if parallel {
            worlds
                .par_iter_mut()
                .for_each(|w| w.run_window(end, max_time));
        } else {
            worlds.iter_mut().for_each(|w| w.run_window(end, max_time));
        }
        exchange(worlds, parallel, stats, collector);
        pfc_window(worlds);
        stats.windows += 1;
        for (b, w) in before.iter_mut().zip(worlds.iter()) {
            *b = w.q.events_processed() - *b;
            events += *b;
        }
        bound_window(&mut before, &mut stats.critical_events);
        if worlds[0].pfc.as_ref().is_some_and(|p| p.fatal.is_some()) {
            // The deadlock detector fired: run_parallel reports it.
            return Some(StopReason::TimeLimit);
        }
        if events >= budget || collector.records.failed.is_some() {
            return None;
        }
    }
}

/// Runs the partitions `worlds` (from [`World::make_partition`]) on
/// `threads` threads until every flow is done, `max_time` passes, or
/// `progress` says stop (or the sink of `collector`'s records fails:
/// `Interrupted`, with the error in `collector.records.failed`). The rows
/// of the flows that ended go to `collector` at the end of each window.
pub fn run(
    worlds: &mut [World],
    threads: u32,
    lookahead: SimTime,
    max_time: SimTime,
    progress: &mut dyn FnMut(Progress) -> bool,
    collector: &mut Collector,
) -> (StopReason, ParStats) {
    let mut stats = ParStats {
        threads,
        partitions: worlds.len() as u32,
        lookahead,
        ..Default::default()
    };
    // NOTE: the windows run inside the pool (the coordinator is one of its
    // threads), so a window costs a fork-join among threads that are
    // awake, not a wake-up of the pool from outside; the pool is left
    // only every 2^16 events, to report progress.
    let pool = (threads > 1)
        .then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads as usize)
                .build()
                .ok()
        })
        .flatten();
    for w in worlds.iter_mut() {
        w.start_partition();
        if let Some(m) = w.meter.as_deref_mut() {
            m.goodput_at = Some(Vec::new());
        }
    }
    // Per-flow measurement is closed by the collector (`Collector::write`).
    collector.meter = worlds[0].meter.as_deref().map(|m| Meter {
        flow_stats: m.flow_stats,
        goodput: m.goodput,
        goodput_at: Some(Vec::new()),
        ..Meter::default()
    });
    let budget = 1 << 16;
    let stop = loop {
        let st = &mut stats;
        let c = &mut *collector;
        let ended = match &pool {
            Some(pool) => {
                pool.install(|| windows(worlds, true, lookahead, max_time, budget, st, c))
            }
            None => windows(worlds, false, lookahead, max_time, budget, st, c),
        };
        if let Some(stop) = ended {
            break stop;
        }
        if collector.records.failed.is_some() {
            break StopReason::Interrupted;
        }
        let now = worlds.iter().map(|w| w.q.now()).max().unwrap_or_default();
        let p = Progress {
            sim_time_s: now.as_secs_f64(),
            flows_completed: worlds.iter().map(|w| w.completed).sum(),
            flows_total: worlds[0].total_flows,
        };
        if !progress(p) {
            break StopReason::Interrupted;
        }
    };
    stats.max_partition_events = worlds
        .iter()
        .map(|w| w.q.events_processed())
        .max()
        .unwrap_or(0);
    (stop, stats)
}

/// The goodput rows of every partition and of the collector's `m`, in
/// the order of the (time, key) of the events that wrote them (a
/// single-thread run's order: each event writes at most one), into `m`.
fn merge_goodput(rest: &mut [World], fin: &mut World, m: &mut Meter) {
    type Row = ((SimTime, u64), SimTime, FlowId, u64);
    let mut rows: Vec<Row> = Vec::new();
    let mut take = |m: &mut Meter| {
        let at = m.goodput_at.take().unwrap_or_default();
        let time = std::mem::take(&mut m.goodput_time);
        let flow = std::mem::take(&mut m.goodput_flow);
        let bytes = std::mem::take(&mut m.goodput_bytes);
        for (((a, t), f), b) in at.into_iter().zip(time).zip(flow).zip(bytes) {
            rows.push((a, t, f, b));
        }
    };
    for w in std::iter::once(fin).chain(rest.iter_mut()) {
        if let Some(pm) = w.meter.as_deref_mut() {
            take(pm);
        }
    }
    take(m);
    // NOTE: stable: rows of one event (none in a TCP run) keep their order.
    rows.sort_by_key(|r| r.0);
    for (_, t, f, b) in rows {
        m.goodput_time.push(t);
        m.goodput_flow.push(f);
        m.goodput_bytes.push(b);
    }
}

/// Folds the partitions into one world holding every node's own state (its
/// ports, its switch, the packets in its queues and on its wires, moved into
/// one arena), the flows' records (`collector`'s, the last rows written
/// here: those still open when the run stopped), and the summed counters,
/// so the results are written as for a single-thread run.
pub fn merge(worlds: Vec<World>, collector: Collector) -> World {
    let mut worlds = worlds;
    let mut collector = collector;
    for w in worlds.iter_mut() {
        w.check_unfinished();
    }
    collector.finish(&mut worlds);
    let node_part = worlds[0]
        .part
        .as_deref()
        .expect("parallel mode")
        .node_part
        .clone();
    let n_ports = worlds[0].ports.len();
    let owner = |w: &World, p: usize| node_part[w.ports[p].node as usize] as usize;
    // Packets on a link between partitions wait in the receiver's copy of
    // the sending port's wire: take them out before the ports move, with
    // the partition whose arena holds them.
    let mut wires: Vec<(usize, usize, Wire)> = Vec::new();
    for (i, w) in worlds.iter_mut().enumerate() {
        for p in 0..n_ports {
            if owner(w, p) != i && !w.ports[p].wire.is_empty() {
                wires.push((i, p, std::mem::take(&mut w.ports[p].wire)));
            }
        }
    }
    // Samples: every partition took the same rows; each value is the one
    // its port's own partition took.
    let port_part = |w: &World, p: PortIdx| node_part[w.ports[p as usize].node as usize] as usize;
    for k in 0..worlds[0].samples.1.len() {
        let i = port_part(&worlds[0], worlds[0].samples.1[k]);
        worlds[0].samples.2[k] = worlds[i].samples.2[k];
    }
    for k in 0..worlds[0].rates.port.len() {
        let i = port_part(&worlds[0], worlds[0].rates.port[k]);
        worlds[0].rates.tx_gbps[k] = worlds[i].rates.tx_gbps[k];
        worlds[0].rates.carried_gbps[k] = worlds[i].rates.carried_gbps[k];
    }
    // Capture and trace: each pcap file from its port's partition, the
    // trace rows in event order (`Tap::merge`).
    if worlds[0].tap.is_some() {
        let taps: Vec<crate::capture::Tap> = worlds
            .iter_mut()
            .filter_map(|w| w.tap.take().map(|t| *t))
            .collect();
        let owner = |p: PortIdx| port_part(&worlds[0], p);
        let tap = crate::capture::Tap::merge(taps, owner);
        worlds[0].tap = Some(Box::new(tap));
    }
    let mut rest: Vec<World> = worlds.drain(1..).collect();
    let mut fin = worlds.pop().expect("partition 0");
    fin.meter = collector.meter.take().map(|mut m| {
        merge_goodput(&mut rest, &mut fin, &mut m);
        Box::new(m)
    });
    fin.records = collector.records;
    fin.violations.append(&mut collector.violations);
    // A packet of partition `i`'s arena moves into `fin`'s with a new id.
    let move_pkt = |fin: &mut PacketArena, from: &mut PacketArena, id: PktId| {
        let tm = from.slot(id).tm;
        fin.insert_with(from.remove(id), tm)
    };
    for (j, w) in rest.iter_mut().enumerate() {
        let i = j + 1;
        for p in 0..n_ports {
            if node_part[w.ports[p].node as usize] as usize == i {
                std::mem::swap(&mut fin.ports[p], &mut w.ports[p]);
                let port = &mut fin.ports[p];
                port.queue
                    .remap_ids(|id| move_pkt(&mut fin.arena, &mut w.arena, id));
                port.wire
                    .remap_ids(|id| move_pkt(&mut fin.arena, &mut w.arena, id));
            }
        }
        if let (Some(mine), Some(theirs)) = (fin.pfc.as_deref_mut(), w.pfc.as_deref_mut()) {
            // PFC: each port's accounts, pause state, counters and waiting
            // PAUSE frames are its own partition's.
            for p in 0..n_ports {
                if node_part[w.ports[p].node as usize] as usize == i {
                    mine.take_port(theirs, p);
                }
            }
            mine.lossless_drops += theirs.lossless_drops;
        }
        if let (Forwarding::Pisa(mine), Forwarding::Pisa(theirs)) = (&mut fin.fwd, &mut w.fwd) {
            for sw in 0..mine.len() {
                if node_part[sw + fin.topo.n_hosts as usize] as usize == i {
                    std::mem::swap(&mut mine[sw], &mut theirs[sw]);
                }
            }
        }
        let c = &mut fin.counts;
        let o = w.counts;
        c.injected += o.injected;
        c.delivered += o.delivered;
        c.dropped += o.dropped;
        c.consumed += o.consumed;
        c.packet_hops += o.packet_hops;
        c.late_packets += o.late_packets;
        c.rate_feedback += o.rate_feedback;
        c.rate_cuts += o.rate_cuts;
        c.cnps += o.cnps;
        c.first_rate_cut = match (c.first_rate_cut, o.first_rate_cut) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        fin.completed += w.completed;
        fin.violations.append(&mut w.violations);
        fin.q.absorb(&w.q);
    }
    for (i, p, mut wire) in wires {
        if i != 0 {
            let from = &mut rest[i - 1].arena;
            wire.remap_ids(|id| move_pkt(&mut fin.arena, from, id));
        }
        fin.ports[p].wire.append(&mut wire);
    }
    // Every partition's arena is empty now (its packets moved to `fin`'s).
    for (j, w) in rest.iter().enumerate() {
        if w.arena.live() != 0 {
            fin.violations.push(format!(
                "parallel merge: partition {} still holds {} packets in its arena",
                j + 1,
                w.arena.live()
            ));
        }
    }
    // Every flow's end state is in the records now (`check_unfinished`).
    fin.active.clear();
    fin.active_count = 0;
    fin
}

#[cfg(test)]
mod tests {
    use super::*;
    use pisanet_net::topology::{fat_tree, hula3tier, leaf_spine, LinkSpec};

    fn g(x: f64) -> BitRate {
        BitRate::from_gbps(x)
    }

    #[test]
    fn a_fat_tree_is_cut_by_pod_with_the_cores_dealt_round_robin() {
        let k = 4;
        let t = fat_tree(k, g(10.0), g(40.0), SimTime::from_us(1)).unwrap();
        let (part, n) = partition(&t, false).unwrap();
        assert_eq!(n, k);
        // Every link inside a pod (host-edge, edge-agg) stays in one
        // partition; only agg-core links cross.
        for (id, node) in t.nodes.iter().enumerate() {
            for p in &node.ports {
                let crosses = part[id] != part[p.peer_node as usize];
                let core = |x: usize| t.nodes[x].name.starts_with("core");
                let core_link = core(id) != core(p.peer_node as usize);
                assert!(
                    core_link || !crosses,
                    "{} - {}",
                    node.name,
                    t.nodes[p.peer_node as usize].name
                );
            }
        }
        // Every partition has the same number of nodes (balance).
        let mut sizes = vec![0; n as usize];
        for &p in &part {
            sizes[p as usize] += 1;
        }
        assert!(sizes.iter().all(|&s| s == sizes[0]), "{sizes:?}");
    }

    #[test]
    fn a_leaf_spine_is_cut_into_groups_of_leaves_with_their_hosts() {
        let t = leaf_spine(40, 4, 2, g(10.0), g(40.0), SimTime::from_us(1)).unwrap();
        let (part, n) = partition(&t, false).unwrap();
        assert_eq!(n, 16);
        for h in 0..t.n_hosts as usize {
            let tor = t.racks[t.host_rack[h] as usize] as usize;
            assert_eq!(part[h], part[tor]);
        }
        assert!(part.iter().all(|&p| p < n));
    }

    #[test]
    fn any_topology_is_cut_by_racks_only_with_topology_partitioned() {
        let t = hula3tier(g(10.0), g(40.0), SimTime::from_us(1), 2).unwrap();
        assert!(partition(&t, false).is_err());
        let (part, n) = partition(&t, true).unwrap();
        assert_eq!((part.clone(), n), partition_general(&t));
        // Four racks, one each; the aggregation switches link two racks
        // each and the spines every aggregation switch: dealt round-robin.
        assert_eq!(n, 4);
        for h in 0..t.n_hosts as usize {
            assert_eq!(part[h], part[t.racks[t.host_rack[h] as usize] as usize]);
        }
        let mut sizes = vec![0; n as usize];
        for &p in &part {
            sizes[p as usize] += 1;
        }
        assert!(sizes.iter().all(|&s| s >= 3), "{sizes:?}");
    }

    #[test]
    fn a_zero_delay_link_is_never_cut_and_empty_partitions_go() {
        // s0 - s1 - s2 in a chain, a host under each; s1 - s2 has no
        // delay, so s1 and s2 (and their hosts) share a partition, and the
        // three racks make two partitions, numbered from 0.
        let us = SimTime::from_us(1);
        let nodes = vec![
            ("h0".to_string(), NodeKind::Host),
            ("h1".to_string(), NodeKind::Host),
            ("h2".to_string(), NodeKind::Host),
            ("s0".to_string(), NodeKind::Switch { tier: 0 }),
            ("s1".to_string(), NodeKind::Switch { tier: 0 }),
            ("s2".to_string(), NodeKind::Switch { tier: 0 }),
        ];
        let l = |a, b, delay| LinkSpec {
            a,
            b,
            rate: g(10.0),
            delay,
        };
        let links = [
            l(0, 3, us),
            l(1, 4, us),
            l(2, 5, us),
            l(3, 4, us),
            l(4, 5, SimTime::ZERO),
        ];
        let chain = |links: &[LinkSpec]| {
            Topology::from_links(
                "custom",
                nodes.clone(),
                links,
                pisanet_net::topology::AddrPlan::Flat,
            )
            .unwrap()
        };
        let (part, n) = partition(&chain(&links), true).unwrap();
        assert_eq!(n, 2);
        assert_eq!(part, vec![0, 1, 1, 0, 1, 1]);
        // With every switch link of zero delay: one partition.
        let links = [
            l(0, 3, us),
            l(1, 4, us),
            l(2, 5, us),
            l(3, 4, SimTime::ZERO),
            l(4, 5, SimTime::ZERO),
        ];
        assert_eq!(partition(&chain(&links), true).unwrap(), (vec![0; 6], 1));
    }
}
