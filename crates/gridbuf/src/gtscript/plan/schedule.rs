//! Which executor runs each section and `while` loop of a plan: the [`Schedule`], built once
//! per plan and code generation on or off ([`Schedule::new`]), and per layout of a call's
//! output ([`Schedule::for_layout`]). The code generator compiles what it names
//! (`Jit::compile`), and the executor runs what it names; neither decides again.
//!
//! Below it, the rules it is built from: which sections can walk columns in one compiled
//! function (`walkable`), which can run as one point function as a whole (`section`,
//! `group`), which `while` loops can run point by point (`range`), which tapes the code
//! generator handles (`supported`).

use crate::gtscript::ir::{BinOp, IterOrder};
use crate::gtscript::plan::guarded::keeps_branches;
use crate::gtscript::plan::{Instr, Kind, Lanes, Op, Plan, Src, StmtPlan};

/// How a section's point function walks a tile: the point axis (K: each column's levels in
/// the section's order, for layouts with unit stride along K; I: each level's rows, levels in
/// the section's order); rows run along J either way.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PointWalk {
    /// Points along K, one call per column of I.
    Columns,
    /// Points along I, one call per level.
    Levels,
}

impl PointWalk {
    /// The point axis.
    pub fn axis(self) -> usize {
        match self {
            PointWalk::Columns => 2,
            PointWalk::Levels => 0,
        }
    }
}

/// A call's layout as the schedule sees it: the unit-stride axis of the output's memory
/// (`exec::run` picks it from the first written field's strides).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Unit stride along I (gt:cpu_ifirst).
    I,
    /// Unit stride along J.
    J,
    /// Unit stride along K (gt:cpu_kfirst).
    K,
}

impl Layout {
    /// The layout whose unit-stride axis is `axis` (0, 1, 2: I, J, K).
    pub fn from_axis(axis: usize) -> Layout {
        match axis {
            0 => Layout::I,
            1 => Layout::J,
            _ => Layout::K,
        }
    }

    /// The unit-stride axis.
    pub fn axis(self) -> usize {
        self as usize
    }
}

/// What code a section has, decided once per plan (the same for every layout).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionSchedule {
    /// Whether the whole section is one point function (see `section`), walking each
    /// level's rows of I on layouts with unit stride along I ([`PointWalk::Levels`]). Such a
    /// section has no row functions and no loop functions: where no walk runs it (other
    /// layouts, memory of other element types), the interpreter does.
    pub whole: bool,
    /// The first section of the run of sections that walk columns as one point function
    /// ([`PointWalk::Columns`], see `group`) that this section belongs to, where it belongs
    /// to one.
    pub column_run: Option<usize>,
    /// Whether the section has a column function (`jit::column`, see `walkable`).
    pub column: bool,
    /// Whether tier two walks the section's levels as one point function on layouts with unit
    /// stride along I, where no point function of tier one runs it (see [`levels_walk`]):
    /// only tier two's C has code for it; tier one runs the section in blocks.
    pub levels: bool,
    /// Per statement: whether its row function runs it in blocks and sweeps (else the
    /// interpreter).
    pub row: Vec<bool>,
    /// Per statement: where it is the condition of a `while` loop that runs point by point in
    /// blocks (see `range`), one past the loop's last statement.
    pub point_loop: Vec<Option<usize>>,
    /// Per statement: where it starts a straight run of statements (see `straight`) that
    /// tier two fuses into one point function over the block's rows, one past the run's last
    /// statement; only tier two's C has code for them. Their values stay in registers from
    /// statement to statement instead of going through the block's buffers:
    /// - in float code, where tier one runs them by their row functions (its point functions
    ///   are scalar, its row functions eight lanes wide), vectorised by the C compiler across
    ///   a row's points (pace's `fix_neg_water`, 54 masked statements);
    /// - in mixed-type code, where tier one runs them in point runs of at most
    ///   48 statements (Cranelift's compile time), one scalar function for the
    ///   whole run (pace's satadjust: 817 statements in 17 point runs, which passed 86
    ///   temporaries through memory at every point).
    pub fused: Vec<Option<usize>>,
    /// Per statement: the block buffers handed over before it runs in blocks, as
    /// `(from, to)`: `from`, a temporary of the section that no statement reads or writes
    /// from here on, gives its buffer to `to`, which none read or wrote before (see
    /// `shared_buffers`). Blocks swap the two buffers, and swap back in reverse order at the
    /// block's end. pace's `yppm.compute_y_flux` has 39 temporaries in block buffers, 7 MB
    /// in a tile of 16x16 columns of 80 levels; far fewer live at once.
    pub handover: Vec<Vec<(u32, u32)>>,
    /// The quantities some statement's `handover` gives a buffer to, sorted: blocks fit no
    /// buffer of their own for these. (Asked once per quantity and block: a scan of
    /// `handover` there took 5 % of pace's icloud, 353 statements, per call.)
    pub received: Vec<u32>,
}

