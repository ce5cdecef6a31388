//! Machine code for statement tapes, made with Cranelift when a stencil is compiled.
//!
//! The interpreter runs a tape one instruction at a time over a strip, so every intermediate
//! value goes to memory and back. Here each statement's tape becomes one function that walks a
//! row once: every intermediate stays in a vector register, and only the operands and the
//! result touch memory. The function takes the row's operand pointers (one per distinct
//! quantity and offset the tape reads, filled and bounds-checked by the caller), the output
//! pointer, the row length and the scalar parameters; it runs two (f64) or four (f32) points
//! per step in 128-bit vectors, then the remaining points one at a time.
//!
//! The code computes exactly what the interpreter computes: the same IEEE operations in the
//! same order, no contraction into fused multiply-adds, the same comparisons (`!=` true on
//! NaN, the ordered ones false) and the same `min`/`max` choice. Operations with no instruction
//! (`exp`, `log`, the trigonometric and hyperbolic functions, `gamma`, `erf`, `**`, `mod`, ...)
//! call the `extern "C"` functions of [`crate::gtscript::ops::math`] that the interpreter calls too, by
//! address (registered as symbols of the module), one vector lane at a time; so every tape is
//! compiled.
//!
//! This module is the registry: [`Jit::compile`] compiles what the plan's schedule
//! ([`Schedule`]) names and nothing else, and hands each function out by section and statement.
//! The row functions are built by `row` (a tape's step by `emit` for one float type, by
//! `wide` for mixed-type lanes), the column functions by `column`, the point
//! functions of loops and whole sections by `point`; what the executor hands each kind of
//! function is `abi`; one module's lifecycle, and the one place a code address becomes a
//! function pointer, is `module`.

pub(crate) mod abi;
pub(crate) mod column;
pub(crate) mod emit;
pub(crate) mod helpers;
pub(crate) mod module;
pub use abi::TierState;
pub use module::host_target;
pub(crate) mod point;
pub(crate) mod row;
pub(crate) mod wide;

use crate::error::Result;
use crate::gtscript::ir::Ty;
use crate::gtscript::plan::schedule::{Layout, LayoutSchedule, PointWalk, Schedule, SectionExec};
use crate::gtscript::plan::{Lanes, Plan};
use crate::gtscript::rt::lane::Elem;
use crate::kernels::exec::Threads;
use abi::{ColumnCode, ColumnFn, LoopCode, LoopFn, RowFn, StmtCode, SwapFn, TierTwo};
use cranelift_codegen::ir::{types, AbiParam, Type};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};
use helpers::{declare_calls, jit_error, operands_of, vk_of};
use module::{new_module, CodeMemory};
use point::PointRange;
use row::{build, CARRIED_OPERANDS};
use std::sync::{Arc, OnceLock};

/// The machine code of a stencil's statements, for the element type of its program.
pub struct Jit {
    /// Per section, per statement: its row function, or `None` where the interpreter runs it
    /// or where it is compiled on first use (`group_of`).
    stmts: Vec<Vec<Option<StmtCode>>>,
    /// Per section, per statement: the group in `groups` its row function is compiled with,
    /// when a call first needs one of them, where it is.
    group_of: Vec<Vec<Option<usize>>>,
    /// Per section: the row functions compiled on first use (see [`RowGroup`]).
    groups: Vec<Vec<RowGroup>>,
    /// Per section: the code that walks columns, where the section can (see
    /// [`column`](mod@column)), compiled on first use (on other layouts, blocks run the
    /// section by its rows).
    columns: Vec<Option<LazyColumn>>,
    /// Per section, per statement: the code of the `while` loop whose condition it is, where
    /// the loop can run point by point (see [`point`]).
    loops: Vec<Vec<Option<LoopCode>>>,
    /// Per section, per [`PointWalk`]: the whole section's point function, where it has one (see
    /// [`schedule::section`](crate::gtscript::plan::schedule::section); along columns, that of the run of sections it starts, see
    /// [`schedule::group`](crate::gtscript::plan::schedule::group)), compiled on first use.
    walks: Vec<[Option<LazyWalk>; 2]>,
    /// What this code was compiled for: the schedule of its plan with code generation on.
    schedule: Schedule,
    /// Per layout (I, J, K): the schedule's executors, made when a call first needs them.
    layouts: [OnceLock<LayoutSchedule>; 3],
    /// Per layout: set once a first call has compiled what calls on it need (see
    /// [`Jit::prepare`]).
    prepared: [OnceLock<()>; 3],
    /// The element type the code was made for.
    lanes: Lanes,
    /// Tier two of this code (see [`crate::gtscript::cgen`]): declared after the functions
    /// that may point into its code, so it is dropped after them.
    tier2: Arc<TierTwo>,
    /// The code memories of the functions compiled at definition, one per chunk (see
    /// [`compile_chunks`]).
    _memories: Vec<CodeMemory>,
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.stmts.iter().flatten().filter(|s| s.is_some()).count();
        write!(f, "Jit({n} compiled statements)")
    }
}

