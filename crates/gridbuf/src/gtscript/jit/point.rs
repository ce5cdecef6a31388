//! Machine code that runs a whole `while` loop, or a whole FORWARD/BACKWARD section with
//! loops, point by point.
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
//!
//! A FORWARD or BACKWARD section whose statements all meet that rule ([`crate::gtscript::plan::schedule::section`]) is one such
//! function as a whole, its temporaries of one level in registers only, walking a tile in one
//! of two ways ([`PointWalk`]): each column's levels in the section's order (what GT4Py's
//! gt:cpu_kfirst code does: the remap's search index goes from level to level in a register
//! and memory is read along K), or each level's rows of I. Along columns, a run of such
//! sections is one function ([`crate::gtscript::plan::schedule::group`]), each column going through all of them in turn. How
//! the functions run over a tile is [`crate::gtscript::exec::launch`].

use crate::error::Result;
use crate::gtscript::ir::{IterOrder, KIndex, Ty};
use crate::gtscript::jit::abi::{vk_field, PartCode, VkSlot};
use crate::gtscript::jit::emit::Emit;
use crate::gtscript::jit::helpers::{
    declare_calls, jit_error, load_scalars, operands_of, vk_of, vk_row,
};
use crate::gtscript::jit::wide::{SlotRegs, WideEmit};
use crate::gtscript::plan::schedule::{has_axis, surely_written, PointWalk};
use crate::gtscript::plan::{Instr, Kind, Op, Plan, Src, StmtPlan};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, AbiParam, Block, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Type, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};
use rustc_hash::FxHashSet;

/// The statements `first..exit` of a section that one point function runs, and how it walks.
pub(crate) struct PointRange {
    pub(crate) first: usize,
    pub(crate) exit: usize,
    /// `None`: a loop run on a block's rows (every operand a row of the block, one element per
    /// point); it stores every quantity it writes, for the statements after it. A whole
    /// section's walk (see [`PointWalk`]): temporaries that live in one level (`Kind::Local`) stay
    /// in registers, and quantities without the walk's point axis stay put from point to
    /// point.
    pub(crate) walk: Option<PointWalk>,
}

/// One part of a point function: the statements `t..exit` of section `s`, the quantities
/// they write (each in a register per point), store (`outs`; `load`: loaded at the point's
/// start), read from memory (`operands`) and read at run-time K levels (`vk`).
/// Tier two's C generator (`cgen::source`) reads the same parts.
pub(crate) struct Part<'p> {
    pub(crate) s: usize,
    pub(crate) t: usize,
    pub(crate) exit: usize,
    pub(crate) stmts: &'p [StmtPlan],
    pub(crate) written: Vec<u32>,
    pub(crate) outs: Vec<u32>,
    pub(crate) all: Vec<Instr>,
    pub(crate) operands: Vec<(u32, [i32; 3])>,
    pub(crate) load: Vec<bool>,
    pub(crate) vk: Vec<(u32, Ty)>,
    /// Along a column, the offset at which a point reads what the point before wrote.
    pub(crate) back: Option<[i32; 3]>,
    /// Per quantity of `written`: whether it starts every point at zero instead of being
    /// loaded (a temporary whose value before the part no other statement can give it; see
    /// [`Part::new`]).
    pub(crate) zeroed: Vec<bool>,
}

/// On the column walk, the offset at which a point reads what the point before it wrote (one
/// level against the walk's direction); `None` on other walks.
fn back_offset(plan: &Plan, s: usize, walk: Option<PointWalk>) -> Option<[i32; 3]> {
    match walk {
        Some(PointWalk::Columns) if plan.sections[s].order == IterOrder::Backward => {
            Some([0, 0, 1])
        }
        Some(PointWalk::Columns) => Some([0, 0, -1]),
        _ => None,
    }
}

