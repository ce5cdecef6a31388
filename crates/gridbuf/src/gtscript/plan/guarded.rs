//! The guarded math of a run of statements: whether tier two's code for the vectoriser computes
//! it in chunks of points ([`chunks_pay`]), and where it keeps branches instead
//! ([`keeps_branches`]). The schedule asks these when it sizes fused runs and the C emitter
//! when it writes them: one rule for both.

use crate::gtscript::plan::{Instr, Op};

/// What a math function's call costs, in operations (see [`chunks_pay`]): a call of the vector
/// library takes about as long as a few dozen arithmetic instructions on the same vector.
const MATH_COST: usize = 32;

/// Whether the points of the code for the vectoriser of `tapes` (one statement's, or a run's)
/// go in chunks (`cgen::source::CHUNK`): where a guarded run calls a math function, and the
/// guarded runs' operations (each math call counted as [`MATH_COST`]) are at least as many as
/// those outside them, which a chunk's test loop computes a second time. pace's `m_loop` has a
/// fused run of over 500 operations whose guarded runs hold a few dozen: in chunks its call
/// took 1.5 times as long.
pub(crate) fn chunks_pay<'t>(tapes: impl IntoIterator<Item = &'t [Instr]>) -> bool {
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

/// The most outermost guarded runs whose math code for the vectoriser computes in chunks (see
/// [`keeps_branches`]): warm_rain's mixed-type runs of 5 took 9.3 -> 9.7 ms per call in
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

/// Whether the statements of `tapes` keep their branches in tier two's C, whatever their
/// types: their guarded math outweighs the rest ([`chunks_pay`]) and spreads over more than
/// [`MAX_GUARDS`] outermost guarded runs. A chunk computes every guarded run where one of its
/// points takes one, and with many, some point of almost every chunk does, where branches
/// compute only the runs each point takes. pace's icloud (28 in its fused run) took 13.5 ->
/// 63 ms per call in chunks.
pub(crate) fn keeps_branches<'t>(tapes: impl IntoIterator<Item = &'t [Instr]> + Clone) -> bool {
    chunks_pay(tapes.clone()) && tapes.into_iter().map(outer_guards).sum::<usize>() > MAX_GUARDS
}