impl Jit {
    /// Compiles, for `plan`'s element type, what `plan`'s schedule with code generation on
    /// asks for ([`Schedule::new`]): row functions, loop functions and column functions now,
    /// the row functions of point runs' statements and whole sections' point functions when
    /// a call first needs one (`Jit::stmt`, `Jit::point_section`).
    /// `Ok(None)` when this machine has no Cranelift backend or `GRIDBUF_GTSCRIPT_JIT=0` is
    /// set: then calls run with code generation off.
    pub fn compile(plan: &Plan) -> Result<Option<Jit>> {
        if !crate::runtime::env::flag("GRIDBUF_GTSCRIPT_JIT", true) {
            return Ok(None);
        }
        if cranelift_native::builder().is_err() {
            return Ok(None);
        }
        let schedule = Schedule::new(plan, true);
        let (group_of, groups) = row_groups(&schedule);
        let eager: Vec<(usize, usize)> = (0..plan.sections.len())
            .flat_map(|s| {
                let (schedule, group_of) = (&schedule, &group_of);
                (0..plan.sections[s].stmts.len())
                    .filter(move |&t| schedule.sections[s].row[t] && group_of[s][t].is_none())
                    .map(move |t| (s, t))
            })
            .collect();
        // `while` loops and mixed-type straight runs that run point by point, as one function
        // each: (section, first statement, exit).
        let point_loops: Vec<(usize, usize, usize)> = schedule
            .sections
            .iter()
            .enumerate()
            .flat_map(|(s, sec)| {
                let exits = sec.point_loop.iter().enumerate();
                exits.filter_map(move |(t, exit)| exit.map(|exit| (s, t, exit)))
            })
            .collect();
        let threads = crate::runtime::threads::configured();
        let chunks = compile_chunks(
            plan,
            chunk_tasks(plan, eager, point_loops, threads),
            threads,
        )?;
        let mut stmts: Vec<Vec<Option<StmtCode>>> = plan
            .sections
            .iter()
            .map(|sec| sec.stmts.iter().map(|_| None).collect())
            .collect();
        let mut loops: Vec<Vec<Option<LoopCode>>> = plan
            .sections
            .iter()
            .map(|sec| sec.stmts.iter().map(|_| None).collect())
            .collect();
        let mut memories = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            for (s, t, code) in chunk.rows {
                stmts[s][t] = Some(code);
            }
            for (s, t, code) in chunk.loops {
                loops[s][t] = Some(code);
            }
            memories.push(chunk.memory);
        }
        // FORWARD and BACKWARD sections also as one function that walks whole columns (used
        // on layouts with unit stride along K), compiled when a call first needs one.
        let columns = schedule
            .sections
            .iter()
            .map(|sec| sec.column.then(OnceLock::new))
            .collect();
        let walks = schedule
            .sections
            .iter()
            .enumerate()
            .map(|(s, sec)| {
                let run = sec.column_run == Some(s);
                [run.then(OnceLock::new), sec.whole.then(OnceLock::new)]
            })
            .collect();
        Ok(Some(Jit {
            stmts,
            group_of,
            groups,
            columns,
            loops,
            walks,
            schedule,
            layouts: [OnceLock::new(), OnceLock::new(), OnceLock::new()],
            prepared: [OnceLock::new(), OnceLock::new(), OnceLock::new()],
            lanes: plan.lanes,
            tier2: Arc::default(),
            _memories: memories,
        }))
    }

    /// The row function of statement `stmt` of section `sec`, if it has one for `T`: that of a
    /// statement of a point run compiled from `plan` (the plan this code was made for), with
    /// the rest of its run's, when first asked for.
    #[inline]
    pub(crate) fn stmt<T: Elem>(
        &self,
        plan: &Plan,
        sec: usize,
        stmt: usize,
    ) -> Result<Option<&StmtCode>> {
        if self.lanes != T::LANES {
            return Ok(None);
        }
        match self
            .group_of
            .get(sec)
            .and_then(|r| r.get(stmt))
            .copied()
            .flatten()
        {
            Some(g) => self.group_row(plan, sec, g, stmt),
            None => Ok(self.stmt_code(sec, stmt)),
        }
    }

    /// The row function of statement `stmt` of section `sec`, compiled with the rest of its
    /// group `g` when first asked for.
    #[cold]
    fn group_row(
        &self,
        plan: &Plan,
        sec: usize,
        g: usize,
        stmt: usize,
    ) -> Result<Option<&StmtCode>> {
        let group = &self.groups[sec][g];
        let rows = group.cell.get_or_init(|| {
            let stmts = group.stmts.iter().map(|&t| (sec, t));
            compile_rows(plan, stmts, group.stmts[0]).map_err(|e| e.to_string())
        });
        match rows {
            Ok(r) => Ok(r.stmt(stmt)),
            Err(e) => Err(jit_error(e)),
        }
    }

    /// Compiles the row functions that wait for a call's first need of them and that tier two
    /// writes C for (see [`RowGroup::run`]), for tier two's module (see
    /// [`crate::gtscript::cgen`]): those that calls on `layout` run (all, for `None`); `plan`
    /// is the plan this code was made for.
    pub(crate) fn compile_rows_for_tier_two(
        &self,
        plan: &Plan,
        layout: Option<Layout>,
    ) -> Result<()> {
        for (s, g) in self.section_row_groups(plan, layout) {
            self.group_row(plan, s, g, self.groups[s][g].stmts[0])?;
        }
        Ok(())
    }

    /// The row groups (section, group) of whole sections, not of point runs (see
    /// [`RowGroup::run`]), that calls on `layout` run (those of every layout, for `None`): the
    /// sections that run in blocks there.
    fn section_row_groups(
        &self,
        plan: &Plan,
        layout: Option<Layout>,
    ) -> impl Iterator<Item = (usize, usize)> + '_ {
        let runs: Vec<bool> = (0..self.groups.len())
            .map(|s| {
                layout.is_none_or(|l| {
                    matches!(
                        self.layout_schedule(plan, l).sections[s],
                        SectionExec::Blocks { .. }
                    )
                })
            })
            .collect();
        self.groups.iter().enumerate().flat_map(move |(s, groups)| {
            let run = runs[s];
            groups
                .iter()
                .enumerate()
                .filter(move |(_, group)| run && group.run.is_none())
                .map(move |(g, _)| (s, g))
        })
    }

    /// The code of the `while` loop whose condition is statement `stmt` of section `sec`, if
    /// it runs point by point and was compiled for `T`.
    #[inline]
    pub(crate) fn point_loop<T: Elem>(&self, sec: usize, stmt: usize) -> Option<&LoopCode> {
        if self.lanes != T::LANES {
            return None;
        }
        self.loops.get(sec)?.get(stmt)?.as_ref()
    }

    /// Tier two's point function of the straight run of float code that starts at statement
    /// `stmt` of section `sec`, once tier two is in place and if it was compiled for `T` (see
    /// [`crate::gtscript::plan::schedule::SectionSchedule::fused`]).
    #[inline]
    pub(crate) fn fused<T: Elem>(&self, sec: usize, stmt: usize) -> Option<&LoopCode> {
        if self.lanes != T::LANES {
            return None;
        }
        self.tier2.fused.get()?.get(sec)?.get(stmt)?.as_ref()
    }

    /// Tier two's walk of the levels of section `sec` (see
    /// [`crate::gtscript::plan::schedule::SectionSchedule::levels`]), once it is in place and
    /// where it is for `T`.
    pub(crate) fn levels_walk<T: Elem>(&self, sec: usize) -> Option<&LoopCode> {
        if self.lanes != T::LANES {
            return None;
        }
        self.tier2.levels.get()?.get(sec)?.as_ref()
    }

    /// The point function of the whole section `sec` for `walk`, if it has one for `T` (see
    /// [`schedule::section`](crate::gtscript::plan::schedule::section); along columns, that of the run of sections `sec` starts, see
    /// [`schedule::group`](crate::gtscript::plan::schedule::group)), compiled from `plan` (the plan this code was made for) when it
    /// is first asked for.
    pub(crate) fn point_section<T: Elem>(
        &self,
        plan: &Plan,
        sec: usize,
        walk: PointWalk,
    ) -> Result<Option<&LoopCode>> {
        if self.lanes != T::LANES {
            return Ok(None);
        }
        let Some(cell) = self.walks.get(sec).and_then(|w| w[walk as usize].as_ref()) else {
            return Ok(None);
        };
        let walked = cell.get_or_init(|| {
            let run = match walk {
                PointWalk::Columns => self.schedule.column_run_len(sec),
                PointWalk::Levels => 1,
            };
            compile_walk(plan, sec..sec + run, walk).map_err(|e| e.to_string())
        });
        match walked {
            Ok(w) => {
                self.tier2
                    .adopt((sec, walk as usize), &w.code.f, &w.adopted);
                Ok(Some(&w.code))
            }
            Err(e) => Err(jit_error(e)),
        }
    }

    /// The row functions compiled so far: (section, statement, code).
    pub(crate) fn stmts(&self) -> impl Iterator<Item = (usize, usize, &StmtCode)> {
        (0..self.stmts.len()).flat_map(move |s| {
            (0..self.stmts[s].len()).filter_map(move |t| Some((s, t, self.stmt_code(s, t)?)))
        })
    }

    /// The row function of statement `stmt` of section `sec`, whatever its element type, where
    /// it has been compiled (see `Jit::stmt`).
    pub(crate) fn stmt_code(&self, sec: usize, stmt: usize) -> Option<&StmtCode> {
        match *self.group_of.get(sec)?.get(stmt)? {
            Some(g) => self.groups[sec][g].cell.get()?.as_ref().ok()?.stmt(stmt),
            None => self.stmts.get(sec)?.get(stmt)?.as_ref(),
        }
    }

    /// The point function of the `while` loop whose condition is statement `stmt` of section
    /// `sec`, whatever its element type.
    pub(crate) fn point_loop_code(&self, sec: usize, stmt: usize) -> Option<&LoopCode> {
        self.loops.get(sec)?.get(stmt)?.as_ref()
    }

    /// The `while` loops that run point by point: (section, condition statement, code).
    pub(crate) fn loop_codes(&self) -> impl Iterator<Item = (usize, usize, &LoopCode)> {
        self.loops.iter().enumerate().flat_map(|(s, sec)| {
            sec.iter()
                .enumerate()
                .filter_map(move |(t, c)| c.as_ref().map(|c| (s, t, c)))
        })
    }

    /// The whole sections' walks this code may compile: (first section, walk, the sections
    /// it runs).
    pub(crate) fn walk_keys(
        &self,
    ) -> impl Iterator<Item = (usize, PointWalk, std::ops::Range<usize>)> + '_ {
        self.walks.iter().enumerate().flat_map(move |(s, w)| {
            [PointWalk::Columns, PointWalk::Levels]
                .into_iter()
                .filter(move |&walk| w[walk as usize].is_some())
                .map(move |walk| {
                    let run = match walk {
                        PointWalk::Columns => self.schedule.column_run_len(s),
                        PointWalk::Levels => 1,
                    };
                    (s, walk, s..s + run)
                })
        })
    }

    /// This code's tier two (see [`crate::gtscript::cgen`]).
    pub(crate) fn tier_two(&self) -> &Arc<TierTwo> {
        &self.tier2
    }

    /// Asks for tier two at this code's first call (see [`crate::gtscript::cgen::start`]),
    /// with vector math where `vector_math` says.
    pub fn want_tier_two(&self, vector_math: bool) {
        use std::sync::atomic::Ordering;
        self.tier2.vector_math.store(vector_math, Ordering::Relaxed);
        self.tier2.wanted.store(true, Ordering::Release);
    }

    /// Where this code's tier two stands (see [`crate::gtscript::cgen`]).
    pub fn tier_two_state(&self) -> TierState {
        self.tier2.state()
    }

    /// Waits up to `timeout` while this code's tier two is being compiled; returns where it
    /// stands.
    pub fn wait_tier_two(&self, timeout: std::time::Duration) -> TierState {
        self.tier2.wait(timeout)
    }

    /// The schedule this code was compiled for (its plan's, code generation on).
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The element type this code computes in.
    pub fn lanes(&self) -> Lanes {
        self.lanes
    }

    /// The schedule's executors on `layout` ([`Schedule::for_layout`]; `plan` is the plan
    /// this code was made for), made when first asked for.
    pub fn layout_schedule(&self, plan: &Plan, layout: Layout) -> &LayoutSchedule {
        self.layouts[layout.axis()].get_or_init(|| self.schedule.for_layout(plan, layout))
    }

    /// At the first call on `layout` with more than one thread: compiles, spread over
    /// `threads`, the code that calls on it run and that is compiled on first need (each
    /// section's column function, row group or walk), which the call would otherwise compile
    /// one after another as it reaches each section (pace's `fv_subgridz.m_loop` on an
    /// I-first layout: 412 statements' row functions, 98 ms before its first result). With
    /// one thread nothing is gained: they are compiled as reached. `plan` is the plan this
    /// code was made for.
    pub(crate) fn prepare<T: Elem>(&self, plan: &Plan, layout: Layout, threads: Threads) {
        if threads.get() >= 2 {
            self.compile_for_layout::<T>(plan, layout, threads);
        }
    }

    /// Compiles now, spread over `threads` (one after another with one), the code that calls
    /// on `layout` run and that is otherwise compiled when first needed (see [`Jit::prepare`]),
    /// once per layout: what a stencil's definition does for the layout its backend allocates
    /// (PyFV3's dynamical core compiled it during its first step, 0.17 s of each rank's CPU
    /// time there). A compilation that fails keeps its error where the section asks for its
    /// code, as before.
    pub(crate) fn compile_for_layout<T: Elem>(
        &self,
        plan: &Plan,
        layout: Layout,
        threads: Threads,
    ) {
        if self.lanes != T::LANES || self.prepared[layout.axis()].set(()).is_err() {
            return;
        }
        enum Lazy {
            Rows(usize, usize),
            Column(usize),
            Walk(usize, PointWalk),
        }
        let mut tasks: Vec<Lazy> = self
            .section_row_groups(plan, Some(layout))
            .map(|(s, g)| Lazy::Rows(s, g))
            .collect();
        for (s, exec) in self
            .layout_schedule(plan, layout)
            .sections
            .iter()
            .enumerate()
        {
            match *exec {
                SectionExec::Columns => tasks.push(Lazy::Column(s)),
                SectionExec::Points { walk, .. } => tasks.push(Lazy::Walk(s, walk)),
                SectionExec::Blocks { .. } | SectionExec::InRun { .. } => {}
            }
        }
        crate::runtime::threads::run_each(threads, tasks, |task| {
            // Errors stay in each code's cell for the call that needs it to report.
            let _ = match task {
                Lazy::Rows(s, g) => self
                    .group_row(plan, s, g, self.groups[s][g].stmts[0])
                    .map(drop),
                Lazy::Column(s) => self.column::<T>(plan, s).map(drop),
                Lazy::Walk(s, walk) => self.point_section::<T>(plan, s, walk).map(drop),
            };
        });
    }

    /// The column code of section `sec`, if it has some for `T`, compiled from `plan` (the
    /// plan this code was made for) when first asked for.
    pub(crate) fn column<T: Elem>(&self, plan: &Plan, sec: usize) -> Result<Option<&ColumnCode>> {
        if self.lanes != T::LANES {
            return Ok(None);
        }
        let Some(cell) = self.columns.get(sec).and_then(Option::as_ref) else {
            return Ok(None);
        };
        match cell.get_or_init(|| compile_column(plan, sec).map_err(|e| e.to_string())) {
            Ok(c) => Ok(Some(&c.code)),
            Err(e) => Err(jit_error(e)),
        }
    }
}

