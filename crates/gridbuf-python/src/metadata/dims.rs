//! Dims: read from a dims argument, `__gt_dims__`, a data interface or an xarray `DataArray`.

use super::entry::{data_entry, entry_get, repr, shape_of};
use crate::convert::dims_from;
use crate::errors::{to_py, IntoPyResult};
use crate::pyobj::{is_dataarray, lookup};
use gridbuf::geometry::dims::Dim;
use gridbuf::Error;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

/// Dims as the tuple of names Python sees.
pub(crate) fn dims_tuple<'py>(py: Python<'py>, dims: &[Dim]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        dims.iter().map(|d| match d {
            Dim::I => intern!(py, "I").clone(),
            Dim::J => intern!(py, "J").clone(),
            Dim::K => intern!(py, "K").clone(),
            Dim::Data(_) => PyString::new(py, &d.to_string()),
        }),
    )
}

/// Validate dims given as a string (one character per axis) or a sequence of names.
///
/// Parameters
/// ----------
/// dims : str or sequence
///     ``"KJI"``, ``("I", "J", "0")``, or objects with ``__gt_axis_name__`` or ``.value``.
/// ndim : int or None
///     Number of axes the dims must name; None skips the check.
/// source : str
///     What the dims came from, named in messages.
///
/// Returns
/// -------
/// tuple of str
///     The validated names.
#[pyfunction]
#[pyo3(signature = (dims, ndim, source))]
pub fn normalize_dims<'py>(
    dims: &Bound<'py, PyAny>,
    ndim: Option<usize>,
    source: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    dims_tuple(dims.py(), &dims_from(dims, ndim, source)?)
}

/// The default dims of an array with `ndim` axes: ``"IJK"[:ndim]``, then data dims.
#[pyfunction]
pub fn default_dims(py: Python<'_>, ndim: usize) -> PyResult<Bound<'_, PyTuple>> {
    dims_tuple(py, &gridbuf::geometry::dims::default_dims(ndim))
}

/// Whether every name is a gt dim name (`I`, `J`, `K` or a decimal string).
pub(crate) fn all_gt_names(names: &[String]) -> bool {
    names.iter().all(|n| Dim::parse(n).is_ok())
}

/// The names of an xarray object's `.dims` as strings.
pub(crate) fn xarray_dim_names(obj: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    obj.getattr(intern!(obj.py(), "dims"))?
        .try_iter()?
        .map(|d| Ok(d?.str()?.to_str()?.to_owned()))
        .collect()
}

/// The gt dims an xarray `DataArray` is labelled with (its `.dims`, when they are gt names).
pub(crate) fn dataarray_own_dims(da: &Bound<'_, PyAny>) -> PyResult<Option<Vec<Dim>>> {
    let names = xarray_dim_names(da)?;
    let ndim: usize = da.getattr(intern!(da.py(), "ndim"))?.extract()?;
    // A DataArray labelled with other names (lat, lon, ...) declares no gt dims.
    Ok(
        gridbuf::geometry::dims::parse_names(&names, Some(ndim), "DataArray.dims")
            .ok()
            .map(|d| d.into_vec()),
    )
}

/// Checks that the dims a DataArray's data declares (if any) are the DataArray's own.
pub(crate) fn check_dataarray_dims(
    py: Python<'_>,
    dims: &[Dim],
    inner: Option<&[Dim]>,
) -> PyResult<()> {
    match inner {
        Some(inner) if inner != dims => Err(to_py(
            py,
            Error::dataarray_dims_differ(
                repr(&dims_tuple(py, dims)?),
                &repr(&dims_tuple(py, inner)?),
            ),
        )),
        _ => Ok(()),
    }
}

/// The gt dims of an xarray `DataArray` (its `.dims`, when they are gt names), checked against
/// the dims its data declares; what its `__gt_dims__` accessor reports.
pub(crate) fn dataarray_dims(da: &Bound<'_, PyAny>) -> PyResult<Option<Vec<Dim>>> {
    let Some(dims) = dataarray_own_dims(da)? else {
        return Ok(None);
    };
    let data = da.getattr(intern!(da.py(), "data"))?;
    let ndim = shape_of(&data)?.map(|s| s.len());
    check_dataarray_dims(da.py(), &dims, dims_of(&data, ndim)?.as_deref())?;
    Ok(Some(dims))
}

/// The dims `obj` declares, in index order, checked against `ndim`: its `__gt_dims__`, the
/// `"dims"` of its data interface, or (xarray objects) its `.dims` when they are gt names.
pub(crate) fn dims_of(obj: &Bound<'_, PyAny>, ndim: Option<usize>) -> PyResult<Option<Vec<Dim>>> {
    let py = obj.py();
    if is_dataarray(obj)? {
        return dataarray_dims(obj);
    }
    if let Some(dims) = lookup(obj, intern!(py, "__gt_dims__"))? {
        return dims_from(&dims, ndim, "__gt_dims__").map(Some);
    }
    if let Some(entry) = data_entry(obj)? {
        if let Some(dims) = entry_get(&entry, intern!(py, "dims"))? {
            return dims_from(&dims, ndim, "__gt_data_interface__ dims").map(Some);
        }
    }
    let module = obj.get_type().module()?;
    if module.to_str()?.starts_with("xarray.") && obj.hasattr(intern!(py, "dims"))? {
        let names = xarray_dim_names(obj)?;
        if all_gt_names(&names) {
            return gridbuf::geometry::dims::parse_names(&names, ndim, "DataArray.dims")
                .py(py)
                .map(|d| Some(d.into_vec()));
        }
    }
    Ok(None)
}

/// The semantic dims of an array, in index order.
///
/// Looks, in order, at ``obj.__gt_dims__``, the ``"dims"`` of its data interface, the ``.dims``
/// of an xarray DataArray, and the dims of ``annotation`` (a ``gridbuf.Field[...]`` annotation,
/// an object with ``.dims``, a string or a sequence of names).
///
/// Parameters
/// ----------
/// obj : array_like
///     Any array gridbuf understands.
/// annotation : optional
///     Fallback dims, e.g. from a stencil's parameter annotation.
///
/// Returns
/// -------
/// tuple of str or None
///     The dims, validated against the number of axes; None when nothing declares them.
///
/// Raises
/// ------
/// GridbufValueError
///     Invalid, duplicated or too few/many names.
/// GridbufTypeError
///     Dims of a type that cannot name dimensions.
#[pyfunction]
#[pyo3(signature = (obj, annotation=None))]
pub fn get_dims<'py>(
    obj: &Bound<'py, PyAny>,
    annotation: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let py = obj.py();
    let ndim = shape_of(obj)?.map(|s| s.len());
    if let Some(dims) = dims_of(obj, ndim)? {
        return dims_tuple(py, &dims).map(Some);
    }
    if let Some(ann) = annotation.filter(|a| !a.is_none()) {
        let dims = match ann.getattr_opt(intern!(py, "dims"))? {
            Some(d) => d,
            None => ann.clone(),
        };
        if !dims.is_none() {
            return dims_tuple(py, &dims_from(&dims, ndim, "annotation dims")?).map(Some);
        }
    }
    Ok(None)
}
