//! Register tapes: a statement's expression compiled to a list of instructions over
//! registers, quantities at offsets, scalars and literals (what the interpreter and the
//! machine-code generator both run), and the quantity numbering the tapes address.

use crate::gtscript::ir::{Access, BinOp, Expr, KIndex, Program, Ty, UnOp, Value};
use crate::gtscript::ops;
use crate::gtscript::passes::types::{bin_types, type_of, un_types};
use std::collections::HashMap;

/// An operand of a tape instruction.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Src {
    /// A register holding the result of an earlier instruction of the same tape.
    Reg(u32),
    /// A quantity's block buffer at an offset (I, J, K).
    Q(u32, [i32; 3]),
    /// A scalar parameter.
    Scalar(u32),
    /// A literal (of the instruction's operand type).
    Const(Value),
}

/// The constant zero, for unused operands.
pub(crate) const ZERO_SRC: Src = Src::Const(Value::I(0));

/// A tape operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Copy of `a`.
    Mov,
    /// A unary operator on `a`.
    Un(UnOp),
    /// A binary operator on `a`, `b`.
    Bin(BinOp),
    /// `b` where `a` is nonzero, else `c`.
    Sel,
    /// `a` converted to a type (from the instruction's operand type).
    Cast(Ty),
    /// `(a op1 b) op2 c` in one pass, for two arithmetic operators (`Add`, `Sub`, `Mul`,
    /// `Div`): the same two roundings as two instructions.
    Bin2(BinOp, BinOp),
    /// The value of quantity `q` at the point's I and J and the K level given by the integer
    /// `a` (of the instruction's type): the point's level plus `a`, or `a` itself (see
    /// [`KIndex`]), read from the quantity's memory, checked against its K range (an error
    /// names the quantity and the level). The result has the quantity's type.
    LoadK(u32, KIndex),
    /// Stores `b` (of the instruction's type, the target's) into quantity `q`'s memory at the
    /// point's I and J and the level of the point plus the integer `a` (of the given type),
    /// checked against its K range (an error names the quantity and the level). The last
    /// instruction of a statement that writes at a run-time level; its register is unused.
    StoreK(u32, Ty),
    /// The start of a guarded run (see [`guard`]): the instructions up to the matching
    /// [`Op::End`] compute one arm of a select, needed only at the points where `a` (the
    /// select's boolean) is true (`Guard(true)`, the second operand) or false (`Guard(false)`,
    /// the third). Code may skip the run where none of the points it computes at once needs
    /// it; the run's registers are then undefined there, and only that select reads them.
    /// Writes no register.
    Guard(bool),
    /// The end of a guarded run; `dst` is the register of the arm's value (written by the
    /// run's last instruction).
    End,
}

impl Op {
    /// Whether this operation on values of type `ty` calls a math function (no instruction
    /// computes it): what makes an arm worth guarding, and what tier two keeps behind its
    /// branch.
    pub(crate) fn calls_math(self, ty: Ty) -> bool {
        match self {
            Op::Un(u) => ops::un(u).math().is_some(),
            Op::Bin(o) => ty.is_float() && ops::bin(o).math().is_some(),
            _ => false,
        }
    }

    /// Whether this is a guarded run's start or end, not an operation.
    pub fn is_marker(self) -> bool {
        matches!(self, Op::Guard(_) | Op::End)
    }
}

fn arith(op: Op) -> Option<BinOp> {
    match op {
        Op::Bin(o)
            if matches!(
                crate::gtscript::ops::bin(o).code,
                crate::gtscript::ops::BinCode::Arith(_)
            ) =>
        {
            Some(o)
        }
        _ => None,
    }
}

