//! Reading `__gt_data_interface__` (and the older `__gt_interface__`): the mapping, its host and
//! GPU entries, and one entry parsed and checked with what it declares besides its memory
//! ([`EntryDecl`]: dims, halo, callbacks), converted once.

use crate::array_interface::parse_array_dict;
use crate::convert::{self, dims_from, type_error, value_error};
use crate::errors::{to_py, IntoPyResult};
use crate::found::Found;
use crate::interface_dict::{repr, IfaceDict};
use crate::pyobj::{lookup, mapping_get};
use gridbuf::arrays::array_info::{ArrayDevice, ArrayInfo, DeviceKind, Interface};
use gridbuf::{AxisVec, Dim, Error};
use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyMapping;

/// The `acquire`, `touch` and `release` callables of one data-interface entry.
pub(crate) type EntryCallbacks<'py> = [Option<Bound<'py, PyAny>>; 3];

/// What a data-interface entry declares besides its memory, checked (against the array the
/// entry describes) and converted once, when the entry is parsed.
pub(crate) struct EntryDecl<'py> {
    /// Its `"dims"`, one per axis.
    pub(crate) dims: Option<Vec<Dim>>,
    /// Its `"halo"`, (lower, upper) per axis, fitting the shape.
    pub(crate) halo: Option<AxisVec<(usize, usize)>>,
    /// Its `acquire`, `touch` and `release`, each callable or absent.
    pub(crate) callbacks: EntryCallbacks<'py>,
}

impl EntryDecl<'_> {
    /// Whether the entry has any of `acquire`, `touch` and `release`.
    pub(crate) fn has_callbacks(&self) -> bool {
        self.callbacks.iter().any(Option::is_some)
    }
}

/// A data interface: the attribute it came from and the mapping.
pub(crate) struct DataInterface<'py> {
    /// `__gt_data_interface__` or the older `__gt_interface__`.
    pub(crate) attr: &'static str,
    /// The mapping from device key to buffer info.
    pub(crate) mapping: Bound<'py, PyAny>,
}

/// The data interface of `obj` (`__gt_data_interface__`, else `__gt_interface__`), checked to
/// be a mapping; `None` when it has neither.
pub(crate) fn data_interface_of<'py>(
    obj: &Bound<'py, PyAny>,
) -> PyResult<Option<DataInterface<'py>>> {
    let py = obj.py();
    for (attr, name) in [
        (
            "__gt_data_interface__",
            intern!(py, "__gt_data_interface__"),
        ),
        ("__gt_interface__", intern!(py, "__gt_interface__")),
    ] {
        if let Some(mapping) = lookup(obj, name)? {
            if mapping.cast::<PyMapping>().is_err() {
                return Err(type_error(
                    attr,
                    &mapping,
                    "expected a mapping from device key (None, \"cpu\", \"gpu\" or \"cuda\") to \
                     a buffer-info dict",
                ));
            }
            return Ok(Some(DataInterface { attr, mapping }));
        }
    }
    Ok(None)
}

/// The first entry of `keys` in the data interface.
fn entry_of<'py>(
    di: &DataInterface<'py>,
    keys: [Bound<'py, PyAny>; 2],
) -> PyResult<Option<Bound<'py, PyAny>>> {
    for key in keys {
        if let Some(v) = mapping_get(&di.mapping, &key)? {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

/// The host entry (key `None`, else `"cpu"`) of a data interface.
pub(crate) fn host_entry<'py>(di: &DataInterface<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = di.mapping.py();
    entry_of(
        di,
        [
            py.None().into_bound(py),
            intern!(py, "cpu").clone().into_any(),
        ],
    )
}

/// The GPU entry (key `"gpu"`, else `"cuda"`) of a data interface.
pub(crate) fn gpu_entry<'py>(di: &DataInterface<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = di.mapping.py();
    entry_of(
        di,
        [
            intern!(py, "gpu").clone().into_any(),
            intern!(py, "cuda").clone().into_any(),
        ],
    )
}

