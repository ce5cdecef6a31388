//! Properties of broadcasting by dims name, output-parameter inference and index-to-dims
//! mapping, checked against brute-force models written from GDP-3's rules.

use gridbuf::arrays::labelled::{
    broadcast, index, output_params, reduce, transpose_axes, Alignment, AxisRef, FieldInfo,
    IndexItem, Indexed, Operand,
};
use gridbuf::geometry::dims::Dim;
use gridbuf::geometry::layout::BaseLayout;
use proptest::prelude::*;

const UNIVERSE: [Dim; 5] = [Dim::I, Dim::J, Dim::K, Dim::Data(0), Dim::Data(1)];

/// Extents of the universe's dims, shared by every field of a case so that they broadcast.
fn extents() -> impl Strategy<Value = [usize; 5]> {
    [2usize..6, 2usize..6, 2usize..6, 1usize..4, 1usize..4]
}

/// A field over a random subset of the universe in random order, with some extents set to 1,
/// a random halo, layout, alignment and aligned index.
fn field_over(ext: [usize; 5]) -> impl Strategy<Value = FieldInfo> {
    (
        proptest::sample::subsequence((0..5).collect::<Vec<_>>(), 0..=4),
        any::<u64>(),
    )
        .prop_map(move |(subset, seed)| {
            let mut rng = seed;
            let mut next = |m: usize| {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((rng >> 33) as usize) % m.max(1)
            };
            let mut axes = subset;
            for i in (1..axes.len()).rev() {
                axes.swap(i, next(i + 1));
            }
            let dims: Vec<Dim> = axes.iter().map(|&u| UNIVERSE[u]).collect();
            let shape: Vec<usize> = axes
                .iter()
                .map(|&u| if next(4) == 0 { 1 } else { ext[u] })
                .collect();
            let halo: Vec<(usize, usize)> = shape
                .iter()
                .map(|&n| {
                    let lo = next(n + 1);
                    (lo, next(n - lo + 1))
                })
                .collect();
            let mut layout: Vec<usize> = (0..dims.len()).collect();
            for i in (1..layout.len()).rev() {
                layout.swap(i, next(i + 1));
            }
            let alignment = 1 << next(8);
            let aligned_index: Vec<usize> = shape.iter().map(|&n| next(n + 1)).collect();
            let base = [
                BaseLayout::C,
                BaseLayout::F,
                BaseLayout::Semantic([2, 1, 0]),
                BaseLayout::Semantic([0, 1, 2]),
            ][next(4)];
            FieldInfo::new(dims, shape)
                .unwrap()
                .with_halo(halo)
                .unwrap()
                .with_storage(layout, base, alignment, aligned_index)
                .unwrap()
        })
}

fn case() -> impl Strategy<Value = Vec<FieldInfo>> {
    extents().prop_flat_map(|ext| {
        proptest::collection::vec(field_over(ext), 1..4)
            .prop_filter("one field has a dim", |fs| fs.iter().any(|f| f.ndim() > 0))
    })
}

