//! The strided copy reproduces every element for random shapes, layouts and source strides.

use gridbuf::arrays::copy::copy_strided;
use proptest::prelude::*;

/// Element strides of a dense array of `shape` whose axes are ordered by `order` (outermost first).
fn dense_strides(shape: &[usize], order: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for &axis in order.iter().rev() {
        strides[axis] = acc;
        acc *= shape[axis].max(1) as isize;
    }
    strides
}

proptest! {
    #[test]
    fn copy_matches_elementwise(
        (shape, src_order, dst_order, flip) in (1usize..=4).prop_flat_map(|n| (
            prop::collection::vec(1usize..40, n),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            prop::collection::vec(any::<bool>(), n),
        ))
    ) {
        let len: usize = shape.iter().product();
        let src: Vec<u32> = (0..len as u32).collect();
        let mut ss = dense_strides(&shape, &src_order);
        // Flipped axes read the source backwards, as a NumPy view with negative strides does.
        let mut start = 0isize;
        for (axis, &f) in flip.iter().enumerate() {
            if f {
                start += (shape[axis] as isize - 1) * ss[axis];
                ss[axis] = -ss[axis];
            }
        }
        let ds = dense_strides(&shape, &dst_order);
        let mut dst = vec![u32::MAX; len];
        let bytes = |v: &[isize]| v.iter().map(|s| s * 4).collect::<Vec<_>>();
        // SAFETY: both strides describe dense arrays of `len` elements inside the vectors.
        unsafe {
            copy_strided(4, &shape, src.as_ptr().offset(start).cast(), &bytes(&ss), dst.as_mut_ptr().cast(), &bytes(&ds));
        }
        let mut index = vec![0usize; shape.len()];
        for _ in 0..len {
            let s: isize = start + index.iter().zip(&ss).map(|(&i, &st)| i as isize * st).sum::<isize>();
            let d: isize = index.iter().zip(&ds).map(|(&i, &st)| i as isize * st).sum();
            prop_assert_eq!(dst[d as usize], src[s as usize]);
            for axis in (0..shape.len()).rev() {
                index[axis] += 1;
                if index[axis] < shape[axis] { break; }
                index[axis] = 0;
            }
        }
    }
}
