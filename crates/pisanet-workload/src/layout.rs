//! Which hosts sit under which rack (ToR / leaf switch).
//!
//! Owns: [`HostLayout`], the one fact about the topology the traffic patterns
//! need, and its validation. The topology builder (pisanet-net) produces it;
//! this crate never sees links or switches.

use pisanet_net::packet::HostId;
use serde::{Deserialize, Serialize};

/// Hosts grouped by rack: `racks[r]` lists the host ids under rack `r`.
///
/// Valid when the host ids are exactly `0..n_hosts`, each in one rack, no rack
/// is empty, and there are at least two hosts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLayout {
    pub racks: Vec<Vec<HostId>>,
}

impl HostLayout {
    /// `n_racks` racks of `hosts_per_rack` hosts, numbered rack-major:
    /// host `r * hosts_per_rack + i` is host `i` of rack `r`.
    pub fn uniform(n_racks: u32, hosts_per_rack: u32) -> Self {
        let racks = (0..n_racks)
            .map(|r| {
                (0..hosts_per_rack)
                    .map(|i| r * hosts_per_rack + i)
                    .collect()
            })
            .collect();
        HostLayout { racks }
    }

    /// Number of hosts over all racks.
    pub fn n_hosts(&self) -> u32 {
        self.racks.iter().map(|r| r.len() as u32).sum()
    }

    pub fn n_racks(&self) -> usize {
        self.racks.len()
    }

    /// The rack holding `host`, if any. O(hosts).
    pub fn rack_of(&self, host: HostId) -> Option<usize> {
        self.racks.iter().position(|r| r.contains(&host))
    }

    /// Checks the layout; the error is one line naming the problem.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.n_hosts();
        if n < 2 {
            return Err(format!("host layout: need at least 2 hosts, got {n}"));
        }
        let mut seen: Vec<Option<usize>> = vec![None; n as usize];
        for (r, rack) in self.racks.iter().enumerate() {
            if rack.is_empty() {
                return Err(format!(
                    "host layout: rack {r} has no hosts; every rack needs at least one"
                ));
            }
            for &h in rack {
                let Some(slot) = seen.get_mut(h as usize) else {
                    return Err(format!(
                        "host layout: host {h} in rack {r} out of range 0..{n} (ids must be 0..n_hosts)"
                    ));
                };
                if let Some(first) = *slot {
                    return Err(format!(
                        "host layout: host {h} appears in rack {first} and rack {r}; each host must be in one rack once"
                    ));
                }
                *slot = Some(r);
            }
        }
        Ok(())
    }
}

/// A validated layout indexed for O(1) look-ups: hosts laid out rack by rack
/// in one array, so "a host outside rack r" is one random index with a skip.
#[derive(Clone, Debug)]
pub(crate) struct RackIndex {
    /// All hosts, rack 0's first, then rack 1's, ...
    flat: Vec<HostId>,
    /// `offset[r]..offset[r + 1]` is rack r's slice of `flat` (len n_racks + 1).
    offset: Vec<u32>,
    /// Rack of each host id.
    rack: Vec<u32>,
    /// Position of each host id within its rack.
    pos: Vec<u32>,
}

impl RackIndex {
    pub(crate) fn new(layout: &HostLayout) -> Result<Self, String> {
        layout.validate()?;
        let n = layout.n_hosts() as usize;
        let mut flat = Vec::with_capacity(n);
        let mut offset = Vec::with_capacity(layout.racks.len() + 1);
        let mut rack = vec![0; n];
        let mut pos = vec![0; n];
        for (r, hosts) in layout.racks.iter().enumerate() {
            offset.push(flat.len() as u32);
            for (i, &h) in hosts.iter().enumerate() {
                rack[h as usize] = r as u32;
                pos[h as usize] = i as u32;
                flat.push(h);
            }
        }
        offset.push(flat.len() as u32);
        Ok(RackIndex {
            flat,
            offset,
            rack,
            pos,
        })
    }

    pub(crate) fn n_hosts(&self) -> u32 {
        self.flat.len() as u32
    }

    pub(crate) fn n_racks(&self) -> u32 {
        (self.offset.len() - 1) as u32
    }

    pub(crate) fn rack_of(&self, host: HostId) -> u32 {
        self.rack[host as usize]
    }

    /// Index of `host` within its rack.
    pub(crate) fn pos_of(&self, host: HostId) -> u32 {
        self.pos[host as usize]
    }

    /// The hosts of rack `r`.
    pub(crate) fn hosts(&self, r: u32) -> &[HostId] {
        let (a, b) = (self.offset[r as usize], self.offset[r as usize + 1]);
        &self.flat[a as usize..b as usize]
    }

    /// Number of hosts outside `host`'s rack.
    pub(crate) fn outside_count(&self, host: HostId) -> u32 {
        self.n_hosts() - self.hosts(self.rack_of(host)).len() as u32
    }

    /// The k-th host (0-based) outside rack `r`, in rack order. Needs k < hosts outside r.
    pub(crate) fn kth_outside(&self, r: u32, k: u32) -> HostId {
        let (a, b) = (self.offset[r as usize], self.offset[r as usize + 1]);
        let idx = if k >= a { k + (b - a) } else { k };
        self.flat[idx as usize]
    }

    /// Heap bytes held (for the laziness test).
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        4 * (self.flat.capacity()
            + self.offset.capacity()
            + self.rack.capacity()
            + self.pos.capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_layout_is_rack_major() {
        let l = HostLayout::uniform(3, 2);
        assert_eq!(l.racks, vec![vec![0, 1], vec![2, 3], vec![4, 5]]);
        assert_eq!(l.n_hosts(), 6);
        assert_eq!(l.rack_of(3), Some(1));
        assert_eq!(l.rack_of(6), None);
        assert!(l.validate().is_ok());
    }

    #[test]
    fn invalid_layouts_are_named() {
        let dup = HostLayout {
            racks: vec![vec![0, 1], vec![1, 2]],
        };
        assert_eq!(
            dup.validate().unwrap_err(),
            "host layout: host 1 appears in rack 0 and rack 1; each host must be in one rack once"
        );
        let gap = HostLayout {
            racks: vec![vec![0, 5]],
        };
        assert!(gap
            .validate()
            .unwrap_err()
            .contains("host 5 in rack 0 out of range 0..2"));
        let empty = HostLayout {
            racks: vec![vec![0, 1], vec![]],
        };
        assert!(empty
            .validate()
            .unwrap_err()
            .contains("rack 1 has no hosts"));
        let tiny = HostLayout {
            racks: vec![vec![0]],
        };
        assert!(tiny
            .validate()
            .unwrap_err()
            .contains("need at least 2 hosts, got 1"));
    }

    #[test]
    fn kth_outside_skips_the_rack() {
        // Racks of uneven size and non-contiguous ids.
        let l = HostLayout {
            racks: vec![vec![4, 0], vec![1], vec![3, 2, 5]],
        };
        let idx = RackIndex::new(&l).unwrap();
        let outside_1: Vec<_> = (0..5).map(|k| idx.kth_outside(1, k)).collect();
        assert_eq!(outside_1, vec![4, 0, 3, 2, 5]);
        let outside_0: Vec<_> = (0..4).map(|k| idx.kth_outside(0, k)).collect();
        assert_eq!(outside_0, vec![1, 3, 2, 5]);
        assert_eq!(idx.outside_count(2), 3);
        assert_eq!((idx.rack_of(2), idx.pos_of(2)), (2, 1));
    }
}
