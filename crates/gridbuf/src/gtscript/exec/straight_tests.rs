//! Straight runs (tier two's fused runs of float code, mixed-type code's point runs of both
//! tiers) in sweeps and in blocks, against direct loops on every tier.

use crate::gtscript::compile;
use crate::gtscript::exec::tests::{field, int_field, value};
use crate::gtscript::{run, FieldMem};
use crate::kernels::exec::Threads;

/// The C-ordered array `b` of `shape`, I-fastest where `i_fastest` (a field without unit stride
/// along K: its stencil runs in blocks instead of sweeps).
fn laid_out(b: &[f64], shape: [usize; 3], i_fastest: bool) -> Vec<f64> {
    let mut out = vec![0.0; b.len()];
    for (x, &v) in b.iter().enumerate() {
        let (i, j, k) = (
            x / (shape[1] * shape[2]),
            (x / shape[2]) % shape[1],
            x % shape[2],
        );
        let y = if i_fastest {
            i + shape[0] * (j + shape[1] * k)
        } else {
            x
        };
        out[y] = v;
    }
    out
}

/// The read-only field of `data` as [`laid_out`] arranged it.
fn field_laid_out(data: &mut [f64], shape: [usize; 3], i_fastest: bool) -> FieldMem {
    let mut f = field(data, shape, [0; 3], false);
    if i_fastest {
        f.strides = [1, shape[0] as isize, (shape[0] * shape[1]) as isize];
    }
    f
}

/// Runs the mixed-type `plan` (fields `a`, `b`, `out`, and `cnt` of int64 starting at `cnt0`;
/// `b` I-fastest where `i_fastest_b`, so the stencil runs in blocks, else in sweeps) with
/// `code` over `n`: `out` and `cnt`.
fn run_mixed(
    plan: &crate::gtscript::Plan,
    code: Option<&crate::gtscript::Jit>,
    a: &[f64],
    b: &[f64],
    n: [usize; 3],
    i_fastest_b: bool,
    cnt0: i64,
) -> (Vec<f64>, Vec<i64>) {
    let len = a.len();
    let mut a = a.to_vec();
    let mut bt = laid_out(b, n, i_fastest_b);
    let mut out = vec![f64::NAN; len];
    let mut cnt = vec![cnt0; len];
    let bm = field_laid_out(&mut bt, n, i_fastest_b);
    let mut cnt_mem = int_field(&mut cnt, n);
    cnt_mem.writable = true;
    let fields = [
        field(&mut a, n, [0; 3], false),
        bm,
        field(&mut out, n, [0; 3], true),
        cnt_mem,
    ];
    // SAFETY: the arrays are alive, aligned and disjoint; shapes and strides match their
    // lengths.
    unsafe { run::<crate::gtscript::Lane>(plan, code, &fields, &[], n, Threads::ONE).unwrap() };
    (out, cnt)
}

/// A straight run of float code (masks, a select with an exponential and a division in its
/// arm, a logical `or`) is one fused point function on tier two only
/// (`SectionSchedule::fused`), and every tier computes the direct loops' values bit for bit,
/// in sweeps (every field with unit stride along K) and in blocks (one field I-fastest).
#[test]
fn fused_runs_match_direct_loops_on_every_tier() {
    use crate::gtscript::Jit;
    let text = "stencil fu float64\nfield a IJK\nfield b IJK\nfield out IJK\nfield out2 IJK\n\
        temp m bool\ntemp x\n\
        comp PARALLEL\ninterval S 0 E 0\n\
        stmt 1 t 0 and gt f 0 0 0 0 0 c 0.0 lt f 1 0 0 0 0 c 0.5\n\
        stmt 2 t 1 sel t 0 0 0 0 div exp f 0 0 0 0 0 add f 1 0 0 0 0 c 2.0 f 1 0 0 0 0\n\
        stmt 3 f 2 0 add t 1 0 0 0 sel gt t 1 0 0 0 c 1.0 sqrt t 1 0 0 0 c 0.0\n\
        stmt 4 f 3 0 mul f 2 0 0 0 0 or t 0 0 0 0 lt f 0 0 0 0 0 c -0.5\n";
    let plan = compile(text).unwrap();
    let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
    let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
    assert_eq!(
        jit.schedule().sections[0].fused,
        [Some(4), None, None, None]
    );
    assert!(
        jit.fused::<f64>(0, 0).is_none(),
        "tier one has no fused code"
    );
    if let Some(t2) = &tier2 {
        assert_eq!(t2.fused::<f64>(0, 0).expect("tier two's fused run").exit, 4);
    }
    // In the fused run's C the truths are `int`s (`cgen::tape::Kind::B`): the boolean
    // temporary's variable, and the selects on them `gb_seldi`.
    let src = crate::gtscript::cgen::tier_two_source(&plan, &jit);
    let fused = src
        .split("\nvoid ")
        .find(|f| f.starts_with("gb_f0_0("))
        .expect("the fused run's function");
    assert!(
        fused.contains("int w") && fused.contains("gb_seldi("),
        "{fused}"
    );
    let n = [11, 9, 6];
    let len: usize = n.iter().product();
    let a: Vec<f64> = (0..len)
        .map(|x| value(x / 54, (x / 6) % 9, x % 6))
        .collect();
    let b: Vec<f64> = (0..len)
        .map(|x| value(x % 6, x / 54, (x / 6) % 9) * 0.5)
        .collect();
    let expect = |x: usize| {
        let m = a[x] > 0.0 && b[x] < 0.5;
        let t = if m { a[x].exp() / (b[x] + 2.0) } else { b[x] };
        let o = t + if t > 1.0 { t.sqrt() } else { 0.0 };
        (o, o * f64::from(u8::from(m || a[x] < -0.5)))
    };
    for i_fastest_b in [false, true] {
        for code in [None, Some(&jit), tier2.as_ref()] {
            let mut a = a.clone();
            let mut bt = laid_out(&b, n, i_fastest_b);
            let mut out = vec![f64::NAN; len];
            let mut out2 = vec![f64::NAN; len];
            let bm = field_laid_out(&mut bt, n, i_fastest_b);
            let fields = [
                field(&mut a, n, [0; 3], false),
                bm,
                field(&mut out, n, [0; 3], true),
                field(&mut out2, n, [0; 3], true),
            ];
            // SAFETY: the arrays are alive, aligned and disjoint; shapes and strides match
            // their lengths.
            unsafe { run::<f64>(&plan, code, &fields, &[], n, Threads::ONE).unwrap() };
            for x in 0..len {
                let (o, o2) = expect(x);
                let at = format!("{x} (b I-fastest {i_fastest_b}, code {})", code.is_some());
                assert_eq!(out[x].to_bits(), o.to_bits(), "out at {at}");
                assert_eq!(out2[x].to_bits(), o2.to_bits(), "out2 at {at}");
            }
        }
    }
}

