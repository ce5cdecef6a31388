//! Shared helpers of the kernel tests: fields in many memory layouts with a canary border, and
//! naive reference implementations written with plain index loops.

#![allow(dead_code)]

use ndarray::{s, Array3, ArrayView3, ArrayViewMut3, ShapeBuilder};

/// Points of canary border around every field view.
pub const MARGIN: usize = 2;

/// A value no kernel computes from the test data.
pub const CANARY: f64 = -7.25e300;

/// Memory layouts of a field, all indexed `[i, j, k]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// C order: K has unit stride (also GT4Py's `gt:cpu_kfirst`).
    C,
    /// Fortran order: I has unit stride (GT4Py's `gt:cpu_ifirst`).
    F,
    /// J has unit stride, then I, K outermost (GT4Py's `dace:cpu`).
    JFirst,
    /// C order with padded K rows and J planes.
    Padded,
    /// Every second element of a bigger C-ordered array along every axis.
    Strided,
    /// C order read backwards along I and K (negative strides).
    Negative,
    /// Fortran order, every second element along I, backwards along J.
    FStridedNegative,
    /// Axes stored in `order` (outermost first, the last one padded by a point), taking every
    /// `step[a]`-th element along axis `a`, backwards where the step is negative.
    Custom { order: [usize; 3], step: [isize; 3] },
}

pub const LAYOUTS: [Layout; 7] = [
    Layout::C,
    Layout::F,
    Layout::JFirst,
    Layout::Padded,
    Layout::Strided,
    Layout::Negative,
    Layout::FStridedNegative,
];

/// The three dense layouts of the GT4Py CPU presets.
pub const DENSE: [Layout; 3] = [Layout::C, Layout::F, Layout::JFirst];

/// A field of logical `shape` stored in `layout` inside a backing array that has a border of
/// canaries (and, for strided layouts, canaries between the elements).
pub struct Store {
    pub backing: Array3<f64>,
    pub layout: Layout,
    pub shape: [usize; 3],
}

impl Store {
    pub fn new(shape: [usize; 3], layout: Layout) -> Store {
        let m = MARGIN;
        let b = [shape[0] + 2 * m, shape[1] + 2 * m, shape[2] + 2 * m];
        let backing = match layout {
            Layout::C | Layout::Negative => Array3::from_elem((b[0], b[1], b[2]), CANARY),
            Layout::F => Array3::from_elem((b[0], b[1], b[2]).f(), CANARY),
            Layout::JFirst => {
                Array3::from_elem((b[2], b[0], b[1]), CANARY).permuted_axes([1, 2, 0])
            }
            Layout::Padded => Array3::from_elem((b[0], b[1] + 1, b[2] + 3), CANARY),
            Layout::Strided => Array3::from_elem((2 * b[0], 2 * b[1], 2 * b[2]), CANARY),
            Layout::FStridedNegative => Array3::from_elem((2 * b[0], b[1], b[2]).f(), CANARY),
            Layout::Custom { order, step } => {
                let len = |a: usize| b[a] * step[a].unsigned_abs();
                let back = (len(order[0]), len(order[1]), len(order[2]) + 1);
                let pos = |a: usize| order.iter().position(|&o| o == a).unwrap();
                Array3::from_elem(back, CANARY).permuted_axes([pos(0), pos(1), pos(2)])
            }
        };
        Store {
            backing,
            layout,
            shape,
        }
    }

    /// A field filled with `f(i, j, k)`.
    pub fn filled(
        shape: [usize; 3],
        layout: Layout,
        f: impl Fn(usize, usize, usize) -> f64,
    ) -> Store {
        let mut st = Store::new(shape, layout);
        st.view_mut()
            .indexed_iter_mut()
            .for_each(|((i, j, k), v)| *v = f(i, j, k));
        st
    }

