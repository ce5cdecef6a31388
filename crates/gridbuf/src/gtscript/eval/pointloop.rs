//! Machine code that runs a whole `while` loop point by point.
//!
//! A block runs a loop one pass at a time: every statement of the body over the whole block,
//! masked, again and again while any point of the block has its condition set. Points whose
//! loop ends early still pay for the passes the slowest point of the block needs, and every
//! value goes through memory between statements. Where no statement of the loop reads at
//! another point what the loop writes, each point's passes depend on that point alone: then the
//! loop (its condition and body, nested loops included) is one function that, per point, runs
//! the statements with real branches, the quantities the loop writes held in registers from
//! the point's first statement to its last and stored once. The result is the same: the same
//! operations on the same values per point, in the same order (the masked statements of a
//! point whose condition is unset change nothing, and its condition keeps its value).

use super::jit::{
    declare_calls, jit_error, load_scalars, operands_of, supported, vk_field, vk_of, vk_row, Emit,
};
use super::wide::{SlotRegs, WideEmit};
use crate::error::Result;
use crate::gtscript::ir::Ty;
use crate::gtscript::plan::{Instr, Op, Plan, Src};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};

/// A loop's function: `f(operands, strides, outs, out_strides, n, rows, scalars, vk)` runs
/// `n` points on each of `rows` rows; operand `k`'s row `r` starts at `operands[k] + r *
/// strides[k]` bytes, written quantity `j`'s at `outs[j] + r * out_strides[j]`; `vk` as for
/// [`super::jit::RowFn`]. It returns early, leaving points unfinished, once a run-time K read
/// has reported a level outside (the caller raises the error).
pub(super) type LoopFn = unsafe extern "C" fn(
    *const *const u8,
    *const isize,
    *const *mut u8,
    *const isize,
    usize,
    usize,
    *const u8,
    *mut i64,
);

/// A compiled loop and what the caller must hand it.
pub(super) struct LoopCode {
    /// The function.
    pub(super) f: LoopFn,
    /// What the loop reads and does not write, in the order of the pointer array: (quantity,
    /// offset I, J, K).
    pub(super) operands: Vec<(u32, [i32; 3])>,
    /// What the loop writes (each at the point itself), in the order of the output array.
    pub(super) outs: Vec<u32>,
    /// The quantities read at run-time K levels, one `VkSlot` each, and their memory's
    /// element types.
    pub(super) vk: Vec<(u32, Ty)>,
    /// One past the loop's last statement.
    pub(super) exit: usize,
}

