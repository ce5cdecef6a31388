//! Times of filling a fresh buffer with one value, as `gridbuf.ones` does (page faults and the
//! kernel's page zeroing included), and of filling a reused one (the fill loop alone).
//!
//! ```text
//! cargo run --release -p gridbuf --example fill_timing [-- NI NJ NK [REPEATS]]
//! ```
//! The shape defaults to 256 x 256 x 80 (f64) and REPEATS to 31. Prints the minimum, median,
//! 90th percentile and maximum, so that a bimodal distribution (one delayed thread doubling the
//! time) shows in the upper percentiles.

use gridbuf::allocation::fill::fill_pattern;
use gridbuf::{AlignedBuffer, Init};
use std::time::Instant;

fn times_ms(mut f: impl FnMut(), repeats: usize) -> Vec<f64> {
    f(); // warm up
    let mut times: Vec<f64> = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times
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
    let repeats = args.get(3).copied().unwrap_or(31);
    let bytes = ni * nj * nk * 8;
    let one = 1.0f64.to_ne_bytes();
    let fresh = || AlignedBuffer::new(bytes, 64, Init::Uninit).expect("allocation");
    let mut reused = fresh();
    let rows = [
        (
            "fill a fresh buffer (gb.ones)",
            times_ms(
                || {
                    let mut b = fresh();
                    fill_pattern(b.as_uninit_mut(), &one);
                    std::hint::black_box(&mut b);
                },
                repeats,
            ),
        ),
        (
            "fill a reused buffer",
            times_ms(|| fill_pattern(reused.as_uninit_mut(), &one), repeats),
        ),
    ];
    println!(
        "{ni} x {nj} x {nk} f64 ({:.1} MB), {repeats} runs",
        bytes as f64 / 1e6
    );
    println!("| case | min ms | median ms | p90 ms | max ms |\n|---|---|---|---|---|");
    for (name, t) in rows {
        let p90 = t[(t.len() * 9 / 10).min(t.len() - 1)];
        println!(
            "| {name} | {:.2} | {:.2} | {p90:.2} | {:.2} |",
            t[0],
            t[t.len() / 2],
            t[t.len() - 1]
        );
    }
}
