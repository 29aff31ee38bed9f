//! P4TE's switch-local control plane: the initial configuration (section 4,
//! "initialization phase": routes, routing groups with every uplink in the
//! highest-priority group, meters, clone sessions) and alg. 3 (T5), which
//! moves one port between routing groups per feedback packet with
//! P4Runtime-like writes that land one at a time.
//!
//! Two ways to write (`P4teParams::cpu_coalesce`):
//! - as alg. 3 is written (default): each event's move is written at once
//!   (1-4 writes), behind every write still queued;
//! - as a batching P4Runtime controller: the agent keeps the desired group of
//!   each port, keeps at most one batch (one WriteRequest) in flight, and when
//!   it has been applied (the WriteResponse) sends the net change since then
//!   as the next batch. A move that a later event undid before it was sent is
//!   never written. Writes still land one entry at a time, not atomically.

#![allow(clippy::integer_division)]

use super::meta::Meta;
use super::{
    P4te, P4teParams, EVT_NONE, SESSION_CPU, SESSION_CPU_RECIRC, SESSION_RECIRC, SET_PORT,
    SET_ROUTING_GROUP,
};
use crate::l3::RouteAgent;
use pisanet_engine::SimTime;
use pisanet_net::{Packet, PortNo};
use pisanet_pisa::{
    matches, ActionCall, ControlAgent, ControlPlaneConfig, CpuApi, MeterConfig, MeterId,
    SelectorId, SwitchInfo, TableEntry, TableId, UpdateType, UserMeta, Write, CPU_PORT,
    RECIRC_PORT,
};

/// The routing groups of one link metric: a ternary table with one entry per
/// non-empty group (priority = group order) and an action selector holding
/// each group's ports.
#[derive(Clone, Debug)]
pub struct RoutingGroups {
    table: TableId,
    selector: SelectorId,
    n_groups: u32,
    /// The common prefix of the data center, as a ternary match.
    prefix: (u64, u64),
    /// portToRoutingGroupMap (alg. 3, lines 1 and 6).
    group_of: Vec<Option<u32>>,
    /// Each group's ports (sorted), as the agent wants them.
    members: Vec<Vec<PortNo>>,
    /// Each group's ports as written so far (coalescing mode only: the
    /// switch holds these once every issued write has landed).
    issued: Vec<Vec<PortNo>>,
    /// Ports moved so far.
    pub moves: u64,
}

impl RoutingGroups {
    fn new(table: TableId, selector: SelectorId, n_groups: u32, n_ports: u16) -> Self {
        RoutingGroups {
            table,
            selector,
            n_groups,
            prefix: (0, 0),
            group_of: vec![None; n_ports as usize],
            members: vec![Vec::new(); n_groups as usize],
            issued: vec![Vec::new(); n_groups as usize],
            moves: 0,
        }
    }

    fn entry(&self, g: u32) -> TableEntry {
        TableEntry::new(
            vec![matches::ternary(self.prefix.0, self.prefix.1)],
            ActionCall::new(SET_ROUTING_GROUP, [g as u64, 0, 0]),
        )
        .with_priority((self.n_groups - g) as i32)
    }

    fn group_write(&self, g: u32) -> Write {
        self.group_write_of(g, &self.members[g as usize])
    }

    fn group_write_of(&self, g: u32, ports: &[PortNo]) -> Write {
        Write::SelectorGroup {
            selector: self.selector,
            group: g,
            members: ports
                .iter()
                .map(|&p| ActionCall::new(SET_PORT, [p as u64, 0, 0]))
                .collect(),
        }
    }

    /// Initialization phase: every uplink in the highest-priority group.
    fn install(&mut self, uplinks: &[PortNo], prefix: (u64, u64), cpu: &mut CpuApi<'_>) {
        self.prefix = prefix;
        if uplinks.is_empty() {
            return;
        }
        for &p in uplinks {
            self.group_of[p as usize] = Some(0);
            self.members[0].push(p);
        }
        self.members[0].sort_unstable();
        self.issued[0] = self.members[0].clone();
        cpu.write(self.group_write(0));
        cpu.write(Write::TableEntry {
            table: self.table,
            update: UpdateType::Insert,
            entry: self.entry(0),
        });
    }

