//! The sync state against a reference model, over random sequences of acquire / touch / release /
//! mark_modified / sync on both sides, issued through several views (handles) of one state.
//!
//! The model simulates the two buffers as version numbers: a write stores a fresh version in the
//! buffer of its side, a copy copies the version. Checked after every step:
//! - no data is lost: the newest version written is in a buffer the state calls current;
//! - a side is read only when current: every side with an open access holds the newest version;
//! - copies happen only when needed: acquire asks for a copy exactly when its side is stale,
//!   and the transfer counter counts exactly the completed copies;
//! - the state accepts exactly what the model predicts, and a refused operation changes nothing.

use gridbuf::mirrored::sync_state::{Side, State, SyncState, Transfer};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Acquire {
        view: usize,
        side: Side,
        copy_fails: bool,
    },
    Touch {
        view: usize,
        side: Side,
    },
    Release {
        view: usize,
        side: Side,
    },
    MarkModified {
        view: usize,
        side: Side,
    },
    Sync {
        view: usize,
        copy_fails: bool,
    },
}

fn side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::Host), Just(Side::Device)]
}

fn op(views: usize) -> impl Strategy<Value = Op> {
    let v = 0..views;
    prop_oneof![
        3 => (v.clone(), side(), prop::bool::weighted(0.1))
            .prop_map(|(view, side, copy_fails)| Op::Acquire { view, side, copy_fails }),
        2 => (v.clone(), side()).prop_map(|(view, side)| Op::Touch { view, side }),
        3 => (v.clone(), side()).prop_map(|(view, side)| Op::Release { view, side }),
        1 => (v.clone(), side()).prop_map(|(view, side)| Op::MarkModified { view, side }),
        1 => (v, prop::bool::weighted(0.1)).prop_map(|(view, copy_fails)| Op::Sync { view, copy_fails }),
    ]
}

fn idx(s: Side) -> usize {
    match s {
        Side::Host => 0,
        Side::Device => 1,
    }
}

/// The reference model: buffer contents as versions, open accesses per side, copies done.
struct Model {
    data: [u64; 2],
    latest: u64,
    open: [usize; 2],
    copies: [u64; 2],
}

impl Model {
    fn new(initial: State) -> Model {
        // A side that is not current at creation holds an older version.
        let data = match initial {
            State::Clean => [1, 1],
            State::HostDirty => [1, 0],
            State::DeviceDirty => [0, 1],
        };
        Model {
            data,
            latest: 1,
            open: [0, 0],
            copies: [0, 0],
        }
    }

    fn current(&self, s: Side) -> bool {
        self.data[idx(s)] == self.latest
    }

    fn write(&mut self, s: Side) {
        self.latest += 1;
        self.data[idx(s)] = self.latest;
    }

    fn copy(&mut self, t: Transfer) {
        self.data[idx(t.to)] = self.data[idx(t.from)];
        self.copies[idx(t.to)] += 1;
    }

    fn check(&self, s: &SyncState) -> Result<(), TestCaseError> {
        let snap = s.snapshot();
        prop_assert!(snap.in_flight.is_none());
        // No data lost, and the state names exactly the current sides.
        prop_assert!(self.current(Side::Host) || self.current(Side::Device));
        prop_assert_eq!(snap.state.is_current(Side::Host), self.current(Side::Host));
        prop_assert_eq!(
            snap.state.is_current(Side::Device),
            self.current(Side::Device)
        );
        // Read only when current.
        for side in [Side::Host, Side::Device] {
            if self.open[idx(side)] > 0 {
                prop_assert!(self.current(side), "{side} open but stale");
            }
        }
        prop_assert_eq!(
            (snap.host_open, snap.device_open),
            (self.open[0], self.open[1])
        );
        prop_assert_eq!(snap.transfers.device_to_host, self.copies[0]);
        prop_assert_eq!(snap.transfers.host_to_device, self.copies[1]);
        Ok(())
    }
}

