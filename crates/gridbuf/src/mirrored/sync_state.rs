//! The sync state of a mirrored field: a host buffer and a device buffer that hold the same
//! data, synchronised lazily (GDP-3's `SyncState`: `SYNC_CLEAN`, `SYNC_HOST_DIRTY`,
//! `SYNC_DEVICE_DIRTY`).
//!
//! Every view of the same pair of buffers (slices, wrappers, DataArrays) shares one state: a
//! [`SyncState`] is a handle, and its clones are handles to the same state. The state only
//! decides; the copies themselves are done by the caller with the library of each side (NumPy,
//! CuPy), in two phases so that no lock is held while a copy runs:
//!
//! 1. [`SyncState::acquire`] opens an access to one side and returns the [`Transfer`] that makes
//!    that side current, if the other side holds newer data;
//! 2. the caller performs the copy and reports it with [`SyncState::finish_transfer`] (or
//!    [`SyncState::abort_transfer`] when the copy failed, which also closes the access).
//!
//! The rules, where the data-interface protocol (acquire / touch / release) is silent:
//!
//! - Accesses to the same side may overlap (a field passed twice to one stencil, several views
//!   in one call): they are counted.
//! - Acquiring one side while an access to the other side is open is refused
//!   ([`SyncError::ConflictingAccess`]): either access may write, and no order of syncs keeps both
//!   writes.
//! - [`SyncState::touch`] needs an open access to that side ([`SyncError::NotAcquired`]); inside an
//!   access that side is current, so marking it modified can never lose data.
//! - [`SyncState::mark_modified`] (GDP-3's `set_host_modified` / `set_device_modified`, for
//!   writes made outside the protocol) is refused when the other side holds newer data
//!   ([`SyncError::BothModified`]): the two sides would each hold changes the other lacks.
//! - While a transfer is in flight every other operation is refused
//!   ([`SyncError::TransferInProgress`]) instead of waiting, so that a caller holding another lock
//!   (Python's GIL) cannot deadlock.
//! - A refused operation changes nothing.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// One side of a mirrored field.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The host (main memory) buffer.
    Host,
    /// The device buffer (GPU memory, or a second host buffer standing in for it).
    Device,
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Host => Side::Device,
            Side::Device => Side::Host,
        }
    }

    /// `"host"` or `"device"`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Host => "host",
            Side::Device => "device",
        }
    }

    /// Parses `"host"` / `"cpu"` or `"device"` / `"gpu"` / `"cuda"`.
    pub fn parse(name: &str) -> Option<Side> {
        match name {
            "host" | "cpu" => Some(Side::Host),
            "device" | "gpu" | "cuda" => Some(Side::Device),
            _ => None,
        }
    }

    fn index(self) -> usize {
        match self {
            Side::Host => 0,
            Side::Device => 1,
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which buffer holds the newest data.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Both buffers hold the same data (`SYNC_CLEAN`).
    Clean,
    /// The host buffer was modified; the device buffer is stale (`SYNC_HOST_DIRTY`).
    HostDirty,
    /// The device buffer was modified; the host buffer is stale (`SYNC_DEVICE_DIRTY`).
    DeviceDirty,
}

impl State {
    /// The state in which `side` holds the only current copy.
    pub fn dirty(side: Side) -> State {
        match side {
            Side::Host => State::HostDirty,
            Side::Device => State::DeviceDirty,
        }
    }

    /// Whether `side` holds the newest data.
    pub fn is_current(self, side: Side) -> bool {
        self == State::Clean || self == State::dirty(side)
    }

    /// `"clean"`, `"host_dirty"` or `"device_dirty"`.
    pub fn name(self) -> &'static str {
        match self {
            State::Clean => "clean",
            State::HostDirty => "host_dirty",
            State::DeviceDirty => "device_dirty",
        }
    }
}

/// A copy of the whole buffer from one side to the other.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Transfer {
    /// The side that holds the newest data.
    pub from: Side,
    /// The stale side that the copy makes current.
    pub to: Side,
}

impl Transfer {
    /// The transfer that makes `to` current.
    pub fn to(to: Side) -> Transfer {
        Transfer {
            from: to.other(),
            to,
        }
    }
}

