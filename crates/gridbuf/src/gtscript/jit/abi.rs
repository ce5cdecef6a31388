//! The contract between compiled code and the executor: the function types of compiled
//! statements, loops, sections and columns, the slot structs handed to them, and what the
//! executor must pass each one (operands, outputs, run-time K slots).

use crate::gtscript::ir::Ty;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A compiled statement: `f(operands, strides, out, out_stride, n, rows, scalars, vk)`
/// computes `n` points on each of `rows` rows (strides in bytes, see [`crate::gtscript::jit::row::build`]); `vk` holds one
/// [`VkSlot`] per quantity the tape reads at run-time K levels.
pub(crate) type RowFn = unsafe extern "C" fn(
    *const *const u8,
    *const isize,
    *mut u8,
    isize,
    usize,
    usize,
    *const u8,
    *mut i64,
);

/// What compiled code reading a quantity at run-time K levels ([`crate::gtscript::plan::Op::LoadK`]) is handed, as
/// `i64`s: where the first row's first point's column starts (its level 0, in bytes, computed
/// with wrapping arithmetic), the byte steps per row and per point and per level, the first
/// point's level and how the level advances per row and per point (0 or 1), the levels it may
/// read (`lo..hi`), and what the code reports back: whether a level was outside (`err`, 0 or 1)
/// and the last such level. `row_col`, `row_k`: the current row's column start and level,
/// written by the code.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct VkSlot {
    pub(crate) addr0: i64,
    pub(crate) d_row: i64,
    pub(crate) d_point: i64,
    pub(crate) d_level: i64,
    pub(crate) k0: i64,
    pub(crate) k_row: i64,
    pub(crate) k_point: i64,
    pub(crate) lo: i64,
    pub(crate) hi: i64,
    pub(crate) err: i64,
    pub(crate) err_level: i64,
    pub(crate) row_col: i64,
    pub(crate) row_k: i64,
}

/// Byte offset of field `n` of [`VkSlot`] (all `i64`).
pub(crate) const fn vk_field(slot: usize, n: usize) -> i32 {
    ((slot * std::mem::size_of::<VkSlot>()) + n * 8) as i32
}

/// One statement's code and what the caller must hand it.
pub(crate) struct StmtCode {
    /// The function: Cranelift's, until tier two replaces it (see [`SwapFn`]).
    pub(crate) f: std::sync::Arc<SwapFn<RowFn>>,
    /// The operands, in the order of the pointer array: (quantity, offset I, J, K).
    pub(crate) operands: Vec<(u32, [i32; 3])>,
    /// Per axis: whether the tape reads its own target at a nonzero offset along it. Along the
    /// row's axis the code would read points it has already written, so the caller computes
    /// into scratch first; reads at the same point, or in other rows, see what the
    /// interpreter sees (rows run in the same order, each read before it is written).
    pub(crate) reads_target_along: [bool; 3],
    /// The quantities read at run-time K levels, one [`VkSlot`] each, in this order, and the
    /// element type the code loads from each one's memory.
    pub(crate) vk: Vec<(u32, Ty)>,
}

/// `f(table, ncols, nlev, scalars)`: runs the section on `ncols` columns over `nlev` levels.
/// `table[c * slots + s]` is the address of slot `s` in column `c` at the section's first level
/// (the lowest; see [`Slot`]).
pub(crate) type ColumnFn = unsafe extern "C" fn(*const usize, usize, usize, *const u8);

/// Something a column function reads or writes: one quantity at one horizontal offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    /// The quantity.
    pub(crate) q: u32,
    /// Horizontal offset (I, J) from the column.
    pub(crate) off: [i32; 2],
    /// Whether the quantity has a K axis (then level `l` at K offset `dk` is `l + dk` elements
    /// from the slot's address: unit stride along K; else every level is the slot's address).
    pub(crate) has_k: bool,
    /// Lowest and highest K offset read or written.
    pub(crate) k: (i32, i32),
    /// Whether the function writes it (at offset 0, each level of the section).
    pub(crate) written: bool,
}

