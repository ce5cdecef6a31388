//! Median time of the `copy` kernel across a layout change (C order in, Fortran order out, f64).
//!
//! ```text
//! cargo run --release -p gridbuf --example kernel_copy_timing [-- THREADS [REPEATS]]
//! ```
//! THREADS defaults to 2 and REPEATS to 21; the shape is 256 x 256 x 80.

use gridbuf::kernels::{self, Threads};
use ndarray::{Array3, ShapeBuilder};
use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("arguments are THREADS [REPEATS]"))
        .collect();
    let threads = Threads::new(args.first().copied().unwrap_or(2)).expect("THREADS");
    let repeats = args.get(1).copied().unwrap_or(21);
    let shape = (256, 256, 80);
    let inp = Array3::from_shape_fn(shape, |(i, j, k)| (i * 100_000 + j * 100 + k) as f64);
    let mut out = Array3::<f64>::zeros(shape.f());
    let mut run = || kernels::copy(inp.view(), out.view_mut(), threads).expect("copy");
    run();
    let mut times: Vec<f64> = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            run();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    assert_eq!(out[[3, 4, 5]], 300_405.0);
    println!(
        "| copy kernel, C -> F, {} threads | min {:.2} ms | median {:.2} ms |",
        threads.get(),
        times[0],
        times[times.len() / 2]
    );
}
