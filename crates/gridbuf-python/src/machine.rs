//! What gridbuf uses of this machine, for `gridbuf.show_versions`: its thread count and the
//! gtscript JIT's target.

use gridbuf::gtscript::jit::host_target;
use gridbuf::runtime::threads::{configured, Threads};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `{"threads": n, "cores": n, "jit_architecture": str | None, "jit_features": list | None}`:
/// the threads gridbuf's parallel work uses (`GRIDBUF_NUM_THREADS`, else every core), the cores
/// this process may use, and the architecture and instruction-set extensions the JIT compiles
/// for (None where Cranelift has no backend for this machine).
#[pyfunction]
pub fn machine_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let info = PyDict::new(py);
    info.set_item("threads", configured().get())?;
    info.set_item("cores", Threads::available().get())?;
    let target = host_target();
    info.set_item("jit_architecture", target.as_ref().map(|(arch, _)| arch))?;
    info.set_item("jit_features", target.map(|(_, features)| features))?;
    Ok(info)
}
