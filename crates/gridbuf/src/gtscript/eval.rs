//! The evaluator: a tiled vector interpreter.
//!
//! The domain is cut into I/J tiles that run in parallel. A tile runs every section in order;
//! a section runs in blocks (several K levels for PARALLEL, one level at a time in order for
//! FORWARD and BACKWARD). A block copies what it reads into flat buffers that share one
//! geometry (the tile's core widened by the section's halo, its innermost axis the unit-stride
//! axis of the output's layout), so a read at an offset is a fixed shift of a flat index. Each
//! statement then runs its register tape over the flat range of its region, in strips of
//! [`STRIP`] points: every instruction is one tight loop over a strip, which the compiler
//! vectorises, and the dispatch per instruction is paid once per strip. Points at the ends of
//! rows mix neighbouring rows; they are computed but never reach a stored point. Finally the
//! block copies what it wrote back to memory.

use super::ir::{BinOp, IterOrder, UnOp};
use super::plan::{k_bounds_error, Kind, Op, Plan, Reach, SectionPlan, Src, StmtPlan};
use crate::error::{Error, Result};
use crate::kernels::exec::{self, SimdTask, Threads};
use std::sync::Mutex;

/// Points per strip of the tape interpreter.
const STRIP: usize = 512;

/// Target number of points of a block buffer.
const BLOCK_POINTS: usize = 8192;

/// The element types the evaluator runs on.
pub trait Num: crate::kernels::Float {
    /// From `f64` (rounding for `f32`).
    fn from_f64(v: f64) -> Self;
    /// `|x|`.
    fn abs(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// `e^x`.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Tangent.
    fn tan(self) -> Self;
    /// Floor.
    fn floor(self) -> Self;
    /// Ceiling.
    fn ceil(self) -> Self;
    /// Truncation toward zero.
    fn trunc(self) -> Self;
    /// `x^y`.
    fn powf(self, y: Self) -> Self;
    /// Not a number.
    fn is_nan(self) -> bool;
    /// Infinite.
    fn is_inf(self) -> bool;
    /// This thread's pool of buffers, reused across calls so that large per-tile storage is
    /// not allocated and zeroed on every call.
    fn pool() -> &'static std::thread::LocalKey<std::cell::RefCell<Vec<Vec<Self>>>>;
}

/// Buffers a pool keeps per thread at most.
const POOL_MAX: usize = 64;

/// A buffer of `len` elements from this thread's pool (values left by earlier use, zero where
/// it grows), or a new zeroed one.
fn take_buf<T: Num>(len: usize) -> Vec<T> {
    let mut v = T::pool()
        .with(|p| {
            let mut p = p.borrow_mut();
            let best = p.iter().position(|b| b.capacity() >= len);
            best.map(|i| p.swap_remove(i)).or_else(|| p.pop())
        })
        .unwrap_or_default();
    v.resize(len, T::ZERO);
    v
}

/// Returns buffers to this thread's pool.
fn give_bufs<T: Num>(bufs: impl IntoIterator<Item = Vec<T>>) {
    T::pool().with(|p| {
        let mut p = p.borrow_mut();
        for b in bufs {
            if b.capacity() > 0 && p.len() < POOL_MAX {
                p.push(b);
            }
        }
    });
}

macro_rules! impl_num {
    ($t:ty) => {
        impl Num for $t {
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                <$t>::tan(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                <$t>::trunc(self)
            }
            #[inline(always)]
            fn powf(self, y: Self) -> Self {
                <$t>::powf(self, y)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn is_inf(self) -> bool {
                <$t>::is_infinite(self)
            }
            fn pool() -> &'static std::thread::LocalKey<std::cell::RefCell<Vec<Vec<Self>>>> {
                thread_local! {
                    static POOL: std::cell::RefCell<Vec<Vec<$t>>> =
                        const { std::cell::RefCell::new(Vec::new()) };
                }
                &POOL
            }
        }
    };
}
impl_num!(f64);
impl_num!(f32);

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
    /// axis, which every point maps to).
    pub origin: [usize; 3],
    /// Whether the field has the axis.
    pub axes: [bool; 3],
    /// Whether the evaluator may write it.
    pub writable: bool,
}

/// Memory a block moves data from or to: a field component or a tile's stored temporary.
#[derive(Copy, Clone, Debug)]
struct Mem {
    addr: usize,
    shape: [usize; 3],
    strides: [isize; 3],
    /// Domain coordinate of view index 0 per axis is `-origin`.
    origin: [i64; 3],
    axes: [bool; 3],
    writable: bool,
    /// Stores use non-temporal (streaming) stores: a large output nothing reads back.
    stream: bool,
}

