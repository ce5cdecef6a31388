//! Memory views of fields and temporaries, a block's flat geometry, and the copies and row
//! look-ups between them.

use crate::error::{Error, Result};
use crate::gtscript::ir::{Ty, Value};
use crate::gtscript::rt::lane::Elem;

/// One field component's memory: the view the binder checked.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FieldMem {
    /// Address of the view's first element.
    pub addr: usize,
    /// Shape per axis I, J, K (1 along a missing axis).
    pub shape: [usize; 3],
    /// Element strides per axis (0 along a missing axis).
    pub strides: [isize; 3],
    /// View index of the domain's first point per axis (the lower extent; 0 along a missing
    /// axis, which every point maps to). Negative where the view starts after it (a field
    /// accessed only beyond the domain's first point).
    pub origin: [i64; 3],
    /// Whether the field has the axis.
    pub axes: [bool; 3],
    /// Whether the evaluator may write it.
    pub writable: bool,
    /// Element type (strides count elements of it).
    pub ty: Ty,
}

/// Memory a block moves data from or to: a field component or a tile's stored temporary.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Mem {
    pub(crate) addr: usize,
    pub(crate) shape: [usize; 3],
    pub(crate) strides: [isize; 3],
    /// Domain coordinate of view index 0 per axis is `-origin`.
    pub(crate) origin: [i64; 3],
    pub(crate) axes: [bool; 3],
    pub(crate) writable: bool,
    /// Stores use non-temporal (streaming) stores: a large output nothing reads back.
    pub(crate) stream: bool,
    /// Element type in memory.
    pub(crate) ty: Ty,
    /// Whether memory holds the evaluator's element type as it is (else every load and store
    /// converts, and the memory is never read or written in place).
    pub(crate) native: bool,
}

impl Mem {
    /// Checks that the box `[lo, hi)` (domain coordinates) lies inside; returns the element
    /// offset of `lo` from the view start.
    #[inline]
    pub(crate) fn check(&self, lo: [i64; 3], hi: [i64; 3]) -> Result<isize> {
        let mut off = 0isize;
        for a in 0..3 {
            if !self.axes[a] {
                continue;
            }
            let i0 = lo[a] + self.origin[a];
            let i1 = hi[a] + self.origin[a];
            if i0 < 0 || i1 > self.shape[a] as i64 || i0 > i1 {
                return Err(Error::invalid(
                    "gtscript block",
                    (lo, hi),
                    "a region inside the checked view (internal planning error)",
                ));
            }
            off += i0 as isize * self.strides[a];
        }
        Ok(off)
    }

    #[inline]
    pub(crate) fn stride(&self, a: usize) -> isize {
        if self.axes[a] {
            self.strides[a]
        } else {
            0
        }
    }
}

/// The memory a read at run-time K levels takes its values from ([`crate::gtscript::plan::Op::LoadK`]),
/// and the name its errors give.
#[derive(Copy, Clone, Debug)]
pub(crate) struct VarMem<'a> {
    pub(crate) mem: Mem,
    pub(crate) name: &'a str,
}

impl Mem {
    /// The element offset of domain point `p` in the view (checked arithmetic); `None` if the
    /// point is outside it.
    fn offset(&self, p: [i64; 3]) -> Option<isize> {
        let mut off = 0isize;
        for (a, &pa) in p.iter().enumerate() {
            if !self.axes[a] {
                continue;
            }
            let i = pa.checked_add(self.origin[a])?;
            if i < 0 || i >= self.shape[a] as i64 {
                return None;
            }
            off = off.checked_add((i as isize).checked_mul(self.strides[a])?)?;
        }
        Some(off)
    }

