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

use crate::convert::{self, type_error, value_error};
use crate::errors::{raise, to_py, Class, IntoPyResult};
use gridbuf::array_info::Interface;
use gridbuf::array_info::{ArrayDevice, ArrayInfo, ByteOrder, DType, DTypeKind, DeviceKind};
use gridbuf::interface::dlpack::device_type_name;
use gridbuf::interface::{
    ArrayInterfaceDict, BufferView, CudaArrayInterfaceDict, DLDevice, DLManagedTensor,
    DLManagedTensorVersioned, DLPackOwner, DataField,
};
use numpy::npyffi::{self, npy_intp, NPY_ARRAY_WRITEABLE, NPY_TYPES, PY_ARRAY_API};
use numpy::{Complex32, Complex64, PyArrayDescr, PyArrayDescrMethods};
use pyo3::exceptions::{PyKeyError, PyOverflowError, PyTypeError};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyList, PyMapping, PyMemoryView, PyString, PyTuple, PyType};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::mem::MaybeUninit;
use std::sync::Mutex;

/// Most axes a NumPy array may have.
const NPY_MAXDIMS: usize = 64;

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
    whole_ndarray: bool,
}

/// Reads the array `obj` describes, by the rules of this module. A `gridbuf.Field` and an
/// xarray `DataArray` are read through their `__gt_data_interface__`, so that `data_interface`
/// carries their dims and halo; see [`extract_array`] for the faster way that skips it.
pub fn extract<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Extracted<'py>> {
    extract_impl(obj, false)
}

/// Like [`extract`], but a `gridbuf.Field` or an xarray `DataArray` is unwrapped to the array it
/// holds, without building its `__gt_data_interface__` (a Python property): the memory is the
/// same, and `data_interface` is then that of the inner array. Their dims and origin remain
/// readable from `__gt_dims__` and `__gt_origin__` of the object itself.
pub fn extract_array<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Extracted<'py>> {
    extract_impl(obj, true)
}

