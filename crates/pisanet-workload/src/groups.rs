//! Flow groups: several workloads in one run (a foreground flow plus
//! background traffic, ...), merged into one stream of flows.
//!
//! Owns: the merge. Guarantees: flows come out in non-decreasing start
//! time (equal starts: the lower group first, then each group's own order),
//! with ids 0, 1, 2, ... over all groups; each flow's unset attributes take
//! its group's ([`FlowAttrs::or`]); a single group with no attributes yields
//! exactly its generator's flows. Each group draws from its own generator
//! (and random stream), so adding a group does not change another's flows.

use crate::flow::{FlowAttrs, FlowSpec};
use crate::generator::FlowGenerator;
use pisanet_net::packet::FlowId;

/// The flows of every group, in start-time order.
#[derive(Clone, Debug)]
pub struct FlowSource {
    groups: Vec<Group>,
    next_id: u64,
    total: u64,
}

#[derive(Clone, Debug)]
struct Group {
    gen: FlowGenerator,
    attrs: FlowAttrs,
    head: Option<FlowSpec>,
}

impl FlowSource {
    /// Merges `groups` (generator, attributes of its flows), group 0 first.
    pub fn new(groups: Vec<(FlowGenerator, FlowAttrs)>) -> Result<FlowSource, String> {
        let total: u64 = groups.iter().map(|(g, _)| g.total_flows()).sum();
        if total > FlowId::MAX as u64 + 1 {
            return Err(format!(
                "workload: at most {} flows fit 32-bit flow ids, the groups have {total}",
                FlowId::MAX as u64 + 1
            ));
        }
        if groups.len() > u16::MAX as usize {
            return Err(format!(
                "workload.groups: at most {} groups, got {}",
                u16::MAX,
                groups.len()
            ));
        }
        let groups = groups
            .into_iter()
            .map(|(mut gen, attrs)| {
                let head = gen.next();
                Group { gen, attrs, head }
            })
            .collect();
        Ok(FlowSource {
            groups,
            next_id: 0,
            total,
        })
    }

    /// One group with no attributes of its own.
    pub fn single(gen: FlowGenerator) -> FlowSource {
        let total = gen.total_flows();
        let mut gen = gen;
        let head = gen.next();
        FlowSource {
            groups: vec![Group {
                gen,
                attrs: FlowAttrs::default(),
                head,
            }],
            next_id: 0,
            total,
        }
    }

    /// Flows of all groups together.
    pub fn total_flows(&self) -> u64 {
        self.total
    }

    /// The generator of group `g`.
    pub fn generator(&self, g: usize) -> Option<&FlowGenerator> {
        self.groups.get(g).map(|x| &x.gen)
    }
}

impl Iterator for FlowSource {
    type Item = FlowSpec;

    fn next(&mut self) -> Option<FlowSpec> {
        let (g, _) = self
            .groups
            .iter()
            .enumerate()
            .filter_map(|(i, x)| x.head.map(|h| (i, h.start)))
            .min_by_key(|&(i, start)| (start, i))?;
        let group = &mut self.groups[g];
        let mut f = group.head.take()?;
        group.head = group.gen.next();
        f.id = self.next_id as FlowId;
        f.group = g as u16;
        f.attrs = f.attrs.or(group.attrs);
        self.next_id += 1;
        Some(f)
    }
}
