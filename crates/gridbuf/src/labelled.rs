//! Labelled fields that compute: broadcasting by dims name, the storage parameters of a result
//! (GDP-3 "Output Storage Parameters"), the axes of reductions, transpositions and
//! concatenations, and the dims of the view an index selects.
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
//! use gridbuf::labelled::{broadcast, FieldInfo, Operand};
//! use gridbuf::dims::parse_dims_str;
//! let t = FieldInfo::new(parse_dims_str("IJK")?, vec![4, 5, 6])?;
//! let p = FieldInfo::new(parse_dims_str("K")?, vec![6])?;
//! let b = broadcast(&[Operand::Field(t), Operand::Field(p)], None)?;
//! assert_eq!(b.shape, vec![4, 5, 6]);
//! assert_eq!(b.operands[1].reshape, Some(vec![1, 1, 6]));
//! # Ok::<(), gridbuf::Error>(())
//! ```

use crate::dims::{format_dims, validate_dims, Dim};
use crate::error::{Error, Result};
use crate::layout::{axes_by_rank, validate_layout, BaseLayout};

/// Dims, shape, halo and storage parameters of one labelled field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// Dims per axis.
    pub dims: Vec<Dim>,
    /// Extent per axis, halo included.
    pub shape: Vec<usize>,
    /// Halo per axis as (lower, upper).
    pub halo: Vec<(usize, usize)>,
    /// Layout map per axis (see [`crate::layout`]).
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
        validate_dims(&dims, shape.len())?;
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
        check_halo(&halo, &self.shape)?;
        self.aligned_index = halo.iter().map(|&(lo, _)| lo).collect();
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
        if aligned_index.len() != ndim || aligned_index.iter().zip(&self.shape).any(|(i, n)| i > n)
        {
            return Err(Error::invalid(
                "aligned_index",
                &aligned_index,
                format!(
                    "expected one index per axis, each at most its extent in {:?}",
                    self.shape
                ),
            ));
        }
        self.layout = layout;
        self.base = base;
        self.alignment = alignment;
        self.aligned_index = aligned_index;
        Ok(self)
    }

    /// Infers the layout from byte strides (see [`layout_from_strides`]); the base layout is the
    /// index order they follow ("C" unless they are exactly Fortran order).
    pub fn with_strides(mut self, strides: &[isize]) -> Result<FieldInfo> {
        if strides.len() != self.shape.len() {
            return Err(Error::invalid(
                "strides",
                strides,
                format!("expected one stride per axis, {} in all", self.shape.len()),
            ));
        }
        self.layout = layout_from_strides(strides);
        self.base = base_from_layout(&self.layout);
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

/// How to line one operand up with a result: transpose its axes, then reshape the view (only
/// axes of length 1 are inserted or removed, so the reshape never copies).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Alignment {
    /// Axis order to transpose to; `None` when it is the identity.
    pub transpose: Option<Vec<usize>>,
    /// Shape to reshape the transposed view to; `None` when it already has it.
    pub reshape: Option<Vec<usize>>,
}

impl Alignment {
    /// Whether the operand is used as it is.
    pub fn is_identity(&self) -> bool {
        self.transpose.is_none() && self.reshape.is_none()
    }
}

/// The broadcast of operands: dims and shape of the result, and how to line each operand up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broadcast {
    /// Dims of the result (of `out` when it is a field).
    pub dims: Vec<Dim>,
    /// Shape of the result.
    pub shape: Vec<usize>,
    /// One alignment per operand, in order.
    pub operands: Vec<Alignment>,
}

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
    pub operands: Vec<Alignment>,
    /// Parameters of the result.
    pub params: OutputParams,
}

/// One item of an index, as Python gives it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IndexItem {
    /// An integer: selects one element and drops the axis.
    Int(isize),
    /// A slice with Python's optional start, stop and step.
    Slice {
        /// First index, default the start of the traversal.
        start: Option<isize>,
        /// End (exclusive), default the end of the traversal.
        stop: Option<isize>,
        /// Step, default 1; 0 is an error.
        step: Option<isize>,
    },
    /// `...`: full slices over the axes not otherwise indexed.
    Ellipsis,
    /// `None` (`numpy.newaxis`): a new axis of length 1.
    NewAxis,
    /// An array, a list or a bool: advanced indexing.
    Advanced,
}

