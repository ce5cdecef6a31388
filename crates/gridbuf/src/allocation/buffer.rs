//! Aligned host memory that owns itself.

use crate::error::{Error, Result};
use std::alloc::{self, Layout};
use std::mem::MaybeUninit;
use std::ptr::NonNull;

/// How a new buffer's bytes start out.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Init {
    /// Left as the allocator hands them out (for `empty`, or when every byte is written next).
    Uninit,
    /// Zero. Large blocks come as fresh zeroed pages from the OS, so nothing is written.
    Zeroed,
}

/// A block of host memory whose usable part starts at a given alignment.
///
/// The block is allocated with a small alignment and over-allocated by `alignment` bytes, so
/// that zeroed requests go through `calloc` (which gets zeroed pages from the kernel without a
/// fill loop) for any alignment; the aligned start is found inside.
#[derive(Debug)]
pub struct AlignedBuffer {
    raw: NonNull<u8>,
    raw_layout: Layout,
    start: usize,
    len: usize,
    alignment: usize,
}

// SAFETY: the buffer exclusively owns its allocation; sharing `&AlignedBuffer` only exposes the
// address, and mutation needs `&mut`.
unsafe impl Send for AlignedBuffer {}
// SAFETY: see `Send`; no interior mutability.
unsafe impl Sync for AlignedBuffer {}

/// Alignment asked of the system allocator: the largest for which `alloc_zeroed` maps to
/// `calloc` on every tier-1 platform.
const RAW_ALIGN: usize = 8;

impl AlignedBuffer {
    /// Allocates `len` usable bytes starting at a multiple of `alignment` (a power of two).
    pub fn new(len: usize, alignment: usize, init: Init) -> Result<AlignedBuffer> {
        if !alignment.is_power_of_two() {
            return Err(Error::invalid(
                "alignment",
                alignment,
                "expected a power of two",
            ));
        }
        let too_large = || Error::overflow("nbytes", len, "the buffer size");
        let raw_len = len.checked_add(alignment).ok_or_else(too_large)?;
        let raw_layout = Layout::from_size_align(raw_len, RAW_ALIGN).map_err(|_| too_large())?;
        // SAFETY: `raw_layout` has a non-zero size (at least `alignment` >= 1 bytes).
        let ptr = unsafe {
            match init {
                Init::Uninit => alloc::alloc(raw_layout),
                Init::Zeroed => alloc::alloc_zeroed(raw_layout),
            }
        };
        let raw = NonNull::new(ptr).ok_or(Error::OutOfMemory {
            bytes: len,
            alignment,
        })?;
        let start = (alignment - (raw.as_ptr() as usize) % alignment) % alignment;
        advise_huge_pages(raw.as_ptr(), raw_len);
        Ok(AlignedBuffer {
            raw,
            raw_layout,
            start,
            len,
            alignment,
        })
    }

    /// Number of usable bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no usable bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The alignment of [`AlignedBuffer::as_ptr`].
    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// Start of the usable bytes.
    pub fn as_ptr(&self) -> *const u8 {
        self.raw.as_ptr().wrapping_add(self.start)
    }

    /// Start of the usable bytes, for writing.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.raw.as_ptr().wrapping_add(self.start)
    }

    /// The usable bytes, which may be uninitialised.
    pub fn as_uninit_mut(&mut self) -> &mut [MaybeUninit<u8>] {
        // SAFETY: `start + len <= raw_len` bytes are owned by `self` and borrowed mutably with
        // it; `MaybeUninit<u8>` is valid for any byte, initialised or not.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr().cast(), self.len) }
    }

    /// Faults in every page of a large buffer now, from all cores at once, each core on whole
    /// huge pages of its own.
    ///
    /// A fresh block's pages are zeroed by the kernel on first touch, one core at a time per
    /// page. A copy that writes everywhere at once (a layout change writes one line in every
    /// plane per strip) makes that zeroing serial and lets two cores fault the same huge page;
    /// populating first spreads it evenly over the [`crate::runtime::threads::configured`] threads. Blocks below 4 MiB (`HUGE_PAGE_MIN_BYTES`) are left alone.
    /// The contents stay unspecified (the touched bytes become zero).
    pub fn populate(&mut self) {
        if self.len < HUGE_PAGE_MIN_BYTES {
            return;
        }
        const PAGE: usize = 4096;
        let start = self.as_mut_ptr() as usize;
        let end = start + self.len;
        // Chunks on absolute huge-page boundaries, so no page is touched from two cores.
        let first = start.next_multiple_of(HUGE_PAGE_BYTES);
        let chunks = (end.saturating_sub(first)).div_ceil(HUGE_PAGE_BYTES) + 1;
        crate::runtime::threads::for_each_index(
            crate::runtime::threads::configured(),
            chunks,
            |c| {
                let lo = if c == 0 {
                    start
                } else {
                    first + (c - 1) * HUGE_PAGE_BYTES
                };
                let hi = (first + c * HUGE_PAGE_BYTES).min(end);
                let mut addr = lo;
                while addr < hi {
                    // SAFETY: `addr` lies in `[start, start + len)`, bytes this buffer owns and that
                    // nothing else can access while `self` is borrowed mutably; any byte value is
                    // valid for the (uninitialised) contents.
                    unsafe { (addr as *mut u8).write_volatile(0) };
                    addr = (addr / PAGE + 1) * PAGE;
                }
            },
        );
    }
}

