//! Presets (GT4Py's backends) and layout maps.

use crate::convert::{self, type_error};
use crate::errors::IntoPyResult;
use gridbuf::{BaseLayout, Device, Preset};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use std::sync::Arc;

/// A named set of allocation defaults: device, base layout over I, J, K and alignment.
#[pyclass(frozen, module = "gridbuf", name = "Preset", eq)]
#[derive(PartialEq)]
pub struct PyPreset {
    inner: Arc<Preset>,
}

/// `(0, 1, 2)`-style tuple for semantic layouts, `"C"` or `"F"` for index orders.
pub fn base_layout_to_py<'py>(py: Python<'py>, layout: &BaseLayout) -> PyResult<Bound<'py, PyAny>> {
    Ok(match layout {
        BaseLayout::Semantic(b) => PyTuple::new(py, b.iter().copied())?.into_any(),
        BaseLayout::C => PyString::new(py, "C").into_any(),
        BaseLayout::F => PyString::new(py, "F").into_any(),
    })
}

fn base_layout_from_py(obj: &Bound<'_, PyAny>) -> PyResult<BaseLayout> {
    const EXPECTED: &str = "expected a permutation of (0, 1, 2) over I, J, K, or \"C\" or \"F\"";
    if let Ok(s) = obj.cast::<PyString>() {
        return match s.to_str()? {
            "C" => Ok(BaseLayout::C),
            "F" => Ok(BaseLayout::F),
            _ => Err(convert::value_error("base_layout", obj, EXPECTED)),
        };
    }
    let v = convert::usize_seq(obj, "base_layout")?;
    match v[..] {
        [a, b, c] if a < 3 && b < 3 && c < 3 => {
            BaseLayout::semantic([a as u8, b as u8, c as u8]).py(obj.py())
        }
        _ => Err(convert::value_error("base_layout", obj, EXPECTED)),
    }
}

#[pymethods]
impl PyPreset {
    /// The registered name.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }
    /// ``"cpu"`` or ``"gpu"``.
    #[getter]
    fn device(&self) -> &'static str {
        self.inner.device.name()
    }
    /// Permutation over (I, J, K), or ``"C"``/``"F"`` for index order regardless of dims.
    #[getter]
    fn base_layout<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        base_layout_to_py(py, &self.inner.base_layout)
    }
    /// Bytes the unit-stride rows are padded to (1: no padding).
    #[getter]
    fn alignment(&self) -> usize {
        self.inner.alignment
    }
    /// The layout map this preset gives to arrays with the given dims.
    fn layout_map<'py>(
        &self,
        py: Python<'py>,
        dimensions: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let dims = convert::dims(dimensions, "dimensions")?;
        gridbuf::geometry::dims::validate_dims(&dims, dims.len()).py(py)?;
        PyTuple::new(py, self.inner.layout_map(&dims))
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Preset(name={:?}, device={:?}, base_layout={}, alignment={})",
            self.inner.name,
            self.inner.device.name(),
            base_layout_to_py(py, &self.inner.base_layout)?.repr()?,
            self.inner.alignment
        ))
    }
}

/// All registered presets as a dict from name to Preset.
#[pyfunction]
pub fn presets(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for p in gridbuf::allocation::preset::all() {
        out.set_item(p.name.clone(), PyPreset { inner: p })?;
    }
    Ok(out)
}

/// The preset registered under `name`.
#[pyfunction]
pub fn preset(py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<PyPreset> {
    let name = name
        .cast::<PyString>()
        .map_err(|_| type_error("name", name, "expected a preset name (str)"))?;
    Ok(PyPreset {
        inner: gridbuf::allocation::preset::lookup(name.to_str()?, "name").py(py)?,
    })
}

/// Registers a preset; an existing name is only replaced with ``replace=True``.
#[pyfunction]
#[pyo3(signature = (name, *, device, base_layout, alignment, replace=false))]
pub fn register_preset(
    py: Python<'_>,
    name: &str,
    device: &str,
    base_layout: &Bound<'_, PyAny>,
    alignment: usize,
    replace: bool,
) -> PyResult<PyPreset> {
    let device = Device::parse(device).py(py)?;
    let base_layout = base_layout_from_py(base_layout)?;
    let preset = Preset::new(name, device, base_layout, alignment).py(py)?;
    Ok(PyPreset {
        inner: gridbuf::allocation::preset::register(preset, replace).py(py)?,
    })
}

/// The layout map that `base_layout` gives to arrays with the given dimensions.
#[pyfunction]
pub fn layout_map<'py>(
    py: Python<'py>,
    dimensions: &Bound<'py, PyAny>,
    base_layout: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let dims = convert::dims(dimensions, "dimensions")?;
    gridbuf::geometry::dims::validate_dims(&dims, dims.len()).py(py)?;
    PyTuple::new(py, base_layout_from_py(base_layout)?.layout_map(&dims))
}