    /// The group a port is in (None: not an upward port, or failed).
    pub fn group_of(&self, port: PortNo) -> Option<u32> {
        self.group_of.get(port as usize).copied().flatten()
    }

    /// Alg. 3, lines 1-7: moves `port` to `new` (None removes it). Returns
    /// whether anything moved.
    ///
    /// NOTE: the writes land one at a time: first the port leaves its old
    /// group (whose table entry is deleted before the group empties, so no
    /// entry ever points at an empty group), then it joins the new one (whose
    /// entry is inserted after the group fills). In between the port is in
    /// no group; a lookup that finds no entry falls back to the route's ECMP
    /// group.
    pub fn move_port(&mut self, port: PortNo, new: Option<u32>, cpu: &mut CpuApi<'_>) -> bool {
        let Some(slot) = self.group_of.get(port as usize) else {
            return false;
        };
        let old = *slot;
        if old == new {
            return false;
        }
        // Line 4: remove the port from its old group.
        if let Some(g) = old {
            self.members[g as usize].retain(|&p| p != port);
            if self.members[g as usize].is_empty() {
                cpu.write(Write::TableEntry {
                    table: self.table,
                    update: UpdateType::Delete,
                    entry: self.entry(g),
                });
            }
            cpu.write(self.group_write(g));
        }
        // Line 5: enter it into the new one.
        if let Some(g) = new {
            let was_empty = self.members[g as usize].is_empty();
            self.members[g as usize].push(port);
            self.members[g as usize].sort_unstable();
            cpu.write(self.group_write(g));
            if was_empty {
                cpu.write(Write::TableEntry {
                    table: self.table,
                    update: UpdateType::Insert,
                    entry: self.entry(g),
                });
            }
        }
        // Line 6.
        self.group_of[port as usize] = new;
        self.moves += 1;
        true
    }

    /// Alg. 3 lines 1-3 and 6 for a batching controller: records that
    /// `port` belongs in `new` (None: in no group) without writing anything;
    /// [`Self::flush`] writes the net change. Returns whether anything moved.
    pub fn set_desired(&mut self, port: PortNo, new: Option<u32>) -> bool {
        let Some(&old) = self.group_of.get(port as usize) else {
            return false;
        };
        if old == new {
            return false;
        }
        if let Some(g) = old {
            self.members[g as usize].retain(|&p| p != port);
        }
        if let Some(g) = new {
            self.members[g as usize].push(port);
            self.members[g as usize].sort_unstable();
        }
        self.group_of[port as usize] = new;
        self.moves += 1;
        true
    }

    /// Whether the desired groups differ from those written.
    pub fn dirty(&self) -> bool {
        self.issued != self.members
    }

    /// Writes the net change from the written groups to the desired ones, in
    /// alg. 3's order: first every port leaves the group it no longer belongs
    /// to (line 4; a group's entry is deleted before the group empties), then
    /// enters its new one (line 5; the entry is inserted after the group
    /// fills). A group that only loses or only gains ports is written once.
    pub fn flush(&mut self, cpu: &mut CpuApi<'_>) {
        for g in 0..self.n_groups {
            let (want, had) = (&self.members[g as usize], &self.issued[g as usize]);
            if had.iter().all(|p| want.contains(p)) {
                continue;
            }
            let kept: Vec<PortNo> = had.iter().copied().filter(|p| want.contains(p)).collect();
            if kept.is_empty() {
                cpu.write(Write::TableEntry {
                    table: self.table,
                    update: UpdateType::Delete,
                    entry: self.entry(g),
                });
            }
            cpu.write(self.group_write_of(g, &kept));
            self.issued[g as usize] = kept;
        }
        for g in 0..self.n_groups {
            if self.issued[g as usize] == self.members[g as usize] {
                continue;
            }
            let was_empty = self.issued[g as usize].is_empty();
            self.issued[g as usize] = self.members[g as usize].clone();
            cpu.write(self.group_write(g));
            if was_empty {
                cpu.write(Write::TableEntry {
                    table: self.table,
                    update: UpdateType::Insert,
                    entry: self.entry(g),
                });
            }
        }
    }
}

