//! How a compiled point function of whole sections (see [`crate::gtscript::jit::point`]) runs over a
//! tile: the two walks ([`PointWalk`]) and the call that hands it the tile's memory
//! ([`run_points`]), after checking that memory once for the whole tile.

use crate::error::{Error, Result};
use crate::gtscript::exec::strip::{vk_errors, vk_slots};
use crate::gtscript::jit::abi::{ColumnCode, LoopCode, PartCode, StmtCode, VkSlot};
use crate::gtscript::jit::Jit;
use crate::gtscript::plan::schedule::{LayoutSchedule, PointWalk, Schedule};
use crate::gtscript::plan::Plan;
use crate::gtscript::rt::lane::Elem;
use crate::gtscript::rt::mem::{Mem, VarMem};
use crate::interrupt::Interrupt;

/// What a call runs: the schedule of its plan (code generation on where `jit` is `Some`: its
/// code was compiled for the call's element type) and of its layout, and the code the
/// schedule names. The executor asks the schedule what runs, and takes that code from here;
/// code the schedule names but `jit` lacks is an internal error, never a fallback.
pub(crate) struct Code<'a> {
    /// The compiled code, where code generation is on.
    pub(crate) jit: Option<&'a Jit>,
    /// The plan's schedule.
    pub(crate) schedule: &'a Schedule,
    /// Its executors on the call's layout.
    pub(crate) layout: &'a LayoutSchedule,
}

/// The error of code the schedule names but the compiled code lacks.
fn missing(what: &str, s: usize) -> Error {
    Error::invalid(
        "gtscript schedule",
        format!("{what} of section {s}"),
        "compiled code for everything the schedule runs (internal error)",
    )
}

impl<'a> Code<'a> {
    /// The row function of statement `t` of section `s`, where the schedule runs it by one
    /// (else the interpreter runs it).
    #[inline]
    pub(crate) fn stmt<T: Elem>(&self, s: usize, t: usize) -> Result<Option<&'a StmtCode>> {
        if !self.schedule.sections[s].row[t] {
            return Ok(None);
        }
        match self.jit.and_then(|j| j.stmt::<T>(s, t)) {
            Some(c) => Ok(Some(c)),
            None => Err(missing("a row function", s)),
        }
    }

    /// The point function of the `while` loop whose condition is statement `t` of section
    /// `s`, where the schedule runs that loop point by point.
    #[inline]
    pub(crate) fn point_loop<T: Elem>(&self, s: usize, t: usize) -> Result<Option<&'a LoopCode>> {
        if self.schedule.sections[s].point_loop[t].is_none() {
            return Ok(None);
        }
        match self.jit.and_then(|j| j.point_loop::<T>(s, t)) {
            Some(c) => Ok(Some(c)),
            None => Err(missing("a loop function", s)),
        }
    }

    /// The column function of section `s` (for [`crate::gtscript::plan::schedule::SectionExec::Columns`]).
    pub(crate) fn column<T: Elem>(&self, s: usize) -> Result<&'a ColumnCode> {
        self.jit
            .and_then(|j| j.column::<T>(s))
            .ok_or_else(|| missing("a column function", s))
    }

    /// The point function of the sections section `s` starts, for `walk` (for
    /// [`crate::gtscript::plan::schedule::SectionExec::Points`]; compiled on first use).
    pub(crate) fn point_section<T: Elem>(
        &self,
        plan: &Plan,
        s: usize,
        walk: PointWalk,
    ) -> Result<&'a LoopCode> {
        match self.jit {
            Some(j) => j
                .point_section::<T>(plan, s, walk)?
                .ok_or_else(|| missing("a point function", s)),
            None => Err(missing("a point function", s)),
        }
    }
}

