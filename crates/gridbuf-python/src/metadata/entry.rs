//! Reading the entries an array describes itself with: a buffer-info mapping's keys, the host
//! or GPU entry of its data interface, the shape it reports, and a Python value's repr for
//! messages. Shared by the other metadata modules; imports none of them.

use crate::data_interface::{data_interface_of, gpu_entry, host_entry};
use crate::pyobj::{lookup, mapping_get};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyMapping, PyString};

/// The repr of a Python value, for messages; `<unprintable>` when its `__repr__` raises.
pub(super) fn repr<T>(obj: &Bound<'_, T>) -> String {
    obj.as_any()
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unprintable>".into())
}

/// The value of `key` in a buffer-info mapping, `None` when missing or None.
pub(super) fn entry_get<'py>(
    entry: &Bound<'py, PyAny>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    mapping_get(entry, key.as_any())
}

/// The buffer info of the data interface of `obj`: its host entry, else its GPU entry.
pub(super) fn data_entry<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(di) = data_interface_of(obj)? else {
        return Ok(None);
    };
    match host_entry(&di)? {
        Some(e) => Ok(Some(e)),
        None => gpu_entry(&di),
    }
}

/// The shape an object reports: its `shape`, else the `shape` of its array interface, CUDA
/// array interface or data interface; `None` when it reports none.
pub(crate) fn shape_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<usize>>> {
    let py = obj.py();
    if let Some(shape) = lookup(obj, intern!(py, "shape"))? {
        return Ok(Some(shape.extract()?));
    }
    for attr in [
        intern!(py, "__array_interface__"),
        intern!(py, "__cuda_array_interface__"),
    ] {
        if let Some(iface) = lookup(obj, attr)? {
            if iface.cast::<PyMapping>().is_ok() {
                if let Some(shape) = entry_get(&iface, intern!(py, "shape"))? {
                    return Ok(Some(shape.extract()?));
                }
            }
        }
    }
    if let Some(entry) = data_entry(obj)? {
        if let Some(shape) = entry_get(&entry, intern!(py, "shape"))? {
            return Ok(Some(shape.extract()?));
        }
    }
    Ok(None)
}
