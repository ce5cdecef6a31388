//! C source for tier two: one function for each row, point and walk function the `Jit`
//! compiled (not its column functions: tier one's keep eight columns in flight in vectors, where
//! this C's four scalar columns took 1.6x their time on a tridiagonal solve), with its signature (`jit::abi`) and its loops around the points of its
//! tapes (`cgen::tape`: each instruction with the semantics of its Cranelift code). The C is
//! written so that an optimising compiler keeps those semantics:
//! it is compiled without fast-math and without contraction into fused multiply-adds
//! (`compiler::FLAGS`), integer arithmetic wraps through unsigned types, every conversion is
//! written out, and the math functions with no instruction are called through the very
//! functions the interpreter and tier one call (their addresses handed to the module's
//! `gb_init`, in the order of [`crate::gtscript::ops::math_symbols`]), or, with vector math
//! (`MathTable::vector`), the C library's functions by name, which the compiler may call on
//! whole vectors (glibc's libmvec: a few ulps from tier one's, see the README).

use crate::gtscript::cgen::tape::{
    float_type, vector_math_prelude, Body, Kind, MathTable, Operand, Point, Refusal, VkMode,
};
use crate::gtscript::cgen::vectorise::{
    for_vectoriser, levels_walk_vectorises, nothread, straight,
};
use crate::gtscript::ir::{IterOrder, Ty};
use crate::gtscript::jit::abi::StmtCode;
use crate::gtscript::jit::helpers::operands_of;
use crate::gtscript::jit::point::{Part, PointRange};
use crate::gtscript::jit::{walk_parts, Jit};
use crate::gtscript::plan::guarded::chunks_pay;
use crate::gtscript::plan::masked::{guarded_masked_arm, masked_assignment, repeated_later};
use crate::gtscript::plan::schedule::{has_axis, Layout, PointWalk};
use crate::gtscript::plan::tape::ZERO_SRC;
use crate::gtscript::plan::{Instr, Lanes, Op, Plan, SectionPlan, Src};
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
/* NumPy's NaN-propagating minimum and maximum, in two forms that give the same bits. Where
   the comparison `a < x` was made only where `a` is a number, gcc (which may not move a
   comparison that can raise an exception) left every loop holding one unvectorised.
   For code written for the vectoriser: x86's min/max, then `a` where it is NaN. */
static inline double gb_minfv(double a, double x) { double m = a < x ? a : x; return a != a ? a : m; }
static inline double gb_maxfv(double a, double x) { double m = x < a ? a : x; return a != a ? a : m; }
static inline float gb_minf32v(float a, float x) { float m = a < x ? a : x; return a != a ? a : m; }
static inline float gb_maxf32v(float a, float x) { float m = x < a ? a : x; return a != a ? a : m; }
/* For scalar point code: both tests or-ed, on which gcc branches (pace's saturation adjustment
   35.7 -> 28.9 ms and icloud 18.1 -> 17.0 ms against the form above; warm_rain's vector code
   that stays scalar, for its run-time K reads, was 7 % slower with this one). */
