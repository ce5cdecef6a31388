//! Transpositions: how to line an operand's axes up with a result ([`Transpose`]), the
//! permutation a transposition names, and matching an `out=` field's axes to a result.

use super::message::{describe, error};
use super::{axis::resolve_axis, AxisRef, FieldInfo};
use crate::error::Result;
use crate::geometry::dims::{format_dims, Dim};

/// How to line one operand up with a result: transpose its axes, then reshape the view (only
/// axes of length 1 are inserted or removed, so the reshape never copies).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transpose {
    /// Axis order to transpose to; `None` when it is the identity.
    pub transpose: Option<Vec<usize>>,
    /// Shape to reshape the transposed view to; `None` when it already has it.
    pub reshape: Option<Vec<usize>>,
}

impl Transpose {
    /// Whether the operand is used as it is.
    pub fn is_identity(&self) -> bool {
        self.transpose.is_none() && self.reshape.is_none()
    }
}

/// The axis permutation of a transposition: every axis exactly once, by name or position; no
/// axes reverses the order (as NumPy).
pub fn transpose_axes(dims: &[Dim], axes: &[AxisRef]) -> Result<Vec<usize>> {
    if axes.is_empty() {
        return Ok((0..dims.len()).rev().collect());
    }
    let mut perm = Vec::with_capacity(axes.len());
    for &a in axes {
        let pos = resolve_axis(dims, a, "axes")?;
        if perm.contains(&pos) {
            return Err(error(
                "axes",
                format!("{axes:?}"),
                format!(
                    "dim '{}' is named more than once; name each of {} once",
                    dims[pos],
                    format_dims(dims)
                ),
            ));
        }
        perm.push(pos);
    }
    if perm.len() != dims.len() {
        return Err(error(
            "axes",
            format!("{axes:?}"),
            format!(
                "a transposition names every dim of the Field once: {}",
                format_dims(dims)
            ),
        ));
    }
    Ok(perm)
}

/// The permutation that lines `out` (a field) up with a result of `dims` and `shape`: it must
/// have the same dims, in any order, with the same lengths.
pub fn match_out(out: &FieldInfo, dims: &[Dim], shape: &[usize]) -> Result<Vec<usize>> {
    let mismatch = |why: String| {
        error(
            "out",
            format!("(a Field with {})", describe(&out.dims, &out.shape)),
            format!("the result has {}: {why}", describe(dims, shape)),
        )
    };
    if out.ndim() < dims.len() {
        return Err(mismatch("out= has fewer dims than the result".into()));
    }
    let mut perm = Vec::with_capacity(dims.len());
    for (&d, &n) in dims.iter().zip(shape) {
        match out.axis_of(d) {
            None => return Err(mismatch(format!("dim '{d}' is missing from out="))),
            Some(a) if out.shape[a] != n => {
                return Err(mismatch(format!(
                    "dim '{d}' has length {} in out= and {n} in the result",
                    out.shape[a]
                )))
            }
            Some(a) => perm.push(a),
        }
    }
    if perm.len() != out.ndim() {
        return Err(mismatch("out= has dims the result lacks".into()));
    }
    Ok(perm)
}

/// The permutation that orders `f`'s axes as `dims`, if `f` has exactly those dims.
pub(super) fn match_dims(f: &FieldInfo, dims: &[Dim]) -> Option<Vec<usize>> {
    if f.ndim() != dims.len() {
        return None;
    }
    dims.iter().map(|&d| f.axis_of(d)).collect()
}

pub(super) fn permute(f: &FieldInfo, perm: &[usize]) -> FieldInfo {
    FieldInfo {
        dims: perm.iter().map(|&a| f.dims[a]).collect(),
        shape: perm.iter().map(|&a| f.shape[a]).collect(),
        halo: perm.iter().map(|&a| f.halo[a]).collect(),
        layout: perm.iter().map(|&a| f.layout[a]).collect(),
        base: f.base,
        alignment: f.alignment,
        aligned_index: perm.iter().map(|&a| f.aligned_index[a]).collect(),
    }
}
