//! A statement's row function: the vector and scalar loops over the rows of an outer step
//! (see [`build`]), and statements' row functions defined in a module ([`define_rows`]) and
//! found in its code memory ([`row_codes`]).

use crate::error::Result;
use crate::gtscript::ir::Ty;
use crate::gtscript::jit::abi::{vk_field, RowFn, StmtCode, SwapFn};
use crate::gtscript::jit::emit::Emit;
use crate::gtscript::jit::helpers::{
    declare_calls, jit_error, lane_types, load_scalars, operands_of, vk_of, vk_row,
};
use crate::gtscript::jit::module::{new_module, CodeMemory};
use crate::gtscript::jit::wide::WideEmit;
use crate::gtscript::plan::{Instr, Op, Plan};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, BlockArg, FuncRef, InstBuilder, MemFlagsData, StackSlotData,
    StackSlotKind, Type, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};
use std::sync::Arc;

/// Vector steps per iteration of the main vector loop (then single steps, then scalars).
/// Independent steps hide the latency of long dependency chains: hdiff 256x256x80 on
/// gt:cpu_ifirst took 9.4 ms with 2, 8.9 with 4, 7.95 with 8 and 7.95 with 16 (gt:cpu_kfirst:
/// 11.2, 11.0, 10.0, 11.3).
const UNROLL: u32 = 8;

/// Tapes reading more operands than this keep their current addresses in a stack array instead of
/// carrying them through the loops as block parameters (one per operand, live across every
/// loop: Cranelift's time grew quadratically with them, 8 s for one statement summing 2400
/// temporaries), and are compiled without Cranelift's optimizations (its e-graph pass computes
/// a pure operation where its value is first needed: a sum's additions all moved to the end
/// of the step, every loaded operand live until then, and register allocation was quadratic
/// in the operands, 3.1 s for 6000 of them; 0.27 s without). Tapes longer than [`LONG_TAPE`]
/// instructions run one step per iteration: their own instructions give the processor enough
/// independent work. So do tapes that call a math function: every vector register is spilled
/// around each call, so independent steps overlap nothing, and eight copies of such a tape
/// made most of the code-generation time of pace's physics.
pub(crate) const CARRIED_OPERANDS: usize = 32;

/// See [`CARRIED_OPERANDS`].
const LONG_TAPE: usize = 256;