static inline double gb_minf(double a, double x) { int keep = (a != a) | (a < x); return keep ? a : x; }
static inline double gb_maxf(double a, double x) { int keep = (a != a) | (x < a); return keep ? a : x; }
static inline float gb_minf32(float a, float x) { int keep = (a != a) | (a < x); return keep ? a : x; }
static inline float gb_maxf32(float a, float x) { int keep = (a != a) | (x < a); return keep ? a : x; }
static inline double gb_seldi(int c, double a, double b) {
  uint64_t m = (uint64_t)0 - (uint64_t)(c != 0);
  return gb_d((gb_u(a) & m) | (gb_u(b) & ~m));
}
static inline float gb_selfi(int c, float a, float b) {
  uint32_t m = (uint32_t)0 - (uint32_t)(c != 0), x, y; float r;
  memcpy(&x, &a, 4); memcpy(&y, &b, 4); x = (x & m) | (y & ~m); memcpy(&r, &x, 4);
  return r;
}
static inline double gb_seld(double c, double a, double b) { return gb_seldi(c != 0, a, b); }
static inline float gb_self(float c, float a, float b) { return gb_selfi(c != 0, a, b); }
static inline double gb_bld(int64_t m, double a, double b) {
  return gb_d((gb_u(a) & (uint64_t)m) | (gb_u(b) & ~(uint64_t)m));
}
static inline int64_t gb_bli(int64_t m, int64_t a, int64_t b) { return (a & m) | (b & ~m); }
#if defined(__GNUC__) && !defined(__clang__)
#define GB_NOTHREAD __attribute__((optimize("no-thread-jumps")))
#else
#define GB_NOTHREAD
#endif
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
    /// Per fused straight run of float code (tier two's only): its name, section, first
    /// statement and one past its last.
    pub(crate) fused: Vec<(String, usize, usize, usize)>,
    /// Per walk of levels of a section that only tier two walks: its name and section.
    pub(crate) levels: Vec<(String, usize)>,
}

impl Source {
    /// Whether it defines no function.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
            && self.loops.is_empty()
            && self.walks.is_empty()
            && self.fused.is_empty()
            && self.levels.is_empty()
    }
}

/// The C module of `jit`'s functions (made from `plan`): its row functions, its `while` loops'
/// point functions, every whole sections' walk it may compile, the schedule's fused runs, and
/// its walks of levels that only tier two has where calls on `layout` run them; a function whose
/// tape holds something this generator does not write is left out.
pub(crate) fn module(plan: &Plan, jit: &Jit, math: &MathTable, layout: Option<Layout>) -> Source {
    let symbols = &math.symbols;
    let mut text = String::from(PRELUDE);
    if math.vector {
        text.push_str(&vector_math_prelude());
    }
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
        fused: Vec::new(),
        levels: Vec::new(),
    };
    // Statements that a point function runs (a `while` loop, a straight run, a fused run) keep
    // tier one's row functions: those run only where the run's statements are cut to
    // different boxes (regions, extents). pace's satadjust, 826 statements all in straight
    // runs, took gcc 9 s for rows no call ran.
    let in_run: Vec<Vec<bool>> = jit
        .schedule()
        .sections
        .iter()
        .map(|sec| {
            let n = sec.row.len();
            let mut covered = vec![false; n];
            for (u, ends) in sec.fused.iter().zip(&sec.point_loop).enumerate() {
                for e in [*ends.0, *ends.1].into_iter().flatten() {
                    covered[u..e.min(n)].fill(true);
                }
            }
            covered
        })
        .collect();
    for (s, t, code) in jit.stmts() {
        if in_run[s][t] {
            continue;
        }
        let name = format!("gb_s{s}_{t}");
        let tape = &plan.sections[s].stmts[t].tape;
        if let Ok(f) = row_function(&name, plan.lanes, code, tape, math) {
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
        // Mixed-type straight runs keep their branches: written for the vectoriser (guards
        // dropped, blends), gcc still left pace's satadjust scalar (integer division and
        // conversions keep control flow in the loop), and computing every guarded arm took
        // its call from 112 to 282 ms.
        if let Ok(f) = point_function(&name, plan, &parts, math, false) {
            text.push_str(&f);
            src.loops.push((name, s, t));
        }
    }
    for (s, walk, sections) in jit.walk_keys() {
        let name = format!("gb_w{s}_{}", walk as usize);
        let parts = walk_parts(plan, sections, walk);
        let vector = walk == PointWalk::Levels && levels_walk_vectorises(plan, &parts, math);
        if let Ok(f) = point_function(&name, plan, &parts, math, vector) {
            text.push_str(nothread(plan, &parts, vector));
            text.push_str(&f);
            src.walks.push((name, s, walk));
        }
    }
    for (s, sec) in jit.schedule().sections.iter().enumerate() {
        for (t, exit) in sec.fused.iter().enumerate() {
            let Some(exit) = *exit else { continue };
            let name = format!("gb_f{s}_{t}");
            let range = PointRange {
                first: t,
                exit,
                walk: None,
            };
            let parts = [(s, range)];
            let stmts = &plan.sections[s].stmts[t..exit];
            let vector = for_vectoriser(plan, stmts, math);
            if let Ok(f) = point_function(&name, plan, &parts, math, vector) {
                text.push_str(nothread(plan, &parts, vector));
                text.push_str(&f);
                src.fused.push((name, s, t, exit));
            }
        }
        // Walks of levels only where calls on `layout` run them (every layout's, for `None`),
        // as tier one compiles rows.
        if sec.levels_on(layout) {
            let name = format!("gb_v{s}");
            let parts = walk_parts(plan, s..s + 1, PointWalk::Levels);
            let vector = levels_walk_vectorises(plan, &parts, math);
            if let Ok(f) = point_function(&name, plan, &parts, math, vector) {
                text.push_str(nothread(plan, &parts, vector));
                text.push_str(&f);
                src.levels.push((name, s));
            }
        }
    }
    src.text = text;
    src
}

