//! `tridiag(a, b, c, d, x)`: solves `a x[k-1] + b x[k] + c x[k+1] = d` along K in every (i, j)
//! column of the domain with the Thomas algorithm (no pivoting: the system should be
//! diagonally dominant). `a` at the first level and `c` at the last are not used.
//!
//! # How it runs
//! The recurrence runs along K, so it is vectorised across columns: every step works on one
//! level of many columns at once, a contiguous row of the buffers. Two ways to get there:
//! - K has the smallest output stride (C order, `gt:cpu_kfirst`): each column is contiguous,
//!   so a block of neighbouring columns is copied (transposed) into small buffers laid out
//!   `[k][column]`, solved there, and the solution is transposed back.
//! - I or J has unit stride (`gt:cpu_ifirst`, `dace:cpu`): a level of the fields is made of
//!   contiguous rows already. The forward sweep reads a slab of rows straight from `a`, `b`, `c`
//!   and `d`, level after level, keeping the modified coefficients in a buffer `[k][column]`;
//!   the backward sweep writes `x` level after level. Slabs span several rows so that each
//!   level is read in long contiguous runs, which the memory system streams well.
//!
//! Both use the same arithmetic per point, so results do not depend on the layout.

use super::exec::{self, Order, Threads};
use super::{impl_kernel, Extent, FieldSpec, Float};
use crate::error::Result;
use ndarray::{ArrayView2, ArrayView3, ArrayViewMut2, ArrayViewMut3, Axis, Slice};

/// Columns per block when K has unit stride.
const COLUMNS_K_INNER: usize = 16;

/// Target size in bytes of the two coefficient buffers of a slab (level-wise strategy): they
/// stay in the caches between the forward and the backward sweep.
const SLAB_BYTES: usize = 2 << 20;

static FIELDS: [FieldSpec; 5] = [
    FieldSpec::input("a", Extent::ZERO),
    FieldSpec::input("b", Extent::ZERO),
    FieldSpec::input("c", Extent::ZERO),
    FieldSpec::input("d", Extent::ZERO),
    FieldSpec::output("x"),
];

/// The `tridiag` kernel: `a`, `b`, `c`, `d` (in) and `x` (out), no halo.
#[derive(Copy, Clone, Debug, Default)]
pub struct TridiagKernel;

impl_kernel!(TridiagKernel, "tridiag", FIELDS);

impl TridiagKernel {
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
        let order = Order::of(&out);
        // Horizontal axes: columns are grouped along `h_in`; tasks split `h_out`.
        let (h_out, h_in) = if order.inner == 2 {
            (order.outer, order.mid)
        } else {
            (1 - order.inner, order.inner)
        };
        let [ni, nj, nk] = domain;
        let strategy = if order.inner == 2 {
            Strategy::Columns(COLUMNS_K_INNER)
        } else {
            let per_row = 2 * nk * domain[h_in] * std::mem::size_of::<T>();
            Strategy::Levels((SLAB_BYTES / per_row.max(1)).max(1))
        };
        let ins: [ArrayView3<'_, T>; 4] = std::array::from_fn(|n| inputs[n].view());
        let task = |origin: [usize; 3], part: ArrayViewMut3<'_, T>| {
            let (pi, pj, pk) = part.dim();
            let sub: [ArrayView3<'_, T>; 4] =
                std::array::from_fn(|n| exec::window(&ins[n], origin, [pi, pj, pk]));
            exec::simd(Part {
                ins: &sub,
                out: part,
                h_out,
                strategy,
            });
        };
        if !exec::parallel(threads, ni * nj * nk) {
            task([0; 3], out);
            return Ok(());
        }
        let split_order = Order {
            outer: h_out,
            mid: h_in,
            inner: 2,
        };
        let chunk = exec::outer_chunks(domain, split_order, exec::tasks_wanted(threads));
        let parts = exec::split(out, chunk);
        exec::run_each(threads, parts, |(origin, part)| task(origin, part));
        Ok(())
    }
}

/// How columns are grouped (see the module documentation).
#[derive(Copy, Clone, Debug)]
enum Strategy {
    /// Blocks of this many columns along `h_in`, transposed into buffers.
    Columns(usize),
    /// Slabs of this many rows along `h_out` (each all of `h_in`), swept level by level.
    Levels(usize),
}

/// One task: the columns of `out`, as a [`exec::SimdTask`].
struct Part<'a, 'b, T> {
    ins: &'b [ArrayView3<'a, T>; 4],
    out: ArrayViewMut3<'a, T>,
    h_out: usize,
    strategy: Strategy,
}

impl<T: Float> exec::SimdTask for Part<'_, '_, T> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let mut bufs = Buffers::default();
        match self.strategy {
            Strategy::Columns(width) => bufs.by_columns(self.ins, self.out, self.h_out, width),
            Strategy::Levels(rows) => bufs.by_levels(self.ins, self.out, self.h_out, rows),
        }
    }
}

