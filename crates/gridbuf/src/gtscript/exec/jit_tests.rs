//! Differential tests of the compiled statements ([`Jit`]) against the tape interpreter and
//! against a direct reference evaluator of the IR.
//!
//! A proptest generates small random programs as IR text: 1-3 IJK fields (the last one or two
//! written), optionally a read-only IJ or K field, 0-2 scalars, 0-2 temporaries, a PARALLEL
//! section that computes the temporaries, then PARALLEL / FORWARD / BACKWARD sections over
//! several intervals, with expression trees over every operator of the IR. Reads are valid by
//! construction (see [`Scope`]): written fields only at horizontal offset zero, at K offsets
//! where the planner allows them; temporaries only where they were computed. Each program runs
//! on random inputs (negatives, zeros of both signs, NaN, infinities, huge and tiny values) over
//! odd domains, on C-ordered and I-fastest (Fortran) fields, in `f64` and `f32`, with and
//! without the JIT, on 1 and 3 threads; every run must agree with the reference point for point
//! (bit for bit; any NaN equals any NaN, since IEEE leaves NaN payloads and signs to the
//! hardware and LLVM may commute operands).

use crate::gtscript::rt::reference::{arrays, reference, Arr, Elem, Rng};
use crate::gtscript::{compile, Plan};
use crate::gtscript::{run, FieldMem, Jit};
use crate::kernels::exec::Threads;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

// ---------------------------------------------------------------------------------------------
// Random programs.

/// A raw expression tree: leaves and operator codes are mapped onto a valid program by
/// [`Scope::expr`], so every tree the strategy makes (and every shrink of it) renders.
#[derive(Clone, Debug)]
enum Raw {
    Leaf(u8, u8, [i8; 3]),
    Un(u8, Box<Raw>),
    Bin(u8, Box<Raw>, Box<Raw>),
    Sel(Box<Raw>, Box<Raw>, Box<Raw>),
}

/// Unary operators: instructions, then the functions of `math.rs` the compiled code calls.
const UN: [&str; 31] = [
    "neg",
    "not",
    "abs",
    "sqrt",
    "floor",
    "ceil",
    "trunc",
    "round",
    "round_away_from_zero",
    "isfinite",
    "isnan",
    "isinf",
    "exp",
    "log",
    "log10",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "gamma",
    "cbrt",
    "erf",
    "erfc",
];
/// Where a raw operator code is 128 or more, the operand of these functions is first mapped
/// into their domain, so that they are also compared on ordinary results, not only NaNs.
const DOMAIN: [(&str, &str); 7] = [
    ("sqrt", "abs "),
    ("log", "abs "),
    ("log10", "abs "),
    ("asin", "mul c 0.125 "),
    ("acos", "mul c 0.125 "),
    ("atanh", "mul c 0.125 "),
    ("acosh", "add c 1 abs "),
];
/// Binary operators (`mod` and `pow` call functions).
const BIN: [&str; 17] = [
    "add", "sub", "mul", "div", "mod", "floordiv", "min", "max", "lt", "le", "gt", "ge", "eq",
    "ne", "and", "or", "pow",
];
const CONSTS: [&str; 16] = [
    "0", "-0.0", "1", "-1", "0.5", "2", "3", "-2.5", "0.1", "1e300", "-7", "inf", "-inf", "nan",
    "1e-310", "65504",
];

fn raw_expr() -> impl Strategy<Value = Raw> {
    let leaf = (any::<u8>(), any::<u8>(), [-2i8..=2, -2i8..=2, -2i8..=2])
        .prop_map(|(k, i, o)| Raw::Leaf(k, i, o));
    leaf.prop_recursive(5, 24, 3, |inner| {
        prop_oneof![
            2 => (any::<u8>(), inner.clone()).prop_map(|(o, a)| Raw::Un(o, Box::new(a))),
            5 => (any::<u8>(), inner.clone(), inner.clone())
                .prop_map(|(o, a, b)| Raw::Bin(o, Box::new(a), Box::new(b))),
            1 => (inner.clone(), inner.clone(), inner)
                .prop_map(|(c, a, b)| Raw::Sel(Box::new(c), Box::new(a), Box::new(b))),
        ]
    })
}

#[derive(Clone, Debug)]
struct RawSection {
    /// 0 PARALLEL, 1 FORWARD, 2 BACKWARD.
    order: u8,
    /// Index into [`INTERVALS`].
    interval: u8,
    /// Starts a new computation (else continues the previous one, with its order).
    new_comp: bool,
    /// (target output field, expression).
    stmts: Vec<(u8, Raw)>,
}