/// Row functions that many calls never run, compiled together, in a module of their own,
/// when a call first needs one of them (see [`Jit::stmt`]).
struct RowGroup {
    /// Their statements, of one section, in order.
    stmts: Vec<usize>,
    /// The first statement of the point run they are, where they are one (run only where a
    /// block cuts the run); else they are a section's rows where it has a column function
    /// (layouts with unit stride along K run that instead, others the rows), and tier two
    /// writes C for them.
    run: Option<usize>,
    /// The code, once compiled (the compiler's error as text: the same for every call).
    cell: OnceLock<std::result::Result<Rows, String>>,
}

/// Row functions and the code memory they live in.
struct Rows {
    /// Per statement from the first of them.
    stmts: Vec<Option<StmtCode>>,
    /// Their first statement.
    first: usize,
    _memory: CodeMemory,
}

impl Rows {
    fn stmt(&self, t: usize) -> Option<&StmtCode> {
        self.stmts.get(t.checked_sub(self.first)?)?.as_ref()
    }
}

/// The row functions compiled on first use (see [`Jit::stmt`]), per section: each
/// statement's group, where it has one, and the groups. A point run's statements (see
/// [`crate::gtscript::plan::schedule::SectionSchedule::point_run_of`]) are one group: their
/// rows run only where a block cuts the run, which no call of pace's saturation adjustment
/// (826 statements in 18 straight runs) does. The other statements of a section with a
/// column function are one group: layouts with unit stride along K run the column function.
#[allow(clippy::type_complexity)]
fn row_groups(schedule: &Schedule) -> (Vec<Vec<Option<usize>>>, Vec<Vec<RowGroup>>) {
    let mut group_of = Vec::new();
    let mut groups = Vec::new();
    for sec in &schedule.sections {
        let run_of = sec.point_run_of();
        let mut of: Vec<Option<usize>> = vec![None; run_of.len()];
        let mut gs: Vec<RowGroup> = Vec::new();
        let mut rest: Vec<usize> = Vec::new();
        for t in (0..run_of.len()).filter(|&t| sec.row[t]) {
            match run_of[t] {
                Some(first) => {
                    if gs.last().is_none_or(|g| g.run != Some(first)) {
                        gs.push(RowGroup {
                            stmts: Vec::new(),
                            run: Some(first),
                            cell: OnceLock::new(),
                        });
                    }
                    of[t] = Some(gs.len() - 1);
                    gs.last_mut().expect("pushed").stmts.push(t);
                }
                None if sec.column => rest.push(t),
                None => {}
            }
        }
        if !rest.is_empty() {
            for &t in &rest {
                of[t] = Some(gs.len());
            }
            gs.push(RowGroup {
                stmts: rest,
                run: None,
                cell: OnceLock::new(),
            });
        }
        group_of.push(of);
        groups.push(gs);
    }
    (group_of, groups)
}

