//! A program's declared objects (tables, action selectors, registers,
//! counters, meters, hashes, estimators, the packet replication engine's
//! multicast groups and clone sessions), the control-plane writes that change
//! them, and [`Ctx`], the only door the data plane has to them during a pass.
//!
//! What [`Ctx`] offers is what a PISA stage offers: table lookups, one
//! read-modify-write per register array, counter and meter execution, hashes,
//! a random number, a digest to the CPU. There is no division, no floating
//! point and no iteration over entries or ports: the API has none (P4TE
//! sections 3.1 and 3.4). Scheme crates also deny `clippy::float_arithmetic`
//! and `clippy::integer_division` in their data-plane code.

use crate::counter::{CounterArray, CounterData, CounterId, CounterSpec};
use crate::estimator::{EstimatorArray, EstimatorId, EstimatorSpec, UtilEstimator};
use crate::hash::{HashExtern, HashId, HashInput, HashSpec};
use crate::meta::Gress;
use crate::meter::{Color, MeterArray, MeterCell, MeterConfig, MeterId, MeterSpec};
use crate::register::{RegisterArray, RegisterId, RegisterSpec};
use crate::table::{
    ActionCall, ActionSelector, FieldMatch, Hit, Key, SelectorId, SelectorSpec, Table, TableEntry,
    TableId, TableSpec,
};
use pisanet_engine::{SimRng, SimTime};
use pisanet_net::PortNo;
use rand::Rng;
use serde::Serialize;

/// A breach of the PISA rules by a program, recorded and never fatal to the
/// pass: the loop turns any into a failed run; tests assert there are none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub at: SimTime,
    pub kind: ViolationKind,
    /// The object or primitive involved.
    pub object: &'static str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ViolationKind {
    /// A register array accessed twice in one pass (P4TE section 3.2).
    RegisterTwice,
    /// A register array accessed from both ingress and egress.
    RegisterBothGresses,
    RegisterIndexOutOfRange,
    CounterIndexOutOfRange,
    MeterIndexOutOfRange,
    EstimatorPortOutOfRange,
    /// Egress wrote `egress_spec` (only a drop is possible there).
    EgressPortChanged,
    /// `resubmit` in egress, `recirculate` or `send_to_cpu` in egress, ...
    PrimitiveInWrongGress,
    /// I2E clone or resubmit without `keep_original` declared.
    OriginalNotKept,
    /// A hash fed other fields than it declares.
    HashInputMismatch,
}

/// A digest to the switch CPU (v1model `digest(receiver, data)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest {
    pub receiver: u16,
    pub data: [u64; 4],
}

/// A periodic application of the packet generator (Tofino pktgen).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct PktGenSpec {
    pub app: u8,
    pub period_ps: u64,
    /// First packet at this time (ps).
    pub start_ps: u64,
}

/// P4Runtime `Update.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateType {
    Insert,
    Modify,
    Delete,
}

/// One control-plane write (a P4Runtime `Update`): one entity at a time.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    /// Insert, modify or delete a table entry (delete matches key and priority).
    TableEntry {
        table: TableId,
        update: UpdateType,
        entry: TableEntry,
    },
    /// The action a miss runs.
    DefaultAction { table: TableId, action: ActionCall },
    /// Creates or replaces an action-selector group (empty: no members).
    SelectorGroup {
        selector: SelectorId,
        group: u32,
        members: Vec<ActionCall>,
    },
    Register {
        register: RegisterId,
        index: u32,
        value: u64,
    },
    Meter {
        meter: MeterId,
        index: u32,
        config: MeterConfig,
    },
    /// Creates or replaces a multicast group: (port, replication id) per copy.
    /// An empty list deletes it. Group 0 is reserved (no multicast).
    MulticastGroup {
        group: u16,
        replicas: Vec<(PortNo, u16)>,
    },
    /// Maps a clone session to a port (`None` deletes it).
    CloneSession { session: u16, port: Option<PortNo> },
    /// P4Runtime `CloneSessionEntry` with several replicas: one copy per
    /// port, in order. A replica may be [`CPU_PORT`](crate::CPU_PORT) (a
    /// packet-in carrying the preserved user metadata) or
    /// [`RECIRC_PORT`](crate::RECIRC_PORT) (the copy enters ingress again
    /// through the recirculation port, as Tofino mirrors to a loopback port).
    /// An empty list deletes the session.
    CloneSessionReplicas { session: u16, ports: Vec<PortNo> },
}

