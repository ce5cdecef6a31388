//! Copying between two strided layouts of the same shape at memory speed.
//!
//! When the source and destination have different unit-stride axes (a layout change such as
//! C order to Fortran order), a plain loop reads or writes a new cache line for every element.
//! The copy instead works in square tiles of the plane spanned by the two unit-stride axes, so
//! both sides touch whole cache lines, and spreads rows or tile strips over all cores.

use rayon::prelude::*;

/// Tile edge in elements for layout-changing copies: 32 x 32 doubles is 8 KiB per side.
const TILE: usize = 32;
/// Copies smaller than this run on the calling thread.
const PARALLEL_MIN_BYTES: usize = 1 << 18;

/// A strided destination or source: a base address and byte strides per axis.
#[derive(Copy, Clone, Debug)]
struct Base(usize);

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
    assert!(shape.len() == src_strides.len() && shape.len() == dst_strides.len());
    if itemsize == 0 || shape.contains(&0) {
        return;
    }
    // Drop unit axes and order the rest from the largest to the smallest destination stride.
    let mut axes: Vec<usize> = (0..shape.len()).filter(|&a| shape[a] > 1).collect();
    axes.sort_by_key(|&a| std::cmp::Reverse(dst_strides[a].unsigned_abs()));
    let ext: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
    let ss: Vec<isize> = axes.iter().map(|&a| src_strides[a]).collect();
    let ds: Vec<isize> = axes.iter().map(|&a| dst_strides[a]).collect();
    let job = Job {
        itemsize,
        ext,
        ss,
        ds,
        src: Base(src as usize),
        dst: Base(dst as usize),
    };
    job.run();
}

struct Job {
    itemsize: usize,
    ext: Vec<usize>,
    ss: Vec<isize>,
    ds: Vec<isize>,
    src: Base,
    dst: Base,
}

impl Job {
    fn run(&self) {
        let n = self.ext.len();
        if n == 0 {
            // SAFETY: a 0-d copy of one element, valid by the caller's contract.
            unsafe {
                copy_elements(
                    self.itemsize,
                    1,
                    self.src.0 as *const u8,
                    0,
                    self.dst.0 as *mut u8,
                    0,
                )
            };
            return;
        }
        let a = n - 1; // destination's innermost axis
        let b = (0..n)
            .min_by_key(|&ax| self.ss[ax].unsigned_abs())
            .unwrap_or(a);
        let tiled = b != a && self.ss[a].unsigned_abs() > 2 * self.itemsize;
        // Outer axes: everything but `a` (and `b` when tiling), in destination order; in tile
        // mode the strips of TILE indices along `b` form one more, innermost, outer axis.
        let outer: Vec<usize> = (0..n)
            .filter(|&ax| ax != a && !(tiled && ax == b))
            .collect();
        let outer_count: usize = outer.iter().map(|&ax| self.ext[ax]).product();
        let strips = if tiled { self.ext[b].div_ceil(TILE) } else { 1 };
        let items = outer_count * strips;
        let total_bytes = self.ext.iter().product::<usize>() * self.itemsize;
        let work = |w: usize| self.work_item(w, &outer, strips, a, tiled.then_some(b));
        if total_bytes >= PARALLEL_MIN_BYTES && items > 1 {
            let min_len = (items / (rayon::current_num_threads() * 8)).max(1);
            (0..items)
                .into_par_iter()
                .with_min_len(min_len)
                .for_each(work);
        } else {
            (0..items).for_each(work);
        }
    }

    fn work_item(&self, w: usize, outer: &[usize], strips: usize, a: usize, b: Option<usize>) {
        let (mut rest, strip) = (w / strips, w % strips);
        let (mut so, mut d_o) = (0isize, 0isize);
        for &ax in outer.iter().rev() {
            let i = (rest % self.ext[ax]) as isize;
            rest /= self.ext[ax];
            so += i * self.ss[ax];
            d_o += i * self.ds[ax];
        }
        let src = (self.src.0 as *const u8).wrapping_offset(so);
        let dst = (self.dst.0 as *mut u8).wrapping_offset(d_o);
        let (na, ssa, dsa) = (self.ext[a], self.ss[a], self.ds[a]);
        match b {
            None => {
                // SAFETY: one row of the copy; in bounds by the caller's contract.
                unsafe { copy_elements(self.itemsize, na, src, ssa, dst, dsa) }
            }
            Some(b) => {
                let (ssb, dsb) = (self.ss[b], self.ds[b]);
                let lo = strip * TILE;
                let hi = (lo + TILE).min(self.ext[b]);
                for a0 in (0..na).step_by(TILE) {
                    let len = TILE.min(na - a0);
                    for ib in lo..hi {
                        let ib = ib as isize;
                        let a0 = a0 as isize;
                        let s = src.wrapping_offset(ib * ssb + a0 * ssa);
                        let d = dst.wrapping_offset(ib * dsb + a0 * dsa);
                        // SAFETY: a row segment of one tile; in bounds by the caller's contract.
                        unsafe { copy_elements(self.itemsize, len, s, ssa, d, dsa) }
                    }
                }
            }
        }
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
    fn copies_across_layouts() {
        check(&[], &[]);
        check(&[5], &[1]);
        check(&[7, 9], &[1, 7]);
        check(&[70, 33, 5], &[1, 70, 70 * 33]);
        check(&[256, 256, 4], &[1, 256, 256 * 256]); // large enough to go parallel
        check(&[3, 40, 50], &[40 * 52, 52, 1]); // padded rows
        check(&[4, 0, 3], &[1, 4, 4]);
    }
}