/// A straight run of mixed-type code (a point function of both tiers) in a stencil that runs as
/// sweeps (every field with unit stride along K) and in blocks (one field I-fastest): every
/// tier computes the direct loops' values.
#[test]
fn mixed_type_straight_runs_match_direct_loops_in_sweeps_and_blocks() {
    use crate::gtscript::{Jit, Lane};
    let text = "stencil ms float64\nfield a IJK\nfield b IJK\nfield out IJK\nfield cnt int64 IJK\n\
        temp m bool\ntemp x\n\
        comp PARALLEL\ninterval S 0 E 0\n\
        stmt 1 t 0 gt f 0 0 0 0 0 f 1 0 0 0 0\n\
        stmt 2 t 1 sel t 0 0 0 0 mul f 0 0 0 0 0 c 2.0 f 1 0 0 0 0\n\
        stmt 3 f 3 0 sel t 0 0 0 0 lit int64 7 lit int64 -3\n\
        stmt 4 f 2 0 add t 1 0 0 0 f 3 0 0 0 0\n";
    let plan = compile(text).unwrap();
    assert_eq!(plan.lanes, crate::gtscript::plan::Lanes::Wide);
    let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
    let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
    // The first three statements at least are one straight run.
    let exit = jit.point_loop::<Lane>(0, 0).expect("a straight run").exit;
    assert!(exit >= 3);
    // Its statements' row functions are compiled only when a block first cuts the run, so the
    // calls below, which never cut it, compile none of them.
    let no_rows = |jit: &Jit| (0..exit).all(|t| jit.stmt_code(0, t).is_none());
    assert!(
        no_rows(&jit),
        "row functions of a straight run compiled with the stencil"
    );
    let n = [10, 7, 5];
    let len: usize = n.iter().product();
    let a: Vec<f64> = (0..len)
        .map(|x| value(x / 35, (x / 5) % 7, x % 5))
        .collect();
    let b: Vec<f64> = (0..len)
        .map(|x| value(x % 5, x / 35, (x / 5) % 7))
        .collect();
    for i_fastest_b in [false, true] {
        for code in [None, Some(&jit), tier2.as_ref()] {
            let (out, cnt) = run_mixed(&plan, code, &a, &b, n, i_fastest_b, 0);
            for x in 0..len {
                let m = a[x] > b[x];
                let c = if m { 7 } else { -3 };
                let o = if m { a[x] * 2.0 } else { b[x] } + c as f64;
                let at = format!("{x} (b I-fastest {i_fastest_b}, code {})", code.is_some());
                assert_eq!(cnt[x], c, "cnt at {at}");
                assert_eq!(out[x].to_bits(), o.to_bits(), "out at {at}");
            }
        }
    }
    assert!(
        no_rows(&jit),
        "row functions of an uncut straight run compiled by a call"
    );
    for t in 0..exit {
        let row = jit.stmt::<Lane>(&plan, 0, t).unwrap();
        assert!(
            row.is_some(),
            "statement {t}'s row function, when asked for"
        );
    }
}

