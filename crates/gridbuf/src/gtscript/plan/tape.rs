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
/// values by their number, literals by their bits, so `0.0` and `-0.0` stay apart). Also the
/// value numbers of [`crate::gtscript::plan::masked::repeated_later`].
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct Key(pub(crate) Op, pub(crate) Ty, pub(crate) [ArgKey; 3]);

/// An operand of a [`Key`].
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ArgKey {
    /// An earlier value, by its number.
    Val(u32),
    /// A register (not made while a tape is built).
    Reg(u32),
    /// A quantity at an offset, after the given number of writes of it (none within one
    /// statement).
    Q(u32, [i32; 3], u32),
    /// A scalar parameter.
    Scalar(u32),
    /// A float literal's bits.
    F(u64),
    /// An integer literal.
    I(i64),
}

impl ArgKey {
    /// The key of operand `a`, a quantity read after `writes` of it.
    pub(crate) fn of(a: Src, writes: u32) -> ArgKey {
        match a {
            Src::Reg(r) => ArgKey::Reg(r),
            Src::Q(q, off) => ArgKey::Q(q, off, writes),
            Src::Scalar(s) => ArgKey::Scalar(s),
            Src::Const(Value::F(x)) => ArgKey::F(x.to_bits()),
            Src::Const(Value::I(i)) => ArgKey::I(i),
        }
    }
}

fn arg_key(a: Arg) -> ArgKey {
    match a {
        Arg::Val(v) => ArgKey::Val(v),
        Arg::Src(src) => ArgKey::of(src, 0),
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
