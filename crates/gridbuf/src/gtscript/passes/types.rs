//! Types of a gtscript program, by GT4Py's rules: every operation computes in the type GT4Py's
//! upcaster picks for it (NumPy's ufunc loops over GT4Py's type order: the smallest loop type
//! at least as large as every operand), every assignment converts to its target's type, and a
//! temporary without a declared type takes the type of its first assignment. [`check`] makes
//! every conversion an explicit [`Expr::Cast`] (literals are converted at once), so the planner
//! and the evaluators see operations whose operands all have one type.

use crate::error::Result;
use crate::gtscript::ir::{def_error, Access, BinOp, Expr, KIndex, Program, Ty, UnOp, Value};
use crate::gtscript::ops::{Operands, TypeRule};

/// The type an operation on operands of type `a` (and `b`) computes in, and the type of its
/// result.
pub fn bin_types(op: BinOp, a: Ty, b: Ty) -> (Ty, Ty) {
    crate::gtscript::ops::bin(op).rule.types(a.max(b))
}

/// Whether `op` is a math function with float loops only.
pub fn float_only(op: UnOp) -> bool {
    crate::gtscript::ops::un(op).float_fn
}

/// The type a unary operation on an operand of type `a` computes in, and its result's type.
pub fn un_types(op: UnOp, a: Ty) -> (Ty, Ty) {
    crate::gtscript::ops::un(op).rule.types(a)
}

/// 2^63, the first float beyond `int64`.
pub const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// NumPy's float-to-integer conversion on x86-64 to integer type `t` (before wrapping to its
/// width): values in `lo..hi` truncate, anything else (NaN, infinities, out of range) gives
/// `bad`, the smallest `int64` for `int64` and the smallest `int32` otherwise. The code
/// generators write this rule out (`jit::wide`, `cgen::tape`).
pub fn float_to_int_range(t: Ty) -> (f64, f64, i64) {
    if t == Ty::I64 {
        (-TWO_63, TWO_63, i64::MIN)
    } else {
        (-2147483648.0, 2147483648.0, i32::MIN as i64)
    }
}

/// The value `v` converted to `to` as NumPy converts on this machine (x86-64): floats to
/// integers truncate toward zero, and a NaN, an infinity or a value out of range becomes the
/// smallest `int32` (`int64` for `int64`), which `int8` and `int16` then wrap (to 0); integers
/// wrap; anything nonzero (NaN too) is `True`; integers round to the nearest float once.
pub fn convert(v: Value, to: Ty) -> Value {
    match (v, to) {
        (Value::F(x), Ty::Bool) => Value::I((x != 0.0) as i64),
        (Value::I(x), Ty::Bool) => Value::I((x != 0) as i64),
        (Value::F(x), Ty::F64) => Value::F(x),
        (Value::F(x), Ty::F32) => Value::F(x as f32 as f64),
        (Value::I(x), Ty::F64) => Value::F(x as f64),
        (Value::I(x), Ty::F32) => Value::F(x as f32 as f64),
        (Value::F(x), Ty::I64) => Value::I(if x.is_nan() || !(-TWO_63..TWO_63).contains(&x) {
            i64::MIN
        } else {
            x as i64
        }),
        (Value::F(x), t) => Value::I(wrap(
            if x.is_nan() || !(-2147483648.0..2147483648.0).contains(&x) {
                i32::MIN as i64
            } else {
                x as i64
            },
            t,
        )),
        (Value::I(x), t) => Value::I(wrap(x, t)),
    }
}

/// `v` wrapped to the integer type `t` (two's complement), or 0/1 for `bool`.
#[inline(always)]
pub fn wrap(v: i64, t: Ty) -> i64 {
    match t {
        Ty::Bool => (v != 0) as i64,
        Ty::I8 => v as i8 as i64,
        Ty::I16 => v as i16 as i64,
        Ty::I32 => v as i32 as i64,
        _ => v,
    }
}

/// A program's types: each temporary's, and a pass making every conversion explicit.
struct Checker<'p> {
    p: &'p Program,
    temps: Vec<Option<Ty>>,
}