impl Mem {
    /// Checks that the box `[lo, hi)` (domain coordinates) lies inside; returns the element
    /// offset of `lo` from the view start.
    fn check(&self, lo: [i64; 3], hi: [i64; 3]) -> Result<isize> {
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

    fn stride(&self, a: usize) -> isize {
        if self.axes[a] {
            self.strides[a]
        } else {
            0
        }
    }
}

/// A block's flat geometry.
#[derive(Copy, Clone, Debug)]
struct Geo {
    /// Domain coordinate of the first buffer point per axis.
    lo: [i64; 3],
    /// Flat strides per axis.
    st: [isize; 3],
    /// Axes from outermost to innermost.
    order: [usize; 3],
    len: usize,
}

impl Geo {
    fn new(lo: [i64; 3], n: [usize; 3], inner: usize) -> Geo {
        let outer = if inner == 2 { 0 } else { 2 };
        let mid = 3 - inner - outer;
        let mut st = [0isize; 3];
        st[inner] = 1;
        st[mid] = n[inner] as isize;
        st[outer] = (n[inner] * n[mid]) as isize;
        Geo {
            lo,
            st,
            order: [outer, mid, inner],
            len: n[0] * n[1] * n[2],
        }
    }

    fn flat(&self, p: [i64; 3]) -> isize {
        (0..3)
            .map(|a| (p[a] - self.lo[a]) as isize * self.st[a])
            .sum()
    }

    fn shift(&self, off: [i32; 3]) -> isize {
        (0..3).map(|a| off[a] as isize * self.st[a]).sum()
    }
}

/// Copies between memory and a block buffer over the box `[lo, hi)`; `load` picks the
/// direction. The box is checked against the memory's view first.
#[inline(always)]
fn transfer<T: Num>(
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
    let [o, m, i] = geo.order;
    let len = (hi[i] - lo[i]) as usize;
    let si = mem.stride(i);
    for po in lo[o]..hi[o] {
        for pm in lo[m]..hi[m] {
            let mut p = [0i64; 3];
            p[o] = po;
            p[m] = pm;
            p[i] = lo[i];
            let f = geo.flat(p);
            if f < 0 || f as usize + len > buf.len() {
                return Err(Error::invalid(
                    "gtscript block",
                    (lo, hi),
                    "a region inside the block (internal planning error)",
                ));
            }
            let row = &mut buf[f as usize..f as usize + len];
            let moff = base
                + (po - lo[o]) as isize * mem.stride(o)
                + (pm - lo[m]) as isize * mem.stride(m);
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
        }
    }
    Ok(())
}

/// An operand over one strip.
#[derive(Copy, Clone)]
enum Arg<'a, T> {
    S(&'a [T]),
    V(T),
}

#[inline(always)]
fn un<T: Num>(d: &mut [T], a: Arg<'_, T>, f: impl Fn(T) -> T) {
    match a {
        Arg::S(x) => {
            for (d, x) in d.iter_mut().zip(x) {
                *d = f(*x);
            }
        }
        Arg::V(x) => d.fill(f(x)),
    }
}

#[inline(always)]
fn bin<T: Num>(d: &mut [T], a: Arg<'_, T>, b: Arg<'_, T>, f: impl Fn(T, T) -> T) {
    match (a, b) {
        (Arg::S(x), Arg::S(y)) => {
            for ((d, x), y) in d.iter_mut().zip(x).zip(y) {
                *d = f(*x, *y);
            }
        }
        (Arg::S(x), Arg::V(y)) => {
            for (d, x) in d.iter_mut().zip(x) {
                *d = f(*x, y);
            }
        }
        (Arg::V(x), Arg::S(y)) => {
            for (d, y) in d.iter_mut().zip(y) {
                *d = f(x, *y);
            }
        }
        (Arg::V(x), Arg::V(y)) => d.fill(f(x, y)),
    }
}

#[inline(always)]
fn tri<T: Num>(d: &mut [T], a: Arg<'_, T>, b: Arg<'_, T>, c: Arg<'_, T>, f: impl Fn(T, T, T) -> T) {
    match (a, b, c) {
        (Arg::S(x), Arg::S(y), Arg::S(z)) => {
            for (((d, x), y), z) in d.iter_mut().zip(x).zip(y).zip(z) {
                *d = f(*x, *y, *z);
            }
        }
        (Arg::V(x), Arg::S(y), Arg::S(z)) => {
            for ((d, y), z) in d.iter_mut().zip(y).zip(z) {
                *d = f(x, *y, *z);
            }
        }
        (Arg::S(x), Arg::V(y), Arg::S(z)) => {
            for ((d, x), z) in d.iter_mut().zip(x).zip(z) {
                *d = f(*x, y, *z);
            }
        }
        (Arg::S(x), Arg::S(y), Arg::V(z)) => {
            for ((d, x), y) in d.iter_mut().zip(x).zip(y) {
                *d = f(*x, *y, z);
            }
        }
        _ => {
            for (i, d) in d.iter_mut().enumerate() {
                *d = f(at(a, i), at(b, i), at(c, i));
            }
        }
    }
}

#[inline(always)]
fn arith<T: Num>(op: BinOp, x: T, y: T) -> T {
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        _ => x / y,
    }
}

