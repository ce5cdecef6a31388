//! The storage parameters of results gridbuf allocates (GDP-3 "Output Storage Parameters"):
//! layout inherited from an operand, alignment, aligned index and halo.

use super::{FieldInfo, Operand};
use crate::error::{Error, Result};
use crate::geometry::dims::Dim;

/// The storage parameters of a result that gridbuf allocates (GDP-3 "Output Storage
/// Parameters").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputParams {
    /// Dims per axis.
    pub dims: Vec<Dim>,
    /// Extent per axis.
    pub shape: Vec<usize>,
    /// Layout map per axis.
    pub layout: Vec<usize>,
    /// Row alignment in bytes: the least common multiple of the fields' alignments.
    pub alignment: usize,
    /// Index of the aligned element: per dim the largest of the fields'.
    pub aligned_index: Vec<usize>,
    /// Halo per axis, so that the domain is the intersection of the fields' domains.
    pub halo: Vec<(usize, usize)>,
    /// Index of the operand whose layout (and device) the result takes.
    pub source: usize,
}

/// The layout of a result with `dims` that takes the stride order of `source`: the base layout
/// of `source` places every dim, then the dims `source` has take the ranks the base gave them,
/// reassigned in the order of `source`'s own layout. So `source`'s dims keep their relative
/// order exactly, and a result with the same dims gets the same stride order.
pub fn inherit_layout(source: &FieldInfo, dims: &[Dim]) -> crate::AxisVec<usize> {
    let mut layout = source.base.layout_map(dims);
    let mut slots: Vec<usize> = Vec::with_capacity(source.ndim());
    let mut own: Vec<(usize, usize)> = Vec::with_capacity(source.ndim());
    for (axis, &dim) in source.dims.iter().enumerate() {
        if let Some(pos) = dims.iter().position(|&d| d == dim) {
            slots.push(layout[pos]);
            own.push((source.layout[axis], pos));
        }
    }
    slots.sort_unstable();
    own.sort_unstable();
    for (&rank, &(_, pos)) in slots.iter().zip(&own) {
        layout[pos] = rank;
    }
    layout
}

/// Keeps the relative order of the ranks of `keep` (axes of `layout`) and renumbers them.
pub(super) fn restrict_layout(layout: &[usize], keep: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..keep.len()).collect();
    order.sort_by_key(|&i| layout[keep[i]]);
    let mut out = vec![0; keep.len()];
    for (rank, i) in order.into_iter().enumerate() {
        out[i] = rank;
    }
    out
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Least common multiple of alignments (each at least 1).
pub(super) fn lcm_of(alignments: impl IntoIterator<Item = usize>) -> Result<usize> {
    alignments.into_iter().try_fold(1usize, |acc, a| {
        let a = a.max(1);
        (acc / gcd(acc, a)).checked_mul(a).ok_or_else(|| {
            Error::overflow(
                "alignment",
                a,
                "the least common multiple of the alignments",
            )
        })
    })
}

/// The storage parameters of a result with `dims` and `shape` computed from `operands`
/// (GDP-3): the layout of the first field, the least common multiple of the fields' alignments,
/// per dim the largest aligned index and the halo whose domain is the intersection of the
/// fields' domains (an empty domain at the largest lower halo when they do not intersect).
///
/// Per dim only the fields that have it at the result's length count: a dim of length 1 that
/// broadcasts is absent. Returns `None` when no operand is a field.
pub fn output_params(
    operands: &[Operand],
    dims: &[Dim],
    shape: &[usize],
) -> Result<Option<OutputParams>> {
    let fields = super::fields_of(operands);
    let Some(&(source, first)) = fields.first() else {
        return Ok(None);
    };
    let layout = inherit_layout(first, dims);
    let alignment = lcm_of(fields.iter().map(|(_, f)| f.alignment))?;
    let mut aligned_index = vec![0usize; dims.len()];
    let mut halo = vec![(0usize, 0usize); dims.len()];
    for (pos, (&dim, &n)) in dims.iter().zip(shape).enumerate() {
        let (mut lo, mut hi, mut ai) = (0usize, 0usize, 0usize);
        for (_, f) in &fields {
            if let Some(axis) = f.axis_of(dim).filter(|&a| f.shape[a] == n) {
                lo = lo.max(f.halo[axis].0);
                hi = hi.max(f.halo[axis].1);
                ai = ai.max(f.aligned_index[axis]);
            }
        }
        let lo = lo.min(n);
        halo[pos] = (lo, hi.min(n - lo));
        aligned_index[pos] = ai.min(n);
    }
    Ok(Some(OutputParams {
        dims: dims.to_vec(),
        shape: shape.to_vec(),
        layout: layout.to_vec(),
        alignment,
        aligned_index,
        halo,
        source,
    }))
}
