//! Running work: the thread teams every parallel loop runs on, and stopping a running
//! computation at safe points.
//!
//! | concept | module |
//! |---|---|
//! | threads, `GRIDBUF_NUM_THREADS`, the cached teams | [`threads`] |
//! | a fork-join team: the calling thread and spinning workers (`GRIDBUF_SPIN_US`) | [`team`] |
//! | the environment switches, read in one place (an unknown value is reported) | [`env`] |
//! | stopping a running computation at safe points (`Interrupt`, `run_watched`) | [`interrupt`] |

pub mod env;
pub mod interrupt;
pub mod team;
pub mod threads;
