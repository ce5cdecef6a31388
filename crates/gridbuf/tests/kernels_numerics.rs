//! Every kernel against a naive reference, in dense, padded, strided and negative-stride
//! layouts, with canaries around every output and checks that inputs stay unchanged.

mod kernels_support;

use gridbuf::kernels::{self, Kernel, Threads};
use kernels_support::*;
use ndarray::{Array3, ArrayView3, ArrayViewMut3};

/// A small domain (runs on the calling thread) and one large enough to run in parallel, with
/// lengths that are no multiple of any tile or vector width.
const DOMAINS: [[usize; 3]; 2] = [[5, 6, 3], [41, 37, 23]];

/// Odd shapes: unit axes and a single level.
const EDGE_DOMAINS: [[usize; 3]; 4] = [[1, 7, 5], [7, 1, 5], [3, 4, 1], [1, 1, 1]];

fn threads(n: usize) -> Threads {
    Threads::new(n).unwrap()
}

/// Runs the kernel `name` on the stores; returns the output values. Checks that the output's
/// border is intact and that no input changed.
fn run(
    name: &str,
    ins: &[&Store],
    out: &mut Store,
    domain: [usize; 3],
    threads: Threads,
) -> Array3<f64> {
    let kernel = kernels::by_name(name).unwrap();
    let before: Vec<Array3<f64>> = ins.iter().map(|s| s.backing.clone()).collect();
    let views: Vec<ArrayView3<'_, f64>> = ins.iter().map(|s| s.view()).collect();
    let mut outs: Vec<ArrayViewMut3<'_, f64>> = vec![out.view_mut()];
    kernel.run(&views, &mut outs, domain, threads).unwrap();
    drop(outs);
    for (s, b) in ins.iter().zip(&before) {
        assert!(
            bitwise_eq(&s.backing, b),
            "{name} modified an input ({:?})",
            s.layout
        );
    }
    out.assert_border_intact(name);
    out.values()
}

fn lap_input(domain: [usize; 3], layout: Layout) -> Store {
    Store::filled(widen(domain, 1), layout, |i, j, k| noise(1, i, j, k))
}

fn hdiff_inputs(domain: [usize; 3], layout: Layout) -> (Store, Store) {
    let inp = Store::filled(widen(domain, 2), layout, |i, j, k| noise(2, i, j, k));
    let coeff = Store::filled(domain, layout, |i, j, k| 0.025 * (1.0 + noise(3, i, j, k)));
    (inp, coeff)
}

/// Layout pairs (input, output): every layout with itself and a few mixed pairs.
fn layout_pairs() -> Vec<(Layout, Layout)> {
    let mut v: Vec<_> = LAYOUTS.iter().map(|&l| (l, l)).collect();
    v.extend([
        (Layout::C, Layout::F),
        (Layout::F, Layout::C),
        (Layout::JFirst, Layout::Strided),
        (Layout::Negative, Layout::JFirst),
        (Layout::F, Layout::FStridedNegative),
    ]);
    v
}

#[test]
fn copy_matches_input_for_every_layout_pair() {
    for domain in DOMAINS.iter().chain(&EDGE_DOMAINS) {
        for &li in &LAYOUTS {
            for &lo in &LAYOUTS {
                let inp = Store::filled(*domain, li, |i, j, k| noise(9, i, j, k));
                for t in [1, 2] {
                    let mut out = Store::new(*domain, lo);
                    let got = run("copy", &[&inp], &mut out, *domain, threads(t));
                    assert!(
                        bitwise_eq(&got, &inp.values()),
                        "{domain:?} {li:?}->{lo:?} t={t}"
                    );
                }
            }
        }
    }
}

#[test]
fn laplacian_matches_reference() {
    for domain in DOMAINS.iter().chain(&EDGE_DOMAINS) {
        for (li, lo) in layout_pairs() {
            let inp = lap_input(*domain, li);
            let want = laplacian_ref(&inp.values(), *domain);
            for t in [1, 2] {
                let mut out = Store::new(*domain, lo);
                let got = run("laplacian", &[&inp], &mut out, *domain, threads(t));
                assert!(
                    bitwise_eq(&got, &want),
                    "{domain:?} {li:?}->{lo:?} t={t}: max diff {}",
                    max_abs_diff(&got, &want)
                );
            }
        }
    }
}

#[test]
fn hdiff_matches_reference() {
    for domain in DOMAINS.iter().chain(&EDGE_DOMAINS) {
        for (li, lo) in layout_pairs() {
            let (inp, coeff) = hdiff_inputs(*domain, li);
            let want = hdiff_ref(&inp.values(), &coeff.values(), *domain);
            for t in [1, 2] {
                let mut out = Store::new(*domain, lo);
                let got = run("hdiff", &[&inp, &coeff], &mut out, *domain, threads(t));
                let diff = max_abs_diff(&got, &want);
                assert!(
                    diff <= 1e-13,
                    "{domain:?} {li:?}->{lo:?} t={t}: max diff {diff}"
                );
            }
        }
    }
}

