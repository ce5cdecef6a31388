//! `copy(inp, out)`: out = inp on the domain.
//!
//! Rows along the output's unit-stride axis are copied slice by slice. When the input's
//! unit-stride axis is another one (a layout change), the copy goes through square tiles of the
//! plane of the two unit-stride axes so that both sides touch whole cache lines.

use super::exec::{self, Order, Threads};
use super::{impl_kernel, Extent, FieldSpec, Float};
use crate::error::Result;
use ndarray::{s, ArrayView3, ArrayViewMut3, Axis, Zip};

/// Tile edge of a layout-changing copy: 32 x 32 doubles are 8 KiB per side.
const TILE: usize = 32;

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
            Some(b) => tiled(inp, out, order, b, threads),
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

/// Copies with TILE x TILE tiles of the plane spanned by the output's inner axis and the
/// input's unit-stride axis `b`, over every index of the third axis.
fn tiled<T: Float>(
    inp: ArrayView3<'_, T>,
    out: ArrayViewMut3<'_, T>,
    order: Order,
    b: usize,
    threads: Threads,
) {
    let a = order.inner;
    let c = 3 - a - b;
    let (i, j, k) = out.dim();
    let shape = [i, j, k];
    let work = |origin: [usize; 3], mut part: ArrayViewMut3<'_, T>| {
        let (pi, pj, pk) = part.dim();
        let src = exec::window(&inp, origin, [pi, pj, pk]);
        let pshape = [pi, pj, pk];
        for z in 0..pshape[c] {
            let mut oplane = part.index_axis_mut(Axis(c), z);
            let iplane = src.index_axis(Axis(c), z);
            let a2 = exec::after_removing(a, c);
            for a0 in (0..pshape[a]).step_by(TILE) {
                for b0 in (0..pshape[b]).step_by(TILE) {
                    let (a1, b1) = ((a0 + TILE).min(pshape[a]), (b0 + TILE).min(pshape[b]));
                    let (r0, r1) = if a2 == 0 {
                        (a0..a1, b0..b1)
                    } else {
                        (b0..b1, a0..a1)
                    };
                    let mut ot = oplane.slice_mut(s![r0.clone(), r1.clone()]);
                    let it = iplane.slice(s![r0, r1]);
                    Zip::from(&mut ot).and(&it).for_each(|o, i| *o = *i);
                }
            }
        }
    };
    if !exec::parallel(threads, i * j * k) {
        work([0; 3], out);
        return;
    }
    // Split along the axis that is neither tiled one, then along the input's inner axis.
    let order_c = Order {
        outer: c,
        mid: b,
        inner: a,
    };
    let parts = exec::split(
        out,
        exec::outer_chunks(shape, order_c, exec::tasks_wanted(threads)),
    );
    exec::run_tasks(threads, parts, |(origin, part)| work(origin, part));
}
