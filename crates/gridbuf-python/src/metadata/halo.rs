//! Halos: a halo argument or a data-interface entry's `"halo"`, checked against a shape.

use crate::convert::dims_from;
use crate::errors::IntoPyResult;
use gridbuf::geometry::dims::Dim;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A halo given per axis as an int or a (lower, upper) pair, checked by the core rule.
pub(crate) fn halo_from(
    halo: &Bound<'_, PyAny>,
    shape: &[usize],
    dims: Option<&[Dim]>,
) -> PyResult<Vec<(usize, usize)>> {
    let pairs = crate::convert::halo(halo)?.into_vec();
    gridbuf::geometry::halo::check_fits(shape, &pairs, dims, "halo").py(halo.py())?;
    Ok(pairs)
}

/// Pairs as a tuple of (lower, upper) tuples.
pub(super) fn pairs_tuple<'py>(
    py: Python<'py>,
    pairs: &[(usize, usize)],
) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, pairs.iter().map(|&(lo, hi)| (lo, hi)))
}

/// Validate a halo: per axis an int or a (lower, upper) pair, fitting inside the shape.
///
/// Parameters
/// ----------
/// halo : sequence of int or (int, int)
///     The halo per axis.
/// shape : sequence of int
///     The extents it must fit in.
/// dims : sequence of str, optional
///     Dims per axis, named in messages.
///
/// Returns
/// -------
/// tuple of (int, int)
///     (lower, upper) per axis.
#[pyfunction]
#[pyo3(signature = (halo, shape, dims=None))]
pub fn normalize_halo<'py>(
    halo: &Bound<'py, PyAny>,
    shape: Vec<usize>,
    dims: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let dims = match dims.filter(|d| !d.is_none()) {
        Some(d) => Some(dims_from(d, None, "dims")?),
        None => None,
    };
    pairs_tuple(halo.py(), &halo_from(halo, &shape, dims.as_deref())?)
}
