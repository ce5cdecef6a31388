//! Unit tests of the labelled-field rules.

use super::storage::lcm_of;
use super::*;
use crate::geometry::dims::parse_dims_str;

fn field(dims: &str, shape: &[usize]) -> FieldInfo {
    FieldInfo::new(parse_dims_str(dims).unwrap(), shape.to_vec()).unwrap()
}

fn f(info: FieldInfo) -> Operand {
    Operand::Field(info)
}

fn d(s: &str) -> Vec<Dim> {
    parse_dims_str(s).unwrap()
}

#[test]
fn issue_example_broadcasts_by_name() {
    let ifirst = BaseLayout::Semantic([2, 1, 0]);
    let t = field("IJK", &[64, 64, 80])
        .with_halo(vec![(3, 3), (3, 3), (0, 0)])
        .unwrap()
        .with_storage(vec![2, 1, 0], ifirst, 1, vec![3, 3, 0])
        .unwrap();
    let p = field("K", &[80]);
    let s = field("IJ", &[64, 64]);
    // p * s: K * IJ -> IJK (the dims disagree, so the union in canonical order).
    let ops = [f(p.clone()), f(s.clone())];
    let b = broadcast(&ops, None).unwrap();
    assert_eq!(
        (b.dims.clone(), b.shape.clone()),
        (d("IJK"), vec![64, 64, 80])
    );
    assert_eq!(b.operands[0].reshape, Some(vec![1, 1, 80]));
    assert_eq!(b.operands[1].reshape, Some(vec![64, 64, 1]));
    let ps = output_params(&ops, &b.dims, &b.shape).unwrap().unwrap();
    assert_eq!(ps.layout, vec![0, 1, 2]);
    // t + (p * s): laid out as t, with t's halo and aligned index.
    let ops = [f(t), f(FieldInfo::from(&ps))];
    let b = broadcast(&ops, None).unwrap();
    let out = output_params(&ops, &b.dims, &b.shape).unwrap().unwrap();
    assert_eq!(out.layout, vec![2, 1, 0]);
    assert_eq!(out.halo, vec![(3, 3), (3, 3), (0, 0)]);
    assert_eq!(out.aligned_index, vec![3, 3, 0]);
    assert!(b.operands.iter().all(Transpose::is_identity));
}

#[test]
fn agreeing_dims_keep_their_order() {
    let ops = [f(field("KJI", &[2, 3, 4])), f(field("KJI", &[1, 3, 4]))];
    let b = broadcast(&ops, None).unwrap();
    assert_eq!(b.dims, d("KJI"));
    assert_eq!(b.shape, vec![2, 3, 4]);
    let ops = [f(field("KJI", &[2, 3, 4])), f(field("IJK", &[4, 3, 2]))];
    let b = broadcast(&ops, None).unwrap();
    assert_eq!(b.dims, d("IJK"));
    assert_eq!(b.operands[0].transpose, Some(vec![2, 1, 0]));
    assert!(b.operands[1].is_identity());
    // The layout of the first field is kept by name: K (its axis 0) has the largest stride
    // in C order, so it keeps it in the IJK result.
    let p = output_params(&ops, &b.dims, &b.shape).unwrap().unwrap();
    assert_eq!(stride_order(&p.dims, &p.layout), d("KJI"));
}

#[test]
fn length_one_counts_as_absent() {
    let ops = [f(field("IJK", &[4, 5, 1])), f(field("K", &[6]))];
    let b = broadcast(&ops, None).unwrap();
    assert_eq!(b.shape, vec![4, 5, 6]);
    // A dim of length 1 nobody else has stays with length 1.
    let ops = [f(field("IJK", &[4, 5, 1])), f(field("IJ", &[4, 5]))];
    assert_eq!(broadcast(&ops, None).unwrap().shape, vec![4, 5, 1]);
    // And drops out when lined up with an out= that lacks it.
    let out = f(field("IJ", &[4, 5]));
    let b = broadcast(&[f(field("IJK", &[4, 5, 1]))], Some(&out)).unwrap();
    assert_eq!(b.operands[0].reshape, Some(vec![4, 5]));
}

