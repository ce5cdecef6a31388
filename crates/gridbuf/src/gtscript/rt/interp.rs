//! The vector instruction kernels: one tight loop per operation over a strip of operands.

use crate::gtscript::ir::{BinOp, UnOp};
use crate::gtscript::ops;
use crate::gtscript::ops::num::Num;
use crate::gtscript::plan::Op;

/// An operand over one strip.
#[derive(Copy, Clone)]
pub enum Arg<'a, T> {
    /// One value per point of the strip.
    S(&'a [T]),
    /// One value for every point.
    V(T),
}

#[inline(always)]
pub(crate) fn un<T: Copy, U: Copy>(d: &mut [U], a: Arg<'_, T>, f: impl Fn(T) -> U) {
    match a {
        Arg::S(x) => {
            for (d, x) in d.iter_mut().zip(x) {
                *d = f(*x);
            }
        }
        Arg::V(x) => {
            let v = f(x);
            for d in d.iter_mut() {
                *d = v;
            }
        }
    }
}

#[inline(always)]
pub(crate) fn bin<T: Copy, U: Copy>(
    d: &mut [U],
    a: Arg<'_, T>,
    b: Arg<'_, T>,
    f: impl Fn(T, T) -> U,
) {
    match (a, b) {
        (Arg::S(x), Arg::S(y)) => {
            for ((d, x), y) in d.iter_mut().zip(x).zip(y) {
                *d = f(*x, *y);
            }
        }
        (Arg::S(x), Arg::V(y)) => {
            for (d, x) in d.iter_mut().zip(x) {
                *d = f(*x, y);
            }
        }
        (Arg::V(x), Arg::S(y)) => {
            for (d, y) in d.iter_mut().zip(y) {
                *d = f(x, *y);
            }
        }
        (Arg::V(x), Arg::V(y)) => {
            let v = f(x, y);
            for d in d.iter_mut() {
                *d = v;
            }
        }
    }
}

#[inline(always)]
fn tri<T: Num>(d: &mut [T], a: Arg<'_, T>, b: Arg<'_, T>, c: Arg<'_, T>, f: impl Fn(T, T, T) -> T) {
    match (a, b, c) {
        (Arg::S(x), Arg::S(y), Arg::S(z)) => {
            for (((d, x), y), z) in d.iter_mut().zip(x).zip(y).zip(z) {
                *d = f(*x, *y, *z);
            }
        }
        (Arg::V(x), Arg::S(y), Arg::S(z)) => {
            for ((d, y), z) in d.iter_mut().zip(y).zip(z) {
                *d = f(x, *y, *z);
            }
        }
        (Arg::S(x), Arg::V(y), Arg::S(z)) => {
            for ((d, x), z) in d.iter_mut().zip(x).zip(z) {
                *d = f(*x, y, *z);
            }
        }
        (Arg::S(x), Arg::S(y), Arg::V(z)) => {
            for ((d, x), y) in d.iter_mut().zip(x).zip(y) {
                *d = f(*x, *y, z);
            }
        }
        _ => {
            for (i, d) in d.iter_mut().enumerate() {
                *d = f(at(a, i), at(b, i), at(c, i));
            }
        }
    }
}

#[inline(always)]
fn arith<T: Num>(op: BinOp, x: T, y: T) -> T {
    ops::eval_bin(op, x, y)
}

#[inline(always)]
fn truth<T: Num>(b: bool) -> T {
    if b {
        T::ONE
    } else {
        T::ZERO
    }
}

#[inline(always)]
pub(crate) fn at<T: Copy>(a: Arg<'_, T>, i: usize) -> T {
    match a {
        Arg::S(x) => x[i],
        Arg::V(v) => v,
    }
}

