//! Counters (v1model `counter(N, CounterType)` and `direct_counter`): the data
//! plane only increments them; the control plane reads them.

use serde::Serialize;

/// v1model `CounterType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CounterKind {
    Packets,
    Bytes,
    PacketsAndBytes,
}

/// Declaration of an indexed counter array.
#[derive(Clone, Debug, Serialize)]
pub struct CounterSpec {
    pub name: &'static str,
    pub kind: CounterKind,
    pub size: u32,
}

/// Handle of a counter array in its pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterId(pub(crate) u16);

/// One counter cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CounterData {
    pub packets: u64,
    pub bytes: u64,
}

impl CounterData {
    pub(crate) fn count(&mut self, kind: CounterKind, bytes: u32) {
        match kind {
            CounterKind::Packets => self.packets += 1,
            CounterKind::Bytes => self.bytes += bytes as u64,
            CounterKind::PacketsAndBytes => {
                self.packets += 1;
                self.bytes += bytes as u64;
            }
        }
    }
}

pub(crate) struct CounterArray {
    pub(crate) spec: CounterSpec,
    pub(crate) cells: Vec<CounterData>,
}