/// The state of a program: every object it declared.
// NOTE: `repr(C)`: what a pass reads comes first (the objects a program
// uses most, the digest and violation counts checked after every pass).
#[repr(C)]
pub struct Pipeline {
    pub(crate) tables: Vec<Table>,
    pub(crate) selectors: Vec<ActionSelector>,
    pub(crate) hashes: Vec<HashExtern>,
    pub(crate) digests: Vec<Digest>,
    pub(crate) violation_count: u64,
    pub(crate) registers: Vec<RegisterArray>,
    pub(crate) counters: Vec<CounterArray>,
    pub(crate) meters: Vec<MeterArray>,
    pub(crate) estimators: Vec<EstimatorArray>,
    pub(crate) name: &'static str,
    pub(crate) pktgen: Vec<PktGenSpec>,
    /// Dependent stages of ingress and egress, as the program declares them.
    pub(crate) stages: (u8, u8),
    pub(crate) keep_original: bool,
    pub(crate) mcast_groups: Vec<Vec<(PortNo, u16)>>,
    /// Replica ports of each clone session (empty: no session).
    pub(crate) clone_sessions: Vec<Vec<PortNo>>,
    pub(crate) violations: Vec<Violation>,
}

/// Violations kept in full; later ones are only counted.
const KEEP_VIOLATIONS: usize = 32;