impl SectionSchedule {
    /// Whether calls on `layout` run tier two's walk of the section's levels (see
    /// [`SectionSchedule::levels`]; `None`: on some layout): it walks rows of I.
    pub fn levels_on(&self, layout: Option<Layout>) -> bool {
        self.levels && layout.is_none_or(|l| l == Layout::I)
    }

    /// Per statement: the first statement of the point run (a `while` loop's, or a straight
    /// run of mixed-type code: see [`SectionSchedule::point_loop`]) it belongs to, where it
    /// belongs to one.
    pub fn point_run_of(&self) -> Vec<Option<usize>> {
        let n = self.point_loop.len();
        let mut out = vec![None; n];
        for (t, exit) in self.point_loop.iter().enumerate() {
            if let Some(e) = *exit {
                out[t..e.min(n)].fill(Some(t));
            }
        }
        out
    }
}

/// Which executor runs a section in the I/J tiles of a call (slabs and sweeps run every
/// statement by its row function or the interpreter, as [`SectionSchedule::row`] says).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SectionExec {
    /// The point function of the sections `s..end` (this one, `s`, first), compiled for
    /// `walk` when a call first needs it (`Jit::point_section`).
    Points {
        /// How it walks the tile.
        walk: PointWalk,
        /// One past the last section it runs.
        end: usize,
    },
    /// Run by the point function of the run that section `first` starts (see
    /// [`SectionExec::Points`]).
    InRun {
        /// The run's first section.
        first: usize,
    },
    /// Its column function, over all its levels of the tile's columns.
    Columns,
    /// Blocks: each statement by its row function, its `while` loop's point function or the
    /// interpreter, as [`SectionSchedule`] says.
    Blocks {
        /// Whether the tile's columns of each field are copied to an I-fastest buffer first
        /// (FORWARD and BACKWARD sections on layouts with unit stride along K).
        copy_columns: bool,
    },
}

/// Which executor runs each section and each `while` loop of a plan, for code generation on
/// or off: built once per plan (by `Jit::compile`, or per call without code), read per layout
/// ([`Schedule::for_layout`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Whether code generation is on (`GRIDBUF_GTSCRIPT_JIT=0`, no Cranelift backend, or a
    /// call without code turn it off: then the interpreter runs everything in blocks).
    pub codegen: bool,
    /// Per section: its code.
    pub sections: Vec<SectionSchedule>,
}

/// A [`Schedule`] for one layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutSchedule {
    /// The layout.
    pub layout: Layout,
    /// Whether the tiles' FORWARD and BACKWARD sections walk columns in memory order: on
    /// layouts with unit stride along K, where every one of them has a column function or
    /// walks columns as a point function. Stored temporaries are then K fastest (else I
    /// fastest).
    pub walk_columns: bool,
    /// Whether the call's tiles may be slabs of the outermost memory axis where every field's
    /// memory has unit stride along the layout's axis and the element type (the executor
    /// checks that): every section PARALLEL, every quantity a field, and, unless the layout
    /// has unit stride along K, no field the stencil writes read at another level. Else the
    /// tiles sweep where the plan has a sweep schedule (`Plan::sweeps`) along the axis the
    /// call's memory and domain pick, or are I/J tiles that run [`LayoutSchedule::sections`].
    pub slabs: bool,
    /// Per section: its executor in I/J tiles.
    pub sections: Vec<SectionExec>,
    /// Whether I/J tiles are one per thread rather than several: where a FORWARD or BACKWARD
    /// section runs in blocks, one level per block, and no `while` loop makes the work per
    /// point uneven (see `for_layout`).
    pub tile_per_thread: bool,
}

impl Schedule {
    /// The schedule of `plan`: with `codegen`, every section, statement and loop gets the
    /// code the rules below allow (for `plan`'s lanes); without, none.
    pub fn new(plan: &Plan, codegen: bool) -> Schedule {
        let wide = plan.lanes == Lanes::Wide;
        let n = plan.sections.len();
        // Sections that walk as one point function run their statements one by one only
        // where neither walk can (layouts with unit stride along J, memory of other element
        // types): there the interpreter runs them, and the compile time (a large part of the
        // first result) goes to the walks.
        let whole: Vec<bool> = (0..n).map(|s| codegen && section(plan, s, wide)).collect();
        let mut column_run: Vec<Option<usize>> = vec![None; n];
        for s in 0..n {
            if whole[s] && column_run[s].is_none() {
                let e = group(plan, s, wide);
                column_run[s..e].fill(Some(s));
            }
        }
        let sections = plan
            .sections
            .iter()
            .enumerate()
            .map(|(s, sec)| {
                let blocks = codegen && !whole[s];
                let mut sch = SectionSchedule {
                    whole: whole[s],
                    column_run: column_run[s],
                    // Column functions compute in one float type.
                    column: codegen && !wide && walkable(plan, s),
                    levels: blocks && levels_walk(plan, s, wide),
                    row: sec
                        .stmts
                        .iter()
                        .map(|st| blocks && supported(&st.tape, wide) && !st.tape.is_empty())
                        .collect(),
                    point_loop: if blocks {
                        point_runs(plan, s, wide)
                    } else {
                        vec![None; sec.stmts.len()]
                    },
                    fused: if blocks {
                        fused_runs(plan, s, wide)
                    } else {
                        vec![None; sec.stmts.len()]
                    },
                    handover: Vec::new(),
                    received: Vec::new(),
                };
                sch.handover = shared_buffers(plan, s, &sch);
                sch.received = sch.handover.iter().flatten().map(|&(_, to)| to).collect();
                sch.received.sort_unstable();
                sch.received.dedup();
                sch
            })
            .collect();
        Schedule { codegen, sections }
    }