/// A section's column function and the slots of its table.
pub(crate) struct ColumnCode {
    /// The function: Cranelift's, until tier two replaces it (see [`SwapFn`]).
    pub(crate) f: std::sync::Arc<SwapFn<ColumnFn>>,
    /// What each column's row of the table holds, in order.
    pub(crate) slots: Vec<Slot>,
}

/// A point function: `f(operands, steps, outs, out_steps, n, rows, scalars, vk)` runs, on
/// each of `rows` rows, each of its parts in turn (see [`crate::gtscript::jit::point::build`]), part `x` on `n[x]` points;
/// operand `k`'s row `r` starts at `operands[k] + r * steps[k]` bytes, stored quantity `j`'s
/// at `outs[j] + r * out_steps[j]` (the parts' operands, stored quantities and run-time K
/// slots one after the other), and the points of a row are one element apart (see
/// [`crate::gtscript::jit::point::PointRange::walk`] for quantities without the point axis and for BACKWARD walks); `vk` as
/// for [`crate::gtscript::jit::RowFn`]; `stop` the address of the call's interrupt flag
/// ([`crate::runtime::interrupt::Interrupt::flag_address`]), read at every pass of a loop. It returns
/// early, leaving points unfinished, once a run-time K read has reported a level outside or the
/// flag is set (the caller raises the error).
pub(crate) type LoopFn = unsafe extern "C" fn(
    *const *const u8,
    *const isize,
    *const *mut u8,
    *const isize,
    *const usize,
    usize,
    *const u8,
    *mut i64,
    *const u8,
);

/// A compiled loop (or sections) and what the caller must hand it.
pub(crate) struct LoopCode {
    /// The function: Cranelift's, until tier two replaces it (see [`SwapFn`]).
    pub(crate) f: std::sync::Arc<SwapFn<LoopFn>>,
    /// What it reads from memory, in the order of the pointer array: (quantity, offset I, J,
    /// K); the quantities it writes only at other K levels than the point's.
    pub(crate) operands: Vec<(u32, [i32; 3])>,
    /// What it stores (each at the point itself), in the order of the output array.
    pub(crate) outs: Vec<u32>,
    /// The quantities read at run-time K levels, one `VkSlot` each, and their memory's
    /// element types.
    pub(crate) vk: Vec<(u32, Ty)>,
    /// One past the last statement (of the first part).
    pub(crate) exit: usize,
    /// Its parts, in the order they run and their entries lie in the arrays above.
    pub(crate) parts: Vec<PartCode>,
}

/// One part of a point function: its section, and how many operands, stored quantities and
/// run-time K reads it has.
#[derive(Copy, Clone, Debug)]
pub(crate) struct PartCode {
    pub(crate) section: usize,
    pub(crate) operands: usize,
    pub(crate) outs: usize,
    pub(crate) vk: usize,
}

/// A compiled function that a later tier may replace while calls run (tier two, see
/// [`crate::gtscript::cgen`]): calls read it with one atomic load, the replacement is one
/// atomic store, so a call runs either the old function or the new one, both whole.
pub(crate) struct SwapFn<F> {
    addr: AtomicUsize,
    _f: PhantomData<F>,
}

impl<F: Copy> SwapFn<F> {
    /// A slot holding `f`.
    pub(crate) fn new(f: F) -> Self {
        const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<usize>()) };
        // SAFETY: `F` is a function pointer type of the size of `usize` (asserted above), so
        // its bits are an address.
        let addr = unsafe { std::mem::transmute_copy::<F, usize>(&f) };
        SwapFn {
            addr: AtomicUsize::new(addr),
            _f: PhantomData,
        }
    }

    /// The current function.
    #[inline]
    pub(crate) fn get(&self) -> F {
        let addr = self.addr.load(Ordering::Acquire);
        // SAFETY: `addr` was stored from an `F` (by `new` or `replace`), so these are the bits
        // of a valid `F`.
        unsafe { std::mem::transmute_copy::<usize, F>(&addr) }
    }

    /// Replaces the function by `f`.
    ///
    /// # Safety
    /// `f` must compute exactly what the current function computes, with the same arguments,
    /// and its code must stay alive as long as this slot's owner (the [`TierTwo`] that keeps
    /// it).
    pub(crate) unsafe fn replace(&self, f: F) {
        // SAFETY: as in `new`.
        let addr = unsafe { std::mem::transmute_copy::<F, usize>(&f) };
        self.addr.store(addr, Ordering::Release);
    }
}

