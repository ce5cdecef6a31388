//! Running work: the thread pools every parallel loop runs on, and stopping a running
//! computation at safe points.
//!
//! | concept | module |
//! |---|---|
//! | threads, pools, `GRIDBUF_NUM_THREADS` | [`threads`] |
//! | stopping a running computation at safe points (`Interrupt`, `run_watched`) | [`interrupt`] |

pub mod interrupt;
pub mod threads;
