//! Reading arrays from Python objects: [`extract`] for Rust callers (the argument reader of the
//! stencil binder, `array_info`, halo exchanges), and the Python functions `array_info` and
//! `as_numpy` through it.
//!
//! An exact `numpy.ndarray` is read from its C struct, without attribute lookups. A
//! `gridbuf.Field` and an xarray `DataArray` describe the array they hold. For any other object
//! the description comes from the first interface it offers in the core's order
//! (`gridbuf::arrays::interface::precedence::ORDER`: NumPy's struct for a plain subclass, the
//! host entry of `__gt_data_interface__`, `__array_interface__`, the GPU entry,
//! `__cuda_array_interface__`, `__dlpack__`, the buffer protocol); this module only asks the
//! object for each in turn and parses the one chosen.
//!
//! The interfaces the core's `precedence::cross_checks` names are read as well and must
//! describe the same array; where they disagree the object is refused rather than one of them
//! guessed; where one of them says read-only, the array is read-only. `__dlpack__` is called
//! only when nothing else describes the array, since it hands out ownership. Nothing here reads
//! or writes the described memory.

use crate::array_interface::parse_array_dict;
use crate::buffer_protocol::{has_buffer, parse_buffer, with_buffer, BUF_RECORDS_RO};
use crate::convert::type_error;
use crate::cuda_array_interface::{cuda_array_interface_of, parse_cuda_dict};
use crate::data_interface::{
    data_interface_of, gpu_entry, host_entry, no_entry, parse_entry, DataInterface, EntryDecl,
};
use crate::dlpack::extract_dlpack;
use crate::errors::{to_py, IntoPyResult};
use crate::found::Found;
use crate::interface_dict::IfaceDict;
use crate::numpy_interop::{array_info_of_ndarray, as_ndarray, ndarray_type};
use crate::pyobj::{kind_of, lookup, sys_modules, Kind};
use gridbuf::arrays::array_info::{ArrayDevice, ArrayInfo, Interface};
use gridbuf::arrays::interface::precedence::{self, Source};
use gridbuf::Error;
use numpy::PyUntypedArray;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyMemoryView;

// The exact-ndarray fast path of `extract_impl` (and of the argument reader) runs before the
// core's order is walked: it is the order's first source.
const _: () = assert!(matches!(precedence::ORDER[0], Source::NdarrayStruct));

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
    /// What that entry declares (dims, halo, callbacks), converted when it was checked; `Some`
    /// exactly when `data_interface` is. Boxed (as is the next field), so that the record of a
    /// plain array, which has neither, stays small.
    pub(crate) decl: Option<Box<EntryDecl<'py>>>,
    /// The object's data interface where it has one that described nothing (an object whose
    /// `__array_interface__` came before its GPU entry), kept so that what it declares is read
    /// without evaluating it again.
    pub(crate) unused_data_interface: Option<Box<DataInterface<'py>>>,
    /// Whether `keepalive` is an exact `numpy.ndarray` that `info` describes whole.
    pub(crate) whole_ndarray: bool,
}

impl<'py> Extracted<'py> {
    /// An array read from NumPy's struct, with nothing declared.
    #[inline]
    fn plain(info: ArrayInfo, keepalive: Bound<'py, PyAny>, whole_ndarray: bool) -> Self {
        Extracted {
            info,
            keepalive,
            data_interface: None,
            decl: None,
            unused_data_interface: None,
            whole_ndarray,
        }
    }
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

/// Reads an object [`kind_of`] found to be `kind` (see [`extract`] and [`extract_array`]).
#[inline]
pub(crate) fn extract_kind<'py>(
    obj: &Bound<'py, PyAny>,
    kind: Kind<'_, 'py>,
    unwrap: bool,
) -> PyResult<Extracted<'py>> {
    match kind {
        Kind::ExactNdarray(array) => Ok(Extracted::plain(
            array_info_of_ndarray(array)?,
            obj.clone(),
            true,
        )),
        Kind::Field(inner) if unwrap => extract_impl(&inner, unwrap),
        Kind::DataArray => extract_dataarray(obj, unwrap),
        Kind::Field(_) | Kind::Other => extract_other(obj),
    }
}