/// What [`define_rows`] defined for one statement: (section, statement, in the plain module,
/// function, operands, whether it reads its own target along each axis, run-time K reads).
type RowId = (
    usize,
    usize,
    bool,
    FuncId,
    Vec<(u32, [i32; 3])>,
    [bool; 3],
    Vec<(u32, Ty)>,
);

/// Defines the row functions of `stmts` (section, statement) of `plan` in `module`; those of
/// statements with many operands in `plain`, made without Cranelift's optimizations (see
/// `CARRIED_OPERANDS`) when first needed.
fn define_rows(
    module: &mut JITModule,
    plain: &mut Option<JITModule>,
    ctx: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
    plan: &Plan,
    stmts: impl Iterator<Item = (usize, usize)>,
) -> Result<Vec<RowId>> {
    let (elem, wide) = lane_types(plan.lanes);
    let mut ids = Vec::new();
    for (s, t) in stmts {
        let st = &plan.sections[s].stmts[t];
        let operands = operands_of(&st.tape);
        let many = operands.len() > CARRIED_OPERANDS;
        if many && plain.is_none() {
            *plain = new_module(false)?;
        }
        let module = match plain.as_mut() {
            Some(m) if many => m,
            _ => &mut *module,
        };
        let vk = vk_of(plan, &st.tape);
        let ptr = module.target_config().pointer_type();
        ctx.func.signature = module.make_signature();
        for _ in 0..8 {
            ctx.func.signature.params.push(AbiParam::new(ptr));
        }
        let calls = declare_calls(module, &mut ctx.func, &st.tape, elem, wide)?;
        build(
            &mut ctx.func,
            fctx,
            &st.tape,
            &operands,
            &vk,
            &calls,
            elem,
            wide,
            ptr,
            module.target_config(),
        )?;
        let id = module
            .declare_function(&format!("s{s}_{t}"), Linkage::Local, &ctx.func.signature)
            .map_err(jit_error)?;
        module.define_function(id, ctx).map_err(jit_error)?;
        module.clear_context(ctx);
        let reads_target_along = [0, 1, 2].map(|a| {
            operands
                .iter()
                .any(|&(q, off)| q == st.target && off[a] != 0)
        });
        ids.push((s, t, many, id, operands, reads_target_along, vk));
    }
    Ok(ids)
}

