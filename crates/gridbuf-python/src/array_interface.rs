//! Reading `__array_interface__` (version 3) and dicts with its keys (data-interface entries)
//! into the core's `ArrayInterfaceDict`.

use crate::buffer_protocol::{has_buffer, with_buffer, BUF_SIMPLE};
use crate::errors::{to_py, IntoPyResult};
use crate::found::Found;
use crate::interface_dict::{repr, IfaceDict};
use gridbuf::arrays::array_info::{ArrayDevice, Interface};
use gridbuf::arrays::interface::{ArrayInterfaceDict, DataField};
use gridbuf::Error;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyMemoryView, PyTuple};

/// Parses a dict with array-interface keys (`__array_interface__`, or a data-interface entry
/// when `interface` is `DataInterface`) describing memory on `device`. `data` None means the
/// memory of `obj`'s buffer protocol.
pub(crate) fn parse_array_dict<'py>(
    obj: &Bound<'py, PyAny>,
    d: &IfaceDict<'_, 'py>,
    interface: Interface,
    device: ArrayDevice,
) -> PyResult<Found<'py>> {
    let py = obj.py();
    let mut dict = ArrayInterfaceDict {
        version: d.int(intern!(py, "version"))?,
        shape: d.ints(intern!(py, "shape"))?,
        typestr: d.string(intern!(py, "typestr"))?,
        descr: d.descr()?,
        strides: d.ints(intern!(py, "strides"))?,
        offset: d.int(intern!(py, "offset"))?,
        has_mask: d.get(intern!(py, "mask"))?.is_some(),
        data: DataField::None,
    };
    const EXPECTED: &str =
        "expected a (pointer, read_only) tuple, None, or an object exposing the buffer protocol";
    let data_key = intern!(py, "data");
    let host = device.is_host_accessible();
    let (keepalive, own_buffer) = match d.get(data_key)? {
        Some(v) if v.is_instance_of::<PyTuple>() || !host => {
            let (ptr, readonly) = d.pointer_tuple(&v, EXPECTED)?;
            dict.data = DataField::Pointer { ptr, readonly };
            (obj.clone(), false)
        }
        None if !host => return Err(to_py(py, Error::device_data_none(&d.field(data_key)))),
        data => {
            let source = data.as_ref().unwrap_or(obj);
            // SAFETY: `source` is a live object; the check only reads its type's buffer slot.
            if !has_buffer(source) {
                let err = Error::data_without_buffer(&d.field(data_key), data.is_none(), EXPECTED);
                return Err(to_py(py, err));
            }
            let view = PyMemoryView::from(source)?.into_any();
            let (ptr, len, readonly) = with_buffer(&view, BUF_SIMPLE, |b| {
                (
                    b.buf.expose_provenance(),
                    b.len.max(0) as usize,
                    b.readonly != 0,
                )
            })
            .map_err(|e| {
                let err =
                    Error::noncontiguous_buffer(&d.field(data_key), repr(source), &e.to_string());
                to_py(py, err)
            })?;
            dict.data = DataField::Buffer { ptr, len, readonly };
            (view, data.is_none())
        }
    };
    let info = dict.parse_as(interface, device).py(py)?;
    Ok(Found {
        info,
        keepalive,
        own_buffer,
    })
}
