//! `laplacian(inp, out)`: the 5-point horizontal laplacian,
//! out = -4 inp + inp[i-1] + inp[i+1] + inp[j-1] + inp[j+1], summed in that order.
//!
//! Each stencil offset is a shifted window of `inp` with the shape of the domain, so every row
//! of the output is an element-wise function of five equally long contiguous rows, whichever
//! axis the rows run along.

use super::exec::{self, Threads};
use super::{impl_kernel, Extent, FieldSpec, Float};
use crate::error::Result;
use ndarray::{ArrayView3, ArrayViewMut3};

static FIELDS: [FieldSpec; 2] = [
    FieldSpec::input("inp", Extent::symmetric([1, 1, 0])),
    FieldSpec::output("out"),
];

/// The `laplacian` kernel: `inp` (in, extent 1 in I and J) and `out` (out).
#[derive(Copy, Clone, Debug, Default)]
pub struct LaplacianKernel;

impl_kernel!(LaplacianKernel, "laplacian", FIELDS);

impl LaplacianKernel {
    fn exec<T: Float>(
        &self,
        inputs: &[ArrayView3<'_, T>],
        outputs: &mut [ArrayViewMut3<'_, T>],
        domain: [usize; 3],
        threads: Threads,
    ) -> Result<()> {
        let out = outputs[0].view_mut();
        if out.is_empty() {
            return Ok(());
        }
        let inp = &inputs[0];
        let at = |start: [usize; 3]| exec::window(inp, start, domain);
        let shifted = [
            at([1, 1, 0]),
            at([0, 1, 0]),
            at([2, 1, 0]),
            at([1, 0, 0]),
            at([1, 2, 0]),
        ];
        exec::par_rows(out, shifted, threads, false, &LapRow);
        Ok(())
    }
}

/// One row: `o = -4 c + im + ip + jm + jp`.
struct LapRow;

impl<T: Float> exec::RowKernel<T, 5> for LapRow {
    #[inline(always)]
    fn row(&self, o: &mut [T], [c, im, ip, jm, jp]: [&[T]; 5]) {
        let n = o.len();
        let (c, im, ip, jm, jp) = (&c[..n], &im[..n], &ip[..n], &jm[..n], &jp[..n]);
        let m4 = -T::FOUR;
        for x in 0..n {
            o[x] = m4 * c[x] + im[x] + ip[x] + jm[x] + jp[x];
        }
    }
}
