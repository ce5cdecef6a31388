//! The allocation functions: `empty`, `zeros`, `ones`, `full`, `from_array` and `plan`.

use crate::convert::{self, type_error, value_error};
use crate::errors::{to_py, IntoPyResult};
use crate::numpy_interop::{array_from_raw_parts, data_ptr, detach_if, numpy_attr};
use gridbuf::{AlignedBuffer, AxisVec, Error, Init, Plan, PlanRequest};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple};
use std::mem::MaybeUninit;
use std::os::raw::c_void;
use std::sync::Arc;

/// The allocation keywords shared by every function, after aliases are resolved.
struct Keywords<'py> {
    backend: Option<Bound<'py, PyAny>>,
    /// Which of the aliases was used, for messages: "backend" or "defaults".
    backend_name: &'static str,
    /// "dimensions" or "dims".
    dims_name: &'static str,
    aligned_index: Option<Bound<'py, PyAny>>,
    dimensions: Option<Bound<'py, PyAny>>,
    layout: Option<Bound<'py, PyAny>>,
    alignment: Option<Bound<'py, PyAny>>,
    halo: Option<Bound<'py, PyAny>>,
    /// `managed="cuda"`: CUDA unified memory through `gridbuf._gpu` (None: by the preset's device).
    managed: Option<Bound<'py, PyAny>>,
}

impl<'py> Keywords<'py> {
    /// Resolves the keyword-only arguments of an allocation function: `None` means not given,
    /// giving both names of an alias pair is an error, and `extra` (the `**kwargs` catch-all)
    /// must be empty.
    #[allow(clippy::too_many_arguments)]
    fn new(
        backend: Option<Bound<'py, PyAny>>,
        defaults: Option<Bound<'py, PyAny>>,
        aligned_index: Option<Bound<'py, PyAny>>,
        dimensions: Option<Bound<'py, PyAny>>,
        dims: Option<Bound<'py, PyAny>>,
        layout: Option<Bound<'py, PyAny>>,
        alignment: Option<Bound<'py, PyAny>>,
        halo: Option<Bound<'py, PyAny>>,
        managed: Option<Bound<'py, PyAny>>,
        extra: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Self> {
        if let Some((key, _)) = extra.and_then(|d| d.iter().next()) {
            return Err(type_error(
                "keyword",
                &key,
                "expected backend (or defaults), aligned_index, dimensions (or dims), layout, alignment, halo or managed",
            ));
        }
        let backend_name = if defaults.is_some() {
            "defaults"
        } else {
            "backend"
        };
        let dims_name = if dimensions.is_some() {
            "dimensions"
        } else {
            "dims"
        };
        Ok(Keywords {
            backend: convert::alias(backend, "backend", defaults, "defaults")?,
            backend_name,
            dims_name,
            aligned_index,
            dimensions: convert::alias(dimensions, "dimensions", dims, "dims")?,
            layout,
            alignment,
            halo,
            managed: managed.filter(|m| !m.is_none()),
        })
    }

    /// Builds the core request for `shape` and a scalar base dtype.
    fn request(
        &self,
        py: Python<'py>,
        shape: AxisVec<usize>,
        dtype: &ScalarDtype<'py>,
    ) -> PyResult<PlanRequest> {
        let param = self.backend_name;
        let name = match &self.backend {
            None => "C",
            Some(b) => b
                .cast::<PyString>()
                .map_err(|_| type_error(param, b, "expected a preset name (str) or None"))?
                .to_str()?,
        };
        let preset = gridbuf::allocation::preset::lookup(name, param).py(py)?;
        let mut req = PlanRequest::new(shape, dtype.itemsize, preset);
        req.subarray_shape = dtype.subarray_shape.clone();
        if let Some(v) = &self.dimensions {
            req.dims = Some(convert::dims(v, self.dims_name)?);
        }
        if let Some(v) = &self.layout {
            req.layout = Some(convert::usize_seq(v, "layout")?);
        }
        if let Some(v) = &self.aligned_index {
            req.aligned_index = Some(convert::usize_seq(v, "aligned_index")?);
        }
        if let Some(v) = &self.halo {
            req.halo = Some(convert::halo(v)?);
        }
        if let Some(v) = &self.alignment {
            let expected = "expected a power of two number of bytes (int)";
            req.alignment = Some(convert::non_negative(v, "alignment", v, expected)?);
        }
        Ok(req)
    }
}

/// A dtype split into its scalar base and the shape of a subarray dtype.
struct ScalarDtype<'py> {
    base: Bound<'py, PyArrayDescr>,
    itemsize: usize,
    subarray_shape: Vec<usize>,
}

