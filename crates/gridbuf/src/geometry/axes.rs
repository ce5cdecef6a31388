//! Per-axis vectors. Shapes, strides, layouts and dims have a handful of entries, so they are
//! kept inline, without a heap allocation, up to [`INLINE_AXES`] axes and spill to the heap
//! beyond: planning a small allocation then costs no allocator calls of its own.

use smallvec::SmallVec;

/// Axes kept inline before a per-axis vector spills to the heap: the three Cartesian axes
/// and three data axes cover the fields of stencil codes.
pub const INLINE_AXES: usize = 6;

/// A vector with one entry per axis (see the module documentation).
pub type AxisVec<T> = SmallVec<[T; INLINE_AXES]>;
