//! The float trait of the evaluator's kernels (`f64`, `f32`; implemented in
//! [`crate::gtscript::rt::math`], beside the functions it names), the math functions' types and
//! NumPy's float division.

use crate::gtscript::ir::{BinOp, UnOp};

/// The element types the evaluator runs on.
pub trait Num: crate::kernels::Float {
    /// From `f64` (rounding for `f32`).
    fn from_f64(v: f64) -> Self;
    /// `|x|`.
    fn abs(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// The function of [`crate::gtscript::rt::math`] computing `op` for this type, with its symbol name, for
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
