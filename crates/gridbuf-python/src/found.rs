//! What one interface parser returns: [`Found`].

use gridbuf::arrays::array_info::ArrayInfo;
use pyo3::prelude::*;

/// A description found through one interface, and what keeps its memory alive.
pub(crate) struct Found<'py> {
    /// The description, checked by the core parser of that interface.
    pub(crate) info: ArrayInfo,
    /// The object that keeps the memory alive (see `extract::Extracted::keepalive`).
    pub(crate) keepalive: Bound<'py, PyAny>,
    /// Whether the memory was read through the object's own buffer protocol (`data` None),
    /// whose shape and format then need not match the interface's.
    pub(crate) own_buffer: bool,
}
