//! What crosses the boundary between `gridbuf.Field` and the labelled-array core: the
//! description of a Field ([`FieldDescriptor`]) and the parameters of a result
//! ([`OutputParams`]), both frozen classes with named attributes.

use crate::errors::IntoPyResult;
use crate::metadata::dims_tuple;
use gridbuf::arrays::labelled::{FieldInfo, OutputParams as CoreOutputParams};
use gridbuf::{AxisVec, Dim};
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{PyBool, PyDict, PyString, PyTuple};

/// The description of a ``gridbuf.Field`` the labelled-array functions take: dims, shape,
/// halo, and how its memory is laid out. Frozen; equal (and hashing equal) when every attribute
/// is, so Fields with one description share cached answers.
///
/// Parameters
/// ----------
/// dims : tuple of str
/// shape : tuple of int
/// halo : tuple of (int, int)
/// layout : tuple of int or None
///     The allocation's layout map; None reads the layout from ``strides``.
/// strides : tuple of int or None
///     Byte strides (used when ``layout`` is None).
/// alignment : int
///     Row alignment in bytes (1: none).
/// aligned_index : tuple of int or None
///     Index of the aligned element; None means the lower halo.
/// backend : str
///     The preset a result is allocated with.
#[pyclass(frozen, module = "gridbuf._gridbuf", name = "FieldDescriptor")]
pub struct FieldDescriptor {
    /// The attributes in the order of the constructor.
    values: Py<PyTuple>,
    hash: isize,
}

/// A field description parsed for the core, and the preset its result would be allocated with.
pub(crate) struct Described {
    /// The core's description.
    pub(crate) info: FieldInfo,
    /// The preset name.
    pub(crate) backend: String,
}

/// Dims given as a tuple of names (the fast, common case) or anything `convert::dims` takes.
pub(crate) fn dims_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Dim>> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        let mut out = Vec::with_capacity(t.len());
        for item in t.iter() {
            match item
                .cast::<PyString>()
                .ok()
                .map(|s| Dim::parse(s.to_str().unwrap_or("")))
            {
                Some(Ok(d)) => out.push(d),
                _ => return crate::convert::dims(obj, "dims").map(AxisVec::into_vec),
            }
        }
        return Ok(out);
    }
    crate::convert::dims(obj, "dims").map(AxisVec::into_vec)
}

/// A halo given as a tuple of (lower, upper) pairs (the fast, common case) or anything
/// `convert::halo` takes.
pub(crate) fn halo_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(usize, usize)>> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        let fast: Option<Vec<(usize, usize)>> = t
            .iter()
            .map(|p| p.extract::<(usize, usize)>().ok())
            .collect();
        if let Some(v) = fast {
            return Ok(v);
        }
    }
    crate::convert::halo(obj).map(AxisVec::into_vec)
}

impl FieldDescriptor {
    fn get<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        self.values.bind(py).get_item(i)
    }

    /// Parses the description for the core.
    pub(crate) fn describe(&self, py: Python<'_>) -> PyResult<Described> {
        let t = self.values.bind(py);
        let dims = dims_arg(&t.get_item(0)?)?;
        let shape = crate::convert::usize_seq(&t.get_item(1)?, "shape")?.into_vec();
        let halo = halo_arg(&t.get_item(2)?)?;
        let layout = t.get_item(3)?;
        let strides = t.get_item(4)?;
        let alignment: usize = t.get_item(5)?.extract()?;
        let aligned_index = t.get_item(6)?;
        let backend: String = t.get_item(7)?.extract()?;
        let mut info = FieldInfo::new(dims, shape).py(py)?.with_halo(halo).py(py)?;
        let aligned_index = if aligned_index.is_none() {
            info.aligned_index.clone()
        } else {
            crate::convert::usize_seq(&aligned_index, "aligned_index")?.into_vec()
        };
        if layout.is_none() {
            let strides: Vec<isize> = strides.extract()?;
            info = info.with_strides(&strides).py(py)?;
            let layout = info.layout.clone();
            let base = info.base;
            info = info
                .with_storage(layout, base, alignment, aligned_index)
                .py(py)?;
        } else {
            let layout = crate::convert::usize_seq(&layout, "layout")?.into_vec();
            let base = gridbuf::allocation::preset::lookup(&backend, "backend")
                .py(py)?
                .base_layout;
            info = info
                .with_storage(layout, base, alignment, aligned_index)
                .py(py)?;
        }
        Ok(Described { info, backend })
    }
}

