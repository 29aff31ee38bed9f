//! Match-action tables (exact, LPM, ternary with priority, range keys) with
//! action data and a default action, and action selectors (groups of members
//! picked by a hash, as ECMP groups use). Entries are written only by the
//! control plane (P4TE section 3.3); the data plane only looks them up.
//!
//! Lookup cost: an all-exact table is one hash probe; a table with one LPM
//! field (the others exact) is one probe per distinct prefix length present,
//! longest first; a table with a ternary or range field scans its entries in
//! priority order, as a TCAM compares them all at once. Indexes are rebuilt on
//! every write (control-plane time, not packet time).

use crate::counter::CounterData;
use crate::hash::HashAlgo;
use crate::meter::{MeterCell, MeterKind, MeterUnit};
use pisanet_engine::SimTime;
use serde::Serialize;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// At most this many fields in a key.
pub const MAX_KEY_FIELDS: usize = 4;
/// At most this many words of action data.
pub const MAX_ACTION_PARAMS: usize = 3;

/// A table key as looked up: one value per declared field.
pub type Key = [u64; MAX_KEY_FIELDS];

/// P4 `match_kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MatchKind {
    Exact,
    Lpm,
    Ternary,
    Range,
}

/// One field of a table key.
#[derive(Clone, Debug, Serialize)]
pub struct KeyField {
    pub name: &'static str,
    pub kind: MatchKind,
    pub width: u8,
}

/// Index of an action in its table's (or selector's) action list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct ActionId(pub u8);

/// An action with its action data, as an entry holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct ActionCall {
    pub action: ActionId,
    pub params: [u64; MAX_ACTION_PARAMS],
}

impl ActionCall {
    pub const fn new(action: ActionId, params: [u64; MAX_ACTION_PARAMS]) -> Self {
        ActionCall { action, params }
    }
    /// An action without data.
    pub const fn bare(action: ActionId) -> Self {
        ActionCall {
            action,
            params: [0; MAX_ACTION_PARAMS],
        }
    }
}

/// Declaration of a table.
#[derive(Clone, Debug, Serialize)]
pub struct TableSpec {
    pub name: &'static str,
    pub keys: Vec<KeyField>,
    /// Action names; an [`ActionId`] indexes this list.
    pub actions: Vec<&'static str>,
    /// Entries the table holds.
    pub size: u32,
    pub default_action: ActionCall,
    /// A `direct_counter` counting every hit per entry.
    pub direct_counter: bool,
    /// A `direct_meter` per entry.
    pub direct_meter: Option<(MeterKind, MeterUnit)>,
}

/// Handle of a table in its pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableId(pub(crate) u16);

/// How one field of an entry matches (P4Runtime `FieldMatch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum FieldMatch {
    Exact(u64),
    Lpm {
        value: u64,
        len: u8,
    },
    Ternary {
        value: u64,
        mask: u64,
    },
    /// Inclusive bounds.
    Range {
        lo: u64,
        hi: u64,
    },
}

impl FieldMatch {
    fn matches(&self, v: u64, width: u8) -> bool {
        match *self {
            FieldMatch::Exact(x) => v == x,
            FieldMatch::Lpm { value, len } => {
                let m = prefix_mask(len, width);
                v & m == value & m
            }
            FieldMatch::Ternary { value, mask } => v & mask == value & mask,
            FieldMatch::Range { lo, hi } => lo <= v && v <= hi,
        }
    }
}

fn prefix_mask(len: u8, width: u8) -> u64 {
    if len == 0 {
        return 0;
    }
    let full = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    // len >= 1 and width <= 64, so fewer than 64 host bits.
    let host_bits = width.saturating_sub(len);
    full & !((1u64 << host_bits) - 1)
}

/// A table entry (P4Runtime `TableEntry`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TableEntry {
    /// One match per declared key field, in order.
    pub key: Vec<FieldMatch>,
    /// Higher wins among ternary/range entries (P4Runtime); ignored otherwise.
    pub priority: i32,
    pub action: ActionCall,
    /// Configuration of the entry's direct meter, if the table has one.
    pub meter: Option<crate::meter::MeterConfig>,
}

impl TableEntry {
    pub fn new(key: Vec<FieldMatch>, action: ActionCall) -> Self {
        TableEntry {
            key,
            priority: 0,
            action,
            meter: None,
        }
    }
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }
}

/// The result of applying a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    pub hit: bool,
    pub action: ActionCall,
    /// Index of the entry hit (for its direct meter), `u32::MAX` on a miss.
    pub entry: u32,
}

