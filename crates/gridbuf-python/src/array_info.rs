//! The Python API of array descriptions: the `ArrayInfo` class, `array_info`, `as_numpy` and
//! the test hook `_extract`.

use crate::errors::{to_py, IntoPyResult};
use crate::extract::{extract, extract_array};
use crate::numpy_interop::{array_from_raw_parts, descr_of_dtype, NPY_MAXDIMS};
use gridbuf::arrays::array_info::ArrayInfo;
use gridbuf::error::format_tuple;
use gridbuf::Error;
use numpy::PyArrayDescr;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A NumPy array viewing the memory `info` describes, with `keepalive` as its base.
pub fn to_ndarray<'py>(
    py: Python<'py>,
    info: &ArrayInfo,
    keepalive: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if !info.device.is_host_accessible() {
        let err = Error::not_host_accessible(info.device, info.interface.name());
        return Err(to_py(py, err));
    }
    if info.ndim() > NPY_MAXDIMS {
        let err = Error::too_many_axes(info.ndim(), info.interface.name(), NPY_MAXDIMS);
        return Err(to_py(py, err));
    }
    let descr = descr_of_dtype(py, info.dtype)?;
    let data = std::ptr::with_exposed_provenance_mut(info.ptr);
    // SAFETY: the description was validated by the core parsers: every element it addresses
    // lies in host-accessible memory holding `info.dtype` elements, which `keepalive` keeps
    // alive, writeable unless the producer said read-only; NumPy's limit on axes is checked
    // above.
    unsafe {
        array_from_raw_parts(
            py,
            descr,
            info.shape.iter().copied(),
            info.strides.iter().copied(),
            data,
            !info.readonly,
            keepalive,
        )
    }
}

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
        descr_of_dtype(py, self.info.dtype)
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
            format_tuple(&self.info.shape),
            format_tuple(&self.info.strides),
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