#[inline]
fn extract_impl<'py>(obj: &Bound<'py, PyAny>, unwrap: bool) -> PyResult<Extracted<'py>> {
    extract_kind(obj, kind_of(obj)?, unwrap)
}

/// An xarray `DataArray`: its data, or (not `unwrap`) the entry of its own data interface,
/// checked against its data.
fn extract_dataarray<'py>(obj: &Bound<'py, PyAny>, unwrap: bool) -> PyResult<Extracted<'py>> {
    let py = obj.py();
    let data = obj.getattr(intern!(py, "data"))?;
    let inner = extract_impl(&data, unwrap)?;
    if unwrap {
        return Ok(inner);
    }
    let Some(di) = data_interface_of(obj)? else {
        return Ok(inner);
    };
    let (found, decl, entry) = match host_entry(&di)? {
        Some(entry) => {
            let (found, decl) = parse_entry(obj, &di, &entry, true)?;
            (found, decl, entry)
        }
        None => match gpu_entry(&di)? {
            Some(entry) => {
                let (found, decl) = parse_entry(obj, &di, &entry, false)?;
                (found, decl, entry)
            }
            None => return Err(no_entry(&di)),
        },
    };
    let mut info = found.info;
    check_agree(py, &mut info, &inner.info)?;
    Ok(Extracted {
        info,
        keepalive: obj.clone(),
        data_interface: Some(entry),
        decl: Some(Box::new(decl)),
        unused_data_interface: None,
        whole_ndarray: false,
    })
}

/// Any object other than an exact NumPy array, a Field being unwrapped or a DataArray.
fn extract_other<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Extracted<'py>> {
    let subclass = as_ndarray(obj);
    if subclass.is_some() && is_masked(obj)? {
        return Err(type_error(
            "array",
            &obj.get_type().into_any(),
            "masked arrays are not supported, since a stencil would read and write the \
             masked elements too; pass arr.data (ignoring the mask) or arr.filled(value)",
        ));
    }
    extract_generic(obj, subclass)
}

/// What an object was found to offer while the core's order was walked.
struct Offers<'py> {
    di: Option<DataInterface<'py>>,
    host: Option<Bound<'py, PyAny>>,
    ai: Option<Bound<'py, PyAny>>,
    gpu: Option<Bound<'py, PyAny>>,
    cai: Option<Bound<'py, PyAny>>,
    dlpack: Option<Bound<'py, PyAny>>,
    has_buffer: bool,
}

impl<'py> Offers<'py> {
    /// Whether the object offers `source`, looked up now (each interface at most once).
    fn offers(
        &mut self,
        obj: &Bound<'py, PyAny>,
        subclass: Option<&Bound<'py, PyUntypedArray>>,
        source: Source,
    ) -> PyResult<bool> {
        let py = obj.py();
        Ok(match source {
            // A subclass that keeps NumPy's __array_interface__ (and so its buffer protocol,
            // which says the same) and adds no data interface.
            Source::NdarrayStruct => {
                subclass.is_some() && !overrides_array_interface(obj)? && self.di.is_none()
            }
            Source::DataInterfaceHost => self.host.is_some(),
            Source::ArrayInterface => {
                self.ai = lookup(obj, intern!(py, "__array_interface__"))?;
                self.ai.is_some()
            }
            Source::DataInterfaceGpu => {
                if let Some(di) = &self.di {
                    self.gpu = gpu_entry(di)?;
                }
                self.gpu.is_some()
            }
            Source::DataInterfaceWithoutEntry => self.di.is_some(),
            Source::CudaArrayInterface => {
                self.cai = cuda_array_interface_of(obj)?;
                self.cai.is_some()
            }
            Source::DLPack => {
                self.dlpack = lookup(obj, intern!(py, "__dlpack__"))?;
                self.dlpack.is_some()
            }
            Source::BufferProtocol => self.has_buffer,
        })
    }
}

