//! The float trait of the evaluator's kernels (`f64`, `f32`) and each thread's pool of reusable
//! buffers.

use crate::gtscript::rt::lane::Elem;

use crate::gtscript::ir::{BinOp, UnOp};
use crate::gtscript::rt::math::{self, Fn1, Fn2};

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

/// Buffers a pool keeps per thread at most.
const POOL_MAX: usize = 64;

/// A buffer of `len` elements from this thread's pool (values left by earlier use, zero where
/// it grows), or a new zeroed one.
pub(crate) fn take_buf<T: Elem>(len: usize) -> Vec<T> {
    let mut v = T::pool()
        .with(|p| {
            let mut p = p.borrow_mut();
            // The smallest that is big enough: a large block buffer handed out for a small
            // register would leave the next large request to reallocate (and zero) memory.
            let best = (0..p.len())
                .filter(|&i| p[i].capacity() >= len)
                .min_by_key(|&i| p[i].capacity());
            best.map(|i| p.swap_remove(i)).or_else(|| p.pop())
        })
        .unwrap_or_default();
    v.resize(len, T::ZERO);
    v
}

/// Makes `b` a buffer of `len` elements: from this thread's pool if it has none yet, else
/// resized (a block buffer kept from the previous block or section).
pub(crate) fn fit_buf<T: Elem>(b: &mut Vec<T>, len: usize) {
    if b.capacity() == 0 {
        *b = take_buf(len);
    } else if b.len() != len {
        b.resize(len, T::ZERO);
    }
}

/// Returns buffers to this thread's pool.
pub(crate) fn give_bufs<T: Elem>(bufs: impl IntoIterator<Item = Vec<T>>) {
    T::pool().with(|p| {
        let mut p = p.borrow_mut();
        for b in bufs {
            if b.capacity() > 0 && p.len() < POOL_MAX {
                p.push(b);
            }
        }
    });
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
                math::$un(op)
            }
            #[inline(always)]
            fn binary_fn(op: BinOp) -> Option<(&'static str, Fn2<Self>)> {
                math::$bin(op)
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