impl<'p> Part<'p> {
    /// The part of `plan` that the statements of `r` in section `s` make.
    pub(crate) fn new(plan: &'p Plan, s: usize, r: &PointRange) -> Part<'p> {
        let sec = &plan.sections[s];
        let (t, exit, walk) = (r.first, r.exit, r.walk);
        let range = t..exit;
        let stmts = &sec.stmts[t..exit];
        let mut written: Vec<u32> = Vec::new();
        for st in stmts {
            if !written.contains(&st.target) {
                written.push(st.target);
            }
        }
        let all: Vec<Instr> = stmts
            .iter()
            .flat_map(|st| st.tape.iter().copied())
            .collect();
        // A quantity is loaded at the point's start where some statement reads it before it
        // is surely written, or the point can end without writing it.
        let at_end = surely_written(plan, s, &range, exit);
        let mut read_first: FxHashSet<u32> = Default::default();
        for u in t..exit {
            let reads: Vec<u32> = operands_of(&sec.stmts[u].tape)
                .into_iter()
                .filter(|&(q, off)| off == [0; 3] && written.contains(&q))
                .map(|(q, _)| q)
                .collect();
            if !reads.is_empty() {
                let before = surely_written(plan, s, &range, u);
                read_first.extend(reads.into_iter().filter(|q| !before.contains(q)));
            }
        }
        let needs_load = |q: u32| !at_end.contains(&q) || read_first.contains(&q);
        // Along a column, what the point before stored is read one level back (against the
        // walk) from its register; a stored temporary that needs no load and that nothing else
        // reads then (this section only there and at the point, no later section) is never
        // stored.
        let back = back_offset(plan, s, walk);
        let unread = |q: u32| {
            matches!(plan.kinds[q as usize], Kind::Stored { .. })
                && back.is_some()
                && !needs_load(q)
                && plan.sections[s..].iter().enumerate().all(|(x, later)| {
                    later.stmts.iter().flat_map(|st| &st.tape).all(|ins| {
                        ins.op != Op::LoadK(q, KIndex::Relative)
                            && ins.op != Op::LoadK(q, KIndex::Absolute)
                            && ins.args.iter().all(|a| match *a {
                                Src::Q(r, off) if r == q => {
                                    x == 0 && (off == [0; 3] || Some(off) == back)
                                }
                                _ => true,
                            })
                    })
                })
        };
        // The statements outside the part, every section's (asked only of a part on a block's
        // rows: a walk's temporaries live in one level).
        let elsewhere = || {
            plan.sections
                .iter()
                .enumerate()
                .flat_map(move |(x, other)| {
                    other
                        .stmts
                        .iter()
                        .enumerate()
                        .filter(move |&(u, _)| x != s || u < t || u >= exit)
                        .map(|(_, st)| st)
                })
        };
        // A loop or straight run on a block's rows (no walk) stores what it writes for the
        // statements after it; a block temporary that no other statement reads, and that the
        // run reads only after writing it, needs no store (pace's neg_adj3.fix_neg_water: 40
        // temporaries of a 48x48x79 block went through memory, 12 ms of its calls).
        // A block temporary that no statement outside the part writes or reads gets, before
        // the part writes it at a point, only the uninitialised memory GT4Py gives it (a
        // masked assignment's old value where the mask is off): it starts every point at
        // zero, as on a walk, and is neither loaded nor stored (pace's satadjust: 86 such
        // temporaries through memory at every point).
        let (read_elsewhere, written_elsewhere): (FxHashSet<u32>, FxHashSet<u32>) =
            if walk.is_none() {
                let read = elsewhere()
                    .flat_map(|st| &st.tape)
                    .flat_map(Instr::quantities)
                    .chain(sec.var_reads.iter().copied())
                    .collect();
                (read, elsewhere().map(|st| st.target).collect())
            } else {
                Default::default()
            };
        let local = |q: u32| matches!(plan.kinds[q as usize], Kind::Local);
        let zeroed: Vec<bool> = written
            .iter()
            .map(|&q| {
                local(q)
                    && (walk.is_some()
                        || (!read_elsewhere.contains(&q)
                            && !written_elsewhere.contains(&q)
                            && needs_load(q)))
            })
            .collect();
        let unstored =
            |q: u32| walk.is_none() && local(q) && !read_elsewhere.contains(&q) && !needs_load(q);
        let outs: Vec<u32> = written
            .iter()
            .zip(&zeroed)
            .filter(|&(_, &z)| !z)
            .map(|(&q, _)| q)
            .filter(|&q| !unread(q))
            .filter(|&q| !unstored(q))
            .collect();
        let operands: Vec<(u32, [i32; 3])> = operands_of(&all)
            .into_iter()
            .filter(|&(q, off)| !(written.contains(&q) && off == [0; 3]))
            .collect();
        let load: Vec<bool> = outs.iter().map(|&q| needs_load(q)).collect();
        let vk = vk_of(plan, &all);
        Part {
            s,
            t,
            exit,
            stmts,
            written,
            outs,
            all,
            operands,
            load,
            vk,
            back,
            zeroed,
        }
    }
}

/// Defines the point function of `parts` (each the statements of a [`PointRange`] of a
/// section: a loop, see [`crate::gtscript::plan::schedule::range`], or a whole section, see [`crate::gtscript::plan::schedule::section`]; several only for
/// whole sections walking columns, see [`crate::gtscript::plan::schedule::group`]) in `module`, for elements of type `elem`
/// (`I64` lanes when `wide`); returns it with its operands, stored quantities and run-time K
/// reads, part after part, and how many of each every part has (see [`crate::gtscript::jit::abi::LoopCode`]). Per row,
/// each part runs its points in turn.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(crate) fn build(
    module: &mut JITModule,
    ctx: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
    plan: &Plan,
    parts: &[(usize, PointRange)],
    elem: Type,
    wide: bool,
) -> Result<(
    FuncId,
    Vec<(u32, [i32; 3])>,
    Vec<u32>,
    Vec<(u32, Ty)>,
    Vec<PartCode>,
)> {
    let walk = parts.first().ok_or_else(|| jit_error("no part"))?.1.walk;
    let point_axis = walk.map(PointWalk::axis);
    let size = elem.bytes() as i64;
    let ps: Vec<Part<'_>> = parts.iter().map(|(s, r)| Part::new(plan, *s, r)).collect();
    let every: Vec<Instr> = ps.iter().flat_map(|p| p.all.iter().copied()).collect();
    let ptr = module.target_config().pointer_type();
    ctx.func.signature = module.make_signature();
    for _ in 0..9 {
        ctx.func.signature.params.push(AbiParam::new(ptr));
    }
    let calls = declare_calls(module, &mut ctx.func, &every, elem, wide)?;
    let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let [ops, strides, outp, out_strides, np, rows, scal, vkp_all, stop] = b.block_params(entry)
    else {
        return Err(jit_error("signature"));
    };
    let (ops, strides, outp, out_strides, np, rows, scal, vkp_all, stop) = (
        *ops,
        *strides,
        *outp,
        *out_strides,
        *np,
        *rows,
        *scal,
        *vkp_all,
        *stop,
    );
    let flags = MemFlagsData::new().with_notrap();
    let word = ptr.bytes() as i32;
    let load_ptrs =
        |b: &mut FunctionBuilder<'_>, base: Value, from: usize, count: usize| -> Vec<Value> {
            (from..from + count)
                .map(|k| b.ins().load(ptr, flags, base, k as i32 * word))
                .collect()
        };
    let scalars = load_scalars(&mut b, &every, elem, scal);
    // Per part: its operands' and stored quantities' first rows and row steps, its number of
    // points and its run-time K reads' slots (each part's after the parts' before it).
    let mut entries = Vec::new();
    let (mut o_ops, mut o_outs, mut o_vk) = (0, 0, 0);
    for (x, p) in ps.iter().enumerate() {
        let firsts = load_ptrs(&mut b, ops, o_ops, p.operands.len());
        let steps = load_ptrs(&mut b, strides, o_ops, p.operands.len());
        let out_firsts = load_ptrs(&mut b, outp, o_outs, p.outs.len());
        let out_steps = load_ptrs(&mut b, out_strides, o_outs, p.outs.len());
        let n = b.ins().load(ptr, flags, np, x as i32 * word);
        let vkp = b
            .ins()
            .iadd_imm_s(vkp_all, (o_vk * std::mem::size_of::<VkSlot>()) as i64);
        o_ops += p.operands.len();
        o_outs += p.outs.len();
        o_vk += p.vk.len();
        entries.push((firsts, steps, out_firsts, out_steps, n, vkp));
    }
    // The written quantities' values at the current point, and the row and point counters.
    // In mixed-type code, floats in float registers (the lanes' bits).
    let reg_ty = |q: u32| match plan.quantity_ty(q) {
        t if wide && t.is_float() => types::F64,
        _ => elem,
    };
    let rv = b.declare_var(ptr);
    let iv = b.declare_var(ptr);
    let [rhead, rnext, fexit] = [(); 3].map(|_| b.create_block());
    let rbodies: Vec<_> = ps.iter().map(|_| b.create_block()).collect();
    let zero = b.ins().iconst(ptr, 0);
    b.def_var(rv, zero);
    b.ins().jump(rhead, &[]);

    b.switch_to_block(rhead);
    let r = b.use_var(rv);
    let more = b.ins().icmp(IntCC::UnsignedLessThan, r, rows);
    b.ins().brif(more, rbodies[0], &[], fexit, &[]);

    for (x, (p, (firsts, steps, out_firsts, out_steps, n, vkp))) in
        ps.iter().zip(&entries).enumerate()
    {
        let (n, vkp) = (*n, *vkp);
        let Part {
            s,
            t,
            exit,
            stmts,
            written,
            outs,
            all,
            operands,
            load,
            vk,
            back,
            zeroed,
        } = p;
        let (s, t, exit) = (*s, *t, *exit);
        let sec = &plan.sections[s];
        let vars: Vec<_> = written.iter().map(|&q| b.declare_var(reg_ty(q))).collect();
        let [phead, pbody, pdone] = [(); 3].map(|_| b.create_block());
        let blocks: Vec<_> = stmts.iter().map(|_| b.create_block()).collect();
        let after = rbodies.get(x + 1).copied().unwrap_or(rnext);
        b.switch_to_block(rbodies[x]);
        let r = b.use_var(rv);
        // Each run-time K read's column and level at the row's first point, and what the row's
        // points need of it, in registers for the row.
        // Counted from the slot's lowest allowed level (see [`SlotRegs`]): the column's address of
        // that level, the row's first level minus it, the number allowed; then what the points'
        // columns and levels move by (nothing but the level, along a column), and the lowest
        // level itself where some read gives an absolute level.
        let absolute: Vec<bool> = vk
            .iter()
            .map(|&(q, _)| {
                all.iter()
                    .any(|ins| ins.op == Op::LoadK(q, crate::gtscript::ir::KIndex::Absolute))
            })
            .collect();
        let mut row_slots: Vec<Vec<Value>> = Vec::new();
        for (slot, &abs) in absolute.iter().enumerate() {
            let (col, k) = vk_row(&mut b, vkp, slot, r);
            let get = |b: &mut FunctionBuilder<'_>, f: usize| {
                b.ins().load(types::I64, flags, vkp, vk_field(slot, f))
            };
            let [lo, hi] = [7, 8].map(|f| get(&mut b, f));
            let d_level = match walk {
                // Levels one element apart (checked by `run_points`).
                Some(PointWalk::Columns) => b.ins().iconst(types::I64, size),
                _ => get(&mut b, 3),
            };
            let low = b.ins().imul(lo, d_level);
            let base = b.ins().iadd(col, low);
            let rel = b.ins().isub(k, lo);
            let span = b.ins().isub(hi, lo);
            let mut fields = vec![base, rel, span];
            match walk {
                Some(PointWalk::Columns) => {}
                Some(PointWalk::Levels) => fields.extend([get(&mut b, 2), d_level]),
                None => fields.extend([get(&mut b, 2), d_level, get(&mut b, 6)]),
            }
            if abs {
                fields.push(lo);
            }
            row_slots.push(fields);
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
        let bases = row(&mut b, firsts, steps);
        let out_bases = row(&mut b, out_firsts, out_steps);
        // The row's values reach the points through a record on the stack, loaded where used:
        // as plain values (or variables defined once), Cranelift computes them again at every use
        // inside the point loop, from values it spilled.
        let values: Vec<Value> = bases
            .iter()
            .chain(&out_bases)
            .chain(row_slots.iter().flatten())
            .copied()
            .collect();
        let record = b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (values.len() * 8) as u32,
            3,
        ));
        for (x, &v) in values.iter().enumerate() {
            b.ins().stack_store(ptr, v, record, x as i32 * 8);
        }
        let kept = |b: &mut FunctionBuilder<'_>, x: usize| -> Value {
            b.ins().stack_load(ptr, types::I64, record, x as i32 * 8)
        };
        let (n_bases, n_outs) = (bases.len(), out_bases.len());
        // Operands read one level back of what the part writes, from the register of the point
        // before (see `Part::new`); each row's first point reads the level before from memory.
        let carried: Vec<Option<usize>> = operands
            .iter()
            .map(|&(q, off)| {
                (Some(off) == *back)
                    .then(|| written.iter().position(|&o| o == q))
                    .flatten()
            })
            .collect();
        if carried.iter().any(Option::is_some) {
            // (Only where the part has points: a part with no level has no memory to read. The
            // planner gives every interval a level, so this guards the code, not a case.)
            let init = b.create_block();
            b.ins().brif(n, init, &[], after, &[]);
            b.switch_to_block(init);
            for (g, c) in carried.iter().enumerate() {
                if let Some(w) = *c {
                    let v = b.ins().load(reg_ty(operands[g].0), flags, bases[g], 0);
                    b.def_var(vars[w], v);
                }
            }
        }
        b.def_var(iv, zero);
        b.ins().jump(phead, &[]);

        b.switch_to_block(phead);
        let i = b.use_var(iv);
        let more = b.ins().icmp(IntCC::UnsignedLessThan, i, n);
        b.ins().brif(more, pbody, &[], after, &[]);

        b.switch_to_block(pbody);
        let i = b.use_var(iv);
        // The point's byte offset from the row's first point, for every quantity with the point
        // axis (one element per point, down the column when walking a BACKWARD section).
        let step = match walk {
            Some(PointWalk::Columns) if sec.order == IterOrder::Backward => -size,
            _ => size,
        };
        let at = b.ins().imul_imm_s(i, step);
        let moves = |q: u32| point_axis.is_none_or(|a| has_axis(plan, q, a));
        // The point's address of operand `x` (`x < n_bases`) or stored quantity `x - n_bases`.
        let address = |b: &mut FunctionBuilder<'_>, x: usize| -> Value {
            let q = if x < n_bases {
                operands[x].0
            } else {
                outs[x - n_bases]
            };
            let a = kept(b, x);
            if moves(q) {
                b.ins().iadd(a, at)
            } else {
                a
            }
        };
        // Every operand once per point, at its start: reads inside loops would load again at every
        // pass (Cranelift keeps no load out of a loop). All lie inside the memory the caller
        // checked, so loading those a point never reads is harmless.
        let values: Vec<Value> = operands
            .iter()
            .enumerate()
            .map(|(g, &(q, _))| match carried[g] {
                Some(w) => b.use_var(vars[w]),
                None => {
                    let a = address(&mut b, g);
                    b.ins().load(reg_ty(q), flags, a, 0)
                }
            })
            .collect();
        // A temporary that lives in the part starts every point at zero (`Part::zeroed`): a
        // statement may read it before any writes it at the point (a masked assignment keeps
        // its old value where the mask is off; GT4Py's temporary is uninitialised there), and
        // it must not see the point before's value.
        for (w, &q) in written.iter().enumerate() {
            if zeroed[w] {
                let v = match reg_ty(q) {
                    types::F64 => b.ins().f64const(0.0),
                    types::F32 => b.ins().f32const(0.0),
                    t => b.ins().iconst(t, 0),
                };
                b.def_var(vars[w], v);
            }
        }
        for j in 0..outs.len() {
            if load[j] {
                let a = address(&mut b, n_bases + j);
                let v = b.ins().load(reg_ty(outs[j]), flags, a, 0);
                let w = written.iter().position(|&q| q == outs[j]).expect("listed");
                b.def_var(vars[w], v);
            }
        }
        // The point's column and level for each run-time K read; a level outside goes to `fexit`.
        let level_dir = if step < 0 { -1 } else { 1 };
        let mut at_slot = n_bases + n_outs;
        let mut slot_regs: Vec<SlotRegs> = Vec::new();
        for (fields, &abs) in row_slots.iter().zip(&absolute) {
            let kept_fields: Vec<Value> = (at_slot..at_slot + fields.len())
                .map(|x| kept(&mut b, x))
                .collect();
            at_slot += fields.len();
            let mut f = kept_fields.into_iter();
            let mut next = || f.next().expect("slot field");
            let (base, rel, span) = (next(), next(), next());
            // Along K: the column stays, the level moves; along I: the other way round.
            let (base, rel, d_level) = match walk {
                Some(PointWalk::Columns) => {
                    let dk = b.ins().imul_imm_s(i, level_dir);
                    (
                        base,
                        b.ins().iadd(rel, dk),
                        b.ins().iconst(types::I64, size),
                    )
                }
                Some(PointWalk::Levels) => {
                    let (d_point, d_level) = (next(), next());
                    let off = b.ins().imul(i, d_point);
                    (b.ins().iadd(base, off), rel, d_level)
                }
                None => {
                    let (d_point, d_level, k_point) = (next(), next(), next());
                    let off = b.ins().imul(i, d_point);
                    let dk = b.ins().imul(i, k_point);
                    (b.ins().iadd(base, off), b.ins().iadd(rel, dk), d_level)
                }
            };
            let lo = abs.then(&mut next);
            slot_regs.push(SlotRegs {
                base,
                rel,
                lo,
                d_level,
                span,
                fail: fexit,
            });
        }
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
                        (boolean
                            && body.contains(&u)
                            && body.clone().all(|x| sec.stmts[x].target != q))
                        .then_some(q)
                    })
                    .collect()
            })
            .collect();
        // Statement `u`'s code in the current block, ending in its branch: a `while` condition
        // branches into its body or past the loop, anything else jumps to its successor.
        let emit = |b: &mut FunctionBuilder<'_>, u: usize, back: Option<Block>| {
            let st = &stmts[u];
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
                match written
                    .iter()
                    .position(|&o| o == q)
                    .filter(|_| off == [0; 3])
                {
                    Some(j) => b.use_var(vars[j]),
                    None => {
                        let g = operands
                            .iter()
                            .position(|&o| o == (q, off))
                            .expect("operand listed");
                        values[g]
                    }
                }
            };
            let v = if wide {
                WideEmit {
                    tape: &st.tape,
                    operands: &local,
                    scalars: &scalars,
                    calls: &calls,
                    vk,
                    vkp,
                    slot_regs: Some(&slot_regs),
                }
                .step_typed(b, i, &mut operand)
            } else {
                Emit {
                    tape: &st.tape,
                    operands: &local,
                    scalars: &scalars,
                    calls: &calls,
                    elem,
                }
                .step_with(b, elem, &mut operand)
            };
            let j = written
                .iter()
                .position(|&o| o == st.target)
                .expect("listed");
            let v = WideEmit::as_type(b, v, reg_ty(st.target));
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
                    b.ins().jump(back.unwrap_or_else(|| to(flow.next)), &[]);
                }
            }
        };
        for (u, &block) in blocks.iter().enumerate() {
            b.switch_to_block(block);
            // The last statement of a loop's body tests the loop's condition again right after
            // it (a copy of the condition's code, laid out next): one branch back per pass
            // instead of a jump up to the test and a branch down into the body.
            let c = sec.flow[t + u].next;
            let again = (sec.flow[t + u].exit.is_none()
                && (t..=t + u).contains(&c)
                && sec.flow[c].exit.is_some())
            .then(|| b.create_block());
            emit(&mut b, u, again);
            if let Some(again) = again {
                b.switch_to_block(again);
                // At every pass the interrupt flag (set by the thread that made the call, which
                // polls while the loop runs elsewhere): set, stop as a K read outside does. No
                // call here: a call in the loop made its values live across it, spilled (the
                // vertical remap 50 -> 75 ms).
                let set = b.ins().load(types::I8, flags, stop, 0);
                let go_on = b.create_block();
                b.ins().brif(set, fexit, &[], go_on, &[]);
                b.switch_to_block(go_on);
                emit(&mut b, c - t, None);
            }
        }

        b.switch_to_block(pdone);
        for (j, &q) in outs.iter().enumerate() {
            let a = address(&mut b, n_bases + j);
            let w = written.iter().position(|&o| o == q).expect("listed");
            let v = b.use_var(vars[w]);
            b.ins().store(flags, v, a, 0);
        }
        let i = b.use_var(iv);
        let i = b.ins().iadd_imm_s(i, 1);
        b.def_var(iv, i);
        b.ins().jump(phead, &[]);
    }

    b.switch_to_block(rnext);
    let r = b.use_var(rv);
    let r = b.ins().iadd_imm_s(r, 1);
    b.def_var(rv, r);
    b.ins().jump(rhead, &[]);

    b.switch_to_block(fexit);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(module.target_config());
    // Loops by their first statement, whole sections by their first index alone.
    let (s, t) = (ps[0].s, ps[0].t);
    let name = if walk.is_some() {
        format!("p{s}_{}_{}", ps.len(), point_axis.unwrap_or(0))
    } else {
        format!("l{s}_{t}")
    };
    let id = module
        .declare_function(&name, Linkage::Local, &ctx.func.signature)
        .map_err(jit_error)?;
    module.define_function(id, ctx).map_err(jit_error)?;
    module.clear_context(ctx);
    let (operands, outs, vk, sizes) = interface(&ps);
    Ok((id, operands, outs, vk, sizes))
}

/// What a point function of `ps` is handed (see [`crate::gtscript::jit::abi::LoopCode`]):
/// the parts' operands, stored quantities and run-time K reads, one part after the other,
/// and how many of each every part has. Tier one's functions (`build`) and tier two's
/// (`cgen::source`) take the same.
#[allow(clippy::type_complexity)]
pub(crate) fn interface(
    ps: &[Part<'_>],
) -> (
    Vec<(u32, [i32; 3])>,
    Vec<u32>,
    Vec<(u32, Ty)>,
    Vec<PartCode>,
) {
    let sizes = ps
        .iter()
        .map(|p| PartCode {
            section: p.s,
            operands: p.operands.len(),
            outs: p.outs.len(),
            vk: p.vk.len(),
        })
        .collect();
    (
        ps.iter().flat_map(|p| p.operands.iter().copied()).collect(),
        ps.iter().flat_map(|p| p.outs.iter().copied()).collect(),
        ps.iter().flat_map(|p| p.vk.iter().copied()).collect(),
        sizes,
    )
}
