//! The prefetch helper compiled column functions call by symbol (`jit::column`): the one
//! `extern "C"` function of the run time besides the math functions of [`super::math`].

/// Prefetches, for `n` columns of a column function's table from `row` (`stride` slots each,
/// those with a K axis first, `nk` of them), each K slot's cache line at byte offset `kb`
/// from its address. Called by the column code once per cache line of levels for the next
/// group of columns: each column is a short stream along K (a few cache lines), too short for
/// the hardware prefetchers, so without it every line is a demand miss (measured in
/// `jit::column`'s `ColumnBuilder::columns`).
///
/// # Safety
/// `row` must point to `n * stride` readable table entries. The addresses prefetched need not
/// be valid: a prefetch never faults.
unsafe extern "C" fn gridbuf_prefetch_columns(
    row: *const usize,
    n: usize,
    stride: usize,
    nk: usize,
    kb: isize,
) {
    for c in 0..n {
        for s in 0..nk {
            // SAFETY: `c * stride + s < n * stride` entries, readable (the caller's contract).
            let a = unsafe { *row.add(c * stride + s) }.wrapping_add_signed(kb);
            prefetch(a);
        }
    }
}

#[inline(always)]
fn prefetch(a: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::_mm_prefetch;
        // SAFETY: a prefetch is a hint: it reads nothing the program sees and never faults,
        // whatever the address.
        unsafe { _mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(a as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = a;
}

/// The functions column code calls, by symbol name, for the JIT's symbol table.
pub(crate) fn symbols() -> Vec<(&'static str, *const u8)> {
    type Prefetch = unsafe extern "C" fn(*const usize, usize, usize, usize, isize);
    vec![(
        "gridbuf_prefetch_columns",
        gridbuf_prefetch_columns as Prefetch as *const u8,
    )]
}