static FLOAT64: PyOnceLock<Py<PyArrayDescr>> = PyOnceLock::new();

/// Converts and checks a dtype argument: fixed-size numeric or bool, possibly as a subarray.
fn scalar_dtype<'py>(
    py: Python<'py>,
    dtype: Option<&Bound<'py, PyAny>>,
) -> PyResult<ScalarDtype<'py>> {
    let descr = match dtype.filter(|d| !d.is_none()) {
        None => FLOAT64
            .get_or_init(py, || numpy::dtype::<f64>(py).unbind())
            .bind(py)
            .clone(),
        Some(d) => match d.cast::<PyArrayDescr>() {
            Ok(descr) => descr.clone(),
            Err(_) => PyArrayDescr::new(py, d).map_err(|e| {
                to_py(
                    py,
                    Error::dtype_not_understood(convert::repr(d), &e.to_string()),
                )
            })?,
        },
    };
    let (base, subarray_shape) = if descr.has_subarray() {
        (descr.base(), descr.shape())
    } else {
        (descr.clone(), Vec::new())
    };
    let ok = matches!(base.kind(), b'b' | b'i' | b'u' | b'f' | b'c')
        && !base.has_fields()
        && base.itemsize() > 0;
    if !ok {
        return Err(type_error(
            "dtype",
            descr.as_any(),
            "expected a fixed-size numeric or bool dtype (not object, string, structured or datetime)",
        ));
    }
    let itemsize = base.itemsize();
    Ok(ScalarDtype {
        base,
        itemsize,
        subarray_shape,
    })
}

/// The memory behind every array gridbuf allocates; it is the array's `.base`, so it lives
/// exactly as long as any view of it.
#[pyclass(frozen, module = "gridbuf", name = "Allocation")]
pub struct Allocation {
    buffer: AlignedBuffer,
    plan: Arc<Plan>,
    /// The scalar dtype of the elements, for the repr.
    dtype: Py<PyArrayDescr>,
}

impl Allocation {
    /// Whether an array (shape, byte strides, address of element 0) is all of this allocation.
    pub(crate) fn is_whole(&self, shape: &[usize], strides: &[isize], address: usize) -> bool {
        let data_address = self.buffer.as_ptr() as usize + self.plan.byte_offset;
        self.plan.is_whole(shape, strides, address, data_address)
    }
}

#[pymethods]
impl Allocation {
    /// The plan this memory was allocated for.
    #[getter]
    fn plan(&self) -> PyPlan {
        PyPlan {
            plan: self.plan.clone(),
            dtype: None,
        }
    }

    /// Address of element 0 of the array.
    #[getter]
    fn data_address(&self) -> usize {
        self.buffer.as_ptr() as usize + self.plan.byte_offset
    }

    /// Bytes owned (offset and padding included, alignment slack excluded).
    #[getter]
    fn nbytes(&self) -> usize {
        self.buffer.len()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Allocation(shape={}, dtype={}, backend={}, nbytes={}, alignment={})",
            tuple(py, &self.plan.shape)?,
            self.dtype.bind(py),
            PyString::new(py, &self.plan.preset.name).repr()?,
            self.buffer.len(),
            self.plan.alignment,
        ))
    }
}

/// Wraps the allocation in a NumPy array whose base is the allocation.
fn wrap_array<'py>(
    py: Python<'py>,
    base: Bound<'py, PyArrayDescr>,
    buffer: AlignedBuffer,
    plan: Arc<Plan>,
) -> PyResult<Bound<'py, PyAny>> {
    let data = buffer.as_ptr().wrapping_add(plan.byte_offset) as *mut c_void;
    let dtype = base.clone().unbind();
    let owner = Bound::new(
        py,
        Allocation {
            buffer,
            plan,
            dtype,
        },
    )?;
    let plan = &owner.get().plan;
    // SAFETY: the plan's shape and strides address only elements inside the allocation (it
    // checked the arithmetic), which holds `base` elements, is writeable, and lives as long as
    // its owner, the `Allocation`.
    unsafe {
        array_from_raw_parts(
            py,
            base,
            plan.shape.iter().copied(),
            plan.strides.iter().map(|&s| s as isize),
            data,
            true,
            owner.clone().into_any(),
        )
    }
}