#[inline(always)]
fn truth<T: Num>(b: bool) -> T {
    if b {
        T::ONE
    } else {
        T::ZERO
    }
}

#[inline(always)]
fn at<T: Copy>(a: Arg<'_, T>, i: usize) -> T {
    match a {
        Arg::S(x) => x[i],
        Arg::V(v) => v,
    }
}

#[inline(always)]
fn apply<T: Num>(op: Op, d: &mut [T], a: Arg<'_, T>, b: Arg<'_, T>, c: Arg<'_, T>) {
    match op {
        Op::Mov => un(d, a, |x| x),
        Op::Un(u) => match u {
            UnOp::Neg => un(d, a, |x| -x),
            UnOp::Not => un(d, a, |x| truth(x == T::ZERO)),
            UnOp::Abs => un(d, a, Num::abs),
            UnOp::Sqrt => un(d, a, Num::sqrt),
            UnOp::Exp => un(d, a, Num::exp),
            UnOp::Log => un(d, a, Num::ln),
            UnOp::Sin => un(d, a, Num::sin),
            UnOp::Cos => un(d, a, Num::cos),
            UnOp::Tan => un(d, a, Num::tan),
            UnOp::Floor => un(d, a, Num::floor),
            UnOp::Ceil => un(d, a, Num::ceil),
            UnOp::Trunc => un(d, a, Num::trunc),
            UnOp::IsNan => un(d, a, |x| truth(x.is_nan())),
            UnOp::IsInf => un(d, a, |x| truth(x.is_inf())),
        },
        Op::Bin(o) => match o {
            BinOp::Add => bin(d, a, b, |x, y| x + y),
            BinOp::Sub => bin(d, a, b, |x, y| x - y),
            BinOp::Mul => bin(d, a, b, |x, y| x * y),
            BinOp::Div => bin(d, a, b, |x, y| x / y),
            BinOp::Pow => bin(d, a, b, Num::powf),
            BinOp::Mod => bin(d, a, b, |x, y| x - (x / y).floor() * y),
            BinOp::FloorDiv => bin(d, a, b, |x, y| (x / y).floor()),
            BinOp::Min => bin(d, a, b, |x, y| if y < x { y } else { x }),
            BinOp::Max => bin(d, a, b, |x, y| if y > x { y } else { x }),
            BinOp::Lt => bin(d, a, b, |x, y| truth(x < y)),
            BinOp::Le => bin(d, a, b, |x, y| truth(x <= y)),
            BinOp::Gt => bin(d, a, b, |x, y| truth(x > y)),
            BinOp::Ge => bin(d, a, b, |x, y| truth(x >= y)),
            BinOp::Eq => bin(d, a, b, |x, y| truth(x == y)),
            BinOp::Ne => bin(d, a, b, |x, y| truth(x != y)),
            BinOp::And => bin(d, a, b, |x, y| truth(x != T::ZERO && y != T::ZERO)),
            BinOp::Or => bin(d, a, b, |x, y| truth(x != T::ZERO || y != T::ZERO)),
        },
        Op::Bin2(o1, o2) => {
            macro_rules! fused {
                ($($p:path => $q:path),*) => {
                    match (o1, o2) {
                        $(($p, $q) => tri(d, a, b, c, |x, y, z| arith($q, arith($p, x, y), z)),)*
                        _ => tri(d, a, b, c, |x, y, z| arith(o2, arith(o1, x, y), z)),
                    }
                };
            }
            // One monomorphic loop per operator pair, so the operators are constants inside.
            fused!(
                BinOp::Add => BinOp::Add, BinOp::Add => BinOp::Sub, BinOp::Add => BinOp::Mul,
                BinOp::Add => BinOp::Div, BinOp::Sub => BinOp::Add, BinOp::Sub => BinOp::Sub,
                BinOp::Sub => BinOp::Mul, BinOp::Sub => BinOp::Div, BinOp::Mul => BinOp::Add,
                BinOp::Mul => BinOp::Sub, BinOp::Mul => BinOp::Mul, BinOp::Mul => BinOp::Div,
                BinOp::Div => BinOp::Add, BinOp::Div => BinOp::Sub, BinOp::Div => BinOp::Mul
            )
        }
        Op::Sel => match (a, b, c) {
            (Arg::S(m), Arg::S(x), Arg::S(y)) => {
                for (((d, m), x), y) in d.iter_mut().zip(m).zip(x).zip(y) {
                    *d = if *m != T::ZERO { *x } else { *y };
                }
            }
            (Arg::S(m), Arg::V(x), Arg::S(y)) => {
                for ((d, m), y) in d.iter_mut().zip(m).zip(y) {
                    *d = if *m != T::ZERO { x } else { *y };
                }
            }
            (Arg::S(m), Arg::S(x), Arg::V(y)) => {
                for ((d, m), x) in d.iter_mut().zip(m).zip(x) {
                    *d = if *m != T::ZERO { *x } else { y };
                }
            }
            _ => {
                for (i, d) in d.iter_mut().enumerate() {
                    *d = if at(a, i) != T::ZERO {
                        at(b, i)
                    } else {
                        at(c, i)
                    };
                }
            }
        },
    }
}

