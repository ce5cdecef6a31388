//! Private helpers of the `Field` wrapper: thin wrappers over `gridbuf::arrays::labelled` that take and
//! return plain tuples, so that the Python side can cache their answers per combination of
//! dims, shapes and storage parameters.
//!
//! A Field is described by a [`FieldDescriptor`] and a result's parameters come back as
//! [`OutputParams`] (both in `field_descriptor`). An operand is a descriptor, a tuple of ints
//! (the shape of a plain array) or `None` (a scalar).

use crate::convert;
use crate::errors::IntoPyResult;
use crate::field_descriptor::{
    dims_arg, halo_arg, FieldDescriptor, OutputParams as PyOutputParams,
};
use gridbuf::arrays::labelled::{
    self, Alignment, AxisRef, IndexItem, Indexed, Operand, OutputParams,
};
use gridbuf::geometry::dims::default_dims;
use gridbuf::Dim;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyEllipsis, PyInt, PySlice, PyString, PyTuple};

/// An operand: a field descriptor, the shape of a plain array, or `None` for a scalar.
fn operand(obj: &Bound<'_, PyAny>) -> PyResult<(Operand, Option<String>)> {
    if obj.is_none() {
        return Ok((Operand::Scalar, None));
    }
    if let Ok(d) = obj.cast::<FieldDescriptor>() {
        let d = d.get().describe(obj.py())?;
        return Ok((Operand::Field(d.info), Some(d.backend)));
    }
    let shape = convert::usize_seq(obj, "shape")?;
    Ok((
        if shape.is_empty() {
            Operand::Scalar
        } else {
            Operand::Array(shape.into_vec())
        },
        None,
    ))
}

fn operands(seq: &Bound<'_, PyAny>) -> PyResult<(Vec<Operand>, Vec<Option<String>>)> {
    let mut ops = Vec::new();
    let mut backends = Vec::new();
    for item in seq.try_iter()? {
        let (op, backend) = operand(&item?)?;
        ops.push(op);
        backends.push(backend);
    }
    Ok((ops, backends))
}

fn dims_tuple<'py>(py: Python<'py>, dims: &[Dim]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, dims.iter().map(|d| d.to_string()))
}

fn alignment_tuple<'py>(py: Python<'py>, a: &Alignment) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        [
            a.transpose
                .as_ref()
                .map(|v| PyTuple::new(py, v).map(Bound::into_any))
                .transpose()?,
            a.reshape
                .as_ref()
                .map(|v| PyTuple::new(py, v).map(Bound::into_any))
                .transpose()?,
        ],
    )
}

fn axis_ref(obj: &Bound<'_, PyAny>) -> PyResult<AxisRef> {
    if let Ok(s) = obj.cast::<PyString>() {
        let name = s.to_str()?;
        return Dim::parse(name).map(AxisRef::Name).map_err(|_| {
            convert::value_error(
                "axis",
                obj,
                "expected an int or a dim name such as \"I\", \"J\", \"K\" or \"0\"",
            )
        });
    }
    if obj.is_instance_of::<PyBool>() {
        return Err(convert::type_error(
            "axis",
            obj,
            "expected an int or a dim name",
        ));
    }
    obj.extract::<isize>()
        .map(AxisRef::Index)
        .map_err(|_| convert::type_error("axis", obj, "expected an int or a dim name"))
}

/// `None` (every axis), one axis, or a tuple/list of axes.
fn axis_refs(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<AxisRef>>> {
    if obj.is_none() {
        return Ok(None);
    }
    if obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyInt>()
        || obj.hasattr("__index__")?
    {
        return Ok(Some(vec![axis_ref(obj)?]));
    }
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        out.push(axis_ref(&item?)?);
    }
    Ok(Some(out))
}

/// Keywords for `gridbuf.empty` that reproduce `p` under the preset `backend`, leaving out
/// every one that equals its default (each keyword costs time to parse).
fn empty_kwargs<'py>(
    py: Python<'py>,
    backend: &str,
    p: &OutputParams,
) -> PyResult<Bound<'py, PyDict>> {
    let preset = gridbuf::allocation::preset::lookup(backend, "backend").py(py)?;
    let kw = PyDict::new(py);
    if backend != "C" {
        kw.set_item("backend", backend)?;
    }
    if p.dims[..] != default_dims(p.dims.len())[..] {
        if p.dims.iter().all(|d| d.to_string().len() == 1) {
            kw.set_item(
                "dims",
                p.dims.iter().map(Dim::to_string).collect::<String>(),
            )?;
        } else {
            kw.set_item("dims", dims_tuple(py, &p.dims)?)?;
        }
    }
    if p.layout[..] != preset.layout_map(&p.dims)[..] {
        kw.set_item("layout", PyTuple::new(py, &p.layout)?)?;
    }
    if p.alignment != preset.alignment {
        kw.set_item("alignment", p.alignment)?;
    }
    if p.halo.iter().any(|&(lo, hi)| lo != 0 || hi != 0) {
        let items: Vec<Bound<'py, PyAny>> = p
            .halo
            .iter()
            .map(|&(lo, hi)| {
                if lo == hi {
                    Ok(lo.into_pyobject(py)?.into_any())
                } else {
                    PyTuple::new(py, [lo, hi]).map(Bound::into_any)
                }
            })
            .collect::<PyResult<_>>()?;
        kw.set_item("halo", PyTuple::new(py, items)?)?;
    }
    if p.aligned_index
        .iter()
        .zip(&p.halo)
        .any(|(&i, &(lo, _))| i != lo)
    {
        kw.set_item("aligned_index", PyTuple::new(py, &p.aligned_index)?)?;
    }
    Ok(kw)
}

