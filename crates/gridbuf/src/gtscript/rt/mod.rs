//! What the executor and the compiled code share at run time: the element types ([`lane`]; the
//! float trait and the math functions are the operation table's, [`crate::gtscript::ops`]),
//! the tape interpreter ([`interp`]) and the memory of fields, blocks and buffers
//! ([`mem`]).

pub mod interp;
pub mod lane;
pub mod mem;
pub(crate) mod pool;
pub(crate) mod prefetch;
#[cfg(test)]
pub(crate) mod reference;

pub use interp::Arg;
pub use lane::{Elem, Lane};
pub use mem::FieldMem;