/// How the new memory is initialised.
enum Fill<'a, 'py> {
    Uninit,
    Zeros,
    Value(&'a Bound<'py, PyAny>),
}

/// The bytes of `value` converted to the dtype `base`, by NumPy's casting rules.
fn element_bytes<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    base: &Bound<'py, PyArrayDescr>,
) -> PyResult<Vec<u8>> {
    let scalar = numpy_attr(py, "array")?.call1((value, base)).map_err(|e| {
        let overflow = e.is_instance_of::<pyo3::exceptions::PyOverflowError>(py);
        let shown = value.repr().map(|r| r.to_string()).unwrap_or_default();
        let err =
            Error::fill_value_unconvertible(shown, &base.to_string(), &e.to_string(), overflow);
        to_py(py, err)
    })?;
    let scalar = scalar.cast_into::<PyUntypedArray>()?;
    if scalar.ndim() != 0 {
        return Err(type_error("fill_value", value, "expected a scalar"));
    }
    let n = base.itemsize();
    // SAFETY: a fresh 0-d array of dtype `base` holds exactly `itemsize` bytes at `data`.
    let bytes = unsafe { std::slice::from_raw_parts(data_ptr(&scalar).cast_const(), n) };
    Ok(bytes.to_vec())
}

/// Allocates on a GPU through `gridbuf._gpu` (CuPy); a clear error where CuPy or a GPU is missing.
fn allocate_gpu<'py>(
    py: Python<'py>,
    plan: Arc<Plan>,
    dtype: ScalarDtype<'py>,
    fill: &str,
    value: Option<&Bound<'py, PyAny>>,
    managed: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let plan = PyPlan {
        plan,
        dtype: Some(dtype.base.clone().unbind()),
    };
    py.import("gridbuf._gpu")?
        .call_method1("allocate", (plan, dtype.base, fill, value, managed))
}

fn allocate<'py>(
    py: Python<'py>,
    plan: Arc<Plan>,
    dtype: ScalarDtype<'py>,
    fill: Fill<'_, 'py>,
    managed: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    if plan.device == gridbuf::Device::Gpu || managed.is_some() {
        return match fill {
            Fill::Uninit => allocate_gpu(py, plan, dtype, "empty", None, managed),
            Fill::Zeros => allocate_gpu(py, plan, dtype, "zeros", None, managed),
            Fill::Value(v) => allocate_gpu(py, plan, dtype, "value", Some(v), managed),
        };
    }
    let init = match fill {
        Fill::Zeros => Init::Zeroed,
        _ => Init::Uninit,
    };
    let mut buffer = AlignedBuffer::new(plan.buffer_len(), plan.alignment, init).py(py)?;
    if let Fill::Value(value) = fill {
        let pattern = element_bytes(py, value, &dtype.base)?;
        let data: &mut [MaybeUninit<u8>] = &mut buffer.as_uninit_mut()[plan.byte_offset..];
        detach_if(py, true, || {
            gridbuf::allocation::fill::fill_pattern(data, &pattern)
        });
    }
    wrap_array(py, dtype.base, buffer, plan)
}

fn plan_for<'py>(
    py: Python<'py>,
    shape: &Bound<'py, PyAny>,
    dtype: &ScalarDtype<'py>,
    kw: &Keywords<'py>,
) -> PyResult<Arc<Plan>> {
    let shape = convert::usize_seq(shape, "shape")?;
    let req = kw.request(py, shape, dtype)?;
    Plan::cached(&req).py(py)
}

