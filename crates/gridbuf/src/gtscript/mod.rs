//! A gtscript engine: GT4Py stencil definitions, lowered by the Python frontend to a small
//! typed IR ([`ir`]), checked and planned once ([`plan`]) and run by a tiled vector
//! interpreter ([`exec`]) with no compiler at run time.
//!
//! The IR arrives as text ([`ir::Program::parse`]); [`compile`] parses it, types it by GT4Py's
//! rules ([`passes::types`]), inlines
//! temporaries read only at their own point (`passes::inline`) and plans it; [`jit::Jit`] turns each
//! statement into machine code (Cranelift), and [`exec::run`] runs a plan on the field views
//! the binder checked.

pub mod cgen;
pub mod exec;
pub mod ir;
pub mod jit;
pub mod ops;
pub mod parse;
pub mod passes;
pub mod plan;
pub mod programs;
pub mod rt;
#[cfg(test)]
mod scale_tests;

pub use exec::{prepare_layout, run, run_interruptible};
pub use ir::{Program, Ty, Value};
pub use jit::Jit;
pub use ops::num::Num;
pub use passes::types;
pub use plan::{Lanes, Plan};
pub use rt::{FieldMem, Lane};

/// The machine code of `plan`: tier one (Cranelift, [`Jit::compile`]), and tier two too
/// where `GRIDBUF_TIER2=define` asks for it at definition ([`cgen`]; else it starts at the
/// first call, in the background).
pub fn machine_code(plan: &Plan) -> crate::Result<Option<Jit>> {
    let jit = Jit::compile(plan)?;
    if let Some(j) = &jit {
        cgen::at_definition(plan, j);
    }
    Ok(jit)
}

/// Parses the IR text, inlines the temporaries that need no storage of their own, and plans
/// it. `GRIDBUF_GTSCRIPT_SWEEP=0` drops the sweep schedules, so every stencil runs in blocks
/// (for comparing the two).
pub fn compile(text: &str) -> crate::Result<Plan> {
    let mut program = Program::parse(text)?;
    passes::types::check(&mut program)?;
    passes::inline::inline_temps(&mut program);
    let mut plan = plan::plan(program)?;
    if !crate::runtime::env::flag("GRIDBUF_GTSCRIPT_SWEEP", true) {
        plan.sweeps = [None, None, None];
    }
    Ok(plan)
}
