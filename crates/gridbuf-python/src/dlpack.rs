//! Reading `__dlpack__`: taking the tensor out of a producer's capsule into a
//! `gridbuf.DLPackOwner` that owns it.

use crate::convert::type_error;
use crate::errors::{to_py, IntoPyResult};
use crate::found::Found;
use crate::pyobj::lookup;
use gridbuf::arrays::interface::dlpack::device_type_name;
use gridbuf::arrays::interface::{
    DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackOwner,
};
use gridbuf::Error;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ffi::CStr;
use std::sync::Mutex;

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
pub(crate) fn extract_dlpack<'py>(
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
                let name = device_type_name(device_type);
                to_py(py, Error::dlpack_device_type(device_type, name))
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
            let said = device
                .to_array_device()
                .map(|d| d.to_string())
                .unwrap_or_default();
            return Err(to_py(py, Error::dlpack_device_mismatch(info.device, said)));
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
            return Err(to_py(py, Error::dlpack_capsule_consumed()))
        }
        other => return Err(to_py(py, Error::dlpack_capsule_name(other))),
    };
    // SAFETY: `cap` is a capsule whose name is `name_ptr` (checked above).
    let ptr = unsafe { ffi::PyCapsule_GetPointer(cap, name_ptr) };
    if ptr.is_null() {
        return Err(PyErr::take(py).unwrap_or_else(|| to_py(py, Error::dlpack_null_capsule())));
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
