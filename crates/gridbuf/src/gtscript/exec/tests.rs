//! Unit tests of the evaluator: whole stencils run against direct loops, K bounds, and racy
//! reads the planner rejects.

use crate::gtscript::compile;
use crate::gtscript::{run, FieldMem};
use crate::kernels::exec::Threads;

/// A C-ordered f64 array of `shape` (I, J, K) and its `FieldMem` with lower extent `lo`.
pub(super) fn field(
    data: &mut [f64],
    shape: [usize; 3],
    lo: [usize; 3],
    writable: bool,
) -> FieldMem {
    FieldMem {
        addr: data.as_mut_ptr().expose_provenance(),
        shape,
        strides: [(shape[1] * shape[2]) as isize, shape[2] as isize, 1],
        origin: lo.map(|v| v as i64),
        axes: [true; 3],
        writable,
        ty: crate::gtscript::ir::Ty::F64,
    }
}

pub(super) fn value(i: usize, j: usize, k: usize) -> f64 {
    ((i * 7 + j * 13 + k * 3) % 17) as f64 * 0.25 - 1.0
}

#[test]
fn laplacian_of_a_temporary_matches_direct_loops() {
    // tmp = lap(inp); out = lap(tmp): inp needs extent 2, tmp is computed on a 1-wide ring.
    let lap = |q: &str, base: &str| {
        format!("add mul c -4.0 {q} 0 0 0 add {q} 1 0 0 add {q} -1 0 0 add {q} 0 1 0 {q} 0 -1 0")
            .replace(&format!("{q} 0 0 0"), &format!("{base} 0 0 0"))
            .replace(q, base)
    };
    let text = format!(
        "stencil l2 float64\nfield inp IJK\nfield out IJK\ntemp tmp\ncomp PARALLEL\ninterval S 0 E 0\nstmt 1 t 0 {}\nstmt 2 f 1 0 {}\n",
        lap("X", "f 0 0"),
        lap("X", "t 0")
    );
    let plan = compile(&text).unwrap();
    assert_eq!(plan.field_extent[0], [(2, 2), (2, 2), (0, 0)]);
    let (n, h) = ([37, 21, 3], 2);
    let ishape = [n[0] + 2 * h, n[1] + 2 * h, n[2]];
    let mut inp: Vec<f64> = (0..ishape.iter().product())
        .map(|x| {
            value(
                x / (ishape[1] * ishape[2]),
                (x / ishape[2]) % ishape[1],
                x % ishape[2],
            )
        })
        .collect();
    let mut out = vec![0.0; n.iter().product()];
    let fields = [
        field(&mut inp, ishape, [h, h, 0], false),
        field(&mut out, n, [0, 0, 0], true),
    ];
    for threads in [Threads::ONE, Threads::new(3).unwrap()] {
        // SAFETY: both arrays are alive, aligned and disjoint; shapes match their lengths.
        unsafe { run::<f64>(&plan, None, &fields, &[], n, threads).unwrap() };
        let at = |i: i64, j: i64, k: usize| {
            let (i, j) = ((i + h as i64) as usize, (j + h as i64) as usize);
            inp[(i * ishape[1] + j) * ishape[2] + k]
        };
        let l1 = |i: i64, j: i64, k: usize| {
            -4.0 * at(i, j, k)
                + at(i + 1, j, k)
                + at(i - 1, j, k)
                + at(i, j + 1, k)
                + at(i, j - 1, k)
        };
        for i in 0..n[0] {
            for j in 0..n[1] {
                for k in 0..n[2] {
                    let (x, y) = (i as i64, j as i64);
                    let want = -4.0 * l1(x, y, k)
                        + l1(x + 1, y, k)
                        + l1(x - 1, y, k)
                        + l1(x, y + 1, k)
                        + l1(x, y - 1, k);
                    assert_eq!(out[(i * n[1] + j) * n[2] + k], want);
                }
            }
        }
    }
}

#[test]
fn forward_recurrence_and_k_bounds() {
    let plan = compile(
        "stencil s float64\nfield a IJK\nfield out IJK\ncomp FORWARD\ninterval S 0 S 1\nstmt 1 f 1 0 f 0 0 0 0 0\ninterval S 1 E 0\nstmt 2 f 1 0 add f 1 0 0 0 -1 f 0 0 0 0 0\n",
    )
    .unwrap();
    let n = [3, 2, 5];
    let mut a: Vec<f64> = (0..30).map(|x| x as f64).collect();
    let mut out = vec![0.0; 30];
    let fields = [
        field(&mut a, n, [0; 3], false),
        field(&mut out, n, [0; 3], true),
    ];
    // SAFETY: as above.
    unsafe { run::<f64>(&plan, None, &fields, &[], n, Threads::ONE).unwrap() };
    for c in 0..6 {
        let mut acc = 0.0;
        for k in 0..5 {
            acc += a[c * 5 + k];
            assert_eq!(out[c * 5 + k], acc);
        }
    }
    // Reading a[0, 0, 1] on the top level needs one level more than the field has.
    let plan = compile(
        "stencil s float64\nfield a IJK\nfield out IJK\ncomp PARALLEL\ninterval S 0 E 0\nstmt 1 f 1 0 f 0 0 0 0 1\n",
    )
    .unwrap();
    // GT4Py's K boundary: levels 1 to the domain's top plus one (the view may start at 1).
    assert_eq!(plan.field_extent[0][2], (-1, 1));
    let before = out.clone();
    let fields = [
        field(&mut a, n, [0; 3], false),
        field(&mut out, n, [0; 3], true),
    ];
    // SAFETY: as above.
    let err = unsafe { run::<f64>(&plan, None, &fields, &[], n, Threads::ONE) }.unwrap_err();
    assert!(err.to_string().contains("\"a\""), "{err}");
    assert_eq!(out, before);
}