#[test]
fn hdiff_limiter_is_exercised() {
    // The test data must hit both branches of the limiter, or the reference check proves little.
    let domain = DOMAINS[1];
    let (inp, _) = hdiff_inputs(domain, Layout::C);
    let v = inp.values();
    let lap = |i: usize, j: usize, k: usize| {
        4.0 * v[[i, j, k]]
            - (v[[i - 1, j, k]] + v[[i + 1, j, k]] + v[[i, j - 1, k]] + v[[i, j + 1, k]])
    };
    let (mut zeroed, mut kept) = (0, 0);
    for i in 2..domain[0] + 2 {
        for j in 2..domain[1] + 2 {
            let f = lap(i + 1, j, 0) - lap(i, j, 0);
            if f * (v[[i + 1, j, 0]] - v[[i, j, 0]]) > 0.0 {
                zeroed += 1
            } else {
                kept += 1
            }
        }
    }
    assert!(zeroed > 100 && kept > 100, "zeroed {zeroed} kept {kept}");
}

fn tridiag_inputs(domain: [usize; 3], layout: Layout) -> [Store; 4] {
    let nk = domain[2];
    // a at level 0 and c at the last level are not part of the system: NaN proves they are
    // not read.
    let a = Store::filled(domain, layout, |i, j, k| {
        if k == 0 {
            f64::NAN
        } else {
            noise(4, i, j, k)
        }
    });
    let b = Store::filled(domain, layout, |i, j, k| 3.0 + noise(5, i, j, k));
    let c = Store::filled(domain, layout, |i, j, k| {
        if k + 1 == nk {
            f64::NAN
        } else {
            noise(6, i, j, k)
        }
    });
    let d = Store::filled(domain, layout, |i, j, k| 10.0 * noise(7, i, j, k));
    [a, b, c, d]
}

/// Largest `|a x[k-1] + b x[k] + c x[k+1] - d|` over the domain.
fn residual(abcd: &[Store; 4], x: &Array3<f64>) -> f64 {
    let [a, b, c, d] = abcd.each_ref().map(|s| s.values());
    let (ni, nj, nk) = x.dim();
    let mut worst: f64 = 0.0;
    for i in 0..ni {
        for j in 0..nj {
            for k in 0..nk {
                let mut r = b[[i, j, k]] * x[[i, j, k]] - d[[i, j, k]];
                if k > 0 {
                    r += a[[i, j, k]] * x[[i, j, k - 1]];
                }
                if k + 1 < nk {
                    r += c[[i, j, k]] * x[[i, j, k + 1]];
                }
                worst = worst.max(if r.is_finite() {
                    r.abs()
                } else {
                    f64::INFINITY
                });
            }
        }
    }
    worst
}

#[test]
fn tridiag_solves_diagonally_dominant_systems() {
    for domain in DOMAINS.iter().chain(&EDGE_DOMAINS) {
        for (li, lo) in layout_pairs() {
            let abcd = tridiag_inputs(*domain, li);
            let want = {
                let [a, b, c, d] = abcd.each_ref().map(|s| s.values());
                tridiag_ref(&a, &b, &c, &d)
            };
            for t in [1, 2] {
                let mut x = Store::new(*domain, lo);
                let ins: Vec<&Store> = abcd.iter().collect();
                let got = run("tridiag", &ins, &mut x, *domain, threads(t));
                let res = residual(&abcd, &got);
                assert!(
                    res <= 1e-12,
                    "{domain:?} {li:?}->{lo:?} t={t}: residual {res}"
                );
                let diff = max_abs_diff(&got, &want);
                assert!(
                    diff <= 1e-12,
                    "{domain:?} {li:?}->{lo:?} t={t}: diff {diff}"
                );
            }
        }
    }
}

#[test]
fn tridiag_sweeps_several_slabs_per_task() {
    // Tall columns over a long unit-stride axis: the level-wise sweep (I or J unit stride) cuts
    // each task into several slabs of rows.
    let domain = [70, 24, 290];
    let mut first: Option<Array3<f64>> = None;
    for layout in [Layout::F, Layout::JFirst, Layout::C] {
        let abcd = tridiag_inputs(domain, layout);
        for t in [1, 2] {
            let mut x = Store::new(domain, layout);
            let ins: Vec<&Store> = abcd.iter().collect();
            let got = run("tridiag", &ins, &mut x, domain, threads(t));
            let res = residual(&abcd, &got);
            assert!(res <= 1e-12, "{layout:?} t={t}: residual {res}");
            match &first {
                None => first = Some(got),
                Some(f) => assert!(bitwise_eq(f, &got), "{layout:?} t={t}"),
            }
        }
    }
}

