//! Machine code for mixed-type tapes (plans on 64-bit lanes, see `lane`): one point per step,
//! each operation in its own type, exactly as the interpreter computes it. The row loop around
//! it is `jit::build`'s.

use crate::gtscript::ir::{BinOp, Ty, UnOp};
use crate::gtscript::jit::emit::OperandIndex;
use crate::gtscript::jit::emit::{load_run, uses_arg, Emit, OpenRun};
use crate::gtscript::ops::{BinCode, UnCode};
use crate::gtscript::plan::{Instr, Op, Src};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, Block, FuncRef, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;

/// Emits one point of a mixed-type tape. Operands live in 64-bit lanes (floats as `f64`,
/// integers as `i64`, booleans 0 and 1, see `lane`); each operation computes in its own type:
/// `float32` ones on `f32` values (demoted, computed, promoted back), integer ones on `i64`
/// values wrapped to their width afterwards, exactly as the interpreter does.
pub(crate) struct WideEmit<'a> {
    pub(crate) tape: &'a [Instr],
    pub(crate) operands: &'a [(u32, [i32; 3])],
    /// Scalar parameters as lanes (`i64`).
    pub(crate) scalars: &'a [Value],
    /// The math functions the tape calls, per operation and float type.
    pub(crate) calls: &'a [(Op, Type, FuncRef)],
    /// The quantities read at run-time K levels and their memory's element types, one
    /// [`crate::gtscript::jit::abi::VkSlot`] each at `vkp`.
    pub(crate) vk: &'a [(u32, Ty)],
    pub(crate) vkp: Value,
    /// Per slot of `vk`, its fields held in registers (see [`SlotRegs`]), where the caller
    /// loaded them once; else each read loads them from `vkp`.
    pub(crate) slot_regs: Option<&'a [SlotRegs]>,
}

/// A [`crate::gtscript::jit::abi::VkSlot`] held in registers, for code that runs one point at a time with
/// branches (`pointloop`), counted from the slot's lowest allowed level `lo`: the address of
/// level `lo` in the current point's column, the point's own level minus `lo`, `lo` itself
/// where some read gives an absolute level, the byte step per level and the number of levels
/// allowed. A level outside is reported in the slot's `err` and `err_level` and jumps to
/// `fail` (the caller returns). Counting from `lo` makes a read one add, one unsigned compare
/// and one load, with three values per slot live in the point's loops.
pub(crate) struct SlotRegs {
    pub(crate) base: Value,
    pub(crate) rel: Value,
    pub(crate) lo: Option<Value>,
    pub(crate) d_level: Value,
    pub(crate) span: Value,
    pub(crate) fail: Block,
}

