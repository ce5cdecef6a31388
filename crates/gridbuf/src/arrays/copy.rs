//! Copying between two strided layouts of the same shape at memory speed.
//!
//! When the source and destination have different unit-stride axes (a layout change such as
//! C order to Fortran order), a plain loop reads or writes a new cache line for every element.
//! The copy instead works in small square blocks of the plane spanned by the two unit-stride
//! axes, so both sides touch whole cache lines, and spreads rows or block strips over the
//! [`crate::runtime::threads::configured`] threads.

use crate::kernels::exec::{fence, STREAM_MIN_BYTES};
use crate::runtime::threads::{self, Threads};

/// Bytes of one cache line: a block of the copy spans one line per row on both sides.
const LINE: usize = 64;
/// Elements per work item along a long innermost row, so a few long rows still spread over cores.
const ROW_CHUNK: usize = 1 << 15;
/// Copies smaller than this run on the calling thread.
const PARALLEL_MIN_BYTES: usize = 1 << 18;

/// Copies every element of a `shape`-shaped array from `src` to `dst`.
///
/// Strides are in bytes and may be negative (source and destination) or zero (source only).
///
/// # Safety
/// For every index within `shape`, `src + sum(index * src_strides)` must be valid for reading
/// `itemsize` bytes and `dst + sum(index * dst_strides)` valid for writing `itemsize` bytes;
/// distinct indices must map to non-overlapping destination elements, and no destination byte may
/// overlap a source byte. Neither region may be accessed by anything else during the call.
pub unsafe fn copy_strided(
    itemsize: usize,
    shape: &[usize],
    src: *const u8,
    src_strides: &[isize],
    dst: *mut u8,
    dst_strides: &[isize],
) {
    // SAFETY: forwarded from the caller.
    unsafe { CopyPlan::new(itemsize, shape, src_strides, dst_strides).run(src, dst) }
}

impl CopyPlan {
    /// Plans a copy of a `shape`-shaped array of `itemsize`-byte elements between two byte
    /// stride sets: orders the axes by destination stride and merges the ones both sides nest
    /// densely.
    pub fn new(
        itemsize: usize,
        shape: &[usize],
        src_strides: &[isize],
        dst_strides: &[isize],
    ) -> CopyPlan {
        assert!(shape.len() == src_strides.len() && shape.len() == dst_strides.len());
        // Drop unit axes and order the rest from the largest to the smallest destination stride.
        let mut axes: Vec<usize> = (0..shape.len()).filter(|&a| shape[a] > 1).collect();
        axes.sort_by_key(|&a| std::cmp::Reverse(dst_strides[a].unsigned_abs()));
        let (mut ext, mut ss, mut ds) = (Vec::new(), Vec::new(), Vec::<isize>::new());
        for &a in &axes {
            // Merge an axis into the previous (outer) one when both sides nest it densely.
            if let (Some(&e), Some(&s), Some(&d)) = (ext.last(), ss.last(), ds.last()) {
                if e > 0
                    && s == src_strides[a] * shape[a] as isize
                    && d == dst_strides[a] * shape[a] as isize
                {
                    let n = ext.len() - 1;
                    ext[n] *= shape[a];
                    ss[n] = src_strides[a];
                    ds[n] = dst_strides[a];
                    continue;
                }
            }
            ext.push(shape[a]);
            ss.push(src_strides[a]);
            ds.push(dst_strides[a]);
        }
        // Zero for an empty copy (a zero extent or zero-size elements).
        let bytes = if shape.contains(&0) {
            0
        } else {
            ext.iter().product::<usize>().saturating_mul(itemsize)
        };
        CopyPlan {
            itemsize,
            ext,
            ss,
            ds,
            bytes,
        }
    }

    /// Whether the copy changes the unit-stride axis, so that it works in strips that write a
    /// line in every plane of the destination at once (see [`crate::AlignedBuffer::populate`]
    /// for what that means for a fresh destination).
    pub fn changes_layout(&self) -> bool {
        matches!(self.mode(), Some(Mode::Blocks { .. }))
    }