/// The "Other Parameters" section shared by every allocation docstring.
macro_rules! keywords_doc {
    () => {
        "
Other Parameters
----------------
backend : str, optional
    Preset name (GT4Py's backend), e.g. ``\"gt:cpu_ifirst\"``; default ``\"C\"``. Alias ``defaults``.
aligned_index : sequence of int, optional
    Index of the element to align; default the lower halo (zero without a halo).
dimensions : str or sequence of str, optional
    Semantic dims per axis (``\"I\"``, ``\"J\"``, ``\"K\"``, ``\"0\"``, ...); default
    ``\"IJK\"[:ndim]`` then data dims. Used to pick the layout. Alias ``dims``.
layout : sequence of int, optional
    Layout map overriding the preset's: ``layout[i] = j`` makes axis ``i`` axis ``j`` of a
    C-ordered buffer (the highest ``j`` has unit stride).
alignment : int, optional
    Bytes (a power of two) that rows along the unit-stride axis are padded to; default the
    preset's. The aligned element is always aligned to at least 64 bytes.
halo : sequence of int or (int, int), optional
    Halo per axis, included in ``shape``.
managed : {None, \"cuda\"}, optional
    ``\"cuda\"``: a NumPy array in CUDA unified memory (needs CuPy and a GPU) that
    :func:`gridbuf.as_cupy` views as a CuPy array without copying. Default: the preset's device.

Raises
------
GridbufTypeError
    An argument of the wrong type (shape not a sequence of ints, unsupported dtype, ...).
GridbufValueError
    An invalid value (negative extent, bad dims or layout, halo larger than the shape, ...).
UnknownPresetError
    ``backend`` is not registered; the message lists the valid names.
GridbufOverflowError
    The byte size does not fit the address space.
GridbufMemoryError
    The memory could not be allocated.
"
    };
}

/// Defines a `#[pyfunction]` whose signature ends with the allocation keywords. They are
/// keyword-only parameters, so a call builds no kwargs dict for them; the `**kwargs` catch-all
/// only turns an unknown keyword into a `GridbufTypeError`. The body sees them as `$kw`.
macro_rules! allocation_fn {
    (
        $(#[$attr:meta])*
        fn $name:ident<$py:lifetime>($pyarg:ident $(, $arg:ident: $ty:ty)* $(,)?)
        signature ($($sig:tt)*) -> $ret:ty, |$kw:ident| $body:block
    ) => {
        #[pyfunction]
        $(#[$attr])*
        #[pyo3(signature = (
            $($sig)*, *, backend=None, defaults=None, aligned_index=None, dimensions=None,
            dims=None, layout=None, alignment=None, halo=None, managed=None, **kwargs
        ))]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<$py>(
            $pyarg: Python<$py>,
            $($arg: $ty,)*
            backend: Option<Bound<$py, PyAny>>,
            defaults: Option<Bound<$py, PyAny>>,
            aligned_index: Option<Bound<$py, PyAny>>,
            dimensions: Option<Bound<$py, PyAny>>,
            dims: Option<Bound<$py, PyAny>>,
            layout: Option<Bound<$py, PyAny>>,
            alignment: Option<Bound<$py, PyAny>>,
            halo: Option<Bound<$py, PyAny>>,
            managed: Option<Bound<$py, PyAny>>,
            kwargs: Option<&Bound<$py, PyDict>>,
        ) -> $ret {
            let $kw = Keywords::new(
                backend, defaults, aligned_index, dimensions, dims, layout, alignment, halo,
                managed, kwargs,
            )?;
            $body
        }
    };
}

allocation_fn!(
    #[doc = concat!("Allocate an array with uninitialised values and performance-optimal strides and alignment.

Parameters
----------
shape : sequence of int
    Shape of the array, halo included.
dtype : dtype_like, optional
    Fixed-size numeric or bool dtype, default float64. A subarray dtype such as
    ``(\"f8\", (2, 3))`` appends data dims to the shape.

Returns
-------
numpy.ndarray
    A writeable array whose ``.base`` is the :class:`gridbuf.Allocation` owning its memory.
", keywords_doc!())]
    fn empty<'py>(py, shape: &Bound<'py, PyAny>, dtype: Option<&Bound<'py, PyAny>>)
    signature (shape, dtype=None) -> PyResult<Bound<'py, PyAny>>, |kw| {
        let dtype = scalar_dtype(py, dtype)?;
        let plan = plan_for(py, shape, &dtype, &kw)?;
        allocate(py, plan, dtype, Fill::Uninit, kw.managed.as_ref())
    }
);
allocation_fn!(
    #[doc = concat!("Allocate an array of zeros with performance-optimal strides and alignment.\n\nLarge arrays get zeroed pages from the operating system, so nothing is written.

Parameters
----------
shape : sequence of int
    Shape of the array, halo included.
dtype : dtype_like, optional
    Fixed-size numeric or bool dtype, default float64. A subarray dtype such as
    ``(\"f8\", (2, 3))`` appends data dims to the shape.

Returns
-------
numpy.ndarray
    A writeable array whose ``.base`` is the :class:`gridbuf.Allocation` owning its memory.
", keywords_doc!())]
    fn zeros<'py>(py, shape: &Bound<'py, PyAny>, dtype: Option<&Bound<'py, PyAny>>)
    signature (shape, dtype=None) -> PyResult<Bound<'py, PyAny>>, |kw| {
        let dtype = scalar_dtype(py, dtype)?;
        let plan = plan_for(py, shape, &dtype, &kw)?;
        allocate(py, plan, dtype, Fill::Zeros, kw.managed.as_ref())
    }
);

static ONE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

allocation_fn!(
    #[doc = concat!("Allocate an array of ones with performance-optimal strides and alignment.

Parameters
----------
shape : sequence of int
    Shape of the array, halo included.
dtype : dtype_like, optional
    Fixed-size numeric or bool dtype, default float64. A subarray dtype such as
    ``(\"f8\", (2, 3))`` appends data dims to the shape.

Returns
-------
numpy.ndarray
    A writeable array whose ``.base`` is the :class:`gridbuf.Allocation` owning its memory.
", keywords_doc!())]
    fn ones<'py>(py, shape: &Bound<'py, PyAny>, dtype: Option<&Bound<'py, PyAny>>)
    signature (shape, dtype=None) -> PyResult<Bound<'py, PyAny>>, |kw| {
        let dtype = scalar_dtype(py, dtype)?;
        let plan = plan_for(py, shape, &dtype, &kw)?;
        let one = ONE
            .get_or_init(py, || 1i64.into_pyobject(py).unwrap().into_any().unbind())
            .bind(py)
            .clone();
        allocate(py, plan, dtype, Fill::Value(&one), kw.managed.as_ref())
    }
);

allocation_fn!(
    #[doc = concat!("Allocate an array filled with ``fill_value`` with performance-optimal strides and alignment.

Parameters
----------
shape : sequence of int
    Shape of the array, halo included.
fill_value : scalar
    Value of every element, converted to ``dtype`` by NumPy's rules.
dtype : dtype_like, optional
    Fixed-size numeric or bool dtype, default float64.

Returns
-------
numpy.ndarray
    A writeable array whose ``.base`` is the :class:`gridbuf.Allocation` owning its memory.
", keywords_doc!())]
    fn full<'py>(py, shape: &Bound<'py, PyAny>, fill_value: &Bound<'py, PyAny>, dtype: Option<&Bound<'py, PyAny>>)
    signature (shape, fill_value, dtype=None) -> PyResult<Bound<'py, PyAny>>, |kw| {
        let dtype = scalar_dtype(py, dtype)?;
        let plan = plan_for(py, shape, &dtype, &kw)?;
        allocate(py, plan, dtype, Fill::Value(fill_value), kw.managed.as_ref())
    }
);

