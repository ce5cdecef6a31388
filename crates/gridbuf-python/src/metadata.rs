//! What an array says about itself besides its memory, read in one place: its dims
//! (`__gt_dims__`, the data interface's `"dims"`, an xarray `DataArray`'s `.dims`), its origin
//! (`__gt_origin__`), its halo, and the metadata a `gridbuf.Field` carries ([`FieldMeta`]).
//! The rules are the core's (`gridbuf::dims`, `origin`, `halo`, `Plan::is_whole`); this module converts Python values to the
//! names and ints they take. `gridbuf._metadata` and `gridbuf.Field` call these functions, and
//! the stencil binder reads the same values without going through Python code.

use crate::data_interface::{data_interface_of, gpu_entry, host_entry, is_dataarray};
use crate::errors::{to_py, IntoPyResult};
use crate::extract::lookup;
use gridbuf::binding::ArgMeta;
use gridbuf::dims::Dim;
use gridbuf::Error;
use pyo3::exceptions::PyKeyError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{PyBool, PyBytes, PyDict, PyMapping, PyString, PyTuple};
use std::hash::{Hash, Hasher};

fn repr<T>(obj: &Bound<'_, T>) -> String {
    obj.as_any()
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unprintable>".into())
}

// ---------------------------------------------------------------------------------------------
// Dims
// ---------------------------------------------------------------------------------------------

/// The name of one dims entry: a str, the `__gt_axis_name__` of an object, or the `.value` of
/// an enum member.
fn dim_name(d: &Bound<'_, PyAny>, source: &str) -> PyResult<String> {
    let py = d.py();
    if let Ok(s) = d.cast::<PyString>() {
        return Ok(s.to_str()?.to_owned());
    }
    let name = match d.getattr_opt(intern!(py, "__gt_axis_name__"))? {
        Some(n) if !n.is_none() => n,
        _ => d
            .getattr_opt(intern!(py, "value"))?
            .unwrap_or_else(|| d.clone()),
    };
    match name.cast::<PyString>() {
        Ok(s) => Ok(s.to_str()?.to_owned()),
        Err(_) => Err(to_py(py, Error::dim_entry_type(source, &repr(d)))),
    }
}

/// The names dims are given as: one per character of a string, else one per entry of a
/// sequence (see [`dim_name`]).
fn dim_names(dims: &Bound<'_, PyAny>, source: &str) -> PyResult<Vec<String>> {
    let py = dims.py();
    if let Ok(s) = dims.cast::<PyString>() {
        return Ok(s.to_str()?.chars().map(String::from).collect());
    }
    let not_names = || to_py(py, Error::dims_not_names(source, repr(dims)));
    if dims.is_instance_of::<PyBytes>() || dims.cast::<PyMapping>().is_ok() {
        return Err(not_names());
    }
    let iter = dims.try_iter().map_err(|_| not_names())?;
    iter.map(|d| dim_name(&d?, source)).collect()
}

/// Dims given as a string or a sequence of names, checked by the core rule (valid names, none
/// repeated, one per axis when `ndim` is given).
pub(crate) fn dims_from(
    dims: &Bound<'_, PyAny>,
    ndim: Option<usize>,
    source: &str,
) -> PyResult<Vec<Dim>> {
    let names = dim_names(dims, source)?;
    gridbuf::dims::parse_names_as(&names, ndim, source, Some(&repr(dims)))
        .map(|d| d.into_vec())
        .py(dims.py())
}

/// Dims as the tuple of names Python sees.
pub(crate) fn dims_tuple<'py>(py: Python<'py>, dims: &[Dim]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        dims.iter().map(|d| match d {
            Dim::I => intern!(py, "I").clone(),
            Dim::J => intern!(py, "J").clone(),
            Dim::K => intern!(py, "K").clone(),
            Dim::Data(_) => PyString::new(py, &d.to_string()),
        }),
    )
}

/// Validate dims given as a string (one character per axis) or a sequence of names.
///
/// Parameters
/// ----------
/// dims : str or sequence
///     ``"KJI"``, ``("I", "J", "0")``, or objects with ``__gt_axis_name__`` or ``.value``.
/// ndim : int or None
///     Number of axes the dims must name; None skips the check.
/// source : str
///     What the dims came from, named in messages.
///
/// Returns
/// -------
/// tuple of str
///     The validated names.
#[pyfunction]
#[pyo3(signature = (dims, ndim, source))]
pub fn normalize_dims<'py>(
    dims: &Bound<'py, PyAny>,
    ndim: Option<usize>,
    source: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    dims_tuple(dims.py(), &dims_from(dims, ndim, source)?)
}

