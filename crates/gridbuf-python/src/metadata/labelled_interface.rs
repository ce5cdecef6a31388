//! Reading data interfaces and building the one a labelled array (Field, DataArray) reports.

use super::dims::dims_tuple;
use super::entry::{entry_get, repr};
use crate::convert::dims_from;
use crate::data_interface::{data_interface_of, gpu_entry, host_entry};
use crate::errors::to_py;
use crate::pyobj::lookup;
use gridbuf::Error;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

/// The ``__gt_data_interface__`` (or the older ``__gt_interface__``) of ``obj``, or None.
///
/// Raises
/// ------
/// GridbufTypeError
///     The attribute is not a mapping.
#[pyfunction]
pub fn data_interface<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(data_interface_of(obj)?.map(|di| di.mapping))
}

/// The buffer info of a data interface for host memory (key ``None``, else ``"cpu"``), or for
/// GPU memory (key ``"gpu"``, else ``"cuda"``) when ``gpu``; None when it has none.
#[pyfunction]
#[pyo3(signature = (obj, gpu=false))]
pub fn data_interface_entry<'py>(
    obj: &Bound<'py, PyAny>,
    gpu: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(di) = data_interface_of(obj)? else {
        return Ok(None);
    };
    if gpu {
        gpu_entry(&di)
    } else {
        host_entry(&di)
    }
}

/// Copies `key` of `from` into `to` when it is set there and not None.
pub(super) fn copy_key<'py>(
    from: &Bound<'py, PyAny>,
    to: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> PyResult<()> {
    if let Some(v) = entry_get(from, key)? {
        to.set_item(key, v)?;
    }
    Ok(())
}

/// The data interface of an array labelled with ``dims`` (and ``halo``): what a ``Field`` and
/// an xarray ``DataArray`` report as their ``__gt_data_interface__``.
///
/// An array with a data interface of its own keeps that interface's entries, under their keys
/// and with their callbacks and ``halo`` (unless ``halo`` is given); its plain array interfaces
/// are then not read, since reading them may have effects (a mirrored field syncs on every
/// read). Otherwise one entry per memory the array exposes: key ``None`` with its
/// ``__array_interface__`` (with ``host_fallback``, that of ``numpy.asarray(array)`` when it has
/// neither array interface), key ``"gpu"`` with its ``__cuda_array_interface__``.
///
/// Parameters
/// ----------
/// array : array_like
///     The labelled array.
/// dims : tuple of str
///     Dims per axis, set in every entry.
/// halo : tuple of (int, int), optional
///     Halo per axis, set in every entry when given.
/// strict : bool
///     Raise when the array's own data interface declares other dims (a DataArray must agree
///     with its data; a Field relabels its array).
/// host_fallback : bool
///     Describe host memory through ``numpy.asarray(array)`` when the array has no array
///     interface (DLPack and ``__array__`` producers).
///
/// Returns
/// -------
/// dict or None
///     None when the array exposes no memory this way.
#[pyfunction]
#[pyo3(signature = (array, dims, halo=None, strict=false, host_fallback=false))]
pub fn data_interface_for<'py>(
    array: &Bound<'py, PyAny>,
    dims: &Bound<'py, PyTuple>,
    halo: Option<&Bound<'py, PyAny>>,
    strict: bool,
    host_fallback: bool,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let py = array.py();
    let inner = data_interface_of(array)?;
    let (mut host, gpu) = match inner {
        Some(_) => (None, None),
        None => (
            lookup(array, intern!(py, "__array_interface__"))?,
            lookup(array, intern!(py, "__cuda_array_interface__"))?,
        ),
    };
    if inner.is_none() && host.is_none() && gpu.is_none() && host_fallback {
        let asarray = py.import("numpy")?.getattr("asarray")?;
        host = Some(asarray.call1((array,))?.getattr("__array_interface__")?);
    }
    let dims_key = intern!(py, "dims");
    let halo_key = intern!(py, "halo");
    let label = |entry: &Bound<'py, PyDict>,
                 own: Option<&Bound<'py, PyAny>>,
                 key: &Bound<'py, PyAny>|
     -> PyResult<()> {
        if let Some(own) = own {
            for name in [
                intern!(py, "acquire"),
                intern!(py, "touch"),
                intern!(py, "release"),
            ] {
                copy_key(own, entry, name)?;
            }
            if halo.is_none() {
                copy_key(own, entry, halo_key)?;
            }
            if strict {
                if let Some(d) = entry_get(own, dims_key)? {
                    let declared = dims_from(&d, Some(dims.len()), "dims")?;
                    if dims_from(dims, None, "dims")? != declared {
                        let err = Error::dataarray_entry_dims_differ(
                            repr(dims),
                            &repr(key),
                            &repr(&dims_tuple(py, &declared)?),
                        );
                        return Err(to_py(py, err));
                    }
                }
            }
        }
        entry.set_item(dims_key, dims)?;
        if let Some(h) = halo {
            entry.set_item(halo_key, h)?;
        }
        Ok(())
    };
    let out = PyDict::new(py);
    if let Some(di) = inner {
        for item in di.mapping.call_method0(intern!(py, "items"))?.try_iter()? {
            let (key, entry): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
            let copy = PyDict::new(py);
            copy.call_method1(intern!(py, "update"), (&entry,))?;
            label(&copy, Some(&entry), &key)?;
            out.set_item(key, copy)?;
        }
        return Ok(Some(out));
    }
    for (key, iface) in [
        (py.None().into_bound(py), host),
        (intern!(py, "gpu").clone().into_any(), gpu),
    ] {
        let Some(iface) = iface else { continue };
        let entry = PyDict::new(py);
        entry.call_method1(intern!(py, "update"), (&iface,))?;
        label(&entry, None, &key)?;
        out.set_item(key, entry)?;
    }
    Ok((!out.is_empty()).then_some(out))
}