#[test]
fn plan_rejects_racy_reads_with_the_line() {
    let head = "stencil s float64\nfield a IJK\nfield out IJK\ncomp PARALLEL\ninterval S 0 E 0\n";
    for (body, word) in [
        (
            "stmt 7 f 1 0 f 0 0 0 0 0\nstmt 8 f 1 0 f 1 0 1 0 0\n",
            "horizontal offset",
        ),
        (
            "stmt 7 f 1 0 f 0 0 0 0 0\nstmt 8 f 1 0 f 1 0 0 0 1\n",
            "PARALLEL",
        ),
        ("stmt 7 t 0 t 0 1 0 0\n", "own assignment"),
    ] {
        let text = format!("{head}{}", body).replace("field out IJK\n", "field out IJK\ntemp t\n");
        let err = compile(&text).unwrap_err().to_string();
        assert!(
            err.contains(word) && err.contains("line 7") || err.contains("line 8"),
            "{err}"
        );
    }
}

/// A 2-D temporary carries one value per column across levels: a column sum.
#[test]
fn two_d_temporary_sums_columns() {
    let plan = compile(
        "stencil s\nfield x float64 IJK\nfield out float64 IJK\ntemp t float64 IJ\n\
         comp FORWARD\ninterval S 0 S 1\nstmt 1 t 0 lit float64 0\n\
         comp FORWARD\ninterval S 0 E 0\nstmt 2 t 0 add t 0 0 0 0 f 0 0 0 0 0\nstmt 3 f 1 0 t 0 0 0 0\n",
    )
    .unwrap();
    for n in [[1, 1, 4], [3, 2, 5]] {
        let len = n[0] * n[1] * n[2];
        let mut x = vec![1.0; len];
        let mut out = vec![0.0; len];
        let fields = [
            field(&mut x, n, [0; 3], false),
            field(&mut out, n, [0; 3], true),
        ];
        // SAFETY: two arrays of `n` points, alive for the call.
        unsafe { run::<f64>(&plan, None, &fields, &[], n, Threads::ONE).unwrap() };
        for (p, v) in out.iter().enumerate() {
            assert_eq!(*v, (p % n[2] + 1) as f64, "{n:?} {out:?}");
        }
    }
}

/// A C-ordered int64 array's `FieldMem` (no extent).
pub(super) fn int_field(data: &mut [i64], shape: [usize; 3]) -> FieldMem {
    FieldMem {
        addr: data.as_mut_ptr().expose_provenance(),
        shape,
        strides: [(shape[1] * shape[2]) as isize, shape[2] as isize, 1],
        origin: [0; 3],
        axes: [true; 3],
        writable: false,
        ty: crate::gtscript::ir::Ty::I64,
    }
}

/// Writes at a K offset (FORWARD, `out[0, 0, 1] = a`), a variable K offset and an absolute K
/// index (`out2 = a[0, 0, idx] + a.at(K=0)`), against direct loops, on the interpreter and with
/// the compiled statements (the reads at run-time levels fall back to the interpreter); then an
/// index past the last level is an error naming the field and the level.
#[test]
fn k_offset_writes_and_run_time_levels_match_direct_loops() {
    use crate::gtscript::{Jit, Lane};
    let text =
        "stencil v float64\nfield a IJK\nfield idx int64 IJK\nfield out IJK\nfield out2 IJK\n\
                comp FORWARD\ninterval S 0 E -1\nstmtk 1 1 f 2 0 f 0 0 0 0 0\n\
                comp PARALLEL\ninterval S 0 E 0\n\
                stmt 2 f 3 0 add kvar f 0 0 f 1 0 0 0 0 kabs f 0 0 lit int64 0\n";
    let plan = compile(text).unwrap();
    assert_eq!(plan.sections[0].stmts[0].k_offset, 1);
    assert_eq!(plan.sections[1].var_reads, vec![0]);
    assert_eq!(plan.lanes, crate::gtscript::plan::Lanes::Wide);
    let n = [5, 4, 6];
    let len: usize = n.iter().product();
    let at = |i: usize, j: usize, k: usize| (i * n[1] + j) * n[2] + k;
    let mut a: Vec<f64> = (0..len)
        .map(|x| value(x / (n[1] * n[2]), (x / n[2]) % n[1], x % n[2]))
        .collect();
    let mut idx: Vec<i64> = (0..len)
        .map(|x| {
            let k = (x % n[2]) as i64;
            // Every level of the column, the first and the last among them.
            ((x as i64 * 5) % n[2] as i64) - k
        })
        .collect();
    for jit in [
        None,
        Jit::compile(&plan).unwrap(),
        crate::gtscript::cgen::tier_two_of(&plan).unwrap(),
    ] {
        let mut out = vec![-9.0; len];
        let mut out2 = vec![0.0; len];
        let fields = [
            field(&mut a, n, [0; 3], false),
            int_field(&mut idx, n),
            field(&mut out, n, [0; 3], true),
            field(&mut out2, n, [0; 3], true),
        ];
        // SAFETY: the arrays are alive, aligned and disjoint; shapes match their lengths.
        unsafe { run::<Lane>(&plan, jit.as_ref(), &fields, &[], n, Threads::ONE).unwrap() };
        for i in 0..n[0] {
            for j in 0..n[1] {
                for k in 0..n[2] {
                    let want = if k == 0 { -9.0 } else { a[at(i, j, k - 1)] };
                    assert_eq!(out[at(i, j, k)], want, "out at {i} {j} {k}");
                    let l = (k as i64 + idx[at(i, j, k)]) as usize;
                    assert_eq!(out2[at(i, j, k)], a[at(i, j, l)] + a[at(i, j, 0)]);
                }
            }
        }
    }
    idx[at(3, 2, 4)] = 2;
    let mut out = vec![0.0; len];
    let mut out2 = vec![0.0; len];
    let fields = [
        field(&mut a, n, [0; 3], false),
        int_field(&mut idx, n),
        field(&mut out, n, [0; 3], true),
        field(&mut out2, n, [0; 3], true),
    ];
    // SAFETY: as above.
    let err = unsafe { run::<Lane>(&plan, None, &fields, &[], n, Threads::new(3).unwrap()) }
        .unwrap_err()
        .to_string();
    assert!(err.contains("level 6") && err.contains("\"a\""), "{err}");
}

