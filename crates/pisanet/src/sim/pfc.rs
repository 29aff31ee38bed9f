//! Priority flow control (IEEE 802.1Qbb) in the switches' traffic managers
//! and the host NICs: ingress accounting per (ingress port, priority),
//! XOFF/XON thresholds with headroom, PAUSE frames on the wire, pause
//! timers, counters and the deadlock detector. Parameters and formulas:
//! crates/pisanet/src/pfc.rs; what is modelled: docs/model.md "Priority flow
//! control".
//!
//! Nothing here runs with PFC off: the loop tests `World::pfc` (`None`) at
//! enqueue, at a switch arrival and before a dequeue, and `TmMeta::pfc_in`
//! after one.

use super::*;
use crate::pfc::{headroom_bytes, pause_time, q_pfc, PfcCfg};
use pisanet_net::packet::{ExtHeader, PacketExtra, MIN_FRAME_BYTES};
use pisanet_net::queue::{DropCause, NO_PFC};

/// `ExtHeader::kind` of a PAUSE frame: the MAC control ethertype (802.3
/// Annex 31B). `fields[0]`: the class-enable vector; `fields[1]` and
/// `fields[2]`: the eight 16-bit quanta (class 0 in the low bits of
/// `fields[1]`, class 4 in the low bits of `fields[2]`).
pub const PAUSE_KIND: u16 = 0x8808;

/// Whether `pkt` is a PFC PAUSE frame.
#[inline]
pub fn is_pause(pkt: &Packet) -> bool {
    pkt.flow == Packet::NO_FLOW && pkt.ext().is_some_and(|e| e.kind == PAUSE_KIND)
}

/// (class-enable vector, quanta of each class) of a PAUSE frame.
pub fn pause_fields(pkt: &Packet) -> (u8, [u16; 8]) {
    let e = pkt.ext().map(|e| e.fields).unwrap_or_default();
    let mut q = [0u16; 8];
    for (c, v) in q.iter_mut().enumerate() {
        *v = (e[1 + c / 4] >> (16 * (c % 4))) as u16;
    }
    (e[0] as u8, q)
}

/// Per (port, priority) counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct PfcStats {
    /// XOFF frames this port sent (first and refreshes).
    pub pause_sent: u64,
    /// XON (zero quanta) frames this port sent.
    pub xon_sent: u64,
    pub pause_received: u64,
    pub xon_received: u64,
    /// Time this port's queue of the priority was paused.
    pub paused: SimTime,
    /// Packets of a lossless priority that came in on this port and were
    /// dropped (headroom or shared buffer exhausted).
    pub lossless_drops: u64,
    /// Largest ingress account (bytes) of this (port, priority).
    pub max_ingress_bytes: u64,
}

/// PFC state of the whole network.
pub struct Pfc {
    /// Lossless priorities (bit i: queue i).
    pub lossless: u8,
    pub quanta: u16,
    /// Per port (switch ports only): XOFF, XON and headroom in bytes, and
    /// the headroom the link needs by `pfc::headroom_bytes`.
    pub xoff: Vec<u64>,
    pub xon: Vec<u64>,
    pub headroom: Vec<u64>,
    pub needed: Vec<u64>,
    /// Some port reserves less headroom than its link needs (warned):
    /// lossless drops are then counted, not invariant violations.
    pub small_headroom: bool,
    pub deadlock_after: Option<SimTime>,
    // Per (port, priority), index port * 8 + priority.
    pub(crate) ingress: Vec<u64>,
    pub(crate) xoff_on: Vec<bool>,
    pub(crate) refresh_at: Vec<SimTime>,
    pub(crate) paused_until: Vec<SimTime>,
    pub(crate) paused_since: Vec<SimTime>,
    pub stats: Vec<PfcStats>,
    /// PAUSE frames waiting for their port's transmitter, per port.
    pub(crate) ctrl: Vec<VecDeque<Packet>>,
    pub(crate) check_pending: bool,
    pub lossless_drops: u64,
    /// The deadlock the detector found (ends the run).
    pub fatal: Option<String>,
    pub warnings: Vec<String>,
    /// Per-switch values for the summary: (name, buffer Q, ports n, xoff, xon, headroom).
    pub switches: Vec<serde_json::Value>,
}

const NEVER: SimTime = SimTime::from_ps(u64::MAX);

