//! How the time of each pass from the IR text to machine code grows with the number of
//! statements, for the shapes of issue 36 (see `benchmarks/bench_definition_time.py`, which
//! times the whole definition from Python). Ignored by default (a measurement, not a check):
//! `cargo test -p gridbuf --release scale -- --ignored --nocapture`.

use super::jit::Jit;
use super::passes::{inline, types};
use super::{plan, Program};
use std::time::Instant;

/// The IR text the frontend writes for `shape` with `n` statements.
fn ir(shape: &str, n: usize) -> String {
    let mut t = String::from("stencil s float64\nfield inp float64 IJK\nfield out float64 IJK\n");
    t += "scalar a float64\nscalar b float64\n";
    for k in 0..n - 1 {
        t += &format!("temp t{k} auto IJK\n");
    }
    t += "comp PARALLEL\ninterval S 0 E 0\n";
    let tk = |k: usize| format!("t {k} 0 0 0");
    match shape {
        "chain" => {
            t += "stmt 1 t 0 f 0 0 0 0 0\n";
            for k in 1..n - 1 {
                t += &format!(
                    "stmt 1 t {k} add mul {} lit float64 1.0001 f 0 0 0 0 0\n",
                    tk(k - 1)
                );
            }
        }
        "square" => {
            t += "stmt 1 t 0 f 0 0 0 0 0\n";
            for k in 1..n - 1 {
                t += &format!("stmt 1 t {k} mul {} {}\n", tk(k - 1), tk(k - 1));
            }
        }
        "fib" => {
            t += "stmt 1 t 0 f 0 0 0 0 0\nstmt 1 t 1 mul f 0 0 0 0 0 s 1\n";
            for k in 2..n - 1 {
                t += &format!(
                    "stmt 1 t {k} add mul s 0 {} mul s 1 {}\n",
                    tk(k - 1),
                    tk(k - 2)
                );
            }
        }
        "fan" => {
            for k in 0..n - 1 {
                t += &format!("stmt 1 t {k} mul f 0 0 1 0 0 lit float64 {k}.0\n");
            }
            fn sum(lo: usize, hi: usize) -> String {
                if hi - lo == 1 {
                    format!("t {lo} 0 0 0")
                } else {
                    let mid = (lo + hi) / 2;
                    format!("add {} {}", sum(lo, mid), sum(mid, hi))
                }
            }
            t += &format!("stmt 1 f 1 0 {}\n", sum(0, n - 1));
            return t;
        }
        _ => unreachable!(),
    }
    t += &format!("stmt 1 f 1 0 {}\n", tk(n - 2));
    t
}

#[test]
#[ignore]
fn definition_passes_scale() {
    println!("| shape | statements | parse | types | inline | plan | jit | statements left |");
    println!("|---|---|---|---|---|---|---|---|");
    for shape in ["chain", "square", "fib", "fan"] {
        for n in [1000, 3000, 10000] {
            let text = ir(shape, n);
            let t0 = Instant::now();
            let mut p = Program::parse(&text).expect("parse");
            let t1 = Instant::now();
            types::check(&mut p).expect("types");
            let t2 = Instant::now();
            inline::inline_temps(&mut p);
            let t3 = Instant::now();
            let left: usize = p.sections.iter().map(|s| s.stmts.len()).sum();
            let plan = plan::plan(p).expect("plan");
            let t4 = Instant::now();
            let jit = Jit::compile(&plan).expect("jit");
            let t5 = Instant::now();
            drop(jit);
            let ms = |a: Instant, b: Instant| format!("{:.1} ms", (b - a).as_secs_f64() * 1e3);
            println!(
                "| {shape} | {n} | {} | {} | {} | {} | {} | {left} |",
                ms(t0, t1),
                ms(t1, t2),
                ms(t2, t3),
                ms(t3, t4),
                ms(t4, t5)
            );
        }
    }
}
