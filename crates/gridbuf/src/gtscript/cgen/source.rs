//! C source for tier two: one function per compiled statement, with the row function's
//! signature ([`crate::gtscript::jit::abi::RowFn`]) and the instruction-for-instruction
//! semantics of the Cranelift code it replaces (`jit::emit` for one float type, `jit::wide` for
//! mixed-type lanes). The C is written so that an optimising compiler keeps those semantics:
//! it is compiled without fast-math and without contraction into fused multiply-adds
//! (`compiler::FLAGS`), integer arithmetic wraps through unsigned types, every conversion is
//! written out, and the math functions with no instruction are called through the very
//! functions the interpreter and tier one call (their addresses handed to the module's
//! `gb_init`, in the order of [`crate::gtscript::ops::math_symbols`]).

use crate::gtscript::ir::{BinOp, IterOrder, KIndex, Ty, UnOp, Value};
use crate::gtscript::jit::abi::{ColumnCode, StmtCode};
use crate::gtscript::jit::helpers::operands_of;
use crate::gtscript::jit::point::{Part, PointRange};
use crate::gtscript::jit::{walk_parts, Jit};
use crate::gtscript::ops::{self, Against, BinCode, UnCode};
use crate::gtscript::plan::schedule::{has_axis, PointWalk};
use crate::gtscript::plan::{Instr, Kind as Quantity, Lanes, Op, Plan, Src};
use cranelift_codegen::ir::condcodes::FloatCC;
use std::fmt::Write;

/// What the generated module starts with: types, bit casts, wrapping integer helpers and the
/// math function table.
const PRELUDE: &str = r#"#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <math.h>
typedef double (*gb_f1d)(double);
typedef float (*gb_f1f)(float);
typedef double (*gb_f2d)(double, double);
typedef float (*gb_f2f)(float, float);
static inline double gb_d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static inline uint64_t gb_u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline int64_t gb_i(double d) { int64_t u; memcpy(&u, &d, 8); return u; }
static inline double gb_di(int64_t u) { double d; memcpy(&d, &u, 8); return d; }
static inline int64_t gb_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t gb_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t gb_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static inline int64_t gb_neg(int64_t a) { return (int64_t)(0 - (uint64_t)a); }
static inline int64_t gb_abs(int64_t a) { return a < 0 ? gb_neg(a) : a; }
static inline int64_t gb_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t gb_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t gb_floordiv(int64_t x, int64_t y) {
  if (y == 0) return 0;
  if (y == -1) return gb_neg(x);
  int64_t q = x / y, r = x % y;
  return (r != 0 && (r ^ y) < 0) ? q - 1 : q;
}
static inline int64_t gb_mod(int64_t x, int64_t y) {
  if (y == 0 || y == -1) return 0;
  int64_t r = x % y;
  return (r != 0 && (r ^ y) < 0) ? r + y : r;
}
static inline int64_t gb_ftoi(double v, double lo, double hi, int64_t bad) {
  return (v >= lo && v < hi) ? (int64_t)v : bad;
}
static inline double gb_minf(double a, double x) { return a != a ? a : (a < x ? a : x); }
static inline double gb_maxf(double a, double x) { return a != a ? a : (x < a ? a : x); }
static inline float gb_minf32(float a, float x) { return a != a ? a : (a < x ? a : x); }
static inline float gb_maxf32(float a, float x) { return a != a ? a : (x < a ? a : x); }
#if defined(__clang__)
#define GB_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define GB_IVDEP _Pragma("GCC ivdep")
#else
#define GB_IVDEP
#endif
"#;

/// The generated C of one stencil's compiled functions.
pub(crate) struct Source {
    /// The module's text.
    pub(crate) text: String,
    /// Per row function, in the order of [`Source::text`]'s definitions: its symbol name and the
    /// (section, statement) it replaces.
    pub(crate) rows: Vec<(String, usize, usize)>,
    /// Per point function of a `while` loop: its name, section and condition statement.
    pub(crate) loops: Vec<(String, usize, usize)>,
    /// Per whole sections' walk: its name, first section and walk.
    pub(crate) walks: Vec<(String, usize, PointWalk)>,
    /// Per column function: its name and section.
    pub(crate) columns: Vec<(String, usize)>,
}

impl Source {
    /// Whether it defines no function.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
            && self.loops.is_empty()
            && self.walks.is_empty()
            && self.columns.is_empty()
    }
}

/// Why a function has no C (it stays on tier one).
pub(crate) type Refusal = String;