    /// How the innermost work is cut; `None` for a 0-d or empty copy.
    fn mode(&self) -> Option<Mode> {
        if self.bytes == 0 {
            return None;
        }
        let n = self.ext.len();
        let a = n.checked_sub(1)?; // destination's innermost axis
        let b = (0..n)
            .min_by_key(|&ax| self.ss[ax].unsigned_abs())
            .unwrap_or(a);
        let block = LINE / self.itemsize;
        Some(
            if b != a && block >= 2 && self.ss[a].unsigned_abs() > 2 * self.itemsize {
                Mode::Blocks { a, b, block }
            } else {
                Mode::Rows { a }
            },
        )
    }
}

/// A strided copy planned once, without addresses: its axes ordered by destination stride
/// (innermost last), dense axes merged, and how the work is cut.
pub struct CopyPlan {
    itemsize: usize,
    ext: Vec<usize>,
    ss: Vec<isize>,
    ds: Vec<isize>,
    /// Bytes copied; large copies write whole destination lines with non-temporal stores.
    bytes: usize,
}

/// How the innermost work is cut.
#[derive(Copy, Clone)]
enum Mode {
    /// Rows along the destination's unit-stride axis `a`, cut into chunks of `ROW_CHUNK`.
    Rows { a: usize },
    /// Strips in the plane of the destination's unit-stride axis `a` and the source's `b`:
    /// `block` indices along `a` (one destination cache line) by all of `b`, so the source is
    /// read as `block` sequential rows and the destination written in whole lines.
    Blocks { a: usize, b: usize, block: usize },
}

impl CopyPlan {
    /// Runs the copy from `src` to `dst` on the [`threads::configured`] threads.
    ///
    /// # Safety
    /// As for [`copy_strided`], with the shape and strides the plan was made for.
    pub unsafe fn run(&self, src: *const u8, dst: *mut u8) {
        // SAFETY: forwarded from the caller.
        unsafe { self.run_with(threads::configured(), src, dst) }
    }

    /// [`CopyPlan::run`] on `threads` threads.
    ///
    /// # Safety
    /// As for [`copy_strided`], with the shape and strides the plan was made for.
    pub unsafe fn run_with(&self, threads: Threads, src: *const u8, dst: *mut u8) {
        let n = self.ext.len();
        let Some(mode) = self.mode() else {
            if self.bytes > 0 {
                // SAFETY: a 0-d copy of one element, valid by the caller's contract.
                unsafe { copy_elements(self.itemsize, 1, src, 0, dst, 0) };
            }
            return;
        };
        // Addresses as integers, so the work items can be shared between threads.
        let (src, dst) = (src as usize, dst as usize);
        // Outer axes: everything but `a` (and `b` for blocks), in destination order; the chunks
        // along `a` (rows) or the strips of `block` indices along `b` (blocks) are the innermost.
        let outer: Vec<usize> = match mode {
            Mode::Rows { a } => (0..n).filter(|&ax| ax != a).collect(),
            Mode::Blocks { a, b, .. } => (0..n).filter(|&ax| ax != a && ax != b).collect(),
        };
        let outer_count: usize = outer.iter().map(|&ax| self.ext[ax]).product();
        let pieces = match mode {
            Mode::Rows { a } => self.ext[a].div_ceil(ROW_CHUNK),
            Mode::Blocks { a, block, .. } => self.ext[a].div_ceil(block),
        };
        let items = outer_count * pieces;
        let work = |w: usize| self.work_item(src, dst, w, &outer, pieces, mode);
        let team = if self.bytes >= PARALLEL_MIN_BYTES && items > 1 {
            threads::team(threads)
        } else {
            None
        };
        match team {
            Some(team) => {
                // About eight chunks of consecutive items per thread.
                let len = (items / (team.threads() * 8)).max(1);
                team.run(items.div_ceil(len), &|c| {
                    (c * len..((c + 1) * len).min(items)).for_each(work)
                });
            }
            None => (0..items).for_each(work),
        }
    }

