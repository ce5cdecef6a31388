//! Axis references (positions or dim names) and the operations that take them: reductions
//! and concatenations along a named dim.

use super::message::{describe, describe_operand, error};
use super::storage::restrict_layout;
use super::transpose::{match_dims, permute};
use super::{output_params, FieldInfo, Operand, OutputParams, Transpose};
use crate::error::{Error, Result};
use crate::geometry::dims::{format_dims, Dim};

/// A reference to an axis: a position (negative counts from the end) or a dim name.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AxisRef {
    /// A position, as NumPy's `axis=`.
    Index(isize),
    /// A dim name.
    Name(Dim),
}

/// A reduction: the axes it reduces and the parameters of its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduction {
    /// Reduced axes, ascending.
    pub axes: Vec<usize>,
    /// Parameters of the result.
    pub params: OutputParams,
}

/// A concatenation along a labelled dim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Concatenation {
    /// Position of the concatenated axis in the result.
    pub axis: usize,
    /// How to line each operand up with the result's dims (a transpose only).
    pub operands: Vec<Transpose>,
    /// Parameters of the result.
    pub params: OutputParams,
}

/// The position of one axis reference in `dims`; `param` names the argument in messages.
pub fn resolve_axis(dims: &[Dim], axis: AxisRef, param: &str) -> Result<usize> {
    let ndim = dims.len();
    match axis {
        AxisRef::Index(i) => {
            let pos = if i < 0 {
                i.checked_add(ndim as isize)
            } else {
                Some(i)
            };
            pos.filter(|&p| p >= 0 && (p as usize) < ndim)
                .map(|p| p as usize)
                .ok_or_else(|| {
                    error(
                        param,
                        i.to_string(),
                        format!(
                            "the Field has {ndim} axes with dims {}, so an axis is a dim name or an int in -{ndim}..{ndim}",
                            format_dims(dims)
                        ),
                    )
                })
        }
        AxisRef::Name(d) => dims.iter().position(|&x| x == d).ok_or_else(|| {
            error(
                param,
                format!("'{d}'"),
                format!("the Field's dims are {}", format_dims(dims)),
            )
        }),
    }
}

/// Distinct positions of axis references, ascending.
pub fn resolve_axes(dims: &[Dim], axes: &[AxisRef], param: &str) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let pos = resolve_axis(dims, a, param)?;
        if out.contains(&pos) {
            return Err(error(
                param,
                format!("{axes:?}"),
                format!("dim '{}' is named more than once", dims[pos]),
            ));
        }
        out.push(pos);
    }
    out.sort_unstable();
    Ok(out)
}

/// The result of reducing `field` over `axes` (all axes when `None`); with `keepdims` the
/// reduced axes stay with length 1. The result keeps the field's stride order, alignment and,
/// on the axes that remain, its halo and aligned index.
pub fn reduce(field: &FieldInfo, axes: Option<&[AxisRef]>, keepdims: bool) -> Result<Reduction> {
    let reduced = match axes {
        None => (0..field.ndim()).collect(),
        Some(axes) => resolve_axes(&field.dims, axes, "axis")?,
    };
    let keep: Vec<usize> = (0..field.ndim())
        .filter(|a| keepdims || !reduced.contains(a))
        .collect();
    let gone = |a: usize| reduced.contains(&a);
    let params = OutputParams {
        dims: keep.iter().map(|&a| field.dims[a]).collect(),
        shape: keep
            .iter()
            .map(|&a| if gone(a) { 1 } else { field.shape[a] })
            .collect(),
        layout: restrict_layout(&field.layout, &keep),
        alignment: field.alignment,
        aligned_index: keep
            .iter()
            .map(|&a| if gone(a) { 0 } else { field.aligned_index[a] })
            .collect(),
        halo: keep
            .iter()
            .map(|&a| if gone(a) { (0, 0) } else { field.halo[a] })
            .collect(),
        source: 0,
    };
    Ok(Reduction {
        axes: reduced,
        params,
    })
}

