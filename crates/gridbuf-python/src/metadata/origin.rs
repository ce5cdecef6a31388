//! Origins: an origin argument or `__gt_origin__`, checked against a shape.

use super::entry::{repr, shape_of};
use crate::errors::{to_py, IntoPyResult};
use crate::pyobj::lookup;
use gridbuf::Error;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyTuple};

/// An origin given as a sequence of ints, checked by the core rule against `shape`.
pub(crate) fn origin_from(
    origin: &Bound<'_, PyAny>,
    shape: Option<&[usize]>,
    source: &str,
) -> PyResult<Vec<usize>> {
    let py = origin.py();
    let not_ints = || to_py(py, Error::origin_not_ints(source, repr(origin)));
    let iter = origin.try_iter().map_err(|_| not_ints())?;
    let mut values = Vec::new();
    for v in iter {
        let v = v?;
        if v.is_instance_of::<PyBool>() {
            return Err(not_ints());
        }
        values.push(v.extract::<i64>().map_err(|_| not_ints())?);
    }
    match shape {
        Some(shape) => gridbuf::geometry::origin::validate(&values, shape, source),
        None => gridbuf::geometry::origin::validate_unbounded(&values, source),
    }
    .map(|o| o.into_vec())
    .py(py)
}

/// The ``__gt_origin__`` `obj` declares, checked against `shape`; `None` when it has none.
pub(crate) fn origin_of(
    obj: &Bound<'_, PyAny>,
    shape: Option<&[usize]>,
) -> PyResult<Option<Vec<usize>>> {
    match lookup(obj, intern!(obj.py(), "__gt_origin__"))? {
        Some(origin) => origin_from(&origin, shape, "__gt_origin__").map(Some),
        None => Ok(None),
    }
}

/// Validate an origin: one int per axis, each between 0 and the axis extent.
///
/// Parameters
/// ----------
/// origin : sequence of int
///     The origin.
/// shape : sequence of int or None
///     The extents it must lie in; None only checks that no entry is negative.
/// source : str
///     What the origin came from, named in messages.
///
/// Returns
/// -------
/// tuple of int
#[pyfunction]
#[pyo3(signature = (origin, shape, source))]
pub fn normalize_origin<'py>(
    origin: &Bound<'py, PyAny>,
    shape: Option<Vec<usize>>,
    source: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(origin.py(), origin_from(origin, shape.as_deref(), source)?)
}

/// The ``__gt_origin__`` of an array as a tuple of ints, validated against its shape.
///
/// Parameters
/// ----------
/// obj : array_like
///     Any array gridbuf understands.
///
/// Returns
/// -------
/// tuple of int or None
///     The origin, or None when the array does not declare one.
///
/// Raises
/// ------
/// GridbufTypeError
///     The origin is not a sequence of ints.
/// GridbufValueError
///     Wrong length, negative, or beyond the shape.
#[pyfunction]
pub fn get_origin<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Some(origin) = lookup(obj, intern!(obj.py(), "__gt_origin__"))? else {
        return Ok(None);
    };
    let shape = shape_of(obj)?;
    normalize_origin(&origin, shape, "__gt_origin__").map(Some)
}