/// FxHash (rustc's): a multiply and rotate per word, enough for table keys.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        // NOTE: the product's low bits depend only on the key's low bits, and
        // hashbrown picks buckets by the low bits: /24 prefixes (low byte 0)
        // would all share a few buckets. Rotating brings the well-mixed high
        // bits down (as rustc-hash 2 does).
        self.0.rotate_left(26)
    }
    fn write(&mut self, bytes: &[u8]) {
        // Keys hash as byte slices: take them a word at a time.
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        for &b in chunks.remainder() {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// In an `Lpm1` map value: a longer prefix exists under this one.
const LPM_MORE: u32 = 1 << 31;
/// In an `Lpm1` map value: a marker only, no entry of this length.
const LPM_NONE: u32 = LPM_MORE - 1;

/// A slot of [`FlatMap`]: key, which sub-table it belongs to (0: empty),
/// the `LpmSlot` flags and the action, in one place (48 bytes).
#[derive(Clone, Copy)]
struct FlatSlot {
    key: u64,
    tag: u32,
    flags: u32,
    action: ActionCall,
}

const FLAT_EMPTY: FlatSlot = FlatSlot {
    key: 0,
    tag: 0,
    flags: 0,
    action: ActionCall {
        action: ActionId(0),
        params: [0; MAX_ACTION_PARAMS],
    },
};

/// The data-plane view of a one-field table: an open-addressing hash table
/// (linear probing, at most half full) of (tag, key) -> slot, where the tag
/// names a prefix length (1 + its index, shortest first) or 1 for an exact
/// table. Rebuilt from the entries on every control-plane write (writes are
/// rare; lookups are per packet): a probe touches one slot, where a
/// SwissTable touches its control bytes and then its bucket.
struct FlatMap {
    slots: Box<[FlatSlot]>,
    /// 64 - log2(slots).
    shift: u32,
}

impl FlatMap {
    fn new(items: &[(u32, u64, u32, ActionCall)]) -> Self {
        let cap = (items.len() * 2).next_power_of_two().max(2);
        let mut m = FlatMap {
            slots: vec![FLAT_EMPTY; cap].into_boxed_slice(),
            shift: 64 - cap.trailing_zeros(),
        };
        for &(tag, key, flags, action) in items {
            debug_assert!(tag != 0);
            let mask = m.slots.len() - 1;
            let mut i = m.home(tag, key);
            while m.slots[i].tag != 0 {
                i = (i + 1) & mask;
            }
            m.slots[i] = FlatSlot {
                key,
                tag,
                flags,
                action,
            };
        }
        m
    }

    #[inline(always)]
    fn home(&self, tag: u32, key: u64) -> usize {
        // Multiply-shift (Fibonacci hashing) over the key and its tag: the
        // high bits of the product mix every bit of the key.
        ((key ^ ((tag as u64) << 58)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline(always)]
    fn get(&self, tag: u32, key: u64) -> Option<&FlatSlot> {
        self.position(tag, key).map(|i| &self.slots[i])
    }

    /// The slot of (tag, key), if present.
    #[inline(always)]
    fn position(&self, tag: u32, key: u64) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(tag, key);
        loop {
            let s = &self.slots[i];
            if s.tag == tag && s.key == key {
                return Some(i);
            }
            if s.tag == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }
}

/// The longest-prefix match of `v` by the markers of an [`Index::Lpm1`]
/// map (Waldvogel et al., SIGCOMM 1997), shortest length first: the
/// position in `map` of the entry matched, or None.
#[inline]
fn lpm_walk(map: &FlatMap, masks: &[u64], v: u64) -> Option<usize> {
    let mut best = None;
    for (j, mask) in masks.iter().enumerate() {
        let Some(p) = map.position(j as u32 + 1, v & mask) else {
            break;
        };
        let x = &map.slots[p];
        if x.flags & LPM_NONE != LPM_NONE {
            best = Some(p);
        }
        if x.flags & LPM_MORE == 0 {
            break;
        }
    }
    best
}

/// [`lpm_walk`], remembered in `memo` (a memo miss: off the hot path).
#[inline(never)]
fn lpm_walk_and_memo(map: &FlatMap, masks: &[u64], memo: &mut LpmMemo, v: u64) -> Option<usize> {
    let best = lpm_walk(map, masks, v);
    if memo.on {
        let slot = match best {
            Some(p) => {
                let x = &map.slots[p];
                MemoSlot {
                    key: v as u32,
                    res: (x.action.action.0 as u32) << 24 | ((x.flags & LPM_NONE) + 1),
                    params: x.action.params,
                }
            }
            None => MemoSlot {
                key: v as u32,
                res: MEMO_MISS,
                params: [0; MAX_ACTION_PARAMS],
            },
        };
        memo.store(slot);
    }
    best
}

/// The hit (or miss) a memo slot holds.
#[inline(always)]
fn memo_hit(
    s: &MemoSlot,
    count_hits: bool,
    counters: &mut [CounterData],
    default_action: ActionCall,
) -> Hit {
    if s.res == MEMO_MISS {
        return Hit {
            hit: false,
            action: default_action,
            entry: u32::MAX,
        };
    }
    let i = (s.res & MEMO_MISS) - 1;
    if count_hits {
        if let Some(c) = counters.get_mut(i as usize) {
            c.packets += 1;
        }
    }
    Hit {
        hit: true,
        action: ActionCall::new(ActionId((s.res >> 24) as u8), s.params),
        entry: i,
    }
}

/// The hit (or miss) of a flat-index lookup: the action comes from the
/// slot, without a second load from the entries.
#[inline(always)]
fn flat_hit(
    slot: Option<&FlatSlot>,
    count_hits: bool,
    counters: &mut [CounterData],
    default_action: ActionCall,
) -> Hit {
    match slot {
        Some(slot) => {
            let i = slot.flags & LPM_NONE;
            if count_hits {
                counters[i as usize].packets += 1;
            }
            Hit {
                hit: true,
                action: slot.action,
                entry: i,
            }
        }
        None => Hit {
            hit: false,
            action: default_action,
            entry: u32::MAX,
        },
    }
}

/// A memo of an LPM table's results by exact key (the destination
/// address): a direct-mapped array of (key, result) slots indexed by a
/// multiply-shift hash of the key. A hit gives the result of the longest-
/// prefix match in one probe, whatever the prefix lengths present; a miss
/// runs the marker walk of [`Index::Lpm1`] and stores its result. Emptied
/// whenever the index is rebuilt (every control-plane write to the table),
/// so it never returns what the current entries would not: the result of a
/// lookup is a function of the key and the entries only. This is the
/// simulator's cache of a lookup the hardware does in one TCAM or algorithmic-
/// LPM access; it is not program state (the data plane cannot see it) and
/// it does not change what matches.
struct LpmMemo {
    /// Empty until the first lookup after a rebuild; then `MEMO_MIN` slots,
    /// doubling (up to `MEMO_MAX`) when slots are overwritten more often
    /// than there are slots (keys that share a slot take turns).
    slots: Vec<MemoSlot>,
    /// 64 - log2(slots).
    shift: u32,
    /// Slots overwritten by another key since the last growth.
    evictions: u32,
    /// Keys are at most 32 bits wide: the memo is on (a wider LPM field
    /// runs the marker walk every time).
    on: bool,
}

/// A memo slot: the key and the result of its lookup, whole, so that a
/// memo hit reads this one slot (32 bytes, two to a cache line): `res` is
/// 0 for an empty slot, `MEMO_MISS` if no entry matches, else the action id
/// (bits 24-31) and 1 + the entry's index (bits 0-23); `params` are the
/// entry's action data.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct MemoSlot {
    key: u32,
    res: u32,
    params: [u64; MAX_ACTION_PARAMS],
}

const MEMO_MISS: u32 = 0x00FF_FFFF;
/// Entries a table may have for its memo to be on (the index must fit
/// below `MEMO_MISS` in 24 bits).
const MEMO_ENTRIES: u32 = 0x00FF_FFF0;
/// Slots of a memo at its first use (2 KiB) and at most (16 KiB).
const MEMO_MIN: usize = 64;
const MEMO_MAX: usize = 512;

impl LpmMemo {
    fn new(width: u8, size: u32) -> Self {
        LpmMemo {
            slots: Vec::new(),
            shift: 64,
            evictions: 0,
            on: width <= 32 && size <= MEMO_ENTRIES,
        }
    }

    /// Forgets every result (the entries changed).
    fn clear(&mut self) {
        self.slots = Vec::new();
        self.evictions = 0;
    }

    /// The slot of `key`. With no slots (`shift` 64) the shift wraps to 0
    /// and gives an index past the end, which the lookup misses (`>>` by 64
    /// panicked in debug builds, which check for overflow; the release
    /// build's instruction is the same).
    #[inline(always)]
    fn slot(&self, key: u32) -> usize {
        (key as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_shr(self.shift) as usize
    }

    /// Stores a result (after a walk).
    #[inline]
    fn store(&mut self, slot: MemoSlot) {
        let key = slot.key;
        if self.slots.is_empty() {
            self.resize(MEMO_MIN);
        }
        let i = self.slot(key);
        let s = self.slots[i];
        if s.res != 0 && s.key != key {
            self.evictions += 1;
            if self.evictions as usize > self.slots.len() && self.slots.len() < MEMO_MAX {
                self.resize(self.slots.len() * 2);
            }
        }
        let i = self.slot(key);
        self.slots[i] = slot;
    }

    fn resize(&mut self, n: usize) {
        self.slots = vec![MemoSlot::default(); n];
        self.shift = 64 - n.trailing_zeros();
        self.evictions = 0;
    }
}

// NOTE: an explicit one-byte tag: the variant is found by one compare (a
// niche-encoded tag took a few instructions to decode on every lookup).
#[repr(u8)]
enum Index {
    /// One exact field (the common case: a plain hash probe on a word).
    Exact1(FlatMap),
    Exact(FxMap<Key, u32>),
    /// One LPM field alone: (prefix mask, entries by masked value), shortest
    /// prefix first, with markers (Waldvogel et al., SIGCOMM 1997): a value
    /// carries `LPM_MORE` when a longer prefix lies under it, so a lookup
    /// stops at the first length that has neither an entry nor a marker.
    /// The slot also holds a copy of the entry's action, so a hit touches
    /// only the map's bucket.
    // (Fields in the order a lookup reads them: `repr(u8)` lays a variant
    // out as declared.)
    Lpm1 {
        /// Results by exact key (see [`LpmMemo`]).
        memo: LpmMemo,
        /// The field's bits (`prefix_mask(width, width)`): what the result
        /// depends on.
        full: u64,
        map: FlatMap,
        /// The prefix masks of the lengths present, shortest first (read
        /// only when the memo misses).
        masks: Box<[u64]>,
    },
    /// (prefix mask, entries by masked key), longest prefix first.
    Lpm {
        field: usize,
        by_len: Vec<(u64, FxMap<Key, u32>)>,
    },
    /// Entry indices by descending priority, ties in insertion order.
    Scan(Vec<u32>),
}

// NOTE: `repr(C)`, aligned to a cache line: what a lookup reads comes
// first, in the first line (the flags, the index's tag and memo); the
// declaration and the entries (control-plane state) after it.
#[repr(C, align(64))]
pub(crate) struct Table {
    /// Entries changed since the index was built: it is rebuilt at the next
    /// lookup, so installing n entries costs one rebuild, not n.
    stale: bool,
    /// `spec.direct_counter`.
    count_hits: bool,
    index: Index,
    pub(crate) counters: Vec<CounterData>,
    default_action: ActionCall,
    pub(crate) spec: TableSpec,
    pub(crate) entries: Vec<TableEntry>,
    pub(crate) meters: Vec<MeterCell>,
    /// Count of entries per (key, priority): an insert finds an existing
    /// entry without scanning the table (set-up installs thousands).
    present: FxMap<(Vec<FieldMatch>, i32), u32>,
}

impl Table {
    pub(crate) fn new(spec: TableSpec) -> Self {
        assert!(
            spec.keys.len() <= MAX_KEY_FIELDS,
            "table {}: too many key fields",
            spec.name
        );
        assert!((spec.default_action.action.0 as usize) < spec.actions.len());
        let n_lpm = spec
            .keys
            .iter()
            .filter(|k| k.kind == MatchKind::Lpm)
            .count();
        let scan = spec
            .keys
            .iter()
            .any(|k| matches!(k.kind, MatchKind::Ternary | MatchKind::Range))
            || n_lpm > 1;
        let index = if scan {
            Index::Scan(Vec::new())
        } else if spec.keys.len() == 1 && n_lpm == 1 {
            Index::Lpm1 {
                masks: Box::new([]),
                map: FlatMap::new(&[]),
                memo: LpmMemo::new(spec.keys[0].width, spec.size),
                full: prefix_mask(spec.keys[0].width, spec.keys[0].width),
            }
        } else if spec.keys.len() == 1 {
            Index::Exact1(FlatMap::new(&[]))
        } else if n_lpm == 1 {
            let field = spec
                .keys
                .iter()
                .position(|k| k.kind == MatchKind::Lpm)
                .unwrap();
            Index::Lpm {
                field,
                by_len: Vec::new(),
            }
        } else {
            Index::Exact(FxMap::default())
        };
        Table {
            default_action: spec.default_action,
            count_hits: spec.direct_counter,
            spec,
            entries: Vec::new(),
            counters: Vec::new(),
            meters: Vec::new(),
            index,
            stale: false,
            present: FxMap::default(),
        }
    }

    fn check(&self, entry: &TableEntry) -> Result<(), String> {
        let name = self.spec.name;
        if entry.key.len() != self.spec.keys.len() {
            return Err(format!(
                "{name}: key has {} fields, table has {}",
                entry.key.len(),
                self.spec.keys.len()
            ));
        }
        for (m, f) in entry.key.iter().zip(&self.spec.keys) {
            let ok = matches!(
                (m, f.kind),
                (FieldMatch::Exact(_), MatchKind::Exact)
                    | (FieldMatch::Lpm { .. }, MatchKind::Lpm)
                    | (FieldMatch::Ternary { .. }, MatchKind::Ternary)
                    | (FieldMatch::Range { .. }, MatchKind::Range)
            );
            if !ok {
                return Err(format!(
                    "{name}: field {} is {:?}, got {:?}",
                    f.name, f.kind, m
                ));
            }
            if let FieldMatch::Lpm { value, len } = m {
                if *len > f.width {
                    return Err(format!(
                        "{name}: prefix /{len} longer than {} bits",
                        f.width
                    ));
                }
                // P4Runtime (spec 9.1.1) rejects an LPM value with bits set
                // past its prefix length: such an entry would be a second
                // name for the masked one.
                if value & !prefix_mask(*len, f.width) != 0 {
                    return Err(format!(
                        "{name}: field {}: value {value:#x} has bits set past its /{len} prefix",
                        f.name
                    ));
                }
            }
            if let FieldMatch::Ternary { value, mask } = m {
                // Likewise a ternary value with bits outside its mask.
                if value & !mask != 0 {
                    return Err(format!(
                        "{name}: field {}: value {value:#x} has bits set outside its mask {mask:#x}",
                        f.name
                    ));
                }
            }
        }
        if entry.action.action.0 as usize >= self.spec.actions.len() {
            return Err(format!("{name}: no action {}", entry.action.action.0));
        }
        Ok(())
    }

    fn position(&self, key: &[FieldMatch], priority: i32) -> Option<usize> {
        let scan = matches!(self.index, Index::Scan(_));
        self.entries
            .iter()
            .position(|e| e.key == key && (!scan || e.priority == priority))
    }

    /// The `present` key of an entry: priority counts in scan tables only.
    fn present_key(&self, key: &[FieldMatch], priority: i32) -> (Vec<FieldMatch>, i32) {
        let scan = matches!(self.index, Index::Scan(_));
        (key.to_vec(), if scan { priority } else { 0 })
    }

    pub(crate) fn insert(&mut self, entry: TableEntry, now: SimTime) -> Result<(), String> {
        self.check(&entry)?;
        let present = self.present_key(&entry.key, entry.priority);
        if self.present.contains_key(&present) {
            return Err(format!("{}: entry exists", self.spec.name));
        }
        if self.entries.len() as u32 >= self.spec.size {
            return Err(format!(
                "{}: full ({} entries)",
                self.spec.name, self.spec.size
            ));
        }
        let mut meter = MeterCell::default();
        if let Some(cfg) = entry.meter {
            meter.configure(cfg, now);
        }
        self.present.insert(present, 1);
        self.entries.push(entry);
        self.counters.push(CounterData::default());
        self.meters.push(meter);
        self.stale = true;
        Ok(())
    }

    pub(crate) fn modify(&mut self, entry: TableEntry, now: SimTime) -> Result<(), String> {
        self.check(&entry)?;
        let i = self
            .position(&entry.key, entry.priority)
            .ok_or_else(|| format!("{}: no such entry", self.spec.name))?;
        if let Some(cfg) = entry.meter {
            if self.entries[i].meter != Some(cfg) {
                self.meters[i].configure(cfg, now);
            }
        }
        self.entries[i] = entry;
        if matches!(self.index, Index::Lpm1 { .. } | Index::Exact1(_)) {
            // The flat index keeps a copy of each entry's action.
            self.stale = true;
        }
        Ok(())
    }

    pub(crate) fn delete(&mut self, key: &[FieldMatch], priority: i32) -> Result<(), String> {
        let i = self
            .position(key, priority)
            .ok_or_else(|| format!("{}: no such entry", self.spec.name))?;
        let present = self.present_key(key, priority);
        self.present.remove(&present);
        self.entries.remove(i);
        self.counters.remove(i);
        self.meters.remove(i);
        self.stale = true;
        Ok(())
    }

    pub(crate) fn set_default(&mut self, action: ActionCall) -> Result<(), String> {
        if action.action.0 as usize >= self.spec.actions.len() {
            return Err(format!("{}: no action {}", self.spec.name, action.action.0));
        }
        self.default_action = action;
        Ok(())
    }

    fn exact_key(&self, entry: &TableEntry) -> Key {
        let mut k = [0u64; MAX_KEY_FIELDS];
        for (i, m) in entry.key.iter().enumerate() {
            k[i] = match *m {
                FieldMatch::Exact(v) => v,
                FieldMatch::Lpm { value, len } => value & prefix_mask(len, self.spec.keys[i].width),
                _ => 0,
            };
        }
        k
    }

    /// Rebuilds a stale index (entries changed since the last lookup).
    #[cold]
    #[inline(never)]
    fn refresh(&mut self) {
        self.rebuild();
        self.stale = false;
    }

    fn rebuild(&mut self) {
        let keys: Vec<Key> = self.entries.iter().map(|e| self.exact_key(e)).collect();
        match &mut self.index {
            Index::Exact1(map) => {
                let items: Vec<_> = keys
                    .iter()
                    .zip(&self.entries)
                    .enumerate()
                    .map(|(i, (k, e))| (1, k[0], i as u32, e.action))
                    .collect();
                *map = FlatMap::new(&items);
            }
            Index::Lpm1 {
                masks, map, memo, ..
            } => {
                memo.clear();
                let width = self.spec.keys[0].width;
                let len_of = |e: &TableEntry| match e.key[0] {
                    FieldMatch::Lpm { len, .. } => len,
                    _ => unreachable!("checked on insert"),
                };
                let mut lens: Vec<u8> = self.entries.iter().map(len_of).collect();
                lens.sort_unstable();
                lens.dedup();
                *masks = lens.iter().map(|&l| prefix_mask(l, width)).collect();
                let tag_of =
                    |len: u8| 1 + lens.iter().position(|&l| l == len).expect("listed") as u32;
                // (tag, masked key) -> (flags, action): entries, then markers:
                // every shorter length learns that this prefix lies under it.
                let mut slots: FxMap<(u32, u64), (u32, ActionCall)> = FxMap::default();
                for (i, e) in self.entries.iter().enumerate() {
                    slots.insert((tag_of(len_of(e)), keys[i][0]), (i as u32, e.action));
                }
                for (i, e) in self.entries.iter().enumerate() {
                    let m = len_of(e);
                    for (j, &l) in lens.iter().enumerate() {
                        if l >= m {
                            break;
                        }
                        slots
                            .entry((j as u32 + 1, keys[i][0] & masks[j]))
                            .or_insert((LPM_NONE, ActionCall::default()))
                            .0 |= LPM_MORE;
                    }
                }
                let mut items: Vec<_> = slots
                    .into_iter()
                    .map(|((tag, key), (flags, action))| (tag, key, flags, action))
                    .collect();
                // Insertion order decides probe positions: keep it independent
                // of the hash map's iteration order.
                items.sort_unstable_by_key(|&(tag, key, _, _)| (tag, key));
                *map = FlatMap::new(&items);
            }
            Index::Exact(map) => {
                map.clear();
                for (i, k) in keys.into_iter().enumerate() {
                    map.insert(k, i as u32);
                }
            }
            Index::Lpm { field, by_len } => {
                let width = self.spec.keys[*field].width;
                let mut lens: Vec<u8> = self
                    .entries
                    .iter()
                    .map(|e| match e.key[*field] {
                        FieldMatch::Lpm { len, .. } => len,
                        _ => unreachable!("checked on insert"),
                    })
                    .collect();
                let entry_lens = lens.clone();
                lens.sort_unstable_by(|a, b| b.cmp(a));
                lens.dedup();
                by_len.clear();
                for len in lens {
                    let mut map = FxMap::default();
                    for (i, k) in keys.iter().enumerate() {
                        if entry_lens[i] == len {
                            map.insert(*k, i as u32);
                        }
                    }
                    by_len.push((prefix_mask(len, width), map));
                }
            }
            Index::Scan(order) => {
                order.clear();
                order.extend(0..self.entries.len() as u32);
                let entries = &self.entries;
                // Stable: equal priorities keep insertion order.
                order.sort_by(|&a, &b| {
                    entries[b as usize]
                        .priority
                        .cmp(&entries[a as usize].priority)
                });
            }
        }
    }

    /// Looks `key` up (fields beyond the declared ones are ignored).
    #[inline(always)]
    pub(crate) fn lookup(&mut self, key: &Key) -> Hit {
        if self.stale {
            self.refresh();
        }
        match &mut self.index {
            Index::Exact1(map) => {
                let slot = map.get(1, key[0]);
                flat_hit(
                    slot,
                    self.count_hits,
                    &mut self.counters,
                    self.default_action,
                )
            }
            Index::Lpm1 {
                masks,
                map,
                memo,
                full,
            } => {
                let v = key[0] & *full;
                // (An empty memo, off or just emptied, has no slot.)
                if let Some(s) = memo.slots.get(memo.slot(v as u32)) {
                    if s.key == v as u32 && s.res != 0 {
                        return memo_hit(
                            s,
                            self.count_hits,
                            &mut self.counters,
                            self.default_action,
                        );
                    }
                }
                let best = lpm_walk_and_memo(map, masks, memo, v);
                let best = best.map(|p| &map.slots[p]);
                flat_hit(
                    best,
                    self.count_hits,
                    &mut self.counters,
                    self.default_action,
                )
            }
            _ => self.lookup_general(key),
        }
    }

    /// [`Self::lookup`] for tables without a flat index.
    #[inline(never)]
    fn lookup_general(&mut self, key: &Key) -> Hit {
        let found = match &self.index {
            Index::Exact1(_) | Index::Lpm1 { .. } => unreachable!("flat lookups are inline"),
            Index::Exact(map) => {
                let mut k = [0u64; MAX_KEY_FIELDS];
                k[..self.spec.keys.len()].copy_from_slice(&key[..self.spec.keys.len()]);
                map.get(&k).copied()
            }
            Index::Lpm { field, by_len } => {
                let mut k = [0u64; MAX_KEY_FIELDS];
                k[..self.spec.keys.len()].copy_from_slice(&key[..self.spec.keys.len()]);
                let v = k[*field];
                by_len.iter().find_map(|(mask, map)| {
                    k[*field] = v & mask;
                    map.get(&k).copied()
                })
            }
            Index::Scan(order) => order.iter().copied().find(|&i| {
                let e = &self.entries[i as usize];
                e.key
                    .iter()
                    .zip(&self.spec.keys)
                    .enumerate()
                    .all(|(f, (m, kf))| m.matches(key[f], kf.width))
            }),
        };
        match found {
            Some(i) => {
                if self.spec.direct_counter {
                    self.counters[i as usize].packets += 1;
                }
                Hit {
                    hit: true,
                    action: self.entries[i as usize].action,
                    entry: i,
                }
            }
            None => Hit {
                hit: false,
                action: self.default_action,
                entry: u32::MAX,
            },
        }
    }
}

/// Declaration of an action selector (v1model `action_selector(algo, size,
/// width)`): groups of members, one picked per packet by a hash.
#[derive(Clone, Debug, Serialize)]
pub struct SelectorSpec {
    pub name: &'static str,
    /// The hash the program feeds the selector with.
    pub algo: HashAlgo,
    /// Action names of the members.
    pub actions: Vec<&'static str>,
    pub max_groups: u32,
    pub max_members_per_group: u32,
}

/// Handle of an action selector in its pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SelectorId(pub(crate) u16);

pub(crate) struct ActionSelector {
    pub(crate) spec: SelectorSpec,
    /// The groups, indexed by group id.
    pub(crate) groups: Vec<Group>,
}

/// A group of an action selector: its members and what picks one.
#[derive(Clone, Default)]
pub(crate) struct Group {
    pub(crate) members: Vec<ActionCall>,
    /// The multiplier of [`fast_mod`] for the member count (beside the
    /// members' pointer: a pick reads one line, then the member's).
    magic: u64,
}

/// The multiplier `M` of [`fast_mod`] for divisor `d` (d > 0).
pub(crate) fn fast_mod_magic(d: u32) -> u64 {
    (u64::MAX / d as u64).wrapping_add(1)
}

/// `a % d` without a division, by the precomputed `M` of `d` (Lemire,
/// Kaser and Kurz, "Faster remainder by direct computation", 2019: exact for
/// every 32-bit `a` and `d`). The selector's member arithmetic is fixed-
/// function hardware, not program code; this only makes the model's
/// arithmetic cheaper and picks the same member as `%`.
#[inline]
pub(crate) fn fast_mod(a: u32, m: u64, d: u32) -> u32 {
    let low = m.wrapping_mul(a as u64);
    ((low as u128 * d as u128) >> 64) as u32
}

impl ActionSelector {
    pub(crate) fn new(spec: SelectorSpec) -> Self {
        ActionSelector {
            spec,
            groups: Vec::new(),
        }
    }

    pub(crate) fn set_group(&mut self, group: u32, members: Vec<ActionCall>) -> Result<(), String> {
        let name = self.spec.name;
        if group >= self.spec.max_groups {
            return Err(format!(
                "{name}: group {group} beyond {}",
                self.spec.max_groups
            ));
        }
        if members.len() as u32 > self.spec.max_members_per_group {
            return Err(format!(
                "{name}: {} members, at most {}",
                members.len(),
                self.spec.max_members_per_group
            ));
        }
        if let Some(m) = members
            .iter()
            .find(|m| m.action.0 as usize >= self.spec.actions.len())
        {
            return Err(format!("{name}: no action {}", m.action.0));
        }
        if self.groups.len() <= group as usize {
            self.groups.resize(group as usize + 1, Group::default());
        }
        self.groups[group as usize] = Group {
            magic: fast_mod_magic(members.len().max(1) as u32),
            members,
        };
        Ok(())
    }

    /// The member of `group` that `hash` picks (`None` for an empty group).
    #[inline]
    pub(crate) fn select(&self, group: u32, hash: u32) -> Option<ActionCall> {
        let g = self.groups.get(group as usize)?;
        if g.members.is_empty() {
            return None;
        }
        // The selector's own member arithmetic (hardware), not program code:
        // hash % members, without the division.
        let n = g.members.len() as u32;
        g.members.get(fast_mod(hash, g.magic, n) as usize).copied()
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn fast_mod_is_the_remainder() {
        const DIVISORS: [u32; 14] = [1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 64, 1000, 65535, u32::MAX];
        const VALUES: [u32; 10] = [
            0,
            1,
            2,
            3,
            17,
            255,
            1 << 16,
            0x9e37_79b9,
            u32::MAX - 1,
            u32::MAX,
        ];
        for d in DIVISORS {
            let m = super::fast_mod_magic(d);
            for a in VALUES {
                assert_eq!(super::fast_mod(a, m, d), a % d, "{a} % {d}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn fast_mod_matches_the_remainder(a: u32, d in 1u32..) {
            proptest::prop_assert_eq!(super::fast_mod(a, super::fast_mod_magic(d), d), a % d);
        }
    }
    use super::*;

    const HIT_A: ActionId = ActionId(1);

    fn spec(keys: Vec<KeyField>) -> TableSpec {
        TableSpec {
            name: "t",
            keys,
            actions: vec!["miss", "act"],
            size: 64,
            default_action: ActionCall::bare(ActionId(0)),
            direct_counter: true,
            direct_meter: None,
        }
    }

    fn act(v: u64) -> ActionCall {
        ActionCall::new(HIT_A, [v, 0, 0])
    }

    fn key1(v: u64) -> Key {
        [v, 0, 0, 0]
    }

    fn ip(a: u8, b: u8, c: u8, d: u8) -> u64 {
        u32::from_be_bytes([a, b, c, d]) as u64
    }

    #[test]
    fn lpm_picks_the_longest_prefix() {
        let mut t = Table::new(spec(vec![KeyField {
            name: "dst",
            kind: MatchKind::Lpm,
            width: 32,
        }]));
        let lpm = |v, len| vec![FieldMatch::Lpm { value: v, len }];
        t.insert(TableEntry::new(lpm(0, 0), act(0)), SimTime::ZERO)
            .unwrap();
        t.insert(
            TableEntry::new(lpm(ip(10, 0, 0, 0), 8), act(8)),
            SimTime::ZERO,
        )
        .unwrap();
        t.insert(
            TableEntry::new(lpm(ip(10, 1, 2, 0), 24), act(24)),
            SimTime::ZERO,
        )
        .unwrap();
        t.insert(
            TableEntry::new(lpm(ip(10, 1, 2, 3), 32), act(32)),
            SimTime::ZERO,
        )
        .unwrap();
        assert_eq!(t.lookup(&key1(ip(10, 1, 2, 3))).action, act(32));
        assert_eq!(t.lookup(&key1(ip(10, 1, 2, 4))).action, act(24));
        assert_eq!(t.lookup(&key1(ip(10, 9, 2, 3))).action, act(8));
        assert_eq!(t.lookup(&key1(ip(11, 1, 2, 3))).action, act(0));
        // Modifying an entry's action is seen by the next lookup.
        t.modify(
            TableEntry::new(lpm(ip(10, 1, 2, 0), 24), act(124)),
            SimTime::ZERO,
        )
        .unwrap();
        assert_eq!(t.lookup(&key1(ip(10, 1, 2, 4))).action, act(124));
        // Deleting the /24 falls back to the /8.
        t.delete(&lpm(ip(10, 1, 2, 0), 24), 0).unwrap();
        assert_eq!(t.lookup(&key1(ip(10, 1, 2, 4))).action, act(8));
        // Deleting the default route leaves a miss: the default action.
        t.delete(&lpm(0, 0), 0).unwrap();
        let miss = t.lookup(&key1(ip(11, 1, 2, 3)));
        assert!(!miss.hit);
        assert_eq!(miss.action, ActionCall::bare(ActionId(0)));
        // Host bits in the entry's value are refused (P4Runtime).
        assert!(t
            .insert(
                TableEntry::new(lpm(ip(12, 0, 0, 77), 8), act(12)),
                SimTime::ZERO,
            )
            .is_err());
        t.insert(
            TableEntry::new(lpm(ip(12, 0, 0, 0), 8), act(12)),
            SimTime::ZERO,
        )
        .unwrap();
        assert_eq!(t.lookup(&key1(ip(12, 5, 5, 5))).action, act(12));
    }

    proptest::proptest! {
        /// The marker-based LPM index agrees with a brute-force longest-prefix
        /// scan, whatever the prefixes (nested, disjoint, duplicated lengths).
        #[test]
        fn lpm_index_matches_a_linear_scan(
            prefixes in proptest::collection::vec((0u64..1 << 12, 0u8..=12), 1..40),
            probes in proptest::collection::vec(0u64..1 << 12, 1..60),
        ) {
            let mut t = Table::new(TableSpec {
                size: 1024,
                ..spec(vec![KeyField { name: "k", kind: MatchKind::Lpm, width: 12 }])
            });
            let mut kept: Vec<(u64, u8, u64)> = Vec::new();
            for (i, &(v, len)) in prefixes.iter().enumerate() {
                let masked = v & prefix_mask(len, 12);
                if kept.iter().any(|&(m, l, _)| m == masked && l == len) {
                    continue;
                }
                t.insert(TableEntry::new(vec![FieldMatch::Lpm { value: masked, len }], act(i as u64)), SimTime::ZERO).unwrap();
                kept.push((masked, len, i as u64));
            }
            for &p in &probes {
                let want = kept
                    .iter()
                    .filter(|&&(m, l, _)| p & prefix_mask(l, 12) == m)
                    .max_by_key(|&&(_, l, _)| l)
                    .map(|&(_, _, a)| act(a));
                let got = t.lookup(&key1(p));
                proptest::prop_assert_eq!(got.hit, want.is_some());
                if let Some(w) = want {
                    proptest::prop_assert_eq!(got.action, w);
                }
            }
        }
    }

    /// What a control plane does to an LPM table between lookups.
    #[derive(Clone, Debug)]
    enum LpmOp {
        Insert(u64, u8, u64),
        /// Modifies (or deletes) the `n % len`-th entry kept.
        Modify(usize, u64),
        Delete(usize),
        Lookup(u64),
    }

    fn lpm_op() -> impl proptest::strategy::Strategy<Value = LpmOp> {
        use proptest::prelude::*;
        // Addresses in a few /16s (as a fabric's hosts are), so that
        // prefixes nest and lookups repeat (memo hits) and collide.
        let addr = (0u64..4, 0u64..1 << 12).prop_map(|(net, low)| 0x0a00_0000 | net << 16 | low);
        prop_oneof![
            2 => (addr.clone(), prop_oneof![Just(0u8), Just(8), Just(16), Just(22), Just(24), Just(30), Just(32), 0u8..=32], 0u64..1000)
                .prop_map(|(a, l, x)| LpmOp::Insert(a, l, x)),
            1 => (any::<usize>(), 0u64..1000).prop_map(|(i, x)| LpmOp::Modify(i, x)),
            1 => any::<usize>().prop_map(LpmOp::Delete),
            12 => addr.prop_map(LpmOp::Lookup),
        ]
    }

    proptest::proptest! {
        /// The LPM table (marker walk and the exact-key memo in front of
        /// it) gives what a brute-force longest-prefix scan of the current
        /// entries gives, whatever the order of control-plane inserts,
        /// modifies and deletes between lookups (the memo is emptied by
        /// every write), and however many keys share memo slots.
        #[test]
        fn lpm_with_memo_matches_a_scan_under_updates(
            ops in proptest::collection::vec(lpm_op(), 1..600),
        ) {
            let mut t = Table::new(TableSpec {
                size: 4096,
                ..spec(vec![KeyField { name: "dst", kind: MatchKind::Lpm, width: 32 }])
            });
            // (masked prefix, len, action value, value as written)
            let mut kept: Vec<(u64, u8, u64, u64)> = Vec::new();
            for op in ops {
                match op {
                    LpmOp::Insert(v, len, x) => {
                        // P4Runtime: an LPM value has no bits past its length.
                        let masked = v & prefix_mask(len, 32);
                        let v = masked;
                        let exists = kept.iter().any(|&(m, l, _, _)| m == masked && l == len);
                        let r = t.insert(TableEntry::new(vec![FieldMatch::Lpm { value: v, len }], act(x)), SimTime::ZERO);
                        proptest::prop_assert_eq!(r.is_ok(), !exists);
                        if !exists {
                            kept.push((masked, len, x, v));
                        }
                    }
                    LpmOp::Modify(i, x) if !kept.is_empty() => {
                        let i = i % kept.len();
                        let (_, l, _, v) = kept[i];
                        t.modify(TableEntry::new(vec![FieldMatch::Lpm { value: v, len: l }], act(x)), SimTime::ZERO).unwrap();
                        kept[i].2 = x;
                    }
                    LpmOp::Delete(i) if !kept.is_empty() => {
                        let (_, l, _, v) = kept.remove(i % kept.len());
                        t.delete(&[FieldMatch::Lpm { value: v, len: l }], 0).unwrap();
                    }
                    LpmOp::Modify(..) | LpmOp::Delete(_) => {}
                    LpmOp::Lookup(p) => {
                        let want = kept
                            .iter()
                            .filter(|&&(m, l, _, _)| p & prefix_mask(l, 32) == m)
                            .max_by_key(|&&(_, l, _, _)| l)
                            .map(|&(_, _, a, _)| act(a));
                        // Twice: the second is answered by the memo.
                        for _ in 0..2 {
                            let got = t.lookup(&key1(p));
                            proptest::prop_assert_eq!(got.hit, want.is_some());
                            proptest::prop_assert_eq!(got.action, want.unwrap_or(ActionCall::bare(ActionId(0))));
                            if got.hit {
                                let e = &t.entries[got.entry as usize];
                                proptest::prop_assert_eq!(e.action, got.action);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn lpm_memo_grows_and_stays_exact_with_many_keys() {
        // More distinct keys than the memo's largest size: slots are shared,
        // overwritten and grown; every answer stays the scan's.
        let mut t = Table::new(TableSpec {
            size: 4096,
            ..spec(vec![KeyField {
                name: "dst",
                kind: MatchKind::Lpm,
                width: 32,
            }])
        });
        let lpm = |v, len| vec![FieldMatch::Lpm { value: v, len }];
        t.insert(
            TableEntry::new(lpm(ip(10, 0, 0, 0), 8), act(8)),
            SimTime::ZERO,
        )
        .unwrap();
        for r in 0..64u8 {
            t.insert(
                TableEntry::new(lpm(ip(10, 0, r, 0), 24), act(1000 + r as u64)),
                SimTime::ZERO,
            )
            .unwrap();
        }
        t.insert(
            TableEntry::new(lpm(ip(10, 0, 3, 7), 32), act(32)),
            SimTime::ZERO,
        )
        .unwrap();
        for round in 0..3 {
            for r in 0..128u8 {
                for h in 0..40u8 {
                    let a = ip(10, 0, r, h);
                    let want = if (r, h) == (3, 7) {
                        act(32)
                    } else if r < 64 {
                        act(1000 + r as u64)
                    } else {
                        act(8)
                    };
                    assert_eq!(t.lookup(&key1(a)).action, want, "round {round} {a:#x}");
                }
            }
        }
        let Index::Lpm1 { memo, .. } = &t.index else {
            panic!("one LPM field: Lpm1");
        };
        assert_eq!(memo.slots.len(), MEMO_MAX);
        // A key above the field's width matches as its low 32 bits do.
        assert_eq!(t.lookup(&key1((1 << 40) | ip(10, 0, 3, 7))).action, act(32));
        // Direct counters count memo hits as walks: every lookup hit once.
        let total: u64 = t.counters.iter().map(|c| c.packets).sum();
        assert_eq!(total, 3 * 128 * 40 + 1);
        assert_eq!(t.counters[65].packets, 3 + 1, "the /32");
        assert_eq!(t.counters[0].packets, 3 * 64 * 40, "the /8");
    }

    #[test]
    fn ternary_highest_priority_wins() {
        let mut t = Table::new(spec(vec![KeyField {
            name: "dscp",
            kind: MatchKind::Ternary,
            width: 6,
        }]));
        let tern = |value, mask| vec![FieldMatch::Ternary { value, mask }];
        t.insert(
            TableEntry::new(tern(0, 0), act(1)).with_priority(1),
            SimTime::ZERO,
        )
        .unwrap();
        t.insert(
            TableEntry::new(tern(0b100000, 0b100000), act(2)).with_priority(10),
            SimTime::ZERO,
        )
        .unwrap();
        t.insert(
            TableEntry::new(tern(0b101000, 0b111000), act(3)).with_priority(20),
            SimTime::ZERO,
        )
        .unwrap();
        // Same priority as an earlier entry: the earlier one wins.
        t.insert(
            TableEntry::new(tern(0b101000, 0b101000), act(4)).with_priority(20),
            SimTime::ZERO,
        )
        .unwrap();
        assert_eq!(t.lookup(&key1(0b101011)).action, act(3));
        assert_eq!(t.lookup(&key1(0b110000)).action, act(2));
        assert_eq!(t.lookup(&key1(0b000001)).action, act(1));
        // A higher priority inserted later still wins.
        t.insert(
            TableEntry::new(tern(0b000001, 0b000001), act(5)).with_priority(30),
            SimTime::ZERO,
        )
        .unwrap();
        assert_eq!(t.lookup(&key1(0b101011)).action, act(5));
        assert_eq!(t.lookup(&key1(0b101010)).action, act(3));
    }

    #[test]
    fn range_and_exact_keys_with_default_action() {
        let mut t = Table::new(spec(vec![
            KeyField {
                name: "port",
                kind: MatchKind::Exact,
                width: 9,
            },
            KeyField {
                name: "qdepth",
                kind: MatchKind::Range,
                width: 19,
            },
        ]));
        t.set_default(act(99)).unwrap();
        let e = |port, lo, hi| vec![FieldMatch::Exact(port), FieldMatch::Range { lo, hi }];
        t.insert(
            TableEntry::new(e(1, 0, 9), act(10)).with_priority(1),
            SimTime::ZERO,
        )
        .unwrap();
        t.insert(
            TableEntry::new(e(1, 10, 99), act(20)).with_priority(1),
            SimTime::ZERO,
        )
        .unwrap();
        t.insert(
            TableEntry::new(e(2, 5, 5), act(30)).with_priority(1),
            SimTime::ZERO,
        )
        .unwrap();
        assert_eq!(t.lookup(&[1, 0, 0, 0]).action, act(10));
        assert_eq!(t.lookup(&[1, 9, 0, 0]).action, act(10));
        assert_eq!(t.lookup(&[1, 10, 0, 0]).action, act(20));
        assert_eq!(t.lookup(&[1, 99, 0, 0]).action, act(20));
        assert_eq!(t.lookup(&[1, 100, 0, 0]).action, act(99));
        assert_eq!(t.lookup(&[2, 5, 0, 0]).action, act(30));
        assert_eq!(t.lookup(&[2, 6, 0, 0]).action, act(99));
        assert!(!t.lookup(&[3, 5, 0, 0]).hit);
    }

    #[test]
    fn exact_table_counts_hits_and_rejects_bad_writes() {
        let mut t = Table::new(spec(vec![KeyField {
            name: "tor",
            kind: MatchKind::Exact,
            width: 24,
        }]));
        t.insert(
            TableEntry::new(vec![FieldMatch::Exact(7)], act(7)),
            SimTime::ZERO,
        )
        .unwrap();
        assert!(t
            .insert(
                TableEntry::new(vec![FieldMatch::Exact(7)], act(8)),
                SimTime::ZERO
            )
            .is_err());
        assert!(t
            .insert(
                TableEntry::new(vec![FieldMatch::Lpm { value: 1, len: 3 }], act(8)),
                SimTime::ZERO
            )
            .is_err());
        assert!(t
            .insert(
                TableEntry::new(vec![FieldMatch::Exact(8)], ActionCall::bare(ActionId(5))),
                SimTime::ZERO
            )
            .is_err());
        for _ in 0..3 {
            assert_eq!(t.lookup(&key1(7)).action, act(7));
        }
        assert!(!t.lookup(&key1(8)).hit);
        assert_eq!(t.counters[0].packets, 3);
        t.modify(
            TableEntry::new(vec![FieldMatch::Exact(7)], act(70)),
            SimTime::ZERO,
        )
        .unwrap();
        assert_eq!(t.lookup(&key1(7)).action, act(70));
    }

    #[test]
    fn table_size_is_enforced() {
        let mut s = spec(vec![KeyField {
            name: "k",
            kind: MatchKind::Exact,
            width: 8,
        }]);
        s.size = 2;
        let mut t = Table::new(s);
        t.insert(
            TableEntry::new(vec![FieldMatch::Exact(1)], act(1)),
            SimTime::ZERO,
        )
        .unwrap();
        t.insert(
            TableEntry::new(vec![FieldMatch::Exact(2)], act(1)),
            SimTime::ZERO,
        )
        .unwrap();
        assert!(t
            .insert(
                TableEntry::new(vec![FieldMatch::Exact(3)], act(1)),
                SimTime::ZERO
            )
            .is_err());
    }

    #[test]
    fn prefix_masks() {
        assert_eq!(prefix_mask(0, 32), 0);
        assert_eq!(prefix_mask(8, 32), 0xFF00_0000);
        assert_eq!(prefix_mask(32, 32), 0xFFFF_FFFF);
        assert_eq!(prefix_mask(64, 64), u64::MAX);
        assert_eq!(prefix_mask(1, 64), 1 << 63);
    }

    #[test]
    fn values_with_bits_past_their_prefix_or_mask_are_refused() {
        let mut t = Table::new(spec(vec![KeyField {
            name: "dst",
            kind: MatchKind::Lpm,
            width: 32,
        }]));
        let lpm = |value, len| TableEntry::new(vec![FieldMatch::Lpm { value, len }], act(1));
        let err = t.insert(lpm(0x0a00_0001, 24), SimTime::ZERO).unwrap_err();
        assert!(err.contains("bits set past its /24 prefix"), "{err}");
        assert!(t.insert(lpm(1, 0), SimTime::ZERO).is_err());
        assert!(t.insert(lpm(1 << 32, 32), SimTime::ZERO).is_err());
        t.insert(lpm(0x0a00_0000, 24), SimTime::ZERO).unwrap();
        t.insert(lpm(0, 0), SimTime::ZERO).unwrap();
        let mut t = Table::new(spec(vec![KeyField {
            name: "tos",
            kind: MatchKind::Ternary,
            width: 8,
        }]));
        let tern = |value, mask| TableEntry::new(vec![FieldMatch::Ternary { value, mask }], act(1));
        let err = t.insert(tern(0x3, 0x1), SimTime::ZERO).unwrap_err();
        assert!(err.contains("outside its mask"), "{err}");
        t.insert(tern(0x1, 0x1), SimTime::ZERO).unwrap();
    }
}