/// A typed expression: the expression with its conversions, the type its value has, and, for
/// the operations whose NumPy result type differs from the type GT4Py's upcaster assumes for
/// them (see [`check`]), that assumed type.
struct Typed {
    e: Expr,
    ty: Ty,
    naive: Option<Ty>,
}

/// NumPy's result type of `**` on operands of types `a` and `b` (the ufunc's own promotion,
/// which GT4Py's numpy backend uses for powers).
fn numpy_pow_type(a: Ty, b: Ty) -> Ty {
    let wide_int = |t: Ty| matches!(t, Ty::I32 | Ty::I64);
    if (a == Ty::F32 && wide_int(b)) || (b == Ty::F32 && wide_int(a)) {
        Ty::F64
    } else {
        a.max(b).max(Ty::I8)
    }
}

fn refuse(line: u32, what: impl std::fmt::Display) -> crate::error::Error {
    def_error(line, what.to_string())
}

impl Checker<'_> {
    fn access_ty(&self, a: Access, line: u32) -> Result<Ty> {
        match a {
            Access::Field { field, .. } => Ok(self.p.fields[field].ty),
            Access::Temp(t) => self.temps[t].ok_or_else(|| {
                def_error(
                    line,
                    format!(
                        "temporary {:?} is read before any assignment gives it a type",
                        self.p.temps[t].name
                    ),
                )
            }),
        }
    }

    /// A typed operand. Where GT4Py assumes another type than NumPy computes (see [`Typed`]):
    /// a division of integers or a float function of an integer is refused (GT4Py assumes an
    /// integer there and a parent's cast truncates the value); a power computed in `float64`
    /// whose type GT4Py takes for `float32` is kept, since every parent computes in NumPy's
    /// `float64` then, as here: returns its assumed type too.
    fn operand(&self, e: &Expr, line: u32) -> Result<(Expr, Ty, Ty)> {
        let t = self.expr(e, line)?;
        match t.naive {
            Some(n) if !n.is_float() => Err(refuse(
                line,
                "a true division of integers or a float function of an integer used inside a larger expression: GT4Py computes it in its operands' integer type there, unlike NumPy; assign it to a float field or a typed float temporary first",
            )),
            n => Ok((t.e, t.ty, n.unwrap_or(t.ty))),
        }
    }

    /// Checks that GT4Py, which casts the operands of an operation to `assumed` (computed from
    /// the types it assumes), gives them the values they have here, cast to `real`: where a
    /// power's real type is wider than GT4Py assumes, an operand beside it is cast to
    /// `float32` by GT4Py before NumPy widens it, which rounds integers beyond 2^24.
    fn siblings(&self, line: u32, assumed: Ty, real: Ty, tys: &[Ty]) -> Result<()> {
        let exact = |t: Ty| matches!(t, Ty::Bool | Ty::I8 | Ty::I16) || t.is_float();
        if assumed != real && !tys.iter().all(|&t| exact(t)) {
            return Err(refuse(
                line,
                "a float32 power with an integer exponent beside an int32 or int64 value: GT4Py rounds that value to float32 before NumPy computes in float64; cast it explicitly",
            ));
        }
        Ok(())
    }

    /// Whether GT4Py types `e` as a boolean: a boolean value, or a native function that takes
    /// two booleans (`%`, `**`, min, max; also `x if c else y`) applied to two of them, which
    /// GT4Py types as a boolean although NumPy computes an integer; so GT4Py refuses `-(a % b)`
    /// on booleans `a`, `b`, and `-abs(b)` on a boolean `b`. Reads the types of leaves only (no retyping: linear in `e`).
    fn gt4py_bool(&self, e: &Expr, line: u32) -> bool {
        match e {
            Expr::Read(a, _) | Expr::ReadK(a, _, _) => {
                matches!(self.access_ty(*a, line), Ok(Ty::Bool))
            }
            Expr::Scalar(s) => self.p.scalars[*s].ty == Ty::Bool,
            Expr::Const(_, t) | Expr::Cast(t, _) => *t == Ty::Bool,
            // GT4Py gives its native functions (`abs`, `floor`, `sqrt`, ...) their operand's
            // type, so `abs` of a boolean is a boolean to it; tests (`isnan`, ...) and `not`
            // give one.
            Expr::Un(op, a) => match crate::gtscript::ops::un(*op).rule {
                TypeRule::Predicate => true,
                _ => *op != UnOp::Neg && self.gt4py_bool(a, line),
            },
            Expr::Bin(BinOp::Mod | BinOp::Pow | BinOp::Min | BinOp::Max, a, b)
            | Expr::Select(_, a, b) => self.gt4py_bool(a, line) && self.gt4py_bool(b, line),
            // Comparisons and `and`/`or`; arithmetic is never a boolean here.
            Expr::Bin(op, _, _) => crate::gtscript::ops::bin(*op).operands != Operands::NotBothBool,
        }
    }

    fn expr(&self, e: &Expr, line: u32) -> Result<Typed> {
        let plain = |e: Expr, ty: Ty| Typed { e, ty, naive: None };
        let naive = |assumed: Ty, real: Ty| (assumed != real).then_some(assumed);
        Ok(match e {
            Expr::Read(a, _) => plain(e.clone(), self.access_ty(*a, line)?),
            Expr::ReadK(a, k, i) => {
                let (i, it, _) = self.operand(i, line)?;
                if !it.is_int() {
                    let what = match k {
                        KIndex::Relative => "variable K offset",
                        KIndex::Absolute => "absolute K index (.at(K=...))",
                    };
                    return Err(refuse(
                        line,
                        format!(
                            "a {what} of type {}: GT4Py takes integer expressions only",
                            it.name()
                        ),
                    ));
                }
                plain(Expr::ReadK(*a, *k, Box::new(i)), self.access_ty(*a, line)?)
            }
            Expr::Scalar(s) => plain(e.clone(), self.p.scalars[*s].ty),
            Expr::Const(_, t) => plain(e.clone(), *t),
            Expr::Cast(t, a) => {
                // GT4Py's casts convert NumPy's value, whatever type it assumed.
                let (a, at, _) = self.operand(a, line)?;
                plain(cast(a, at, *t), *t)
            }
            Expr::Un(op, a) => {
                let gt4py_bool = self.gt4py_bool(a, line);
                let (a, at, an) = self.operand(a, line)?;
                match (crate::gtscript::ops::un(*op).operands, at) {
                    (Operands::NoBool, _) if gt4py_bool => {
                        return Err(refuse(line, "unary minus on a boolean (GT4Py refuses it; it types `%`, `**`, min and max of two booleans as a boolean too)"))
                    }
                    (Operands::BoolOnly, t) if t != Ty::Bool => {
                        return Err(refuse(
                            line,
                            format!("`not` on a {} value: GT4Py takes booleans only (compare it, e.g. `x != 0`)", t.name()),
                        ))
                    }
                    _ => {}
                }
                let (t, r) = un_types(*op, at);
                let assumed = if float_only(*op) && !at.is_float() {
                    at
                } else {
                    un_types(*op, an).1
                };
                Typed {
                    e: Expr::Un(*op, Box::new(cast(a, at, t))),
                    ty: r,
                    naive: naive(assumed, r),
                }
            }
            Expr::Bin(op, a, b) => {
                let (a, at, an) = self.operand(a, line)?;
                let (b, bt, bn) = self.operand(b, line)?;
                let operands = crate::gtscript::ops::bin(*op).operands;
                let logical = operands == Operands::BoolOnly;
                if logical && (at != Ty::Bool || bt != Ty::Bool) {
                    return Err(refuse(
                        line,
                        "`and`/`or` on a value that is not a boolean: GT4Py takes booleans only (compare it, e.g. `x != 0`)",
                    ));
                }
                // GT4Py refuses its arithmetic operators on two booleans; its native
                // functions (`%`, `**`, min, max) take them.
                let arithmetic = operands == Operands::NotBothBool;
                if arithmetic && at == Ty::Bool && bt == Ty::Bool {
                    return Err(refuse(
                        line,
                        "arithmetic on two booleans (GT4Py refuses it; use `and`, `or`, or cast one to an int)",
                    ));
                }
                let (mut t, mut r) = bin_types(*op, at, bt);
                let (tg, mut assumed) = bin_types(*op, an, bn);
                if *op != BinOp::Pow {
                    self.siblings(line, tg, t, &[at, bt])?;
                }
                if *op == BinOp::Div && !at.is_float() && !bt.is_float() {
                    assumed = at.max(bt);
                }
                if *op == BinOp::Pow {
                    // NumPy's power promotes its operands itself (GT4Py inserts no casts).
                    let real = numpy_pow_type(at, bt);
                    assumed = an.max(bn).max(Ty::I8);
                    (t, r) = (real, real);
                    if t.is_int() && !matches!(b, Expr::Const(Value::I(n), _) if n >= 0) {
                        return Err(refuse(
                            line,
                            "an integer power whose exponent is not a non-negative integer literal (NumPy refuses negative integer exponents at run time); make the base or the exponent a float",
                        ));
                    }
                }
                if *op == BinOp::Pow && at.is_float() && at == t {
                    if let Some(e) = numpy_fast_power(&a, &b, t) {
                        return Ok(Typed {
                            e,
                            ty: r,
                            naive: naive(assumed, r),
                        });
                    }
                }
                Typed {
                    e: Expr::Bin(*op, Box::new(cast(a, at, t)), Box::new(cast(b, bt, t))),
                    ty: r,
                    naive: naive(assumed, r),
                }
            }
            Expr::Select(c, a, b) => {
                let (c, ct, _) = self.operand(c, line)?;
                if ct != Ty::Bool {
                    return Err(refuse(
                        line,
                        format!("a condition of type {}: GT4Py takes boolean conditions only (compare it, e.g. `x != 0`)", ct.name()),
                    ));
                }
                // `c ? true : false` (how the frontend has an `if` condition checked) is `c`.
                let lit =
                    |e: &Expr, v: i64| matches!(e, Expr::Const(Value::I(x), Ty::Bool) if *x == v);
                if lit(a, 1) && lit(b, 0) {
                    return Ok(plain(c, Ty::Bool));
                }
                let (a, at, an) = self.operand(a, line)?;
                let (b, bt, bn) = self.operand(b, line)?;
                let t = at.max(bt);
                let assumed = an.max(bn);
                self.siblings(line, assumed, t, &[at, bt])?;
                Typed {
                    e: Expr::Select(
                        Box::new(c),
                        Box::new(cast(a, at, t)),
                        Box::new(cast(b, bt, t)),
                    ),
                    ty: t,
                    naive: naive(assumed, t),
                }
            }
        })
    }
}