    /// The number of sections the column walk of the run starting at section `s` covers (0
    /// where `s` starts none).
    pub fn column_run_len(&self, s: usize) -> usize {
        self.sections[s..]
            .iter()
            .take_while(|x| x.column_run == Some(s))
            .count()
    }

    /// The executor of each section of `plan` (the plan this schedule was built for) on
    /// `layout`.
    pub fn for_layout(&self, plan: &Plan, layout: Layout) -> LayoutSchedule {
        let along_k = layout == Layout::K;
        let vertical = |s: usize| plan.sections[s].order != IterOrder::Parallel;
        let n = self.sections.len();
        // FORWARD and BACKWARD sections on a layout with unit stride along K walk columns in
        // memory order where all of them can (tridiagonal solve 256x256x80 on gt:cpu_kfirst:
        // see `jit::column`). (Stencils with PARALLEL sections only keep I-fastest
        // temporaries.)
        let walk_columns = along_k
            && (0..n).any(vertical)
            && (0..n).all(|s| {
                !vertical(s) || self.sections[s].column || self.sections[s].column_run.is_some()
            });
        let sections: Vec<SectionExec> = (0..n)
            .map(|s| {
                let sec = &self.sections[s];
                match sec.column_run {
                    Some(first) if walk_columns && first == s => SectionExec::Points {
                        walk: PointWalk::Columns,
                        end: s + self.column_run_len(s),
                    },
                    Some(first) if walk_columns => SectionExec::InRun { first },
                    _ if !walk_columns && layout == Layout::I && sec.whole => SectionExec::Points {
                        walk: PointWalk::Levels,
                        end: s + 1,
                    },
                    _ if walk_columns && sec.column => SectionExec::Columns,
                    _ => Self::blocks(plan, s, layout),
                }
            })
            .collect();
        // A stencil whose sections are all PARALLEL and whose quantities are all fields read and
        // written in place (unit stride along the layout's axis, no temporaries) needs no block
        // buffers, so its tiles can follow memory: slabs of the outermost axis (K when rows run
        // along I or J, I when they run along K), each a long sequential walk for the hardware
        // prefetcher, as the native kernels do (256x256x80 copy on gt:cpu_kfirst: 2.6 ms in
        // 16x16 column tiles, 1.7 ms in slabs).
        // K slabs also need every computation to read the fields the stencil writes at their own
        // level only: a slab runs all computations before the next slab starts, so a read at a K
        // offset across a slab boundary would see the value from before the stencil. (Horizontal
        // reads of written fields are rejected by the planner, so I slabs need no such rule.)
        let written = |q: u32| matches!(plan.kinds[q as usize], Kind::Field { field, .. } if plan.field_written[field]);
        let written_read_along_k = plan.sections.iter().any(|s| {
            s.k_reads
                .iter()
                .any(|&(q, lo, hi)| (lo, hi) != (0, 0) && written(q))
                || s.var_reads.iter().any(|&q| written(q))
        });
        let slabs = plan.sections.iter().all(|s| s.order == IterOrder::Parallel)
            && plan.kinds.iter().all(|k| matches!(k, Kind::Field { .. }))
            && (along_k || !written_read_along_k);
        // A FORWARD or BACKWARD section in blocks, or walking levels, runs one level per block
        // or call, and every one pays its set-up (buffers, transfers, each statement's or run's
        // rows) whatever its size: tiles as large as the threads allow have the fewest. Several
        // tiles per thread only even out uneven work, which comes from `while` loops (pace's
        // `ray_fast_wind_compute`, six such sections at C48 on gt:cpu_ifirst: 0.83 -> 0.58 ms
        // per call with 2 threads; its microphysics with loops was slower).
        // Walks of levels differ: each goes over the tile's columns once, and with few 3-D
        // quantities (fields and stored temporaries) smaller tiles keep them in cache from walk
        // to walk (pace's fix_tracer, 4 of them, nine sections: 0.65 ms with several tiles per
        // thread, 0.83 with one), where with many the rows' long sequential runs count more
        // (its fields_init, 47 fields: 4.0 ms with several, 2.9 with one; riem_solver3.finalize, 10:
        // 0.53 -> 0.44).
        let volumes = (0..plan.kinds.len() as u32)
            .filter(|&q| {
                !matches!(plan.kinds[q as usize], Kind::Local)
                    && (0..3).all(|a| has_axis(plan, q, a))
            })
            .count();
        let by_level = |e: &SectionExec| match e {
            SectionExec::Blocks { .. } => true,
            SectionExec::Points { walk, .. } => {
                *walk == PointWalk::Levels && volumes > CACHED_VOLUMES
            }
            _ => false,
        };
        let tile_per_thread = sections
            .iter()
            .enumerate()
            .any(|(s, e)| vertical(s) && by_level(e))
            && plan.program.sections.iter().all(|p| p.loops.is_empty());
        LayoutSchedule {
            layout,
            walk_columns,
            slabs,
            sections,
            tile_per_thread,
        }
    }

