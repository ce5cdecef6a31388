//! Allocation: from a request (shape, element size, preset) to aligned, filled host memory.
//!
//! | concept | module |
//! |---|---|
//! | presets (GT4Py's backends) and their registry | [`preset`] |
//! | memory plans (padded shape, byte strides, offset), the plan cache, "is this a whole allocation" | [`memory_plan`] |
//! | aligned host memory | [`buffer`] |
//! | filling with a value | [`fill`] |
//!
//! The memory plan is named `memory_plan`, not `plan`, so that it is not mistaken for the
//! gtscript program plan ([`crate::gtscript`]'s `plan`): one plans the memory of an
//! allocation, the other the execution of a stencil.

pub mod buffer;
pub mod fill;
pub mod memory_plan;
pub mod preset;