/// The C module of `jit`'s functions (made from `plan`): its row functions, its `while` loops'
/// point functions, and every whole sections' walk it may compile; a function whose tape holds
/// something this generator does not write is left out.
pub(crate) fn module(plan: &Plan, jit: &Jit) -> Source {
    let symbols = ops::math_symbols();
    let mut text = String::from(PRELUDE);
    let _ = writeln!(
        text,
        "static void *gb_m[{}];\nvoid gb_init(void *const *t) {{ for (int i = 0; i < {}; i++) gb_m[i] = t[i]; }}",
        symbols.len().max(1),
        symbols.len()
    );
    let mut src = Source {
        text: String::new(),
        rows: Vec::new(),
        loops: Vec::new(),
        walks: Vec::new(),
        columns: Vec::new(),
    };
    for (s, t, code) in jit.stmts() {
        let name = format!("gb_s{s}_{t}");
        let tape = &plan.sections[s].stmts[t].tape;
        if let Ok(f) = row_function(&name, plan.lanes, code, tape, &symbols) {
            text.push_str(&f);
            src.rows.push((name, s, t));
        }
    }
    for (s, t, code) in jit.loop_codes() {
        let name = format!("gb_l{s}_{t}");
        let parts = [(
            s,
            PointRange {
                first: t,
                exit: code.exit,
                walk: None,
            },
        )];
        if let Ok(f) = point_function(&name, plan, &parts, &symbols) {
            text.push_str(&f);
            src.loops.push((name, s, t));
        }
    }
    for (s, walk, sections) in jit.walk_keys() {
        let name = format!("gb_w{s}_{}", walk as usize);
        let parts = walk_parts(plan, sections, walk);
        if let Ok(f) = point_function(&name, plan, &parts, &symbols) {
            text.push_str(&f);
            src.walks.push((name, s, walk));
        }
    }
    for (s, code) in jit.column_codes() {
        let name = format!("gb_c{s}");
        if let Ok(f) = column_function(&name, plan, s, code, &symbols) {
            text.push_str(&f);
            src.columns.push((name, s));
        }
    }
    src.text = text;
    src
}

/// The C type of one element in memory and of a register, for the single-float lanes.
fn float_type(lanes: Lanes) -> &'static str {
    match lanes {
        Lanes::F32 => "float",
        _ => "double",
    }
}