    /// Section `s` in blocks on `layout`: what [`SectionExec::Points`],
    /// [`SectionExec::InRun`] and [`SectionExec::Columns`] become for a tile whose memory their
    /// function was not compiled for (another element type, no unit stride along the axis it
    /// walks, read-only where it stores).
    pub fn blocks(plan: &Plan, s: usize, layout: Layout) -> SectionExec {
        SectionExec::Blocks {
            copy_columns: plan.sections[s].order != IterOrder::Parallel && layout == Layout::K,
        }
    }
}

/// Whether the code generator handles every operation of `tape` (an integer power needs a
/// literal exponent, which the types pass guarantees; reads at run-time K levels only in
/// mixed-type code, `wide`; writes at run-time K levels never: the interpreter runs them, in
/// blocks, so no compiled walk, column or point loop keeps a value of their target in a
/// register or a copy across them).
pub(crate) fn supported(tape: &[Instr], wide: bool) -> bool {
    tape.iter().all(|ins| match ins.op {
        Op::LoadK(..) => wide,
        Op::StoreK(..) => false,
        Op::Bin(BinOp::Pow) if !ins.ty.is_float() => {
            matches!(ins.args[1], Src::Const(crate::gtscript::ir::Value::I(e)) if e >= 0)
        }
        _ => true,
    })
}

/// Whether section `s` of `plan` can walk columns: FORWARD or BACKWARD, without regions, loops
/// or writes at K offsets, every statement compiled and computed over the core only, no statement reading at a horizontal offset a
/// quantity the section writes, and every temporary that lives in block buffers (`Local`)
/// written in a level before it is read there.
pub(crate) fn walkable(plan: &Plan, s: usize) -> bool {
    let sec = &plan.sections[s];
    if sec.order == IterOrder::Parallel || sec.stmts.is_empty() {
        return false;
    }
    // Regions, loops and writes at K offsets run in blocks (reads at run-time levels are not
    // `supported`).
    if !plan.program.sections[s].loops.is_empty()
        || sec
            .stmts
            .iter()
            .any(|st| st.region.is_some() || st.k_offset != 0)
    {
        return false;
    }
    let written = |q: u32| sec.stmts.iter().any(|st| st.target == q);
    let mut set: Vec<u32> = Vec::new();
    for st in &sec.stmts {
        if st.reach != [0; 4] || st.tape.is_empty() || !supported(&st.tape, false) {
            return false;
        }
        for ins in &st.tape {
            for a in ins.args {
                let Src::Q(q, off) = a else { continue };
                if (off[0], off[1]) != (0, 0) && written(q) {
                    return false;
                }
                if matches!(plan.kinds[q as usize], Kind::Local)
                    && (off != [0; 3] || !set.contains(&q))
                {
                    return false;
                }
            }
        }
        set.push(st.target);
    }
    true
}

/// Whether quantity `q` has axis `a` (a temporary that lives in block buffers has all three).
pub(crate) fn has_axis(plan: &Plan, q: u32, a: usize) -> bool {
    match plan.kinds[q as usize] {
        Kind::Field { field, .. } => plan.program.fields[field].axes[a],
        Kind::Stored { axes, .. } => axes[a],
        Kind::Local => true,
    }
}

/// The quantities statement `u` (or the range's end, `u == range.end`) can take from earlier
/// statements of `range` in every pass: those of the statements `v < u` that surely ran, in
/// the current pass of every loop that holds them, when `u` runs (every loop in `range` whose
/// body holds `v` holds `u` too; a loop's body may run no pass).
pub(crate) fn surely_written(
    plan: &Plan,
    s: usize,
    range: &std::ops::Range<usize>,
    u: usize,
) -> Vec<u32> {
    let sec = &plan.sections[s];
    let loops: Vec<(usize, usize)> = range
        .clone()
        .filter_map(|c| sec.flow[c].exit.map(|e| (c, e)))
        .collect();
    (range.start..u)
        .filter(|&v| {
            loops
                .iter()
                .all(|&(c, e)| !(c < v && v < e) || (c < u && u < e))
        })
        .map(|v| sec.stmts[v].target)
        .collect()
}

