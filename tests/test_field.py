"""The Field wrapper, get_dims / get_origin and the acquire/touch/release order."""

from __future__ import annotations

import numpy as np
import pytest

import gridbuf as gb


class Labelled:
    """A wrapper object that only adds __gt_dims__ / __gt_origin__ to a NumPy array."""

    def __init__(self, array, dims=None, origin=None):
        self._a = array
        if dims is not None:
            self.__gt_dims__ = dims
        if origin is not None:
            self.__gt_origin__ = origin

    @property
    def __array_interface__(self):
        return self._a.__array_interface__

    @property
    def shape(self):
        return self._a.shape


class Axis:
    def __init__(self, name):
        self.__gt_axis_name__ = name


def test_field_labels_without_copy():
    a = np.zeros((5, 4, 3))
    f = gb.Field(a, dims="KJI", origin=(1, 1, 0))
    assert gb.get_dims(f) == ("K", "J", "I")
    assert gb.get_origin(f) == (1, 1, 0)
    assert f.array is a
    assert np.shares_memory(np.asarray(f), a)
    assert f.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    assert (f.shape, f.dtype, f.ndim) == ((5, 4, 3), np.float64, 3)


def test_field_allocation_takes_dims_and_halo_from_the_allocation():
    g = gb.Field.zeros((64, 64, 80), backend="gt:cpu_ifirst", halo=(3, 3, 0))
    assert gb.get_origin(g) == (3, 3, 0)
    assert g.halo == ((3, 3), (3, 3), (0, 0))
    assert g.domain_shape == (58, 58, 80)
    assert np.asarray(g).strides == (8, 64 * 8, 64 * 64 * 8)
    d = g.domain_view
    assert d.shape == (58, 58, 80) and d.origin == (0, 0, 0) and d.halo == ((0, 0),) * 3
    np.asarray(d)[0, 0, 0] = 5.0
    assert np.asarray(g)[3, 3, 0] == 5.0
    h = gb.Field.full((4, 5), 2.5, dims="IK")
    assert h.dims == ("I", "K") and float(np.sum(h)) == 2.5 * 20
    s = gb.Field.ones((4, 5), dtype=("f8", (2,)))
    assert s.dims == ("I", "J", "0") and s.shape == (4, 5, 2)


def test_field_from_array_copies_and_keeps_declared_dims():
    src = np.arange(24.0).reshape(2, 3, 4)
    f = gb.Field.from_array(gb.Field(src, dims="KJI"), backend="gt:cpu_kfirst")
    assert f.dims == ("K", "J", "I")
    assert not np.shares_memory(np.asarray(f), src)
    np.testing.assert_array_equal(np.asarray(f), src)
    # semantic layout: K (axis 0) has unit stride in gt:cpu_kfirst
    assert np.asarray(f).strides[0] == 8


def test_field_works_in_numpy_and_through_interfaces():
    a = np.arange(12.0).reshape(3, 4)
    f = gb.Field(a)
    assert float(np.sum(f)) == float(a.sum())
    np.testing.assert_array_equal(np.from_dlpack(f), a)
    assert f.__dlpack_device__() == a.__dlpack_device__()
    assert not hasattr(f, "__cuda_array_interface__")
    b = gb.from_array(f, backend="F")
    np.testing.assert_array_equal(b, a)
    iface = f.__gt_data_interface__
    assert iface[None]["dims"] == ("I", "J") and iface[None]["shape"] == (3, 4)
    assert gb.Field(f).dims == ("I", "J")


def test_field_over_buffer_protocol_objects():
    buf = bytearray(8 * 6)
    f = gb.Field(memoryview(buf).cast("d", (2, 3)))
    np.asarray(f)[1, 2] = 1.0
    assert np.frombuffer(buf)[5] == 1.0


def test_field_rejects_bad_input():
    with pytest.raises(gb.GridbufTypeError):
        gb.Field([1, 2, 3])
    with pytest.raises(gb.GridbufValueError, match="dims"):
        gb.Field(np.zeros((2, 2)), dims="IJK")
    with pytest.raises(gb.GridbufValueError, match="halo"):
        gb.Field(np.zeros((2, 2)), halo=(2, 1))
    with pytest.raises(gb.GridbufValueError, match="origin"):
        gb.Field(np.zeros((2, 2)), origin=(3, 0))
    with pytest.raises(ValueError, match="'X'"):
        gb.Field(np.zeros((2, 2)), dims="IX")


