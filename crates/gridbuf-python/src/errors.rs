//! The exception classes of gridbuf, declared once, and the conversion of core errors to them.
//!
//! [`EXCEPTIONS`] is the only list of the classes: the module's initialisation builds each one
//! from it (name, bases, docstring) and adds it to `gridbuf._gridbuf`, which `gridbuf.errors`
//! re-exports; [`raise`] and [`to_py`] pick a class from the same list by the core's
//! [`ErrorClass`]. Python has no single-inheritance restriction here, so a class such as
//! `GridbufValueError` derives from both `GridbufError` and the built-in `ValueError`.

use gridbuf::error::ErrorClass;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

/// Which gridbuf exception class to raise: the core's error category.
pub use gridbuf::error::ErrorClass as Class;

/// The module the classes claim to live in, so that they pickle by reference to it.
const MODULE: &str = "gridbuf.errors";

/// One exception class: its category, name, bases and docstring.
struct Exception {
    class: ErrorClass,
    name: &'static str,
    /// Names of the bases: classes earlier in [`EXCEPTIONS`] or Python built-ins.
    bases: &'static [&'static str],
    doc: &'static str,
}

/// Every gridbuf exception class, bases before the classes deriving from them.
const EXCEPTIONS: [Exception; 7] = [
    Exception {
        class: ErrorClass::Base,
        name: "GridbufError",
        bases: &["Exception"],
        doc: "Base class of every error gridbuf raises.",
    },
    Exception {
        class: ErrorClass::Value,
        name: "GridbufValueError",
        bases: &["GridbufError", "ValueError"],
        doc: "A parameter has an allowed type but a value that is not valid.",
    },
    Exception {
        class: ErrorClass::Type,
        name: "GridbufTypeError",
        bases: &["GridbufError", "TypeError"],
        doc: "A parameter has a type gridbuf cannot use.",
    },
    Exception {
        class: ErrorClass::Overflow,
        name: "GridbufOverflowError",
        bases: &["GridbufError", "OverflowError"],
        doc: "A size, stride or offset does not fit the address space.",
    },
    Exception {
        class: ErrorClass::Memory,
        name: "GridbufMemoryError",
        bases: &["GridbufError", "MemoryError"],
        doc: "The memory for an allocation could not be obtained.",
    },
    Exception {
        class: ErrorClass::UnknownPreset,
        name: "UnknownPresetError",
        bases: &["GridbufValueError", "RuntimeError"],
        doc: "A preset (backend) name that is not registered; the message lists the valid names.

Also a :class:`RuntimeError`, the class ``gt4py.storage`` raises for an unknown backend, so
handlers written for GT4Py keep working after the switch.",
    },
    Exception {
        class: ErrorClass::Device,
        name: "GridbufDeviceError",
        bases: &["GridbufError", "RuntimeError"],
        doc: "A device (GPU) or its array library (CuPy) is needed but not available, or memory lives on
a device the operation cannot use.",
    },
];

/// The classes built from [`EXCEPTIONS`], in its order.
static CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

/// Builds the classes of [`EXCEPTIONS`] (once per interpreter).
fn classes(py: Python<'_>) -> PyResult<&Vec<Py<PyType>>> {
    CLASSES.get_or_try_init(py, || {
        let builtins = py.import("builtins")?;
        let make_type = builtins.getattr("type")?;
        let mut built: Vec<Py<PyType>> = Vec::with_capacity(EXCEPTIONS.len());
        for exc in &EXCEPTIONS {
            let bases = exc
                .bases
                .iter()
                .map(|base| {
                    // A gridbuf base is one built already (the list puts bases first).
                    let earlier = EXCEPTIONS.iter().zip(&built).find(|(e, _)| e.name == *base);
                    match earlier {
                        Some((_, class)) => Ok(class.bind(py).clone().into_any()),
                        None => builtins.getattr(*base),
                    }
                })
                .collect::<PyResult<Vec<_>>>()?;
            let namespace = PyDict::new(py);
            namespace.set_item("__doc__", exc.doc)?;
            namespace.set_item("__module__", MODULE)?;
            let class = make_type.call1((exc.name, PyTuple::new(py, bases)?, namespace))?;
            built.push(class.cast_into::<PyType>()?.unbind());
        }
        Ok(built)
    })
}

/// Adds every exception class to the module `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    for (exc, class) in EXCEPTIONS.iter().zip(classes(py)?) {
        m.add(exc.name, class.bind(py))?;
    }
    Ok(())
}

/// Builds a gridbuf exception of the given class with a message.
pub fn raise(py: Python<'_>, class: Class, message: impl Into<String>) -> PyErr {
    let message = message.into();
    match classes(py) {
        Ok(classes) => {
            let index = EXCEPTIONS
                .iter()
                .position(|e| e.class == class)
                .unwrap_or(0);
            PyErr::from_type(classes[index].bind(py).clone(), message)
        }
        Err(err) => err,
    }
}

/// Converts a core error into the matching gridbuf exception (an interrupted computation into
/// Python's `KeyboardInterrupt`).
pub fn to_py(py: Python<'_>, err: gridbuf::Error) -> PyErr {
    if err.class() == ErrorClass::Interrupted {
        return pyo3::exceptions::PyKeyboardInterrupt::new_err(err.to_string());
    }
    raise(py, err.class(), err.to_string())
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