/// A masked temporary that a mixed-type straight run alone writes and reads starts every point
/// at zero and is neither loaded nor stored (`jit::point::Part`'s `zeroed`: GT4Py gives it
/// uninitialised memory where its mask is off); one that a statement outside the run wrote is
/// still loaded. Tier two fuses the whole run after the loop (`SectionSchedule::fused`, mixed
/// types as well), and every tier computes the direct loops' values.
#[test]
fn masked_temporaries_of_a_straight_run_stay_in_registers() {
    use crate::gtscript::{Jit, Lane};
    let text = "stencil mz float64\nfield a IJK\nfield b IJK\nfield out IJK\nfield cnt int64 IJK\n\
        temp m bool\ntemp x\ntemp y\ntemp c bool\n\
        comp PARALLEL\ninterval S 0 E 0\n\
        stmt 1 t 0 gt f 0 0 0 0 0 f 1 0 0 0 0\n\
        stmt 2 t 1 mul f 0 0 0 0 0 c 3.0\n\
        stmt 3 f 3 0 lit int64 0\n\
        stmt 4 t 3 lt f 3 0 0 0 0 lit int64 2\n\
        while\n\
        stmt 5 f 3 0 sel t 3 0 0 0 add f 3 0 0 0 0 lit int64 1 f 3 0 0 0 0\n\
        endwhile\n\
        stmt 6 t 1 sel t 0 0 0 0 add t 1 0 0 0 c 1.0 t 1 0 0 0\n\
        stmt 7 t 2 sel t 0 0 0 0 mul f 1 0 0 0 0 c 2.0 t 2 0 0 0\n\
        stmt 8 f 2 0 add t 1 0 0 0 sel t 0 0 0 0 t 2 0 0 0 c 0.5\n";
    let plan = compile(text).unwrap();
    assert_eq!(plan.lanes, crate::gtscript::plan::Lanes::Wide);
    let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
    let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
    let (x, y) = (5, 6);
    let after = jit
        .point_loop::<Lane>(0, 5)
        .expect("the straight run after the loop");
    assert_eq!(after.exit, 8);
    assert!(
        after.outs.contains(&x),
        "x, written before the loop: loaded"
    );
    assert!(
        !after.outs.contains(&y),
        "y, only in the run: in a register"
    );
    assert_eq!(jit.schedule().sections[0].fused[5], Some(8));
    if let Some(t2) = &tier2 {
        let fused = t2.fused::<Lane>(0, 5).expect("tier two's fused run");
        assert_eq!((fused.exit, fused.outs.contains(&y)), (8, false));
    }
    let n = [9, 7, 5];
    let len: usize = n.iter().product();
    let a: Vec<f64> = (0..len)
        .map(|x| value(x / 35, (x / 5) % 7, x % 5))
        .collect();
    let b: Vec<f64> = (0..len)
        .map(|x| value(x % 5, x / 35, (x / 5) % 7))
        .collect();
    for i_fastest_b in [false, true] {
        for code in [None, Some(&jit), tier2.as_ref()] {
            let (out, cnt) = run_mixed(&plan, code, &a, &b, n, i_fastest_b, -1);
            for p in 0..len {
                let m = a[p] > b[p];
                let x = a[p] * 3.0 + if m { 1.0 } else { 0.0 };
                let o = if m { x + b[p] * 2.0 } else { x + 0.5 };
                let at = format!("{p} (b I-fastest {i_fastest_b}, code {})", code.is_some());
                assert_eq!(cnt[p], 2, "cnt at {at}");
                assert_eq!(out[p].to_bits(), o.to_bits(), "out at {at}");
            }
        }
    }
}

