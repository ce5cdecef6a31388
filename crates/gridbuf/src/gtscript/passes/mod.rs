//! The passes over a parsed program before planning: GT4Py's typing rules ([`types`]) and the
//! inlining of temporaries read only at their own point (`inline`).

pub(crate) mod inline;
pub mod types;