#[derive(Clone, Debug)]
struct RawProgram {
    n_fields: usize,
    n_out: usize,
    /// 0 none, 1 a read-only IJ field, 2 a read-only K field.
    lowdim: u8,
    n_scalars: usize,
    /// Statements of the first section that write temporaries: (target code, expression).
    temps: Vec<(u8, Raw)>,
    /// Field statements of the first section, after the temporaries.
    first: Vec<(u8, Raw)>,
    sections: Vec<RawSection>,
}

/// Intervals, and the K offsets at which a temporary may be read in them (temporaries are
/// computed on every level of the domain, so reads must stay inside it).
const INTERVALS: [(&str, i8, i8); 7] = [
    ("S 0 E 0", 0, 0),
    ("S 1 E -1", -1, 1),
    ("S 1 E 0", -1, 0),
    ("S 0 E -1", 0, 1),
    ("S 0 S 1", 0, 0),
    ("E -1 E 0", 0, 0),
    ("S 0 S 2", 0, 0),
];

fn raw_program() -> impl Strategy<Value = RawProgram> {
    let stmts = |n: std::ops::RangeInclusive<usize>| {
        proptest::collection::vec((any::<u8>(), raw_expr()), n)
    };
    let section = (
        0u8..3,
        0u8..INTERVALS.len() as u8,
        any::<bool>(),
        stmts(1..=3),
    )
        .prop_map(|(order, interval, new_comp, stmts)| RawSection {
            order,
            interval,
            new_comp,
            stmts,
        });
    (
        1usize..=3,
        any::<u8>(),
        0u8..3,
        0usize..=2,
        stmts(0..=3),
        stmts(0..=2),
        proptest::collection::vec(section, 1..=3),
    )
        .prop_map(
            |(n_fields, out, lowdim, n_scalars, temps, first, sections)| RawProgram {
                n_fields,
                n_out: 1 + (out as usize) % n_fields.min(2),
                lowdim,
                n_scalars,
                temps,
                first,
                sections,
            },
        )
}

/// What a statement may read.
struct Scope {
    n_in: usize,
    n_out: usize,
    /// Index of the read-only low-dimensional field and whether it is IJ (else K).
    lowdim: Option<(usize, bool)>,
    n_scalars: usize,
    /// Temporaries written so far (readable at any horizontal offset).
    temps: usize,
    /// K offsets temporaries may be read at.
    temp_k: (i8, i8),
    /// The statement writes a temporary: it reads no written field (a temporary may be needed
    /// beyond the domain, where written fields must not be read).
    temp_stmt: bool,
    /// The target (field index, or temporary index when `temp_stmt`) and whether it may be read
    /// at its own point (a temporary only once written).
    target: (usize, bool),
    /// Per output field: whether it may be read at a K offset here (not in a PARALLEL
    /// computation that writes it).
    out_k: Vec<bool>,
}

impl Scope {
    fn input(&self, idx: u8, off: [i8; 3]) -> String {
        if self.n_in == 0 {
            return self.constant(idx);
        }
        // Inputs are read anywhere: horizontal offsets up to 2, K offsets up to 1.
        format!(
            "f {} 0 {} {} {}",
            idx as usize % self.n_in,
            off[0],
            off[1],
            off[2].clamp(-1, 1)
        )
    }

    fn constant(&self, idx: u8) -> String {
        format!("c {}", CONSTS[idx as usize % CONSTS.len()])
    }

    fn output(&self, f: usize, k: i8) -> String {
        let k = if self.out_k[f] { k.clamp(-1, 1) } else { 0 };
        format!("f {} 0 0 0 {k}", self.n_in + f)
    }

    fn leaf(&self, kind: u8, idx: u8, off: [i8; 3]) -> String {
        match kind % 12 {
            0..=2 => self.input(idx, off),
            3 | 4 if self.temp_stmt => self.input(idx, off),
            // Any written field, at horizontal offset zero.
            3 => self.output(idx as usize % self.n_out, off[2]),
            // The statement's own target.
            4 => self.output(self.target.0, off[2]),
            5 | 6 if self.temp_stmt && self.target.1 && kind % 12 == 6 => {
                format!("t {} 0 0 0", self.target.0)
            }
            5 | 6 if self.temps > 0 => format!(
                "t {} {} {} {}",
                idx as usize % self.temps,
                off[0].clamp(-1, 1),
                off[1].clamp(-1, 1),
                off[2].clamp(self.temp_k.0, self.temp_k.1)
            ),
            7 if self.n_scalars > 0 => format!("s {}", idx as usize % self.n_scalars),
            8 | 9 => self.constant(idx),
            10 | 11 => match self.lowdim {
                Some((f, true)) => format!("f {f} 0 {} {} 0", off[0], off[1]),
                Some((f, false)) => format!("f {f} 0 0 0 {}", off[2].clamp(-1, 1)),
                None => self.input(idx, off),
            },
            _ => self.input(idx, off),
        }
    }