/// Applies an alignment to a field's (dims, shape) and returns, per result axis, the dim that
/// lands there (None for an inserted axis of length 1) and the shape.
fn apply(f: &FieldInfo, a: &Alignment, ndim: usize) -> (Vec<Option<Dim>>, Vec<usize>) {
    let perm: Vec<usize> = a
        .transpose
        .clone()
        .unwrap_or_else(|| (0..f.ndim()).collect());
    let mut seen = perm.clone();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..f.ndim()).collect::<Vec<_>>(),
        "transpose is a permutation"
    );
    let labels: Vec<(Dim, usize)> = perm.iter().map(|&ax| (f.dims[ax], f.shape[ax])).collect();
    let shape = a
        .reshape
        .clone()
        .unwrap_or_else(|| labels.iter().map(|&(_, n)| n).collect());
    assert_eq!(shape.len(), ndim);
    // A reshape that only inserts or removes ones keeps the non-1 axes in order.
    let kept: Vec<(Dim, usize)> = labels.iter().copied().filter(|&(_, n)| n != 1).collect();
    let mut kept = kept.into_iter();
    let mut out = Vec::with_capacity(ndim);
    for &n in &shape {
        if n == 1 {
            out.push(None);
        } else {
            let (d, m) = kept.next().expect("no more non-1 axes");
            assert_eq!(m, n);
            out.push(Some(d));
        }
    }
    assert!(kept.next().is_none(), "a non-1 axis was dropped");
    (out, shape)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn broadcast_lines_up_by_name(fields in case()) {
        let ops: Vec<Operand> = fields.iter().cloned().map(Operand::Field).collect();
        let b = broadcast(&ops, None).unwrap();
        // Dims: all agree -> that order; else the canonical union.
        let mut union: Vec<Dim> = fields.iter().flat_map(|f| f.dims.clone()).collect();
        union.sort();
        union.dedup();
        if fields.iter().all(|f| f.dims == fields[0].dims) {
            prop_assert_eq!(&b.dims, &fields[0].dims);
        } else {
            prop_assert_eq!(&b.dims, &union);
        }
        // Shape: per dim the one length other than 1, else 1.
        for (p, d) in b.dims.iter().enumerate() {
            let longest = fields
                .iter()
                .flat_map(|f| f.dims.iter().zip(&f.shape))
                .filter(|(x, _)| *x == d)
                .map(|(_, &n)| n)
                .max()
                .unwrap();
            prop_assert_eq!(b.shape[p], longest);
        }
        for (f, a) in fields.iter().zip(&b.operands) {
            let (labels, shape) = apply(f, a, b.dims.len());
            for p in 0..b.dims.len() {
                prop_assert!(shape[p] == 1 || shape[p] == b.shape[p]);
                if let Some(d) = labels[p] {
                    prop_assert_eq!(d, b.dims[p], "axis lands on the dim of its name");
                }
            }
        }
    }

    #[test]
    fn output_params_follow_gdp3(fields in case()) {
        let ops: Vec<Operand> = fields.iter().cloned().map(Operand::Field).collect();
        let b = broadcast(&ops, None).unwrap();
        let p = output_params(&ops, &b.dims, &b.shape).unwrap().unwrap();
        let first = &fields[0];
        // Layout: a permutation in which the first field's dims keep their order.
        let mut ranks = p.layout.clone();
        ranks.sort_unstable();
        prop_assert_eq!(ranks, (0..b.dims.len()).collect::<Vec<_>>());
        for a1 in 0..first.ndim() {
            for a2 in 0..first.ndim() {
                let q1 = b.dims.iter().position(|&d| d == first.dims[a1]).unwrap();
                let q2 = b.dims.iter().position(|&d| d == first.dims[a2]).unwrap();
                prop_assert_eq!(first.layout[a1] < first.layout[a2], p.layout[q1] < p.layout[q2]);
            }
        }
        // Alignment: the least common multiple (powers of two here: the largest).
        prop_assert_eq!(p.alignment, fields.iter().map(|f| f.alignment).max().unwrap());
        // Per dim, over the fields that have it at the result's length: the largest aligned
        // index, and a domain that is the intersection of theirs.
        for (q, (&d, &n)) in b.dims.iter().zip(&b.shape).enumerate() {
            let mut domain: Vec<bool> = vec![true; n];
            let mut ai = 0;
            for f in &fields {
                if let Some(a) = f.dims.iter().position(|&x| x == d) {
                    if f.shape[a] == n {
                        ai = ai.max(f.aligned_index[a]);
                        let (lo, hi) = f.halo[a];
                        for (i, inside) in domain.iter_mut().enumerate() {
                            *inside &= i >= lo && i < n - hi;
                        }
                    }
                }
            }
            prop_assert_eq!(p.aligned_index[q], ai);
            let (lo, hi) = p.halo[q];
            prop_assert!(lo + hi <= n);
            let got: Vec<bool> = (0..n).map(|i| i >= lo && i < n - hi).collect();
            prop_assert_eq!(got, domain);
        }
    }

    #[test]
    fn mismatched_lengths_are_errors(ext in extents(), d in 0usize..3, extra in 1usize..4) {
        let dim = UNIVERSE[d];
        let a = FieldInfo::new(vec![dim], vec![ext[d]]).unwrap();
        let b = FieldInfo::new(vec![dim], vec![ext[d] + extra]).unwrap();
        let err = broadcast(&[Operand::Field(a), Operand::Field(b)], None).unwrap_err().to_string();
        let name = format!("'{dim}'");
        prop_assert!(err.contains(&name));
    }

    #[test]
    fn out_fields_replicate_extra_dims(fields in case()) {
        let ops: Vec<Operand> = fields.iter().cloned().map(Operand::Field).collect();
        let b = broadcast(&ops, None).unwrap();
        // An out over every universe dim (reversed order) takes any broadcast of the fields.
        let mut dims = b.dims.clone();
        let mut shape = b.shape.clone();
        for &u in &UNIVERSE {
            if !dims.contains(&u) {
                dims.push(u);
                shape.push(3);
            }
        }
        dims.reverse();
        shape.reverse();
        let out = Operand::Field(FieldInfo::new(dims.clone(), shape.clone()).unwrap());
        let bo = broadcast(&ops, Some(&out)).unwrap();
        prop_assert_eq!(&bo.dims, &dims);
        for (f, a) in fields.iter().zip(&bo.operands) {
            let (labels, got) = apply(f, a, dims.len());
            for q in 0..dims.len() {
                prop_assert!(got[q] == 1 || got[q] == shape[q]);
                if let Some(d) = labels[q] {
                    prop_assert_eq!(d, dims[q]);
                }
            }
        }
    }

    #[test]
    fn reductions_keep_the_order_of_what_remains(
        f in extents().prop_flat_map(field_over),
        pick in any::<u8>(),
        keepdims in any::<bool>(),
    ) {
        let axes: Vec<AxisRef> = (0..f.ndim())
            .filter(|a| pick >> a & 1 == 1)
            .map(|a| if a % 2 == 0 { AxisRef::Name(f.dims[a]) } else { AxisRef::Index(a as isize) })
            .collect();
        let r = reduce(&f, Some(&axes), keepdims).unwrap();
        let kept: Vec<usize> = (0..f.ndim()).filter(|a| keepdims || !r.axes.contains(a)).collect();
        prop_assert_eq!(r.params.dims.len(), kept.len());
        for (i, &a) in kept.iter().enumerate() {
            prop_assert_eq!(r.params.dims[i], f.dims[a]);
            for (j, &b) in kept.iter().enumerate() {
                prop_assert_eq!(r.params.layout[i] < r.params.layout[j], f.layout[a] < f.layout[b]);
            }
        }
    }

    #[test]
    fn transposition_by_names(f in extents().prop_flat_map(field_over), seed in any::<u64>()) {
        let mut perm: Vec<usize> = (0..f.ndim()).collect();
        let mut s = seed;
        for i in (1..perm.len()).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
            perm.swap(i, (s >> 33) as usize % (i + 1));
        }
        let names: Vec<AxisRef> = perm.iter().map(|&a| AxisRef::Name(f.dims[a])).collect();
        if f.ndim() > 0 {
            prop_assert_eq!(transpose_axes(&f.dims, &names).unwrap(), perm);
        }
    }

    #[test]
    fn slice_views_keep_the_halo_of_their_elements(
        n in 0usize..12,
        lo in 0usize..6,
        hi in 0usize..6,
        start in proptest::option::of(-14isize..14),
        stop in proptest::option::of(-14isize..14),
        step in proptest::option::of(prop_oneof![-4isize..0, 1isize..5]),
    ) {
        prop_assume!(lo + hi <= n);
        let key = [IndexItem::Slice { start, stop, step }];
        let r = index(&[Dim::I], &[n], &[(lo, hi)], &[lo], &key).unwrap();
        let Indexed::View(v) = r else { panic!("a slice gives a view") };
        // Model: the selected base indices, by Python's slice semantics.
        let st = step.unwrap_or(1);
        let n_i = n as isize;
        let norm = |x: isize, lower: isize, upper: isize| {
            if x < 0 { (x + n_i).max(lower) } else { x.min(upper) }
        };
        let (lower, upper) = if st > 0 { (0, n_i) } else { (-1, n_i - 1) };
        let s0 = start.map_or(if st > 0 { lower } else { upper }, |x| norm(x, lower, upper));
        let s1 = stop.map_or(if st > 0 { upper } else { lower }, |x| norm(x, lower, upper));
        let mut picked = Vec::new();
        let mut i = s0;
        while (st > 0 && i < s1) || (st < 0 && i > s1) {
            picked.push(i as usize);
            i += st;
        }
        prop_assert_eq!(v.shape[0], picked.len());
        let inside: Vec<bool> = picked.iter().map(|&x| x >= lo && x < n - hi).collect();
        let (vlo, vhi) = v.halo[0];
        prop_assert!(vlo + vhi <= picked.len());
        if inside.iter().any(|&b| b) {
            let want: Vec<bool> = (0..picked.len()).map(|i| i >= vlo && i < picked.len() - vhi).collect();
            prop_assert_eq!(want, inside);
        } else {
            prop_assert_eq!(vlo + vhi, picked.len());
        }
    }
}