/// How long after a check that found queues paused the detector looks
/// again: half of `deadlock_after`.
pub(crate) fn pfc_check_step(after: SimTime) -> SimTime {
    SimTime::from_ps((after.ps() / 2).max(1))
}

/// What the deadlock detector reads at one instant (`World::pfc_snapshot`).
pub(crate) struct PfcSnapshot {
    pub(crate) at: SimTime,
    /// Some queue is paused (the detector looks again).
    pub(crate) any_paused: bool,
    /// (port, priority, paused since) of the queues paused for at least
    /// `deadlock_after`, in (port, priority) order.
    pub(crate) stuck: Vec<(PortIdx, usize, SimTime)>,
    /// (port, priority, ingress port): a stuck queue holds a packet that
    /// came in on that ingress port.
    pub(crate) holds: std::collections::BTreeSet<(PortIdx, usize, u32)>,
}

impl PfcSnapshot {
    /// The network's snapshot from the partitions' (each its own ports).
    pub(crate) fn join(parts: Vec<PfcSnapshot>) -> Option<PfcSnapshot> {
        let mut parts = parts.into_iter();
        let mut all = parts.next()?;
        for p in parts {
            all.any_paused |= p.any_paused;
            all.stuck.extend(p.stuck);
            all.holds.extend(p.holds);
        }
        all.stuck.sort_unstable_by_key(|&(u, c, _)| (u, c));
        Some(all)
    }
}

impl Pfc {
    /// Thresholds and headroom of every switch port from `cfg`; `buffer` is
    /// the per-port buffer (bytes), `shared` the switch-wide buffer if any,
    /// `mtu` the largest frame.
    pub fn build(cfg: &PfcCfg, w: &World, buffer: u64, shared: Option<u64>, mtu: u64) -> Pfc {
        let n_ports = w.ports.len();
        let queues = w
            .ports
            .iter()
            .find(|p| !p.is_host_port)
            .map_or(1, |p| p.queue.priorities()) as u8;
        let lossless = cfg.lossless_mask(queues);
        let prios = lossless.count_ones();
        let mut xoff = vec![0; n_ports];
        let mut xon = vec![0; n_ports];
        let mut headroom = vec![0; n_ports];
        let mut needed = vec![0; n_ports];
        let mut warnings = Vec::new();
        let mut small = false;
        let mut switches = Vec::new();
        for node in w.topo.n_hosts as usize..w.topo.nodes.len() {
            let base = w.port_base[node] as usize;
            let n = w.topo.nodes[node].ports.len();
            let ports = base..base + n;
            for p in ports.clone() {
                let port = &w.ports[p];
                needed[p] = headroom_bytes(port.rate, port.delay, mtu, prios, SimTime::ZERO);
                headroom[p] = match cfg.headroom_kb {
                    crate::pfc::Headroom::Auto(_) => needed[p],
                    crate::pfc::Headroom::Kb(kb) => (kb * 1000.0).round() as u64,
                };
                if headroom[p] < needed[p] && !small {
                    small = true;
                    warnings.push(format!(
                        "topology.pfc.headroom_kb: {} bytes is less than port {} needs ({} bytes: 3 x MTU + PAUSE frames + 2 x delay x rate); lossless priorities may drop",
                        headroom[p],
                        w.port_name(p as PortIdx),
                        needed[p]
                    ));
                }
            }
            let h = ports.clone().map(|p| headroom[p]).max().unwrap_or(0);
            // The switch's buffer Q: the shared buffer, else the ports' own.
            let q = shared.unwrap_or(buffer * n as u64);
            let auto = q_pfc(q, n as u64, prios as u64, h);
            let x = match cfg.xoff_kb {
                Some(kb) => (kb * 1000.0).round() as u64,
                None => match auto {
                    Some(v) if v >= mtu => v,
                    _ => {
                        warnings.push(format!(
                            "topology.pfc: switch {}'s buffer ({q} bytes) leaves less than one packet per (port, priority) after headroom (seed 002 Q_PFC = {}); XOFF set to one packet ({mtu} bytes)",
                            w.topo.nodes[node].name,
                            auto.map_or("negative".into(), |v| v.to_string())
                        ));
                        mtu
                    }
                },
            };
            let y = match cfg.xon_kb {
                Some(kb) => (kb * 1000.0).round() as u64,
                None => x.saturating_sub(2 * mtu),
            };
            for p in ports {
                xoff[p] = x;
                xon[p] = y.min(x);
            }
            switches.push(serde_json::json!({
                "switch": w.topo.nodes[node].name, "buffer_bytes": q, "ports": n,
                "xoff_bytes": x, "xon_bytes": y.min(x), "headroom_bytes": h,
                "seed002_q_pfc_bytes": auto,
                "seed002_q_p4qcn_bytes": crate::pfc::q_p4qcn(q, n as u64, prios as u64, h, 8),
            }));
        }
        let k = n_ports * 8;
        Pfc {
            lossless,
            quanta: cfg.quanta,
            xoff,
            xon,
            headroom,
            needed,
            small_headroom: small,
            deadlock_after: (cfg.deadlock_ms > 0.0)
                .then(|| SimTime::from_us_f64(cfg.deadlock_ms * 1000.0)),
            ingress: vec![0; k],
            xoff_on: vec![false; k],
            refresh_at: vec![NEVER; k],
            paused_until: vec![SimTime::ZERO; k],
            paused_since: vec![NEVER; k],
            stats: vec![PfcStats::default(); k],
            ctrl: vec![VecDeque::new(); n_ports],
            check_pending: false,
            lossless_drops: 0,
            fatal: None,
            warnings,
            switches,
        }
    }

