"""array_info, as_numpy and as_cupy: every interface form an array can come in (NumPy, the buffer
protocol, __array_interface__, __cuda_array_interface__, DLPack, __gt_data_interface__, Field,
xarray), every kind of bad input, and the promise that nothing gridbuf does changes the memory."""

from __future__ import annotations

import array
import ctypes
import gc
import importlib.util
import sys
import types
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gridbuf as gb
from conftest import DTYPES

NATIVE = "<" if sys.byteorder == "little" else ">"
SWAPPED = ">" if NATIVE == "<" else "<"


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
class Obj:
    """An object with the attributes it is given (interfaces, usually), holding ``keep`` alive."""

    def __init__(self, keep=None, **attrs):
        self.keep = keep
        for name, value in attrs.items():
            setattr(self, name, value)


class DLPackOnly:
    """Exposes an array through DLPack only."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class LegacyDLPack(DLPackOnly):
    """A producer older than DLPack 1.0: no max_version keyword, legacy capsules."""

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()


class SameCapsule(DLPackOnly):
    """Hands out one capsule again and again (a broken producer)."""

    def __init__(self, array):
        super().__init__(array)
        self.capsule = array.__dlpack__(max_version=(1, 0))

    def __dlpack__(self, **kwargs):
        return self.capsule


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def iface(a: np.ndarray, **changes) -> dict:
    """The __array_interface__ of ``a`` with ``changes`` (a value of ``...`` removes the key)."""
    d = dict(a.__array_interface__)
    for key, value in changes.items():
        if value is ...:
            d.pop(key, None)
        else:
            d[key] = value
    return d


def check(excinfo, gb_class, builtin, *fragments):
    """The exception is a gridbuf ``gb_class`` and a ``builtin``, its message holds every fragment."""
    e = excinfo.value
    assert isinstance(e, gb.GridbufError), type(e).__mro__
    assert isinstance(e, gb_class), type(e).__mro__
    assert isinstance(e, builtin), type(e).__mro__
    for f in fragments:
        assert f in str(e), f"{f!r} not in {str(e)!r}"


def assert_info_matches(info, a: np.ndarray, interface: str | None = None) -> None:
    """``info`` describes the NumPy array ``a``."""
    assert info.ptr == address(a)
    assert info.shape == a.shape
    assert strides_agree(a.shape, info.strides, a.strides)
    assert info.ndim == a.ndim
    assert info.dtype == a.dtype
    assert info.typestr == a.dtype.str.replace("=", NATIVE)
    assert info.itemsize == a.itemsize
    assert info.nbytes == a.nbytes
    assert info.device == "cpu"
    assert info.device_id == 0
    assert info.readonly == (not a.flags.writeable)
    assert info.stream is None
    if interface is not None:
        assert info.interface == interface


def assert_same_view(view: np.ndarray, a: np.ndarray) -> None:
    """``view`` is a NumPy array over exactly the memory and layout of ``a``."""
    assert type(view) is np.ndarray
    assert view.shape == a.shape and view.dtype == a.dtype
    assert strides_agree(a.shape, view.strides, a.strides)
    assert address(view) == address(a)
    assert view.tobytes() == a.tobytes()


def snapshot(a) -> bytes:
    return memoryview(a).tobytes()


def strides_agree(shape, s1, s2) -> bool:
    """Strides agree where they matter: along axes longer than 1 of a non-empty array."""
    return 0 in shape or all(x == y for n, x, y in zip(shape, s1, s2) if n > 1)


def c_strides(shape, itemsize) -> tuple[int, ...]:
    out, acc = [], itemsize
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


# --------------------------------------------------------------------------------------------
# NumPy arrays
# --------------------------------------------------------------------------------------------
def layouts():
    base = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    return {
        "C": base,
        "F": np.asfortranarray(base),
        "sliced": base[:, ::2, 1:],
        "reversed": base[::-1, :, ::-2],
        "0-d": np.array(5.0),
        "empty": np.zeros((0, 3)),
        "broadcast": np.broadcast_to(np.arange(4.0), (3, 4)),
        "transposed": base.transpose(2, 0, 1),
    }


@pytest.mark.parametrize("name", list(layouts()))
def test_numpy_layouts(name):
    a = layouts()[name]
    info = gb.array_info(a)
    assert_info_matches(info, a, "__array_interface__")
    assert info.owner is a
    assert gb.as_numpy(a) is a


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_numpy_dtypes(dtype):
    a = np.zeros((3, 2), dtype=dtype)
    assert_info_matches(gb.array_info(a), a)
    swapped = a.astype(a.dtype.newbyteorder())
    info = gb.array_info(swapped)
    assert info.dtype == swapped.dtype
    if dtype.itemsize > 1:
        assert info.typestr[0] == SWAPPED


def test_numpy_readonly():
    a = np.arange(4.0)
    a.flags.writeable = False
    info = gb.array_info(a)
    assert info.readonly
    assert not gb.as_numpy(a).flags.writeable


@pytest.mark.parametrize(
    "dtype, fragment",
    [
        (object, '"|O"'),
        ("U3", "<U3"),
        ("S2", '"|S2"'),
        ("datetime64[ns]", "datetime"),
        ([("a", "f8"), ("b", "i4")], "void"),
        (np.longdouble, "typestr"),
    ],
    ids=["object", "unicode", "bytes", "datetime", "structured", "longdouble"],
)
def test_numpy_unsupported_dtypes(dtype, fragment):
    a = np.zeros(3, dtype=dtype)
    if a.dtype.kind == "f" and a.dtype.itemsize in (2, 4, 8):
        pytest.skip("long double is double on this platform")
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(a)
    check(e, gb.GridbufValueError, ValueError, "__array_interface__['typestr']", fragment)
    with pytest.raises(gb.GridbufValueError):
        gb.as_numpy(a)


class Sub(np.ndarray):
    pass


def test_numpy_subclass():
    a = np.arange(12.0).reshape(3, 4)
    s = a.view(Sub)[:, 1:]
    assert_info_matches(gb.array_info(s), s)
    v = gb.as_numpy(s)
    assert_same_view(v, s)
    assert v.base is s


def test_numpy_subclass_with_lying_array_interface_is_refused():
    class Liar(np.ndarray):
        @property
        def __array_interface__(self):
            return iface(np.asarray(self), shape=(2,), strides=None)

    s = np.arange(6.0).view(Liar)
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(s)
    check(e, gb.GridbufValueError, ValueError, "shape", "buffer protocol", "__array_interface__")


def test_masked_arrays_are_refused():
    m = np.ma.masked_array([1.0, 2.0], mask=[0, 1])
    with pytest.raises(gb.GridbufTypeError) as e:
        gb.as_numpy(m)
    check(e, gb.GridbufTypeError, TypeError, "MaskedArray", "masked arrays are not supported")


def test_memmap(tmp_path):
    m = np.memmap(tmp_path / "x.bin", dtype=np.float32, mode="w+", shape=(4, 5))
    v = gb.as_numpy(m)
    v[1, 2] = 7
    assert m[1, 2] == 7
    del v, m


# --------------------------------------------------------------------------------------------
# The buffer protocol
# --------------------------------------------------------------------------------------------
def buffer_sources():
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    c2 = ((ctypes.c_double * 3) * 2)()
    return {
        "bytearray": bytearray(b"abcdefgh"),
        "bytes": b"readonly",
        "memoryview": memoryview(bytearray(16)).cast("d"),
        "memoryview-2d": memoryview(a),
        "memoryview-strided": memoryview(a)[::2],
        "memoryview-0d": memoryview(np.array(3.5)),
        "array-d": array.array("d", [1.0, 2.0, 3.0]),
        "array-h": array.array("h", [1, -2, 3]),
        "array-Q": array.array("Q", [1, 2]),
        "ctypes-double": (ctypes.c_double * 4)(1, 2, 3, 4),
        "ctypes-long": (ctypes.c_long * 3)(1, 2, 3),
        "ctypes-bool": (ctypes.c_bool * 2)(True, False),
        "ctypes-2d": c2,
    }


@pytest.mark.parametrize("name", list(buffer_sources()))
def test_buffer_protocol(name):
    src = buffer_sources()[name]
    ref = np.asarray(memoryview(src))  # NumPy's reading of the same buffer
    info = gb.array_info(src)
    assert_info_matches(info, ref, "buffer protocol")
    before = snapshot(src)
    v = gb.as_numpy(src)
    assert_same_view(v, ref)
    assert isinstance(v.base, memoryview) and v.base.obj is (src.obj if isinstance(src, memoryview) else src)
    assert v.flags.writeable == ref.flags.writeable
    assert snapshot(src) == before


def test_buffer_views_write_through_and_pin_the_buffer():
    b = bytearray(8)
    v = gb.as_numpy(b)
    v[3] = 42
    assert b[3] == 42
    with pytest.raises(BufferError):
        b.extend(b"more")  # the view holds a buffer export: the memory cannot move
    del v
    gc.collect()
    b.extend(b"more")


def test_readonly_buffer_gives_readonly_array():
    v = gb.as_numpy(b"abc")
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v[0] = 1
    with pytest.raises(ValueError):
        v.flags.writeable = True


@pytest.mark.parametrize(
    "src, fragment",
    [
        ((ctypes.c_longdouble * 2)(), "long double"),
        (memoryview(b"ab").cast("c"), "char"),
    ],
    ids=["long-double", "char"],
)
def test_unsupported_buffer_formats(src, fragment):
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(src)
    check(e, gb.GridbufValueError, ValueError, "buffer protocol Py_buffer.format", fragment)


def test_ctypes_structures_are_refused():
    class Point(ctypes.Structure):
        _fields_ = [("x", ctypes.c_double), ("y", ctypes.c_int)]

    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info((Point * 3)())
    check(e, gb.GridbufValueError, ValueError, "Py_buffer.format")


def test_objects_without_interfaces():
    for bad in (3, "abc", [1, 2], None, object()):
        with pytest.raises(gb.GridbufTypeError) as e:
            gb.array_info(bad)
        check(e, gb.GridbufTypeError, TypeError, "invalid type for array", "__array_interface__")

    class OnlyArray:
        def __array__(self, dtype=None, copy=None):
            return np.zeros(3)

    with pytest.raises(gb.GridbufTypeError) as e:
        gb.as_numpy(OnlyArray())
    check(e, gb.GridbufTypeError, TypeError, "OnlyArray", "only __array__, which may copy")


# --------------------------------------------------------------------------------------------
# __array_interface__
# --------------------------------------------------------------------------------------------
def test_array_interface_pointer_forms():
    a = np.arange(24.0).reshape(4, 6)
    for view in (a, a[::2, 1::2], a[::-1], a.T):
        obj = Obj(a, __array_interface__=iface(view))
        info = gb.array_info(obj)
        assert_info_matches(info, view, "__array_interface__")
        assert info.owner is obj
        v = gb.as_numpy(obj)
        assert_same_view(v, view)
        assert v.base is obj
    # strides None means C order
    obj = Obj(a, __array_interface__=iface(a, strides=None))
    assert gb.array_info(obj).strides == (48, 8)
    # explicit read-only flag
    obj = Obj(a, __array_interface__=iface(a, data=(address(a), True)))
    assert gb.array_info(obj).readonly
    v = gb.as_numpy(obj)
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v.flags.writeable = True  # the base has no writable buffer to vouch for it


def test_array_interface_descr_and_version():
    a = np.zeros(3, dtype=np.int16)
    gb.array_info(Obj(a, __array_interface__=iface(a, descr=[("", "<i2" if NATIVE == "<" else ">i2")])))
    gb.array_info(Obj(a, __array_interface__=iface(a, descr=...)))
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(Obj(a, __array_interface__=iface(a, descr=[("", "<f8")])))
    check(e, gb.GridbufValueError, ValueError, "__array_interface__['descr']")
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(Obj(a, __array_interface__=iface(a, descr=[("a", "<i2", (2,))])))
    check(e, gb.GridbufValueError, ValueError, "__array_interface__['descr']", "structured")
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(Obj(a, __array_interface__=iface(a, version=2)))
    check(e, gb.GridbufValueError, ValueError, "__array_interface__['version'] 2")


def test_array_interface_data_as_buffer_object_with_offset():
    raw = bytearray(np.arange(8, dtype=np.float64).tobytes())
    d = {"version": 3, "shape": (2, 3), "typestr": f"{NATIVE}f8", "data": raw, "offset": 16}
    obj = Obj(None, __array_interface__=d)
    v = gb.as_numpy(obj)
    assert v.tolist() == [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]]
    assert isinstance(v.base, memoryview) and v.base.obj is raw
    v[0, 0] = -1
    assert np.frombuffer(raw)[2] == -1
    assert gb.array_info(obj).ptr == address(np.frombuffer(raw)) + 16
    ro = dict(d, data=bytes(raw))
    assert gb.array_info(Obj(None, __array_interface__=ro)).readonly
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(Obj(None, __array_interface__=dict(d, offset=24)))
    check(e, gb.GridbufValueError, ValueError, "__array_interface__['data']", "reach bytes 24 to 72")
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(Obj(None, __array_interface__=dict(d, data=memoryview(raw)[::2])))
    check(e, gb.GridbufValueError, ValueError, "__array_interface__['data']", "contiguous")


class BufferWithInterface(bytearray):
    """A buffer whose __array_interface__ has data None: its own buffer holds the memory."""

    interface: dict = {}

    @property
    def __array_interface__(self):
        return self.interface


def test_array_interface_data_none_reads_the_object_buffer():
    b = BufferWithInterface(np.arange(6, dtype=np.int32).tobytes())
    b.interface = {"version": 3, "shape": (2, 3), "typestr": f"{NATIVE}i4", "data": None}
    v = gb.as_numpy(b)
    assert v.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert isinstance(v.base, memoryview) and v.base.obj is b
    info = gb.array_info(b)
    assert info.interface == "__array_interface__" and info.shape == (2, 3)
    b.interface = {"version": 3, "shape": (2, 4), "typestr": f"{NATIVE}i4"}
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(b)
    check(e, gb.GridbufValueError, ValueError, "__array_interface__['data']", "a buffer of 24 bytes")
    a = np.arange(3.0)
    with pytest.raises(gb.GridbufTypeError) as e:
        gb.array_info(Obj(a, __array_interface__=iface(a, data=None)))
    check(e, gb.GridbufTypeError, TypeError, "__array_interface__['data']", "no buffer protocol")


def test_array_interface_disagreeing_with_buffer_is_refused():
    b = BufferWithInterface(bytes(16))
    b.interface = {"version": 3, "shape": (2,), "typestr": f"{NATIVE}f8", "data": (address(np.frombuffer(b, np.uint8)), False)}
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(b)  # the buffer says 16 uint8 items
    check(e, gb.GridbufValueError, ValueError, "from buffer protocol", "as __array_interface__ gives")


def test_null_pointers():
    a = np.zeros((2, 3))
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(Obj(a, __array_interface__=iface(a, data=(0, False))))
    check(e, gb.GridbufValueError, ValueError, "__array_interface__['data']", "null pointer", "(2, 3)")
    empty = Obj(None, __array_interface__={"version": 3, "shape": (0, 3), "typestr": "<f4", "data": (0, True)})
    assert gb.array_info(empty).ptr == 0
    v = gb.as_numpy(empty)
    assert v.shape == (0, 3) and v.dtype == np.dtype("<f4") and not v.flags.writeable


def bad_interfaces():
    """(description, interface dict or value, gridbuf class, builtin, message fragments)."""
    a = np.zeros((3, 4))
    p = address(a)
    V, T, O = gb.GridbufValueError, gb.GridbufTypeError, gb.GridbufOverflowError
    return [
        ("not a dict", [1, 2], T, TypeError, ["__array_interface__", "expected a dict"]),
        ("missing shape", iface(a, shape=...), V, ValueError, ["has no 'shape' key"]),
        ("missing typestr", iface(a, typestr=...), V, ValueError, ["has no 'typestr' key"]),
        ("missing version", iface(a, version=...), V, ValueError, ["has no 'version' key"]),
        ("shape of wrong type", iface(a, shape="34"), T, TypeError, ["__array_interface__['shape']"]),
        ("shape of floats", iface(a, shape=(3.0, 4.0)), T, TypeError, ["__array_interface__['shape']"]),
        ("typestr of wrong type", iface(a, typestr=8), T, TypeError, ["__array_interface__['typestr']"]),
        ("strides of wrong type", iface(a, strides=(32, "8")), T, TypeError, ["__array_interface__['strides']"]),
        ("version of wrong type", iface(a, version="3"), T, TypeError, ["__array_interface__['version']"]),
        ("data of wrong type", iface(a, data="abc"), T, TypeError, ["__array_interface__['data']"]),
        ("data tuple too long", iface(a, data=(p, False, 1)), T, TypeError, ["__array_interface__['data']"]),
        ("pointer of wrong type", iface(a, data=("p", False)), T, TypeError, ["__array_interface__['data']"]),
        ("negative pointer", iface(a, data=(-8, False)), V, ValueError, ["__array_interface__['data']", "non-negative"]),
        ("unknown typestr", iface(a, typestr="<x8"), V, ValueError, ["__array_interface__['typestr']", '"<x8"']),
        ("object typestr", iface(a, typestr="|O"), V, ValueError, ["__array_interface__['typestr']", "not supported"]),
        ("long double typestr", iface(a, typestr="<f16"), V, ValueError, ["__array_interface__['typestr']", "sizes"]),
        ("strides too short", iface(a, strides=(8,)), V, ValueError, ["__array_interface__['strides']", "one stride per axis"]),
        ("negative extent", iface(a, shape=(3, -4)), V, ValueError, ["__array_interface__['shape']", "(3, -4)", "non-negative"]),
        ("masked", iface(a, mask=np.zeros((3, 4), bool)), V, ValueError, ["__array_interface__['mask']", "masked arrays"]),
        ("offset with pointer", iface(a, offset=8), V, ValueError, ["__array_interface__['offset']"]),
        ("huge extents", iface(a, shape=(2**62, 2**62), strides=None), O, OverflowError, ["__array_interface__['shape']", "too large"]),
        ("extent beyond 64 bits", iface(a, shape=(2**70, 1)), O, OverflowError, ["__array_interface__['shape']", "too large"]),
        ("huge strides", iface(a, strides=(2**62, 8)), O, OverflowError, ["__array_interface__['strides']", "too large"]),
        ("stride beyond 64 bits", iface(a, strides=(2**64, 8)), O, OverflowError, ["__array_interface__['strides']", "too large"]),
        ("pointer beyond 64 bits", iface(a, data=(2**64, False)), O, OverflowError, ["__array_interface__['data']", "too large"]),
        ("pointer at the top", iface(a, data=(2**64 - 16, False)), O, OverflowError, ["__array_interface__['data']"]),
    ]


@pytest.mark.parametrize("case", bad_interfaces(), ids=lambda c: c[0])
def test_bad_array_interfaces(case):
    _, d, gb_class, builtin, fragments = case
    obj = Obj(None, __array_interface__=d)
    for fn in (gb.array_info, gb.as_numpy):
        with pytest.raises(gb_class) as e:
            fn(obj)
        check(e, gb_class, builtin, *fragments)


# --------------------------------------------------------------------------------------------
# __cuda_array_interface__ (described, never touched)
# --------------------------------------------------------------------------------------------
def cai(**changes):
    d = {"version": 3, "shape": (4, 5), "typestr": "<f4", "data": (0x7F0000000000, False), "strides": None, "stream": 1}
    d.update(changes)
    return {k: v for k, v in d.items() if v is not ...}


def test_cuda_array_interface_is_described_not_touched():
    obj = Obj(None, __cuda_array_interface__=cai(stream=12345, strides=(4, 16)))
    info = gb.array_info(obj)
    assert info.device == "cuda" and info.device_id is None
    assert info.stream == 12345
    assert info.interface == "__cuda_array_interface__"
    assert (info.ptr, info.shape, info.strides, info.typestr) == (0x7F0000000000, (4, 5), (4, 16), "<f4")
    assert "stream=12345" in repr(info)
    assert gb.array_info(Obj(None, __cuda_array_interface__=cai(version=2, stream=...))).stream is None
    with pytest.raises(gb.GridbufDeviceError) as e:
        gb.as_numpy(obj)
    check(e, gb.GridbufDeviceError, RuntimeError, "GPU", "as_cupy")


@pytest.mark.parametrize(
    "changes, gb_class, fragments",
    [
        ({"stream": 0}, gb.GridbufValueError, ["__cuda_array_interface__['stream'] 0", "ambiguous"]),
        ({"version": 1}, gb.GridbufValueError, ["__cuda_array_interface__['version'] 1"]),
        ({"data": ...}, gb.GridbufValueError, ["has no 'data' key"]),
        ({"data": 123}, gb.GridbufTypeError, ["__cuda_array_interface__['data']"]),
        ({"mask": object()}, gb.GridbufValueError, ["__cuda_array_interface__['mask']"]),
        ({"typestr": "<M8"}, gb.GridbufValueError, ["__cuda_array_interface__['typestr']"]),
        ({"data": (0, False)}, gb.GridbufValueError, ["null pointer"]),
    ],
    ids=["stream-0", "version", "no-data", "data-type", "mask", "datetime", "null"],
)
def test_bad_cuda_array_interfaces(changes, gb_class, fragments):
    with pytest.raises(gb_class) as e:
        gb.array_info(Obj(None, __cuda_array_interface__=cai(**changes)))
    check(e, gb_class, (ValueError, TypeError), *fragments)


# --------------------------------------------------------------------------------------------
# DLPack
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("producer", [DLPackOnly, LegacyDLPack], ids=["versioned", "legacy"])
@pytest.mark.parametrize("name", ["C", "F", "sliced", "reversed", "empty", "transposed"])
def test_dlpack_round_trip(producer, name):
    a = layouts()[name].copy() if name == "C" else layouts()[name]
    if name == "F":
        a = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    w = producer(a)
    info = gb.array_info(w)
    assert info.interface == "__dlpack__"
    assert isinstance(info.owner, gb.DLPackOwner)
    assert info.owner.producer is w
    assert info.owner.version == ((1, 0) if producer is DLPackOnly else None)
    v = gb.as_numpy(w)
    assert v.shape == a.shape and v.dtype == a.dtype and np.array_equal(v, a)
    assert isinstance(v.base, gb.DLPackOwner)
    if a.size:
        assert v.strides == a.strides and address(v) == address(a)
        v.flat[0] = -7  # zero-copy: the producer's memory
        assert a.flat[0] == -7
    # and back: NumPy consumes what gridbuf made
    assert np.array_equal(np.from_dlpack(v), a)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != np.float16] + [np.dtype(np.float16)], ids=str)
def test_dlpack_dtypes(dtype):
    a = np.ones((2, 3), dtype=dtype)
    v = gb.as_numpy(DLPackOnly(a))
    assert v.dtype == a.dtype
    assert np.shares_memory(v, a)


def test_dlpack_readonly_is_honoured():
    a = np.arange(6.0)
    a.flags.writeable = False
    w = DLPackOnly(a)
    assert gb.array_info(w).readonly
    v = gb.as_numpy(w)
    assert not v.flags.writeable
    assert v.base.readonly
    with pytest.raises(ValueError):
        v.flags.writeable = True


def test_dlpack_owner_keeps_the_producer_alive_and_releases_it():
    a = np.arange(1000.0)
    w = DLPackOnly(a)
    ref_w, ref_a = weakref.ref(w), weakref.ref(a)
    v = gb.as_numpy(w)
    info = gb.array_info(w)
    del w, a
    gc.collect()
    assert ref_a() is not None and ref_w() is not None
    assert v[999] == 999.0
    del v
    gc.collect()
    assert ref_a() is not None  # the ArrayInfo still holds its own tensor
    del info
    gc.collect()
    assert ref_a() is None and ref_w() is None


def test_dlpack_consumed_capsule_is_refused():
    w = SameCapsule(np.arange(3.0))
    gb.array_info(w)  # takes the capsule
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(w)
    check(e, gb.GridbufValueError, ValueError, "already consumed")
    w2 = SameCapsule(np.arange(3.0))
    np.from_dlpack(w2)  # NumPy took it
    with pytest.raises(gb.GridbufValueError) as e:
        gb.as_numpy(w2)
    check(e, gb.GridbufValueError, ValueError, "already consumed")


def test_dlpack_bad_producers():
    a = np.arange(3.0)
    opencl = Obj(a, __dlpack__=lambda **kw: a.__dlpack__(**kw), __dlpack_device__=lambda: (4, 0))
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(opencl)
    check(e, gb.GridbufValueError, ValueError, "__dlpack_device__()", "kDLOpenCL", "kDLCPU (1)")
    lying = Obj(a, __dlpack__=lambda **kw: a.__dlpack__(**kw), __dlpack_device__=lambda: (2, 0))
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(lying)
    check(e, gb.GridbufValueError, ValueError, "DLTensor.device cpu:0", "cuda:0")
    bad_device = Obj(a, __dlpack__=lambda **kw: a.__dlpack__(**kw), __dlpack_device__=lambda: "cpu")
    with pytest.raises(gb.GridbufTypeError) as e:
        gb.array_info(bad_device)
    check(e, gb.GridbufTypeError, TypeError, "__dlpack_device__()")
    not_capsule = Obj(a, __dlpack__=lambda **kw: 42)
    with pytest.raises(gb.GridbufTypeError) as e:
        gb.array_info(not_capsule)
    check(e, gb.GridbufTypeError, TypeError, "__dlpack__()", "PyCapsule")
    swapped = DLPackOnly(np.arange(3.0).astype(np.dtype(float).newbyteorder()))
    with pytest.raises(BufferError):  # the producer's own refusal passes through
        gb.as_numpy(swapped)


def test_numpy_from_dlpack_of_gridbuf_objects():
    arr = gb.zeros((3, 4), backend="gt:cpu_ifirst")
    arr[1, 2] = 5
    f = gb.Field(arr)
    for obj in (arr, f, gb.as_numpy(f), gb.as_numpy(DLPackOnly(arr))):
        back = np.from_dlpack(obj)
        assert np.shares_memory(back, arr) and back[1, 2] == 5 and back.strides == arr.strides


# --------------------------------------------------------------------------------------------
# __gt_data_interface__
# --------------------------------------------------------------------------------------------
def test_data_interface_host_entry():
    a = np.arange(12.0).reshape(3, 4)
    calls = []
    entry = iface(a, dims="JI", halo=((1, 1), (0, 2)), acquire=lambda: calls.append("a"), release=None)
    for key in (None, "cpu"):
        obj = Obj(a, __gt_data_interface__={key: entry})
        info = gb.array_info(obj)
        assert_info_matches(info, a, "__gt_data_interface__")
        assert_same_view(gb.as_numpy(obj), a)
    assert calls == []  # extracting never calls the callbacks
    old = Obj(a, __gt_interface__={None: iface(a, version=...)})
    assert gb.array_info(old).interface == "__gt_data_interface__"
    # a data interface entry needs no version
    gb.array_info(Obj(a, __gt_data_interface__={None: iface(a, version=...)}))
    # the entry may forward the object's own buffer
    b = bytearray(np.arange(4, dtype=np.int16).tobytes())
    entry = {"shape": (2, 2), "typestr": f"{NATIVE}i2", "data": b}
    assert gb.as_numpy(Obj(b, __gt_data_interface__={None: entry})).tolist() == [[0, 1], [2, 3]]


def test_data_interface_gpu_entry():
    entry = cai(stream=7, dims="IJ", version=...)
    for key in ("gpu", "cuda"):
        obj = Obj(None, __gt_data_interface__={key: entry})
        info = gb.array_info(obj)
        assert (info.device, info.interface, info.stream, info.shape) == ("cuda", "__gt_data_interface__", 7, (4, 5))
        with pytest.raises(gb.GridbufDeviceError):
            gb.as_numpy(obj)
    # a host entry wins over the GPU one, and so does an array interface
    a = np.zeros((4, 5), np.float32)
    both = Obj(a, __gt_data_interface__={"gpu": entry, None: iface(a)})
    assert gb.array_info(both).device == "cpu"
    host_ai = Obj(a, __gt_data_interface__={"gpu": entry}, __array_interface__=iface(a))
    assert gb.array_info(host_ai).interface == "__array_interface__"
    # the GPU entry and the CUDA array interface must agree
    agree = Obj(None, __gt_data_interface__={"gpu": entry}, __cuda_array_interface__=cai())
    assert gb.array_info(agree).stream == 7
    disagree = Obj(None, __gt_data_interface__={"gpu": entry}, __cuda_array_interface__=cai(shape=(5, 4)))
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(disagree)
    check(e, gb.GridbufValueError, ValueError, "shape (5, 4) from __cuda_array_interface__")
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(Obj(None, __gt_data_interface__={"gpu": cai(stream=-3)}))
    check(e, gb.GridbufValueError, ValueError, "__gt_data_interface__['stream'] -3")
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(Obj(None, __gt_data_interface__={"gpu": cai(data=None)}))
    check(e, gb.GridbufValueError, ValueError, "__gt_data_interface__['data'] is None")


@pytest.mark.parametrize(
    "changes, gb_class, fragments",
    [
        ({"dims": "IJX"}, gb.GridbufValueError, ["__gt_data_interface__['dims']", "'IJX'"]),
        ({"dims": "II"}, gb.GridbufValueError, ["__gt_data_interface__['dims']", "more than once"]),
        ({"dims": "IJK"}, gb.GridbufValueError, ["__gt_data_interface__['dims']", "2 in all"]),
        ({"dims": ("I", 3)}, gb.GridbufTypeError, ["__gt_data_interface__['dims']"]),
        ({"dims": 5}, gb.GridbufTypeError, ["__gt_data_interface__['dims']"]),
        ({"halo": ((1, 1),)}, gb.GridbufValueError, ["__gt_data_interface__['halo']", "2 in all"]),
        ({"halo": ((2, 2), (0, 0))}, gb.GridbufValueError, ["__gt_data_interface__['halo']", "larger than its extent 3"]),
        ({"halo": ((-1, 0), (0, 0))}, gb.GridbufValueError, ["__gt_data_interface__['halo']"]),
        ({"halo": "ab"}, gb.GridbufTypeError, ["__gt_data_interface__['halo']"]),
        ({"acquire": 3}, gb.GridbufTypeError, ["__gt_data_interface__['acquire']", "callable"]),
        ({"touch": "x"}, gb.GridbufTypeError, ["__gt_data_interface__['touch']", "callable"]),
        ({"shape": ...}, gb.GridbufValueError, ["__gt_data_interface__ has no 'shape' key"]),
        ({"typestr": "<U2"}, gb.GridbufValueError, ["__gt_data_interface__['typestr']"]),
        ({"shape": (3, "4")}, gb.GridbufTypeError, ["__gt_data_interface__['shape']"]),
    ],
    ids=lambda v: str(v)[:30] if isinstance(v, dict) else "",
)
def test_bad_data_interface_entries(changes, gb_class, fragments):
    a = np.zeros((3, 4))
    obj = Obj(a, __gt_data_interface__={None: iface(a, **changes)})
    with pytest.raises(gb_class) as e:
        gb.array_info(obj)
    check(e, gb_class, (ValueError, TypeError), *fragments)
    old = Obj(a, __gt_interface__={None: iface(a, **changes)})
    with pytest.raises(gb_class) as e:
        gb.array_info(old)
    check(e, gb_class, (ValueError, TypeError), *(f.replace("__gt_data_interface__", "__gt_interface__") for f in fragments))


def test_bad_data_interface_mappings():
    a = np.zeros(3)
    with pytest.raises(gb.GridbufTypeError) as e:
        gb.array_info(Obj(a, __gt_data_interface__=[1, 2]))
    check(e, gb.GridbufTypeError, TypeError, "__gt_data_interface__", "mapping")
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(Obj(a, __gt_data_interface__={"tpu": iface(a)}))
    check(e, gb.GridbufValueError, ValueError, "__gt_data_interface__", "'tpu'", "None or \"cpu\"")
    with pytest.raises(gb.GridbufTypeError) as e:
        gb.array_info(Obj(a, __gt_data_interface__={None: 5}))
    check(e, gb.GridbufTypeError, TypeError, "__gt_data_interface__", "expected a dict")


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"shape": (4, 3), "strides": None}, "shape"),
        ({"typestr": "<i8" if NATIVE == "<" else ">i8", "descr": ...}, "dtype"),
        ({"strides": (8, 24)}, "strides"),
        ("pointer", "data pointer"),
    ],
    ids=["shape", "dtype", "strides", "pointer"],
)
def test_disagreeing_interfaces_are_an_error(changes, field):
    a = np.arange(12.0).reshape(3, 4)
    if changes == "pointer":
        changes = {"data": (address(a) + 8, False)}
    obj = Obj(a, __gt_data_interface__={None: iface(a)}, __array_interface__=iface(a, **changes))
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(obj)
    check(e, gb.GridbufValueError, ValueError, f"invalid {field} ", "from __array_interface__", "as __gt_data_interface__ gives")
    # agreeing interfaces are fine, and read-only if either says so
    ok = Obj(a, __gt_data_interface__={None: iface(a)}, __array_interface__=iface(a, data=(address(a), True)))
    assert gb.array_info(ok).readonly
    assert not gb.as_numpy(ok).flags.writeable


def test_data_interface_disagreeing_with_buffer():
    b = BufferWithInterface(bytes(16))
    b.interface = {"version": 3, "shape": (16,), "typestr": "|u1", "data": None}
    entry = {"shape": (2,), "typestr": f"{NATIVE}f8", "data": (address(np.frombuffer(b, np.uint8)), False)}
    b.__class__ = type("WithDI", (BufferWithInterface,), {"__gt_data_interface__": {None: entry}})
    with pytest.raises(gb.GridbufValueError) as e:
        gb.array_info(b)
    check(e, gb.GridbufValueError, ValueError, "from __array_interface__", "as __gt_data_interface__ gives")


# --------------------------------------------------------------------------------------------
# Field and xarray
# --------------------------------------------------------------------------------------------
def test_field_round_trips():
    arr = gb.zeros((5, 6, 7), backend="gt:cpu_kfirst", halo=((1, 1), (1, 1), (0, 0)))
    f = gb.Field(arr)
    assert gb.as_numpy(f) is arr
    assert_info_matches(gb.array_info(f), arr)
    dv = f.domain_view
    assert_same_view(gb.as_numpy(dv), arr[1:-1, 1:-1, :])
    # a Field of a memoryview holds a view of the same memory
    b = bytearray(16)
    fb = gb.Field(memoryview(b).cast("d"))
    v = gb.as_numpy(fb)
    v[1] = 2.5
    assert np.frombuffer(b)[1] == 2.5
    ro = np.arange(3.0)
    ro.flags.writeable = False
    assert gb.array_info(gb.Field(ro)).readonly
    # Field -> as_numpy -> Field
    assert gb.Field(gb.as_numpy(f)).array is arr
    # a Field of a DLPack-only array
    w = DLPackOnly(np.arange(4.0))
    assert np.shares_memory(gb.as_numpy(gb.Field(gb.as_numpy(w))), w.array)


try:  # (importlib.util.find_spec("xarray") here would defeat gridbuf's import hook)
    import xarray as xr
except ImportError:  # xarray is optional
    xr = None


@pytest.mark.skipif(xr is None, reason="xarray not installed")
def test_xarray_dataarrays():
    a = np.arange(12.0).reshape(3, 4)
    for dims in (("lat", "lon"), ("I", "J")):
        da = xr.DataArray(a, dims=dims)
        assert gb.as_numpy(da) is a
        assert_info_matches(gb.array_info(da), a)
    view = xr.DataArray(a, dims=("I", "J"))[::-1, 1:]
    assert_same_view(gb.as_numpy(view), a[::-1, 1:])


def test_full_extract_reads_the_wrappers_data_interfaces():
    """The binder's extract() reads a Field's and a DataArray's own data interface (dims, halo);
    array_info and as_numpy skip it, since the memory is the same."""
    from gridbuf._gridbuf import _extract

    a = np.arange(12.0).reshape(3, 4)
    info, entry = _extract(a)
    assert entry is None and info.owner is a
    f = gb.Field(a, dims="JI", halo=((1, 1), (0, 0)))
    info, entry = _extract(f)
    assert_info_matches(info, a, "__gt_data_interface__")
    assert tuple(entry["dims"]) == ("J", "I") and tuple(entry["halo"]) == ((1, 1), (0, 0))
    assert info.owner is f
    assert gb.array_info(f).interface == "__array_interface__"
    obj = Obj(a, __gt_data_interface__={None: iface(a, dims="IJ")})
    info, entry = _extract(obj)
    assert entry["dims"] == "IJ" and info.owner is obj
    if xr is not None:
        info, entry = _extract(xr.DataArray(a, dims=("I", "J")))
        assert tuple(entry["dims"]) == ("I", "J") and info.interface == "__gt_data_interface__"
        info, entry = _extract(xr.DataArray(a, dims=("x", "y")))
        assert entry is None and info.owner is a


def test_raw_buffer_behind_an_interface_need_not_match():
    """data None: the object's buffer only provides the bytes, so its own format and shape (raw
    bytes here) are not compared with the interfaces that use it."""
    b = BufferWithInterface(np.arange(4, dtype=np.float64).tobytes())
    b.interface = {"version": 3, "shape": (2, 2), "typestr": f"{NATIVE}f8", "data": None}
    b.__class__ = type("WithDI", (BufferWithInterface,), {"__gt_data_interface__": {None: {k: v for k, v in b.interface.items() if k != "version"}}})
    assert gb.as_numpy(b).tolist() == [[0.0, 1.0], [2.0, 3.0]]


# --------------------------------------------------------------------------------------------
# Nothing changes the memory
# --------------------------------------------------------------------------------------------
def test_nothing_gridbuf_does_changes_memory():
    a = np.random.default_rng(1).random((4, 5))
    sources = [
        a,
        a[::-1],
        memoryview(a),
        bytearray(a.tobytes()),
        array.array("d", a.ravel()),
        Obj(a, __array_interface__=iface(a)),
        Obj(a, __gt_data_interface__={None: iface(a, dims="IJ")}),
        DLPackOnly(a),
        LegacyDLPack(a),
        gb.Field(a),
    ]
    before = a.tobytes()
    for src in sources:
        own = bytes(src) if isinstance(src, (bytearray, array.array)) else None
        gb.array_info(src)
        gb.as_numpy(src)
        assert a.tobytes() == before
        if own is not None:
            assert bytes(src) == own


# --------------------------------------------------------------------------------------------
# Hypothesis: random layouts and dtypes through the array-interface parser
# --------------------------------------------------------------------------------------------
ALL_DTYPES = DTYPES + [d.newbyteorder() for d in DTYPES if d.itemsize > 1]


@st.composite
def raw_layouts(draw):
    """(dtype, shape, byte strides or None, readonly)."""
    dtype = draw(st.sampled_from(ALL_DTYPES))
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.integers(0, 5)) for _ in range(ndim))
    if draw(st.booleans()):
        strides = None
    else:
        step = dtype.itemsize if draw(st.booleans()) else 1
        strides = tuple(draw(st.integers(-6, 6)) * step for _ in range(ndim))
    return dtype, shape, strides, draw(st.booleans())


@given(raw_layouts(), st.integers(0, 16))
def test_random_array_interfaces_match_numpy(layout, pad):
    dtype, shape, strides, readonly = layout
    eff = strides if strides is not None else c_strides(shape, dtype.itemsize)
    if 0 in shape:
        low, high = 0, 0
    else:
        reach = [s * (n - 1) for n, s in zip(shape, eff)]
        low = sum(r for r in reach if r < 0)
        high = sum(r for r in reach if r > 0) + dtype.itemsize
    base = np.frombuffer(np.random.default_rng(len(shape)).bytes(high - low + 2 * pad + 1), np.uint8).copy()
    offset = pad - low
    ptr = address(base) + offset
    d = {"version": 3, "shape": shape, "typestr": dtype.str, "data": (ptr, readonly), "strides": strides}
    obj = Obj(base, __array_interface__=d)
    info = gb.array_info(obj)
    assert (info.ptr, info.shape, info.strides, info.dtype, info.readonly) == (ptr, shape, tuple(eff), dtype, readonly)
    v = gb.as_numpy(obj)
    ref = np.ndarray(shape, dtype, buffer=base, offset=offset, strides=eff) if 0 not in shape else np.empty(shape, dtype)
    assert v.shape == shape and v.dtype == dtype and strides_agree(shape, v.strides, eff)
    assert v.flags.writeable == (not readonly)
    if 0 not in shape:
        assert address(v) == ptr
        assert v.tobytes() == ref.tobytes()
        assert v.tobytes() == np.asarray(obj).tobytes()  # NumPy's own parser agrees


@given(
    st.sampled_from([d for d in DTYPES]),
    st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)),
    st.tuples(*[st.sampled_from([1, 2, -1, -2])] * 3),
    st.permutations(range(3)),
)
def test_random_views_through_every_interface(dtype, shape, steps, axes):
    a = np.arange(np.prod(shape)).astype(dtype).reshape(shape)
    view = a[tuple(slice(None, None, s) for s in steps)].transpose(axes)
    for src in (view, memoryview(view), Obj(a, __array_interface__=iface(view)), DLPackOnly(view)):
        info = gb.array_info(src)
        assert (info.ptr, info.shape, info.dtype) == (address(view), view.shape, view.dtype)
        assert strides_agree(view.shape, info.strides, view.strides)
        assert_same_view(gb.as_numpy(src), view)


# --------------------------------------------------------------------------------------------
# as_cupy
# --------------------------------------------------------------------------------------------
HAS_CUPY = importlib.util.find_spec("cupy") is not None


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed")
def test_as_cupy_without_cupy_is_a_clear_error():
    for obj in (np.zeros(3), Obj(None, __cuda_array_interface__=cai())):
        with pytest.raises(gb.GridbufDeviceError) as e:
            gb.as_cupy(obj)
        check(e, gb.GridbufDeviceError, RuntimeError, "as_cupy", "CuPy")


@pytest.fixture
def fake_cupy(monkeypatch):
    """A stand-in CuPy module that records what as_cupy asks of it (no GPU needed)."""
    calls = []

    class ndarray:
        def __init__(self, shape, dtype=None, memptr=None, strides=None):
            self.shape, self.dtype, self.memptr, self.strides = shape, dtype, memptr, strides

    class UnownedMemory:
        def __init__(self, ptr, size, owner, device_id):
            self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id

    class MemoryPointer:
        def __init__(self, mem, offset):
            self.mem, self.offset = mem, offset

    class ExternalStream:
        def __init__(self, handle):
            self.handle = handle

        def synchronize(self):
            calls.append(("sync", self.handle))

    cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
        UnownedMemory=UnownedMemory,
        MemoryPointer=MemoryPointer,
        ExternalStream=ExternalStream,
    )
    cp = types.ModuleType("cupy")
    cp.ndarray = ndarray
    cp.cuda = cuda
    cp.asarray = lambda obj: calls.append(("asarray", obj)) or "from-asarray"
    cp.from_dlpack = lambda obj: calls.append(("from_dlpack", obj)) or "from-dlpack"
    cp.calls = calls
    monkeypatch.setitem(sys.modules, "cupy", cp)
    return cp


def test_as_cupy_dispatch(fake_cupy):
    cp = fake_cupy
    arr = cp.ndarray((2,))
    assert gb.as_cupy(arr) is arr
    with pytest.raises(gb.GridbufDeviceError) as e:
        gb.as_cupy(np.zeros(3))
    check(e, gb.GridbufDeviceError, RuntimeError, "cpu memory", "cupy.asarray")
    obj = Obj(None, __cuda_array_interface__=cai())
    assert gb.as_cupy(obj) == "from-asarray" and cp.calls[-1] == ("asarray", obj)
    with pytest.raises(gb.GridbufValueError) as e:
        gb.as_cupy(Obj(None, __cuda_array_interface__=cai(data=(0x7F0000000000, True))))
    check(e, gb.GridbufValueError, ValueError, "read-only")
    entry = cai(strides=(-20, 4), stream=9, version=...)
    holder = Obj(None, __gt_data_interface__={"gpu": entry})
    out = gb.as_cupy(holder)
    assert cp.calls[-1] == ("sync", 9)
    assert isinstance(out, cp.ndarray) and out.shape == (4, 5) and out.strides == (-20, 4)
    mem = out.memptr.mem
    assert (mem.ptr, mem.size, out.memptr.offset) == (0x7F0000000000 - 60, 80, 60)
    assert mem.owner is holder and mem.device_id == -1


# --------------------------------------------------------------------------------------------
# The API surface
# --------------------------------------------------------------------------------------------
def test_exports_and_stubs():
    import pathlib

    for name in ("array_info", "as_numpy", "as_cupy", "ArrayInfo", "DLPackOwner"):
        assert name in gb.__all__ and hasattr(gb, name)
    stubs = (pathlib.Path(gb.__file__).parent / "_gridbuf.pyi").read_text()
    for name in ("def array_info(", "def as_numpy(", "class ArrayInfo", "class DLPackOwner"):
        assert name in stubs
    info = gb.array_info(np.zeros(2))
    assert isinstance(info, gb.ArrayInfo)
    assert repr(info).startswith("ArrayInfo(ptr=0x") and "interface='__array_interface__'" in repr(info)
    with pytest.raises(AttributeError):
        info.ptr = 3


def test_plain_interface_is_not_read_beside_an_entry_with_callbacks():
    """Memory managed by acquire/touch/release is read only through its data-interface entry: the
    plain ``__array_interface__`` (which may have effects, or disagree) is not consulted, while an
    entry without callbacks is still cross-checked against it."""
    a = np.arange(12.0).reshape(3, 4)
    reads = []

    class Managed:
        __gt_data_interface__ = {None: {**iface(a), "acquire": lambda: None}}

        @property
        def __array_interface__(self):
            reads.append(1)
            return iface(a, shape=(4, 3), strides=None)  # would disagree if it were read

    info = gb.array_info(Managed())
    assert info.shape == (3, 4) and reads == []
    plain = Obj(a, __gt_data_interface__={None: iface(a)}, __array_interface__=iface(a, shape=(4, 3), strides=None))
    with pytest.raises(gb.GridbufValueError):
        gb.array_info(plain)
