//! One point of a tape as C: each instruction with the semantics of its Cranelift code
//! (`jit::emit` for one float type, `jit::wide` for mixed-type lanes), for the functions
//! `cgen::source` writes around it.

use crate::gtscript::ir::{BinOp, KIndex, Ty, UnOp, Value};
use crate::gtscript::ops::{self, Against, BinCode, UnCode};
use crate::gtscript::plan::{Instr, Lanes, Op, Src};
use cranelift_codegen::ir::condcodes::FloatCC;
use std::fmt::Write;

/// Why a function has no C (it stays on tier one).
pub(crate) type Refusal = String;

/// The C type of one element in memory and of a register, for the single-float lanes.
pub(super) fn float_type(lanes: Lanes) -> &'static str {
    match lanes {
        Lanes::F32 => "float",
        _ => "double",
    }
}

/// One point's code, the variable holding its result and that variable's kind.
pub(super) struct Body {
    pub(super) code: String,
    pub(super) result: String,
    kind: Kind,
}

impl Body {
    /// The result as the bits of a 64-bit lane (mixed-type memory).
    pub(super) fn lane(&self) -> String {
        match self.kind {
            Kind::F => format!("gb_u({})", self.result),
            Kind::M => format!("(uint64_t)({} & 1)", self.result),
            _ => format!("(uint64_t){}", self.result),
        }
    }

    /// The result as a value of `kind` (the same bits).
    pub(super) fn as_kind(&self, kind: Kind) -> String {
        convert(&self.result, self.kind, kind)
    }
}

/// `e` (of kind `from`) as kind `to`, the same bits (`jit::wide`'s `as_ty`); a mask as the
/// boolean it stands for (1 or 0).
fn convert(e: &str, from: Kind, to: Kind) -> String {
    match (to, from) {
        (Kind::M, Kind::M) => e.to_string(),
        (_, Kind::M) => convert(&format!("({e} & 1)"), Kind::I, to),
        (Kind::F, Kind::Lane) => format!("gb_d({e})"),
        (Kind::I, Kind::Lane) => format!("((int64_t){e})"),
        (Kind::F, Kind::I) => format!("gb_di({e})"),
        (Kind::I, Kind::F) => format!("gb_i({e})"),
        _ => e.to_string(),
    }
}

/// The C kind of a value in mixed-type code: a float (`double`, a `float32` value exactly) or
/// an integer or boolean (`int64_t`), as `jit::wide`'s `F64` and `I64` registers.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    F,
    I,
    /// The raw bits of a lane in memory (`uint64_t`).
    Lane,
    /// The single float type's element (one-float-type code).
    T,
    /// A truth as a C `int`, 1 or 0, in one-float-type code (see `Point::float_body`): every
    /// float use converts it to the float 1 or 0.
    B,
    /// A boolean as a mask (`int64_t`): -1 for true, 0 for false. In code for the vectoriser
    /// ([`Point::vector`]), comparisons, `not` and conversions to bool make masks, which
    /// `and`, `or`, `not` and selects (blends) use as they are and every other use reads as 1
    /// or 0: gcc 12 vectorises a loop mixing such masks with float blends, where it leaves one
    /// with 0/1 integers and conditional expressions scalar (pace's remap profile). Scalar
    /// code keeps 0/1, which its branches test as they are (a walk of `lagrangian_contributions`
    /// took 8 % longer with masks).
    M,
}

/// An operand of a tape as C: an expression and its kind.
#[derive(Clone, Debug)]
pub(super) struct Operand {
    pub(super) expr: String,
    pub(super) kind: Kind,
}

/// How a point reads at run-time K levels (`Op::LoadK`): as a row function does (the slot's
/// fields at `vk`, the row's column `col{slot}` and level `kr{slot}`, the point `i`; a level
/// outside is reported and replaced), or as a point function does (`jit::wide`'s `SlotRegs`:
/// `sb`, `sr`, `sd`, `ss`, `sl` per slot; a level outside is reported and the function
/// returns).
#[derive(Copy, Clone, PartialEq, Eq)]
pub(super) enum VkMode {
    Row,
    Point,
}

fn kind_of(ty: Ty) -> Kind {
    if ty.is_float() {
        Kind::F
    } else {
        Kind::I
    }
}

