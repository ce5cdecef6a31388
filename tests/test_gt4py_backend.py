"""gridbuf as a GT4Py backend (``gridbuf.gt4py``): definitions written against
``gt4py.cartesian.gtscript`` and built by GT4Py's own ``gtscript.stencil`` under a gridbuf backend
name compute, bit for bit, what GT4Py's numpy backend computes, through every entry of GT4Py's
``StencilObject`` (``__call__``, ``run``, ``freeze``, ``lazy_stencil``); they report GT4Py's
``field_info``, ``parameter_info`` and ``domain_info``; storages of the gridbuf names have the
strides of the matching GT4Py layout; bad definitions raise GT4Py's definition error and bad
calls write nothing."""


import os
import subprocess
import sys

import numpy as np
import pytest
from _scratch import scratch_dir

pytest.importorskip("gt4py.cartesian")
os.environ.setdefault("GT_CACHE_ROOT", scratch_dir("gridbuf_test_gt4py_backend_"))

import gt4py.storage as gt_storage  # noqa: E402
from gt4py.cartesian import gtscript  # noqa: E402
from gt4py.cartesian.frontend.exceptions import GTScriptDefinitionError  # noqa: E402
from gt4py.cartesian.gtscript import (  # noqa: E402
    __INLINED,
    BACKWARD,
    FORWARD,
    IJ,
    IJK,
    PARALLEL,
    Field,
    I,
    J,
    computation,
    horizontal,
    interval,
    region,
)

import gridbuf.gt4py  # noqa: E402, F401 - registers the backends
from gridbuf.errors import GridbufValueError  # noqa: E402

NAMES = ["gridbuf:cpu_ifirst", "gridbuf:cpu_kfirst", "gridbuf:cpu_jfirst"]
F64 = Field[np.float64]
F3 = Field[IJK, np.float64]


@gtscript.function
def lap(a):
    return a[1, 0, 0] + a[-1, 0, 0] + a[0, 1, 0] + a[0, -1, 0] - 4.0 * a[0, 0, 0]


def laplacian(inp: F64, out: F64):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        out = lap(inp)  # noqa: F841


def hdiff(inp: F3, coeff: F3, out: F3, *, alpha: float):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        lp = lap(inp)
        flx = lp[1, 0, 0] - lp[0, 0, 0]
        if flx * (inp[1, 0, 0] - inp[0, 0, 0]) > 0:
            flx = 0.0
        fly = lp[0, 1, 0] - lp[0, 0, 0]
        if fly * (inp[0, 1, 0] - inp[0, 0, 0]) > 0:
            fly = 0.0
        out = inp - alpha * coeff * (flx - flx[-1, 0, 0] + fly - fly[0, -1, 0])  # noqa: F841


def tridiagonal(a: F64, b: F64, c: F64, d: F64, x: F64):  # type: ignore[valid-type]
    with computation(FORWARD):
        with interval(0, 1):
            c = c / b
            d = d / b
        with interval(1, None):
            m = 1.0 / (b - a * c[0, 0, -1])
            c = c * m
            d = (d - a * d[0, 0, -1]) * m
    with computation(BACKWARD):
        with interval(-1, None):
            x = d  # noqa: F841
        with interval(0, -1):
            x = d - c * x[0, 0, 1]  # noqa: F841


def edges(q: F64, s2d: Field[IJ, np.float64], out: F64, unused: F64, *, w: float, spare: float):  # type: ignore[valid-type]
    from __externals__ import i_start, j_end

    with computation(PARALLEL), interval(1, None):
        out = q[0, 0, -1] + s2d  # noqa: F841
        with horizontal(region[i_start, :], region[:, j_end - 1]):
            out = w * (q[1, 0, 0] - q[-1, 0, -1])  # noqa: F841


def shifted(inp: F64, out: F64):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        out = inp[1, 0, 1] + inp[2, 1, 1]  # noqa: F841


CASES = {
    "shifted": (shifted, {}, (0, 0, 0), (5, 4, 3)),
    "laplacian": (laplacian, {}, (1, 1, 0), (6, 5, 4)),
    "hdiff": (hdiff, {}, (2, 2, 0), (6, 5, 4)),
    "tridiagonal": (tridiagonal, {}, (0, 0, 0), (4, 3, 6)),
    "edges": (edges, {"i_start": I[0] + 1, "j_end": J[-1]}, (1, 1, 1), (6, 5, 3)),
}