/// The memory of `mem` along the inner axis from point `p` (domain coordinates), `n` points,
/// checked against the view; `None` if it is not inside.
#[inline(always)]
fn mem_row<T>(mem: &Mem, p: [i64; 3], inner: usize, n: usize) -> Option<*mut T> {
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
    /// Flat index of the strip's first point.
    f0: usize,
    /// Domain coordinates of the strip's first point.
    p: [i64; 3],
    n: usize,
}

impl<'a, T: Num> Strip<'a, T> {
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
                let s = self.f0 as isize + self.geo.shift(off);
                let buf = &self.bufs[q as usize];
                if s < 0 || s as usize + n > buf.len() {
                    return Err(row_error("block read"));
                }
                Arg::S(&buf[s as usize..s as usize + n])
            }
            Src::Scalar(i) => Arg::V(self.scalars[i as usize]),
            Src::Const(v) => Arg::V(T::from_f64(v)),
        })
    }
}

/// Runs one statement's tape over its region, row by row along the inner axis, in strips of at
/// most [`STRIP`] points.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn run_stmt<T: Num>(
    st: &StmtPlan,
    geo: &Geo,
    bufs: &mut [Vec<T>],
    regs: &mut [Vec<T>],
    direct: &[Option<Mem>],
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
                    f0: f0 as usize,
                    p,
                    n,
                };
                for ins in body {
                    let mut d = std::mem::take(&mut regs[ins.dst as usize]);
                    let a = [
                        strip.operand(ins.args[0], regs)?,
                        strip.operand(ins.args[1], regs)?,
                        strip.operand(ins.args[2], regs)?,
                    ];
                    apply(ins.op, &mut d[..n], a[0], a[1], a[2]);
                    regs[ins.dst as usize] = d;
                }
                let f0 = f0 as usize;
                if let Some(mem) = &direct[target] {
                    let ptr = mem_row::<T>(mem, p, i, n)
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
                            apply(ins.op, row, a[0], a[1], a[2]);
                            None
                        }
                        Some(ins) => {
                            let mut d = std::mem::take(&mut regs[scratch]);
                            let a = [
                                strip.operand(ins.args[0], regs)?,
                                strip.operand(ins.args[1], regs)?,
                                strip.operand(ins.args[2], regs)?,
                            ];
                            apply(ins.op, &mut d[..n], a[0], a[1], a[2]);
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
                        f0,
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
                            apply(ins.op, &mut tb[f0..f0 + n], a[0], a[1], a[2]);
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

/// A tile: its core in I and J.
#[derive(Copy, Clone, Debug)]
struct Tile {
    lo: [i64; 2],
    hi: [i64; 2],
}

/// Everything a tile reads.
struct Ctx<'a, T> {
    plan: &'a Plan,
    mems: &'a [Mem],
    scalars: &'a [T],
    nk: usize,
    /// Unit-stride axis of the output's layout.
    inner: usize,
    /// K levels per PARALLEL block.
    kc: usize,
    /// Per section: resolved [start, end).
    ranges: &'a [(usize, usize)],
}

struct TileTask<'a, T> {
    ctx: &'a Ctx<'a, T>,
    tile: Tile,
}

impl<T: Num> SimdTask for TileTask<'_, T> {
    type Output = Result<()>;
    #[inline(always)]
    fn run(self) -> Result<()> {
        let r = run_tile(self.ctx, self.tile);
        // Streaming stores are weakly ordered: make them visible before the task ends.
        exec::fence();
        r
    }
}