/// The math functions a module calls: the table `gb_init` fills (its (name, address) pairs in
/// [`ops::math_symbols`] order), and whether those glibc's vector math library (libmvec) has
/// are called by their C names instead, declared with vector versions, so that the compiler
/// calls those on whole vectors in the loops it vectorises (see [`VECTOR_MATH_2_22`]).
pub(crate) struct MathTable {
    pub(super) symbols: Vec<(&'static str, *const u8)>,
    pub(super) vector: bool,
}

impl MathTable {
    /// The table of every math function, vectorised where `vector` asks.
    pub(crate) fn new(vector: bool) -> Self {
        MathTable {
            symbols: ops::math_symbols(),
            vector,
        }
    }
}

/// The math functions of gtscript that glibc's libmvec computes on vectors since glibc 2.22,
/// by their C names (the `float` versions end in `f`).
const VECTOR_MATH_2_22: [&str; 5] = ["exp", "log", "sin", "cos", "pow"];

/// Those it computes on vectors since glibc 2.35. On one lane each function of both lists is
/// the C library function tier one calls, but for the inverse hyperbolic functions and the
/// error functions (tier one calls the `libm` crate's).
const VECTOR_MATH_2_35: [&str; 14] = [
    "log10", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "cbrt", "erf", "erfc",
];

/// Whether libmvec computes the math function of C name `base` on vectors.
fn vectorised(base: &str) -> bool {
    VECTOR_MATH_2_22.contains(&base) || VECTOR_MATH_2_35.contains(&base)
}

/// What a module calling the math functions by name starts with (after `PRELUDE`): their
/// declarations with vector versions (`simd`, GCC's attribute: clang ignores it and calls them
/// lane by lane), the newer ones where the C library is new enough, and `pow` as tier one's
/// (`x * x` where the exponent is 2, computed without a branch so the loop stays a vector).
pub(super) fn vector_math_prelude() -> String {
    let declare = |s: &mut String, names: &[&str]| {
        for f in names {
            let args = if *f == "pow" { 2 } else { 1 };
            for (t, suffix) in [("double", ""), ("float", "f")] {
                let params = vec![t; args].join(", ");
                let _ = writeln!(s, "{t} {f}{suffix}({params}) GB_V;");
            }
        }
    };
    let mut s = String::from(
        "#if defined(__GNUC__) && !defined(__clang__)\n#define GB_V __attribute__((simd(\"notinbranch\")))\n#else\n#define GB_V\n#endif\n",
    );
    declare(&mut s, &VECTOR_MATH_2_22);
    s.push_str("#if defined(__GLIBC__)\n#if __GLIBC_PREREQ(2, 35)\n");
    declare(&mut s, &VECTOR_MATH_2_35);
    s.push_str("#endif\n#endif\n");
    s.push_str(
        "static inline double gb_powd(double x, double y) { double p = pow(x, y); return y == 2.0 ? x * x : p; }\n\
         static inline float gb_powf(float x, float y) { float p = powf(x, y); return y == 2.0f ? x * x : p; }\n",
    );
    s
}

/// The name of the math function (`gridbuf_NAME_f64` or `gridbuf_NAME_f32`, see `ops::libm!`,
/// `ops::num`) computing operation `op` on `ty`, where one does.
fn math_name(op: Op, ty: Ty) -> Option<&'static str> {
    match (op, ty) {
        (Op::Un(u), Ty::F64) => ops::math::unary_f64(u).map(|f| f.0),
        (Op::Un(u), _) => ops::math::unary_f32(u).map(|f| f.0),
        (Op::Bin(o) | Op::Bin2(o, _), Ty::F64) => ops::math::binary_f64(o).map(|f| f.0),
        (Op::Bin(o) | Op::Bin2(o, _), _) => ops::math::binary_f32(o).map(|f| f.0),
        _ => None,
    }
}

/// The C function a module with vector math calls for math function `name` on `ty`, where
/// libmvec computes it on vectors (`pow` through the prelude's `gb_powd`/`gb_powf`).
fn vector_function(name: &str, ty: Ty) -> Option<String> {
    let base = name
        .strip_prefix("gridbuf_")
        .and_then(|n| n.strip_suffix(if ty == Ty::F32 { "_f32" } else { "_f64" }))
        .filter(|b| vectorised(b))?;
    Some(match (base, ty == Ty::F32) {
        ("pow", false) => "gb_powd".to_string(),
        ("pow", true) => "gb_powf".to_string(),
        (b, true) => format!("{b}f"),
        (b, false) => b.to_string(),
    })
}

/// Whether gcc vectorises a loop of mixed-type code holding instruction `ins`, written for
/// the vectoriser ([`Point::vector`]): float arithmetic, comparisons, truths and blends, math
/// functions that libmvec has (with `math.vector`), integers added, subtracted, negated or
/// compared. Integer multiplication, division and powers, conversions between integers and
/// floats, and run-time K reads (whose errors are reported in point order) keep it scalar.
pub(super) fn vectorises_wide(ins: &Instr, math: &MathTable) -> bool {
    let ty = ins.ty;
    match ins.op {
        Op::LoadK(..) | Op::StoreK(..) => false,
        Op::Cast(to) => to == Ty::Bool || ty.is_float() == to.is_float(),
        op if op.calls_math(ty) => {
            math.vector
                && math_name(op, ty)
                    .and_then(|n| vector_function(n, ty))
                    .is_some()
        }
        Op::Bin(o) | Op::Bin2(o, _) if !ty.is_float() => !matches!(
            o,
            BinOp::Mul | BinOp::Div | BinOp::FloorDiv | BinOp::Mod | BinOp::Pow
        ),
        _ => true,
    }
}

/// One point of a tape.
pub(super) struct Point<'a> {
    pub(super) tape: &'a [Instr],
    /// The tape's (quantity, offset) operands, in `operands_of` order, and their C.
    pub(super) operands: &'a [(u32, [i32; 3])],
    pub(super) exprs: &'a [Operand],
    pub(super) vk: &'a [(u32, Ty)],
    pub(super) vk_mode: VkMode,
    pub(super) lanes: Lanes,
    pub(super) math: &'a MathTable,
    /// What the point's variables are named after (unique per statement of a function).
    pub(super) prefix: &'a str,
    /// Code written for the C compiler's vectoriser. Float code as straight-line code:
    /// guarded runs computed at every point (their values are only selected where the guard
    /// holds; float operations do not trap), selects as blends of bits, truths and logic
    /// without branches; gcc 12 left a loop over 48 masked statements scalar for each of the
    /// branchy forms (`fix_neg_water`). Mixed-type code keeps its guarded runs and writes its
    /// selects as blends under masks.
    pub(super) vector: bool,
    /// In code for the vectoriser, the guarded runs left out, each outermost run's condition
    /// OR-ed into the named `int` instead (`flag |= taken;`), every value inside a run zero:
    /// where no point of a chunk takes any run, this computes what the whole tape does (a run's
    /// values only reach the select after it, which then takes its other arm), without the
    /// math the runs hold (see `cgen::source::CHUNK`).
    pub(super) skip: Option<&'a str>,
}

