//! `gridbuf.SyncState`: the core's shared sync state of a mirrored (host + device) field.
//!
//! The state decides which copy a sync needs; the copy itself is done by a Python callable the
//! caller passes (NumPy for a host stand-in, CuPy for a GPU), called with the GIL held and no
//! lock held. When the copy raises, the state is left as it was before the call.

use crate::convert::{type_error, value_error};
use crate::errors::{raise, Class};
use gridbuf::mirrored::sync_state::{Side, State, SyncError, SyncState, Transfer};
use pyo3::prelude::*;
use pyo3::types::PyString;

fn side_arg(obj: &Bound<'_, PyAny>) -> PyResult<Side> {
    let s = obj
        .cast::<PyString>()
        .map_err(|_| type_error("side", obj, "expected \"host\" or \"device\""))?;
    Side::parse(s.to_str()?).ok_or_else(|| {
        value_error(
            "side",
            obj,
            "expected \"host\" (or \"cpu\") or \"device\" (or \"gpu\", \"cuda\")",
        )
    })
}

fn state_arg(obj: &Bound<'_, PyAny>) -> PyResult<State> {
    let expected = "expected \"clean\", \"host_dirty\" or \"device_dirty\" (SyncState.SYNC_CLEAN, \
                    SYNC_HOST_DIRTY, SYNC_DEVICE_DIRTY)";
    let s = obj
        .cast::<PyString>()
        .map_err(|_| type_error("state", obj, expected))?;
    match s.to_str()? {
        "clean" => Ok(State::Clean),
        "host_dirty" => Ok(State::HostDirty),
        "device_dirty" => Ok(State::DeviceDirty),
        _ => Err(value_error("state", obj, expected)),
    }
}

fn sync_err(py: Python<'_>, e: SyncError) -> PyErr {
    raise(py, Class::Device, e.to_string())
}

fn transfer_name(t: Transfer) -> &'static str {
    match t.to {
        Side::Device => "host_to_device",
        Side::Host => "device_to_host",
    }
}

/// Runs `copy(from, to)` for `t`, then reports the transfer done (or aborted, when it raised).
fn run_copy(
    py: Python<'_>,
    state: &SyncState,
    t: Transfer,
    acquired: bool,
    copy: &Bound<'_, PyAny>,
) -> PyResult<()> {
    match copy.call1((t.from.name(), t.to.name())) {
        Ok(_) => state.finish_transfer(t).map_err(|e| sync_err(py, e)),
        Err(err) => {
            state
                .abort_transfer(t, acquired)
                .map_err(|e| sync_err(py, e))?;
            Err(err)
        }
    }
}

/// The sync state shared by every view of a mirrored field's host and device buffers.
///
/// ``state`` is ``"clean"`` (both buffers equal), ``"host_dirty"`` (the device buffer is stale) or
/// ``"device_dirty"`` (the host buffer is stale). Accesses follow the data-interface protocol:
/// ``acquire(side, copy)`` makes that side current (calling ``copy(from, to)`` when the other side
/// holds newer data) and opens an access; ``touch(side)`` marks it modified; ``release(side)``
/// closes the access. Acquiring one side while the other has open accesses raises
/// :class:`gridbuf.GridbufDeviceError`, as does any call that would lose data.
///
/// Parameters
/// ----------
/// state : str, optional
///     Which buffer is current at creation; default ``"clean"``.
#[pyclass(frozen, module = "gridbuf", name = "SyncState")]
pub struct PySyncState {
    inner: SyncState,
}

#[pymethods]
impl PySyncState {
    /// Both buffers hold the same data.
    #[classattr]
    const SYNC_CLEAN: &'static str = "clean";
    /// The host buffer was modified; the device buffer is stale.
    #[classattr]
    const SYNC_HOST_DIRTY: &'static str = "host_dirty";
    /// The device buffer was modified; the host buffer is stale.
    #[classattr]
    const SYNC_DEVICE_DIRTY: &'static str = "device_dirty";

    #[new]
    #[pyo3(signature = (state=None))]
    fn new(state: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let state = match state {
            None => State::Clean,
            Some(s) => state_arg(s)?,
        };
        Ok(PySyncState {
            inner: SyncState::new(state),
        })
    }

