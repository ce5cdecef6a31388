//! Median run times of the native kernels for the three GT4Py CPU layouts.
//!
//! ```text
//! CARGO_TARGET_DIR=/tmp/target-h4 cargo run --release -p gridbuf --example kernel_timing [-- THREADS [REPEATS [KERNEL [LAYOUT]]]]
//! ```
//! THREADS defaults to 2, REPEATS to 21; KERNEL (a name or `all`) and LAYOUT
//! (`C`, `F` or `J`) restrict the table.
//! Fields are f64 in C order (K unit stride, `gt:cpu_kfirst`), Fortran order (I unit stride,
//! `gt:cpu_ifirst`) and J-first (`dace:cpu`); every input carries the halo its kernel reads.
//! The `memcpy` row times one thread copying the same bytes with `copy_from_slice` (the C
//! library's `memmove`, as `numpy.copyto` does), a yardstick for the `copy` row.

use gridbuf::kernels::{self, Kernel, Threads};
use ndarray::{Array3, ArrayView3, ArrayViewMut3, ShapeBuilder};
use std::time::Instant;

#[derive(Copy, Clone)]
enum Layout {
    K,
    I,
    J,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::K => "K-first/C",
            Layout::I => "I-first/F",
            Layout::J => "J-first",
        }
    }

    fn short(self) -> &'static str {
        match self {
            Layout::K => "C",
            Layout::I => "F",
            Layout::J => "J",
        }
    }

    fn alloc(self, [i, j, k]: [usize; 3]) -> Array3<f64> {
        let mut a = match self {
            Layout::K => Array3::zeros((i, j, k)),
            Layout::I => Array3::zeros((i, j, k).f()),
            Layout::J => Array3::zeros((k, i, j)).permuted_axes([1, 2, 0]),
        };
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for v in a.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *v = (x >> 11) as f64 / (1u64 << 53) as f64 + 0.5;
        }
        a
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median milliseconds of `f` over `reps` runs after two warm-up runs.
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    f();
    let t: Vec<f64> = (0..reps)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    median(t)
}

fn time_kernel(
    kernel: &dyn Kernel,
    layout: Layout,
    domain: [usize; 3],
    threads: Threads,
    reps: usize,
) -> f64 {
    let inputs: Vec<Array3<f64>> = kernel
        .fields()
        .iter()
        .filter(|f| !f.intent.is_output())
        .map(|f| {
            let mut a = layout.alloc(f.extent.widen(domain, f.name).unwrap());
            if kernel.name() == "tridiag" && f.name == "b" {
                a.mapv_inplace(|v| v + 4.0); // diagonally dominant
            }
            a
        })
        .collect();
    let mut out = layout.alloc(domain);
    time(reps, || {
        let views: Vec<ArrayView3<'_, f64>> = inputs.iter().map(|a| a.view()).collect();
        let mut outs: Vec<ArrayViewMut3<'_, f64>> = vec![out.view_mut()];
        kernel.run(&views, &mut outs, domain, threads).unwrap();
    })
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().map_or(2, |s| s.parse().expect("THREADS"));
    let reps: usize = args.next().map_or(21, |s| s.parse().expect("REPEATS"));
    let only = args.next().filter(|k| k != "all");
    let only_layout = args.next();
    let threads = Threads::new(threads).expect("THREADS");
    println!(
        "median of {reps} runs in ms, f64, {} thread(s), inner loops: {}",
        threads.get(),
        kernels::simd_level()
    );
    // Timings on a shared machine are only as good as its idle time: show the load.
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average before: {}", load.trim());
    }
    for domain in [[128, 128, 80], [256, 256, 80]] {
        println!();
        println!("domain {}x{}x{}", domain[0], domain[1], domain[2]);
        print!("{:<12}", "kernel");
        let layouts: Vec<Layout> = [Layout::K, Layout::I, Layout::J]
            .into_iter()
            .filter(|l| only_layout.as_deref().is_none_or(|o| o == l.short()))
            .collect();
        for &l in &layouts {
            print!("{:>12}", l.name());
        }
        println!();
        for kernel in kernels::all() {
            if only.as_deref().is_some_and(|o| o != kernel.name()) {
                continue;
            }
            print!("{:<12}", kernel.name());
            for &l in &layouts {
                print!("{:>12.3}", time_kernel(*kernel, l, domain, threads, reps));
            }
            println!();
        }
        let n: usize = domain.iter().product();
        let src = vec![1.0f64; n];
        let mut dst = vec![0.0f64; n];
        let memcpy = time(reps, || dst.copy_from_slice(&src));
        println!(
            "{:<12}{memcpy:>12.3}  (one-thread copy_from_slice of the same bytes)",
            "memcpy"
        );
    }
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average after: {}", load.trim());
    }
}
