//! The layer-3 forwarding every scheme here shares: `ipv4_lpm` (LPM on the
//! destination, to one next hop or to an ECMP group) and `ecmp_group` (an
//! action selector whose members are next hops), and the route agent that
//! installs the simulator's shortest-path routes and keeps failed ports out of
//! the groups.

use pisanet_net::{Packet, PortNo};
use pisanet_pisa::{
    five_tuple_bytes, matches, ActionCall, ActionId, ControlAgent, CpuApi, Ctx, HashAlgo,
    HashInput, KeyField, MatchKind, Pipeline, SelectorId, SelectorSpec, StandardMetadata,
    SwitchInfo, TableEntry, TableId, TableSpec, UpdateType, Write,
};

/// Actions of `ipv4_lpm`.
pub const SET_NHOP: ActionId = ActionId(0);
pub const SET_ECMP_GROUP: ActionId = ActionId(1);
pub const DROP: ActionId = ActionId(2);

/// Entries of `ipv4_lpm`.
pub const IPV4_LPM_SIZE: u32 = 4096;
/// Groups and members per group of `ecmp_group`.
pub const ECMP_GROUPS: u32 = 1024;
pub const ECMP_MEMBERS: u32 = 64;

/// Handles of the shared L3 objects.
#[derive(Clone, Copy, Debug)]
pub struct L3 {
    pub ipv4_lpm: TableId,
    pub ecmp_group: SelectorId,
}