    /// The element at domain point `p`, converted to `T` from the memory's type; `None` if the
    /// point is outside the view.
    #[inline]
    pub(crate) fn get<T: Elem>(&self, p: [i64; 3]) -> Option<T> {
        let off = self.offset(p)?;
        // SAFETY: the point lies inside the view (checked above), whose memory the caller of
        // `run` vouched for (alive, aligned for its element type `self.ty`), or inside this
        // tile's own storage; elements are read by value, and no writer runs concurrently on
        // this point (other tiles write their own cores; this tile's statements run in order).
        unsafe {
            let at = |e: usize| {
                std::ptr::with_exposed_provenance::<u8>(self.addr).wrapping_offset(off * e as isize)
            };
            if self.native {
                return Some(*at(std::mem::size_of::<T>()).cast::<T>());
            }
            let v = match self.ty {
                Ty::Bool => Value::I((*at(1) != 0) as i64),
                Ty::I8 => Value::I(*at(1).cast::<i8>() as i64),
                Ty::I16 => Value::I(*at(2).cast::<i16>() as i64),
                Ty::I32 => Value::I(*at(4).cast::<i32>() as i64),
                Ty::I64 => Value::I(*at(8).cast::<i64>()),
                Ty::F32 => Value::F(*at(4).cast::<f32>() as f64),
                Ty::F64 => Value::F(*at(8).cast::<f64>()),
            };
            Some(T::from_value(v))
        }
    }
}

impl Mem {
    /// Stores `v`, converted from `T` to the memory's type, at domain point `p`; `None` (and
    /// nothing written) if the point is outside the view or the memory is not writable.
    #[inline]
    pub(crate) fn set<T: Elem>(&self, p: [i64; 3], v: T) -> Option<()> {
        if !self.writable {
            return None;
        }
        let off = self.offset(p)?;
        let int = |v: Value| match v {
            Value::F(x) => x as i64,
            Value::I(x) => x,
        };
        // SAFETY: the point lies inside the writable view (checked above), whose memory the
        // caller of `run` vouched for (alive, aligned for `self.ty`, overlapping no other
        // argument), or inside this tile's own storage. The caller holds no reference into
        // this memory while it stores (`strip::store_k` copies its operands first), and no
        // other tile reaches this point's column (a written field is never read at a
        // horizontal offset; stored temporaries are per tile).
        unsafe {
            let at = |e: usize| {
                std::ptr::with_exposed_provenance_mut::<u8>(self.addr)
                    .wrapping_offset(off * e as isize)
            };
            if self.native {
                *at(std::mem::size_of::<T>()).cast::<T>() = v;
                return Some(());
            }
            let x = v.to_value(self.ty);
            match self.ty {
                Ty::Bool => *at(1) = (int(x) != 0) as u8,
                Ty::I8 => *at(1).cast::<i8>() = int(x) as i8,
                Ty::I16 => *at(2).cast::<i16>() = int(x) as i16,
                Ty::I32 => *at(4).cast::<i32>() = int(x) as i32,
                Ty::I64 => *at(8).cast::<i64>() = int(x),
                Ty::F32 => *at(4).cast::<f32>() = x.as_f64() as f32,
                Ty::F64 => *at(8).cast::<f64>() = x.as_f64(),
            }
        }
        Some(())
    }
}

/// A block's flat geometry.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Geo {
    /// Domain coordinate of the first buffer point per axis.
    pub(crate) lo: [i64; 3],
    /// Flat strides per axis.
    pub(crate) st: [isize; 3],
    /// Axes from outermost to innermost.
    pub(crate) order: [usize; 3],
    pub(crate) len: usize,
    /// Planes of the outermost axis the buffers hold, reused in turn (a sweep's rolling
    /// window); 0 when they hold the whole block.
    pub(crate) roll: i64,
}

impl Geo {
    /// The geometry of a block of `n` points from `lo`, its outermost axis K unless that is
    /// the inner one (then I).
    pub(crate) fn new(lo: [i64; 3], n: [usize; 3], inner: usize) -> Geo {
        let outer = if inner == 2 { 0 } else { 2 };
        Geo::ordered(lo, n, [outer, 3 - inner - outer, inner], 0)
    }

