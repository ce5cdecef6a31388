//! Mirrored fields: a host and a device copy of the same data, and the state that says which
//! copy is current.
//!
//! | concept | module |
//! |---|---|
//! | the host/device sync state of mirrored fields | [`sync_state`] |

pub mod sync_state;
