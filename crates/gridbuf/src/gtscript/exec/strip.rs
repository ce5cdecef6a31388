//! Running one statement's register tape over its region, strip by strip.

use crate::error::{Error, Result};
use crate::gtscript::ir::{KIndex, Ty};
use crate::gtscript::jit::abi::{LoopCode, StmtCode, VkSlot};
use crate::gtscript::plan::{var_k_error, Instr, Op, Src, StmtPlan};
use crate::gtscript::rt::interp::Arg;
use crate::gtscript::rt::interp::STRIP;
use crate::gtscript::rt::lane::Elem;
use crate::gtscript::rt::mem::{mem_row, Geo, Mem, VarMem};
use crate::interrupt::Interrupt;

fn row_error(what: &str) -> Error {
    Error::invalid(
        "gtscript block",
        what,
        "a row inside the checked view (internal planning error)",
    )
}

/// Where the strip's operands live: the block, and the fields read straight from memory.
struct Strip<'a, T> {
    bufs: &'a [Vec<T>],
    direct: &'a [Option<Mem>],
    geo: &'a Geo,
    scalars: &'a [T],
    /// Domain coordinates of the strip's first point.
    p: [i64; 3],
    n: usize,
}

impl<'a, T: Elem> Strip<'a, T> {
    #[inline(always)]
    fn operand<'r>(&self, src: Src, regs: &'r [Vec<T>]) -> Result<Arg<'r, T>>
    where
        'a: 'r,
    {
        let n = self.n;
        Ok(match src {
            Src::Reg(r) => Arg::S(&regs[r as usize][..n]),
            Src::Q(q, off) => {
                if let Some(mem) = &self.direct[q as usize] {
                    let p = [
                        self.p[0] + off[0] as i64,
                        self.p[1] + off[1] as i64,
                        self.p[2] + off[2] as i64,
                    ];
                    let ptr = mem_row::<T>(mem, p, self.geo.order[2], n)
                        .ok_or_else(|| row_error("read"))?;
                    // SAFETY: `mem_row` checked that the `n` points from `ptr` along the
                    // inner axis (unit stride, see `direct`) lie inside the view, which the
                    // caller of `run` vouched for (or this tile's own storage). No mutable
                    // slice exists while operands are read: a target row is borrowed only for
                    // the last instruction, whose operands never include the target (else the
                    // tape ends in a register copied afterwards); other tiles write only their
                    // own cores, which this tile never reads from a written field.
                    return Ok(Arg::S(unsafe { std::slice::from_raw_parts(ptr, n) }));
                }
                let s = self.geo.flat([
                    self.p[0] + off[0] as i64,
                    self.p[1] + off[1] as i64,
                    self.p[2] + off[2] as i64,
                ]);
                let buf = &self.bufs[q as usize];
                if s < 0 || s as usize + n > buf.len() {
                    return Err(row_error("block read"));
                }
                Arg::S(&buf[s as usize..s as usize + n])
            }
            Src::Scalar(i) => Arg::V(self.scalars[i as usize]),
            Src::Const(v) => Arg::V(T::from_value(v)),
        })
    }
}

/// The point a statement writes for the point `p` it computes: `p` shifted by its K offset.
#[inline(always)]
fn written(st: &StmtPlan, mut p: [i64; 3]) -> [i64; 3] {
    p[2] += st.k_offset as i64;
    p
}

/// Runs a [`Op::LoadK`] instruction over the strip at `p` (`n` points along `inner`): each
/// point's index from `idx`, the value read from `vm`'s memory at the level it gives.
fn load_k<T: Elem>(
    ins: &Instr,
    d: &mut [T],
    idx: Arg<'_, T>,
    vm: Option<&VarMem<'_>>,
    p: [i64; 3],
    inner: usize,
) -> Result<()> {
    let Op::LoadK(_, kind) = ins.op else {
        return Err(row_error("load"));
    };
    let vm = vm.ok_or_else(|| row_error("variable K read"))?;
    for (t, d) in d.iter_mut().enumerate() {
        let mut pt = p;
        pt[inner] += t as i64;
        let x = match idx {
            Arg::S(s) => s[t],
            Arg::V(v) => v,
        };
        let v = match x.to_value(ins.ty) {
            crate::gtscript::ir::Value::I(v) => v,
            crate::gtscript::ir::Value::F(v) => v as i64,
        };
        let level = match kind {
            KIndex::Relative => pt[2].saturating_add(v),
            KIndex::Absolute => v,
        };
        pt[2] = level;
        *d = vm.mem.get(pt).ok_or_else(|| {
            let lo = -vm.mem.origin[2];
            let hi = vm.mem.shape[2] as i64 + lo;
            var_k_error(vm.name, level, lo, hi)
        })?;
    }
    Ok(())
}