allocation_fn!(
    #[doc = concat!("Allocate an array with performance-optimal strides and alignment and copy ``data`` into it.\n\nThe copy runs in cache-sized tiles on all cores, also when the layouts differ.

Parameters
----------
data : array_like
    Anything ``numpy.asarray`` accepts; its shape is the shape of the result.
dtype : dtype_like, optional
    Dtype of the result; default the dtype of ``data``.

Returns
-------
numpy.ndarray
    A writeable array whose ``.base`` is the :class:`gridbuf.Allocation` owning its memory.
", keywords_doc!())]
    fn from_array<'py>(py, data: &Bound<'py, PyAny>, dtype: Option<&Bound<'py, PyAny>>)
    signature (data, dtype=None) -> PyResult<Bound<'py, PyAny>>, |kw| {
        if let Some(array) = from_device_array(py, data, dtype, &kw)? {
            return Ok(array);
        }
        let asarray = numpy_attr(py, "asarray")?;
        let source = asarray.call1((data,)).map_err(|e| {
            let bad_type = !e.is_instance_of::<pyo3::exceptions::PyValueError>(py);
            to_py(py, Error::not_array_like(convert::repr(data), &e.to_string(), bad_type))
        })?;
        let mut source = source.cast_into::<PyUntypedArray>()?;
        let dtype = match dtype.filter(|d| !d.is_none()) {
            Some(d) => scalar_dtype(py, Some(d))?,
            None => scalar_dtype(py, Some(source.dtype().as_any()))?,
        };
        if !source.dtype().is_equiv_to(&dtype.base) {
            let cast = asarray.call1((&source, &dtype.base)).map_err(|e| {
                let err = Error::data_unconvertible(convert::repr(data), &dtype.base.to_string(), &e.to_string());
                to_py(py, err)
            })?;
            source = cast.cast_into::<PyUntypedArray>()?;
        }
        let full_shape = source.shape().to_vec();
        let n_sub = dtype.subarray_shape.len();
        if n_sub > full_shape.len()
            || full_shape[full_shape.len() - n_sub..] != dtype.subarray_shape[..]
        {
            let err = Error::subarray_shape_mismatch(convert::repr(source.as_any()), &full_shape, &dtype.subarray_shape);
            return Err(to_py(py, err));
        }
        let shape = PyTuple::new(py, &full_shape[..full_shape.len() - n_sub])?;
        let plan = plan_for(py, shape.as_any(), &dtype, &kw)?;
        if plan.device == gridbuf::Device::Gpu || kw.managed.is_some() {
            let managed = kw.managed.as_ref();
            return allocate_gpu(py, plan, dtype, "copy", Some(source.as_any()), managed);
        }
        let mut buffer = AlignedBuffer::new(plan.buffer_len(), plan.alignment, Init::Uninit).py(py)?;
        let src_ptr = data_ptr(&source) as usize;
        let src_strides = source.strides().to_vec();
        let dst_strides: Vec<isize> = plan.strides.iter().map(|&s| s as isize).collect();
        let copy = gridbuf::arrays::copy::CopyPlan::new(plan.itemsize, &full_shape, &src_strides, &dst_strides);
        detach_if(py, true, || {
            if copy.changes_layout() {
                // The copy writes all over the destination at once: fault its pages in first,
                // on all cores (see `AlignedBuffer::populate`).
                buffer.populate();
            }
            let dst_ptr = buffer.as_mut_ptr().wrapping_add(plan.byte_offset);
            // SAFETY: `source` (kept alive by this frame) is a NumPy array of `full_shape` and
            // `src_strides`, so every indexed element is readable; the destination is the fresh
            // buffer laid out by `plan` for the same shape, whose distinct indices map to distinct
            // elements inside it, and nothing else can see it yet.
            unsafe { copy.run(src_ptr as *const u8, dst_ptr) }
        });
        wrap_array(py, dtype.base, buffer, plan)
    }
);

