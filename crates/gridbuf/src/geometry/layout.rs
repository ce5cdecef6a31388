//! Layout maps: which axis gets which stride rank.
//!
//! `layout[i] = j` means axis `i` is axis `j` of a C-ordered buffer, so the axis with the highest
//! `j` has unit stride and the axis with `j = 0` the largest stride.

use crate::error::{Error, Result};
use crate::geometry::axes::AxisVec;
use crate::geometry::dims::Dim;

/// How a preset orders the axes of an allocation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BaseLayout {
    /// A permutation over the Cartesian dims `(I, J, K)`; data dims go outermost, in order.
    Semantic([u8; 3]),
    /// Index order regardless of dims: the last axis has unit stride (NumPy's "C" order).
    C,
    /// Index order regardless of dims: the first axis has unit stride (NumPy's "F" order).
    F,
}

impl BaseLayout {
    /// Checks a semantic base layout: it must be a permutation of `(0, 1, 2)`.
    pub fn semantic(base: [u8; 3]) -> Result<BaseLayout> {
        validate_layout(&base.map(usize::from), 3).map_err(|_| {
            Error::invalid(
                "base_layout",
                base,
                "expected a permutation of (0, 1, 2), \"C\" or \"F\"",
            )
        })?;
        Ok(BaseLayout::Semantic(base))
    }

    /// The layout map this base layout gives to arrays with the given dims.
    pub fn layout_map(&self, dims: &[Dim]) -> AxisVec<usize> {
        let ndim = dims.len();
        match self {
            BaseLayout::C => (0..ndim).collect(),
            BaseLayout::F => (0..ndim).rev().collect(),
            BaseLayout::Semantic(base) => semantic_layout_map(dims, base),
        }
    }
}

/// The layout map for `dims` under a semantic base layout, following GT4Py's layout maker:
/// the Cartesian dims keep the relative order of `base`, data dims go outermost in the order
/// they appear. Unlike GT4Py's maker, it reads which axis holds which dim, so dims given in
/// another order (such as `"KJI"`) still get the stride ranks their names ask for.
fn semantic_layout_map(dims: &[Dim], base: &[u8; 3]) -> AxisVec<usize> {
    let n_data = dims
        .iter()
        .filter(|d| d.cartesian_index().is_none())
        .count();
    // Sort key per axis: data dims first (outermost) in appearance order, then Cartesian
    // dims by their base rank.
    let mut data_seen = 0usize;
    let keys: AxisVec<usize> = dims
        .iter()
        .map(|d| match d.cartesian_index() {
            Some(c) => n_data + usize::from(base[c]),
            None => {
                data_seen += 1;
                data_seen - 1
            }
        })
        .collect();
    let mut order: AxisVec<usize> = (0..dims.len()).collect();
    order.sort_by_key(|&axis| keys[axis]);
    let mut layout: AxisVec<usize> = smallvec::smallvec![0; dims.len()];
    for (rank, axis) in order.into_iter().enumerate() {
        layout[axis] = rank;
    }
    layout
}

/// Checks that `layout` is a permutation of `0..ndim`.
pub fn validate_layout(layout: &[usize], ndim: usize) -> Result<()> {
    let expected = || format!("expected a permutation of 0..{ndim} (one entry per axis)");
    if layout.len() != ndim {
        return Err(Error::invalid("layout", layout, expected()));
    }
    let mut seen: AxisVec<bool> = smallvec::smallvec![false; ndim];
    for &j in layout {
        if j >= ndim || std::mem::replace(&mut seen[j], true) {
            return Err(Error::invalid("layout", layout, expected()));
        }
    }
    Ok(())
}

