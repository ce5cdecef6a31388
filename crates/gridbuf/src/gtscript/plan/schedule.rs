//! Which executor runs each section and `while` loop of a plan: built once per plan and
//! code generation on or off, read per layout.

use crate::gtscript::ir::{BinOp, IterOrder};
use crate::gtscript::plan::{Instr, Kind, Op, Plan, Src};

/// How a section's point function walks a tile: the point axis (K: each column's levels in
/// the section's order, for layouts with unit stride along K; I: each level's rows, levels in
/// the section's order); rows run along J either way.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum PointWalk {
    /// Points along K, one call per column of I.
    Columns,
    /// Points along I, one call per level.
    Levels,
}

impl PointWalk {
    /// The point axis.
    pub(crate) fn axis(self) -> usize {
        match self {
            PointWalk::Columns => 2,
            PointWalk::Levels => 0,
        }
    }
}

/// Whether the code generator handles every operation of `tape` (an integer power needs a
/// literal exponent, which the types pass guarantees; reads at run-time K levels only in
/// mixed-type code, `wide`).
pub(crate) fn supported(tape: &[Instr], wide: bool) -> bool {
    tape.iter().all(|ins| match ins.op {
        Op::LoadK(..) => wide,
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

/// Whether statement `v` of section `s` has surely run, in the current pass of every loop that
/// holds it, when statement `u` runs (`v < u`, both in `range`): every loop in `range` whose
/// body holds `v` holds `u` too (a loop's body may run no pass).
fn runs_before(plan: &Plan, s: usize, range: &std::ops::Range<usize>, v: usize, u: usize) -> bool {
    let flow = &plan.sections[s].flow;
    v < u
        && range.clone().all(|c| match flow[c].exit {
            Some(e) if c < v && v < e => c < u && u < e,
            _ => true,
        })
}

/// The quantities statement `u` (or the range's end, `u == range.end`) can take from earlier
/// statements of `range` in every pass (see [`runs_before`]).
pub(crate) fn surely_written(
    plan: &Plan,
    s: usize,
    range: &std::ops::Range<usize>,
    u: usize,
) -> Vec<u32> {
    let sec = &plan.sections[s];
    (range.start..u)
        .filter(|&v| runs_before(plan, s, range, v, u))
        .map(|v| sec.stmts[v].target)
        .collect()
}

/// Whether section `s` can run as one point function over its whole box, point after point
/// (see [`PointRange`] with `section`): a FORWARD or BACKWARD section with `while` loops,
/// every statement compiled (`wide`: mixed-type code), computed over the core only, at its own
/// point (no region, no K offset); what the section writes it reads at its own point or at
/// other levels (no horizontal offset, no run-time level); every temporary that lives in one
/// level is written, in every pass, before it is read. Then each point's result depends on that
/// point alone and on other levels, so the points of one level can run in any order, and the
/// levels of a column, walked in the section's order, after one another.
pub(crate) fn section(plan: &Plan, s: usize, wide: bool) -> bool {
    let sec = &plan.sections[s];
    let n = sec.stmts.len();
    if sec.order == IterOrder::Parallel || n == 0 || plan.program.sections[s].loops.is_empty() {
        return false;
    }
    let written: Vec<u32> = sec.stmts.iter().map(|st| st.target).collect();
    let range = 0..n;
    for (u, st) in sec.stmts.iter().enumerate() {
        if st.tape.is_empty()
            || !supported(&st.tape, wide)
            || st.k_offset != 0
            || st.region.is_some()
            || st.reach != [0; 4]
            || sec.write_through.contains(&st.target)
        {
            return false;
        }
        let sure = surely_written(plan, s, &range, u);
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
                if off[..2] != [0, 0]
                    || (matches!(plan.kinds[q as usize], Kind::Local)
                        && (off != [0; 3] || !sure.contains(&q)))
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

/// The end of the run of sections from `s` that walk columns as one point function (see
/// [`build`]), each column through all of them in turn, as GT4Py's code walks a computation's
/// intervals: consecutive sections that each can (see [`section`]), none of which reads at a
/// horizontal offset what one of them writes. Each column's result then depends on that
/// column alone, so running a column through every section before the next column computes
/// what running each section over all columns does, and each column is read from memory
/// once instead of once per section. `s + 1` when section `s` walks alone; `s` when it
/// cannot walk.
pub(crate) fn group(plan: &Plan, s: usize, wide: bool) -> usize {
    if !section(plan, s, wide) {
        return s;
    }
    let mut e = s + 1;
    while e < plan.sections.len() && section(plan, e, wide) {
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