    fn work_item(
        &self,
        src: usize,
        dst: usize,
        w: usize,
        outer: &[usize],
        pieces: usize,
        mode: Mode,
    ) {
        let (mut rest, piece) = (w / pieces, w % pieces);
        let (mut so, mut d_o) = (0isize, 0isize);
        for &ax in outer.iter().rev() {
            let i = (rest % self.ext[ax]) as isize;
            rest /= self.ext[ax];
            so += i * self.ss[ax];
            d_o += i * self.ds[ax];
        }
        let src = (src as *const u8).wrapping_offset(so);
        let dst = (dst as *mut u8).wrapping_offset(d_o);
        let size = self.itemsize;
        match mode {
            Mode::Rows { a } => {
                let lo = piece * ROW_CHUNK;
                let len = ROW_CHUNK.min(self.ext[a] - lo);
                let (ssa, dsa) = (self.ss[a], self.ds[a]);
                let (s, d) = (
                    src.wrapping_offset(lo as isize * ssa),
                    dst.wrapping_offset(lo as isize * dsa),
                );
                // SAFETY: one chunk of a row of the copy; in bounds by the caller's contract.
                unsafe { copy_elements(size, len, s, ssa, d, dsa) }
            }
            Mode::Blocks { a, block, b } => {
                // A strip of `block` indices along `a` (one destination cache line), all of `b`:
                // the source is read as `block` sequential rows, the destination is written one
                // whole line per `b` index.
                let a0 = piece * block;
                let na = block.min(self.ext[a] - a0);
                let s = src.wrapping_offset(a0 as isize * self.ss[a]);
                let d = dst.wrapping_offset(a0 as isize * self.ds[a]);
                let tile = Tile {
                    na,
                    nb: self.ext[b],
                    ssa: self.ss[a],
                    ssb: self.ss[b],
                    dsa: self.ds[a],
                    dsb: self.ds[b],
                };
                let stream = self.bytes >= STREAM_MIN_BYTES && tile.whole_lines(d, size);
                // SAFETY: the strip's elements are in bounds by the caller's contract; the
                // streaming variants only run on whole aligned destination lines, and the fence
                // below orders their stores before the task completes.
                unsafe {
                    match size {
                        #[cfg(target_arch = "x86_64")]
                        4 if stream => tile.copy_streaming::<i32>(s, d),
                        #[cfg(target_arch = "x86_64")]
                        8 if stream => tile.copy_streaming::<i64>(s, d),
                        1 => tile.copy::<u8>(s, d),
                        2 => tile.copy::<u16>(s, d),
                        4 => tile.copy::<u32>(s, d),
                        8 => tile.copy::<u64>(s, d),
                        16 => tile.copy::<u128>(s, d),
                        _ => {
                            for ib in 0..tile.nb as isize {
                                copy_elements(
                                    size,
                                    na,
                                    s.wrapping_offset(ib * tile.ssb),
                                    tile.ssa,
                                    d.wrapping_offset(ib * tile.dsb),
                                    tile.dsa,
                                );
                            }
                        }
                    }
                }
                if stream {
                    fence();
                }
            }
        }
    }
}

/// A strip of a layout-changing copy: `na` elements along the destination's unit-stride axis
/// times `nb` along the source's.
struct Tile {
    na: usize,
    nb: usize,
    ssa: isize,
    ssb: isize,
    dsa: isize,
    dsb: isize,
}

impl Tile {
    /// Whether every destination row of the strip is one whole, aligned cache line of
    /// `size`-byte elements, so that it can be written with non-temporal stores: a large
    /// destination is then not read into the cache before being overwritten.
    fn whole_lines(&self, dst: *mut u8, size: usize) -> bool {
        cfg!(target_arch = "x86_64")
            && matches!(size, 4 | 8)
            && self.dsa == size as isize
            && self.na * size == LINE
            && (dst as usize) % LINE == 0
            && self.dsb % LINE as isize == 0
    }

