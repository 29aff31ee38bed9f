//! Ingress controls of a fixed, common form, which the switch runs itself as
//! a straight line instead of calling the program's `ingress`.
//!
//! A P4 compiler resolves a program's control flow, tables and externs when
//! it loads the program; the simulator's general path resolves them again on
//! every pass (a dynamic call into the program, a `Ctx`, handles looked up in
//! the pipeline's object lists). A program whose ingress is one of the forms
//! here says so ([`DataPlane::ingress_form`](crate::DataPlane::ingress_form));
//! the switch checks the form against the program's declarations once, at
//! load, and then runs it per packet on the same objects (the same table and
//! its memo, the same selector groups, the same hash), so the result is the
//! program's: the `ecmp` program's equivalence is tested against its own
//! `ingress` (crates/pisanet-schemes, `ecmp_form_equals_the_program`).
//!
//! What the general path checks per pass and a form cannot break is checked
//! at load instead: a hash fed the fields it declares (the form builds its
//! input from the declared field list, so a mismatch is a load error, as p4c
//! rejects it), registers (a form touches none), digests and copies (a form
//! makes none).

use crate::hash::{crc32_13, five_tuple_bytes, HashAlgo, HashId, FIVE_TUPLE_FIELDS};
use crate::meta::DROP_PORT;
use crate::pipeline::Pipeline;
use crate::table::{fast_mod, fast_mod_magic, ActionId, MatchKind, SelectorId, TableId};
use pisanet_net::{Packet, PortNo};

/// A program's ingress control in a form the switch runs itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IngressForm {
    LpmSelect(LpmSelect),
}

/// Layer-3 forwarding with ECMP groups (RFC 2992): in P4,
///
/// ```text
/// apply {
///     switch (table.apply().action_run) {      // lpm on hdr.ipv4.dst
///         set_port:  egress_spec = port;       // action data word 0
///         set_group: hash(h, crc32, {5-tuple}); h = h >>> rotate;
///                    selector[group].member(h) // egress_spec = its word 0
///                                              // (an empty group: drop)
///         default:   mark_to_drop();
///     }
/// }
/// ```
///
/// The hash is computed only when the table picks a group, as the program's
/// `hash` call sits in that branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LpmSelect {
    /// One LPM field, `hdr.ipv4.dst`, 32 bits wide.
    pub table: TableId,
    /// The action whose word 0 is the egress port.
    pub set_port: ActionId,
    /// The action whose word 0 is a group of `selector`.
    pub set_group: ActionId,
    /// Members' word 0 is the egress port.
    pub selector: SelectorId,
    /// CRC-32 over [`FIVE_TUPLE_FIELDS`].
    pub hash: HashId,
    /// The selector's input is the hash rotated right by this many bits.
    pub rotate: u32,
}

impl LpmSelect {
    /// Placeholder handles of a switch without a form (never run).
    pub(crate) const NONE: LpmSelect = LpmSelect {
        table: TableId(0),
        set_port: ActionId(0),
        set_group: ActionId(0),
        selector: SelectorId(0),
        hash: HashId(0),
        rotate: 0,
    };
}

impl IngressForm {
    /// Checks the form against the program's declarations (at load).
    pub(crate) fn check(&self, pipe: &Pipeline) -> Result<(), String> {
        let IngressForm::LpmSelect(f) = self;
        let t = pipe.tables.get(f.table.0 as usize).ok_or("no such table")?;
        let keys = &t.spec.keys;
        if keys.len() != 1
            || keys[0].kind != MatchKind::Lpm
            || keys[0].width != 32
            || keys[0].name != "hdr.ipv4.dst"
        {
            return Err(format!(
                "table {}: the form looks up one 32-bit LPM field hdr.ipv4.dst",
                t.spec.name
            ));
        }
        if t.spec.direct_counter || t.spec.direct_meter.is_some() {
            return Err(format!(
                "table {}: the form's table has no direct counter or meter",
                t.spec.name
            ));
        }
        let n_actions = t.spec.actions.len();
        if f.set_port.0 as usize >= n_actions || f.set_group.0 as usize >= n_actions {
            return Err(format!("table {}: no such action", t.spec.name));
        }
        if f.set_port == f.set_group {
            return Err(format!(
                "table {}: set_port and set_group are one action",
                t.spec.name
            ));
        }
        if pipe.selectors.get(f.selector.0 as usize).is_none() {
            return Err("no such selector".into());
        }
        let h = pipe.hashes.get(f.hash.0 as usize).ok_or("no such hash")?;
        if h.spec.algo != HashAlgo::Crc32 || h.spec.fields[..] != FIVE_TUPLE_FIELDS[..] {
            return Err(format!(
                "hash {}: the form computes crc32 over the 5-tuple",
                h.spec.name
            ));
        }
        if f.table.0 > u8::MAX as u16 || f.selector.0 > u8::MAX as u16 {
            return Err("the form's table and selector are among the first 256".into());
        }
        if f.rotate >= 32 {
            return Err(format!("rotation by {} bits", f.rotate));
        }
        Ok(())
    }
}