/// The row functions `ids` defined (see [`define_rows`]) in `memory`'s modules: module 0, or
/// module 1 for those in the plain module.
fn row_codes(memory: &CodeMemory, ids: Vec<RowId>) -> Result<Vec<(usize, usize, StmtCode)>> {
    ids.into_iter()
        .map(|(s, t, many, id, operands, reads_target_along, vk)| {
            let f = memory.function::<RowFn>(usize::from(many), id)?;
            let code = StmtCode {
                f: Arc::new(SwapFn::new(f)),
                operands,
                reads_target_along,
                vk,
            };
            Ok((s, t, code))
        })
        .collect()
}

/// The fewest row functions worth a module and a task of their own (a module costs tens of
/// microseconds to make; a row function, 0.1-1.5 ms to compile).
const ROWS_PER_CHUNK: usize = 4;

/// A part of what [`Jit::compile`] compiles, in a module of its own: row functions (section,
/// statement) or point loops (section, first statement, exit).
enum ChunkTask {
    Rows(Vec<(usize, usize)>),
    Loops(Vec<(usize, usize, usize)>),
}

/// A compiled [`ChunkTask`]: the code memory its functions live in, and each one's code.
struct Chunk {
    memory: CodeMemory,
    rows: Vec<(usize, usize, StmtCode)>,
    loops: Vec<(usize, usize, LoopCode)>,
}

