//! Arrays and their interfaces: describing foreign memory, reading the interfaces that describe
//! it, copying it, and labelling it with dims.
//!
//! | concept | module |
//! |---|---|
//! | element types | [`dtype`] |
//! | devices | [`device`] |
//! | description of a foreign array (`ArrayInfo`) and checked views | [`array_info`] |
//! | interface parsers (array interface, CUDA array interface, buffer protocol, DLPack, shared field checks) and which interface wins | [`interface`] |
//! | the one strided / layout-changing copy (`CopyPlan`) | [`copy`] |
//! | labelled fields: broadcasting by dims, result storage, axes, transpositions, indexing | [`labelled`] |

pub mod array_info;
pub mod copy;
pub mod device;
pub mod dtype;
pub mod interface;
pub mod labelled;
