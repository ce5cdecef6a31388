//! Reading arrays from Python objects: [`extract`] for Rust callers (the stencil binder), and
//! the Python functions `array_info` and `as_numpy`.
//!
//! An exact `numpy.ndarray` is read from its C struct, without attribute lookups. For any other
//! object the description comes from the first of these it has:
//!
//! 1. the host entry (key `None` or `"cpu"`) of its `__gt_data_interface__` (or of the older
//!    `__gt_interface__`);
//! 2. `__array_interface__` (version 3);
//! 3. the GPU entry (key `"gpu"` or `"cuda"`) of its data interface;
//! 4. `__cuda_array_interface__` (versions 2 and 3);
//! 5. `__dlpack__` (a versioned capsule where the producer can make one, else a legacy one);
//! 6. the buffer protocol.
//!
//! The cheap interfaces that are also present are parsed as well and must describe the same
//! array: behind a host data-interface entry the array interface and the buffer protocol,
//! behind an array interface the buffer protocol, behind a GPU entry the CUDA array interface.
//! Where they disagree the object is refused rather than one of them guessed; where one of
//! them says read-only, the array is read-only. `__dlpack__` is called only when nothing else
//! describes the array, since it hands out ownership. A `gridbuf.Field` and an xarray
//! `DataArray` describe the array they hold. Nothing here reads or writes the described memory.

use crate::array_interface::parse_array_dict;
use crate::buffer_protocol::{parse_buffer, with_buffer};
use crate::convert::type_error;
use crate::cuda_array_interface::{cuda_array_interface_of, parse_cuda_dict};
use crate::data_interface::{
    data_interface_of, field_array, gpu_entry, host_entry, is_dataarray, no_entry, parse_entry,
};
use crate::dlpack::extract_dlpack;
use crate::errors::{to_py, IntoPyResult};
use crate::interface_dict::IfaceDict;
use crate::numpy_interop::{array_info_of_ndarray, as_exact_ndarray, as_ndarray, ndarray_type};
use gridbuf::arrays::array_info::{ArrayDevice, ArrayInfo, DeviceKind, Interface};
use gridbuf::Error;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyMemoryView, PyString};

/// An array read from a Python object.
pub struct Extracted<'py> {
    /// The description, checked by the core parsers (or read from a NumPy array, which is
    /// consistent by construction).
    pub info: ArrayInfo,
    /// The object that keeps the memory alive: the object itself, the array a wrapper holds, a
    /// `memoryview` holding the buffer export (buffer protocol), or the `gridbuf.DLPackOwner`
    /// that owns a DLPack tensor. Hold it as long as the memory is used.
    pub keepalive: Bound<'py, PyAny>,
    /// The data-interface entry the description came from (a mapping with array-interface keys
    /// and the optional `dims`, `halo`, `acquire`, `release` and `touch`, checked to be valid),
    /// or `None` when no data interface described the array.
    pub data_interface: Option<Bound<'py, PyAny>>,
    /// Whether `keepalive` is an exact `numpy.ndarray` that `info` describes whole.
    pub(crate) whole_ndarray: bool,
}

/// Reads the array `obj` describes, by the rules of this module. A `gridbuf.Field` and an
/// xarray `DataArray` are read through their `__gt_data_interface__`, so that `data_interface`
/// carries their dims and halo; see [`extract_array`] for the faster way that skips it.
#[inline]
pub fn extract<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Extracted<'py>> {
    extract_impl(obj, false)
}

/// Like [`extract`], but a `gridbuf.Field` or an xarray `DataArray` is unwrapped to the array it
/// holds, without building its `__gt_data_interface__` (a Python property): the memory is the
/// same, and `data_interface` is then that of the inner array. Their dims and origin remain
/// readable from `__gt_dims__` and `__gt_origin__` of the object itself.
#[inline]
pub fn extract_array<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Extracted<'py>> {
    extract_impl(obj, true)
}

fn extract_impl<'py>(obj: &Bound<'py, PyAny>, unwrap: bool) -> PyResult<Extracted<'py>> {
    let py = obj.py();
    if let Some(array) = as_exact_ndarray(obj) {
        return Ok(Extracted {
            info: array_info_of_ndarray(array)?,
            keepalive: obj.clone(),
            data_interface: None,
            whole_ndarray: true,
        });
    }
    if let Some(inner) = field_array(obj)? {
        if unwrap {
            return extract_impl(&inner, unwrap);
        }
    } else if is_dataarray(obj)? {
        let data = obj.getattr(intern!(py, "data"))?;
        let inner = extract_impl(&data, unwrap)?;
        if unwrap {
            return Ok(inner);
        }
        return match data_interface_of(obj)? {
            None => Ok(inner),
            Some(di) => {
                let (found, entry) = match host_entry(&di)? {
                    Some(entry) => (parse_entry(obj, &di, &entry, true)?, entry),
                    None => match gpu_entry(&di)? {
                        Some(entry) => (parse_entry(obj, &di, &entry, false)?, entry),
                        None => return Err(no_entry(&di)),
                    },
                };
                let mut info = found.info;
                check_agree(py, &mut info, &inner.info)?;
                Ok(Extracted {
                    info,
                    keepalive: obj.clone(),
                    data_interface: Some(entry),
                    whole_ndarray: false,
                })
            }
        };
    }
    if let Some(array) = as_ndarray(obj) {
        if is_masked(obj)? {
            return Err(type_error(
                "array",
                &obj.get_type().into_any(),
                "masked arrays are not supported, since a stencil would read and write the \
                 masked elements too; pass arr.data (ignoring the mask) or arr.filled(value)",
            ));
        }
        // A subclass that keeps NumPy's __array_interface__ (and so its buffer protocol, which
        // says the same) and adds no data interface is read from the struct as well.
        if !overrides_array_interface(obj)? && data_interface_of(obj)?.is_none() {
            return Ok(Extracted {
                info: array_info_of_ndarray(array)?,
                keepalive: obj.clone(),
                data_interface: None,
                whole_ndarray: false,
            });
        }
    }
    extract_generic(obj)
}

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

