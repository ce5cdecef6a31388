//! Machine code for statement tapes, made with Cranelift when a stencil is compiled.
//!
//! The interpreter runs a tape one instruction at a time over a strip, so every intermediate
//! value goes to memory and back. Here each statement's tape becomes one function that walks a
//! row once: every intermediate stays in a vector register, and only the operands and the
//! result touch memory. The function takes the row's operand pointers (one per distinct
//! quantity and offset the tape reads, filled and bounds-checked by the caller), the output
//! pointer, the row length and the scalar parameters; it runs two (f64) or four (f32) points
//! per step in 128-bit vectors, then the remaining points one at a time.
//!
//! The code computes exactly what the interpreter computes: the same IEEE operations in the
//! same order, no contraction into fused multiply-adds, the same comparisons (`!=` true on
//! NaN, the ordered ones false) and the same `min`/`max` choice. Operations with no instruction
//! (`exp`, `log`, the trigonometric and hyperbolic functions, `gamma`, `erf`, `**`, `mod`, ...)
//! call the `extern "C"` functions of [`crate::gtscript::rt::math`] that the interpreter calls too, by
//! address (registered as symbols of the module), one vector lane at a time; so every tape is
//! compiled.

pub(crate) mod column;
pub(crate) mod emit;
pub(crate) mod point;
pub(crate) mod wide;

use crate::error::{Error, Result};
use crate::gtscript::exec::launch::Walk;
use crate::gtscript::ir::{BinOp, Ty};
use crate::gtscript::plan::{Instr, Lanes, Op, Plan, Src};
use crate::gtscript::rt::lane::Elem;
use crate::gtscript::rt::math;
use column::{ColumnCode, ColumnFn};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, BlockArg, FuncRef, InstBuilder, MemFlagsData, StackSlotData,
    StackSlotKind, Type, Value,
};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module};
pub(crate) use emit::{uses_arg, Emit};
use point::{LoopCode, LoopFn, PointRange};
use std::sync::OnceLock;
use wide::WideEmit;

/// A compiled statement: `f(operands, strides, out, out_stride, n, rows, scalars, vk)`
/// computes `n` points on each of `rows` rows (strides in bytes, see [`build`]); `vk` holds one
/// [`VkSlot`] per quantity the tape reads at run-time K levels.
pub(crate) type RowFn = unsafe extern "C" fn(
    *const *const u8,
    *const isize,
    *mut u8,
    isize,
    usize,
    usize,
    *const u8,
    *mut i64,
);

/// What compiled code reading a quantity at run-time K levels ([`Op::LoadK`]) is handed, as
/// `i64`s: where the first row's first point's column starts (its level 0, in bytes, computed
/// with wrapping arithmetic), the byte steps per row and per point and per level, the first
/// point's level and how the level advances per row and per point (0 or 1), the levels it may
/// read (`lo..hi`), and what the code reports back: whether a level was outside (`err`, 0 or 1)
/// and the last such level. `row_col`, `row_k`: the current row's column start and level,
/// written by the code.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct VkSlot {
    pub(crate) addr0: i64,
    pub(crate) d_row: i64,
    pub(crate) d_point: i64,
    pub(crate) d_level: i64,
    pub(crate) k0: i64,
    pub(crate) k_row: i64,
    pub(crate) k_point: i64,
    pub(crate) lo: i64,
    pub(crate) hi: i64,
    pub(crate) err: i64,
    pub(crate) err_level: i64,
    pub(crate) row_col: i64,
    pub(crate) row_k: i64,
}

/// Byte offset of field `n` of [`VkSlot`] (all `i64`).
pub(crate) const fn vk_field(slot: usize, n: usize) -> i32 {
    ((slot * std::mem::size_of::<VkSlot>()) + n * 8) as i32
}

/// One statement's code and what the caller must hand it.
pub(crate) struct StmtCode {
    /// The function.
    pub(crate) f: RowFn,
    /// The operands, in the order of the pointer array: (quantity, offset I, J, K).
    pub(crate) operands: Vec<(u32, [i32; 3])>,
    /// Per axis: whether the tape reads its own target at a nonzero offset along it. Along the
    /// row's axis the code would read points it has already written, so the caller computes
    /// into scratch first; reads at the same point, or in other rows, see what the
    /// interpreter sees (rows run in the same order, each read before it is written).
    pub(crate) reads_target_along: [bool; 3],
    /// The quantities read at run-time K levels, one [`VkSlot`] each, in this order, and the
    /// element type the code loads from each one's memory.
    pub(crate) vk: Vec<(u32, Ty)>,
}