/// Consecutive masked assignments under one condition share one C `if` in tier two's scalar
/// point functions (`plan::masked::masked_assignment`), as GT4Py's compiled backends run an
/// `if` block: a statement that writes the condition ends the shared test; an assignment
/// where the condition does not hold (with a guarded exponential) is tested apart; a read at
/// a run-time level that the condition selects (level 0 elsewhere, as the lowering writes
/// reads inside an `if`) may be skipped, one at an unselected level may not. Every tier
/// computes the direct loops' values, in sweeps and in blocks.
#[test]
fn masked_assignments_under_one_condition_share_one_test() {
    use crate::gtscript::plan::masked::masked_assignment;
    use crate::gtscript::Jit;
    let text = "stencil mk float64\nfield a IJK\nfield b IJK\nfield out IJK\nfield cnt int64 IJK\n\
        temp m bool\ntemp x\n\
        comp PARALLEL\ninterval S 0 E 0\n\
        stmt 1 t 0 gt f 0 0 0 0 0 f 1 0 0 0 0\n\
        stmt 2 t 1 f 1 0 0 0 0\n\
        stmt 3 t 1 sel t 0 0 0 0 mul t 1 0 0 0 c 2.0 t 1 0 0 0\n\
        stmt 4 f 3 0 sel t 0 0 0 0 lit int64 7 f 3 0 0 0 0\n\
        stmt 5 t 0 sel t 0 0 0 0 lt f 0 0 0 0 0 c 0.5 t 0 0 0 0\n\
        stmt 6 t 1 sel t 0 0 0 0 add t 1 0 0 0 c 1.0 t 1 0 0 0\n\
        stmt 7 t 1 sel t 0 0 0 0 add t 1 0 0 0 kabs f 1 0 sel t 0 0 0 0 lit int64 2 lit int64 0 t 1 0 0 0\n\
        stmt 8 t 1 sel t 0 0 0 0 t 1 0 0 0 exp f 0 0 0 0 0\n\
        stmt 9 t 1 sel t 0 0 0 0 mul t 1 0 0 0 kabs f 1 0 lit int64 1 t 1 0 0 0\n\
        stmt 10 f 2 0 add t 1 0 0 0 f 3 0 0 0 0\n";
    let plan = compile(text).unwrap();
    assert_eq!(plan.lanes, crate::gtscript::plan::Lanes::Wide);
    let sec = &plan.sections[0];
    let masked: Vec<Option<bool>> = sec
        .stmts
        .iter()
        .map(|st| masked_assignment(&st.tape, st.target).map(|(_, then)| then))
        .collect();
    assert_eq!(
        masked,
        [
            None,
            None,
            Some(true),
            Some(true),
            Some(true),
            Some(true),
            Some(true),
            Some(false),
            None,
            None
        ]
    );
    let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
    assert_eq!(jit.schedule().sections[0].fused[0], Some(10));
    // The fused run: statements 3 to 5 under one test (5 writes the condition), 6 and 7 under
    // the next, 8 under its own, 9 under none.
    let src = crate::gtscript::cgen::tier_two_source(&plan, &jit);
    let fused = src
        .split("\nvoid ")
        .find(|f| f.starts_with("gb_f0_0("))
        .expect("the fused run's function");
    let tests = fused
        .lines()
        .filter(|l| {
            let l = l.trim();
            l.starts_with("if ((w") || l.starts_with("if (!(w")
        })
        .count();
    assert_eq!(tests, 3, "{fused}");
    let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
    let n = [9, 7, 5];
    let len: usize = n.iter().product();
    let a: Vec<f64> = (0..len)
        .map(|x| value(x / 35, (x / 5) % 7, x % 5))
        .collect();
    let b: Vec<f64> = (0..len)
        .map(|x| value(x % 5, x / 35, (x / 5) % 7))
        .collect();
    for i_fastest_b in [false, true] {
        for code in [None, Some(&jit), tier2.as_ref()] {
            let (out, cnt) = run_mixed(&plan, code, &a, &b, n, i_fastest_b, -1);
            let (mut on, mut off) = (0, 0);
            for p in 0..len {
                let m0 = a[p] > b[p];
                let c = if m0 { 7 } else { -1 };
                let m1 = m0 && a[p] < 0.5;
                let mut x = if m0 { 2.0 * b[p] } else { b[p] };
                // b at absolute levels 2 and 1 of the point's column.
                let (b2, b1) = (b[p - p % 5 + 2], b[p - p % 5 + 1]);
                x = if m1 { x + 1.0 + b2 } else { a[p].exp() };
                if m1 {
                    x *= b1;
                }
                let o = x + c as f64;
                (on, off) = (on + usize::from(m1), off + usize::from(!m1));
                let at = format!("{p} (b I-fastest {i_fastest_b}, code {})", code.is_some());
                assert_eq!(cnt[p], c, "cnt at {at}");
                assert_eq!(out[p].to_bits(), o.to_bits(), "out at {at}");
            }
            assert!(on > 0 && off > 0, "both arms taken somewhere");
        }
    }
}

