//! Loop machinery shared by the kernels (thread counts and pools live in [`crate::runtime::threads`]): the loop order chosen
//! from strides, splitting an output into disjoint tasks, and a row driver that hands
//! contiguous slices to a kernel's inner loop.

use super::Float;
use ndarray::{s, ArrayView1, ArrayView2, ArrayView3, ArrayViewMut1, ArrayViewMut3, Axis};

/// Domains with fewer points than this run on the calling thread: below it, waking a pool
/// costs more than the second core saves.
pub const PARALLEL_MIN_POINTS: usize = 32 * 1024;

pub use crate::runtime::threads::{Threads, MAX_THREADS};

/// Copies of at least this many bytes write with non-temporal (streaming) stores: such an
/// output does not fit the last-level cache with its input, and streaming saves reading every
/// output line into the cache before overwriting it.
pub const STREAM_MIN_BYTES: usize = 16 << 20;

/// Whether an output of `len` elements of `T` is written with streaming stores.
pub(crate) fn streaming<T>(len: usize) -> bool {
    len.saturating_mul(std::mem::size_of::<T>()) >= STREAM_MIN_BYTES
}

/// The element types the kernels are written for; sealed: only `f32` and `f64`.
pub trait Element: Copy + Sized {
    /// Copies `src` into `dst` (same length), with streaming stores where the target has them.
    /// Call [`fence`] before the written memory is handed to another thread.
    fn stream(dst: &mut [Self], src: &[Self]) {
        stream_bytes(dst, src);
    }
}

impl Element for f32 {}
impl Element for f64 {}

/// See [`Element::stream`]: 16-byte non-temporal stores on x86-64, a plain copy elsewhere.
#[inline(always)]
fn stream_bytes<T: Element>(dst: &mut [T], src: &[T]) {
    assert_eq!(dst.len(), src.len(), "stream: lengths differ");
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let size = std::mem::size_of::<T>();
        // Elements before the first 16-byte aligned one (T is 4 or 8 bytes, aligned to its size).
        let head = dst.as_ptr().align_offset(16).min(dst.len());
        let vectors = (dst.len() - head) * size / 16;
        let per = 16 / size;
        let body = head + vectors * per;
        dst[..head].copy_from_slice(&src[..head]);
        for v in 0..vectors {
            let at = head + v * per;
            // SAFETY: elements `at..at + per` (16 bytes) lie within both slices because
            // `at + per <= body <= len`; the store address is 16-byte aligned because `head`
            // makes it so and every step adds 16 bytes; the load may be unaligned. `T` is a
            // plain float, so any bytes are a valid value. The store is weakly ordered: callers
            // fence before the output is shared.
            unsafe {
                let x = _mm_loadu_si128(src.as_ptr().add(at).cast::<__m128i>());
                _mm_stream_si128(dst.as_mut_ptr().add(at).cast::<__m128i>(), x);
            }
        }
        dst[body..].copy_from_slice(&src[body..]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// Orders earlier streaming stores of this thread before any later store (x86-64 `sfence`),
/// so that they are visible to the thread that waits for this task.
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no operands and no preconditions; SSE is part of x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

static SIMD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Allows or forbids the AVX2 code paths (for tests: both paths give bitwise equal results).
pub(crate) fn set_simd(enabled: bool) {
    SIMD.store(enabled, std::sync::atomic::Ordering::Relaxed);
}

/// The instruction set the kernels' inner loops use on this CPU: `"avx2"` or `"portable"`.
pub(crate) fn simd_level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if SIMD.load(std::sync::atomic::Ordering::Relaxed) && std::is_x86_feature_detected!("avx2") {
        return "avx2";
    }
    "portable"
}

/// A piece of work whose hot loops are worth compiling for more than one instruction set.
///
/// `run` must be `#[inline(always)]`, and so must every function on its hot path: only code
/// inlined into the copies that [`simd`] makes is compiled for the wider instruction set.
pub(crate) trait SimdTask {
    /// What the work returns.
    type Output;
    /// Does the work.
    fn run(self) -> Self::Output;
}

/// Runs `task` compiled for AVX2 when the CPU has it (the build targets baseline x86-64, i.e.
/// SSE2). Results are identical either way: the compiler never fuses multiplies and adds on its
/// own, and element-wise loops give the same result in any vector width.
#[inline(always)]
pub(crate) fn simd<W: SimdTask>(task: W) -> W::Output {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2")]
        fn avx2<W: SimdTask>(task: W) -> W::Output {
            task.run()
        }
        if simd_level() == "avx2" {
            // SAFETY: the running CPU supports AVX2 (checked just above), which is the only
            // requirement for calling a function compiled with that target feature.
            return unsafe { avx2(task) };
        }
    }
    task.run()
}

