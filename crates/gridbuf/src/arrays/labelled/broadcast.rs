//! Broadcasting by dims name (GDP-3): the dims and shape of a result and how to line each
//! operand up with it, for ufuncs, `out=` and assignments.

use super::message::{describe, describe_operand, error, format_shape};
use super::{FieldInfo, Operand, Transpose};
use crate::error::Result;
use crate::geometry::dims::Dim;

/// The broadcast of operands: dims and shape of the result, and how to line each operand up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broadcast {
    /// Dims of the result (of `out` when it is a field).
    pub dims: Vec<Dim>,
    /// Shape of the result.
    pub shape: Vec<usize>,
    /// One alignment per operand, in order.
    pub operands: Vec<Transpose>,
}

/// Dims and shape of the broadcast of the fields among `operands`, without `out`.
///
/// The dims are the fields' dims when they all agree (same names in the same order), else the
/// union in canonical order (`I`, `J`, `K`, then data dims by number). The length of a dim is
/// the one length other than 1 the fields give it (1 if none does).
pub fn broadcast_dims(operands: &[Operand]) -> Result<(Vec<Dim>, Vec<usize>)> {
    let fields = super::fields_of(operands);
    let Some(&(_, first)) = fields.first() else {
        return Err(error(
            "operands",
            "without a Field".into(),
            "at least one operand (or out=) must be a Field to broadcast by dims".into(),
        ));
    };
    let dims: Vec<Dim> = if fields.iter().all(|(_, f)| f.dims == first.dims) {
        first.dims.clone()
    } else {
        let mut union: Vec<Dim> = fields
            .iter()
            .flat_map(|(_, f)| f.dims.iter().copied())
            .collect();
        union.sort_unstable();
        union.dedup();
        union
    };
    // Per result axis: the length and the operand that set it (for messages).
    let mut shape = vec![1usize; dims.len()];
    let mut setter: Vec<Option<usize>> = vec![None; dims.len()];
    for &(i, f) in &fields {
        for (&dim, &n) in f.dims.iter().zip(&f.shape) {
            let pos = dims
                .iter()
                .position(|&d| d == dim)
                .expect("dims are the union");
            if n == 1 {
                continue;
            }
            match setter[pos] {
                None => {
                    shape[pos] = n;
                    setter[pos] = Some(i);
                }
                Some(_) if shape[pos] == n => {}
                Some(j) => {
                    let Operand::Field(g) = &operands[j] else {
                        unreachable!()
                    };
                    return Err(error(
                        "operands",
                        format!(
                            "(a Field with {} and a Field with {})",
                            describe(&g.dims, &g.shape),
                            describe(&f.dims, &f.shape)
                        ),
                        format!(
                            "dim '{dim}' has length {} in operand {j} and {n} in operand {i}; same-named dims must have equal lengths, or length 1 to broadcast",
                            shape[pos]
                        ),
                    ));
                }
            }
        }
    }
    Ok((dims, shape))
}

/// What operands are lined up with, for messages.
#[derive(Copy, Clone)]
enum Target {
    /// The broadcast of the operands themselves.
    Result,
    /// An `out=` field.
    Out,
    /// The part of a field an assignment writes.
    Assignment,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Result => "the result",
            Target::Out => "the out= Field",
            Target::Assignment => "the assignment target",
        }
    }

    fn param(self) -> &'static str {
        match self {
            Target::Assignment => "value",
            _ => "operands",
        }
    }

    fn missing(self, dim: Dim, n: usize, index: usize) -> String {
        match self {
            Target::Assignment => format!(
                "the value has dim '{dim}' (length {n}), which the assignment target lacks; a value broadcasts only along dims the target has"
            ),
            _ => format!(
                "{} has fewer dims than the result: it lacks dim '{dim}' (length {n}) of operand {index}",
                self.name()
            ),
        }
    }
}