/// `e` (of type `from`) converted to `to`: unchanged when the types agree, a literal converted
/// at once, else a cast node.
/// NumPy's `ndarray ** scalar` for a float array `a` (of type `t`): an exponent of 0.5 is
/// `sqrt(a)` and one of -1 is `1 / a` (its fast path; `pow` differs from them by an ulp in a
/// few cases in a thousand). GT4Py's numpy backend computes `a ** 0.5` so, where `a` reads a
/// field or temporary (an array there); a scalar base is a NumPy scalar, which calls `pow`.
fn numpy_fast_power(a: &Expr, b: &Expr, t: Ty) -> Option<Expr> {
    let exponent = match b {
        Expr::Const(Value::F(x), _) => *x,
        Expr::Const(Value::I(x), _) => *x as f64,
        _ => return None,
    };
    let mut array = false;
    a.reads(&mut |_, _| array = true);
    a.var_reads(&mut |_, _| array = true);
    if !array {
        return None;
    }
    if exponent == 0.5 {
        Some(Expr::Un(UnOp::Sqrt, Box::new(a.clone())))
    } else if exponent == -1.0 {
        Some(Expr::Bin(
            BinOp::Div,
            Box::new(Expr::Const(Value::F(1.0), t)),
            Box::new(a.clone()),
        ))
    } else {
        None
    }
}