/// Owns the code memory of one stencil (one module, or two: see [`CARRIED_OPERANDS`]).
struct CodeMemory(Vec<JITModule>);

impl Drop for CodeMemory {
    fn drop(&mut self) {
        for m in self.0.drain(..) {
            // SAFETY: the functions of this module are only reachable through the `StmtCode`s
            // of the `Jit` that owns this memory, which is being dropped with it.
            unsafe { m.free_memory() };
        }
    }
}

// SAFETY: after `finalize_definitions` the module is never used again except to free it on
// drop; its code pages are immutable and may be executed from any thread.
unsafe impl Send for CodeMemory {}
// SAFETY: as above: no method of the module is called through a shared reference.
unsafe impl Sync for CodeMemory {}

/// The machine code of a stencil's statements, for the element type of its program.
pub struct Jit {
    /// Per section, per statement: its code, or `None` where the interpreter runs it.
    stmts: Vec<Vec<Option<StmtCode>>>,
    /// Per section: the code that walks columns, where the section can (see [`column`]).
    columns: Vec<Option<ColumnCode>>,
    /// Per section, per statement: the code of the `while` loop whose condition it is, where
    /// the loop can run point by point (see [`pointloop`]).
    loops: Vec<Vec<Option<LoopCode>>>,
    /// Per section, per [`Walk`]: the whole section's point function, where it has one (see
    /// [`point::section`]; along columns, that of the run of sections it starts, see
    /// [`point::group`]), compiled on first use.
    walks: Vec<[Option<LazyWalk>; 2]>,
    /// Per section: the first section of the run it walks columns in, where it has one.
    column_run: Vec<Option<usize>>,
    /// The element type the code was made for.
    lanes: Lanes,
    _memory: CodeMemory,
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.stmts.iter().flatten().filter(|s| s.is_some()).count();
        write!(f, "Jit({n} compiled statements)")
    }
}

pub(crate) fn jit_error(what: impl std::fmt::Display) -> Error {
    Error::invalid(
        "gtscript code generation",
        what.to_string(),
        "a tape Cranelift accepts (internal error)",
    )
}

/// Whether the code generator handles every operation of `tape` (an integer power needs a
/// literal exponent, which the types pass guarantees; reads at run-time K levels only in
/// mixed-type code, `wide`).
pub(crate) fn supported(tape: &[Instr], wide: bool) -> bool {
    tape.iter().all(|ins| match ins.op {
        Op::LoadK(..) => wide,
        Op::Bin(BinOp::Pow) if !ins.ty.is_float() => {
            matches!(ins.args[1], Src::Const(crate::gtscript::Value::I(e)) if e >= 0)
        }
        _ => true,
    })
}

/// The symbol name of the function of [`math`] that computes `op` on elements of type `elem`,
/// for the operations with no instruction.
pub(crate) fn callee(op: Op, elem: Type) -> Option<&'static str> {
    let f64 = elem == types::F64;
    match op {
        Op::Un(u) if f64 => math::unary_f64(u).map(|f| f.0),
        Op::Un(u) => math::unary_f32(u).map(|f| f.0),
        Op::Bin(o) if f64 => math::binary_f64(o).map(|f| f.0),
        Op::Bin(o) => math::binary_f32(o).map(|f| f.0),
        _ => None,
    }
}