/// P4TE's CPU agent.
pub struct P4teAgent {
    route: RouteAgent,
    mat_link_util_rate: TableId,
    incoming_rate: MeterId,
    params: P4teParams,
    /// MAT_up_QueueDepth's groups.
    pub queue_depth: RoutingGroups,
    /// MAT_up_LinkUtil's groups (GREEN, YELLOW, RED).
    pub link_util: RoutingGroups,
    /// Feedback packets received.
    pub feedback_packets: u64,
    uplinks: Vec<PortNo>,
    /// The switch CPU's write timing, to follow the write backlog.
    cp: ControlPlaneConfig,
    /// When the last write issued so far takes effect (the switch applies
    /// writes `cp.write_interval` apart, in issue order).
    last_write_at: Option<SimTime>,
    /// Coalescing mode: a wake-up is set for when the batch in flight lands.
    wake_set: bool,
}

/// The longest prefix common to every address the routes cover (both ends
/// of each route's range: a route may be shorter than a rack's /24, such as
/// a pod's or the default route), as (value, mask).
fn common_prefix(info: &SwitchInfo) -> (u64, u64) {
    let mut it = info.routes.iter().flat_map(|r| {
        let mask = u32::MAX.checked_shl(32 - r.len as u32).unwrap_or(0);
        [(r.prefix & mask) as u64, (r.prefix | !mask) as u64]
    });
    let Some(first) = it.next() else {
        return (0, 0);
    };
    let mut len = 32;
    for p in it {
        let diff = (first ^ p) as u32;
        if diff != 0 {
            len = len.min(diff.leading_zeros());
        }
    }
    let mask = if len == 0 {
        0
    } else {
        (u32::MAX << (32 - len)) as u64
    };
    (first & mask, mask)
}

impl P4teAgent {
    pub fn new(prog: &P4te, cp: ControlPlaneConfig) -> Self {
        let n = prog.n_ports;
        P4teAgent {
            route: RouteAgent::new(prog.l3),
            mat_link_util_rate: prog.mat_link_util_rate,
            incoming_rate: prog.incoming_rate,
            params: prog.params.clone(),
            queue_depth: RoutingGroups::new(
                prog.mat_up_queue_depth,
                prog.rg_queue_depth,
                prog.params.queue_groups,
                n,
            ),
            link_util: RoutingGroups::new(prog.mat_up_link_util, prog.rg_link_util, 3, n),
            feedback_packets: 0,
            uplinks: Vec::new(),
            cp,
            last_write_at: None,
            wake_set: false,
        }
    }

    /// Moves `port` in `groups` to `new`: at once (alg. 3 as written) or in
    /// the next batch (coalescing).
    fn move_port(
        coalesce: bool,
        groups: &mut RoutingGroups,
        port: PortNo,
        new: Option<u32>,
        cpu: &mut CpuApi<'_>,
    ) {
        if coalesce {
            groups.set_desired(port, new);
        } else {
            groups.move_port(port, new, cpu);
        }
    }

    /// Coalescing mode, at the end of every call: sends the next batch if
    /// no write is still waiting to land, follows the writes issued in this
    /// call, and asks to be woken when the last one lands.
    fn end_call(&mut self, cpu: &mut CpuApi<'_>) {
        if !self.params.cpu_coalesce {
            return;
        }
        let now = cpu.now;
        let idle = self.last_write_at.is_none_or(|t| t <= now);
        if idle && !self.wake_set {
            self.queue_depth.flush(cpu);
            self.link_util.flush(cpu);
        }
        // The switch's write schedule (control.rs): each write lands
        // write_latency after issue, write_interval after the previous one.
        for _ in 0..cpu.writes_issued() {
            let earliest = now + self.cp.write_latency;
            self.last_write_at = Some(match self.last_write_at {
                Some(last) => earliest.max(last + self.cp.write_interval),
                None => earliest,
            });
        }
        if !self.wake_set && (self.queue_depth.dirty() || self.link_util.dirty()) {
            if let Some(at) = self.last_write_at.filter(|&t| t > now) {
                cpu.wake_at(at);
                self.wake_set = true;
            }
        }
    }

    /// Section 6.1.1: ranges [0, delta], [delta+1, 2 delta], ..., the last
    /// one open-ended.
    pub fn queue_group(&self, depth: u64) -> u32 {
        let delta = self.params.delta_pkts as u64;
        let g = if depth <= delta {
            0
        } else {
            (depth - 1) / delta
        };
        g.min(self.params.queue_groups as u64 - 1) as u32
    }
}