/// What the switch keeps to run an [`LpmSelect`] form (in the switch's
/// first cache line, so that a pass reads that line and one memo slot): the
/// form's
/// handles and a memo of what the table and the selector's group resolve to
/// for each destination address.
///
/// The memo is the simulator's cache, not program state: a slot holds what
/// `table` and `selector` give for a destination under the current entries
/// and groups (a port; a group's member ports and the remainder multiplier
/// of its member count; a drop), and the switch empties it on every control-
/// plane write it applies ([`FormPass::forget`]), so a pass's result is
/// always a function of the packet and the current entries, as the
/// hardware's. The member is still picked per packet, by the CRC-32 of its
/// 5-tuple. The form is accepted only for a table without direct counters or
/// meters, so a memo hit skips nothing the program could observe.
#[repr(C)]
pub(crate) struct FormPass {
    memo: Box<[RouteSlot]>,
    /// 64 - log2(memo slots).
    shift: u8,
    rotate: u8,
    /// Slots overwritten by another key since the last growth.
    evictions: u16,
    table: u8,
    selector: u8,
    set_port: u8,
    set_group: u8,
}

/// A slot of [`FormPass`]'s memo (32 bytes, two to a cache line).
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct RouteSlot {
    key: u32,
    kind: u8,
    /// Members inline (`ROUTE_MEMBERS`).
    n: u8,
    /// `ROUTE_PORT`: the port.
    port: u16,
    /// `ROUTE_MEMBERS`: the multiplier of `fast_mod` for `n`;
    /// `ROUTE_GROUP`: the group id.
    word: u64,
    /// `ROUTE_MEMBERS`: each member's port, in the group's order.
    ports: [u16; INLINE_MEMBERS],
}

const ROUTE_EMPTY: u8 = 0;
/// The table gave `set_port`.
const ROUTE_PORT: u8 = 1;
/// The table gave `set_group` of a group of 1 to `INLINE_MEMBERS` members.
const ROUTE_MEMBERS: u8 = 2;
/// The table gave `set_group` of a larger group: the selector picks.
const ROUTE_GROUP: u8 = 3;
/// A miss, another action, or an empty or unknown group.
const ROUTE_DROP: u8 = 4;
/// Members a memo slot holds.
const INLINE_MEMBERS: usize = 8;
/// Memo slots at the first lookup (2 KiB) and at most (16 KiB).
const MEMO_MIN: usize = 64;
const MEMO_MAX: usize = 512;

impl FormPass {
    pub(crate) fn new(f: &LpmSelect) -> Self {
        FormPass {
            memo: Box::new([]),
            shift: 64,
            evictions: 0,
            table: f.table.0 as u8,
            selector: f.selector.0 as u8,
            set_port: f.set_port.0,
            set_group: f.set_group.0,
            rotate: f.rotate as u8,
        }
    }

    /// Empties the memo (the switch applied a control-plane write).
    pub(crate) fn forget(&mut self) {
        self.memo = Box::new([]);
        self.evictions = 0;
    }

