//! Which code tier two writes for the C compiler's vectoriser and which as scalar code with
//! branches, and where the vectorised code computes its guarded math in chunks of points: the
//! rules `cgen::source` asks when it writes a fused run or a walk of levels.

use crate::gtscript::cgen::tape::{vectorises_wide, MathTable};
use crate::gtscript::jit::point::PointRange;
use crate::gtscript::plan::guarded::{chunks_pay, keeps_branches};
use crate::gtscript::plan::schedule::{has_axis, PointWalk};
use crate::gtscript::plan::{Lanes, Op, Plan, SectionPlan, StmtPlan};

/// Whether straight statements are written for the vectoriser (masks and blends, every guarded
/// arm computed at every point, or in chunks where the guarded math outweighs the rest, see
/// [`chunks_pay`]), not as scalar code with branches.
///
/// - Not where the statements keep their branches ([`keeps_branches`]): guarded math that
///   outweighs the rest, spread over many guarded runs. pace's icloud read as one-float-type
///   code (its `[0, 0, +1]` as constant offsets, the only integers of its program being run-time
///   levels) took 70 ms per call in chunks and 19 ms with branches on `gridbuf:cpu_ifirst`.
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
    let tapes = stmts.iter().map(|st| st.tape.as_slice());
    if keeps_branches(tapes.clone()) {
        return false;
    }
    let chunks = chunks_pay(tapes);
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
