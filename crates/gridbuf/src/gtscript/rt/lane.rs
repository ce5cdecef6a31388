//! The element types the evaluator runs on ([`Elem`]): `f64` and `f32` for stencils whose
//! fields, scalars and operations are all of that float type (booleans as 1 and 0), and
//! [`Lane`], 64 bits that hold a value of any gtscript type, for stencils that mix types.
//!
//! In a lane a float is an `f64` (a `float32` value exactly, rounded to `float32` after each
//! `float32` operation, which computes in `f32`), an integer an `i64` wrapped to its width
//! after each operation, a boolean 0 or 1. Every instruction names the type it computes in
//! ([`Instr::ty`]), so the lane's bits are read the right way.

use crate::gtscript::ir::{BinOp, Ty, UnOp, Value};
use crate::gtscript::ops::num::Num;
use crate::gtscript::passes::types::{convert, wrap};
use crate::gtscript::plan::{Instr, Lanes, Op};
use crate::gtscript::rt::interp::{self, bin, un, Arg};
use crate::gtscript::rt::pool::{Pool, Pooled};
use std::cell::RefCell;
use std::thread::LocalKey;

/// An element type of the evaluator.
pub trait Elem:
    crate::kernels::exec::Element
    + Pooled
    + Copy
    + Default
    + PartialEq
    + Send
    + Sync
    + std::fmt::Debug
    + 'static
{
    /// Zero bits: 0 of every type.
    const ZERO: Self;
    /// The plans this element type runs.
    const LANES: Lanes;
    /// Whether memory holding values of type `ty` holds this element type as it is (else the
    /// evaluator converts on every load and store).
    fn native(ty: Ty) -> bool {
        Self::LANES.native(ty)
    }
    /// A value (already of the type it is used as).
    fn from_value(v: Value) -> Self;
    /// The element as a value of type `ty`.
    fn to_value(self, ty: Ty) -> Value;
    /// Runs one instruction over a strip: `d[i] = op(a[i], b[i], c[i])`.
    fn apply(ins: &Instr, d: &mut [Self], a: Arg<'_, Self>, b: Arg<'_, Self>, c: Arg<'_, Self>);
}

/// Gives element type `$t` a pool of buffers on each thread of its own (see [`Pooled`]).
macro_rules! pool {
    ($t:ty) => {
        impl Pooled for $t {
            fn pool() -> &'static LocalKey<RefCell<Pool<Self>>> {
                thread_local! {
                    static POOL: RefCell<Pool<$t>> = const { RefCell::new(Pool::new()) };
                }
                &POOL
            }
        }
    };
}

macro_rules! float_elem {
    ($t:ty, $ty:expr, $lanes:expr) => {
        impl Elem for $t {
            const ZERO: Self = 0.0;
            const LANES: Lanes = $lanes;
            #[inline(always)]
            fn from_value(v: Value) -> Self {
                v.as_f64() as $t
            }
            fn to_value(self, ty: Ty) -> Value {
                convert(Value::F(self as f64), ty)
            }
            #[inline(always)]
            fn apply(
                ins: &Instr,
                d: &mut [Self],
                a: Arg<'_, Self>,
                b: Arg<'_, Self>,
                c: Arg<'_, Self>,
            ) {
                interp::apply(ins.op, d, a, b, c)
            }
        }
        pool!($t);
    };
}
float_elem!(f64, Ty::F64, Lanes::F64);
float_elem!(f32, Ty::F32, Lanes::F32);

/// 64 bits holding a value of any gtscript type (see the module documentation).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct Lane(pub u64);

impl crate::kernels::exec::Element for Lane {}

impl Lane {
    #[inline(always)]
    fn f(self) -> f64 {
        f64::from_bits(self.0)
    }
    #[inline(always)]
    fn i(self) -> i64 {
        self.0 as i64
    }
    #[inline(always)]
    fn of_f(x: f64) -> Lane {
        Lane(x.to_bits())
    }
    #[inline(always)]
    fn of_i(x: i64) -> Lane {
        Lane(x as u64)
    }
    #[inline(always)]
    fn of_bool(b: bool) -> Lane {
        Lane(b as u64)
    }
    #[inline(always)]
    fn value(self, ty: Ty) -> Value {
        if ty.is_float() {
            Value::F(self.f())
        } else {
            Value::I(self.i())
        }
    }
}

