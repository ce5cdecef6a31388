//! Geometry: the rules about index spaces that every other layer applies, with no memory behind
//! them.
//!
//! | concept | module |
//! |---|---|
//! | per-axis small vectors | [`axes`] |
//! | dims: names, parsing, validation, defaults, next data dim | [`dims`] |
//! | halo: normalising, fitting the shape | [`halo`] |
//! | origins and aligned indices | [`origin`] |
//! | layout maps, base layouts, layout from strides | [`layout`] |

pub mod axes;
pub mod dims;
pub mod halo;
pub mod layout;
pub mod origin;
