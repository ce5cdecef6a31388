"""pace's production stencils through GT4Py's backends: gridbuf (``gridbuf:cpu_ifirst``,
``gridbuf:cpu_kfirst``) against GT4Py's ``gt:cpu_ifirst``, ``gt:cpu_kfirst`` and ``numpy``.

pace (https://github.com/ai2cm/pace, the Python FV3 dynamical core and GFDL physics) is not part
of gridbuf: pass the path of a pace source checkout. Its stencil definitions are imported from
there unchanged (``_pace.py`` says how; pace's framework modules that a definition does not use
are stubbed), every function of ``fv3core/pace/fv3core/stencils/*.py``,
``physics/pace/physics/stencils/*.py`` and ``stencils/pace/stencils/*.py`` that holds a
``with computation(...)`` and is not a ``gtscript.function`` (181 in pace's main branch).

Problem: one C48 tile, 48 x 48 x 79 points, halo 3: IJK fields (54, 54, 80), IJ fields
(54, 54), K fields (80,); origin (3, 3, 0), domain (48, 48, 79). A definition that reads
further than 3 points gets a wider halo (fields and origin grow, the domain stays 48 x 48); one
that reads K offsets gets a shorter K domain so that its reads stay inside the 80 levels.

Externals (``EXTERNALS`` below): what pace's own code passes, for a one-tile C48 run in which the
tile owns all four edges and every stencil runs on the compute domain:

- region bounds: pace's ``GridIndexing.axis_offsets`` for origin (3, 3) and domain (48, 48) on a
  tile with halo 3: ``i_start = local_is = I[0]``, ``i_end = local_ie = I[-1]``, the same in J;
- the dynamical core's namelist: pace's example ``driver/examples/configs/baroclinic_c12.yaml``
  (hord_* 6, kord_tm -9, kord_mt 9, nord 3, nwat 6, d_con 1.0, rf_cutoff 3000, tau 10,
  hydrostatic False, beta 0, ...), passed as pace's classes pass them (``mord = abs(iord)``,
  ``kord = abs(kord_tm)``, d_sw's kinetic energy without the x/y minmax limiter, ...);
- the physics and saturation adjustment: pace's ``NamelistDefaults`` (``pace.util.namelist``,
  read from the checkout) and what ``Microphysics.__init__`` derives from them (``tice0``,
  ``t_wfr``, ``use_ccn``, ``do_sedi_w``, ``p_nonhydro``);
- the rest as pace's classes compute them: ``D2A2C_AVG_OFFSET`` 3 (npt = 4),
  ``do_adjustment`` True (not a stretched grid), ``grid_type`` 0, ``fill_corners_func``
  pace's ``corners.fill_corners_2cells_x``, ``t_max``/``xvir`` fv_subgridz's ``T3_MAX``/``ZVIR``
  (79 levels, 48 sponge levels), ``ptop`` 300 Pa with physics' ``pktop``/``pk0inv``;
  not pace's defaults: ``fv_sg_adj`` 600 s (the example runs without subgrid-scale mixing,
  ``-1``, and the definition divides by it), ``nord0..nord3`` all 3 (``nord``), ``iv`` 1.

Inputs: seeded random values, the same for every backend: uniform 0.5-2 by default;
temperatures (``pt``, ``t``, ``tz``, ...) 200-300 K; pressures (``pe*``, ``p``, ``ps``, ...)
increasing with K from 300 Pa to about 1e5 Pa (one profile per column shared by a
definition's pressure fields, each moved by up to 10 % of a layer), their logs for ``peln``/``pn*`` and their
kappa powers for ``pk*``; layer thicknesses ``delp``/``dp*`` 500-1500 Pa and ``delz``/``dz*`` -500 to -50 m (FV3's
height thicknesses are negative); mixing ratios
(``q*``) 1e-6-1e-3; integer fields 0-3 (the remap's level index ``lev`` 0, as pace starts it), booleans at
random. Scalars: uniform 0.5-2, integers 1,
booleans True.

Parts:

1. Definition to first result, every definition: ``gtscript.stencil(backend=..., definition=...,
   externals=...)`` and its first call, on ``gridbuf:cpu_kfirst``, ``gridbuf:cpu_ifirst`` and
   GT4Py ``numpy``,
   the arguments allocated and filled before the clock starts. GT4Py numpy's builds are kept
   in the GT4Py cache ``--gt-cache`` too (all 181 take many minutes): its column is the first
   build's time, recorded in that cache when it was built, plus this run's first call. All definitions in one process in
   pace's file order, as a model builds them (gridbuf keeps where each module's functions are
   and the parsed source of the functions it inlined most recently, as in a model's process).
   Each gridbuf backend's
   stencil is built with the other's released, so neither reuses the program the other
   compiled (gridbuf shares it between live stencils of one definition); which goes first
   alternates between definitions. Along the way every
   output field of gridbuf's first call is compared with GT4Py numpy's on the same inputs, bit
   for bit (NaN where NaN); a difference is printed with its field, the number of points and
   the largest difference in units of the last place.
2. Time per call of the ``--top`` definitions whose gridbuf:cpu_kfirst call takes longest, on all
   five backends, round-robin medians (``_timing.compare``), every call on the inputs of the
   first: the fields a definition writes are set back to their inputs before each call, and
   the median time of those copies alone (timed in the same round-robin, per layout) is
   subtracted. GT4Py's compiled backends build
   these only (10-20 s each), in the GT4Py cache ``--gt-cache`` (kept between runs: a rerun
   loads them); their build time is printed with the first build's time, recorded in that cache.
   Their outputs are compared with GT4Py numpy's too, and each gridbuf backend's output with
   ``gt:cpu_ifirst``'s, bit for bit: where gridbuf and NumPy differ, GT4Py's compiled backend
   (which calls the C library's math functions, as gridbuf does, where NumPy has its own
   vectorised ones) is the third witness.
3. With ``--tier-two``: gridbuf runs on tier one everywhere (``GRIDBUF_TIER2=0``, so no
   background compilation lands during the timing), and part 2 also times each gridbuf backend
   on tier two, the stencil defined again with ``GRIDBUF_TIER2=define`` (tier two compiled at
   definition, or found in gridbuf's cache): its time to tier two in place, and its outputs
   against tier one's on the same inputs, bit for bit (vector math differs by a few ulps).

    .venv/bin/python benchmarks/bench_pace.py --pace PATH [--top 20] [--repeats 5]
        [--repeat-seconds 0.1] [--gt-cache DIR] [--only NAME,...] [--no-compiled] [--tier-two]
        [--plot DIR]

``--plot DIR`` writes ``bench_pace_per_call.png`` and ``bench_pace_first_result.png``.
Prints markdown tables; asserts nothing about times. Needs gt4py.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
import typing
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _pace  # noqa: E402
import _plot  # noqa: E402
from _env import define_env, scratch_dir  # noqa: E402
from _timing import Candidate, compare, fmt_time, markdown_table, print_machine_info  # noqa: E402

NX = NY = 48
NZ = 79
HALO = 3
NK = NZ + 1  # interface levels: every 3-D and K field has 80 levels
GB = ("gridbuf:cpu_kfirst", "gridbuf:cpu_ifirst")
GT = ("gt:cpu_ifirst", "gt:cpu_kfirst")
ALL = (*GB, *GT, "numpy")

TARGET_FIRST = 0.1  # s, each definition's first result on gridbuf (issue 31)
TARGET_TOTAL = 3.0  # s, all definitions together

# ------------------------------------------------------------------------------------------------
# externals


def base_externals() -> dict[str, Any]:
    """The externals every definition may draw from (see the module docstring)."""
    from gt4py.cartesian import gtscript

    import pace.util.constants as C
    from pace.fv3core.stencils import fv_subgridz
    from pace.stencils import corners
    from pace.util.namelist import NamelistDefaults

    I, J = gtscript.I, gtscript.J
    ext: dict[str, Any] = {k: v for k, v in vars(NamelistDefaults).items() if not k.startswith("_") and isinstance(v, (bool, int, float))}
    # pace.dsl.stencil.GridIndexing.axis_offsets(origin=(3, 3, 0), domain=(48, 48, nz)) on a tile
    # of 48 x 48 with halo 3 that owns all four edges
    ext.update(
        i_start=I[0], local_is=I[0], i_end=I[-1], local_ie=I[-1],
        j_start=J[0], local_js=J[0], j_end=J[-1], local_je=J[-1],
    )  # fmt: skip
    # dynamical core: driver/examples/configs/baroclinic_c12.yaml
    hord_mt = hord_tm = 6
    kord_tm = -9
    ext.update(
        hydrostatic=False, nwat=6, moist_phys=NamelistDefaults.moist_phys, d_con=1.0,
        do_stochastic_ke_backscatter=False, inline_q=False, rf_cutoff=3000.0, tau=10.0,
        beta=0.0, use_logp=False, grid_type=0, do_adjustment=True, D2A2C_AVG_OFFSET=3,
        iord=hord_tm, jord=hord_tm, mord=abs(hord_tm), xt_minmax=True, yt_minmax=True,
        kord_tm=kord_tm, kord=abs(kord_tm), iv=1,
        nord0=3.0, nord1=3.0, nord2=3.0, nord3=3.0,
        fill_corners_func=corners.fill_corners_2cells_x,
        t_max=fv_subgridz.T3_MAX, xvir=C.ZVIR, fv_sg_adj=600.0,
    )  # fmt: skip
    # physics (pace.physics.stencils.physics / microphysics)
    ptop, p00 = 300.0, 1.0e5
    tice = NamelistDefaults.tice
    ext.update(
        ptop=ptop, pktop=(ptop / p00) ** C.KAPPA, pk0inv=(1.0 / p00) ** C.KAPPA,
        tice=tice, tice0=tice - 0.01, t_wfr=tice - 40.0, use_ccn=not NamelistDefaults.prog_ccn,
        do_sedi_w=NamelistDefaults.do_sedi_w, p_nonhydro=False,
    )  # fmt: skip
    ext["_hord_mt"] = hord_mt
    return ext


def externals_for(label: str, base: dict[str, Any]) -> dict[str, Any]:
    ext = {k: v for k, v in base.items() if not k.startswith("_")}
    if label.endswith("d_sw.compute_kinetic_energy"):
        # d_sw.py: iord = jord = mord = hord_mt, no minmax limiter
        h = base["_hord_mt"]
        ext.update(iord=h, jord=h, mord=h, xt_minmax=False, yt_minmax=False)
    return ext


# ------------------------------------------------------------------------------------------------
# fields and inputs


@dataclass
class FieldSpec:
    name: str
    axes: tuple[str, ...]
    dtype: np.dtype
    written: bool


@dataclass
class Case:
    label: str
    func: Any
    externals: dict[str, Any]
    fields: list[FieldSpec] = field(default_factory=list)
    scalars: dict[str, Any] = field(default_factory=dict)
    halo: int = HALO
    origin: tuple[int, int, int] = (HALO, HALO, 0)
    domain: tuple[int, int, int] = (NX, NY, NZ)
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    #: Copies of integer inputs the definition writes, by field name and the strides of the
    #: storage they restore (see `call`).
    restores: dict[tuple[str, tuple[int, ...]], np.ndarray] = field(default_factory=dict)


def _shape(axes: tuple[str, ...], halo: int) -> tuple[int, ...]:
    n = {"I": NX + 2 * halo, "J": NY + 2 * halo, "K": NK}
    return tuple(n[a] for a in axes)


def describe(case: Case, numpy_stencil: Any) -> None:
    """Field axes, dtypes and intents from GT4Py's numpy stencil object (and the definition's
    annotations for the fields it does not use); the halo and domain the reads need."""
    from gt4py.cartesian.definitions import AccessKind

    hints = typing.get_type_hints(case.func)
    lo_i = hi_i = lo_k = hi_k = 0
    for name, info in numpy_stencil.field_info.items():
        if info is not None:
            axes, dtype = tuple(info.axes), np.dtype(info.dtype)
            written = bool(info.access & AccessKind.WRITE)
            b = info.boundary
            lo_i = max(lo_i, b[0][0], b[1][0]) if len(b) > 1 else max(lo_i, b[0][0])
            hi_i = max(hi_i, b[0][1], b[1][1]) if len(b) > 1 else max(hi_i, b[0][1])
            if "K" in axes and len(b) == 3:
                lo_k, hi_k = max(lo_k, b[2][0]), max(hi_k, b[2][1])
        else:
            desc = hints[name]
            axes, dtype, written = tuple(a.name if hasattr(a, "name") else str(a) for a in desc.axes), np.dtype(desc.dtype), False
        case.fields.append(FieldSpec(name, axes, dtype, written))
    for name, info in numpy_stencil.parameter_info.items():
        case.scalars[name] = np.dtype(info.dtype) if info is not None else np.dtype(np.float64)
    case.halo = max(HALO, lo_i, hi_i)
    case.origin = (case.halo, case.halo, lo_k)
    case.domain = (NX, NY, min(NZ, NK - lo_k - hi_k))


_TEMPERATURE = {"pt", "t", "tz", "t0", "t1", "tv", "tin", "temp", "pt1", "pt2", "ta", "te0"}


def make_inputs(case: Case, seed: int) -> None:
    rng = np.random.default_rng(seed)
    from pace.util.constants import KAPPA

    profile = None
    for f in case.fields:
        shape = _shape(f.axes, case.halo)
        n = f.name.lower()
        if f.dtype == np.bool_:
            a = rng.random(shape) < 0.5
        elif n == "lev":  # the remap's level index, which pace's set_dp starts at 0
            a = np.zeros(shape, dtype=f.dtype)
        elif f.dtype.kind in "iu":
            a = rng.integers(0, 4, shape).astype(f.dtype)
        elif n in _TEMPERATURE:
            a = rng.uniform(200.0, 300.0, shape)
        elif n.startswith("delp") or n.startswith("dp"):
            a = rng.uniform(500.0, 1500.0, shape)
        elif n.startswith(("pe", "pk", "pn", "ps")) or n in ("p", "pm", "pfull", "phalf", "p1"):
            # pressures, increasing with K: one profile per column shared by all the case's
            # pressure fields, each field moved by up to 10 % of a layer inside the column (so
            # that pe1 and pe2 of the vertical remap span the same column, as in pace)
            if f.axes == ("I", "J", "K"):
                if profile is None:
                    steps = rng.uniform(500.0, 1500.0, shape)
                    profile = (300.0 + np.cumsum(steps, axis=2) - steps[..., :1], steps)
                ref, steps = profile
                p = ref + 0.1 * steps * rng.uniform(-1.0, 1.0, shape)
                p[..., 0], p[..., -1] = ref[..., 0], ref[..., -1]
            elif "K" in f.axes:
                p = 300.0 + np.cumsum(rng.uniform(500.0, 1500.0, shape), axis=f.axes.index("K"))
            else:
                p = rng.uniform(9.0e4, 1.0e5, shape)
            a = np.log(p) if n.startswith(("peln", "pn")) else (p**KAPPA if n.startswith("pk") else p)
        elif n.startswith(("delz", "dz")):  # layer thickness in m: negative in FV3
            a = rng.uniform(-500.0, -50.0, shape)
        elif n.startswith("q"):
            a = rng.uniform(1e-6, 1e-3, shape)
        else:
            a = rng.uniform(0.5, 2.0, shape)
        case.inputs[f.name] = np.ascontiguousarray(a, dtype=f.dtype)
    for name, dt in list(case.scalars.items()):
        if dt == np.bool_:
            case.scalars[name] = True
        elif dt.kind in "iu":
            case.scalars[name] = dt.type(1)
        else:
            case.scalars[name] = dt.type(rng.uniform(0.5, 2.0))


def storages(case: Case, backend: str) -> dict[str, Any]:
    """The inputs as GT4Py storages of ``backend``'s layout (gridbuf's names are registered
    with gt4py.storage by ``import gridbuf.gt4py``)."""
    import gt4py.storage as gs

    out: dict[str, Any] = {}
    for f in case.fields:
        origin = tuple(case.origin[{"I": 0, "J": 1, "K": 2}[a]] for a in f.axes)
        out[f.name] = gs.from_array(case.inputs[f.name], dtype=f.dtype, backend=backend, aligned_index=origin, dimensions=f.axes)
    return out


def call(stencil: Any, case: Case, args: dict[str, Any]) -> None:
    """One call. Integer fields the definition writes (the remap's level index ``lev``) are
    first set back to their inputs, as pace's preceding stencil does; float outputs are left to
    evolve from call to call."""
    restore_written(case, args, floats=False)
    stencil(**args, **case.scalars, origin=case.origin, domain=case.domain)


def timed_call(stencil: Any, case: Case, args: dict[str, Any]) -> None:
    """The call part 2 times: every field the definition writes set back to its input first,
    so each call sees the inputs of the first (left to evolve, a stencil such as
    ``moist_cv_pt_pressure``, whose ``delz = -delz / delp`` flips a sign at every call, computed
    on NaN from its second call on); the copies' own time is measured apart and subtracted."""
    restore_written(case, args, floats=True)
    stencil(**args, **case.scalars, origin=case.origin, domain=case.domain)


def restore_written(case: Case, args: dict[str, Any], floats: bool) -> None:
    """Sets the fields the definition writes back to their inputs: the integer ones, and the
    float ones too where `floats`."""
    for f in case.fields:
        if f.written and (floats or f.dtype.kind in "iub"):
            dst = np.asarray(args[f.name])
            np.copyto(dst, _restore_source(case, f.name, dst))


def written_layout(case: Case, args: dict[str, Any]) -> tuple[Any, ...]:
    """The strides of every field the definition writes, in `args` (what its copies cost)."""
    return tuple(np.asarray(args[f.name]).strides for f in case.fields if f.written)


def _restore_source(case: Case, name: str, dst: np.ndarray) -> np.ndarray:
    """The input of field `name` laid out in `dst`'s axis order: the copy before each call then
    walks both arrays in memory order on every backend (from the C-ordered input it walked
    `gridbuf:cpu_ifirst`'s I-fastest storages across, 0.1 ms of apply_constraints' 1.6 ms)."""
    key = (name, dst.strides)
    src = case.restores.get(key)
    if src is None:
        src = case.restores[key] = np.empty_like(dst, order="K")
        np.copyto(src, case.inputs[name])
    return src


# ------------------------------------------------------------------------------------------------
# correctness


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    """Largest distance in units of the last place between finite floats (or -1 for NaN/inf
    disagreement)."""
    fa, fb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    ia, ib = fa.view(np.int64), fb.view(np.int64)
    # map to a monotonic integer line
    ia = np.where(ia < 0, np.int64(-(2**63)) - ia, ia)
    ib = np.where(ib < 0, np.int64(-(2**63)) - ib, ib)
    finite = np.isfinite(fa) & np.isfinite(fb)
    if not np.all(finite | (np.isnan(fa) & np.isnan(fb)) | (fa == fb)):
        return -1
    return int(np.max(np.abs(ia[finite] - ib[finite]), initial=0))


def differences(case: Case, got: dict[str, Any], ref: dict[str, Any]) -> list[str]:
    """Written fields that are not bit-identical: "name: n points, max ulp" (NaN == NaN)."""
    out = []
    for f in case.fields:
        if not f.written:
            continue
        a, b = np.asarray(got[f.name]), np.asarray(ref[f.name])
        same = (a == b) | ((a != a) & (b != b)) if a.dtype.kind == "f" else a == b
        if a.dtype.kind == "f":  # -0.0 is not +0.0; a NaN's sign carries nothing
            same &= (np.signbit(a) == np.signbit(b)) | (a != a)
        if not same.all():
            n = int((~same).sum())
            u = ulps(a, b) if a.dtype.kind == "f" else -2
            what = "non-finite mismatch" if u == -1 else (f"max {u} ulp" if u > 0 else ("sign of zero differs" if u == 0 else "integers differ"))
            out.append(f"{f.name}: {n} of {a.size} points, {what}")
    return out


# ------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    label: str
    status: str = "ok"  # ok / refused / failed
    message: str = ""
    first: dict[str, float] = field(default_factory=dict)  # backend -> s
    call_kfirst: float = float("nan")
    mismatches: dict[str, list[str]] = field(default_factory=dict)  # backend -> differences
    case: Case | None = None
    stencils: dict[str, Any] = field(default_factory=dict)
    numpy_out: dict[str, Any] = field(default_factory=dict)


def first_result(case: Case, backend: str, rebuild: bool = False) -> tuple[Any, dict[str, Any], float]:
    from gt4py.cartesian import gtscript

    args = storages(case, backend)
    opts = {"rebuild": True} if rebuild else {}
    t0 = time.perf_counter()
    st = gtscript.stencil(backend=backend, definition=case.func, externals=case.externals, **opts)
    call(st, case, args)
    return st, args, time.perf_counter() - t0


def run_definition(d: _pace.Definition, base: dict[str, Any], seed: int, record: dict[str, float], record_path: str) -> Outcome:
    from gridbuf.gt4py import GridbufDefinitionError

    o = Outcome(d.label)
    if d.func is None:
        o.status, o.message = "failed", d.error
        return o
    case = Case(d.label, d.func, externals_for(d.label, base))
    o.case = case
    from gt4py.cartesian import gtscript

    try:
        # GT4Py numpy first: the reference, and the field information that sizes the arrays
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            st_np = gtscript.stencil(backend="numpy", definition=case.func, externals=case.externals)
            build_np = _recorded(record, record_path, f"{d.label}|numpy", time.perf_counter() - t0)
            describe(case, st_np)
            make_inputs(case, seed)
            args = storages(case, "numpy")
            t1 = time.perf_counter()
            call(st_np, case, args)
            o.first["numpy"] = build_np + time.perf_counter() - t1
        o.stencils["numpy"], o.numpy_out = st_np, args
    except Exception as exc:
        o.status, o.message = "failed", f"GT4Py numpy: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        return o
    # Each gridbuf backend's first result is a stencil's whole build: gridbuf shares one
    # compiled program between the live stencils of one definition (the IR is the same on
    # every layout), so the first backend's stencil is released (and collected: stencil classes
    # are in reference cycles) before the second is defined. Which one goes first alternates
    # between definitions: the second still finds the definition's source parsed.
    order = GB if seed % 2 == 0 else GB[::-1]
    for backend in order:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                st, out, t = first_result(case, backend)
        except GridbufDefinitionError as exc:
            o.status, o.message = "refused", f"{backend}: {str(exc).splitlines()[0][:400]}"
            return o
        except Exception as exc:
            o.status, o.message = "failed", f"{backend}: {type(exc).__name__}: {str(exc).splitlines()[0][:400]}"
            return o
        o.first[backend] = t
        diff = differences(case, out, o.numpy_out)
        if diff:
            o.mismatches[backend] = diff
        if backend == order[0]:
            del st, out
            gc.collect()
        else:
            o.stencils[backend] = st
    # the other backend's stencil again, for part 2 (untimed: it shares the program just built)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        o.stencils[order[0]] = first_result(case, order[0])[0]
    # one more call of gridbuf:cpu_kfirst, to rank the definitions for part 2
    args = storages(case, "gridbuf:cpu_kfirst")
    ts = []
    try:
        for _ in range(3):
            t0 = time.perf_counter()
            call(o.stencils["gridbuf:cpu_kfirst"], case, args)
            ts.append(time.perf_counter() - t0)
    except Exception as exc:
        o.status, o.message = "failed", f"gridbuf:cpu_kfirst, a later call: {type(exc).__name__}: {str(exc).splitlines()[0][:400]}"
        return o
    o.call_kfirst = min(ts)
    return o


# ------------------------------------------------------------------------------------------------


def _recorded(record: dict[str, float], path: str, key: str, seconds: float) -> float:
    """The first build's time of ``key``: ``seconds`` when it is not yet in the record (then
    recorded in the cache's json file), else the recorded one."""
    if key not in record:
        record[key] = seconds
        with open(path, "w") as fh:
            json.dump(record, fh, indent=1, sort_keys=True)
    return record[key]


def build_compiled(o: Outcome, backend: str, record: dict[str, float], record_path: str) -> tuple[float, float]:
    """Builds ``o``'s definition on a compiled GT4Py backend (cache kept); returns (this run's
    build time, the first build's time as recorded in the cache)."""
    from gt4py.cartesian import gtscript

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        st = gtscript.stencil(backend=backend, definition=o.case.func, externals=o.case.externals)
        t = time.perf_counter() - t0
    o.stencils[backend] = st
    return t, _recorded(record, record_path, f"{o.label}|{backend}", t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pace", metavar="PATH", help="root of a pace source checkout (required)")
    ap.add_argument("--top", type=int, default=20, help="definitions timed per call on every backend")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--repeat-seconds", type=float, default=0.1)
    ap.add_argument("--gt-cache", default=os.path.join(HERE, ".gt_cache_pace"), help="GT4Py cache root of the compiled builds (kept)")
    ap.add_argument("--only", default="", help="comma-separated definition names (module.name or name) to run")
    ap.add_argument("--no-compiled", action="store_true", help="leave out GT4Py's compiled backends")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tier-two", action="store_true",
                    help="gridbuf on tier one (GRIDBUF_TIER2=0) everywhere, and in part 2 also on tier two (compiled at definition)")
    _plot.add_argument(ap)
    args = ap.parse_args()
    if args.tier_two:
        os.environ["GRIDBUF_TIER2"] = "0"  # read at each definition: tier one unless set around it
    root = _pace.check_checkout(args.pace)
    plot_dir = _plot.prepare(os.path.abspath(args.plot) if args.plot else None)
    args.gt_cache = os.path.abspath(args.gt_cache)
    os.makedirs(args.gt_cache, exist_ok=True)
    os.environ["GT_CACHE_ROOT"] = os.path.abspath(args.gt_cache)  # read when gt4py is imported
    try:
        import gt4py.cartesian.gtscript  # noqa: F401
    except ImportError:
        raise SystemExit("bench_pace.py needs gt4py (requirements-dev.txt)") from None
    import gridbuf.gt4py  # noqa: F401  registers the gridbuf:* backends

    print("# bench_pace.py: pace's stencils through GT4Py's backends\n")
    print_machine_info()
    print(f"- pace checkout: {root}")
    print(f"- tile: {NX} x {NY} x {NZ}, halo {HALO}, fields {_shape(('I', 'J', 'K'), HALO)}\n")

    _pace.install(root)
    defs = _pace.definitions(root)
    if args.only:
        want = set(args.only.split(","))
        defs = [d for d in defs if d.label in want or d.name in want or d.label.split(".", 2)[-1] in want]
    base = base_externals()

    record_path = os.path.join(args.gt_cache, "bench_pace_builds.json")
    record = json.load(open(record_path)) if os.path.exists(record_path) else {}
    # GT4Py builds its compiled backends with setuptools, whose package discovery looks at the
    # working directory: from the repository root it stops at `target/` and `crates/`.
    os.chdir(scratch_dir("bench_pace_"))

    # Part 1 ------------------------------------------------------------------------------------
    outcomes: list[Outcome] = []
    t_start = time.perf_counter()
    for i, d in enumerate(defs):
        o = run_definition(d, base, args.seed + i, record, record_path)
        outcomes.append(o)
        note = o.status if o.status != "ok" else f"{1e3 * o.first['gridbuf:cpu_kfirst']:.1f} ms"
        flag = "  MISMATCH" if o.mismatches else ""
        print(f"  [{i + 1}/{len(defs)}] {d.label}: {note}{flag}", file=sys.stderr, flush=True)
    print(f"(part 1 took {time.perf_counter() - t_start:.0f} s)\n", file=sys.stderr)
    ok = [o for o in outcomes if o.status == "ok"]

    print("## Correctness: gridbuf's first call against GT4Py numpy's, bit for bit\n")
    bad = [o for o in outcomes if o.mismatches]
    if not bad:
        print(f"All {len(ok)} definitions that ran: every written field identical on both gridbuf backends.\n")
    else:
        print(f"**{len(bad)} of {len(ok)} definitions differ from GT4Py numpy:**\n")
        for o in bad:
            for b, diffs in o.mismatches.items():
                for x in diffs:
                    print(f"- **{o.label}** on {b}: {x}")
        print()

    print("## Definition to first result\n")
    print(f"{len(outcomes)} definitions: {len(ok)} ran, {sum(o.status == 'refused' for o in outcomes)} refused, "
          f"{sum(o.status == 'failed' for o in outcomes)} failed.\n")
    for o in outcomes:
        if o.status != "ok":
            print(f"- {o.status}: {o.label}: {o.message}")
    print()
    rows = []
    for o in ok:
        rows.append([o.label, *(fmt_time(o.first[b], "ms") for b in (*GB, "numpy")), fmt_time(o.call_kfirst, "ms")])
    tot = {b: sum(o.first[b] for o in ok) for b in (*GB, "numpy")}
    rows.append(["**total**", *(fmt_time(tot[b], "ms") for b in (*GB, "numpy")), fmt_time(sum(o.call_kfirst for o in ok), "ms")])
    print(markdown_table(["definition", "gridbuf:cpu_kfirst ms", "gridbuf:cpu_ifirst ms", "GT4Py numpy ms (first build + call)", "gridbuf:cpu_kfirst one call ms"], rows))
    for b in GB:
        slowest = max(ok, key=lambda o: o.first[b]) if ok else None
        over = [o for o in ok if o.first[b] > TARGET_FIRST]
        print(f"\n{b}: slowest first result {slowest.label} {1e3 * slowest.first[b]:.1f} ms; "
              f"{len(over)} over {1e3 * TARGET_FIRST:.0f} ms ({', '.join(o.label for o in over) or 'none'}); "
              f"total {tot[b]:.2f} s (target {TARGET_TOTAL:.0f} s: {'met' if tot[b] <= TARGET_TOTAL else 'NOT met'}).")
    print()

    # Part 2 ------------------------------------------------------------------------------------
    top = sorted(ok, key=lambda o: o.call_kfirst, reverse=True)[: args.top]
    tier_two = [f"{b} tier two" for b in GB] if args.tier_two else []
    backends = [*GB, *tier_two, *([] if args.no_compiled else GT), "numpy"]
    in_place: dict[str, dict[str, float]] = {}
    tier_bits: dict[str, list[str]] = {}
    build_rows = []
    per_call: dict[str, dict[str, float]] = {}
    restore_time: dict[str, float] = {}
    witness: dict[tuple[str, str], list[str]] = {}
    for o in top:
        case = o.case
        if not args.no_compiled:
            row = [o.label]
            for b in GT:
                try:
                    t, first = build_compiled(o, b, record, record_path)
                    row.append(f"{t:.1f} ({first:.1f})")
                except Exception as exc:
                    row.append(f"failed: {type(exc).__name__}")
                    print(f"- {o.label} on {b}: build failed: {str(exc).splitlines()[0][:300]}", file=sys.stderr)
            build_rows.append(row)
        if args.tier_two:
            # Tier two: each gridbuf backend defined again with tier two compiled at definition
            # (its time: definition, compilation or cache hit, first call), its output against
            # tier one's on the same inputs.
            in_place[o.label] = {}
            for b, b2 in zip(GB, tier_two):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    st2, out2, t2 = define_env(lambda b=b: first_result(case, b), {"GRIDBUF_TIER2": "define"})
                o.stencils[b2] = st2
                in_place[o.label][b] = t2
                out1 = storages(case, b)
                call(o.stencils[b], case, out1)
                tier_bits.setdefault(o.label, []).append("; ".join(differences(case, out2, out1)) or "identical")
        cands, argsets = [], {}
        restores: dict[tuple[Any, ...], Candidate] = {}
        layouts: dict[str, tuple[Any, ...]] = {}
        compiled_out = None
        for b in backends:
            if b not in o.stencils:
                continue
            argsets[b] = storages(case, b.removesuffix(" tier two"))
            if b in GT:  # check the compiled backends' outputs too
                call(o.stencils[b], case, argsets[b])
                diff = differences(case, argsets[b], o.numpy_out)
                if diff:
                    o.mismatches[b] = diff
                if b == GT[0]:
                    compiled_out = argsets[b]
                argsets[b] = storages(case, b)
            st, a = o.stencils[b], argsets[b]
            cands.append(Candidate(b, (lambda st=st, a=a: timed_call(st, case, a))))
            # The copies alone, once per layout of the written fields.
            layout = written_layout(case, a)
            restores.setdefault(layout, Candidate(f"restore {len(restores)}", (lambda a=a: restore_written(case, a, floats=True))))
            layouts[b] = layout
        if compiled_out is not None:
            # The third witness where gridbuf and GT4Py numpy differ: GT4Py's compiled backend,
            # which calls the C library's math functions as gridbuf does, against gridbuf.
            for b in GB:
                out = storages(case, b)
                call(o.stencils[b], case, out)
                witness[(o.label, b)] = differences(case, out, compiled_out)
        res = {r.label: r.median for r in compare(cands + list(restores.values()), repeats=args.repeats, repeat_seconds=args.repeat_seconds)}
        per_call[o.label] = {b: res[b] - res[restores[layouts[b]].label] for b in layouts}
        restore_time[o.label] = max(res[c.label] for c in restores.values())
        print(f"  timed {o.label}", file=sys.stderr, flush=True)

    print(f"## Time per call, the {len(top)} definitions slowest on gridbuf:cpu_kfirst\n")
    print(f"Medians of {args.repeats} round-robin repeats of about {args.repeat_seconds} s, ms per call; before each call "
          "every field the definition writes is set back to its input, and those copies' median time (the last column, "
          "the largest over the layouts) is subtracted.\n")
    rows = []
    for o in top:
        m = per_call[o.label]
        best_gt = min((m[b] for b in GT if b in m), default=float("nan"))
        best_gb = min(m[b] for b in GB)
        best_t2 = [f"{min(m[b] for b in tier_two) / best_gt:.2f}" if best_gt == best_gt else "-"] if tier_two else []
        rows.append([o.label, *(fmt_time(m[b], "ms") if b in m else "-" for b in backends),
                     f"{best_gb / best_gt:.2f}" if best_gt == best_gt else "-", *best_t2, fmt_time(restore_time[o.label], "ms")])
    label_gb = "best gridbuf tier one" if tier_two else "best gridbuf"
    t2_head = ["best gridbuf tier two / best GT4Py compiled"] if tier_two else []
    print(markdown_table(["definition", *backends, f"{label_gb} / best GT4Py compiled", *t2_head, "copies subtracted"], rows))
    if tier_two:
        print("\nTier two: definition to tier two in place (definition, C compiled or found in the cache, "
              "first call), ms, and its outputs against tier one's on the same inputs, bit for bit:\n")
        rows = [[o.label, *(fmt_time(in_place[o.label][b], "ms") for b in GB), *tier_bits[o.label]] for o in top]
        print(markdown_table(["definition", *(f"{b} in place" for b in GB), *(f"{b} vs tier one" for b in GB)], rows))
    if build_rows:
        print("\nGT4Py's compiled builds, s: this run (first build, recorded in the cache):\n")
        print(markdown_table(["definition", *GT], build_rows))
    gt_bad = [(o, b) for o in top for b in GT if b in o.mismatches]
    if gt_bad:
        print("\nGT4Py's compiled backends against GT4Py numpy (not bit for bit):\n")
        for o, b in gt_bad:
            for x in o.mismatches[b]:
                print(f"- {o.label} on {b}: {x}")
    if witness:
        print(f"\ngridbuf against GT4Py's compiled {GT[0]}, bit for bit, on the same inputs:\n")
        rows = []
        for o in top:
            cells = []
            for b in GB:
                if (o.label, b) not in witness:
                    cells.append("-")
                    continue
                diff = witness[(o.label, b)]
                cells.append("identical" if not diff else "; ".join(diff))
            differs = "yes" if any(b in o.mismatches for b in GB) else "no"
            rows.append([o.label, differs, *cells])
        print(markdown_table(["definition", "gridbuf differs from numpy", *(f"{b} vs {GT[0]}" for b in GB)], rows))
    print()

    if plot_dir:
        shape = f"C48 tile {NX}x{NY}x{NZ}, halo {HALO}"
        _plot.bar_chart(
            _plot.path(plot_dir, __file__, "per_call"), benchmark="bench_pace.py",
            title=f"time per call, the {len(top)} pace definitions slowest on gridbuf", shape=shape,
            panels=[_plot.Panel({(o.label.split(".")[-1], b): per_call[o.label][b] for o in top for b in per_call[o.label]})],
            repeats=args.repeats,
        )  # fmt: skip
        _plot.bar_chart(
            _plot.path(plot_dir, __file__, "first_result"), benchmark="bench_pace.py",
            title=f"definition to first result, all {len(ok)} pace definitions together", shape=shape,
            panels=[_plot.Panel({("total", b): tot[b] for b in (*GB, "numpy")}, ylabel="time")],
            repeats=None, note="one run; sum over definitions of gtscript.stencil(...) and the first call",
        )  # fmt: skip


if __name__ == "__main__":
    main()
