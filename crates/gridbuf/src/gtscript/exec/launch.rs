//! Handing checked memory to compiled functions: the code a call runs, as its schedule names
//! it ([`Code`]); a statement's row function over a block's rows ([`run_stmt_code`], or the
//! interpreter: [`run_statement`]); a `while` loop's point function over a block
//! ([`run_loop_code`]); the point function of whole sections over a tile, along one of its two
//! walks ([`PointWalk`], [`run_points`], see [`crate::gtscript::jit::point`]), after checking
//! that memory once for the whole tile; a section's column function over a tile's columns
//! ([`run_columns`]).

use crate::error::{Error, Result};
use crate::gtscript::exec::strip::{row_error, run_stmt, vk_errors, vk_slots, written, Strip};
use crate::gtscript::jit::abi::{ColumnCode, LoopCode, PartCode, StmtCode, VkSlot};
use crate::gtscript::jit::Jit;
use crate::gtscript::plan::schedule::{LayoutSchedule, PointWalk, Schedule};
use crate::gtscript::plan::Plan;
use crate::gtscript::plan::{Instr, Op, Src, StmtPlan};
use crate::gtscript::rt::interp::{Arg, STRIP};
use crate::gtscript::rt::lane::Elem;
use crate::gtscript::rt::mem::{mem_row, Geo};
use crate::gtscript::rt::mem::{Mem, VarMem};
use crate::runtime::interrupt::Interrupt;

/// What a call runs: the schedule of its plan (code generation on where `jit` is `Some`: its
/// code was compiled for the call's element type) and of its layout, and the code the
/// schedule names. The executor asks the schedule what runs, and takes that code from here;
/// code the schedule names but `jit` lacks is an internal error, never a fallback.
pub(crate) struct Code<'a> {
    /// The plan the code was made for.
    pub(crate) plan: &'a Plan,
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
        let code = match self.jit {
            Some(j) => j.stmt::<T>(self.plan, s, t)?,
            None => None,
        };
        code.map(Some).ok_or_else(|| missing("a row function", s))
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

    /// Tier two's point function of the straight run that statement `t` of section `s` starts
    /// (see [`crate::gtscript::plan::schedule::SectionSchedule::fused`]), once tier two is in
    /// place; until then the run's statements run by their row functions.
    #[inline]
    pub(crate) fn fused<T: Elem>(&self, s: usize, t: usize) -> Option<&'a LoopCode> {
        self.schedule.sections[s].fused[t]?;
        self.jit?.fused::<T>(s, t)
    }

    /// Tier two's walk of the levels of section `s` (see
    /// [`crate::gtscript::plan::schedule::SectionSchedule::levels`]) on a layout with unit
    /// stride along I, once tier two is in place; until then the section runs in blocks.
    #[inline]
    pub(crate) fn levels_walk<T: Elem>(&self, s: usize) -> Option<&'a LoopCode> {
        if !self.schedule.sections[s].levels_on(Some(self.layout.layout)) {
            return None;
        }
        self.jit?.levels_walk::<T>(s)
    }

    /// The column function of section `s` (for [`crate::gtscript::plan::schedule::SectionExec::Columns`]).
    pub(crate) fn column<T: Elem>(&self, s: usize) -> Result<&'a ColumnCode> {
        let code = match self.jit {
            Some(j) => j.column::<T>(self.plan, s)?,
            None => None,
        };
        code.ok_or_else(|| missing("a column function", s))
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
            (code.f.get())(
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
    unsafe { (code.f.get())(table.as_ptr(), ni * nj, ke - ks, scalars.as_ptr().cast()) };
    Ok(true)
}

/// The rows of `operands` for the strip at `p` (`n` points along `geo`'s inner axis), checked,
/// into `ptrs`; returns the strip's flat index in the block.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn operand_rows<T: Elem>(
    operands: &[(u32, [i32; 3])],
    geo: &Geo,
    bufs: &[Vec<T>],
    regs: &[Vec<T>],
    direct: &[Option<Mem>],
    scalars: &[T],
    p: [i64; 3],
    n: usize,
    ptrs: &mut [*const T],
) -> Result<usize> {
    let f0 = geo.flat(p);
    if f0 < 0 || f0 as usize + n > geo.len {
        return Err(row_error("statement"));
    }
    let strip = Strip {
        bufs,
        direct,
        geo,
        scalars,
        p,
        n,
    };
    for (slot, &(q, off)) in ptrs.iter_mut().zip(operands) {
        match strip.operand(Src::Q(q, off), regs)? {
            Arg::S(s) => *slot = s.as_ptr(),
            Arg::V(_) => return Err(row_error("operand")),
        }
    }
    Ok(f0 as usize)
}