allocation_fn!(
    #[doc = concat!("Compute the layout of an allocation without allocating (works for GPU presets anywhere).

Parameters
----------
shape : sequence of int
    Shape of the array, halo included.
dtype : dtype_like, optional
    Fixed-size numeric or bool dtype, default float64. A subarray dtype such as
    ``(\"f8\", (2, 3))`` appends data dims to the shape.

Returns
-------
Plan
    Shape, padded shape, byte strides, layout, dims, halo, aligned index, alignment,
    row alignment, byte offset of element 0 and size in bytes.
", keywords_doc!())]
    #[pyo3(name = "plan")]
    fn plan_fn<'py>(py, shape: &Bound<'py, PyAny>, dtype: Option<&Bound<'py, PyAny>>)
    signature (shape, dtype=None) -> PyResult<PyPlan>, |kw| {
        let dtype = scalar_dtype(py, dtype)?;
        let plan = plan_for(py, shape, &dtype, &kw)?;
        Ok(PyPlan {
            plan,
            dtype: Some(dtype.base.unbind()),
        })
    }
);

/// The result of :func:`gridbuf.plan`: shape, padded shape, byte strides, layout, alignment and offset.
#[pyclass(frozen, module = "gridbuf", name = "Plan")]
pub struct PyPlan {
    plan: Arc<Plan>,
    dtype: Option<Py<PyArrayDescr>>,
}

fn tuple<'py, T: IntoPyObject<'py> + Copy>(
    py: Python<'py>,
    v: &[T],
) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, v.iter().copied())
}

