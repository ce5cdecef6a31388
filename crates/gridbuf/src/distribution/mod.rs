//! Distribution over processes: block decompositions and halo exchange plans.
//!
//! | concept | module |
//! |---|---|
//! | block decomposition over processes | [`decomposition`] |
//! | halo exchange plans and packing | [`halo_exchange`] |

pub mod decomposition;
pub mod halo_exchange;