/// The row of `n` points that quantity `q` is written at from the point `w` (flat index `f0`
/// in the block, if inside it): in `mem` (a field written in place, which must be writable)
/// or in `q`'s block buffer; checked. It may be an operand row too (a tape reads its
/// target), so it is a raw pointer, not a slice.
#[inline(always)]
fn out_row<T: Elem>(
    bufs: &mut [Vec<T>],
    mem: Option<&Mem>,
    q: usize,
    w: [i64; 3],
    f0: Option<usize>,
    inner: usize,
    n: usize,
) -> Result<*mut T> {
    match (mem, f0) {
        (Some(mem), _) => mem_row::<T>(mem, w, inner, n)
            .filter(|_| mem.writable)
            .ok_or_else(|| row_error("store")),
        (None, Some(f0)) if f0 + n <= bufs[q].len() => {
            // `Vec::as_mut_ptr` makes no reference to the elements, so the operand pointers
            // taken from the same buffer stay valid.
            Ok(bufs[q].as_mut_ptr().wrapping_add(f0))
        }
        (None, _) => Err(row_error("store")),
    }
}

/// Runs one statement with its compiled code. Where the result can go straight to its target,
/// one call covers all rows of an outer-axis step (operand and target rows advance by fixed
/// strides, so checking the first and the last row checks them all); where it goes through
/// scratch first (the tape reads its own target, or the target takes streaming stores), one
/// call per strip of at most [`STRIP`] points.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn run_stmt_code<T: Elem>(
    code: &StmtCode,
    st: &StmtPlan,
    geo: &Geo,
    bufs: &mut [Vec<T>],
    regs: &mut [Vec<T>],
    direct: &[Option<Mem>],
    vmem: &[Option<VarMem<'_>>],
    scalars: &[T],
    rlo: [i64; 3],
    rhi: [i64; 3],
) -> Result<()> {
    let target = st.target as usize;
    let [o, m, i] = geo.order;
    let mut vk: smallvec::SmallVec<[VkSlot; 2]> =
        smallvec::smallvec![VkSlot::default(); code.vk.len()];
    let tmem = direct[target];
    // Streaming stores only for statements that read a single row per output row (copies and
    // point-wise maps): measured faster there (copy 1.63 ms against 1.99 ms at 256x256x80),
    // slower for stencils that read several rows (laplacian 2.70 against 2.25 ms).
    let stream = tmem.is_some_and(|t| t.stream) && code.operands.len() <= 1;
    let via_scratch = code.reads_target_along[i] || stream;
    // A statement that only copies an operand into a streamed target streams it straight from
    // the operand (copy 256x256x80: the native kernel's 1.4 ms against 1.5 through scratch).
    let copy = stream
        && matches!(st.tape[..], [Instr { op: Op::Mov, args: [Src::Q(q, _), ..], .. }] if q != st.target);
    let row_len = (rhi[i] - rlo[i]) as usize;
    let rows = (rhi[m] - rlo[m]) as usize;
    let size = std::mem::size_of::<T>() as isize;
    let nops = code.operands.len();
    let mut first: smallvec::SmallVec<[*const T; 16]> = smallvec::smallvec![std::ptr::null(); nops];
    let mut last = first.clone();
    let mut steps: smallvec::SmallVec<[isize; 16]> = smallvec::smallvec![0; nops];
    let operands =
        |bufs: &[Vec<T>], regs: &[Vec<T>], p: [i64; 3], n: usize, ptrs: &mut [*const T]| {
            operand_rows(&code.operands, geo, bufs, regs, direct, scalars, p, n, ptrs)
        };
    let target_row = |bufs: &mut [Vec<T>], p: [i64; 3], f0: usize, n: usize| {
        // The row written: at the statement's K offset (`f0` is the computed point's index).
        let w = written(st, p);
        let f0 = if st.k_offset == 0 {
            Some(f0)
        } else {
            usize::try_from(geo.flat(w)).ok()
        };
        out_row(bufs, tmem.as_ref(), target, w, f0, i, n)
    };
    for po in rlo[o]..rhi[o] {
        if !via_scratch {
            if row_len == 0 || rows == 0 {
                continue;
            }
            let mut p = [0i64; 3];
            p[o] = po;
            p[m] = rlo[m];
            p[i] = rlo[i];
            let f0 = operands(bufs, regs, p, row_len, &mut first)?;
            let out = target_row(bufs, p, f0, row_len)?;
            let mut out_step = 0;
            if rows > 1 {
                let mut q = p;
                q[m] = rhi[m] - 1;
                let f1 = operands(bufs, regs, q, row_len, &mut last)?;
                let last_out = target_row(bufs, q, f1, row_len)?;
                let per = |a: usize, b: usize| (b as isize - a as isize) / (rows as isize - 1);
                for ((s, f), l) in steps.iter_mut().zip(&first).zip(&last) {
                    *s = per(f.addr(), l.addr());
                }
                out_step = per(out.addr(), last_out.addr());
            }
            debug_assert!(steps.iter().all(|s| s % size == 0));
            let mut q = p;
            q[m] = rhi[m] - 1;
            q[i] = rhi[i] - 1;
            vk_slots::<T>(&code.vk, vmem, [geo.order[1], geo.order[2]], p, q, &mut vk)?;
            // SAFETY: `code.f` was compiled from this statement's tape for `T`. Operand `k`'s
            // rows start at `first[k] + r * steps[k]` bytes for `r < rows`: the first and the
            // last were checked above to hold `row_len` elements inside a block buffer or a
            // view, and rows in between lie between them along the same axis of the same
            // box. Likewise the target rows. The binder keeps written fields apart from the
            // other arguments and tiles write disjoint cores; where the tape reads its own
            // target, it is at the same point of the row (`reads_target_along[i]` is false),
            // which each step loads before it stores, or in another row, which the row loop
            // reaches in the interpreter's order. The scalars the tape names are all in
            // `scalars`. `vk` holds one slot per run-time K read (`vk_slots` checked that every
            // point's column lies inside the memory; the code loads only levels inside it).
            unsafe {
                (code.f.get())(
                    first.as_ptr().cast(),
                    steps.as_ptr(),
                    out.cast(),
                    out_step,
                    row_len,
                    rows,
                    scalars.as_ptr().cast(),
                    vk.as_mut_ptr().cast(),
                )
            };
            vk_errors(&code.vk, vmem, &vk)?;
            continue;
        }
        let scratch = regs.len() - 1;
        for pm in rlo[m]..rhi[m] {
            let mut c = 0;
            while c < row_len {
                let n = (row_len - c).min(STRIP);
                let mut p = [0i64; 3];
                p[o] = po;
                p[m] = pm;
                p[i] = rlo[i] + c as i64;
                let f0 = operands(bufs, regs, p, n, &mut first)?;
                let mut q = p;
                q[i] += n as i64 - 1;
                vk_slots::<T>(&code.vk, vmem, [geo.order[1], geo.order[2]], p, q, &mut vk)?;
                let res: &[T] = if copy {
                    // SAFETY: `operands` checked that the `n` points from `first[0]` lie
                    // inside the operand's view or block buffer, another quantity than the
                    // target (see `copy`), so not the row written below.
                    unsafe { std::slice::from_raw_parts(first[0], n) }
                } else {
                    let tmp = regs[scratch][..n].as_mut_ptr();
                    // SAFETY: as above, for one row of `n` points written to scratch (a
                    // register of `STRIP` elements that no operand is).
                    unsafe {
                        (code.f.get())(
                            first.as_ptr().cast(),
                            steps.as_ptr(),
                            tmp.cast(),
                            0,
                            n,
                            1,
                            scalars.as_ptr().cast(),
                            vk.as_mut_ptr().cast(),
                        )
                    };
                    vk_errors(&code.vk, vmem, &vk)?;
                    &regs[scratch][..n]
                };
                let dst = target_row(bufs, p, f0, n)?;
                // SAFETY: `target_row` checked that the `n` points from `dst` lie inside the
                // target's writable view or block buffer; the tape's reads for this strip are
                // done (they went to scratch), and nothing else writes this row.
                let dst = unsafe { std::slice::from_raw_parts_mut(dst, n) };
                if stream {
                    T::stream(dst, res);
                } else {
                    dst.copy_from_slice(res);
                }
                c += n;
            }
        }
    }
    Ok(())
}

