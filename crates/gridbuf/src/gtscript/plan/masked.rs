//! Masked statements in scalar code: which tape is a masked assignment, its computed arm moved
//! into a guarded run so it is computed only where the select takes it, and which values a
//! later statement of the same part computes again (those stay unguarded).

use crate::gtscript::ir::Ty;
use crate::gtscript::plan::tape::{ArgKey, Instr, Key, Op, Src, ZERO_SRC};
use std::collections::HashMap;

/// Where the tape of a statement writing `target` is a masked assignment (`if mask: target =
/// value`): its last instruction selects between a new value and `target`'s own at the point,
/// on a condition read from a quantity; it writes at no run-time K level, and reads at one
/// only at a level that the same condition selects, level 0 where it does not take the new
/// value (the lowering's guard for reads inside an `if`, always inside the field: so skipping
/// such a read reports no fewer errors than making it). Then every other instruction
/// computes the new value, so code may run the whole tape only where the select takes it, as
/// GT4Py's compiled backends run an `if` block. Returns the condition's quantity and offset,
/// and whether the new value is taken where the condition holds (else where it does not).
pub(crate) fn masked_assignment(tape: &[Instr], target: u32) -> Option<((u32, [i32; 3]), bool)> {
    let (last, arm) = masked_select(tape, target)?;
    let Src::Q(q, off) = last.args[0] else {
        return None;
    };
    let then = arm == 1;
    if !tape
        .iter()
        .any(|i| matches!(i.op, Op::LoadK(..) | Op::StoreK(..)))
    {
        return Some(((q, off), then));
    }
    // Writers are looked up only for tapes with run-time K reads (the C of every statement is
    // written on a first call's path).
    let writers = operand_writers(tape);
    // A read at a run-time K level whose level is the select's own condition's choice, with
    // level 0 where the select keeps the old value.
    let level_guarded = |at: usize| {
        writers[at][0].is_some_and(|w| {
            let d = &tape[w];
            d.op == Op::Sel && d.args[0] == last.args[0] && d.args[3 - arm] == ZERO_SRC
        })
    };
    let k_ok = tape.iter().enumerate().all(|(at, i)| match i.op {
        Op::LoadK(..) => level_guarded(at),
        Op::StoreK(..) => false,
        _ => true,
    });
    k_ok.then_some(((q, off), then))
}

/// The last instruction of a masked assignment's tape (`if mask: target = value`), a select
/// with `target`'s own value at the point as exactly one of its arms, and which operand is
/// the new value: 1 where the select takes it where its condition holds, 2 where it fails.
fn masked_select(tape: &[Instr], target: u32) -> Option<(&Instr, usize)> {
    let last = tape.last().filter(|i| i.op == Op::Sel)?;
    let own = Src::Q(target, [0; 3]);
    match (last.args[1] == own, last.args[2] == own) {
        (false, true) => Some((last, 1)),
        (true, false) => Some((last, 2)),
        _ => None,
    }
}

/// Per instruction of `tape`, per operand: the position of the instruction whose value it
/// reads, the last one before it that writes its register (markers write none); None for an
/// operand that is no register, or a register nothing wrote before.
fn operand_writers(tape: &[Instr]) -> Vec<[Option<usize>; 3]> {
    let mut writer: HashMap<u32, usize> = HashMap::new();
    let mut reads = Vec::with_capacity(tape.len());
    for (at, ins) in tape.iter().enumerate() {
        let mut from = [None; 3];
        for (k, a) in ins.args.iter().enumerate() {
            if let Src::Reg(r) = a {
                from[k] = writer.get(r).copied();
            }
        }
        reads.push(from);
        if !ins.op.is_marker() {
            writer.insert(ins.dst, at);
        }
    }
    reads
}

/// The fewest instructions of its own the computed arm of a select with a computed condition
/// takes for [`guarded_masked_arm`] to guard them: fewer cost no more than the test.
const MIN_MASKED_ARM: usize = 3;