/// `0x...` bits of an `f64`, as a C `double` expression (exact, NaN payloads and `-0.0`
/// included).
fn f64_lit(x: f64) -> String {
    format!("gb_d(0x{:016x}ULL)", x.to_bits())
}

/// Whether instruction `ins` (the float operation `o`) raises to the constant power 2: what
/// every `pow` gives there is `x * x` (NumPy's square, `ops::num`), so the C multiplies instead
/// of calling `pow` and discarding its result (pace's icloud, 161,000 calls per call).
fn squares(o: BinOp, ins: &Instr) -> bool {
    o == BinOp::Pow && matches!(ins.args[1], Src::Const(v) if v.as_f64() == 2.0)
}

fn i64_lit(x: i64) -> String {
    format!("((int64_t)0x{:016x}ULL)", x as u64)
}

/// The C operator of a float comparison Cranelift's `fcmp` makes with `cc` (C's comparisons
/// are IEEE's: ordered but `!=`), or a refusal.
fn float_cc(cc: FloatCC, x: &str, y: &str) -> Result<String, Refusal> {
    let op = match cc {
        FloatCC::Equal => "==",
        FloatCC::NotEqual => "!=",
        FloatCC::LessThan => "<",
        FloatCC::LessThanOrEqual => "<=",
        FloatCC::GreaterThan => ">",
        FloatCC::GreaterThanOrEqual => ">=",
        FloatCC::Unordered => return Ok(format!("__builtin_isunordered({x}, {y})")),
        other => return Err(format!("float condition {other:?}")),
    };
    Ok(format!("({x} {op} {y})"))
}