/// Builds `f(operands, strides, out, out_stride, n, rows, scalars)`: for each of `rows` rows
/// (operand `k`'s row `r` starts at `operands[k] + r * strides[k]` bytes, the output's at
/// `out + r * out_stride`), a vector loop over the whole steps of the row, then a scalar loop
/// over the rest.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    func: &mut cranelift_codegen::ir::Function,
    fctx: &mut FunctionBuilderContext,
    tape: &[Instr],
    operands: &[(u32, [i32; 3])],
    vk: &[(u32, Ty)],
    calls: &[(Op, Type, FuncRef)],
    elem: Type,
    wide: bool,
    ptr: Type,
    config: cranelift_codegen::isa::TargetFrontendConfig,
) -> Result<()> {
    // Mixed-type tapes run one point per step (each value in its own type), homogeneous ones
    // in 128-bit vectors.
    let lanes = if wide { 1 } else { 16 / elem.bytes() };
    let vt = if wide {
        elem
    } else {
        elem.by(lanes).ok_or_else(|| jit_error("vector type"))?
    };
    let size = elem.bytes() as i64;
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let [ops, strides, out, out_stride, n, rows, scal, vkp] = b.block_params(entry) else {
        return Err(jit_error("signature"));
    };
    let (ops, strides, out, out_stride, n, rows, scal, vkp) =
        (*ops, *strides, *out, *out_stride, *n, *rows, *scal, *vkp);
    // Not `aligned`: operand rows start at any element.
    let flags = MemFlagsData::new().with_notrap();
    let word = ptr.bytes() as usize;
    // Many operands: their row addresses in `rows_at`, computed at each row's start.
    let many = operands.len() > CARRIED_OPERANDS;
    let rows_at = many.then(|| {
        b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (operands.len() * word) as u32,
            3,
        ))
    });
    let unroll = if tape.len() > LONG_TAPE || !calls.is_empty() {
        1
    } else {
        UNROLL
    };
    let carried_ops = if many { 0 } else { operands.len() };
    let firsts: Vec<Value> = (0..carried_ops)
        .map(|k| b.ins().load(ptr, flags, ops, (k * word) as i32))
        .collect();
    let steps: Vec<Value> = (0..carried_ops)
        .map(|k| b.ins().load(ptr, flags, strides, (k * word) as i32))
        .collect();
    let scalars = load_scalars(&mut b, tape, elem, scal);
    let whole = b.ins().band_imm_s(n, -((lanes * unroll) as i64));
    let whole1 = b.ins().band_imm_s(n, -(lanes as i64));
    let zero = b.ins().iconst(ptr, 0);
    let emit = Emit {
        tape,
        operands,
        scalars: &scalars,
        calls,
        elem,
    };
    let wide_emit = WideEmit {
        tape,
        operands,
        scalars: &scalars,
        calls,
        vk,
        vkp,
        slot_regs: None,
    };
    // Blocks inside a row carry the current addresses (operands, then the output) as
    // parameters, advanced by each iteration: row bases computed once per row and indexed in
    // the loops were recomputed at every use (their inputs reloaded from the stack), a third
    // of the instructions of hdiff's statements.
    let carried = carried_ops + 1;
    let [rhead, rbody, vhead, vbody, v1head, v1body, shead, sbody, rnext, exit] = [
        0, 0, carried, carried, carried, carried, carried, carried, carried, 0,
    ]
    .map(|extra| {
        let blk = b.create_block();
        for _ in 0..1 + extra {
            b.append_block_param(blk, ptr);
        }
        blk
    });
    b.ins().jump(rhead, &[zero.into()]);
    // The row loop. (Row addresses carried from row to row instead, advanced by the strides,
    // ran out of registers: the loops then reloaded their addresses from the stack.)
    b.switch_to_block(rhead);
    let r = b.block_params(rhead)[0];
    let more = b.ins().icmp(IntCC::UnsignedLessThan, r, rows);
    b.ins().brif(more, rbody, &[r.into()], exit, &[r.into()]);
    b.switch_to_block(rbody);
    let r = b.block_params(rbody)[0];
    // Each run-time K read's column and level at the row's first point.
    for slot in 0..vk.len() {
        let (col, k) = vk_row(&mut b, vkp, slot, r);
        b.ins().store(flags, col, vkp, vk_field(slot, 11));
        b.ins().store(flags, k, vkp, vk_field(slot, 12));
    }
    if let Some(slot) = rows_at {
        for k in 0..operands.len() {
            let f = b.ins().load(ptr, flags, ops, (k * word) as i32);
            let st = b.ins().load(ptr, flags, strides, (k * word) as i32);
            let off = b.ins().imul(r, st);
            let at = b.ins().iadd(f, off);
            b.ins().stack_store(ptr, at, slot, (k * word) as i32);
        }
    }
    let mut start: Vec<BlockArg> = vec![zero.into()];
    for (&f, &st) in firsts
        .iter()
        .chain([&out])
        .zip(steps.iter().chain([&out_stride]))
    {
        let off = b.ins().imul(r, st);
        start.push(b.ins().iadd(f, off).into());
    }
    b.ins().jump(vhead, &start);
    let counted = |b: &mut FunctionBuilder<'_>,
                   head: Block,
                   body: Block,
                   next: Block,
                   limit: Value,
                   vt: Type,
                   step: i64,
                   unroll: u32| {
        b.switch_to_block(head);
        let args: Vec<BlockArg> = b.block_params(head).iter().map(|&v| v.into()).collect();
        let i = b.block_params(head)[0];
        let more = b.ins().icmp(IntCC::UnsignedLessThan, i, limit);
        b.ins().brif(more, body, &args, next, &args);
        b.switch_to_block(body);
        let params = b.block_params(body).to_vec();
        let (i, ptrs) = (params[0], &params[1..]);
        let (dst, addrs) = ptrs.split_last().expect("the output's address is carried");
        // `unroll` independent steps per iteration, for instruction-level parallelism.
        for u in 0..unroll {
            let at = (u * vt.bytes()) as i32;
            let v = match rows_at {
                // Operand `k` at its current address, kept on the stack (no value of the step
                // lives through it all: one that did, the element offset, made Cranelift's
                // register allocation quadratic in the operands).
                Some(slot) => {
                    let lt = if wide { types::I64 } else { vt };
                    let mut operand = |b: &mut FunctionBuilder<'_>, k: usize| {
                        let addr = b.ins().stack_load(ptr, ptr, slot, (k * word) as i32);
                        b.ins().load(lt, flags, addr, at)
                    };
                    if wide {
                        let point = b.ins().iadd_imm_s(i, u as i64);
                        wide_emit.step_with(b, point, &mut operand)
                    } else {
                        emit.step_with(b, vt, &mut operand)
                    }
                }
                None if wide => {
                    let point = b.ins().iadd_imm_s(i, u as i64);
                    wide_emit.step(b, addrs, at, point)
                }
                None => emit.step(b, vt, addrs, at),
            };
            b.ins().store(flags, v, *dst, at);
        }
        let advance = step * unroll as i64;
        if let Some(slot) = rows_at {
            for k in 0..operands.len() {
                let at = (k * word) as i32;
                let addr = b.ins().stack_load(ptr, ptr, slot, at);
                let next = b.ins().iadd_imm_s(addr, advance * size);
                b.ins().stack_store(ptr, next, slot, at);
            }
        }
        let mut again: Vec<BlockArg> = vec![b.ins().iadd_imm_s(i, advance).into()];
        for &p in ptrs {
            again.push(b.ins().iadd_imm_s(p, advance * size).into());
        }
        b.ins().jump(head, &again);
    };
    counted(
        &mut b,
        vhead,
        vbody,
        v1head,
        whole,
        vt,
        lanes as i64,
        unroll,
    );
    counted(&mut b, v1head, v1body, shead, whole1, vt, lanes as i64, 1);
    counted(&mut b, shead, sbody, rnext, n, elem, 1, 1);
    let _ = wide;
    b.switch_to_block(rnext);
    let r2 = b.ins().iadd_imm_s(r, 1);
    b.ins().jump(rhead, &[r2.into()]);
    b.switch_to_block(exit);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(config);
    Ok(())
}

