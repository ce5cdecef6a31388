//! Register tapes: a statement's expression compiled to a list of instructions over
//! registers, quantities at offsets, scalars and literals (what the interpreter and the
//! machine-code generator both run), and the quantity numbering the tapes address.

use crate::gtscript::ir::{Access, BinOp, Expr, KIndex, Program, Ty, UnOp, Value};
use crate::gtscript::passes::types::type_of;

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
#[derive(Copy, Clone, Debug, PartialEq)]
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
/// operand (each intermediate value is read exactly once, by a later instruction).
pub(crate) fn fuse(tape: Vec<Instr>) -> Vec<Instr> {
    let mut out: Vec<Instr> = Vec::with_capacity(tape.len());
    for ins in tape {
        if let (Some(prev), Some(op2)) = (out.last().copied(), arith(ins.op)) {
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

/// Registers in use while compiling a tape: each value is read once, so an operand's register
/// is free once the instruction that reads it has its own.
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

    pub(crate) fn release(&mut self, args: &[Src]) {
        for a in args {
            if let Src::Reg(r) = a {
                self.free.push(*r);
            }
        }
        // Lowest first, so tapes reuse few registers.
        self.free.sort_unstable_by(|a, b| b.cmp(a));
    }
}

/// Appends to `tape` the instructions that compute `expr`; returns where its value is.
pub(crate) fn compile(expr: &Expr, p: &Program, tape: &mut Vec<Instr>, regs: &mut Regs) -> Src {
    let zero = ZERO_SRC;
    let (op, args, ty) = match expr {
        Expr::Read(a, off) => return Src::Q(quantity(p, *a) as u32, *off),
        Expr::ReadK(a, k, i) => (
            Op::LoadK(quantity(p, *a) as u32, *k),
            [compile(i, p, tape, regs), zero, zero],
            type_of(p, i),
        ),
        Expr::Scalar(s) => return Src::Scalar(*s as u32),
        Expr::Const(v, _) => return Src::Const(*v),
        Expr::Cast(t, a) => (
            Op::Cast(*t),
            [compile(a, p, tape, regs), zero, zero],
            type_of(p, a),
        ),
        Expr::Un(op, a) => (
            Op::Un(*op),
            [compile(a, p, tape, regs), zero, zero],
            type_of(p, a),
        ),
        Expr::Bin(op, a, b) => {
            let ty = type_of(p, a);
            let a = compile(a, p, tape, regs);
            let b = compile(b, p, tape, regs);
            (Op::Bin(*op), [a, b, zero], ty)
        }
        Expr::Select(c, a, b) => {
            let ty = type_of(p, a);
            let c = compile(c, p, tape, regs);
            let a = compile(a, p, tape, regs);
            let b = compile(b, p, tape, regs);
            (Op::Sel, [c, a, b], ty)
        }
    };
    let dst = regs.take();
    regs.release(&args);
    tape.push(Instr { op, dst, args, ty });
    Src::Reg(dst)
}