impl Jit {
    /// Compiles every statement of `plan` that it can, for `plan`'s element type. `Ok(None)`
    /// when this machine has no Cranelift backend or `GRIDBUF_GTSCRIPT_JIT=0` is set.
    pub fn compile(plan: &Plan) -> Result<Option<Jit>> {
        if std::env::var("GRIDBUF_GTSCRIPT_JIT").is_ok_and(|v| v == "0") {
            return Ok(None);
        }
        let Some(mut module) = new_module(true)? else {
            return Ok(None);
        };
        let (elem, wide) = lane_types(plan.lanes);
        let mut ctx = module.make_context();
        let mut fctx = FunctionBuilderContext::new();
        let mut ids = Vec::new();
        // Sections that walk as one point function (see `point::section`) run their
        // statements one by one only where neither walk can (layouts with unit stride along
        // J, memory of other element types): there the interpreter runs them, and the compile
        // time (a large part of the first result) goes to the walks.
        let walks_section: Vec<bool> = (0..plan.sections.len())
            .map(|s| point::section(plan, s, wide))
            .collect();
        // Statements with many operands, in a module of their own without Cranelift's
        // optimizations (see `CARRIED_OPERANDS`).
        let mut plain: Option<JITModule> = None;
        for (s, sec) in plan.sections.iter().enumerate() {
            for (t, st) in sec.stmts.iter().enumerate() {
                if walks_section[s] || !supported(&st.tape, wide) || st.tape.is_empty() {
                    continue;
                }
                let operands = operands_of(&st.tape);
                let many = operands.len() > CARRIED_OPERANDS;
                if many && plain.is_none() {
                    plain = new_module(false)?;
                }
                let module = match plain.as_mut() {
                    Some(m) if many => m,
                    _ => &mut module,
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
                    &mut fctx,
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
                module.define_function(id, &mut ctx).map_err(jit_error)?;
                module.clear_context(&mut ctx);
                let reads_target_along = [0, 1, 2].map(|a| {
                    operands
                        .iter()
                        .any(|&(q, off)| q == st.target && off[a] != 0)
                });
                ids.push((s, t, many, id, operands, reads_target_along, vk));
            }
        }
        // `while` loops that can run point by point, as one function each.
        // Sections with loops, where they can, also as one point function per walk (see
        // `point::section`).
        let mut loop_ids = Vec::new();
        // Sections that walk columns, by the first of their run (see `point::group`).
        let mut column_run: Vec<Option<usize>> = plan.sections.iter().map(|_| None).collect();
        for (s, sec) in plan.sections.iter().enumerate() {
            let whole = walks_section[s];
            // Whole sections' walks are compiled when a call first needs one (see
            // `Jit::point_section`): a stencil runs on one layout, which needs one of them.
            if whole && column_run[s].is_none() {
                let e = point::group(plan, s, wide);
                column_run[s..e].fill(Some(s));
            }
            // (A section that walks needs its loops on blocks only where the walks cannot run:
            // layouts with unit stride along J, or memory of other element types. Those run
            // the loops' passes over blocks, and the compile time goes to the walks.)
            for t in (0..sec.stmts.len()).filter(|_| !whole) {
                let Some(exit) = point::range(plan, s, t, wide) else {
                    continue;
                };
                let walk = None;
                let parts = [(
                    s,
                    PointRange {
                        first: t,
                        exit,
                        walk,
                    },
                )];
                let (id, operands, outs, vk, sizes) =
                    point::build(&mut module, &mut ctx, &mut fctx, plan, &parts, elem, wide)?;
                loop_ids.push((s, t, exit, id, operands, outs, vk, sizes));
            }
        }
        // FORWARD and BACKWARD sections also as one function that walks whole columns (used
        // on layouts with unit stride along K).
        let mut col_ids = Vec::new();
        if !wide {
            for s in 0..plan.sections.len() {
                if let Some(c) = column::build(&mut module, &mut ctx, &mut fctx, plan, s, elem)? {
                    col_ids.push((s, c));
                }
            }
        }
        module.finalize_definitions().map_err(jit_error)?;
        if let Some(m) = plain.as_mut() {
            m.finalize_definitions().map_err(jit_error)?;
        }
        let mut columns: Vec<Option<ColumnCode>> = plan.sections.iter().map(|_| None).collect();
        for (s, (id, slots)) in col_ids {
            let code = module.get_finalized_function(id);
            // SAFETY: `code` is the entry of the function `column::build` defined with the
            // signature of `ColumnFn` (4 pointer-sized arguments, no result) in the platform's
            // C calling convention; it lives as long as `module`, kept in `_memory` below.
            let f = unsafe { std::mem::transmute::<*const u8, ColumnFn>(code) };
            columns[s] = Some(ColumnCode { f, slots });
        }
        let mut stmts: Vec<Vec<Option<StmtCode>>> = plan
            .sections
            .iter()
            .map(|sec| sec.stmts.iter().map(|_| None).collect())
            .collect();
        for (s, t, many, id, operands, reads_target_along, vk) in ids {
            let code = match plain.as_ref() {
                Some(m) if many => m.get_finalized_function(id),
                _ => module.get_finalized_function(id),
            };
            // SAFETY: `code` is the entry of the function just defined with the signature
            // (8 pointer-sized arguments, no result) in the platform's C calling convention,
            // which is `RowFn`'s; it lives as long as `module`, kept in `_memory` below.
            let f = unsafe { std::mem::transmute::<*const u8, RowFn>(code) };
            stmts[s][t] = Some(StmtCode {
                f,
                operands,
                reads_target_along,
                vk,
            });
        }
        let mut loops: Vec<Vec<Option<LoopCode>>> = plan
            .sections
            .iter()
            .map(|sec| sec.stmts.iter().map(|_| None).collect())
            .collect();
        for (s, t, exit, id, operands, outs, vk, parts) in loop_ids {
            let code = module.get_finalized_function(id);
            // SAFETY: `code` is the entry of the function `point::build` defined with the
            // signature of `LoopFn` (8 pointer-sized arguments, no result) in the platform's C
            // calling convention; it lives as long as `module`, kept in `_memory` below.
            let f = unsafe { std::mem::transmute::<*const u8, LoopFn>(code) };
            let code = LoopCode {
                f,
                operands,
                outs,
                vk,
                exit,
                parts,
            };
            loops[s][t] = Some(code);
        }
        let walks = (0..plan.sections.len())
            .map(|s| {
                let run = column_run[s] == Some(s);
                [
                    run.then(OnceLock::new),
                    walks_section[s].then(OnceLock::new),
                ]
            })
            .collect();
        Ok(Some(Jit {
            stmts,
            columns,
            loops,
            walks,
            column_run,
            lanes: plan.lanes,
            _memory: CodeMemory(std::iter::once(module).chain(plain).collect()),
        }))
    }

    /// The code of statement `stmt` of section `sec`, if it was compiled for `T`.
    #[inline]
    pub(crate) fn stmt<T: Elem>(&self, sec: usize, stmt: usize) -> Option<&StmtCode> {
        if self.lanes != T::LANES {
            return None;
        }
        self.stmts.get(sec)?.get(stmt)?.as_ref()
    }

    /// The code of the `while` loop whose condition is statement `stmt` of section `sec`, if
    /// it runs point by point and was compiled for `T`.
    #[inline]
    pub(crate) fn point_loop<T: Elem>(&self, sec: usize, stmt: usize) -> Option<&LoopCode> {
        if self.lanes != T::LANES {
            return None;
        }
        self.loops.get(sec)?.get(stmt)?.as_ref()
    }

    /// The point function of the whole section `sec` for `walk`, if it has one for `T` (see
    /// [`point::section`]; along columns, that of the run of sections `sec` starts, see
    /// [`point::group`]), compiled from `plan` (the plan this code was made for) when it
    /// is first asked for.
    pub(crate) fn point_section<T: Elem>(
        &self,
        plan: &Plan,
        sec: usize,
        walk: Walk,
    ) -> Result<Option<&LoopCode>> {
        if self.lanes != T::LANES {
            return Ok(None);
        }
        let Some(cell) = self.walks.get(sec).and_then(|w| w[walk as usize].as_ref()) else {
            return Ok(None);
        };
        let walked = cell.get_or_init(|| {
            let run = match walk {
                Walk::Columns => self.column_run[sec..]
                    .iter()
                    .take_while(|&&r| r == Some(sec))
                    .count(),
                Walk::Levels => 1,
            };
            compile_walk(plan, sec..sec + run, walk).map_err(|e| e.to_string())
        });
        match walked {
            Ok(w) => Ok(Some(&w.code)),
            Err(e) => Err(jit_error(e)),
        }
    }

    /// Whether section `sec` walks columns in a point function for `T` (the one of the run of
    /// sections it is part of, see [`point::group`]).
    #[inline]
    pub(crate) fn walks_columns<T: Elem>(&self, sec: usize) -> bool {
        self.lanes == T::LANES && self.column_run.get(sec).is_some_and(Option::is_some)
    }

    /// The column code of section `sec`, if it has some for `T`.
    #[inline]
    pub(crate) fn column<T: Elem>(&self, sec: usize) -> Option<&ColumnCode> {
        if self.lanes != T::LANES {
            return None;
        }
        self.columns.get(sec)?.as_ref()
    }
}

/// A walk compiled on first use (the compiler's error as text: the same for every call).
type LazyWalk = OnceLock<std::result::Result<Walked, String>>;

/// A whole section's walk (or a run of sections' walk along columns) and the code memory it
/// lives in.
struct Walked {
    code: LoopCode,
    _memory: CodeMemory,
}

/// The element type compiled code computes in, and whether it is the mixed-type lanes.
fn lane_types(lanes: Lanes) -> (Type, bool) {
    match lanes {
        Lanes::F64 => (types::F64, false),
        Lanes::F32 => (types::F32, false),
        Lanes::Wide => (types::I64, true),
    }
}

/// A module for this machine's code, the math functions and the column helpers its code calls
/// registered; `None` when Cranelift has no backend for this machine.
/// `optimize`: Cranelift's optimizations (`opt_level` "speed"; else "none", see
/// [`CARRIED_OPERANDS`]).
fn new_module(optimize: bool) -> Result<Option<JITModule>> {
    let Ok(isa_builder) = cranelift_native::builder() else {
        return Ok(None);
    };
    let mut flags = settings::builder();
    flags
        .set("opt_level", if optimize { "speed" } else { "none" })
        .map_err(jit_error)?;
    // Cranelift's IR verifier checks the code generator, not the stencil: tests and debug
    // builds run it on every function; release builds skip it (tridiagonal solve: 4.2 ms
    // of compilation with it, 3.1 without).
    if !cfg!(any(test, debug_assertions)) {
        flags.set("enable_verifier", "false").map_err(jit_error)?;
    }
    let isa = isa_builder
        .finish(settings::Flags::new(flags))
        .map_err(jit_error)?;
    let mut builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    builder.symbols(math::symbols());
    builder.symbols(column::symbols());
    Ok(Some(JITModule::new(builder)))
}

/// Compiles the walk `walk` of the whole sections `sections` (see [`point::build`]) in a
/// module of its own.
fn compile_walk(plan: &Plan, sections: std::ops::Range<usize>, walk: Walk) -> Result<Walked> {
    let mut module = new_module(true)?.ok_or_else(|| jit_error("no Cranelift backend"))?;
    let (elem, wide) = lane_types(plan.lanes);
    let parts: Vec<(usize, PointRange)> = sections
        .map(|s| {
            let exit = plan.sections[s].stmts.len();
            let walk = Some(walk);
            (
                s,
                PointRange {
                    first: 0,
                    exit,
                    walk,
                },
            )
        })
        .collect();
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let (id, operands, outs, vk, parts) =
        point::build(&mut module, &mut ctx, &mut fctx, plan, &parts, elem, wide)?;
    module.finalize_definitions().map_err(jit_error)?;
    let code = module.get_finalized_function(id);
    // SAFETY: `code` is the entry of the function `point::build` defined with the
    // signature of `LoopFn` (8 pointer-sized arguments, no result) in the platform's C calling
    // convention; it lives as long as `module`, kept in `_memory` beside it.
    let f = unsafe { std::mem::transmute::<*const u8, LoopFn>(code) };
    let exit = plan.sections[parts[0].section].stmts.len();
    Ok(Walked {
        code: LoopCode {
            f,
            operands,
            outs,
            vk,
            exit,
            parts,
        },
        _memory: CodeMemory(vec![module]),
    })
}

/// Imports into `func` the math functions that `tape` calls (the operations with no
/// instruction), for elements of type `elem` (of each operation's own float type when `wide`).
pub(crate) fn declare_calls(
    module: &mut JITModule,
    func: &mut cranelift_codegen::ir::Function,
    tape: &[Instr],
    elem: Type,
    wide: bool,
) -> Result<Vec<(Op, Type, FuncRef)>> {
    let mut calls: Vec<(Op, Type, FuncRef)> = Vec::new();
    for ins in tape {
        // A mixed-type tape calls the function of each operation's own float type.
        let ft = match (wide, ins.ty) {
            (false, _) => elem,
            (true, Ty::F64) => types::F64,
            (true, Ty::F32) => types::F32,
            (true, _) => continue,
        };
        let Some(name) = callee(ins.op, ft) else {
            continue;
        };
        if calls.iter().any(|c| c.0 == ins.op && c.1 == ft) {
            continue;
        }
        let mut sig = module.make_signature();
        let arity = if matches!(ins.op, Op::Bin(_)) { 2 } else { 1 };
        for _ in 0..arity {
            sig.params.push(AbiParam::new(ft));
        }
        sig.returns.push(AbiParam::new(ft));
        let id = module
            .declare_function(name, Linkage::Import, &sig)
            .map_err(jit_error)?;
        calls.push((ins.op, ft, module.declare_func_in_func(id, func)));
    }
    Ok(calls)
}

/// Loads the scalar parameters that the instructions `tape` name (elements of type `elem`,
/// in declaration order from `scal`), indexed by parameter.
pub(crate) fn load_scalars<'t>(
    b: &mut FunctionBuilder<'_>,
    tape: impl IntoIterator<Item = &'t Instr>,
    elem: Type,
    scal: Value,
) -> Vec<Value> {
    let n = tape
        .into_iter()
        .flat_map(|i| i.args)
        .filter_map(|a| match a {
            Src::Scalar(i) => Some(i as usize + 1),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let size = elem.bytes() as i32;
    (0..n)
        .map(|i| {
            b.ins().load(
                elem,
                MemFlagsData::new().with_notrap(),
                scal,
                i as i32 * size,
            )
        })
        .collect()
}

/// The column start (bytes) and level of run-time K read slot `slot` (of the [`VkSlot`]s at
/// `vkp`) at the first point of row `r`.
pub(crate) fn vk_row(
    b: &mut FunctionBuilder<'_>,
    vkp: Value,
    slot: usize,
    r: Value,
) -> (Value, Value) {
    let flags = MemFlagsData::new().with_notrap();
    let mut get = |n: usize| b.ins().load(types::I64, flags, vkp, vk_field(slot, n));
    let (addr0, d_row, k0, k_row) = (get(0), get(1), get(4), get(5));
    let off = b.ins().imul(r, d_row);
    let col = b.ins().iadd(addr0, off);
    let off = b.ins().imul(r, k_row);
    (col, b.ins().iadd(k0, off))
}

/// The quantities a tape reads at run-time K levels, in first-use order, with the element type
/// of their memory (a field's declared type; a temporary's storage holds lanes, as `int64`
/// bits).
pub(crate) fn vk_of(plan: &Plan, tape: &[Instr]) -> Vec<(u32, Ty)> {
    let mut out: Vec<(u32, Ty)> = Vec::new();
    for ins in tape {
        if let Op::LoadK(q, _) = ins.op {
            if !out.iter().any(|v| v.0 == q) {
                let ty = match plan.kinds[q as usize] {
                    crate::gtscript::plan::Kind::Field { field, .. } => {
                        plan.program.fields[field].ty
                    }
                    _ => Ty::I64,
                };
                out.push((q, ty));
            }
        }
    }
    out
}

/// The distinct (quantity, offset) operands of a tape, in first-use order.
pub(crate) fn operands_of(tape: &[Instr]) -> Vec<(u32, [i32; 3])> {
    let mut out: Vec<(u32, [i32; 3])> = Vec::new();
    let mut seen = rustc_hash::FxHashSet::default();
    for ins in tape {
        for a in ins.args {
            if let Src::Q(q, off) = a {
                if seen.insert((q, off)) {
                    out.push((q, off));
                }
            }
        }
    }
    out
}

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
/// independent work.
const CARRIED_OPERANDS: usize = 32;
/// See [`CARRIED_OPERANDS`].
const LONG_TAPE: usize = 256;

/// Builds `f(operands, strides, out, out_stride, n, rows, scalars)`: for each of `rows` rows
/// (operand `k`'s row `r` starts at `operands[k] + r * strides[k]` bytes, the output's at
/// `out + r * out_stride`), a vector loop over the whole steps of the row, then a scalar loop
/// over the rest.
#[allow(clippy::too_many_arguments)]
fn build(
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
    let unroll = if tape.len() > LONG_TAPE { 1 } else { UNROLL };
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