def _inputs(definition, shape, seed, backend):
    """Random arguments for `definition` as storages of `backend`, and its scalars."""
    rng = np.random.default_rng(seed)
    arrays, scalars = {}, {}
    for name, ann in definition.__annotations__.items():
        if name == "return":
            continue
        if hasattr(ann, "axes"):
            axes = "".join(a.name for a in ann.axes)
            s = tuple(n for n, ax in zip(shape, "IJK") if ax in axes)
            values = rng.uniform(0.5, 2.0, s)
            arrays[name] = gt_storage.from_array(values, np.float64, backend=backend, dimensions=tuple(axes))
        else:
            scalars[name] = float(rng.uniform(0.1, 0.3))
    return arrays, scalars


def _reference(case, seed):
    definition, externals, origin, domain = CASES[case]
    st = gtscript.stencil(backend="numpy", definition=definition, externals=externals, rebuild=True)
    shape = tuple(o + n + 2 for o, n in zip(origin, domain))
    arrays, scalars = _inputs(definition, shape, seed, "numpy")
    st(**arrays, **scalars, origin=origin, domain=domain)
    return {k: np.asarray(v) for k, v in arrays.items()}


@pytest.mark.parametrize("backend", NAMES)
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("entry", ["call", "run", "freeze", "lazy"])
def test_matches_gt4py_numpy_bit_for_bit(backend, case, entry):
    definition, externals, origin, domain = CASES[case]
    shape = tuple(o + n + 2 for o, n in zip(origin, domain))
    arrays, scalars = _inputs(definition, shape, 7, backend)
    if entry == "lazy":
        st = gtscript.lazy_stencil(backend=backend, definition=definition, externals=externals)
    else:
        st = gtscript.stencil(backend=backend, definition=definition, externals=externals)
    if entry in ("call", "lazy"):
        st(**arrays, **scalars, origin=origin, domain=domain)
    else:
        origins = {name: tuple(o for o, ax in zip(origin, "IJK") if ax in info.axes) for name, info in st.field_info.items()}
        if entry == "run":
            st.run(_domain_=domain, _origin_=origins, exec_info=None, **arrays, **scalars)
        else:
            st.freeze(origin=origins, domain=domain)(**arrays, **scalars)
    ref = _reference(case, 7)
    for name, want in ref.items():
        np.testing.assert_array_equal(np.asarray(arrays[name]), want, err_msg=f"{case}: field {name!r} through {entry} on {backend}")


