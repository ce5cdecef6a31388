//! FORWARD and BACKWARD sections walking whole columns, for layouts with unit stride along K.
//!
//! Level by level, a vertical solve on such a layout strides through memory along I (or first
//! copies every column to an I-fastest buffer and back). When no statement of a section reads
//! another column's value of something the section writes (every statement is computed over
//! the core only, see [`walkable`]), each column's result depends on that column alone, so the
//! section can run column after column instead: one compiled function runs every level of the
//! section, in the section's order, and every statement of a level, in order, on a group of
//! columns at a time, each column read and written along K at unit stride. Per point these are
//! the same operations in the same order as level by level, so the results are the same bits.
//!
//! The function keeps several columns in flight (vector lanes, and several vectors), since a
//! recurrence along K (a tridiagonal solve) is one long dependency chain per column. A value a
//! statement writes is handed to the later statements of the same level in registers (the bits
//! that would be stored and loaded back); temporaries that live in one level only (`Local`)
//! never touch memory.

use crate::error::Result;
use crate::gtscript::ir::IterOrder;
use crate::gtscript::jit::abi::Slot;
use crate::gtscript::jit::emit::Emit;
use crate::gtscript::jit::helpers::{declare_calls, jit_error, operands_of};
use crate::gtscript::plan::schedule::walkable;
use crate::gtscript::plan::{Kind, Plan, Src};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AbiParam, Block, BlockArg, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};

/// The slots of section `s`: every (quantity, horizontal offset) it reads, and its targets.
fn slots_of(plan: &Plan, s: usize) -> Vec<Slot> {
    let sec = &plan.sections[s];
    let mut slots: Vec<Slot> = Vec::new();
    let mut add = |q: u32, off: [i32; 3], write: bool| {
        if matches!(plan.kinds[q as usize], Kind::Local) {
            return;
        }
        match slots
            .iter_mut()
            .find(|x| x.q == q && x.off == [off[0], off[1]])
        {
            Some(x) => {
                x.k = (x.k.0.min(off[2]), x.k.1.max(off[2]));
                x.written |= write;
            }
            None => {
                let has_k = match plan.kinds[q as usize] {
                    Kind::Field { field, .. } => plan.program.fields[field].axes[2],
                    Kind::Stored { axes, .. } => axes[2],
                    Kind::Local => true,
                };
                slots.push(Slot {
                    q,
                    off: [off[0], off[1]],
                    has_k,
                    k: (off[2], off[2]),
                    written: write,
                });
            }
        }
    };
    for st in &sec.stmts {
        for ins in &st.tape {
            for a in ins.args {
                if let Src::Q(q, off) = a {
                    add(q, off, false);
                }
            }
        }
        add(st.target, [0; 3], true);
    }
    // Those with a K axis first (see `rt::prefetch`).
    slots.sort_by_key(|x| !x.has_k);
    slots
}

/// Columns in flight per step of the column loop (in vectors of 128 bits, as the row code):
/// enough to hide a recurrence's latency, few enough that their short streams along K stay in
/// L1 (tridiagonal solve 256x256x80 float64 on gt:cpu_kfirst, under load, against 33.6 ms on
/// gt:cpu_ifirst: 53.6 ms with 2 columns, 34.0 with 4, 40.1 with 8).
const COLUMNS: usize = 4;

/// Defines the column function of section `s` in `module` when the section can walk columns;
/// returns it and its slots.
pub(crate) fn build(
    module: &mut JITModule,
    ctx: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
    plan: &Plan,
    s: usize,
    elem: Type,
) -> Result<Option<(FuncId, Vec<Slot>)>> {
    if !walkable(plan, s) {
        return Ok(None);
    }
    let sec = &plan.sections[s];
    let slots = slots_of(plan, s);
    let ptr = module.target_config().pointer_type();
    ctx.func.signature = module.make_signature();
    for _ in 0..4 {
        ctx.func.signature.params.push(AbiParam::new(ptr));
    }
    let mut calls = Vec::new();
    for st in &sec.stmts {
        calls.push(declare_calls(module, &mut ctx.func, &st.tape, elem, false)?);
    }
    let operands: Vec<Vec<(u32, [i32; 3])>> =
        sec.stmts.iter().map(|st| operands_of(&st.tape)).collect();
    let mut sig = module.make_signature();
    for _ in 0..5 {
        sig.params.push(AbiParam::new(ptr));
    }
    let pf = module
        .declare_function("gridbuf_prefetch_columns", Linkage::Import, &sig)
        .map_err(jit_error)?;
    let prefetch = module.declare_func_in_func(pf, &mut ctx.func);
    let walk = ColumnBuilder {
        plan,
        s,
        slots: &slots,
        operands: &operands,
        calls: &calls,
        elem,
        ptr,
        backward: sec.order == IterOrder::Backward,
        prefetch,
    };
    walk.define(&mut ctx.func, fctx, module.target_config())?;
    let id = module
        .declare_function(&format!("col{s}"), Linkage::Local, &ctx.func.signature)
        .map_err(jit_error)?;
    module.define_function(id, ctx).map_err(jit_error)?;
    module.clear_context(ctx);
    Ok(Some((id, slots)))
}