/// Why an operation on a [`SyncState`] was refused. A refused operation changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SyncError {
    /// An access to `side` was asked for while accesses to the other side are open.
    #[error(
        "cannot acquire the {side} side of a mirrored field while {open} access(es) to its {} side \
         are open: either could write, and one write would be lost; release them first",
        .side.other()
    )]
    ConflictingAccess {
        /// The side asked for.
        side: Side,
        /// How many accesses to the other side are open.
        open: usize,
    },
    /// `touch` or `release` of a side without an open access to it.
    #[error("cannot {op} the {side} side of a mirrored field: no access to it is open (acquire it first)")]
    NotAcquired {
        /// `"touch"` or `"release"`.
        op: &'static str,
        /// The side.
        side: Side,
    },
    /// `mark_modified(side)` while the other side holds newer data.
    #[error(
        "cannot mark the {side} side of a mirrored field modified: its {} side holds changes the \
         {side} side lacks, and one of the two would be lost; sync first",
        .side.other()
    )]
    BothModified {
        /// The side to mark.
        side: Side,
    },
    /// Any operation while a transfer is in flight (or a transfer reported that is not in flight).
    #[error("cannot {op} a mirrored field while its {transfer} transfer is in progress")]
    TransferInProgress {
        /// What was asked for.
        op: &'static str,
        /// The transfer in flight, such as "host to device", or "no" when none is.
        transfer: String,
    },
    /// An operation that needs no open access (such as `force` or `set_state`) while some are open.
    #[error("cannot {op} a mirrored field while {open} access(es) to it are open")]
    AccessOpen {
        /// What was asked for.
        op: &'static str,
        /// Open accesses, both sides.
        open: usize,
    },
}

/// Counts of the copies the state asked for and the caller completed.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TransferCount {
    /// Completed host-to-device copies.
    pub host_to_device: u64,
    /// Completed device-to-host copies.
    pub device_to_host: u64,
}

impl TransferCount {
    /// Both directions together.
    pub fn total(&self) -> u64 {
        self.host_to_device + self.device_to_host
    }
}

/// A snapshot of a [`SyncState`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Which side holds the newest data.
    pub state: State,
    /// Open accesses to the host side.
    pub host_open: usize,
    /// Open accesses to the device side.
    pub device_open: usize,
    /// The transfer in flight, if any.
    pub in_flight: Option<Transfer>,
    /// Completed copies.
    pub transfers: TransferCount,
}

#[derive(Debug)]
struct Inner {
    state: State,
    open: [usize; 2],
    in_flight: Option<Transfer>,
    transfers: TransferCount,
}

/// The shared sync state of a mirrored field. Cloning gives another handle to the same state.
#[derive(Clone, Debug)]
pub struct SyncState {
    inner: Arc<Mutex<Inner>>,
}