    /// [`Tile::copy`] with non-temporal stores, for strips whose [`Tile::whole_lines`] holds.
    ///
    /// # Safety
    /// As for [`Tile::copy`]; the destination address must be aligned to `T`. The stores are
    /// weakly ordered: call [`fence`] before the memory is handed to another thread.
    #[cfg(target_arch = "x86_64")]
    unsafe fn copy_streaming<T: StreamStore>(&self, src: *const u8, dst: *mut u8) {
        // One whole line per `b` index: a fixed count the compiler unrolls.
        let per_line = LINE / std::mem::size_of::<T>();
        debug_assert_eq!(self.na, per_line);
        for ib in 0..self.nb as isize {
            let s = src.wrapping_offset(ib * self.ssb);
            let d = dst.wrapping_offset(ib * self.dsb) as *mut T;
            for ia in 0..per_line {
                // SAFETY: in bounds by the caller's contract; the destination is aligned (it
                // starts a cache line and steps by the element size), the source may not be.
                unsafe {
                    let v =
                        (s.wrapping_offset(ia as isize * self.ssa) as *const T).read_unaligned();
                    T::store(d.add(ia), v);
                }
            }
        }
    }

    /// # Safety
    /// Every element of the strip must be valid as in [`copy_strided`].
    unsafe fn copy<T: Copy>(&self, src: *const u8, dst: *mut u8) {
        for ib in 0..self.nb as isize {
            let s = src.wrapping_offset(ib * self.ssb);
            let d = dst.wrapping_offset(ib * self.dsb);
            for ia in 0..self.na as isize {
                // SAFETY: in bounds by the caller's contract; unaligned accesses because NumPy
                // allows unaligned arrays.
                unsafe {
                    let v = (s.wrapping_offset(ia * self.ssa) as *const T).read_unaligned();
                    (d.wrapping_offset(ia * self.dsa) as *mut T).write_unaligned(v);
                }
            }
        }
    }
}

/// An element that x86-64 can store with a non-temporal (streaming) store.
#[cfg(target_arch = "x86_64")]
trait StreamStore: Copy {
    /// # Safety
    /// `dst` must be valid for writing and aligned; see [`Tile::copy_streaming`].
    unsafe fn store(dst: *mut Self, v: Self);
}

#[cfg(target_arch = "x86_64")]
impl StreamStore for i32 {
    unsafe fn store(dst: *mut i32, v: i32) {
        // SAFETY: forwarded from the caller; SSE2 is part of x86-64.
        unsafe { std::arch::x86_64::_mm_stream_si32(dst, v) }
    }
}

#[cfg(target_arch = "x86_64")]
impl StreamStore for i64 {
    unsafe fn store(dst: *mut i64, v: i64) {
        // SAFETY: forwarded from the caller; SSE2 is part of x86-64.
        unsafe { std::arch::x86_64::_mm_stream_si64(dst, v) }
    }
}

