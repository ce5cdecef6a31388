//! gridbuf: the storage layer for stencil codes on structured grids.
//!
//! The core plans and allocates N-dimensional fields with the stride order (layout), alignment
//! and halos that stencil backends run fastest on. It has no Python dependency; the
//! `gridbuf-python` crate wraps it for Python.
//!
//! ```
//! use gridbuf::{preset, Plan, PlanRequest};
//! let mut req = PlanRequest::new([10, 11, 12][..].into(), 8, preset::lookup("gt:cpu_ifirst", "backend")?);
//! req.aligned_index = Some([1, 1, 0][..].into());
//! let plan = Plan::new(&req)?;
//! assert_eq!(plan.strides[..], [8, 80, 880]);
//! # Ok::<(), gridbuf::Error>(())
//! ```
//!
//! # One module per concept
//!
//! | concept | module |
//! |---|---|
//! | errors and message formatting | [`error`] |
//! | per-axis vectors | [`axes`] |
//! | dims: names, validation, defaults, next data dim | [`dims`] |
//! | halo: normalising and fitting the shape | [`halo`] |
//! | origin and aligned index ranges | [`origin`] |
//! | layout maps, base layouts, layout from strides | [`layout`] |
//! | presets (backends) | [`preset`] |
//! | allocation plans and the plan cache | [`plan`] |
//! | aligned host memory | [`buffer`] |
//! | filling with a value | [`fill`] |
//! | strided and layout-changing copies | [`copy`] |
//! | threads, pools and `GRIDBUF_NUM_THREADS` | [`threads`] |
//! | element types | [`dtype`] |
//! | devices | [`device`] |
//! | descriptions of foreign arrays | [`array_info`] |
//! | array interface, CUDA array interface, buffer protocol, DLPack | [`interface`] |
//! | labelled fields: broadcasting, result storage, axes, transpositions, indexing | [`labelled`] |
//! | binding fields to a stencil call | [`binding`] |
//! | native kernels and their loop machinery | [`kernels`] |

#![deny(clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]

pub mod array_info;
pub mod axes;
pub mod binding;
pub mod bounded_cache;
pub mod buffer;
pub mod copy;
pub mod decomposition;
pub mod device;
pub mod dims;
pub mod dtype;
pub mod error;
pub mod fill;
pub mod gtscript;
pub mod halo;
pub mod halo_exchange;
pub mod interface;
pub mod interrupt;
pub mod kernels;
pub mod labelled;
pub mod layout;
pub mod origin;
pub mod plan;
pub mod preset;
pub mod sync_state;
pub mod threads;

pub use array_info::ArrayInfo;
pub use axes::AxisVec;
pub use buffer::{AlignedBuffer, Init};
pub use dims::Dim;
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use layout::BaseLayout;
pub use plan::{Plan, PlanRequest};
pub use preset::{Device, Preset};
pub use threads::Threads;
