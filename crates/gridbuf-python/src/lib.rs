//! Python bindings of gridbuf: thin wrappers over the core crate, with error mapping.
//!
//! Each module wraps one concept of the core and is named after it:
//!
//! - [`errors`]: the exception classes (declared once, built at import) and core errors to them;
//! - [`convert`]: allocation arguments (shapes, halos, dims) read from Python objects;
//! - [`numpy_interop`]: NumPy arrays from raw parts, dtypes both ways, releasing the GIL;
//! - [`allocation`], [`presets`], [`labelled`], [`stencil`]: the Python API of `plan`,
//!   `preset`, `labelled` and `binding`;
//! - reading arrays (`arrays` in the core), from the bottom up: [`pyobj`] (attribute and
//!   mapping lookups, which kind of object an argument is), [`found`] (what a parser returns),
//!   [`interface_dict`], then one parser per interface: [`array_interface`],
//!   [`cuda_array_interface`], [`data_interface`], [`buffer_protocol`], [`dlpack`]; then
//!   [`extract`] (walks the core's order of interfaces, `precedence`, and parses the one it
//!   picks), [`metadata`] (what an array declares), [`argument`] (a stencil argument read once
//!   into the record the binder uses), and [`array_info`] (the `ArrayInfo` class,
//!   `array_info`, `as_numpy`). No parser imports a module above it.

#![deny(clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]

mod allocation;
mod argument;
mod array_info;
mod array_interface;
mod buffer_protocol;
mod convert;
mod cuda_array_interface;
mod data_interface;
mod dlpack;
mod errors;
mod extract;
mod field_descriptor;
mod found;
mod gtscript;
mod halo_exchange;
mod interface_dict;
mod labelled;
mod machine;
mod metadata;
mod numpy_interop;
mod presets;
mod pyobj;
mod stencil;
mod sync_state;

use pyo3::prelude::*;

/// The compiled part of the `gridbuf` package.
#[pymodule]
fn _gridbuf(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
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
    m.add_function(wrap_pyfunction!(array_info::array_info, m)?)?;
    m.add_function(wrap_pyfunction!(array_info::as_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(array_info::extract_py, m)?)?;
    m.add_class::<array_info::PyArrayInfo>()?;
    m.add_class::<dlpack::PyDLPackOwner>()?;
    m.add_class::<metadata::FieldMeta>()?;
    m.add_class::<field_descriptor::FieldDescriptor>()?;
    m.add_class::<field_descriptor::OutputParams>()?;
    m.add_class::<metadata::Acquired>()?;
    m.add_function(wrap_pyfunction!(metadata::normalize_dims, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::default_dims, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::get_dims, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::get_origin, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::normalize_origin, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::normalize_halo, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::data_interface, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::data_interface_entry, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::data_interface_for, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::whole_allocation_plan, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::layout_from_strides, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::field_labels, m)?)?;
    m.add_class::<halo_exchange::PyHaloExchangePlan>()?;
    m.add_class::<halo_exchange::PyBlockDecomposition>()?;
    m.add_class::<sync_state::PySyncState>()?;
    m.add_function(wrap_pyfunction!(machine::machine_info, m)?)?;
    Ok(())
}