#[test]
fn mismatched_lengths_name_both_operands() {
    let ops = [f(field("IJK", &[4, 5, 6])), f(field("K", &[7]))];
    let msg = broadcast(&ops, None).unwrap_err().to_string();
    for part in ["('I', 'J', 'K')", "(4, 5, 6)", "('K',)", "(7,)", "'K'"] {
        assert!(msg.contains(part), "{msg}");
    }
}

#[test]
fn plain_arrays() {
    let t = f(field("IJK", &[4, 5, 6]));
    let ok = |shape: &[usize]| broadcast(&[t.clone(), Operand::Array(shape.to_vec())], None);
    assert!(ok(&[4, 5, 6]).unwrap().operands[1].is_identity());
    assert!(ok(&[4, 1, 6]).is_ok());
    assert!(ok(&[1]).is_ok());
    assert!(ok(&[6]).is_err());
    assert!(ok(&[4, 5]).is_err());
    // 3-D arrays are read as IJK when the result is not 3-D.
    let ij = f(field("JI", &[5, 4]));
    let b = broadcast(&[ij.clone(), Operand::Array(vec![4, 5, 1])], None).unwrap();
    assert_eq!(b.operands[1].transpose, Some(vec![1, 0, 2]));
    assert_eq!(b.operands[1].reshape, Some(vec![5, 4]));
    assert!(broadcast(&[ij, Operand::Array(vec![4, 5, 3])], None).is_err());
    let msg = ok(&[6]).unwrap_err().to_string();
    assert!(
        msg.contains("(6,)") && msg.contains("('I', 'J', 'K')"),
        "{msg}"
    );
}

#[test]
fn out_fields() {
    let out = f(field("IJK", &[4, 5, 6]));
    let b = broadcast(&[f(field("JI", &[5, 4]))], Some(&out)).unwrap();
    assert_eq!(b.operands[0].transpose, Some(vec![1, 0]));
    assert_eq!(b.operands[0].reshape, Some(vec![4, 5, 1]));
    let small = f(field("IJ", &[4, 5]));
    let msg = broadcast(&[f(field("IJK", &[4, 5, 6]))], Some(&small))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("fewer dims") && msg.contains("'K'"), "{msg}");
    let plain = Operand::Array(vec![4, 5]);
    assert!(broadcast(&[f(field("IJ", &[4, 5]))], Some(&plain)).is_ok());
    assert!(broadcast(
        &[f(field("IJ", &[4, 5]))],
        Some(&Operand::Array(vec![5, 4]))
    )
    .is_err());
}

#[test]
fn assignments_broadcast_into_the_target() {
    let a = assign(&f(field("K", &[6])), &d("IJK"), &[4, 5, 6]).unwrap();
    assert_eq!(a.reshape, Some(vec![1, 1, 6]));
    let msg = assign(&f(field("K", &[6])), &d("IJ"), &[4, 5])
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with("invalid value") && msg.contains("'K'") && msg.contains("('I', 'J')"),
        "{msg}"
    );
    assert!(assign(&Operand::Array(vec![4, 5]), &d("IJ"), &[4, 5])
        .unwrap()
        .is_identity());
    assert!(assign(&Operand::Scalar, &d("IJ"), &[4, 5])
        .unwrap()
        .is_identity());
}

#[test]
fn output_parameters_follow_gdp3() {
    let a = field("IJK", &[10, 10, 5])
        .with_halo(vec![(2, 1), (0, 0), (0, 0)])
        .unwrap()
        .with_storage(vec![0, 1, 2], BaseLayout::C, 16, vec![4, 0, 0])
        .unwrap();
    let b = field("IJ", &[10, 10])
        .with_halo(vec![(1, 3), (2, 2)])
        .unwrap()
        .with_storage(vec![1, 0], BaseLayout::F, 32, vec![1, 2])
        .unwrap();
    let ops = [f(a), f(b)];
    let bc = broadcast(&ops, None).unwrap();
    let p = output_params(&ops, &bc.dims, &bc.shape).unwrap().unwrap();
    assert_eq!(p.alignment, 32);
    assert_eq!(p.aligned_index, vec![4, 2, 0]);
    assert_eq!(p.halo, vec![(2, 3), (2, 2), (0, 0)]);
    assert_eq!(p.layout, vec![0, 1, 2]);
    assert_eq!(p.source, 0);
    // Disjoint domains give an empty domain at the largest lower halo.
    let x = field("I", &[10]).with_halo(vec![(6, 0)]).unwrap();
    let y = field("I", &[10]).with_halo(vec![(0, 6)]).unwrap();
    let ops = [f(x), f(y)];
    let p = output_params(&ops, &d("I"), &[10]).unwrap().unwrap();
    assert_eq!(p.halo, vec![(6, 4)]);
    assert_eq!(lcm_of([4, 6]).unwrap(), 12);
}