#[pymethods]
impl FieldDescriptor {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new<'py>(
        py: Python<'py>,
        dims: Bound<'py, PyAny>,
        shape: Bound<'py, PyAny>,
        halo: Bound<'py, PyAny>,
        layout: Bound<'py, PyAny>,
        strides: Bound<'py, PyAny>,
        alignment: Bound<'py, PyAny>,
        aligned_index: Bound<'py, PyAny>,
        backend: Bound<'py, PyAny>,
    ) -> PyResult<Self> {
        let values = PyTuple::new(
            py,
            [
                dims,
                shape,
                halo,
                layout,
                strides,
                alignment,
                aligned_index,
                backend,
            ],
        )?;
        let hash = values.hash()?;
        Ok(FieldDescriptor {
            values: values.unbind(),
            hash,
        })
    }

    /// Dims per axis.
    #[getter]
    fn dims<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get(py, 0)
    }

    /// Shape (halo included).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get(py, 1)
    }

    /// (lower, upper) halo per axis.
    #[getter]
    fn halo<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get(py, 2)
    }

    /// The allocation's layout map, or None (read from the strides).
    #[getter]
    fn layout<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get(py, 3)
    }

    /// Byte strides, or None.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get(py, 4)
    }

    /// Row alignment in bytes.
    #[getter]
    fn alignment<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get(py, 5)
    }

    /// Index of the aligned element, or None (the lower halo).
    #[getter]
    fn aligned_index<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get(py, 6)
    }

    /// The preset a result is allocated with.
    #[getter]
    fn backend<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get(py, 7)
    }

    fn __hash__(&self) -> isize {
        self.hash
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<FieldDescriptor>() else {
            return Ok(py.NotImplemented());
        };
        let other = other.get();
        let eq = self.hash == other.hash && self.values.bind(py).eq(other.values.bind(py))?;
        match op {
            CompareOp::Eq => Ok(PyBool::new(py, eq).to_owned().into_any().unbind()),
            CompareOp::Ne => Ok(PyBool::new(py, !eq).to_owned().into_any().unbind()),
            _ => Ok(py.NotImplemented()),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("FieldDescriptor{}", self.values.bind(py).repr()?))
    }
}

/// The parameters of a result the labelled-array functions infer (GDP-3's "Output Storage
/// Parameters"): its dims, shape, layout, alignment, aligned index, halo and preset, and the
/// keywords of ``gridbuf.empty`` that allocate it. Frozen.
#[pyclass(frozen, module = "gridbuf._gridbuf", name = "OutputParams")]
pub struct OutputParams {
    /// Dims per axis.
    #[pyo3(get)]
    dims: Py<PyTuple>,
    /// Shape (halo included).
    #[pyo3(get)]
    shape: Py<PyTuple>,
    /// Layout map.
    #[pyo3(get)]
    layout: Py<PyTuple>,
    /// Row alignment in bytes.
    #[pyo3(get)]
    alignment: usize,
    /// Index of the aligned element.
    #[pyo3(get)]
    aligned_index: Py<PyTuple>,
    /// (lower, upper) halo per axis.
    #[pyo3(get)]
    halo: Py<PyTuple>,
    /// The preset name.
    #[pyo3(get)]
    backend: Py<PyString>,
    /// Keywords of ``gridbuf.empty`` (with the shape and a dtype) that allocate the result.
    #[pyo3(get)]
    kwargs: Py<PyDict>,
}

impl OutputParams {
    /// The parameters `p` under the preset `backend`, with the keywords `kwargs`.
    pub(crate) fn new(
        py: Python<'_>,
        p: &CoreOutputParams,
        backend: &str,
        kwargs: Bound<'_, PyDict>,
    ) -> PyResult<OutputParams> {
        Ok(OutputParams {
            dims: dims_tuple(py, &p.dims)?.unbind(),
            shape: PyTuple::new(py, &p.shape)?.unbind(),
            layout: PyTuple::new(py, &p.layout)?.unbind(),
            alignment: p.alignment,
            aligned_index: PyTuple::new(py, &p.aligned_index)?.unbind(),
            halo: PyTuple::new(py, p.halo.iter().copied())?.unbind(),
            backend: PyString::new(py, backend).unbind(),
            kwargs: kwargs.unbind(),
        })
    }
}

#[pymethods]
impl OutputParams {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "OutputParams(dims={}, shape={}, layout={}, alignment={}, aligned_index={}, halo={}, backend={})",
            self.dims.bind(py).repr()?,
            self.shape.bind(py).repr()?,
            self.layout.bind(py).repr()?,
            self.alignment,
            self.aligned_index.bind(py).repr()?,
            self.halo.bind(py).repr()?,
            self.backend.bind(py).repr()?,
        ))
    }
}