/// What the code of one column function is made from.
struct ColumnBuilder<'a> {
    plan: &'a Plan,
    s: usize,
    slots: &'a [Slot],
    /// Per statement: its operands (as `operands_of`) and imported math functions.
    operands: &'a [Vec<(u32, [i32; 3])>],
    calls: &'a [Vec<(
        crate::gtscript::plan::Op,
        Type,
        cranelift_codegen::ir::FuncRef,
    )>],
    elem: Type,
    ptr: Type,
    backward: bool,
    /// `gridbuf_prefetch_columns`, imported.
    prefetch: cranelift_codegen::ir::FuncRef,
}

impl ColumnBuilder<'_> {
    fn slot(&self, q: u32, off: [i32; 3]) -> usize {
        self.slots
            .iter()
            .position(|x| x.q == q && x.off == [off[0], off[1]])
            .expect("slot listed")
    }

    fn define(
        &self,
        func: &mut cranelift_codegen::ir::Function,
        fctx: &mut FunctionBuilderContext,
        config: cranelift_codegen::isa::TargetFrontendConfig,
    ) -> Result<()> {
        let mut b = FunctionBuilder::new(func, fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let [table, ncols, nlev, scal] = b.block_params(entry) else {
            return Err(jit_error("signature"));
        };
        let (table, ncols, nlev, scal) = (*table, *ncols, *nlev, *scal);
        let scalars = crate::gtscript::jit::helpers::load_scalars(
            &mut b,
            self.plan.sections[self.s]
                .stmts
                .iter()
                .flat_map(|st| &st.tape),
            self.elem,
            scal,
        );
        // Groups of `COLUMNS` columns, then single columns (each loop's blocks carry the first
        // column left and its table row).
        let lanes = 16 / self.elem.bytes() as usize;
        let unroll = (COLUMNS / lanes).max(1);
        let [vhead, shead, exit] = [2, 2, 2].map(|n| {
            let blk = b.create_block();
            for _ in 0..n {
                b.append_block_param(blk, self.ptr);
            }
            blk
        });
        let zero = b.ins().iconst(self.ptr, 0);
        b.ins().jump(vhead, &[zero.into(), table.into()]);
        let ctx = LoopCtx {
            ncols,
            nlev,
            scalars: &scalars,
        };
        self.columns(&mut b, &ctx, vhead, shead, lanes, unroll);
        self.columns(&mut b, &ctx, shead, exit, 1, 1);
        b.switch_to_block(exit);
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(config);
        Ok(())
    }

    /// The loop over groups of `lanes * unroll` columns from block `head` (parameters: the
    /// first column and its table row) while whole groups remain; then jumps to `next` with the
    /// same parameters.
    fn columns(
        &self,
        b: &mut FunctionBuilder<'_>,
        ctx: &LoopCtx<'_>,
        head: Block,
        next: Block,
        lanes: usize,
        unroll: usize,
    ) {
        let width = (lanes * unroll) as i64;
        let row = (self.slots.len() * self.ptr.bytes() as usize) as i64;
        let vt = self.vector(lanes);
        let size = self.elem.bytes() as i64;
        // Quantities the section writes and reads one level back along its walk: carried from
        // level to level in registers (no store-to-load round trip on a recurrence).
        let back = if self.backward { 1 } else { -1 };
        let sec = &self.plan.sections[self.s];
        let carried: Vec<u32> = self
            .slots
            .iter()
            .filter(|x| x.written && x.has_k && x.off == [0, 0])
            .filter(|x| {
                sec.stmts
                    .iter()
                    .flat_map(|st| &st.tape)
                    .any(|ins| ins.args.contains(&Src::Q(x.q, [0, 0, back])))
            })
            .map(|x| x.q)
            .collect();
        let nc = carried.len() * unroll;
        let [body, lhead, lbody, cnext] = [2, 3, 3, 2].map(|n| {
            let blk = b.create_block();
            for _ in 0..n {
                b.append_block_param(blk, self.ptr);
            }
            blk
        });
        for blk in [lhead, lbody] {
            for _ in 0..nc {
                b.append_block_param(blk, vt);
            }
        }
        b.switch_to_block(head);
        let (c, t) = (b.block_params(head)[0], b.block_params(head)[1]);
        let end = b.ins().iadd_imm_s(c, width);
        let fits = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, ctx.ncols);
        b.ins().brif(
            fits,
            body,
            &[c.into(), t.into()],
            next,
            &[c.into(), t.into()],
        );
        b.switch_to_block(body);
        let (c, t) = (b.block_params(body)[0], b.block_params(body)[1]);
        let zero = b.ins().iconst(self.ptr, 0);
        // The carried values start as memory holds them one level before the first.
        let before = if self.backward {
            b.ins().imul_imm_s(ctx.nlev, size)
        } else {
            b.ins().iconst(self.ptr, -size)
        };
        let mut args: Vec<BlockArg> = vec![c.into(), t.into(), zero.into()];
        {
            let mut at = Addresses::new(self, t, before, lanes * unroll);
            for &q in &carried {
                let s = self.slot(q, [0; 3]);
                for u in 0..unroll {
                    args.push(at.gather(b, vt, s, u, lanes, 0).into());
                }
            }
        }
        b.ins().jump(lhead, &args);
        // The level loop: `w` counts levels in the section's order.
        b.switch_to_block(lhead);
        let p: Vec<Value> = b.block_params(lhead).to_vec();
        let more = b.ins().icmp(IntCC::UnsignedLessThan, p[2], ctx.nlev);
        let args: Vec<BlockArg> = p.iter().map(|&v| v.into()).collect();
        b.ins()
            .brif(more, lbody, &args, cnext, &[p[0].into(), p[1].into()]);
        b.switch_to_block(lbody);
        let p: Vec<Value> = b.block_params(lbody).to_vec();
        let (c, t, w) = (p[0], p[1], p[2]);
        let level = if self.backward {
            let last = b.ins().iadd_imm_s(ctx.nlev, -1);
            b.ins().isub(last, w)
        } else {
            w
        };
        let kb = b.ins().imul_imm_s(level, size);
        // Once per cache line of levels: the next group's lines at this level, into L2 (into
        // L1 they evicted the group's own lines: tridiagonal solve 256x256x80 on gt:cpu_kfirst
        // took 45 ms with L1, 34 with L2, against 60 without, under load).
        let line = 64 / size;
        let [pf, go] = [0, 0].map(|_| b.create_block());
        let phase = b.ins().band_imm_s(w, line - 1);
        b.ins().brif(phase, go, &[], pf, &[]);
        b.switch_to_block(pf);
        let after = b.ins().iadd_imm_s(c, width);
        let ahead = b.ins().icmp(IntCC::UnsignedLessThan, after, ctx.ncols);
        let rest = b.ins().isub(ctx.ncols, after);
        let full = b.ins().iconst(self.ptr, width);
        let n = b.ins().umin(rest, full);
        let n = b.ins().select(ahead, n, zero);
        let t_next = b.ins().iadd_imm_s(t, width * row);
        let stride = b.ins().iconst(self.ptr, self.slots.len() as i64);
        let nk = self.slots.iter().filter(|x| x.has_k).count() as i64;
        let nk = b.ins().iconst(self.ptr, nk);
        b.ins().call(self.prefetch, &[t_next, n, stride, nk, kb]);
        b.ins().jump(go, &[]);
        b.switch_to_block(go);
        let mut known: Vec<Known> = carried
            .iter()
            .enumerate()
            .map(|(i, &q)| {
                (
                    (q, [0, 0, back]),
                    p[3 + i * unroll..3 + (i + 1) * unroll].to_vec(),
                )
            })
            .collect();
        self.level(b, ctx, t, kb, lanes, unroll, &mut known);
        let w1 = b.ins().iadd_imm_s(w, 1);
        let mut args: Vec<BlockArg> = vec![c.into(), t.into(), w1.into()];
        for &q in &carried {
            let (_, v) = known
                .iter()
                .find(|(key, _)| *key == (q, [0; 3]))
                .expect("a written quantity is known at the end of the level");
            args.extend(v.iter().map(|&x| BlockArg::from(x)));
        }
        b.ins().jump(lhead, &args);
        b.switch_to_block(cnext);
        let (c, t) = (b.block_params(cnext)[0], b.block_params(cnext)[1]);
        let c1 = b.ins().iadd_imm_s(c, width);
        let t1 = b.ins().iadd_imm_s(t, width * row);
        b.ins().jump(head, &[c1.into(), t1.into()]);
    }

    /// The value type of `lanes` columns.
    fn vector(&self, lanes: usize) -> Type {
        if lanes > 1 {
            self.elem.by(lanes as u32).expect("128-bit vector type")
        } else {
            self.elem
        }
    }

    /// Every statement of one level (byte offset `kb` from the slots' addresses) on
    /// `lanes * unroll` columns from table row `t`. `known` holds values of this level in
    /// registers, (quantity, offset) to one value per vector; on return it holds every
    /// quantity the level wrote, at offset 0.
    #[allow(clippy::too_many_arguments)]
    fn level(
        &self,
        b: &mut FunctionBuilder<'_>,
        ctx: &LoopCtx<'_>,
        t: Value,
        kb: Value,
        lanes: usize,
        unroll: usize,
        known: &mut Vec<Known>,
    ) {
        let flags = MemFlagsData::new().with_notrap();
        let vt = self.vector(lanes);
        let sec = &self.plan.sections[self.s];
        let mut at = Addresses::new(self, t, kb, lanes * unroll);
        for (st, (ops, calls)) in sec.stmts.iter().zip(self.operands.iter().zip(self.calls)) {
            let emit = Emit {
                tape: &st.tape,
                operands: ops,
                scalars: ctx.scalars,
                calls,
                elem: self.elem,
            };
            let mut results = Vec::with_capacity(unroll);
            for u in 0..unroll {
                let v = emit.step_with(b, vt, &mut |b: &mut FunctionBuilder<'_>, k: usize| {
                    let (q, off) = ops[k];
                    if let Some((_, v)) = known.iter().find(|(key, _)| *key == (q, off)) {
                        return v[u];
                    }
                    let s = self.slot(q, off);
                    let dk = if self.slots[s].has_k { off[2] } else { 0 };
                    at.gather(b, vt, s, u, lanes, dk)
                });
                results.push(v);
            }
            if !matches!(self.plan.kinds[st.target as usize], Kind::Local) {
                let s = self.slot(st.target, [0; 3]);
                for (u, &v) in results.iter().enumerate() {
                    for l in 0..lanes {
                        let a = at.address(b, u * lanes + l, s);
                        let x = if lanes == 1 {
                            v
                        } else {
                            b.ins().extractlane(v, l as u8)
                        };
                        b.ins().store(flags, x, a, 0);
                    }
                }
            }
            // The target's value at this level is `results` now; its values at other levels
            // (other K offsets) are other memory.
            known.retain(|(key, _)| *key != (st.target, [0; 3]));
            known.push(((st.target, [0; 3]), results));
        }
    }
}