fn reach_box(
    core_lo: [i64; 3],
    core_hi: [i64; 3],
    r: Reach,
    k: (i32, i32),
) -> ([i64; 3], [i64; 3]) {
    (
        [
            core_lo[0] - r[0] as i64,
            core_lo[1] - r[2] as i64,
            core_lo[2] - k.0 as i64,
        ],
        [
            core_hi[0] + r[1] as i64,
            core_hi[1] + r[3] as i64,
            core_hi[2] + k.1 as i64,
        ],
    )
}

#[inline(always)]
fn run_tile<T: Num>(ctx: &Ctx<'_, T>, tile: Tile) -> Result<()> {
    let plan = ctx.plan;
    let nq = plan.kinds.len();
    // Stored temporaries of this tile, I fastest.
    let mut stored: Vec<Vec<T>> = vec![Vec::new(); nq];
    let mut mems: Vec<Mem> = ctx.mems.to_vec();
    for (q, kind) in plan.kinds.iter().enumerate() {
        if let Kind::Stored { reach, k_margin } = *kind {
            let (lo, hi) = reach_box(
                [tile.lo[0], tile.lo[1], 0],
                [tile.hi[0], tile.hi[1], ctx.nk as i64],
                reach,
                (k_margin as i32, k_margin as i32),
            );
            let n = [
                (hi[0] - lo[0]).max(0) as usize,
                (hi[1] - lo[1]).max(0) as usize,
                (hi[2] - lo[2]).max(0) as usize,
            ];
            stored[q] = take_buf(n[0] * n[1] * n[2]);
            mems.push(Mem {
                addr: stored[q].as_mut_ptr().expose_provenance(),
                shape: n,
                strides: [1, n[0] as isize, (n[0] * n[1]) as isize],
                origin: [-lo[0], -lo[1], -lo[2]],
                axes: [true; 3],
                writable: true,
                stream: false,
            });
        } else {
            mems.push(Mem {
                addr: 0,
                shape: [0; 3],
                strides: [0; 3],
                origin: [0; 3],
                axes: [true; 3],
                writable: false,
                stream: false,
            });
        }
    }
    let n_fields = ctx.mems.len();
    let mem_of = |q: usize| -> &Mem {
        match plan.kinds[q] {
            Kind::Field { .. } => &mems[q],
            _ => &mems[n_fields + q],
        }
    };
    let mut bufs: Vec<Vec<T>> = vec![Vec::new(); nq];
    // The tape's registers and one scratch register for streamed stores.
    let mut regs: Vec<Vec<T>> = (0..plan.max_regs + 1).map(|_| take_buf(STRIP)).collect();
    for (sec, &(ks, ke)) in plan.sections.iter().zip(ctx.ranges) {
        if ks >= ke {
            continue;
        }
        let levels: Vec<(usize, usize)> = match sec.order {
            IterOrder::Parallel => (ks..ke)
                .step_by(ctx.kc)
                .map(|k| (k, (k + ctx.kc).min(ke)))
                .collect(),
            IterOrder::Forward => (ks..ke).map(|k| (k, k + 1)).collect(),
            IterOrder::Backward => (ks..ke).rev().map(|k| (k, k + 1)).collect(),
        };
        let inner = if sec.order != IterOrder::Parallel && ctx.inner == 2 {
            0
        } else {
            ctx.inner
        };
        // Fields and stored temporaries with unit stride along the inner axis are read and
        // written straight in memory. A statement's target row is only borrowed after every
        // operand that could reach it has been read (see `run_stmt`), and rows at other
        // offsets are other memory.
        let direct: Vec<Option<Mem>> = (0..nq)
            .map(|q| {
                if matches!(plan.kinds[q], Kind::Local) {
                    return None;
                }
                let m = *mem_of(q);
                (m.axes[inner] && m.strides[inner] == 1).then_some(m)
            })
            .collect();
        for (k0, k1) in levels {
            run_block(
                ctx, sec, &mut bufs, &mut regs, &mem_of, &direct, tile, k0, k1, inner,
            )?;
        }
    }
    give_bufs(stored);
    give_bufs(bufs);
    give_bufs(regs);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn run_block<'m, T: Num>(
    ctx: &Ctx<'_, T>,
    sec: &SectionPlan,
    bufs: &mut [Vec<T>],
    regs: &mut [Vec<T>],
    mem_of: &impl Fn(usize) -> &'m Mem,
    direct: &[Option<Mem>],
    tile: Tile,
    k0: usize,
    k1: usize,
    inner: usize,
) -> Result<()> {
    let core_lo = [tile.lo[0], tile.lo[1], k0 as i64];
    let core_hi = [tile.hi[0], tile.hi[1], k1 as i64];
    let lo = [
        core_lo[0] - sec.halo[0].0 as i64,
        core_lo[1] - sec.halo[1].0 as i64,
        core_lo[2] - sec.halo[2].0 as i64,
    ];
    let n = [
        (core_hi[0] - core_lo[0]) as usize + sec.halo[0].0 + sec.halo[0].1,
        (core_hi[1] - core_lo[1]) as usize + sec.halo[1].0 + sec.halo[1].1,
        (core_hi[2] - core_lo[2]) as usize + sec.halo[2].0 + sec.halo[2].1,
    ];
    let geo = Geo::new(lo, n, inner);
    for &q in &sec.quantities {
        if direct[q as usize].is_some() {
            continue;
        }
        let b = &mut bufs[q as usize];
        if b.capacity() == 0 {
            *b = take_buf(geo.len);
        } else if b.len() != geo.len {
            b.resize(geo.len, T::ZERO);
        }
    }
    for t in &sec.loads {
        if direct[t.q as usize].is_some() {
            continue;
        }
        let (blo, bhi) = reach_box(core_lo, core_hi, t.reach, t.k);
        transfer(
            mem_of(t.q as usize),
            &geo,
            &mut bufs[t.q as usize],
            blo,
            bhi,
            true,
        )?;
    }
    for st in &sec.stmts {
        let (rlo, rhi) = reach_box(core_lo, core_hi, st.reach, (0, 0));
        if (0..3).any(|a| rhi[a] <= rlo[a]) {
            continue;
        }
        run_stmt(st, &geo, bufs, regs, direct, ctx.scalars, rlo, rhi)?;
    }
    for t in &sec.stores {
        if direct[t.q as usize].is_some() {
            continue;
        }
        if matches!(ctx.plan.kinds[t.q as usize], Kind::Field { .. }) && t.reach != [0; 4] {
            return Err(Error::invalid(
                "gtscript block",
                t.reach,
                "field stores over the tile core only (internal planning error)",
            ));
        }
        let (blo, bhi) = reach_box(core_lo, core_hi, t.reach, (0, 0));
        transfer(
            mem_of(t.q as usize),
            &geo,
            &mut bufs[t.q as usize],
            blo,
            bhi,
            false,
        )?;
    }
    Ok(())
}

