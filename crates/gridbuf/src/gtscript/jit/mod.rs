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
//! function pointer, is `module`; what is compiled at definition is cut into chunks compiled
//! side by side by `chunks`.

pub(crate) mod abi;
mod chunks;
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
use crate::gtscript::plan::schedule::{Layout, LayoutSchedule, PointWalk, Schedule, SectionExec};
use crate::gtscript::plan::{Lanes, Plan};
use crate::gtscript::rt::lane::Elem;
use crate::kernels::exec::Threads;
use abi::{ColumnCode, ColumnFn, LoopCode, LoopFn, StmtCode, SwapFn, TierTwo};
use chunks::{chunk_tasks, compile_chunks, compile_rows_alone, Chunk};
use helpers::{jit_error, lane_types};
use module::{build_in_own_module, CodeMemory};
use point::PointRange;
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
    let (elem, _) = lane_types(plan.lanes);
    let (module, (id, slots)) = build_in_own_module(|module, ctx, fctx| {
        column::build(module, ctx, fctx, plan, s, elem)?
            .ok_or_else(|| jit_error(format!("section {s} cannot walk columns")))
    })?;
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
    let (elem, wide) = lane_types(plan.lanes);
    let parts = walk_parts(plan, sections, walk);
    let (module, (id, operands, outs, vk, parts)) = build_in_own_module(|module, ctx, fctx| {
        point::build(module, ctx, fctx, plan, &parts, elem, wide)
    })?;
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
