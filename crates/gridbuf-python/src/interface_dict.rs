//! Reading the dict-shaped interfaces (`__array_interface__`, `__cuda_array_interface__` and
//! the entries of a data interface): typed access to their keys, with messages that name the
//! key and the value.

use crate::convert::{type_error, value_error};
use crate::errors::to_py;
use gridbuf::arrays::array_info::Interface;
use gridbuf::Error;
use pyo3::exceptions::{PyKeyError, PyOverflowError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyMapping, PyString, PyTuple};

/// A dict-shaped interface being read; messages call it by the interface's name, such as
/// `__array_interface__`, and its keys as the core's [`Interface::field`] does
/// (`__array_interface__['shape']`).
pub(crate) struct IfaceDict<'a, 'py> {
    pub(crate) obj: &'a Bound<'py, PyAny>,
    dict: Option<&'a Bound<'py, PyDict>>,
    interface: Interface,
}

impl<'a, 'py> IfaceDict<'a, 'py> {
    pub(crate) fn new(obj: &'a Bound<'py, PyAny>, interface: Interface) -> PyResult<Self> {
        if let Ok(dict) = obj.cast::<PyDict>() {
            return Ok(IfaceDict {
                obj,
                dict: Some(dict),
                interface,
            });
        }
        if obj.cast::<PyMapping>().is_ok() {
            return Ok(IfaceDict {
                obj,
                dict: None,
                interface,
            });
        }
        Err(type_error(interface.name(), obj, "expected a dict"))
    }

    pub(crate) fn field(&self, key: &Bound<'py, PyString>) -> String {
        self.interface.field(&key.to_string_lossy())
    }

    /// The value of `key`; `None` when absent or None.
    pub(crate) fn get(&self, key: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let value = match self.dict {
            Some(dict) => dict.get_item(key)?,
            None => match self.obj.get_item(key) {
                Ok(v) => Some(v),
                Err(e) if e.is_instance_of::<PyKeyError>(self.obj.py()) => None,
                Err(e) => return Err(e),
            },
        };
        Ok(value.filter(|v| !v.is_none()))
    }

    pub(crate) fn int(&self, key: &Bound<'py, PyString>) -> PyResult<Option<i64>> {
        self.get(key)?
            .map(|v| to_i64(&v, &self.field(key), &v, "expected an int"))
            .transpose()
    }

    pub(crate) fn ints(&self, key: &Bound<'py, PyString>) -> PyResult<Option<Vec<i64>>> {
        const EXPECTED: &str = "expected a tuple of ints";
        let Some(v) = self.get(key)? else {
            return Ok(None);
        };
        let field = self.field(key);
        let items = match (v.cast::<PyTuple>(), v.cast::<PyList>()) {
            (Ok(t), _) => t.iter().collect::<Vec<_>>(),
            (_, Ok(l)) => l.iter().collect(),
            _ => return Err(type_error(&field, &v, EXPECTED)),
        };
        items
            .iter()
            .map(|item| to_i64(item, &field, &v, EXPECTED))
            .collect::<PyResult<Vec<i64>>>()
            .map(Some)
    }

    pub(crate) fn string(&self, key: &Bound<'py, PyString>) -> PyResult<Option<String>> {
        let Some(v) = self.get(key)? else {
            return Ok(None);
        };
        match v.cast::<PyString>() {
            Ok(s) => Ok(Some(s.to_str()?.to_owned())),
            Err(_) => Err(type_error(
                &self.field(key),
                &v,
                "expected a str such as \"<f8\"",
            )),
        }
    }

    /// `descr` as (name, typestr) pairs; anything else is refused here with the core's words.
    pub(crate) fn descr(&self) -> PyResult<Option<Vec<(String, String)>>> {
        let key = intern!(self.obj.py(), "descr");
        let Some(v) = self.get(key)? else {
            return Ok(None);
        };
        let pair = |item: Bound<'py, PyAny>| -> Option<(String, String)> {
            let t = item.cast_into::<PyTuple>().ok()?;
            if t.len() != 2 {
                return None;
            }
            let name = t.get_item(0).ok()?.cast_into::<PyString>().ok()?;
            let typestr = t.get_item(1).ok()?.cast_into::<PyString>().ok()?;
            Some((
                name.to_str().ok()?.to_owned(),
                typestr.to_str().ok()?.to_owned(),
            ))
        };
        let items: Option<Vec<(String, String)>> = match v.cast::<PyList>() {
            Ok(list) => list.iter().map(pair).collect(),
            Err(_) => None,
        };
        items.map(Some).ok_or_else(|| {
            value_error(
                &self.field(key),
                &v,
                "expected [(\"\", typestr)], one unnamed field agreeing with the typestr; \
                 structured dtypes are not supported",
            )
        })
    }

    /// `data` as a `(pointer, read_only)` tuple; `None` when absent or None.
    pub(crate) fn pointer_tuple(
        &self,
        v: &Bound<'py, PyAny>,
        expected: &str,
    ) -> PyResult<(u64, bool)> {
        let field = self.field(intern!(self.obj.py(), "data"));
        let t = v
            .cast::<PyTuple>()
            .ok()
            .filter(|t| t.len() == 2)
            .ok_or_else(|| type_error(&field, v, expected))?;
        let ptr = t.get_item(0)?;
        let ptr = if ptr.is_instance_of::<PyBool>() {
            return Err(type_error(&field, v, expected));
        } else {
            match ptr.extract::<i64>() {
                Ok(p) if p < 0 => {
                    return Err(value_error(&field, v, "expected a non-negative address"))
                }
                Ok(p) => p as u64,
                Err(_) => ptr.extract::<u64>().map_err(|e| {
                    if e.is_instance_of::<PyOverflowError>(v.py()) {
                        overflow(v.py(), &field, v, "the pointer")
                    } else {
                        type_error(&field, v, expected)
                    }
                })?,
            }
        };
        Ok((ptr, t.get_item(1)?.is_truthy()?))
    }
}

/// `repr(obj)` for messages, cut after 200 characters.
pub(crate) fn repr(obj: &Bound<'_, PyAny>) -> String {
    let s = obj
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unprintable>".into());
    gridbuf::error::shorten_shown(s)
}

fn overflow(py: Python<'_>, field: &str, whole: &Bound<'_, PyAny>, what: &str) -> PyErr {
    to_py(py, Error::overflow_shown(field, repr(whole), what))
}

/// An int (not a bool) that fits an i64; `whole` is the value the message shows.
fn to_i64(
    item: &Bound<'_, PyAny>,
    field: &str,
    whole: &Bound<'_, PyAny>,
    expected: &str,
) -> PyResult<i64> {
    if item.is_instance_of::<PyBool>() {
        return Err(type_error(field, whole, expected));
    }
    item.extract::<i64>().map_err(|e| {
        if e.is_instance_of::<PyOverflowError>(item.py()) {
            overflow(item.py(), field, whole, "a value")
        } else {
            type_error(field, whole, expected)
        }
    })
}