/// A FORWARD section of mixed-type code (an int64 counter beside floats) walks each level's
/// rows on the I-unit layout. On tier two that walk is written for the vectoriser (the loop
/// marked free of dependences, blends for masks) where its guarded arms call no math
/// function, and stays scalar code with branches where one does
/// (`cgen::vectorise::levels_walk_vectorises`). Both agree with direct loops on every tier, on
/// the I-unit and the K-unit layout.
#[test]
fn mixed_type_walks_of_levels_vectorise_unless_guarded_math_and_match_direct_loops() {
    use crate::gtscript::plan::Op;
    use crate::gtscript::{Jit, Lane};
    // An arm of 26 operations (weighty enough to be guarded), or an exponential (guarded).
    let mut long = "f 0 0 0 0 0".to_string();
    for _ in 0..13 {
        long = format!("add mul {long} c 0.5 f 1 0 0 0 0");
    }
    let cases = [
        (long, false, "long"),
        ("exp f 0 0 0 0 0".to_string(), true, "exp"),
    ];
    let n = [9, 4, 6];
    let len: usize = n.iter().product();
    let a: Vec<f64> = (0..len)
        .map(|x| value(x / 24, (x / 6) % 4, x % 6) * 0.1)
        .collect();
    let b: Vec<f64> = (0..len)
        .map(|x| value(x % 6, x / 24, (x / 6) % 4) * 0.5)
        .collect();
    for (arm, math, label) in cases {
        let text = format!(
            "stencil wl float64\nfield a IJK\nfield b IJK\nfield out IJK\nfield cnt int64 IJK\n\
             temp m bool\n\
             comp FORWARD\ninterval S 0 S 1\n\
             stmt 1 f 2 0 f 0 0 0 0 0\nstmt 2 f 3 0 lit int64 0\n\
             interval S 1 E 0\n\
             stmt 3 t 0 lt f 2 0 0 0 -1 f 1 0 0 0 0\n\
             stmt 4 f 2 0 sel t 0 0 0 0 add f 2 0 0 0 -1 {arm} f 0 0 0 0 0\n\
             stmt 5 f 3 0 sel t 0 0 0 0 add f 3 0 0 0 -1 lit int64 1 f 3 0 0 0 -1\n"
        );
        let plan = compile(&text).unwrap();
        assert_eq!(plan.lanes, crate::gtscript::plan::Lanes::Wide);
        let guarded = plan
            .sections
            .iter()
            .flat_map(|s| &s.stmts)
            .flat_map(|st| &st.tape)
            .any(|ins| matches!(ins.op, Op::Guard(_)));
        assert!(guarded, "{label}: the arm is not guarded");
        let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
        let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
        let src = crate::gtscript::cgen::tier_two_source(&plan, &jit);
        // The walks of levels (`_1`): every one vectorised, or the guarded exponential's not.
        let walks: Vec<&str> = src
            .split("\nvoid ")
            .filter(|f| f.starts_with("gb_w") && f.contains("_1("))
            .collect();
        assert!(!walks.is_empty(), "{label}: no walk of levels in\n{src}");
        let all = walks.iter().all(|f| f.contains("GB_IVDEP"));
        assert_eq!(all, !math, "{label}:\n{}", walks.join("\n"));
        // The direct loops, C-ordered.
        let mut out_ref = vec![0.0; len];
        let mut cnt_ref = vec![0i64; len];
        for x in (0..len).filter(|x| x % n[2] == 0) {
            out_ref[x] = a[x];
            for k in 1..n[2] {
                let (p, y) = (x + k - 1, x + k);
                let m = out_ref[p] < b[y];
                let v = if math {
                    a[y].exp()
                } else {
                    (0..13).fold(a[y], |v, _| v * 0.5 + b[y])
                };
                out_ref[y] = if m { out_ref[p] + v } else { a[y] };
                cnt_ref[y] = if m { cnt_ref[p] + 1 } else { cnt_ref[p] };
            }
        }
        for i_fastest in [true, false] {
            let strides = if i_fastest {
                [1, n[0] as isize, (n[0] * n[1]) as isize]
            } else {
                [(n[1] * n[2]) as isize, n[2] as isize, 1]
            };
            for code in [None, Some(&jit), tier2.as_ref()] {
                let mut at = laid_out(&a, n, i_fastest);
                let mut bt = laid_out(&b, n, i_fastest);
                let mut out = vec![f64::NAN; len];
                let mut cnt = vec![-7i64; len];
                let mut fields = [
                    field(&mut at, n, [0; 3], false),
                    field(&mut bt, n, [0; 3], false),
                    field(&mut out, n, [0; 3], true),
                    int_field(&mut cnt, n),
                ];
                fields[3].writable = true;
                for f in &mut fields {
                    f.strides = strides;
                }
                // SAFETY: the arrays are alive, aligned and disjoint; shapes and strides match
                // their lengths.
                unsafe { run::<Lane>(&plan, code, &fields, &[], n, Threads::ONE).unwrap() };
                let back = laid_out(&out_ref, n, i_fastest);
                let cnt_back: Vec<i64> = laid_out(
                    &cnt_ref.iter().map(|&c| c as f64).collect::<Vec<_>>(),
                    n,
                    i_fastest,
                )
                .iter()
                .map(|&c| c as i64)
                .collect();
                let at = format!("{label}, I-fastest {i_fastest}, code {}", code.is_some());
                for y in 0..len {
                    assert_eq!(out[y].to_bits(), back[y].to_bits(), "out at {y} ({at})");
                    assert_eq!(cnt[y], cnt_back[y], "cnt at {y} ({at})");
                }
            }
        }
    }
}