/// A description found through one interface, and what keeps its memory alive.
pub(crate) struct Found<'py> {
    pub(crate) info: ArrayInfo,
    pub(crate) keepalive: Bound<'py, PyAny>,
    /// Whether the memory was read through the object's own buffer protocol (`data` None),
    /// whose shape and format then need not match the interface's.
    pub(crate) own_buffer: bool,
}

fn extract_generic<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Extracted<'py>> {
    let py = obj.py();
    let di = data_interface_of(obj)?;
    let mut entry = None;
    let mut primary: Option<Found<'py>> = None;
    // Whether an interface read its memory through the object's buffer, which then need not
    // describe the array the same way.
    let mut raw_buffer = false;
    if let Some(di) = &di {
        if let Some(e) = host_entry(di)? {
            let found = parse_entry(obj, di, &e, true)?;
            raw_buffer |= found.own_buffer;
            primary = Some(found);
            entry = Some(e);
        }
    }
    // The plain array interface is read besides a host entry of the data interface, to check
    // that both describe the same memory, unless the entry has callbacks: memory managed by
    // acquire/touch/release is accessed only through them (a plain read of a mirrored field
    // syncs and marks its host side modified, which would dirty every input of a stencil).
    let managed = match &entry {
        Some(e) => crate::metadata::entry_callbacks(e)?
            .iter()
            .any(Option::is_some),
        None => false,
    };
    let ai = match managed {
        true => None,
        false => lookup(obj, intern!(py, "__array_interface__"))?,
    };
    if let Some(ai) = &ai {
        let d = IfaceDict::new(ai, Interface::ArrayInterface)?;
        let found = parse_array_dict(obj, &d, Interface::ArrayInterface, ArrayDevice::CPU)?;
        raw_buffer |= found.own_buffer;
        match &mut primary {
            Some(p) => check_agree(py, &mut p.info, &found.info)?,
            None => primary = Some(found),
        }
    }
    if primary.is_none() {
        if let Some(di) = &di {
            if let Some(e) = gpu_entry(di)? {
                let mut found = parse_entry(obj, di, &e, false)?;
                if let Some(cai) = cuda_array_interface_of(obj)? {
                    check_agree(py, &mut found.info, &parse_cuda_dict(&cai)?)?;
                }
                primary = Some(found);
                entry = Some(e);
            } else {
                return Err(no_entry(di));
            }
        }
    }
    if primary.is_none() {
        if let Some(cai) = cuda_array_interface_of(obj)? {
            primary = Some(Found {
                info: parse_cuda_dict(&cai)?,
                keepalive: obj.clone(),
                own_buffer: false,
            });
        }
    }
    if primary.is_none() {
        if let Some(dlpack) = lookup(obj, intern!(py, "__dlpack__"))? {
            primary = Some(extract_dlpack(obj, &dlpack)?);
        }
    }
    // SAFETY: `obj` is a live object; the check only reads its type's buffer slot.
    let has_buffer = unsafe { ffi::PyObject_CheckBuffer(obj.as_ptr()) } != 0;
    let mut found = match primary {
        Some(found) => found,
        None if has_buffer => {
            let view = PyMemoryView::from(obj)?.into_any();
            let info = with_buffer(&view, ffi::PyBUF_RECORDS_RO, parse_buffer)?.py(py)?;
            Found {
                info,
                keepalive: view,
                own_buffer: true,
            }
        }
        None => return Err(no_interface(obj)),
    };
    if has_buffer && !found.own_buffer && !raw_buffer && found.info.device.kind == DeviceKind::Cpu {
        let buffer = with_buffer(obj, ffi::PyBUF_RECORDS_RO, parse_buffer)?.py(py)?;
        check_agree(py, &mut found.info, &buffer)?;
    }
    Ok(Extracted {
        info: found.info,
        keepalive: found.keepalive,
        data_interface: entry,
        whole_ndarray: false,
    })
}

/// Checks that `other` describes the same array as `info`, and makes `info` read-only when
/// `other` is.
pub(crate) fn check_agree(py: Python<'_>, info: &mut ArrayInfo, other: &ArrayInfo) -> PyResult<()> {
    info.agrees_with(other).py(py)?;
    info.readonly |= other.readonly;
    Ok(())
}

fn no_interface(obj: &Bound<'_, PyAny>) -> PyErr {
    let py = obj.py();
    let has_array = obj.hasattr(intern!(py, "__array__")).unwrap_or(false);
    let type_name = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    to_py(py, Error::no_array_interface(&type_name, has_array))
}

/// Whether the type of `obj` (an ndarray subclass) replaces NumPy's `__array_interface__`.
fn overrides_array_interface(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static NUMPYS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = obj.py();
    let name = intern!(py, "__array_interface__");
    let numpys = NUMPYS.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(ndarray_type(py).getattr(name)?.unbind())
    })?;
    Ok(!obj.get_type().getattr(name)?.is(numpys.bind(py)))
}

/// Whether `obj` (an ndarray subclass) is a `numpy.ma.MaskedArray`.
fn is_masked(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = obj.py();
    match sys_modules(py)?.get_item(intern!(py, "numpy.ma"))? {
        None => Ok(false),
        Some(ma) => match ma.getattr_opt(intern!(py, "MaskedArray"))? {
            Some(cls) => obj.is_instance(&cls),
            None => Ok(false),
        },
    }
}

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