#[test]
fn inherited_layout_places_missing_dims_by_the_base() {
    // A K field of a semantic preset places I and J as its preset would.
    let k = field("K", &[6])
        .with_storage(vec![0], BaseLayout::Semantic([2, 1, 0]), 1, vec![0])
        .unwrap();
    assert_eq!(inherit_layout(&k, &d("IJK"))[..], [2, 1, 0]);
    // An explicit layout keeps its own order for its dims.
    let ik = field("IK", &[4, 6])
        .with_storage(vec![1, 0], BaseLayout::C, 1, vec![0, 0])
        .unwrap();
    assert_eq!(
        stride_order(&d("IJK"), &inherit_layout(&ik, &d("IJK"))),
        d("KJI")
    );
    // Fortran-ordered strides give a Fortran base.
    let fo = field("IJ", &[4, 5]).with_strides(&[8, 32]).unwrap();
    assert_eq!(fo.base, BaseLayout::F);
    assert_eq!(inherit_layout(&fo, &d("IJK"))[..], [2, 1, 0]);
}

#[test]
fn reductions_drop_dims() {
    let t = field("IJK", &[4, 5, 6])
        .with_halo(vec![(1, 1), (2, 2), (0, 0)])
        .unwrap()
        .with_storage(
            vec![2, 1, 0],
            BaseLayout::Semantic([2, 1, 0]),
            8,
            vec![1, 2, 0],
        )
        .unwrap();
    let r = reduce(&t, Some(&[AxisRef::Index(2)]), false).unwrap();
    assert_eq!(r.axes, vec![2]);
    assert_eq!(r.params.dims, d("IJ"));
    assert_eq!(r.params.layout, vec![1, 0]);
    assert_eq!(r.params.halo, vec![(1, 1), (2, 2)]);
    let r = reduce(&t, Some(&[AxisRef::Name(Dim::I)]), true).unwrap();
    assert_eq!(r.params.shape, vec![1, 5, 6]);
    assert_eq!(r.params.halo[0], (0, 0));
    let r = reduce(&t, None, false).unwrap();
    assert!(r.params.dims.is_empty());
    let msg = reduce(&t, Some(&[AxisRef::Index(3)]), false)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("('I', 'J', 'K')"), "{msg}");
    assert!(reduce(&t, Some(&[AxisRef::Name(Dim::Data(0))]), false).is_err());
    assert!(reduce(
        &t,
        Some(&[AxisRef::Index(-1), AxisRef::Name(Dim::K)]),
        false
    )
    .is_err());
}