/// Guarded math in tier two's code for the vectoriser (a row function, a fused run) runs only
/// in the chunks of points where some point takes it (`cgen::source::CHUNK`), and every tier
/// computes the direct loops' values bit for bit: chunks that take no arm, some, and all; the
/// last chunk of a row shorter; rows along I and along K.
#[test]
fn guarded_math_runs_only_in_chunks_that_take_it_and_matches_direct_loops() {
    use crate::gtscript::Jit;
    let text = "stencil gm float64\nfield a IJK\nfield b IJK\nfield out IJK\nfield out2 IJK\n\
        temp x\n\
        comp PARALLEL\ninterval S 0 E 0\n\
        stmt 1 f 2 0 sel lt f 0 0 0 0 0 c 0.0 exp f 0 0 0 0 0 f 1 0 0 0 0\n\
        comp PARALLEL\ninterval S 0 E 0\n\
        stmt 2 t 0 sel gt f 1 0 0 0 0 c 0.25 log f 1 0 0 0 0 f 0 0 0 0 0\n\
        stmt 3 f 3 0 add t 0 0 0 0 mul t 0 0 0 0 c 2.0\n";
    let plan = compile(text).unwrap();
    let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
    let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
    let src = crate::gtscript::cgen::tier_two_source(&plan, &jit);
    // Every function calling a math function (through the table: no vector math here) tests
    // its chunks first; a row function and a fused run among them.
    let calling: Vec<&str> = src
        .split("\nvoid ")
        .filter(|f| f.starts_with("gb_") && !f.starts_with("gb_init") && f.contains("gb_m["))
        .collect();
    assert!(calling.iter().all(|f| f.contains("if (gb_any)")), "{src}");
    for kind in ["gb_s", "gb_f"] {
        assert!(
            calling.iter().any(|f| f.starts_with(kind)),
            "no {kind}: {src}"
        );
    }
    // Where the work outside the guarded runs outweighs theirs (a test of 40 additions, one
    // guarded exponential), chunks do not pay: the test loop would compute it twice.
    let sum = "add f 0 0 0 0 0 ".repeat(40) + "f 1 0 0 0 0";
    let heavy = compile(&format!(
        "stencil gh float64\nfield a IJK\nfield b IJK\nfield out IJK\n\
         comp PARALLEL\ninterval S 0 E 0\n\
         stmt 1 f 2 0 sel lt {sum} c 0.0 exp f 0 0 0 0 0 f 1 0 0 0 0\n"
    ))
    .unwrap();
    let hj = Jit::compile(&heavy).unwrap().expect("a Cranelift backend");
    let hsrc = crate::gtscript::cgen::tier_two_source(&heavy, &hj);
    assert!(hsrc.contains("gb_m[") && !hsrc.contains("gb_any"), "{hsrc}");
    // Rows of 19 points along I: chunks of 8, 8 and 3; `a` negative (the exponential) at
    // every point of some chunks, at a few of others, at none of the rest; `b` above 0.25
    // (the logarithm) likewise, elsewhere.
    let n = [19, 5, 4];
    let len: usize = n.iter().product();
    let ijk = |x: usize| (x / (n[1] * n[2]), (x / n[2]) % n[1], x % n[2]);
    let a: Vec<f64> = (0..len)
        .map(|x| {
            let (i, j, k) = ijk(x);
            let neg = match j {
                0 => i < 8,
                1 => i % 7 == k,
                2 => i >= 16,
                _ => false,
            };
            let v = 0.1 + (i + 3 * j + 7 * k) as f64 * 0.01;
            if neg {
                -v
            } else {
                v
            }
        })
        .collect();
    let b: Vec<f64> = (0..len)
        .map(|x| {
            let (i, j, k) = ijk(x);
            let high = match k {
                0 => (8..16).contains(&i),
                1 => i == j,
                3 => true,
                _ => false,
            };
            0.2 + if high { 0.5 } else { 0.0 } + (i * j) as f64 * 1e-3
        })
        .collect();
    let expect = |x: usize| {
        let o = if a[x] < 0.0 { a[x].exp() } else { b[x] };
        let t = if b[x] > 0.25 { b[x].ln() } else { a[x] };
        (o, t + t * 2.0)
    };
    for i_fastest in [false, true] {
        for code in [None, Some(&jit), tier2.as_ref()] {
            let mut at = laid_out(&a, n, i_fastest);
            let mut bt = laid_out(&b, n, i_fastest);
            let mut out = vec![f64::NAN; len];
            let mut out2 = vec![f64::NAN; len];
            let mut fields = [
                field_laid_out(&mut at, n, i_fastest),
                field_laid_out(&mut bt, n, i_fastest),
                field(&mut out, n, [0; 3], true),
                field(&mut out2, n, [0; 3], true),
            ];
            for f in &mut fields[2..] {
                if i_fastest {
                    f.strides = [1, n[0] as isize, (n[0] * n[1]) as isize];
                }
            }
            // SAFETY: the arrays are alive, aligned and disjoint; shapes and strides match
            // their lengths.
            unsafe { run::<f64>(&plan, code, &fields, &[], n, Threads::ONE).unwrap() };
            let (o, o2): (Vec<f64>, Vec<f64>) = (0..len).map(expect).unzip();
            let (o, o2) = (laid_out(&o, n, i_fastest), laid_out(&o2, n, i_fastest));
            for y in 0..len {
                let at = format!("{y} (I-fastest {i_fastest}, code {})", code.is_some());
                assert_eq!(out[y].to_bits(), o[y].to_bits(), "out at {at}");
                assert_eq!(out2[y].to_bits(), o2[y].to_bits(), "out2 at {at}");
            }
        }
    }
}

