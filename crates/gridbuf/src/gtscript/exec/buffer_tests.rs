//! Block buffers shared by temporaries whose lives do not overlap, against direct loops on
//! every tier.

use crate::gtscript::exec::tests::{box_points, element, field, layout_strides, value};
use crate::gtscript::run;
use crate::kernels::exec::Threads;

/// Temporaries whose lives do not overlap share block buffers
/// (`plan::schedule::shared_buffers`): a chain read at offsets with a region write, and a
/// `while` loop that reads a temporary before its body writes another. Every tier, K-fastest
/// and I-fastest, one and three threads, against direct loops.
#[test]
fn shared_block_buffers_match_direct_loops() {
    use crate::gtscript::plan::schedule_tests::{chain, loop_lives};
    use crate::gtscript::Jit;
    let n = [9, 6, 5];
    let len: usize = n.iter().product();
    // The chain also without its sweep schedules, so that blocks run it.
    let mut blocked = chain();
    blocked.sweeps = [None, None, None];
    let plans = [(0, chain()), (0, blocked), (1, loop_lives())];
    for (p, plan) in &plans {
        let (p, plan) = (*p, plan);
        let jit = Jit::compile(plan).unwrap().expect("a Cranelift backend");
        let tier2 = crate::gtscript::cgen::tier_two_of(plan).unwrap();
        // The input's halo: I from -1 to +2 and J to +1 for the chain, I to +1 for the loop.
        let (ishape, ilo) = if p == 0 {
            ([n[0] + 3, n[1] + 1, n[2]], [1, 0, 0])
        } else {
            ([n[0] + 1, n[1], n[2]], [0, 0, 0])
        };
        for k_fastest in [true, false] {
            let (si, so) = (
                layout_strides(ishape, k_fastest),
                layout_strides(n, k_fastest),
            );
            let inp_at =
                |i: i64, j: usize, k: usize| element(si, (i + ilo[0] as i64) as usize, j, k);
            let out_at = |i: usize, j: usize, k: usize| element(so, i, j, k);
            let mut inp = vec![0.0; ishape.iter().product()];
            for (i, j, k) in box_points(ishape) {
                inp[element(si, i, j, k)] = value(i, j, k);
            }
            let mut out0 = vec![0.0; len];
            for (i, j, k) in box_points(n) {
                out0[out_at(i, j, k)] = 4.0 + value(k, i, j);
            }
            for threads in [Threads::ONE, Threads::new(3).unwrap()] {
                for code in [None, Some(&jit), tier2.as_ref()] {
                    let (mut out, mut acc) = (out0.clone(), vec![0.5; len]);
                    let mut fin = field(&mut inp, ishape, ilo, false);
                    let mut fout = field(&mut out, n, [0; 3], true);
                    let mut facc = field(&mut acc, n, [0; 3], true);
                    (fin.strides, fout.strides, facc.strides) = (si, so, so);
                    let all = [fin, fout, facc];
                    let fields = &all[..2 + p];
                    // SAFETY: the arrays are alive, aligned and disjoint; shapes and strides
                    // match their lengths, and the input's view covers the reads around the
                    // domain.
                    unsafe { run::<f64>(plan, code, fields, &[], n, threads).unwrap() };
                    for (i, j, k) in box_points(n) {
                        let x = out_at(i, j, k);
                        let what = format!(
                            "plan {p} k_fastest {k_fastest} code {} threads {threads:?} ({i}, {j}, {k})",
                            code.is_some()
                        );
                        let q = |di: i64, dj: usize| inp[inp_at(i as i64 + di, j + dj, k)];
                        if p == 0 {
                            // c = 3 b[0, 1, 0] (+ 100 in row 1), b = a[1] + a[-1], a = 2 inp;
                            // out = d[-1] c with d = c[1] + 1.
                            let b = q(1, 1) * 2.0 + q(-1, 1) * 2.0;
                            let mut c = b * 3.0;
                            if j == 1 {
                                c += 100.0;
                            }
                            let want = (c + 1.0) * c;
                            assert_eq!(out[x].to_bits(), want.to_bits(), "out {what}");
                        } else {
                            let (mut o, mut a) = (out0[x], 0.5);
                            let next = q(1, 0);
                            while o > 1.0 {
                                a += next * 2.0;
                                o -= 0.25 + next * next;
                            }
                            let want = next * 3.0 + o;
                            assert_eq!(out[x].to_bits(), want.to_bits(), "out {what}");
                            assert_eq!(acc[x].to_bits(), a.to_bits(), "acc {what}");
                        }
                    }
                }
            }
        }
    }
}