/// The slots' addresses in the columns of one group at one level, loaded from the table on
/// first use.
struct Addresses<'w, 'a> {
    walk: &'w ColumnBuilder<'a>,
    t: Value,
    kb: Value,
    addr: Vec<Option<Value>>,
}

impl<'w, 'a> Addresses<'w, 'a> {
    fn new(walk: &'w ColumnBuilder<'a>, t: Value, kb: Value, columns: usize) -> Self {
        Addresses {
            walk,
            t,
            kb,
            addr: vec![None; columns * walk.slots.len()],
        }
    }

    /// Slot `s` of column `col`: its address (+ `kb` where it has a K axis).
    fn address(&mut self, b: &mut FunctionBuilder<'_>, col: usize, s: usize) -> Value {
        let w = self.walk;
        let n = w.slots.len();
        let (t, kb) = (self.t, self.kb);
        *self.addr[col * n + s].get_or_insert_with(|| {
            let word = w.ptr.bytes() as i32;
            let flags = MemFlagsData::new().with_notrap();
            let base = b.ins().load(w.ptr, flags, t, ((col * n + s) as i32) * word);
            if w.slots[s].has_k {
                b.ins().iadd(base, kb)
            } else {
                base
            }
        })
    }

    /// Slot `s` at K offset `dk` in the `lanes` columns of vector `u`, as one value of type
    /// `vt`.
    fn gather(
        &mut self,
        b: &mut FunctionBuilder<'_>,
        vt: Type,
        s: usize,
        u: usize,
        lanes: usize,
        dk: i32,
    ) -> Value {
        let flags = MemFlagsData::new().with_notrap();
        let size = self.walk.elem.bytes() as i32;
        let mut v = None;
        for l in 0..lanes {
            let a = self.address(b, u * lanes + l, s);
            let x = b.ins().load(self.walk.elem, flags, a, dk * size);
            v = Some(match v {
                None if lanes == 1 => x,
                None => b.ins().scalar_to_vector(vt, x),
                Some(v) => b.ins().insertlane(v, x, l as u8),
            });
        }
        v.expect("at least one lane")
    }
}

/// A value of a level held in registers: (quantity, offset) and one value per vector.
type Known = ((u32, [i32; 3]), Vec<Value>);

/// Values every level of a column loop uses.
struct LoopCtx<'a> {
    ncols: Value,
    nlev: Value,
    scalars: &'a [Value],
}