    /// Port `p`'s state (its (port, priority) accounts, pause state and
    /// counters, its waiting PAUSE frames), taken from `other` (parallel
    /// mode's merge: `other` is the port's own partition's).
    pub(crate) fn take_port(&mut self, other: &mut Pfc, p: usize) {
        let k = p * 8..p * 8 + 8;
        self.ingress[k.clone()].copy_from_slice(&other.ingress[k.clone()]);
        self.xoff_on[k.clone()].copy_from_slice(&other.xoff_on[k.clone()]);
        self.refresh_at[k.clone()].copy_from_slice(&other.refresh_at[k.clone()]);
        self.paused_until[k.clone()].copy_from_slice(&other.paused_until[k.clone()]);
        self.paused_since[k.clone()].copy_from_slice(&other.paused_since[k.clone()]);
        self.stats[k.clone()].copy_from_slice(&other.stats[k]);
        std::mem::swap(&mut self.ctrl[p], &mut other.ctrl[p]);
    }

    /// PAUSE frames waiting in ports (for the conservation count).
    pub fn queued_frames(&self) -> u64 {
        self.ctrl.iter().map(|c| c.len() as u64).sum()
    }

    /// Totals over ports and priorities.
    pub fn totals(&self) -> PfcStats {
        let mut t = PfcStats::default();
        for s in &self.stats {
            t.pause_sent += s.pause_sent;
            t.xon_sent += s.xon_sent;
            t.pause_received += s.pause_received;
            t.xon_received += s.xon_received;
            t.paused += s.paused;
            t.lossless_drops += s.lossless_drops;
            t.max_ingress_bytes = t.max_ingress_bytes.max(s.max_ingress_bytes);
        }
        t
    }
}

impl World {
    /// The PFC events, out of the loop's way.
    #[cold]
    #[inline(never)]
    pub(crate) fn on_pfc_event(&mut self, now: SimTime, ev: Ev) {
        match ev {
            Ev::PfcExpire(p) => self.on_pfc_expire(now, p),
            Ev::PfcRefresh(p) => self.on_pfc_refresh(now, p),
            Ev::PfcCheck => self.on_pfc_check(now),
            _ => {}
        }
    }