/// Writes at a run-time K level (FORWARD, `out[0, 0, idx] = a`, then `out = out + 1` at the
/// point's own level, which must see the write), against direct loops, on the interpreter and
/// with compiled statements, C and Fortran order (block buffers loaded again after the write,
/// or memory read in place), one and three threads; then a level past the array is an error
/// naming the field and the level, and nothing around the array is written.
#[test]
fn run_time_k_writes_match_direct_loops() {
    use crate::gtscript::{Jit, Lane};
    let text = "stencil v float64\nfield a IJK\nfield idx int64 IJK\nfield out IJK\n\
                comp FORWARD\ninterval S 1 E 0\n\
                stmtkv 1 f 2 0 f 1 0 0 0 0 f 0 0 0 0 0\n\
                stmt 2 f 2 0 add f 2 0 0 0 0 lit float64 1.0\n";
    let plan = compile(text).unwrap();
    assert!(plan.sections[0].stmts[0].scatter());
    assert_eq!(plan.sections[0].scattered, vec![2]);
    assert!(plan.sections[0].var_reads.contains(&2));
    let n = [5, 4, 6];
    let len: usize = n.iter().product();
    let c_at = |i: usize, j: usize, k: usize| (i * n[1] + j) * n[2] + k;
    let f_at = |i: usize, j: usize, k: usize| (k * n[1] + j) * n[0] + i;
    let idx_of = |i: usize, j: usize, k: usize| -> i64 {
        // Every level of the column, below and above the point.
        ((i * 3 + j * 7 + k * 5) % n[2]) as i64 - k as i64
    };
    let want = {
        let mut out = vec![0.0; len];
        for i in 0..n[0] {
            for j in 0..n[1] {
                for k in 1..n[2] {
                    let l = (k as i64 + idx_of(i, j, k)) as usize;
                    out[c_at(i, j, l)] = value(i, j, k);
                    out[c_at(i, j, k)] += 1.0;
                }
            }
        }
        out
    };
    for fortran in [false, true] {
        let at = |i, j, k| {
            if fortran {
                f_at(i, j, k)
            } else {
                c_at(i, j, k)
            }
        };
        let strides: [isize; 3] = if fortran {
            [1, n[0] as isize, (n[0] * n[1]) as isize]
        } else {
            [(n[1] * n[2]) as isize, n[2] as isize, 1]
        };
        let mut a = vec![0.0; len];
        let mut idx = vec![0i64; len];
        for i in 0..n[0] {
            for j in 0..n[1] {
                for k in 0..n[2] {
                    a[at(i, j, k)] = value(i, j, k);
                    idx[at(i, j, k)] = idx_of(i, j, k);
                }
            }
        }
        for jit in [
            None,
            Jit::compile(&plan).unwrap(),
            crate::gtscript::cgen::tier_two_of(&plan).unwrap(),
        ] {
            for threads in [1, 3] {
                let mut out = vec![0.0; len];
                let mut fields = [
                    field(&mut a, n, [0; 3], false),
                    int_field(&mut idx, n),
                    field(&mut out, n, [0; 3], true),
                ];
                for f in &mut fields {
                    f.strides = strides;
                }
                // SAFETY: the arrays are alive, aligned and disjoint; shapes and strides match
                // their lengths.
                unsafe {
                    run::<Lane>(
                        &plan,
                        jit.as_ref(),
                        &fields,
                        &[],
                        n,
                        Threads::new(threads).unwrap(),
                    )
                    .unwrap()
                };
                for i in 0..n[0] {
                    for j in 0..n[1] {
                        for k in 0..n[2] {
                            assert_eq!(out[at(i, j, k)], want[c_at(i, j, k)], "{i} {j} {k}");
                        }
                    }
                }
            }
        }
    }
    // A level past the array: the error names the field and the level; the canaries around
    // the array keep their values.
    let mut a: Vec<f64> = (0..len).map(|x| x as f64).collect();
    let mut idx = vec![0i64; len];
    idx[c_at(2, 1, 3)] = n[2] as i64 - 3;
    let pad = 64;
    let mut out = vec![7.0; len + 2 * pad];
    let fields = [
        field(&mut a, n, [0; 3], false),
        int_field(&mut idx, n),
        field(&mut out[pad..pad + len], n, [0; 3], true),
    ];
    // SAFETY: as above; the output's view is the middle of its buffer.
    let err = unsafe { run::<Lane>(&plan, None, &fields, &[], n, Threads::ONE) }
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"out\"") && err.contains(&format!("level {}", n[2])),
        "{err}"
    );
    assert!(out[..pad]
        .iter()
        .chain(&out[pad + len..])
        .all(|&v| v == 7.0));
}

/// GT4Py's refusals of writes at run-time levels: in PARALLEL, at a float index.
#[test]
fn run_time_k_writes_are_refused_as_gt4py() {
    let head = "stencil v float64\nfield a IJK\nfield i int32 IJK\nfield out IJK\n";
    for (body, why) in [
        (
            "comp PARALLEL\ninterval S 0 E 0\nstmtkv 3 f 2 0 f 1 0 0 0 0 f 0 0 0 0 0\n",
            "PARALLEL",
        ),
        (
            "comp FORWARD\ninterval S 0 E 0\nstmtkv 4 f 2 0 f 0 0 0 0 0 f 0 0 0 0 0\n",
            "float64",
        ),
    ] {
        let err = compile(&format!("{head}{body}")).unwrap_err().to_string();
        assert!(err.contains(why) && err.contains("line"), "{err}");
    }
}

