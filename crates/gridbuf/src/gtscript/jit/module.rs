//! One JITModule's lifecycle: made for this machine with the math and column helpers
//! registered, finalized once, its functions handed out as typed function pointers (the one
//! place a code address becomes a function type), freed when its owner drops.

use crate::error::Result;
use crate::gtscript::jit::abi::{ColumnFn, LoopFn, RowFn};
use crate::gtscript::jit::helpers::jit_error;
use crate::gtscript::ops::math;
use crate::gtscript::rt::prefetch;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Module};

/// Owns the code memory of one stencil (one module, or two: see
/// [`crate::gtscript::jit::row::CARRIED_OPERANDS`]), finalized: its functions are handed out by
/// [`CodeMemory::function`].
pub(crate) struct CodeMemory(Vec<JITModule>);

/// A function type of compiled code (see [`crate::gtscript::jit::abi`]): `extern "C"`,
/// `ARGS` pointer-sized arguments, no result.
pub(crate) trait CodeFn: Copy {
    /// The number of arguments.
    const ARGS: usize;
}

impl CodeFn for RowFn {
    const ARGS: usize = 8;
}

impl CodeFn for ColumnFn {
    const ARGS: usize = 4;
}

impl CodeFn for LoopFn {
    const ARGS: usize = 9;
}

impl CodeMemory {
    /// Finalizes `modules` (their functions become executable) and keeps them until drop.
    pub(crate) fn finalize(mut modules: Vec<JITModule>) -> Result<CodeMemory> {
        for m in &mut modules {
            m.finalize_definitions().map_err(jit_error)?;
        }
        Ok(CodeMemory(modules))
    }

    /// Function `id` of module `module` (in the order handed to [`CodeMemory::finalize`]), as
    /// the function type `F`; an error where `id` is not a function defined there with `F`'s
    /// signature. The pointer is valid as long as this memory: its owner keeps both together.
    pub(crate) fn function<F: CodeFn>(&self, module: usize, id: FuncId) -> Result<F> {
        let m = self
            .0
            .get(module)
            .ok_or_else(|| jit_error("no such module"))?;
        let decl = m.declarations().get_function_decl(id);
        let ptr = m.target_config().pointer_type();
        let sig = &decl.signature;
        let matches = decl.linkage.is_definable()
            && sig.params.len() == F::ARGS
            && sig.params.iter().all(|p| p.value_type == ptr)
            && sig.returns.is_empty()
            && sig.call_conv == m.isa().default_call_conv();
        if !matches {
            return Err(jit_error(format!(
                "function {} of another signature",
                decl.name.as_deref().unwrap_or("?")
            )));
        }
        let code = m.get_finalized_function(id);
        // SAFETY: `code` is the entry of function `id`, defined in this finalized module (its
        // linkage is definable) with `F::ARGS` pointer-sized arguments, no result and the
        // platform's default calling convention (checked above), which is `F`'s type as an
        // `extern "C"` function pointer of pointer-sized arguments (`CodeFn` is implemented
        // only for such types). A function pointer and `*const u8` have the same size. The code
        // lives as long as `self`, which the owner of the returned pointer keeps beside it.
        Ok(unsafe { std::mem::transmute_copy::<*const u8, F>(&code) })
    }
}

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

/// A module for this machine's code, the math functions and the column helpers its code calls
/// registered; `None` when Cranelift has no backend for this machine.
/// `optimize`: Cranelift's optimizations (`opt_level` "speed"; else "none", see
/// [`crate::gtscript::jit::row::CARRIED_OPERANDS`]).
pub(crate) fn new_module(optimize: bool) -> Result<Option<JITModule>> {
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
    builder.symbols(prefetch::symbols());
    Ok(Some(JITModule::new(builder)))
}

/// Functions `build` defines in a fresh optimizing module of their own (with a codegen context
/// and a builder context to reuse between them), and the module, not yet finalized.
pub(crate) fn build_in_own_module<T>(
    build: impl FnOnce(&mut JITModule, &mut Context, &mut FunctionBuilderContext) -> Result<T>,
) -> Result<(JITModule, T)> {
    let mut module = new_module(true)?.ok_or_else(|| jit_error("no Cranelift backend"))?;
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let built = build(&mut module, &mut ctx, &mut fctx)?;
    Ok((module, built))
}

/// What the code generator targets on this machine: the architecture's name (`x86_64`,
/// `aarch64`, ...) and the instruction-set extensions Cranelift detected and may use (`has_avx2`,
/// `has_fma`, ...); `None` when Cranelift has no backend for this machine.
pub fn host_target() -> Option<(String, Vec<String>)> {
    let isa = cranelift_native::builder()
        .ok()?
        .finish(settings::Flags::new(settings::builder()))
        .ok()?;
    let features = isa
        .isa_flags()
        .iter()
        .filter(|flag| flag.as_bool() == Some(true))
        .map(|flag| flag.name.to_string())
        .collect();
    Some((isa.triple().architecture.to_string(), features))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_codegen::ir::{AbiParam, InstBuilder};
    use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
    use cranelift_module::Linkage;

    #[test]
    fn host_target_names_the_architecture_and_only_enabled_features() {
        let Some((arch, features)) = host_target() else {
            return; // no Cranelift backend for this machine
        };
        assert_eq!(arch, std::env::consts::ARCH);
        assert!(
            features.iter().all(|f| f.starts_with("has_")),
            "{features:?}"
        );
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            features.iter().any(|f| f == "has_avx2"),
            std::arch::is_x86_feature_detected!("avx2")
        );
    }

    /// A module with one function of `args` pointer-sized arguments that returns at once.
    fn one_function(args: usize) -> Option<(JITModule, FuncId)> {
        let mut module = new_module(true).unwrap()?;
        let ptr = module.target_config().pointer_type();
        let mut ctx = module.make_context();
        ctx.func.signature = module.make_signature();
        for _ in 0..args {
            ctx.func.signature.params.push(AbiParam::new(ptr));
        }
        let mut fctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(module.target_config());
        let id = module
            .declare_function("f", Linkage::Local, &ctx.func.signature)
            .unwrap();
        module.define_function(id, &mut ctx).unwrap();
        Some((module, id))
    }

    /// A function is handed out only as the function type it was defined with.
    #[test]
    fn functions_come_out_as_their_own_type_only() {
        let Some((module, id)) = one_function(4) else {
            return;
        };
        let memory = CodeMemory::finalize(vec![module]).unwrap();
        let f = memory.function::<ColumnFn>(0, id).unwrap();
        // SAFETY: the function has ColumnFn's signature and reads none of its arguments.
        unsafe { f(std::ptr::null(), 0, 0, std::ptr::null()) };
        assert!(memory.function::<RowFn>(0, id).is_err());
        assert!(memory.function::<LoopFn>(0, id).is_err());
        assert!(memory.function::<ColumnFn>(1, id).is_err());
    }
}
