//! What an array says about itself besides its memory, read in one place: its dims
//! (`__gt_dims__`, the data interface's `"dims"`, an xarray `DataArray`'s `.dims`), its origin
//! (`__gt_origin__`), its halo, and the metadata a `gridbuf.Field` carries ([`FieldMeta`]).
//! The rules are the core's (`gridbuf::geometry::dims`, `origin`, `halo`, `Plan::is_whole`); this module
//! converts Python values to the names and ints they take. `gridbuf._metadata` and `gridbuf.Field` call these functions, and
//! the stencil binder reads the same values without going through Python code.
//!
//! One module per kind of label: [`dims`], [`origin`], [`halo`], the Field's [`field_meta`],
//! the data-interface [`callbacks`], the data interface a labelled array reports
//! ([`labelled_interface`]), and whole allocations and layouts ([`layout`]).

mod callbacks;
mod dims;
mod field_meta;
mod halo;
mod labelled_interface;
mod layout;
mod origin;

pub(crate) use callbacks::*;
pub(crate) use dims::*;
pub(crate) use field_meta::*;
pub(crate) use halo::*;
pub(crate) use labelled_interface::*;
pub(crate) use layout::*;
pub(crate) use origin::*;

use crate::data_interface::{data_interface_of, gpu_entry, host_entry};
use crate::errors::{to_py, IntoPyResult};
use crate::pyobj::{is_dataarray, lookup, mapping_get};
use gridbuf::binding::ArgMeta;
use gridbuf::geometry::dims::Dim;
use gridbuf::Error;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{PyBool, PyDict, PyMapping, PyString, PyTuple};
use std::hash::{Hash, Hasher};

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