/// The default dims of an array with `ndim` axes: ``"IJK"[:ndim]``, then data dims.
#[pyfunction]
pub fn default_dims(py: Python<'_>, ndim: usize) -> PyResult<Bound<'_, PyTuple>> {
    dims_tuple(py, &gridbuf::dims::default_dims(ndim))
}

/// The value of `key` in a buffer-info mapping, `None` when missing or None.
fn entry_get<'py>(
    entry: &Bound<'py, PyAny>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let value = match entry.cast::<PyDict>() {
        Ok(d) => d.get_item(key)?,
        Err(_) => match entry.get_item(key) {
            Ok(v) => Some(v),
            Err(e) if e.is_instance_of::<PyKeyError>(entry.py()) => None,
            Err(e) => return Err(e),
        },
    };
    Ok(value.filter(|v| !v.is_none()))
}

/// The buffer info of the data interface of `obj`: its host entry, else its GPU entry.
fn data_entry<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(di) = data_interface_of(obj)? else {
        return Ok(None);
    };
    match host_entry(&di)? {
        Some(e) => Ok(Some(e)),
        None => gpu_entry(&di),
    }
}

/// The shape an object reports: its `shape`, else the `shape` of its array interface, CUDA
/// array interface or data interface; `None` when it reports none.
pub(crate) fn shape_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<usize>>> {
    let py = obj.py();
    if let Some(shape) = lookup(obj, intern!(py, "shape"))? {
        return Ok(Some(shape.extract()?));
    }
    for attr in [
        intern!(py, "__array_interface__"),
        intern!(py, "__cuda_array_interface__"),
    ] {
        if let Some(iface) = lookup(obj, attr)? {
            if iface.cast::<PyMapping>().is_ok() {
                if let Some(shape) = entry_get(&iface, intern!(py, "shape"))? {
                    return Ok(Some(shape.extract()?));
                }
            }
        }
    }
    if let Some(entry) = data_entry(obj)? {
        if let Some(shape) = entry_get(&entry, intern!(py, "shape"))? {
            return Ok(Some(shape.extract()?));
        }
    }
    Ok(None)
}

/// Whether every name is a gt dim name (`I`, `J`, `K` or a decimal string).
fn all_gt_names(names: &[String]) -> bool {
    names.iter().all(|n| Dim::parse(n).is_ok())
}

/// The names of an xarray object's `.dims` as strings.
fn xarray_dim_names(obj: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    obj.getattr(intern!(obj.py(), "dims"))?
        .try_iter()?
        .map(|d| Ok(d?.str()?.to_str()?.to_owned()))
        .collect()
}

/// The gt dims an xarray `DataArray` is labelled with (its `.dims`, when they are gt names).
pub(crate) fn dataarray_own_dims(da: &Bound<'_, PyAny>) -> PyResult<Option<Vec<Dim>>> {
    let names = xarray_dim_names(da)?;
    let ndim: usize = da.getattr(intern!(da.py(), "ndim"))?.extract()?;
    // A DataArray labelled with other names (lat, lon, ...) declares no gt dims.
    Ok(
        gridbuf::dims::parse_names(&names, Some(ndim), "DataArray.dims")
            .ok()
            .map(|d| d.into_vec()),
    )
}

/// Checks that the dims a DataArray's data declares (if any) are the DataArray's own.
pub(crate) fn check_dataarray_dims(
    py: Python<'_>,
    dims: &[Dim],
    inner: Option<&[Dim]>,
) -> PyResult<()> {
    match inner {
        Some(inner) if inner != dims => Err(to_py(
            py,
            Error::dataarray_dims_differ(
                repr(&dims_tuple(py, dims)?),
                &repr(&dims_tuple(py, inner)?),
            ),
        )),
        _ => Ok(()),
    }
}

/// The gt dims of an xarray `DataArray` (its `.dims`, when they are gt names), checked against
/// the dims its data declares; what its `__gt_dims__` accessor reports.
pub(crate) fn dataarray_dims(da: &Bound<'_, PyAny>) -> PyResult<Option<Vec<Dim>>> {
    let Some(dims) = dataarray_own_dims(da)? else {
        return Ok(None);
    };
    let data = da.getattr(intern!(da.py(), "data"))?;
    let ndim = shape_of(&data)?.map(|s| s.len());
    check_dataarray_dims(da.py(), &dims, dims_of(&data, ndim)?.as_deref())?;
    Ok(Some(dims))
}