def test_get_dims_lookup_order():
    a = np.zeros((2, 3, 4))
    assert gb.get_dims(a) is None
    assert gb.get_dims(a, annotation="KJI") == ("K", "J", "I")
    assert gb.get_dims(Labelled(a, dims="JIK"), annotation="KJI") == ("J", "I", "K")
    assert gb.get_dims(Labelled(a, dims=[Axis("I"), Axis("J"), Axis("K")])) == ("I", "J", "K")

    class Enum:
        def __init__(self, value):
            self.value = value

    assert gb.get_dims(Labelled(a, dims=[Enum("K"), Enum("0"), Enum("I")])) == ("K", "0", "I")

    class WithInterface:
        shape = (2, 3, 4)
        __gt_data_interface__ = {None: {**a.__array_interface__, "dims": ("I", "K", "J")}}

    assert gb.get_dims(WithInterface()) == ("I", "K", "J")
    with pytest.raises(gb.GridbufValueError):
        gb.get_dims(Labelled(a, dims="IJ"))
    with pytest.raises(gb.GridbufValueError):
        gb.get_dims(Labelled(a, dims="IIJ"))
    with pytest.raises(gb.GridbufValueError):
        gb.get_dims(Labelled(a, dims="IJX"))
    with pytest.raises(gb.GridbufTypeError):
        gb.get_dims(Labelled(a, dims=[1, 2, 3]))


def test_get_origin_is_validated():
    a = np.zeros((2, 3, 4))
    assert gb.get_origin(a) is None
    assert gb.get_origin(Labelled(a, origin=(1, 2, 3))) == (1, 2, 3)
    assert gb.get_origin(Labelled(a, origin=[np.int64(1), 0, 0])) == (1, 0, 0)
    for bad in [(1, 2), (0, 0, 5), (-1, 0, 0)]:
        with pytest.raises(gb.GridbufValueError, match="__gt_origin__"):
            gb.get_origin(Labelled(a, origin=bad))
    with pytest.raises(gb.GridbufTypeError):
        gb.get_origin(Labelled(a, origin=(0.5, 0, 0)))


class Recorder:
    """An object with a data interface whose callbacks record their calls."""

    def __init__(self, name, log):
        self._a = np.zeros(3)
        self.name, self.log = name, log

    @property
    def __gt_data_interface__(self):
        return {
            None: {
                **self._a.__array_interface__,
                "acquire": lambda: self.log.append(("acquire", self.name)),
                "touch": lambda: self.log.append(("touch", self.name)),
                "release": lambda: self.log.append(("release", self.name)),
            }
        }


def test_acquired_order():
    log = []
    f, g = Recorder("f", log), Recorder("g", log)
    with gb.acquired([f, g], outputs=[g]):
        log.append(("body", None))
    assert log == [("acquire", "f"), ("acquire", "g"), ("body", None), ("touch", "g"), ("release", "f"), ("release", "g")]


def test_acquired_releases_when_the_body_raises():
    log = []
    f, g = Recorder("f", log), Recorder("g", log)
    with pytest.raises(RuntimeError):
        with gb.acquired([f, g], outputs=[g]):
            raise RuntimeError("boom")
    assert log == [("acquire", "f"), ("acquire", "g"), ("release", "f"), ("release", "g")]


def test_acquired_through_a_field_and_plain_arrays():
    log = []
    r = Recorder("r", log)
    f = gb.Field(r._a)
    with gb.acquired([f, np.zeros(2), gb.Field(np.zeros(2))]):
        pass
    assert log == []
    # A Field over an object with a data interface forwards its callbacks.

    class Wrapped:
        shape = (3,)
        __array_interface__ = r._a.__array_interface__
        __gt_data_interface__ = r.__gt_data_interface__

    with gb.acquired([gb.Field(Wrapped())], outputs=[gb.Field(Wrapped())]):
        pass
    assert log == [("acquire", "r"), ("touch", "r"), ("release", "r")]


def test_acquired_rejects_non_callables():
    class Bad:
        __gt_data_interface__ = {None: {"acquire": 3}}

    with pytest.raises(gb.GridbufTypeError, match="acquire"):
        with gb.acquired([Bad()]):
            pass
