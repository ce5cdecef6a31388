//! Whole gridbuf allocations and the layout map of byte strides.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The plan of an array gridbuf allocated, when ``array`` is all of that allocation (a NumPy
/// array, or a view of one, over exactly the planned shape, strides and first element); else
/// None.
///
/// Parameters
/// ----------
/// array : object
///     Any object.
///
/// Returns
/// -------
/// Plan or None
#[pyfunction]
pub fn whole_allocation_plan<'py>(
    array: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = array.py();
    if crate::numpy_interop::as_ndarray(array).is_none() {
        return Ok(None);
    }
    let mut owner = array.getattr(intern!(py, "base"))?;
    while crate::numpy_interop::as_ndarray(&owner).is_some() {
        owner = owner.getattr(intern!(py, "base"))?;
    }
    let Ok(allocation) = owner.cast::<crate::allocation::Allocation>() else {
        return Ok(None);
    };
    let info = crate::extract::extract_array(array)?.info;
    let whole = allocation
        .borrow()
        .is_whole(&info.shape, &info.strides, info.ptr);
    let plan = owner.getattr(intern!(py, "plan"))?;
    Ok(whole.then_some(plan))
}

/// The layout map byte strides follow: axes ranked from the largest absolute stride (rank 0)
/// to the smallest; equal strides keep index order.
///
/// Parameters
/// ----------
/// strides : sequence of int
///
/// Returns
/// -------
/// tuple of int
#[pyfunction]
pub fn layout_from_strides(py: Python<'_>, strides: Vec<isize>) -> PyResult<Bound<'_, PyTuple>> {
    PyTuple::new(py, gridbuf::geometry::layout::from_strides(&strides))
}