/// Whether a call over `points` points should use more than the calling thread.
pub(crate) fn parallel(threads: Threads, points: usize) -> bool {
    threads.get() > 1 && points >= PARALLEL_MIN_POINTS
}

/// How many tasks to cut a parallel call into: a few per thread, for balance.
pub(crate) fn tasks_wanted(threads: Threads) -> usize {
    threads.get() * 4
}

pub(crate) use crate::runtime::threads::run_each;

/// Axes of the domain in loop order: `inner` is the output's unit-stride axis.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Order {
    pub outer: usize,
    pub mid: usize,
    pub inner: usize,
}

impl Order {
    /// The order for an output of `shape` and `strides` (elements): the axis with the smallest
    /// stride innermost, the largest outermost; axes of length 1 count as outermost.
    pub fn from_strides(shape: [usize; 3], strides: [isize; 3]) -> Order {
        let key = |a: usize| {
            if shape[a] <= 1 {
                usize::MAX
            } else {
                strides[a].unsigned_abs()
            }
        };
        let mut axes = [0usize, 1, 2];
        // Descending key; ties keep the later axis inside (C order for equal strides).
        axes.sort_by(|&x, &y| key(y).cmp(&key(x)).then(x.cmp(&y)));
        Order {
            outer: axes[0],
            mid: axes[1],
            inner: axes[2],
        }
    }

    /// The loop order for `out`.
    pub fn of<T>(out: &ArrayViewMut3<'_, T>) -> Order {
        let (i, j, k) = out.dim();
        let st = out.strides();
        Order::from_strides([i, j, k], [st[0], st[1], st[2]])
    }
}

/// The axis index `axis` gets once `removed` (another axis) is indexed away.
pub(crate) fn after_removing(axis: usize, removed: usize) -> usize {
    debug_assert_ne!(axis, removed);
    if axis > removed {
        axis - 1
    } else {
        axis
    }
}

/// The sub-view of `v` starting at `start` with `shape`.
pub(crate) fn window<'a, T>(
    v: &ArrayView3<'a, T>,
    start: [usize; 3],
    shape: [usize; 3],
) -> ArrayView3<'a, T> {
    (*v).slice_move(s![
        start[0]..start[0] + shape[0],
        start[1]..start[1] + shape[1],
        start[2]..start[2] + shape[2]
    ])
}

/// A part of an output: its first point (domain coordinates) and the view of it.
pub(crate) type Part<'a, T> = ([usize; 3], ArrayViewMut3<'a, T>);

/// Cuts `out` into disjoint blocks of at most `chunk[a]` points along each axis `a`.
pub(crate) fn split<'a, T>(out: ArrayViewMut3<'a, T>, chunk: [usize; 3]) -> Vec<Part<'a, T>> {
    let mut parts = vec![([0usize; 3], out)];
    for (a, &c) in chunk.iter().enumerate() {
        let c = c.max(1);
        let mut next = Vec::new();
        for (origin, mut v) in parts {
            let mut start = origin;
            loop {
                let len = v.len_of(Axis(a));
                if len <= c {
                    next.push((start, v));
                    break;
                }
                let (head, tail) = v.split_at(Axis(a), c);
                next.push((start, head));
                start[a] += c;
                v = tail;
            }
        }
        parts = next;
    }
    parts
}

/// Chunk lengths that cut `shape` into about `want` blocks along the outer axes of `order`.
pub(crate) fn outer_chunks(shape: [usize; 3], order: Order, want: usize) -> [usize; 3] {
    let mut chunk = shape;
    let n_outer = shape[order.outer].max(1);
    if n_outer >= want {
        chunk[order.outer] = n_outer.div_ceil(want);
    } else {
        chunk[order.outer] = 1;
        let per_plane = want.div_ceil(n_outer);
        chunk[order.mid] = shape[order.mid].div_ceil(per_plane).max(1);
    }
    chunk
}

/// A kernel that computes each output row from the rows of `N` inputs at the same position.
pub(crate) trait RowKernel<T: Float, const N: usize>: Sync {
    /// Computes one row; all slices have the same length.
    fn row(&self, out: &mut [T], ins: [&[T]; N]);

    /// Computes one row into memory written with streaming stores; `tmp` is a buffer of the
    /// row's length.
    #[inline(always)]
    fn row_stream(&self, out: &mut [T], ins: [&[T]; N], tmp: &mut [T]) {
        self.row(tmp, ins);
        T::stream(out, tmp);
    }
}

