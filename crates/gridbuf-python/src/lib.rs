//! Python bindings of gridbuf: thin wrappers over the core crate, with error mapping.

mod allocation;
mod convert;
mod errors;
mod gtscript;
mod interfaces;
mod labelled;
mod presets;
mod stencil;

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
    m.add_function(wrap_pyfunction!(labelled::_broadcast, m)?)?;
    m.add_function(wrap_pyfunction!(labelled::_assign, m)?)?;
    m.add_function(wrap_pyfunction!(labelled::_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(labelled::_concatenate, m)?)?;
    m.add_function(wrap_pyfunction!(labelled::_transpose_axes, m)?)?;
    m.add_function(wrap_pyfunction!(labelled::_resolve_axis, m)?)?;
    m.add_function(wrap_pyfunction!(labelled::_match_out, m)?)?;
    m.add_function(wrap_pyfunction!(labelled::_index, m)?)?;
    m.add_function(wrap_pyfunction!(stencil::native_stencil, m)?)?;
    m.add_function(wrap_pyfunction!(stencil::native_kernel_names, m)?)?;
    m.add_function(wrap_pyfunction!(stencil::python_stencil, m)?)?;
    m.add_class::<stencil::Stencil>()?;
    m.add_function(wrap_pyfunction!(gtscript::gtscript_compile, m)?)?;
    m.add_class::<gtscript::GtProgram>()?;
    m.add_class::<stencil::BoundStencil>()?;
    m.add_class::<allocation::Allocation>()?;
    m.add_class::<allocation::PyPlan>()?;
    m.add_class::<presets::PyPreset>()?;
    m.add_function(wrap_pyfunction!(interfaces::array_info, m)?)?;
    m.add_function(wrap_pyfunction!(interfaces::as_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(interfaces::extract_py, m)?)?;
    m.add_class::<interfaces::PyArrayInfo>()?;
    m.add_class::<interfaces::PyDLPackOwner>()?;
    Ok(())
}
