//! Reading `__gt_data_interface__` (and the older `__gt_interface__`), and recognising the
//! wrappers that carry one: `gridbuf.Field` and xarray's `DataArray`.

use crate::array_interface::parse_array_dict;
use crate::convert::{self, type_error, value_error};
use crate::errors::{to_py, IntoPyResult};
use crate::extract::{lookup, sys_modules, Found};
use crate::interface_dict::{repr, IfaceDict};
use gridbuf::arrays::array_info::{ArrayDevice, ArrayInfo, DeviceKind, Interface};
use gridbuf::Error;
use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyMapping, PyType};

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

/// A data interface: the attribute it came from and the mapping.
pub(crate) struct DataInterface<'py> {
    /// `__gt_data_interface__` or the older `__gt_interface__`.
    pub(crate) attr: &'static str,
    /// The mapping from device key to buffer info.
    pub(crate) mapping: Bound<'py, PyAny>,
}

/// The data interface of `obj` (`__gt_data_interface__`, else `__gt_interface__`), checked to
/// be a mapping; `None` when it has neither.
pub(crate) fn data_interface_of<'py>(
    obj: &Bound<'py, PyAny>,
) -> PyResult<Option<DataInterface<'py>>> {
    let py = obj.py();
    for (attr, name) in [
        (
            "__gt_data_interface__",
            intern!(py, "__gt_data_interface__"),
        ),
        ("__gt_interface__", intern!(py, "__gt_interface__")),
    ] {
        if let Some(mapping) = lookup(obj, name)? {
            if mapping.cast::<PyMapping>().is_err() {
                return Err(type_error(
                    attr,
                    &mapping,
                    "expected a mapping from device key (None, \"cpu\", \"gpu\" or \"cuda\") to \
                     a buffer-info dict",
                ));
            }
            return Ok(Some(DataInterface { attr, mapping }));
        }
    }
    Ok(None)
}

/// The first entry of `keys` in the data interface.
fn entry_of<'py>(
    di: &DataInterface<'py>,
    keys: [Bound<'py, PyAny>; 2],
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = di.mapping.py();
    for key in keys {
        let value = match di.mapping.cast::<PyDict>() {
            Ok(dict) => dict.get_item(key)?,
            Err(_) => match di.mapping.get_item(key) {
                Ok(v) => Some(v),
                Err(e) if e.is_instance_of::<PyKeyError>(py) => None,
                Err(e) => return Err(e),
            },
        };
        if let Some(v) = value.filter(|v| !v.is_none()) {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

pub(crate) fn host_entry<'py>(di: &DataInterface<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = di.mapping.py();
    entry_of(
        di,
        [
            py.None().into_bound(py),
            intern!(py, "cpu").clone().into_any(),
        ],
    )
}

pub(crate) fn gpu_entry<'py>(di: &DataInterface<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = di.mapping.py();
    entry_of(
        di,
        [
            intern!(py, "gpu").clone().into_any(),
            intern!(py, "cuda").clone().into_any(),
        ],
    )
}

pub(crate) fn no_entry(di: &DataInterface<'_>) -> PyErr {
    let py = di.mapping.py();
    let keys = di
        .mapping
        .call_method0(intern!(py, "keys"))
        .and_then(|k| py.import("builtins")?.getattr("list")?.call1((k,)))
        .map(|k| repr(&k))
        .unwrap_or_else(|_| "?".into());
    to_py(py, Error::no_device_entry(di.attr, &keys))
}

/// Parses and checks one data-interface entry (host memory when `host`, else GPU memory).
pub(crate) fn parse_entry<'py>(
    obj: &Bound<'py, PyAny>,
    di: &DataInterface<'py>,
    entry: &Bound<'py, PyAny>,
    host: bool,
) -> PyResult<Found<'py>> {
    let py = obj.py();
    let result = (|| {
        let d = IfaceDict::new(entry, Interface::DataInterface)?;
        let device = if host {
            ArrayDevice::CPU
        } else {
            ArrayDevice {
                kind: DeviceKind::Cuda,
                id: None,
            }
        };
        let mut found = parse_array_dict(obj, &d, Interface::DataInterface, device)?;
        if !host {
            found.info.stream = entry_stream(&d)?;
        }
        check_entry_extras(&d, &found.info)?;
        Ok(found)
    })();
    // Messages name the canonical attribute; say the one the object has.
    result.map_err(|e: PyErr| {
        if di.attr == "__gt_data_interface__" {
            return e;
        }
        let message = e.value(py).to_string();
        PyErr::from_type(
            e.get_type(py),
            message.replace("__gt_data_interface__", di.attr),
        )
    })
}

/// The `stream` of a GPU entry, checked as the CUDA array interface checks it.
fn entry_stream(d: &IfaceDict<'_, '_>) -> PyResult<Option<i64>> {
    let key = intern!(d.obj.py(), "stream");
    match d.int(key)? {
        Some(s) if s <= 0 => Err(to_py(
            d.obj.py(),
            Error::data_interface_stream(&d.field(key), s),
        )),
        s => Ok(s),
    }
}

/// Checks `dims`, `halo`, `acquire`, `release` and `touch` of a data-interface entry.
fn check_entry_extras(d: &IfaceDict<'_, '_>, info: &ArrayInfo) -> PyResult<()> {
    let py = d.obj.py();
    let ndim = info.ndim();
    let dims_key = intern!(py, "dims");
    if let Some(dims) = d.get(dims_key)? {
        crate::metadata::dims_from(&dims, Some(ndim), &d.field(dims_key))?;
    }
    let halo_key = intern!(py, "halo");
    if let Some(halo) = d.get(halo_key)? {
        let field = d.field(halo_key);
        const EXPECTED: &str = "expected one non-negative int or (lower, upper) pair per axis";
        let pairs = convert::halo(&halo).map_err(|e| {
            if e.is_instance_of::<PyTypeError>(py) {
                type_error(&field, &halo, EXPECTED)
            } else {
                value_error(&field, &halo, EXPECTED)
            }
        })?;
        gridbuf::geometry::halo::check_fits(&info.shape, &pairs, None, &field).py(py)?;
    }
    for key in [
        intern!(py, "acquire"),
        intern!(py, "release"),
        intern!(py, "touch"),
    ] {
        if let Some(f) = d.get(key)? {
            if !f.is_callable() {
                return Err(type_error(&d.field(key), &f, "expected a callable or None"));
            }
        }
    }
    Ok(())
}