/// Runs the point function `code` of whole sections (see [`crate::gtscript::plan::schedule::section`] and [`crate::gtscript::plan::schedule::group`]),
/// compiled for `walk`, over the columns `lo..hi` (I, J): part `x` over the levels
/// `levels[x].0` (`ks..ke`), BACKWARD from the top when `levels[x].1`; quantity `q`'s memory is
/// `mem_of(q)`, run-time K reads read `vmem`. `Ok(false)` (nothing run) where some memory is
/// not of the element type, not writable where stored, or not of unit stride along the point
/// axis where it has that axis (along K also what is read at run-time levels).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_points<'m, T: Elem>(
    code: &LoopCode,
    mem_of: &impl Fn(usize) -> &'m Mem,
    vmem: &[Option<VarMem<'_>>],
    lo: [i64; 2],
    hi: [i64; 2],
    levels: &[((usize, usize), bool)],
    walk: PointWalk,
    scalars: &[T],
    stop: &Interrupt<'_>,
) -> Result<bool> {
    let (ni, nj) = (hi[0] - lo[0], hi[1] - lo[1]);
    let nk = |x: usize| levels[x].0 .1 as i64 - levels[x].0 .0 as i64;
    if levels.len() != code.parts.len() || (walk == PointWalk::Levels && levels.len() != 1) {
        return Err(crate::error::Error::invalid(
            "gtscript point function",
            levels.len(),
            "one level range per part (internal planning error)",
        ));
    }
    if ni <= 0 || nj <= 0 || (0..levels.len()).all(|x| nk(x) <= 0) {
        return Ok(true);
    }
    let size = std::mem::size_of::<T>() as isize;
    let point = walk.axis();
    let nops = code.operands.len();
    // Per operand, then per stored quantity (each part's after the parts' before it): the
    // address of the tile's lowest corner (I, J at `lo`, its part's first level) and the byte
    // steps along I, J, K.
    let mut corner: smallvec::SmallVec<[(usize, [isize; 3]); 16]> = smallvec::SmallVec::new();
    let part_of = |list: fn(&PartCode) -> usize| {
        code.parts
            .iter()
            .enumerate()
            .flat_map(move |(x, p)| std::iter::repeat_n(x, list(p)))
    };
    let slots = code
        .operands
        .iter()
        .zip(part_of(|p| p.operands))
        .map(|(&(q, off), x)| (q, off, false, x))
        .chain(
            code.outs
                .iter()
                .zip(part_of(|p| p.outs))
                .map(|(&q, x)| (q, [0; 3], true, x)),
        );
    for (q, off, stored, x) in slots {
        let m = mem_of(q as usize);
        let unit = !m.axes[point] || m.strides[point] == 1;
        if !m.native || !unit || (stored && !m.writable) {
            return Ok(false);
        }
        let (ks, ke) = levels[x].0;
        if ke <= ks {
            // A part with no level runs no point: its rows' addresses are never read.
            corner.push((0, [0; 3]));
            continue;
        }
        let base = m.check(
            [
                lo[0] + off[0] as i64,
                lo[1] + off[1] as i64,
                ks as i64 + off[2] as i64,
            ],
            [
                hi[0] + off[0] as i64,
                hi[1] + off[1] as i64,
                ke as i64 + off[2] as i64,
            ],
        )?;
        corner.push((
            m.addr.wrapping_add_signed(base * size),
            [0, 1, 2].map(|a| m.stride(a) * size),
        ));
    }
    let part_of_corner: smallvec::SmallVec<[usize; 16]> =
        part_of(|p| p.operands).chain(part_of(|p| p.outs)).collect();
    // Rows along J: each one's step.
    let steps: smallvec::SmallVec<[isize; 16]> = corner.iter().map(|c| c.1[1]).collect();
    let (steps, out_steps) = steps.split_at(nops);
    // Per part: its first level and the direction it walks.
    let start = |x: usize| {
        let ((ks, ke), backward) = levels[x];
        if backward {
            (ke as i64 - 1, -1i64)
        } else {
            (ks as i64, 1)
        }
    };
    let (calls, n): (i64, smallvec::SmallVec<[usize; 4]>) = match walk {
        PointWalk::Columns => (
            ni,
            (0..levels.len()).map(|x| nk(x).max(0) as usize).collect(),
        ),
        PointWalk::Levels => (nk(0), smallvec::smallvec![ni as usize]),
    };
    let mut first: smallvec::SmallVec<[usize; 16]> = smallvec::smallvec![0; corner.len()];
    let mut vk: smallvec::SmallVec<[VkSlot; 4]> =
        smallvec::smallvec![VkSlot::default(); code.vk.len()];
    for c in 0..calls {
        // This call's first point (I, J, level) and its last, per part.
        let at = |x: usize| {
            let (k0, dir) = start(x);
            match walk {
                PointWalk::Columns => (lo[0] + c, k0),
                PointWalk::Levels => (lo[0], k0 + c * dir),
            }
        };
        for ((f, &(a, st)), &x) in first.iter_mut().zip(&corner).zip(&part_of_corner) {
            if n[x] == 0 {
                continue;
            }
            let (i, k) = at(x);
            let off = (i - lo[0]) as isize * st[0] + (k - levels[x].0 .0 as i64) as isize * st[2];
            *f = a.wrapping_add_signed(off);
        }
        let mut v0 = 0;
        for (x, p) in code.parts.iter().enumerate() {
            let slots = &mut vk[v0..v0 + p.vk];
            let kinds = &code.vk[v0..v0 + p.vk];
            v0 += p.vk;
            if n[x] == 0 || p.vk == 0 {
                continue;
            }
            let (i, k) = at(x);
            let (_, dir) = start(x);
            let last = match walk {
                PointWalk::Columns => [i, hi[1] - 1, k + (nk(x) - 1) * dir],
                PointWalk::Levels => [hi[0] - 1, hi[1] - 1, k],
            };
            vk_slots::<T>(kinds, vmem, [1, point], [i, lo[1], k], last, slots)?;
            if walk == PointWalk::Columns && slots.iter().any(|v| v.d_level != size as i64) {
                // Compiled for levels one element apart (before the first call: nothing ran).
                return Ok(false);
            }
        }
        let (ops, outs) = first.split_at(nops);
        // SAFETY: `code.f` was compiled from the sections' statements for `T` and `walk`
        // (`Jit::point_section`), part after part as in `code.parts`. Row `r < nj`, point
        // `p < n[x]` of operand or stored quantity `y` of part `x` is at `first[y] + r * (J
        // step) + p * (one element, away from the first point along the point axis)`, or at
        // `first[y] + r * (J step)` where it lacks that axis: a point of the box over the
        // tile's columns and the part's levels shifted by its offset, which `check` verified
        // lies inside its view (the caller of `run` vouched for the fields' views; the tile's
        // own storage otherwise), with unit stride along the point axis (checked above); a part
        // with no point (`n[x] == 0`) reads and writes nothing. Stored quantities are
        // writable (checked above). The function stores only the sections' targets, at the
        // point itself, over this tile, which overlap no other argument (binder) and no other
        // tile; the sections read what they store only at other levels of the same column or
        // through their registers (`section`, `group`). `vk` holds one slot per run-time K
        // read (`vk_slots` checked every point's column; the code loads only levels inside
        // it); `stop` is this call's interrupt, alive until the function returns.
        unsafe {
            (code.f)(
                ops.as_ptr().cast(),
                steps.as_ptr(),
                outs.as_ptr().cast(),
                out_steps.as_ptr(),
                n.as_ptr(),
                nj as usize,
                scalars.as_ptr().cast(),
                vk.as_mut_ptr().cast(),
                stop.flag_address(),
            )
        };
        stop.check()?;
        vk_errors(&code.vk, vmem, &vk)?;
    }
    Ok(true)
}

