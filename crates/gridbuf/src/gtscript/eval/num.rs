//! The float trait of the evaluator's kernels (`f64`, `f32`) and each thread's pool of reusable
//! buffers.

use super::lane::Elem;

/// The element types the evaluator runs on.
pub trait Num: crate::kernels::Float {
    /// From `f64` (rounding for `f32`).
    fn from_f64(v: f64) -> Self;
    /// `|x|`.
    fn abs(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// `e^x`.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Tangent.
    fn tan(self) -> Self;
    /// Floor.
    fn floor(self) -> Self;
    /// Ceiling.
    fn ceil(self) -> Self;
    /// Truncation toward zero.
    fn trunc(self) -> Self;
    /// `x^y`.
    fn powf(self, y: Self) -> Self;
    /// The C library's `fmod`.
    fn fmod(self, y: Self) -> Self;
    /// The magnitude of `self` with the sign of `y`.
    fn copysign(self, y: Self) -> Self;
    /// Not a number.
    fn is_nan(self) -> bool;
    /// Infinite.
    fn is_inf(self) -> bool;
}

/// Buffers a pool keeps per thread at most.
const POOL_MAX: usize = 64;

/// A buffer of `len` elements from this thread's pool (values left by earlier use, zero where
/// it grows), or a new zeroed one.
pub(super) fn take_buf<T: Elem>(len: usize) -> Vec<T> {
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
pub(super) fn fit_buf<T: Elem>(b: &mut Vec<T>, len: usize) {
    if b.capacity() == 0 {
        *b = take_buf(len);
    } else if b.len() != len {
        b.resize(len, T::ZERO);
    }
}

/// Returns buffers to this thread's pool.
pub(super) fn give_bufs<T: Elem>(bufs: impl IntoIterator<Item = Vec<T>>) {
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
    ($t:ty) => {
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
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                <$t>::tan(self)
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
            fn powf(self, y: Self) -> Self {
                <$t>::powf(self, y)
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
impl_num!(f64);
impl_num!(f32);
