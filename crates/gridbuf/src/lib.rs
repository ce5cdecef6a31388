//! gridbuf: the storage layer for stencil codes on structured grids.
//!
//! The core plans and allocates N-dimensional fields with the stride order (layout), alignment
//! and halos that stencil backends run fastest on. It has no Python dependency; the
//! `gridbuf-python` crate wraps it for Python.
//!
//! ```
//! use gridbuf::allocation::preset;
//! use gridbuf::{Plan, PlanRequest};
//! let mut req = PlanRequest::new([10, 11, 12][..].into(), 8, preset::lookup("gt:cpu_ifirst", "backend")?);
//! req.aligned_index = Some([1, 1, 0][..].into());
//! let plan = Plan::new(&req)?;
//! assert_eq!(plan.strides[..], [8, 80, 880]);
//! # Ok::<(), gridbuf::Error>(())
//! ```
//!
//! # Layers, one folder each
//!
//! Listed from the bottom up; [`error`] and [`bounded_cache`] serve every layer.
//!
//! | layer | folder |
//! |---|---|
//! | errors, their exception classes and every message | [`error`] |
//! | a bounded map that empties itself when full (plan and call caches) | [`bounded_cache`] |
//! | geometry: axes, dims, halos, origins, layouts | [`geometry`] |
//! | threads and interrupts: the pools every parallel loop runs on | [`runtime`] |
//! | allocation: presets, memory plans, aligned buffers, fills | [`allocation`] |
//! | arrays and interfaces: element types, devices, `ArrayInfo`, interface parsers, copies, labelled fields | [`arrays`] |
//! | distribution over processes: decompositions, halo exchange | [`distribution`] |
//! | mirrored host/device fields: the sync state | [`mirrored`] |
//! | stencils: binding fields to a call, native kernels, gtscript programs | [`binding`], [`kernels`], [`gtscript`] |

#![deny(clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]

pub mod allocation;
pub mod arrays;
pub mod binding;
pub mod bounded_cache;
pub mod distribution;
pub mod error;
pub mod geometry;
pub mod gtscript;
pub mod kernels;
pub mod mirrored;
pub mod runtime;

pub use allocation::buffer::{AlignedBuffer, Init};
pub use allocation::memory_plan::{Plan, PlanRequest};
pub use allocation::preset::{Device, Preset};
pub use arrays::array_info::ArrayInfo;
pub use arrays::dtype::{DType, Element};
pub use error::{Error, Result};
pub use geometry::axes::AxisVec;
pub use geometry::dims::Dim;
pub use geometry::layout::BaseLayout;
pub use runtime::threads::Threads;