impl ControlAgent for P4teAgent {
    fn on_start(&mut self, info: &SwitchInfo, cpu: &mut CpuApi<'_>) {
        // MAT_down and the routes' ECMP groups (the fallback).
        self.route.on_start(info, cpu);
        self.uplinks = info.uplinks.clone();
        let prefix = common_prefix(info);
        self.queue_depth.install(&info.uplinks, prefix, cpu);
        self.link_util.install(&info.uplinks, prefix, cpu);
        let p = &self.params;
        for port in 0..info.n_ports {
            let rate = info
                .port_rates
                .get(port as usize)
                .map_or(0, |r| r.bps() / 8);
            // Section 6.1.2: CIR, PIR and burst sizes of the port's trTCM.
            let burst = (rate as u128 * p.util_burst_pct as u128 * p.util_burst_window.ps() as u128
                / 100
                / 1_000_000_000_000) as u64;
            let mut entry = TableEntry::new(
                vec![matches::exact(port as u64)],
                ActionCall::bare(pisanet_pisa::ActionId(0)),
            );
            entry.meter = Some(MeterConfig::TrTcm {
                cir: rate * p.util_cir_pct as u64 / 100,
                cbs: burst.max(1518),
                pir: rate * p.util_pir_pct as u64 / 100,
                pbs: burst.max(1518),
            });
            cpu.write(Write::TableEntry {
                table: self.mat_link_util_rate,
                update: UpdateType::Insert,
                entry,
            });
            // Section 6.1.3: the safe rate of each class; EBS 0 makes the
            // srTCM a two-colour meter.
            for (class, pct) in [p.short_safe_pct, p.large_safe_pct].into_iter().enumerate() {
                let cir = rate * pct as u64 / 100;
                let cbs =
                    (cir as u128 * p.class_burst_window.ps() as u128 / 1_000_000_000_000) as u64;
                cpu.write(Write::Meter {
                    meter: self.incoming_rate,
                    index: port as u32 * 2 + class as u32,
                    config: MeterConfig::SrTcm {
                        cir,
                        cbs: cbs.max(1518),
                        ebs: 0,
                    },
                });
            }
        }
        for (session, ports) in [
            (SESSION_CPU, vec![CPU_PORT]),
            (SESSION_RECIRC, vec![RECIRC_PORT]),
            (SESSION_CPU_RECIRC, vec![CPU_PORT, RECIRC_PORT]),
        ] {
            cpu.write(Write::CloneSessionReplicas { session, ports });
        }
    }

    fn on_packet_in(&mut self, _pkt: Packet, meta: UserMeta, cpu: &mut CpuApi<'_>) {
        self.feedback_packets += 1;
        let m = Meta(meta);
        let port = m.event_port() as PortNo;
        // Alg. 3 for each metric the feedback reports; line 2 maps the event
        // data to a group (only upward ports have groups).
        let c = self.params.cpu_coalesce;
        if m.queue_event() != EVT_NONE && self.queue_depth.group_of(port).is_some() {
            let g = self.queue_group(m.event_depth());
            Self::move_port(c, &mut self.queue_depth, port, Some(g), cpu);
        }
        if m.util_event() != EVT_NONE && self.link_util.group_of(port).is_some() {
            let g = m.new_color() as u32;
            Self::move_port(c, &mut self.link_util, port, Some(g), cpu);
        }
        self.end_call(cpu);
    }

    fn on_wake(&mut self, cpu: &mut CpuApi<'_>) {
        self.wake_set = false;
        self.end_call(cpu);
    }

    fn on_port_status(&mut self, port: PortNo, up: bool, cpu: &mut CpuApi<'_>) {
        self.route.on_port_status(port, up, cpu);
        // Section 5.1: a failed link leaves its routing groups; it comes
        // back in the highest-priority ones.
        if self.uplinks.contains(&port) {
            let g = if up { Some(0) } else { None };
            let c = self.params.cpu_coalesce;
            Self::move_port(c, &mut self.queue_depth, port, g, cpu);
            Self::move_port(c, &mut self.link_util, port, g, cpu);
        }
        self.end_call(cpu);
    }
}
