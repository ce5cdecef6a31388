//! Python arguments to core values (shapes, halos, dims, dims given as names), with gridbuf
//! errors that name the parameter and the value.

use crate::errors::{raise, to_py, Class, IntoPyResult};
use gridbuf::error::{InvalidTypeMessage, InvalidValueMessage};
use gridbuf::{AxisVec, Dim, Error};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyInt, PyList, PyMapping, PyString, PyTuple};

/// `repr(obj)`, the way messages show a value.
pub fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unprintable>".into())
}

/// Raises a `GridbufTypeError` for `param`.
pub fn type_error(param: &str, obj: &Bound<'_, PyAny>, expected: &str) -> PyErr {
    let message = InvalidTypeMessage::new(param, &repr(obj), expected).to_string();
    raise(obj.py(), Class::Type, message)
}

/// Raises a `GridbufValueError` for `param`.
pub fn value_error(param: &str, obj: &Bound<'_, PyAny>, expected: &str) -> PyErr {
    let message = InvalidValueMessage::new(param, &repr(obj), expected).to_string();
    raise(obj.py(), Class::Value, message)
}

/// Calls `f` on every item of a tuple, a list or another sequence (not a string).
fn for_each_item<'py>(
    obj: &Bound<'py, PyAny>,
    param: &str,
    expected: &str,
    mut f: impl FnMut(Bound<'py, PyAny>) -> PyResult<()>,
) -> PyResult<()> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t.iter().try_for_each(f);
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l.iter().try_for_each(f);
    }
    if obj.is_instance_of::<PyString>() || obj.hasattr("__len__").ok() != Some(true) {
        return Err(type_error(param, obj, expected));
    }
    let iter = obj
        .try_iter()
        .map_err(|_| type_error(param, obj, expected))?;
    for item in iter {
        f(item?)?;
    }
    Ok(())
}

/// An int argument: one that fits `isize`, or one too large (or too negative) for it.
enum IntArg {
    Fits(isize),
    Huge { negative: bool },
}

/// Reads an int that is not a bool (bools are ints in Python, but never mean a size).
fn int_arg(item: &Bound<'_, PyAny>) -> PyResult<Option<IntArg>> {
    if item.is_instance_of::<PyBool>() {
        return Ok(None);
    }
    if let Ok(v) = item.extract::<isize>() {
        return Ok(Some(IntArg::Fits(v)));
    }
    if item.is_instance_of::<PyInt>() || item.hasattr(pyo3::intern!(item.py(), "__index__"))? {
        let index = item.call_method0(pyo3::intern!(item.py(), "__index__"))?;
        return Ok(Some(IntArg::Huge {
            negative: index.lt(0)?,
        }));
    }
    Ok(None)
}

/// One non-negative int of `param` (whose whole value is `whole`, for messages).
pub fn non_negative(
    item: &Bound<'_, PyAny>,
    param: &str,
    whole: &Bound<'_, PyAny>,
    expected: &str,
) -> PyResult<usize> {
    match int_arg(item)? {
        None => Err(type_error(param, whole, expected)),
        Some(IntArg::Fits(v)) => {
            usize::try_from(v).map_err(|_| value_error(param, whole, expected))
        }
        Some(IntArg::Huge { negative: true }) => Err(value_error(param, whole, expected)),
        Some(IntArg::Huge { negative: false }) if param == "shape" => Err(to_py(
            whole.py(),
            Error::overflow_shown(param, repr(whole), "the byte size"),
        )),
        Some(IntArg::Huge { negative: false }) => Err(value_error(
            param,
            whole,
            "the value is far beyond any valid extent",
        )),
    }
}

/// A sequence of non-negative ints, such as a shape or an index.
pub fn usize_seq(obj: &Bound<'_, PyAny>, param: &str) -> PyResult<AxisVec<usize>> {
    const EXPECTED: &str = "expected a sequence of non-negative ints";
    let mut out = AxisVec::new();
    for_each_item(obj, param, EXPECTED, |item| {
        out.push(non_negative(&item, param, obj, EXPECTED)?);
        Ok(())
    })?;
    Ok(out)
}