/// `items` in at most `n` contiguous chunks of about equal `weight` (the k-th ends at k/n of
/// the total), none empty.
fn split_even<T>(items: Vec<T>, n: usize, weight: impl Fn(&T) -> usize) -> Vec<Vec<T>> {
    let total: usize = items.iter().map(&weight).sum();
    let mut chunks: Vec<Vec<T>> = vec![Vec::new()];
    let mut done = 0;
    for item in items {
        if done * n >= total * chunks.len()
            && chunks.len() < n
            && !chunks[chunks.len() - 1].is_empty()
        {
            chunks.push(Vec::new());
        }
        done += weight(&item);
        if let Some(c) = chunks.last_mut() {
            c.push(item);
        }
    }
    chunks.retain(|c| !c.is_empty());
    chunks
}

/// The row functions `eager` and the point loops `point_loops` of `plan` as tasks for
/// [`compile_chunks`]: with more than one thread, each kind cut into up to two chunks per
/// thread of about equal work (tape length), so that a thread that finishes early takes
/// another (a row chunk holds at least [`ROWS_PER_CHUNK`] functions); with one, one of each.
fn chunk_tasks(
    plan: &Plan,
    eager: Vec<(usize, usize)>,
    point_loops: Vec<(usize, usize, usize)>,
    threads: Threads,
) -> Vec<ChunkTask> {
    let most = if threads.get() < 2 {
        1
    } else {
        2 * threads.get()
    };
    let tape = |s: usize, t: usize| plan.sections[s].stmts[t].tape.len().max(1);
    let n_rows = (eager.len() / ROWS_PER_CHUNK).clamp(1, most);
    let n_loops = point_loops.len().clamp(1, most);
    let rows = split_even(eager, n_rows, |&(s, t)| tape(s, t));
    let loops = split_even(point_loops, n_loops, |&(s, t, exit)| {
        (t..exit).map(|u| tape(s, u)).sum::<usize>().max(1)
    });
    let mut tasks: Vec<ChunkTask> = loops.into_iter().map(ChunkTask::Loops).collect();
    tasks.extend(rows.into_iter().map(ChunkTask::Rows));
    tasks
}