    /// Renders `e` type-correctly (GT4Py's rules: `not`, `and`, `or` and conditions take
    /// booleans, arithmetic at most one); returns whether the value is a boolean.
    fn expr(&self, e: &Raw, out: &mut String) -> bool {
        match e {
            Raw::Leaf(k, i, o) => {
                out.push_str(&self.leaf(*k, *i, *o));
                false
            }
            Raw::Un(o, a) => {
                let name = UN[*o as usize % UN.len()];
                out.push_str(name);
                out.push(' ');
                if name == "not" {
                    self.boolean(a, out);
                    true
                } else {
                    if *o >= 128 {
                        if let Some((_, pre)) = DOMAIN.iter().find(|d| d.0 == name) {
                            out.push_str(pre);
                        }
                    }
                    self.number(a, out);
                    matches!(name, "isnan" | "isinf" | "isfinite")
                }
            }
            Raw::Bin(o, a, b) => {
                let op = BIN[*o as usize % BIN.len()];
                out.push_str(op);
                out.push(' ');
                match op {
                    "and" | "or" => {
                        self.boolean(a, out);
                        out.push(' ');
                        self.boolean(b, out);
                        true
                    }
                    "lt" | "le" | "gt" | "ge" | "eq" | "ne" => {
                        self.expr(a, out);
                        out.push(' ');
                        self.expr(b, out);
                        true
                    }
                    _ => {
                        self.number(a, out);
                        out.push(' ');
                        self.number(b, out);
                        false
                    }
                }
            }
            Raw::Sel(c, a, b) => {
                out.push_str("sel ");
                self.boolean(c, out);
                out.push(' ');
                self.number(a, out);
                out.push(' ');
                self.number(b, out);
                false
            }
        }
    }

    /// `e` as a boolean (`ne e 0` where it is a number).
    fn boolean(&self, e: &Raw, out: &mut String) {
        let mut s = String::new();
        if self.expr(e, &mut s) {
            out.push_str(&s);
        } else {
            out.push_str("ne ");
            out.push_str(&s);
            out.push_str(" c 0");
        }
    }

    /// `e` as a number (`add c 0 e` where it is a boolean).
    fn number(&self, e: &Raw, out: &mut String) {
        let mut s = String::new();
        if self.expr(e, &mut s) {
            out.push_str("add c 0 ");
        }
        out.push_str(&s);
    }
}

