//! `copy(inp, out)`: out = inp on the domain.
//!
//! Rows along the output's unit-stride axis are copied slice by slice. When the input's
//! unit-stride axis is another one (a layout change), the kernel hands the copy to
//! [`crate::arrays::copy::CopyPlan`], the one layout-changing copy of gridbuf.

use super::exec::{self, Order, Threads};
use super::{impl_kernel, Extent, FieldSpec, Float};
use crate::arrays::copy::CopyPlan;
use crate::error::Result;
use ndarray::{ArrayView3, ArrayViewMut3};

static FIELDS: [FieldSpec; 2] = [
    FieldSpec::input("inp", Extent::ZERO),
    FieldSpec::output("out"),
];

/// The `copy` kernel: fields `inp` (in) and `out` (out), no halo.
#[derive(Copy, Clone, Debug, Default)]
pub struct CopyKernel;

impl_kernel!(CopyKernel, "copy", FIELDS);

impl CopyKernel {
    fn exec<T: Float>(
        &self,
        inputs: &[ArrayView3<'_, T>],
        outputs: &mut [ArrayViewMut3<'_, T>],
        _domain: [usize; 3],
        threads: Threads,
    ) -> Result<()> {
        let inp = inputs[0].view();
        let out = outputs[0].view_mut();
        if out.is_empty() {
            return Ok(());
        }
        let order = Order::of(&out);
        match transposing_axis(&inp, order) {
            None => {
                let stream = exec::streaming::<T>(out.len());
                exec::par_rows(out, [inp], threads, stream, &CopyRow)
            }
            Some(_) => tiled(inp, out, threads),
        }
        Ok(())
    }
}

/// Row copy; streamed rows go straight from the input to the output.
struct CopyRow;

impl<T: Float> exec::RowKernel<T, 1> for CopyRow {
    #[inline(always)]
    fn row(&self, out: &mut [T], [inp]: [&[T]; 1]) {
        exec::copy_slice(out, inp);
    }

    #[inline(always)]
    fn row_stream(&self, out: &mut [T], [inp]: [&[T]; 1], _tmp: &mut [T]) {
        T::stream(out, inp);
    }
}

/// The input's unit-stride axis when it differs from the output's inner axis, else `None`.
fn transposing_axis<T>(inp: &ArrayView3<'_, T>, order: Order) -> Option<usize> {
    let (i, j, k) = inp.dim();
    let shape = [i, j, k];
    let st = inp.strides();
    if st[order.inner].unsigned_abs() <= 1 {
        return None;
    }
    (0..3)
        .filter(|&a| a != order.inner && shape[a] > 1 && st[a].unsigned_abs() == 1)
        .min_by_key(|&a| st[a].unsigned_abs())
}

/// A layout-changing copy: a thin wrapper over the one implementation, [`CopyPlan`], which
/// works in strips of whole destination cache lines.
fn tiled<T: Float>(inp: ArrayView3<'_, T>, mut out: ArrayViewMut3<'_, T>, threads: Threads) {
    let (i, j, k) = out.dim();
    let inp = exec::window(&inp, [0; 3], [i, j, k]);
    let size = std::mem::size_of::<T>();
    let byte_strides = |st: &[isize]| -> [isize; 3] { [0, 1, 2].map(|a| st[a] * size as isize) };
    let plan = CopyPlan::new(
        size,
        &[i, j, k],
        &byte_strides(inp.strides()),
        &byte_strides(out.strides()),
    );
    // SAFETY: both views are valid for every index of the shape `[i, j, k]` (the input window
    // was cut to it) and their byte strides are the ones the plan was made for; the output is
    // a mutable view, so nothing else (the input included) aliases its elements during the call.
    unsafe { plan.run_with(threads, inp.as_ptr().cast(), out.as_mut_ptr().cast()) }
}