#[test]
fn results_do_not_depend_on_threads_or_layout() {
    let domain = [70, 66, 19];
    for name in ["laplacian", "hdiff", "tridiag", "copy"] {
        let mut first: Option<Array3<f64>> = None;
        for layout in LAYOUTS {
            let stores: Vec<Store> = match name {
                "laplacian" => vec![lap_input(domain, layout)],
                "copy" => vec![Store::filled(domain, layout, |i, j, k| noise(8, i, j, k))],
                "hdiff" => {
                    let (a, b) = hdiff_inputs(domain, layout);
                    vec![a, b]
                }
                _ => tridiag_inputs(domain, layout).into_iter().collect(),
            };
            let ins: Vec<&Store> = stores.iter().collect();
            for t in [1, 2, 3, 8] {
                let mut out = Store::new(domain, layout);
                let got = run(name, &ins, &mut out, domain, threads(t));
                match &first {
                    None => first = Some(got),
                    Some(f) => assert!(bitwise_eq(f, &got), "{name} {layout:?} threads {t}"),
                }
            }
        }
    }
}

#[test]
fn f32_kernels_agree_with_f64_reference() {
    let domain = [33, 30, 35];
    for layout in DENSE {
        let (inp, coeff) = hdiff_inputs(domain, layout);
        let want = hdiff_ref(&inp.values(), &coeff.values(), domain);
        let inp32 = inp.values().mapv(|v| v as f32);
        let coeff32 = coeff.values().mapv(|v| v as f32);
        let mut out32 = Array3::<f32>::zeros((domain[0], domain[1], domain[2]));
        kernels::hdiff(inp32.view(), coeff32.view(), out32.view_mut(), threads(2)).unwrap();
        let diff = max_abs_diff(&out32.mapv(f64::from), &want);
        assert!(diff < 1e-5, "hdiff f32 {layout:?}: {diff}");

        let inp = lap_input(domain, layout);
        let want = laplacian_ref(&inp.values(), domain);
        let inp32 = inp.values().mapv(|v| v as f32);
        kernels::laplacian(inp32.view(), out32.view_mut(), threads(2)).unwrap();
        let diff = max_abs_diff(&out32.mapv(f64::from), &want);
        assert!(diff < 1e-5, "laplacian f32 {layout:?}: {diff}");

        let abcd = tridiag_inputs(domain, layout);
        let [a, b, c, d] = abcd.each_ref().map(|s| s.values());
        let want = tridiag_ref(&a, &b, &c, &d);
        let [a, b, c, d] = [a, b, c, d].map(|v| v.mapv(|x| x as f32));
        kernels::tridiag(
            a.view(),
            b.view(),
            c.view(),
            d.view(),
            out32.view_mut(),
            threads(1),
        )
        .unwrap();
        let diff = max_abs_diff(&out32.mapv(f64::from), &want);
        assert!(diff < 1e-4, "tridiag f32 {layout:?}: {diff}");
    }
}

#[test]
fn typed_functions_and_generic_run_match_the_trait() {
    let domain = [9, 8, 7];
    let inp = lap_input(domain, Layout::F);
    let mut a = Array3::<f64>::zeros((9, 8, 7));
    let mut b = Array3::<f64>::zeros((9, 8, 7));
    kernels::laplacian(inp.view(), a.view_mut(), Threads::ONE).unwrap();
    kernels::run(
        &kernels::LaplacianKernel,
        &[inp.view()],
        &mut [b.view_mut()],
        domain,
        Threads::available(),
    )
    .unwrap();
    assert!(bitwise_eq(&a, &b));
    assert!(bitwise_eq(&a, &laplacian_ref(&inp.values(), domain)));
}

#[test]
fn empty_domains_are_a_no_op() {
    for domain in [[0, 5, 5], [5, 0, 5], [5, 5, 0]] {
        for kernel in kernels::all() {
            let ins: Vec<Array3<f64>> = kernel
                .fields()
                .iter()
                .filter(|f| !f.intent.is_output())
                .map(|f| {
                    let s = f.extent.widen(domain, f.name).unwrap();
                    Array3::zeros((s[0], s[1], s[2]))
                })
                .collect();
            let views: Vec<_> = ins.iter().map(|a| a.view()).collect();
            let mut out = Array3::<f64>::zeros((domain[0], domain[1], domain[2]));
            kernel
                .run(&views, &mut [out.view_mut()], domain, threads(2))
                .unwrap();
        }
    }
}

