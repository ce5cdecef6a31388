//! The executor: tiles of the domain, each statement run by its machine code ([`crate::gtscript::jit`]) or by
//! the tape interpreter.
//!
//! The domain is cut into tiles that run in parallel: I/J tiles, or slabs of the outermost
//! memory axis for stencils that need no block buffers (see `tile::run`). A tile runs every
//! section in order;
//! a section runs in blocks (several K levels for PARALLEL, one level at a time in order for
//! FORWARD and BACKWARD). A block copies what it reads into flat buffers that share one
//! geometry (the tile's core widened by the section's halo, its innermost axis the unit-stride
//! axis of the output's layout), so a read at an offset is a fixed shift of a flat index. Each
//! statement then runs over its region: its compiled code walks all rows of an outer step in one
//! call, keeping intermediates in vector registers; the interpreter runs the register tape in
//! strips of [`crate::gtscript::rt::interp::STRIP`] points, every instruction one tight loop over a strip, which the
//! compiler vectorises, so the dispatch per instruction is paid once per strip. Points at the ends of
//! rows mix neighbouring rows; they are computed but never reach a stored point. Finally the
//! block copies what it wrote back to memory.

pub(crate) mod clip;
#[cfg(test)]
mod jit_tests;
pub(crate) mod launch;
pub(crate) mod strip;
pub(crate) mod sweep;
#[cfg(test)]
mod tests;
pub(crate) mod tile;
#[cfg(test)]
mod typed_tests;

pub use tile::{run, run_interruptible};