/// Copies `n` elements of `itemsize` bytes with the given byte strides.
///
/// # Safety
/// As for [`copy_strided`], for the `n` elements addressed.
unsafe fn copy_elements(
    itemsize: usize,
    n: usize,
    src: *const u8,
    ss: isize,
    dst: *mut u8,
    ds: isize,
) {
    let size = itemsize as isize;
    if ss == size && ds == size {
        // SAFETY: both rows are contiguous and, by contract, valid and disjoint.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, n * itemsize) };
        return;
    }
    macro_rules! typed {
        ($t:ty) => {
            for i in 0..n as isize {
                // SAFETY: element `i` of each row is valid by contract; unaligned accesses are
                // used because NumPy allows unaligned arrays.
                unsafe {
                    let v = (src.offset(i * ss) as *const $t).read_unaligned();
                    (dst.offset(i * ds) as *mut $t).write_unaligned(v);
                }
            }
        };
    }
    match itemsize {
        1 => typed!(u8),
        2 => typed!(u16),
        4 => typed!(u32),
        8 => typed!(u64),
        16 => typed!(u128),
        _ => {
            for i in 0..n as isize {
                // SAFETY: as above, byte-wise.
                unsafe {
                    std::ptr::copy_nonoverlapping(src.offset(i * ss), dst.offset(i * ds), itemsize)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies a C-ordered `shape` array of u64 into the layout with strides `dst_strides`
    /// (in elements) and checks every element.
    fn check(shape: &[usize], dst_elem_strides: &[isize]) {
        let n: usize = shape.iter().product();
        let src: Vec<u64> = (0..n as u64).collect();
        let mut c_strides = vec![8isize; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            c_strides[i] = c_strides[i + 1] * shape[i + 1] as isize;
        }
        let span = shape
            .iter()
            .zip(dst_elem_strides)
            .map(|(&e, &s)| (e.max(1) - 1) * s as usize)
            .sum::<usize>()
            + 1;
        let mut dst = vec![u64::MAX; span];
        let ds: Vec<isize> = dst_elem_strides.iter().map(|s| s * 8).collect();
        // SAFETY: `src` holds the C-ordered source and `dst` spans every destination element
        // the strides reach (`span` elements); the two vectors are distinct allocations.
        unsafe {
            copy_strided(
                8,
                shape,
                src.as_ptr().cast(),
                &c_strides,
                dst.as_mut_ptr().cast(),
                &ds,
            )
        };
        for (flat, &v) in src.iter().enumerate() {
            let mut rest = flat;
            let mut pos = 0usize;
            for ax in (0..shape.len()).rev() {
                pos += (rest % shape[ax]) * dst_elem_strides[ax] as usize;
                rest /= shape[ax];
            }
            assert_eq!(
                dst[pos], v,
                "shape {shape:?} strides {dst_elem_strides:?} flat {flat}"
            );
        }
    }

    #[test]
    fn layout_changes_are_detected() {
        let c = [160, 40, 8];
        assert!(CopyPlan::new(8, &[4, 5, 5], &c, &[8, 32, 160]).changes_layout());
        assert!(!CopyPlan::new(8, &[4, 5, 5], &c, &c).changes_layout());
        // Padded rows keep the unit-stride axis: no layout change.
        assert!(!CopyPlan::new(8, &[4, 5, 5], &c, &[8 * 36, 8 * 6, 8]).changes_layout());
        assert!(!CopyPlan::new(8, &[], &[], &[]).changes_layout());
        assert!(!CopyPlan::new(0, &[3, 3], &[24, 8], &[8, 24]).changes_layout());
        assert!(!CopyPlan::new(8, &[0, 3], &[24, 8], &[8, 0]).changes_layout());
    }

    #[test]
    fn copies_across_layouts() {
        check(&[], &[]);
        check(&[5], &[1]);
        check(&[7, 9], &[1, 7]);
        check(&[70, 33, 5], &[1, 70, 70 * 33]);
        check(&[256, 256, 4], &[1, 256, 256 * 256]); // large enough to go parallel
        check(&[3, 40, 50], &[40 * 52, 52, 1]); // padded rows
        check(&[4, 0, 3], &[1, 4, 4]);
        // At least STREAM_MIN_BYTES: whole destination lines are streamed.
        check(&[256, 256, 40], &[1, 256, 256 * 256]);
        // Large, but rows of 250 elements: lines are not all aligned, both paths mix.
        check(&[250, 256, 40], &[1, 250, 250 * 256]);
    }

    #[test]
    fn large_four_byte_copies_stream_correctly() {
        let shape = [512usize, 128, 72];
        let n: usize = shape.iter().product();
        assert!(n * 4 >= STREAM_MIN_BYTES);
        let src: Vec<u32> = (0..n as u32).collect();
        let mut dst = vec![u32::MAX; n];
        let c = [(128 * 72 * 4) as isize, 72 * 4, 4];
        let f = [4, 512 * 4, (512 * 128 * 4) as isize];
        // SAFETY: `src` and `dst` each hold the `n` elements of the shape in C and Fortran
        // order; they are distinct allocations.
        unsafe {
            copy_strided(
                4,
                &shape,
                src.as_ptr().cast(),
                &c,
                dst.as_mut_ptr().cast(),
                &f,
            )
        };
        for i in (0..512).step_by(7) {
            for j in (0..128).step_by(5) {
                for k in 0..72 {
                    assert_eq!(dst[i + 512 * (j + 128 * k)], src[(i * 128 + j) * 72 + k]);
                }
            }
        }
        assert!(dst.iter().all(|&v| v != u32::MAX));
    }
}
