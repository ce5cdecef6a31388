//! Parsers for the ways the ecosystem describes an array: NumPy's array interface (and the
//! `__gt_data_interface__` entries that reuse its keys), Numba's CUDA array interface, the
//! Python buffer protocol and DLPack.
//!
//! Each parser takes plain Rust values that mirror what the Python object holds (the binding
//! extracts them and reports wrong Python types), checks every value with checked arithmetic,
//! and returns an [`ArrayInfo`](crate::array_info::ArrayInfo). Errors name the interface and
//! the key, such as `__array_interface__['typestr']`, and the offending value. No parser reads
//! or writes the described memory.
//!
//! | interface                   | input                                   | device          |
//! |-----------------------------|-----------------------------------------|-----------------|
//! | `__array_interface__` v3    | [`ArrayInterfaceDict::parse`]           | CPU             |
//! | `__gt_data_interface__`     | [`ArrayInterfaceDict::parse_as`]        | from the key    |
//! | `__cuda_array_interface__`  | [`CudaArrayInterfaceDict::parse`]       | CUDA            |
//! | buffer protocol             | [`BufferView::parse`]                   | CPU             |
//! | `__dlpack__`                | [`DLPackOwner::array_info`], [`array_info_from_dltensor`] | from the tensor |
//!
//! An `__array_interface__` whose `data` is `None` fails with
//! [`Error::BufferProtocolRequired`](crate::Error::BufferProtocolRequired): the binding then
//! acquires the object's buffer, stores it as [`DataField::Buffer`] and parses again.

pub mod array_interface;
pub mod buffer;
pub mod cuda_array_interface;
pub mod dlpack;
mod fields;

pub use array_interface::{ArrayInterfaceDict, DataField, ARRAY_INTERFACE_VERSION};
pub use buffer::BufferView;
pub use cuda_array_interface::{
    CudaArrayInterfaceDict, CUDA_ARRAY_INTERFACE_VERSION, LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
};
pub use dlpack::{
    array_info_from_dltensor, DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned,
    DLPackOwner, DLPackVersion, DLTensor, DLPACK_VERSION,
};