#[test]
fn mismatched_shapes_are_errors_naming_field_and_axis() {
    let domain = [8, 9, 4];
    let inp = Array3::<f64>::zeros((12, 13, 4));
    let coeff = Array3::<f64>::zeros((8, 9, 5));
    let mut out = Array3::<f64>::zeros((8, 9, 4));
    let err = kernels::HdiffKernel
        .run(
            &[inp.view(), coeff.view()],
            &mut [out.view_mut()],
            domain,
            Threads::ONE,
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"coeff\"") && err.contains("axis K") && err.contains('5'),
        "{err}"
    );
    // The input of laplacian needs 1 point of halo, not 2.
    let err = kernels::LaplacianKernel
        .run(&[inp.view()], &mut [out.view_mut()], domain, Threads::ONE)
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"inp\"") && err.contains("axis I"), "{err}");
    // Output not matching the domain.
    let inp = Array3::<f64>::zeros((10, 11, 4));
    let err = kernels::LaplacianKernel
        .run(
            &[inp.view()],
            &mut [out.view_mut()],
            [8, 9, 3],
            Threads::ONE,
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("axis K"), "{err}");
    assert_eq!(out.iter().filter(|&&v| v != 0.0).count(), 0);
    let err = kernels::TridiagKernel
        .run(&[out.view()], &mut [], domain, Threads::ONE)
        .unwrap_err()
        .to_string();
    assert!(err.contains("number of inputs"), "{err}");
}

#[test]
fn portable_and_simd_paths_agree_bitwise() {
    // Toggling is process-wide; the other tests stay correct either way, as this one checks.
    let domain = [45, 38, 21];
    let level = kernels::simd_level();
    for name in ["laplacian", "hdiff", "tridiag", "copy"] {
        for layout in [Layout::C, Layout::F, Layout::JFirst, Layout::Strided] {
            let stores: Vec<Store> = match name {
                "laplacian" => vec![lap_input(domain, layout)],
                "copy" => vec![Store::filled(domain, layout, |i, j, k| noise(8, i, j, k))],
                "hdiff" => {
                    let (a, b) = hdiff_inputs(domain, layout);
                    vec![a, b]
                }
                _ => tridiag_inputs(domain, layout).into_iter().collect(),
            };
            let ins: Vec<&Store> = stores.iter().collect();
            kernels::set_simd_enabled(false);
            assert_eq!(kernels::simd_level(), "portable");
            let portable = run(
                name,
                &ins,
                &mut Store::new(domain, layout),
                domain,
                threads(2),
            );
            kernels::set_simd_enabled(true);
            let best = run(
                name,
                &ins,
                &mut Store::new(domain, layout),
                domain,
                threads(2),
            );
            assert!(bitwise_eq(&portable, &best), "{name} {layout:?} ({level})");
        }
    }
}

#[test]
fn large_copies_stream_and_stay_inside_the_output() {
    // 2.2 million points (17 MB of f64) take the streaming-store path; the padded layout makes
    // rows start at every alignment.
    let domain = [131, 130, 129];
    for (li, lo) in [
        (Layout::C, Layout::Padded),
        (Layout::F, Layout::F),
        (Layout::Padded, Layout::C),
    ] {
        let inp = Store::filled(domain, li, |i, j, k| (i * 1_000_000 + j * 1000 + k) as f64);
        for t in [1, 2] {
            let mut out = Store::new(domain, lo);
            let got = run("copy", &[&inp], &mut out, domain, threads(t));
            assert!(bitwise_eq(&got, &inp.values()), "{li:?}->{lo:?} t={t}");
        }
    }
}

#[test]
#[should_panic(expected = "outside the view were written")]
fn canary_check_detects_a_stray_write() {
    let mut st = Store::new([4, 4, 4], Layout::Strided);
    st.backing[[1, 0, 0]] = 0.0;
    st.assert_border_intact("stray");
}

#[test]
fn test_layouts_have_the_strides_they_claim() {
    let shape = [5, 6, 7];
    let strides = |l: Layout| Store::new(shape, l).view().strides().to_vec();
    let unit = |st: &[isize]| st.iter().position(|&s| s.abs() == 1);
    assert_eq!(unit(&strides(Layout::C)), Some(2));
    assert_eq!(unit(&strides(Layout::F)), Some(0));
    assert_eq!(unit(&strides(Layout::JFirst)), Some(1));
    assert!(strides(Layout::Negative).iter().any(|&s| s < 0));
    assert!(strides(Layout::Strided).iter().all(|&s| s.abs() >= 2));
    let fsn = strides(Layout::FStridedNegative);
    assert!(fsn[0] == 2 && fsn[1] < 0, "{fsn:?}");
    let custom = strides(Layout::Custom {
        order: [1, 2, 0],
        step: [-2, 1, 2],
    });
    assert!(
        custom[0] == -2 && custom[1].abs() > custom[2].abs(),
        "{custom:?}"
    );
}