impl WideEmit<'_> {
    /// `v` (a lane value of the Cranelift type `F64` or `I64`) as the register type of `ty`.
    fn as_ty(b: &mut FunctionBuilder<'_>, v: Value, ty: Ty) -> Value {
        let want = if ty.is_float() {
            types::F64
        } else {
            types::I64
        };
        let have = b.func.dfg.value_type(v);
        if have == want {
            v
        } else {
            b.ins().bitcast(want, MemFlagsData::new(), v)
        }
    }

    fn wrap(b: &mut FunctionBuilder<'_>, v: Value, ty: Ty) -> Value {
        let narrow = match ty {
            Ty::I8 => types::I8,
            Ty::I16 => types::I16,
            Ty::I32 => types::I32,
            _ => return v,
        };
        let r = b.ins().ireduce(narrow, v);
        b.ins().sextend(types::I64, r)
    }

    fn boolean(b: &mut FunctionBuilder<'_>, c: Value) -> Value {
        b.ins().uextend(types::I64, c)
    }

    /// A float operand in the operation's type (`f32` for `float32`).
    fn narrow(b: &mut FunctionBuilder<'_>, v: Value, ty: Ty) -> Value {
        if ty == Ty::F32 {
            b.ins().fdemote(types::F32, v)
        } else {
            v
        }
    }

    fn widen(b: &mut FunctionBuilder<'_>, v: Value, ty: Ty) -> Value {
        if ty == Ty::F32 {
            b.ins().fpromote(types::F64, v)
        } else {
            v
        }
    }

    fn cast(b: &mut FunctionBuilder<'_>, v: Value, from: Ty, to: Ty) -> Value {
        match (from.is_float(), to) {
            (true, Ty::Bool) => {
                let z = b.ins().f64const(0.0);
                let c = b.ins().fcmp(FloatCC::NotEqual, v, z);
                Self::boolean(b, c)
            }
            (false, Ty::Bool) => {
                let c = b.ins().icmp_imm_s(IntCC::NotEqual, v, 0);
                Self::boolean(b, c)
            }
            (true, Ty::F64) => v,
            (true, Ty::F32) => {
                let n = b.ins().fdemote(types::F32, v);
                b.ins().fpromote(types::F64, n)
            }
            (false, Ty::F64) => b.ins().fcvt_from_sint(types::F64, v),
            (false, Ty::F32) => {
                let n = b.ins().fcvt_from_sint(types::F32, v);
                b.ins().fpromote(types::F64, n)
            }
            (false, t) => Self::wrap(b, v, t),
            (true, t) => {
                // NumPy on x86-64: truncation, and the smallest int32 (int64) for a NaN, an
                // infinity or a value out of range (see `types::convert`).
                let (lo, hi, bad) = crate::gtscript::passes::types::float_to_int_range(t);
                let lo = b.ins().f64const(lo);
                let hi = b.ins().f64const(hi);
                let c1 = b.ins().fcmp(FloatCC::GreaterThanOrEqual, v, lo);
                let c2 = b.ins().fcmp(FloatCC::LessThan, v, hi);
                let ok = b.ins().band(c1, c2);
                let s = b.ins().fcvt_to_sint_sat(types::I64, v);
                let bad = b.ins().iconst(types::I64, bad);
                let r = b.ins().select(ok, s, bad);
                Self::wrap(b, r, t)
            }
        }
    }

    /// `a // b` and `a % b` of integers, floored, 0 for a zero divisor, without the traps of
    /// `sdiv` and `srem` (zero, and the smallest value over -1).
    fn int_divmod(b: &mut FunctionBuilder<'_>, x: Value, y: Value) -> (Value, Value) {
        let is0 = b.ins().icmp_imm_s(IntCC::Equal, y, 0);
        let ism1 = b.ins().icmp_imm_s(IntCC::Equal, y, -1);
        let bad = b.ins().bor(is0, ism1);
        let one = b.ins().iconst(types::I64, 1);
        let yy = b.ins().select(bad, one, y);
        let q = b.ins().sdiv(x, yy);
        let r = b.ins().srem(x, yy);
        // Floor: a nonzero remainder of the other sign than the divisor moves one down.
        let rz = b.ins().icmp_imm_s(IntCC::NotEqual, r, 0);
        let sx = b.ins().bxor(r, yy);
        let neg = b.ins().icmp_imm_s(IntCC::SignedLessThan, sx, 0);
        let adj = b.ins().band(rz, neg);
        let q1 = b.ins().iadd_imm_s(q, -1);
        let r1 = b.ins().iadd(r, yy);
        let q = b.ins().select(adj, q1, q);
        let r = b.ins().select(adj, r1, r);
        let zero = b.ins().iconst(types::I64, 0);
        let negx = b.ins().ineg(x);
        let q = b.ins().select(ism1, negx, q);
        let r = b.ins().select(ism1, zero, r);
        let q = b.ins().select(is0, zero, q);
        let r = b.ins().select(is0, zero, r);
        (q, r)
    }

    /// Calls the math function of `op` for the float type `ty` on `args` (already of it).
    fn call(&self, b: &mut FunctionBuilder<'_>, op: Op, ty: Ty, args: &[Value]) -> Value {
        let ft = if ty == Ty::F32 {
            types::F32
        } else {
            types::F64
        };
        let f = self
            .calls
            .iter()
            .find(|c| c.0 == op && c.1 == ft)
            .expect("callee imported")
            .2;
        let call = b.ins().call(f, args);
        b.inst_results(call)[0]
    }

    /// `q`'s value at the point `point` of the row (its index from the row's first) and the
    /// level `index` gives (relative to the point's level, or absolute): the level checked
    /// against the slot's `lo..hi`, a level outside reported in the slot and replaced by `lo`
    /// (so the load stays inside the memory the caller checked); the value as a lane.
    fn load_k(
        &self,
        b: &mut FunctionBuilder<'_>,
        q: u32,
        kind: crate::gtscript::ir::KIndex,
        index: Value,
        point: Value,
    ) -> Value {
        let slot = self.vk.iter().position(|v| v.0 == q).expect("listed");
        let flags = MemFlagsData::new().with_notrap();
        let field = |n: usize| crate::gtscript::jit::abi::vk_field(slot, n);
        let vkp = self.vkp;
        let get =
            |b: &mut FunctionBuilder<'_>, n: usize| b.ins().load(types::I64, flags, vkp, field(n));
        if let Some(r) = self.slot_regs.map(|r| &r[slot]) {
            // The level minus `lo`: inside when below `span`, as one unsigned comparison.
            let rel = match (kind, r.lo) {
                (crate::gtscript::ir::KIndex::Relative, _) => b.ins().iadd(r.rel, index),
                (crate::gtscript::ir::KIndex::Absolute, Some(lo)) => b.ins().isub(index, lo),
                (crate::gtscript::ir::KIndex::Absolute, None) => {
                    let lo = get(b, 7);
                    b.ins().isub(index, lo)
                }
            };
            let ok = b.ins().icmp(IntCC::UnsignedLessThan, rel, r.span);
            let (inside, outside) = (b.create_block(), b.create_block());
            b.set_cold_block(outside);
            b.ins().brif(ok, inside, &[], outside, &[]);
            b.switch_to_block(outside);
            let one = b.ins().iconst(types::I64, 1);
            b.ins().store(flags, one, vkp, field(9));
            let lo = get(b, 7);
            let level = b.ins().iadd(rel, lo);
            b.ins().store(flags, level, vkp, field(10));
            b.ins().jump(r.fail, &[]);
            b.switch_to_block(inside);
            let off = b.ins().imul(rel, r.d_level);
            let addr = b.ins().iadd(r.base, off);
            return self.load_lane(b, slot, addr);
        }
        let (col, k, d_point, d_level) = (get(b, 11), get(b, 12), get(b, 2), get(b, 3));
        let (k_point, lo, hi) = (get(b, 6), get(b, 7), get(b, 8));
        let level = match kind {
            crate::gtscript::ir::KIndex::Relative => {
                let dk = b.ins().imul(point, k_point);
                let k = b.ins().iadd(k, dk);
                b.ins().iadd(k, index)
            }
            crate::gtscript::ir::KIndex::Absolute => index,
        };
        let above = b.ins().icmp(IntCC::SignedGreaterThanOrEqual, level, lo);
        let below = b.ins().icmp(IntCC::SignedLessThan, level, hi);
        let ok = b.ins().band(above, below);
        let err = get(b, 9);
        let one = b.ins().iconst(types::I64, 1);
        let err = b.ins().select(ok, err, one);
        b.ins().store(flags, err, vkp, field(9));
        let last = get(b, 10);
        let last = b.ins().select(ok, last, level);
        b.ins().store(flags, last, vkp, field(10));
        let safe = b.ins().select(ok, level, lo);
        let off = b.ins().imul(point, d_point);
        let col = b.ins().iadd(col, off);
        let off = b.ins().imul(safe, d_level);
        let addr = b.ins().iadd(col, off);
        self.load_lane(b, slot, addr)
    }

    /// The value at `addr` of slot `slot`'s memory, as a lane (a float64 in a float register).
    fn load_lane(&self, b: &mut FunctionBuilder<'_>, slot: usize, addr: Value) -> Value {
        let flags = MemFlagsData::new().with_notrap();
        match self.vk[slot].1 {
            Ty::Bool => b.ins().uload8(types::I64, flags, addr, 0),
            Ty::I8 => b.ins().sload8(types::I64, flags, addr, 0),
            Ty::I16 => b.ins().sload16(types::I64, flags, addr, 0),
            Ty::I32 => b.ins().sload32(flags, addr, 0),
            Ty::I64 => b.ins().load(types::I64, flags, addr, 0),
            // In a float register (the lane's bits): its readers take it as a float.
            Ty::F64 => b.ins().load(types::F64, flags, addr, 0),
            Ty::F32 => {
                let x = b.ins().load(types::F32, flags, addr, 0);
                let x = b.ins().fpromote(types::F64, x);
                b.ins().bitcast(types::I64, MemFlagsData::new(), x)
            }
        }
    }

    /// One point of the tape, operand `k` (of `operands`) loaded from `addrs[k] + at`.
    pub(crate) fn step(
        &self,
        b: &mut FunctionBuilder<'_>,
        addrs: &[Value],
        at: i32,
        point: Value,
    ) -> Value {
        self.step_with(b, point, &mut |b: &mut FunctionBuilder<'_>, k: usize| {
            b.ins()
                .load(types::I64, MemFlagsData::new().with_notrap(), addrs[k], at)
        })
    }

    /// One point of the tape (the `point`-th of its row), taking operand `k` (of `operands`,
    /// as an `I64` lane) from `operand(b, k)`, called once per operand the tape reads.
    /// One point of the tape, operand `k` (of `operands`) from `operand(b, k)` (a lane, or an
    /// `F64` where the operand is a float), the result in the register type of its own type
    /// (`F64` for floats, `I64` otherwise).
    pub(crate) fn step_typed(
        &self,
        b: &mut FunctionBuilder<'_>,
        point: Value,
        operand: &mut dyn FnMut(&mut FunctionBuilder<'_>, usize) -> Value,
    ) -> Value {
        let mut regs: Vec<Option<Value>> = Vec::new();
        let mut loaded: Vec<Option<Value>> = vec![None; self.operands.len()];
        let index = OperandIndex::new(self.operands);
        let mut last = None;
        let mut runs: Vec<OpenRun> = Vec::new();
        for (at, ins) in self.tape.iter().enumerate() {
            if ins.op == Op::End {
                let run = runs.pop().expect("a run's end follows its start");
                let d = ins.dst as usize;
                let v = regs[d].expect("the run computes its arm");
                regs[d] = Some(run.close(b, v));
                continue;
            }
            if matches!(ins.op, Op::Guard(_)) {
                load_run(b, self.tape, at, &index, &mut loaded, operand);
            }
            let mut args = [None; 3];
            for (n, a) in ins.args.iter().enumerate() {
                if n > 0 && !uses_arg(ins.op, n) {
                    continue;
                }
                // The type operand `n` is read as.
                let ty = if matches!(ins.op, Op::Sel | Op::Guard(_)) && n == 0 {
                    Ty::Bool
                } else {
                    ins.ty
                };
                let v = match *a {
                    Src::Reg(r) => regs[r as usize].expect("tape reads a register it wrote"),
                    Src::Q(q, off) => {
                        let k = index.get(q, off);
                        match loaded[k] {
                            Some(v) => v,
                            None => *loaded[k].insert(operand(b, k)),
                        }
                    }
                    Src::Scalar(i) => self.scalars[i as usize],
                    Src::Const(crate::gtscript::ir::Value::F(x)) => b.ins().f64const(x),
                    Src::Const(crate::gtscript::ir::Value::I(x)) => b.ins().iconst(types::I64, x),
                };
                args[n] = Some(Self::as_ty(b, v, ty));
            }
            let [a, x, y] = args;
            let a = a.expect("every op has a first operand");
            let ty = ins.ty;
            if let Op::Guard(then) = ins.op {
                // Into the run where this point takes its arm.
                let cc = if then { IntCC::NotEqual } else { IntCC::Equal };
                let c = b.ins().icmp_imm_s(cc, a, 0);
                runs.push(OpenRun::open(b, c));
                continue;
            }
            let v = match ins.op {
                Op::Guard(_) | Op::End => unreachable!("handled above"),
                Op::LoadK(q, kind) => self.load_k(b, q, kind, a, point),
                Op::StoreK(..) => unreachable!("filtered by `supported`: the strip runs it"),
                Op::Mov => a,
                Op::Cast(to) => Self::cast(b, a, ty, to),
                Op::Sel => {
                    let c = b.ins().icmp_imm_s(IntCC::NotEqual, a, 0);
                    b.ins().select(c, x.expect("select"), y.expect("select"))
                }
                Op::Un(u) if ty.is_float() => {
                    let v = Self::narrow(b, a, ty);
                    match crate::gtscript::ops::un(u).code {
                        // |a| against infinity: the f64 lane itself (f32's infinities are f64's).
                        UnCode::Test(t) if t.abs => {
                            let m = b.ins().fabs(a);
                            let inf = b.ins().f64const(f64::INFINITY);
                            let c = b.ins().fcmp(t.cc, m, inf);
                            Self::boolean(b, c)
                        }
                        // A NaN test (`not` takes booleans only).
                        UnCode::Test(t) => {
                            let c = b.ins().fcmp(t.cc, v, v);
                            Self::boolean(b, c)
                        }
                        code => {
                            let r = match code {
                                UnCode::Inst(opcode) => {
                                    let t = b.func.dfg.value_type(v);
                                    let (inst, dfg) = b.ins().Unary(opcode, t, v);
                                    dfg.first_result(inst)
                                }
                                UnCode::RoundAway => {
                                    // GT4Py's numpy backend: copysign(floor(|v| + 0.5), v).
                                    let m = b.ins().fabs(v);
                                    let half = if ty == Ty::F32 {
                                        b.ins().f32const(0.5)
                                    } else {
                                        b.ins().f64const(0.5)
                                    };
                                    let h = b.ins().fadd(m, half);
                                    let f = b.ins().floor(h);
                                    b.ins().fcopysign(f, v)
                                }
                                _ => self.call(b, ins.op, ty, &[v]),
                            };
                            Self::widen(b, r, ty)
                        }
                    }
                }
                Op::Un(u) => match u {
                    UnOp::Neg => {
                        let r = b.ins().ineg(a);
                        Self::wrap(b, r, ty)
                    }
                    UnOp::Abs => {
                        let r = b.ins().iabs(a);
                        Self::wrap(b, r, ty)
                    }
                    UnOp::Not => {
                        let c = b.ins().icmp_imm_s(IntCC::Equal, a, 0);
                        Self::boolean(b, c)
                    }
                    UnOp::IsNan | UnOp::IsInf => b.ins().iconst(types::I64, 0),
                    UnOp::IsFinite => b.ins().iconst(types::I64, 1),
                    _ => a,
                },
                Op::Bin(o) | Op::Bin2(o, _) if ty.is_float() => {
                    let x = x.expect("binary op has a second operand");
                    let (a, x) = (Self::narrow(b, a, ty), Self::narrow(b, x, ty));
                    let code = crate::gtscript::ops::bin(o).code;
                    if let BinCode::Cmp(cc, _) = code {
                        let c = b.ins().fcmp(cc, a, x);
                        Self::boolean(b, c)
                    } else {
                        let r = match code {
                            BinCode::MinMax => {
                                let vt = b.func.dfg.value_type(a);
                                Emit::min_max(b, vt, o, a, x)
                            }
                            BinCode::Call(_) => self.call(b, ins.op, ty, &[a, x]),
                            _ => Emit::arith(b, o, a, x),
                        };
                        let r = match ins.op {
                            Op::Bin2(_, o2) => {
                                let z = Self::narrow(b, y.expect("fused op"), ty);
                                Emit::arith(b, o2, r, z)
                            }
                            _ => r,
                        };
                        Self::widen(b, r, ty)
                    }
                }
                Op::Bin(o) => {
                    let x = x.expect("binary op has a second operand");
                    if let BinCode::Cmp(_, cc) = crate::gtscript::ops::bin(o).code {
                        let c = b.ins().icmp(cc, a, x);
                        Self::boolean(b, c)
                    } else {
                        let r = match o {
                            BinOp::Add => b.ins().iadd(a, x),
                            BinOp::Sub => b.ins().isub(a, x),
                            BinOp::Mul => b.ins().imul(a, x),
                            BinOp::Min => b.ins().smin(a, x),
                            BinOp::Max => b.ins().smax(a, x),
                            BinOp::And => b.ins().band(a, x),
                            BinOp::Or => b.ins().bor(a, x),
                            BinOp::FloorDiv | BinOp::Div => Self::int_divmod(b, a, x).0,
                            BinOp::Mod => Self::int_divmod(b, a, x).1,
                            BinOp::Pow => {
                                // The exponent is a non-negative literal (the types pass
                                // refuses others): square and multiply, unrolled.
                                let Src::Const(crate::gtscript::ir::Value::I(mut e)) = ins.args[1]
                                else {
                                    unreachable!("filtered by `supported`")
                                };
                                let mut r = b.ins().iconst(types::I64, 1);
                                let mut base = a;
                                while e > 0 {
                                    if e & 1 == 1 {
                                        r = b.ins().imul(r, base);
                                    }
                                    e >>= 1;
                                    if e > 0 {
                                        base = b.ins().imul(base, base);
                                    }
                                }
                                r
                            }
                            _ => unreachable!("comparisons handled above"),
                        };
                        Self::wrap(b, r, ty)
                    }
                }
                Op::Bin2(..) => unreachable!("only float operations are fused"),
            };
            let d = ins.dst as usize;
            if regs.len() <= d {
                regs.resize(d + 1, None);
            }
            regs[d] = Some(v);
            last = Some(v);
        }
        last.expect("tape is not empty")
    }

    /// One point of the tape, as [`Self::step_typed`], as a lane (`I64`).
    pub(crate) fn step_with(
        &self,
        b: &mut FunctionBuilder<'_>,
        point: Value,
        operand: &mut dyn FnMut(&mut FunctionBuilder<'_>, usize) -> Value,
    ) -> Value {
        let v = self.step_typed(b, point, operand);
        Self::as_ty(b, v, Ty::I64)
    }

    /// `v` as a value of Cranelift type `want` (`F64` or `I64`), the same bits.
    pub(crate) fn as_type(b: &mut FunctionBuilder<'_>, v: Value, want: Type) -> Value {
        if b.func.dfg.value_type(v) == want {
            v
        } else {
            b.ins().bitcast(want, MemFlagsData::new(), v)
        }
    }
}