fn extract_impl<'py>(obj: &Bound<'py, PyAny>, unwrap: bool) -> PyResult<Extracted<'py>> {
    let py = obj.py();
    // SAFETY: `obj` is a live object; the check only compares its type pointer.
    if unsafe { npyffi::PyArray_CheckExact(py, obj.as_ptr()) } != 0 {
        return Ok(Extracted {
            info: from_ndarray(obj)?,
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
    // SAFETY: as above; PyArray_Check only reads the type.
    if unsafe { npyffi::PyArray_Check(py, obj.as_ptr()) } != 0 {
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
                info: from_ndarray(obj)?,
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
struct Found<'py> {
    info: ArrayInfo,
    keepalive: Bound<'py, PyAny>,
    /// Whether the memory was read through the object's own buffer protocol (`data` None),
    /// whose shape and format then need not match the interface's.
    own_buffer: bool,
}

fn extract_generic<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Extracted<'py>> {
    let py = obj.py();
    let di = data_interface_of(obj)?;
    let ai = lookup(obj, intern!(py, "__array_interface__"))?;
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
    if let Some(ai) = &ai {
        let d = IfaceDict::new(ai, "__array_interface__")?;
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
fn check_agree(py: Python<'_>, info: &mut ArrayInfo, other: &ArrayInfo) -> PyResult<()> {
    info.agrees_with(other).py(py)?;
    info.readonly |= other.readonly;
    Ok(())
}

fn no_interface(obj: &Bound<'_, PyAny>) -> PyErr {
    let py = obj.py();
    let mut expected = String::from(
        "expected an array exposing __gt_data_interface__, __array_interface__, \
         __cuda_array_interface__, __dlpack__ or the buffer protocol",
    );
    if obj.hasattr(intern!(py, "__array__")).unwrap_or(false) {
        expected.push_str(
            "; it has only __array__, which may copy, so pass numpy.asarray(obj) to copy it \
             explicitly",
        );
    }
    let type_name = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    raise(
        py,
        Class::Type,
        format!("invalid type for array ({type_name}): {expected}"),
    )
}

// ---------------------------------------------------------------------------------------------
// NumPy arrays
// ---------------------------------------------------------------------------------------------

/// Describes a `numpy.ndarray` (or an instance of a subclass) from its C struct.
fn from_ndarray(obj: &Bound<'_, PyAny>) -> PyResult<ArrayInfo> {
    let py = obj.py();
    let arr = obj.as_ptr().cast::<npyffi::PyArrayObject>();
    // SAFETY: the caller checked that `obj` is a `numpy.ndarray` (or subclass), so it is a live
    // PyArrayObject (kept alive by `obj` for this call) whose `dimensions` and `strides` point
    // to `nd` values each (or may be NULL when `nd` is 0).
    let (data, shape, strides, descr, flags) = unsafe {
        let f = &(*arr).fields;
        let nd = usize::try_from(f.nd).unwrap_or(0);
        let (shape, strides): (&[npy_intp], &[npy_intp]) = if nd == 0 {
            (&[], &[])
        } else {
            (
                std::slice::from_raw_parts(f.dimensions, nd),
                std::slice::from_raw_parts(f.strides, nd),
            )
        };
        (f.data.expose_provenance(), shape, strides, f.descr, f.flags)
    };
    // SAFETY: the dtype of a live array is a valid descriptor, borrowed while `obj` lives.
    let descr = unsafe { Borrowed::from_ptr(py, descr.cast()).cast_unchecked::<PyArrayDescr>() };
    Ok(ArrayInfo {
        ptr: data,
        // NumPy keeps extents non-negative and the whole layout inside isize arithmetic.
        shape: shape.iter().map(|&n| n as usize).collect(),
        strides: strides.to_vec(),
        dtype: dtype_of_descr(&descr)?,
        device: ArrayDevice::CPU,
        readonly: flags & NPY_ARRAY_WRITEABLE == 0,
        interface: Interface::ArrayInterface,
        stream: None,
    })
}

/// The gridbuf dtype of a NumPy dtype; bool, integer, float and complex types only.
fn dtype_of_descr(descr: &Bound<'_, PyArrayDescr>) -> PyResult<DType> {
    let kind = match descr.kind() {
        b'b' => Some(DTypeKind::Bool),
        b'i' => Some(DTypeKind::Int),
        b'u' => Some(DTypeKind::UInt),
        b'f' => Some(DTypeKind::Float),
        b'c' => Some(DTypeKind::Complex),
        _ => None,
    };
    let order = match descr.byteorder() {
        b'<' => ByteOrder::Little,
        b'>' => ByteOrder::Big,
        _ => ByteOrder::Native,
    };
    if let Some(dtype) = kind.and_then(|k| DType::new(k, descr.itemsize(), order).ok()) {
        return Ok(dtype);
    }
    // The slow way, for the message: the core parser names the typestr NumPy writes.
    let py = descr.py();
    let typestr: String = descr.getattr(intern!(py, "str"))?.extract()?;
    Err(
        match DType::from_typestr(&typestr, Interface::ArrayInterface) {
            Err(e) => to_py(py, e),
            Ok(_) => raise(
                py,
                Class::Value,
                format!("invalid dtype {descr}: expected a bool, integer, float or complex dtype"),
            ),
        },
    )
}

/// The NumPy dtype of a gridbuf dtype.
fn descr_for(py: Python<'_>, dtype: DType) -> PyResult<Bound<'_, PyArrayDescr>> {
    use DTypeKind::{Bool, Complex, Float, Int, UInt};
    let native = match (dtype.kind(), dtype.itemsize()) {
        (Bool, _) => PyArrayDescr::of::<bool>(py),
        (Int, 1) => PyArrayDescr::of::<i8>(py),
        (Int, 2) => PyArrayDescr::of::<i16>(py),
        (Int, 4) => PyArrayDescr::of::<i32>(py),
        (Int, _) => PyArrayDescr::of::<i64>(py),
        (UInt, 1) => PyArrayDescr::of::<u8>(py),
        (UInt, 2) => PyArrayDescr::of::<u16>(py),
        (UInt, 4) => PyArrayDescr::of::<u32>(py),
        (UInt, _) => PyArrayDescr::of::<u64>(py),
        (Float, 2) => {
            // SAFETY: NPY_HALF is a built-in type number; the call returns a new reference.
            let ptr =
                unsafe { PY_ARRAY_API.PyArray_DescrFromType(py, NPY_TYPES::NPY_HALF as c_int) };
            // SAFETY: `ptr` is NULL (with an exception set) or a new reference to a dtype.
            unsafe { Bound::from_owned_ptr_or_err(py, ptr.cast())?.cast_into_unchecked() }
        }
        (Float, 4) => PyArrayDescr::of::<f32>(py),
        (Float, _) => PyArrayDescr::of::<f64>(py),
        (Complex, 8) => PyArrayDescr::of::<Complex32>(py),
        (Complex, _) => PyArrayDescr::of::<Complex64>(py),
    };
    let order = match dtype.byteorder() {
        ByteOrder::Native => return Ok(native),
        ByteOrder::Big => b'>',
        ByteOrder::Little => b'<',
    };
    // SAFETY: `native` is a valid dtype; the call returns a new reference or NULL.
    let ptr = unsafe {
        PY_ARRAY_API.PyArray_DescrNewByteorder(py, native.as_dtype_ptr(), order as c_char)
    };
    // SAFETY: `ptr` is NULL (with an exception set) or a new reference to a dtype.
    unsafe { Ok(Bound::from_owned_ptr_or_err(py, ptr.cast())?.cast_into_unchecked()) }
}

/// A NumPy array viewing the memory `info` describes, with `keepalive` as its base.
pub fn to_ndarray<'py>(
    py: Python<'py>,
    info: &ArrayInfo,
    keepalive: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if !info.device.is_host_accessible() {
        return Err(raise(
            py,
            Class::Device,
            format!(
                "cannot view {} memory from {} as a NumPy array: the array lives on a GPU only, \
                 so use gridbuf.as_cupy, or copy it to the host first",
                info.device,
                info.interface.name()
            ),
        ));
    }
    if info.ndim() > NPY_MAXDIMS {
        return Err(raise(
            py,
            Class::Value,
            format!(
                "invalid shape with {} axes from {}: a NumPy array has at most {NPY_MAXDIMS}",
                info.ndim(),
                info.interface.name()
            ),
        ));
    }
    let descr = descr_for(py, info.dtype)?;
    let mut dims: Vec<npy_intp> = info.shape.iter().map(|&n| n as npy_intp).collect();
    let mut strides: Vec<npy_intp> = info.strides.clone();
    // An empty array may have a null pointer; NumPy then allocates a byte of its own.
    let (data, flags) = match info.ptr {
        0 => (std::ptr::null_mut(), 0),
        ptr if info.readonly => (std::ptr::with_exposed_provenance_mut::<c_void>(ptr), 0),
        ptr => (
            std::ptr::with_exposed_provenance_mut::<c_void>(ptr),
            NPY_ARRAY_WRITEABLE,
        ),
    };
    // SAFETY: `dims` and `strides` hold `ndim` values each (NumPy copies them), and the
    // description was validated: every element lies in host-accessible memory that `keepalive`
    // keeps alive, and the byte span fits an isize. The descriptor reference is stolen by
    // NewFromDescr.
    let array = unsafe {
        let subtype = npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type);
        let ptr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            subtype,
            descr.into_dtype_ptr(),
            dims.len() as c_int,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            data,
            flags,
            std::ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(py, ptr)?
    };
    if data.is_null() {
        if info.readonly {
            array
                .getattr(intern!(py, "flags"))?
                .setattr(intern!(py, "writeable"), false)?;
        }
        return Ok(array);
    }
    // SAFETY: `array` is the fresh array created above; SetBaseObject steals the reference to
    // `keepalive` (also on failure), which makes it live at least as long as the array.
    if unsafe {
        PY_ARRAY_API.PyArray_SetBaseObject(py, array.as_ptr().cast(), keepalive.into_ptr())
    } < 0
    {
        return Err(PyErr::fetch(py));
    }
    Ok(array)
}

/// Whether the type of `obj` (an ndarray subclass) replaces NumPy's `__array_interface__`.
fn overrides_array_interface(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static NUMPYS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = obj.py();
    let name = intern!(py, "__array_interface__");
    let numpys = NUMPYS.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        // SAFETY: NumPy's array type object is static; the pointer is borrowed.
        let ndarray = unsafe {
            let ptr = npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type);
            PyType::from_borrowed_type_ptr(py, ptr)
        };
        Ok(ndarray.getattr(name)?.unbind())
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

fn sys_modules(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
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

// ---------------------------------------------------------------------------------------------
// Wrappers: gridbuf.Field and xarray.DataArray
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Dict-shaped interfaces
// ---------------------------------------------------------------------------------------------

/// A dict-shaped interface being read; `name` is how messages call it, such as
/// `__array_interface__`, and keys are named `__array_interface__['shape']`.
struct IfaceDict<'a, 'py> {
    obj: &'a Bound<'py, PyAny>,
    dict: Option<&'a Bound<'py, PyDict>>,
    name: &'a str,
}

impl<'a, 'py> IfaceDict<'a, 'py> {
    fn new(obj: &'a Bound<'py, PyAny>, name: &'a str) -> PyResult<Self> {
        if let Ok(dict) = obj.cast::<PyDict>() {
            return Ok(IfaceDict {
                obj,
                dict: Some(dict),
                name,
            });
        }
        if obj.cast::<PyMapping>().is_ok() {
            return Ok(IfaceDict {
                obj,
                dict: None,
                name,
            });
        }
        Err(type_error(name, obj, "expected a dict"))
    }

    fn field(&self, key: &Bound<'py, PyString>) -> String {
        format!("{}['{}']", self.name, key.to_string_lossy())
    }

    /// The value of `key`; `None` when absent or None.
    fn get(&self, key: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let value = match self.dict {
            Some(dict) => dict.get_item(key)?,
            None => match self.obj.get_item(key) {
                Ok(v) => Some(v),
                Err(e) if e.is_instance_of::<PyKeyError>(self.obj.py()) => None,
                Err(e) => return Err(e),
            },
        };
        Ok(value.filter(|v| !v.is_none()))
    }

    fn int(&self, key: &Bound<'py, PyString>) -> PyResult<Option<i64>> {
        self.get(key)?
            .map(|v| to_i64(&v, &self.field(key), &v, "expected an int"))
            .transpose()
    }

    fn ints(&self, key: &Bound<'py, PyString>) -> PyResult<Option<Vec<i64>>> {
        const EXPECTED: &str = "expected a tuple of ints";
        let Some(v) = self.get(key)? else {
            return Ok(None);
        };
        let field = self.field(key);
        let items = match (v.cast::<PyTuple>(), v.cast::<PyList>()) {
            (Ok(t), _) => t.iter().collect::<Vec<_>>(),
            (_, Ok(l)) => l.iter().collect(),
            _ => return Err(type_error(&field, &v, EXPECTED)),
        };
        items
            .iter()
            .map(|item| to_i64(item, &field, &v, EXPECTED))
            .collect::<PyResult<Vec<i64>>>()
            .map(Some)
    }

    fn string(&self, key: &Bound<'py, PyString>) -> PyResult<Option<String>> {
        let Some(v) = self.get(key)? else {
            return Ok(None);
        };
        match v.cast::<PyString>() {
            Ok(s) => Ok(Some(s.to_str()?.to_owned())),
            Err(_) => Err(type_error(
                &self.field(key),
                &v,
                "expected a str such as \"<f8\"",
            )),
        }
    }

    /// `descr` as (name, typestr) pairs; anything else is refused here with the core's words.
    fn descr(&self) -> PyResult<Option<Vec<(String, String)>>> {
        let key = intern!(self.obj.py(), "descr");
        let Some(v) = self.get(key)? else {
            return Ok(None);
        };
        let pair = |item: Bound<'py, PyAny>| -> Option<(String, String)> {
            let t = item.cast_into::<PyTuple>().ok()?;
            if t.len() != 2 {
                return None;
            }
            let name = t.get_item(0).ok()?.cast_into::<PyString>().ok()?;
            let typestr = t.get_item(1).ok()?.cast_into::<PyString>().ok()?;
            Some((
                name.to_str().ok()?.to_owned(),
                typestr.to_str().ok()?.to_owned(),
            ))
        };
        let items: Option<Vec<(String, String)>> = match v.cast::<PyList>() {
            Ok(list) => list.iter().map(pair).collect(),
            Err(_) => None,
        };
        items.map(Some).ok_or_else(|| {
            value_error(
                &self.field(key),
                &v,
                "expected [(\"\", typestr)], one unnamed field agreeing with the typestr; \
                 structured dtypes are not supported",
            )
        })
    }

    /// `data` as a `(pointer, read_only)` tuple; `None` when absent or None.
    fn pointer_tuple(&self, v: &Bound<'py, PyAny>, expected: &str) -> PyResult<(u64, bool)> {
        let field = self.field(intern!(self.obj.py(), "data"));
        let t = v
            .cast::<PyTuple>()
            .ok()
            .filter(|t| t.len() == 2)
            .ok_or_else(|| type_error(&field, v, expected))?;
        let ptr = t.get_item(0)?;
        let ptr = if ptr.is_instance_of::<PyBool>() {
            return Err(type_error(&field, v, expected));
        } else {
            match ptr.extract::<i64>() {
                Ok(p) if p < 0 => {
                    return Err(value_error(&field, v, "expected a non-negative address"))
                }
                Ok(p) => p as u64,
                Err(_) => ptr.extract::<u64>().map_err(|e| {
                    if e.is_instance_of::<PyOverflowError>(v.py()) {
                        overflow(v.py(), &field, v, "the pointer")
                    } else {
                        type_error(&field, v, expected)
                    }
                })?,
            }
        };
        Ok((ptr, t.get_item(1)?.is_truthy()?))
    }
}

fn repr(obj: &Bound<'_, PyAny>) -> String {
    let s = obj
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unprintable>".into());
    if s.chars().count() > 200 {
        format!("{}...", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}

fn overflow(py: Python<'_>, field: &str, whole: &Bound<'_, PyAny>, what: &str) -> PyErr {
    raise(
        py,
        Class::Overflow,
        format!(
            "{field} {} is too large: {what} overflows the address space",
            repr(whole)
        ),
    )
}

/// An int (not a bool) that fits an i64; `whole` is the value the message shows.
fn to_i64(
    item: &Bound<'_, PyAny>,
    field: &str,
    whole: &Bound<'_, PyAny>,
    expected: &str,
) -> PyResult<i64> {
    if item.is_instance_of::<PyBool>() {
        return Err(type_error(field, whole, expected));
    }
    item.extract::<i64>().map_err(|e| {
        if e.is_instance_of::<PyOverflowError>(item.py()) {
            overflow(item.py(), field, whole, "a value")
        } else {
            type_error(field, whole, expected)
        }
    })
}

/// Parses a dict with array-interface keys (`__array_interface__`, or a data-interface entry
/// when `interface` is `DataInterface`) describing memory on `device`. `data` None means the
/// memory of `obj`'s buffer protocol.
fn parse_array_dict<'py>(
    obj: &Bound<'py, PyAny>,
    d: &IfaceDict<'_, 'py>,
    interface: Interface,
    device: ArrayDevice,
) -> PyResult<Found<'py>> {
    let py = obj.py();
    let mut dict = ArrayInterfaceDict {
        version: d.int(intern!(py, "version"))?,
        shape: d.ints(intern!(py, "shape"))?,
        typestr: d.string(intern!(py, "typestr"))?,
        descr: d.descr()?,
        strides: d.ints(intern!(py, "strides"))?,
        offset: d.int(intern!(py, "offset"))?,
        has_mask: d.get(intern!(py, "mask"))?.is_some(),
        data: DataField::None,
    };
    const EXPECTED: &str =
        "expected a (pointer, read_only) tuple, None, or an object exposing the buffer protocol";
    let data_key = intern!(py, "data");
    let host = device.is_host_accessible();
    let (keepalive, own_buffer) = match d.get(data_key)? {
        Some(v) if v.is_instance_of::<PyTuple>() || !host => {
            let (ptr, readonly) = d.pointer_tuple(&v, EXPECTED)?;
            dict.data = DataField::Pointer { ptr, readonly };
            (obj.clone(), false)
        }
        None if !host => {
            return Err(raise(
                py,
                Class::Value,
                format!(
                    "{} is None: device memory has no buffer protocol to read it through; \
                     expected a (pointer, read_only) tuple",
                    d.field(data_key)
                ),
            ))
        }
        data => {
            let source = data.as_ref().unwrap_or(obj);
            // SAFETY: `source` is a live object; the check only reads its type's buffer slot.
            if unsafe { ffi::PyObject_CheckBuffer(source.as_ptr()) } == 0 {
                let why = match data {
                    None => {
                        "None, and the object has no buffer protocol to read the memory \
                             through"
                    }
                    Some(_) => "an object without the buffer protocol",
                };
                return Err(raise(
                    py,
                    Class::Type,
                    format!("invalid type for {} ({why}): {EXPECTED}", d.field(data_key)),
                ));
            }
            let view = PyMemoryView::from(source)?.into_any();
            let (ptr, len, readonly) = with_buffer(&view, ffi::PyBUF_SIMPLE, |b| {
                (
                    b.buf.expose_provenance(),
                    b.len.max(0) as usize,
                    b.readonly != 0,
                )
            })
            .map_err(|e| {
                raise(
                    py,
                    Class::Value,
                    format!(
                        "invalid {} {}: expected a contiguous buffer ({e})",
                        d.field(data_key),
                        repr(source)
                    ),
                )
            })?;
            dict.data = DataField::Buffer { ptr, len, readonly };
            (view, data.is_none())
        }
    };
    let info = dict.parse_as(interface, device).py(py)?;
    Ok(Found {
        info,
        keepalive,
        own_buffer,
    })
}

/// The `__cuda_array_interface__` of `obj`, if it has one.
fn cuda_array_interface_of<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    lookup(obj, intern!(obj.py(), "__cuda_array_interface__"))
}

fn parse_cuda_dict(cai: &Bound<'_, PyAny>) -> PyResult<ArrayInfo> {
    let py = cai.py();
    let d = IfaceDict::new(cai, "__cuda_array_interface__")?;
    let data = match d.get(intern!(py, "data"))? {
        None => None,
        Some(v) => Some(d.pointer_tuple(&v, "expected a (device pointer, read_only) tuple")?),
    };
    CudaArrayInterfaceDict {
        version: d.int(intern!(py, "version"))?,
        shape: d.ints(intern!(py, "shape"))?,
        typestr: d.string(intern!(py, "typestr"))?,
        descr: d.descr()?,
        data,
        strides: d.ints(intern!(py, "strides"))?,
        has_mask: d.get(intern!(py, "mask"))?.is_some(),
        stream: d.int(intern!(py, "stream"))?,
    }
    .parse()
    .py(py)
}

// ---------------------------------------------------------------------------------------------
// The data interface
// ---------------------------------------------------------------------------------------------

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

/// The host-memory entry of a data interface (key `None`, else `"cpu"`).
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

/// The GPU-memory entry of a data interface (key `"gpu"`, else `"cuda"`).
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

fn no_entry(di: &DataInterface<'_>) -> PyErr {
    let py = di.mapping.py();
    let keys = di
        .mapping
        .call_method0(intern!(py, "keys"))
        .and_then(|k| py.import("builtins")?.getattr("list")?.call1((k,)))
        .map(|k| repr(&k))
        .unwrap_or_else(|_| "?".into());
    raise(
        py,
        Class::Value,
        format!(
            "invalid {} with the device keys {keys}: expected an entry for None or \"cpu\" (host \
             memory), or for \"gpu\" or \"cuda\" (GPU memory)",
            di.attr
        ),
    )
}

/// Parses and checks one data-interface entry (host memory when `host`, else GPU memory).
fn parse_entry<'py>(
    obj: &Bound<'py, PyAny>,
    di: &DataInterface<'py>,
    entry: &Bound<'py, PyAny>,
    host: bool,
) -> PyResult<Found<'py>> {
    let py = obj.py();
    let result = (|| {
        let name = Interface::DataInterface.name();
        let d = IfaceDict::new(entry, name)?;
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
        Some(s) if s <= 0 => Err(raise(
            d.obj.py(),
            Class::Value,
            format!(
                "invalid {} {s}: expected None, 1 (legacy default stream), 2 (per-thread default \
                 stream) or a positive stream handle",
                d.field(key)
            ),
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
        gridbuf::halo::check_fits(&info.shape, &pairs, None, &field).py(py)?;
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

// ---------------------------------------------------------------------------------------------
// The buffer protocol
// ---------------------------------------------------------------------------------------------

/// Acquires `obj`'s buffer with `flags`, calls `f` on it and releases it.
fn with_buffer<R>(
    obj: &Bound<'_, PyAny>,
    flags: c_int,
    f: impl FnOnce(&ffi::Py_buffer) -> R,
) -> PyResult<R> {
    struct Release(ffi::Py_buffer);
    impl Drop for Release {
        fn drop(&mut self) {
            // SAFETY: the view was filled by a successful PyObject_GetBuffer and is released
            // exactly once, here.
            unsafe { ffi::PyBuffer_Release(&mut self.0) }
        }
    }
    let mut view = MaybeUninit::<ffi::Py_buffer>::uninit();
    // SAFETY: `obj` is a live object and `view` is writable storage for a Py_buffer.
    if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), flags) } < 0 {
        return Err(PyErr::fetch(obj.py()));
    }
    // SAFETY: PyObject_GetBuffer succeeded, so it filled the view.
    let view = Release(unsafe { view.assume_init() });
    Ok(f(&view.0))
}

/// Describes an acquired buffer (requested with `PyBUF_RECORDS_RO`).
fn parse_buffer(view: &ffi::Py_buffer) -> gridbuf::Result<ArrayInfo> {
    let ndim = usize::try_from(view.ndim).unwrap_or(0);
    // SAFETY: the exporter fills `format` with NULL or a C string, and `shape`, `strides` with
    // NULL or `ndim` values each, valid until the view is released (after this call).
    let (format, shape, strides) = unsafe {
        let seq = |p: *mut ffi::Py_ssize_t| {
            if ndim == 0 {
                Some(Vec::new())
            } else if p.is_null() {
                None
            } else {
                Some(std::slice::from_raw_parts(p, ndim).to_vec())
            }
        };
        let format = (!view.format.is_null())
            .then(|| CStr::from_ptr(view.format).to_string_lossy().into_owned());
        (format, seq(view.shape), seq(view.strides))
    };
    let mut bv = BufferView {
        ptr: view.buf.expose_provenance(),
        len: view.len.max(0) as usize,
        readonly: view.readonly != 0,
        itemsize: view.itemsize.max(0) as usize,
        format,
        shape,
        strides,
        has_suboffsets: !view.suboffsets.is_null(),
    };
    let first = bv.parse();
    if first.is_ok() {
        return first;
    }
    // Older ctypes writes native sizes after an explicit byte order ("<l" of 8 bytes); read
    // such a format in native-size mode when the order is the host's.
    let host = if cfg!(target_endian = "little") {
        '<'
    } else {
        '>'
    };
    if let Some(rest) = bv.format.as_deref().and_then(|f| f.strip_prefix(host)) {
        bv.format = Some(format!("@{rest}"));
        if let Ok(info) = bv.parse() {
            return Ok(info);
        }
    }
    first
}

// ---------------------------------------------------------------------------------------------
// DLPack
// ---------------------------------------------------------------------------------------------

/// Owns a DLPack tensor taken from a producer's capsule, and the producer: the base of every
/// array gridbuf makes from it. Dropping it calls the producer's deleter.
#[pyclass(frozen, module = "gridbuf", name = "DLPackOwner")]
pub struct PyDLPackOwner {
    // Declared first, so dropped first: the deleter runs while the producer is still alive.
    owner: Mutex<DLPackOwner>,
    producer: Py<PyAny>,
}

impl PyDLPackOwner {
    fn with<R>(&self, f: impl FnOnce(&DLPackOwner) -> R) -> R {
        f(&self.owner.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[pymethods]
impl PyDLPackOwner {
    /// The object whose ``__dlpack__`` gave the tensor.
    #[getter]
    fn producer(&self, py: Python<'_>) -> Py<PyAny> {
        self.producer.clone_ref(py)
    }

    /// The producer's DLPack version as ``(major, minor)``; None for a legacy capsule.
    #[getter]
    fn version(&self) -> Option<(u32, u32)> {
        self.with(|o| o.version().map(|v| (v.major, v.minor)))
    }

    /// Whether the producer flagged the tensor read-only or copied.
    #[getter]
    fn readonly(&self) -> bool {
        self.with(|o| o.is_readonly() || o.is_copied())
    }

    fn __repr__(&self) -> String {
        let version = match self.version() {
            Some((major, minor)) => format!("{major}.{minor}"),
            None => "legacy".into(),
        };
        format!(
            "DLPackOwner(version={version}, readonly={})",
            if self.readonly() { "True" } else { "False" }
        )
    }
}

/// Reads the array through `__dlpack__`, taking ownership of the tensor.
fn extract_dlpack<'py>(
    obj: &Bound<'py, PyAny>,
    dlpack: &Bound<'py, PyAny>,
) -> PyResult<Found<'py>> {
    let py = obj.py();
    let device = match lookup(obj, intern!(py, "__dlpack_device__"))? {
        None => None,
        Some(f) => {
            let value = f.call0()?;
            let (device_type, device_id): (i32, i32) = value.extract().map_err(|_| {
                type_error(
                    "__dlpack_device__()",
                    &value,
                    "expected a (device_type, device_id) tuple of ints",
                )
            })?;
            let device = DLDevice {
                device_type,
                device_id,
            };
            device.to_array_device().map_err(|_| {
                raise(
                    py,
                    Class::Value,
                    format!(
                        "invalid __dlpack_device__() device type {device_type} ({}): gridbuf \
                         reads kDLCPU (1), kDLCUDA (2), kDLCUDAHost (3), kDLROCM (10), \
                         kDLROCMHost (11) and kDLCUDAManaged (13)",
                        device_type_name(device_type)
                    ),
                )
            })?;
            Some(device)
        }
    };
    let kwargs = PyDict::new(py);
    kwargs.set_item(intern!(py, "max_version"), (1, 0))?;
    let capsule = match dlpack.call((), Some(&kwargs)) {
        Ok(capsule) => capsule,
        // A producer older than DLPack 1.0 knows no max_version.
        Err(e) if e.is_instance_of::<PyTypeError>(py) => dlpack.call0()?,
        Err(e) => return Err(e),
    };
    let owner = take_capsule(&capsule)?;
    let mut info = owner.array_info().py(py)?;
    info.readonly |= owner.is_copied();
    if let Some(device) = device {
        if device.to_array_device().ok() != Some(info.device) {
            return Err(raise(
                py,
                Class::Value,
                format!(
                    "invalid __dlpack__ DLTensor.device {}: expected {}, the device \
                     __dlpack_device__() gives",
                    info.device,
                    device
                        .to_array_device()
                        .map(|d| d.to_string())
                        .unwrap_or_default()
                ),
            ));
        }
    }
    let keepalive = Bound::new(
        py,
        PyDLPackOwner {
            owner: Mutex::new(owner),
            producer: obj.clone().unbind(),
        },
    )?;
    Ok(Found {
        info,
        keepalive: keepalive.into_any(),
        own_buffer: false,
    })
}

/// Takes the managed tensor out of a DLPack capsule and marks the capsule used.
fn take_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<DLPackOwner> {
    let py = capsule.py();
    let cap = capsule.as_ptr();
    // SAFETY: `cap` is a live object; the check reads its type only.
    if unsafe { ffi::PyCapsule_CheckExact(cap) } == 0 {
        return Err(type_error(
            "__dlpack__()",
            &capsule.get_type().into_any(),
            "expected a PyCapsule named \"dltensor_versioned\" or \"dltensor\"",
        ));
    }
    // SAFETY: `cap` is a capsule; its name is NULL or a C string that lives as long as it.
    let name_ptr = unsafe { ffi::PyCapsule_GetName(cap) };
    let name = if name_ptr.is_null() {
        None
    } else {
        // SAFETY: non-NULL, so a NUL-terminated string owned by the capsule (alive here).
        Some(unsafe { CStr::from_ptr(name_ptr) }.to_bytes().to_vec())
    };
    let (used, versioned): (&'static CStr, bool) = match name.as_deref() {
        Some(b"dltensor_versioned") => (c"used_dltensor_versioned", true),
        Some(b"dltensor") => (c"used_dltensor", false),
        Some(b"used_dltensor_versioned" | b"used_dltensor") => {
            return Err(raise(
                py,
                Class::Value,
                "invalid __dlpack__() capsule: it was already consumed (its name starts with \
                 \"used_\"); expected a fresh capsule from every __dlpack__() call",
            ))
        }
        other => {
            let shown = other
                .map(|n| format!("{:?}", String::from_utf8_lossy(n)))
                .unwrap_or_else(|| "without a name".into());
            return Err(raise(
                py,
                Class::Value,
                format!(
                    "invalid __dlpack__() capsule {shown}: expected a capsule named \
                     \"dltensor_versioned\" or \"dltensor\""
                ),
            ));
        }
    };
    // SAFETY: `cap` is a capsule whose name is `name_ptr` (checked above).
    let ptr = unsafe { ffi::PyCapsule_GetPointer(cap, name_ptr) };
    if ptr.is_null() {
        return Err(PyErr::take(py).unwrap_or_else(|| {
            raise(
                py,
                Class::Value,
                "invalid __dlpack__() capsule: it holds a null pointer",
            )
        }));
    }
    // Renaming tells the capsule's destructor that the consumer owns the tensor now. The new
    // name is a static string, so it outlives the capsule.
    // SAFETY: `cap` is a live capsule.
    if unsafe { ffi::PyCapsule_SetName(cap, used.as_ptr()) } < 0 {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: the capsule held a managed tensor of the kind its name says, and after the
    // rename nothing else calls its deleter: ownership passes to the DLPackOwner. DLPack
    // producers' deleters may run on any thread (the Python ones take the GIL themselves).
    let owner = unsafe {
        if versioned {
            DLPackOwner::from_versioned(ptr.cast::<DLManagedTensorVersioned>())
        } else {
            DLPackOwner::from_legacy(ptr.cast::<DLManagedTensor>())
        }
    };
    owner.py(py)
}

// ---------------------------------------------------------------------------------------------
// Python API
// ---------------------------------------------------------------------------------------------

/// What gridbuf knows about an array: address, shape, byte strides, dtype, device, read-only
/// flag and the interface it came from. Holds a reference to the object that keeps the memory
/// alive, so ``ptr`` stays valid while this object lives.
#[pyclass(frozen, module = "gridbuf", name = "ArrayInfo")]
pub struct PyArrayInfo {
    info: ArrayInfo,
    owner: Py<PyAny>,
}

#[pymethods]
impl PyArrayInfo {
    /// Address of the element at index zero (not necessarily the lowest address).
    #[getter]
    fn ptr(&self) -> usize {
        self.info.ptr
    }
    /// Extent of every axis.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.info.shape)
    }
    /// Byte step along every axis (may be negative or zero).
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.info.strides)
    }
    /// Number of axes.
    #[getter]
    fn ndim(&self) -> usize {
        self.info.ndim()
    }
    /// The element type as a NumPy dtype.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDescr>> {
        descr_for(py, self.info.dtype)
    }
    /// The array-interface typestr of the element type, such as ``"<f8"``.
    #[getter]
    fn typestr(&self) -> String {
        self.info.dtype.to_typestr()
    }
    /// Size of one element in bytes.
    #[getter]
    fn itemsize(&self) -> usize {
        self.info.dtype.itemsize()
    }
    /// Number of bytes of the elements (size times itemsize).
    #[getter]
    fn nbytes(&self, py: Python<'_>) -> PyResult<usize> {
        self.info.nbytes().py(py)
    }
    /// Where the memory lives: ``"cpu"``, ``"cuda"``, ``"cuda_host"``, ``"cuda_managed"``,
    /// ``"rocm"`` or ``"rocm_host"``.
    #[getter]
    fn device(&self) -> &'static str {
        self.info.device.kind.name()
    }
    /// The device number; None where the interface does not say (CUDA array interface).
    #[getter]
    fn device_id(&self) -> Option<i32> {
        self.info.device.id
    }
    /// Whether the producer forbids writing.
    #[getter]
    fn readonly(&self) -> bool {
        self.info.readonly
    }
    /// The interface the description came from, such as ``"__array_interface__"``.
    #[getter]
    fn interface(&self) -> &'static str {
        self.info.interface.name()
    }
    /// The CUDA stream the producer last used the data on (CUDA array interface v3), or None.
    #[getter]
    fn stream(&self) -> Option<i64> {
        self.info.stream
    }
    /// The object that keeps the memory alive (the array, a memoryview, a DLPackOwner, ...).
    #[getter]
    fn owner(&self, py: Python<'_>) -> Py<PyAny> {
        self.owner.clone_ref(py)
    }

    fn __repr__(&self) -> String {
        let stream = match self.info.stream {
            Some(s) => format!(", stream={s}"),
            None => String::new(),
        };
        format!(
            "ArrayInfo(ptr={:#x}, shape={}, strides={}, typestr='{}', device='{}', device_id={}, \
             readonly={}, interface='{}'{stream})",
            self.info.ptr,
            py_tuple(&self.info.shape),
            py_tuple(&self.info.strides),
            self.info.dtype.to_typestr(),
            self.info.device.kind.name(),
            self.info
                .device
                .id
                .map_or_else(|| "None".to_owned(), |id| id.to_string()),
            if self.info.readonly { "True" } else { "False" },
            self.info.interface.name(),
        )
    }
}