/// Whether section `s` can run as one point function over its whole box, point after point
/// (see [`crate::gtscript::jit::point::PointRange`] with `section`): a FORWARD or BACKWARD section with `while` loops
/// (in mixed-type code, also one without, see below), every field of a type its code reads in
/// place (mixed-type code), every statement compiled (`wide`: mixed-type code), computed over the core only, at its own
/// point (no region, no K offset); what the section writes it reads at its own point or at
/// other levels (no horizontal offset, no run-time level); a temporary that lives in one level
/// is read at its own point only. Then each point's result depends on that point alone and on
/// other levels, so the points of one level can run in any order, and the levels of a column,
/// walked in the section's order, after one another. (Such a temporary read before any
/// statement wrote it at the point, where a masked assignment keeps its old value, reads zero
/// there: GT4Py's temporary is uninitialised memory.)
pub(crate) fn section(plan: &Plan, s: usize, wide: bool) -> bool {
    let sec = &plan.sections[s];
    let n = sec.stmts.len();
    if sec.order == IterOrder::Parallel || n == 0 {
        return false;
    }
    // Without loops, float code walks columns by column functions (eight columns at a time in
    // vectors). Mixed-type code (`wide`) has none, and its statements run one point per step in
    // blocks anyway: there a point function walks each column through all levels too (pace's
    // `fix_tracer`, 12x12x79 on gt:cpu_kfirst: 0.50 ms in blocks, 0.16 as points), where
    // every FORWARD and BACKWARD section of the plan can (else the columns are not walked, and
    // the section would run in the interpreter: a section with no compiled rows that a point
    // function does not run falls back to it). So does float code with a section that keeps
    // its branches, which runs one point per step too (see `point_runs`): pace's icloud read
    // as one-float-type code took 58 ms per call on tier one, gt:cpu_kfirst, with column
    // functions and its 353-statement PARALLEL section in point runs in blocks, and 51 walked
    // (32 as mixed-type code).
    let by_points = || {
        wide || plan
            .sections
            .iter()
            .any(|sec| keeps_branches(sec.stmts.iter().map(|st| st.tape.as_slice())))
    };
    if plan.program.sections[s].loops.is_empty()
        && !(by_points()
            && (0..plan.sections.len()).all(|v| {
                plan.sections[v].order == IterOrder::Parallel || section_rules(plan, v, wide)
            }))
    {
        return false;
    }
    section_rules(plan, s, wide)
}

/// Whether PARALLEL section `s` can run inside a run walking columns (see [`group`]), level
/// after level, each level's statements in turn: [`section_rules`]' conditions (for a PARALLEL
/// section, what it writes it reads at its own point only). Its statements then compute, level
/// by level, what GT4Py's compute each over the whole column before the next (pace's
/// `fix_tracer`: four PARALLEL sections between its FORWARD and BACKWARD ones, which cut its
/// walk in five, each over every column).
fn parallel_in_walk(plan: &Plan, s: usize, wide: bool) -> bool {
    plan.sections[s].order == IterOrder::Parallel && section_rules(plan, s, wide)
}

/// The rules of [`section`] for section `s` apart from its loops: every statement can run at
/// its point in a point function, the section's levels one after another. In a PARALLEL
/// section a statement sees what the statements before it wrote at every level, so there what
/// the section writes is read at its own point only (not at another level either).
fn section_rules(plan: &Plan, s: usize, wide: bool) -> bool {
    section_rules_in(plan, s, wide, false)
}

/// [`section_rules`], where `one_region` allows every statement the first one's region.
fn section_rules_in(plan: &Plan, s: usize, wide: bool, one_region: bool) -> bool {
    let sec = &plan.sections[s];
    let n = sec.stmts.len();
    if n == 0 || (wide && !fields_native(plan, &sec.stmts)) {
        return false;
    }
    let region = if one_region {
        sec.stmts[0].region
    } else {
        None
    };
    let written: Vec<u32> = sec.stmts.iter().map(|st| st.target).collect();
    for st in &sec.stmts {
        if st.tape.is_empty()
            || !supported(&st.tape, wide)
            || st.k_offset != 0
            || st.region != region
            || st.reach != [0; 4]
            || sec.write_through.contains(&st.target)
        {
            return false;
        }
        for ins in &st.tape {
            if let Op::LoadK(q, _) = ins.op {
                if written.contains(&q) {
                    return false;
                }
            }
            for a in ins.args {
                let Src::Q(q, off) = a else { continue };
                if !written.contains(&q) {
                    continue;
                }
                let local = matches!(plan.kinds[q as usize], Kind::Local);
                if off[..2] != [0, 0]
                    || ((local || sec.order == IterOrder::Parallel) && off != [0; 3])
                {
                    return false;
                }
            }
        }
    }
    sec.flow
        .iter()
        .all(|f| f.next <= n && f.exit.is_none_or(|e| e <= n))
}