/// The result parameters `p` under the preset `backend`, with their `gridbuf.empty` keywords.
fn output_params<'py>(
    py: Python<'py>,
    p: &OutputParams,
    backend: &str,
) -> PyResult<Bound<'py, PyOutputParams>> {
    let kwargs = empty_kwargs(py, backend, p)?;
    Bound::new(py, PyOutputParams::new(py, p, backend, kwargs)?)
}

/// Broadcast operands by dims name and infer the parameters of the result.
///
/// Returns `(dims, shape, alignments, params)`: the result's dims and shape, per operand a
/// `(transpose, reshape)` pair (each `None` when not needed), and, when `out` is `None`, the
/// parameters of the result (an `OutputParams`), else `None`. The last `masks` operands
/// (`where=`) take part in the broadcast but not in the parameters.
#[pyfunction]
#[pyo3(signature = (operands, out=None, masks=0))]
pub fn _broadcast<'py>(
    py: Python<'py>,
    operands: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    masks: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let (ops, backends) = self::operands(operands)?;
    let out = out.filter(|o| !o.is_none()).map(operand).transpose()?;
    let b = labelled::broadcast(&ops, out.as_ref().map(|(o, _)| o)).py(py)?;
    let params = if out.is_none() {
        // Masks (`where=`) broadcast like operands but give no parameters, unless no other
        // operand is a field.
        let inputs = &ops[..ops.len().saturating_sub(masks)];
        let params = match labelled::output_params(inputs, &b.dims, &b.shape).py(py)? {
            Some(p) => Some(p),
            None => labelled::output_params(&ops, &b.dims, &b.shape).py(py)?,
        };
        match params {
            Some(p) => {
                let backend = backends[p.source].as_deref().unwrap_or("C");
                output_params(py, &p, backend)?.into_any()
            }
            None => py.None().into_bound(py),
        }
    } else {
        py.None().into_bound(py)
    };
    let aligned = b
        .operands
        .iter()
        .map(|a| alignment_tuple(py, a))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(
        py,
        [
            dims_tuple(py, &b.dims)?.into_any(),
            PyTuple::new(py, &b.shape)?.into_any(),
            PyTuple::new(py, aligned)?.into_any(),
            params,
        ],
    )
}

/// How to line the value of an assignment up with the part of a field it writes, which has
/// `dims` and `shape`: a `(transpose, reshape)` pair.
#[pyfunction]
pub fn _assign<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    dims: &Bound<'py, PyAny>,
    shape: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (value, _) = operand(value)?;
    let dims = dims_arg(dims)?;
    let shape = convert::usize_seq(shape, "shape")?;
    alignment_tuple(py, &labelled::assign(&value, &dims, &shape).py(py)?)
}

/// The axes a reduction reduces and the parameters of its result.
///
/// Returns `(axes, params)` with `axes` a tuple of positions.
#[pyfunction]
#[pyo3(signature = (field, axis=None, keepdims=false))]
pub fn _reduce<'py>(
    py: Python<'py>,
    field: &Bound<'py, FieldDescriptor>,
    axis: Option<&Bound<'py, PyAny>>,
    keepdims: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let d = field.get().describe(py)?;
    let axes = match axis {
        Some(a) => axis_refs(a)?,
        None => None,
    };
    let r = labelled::reduce(&d.info, axes.as_deref(), keepdims).py(py)?;
    PyTuple::new(
        py,
        [
            PyTuple::new(py, &r.axes)?.into_any(),
            output_params(py, &r.params, &d.backend)?.into_any(),
        ],
    )
}