/// The IR text of a raw program, for `dtype` (`float64` or `float32`).
fn render(r: &RawProgram, dtype: &str) -> String {
    let n_in = r.n_fields - r.n_out;
    let mut s = format!("stencil rnd {dtype}\n");
    for f in 0..r.n_fields {
        s += &format!("field {} IJK\n", if f < n_in { "in" } else { "out" });
    }
    let lowdim = match r.lowdim {
        1 => Some((r.n_fields, true)),
        2 => Some((r.n_fields, false)),
        _ => None,
    };
    match lowdim {
        Some((_, true)) => s += "field w IJ\n",
        Some((_, false)) => s += "field z K\n",
        None => {}
    }
    for i in 0..r.n_scalars {
        s += &format!("scalar s{i}\n");
    }
    // Temporaries: a statement writes a new one, or (one time in three) rewrites one already
    // written, which it may then read at its own point.
    let mut temp_stmts = Vec::new();
    let mut n_temps = 0;
    for (t, e) in &r.temps {
        if t % 3 == 2 && n_temps > 0 {
            temp_stmts.push((*t as usize % n_temps, true, e));
        } else if n_temps < 2 {
            temp_stmts.push((n_temps, false, e));
            n_temps += 1;
        }
    }
    for i in 0..n_temps {
        s += &format!("temp t{i}\n");
    }
    // Computations: the first section alone, then the raw sections, grouped.
    let mut secs: Vec<(usize, u8, u8)> = Vec::new(); // (computation, order, interval)
    let mut comp = 0;
    for (i, sec) in r.sections.iter().enumerate() {
        if i > 0 && !sec.new_comp {
            let prev = secs[i - 1];
            secs.push((prev.0, prev.1, sec.interval));
        } else {
            comp += 1;
            secs.push((comp, sec.order, sec.interval));
        }
    }
    let n_comps = comp + 1;
    // Which output fields each computation writes.
    let mut writes = vec![vec![false; r.n_out]; n_comps];
    for (_, t) in r.first.iter().map(|(t, e)| (e, t)) {
        writes[0][*t as usize % r.n_out] = true;
    }
    for (sec, &(c, _, _)) in r.sections.iter().zip(&secs) {
        for (t, _) in &sec.stmts {
            writes[c][*t as usize % r.n_out] = true;
        }
    }
    let mut line = 1;
    let mut stmt = |s: &mut String, scope: &Scope, target: &str, e: &Raw| {
        let mut text = String::new();
        scope.expr(e, &mut text);
        *s += &format!("stmt {line} {target} {text}\n");
        line += 1;
    };
    let base = |temps: usize, temp_k: (i8, i8), parallel: bool, comp: usize| Scope {
        n_in,
        n_out: r.n_out,
        lowdim,
        n_scalars: r.n_scalars,
        temps,
        temp_k,
        temp_stmt: false,
        target: (0, false),
        out_k: (0..r.n_out)
            .map(|f| !parallel || !writes[comp][f])
            .collect(),
    };
    if !temp_stmts.is_empty() || !r.first.is_empty() {
        s += "comp PARALLEL\ninterval S 0 E 0\n";
        let mut written = 0;
        for &(t, rewrite, e) in &temp_stmts {
            // Earlier temporaries only: a rewrite reads itself only at its own point.
            let mut scope = base(if rewrite { t } else { written }, (0, 0), true, 0);
            scope.temp_stmt = true;
            scope.target = (t, rewrite);
            stmt(&mut s, &scope, &format!("t {t}"), e);
            written = written.max(t + 1);
        }
        for (t, e) in &r.first {
            let mut scope = base(n_temps, (0, 0), true, 0);
            scope.target = (*t as usize % r.n_out, true);
            stmt(&mut s, &scope, &format!("f {} 0", n_in + scope.target.0), e);
        }
    }
    let mut current = 0;
    for (sec, &(c, order, interval)) in r.sections.iter().zip(&secs) {
        let order = order % 3;
        if c != current {
            s += ["comp PARALLEL\n", "comp FORWARD\n", "comp BACKWARD\n"][order as usize];
            current = c;
        }
        let (iv, klo, khi) = INTERVALS[interval as usize % INTERVALS.len()];
        s += &format!("interval {iv}\n");
        for (t, e) in &sec.stmts {
            let mut scope = base(n_temps, (klo, khi), order == 0, c);
            scope.target = (*t as usize % r.n_out, true);
            stmt(&mut s, &scope, &format!("f {} 0", n_in + scope.target.0), e);
        }
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Fields, runs and the reference.

/// The points of the written fields (their whole arrays, halos included: nothing outside the
/// domain may change) where `a` and `b` differ, as (field, index, a, b).
fn diff<T: Elem>(a: &[Arr<T>], b: &[Arr<T>], written: &[bool]) -> Vec<(usize, usize, T, T)> {
    let mut out = Vec::new();
    for (f, (x, y)) in a.iter().zip(b).enumerate() {
        if !written[f] {
            assert!(x.data.iter().zip(&y.data).all(|(u, v)| u.same(*v)));
            continue;
        }
        for (i, (u, v)) in x.data.iter().zip(&y.data).enumerate() {
            if !u.same(*v) {
                out.push((f, i, *u, *v));
            }
        }
    }
    out
}

/// One program on one domain, layout and element type: the reference, then the engine with
/// and without `jit` on each thread count. Err describes the first disagreement.
fn check_one<T: Elem>(
    plan: &Plan,
    jit: Option<&Jit>,
    tier2: Option<&Jit>,
    domain: [usize; 3],
    fortran: bool,
    thread_counts: &[usize],
    seed: u64,
) -> Result<(), String> {
    let mut rng = Rng(seed);
    let extra = (seed % 2) as usize;
    let inputs = arrays::<T>(plan, domain, fortran, extra, &mut rng);
    let scalars: Vec<crate::gtscript::Value> = plan
        .program
        .scalars
        .iter()
        .map(|_| crate::gtscript::Value::F(rng.value()))
        .collect();
    let tscal: Vec<T> = scalars.iter().map(|&v| T::from_f64(v.as_f64())).collect();
    let enough_k = domain[2] >= plan.min_k;
    let mut want = inputs.clone();
    if enough_k {
        reference(&plan.program, &mut want, &tscal, domain)?;
    }
    let layout = if fortran { "I-fastest" } else { "C" };
    // The same plan run in blocks only, where it would otherwise sweep along some axis.
    let blocks = plan.sweeps.iter().any(Option::is_some).then(|| Plan {
        sweeps: [None, None, None],
        ..plan.clone()
    });
    let schedules = std::iter::once((plan, "sweeps where planned"))
        .chain(blocks.as_ref().map(|b| (b, "blocks")));
    for (plan, schedule) in schedules {
        for &threads in thread_counts {
            let tiers = [("interpreter", None), ("jit", jit), ("tier two", tier2)];
            for (name, code) in tiers
                .into_iter()
                .filter(|t| t.0 != "tier two" || t.1.is_some())
            {
                let mut got = inputs.clone();
                let mems: Vec<FieldMem> = got
                    .iter_mut()
                    .zip(&plan.field_written)
                    .map(|(a, &w)| a.mem(w))
                    .collect();
                // SAFETY: every array is alive for the call, its own allocation, aligned for `T`,
                // and its shape and strides describe its length; written fields overlap nothing.
                let r = unsafe {
                    run::<T>(
                        plan,
                        code,
                        &mems,
                        &scalars,
                        domain,
                        Threads::new(threads).expect("thread count"),
                    )
                };
                let what = format!(
                    "{name}, {schedule}, {} threads, {layout}, {}, domain {domain:?}, seed {seed}",
                    threads,
                    std::any::type_name::<T>()
                );
                match r {
                    Err(e) if !enough_k => {
                        if !e.to_string().contains("a K domain of at least") {
                            return Err(format!("{what}: unexpected error {e}"));
                        }
                        continue;
                    }
                    Err(e) => {
                        // A K read beyond a field is the one error the planner's static extents
                        // allow (an interval counted from the start read above its end); every
                        // run must report it.
                        if e.to_string().contains("would be read at level") {
                            continue;
                        }
                        return Err(format!("{what}: error {e}"));
                    }
                    Ok(()) if !enough_k => return Err(format!("{what}: ran on too few levels")),
                    Ok(()) => {}
                }
                let d = diff(&want, &got, &plan.field_written);
                if !d.is_empty() {
                    return Err(format!(
                    "{what}: {} points differ from the reference, first (field, index, want, got) {:?}",
                    d.len(),
                    &d[..d.len().min(4)]
                ));
                }
            }
        }
    }
    Ok(())
}

const SMALL: [[usize; 3]; 3] = [[1, 1, 1], [7, 5, 3], [33, 17, 9]];
/// At least `PARALLEL_MIN_POINTS`, so that 3 threads really run in parallel.
const LARGE: [usize; 3] = [41, 29, 29];

/// Checks a raw program on every combination. Err: the IR text and the first disagreement.
fn check_program(r: &RawProgram, large: bool, seed: u64) -> Result<bool, String> {
    for dtype in ["float64", "float32"] {
        let text = render(r, dtype);
        let Ok(plan) = compile(&text) else {
            return Ok(false);
        };
        let jit = Jit::compile(&plan).map_err(|e| format!("{text}\njit: {e}"))?;
        // The same code with tier two's C in place of every row function.
        let tier2 =
            crate::gtscript::cgen::tier_two_of(&plan).map_err(|e| format!("{text}\n{e}"))?;
        let domains: Vec<([usize; 3], &[usize])> = SMALL
            .iter()
            .map(|&d| (d, &[1][..]))
            .chain(large.then_some((LARGE, &[1, 3][..])))
            .collect();
        for (domain, threads) in domains {
            for fortran in [false, true] {
                let res = if dtype == "float64" {
                    check_one::<f64>(
                        &plan,
                        jit.as_ref(),
                        tier2.as_ref(),
                        domain,
                        fortran,
                        threads,
                        seed,
                    )
                } else {
                    check_one::<f32>(
                        &plan,
                        jit.as_ref(),
                        tier2.as_ref(),
                        domain,
                        fortran,
                        threads,
                        seed,
                    )
                };
                res.map_err(|e| format!("{text}\n{e}"))?;
            }
        }
    }
    Ok(true)
}

/// Cases of the property: `PROPTEST_CASES` if set (for longer runs), else a number that keeps
/// the test to a few seconds.
fn cases() -> u32 {
    let default = if cfg!(debug_assertions) { 48 } else { 256 };
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(Config {
        cases: cases(),
        max_shrink_iters: 2000,
        failure_persistence: None,
        ..Config::default()
    })]

    /// Random programs: the JIT, the interpreter and the reference agree everywhere.
    #[test]
    fn jit_interpreter_and_reference_agree(
        r in raw_program(),
        horizontal in any::<bool>(),
        large in proptest::bool::weighted(0.1),
        seed in any::<u64>(),
    ) {
        // Half the programs are their first section alone (all PARALLEL, temporaries read at
        // horizontal offsets only): the stencils that run as sweeps.
        let mut r = r;
        if horizontal {
            r.sections.clear();
        }
        let accepted = check_program(&r, large, seed).map_err(TestCaseError::fail)?;
        prop_assume!(accepted);
    }
}

/// The generator makes valid programs: the planner accepts them, and the JIT compiles all of
/// their statements (so the property above compares the JIT, not the interpreter with itself).
#[test]
fn generated_programs_are_accepted_and_compiled() {
    let mut runner = TestRunner::deterministic();
    let strategy = raw_program();
    let (mut accepted, mut stmts, mut compiled, mut sweeping) = (0, 0, 0, 0);
    let n = 400;
    let mut rejected = Vec::new();
    for i in 0..n {
        let mut r = strategy.new_tree(&mut runner).expect("tree").current();
        if i % 2 == 0 {
            r.sections.clear();
        }
        let text = render(&r, "float64");
        match compile(&text) {
            Ok(plan) => {
                accepted += 1;
                stmts += plan
                    .sections
                    .iter()
                    .flat_map(|s| &s.stmts)
                    .filter(|s| !s.tape.is_empty())
                    .count();
                sweeping += usize::from(plan.sweeps.iter().any(Option::is_some));
                if let Some(jit) = Jit::compile(&plan).expect("jit") {
                    // Statements with a row function, compiled now or when a call first
                    // needs it (`schedule_tests::check_compiled` checks they are).
                    compiled += jit
                        .schedule()
                        .sections
                        .iter()
                        .flat_map(|s| &s.row)
                        .filter(|&&r| r)
                        .count();
                }
            }
            Err(e) => rejected.push(format!("{text}{e}")),
        }
    }
    assert!(
        rejected.is_empty(),
        "{} of {n} rejected, first:\n{}",
        rejected.len(),
        rejected[0]
    );
    assert_eq!(accepted, n);
    // ... and many of them run as sweeps (so the property compares sweeps with blocks).
    assert!(
        sweeping * 4 >= n,
        "only {sweeping} of {n} programs run as sweeps"
    );
    if std::env::var("GRIDBUF_GTSCRIPT_JIT").is_ok_and(|v| v == "0") {
        return;
    }
    // Every statement: no operation is left to the interpreter.
    assert_eq!(
        compiled, stmts,
        "only {compiled} of {stmts} statements compiled"
    );
}

/// Large outputs nothing reads take streaming stores; a statement with one operand then runs
/// its compiled code into scratch first (`run_stmt_code`'s `via_scratch`), a path the small
/// domains of the property never take.
#[test]
fn streamed_outputs_agree() {
    fn one<T: Elem>(domain: [usize; 3], fortran: bool) {
        let dtype = if std::mem::size_of::<T>() == 8 {
            "float64"
        } else {
            "float32"
        };
        assert!(
            domain.iter().product::<usize>() * std::mem::size_of::<T>()
                >= crate::kernels::STREAM_MIN_BYTES
        );
        for body in [
            // One operand: compiled code into scratch, then streamed.
            "stmt 1 f 1 0 sub floor mul abs f 0 0 0 0 0 c 2.5 sel isnan f 0 0 0 0 0 c 7 c -1",
            // Two operands: compiled code straight to the output.
            "stmt 1 f 1 0 min f 0 0 0 0 0 neg f 0 0 0 0 1",
        ] {
            let text = format!(
                "stencil big {dtype}\nfield a IJK\nfield out IJK\ncomp PARALLEL\ninterval S 0 E -1\n{body}\n"
            );
            let plan = compile(&text).expect("plan");
            let jit = Jit::compile(&plan).expect("jit");
            check_one::<T>(&plan, jit.as_ref(), None, domain, fortran, &[3], 7).expect(&text);
        }
    }
    one::<f64>([128, 128, 129], false);
    one::<f32>([256, 128, 129], true);
}

/// Regression test: a stencil whose sections are all PARALLEL and that needs no block buffers
/// runs in slabs of the outermost axis (`tile.rs`, `light`), which is K when rows run along I;
/// each slab runs every computation before the next slab starts, so a computation reading at a
/// K offset a field an earlier computation wrote would see, across a slab boundary, the value
/// from before the stencil. Such stencils now run in I/J tiles. Here `c[k]` must be
/// `a[k + 1]` everywhere (GT4Py runs each computation over the whole domain first).
#[test]
fn parallel_computations_read_each_other_across_k_slabs() {
    let plan = compile(
        "stencil s float64\nfield a IJK\nfield b IJK\nfield c IJK\n\
         comp PARALLEL\ninterval S 0 E 0\nstmt 1 f 1 0 f 0 0 0 0 0\n\
         comp PARALLEL\ninterval S 0 E -1\nstmt 2 f 2 0 f 1 0 0 0 1\n",
    )
    .expect("plan");
    let jit = Jit::compile(&plan).expect("jit");
    for fortran in [false, true] {
        check_one::<f64>(&plan, jit.as_ref(), None, [4, 3, 9], fortran, &[1], 0).expect("agree");
    }
}

/// The tridiagonal solve as the Python frontend writes it.
const TRIDIAG: &str = "stencil tridiag\nfield a float64 IJK\nfield b float64 IJK\n\
    field c float64 IJK\nfield d float64 IJK\nfield x float64 IJK\ntemp cp auto IJK\n\
    temp dp auto IJK\ntemp m auto IJK\ncomp FORWARD\ninterval S 0 S 1\n\
    stmt 19 t 0 div f 2 0 0 0 0 f 1 0 0 0 0\nstmt 20 t 1 div f 3 0 0 0 0 f 1 0 0 0 0\n\
    interval S 1 E 0\nstmt 22 t 2 sub f 1 0 0 0 0 mul f 0 0 0 0 0 t 0 0 0 -1\n\
    stmt 23 t 0 div f 2 0 0 0 0 t 2 0 0 0\n\
    stmt 24 t 1 div sub f 3 0 0 0 0 mul f 0 0 0 0 0 t 1 0 0 -1 t 2 0 0 0\n\
    comp BACKWARD\ninterval E -1 E 0\nstmt 27 f 4 0 t 1 0 0 0\ninterval S 0 E -1\n\
    stmt 29 f 4 0 sub t 1 0 0 0 mul t 0 0 0 0 f 4 0 0 0 1\n";

/// FORWARD and BACKWARD sections walk columns on layouts with unit stride along K (`column`):
/// every section of the tridiagonal solve has column code, and on such a layout (C order) its
/// results agree with the reference over domains that are no multiple of a column group or a
/// tile, on one and on three threads (the level-by-level schedule on the I-fastest layout
/// too).
#[test]
fn vertical_solver_walks_columns() {
    fn one<T: Elem>(dtype: &str) {
        let plan = compile(&TRIDIAG.replace("float64", dtype)).expect("plan");
        let jit = Jit::compile(&plan).expect("jit");
        if let Some(j) = &jit {
            assert!((0..plan.sections.len()).all(|s| j.column::<T>(&plan, s).unwrap().is_some()));
        }
        let tier2 = crate::gtscript::cgen::tier_two_of(&plan).expect("tier two");
        for domain in [[1, 1, 2], [5, 3, 7], [21, 19, 11], LARGE] {
            for fortran in [false, true] {
                check_one::<T>(
                    &plan,
                    jit.as_ref(),
                    tier2.as_ref(),
                    domain,
                    fortran,
                    &[1, 3],
                    5,
                )
                .unwrap_or_else(|e| panic!("{dtype} {domain:?}: {e}"));
            }
        }
    }
    one::<f64>("float64");
    one::<f32>("float32");
}

/// A fresh code's first call with several threads compiles what its layout runs side by side
/// (`Jit::prepare`: the solver's column functions on the K-unit layout, its row groups on the
/// I-unit one), then runs it: the results are the reference's on both layouts.
#[test]
fn a_first_call_with_threads_compiles_its_code_side_by_side() {
    for fortran in [false, true] {
        let plan = compile(TRIDIAG).expect("plan");
        let jit = Jit::compile(&plan).expect("jit");
        check_one::<f64>(&plan, jit.as_ref(), None, LARGE, fortran, &[3], 7)
            .unwrap_or_else(|e| panic!("fortran {fortran}: {e}"));
    }
}

/// A stencil's definition compiles what calls on its backend's layout compile on first need
/// (`prepare_layout`), with one thread too: on the I-unit layout the solver's row groups are
/// compiled before any call, the call that follows compiles no more of them, and it computes
/// the reference's values.
#[test]
fn a_definition_compiles_what_its_layout_runs_before_the_first_call() {
    let plan = compile(TRIDIAG).expect("plan");
    let Some(jit) = Jit::compile(&plan).expect("jit") else {
        return;
    };
    let before = jit.stmts().count();
    // GT4Py's layout map with I innermost.
    crate::gtscript::prepare_layout(&plan, &jit, [2, 1, 0], Threads::ONE);
    let prepared = jit.stmts().count();
    assert!(prepared > before, "row functions {before} -> {prepared}");
    check_one::<f64>(&plan, Some(&jit), None, LARGE, true, &[1], 7).expect("agree");
    assert_eq!(
        jit.stmts().count(),
        prepared,
        "the call compiled more row functions"
    );
}

/// A FORWARD section that computes a temporary beyond the core (read at a horizontal offset)
/// cannot walk columns: it keeps the level-by-level schedule, and agrees with the reference.
#[test]
fn sections_with_halo_keep_levels() {
    let plan = compile(
        "stencil h\nfield a float64 IJK\nfield out float64 IJK\ntemp u auto IJK\n\
         comp FORWARD\ninterval S 0 S 1\nstmt 1 f 1 0 f 0 0 0 0 0\ninterval S 1 E 0\n\
         stmt 2 t 0 mul f 0 0 0 0 0 c 2.0\nstmt 3 f 1 0 add f 1 0 0 0 -1 t 0 1 0 0\n",
    )
    .expect("plan");
    let jit = Jit::compile(&plan).expect("jit");
    if let Some(j) = &jit {
        assert!(j.column::<f64>(&plan, 0).unwrap().is_some());
        assert!(j.column::<f64>(&plan, 1).unwrap().is_none());
    }
    for fortran in [false, true] {
        check_one::<f64>(&plan, jit.as_ref(), None, [19, 11, 6], fortran, &[1], 2).expect("agree");
    }
}

/// Statements reading more than `CARRIED_OPERANDS` operands keep their row addresses on the
/// stack, and tapes longer than `LONG_TAPE` instructions run one step per iteration
/// (`jit::build`): both agree with the reference.
#[test]
fn many_operands_and_long_tapes_agree() {
    let offs: Vec<(i32, i32)> = (-3..=3)
        .flat_map(|i| (-3..=3).map(move |j| (i, j)))
        .collect();
    // 49 operands, 48 additions.
    let mut many = String::from("f 0 0 -3 -3 0");
    for &(i, j) in &offs[1..] {
        many = format!("add {many} f 0 0 {i} {j} 0");
    }
    // A balanced sum of 300 distinct products (equal ones would be computed once): a tape of
    // about 600 instructions.
    fn sum(offs: &[(i32, i32)], lo: usize, hi: usize) -> String {
        if hi - lo == 1 {
            let (i, j) = offs[lo % offs.len()];
            format!("mul f 0 0 {i} {j} 0 c {}.5", lo % 7 + 7 * (lo / offs.len()))
        } else {
            let mid = (lo + hi) / 2;
            format!("add {} {}", sum(offs, lo, mid), sum(offs, mid, hi))
        }
    }
    let long = sum(&offs, 0, 300);
    for dtype in ["float64", "float32"] {
        let text = format!(
            "stencil m {dtype}\nfield a IJK\nfield o IJK\nfield p IJK\ncomp PARALLEL\n\
             interval S 0 E 0\nstmt 1 f 1 0 {many}\nstmt 2 f 2 0 {long}\n"
        );
        let plan = compile(&text).expect("plan");
        assert!(plan.sections[0].stmts[1].tape.len() > 256);
        let jit = Jit::compile(&plan).expect("jit");
        for fortran in [false, true] {
            for domain in [[9, 7, 4], [1, 1, 1], LARGE] {
                let r = if dtype == "float64" {
                    check_one::<f64>(&plan, jit.as_ref(), None, domain, fortran, &[1, 3], 3)
                } else {
                    check_one::<f32>(&plan, jit.as_ref(), None, domain, fortran, &[1, 3], 3)
                };
                r.unwrap_or_else(|e| panic!("{dtype} {domain:?}: {e}"));
            }
        }
    }
}

/// Every operation of the table ([`crate::gtscript::ops`]) is among those the property test
/// generates, so a new entry is compared there too.
#[test]
fn every_operation_is_generated() {
    for u in crate::gtscript::ops::UNARY {
        assert!(UN.contains(&u.name), "{} is not in UN", u.name);
    }
    for b in crate::gtscript::ops::BINARY {
        assert!(BIN.contains(&b.name), "{} is not in BIN", b.name);
    }
}

/// A case the property above found (`out = a ** a if -a else <leaf 63>`, then `out = a`): tier
/// two wrote the rows of a uniform condition from the instruction that last wrote a register
/// anywhere in the tape, not before its use (registers are reused), and read an undefined one.
#[test]
fn guarded_power_under_a_negation_then_a_copy() {
    let leaf = || Box::new(Raw::Leaf(0, 0, [0, 0, 0]));
    let r = RawProgram {
        n_fields: 1,
        n_out: 1,
        lowdim: 0,
        n_scalars: 0,
        temps: vec![],
        first: vec![],
        sections: vec![RawSection {
            order: 0,
            interval: 0,
            new_comp: false,
            stmts: vec![
                (
                    0,
                    Raw::Sel(
                        Box::new(Raw::Un(0, leaf())),
                        Box::new(Raw::Bin(16, leaf(), leaf())),
                        Box::new(Raw::Leaf(63, 0, [0, 0, 0])),
                    ),
                ),
                (0, Raw::Leaf(0, 0, [0, 0, 0])),
            ],
        }],
    };
    check_program(&r, false, 0).unwrap();
}