impl SyncState {
    /// A new state; `state` says which buffer is current at creation.
    pub fn new(state: State) -> SyncState {
        SyncState {
            inner: Arc::new(Mutex::new(Inner {
                state,
                open: [0, 0],
                in_flight: None,
                transfers: TransferCount::default(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while the lock was held cannot leave `Inner` half-updated (every update is a
        // plain assignment after all checks), so a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `other` is a handle to the same state.
    pub fn same(&self, other: &SyncState) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A consistent snapshot of everything.
    pub fn snapshot(&self) -> Snapshot {
        let g = self.lock();
        Snapshot {
            state: g.state,
            host_open: g.open[0],
            device_open: g.open[1],
            in_flight: g.in_flight,
            transfers: g.transfers,
        }
    }

    /// Which side holds the newest data.
    pub fn state(&self) -> State {
        self.lock().state
    }

    /// Completed copies.
    pub fn transfers(&self) -> TransferCount {
        self.lock().transfers
    }

    fn idle(g: &Inner, op: &'static str) -> Result<(), SyncError> {
        match g.in_flight {
            Some(t) => Err(SyncError::TransferInProgress {
                op,
                transfer: format!("{} to {}", t.from, t.to),
            }),
            None => Ok(()),
        }
    }

    /// Opens an access to `side`. Returns the copy that makes `side` current when the other side
    /// holds newer data; the caller performs it and then calls [`SyncState::finish_transfer`]
    /// (or [`SyncState::abort_transfer`]). Until then the state stays dirty and every other
    /// operation is refused.
    pub fn acquire(&self, side: Side) -> Result<Option<Transfer>, SyncError> {
        let mut g = self.lock();
        Self::idle(&g, "acquire")?;
        let open_other = g.open[side.other().index()];
        if open_other > 0 {
            return Err(SyncError::ConflictingAccess {
                side,
                open: open_other,
            });
        }
        g.open[side.index()] += 1;
        if g.state.is_current(side) {
            return Ok(None);
        }
        let t = Transfer::to(side);
        g.in_flight = Some(t);
        Ok(Some(t))
    }

    /// Reports that the transfer [`SyncState::acquire`] or [`SyncState::sync`] returned was
    /// done: both sides now hold the same data.
    pub fn finish_transfer(&self, transfer: Transfer) -> Result<(), SyncError> {
        let mut g = self.lock();
        if g.in_flight != Some(transfer) {
            return Err(SyncError::TransferInProgress {
                op: "finish a transfer of",
                transfer: "no such".into(),
            });
        }
        g.in_flight = None;
        g.state = State::Clean;
        match transfer.to {
            Side::Device => g.transfers.host_to_device += 1,
            Side::Host => g.transfers.device_to_host += 1,
        }
        Ok(())
    }

    /// Reports that the transfer failed: the state stays as it was, and the access opened by the
    /// [`SyncState::acquire`] that asked for it (if any) is closed again.
    pub fn abort_transfer(&self, transfer: Transfer, acquired: bool) -> Result<(), SyncError> {
        let mut g = self.lock();
        if g.in_flight != Some(transfer) {
            return Err(SyncError::TransferInProgress {
                op: "abort a transfer of",
                transfer: "no such".into(),
            });
        }
        g.in_flight = None;
        if acquired {
            let i = transfer.to.index();
            g.open[i] = g.open[i].saturating_sub(1);
        }
        Ok(())
    }

    /// Marks `side` modified inside an open access to it: the other side becomes stale.
    pub fn touch(&self, side: Side) -> Result<(), SyncError> {
        let mut g = self.lock();
        Self::idle(&g, "touch")?;
        if g.open[side.index()] == 0 {
            return Err(SyncError::NotAcquired { op: "touch", side });
        }
        // Inside an access `side` is current (acquire made it so, and the other side cannot be
        // acquired or marked meanwhile), so this loses nothing.
        debug_assert!(g.state.is_current(side));
        g.state = State::dirty(side);
        Ok(())
    }

    /// Closes one access to `side`.
    pub fn release(&self, side: Side) -> Result<(), SyncError> {
        let mut g = self.lock();
        Self::idle(&g, "release")?;
        if g.open[side.index()] == 0 {
            return Err(SyncError::NotAcquired {
                op: "release",
                side,
            });
        }
        g.open[side.index()] -= 1;
        Ok(())
    }

    /// Marks `side` modified outside any access (for writes the protocol did not see). Refused
    /// when the other side holds newer data or has an open access.
    pub fn mark_modified(&self, side: Side) -> Result<(), SyncError> {
        let mut g = self.lock();
        Self::idle(&g, "mark modified")?;
        let open_other = g.open[side.other().index()];
        if open_other > 0 {
            return Err(SyncError::ConflictingAccess {
                side,
                open: open_other,
            });
        }
        if !g.state.is_current(side) {
            return Err(SyncError::BothModified { side });
        }
        g.state = State::dirty(side);
        Ok(())
    }

    /// The copy that makes both sides hold the same data, if they do not; report it with
    /// [`SyncState::finish_transfer`] or [`SyncState::abort_transfer`] (`acquired` false).
    pub fn sync(&self) -> Result<Option<Transfer>, SyncError> {
        let mut g = self.lock();
        Self::idle(&g, "sync")?;
        let t = match g.state {
            State::Clean => return Ok(None),
            State::HostDirty => Transfer::to(Side::Device),
            State::DeviceDirty => Transfer::to(Side::Host),
        };
        // With a host access open the host may still be written to after this copy; that write
        // then marks the host dirty again (touch), so nothing is lost.
        g.in_flight = Some(t);
        Ok(Some(t))
    }

    /// Declares which side is current without copying (GDP-3's `set_synchronized` and the
    /// `sync_state=` of `as_storage`). Refused while accesses are open or a transfer is in flight.
    pub fn set_state(&self, state: State) -> Result<(), SyncError> {
        let mut g = self.lock();
        Self::idle(&g, "set the state of")?;
        let open = g.open[0] + g.open[1];
        if open > 0 {
            return Err(SyncError::AccessOpen {
                op: "set the state of",
                open,
            });
        }
        g.state = state;
        Ok(())
    }

    /// Runs a whole acquire with the copy done by `copy` (a convenience over the two phases for
    /// Rust callers). The lock is not held while `copy` runs.
    pub fn acquire_with<E>(
        &self,
        side: Side,
        copy: impl FnOnce(Transfer) -> Result<(), E>,
    ) -> Result<Option<Transfer>, AcquireError<E>> {
        let t = self.acquire(side).map_err(AcquireError::Sync)?;
        if let Some(t) = t {
            if let Err(e) = copy(t) {
                self.abort_transfer(t, true).map_err(AcquireError::Sync)?;
                return Err(AcquireError::Copy(e));
            }
            self.finish_transfer(t).map_err(AcquireError::Sync)?;
        }
        Ok(t)
    }
}

/// The error of [`SyncState::acquire_with`]: the state refused, or the copy failed.
#[derive(Debug)]
pub enum AcquireError<E> {
    /// The state refused the acquire.
    Sync(SyncError),
    /// The copy failed; the state is as before the acquire.
    Copy(E),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_syncs_only_a_stale_side() {
        let s = SyncState::new(State::HostDirty);
        assert_eq!(s.acquire(Side::Host), Ok(None));
        assert_eq!(s.release(Side::Host), Ok(()));
        let t = s.acquire(Side::Device).unwrap().unwrap();
        assert_eq!(t, Transfer::to(Side::Device));
        assert!(s.touch(Side::Device).is_err(), "refused while in flight");
        s.finish_transfer(t).unwrap();
        assert_eq!(s.state(), State::Clean);
        s.touch(Side::Device).unwrap();
        s.release(Side::Device).unwrap();
        assert_eq!(s.state(), State::DeviceDirty);
        assert_eq!(s.transfers().host_to_device, 1);
        assert_eq!(s.transfers().device_to_host, 0);
    }

    #[test]
    fn refusals_change_nothing() {
        let s = SyncState::new(State::Clean);
        s.acquire(Side::Host).unwrap();
        let before = s.snapshot();
        assert!(matches!(
            s.acquire(Side::Device),
            Err(SyncError::ConflictingAccess { open: 1, .. })
        ));
        assert!(s.touch(Side::Device).is_err());
        assert!(s.release(Side::Device).is_err());
        assert!(s.mark_modified(Side::Device).is_err());
        assert!(s.set_state(State::Clean).is_err());
        assert_eq!(s.snapshot(), before);
    }

    #[test]
    fn mark_modified_refuses_to_lose_the_other_side() {
        let s = SyncState::new(State::DeviceDirty);
        assert_eq!(
            s.mark_modified(Side::Host),
            Err(SyncError::BothModified { side: Side::Host })
        );
        s.mark_modified(Side::Device).unwrap();
        assert_eq!(s.state(), State::DeviceDirty);
    }

    #[test]
    fn failed_copy_keeps_the_state() {
        let s = SyncState::new(State::DeviceDirty);
        let r = s.acquire_with(Side::Host, |_| Err("no memory"));
        assert!(matches!(r, Err(AcquireError::Copy("no memory"))));
        let snap = s.snapshot();
        assert_eq!(
            (snap.state, snap.host_open, snap.in_flight),
            (State::DeviceDirty, 0, None)
        );
        assert_eq!(snap.transfers.total(), 0);
    }

    #[test]
    fn clones_share_the_state() {
        let a = SyncState::new(State::Clean);
        let b = a.clone();
        assert!(a.same(&b));
        a.acquire(Side::Host).unwrap();
        a.touch(Side::Host).unwrap();
        assert_eq!(b.state(), State::HostDirty);
        assert!(b.acquire(Side::Device).is_err());
        b.release(Side::Host).unwrap();
        assert_eq!(a.snapshot().host_open, 0);
        assert!(!a.same(&SyncState::new(State::Clean)));
    }

    #[test]
    fn messages_name_the_sides() {
        let e = SyncError::ConflictingAccess {
            side: Side::Device,
            open: 2,
        };
        let m = e.to_string();
        assert!(m.contains("device side") && m.contains("host side"), "{m}");
    }
}