#[pymethods]
impl PyPlan {
    /// Shape of the array.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        tuple(py, &self.plan.shape)
    }
    /// Shape of the memory block, with the unit-stride axis padded.
    #[getter]
    fn padded_shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        tuple(py, &self.plan.padded_shape)
    }
    /// Strides in bytes.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        tuple(py, &self.plan.strides)
    }
    /// Layout map: ``layout[i] = j`` means axis i is axis j of a C-ordered buffer.
    #[getter]
    fn layout<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        tuple(py, &self.plan.layout)
    }
    /// Dims per axis.
    #[getter]
    fn dims<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.plan.dims.iter().map(|d| d.to_string()))
    }
    /// Halo per axis as (lower, upper).
    #[getter]
    fn halo<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.plan.halo.iter().copied())
    }
    /// Index of the aligned element.
    #[getter]
    fn aligned_index<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        tuple(py, &self.plan.aligned_index)
    }
    /// Alignment in bytes of the aligned element: ``max(row_alignment, 64)``.
    #[getter]
    fn alignment(&self) -> usize {
        self.plan.alignment
    }
    /// Bytes each row along the unit-stride axis is padded to (1: no padding).
    #[getter]
    fn row_alignment(&self) -> usize {
        self.plan.row_alignment
    }
    /// Byte offset of element 0 from a base aligned to ``alignment``.
    #[getter]
    fn byte_offset(&self) -> usize {
        self.plan.byte_offset
    }
    /// Bytes spanned by the padded array.
    #[getter]
    fn nbytes(&self) -> usize {
        self.plan.nbytes
    }
    /// Size of one element in bytes.
    #[getter]
    fn itemsize(&self) -> usize {
        self.plan.itemsize
    }
    /// Scalar dtype of the elements (None for the plan of an existing allocation).
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArrayDescr>> {
        self.dtype.as_ref().map(|d| d.bind(py).clone())
    }
    /// ``"cpu"`` or ``"gpu"``.
    #[getter]
    fn device(&self) -> &'static str {
        self.plan.device.name()
    }
    /// Name of the preset the plan follows.
    #[getter]
    fn backend(&self) -> &str {
        &self.plan.preset.name
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let p = &self.plan;
        Ok(format!(
            "Plan(shape={}, padded_shape={}, strides={}, layout={}, dims={}, alignment={}, row_alignment={}, aligned_index={}, byte_offset={}, nbytes={}, backend={})",
            tuple(py, &p.shape)?, tuple(py, &p.padded_shape)?, tuple(py, &p.strides)?, tuple(py, &p.layout)?,
            self.dims(py)?, p.alignment, p.row_alignment, tuple(py, &p.aligned_index)?, p.byte_offset, p.nbytes,
            PyString::new(py, &p.preset.name).repr()?
        ))
    }
}

/// `from_array` of an array that lives in GPU memory (its type has `__cuda_array_interface__`
/// and it is no NumPy array): the copy stays on the device (`None` for any other data). A host
/// preset without `managed` is refused, since the data would have to leave the device.
fn from_device_array<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    dtype: Option<&Bound<'py, PyAny>>,
    kw: &Keywords<'py>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let ty = data.get_type();
    if data.cast::<PyUntypedArray>().is_ok()
        || !ty.hasattr(pyo3::intern!(py, "__cuda_array_interface__"))?
        || ty.hasattr(pyo3::intern!(py, "__array_interface__"))?
    {
        return Ok(None);
    }
    let dtype = match dtype.filter(|d| !d.is_none()) {
        Some(d) => scalar_dtype(py, Some(d))?,
        None => scalar_dtype(py, Some(&data.getattr("dtype")?))?,
    };
    if !dtype.subarray_shape.is_empty() {
        return Err(value_error(
            "dtype",
            dtype.base.as_any(),
            "subarray dtypes are not supported for device data",
        ));
    }
    let plan = plan_for(py, &data.getattr("shape")?, &dtype, kw)?;
    if plan.device != gridbuf::Device::Gpu && kw.managed.is_none() {
        return Err(to_py(
            py,
            Error::device_data_for_host_preset(&ty.name()?.to_string(), &plan.preset.name),
        ));
    }
    let managed = kw.managed.as_ref();
    allocate_gpu(py, plan, dtype, "copy", Some(data), managed).map(Some)
}