/// GT4Py's refusals: a write at a K offset in a PARALLEL computation, a float index, a run-time
/// level read of a field written in the same PARALLEL computation.
#[test]
fn k_offset_writes_and_run_time_levels_are_refused_as_gt4py() {
    let head = "stencil v float64\nfield a IJK\nfield x IJK\nfield out IJK\n";
    let refused = [
        ("comp PARALLEL\ninterval S 0 E -1\nstmtk 3 1 f 2 0 f 0 0 0 0 0\n", "PARALLEL"),
        ("comp FORWARD\ninterval S 0 E 0\nstmt 4 f 2 0 kvar f 0 0 f 1 0 0 0 0\n", "float64"),
        (
            "comp PARALLEL\ninterval S 0 E 0\nstmt 5 f 2 0 f 0 0 0 0 0\nstmt 6 f 2 0 kabs f 2 0 lit int64 0\n",
            "PARALLEL",
        ),
    ];
    for (body, why) in refused {
        let err = compile(&format!("{head}{body}")).unwrap_err().to_string();
        assert!(err.contains(why) && err.contains("line"), "{err}");
    }
}
/// A corner region (I start, J end) reading one point beyond the domain along J, then a
/// `while` loop on the output: against direct loops, on many tiles and threads. The region
/// reads `a` beyond the domain only along J's upper side (GT4Py's extent).
#[test]
fn corner_region_and_while_loop_match_direct_loops() {
    let text = "stencil rl float64\nfield a IJK\nfield out IJK\ntemp m bool\ncomp PARALLEL\ninterval S 0 E 0\n\
        stmt 1 f 1 0 f 0 0 0 0 0\n\
        region S 0 S 1 E -1 E 0\n\
        stmt 2 f 1 0 add f 0 0 1 0 0 f 0 0 0 1 0\n\
        stmt 3 t 0 lt f 1 0 0 0 0 c 10.0\n\
        while\n\
        stmt 4 f 1 0 sel t 0 0 0 0 add f 1 0 0 0 0 c 3.0 f 1 0 0 0 0\n\
        endwhile\n";
    let plan = compile(text).unwrap();
    assert_eq!(plan.field_extent[0], [(0, 0), (0, 1), (0, 0)]);
    let n = [37, 21, 3];
    let ashape = [n[0], n[1] + 1, n[2]];
    let mut a: Vec<f64> = (0..ashape.iter().product())
        .map(|x| {
            4.0 * value(
                x / (ashape[1] * ashape[2]),
                (x / ashape[2]) % ashape[1],
                x % ashape[2],
            )
        })
        .collect();
    let mut out = vec![0.0; n.iter().product()];
    let fields = [
        field(&mut a, ashape, [0, 0, 0], false),
        field(&mut out, n, [0, 0, 0], true),
    ];
    for threads in [Threads::ONE, Threads::new(3).unwrap()] {
        // SAFETY: both arrays are alive, aligned and disjoint; shapes match their lengths.
        unsafe { run::<f64>(&plan, None, &fields, &[], n, threads).unwrap() };
        let at = |i: usize, j: usize, k: usize| a[(i * ashape[1] + j) * ashape[2] + k];
        for i in 0..n[0] {
            for j in 0..n[1] {
                for k in 0..n[2] {
                    let mut want = at(i, j, k);
                    if i == 0 && j == n[1] - 1 {
                        want = at(i + 1, j, k) + at(i, j + 1, k);
                    }
                    while want < 10.0 {
                        want += 3.0;
                    }
                    assert_eq!(out[(i * n[1] + j) * n[2] + k], want, "{i} {j} {k}");
                }
            }
        }
    }
}

/// Nested loops: the inner body's last statement goes back to the inner condition; the inner
/// condition's exit, at the end of the outer body, to the outer condition.
#[test]
fn loop_flow_nests() {
    let text = "stencil n float64\nfield a IJK\ntemp m1 bool\ntemp m2 bool\ncomp PARALLEL\ninterval S 0 E 0\n\
        stmt 1 t 0 lt f 0 0 0 0 0 c 3.0\nwhile\n\
        stmt 2 t 1 lt f 0 0 0 0 0 c 2.0\nwhile\n\
        stmt 3 f 0 0 add f 0 0 0 0 0 c 1.0\nendwhile\nendwhile\n\
        stmt 4 f 0 0 f 0 0 0 0 0\n";
    let plan = compile(text).unwrap();
    let flow: Vec<(usize, Option<usize>)> = plan.sections[0]
        .flow
        .iter()
        .map(|f| (f.next, f.exit))
        .collect();
    assert_eq!(flow, vec![(1, Some(3)), (2, Some(0)), (1, None), (4, None)]);
}