/// Runs one statement over `[rlo, rhi)` with its compiled code where there is some, else on the
/// tape interpreter.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn run_statement<T: Elem>(
    code: Option<&StmtCode>,
    st: &StmtPlan,
    geo: &Geo,
    bufs: &mut [Vec<T>],
    regs: &mut [Vec<T>],
    direct: &[Option<Mem>],
    vmem: &[Option<VarMem<'_>>],
    scalars: &[T],
    rlo: [i64; 3],
    rhi: [i64; 3],
) -> Result<()> {
    match code {
        Some(code) => run_stmt_code(code, st, geo, bufs, regs, direct, vmem, scalars, rlo, rhi),
        None => run_stmt(st, geo, bufs, regs, direct, vmem, scalars, rlo, rhi),
    }
}

/// Runs a `while` loop's compiled code (see [`LoopCode`]) over `[rlo, rhi)`, the box of every
/// statement of the loop: one call per outer-axis step covers all its rows.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_loop_code<T: Elem>(
    code: &LoopCode,
    geo: &Geo,
    bufs: &mut [Vec<T>],
    regs: &[Vec<T>],
    direct: &[Option<Mem>],
    vmem: &[Option<VarMem<'_>>],
    scalars: &[T],
    rlo: [i64; 3],
    rhi: [i64; 3],
    stop: &Interrupt<'_>,
) -> Result<()> {
    let [o, m, i] = geo.order;
    let row_len = (rhi[i] - rlo[i]) as usize;
    let rows = (rhi[m] - rlo[m]) as usize;
    if row_len == 0 || rows == 0 {
        return Ok(());
    }
    let mut vk: smallvec::SmallVec<[VkSlot; 4]> =
        smallvec::smallvec![VkSlot::default(); code.vk.len()];
    let (nops, nouts) = (code.operands.len(), code.outs.len());
    let mut first: smallvec::SmallVec<[*const T; 16]> = smallvec::smallvec![std::ptr::null(); nops];
    let mut last = first.clone();
    let mut steps: smallvec::SmallVec<[isize; 16]> = smallvec::smallvec![0; nops];
    let mut out_first: smallvec::SmallVec<[*mut T; 16]> =
        smallvec::smallvec![std::ptr::null_mut(); nouts];
    let mut out_steps: smallvec::SmallVec<[isize; 16]> = smallvec::smallvec![0; nouts];
    let per = |a: usize, b: usize| (b as isize - a as isize) / (rows as isize - 1).max(1);
    for po in rlo[o]..rhi[o] {
        let mut p = [0i64; 3];
        p[o] = po;
        p[m] = rlo[m];
        p[i] = rlo[i];
        let mut q = p;
        q[m] = rhi[m] - 1;
        let f0 = operand_rows(
            &code.operands,
            geo,
            bufs,
            regs,
            direct,
            scalars,
            p,
            row_len,
            &mut first,
        )?;
        let f1 = operand_rows(
            &code.operands,
            geo,
            bufs,
            regs,
            direct,
            scalars,
            q,
            row_len,
            &mut last,
        )?;
        for ((s, f), l) in steps.iter_mut().zip(&first).zip(&last) {
            *s = per(f.addr(), l.addr());
        }
        for (j, &w) in code.outs.iter().enumerate() {
            let w = w as usize;
            let a = out_row(bufs, direct[w].as_ref(), w, p, Some(f0), i, row_len)?;
            let b = out_row(bufs, direct[w].as_ref(), w, q, Some(f1), i, row_len)?;
            out_first[j] = a;
            out_steps[j] = per(a.addr(), b.addr());
        }
        let mut qe = q;
        qe[i] = rhi[i] - 1;
        vk_slots::<T>(&code.vk, vmem, [geo.order[1], geo.order[2]], p, qe, &mut vk)?;
        // SAFETY: `code.f` was compiled from the loop's statements for `T`. Operand `k`'s rows
        // start at `first[k] + r * steps[k]` bytes for `r < rows`, output `j`'s at
        // `out_first[j] + r * out_steps[j]`: the first and the last row of each were checked
        // above to hold `row_len` elements inside a block buffer or a (writable, for outputs)
        // view, and rows in between lie between them along the same axis of the same box. The
        // outputs are quantities the loop writes, which it reads at the point itself only
        // through its own registers, and through the operand rows only at other levels of a
        // FORWARD or BACKWARD section's one-level block (`schedule::straight`): other memory
        // than the level the block writes. Distinct quantities have
        // distinct buffers, and the binder keeps written fields apart from the other
        // arguments. `vk` holds one slot per run-time K read (`vk_slots` checked that every
        // point's column lies inside the memory; the code loads only levels inside it);
        // `stop` is this call's interrupt, alive until the function returns.
        unsafe {
            (code.f.get())(
                first.as_ptr().cast(),
                steps.as_ptr(),
                out_first.as_ptr().cast(),
                out_steps.as_ptr(),
                &row_len,
                rows,
                scalars.as_ptr().cast(),
                vk.as_mut_ptr().cast(),
                stop.flag_address(),
            )
        };
        stop.check()?;
        vk_errors(&code.vk, vmem, &vk)?;
    }
    Ok(())
}