/// A sequence of ints that may be negative, such as an origin (a stencil reading a field only
/// after its origin takes a negative one).
pub fn isize_seq(obj: &Bound<'_, PyAny>, param: &str) -> PyResult<AxisVec<isize>> {
    const EXPECTED: &str = "expected a sequence of ints";
    let mut out = AxisVec::new();
    for_each_item(obj, param, EXPECTED, |item| {
        match int_arg(&item)? {
            None => return Err(type_error(param, obj, EXPECTED)),
            Some(IntArg::Fits(v)) => out.push(v),
            Some(IntArg::Huge { .. }) => {
                return Err(value_error(
                    param,
                    obj,
                    "the value is far beyond any valid origin",
                ))
            }
        }
        Ok(())
    })?;
    Ok(out)
}

/// A halo: per axis an int or a (lower, upper) pair of non-negative ints.
pub fn halo(obj: &Bound<'_, PyAny>) -> PyResult<AxisVec<(usize, usize)>> {
    const EXPECTED: &str = "expected one non-negative int or (lower, upper) pair per axis";
    let mut out = AxisVec::new();
    for_each_item(obj, "halo", EXPECTED, |item| {
        if int_arg(&item)?.is_some() {
            let w = non_negative(&item, "halo", obj, EXPECTED)?;
            out.push((w, w));
            return Ok(());
        }
        let mut pair = Vec::with_capacity(2);
        for_each_item(&item, "halo", EXPECTED, |v| {
            pair.push(non_negative(&v, "halo", obj, EXPECTED)?);
            Ok(())
        })
        .map_err(|e| {
            if e.is_instance_of::<pyo3::exceptions::PyValueError>(obj.py()) {
                e
            } else {
                type_error("halo", obj, EXPECTED)
            }
        })?;
        match pair[..] {
            [lo, hi] => out.push((lo, hi)),
            _ => return Err(value_error("halo", obj, EXPECTED)),
        }
        Ok(())
    })?;
    Ok(out)
}

/// Dims: a string with one character per axis, or a sequence of names (strings, or objects
/// with `__gt_axis_name__`).
pub fn dims(obj: &Bound<'_, PyAny>, param: &str) -> PyResult<AxisVec<Dim>> {
    const EXPECTED: &str =
        "expected a string such as \"IJK\" or a sequence of names \"I\", \"J\", \"K\", \"0\", ...";
    let py = obj.py();
    let invalid = |_| {
        value_error(
            param,
            obj,
            "dimension names are \"I\", \"J\", \"K\" or decimal strings such as \"0\"",
        )
    };
    if let Ok(s) = obj.cast::<PyString>() {
        return gridbuf::geometry::dims::parse_dims_str(s.to_str()?)
            .map(AxisVec::from_vec)
            .map_err(invalid);
    }
    let mut out = AxisVec::new();
    let axis_name = pyo3::intern!(py, "__gt_axis_name__");
    for_each_item(obj, param, EXPECTED, |item| {
        let name = match item.getattr_opt(axis_name)? {
            Some(name) => name,
            None => item,
        };
        let name = name
            .cast::<PyString>()
            .map_err(|_| type_error(param, obj, EXPECTED))?;
        out.push(Dim::parse(name.to_str()?).map_err(invalid)?);
        Ok(())
    })?;
    Ok(out)
}

/// Picks the one of two aliased keywords that was given; giving both is an error. A keyword
/// passed as `None` arrives here as not given (PyO3 maps `None` to `Option::None`).
pub fn alias<'py>(
    a: Option<Bound<'py, PyAny>>,
    a_name: &str,
    b: Option<Bound<'py, PyAny>>,
    b_name: &str,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match (a, b) {
        (Some(a), Some(_)) => Err(to_py(
            a.py(),
            Error::alias_conflict(a_name, b_name, repr(&a)),
        )),
        (a, b) => Ok(a.or(b)),
    }
}

/// The name of one dims entry: a str, the `__gt_axis_name__` of an object, or the `.value` of
/// an enum member.
pub(crate) fn dim_name(d: &Bound<'_, PyAny>, source: &str) -> PyResult<String> {
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
pub(crate) fn dim_names(dims: &Bound<'_, PyAny>, source: &str) -> PyResult<Vec<String>> {
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
    gridbuf::geometry::dims::parse_names_as(&names, ndim, source, Some(&repr(dims)))
        .map(|d| d.into_vec())
        .py(dims.py())
}