/// Lines a field up with a target: every axis of the field maps to the target axis of the same
/// dim; axes of length 1 the target lacks are dropped.
fn align_field(
    f: &FieldInfo,
    dims: &[Dim],
    shape: &[usize],
    index: usize,
    op: &Operand,
    target: Target,
) -> Result<Transpose> {
    let what = target.name();
    let mut present: Vec<(usize, usize)> = Vec::with_capacity(f.ndim());
    let mut absent: Vec<usize> = Vec::new();
    for (axis, (&dim, &n)) in f.dims.iter().zip(&f.shape).enumerate() {
        match dims.iter().position(|&d| d == dim) {
            Some(pos) if n == shape[pos] || n == 1 => present.push((pos, axis)),
            Some(pos) => {
                return Err(error(
                    target.param(),
                    format!("({} and {what} with {})", describe_operand(index, op), describe(dims, shape)),
                    format!(
                        "dim '{dim}' has length {n} in operand {index} and {} in {what}; same-named dims must have equal lengths, or length 1 to broadcast",
                        shape[pos]
                    ),
                ))
            }
            None if n == 1 => absent.push(axis),
            None => {
                return Err(error(
                    target.param(),
                    format!("({} and {what} with {})", describe_operand(index, op), describe(dims, shape)),
                    target.missing(dim, n, index),
                ))
            }
        }
    }
    present.sort_unstable();
    let transpose: Vec<usize> = present
        .iter()
        .map(|&(_, a)| a)
        .chain(absent.iter().copied())
        .collect();
    let mut reshape = vec![1usize; dims.len()];
    for &(pos, axis) in &present {
        reshape[pos] = f.shape[axis];
    }
    let transposed: Vec<usize> = transpose.iter().map(|&a| f.shape[a]).collect();
    let identity = transpose.iter().enumerate().all(|(i, &a)| i == a);
    Ok(Transpose {
        transpose: (!identity).then_some(transpose),
        reshape: (transposed != reshape).then_some(reshape),
    })
}

/// Lines a plain array up with a target: positionally when it has the target's number of axes
/// (ones broadcast), read as `I`, `J`, `K` when it is 3-D, or as a scalar when all its extents
/// are 1.
fn align_array(
    shape_in: &[usize],
    dims: &[Dim],
    shape: &[usize],
    index: usize,
    op: &Operand,
    target: Target,
) -> Result<Transpose> {
    let what = target.name();
    if shape_in.len() == shape.len() && shape_in.iter().zip(shape).all(|(&a, &n)| a == n || a == 1)
    {
        return Ok(Transpose::default());
    }
    if shape_in.len() == 3 {
        let as_field = FieldInfo::new(vec![Dim::I, Dim::J, Dim::K], shape_in.to_vec())?;
        if let Ok(a) = align_field(&as_field, dims, shape, index, op, target) {
            return Ok(a);
        }
    }
    if shape_in.len() <= shape.len() && shape_in.iter().all(|&n| n == 1) {
        return Ok(Transpose::default());
    }
    Err(error(
        target.param(),
        format!("({} and {what} with {})", describe_operand(index, op), describe(dims, shape)),
        format!(
            "a plain array must have the shape {} (ones broadcast) or be 3-D (read as I, J, K) with ones where it broadcasts; wrap it in gridbuf.Field(array, dims=...) to broadcast it by dims",
            format_shape(shape)
        ),
    ))
}

/// Broadcasts operands by dims name, into `out` when it is given.
///
/// Without `out` (or with a plain-array `out`) the result has the dims and shape of
/// [`broadcast_dims`]; a plain `out` must have exactly that shape. With a field `out` the result
/// has `out`'s dims and shape: the operands must fit into it, and it may have more dims (the
/// result is replicated along them).
pub fn broadcast(operands: &[Operand], out: Option<&Operand>) -> Result<Broadcast> {
    let (dims, shape, target) = match out {
        Some(Operand::Field(o)) => (o.dims.clone(), o.shape.clone(), Target::Out),
        Some(Operand::Array(out_shape)) => {
            let (dims, shape) = broadcast_dims(operands)?;
            if *out_shape != shape {
                return Err(error(
                    "out",
                    format!("(an array of shape {})", format_shape(out_shape)),
                    format!(
                        "a plain out= array must have the shape of the result, which has {}",
                        describe(&dims, &shape)
                    ),
                ));
            }
            (dims, shape, Target::Result)
        }
        Some(Operand::Scalar) => {
            return Err(error(
                "out",
                "(a scalar)".into(),
                "expected a Field or an array to write into".into(),
            ))
        }
        None => {
            let (dims, shape) = broadcast_dims(operands)?;
            (dims, shape, Target::Result)
        }
    };
    let aligned = operands
        .iter()
        .enumerate()
        .map(|(i, op)| match op {
            Operand::Field(f) => align_field(f, &dims, &shape, i, op, target),
            Operand::Array(a) => align_array(a, &dims, &shape, i, op, target),
            Operand::Scalar => Ok(Transpose::default()),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Broadcast {
        dims,
        shape,
        operands: aligned,
    })
}

/// Lines up the value of an assignment with the part of a field it writes (`dims` and `shape`),
/// as a unary ufunc with `out=` would: the value may lack dims of the target (it is replicated
/// along them) but not have dims the target lacks.
pub fn assign(value: &Operand, dims: &[Dim], shape: &[usize]) -> Result<Transpose> {
    match value {
        Operand::Field(f) => align_field(f, dims, shape, 0, value, Target::Assignment),
        Operand::Array(a) => align_array(a, dims, shape, 0, value, Target::Assignment),
        Operand::Scalar => Ok(Transpose::default()),
    }
}