/// The error for a data interface with neither a host nor a GPU entry.
pub(crate) fn no_entry(di: &DataInterface<'_>) -> PyErr {
    let py = di.mapping.py();
    let keys = di
        .mapping
        .call_method0(intern!(py, "keys"))
        .and_then(|k| py.import("builtins")?.getattr("list")?.call1((k,)))
        .map(|k| repr(&k))
        .unwrap_or_else(|_| "?".into());
    to_py(py, Error::no_device_entry(di.attr, &keys))
}

/// Parses and checks one data-interface entry (host memory when `host`, else GPU memory), and
/// what it declares besides its memory.
pub(crate) fn parse_entry<'py>(
    obj: &Bound<'py, PyAny>,
    di: &DataInterface<'py>,
    entry: &Bound<'py, PyAny>,
    host: bool,
) -> PyResult<(Found<'py>, EntryDecl<'py>)> {
    let py = obj.py();
    let result = (|| {
        let d = IfaceDict::new(entry, Interface::DataInterface)?;
        let device = if host {
            ArrayDevice::CPU
        } else {
            ArrayDevice {
                kind: DeviceKind::Cuda,
                id: None,
            }
        };
        let mut found = parse_array_dict(obj, &d, Interface::DataInterface, device)?;
        if !host {
            found.info.stream = entry_stream(&d)?;
        }
        let decl = entry_decl(&d, &found.info)?;
        Ok((found, decl))
    })();
    // Messages name the canonical attribute; say the one the object has.
    result.map_err(|e: PyErr| {
        if di.attr == "__gt_data_interface__" {
            return e;
        }
        let message = e.value(py).to_string();
        PyErr::from_type(
            e.get_type(py),
            message.replace("__gt_data_interface__", di.attr),
        )
    })
}

/// The `stream` of a GPU entry, checked as the CUDA array interface checks it.
fn entry_stream(d: &IfaceDict<'_, '_>) -> PyResult<Option<i64>> {
    let key = intern!(d.obj.py(), "stream");
    match d.int(key)? {
        Some(s) if s <= 0 => Err(to_py(
            d.obj.py(),
            Error::data_interface_stream(&d.field(key), s),
        )),
        s => Ok(s),
    }
}

/// Checks and converts `dims`, `halo`, `acquire`, `release` and `touch` of a data-interface
/// entry describing `info`.
fn entry_decl<'py>(d: &IfaceDict<'_, 'py>, info: &ArrayInfo) -> PyResult<EntryDecl<'py>> {
    let py = d.obj.py();
    let ndim = info.ndim();
    let dims_key = intern!(py, "dims");
    let dims = match d.get(dims_key)? {
        Some(dims) => Some(dims_from(&dims, Some(ndim), &d.field(dims_key))?),
        None => None,
    };
    let halo_key = intern!(py, "halo");
    let halo = match d.get(halo_key)? {
        Some(halo) => {
            let field = d.field(halo_key);
            const EXPECTED: &str = "expected one non-negative int or (lower, upper) pair per axis";
            let pairs = convert::halo(&halo).map_err(|e| {
                if e.is_instance_of::<PyTypeError>(py) {
                    type_error(&field, &halo, EXPECTED)
                } else {
                    value_error(&field, &halo, EXPECTED)
                }
            })?;
            gridbuf::geometry::halo::check_fits(&info.shape, &pairs, None, &field).py(py)?;
            Some(pairs)
        }
        None => None,
    };
    // Checked in the order acquire, release, touch; kept as acquire, touch, release.
    let mut checked: [Option<Bound<'py, PyAny>>; 3] = [None, None, None];
    for (slot, key) in checked.iter_mut().zip([
        intern!(py, "acquire"),
        intern!(py, "release"),
        intern!(py, "touch"),
    ]) {
        if let Some(f) = d.get(key)? {
            if !f.is_callable() {
                return Err(type_error(&d.field(key), &f, "expected a callable or None"));
            }
            *slot = Some(f);
        }
    }
    let [acquire, release, touch] = checked;
    Ok(EntryDecl {
        dims,
        halo,
        callbacks: [acquire, touch, release],
    })
}