impl Point<'_> {
    /// The index in the math table of the function computing `op` on `ty` (`F64` or `F32`),
    /// and its name.
    fn math(&self, op: Op, ty: Ty) -> Result<(usize, &'static str), Refusal> {
        let name = math_name(op, ty).ok_or_else(|| format!("no math function for {op:?}"))?;
        let i = self
            .math
            .symbols
            .iter()
            .position(|s| s.0 == name)
            .ok_or_else(|| format!("math function {name} not in the table"))?;
        Ok((i, name))
    }

    fn call(&self, op: Op, ty: Ty, args: &[&str]) -> Result<String, Refusal> {
        let (i, name) = self.math(op, ty)?;
        if let Some(f) = Some(name)
            .filter(|_| self.math.vector)
            .and_then(|n| vector_function(n, ty))
        {
            return Ok(format!("{f}({})", args.join(", ")));
        }
        let t = match (args.len(), ty == Ty::F32) {
            (1, false) => "gb_f1d",
            (1, true) => "gb_f1f",
            (_, false) => "gb_f2d",
            (_, true) => "gb_f2f",
        };
        Ok(format!("(({t})gb_m[{i}])({})", args.join(", ")))
    }

    /// The C test of a select's condition read from operand `cond` of the tape, as the
    /// select itself tests it (nonzero; in mixed-type code, the bits as an integer).
    pub(super) fn condition(&self, cond: (u32, [i32; 3])) -> Result<String, Refusal> {
        let o = &self.exprs[self.operand(cond.0, cond.1)?];
        let e = if self.lanes == Lanes::Wide {
            convert(&o.expr, o.kind, kind_of(Ty::Bool))
        } else {
            o.expr.clone()
        };
        Ok(format!("({e} != 0)"))
    }

    /// Where guarded runs are left out (`skip`), whether instruction `ins` is one of their
    /// markers or inside one (`depth` runs open): an outermost run's `Guard` ORs its
    /// condition (`cond`, the select's operand) into the flag; an instruction inside a run
    /// is the caller's to define as zero.
    fn skipped(
        &self,
        ins: &Instr,
        depth: &mut usize,
        code: &mut String,
        cond: impl FnOnce() -> Result<String, Refusal>,
    ) -> Result<bool, Refusal> {
        let Some(flag) = self.skip else {
            return Ok(false);
        };
        match ins.op {
            Op::Guard(then) => {
                if *depth == 0 {
                    let op = if then { "!=" } else { "==" };
                    let _ = writeln!(code, "      {flag} |= ({} {op} 0);", cond()?);
                }
                *depth += 1;
            }
            Op::End => *depth = depth.checked_sub(1).ok_or("unbalanced guarded run")?,
            _ if *depth > 0 => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub(super) fn body(&self) -> Result<Body, Refusal> {
        if self.tape.is_empty() {
            return Err("empty tape".into());
        }
        if self.lanes == Lanes::Wide {
            self.wide_body()
        } else {
            self.float_body()
        }
    }

    /// One point over one float type: `jit::emit`'s semantics (booleans 1 and 0, a select's
    /// condition nonzero, NaN included).
    fn float_body(&self) -> Result<Body, Refusal> {
        let t = float_type(self.lanes);
        let f32 = t == "float";
        let ty = if f32 { Ty::F32 } else { Ty::F64 };
        let lit = |x: f64| {
            if f32 {
                format!("(float){}", f64_lit(x))
            } else {
                f64_lit(x)
            }
        };
        let mut out = Code::default();
        // Per instruction: whether its variable is an `int` truth (see `truth` below).
        let mut ints = vec![false; self.tape.len()];
        // Guarded runs open, where they are left out (`skip`).
        let mut depth = 0;
        for (at, ins) in self.tape.iter().enumerate() {
            let arg = |n: usize| -> Result<String, Refusal> {
                Ok(match ins.args[n] {
                    Src::Reg(r) => format!("{}{}", self.prefix, out.regs[r as usize]),
                    Src::Q(q, off) => self.exprs[self.operand(q, off)?].expr.clone(),
                    Src::Scalar(s) => format!("sc[{s}]"),
                    Src::Const(v) => lit(v.as_f64()),
                })
            };
            let sfx = if f32 { "f" } else { "d" };
            // A truth: an `int` 1 or 0, which every float use converts to the float 1 or 0 tier
            // one computes. In code for the vectoriser gcc keeps it in mask registers (pace's
            // fix_neg_water took twice as long with 1.0/0.0 floats compared again at each use);
            // scalar code combines such truths without branches (pace's icloud).
            let truth = |c: String| format!("(int)({c})");
            // Whether operand `n` is an `int` truth (a register or a boolean quantity's
            // variable, see `Operand::kind`).
            let is_int = |n: usize| -> Result<bool, Refusal> {
                Ok(match ins.args[n] {
                    Src::Reg(r) => ints[out.regs[r as usize]],
                    Src::Q(q, off) => self.exprs[self.operand(q, off)?].kind == Kind::B,
                    _ => false,
                })
            };
            let mut line = String::new();
            let skipped = self.skipped(ins, &mut depth, &mut line, || arg(0))?;
            out.code.push_str(&line);
            if skipped {
                ints[at] = false;
                if depth > 0 && !ins.op.is_marker() {
                    out.define(self.prefix, ins.dst, at, t, &lit(0.0));
                }
                continue;
            }
            let v = match ins.op {
                Op::Guard(_) | Op::End if self.vector => continue,
                Op::Guard(then) => {
                    let a = arg(0)?;
                    let not = if then { "" } else { "!" };
                    out.begin_guard(&format!("{not}({a} != 0)"));
                    continue;
                }
                Op::End => {
                    out.end_guard()?;
                    continue;
                }
                Op::Mov => arg(0)?,
                Op::Cast(Ty::Bool) => truth(format!("({} != 0)", arg(0)?)),
                Op::Cast(_) => arg(0)?,
                Op::Un(u) => {
                    // An `int` truth as the float 1 or 0 (C's type-generic tests, such as
                    // `__builtin_isunordered`, take no integers).
                    let a = if is_int(0)? {
                        format!("(({t}){})", arg(0)?)
                    } else {
                        arg(0)?
                    };
                    match ops::un(u).code {
                        UnCode::Inst(_) => float_inst(u, &a, f32)?,
                        UnCode::RoundAway => {
                            let s = if f32 { "f" } else { "" };
                            format!(
                                "copysign{s}(__builtin_floor{s}(__builtin_fabs{s}({a}) + {}), {a})",
                                lit(0.5)
                            )
                        }
                        UnCode::Test(tst) => truth(float_test(tst, &a, f32)?),
                        UnCode::Call(_) => self.call(ins.op, ty, &[&a])?,
                    }
                }
                Op::Bin(o) => {
                    let (a, x) = (arg(0)?, arg(1)?);
                    match ops::bin(o).code {
                        BinCode::Arith(_) => arith(o, &a, &x)?,
                        BinCode::Call(_) if squares(o, ins) => format!("({a} * {a})"),
                        BinCode::Call(_) => self.call(ins.op, ty, &[&a, &x])?,
                        BinCode::MinMax => min_max(o, &a, &x, f32, self.vector),
                        BinCode::Cmp(cc, _) => truth(float_cc(cc, &a, &x)?),
                        BinCode::Logic(_) => {
                            let c = if o == BinOp::And { "&" } else { "|" };
                            truth(format!("(({a} != 0) {c} ({x} != 0))"))
                        }
                    }
                }
                Op::Bin2(o1, o2) => {
                    let (a, x, y) = (arg(0)?, arg(1)?, arg(2)?);
                    arith(o2, &format!("({})", arith(o1, &a, &x)?), &y)?
                }
                Op::Sel if self.vector => {
                    let c = if is_int(0)? { "i" } else { "" };
                    format!("gb_sel{sfx}{c}({}, {}, {})", arg(0)?, arg(1)?, arg(2)?)
                }
                Op::Sel => format!("(({} != 0) ? {} : {})", arg(0)?, arg(1)?, arg(2)?),
                Op::LoadK(..) | Op::StoreK(..) => {
                    return Err("run-time K access on one float type".into())
                }
            };
            // A truth (see `truth` above), or a move of one, stays an `int`.
            let truthy = match ins.op {
                Op::Cast(Ty::Bool) => true,
                Op::Un(u) => matches!(ops::un(u).code, UnCode::Test(_)),
                Op::Bin(o) => matches!(ops::bin(o).code, BinCode::Cmp(..) | BinCode::Logic(_)),
                Op::Mov => is_int(0)?,
                _ => false,
            };
            ints[at] = truthy;
            out.define(self.prefix, ins.dst, at, if truthy { "int" } else { t }, &v);
        }
        out.finish(
            self.prefix,
            |last| if ints[last] { Kind::B } else { Kind::T },
        )
    }

    /// The position of operand (`q`, `off`) in the function's operand list.
    fn operand(&self, q: u32, off: [i32; 3]) -> Result<usize, Refusal> {
        self.operands
            .iter()
            .position(|&o| o == (q, off))
            .ok_or_else(|| "an operand missing from the list".into())
    }

    /// One point of a mixed-type tape: `jit::wide`'s semantics (each operation in its own
    /// type; `float32` computed on `float` and widened back; integers wrapped to their width).
    fn wide_body(&self) -> Result<Body, Refusal> {
        let mut out = Code::default();
        // The kind of each instruction's variable.
        let mut kinds: Vec<Kind> = vec![Kind::I; self.tape.len()];
        // Guarded runs open, where they are left out (`skip`).
        let mut depth = 0;
        for (at, ins) in self.tape.iter().enumerate() {
            // Operand `n` and its kind.
            let raw = |n: usize| -> Result<(String, Kind), Refusal> {
                Ok(match ins.args[n] {
                    Src::Reg(r) => {
                        let v = out.regs[r as usize];
                        (format!("{}{v}", self.prefix), kinds[v])
                    }
                    Src::Q(q, off) => {
                        let o = &self.exprs[self.operand(q, off)?];
                        (o.expr.clone(), o.kind)
                    }
                    Src::Scalar(s) => (format!("sc[{s}]"), Kind::Lane),
                    Src::Const(Value::F(x)) => (f64_lit(x), Kind::F),
                    Src::Const(Value::I(x)) => (i64_lit(x), Kind::I),
                })
            };
            // Operand `n` as the kind of `want`, the same bits (`jit::wide`'s `as_ty`).
            let arg = |n: usize, want: Ty| -> Result<String, Refusal> {
                let (e, k) = raw(n)?;
                Ok(convert(&e, k, kind_of(want)))
            };
            // Operands `n` (one or more) as masks, where each is one.
            let masks = |n: &[usize]| -> Result<Option<Vec<String>>, Refusal> {
                let ops = n.iter().map(|&n| raw(n)).collect::<Result<Vec<_>, _>>()?;
                Ok(ops
                    .iter()
                    .all(|o| o.1 == Kind::M)
                    .then(|| ops.into_iter().map(|o| o.0).collect()))
            };
            let ty = ins.ty;
            let a0 = |n: usize| {
                if matches!(ins.op, Op::Sel | Op::Guard(_)) && n == 0 {
                    arg(n, Ty::Bool)
                } else {
                    arg(n, ty)
                }
            };
            let narrow = |e: String| {
                if ty == Ty::F32 {
                    format!("((float){e})")
                } else {
                    e
                }
            };
            let widen = |e: String| {
                if ty == Ty::F32 {
                    format!("((double)({e}))")
                } else {
                    e
                }
            };
            // A condition as a boolean: a mask in code for the vectoriser, else 1 or 0 (which
            // branches test as they are).
            let boolean = |c: String| -> (String, Kind) {
                if self.vector {
                    (format!("(-(int64_t)({c}))"), Kind::M)
                } else {
                    (format!("((int64_t)({c}))"), Kind::I)
                }
            };
            let mut line = String::new();
            let skipped = self.skipped(ins, &mut depth, &mut line, || a0(0))?;
            out.code.push_str(&line);
            if skipped {
                if depth > 0 && !ins.op.is_marker() {
                    let k = kind_of(ty);
                    kinds[at] = k;
                    let (t, zero) = if k == Kind::F {
                        ("double", "0.0")
                    } else {
                        ("int64_t", "((int64_t)0)")
                    };
                    out.define(self.prefix, ins.dst, at, t, zero);
                }
                continue;
            }
            let (v, kind) = match ins.op {
                Op::Guard(_) | Op::End if self.vector => continue,
                Op::Guard(then) => {
                    let a = a0(0)?;
                    let op = if then { "!=" } else { "==" };
                    out.begin_guard(&format!("{a} {op} 0"));
                    continue;
                }
                Op::End => {
                    out.end_guard()?;
                    continue;
                }
                Op::LoadK(q, kindex) => {
                    let slot = self
                        .vk
                        .iter()
                        .position(|v| v.0 == q)
                        .ok_or("a run-time K read missing from the slots")?;
                    let mem = self.vk[slot].1;
                    let index = a0(0)?;
                    let b = slot * 13;
                    let p = format!("{}p{at}", self.prefix);
                    match self.vk_mode {
                        VkMode::Row => {
                            let level = match kindex {
                                KIndex::Relative => {
                                    format!("(kr{slot} + (int64_t)i * vk[{}] + {index})", b + 6)
                                }
                                KIndex::Absolute => index,
                            };
                            let _ = writeln!(
                                out.code,
                                "      int64_t l{at} = {level}; int ok{at} = l{at} >= vk[{lo}] && l{at} < vk[{hi}];\n      if (!ok{at}) {{ vk[{err}] = 1; vk[{errl}] = l{at}; }}\n      const unsigned char *{p} = (const unsigned char *)(intptr_t)(col{slot} + (int64_t)i * vk[{dp}] + (ok{at} ? l{at} : vk[{lo}]) * vk[{dl}]);",
                                lo = b + 7,
                                hi = b + 8,
                                err = b + 9,
                                errl = b + 10,
                                dp = b + 2,
                                dl = b + 3,
                            );
                        }
                        VkMode::Point => {
                            // Counted from the slot's lowest level: inside when below the span,
                            // one unsigned comparison; outside, reported, and the function ends.
                            let rel = match kindex {
                                KIndex::Relative => format!("sr{slot} + {index}"),
                                KIndex::Absolute => format!("{index} - sl{slot}"),
                            };
                            let _ = writeln!(
                                out.code,
                                "      int64_t l{at} = {rel};\n      if (!((uint64_t)l{at} < (uint64_t)ss{slot})) {{ vk[{err}] = 1; vk[{errl}] = l{at} + vk[{lo}]; return; }}\n      const unsigned char *{p} = (const unsigned char *)(intptr_t)(sb{slot} + l{at} * sd{slot});",
                                lo = b + 7,
                                err = b + 9,
                                errl = b + 10,
                            );
                        }
                    }
                    let load = match mem {
                        Ty::Bool => format!("(int64_t)*(const uint8_t *){p}"),
                        Ty::I8 => format!("(int64_t)*(const int8_t *){p}"),
                        Ty::I16 => format!("(int64_t)*(const int16_t *){p}"),
                        Ty::I32 => format!("(int64_t)*(const int32_t *){p}"),
                        Ty::I64 => format!("*(const int64_t *){p}"),
                        Ty::F64 => format!("*(const double *){p}"),
                        Ty::F32 => format!("(double)*(const float *){p}"),
                    };
                    (load, kind_of(mem))
                }
                Op::StoreK(..) => return Err("a run-time K write".into()),
                Op::Mov => match masks(&[0])?.filter(|_| ty == Ty::Bool) {
                    Some(m) => (m[0].clone(), Kind::M),
                    None => (a0(0)?, kind_of(ty)),
                },
                Op::Cast(Ty::Bool) => match masks(&[0])? {
                    Some(m) => (m[0].clone(), Kind::M),
                    None if ty.is_float() => boolean(format!("{} != 0.0", a0(0)?)),
                    None => boolean(format!("{} != 0", a0(0)?)),
                },
                Op::Cast(to) => (cast(&a0(0)?, ty, to), kind_of(to)),
                Op::Sel => {
                    let c = match masks(&[0])? {
                        Some(m) => m[0].clone(),
                        None if self.vector => boolean(format!("{} != 0", a0(0)?)).0,
                        None => a0(0)?,
                    };
                    let (x, y, kind) = match masks(&[1, 2])? {
                        Some(m) => (m[0].clone(), m[1].clone(), Kind::M),
                        None => (a0(1)?, a0(2)?, kind_of(ty)),
                    };
                    // For the vectoriser, a blend of bits under the mask: a conditional
                    // expression stays a branch (control flow in the loop) where gcc cannot
                    // prove the arms free of traps.
                    let v = match (self.vector, kind) {
                        (true, Kind::F) => format!("gb_bld({c}, {x}, {y})"),
                        (true, _) => format!("gb_bli({c}, {x}, {y})"),
                        (false, _) => format!("(({c} != 0) ? {x} : {y})"),
                    };
                    (v, kind)
                }
                Op::Un(u) if ty.is_float() => {
                    let a = a0(0)?;
                    let f32 = ty == Ty::F32;
                    match ops::un(u).code {
                        UnCode::Test(t) if t.abs => {
                            let inf = f64_lit(f64::INFINITY);
                            boolean(float_cc(t.cc, &format!("__builtin_fabs({a})"), &inf)?)
                        }
                        UnCode::Test(t) => {
                            let v = narrow(a);
                            boolean(float_cc(t.cc, &v, &v)?)
                        }
                        UnCode::Inst(_) => (widen(float_inst(u, &narrow(a), f32)?), Kind::F),
                        UnCode::RoundAway => {
                            let s = if f32 { "f" } else { "" };
                            let v = narrow(a);
                            let half = if f32 { "0.5f" } else { "0.5" };
                            (
                                widen(format!(
                                    "copysign{s}(__builtin_floor{s}(__builtin_fabs{s}({v}) + {half}), {v})"
                                )),
                                Kind::F,
                            )
                        }
                        UnCode::Call(_) => (widen(self.call(ins.op, ty, &[&narrow(a)])?), Kind::F),
                    }
                }
                Op::Un(UnOp::Not) => match masks(&[0])? {
                    Some(m) => (format!("(~{})", m[0]), Kind::M),
                    None => boolean(format!("{} == 0", a0(0)?)),
                },
                Op::Un(u) => {
                    let a = a0(0)?;
                    let v = match u {
                        UnOp::Neg => wrap(&format!("gb_neg({a})"), ty),
                        UnOp::Abs => wrap(&format!("gb_abs({a})"), ty),
                        UnOp::IsNan | UnOp::IsInf => "((int64_t)0)".into(),
                        UnOp::IsFinite => "((int64_t)1)".into(),
                        _ => a,
                    };
                    (v, Kind::I)
                }
                Op::Bin(o) | Op::Bin2(o, _) if ty.is_float() => {
                    let (a, x) = (narrow(a0(0)?), narrow(a0(1)?));
                    let f32 = ty == Ty::F32;
                    let code = ops::bin(o).code;
                    if let BinCode::Cmp(cc, _) = code {
                        boolean(float_cc(cc, &a, &x)?)
                    } else {
                        let r = match code {
                            BinCode::MinMax => min_max(o, &a, &x, f32, self.vector),
                            BinCode::Call(_) if squares(o, ins) => format!("({a} * {a})"),
                            BinCode::Call(_) => self.call(Op::Bin(o), ty, &[&a, &x])?,
                            BinCode::Arith(_) => arith(o, &a, &x)?,
                            BinCode::Logic(_) | BinCode::Cmp(..) => {
                                return Err(format!("{o:?} on floats"))
                            }
                        };
                        let r = match ins.op {
                            Op::Bin2(_, o2) => arith(o2, &format!("({r})"), &narrow(a0(2)?))?,
                            _ => r,
                        };
                        (widen(r), Kind::F)
                    }
                }
                Op::Bin(o @ (BinOp::And | BinOp::Or)) if ty == Ty::Bool => {
                    // Of two masks a mask; else of the booleans as 1 or 0.
                    let c = if o == BinOp::And { "&" } else { "|" };
                    match masks(&[0, 1])? {
                        Some(m) => (format!("({} {c} {})", m[0], m[1]), Kind::M),
                        None => (format!("({} {c} {})", a0(0)?, a0(1)?), Kind::I),
                    }
                }
                Op::Bin(o) => {
                    let (a, x) = (a0(0)?, a0(1)?);
                    let cmp = |c: &str| boolean(format!("{a} {c} {x}"));
                    let v = match o {
                        BinOp::Lt => cmp("<"),
                        BinOp::Le => cmp("<="),
                        BinOp::Gt => cmp(">"),
                        BinOp::Ge => cmp(">="),
                        BinOp::Eq => cmp("=="),
                        BinOp::Ne => cmp("!="),
                        BinOp::Add => (wrap(&format!("gb_add({a}, {x})"), ty), Kind::I),
                        BinOp::Sub => (wrap(&format!("gb_sub({a}, {x})"), ty), Kind::I),
                        BinOp::Mul => (wrap(&format!("gb_mul({a}, {x})"), ty), Kind::I),
                        BinOp::Min => (wrap(&format!("gb_min({a}, {x})"), ty), Kind::I),
                        BinOp::Max => (wrap(&format!("gb_max({a}, {x})"), ty), Kind::I),
                        BinOp::And => (wrap(&format!("({a} & {x})"), ty), Kind::I),
                        BinOp::Or => (wrap(&format!("({a} | {x})"), ty), Kind::I),
                        BinOp::FloorDiv | BinOp::Div => {
                            (wrap(&format!("gb_floordiv({a}, {x})"), ty), Kind::I)
                        }
                        BinOp::Mod => (wrap(&format!("gb_mod({a}, {x})"), ty), Kind::I),
                        BinOp::Pow => {
                            let Src::Const(Value::I(e)) = ins.args[1] else {
                                return Err("an integer power by a run-time exponent".into());
                            };
                            if e < 0 {
                                return Err("an integer power by a negative exponent".into());
                            }
                            // Square and multiply, as tier one unrolls it.
                            let (mut e, mut r, mut base) =
                                (e, "((int64_t)1)".to_string(), a.clone());
                            let mut n = 0;
                            while e > 0 {
                                if e & 1 == 1 {
                                    r = format!("gb_mul({r}, {base})");
                                }
                                e >>= 1;
                                if e > 0 {
                                    let _ = writeln!(
                                        out.code,
                                        "      int64_t {}pw{at}_{n} = gb_mul({base}, {base});",
                                        self.prefix
                                    );
                                    base = format!("{}pw{at}_{n}", self.prefix);
                                    n += 1;
                                }
                            }
                            (wrap(&r, ty), Kind::I)
                        }
                    };
                    v
                }
                Op::Bin2(..) => return Err("a fused integer operation".into()),
            };
            kinds[at] = kind;
            let t = if kind == Kind::F { "double" } else { "int64_t" };
            out.define(self.prefix, ins.dst, at, t, &v);
        }
        out.finish(self.prefix, |last| kinds[last])
    }
}

/// A point's code being written: the declarations of guarded runs' values, then the rest;
/// per register, the instruction that wrote it last; how many guarded runs are open; the last
/// instruction that defined a value.
#[derive(Default)]
struct Code {
    decls: String,
    code: String,
    regs: Vec<usize>,
    open: usize,
    last: Option<usize>,
}

impl Code {
    /// Opens a guarded run: the statements until its `End` run where `cond` holds.
    fn begin_guard(&mut self, cond: &str) {
        let _ = writeln!(self.code, "      if ({cond}) {{");
        self.open += 1;
    }

    /// Closes the innermost guarded run.
    fn end_guard(&mut self) -> Result<(), Refusal> {
        self.open = self.open.checked_sub(1).ok_or("unbalanced guarded run")?;
        self.code.push_str("      }\n");
        Ok(())
    }

    /// Writes `{prefix}{at} = v` (of C type `t`), the value of instruction `at`, which writes
    /// register `dst`. Inside a guarded run the variable is declared at the point's start
    /// instead, zero (the value where the run is skipped), so the select after the run sees it.
    fn define(&mut self, prefix: &str, dst: u32, at: usize, t: &str, v: &str) {
        let d = dst as usize;
        if self.regs.len() <= d {
            self.regs.resize(d + 1, usize::MAX);
        }
        self.regs[d] = at;
        if self.open > 0 {
            let _ = writeln!(self.decls, "      {t} {prefix}{at} = 0;");
            let _ = writeln!(self.code, "      {prefix}{at} = {v};");
        } else {
            let _ = writeln!(self.code, "      {t} {prefix}{at} = {v};");
        }
        self.last = Some(at);
    }

    /// The point's code and its result, the last value defined (of kind `kind_of(at)`).
    fn finish(self, prefix: &str, kind_of: impl Fn(usize) -> Kind) -> Result<Body, Refusal> {
        let last = self.last.ok_or("a tape of markers only")?;
        Ok(Body {
            code: self.decls + &self.code,
            result: format!("{prefix}{last}"),
            kind: kind_of(last),
        })
    }
}

/// `v` wrapped to the width of the integer type `ty` (`jit::wide`'s `wrap`: `int8`, `int16`,
/// `int32`; others as they are).
fn wrap(v: &str, ty: Ty) -> String {
    match ty {
        Ty::I8 => format!("((int64_t)(int8_t)({v}))"),
        Ty::I16 => format!("((int64_t)(int16_t)({v}))"),
        Ty::I32 => format!("((int64_t)(int32_t)({v}))"),
        _ => v.to_string(),
    }
}

/// A mixed-type conversion of `v` (of kind `from`'s) to `to` (`jit::wide`'s `cast`).
fn cast(v: &str, from: Ty, to: Ty) -> String {
    match (from.is_float(), to) {
        (true, Ty::Bool) => format!("((int64_t)({v} != 0.0))"),
        (false, Ty::Bool) => format!("((int64_t)({v} != 0))"),
        (true, Ty::F64) => v.to_string(),
        (true, Ty::F32) => format!("((double)(float)({v}))"),
        (false, Ty::F64) => format!("((double)({v}))"),
        (false, Ty::F32) => format!("((double)(float)({v}))"),
        (false, t) => wrap(v, t),
        (true, t) => {
            // NumPy on x86-64: truncation, and the smallest int32 (int64) for a NaN, an
            // infinity or a value out of range.
            let (lo, hi, bad) = crate::gtscript::passes::types::float_to_int_range(t);
            wrap(
                &format!(
                    "gb_ftoi({v}, {}, {}, {})",
                    f64_lit(lo),
                    f64_lit(hi),
                    i64_lit(bad)
                ),
                t,
            )
        }
    }
}

/// A float operation with one instruction (`UnCode::Inst`), on a value of its own type.
fn float_inst(u: UnOp, a: &str, f32: bool) -> Result<String, Refusal> {
    let s = if f32 { "f" } else { "" };
    Ok(match u {
        UnOp::Neg => format!("(-{a})"),
        UnOp::Abs => format!("__builtin_fabs{s}({a})"),
        UnOp::Sqrt => format!("__builtin_sqrt{s}({a})"),
        UnOp::Floor => format!("__builtin_floor{s}({a})"),
        UnOp::Ceil => format!("__builtin_ceil{s}({a})"),
        UnOp::Trunc => format!("__builtin_trunc{s}({a})"),
        UnOp::Round => format!("__builtin_roundeven{s}({a})"),
        other => return Err(format!("instruction of {other:?}")),
    })
}

/// A float test (`UnCode::Test`) as a C condition.
fn float_test(t: ops::Test, a: &str, f32: bool) -> Result<String, Refusal> {
    let s = if f32 { "f" } else { "" };
    let m = if t.abs {
        format!("__builtin_fabs{s}({a})")
    } else {
        a.to_string()
    };
    let other = match t.against {
        Against::Zero => "0".to_string(),
        Against::Infinity => {
            if f32 {
                "__builtin_inff()".to_string()
            } else {
                "__builtin_inf()".to_string()
            }
        }
        Against::Itself => m.clone(),
    };
    float_cc(t.cc, &m, &other)
}

/// `a op x` for an arithmetic operator.
fn arith(op: BinOp, a: &str, x: &str) -> Result<String, Refusal> {
    let o = match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        other => return Err(format!("{other:?} is not arithmetic")),
    };
    Ok(format!("({a} {o} {x})"))
}

/// NumPy's `minimum`/`maximum` (NaN in `a` wins, else the ordered choice, a tie or a NaN in
/// `x` giving `x`): the prelude's form for code written for the vectoriser where `vector`
/// says, else its form for scalar code (the same bits; see the prelude).
fn min_max(op: BinOp, a: &str, x: &str, f32: bool, vector: bool) -> String {
    let f = match (op == BinOp::Min, f32) {
        (true, false) => "gb_minf",
        (false, false) => "gb_maxf",
        (true, true) => "gb_minf32",
        (false, true) => "gb_maxf32",
    };
    let v = if vector { "v" } else { "" };
    format!("{f}{v}({a}, {x})")
}