#[inline(always)]
pub(crate) fn apply<T: Num>(op: Op, d: &mut [T], a: Arg<'_, T>, b: Arg<'_, T>, c: Arg<'_, T>) {
    match op {
        Op::Mov => un(d, a, |x| x),
        // Reads memory: run by the strip (`strip::load_k`), never here.
        Op::LoadK(..) => unreachable!("LoadK is run by the strip"),
        Op::Guard(_) | Op::End => unreachable!("a guarded run's markers are read by the strip"),
        Op::StoreK(..) => unreachable!("StoreK is run by the strip"),
        // A homogeneous float stencil converts only between its float type and booleans
        // (1 and 0): to a boolean tests for nonzero (NaN is true, as in NumPy).
        Op::Cast(crate::gtscript::ir::Ty::Bool) => un(d, a, |x| truth(x != T::ZERO)),
        Op::Cast(_) => un(d, a, |x| x),
        // One loop per operation, `ops::eval_un` (`eval_bin`) with the operation a constant.
        Op::Un(u) => {
            macro_rules! each {
                ($($op:ident),*) => {
                    match u {
                        $(UnOp::$op => un(d, a, |x| ops::eval_un(UnOp::$op, x)),)*
                        // The functions of `math.rs`, the same the compiled code calls.
                        _ => {
                            let (_, f) = T::unary_fn(u).expect("every other unary op has a function");
                            un(d, a, |x| f(x))
                        }
                    }
                };
            }
            each!(Neg, Not, Abs, Sqrt, Floor, Ceil, Trunc, Round, RoundAway, IsFinite, IsNan, IsInf)
        }
        Op::Bin(o) => {
            macro_rules! each {
                ($($op:ident),*) => {
                    match o {
                        $(BinOp::$op => bin(d, a, b, |x, y| ops::eval_bin(BinOp::$op, x, y)),)*
                        // The functions of `math.rs` (`pow`, `mod`, `floordiv`), the same the
                        // compiled code calls.
                        _ => {
                            let (_, f) = T::binary_fn(o).expect("every other binary op has a function");
                            bin(d, a, b, |x, y| f(x, y))
                        }
                    }
                };
            }
            each!(Add, Sub, Mul, Div, Min, Max, Lt, Le, Gt, Ge, Eq, Ne, And, Or)
        }
        Op::Bin2(o1, o2) => {
            macro_rules! fused {
                ($($p:path => $q:path),*) => {
                    match (o1, o2) {
                        $(($p, $q) => tri(d, a, b, c, |x, y, z| arith($q, arith($p, x, y), z)),)*
                        _ => tri(d, a, b, c, |x, y, z| arith(o2, arith(o1, x, y), z)),
                    }
                };
            }
            // One monomorphic loop per operator pair, so the operators are constants inside.
            fused!(
                BinOp::Add => BinOp::Add, BinOp::Add => BinOp::Sub, BinOp::Add => BinOp::Mul,
                BinOp::Add => BinOp::Div, BinOp::Sub => BinOp::Add, BinOp::Sub => BinOp::Sub,
                BinOp::Sub => BinOp::Mul, BinOp::Sub => BinOp::Div, BinOp::Mul => BinOp::Add,
                BinOp::Mul => BinOp::Sub, BinOp::Mul => BinOp::Mul, BinOp::Mul => BinOp::Div,
                BinOp::Div => BinOp::Add, BinOp::Div => BinOp::Sub, BinOp::Div => BinOp::Mul
            )
        }
        Op::Sel => match (a, b, c) {
            (Arg::S(m), Arg::S(x), Arg::S(y)) => {
                for (((d, m), x), y) in d.iter_mut().zip(m).zip(x).zip(y) {
                    *d = if *m != T::ZERO { *x } else { *y };
                }
            }
            (Arg::S(m), Arg::V(x), Arg::S(y)) => {
                for ((d, m), y) in d.iter_mut().zip(m).zip(y) {
                    *d = if *m != T::ZERO { x } else { *y };
                }
            }
            (Arg::S(m), Arg::S(x), Arg::V(y)) => {
                for ((d, m), x) in d.iter_mut().zip(m).zip(x) {
                    *d = if *m != T::ZERO { *x } else { y };
                }
            }
            _ => {
                for (i, d) in d.iter_mut().enumerate() {
                    *d = if at(a, i) != T::ZERO {
                        at(b, i)
                    } else {
                        at(c, i)
                    };
                }
            }
        },
    }
}

/// Points per strip of the tape interpreter.
pub(crate) const STRIP: usize = 512;
