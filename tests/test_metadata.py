"""The single metadata path: Field labels as a FieldMeta, dims / origin / halo rules and the data
interface read and built in one place (the Rust binding over the core rules)."""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gridbuf as gb
from gridbuf import _gridbuf, _metadata


class FakeGpuArray:
    """Looks like a CUDA array (never read, so no GPU is needed) with a data interface whose GPU
    entry is under the key ``"cuda"``."""

    def __init__(self, log):
        self.shape = (4, 3)
        self.dtype = np.dtype("float64")
        self.log = log
        self.__cuda_array_interface__ = {"shape": (4, 3), "typestr": "<f8", "data": (0, False), "version": 3}

    @property
    def __gt_data_interface__(self):
        return {
            "cuda": {
                **self.__cuda_array_interface__,
                "acquire": lambda: self.log.append("acquire"),
                "touch": lambda: self.log.append("touch"),
                "release": lambda: self.log.append("release"),
            }
        }


def test_field_over_an_array_with_a_cuda_entry_keeps_its_callbacks():
    log = []
    f = gb.Field(FakeGpuArray(log), dims="IJ")
    # The array's own data interface is kept entry by entry, under its own keys.
    assert set(f.__gt_data_interface__) == {"cuda"}
    entry = f.__gt_data_interface__["cuda"]
    assert entry["dims"] == ("I", "J") and entry["halo"] == ((0, 0), (0, 0))
    for name in ("acquire", "touch", "release"):
        entry[name]()
    assert log == ["acquire", "touch", "release"]
    with gb.acquired([f], outputs=[f], device="gpu"):
        pass
    assert log == ["acquire", "touch", "release"] * 2


def test_field_labels_are_one_frozen_fieldmeta():
    f = gb.Field(np.zeros((4, 5, 6)), dims="KJI", halo=(1, 2, (0, 3)))
    meta = f._meta
    assert isinstance(meta, _gridbuf.FieldMeta)
    assert (meta.dims, meta.halo, meta.origin) == (("K", "J", "I"), ((1, 1), (2, 2), (0, 3)), (1, 2, 0))
    assert meta.halo_lower == [1, 2, 0]
    with pytest.raises(AttributeError):
        meta.dims = ("I", "J", "K")
    same = _gridbuf.FieldMeta(["K", "J", "I"], [(1, 1), (2, 2), (0, 3)], [1, 2, 0])
    assert same == meta and hash(same) == hash(meta)
    assert _gridbuf.FieldMeta(("K", "J", "I"), ((1, 1), (2, 2), (0, 3)), (0, 2, 0)) != meta
    assert pickle.loads(pickle.dumps(meta)) == meta
    with pytest.raises(gb.GridbufValueError):
        _gridbuf.FieldMeta(("I", "J"), ((0, 0),), (0, 0))
    with pytest.raises(gb.GridbufValueError, match="dims"):
        _gridbuf.FieldMeta(("I", "I"), ((0, 0), (0, 0)), (0, 0))
    f.halo = (0, 0, 0)
    assert f._meta is not meta and f.origin == (0, 0, 0)