impl Pipeline {
    pub fn new(name: &'static str) -> Self {
        Pipeline {
            name,
            tables: Vec::new(),
            selectors: Vec::new(),
            registers: Vec::new(),
            counters: Vec::new(),
            meters: Vec::new(),
            hashes: Vec::new(),
            estimators: Vec::new(),
            pktgen: Vec::new(),
            stages: (0, 0),
            keep_original: false,
            mcast_groups: Vec::new(),
            clone_sessions: Vec::new(),
            violations: Vec::new(),
            violation_count: 0,
            digests: Vec::new(),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    // ---- declarations (compile time of the P4 program) ----

    pub fn table(&mut self, spec: TableSpec) -> TableId {
        self.tables.push(Table::new(spec));
        TableId(self.tables.len() as u16 - 1)
    }

    pub fn selector(&mut self, spec: SelectorSpec) -> SelectorId {
        self.selectors.push(ActionSelector::new(spec));
        SelectorId(self.selectors.len() as u16 - 1)
    }

    pub fn register(&mut self, spec: RegisterSpec) -> RegisterId {
        self.registers.push(RegisterArray::new(spec));
        RegisterId(self.registers.len() as u16 - 1)
    }

    pub fn counter(&mut self, spec: CounterSpec) -> CounterId {
        let cells = vec![CounterData::default(); spec.size as usize];
        self.counters.push(CounterArray { spec, cells });
        CounterId(self.counters.len() as u16 - 1)
    }

    pub fn meter(&mut self, spec: MeterSpec) -> MeterId {
        let cells = vec![MeterCell::default(); spec.size as usize];
        self.meters.push(MeterArray { spec, cells });
        MeterId(self.meters.len() as u16 - 1)
    }

    pub fn hash(&mut self, spec: HashSpec) -> HashId {
        let input_bits = spec.fields.iter().map(|f| f.1 as u32).sum();
        self.hashes.push(HashExtern { spec, input_bits });
        HashId(self.hashes.len() as u16 - 1)
    }

    pub fn estimator(&mut self, spec: EstimatorSpec) -> EstimatorId {
        let cells = vec![UtilEstimator::new(SimTime(spec.tau_ps)); spec.ports as usize];
        self.estimators.push(EstimatorArray { spec, cells });
        EstimatorId(self.estimators.len() as u16 - 1)
    }

    /// A periodic packet-generator application (see `DataPlane::generate`).
    pub fn packet_generator(&mut self, spec: PktGenSpec) {
        assert!(
            spec.period_ps > 0,
            "packet generator period must be positive"
        );
        self.pktgen.push(spec);
    }

    /// The number of dependent match-action stages of ingress and egress, as
    /// the program's table dependency graph has them (P4TE section 6.2.2).
    pub fn stages(&mut self, ingress: u8, egress: u8) {
        self.stages = (ingress, egress);
    }

    /// The program uses I2E clones or resubmission, which need the packet as
    /// it entered ingress: the model then keeps a copy of it for each pass.
    pub fn keep_original(&mut self) {
        self.keep_original = true;
    }

    // ---- control-plane access ----

    /// Applies one write now. Errors leave the pipeline unchanged.
    pub fn apply(&mut self, now: SimTime, write: &Write) -> Result<(), String> {
        match write {
            Write::TableEntry {
                table,
                update,
                entry,
            } => {
                let t = &mut self.tables[table.0 as usize];
                match update {
                    UpdateType::Insert => t.insert(entry.clone(), now),
                    UpdateType::Modify => t.modify(entry.clone(), now),
                    UpdateType::Delete => t.delete(&entry.key, entry.priority),
                }
            }
            Write::DefaultAction { table, action } => {
                self.tables[table.0 as usize].set_default(*action)
            }
            Write::SelectorGroup {
                selector,
                group,
                members,
            } => self.selectors[selector.0 as usize].set_group(*group, members.clone()),
            Write::Register {
                register,
                index,
                value,
            } => {
                let r = &mut self.registers[register.0 as usize];
                let mask = r.mask;
                let cell = r
                    .values
                    .get_mut(*index as usize)
                    .ok_or_else(|| format!("{}: index {index} out of range", r.spec.name))?;
                *cell = value & mask;
                Ok(())
            }
            Write::Meter {
                meter,
                index,
                config,
            } => {
                let m = &mut self.meters[meter.0 as usize];
                if config.kind() != m.spec.kind {
                    return Err(format!("{}: is {:?}", m.spec.name, m.spec.kind));
                }
                let cell = m
                    .cells
                    .get_mut(*index as usize)
                    .ok_or_else(|| format!("{}: index {index} out of range", m.spec.name))?;
                cell.configure(*config, now);
                Ok(())
            }
            Write::MulticastGroup { group, replicas } => {
                if *group == 0 {
                    return Err("multicast group 0 is reserved".into());
                }
                let g = *group as usize;
                if self.mcast_groups.len() <= g {
                    self.mcast_groups.resize(g + 1, Vec::new());
                }
                self.mcast_groups[g] = replicas.clone();
                Ok(())
            }
            Write::CloneSession { session, port } => {
                self.set_clone_session(*session, port.iter().copied().collect());
                Ok(())
            }
            Write::CloneSessionReplicas { session, ports } => {
                self.set_clone_session(*session, ports.clone());
                Ok(())
            }
        }
    }

    fn set_clone_session(&mut self, session: u16, ports: Vec<PortNo>) {
        let s = session as usize;
        if self.clone_sessions.len() <= s {
            self.clone_sessions.resize(s + 1, Vec::new());
        }
        self.clone_sessions[s] = ports;
    }

    /// The replica ports of a clone session (P4Runtime read).
    pub fn clone_session(&self, session: u16) -> &[PortNo] {
        self.clone_sessions
            .get(session as usize)
            .map_or(&[], |v| v.as_slice())
    }

    /// A register cell (P4Runtime read; no access is counted).
    pub fn read_register(&self, register: RegisterId, index: u32) -> u64 {
        self.registers[register.0 as usize].values[index as usize]
    }

    /// An indexed counter cell.
    pub fn read_counter(&self, counter: CounterId, index: u32) -> CounterData {
        self.counters[counter.0 as usize].cells[index as usize]
    }

    /// Each indexed counter array's name and the sum of its cells.
    pub fn counter_totals(&self) -> Vec<(&'static str, CounterData)> {
        self.counters
            .iter()
            .map(|c| {
                let sum = c
                    .cells
                    .iter()
                    .fold(CounterData::default(), |a, x| CounterData {
                        packets: a.packets + x.packets,
                        bytes: a.bytes + x.bytes,
                    });
                (c.spec.name, sum)
            })
            .collect()
    }

    /// The direct counter of entry `entry` of `table`.
    pub fn read_direct_counter(&self, table: TableId, entry: u32) -> CounterData {
        self.tables[table.0 as usize].counters[entry as usize]
    }

    /// The entries of a table (P4Runtime read).
    pub fn entries(&self, table: TableId) -> &[TableEntry] {
        &self.tables[table.0 as usize].entries
    }

    /// Members of an action-selector group.
    pub fn group_members(&self, selector: SelectorId, group: u32) -> &[ActionCall] {
        self.selectors[selector.0 as usize]
            .groups
            .get(group as usize)
            .map_or(&[], |g| g.members.as_slice())
    }

    /// The estimator of `port`, decayed to `now` (bytes).
    pub fn read_estimator(&self, estimator: EstimatorId, port: PortNo, now: SimTime) -> u64 {
        self.estimators[estimator.0 as usize].cells[port as usize].read(now)
    }

    /// Violations recorded so far (the first few in full) and their count.
    pub fn violations(&self) -> (&[Violation], u64) {
        (&self.violations, self.violation_count)
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn violate(&mut self, at: SimTime, kind: ViolationKind, object: &'static str) {
        self.violation_count += 1;
        if self.violations.len() < KEEP_VIOLATIONS {
            self.violations.push(Violation { at, kind, object });
        }
    }
}

/// The data plane's view of the switch during one pass through ingress or
/// egress.
pub struct Ctx<'a> {
    /// True time (meters, estimators and violations run on it).
    true_now: SimTime,
    /// The switch clock's reading at `true_now` (what the program sees).
    now: SimTime,
    pass: u64,
    gress: Gress,
    pipe: &'a mut Pipeline,
    rng: &'a mut SimRng,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(
        now: SimTime,
        local: SimTime,
        pass: u64,
        gress: Gress,
        pipe: &'a mut Pipeline,
        rng: &'a mut SimRng,
    ) -> Self {
        Ctx {
            true_now: now,
            now: local,
            pass,
            gress,
            pipe,
            rng,
        }
    }

    /// The time of this pass as the switch's clock reads it (the global
    /// timestamp; see [`Clock`](crate::Clock)).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Applies a table to a key (one value per declared field, in order).
    #[inline]
    pub fn apply(&mut self, table: TableId, key: Key) -> Hit {
        self.pipe.tables[table.0 as usize].lookup(&key)
    }

    /// The member of an action-selector group that `hash` picks; `None` if
    /// the group is empty or unknown.
    #[inline]
    pub fn select(&self, selector: SelectorId, group: u32, hash: u32) -> Option<ActionCall> {
        self.pipe.selectors[selector.0 as usize].select(group, hash)
    }

    /// Computes a declared hash over `input` (its fields in declared order).
    #[inline(always)]
    pub fn hash(&mut self, hash: HashId, input: &HashInput) -> u32 {
        let h = &self.pipe.hashes[hash.0 as usize];
        if h.input_bits != input.bits() {
            let name = h.spec.name;
            self.pipe
                .violate(self.true_now, ViolationKind::HashInputMismatch, name);
        }
        self.pipe.hashes[hash.0 as usize]
            .spec
            .algo
            .compute(input.bytes())
    }

    /// v1model `random(lo, hi)`: a uniform integer in `[lo, hi]`.
    #[inline]
    pub fn random(&mut self, lo: u32, hi: u32) -> u32 {
        self.rng.gen_range(lo..=hi)
    }

    /// The register read-modify-write of this pass: `f` gets the cell and
    /// returns (new value, result). The new value is masked to the width.
    #[inline]
    pub fn register<R>(
        &mut self,
        register: RegisterId,
        index: u32,
        f: impl FnOnce(u64) -> (u64, R),
    ) -> R {
        let (pass, gress, now) = (self.pass, self.gress, self.true_now);
        let r = &mut self.pipe.registers[register.0 as usize];
        let twice = r.last_pass == pass;
        r.last_pass = pass;
        let other_gress = *r.gress.get_or_insert(gress) != gress;
        let name = r.spec.name;
        let mask = r.mask;
        let (out, in_range) = match r.values.get_mut(index as usize) {
            Some(cell) => {
                let (new, out) = f(*cell);
                *cell = new & mask;
                (out, true)
            }
            // bmv2: an out-of-range read gives 0 and the write is lost.
            None => (f(0).1, false),
        };
        if twice {
            self.pipe.violate(now, ViolationKind::RegisterTwice, name);
        }
        if other_gress {
            self.pipe
                .violate(now, ViolationKind::RegisterBothGresses, name);
        }
        if !in_range {
            self.pipe
                .violate(now, ViolationKind::RegisterIndexOutOfRange, name);
        }
        out
    }

    /// Reads a register cell (this pass's one access to the array).
    #[inline]
    pub fn register_read(&mut self, register: RegisterId, index: u32) -> u64 {
        self.register(register, index, |v| (v, v))
    }

    /// Writes a register cell (this pass's one access to the array).
    #[inline]
    pub fn register_write(&mut self, register: RegisterId, index: u32, value: u64) {
        self.register(register, index, |_| (value, ()))
    }

    /// Counts a packet of `bytes` in an indexed counter.
    #[inline]
    pub fn count(&mut self, counter: CounterId, index: u32, bytes: u32) {
        let c = &mut self.pipe.counters[counter.0 as usize];
        let kind = c.spec.kind;
        match c.cells.get_mut(index as usize) {
            Some(cell) => cell.count(kind, bytes),
            None => {
                let name = c.spec.name;
                self.pipe
                    .violate(self.true_now, ViolationKind::CounterIndexOutOfRange, name);
            }
        }
    }

    /// v1model `meter.execute_meter(index, color)`, colour-blind.
    #[inline]
    pub fn execute_meter(&mut self, meter: MeterId, index: u32, packet_length: u32) -> Color {
        self.execute_meter_aware(meter, index, packet_length, None)
    }

    /// Colour-aware metering (`pre_color` is the packet's colour so far).
    pub fn execute_meter_aware(
        &mut self,
        meter: MeterId,
        index: u32,
        packet_length: u32,
        pre_color: Option<Color>,
    ) -> Color {
        let now = self.true_now;
        let m = &mut self.pipe.meters[meter.0 as usize];
        let unit = m.spec.unit;
        match m.cells.get_mut(index as usize) {
            Some(cell) => cell.execute(unit, now, packet_length, pre_color),
            None => {
                let name = m.spec.name;
                self.pipe
                    .violate(now, ViolationKind::MeterIndexOutOfRange, name);
                Color::Green
            }
        }
    }

    /// v1model `direct_meter.read(color)` for the entry `hit` matched
    /// (GREEN on a miss or if the table has no direct meter).
    pub fn read_direct_meter(&mut self, table: TableId, hit: &Hit, packet_length: u32) -> Color {
        let now = self.true_now;
        let t = &mut self.pipe.tables[table.0 as usize];
        match (t.spec.direct_meter, t.meters.get_mut(hit.entry as usize)) {
            (Some((_, unit)), Some(cell)) if hit.hit => {
                cell.execute(unit, now, packet_length, None)
            }
            _ => Color::Green,
        }
    }

    /// Updates a port's utilization estimator with a packet of `bytes`;
    /// returns U (bytes).
    #[inline]
    pub fn update_estimator(&mut self, estimator: EstimatorId, port: PortNo, bytes: u32) -> u64 {
        let now = self.true_now;
        let e = &mut self.pipe.estimators[estimator.0 as usize];
        match e.cells.get_mut(port as usize) {
            Some(cell) => cell.update(now, bytes),
            None => {
                let name = e.spec.name;
                self.pipe
                    .violate(now, ViolationKind::EstimatorPortOutOfRange, name);
                0
            }
        }
    }

    /// Reads a port's utilization estimator, decayed to now (bytes).
    #[inline]
    pub fn read_estimator(&mut self, estimator: EstimatorId, port: PortNo) -> u64 {
        let now = self.true_now;
        let e = &self.pipe.estimators[estimator.0 as usize];
        match e.cells.get(port as usize) {
            Some(cell) => cell.read(now),
            None => {
                let name = e.spec.name;
                self.pipe
                    .violate(now, ViolationKind::EstimatorPortOutOfRange, name);
                0
            }
        }
    }

    /// v1model `digest`: `data` reaches the control agent after the
    /// configured CPU latency.
    pub fn digest(&mut self, receiver: u16, data: [u64; 4]) {
        self.pipe.digests.push(Digest { receiver, data });
    }
}

/// Match helpers for building entries.
pub mod matches {
    use super::FieldMatch;

    pub fn exact(v: u64) -> FieldMatch {
        FieldMatch::Exact(v)
    }
    pub fn lpm(value: u64, len: u8) -> FieldMatch {
        FieldMatch::Lpm { value, len }
    }
    pub fn ternary(value: u64, mask: u64) -> FieldMatch {
        FieldMatch::Ternary { value, mask }
    }
    pub fn range(lo: u64, hi: u64) -> FieldMatch {
        FieldMatch::Range { lo, hi }
    }
}
