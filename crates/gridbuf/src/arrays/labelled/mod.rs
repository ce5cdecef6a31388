//! Labelled fields that compute: broadcasting by dims name, the storage parameters of a result
//! (GDP-3 "Output Storage Parameters"), the axes of reductions, transpositions and
//! concatenations, and the dims of the view an index selects.
//!
//! One module per concept: [`broadcast`](self::broadcast()) lines operands up by dims name,
//! `storage` computes the storage parameters of results, `axis` resolves axis references for
//! reductions and concatenations, `transpose` permutes axes and `index` gives the dims of
//! views; `message` formats the operands for error messages.
//!
//! Everything here is pure: it reads dims, shapes, halos and storage parameters and says how to
//! line arrays up and how to allocate results. The Python `Field` wrapper only dispatches.
//!
//! Broadcasting follows GDP-3: operands are aligned by dims name, not by position, and a dim of
//! length 1 counts as absent (it broadcasts against any length). Plain arrays carry no dims; they
//! are accepted when their shape is the broadcast shape (ones broadcast), or when they are 3-D,
//! read as `I`, `J`, `K`, with ones where broadcasting is needed.
//!
//! ```
//! use gridbuf::arrays::labelled::{broadcast, FieldInfo, Operand};
//! use gridbuf::geometry::dims::parse_dims_str;
//! let t = FieldInfo::new(parse_dims_str("IJK")?, vec![4, 5, 6])?;
//! let p = FieldInfo::new(parse_dims_str("K")?, vec![6])?;
//! let b = broadcast(&[Operand::Field(t), Operand::Field(p)], None)?;
//! assert_eq!(b.shape, vec![4, 5, 6]);
//! assert_eq!(b.operands[1].reshape, Some(vec![1, 1, 6]));
//! # Ok::<(), gridbuf::Error>(())
//! ```

mod axis;
mod broadcast;
mod index;
mod message;
mod storage;
#[cfg(test)]
mod tests;
mod transpose;

pub use axis::{
    concatenate, reduce, resolve_axes, resolve_axis, AxisRef, Concatenation, Reduction,
};
pub use broadcast::{assign, broadcast, broadcast_dims, Broadcast};
pub use index::{index, resolve_slice, IndexItem, Indexed, IndexedView};
pub use storage::{inherit_layout, output_params, OutputParams};
pub use transpose::{match_out, transpose_axes, Transpose};

/// Former name of [`Transpose`], kept so that existing callers compile.
pub type Alignment = Transpose;

use crate::error::{Error, Result};
use crate::geometry::dims::{self, Dim};
use crate::geometry::halo;
use crate::geometry::layout::{self, axes_by_rank, validate_layout, BaseLayout};
use crate::geometry::origin;

/// Dims, shape, halo and storage parameters of one labelled field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// Dims per axis.
    pub dims: Vec<Dim>,
    /// Extent per axis, halo included.
    pub shape: Vec<usize>,
    /// Halo per axis as (lower, upper).
    pub halo: Vec<(usize, usize)>,
    /// Layout map per axis (see [`crate::geometry::layout`]).
    pub layout: Vec<usize>,
    /// The base layout that places dims the field lacks (its preset's, or the index order its
    /// strides follow); used when a result has more dims than this field.
    pub base: BaseLayout,
    /// Row alignment in bytes (1: none).
    pub alignment: usize,
    /// Index of the aligned element.
    pub aligned_index: Vec<usize>,
}

impl FieldInfo {
    /// A field with C layout, no halo, alignment 1 and aligned index zero.
    pub fn new(dims: Vec<Dim>, shape: Vec<usize>) -> Result<FieldInfo> {
        dims::validate(&dims, Some(shape.len()), "dims")?;
        let ndim = shape.len();
        Ok(FieldInfo {
            dims,
            shape,
            halo: vec![(0, 0); ndim],
            layout: (0..ndim).collect(),
            base: BaseLayout::C,
            alignment: 1,
            aligned_index: vec![0; ndim],
        })
    }

    /// Sets the halo (which must fit the shape) and the aligned index to the lower halo.
    pub fn with_halo(mut self, halo: Vec<(usize, usize)>) -> Result<FieldInfo> {
        halo::check_fits(&self.shape, &halo, Some(&self.dims), "halo")?;
        self.aligned_index = halo::lower(&halo).into_vec();
        self.halo = halo;
        Ok(self)
    }

    /// Sets the storage parameters of a whole gridbuf allocation.
    pub fn with_storage(
        mut self,
        layout: Vec<usize>,
        base: BaseLayout,
        alignment: usize,
        aligned_index: Vec<usize>,
    ) -> Result<FieldInfo> {
        let ndim = self.shape.len();
        validate_layout(&layout, ndim)?;
        if alignment == 0 {
            return Err(Error::invalid(
                "alignment",
                alignment,
                "expected a positive number of bytes",
            ));
        }
        origin::check(&aligned_index, &self.shape, "aligned_index")?;
        self.layout = layout;
        self.base = base;
        self.alignment = alignment;
        self.aligned_index = aligned_index;
        Ok(self)
    }

    /// Infers the layout from byte strides (see [`layout::from_strides`]); the base layout is the
    /// index order they follow ("C" unless they are exactly Fortran order).
    pub fn with_strides(mut self, strides: &[isize]) -> Result<FieldInfo> {
        if strides.len() != self.shape.len() {
            return Err(Error::invalid(
                "strides",
                strides,
                format!("expected one stride per axis, {} in all", self.shape.len()),
            ));
        }
        self.layout = layout::from_strides(strides).into_vec();
        self.base = BaseLayout::of_layout_map(&self.layout);
        Ok(self)
    }

    /// Number of axes.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    fn axis_of(&self, dim: Dim) -> Option<usize> {
        self.dims.iter().position(|&d| d == dim)
    }
}

/// The operands of a ufunc, an assignment or a concatenation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operand {
    /// A labelled field.
    Field(FieldInfo),
    /// A plain array of this shape: it has no dims of its own.
    Array(Vec<usize>),
    /// A scalar or a 0-d array: it broadcasts against anything.
    Scalar,
}

/// The labelled fields among `operands`, each with its position.
pub(crate) fn fields_of(operands: &[Operand]) -> Vec<(usize, &FieldInfo)> {
    operands
        .iter()
        .enumerate()
        .filter_map(|(i, op)| match op {
            Operand::Field(f) => Some((i, f)),
            _ => None,
        })
        .collect()
}

/// Storage parameters of `params` as a [`FieldInfo`] (for results that are used again).
impl From<&OutputParams> for FieldInfo {
    fn from(p: &OutputParams) -> FieldInfo {
        FieldInfo {
            dims: p.dims.clone(),
            shape: p.shape.clone(),
            halo: p.halo.clone(),
            layout: p.layout.clone(),
            base: BaseLayout::C,
            alignment: p.alignment,
            aligned_index: p.aligned_index.clone(),
        }
    }
}

/// The axes ordered from the largest stride to the unit stride, by dims name (for messages and
/// tests): `"KJI"` for a field whose `I` axis has unit stride.
pub fn stride_order(dims: &[Dim], layout: &[usize]) -> Vec<Dim> {
    axes_by_rank(layout).into_iter().map(|a| dims[a]).collect()
}