/// Compiles each of `tasks` (see [`chunk_tasks`]) of `plan` in modules of its own, spread over
/// `threads` (Cranelift compiles one function at a time: pace's 181 definitions compile 1635
/// row functions and 109 point loops at definition, 0.9 s on one thread).
fn compile_chunks(plan: &Plan, tasks: Vec<ChunkTask>, threads: Threads) -> Result<Vec<Chunk>> {
    let done: Vec<std::sync::Mutex<Option<Result<Chunk>>>> =
        tasks.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let indexed: Vec<(usize, ChunkTask)> = tasks.into_iter().enumerate().collect();
    crate::runtime::threads::run_each(threads, indexed, |(i, task)| {
        let got = match task {
            ChunkTask::Rows(stmts) => compile_rows_alone(plan, stmts.into_iter()),
            ChunkTask::Loops(parts) => compile_loops_alone(plan, &parts),
        };
        *done[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(got);
    });
    done.into_iter()
        .map(|cell| {
            cell.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err(jit_error("a chunk of functions was not compiled")))
        })
        .collect()
}

/// Compiles the point loops `parts` (section, first statement, exit) of `plan` in a module of
/// their own, one function each.
fn compile_loops_alone(plan: &Plan, parts: &[(usize, usize, usize)]) -> Result<Chunk> {
    let mut module = new_module(true)?.ok_or_else(|| jit_error("no Cranelift backend"))?;
    let (elem, wide) = lane_types(plan.lanes);
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut ids = Vec::with_capacity(parts.len());
    for &(s, t, exit) in parts {
        let range = PointRange {
            first: t,
            exit,
            walk: None,
        };
        let built = point::build(
            &mut module,
            &mut ctx,
            &mut fctx,
            plan,
            &[(s, range)],
            elem,
            wide,
        )?;
        ids.push((s, t, exit, built));
    }
    let memory = CodeMemory::finalize(vec![module])?;
    let mut loops = Vec::with_capacity(ids.len());
    for (s, t, exit, (id, operands, outs, vk, sizes)) in ids {
        let f = memory.function::<LoopFn>(0, id)?;
        let code = LoopCode {
            f: Arc::new(SwapFn::new(f)),
            operands,
            outs,
            vk,
            exit,
            parts: sizes,
        };
        loops.push((s, t, code));
    }
    Ok(Chunk {
        memory,
        rows: Vec::new(),
        loops,
    })
}

/// Compiles the row functions of `stmts` (section, statement) of `plan` in modules of their
/// own.
fn compile_rows_alone(plan: &Plan, stmts: impl Iterator<Item = (usize, usize)>) -> Result<Chunk> {
    let mut module = new_module(true)?.ok_or_else(|| jit_error("no Cranelift backend"))?;
    let mut plain = None;
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let ids = define_rows(&mut module, &mut plain, &mut ctx, &mut fctx, plan, stmts)?;
    let memory = CodeMemory::finalize(std::iter::once(module).chain(plain).collect())?;
    let codes = row_codes(&memory, ids)?;
    Ok(Chunk {
        memory,
        rows: codes,
        loops: Vec::new(),
    })
}

/// Compiles the row functions of `stmts` (section, statement, in order; none before statement
/// `first`) of `plan`, in modules of their own.
fn compile_rows(
    plan: &Plan,
    stmts: impl Iterator<Item = (usize, usize)>,
    first: usize,
) -> Result<Rows> {
    let Chunk { memory, rows, .. } = compile_rows_alone(plan, stmts)?;
    let mut out: Vec<Option<StmtCode>> = Vec::new();
    for (_, t, code) in rows {
        let x = t - first;
        if out.len() <= x {
            out.resize_with(x + 1, || None);
        }
        out[x] = Some(code);
    }
    Ok(Rows {
        stmts: out,
        first,
        _memory: memory,
    })
}

/// A column function compiled on first use (the compiler's error as text).
type LazyColumn = OnceLock<std::result::Result<Columned, String>>;

/// A section's column function and the code memory it lives in.
struct Columned {
    code: ColumnCode,
    _memory: CodeMemory,
}

/// Compiles the column function of section `s` of `plan` (see [`column::build`]) in a module
/// of its own.
fn compile_column(plan: &Plan, s: usize) -> Result<Columned> {
    let mut module = new_module(true)?.ok_or_else(|| jit_error("no Cranelift backend"))?;
    let (elem, _) = lane_types(plan.lanes);
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let (id, slots) = column::build(&mut module, &mut ctx, &mut fctx, plan, s, elem)?
        .ok_or_else(|| jit_error(format!("section {s} cannot walk columns")))?;
    let memory = CodeMemory::finalize(vec![module])?;
    let f = memory.function::<ColumnFn>(0, id)?;
    Ok(Columned {
        code: ColumnCode {
            f: Arc::new(SwapFn::new(f)),
            slots,
        },
        _memory: memory,
    })
}

/// A walk compiled on first use (the compiler's error as text: the same for every call).
type LazyWalk = OnceLock<std::result::Result<Walked, String>>;

