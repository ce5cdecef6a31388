//! Properties of the single metadata rules: dims, halo, origin and layout from strides.

use gridbuf::geometry::dims::{self, default_dims, next_data_dim, Dim};
use gridbuf::geometry::halo::{self, HaloEntry};
use gridbuf::geometry::layout::{self, axes_by_rank, validate_layout};
use gridbuf::geometry::origin;
use proptest::prelude::*;
use std::collections::HashSet;

fn dim() -> impl Strategy<Value = Dim> {
    prop_oneof![
        Just(Dim::I),
        Just(Dim::J),
        Just(Dim::K),
        (0u32..6).prop_map(Dim::Data),
    ]
}

proptest! {
    /// `dims::validate` accepts exactly the lists without a repeated name, of the asked length.
    #[test]
    fn dims_validate_is_distinct_and_length(
        dims in prop::collection::vec(dim(), 0..7),
        ndim in prop::option::of(0usize..7),
    ) {
        let distinct = dims.iter().collect::<HashSet<_>>().len() == dims.len();
        let length_ok = ndim.is_none_or(|n| n == dims.len());
        let result = dims::validate(&dims, ndim, "__gt_dims__");
        prop_assert_eq!(result.is_ok(), distinct && length_ok);
        if let Err(e) = result {
            let msg = e.to_string();
            prop_assert!(msg.starts_with("invalid __gt_dims__ ("), "{}", msg);
            if !distinct {
                prop_assert!(msg.contains("appears more than once"), "{}", msg);
            }
        }
    }

    /// Default dims are valid, and the next data dim is new and above every data dim.
    #[test]
    fn default_and_next_data_dims(ndim in 0usize..10, dims in prop::collection::vec(dim(), 0..7)) {
        let defaults = default_dims(ndim);
        prop_assert!(dims::validate(&defaults, Some(ndim), "dims").is_ok());
        prop_assert_eq!(next_data_dim(&defaults) as usize, ndim.saturating_sub(3));
        let next = next_data_dim(&dims);
        prop_assert!(!dims.contains(&Dim::Data(next)));
        for d in &dims {
            if let Dim::Data(n) = d {
                prop_assert!(*n < next);
            }
        }
        let mut extended: gridbuf::AxisVec<Dim> = dims.iter().copied().collect();
        dims::append_data_dims(&mut extended, 3);
        prop_assert_eq!(&extended[dims.len()..], &[Dim::Data(next), Dim::Data(next + 1), Dim::Data(next + 2)][..]);
    }

    /// A halo fits exactly when it has one pair per axis and each pair sums to at most the
    /// extent; the message names the parameter and the first axis that does not fit.
    #[test]
    fn halo_fits_per_axis(
        shape in prop::collection::vec(0usize..12, 0..5),
        pairs in prop::collection::vec((0usize..8, 0usize..8), 0..5),
    ) {
        let result = halo::check_fits(&shape, &pairs, None, "halo");
        let fits = pairs.len() == shape.len()
            && pairs.iter().zip(&shape).all(|(&(lo, hi), &n)| lo + hi <= n);
        prop_assert_eq!(result.is_ok(), fits);
        if let Err(e) = result {
            let msg = e.to_string();
            prop_assert!(msg.starts_with("invalid halo ("), "{}", msg);
            if pairs.len() == shape.len() {
                let axis = pairs.iter().zip(&shape).position(|(&(lo, hi), &n)| lo + hi > n).unwrap();
                let needle = format!("the halo of axis {axis} ");
                prop_assert!(msg.contains(&needle), "{}", msg);
            }
        }
    }

    /// Normalising widths and pairs gives the pairs they stand for, or an error for a negative
    /// width; the pairs then pass `check_fits` exactly when normalising succeeds.
    #[test]
    fn halo_normalize(
        shape in prop::collection::vec(0usize..12, 0..5),
        raw in prop::collection::vec((any::<bool>(), -2i64..8, -2i64..8), 0..5),
    ) {
        let entries: Vec<HaloEntry> = raw
            .iter()
            .map(|&(uniform, a, b)| if uniform { HaloEntry::Width(a) } else { HaloEntry::Pair(a, b) })
            .collect();
        let result = halo::normalize(&entries, &shape, None, "halo");
        let negative = raw.iter().any(|&(uniform, a, b)| a < 0 || (!uniform && b < 0));
        if negative {
            prop_assert!(result.is_err());
        } else {
            let pairs: Vec<(usize, usize)> = raw
                .iter()
                .map(|&(uniform, a, b)| if uniform { (a as usize, a as usize) } else { (a as usize, b as usize) })
                .collect();
            let fits = halo::check_fits(&shape, &pairs, None, "halo").is_ok();
            prop_assert_eq!(result.is_ok(), fits);
            if let Ok(normal) = result {
                prop_assert_eq!(&normal[..], &pairs[..]);
                prop_assert_eq!(&halo::lower(&normal)[..], &pairs.iter().map(|p| p.0).collect::<Vec<_>>()[..]);
            }
        }
    }

    /// An origin is valid exactly when it has one entry per axis, each in `0..=extent`.
    #[test]
    fn origin_in_range(
        shape in prop::collection::vec(0usize..9, 0..5),
        values in prop::collection::vec(-3i64..12, 0..5),
    ) {
        let ok = values.len() == shape.len()
            && values.iter().zip(&shape).all(|(&o, &n)| o >= 0 && o as usize <= n);
        let result = origin::validate(&values, &shape, "origin");
        prop_assert_eq!(result.is_ok(), ok);
        if let Ok(indices) = result {
            prop_assert!(origin::check(&indices, &shape, "origin").is_ok());
            prop_assert!(indices.iter().zip(&values).all(|(&i, &v)| i as i64 == v));
        }
    }

    /// The layout from strides is a permutation that ranks larger absolute strides outer, keeps
    /// index order among equal ones, and ignores signs.
    #[test]
    fn layout_from_strides_ranks_by_absolute_stride(
        strides in prop::collection::vec(-4isize..5, 0..7),
    ) {
        let map = layout::from_strides(&strides);
        prop_assert!(validate_layout(&map, strides.len()).is_ok());
        for a in 0..strides.len() {
            for b in 0..strides.len() {
                let (sa, sb) = (strides[a].unsigned_abs(), strides[b].unsigned_abs());
                if sa > sb || (sa == sb && a < b) {
                    prop_assert!(map[a] < map[b], "{:?} -> {:?}", strides, map);
                }
            }
        }
        let flipped: Vec<isize> = strides.iter().map(|s| -s).collect();
        prop_assert_eq!(layout::from_strides(&flipped), map);
    }

    /// The strides of a dense array laid out by a layout map give that map back.
    #[test]
    fn layout_from_dense_strides_round_trips(
        perm in (1usize..6).prop_flat_map(|n| Just((0..n).collect::<Vec<_>>()).prop_shuffle()),
        extents in prop::collection::vec(2usize..5, 6),
    ) {
        // Axis with rank r gets stride product of the extents of the inner ranks.
        let order = axes_by_rank(&perm);
        let mut strides = vec![0isize; perm.len()];
        let mut acc = 8isize;
        for &axis in order.iter().rev() {
            strides[axis] = acc;
            acc *= extents[axis] as isize;
        }
        prop_assert_eq!(&layout::from_strides(&strides)[..], &perm[..]);
    }
}