    /// Enqueue at a switch port with PFC on: a lossless packet that came
    /// in on a port is admitted by that (port, priority)'s account (XOFF +
    /// headroom), not by the egress port's limits; crossing XOFF sends a
    /// PAUSE up that port.
    #[cold]
    #[inline(never)]
    pub(crate) fn pfc_enqueue(&mut self, now: SimTime, p: PortIdx, id: PktId) {
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return self.enqueue_plain(now, p, id);
        };
        let port = &mut self.ports[p as usize];
        let slot = self.arena.slot_mut(id);
        let c = port.queue.queue_of(slot.pkt.prio);
        let inp = self.pfc_in;
        if inp == NO_PFC || pfc.lossless & (1 << c) == 0 {
            return self.enqueue_plain(now, p, id);
        }
        let k = inp as usize * 8 + c;
        let size = slot.pkt.size as u64;
        let limit = pfc.xoff[inp as usize] + pfc.headroom[inp as usize];
        let shared = port.shared.map(|i| &mut self.shared[i as usize]);
        let admitted = if pfc.ingress[k] + size > limit {
            port.queue.count_drop(size);
            Err(DropCause::PortBufferFull)
        } else {
            port.queue.enqueue_lossless(id, &mut slot.pkt, shared)
        };
        match admitted {
            Ok(depth) => {
                slot.tm.pfc_in = inp;
                slot.tm.enq_qdepth = depth;
            }
            Err(_) => {
                self.counts.dropped += 1;
                pfc.lossless_drops += 1;
                pfc.stats[k].lossless_drops += 1;
                self.arena.free(id);
                return;
            }
        }
        pfc.ingress[k] += size;
        let s = &mut pfc.stats[k];
        s.max_ingress_bytes = s.max_ingress_bytes.max(pfc.ingress[k]);
        let xoff = !pfc.xoff_on[k] && pfc.ingress[k] > pfc.xoff[inp as usize];
        self.kick(now, p);
        if xoff {
            self.pfc_send(now, inp, c, true);
        }
    }

    /// A packet a PFC account holds left its queue (sent or drained).
    #[cold]
    #[inline(never)]
    pub(crate) fn pfc_dequeued(
        &mut self,
        now: SimTime,
        p: PortIdx,
        (inp, prio, size): (u32, u8, u32),
    ) {
        let c = self.ports[p as usize].queue.queue_of(prio);
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return;
        };
        let k = inp as usize * 8 + c;
        pfc.ingress[k] -= size as u64;
        if pfc.xoff_on[k] && pfc.ingress[k] <= pfc.xon[inp as usize] {
            self.pfc_send(now, inp, c, false);
        }
    }

    /// Port `p` (a switch port) sends a PAUSE for priority `c` to its peer:
    /// XOFF with the configured quanta, or XON (zero quanta). The frame
    /// goes ahead of every data packet (it waits only for the frame on the
    /// transmitter).
    pub(crate) fn pfc_send(&mut self, now: SimTime, p: u32, c: usize, xoff: bool) {
        if self.pfc.is_none() {
            return;
        }
        let uid = self.new_uid(self.ports[p as usize].node);
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return;
        };
        let k = p as usize * 8 + c;
        let quanta = if xoff { pfc.quanta } else { 0 };
        pfc.xoff_on[k] = xoff;
        if xoff {
            pfc.stats[k].pause_sent += 1;
            // Refresh while still congested, at half the pause time.
            let half = pause_time(pfc.quanta, self.ports[p as usize].rate).ps() / 2;
            pfc.refresh_at[k] = now + SimTime::from_ps(half.max(1));
            self.q.schedule(pfc.refresh_at[k], Ev::PfcRefresh(p));
        } else {
            pfc.stats[k].xon_sent += 1;
            pfc.refresh_at[k] = NEVER;
        }
        let mut fields = [0u64; 4];
        fields[0] = 1 << c;
        fields[1 + c / 4] = (quanta as u64) << (16 * (c % 4));
        let frame = Packet {
            uid,
            flow: Packet::NO_FLOW,
            size: MIN_FRAME_BYTES,
            extra: PacketExtra::of_ext(ExtHeader {
                kind: PAUSE_KIND,
                bytes: 0,
                fields,
            }),
            sent_at: now,
            switch_made: true,
            ..Default::default()
        };
        self.counts.injected += 1;
        pfc.ctrl[p as usize].push_back(frame);
        self.kick(now, p);
    }

    /// Starts port `p`'s transmitter if it is idle, or makes sure a
    /// `TxDone` will look at it.
    pub(crate) fn kick(&mut self, now: SimTime, p: PortIdx) {
        let port = &mut self.ports[p as usize];
        if port.tx_event {
            return;
        }
        if port.busy_until <= now {
            self.start_tx(now, p);
        } else {
            port.tx_event = true;
            self.q.schedule(port.busy_until, Ev::TxDone(p));
        }
    }

    /// Sends the next PAUSE frame waiting at port `p`, if any (before data).
    #[cold]
    #[inline(never)]
    pub(crate) fn pfc_tx_ctrl(&mut self, now: SimTime, p: PortIdx) -> bool {
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return false;
        };
        let Some(frame) = pfc.ctrl[p as usize].pop_front() else {
            return false;
        };
        let more = !pfc.ctrl[p as usize].is_empty();
        let id = self.arena.insert_with(frame, TmMeta::plain(now));
        self.transmit(now, p, id);
        let port = &mut self.ports[p as usize];
        if more && !port.tx_event {
            port.tx_event = true;
            self.q.schedule(port.busy_until, Ev::TxDone(p));
        }
        true
    }

    /// A PAUSE frame reached port `p` (whose egress it pauses or resumes).
    #[cold]
    #[inline(never)]
    pub(crate) fn pfc_receive(&mut self, now: SimTime, p: PortIdx, pkt: Packet) {
        self.counts.consumed += 1;
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return;
        };
        let (vector, quanta) = pause_fields(&pkt);
        let port = &mut self.ports[p as usize];
        let mut mask = port.queue.paused();
        let mut resumed = false;
        for (c, &q) in quanta.iter().enumerate() {
            if vector & (1 << c) == 0 || c >= port.queue.priorities() {
                continue;
            }
            let k = p as usize * 8 + c;
            if q > 0 {
                pfc.stats[k].pause_received += 1;
                let until = now + pause_time(q, port.rate);
                pfc.paused_until[k] = until;
                if mask & (1 << c) == 0 {
                    mask |= 1 << c;
                    pfc.paused_since[k] = now;
                }
                self.q.schedule(until, Ev::PfcExpire(p));
                if let Some(part) = self.part.as_deref_mut() {
                    // Parallel mode: the coordinator arms the detector
                    // (sim/parallel.rs `pfc_window`).
                    if pfc.deadlock_after.is_some() {
                        part.pfc_pauses.push(part.at);
                    }
                } else if !pfc.check_pending {
                    if let Some(after) = pfc.deadlock_after {
                        pfc.check_pending = true;
                        self.q.schedule(now + after, Ev::PfcCheck);
                    }
                }
            } else {
                pfc.stats[k].xon_received += 1;
                if mask & (1 << c) != 0 {
                    mask &= !(1 << c);
                    pfc.stats[k].paused += now.saturating_sub(pfc.paused_since[k]);
                    pfc.paused_since[k] = NEVER;
                    resumed = true;
                }
            }
        }
        port.queue.set_paused(mask);
        if resumed {
            self.kick(now, p);
        }
    }

    /// Pause timers of port `p` that ran out without a refresh resume.
    pub(crate) fn on_pfc_expire(&mut self, now: SimTime, p: PortIdx) {
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return;
        };
        let port = &mut self.ports[p as usize];
        let mut mask = port.queue.paused();
        let before = mask;
        for c in 0..port.queue.priorities() {
            let k = p as usize * 8 + c;
            if mask & (1 << c) != 0 && pfc.paused_until[k] <= now {
                mask &= !(1 << c);
                pfc.stats[k].paused += now.saturating_sub(pfc.paused_since[k]);
                pfc.paused_since[k] = NEVER;
            }
        }
        if mask != before {
            port.queue.set_paused(mask);
            self.kick(now, p);
        }
    }

    /// Refreshes the XOFF of port `p`'s priorities still above XON.
    pub(crate) fn on_pfc_refresh(&mut self, now: SimTime, p: PortIdx) {
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return;
        };
        let due: Vec<usize> = (0..8)
            .filter(|&c| {
                let k = p as usize * 8 + c;
                pfc.xoff_on[k] && pfc.refresh_at[k] <= now
            })
            .collect();
        for c in due {
            self.pfc_send(now, p, c, true);
        }
    }

    /// The deadlock detector: a cycle of (port, priority) queues each
    /// paused for at least `deadlock_after`, where each one's packets wait
    /// for the next (the paused port's downstream switch holds packets that
    /// came in from it in the next paused queue), ends the run. In parallel
    /// mode every partition takes its part at the check's instant and the
    /// coordinator decides (sim/parallel.rs `pfc_window`).
    pub(crate) fn on_pfc_check(&mut self, now: SimTime) {
        let Some(snap) = self.pfc_snapshot(now) else {
            return;
        };
        if let Some(part) = self.part.as_deref_mut() {
            part.pfc_checks.push(snap);
            return;
        }
        let verdict = self.pfc_verdict(now, &snap);
        let Some(pfc) = self.pfc.as_deref_mut() else {
            return;
        };
        let after = pfc.deadlock_after.expect("checked by the snapshot");
        if let Some(msg) = verdict {
            // NOTE: the first deadlock found is the one reported (as in
            // parallel mode, which stops at the end of its window).
            pfc.fatal.get_or_insert(msg);
            pfc.check_pending = false;
            return;
        }
        pfc.check_pending = snap.any_paused;
        if snap.any_paused {
            self.q.schedule(now + pfc_check_step(after), Ev::PfcCheck);
        }
    }

    /// What the deadlock detector reads at `now` (`None` with it off): the
    /// (port, priority) queues paused for at least `deadlock_after`, in
    /// (port, priority) order, with the time each was paused, whether any
    /// queue is paused, and, for each of those queues, the ingress ports
    /// its packets came in on. A partition's snapshot holds its own ports
    /// only (the others are never paused there and their queues are empty).
    pub(crate) fn pfc_snapshot(&self, now: SimTime) -> Option<PfcSnapshot> {
        let pfc = self.pfc.as_deref()?;
        let after = pfc.deadlock_after?;
        let mut snap = PfcSnapshot {
            at: now,
            any_paused: false,
            stuck: Vec::new(),
            holds: std::collections::BTreeSet::new(),
        };
        for (k, &since) in pfc.paused_since.iter().enumerate() {
            if since != NEVER {
                snap.any_paused = true;
                if since + after <= now {
                    let (e, c) = ((k / 8) as PortIdx, k % 8);
                    snap.stuck.push((e, c, since));
                    for q in self.ports[e as usize].queue.iter_queue(c) {
                        snap.holds.insert((e, c, self.arena.slot(q.id).tm.pfc_in));
                    }
                }
            }
        }
        Some(snap)
    }

    /// The deadlock in `snap` (the whole network's), as the run's error
    /// line, if its graph has a cycle: nodes, the stuck queues; edges
    /// u -> v when v is a port of u's downstream switch holding, in the
    /// same priority, a packet that came in over u's link.
    pub(crate) fn pfc_verdict(&self, now: SimTime, snap: &PfcSnapshot) -> Option<String> {
        let after = self.pfc.as_deref()?.deadlock_after?;
        let stuck = &snap.stuck;
        let index: std::collections::BTreeMap<(PortIdx, usize), usize> = stuck
            .iter()
            .enumerate()
            .map(|(i, &(u, c, _))| ((u, c), i))
            .collect();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); stuck.len()];
        for (i, &(u, c, _)) in stuck.iter().enumerate() {
            let inp = self.ports[u as usize].peer;
            let node = self.ports[inp as usize].node;
            if self.topo.is_host(node) {
                continue;
            }
            let base = self.port_base[node as usize];
            for e in base..base + self.topo.nodes[node as usize].ports.len() as PortIdx {
                if let Some(&j) = index.get(&(e, c)) {
                    if snap.holds.contains(&(e, c, inp)) {
                        next[i].push(j);
                    }
                }
            }
        }
        let cycle = find_cycle(&next)?;
        let since = cycle.iter().map(|&i| stuck[i].2).min().unwrap_or(now);
        let names: Vec<String> = cycle.iter().map(|&i| self.port_name(stuck[i].0)).collect();
        Some(format!(
            "PFC deadlock: {} -> {} (priority {}) paused since {:.3} ms (topology.pfc.deadlock_ms = {})",
            names.join(" -> "),
            names[0],
            stuck[cycle[0]].1,
            since.as_ms_f64(),
            after.as_ms_f64()
        ))
    }

    /// Closes the pause intervals still open at the end of the run.
    pub(crate) fn pfc_finish(&mut self, now: SimTime) {
        if let Some(pfc) = self.pfc.as_deref_mut() {
            for k in 0..pfc.paused_since.len() {
                if pfc.paused_since[k] != NEVER {
                    pfc.stats[k].paused += now.saturating_sub(pfc.paused_since[k]);
                    pfc.paused_since[k] = now;
                }
            }
        }
    }
}