@pytest.mark.parametrize("backend", NAMES)
def test_negative_origins_match_gt4py_numpy(backend):
    """A field read only after its origin (GT4Py's boundary ((-1, 2), (0, 1), (-1, 1))) takes
    the origin GT4Py allows, as low as (-1, 0, -1), and computes what GT4Py's numpy backend
    computes; one lower is refused, as GT4Py refuses it, and writes nothing."""
    results = {}
    for b in ("numpy", backend):
        st = gtscript.stencil(backend=b, definition=shifted, rebuild=True)
        assert st.field_info["inp"].boundary == ((-1, 2), (0, 1), (-1, 1))
        rng = np.random.default_rng(5)
        inp = gt_storage.from_array(rng.uniform(size=(4, 4, 3)), np.float64, backend=b, aligned_index=(0, 0, 0))
        out = gt_storage.zeros((3, 3, 2), np.float64, backend=b, aligned_index=(0, 0, 0))
        st(inp, out, origin={"inp": (-1, 0, -1), "out": (0, 0, 0)})
        results[b] = np.asarray(out).copy()
        with pytest.raises(ValueError):
            st(inp, out, origin={"inp": (-2, 0, -1), "out": (0, 0, 0)})
        np.testing.assert_array_equal(np.asarray(out), results[b])
    np.testing.assert_array_equal(results[backend], results["numpy"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_infos_are_gt4pys(case):
    """field_info (access kinds, I/J/K boundaries, axes, data dims, dtypes), parameter_info and
    domain_info as GT4Py's numpy backend reports them."""
    definition, externals, _, _ = CASES[case]
    gt = gtscript.stencil(backend="numpy", definition=definition, externals=externals)
    gb = gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=definition, externals=externals)
    assert gb.field_info == gt.field_info
    assert gb.parameter_info == gt.parameter_info
    assert gb.domain_info == gt.domain_info
    assert list(gb.field_info) == list(gt.field_info)


@pytest.mark.parametrize("backend, gt_name", [("gridbuf:cpu_ifirst", "gt:cpu_ifirst"), ("gridbuf:cpu_kfirst", "gt:cpu_kfirst"), ("gridbuf:cpu_jfirst", "dace:cpu")])
@pytest.mark.parametrize("dims", [("I", "J", "K"), ("I", "J"), ("K",), ("I", "J", "K", "0")])
def test_storage_has_the_strides_of_the_gt4py_layout(backend, gt_name, dims):
    shape = (5, 4, 3, 2)[: len(dims)]
    ours = gt_storage.zeros(shape, np.float64, backend=backend, dimensions=dims)
    theirs = gt_storage.zeros(shape, np.float64, backend=gt_name, dimensions=dims)
    assert ours.strides == theirs.strides


@pytest.mark.parametrize("backend, gt_name", [("gridbuf:cpu_ifirst", "gt:cpu_ifirst"), ("gridbuf:cpu_kfirst", "gt:cpu_kfirst"), ("gridbuf:cpu_jfirst", "dace:cpu")])
@pytest.mark.parametrize("dims", [("I", "J", "K"), ("K", "J", "I"), ("I", "K"), ("I", "J", "K", "0"), ("x", "y", "z"), ("8", "6", "6"), ("I", "J", "K", "n", "n")])
def test_storage_info_takes_any_dimension_names_as_gt4py(backend, gt_name, dims):
    """The backend's storage_info maps any dimension names as GT4Py's backend of the same layout
    does: names other than I, J, K are data dimensions, repeated or not. NDSL's ``Quantity`` asks
    ``is_optimal_layout(data, ("8", "6", "6"))`` for a field whose dims are not spatial; gridbuf's
    preset ``layout_map`` refused that ("dimension '6' appears more than once")."""
    from gt4py.cartesian import backend as gt_backend

    ours, theirs = gt_backend.from_name(backend).storage_info, gt_backend.from_name(gt_name).storage_info
    assert ours["layout_map"](dims) == theirs["layout_map"](dims)
    data = np.zeros((4, 3, 2, 2, 2)[: len(dims)])
    for array in (data, np.asfortranarray(data)):
        assert ours["is_optimal_layout"](array, dims) == theirs["is_optimal_layout"](array, dims)
    shape = (5, 4, 3, 2, 2)[: len(dims)]
    try:  # GT4Py's allocation takes I, J, K and digits only: then both refuse alike
        b = gt_storage.zeros(shape, np.float64, backend=gt_name, dimensions=dims)
    except ValueError as exc:
        with pytest.raises(type(exc)):
            gt_storage.zeros(shape, np.float64, backend=backend, dimensions=dims)
    else:
        assert gt_storage.zeros(shape, np.float64, backend=backend, dimensions=dims).strides == b.strides


def test_exec_info_timings():
    st = gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=laplacian)
    a = np.random.default_rng(0).uniform(size=(6, 6, 3))
    out = np.zeros_like(a)
    info: dict = {"__aggregate_data": True}
    st(a, out, origin=(1, 1, 0), domain=(4, 4, 3), exec_info=info)
    for key in ("call_start_time", "call_end_time", "run_start_time", "run_end_time", "call_run_start_time", "call_run_end_time"):
        assert isinstance(info[key], float), key
    assert info["call_start_time"] <= info["run_start_time"] <= info["run_end_time"] <= info["call_end_time"]
    assert info[type(st).__name__]["ncalls"] == 1


@pytest.mark.parametrize("backend", ["gridbuf:cpu_kfirst", "numpy"])
def test_exec_info_reports_the_domain_and_origins_as_gt4py(backend):
    """The domain and origins GT4Py's own backends report; gridbuf's are the binder's."""
    st = gtscript.stencil(backend=backend, definition=laplacian)
    a = np.random.default_rng(0).uniform(size=(8, 7, 3))
    out = np.zeros_like(a)
    reports = []
    for origin, domain in [((1, 1, 0), None), ({"_all_": (1, 2, 0), "out": (2, 2, 1)}, (4, 3, 2)), ({"inp": (1, 1, 0), "out": (1, 1, 0)}, None)]:
        info: dict = {}
        st(inp=a, out=out, origin=origin, domain=domain, exec_info=info)
        reports.append((tuple(info["domain"]), {k: tuple(v) for k, v in info["origin"].items()}))
    assert reports[0] == ((6, 5, 3), {"_all_": (1, 1, 0), "inp": (1, 1, 0), "out": (1, 1, 0)})
    assert reports[1] == ((4, 3, 2), {"_all_": (1, 2, 0), "inp": (1, 2, 0), "out": (2, 2, 1)})
    assert reports[2] == ((6, 5, 3), {"inp": (1, 1, 0), "out": (1, 1, 0)})