/// The layout map that byte strides follow: axes ranked from the largest absolute stride
/// (rank 0) to the smallest, so the axis with the smallest absolute stride gets the highest rank.
///
/// Ties (equal absolute strides, such as several axes of length 1 or zero strides of a
/// broadcast) keep index order: the earlier axis gets the lower rank. Zero strides are the
/// smallest, so broadcast axes rank innermost. The sign of a stride is ignored.
///
/// ```
/// use gridbuf::geometry::layout::from_strides;
/// assert_eq!(from_strides(&[8, 80, 880])[..], [2, 1, 0]); // Fortran order
/// assert_eq!(from_strides(&[-96, 32, 8])[..], [0, 1, 2]);
/// assert_eq!(from_strides(&[0, 8, 8])[..], [2, 0, 1]);
/// ```
pub fn from_strides(strides: &[isize]) -> AxisVec<usize> {
    let mut order: AxisVec<usize> = (0..strides.len()).collect();
    // A stable sort, so that ties keep index order.
    order.sort_by_key(|&axis| std::cmp::Reverse(strides[axis].unsigned_abs()));
    let mut layout: AxisVec<usize> = smallvec::smallvec![0; strides.len()];
    for (rank, axis) in order.into_iter().enumerate() {
        layout[axis] = rank;
    }
    layout
}

impl BaseLayout {
    /// The index-order base layout a layout map follows: [`BaseLayout::F`] when it is exactly
    /// Fortran order (first axis unit stride) with more than one axis, else [`BaseLayout::C`].
    /// It places dims an array lacks when a result has more dims than the array.
    pub fn of_layout_map(layout: &[usize]) -> BaseLayout {
        let n = layout.len();
        if n > 1
            && layout
                .iter()
                .enumerate()
                .all(|(axis, &rank)| rank == n - 1 - axis)
        {
            BaseLayout::F
        } else {
            BaseLayout::C
        }
    }
}

/// The axes ordered from the largest stride to the unit stride: the inverse permutation.
pub fn axes_by_rank(layout: &[usize]) -> AxisVec<usize> {
    let mut axes: AxisVec<usize> = smallvec::smallvec![0; layout.len()];
    for (axis, &rank) in layout.iter().enumerate() {
        axes[rank] = axis;
    }
    axes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::dims::{default_dims, parse_dims_str};

    #[test]
    fn data_dims_go_outermost_as_in_gt4py() {
        let dims = parse_dims_str("IJK01").unwrap();
        assert_eq!(
            BaseLayout::Semantic([0, 1, 2]).layout_map(&dims).to_vec(),
            vec![2, 3, 4, 0, 1]
        );
        assert_eq!(
            BaseLayout::Semantic([2, 1, 0]).layout_map(&dims).to_vec(),
            vec![4, 3, 2, 0, 1]
        );
    }

    #[test]
    fn missing_cartesian_dims_keep_relative_order() {
        let dims = parse_dims_str("IK").unwrap();
        assert_eq!(
            BaseLayout::Semantic([1, 2, 0]).layout_map(&dims).to_vec(),
            vec![1, 0]
        );
        assert_eq!(
            BaseLayout::Semantic([2, 1, 0]).layout_map(&dims).to_vec(),
            vec![1, 0]
        );
    }

    #[test]
    fn permuted_dims_follow_their_names() {
        // K has unit stride under base (0, 1, 2) wherever K sits.
        let dims = parse_dims_str("KJI").unwrap();
        assert_eq!(
            BaseLayout::Semantic([0, 1, 2]).layout_map(&dims).to_vec(),
            vec![2, 1, 0]
        );
    }

    #[test]
    fn index_orders() {
        let dims = default_dims(4);
        assert_eq!(BaseLayout::C.layout_map(&dims).to_vec(), vec![0, 1, 2, 3]);
        assert_eq!(BaseLayout::F.layout_map(&dims).to_vec(), vec![3, 2, 1, 0]);
    }

    #[test]
    fn validation() {
        assert!(validate_layout(&[1, 0, 2], 3).is_ok());
        assert!(validate_layout(&[1, 1, 2], 3).is_err());
        assert!(validate_layout(&[0, 1, 3], 3).is_err());
        assert!(validate_layout(&[0, 1], 3).is_err());
        assert!(BaseLayout::semantic([0, 0, 1]).is_err());
        assert_eq!(axes_by_rank(&[2, 0, 1]).to_vec(), vec![1, 2, 0]);
    }

    #[test]
    fn base_of_layout_maps() {
        assert_eq!(BaseLayout::of_layout_map(&[2, 1, 0]), BaseLayout::F);
        assert_eq!(BaseLayout::of_layout_map(&[0, 1, 2]), BaseLayout::C);
        assert_eq!(BaseLayout::of_layout_map(&[0]), BaseLayout::C);
        assert_eq!(BaseLayout::of_layout_map(&[1, 0, 2]), BaseLayout::C);
    }
}