fn cast(e: Expr, from: Ty, to: Ty) -> Expr {
    if from == to {
        return e;
    }
    match e {
        Expr::Const(v, _) => Expr::Const(convert(v, to), to),
        e => Expr::Cast(to, Box::new(e)),
    }
}

/// The type of a checked expression (see [`check`]).
pub fn type_of(p: &Program, e: &Expr) -> Ty {
    match e {
        Expr::Read(Access::Field { field, .. }, _) => p.fields[*field].ty,
        Expr::Read(Access::Temp(t), _) => p.temps[*t].ty.unwrap_or(Ty::F64),
        Expr::ReadK(Access::Field { field, .. }, ..) => p.fields[*field].ty,
        Expr::ReadK(Access::Temp(t), ..) => p.temps[*t].ty.unwrap_or(Ty::F64),
        Expr::Scalar(s) => p.scalars[*s].ty,
        Expr::Const(_, t) | Expr::Cast(t, _) => *t,
        Expr::Un(op, a) => un_types(*op, type_of(p, a)).1,
        Expr::Bin(op, a, b) => bin_types(*op, type_of(p, a), type_of(p, b)).1,
        Expr::Select(_, a, _) => type_of(p, a),
    }
}

/// Gives every temporary its type and makes every conversion explicit: afterwards each
/// operation's operands have the type it computes in, and each statement's value has its
/// target's type.
pub fn check(p: &mut Program) -> Result<()> {
    let mut ck = Checker {
        p: &*p,
        temps: p.temps.iter().map(|t| t.ty).collect(),
    };
    let mut out = Vec::new();
    for s in &p.sections {
        let mut stmts = Vec::new();
        for st in &s.stmts {
            if let Access::Temp(tq) = st.target {
                // A temporary first written under a mask (`sel mask value old`) takes the
                // type of the value.
                if let (None, Expr::Select(_, a, b)) = (ck.temps[tq], &st.expr) {
                    if matches!(**b, Expr::Read(Access::Temp(u), _) if u == tq) {
                        let t = ck.expr(a, st.line)?;
                        ck.temps[tq] = Some(t.naive.unwrap_or(t.ty));
                    }
                }
            }
            let t = ck.expr(&st.expr, st.line)?;
            let target = match st.target {
                Access::Temp(tq) => *ck.temps[tq].get_or_insert(t.naive.unwrap_or(t.ty)),
                a => ck.access_ty(a, st.line)?,
            };
            // GT4Py casts such a value to the target where the target's type differs from
            // the one it assumed, and where they agree NumPy's assignment rounds it as a cast
            // would: a cast to the target either way, but for a division of integers or a float
            // function of an integer GT4Py refuses integer and boolean targets.
            if t.naive.is_some_and(|n| !n.is_float()) && !target.is_float() {
                return Err(refuse(
                    st.line,
                    format!("a true division of integers or a float function of an integer assigned to a {} target: GT4Py refuses it (type mismatch); assign it to a float field or a typed float temporary", target.name()),
                ));
            }
            // GT4Py types `%` of two booleans as a boolean, so it casts nothing into a boolean
            // target, and then finds NumPy's int8 remainder there: a type mismatch. Also under
            // an `if` (the frontend's `sel(mask, value, target)`).
            let value = match &st.expr {
                Expr::Select(_, v, old) if matches!(**old, Expr::Read(a, _) if a == st.target) => v,
                e => e,
            };
            if target == Ty::Bool {
                if let Expr::Bin(BinOp::Mod, a, b) = value {
                    if ck.gt4py_bool(a, st.line) && ck.gt4py_bool(b, st.line) {
                        return Err(refuse(
                            st.line,
                            "`%` of two booleans assigned to a boolean target: GT4Py refuses it (type mismatch: NumPy's remainder of booleans is an int8); assign it to an integer target",
                        ));
                    }
                }
            }
            // A write at a run-time K level: an integer index, as GT4Py's variable K offsets.
            let k_var = match &st.k_var {
                Some(k) => {
                    let (k, kt, _) = ck.operand(k, st.line)?;
                    if !kt.is_int() {
                        return Err(refuse(
                            st.line,
                            format!(
                                "a variable K offset of type {} on an assignment: GT4Py takes integer expressions only",
                                kt.name()
                            ),
                        ));
                    }
                    Some(k)
                }
                None => None,
            };
            stmts.push((cast(t.e, t.ty, target), k_var));
        }
        out.push(stmts);
    }
    let temps = ck.temps;
    for (s, stmts) in p.sections.iter_mut().zip(out) {
        for (st, (e, k)) in s.stmts.iter_mut().zip(stmts) {
            st.expr = e;
            st.k_var = k;
        }
    }
    for (decl, t) in p.temps.iter_mut().zip(temps) {
        decl.ty = Some(t.unwrap_or(Ty::F64));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upcasts_as_gt4py() {
        assert_eq!(bin_types(BinOp::Add, Ty::I32, Ty::F32), (Ty::F32, Ty::F32));
        assert_eq!(bin_types(BinOp::Div, Ty::I32, Ty::I32), (Ty::F32, Ty::F32));
        assert_eq!(bin_types(BinOp::Div, Ty::I64, Ty::F64), (Ty::F64, Ty::F64));
        assert_eq!(
            bin_types(BinOp::FloorDiv, Ty::Bool, Ty::Bool),
            (Ty::I8, Ty::I8)
        );
        assert_eq!(bin_types(BinOp::Lt, Ty::I8, Ty::I16), (Ty::I16, Ty::Bool));
        assert_eq!(un_types(UnOp::Sqrt, Ty::I64), (Ty::F32, Ty::F32));
        assert_eq!(un_types(UnOp::Neg, Ty::Bool), (Ty::I8, Ty::I8));
        assert_eq!(convert(Value::F(-2.7), Ty::I32), Value::I(-2));
        assert_eq!(convert(Value::I(300), Ty::I8), Value::I(44));
        assert_eq!(convert(Value::F(0.1), Ty::F32), Value::F(0.1f32 as f64));
        assert_eq!(
            convert(Value::F(f64::NAN), Ty::I32),
            Value::I(i32::MIN as i64)
        );
        assert_eq!(convert(Value::F(1e20), Ty::I8), Value::I(0));
        assert_eq!(convert(Value::F(f64::NAN), Ty::Bool), Value::I(1));
        assert_eq!(convert(Value::I(16777217), Ty::F32), Value::F(16777216.0));
    }

    /// Where GT4Py assumes `float32` for a power NumPy computes in `float64`, the parents
    /// compute in NumPy's `float64`; divisions of integers inside expressions are refused.
    #[test]
    fn powers_and_divisions_gt4py_mistypes() {
        let prog = |stmt: &str| {
            Program::parse(&format!(
                "stencil t\nfield a float32 IJK\nfield n int32 IJK\nfield o float32 IJK\n\
                 comp PARALLEL\ninterval S 0 E 0\nstmt 1 f 2 0 {stmt}\n"
            ))
            .unwrap()
        };
        let mut p = prog("sub pow f 0 0 0 0 0 lit int64 2 f 0 0 0 0 0");
        check(&mut p).unwrap();
        let Expr::Cast(Ty::F32, e) = &p.sections[0].stmts[0].expr else {
            panic!("{:?}", p.sections[0].stmts[0].expr)
        };
        assert_eq!(type_of(&p, e), Ty::F64);
        assert!(check(&mut prog("add pow f 0 0 0 0 0 lit int64 2 f 1 0 0 0 0")).is_err());
        assert!(check(&mut prog("mul div f 1 0 0 0 0 f 1 0 0 0 0 lit int64 2")).is_err());
        check(&mut prog("div f 1 0 0 0 0 f 1 0 0 0 0")).unwrap();
    }

    #[test]
    fn makes_conversions_explicit() {
        let mut p = Program::parse(
            "stencil t\nfield a float32 IJK\nfield n int32 IJK\nfield o float32 IJK\ntemp x auto\n\
             comp PARALLEL\ninterval S 0 E 0\nstmt 1 t 0 mul f 0 0 0 0 0 c 2.0\nstmt 2 f 2 0 add t 0 0 0 0 f 1 0 0 0 0\n",
        )
        .unwrap();
        check(&mut p).unwrap();
        assert_eq!(p.temps[0].ty, Some(Ty::F64));
        let e = &p.sections[0].stmts[1].expr;
        assert!(matches!(e, Expr::Cast(Ty::F32, _)), "{e:?}");
        assert_eq!(type_of(&p, e), Ty::F32);
    }
}