fn initial_state() -> impl Strategy<Value = State> {
    prop_oneof![
        Just(State::Clean),
        Just(State::HostDirty),
        Just(State::DeviceDirty)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn sync_state_matches_the_model(
        initial in initial_state(),
        (views, ops) in (1usize..=4).prop_flat_map(|n| (Just(n), prop::collection::vec(op(n), 0..80))),
    ) {
        let first = SyncState::new(initial);
        let handles: Vec<SyncState> = (0..views).map(|_| first.clone()).collect();
        let mut m = Model::new(initial);
        m.check(&first)?;
        for op in ops {
            let before = first.snapshot();
            match op {
                Op::Acquire { view, side, copy_fails } => {
                    let s = &handles[view];
                    let allowed = m.open[idx(side.other())] == 0;
                    match s.acquire(side) {
                        Err(_) => {
                            prop_assert!(!allowed);
                            prop_assert_eq!(first.snapshot(), before);
                        }
                        Ok(t) => {
                            prop_assert!(allowed);
                            // A copy exactly when the side is stale.
                            prop_assert_eq!(t.is_some(), !m.current(side));
                            m.open[idx(side)] += 1;
                            if let Some(t) = t {
                                prop_assert_eq!(t, Transfer::to(side));
                                // Everything else waits for the transfer.
                                prop_assert!(handles[0].touch(side).is_err());
                                prop_assert!(handles[0].acquire(side).is_err());
                                if copy_fails {
                                    s.abort_transfer(t, true).unwrap();
                                    m.open[idx(side)] -= 1;
                                    prop_assert_eq!(first.snapshot(), before);
                                } else {
                                    m.copy(t);
                                    s.finish_transfer(t).unwrap();
                                }
                            }
                        }
                    }
                }
                Op::Touch { view, side } => {
                    let allowed = m.open[idx(side)] > 0;
                    match handles[view].touch(side) {
                        Ok(()) => {
                            prop_assert!(allowed);
                            m.write(side);
                        }
                        Err(_) => {
                            prop_assert!(!allowed);
                            prop_assert_eq!(first.snapshot(), before);
                        }
                    }
                }
                Op::Release { view, side } => {
                    let allowed = m.open[idx(side)] > 0;
                    match handles[view].release(side) {
                        Ok(()) => {
                            prop_assert!(allowed);
                            m.open[idx(side)] -= 1;
                        }
                        Err(_) => {
                            prop_assert!(!allowed);
                            prop_assert_eq!(first.snapshot(), before);
                        }
                    }
                }
                Op::MarkModified { view, side } => {
                    let allowed = m.open[idx(side.other())] == 0 && m.current(side);
                    match handles[view].mark_modified(side) {
                        Ok(()) => {
                            prop_assert!(allowed);
                            m.write(side);
                        }
                        Err(_) => {
                            prop_assert!(!allowed);
                            prop_assert_eq!(first.snapshot(), before);
                        }
                    }
                }
                Op::Sync { view, copy_fails } => {
                    let t = handles[view].sync().unwrap();
                    prop_assert_eq!(t.is_some(), m.data[0] != m.data[1]);
                    if let Some(t) = t {
                        prop_assert!(!m.current(t.to) && m.current(t.from));
                        if copy_fails {
                            handles[view].abort_transfer(t, false).unwrap();
                            prop_assert_eq!(first.snapshot(), before);
                        } else {
                            m.copy(t);
                            handles[view].finish_transfer(t).unwrap();
                            prop_assert_eq!(first.state(), State::Clean);
                        }
                    }
                }
            }
            m.check(&first)?;
            for h in &handles {
                prop_assert_eq!(h.snapshot(), first.snapshot());
            }
        }
    }

    /// Balanced sessions on one side never copy twice: after one sync, any number of acquires of
    /// either side (one side at a time) copy only after a write on the other side.
    #[test]
    fn copies_only_after_writes(sides in prop::collection::vec((side(), any::<bool>()), 0..60)) {
        let s = SyncState::new(State::Clean);
        let mut writes_since_copy = [false, false];
        let mut expected = 0u64;
        for (side, write) in sides {
            let t = s.acquire(side).unwrap();
            if writes_since_copy[idx(side.other())] {
                expected += 1;
                s.finish_transfer(t.expect("stale side must be copied")).unwrap();
                writes_since_copy = [false, false];
            } else {
                prop_assert!(t.is_none());
            }
            if write {
                s.touch(side).unwrap();
                writes_since_copy[idx(side)] = true;
            }
            s.release(side).unwrap();
        }
        prop_assert_eq!(s.transfers().total(), expected);
    }
}