/// Reads `obj` through the first interface it offers in the core's order, then checks the
/// others the core names against it. `subclass`: `obj` as a NumPy array, where it is an
/// instance of a subclass.
fn extract_generic<'py>(
    obj: &Bound<'py, PyAny>,
    subclass: Option<&Bound<'py, PyUntypedArray>>,
) -> PyResult<Extracted<'py>> {
    let py = obj.py();
    let di = data_interface_of(obj)?;
    let host = match &di {
        Some(di) => host_entry(di)?,
        None => None,
    };
    let mut offers = Offers {
        di,
        host,
        ai: None,
        gpu: None,
        cai: None,
        dlpack: None,
        // SAFETY: `obj` is a live object; the check only reads its type's buffer slot.
        has_buffer: has_buffer(obj),
    };
    let source = precedence::first(|s| offers.offers(obj, subclass, s))?;
    let Some(source) = source else {
        return Err(no_interface(obj));
    };
    let mut entry = None;
    let (mut found, decl) = match source {
        Source::NdarrayStruct => {
            let array = subclass.expect("NdarrayStruct is offered by NumPy arrays only");
            let info = array_info_of_ndarray(array)?;
            return Ok(Extracted::plain(info, obj.clone(), false));
        }
        Source::DataInterfaceHost | Source::DataInterfaceGpu => {
            let host = source == Source::DataInterfaceHost;
            let (di, e) = match (&offers.di, offers.host.take(), offers.gpu.take()) {
                (Some(di), Some(e), _) if host => (di, e),
                (Some(di), _, Some(e)) if !host => (di, e),
                _ => unreachable!("a data-interface entry is offered only where it was found"),
            };
            let (found, decl) = parse_entry(obj, di, &e, host)?;
            entry = Some(e);
            (found, Some(Box::new(decl)))
        }
        Source::ArrayInterface => {
            let ai = offers.ai.take().expect("offered");
            (parse_array_interface(obj, &ai)?, None)
        }
        Source::DataInterfaceWithoutEntry => {
            return Err(no_entry(offers.di.as_ref().expect("offered")));
        }
        Source::CudaArrayInterface => {
            let cai = offers.cai.take().expect("offered");
            let found = Found {
                info: parse_cuda_dict(&cai)?,
                keepalive: obj.clone(),
                own_buffer: false,
            };
            (found, None)
        }
        Source::DLPack => {
            let dlpack = offers.dlpack.take().expect("offered");
            (extract_dlpack(obj, &dlpack)?, None)
        }
        Source::BufferProtocol => {
            let view = PyMemoryView::from(obj)?.into_any();
            let info = with_buffer(&view, BUF_RECORDS_RO, parse_buffer)?.py(py)?;
            let found = Found {
                info,
                keepalive: view,
                own_buffer: true,
            };
            (found, None)
        }
    };
    // Whether an interface read its memory through the object's buffer, which then need not
    // describe the array the same way.
    let mut raw_buffer = found.own_buffer;
    let managed = decl.as_ref().is_some_and(|d| d.has_callbacks());
    for &check in precedence::cross_checks(source, managed) {
        match check {
            Source::ArrayInterface => {
                if let Some(ai) = lookup(obj, intern!(py, "__array_interface__"))? {
                    let other = parse_array_interface(obj, &ai)?;
                    raw_buffer |= other.own_buffer;
                    check_agree(py, &mut found.info, &other.info)?;
                }
            }
            Source::CudaArrayInterface => {
                if let Some(cai) = cuda_array_interface_of(obj)? {
                    check_agree(py, &mut found.info, &parse_cuda_dict(&cai)?)?;
                }
            }
            Source::BufferProtocol => {
                if offers.has_buffer
                    && precedence::checks_buffer(found.info.device.kind, raw_buffer)
                {
                    let buffer = with_buffer(obj, BUF_RECORDS_RO, parse_buffer)?.py(py)?;
                    check_agree(py, &mut found.info, &buffer)?;
                }
            }
            other => unreachable!("the core names no {other:?} cross-check"),
        }
    }
    let unused_data_interface = match entry {
        Some(_) => None,
        None => offers.di.map(Box::new),
    };
    Ok(Extracted {
        info: found.info,
        keepalive: found.keepalive,
        data_interface: entry,
        decl,
        unused_data_interface,
        whole_ndarray: false,
    })
}

/// Parses `__array_interface__` (the dict `ai`) of `obj`.
fn parse_array_interface<'py>(
    obj: &Bound<'py, PyAny>,
    ai: &Bound<'py, PyAny>,
) -> PyResult<Found<'py>> {
    let d = IfaceDict::new(ai, Interface::ArrayInterface)?;
    parse_array_dict(obj, &d, Interface::ArrayInterface, ArrayDevice::CPU)
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
