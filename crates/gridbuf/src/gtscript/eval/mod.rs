//! The evaluator: a tiled vector interpreter.
//!
//! The domain is cut into I/J tiles that run in parallel. A tile runs every section in order;
//! a section runs in blocks (several K levels for PARALLEL, one level at a time in order for
//! FORWARD and BACKWARD). A block copies what it reads into flat buffers that share one
//! geometry (the tile's core widened by the section's halo, its innermost axis the unit-stride
//! axis of the output's layout), so a read at an offset is a fixed shift of a flat index. Each
//! statement then runs its register tape over the flat range of its region, in strips of
//! [`STRIP`] points: every instruction is one tight loop over a strip, which the compiler
//! vectorises, and the dispatch per instruction is paid once per strip. Points at the ends of
//! rows mix neighbouring rows; they are computed but never reach a stored point. Finally the
//! block copies what it wrote back to memory.

mod jit;
#[cfg(test)]
mod jit_tests;
mod kernels;
mod mem;
mod num;
mod strip;
#[cfg(test)]
mod tests;
mod tile;

pub use jit::Jit;
pub use mem::FieldMem;
pub use num::Num;
pub use tile::run;

/// Points per strip of the tape interpreter.
const STRIP: usize = 512;