/// `while` loops whose statements read what the loop writes only at the point itself run point
/// by point (`jit::point`): nested loops with per-point trip counts, an integer counter and a
/// read at an absolute K level, in PARALLEL and FORWARD sections, give what the interpreter's
/// passes over whole blocks and direct loops give. A loop that reads what it writes at a K
/// offset keeps the passes.
#[test]
fn point_loops_match_blocks_and_direct_loops() {
    use crate::gtscript::{Jit, Lane};
    for order in ["PARALLEL", "FORWARD"] {
        let text = format!(
            "stencil pl float64\nfield a IJK\nfield out IJK\nfield cnt int64 IJK\ntemp m1 bool\ntemp m2 bool\n\
             comp {order}\ninterval S 0 E 0\n\
             stmt 1 f 1 0 f 0 0 0 0 0\n\
             stmt 2 f 2 0 lit int64 0\n\
             stmt 3 t 0 lt f 1 0 0 0 0 c 3.0\n\
             while\n\
             stmt 5 f 2 0 sel t 0 0 0 0 add f 2 0 0 0 0 lit int64 1 f 2 0 0 0 0\n\
             stmt 6 t 1 eq mod f 2 0 0 0 0 lit int64 3 lit int64 1\n\
             while\n\
             stmt 7 f 2 0 sel t 1 0 0 0 add f 2 0 0 0 0 lit int64 1 f 2 0 0 0 0\n\
             endwhile\n\
             stmt 4 f 1 0 sel t 0 0 0 0 add f 1 0 0 0 0 add c 0.5 mul kabs f 0 0 lit int64 0 kabs f 0 0 lit int64 0 f 1 0 0 0 0\n\
             endwhile\n"
        );
        let plan = compile(&text).unwrap();
        assert_eq!(plan.lanes, crate::gtscript::plan::Lanes::Wide);
        let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
        let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
        // A FORWARD section with a loop walks as one point function (and needs no loop code
        // of its own); a PARALLEL one runs the loop point by point in blocks.
        let walks = jit
            .point_section::<Lane>(
                &plan,
                0,
                crate::gtscript::plan::schedule::PointWalk::Columns,
            )
            .unwrap()
            .is_some();
        assert_eq!(walks, order == "FORWARD");
        assert_eq!(jit.point_loop::<Lane>(0, 2).is_some(), !walks, "{order}");
        // The two statements before the loop are a straight run (`schedule::point_runs`).
        assert_eq!(jit.point_loop::<Lane>(0, 0).is_some(), !walks, "{order}");
        assert!((0..7).all(|t| t == 0 || t == 2 || jit.point_loop::<Lane>(0, t).is_none()));
        let n = [13, 9, 5];
        let len: usize = n.iter().product();
        let at = |i: usize, j: usize, k: usize| (i * n[1] + j) * n[2] + k;
        let mut a: Vec<f64> = (0..len)
            .map(|x| 3.0 * value(x / (n[1] * n[2]), (x / n[2]) % n[1], x % n[2]))
            .collect();
        for jit in [None, Some(&jit), tier2.as_ref()] {
            let mut out = vec![0.0; len];
            let mut cnt = vec![-1i64; len];
            let mut cnt_mem = int_field(&mut cnt, n);
            cnt_mem.writable = true;
            let fields = [
                field(&mut a, n, [0; 3], false),
                field(&mut out, n, [0; 3], true),
                cnt_mem,
            ];
            for threads in [Threads::ONE, Threads::new(3).unwrap()] {
                // SAFETY: the arrays are alive, aligned and disjoint; shapes match their lengths.
                unsafe { run::<Lane>(&plan, jit, &fields, &[], n, threads).unwrap() };
                for i in 0..n[0] {
                    for j in 0..n[1] {
                        for k in 0..n[2] {
                            let (mut o, mut c) = (a[at(i, j, k)], 0i64);
                            let a0 = a[at(i, j, 0)];
                            while o < 3.0 {
                                c += 1;
                                while c % 3 == 1 {
                                    c += 1;
                                }
                                o += 0.5 + a0 * a0;
                            }
                            assert_eq!(out[at(i, j, k)], o, "{order} {i} {j} {k}");
                            assert_eq!(cnt[at(i, j, k)], c, "{order} {i} {j} {k}");
                        }
                    }
                }
            }
        }
    }
    // The body reads the level below of what it writes: the passes over blocks stay.
    let text = "stencil pk float64\nfield a IJK\nfield out IJK\ntemp m bool\n\
        comp FORWARD\ninterval S 0 S 1\nstmt 1 f 1 0 f 0 0 0 0 0\ninterval S 1 E 0\n\
        stmt 2 f 1 0 f 0 0 0 0 0\nstmt 3 t 0 lt f 1 0 0 0 0 f 1 0 0 0 -1\n\
        while\nstmt 4 f 1 0 sel t 0 0 0 0 add f 1 0 0 0 0 c 1.0 f 1 0 0 0 0\nendwhile\n";
    let plan = compile(text).unwrap();
    let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
    assert!((0..3).all(|t| jit.point_loop::<f64>(1, t).is_none()));
}

/// A block temporary that a straight run writes is stored where a statement outside the run
/// reads it (here the `while` loop after the run), and not stored where none does
/// (`jit::point::Part::new`'s `unstored`): both against direct loops, on every tier.
#[test]
fn straight_runs_store_what_later_statements_read() {
    use crate::gtscript::{Jit, Lane};
    let text = "stencil sr float64\nfield a IJK\nfield out IJK\nfield cnt int64 IJK\n\
        temp tt float64\ntemp dead float64\ntemp m bool\n\
        comp PARALLEL\ninterval S 0 E 0\n\
        stmt 1 t 0 add f 0 0 0 0 0 c 0.25\n\
        stmt 2 t 1 mul t 0 0 0 0 c 3.0\n\
        stmt 3 f 1 0 add t 1 0 0 0 t 0 0 0 0\n\
        stmt 4 f 2 0 lit int64 0\n\
        stmt 5 t 2 lt f 2 0 0 0 0 lit int64 3\n\
        while\n\
        stmt 6 f 1 0 sel t 2 0 0 0 add f 1 0 0 0 0 t 0 0 0 0 f 1 0 0 0 0\n\
        stmt 7 f 2 0 sel t 2 0 0 0 add f 2 0 0 0 0 lit int64 1 f 2 0 0 0 0\n\
        endwhile\n";
    let plan = compile(text).unwrap();
    assert_eq!(plan.lanes, crate::gtscript::plan::Lanes::Wide);
    let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
    let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
    // The four statements before the loop are one straight run.
    let straight = jit.point_loop::<Lane>(0, 0).expect("a straight run");
    assert_eq!(straight.exit, 4);
    let tt = 3;
    let dead = 4;
    assert!(
        straight.outs.contains(&tt),
        "tt is read by the loop: stored"
    );
    assert!(
        !straight.outs.contains(&dead),
        "dead is read in the run only: not stored"
    );
    let n = [9, 7, 4];
    let len: usize = n.iter().product();
    let mut a: Vec<f64> = (0..len)
        .map(|x| value(x / 28, (x / 4) % 7, x % 4))
        .collect();
    for jit in [None, Some(&jit), tier2.as_ref()] {
        let mut out = vec![0.0; len];
        let mut cnt = vec![-1i64; len];
        let mut cnt_mem = int_field(&mut cnt, n);
        cnt_mem.writable = true;
        let fields = [
            field(&mut a, n, [0; 3], false),
            field(&mut out, n, [0; 3], true),
            cnt_mem,
        ];
        // SAFETY: the arrays are alive, aligned and disjoint; shapes match their lengths.
        unsafe { run::<Lane>(&plan, jit, &fields, &[], n, Threads::ONE).unwrap() };
        for x in 0..len {
            let t = a[x] + 0.25;
            let mut o = t * 3.0 + t;
            for _ in 0..3 {
                o += t;
            }
            assert_eq!(out[x], o, "{x}");
            assert_eq!(cnt[x], 3);
        }
    }
}