/// The dims `obj` declares, in index order, checked against `ndim`: its `__gt_dims__`, the
/// `"dims"` of its data interface, or (xarray objects) its `.dims` when they are gt names.
pub(crate) fn dims_of(obj: &Bound<'_, PyAny>, ndim: Option<usize>) -> PyResult<Option<Vec<Dim>>> {
    let py = obj.py();
    if is_dataarray(obj)? {
        return dataarray_dims(obj);
    }
    if let Some(dims) = lookup(obj, intern!(py, "__gt_dims__"))? {
        return dims_from(&dims, ndim, "__gt_dims__").map(Some);
    }
    if let Some(entry) = data_entry(obj)? {
        if let Some(dims) = entry_get(&entry, intern!(py, "dims"))? {
            return dims_from(&dims, ndim, "__gt_data_interface__ dims").map(Some);
        }
    }
    let module = obj.get_type().module()?;
    if module.to_str()?.starts_with("xarray.") && obj.hasattr(intern!(py, "dims"))? {
        let names = xarray_dim_names(obj)?;
        if all_gt_names(&names) {
            return gridbuf::dims::parse_names(&names, ndim, "DataArray.dims")
                .py(py)
                .map(|d| Some(d.into_vec()));
        }
    }
    Ok(None)
}

/// The semantic dims of an array, in index order.
///
/// Looks, in order, at ``obj.__gt_dims__``, the ``"dims"`` of its data interface, the ``.dims``
/// of an xarray DataArray, and the dims of ``annotation`` (a ``gridbuf.Field[...]`` annotation,
/// an object with ``.dims``, a string or a sequence of names).
///
/// Parameters
/// ----------
/// obj : array_like
///     Any array gridbuf understands.
/// annotation : optional
///     Fallback dims, e.g. from a stencil's parameter annotation.
///
/// Returns
/// -------
/// tuple of str or None
///     The dims, validated against the number of axes; None when nothing declares them.
///
/// Raises
/// ------
/// GridbufValueError
///     Invalid, duplicated or too few/many names.
/// GridbufTypeError
///     Dims of a type that cannot name dimensions.
#[pyfunction]
#[pyo3(signature = (obj, annotation=None))]
pub fn get_dims<'py>(
    obj: &Bound<'py, PyAny>,
    annotation: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let py = obj.py();
    let ndim = shape_of(obj)?.map(|s| s.len());
    if let Some(dims) = dims_of(obj, ndim)? {
        return dims_tuple(py, &dims).map(Some);
    }
    if let Some(ann) = annotation.filter(|a| !a.is_none()) {
        let dims = match ann.getattr_opt(intern!(py, "dims"))? {
            Some(d) => d,
            None => ann.clone(),
        };
        if !dims.is_none() {
            return dims_tuple(py, &dims_from(&dims, ndim, "annotation dims")?).map(Some);
        }
    }
    Ok(None)
}

// ---------------------------------------------------------------------------------------------
// Origin and halo
// ---------------------------------------------------------------------------------------------

/// An origin given as a sequence of ints, checked by the core rule against `shape`.
pub(crate) fn origin_from(
    origin: &Bound<'_, PyAny>,
    shape: Option<&[usize]>,
    source: &str,
) -> PyResult<Vec<usize>> {
    let py = origin.py();
    let not_ints = || to_py(py, Error::origin_not_ints(source, repr(origin)));
    let iter = origin.try_iter().map_err(|_| not_ints())?;
    let mut values = Vec::new();
    for v in iter {
        let v = v?;
        if v.is_instance_of::<PyBool>() {
            return Err(not_ints());
        }
        values.push(v.extract::<i64>().map_err(|_| not_ints())?);
    }
    match shape {
        Some(shape) => gridbuf::origin::validate(&values, shape, source),
        None => gridbuf::origin::validate_unbounded(&values, source),
    }
    .map(|o| o.into_vec())
    .py(py)
}

/// The ``__gt_origin__`` `obj` declares, checked against `shape`; `None` when it has none.
pub(crate) fn origin_of(
    obj: &Bound<'_, PyAny>,
    shape: Option<&[usize]>,
) -> PyResult<Option<Vec<usize>>> {
    match lookup(obj, intern!(obj.py(), "__gt_origin__"))? {
        Some(origin) => origin_from(&origin, shape, "__gt_origin__").map(Some),
        None => Ok(None),
    }
}

/// Validate an origin: one int per axis, each between 0 and the axis extent.
///
/// Parameters
/// ----------
/// origin : sequence of int
///     The origin.
/// shape : sequence of int or None
///     The extents it must lie in; None only checks that no entry is negative.
/// source : str
///     What the origin came from, named in messages.
///
/// Returns
/// -------
/// tuple of int
#[pyfunction]
#[pyo3(signature = (origin, shape, source))]
pub fn normalize_origin<'py>(
    origin: &Bound<'py, PyAny>,
    shape: Option<Vec<usize>>,
    source: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(origin.py(), origin_from(origin, shape.as_deref(), source)?)
}