@pytest.mark.parametrize("backend", NAMES)
def test_a_field_in_another_layout_warns_in_gt4pys_words(backend):
    st = gtscript.stencil(backend=backend, definition=laplacian)
    shape = (6, 6, 3)
    good = gt_storage.zeros(shape, np.float64, backend=backend)
    bad = np.ones(shape, order="F" if backend == "gridbuf:cpu_kfirst" else "C")
    with pytest.warns(UserWarning, match="The layout of the field 'inp' is not recommended for this backend.This may lead"):
        st(bad, good, origin=(1, 1, 0))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st(gt_storage.ones(shape, np.float64, backend=backend), good, origin=(1, 1, 0))  # the backend's own layout: silent


def test_a_refused_construct_raises_gt4pys_definition_error_naming_the_line():
    def bad(a: F64, b: F64):  # type: ignore[valid-type]
        with computation(PARALLEL), interval(...):
            b = a[0, 0, 0] // 2.0  # noqa: F841 - GT4Py has no //

    with pytest.raises(GTScriptDefinitionError) as err:
        gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=bad)
    assert isinstance(err.value, ValueError) and isinstance(err.value, GridbufValueError)
    assert "floor division" in str(err.value)
    assert f"line {bad.__code__.co_firstlineno + 2}" in str(err.value)


@pytest.mark.parametrize("entry", ["call", "run"])
def test_a_bad_call_writes_nothing(entry):
    st = gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=laplacian)
    a = np.random.default_rng(0).uniform(size=(6, 6, 3))
    out = np.full((6, 6, 3), 7.0)
    with pytest.raises(ValueError, match="domain|bounds|fit|out"):
        if entry == "call":
            st(a, out, origin=(1, 1, 0), domain=(5, 5, 3))
        else:
            st.run(_domain_=(5, 5, 3), _origin_={"inp": (1, 1, 0), "out": (1, 1, 0)}, exec_info=None, inp=a, out=out)
    assert (out == 7.0).all()


def test_float32_literals_by_type_keyed_dtypes():
    """NDSL's ``dtypes={float: np.float32, int: np.int32}``: literals of those Python types take
    those dtypes (GT4Py's rule), so ``a + 0.1`` adds float32(0.1)."""

    def lit(a: F64, b: F64, c: Field[np.int64]):  # type: ignore[valid-type]
        with computation(PARALLEL), interval(...):
            b = a + 0.1  # noqa: F841
            c = 2147483647 + 1  # noqa: F841 - int32 wraps

    dtypes = {float: np.float32, int: np.int32}
    outs = []
    for backend in ("numpy", "gridbuf:cpu_kfirst"):
        st = gtscript.stencil(backend=backend, definition=lit, dtypes=dtypes, rebuild=True)
        a, b, c = np.ones((2, 2, 2)), np.zeros((2, 2, 2)), np.zeros((2, 2, 2), np.int64)
        with np.errstate(all="ignore"):
            st(a, b, c)
        outs.append((b.copy(), c.copy()))
    np.testing.assert_array_equal(outs[1][0], outs[0][0])
    np.testing.assert_array_equal(outs[1][1], outs[0][1])
    assert outs[1][0][0, 0, 0] == 1.0 + float(np.float32(0.1))


