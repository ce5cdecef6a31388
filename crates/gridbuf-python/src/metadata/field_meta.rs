//! The labels of a `gridbuf.Field` ([`FieldMeta`]) and how a Field reads them from its arguments.

use super::dims::{dims_of, dims_tuple};
use super::entry::{entry_get, repr, shape_of};
use super::halo::{halo_from, pairs_tuple};
use super::layout::whole_allocation_plan;
use super::origin::origin_from;
use crate::convert::dims_from;
use crate::data_interface::{data_interface_of, host_entry};
use crate::errors::{to_py, IntoPyResult};
use crate::pyobj::lookup;
use gridbuf::binding::ArgMeta;
use gridbuf::geometry::dims::Dim;
use gridbuf::Error;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{PyBool, PyTuple};
use std::hash::{Hash, Hasher};

/// Dims, halo and origin, as Python tuples.
pub(super) type Labels = (Py<PyTuple>, Py<PyTuple>, Py<PyTuple>);

/// The labels of a ``gridbuf.Field``: dims, halo and origin, checked once and then read by the
/// stencil binder without calling into Python. Immutable; equal (and hashing equal) when the
/// labels are.
///
/// Parameters
/// ----------
/// dims : tuple of str
///     One name per axis.
/// halo : tuple of (int, int)
///     (lower, upper) per axis.
/// origin : tuple of int
///     Start of the compute domain per axis.
#[pyclass(frozen, module = "gridbuf._gridbuf", name = "FieldMeta")]
pub struct FieldMeta {
    dims: Py<PyTuple>,
    halo: Py<PyTuple>,
    origin: Py<PyTuple>,
    /// Upper halo per axis (the lower is in `arg`).
    halo_upper: Vec<usize>,
    /// What the binder needs: dims, origin and lower halo.
    arg: ArgMeta,
    hash: isize,
}

impl FieldMeta {
    /// The labels from checked parts (one entry per axis in each).
    pub(crate) fn from_parts(
        py: Python<'_>,
        dims: Vec<Dim>,
        halo: &[(usize, usize)],
        origin: Vec<usize>,
    ) -> PyResult<FieldMeta> {
        let dims_py = dims_tuple(py, &dims)?.unbind();
        let halo_py = pairs_tuple(py, halo)?.unbind();
        let origin_py = PyTuple::new(py, &origin)?.unbind();
        let arg = ArgMeta {
            dims: Some(dims),
            origin: Some(origin),
            halo_lower: Some(halo.iter().map(|&(lo, _)| lo).collect()),
        };
        let halo_upper: Vec<usize> = halo.iter().map(|&(_, hi)| hi).collect();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        arg.hash(&mut h);
        halo_upper.hash(&mut h);
        // -1 is CPython's error value for hashes.
        let hash = (h.finish() as isize).max(0);
        Ok(FieldMeta {
            dims: dims_py,
            halo: halo_py,
            origin: origin_py,
            halo_upper,
            arg,
            hash,
        })
    }

    /// What the binder reads: dims, origin and the lower halo, in index order.
    pub(crate) fn arg_meta(&self) -> &ArgMeta {
        &self.arg
    }
}

#[pymethods]
impl FieldMeta {
    #[new]
    fn new(
        dims: &Bound<'_, PyAny>,
        halo: &Bound<'_, PyAny>,
        origin: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let py = dims.py();
        let parsed = dims_from(dims, None, "dims")?;
        let n = parsed.len();
        let pairs: Vec<(usize, usize)> = halo.extract().map_err(|_| {
            crate::convert::type_error(
                "halo",
                halo,
                "expected one (lower, upper) pair of ints per axis",
            )
        })?;
        let origin_v: Vec<usize> = origin.extract().map_err(|_| {
            crate::convert::type_error("origin", origin, "expected one non-negative int per axis")
        })?;
        if pairs.len() != n || origin_v.len() != n {
            let err = Error::field_meta_lengths(
                &repr(dims),
                n,
                &repr(halo),
                pairs.len(),
                &repr(origin),
                origin_v.len(),
            );
            return Err(to_py(py, err));
        }
        FieldMeta::from_parts(py, parsed, &pairs, origin_v)
    }

    /// Dims per axis.
    #[getter]
    fn dims(&self, py: Python<'_>) -> Py<PyTuple> {
        self.dims.clone_ref(py)
    }

