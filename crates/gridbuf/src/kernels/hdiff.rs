//! `hdiff(inp, coeff, out)`: COSMO's horizontal diffusion with a monotonic flux limiter.
//!
//! ```text
//! lap = 4 inp - (inp[i-1] + inp[i+1] + inp[j-1] + inp[j+1])
//! flx = lap[i+1] - lap;  flx = 0 where flx * (inp[i+1] - inp) > 0
//! fly = lap[j+1] - lap;  fly = 0 where fly * (inp[j+1] - inp) > 0
//! out = inp - coeff * (flx - flx[i-1] + fly - fly[j-1])
//! ```
//!
//! # How it runs
//! The domain is swept plane by plane along one horizontal axis `S`; a plane is spanned by the
//! other horizontal axis `R` and K. The laplacian and the fluxes live in a few rolling plane
//! buffers of one task's tile (a range of R and of K), so `inp` is read from memory once and no
//! full-size temporary is written. Buffers are flat and contiguous with the output's
//! unit-stride axis innermost:
//! - K has unit stride (C order, `gt:cpu_kfirst`): `S` is the outer horizontal axis and a
//!   buffer holds one K column per point of R (`[r][k]`); R neighbours are a column apart.
//! - I or J has unit stride (`gt:cpu_ifirst`, `dace:cpu`): `R` is that axis and a buffer holds
//!   one R row per level (`[k][r]`); R neighbours are adjacent.
//!
//! Either way every pass is a loop over whole contiguous buffers with fixed offsets, which the
//! compiler vectorises. Each buffer row carries the two-point halo along R, so values near a
//! row's ends mix neighbouring rows; they are computed but never reach an output point.

use super::exec::{self, Order, Threads};
use super::{impl_kernel, Extent, FieldSpec, Float};
use crate::error::Result;
use ndarray::{ArrayView3, ArrayViewMut3, Axis, Slice};

/// Horizontal extent of `inp`.
const H: usize = 2;

/// Target number of elements of one buffer when lanes run along K. Wide tiles read long
/// contiguous runs of each plane; the seven buffers of a tile (0.9 MiB of f64) about fill a
/// core's L2 cache.
const BUFFER_ELEMS_K_LANES: usize = 16384;

/// Target number of elements of one buffer when lanes run along R: a few levels of whole rows.
const BUFFER_ELEMS_R_LANES: usize = 2048;

/// Shortest sweep of a task along S when the domain is cut along S for parallelism: each sweep
/// starts by loading four planes and computing two.
const MIN_SWEEP: usize = 32;

static FIELDS: [FieldSpec; 3] = [
    FieldSpec::input("inp", Extent::symmetric([H, H, 0])),
    FieldSpec::input("coeff", Extent::ZERO),
    FieldSpec::output("out"),
];

/// The `hdiff` kernel: `inp` (in, extent 2 in I and J), `coeff` (in) and `out` (out).
#[derive(Copy, Clone, Debug, Default)]
pub struct HdiffKernel;

impl_kernel!(HdiffKernel, "hdiff", FIELDS);