/// The ``__gt_origin__`` of an array as a tuple of ints, validated against its shape.
///
/// Parameters
/// ----------
/// obj : array_like
///     Any array gridbuf understands.
///
/// Returns
/// -------
/// tuple of int or None
///     The origin, or None when the array does not declare one.
///
/// Raises
/// ------
/// GridbufTypeError
///     The origin is not a sequence of ints.
/// GridbufValueError
///     Wrong length, negative, or beyond the shape.
#[pyfunction]
pub fn get_origin<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Some(origin) = lookup(obj, intern!(obj.py(), "__gt_origin__"))? else {
        return Ok(None);
    };
    let shape = shape_of(obj)?;
    normalize_origin(&origin, shape, "__gt_origin__").map(Some)
}

/// A halo given per axis as an int or a (lower, upper) pair, checked by the core rule.
pub(crate) fn halo_from(
    halo: &Bound<'_, PyAny>,
    shape: &[usize],
    dims: Option<&[Dim]>,
) -> PyResult<Vec<(usize, usize)>> {
    let pairs = crate::convert::halo(halo)?.into_vec();
    gridbuf::halo::check_fits(shape, &pairs, dims, "halo").py(halo.py())?;
    Ok(pairs)
}

/// Pairs as a tuple of (lower, upper) tuples.
fn pairs_tuple<'py>(py: Python<'py>, pairs: &[(usize, usize)]) -> PyResult<Bound<'py, PyTuple>> {
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

/// The halo a data interface entry declares (its lower sides), in index order.
pub(crate) fn entry_halo_lower(entry: &Bound<'_, PyAny>) -> PyResult<Option<Vec<usize>>> {
    match entry_get(entry, intern!(entry.py(), "halo"))? {
        Some(h) => Ok(Some(
            crate::convert::halo(&h)?
                .into_iter()
                .map(|(lo, _)| lo)
                .collect(),
        )),
        None => Ok(None),
    }
}

// ---------------------------------------------------------------------------------------------
// The metadata of a Field
// ---------------------------------------------------------------------------------------------

/// Dims, halo and origin, as Python tuples.
type Labels = (Py<PyTuple>, Py<PyTuple>, Py<PyTuple>);

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

// ---------------------------------------------------------------------------------------------
// Data-interface callbacks
// ---------------------------------------------------------------------------------------------

/// The `acquire`, `touch` and `release` callables of one data-interface entry.
pub(crate) type EntryCallbacks<'py> = [Option<Bound<'py, PyAny>>; 3];

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

fn call(f: &Option<Bound<'_, PyAny>>) -> PyResult<()> {
    match f {
        Some(f) => f.call0().map(|_| ()),
        None => Ok(()),
    }
}

/// [`EntryCallbacks`] held across calls.
type OwnedCallbacks = [Option<Py<PyAny>>; 3];

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

fn bind_all<'py>(py: Python<'py>, cbs: &[OwnedCallbacks]) -> PyHooks<'py> {
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

// ---------------------------------------------------------------------------------------------
// Reading and building data interfaces
// ---------------------------------------------------------------------------------------------

/// The ``__gt_data_interface__`` (or the older ``__gt_interface__``) of ``obj``, or None.
///
/// Raises
/// ------
/// GridbufTypeError
///     The attribute is not a mapping.
#[pyfunction]
pub fn data_interface<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(data_interface_of(obj)?.map(|di| di.mapping))
}

/// The buffer info of a data interface for host memory (key ``None``, else ``"cpu"``), or for
/// GPU memory (key ``"gpu"``, else ``"cuda"``) when ``gpu``; None when it has none.
#[pyfunction]
#[pyo3(signature = (obj, gpu=false))]
pub fn data_interface_entry<'py>(
    obj: &Bound<'py, PyAny>,
    gpu: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(di) = data_interface_of(obj)? else {
        return Ok(None);
    };
    if gpu {
        gpu_entry(&di)
    } else {
        host_entry(&di)
    }
}

/// Copies `key` of `from` into `to` when it is set there and not None.
fn copy_key<'py>(
    from: &Bound<'py, PyAny>,
    to: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> PyResult<()> {
    if let Some(v) = entry_get(from, key)? {
        to.set_item(key, v)?;
    }
    Ok(())
}