/// A float type a lane holds (as an `f64`).
trait InLane: Num {
    fn get(x: Lane) -> Self;
    fn put(self) -> Lane;
}

impl InLane for f64 {
    #[inline(always)]
    fn get(x: Lane) -> f64 {
        x.f()
    }
    #[inline(always)]
    fn put(self) -> Lane {
        Lane::of_f(self)
    }
}

impl InLane for f32 {
    #[inline(always)]
    fn get(x: Lane) -> f32 {
        x.f() as f32
    }
    #[inline(always)]
    fn put(self) -> Lane {
        Lane::of_f(self as f64)
    }
}

/// Floor division and remainder of integers as NumPy computes them: rounded toward negative
/// infinity, the remainder with the divisor's sign, 0 for a zero divisor.
#[inline(always)]
pub(crate) fn int_floordiv(x: i64, y: i64) -> i64 {
    if y == 0 {
        return 0;
    }
    let q = x.wrapping_div(y);
    if (x.wrapping_rem(y) != 0) && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

/// See [`int_floordiv`].
#[inline(always)]
pub(crate) fn int_mod(x: i64, y: i64) -> i64 {
    if y == 0 {
        return 0;
    }
    let r = x.wrapping_rem(y);
    if r != 0 && ((r < 0) != (y < 0)) {
        r + y
    } else {
        r
    }
}

/// `x ** e` wrapping (`e >= 0`; the planner refuses other integer exponents).
#[inline(always)]
pub(crate) fn int_pow(mut x: i64, mut e: i64) -> i64 {
    let mut r: i64 = 1;
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(x);
        }
        x = x.wrapping_mul(x);
        e >>= 1;
    }
    r
}

fn float_ops<T: InLane>(
    ins: &Instr,
    d: &mut [Lane],
    a: Arg<'_, Lane>,
    b: Arg<'_, Lane>,
    c: Arg<'_, Lane>,
) {
    let g = T::get;
    match ins.op {
        Op::Un(UnOp::IsNan) => un(d, a, |x| Lane::of_bool(g(x).is_nan())),
        Op::Un(UnOp::IsInf) => un(d, a, |x| Lane::of_bool(g(x).is_inf())),
        Op::Un(UnOp::IsFinite) => un(d, a, |x| Lane::of_bool(g(x).is_finite())),
        Op::Bin(o @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne)) => {
            bin(d, a, b, |x, y| {
                let (x, y) = (g(x), g(y));
                Lane::of_bool(match o {
                    BinOp::Lt => x < y,
                    BinOp::Le => x <= y,
                    BinOp::Gt => x > y,
                    BinOp::Ge => x >= y,
                    BinOp::Eq => x == y,
                    _ => x != y,
                })
            })
        }
        // Everything else is the float kernel's own operation, on the lanes' values.
        op => {
            let n = d.len();
            let mut buf = [T::ZERO; crate::gtscript::rt::interp::STRIP];
            let mut xs = [[T::ZERO; crate::gtscript::rt::interp::STRIP]; 3];
            let args = [a, b, c];
            for (x, store) in args.iter().zip(xs.iter_mut()) {
                if let Arg::S(s) = x {
                    for (o, v) in store[..n].iter_mut().zip(&s[..n]) {
                        *o = g(*v);
                    }
                }
            }
            let [xa, xb, xc] = &xs;
            fn pick<'s, T: InLane>(x: Arg<'_, Lane>, store: &'s [T], n: usize) -> Arg<'s, T> {
                match x {
                    Arg::V(v) => Arg::V(T::get(v)),
                    Arg::S(_) => Arg::S(&store[..n]),
                }
            }
            interp::apply(
                op,
                &mut buf[..n],
                pick(a, xa, n),
                pick(b, xb, n),
                pick(c, xc, n),
            );
            for (o, v) in d.iter_mut().zip(&buf[..n]) {
                *o = v.put();
            }
        }
    }
}

