//! Median times of the layout-changing copy behind `from_array` (C order to Fortran order,
//! f64), into a reused destination (the copy loop alone) and into a fresh one per run (page
//! faults and the kernel's page zeroing included, as `from_array` pays them), next to a plain
//! `memcpy` of the same bytes as the yardstick.
//!
//! ```text
//! cargo run --release -p gridbuf --example copy_timing [-- NI NJ NK [REPEATS]]
//! ```
//! The shape defaults to 256 x 256 x 80 and REPEATS to 15; the copy runs on gridbuf's pool
//! (`GRIDBUF_NUM_THREADS` threads, default all cores).

use gridbuf::arrays::copy::copy_strided;
use gridbuf::{AlignedBuffer, Init};
use rayon::prelude::*;
use std::time::Instant;

fn median_ms(mut f: impl FnMut(), repeats: usize) -> f64 {
    f(); // warm up
    let mut times: Vec<f64> = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("arguments are NI NJ NK [REPEATS]"))
        .collect();
    let (ni, nj, nk) = match args[..] {
        [ni, nj, nk, ..] => (ni, nj, nk),
        _ => (256, 256, 80),
    };
    let repeats = args.get(3).copied().unwrap_or(15);
    let shape = [ni, nj, nk];
    let bytes = ni * nj * nk * 8;
    let src: Vec<f64> = (0..ni * nj * nk).map(|v| v as f64).collect();
    let c_strides = [(nj * nk * 8) as isize, (nk * 8) as isize, 8];
    let f_strides = [8, (ni * 8) as isize, (ni * nj * 8) as isize];
    let transpose = |dst: *mut u8| {
        // SAFETY: `src` holds the C-ordered array and `dst` points to `bytes` writable bytes
        // laid out in Fortran order for the same shape; the two do not overlap.
        unsafe { copy_strided(8, &shape, src.as_ptr().cast(), &c_strides, dst, &f_strides) }
    };
    let fresh = || AlignedBuffer::new(bytes, 64, Init::Uninit).expect("allocation");
    let mut reused = fresh();
    let reused_ptr = reused.as_mut_ptr();
    let mut reused_bytes = vec![0u8; bytes];
    let src_bytes: &[u8] =
        // SAFETY: the f64 data viewed as bytes, for the memcpy yardstick only.
        unsafe { std::slice::from_raw_parts(src.as_ptr().cast(), bytes) };

    let rows = [
        (
            "C -> F copy, reused destination",
            median_ms(|| transpose(reused_ptr), repeats),
        ),
        (
            "C -> F copy, fresh destination",
            median_ms(|| transpose(fresh().as_mut_ptr()), repeats),
        ),
        (
            "C -> F copy, fresh destination, populated first",
            median_ms(
                || {
                    let mut b = fresh();
                    b.populate();
                    transpose(b.as_mut_ptr());
                },
                repeats,
            ),
        ),
        (
            "populate a fresh destination alone",
            median_ms(|| fresh().populate(), repeats),
        ),
        (
            "memcpy, reused destination",
            median_ms(|| reused_bytes.copy_from_slice(src_bytes), repeats),
        ),
        (
            "memcpy on every thread, reused destination",
            median_ms(
                || {
                    let chunk = bytes.div_ceil(rayon::current_num_threads()).max(1);
                    reused_bytes
                        .par_chunks_mut(chunk)
                        .zip(src_bytes.par_chunks(chunk))
                        .for_each(|(d, s)| d.copy_from_slice(s));
                },
                repeats,
            ),
        ),
        (
            "memcpy, fresh destination, populated first",
            median_ms(
                || {
                    let mut b = fresh();
                    b.populate();
                    // SAFETY: as below.
                    unsafe {
                        std::ptr::copy_nonoverlapping(src_bytes.as_ptr(), b.as_mut_ptr(), bytes)
                    }
                    std::hint::black_box(&mut b);
                },
                repeats,
            ),
        ),
        (
            "memcpy, fresh destination",
            median_ms(
                || {
                    let mut b = fresh();
                    // SAFETY: the fresh buffer has `bytes` writable bytes; distinct from `src`.
                    unsafe {
                        std::ptr::copy_nonoverlapping(src_bytes.as_ptr(), b.as_mut_ptr(), bytes)
                    }
                    std::hint::black_box(&mut b);
                },
                repeats,
            ),
        ),
    ];
    println!(
        "{ni} x {nj} x {nk} f64 ({:.1} MB), {} threads, median of {repeats}",
        bytes as f64 / 1e6,
        gridbuf::runtime::threads::configured().get()
    );
    println!("| case | ms | GB/s (read + write) |\n|---|---|---|");
    for (name, ms) in rows {
        println!(
            "| {name} | {ms:.2} | {:.1} |",
            2.0 * bytes as f64 / ms / 1e6
        );
    }
}
