"""One or more FV3 dynamical-core steps (PyFV3 on NDSL) with a GT4Py backend chosen by name.

Run under MPI with 6 ranks (one tile each, C12 unless ``--resolution`` says, 79 levels, the
baroclinic initial state)::

    mpiexec -n 6 python tests/integration/fv3_step.py --backend gridbuf:cpu_kfirst --out DIR

or in one process with ``--comm null`` (rank 0 of 6; NDSL's ``NullComm`` fills the halos it
would receive with zeros). Each rank writes ``DIR/state_rank{R}_step{N}.npz`` (every quantity of
the dycore state after step N, its compute domain) and rank 0 writes
``DIR/timing.json`` (seconds: imports, building the dycore, each step; per step, rank 0's CPU
seconds (user, system) and minor page faults; the objects Python's garbage collector tracks after
the build, and its collections during the steps); with more than one
step, each rank writes ``DIR/stencil_times_rank{R}.json`` (seconds per later step, per stencil
class, from GT4Py's ``exec_info`` that NDSL's stencils fill) and ``DIR/stencil_cpu_rank{R}.json``
(the same calls' thread CPU seconds per later step), and always
``DIR/stencil_cpu_first_rank{R}.json`` (the first step's thread CPU seconds per stencil class,
its first calls included); with ``--compare-stencils``,
``DIR/stencils_rank{R}.json`` (per stencil: calls whose results differ from GT4Py numpy's on
copies of the same arguments, bit for bit).

NDSL and PyFV3 are not dependencies of gridbuf: they must be importable (see
``tests/integration/README.md`` for the versions this was run with). ``gridbuf:`` backend names
are registered by importing ``gridbuf.gt4py``; NDSL hands the name to GT4Py unchanged.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import resource
import time
from datetime import timedelta
from pathlib import Path

T_START = time.perf_counter()

import numpy as np  # noqa: E402

# The dycore's configuration: C12, 79 levels, one tile per rank; the namelist of PyFV3's own
# one-step MPI test (tests/mpi/test_doubly_periodic.py) with the baroclinic case.
CONFIG = dict(
    npx=13, npy=13, npz=79, ntiles=6, nwat=6, dt_atmos=225, a_imp=1.0, beta=0.0, consv_te=False,
    d2_bg=0.0, d2_bg_k1=0.2, d2_bg_k2=0.1, d4_bg=0.15, d_con=1.0, d_ext=0.0, dddmp=0.5,
    delt_max=0.002, do_sat_adj=True, do_vort_damp=True, fill=True, hord_dp=6, hord_mt=6,
    hord_tm=6, hord_tr=8, hord_vt=6, hydrostatic=False, k_split=1, ke_bg=0.0, kord_mt=9,
    kord_tm=-9, kord_tr=9, kord_wz=9, n_split=1, nord=3, p_fac=0.05, rf_fast=True,
    rf_cutoff=3000.0, tau=10.0, vtdm4=0.06, z_tracer=True, do_qa=True,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", required=True, help="GT4Py backend name, e.g. numpy or gridbuf:cpu_kfirst")
    parser.add_argument("--out", required=True, type=Path, help="directory for the states and timings")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--eta", type=Path, default=Path(os.environ.get("FV3_ETA_FILE", "eta79.nc")),
                        help="NDSL's tests/data/eta/eta79.nc (default $FV3_ETA_FILE)")
    parser.add_argument("--resolution", type=int, default=12, help="cells per tile edge: 12 for C12 (default), 48 for C48, ...")
    parser.add_argument("--comm", choices=["mpi", "null"], default="mpi")
    parser.add_argument("--compare-stencils", action="store_true",
                        help="run every stencil call with GT4Py numpy too, on copies of its arguments, and write "
                             "DIR/stencils_rank{R}.json: per stencil, the calls and points whose results differ")
    args = parser.parse_args()

    if args.backend.startswith("gridbuf:"):
        import gridbuf.gt4py  # noqa: F401 - registers the gridbuf:* backend names in GT4Py

    import pyFV3.initialization.test_cases.initialize_baroclinic as baroclinic_init
    from ndsl import (
        CubedSphereCommunicator,
        CubedSpherePartitioner,
        GridIndexing,
        MPIComm,
        QuantityFactory,
        StencilConfig,
        StencilFactory,
        SubtileGridSizer,
        TilePartitioner,
    )
    from ndsl.comm.null_comm import NullComm
    from ndsl.dsl.stencil_config import CompilationConfig
    from ndsl.grid import DampingCoefficients, GridData, MetricTerms
    from pyFV3 import DynamicalCore, DynamicalCoreConfig

    t_imported = time.perf_counter()
    config = DynamicalCoreConfig(layout=(1, 1), **{**CONFIG, "npx": args.resolution + 1, "npy": args.resolution + 1})
    comm = MPIComm() if args.comm == "mpi" else NullComm(rank=0, total_ranks=6)
    partitioner = CubedSpherePartitioner(TilePartitioner(config.layout))
    communicator = CubedSphereCommunicator(comm, partitioner)
    rank = communicator.rank
    stencil_config = StencilConfig(
        compilation_config=CompilationConfig(
            backend=args.backend, rebuild=False, validate_args=True, communicator=communicator
        ),
        compare_to_numpy=args.compare_stencils,
    )
    differences: dict[str, dict[str, float]] = {}
    if args.compare_stencils:
        import ndsl.dsl.stencil

        # NDSL's compare-to-numpy mode runs each call twice; its report counts relative errors
        # above 1e-14 (and uses np.product, gone in NumPy 2): this one counts every bit.
        ndsl.dsl.stencil.report_difference = lambda a, k, a2, k2, name, gt_id: record_difference(
            differences, name, [*a, *k.values()], [*a2, *k2.values()]
        )
    sizer = SubtileGridSizer.from_tile_params(
        nx_tile=config.npx - 1, ny_tile=config.npy - 1, nz=config.npz, n_halo=3,
        extra_dim_lengths={}, layout=config.layout, tile_partitioner=partitioner.tile,
        tile_rank=communicator.tile.rank,
    )
    grid_indexing = GridIndexing.from_sizer_and_communicator(sizer=sizer, comm=communicator)
    quantity_factory = QuantityFactory.from_backend(sizer=sizer, backend=args.backend)
    metric_terms = MetricTerms(
        quantity_factory=quantity_factory, communicator=communicator, eta_file=str(args.eta)
    )
    grid_data = GridData.new_from_metric_terms(metric_terms)
    state = baroclinic_init.init_baroclinic_state(
        grid_data=grid_data, quantity_factory=quantity_factory, adiabatic=config.adiabatic,
        hydrostatic=config.hydrostatic, moist_phys=config.moist_phys, comm=communicator,
    )
    stencil_factory = StencilFactory(config=stencil_config, grid_indexing=grid_indexing)
    t_setup = time.perf_counter()
    dycore = DynamicalCore(
        comm=communicator, grid_data=grid_data, stencil_factory=stencil_factory,
        quantity_factory=quantity_factory,
        damping_coefficients=DampingCoefficients.new_from_metric_terms(metric_terms),
        config=config, phis=state.phis, state=state, timestep=timedelta(seconds=config.dt_atmos),
    )
    t_built = time.perf_counter()

    args.out.mkdir(parents=True, exist_ok=True)
    step_seconds = []
    states: list[dict[str, np.ndarray]] = []
    # GT4Py's aggregated execution info, which NDSL's stencils fill at every call: per stencil
    # class, its total call time (the whole call, argument handling included: GT4Py's
    # "run_time" leaves that out for its own backends, not for gridbuf's, whose binding and run
    # are one native call). The time per later step is its growth after the first step.
    exec_info = stencil_factory.timing_collector.exec_info
    after_first: dict[str, float] = {}
    # The same calls' thread CPU time: with more ranks than cores, a call's wall clock also
    # counts the time its rank waited for a core.
    cpu = thread_cpu_per_stencil()
    cpu_after_first: dict[str, float] = {}
    # Python's garbage collector during the steps: a full collection walks every object the
    # process keeps (the engines' caches included) and lands inside some stencil call.
    gc_objects = len(gc.get_objects())
    gc_pauses = gc_pause_recorder()
    # Per step, this rank's CPU seconds (user, system) and minor page faults: memory an engine
    # touches for the first time shows as system time and faults in the first step.
    step_usage: list[dict[str, float]] = []
    for step in range(1, args.steps + 1):
        comm.Barrier() if args.comm == "mpi" else None
        t0 = time.perf_counter()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        dycore.step_dynamics(state)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        comm.Barrier() if args.comm == "mpi" else None
        step_seconds.append(time.perf_counter() - t0)
        step_usage.append({
            "user_s": r1.ru_utime - r0.ru_utime,
            "system_s": r1.ru_stime - r0.ru_stime,
            "minor_faults": r1.ru_minflt - r0.ru_minflt,
        })
        if step == 1:
            after_first = {k: v["total_call_time"] for k, v in exec_info.items() if isinstance(v, dict) and "total_call_time" in v}
            cpu_after_first = dict(cpu)
        # The compute domain of every quantity (halos are refilled by the next step's halo
        # updates; the padding beyond them is never written), written after the last step:
        # files written between steps slowed later steps' own writes (NDSL's log lines) by up
        # to a second while the system wrote them back.
        quantities = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
        states.append({
            name: np.array(q.data[tuple(slice(o, o + e) for o, e in zip(q.origin, q.extent))])
            for name, q in quantities.items()
            if hasattr(q, "origin")
        })
    for step, arrays in enumerate(states, start=1):
        np.savez(args.out / f"state_rank{rank}_step{step}.npz", **arrays)
    if rank == 0:
        timing = {
            "backend": args.backend,
            "comm": args.comm,
            "imports_s": t_imported - T_START,
            "setup_s": t_setup - t_imported,
            "build_dycore_s": t_built - t_setup,
            "steps_s": step_seconds,
            "step_usage": step_usage,
            # The largest resident memory of this rank's process so far (Linux reports KiB).
            "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "gc_objects_after_build": gc_objects,
            # Per generation: collections during the steps and the seconds they took.
            "gc_collections": [len(p) for p in gc_pauses],
            "gc_seconds": [sum(p) for p in gc_pauses],
        }
        (args.out / "timing.json").write_text(json.dumps(timing, indent=1))
        print(json.dumps(timing))
    if args.compare_stencils:
        (args.out / f"stencils_rank{rank}.json").write_text(json.dumps(differences, indent=1))
    if args.steps > 1:
        per_step = {
            k: (v["total_call_time"] - after_first.get(k, 0.0)) / (args.steps - 1)
            for k, v in exec_info.items()
            if isinstance(v, dict) and "total_call_time" in v
        }
        (args.out / f"stencil_times_rank{rank}.json").write_text(json.dumps(per_step, indent=1))
        cpu_per_step = {k: (v - cpu_after_first.get(k, 0.0)) / (args.steps - 1) for k, v in cpu.items()}
        (args.out / f"stencil_cpu_rank{rank}.json").write_text(json.dumps(cpu_per_step, indent=1))
    # The first step's, apart: it holds each stencil's first calls (what an engine prepares then).
    (args.out / f"stencil_cpu_first_rank{rank}.json").write_text(json.dumps(cpu_after_first, indent=1))


def gc_pause_recorder() -> list[list[float]]:
    """Records every collection of Python's garbage collector from now on: per generation, the
    wall-clock seconds of each."""
    pauses: list[list[float]] = [[], [], []]
    started = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses[info["generation"]].append(time.perf_counter() - started[0])

    gc.callbacks.append(on_gc)
    return pauses


def thread_cpu_per_stencil() -> dict[str, float]:
    """Per stencil class (GT4Py's ``exec_info`` keys), the calling thread's CPU seconds in the
    calls of NDSL's ``FrozenStencil`` from now on, accumulated in the returned dict."""
    from ndsl.dsl.stencil import FrozenStencil

    out: dict[str, float] = {}
    call = FrozenStencil.__call__

    def timed(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        t = time.thread_time()
        try:
            call(self, *args, **kwargs)
        finally:
            name = type(self.stencil_object).__name__
            out[name] = out.get(name, 0.0) + time.thread_time() - t

    FrozenStencil.__call__ = timed
    return out


def record_difference(out: dict, name: str, got: list, want: list) -> None:
    """Adds one call of stencil `name` to `out`: its array arguments after the call (`got`)
    against GT4Py numpy's on copies (`want`), bit for bit (NaNs equal)."""
    entry = out.setdefault(name, {"calls": 0, "calls_differing": 0, "points_differing": 0, "max_abs": 0.0, "max_rel": 0.0})
    entry["calls"] += 1
    differing = False
    for g, w in zip(got, want):
        g, w = getattr(g, "data", g), getattr(w, "data", w)
        if not isinstance(g, np.ndarray) or g.dtype.kind not in "fiub":
            continue
        same = (g == w) | (np.isnan(g) & np.isnan(w)) if g.dtype.kind == "f" else g == w
        n = int((~same).sum())
        if n:
            differing = True
            d = np.abs(g.astype(np.float64) - w.astype(np.float64))[~same]
            scale = np.abs(w.astype(np.float64))[~same]
            entry["points_differing"] += n
            entry["max_abs"] = max(entry["max_abs"], float(np.nanmax(d)))
            entry["max_rel"] = max(entry["max_rel"], float(np.nanmax(d / np.where(scale > 0, scale, 1.0))))
    entry["calls_differing"] += int(differing)


if __name__ == "__main__":
    main()