def test_the_binder_never_calls_the_python_metadata_functions(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the binder called back into Python")

    for name in ("get_dims", "get_origin", "normalize_dims", "data_interface"):
        monkeypatch.setattr(_metadata, name, fail)
    a = gb.zeros((6, 6, 4), halo=(1, 1, 0))
    b = gb.zeros((4, 6, 6), dims="KJI")
    fa, fb = gb.Field(np.asarray(a) + 1.0, halo=(1, 1, 0)), gb.Field(b, dims="KJI")
    gb.kernels.copy(fa, fb)  # domain (5, 5, 4): fa from its origin (1, 1, 0), fb from zero
    written = np.asarray(b).transpose(2, 1, 0)
    np.testing.assert_array_equal(written[:5, :5, :], 1.0)
    assert not written[5:, :, :].any() and not written[:, 5:, :].any()


def test_declared_metadata_reaches_the_binder_from_any_object():
    class Declared:
        def __init__(self, arr, dims, origin):
            self.arr, self.__gt_dims__, self.__gt_origin__ = arr, dims, origin
            self.shape = arr.shape

        @property
        def __gt_data_interface__(self):
            return {None: dict(self.arr.__array_interface__)}

    src = np.arange(5 * 6 * 4, dtype=float).reshape(4, 6, 5)  # K, J, I
    dst = np.zeros((5, 6, 4))
    gb.kernels.copy(Declared(src, "KJI", (0, 1, 1)), dst, domain=(3, 4, 4))
    np.testing.assert_array_equal(dst[:3, :4, :], src[:, 1:5, 1:4].transpose(2, 1, 0))


def test_dims_rule_accepts_enum_values_and_axis_names():
    import enum

    class Axis(enum.Enum):
        I = "I"  # noqa: E741
        K = "K"

    class Named:
        __gt_axis_name__ = "J"

    assert _metadata.normalize_dims([Axis.I, Named(), Axis.K], 3, "dims") == ("I", "J", "K")
    with pytest.raises(gb.GridbufTypeError, match="dims"):
        _metadata.normalize_dims([1, 2], None, "dims")
    with pytest.raises(gb.GridbufValueError, match="only once"):
        _metadata.normalize_dims("II", None, "dims")
    with pytest.raises(gb.GridbufValueError, match="'X' is not a dimension name"):
        _metadata.normalize_dims("IX", None, "dims")


@given(st.integers(0, 6))
def test_default_dims_are_ijk_then_data_dims(ndim):
    dims = _metadata.default_dims(ndim)
    assert dims == tuple("IJK"[:ndim]) + tuple(str(d) for d in range(ndim - 3))
    assert gb.Field(np.zeros((1,) * ndim)).dims == dims


@given(st.lists(st.integers(-40, 40), min_size=1, max_size=4))
def test_layout_from_strides_ranks_axes_by_absolute_stride(strides):
    layout = _gridbuf.layout_from_strides(strides)
    order = sorted(range(len(strides)), key=lambda ax: -abs(strides[ax]))
    assert tuple(layout[ax] for ax in order) == tuple(range(len(strides)))


def test_whole_allocation_plan():
    a = gb.zeros((4, 5), halo=(1, 1))
    assert _gridbuf.whole_allocation_plan(a).shape == (4, 5)
    assert _gridbuf.whole_allocation_plan(a[...]) is not None  # a view of all of it
    assert _gridbuf.whole_allocation_plan(a[1:]) is None
    assert _gridbuf.whole_allocation_plan(np.zeros((4, 5))) is None
    assert _gridbuf.whole_allocation_plan([1, 2]) is None


def test_acquired_releases_what_it_acquired_when_an_acquire_fails():
    log = []

    class Obj:
        def __init__(self, name, fail=False):
            self.name, self.fail = name, fail
            self._a = np.zeros(2)

        def _acquire(self):
            log.append(("acquire", self.name))
            if self.fail:
                raise RuntimeError("no")

        @property
        def __gt_data_interface__(self):
            return {
                "cpu": {
                    **self._a.__array_interface__,
                    "acquire": self._acquire,
                    "release": lambda: log.append(("release", self.name)),
                }
            }

    with pytest.raises(RuntimeError, match="no"):
        with gb.acquired([Obj("a"), Obj("b", fail=True), Obj("c")]):
            pass
    assert log == [("acquire", "a"), ("acquire", "b"), ("release", "a")]


def test_field_descriptors_and_output_params_have_named_attributes():
    f = gb.Field.zeros((4, 5, 6), halo=(1, 1, 0), backend="gt:cpu_ifirst")
    d = f._describe()
    assert isinstance(d, _gridbuf.FieldDescriptor)
    assert (d.dims, d.shape, d.halo, d.backend) == (("I", "J", "K"), (4, 5, 6), ((1, 1), (1, 1), (0, 0)), "gt:cpu_ifirst")
    assert d == _gridbuf.FieldDescriptor(d.dims, d.shape, d.halo, d.layout, d.strides, d.alignment, d.aligned_index, d.backend)
    assert hash(d) == hash(gb.Field.zeros((4, 5, 6), halo=(1, 1, 0), backend="gt:cpu_ifirst")._describe())
    axes, params = _gridbuf._reduce(d, "K", False)
    assert axes == (2,)
    assert isinstance(params, _gridbuf.OutputParams)
    assert (params.dims, params.shape, params.halo, params.backend) == (("I", "J"), (4, 5), ((1, 1), (1, 1)), "gt:cpu_ifirst")
    assert isinstance(params.kwargs, dict) and params.alignment >= 1
    with pytest.raises(TypeError):
        _gridbuf._reduce((d.dims, d.shape, d.halo, None, (8, 32, 160), 1, None, "C"), "K", False)


def test_field_labels_come_from_the_arguments_then_the_array():
    a = gb.zeros((6, 5, 4), halo=(1, (0, 2), 0), dims="IJK")
    meta = _gridbuf.field_labels(a, a.shape)
    assert (meta.dims, meta.halo, meta.origin) == (("I", "J", "K"), ((1, 1), (0, 2), (0, 0)), (1, 0, 0))
    assert _gridbuf.field_labels(np.asarray(a)[1:], (5, 5, 4)).halo == ((0, 0),) * 3  # not all of it
    meta = _gridbuf.field_labels(a, a.shape, dims="KJI", halo=(0, 0, 0), origin=(2, 0, 1))
    assert (meta.dims, meta.halo, meta.origin) == (("K", "J", "I"), ((0, 0),) * 3, (2, 0, 1))
    assert _gridbuf.field_labels(np.zeros((2, 3, 4, 5)), (2, 3, 4, 5)).dims == ("I", "J", "K", "0")
    with pytest.raises(gb.GridbufValueError, match="origin"):
        _gridbuf.field_labels(a, a.shape, origin=(7, 0, 0))