impl HdiffKernel {
    fn exec<T: Float>(
        &self,
        inputs: &[ArrayView3<'_, T>],
        outputs: &mut [ArrayViewMut3<'_, T>],
        domain: [usize; 3],
        threads: Threads,
    ) -> Result<()> {
        let out = outputs[0].view_mut();
        if out.is_empty() {
            return Ok(());
        }
        let geo = Geometry::new(Order::of(&out));
        let chunk = geo.chunks(domain, threads);
        let (inp, coeff) = (&inputs[0], &inputs[1]);
        let parts = exec::split(out, chunk);
        exec::run_each(threads, parts, |(origin, part)| {
            exec::simd(Sweep {
                tile: Tile::new(geo, origin, &part),
                inp,
                coeff,
                out: part,
            })
        });
        Ok(())
    }
}

/// The roles of the axes.
#[derive(Copy, Clone, Debug)]
struct Geometry {
    /// Sweep axis (I or J).
    s: usize,
    /// The other horizontal axis.
    r: usize,
    /// Whether buffer lanes run along K (`[r][k]`) rather than along R (`[k][r]`).
    lane_is_k: bool,
}

impl Geometry {
    fn new(order: Order) -> Geometry {
        if order.inner == 2 {
            // K is innermost, so the outer and middle axes are I and J.
            Geometry {
                s: order.outer,
                r: order.mid,
                lane_is_k: true,
            }
        } else {
            Geometry {
                s: 1 - order.inner,
                r: order.inner,
                lane_is_k: false,
            }
        }
    }

    /// Chunk lengths per axis: tiles of R and K whose buffers fit the cache, and along S as
    /// many chunks as needed to give every thread a few tasks.
    fn chunks(&self, domain: [usize; 3], threads: Threads) -> [usize; 3] {
        let (nr, nk) = (domain[self.r], domain[2]);
        let balanced = |n: usize, max: usize| n.div_ceil(n.div_ceil(max.max(1)));
        let (tr, kc) = if self.lane_is_k {
            let kc = balanced(nk, 128);
            let tr = balanced(nr, (BUFFER_ELEMS_K_LANES / kc).saturating_sub(2 * H).max(8));
            (tr, kc)
        } else {
            let tr = balanced(nr, 1024);
            let kc = balanced(nk, BUFFER_ELEMS_R_LANES / (tr + 2 * H));
            (tr, kc)
        };
        let mut chunk = [0; 3];
        chunk[self.r] = tr;
        chunk[2] = kc;
        chunk[self.s] = domain[self.s];
        let points = domain.iter().product();
        if exec::parallel(threads, points) {
            let tiles = nr.div_ceil(tr) * nk.div_ceil(kc);
            let want = exec::tasks_wanted(threads);
            if tiles < want {
                let per = want.div_ceil(tiles);
                chunk[self.s] = domain[self.s].div_ceil(per).max(MIN_SWEEP);
            }
        }
        chunk
    }
}

/// One task: a box of the domain and its flat buffers.
struct Tile {
    geo: Geometry,
    /// First point of the box, domain coordinates.
    origin: [usize; 3],
    /// Lengths of the box along S, R and K.
    ns: usize,
    tr: usize,
    nk: usize,
    /// Buffer row length along R, with the halo.
    wr: usize,
    /// Buffer length.
    n: usize,
    /// Offset between R neighbours in a buffer.
    ro: usize,
}

impl Tile {
    fn new<T>(geo: Geometry, origin: [usize; 3], part: &ArrayViewMut3<'_, T>) -> Tile {
        let (ns, tr, nk) = (
            part.len_of(Axis(geo.s)),
            part.len_of(Axis(geo.r)),
            part.len_of(Axis(2)),
        );
        let wr = tr + 2 * H;
        Tile {
            geo,
            origin,
            ns,
            tr,
            nk,
            wr,
            n: wr * nk,
            ro: if geo.lane_is_k { nk } else { 1 },
        }
    }

    /// Where output lane `l` starts in a buffer.
    #[inline(always)]
    fn lane_start(&self, l: usize) -> usize {
        if self.geo.lane_is_k {
            (l + H) * self.nk
        } else {
            l * self.wr + H
        }
    }

    /// The plane of `v` at S index `s` (of the view), cut to this tile's R range starting at
    /// view index `r0` with `len` points and its K range, with lanes along the buffer lanes.
    fn plane<'a, T>(&self, v: &ArrayView3<'a, T>, s: usize, r0: usize, len: usize) -> Plane<'a, T> {
        let g = self.geo;
        let plane = (*v).index_axis_move(Axis(g.s), s);
        let r2 = exec::after_removing(g.r, g.s);
        let k2 = exec::after_removing(2, g.s);
        let k0 = self.origin[2];
        let sub = plane
            .slice_axis_move(Axis(r2), Slice::from(r0..r0 + len))
            .slice_axis_move(Axis(k2), Slice::from(k0..k0 + self.nk));
        Plane {
            view: sub,
            lane_axis: if g.lane_is_k { k2 } else { r2 },
        }
    }

    /// Copies plane `t` (domain S index, from -2) of `inp` into `buf`.
    #[inline(always)]
    fn load<T: Float>(&self, buf: &mut [T], inp: &ArrayView3<'_, T>, t: isize) {
        let s = usize::try_from(t + H as isize).expect("plane inside the extent");
        let p = self.plane(inp, s, self.origin[self.geo.r], self.wr);
        if self.geo.lane_is_k {
            // `[r][k]`: the whole cut is one slice when it is contiguous in C order.
            if let Some(src) = p.view.to_slice() {
                exec::copy_slice(buf, src);
                return;
            }
        }
        let lane_len = if self.geo.lane_is_k { self.nk } else { self.wr };
        for (dst, lane) in buf
            .chunks_exact_mut(lane_len)
            .zip(p.view.lanes(Axis(p.lane_axis)))
        {
            match lane.to_slice() {
                Some(src) => exec::copy_slice(dst, src),
                None => dst.iter_mut().zip(lane.iter()).for_each(|(d, s)| *d = *s),
            }
        }
    }