/// The data interface of an array labelled with ``dims`` (and ``halo``): what a ``Field`` and
/// an xarray ``DataArray`` report as their ``__gt_data_interface__``.
///
/// An array with a data interface of its own keeps that interface's entries, under their keys
/// and with their callbacks and ``halo`` (unless ``halo`` is given); its plain array interfaces
/// are then not read, since reading them may have effects (a mirrored field syncs on every
/// read). Otherwise one entry per memory the array exposes: key ``None`` with its
/// ``__array_interface__`` (with ``host_fallback``, that of ``numpy.asarray(array)`` when it has
/// neither array interface), key ``"gpu"`` with its ``__cuda_array_interface__``.
///
/// Parameters
/// ----------
/// array : array_like
///     The labelled array.
/// dims : tuple of str
///     Dims per axis, set in every entry.
/// halo : tuple of (int, int), optional
///     Halo per axis, set in every entry when given.
/// strict : bool
///     Raise when the array's own data interface declares other dims (a DataArray must agree
///     with its data; a Field relabels its array).
/// host_fallback : bool
///     Describe host memory through ``numpy.asarray(array)`` when the array has no array
///     interface (DLPack and ``__array__`` producers).
///
/// Returns
/// -------
/// dict or None
///     None when the array exposes no memory this way.
#[pyfunction]
#[pyo3(signature = (array, dims, halo=None, strict=false, host_fallback=false))]
pub fn data_interface_for<'py>(
    array: &Bound<'py, PyAny>,
    dims: &Bound<'py, PyTuple>,
    halo: Option<&Bound<'py, PyAny>>,
    strict: bool,
    host_fallback: bool,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let py = array.py();
    let inner = data_interface_of(array)?;
    let (mut host, gpu) = match inner {
        Some(_) => (None, None),
        None => (
            lookup(array, intern!(py, "__array_interface__"))?,
            lookup(array, intern!(py, "__cuda_array_interface__"))?,
        ),
    };
    if inner.is_none() && host.is_none() && gpu.is_none() && host_fallback {
        let asarray = py.import("numpy")?.getattr("asarray")?;
        host = Some(asarray.call1((array,))?.getattr("__array_interface__")?);
    }
    let dims_key = intern!(py, "dims");
    let halo_key = intern!(py, "halo");
    let label = |entry: &Bound<'py, PyDict>,
                 own: Option<&Bound<'py, PyAny>>,
                 key: &Bound<'py, PyAny>|
     -> PyResult<()> {
        if let Some(own) = own {
            for name in [
                intern!(py, "acquire"),
                intern!(py, "touch"),
                intern!(py, "release"),
            ] {
                copy_key(own, entry, name)?;
            }
            if halo.is_none() {
                copy_key(own, entry, halo_key)?;
            }
            if strict {
                if let Some(d) = entry_get(own, dims_key)? {
                    let declared = dims_from(&d, Some(dims.len()), "dims")?;
                    if dims_from(dims, None, "dims")? != declared {
                        let err = Error::dataarray_entry_dims_differ(
                            repr(dims),
                            &repr(key),
                            &repr(&dims_tuple(py, &declared)?),
                        );
                        return Err(to_py(py, err));
                    }
                }
            }
        }
        entry.set_item(dims_key, dims)?;
        if let Some(h) = halo {
            entry.set_item(halo_key, h)?;
        }
        Ok(())
    };
    let out = PyDict::new(py);
    if let Some(di) = inner {
        for item in di.mapping.call_method0(intern!(py, "items"))?.try_iter()? {
            let (key, entry): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
            let copy = PyDict::new(py);
            copy.call_method1(intern!(py, "update"), (&entry,))?;
            label(&copy, Some(&entry), &key)?;
            out.set_item(key, copy)?;
        }
        return Ok(Some(out));
    }
    for (key, iface) in [
        (py.None().into_bound(py), host),
        (intern!(py, "gpu").clone().into_any(), gpu),
    ] {
        let Some(iface) = iface else { continue };
        let entry = PyDict::new(py);
        entry.call_method1(intern!(py, "update"), (&iface,))?;
        label(&entry, None, &key)?;
        out.set_item(key, entry)?;
    }
    Ok((!out.is_empty()).then_some(out))
}

// ---------------------------------------------------------------------------------------------
// Allocations and layouts
// ---------------------------------------------------------------------------------------------

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
    PyTuple::new(py, gridbuf::layout::from_strides(&strides))
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
                gridbuf::dims::parse_names(&names, Some(ndim), "dims")
                    .py(py)?
                    .into_vec()
            }
            None => gridbuf::dims::default_dims(ndim).into_vec(),
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