fn py_tuple<T: std::fmt::Display>(values: &[T]) -> String {
    let items: Vec<String> = values.iter().map(T::to_string).collect();
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

#[doc = "Describe the memory of an array without touching it.

Accepts NumPy arrays, ``gridbuf.Field``, xarray DataArrays, objects with
``__gt_data_interface__``, ``__array_interface__`` (version 3), ``__cuda_array_interface__``,
``__dlpack__`` or the buffer protocol. When an object exposes several of these, they must describe
the same array.

Parameters
----------
obj : array_like
    The array.

Returns
-------
ArrayInfo
    Pointer, shape, byte strides, dtype, device, read-only flag and interface.

Raises
------
GridbufTypeError
    The object exposes no interface gridbuf reads, or an interface holds a value of the wrong type.
GridbufValueError
    An interface is invalid (missing key, unsupported dtype, null pointer, ...), or two interfaces
    of the object disagree.
GridbufOverflowError
    Shape, strides or offset overflow the address space."]
#[pyfunction]
pub fn array_info(obj: &Bound<'_, PyAny>) -> PyResult<PyArrayInfo> {
    let ex = extract_array(obj)?;
    Ok(PyArrayInfo {
        info: ex.info,
        owner: ex.keepalive.unbind(),
    })
}

#[doc = "View an array's memory as a NumPy array, without copying.

The result's ``base`` keeps the source (or the DLPack tensor taken from it) alive; a read-only
source gives a read-only array. A NumPy array is returned as it is, and so is the NumPy array a
``gridbuf.Field`` or an xarray DataArray holds.

Parameters
----------
obj : array_like
    Anything :func:`array_info` accepts, in host-accessible memory.

Returns
-------
numpy.ndarray
    A view of the same memory.

Raises
------
GridbufDeviceError
    The memory lives on a GPU only.
GridbufTypeError, GridbufValueError, GridbufOverflowError
    As for :func:`array_info`."]
#[pyfunction]
pub fn as_numpy<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let ex = extract_array(obj)?;
    if ex.whole_ndarray {
        return Ok(ex.keepalive);
    }
    to_ndarray(obj.py(), &ex.info, ex.keepalive)
}

/// [`extract`] for tests: the description and the data-interface entry it came from.
#[pyfunction]
#[pyo3(name = "_extract")]
pub fn extract_py<'py>(
    obj: &Bound<'py, PyAny>,
) -> PyResult<(PyArrayInfo, Option<Bound<'py, PyAny>>)> {
    let ex = extract(obj)?;
    let info = PyArrayInfo {
        info: ex.info,
        owner: ex.keepalive.unbind(),
    };
    Ok((info, ex.data_interface))
}
