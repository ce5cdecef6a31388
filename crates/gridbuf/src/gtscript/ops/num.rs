//! Scalar arithmetic as NumPy does it: the float trait every evaluator computes with (`f64`,
//! `f32`; implemented in [`crate::gtscript::ops::math`]), the math functions' types, NumPy's
//! float division and the binary math functions (`**`, `%`, `//`) the operation table names.

use crate::gtscript::ir::{BinOp, UnOp};

/// The element types the evaluator runs on.
pub trait Num: crate::kernels::Float {
    /// From `f64` (rounding for `f32`).
    fn from_f64(v: f64) -> Self;
    /// `|x|`.
    fn abs(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// The function of [`crate::gtscript::ops::math`] computing `op` for this type, with its symbol name, for
    /// the operations with no instruction; the interpreter and the compiled code both call it.
    fn unary_fn(op: UnOp) -> Option<(&'static str, Fn1<Self>)>;
    /// Likewise for binary operations (`**`, `mod`).
    fn binary_fn(op: BinOp) -> Option<(&'static str, Fn2<Self>)>;
    /// Floor.
    fn floor(self) -> Self;
    /// Ceiling.
    fn ceil(self) -> Self;
    /// Truncation toward zero.
    fn trunc(self) -> Self;
    /// The C library's `fmod`.
    fn fmod(self, y: Self) -> Self;
    /// The magnitude of `self` with the sign of `y`.
    fn copysign(self, y: Self) -> Self;
    /// To the nearest integer, half to even.
    fn round_even(self) -> Self;
    /// To the nearest integer, half away from zero, as GT4Py computes it.
    fn round_away(self) -> Self;
    /// Neither infinite nor NaN.
    fn is_finite(self) -> bool;
    /// Not a number.
    fn is_nan(self) -> bool;
    /// Infinite.
    fn is_inf(self) -> bool;
}

/// A unary function called by both evaluators.
pub type Fn1<T> = extern "C" fn(T) -> T;

/// A binary function called by both evaluators.
pub type Fn2<T> = extern "C" fn(T, T) -> T;

/// Floor division and remainder of floats as NumPy computes them (its `npy_divmod`): the
/// quotient from the exact remainder, so that `1 // 0.1` is 9 as in NumPy, not 10.
#[inline(always)]
pub(crate) fn divmod<T: Num>(a: T, b: T) -> (T, T) {
    let m = a.fmod(b);
    if b == T::ZERO {
        return (a / b, m);
    }
    let mut div = (a - m) / b;
    let mut m = m;
    if m != T::ZERO {
        if (b < T::ZERO) != (m < T::ZERO) {
            m = m + b;
            div = div - T::ONE;
        }
    } else {
        m = T::ZERO.copysign(b);
    }
    let q = if div != T::ZERO {
        let f = div.floor();
        if div - f > T::from_f64(0.5) {
            f + T::ONE
        } else {
            f
        }
    } else {
        T::ZERO.copysign(a / b)
    };
    (q, m)
}

macro_rules! remainder {
    ($name:ident, $t:ty) => {
        /// NumPy's `remainder` (`npy_remainder`): `fmod(a, b)`, plus `b` where its sign differs
        /// from `b`'s, and a zero with `b`'s sign.
        pub(crate) extern "C" fn $name(a: $t, b: $t) -> $t {
            let m = a % b;
            if b == 0.0 {
                m
            } else if m != 0.0 {
                if (b < 0.0) != (m < 0.0) {
                    m + b
                } else {
                    m
                }
            } else {
                (0.0 as $t).copysign(b)
            }
        }
    };
}
remainder!(gridbuf_mod_f64, f64);
remainder!(gridbuf_mod_f32, f32);

/// NumPy's `floor_divide` of floats (its `npy_divmod`), for the JIT and the interpreter.
pub(crate) extern "C" fn gridbuf_floordiv_f64(a: f64, b: f64) -> f64 {
    divmod(a, b).0
}

/// See [`gridbuf_floordiv_f64`].
pub(crate) extern "C" fn gridbuf_floordiv_f32(a: f32, b: f32) -> f32 {
    divmod(a, b).0
}

/// `x ** y`; NumPy squares exactly (`x * x`) where `y` is 2.
pub(crate) extern "C" fn gridbuf_pow_f64(x: f64, y: f64) -> f64 {
    if y == 2.0 {
        return x * x;
    }
    x.powf(y)
}

/// See [`gridbuf_pow_f64`].
pub(crate) extern "C" fn gridbuf_pow_f32(x: f32, y: f32) -> f32 {
    if y == 2.0 {
        return x * x;
    }
    x.powf(y)
}