/// A whole section's walk (or a run of sections' walk along columns) and the code memory it
/// lives in.
struct Walked {
    code: LoopCode,
    /// Whether tier two's function was looked for (see [`TierTwo::adopt`]).
    adopted: std::sync::atomic::AtomicBool,
    _memory: CodeMemory,
}

/// The element type compiled code computes in, and whether it is the mixed-type lanes.
fn lane_types(lanes: Lanes) -> (Type, bool) {
    match lanes {
        Lanes::F64 => (types::F64, false),
        Lanes::F32 => (types::F32, false),
        Lanes::Wide => (types::I64, true),
    }
}

/// The parts of the walk `walk` of the whole sections `sections` (see [`point::build`]).
pub(crate) fn walk_parts(
    plan: &Plan,
    sections: std::ops::Range<usize>,
    walk: PointWalk,
) -> Vec<(usize, PointRange)> {
    sections
        .map(|s| {
            let exit = plan.sections[s].stmts.len();
            let walk = Some(walk);
            (
                s,
                PointRange {
                    first: 0,
                    exit,
                    walk,
                },
            )
        })
        .collect()
}

/// Compiles the walk `walk` of the whole sections `sections` (see [`point::build`]) in a
/// module of its own.
fn compile_walk(plan: &Plan, sections: std::ops::Range<usize>, walk: PointWalk) -> Result<Walked> {
    let mut module = new_module(true)?.ok_or_else(|| jit_error("no Cranelift backend"))?;
    let (elem, wide) = lane_types(plan.lanes);
    let parts = walk_parts(plan, sections, walk);
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let (id, operands, outs, vk, parts) =
        point::build(&mut module, &mut ctx, &mut fctx, plan, &parts, elem, wide)?;
    let memory = CodeMemory::finalize(vec![module])?;
    let f = memory.function::<LoopFn>(0, id)?;
    let exit = plan.sections[parts[0].section].stmts.len();
    Ok(Walked {
        adopted: Default::default(),
        code: LoopCode {
            f: Arc::new(SwapFn::new(f)),
            operands,
            outs,
            vk,
            exit,
            parts,
        },
        _memory: memory,
    })
}

#[cfg(test)]
mod chunk_tests {
    use super::*;

    #[test]
    fn chunks_keep_the_order_and_share_the_work() {
        let items: Vec<usize> = (0..10).collect();
        let chunks = split_even(items.clone(), 3, |_| 1);
        assert_eq!(chunks, vec![vec![0, 1, 2, 3], vec![4, 5, 6], vec![7, 8, 9]]);
        // A heavy item first: the others make the second chunk.
        assert_eq!(
            split_even(vec![10, 1, 1, 1, 1], 2, |&w| w),
            vec![vec![10], vec![1, 1, 1, 1]]
        );
        // Never more chunks than items, never an empty one.
        assert_eq!(split_even(vec![5, 5], 8, |&w| w), vec![vec![5], vec![5]]);
        assert!(split_even(Vec::<usize>::new(), 4, |&w| w).is_empty());
        assert_eq!(split_even(vec![1, 2, 3], 1, |&w| w), vec![vec![1, 2, 3]]);
    }

    #[test]
    fn chunks_are_compiled_alike_on_one_thread_and_on_several() {
        // A plan with enough statements for several row chunks: the same statements get code
        // on one thread and on two.
        let fields: String = (0..24)
            .map(|k| format!("field c{k} float64 IJK\n"))
            .collect();
        let body: String = (0..24)
            .map(|k| {
                format!(
                    "stmt {} f {} 0 mul lit float64 {k}.5 f 0 0 0 0 0\n",
                    k + 1,
                    k + 1
                )
            })
            .collect();
        let text = format!(
            "stencil chunks\nfield a float64 IJK\n{fields}comp PARALLEL\ninterval S 0 E 0\n{body}"
        );
        let plan = crate::gtscript::compile(&text).unwrap();
        let schedule = Schedule::new(&plan, true);
        let (group_of, _) = row_groups(&schedule);
        let eager: Vec<(usize, usize)> = (0..plan.sections[0].stmts.len())
            .filter(|&t| schedule.sections[0].row[t] && group_of[0][t].is_none())
            .map(|t| (0, t))
            .collect();
        let mut compiled = Vec::new();
        for threads in [1, 2] {
            let threads = Threads::new(threads).unwrap();
            let tasks = chunk_tasks(&plan, eager.clone(), Vec::new(), threads);
            let chunks = compile_chunks(&plan, tasks, threads).unwrap();
            let mut got: Vec<(usize, usize)> = chunks
                .iter()
                .flat_map(|c| c.rows.iter().map(|&(s, t, _)| (s, t)))
                .collect();
            got.sort_unstable();
            compiled.push((chunks.len(), got));
        }
        assert_eq!(compiled[0].0, 1);
        assert!(compiled[1].0 > 1, "{:?}", compiled[1].0);
        assert_eq!(compiled[0].1, eager);
        assert_eq!(compiled[1].1, eager);
    }
}