    /// (lower, upper) halo per axis.
    #[getter]
    fn halo(&self, py: Python<'_>) -> Py<PyTuple> {
        self.halo.clone_ref(py)
    }

    /// Start of the compute domain per axis.
    #[getter]
    fn origin(&self, py: Python<'_>) -> Py<PyTuple> {
        self.origin.clone_ref(py)
    }

    /// The lower halo per axis.
    #[getter]
    fn halo_lower(&self) -> Vec<usize> {
        self.arg.halo_lower.clone().unwrap_or_default()
    }

    fn __hash__(&self) -> isize {
        self.hash
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<FieldMeta>() else {
            return Ok(py.NotImplemented());
        };
        let other = other.get();
        let eq = self.arg == other.arg && self.halo_upper == other.halo_upper;
        match op {
            CompareOp::Eq => Ok(PyBool::new(py, eq).to_owned().into_any().unbind()),
            CompareOp::Ne => Ok(PyBool::new(py, !eq).to_owned().into_any().unbind()),
            _ => Ok(py.NotImplemented()),
        }
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Labels)> {
        let py = slf.py();
        let this = slf.get();
        Ok((
            slf.get_type().into_any(),
            (
                this.dims.clone_ref(py),
                this.halo.clone_ref(py),
                this.origin.clone_ref(py),
            ),
        ))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "FieldMeta(dims={}, halo={}, origin={})",
            repr(self.dims.bind(py).as_any()),
            repr(self.halo.bind(py).as_any()),
            repr(self.origin.bind(py).as_any())
        )
    }
}

/// The labels of a ``Field`` over ``array`` (of ``shape``), each from the argument when given,
/// else from what the array declares, by the rules of ``gridbuf.Field``:
///
/// - dims: the array's own (``__gt_dims__``, data interface, xarray), else ``"IJK"[:ndim]`` then
///   data dims;
/// - halo: its data interface's host-memory halo, else the halo it was allocated with by
///   gridbuf (a whole allocation), else none;
/// - origin: its ``__gt_origin__``, else the lower halo.
///
/// Parameters
/// ----------
/// array : array_like
/// shape : tuple of int
/// dims, halo, origin : optional
///
/// Returns
/// -------
/// FieldMeta
///
/// Raises
/// ------
/// GridbufValueError, GridbufTypeError
///     Labels that do not fit the array.
#[pyfunction]
#[pyo3(signature = (array, shape, dims=None, halo=None, origin=None))]
pub fn field_labels<'py>(
    array: &Bound<'py, PyAny>,
    shape: Vec<usize>,
    dims: Option<&Bound<'py, PyAny>>,
    halo: Option<&Bound<'py, PyAny>>,
    origin: Option<&Bound<'py, PyAny>>,
) -> PyResult<FieldMeta> {
    let py = array.py();
    let ndim = shape.len();
    let dims = match dims.filter(|d| !d.is_none()) {
        Some(d) => dims_from(d, Some(ndim), "dims")?,
        None => match dims_of(array, shape_of(array)?.map(|s| s.len()))? {
            Some(declared) => {
                // What the array declares, checked against the Field's own shape.
                let names: Vec<String> = declared.iter().map(Dim::to_string).collect();
                gridbuf::geometry::dims::parse_names(&names, Some(ndim), "dims")
                    .py(py)?
                    .into_vec()
            }
            None => gridbuf::geometry::dims::default_dims(ndim).into_vec(),
        },
    };
    let halo = match halo.filter(|h| !h.is_none()) {
        Some(h) => halo_from(h, &shape, None)?,
        None => {
            let declared = match data_interface_of(array)? {
                Some(di) => match host_entry(&di)? {
                    Some(entry) => entry_get(&entry, intern!(py, "halo"))?,
                    None => None,
                },
                None => None,
            };
            match declared {
                Some(h) => halo_from(&h, &shape, None)?,
                None => match whole_allocation_plan(array)? {
                    Some(plan) => halo_from(&plan.getattr(intern!(py, "halo"))?, &shape, None)?,
                    None => vec![(0, 0); ndim],
                },
            }
        }
    };
    let origin = match origin.filter(|o| !o.is_none()) {
        Some(o) => Some(o.clone()),
        None => lookup(array, intern!(py, "__gt_origin__"))?,
    };
    let origin = match origin {
        Some(o) => origin_from(&o, Some(&shape), "origin")?,
        None => halo.iter().map(|&(lo, _)| lo).collect(),
    };
    FieldMeta::from_parts(py, dims, &halo, origin)
}
