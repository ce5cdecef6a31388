//! One step of a statement's tape as Cranelift instructions, over scalars or vectors of one
//! float element type: the code every compiled row, column and point function is made of
//! (the mixed-type lanes have their own, [`crate::gtscript::jit::wide`]). It computes what the interpreter
//! computes, operation for operation (see [`crate::gtscript::jit`]).

use crate::gtscript::ir::{BinOp, Ty};
use crate::gtscript::ops::{Against, BinCode, UnCode};
use crate::gtscript::plan::tape::run_operands;
use crate::gtscript::plan::{Instr, Op, Src};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, Endianness, FuncRef, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;

/// Where each (quantity, offset) operand of a tape is in its operand list: a linear search
/// for the few operands of most tapes, a hash map for the thousands of a statement that sums
/// many quantities (where searching at every use made compiling quadratic).
pub(crate) struct OperandIndex<'a> {
    operands: &'a [(u32, [i32; 3])],
    map: Option<rustc_hash::FxHashMap<(u32, [i32; 3]), usize>>,
}

impl<'a> OperandIndex<'a> {
    pub(crate) fn new(operands: &'a [(u32, [i32; 3])]) -> Self {
        let map = (operands.len() > 32)
            .then(|| operands.iter().enumerate().map(|(k, &o)| (o, k)).collect());
        OperandIndex { operands, map }
    }

    /// The position of operand (`q`, `off`), which the list holds.
    pub(crate) fn get(&self, q: u32, off: [i32; 3]) -> usize {
        match &self.map {
            Some(m) => m[&(q, off)],
            None => self
                .operands
                .iter()
                .position(|&o| o == (q, off))
                .expect("operand listed"),
        }
    }
}

/// Emits one step of the tape over values of type `vt` (the element or a vector of it),
/// reading operand `k` at `addrs[k]`; returns the result.
pub(crate) struct Emit<'a> {
    pub(crate) tape: &'a [Instr],
    pub(crate) operands: &'a [(u32, [i32; 3])],
    /// Scalar parameters, loaded once in the entry block (element type).
    pub(crate) scalars: &'a [Value],
    /// The math functions the tape calls, by operation.
    pub(crate) calls: &'a [(Op, Type, FuncRef)],
    pub(crate) elem: Type,
}

