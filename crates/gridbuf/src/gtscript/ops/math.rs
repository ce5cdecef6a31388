//! The math functions CPUs have no instruction for, one `extern "C"` function per operation and
//! element type, looked up by operation, and the float trait's implementations. The unary
//! functions are defined by their entries in the operation table ([`crate::gtscript::ops`]); the
//! binary ones in [`crate::gtscript::ops::num`].
//!
//! The interpreter ([`crate::gtscript::rt::interp`]) and the compiled code ([`crate::gtscript::jit`], which calls them
//! by address, lane by lane) call the very same functions, so both give the same bits. The
//! functions come from Rust's standard library where it has them (which calls the platform's C
//! library: `exp`, `log`, `log10`, the trigonometric and hyperbolic functions, `cbrt`, `pow`)
//! and from the `libm` crate where it has not (`asinh`, `acosh`, `atanh` (std's are formulas of
//! a few ulps), `tgamma`, `erf`, `erfc`). `mod` is NumPy's `remainder` (GT4Py's numpy backend):
//! the C `fmod`, moved to the sign of the divisor.

use crate::gtscript::ir::{BinOp, UnOp};

pub use crate::gtscript::ops::num::{Fn1, Fn2, Num};

/// The `f64` function computing `op`, with its symbol name, if it has one (its entry in
/// [`crate::gtscript::ops::UNARY`]).
pub fn unary_f64(op: UnOp) -> Option<(&'static str, Fn1<f64>)> {
    crate::gtscript::ops::un(op).math().map(|m| m.f64)
}

/// The `f32` function computing `op`, with its symbol name, if it has one.
pub fn unary_f32(op: UnOp) -> Option<(&'static str, Fn1<f32>)> {
    crate::gtscript::ops::un(op).math().map(|m| m.f32)
}

/// The `f64` function computing binary `op`, with its symbol name, if it has one.
pub fn binary_f64(op: BinOp) -> Option<(&'static str, Fn2<f64>)> {
    crate::gtscript::ops::bin(op).math().map(|m| m.f64)
}

/// The `f32` function computing binary `op`, with its symbol name, if it has one.
pub fn binary_f32(op: BinOp) -> Option<(&'static str, Fn2<f32>)> {
    crate::gtscript::ops::bin(op).math().map(|m| m.f32)
}

/// Every math function by symbol name and address, for the JIT's symbol table (those of
/// [`crate::gtscript::ops`]' tables).
pub(crate) fn symbols() -> Vec<(&'static str, *const u8)> {
    crate::gtscript::ops::math_symbols()
}