/// A row function: `name(ops, strides, out, out_stride, n, rows, scal, vk)`, the loops of
/// `jit::row::build` around one point of the tape.
fn row_function(
    name: &str,
    lanes: Lanes,
    code: &StmtCode,
    tape: &[Instr],
    symbols: &[(&'static str, *const u8)],
) -> Result<String, Refusal> {
    let wide = lanes == Lanes::Wide;
    let elem = if wide { "uint64_t" } else { float_type(lanes) };
    let exprs: Vec<Operand> = (0..code.operands.len())
        .map(|k| Operand {
            expr: format!("o{k}[i]"),
            kind: if wide { Kind::Lane } else { Kind::T },
        })
        .collect();
    let body = Point {
        tape,
        operands: &code.operands,
        exprs: &exprs,
        vk: &code.vk,
        vk_mode: VkMode::Row,
        lanes,
        symbols,
        prefix: "v",
    }
    .body()?;
    let mut f = String::new();
    let _ = writeln!(
        f,
        "void {name}(const unsigned char *const *ops, const intptr_t *strides, unsigned char *out, intptr_t out_stride, size_t n, size_t rows, const unsigned char *scal, int64_t *vk) {{"
    );
    let _ = writeln!(
        f,
        "  const {elem} *sc = (const {elem} *)scal; (void)sc; (void)vk;"
    );
    let _ = writeln!(f, "  for (size_t r = 0; r < rows; r++) {{");
    for k in 0..code.operands.len() {
        let _ = writeln!(
            f,
            "    const {elem} *o{k} = (const {elem} *)(ops[{k}] + (intptr_t)r * strides[{k}]);"
        );
    }
    let _ = writeln!(
        f,
        "    {elem} *d = ({elem} *)(out + (intptr_t)r * out_stride);"
    );
    // Each run-time K read's column and level at the row's first point (as tier one does).
    for slot in 0..code.vk.len() {
        let b = slot * 13;
        let _ = writeln!(
            f,
            "    int64_t col{slot} = vk[{b}] + (int64_t)r * vk[{}]; int64_t kr{slot} = vk[{}] + (int64_t)r * vk[{}];\n    vk[{}] = col{slot}; vk[{}] = kr{slot};",
            b + 1,
            b + 4,
            b + 5,
            b + 11,
            b + 12
        );
    }
    // No point of a row reads what another point of it writes (the caller computes into
    // scratch where the tape reads its target along the row), so the loop may be vectorised;
    // run-time K reads report errors into one slot, in point order, so their loops are not.
    if code.vk.is_empty() {
        f.push_str("    GB_IVDEP\n");
    }
    let _ = writeln!(f, "    for (size_t i = 0; i < n; i++) {{");
    f.push_str(&body.code);
    let result = if wide { body.lane() } else { body.result };
    let _ = writeln!(f, "      d[i] = {result};");
    f.push_str("    }\n  }\n}\n");
    Ok(f)
}

/// One point's code, the variable holding its result and that variable's kind.
struct Body {
    code: String,
    result: String,
    kind: Kind,
}

impl Body {
    /// The result as the bits of a 64-bit lane (mixed-type memory).
    fn lane(&self) -> String {
        match self.kind {
            Kind::F => format!("gb_u({})", self.result),
            _ => format!("(uint64_t){}", self.result),
        }
    }

    /// The result as a value of `kind` (the same bits).
    fn as_kind(&self, kind: Kind) -> String {
        convert(&self.result, self.kind, kind)
    }
}

/// `e` (of kind `from`) as kind `to`, the same bits (`jit::wide`'s `as_ty`).
fn convert(e: &str, from: Kind, to: Kind) -> String {
    match (to, from) {
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
enum Kind {
    F,
    I,
    /// The raw bits of a lane in memory (`uint64_t`).
    Lane,
    /// The single float type's element (one-float-type code).
    T,
}

/// An operand of a tape as C: an expression and its kind.
#[derive(Clone, Debug)]
struct Operand {
    expr: String,
    kind: Kind,
}

/// How a point reads at run-time K levels (`Op::LoadK`): as a row function does (the slot's
/// fields at `vk`, the row's column `col{slot}` and level `kr{slot}`, the point `i`; a level
/// outside is reported and replaced), or as a point function does (`jit::wide`'s `SlotRegs`:
/// `sb`, `sr`, `sd`, `ss`, `sl` per slot; a level outside is reported and the function
/// returns).
#[derive(Copy, Clone, PartialEq, Eq)]
enum VkMode {
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

/// One point of a tape.
struct Point<'a> {
    tape: &'a [Instr],
    /// The tape's (quantity, offset) operands, in `operands_of` order, and their C.
    operands: &'a [(u32, [i32; 3])],
    exprs: &'a [Operand],
    vk: &'a [(u32, Ty)],
    vk_mode: VkMode,
    lanes: Lanes,
    symbols: &'a [(&'static str, *const u8)],
    /// What the point's variables are named after (unique per statement of a function).
    prefix: &'a str,
}

/// `0x...` bits of an `f64`, as a C `double` expression (exact, NaN payloads and `-0.0`
/// included).
fn f64_lit(x: f64) -> String {
    format!("gb_d(0x{:016x}ULL)", x.to_bits())
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
    /// The index in the math table of the function computing `op` on `ty` (`F64` or `F32`).
    fn math(&self, op: Op, ty: Ty) -> Result<usize, Refusal> {
        let name = match (op, ty) {
            (Op::Un(u), Ty::F64) => ops::math::unary_f64(u).map(|f| f.0),
            (Op::Un(u), _) => ops::math::unary_f32(u).map(|f| f.0),
            (Op::Bin(o) | Op::Bin2(o, _), Ty::F64) => ops::math::binary_f64(o).map(|f| f.0),
            (Op::Bin(o) | Op::Bin2(o, _), _) => ops::math::binary_f32(o).map(|f| f.0),
            _ => None,
        }
        .ok_or_else(|| format!("no math function for {op:?}"))?;
        self.symbols
            .iter()
            .position(|s| s.0 == name)
            .ok_or_else(|| format!("math function {name} not in the table"))
    }

    fn call(&self, op: Op, ty: Ty, args: &[&str]) -> Result<String, Refusal> {
        let i = self.math(op, ty)?;
        let t = match (args.len(), ty == Ty::F32) {
            (1, false) => "gb_f1d",
            (1, true) => "gb_f1f",
            (_, false) => "gb_f2d",
            (_, true) => "gb_f2f",
        };
        Ok(format!("(({t})gb_m[{i}])({})", args.join(", ")))
    }

    fn body(&self) -> Result<Body, Refusal> {
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
        // Per register, the variable of the instruction that wrote it last.
        let mut regs: Vec<usize> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        let mut last = None;
        for (at, ins) in self.tape.iter().enumerate() {
            let arg = |n: usize| -> Result<String, Refusal> {
                Ok(match ins.args[n] {
                    Src::Reg(r) => format!("{}{}", self.prefix, regs[r as usize]),
                    Src::Q(q, off) => self.exprs[self.operand(q, off)?].expr.clone(),
                    Src::Scalar(s) => format!("sc[{s}]"),
                    Src::Const(v) => lit(v.as_f64()),
                })
            };
            let truth = |c: String| format!("({c} ? {} : {})", lit(1.0), lit(0.0));
            let v = match ins.op {
                Op::Guard(then) => {
                    let a = arg(0)?;
                    let cond = if then {
                        format!("({a} != 0)")
                    } else {
                        format!("!({a} != 0)")
                    };
                    let _ = writeln!(out.code, "      if ({cond}) {{");
                    open.push(at);
                    continue;
                }
                Op::End => {
                    open.pop().ok_or("unbalanced guarded run")?;
                    out.code.push_str("      }\n");
                    continue;
                }
                Op::Mov => arg(0)?,
                Op::Cast(Ty::Bool) => truth(format!("({} != 0)", arg(0)?)),
                Op::Cast(_) => arg(0)?,
                Op::Un(u) => {
                    let a = arg(0)?;
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
                        BinCode::Call(_) => self.call(ins.op, ty, &[&a, &x])?,
                        BinCode::MinMax => min_max(o, &a, &x, f32),
                        BinCode::Cmp(cc, _) => truth(float_cc(cc, &a, &x)?),
                        BinCode::Logic(_) => {
                            let c = if o == BinOp::And { "&&" } else { "||" };
                            truth(format!("(({a} != 0) {c} ({x} != 0))"))
                        }
                    }
                }
                Op::Bin2(o1, o2) => {
                    let (a, x, y) = (arg(0)?, arg(1)?, arg(2)?);
                    arith(o2, &format!("({})", arith(o1, &a, &x)?), &y)?
                }
                Op::Sel => format!("(({} != 0) ? {} : {})", arg(0)?, arg(1)?, arg(2)?),
                Op::LoadK(..) | Op::StoreK(..) => {
                    return Err("run-time K access on one float type".into())
                }
            };
            self.define(&mut out, &mut regs, ins.dst, at, t, &v, !open.is_empty());
            last = Some(at);
        }
        let last = last.ok_or("a tape of markers only")?;
        Ok(Body {
            code: out.text(),
            result: format!("{}{last}", self.prefix),
            kind: Kind::T,
        })
    }

    /// Writes `v{at} = v`, the value of instruction `at`, which writes register `dst`. Inside
    /// a guarded run the variable is declared at the point's start instead, zero (the value
    /// where the run is skipped), so the select after the run sees it.
    #[allow(clippy::too_many_arguments)]
    fn define(
        &self,
        out: &mut Code,
        regs: &mut Vec<usize>,
        dst: u32,
        at: usize,
        t: &str,
        v: &str,
        guarded: bool,
    ) {
        let d = dst as usize;
        if regs.len() <= d {
            regs.resize(d + 1, usize::MAX);
        }
        regs[d] = at;
        let p = self.prefix;
        if guarded {
            let _ = writeln!(out.decls, "      {t} {p}{at} = 0;");
            let _ = writeln!(out.code, "      {p}{at} = {v};");
        } else {
            let _ = writeln!(out.code, "      {t} {p}{at} = {v};");
        }
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
        let mut regs: Vec<usize> = Vec::new();
        // The kind of each instruction's variable.
        let mut kinds: Vec<Kind> = vec![Kind::I; self.tape.len()];
        let mut open: Vec<usize> = Vec::new();
        let mut last = None;
        for (at, ins) in self.tape.iter().enumerate() {
            // Operand `n` as the kind of `want`, the same bits (`jit::wide`'s `as_ty`).
            let arg = |n: usize, want: Ty| -> Result<String, Refusal> {
                let (e, k) = match ins.args[n] {
                    Src::Reg(r) => {
                        let v = regs[r as usize];
                        (format!("{}{v}", self.prefix), kinds[v])
                    }
                    Src::Q(q, off) => {
                        let o = &self.exprs[self.operand(q, off)?];
                        (o.expr.clone(), o.kind)
                    }
                    Src::Scalar(s) => (format!("sc[{s}]"), Kind::Lane),
                    Src::Const(Value::F(x)) => (f64_lit(x), Kind::F),
                    Src::Const(Value::I(x)) => (i64_lit(x), Kind::I),
                };
                Ok(convert(&e, k, kind_of(want)))
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
            let boolean = |c: String| format!("((int64_t)({c}))");
            let (v, kind) = match ins.op {
                Op::Guard(then) => {
                    let a = a0(0)?;
                    let op = if then { "!=" } else { "==" };
                    let _ = writeln!(out.code, "      if ({a} {op} 0) {{");
                    open.push(at);
                    continue;
                }
                Op::End => {
                    open.pop().ok_or("unbalanced guarded run")?;
                    out.code.push_str("      }\n");
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
                Op::Mov => (a0(0)?, kind_of(ty)),
                Op::Cast(to) => (cast(&a0(0)?, ty, to), kind_of(to)),
                Op::Sel => (
                    format!("(({} != 0) ? {} : {})", a0(0)?, a0(1)?, a0(2)?),
                    kind_of(ty),
                ),
                Op::Un(u) if ty.is_float() => {
                    let a = a0(0)?;
                    let f32 = ty == Ty::F32;
                    match ops::un(u).code {
                        UnCode::Test(t) if t.abs => {
                            let inf = f64_lit(f64::INFINITY);
                            (
                                boolean(float_cc(t.cc, &format!("__builtin_fabs({a})"), &inf)?),
                                Kind::I,
                            )
                        }
                        UnCode::Test(t) => {
                            let v = narrow(a);
                            (boolean(float_cc(t.cc, &v, &v)?), Kind::I)
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
                Op::Un(u) => {
                    let a = a0(0)?;
                    let v = match u {
                        UnOp::Neg => wrap(&format!("gb_neg({a})"), ty),
                        UnOp::Abs => wrap(&format!("gb_abs({a})"), ty),
                        UnOp::Not => boolean(format!("{a} == 0")),
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
                        (boolean(float_cc(cc, &a, &x)?), Kind::I)
                    } else {
                        let r = match code {
                            BinCode::MinMax => min_max(o, &a, &x, f32),
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
                Op::Bin(o) => {
                    let (a, x) = (a0(0)?, a0(1)?);
                    let v = match o {
                        BinOp::Lt => boolean(format!("{a} < {x}")),
                        BinOp::Le => boolean(format!("{a} <= {x}")),
                        BinOp::Gt => boolean(format!("{a} > {x}")),
                        BinOp::Ge => boolean(format!("{a} >= {x}")),
                        BinOp::Eq => boolean(format!("{a} == {x}")),
                        BinOp::Ne => boolean(format!("{a} != {x}")),
                        BinOp::Add => wrap(&format!("gb_add({a}, {x})"), ty),
                        BinOp::Sub => wrap(&format!("gb_sub({a}, {x})"), ty),
                        BinOp::Mul => wrap(&format!("gb_mul({a}, {x})"), ty),
                        BinOp::Min => wrap(&format!("gb_min({a}, {x})"), ty),
                        BinOp::Max => wrap(&format!("gb_max({a}, {x})"), ty),
                        BinOp::And => wrap(&format!("({a} & {x})"), ty),
                        BinOp::Or => wrap(&format!("({a} | {x})"), ty),
                        BinOp::FloorDiv | BinOp::Div => wrap(&format!("gb_floordiv({a}, {x})"), ty),
                        BinOp::Mod => wrap(&format!("gb_mod({a}, {x})"), ty),
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
                            wrap(&r, ty)
                        }
                    };
                    (v, Kind::I)
                }
                Op::Bin2(..) => return Err("a fused integer operation".into()),
            };
            kinds[at] = kind;
            let t = if kind == Kind::F { "double" } else { "int64_t" };
            self.define(&mut out, &mut regs, ins.dst, at, t, &v, !open.is_empty());
            last = Some(at);
        }
        let last = last.ok_or("a tape of markers only")?;
        Ok(Body {
            code: out.text(),
            result: format!("{}{last}", self.prefix),
            kind: kinds[last],
        })
    }
}

/// A point's code being written: the declarations of guarded runs' values, then the rest.
#[derive(Default)]
struct Code {
    decls: String,
    code: String,
}

impl Code {
    fn text(self) -> String {
        self.decls + &self.code
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
            let (lo, hi, bad) = if t == Ty::I64 {
                (
                    -crate::gtscript::passes::types::TWO_63,
                    crate::gtscript::passes::types::TWO_63,
                    i64::MIN,
                )
            } else {
                (-2147483648.0, 2147483648.0, i32::MIN as i64)
            };
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
/// `x` giving `x`).
fn min_max(op: BinOp, a: &str, x: &str, f32: bool) -> String {
    let f = match (op == BinOp::Min, f32) {
        (true, false) => "gb_minf",
        (false, false) => "gb_maxf",
        (true, true) => "gb_minf32",
        (false, true) => "gb_maxf32",
    };
    format!("{f}({a}, {x})")
}

/// A point function ([`crate::gtscript::jit::abi::LoopFn`]) of `parts` (see `jit::point::build`, whose
/// [`Part`]s it reads): per row, each part's points in turn, each point running its statements
/// with real branches (`goto`), the quantities the part writes in variables from the point's
/// first statement to its last and stored once.
fn point_function(
    name: &str,
    plan: &Plan,
    parts: &[(usize, PointRange)],
    symbols: &[(&'static str, *const u8)],
) -> Result<String, Refusal> {
    let lanes = plan.lanes;
    let wide = lanes == Lanes::Wide;
    let walk = parts.first().ok_or("no part")?.1.walk;
    let point_axis = walk.map(PointWalk::axis);
    let t_elem = if wide { "uint64_t" } else { float_type(lanes) };
    let size = if lanes == Lanes::F32 { 4 } else { 8 };
    let ps: Vec<Part<'_>> = parts.iter().map(|(s, r)| Part::new(plan, *s, r)).collect();
    // A quantity's variable: its C type and kind.
    let reg = |q: u32| -> (&'static str, Kind) {
        match (wide, plan.quantity_ty(q).is_float()) {
            (false, _) => (float_type(lanes), Kind::T),
            (true, true) => ("double", Kind::F),
            (true, false) => ("int64_t", Kind::I),
        }
    };
    let mut f = String::new();
    let _ = writeln!(
        f,
        "void {name}(const unsigned char *const *ops, const intptr_t *strides, unsigned char *const *outs, const intptr_t *out_strides, const size_t *np, size_t rows, const unsigned char *scal, int64_t *vk_all, const unsigned char *stop) {{"
    );
    let _ = writeln!(
        f,
        "  const {t_elem} *sc = (const {t_elem} *)scal; (void)sc; (void)vk_all; (void)stop;"
    );
    let _ = writeln!(f, "  for (size_t r = 0; r < rows; r++) {{");
    let (mut o_ops, mut o_outs, mut o_vk) = (0, 0, 0);
    for (x, p) in ps.iter().enumerate() {
        let sec = &plan.sections[p.s];
        let _ = writeln!(f, "  {{ /* part {x}: section {} */", p.s);
        let _ = writeln!(
            f,
            "    const size_t n = np[{x}]; int64_t *vk = vk_all + {}; (void)vk;",
            o_vk * 13
        );
        for g in 0..p.operands.len() {
            let _ = writeln!(
                f,
                "    const unsigned char *b{g} = ops[{k}] + (intptr_t)r * strides[{k}];",
                k = o_ops + g
            );
        }
        for j in 0..p.outs.len() {
            let _ = writeln!(
                f,
                "    unsigned char *ob{j} = outs[{k}] + (intptr_t)r * out_strides[{k}];",
                k = o_outs + j
            );
        }
        // Each run-time K read's slot for the row, counted from its lowest level.
        for slot in 0..p.vk.len() {
            let b = slot * 13;
            let d_level = match walk {
                Some(PointWalk::Columns) => format!("{size}"),
                _ => format!("vk[{}]", b + 3),
            };
            let _ = writeln!(
                f,
                "    int64_t rc{slot} = vk[{b}] + (int64_t)r * vk[{}], rk{slot} = vk[{}] + (int64_t)r * vk[{}];\n    int64_t sl{slot} = vk[{}], sd{slot} = {d_level};\n    int64_t rb{slot} = rc{slot} + sl{slot} * sd{slot}, rr{slot} = rk{slot} - sl{slot}, ss{slot} = vk[{}] - sl{slot}; (void)sl{slot};",
                b + 1,
                b + 4,
                b + 5,
                b + 7,
                b + 8
            );
        }
        for (j, &q) in p.written.iter().enumerate() {
            let (t, _) = reg(q);
            let _ = writeln!(f, "    {t} w{j} = 0;");
        }
        // Operands read one level back of what the part writes: from the variable of the
        // point before (each row's first point reads the level before from memory).
        let carried: Vec<Option<usize>> = p
            .operands
            .iter()
            .map(|&(q, off)| {
                (Some(off) == p.back)
                    .then(|| p.written.iter().position(|&o| o == q))
                    .flatten()
            })
            .collect();
        if carried.iter().any(Option::is_some) {
            let _ = writeln!(f, "    if (n == 0) goto after{x};");
            for (g, c) in carried.iter().enumerate() {
                if let Some(w) = *c {
                    let (t, _) = reg(p.operands[g].0);
                    let _ = writeln!(f, "    w{w} = *(const {t} *)b{g};");
                }
            }
        }
        let step = match walk {
            Some(PointWalk::Columns) if sec.order == IterOrder::Backward => -size,
            _ => size,
        };
        let moves = |q: u32| point_axis.is_none_or(|a| has_axis(plan, q, a));
        let _ = writeln!(f, "    for (size_t i = 0; i < n; i++) {{");
        let _ = writeln!(f, "      intptr_t at = (intptr_t)i * {step}; (void)at;");
        for (g, &(q, _)) in p.operands.iter().enumerate() {
            let (t, _) = reg(q);
            let v = match carried[g] {
                Some(w) => format!("w{w}"),
                None if moves(q) => format!("*(const {t} *)(b{g} + at)"),
                None => format!("*(const {t} *)b{g}"),
            };
            let _ = writeln!(f, "      {t} val{g} = {v}; (void)val{g};");
        }
        for (j, &q) in p.outs.iter().enumerate() {
            if p.load[j] {
                let (t, _) = reg(q);
                let w = p.written.iter().position(|&o| o == q).ok_or("listed")?;
                let a = if moves(q) { " + at" } else { "" };
                let _ = writeln!(f, "      w{w} = *(const {t} *)(ob{j}{a});");
            }
        }
        let level_dir = if step < 0 { -1 } else { 1 };
        for slot in 0..p.vk.len() {
            let b = slot * 13;
            let (base, rel) = match walk {
                Some(PointWalk::Columns) => (
                    format!("rb{slot}"),
                    format!("rr{slot} + (int64_t)i * {level_dir}"),
                ),
                Some(PointWalk::Levels) => (
                    format!("rb{slot} + (int64_t)i * vk[{}]", b + 2),
                    format!("rr{slot}"),
                ),
                None => (
                    format!("rb{slot} + (int64_t)i * vk[{}]", b + 2),
                    format!("rr{slot} + (int64_t)i * vk[{}]", b + 6),
                ),
            };
            let _ = writeln!(
                f,
                "      int64_t sb{slot} = {base}, sr{slot} = {rel}; (void)sb{slot}; (void)sr{slot};"
            );
        }
        let label = |u: usize| {
            if u == p.exit {
                format!("D{x}")
            } else {
                format!("L{x}_{u}")
            }
        };
        for u in p.t..p.exit {
            let st = &sec.stmts[u];
            let local = operands_of(&st.tape);
            let mut exprs = Vec::with_capacity(local.len());
            for &(q, off) in &local {
                let o = match p
                    .written
                    .iter()
                    .position(|&o| o == q)
                    .filter(|_| off == [0; 3])
                {
                    Some(j) => Operand {
                        expr: format!("w{j}"),
                        kind: reg(q).1,
                    },
                    None => {
                        let g = p
                            .operands
                            .iter()
                            .position(|&o| o == (q, off))
                            .ok_or("an operand missing from the part")?;
                        Operand {
                            expr: format!("val{g}"),
                            kind: reg(q).1,
                        }
                    }
                };
                exprs.push(o);
            }
            let prefix = format!("v{x}_{u}_");
            let body = Point {
                tape: &st.tape,
                operands: &local,
                exprs: &exprs,
                vk: &p.vk,
                vk_mode: VkMode::Point,
                lanes,
                symbols,
                prefix: &prefix,
            }
            .body()?;
            let j = p
                .written
                .iter()
                .position(|&o| o == st.target)
                .ok_or("a target missing from the part")?;
            let _ = writeln!(f, "      {}: {{", label(u));
            f.push_str(&body.code);
            let _ = writeln!(f, "      w{j} = {};", body.as_kind(reg(st.target).1));
            let flow = sec.flow[u];
            match flow.exit {
                Some(e) => {
                    let _ = writeln!(
                        f,
                        "      if (w{j} != 0) goto {}; else goto {};",
                        label(flow.next),
                        label(e)
                    );
                }
                None => {
                    // A body's last statement going back to its loop's condition: the call's
                    // interrupt flag is read at every pass.
                    let c = flow.next;
                    if (p.t..=u).contains(&c) && sec.flow[c].exit.is_some() {
                        let _ = writeln!(
                            f,
                            "      if (*(volatile const unsigned char *)stop) return;"
                        );
                    }
                    let _ = writeln!(f, "      goto {};", label(c));
                }
            }
            f.push_str("      }\n");
        }
        let _ = writeln!(f, "      {}: ;", label(p.exit));
        for (j, &q) in p.outs.iter().enumerate() {
            let (t, _) = reg(q);
            let w = p.written.iter().position(|&o| o == q).ok_or("listed")?;
            let a = if moves(q) { " + at" } else { "" };
            let _ = writeln!(f, "      *({t} *)(ob{j}{a}) = w{w};");
        }
        f.push_str("    }\n");
        let _ = writeln!(f, "    after{x}: ;\n  }}");
        o_ops += p.operands.len();
        o_outs += p.outs.len();
        o_vk += p.vk.len();
    }
    f.push_str("  }\n}\n");
    Ok(f)
}

/// Columns in flight per step of a column function's loop (the same as tier one's: a
/// recurrence along K is one long dependency chain per column, so several columns interleave).
const COLUMNS: usize = 4;

/// A column function ([`crate::gtscript::jit::abi::ColumnFn`]) of section `s` (see
/// `jit::column`): groups of [`COLUMNS`] columns, then single columns, each walking the
/// section's levels in its order and running every statement of a level in order; temporaries
/// of one level (`Kind::Local`) in variables, everything else read and written in memory at
/// unit stride along K (a written value read back in the same level is the value stored).
fn column_function(
    name: &str,
    plan: &Plan,
    s: usize,
    code: &ColumnCode,
    symbols: &[(&'static str, *const u8)],
) -> Result<String, Refusal> {
    let lanes = plan.lanes;
    if lanes == Lanes::Wide {
        return Err("column functions are for one float type".into());
    }
    let t = float_type(lanes);
    let sec = &plan.sections[s];
    let backward = sec.order == IterOrder::Backward;
    let slots = &code.slots;
    let ns = slots.len();
    let slot_of = |q: u32, off: [i32; 3]| {
        slots
            .iter()
            .position(|x| x.q == q && x.off == [off[0], off[1]])
            .ok_or_else(|| "a quantity missing from the slots".to_string())
    };
    let local = |q: u32| matches!(plan.kinds[q as usize], Quantity::Local);
    // One level of `width` columns: every statement, on each column in turn.
    let level = |width: usize| -> Result<String, Refusal> {
        let mut body = String::new();
        for (u, st) in sec.stmts.iter().enumerate() {
            let ops = operands_of(&st.tape);
            let mut exprs = Vec::with_capacity(ops.len());
            for &(q, off) in &ops {
                let expr = if local(q) {
                    format!("loc{q}[l]")
                } else {
                    let x = slot_of(q, off)?;
                    let dk = if slots[x].has_k { off[2] } else { 0 };
                    if slots[x].has_k {
                        format!("p{x}[l][lev + ({dk})]")
                    } else {
                        format!("p{x}[l][0]")
                    }
                };
                exprs.push(Operand {
                    expr,
                    kind: Kind::T,
                });
            }
            let prefix = format!("v{u}_");
            let b = Point {
                tape: &st.tape,
                operands: &ops,
                exprs: &exprs,
                vk: &[],
                vk_mode: VkMode::Row,
                lanes,
                symbols,
                prefix: &prefix,
            }
            .body()?;
            let _ = writeln!(body, "      for (int l = 0; l < {width}; l++) {{");
            body.push_str(&b.code);
            let target = if local(st.target) {
                format!("loc{}[l]", st.target)
            } else {
                let x = slot_of(st.target, [0; 3])?;
                if slots[x].has_k {
                    format!("p{x}[l][lev]")
                } else {
                    format!("p{x}[l][0]")
                }
            };
            let _ = writeln!(body, "      {target} = {};\n      }}", b.result);
        }
        Ok(body)
    };
    let locals: Vec<u32> = {
        let mut v: Vec<u32> = sec
            .stmts
            .iter()
            .map(|st| st.target)
            .filter(|&q| local(q))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let mut f = String::new();
    let _ = writeln!(
        f,
        "void {name}(const uintptr_t *table, size_t ncols, size_t nlev, const unsigned char *scal) {{"
    );
    let _ = writeln!(f, "  const {t} *sc = (const {t} *)scal; (void)sc;");
    let _ = writeln!(f, "  size_t c = 0;");
    for width in [COLUMNS, 1] {
        let _ = writeln!(f, "  for (; c + {width} <= ncols; c += {width}) {{");
        for x in 0..ns {
            let _ = writeln!(
                f,
                "    {t} *p{x}[{width}]; for (int l = 0; l < {width}; l++) p{x}[l] = ({t} *)table[(c + l) * {ns} + {x}];"
            );
        }
        for q in &locals {
            let _ = writeln!(f, "    {t} loc{q}[{width}] = {{0}};");
        }
        let _ = writeln!(f, "    for (size_t w = 0; w < nlev; w++) {{");
        let lev = if backward { "nlev - 1 - w" } else { "w" };
        let _ = writeln!(f, "      intptr_t lev = (intptr_t)({lev});");
        f.push_str(&level(width)?);
        f.push_str("    }\n  }\n");
    }
    f.push_str("}\n");
    Ok(f)
}
