//! Reading one field argument of a stencil call, once: [`read_arg`] makes one pass over the
//! object (which kind it is, its memory by the core's order of interfaces, what it declares)
//! and returns the parsed record [`Arg`], which the binder, the call cache, the views and the
//! data-interface callbacks then use without looking at the object again.

use crate::convert::dims_from;
use crate::data_interface::{gpu_entry, EntryCallbacks};
use crate::errors::IntoPyResult;
use crate::extract::{extract_array, extract_kind, Extracted};
use crate::metadata::{check_dataarray_dims, dataarray_own_dims, origin_of, FieldMeta};
use crate::numpy_interop::array_info_of_ndarray;
use crate::pyobj::{kind_of, lookup, mapping_get, Kind};
use gridbuf::arrays::array_info::ArrayInfo;
use gridbuf::binding::ArgMeta;
use gridbuf::geometry::dims::{parse_names, Dim};
use pyo3::intern;
use pyo3::prelude::*;

/// One field argument of a call, read once: its memory and what it declares.
pub(crate) struct Arg<'py> {
    /// The array's description, checked by the core parsers.
    pub(crate) info: ArrayInfo,
    /// The object that keeps the memory alive (see [`Extracted::keepalive`]).
    pub(crate) keepalive: Bound<'py, PyAny>,
    /// What it declares: dims, `__gt_origin__` and the data-interface halo's lower sides.
    pub(crate) meta: ArgMeta,
    /// The `acquire`, `touch` and `release` of the data-interface entry that described the
    /// memory; `None` when no data interface did.
    pub(crate) callbacks: Option<EntryCallbacks<'py>>,
}

/// Reads one field argument: its memory, and the dims, origin and halo it declares. A
/// `gridbuf.Field` is read from its array and its [`FieldMeta`]; an xarray `DataArray` from its
/// data and its `.dims`; a plain NumPy array declares nothing; anything else is asked for
/// `__gt_dims__` and `__gt_origin__`, and what its data-interface entry declares is taken from
/// the entry read for its memory (its data interface, which may be a Python property, is
/// evaluated once). No Python code runs for the first three.
#[inline]
pub(crate) fn read_arg<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Arg<'py>> {
    match kind_of(obj)? {
        // The hot path: the record is built in place from NumPy's struct (going through
        // `Extracted` moved the `ArrayInfo` once more per argument: +20 ns on a two-field call).
        Kind::ExactNdarray(array) => Ok(Arg {
            info: array_info_of_ndarray(array)?,
            keepalive: obj.clone(),
            meta: ArgMeta::default(),
            callbacks: None,
        }),
        Kind::Field(inner) => {
            let ex = extract_array(&inner)?;
            let meta = obj.getattr(intern!(py, "_meta"))?;
            let meta = meta.cast::<FieldMeta>()?.get().arg_meta().clone();
            Ok(Arg::new(ex, meta))
        }
        Kind::DataArray => {
            let inner = read_arg(py, &obj.getattr(intern!(py, "data"))?)?;
            let dims = dataarray_own_dims(obj)?;
            if let Some(dims) = &dims {
                check_dataarray_dims(py, dims, inner.meta.dims.as_deref())?;
            }
            let origin = origin_of(obj, Some(&inner.info.shape))?;
            let meta = ArgMeta {
                dims,
                origin,
                halo_lower: inner.meta.halo_lower,
            };
            Ok(Arg { meta, ..inner })
        }
        kind @ Kind::Other => {
            let mut ex = extract_kind(obj, kind, false)?;
            let meta = ArgMeta {
                dims: declared_dims(obj, &mut ex)?,
                origin: origin_of(obj, Some(&ex.info.shape))?,
                halo_lower: ex
                    .decl
                    .as_ref()
                    .and_then(|d| d.halo.as_ref())
                    .map(|h| h.iter().map(|&(lo, _)| lo).collect()),
            };
            Ok(Arg::new(ex, meta))
        }
    }
}

impl<'py> Arg<'py> {
    /// The record of memory read as `ex`, declaring `meta`.
    #[inline]
    fn new(ex: Extracted<'py>, meta: ArgMeta) -> Self {
        Arg {
            info: ex.info,
            keepalive: ex.keepalive,
            meta,
            callbacks: ex.decl.map(|d| d.callbacks),
        }
    }
}

/// The dims an object other than a NumPy array, Field or DataArray declares, checked against
/// the array `ex` read from it: its `__gt_dims__`, else the `"dims"` of its data interface's
/// entry (host, else GPU), else (xarray objects) its `.dims` when they are gt names. The rule of
/// `metadata::dims_of`, reading the data interface from `ex` instead of the object (the entry's
/// dims are taken out of `ex`, not copied).
fn declared_dims(obj: &Bound<'_, PyAny>, ex: &mut Extracted<'_>) -> PyResult<Option<Vec<Dim>>> {
    let py = obj.py();
    let ndim = Some(ex.info.ndim());
    if let Some(dims) = lookup(obj, intern!(py, "__gt_dims__"))? {
        return dims_from(&dims, ndim, "__gt_dims__").map(Some);
    }
    match (&mut ex.decl, &ex.unused_data_interface) {
        // The entry that described the memory is the host entry, else the GPU entry: the one
        // whose dims count, checked when it was read.
        (Some(decl), _) => {
            if decl.dims.is_some() {
                return Ok(decl.dims.take());
            }
        }
        // The array interface described the memory, before a GPU entry.
        (None, Some(di)) => {
            if let Some(entry) = gpu_entry(di)? {
                if let Some(dims) = mapping_get(&entry, intern!(py, "dims").as_any())? {
                    return dims_from(&dims, ndim, "__gt_data_interface__ dims").map(Some);
                }
            }
        }
        (None, None) => {}
    }
    let module = obj.get_type().module()?;
    if module.to_str()?.starts_with("xarray.") && obj.hasattr(intern!(py, "dims"))? {
        let names = crate::metadata::xarray_dim_names(obj)?;
        if crate::metadata::all_gt_names(&names) {
            return parse_names(&names, ndim, "DataArray.dims")
                .py(py)
                .map(|d| Some(d.into_vec()));
        }
    }
    Ok(None)
}

/// The data-interface callbacks of an argument, read again from the object (a bound call runs
/// them at every call): those of the entry that describes its memory; a Field's and a
/// DataArray's are those of the array they hold.
pub(crate) fn callbacks_of_arg<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
) -> PyResult<Option<EntryCallbacks<'py>>> {
    let ex = match kind_of(obj)? {
        Kind::DataArray => return callbacks_of_arg(py, &obj.getattr(intern!(py, "data"))?),
        Kind::Field(inner) => extract_array(&inner)?,
        kind => extract_kind(obj, kind, false)?,
    };
    Ok(ex.decl.map(|d| d.callbacks))
}
