//! Reading an object's buffer protocol (PEP 3118) into the core's `BufferView`.

use gridbuf::arrays::array_info::ArrayInfo;
use gridbuf::arrays::interface::BufferView;
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_int, CStr};
use std::mem::MaybeUninit;

/// Acquires `obj`'s buffer with `flags`, calls `f` on it and releases it.
pub(crate) fn with_buffer<R>(
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
pub(crate) fn parse_buffer(view: &ffi::Py_buffer) -> gridbuf::Result<ArrayInfo> {
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