/// Contiguous runs at least this long are copied with `memmove` (see [`copy_slice`]).
const MEMMOVE_MIN_BYTES: usize = 8192;

/// Per-task buffers of the row driver, for rows that are not contiguous or are streamed.
struct RowScratch<T, const N: usize> {
    ins: [Vec<T>; N],
    out: Vec<T>,
    /// Output buffer of a whole plane processed as one row, for streaming stores.
    plane: Vec<T>,
}

/// Copies `src` into `dst` (same length) with an inline vector loop.
///
/// `copy_from_slice` calls the C library's `memmove`, whose speed depends on how the two
/// addresses are aligned: on an AMD EPYC virtual machine with glibc it ran up to six times
/// slower for some relative alignments of rows of a few hundred elements. This loop runs at the
/// same speed for every alignment. Long runs (whole contiguous planes) still go to `memmove`,
/// which moves them in fewer, wider instructions than this loop.
#[inline(always)]
pub(crate) fn copy_slice<T: Copy>(dst: &mut [T], src: &[T]) {
    assert_eq!(dst.len(), src.len(), "copy_slice: lengths differ");
    if std::mem::size_of_val(src) >= MEMMOVE_MIN_BYTES {
        dst.copy_from_slice(src);
        return;
    }
    let mut d = dst.chunks_exact_mut(8);
    let mut s = src.chunks_exact(8);
    for (d, s) in (&mut d).zip(&mut s) {
        let s: &[T; 8] = s.try_into().expect("chunks of 8");
        let d: &mut [T; 8] = d.try_into().expect("chunks of 8");
        *d = *s;
        // Keeps the optimiser from turning the loop back into a `memmove` call.
        std::hint::black_box(());
    }
    d.into_remainder().copy_from_slice(s.remainder());
}

/// Copies a strided 1-D view into `buf` (resized to its length) and returns it as a slice.
pub(crate) fn gather<'b, T: Float>(v: &ArrayView1<'_, T>, buf: &'b mut Vec<T>) -> &'b [T] {
    buf.clear();
    buf.extend(v.iter().copied());
    buf
}

/// Writes `src` into the strided 1-D view `dst` (same length).
pub(crate) fn scatter<T: Float>(src: &[T], dst: &mut ArrayViewMut1<'_, T>) {
    match dst.as_slice_mut() {
        Some(d) => copy_slice(d, src),
        None => dst.iter_mut().zip(src).for_each(|(d, s)| *d = *s),
    }
}

/// The memory of a 2-D view as one slice, if it is contiguous with the given strides.
#[inline(always)]
fn plane_slice<'a, T>(v: &ArrayView2<'a, T>, strides: &[isize]) -> Option<&'a [T]> {
    if v.strides() == strides {
        v.to_slice_memory_order()
    } else {
        None
    }
}