/// The tape of a statement whose last instruction selects between a value the tape computes
/// (a register) and one it does not (the target's own value at the point, as in a masked
/// assignment, another quantity, a scalar or a literal, as in a function's value spilled under
/// a mask), reordered: the instructions the condition needs, then the ones only the computed
/// value needs in a guarded run on the condition, then the select. Scalar code then computes
/// the value only where the select takes it, as GT4Py's `if` does (pace's `fix_tracer` divided
/// at every point of its final check, where almost no column takes it: 0.875 -> 0.705 ms per
/// call at C48 with the run hand-written; pace's icloud computed four square roots per point
/// for values its own conditions then replaced by zero). The condition is a register the
/// statement computes (a mask temporary the core's inliner folds into its readers; a
/// condition read from a quantity with the target as the other arm is [`masked_assignment`]'s
/// case). `repeated`, per instruction of `tape` (missing ones: false), marks values a later
/// statement computes again ([`repeated_later`]): they stay before the guard. None where the
/// tape is no such select, has guarded runs already, reads or writes at run-time K levels
/// (whose levels every point checks), or the computed value takes fewer than
/// [`MIN_MASKED_ARM`] instructions of its own, not repeated. Every instruction of the new
/// tape writes a register of its own (its position in `tape`), so moving one never reorders
/// two writes of a register. The operations are pure: each point gets the value it got before,
/// bit for bit.
pub(crate) fn guarded_masked_arm(tape: &[Instr], repeated: &[bool]) -> Option<Vec<Instr>> {
    let n = tape.len();
    let last = tape.last().filter(|i| i.op == Op::Sel)?;
    let computed = |k: usize| matches!(last.args[k], Src::Reg(_));
    let arm = match (computed(1), computed(2)) {
        (true, false) => 1,
        (false, true) => 2,
        _ => return None,
    };
    let then = arm == 1;
    if tape
        .iter()
        .any(|i| i.op.is_marker() || matches!(i.op, Op::LoadK(..) | Op::StoreK(..)))
    {
        return None;
    }
    let reads = operand_writers(tape);
    let unwritten = tape.iter().zip(&reads).any(|(ins, from)| {
        ins.args
            .iter()
            .zip(from)
            .any(|(a, w)| matches!(a, Src::Reg(_)) && w.is_none())
    });
    if unwritten {
        return None;
    }
    let needed = |root: usize| {
        let mut keep = vec![false; n];
        let mut stack = vec![root];
        while let Some(at) = stack.pop() {
            if !std::mem::replace(&mut keep[at], true) {
                stack.extend(reads[at].iter().flatten());
            }
        }
        keep
    };
    let (cond_at, value_at) = (reads[n - 1][0]?, reads[n - 1][arm]?);
    let cond = needed(cond_at);
    let value = needed(value_at);
    // What a later statement computes again stays before the guard, computed at every point,
    // where the compiler computes it once for both (see [`repeated_later`]).
    let own = |at: usize| value[at] && !cond[at] && !repeated.get(at).copied().unwrap_or(false);
    let own_run: Vec<usize> = (0..n - 1).filter(|&at| own(at)).collect();
    if own_run.len() < MIN_MASKED_ARM {
        return None;
    }
    let renamed = |at: usize| {
        let mut ins = tape[at];
        ins.dst = at as u32;
        for (k, a) in ins.args.iter_mut().enumerate() {
            if let Some(w) = reads[at][k] {
                *a = Src::Reg(w as u32);
            }
        }
        ins
    };
    // Instructions neither side needs (none, from the lowering) stay before the guard.
    let mut out: Vec<Instr> = (0..n - 1).filter(|&at| !own(at)).map(renamed).collect();
    out.push(Instr {
        op: Op::Guard(then),
        dst: 0,
        args: [Src::Reg(cond_at as u32), ZERO_SRC, ZERO_SRC],
        ty: Ty::Bool,
    });
    out.extend(own_run.into_iter().map(renamed));
    out.push(Instr {
        op: Op::End,
        dst: value_at as u32,
        args: [ZERO_SRC; 3],
        ty: Ty::Bool,
    });
    out.push(renamed(n - 1));
    Some(out)
}