#[test]
fn transpositions() {
    let dims = d("IJK");
    let names = [
        AxisRef::Name(Dim::K),
        AxisRef::Name(Dim::J),
        AxisRef::Name(Dim::I),
    ];
    assert_eq!(transpose_axes(&dims, &names).unwrap(), vec![2, 1, 0]);
    assert_eq!(transpose_axes(&dims, &[]).unwrap(), vec![2, 1, 0]);
    let msg = transpose_axes(
        &dims,
        &[
            AxisRef::Name(Dim::K),
            AxisRef::Name(Dim::Data(0)),
            AxisRef::Name(Dim::I),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        msg.contains("'0'") && msg.contains("('I', 'J', 'K')"),
        "{msg}"
    );
    assert!(transpose_axes(&dims, &names[..2]).is_err());
}

#[test]
fn concatenation_along_a_named_dim() {
    let a = field("IJK", &[4, 5, 6])
        .with_halo(vec![(1, 1), (0, 0), (2, 0)])
        .unwrap();
    let b = field("KJI", &[3, 5, 4])
        .with_halo(vec![(0, 1), (0, 0), (1, 1)])
        .unwrap();
    let c = concatenate(&[f(a), f(b)], AxisRef::Name(Dim::K)).unwrap();
    assert_eq!(c.axis, 2);
    assert_eq!(c.params.shape, vec![4, 5, 9]);
    assert_eq!(c.operands[1].transpose, Some(vec![2, 1, 0]));
    assert_eq!(c.params.halo, vec![(1, 1), (0, 0), (2, 1)]);
    let bad = concatenate(
        &[f(field("IJ", &[4, 5])), f(field("IJ", &[3, 6]))],
        AxisRef::Index(0),
    );
    assert!(bad.unwrap_err().to_string().contains("'J'"));
    assert!(concatenate(
        &[f(field("IJ", &[4, 5])), f(field("IK", &[3, 5]))],
        AxisRef::Index(0)
    )
    .is_err());
}

#[test]
fn index_to_dims() {
    let dims = d("IJK");
    let shape = [10, 8, 6];
    let halo = [(3, 3), (2, 2), (0, 0)];
    let origin = [3, 2, 0];
    let full = IndexItem::Slice {
        start: None,
        stop: None,
        step: None,
    };
    let r = index(
        &dims,
        &shape,
        &halo,
        &origin,
        &[IndexItem::Int(5), IndexItem::Int(7), full],
    )
    .unwrap();
    let Indexed::View(v) = r else { panic!() };
    assert_eq!((v.dims, v.shape, v.axes), (d("K"), vec![6], vec![Some(2)]));
    let r = index(
        &dims,
        &shape,
        &halo,
        &origin,
        &[IndexItem::Ellipsis, IndexItem::Int(0)],
    )
    .unwrap();
    let Indexed::View(v) = r else { panic!() };
    assert_eq!(v.dims, d("IJ"));
    assert_eq!(v.halo, vec![(3, 3), (2, 2)]);
    let sl = IndexItem::Slice {
        start: Some(2),
        stop: Some(-2),
        step: None,
    };
    let Indexed::View(v) = index(&dims, &shape, &halo, &origin, &[sl]).unwrap() else {
        panic!()
    };
    assert_eq!((v.shape[0], v.halo[0], v.origin[0]), (6, (1, 1), 1));
    let rev = IndexItem::Slice {
        start: None,
        stop: None,
        step: Some(-1),
    };
    let Indexed::View(v) =
        index(&dims, &shape, &[(1, 3), (0, 0), (0, 0)], &origin, &[rev]).unwrap()
    else {
        panic!()
    };
    assert_eq!(v.halo[0], (3, 1));
    let ints = [IndexItem::Int(0), IndexItem::Int(0), IndexItem::Int(-6)];
    assert_eq!(
        index(&dims, &shape, &halo, &origin, &ints).unwrap(),
        Indexed::Element
    );
    assert_eq!(
        index(&dims, &shape, &halo, &origin, &[IndexItem::Advanced]).unwrap(),
        Indexed::Advanced
    );
    let new = [
        IndexItem::NewAxis,
        IndexItem::Int(1),
        IndexItem::Ellipsis,
        IndexItem::NewAxis,
    ];
    let Indexed::View(v) = index(&dims, &shape, &halo, &origin, &new).unwrap() else {
        panic!()
    };
    assert_eq!(v.dims, vec![Dim::Data(0), Dim::J, Dim::K, Dim::Data(1)]);
    assert_eq!((v.shape, v.axes[0]), (vec![1, 8, 6, 1], None));
    assert!(index(&dims, &shape, &halo, &origin, &[IndexItem::Int(10)]).is_err());
    assert!(index(&dims, &shape, &halo, &origin, &[full, full, full, full]).is_err());
}

#[test]
fn slices_resolve_as_python() {
    assert_eq!(resolve_slice(None, None, None, 5).unwrap(), (0, 1, 5));
    assert_eq!(resolve_slice(Some(-2), None, None, 5).unwrap(), (3, 1, 2));
    assert_eq!(resolve_slice(None, None, Some(-2), 5).unwrap(), (4, -2, 3));
    assert_eq!(
        resolve_slice(Some(10), Some(-10), Some(-1), 5).unwrap(),
        (4, -1, 5)
    );
    assert_eq!(
        resolve_slice(Some(isize::MIN), Some(isize::MAX), Some(3), 7).unwrap(),
        (0, 3, 3)
    );
    assert!(resolve_slice(None, None, Some(0), 5).is_err());
}
