//! Reading an object's buffer protocol (PEP 3118) into the core's `BufferView`.

use gridbuf::arrays::array_info::ArrayInfo;
use gridbuf::arrays::interface::BufferView;
use pyo3::prelude::*;
use std::ffi::{c_int, CStr};
use std::mem::MaybeUninit;

/// The buffer protocol's C declarations.
///
/// The extension is built for the stable ABI of CPython 3.10 (`abi3-py310`, one wheel for every
/// CPython >= 3.10), and `pyo3::ffi` declares the buffer protocol only from 3.11, the version
/// that added it to the limited API. The struct layout, the flag values and the three functions
/// are the same in CPython 3.10 (public, exported functions of its C API, unchanged since 3.3:
/// PEP 3118), and from 3.11 on they are part of the stable ABI itself, so declaring them here is
/// sound on every interpreter the wheel installs on.
pub(crate) mod sys {
    use pyo3::ffi::{PyObject, Py_ssize_t};
    use std::ffi::{c_char, c_int, c_void};

    /// `Py_buffer` (CPython's `Include/pybuffer.h`).
    #[repr(C)]
    pub(crate) struct PyBuffer {
        pub buf: *mut c_void,
        pub obj: *mut PyObject,
        pub len: Py_ssize_t,
        pub itemsize: Py_ssize_t,
        pub readonly: c_int,
        pub ndim: c_int,
        pub format: *mut c_char,
        pub shape: *mut Py_ssize_t,
        pub strides: *mut Py_ssize_t,
        pub suboffsets: *mut Py_ssize_t,
        pub internal: *mut c_void,
    }

    extern "C" {
        pub(super) fn PyObject_CheckBuffer(obj: *mut PyObject) -> c_int;
        pub(super) fn PyObject_GetBuffer(
            obj: *mut PyObject,
            view: *mut PyBuffer,
            flags: c_int,
        ) -> c_int;
        pub(super) fn PyBuffer_Release(view: *mut PyBuffer);
    }
}

/// `PyBUF_SIMPLE`: a contiguous read-only block of bytes.
pub(crate) const BUF_SIMPLE: c_int = 0;
/// `PyBUF_RECORDS_RO` (`PyBUF_STRIDES | PyBUF_FORMAT`): shape, strides and format, read-only.
pub(crate) const BUF_RECORDS_RO: c_int = 0x0018 | 0x0004;

/// Whether `obj` exports the buffer protocol.
pub(crate) fn has_buffer(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `obj` is a live object; the call only reads its type's buffer slot.
    unsafe { sys::PyObject_CheckBuffer(obj.as_ptr()) != 0 }
}

/// Acquires `obj`'s buffer with `flags`, calls `f` on it and releases it.
pub(crate) fn with_buffer<R>(
    obj: &Bound<'_, PyAny>,
    flags: c_int,
    f: impl FnOnce(&sys::PyBuffer) -> R,
) -> PyResult<R> {
    struct Release(sys::PyBuffer);
    impl Drop for Release {
        fn drop(&mut self) {
            // SAFETY: the view was filled by a successful PyObject_GetBuffer and is released
            // exactly once, here.
            unsafe { sys::PyBuffer_Release(&mut self.0) }
        }
    }
    let mut view = MaybeUninit::<sys::PyBuffer>::uninit();
    // SAFETY: `obj` is a live object and `view` is writable storage for a Py_buffer.
    if unsafe { sys::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), flags) } < 0 {
        return Err(PyErr::fetch(obj.py()));
    }
    // SAFETY: PyObject_GetBuffer succeeded, so it filled the view.
    let view = Release(unsafe { view.assume_init() });
    Ok(f(&view.0))
}

/// Describes an acquired buffer (requested with `PyBUF_RECORDS_RO`).
pub(crate) fn parse_buffer(view: &sys::PyBuffer) -> gridbuf::Result<ArrayInfo> {
    let ndim = usize::try_from(view.ndim).unwrap_or(0);
    // SAFETY: the exporter fills `format` with NULL or a C string, and `shape`, `strides` with
    // NULL or `ndim` values each, valid until the view is released (after this call).
    let (format, shape, strides) = unsafe {
        let seq = |p: *mut pyo3::ffi::Py_ssize_t| {
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