#[test]
fn section_walks_match_direct_loops() {
    // A FORWARD or BACKWARD section with a loop runs as one point function, walking columns
    // (K fastest) or levels (I fastest): a recurrence on the level before along the walk, a
    // 2-D temporary carried from level to level, a one-level temporary in registers, a field
    // written under a mask (loaded first), loops with no pass for some points.
    use crate::gtscript::plan::schedule::PointWalk;
    use crate::gtscript::Jit;
    for backward in [false, true] {
        let (order, first, rest, back) = if backward {
            ("BACKWARD", "E -1 E 0", "S 0 E -1", 1)
        } else {
            ("FORWARD", "S 0 S 1", "S 1 E 0", -1)
        };
        let text = format!(
            "stencil sw float64\nfield a IJK\nfield out IJK\nfield cnt IJK\nfield w IJ\n\
             temp m bool\ntemp x\ntemp s IJ\n\
             comp {order}\ninterval {first}\n\
             stmt 1 f 1 0 f 0 0 0 0 0\n\
             stmt 2 t 2 f 3 0 0 0 0\n\
             interval {rest}\n\
             stmt 3 t 1 add f 1 0 0 0 {back} t 2 0 0 0\n\
             stmt 4 t 0 gt t 1 0 0 0 f 0 0 0 0 0\n\
             while\n\
             stmt 5 t 2 sel t 0 0 0 0 add t 2 0 0 0 c 0.25 t 2 0 0 0\n\
             stmt 6 t 1 sel t 0 0 0 0 sub t 1 0 0 0 c 1.0 t 1 0 0 0\n\
             endwhile\n\
             stmt 7 f 2 0 sel gt f 0 0 0 0 0 c 0.0 t 2 0 0 0 f 2 0 0 0 0\n\
             stmt 8 f 1 0 t 1 0 0 0\n"
        );
        let plan = compile(&text).unwrap();
        let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
        let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
        for walk in [PointWalk::Columns, PointWalk::Levels] {
            assert!(
                jit.point_section::<f64>(&plan, 1, walk).unwrap().is_some(),
                "{order}"
            );
        }
        let n = [11, 6, 7];
        let len: usize = n.iter().product();
        for k_fastest in [true, false] {
            let strides = layout_strides(n, k_fastest);
            let at = |i: usize, j: usize, k: usize| element(strides, i, j, k);
            let mut a: Vec<f64> = vec![0.0; len];
            for (i, j, k) in box_points(n) {
                a[at(i, j, k)] = 2.0 * value(i, j, k);
            }
            let mut w: Vec<f64> = (0..n[0] * n[1]).map(|x| (x % 5) as f64 * 0.5).collect();
            for jit in [None, Some(&jit), tier2.as_ref()] {
                let mut out = vec![0.0; len];
                let mut cnt = vec![-1.0; len];
                let mem = |d: &mut [f64], writable: bool| {
                    let mut f = field(d, n, [0; 3], writable);
                    f.strides = strides;
                    f
                };
                let fields = [
                    mem(&mut a, false),
                    mem(&mut out, true),
                    mem(&mut cnt, true),
                    FieldMem {
                        addr: w.as_mut_ptr().expose_provenance(),
                        shape: [n[0], n[1], 1],
                        strides: [n[1] as isize, 1, 0],
                        origin: [0; 3],
                        axes: [true, true, false],
                        writable: false,
                        ty: crate::gtscript::ir::Ty::F64,
                    },
                ];
                // SAFETY: the arrays are alive, aligned and disjoint; shapes and strides match
                // their lengths.
                unsafe { run::<f64>(&plan, jit, &fields, &[], n, Threads::ONE).unwrap() };
                for i in 0..n[0] {
                    for j in 0..n[1] {
                        let mut levels: Vec<usize> = (0..n[2]).collect();
                        if backward {
                            levels.reverse();
                        }
                        let mut s = w[i * n[1] + j];
                        let mut want_out = vec![0.0; n[2]];
                        let mut want_cnt = vec![-1.0; n[2]];
                        want_out[levels[0]] = a[at(i, j, levels[0])];
                        for p in 1..n[2] {
                            let (k, before) = (levels[p], levels[p - 1]);
                            let mut x = want_out[before] + s;
                            while x > a[at(i, j, k)] {
                                s += 0.25;
                                x -= 1.0;
                            }
                            if a[at(i, j, k)] > 0.0 {
                                want_cnt[k] = s;
                            }
                            want_out[k] = x;
                        }
                        for k in 0..n[2] {
                            let what = format!(
                                "{order} k_fastest {k_fastest} jit {} ({i}, {j}, {k})",
                                jit.is_some()
                            );
                            assert_eq!(out[at(i, j, k)], want_out[k], "out {what}");
                            assert_eq!(cnt[at(i, j, k)], want_cnt[k], "cnt {what}");
                        }
                    }
                }
            }
        }
    }
}

