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

pub mod array_info;
pub mod axes;
pub mod binding;
pub mod buffer;
pub mod copy;
pub mod dims;
pub mod error;
pub mod fill;
pub mod gtscript;
pub mod interface;
pub mod kernels;
pub mod labelled;
pub mod layout;
pub mod plan;
pub mod preset;

pub use axes::AxisVec;
pub use buffer::{AlignedBuffer, Init};
pub use dims::Dim;
pub use error::{Error, Result};
pub use layout::BaseLayout;
pub use plan::{Plan, PlanRequest};
pub use preset::{Device, Preset};