impl L3 {
    /// Applies `ipv4_lpm`; for an ECMP group, picks the `ecmp_group` member
    /// that `member` computes (called only then, so the hash or random number
    /// is drawn only when a choice exists). A miss or an empty group drops.
    #[inline]
    pub fn route(
        &self,
        ctx: &mut Ctx<'_>,
        pkt: &Packet,
        sm: &mut StandardMetadata,
        member: impl FnOnce(&mut Ctx<'_>) -> u32,
    ) {
        let hit = ctx.apply(self.ipv4_lpm, [pkt.ip.dst as u64, 0, 0, 0]);
        match hit.action.action {
            SET_NHOP => set_nhop(sm, &hit.action),
            SET_ECMP_GROUP => {
                let m = member(ctx);
                match ctx.select(self.ecmp_group, hit.action.params[0] as u32, m) {
                    Some(member) => set_nhop(sm, &member),
                    None => sm.mark_to_drop(),
                }
            }
            _ => sm.mark_to_drop(),
        }
    }

    /// Declares `ipv4_lpm` and `ecmp_group`; `algo` is the hash that feeds
    /// the selector.
    pub fn declare(pipe: &mut Pipeline, algo: HashAlgo) -> L3 {
        let ipv4_lpm = pipe.table(TableSpec {
            name: "ipv4_lpm",
            keys: vec![KeyField {
                name: "hdr.ipv4.dst",
                kind: MatchKind::Lpm,
                width: 32,
            }],
            actions: vec!["set_nhop", "set_ecmp_group", "drop"],
            size: IPV4_LPM_SIZE,
            default_action: ActionCall::bare(DROP),
            direct_counter: false,
            direct_meter: None,
        });
        let ecmp_group = pipe.selector(SelectorSpec {
            name: "ecmp_group",
            algo,
            actions: vec!["set_nhop"],
            max_groups: ECMP_GROUPS,
            max_members_per_group: ECMP_MEMBERS,
        });
        L3 {
            ipv4_lpm,
            ecmp_group,
        }
    }
}

/// `set_nhop(port)`: the egress port.
pub fn set_nhop(sm: &mut StandardMetadata, action: &ActionCall) {
    sm.egress_spec = action.params[0] as PortNo;
}

/// The 5-tuple as hash input ([`FIVE_TUPLE_FIELDS`]).
#[inline(always)]
pub fn five_tuple(pkt: &Packet) -> HashInput {
    push_five_tuple(HashInput::new(), pkt)
}

/// Appends the 5-tuple to `input` (one 13-byte copy).
#[inline(always)]
pub fn push_five_tuple(mut input: HashInput, pkt: &Packet) -> HashInput {
    input.push_bytes(five_tuple_bytes(pkt));
    input
}

/// Fields of [`five_tuple`], for hash declarations.
pub use pisanet_pisa::FIVE_TUPLE_FIELDS;

/// Bits the selector input rotates by per tier.
pub const TIER_ROTATE: u32 = 11;

/// The selector input of a switch in `tier`: the hash rotated by
/// `TIER_ROTATE x tier`, so each tier picks members from other hash bits.
///
/// NOTE: a CRC is affine over GF(2): salting the input or the initial value
/// with the switch id only XORs a constant onto the output, and every tier
/// would pick members from the same bits of the same linear function of the
/// 5-tuple: a flow's choices at successive tiers would be correlated (hash
/// polarization). Different bit slices are different linear functions, hence
/// independent over flows; real switches get the same effect from per-switch
/// hash seeds or polynomials.
pub fn member_hash(h: u32, tier: u8) -> u32 {
    h.rotate_right(TIER_ROTATE * tier as u32)
}

/// The tier a program passes to [`member_hash`]: its own, or 0 at every tier
/// when `per_tier` is false (`SchemeParams::ecmp_hash_per_tier`): then every
/// switch picks members from the same bits and a flow's choices at
/// successive tiers are correlated (hash polarization).
pub fn hash_tier(tier: u8, per_tier: bool) -> u8 {
    if per_tier {
        tier
    } else {
        0
    }
}

/// The route agent: installs routes at start; on a port failure, rewrites
/// each ECMP group that holds the port without it (and back on recovery).
pub struct RouteAgent {
    l3: L3,
    /// Port set of each group, by group id.
    groups: Vec<Vec<PortNo>>,
    port_up: Vec<bool>,
    /// A program's own fixed set-up (clone sessions, threshold tables),
    /// written after the routes (`with_writes`).
    extra: Vec<Write>,
}

impl RouteAgent {
    pub fn new(l3: L3) -> Self {
        RouteAgent {
            l3,
            groups: Vec::new(),
            port_up: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// The routes, then `extra` in order: the whole control plane of a
    /// program whose other state is fixed at start.
    pub fn with_writes(l3: L3, extra: Vec<Write>) -> Self {
        RouteAgent {
            extra,
            ..RouteAgent::new(l3)
        }
    }

    fn group_write(&self, group: usize) -> Write {
        let members = self.groups[group]
            .iter()
            .filter(|&&p| self.port_up.get(p as usize).copied().unwrap_or(true))
            .map(|&p| ActionCall::new(SET_NHOP, [p as u64, 0, 0]))
            .collect();
        Write::SelectorGroup {
            selector: self.l3.ecmp_group,
            group: group as u32,
            members,
        }
    }
}

impl ControlAgent for RouteAgent {
    fn on_start(&mut self, info: &SwitchInfo, cpu: &mut CpuApi<'_>) {
        self.port_up = vec![true; info.n_ports as usize];
        for route in &info.routes {
            let action = if route.ports.is_empty() {
                // A ToR's own /24 beyond its hosts' /32s.
                ActionCall::bare(DROP)
            } else if route.ports.len() == 1 {
                ActionCall::new(SET_NHOP, [route.ports[0] as u64, 0, 0])
            } else {
                let mut ports = route.ports.clone();
                ports.sort_unstable();
                ports.dedup();
                let group = match self.groups.iter().position(|g| *g == ports) {
                    Some(g) => g,
                    None => {
                        self.groups.push(ports);
                        let g = self.groups.len() - 1;
                        cpu.write(self.group_write(g));
                        g
                    }
                };
                ActionCall::new(SET_ECMP_GROUP, [group as u64, 0, 0])
            };
            let entry = TableEntry::new(vec![matches::lpm(route.prefix as u64, route.len)], action);
            cpu.write(Write::TableEntry {
                table: self.l3.ipv4_lpm,
                update: UpdateType::Insert,
                entry,
            });
        }
        for w in &self.extra {
            cpu.write(w.clone());
        }
    }

    fn on_port_status(&mut self, port: PortNo, up: bool, cpu: &mut CpuApi<'_>) {
        if let Some(s) = self.port_up.get_mut(port as usize) {
            *s = up;
        }
        for g in 0..self.groups.len() {
            if self.groups[g].contains(&port) {
                cpu.write(self.group_write(g));
            }
        }
    }
}
