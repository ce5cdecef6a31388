//! Parsers for the ways the ecosystem describes an array: NumPy's array interface (and the
//! `__gt_data_interface__` entries that reuse its keys), Numba's CUDA array interface, the
//! Python buffer protocol and DLPack.
//!
//! Each parser takes plain Rust values that mirror what the Python object holds (the binding
//! extracts them and reports wrong Python types), checks every value with checked arithmetic,
//! and returns an [`ArrayInfo`](crate::arrays::array_info::ArrayInfo). Errors name the interface and
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
//! Which of them describes an object that offers several, and which others must then agree,
//! is [`precedence`]'s rule.
//!
//! An `__array_interface__` whose `data` is `None` fails with
//! [`Error::BufferProtocolRequired`](crate::Error::BufferProtocolRequired): the binding then
//! acquires the object's buffer, stores it as [`DataField::Buffer`] and parses again.

pub mod array_interface;
pub mod buffer_protocol;
pub mod cuda_array_interface;
pub mod dlpack;
mod fields;
pub mod precedence;

pub use array_interface::{ArrayInterfaceDict, DataField, ARRAY_INTERFACE_VERSION};
pub use buffer_protocol::BufferView;
pub use cuda_array_interface::{
    CudaArrayInterfaceDict, CUDA_ARRAY_INTERFACE_VERSION, LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
};
pub use dlpack::{
    array_info_from_dltensor, DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned,
    DLPackOwner, DLPackVersion, DLTensor, DLPACK_VERSION,
};

/// Which interface an [`ArrayInfo`](crate::arrays::array_info::ArrayInfo) came from; error messages name it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Interface {
    /// Built by gridbuf itself or by a Rust caller.
    Native,
    /// The Python buffer protocol (PEP 3118).
    Buffer,
    /// NumPy's `__array_interface__` (version 3).
    ArrayInterface,
    /// Numba's `__cuda_array_interface__` (versions 2 and 3).
    CudaArrayInterface,
    /// DLPack (`__dlpack__`).
    DLPack,
    /// An entry of the `__gt_data_interface__` (GDP-3).
    DataInterface,
}

impl Interface {
    /// The name Python users know the interface by, such as `__array_interface__`.
    pub fn name(self) -> &'static str {
        match self {
            Interface::Native => "gridbuf",
            Interface::Buffer => "buffer protocol",
            Interface::ArrayInterface => "__array_interface__",
            Interface::CudaArrayInterface => "__cuda_array_interface__",
            Interface::DLPack => "__dlpack__",
            Interface::DataInterface => "__gt_data_interface__",
        }
    }

    /// How error messages name one field of this interface: `__array_interface__['typestr']`,
    /// `__dlpack__ DLTensor.shape`, `buffer protocol Py_buffer.format`.
    pub fn field(self, key: &str) -> String {
        match self {
            Interface::Native => key.to_owned(),
            Interface::Buffer => format!("buffer protocol Py_buffer.{key}"),
            Interface::DLPack => format!("__dlpack__ DLTensor.{key}"),
            _ => format!("{}['{key}']", self.name()),
        }
    }
}
