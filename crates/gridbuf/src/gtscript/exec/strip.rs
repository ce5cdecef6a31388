//! Running one statement's register tape over its region, strip by strip (the interpreter's
//! side of a block; its compiled side is `launch`), and the run-time K reads both share.

use crate::error::{Error, Result};
use crate::gtscript::ir::{KIndex, Ty};
use crate::gtscript::jit::abi::VkSlot;
use crate::gtscript::plan::tape::guard_end;
use crate::gtscript::plan::{
    loop_guard_error, var_k_error, var_k_write_error, Instr, Op, Src, StmtPlan,
};
use crate::gtscript::rt::interp::Arg;
use crate::gtscript::rt::interp::STRIP;
use crate::gtscript::rt::lane::Elem;
use crate::gtscript::rt::mem::{mem_row, Geo, Mem, VarMem};

pub(crate) fn row_error(what: &str) -> Error {
    Error::invalid(
        "gtscript block",
        what,
        "a row inside the checked view (internal planning error)",
    )
}

/// Where the strip's operands live: the block, and the fields read straight from memory.
pub(crate) struct Strip<'a, T> {
    pub(crate) bufs: &'a [Vec<T>],
    pub(crate) direct: &'a [Option<Mem>],
    pub(crate) geo: &'a Geo,
    pub(crate) scalars: &'a [T],
    /// Domain coordinates of the strip's first point.
    pub(crate) p: [i64; 3],
    pub(crate) n: usize,
}

impl<'a, T: Elem> Strip<'a, T> {
    #[inline(always)]
    pub(crate) fn operand<'r>(&self, src: Src, regs: &'r [Vec<T>]) -> Result<Arg<'r, T>>
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
pub(crate) fn written(st: &StmtPlan, mut p: [i64; 3]) -> [i64; 3] {
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

/// Runs a [`Op::StoreK`] instruction over the strip at `p` (`n` points along `inner`): each
/// point's value from `val`, stored into `vm`'s memory at the level `idx` gives (the point's
/// plus the index). Every level of the strip is checked against the K range first: a level
/// outside is an error naming the quantity and the level, and nothing of the strip is written.
/// A level in `st.guard` (relative to the point) where the value would change is an error too
/// (see `plan::check_loop_conditions`).
#[allow(clippy::too_many_arguments)]
fn store_k<T: Elem>(
    st: &StmtPlan,
    ins: &Instr,
    ity: Ty,
    strip: &Strip<'_, T>,
    regs: &[Vec<T>],
    vm: Option<&VarMem<'_>>,
    p: [i64; 3],
    inner: usize,
) -> Result<()> {
    let vm = vm.ok_or_else(|| row_error("variable K write"))?;
    let n = strip.n;
    // The operands are copied out first: they may be rows of the very memory written below,
    // and no reference into it may live while it is written.
    let mut idx = [0i64; STRIP];
    let mut val = [T::ZERO; STRIP];
    {
        let (a, b) = (
            strip.operand(ins.args[0], regs)?,
            strip.operand(ins.args[1], regs)?,
        );
        let at = |x: &Arg<'_, T>, t: usize| match x {
            Arg::S(s) => s[t],
            Arg::V(v) => *v,
        };
        for t in 0..n {
            idx[t] = match at(&a, t).to_value(ity) {
                crate::gtscript::ir::Value::I(v) => v,
                crate::gtscript::ir::Value::F(v) => v as i64,
            };
            val[t] = at(&b, t);
        }
    }
    let mem = &vm.mem;
    let (lo, hi) = (-mem.origin[2], mem.shape[2] as i64 - mem.origin[2]);
    for (t, &i) in idx[..n].iter().enumerate() {
        let k = p[2] + if inner == 2 { t as i64 } else { 0 };
        let level = k.saturating_add(i);
        if !(lo..hi).contains(&level) {
            return Err(var_k_write_error(vm.name, level, lo, hi));
        }
    }
    for t in 0..n {
        let mut pt = p;
        pt[inner] += t as i64;
        let k = pt[2];
        let level = k.saturating_add(idx[t]);
        pt[2] = level;
        let outside = || var_k_write_error(vm.name, level, lo, hi);
        if !st.guard.is_empty() && st.guard.iter().any(|&g| k + g as i64 == level) {
            let old: T = mem.get(pt).ok_or_else(outside)?;
            let same = |x: T| match x.to_value(mem.ty) {
                crate::gtscript::ir::Value::F(f) => (0, f.to_bits() as i64),
                crate::gtscript::ir::Value::I(i) => (1, i),
            };
            // The value as memory holds it: stored, then read back, in the memory's type.
            let new = T::from_value(val[t].to_value(mem.ty));
            if same(old) != same(new) {
                return Err(loop_guard_error(vm.name, level));
            }
        }
        mem.set(pt, val[t]).ok_or_else(outside)?;
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
                let mut at = 0;
                while at < body.len() {
                    let ins = &body[at];
                    at += 1;
                    match ins.op {
                        // A guarded run no point of the strip needs is skipped.
                        Op::Guard(then) => {
                            let c = strip.operand(ins.args[0], regs)?;
                            let needed = match c {
                                Arg::S(c) => c[..n].iter().any(|&x| (x != T::ZERO) == then),
                                Arg::V(x) => (x != T::ZERO) == then,
                            };
                            if !needed {
                                at = guard_end(body, at);
                            }
                            continue;
                        }
                        Op::End => continue,
                        Op::StoreK(q, ity) => {
                            let vm = vmem.get(q as usize).and_then(Option::as_ref);
                            store_k(st, ins, ity, &strip, regs, vm, p, i)?;
                            continue;
                        }
                        _ => {}
                    }
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
                if st.scatter() {
                    // Stored by its last instruction, straight into memory.
                    c += n;
                    continue;
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
