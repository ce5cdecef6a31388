//! A gtscript engine: GT4Py stencil definitions, lowered by the Python frontend to a small
//! typed IR ([`ir`]), checked and planned once ([`plan`]) and run by a tiled vector
//! interpreter ([`eval`]) with no compiler at run time.
//!
//! The IR arrives as text ([`ir::Program::parse`]); [`compile`] parses and plans it, and
//! [`eval::run`] runs a plan on the field views the binder checked.

pub mod eval;
pub mod ir;
pub mod plan;

pub use eval::{run, FieldMem, Jit, Num};
pub use ir::{FloatType, Program};
pub use plan::Plan;

/// Parses the IR text and plans it.
pub fn compile(text: &str) -> crate::Result<Plan> {
    plan::plan(Program::parse(text)?)
}