/// What [`define_rows`] defined for one statement: (section, statement, in the plain module,
/// function, operands, whether it reads its own target along each axis, run-time K reads).
pub(crate) type RowId = (
    usize,
    usize,
    bool,
    FuncId,
    Vec<(u32, [i32; 3])>,
    [bool; 3],
    Vec<(u32, Ty)>,
);

/// Defines the row functions of `stmts` (section, statement) of `plan` in `module`; those of
/// statements with many operands in `plain`, made without Cranelift's optimizations (see
/// `CARRIED_OPERANDS`) when first needed.
pub(crate) fn define_rows(
    module: &mut JITModule,
    plain: &mut Option<JITModule>,
    ctx: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
    plan: &Plan,
    stmts: impl Iterator<Item = (usize, usize)>,
) -> Result<Vec<RowId>> {
    let (elem, wide) = lane_types(plan.lanes);
    let mut ids = Vec::new();
    for (s, t) in stmts {
        let st = &plan.sections[s].stmts[t];
        let operands = operands_of(&st.tape);
        let many = operands.len() > CARRIED_OPERANDS;
        if many && plain.is_none() {
            *plain = new_module(false)?;
        }
        let module = match plain.as_mut() {
            Some(m) if many => m,
            _ => &mut *module,
        };
        let vk = vk_of(plan, &st.tape);
        let ptr = module.target_config().pointer_type();
        ctx.func.signature = module.make_signature();
        for _ in 0..8 {
            ctx.func.signature.params.push(AbiParam::new(ptr));
        }
        let calls = declare_calls(module, &mut ctx.func, &st.tape, elem, wide)?;
        build(
            &mut ctx.func,
            fctx,
            &st.tape,
            &operands,
            &vk,
            &calls,
            elem,
            wide,
            ptr,
            module.target_config(),
        )?;
        let id = module
            .declare_function(&format!("s{s}_{t}"), Linkage::Local, &ctx.func.signature)
            .map_err(jit_error)?;
        module.define_function(id, ctx).map_err(jit_error)?;
        module.clear_context(ctx);
        let reads_target_along = [0, 1, 2].map(|a| {
            operands
                .iter()
                .any(|&(q, off)| q == st.target && off[a] != 0)
        });
        ids.push((s, t, many, id, operands, reads_target_along, vk));
    }
    Ok(ids)
}

/// The row functions `ids` defined (see [`define_rows`]) in `memory`'s modules: module 0, or
/// module 1 for those in the plain module.
pub(crate) fn row_codes(
    memory: &CodeMemory,
    ids: Vec<RowId>,
) -> Result<Vec<(usize, usize, StmtCode)>> {
    ids.into_iter()
        .map(|(s, t, many, id, operands, reads_target_along, vk)| {
            let f = memory.function::<RowFn>(usize::from(many), id)?;
            let code = StmtCode {
                f: Arc::new(SwapFn::new(f)),
                operands,
                reads_target_along,
                vk,
            };
            Ok((s, t, code))
        })
        .collect()
}
