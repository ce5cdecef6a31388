//! Python bindings of gridbuf: thin wrappers over the core crate, with error mapping.

mod allocation;
mod convert;
mod errors;
mod presets;

use pyo3::prelude::*;

/// The compiled part of the `gridbuf` package.
#[pymodule]
fn _gridbuf(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(allocation::empty, m)?)?;
    m.add_function(wrap_pyfunction!(allocation::zeros, m)?)?;
    m.add_function(wrap_pyfunction!(allocation::ones, m)?)?;
    m.add_function(wrap_pyfunction!(allocation::full, m)?)?;
    m.add_function(wrap_pyfunction!(allocation::from_array, m)?)?;
    m.add_function(wrap_pyfunction!(allocation::plan_fn, m)?)?;
    m.add_function(wrap_pyfunction!(presets::presets, m)?)?;
    m.add_function(wrap_pyfunction!(presets::preset, m)?)?;
    m.add_function(wrap_pyfunction!(presets::register_preset, m)?)?;
    m.add_function(wrap_pyfunction!(presets::layout_map, m)?)?;
    m.add_class::<allocation::Allocation>()?;
    m.add_class::<allocation::PyPlan>()?;
    m.add_class::<presets::PyPreset>()?;
    Ok(())
}
