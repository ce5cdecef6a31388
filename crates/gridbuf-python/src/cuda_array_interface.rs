//! Reading `__cuda_array_interface__` (versions 2 and 3) into the core's
//! `CudaArrayInterfaceDict`.

use crate::errors::IntoPyResult;
use crate::interface_dict::IfaceDict;
use crate::pyobj::lookup;
use gridbuf::arrays::array_info::{ArrayInfo, Interface};
use gridbuf::arrays::interface::CudaArrayInterfaceDict;
use pyo3::intern;
use pyo3::prelude::*;

/// The `__cuda_array_interface__` of `obj`, if it has one.
pub(crate) fn cuda_array_interface_of<'py>(
    obj: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    lookup(obj, intern!(obj.py(), "__cuda_array_interface__"))
}

pub(crate) fn parse_cuda_dict(cai: &Bound<'_, PyAny>) -> PyResult<ArrayInfo> {
    let py = cai.py();
    let d = IfaceDict::new(cai, Interface::CudaArrayInterface)?;
    let data = match d.get(intern!(py, "data"))? {
        None => None,
        Some(v) => Some(d.pointer_tuple(&v, "expected a (device pointer, read_only) tuple")?),
    };
    CudaArrayInterfaceDict {
        version: d.int(intern!(py, "version"))?,
        shape: d.ints(intern!(py, "shape"))?,
        typestr: d.string(intern!(py, "typestr"))?,
        descr: d.descr()?,
        data,
        strides: d.ints(intern!(py, "strides"))?,
        has_mask: d.get(intern!(py, "mask"))?.is_some(),
        stream: d.int(intern!(py, "stream"))?,
    }
    .parse()
    .py(py)
}