impl Emit<'_> {
    fn constant(&self, b: &mut FunctionBuilder<'_>, vt: Type, v: f64) -> Value {
        let s = if self.elem == types::F64 {
            b.ins().f64const(v)
        } else {
            b.ins().f32const(v as f32)
        };
        self.widen(b, vt, s)
    }

    fn widen(&self, b: &mut FunctionBuilder<'_>, vt: Type, s: Value) -> Value {
        if vt.is_vector() {
            b.ins().splat(vt, s)
        } else {
            s
        }
    }

    /// `x` where `c` (a comparison result), else `y`.
    fn pick(&self, b: &mut FunctionBuilder<'_>, vt: Type, c: Value, x: Value, y: Value) -> Value {
        Self::choose(b, vt, c, x, y)
    }

    /// `c ? x : y`, lane by lane for vectors (`c` the result of a comparison of `vt`s).
    fn choose(b: &mut FunctionBuilder<'_>, vt: Type, c: Value, x: Value, y: Value) -> Value {
        if vt.is_vector() {
            let mask = b.ins().bitcast(
                vt,
                MemFlagsData::new().with_endianness(Endianness::Little),
                c,
            );
            b.ins().bitselect(mask, x, y)
        } else {
            b.ins().select(c, x, y)
        }
    }

    /// The boolean `a` (read from `src`) as a comparison result: the comparison its 1/0 value
    /// was made from where `masks` knows it (the unused 1/0 value is then dropped as dead
    /// code), else `a != 0`.
    fn test(
        &self,
        b: &mut FunctionBuilder<'_>,
        vt: Type,
        src: Src,
        a: Value,
        masks: &[Option<Value>],
    ) -> Value {
        let known = match src {
            Src::Reg(r) => masks.get(r as usize).copied().flatten(),
            _ => None,
        };
        known.unwrap_or_else(|| {
            let z = self.constant(b, vt, 0.0);
            b.ins().fcmp(FloatCC::NotEqual, a, z)
        })
    }

    fn truth(&self, b: &mut FunctionBuilder<'_>, vt: Type, c: Value) -> Value {
        let one = self.constant(b, vt, 1.0);
        let zero = self.constant(b, vt, 0.0);
        self.pick(b, vt, c, one, zero)
    }

    /// Calls `f` on `args`, lane by lane for vectors.
    fn call(&self, b: &mut FunctionBuilder<'_>, vt: Type, op: Op, args: &[Value]) -> Value {
        let f = self
            .calls
            .iter()
            .find(|c| c.0 == op && c.1 == self.elem)
            .expect("callee imported")
            .2;
        let one = |b: &mut FunctionBuilder<'_>, xs: &[Value]| {
            let call = b.ins().call(f, xs);
            b.inst_results(call)[0]
        };
        if !vt.is_vector() {
            return one(b, args);
        }
        let mut out = args[0];
        for lane in 0..vt.lane_count() as u8 {
            let xs: Vec<Value> = args.iter().map(|&a| b.ins().extractlane(a, lane)).collect();
            let r = one(b, &xs);
            out = b.ins().insertlane(out, r, lane);
        }
        out
    }

    /// NumPy's `minimum(a, x)` and `maximum(a, x)` (as the interpreter): `a` where it is NaN,
    /// else `a < x ? a : x` (`x < a ? a : x`), so a NaN in `x` wins too and equal values give
    /// `x`. The ordered choice is written in the form the x86 backend lowers to one
    /// `minsd`/`maxsd` (`minpd`/`maxpd` on vectors), which take their second operand when
    /// either is NaN; the NaN test of `a` comes after it (on scalars a branch that is always
    /// predicted). Both comparisons in one `select` were a set-flags sequence and a branch on
    /// the data (the vertical remap: 10% of its time).
    pub(crate) fn min_max(
        b: &mut FunctionBuilder<'_>,
        vt: Type,
        op: BinOp,
        a: Value,
        x: Value,
    ) -> Value {
        let ordered = if op == BinOp::Min {
            b.ins().fcmp(FloatCC::LessThan, a, x)
        } else {
            b.ins().fcmp(FloatCC::LessThan, x, a)
        };
        let m = Self::choose(b, vt, ordered, a, x);
        let nan = b.ins().fcmp(FloatCC::Unordered, a, a);
        Self::choose(b, vt, nan, a, m)
    }

    /// `x op y` for the arithmetic `op` (its instruction in [`crate::gtscript::ops::BINARY`]).
    pub(crate) fn arith(b: &mut FunctionBuilder<'_>, op: BinOp, x: Value, y: Value) -> Value {
        let BinCode::Arith(opcode) = crate::gtscript::ops::bin(op).code else {
            unreachable!("{op:?} is not arithmetic")
        };
        let t = b.func.dfg.value_type(x);
        let (inst, dfg) = b.ins().Binary(opcode, t, x, y);
        dfg.first_result(inst)
    }

    pub(crate) fn step(
        &self,
        b: &mut FunctionBuilder<'_>,
        vt: Type,
        addrs: &[Value],
        at: i32,
    ) -> Value {
        self.step_with(b, vt, &mut |b: &mut FunctionBuilder<'_>, k: usize| {
            b.ins()
                .load(vt, MemFlagsData::new().with_notrap(), addrs[k], at)
        })
    }

    /// One step of the tape over values of type `vt`, taking operand `k` (of `operands`)
    /// from `operand(b, k)`, called once per operand the tape reads.
    pub(crate) fn step_with(
        &self,
        b: &mut FunctionBuilder<'_>,
        vt: Type,
        operand: &mut dyn FnMut(&mut FunctionBuilder<'_>, usize) -> Value,
    ) -> Value {
        let mut regs: Vec<Option<Value>> = Vec::new();
        // Per register: the comparison result its 1/0 value was made from, so that a select on
        // it tests the comparison itself (the unused 1/0 value is then dropped as dead code).
        let mut masks: Vec<Option<Value>> = Vec::new();
        let mut loaded: Vec<Option<Value>> = vec![None; self.operands.len()];
        let index = OperandIndex::new(self.operands);
        let mut last = None;
        let mut runs: Vec<OpenRun> = Vec::new();
        for (at, ins) in self.tape.iter().enumerate() {
            match ins.op {
                Op::Guard(_) => load_run(b, self.tape, at, &index, &mut loaded, operand),
                Op::End => {
                    let run = runs.pop().expect("a run's end follows its start");
                    let d = ins.dst as usize;
                    let v = regs[d].expect("the run computes its arm");
                    let v = run.close(b, v);
                    regs[d] = Some(v);
                    if let Some(m) = masks.get_mut(d) {
                        *m = None;
                    }
                    continue;
                }
                _ => {}
            }
            let mut args = [None; 3];
            for (n, a) in ins.args.iter().enumerate() {
                if n > 0 && !uses_arg(ins.op, n) {
                    continue;
                }
                args[n] = Some(match *a {
                    Src::Reg(r) => regs[r as usize].expect("tape reads a register it wrote"),
                    Src::Q(q, off) => {
                        let k = index.get(q, off);
                        match loaded[k] {
                            Some(v) => v,
                            None => *loaded[k].insert(operand(b, k)),
                        }
                    }
                    Src::Scalar(i) => self.widen(b, vt, self.scalars[i as usize]),
                    Src::Const(v) => self.constant(b, vt, v.as_f64()),
                });
            }
            let [a, x, y] = args;
            let a = a.expect("every op has a first operand");
            if let Op::Guard(then) = ins.op {
                // Into the run where some lane takes its arm.
                let c = self.test(b, vt, ins.args[0], a, &masks);
                let any = match (vt.is_vector(), then) {
                    (true, true) => b.ins().vany_true(c),
                    (true, false) => {
                        let not = b.ins().bnot(c);
                        b.ins().vany_true(not)
                    }
                    (false, true) => c,
                    (false, false) => b.ins().icmp_imm_s(IntCC::Equal, c, 0),
                };
                runs.push(OpenRun::open(b, any));
                continue;
            }
            let mut mask = None;
            let v = match ins.op {
                Op::Mov => a,
                Op::Cast(t) if t != Ty::Bool => a,
                Op::Cast(_) => {
                    // To a boolean: nonzero (NaN too) is 1.
                    let z = self.constant(b, vt, 0.0);
                    let c = b.ins().fcmp(FloatCC::NotEqual, a, z);
                    mask = Some(c);
                    self.truth(b, vt, c)
                }
                Op::Un(u) => match crate::gtscript::ops::un(u).code {
                    UnCode::Inst(opcode) => {
                        let t = b.func.dfg.value_type(a);
                        let (inst, dfg) = b.ins().Unary(opcode, t, a);
                        dfg.first_result(inst)
                    }
                    UnCode::RoundAway => {
                        // GT4Py's numpy backend: copysign(floor(|a| + 0.5), a).
                        let m = b.ins().fabs(a);
                        let half = self.constant(b, vt, 0.5);
                        let h = b.ins().fadd(m, half);
                        let f = b.ins().floor(h);
                        // copysign(f, a) in bit operations (x86 has no vector copysign).
                        let sign = self.constant(b, vt, -0.0);
                        let mag = b.ins().band_not(f, sign);
                        let s = b.ins().band(a, sign);
                        b.ins().bor(mag, s)
                    }
                    UnCode::Test(t) => {
                        let m = if t.abs { b.ins().fabs(a) } else { a };
                        let other = match t.against {
                            Against::Zero => self.constant(b, vt, 0.0),
                            Against::Infinity => self.constant(b, vt, f64::INFINITY),
                            Against::Itself => m,
                        };
                        let c = b.ins().fcmp(t.cc, m, other);
                        mask = Some(c);
                        self.truth(b, vt, c)
                    }
                    UnCode::Call(_) => self.call(b, vt, ins.op, &[a]),
                },
                Op::Bin(o) => {
                    let x = x.expect("binary op has a second operand");
                    match crate::gtscript::ops::bin(o).code {
                        BinCode::Arith(_) => Self::arith(b, o, a, x),
                        BinCode::Call(_) => self.call(b, vt, ins.op, &[a, x]),
                        BinCode::MinMax => Self::min_max(b, vt, o, a, x),
                        BinCode::Cmp(cc, _) => {
                            let c = b.ins().fcmp(cc, a, x);
                            mask = Some(c);
                            self.truth(b, vt, c)
                        }
                        BinCode::Logic(opcode) => {
                            let z = self.constant(b, vt, 0.0);
                            let ca = b.ins().fcmp(FloatCC::NotEqual, a, z);
                            let cx = b.ins().fcmp(FloatCC::NotEqual, x, z);
                            let t = b.func.dfg.value_type(ca);
                            let (inst, dfg) = b.ins().Binary(opcode, t, ca, cx);
                            let c = dfg.first_result(inst);
                            mask = Some(c);
                            self.truth(b, vt, c)
                        }
                    }
                }
                Op::Bin2(o1, o2) => {
                    let t = Self::arith(b, o1, a, x.expect("fused op operand"));
                    Self::arith(b, o2, t, y.expect("fused op operand"))
                }
                Op::LoadK(..) | Op::StoreK(..) => unreachable!("filtered by `supported`"),
                Op::Guard(_) | Op::End => unreachable!("handled above"),
                Op::Sel => {
                    let c = self.test(b, vt, ins.args[0], a, &masks);
                    self.pick(
                        b,
                        vt,
                        c,
                        x.expect("select operand"),
                        y.expect("select operand"),
                    )
                }
            };
            let d = ins.dst as usize;
            if regs.len() <= d {
                regs.resize(d + 1, None);
            }
            regs[d] = Some(v);
            if masks.len() <= d {
                masks.resize(d + 1, None);
            }
            masks[d] = mask;
            last = Some(v);
        }
        last.expect("tape is not empty")
    }
}