/// A column walk keeps an output without the K axis (an IJ int field counting levels, pace's
/// `lev`) in its variable over the whole column, loaded before the first level and stored after
/// the last (`cgen::source::point_function`'s `held`), and every tier computes the direct loops'
/// values on K-fastest memory (the walk) and I-fastest memory (blocks).
#[test]
fn column_walks_hold_an_ij_output_over_the_column_and_match_direct_loops() {
    use crate::gtscript::exec::tests::{element, layout_strides};
    use crate::gtscript::{Jit, Lane};
    let text = "stencil hl float64\nfield a IJK\nfield out IJK\nfield lev int64 IJ\n\
        comp FORWARD\ninterval S 0 S 1\n\
        stmt 1 f 2 0 lit int64 0\nstmt 2 f 1 0 f 0 0 0 0 0\n\
        interval S 1 E 0\n\
        stmt 3 f 2 0 sel lt f 0 0 0 0 0 c 0.0 add f 2 0 0 0 0 lit int64 1 f 2 0 0 0 0\n\
        stmt 4 f 1 0 add f 1 0 0 0 -1 mul f 0 0 0 0 0 cast float64 f 2 0 0 0 0\n";
    let plan = compile(text).unwrap();
    assert_eq!(plan.lanes, crate::gtscript::plan::Lanes::Wide);
    let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
    let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
    let src = crate::gtscript::cgen::tier_two_source(&plan, &jit);
    let walk = src
        .split("\nvoid ")
        .find(|f| f.starts_with("gb_w0_0("))
        .expect("the column walk");
    // `lev`: loaded before the second section's levels (the first writes it first), stored
    // after each section's, never inside a level (the loops' lines are indented by six).
    assert!(
        walk.contains("    w0 = *(const int64_t *)ob0;\n    for (size_t i"),
        "{walk}"
    );
    assert!(
        walk.contains("    }\n    *(int64_t *)ob0 = w0;\n    after1: ;"),
        "{walk}"
    );
    assert!(
        walk.lines()
            .filter(|l| l.starts_with("      "))
            .all(|l| !l.contains("int64_t *)ob")),
        "{walk}"
    );
    let n = [5, 4, 9];
    let len: usize = n.iter().product();
    for k_fastest in [true, false] {
        let strides = layout_strides(n, k_fastest);
        let at = |i: usize, j: usize, k: usize| element(strides, i, j, k);
        let mut a = vec![0.0; len];
        for (i, j, k) in crate::gtscript::exec::tests::box_points(n) {
            a[at(i, j, k)] = value(i, j, k);
        }
        let mut want = vec![0.0; len];
        let mut want_lev = vec![0i64; n[0] * n[1]];
        for i in 0..n[0] {
            for j in 0..n[1] {
                let mut lev = 0i64;
                want[at(i, j, 0)] = a[at(i, j, 0)];
                for k in 1..n[2] {
                    if a[at(i, j, k)] < 0.0 {
                        lev += 1;
                    }
                    want[at(i, j, k)] = want[at(i, j, k - 1)] + a[at(i, j, k)] * lev as f64;
                }
                want_lev[i * n[1] + j] = lev;
            }
        }
        for code in [None, Some(&jit), tier2.as_ref()] {
            let mut a = a.clone();
            let mut out = vec![f64::NAN; len];
            let mut lev = vec![-7i64; n[0] * n[1]];
            let mut fields = [
                field(&mut a, n, [0; 3], false),
                field(&mut out, n, [0; 3], true),
                FieldMem {
                    addr: lev.as_mut_ptr().expose_provenance(),
                    shape: [n[0], n[1], 1],
                    strides: [n[1] as isize, 1, 0],
                    origin: [0; 3],
                    axes: [true, true, false],
                    writable: true,
                    ty: crate::gtscript::ir::Ty::I64,
                },
            ];
            for f in &mut fields[..2] {
                f.strides = strides;
            }
            // SAFETY: the arrays are alive, aligned and disjoint; shapes and strides match
            // their lengths.
            unsafe { run::<Lane>(&plan, code, &fields, &[], n, Threads::ONE).unwrap() };
            let label = format!("K-fastest {k_fastest}, code {}", code.is_some());
            for y in 0..len {
                assert_eq!(out[y].to_bits(), want[y].to_bits(), "out at {y} ({label})");
            }
            assert_eq!(lev, want_lev, "lev ({label})");
        }
    }
}