    /// The geometry with axes `order` (outermost first); with `roll > 0` the buffers hold
    /// `roll` planes of the outermost axis, plane `p` in slot `p mod roll`.
    pub(crate) fn ordered(lo: [i64; 3], mut n: [usize; 3], order: [usize; 3], roll: usize) -> Geo {
        let [outer, mid, inner] = order;
        if roll > 0 {
            n[outer] = roll;
        }
        let mut st = [0isize; 3];
        st[inner] = 1;
        st[mid] = n[inner] as isize;
        st[outer] = (n[inner] * n[mid]) as isize;
        Geo {
            lo,
            st,
            order,
            len: n[0] * n[1] * n[2],
            roll: roll as i64,
        }
    }

    /// The flat index of point `p`.
    #[inline]
    pub(crate) fn flat(&self, p: [i64; 3]) -> isize {
        let mut f = 0;
        for (a, &pa) in p.iter().enumerate() {
            let mut d = pa - self.lo[a];
            if self.roll > 0 && a == self.order[0] {
                d = d.rem_euclid(self.roll);
            }
            f += d as isize * self.st[a];
        }
        f
    }
}

/// Copies between memory and a block buffer over the box `[lo, hi)`; `load` picks the
/// direction. The box is checked against the memory's view first.
#[inline(always)]
pub(crate) fn transfer<T: Elem>(
    mem: &Mem,
    geo: &Geo,
    buf: &mut [T],
    lo: [i64; 3],
    hi: [i64; 3],
    load: bool,
) -> Result<()> {
    if (0..3).any(|a| hi[a] <= lo[a]) {
        return Ok(());
    }
    if !load && !mem.writable {
        return Err(Error::invalid(
            "gtscript block",
            "store",
            "a writable field",
        ));
    }
    let base = mem.check(lo, hi)?;
    if !mem.native {
        return transfer_converting(mem, geo, buf, lo, hi, load, base);
    }
    let si = mem.stride(geo.order[2]);
    for_rows(mem, geo, buf.len(), lo, hi, base, |f, len, moff| {
        let row = &mut buf[f..f + len];
        let ptr = std::ptr::with_exposed_provenance_mut::<T>(mem.addr).wrapping_offset(moff);
        // SAFETY: `check` verified that every point of the box lies inside the view whose
        // memory the caller of `run` vouched for (alive, aligned, writable when stored to);
        // this row is part of the box. Stores only go to fields the plan writes, whose views
        // no other argument overlaps (checked by the binder), over the tile's own core
        // (distinct tiles write disjoint points), or to this tile's private storage.
        unsafe {
            if load {
                if si == 1 {
                    std::ptr::copy_nonoverlapping(ptr, row.as_mut_ptr(), len);
                } else if si == 0 {
                    // A field without the row's axis (a 2-D field in rows along K): one
                    // value, written as a vector fill.
                    row.fill(*ptr);
                } else {
                    for (t, r) in row.iter_mut().enumerate() {
                        *r = *ptr.wrapping_offset(t as isize * si);
                    }
                }
            } else if si == 1 && mem.stream {
                T::stream(std::slice::from_raw_parts_mut(ptr, len), row);
            } else if si == 1 {
                std::ptr::copy_nonoverlapping(row.as_ptr(), ptr, len);
            } else {
                for (t, r) in row.iter().enumerate() {
                    *ptr.wrapping_offset(t as isize * si) = *r;
                }
            }
        }
    })
}

/// Calls `f(flat index in the block, row length, element offset in memory)` for every row
/// along the block's inner axis of the box `[lo, hi)`, whose first point is `base` elements
/// into `mem`; checks each row against the block's `len` points first.
#[inline(always)]
fn for_rows(
    mem: &Mem,
    geo: &Geo,
    len: usize,
    lo: [i64; 3],
    hi: [i64; 3],
    base: isize,
    mut f: impl FnMut(usize, usize, isize),
) -> Result<()> {
    let [o, m, i] = geo.order;
    let n = (hi[i] - lo[i]) as usize;
    for po in lo[o]..hi[o] {
        for pm in lo[m]..hi[m] {
            let mut p = [0i64; 3];
            p[o] = po;
            p[m] = pm;
            p[i] = lo[i];
            let at = geo.flat(p);
            if at < 0 || at as usize + n > len {
                return Err(Error::invalid(
                    "gtscript block",
                    (lo, hi),
                    "a region inside the block (internal planning error)",
                ));
            }
            let moff = base
                + (po - lo[o]) as isize * mem.stride(o)
                + (pm - lo[m]) as isize * mem.stride(m);
            f(at as usize, n, moff);
        }
    }
    Ok(())
}