/// Runs a planned stencil on `fields` (one entry per field component, in quantity order) over
/// `domain` (I, J, K; 1 along an axis no field has), with `scalars` in declaration order.
///
/// Checks first that every K read stays inside the fields' views, so an error leaves every
/// field untouched.
///
/// # Safety
/// Every [`FieldMem`] must describe memory that is alive for the call, aligned for `T`, inside
/// its allocation for every index within `shape`, not written by anyone else during the call,
/// and, for components of written fields, writable and overlapping no other component's memory.
pub unsafe fn run<T: Num>(
    plan: &Plan,
    fields: &[FieldMem],
    scalars: &[f64],
    domain: [usize; 3],
    threads: Threads,
) -> Result<()> {
    let n_comp = plan
        .kinds
        .iter()
        .filter(|k| matches!(k, Kind::Field { .. }))
        .count();
    if fields.len() != n_comp || scalars.len() != plan.program.scalars.len() {
        return Err(Error::invalid(
            "gtscript call",
            (fields.len(), scalars.len()),
            format!(
                "{n_comp} field components and {} scalars",
                plan.program.scalars.len()
            ),
        ));
    }
    let nk = domain[2];
    if nk < plan.min_k && !domain.contains(&0) {
        return Err(Error::invalid(
            "domain",
            domain,
            format!(
                "a K domain of at least {} levels: the intervals of stencil {:?} need them",
                plan.min_k, plan.program.name
            ),
        ));
    }
    let ranges: Vec<(usize, usize)> = plan
        .sections
        .iter()
        .map(|s| (s.start.resolve(nk), s.end.resolve(nk)))
        .collect();
    // K bounds of every field read, before anything is written.
    for (sec, &(ks, ke)) in plan.sections.iter().zip(&ranges) {
        if ks >= ke {
            continue;
        }
        for &(q, dmin, dmax) in &sec.k_reads {
            let f = &fields[q as usize];
            if !f.axes[2] {
                continue;
            }
            let lo = ks as i64 + dmin as i64;
            let hi = ke as i64 - 1 + dmax as i64;
            let below = f.origin[2] as i64;
            let above = f.shape[2] as i64 - below;
            if lo < -below || hi >= above {
                let Kind::Field { field, .. } = plan.kinds[q as usize] else {
                    continue;
                };
                let level = if lo < -below { lo } else { hi };
                return Err(k_bounds_error(&plan.program.fields[field].name, level, nk));
            }
        }
    }
    if domain.contains(&0) {
        return Ok(());
    }
    let read: Vec<bool> = (0..fields.len())
        .map(|q| {
            plan.sections
                .iter()
                .any(|s| s.loads.iter().any(|t| t.q as usize == q))
        })
        .collect();
    let mems: Vec<Mem> = fields
        .iter()
        .zip(&read)
        .map(|(f, &r)| Mem {
            addr: f.addr,
            shape: f.shape,
            strides: f.strides,
            origin: [f.origin[0] as i64, f.origin[1] as i64, f.origin[2] as i64],
            axes: f.axes,
            writable: f.writable,
            stream: f.writable && !r && exec::streaming::<T>(f.shape.iter().product()),
        })
        .collect();
    // The output's unit-stride axis.
    let inner = plan
        .first_output
        .and_then(|field| {
            let q = plan
                .kinds
                .iter()
                .position(|k| matches!(k, Kind::Field { field: f, .. } if *f == field))?;
            let f = &fields[q];
            (0..3)
                .filter(|&a| f.axes[a] && domain[a] > 1)
                .min_by_key(|&a| (f.strides[a].unsigned_abs(), 2 - a))
        })
        .unwrap_or(0);
    let scal: Vec<T> = scalars.iter().map(|&v| T::from_f64(v)).collect();
    let points = domain.iter().product::<usize>();
    let threads = if exec::parallel(threads, points) {
        threads
    } else {
        Threads::ONE
    };
    let want = exec::tasks_wanted(threads);
    let (ti, tj, kc) = if inner == 2 {
        // Rows along K: whole columns when they are not too long.
        (16, 16, if nk <= 128 { nk } else { 64 })
    } else {
        // Whole rows along the inner horizontal axis, a few rows of the other.
        let (nr, nh) = if inner == 0 {
            (domain[0], domain[1])
        } else {
            (domain[1], domain[0])
        };
        let tr = nr.min(512);
        let tiles_r = nr.div_ceil(tr);
        let th = (nh * tiles_r).div_ceil(want).clamp(4, 16).min(nh);
        let kc = (BLOCK_POINTS / ((tr + 4) * (th + 4))).max(1);
        if inner == 0 {
            (tr, th, kc)
        } else {
            (th, tr, kc)
        }
    };
    let mut tiles = Vec::new();
    for i0 in (0..domain[0]).step_by(ti) {
        for j0 in (0..domain[1]).step_by(tj) {
            tiles.push(Tile {
                lo: [i0 as i64, j0 as i64],
                hi: [
                    (i0 + ti).min(domain[0]) as i64,
                    (j0 + tj).min(domain[1]) as i64,
                ],
            });
        }
    }
    let ctx = Ctx {
        plan,
        mems: &mems,
        scalars: &scal,
        nk,
        inner,
        kc,
        ranges: &ranges,
    };
    let error: Mutex<Option<Error>> = Mutex::new(None);
    crate::threads::run_tasks(threads, tiles, |tile| {
        if let Err(e) = exec::simd(TileTask { ctx: &ctx, tile }) {
            error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert(e);
        }
    });
    match error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gtscript::compile;

    /// A C-ordered f64 array of `shape` (I, J, K) and its `FieldMem` with lower extent `lo`.
    fn field(data: &mut [f64], shape: [usize; 3], lo: [usize; 3], writable: bool) -> FieldMem {
        FieldMem {
            addr: data.as_mut_ptr().expose_provenance(),
            shape,
            strides: [(shape[1] * shape[2]) as isize, shape[2] as isize, 1],
            origin: lo,
            axes: [true; 3],
            writable,
        }
    }

    fn value(i: usize, j: usize, k: usize) -> f64 {
        ((i * 7 + j * 13 + k * 3) % 17) as f64 * 0.25 - 1.0
    }

    #[test]
    fn laplacian_of_a_temporary_matches_direct_loops() {
        // tmp = lap(inp); out = lap(tmp): inp needs extent 2, tmp is computed on a 1-wide ring.
        let lap = |q: &str, base: &str| {
            format!(
                "add mul c -4.0 {q} 0 0 0 add {q} 1 0 0 add {q} -1 0 0 add {q} 0 1 0 {q} 0 -1 0"
            )
            .replace(&format!("{q} 0 0 0"), &format!("{base} 0 0 0"))
            .replace(q, base)
        };
        let text = format!(
            "stencil l2 float64\nfield inp IJK\nfield out IJK\ntemp tmp\ncomp PARALLEL\ninterval S 0 E 0\nstmt 1 t 0 {}\nstmt 2 f 1 0 {}\n",
            lap("X", "f 0 0"),
            lap("X", "t 0")
        );
        let plan = compile(&text).unwrap();
        assert_eq!(plan.field_extent[0], [(2, 2), (2, 2), (0, 0)]);
        let (n, h) = ([37, 21, 3], 2);
        let ishape = [n[0] + 2 * h, n[1] + 2 * h, n[2]];
        let mut inp: Vec<f64> = (0..ishape.iter().product())
            .map(|x| {
                value(
                    x / (ishape[1] * ishape[2]),
                    (x / ishape[2]) % ishape[1],
                    x % ishape[2],
                )
            })
            .collect();
        let mut out = vec![0.0; n.iter().product()];
        let fields = [
            field(&mut inp, ishape, [h, h, 0], false),
            field(&mut out, n, [0, 0, 0], true),
        ];
        for threads in [Threads::ONE, Threads::new(3).unwrap()] {
            // SAFETY: both arrays are alive, aligned and disjoint; shapes match their lengths.
            unsafe { run::<f64>(&plan, &fields, &[], n, threads).unwrap() };
            let at = |i: i64, j: i64, k: usize| {
                let (i, j) = ((i + h as i64) as usize, (j + h as i64) as usize);
                inp[(i * ishape[1] + j) * ishape[2] + k]
            };
            let l1 = |i: i64, j: i64, k: usize| {
                -4.0 * at(i, j, k)
                    + at(i + 1, j, k)
                    + at(i - 1, j, k)
                    + at(i, j + 1, k)
                    + at(i, j - 1, k)
            };
            for i in 0..n[0] {
                for j in 0..n[1] {
                    for k in 0..n[2] {
                        let (x, y) = (i as i64, j as i64);
                        let want = -4.0 * l1(x, y, k)
                            + l1(x + 1, y, k)
                            + l1(x - 1, y, k)
                            + l1(x, y + 1, k)
                            + l1(x, y - 1, k);
                        assert_eq!(out[(i * n[1] + j) * n[2] + k], want);
                    }
                }
            }
        }
    }

    #[test]
    fn forward_recurrence_and_k_bounds() {
        let plan = compile(
            "stencil s float64\nfield a IJK\nfield out IJK\ncomp FORWARD\ninterval S 0 S 1\nstmt 1 f 1 0 f 0 0 0 0 0\ninterval S 1 E 0\nstmt 2 f 1 0 add f 1 0 0 0 -1 f 0 0 0 0 0\n",
        )
        .unwrap();
        let n = [3, 2, 5];
        let mut a: Vec<f64> = (0..30).map(|x| x as f64).collect();
        let mut out = vec![0.0; 30];
        let fields = [
            field(&mut a, n, [0; 3], false),
            field(&mut out, n, [0; 3], true),
        ];
        // SAFETY: as above.
        unsafe { run::<f64>(&plan, &fields, &[], n, Threads::ONE).unwrap() };
        for c in 0..6 {
            let mut acc = 0.0;
            for k in 0..5 {
                acc += a[c * 5 + k];
                assert_eq!(out[c * 5 + k], acc);
            }
        }
        // Reading a[0, 0, 1] on the top level needs one level more than the field has.
        let plan = compile(
            "stencil s float64\nfield a IJK\nfield out IJK\ncomp PARALLEL\ninterval S 0 E 0\nstmt 1 f 1 0 f 0 0 0 0 1\n",
        )
        .unwrap();
        assert_eq!(plan.field_extent[0][2], (0, 1));
        let before = out.clone();
        let fields = [
            field(&mut a, n, [0; 3], false),
            field(&mut out, n, [0; 3], true),
        ];
        // SAFETY: as above.
        let err = unsafe { run::<f64>(&plan, &fields, &[], n, Threads::ONE) }.unwrap_err();
        assert!(err.to_string().contains("\"a\""), "{err}");
        assert_eq!(out, before);
    }

    #[test]
    fn plan_rejects_racy_reads_with_the_line() {
        let head =
            "stencil s float64\nfield a IJK\nfield out IJK\ncomp PARALLEL\ninterval S 0 E 0\n";
        for (body, word) in [
            (
                "stmt 7 f 1 0 f 0 0 0 0 0\nstmt 8 f 1 0 f 1 0 1 0 0\n",
                "horizontal offset",
            ),
            (
                "stmt 7 f 1 0 f 0 0 0 0 0\nstmt 8 f 1 0 f 1 0 0 0 1\n",
                "PARALLEL",
            ),
            ("stmt 7 t 0 t 0 1 0 0\n", "own assignment"),
        ] {
            let text =
                format!("{head}{}", body).replace("field out IJK\n", "field out IJK\ntemp t\n");
            let err = compile(&text).unwrap_err().to_string();
            assert!(
                err.contains(word) && err.contains("line 7") || err.contains("line 8"),
                "{err}"
            );
        }
    }
}
