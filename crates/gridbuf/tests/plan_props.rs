//! Properties of allocation plans over random shapes, dtypes, layouts, alignments and indices.

use gridbuf::allocation::preset;
use gridbuf::geometry::layout::axes_by_rank;
use gridbuf::{AlignedBuffer, Init, Plan, PlanRequest};
use proptest::prelude::*;
use std::collections::HashSet;

fn request() -> impl Strategy<Value = PlanRequest> {
    let presets = prop::sample::select(vec![
        "C",
        "F",
        "numpy",
        "gt:cpu_ifirst",
        "dace:cpu",
        "gt:gpu",
    ]);
    (0usize..=5)
        .prop_flat_map(move |ndim| {
            (
                prop::collection::vec(0usize..7, ndim),
                prop::sample::select(vec![1usize, 2, 4, 8, 16]),
                presets.clone(),
                prop::option::of(Just((0..ndim).collect::<Vec<_>>()).prop_shuffle()),
                prop::option::of(prop::sample::select(vec![1usize, 8, 32, 64, 128, 512])),
                prop::collection::vec(0usize..8, ndim),
            )
        })
        .prop_map(|(shape, itemsize, name, layout, alignment, ai)| {
            let aligned_index = shape.iter().zip(&ai).map(|(&n, &i)| i % (n + 1)).collect();
            let mut req = PlanRequest::new(
                shape.into(),
                itemsize,
                preset::lookup(name, "backend").unwrap(),
            );
            req.layout = layout.map(Into::into);
            req.alignment = alignment;
            req.aligned_index = Some(aligned_index);
            req
        })
}

/// Every index of `shape`, in C order.
fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for &n in shape {
        out = out
            .into_iter()
            .flat_map(|p| (0..n).map(move |i| [p.clone(), vec![i]].concat()))
            .collect();
    }
    out
}

proptest! {
    #[test]
    fn every_index_is_in_bounds_and_distinct(req in request()) {
        let plan = Plan::new(&req).unwrap();
        let mut seen = HashSet::new();
        for index in indices(&plan.shape) {
            let off = plan.element_offset(&index).unwrap();
            prop_assert!(off + plan.itemsize <= plan.nbytes, "{index:?} at {off} beyond {}", plan.nbytes);
            prop_assert!(seen.insert(off), "two indices share the address {off}");
        }
    }

    #[test]
    fn aligned_elements_are_aligned(req in request()) {
        let plan = Plan::new(&req).unwrap();
        let buffer = AlignedBuffer::new(plan.buffer_len(), plan.alignment, Init::Uninit).unwrap();
        let base = buffer.as_ptr() as usize + plan.byte_offset;
        let ai = &plan.aligned_index;
        let pos: usize = ai.iter().zip(&plan.strides).map(|(i, s)| i * s).sum();
        prop_assert_eq!((base + pos) % plan.alignment, 0);
        // Every row shares the alignment of its element at the aligned unit-stride index.
        if let Some(&unit) = axes_by_rank(&plan.layout).last() {
            for index in indices(&plan.shape) {
                let mut index = index;
                if plan.shape[unit] > ai[unit] {
                    index[unit] = ai[unit];
                    let off = plan.element_offset(&index).unwrap();
                    prop_assert_eq!((base + off) % plan.row_alignment.max(plan.itemsize).min(plan.alignment), 0);
                }
            }
        }
    }

    #[test]
    fn strides_follow_the_layout(req in request()) {
        let plan = Plan::new(&req).unwrap();
        let order = axes_by_rank(&plan.layout);
        for pair in order.windows(2) {
            prop_assert!(plan.strides[pair[0]] >= plan.strides[pair[1]] * plan.padded_shape[pair[1]]);
        }
        if let Some(&unit) = order.last() {
            prop_assert_eq!(plan.strides[unit], plan.itemsize);
        }
    }
}