    fn slices(
        &self,
    ) -> ndarray::SliceInfo<[ndarray::SliceInfoElem; 3], ndarray::Ix3, ndarray::Ix3> {
        let m = MARGIN;
        let [n0, n1, n2] = self.shape;
        let (m0, m1, m2) = (m as isize, m as isize, m as isize);
        let (e0, e1, e2) = (m0 + n0 as isize, m1 + n1 as isize, m2 + n2 as isize);
        match self.layout {
            Layout::C | Layout::F | Layout::JFirst | Layout::Padded => {
                s![m0..e0, m1..e1, m2..e2]
            }
            Layout::Strided => s![2 * m0..2 * e0;2, 2 * m1..2 * e1;2, 2 * m2..2 * e2;2],
            Layout::Negative => s![m0..e0;-1, m1..e1, m2..e2;-1],
            Layout::FStridedNegative => s![2 * m0..2 * e0;2, m1..e1;-1, m2..e2],
            Layout::Custom { step, .. } => {
                let r = |a: usize, m: isize, n: usize| {
                    let st = step[a].abs();
                    ndarray::SliceInfoElem::Slice {
                        start: m * st,
                        end: Some((m + n as isize) * st),
                        step: step[a],
                    }
                };
                let elems = [r(0, m0, n0), r(1, m1, n1), r(2, m2, n2)];
                ndarray::SliceInfo::try_from(elems).unwrap()
            }
        }
    }

    /// The field, `[i, j, k]`; for the negative layouts index 0 is stored last.
    pub fn view(&self) -> ArrayView3<'_, f64> {
        self.backing.slice(self.slices())
    }

    pub fn view_mut(&mut self) -> ArrayViewMut3<'_, f64> {
        let info = self.slices();
        self.backing.slice_mut(info)
    }

    /// The field's values in a C-ordered array.
    pub fn values(&self) -> Array3<f64> {
        self.view().to_owned()
    }

    /// Panics unless every backing element outside the field view is still a canary.
    pub fn assert_border_intact(&self, what: &str) {
        let mut copy = Store {
            backing: self.backing.clone(),
            layout: self.layout,
            shape: self.shape,
        };
        copy.view_mut().fill(CANARY);
        let bad = copy
            .backing
            .iter()
            .filter(|&&v| v.to_bits() != CANARY.to_bits())
            .count();
        assert_eq!(
            bad, 0,
            "{what}: {bad} elements outside the view were written ({:?})",
            self.layout
        );
    }
}