    /// ``"clean"``, ``"host_dirty"`` or ``"device_dirty"``.
    #[getter]
    fn state(&self) -> &'static str {
        self.inner.state().name()
    }

    /// Open accesses to the host side.
    #[getter]
    fn host_open(&self) -> usize {
        self.inner.snapshot().host_open
    }

    /// Open accesses to the device side.
    #[getter]
    fn device_open(&self) -> usize {
        self.inner.snapshot().device_open
    }

    /// Completed host-to-device copies.
    #[getter]
    fn host_to_device(&self) -> u64 {
        self.inner.transfers().host_to_device
    }

    /// Completed device-to-host copies.
    #[getter]
    fn device_to_host(&self) -> u64 {
        self.inner.transfers().device_to_host
    }

    /// Completed copies in both directions.
    #[getter]
    fn transfers(&self) -> u64 {
        self.inner.transfers().total()
    }

    /// Whether ``side`` holds the newest data.
    fn is_current(&self, side: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.inner.state().is_current(side_arg(side)?))
    }

    /// Open an access to ``side``, first copying the other side into it when that one is newer.
    ///
    /// Parameters
    /// ----------
    /// side : {"host", "device"}
    /// copy : callable
    ///     ``copy(from_side, to_side)`` copies the whole buffer; called only when needed.
    ///
    /// Returns
    /// -------
    /// str or None
    ///     ``"host_to_device"`` or ``"device_to_host"`` when a copy ran, else None.
    fn acquire(
        &self,
        py: Python<'_>,
        side: &Bound<'_, PyAny>,
        copy: &Bound<'_, PyAny>,
    ) -> PyResult<Option<&'static str>> {
        let side = side_arg(side)?;
        if !copy.is_callable() {
            return Err(type_error(
                "copy",
                copy,
                "expected a callable copy(from, to)",
            ));
        }
        match self.inner.acquire(side).map_err(|e| sync_err(py, e))? {
            None => Ok(None),
            Some(t) => {
                run_copy(py, &self.inner, t, true, copy)?;
                Ok(Some(transfer_name(t)))
            }
        }
    }

    /// Mark ``side`` modified inside an open access to it.
    fn touch(&self, py: Python<'_>, side: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner
            .touch(side_arg(side)?)
            .map_err(|e| sync_err(py, e))
    }

    /// Close one access to ``side``.
    fn release(&self, py: Python<'_>, side: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner
            .release(side_arg(side)?)
            .map_err(|e| sync_err(py, e))
    }

    /// Mark ``side`` modified outside any access (GDP-3's ``set_host_modified`` /
    /// ``set_device_modified``); refused when the other side holds newer data.
    fn mark_modified(&self, py: Python<'_>, side: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner
            .mark_modified(side_arg(side)?)
            .map_err(|e| sync_err(py, e))
    }

    /// Copy the newer side into the stale one, if they differ.
    ///
    /// Returns
    /// -------
    /// str or None
    ///     The copy that ran, or None.
    fn sync(&self, py: Python<'_>, copy: &Bound<'_, PyAny>) -> PyResult<Option<&'static str>> {
        if !copy.is_callable() {
            return Err(type_error(
                "copy",
                copy,
                "expected a callable copy(from, to)",
            ));
        }
        match self.inner.sync().map_err(|e| sync_err(py, e))? {
            None => Ok(None),
            Some(t) => {
                run_copy(py, &self.inner, t, false, copy)?;
                Ok(Some(transfer_name(t)))
            }
        }
    }

    /// Declare which buffer is current without copying (no access may be open).
    fn set_state(&self, py: Python<'_>, state: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner
            .set_state(state_arg(state)?)
            .map_err(|e| sync_err(py, e))
    }

    fn __repr__(&self) -> String {
        let s = self.inner.snapshot();
        format!(
            "SyncState(state={:?}, host_open={}, device_open={}, host_to_device={}, device_to_host={})",
            s.state.name(),
            s.host_open,
            s.device_open,
            s.transfers.host_to_device,
            s.transfers.device_to_host
        )
    }
}