    /// The memo slot of `key`. With the memo empty (`shift` 64) the shift
    /// wraps to 0 and gives an index past the end, which the lookup misses
    /// (`>>` by 64 panicked in debug builds, which check for overflow; the
    /// release build's instruction is the same, the hardware masking the
    /// count).
    #[inline(always)]
    fn slot(&self, key: u32) -> usize {
        (key as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_shr(self.shift as u32) as usize
    }

    /// The pass: the `egress_spec` the program would set (possibly
    /// [`DROP_PORT`] or a port the switch lacks, which the caller handles as
    /// the general path does).
    #[inline(always)]
    pub(crate) fn run(&mut self, pipe: &mut Pipeline, pkt: &Packet) -> PortNo {
        let dst = pkt.ip.dst;
        let s = match self.memo.get(self.slot(dst)) {
            Some(s) if s.key == dst && s.kind != ROUTE_EMPTY => *s,
            _ => self.resolve(pipe, dst),
        };
        if s.kind == ROUTE_PORT {
            return s.port;
        }
        self.pick(pipe, pkt, &s)
    }

    /// A group's member (or a drop).
    #[inline(always)]
    fn pick(&self, pipe: &Pipeline, pkt: &Packet, s: &RouteSlot) -> PortNo {
        if s.kind == ROUTE_MEMBERS {
            let h = crc32_13(&five_tuple_bytes(pkt)).rotate_right(self.rotate as u32);
            // The selector's member arithmetic (`ActionSelector::select`).
            let i = fast_mod(h, s.word, s.n as u32) as usize;
            return s.ports.get(i).copied().unwrap_or(DROP_PORT);
        }
        if s.kind == ROUTE_GROUP {
            let h = crc32_13(&five_tuple_bytes(pkt)).rotate_right(self.rotate as u32);
            return match pipe.selectors[self.selector as usize].select(s.word as u32, h) {
                Some(member) => member.params[0] as PortNo,
                None => DROP_PORT,
            };
        }
        DROP_PORT
    }

    /// A memo miss: the table (and the group) resolved and remembered.
    #[cold]
    #[inline(never)]
    fn resolve(&mut self, pipe: &mut Pipeline, dst: u32) -> RouteSlot {
        let hit = pipe.tables[self.table as usize].lookup(&[dst as u64, 0, 0, 0]);
        let action = hit.action.action.0;
        let mut s = RouteSlot {
            key: dst,
            kind: ROUTE_DROP,
            ..RouteSlot::default()
        };
        if action == self.set_port {
            s.kind = ROUTE_PORT;
            s.port = hit.action.params[0] as PortNo;
        } else if action == self.set_group {
            let group = hit.action.params[0] as u32;
            let members = pipe.selectors[self.selector as usize]
                .groups
                .get(group as usize)
                .map_or(&[][..], |g| g.members.as_slice());
            if members.len() > INLINE_MEMBERS {
                s.kind = ROUTE_GROUP;
                s.word = group as u64;
            } else if !members.is_empty() {
                s.kind = ROUTE_MEMBERS;
                s.n = members.len() as u8;
                s.word = fast_mod_magic(members.len() as u32);
                for (p, m) in s.ports.iter_mut().zip(members) {
                    *p = m.params[0] as PortNo;
                }
            }
        }
        self.store(s);
        s
    }

    fn store(&mut self, s: RouteSlot) {
        if self.memo.is_empty() {
            self.resize(MEMO_MIN);
        }
        let old = self.memo[self.slot(s.key)];
        if old.kind != ROUTE_EMPTY && old.key != s.key {
            self.evictions += 1;
            if self.evictions as usize > self.memo.len() && self.memo.len() < MEMO_MAX {
                self.resize(self.memo.len() * 2);
            }
        }
        let i = self.slot(s.key);
        self.memo[i] = s;
    }

    fn resize(&mut self, n: usize) {
        self.memo = vec![RouteSlot::default(); n].into_boxed_slice();
        self.shift = (64 - n.trailing_zeros()) as u8;
        self.evictions = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::HashSpec;
    use crate::table::{ActionCall, KeyField, SelectorSpec, TableSpec};

    /// A pipeline with an LPM table on `key` and a CRC-32 over `fields`.
    fn pipe(key: KeyField, fields: &[(&'static str, u8)]) -> (Pipeline, LpmSelect) {
        let mut p = Pipeline::new("t");
        let table = p.table(TableSpec {
            name: "ipv4_lpm",
            keys: vec![key],
            actions: vec!["set_nhop", "set_ecmp_group", "drop"],
            size: 16,
            default_action: ActionCall::bare(ActionId(2)),
            direct_counter: false,
            direct_meter: None,
        });
        let selector = p.selector(SelectorSpec {
            name: "ecmp_group",
            algo: HashAlgo::Crc32,
            actions: vec!["set_nhop"],
            max_groups: 4,
            max_members_per_group: 4,
        });
        let hash = p.hash(HashSpec {
            name: "h",
            algo: HashAlgo::Crc32,
            fields: fields.to_vec(),
        });
        let f = LpmSelect {
            table,
            set_port: ActionId(0),
            set_group: ActionId(1),
            selector,
            hash,
            rotate: 11,
        };
        (p, f)
    }

    const DST: KeyField = KeyField {
        name: "hdr.ipv4.dst",
        kind: MatchKind::Lpm,
        width: 32,
    };

    #[test]
    fn a_form_is_checked_against_the_declarations() {
        let (p, f) = pipe(DST, &FIVE_TUPLE_FIELDS);
        assert_eq!(IngressForm::LpmSelect(f).check(&p), Ok(()));
        // Another key, another width, a hash over other fields, an action
        // the table lacks, a rotation past the width: refused at load.
        let src = KeyField {
            name: "hdr.ipv4.src",
            ..DST
        };
        let (p, f) = pipe(src, &FIVE_TUPLE_FIELDS);
        assert!(IngressForm::LpmSelect(f).check(&p).is_err());
        let (p, f) = pipe(KeyField { width: 24, ..DST }, &FIVE_TUPLE_FIELDS);
        assert!(IngressForm::LpmSelect(f).check(&p).is_err());
        let (p, f) = pipe(DST, &FIVE_TUPLE_FIELDS[..4]);
        assert!(IngressForm::LpmSelect(f).check(&p).is_err());
        let (p, f) = pipe(DST, &FIVE_TUPLE_FIELDS);
        let bad = LpmSelect {
            set_group: ActionId(3),
            ..f
        };
        assert!(IngressForm::LpmSelect(bad).check(&p).is_err());
        let bad = LpmSelect { rotate: 32, ..f };
        assert!(IngressForm::LpmSelect(bad).check(&p).is_err());
    }

    #[test]
    fn a_form_pass_is_24_bytes_and_a_memo_slot_32() {
        // The switch keeps its program, its form and its pass counters in
        // its first cache line (switch.rs, `Switch`).
        assert_eq!(std::mem::size_of::<super::FormPass>(), 24);
        assert_eq!(std::mem::size_of::<super::RouteSlot>(), 32);
    }
}