/// Where the loop whose condition is statement `t` of section `s` ends (one past its last
/// statement), if it can run point by point: `t` is a `while` condition outside any other loop;
/// every statement of the loop is compiled (`wide`: mixed-type code), writes at its own point
/// over the same box (no region, no K offset), not to a quantity read at run-time levels later
/// (written through at once by the block); and what the loop writes it reads only at the
/// point itself (not at an offset, not at a run-time level).
pub(super) fn range(plan: &Plan, s: usize, t: usize, wide: bool) -> Option<usize> {
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

/// Defines the function of the loop `[t, exit)` of section `s` (see [`range`]) in `module`,
/// for elements of type `elem` (`I64` lanes when `wide`); returns it with its operands,
/// outputs and run-time K reads (see [`LoopCode`]).
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(super) fn build(
    module: &mut JITModule,
    ctx: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
    plan: &Plan,
    s: usize,
    t: usize,
    exit: usize,
    elem: Type,
    wide: bool,
) -> Result<(FuncId, Vec<(u32, [i32; 3])>, Vec<u32>, Vec<(u32, Ty)>)> {
    let sec = &plan.sections[s];
    let stmts = &sec.stmts[t..exit];
    let mut outs: Vec<u32> = Vec::new();
    for st in stmts {
        if !outs.contains(&st.target) {
            outs.push(st.target);
        }
    }
    let all: Vec<Instr> = stmts
        .iter()
        .flat_map(|st| st.tape.iter().copied())
        .collect();
    let operands: Vec<(u32, [i32; 3])> = operands_of(&all)
        .into_iter()
        .filter(|(q, _)| !outs.contains(q))
        .collect();
    let vk = vk_of(plan, &all);
    let ptr = module.target_config().pointer_type();
    ctx.func.signature = module.make_signature();
    for _ in 0..8 {
        ctx.func.signature.params.push(AbiParam::new(ptr));
    }
    let calls = declare_calls(module, &mut ctx.func, &all, elem, wide)?;
    let size = elem.bytes() as i64;
    let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let [ops, strides, outp, out_strides, n, rows, scal, vkp] = b.block_params(entry) else {
        return Err(jit_error("signature"));
    };
    let (ops, strides, outp, out_strides, n, rows, scal, vkp) =
        (*ops, *strides, *outp, *out_strides, *n, *rows, *scal, *vkp);
    let flags = MemFlagsData::new().with_notrap();
    let word = ptr.bytes() as i32;
    let load_ptrs = |b: &mut FunctionBuilder<'_>, base: Value, count: usize| -> Vec<Value> {
        (0..count)
            .map(|k| b.ins().load(ptr, flags, base, k as i32 * word))
            .collect()
    };
    let firsts = load_ptrs(&mut b, ops, operands.len());
    let steps = load_ptrs(&mut b, strides, operands.len());
    let out_firsts = load_ptrs(&mut b, outp, outs.len());
    let out_steps = load_ptrs(&mut b, out_strides, outs.len());
    let scalars = load_scalars(&mut b, &all, elem, scal);
    // The written quantities' values at the current point, and the row and point counters.
    let vars: Vec<_> = outs.iter().map(|_| b.declare_var(elem)).collect();
    let rv = b.declare_var(ptr);
    let iv = b.declare_var(ptr);
    let [rhead, rbody, phead, pbody, pdone, rnext, fexit] = [(); 7].map(|_| b.create_block());
    let blocks: Vec<_> = stmts.iter().map(|_| b.create_block()).collect();
    let zero = b.ins().iconst(ptr, 0);
    // The run-time K reads' error reports, in registers until the function returns.
    let errs: Vec<(Variable, Variable)> = vk
        .iter()
        .map(|_| {
            let (e, l) = (b.declare_var(types::I64), b.declare_var(types::I64));
            let z = b.ins().iconst(types::I64, 0);
            b.def_var(e, z);
            b.def_var(l, z);
            (e, l)
        })
        .collect();

    b.def_var(rv, zero);
    b.ins().jump(rhead, &[]);

    b.switch_to_block(rhead);
    let r = b.use_var(rv);
    let more = b.ins().icmp(IntCC::UnsignedLessThan, r, rows);
    b.ins().brif(more, rbody, &[], fexit, &[]);

    b.switch_to_block(rbody);
    let r = b.use_var(rv);
    // Each run-time K read's column and level at the row's first point, and its steps, in
    // registers for the row.
    let mut row_slots = Vec::new();
    for slot in 0..vk.len() {
        let (col, k) = vk_row(&mut b, vkp, slot, r);
        let get = |b: &mut FunctionBuilder<'_>, f: usize| {
            b.ins().load(types::I64, flags, vkp, vk_field(slot, f))
        };
        let [d_point, d_level, k_point, lo, hi] = [2, 3, 6, 7, 8].map(|f| get(&mut b, f));
        row_slots.push((col, k, d_point, d_level, k_point, lo, hi));
    }
    let row = |b: &mut FunctionBuilder<'_>, f: &[Value], st: &[Value]| -> Vec<Value> {
        f.iter()
            .zip(st)
            .map(|(&f, &st)| {
                let off = b.ins().imul(r, st);
                b.ins().iadd(f, off)
            })
            .collect()
    };
    let bases = row(&mut b, &firsts, &steps);
    let out_bases = row(&mut b, &out_firsts, &out_steps);
    b.def_var(iv, zero);
    b.ins().jump(phead, &[]);

    b.switch_to_block(phead);
    let i = b.use_var(iv);
    let more = b.ins().icmp(IntCC::UnsignedLessThan, i, n);
    b.ins().brif(more, pbody, &[], rnext, &[]);

    b.switch_to_block(pbody);
    let i = b.use_var(iv);
    let off = b.ins().imul_imm_s(i, size);
    let addrs: Vec<Value> = bases.iter().map(|&a| b.ins().iadd(a, off)).collect();
    let out_addrs: Vec<Value> = out_bases.iter().map(|&a| b.ins().iadd(a, off)).collect();
    for (&var, &a) in vars.iter().zip(&out_addrs) {
        let v = b.ins().load(elem, flags, a, 0);
        b.def_var(var, v);
    }
    // The point's column and level for each run-time K read; a level outside goes to `fexit`.
    let slot_regs: Vec<SlotRegs> = row_slots
        .iter()
        .zip(&errs)
        .map(
            |(&(col, k, d_point, d_level, k_point, lo, hi), &(err, err_level))| {
                let off = b.ins().imul(i, d_point);
                let col = b.ins().iadd(col, off);
                let dk = b.ins().imul(i, k_point);
                let k = b.ins().iadd(k, dk);
                SlotRegs {
                    col,
                    k,
                    d_level,
                    lo,
                    hi,
                    err,
                    err_level,
                    fail: fexit,
                }
            },
        )
        .collect();
    b.ins().jump(blocks[0], &[]);

    let to = |x: usize| if x == exit { pdone } else { blocks[x - t] };
    // Per statement: the conditions known to be set there (those of the loops whose bodies
    // hold it, when nothing else in the body writes them).
    let known: Vec<Vec<u32>> = (t..exit)
        .map(|u| {
            (t..u)
                .filter_map(|c| {
                    let e = sec.flow[c].exit?;
                    let q = sec.stmts[c].target;
                    let body = c + 1..e;
                    let boolean = plan.quantity_ty(q) == Ty::Bool;
                    (boolean && body.contains(&u) && body.clone().all(|x| sec.stmts[x].target != q))
                        .then_some(q)
                })
                .collect()
        })
        .collect();
    for (u, st) in stmts.iter().enumerate() {
        b.switch_to_block(blocks[u]);
        let local = operands_of(&st.tape);
        let mut operand = |b: &mut FunctionBuilder<'_>, k: usize| -> Value {
            let (q, off) = local[k];
            if known[u].contains(&q) {
                return match (wide, elem) {
                    (true, _) => b.ins().iconst(types::I64, 1),
                    (false, e) if e == types::F32 => b.ins().f32const(1.0),
                    (false, _) => b.ins().f64const(1.0),
                };
            }
            match outs.iter().position(|&o| o == q) {
                Some(j) => b.use_var(vars[j]),
                None => {
                    let g = operands
                        .iter()
                        .position(|&o| o == (q, off))
                        .expect("operand listed");
                    b.ins().load(elem, flags, addrs[g], 0)
                }
            }
        };
        let v = if wide {
            WideEmit {
                tape: &st.tape,
                operands: &local,
                scalars: &scalars,
                calls: &calls,
                vk: &vk,
                vkp,
                slot_regs: Some(&slot_regs),
            }
            .step_with(&mut b, i, &mut operand)
        } else {
            Emit {
                tape: &st.tape,
                operands: &local,
                scalars: &scalars,
                calls: &calls,
                elem,
            }
            .step_with(&mut b, elem, &mut operand)
        };
        let j = outs.iter().position(|&o| o == st.target).expect("listed");
        b.def_var(vars[j], v);
        let flow = sec.flow[t + u];
        match flow.exit {
            Some(e) => {
                let set = if wide {
                    b.ins().icmp_imm_s(IntCC::NotEqual, v, 0)
                } else {
                    let z = if elem == types::F64 {
                        b.ins().f64const(0.0)
                    } else {
                        b.ins().f32const(0.0)
                    };
                    b.ins().fcmp(FloatCC::NotEqual, v, z)
                };
                b.ins().brif(set, to(flow.next), &[], to(e), &[]);
            }
            None => {
                b.ins().jump(to(flow.next), &[]);
            }
        }
    }

    b.switch_to_block(pdone);
    for (&var, &a) in vars.iter().zip(&out_addrs) {
        let v = b.use_var(var);
        b.ins().store(flags, v, a, 0);
    }
    let i = b.use_var(iv);
    let i = b.ins().iadd_imm_s(i, 1);
    b.def_var(iv, i);
    b.ins().jump(phead, &[]);

    b.switch_to_block(rnext);
    let r = b.use_var(rv);
    let r = b.ins().iadd_imm_s(r, 1);
    b.def_var(rv, r);
    b.ins().jump(rhead, &[]);

    b.switch_to_block(fexit);
    for (slot, &(e, l)) in errs.iter().enumerate() {
        let (e, l) = (b.use_var(e), b.use_var(l));
        b.ins().store(flags, e, vkp, vk_field(slot, 9));
        b.ins().store(flags, l, vkp, vk_field(slot, 10));
    }
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(module.target_config());
    let id = module
        .declare_function(&format!("l{s}_{t}"), Linkage::Local, &ctx.func.signature)
        .map_err(jit_error)?;
    module.define_function(id, ctx).map_err(jit_error)?;
    module.clear_context(ctx);
    Ok((id, operands, outs, vk))
}
