//! What the emitters share: the error type of code generation, the math functions a tape
//! calls, the scalars it loads, its operands and its run-time K reads.

use crate::error::{Error, Result};
use crate::gtscript::ir::Ty;
use crate::gtscript::jit::abi::vk_field;
use crate::gtscript::ops::math;
use crate::gtscript::plan::{Instr, Lanes, Op, Plan, Src};
use cranelift_codegen::ir::{types, AbiParam, FuncRef, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;
use cranelift_jit::JITModule;
use cranelift_module::{Linkage, Module};

pub(crate) fn jit_error(what: impl std::fmt::Debug) -> Error {
    // The debug form: Cranelift's verifier errors name the instruction and value there only.
    Error::invalid(
        "gtscript code generation",
        format!("{what:?}"),
        "a tape Cranelift accepts (internal error)",
    )
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

/// The column start (bytes) and level of run-time K read slot `slot` (of the [`crate::gtscript::jit::abi::VkSlot`]s at
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

/// The element type compiled code computes in, and whether it is the mixed-type lanes.
pub(crate) fn lane_types(lanes: Lanes) -> (Type, bool) {
    match lanes {
        Lanes::F64 => (types::F64, false),
        Lanes::F32 => (types::F32, false),
        Lanes::Wide => (types::I64, true),
    }
}