/// A cycle of the graph `next` (adjacency lists), as node indices in order.
fn find_cycle(next: &[Vec<usize>]) -> Option<Vec<usize>> {
    // Iterative DFS with colours: 0 new, 1 on the stack, 2 done.
    let n = next.len();
    let mut colour = vec![0u8; n];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for start in 0..n {
        if colour[start] != 0 {
            continue;
        }
        stack.push((start, 0));
        colour[start] = 1;
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            if let Some(&w) = next[v].get(*i) {
                *i += 1;
                match colour[w] {
                    0 => {
                        colour[w] = 1;
                        stack.push((w, 0));
                    }
                    1 => {
                        let pos = stack.iter().position(|&(x, _)| x == w).unwrap_or(0);
                        return Some(stack[pos..].iter().map(|&(x, _)| x).collect());
                    }
                    _ => {}
                }
            } else {
                colour[v] = 2;
                stack.pop();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_cycle_and_only_a_cycle() {
        assert_eq!(find_cycle(&[vec![1], vec![2], vec![]]), None);
        assert_eq!(
            find_cycle(&[vec![1], vec![2], vec![3], vec![1]]),
            Some(vec![1, 2, 3])
        );
    }

    #[test]
    fn pause_frame_fields_round_trip() {
        let mut fields = [0u64; 4];
        let c = 5;
        fields[0] = 1 << c;
        fields[1 + c / 4] = 0xabcd << (16 * (c % 4));
        let p = Packet {
            flow: Packet::NO_FLOW,
            extra: PacketExtra::of_ext(ExtHeader {
                kind: PAUSE_KIND,
                bytes: 0,
                fields,
            }),
            ..Default::default()
        };
        assert!(is_pause(&p));
        let (v, q) = pause_fields(&p);
        assert_eq!(v, 1 << 5);
        assert_eq!(q[5], 0xabcd);
        assert_eq!(q.iter().filter(|&&x| x != 0).count(), 1);
    }

    /// Seed 002 Fig. 1 with the victim flow on another priority: the
    /// spine pauses priority 0 of the leaf's uplink, the victim's priority 1
    /// keeps flowing (the test in tests/pfc.rs shows it slowed on priority 0).
    #[test]
    fn a_victim_on_another_priority_is_not_blocked() {
        let dir = std::env::temp_dir().join(format!("pisanet-pfc-prio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("t.toml"),
            r#"
nodes = [
  { name = "a", kind = "host" }, { name = "v", kind = "host" }, { name = "b", kind = "host" },
  { name = "r", kind = "host" }, { name = "u", kind = "host" },
  { name = "l", kind = "switch" }, { name = "s", kind = "switch", tier = 1 },
]
links = [
  { a = "a", b = "l", gbps = 10 }, { a = "v", b = "l", gbps = 10 }, { a = "l", b = "s", gbps = 40 },
  { a = "b", b = "s", gbps = 10 }, { a = "r", b = "s", gbps = 10 }, { a = "u", b = "s", gbps = 10 },
]
"#,
        )
        .unwrap();
        let victim_gbps = |prio: u8| {
            // The victim (flow 2) on priority `prio`, by the flow list's column.
            std::fs::write(
                dir.join("f.csv"),
                format!("start_us,src,dst,bytes,priority\n0,0,3,4000000,0\n0,2,3,4000000,0\n0,1,4,2000000,{prio}\n"),
            )
            .unwrap();
            let cfg = crate::config::Config::parse(
                "[run]\nmax_sim_time_ms = 20\n[topology]\nkind = \"custom\"\nfile = \"t.toml\"\npriorities = 2\n\
                 [topology.pfc]\nenabled = true\n[transport]\nkind = \"udp\"\nudp_rate_gbps = 10.0\n\
                 [workload]\npattern = \"file\"\nfile = \"f.csv\"\n",
                &[],
            )
            .unwrap();
            let mut w = crate::run::build_world(&cfg, Some(&dir)).unwrap();
            w.run(SimTime::from_ms(20), &mut |_| true);
            assert_eq!(w.counts.dropped, 0);
            w.check_unfinished();
            let (_, t) = w.records.finish().unwrap();
            let i = t.id.iter().position(|&id| id == 2).expect("victim's row");
            assert!(t.fct_us[i].is_finite(), "victim finishes");
            t.bytes[i] as f64 * 8.0 / (t.fct_us[i] * 1e-6) / 1e9
        };
        let same = victim_gbps(0);
        let other = victim_gbps(1);
        assert!(same < 8.0, "victim on the paused priority: {same} Gb/s");
        assert!(other > 9.0, "victim on its own priority: {other} Gb/s");
    }
}