/// What an index selects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Indexed {
    /// A view with labelled axes.
    View(IndexedView),
    /// One element (every axis had an integer).
    Element,
    /// Advanced indexing: the result is a copy without dims.
    Advanced,
}

/// Dims and domain of a basic-indexing view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedView {
    /// Axis of the indexed field each view axis comes from (`None` for a new axis).
    pub axes: Vec<Option<usize>>,
    /// Dims per view axis.
    pub dims: Vec<Dim>,
    /// Extent per view axis.
    pub shape: Vec<usize>,
    /// Halo per view axis: the view elements that lie in the field's halo.
    pub halo: Vec<(usize, usize)>,
    /// Origin per view axis.
    pub origin: Vec<usize>,
}

// ---------------------------------------------------------------------------------------------
// Formatting for messages.
// ---------------------------------------------------------------------------------------------

fn format_shape(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn describe(dims: &[Dim], shape: &[usize]) -> String {
    format!(
        "dims {} and shape {}",
        format_dims(dims),
        format_shape(shape)
    )
}

fn describe_operand(index: usize, op: &Operand) -> String {
    match op {
        Operand::Field(f) => format!(
            "operand {index} (a Field with {})",
            describe(&f.dims, &f.shape)
        ),
        Operand::Array(shape) => format!(
            "operand {index} (an array of shape {})",
            format_shape(shape)
        ),
        Operand::Scalar => format!("operand {index} (a scalar)"),
    }
}

fn error(param: &str, value: String, expected: String) -> Error {
    Error::InvalidValue {
        param: param.into(),
        value,
        expected,
    }
}

fn check_halo(halo: &[(usize, usize)], shape: &[usize]) -> Result<()> {
    crate::metadata::check_halo(halo, shape, None, "halo")
}

// ---------------------------------------------------------------------------------------------
// Layouts.
// ---------------------------------------------------------------------------------------------

/// The layout map that byte strides follow: axes ranked from the largest absolute stride
/// (rank 0) to the smallest; equal strides keep index order.
pub fn layout_from_strides(strides: &[isize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..strides.len()).collect();
    order.sort_by_key(|&axis| std::cmp::Reverse(strides[axis].unsigned_abs()));
    let mut layout = vec![0; strides.len()];
    for (rank, axis) in order.into_iter().enumerate() {
        layout[axis] = rank;
    }
    layout
}

fn base_from_layout(layout: &[usize]) -> BaseLayout {
    let n = layout.len();
    if n > 1
        && layout
            .iter()
            .enumerate()
            .all(|(axis, &rank)| rank == n - 1 - axis)
    {
        BaseLayout::F
    } else {
        BaseLayout::C
    }
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
fn restrict_layout(layout: &[usize], keep: &[usize]) -> Vec<usize> {
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
fn lcm_of(alignments: impl IntoIterator<Item = usize>) -> Result<usize> {
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

// ---------------------------------------------------------------------------------------------
// Broadcasting.
// ---------------------------------------------------------------------------------------------

/// Dims and shape of the broadcast of the fields among `operands`, without `out`.
///
/// The dims are the fields' dims when they all agree (same names in the same order), else the
/// union in canonical order (`I`, `J`, `K`, then data dims by number). The length of a dim is
/// the one length other than 1 the fields give it (1 if none does).
pub fn broadcast_dims(operands: &[Operand]) -> Result<(Vec<Dim>, Vec<usize>)> {
    let fields: Vec<(usize, &FieldInfo)> = operands
        .iter()
        .enumerate()
        .filter_map(|(i, op)| match op {
            Operand::Field(f) => Some((i, f)),
            _ => None,
        })
        .collect();
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
) -> Result<Alignment> {
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
    Ok(Alignment {
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
) -> Result<Alignment> {
    let what = target.name();
    if shape_in.len() == shape.len() && shape_in.iter().zip(shape).all(|(&a, &n)| a == n || a == 1)
    {
        return Ok(Alignment::default());
    }
    if shape_in.len() == 3 {
        let as_field = FieldInfo::new(vec![Dim::I, Dim::J, Dim::K], shape_in.to_vec())?;
        if let Ok(a) = align_field(&as_field, dims, shape, index, op, target) {
            return Ok(a);
        }
    }
    if shape_in.len() <= shape.len() && shape_in.iter().all(|&n| n == 1) {
        return Ok(Alignment::default());
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
            Operand::Scalar => Ok(Alignment::default()),
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
pub fn assign(value: &Operand, dims: &[Dim], shape: &[usize]) -> Result<Alignment> {
    match value {
        Operand::Field(f) => align_field(f, dims, shape, 0, value, Target::Assignment),
        Operand::Array(a) => align_array(a, dims, shape, 0, value, Target::Assignment),
        Operand::Scalar => Ok(Alignment::default()),
    }
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
    let fields: Vec<(usize, &FieldInfo)> = operands
        .iter()
        .enumerate()
        .filter_map(|(i, op)| match op {
            Operand::Field(f) => Some((i, f)),
            _ => None,
        })
        .collect();
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

// ---------------------------------------------------------------------------------------------
// Axes: reductions, transpositions, concatenations.
// ---------------------------------------------------------------------------------------------

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
                let al = Alignment {
                    transpose: (!identity).then_some(perm),
                    reshape: None,
                };
                (al, info.shape.clone(), Some(info))
            }
            Operand::Array(shape) if shape.len() == dims.len() => {
                (Alignment::default(), shape.clone(), None)
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

/// The permutation that orders `f`'s axes as `dims`, if `f` has exactly those dims.
fn match_dims(f: &FieldInfo, dims: &[Dim]) -> Option<Vec<usize>> {
    if f.ndim() != dims.len() {
        return None;
    }
    dims.iter().map(|&d| f.axis_of(d)).collect()
}

fn permute(f: &FieldInfo, perm: &[usize]) -> FieldInfo {
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

// ---------------------------------------------------------------------------------------------
// Indexing.
// ---------------------------------------------------------------------------------------------

/// A slice resolved against an extent, as Python's `slice.indices`: (start, step, length).
pub fn resolve_slice(
    start: Option<isize>,
    stop: Option<isize>,
    step: Option<isize>,
    n: usize,
) -> Result<(isize, isize, usize)> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return Err(Error::invalid(
            "index",
            "slice step 0",
            "a slice step must not be zero",
        ));
    }
    let n = n as isize;
    let (lower, upper) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let clamp = |v: isize| {
        if v < 0 {
            v.saturating_add(n).max(lower)
        } else {
            v.min(upper)
        }
    };
    let start = start.map_or(if step > 0 { lower } else { upper }, clamp);
    let stop = stop.map_or(if step > 0 { upper } else { lower }, clamp);
    let len = if step > 0 && stop > start {
        (stop - start - 1) / step + 1
    } else if step < 0 && start > stop {
        (start - stop - 1) / (-step) + 1
    } else {
        0
    };
    Ok((start, step, len as usize))
}

/// Number of `i` in `0..m` with `start + i * step < bound`, for `step > 0`.
fn count_below(start: isize, step: isize, m: usize, bound: isize) -> usize {
    if bound <= start {
        0
    } else {
        let k = (bound - start + step - 1) / step;
        (k as usize).min(m)
    }
}

/// Number of `i` in `0..m` with `start - i * s >= bound`, for `s > 0`.
fn count_at_or_above(start: isize, s: isize, m: usize, bound: isize) -> usize {
    if start < bound {
        0
    } else {
        (((start - bound) / s + 1) as usize).min(m)
    }
}

/// Halo and origin of a slice view along one axis: the view elements before and after the
/// field's domain, in the view's order.
fn slice_domain(
    (start, step, m): (isize, isize, usize),
    n: usize,
    (lo, hi): (usize, usize),
    origin: usize,
) -> ((usize, usize), usize) {
    let (lo_i, end_i, origin_i) = (lo as isize, (n - hi) as isize, origin as isize);
    if step > 0 {
        let before = count_below(start, step, m, lo_i);
        let after = m - count_below(start, step, m, end_i);
        let halo = (before, after.min(m - before));
        let origin = if origin == lo {
            halo.0
        } else {
            count_below(start, step, m, origin_i)
        };
        (halo, origin)
    } else {
        let s = -step;
        let before = count_at_or_above(start, s, m, end_i);
        let after = m - count_at_or_above(start, s, m, lo_i);
        let halo = (before, after.min(m - before));
        (halo, halo.0)
    }
}

/// The dims, halo and origin of what `key` selects from a field with `dims`, `shape`, `halo`
/// and `origin` (basic indexing: an int drops its axis, a slice keeps it).
///
/// A `NewAxis` adds an axis of length 1 labelled with a new data dim, numbered after the data
/// dims the field has (a dim of length 1 counts as absent when broadcasting, so it changes no
/// result). An index NumPy rejects (too many indices, an int out of range, two ellipses) is an
/// error.
pub fn index(
    dims: &[Dim],
    shape: &[usize],
    halo: &[(usize, usize)],
    origin: &[usize],
    key: &[IndexItem],
) -> Result<Indexed> {
    let ndim = dims.len();
    if shape.len() != ndim || halo.len() != ndim || origin.len() != ndim {
        return Err(Error::invalid(
            "index",
            format_dims(dims),
            "dims, shape, halo and origin need one entry per axis",
        ));
    }
    if key.contains(&IndexItem::Advanced) {
        return Ok(Indexed::Advanced);
    }
    let n_ellipsis = key.iter().filter(|&&k| k == IndexItem::Ellipsis).count();
    let n_new = key.iter().filter(|&&k| k == IndexItem::NewAxis).count();
    let n_explicit = key.len() - n_ellipsis - n_new;
    if n_ellipsis > 1 || n_explicit > ndim {
        return Err(error(
            "index",
            format!("{key:?}"),
            format!(
                "the Field has {ndim} axes with dims {} and at most one ellipsis",
                format_dims(dims)
            ),
        ));
    }
    let full = IndexItem::Slice {
        start: None,
        stop: None,
        step: None,
    };
    let mut items: Vec<IndexItem> = Vec::with_capacity(ndim + n_new);
    for &k in key {
        if k == IndexItem::Ellipsis {
            items.extend(std::iter::repeat_n(full, ndim - n_explicit));
        } else {
            items.push(k);
        }
    }
    items.extend(std::iter::repeat_n(full, ndim + n_new - items.len()));
    let mut next_data = dims
        .iter()
        .filter_map(|d| match d {
            Dim::Data(n) => Some(n + 1),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let mut view = IndexedView {
        axes: Vec::new(),
        dims: Vec::new(),
        shape: Vec::new(),
        halo: Vec::new(),
        origin: Vec::new(),
    };
    let mut axis = 0;
    for item in items {
        if item == IndexItem::NewAxis {
            view.axes.push(None);
            view.dims.push(Dim::Data(next_data));
            next_data += 1;
            view.shape.push(1);
            view.halo.push((0, 0));
            view.origin.push(0);
            continue;
        }
        let n = shape[axis];
        match item {
            IndexItem::Int(i) => {
                let ok = if i < 0 {
                    i.unsigned_abs() <= n
                } else {
                    (i as usize) < n
                };
                if !ok {
                    return Err(error(
                        "index",
                        i.to_string(),
                        format!("axis {axis} (dim '{}') has length {n}", dims[axis]),
                    ));
                }
            }
            IndexItem::Slice { start, stop, step } => {
                let resolved = resolve_slice(start, stop, step, n)?;
                let (h, o) = slice_domain(resolved, n, halo[axis], origin[axis]);
                view.axes.push(Some(axis));
                view.dims.push(dims[axis]);
                view.shape.push(resolved.2);
                view.halo.push(h);
                view.origin.push(o);
            }
            IndexItem::Ellipsis | IndexItem::NewAxis | IndexItem::Advanced => unreachable!(),
        }
        axis += 1;
    }
    if view.axes.is_empty() {
        return Ok(Indexed::Element);
    }
    Ok(Indexed::View(view))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dims::parse_dims_str;

    fn field(dims: &str, shape: &[usize]) -> FieldInfo {
        FieldInfo::new(parse_dims_str(dims).unwrap(), shape.to_vec()).unwrap()
    }

    fn f(info: FieldInfo) -> Operand {
        Operand::Field(info)
    }

    fn d(s: &str) -> Vec<Dim> {
        parse_dims_str(s).unwrap()
    }

    #[test]
    fn issue_example_broadcasts_by_name() {
        let ifirst = BaseLayout::Semantic([2, 1, 0]);
        let t = field("IJK", &[64, 64, 80])
            .with_halo(vec![(3, 3), (3, 3), (0, 0)])
            .unwrap()
            .with_storage(vec![2, 1, 0], ifirst, 1, vec![3, 3, 0])
            .unwrap();
        let p = field("K", &[80]);
        let s = field("IJ", &[64, 64]);
        // p * s: K * IJ -> IJK (the dims disagree, so the union in canonical order).
        let ops = [f(p.clone()), f(s.clone())];
        let b = broadcast(&ops, None).unwrap();
        assert_eq!(
            (b.dims.clone(), b.shape.clone()),
            (d("IJK"), vec![64, 64, 80])
        );
        assert_eq!(b.operands[0].reshape, Some(vec![1, 1, 80]));
        assert_eq!(b.operands[1].reshape, Some(vec![64, 64, 1]));
        let ps = output_params(&ops, &b.dims, &b.shape).unwrap().unwrap();
        assert_eq!(ps.layout, vec![0, 1, 2]);
        // t + (p * s): laid out as t, with t's halo and aligned index.
        let ops = [f(t), f(FieldInfo::from(&ps))];
        let b = broadcast(&ops, None).unwrap();
        let out = output_params(&ops, &b.dims, &b.shape).unwrap().unwrap();
        assert_eq!(out.layout, vec![2, 1, 0]);
        assert_eq!(out.halo, vec![(3, 3), (3, 3), (0, 0)]);
        assert_eq!(out.aligned_index, vec![3, 3, 0]);
        assert!(b.operands.iter().all(Alignment::is_identity));
    }

    #[test]
    fn agreeing_dims_keep_their_order() {
        let ops = [f(field("KJI", &[2, 3, 4])), f(field("KJI", &[1, 3, 4]))];
        let b = broadcast(&ops, None).unwrap();
        assert_eq!(b.dims, d("KJI"));
        assert_eq!(b.shape, vec![2, 3, 4]);
        let ops = [f(field("KJI", &[2, 3, 4])), f(field("IJK", &[4, 3, 2]))];
        let b = broadcast(&ops, None).unwrap();
        assert_eq!(b.dims, d("IJK"));
        assert_eq!(b.operands[0].transpose, Some(vec![2, 1, 0]));
        assert!(b.operands[1].is_identity());
        // The layout of the first field is kept by name: K (its axis 0) has the largest stride
        // in C order, so it keeps it in the IJK result.
        let p = output_params(&ops, &b.dims, &b.shape).unwrap().unwrap();
        assert_eq!(stride_order(&p.dims, &p.layout), d("KJI"));
    }

    #[test]
    fn length_one_counts_as_absent() {
        let ops = [f(field("IJK", &[4, 5, 1])), f(field("K", &[6]))];
        let b = broadcast(&ops, None).unwrap();
        assert_eq!(b.shape, vec![4, 5, 6]);
        // A dim of length 1 nobody else has stays with length 1.
        let ops = [f(field("IJK", &[4, 5, 1])), f(field("IJ", &[4, 5]))];
        assert_eq!(broadcast(&ops, None).unwrap().shape, vec![4, 5, 1]);
        // And drops out when lined up with an out= that lacks it.
        let out = f(field("IJ", &[4, 5]));
        let b = broadcast(&[f(field("IJK", &[4, 5, 1]))], Some(&out)).unwrap();
        assert_eq!(b.operands[0].reshape, Some(vec![4, 5]));
    }

    #[test]
    fn mismatched_lengths_name_both_operands() {
        let ops = [f(field("IJK", &[4, 5, 6])), f(field("K", &[7]))];
        let msg = broadcast(&ops, None).unwrap_err().to_string();
        for part in ["('I', 'J', 'K')", "(4, 5, 6)", "('K',)", "(7,)", "'K'"] {
            assert!(msg.contains(part), "{msg}");
        }
    }

    #[test]
    fn plain_arrays() {
        let t = f(field("IJK", &[4, 5, 6]));
        let ok = |shape: &[usize]| broadcast(&[t.clone(), Operand::Array(shape.to_vec())], None);
        assert!(ok(&[4, 5, 6]).unwrap().operands[1].is_identity());
        assert!(ok(&[4, 1, 6]).is_ok());
        assert!(ok(&[1]).is_ok());
        assert!(ok(&[6]).is_err());
        assert!(ok(&[4, 5]).is_err());
        // 3-D arrays are read as IJK when the result is not 3-D.
        let ij = f(field("JI", &[5, 4]));
        let b = broadcast(&[ij.clone(), Operand::Array(vec![4, 5, 1])], None).unwrap();
        assert_eq!(b.operands[1].transpose, Some(vec![1, 0, 2]));
        assert_eq!(b.operands[1].reshape, Some(vec![5, 4]));
        assert!(broadcast(&[ij, Operand::Array(vec![4, 5, 3])], None).is_err());
        let msg = ok(&[6]).unwrap_err().to_string();
        assert!(
            msg.contains("(6,)") && msg.contains("('I', 'J', 'K')"),
            "{msg}"
        );
    }

    #[test]
    fn out_fields() {
        let out = f(field("IJK", &[4, 5, 6]));
        let b = broadcast(&[f(field("JI", &[5, 4]))], Some(&out)).unwrap();
        assert_eq!(b.operands[0].transpose, Some(vec![1, 0]));
        assert_eq!(b.operands[0].reshape, Some(vec![4, 5, 1]));
        let small = f(field("IJ", &[4, 5]));
        let msg = broadcast(&[f(field("IJK", &[4, 5, 6]))], Some(&small))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("fewer dims") && msg.contains("'K'"), "{msg}");
        let plain = Operand::Array(vec![4, 5]);
        assert!(broadcast(&[f(field("IJ", &[4, 5]))], Some(&plain)).is_ok());
        assert!(broadcast(
            &[f(field("IJ", &[4, 5]))],
            Some(&Operand::Array(vec![5, 4]))
        )
        .is_err());
    }

    #[test]
    fn assignments_broadcast_into_the_target() {
        let a = assign(&f(field("K", &[6])), &d("IJK"), &[4, 5, 6]).unwrap();
        assert_eq!(a.reshape, Some(vec![1, 1, 6]));
        let msg = assign(&f(field("K", &[6])), &d("IJ"), &[4, 5])
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("invalid value") && msg.contains("'K'") && msg.contains("('I', 'J')"),
            "{msg}"
        );
        assert!(assign(&Operand::Array(vec![4, 5]), &d("IJ"), &[4, 5])
            .unwrap()
            .is_identity());
        assert!(assign(&Operand::Scalar, &d("IJ"), &[4, 5])
            .unwrap()
            .is_identity());
    }

    #[test]
    fn output_parameters_follow_gdp3() {
        let a = field("IJK", &[10, 10, 5])
            .with_halo(vec![(2, 1), (0, 0), (0, 0)])
            .unwrap()
            .with_storage(vec![0, 1, 2], BaseLayout::C, 16, vec![4, 0, 0])
            .unwrap();
        let b = field("IJ", &[10, 10])
            .with_halo(vec![(1, 3), (2, 2)])
            .unwrap()
            .with_storage(vec![1, 0], BaseLayout::F, 32, vec![1, 2])
            .unwrap();
        let ops = [f(a), f(b)];
        let bc = broadcast(&ops, None).unwrap();
        let p = output_params(&ops, &bc.dims, &bc.shape).unwrap().unwrap();
        assert_eq!(p.alignment, 32);
        assert_eq!(p.aligned_index, vec![4, 2, 0]);
        assert_eq!(p.halo, vec![(2, 3), (2, 2), (0, 0)]);
        assert_eq!(p.layout, vec![0, 1, 2]);
        assert_eq!(p.source, 0);
        // Disjoint domains give an empty domain at the largest lower halo.
        let x = field("I", &[10]).with_halo(vec![(6, 0)]).unwrap();
        let y = field("I", &[10]).with_halo(vec![(0, 6)]).unwrap();
        let ops = [f(x), f(y)];
        let p = output_params(&ops, &d("I"), &[10]).unwrap().unwrap();
        assert_eq!(p.halo, vec![(6, 4)]);
        assert_eq!(lcm_of([4, 6]).unwrap(), 12);
    }

    #[test]
    fn inherited_layout_places_missing_dims_by_the_base() {
        // A K field of a semantic preset places I and J as its preset would.
        let k = field("K", &[6])
            .with_storage(vec![0], BaseLayout::Semantic([2, 1, 0]), 1, vec![0])
            .unwrap();
        assert_eq!(inherit_layout(&k, &d("IJK"))[..], [2, 1, 0]);
        // An explicit layout keeps its own order for its dims.
        let ik = field("IK", &[4, 6])
            .with_storage(vec![1, 0], BaseLayout::C, 1, vec![0, 0])
            .unwrap();
        assert_eq!(
            stride_order(&d("IJK"), &inherit_layout(&ik, &d("IJK"))),
            d("KJI")
        );
        // Fortran-ordered strides give a Fortran base.
        let fo = field("IJ", &[4, 5]).with_strides(&[8, 32]).unwrap();
        assert_eq!(fo.base, BaseLayout::F);
        assert_eq!(inherit_layout(&fo, &d("IJK"))[..], [2, 1, 0]);
    }

    #[test]
    fn reductions_drop_dims() {
        let t = field("IJK", &[4, 5, 6])
            .with_halo(vec![(1, 1), (2, 2), (0, 0)])
            .unwrap()
            .with_storage(
                vec![2, 1, 0],
                BaseLayout::Semantic([2, 1, 0]),
                8,
                vec![1, 2, 0],
            )
            .unwrap();
        let r = reduce(&t, Some(&[AxisRef::Index(2)]), false).unwrap();
        assert_eq!(r.axes, vec![2]);
        assert_eq!(r.params.dims, d("IJ"));
        assert_eq!(r.params.layout, vec![1, 0]);
        assert_eq!(r.params.halo, vec![(1, 1), (2, 2)]);
        let r = reduce(&t, Some(&[AxisRef::Name(Dim::I)]), true).unwrap();
        assert_eq!(r.params.shape, vec![1, 5, 6]);
        assert_eq!(r.params.halo[0], (0, 0));
        let r = reduce(&t, None, false).unwrap();
        assert!(r.params.dims.is_empty());
        let msg = reduce(&t, Some(&[AxisRef::Index(3)]), false)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("('I', 'J', 'K')"), "{msg}");
        assert!(reduce(&t, Some(&[AxisRef::Name(Dim::Data(0))]), false).is_err());
        assert!(reduce(
            &t,
            Some(&[AxisRef::Index(-1), AxisRef::Name(Dim::K)]),
            false
        )
        .is_err());
    }

    #[test]
    fn transpositions() {
        let dims = d("IJK");
        let names = [
            AxisRef::Name(Dim::K),
            AxisRef::Name(Dim::J),
            AxisRef::Name(Dim::I),
        ];
        assert_eq!(transpose_axes(&dims, &names).unwrap(), vec![2, 1, 0]);
        assert_eq!(transpose_axes(&dims, &[]).unwrap(), vec![2, 1, 0]);
        let msg = transpose_axes(
            &dims,
            &[
                AxisRef::Name(Dim::K),
                AxisRef::Name(Dim::Data(0)),
                AxisRef::Name(Dim::I),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(
            msg.contains("'0'") && msg.contains("('I', 'J', 'K')"),
            "{msg}"
        );
        assert!(transpose_axes(&dims, &names[..2]).is_err());
    }

    #[test]
    fn concatenation_along_a_named_dim() {
        let a = field("IJK", &[4, 5, 6])
            .with_halo(vec![(1, 1), (0, 0), (2, 0)])
            .unwrap();
        let b = field("KJI", &[3, 5, 4])
            .with_halo(vec![(0, 1), (0, 0), (1, 1)])
            .unwrap();
        let c = concatenate(&[f(a), f(b)], AxisRef::Name(Dim::K)).unwrap();
        assert_eq!(c.axis, 2);
        assert_eq!(c.params.shape, vec![4, 5, 9]);
        assert_eq!(c.operands[1].transpose, Some(vec![2, 1, 0]));
        assert_eq!(c.params.halo, vec![(1, 1), (0, 0), (2, 1)]);
        let bad = concatenate(
            &[f(field("IJ", &[4, 5])), f(field("IJ", &[3, 6]))],
            AxisRef::Index(0),
        );
        assert!(bad.unwrap_err().to_string().contains("'J'"));
        assert!(concatenate(
            &[f(field("IJ", &[4, 5])), f(field("IK", &[3, 5]))],
            AxisRef::Index(0)
        )
        .is_err());
    }

    #[test]
    fn index_to_dims() {
        let dims = d("IJK");
        let shape = [10, 8, 6];
        let halo = [(3, 3), (2, 2), (0, 0)];
        let origin = [3, 2, 0];
        let full = IndexItem::Slice {
            start: None,
            stop: None,
            step: None,
        };
        let r = index(
            &dims,
            &shape,
            &halo,
            &origin,
            &[IndexItem::Int(5), IndexItem::Int(7), full],
        )
        .unwrap();
        let Indexed::View(v) = r else { panic!() };
        assert_eq!((v.dims, v.shape, v.axes), (d("K"), vec![6], vec![Some(2)]));
        let r = index(
            &dims,
            &shape,
            &halo,
            &origin,
            &[IndexItem::Ellipsis, IndexItem::Int(0)],
        )
        .unwrap();
        let Indexed::View(v) = r else { panic!() };
        assert_eq!(v.dims, d("IJ"));
        assert_eq!(v.halo, vec![(3, 3), (2, 2)]);
        let sl = IndexItem::Slice {
            start: Some(2),
            stop: Some(-2),
            step: None,
        };
        let Indexed::View(v) = index(&dims, &shape, &halo, &origin, &[sl]).unwrap() else {
            panic!()
        };
        assert_eq!((v.shape[0], v.halo[0], v.origin[0]), (6, (1, 1), 1));
        let rev = IndexItem::Slice {
            start: None,
            stop: None,
            step: Some(-1),
        };
        let Indexed::View(v) =
            index(&dims, &shape, &[(1, 3), (0, 0), (0, 0)], &origin, &[rev]).unwrap()
        else {
            panic!()
        };
        assert_eq!(v.halo[0], (3, 1));
        let ints = [IndexItem::Int(0), IndexItem::Int(0), IndexItem::Int(-6)];
        assert_eq!(
            index(&dims, &shape, &halo, &origin, &ints).unwrap(),
            Indexed::Element
        );
        assert_eq!(
            index(&dims, &shape, &halo, &origin, &[IndexItem::Advanced]).unwrap(),
            Indexed::Advanced
        );
        let new = [
            IndexItem::NewAxis,
            IndexItem::Int(1),
            IndexItem::Ellipsis,
            IndexItem::NewAxis,
        ];
        let Indexed::View(v) = index(&dims, &shape, &halo, &origin, &new).unwrap() else {
            panic!()
        };
        assert_eq!(v.dims, vec![Dim::Data(0), Dim::J, Dim::K, Dim::Data(1)]);
        assert_eq!((v.shape, v.axes[0]), (vec![1, 8, 6, 1], None));
        assert!(index(&dims, &shape, &halo, &origin, &[IndexItem::Int(10)]).is_err());
        assert!(index(&dims, &shape, &halo, &origin, &[full, full, full, full]).is_err());
    }

    #[test]
    fn slices_resolve_as_python() {
        assert_eq!(resolve_slice(None, None, None, 5).unwrap(), (0, 1, 5));
        assert_eq!(resolve_slice(Some(-2), None, None, 5).unwrap(), (3, 1, 2));
        assert_eq!(resolve_slice(None, None, Some(-2), 5).unwrap(), (4, -2, 3));
        assert_eq!(
            resolve_slice(Some(10), Some(-10), Some(-1), 5).unwrap(),
            (4, -1, 5)
        );
        assert_eq!(
            resolve_slice(Some(isize::MIN), Some(isize::MAX), Some(3), 7).unwrap(),
            (0, 3, 3)
        );
        assert!(resolve_slice(None, None, Some(0), 5).is_err());
    }
}