/// Whether tier two walks section `s` (code for `wide` lanes or not) level after level, each
/// level's rows of I in one call, as one point function ([`SectionSchedule::levels`]): a
/// section without loops, FORWARD or BACKWARD or else under a region, whose statements all
/// meet [`section_rules`] and share one region, which the walk's box is cut to. A vertical
/// section's blocks are one level each, and every block pays its set-up (buffers, K-only
/// fields spread over the block, each run's rows): pace's `ray_fast_wind_compute`, six such
/// sections under regions over 79 levels. A PARALLEL section under a region pays it on a box
/// of a few rows or columns (its three PARALLEL ones: 0.39 -> 0.32 ms per call); a PARALLEL
/// section over the whole domain keeps its blocks.
pub(crate) fn levels_walk(plan: &Plan, s: usize, wide: bool) -> bool {
    let sec = &plan.sections[s];
    let regional = sec.stmts.first().is_some_and(|st| st.region.is_some());
    (sec.order != IterOrder::Parallel || regional)
        && plan.program.sections[s].loops.is_empty()
        && section_rules_in(plan, s, wide, true)
}

/// Whether every field that the statements `stmts` read and write has an element type the
/// plan's lanes hold as they are ([`Lanes::native`]): compiled code then uses its memory in
/// place.
fn fields_native(plan: &Plan, stmts: &[StmtPlan]) -> bool {
    let native = |q: u32| match plan.kinds[q as usize] {
        Kind::Field { field, .. } => plan.lanes.native(plan.program.fields[field].ty),
        _ => true,
    };
    stmts.iter().all(|st| {
        native(st.target)
            && st.tape.iter().all(|ins| {
                let direct = match ins.op {
                    Op::LoadK(q, _) | Op::StoreK(q, _) => native(q),
                    _ => true,
                };
                direct
                    && ins
                        .args
                        .iter()
                        .all(|a| !matches!(*a, Src::Q(q, _) if !native(q)))
            })
    })
}

/// The end of the run of sections from `s` that walk columns as one point function (see
/// [`crate::gtscript::jit::point::build`]), each column through all of them in turn, as GT4Py's code walks a computation's
/// intervals: consecutive sections that each can (see [`section`]; after the first, also
/// PARALLEL sections that [`parallel_in_walk`] allows), none of which reads at a horizontal
/// offset what one of them writes. Each column's result then depends on that
/// column alone, so running a column through every section before the next column computes
/// what running each section over all columns does, and each column is read from memory
/// once instead of once per section. `s + 1` when section `s` walks alone; `s` when it
/// cannot walk.
pub(crate) fn group(plan: &Plan, s: usize, wide: bool) -> usize {
    if !section(plan, s, wide) {
        return s;
    }
    let mut e = s + 1;
    while e < plan.sections.len() && (section(plan, e, wide) || parallel_in_walk(plan, e, wide)) {
        let written: Vec<u32> = plan.sections[s..=e]
            .iter()
            .flat_map(|sec| sec.stmts.iter().map(|st| st.target))
            .collect();
        let apart = plan.sections[s..=e]
            .iter()
            .flat_map(|sec| &sec.stmts)
            .flat_map(|st| &st.tape)
            .flat_map(|ins| ins.args)
            .any(|a| matches!(a, Src::Q(q, off) if off[..2] != [0, 0] && written.contains(&q)));
        if apart {
            break;
        }
        e += 1;
    }
    e
}

/// Per statement of section `s`: where it starts a run of statements that one point function
/// runs in blocks, one past the run's last statement: a `while` loop that can ([`range`]) or,
/// in mixed-type code (`wide`, whose statements run one point per step anyway) and in a float
/// section that keeps its branches ([`keeps_branches`]: row functions, eight lanes a step, would
/// run almost every guarded arm), at least [`MIN_STRAIGHT`] consecutive statements outside
/// loops that can ([`straight`]): their values then stay in registers from statement to
/// statement instead of going through the block's buffers (pace's microphysics: hundreds of
/// small masked statements per section).
pub(crate) fn point_runs(plan: &Plan, s: usize, wide: bool) -> Vec<Option<usize>> {
    let stmts = &plan.sections[s].stmts;
    let n = stmts.len();
    let points = wide || keeps_branches(stmts.iter().map(|st| st.tape.as_slice()));
    let mut out = vec![None; n];
    let mut t = 0;
    while t < n {
        let end = range(plan, s, t, wide).or_else(|| {
            let e = if points {
                straight(plan, s, t, wide, MAX_STRAIGHT)
            } else {
                t
            };
            (e >= t + MIN_STRAIGHT).then_some(e)
        });
        out[t] = end;
        t = end.unwrap_or(t + 1);
    }
    out
}

