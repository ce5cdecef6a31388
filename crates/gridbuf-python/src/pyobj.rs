//! Looking at Python objects, below every reader of arrays: attribute lookups that treat a
//! missing attribute and None alike, mapping lookups, `sys.modules`, and which kind of object
//! an argument is (NumPy array, `gridbuf.Field`, xarray `DataArray` or anything else), decided
//! once per object by [`kind_of`].
//!
//! The interface parsers, the metadata readers and the argument reader all import from here;
//! nothing here imports them.

use crate::numpy_interop::as_exact_ndarray;
use numpy::PyUntypedArray;
use pyo3::exceptions::PyKeyError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyType};

/// The attribute `name` of `obj`; `None` when it is missing or None.
///
/// Python 3.13 looks up a missing attribute without raising (and catching) an AttributeError;
/// before 3.13 only the builtin `getattr` with a default does, so it is called instead, which
/// is several times faster for the interfaces an object does not have.
#[inline]
pub(crate) fn lookup<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    static GETATTR: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();
    let py = obj.py();
    let getattr = GETATTR.get_or_try_init(py, || -> PyResult<Option<Py<PyAny>>> {
        if py.version_info() >= (3, 13) {
            return Ok(None);
        }
        Ok(Some(py.import("builtins")?.getattr("getattr")?.unbind()))
    })?;
    let value = match getattr {
        None => obj.getattr_opt(name)?,
        Some(getattr) => Some(getattr.bind(py).call1((obj, name, py.None()))?),
    };
    Ok(value.filter(|v| !v.is_none()))
}

/// The value of `key` in a mapping (a dict, or any object with `__getitem__`); `None` when it
/// is missing or None.
pub(crate) fn mapping_get<'py>(
    mapping: &Bound<'py, PyAny>,
    key: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let value = match mapping.cast::<PyDict>() {
        Ok(d) => d.get_item(key)?,
        Err(_) => match mapping.get_item(key) {
            Ok(v) => Some(v),
            Err(e) if e.is_instance_of::<PyKeyError>(mapping.py()) => None,
            Err(e) => return Err(e),
        },
    };
    Ok(value.filter(|v| !v.is_none()))
}

/// `sys.modules`.
pub(crate) fn sys_modules(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    static MODULES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
    MODULES
        .get_or_try_init(py, || -> PyResult<Py<PyDict>> {
            Ok(py
                .import("sys")?
                .getattr("modules")?
                .cast_into::<PyDict>()?
                .unbind())
        })
        .map(|m| m.bind(py))
}

/// The array an exact `gridbuf.Field` holds; `None` for anything else.
pub(crate) fn field_array<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    static FIELD: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let py = obj.py();
    let field = FIELD.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        Ok(py
            .import("gridbuf.field")?
            .getattr("Field")?
            .cast_into::<PyType>()?
            .unbind())
    })?;
    if !obj.get_type().is(field.bind(py)) {
        return Ok(None);
    }
    obj.getattr_opt(intern!(py, "_array"))
}

/// Whether `obj` is an xarray `DataArray` (xarray is never imported for this).
pub(crate) fn is_dataarray(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static DATAARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let py = obj.py();
    if let Some(cls) = DATAARRAY.get(py) {
        return obj.is_instance(cls.bind(py));
    }
    let Some(xr) = sys_modules(py)?.get_item(intern!(py, "xarray"))? else {
        return Ok(false);
    };
    // xarray may be half imported (we may be called while it loads): then nothing is cached.
    let Some(cls) = xr.getattr_opt(intern!(py, "DataArray"))? else {
        return Ok(false);
    };
    let Ok(cls) = cls.cast_into::<PyType>() else {
        return Ok(false);
    };
    let result = obj.is_instance(&cls);
    let _ = DATAARRAY.set(py, cls.unbind());
    result
}

/// Which kind of object an argument is; see [`kind_of`].
pub(crate) enum Kind<'a, 'py> {
    /// An exact `numpy.ndarray` (read from its C struct, no attribute looked up).
    ExactNdarray(&'a Bound<'py, PyUntypedArray>),
    /// An exact `gridbuf.Field`, and the array it holds.
    Field(Bound<'py, PyAny>),
    /// An xarray `DataArray`.
    DataArray,
    /// Anything else (NumPy subclasses included): read through its interfaces.
    Other,
}

/// Which kind of object `obj` is, tested in this order: an exact NumPy array (a type
/// comparison), an exact `gridbuf.Field` holding an array, an xarray `DataArray`, anything else.
#[inline]
pub(crate) fn kind_of<'a, 'py>(obj: &'a Bound<'py, PyAny>) -> PyResult<Kind<'a, 'py>> {
    if let Some(array) = as_exact_ndarray(obj) {
        return Ok(Kind::ExactNdarray(array));
    }
    if let Some(inner) = field_array(obj)? {
        return Ok(Kind::Field(inner));
    }
    if is_dataarray(obj)? {
        return Ok(Kind::DataArray);
    }
    Ok(Kind::Other)
}