/// Calls `k.row(out_row, in_rows)` for every row of `out` along `order.inner`, where `ins`
/// have the shape of `out` and `in_rows[n]` is the row of `ins[n]` at the same position. Rows
/// are contiguous slices of equal length: strided rows go through a buffer, and when the
/// planes of all views are contiguous with equal strides a whole plane is one row. With
/// `stream`, contiguous output rows are written with streaming stores.
#[inline(always)]
pub(crate) fn for_each_row<T: Float, const N: usize, K: RowKernel<T, N>>(
    mut out: ArrayViewMut3<'_, T>,
    ins: &[ArrayView3<'_, T>; N],
    order: Order,
    stream: bool,
    k: &K,
) {
    let u = Axis(after_removing(order.inner, order.outer));
    let len = out.len_of(Axis(order.inner));
    let mut scratch = RowScratch::<T, N> {
        ins: std::array::from_fn(|_| Vec::new()),
        out: vec![T::ZERO; len],
        plane: Vec::new(),
    };
    for x in 0..out.len_of(Axis(order.outer)) {
        let mut oplane = out.index_axis_mut(Axis(order.outer), x);
        let iplanes: [ArrayView2<'_, T>; N] =
            std::array::from_fn(|n| ins[n].index_axis(Axis(order.outer), x));
        // Whole contiguous planes with matching strides: one long row.
        let ostrides = [oplane.strides()[0], oplane.strides()[1]];
        let whole: [Option<&[T]>; N] = std::array::from_fn(|n| plane_slice(&iplanes[n], &ostrides));
        if whole.iter().all(Option::is_some) {
            if let Some(o) = oplane.as_slice_memory_order_mut() {
                let slices: [&[T]; N] = std::array::from_fn(|n| whole[n].unwrap_or(&[]));
                if stream {
                    scratch.plane.resize(o.len(), T::ZERO);
                    k.row_stream(o, slices, &mut scratch.plane);
                } else {
                    k.row(o, slices);
                }
                continue;
            }
        }
        let mut iters = iplanes.each_ref().map(|p| p.lanes(u).into_iter());
        for mut orow in oplane.lanes_mut(u) {
            let rows: [ArrayView1<'_, T>; N] =
                std::array::from_fn(|n| iters[n].next().expect("same shape as the output"));
            for (row, buf) in rows.iter().zip(&mut scratch.ins) {
                if row.to_slice().is_none() {
                    gather(row, buf);
                }
            }
            let slices: [&[T]; N] =
                std::array::from_fn(|n| rows[n].to_slice().unwrap_or(&scratch.ins[n]));
            match orow.as_slice_mut() {
                Some(o) if stream => k.row_stream(o, slices, &mut scratch.out),
                Some(o) => k.row(o, slices),
                None => {
                    k.row(&mut scratch.out, slices);
                    scatter(&scratch.out, &mut orow);
                }
            }
        }
    }
    if stream {
        fence();
    }
}

/// Runs a row kernel over the domain, in parallel when it pays: `ins` are views with the shape
/// of `out`, each already shifted to the stencil offset it stands for. `stream` asks for
/// streaming stores (see [`RowKernel::row_stream`]).
pub(crate) fn par_rows<T: Float, const N: usize, K: RowKernel<T, N>>(
    out: ArrayViewMut3<'_, T>,
    ins: [ArrayView3<'_, T>; N],
    threads: Threads,
    stream: bool,
    k: &K,
) {
    let order = Order::of(&out);
    let (i, j, kk) = out.dim();
    let shape = [i, j, kk];
    if !parallel(threads, i * j * kk) {
        simd(Rows {
            out,
            ins: &ins,
            order,
            stream,
            k,
        });
        return;
    }
    let parts = split(out, outer_chunks(shape, order, tasks_wanted(threads)));
    run_each(threads, parts, |(origin, part)| {
        let (pi, pj, pk) = part.dim();
        let sub: [ArrayView3<'_, T>; N] =
            std::array::from_fn(|n| window(&ins[n], origin, [pi, pj, pk]));
        simd(Rows {
            out: part,
            ins: &sub,
            order,
            stream,
            k,
        });
    });
}

/// The arguments of [`for_each_row`], as a [`SimdTask`].
struct Rows<'a, 'b, T, const N: usize, K> {
    out: ArrayViewMut3<'a, T>,
    ins: &'b [ArrayView3<'a, T>; N],
    order: Order,
    stream: bool,
    k: &'b K,
}

impl<T: Float, const N: usize, K: RowKernel<T, N>> SimdTask for Rows<'_, '_, T, N, K> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        for_each_row(self.out, self.ins, self.order, self.stream, self.k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_follows_strides() {
        let c = Order::from_strides([4, 5, 6], [30, 6, 1]);
        assert_eq!((c.outer, c.mid, c.inner), (0, 1, 2));
        let f = Order::from_strides([4, 5, 6], [1, 4, 20]);
        assert_eq!((f.outer, f.mid, f.inner), (2, 1, 0));
        let dace = Order::from_strides([4, 5, 6], [5, 1, 20]);
        assert_eq!((dace.outer, dace.mid, dace.inner), (2, 0, 1));
        let neg = Order::from_strides([4, 5, 6], [-30, 6, -1]);
        assert_eq!((neg.outer, neg.mid, neg.inner), (0, 1, 2));
        // A unit axis never becomes the inner loop.
        let unit = Order::from_strides([4, 5, 1], [5, 20, 1]);
        assert_eq!(unit.inner, 0);
    }

    #[test]
    fn split_covers_disjointly() {
        let mut a = ndarray::Array3::<f64>::zeros((5, 7, 3));
        let parts = split(a.view_mut(), [2, 3, 3]);
        assert_eq!(parts.len(), 3 * 3);
        for (origin, mut v) in parts {
            let (i, j, k) = v.dim();
            for ((x, y, z), e) in v.indexed_iter_mut() {
                assert!(x < i && y < j && z < k);
                *e += (100 * (origin[0] + x) + 10 * (origin[1] + y) + origin[2] + z) as f64;
            }
        }
        for ((x, y, z), e) in a.indexed_iter() {
            assert_eq!(*e, (100 * x + 10 * y + z) as f64);
        }
    }
}