/// Every (i, j, k) of a box of shape `n`.
/// The element strides of a C-ordered box of shape `n`, K fastest or I fastest.
pub(super) fn layout_strides(n: [usize; 3], k_fastest: bool) -> [isize; 3] {
    if k_fastest {
        [(n[1] * n[2]) as isize, n[2] as isize, 1]
    } else {
        [1, n[0] as isize, (n[0] * n[1]) as isize]
    }
}

/// The element index of point `(i, j, k)` with `strides`.
pub(super) fn element(strides: [isize; 3], i: usize, j: usize, k: usize) -> usize {
    (i as isize * strides[0] + j as isize * strides[1] + k as isize * strides[2]) as usize
}

pub(super) fn box_points(n: [usize; 3]) -> impl Iterator<Item = (usize, usize, usize)> {
    (0..n[0]).flat_map(move |i| (0..n[1]).flat_map(move |j| (0..n[2]).map(move |k| (i, j, k))))
}

#[test]
fn section_runs_walk_columns_as_one_function() {
    // Four sections with loops, two FORWARD then two BACKWARD, reading at K offsets what the
    // earlier ones wrote: on K-fastest memory one function walks each column through all four
    // (`plan::schedule::group`); on I-fastest memory each walks levels on its own. Both, and the
    // interpreter, against direct loops.
    use crate::gtscript::plan::schedule::group;
    use crate::gtscript::plan::schedule::PointWalk;
    use crate::gtscript::Jit;
    // The temporary `y` (its level number) is read one level back only: from a register
    // along the column, and never stored by the second section.
    let text = "stencil runs float64\nfield a IJK\nfield out IJK\nfield b IJK\n\
        temp m bool\ntemp x\ntemp y\n\
        comp FORWARD\ninterval S 0 S 1\n\
        stmt 1 f 1 0 f 0 0 0 0 0\n\
        stmt 2 t 0 lt f 1 0 0 0 0 c 1.0\n\
        while\nstmt 3 f 1 0 sel t 0 0 0 0 add f 1 0 0 0 0 c 0.5 f 1 0 0 0 0\nendwhile\n\
        stmt 20 t 2 c 0.0\n\
        interval S 1 E 0\n\
        stmt 4 t 1 add add f 1 0 0 0 -1 f 0 0 0 0 0 mul c 0.125 t 2 0 0 -1\n\
        stmt 21 t 2 add t 2 0 0 -1 c 1.0\n\
        stmt 5 t 0 gt t 1 0 0 0 c 2.0\n\
        while\nstmt 6 t 1 sel t 0 0 0 0 sub t 1 0 0 0 c 1.5 t 1 0 0 0\nendwhile\n\
        stmt 7 f 1 0 t 1 0 0 0\n\
        comp BACKWARD\ninterval E -1 E 0\n\
        stmt 8 f 2 0 f 1 0 0 0 0\n\
        stmt 9 t 0 gt f 2 0 0 0 0 c 3.0\n\
        while\nstmt 10 f 2 0 sel t 0 0 0 0 mul f 2 0 0 0 0 c 0.5 f 2 0 0 0 0\nendwhile\n\
        interval S 0 E -1\n\
        stmt 11 t 1 add f 2 0 0 0 1 f 1 0 0 0 0\n\
        stmt 12 t 0 gt t 1 0 0 0 c 3.0\n\
        while\nstmt 13 t 1 sel t 0 0 0 0 mul t 1 0 0 0 c 0.5 t 1 0 0 0\nendwhile\n\
        stmt 14 f 2 0 t 1 0 0 0\n";
    let plan = compile(text).unwrap();
    assert_eq!(plan.sections.len(), 4);
    assert_eq!(group(&plan, 0, false), 4);
    let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
    let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
    let run_code = jit
        .point_section::<f64>(&plan, 0, PointWalk::Columns)
        .unwrap()
        .expect("a column walk");
    let sections: Vec<usize> = run_code.parts.iter().map(|p| p.section).collect();
    assert_eq!(sections, [0, 1, 2, 3]);
    let y = 3 + plan
        .program
        .temps
        .iter()
        .position(|t| t.name == "y")
        .expect("y");
    let first_outs = run_code.parts[0].outs;
    let second_outs = &run_code.outs[first_outs..first_outs + run_code.parts[1].outs];
    assert!(run_code.outs[..first_outs].contains(&(y as u32)));
    assert!(!second_outs.contains(&(y as u32)) && second_outs.contains(&1));
    assert!((0..4).all(|s| jit
        .point_section::<f64>(&plan, s, PointWalk::Levels)
        .unwrap()
        .is_some()));
    assert!((1..4).all(|s| jit
        .point_section::<f64>(&plan, s, PointWalk::Columns)
        .unwrap()
        .is_none()));
    let n = [7, 5, 9];
    let len: usize = n.iter().product();
    for k_fastest in [true, false] {
        let strides = layout_strides(n, k_fastest);
        let at = |i: usize, j: usize, k: usize| element(strides, i, j, k);
        let mut a: Vec<f64> = vec![0.0; len];
        for (i, j, k) in box_points(n) {
            a[at(i, j, k)] = 2.0 * value(i, j, k);
        }
        for jit in [None, Some(&jit), tier2.as_ref()] {
            let mut out = vec![0.0; len];
            let mut b = vec![0.0; len];
            let mem = |d: &mut [f64], writable: bool| {
                let mut f = field(d, n, [0; 3], writable);
                f.strides = strides;
                f
            };
            let fields = [mem(&mut a, false), mem(&mut out, true), mem(&mut b, true)];
            // SAFETY: the arrays are alive, aligned and disjoint; shapes and strides match
            // their lengths.
            unsafe { run::<f64>(&plan, jit, &fields, &[], n, Threads::ONE).unwrap() };
            for i in 0..n[0] {
                for j in 0..n[1] {
                    let col = |k: usize| a[at(i, j, k)];
                    let mut o = vec![0.0; n[2]];
                    o[0] = col(0);
                    while o[0] < 1.0 {
                        o[0] += 0.5;
                    }
                    for k in 1..n[2] {
                        let mut x = o[k - 1] + col(k) + 0.125 * (k - 1) as f64;
                        while x > 2.0 {
                            x -= 1.5;
                        }
                        o[k] = x;
                    }
                    let mut w = vec![0.0; n[2]];
                    let top = n[2] - 1;
                    w[top] = o[top];
                    while w[top] > 3.0 {
                        w[top] *= 0.5;
                    }
                    for k in (0..top).rev() {
                        let mut x = w[k + 1] + o[k];
                        while x > 3.0 {
                            x *= 0.5;
                        }
                        w[k] = x;
                    }
                    for k in 0..n[2] {
                        let what = format!(
                            "k_fastest {k_fastest} jit {} ({i}, {j}, {k})",
                            jit.is_some()
                        );
                        assert_eq!(out[at(i, j, k)], o[k], "out {what}");
                        assert_eq!(b[at(i, j, k)], w[k], "b {what}");
                    }
                }
            }
        }
    }
    // A section without a loop ends the run; it walks no columns itself.
    let cut = text.replace(
        "while\nstmt 10 f 2 0 sel t 0 0 0 0 mul f 2 0 0 0 0 c 0.5 f 2 0 0 0 0\nendwhile\n",
        "",
    );
    let plan = compile(&cut).unwrap();
    assert_eq!(
        (0..4).map(|s| group(&plan, s, false)).collect::<Vec<_>>(),
        [2, 2, 2, 4]
    );
}