macro_rules! impl_num {
    ($t:ty, $un:ident, $bin:ident) => {
        impl Num for $t {
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn unary_fn(op: UnOp) -> Option<(&'static str, Fn1<Self>)> {
                crate::gtscript::ops::math::$un(op)
            }
            #[inline(always)]
            fn binary_fn(op: BinOp) -> Option<(&'static str, Fn2<Self>)> {
                crate::gtscript::ops::math::$bin(op)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                <$t>::trunc(self)
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                <$t>::round_ties_even(self)
            }
            #[inline(always)]
            fn round_away(self) -> Self {
                // GT4Py's numpy backend: copysign(floor(|x| + 0.5), x) (so 0.49999999999999994
                // rounds to 1, unlike C's `round`).
                (<$t>::abs(self) + 0.5).floor().copysign(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn fmod(self, y: Self) -> Self {
                self % y
            }
            #[inline(always)]
            fn copysign(self, y: Self) -> Self {
                <$t>::copysign(self, y)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn is_inf(self) -> bool {
                <$t>::is_infinite(self)
            }
        }
    };
}

impl_num!(f64, unary_f64, binary_f64);

impl_num!(f32, unary_f32, binary_f32);

#[cfg(test)]
mod tests {
    use super::*;

    fn u64(op: UnOp, x: f64) -> f64 {
        unary_f64(op).expect("a function").1(x)
    }

    fn u32(op: UnOp, x: f32) -> f32 {
        unary_f32(op).expect("a function").1(x)
    }

    /// `a` within `ulps` units in the last place of `b` (NaN equals NaN).
    fn close(a: f64, b: f64, ulps: u64) -> bool {
        if a.is_nan() || b.is_nan() {
            return a.is_nan() && b.is_nan();
        }
        if a == b {
            return true;
        }
        let key = |x: f64| {
            let i = x.to_bits() as i64;
            if i < 0 {
                i64::MIN - i
            } else {
                i
            }
        };
        key(a).abs_diff(key(b)) <= ulps
    }

    #[track_caller]
    fn check(op: UnOp, cases: &[(f64, f64)]) {
        for &(x, want) in cases {
            let got = u64(op, x);
            assert!(close(got, want, 2), "{op:?}({x}) = {got}, want {want}");
            let got = u32(op, x as f32) as f64;
            let w32 = want as f32 as f64;
            assert!(
                close((got as f32) as f64, w32, 0)
                    || (got - w32).abs() <= 4.0 * f32::EPSILON as f64 * w32.abs(),
                "{op:?}({x}) in f32 = {got}, want {w32}"
            );
        }
    }

    #[test]
    fn exp_log_and_powers() {
        let e = std::f64::consts::E;
        check(
            UnOp::Exp,
            &[
                (0.0, 1.0),
                (1.0, e),
                (-1.0, 1.0 / e),
                (f64::NEG_INFINITY, 0.0),
            ],
        );
        check(
            UnOp::Log,
            &[
                (1.0, 0.0),
                (e, 1.0),
                (0.0, f64::NEG_INFINITY),
                (-1.0, f64::NAN),
            ],
        );
        check(
            UnOp::Log10,
            &[(1.0, 0.0), (1000.0, 3.0), (1e-5, -5.0), (-1.0, f64::NAN)],
        );
        check(
            UnOp::Cbrt,
            &[(27.0, 3.0), (-8.0, -2.0), (0.001, 0.1), (0.0, 0.0)],
        );
        assert_eq!(binary_f64(BinOp::Pow).expect("pow").1(2.0, 10.0), 1024.0);
        assert_eq!(binary_f32(BinOp::Pow).expect("pow").1(9.0, 0.5), 3.0);
        assert!(binary_f64(BinOp::Pow).expect("pow").1(-8.0, 1.0 / 3.0).is_nan());
    }

    #[test]
    fn trigonometric_and_hyperbolic() {
        use std::f64::consts::{FRAC_PI_2, FRAC_PI_3, FRAC_PI_4, FRAC_PI_6};
        check(UnOp::Sin, &[(0.0, 0.0), (FRAC_PI_6, 0.5), (FRAC_PI_2, 1.0)]);
        check(UnOp::Cos, &[(0.0, 1.0), (FRAC_PI_3, 0.4999999999999999)]);
        check(UnOp::Tan, &[(0.0, 0.0), (FRAC_PI_4, 0.9999999999999999)]);
        check(
            UnOp::Asin,
            &[(0.5, FRAC_PI_6), (1.0, FRAC_PI_2), (2.0, f64::NAN)],
        );
        check(
            UnOp::Acos,
            &[(1.0, 0.0), (0.0, FRAC_PI_2), (-1.5, f64::NAN)],
        );
        check(UnOp::Atan, &[(1.0, FRAC_PI_4), (f64::INFINITY, FRAC_PI_2)]);
        check(UnOp::Sinh, &[(0.0, 0.0), (1.0, 1.1752011936438014)]);
        check(UnOp::Cosh, &[(0.0, 1.0), (1.0, 1.5430806348152437)]);
        check(
            UnOp::Tanh,
            &[(0.0, 0.0), (1.0, 0.7615941559557649), (50.0, 1.0)],
        );
        check(
            UnOp::Asinh,
            &[
                (0.0, 0.0),
                (1.0, 0.881373587019543),
                (-1.0, -0.881373587019543),
            ],
        );
        check(
            UnOp::Acosh,
            &[(1.0, 0.0), (2.0, 1.3169578969248166), (0.5, f64::NAN)],
        );
        check(
            UnOp::Atanh,
            &[(0.0, 0.0), (0.5, 0.5493061443340549), (1.0, f64::INFINITY)],
        );
    }

    #[test]
    fn gamma_and_error_functions() {
        let pi = std::f64::consts::PI;
        check(
            UnOp::Gamma,
            &[
                (1.0, 1.0),
                (5.0, 24.0),
                (0.5, pi.sqrt()),
                (-0.5, -2.0 * pi.sqrt()),
            ],
        );
        check(UnOp::Gamma, &[(0.0, f64::INFINITY), (-1.0, f64::NAN)]);
        check(
            UnOp::Erf,
            &[
                (0.0, 0.0),
                (1.0, 0.8427007929497149),
                (-2.0, -0.9953222650189527),
            ],
        );
        check(
            UnOp::Erfc,
            &[
                (0.0, 1.0),
                (1.0, 0.15729920705028513),
                (3.0, 2.209049699858544e-5),
            ],
        );
    }

    #[test]
    fn mod_is_numpys_remainder() {
        let m = binary_f64(BinOp::Mod).expect("mod").1;
        assert_eq!(m(7.0, 3.0), 1.0);
        assert_eq!(m(-7.0, 3.0), 2.0);
        assert_eq!(m(7.0, -3.0), -2.0);
        assert_eq!(m(5.3, 0.7), 5.3 % 0.7);
        assert_eq!(m(6.0, -3.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(m(-6.0, 3.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(m(-1.0, f64::INFINITY), f64::INFINITY);
        assert!(m(1.0, 0.0).is_nan() && m(f64::INFINITY, 2.0).is_nan());
        let m = binary_f32(BinOp::Mod).expect("mod").1;
        assert_eq!(m(-7.5, 2.0), 0.5);
    }

    #[test]
    fn every_function_is_listed_once() {
        let s = symbols();
        let mut names: Vec<_> = s.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), s.len());
        let unary = crate::gtscript::ops::UNARY
            .iter()
            .filter(|u| u.math().is_some());
        assert_eq!(s.len(), 2 * unary.count() + 6);
        assert!(names.contains(&"gridbuf_gamma_f32") && names.contains(&"gridbuf_erfc_f64"));
    }
}
