//! Which code tier two writes for the C compiler's vectoriser and which as scalar code with
//! branches, and where the vectorised code computes its guarded math in chunks of points: the
//! rules `cgen::source` asks when it writes a fused run or a walk of levels.

use crate::gtscript::cgen::tape::{vectorises_wide, MathTable};
use crate::gtscript::jit::point::PointRange;
use crate::gtscript::plan::schedule::{has_axis, PointWalk};
use crate::gtscript::plan::{Instr, Lanes, Op, Plan, SectionPlan, StmtPlan};

/// Whether straight statements are written for the vectoriser (masks and blends, every guarded
/// arm computed at every point, or in chunks where the guarded math outweighs the rest, see
/// [`chunks_pay`]), not as scalar code with branches.
///
/// - Not where the guarded math outweighs the rest and spreads over more than
///   [`MAX_GUARDS`] outermost guarded runs: a chunk computes every guarded run where one of its
///   points takes one, and with many, some point of almost every chunk does, where branches
///   compute only the runs each point takes. pace's icloud (28 in its fused run) took 13.5 ->
///   63 ms per call in chunks; read as one-float-type code (its `[0, 0, +1]` as constant
///   offsets, the only integers of its program being those run-time levels), 70 ms in chunks
///   and 19 ms with branches, on `gridbuf:cpu_ifirst`.
/// - Else always in one-float-type code.
/// - In mixed-type code where it has no guarded arms, or where they call no math function.
///   Guarded math computed everywhere costs more than the branches save: with every mixed-type
///   run vectorised, pace's satadjust took 37 -> 54 ms per call on `gridbuf:cpu_ifirst` and
///   icloud 22 -> 50. Without guarded math the blends win: set_interpolation_coefficients
///   took 14 % longer with scalar code's masked-assignment `if`s, and see
///   [`levels_walk_vectorises`].
/// - In mixed-type code whose guarded math is computed in chunks, where gcc vectorises every
///   instruction ([`vectorises_wide`]): a chunk computes the math with libmvec at all its
///   points where one point takes it. pace's sedimentation computes its fall speeds' `log` and
///   `exp` at almost every point (9.0 -> 7.9 ms per call on `gridbuf:cpu_ifirst`).
pub(super) fn for_vectoriser(plan: &Plan, stmts: &[StmtPlan], math: &MathTable) -> bool {
    let tape = || stmts.iter().flat_map(|st| &st.tape);
    let chunks = chunks_pay(stmts.iter().map(|st| st.tape.as_slice()));
    if chunks && stmts.iter().map(|st| outer_guards(&st.tape)).sum::<usize>() > MAX_GUARDS {
        return false;
    }
    plan.lanes != Lanes::Wide
        || tape().all(|ins| !matches!(ins.op, Op::Guard(_)))
        || tape().all(|ins| !ins.op.calls_math(ins.ty))
        || (chunks && tape().all(|ins| vectorises_wide(ins, math)))
}

/// What a point function of `parts` (code for the vectoriser where `vector`) starts with:
/// `GB_NOTHREAD` (no jump threading) where a part of mixed-type code computes guarded math in
/// chunks, in whose loops gcc's jump threading put branches back (warm_rain's stayed scalar).
pub(super) fn nothread(plan: &Plan, parts: &[(usize, PointRange)], vector: bool) -> &'static str {
    let chunks = parts.iter().any(|(s, r)| {
        chunks_pay(
            plan.sections[*s].stmts[r.first..r.exit]
                .iter()
                .map(|st| st.tape.as_slice()),
        )
    });
    if vector && plan.lanes == Lanes::Wide && chunks {
        "GB_NOTHREAD "
    } else {
        ""
    }
}

/// The most outermost guarded runs whose math code for the vectoriser computes in chunks (see
/// [`for_vectoriser`]): warm_rain's mixed-type runs of 5 took 9.3 -> 9.7 ms per call in
/// chunks, where its runs of 1 and sedimentation's of 3 gain.
const MAX_GUARDS: usize = 3;

/// The number of outermost guarded runs of `tape`.
fn outer_guards(tape: &[Instr]) -> usize {
    let (mut depth, mut n) = (0usize, 0);
    for ins in tape {
        match ins.op {
            Op::Guard(_) => {
                n += usize::from(depth == 0);
                depth += 1;
            }
            Op::End => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    n
}

/// Whether statements `range` of section `sec` run in order with no jumps (no loops).
pub(super) fn straight(sec: &SectionPlan, range: std::ops::Range<usize>) -> bool {
    range
        .into_iter()
        .all(|u| sec.flow[u].exit.is_none() && sec.flow[u].next == u + 1)
}

/// Whether a walk of levels (points along I: no point reads what another point of its level
/// writes) is written for the vectoriser: each part straight code ([`for_vectoriser`]), with
/// no run-time K reads (whose errors are reported in point order) and every quantity it writes
/// along I (else every point of a row would store to one place). Scalar code with branches,
/// pace's fix_tracer took 0.68 ms per call on `gridbuf:cpu_ifirst` and apply_constraints 1.15;
/// vectorised, 0.38 and 0.43 (GT4Py's best compiled: 0.31 and 0.50).
pub(super) fn levels_walk_vectorises(
    plan: &Plan,
    parts: &[(usize, PointRange)],
    math: &MathTable,
) -> bool {
    let axis = PointWalk::Levels.axis();
    parts.iter().all(|(s, r)| {
        let sec = &plan.sections[*s];
        let stmts = &sec.stmts[r.first..r.exit];
        straight(sec, r.first..r.exit)
            && stmts.iter().all(|st| has_axis(plan, st.target, axis))
            && stmts
                .iter()
                .flat_map(|st| &st.tape)
                .all(|ins| !matches!(ins.op, Op::LoadK(..) | Op::StoreK(..)))
            && for_vectoriser(plan, stmts, math)
    })
}

/// What a math function's call costs, in operations (see [`chunks_pay`]): a call of the vector
/// library takes about as long as a few dozen arithmetic instructions on the same vector.
const MATH_COST: usize = 32;

/// Whether the points of the code for the vectoriser of `tapes` (one statement's, or a run's)
/// go in chunks ([`CHUNK`](super::source::CHUNK)): where a guarded run calls a math function, and the guarded runs'
/// operations (each math call counted as [`MATH_COST`]) are at least as many as those outside
/// them, which a chunk's test loop computes a second time. pace's `m_loop` has a fused run of
/// over 500 operations whose guarded runs hold a few dozen: in chunks its call took 1.5 times
/// as long.
pub(super) fn chunks_pay<'t>(tapes: impl IntoIterator<Item = &'t [Instr]>) -> bool {
    let (mut inside, mut outside, mut math) = (0usize, 0usize, false);
    for tape in tapes {
        let mut depth = 0usize;
        for ins in tape {
            match ins.op {
                Op::Guard(_) => depth += 1,
                Op::End => depth = depth.saturating_sub(1),
                _ if depth == 0 => outside += 1,
                op if op.calls_math(ins.ty) => {
                    math = true;
                    inside += MATH_COST;
                }
                _ => inside += 1,
            }
        }
    }
    math && inside >= outside
}
