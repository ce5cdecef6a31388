//! What the executor and the compiled code share at run time: the element types ([`lane`],
//! [`num`]), the math functions every `extern "C"` symbol of the compiled code names
//! ([`math`]), the tape interpreter ([`interp`]) and the memory of fields, blocks and buffers
//! ([`mem`]).

pub mod interp;
pub mod lane;
pub mod math;
pub mod mem;
pub mod num;
pub(crate) mod pool;
pub(crate) mod prefetch;
#[cfg(test)]
pub(crate) mod reference;

pub use interp::Arg;
pub use lane::{Elem, Lane};
pub use mem::FieldMem;
pub use num::Num;