/// Runs section code `code` on the columns `lo..hi` (I, J) over levels `ks..ke`, with the memory
/// of quantity `q` at `mem_of(q)`. `Ok(false)` (nothing run) where some slot's memory is not of
/// the element type with unit stride along K, or not writable where written.
pub(crate) fn run_columns<'m, T: Elem>(
    code: &ColumnCode,
    mem_of: &impl Fn(usize) -> &'m Mem,
    lo: [i64; 2],
    hi: [i64; 2],
    (ks, ke): (usize, usize),
    scalars: &[T],
    table: &mut Vec<usize>,
) -> Result<bool> {
    let slots = &code.slots;
    let ns = slots.len();
    let (ni, nj) = ((hi[0] - lo[0]) as usize, (hi[1] - lo[1]) as usize);
    if ni == 0 || nj == 0 || ke <= ks {
        return Ok(true);
    }
    let size = std::mem::size_of::<T>() as isize;
    // Per slot: the address of the first column at level `ks`, and the byte steps along I and J.
    let mut first: smallvec::SmallVec<[(usize, isize, isize); 16]> = smallvec::SmallVec::new();
    for x in slots {
        let m = mem_of(x.q as usize);
        if !m.native || (x.has_k && m.strides[2] != 1) || (x.written && !m.writable) {
            return Ok(false);
        }
        let (k0, k1) = if x.has_k {
            (ks as i64 + x.k.0 as i64, ke as i64 + x.k.1 as i64)
        } else {
            (0, 1)
        };
        let off = [x.off[0] as i64, x.off[1] as i64];
        let base = m.check(
            [lo[0] + off[0], lo[1] + off[1], k0],
            [hi[0] + off[0], hi[1] + off[1], k1],
        )?;
        // Level `ks` is `-x.k.0` elements above the box's lowest level (unit stride along K).
        let at = if x.has_k { base - x.k.0 as isize } else { base };
        first.push((
            m.addr.wrapping_add_signed(at * size),
            m.stride(0) * size,
            m.stride(1) * size,
        ));
    }
    let ncols = ni.checked_mul(nj).and_then(|n| n.checked_mul(ns));
    let Some(len) = ncols else {
        return Err(Error::invalid(
            "gtscript columns",
            (ni, nj),
            "a tile that fits memory",
        ));
    };
    table.clear();
    table.reserve(len);
    // Columns in memory order of a layout with I outermost (along J first).
    for i in 0..ni {
        for j in 0..nj {
            for &(a, si, sj) in &first {
                table.push(a.wrapping_add_signed(i as isize * si + j as isize * sj));
            }
        }
    }
    // SAFETY: `code.f` was compiled from this section for `T` (`Jit::column`). For every slot,
    // `check` verified that the box of all these columns (shifted by the slot's offset) over
    // the levels `ks + k.0 ..= ke - 1 + k.1` lies inside its view, which the caller of `run`
    // vouched for (or this tile's own storage); the table holds each column's address at
    // level `ks` inside that box, and the function reads level `l` at K offset `dk` at
    // `l + dk` elements from it (unit stride along K, checked above), `l` in `0..ke - ks` and
    // `dk` within `k`. It writes only the slots of the section's targets, at offset 0, over
    // this tile's columns: writable (checked above), overlapping no other argument (binder),
    // and no other tile's. Scalars are all in `scalars`.
    unsafe { (code.f)(table.as_ptr(), ni * nj, ke - ks, scalars.as_ptr().cast()) };
    Ok(true)
}