/// For a part of code for the vectoriser whose rows can be skipped, the C computing, once per
/// row, the test that some point of the row takes one of its statements, and that test; None
/// where they cannot be. A row is skipped where each statement of the part either computes a
/// temporary of the part's own (not an output, written once) from values the same at every
/// point of the row (literals, scalars, quantities that do not move along the row and that
/// the part does not write, such temporaries), computed once per row, or is a masked
/// assignment of its own target (`t = c ? new : t`) whose condition is such a value; and every
/// output is loaded and stored back (no run-time K reads, no values carried from point to
/// point or held over a column): where no condition holds, the row's loop would store what it
/// loaded. pace's Rayleigh damping (`if pfull < rf_cutoff`, a K field: the sponge's few top
/// levels) ran its loads, blends and stores on all 79 levels.
#[allow(clippy::too_many_arguments)]
fn uniform_rows(
    p: &Part<'_>,
    sec: &SectionPlan,
    x: usize,
    held: &[bool],
    carried: &[Option<usize>],
    moves: &dyn Fn(u32) -> bool,
    reg: &dyn Fn(u32) -> (&'static str, Kind),
    mem: &dyn Fn(u32) -> &'static str,
    math: &MathTable,
    lanes: Lanes,
) -> Result<Option<(String, String)>, Refusal> {
    let stored = p.outs.iter().enumerate().all(|(j, &q)| {
        p.load[j]
            && p.written
                .iter()
                .position(|&o| o == q)
                .is_some_and(|w| !p.zeroed[w])
    });
    if !p.vk.is_empty() || held.iter().any(|&h| h) || carried.iter().any(Option::is_some) || !stored
    {
        return Ok(None);
    }
    let stmts = &sec.stmts[p.t..p.exit];
    // The part's temporaries computed once per row so far: quantity -> their C.
    let mut rowwise: Vec<(u32, String)> = Vec::new();
    let (mut code, mut tests) = (String::new(), Vec::new());
    for (u, st) in stmts.iter().enumerate() {
        // An operand the same at every point of the row: its C, once per row.
        let fixed = |q: u32, off: [i32; 3]| -> Option<String> {
            if let Some((_, e)) = rowwise.iter().find(|(t, _)| *t == q) {
                return (off == [0; 3]).then(|| e.clone());
            }
            if moves(q) || p.written.contains(&q) {
                return None;
            }
            let g = p.operands.iter().position(|&o| o == (q, off))?;
            Some(format!("(({})*(const {} *)b{g})", reg(q).0, mem(q)))
        };
        // The C, once per row, of the value of register `r` of the statement's tape (of all
        // of it where None), where it reads only such operands.
        let value = |r: Option<u32>, code: &mut String| -> Result<Option<String>, Refusal> {
            let mut need = vec![r.is_none(); st.tape.len()];
            // The instruction that last wrote register `r` before instruction `before` (tapes
            // reuse registers: a later write is another value).
            let def = |r: u32, before: usize| {
                st.tape[..before]
                    .iter()
                    .rposition(|i| !i.op.is_marker() && i.dst == r)
            };
            let mut stack: Vec<usize> = match r {
                Some(r) => def(r, st.tape.len()).into_iter().collect(),
                None => (0..st.tape.len()).collect(),
            };
            if stack.is_empty() {
                return Ok(None);
            }
            while let Some(at) = stack.pop() {
                need[at] = true;
                let ins = &st.tape[at];
                if ins.op.is_marker() || matches!(ins.op, Op::LoadK(..) | Op::StoreK(..)) {
                    return Ok(None);
                }
                for a in &ins.args {
                    match *a {
                        Src::Reg(r) => match def(r, at) {
                            Some(d) if !need[d] => stack.push(d),
                            Some(_) => {}
                            None => return Ok(None),
                        },
                        Src::Q(q, off) if fixed(q, off).is_none() => return Ok(None),
                        _ => {}
                    }
                }
            }
            let tape: Vec<Instr> = st
                .tape
                .iter()
                .zip(&need)
                .filter(|(_, &n)| n)
                .map(|(i, _)| *i)
                .collect();
            let operands = operands_of(&tape);
            let exprs = operands
                .iter()
                .map(|&(q, off)| {
                    Ok(Operand {
                        expr: fixed(q, off).ok_or("a moving operand")?,
                        kind: reg(q).1,
                    })
                })
                .collect::<Result<Vec<_>, Refusal>>()?;
            let prefix = format!("u{x}_{u}_");
            let body = Point {
                tape: &tape,
                operands: &operands,
                exprs: &exprs,
                vk: &p.vk,
                vk_mode: VkMode::Point,
                lanes,
                math,
                prefix: &prefix,
                vector: true,
                skip: None,
            }
            .body()?;
            code.push_str(&body.code);
            Ok(Some(body.as_kind(reg(st.target).1)))
        };
        let own = Src::Q(st.target, [0; 3]);
        let last = st.tape.last().ok_or("empty tape")?;
        let masked = last.op == Op::Sel && (last.args[1] == own) != (last.args[2] == own);
        if !masked {
            // A temporary of the part's own, computed once per row.
            let once = !p.outs.contains(&st.target)
                && stmts.iter().filter(|s| s.target == st.target).count() == 1;
            match once.then(|| value(None, &mut code)).transpose()?.flatten() {
                Some(e) => rowwise.push((st.target, e)),
                None => return Ok(None),
            }
            continue;
        }
        let taken = if last.args[1] == own { "== 0" } else { "!= 0" };
        let test = match last.args[0] {
            Src::Q(q, off) => fixed(q, off),
            Src::Reg(r) => value(Some(r), &mut code)?,
            _ => None,
        };
        match test.map(|t| format!("({t} {taken})")) {
            Some(t) if tests.contains(&t) => {}
            Some(t) => tests.push(t),
            None => return Ok(None),
        }
    }
    Ok((!tests.is_empty()).then(|| (code, tests.join(" || "))))
}

/// A row function: `name(ops, strides, out, out_stride, n, rows, scal, vk)`, the loops of
/// `jit::row::build` around one point of the tape.
fn row_function(
    name: &str,
    lanes: Lanes,
    code: &StmtCode,
    tape: &[Instr],
    math: &MathTable,
) -> Result<String, Refusal> {
    let wide = lanes == Lanes::Wide;
    let elem = if wide { "uint64_t" } else { float_type(lanes) };
    let exprs: Vec<Operand> = (0..code.operands.len())
        .map(|k| Operand {
            expr: format!("o{k}[i]"),
            kind: if wide { Kind::Lane } else { Kind::T },
        })
        .collect();
    let point = |skip| Point {
        tape,
        operands: &code.operands,
        exprs: &exprs,
        vk: &code.vk,
        vk_mode: VkMode::Row,
        lanes,
        math,
        prefix: "v",
        vector: true,
        skip,
    };
    let body = point(None).body()?;
    // Guarded math runs only in the chunks of points where some point takes it (see `CHUNK`).
    let chunked = chunks_pay([tape]) && code.vk.is_empty();
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
    let result = |b: &Body| if wide { b.lane() } else { b.result.clone() };
    if chunked {
        let taken = point(Some("gb_any")).body()?;
        let skipped = point(Some("gb_none")).body()?;
        let store = |b: &Body| format!("{}      d[i] = {};\n", b.code, result(b));
        f.push_str(&chunk_loops(&taken.code, &store(&body), &store(&skipped)));
        f.push_str("  }\n}\n");
        return Ok(f);
    }
    if code.vk.is_empty() {
        f.push_str("    GB_IVDEP\n");
    }
    let _ = writeln!(f, "    for (size_t i = 0; i < n; i++) {{");
    f.push_str(&body.code);
    let _ = writeln!(f, "      d[i] = {};", result(&body));
    f.push_str("    }\n  }\n}\n");
    Ok(f)
}

/// The points of a chunk in code for the vectoriser whose guarded runs hold math: first the
/// runs' conditions at every point of the chunk, then every run computed at every point where
/// one point takes one, else none (`Point::skip`), as tier one skips a vector step's guarded
/// run where no lane takes it. Computed everywhere, pace's `ray_fast_wind_compute` (`sin` and
/// `log` in the top levels only) took longer on tier two than on tier one.
pub(super) const CHUNK: usize = 8;

/// The loop over a row's `n` points in chunks of [`CHUNK`]: per chunk, the points' `test` code
/// (which ORs the guarded runs' conditions into `gb_any`), then the `taken` code at each point
/// where one holds, else the `skipped` code (its flag `gb_none` unread); each the code inside
/// the loop over the chunk's points `i`.
fn chunk_loops(test: &str, taken: &str, skipped: &str) -> String {
    format!(
        "    for (size_t i0 = 0; i0 < n; i0 += {CHUNK}) {{\n    size_t i1 = n - i0 < {CHUNK} ? n : i0 + {CHUNK};\n    int gb_any = 0;\n    for (size_t i = i0; i < i1; i++) {{\n{test}    }}\n    if (gb_any) {{\n    GB_IVDEP\n    for (size_t i = i0; i < i1; i++) {{\n{taken}    }}\n    }} else {{\n    int gb_none = 0; (void)gb_none;\n    GB_IVDEP\n    for (size_t i = i0; i < i1; i++) {{\n{skipped}    }}\n    }}\n    }}\n"
    )
}

/// A point function ([`crate::gtscript::jit::abi::LoopFn`]) of `parts` (see `jit::point::build`, whose
/// [`Part`]s it reads): per row, each part's points in turn, each point running its statements
/// with real branches (`goto`), the quantities the part writes in variables from the point's
/// first statement to its last and stored once.
///
/// `vector`: a straight run of float code on a block's rows (see
/// [`crate::gtscript::plan::schedule::SectionSchedule::fused`]), written for the C compiler's
/// vectoriser: each point's values declared in the loop, the loop marked free of
/// dependences between points (what the run writes it reads only at the point itself, or at
/// other levels of a one-level block, and distinct quantities are distinct memory), the
/// statements as straight-line code (see
/// [`Point::vector`]).
fn point_function(
    name: &str,
    plan: &Plan,
    parts: &[(usize, PointRange)],
    math: &MathTable,
    vector: bool,
) -> Result<String, Refusal> {
    let lanes = plan.lanes;
    let wide = lanes == Lanes::Wide;
    let walk = parts.first().ok_or("no part")?.1.walk;
    let point_axis = walk.map(PointWalk::axis);
    let t_elem = if wide { "uint64_t" } else { float_type(lanes) };
    let size = if lanes == Lanes::F32 { 4 } else { 8 };
    let ps: Vec<Part<'_>> = parts.iter().map(|(s, r)| Part::new(plan, *s, r)).collect();
    // A quantity's element in memory.
    let mem = |q: u32| -> &'static str {
        match (wide, plan.quantity_ty(q).is_float()) {
            (false, _) => float_type(lanes),
            (true, true) => "double",
            (true, false) => "int64_t",
        }
    };
    // A quantity's variable: its C type and kind (a boolean's an `int` truth in one-float-type
    // code, see `Kind::B`).
    let reg = |q: u32| -> (&'static str, Kind) {
        let kind = match (wide, plan.quantity_ty(q)) {
            (false, Ty::Bool) => return ("int", Kind::B),
            (false, _) => Kind::T,
            (true, ty) if ty.is_float() => Kind::F,
            (true, _) => Kind::I,
        };
        (mem(q), kind)
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
        let mut decls = String::new();
        // (A temporary that lives in the part starts every point at zero, as in `jit::point`.)
        let mut zeros = String::new();
        for (j, &q) in p.written.iter().enumerate() {
            let (t, _) = reg(q);
            let _ = write!(decls, " {t} w{j} = 0;");
            if p.zeroed[j] {
                let _ = write!(zeros, " w{j} = 0;");
            }
        }
        if !vector {
            let _ = writeln!(f, "   {decls}");
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
        let step = match walk {
            Some(PointWalk::Columns) if sec.order == IterOrder::Backward => -size,
            _ => size,
        };
        let moves = |q: u32| point_axis.is_none_or(|a| has_axis(plan, q, a));
        // Per output: whether a column walk keeps it in its variable from the column's first
        // level to its last, loaded before and stored after (a quantity without the K axis,
        // one place in memory for the whole column, which no operand or run-time K read of
        // the part reads from memory): a store and a load per level were a dependence through
        // memory, carried from level to level (pace's `lagrangian_contributions`, `lev`).
        let held: Vec<bool> = p
            .outs
            .iter()
            .map(|&q| {
                walk == Some(PointWalk::Columns)
                    && !moves(q)
                    && p.operands.iter().all(|&(o, _)| o != q)
                    && p.vk.iter().all(|&(o, _)| o != q)
            })
            .collect();
        // A row without points loads and stores nothing.
        if carried.iter().any(Option::is_some) || held.iter().any(|&h| h) {
            let _ = writeln!(f, "    if (n == 0) goto after{x};");
        }
        if carried.iter().any(Option::is_some) {
            for (g, c) in carried.iter().enumerate() {
                if let Some(w) = *c {
                    let t = mem(p.operands[g].0);
                    let _ = writeln!(f, "    w{w} = *(const {t} *)b{g};");
                }
            }
        }
        if held.iter().any(|&h| h) {
            for (j, &q) in p.outs.iter().enumerate() {
                if held[j] && p.load[j] {
                    let t = mem(q);
                    let w = p.written.iter().position(|&o| o == q).ok_or("listed")?;
                    let _ = writeln!(f, "    w{w} = *(const {t} *)ob{j};");
                }
            }
        }
        // Each point's code, its guarded runs left out where `skip` names a flag (see
        // `CHUNK`), its results stored where `store` says.
        let point = |skip: Option<&str>, store: bool| -> Result<String, Refusal> {
            let mut f = String::new();
            if vector {
                let _ = writeln!(f, "     {decls}");
            } else if !zeros.is_empty() {
                let _ = writeln!(f, "     {zeros}");
            }
            let _ = writeln!(f, "      intptr_t at = (intptr_t)i * {step}; (void)at;");
            for (g, &(q, _)) in p.operands.iter().enumerate() {
                let (t, m) = (reg(q).0, mem(q));
                let v = match carried[g] {
                    Some(w) => format!("w{w}"),
                    // Typed indexing where the compiler should see contiguous accesses (with
                    // byte offsets gcc 12 vectorised a fused run with gathers and scatters).
                    None if moves(q) && vector => format!("((const {m} *)b{g})[i]"),
                    None if moves(q) => format!("*(const {m} *)(b{g} + at)"),
                    None => format!("*(const {m} *)b{g}"),
                };
                let _ = writeln!(f, "      {t} val{g} = {v}; (void)val{g};");
            }
            for (j, &q) in p.outs.iter().enumerate() {
                if p.load[j] && !held[j] {
                    let t = mem(q);
                    let w = p.written.iter().position(|&o| o == q).ok_or("listed")?;
                    let _ = match (moves(q), vector) {
                        (true, true) => writeln!(f, "      w{w} = ((const {t} *)ob{j})[i];"),
                        (true, false) => writeln!(f, "      w{w} = *(const {t} *)(ob{j} + at);"),
                        (false, _) => writeln!(f, "      w{w} = *(const {t} *)ob{j};"),
                    };
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
            // A part without loops runs its statements in order with no jumps, so consecutive
            // masked assignments under one condition share one C `if`, as GT4Py's compiled
            // backends run an `if` block: the open one's test, and its condition's quantity.
            let straight = straight(sec, p.t..p.exit);
            let mut open: Option<(String, u32)> = None;
            // What a later statement repeats is not guarded (scalar code only, as below).
            let repeated = if vector {
                Vec::new()
            } else {
                repeated_later(
                    sec.stmts[p.t..p.exit]
                        .iter()
                        .map(|st| (&st.tape[..], st.target)),
                )
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
                // A masked assignment (scalar code only: the vectoriser wants no branches) runs its
                // tape where its select takes the new value, and leaves the target as it is
                // elsewhere: its select becomes a move of the new value.
                let masked = if vector {
                    None
                } else {
                    masked_assignment(&st.tape, st.target)
                };
                let moved: Vec<Instr>;
                let tape: &[Instr] = match masked {
                    // A condition the statement computes itself: the new value in a guarded
                    // run after it (scalar code only, as above).
                    None if !vector => match guarded_masked_arm(&st.tape, &repeated[u - p.t]) {
                        Some(t) => {
                            moved = t;
                            &moved
                        }
                        None => &st.tape,
                    },
                    Some((_, then)) => {
                        let mut t = st.tape.clone();
                        let last = t.last_mut().ok_or("empty tape")?;
                        let value = last.args[if then { 1 } else { 2 }];
                        *last = Instr {
                            op: Op::Mov,
                            args: [value, ZERO_SRC, ZERO_SRC],
                            ..*last
                        };
                        moved = t;
                        &moved
                    }
                    None => &st.tape,
                };
                let point = Point {
                    tape,
                    operands: &local,
                    exprs: &exprs,
                    vk: &p.vk,
                    vk_mode: VkMode::Point,
                    lanes,
                    math,
                    prefix: &prefix,
                    vector,
                    skip,
                };
                let body = point.body()?;
                let test = match masked {
                    Some((cond, then)) => Some((
                        format!("{}{}", if then { "" } else { "!" }, point.condition(cond)?),
                        cond.0,
                    )),
                    None => None,
                };
                let j = p
                    .written
                    .iter()
                    .position(|&o| o == st.target)
                    .ok_or("a target missing from the part")?;
                let store = format!("      w{j} = {};\n", body.as_kind(reg(st.target).1));
                if straight {
                    if open.as_ref().map(|o| &o.0) != test.as_ref().map(|t| &t.0) {
                        if open.take().is_some() {
                            f.push_str("      }\n");
                        }
                        if let Some(t) = test {
                            let _ = writeln!(f, "      if ({}) {{", t.0);
                            open = Some(t);
                        }
                    }
                    f.push_str("      {\n");
                    f.push_str(&body.code);
                    f.push_str(&store);
                    f.push_str("      }\n");
                    // Writing the condition's quantity ends the shared test.
                    if open.as_ref().is_some_and(|o| o.1 == st.target) {
                        open = None;
                        f.push_str("      }\n");
                    }
                    continue;
                }
                let _ = writeln!(f, "      {}: {{", label(u));
                if let Some(t) = &test {
                    let _ = writeln!(f, "      if ({}) {{", t.0);
                }
                f.push_str(&body.code);
                f.push_str(&store);
                if test.is_some() {
                    f.push_str("      }\n");
                }
                let flow = sec.flow[u];
                match flow.exit {
                    // A `while` loop's condition: the call's interrupt flag is read at every
                    // pass, as the pass begins. (Read at the end of the body instead, on the way
                    // back to the condition, it stood between the body and the test, and gcc
                    // kept the test waiting on the body's last value: the vertical remap's tier
                    // two 15.0 -> 13.2 ms, 128 x 128 x 80, one thread.)
                    Some(e) => {
                        let _ = writeln!(
                            f,
                            "      if (w{j} != 0) {{ if (*(volatile const unsigned char *)stop) return; goto {}; }} else goto {};",
                            label(flow.next),
                            label(e)
                        );
                    }
                    None => {
                        let _ = writeln!(f, "      goto {};", label(flow.next));
                    }
                }
                f.push_str("      }\n");
            }
            if open.is_some() {
                f.push_str("      }\n");
            }
            if !straight {
                let _ = writeln!(f, "      {}: ;", label(p.exit));
            }
            for (j, &q) in p
                .outs
                .iter()
                .enumerate()
                .filter(|&(j, _)| store && !held[j])
            {
                let t = mem(q);
                let w = p.written.iter().position(|&o| o == q).ok_or("listed")?;
                let _ = match (moves(q), vector) {
                    (true, true) => writeln!(f, "      (({t} *)ob{j})[i] = w{w};"),
                    (true, false) => writeln!(f, "      *({t} *)(ob{j} + at) = w{w};"),
                    (false, _) => writeln!(f, "      *({t} *)ob{j} = w{w};"),
                };
            }
            Ok(f)
        };
        // Rows where no point takes any of the part's statements are skipped (see
        // `uniform_rows`): the test, once per row, before the loop.
        if vector && !wide && straight(sec, p.t..p.exit) {
            if let Some((code, test)) =
                uniform_rows(p, sec, x, &held, &carried, &moves, &reg, &mem, math, lanes)?
            {
                f.push_str(&code);
                let _ = writeln!(f, "    if (!({test})) goto after{x};");
            }
        }
        // Guarded math runs only in the chunks of points where some point takes it.
        let chunked = vector
            && p.vk.is_empty()
            && carried.iter().all(Option::is_none)
            && chunks_pay(sec.stmts[p.t..p.exit].iter().map(|st| st.tape.as_slice()));
        if chunked {
            f.push_str(&chunk_loops(
                &point(Some("gb_any"), false)?,
                &point(None, true)?,
                &point(Some("gb_none"), true)?,
            ));
        } else {
            if vector {
                f.push_str("    GB_IVDEP\n");
            }
            let _ = writeln!(f, "    for (size_t i = 0; i < n; i++) {{");
            f.push_str(&point(None, true)?);
            f.push_str("    }\n");
        }
        for (j, &q) in p.outs.iter().enumerate().filter(|&(j, _)| held[j]) {
            let t = mem(q);
            let w = p.written.iter().position(|&o| o == q).ok_or("listed")?;
            let _ = writeln!(f, "    *({t} *)ob{j} = w{w};");
        }
        let _ = writeln!(f, "    after{x}: ;\n  }}");
        o_ops += p.operands.len();
        o_outs += p.outs.len();
        o_vk += p.vk.len();
    }
    f.push_str("  }\n}\n");
    Ok(f)
}
