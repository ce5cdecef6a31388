//! Properties of the kernels over random small domains and random memory layouts (axis order,
//! steps, negative strides, padding): results equal the naive references bit for bit, nothing
//! outside the output view is written, and the thread count does not change a single bit.

mod kernels_support;

use gridbuf::kernels::{self, Threads};
use kernels_support::*;
use ndarray::Array3;
use proptest::prelude::*;

fn layout() -> impl Strategy<Value = Layout> {
    let named = prop::sample::select(LAYOUTS.to_vec());
    let custom = (
        Just(vec![0usize, 1, 2]).prop_shuffle(),
        prop::collection::vec(prop::sample::select(vec![1isize, -1, 2, -2]), 3),
    )
        .prop_map(|(o, s)| Layout::Custom {
            order: [o[0], o[1], o[2]],
            step: [s[0], s[1], s[2]],
        });
    prop_oneof![named, custom]
}

fn domain() -> impl Strategy<Value = [usize; 3]> {
    (1usize..12, 1usize..12, 1usize..9).prop_map(|(i, j, k)| [i, j, k])
}

fn run(
    name: &str,
    ins: &[&Store],
    out_layout: Layout,
    domain: [usize; 3],
    threads: usize,
) -> Array3<f64> {
    let mut out = Store::new(domain, out_layout);
    let views: Vec<_> = ins.iter().map(|s| s.view()).collect();
    kernels::by_name(name)
        .unwrap()
        .run(
            &views,
            &mut [out.view_mut()],
            domain,
            Threads::new(threads).unwrap(),
        )
        .unwrap();
    out.assert_border_intact(name);
    out.values()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn copy_reproduces_input(
        domain in domain(),
        li in layout(),
        lo in layout(),
        threads in 1usize..4,
        seed in any::<u64>(),
    ) {
        let inp = Store::filled(domain, li, |i, j, k| noise(seed, i, j, k));
        let got = run("copy", &[&inp], lo, domain, threads);
        prop_assert!(bitwise_eq(&got, &inp.values()));
    }

    #[test]
    fn laplacian_equals_reference(
        domain in domain(),
        li in layout(),
        lo in layout(),
        threads in 1usize..4,
        seed in any::<u64>(),
    ) {
        let inp = Store::filled(widen(domain, 1), li, |i, j, k| noise(seed, i, j, k));
        let got = run("laplacian", &[&inp], lo, domain, threads);
        prop_assert!(bitwise_eq(&got, &laplacian_ref(&inp.values(), domain)));
    }

    #[test]
    fn hdiff_equals_reference(
        domain in domain(),
        li in layout(),
        lo in layout(),
        threads in 1usize..4,
        seed in any::<u64>(),
    ) {
        let inp = Store::filled(widen(domain, 2), li, |i, j, k| noise(seed, i, j, k));
        let coeff = Store::filled(domain, lo, |i, j, k| 0.05 * noise(seed ^ 1, i, j, k).abs());
        let got = run("hdiff", &[&inp, &coeff], lo, domain, threads);
        let want = hdiff_ref(&inp.values(), &coeff.values(), domain);
        prop_assert!(max_abs_diff(&got, &want) <= 1e-13);
    }

    #[test]
    fn tridiag_equals_reference(
        domain in domain(),
        layouts in prop::collection::vec(layout(), 5),
        threads in 1usize..4,
        seed in any::<u64>(),
    ) {
        let field = |n: u64, l: Layout, shift: f64| {
            Store::filled(domain, l, move |i, j, k| shift + noise(seed ^ n, i, j, k))
        };
        let (a, b, c, d) = (
            field(1, layouts[0], 0.0),
            field(2, layouts[1], 3.0),
            field(3, layouts[2], 0.0),
            field(4, layouts[3], 0.0),
        );
        let got = run("tridiag", &[&a, &b, &c, &d], layouts[4], domain, threads);
        let want = tridiag_ref(&a.values(), &b.values(), &c.values(), &d.values());
        prop_assert!(max_abs_diff(&got, &want) <= 1e-12);
    }
}
