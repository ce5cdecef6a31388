//! The NumPy interop every binding module uses: NumPy arrays from raw parts, descriptions of
//! NumPy arrays, conversion between NumPy dtypes and the core's [`DType`], and releasing the GIL
//! around native work. Nothing else in the binding crate calls NumPy's C API.

use crate::errors::to_py;
use gridbuf::arrays::array_info::{ArrayDevice, ArrayInfo, ByteOrder, DType, DTypeKind, Interface};
use gridbuf::{AxisVec, Error};
use numpy::npyffi::{self, npy_intp, NPY_ARRAY_WRITEABLE, NPY_TYPES, PY_ARRAY_API};
use numpy::{
    Complex32, Complex64, PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use std::ffi::{c_char, c_int, c_void};

/// Most axes a NumPy array may have.
pub(crate) const NPY_MAXDIMS: usize = 64;

/// Whether `obj` is exactly a `numpy.ndarray` (not a subclass).
#[inline]
pub(crate) fn is_exact_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `obj` is a live object; the check only compares its type pointer with NumPy's.
    unsafe { npyffi::PyArray_CheckExact(obj.py(), obj.as_ptr()) != 0 }
}

/// `obj` as a NumPy array where it is exactly a `numpy.ndarray` (not a subclass).
#[inline]
pub(crate) fn as_exact_ndarray<'a, 'py>(
    obj: &'a Bound<'py, PyAny>,
) -> Option<&'a Bound<'py, PyUntypedArray>> {
    // SAFETY: the object was just checked to be a `numpy.ndarray`.
    is_exact_ndarray(obj).then(|| unsafe { obj.cast_unchecked::<PyUntypedArray>() })
}

/// `obj` as a NumPy array where it is a `numpy.ndarray` or an instance of a subclass.
#[inline]
pub(crate) fn as_ndarray<'a, 'py>(
    obj: &'a Bound<'py, PyAny>,
) -> Option<&'a Bound<'py, PyUntypedArray>> {
    // SAFETY: `obj` is a live object; the check only reads its type.
    let is_array = unsafe { npyffi::PyArray_Check(obj.py(), obj.as_ptr()) != 0 };
    // SAFETY: the object was just checked to be a `numpy.ndarray` or a subclass instance.
    is_array.then(|| unsafe { obj.cast_unchecked::<PyUntypedArray>() })
}

/// The type `numpy.ndarray`.
pub(crate) fn ndarray_type(py: Python<'_>) -> Bound<'_, PyType> {
    // SAFETY: NumPy's array type object is static; the pointer is borrowed, and a new strong
    // reference to it is made.
    unsafe {
        let ptr = npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type);
        PyType::from_borrowed_type_ptr(py, ptr)
    }
}

/// The attribute `name` of the `numpy` module (imported once).
pub(crate) fn numpy_attr<'py>(py: Python<'py>, name: &'static str) -> PyResult<Bound<'py, PyAny>> {
    static NUMPY: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    NUMPY
        .get_or_try_init(py, || py.import("numpy").map(Bound::unbind))?
        .bind(py)
        .getattr(name)
}

/// The address of element 0 of a NumPy array.
#[inline]
pub(crate) fn data_ptr(array: &Bound<'_, PyUntypedArray>) -> *mut u8 {
    // SAFETY: `array` is a live NumPy array; reading its data pointer field is sound.
    unsafe { (*array.as_array_ptr()).fields.data.cast() }
}

/// Whether a NumPy array may be written through (its WRITEABLE flag).
#[inline]
pub(crate) fn is_writeable(array: &Bound<'_, PyUntypedArray>) -> bool {
    // SAFETY: `array` is a live NumPy array; reading its flags field is sound.
    unsafe { (*array.as_array_ptr()).fields.flags & NPY_ARRAY_WRITEABLE != 0 }
}

/// Describes a `numpy.ndarray` (or an instance of a subclass) from its C struct.
#[inline]
pub(crate) fn array_info_of_ndarray(array: &Bound<'_, PyUntypedArray>) -> PyResult<ArrayInfo> {
    let py = array.py();
    let arr = array.as_array_ptr();
    // SAFETY: `array` is a live PyArrayObject (kept alive by the caller for this call) whose
    // `dimensions` and `strides` point to `nd` values each (or may be NULL when `nd` is 0).
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
    // SAFETY: the dtype of a live array is a valid descriptor, borrowed while `array` lives.
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

/// The core dtype of a NumPy dtype; bool, integer, float and complex types only.
#[inline]
pub(crate) fn dtype_of_descr(descr: &Bound<'_, PyArrayDescr>) -> PyResult<DType> {
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
            Ok(_) => to_py(py, Error::unsupported_dtype(descr.to_string())),
        },
    )
}

/// The NumPy dtype of a core dtype.
pub(crate) fn descr_of_dtype(py: Python<'_>, dtype: DType) -> PyResult<Bound<'_, PyArrayDescr>> {
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

/// A NumPy array of `descr` elements at `data` with `shape` and byte `strides`, whose `base`
/// is `owner`; writeable where `writeable`. A null `data` (only valid for an empty array) gives
/// an array over a byte of NumPy's own, and `owner` is then not attached.
///
/// # Safety
///
/// Every element that `shape` and `strides` address from `data` must lie in memory that holds
/// `descr` elements, stays allocated as long as `owner` lives and, where `writeable`, may be
/// written through the array; `shape` and `strides` must have the same length, at most
/// [`NPY_MAXDIMS`].
pub(crate) unsafe fn array_from_raw_parts<'py>(
    py: Python<'py>,
    descr: Bound<'py, PyArrayDescr>,
    shape: impl IntoIterator<Item = usize>,
    strides: impl IntoIterator<Item = isize>,
    data: *mut c_void,
    writeable: bool,
    owner: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut dims: AxisVec<npy_intp> = shape.into_iter().map(|n| n as npy_intp).collect();
    let mut strides: AxisVec<npy_intp> = strides.into_iter().collect();
    let flags = if writeable && !data.is_null() {
        NPY_ARRAY_WRITEABLE
    } else {
        0
    };
    // SAFETY: `dims` and `strides` hold one value per axis (NumPy copies both), and by the
    // caller's contract every element they address from `data` is valid memory of `descr`
    // elements. The descriptor reference is stolen by NewFromDescr.
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
        if !writeable {
            array
                .getattr(intern!(py, "flags"))?
                .setattr(intern!(py, "writeable"), false)?;
        }
        return Ok(array);
    }
    // SAFETY: `array` is the fresh array created above; SetBaseObject steals the reference to
    // `owner` (also on failure), which makes it live at least as long as the array.
    if unsafe { PY_ARRAY_API.PyArray_SetBaseObject(py, array.as_ptr().cast(), owner.into_ptr()) }
        < 0
    {
        return Err(PyErr::fetch(py));
    }
    Ok(array)
}

/// Runs native `work` with the GIL released where `release`, else with the GIL held. Release it
/// for work long enough to pay for releasing and re-taking it (microseconds), so that other
/// Python threads run meanwhile; `work` must not touch Python objects.
pub(crate) fn detach_if<T: Send>(
    py: Python<'_>,
    release: bool,
    work: impl FnOnce() -> T + Send,
) -> T {
    if release {
        py.detach(work)
    } else {
        work()
    }
}
