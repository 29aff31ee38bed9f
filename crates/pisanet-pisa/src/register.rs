//! Register arrays: stateful memory of a fixed width and size (v1model
//! `register<bit<W>>(N)`).
//!
//! Guarantees the PISA memory rule (P4TE section 3.2): a program touches each
//! register array at most once per pass, as one read-modify-write, and only
//! from the half of the pipeline (ingress or egress) that first used it. A
//! second access is recorded as a [`Violation`](crate::Violation) and still
//! performed, so a run goes on and the loop fails it at the end. The check is
//! one compare of `last_pass` with the pass counter, always on.

use crate::meta::Gress;
use serde::Serialize;

/// Declaration of a register array.
#[derive(Clone, Debug, Serialize)]
pub struct RegisterSpec {
    pub name: &'static str,
    /// Bits per cell (1..=64). Values are masked to this width.
    pub width: u8,
    /// Number of cells.
    pub size: u32,
    /// What each cell holds.
    pub holds: &'static str,
}

/// Handle of a register array in its pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegisterId(pub(crate) u16);

pub(crate) struct RegisterArray {
    pub(crate) spec: RegisterSpec,
    pub(crate) mask: u64,
    pub(crate) values: Vec<u64>,
    /// The pass that last accessed this array (passes start at 1).
    pub(crate) last_pass: u64,
    /// The half of the pipeline the array belongs to (set on first access).
    pub(crate) gress: Option<Gress>,
}

impl RegisterArray {
    pub(crate) fn new(spec: RegisterSpec) -> Self {
        assert!(
            (1..=64).contains(&spec.width),
            "register {}: width 1..=64",
            spec.name
        );
        let mask = if spec.width == 64 {
            u64::MAX
        } else {
            (1u64 << spec.width) - 1
        };
        RegisterArray {
            values: vec![0; spec.size as usize],
            mask,
            spec,
            last_pass: 0,
            gress: None,
        }
    }
}