def test_nothing_is_written_to_disk(tmp_path):
    code = (
        "import os, numpy as np\n"
        "from gt4py.cartesian import gtscript\n"
        "import gridbuf.gt4py\n"
        "def d(a: gtscript.Field[np.float64], b: gtscript.Field[np.float64]):\n"
        "    with computation(PARALLEL), interval(...):\n"
        "        b = a * 2.0\n"
        "st = gtscript.stencil(backend='gridbuf:cpu_ifirst', definition=d)\n"
        "a = np.ones((3, 3, 3)); b = np.zeros_like(a); st(a, b)\n"
        "assert (b == 2.0).all()\n"
        "print(sorted(os.listdir('.')))\n"
    )
    env = dict(os.environ, GT_CACHE_ROOT=str(tmp_path / "cache"))
    (tmp_path / "d.py").write_text("from gt4py.cartesian.gtscript import PARALLEL, computation, interval\n" + code)
    out = subprocess.run([sys.executable, "d.py"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['d.py']"


def test_import_gridbuf_imports_no_gt4py():
    code = "import sys, gridbuf, gridbuf.gtscript; assert 'gt4py' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_gt4py_build_options_are_taken():
    """``name=``, ``rebuild=``, ``format_source=``, ``oir_pipeline=`` and ``build_info=``: taken
    without a warning (gridbuf has no OIR pipeline, build step or cache for them to change)."""
    import warnings

    from gt4py.cartesian.gtc.passes.oir_pipeline import DefaultPipeline

    info: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st = gtscript.stencil(
            backend="gridbuf:cpu_ifirst",
            definition=laplacian,
            name="my.module.lap",
            rebuild=True,
            format_source=False,
            oir_pipeline=DefaultPipeline(),
            build_info=info,
        )
    assert st.options["name"] == "lap" and st.options["module"] == "my.module"
    # GT4Py's class name: name, backend and fingerprint (equal for an equal stencil, else not).
    assert type(st).__name__.startswith("lap____gridbufcpu_ifirst_")
    again = gtscript.stencil(backend="gridbuf:cpu_ifirst", definition=laplacian, name="other.lap", rebuild=True)
    other = gtscript.stencil(backend="gridbuf:cpu_ifirst", definition=hdiff, name="my.module.lap", rebuild=True)
    assert type(again).__name__ == type(st).__name__ != type(other).__name__
    assert info["parse_time"] > 0.0 and info["build_time"] == 0.0
    a = np.random.default_rng(1).uniform(size=(6, 6, 2))
    out = np.zeros_like(a)
    st(a, out, origin=(1, 1, 0), domain=(4, 4, 2))
    ref = np.zeros_like(a)
    gtscript.stencil(backend="numpy", definition=laplacian)(a, ref, origin=(1, 1, 0), domain=(4, 4, 2))
    np.testing.assert_array_equal(out, ref)


def test_unknown_backend_option_warns_as_gt4py():
    with pytest.warns(RuntimeWarning, match="Unknown options"):
        gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=laplacian, no_such_option=1)


def test_gridbuf_allocations_take_the_backend_names():
    import gridbuf as gb

    for name, gt_name in (("gridbuf:cpu_ifirst", "gt:cpu_ifirst"), ("gridbuf:cpu_kfirst", "gt:cpu_kfirst")):
        assert gb.zeros((5, 4, 3), backend=name).strides == gb.zeros((5, 4, 3), backend=gt_name).strides


def _with_defaults(arg1: F64, arg2: F64, arg3: F64 = None, *, par1: float, par2: float = 7.0, par3: float = None):  # type: ignore[valid-type, assignment]
    from __externals__ import USE_ARG3

    with computation(PARALLEL), interval(...):
        if __INLINED(USE_ARG3):
            arg1 = arg2 + arg3 + par1 + par2  # noqa: F841
        else:
            arg1 = arg2 + par1 + par2  # noqa: F841


@pytest.mark.parametrize("backend", ["numpy", "gridbuf:cpu_kfirst"])
def test_default_parameters_may_be_left_out(backend):
    """A parameter left out takes the definition's default (GT4Py's
    test_call_interface::test_default_arguments); one without a default is required, used or
    not."""
    st = gtscript.stencil(backend=backend, definition=_with_defaults, externals={"USE_ARG3": False}, rebuild=True)
    a1, a2 = np.zeros((3, 3, 2)), np.full((3, 3, 2), 1.0)
    st(a1, a2, par1=2.0)
    assert (a1 == 1.0 + 2.0 + 7.0).all()
    st(a1, a2, par1=2.0, par2=3.0)
    assert (a1 == 6.0).all()
    with pytest.raises(TypeError):
        st(a1, par1=2.0)


def test_a_field_without_effect_reports_its_info():
    """A stage without effect (GT4Py's test_stage_without_effect) builds and reports field_info."""

    def no_effect(field_a: F64):  # type: ignore[valid-type]
        with computation(PARALLEL), interval(...):
            field_c = field_a  # noqa: F841

    st = gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=no_effect)
    assert set(st.field_info) == {"field_a"}
    st(np.zeros((2, 2, 2)))


