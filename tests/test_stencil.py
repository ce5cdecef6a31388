"""The stencil binder: origin and domain selection, every check, the cache, the data-interface
order, and the native kernels' numerics against NumPy on every layout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gridbuf as gb
from gridbuf import kernels

F64 = gb.Field[np.float64, "IJK"]


# ---------------------------------------------------------------- NumPy references
def ref_copy(inp):
    return inp.copy()


def ref_laplacian(inp):
    return -4 * inp[1:-1, 1:-1] + inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:]


def ref_hdiff(inp, coeff):
    lap = 4 * inp[1:-1, 1:-1] - (inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:])
    flx = lap[1:, 1:-1] - lap[:-1, 1:-1]
    flx = np.where(flx * (inp[2:-1, 2:-2] - inp[1:-2, 2:-2]) > 0, 0, flx)
    fly = lap[1:-1, 1:] - lap[1:-1, :-1]
    fly = np.where(fly * (inp[2:-2, 2:-1] - inp[2:-2, 1:-2]) > 0, 0, fly)
    return inp[2:-2, 2:-2] - coeff * (flx[1:] - flx[:-1] + fly[:, 1:] - fly[:, :-1])


def ref_tridiag(a, b, c, d):
    nk = a.shape[2]
    cp = np.zeros_like(a)
    dp = np.zeros_like(a)
    cp[..., 0] = c[..., 0] / b[..., 0]
    dp[..., 0] = d[..., 0] / b[..., 0]
    for k in range(1, nk):
        m = b[..., k] - a[..., k] * cp[..., k - 1]
        cp[..., k] = c[..., k] / m
        dp[..., k] = (d[..., k] - a[..., k] * dp[..., k - 1]) / m
    x = np.zeros_like(a)
    x[..., -1] = dp[..., -1]
    for k in range(nk - 2, -1, -1):
        x[..., k] = dp[..., k] - cp[..., k] * x[..., k + 1]
    return x


LAYOUTS = ["C", "gt:cpu_ifirst", "gt:cpu_kfirst", "F", "dace:cpu"]


def canary_out(shape, backend, dtype=np.float64, pad=2):
    """An output with `pad` canary points around the domain; returns (full array, inner view)."""
    full = gb.full(tuple(n + 2 * pad for n in shape), -777.0, dtype, backend=backend)
    return full, full[pad:-pad, pad:-pad, pad:-pad]


def assert_canaries(full, pad=2):
    inner = np.zeros(full.shape, dtype=bool)
    inner[pad:-pad, pad:-pad, pad:-pad] = True
    assert np.all(full[~inner] == -777.0), "a kernel wrote outside the domain of its output"


# ---------------------------------------------------------------- native kernels
@pytest.mark.parametrize("backend", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_native_kernels_match_numpy(backend, dtype):
    rng = np.random.default_rng(1)
    shape = (20, 17, 9)
    inp = gb.from_array(rng.random((shape[0] + 4, shape[1] + 4, shape[2])), dtype=dtype, backend=backend)
    coeff = gb.from_array(rng.random(shape) * 0.1, dtype=dtype, backend=backend)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)

    full, out = canary_out(shape, backend, dtype)
    kernels.copy(inp[2:-2, 2:-2], out)
    np.testing.assert_allclose(out, inp[2:-2, 2:-2], **tol)
    assert_canaries(full)

    full2, out2 = canary_out(shape, backend, dtype)
    kernels.laplacian(inp[1:-1, 1:-1], out2, origin={"inp": (1, 1, 0), "_all_": (0, 0, 0)}, domain=shape)
    np.testing.assert_allclose(out2, ref_laplacian(np.asarray(inp[1:-1, 1:-1], np.float64)), **tol)
    assert_canaries(full2)

    full3, out3 = canary_out(shape, backend, dtype)
    kernels.hdiff(inp, coeff, out3, origin={"inp": (2, 2, 0), "_all_": (0, 0, 0)}, domain=shape)
    np.testing.assert_allclose(out3, ref_hdiff(np.asarray(inp, np.float64), np.asarray(coeff, np.float64)), **tol)
    assert_canaries(full3)


@pytest.mark.parametrize("backend", LAYOUTS)
def test_tridiag_matches_numpy(backend):
    rng = np.random.default_rng(2)
    shape = (6, 5, 12)
    a, c, d = (gb.from_array(rng.random(shape), backend=backend) for _ in range(3))
    b = gb.from_array(rng.random(shape) + 4.0, backend=backend)
    full, x = canary_out(shape, backend)
    kernels.tridiag(a, b, c, d, x)
    np.testing.assert_allclose(x, ref_tridiag(*(np.asarray(v) for v in (a, b, c, d))), rtol=1e-12)
    assert_canaries(full)
    # the solution satisfies the system (a at k=0 and c at the top are not read)
    a[..., 0] = np.nan
    c[..., -1] = np.nan
    kernels.tridiag(a, b, c, d, x)
    np.testing.assert_allclose(x, ref_tridiag(np.nan_to_num(a), b, np.nan_to_num(c), d), rtol=1e-12)


def test_noop_checks_like_copy_and_writes_nothing():
    a = gb.ones((4, 5, 6))
    b = gb.full((4, 5, 6), 7.0)
    kernels.noop(a, b)
    assert (b == 7.0).all() and (a == 1.0).all()
    kernels.noop.bind(a, b)()
    assert (b == 7.0).all()
    with pytest.raises(gb.GridbufValueError, match="dtype"):
        kernels.noop(a, b.astype(np.float32))
    with pytest.raises(gb.GridbufValueError, match="read-only"):
        kernels.noop(a, _readonly(b))


def _readonly(arr):
    view = arr.view()
    view.flags.writeable = False
    return view


def test_native_kernels_on_non_contiguous_and_negative_stride_views():
    rng = np.random.default_rng(3)
    big = rng.random((50, 40, 20))
    inp = big[::2, ::-2, 1::2]  # steps and a negative stride
    out = np.zeros((23, 18, 10))[:, ::-1]
    kernels.laplacian(inp, out, origin={"inp": (1, 1, 0), "_all_": (0, 0, 0)}, domain=(23, 18, 10))
    np.testing.assert_allclose(out, ref_laplacian(np.ascontiguousarray(inp)), rtol=1e-12)


# ---------------------------------------------------------------- origin and domain
def test_largest_domain_from_origin_and_extent():
    a = np.random.rand(10, 12, 5)
    b = np.zeros((10, 12, 5))
    run = kernels.laplacian.bind(a, b, origin=(1, 1, 0))
    assert run.domain == [8, 10, 5]


def test_origin_dict_and_all_default():
    a = np.random.rand(10, 10, 4)
    b = np.zeros((12, 12, 4))
    kernels.copy(a, b, origin={"_all_": (0, 0, 0), "out": (2, 2, 0)})
    np.testing.assert_array_equal(b[2:12, 2:12], a)


def test_origin_from_gt_origin_and_data_interface_halo():
    a = gb.Field.from_array(np.random.rand(10, 10, 4), halo=(1, 1, 0))
    b = gb.Field(np.zeros((8, 8, 4)))
    kernels.laplacian(a, b)  # origin of a = its lower halo, of b = 0; domain = largest that fits
    np.testing.assert_allclose(np.asarray(b), ref_laplacian(np.asarray(a)), rtol=1e-12)

    class Wrapped:
        def __init__(self, arr, origin):
            self._a, self.__gt_origin__ = arr, origin

        @property
        def __array_interface__(self):
            return self._a.__array_interface__

        @property
        def shape(self):
            return self._a.shape

    src = np.random.rand(12, 12, 4)
    out = np.zeros((10, 10, 4))
    kernels.copy(Wrapped(src, (2, 2, 0)), out)
    np.testing.assert_array_equal(out, src[2:, 2:])


def test_dims_kji_are_permuted_back():
    src = np.random.rand(6, 7, 8)
    kji = gb.Field(np.ascontiguousarray(src.transpose(2, 1, 0)), dims="KJI")
    out = np.zeros((6, 7, 8))
    kernels.copy(kji, out)
    np.testing.assert_array_equal(out, src)


def test_python_kernel_views_and_data_dims():
    seen = {}

    @gb.stencil
    def smooth(inp: gb.Field[np.float64, "IJK", gb.Extent(i=1, j=1)], out: gb.Field[np.float64, "IJK"], *, w: float):
        seen["shapes"] = (inp.shape, out.shape)
        out[...] = (1 - w) * inp[1:-1, 1:-1, :] + w * 0.25 * (inp[2:, 1:-1, :] + inp[:-2, 1:-1, :] + inp[1:-1, 2:, :] + inp[1:-1, :-2, :])

    a = gb.Field.from_array(np.random.rand(70, 70, 8), halo=(3, 3, 0))
    b = gb.zeros((70, 70, 8), backend="gt:cpu_ifirst")
    smooth(a, b, w=0.1, origin=(3, 3, 0), domain=(64, 64, 8))
    assert seen["shapes"] == ((66, 66, 8), (64, 64, 8))
    x = np.asarray(a)
    ref = 0.9 * x[3:67, 3:67] + 0.025 * (x[4:68, 3:67] + x[2:66, 3:67] + x[3:67, 4:68] + x[3:67, 2:66])
    np.testing.assert_allclose(b[3:67, 3:67], ref, rtol=1e-12)
    assert np.all(b[:3] == 0) and np.all(b[67:] == 0)
    assert [f["intent"] for f in smooth.fields] == ["in", "out"]

    @gb.stencil
    def vec(u: gb.Field[np.float64, "IJK0", (3,)], out: gb.Field[np.float64, "IJK"]):
        out[...] = u.sum(axis=3)

    u = np.random.rand(4, 5, 6, 3)
    o = np.zeros((4, 5, 6))
    vec(u, o)
    np.testing.assert_allclose(o, u.sum(axis=3))
    with pytest.raises(gb.GridbufValueError, match="data dim"):
        vec(np.zeros((4, 5, 6, 2)), o)


# ---------------------------------------------------------------- checks
def test_every_check_names_field_and_axis():
    a, b = np.random.rand(10, 10, 4), np.zeros((10, 10, 4))
    with pytest.raises(gb.GridbufValueError, match=r"\"inp\".*along I"):
        kernels.laplacian(a, b, origin=(0, 1, 0))
    with pytest.raises(gb.GridbufValueError, match=r"too small along J"):
        kernels.laplacian(a, b, origin=(1, 1, 0), domain=(8, 9, 4))
    with pytest.raises(gb.GridbufValueError, match="dtype"):
        kernels.copy(a, b.astype(np.float32))
    ro = np.zeros((10, 10, 4))
    ro.flags.writeable = False
    with pytest.raises(gb.GridbufValueError, match="read-only"):
        kernels.copy(a, ro)
    with pytest.raises(gb.GridbufValueError, match="overlap"):
        kernels.laplacian(a, a, origin=(1, 1, 0))
    with pytest.raises(gb.GridbufValueError, match="positive"):
        kernels.copy(a, b, domain=(0, 10, 4))
    with pytest.raises(gb.GridbufValueError, match="axes"):
        kernels.copy(a[..., 0], b)
    with pytest.raises(gb.GridbufValueError, match="dims"):
        kernels.copy(gb.Field(a, dims="IJ0"), b)
    with pytest.raises(gb.GridbufTypeError):
        kernels.copy(a)
    with pytest.raises(gb.GridbufTypeError):
        kernels.copy(a, [[1.0]])


def test_cache_never_skips_a_needed_check():
    a, b = np.random.rand(8, 8, 4), np.zeros((8, 8, 4))
    kernels.copy(a, b)
    assert kernels.copy.cache_size >= 1
    with pytest.raises(gb.GridbufValueError, match="dtype"):
        kernels.copy(a.astype(np.float32), b)  # float32 after float64: different key, checked
    ro = np.zeros((8, 8, 4))
    ro.flags.writeable = False
    with pytest.raises(gb.GridbufValueError, match="read-only"):
        kernels.copy(a, ro)  # same shapes as the cached call, but read-only


def test_validate_args_false_still_checks_bounds():
    a, b = np.random.rand(8, 8, 4), np.zeros((8, 8, 4))
    with pytest.raises(gb.GridbufValueError):
        kernels.laplacian(a, b, domain=(8, 8, 4), validate_args=False)


def test_layout_mismatch_only_warns():
    @gb.stencil
    def cp(inp: gb.Field[np.float64, "IJK", gb.LayoutMap[(2, 1, 0)]], out: gb.Field[np.float64, "IJK"]):
        out[...] = inp

    a = np.random.rand(4, 5, 6)
    out = np.zeros((4, 5, 6))
    with pytest.warns(UserWarning, match="layout"):
        cp(a, out)
    np.testing.assert_array_equal(out, a)


# ---------------------------------------------------------------- data interface order
class Recorded:
    def __init__(self, arr, name, log):
        self._a, self.name, self.log = arr, name, log
        self.shape = arr.shape

    @property
    def __gt_data_interface__(self):
        cb = lambda what: (lambda: self.log.append((what, self.name)))  # noqa: E731
        return {None: {**self._a.__array_interface__, "acquire": cb("acquire"), "touch": cb("touch"), "release": cb("release")}}


def test_acquire_touch_release_order_and_on_error():
    log = []
    a = Recorded(np.random.rand(4, 4, 4), "a", log)
    b = Recorded(np.zeros((4, 4, 4)), "b", log)
    kernels.copy(a, b)
    assert log == [("acquire", "a"), ("acquire", "b"), ("touch", "b"), ("release", "a"), ("release", "b")]
    np.testing.assert_array_equal(b._a, a._a)

    @gb.stencil
    def boom(inp: F64, out: F64):
        out[...] = inp
        raise RuntimeError("kernel failed")

    log.clear()
    with pytest.raises(RuntimeError):
        boom(a, b)
    assert log == [("acquire", "a"), ("acquire", "b"), ("release", "a"), ("release", "b")]


class RecordedArray(Recorded):
    @property
    def __array_interface__(self):
        return self._a.__array_interface__


def test_fields_wrapping_objects_with_callbacks_run_them():
    log = []
    a = gb.Field(RecordedArray(np.random.rand(6, 6, 4), "a", log), halo=(1, 1, 0))
    b = gb.Field(RecordedArray(np.zeros((6, 6, 4)), "b", log))
    kernels.laplacian(a, b, origin={"inp": (1, 1, 0), "out": (0, 0, 0)}, domain=(4, 4, 4))
    assert log == [("acquire", "a"), ("acquire", "b"), ("touch", "b"), ("release", "a"), ("release", "b")]
    np.testing.assert_allclose(np.asarray(b)[:4, :4], ref_laplacian(np.asarray(a)), rtol=1e-12)
    log.clear()
    run = kernels.laplacian.bind(a, b, origin={"inp": (1, 1, 0), "out": (0, 0, 0)}, domain=(4, 4, 4))
    log.clear()
    run()
    assert log == [("acquire", "a"), ("acquire", "b"), ("touch", "b"), ("release", "a"), ("release", "b")]


def test_bound_call_reruns():
    a, b = np.random.rand(10, 10, 4), np.zeros((10, 10, 4))
    run = kernels.laplacian.bind(a, b, origin=(1, 1, 0), domain=(8, 8, 4))
    a[...] = np.random.rand(10, 10, 4)
    run()
    np.testing.assert_allclose(b[1:9, 1:9], ref_laplacian(a), rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    shape=st.tuples(st.integers(4, 9), st.integers(4, 9), st.integers(1, 5)),
    backend=st.sampled_from(LAYOUTS),
    o=st.tuples(st.integers(1, 2), st.integers(1, 2)),
)
def test_laplacian_property(shape, backend, o):
    inp = gb.from_array(np.random.rand(*shape), backend=backend)
    dom = (shape[0] - o[0] - 1, shape[1] - o[1] - 1, shape[2])
    full, out = canary_out(dom, backend)
    kernels.laplacian(inp, out, origin={"inp": (o[0], o[1], 0), "out": (0, 0, 0)}, domain=dom)
    ref = ref_laplacian(np.asarray(inp)[o[0] - 1 : o[0] + dom[0] + 1, o[1] - 1 : o[1] + dom[1] + 1])
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    assert_canaries(full)


def test_misaligned_array_is_rejected_also_on_a_cache_hit():
    buf = bytearray(8 * 64 + 1)
    misaligned = np.frombuffer(buf, dtype=np.float64, offset=1, count=64).reshape(4, 4, 4)
    a, b = np.ones((4, 4, 4)), np.zeros((4, 4, 4))
    kernels.copy(a, b)  # same dtype, shape and strides: the key matches
    with pytest.raises(gb.GridbufValueError, match='field "out".*aligned'):
        kernels.copy(a, misaligned)
    assert bytes(buf) == bytes(len(buf))