/// Fills the compiled code's run-time K read slots for the points from `first` (the first row's
/// first point) to `last` (the last row's last point), rows along axis `m`, points along axis
/// `i` (a point step along K is one level up): checks
/// that every point's column (its I and J) lies inside each quantity's memory and that the
/// memory holds the element type the code loads.
pub(crate) fn vk_slots<T: Elem>(
    vk: &[(u32, Ty)],
    vmem: &[Option<VarMem<'_>>],
    [m, i]: [usize; 2],
    first: [i64; 3],
    last: [i64; 3],
    slots: &mut [VkSlot],
) -> Result<()> {
    for (slot, &(q, ty)) in slots.iter_mut().zip(vk) {
        let vm = vmem
            .get(q as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| row_error("variable K read"))?;
        let mem = &vm.mem;
        let size = if mem.native {
            std::mem::size_of::<T>()
        } else {
            mem.ty.itemsize()
        };
        if (mem.native && size != 8) || (!mem.native && mem.ty != ty) {
            return Err(row_error("variable K read's element type"));
        }
        let mut col = 0i64;
        for a in 0..2 {
            if !mem.axes[a] {
                continue;
            }
            let inside = |x: i64| (0..mem.shape[a] as i64).contains(&(x + mem.origin[a]));
            if !inside(first[a]) || !inside(last[a]) {
                return Err(row_error("variable K read's column"));
            }
            col = (first[a] + mem.origin[a])
                .checked_mul(mem.strides[a] as i64)
                .and_then(|x| x.checked_add(col))
                .ok_or_else(|| row_error("variable K read's column"))?;
        }
        if mem.shape[2] == 0 {
            // The code loads the lowest level for a level outside: there must be one.
            return Err(row_error("variable K read's levels"));
        }
        let b = size as i64;
        let step = |a: usize| if a == 2 { 0 } else { mem.stride(a) as i64 * b };
        let level_step = |a: usize| (a == 2) as i64;
        *slot = VkSlot {
            addr0: (mem.addr as i64).wrapping_add(
                col.wrapping_add(mem.origin[2] * mem.stride(2) as i64)
                    .wrapping_mul(b),
            ),
            d_row: step(m),
            d_point: step(i),
            d_level: mem.stride(2) as i64 * b,
            k0: first[2],
            k_row: level_step(m),
            k_point: level_step(i),
            lo: -mem.origin[2],
            hi: mem.shape[2] as i64 - mem.origin[2],
            err: 0,
            err_level: 0,
            row_col: 0,
            row_k: 0,
        };
    }
    Ok(())
}

/// The error for the first slot the compiled code reported a level outside of.
pub(crate) fn vk_errors(
    vk: &[(u32, Ty)],
    vmem: &[Option<VarMem<'_>>],
    slots: &[VkSlot],
) -> Result<()> {
    for (slot, &(q, _)) in slots.iter().zip(vk) {
        if slot.err != 0 {
            let name = vmem
                .get(q as usize)
                .and_then(Option::as_ref)
                .map_or("?", |v| v.name);
            return Err(var_k_error(name, slot.err_level, slot.lo, slot.hi));
        }
    }
    Ok(())
}

/// Runs one statement's tape over its region, row by row along the inner axis, in strips of at
/// most [`STRIP`] points.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn run_stmt<T: Elem>(
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
    let (body, last) = match st.tape.split_last() {
        Some((last, body)) if st.direct => (body, Some(last)),
        _ => (&st.tape[..], None),
    };
    let result_reg = st.tape.last().map_or(0, |x| x.dst as usize);
    let scratch = regs.len() - 1;
    let row_len = (rhi[i] - rlo[i]) as usize;
    for po in rlo[o]..rhi[o] {
        for pm in rlo[m]..rhi[m] {
            let mut c = 0;
            while c < row_len {
                let n = (row_len - c).min(STRIP);
                let mut p = [0i64; 3];
                p[o] = po;
                p[m] = pm;
                p[i] = rlo[i] + c as i64;
                let f0 = geo.flat(p);
                if f0 < 0 || f0 as usize + n > geo.len {
                    return Err(row_error("statement"));
                }
                let strip = Strip {
                    bufs: &*bufs,
                    direct,
                    geo,
                    scalars,
                    p,
                    n,
                };
                for ins in body {
                    let mut d = std::mem::take(&mut regs[ins.dst as usize]);
                    if let Op::LoadK(q, _) = ins.op {
                        let idx = strip.operand(ins.args[0], regs)?;
                        let vm = vmem.get(q as usize).and_then(Option::as_ref);
                        load_k(ins, &mut d[..n], idx, vm, p, i)?;
                        regs[ins.dst as usize] = d;
                        continue;
                    }
                    let a = [
                        strip.operand(ins.args[0], regs)?,
                        strip.operand(ins.args[1], regs)?,
                        strip.operand(ins.args[2], regs)?,
                    ];
                    T::apply(ins, &mut d[..n], a[0], a[1], a[2]);
                    regs[ins.dst as usize] = d;
                }
                let w = written(st, p);
                let f0 = geo.flat(w);
                if f0 < 0 || f0 as usize + n > geo.len {
                    return Err(row_error("statement target"));
                }
                let f0 = f0 as usize;
                if let Some(mem) = &direct[target] {
                    let ptr = mem_row::<T>(mem, w, i, n)
                        .filter(|_| mem.writable)
                        .ok_or_else(|| row_error("store"))?;
                    // SAFETY: `mem_row` checked that the `n` points from `ptr` lie inside the
                    // writable view; no other argument overlaps it (binder); the operands read
                    // below are never this row (`StmtPlan::direct`), and tiles write disjoint
                    // cores.
                    let row = unsafe { std::slice::from_raw_parts_mut(ptr, n) };
                    let src = match last {
                        Some(ins) if !mem.stream => {
                            let a = [
                                strip.operand(ins.args[0], regs)?,
                                strip.operand(ins.args[1], regs)?,
                                strip.operand(ins.args[2], regs)?,
                            ];
                            T::apply(ins, row, a[0], a[1], a[2]);
                            None
                        }
                        Some(ins) => {
                            let mut d = std::mem::take(&mut regs[scratch]);
                            let a = [
                                strip.operand(ins.args[0], regs)?,
                                strip.operand(ins.args[1], regs)?,
                                strip.operand(ins.args[2], regs)?,
                            ];
                            T::apply(ins, &mut d[..n], a[0], a[1], a[2]);
                            regs[scratch] = d;
                            Some(scratch)
                        }
                        None => Some(result_reg),
                    };
                    if let Some(r) = src {
                        if mem.stream {
                            T::stream(row, &regs[r][..n]);
                        } else {
                            row.copy_from_slice(&regs[r][..n]);
                        }
                    }
                } else {
                    let mut tb = std::mem::take(&mut bufs[target]);
                    let strip = Strip {
                        bufs: &*bufs,
                        direct,
                        geo,
                        scalars,
                        p,
                        n,
                    };
                    match last {
                        Some(ins) => {
                            let a = [
                                strip.operand(ins.args[0], regs)?,
                                strip.operand(ins.args[1], regs)?,
                                strip.operand(ins.args[2], regs)?,
                            ];
                            T::apply(ins, &mut tb[f0..f0 + n], a[0], a[1], a[2]);
                        }
                        None => tb[f0..f0 + n].copy_from_slice(&regs[result_reg][..n]),
                    }
                    bufs[target] = tb;
                }
                c += n;
            }
        }
    }
    Ok(())
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
                (code.f)(
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
                        (code.f)(
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

/// Whether quantity `q` (a `while` loop's mask) is set anywhere in the box `[lo, hi)` of the
/// block with geometry `geo`.
pub(crate) fn any_set<T: Elem>(
    q: u32,
    geo: &Geo,
    bufs: &[Vec<T>],
    direct: &[Option<Mem>],
    lo: [i64; 3],
    hi: [i64; 3],
) -> Result<bool> {
    let q = q as usize;
    for i in lo[0]..hi[0] {
        for j in lo[1]..hi[1] {
            for k in lo[2]..hi[2] {
                let v = match &direct[q] {
                    Some(m) => {
                        let off = m.check([i, j, k], [i + 1, j + 1, k + 1])?;
                        // SAFETY: `check` verified that the point lies inside the view, which
                        // the caller of `run` vouched for (or a tile's own stored buffer);
                        // memory in `direct` holds the evaluator's element type.
                        unsafe { *std::ptr::with_exposed_provenance::<T>(m.addr).offset(off) }
                    }
                    None => *bufs[q]
                        .get(geo.flat([i, j, k]) as usize)
                        .ok_or_else(|| row_error("loop mask"))?,
                };
                if v.to_value(crate::gtscript::ir::Ty::Bool) != crate::gtscript::ir::Value::I(0) {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
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
        // outputs are quantities the loop writes, which it reads only at the point itself and
        // through its own registers, never through the operand rows; distinct quantities have
        // distinct buffers, and the binder keeps written fields apart from the other
        // arguments. `vk` holds one slot per run-time K read (`vk_slots` checked that every
        // point's column lies inside the memory; the code loads only levels inside it);
        // `stop` is this call's interrupt, alive until the function returns.
        unsafe {
            (code.f)(
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