fn int_ops(ins: &Instr, d: &mut [Lane], a: Arg<'_, Lane>, b: Arg<'_, Lane>) {
    let ty = ins.ty;
    let w = move |v: i64| Lane::of_i(wrap(v, ty));
    match ins.op {
        Op::Un(u) => match u {
            UnOp::Neg => un(d, a, |x| w(x.i().wrapping_neg())),
            UnOp::Abs => un(d, a, |x| w(x.i().wrapping_abs())),
            UnOp::Not => un(d, a, |x| Lane::of_bool(x.0 == 0)),
            UnOp::IsNan | UnOp::IsInf => un(d, a, |_| Lane::of_bool(false)),
            UnOp::IsFinite => un(d, a, |_| Lane::of_bool(true)),
            // floor, ceil, trunc of an integer; the float functions never see one (the types
            // pass casts their operand to a float).
            _ => un(d, a, |x| x),
        },
        Op::Bin(o) => match o {
            BinOp::Add => bin(d, a, b, |x, y| w(x.i().wrapping_add(y.i()))),
            BinOp::Sub => bin(d, a, b, |x, y| w(x.i().wrapping_sub(y.i()))),
            BinOp::Mul => bin(d, a, b, |x, y| w(x.i().wrapping_mul(y.i()))),
            BinOp::FloorDiv | BinOp::Div => bin(d, a, b, |x, y| w(int_floordiv(x.i(), y.i()))),
            BinOp::Mod => bin(d, a, b, |x, y| w(int_mod(x.i(), y.i()))),
            BinOp::Pow => bin(d, a, b, |x, y| w(int_pow(x.i(), y.i()))),
            BinOp::Min => bin(d, a, b, |x, y| Lane::of_i(x.i().min(y.i()))),
            BinOp::Max => bin(d, a, b, |x, y| Lane::of_i(x.i().max(y.i()))),
            BinOp::Lt => bin(d, a, b, |x, y| Lane::of_bool(x.i() < y.i())),
            BinOp::Le => bin(d, a, b, |x, y| Lane::of_bool(x.i() <= y.i())),
            BinOp::Gt => bin(d, a, b, |x, y| Lane::of_bool(x.i() > y.i())),
            BinOp::Ge => bin(d, a, b, |x, y| Lane::of_bool(x.i() >= y.i())),
            BinOp::Eq => bin(d, a, b, |x, y| Lane::of_bool(x.i() == y.i())),
            BinOp::Ne => bin(d, a, b, |x, y| Lane::of_bool(x.i() != y.i())),
            BinOp::And => bin(d, a, b, |x, y| Lane::of_bool(x.0 != 0 && y.0 != 0)),
            BinOp::Or => bin(d, a, b, |x, y| Lane::of_bool(x.0 != 0 || y.0 != 0)),
        },
        _ => unreachable!("handled by the caller"),
    }
}

impl Elem for Lane {
    const ZERO: Self = Lane(0);
    const LANES: Lanes = Lanes::Wide;

    #[inline(always)]
    fn from_value(v: Value) -> Self {
        match v {
            Value::F(x) => Lane::of_f(x),
            Value::I(x) => Lane::of_i(x),
        }
    }

    fn to_value(self, ty: Ty) -> Value {
        self.value(ty)
    }

    fn apply(ins: &Instr, d: &mut [Self], a: Arg<'_, Self>, b: Arg<'_, Self>, c: Arg<'_, Self>) {
        let ty = ins.ty;
        match ins.op {
            Op::Mov => un(d, a, |x| x),
            Op::Cast(to) => un(d, a, |x| Lane::from_value(convert(x.value(ty), to))),
            Op::Sel => {
                for (i, d) in d.iter_mut().enumerate() {
                    *d = if interp::at(a, i).0 != 0 {
                        interp::at(b, i)
                    } else {
                        interp::at(c, i)
                    };
                }
            }
            _ if ty == Ty::F64 => float_ops::<f64>(ins, d, a, b, c),
            _ if ty == Ty::F32 => float_ops::<f32>(ins, d, a, b, c),
            _ => int_ops(ins, d, a, b),
        }
    }
}

pool!(Lane);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_division_floors_as_numpy() {
        assert_eq!(int_floordiv(-7, 2), -4);
        assert_eq!(int_mod(-7, 2), 1);
        assert_eq!(int_mod(7, -2), -1);
        assert_eq!(int_floordiv(7, 0), 0);
        assert_eq!(int_mod(7, 0), 0);
        assert_eq!(int_floordiv(i64::MIN, -1), i64::MIN);
        assert_eq!(int_pow(3, 4), 81);
        assert_eq!(int_pow(-1, 1 << 40), 1);
    }
}