/// Concatenates operands along a dim. The first field gives the dims (in its order); the other
/// fields must have the same dims in any order and the same lengths except along `axis`; plain
/// arrays are read with the first field's dims. Along `axis` the result has the lower halo and
/// aligned index of the first operand and the upper halo of the last one; on the other dims the
/// parameters follow [`output_params`].
pub fn concatenate(operands: &[Operand], axis: AxisRef) -> Result<Concatenation> {
    let Some(first) = operands.iter().find_map(|op| match op {
        Operand::Field(f) => Some(f),
        _ => None,
    }) else {
        return Err(error(
            "operands",
            "without a Field".into(),
            "at least one operand must be a Field to concatenate by dims".into(),
        ));
    };
    let dims = first.dims.clone();
    let pos = resolve_axis(&dims, axis, "axis")?;
    let mut aligned = Vec::with_capacity(operands.len());
    let mut lined_up: Vec<Operand> = Vec::with_capacity(operands.len());
    let mut total = 0usize;
    for (i, op) in operands.iter().enumerate() {
        let mismatch = |why: String| {
            error(
                "operands",
                format!(
                    "({} and the first Field with {})",
                    describe_operand(i, op),
                    describe(&first.dims, &first.shape)
                ),
                why,
            )
        };
        let (alignment, shape, info) = match op {
            Operand::Field(f) => {
                let perm = match_dims(f, &dims).ok_or_else(|| {
                    mismatch("a concatenation needs the same dims in every Field".into())
                })?;
                let info = permute(f, &perm);
                let identity = perm.iter().enumerate().all(|(i, &a)| i == a);
                let al = Transpose {
                    transpose: (!identity).then_some(perm),
                    reshape: None,
                };
                (al, info.shape.clone(), Some(info))
            }
            Operand::Array(shape) if shape.len() == dims.len() => {
                (Transpose::default(), shape.clone(), None)
            }
            Operand::Array(_) | Operand::Scalar => {
                return Err(mismatch(format!(
                "a plain array in a concatenation needs {} axes, read with the first Field's dims",
                dims.len()
            )))
            }
        };
        for (a, (&n, &m)) in shape.iter().zip(&first.shape).enumerate() {
            if a != pos && n != m {
                return Err(mismatch(format!(
                    "dim '{}' has length {n} here and {m} in the first Field; only '{}' may differ",
                    dims[a], dims[pos]
                )));
            }
        }
        total = total
            .checked_add(shape[pos])
            .ok_or_else(|| Error::overflow("shape", &shape, "the concatenated extent"))?;
        aligned.push(alignment);
        lined_up.push(info.map_or(Operand::Array(shape), Operand::Field));
    }
    let mut shape = first.shape.clone();
    shape[pos] = total;
    // Along the other dims, the ufunc rules over the lined-up fields (with the axis length
    // made equal to the result's so that they all count).
    let normalized: Vec<Operand> = lined_up
        .iter()
        .map(|op| match op {
            Operand::Field(f) => {
                let mut g = f.clone();
                g.shape[pos] = total;
                g.halo[pos] = (0, 0);
                g.aligned_index[pos] = 0;
                Operand::Field(g)
            }
            other => other.clone(),
        })
        .collect();
    let mut params = output_params(&normalized, &dims, &shape)?.expect("there is a field");
    let lower = match lined_up.first() {
        Some(Operand::Field(f)) => (f.halo[pos].0, f.aligned_index[pos]),
        _ => (0, 0),
    };
    let upper = match lined_up.last() {
        Some(Operand::Field(f)) => f.halo[pos].1,
        _ => 0,
    };
    let lo = lower.0.min(total);
    params.halo[pos] = (lo, upper.min(total - lo));
    params.aligned_index[pos] = lower.1.min(total);
    Ok(Concatenation {
        axis: pos,
        operands: aligned,
        params,
    })
}