/// [`transfer`] for memory of another element type than the buffer's: element by element,
/// converting (one loop per element type, so the conversion is known inside it).
#[inline(never)]
fn transfer_converting<T: Elem>(
    mem: &Mem,
    geo: &Geo,
    buf: &mut [T],
    lo: [i64; 3],
    hi: [i64; 3],
    load: bool,
    base: isize,
) -> Result<()> {
    let int = |v: Value| match v {
        Value::F(x) => x as i64,
        Value::I(x) => x,
    };
    let c = (mem, geo, lo, hi, load, base);
    match mem.ty {
        Ty::Bool => rows(
            c,
            buf,
            |x: u8| Value::I((x != 0) as i64),
            |v| (int(v) != 0) as u8,
        ),
        Ty::I8 => rows(c, buf, |x: i8| Value::I(x as i64), |v| int(v) as i8),
        Ty::I16 => rows(c, buf, |x: i16| Value::I(x as i64), |v| int(v) as i16),
        Ty::I32 => rows(c, buf, |x: i32| Value::I(x as i64), |v| int(v) as i32),
        Ty::I64 => rows(c, buf, Value::I, int),
        Ty::F32 => rows(c, buf, |x: f32| Value::F(x as f64), |v| v.as_f64() as f32),
        Ty::F64 => rows(c, buf, Value::F, Value::as_f64),
    }
}

/// The rows of [`transfer_converting`] for memory elements of type `E`.
#[inline(always)]
fn rows<T: Elem, E: Copy>(
    (mem, geo, lo, hi, load, base): (&Mem, &Geo, [i64; 3], [i64; 3], bool, isize),
    buf: &mut [T],
    get: impl Fn(E) -> Value,
    put: impl Fn(Value) -> E,
) -> Result<()> {
    let si = mem.stride(geo.order[2]);
    for_rows(mem, geo, buf.len(), lo, hi, base, |at, len, moff| {
        let row = &mut buf[at..at + len];
        let first = std::ptr::with_exposed_provenance_mut::<E>(mem.addr).wrapping_offset(moff);
        for (t, r) in row.iter_mut().enumerate() {
            let ptr = first.wrapping_offset(t as isize * si);
            // SAFETY: `check` verified that every point of the box lies inside the view
            // (strides in elements of `mem.ty`, which is `E`, whose memory the caller of
            // `run` vouched for: alive, aligned); stores go only to written fields, as in
            // `transfer`.
            unsafe {
                if load {
                    *r = T::from_value(get(*ptr));
                } else {
                    *ptr = put(r.to_value(mem.ty));
                }
            }
        }
    })
}

/// The memory of `mem` along the inner axis from point `p` (domain coordinates), `n` points,
/// checked against the view; `None` if it is not inside.
#[inline(always)]
pub(crate) fn mem_row<T>(mem: &Mem, p: [i64; 3], inner: usize, n: usize) -> Option<*mut T> {
    let mut off = 0isize;
    for (a, &pa) in p.iter().enumerate() {
        if !mem.axes[a] {
            continue;
        }
        let i0 = pa + mem.origin[a];
        let last = if a == inner { i0 + n as i64 - 1 } else { i0 };
        if i0 < 0 || last >= mem.shape[a] as i64 {
            return None;
        }
        off += i0 as isize * mem.strides[a];
    }
    Some(std::ptr::with_exposed_provenance_mut::<T>(mem.addr).wrapping_offset(off))
}
