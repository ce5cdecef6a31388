//! The `acquire` / `touch` / `release` callbacks of data-interface entries, run in the core's order.

use super::entry::entry_get;
pub(crate) use crate::data_interface::EntryCallbacks;
use crate::data_interface::{data_interface_of, gpu_entry, host_entry};
use pyo3::intern;
use pyo3::prelude::*;

/// Reads the callbacks of a data-interface entry, checking that each is callable or None.
pub(crate) fn entry_callbacks<'py>(entry: &Bound<'py, PyAny>) -> PyResult<EntryCallbacks<'py>> {
    let py = entry.py();
    let mut out: EntryCallbacks<'py> = [None, None, None];
    for (slot, name) in out.iter_mut().zip([
        intern!(py, "acquire"),
        intern!(py, "touch"),
        intern!(py, "release"),
    ]) {
        if let Some(f) = entry_get(entry, name)? {
            if !f.is_callable() {
                return Err(crate::convert::type_error(
                    name.to_str()?,
                    &f,
                    "expected a callable or None in the data interface",
                ));
            }
            *slot = Some(f);
        }
    }
    Ok(out)
}

/// The callbacks of `obj`'s data interface for host memory (`gpu` false) or GPU memory.
pub(crate) fn callbacks_of<'py>(
    obj: &Bound<'py, PyAny>,
    gpu: bool,
) -> PyResult<EntryCallbacks<'py>> {
    let Some(di) = data_interface_of(obj)? else {
        return Ok([None, None, None]);
    };
    let entry = if gpu {
        gpu_entry(&di)?
    } else {
        host_entry(&di)?
    };
    match entry {
        Some(e) => entry_callbacks(&e),
        None => Ok([None, None, None]),
    }
}

/// Calls the data-interface callbacks of fields by index, for the core's order
/// (`gridbuf::binding::callbacks`).
pub(crate) struct PyHooks<'py> {
    /// Per field, acquire, touch and release.
    pub(crate) per_field: Vec<EntryCallbacks<'py>>,
}

impl gridbuf::binding::callbacks::Hooks for PyHooks<'_> {
    type Error = PyErr;
    fn acquire(&mut self, i: usize) -> PyResult<()> {
        call(&self.per_field[i][0])
    }
    fn touch(&mut self, i: usize) -> PyResult<()> {
        call(&self.per_field[i][1])
    }
    fn release(&mut self, i: usize) -> PyResult<()> {
        call(&self.per_field[i][2])
    }
}

pub(super) fn call(f: &Option<Bound<'_, PyAny>>) -> PyResult<()> {
    match f {
        Some(f) => f.call0().map(|_| ()),
        None => Ok(()),
    }
}

/// [`EntryCallbacks`] held across calls.
pub(super) type OwnedCallbacks = [Option<Py<PyAny>>; 3];

/// The data-interface callbacks around a block (``with``): ``acquire`` of every field on entry,
/// ``touch`` of every output after a block that did not raise, ``release`` of every field on
/// exit. See ``gridbuf.acquired``.
#[pyclass(module = "gridbuf._gridbuf", name = "Acquired")]
pub struct Acquired {
    fields: Vec<Py<PyAny>>,
    outputs: Vec<Py<PyAny>>,
    gpu: bool,
    /// Fields acquired and not yet released.
    state: Option<(gridbuf::binding::callbacks::Acquired, Vec<OwnedCallbacks>)>,
}

pub(super) fn bind_all<'py>(py: Python<'py>, cbs: &[OwnedCallbacks]) -> PyHooks<'py> {
    PyHooks {
        per_field: cbs
            .iter()
            .map(|c| [0, 1, 2].map(|k| c[k].as_ref().map(|f| f.bind(py).clone())))
            .collect(),
    }
}

#[pymethods]
impl Acquired {
    #[new]
    #[pyo3(signature = (fields, outputs, device="cpu"))]
    fn new(fields: &Bound<'_, PyAny>, outputs: &Bound<'_, PyAny>, device: &str) -> PyResult<Self> {
        let list = |o: &Bound<'_, PyAny>| -> PyResult<Vec<Py<PyAny>>> {
            o.try_iter()?.map(|x| Ok(x?.unbind())).collect()
        };
        Ok(Acquired {
            fields: list(fields)?,
            outputs: list(outputs)?,
            gpu: device != "cpu",
            state: None,
        })
    }

    fn __enter__(&mut self, py: Python<'_>) -> PyResult<()> {
        let mut cbs = Vec::with_capacity(self.fields.len() + self.outputs.len());
        for o in self.fields.iter().chain(&self.outputs) {
            cbs.push(callbacks_of(o.bind(py), self.gpu)?.map(|c| c.map(Bound::unbind)));
        }
        let mut hooks = bind_all(py, &cbs);
        let acquired = gridbuf::binding::callbacks::Acquired::enter(&mut hooks, self.fields.len())?;
        self.state = Some((acquired, cbs));
        Ok(())
    }

    #[pyo3(signature = (exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let Some((acquired, cbs)) = self.state.take() else {
            return Ok(false);
        };
        let mut hooks = bind_all(py, &cbs);
        let n = self.fields.len();
        let ok = exc_type.is_none_or(|t| t.is_none());
        // The block's exception stays Python's; the core only needs to know that it failed.
        let result = if ok {
            Ok(())
        } else {
            Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the block raised",
            ))
        };
        let outputs = n..n + self.outputs.len();
        match acquired.finish(&mut hooks, outputs, result) {
            Ok(()) => Ok(false),
            // The block's own exception propagates as it is; a callback's replaces nothing else.
            Err(_) if !ok => Ok(false),
            Err(e) => Err(e),
        }
    }
}