/// Per statement of section `s`: where it starts a straight run of at least [`MIN_STRAIGHT`]
/// statements (see [`straight`]; `wide`: mixed-type code), one past its last statement (see
/// [`SectionSchedule::fused`]).
fn fused_runs(plan: &Plan, s: usize, wide: bool) -> Vec<Option<usize>> {
    let n = plan.sections[s].stmts.len();
    let mut out = vec![None; n];
    let mut t = 0;
    let sec = &plan.sections[s];
    while t < n {
        // One-float-type code that keeps its branches in the long run is not vectorised
        // either: its temporaries stay in registers over the whole run.
        let long = straight(plan, s, t, wide, MAX_FUSED_WIDE);
        let tapes = sec.stmts[t..long].iter().map(|st| st.tape.as_slice());
        // `straight` grows its run statement by statement: a shorter run is a prefix.
        let e = if wide || keeps_branches(tapes) {
            long
        } else {
            long.min(t + MAX_FUSED)
        };
        out[t] = (e >= t + MIN_STRAIGHT).then_some(e);
        t = out[t].unwrap_or(t + 1);
    }
    out
}

/// Per statement of section `s`: the block buffers handed over before it (see
/// [`SectionSchedule::handover`]). Statements run in units: a `while` loop, a point run
/// or a fused run of `sch` (overlapping ones merged) is one unit, as blocks run it whichever
/// code is ready; any other statement is one. A temporary of the section (`Kind::Local`:
/// it lives in this section's block buffers only) is live from the start of the unit that
/// first reads or writes it to the end of the unit that last does; its buffer goes to a
/// temporary whose life starts at or after that end, the earliest dead one first.
fn shared_buffers(plan: &Plan, s: usize, sch: &SectionSchedule) -> Vec<Vec<(u32, u32)>> {
    let sec = &plan.sections[s];
    let n = sec.stmts.len();
    // Each statement's unit: [start, end).
    let mut unit: Vec<(usize, usize)> = (0..n).map(|t| (t, t + 1)).collect();
    let loops = sec
        .flow
        .iter()
        .enumerate()
        .filter_map(|(t, f)| f.exit.map(|e| (t, e)));
    let runs = [&sch.point_loop, &sch.fused]
        .into_iter()
        .flat_map(|r| r.iter().enumerate().filter_map(|(t, e)| e.map(|e| (t, e))));
    let mut spans: Vec<(usize, usize)> = loops.chain(runs).collect();
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, b) in spans {
        match merged.last_mut() {
            Some(m) if a < m.1 => m.1 = m.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    for &(a, b) in &merged {
        unit[a..b.min(n)].fill((a, b.min(n)));
    }
    let shareable = |q: u32| {
        matches!(plan.kinds[q as usize], Kind::Local)
            && !sec.var_reads.contains(&q)
            && !sec.loads.iter().chain(&sec.stores).any(|x| x.q == q)
    };
    // Per quantity: (start of its first unit, end of its last).
    let mut life: Vec<Option<(usize, usize)>> = vec![None; plan.kinds.len()];
    for (t, st) in sec.stmts.iter().enumerate() {
        let touched = st.tape.iter().flat_map(Instr::quantities);
        for q in touched.chain([st.target]) {
            let (a, b) = unit[t];
            let l = life[q as usize].get_or_insert((a, b));
            *l = (l.0.min(a), l.1.max(b));
        }
    }
    let mut order: Vec<(usize, usize, u32)> = life
        .iter()
        .enumerate()
        .filter_map(|(q, l)| l.map(|(a, b)| (a, b, q as u32)))
        .filter(|&(_, _, q)| shareable(q))
        .collect();
    order.sort_unstable();
    let mut out = vec![Vec::new(); n];
    // Per buffer: its current holder and the end of the holder's life.
    let mut held: Vec<(u32, usize)> = Vec::new();
    for (start, end, q) in order {
        let free = held.iter_mut().filter(|h| h.1 <= start).min_by_key(|h| h.1);
        match free {
            Some(h) => {
                out[start].push((h.0, q));
                *h = (q, end);
            }
            None => held.push((q, end)),
        }
    }
    out
}

/// The most 3-D quantities (fields, stored temporaries) whose walks of levels keep several
/// tiles per thread (see `Schedule::for_layout`).
const CACHED_VOLUMES: usize = 8;

/// The fewest statements a straight point run has (see [`point_runs`]).
const MIN_STRAIGHT: usize = 2;

/// The most statements a straight point run has: longer runs are cut into runs of this many
/// (one function of a thousand statements, pace's saturation adjustment, took longer to
/// compile and to run than its rows).
const MAX_STRAIGHT: usize = 48;

/// The most statements a fused run has (see [`SectionSchedule::fused`]): C compiled by gcc in
/// the background, vectorised, keeps longer runs than Cranelift's point functions (pace's
/// `fix_neg_water`, 54 statements, in one run: 1.4 ms per call in runs of 48 and 6).
const MAX_FUSED: usize = 128;

/// The most statements a fused run of mixed-type code, or of one-float-type code that keeps its
/// branches ([`keeps_branches`]), has. pace's icloud read as one-float-type code (its 353
/// statements in one run) took 19 ms per call in runs of [`MAX_FUSED`] and 14.4 in one. gcc
/// compiles pace's satadjust, 817 statements in one run, in 1.4 s more than in runs of
/// [`MAX_STRAIGHT`], and runs it in 8.9 ms per call instead of 10.2 ms (its temporaries stay
/// in registers).
const MAX_FUSED_WIDE: usize = 1024;

/// The end of the longest run of statements from `t` of section `s`, outside every loop and
/// with no loop condition among them, that runs point by point: as [`range`] asks of a loop's
/// statements (compiled, at their own point over one box and one region, not written through,
/// what the run writes read only at the point itself or, in a FORWARD or BACKWARD section, at
/// other levels of its column), at most `max` statements. `t` where statement `t`
/// cannot start one. `wide`: mixed-type code (see [`supported`]).
fn straight(plan: &Plan, s: usize, t: usize, wide: bool, max: usize) -> usize {
    let sec = &plan.sections[s];
    if (0..t).any(|u| sec.flow[u].exit.is_some_and(|e| e > t)) {
        return t;
    }
    // What the run writes, and what it reads away from the point (at an offset or a run-time
    // level): the two must stay apart, whichever statement comes first. Blocks of a FORWARD
    // or BACKWARD section are one level each, run in the section's order: a read at another
    // level of the point's column is of memory no statement of the run writes at this level
    // (a level before it, final; or one after it, not yet written), so it is not apart,
    // where the quantity has levels in memory: not one that lives in one level's block
    // buffer (`Kind::Local`), nor one without the K axis (pace's `ray_fast_wind_compute`:
    // `dmdir = dmdir[0, 0, -1]`, then masked updates of `dmdir`). (A PARALLEL section never
    // reads at a K offset what it writes: the planner refuses that race, as GT4Py does.)
    let vertical = sec.order != IterOrder::Parallel;
    let along_column = |q: u32, off: [i32; 3]| {
        vertical
            && off[..2] == [0, 0]
            && !matches!(plan.kinds[q as usize], Kind::Local)
            && has_axis(plan, q, 2)
    };
    let mut written: Vec<u32> = Vec::new();
    let mut apart: Vec<u32> = Vec::new();
    let mut e = t;
    while let Some(st) = sec.stmts.get(e).filter(|_| e < t + max) {
        let flow = sec.flow[e];
        let mut reads_apart: Vec<u32> = Vec::new();
        for ins in &st.tape {
            if let Op::LoadK(q, _) = ins.op {
                reads_apart.push(q);
            }
            for a in ins.args {
                if let Src::Q(q, off) = a {
                    if off != [0; 3] && !along_column(q, off) {
                        reads_apart.push(q);
                    }
                }
            }
        }
        let fits = flow.exit.is_none()
            && flow.next == e + 1
            && !st.tape.is_empty()
            && supported(&st.tape, wide)
            && st.k_offset == 0
            && st.region == sec.stmts[t].region
            && st.reach == sec.stmts[t].reach
            && !sec.write_through.contains(&st.target)
            && !apart.contains(&st.target)
            && !reads_apart.contains(&st.target)
            && !reads_apart.iter().any(|q| written.contains(q));
        if !fits {
            break;
        }
        apart.extend(reads_apart);
        written.push(st.target);
        e += 1;
    }
    e
}

/// Where the loop whose condition is statement `t` of section `s` ends (one past its last
/// statement), if it can run point by point: `t` is a `while` condition outside any other loop;
/// every statement of the loop is compiled (`wide`: mixed-type code), writes at its own point
/// over the same box (no region, no K offset), not to a quantity read at run-time levels later
/// (written through at once by the block); and what the loop writes it reads only at the
/// point itself (not at an offset, not at a run-time level).
pub(crate) fn range(plan: &Plan, s: usize, t: usize, wide: bool) -> Option<usize> {
    let sec = &plan.sections[s];
    let exit = sec.flow.get(t)?.exit?;
    if (0..t).any(|u| sec.flow[u].exit.is_some_and(|e| e > t)) {
        return None;
    }
    let stmts = sec.stmts.get(t..exit)?;
    let written: Vec<u32> = stmts.iter().map(|st| st.target).collect();
    for st in stmts {
        if st.tape.is_empty()
            || !supported(&st.tape, wide)
            || st.k_offset != 0
            || st.region.is_some()
            || st.reach != stmts[0].reach
            || sec.write_through.contains(&st.target)
        {
            return None;
        }
        for ins in &st.tape {
            if let Op::LoadK(q, _) = ins.op {
                if written.contains(&q) {
                    return None;
                }
            }
            for a in ins.args {
                if let Src::Q(q, off) = a {
                    if written.contains(&q) && off != [0; 3] {
                        return None;
                    }
                }
            }
        }
    }
    let inside = |x: usize| (t..=exit).contains(&x);
    let flows_stay = sec.flow[t..exit]
        .iter()
        .all(|f| inside(f.next) && f.exit.is_none_or(inside));
    flows_stay.then_some(exit)
}