/// A FORWARD section's statements under one region, reading at other levels of the column
/// what they write (`acc = acc[0, 0, -1]`, then a masked update; `out` read one level up before
/// that level is written), with a K-only operand: on tier two, a walk of its levels cut to the
/// region on I-fastest memory (`SectionSchedule::levels`) and one fused run in blocks on
/// K-fastest memory (`schedule::straight`: its blocks are one level each); tiles one per thread
/// (`LayoutSchedule::tile_per_thread`). Every tier computes the direct loops' values bit for
/// bit on both, on one thread and on three.
#[test]
fn vertical_runs_read_other_levels_of_what_they_write_and_match_direct_loops() {
    use crate::gtscript::exec::tests::{element, layout_strides};
    use crate::gtscript::plan::schedule::Layout;
    use crate::gtscript::Jit;
    let text = "stencil vr float64\nfield a IJK\nfield p K\nfield out IJK\ntemp acc\n\
        comp FORWARD\ninterval S 0 S 1\n\
        region * E -1 * *\nstmt 1 t 0 mul f 0 0 0 0 0 f 1 0 0 0 0\n\
        region * E -1 * *\nstmt 2 f 2 0 t 0 0 0 0\n\
        interval S 1 E -1\n\
        region * E -1 * *\nstmt 3 t 0 t 0 0 0 -1\n\
        region * E -1 * *\n\
        stmt 4 t 0 sel lt f 1 0 0 0 0 c 0.5 add t 0 0 0 0 mul f 0 0 0 0 0 f 1 0 0 0 0 t 0 0 0 0\n\
        region * E -1 * *\nstmt 5 f 2 0 add t 0 0 0 0 f 2 0 0 0 1\n";
    let plan = compile(text).unwrap();
    let jit = Jit::compile(&plan).unwrap().expect("a Cranelift backend");
    let tier2 = crate::gtscript::cgen::tier_two_of(&plan).unwrap();
    let last = plan.sections[1].stmts.len();
    assert!(last >= 2, "{:?}", plan.sections[1].stmts);
    assert_eq!(jit.schedule().sections[1].fused[0], Some(last));
    assert!(jit.layout_schedule(&plan, Layout::I).tile_per_thread);
    assert!(jit.schedule().sections.iter().all(|sec| sec.levels));
    assert!(jit.levels_walk::<f64>(1).is_none(), "tier one has no walk");
    if let Some(t2) = &tier2 {
        assert_eq!(
            t2.fused::<f64>(1, 0).expect("tier two's fused run").exit,
            last
        );
        assert!(t2.levels_walk::<f64>(1).is_some(), "tier two's walk");
    }
    // Statements under different regions are not walked as one.
    let apart = compile(&text.replacen("region * E -1 * *\nstmt 5", "stmt 5", 1)).unwrap();
    let aj = Jit::compile(&apart).unwrap().expect("a Cranelift backend");
    assert!(!aj.schedule().sections[1].levels);
    let n = [7, 5, 6];
    let len: usize = n.iter().product();
    let p: Vec<f64> = (0..n[2])
        .map(|k| [0.25, 0.75, 0.1, 0.4, 0.9, 0.3][k])
        .collect();
    for k_fastest in [false, true] {
        let strides = layout_strides(n, k_fastest);
        let at = |i: usize, j: usize, k: usize| element(strides, i, j, k);
        let mut a = vec![0.0; len];
        let mut out0 = vec![0.0; len];
        for (i, j, k) in crate::gtscript::exec::tests::box_points(n) {
            a[at(i, j, k)] = value(i, j, k);
            out0[at(i, j, k)] = value(j, k, i) + 3.0;
        }
        let mut want = out0.clone();
        for i in 0..n[0] - 1 {
            for j in 0..n[1] {
                let mut acc = a[at(i, j, 0)] * p[0];
                want[at(i, j, 0)] = acc;
                for k in 1..n[2] - 1 {
                    if p[k] < 0.5 {
                        acc += a[at(i, j, k)] * p[k];
                    }
                    want[at(i, j, k)] = acc + out0[at(i, j, k + 1)];
                }
            }
        }
        for threads in [1, 3] {
            for code in [None, Some(&jit), tier2.as_ref()] {
                let mut a = a.clone();
                let mut pk = p.clone();
                let mut out = out0.clone();
                let mut fields = [
                    field(&mut a, n, [0; 3], false),
                    FieldMem {
                        addr: pk.as_mut_ptr().expose_provenance(),
                        shape: [1, 1, n[2]],
                        strides: [0, 0, 1],
                        origin: [0; 3],
                        axes: [false, false, true],
                        writable: false,
                        ty: crate::gtscript::ir::Ty::F64,
                    },
                    field(&mut out, n, [0; 3], true),
                ];
                fields[0].strides = strides;
                fields[2].strides = strides;
                let th = Threads::new(threads).unwrap();
                // SAFETY: the arrays are alive, aligned and disjoint; shapes and strides match
                // their lengths.
                unsafe { run::<f64>(&plan, code, &fields, &[], n, th).unwrap() };
                let label = format!(
                    "K-fastest {k_fastest}, {threads} threads, code {}",
                    code.is_some()
                );
                for y in 0..len {
                    assert_eq!(out[y].to_bits(), want[y].to_bits(), "out at {y} ({label})");
                }
            }
        }
    }
}