/// Size of a transparent huge page on x86-64 and aarch64 with 4 KiB base pages.
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Blocks at least this large are backed by transparent huge pages where the kernel offers them
/// on request (the threshold NumPy uses too): first touch then faults once per 2 MiB instead of
/// once per 4 KiB, which makes filling and copying fresh memory several times faster.
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    if len < HUGE_PAGE_MIN_BYTES {
        return;
    }
    const PAGE: usize = 4096;
    // Whole pages, including the partial ones at both ends: a large block is its own mapping
    // (the allocator's header sits in its first page), so the advice covers the mapping
    // exactly and the kernel does not split it into several areas, which would make both this
    // call and the later unmap slower.
    let start = ptr as usize / PAGE * PAGE;
    let end = (ptr as usize + len).next_multiple_of(PAGE);
    // SAFETY: MADV_HUGEPAGE only changes how the kernel may back the pages, never their
    // contents, so the partial end pages (possibly shared with neighbouring allocations) are
    // unaffected. Failure is harmless (ignored).
    unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *mut u8, _len: usize) {}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        // SAFETY: `raw` was allocated by the global allocator with exactly `raw_layout`.
        unsafe { alloc::dealloc(self.raw.as_ptr(), self.raw_layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn populate_touches_one_byte_per_page_inside_the_buffer() {
        for (len, alignment) in [(5 << 20, 64), ((9 << 20) + 12345, 8), (1000, 64)] {
            let mut b = AlignedBuffer::new(len, alignment, Init::Uninit).unwrap();
            b.as_uninit_mut().fill(MaybeUninit::new(0xab));
            b.populate();
            let start = b.as_ptr() as usize;
            let bytes = b.as_uninit_mut();
            // SAFETY: every byte was written by the fill above (or zeroed by populate).
            let zeroed: Vec<usize> = (0..len)
                .filter(|&i| unsafe { bytes[i].assume_init() } == 0)
                .map(|i| start + i)
                .collect();
            if len < HUGE_PAGE_MIN_BYTES {
                assert!(zeroed.is_empty());
                continue;
            }
            let pages = (start + len).div_ceil(4096) - start / 4096;
            assert_eq!(zeroed.len(), pages);
            assert!(zeroed.iter().all(|&addr| addr == start || addr % 4096 == 0));
        }
    }

    #[test]
    fn aligned_and_zeroed() {
        for alignment in [1, 64, 4096, 1 << 16] {
            let mut b = AlignedBuffer::new(1000, alignment, Init::Zeroed).unwrap();
            assert_eq!(b.as_ptr() as usize % alignment, 0);
            // SAFETY: a zeroed buffer's bytes are initialised (to zero).
            let all_zero = b
                .as_uninit_mut()
                .iter()
                .all(|x| unsafe { x.assume_init() } == 0);
            assert!(all_zero);
        }
        assert!(AlignedBuffer::new(10, 3, Init::Uninit).is_err());
        assert!(AlignedBuffer::new(usize::MAX, 64, Init::Uninit).is_err());
        let b = AlignedBuffer::new(0, 64, Init::Uninit).unwrap();
        assert!(b.is_empty());
    }
}