/// The axis, per-operand alignments and result parameters of a concatenation along a dim.
///
/// Returns `(axis, alignments, params)`.
#[pyfunction]
pub fn _concatenate<'py>(
    py: Python<'py>,
    operands: &Bound<'py, PyAny>,
    axis: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (ops, backends) = self::operands(operands)?;
    let c = labelled::concatenate(&ops, axis_ref(axis)?).py(py)?;
    let backend = backends[c.params.source].as_deref().unwrap_or("C");
    let aligned = c
        .operands
        .iter()
        .map(|a| alignment_tuple(py, a))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(
        py,
        [
            c.axis.into_pyobject(py)?.into_any(),
            PyTuple::new(py, aligned)?.into_any(),
            output_params(py, &c.params, backend)?.into_any(),
        ],
    )
}

/// The axis permutation of a transposition by dim names or positions (none: reversed).
#[pyfunction]
pub fn _transpose_axes<'py>(
    py: Python<'py>,
    dims: &Bound<'py, PyAny>,
    axes: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let dims = dims_arg(dims)?;
    let axes = axis_refs(axes)?.unwrap_or_default();
    PyTuple::new(py, labelled::transpose_axes(&dims, &axes).py(py)?)
}

/// The position of one axis (an int or a dim name) among `dims`.
#[pyfunction]
pub fn _resolve_axis(
    py: Python<'_>,
    dims: &Bound<'_, PyAny>,
    axis: &Bound<'_, PyAny>,
) -> PyResult<usize> {
    let dims = dims_arg(dims)?;
    labelled::resolve_axis(&dims, axis_ref(axis)?, "axis").py(py)
}

/// The permutation that lines an `out=` field up with a result of `dims` and `shape`.
#[pyfunction]
pub fn _match_out<'py>(
    py: Python<'py>,
    out: &Bound<'py, FieldDescriptor>,
    dims: &Bound<'py, PyAny>,
    shape: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let o = out.get().describe(py)?;
    let dims = dims_arg(dims)?;
    let shape = convert::usize_seq(shape, "shape")?;
    PyTuple::new(py, labelled::match_out(&o.info, &dims, &shape).py(py)?)
}

/// An index bound, clamped to `isize` (Python ints may be larger; the clamp resolves alike).
fn bound(obj: Bound<'_, PyAny>) -> PyResult<Option<isize>> {
    if obj.is_none() {
        return Ok(None);
    }
    match obj.extract::<isize>() {
        Ok(v) => Ok(Some(v)),
        Err(_) => {
            let index = obj.call_method0("__index__")?;
            Ok(Some(if index.lt(0)? { isize::MIN } else { isize::MAX }))
        }
    }
}

fn index_item(obj: &Bound<'_, PyAny>) -> PyResult<IndexItem> {
    if obj.is_none() {
        return Ok(IndexItem::NewAxis);
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(IndexItem::Ellipsis);
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        return Ok(IndexItem::Slice {
            start: bound(s.getattr("start")?)?,
            stop: bound(s.getattr("stop")?)?,
            step: bound(s.getattr("step")?)?,
        });
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(IndexItem::Advanced);
    }
    if obj.is_instance_of::<PyInt>() || (obj.hasattr("__index__")? && !obj.hasattr("shape")?) {
        return Ok(match bound(obj.clone())? {
            Some(v) => IndexItem::Int(v),
            None => IndexItem::Advanced,
        });
    }
    if let Ok(shape) = obj.getattr("shape") {
        // A 0-d integer array indexes like an int.
        if shape.cast::<PyTuple>().is_ok_and(|t| t.is_empty()) && obj.hasattr("__index__")? {
            return Ok(IndexItem::Int(
                bound(obj.call_method0("__index__")?)?.unwrap_or(0),
            ));
        }
    }
    Ok(IndexItem::Advanced)
}

/// The dims, halo and origin of the view `key` selects (basic indexing).
///
/// Returns `None` for advanced indexing and for a single element, else
/// `(dims, halo, origin)`.
#[pyfunction]
pub fn _index<'py>(
    py: Python<'py>,
    dims: &Bound<'py, PyAny>,
    shape: &Bound<'py, PyAny>,
    halo: &Bound<'py, PyAny>,
    origin: &Bound<'py, PyAny>,
    key: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let dims = dims_arg(dims)?;
    let shape = convert::usize_seq(shape, "shape")?;
    let halo = halo_arg(halo)?;
    let origin = convert::usize_seq(origin, "origin")?;
    let items: Vec<IndexItem> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().map(|k| index_item(&k)).collect::<PyResult<_>>()?,
        Err(_) => vec![index_item(key)?],
    };
    match labelled::index(&dims, &shape, &halo, &origin, &items).py(py)? {
        Indexed::View(v) => Ok(Some(PyTuple::new(
            py,
            [
                dims_tuple(py, &v.dims)?.into_any(),
                PyTuple::new(py, v.halo.iter().copied())?.into_any(),
                PyTuple::new(py, &v.origin)?.into_any(),
            ],
        )?)),
        Indexed::Element | Indexed::Advanced => Ok(None),
    }
}