/// A deterministic pseudo-random value in [-1, 1) for `(seed, i, j, k)`.
pub fn noise(seed: u64, i: usize, j: usize, k: usize) -> f64 {
    let mut x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add((i as u64) << 40 ^ (j as u64) << 20 ^ k as u64);
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// `domain` widened by `ext` below and above in I and J.
pub fn widen(domain: [usize; 3], ext: usize) -> [usize; 3] {
    [domain[0] + 2 * ext, domain[1] + 2 * ext, domain[2]]
}

/// Naive laplacian: `out = -4 inp + inp[i-1] + inp[i+1] + inp[j-1] + inp[j+1]`, where `inp`
/// is indexed from one point before the domain in I and J.
pub fn laplacian_ref(inp: &Array3<f64>, domain: [usize; 3]) -> Array3<f64> {
    let [ni, nj, nk] = domain;
    let mut out = Array3::zeros((ni, nj, nk));
    for i in 0..ni {
        for j in 0..nj {
            for k in 0..nk {
                let (x, y) = (i + 1, j + 1);
                out[[i, j, k]] = -4.0 * inp[[x, y, k]]
                    + inp[[x - 1, y, k]]
                    + inp[[x + 1, y, k]]
                    + inp[[x, y - 1, k]]
                    + inp[[x, y + 1, k]];
            }
        }
    }
    out
}

/// Naive COSMO horizontal diffusion with full temporaries; `inp` is indexed from two points
/// before the domain in I and J.
pub fn hdiff_ref(inp: &Array3<f64>, coeff: &Array3<f64>, domain: [usize; 3]) -> Array3<f64> {
    let [ni, nj, nk] = domain;
    // lap on the domain widened by one: lap[a, b] is at domain point (a - 1, b - 1).
    let mut lap = Array3::zeros((ni + 2, nj + 2, nk));
    for a in 0..ni + 2 {
        for b in 0..nj + 2 {
            for k in 0..nk {
                let (x, y) = (a + 1, b + 1);
                lap[[a, b, k]] = 4.0 * inp[[x, y, k]]
                    - (inp[[x - 1, y, k]]
                        + inp[[x + 1, y, k]]
                        + inp[[x, y - 1, k]]
                        + inp[[x, y + 1, k]]);
            }
        }
    }
    let at = |i: isize, j: isize, k: usize| inp[[(i + 2) as usize, (j + 2) as usize, k]];
    let lp = |i: isize, j: isize, k: usize| lap[[(i + 1) as usize, (j + 1) as usize, k]];
    let flx = |i: isize, j: isize, k: usize| {
        let f = lp(i + 1, j, k) - lp(i, j, k);
        if f * (at(i + 1, j, k) - at(i, j, k)) > 0.0 {
            0.0
        } else {
            f
        }
    };
    let fly = |i: isize, j: isize, k: usize| {
        let f = lp(i, j + 1, k) - lp(i, j, k);
        if f * (at(i, j + 1, k) - at(i, j, k)) > 0.0 {
            0.0
        } else {
            f
        }
    };
    let mut out = Array3::zeros((ni, nj, nk));
    for i in 0..ni as isize {
        for j in 0..nj as isize {
            for k in 0..nk {
                out[[i as usize, j as usize, k]] = at(i, j, k)
                    - coeff[[i as usize, j as usize, k]]
                        * (flx(i, j, k) - flx(i - 1, j, k) + fly(i, j, k) - fly(i, j - 1, k));
            }
        }
    }
    out
}

/// Naive Thomas algorithm column by column.
pub fn tridiag_ref(
    a: &Array3<f64>,
    b: &Array3<f64>,
    c: &Array3<f64>,
    d: &Array3<f64>,
) -> Array3<f64> {
    let (ni, nj, nk) = a.dim();
    let mut x = Array3::zeros((ni, nj, nk));
    let mut cp = vec![0.0; nk];
    let mut dp = vec![0.0; nk];
    for i in 0..ni {
        for j in 0..nj {
            for k in 0..nk {
                let denom = if k == 0 {
                    b[[i, j, k]]
                } else {
                    b[[i, j, k]] - a[[i, j, k]] * cp[k - 1]
                };
                cp[k] = if k + 1 < nk {
                    c[[i, j, k]] / denom
                } else {
                    0.0
                };
                let num = if k == 0 {
                    d[[i, j, k]]
                } else {
                    d[[i, j, k]] - a[[i, j, k]] * dp[k - 1]
                };
                dp[k] = num / denom;
            }
            for k in (0..nk).rev() {
                x[[i, j, k]] = if k + 1 < nk {
                    dp[k] - cp[k] * x[[i, j, k + 1]]
                } else {
                    dp[k]
                };
            }
        }
    }
    x
}

/// Largest absolute difference, or infinity where either side is not finite.
pub fn max_abs_diff(a: &Array3<f64>, b: &Array3<f64>) -> f64 {
    assert_eq!(a.dim(), b.dim());
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| {
            if x.is_finite() && y.is_finite() {
                (x - y).abs()
            } else {
                f64::INFINITY
            }
        })
        .fold(0.0, f64::max)
}

/// Whether two arrays are equal bit for bit.
pub fn bitwise_eq(a: &Array3<f64>, b: &Array3<f64>) -> bool {
    a.dim() == b.dim()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| x.to_bits() == y.to_bits())
}