    /// Sweeps the tile along S, writing `out` (the tile's part of the output).
    #[inline(always)]
    fn run<T: Float>(
        &self,
        inp: &ArrayView3<'_, T>,
        coeff: &ArrayView3<'_, T>,
        mut out: ArrayViewMut3<'_, T>,
    ) {
        let s_is_i = self.geo.s == 0;
        let ro = self.ro;
        let new = || vec![T::ZERO; self.n];
        let (mut in0, mut in1, mut in2) = (new(), new(), new());
        let (mut lap0, mut lap1) = (new(), new());
        let (mut fsm, mut fs0) = (new(), new());
        let mut lane_buf = Vec::new();
        let mut out_buf = Vec::new();
        let s0 = self.origin[self.geo.s] as isize;

        // Warm-up: in0 = inp(s0), in1 = inp(s0 + 1), lap0 = lap(s0), fsm = fS(s0 - 1).
        self.load(&mut in2, inp, s0 - 2);
        self.load(&mut in0, inp, s0 - 1);
        self.load(&mut in1, inp, s0);
        lap_pass(&mut lap1, &in2, &in0, &in1, ro, s_is_i); // lap(s0 - 1)
        self.load(&mut in2, inp, s0 + 1);
        lap_pass(&mut lap0, &in0, &in1, &in2, ro, s_is_i); // lap(s0)
        flux_s_pass(&mut fsm, &lap0, &lap1, &in1, &in0, ro); // fS(s0 - 1)
        std::mem::swap(&mut in0, &mut in1); // in0 = inp(s0), in1 = inp(s0 - 1)
        std::mem::swap(&mut in1, &mut in2); // in1 = inp(s0 + 1), in2 free

        for ls in 0..self.ns {
            let s = s0 + ls as isize;
            self.load(&mut in2, inp, s + 2);
            lap_pass(&mut lap1, &in0, &in1, &in2, ro, s_is_i); // lap(s + 1)
            flux_s_pass(&mut fs0, &lap1, &lap0, &in1, &in0, ro); // fS(s)

            let bufs = Fluxes {
                inp: &in0,
                lap: &lap0,
                fs: &fs0,
                fsm: &fsm,
                ro,
                s_is_i,
            };
            let cplane = self.plane(coeff, s as usize, self.origin[self.geo.r], self.tr);
            let mut oplane = out.index_axis_mut(Axis(self.geo.s), ls);
            // `[r][k]` with contiguous coefficient and output cuts: the tile is one lane.
            let merged = if self.geo.lane_is_k {
                cplane.view.to_slice().zip(oplane.as_slice_mut())
            } else {
                None
            };
            if let Some((cf, o)) = merged {
                bufs.out_lane(o, cf, self.lane_start(0));
            } else {
                let lane_axis = Axis(cplane.lane_axis);
                let lanes = oplane.lanes_mut(lane_axis).into_iter();
                for (l, (mut olane, clane)) in lanes.zip(cplane.view.lanes(lane_axis)).enumerate() {
                    let x0 = self.lane_start(l);
                    let cf = match clane.to_slice() {
                        Some(c) => c,
                        None => exec::gather(&clane, &mut lane_buf),
                    };
                    match olane.as_slice_mut() {
                        Some(o) => bufs.out_lane(o, cf, x0),
                        None => {
                            out_buf.clear();
                            out_buf.resize(olane.len(), T::ZERO);
                            bufs.out_lane(&mut out_buf, cf, x0);
                            exec::scatter(&out_buf, &mut olane);
                        }
                    }
                }
            }

            std::mem::swap(&mut in0, &mut in1);
            std::mem::swap(&mut in1, &mut in2);
            std::mem::swap(&mut lap0, &mut lap1);
            std::mem::swap(&mut fsm, &mut fs0);
        }
    }
}

/// One task's sweep, as a [`exec::SimdTask`].
struct Sweep<'a, 'b, T> {
    tile: Tile,
    inp: &'b ArrayView3<'a, T>,
    coeff: &'b ArrayView3<'a, T>,
    out: ArrayViewMut3<'a, T>,
}