/// Where a stencil's tier two stands (see [`crate::gtscript::cgen`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TierState {
    /// Not asked for yet (it starts at the first call), or switched off.
    Idle,
    /// Queued or compiling.
    Pending,
    /// In place: this many functions run tier two's code.
    Ready(usize),
    /// Not available for this stencil, and why (it stays on tier one).
    Failed(String),
}

/// A stencil's tier two: whether it was started, where it stands, and the loaded code that the
/// replaced [`SwapFn`]s point into (kept as long as the stencil's code).
#[derive(Default)]
pub(crate) struct TierTwo {
    /// Whether the code's maker wants tier two ([`crate::gtscript::machine_code`] does; code
    /// made by [`crate::gtscript::Jit::compile`] alone, as in tests, stays on tier one).
    pub(crate) wanted: std::sync::atomic::AtomicBool,
    /// Whether its maker asked for vector math (`cgen::vector_math`, read at definition).
    pub(crate) vector_math: std::sync::atomic::AtomicBool,
    pub(crate) started: std::sync::atomic::AtomicBool,
    pub(crate) state: std::sync::Mutex<Option<TierState>>,
    pub(crate) cond: std::sync::Condvar,
    pub(crate) code: std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>,
    /// Tier two's functions of whole sections' walks (section, [`crate::gtscript::plan::schedule::PointWalk`] as a number),
    /// for the walks tier one compiles on first use: each takes its function from here (see
    /// [`TierTwo::adopt`]).
    pub(crate) walks: std::sync::Mutex<Vec<((usize, usize), LoopFn)>>,
    /// Whether `walks` was filled (then every walk adopts its function at its next call).
    pub(crate) has_walks: std::sync::atomic::AtomicBool,
    /// Tier two's point functions of the straight runs of float code that it fuses (see
    /// [`crate::gtscript::plan::schedule::SectionSchedule::fused`]), per section and first
    /// statement: set once, when tier two is in place (tier one has none).
    pub(crate) fused: std::sync::OnceLock<Vec<Vec<Option<LoopCode>>>>,
    /// Tier two's walks of levels of the sections it walks alone (see
    /// [`crate::gtscript::plan::schedule::SectionSchedule::levels`]), per section: set once,
    /// when tier two is in place (tier one has none).
    pub(crate) levels: std::sync::OnceLock<Vec<Option<LoopCode>>>,
}

impl TierTwo {
    /// Puts tier two's function of walk `key` into `slot` once (`adopted` says it was), where
    /// tier two has one.
    pub(crate) fn adopt(
        &self,
        key: (usize, usize),
        slot: &SwapFn<LoopFn>,
        adopted: &std::sync::atomic::AtomicBool,
    ) {
        use std::sync::atomic::Ordering;
        if !self.has_walks.load(Ordering::Acquire) || adopted.load(Ordering::Relaxed) {
            return;
        }
        let walks = self.walks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&(_, f)) = walks.iter().find(|w| w.0 == key) {
            // SAFETY: `f` is tier two's function of this very walk (same parts, same
            // arguments), from the library `self.code` keeps, and `self` lives as long as
            // the slot's owner (the stencil's code).
            unsafe { slot.replace(f) };
        }
        adopted.store(true, Ordering::Relaxed);
    }

    /// Where it stands.
    pub(crate) fn state(&self) -> TierState {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or(TierState::Idle)
    }

    /// Sets where it stands, waking [`TierTwo::wait`]ers.
    pub(crate) fn set(&self, s: TierState) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
        self.cond.notify_all();
    }

    /// Waits up to `timeout` while it is pending; returns where it stands.
    pub(crate) fn wait(&self, timeout: std::time::Duration) -> TierState {
        let guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = self
            .cond
            .wait_timeout_while(guard, timeout, |s| matches!(s, Some(TierState::Pending)))
            .unwrap_or_else(|e| e.into_inner());
        guard.clone().unwrap_or(TierState::Idle)
    }
}