/// For statements that run one after another at each point (`stmts`: each one's tape and
/// target, in order), per instruction of each tape: whether a later statement's tape computes
/// the same value (the same operation on the same values: the same quantities read with no
/// write of them between, the same scalars and literals). A compiler computes such a value
/// once for both where the first is computed at every point, and cannot where
/// [`guarded_masked_arm`] would guard it (pace's `warm_rain`: a statement under `w20 | w14`
/// divides by terms the next statement, under `w20`, divides by again; guarded, its hot runs
/// took 4-10 % longer). Run-time K reads and writes, and guarded runs, are never the same.
pub(crate) fn repeated_later<'a>(
    stmts: impl IntoIterator<Item = (&'a [Instr], u32)>,
) -> Vec<Vec<bool>> {
    let mut numbers: HashMap<Key, u32> = HashMap::new();
    let mut writes: HashMap<u32, u32> = HashMap::new();
    let mut per_stmt: Vec<Vec<Option<u32>>> = Vec::new();
    for (tape, target) in stmts {
        let from = operand_writers(tape);
        let mut nums: Vec<Option<u32>> = Vec::with_capacity(tape.len());
        let mut guarded = 0usize;
        for (ins, from) in tape.iter().zip(&from) {
            match ins.op {
                Op::Guard(_) => guarded += 1,
                Op::End => guarded = guarded.saturating_sub(1),
                _ => {}
            }
            let plain = guarded == 0
                && !ins.op.is_marker()
                && !matches!(ins.op, Op::LoadK(..) | Op::StoreK(..));
            let mut args = [ArgKey::I(0); 3];
            let mut known = plain;
            for (k, a) in ins.args.iter().enumerate() {
                args[k] = match *a {
                    Src::Reg(_) => match from[k].and_then(|w| nums[w]) {
                        Some(v) => ArgKey::Val(v),
                        None => {
                            known = false;
                            break;
                        }
                    },
                    Src::Q(q, _) => ArgKey::of(*a, writes.get(&q).copied().unwrap_or(0)),
                    src => ArgKey::of(src, 0),
                };
            }
            nums.push(known.then(|| {
                let next = numbers.len() as u32;
                *numbers.entry(Key(ins.op, ins.ty, args)).or_insert(next)
            }));
        }
        per_stmt.push(nums);
        *writes.entry(target).or_insert(0) += 1;
    }
    // The last statement each value number appears in.
    let mut last = vec![0usize; numbers.len()];
    for (u, nums) in per_stmt.iter().enumerate() {
        for v in nums.iter().flatten() {
            last[*v as usize] = u;
        }
    }
    per_stmt
        .iter()
        .enumerate()
        .map(|(u, nums)| {
            nums.iter()
                .map(|v| v.is_some_and(|v| last[v as usize] > u))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gtscript::compile;
    use crate::gtscript::ir::{BinOp, UnOp};

    /// The tape of the first statement of `text`.
    fn tape(text: &str) -> Vec<Instr> {
        compile(text).unwrap().sections[0].stmts[0].tape.clone()
    }

    #[test]
    fn a_masked_assignment_with_a_computed_condition_guards_its_own_value() {
        let head = "stencil s float64\nfield a IJK\nfield b IJK\nfield c IJK\ncomp PARALLEL\ninterval S 0 E 0\n";
        let cond = "and gt f 0 0 0 0 0 lit float64 0.0 gt f 1 0 0 0 0 lit float64 0.0";
        let value =
            "add sqrt div mul f 0 0 0 0 0 f 1 0 0 0 0 f 1 0 0 0 0 sqrt mul f 0 0 0 0 0 f 0 0 0 0 0";
        // `c` is quantity 2; the condition and the value share nothing.
        let t = tape(&format!(
            "{head}stmt 1 f 2 0 sel {cond} {value} f 2 0 0 0 0\n"
        ));
        assert!(masked_assignment(&t, 2).is_none());
        let g = guarded_masked_arm(&t, &[]).unwrap();
        let at = |op: Op| g.iter().position(|i| i.op == op).unwrap();
        let guard = at(Op::Guard(true));
        assert_eq!(g.iter().filter(|i| i.op.is_marker()).count(), 2);
        assert!(at(Op::Bin(BinOp::And)) < guard && at(Op::End) == g.len() - 2);
        let div = |i: &Instr| {
            matches!(
                i.op,
                Op::Bin(BinOp::Div) | Op::Bin2(BinOp::Div, _) | Op::Bin2(_, BinOp::Div)
            )
        };
        assert!(g[guard..].iter().any(div) && !g[..guard].iter().any(div));
        assert_eq!(g.last().unwrap().op, Op::Sel);
        // Every operation kept, each writing a register of its own.
        let ops = |t: &[Instr]| t.iter().filter(|i| !i.op.is_marker()).count();
        assert_eq!(ops(&g), ops(&t));
        let mut dst: Vec<u32> = g
            .iter()
            .filter(|i| !i.op.is_marker())
            .map(|i| i.dst)
            .collect();
        dst.sort_unstable();
        dst.dedup();
        assert_eq!(dst.len(), ops(&g));
        // The value taken where the condition fails: the guard's other side.
        let t = tape(&format!(
            "{head}stmt 1 f 2 0 sel {cond} f 2 0 0 0 0 {value}\n"
        ));
        assert!(guarded_masked_arm(&t, &[])
            .unwrap()
            .iter()
            .any(|i| i.op == Op::Guard(false)));
        // A value of fewer instructions than the test is worth: none.
        let t = tape(&format!(
            "{head}stmt 1 f 2 0 sel {cond} add f 0 0 0 0 0 f 1 0 0 0 0 f 2 0 0 0 0\n"
        ));
        assert!(guarded_masked_arm(&t, &[]).is_none());
        // Another quantity or a literal as the other arm (a function's value spilled under a
        // mask takes zero elsewhere): the computed arm is guarded all the same.
        for other in ["f 0 0 0 0 0", "lit float64 0.0"] {
            let t = tape(&format!("{head}stmt 1 f 2 0 sel {cond} {value} {other}\n"));
            let g = guarded_masked_arm(&t, &[]).unwrap();
            let guard = g.iter().position(|i| i.op == Op::Guard(true)).unwrap();
            assert!(g[guard..].iter().any(div) && !g[..guard].iter().any(div));
            assert_eq!(ops(&g), ops(&t));
        }
        // Both arms computed: none.
        let t = tape(&format!(
            "{head}stmt 1 f 2 0 sel {cond} {value} mul {value} f 1 0 0 0 0\n"
        ));
        assert!(guarded_masked_arm(&t, &[]).is_none());
    }

    #[test]
    fn what_a_later_statement_computes_again_stays_unguarded() {
        let head = "stencil s float64\nfield a IJK\nfield b IJK\nfield c IJK\nfield d IJK\ncomp PARALLEL\ninterval S 0 E 0\n";
        let cond = "gt f 0 0 0 0 0 lit float64 0.0";
        let shared = "div mul f 0 0 0 0 0 f 1 0 0 0 0 f 1 0 0 0 0";
        let value = format!("add sqrt {shared} sqrt mul f 0 0 0 0 0 f 0 0 0 0 0");
        let first = format!("stmt 1 f 2 0 sel {cond} {value} lit float64 0.0\n");
        let again = format!("stmt 1 f 3 0 {shared}\n");
        let is_div = |i: &Instr| matches!(i.op, Op::Bin(BinOp::Div) | Op::Bin2(_, BinOp::Div));
        let numbered = |text: &str| {
            let p = compile(&format!("{head}{text}")).unwrap();
            let stmts = &p.sections[0].stmts;
            let rep = repeated_later(stmts.iter().map(|st| (&st.tape[..], st.target)));
            (stmts[0].tape.clone(), rep)
        };
        // The division the next statement repeats is computed before the guard; the rest of
        // the arm is guarded, and nothing of the last statement counts as repeated.
        let (t, rep) = numbered(&format!("{first}{again}"));
        assert!(t.iter().zip(&rep[0]).any(|(i, &r)| is_div(i) && r));
        assert!(rep[1].iter().all(|&r| !r));
        let g = guarded_masked_arm(&t, &rep[0]).unwrap();
        let guard = g.iter().position(|i| i.op == Op::Guard(true)).unwrap();
        assert!(g[..guard].iter().any(is_div) && !g[guard..].iter().any(is_div));
        assert!(g[guard..].iter().any(|i| i.op == Op::Un(UnOp::Sqrt)));
        // A write of `a` between the two: the later division reads another value of `a`.
        let (t, rep) = numbered(&format!("{first}stmt 1 f 0 0 f 1 0 0 0 0\n{again}"));
        assert!(rep[0].iter().all(|&r| !r));
        let g = guarded_masked_arm(&t, &rep[0]).unwrap();
        let guard = g.iter().position(|i| i.op == Op::Guard(true)).unwrap();
        assert!(g[guard..].iter().any(is_div) && !g[..guard].iter().any(is_div));
        // An arm guarded alone, all of it repeated: none.
        let arm = format!("sqrt add {shared} lit float64 1.0");
        let small = format!("stmt 1 f 2 0 sel {cond} {arm} lit float64 0.0\n");
        let (t, rep) = numbered(&format!("{small}stmt 1 f 3 0 {arm}\n"));
        assert!(guarded_masked_arm(&t, &[]).is_some());
        assert!(guarded_masked_arm(&t, &rep[0]).is_none());
    }
}
