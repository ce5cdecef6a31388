//! Maps core errors to the exception classes of `gridbuf.errors`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// The Python exception classes, in the order of [`Class`].
static CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

/// Which gridbuf exception class to raise.
#[derive(Copy, Clone, Debug)]
pub enum Class {
    /// `GridbufError`
    Base = 0,
    /// `GridbufValueError` (also a `ValueError`)
    Value,
    /// `GridbufTypeError` (also a `TypeError`)
    Type,
    /// `GridbufOverflowError` (also an `OverflowError`)
    Overflow,
    /// `GridbufMemoryError` (also a `MemoryError`)
    Memory,
    /// `UnknownPresetError` (a `GridbufValueError` and a `RuntimeError`, as GT4Py raises)
    UnknownPreset,
    /// `GridbufDeviceError` (also a `RuntimeError`)
    Device,
}

const NAMES: [&str; 7] = [
    "GridbufError",
    "GridbufValueError",
    "GridbufTypeError",
    "GridbufOverflowError",
    "GridbufMemoryError",
    "UnknownPresetError",
    "GridbufDeviceError",
];

/// Builds a gridbuf exception of the given class with a message.
pub fn raise(py: Python<'_>, class: Class, message: impl Into<String>) -> PyErr {
    let message = message.into();
    let classes = CLASSES.get_or_try_init(py, || -> PyResult<Vec<Py<PyType>>> {
        let module = py.import("gridbuf.errors")?;
        NAMES
            .iter()
            .map(|name| Ok(module.getattr(*name)?.cast_into::<PyType>()?.unbind()))
            .collect()
    });
    match classes {
        Ok(classes) => PyErr::from_type(classes[class as usize].bind(py).clone(), message),
        Err(err) => err,
    }
}

/// Converts a core error into the matching gridbuf exception.
pub fn to_py(py: Python<'_>, err: gridbuf::Error) -> PyErr {
    use gridbuf::Error as E;
    let class = match &err {
        E::InvalidValue { .. } | E::PresetExists { .. } => Class::Value,
        E::InvalidType { .. } => Class::Type,
        E::UnknownPreset { .. } => Class::UnknownPreset,
        E::Overflow { .. } => Class::Overflow,
        E::OutOfMemory { .. } => Class::Memory,
        E::MissingKey { .. } => Class::Value,
        E::BufferProtocolRequired { .. } => Class::Type,
        _ => Class::Base,
    };
    raise(py, class, err.to_string())
}

/// Extension to turn core results into Python results.
pub trait IntoPyResult<T> {
    /// Maps the error with [`to_py`].
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for gridbuf::Result<T> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