impl<T: Float> exec::SimdTask for Sweep<'_, '_, T> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        self.tile.run(self.inp, self.coeff, self.out)
    }
}

/// A 2-D cut of a field and the axis its lanes run along.
struct Plane<'a, T> {
    view: ndarray::ArrayView2<'a, T>,
    lane_axis: usize,
}

/// The buffers an output plane is computed from.
struct Fluxes<'b, T> {
    /// `inp` and `lap` of the plane.
    inp: &'b [T],
    lap: &'b [T],
    /// Flux along S from this plane to the next one, and from the previous one to this one.
    fs: &'b [T],
    fsm: &'b [T],
    /// Offset of R neighbours.
    ro: usize,
    s_is_i: bool,
}

impl<T: Float> Fluxes<'_, T> {
    /// `o = inp - coeff * (flx - flx[i-1] + fly - fly[j-1])` for `o.len()` points from `x0`;
    /// the fluxes along R are computed here from `lap` and `inp`.
    #[inline(always)]
    fn out_lane(&self, o: &mut [T], cf: &[T], x0: usize) {
        let (n, ro) = (o.len(), self.ro);
        let cf = &cf[..n];
        let (im, ic, ip) = (
            &self.inp[x0 - ro..x0 - ro + n],
            &self.inp[x0..x0 + n],
            &self.inp[x0 + ro..x0 + ro + n],
        );
        let (lm, lc, lp) = (
            &self.lap[x0 - ro..x0 - ro + n],
            &self.lap[x0..x0 + n],
            &self.lap[x0 + ro..x0 + ro + n],
        );
        let (fs, fsm) = (&self.fs[x0..x0 + n], &self.fsm[x0..x0 + n]);
        if self.s_is_i {
            for x in 0..n {
                let fr = limit(lp[x] - lc[x], ip[x] - ic[x]);
                let frm = limit(lc[x] - lm[x], ic[x] - im[x]);
                o[x] = ic[x] - cf[x] * (fs[x] - fsm[x] + fr - frm);
            }
        } else {
            for x in 0..n {
                let fr = limit(lp[x] - lc[x], ip[x] - ic[x]);
                let frm = limit(lc[x] - lm[x], ic[x] - im[x]);
                o[x] = ic[x] - cf[x] * (fr - frm + fs[x] - fsm[x]);
            }
        }
    }
}

/// `lap = 4 cur - (im + ip + jm + jp)` on the buffer, where the S neighbours are `prev` and
/// `next` and the R neighbours are `cur` shifted by `ro`.
#[inline(always)]
fn lap_pass<T: Float>(lap: &mut [T], prev: &[T], cur: &[T], next: &[T], ro: usize, s_is_i: bool) {
    let n = lap.len();
    if n <= 2 * ro {
        return;
    }
    let m = n - 2 * ro;
    let out = &mut lap[ro..ro + m];
    let c = &cur[ro..ro + m];
    let rm = &cur[..m];
    let rp = &cur[2 * ro..2 * ro + m];
    let sm = &prev[ro..ro + m];
    let sp = &next[ro..ro + m];
    let four = T::FOUR;
    if s_is_i {
        for x in 0..m {
            out[x] = four * c[x] - (sm[x] + sp[x] + rm[x] + rp[x]);
        }
    } else {
        for x in 0..m {
            out[x] = four * c[x] - (rm[x] + rp[x] + sm[x] + sp[x]);
        }
    }
}

/// The flux `f`, or 0 where it points up the gradient `g`.
#[inline(always)]
fn limit<T: Float>(f: T, g: T) -> T {
    if f * g > T::ZERO {
        T::ZERO
    } else {
        f
    }
}

/// Flux along S between the planes `lap0`/`in0` and `lap1`/`in1` (the next one).
#[inline(always)]
fn flux_s_pass<T: Float>(fs: &mut [T], lap1: &[T], lap0: &[T], in1: &[T], in0: &[T], ro: usize) {
    let n = fs.len();
    if n <= 2 * ro {
        return;
    }
    let r = ro..n - ro;
    let (f, l1, l0, i1, i0) = (
        &mut fs[r.clone()],
        &lap1[r.clone()],
        &lap0[r.clone()],
        &in1[r.clone()],
        &in0[r],
    );
    let m = f.len();
    let (l1, l0, i1, i0) = (&l1[..m], &l0[..m], &i1[..m], &i0[..m]);
    for x in 0..m {
        f[x] = limit(l1[x] - l0[x], i1[x] - i0[x]);
    }
}