def test_build_info_times():
    info: dict = {}
    gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=laplacian, build_info=info, rebuild=True)
    assert info["parse_time"] > 0.0 and info["module_time"] > 0.0


def alias_region(q_in: F64, q_out: F64):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        q_out = q_in + 1.0  # noqa: F841
        with horizontal(region[I[0], :]):
            q_out = q_in * 3.0  # noqa: F841


def alias_forward(q_in: F64, q_out: F64, w: F64):  # type: ignore[valid-type]
    with computation(FORWARD), interval(1, None):
        q_out = q_in[0, 0, -1] + w  # noqa: F841


def alias_race(q_in: F64, q_out: F64):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        q_out = q_in[1, 0, 0]  # noqa: F841


def alias_corners(q_in: F64, q_out: F64):  # type: ignore[valid-type]
    # PyFV3's uc_contra_corners(..., uc_contra, uc_contra, ...): each corner's region reads
    # points no region before it writes (on a domain wide enough).
    with computation(PARALLEL), interval(...):
        with horizontal(region[I[0], J[0]]):
            q_out = q_in[1, 1, 0] + q_in[0, 1, 0]  # noqa: F841
        with horizontal(region[I[-1], J[-1]]):
            q_out = q_in[-1, -1, 0] * 2.0  # noqa: F841


@gtscript.function
def alias_fill(q, q_corner):
    # NDSL's fill_corners_2cells_x through PyFV3's fill_corners_delp_pt_w(delp, ..., delp, ...):
    # reads at offsets into a function local, then one write of the whole domain.
    with horizontal(region[I[0], J[0]]):
        q = q_corner[0, 1, 0] * 1.0
    with horizontal(region[I[-1], J[-1]]):
        q = q_corner[-1, 0, 0] * 1.0
    return q


def alias_fill_corners(q_in: F64, q_out: F64):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        q_out = alias_fill(q_in, q_in)  # noqa: F841


def alias_read_after_write(q_in: F64, q_out: F64):  # type: ignore[valid-type]
    with computation(PARALLEL), interval(...):
        q_out = q_in * 2.0  # noqa: F841
        with horizontal(region[I[0], :]):
            q_out = q_in[1, 0, 0]  # noqa: F841


# (definition, origin, domain): the one array read where no statement before wrote it.
ONE_ARRAY_CASES = {
    "region": (alias_region, (1, 1, 0), (4, 3, 4)),
    "forward": (alias_forward, (1, 1, 0), (4, 3, 4)),
    "same statement": (alias_race, (1, 1, 0), (4, 3, 4)),
    "corners": (alias_corners, (1, 1, 0), (4, 3, 4)),
    "fill corners": (alias_fill_corners, (1, 1, 0), (4, 3, 4)),
}


@pytest.mark.parametrize("backend", NAMES)
@pytest.mark.parametrize("case", list(ONE_ARRAY_CASES))
def test_one_array_as_input_and_output_matches_gt4py_numpy(backend, case):
    """NDSL calls ``stencil(q, q)``: GT4Py's numpy backend runs it on the one array, statement
    after statement. gridbuf runs the stencil with the two fields as one, or, where that program
    is refused and every read reaches only points no statement before it writes, the stencil
    with the read field bound to a copy taken at the call: both compute the same, bit for bit."""
    definition, origin, domain = ONE_ARRAY_CASES[case]
    rng = np.random.default_rng(7)
    q0 = rng.uniform(size=(6, 5, 4))
    extra = {"w": rng.uniform(size=(6, 5, 4))} if definition is alias_forward else {}
    want = q0.copy()
    gtscript.stencil(backend="numpy", definition=definition)(want, want, **extra, origin=origin, domain=domain)
    assert not np.array_equal(want, q0)
    got = gt_storage.from_array(q0, backend=backend)
    st = gtscript.stencil(backend=backend, definition=definition)
    st(got, got, **extra, origin=origin, domain=domain)
    np.testing.assert_array_equal(np.asarray(got), want)
    st(got, got, **extra, origin=origin, domain=domain)  # the variant is built once
    assert len(type(st)._gt_impl_._aliased) == 1


