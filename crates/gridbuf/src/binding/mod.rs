//! Stencil argument binding: from the arrays of a call to checked views in the kernel's dims
//! order, with the compute domain worked out and every safety check done once per distinct
//! call layout.
//!
//! The binder is pure: it sees [`ArrayInfo`]s plus what the arrays declare (dims, origin, data
//! interface halo) and returns a [`BoundCall`] that says, per field, where its view starts
//! relative to the array's pointer and which shape and strides it has in the kernel's order.
//! A `BoundCall` depends only on a [`CallKey`] (dtype, shape, strides, dims, origin, device of
//! every field, plus the call's origin and domain), never on the pointers, so callers cache it
//! under that key; what does depend on pointers (overlap of outputs with other arguments) is
//! checked per call by [`BoundCall::check_overlaps`].
//!
//! One module per step: [`signature`] (what a stencil declares, intents, the per-dtype
//! signatures of native kernels), [`call`] (what a call brings: [`ArgMeta`], [`CallOrigin`],
//! [`CallKey`]), [`bind`](mod@bind) (the checks and the views), [`cache`] (checked calls by key),
//! [`view`] (typed views of bound fields) and [`callbacks`] (the data interface's acquire /
//! touch / release order).

pub mod bind;
pub mod cache;
pub mod call;
pub mod callbacks;
pub mod signature;
pub mod view;

pub use bind::{bind, BindWarning, BoundCall, BoundField};
pub use cache::CallCache;
pub use call::{ArgMeta, CallKey, CallOrigin, FieldKey};
pub use signature::{native_signature, parse_intent, FieldParam, Signature, Signatures};
pub use view::View3;

/// Arrays for the binder's unit tests.
#[cfg(test)]
mod test_support {
    use crate::arrays::array_info::{c_strides, ArrayDevice, ArrayInfo, DType, Interface};

    /// A C-ordered float64 host array of `shape` at a fixed address.
    pub(crate) fn arr(shape: &[usize]) -> ArrayInfo {
        ArrayInfo::new(
            0x10000,
            shape.to_vec(),
            c_strides(shape, 8).unwrap(),
            DType::FLOAT64,
            ArrayDevice::CPU,
            Interface::Native,
        )
        .unwrap()
    }
}