/// Loads the operands of the guarded run that starts at `tape[at]` that are not loaded yet,
/// before the run's branch: every load (and any address the caller computes for one on first
/// use) is then there after the run too.
pub(crate) fn load_run(
    b: &mut FunctionBuilder<'_>,
    tape: &[Instr],
    at: usize,
    index: &OperandIndex<'_>,
    loaded: &mut [Option<Value>],
    operand: &mut dyn FnMut(&mut FunctionBuilder<'_>, usize) -> Value,
) {
    for (q, off) in run_operands(tape, at + 1) {
        let k = index.get(q, off);
        if loaded[k].is_none() {
            loaded[k] = Some(operand(b, k));
        }
    }
}

/// A guarded run being emitted (see [`Op::Guard`]): where the code goes when no lane needs it.
pub(crate) struct OpenRun {
    skip: cranelift_codegen::ir::Block,
}

impl OpenRun {
    /// Branches into the run where `any` (an `i8`) is nonzero, else to the run's end.
    pub(crate) fn open(b: &mut FunctionBuilder<'_>, any: Value) -> Self {
        let (body, skip) = (b.create_block(), b.create_block());
        b.ins().brif(any, body, &[], skip, &[]);
        b.switch_to_block(body);
        OpenRun { skip }
    }

    /// Joins the run (whose arm is `v`) with the way around it, where the arm is zero (no
    /// lane takes it there); returns the arm after the join.
    pub(crate) fn close(&self, b: &mut FunctionBuilder<'_>, v: Value) -> Value {
        let t = b.func.dfg.value_type(v);
        let join = b.create_block();
        let param = b.append_block_param(join, t);
        b.ins().jump(join, &[v.into()]);
        b.switch_to_block(self.skip);
        let zero = zero_of(b, t);
        b.ins().jump(join, &[zero.into()]);
        b.switch_to_block(join);
        param
    }
}

/// Zero bits of the Cranelift type `t` (a scalar or vector).
fn zero_of(b: &mut FunctionBuilder<'_>, t: Type) -> Value {
    let lane = t.lane_type();
    let s = if lane == types::F64 {
        b.ins().f64const(0.0)
    } else if lane == types::F32 {
        b.ins().f32const(0.0)
    } else {
        b.ins().iconst(lane, 0)
    };
    if t.is_vector() {
        b.ins().splat(t, s)
    } else {
        s
    }
}

/// Whether operand `n` (1 or 2) of `op` is read.
pub(crate) fn uses_arg(op: Op, n: usize) -> bool {
    match op {
        Op::Mov | Op::Cast(_) | Op::Un(_) | Op::LoadK(..) | Op::Guard(_) | Op::End => false,
        Op::Bin(_) => n == 1,
        Op::Bin2(..) | Op::Sel => true,
        Op::StoreK(..) => n == 1,
    }
}
