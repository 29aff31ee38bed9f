//! Switches in the loop: a packet arriving at a switch runs its program
//! (pisanet-pisa), what the program emits is queued, and each switch keeps
//! one timer for its own pending work (control plane, generator,
//! recirculation).

use super::*;

impl World {
    /// Queues a packet a switch's ingress sent to its `port`.
    #[inline]
    pub(crate) fn enqueue_from_switch(
        &mut self,
        now: SimTime,
        node: NodeId,
        port: PortNo,
        id: PktId,
        meta: QueueMeta,
    ) {
        if self.port_base[node as usize] + port as PortIdx >= self.port_end(node) {
            self.lose_id(id);
            return;
        }
        self.enqueue_unicast(now, node, port, id, Some(meta));
    }

    /// [`Self::enqueue_from_switch`] of a port the switch has: an ingress
    /// pass's unicast decision, below the switch's `n_ports` (switch.rs,
    /// `run_ingress`), which `World::new` checks is the node's port count.
    /// `meta` is `None` only where nothing reads it (`tm_read` is false).
    #[inline]
    pub(crate) fn enqueue_unicast(
        &mut self,
        now: SimTime,
        node: NodeId,
        port: PortNo,
        id: PktId,
        meta: Option<QueueMeta>,
    ) {
        let base = self.port_base[node as usize];
        debug_assert!(base + (port as PortIdx) < self.port_end(node));
        let p = base + port as PortIdx;
        debug_assert!(meta.is_some() || !self.tm_read(p));
        if let Some(meta) = meta.filter(|_| self.tm_read(p)) {
            self.arena.slot_mut(id).tm = TmMeta {
                enq_time: now,
                enq_qdepth: 0,
                pfc_in: pisanet_net::queue::NO_PFC,
                user_meta: meta.user,
                ingress_port: meta.ingress_port,
                egress_rid: meta.egress_rid,
                instance_type: meta.instance_type as u8,
            };
        }
        self.enqueue_queued(now, p, id);
    }

    /// Whether anything reads the `TmMeta` of a packet queued at port `p`:
    /// the port's egress pass (`start_tx`), PFC (its ingress account,
    /// sim/pfc.rs) and the capture tap (the copy's instance type). With
    /// none of them (a switch without an egress control, the default), a
    /// switch hop does not write it: the packet's slot's second cache line,
    /// which nothing else at a switch touches, stays unread and unwritten
    /// (docs/performance.md, "Session 11: switch side"). The parallel
    /// exchange carries a slot's `TmMeta` along, and the next queue that
    /// reads it writes it first.
    #[inline(always)]
    pub(crate) fn tm_read(&self, p: PortIdx) -> bool {
        self.ports[p as usize].egress_pass || self.pfc.is_some() || self.tap.is_some()
    }

    /// One past `node`'s last port in the compact port index (not the
    /// topology's node records, which the hot path should not touch).
    #[inline]
    fn port_end(&self, node: NodeId) -> PortIdx {
        self.port_base
            .get(node as usize + 1)
            .copied()
            .unwrap_or(self.ports.len() as PortIdx)
    }

    /// Carries out what a switch emitted (queueing, drops, consumption).
    pub(crate) fn apply_emits(&mut self, now: SimTime, sw: u32, emits: &mut Vec<Emit>) {
        let node = sw + self.topo.n_hosts;
        for e in emits.drain(..) {
            if let Some(t) = self.tap.as_deref_mut() {
                t.on_emit(now, node, &e)
            }
            match e {
                Emit::Enqueue { port, pkt, meta } => {
                    let id = self.arena.insert(pkt);
                    self.enqueue_from_switch(now, node, port, id, meta)
                }
                Emit::Drop { pkt, .. } => self.lose(&pkt),
                Emit::Consumed(_) => self.counts.consumed += 1,
                Emit::Transmit(pkt) => {
                    // Only egress may transmit, and start_tx took that one; a
                    // second transmit from one pass is a program error.
                    self.violations.push(format!("switch {sw}: more than one packet transmitted from one egress pass (uid {})", pkt.uid));
                    self.lose(&pkt);
                }
            }
        }
    }

    /// `apply_emits` for what an egress pass emitted: no PFC ingress
    /// account holds those copies (a packet being received may have
    /// started this transmission).
    pub(crate) fn apply_egress_emits(&mut self, now: SimTime, sw: u32, emits: &mut Vec<Emit>) {
        let saved = std::mem::replace(&mut self.pfc_in, pisanet_net::queue::NO_PFC);
        self.apply_emits(now, sw, emits);
        self.pfc_in = saved;
    }

    /// Schedules the switch's wake-up if its pending work moved earlier.
    pub(crate) fn arm_switch(&mut self, sw: u32) {
        let Forwarding::Pisa(switches) = &self.fwd else {
            return;
        };
        if let Some(d) = switches[sw as usize].next_deadline() {
            if self.switch_timer.len() <= sw as usize {
                self.switch_timer.resize(switches.len(), None);
            }
            let slot = &mut self.switch_timer[sw as usize];
            if slot.is_none_or(|t| d < t) {
                *slot = Some(d);
                self.q.schedule(d.max(self.q.now()), Ev::SwitchTimer(sw));
            }
        }
    }

    pub(crate) fn on_switch_timer(&mut self, now: SimTime, sw: u32) {
        if self.switch_timer.get(sw as usize).copied().flatten() == Some(now) {
            self.switch_timer[sw as usize] = None;
        }
        let Forwarding::Pisa(switches) = &mut self.fwd else {
            return;
        };
        let mut emits = std::mem::take(&mut self.emits);
        emits.clear();
        // What a switch makes on its own is no ingress port's (PFC).
        self.pfc_in = pisanet_net::queue::NO_PFC;
        switches[sw as usize].on_timer(now, &mut emits);
        self.apply_emits(now, sw, &mut emits);
        self.emits = emits;
        self.arm_switch(sw);
    }