/// Per-task buffers, each laid out `[k][column]`.
#[derive(Default)]
struct Buffers<T> {
    a: Vec<T>,
    b: Vec<T>,
    c: Vec<T>,
    d: Vec<T>,
    /// Rows of a strided input, gathered.
    row: [Vec<T>; 4],
}

impl<T: Float> Buffers<T> {
    /// Strategy [`Strategy::Columns`]: blocks of `width` columns along the horizontal axis
    /// that is not `h_out`, transposed into the buffers.
    #[inline(always)]
    fn by_columns(
        &mut self,
        sub: &[ArrayView3<'_, T>; 4],
        mut part: ArrayViewMut3<'_, T>,
        h_out: usize,
        width: usize,
    ) {
        let nk = part.len_of(Axis(2));
        // Axis 0 of the planes at fixed `h_out` is the other horizontal axis, axis 1 is K.
        let nh = part.len_of(Axis(1 - h_out));
        for p in 0..part.len_of(Axis(h_out)) {
            let planes: [ArrayView2<'_, T>; 4] =
                std::array::from_fn(|n| sub[n].index_axis(Axis(h_out), p));
            let mut xplane = part.index_axis_mut(Axis(h_out), p);
            for w0 in (0..nh).step_by(width) {
                let wb = width.min(nh - w0);
                let range = Slice::from(w0..w0 + wb);
                let len = wb * nk;
                for (buf, plane) in [&mut self.a, &mut self.b, &mut self.c, &mut self.d]
                    .into_iter()
                    .zip(&planes)
                {
                    // Every element is overwritten by the gather: resize without clearing.
                    buf.resize(len, T::ZERO);
                    gather_columns(&plane.slice_axis(Axis(0), range), buf, wb);
                }
                let (a, b, c, d) = (&self.a, &self.b, &mut self.c, &mut self.d);
                forward_first(&b[..wb], &mut c[..wb], &mut d[..wb], nk == 1);
                for k in 1..nk {
                    let (cprev, ccur) = c.split_at_mut(k * wb);
                    let (dprev, dcur) = d.split_at_mut(k * wb);
                    forward(
                        [&a[k * wb..][..wb], &b[k * wb..][..wb]],
                        [&cprev[(k - 1) * wb..], &dprev[(k - 1) * wb..]],
                        &mut ccur[..wb],
                        &mut dcur[..wb],
                        k + 1 == nk,
                    );
                }
                for k in (0..nk.saturating_sub(1)).rev() {
                    let (dcur, dnext) = d.split_at_mut((k + 1) * wb);
                    backward(&c[k * wb..][..wb], &mut dcur[k * wb..], &dnext[..wb]);
                }
                let mut x = xplane.slice_axis_mut(Axis(0), range);
                scatter_columns(d, &mut x, wb);
            }
        }
    }

    /// Strategy [`Strategy::Levels`]: slabs of `rows` rows along `h_out`, each row all of the
    /// other horizontal axis, swept level by level straight from the fields.
    #[inline(always)]
    fn by_levels(
        &mut self,
        sub: &[ArrayView3<'_, T>; 4],
        mut part: ArrayViewMut3<'_, T>,
        h_out: usize,
        rows: usize,
    ) {
        let nk = part.len_of(Axis(2));
        let np = part.len_of(Axis(h_out));
        let nh = part.len_of(Axis(1 - h_out));
        // In a level (axes I, J), rows run along the other horizontal axis.
        let lane = Axis(1 - h_out);
        for p0 in (0..np).step_by(rows) {
            let pb = rows.min(np - p0);
            let w = pb * nh;
            let range = Slice::from(p0..p0 + pb);
            let slab: [ArrayView3<'_, T>; 4] =
                std::array::from_fn(|n| sub[n].slice_axis(Axis(h_out), range));
            let mut xslab = part.slice_axis_mut(Axis(h_out), range);
            // c' and d' of every level, `[k][column]`; d' becomes x in the backward sweep.
            let (cs, ds) = (&mut self.c, &mut self.d);
            cs.clear();
            cs.resize(w * nk, T::ZERO);
            ds.clear();
            ds.resize(w * nk, T::ZERO);
            for k in 0..nk {
                let levels: [ArrayView2<'_, T>; 4] =
                    std::array::from_fn(|n| slab[n].index_axis(Axis(2), k));
                let mut lanes = levels.each_ref().map(|l| l.lanes(lane).into_iter());
                let (cprev, ccur) = cs.split_at_mut(k * w);
                let (dprev, dcur) = ds.split_at_mut(k * w);
                for r in 0..pb {
                    let [a, b, c, d] =
                        std::array::from_fn(|n| lanes[n].next().expect("same shape as the output"));
                    let rows4 = [&a, &b, &c, &d];
                    for (v, buf) in rows4.iter().zip(&mut self.row) {
                        if v.to_slice().is_none() {
                            exec::gather(v, buf);
                        }
                    }
                    let [a, b, c, d]: [&[T]; 4] =
                        std::array::from_fn(|n| rows4[n].to_slice().unwrap_or(&self.row[n]));
                    let at = r * nh;
                    let (ck, dk) = (&mut ccur[at..at + nh], &mut dcur[at..at + nh]);
                    exec::copy_slice(ck, c);
                    exec::copy_slice(dk, d);
                    if k == 0 {
                        forward_first(b, ck, dk, nk == 1);
                    } else {
                        let prev = [&cprev[(k - 1) * w + at..], &dprev[(k - 1) * w + at..]];
                        forward([a, b], prev, ck, dk, k + 1 == nk);
                    }
                }
            }
            for k in (0..nk).rev() {
                let (dcur, dnext) = ds.split_at_mut((k + 1) * w);
                let dk = &mut dcur[k * w..];
                if k + 1 < nk {
                    backward(&cs[k * w..][..w], dk, &dnext[..w]);
                }
                let mut level = xslab.index_axis_mut(Axis(2), k);
                for (r, mut xrow) in level.lanes_mut(lane).into_iter().enumerate() {
                    exec::scatter(&dk[r * nh..][..nh], &mut xrow);
                }
            }
        }
    }
}

/// Level 0 of the forward sweep: `c' = c / b`, `d' = d / b` (in place). `c` is not used when
/// the level is also the last one.
#[inline(always)]
fn forward_first<T: Float>(b: &[T], c: &mut [T], d: &mut [T], last: bool) {
    let n = d.len();
    let (b, c) = (&b[..n], &mut c[..n]);
    for x in 0..n {
        let m = T::ONE / b[x];
        if !last {
            c[x] = c[x] * m;
        }
        d[x] = d[x] * m;
    }
}

/// One level `k > 0` of the forward sweep, in place on `c` and `d`:
/// `m = 1 / (b - a c'[k-1])`, `c' = c m`, `d' = (d - a d'[k-1]) m`; `prev` holds `c'[k-1]`
/// and `d'[k-1]`. `c` is not used on the last level.
#[inline(always)]
fn forward<T: Float>([a, b]: [&[T]; 2], prev: [&[T]; 2], c: &mut [T], d: &mut [T], last: bool) {
    let n = d.len();
    let (a, b, c) = (&a[..n], &b[..n], &mut c[..n]);
    let (cp, dp) = (&prev[0][..n], &prev[1][..n]);
    if last {
        for x in 0..n {
            let m = T::ONE / (b[x] - a[x] * cp[x]);
            d[x] = (d[x] - a[x] * dp[x]) * m;
        }
    } else {
        for x in 0..n {
            let m = T::ONE / (b[x] - a[x] * cp[x]);
            c[x] = c[x] * m;
            d[x] = (d[x] - a[x] * dp[x]) * m;
        }
    }
}

/// One level of the backward sweep, in place: `x = d' - c' x[k+1]`.
#[inline(always)]
fn backward<T: Float>(c: &[T], d: &mut [T], xnext: &[T]) {
    let n = c.len();
    let (d, xn) = (&mut d[..n], &xnext[..n]);
    for x in 0..n {
        d[x] = d[x] - c[x] * xn[x];
    }
}

/// Copies `src` (`[column][k]`) into `buf` laid out `[k][column]` with `wb` columns.
#[inline(always)]
fn gather_columns<T: Float>(src: &ArrayView2<'_, T>, buf: &mut [T], wb: usize) {
    for (w, col) in src.lanes(Axis(1)).into_iter().enumerate() {
        let dst = buf[w..].iter_mut().step_by(wb);
        match col.to_slice() {
            Some(s) => dst.zip(s).for_each(|(d, v)| *d = *v),
            None => dst.zip(col.iter()).for_each(|(d, v)| *d = *v),
        }
    }
}

/// Writes `buf` (`[k][column]`) into `dst` (`[column][k]`).
#[inline(always)]
fn scatter_columns<T: Float>(buf: &[T], dst: &mut ArrayViewMut2<'_, T>, wb: usize) {
    for (w, mut col) in dst.lanes_mut(Axis(1)).into_iter().enumerate() {
        let src = buf[w..].iter().step_by(wb);
        match col.as_slice_mut() {
            Some(s) => s.iter_mut().zip(src).for_each(|(d, v)| *d = *v),
            None => col.iter_mut().zip(src).for_each(|(d, v)| *d = *v),
        }
    }
}
