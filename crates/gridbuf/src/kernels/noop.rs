//! `noop(inp, out)`: a kernel that does nothing.
//!
//! It has the signature of [`copy`](super::copy) (one input, one output, no halo) and returns at
//! once, so calling it through a binder measures the binder alone: argument extraction, the
//! checks or the cache lookup, and the hand-over to the kernel.

use super::exec::Threads;
use super::{impl_kernel, Extent, FieldSpec, Float};
use crate::error::Result;
use ndarray::{ArrayView3, ArrayViewMut3};

static FIELDS: [FieldSpec; 2] = [
    FieldSpec::input("inp", Extent::ZERO),
    FieldSpec::output("out"),
];

/// The `noop` kernel: fields `inp` (in) and `out` (out); it reads and writes nothing.
#[derive(Copy, Clone, Debug, Default)]
pub struct NoopKernel;

impl_kernel!(NoopKernel, "noop", FIELDS);

impl NoopKernel {
    fn exec<T: Float>(
        &self,
        _inputs: &[ArrayView3<'_, T>],
        _outputs: &mut [ArrayViewMut3<'_, T>],
        _domain: [usize; 3],
        _threads: Threads,
    ) -> Result<()> {
        Ok(())
    }
}