    pub(crate) fn switch_receive(
        &mut self,
        now: SimTime,
        node: NodeId,
        in_port: PortNo,
        id: PktId,
    ) {
        let sw = node - self.topo.n_hosts;
        match &mut self.fwd {
            Forwarding::Native(e) => match e.route(sw, self.arena.get(id)) {
                Some(port) => {
                    let p = self.port_base[node as usize] + port as PortIdx;
                    if self.tm_read(p) {
                        self.arena.slot_mut(id).tm = TmMeta::plain(now);
                    }
                    self.enqueue_queued(now, p, id);
                }
                None => self.lose_id(id),
            },
            Forwarding::Pisa(switches) => {
                // `emits` is empty between uses (apply_emits drains it).
                debug_assert!(self.emits.is_empty());
                let switch = &mut switches[sw as usize];
                let pkt = self.arena.get_mut(id);
                // With nothing to read the queue metadata (`tm_read`: no
                // egress control, PFC or tap), a form's pass gives the port
                // alone (its metadata not built nor passed on); a port of
                // the switch (nearly every pass) is all of it
                // (`Switch::form_try`).
                let (scheduled, unicast, meta) =
                    if switch.form_only() && self.pfc.is_none() && self.tap.is_none() {
                        // (`form_try` schedules nothing: `scheduled` is
                        // read only for the rest.)
                        match switch.form_try(pkt) {
                            Ok(port) => {
                                // `enqueue_unicast` with no tap, no PFC and
                                // nothing to write: the port's own limits.
                                let p = self.port_base[node as usize] + port as PortIdx;
                                return self.enqueue_plain(now, p, id);
                            }
                            Err(port) => (
                                switch.scheduled(),
                                switch.form_finish(now, in_port, pkt, port, &mut self.emits),
                                None,
                            ),
                        }
                    } else {
                        let scheduled = switch.scheduled();
                        match switch.ingress_unicast(now, in_port, pkt, &mut self.emits) {
                            Some((port, meta)) => (scheduled, Some(port), Some(meta)),
                            None => (scheduled, None, None),
                        }
                    };
                let rearm = switch.scheduled() != scheduled;
                if unicast.is_none() {
                    // The pass took the packet (what it made is in `emits`).
                    self.arena.free(id);
                }
                if !self.emits.is_empty() {
                    let mut emits = std::mem::take(&mut self.emits);
                    self.apply_emits(now, sw, &mut emits);
                    self.emits = emits;
                }
                if let Some(port) = unicast {
                    self.enqueue_unicast(now, node, port, id, meta);
                }
                if rearm {
                    self.arm_switch(sw);
                }
            }
        }
    }

    /// Packets made by switches (clones, multicast copies, generated probes).
    pub fn switch_injected(&self) -> u64 {
        match &self.fwd {
            Forwarding::Pisa(switches) => switches.iter().map(|s| s.stats().injected).sum(),
            Forwarding::Native(_) => 0,
        }
    }

    /// Totals over every switch: its pipeline's events (clones, recirculations,
    /// packets to the CPU, control-plane writes) and each program counter
    /// array summed over its cells, by name.
    pub fn switch_totals(&self) -> serde_json::Value {
        let Forwarding::Pisa(switches) = &self.fwd else {
            return serde_json::Value::Null;
        };
        let mut counters = serde_json::Map::new();
        let (mut cloned, mut recirc, mut resub, mut to_cpu, mut writes, mut write_errors) =
            (0, 0, 0, 0, 0, 0);
        let (mut issued, mut wait_sum, mut wait_max) = (0u64, 0u64, 0u64);
        for s in switches {
            let st = s.stats();
            cloned += st.cloned;
            recirc += st.recirculated;
            resub += st.resubmitted;
            to_cpu += st.to_cpu;
            writes += st.writes_applied;
            write_errors += st.write_errors;
            issued += st.writes_issued;
            wait_sum = wait_sum.saturating_add(st.write_wait_ps_sum);
            wait_max = wait_max.max(st.write_wait_ps_max);
            for (name, c) in s.pipeline().counter_totals() {
                let e = counters
                    .entry(name.to_string())
                    .or_insert(serde_json::json!({"packets": 0u64, "bytes": 0u64}));
                e["packets"] = (e["packets"].as_u64().unwrap_or(0) + c.packets).into();
                e["bytes"] = (e["bytes"].as_u64().unwrap_or(0) + c.bytes).into();
            }
        }
        serde_json::json!({
            "cloned": cloned, "recirculated": recirc, "resubmitted": resub, "to_cpu": to_cpu,
            "writes_applied": writes, "write_errors": write_errors, "counters": counters,
            // Writes issued after start-up and how long they queued behind
            // earlier ones beyond the write latency (the CPU's backlog).
            "writes_issued": issued,
            "write_wait_us": {
                "mean": if issued == 0 { 0.0 } else { wait_sum as f64 / issued as f64 / 1e6 },
                "max": wait_max as f64 / 1e6,
            },
        })
    }

    /// PISA rule violations by any switch program.
    pub fn program_violations(&self) -> Vec<String> {
        let Forwarding::Pisa(switches) = &self.fwd else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for s in switches {
            let (list, total) = s.violations();
            if total > 0 {
                let first = list.first().map(|v| format!("{v:?}")).unwrap_or_default();
                out.push(format!(
                    "switch {}: {total} PISA rule violation(s), first: {first}",
                    s.id()
                ));
            }
        }
        out
    }
}