def alias_scaled(q_in: F64, q_out: F64):  # type: ignore[valid-type]
    from __externals__ import SCALE

    with computation(PARALLEL), interval(...):
        with horizontal(region[I[0], J[0]]):
            q_out = q_in[1, 1, 0] * SCALE  # noqa: F841


@pytest.mark.parametrize("case", ["region", "corners", "scaled"])
def test_stencils_lowered_alike_share_their_one_array_variant(case):
    """A model builds many stencil objects of one definition (PyFV3's dycore: 35 variants of
    13 on one rank) and calls each with one array as two fields: the variant is made once for
    the stencils that lower alike, a stencil whose externals change its IR gets its own, and
    every call computes what GT4Py's numpy backend computes."""
    definition, origin, domain = ONE_ARRAY_CASES[case] if case != "scaled" else (alias_scaled, (1, 1, 0), (4, 3, 4))
    q0 = np.random.default_rng(11).uniform(size=(6, 5, 4))
    impls = []
    for scale in (2.0, 2.0, 2.0, 3.0):
        externals = {"SCALE": scale} if case == "scaled" else {}
        want = q0.copy()
        gtscript.stencil(backend="numpy", definition=definition, externals=externals, rebuild=True)(want, want, origin=origin, domain=domain)
        st = gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=definition, externals=externals, rebuild=True)
        got = gt_storage.from_array(q0, backend="gridbuf:cpu_kfirst")
        st(got, got, origin=origin, domain=domain)
        np.testing.assert_array_equal(np.asarray(got), want)
        impls.append(type(st)._gt_impl_)
    assert len({id(i) for i in impls}) == 4
    variants = [next(iter(i._aliased.values())) for i in impls]
    assert variants[1] is variants[0] and variants[2] is variants[0]
    assert (variants[3] is variants[0]) == (case != "scaled")


def test_one_array_as_fields_whose_merged_stencil_is_refused_writes_nothing():
    q = np.ones((6, 5, 4))
    # A read that reaches what a statement before it wrote: GT4Py's numpy backend reads the
    # new value there, which neither the program with one field nor a copy computes.
    st = gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=alias_read_after_write)
    with pytest.raises(GridbufValueError, match="one array as the fields 'q_in' and a field it writes, on a domain of \\(4, 3, 4\\)"):
        st(q, q, origin=(1, 1, 0), domain=(4, 3, 4))
    assert (q == 1.0).all()
    # The corners' regions meet on a domain of 2 x 2: refused there, run on a wider one.
    st = gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=alias_corners)
    with pytest.raises(GridbufValueError, match="reaches a point a statement before it writes"):
        st(q, q, origin=(1, 1, 0), domain=(2, 2, 4))
    assert (q == 1.0).all()
    st(q, q, origin=(1, 1, 0), domain=(3, 3, 4))
    assert not (q == 1.0).all()
    q[...] = 1.0
    # One array at two origins is not one field: the binder refuses the overlap.
    with pytest.raises(GridbufValueError, match="overlap"):
        gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=alias_region)(q, q, origin={"q_in": (1, 1, 0), "q_out": (0, 0, 0)}, domain=(4, 3, 4))
    assert (q == 1.0).all()


@pytest.mark.parametrize("exec_info", [5, ["__aggregate_data"], "timings"])
def test_exec_info_that_is_not_a_dict_is_refused_before_the_call(exec_info):
    """A gridbuf TypeError naming the parameter, raised before anything runs or is written,
    through GT4Py's call, its ``run`` and gridbuf's own stencil alike."""
    from gridbuf.errors import GridbufTypeError
    from gridbuf.gtscript import stencil as gridbuf_stencil

    st = gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=laplacian)
    own = gridbuf_stencil(backend="numpy", definition=laplacian)
    a = np.random.default_rng(0).uniform(size=(6, 6, 3))
    out = np.full_like(a, 7.0)
    calls = [
        lambda: st(a, out, origin=(1, 1, 0), domain=(4, 4, 3), exec_info=exec_info),
        lambda: st.run(_domain_=(4, 4, 3), _origin_={"inp": (1, 1, 0), "out": (1, 1, 0)}, exec_info=exec_info, inp=a, out=out),
        lambda: own(a, out, origin=(1, 1, 0), domain=(4, 4, 3), exec_info=exec_info),
    ]
    for call in calls:
        with pytest.raises(GridbufTypeError, match="exec_info") as err:
            call()
        assert isinstance(err.value, TypeError)
        assert (out == 7.0).all()