/// PARALLEL sections between FORWARD ones join the run walking columns where what they write
/// they read at their own point only (`plan::schedule::group`, pace's `fix_tracer`). Every tier, K-fastest (the walk) and
/// I-fastest (blocks), against direct loops.
#[test]
fn parallel_sections_join_column_walks() {
    use crate::gtscript::plan::schedule::{group, PointWalk};
    use crate::gtscript::{Jit, Lane};
    let text = "stencil pw float64\nfield q IJK\nfield dp IJK\nfield cnt int64 IJK\ntemp up\n\
        comp FORWARD\ninterval S 0 E 0\n\
        stmt 1 f 2 0 lit int64 0\n\
        stmt 2 t 0 c 0.0\n\
        comp PARALLEL\ninterval S 0 E 0\n\
        stmt 3 t 0 mul f 0 0 0 0 0 c 0.5\n\
        comp FORWARD\ninterval S 1 E 0\n\
        stmt 4 f 0 0 add f 0 0 0 0 0 t 0 0 0 -1\n\
        stmt 5 f 2 0 add f 2 0 0 0 -1 lit int64 1\n\
        comp PARALLEL\ninterval S 0 E -1\n\
        stmt 6 f 1 0 add f 1 0 0 0 0 t 0 0 0 1\n";
    let plan = compile(text).unwrap();
    assert_eq!(plan.lanes, crate::gtscript::plan::Lanes::Wide);
    assert_eq!(group(&plan, 0, true), 4);
    let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
    let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
    let walk = jit
        .point_section::<Lane>(&plan, 0, PointWalk::Columns)
        .unwrap()
        .expect("a column walk");
    let sections: Vec<usize> = walk.parts.iter().map(|p| p.section).collect();
    assert_eq!(sections, [0, 1, 2, 3]);
    let n = [6, 5, 7];
    let len: usize = n.iter().product();
    for k_fastest in [true, false] {
        let strides = layout_strides(n, k_fastest);
        let at = |i: usize, j: usize, k: usize| element(strides, i, j, k);
        let mut q0 = vec![0.0; len];
        let mut dp0 = vec![0.0; len];
        for (i, j, k) in box_points(n) {
            q0[at(i, j, k)] = value(i, j, k);
            dp0[at(i, j, k)] = value(k, i, j) + 2.0;
        }
        for code in [None, Some(&jit), tier2.as_ref()] {
            let (mut q, mut dp) = (q0.clone(), dp0.clone());
            let mut cnt = vec![-1i64; len];
            let mut fq = field(&mut q, n, [0; 3], true);
            let mut fdp = field(&mut dp, n, [0; 3], true);
            let mut fcnt = int_field(&mut cnt, n);
            (fq.strides, fdp.strides, fcnt.strides) = (strides, strides, strides);
            fcnt.writable = true;
            let fields = [fq, fdp, fcnt];
            // SAFETY: the arrays are alive, aligned and disjoint; shapes and strides match
            // their lengths.
            unsafe { run::<Lane>(&plan, code, &fields, &[], n, Threads::ONE).unwrap() };
            for (i, j, k) in box_points(n) {
                let x = at(i, j, k);
                let what = format!(
                    "k_fastest {k_fastest} code {} ({i}, {j}, {k})",
                    code.is_some()
                );
                let up = |k: usize| 0.5 * q0[at(i, j, k)];
                let qk = if k == 0 { q0[x] } else { q0[x] + up(k - 1) };
                let dpk = if k + 1 < n[2] {
                    dp0[x] + up(k + 1)
                } else {
                    dp0[x]
                };
                assert_eq!(q[x].to_bits(), qk.to_bits(), "q {what}");
                assert_eq!(dp[x].to_bits(), dpk.to_bits(), "dp {what}");
                assert_eq!(cnt[x], k as i64, "cnt {what}");
            }
        }
    }
}