/// Fuses an arithmetic instruction into the next one when that one takes its result as an
/// operand and is its only reader (a value computed once for several readers stays).
pub(crate) fn fuse(tape: Vec<Instr>) -> Vec<Instr> {
    // Readers of each instruction's value.
    let mut readers = vec![0u32; tape.len()];
    let mut def: Vec<usize> = Vec::new();
    for (i, ins) in tape.iter().enumerate() {
        for a in &ins.args {
            if let Src::Reg(r) = a {
                readers[def[*r as usize]] += 1;
            }
        }
        if ins.op.is_marker() {
            continue;
        }
        let r = ins.dst as usize;
        if def.len() <= r {
            def.resize(r + 1, usize::MAX);
        }
        def[r] = i;
    }
    let mut out: Vec<Instr> = Vec::with_capacity(tape.len());
    // Whether `out`'s last instruction is the previous one of `tape`, unfused.
    let mut last_plain = false;
    for (i, ins) in tape.into_iter().enumerate() {
        let single = last_plain && readers[i - 1] == 1;
        last_plain = true;
        if let (Some(prev), Some(op2), true) = (out.last().copied(), arith(ins.op), single) {
            if let Some(op1) = arith(prev.op).filter(|_| prev.ty == ins.ty && ins.ty.is_float()) {
                let r = Src::Reg(prev.dst);
                let other = if ins.args[0] == r && ins.args[1] != r {
                    Some(ins.args[1])
                } else if ins.args[1] == r
                    && ins.args[0] != r
                    && matches!(op2, BinOp::Add | BinOp::Mul)
                {
                    // IEEE addition and multiplication are commutative, bit for bit.
                    Some(ins.args[0])
                } else {
                    None
                };
                // The fused instruction reads `prev`'s operands: its register must not be one.
                let clash = prev.args.contains(&Src::Reg(ins.dst));
                if let Some(c) = other.filter(|_| !clash) {
                    out.pop();
                    last_plain = false;
                    out.push(Instr {
                        op: Op::Bin2(op1, op2),
                        dst: ins.dst,
                        args: [prev.args[0], prev.args[1], c],
                        ty: ins.ty,
                    });
                    continue;
                }
            }
        }
        out.push(ins);
    }
    out
}

/// One instruction: `dst = op(args)`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Instr {
    /// What it computes.
    pub op: Op,
    /// The register it writes (never one of its operands).
    pub dst: u32,
    /// Operands (unused ones are `Const(0)`).
    pub args: [Src; 3],
    /// The type the operation computes in: that of its operands (for a select, of its second
    /// and third; its first is a boolean). Comparisons, `not`, `isnan`, `isinf` give booleans,
    /// a cast gives its target type.
    pub ty: Ty,
}

