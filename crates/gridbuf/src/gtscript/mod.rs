//! A gtscript engine: GT4Py stencil definitions, lowered by the Python frontend to a small
//! typed IR ([`ir`]), checked and planned once ([`plan`]) and run by a tiled vector
//! interpreter ([`eval`]) with no compiler at run time.
//!
//! The IR arrives as text ([`ir::Program::parse`]); [`compile`] parses it, types it by GT4Py's
//! rules ([`types`]), inlines
//! temporaries read only at their own point (`inline`) and plans it; [`eval::Jit`] turns each
//! statement into machine code (Cranelift), and [`eval::run`] runs a plan on the field views
//! the binder checked.

pub mod eval;
mod inline;
pub mod ir;
pub mod ops;
pub mod plan;
mod region;
#[cfg(test)]
mod scale_tests;
mod sweep_plan;
mod tape;
pub mod types;

pub use eval::{run, run_interruptible, FieldMem, Jit, Lane, Num};
pub use ir::{Program, Ty, Value};
pub use plan::{Lanes, Plan};

/// Parses the IR text, inlines the temporaries that need no storage of their own, and plans
/// it. `GRIDBUF_GTSCRIPT_SWEEP=0` drops the sweep schedules, so every stencil runs in blocks
/// (for comparing the two).
pub fn compile(text: &str) -> crate::Result<Plan> {
    let mut program = Program::parse(text)?;
    types::check(&mut program)?;
    inline::inline_temps(&mut program);
    let mut plan = plan::plan(program)?;
    if std::env::var("GRIDBUF_GTSCRIPT_SWEEP").is_ok_and(|v| v == "0") {
        plan.sweeps = [None, None, None];
    }
    Ok(plan)
}