impl Instr {
    /// Every quantity the instruction reads or writes: its operands' block buffers and the
    /// quantity of a run-time K read or write.
    pub fn quantities(&self) -> impl Iterator<Item = u32> + '_ {
        let k = match self.op {
            Op::LoadK(q, _) | Op::StoreK(q, _) => Some(q),
            _ => None,
        };
        self.args
            .iter()
            .filter_map(|a| match *a {
                Src::Q(q, _) => Some(q),
                _ => None,
            })
            .chain(k)
    }
}

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
    let zero = Src::Const(Value::I(0));
    let writers = operand_writers(tape);
    // A read at a run-time K level whose level is the select's own condition's choice, with
    // level 0 where the select keeps the old value.
    let level_guarded = |at: usize| {
        writers[at][0].is_some_and(|w| {
            let d = &tape[w];
            d.op == Op::Sel && d.args[0] == last.args[0] && d.args[3 - arm] == zero
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
/// [`MIN_MASKED_ARM`] instructions of its own, not repeated. Every instruction of the new tape writes a
/// register of its own (its position in `tape`), so moving one never reorders two writes of a
/// register. The operations are pure: each point gets the value it got before, bit for bit.
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

/// A value number's operand: another value number, or what an operand that is no register
/// reads (a quantity's value between two of the run's writes of it, by how many came before).
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
enum Numbered {
    Value(u32),
    Quantity(u32, [i32; 3], u32),
    Scalar(u32),
    Float(u64),
    Int(i64),
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
    let mut numbers: HashMap<(Op, Ty, [Numbered; 3]), u32> = HashMap::new();
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
            let mut args = [Numbered::Int(0); 3];
            let mut known = plain;
            for (k, a) in ins.args.iter().enumerate() {
                args[k] = match *a {
                    Src::Reg(_) => match from[k].and_then(|w| nums[w]) {
                        Some(v) => Numbered::Value(v),
                        None => {
                            known = false;
                            break;
                        }
                    },
                    Src::Q(q, off) => {
                        Numbered::Quantity(q, off, writes.get(&q).copied().unwrap_or(0))
                    }
                    Src::Scalar(s) => Numbered::Scalar(s),
                    Src::Const(Value::F(x)) => Numbered::Float(x.to_bits()),
                    Src::Const(Value::I(x)) => Numbered::Int(x),
                };
            }
            nums.push(known.then(|| {
                let next = numbers.len() as u32;
                *numbers.entry((ins.op, ins.ty, args)).or_insert(next)
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

/// The index after the [`Op::End`] that closes the guarded run whose instructions start at
/// `at` in `tape`.
pub(crate) fn guard_end(tape: &[Instr], mut at: usize) -> usize {
    let mut depth = 1;
    while depth > 0 {
        match tape[at].op {
            Op::Guard(_) => depth += 1,
            Op::End => depth -= 1,
            _ => {}
        }
        at += 1;
    }
    at
}

/// The operands (quantity, offset) that the guarded run starting at `at` in `tape` reads.
pub(crate) fn run_operands(
    tape: &[Instr],
    at: usize,
) -> impl Iterator<Item = (u32, [i32; 3])> + '_ {
    tape[at..guard_end(tape, at)].iter().flat_map(|ins| {
        ins.args.into_iter().filter_map(|a| match a {
            Src::Q(q, off) => Some((q, off)),
            _ => None,
        })
    })
}

/// The quantity `a` names: field components first, in declaration order, then temporaries.
pub(crate) fn quantity(p: &Program, a: Access) -> usize {
    match a {
        Access::Field { field, comp } => {
            p.fields[..field]
                .iter()
                .map(|f| f.components())
                .sum::<usize>()
                + comp
        }
        Access::Temp(t) => p.fields.iter().map(|f| f.components()).sum::<usize>() + t,
    }
}

/// Registers in use while compiling a tape: a value's register is free once the last
/// instruction that reads it has its own.
pub(crate) struct Regs {
    pub(crate) free: Vec<u32>,
    pub(crate) count: u32,
}

impl Regs {
    pub(crate) fn take(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.count += 1;
            self.count - 1
        })
    }

    fn release(&mut self, r: u32) {
        // Lowest last, so tapes reuse few registers.
        let at = self.free.partition_point(|&x| x > r);
        self.free.insert(at, r);
    }
}

/// An operand while a tape is built: the value of an earlier node, or a source that needs no
/// instruction.
#[derive(Copy, Clone)]
enum Arg {
    Val(u32),
    Src(Src),
}

/// What makes two computations the same: the operation, its type and its operands (earlier
/// values by their node, literals by their bits, so `0.0` and `-0.0` stay apart).
#[derive(PartialEq, Eq, Hash)]
struct Key(Op, Ty, [ArgKey; 3]);

#[derive(PartialEq, Eq, Hash)]
enum ArgKey {
    Val(u32),
    Reg(u32),
    Q(u32, [i32; 3]),
    Scalar(u32),
    F(u64),
    I(i64),
}

fn arg_key(a: Arg) -> ArgKey {
    match a {
        Arg::Val(v) => ArgKey::Val(v),
        Arg::Src(Src::Reg(r)) => ArgKey::Reg(r), // not made while a tape is built
        Arg::Src(Src::Q(q, off)) => ArgKey::Q(q, off),
        Arg::Src(Src::Scalar(s)) => ArgKey::Scalar(s),
        Arg::Src(Src::Const(Value::F(x))) => ArgKey::F(x.to_bits()),
        Arg::Src(Src::Const(Value::I(i))) => ArgKey::I(i),
    }
}

/// A statement's expression as a graph of distinct computations: a subexpression that occurs
/// more than once (the frontend copies a function's local into every place that reads it, and
/// an `if` into both sides of its selects) is one node, computed once.
struct Dag<'p> {
    p: &'p Program,
    nodes: Vec<(Op, [Arg; 3], Ty)>,
    index: HashMap<Key, u32>,
}

impl Dag<'_> {
    /// The node (or source) of `e` and the type of its value (`type_of`'s, bottom-up).
    fn node(&mut self, e: &Expr) -> (Arg, Ty) {
        let p = self.p;
        let zero = Arg::Src(ZERO_SRC);
        let (op, args, ty, value_ty) = match e {
            Expr::Read(a, off) => {
                return (
                    Arg::Src(Src::Q(quantity(p, *a) as u32, *off)),
                    type_of(p, e),
                )
            }
            Expr::ReadK(a, k, i) => {
                let (i, ti) = self.node(i);
                let op = Op::LoadK(quantity(p, *a) as u32, *k);
                (op, [i, zero, zero], ti, type_of(p, e))
            }
            Expr::Scalar(s) => return (Arg::Src(Src::Scalar(*s as u32)), p.scalars[*s].ty),
            Expr::Const(v, t) => return (Arg::Src(Src::Const(*v)), *t),
            Expr::Cast(t, a) => {
                let (a, ta) = self.node(a);
                (Op::Cast(*t), [a, zero, zero], ta, *t)
            }
            Expr::Un(op, a) => {
                let (a, ta) = self.node(a);
                (Op::Un(*op), [a, zero, zero], ta, un_types(*op, ta).1)
            }
            Expr::Bin(op, a, b) => {
                let (a, ta) = self.node(a);
                let (b, tb) = self.node(b);
                (Op::Bin(*op), [a, b, zero], ta, bin_types(*op, ta, tb).1)
            }
            Expr::Select(c, a, b) => {
                let (c, _) = self.node(c);
                let (a, ta) = self.node(a);
                let (b, _) = self.node(b);
                (Op::Sel, [c, a, b], ta, ta)
            }
        };
        let nodes = &mut self.nodes;
        let n = *self
            .index
            .entry(Key(op, ty, args.map(arg_key)))
            .or_insert_with(|| {
                nodes.push((op, args, ty));
                (nodes.len() - 1) as u32
            });
        (Arg::Val(n), value_ty)
    }
}

/// Appends to `tape` the instructions that compute `expr`; returns where its value is. Equal
/// subexpressions are computed once, where the first one was (the operations are pure, so the
/// values are the same bit for bit); the last instruction computes the value. The arms of
/// selects that are worth skipping are guarded runs (see [`guard`]).
pub(crate) fn compile(expr: &Expr, p: &Program, tape: &mut Vec<Instr>, regs: &mut Regs) -> Src {
    let mut dag = Dag {
        p,
        nodes: Vec::new(),
        index: HashMap::new(),
    };
    let root = match dag.node(expr).0 {
        Arg::Src(s) => return s,
        Arg::Val(v) => v as usize,
    };
    let order = guard::order(&dag.nodes, root);
    // Readers left per node; the statement reads the root.
    let mut left = vec![0u32; dag.nodes.len()];
    for (_, args, _) in &dag.nodes {
        for a in args {
            if let Arg::Val(v) = a {
                left[*v as usize] += 1;
            }
        }
    }
    left[root] += 1;
    let mut reg = vec![0u32; dag.nodes.len()];
    let src = |a: Arg, reg: &[u32]| match a {
        Arg::Val(v) => Src::Reg(reg[v as usize]),
        Arg::Src(s) => s,
    };
    for item in order {
        let n = match item {
            guard::Item::Node(n) => n,
            // A run's markers read the select's boolean (which the select reads after them,
            // so its register lives through the run) and name the arm's register.
            guard::Item::Guard(sel, then) => {
                tape.push(Instr {
                    op: Op::Guard(then),
                    dst: 0,
                    args: [src(dag.nodes[sel].1[0], &reg), ZERO_SRC, ZERO_SRC],
                    ty: Ty::Bool,
                });
                continue;
            }
            guard::Item::End(arm) => {
                tape.push(Instr {
                    op: Op::End,
                    dst: reg[arm],
                    args: [ZERO_SRC; 3],
                    ty: Ty::Bool,
                });
                continue;
            }
        };
        let (op, args, ty) = dag.nodes[n];
        // The destination first: an instruction never writes one of its operands.
        let dst = regs.take();
        let args = args.map(|a| {
            if let Arg::Val(v) = a {
                let v = v as usize;
                left[v] -= 1;
                if left[v] == 0 {
                    regs.release(reg[v]);
                }
            }
            src(a, &reg)
        });
        reg[n] = dst;
        tape.push(Instr { op, dst, args, ty });
    }
    Src::Reg(reg[root])
}

/// Guarded runs: the arms of a select computed only where the select takes them.
///
/// A select computes both its arms at every point; where an arm is expensive (a math
/// function, or many operations) and used by nothing else, the code computes it only where
/// some point needs it: a point at a time, only where the point's boolean picks it; a vector
/// or strip at a time, only where one of its points does. GT4Py's compiled backends branch
/// the same way (their `if` is C++'s), where its numpy backend computes both sides. Only
/// time changes: the operations are pure, and every point still gets the arm it selects,
/// computed by the same instructions in the same order. A read at a run-time K level is
/// never guarded, so every point's level is still checked.
mod guard {
    use crate::gtscript::ir::Ty;
    use crate::gtscript::plan::tape::{Arg, Op, Src};

    /// What a guarded run's operations must weigh at least (each operation 1, a math
    /// function's call [`CALL`]) to be worth a test and a branch.
    const WORTH: u32 = 24;
    /// The weight of a math function's call (tens of cycles, where an operation is one).
    const CALL: u32 = 24;

    /// One entry of a tape's order: a node of the statement's graph, a guarded run's start
    /// (the select's node and which arm) or its end (the arm's node).
    #[derive(Copy, Clone, Debug, PartialEq)]
    pub(crate) enum Item {
        Node(usize),
        Guard(usize, bool),
        End(usize),
    }

    /// A run: the one it sits in (0 is the unguarded statement), its depth, its select and arm,
    /// and what its operations weigh (its nested runs' included).
    struct Run {
        parent: usize,
        depth: u32,
        sel: usize,
        then: bool,
        weight: u32,
    }

    fn weight(op: Op, ty: Ty) -> u32 {
        if op.calls_math(ty) {
            CALL
        } else {
            1
        }
    }

    /// The order in which to compute `nodes` (a graph in topological order whose value is
    /// `root`): each node after its operands, the nodes used only by one arm of a select
    /// (directly or through each other) in a guarded run just before the select, where that
    /// arm weighs enough.
    pub(crate) fn order(nodes: &[(Op, [Arg; 3], Ty)], root: usize) -> Vec<Item> {
        let n = nodes.len();
        let mut runs = vec![Run {
            parent: 0,
            depth: 0,
            sel: usize::MAX,
            then: false,
            weight: 0,
        }];
        // The innermost run holding every use of each node (readers come later in `nodes`,
        // so all of a node's uses are known when it is reached going backwards).
        const NONE: usize = usize::MAX;
        let mut run_of = vec![NONE; n];
        run_of[root] = 0;
        let common = |runs: &[Run], mut a: usize, mut b: usize| {
            while a != b {
                if runs[a].depth >= runs[b].depth {
                    a = runs[a].parent;
                } else {
                    b = runs[b].parent;
                }
            }
            a
        };
        for v in (0..n).rev() {
            let (op, args, _) = nodes[v];
            // Not used by the statement: never computed by a run (cannot happen for a
            // graph built from one expression, but an unreached node stays unguarded).
            let mut r = if run_of[v] == NONE { 0 } else { run_of[v] };
            if matches!(op, Op::LoadK(..) | Op::StoreK(..)) {
                r = 0;
            }
            run_of[v] = r;
            let guarded = op == Op::Sel && !matches!(args[0], Arg::Src(Src::Const(_)));
            for (k, a) in args.iter().enumerate() {
                let Arg::Val(w) = *a else { continue };
                let w = w as usize;
                let edge = if guarded && k > 0 {
                    runs.push(Run {
                        parent: r,
                        depth: runs[r].depth + 1,
                        sel: v,
                        then: k == 1,
                        weight: 0,
                    });
                    runs.len() - 1
                } else {
                    r
                };
                run_of[w] = if run_of[w] == NONE {
                    edge
                } else {
                    common(&runs, run_of[w], edge)
                };
            }
        }
        // Weights, nested runs' included (a run is made after the one it sits in).
        for v in 0..n {
            runs[run_of[v]].weight += weight(nodes[v].0, nodes[v].2);
        }
        for r in (1..runs.len()).rev() {
            let w = runs[r].weight;
            let parent = runs[r].parent;
            runs[parent].weight += w;
        }
        // A run not worth its test is part of the one it sits in.
        let mut kept = vec![0usize; runs.len()];
        for r in 1..runs.len() {
            kept[r] = if runs[r].weight >= WORTH {
                r
            } else {
                kept[runs[r].parent]
            };
        }
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); runs.len()];
        for (v, &r) in run_of.iter().enumerate() {
            members[kept[r]].push(v);
        }
        // The runs before each select, its second operand's first.
        let mut before: Vec<Vec<usize>> = vec![Vec::new(); n];
        for r in 1..runs.len() {
            if kept[r] == r && !members[r].is_empty() {
                before[runs[r].sel].push(r);
            }
        }
        for b in &mut before {
            b.sort_by_key(|&r| !runs[r].then);
        }
        let mut out = Vec::with_capacity(n);
        emit(0, &members, &before, &runs, nodes, &mut out);
        out
    }

    fn emit(
        r: usize,
        members: &[Vec<usize>],
        before: &[Vec<usize>],
        runs: &[Run],
        nodes: &[(Op, [Arg; 3], Ty)],
        out: &mut Vec<Item>,
    ) {
        for &v in &members[r] {
            for &g in &before[v] {
                let arm = match nodes[v].1[if runs[g].then { 1 } else { 2 }] {
                    Arg::Val(w) => w as usize,
                    Arg::Src(_) => unreachable!("a run computes an arm that is a node"),
                };
                out.push(Item::Guard(v, runs[g].then));
                emit(g, members, before, runs, nodes, out);
                out.push(Item::End(arm));
            }
            out.push(Item::Node(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gtscript::compile;

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

    #[test]
    fn equal_parts_are_computed_once() {
        let head = "stencil s float64\nfield a IJK\nfield b IJK\nscalar c\ncomp PARALLEL\ninterval S 0 E 0\n";
        let e = "exp mul s 0 log f 0 0 0 0 0";
        let t = tape(&format!(
            "{head}stmt 1 f 1 0 add mul {e} {e} div {e} f 0 0 1 0 0\n"
        ));
        let count = |op: Op| t.iter().filter(|i| i.op == op).count();
        assert_eq!(count(Op::Un(UnOp::Exp)), 1);
        assert_eq!(count(Op::Un(UnOp::Log)), 1);
        // Written once or three times, the same tape.
        let shared = format!("{head}stmt 1 f 1 0 add mul let 0 {e} ref 0 div ref 0 f 0 0 1 0 0\n");
        assert_eq!(tape(&shared), t);
        // Operands that differ (an offset, a literal's sign) are other values.
        let t = tape(&format!(
            "{head}stmt 1 f 1 0 add add exp f 0 0 0 0 0 exp f 0 0 0 1 0 add mul lit float64 0.0 f 0 0 0 0 0 mul lit float64 -0.0 f 0 0 0 0 0\n"
        ));
        assert_eq!(t.iter().filter(|i| i.op == Op::Un(UnOp::Exp)).count(), 2);
        let muls = t
            .iter()
            .filter(|i| matches!(i.op, Op::Bin(BinOp::Mul) | Op::Bin2(BinOp::Mul, _)));
        assert_eq!(muls.count(), 2);
        // A shared value keeps its register until its last reader, and is not fused away.
        let t = tape(&format!(
            "{head}stmt 1 f 1 0 mul add f 0 0 0 0 0 s 0 sub add f 0 0 0 0 0 s 0 f 0 0 0 0 0\n"
        ));
        assert_eq!(t[0].op, Op::Bin(BinOp::Add));
        let adds = t
            .iter()
            .filter(|i| matches!(i.op, Op::Bin(BinOp::Add) | Op::Bin2(BinOp::Add, _)));
        assert_eq!(adds.count(), 1);
        let r = Src::Reg(t[0].dst);
        let reads: usize = t
            .iter()
            .map(|i| i.args.iter().filter(|a| **a == r).count())
            .sum();
        assert_eq!(reads, 2);
    }

    /// The ops of a tape, markers as `G+`/`G-`/`E` and everything else by kind.
    fn shape(t: &[Instr]) -> Vec<String> {
        t.iter()
            .map(|i| match i.op {
                Op::Guard(true) => "G+".into(),
                Op::Guard(false) => "G-".into(),
                Op::End => "E".into(),
                Op::Sel => "sel".into(),
                Op::Un(UnOp::Exp) => "exp".into(),
                Op::Un(UnOp::Log) => "log".into(),
                _ => "op".into(),
            })
            .collect()
    }

    #[test]
    fn expensive_arms_are_guarded_runs() {
        let head = "stencil s float64\nfield a IJK\nfield b IJK\ncomp PARALLEL\ninterval S 0 E 0\n";
        // Each arm computes a math function only it uses: two runs, the select after them.
        let t = tape(&format!(
            "{head}stmt 1 f 1 0 sel gt f 0 0 0 0 0 lit float64 0.0 exp f 0 0 1 0 0 log f 0 0 0 1 0\n"
        ));
        assert_eq!(shape(&t), ["op", "G+", "exp", "E", "G-", "log", "E", "sel"]);
        // The markers read the select's boolean and name each arm's register.
        let sel = t.last().unwrap();
        assert_eq!(t[1].args[0], sel.args[0]);
        assert_eq!(Src::Reg(t[3].dst), sel.args[1]);
        assert_eq!(Src::Reg(t[6].dst), sel.args[2]);
        // A value both arms use, or the statement uses elsewhere, is computed before them; an
        // arm of a few operations is not worth a branch.
        let e = "exp f 0 0 1 0 0";
        let t = tape(&format!(
            "{head}stmt 1 f 1 0 sel gt f 0 0 0 0 0 lit float64 0.0 mul {e} lit float64 2.0 add {e} lit float64 1.0\n"
        ));
        assert!(!t.iter().any(|i| i.op.is_marker()), "{:?}", shape(&t));
        let t = tape(&format!(
            "{head}stmt 1 f 1 0 add sel gt f 0 0 0 0 0 lit float64 0.0 log f 0 0 1 0 0 f 0 0 0 0 0 {e}\n"
        ));
        assert_eq!(shape(&t), ["op", "G+", "log", "E", "sel", "exp", "op"]);
        // Runs nest: an inner select's arm inside an outer one's.
        let t = tape(&format!(
            "{head}stmt 1 f 1 0 sel gt f 0 0 0 0 0 lit float64 0.0 sel gt f 0 0 1 0 0 lit float64 0.0 exp f 0 0 1 0 0 f 0 0 0 0 0 f 0 0 0 1 0\n"
        ));
        assert_eq!(
            shape(&t),
            ["op", "G+", "op", "G+", "exp", "E", "sel", "E", "sel"]
        );
        // A read at a run-time K level stays outside every run (each point's level is checked).
        let t = tape(&format!(
            "{head}stmt 1 f 1 0 sel gt f 0 0 0 0 0 lit float64 0.0 exp kvar f 0 0 lit int64 1 lit float64 0.0\n"
        ));
        let k = t
            .iter()
            .position(|i| matches!(i.op, Op::LoadK(..)))
            .unwrap();
        let g = t.iter().position(|i| i.op.is_marker()).unwrap_or(t.len());
        assert!(k < g, "{:?}", shape(&t));
    }
}
