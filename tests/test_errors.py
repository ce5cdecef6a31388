"""Bad input: every error is a gridbuf error class that also derives from the matching built-in,
and its message names the parameter and the offending value."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gridbuf as gb
from gridbuf import errors

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
#: Every function taking the allocation keywords, called with (shape, dtype, **kw).
FUNCS = {
    "plan": lambda shape, dtype, **kw: gb.plan(shape, dtype, **kw),
    "empty": lambda shape, dtype, **kw: gb.empty(shape, dtype, **kw),
    "zeros": lambda shape, dtype, **kw: gb.zeros(shape, dtype, **kw),
    "ones": lambda shape, dtype, **kw: gb.ones(shape, dtype, **kw),
    "full": lambda shape, dtype, **kw: gb.full(shape, 1, dtype, **kw),
    "from_array": lambda shape, dtype, **kw: gb.from_array(np.zeros(shape), dtype, **kw),
    "empty_like": lambda shape, dtype, **kw: gb.empty_like(np.zeros(shape), dtype, **kw),
    "zeros_like": lambda shape, dtype, **kw: gb.zeros_like(np.zeros(shape), dtype, **kw),
    "ones_like": lambda shape, dtype, **kw: gb.ones_like(np.zeros(shape), dtype, **kw),
    "full_like": lambda shape, dtype, **kw: gb.full_like(np.zeros(shape), 1, dtype, **kw),
}
#: The functions that take a shape argument.
SHAPE_FUNCS = ["plan", "empty", "zeros", "ones", "full"]
#: The functions that allocate from a shape (not plan).
ALLOC_FUNCS = ["empty", "zeros", "ones", "full"]


def check(excinfo, gb_class, builtin, *fragments, any_of=()):
    """The exception is a ``gb_class`` and a ``builtin``, and its message holds every fragment
    (and at least one of ``any_of``)."""
    e = excinfo.value
    assert isinstance(e, gb.GridbufError), type(e).__mro__
    assert isinstance(e, gb_class), type(e).__mro__
    assert isinstance(e, builtin), type(e).__mro__
    msg = str(e)
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    if any_of:
        assert any(f in msg for f in any_of), f"none of {any_of!r} in {msg!r}"


# --------------------------------------------------------------------------------------------
# The classes
# --------------------------------------------------------------------------------------------
def test_error_class_hierarchy():
    assert gb.GridbufError is errors.GridbufError
    for cls, builtin in [
        (gb.GridbufValueError, ValueError),
        (gb.GridbufTypeError, TypeError),
        (gb.GridbufOverflowError, OverflowError),
        (gb.GridbufMemoryError, MemoryError),
        (gb.UnknownPresetError, ValueError),
    ]:
        assert issubclass(cls, gb.GridbufError)
        assert issubclass(cls, builtin)
    assert issubclass(gb.UnknownPresetError, gb.GridbufValueError)
    # gt4py.storage raises RuntimeError for an unknown backend; handlers written for it keep working.
    assert issubclass(gb.UnknownPresetError, RuntimeError)
    with pytest.raises(RuntimeError, match="backend"):
        gb.zeros((3, 4), backend="non_existing_backend")
    # except ValueError keeps working for code written against NumPy or GT4Py.
    with pytest.raises(ValueError):
        gb.zeros((3, -1))
    with pytest.raises(TypeError):
        gb.zeros((3.0,))


def test_error_classes_are_declared_once_in_the_compiled_module():
    from gridbuf import _gridbuf

    for name in errors.__all__:
        cls = getattr(errors, name)
        # One class per name: gridbuf.errors, gridbuf and the compiled module hold the same one,
        # which is also the class the Rust code raises.
        assert cls is getattr(gb, name) is getattr(_gridbuf, name)
        assert cls.__module__ == "gridbuf.errors" and cls.__qualname__ == name
        assert cls.__doc__
    with pytest.raises(gb.UnknownPresetError) as excinfo:
        gb.zeros((3,), backend="non_existing_backend")
    assert type(excinfo.value) is errors.UnknownPresetError
    assert issubclass(gb.GridbufDeviceError, RuntimeError)


@pytest.mark.parametrize("name", errors.__all__)
def test_errors_pickle(name):
    import pickle

    cls = getattr(errors, name)
    e = pickle.loads(pickle.dumps(cls("a message")))
    assert type(e) is cls and str(e) == "a message"


def test_stencil_call_message_has_no_empty_value():
    with pytest.raises(ValueError) as excinfo:
        gb.kernels.copy(np.zeros((3, 3, 3)), np.zeros((3, 3, 3)), domain=(5, 5, 5))
    check(excinfo, gb.GridbufValueError, ValueError, "invalid stencil call: field \"inp\"")
    assert " :" not in str(excinfo.value)


# --------------------------------------------------------------------------------------------
# Shape
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fname", SHAPE_FUNCS)
@pytest.mark.parametrize(
    "shape, fragment",
    [
        (5.0, "5.0"),
        ("abc", "abc"),
        (None, "None"),
        ([1.5], "1.5"),
        ([True], "True"),
        ((3, False), "False"),
        ((3, "4"), "'4'"),
        (5, "5"),
        (object(), "object"),
    ],
)
def test_shape_of_wrong_type(fname, shape, fragment):
    with pytest.raises(TypeError) as excinfo:
        FUNCS[fname](shape, None)
    check(excinfo, gb.GridbufTypeError, TypeError, "shape", fragment)


@pytest.mark.parametrize("fname", SHAPE_FUNCS)
@pytest.mark.parametrize("shape", [(-1,), (3, -2), [4, 5, -100]])
def test_negative_shape(fname, shape):
    with pytest.raises(ValueError) as excinfo:
        FUNCS[fname](shape, None)
    check(excinfo, gb.GridbufValueError, ValueError, "shape", str(min(shape)))


@pytest.mark.parametrize("fname", SHAPE_FUNCS)
@pytest.mark.parametrize(
    "shape, dtype",
    [
        ((2**62, 2**62), np.float64),
        ((2**61,), np.float64),  # 2**64 bytes
        ((2**60,), np.float64),  # 2**63 bytes: beyond isize::MAX
        ((2**31, 2**31, 2**31), np.int8),
        ((2**40, 2**30), np.complex128),
    ],
)
def test_byte_size_overflow(fname, shape, dtype):
    with pytest.raises(OverflowError) as excinfo:
        FUNCS[fname](shape, dtype)
    check(excinfo, gb.GridbufOverflowError, OverflowError, "shape", str(shape[0]))


@pytest.mark.parametrize("fname", ["plan", "zeros"])
@pytest.mark.parametrize("shape", [(2**63,), (3, 2**70)], ids=["2**63", "3,2**70"])
def test_extent_beyond_the_address_space_is_an_overflow(fname, shape):
    # A non-negative int extent is of the right type; that it cannot be addressed is an
    # overflow, as for (2**62, 2**62), not a TypeError.
    with pytest.raises(OverflowError) as excinfo:
        FUNCS[fname](shape, np.float64)
    check(excinfo, gb.GridbufOverflowError, OverflowError, "shape", str(max(shape)))


def test_overflow_through_row_padding():
    # The extent fits, the padded extent does not.
    with pytest.raises(OverflowError) as excinfo:
        gb.plan((2**63 - 1,), np.int8, alignment=2**20)
    check(excinfo, gb.GridbufOverflowError, OverflowError, "shape")


# --------------------------------------------------------------------------------------------
# Memory: a size that fits the address space but cannot be allocated
# --------------------------------------------------------------------------------------------
def test_out_of_memory_is_a_memory_error_and_does_not_crash():
    # In a child process: a failed allocation must raise, not abort the interpreter.
    code = textwrap.dedent(
        """
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            # Make sure the request cannot succeed, whatever the overcommit policy.
            resource.setrlimit(resource.RLIMIT_AS, (1 << 40, hard))
        import numpy as np
        import gridbuf as gb
        huge = (2**45,)
        calls = {
            "empty": lambda: gb.empty(huge),
            "zeros": lambda: gb.zeros(huge),
            "ones": lambda: gb.ones(huge),
            "full": lambda: gb.full(huge, 2.0),
            "from_array": lambda: gb.from_array(np.broadcast_to(1.0, huge)),
            "zeros_like": lambda: gb.zeros_like(np.broadcast_to(1.0, huge)),
            "full_like": lambda: gb.full_like(np.broadcast_to(1.0, huge), 3),
        }
        for name, call in calls.items():
            try:
                call()
            except gb.GridbufMemoryError as e:
                assert isinstance(e, MemoryError), type(e).__mro__
                assert str(2**48) in str(e), str(e)
                print(name, "MemoryError")
            else:
                print(name, "no error")
        # Still usable afterwards.
        assert gb.ones((10,)).sum() == 10
        print("done")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    lines = r.stdout.split("\n")
    for name in ("empty", "zeros", "ones", "full", "from_array", "zeros_like", "full_like"):
        assert f"{name} MemoryError" in lines, r.stdout
    assert "done" in lines


def test_huge_plan_is_fine():
    # Planning allocates nothing.
    p = gb.plan((2**45,))
    assert p.nbytes == 2**48


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fname", sorted(FUNCS))
@pytest.mark.parametrize("key", ["backend", "defaults"])
def test_unknown_preset(fname, key):
    with pytest.raises(ValueError) as excinfo:
        FUNCS[fname]((3, 4), None, **{key: "gt:cpu_nonexistent"})
    names = sorted(gb.presets())
    check(excinfo, gb.UnknownPresetError, ValueError, "gt:cpu_nonexistent", *names, any_of=("backend", "defaults"))


@pytest.mark.parametrize("fname", ["plan", "zeros", "from_array", "zeros_like"])
@pytest.mark.parametrize("backend", [5, ("numpy",), b"numpy"])
def test_preset_of_wrong_type(fname, backend):
    with pytest.raises(TypeError) as excinfo:
        FUNCS[fname]((3,), None, backend=backend)
    check(excinfo, gb.GridbufTypeError, TypeError, "backend", repr(backend))


def test_preset_lookup_errors():
    with pytest.raises(ValueError) as excinfo:
        gb.preset("nope")
    check(excinfo, gb.UnknownPresetError, ValueError, '"nope"', "name", *sorted(gb.presets()))
    with pytest.raises(TypeError) as excinfo:
        gb.preset(3)
    check(excinfo, gb.GridbufTypeError, TypeError, "name", "3")


def test_register_existing_preset_needs_replace():
    before = gb.preset("numpy")
    with pytest.raises(ValueError) as excinfo:
        gb.register_preset("numpy", device="cpu", base_layout=(2, 1, 0), alignment=64)
    check(excinfo, gb.GridbufValueError, ValueError, "numpy", "replace")
    assert gb.preset("numpy") == before
    assert gb.preset("numpy").base_layout == (0, 1, 2)


@pytest.mark.parametrize(
    "kw, cls, builtin, fragments",
    [
        ({"device": "tpu", "base_layout": "C", "alignment": 1}, gb.GridbufValueError, ValueError, ("device", "tpu")),
        ({"device": "cpu", "base_layout": (0, 0, 1), "alignment": 1}, gb.GridbufValueError, ValueError, ("base_layout", "0, 0, 1")),
        ({"device": "cpu", "base_layout": (0, 1), "alignment": 1}, gb.GridbufValueError, ValueError, ("base_layout", "0, 1")),
        ({"device": "cpu", "base_layout": (0, 1, 3), "alignment": 1}, gb.GridbufValueError, ValueError, ("base_layout", "0, 1, 3")),
        ({"device": "cpu", "base_layout": "X", "alignment": 1}, gb.GridbufValueError, ValueError, ("base_layout", "X")),
        ({"device": "cpu", "base_layout": "C", "alignment": 3}, gb.GridbufValueError, ValueError, ("alignment", "3")),
        ({"device": "cpu", "base_layout": "C", "alignment": 0}, gb.GridbufValueError, ValueError, ("alignment", "0")),
    ],
)
def test_register_preset_validates(unique_name, kw, cls, builtin, fragments):
    with pytest.raises(builtin) as excinfo:
        gb.register_preset(unique_name, **kw)
    check(excinfo, cls, builtin, *fragments)
    assert unique_name not in gb.presets()


def test_register_preset_with_an_empty_name():
    with pytest.raises(ValueError) as excinfo:
        gb.register_preset("", device="cpu", base_layout="C", alignment=1)
    check(excinfo, gb.GridbufValueError, ValueError, "name")
    assert "" not in gb.presets()


# --------------------------------------------------------------------------------------------
# Keywords
# --------------------------------------------------------------------------------------------
KEYWORD_ERRORS = [
    # aligned_index
    ((3, 3), {"aligned_index": (0,)}, gb.GridbufValueError, ValueError, ("aligned_index", "0")),
    ((3, 3), {"aligned_index": (0, 0, 0)}, gb.GridbufValueError, ValueError, ("aligned_index", "0, 0, 0")),
    ((3, 3), {"aligned_index": (-1, 0)}, gb.GridbufValueError, ValueError, ("aligned_index", "-1")),
    ((3, 3), {"aligned_index": (4, 0)}, gb.GridbufValueError, ValueError, ("aligned_index", "4")),
    ((3, 5), {"aligned_index": (0, 6)}, gb.GridbufValueError, ValueError, ("aligned_index", "6")),
    ((3, 3), {"aligned_index": (1.5, 0)}, gb.GridbufTypeError, TypeError, ("aligned_index", "1.5")),
    ((3, 3), {"aligned_index": 1}, gb.GridbufTypeError, TypeError, ("aligned_index", "1")),
    # dims
    ((3,), {"dimensions": "X"}, gb.GridbufValueError, ValueError, ("X",)),
    ((3, 3), {"dims": "II"}, gb.GridbufValueError, ValueError, ("I",)),
    ((3, 3), {"dims": ("J", "J")}, gb.GridbufValueError, ValueError, ("J",)),
    ((3, 3), {"dimensions": ("0", "0")}, gb.GridbufValueError, ValueError, ("0",)),
    ((3, 3), {"dims": "I"}, gb.GridbufValueError, ValueError, ("I",)),
    ((3, 3), {"dims": "IJK"}, gb.GridbufValueError, ValueError, ("I", "J", "K")),
    ((3, 3), {"dims": ("I", "x")}, gb.GridbufValueError, ValueError, ("x",)),
    ((3, 3), {"dims": ("I", "-1")}, gb.GridbufValueError, ValueError, ("-1",)),
    ((3, 3), {"dims": ("I", 5)}, gb.GridbufTypeError, TypeError, ("5",)),
    ((3, 3), {"dims": 5}, gb.GridbufTypeError, TypeError, ("5",)),
    # layout
    ((3, 3), {"layout": (0, 0)}, gb.GridbufValueError, ValueError, ("layout", "0, 0")),
    ((3, 3), {"layout": (0,)}, gb.GridbufValueError, ValueError, ("layout", "0")),
    ((3, 3), {"layout": (0, 1, 2)}, gb.GridbufValueError, ValueError, ("layout", "0, 1, 2")),
    ((3, 3), {"layout": (0, 2)}, gb.GridbufValueError, ValueError, ("layout", "0, 2")),
    ((3, 3), {"layout": (0, -1)}, gb.GridbufValueError, ValueError, ("layout", "-1")),
    ((3, 3), {"layout": ("a", 0)}, gb.GridbufTypeError, TypeError, ("layout", "'a'")),
    ((3, 3), {"layout": "C"}, gb.GridbufTypeError, TypeError, ("layout", "'C'")),
    # alignment
    ((3, 3), {"alignment": 3}, gb.GridbufValueError, ValueError, ("alignment", "3")),
    ((3, 3), {"alignment": 0}, gb.GridbufValueError, ValueError, ("alignment", "0")),
    ((3, 3), {"alignment": -8}, gb.GridbufValueError, ValueError, ("alignment", "-8")),
    ((3, 3), {"alignment": 96}, gb.GridbufValueError, ValueError, ("alignment", "96")),
    ((3, 3), {"alignment": 2**40}, gb.GridbufValueError, ValueError, ("alignment", str(2**40))),
    ((3, 3), {"alignment": "64"}, gb.GridbufTypeError, TypeError, ("alignment", "'64'")),
    ((3, 3), {"alignment": 64.0}, gb.GridbufTypeError, TypeError, ("alignment", "64.0")),
    ((3, 3), {"alignment": True}, gb.GridbufTypeError, TypeError, ("alignment", "True")),
    # halo
    ((3, 3), {"halo": ((2, 2), 0)}, gb.GridbufValueError, ValueError, ("halo", "2")),
    ((3, 3), {"halo": (0, 2)}, gb.GridbufValueError, ValueError, ("halo", "2")),
    ((3, 3), {"halo": ((0, 4), 0)}, gb.GridbufValueError, ValueError, ("halo", "4")),
    ((3, 3), {"halo": (1,)}, gb.GridbufValueError, ValueError, ("halo", "1")),
    ((3, 3), {"halo": (1, 1, 1)}, gb.GridbufValueError, ValueError, ("halo", "(1, 1)")),
    ((3, 3), {"halo": (-1, 0)}, gb.GridbufValueError, ValueError, ("halo", "-1")),
    ((3, 3), {"halo": ((1, 1, 1), 0)}, gb.GridbufValueError, ValueError, ("halo", "1, 1, 1")),
    ((3, 3), {"halo": ("a", 0)}, gb.GridbufTypeError, TypeError, ("halo", "'a'")),
    ((3, 3), {"halo": (1.5, 0)}, gb.GridbufTypeError, TypeError, ("halo", "1.5")),
    # aliases given twice
    ((3,), {"backend": "numpy", "defaults": "numpy"}, gb.GridbufValueError, ValueError, ("backend", "defaults")),
    ((3,), {"dimensions": "I", "dims": "I"}, gb.GridbufValueError, ValueError, ("dims", "dimensions")),
    # unknown keywords
    ((3,), {"foo": 1}, gb.GridbufTypeError, TypeError, ("foo",)),
    ((3,), {"order": "C"}, gb.GridbufTypeError, TypeError, ("order",)),
    ((3,), {"aligned_idx": (0,)}, gb.GridbufTypeError, TypeError, ("aligned_idx",)),
]


@pytest.mark.parametrize("fname", sorted(FUNCS))
@pytest.mark.parametrize(
    "shape, kw, cls, builtin, fragments",
    KEYWORD_ERRORS,
    ids=[f"{'-'.join(kw)}={list(kw.values())[0]!r}" for _, kw, *_ in KEYWORD_ERRORS],
)
def test_keyword_errors(fname, shape, kw, cls, builtin, fragments):
    with pytest.raises(builtin) as excinfo:
        FUNCS[fname](shape, None, **kw)
    key = next(iter(kw))
    names = {"dims": ("dims", "dimensions"), "dimensions": ("dims", "dimensions")}.get(key, (key,))
    check(excinfo, cls, builtin, *fragments, any_of=names)


@pytest.mark.parametrize("fname", ["plan", "zeros"])
@pytest.mark.parametrize(
    "kw, fragment",
    [
        ({"aligned_index": (2**63, 0)}, str(2**63)),
        ({"alignment": 2**64}, str(2**64)),
        ({"layout": (2**63, 0)}, str(2**63)),
        ({"halo": (2**63, 0)}, str(2**63)),
        ({"halo": ((0, 2**63), 0)}, str(2**63)),
        ({"halo": ((-1, 1), 0)}, "-1"),
    ],
    ids=["aligned_index=2**63", "alignment=2**64", "layout=2**63", "halo=2**63", "halo=(0,2**63)", "halo=(-1,1)"],
)
def test_int_values_out_of_range_are_value_errors(fname, kw, fragment):
    # An int of the right type whose value is out of range (negative, or too large to be an
    # index or an alignment) is a ValueError, as it is for small out-of-range values; it is not
    # a TypeError.
    with pytest.raises(ValueError) as excinfo:
        FUNCS[fname]((3, 3), None, **kw)
    check(excinfo, gb.GridbufValueError, ValueError, next(iter(kw)), fragment)


@pytest.mark.parametrize("fname", ["plan", "zeros"])
def test_halo_and_aligned_index_checked_against_the_user_shape_with_subarray_dtype(fname):
    # The subarray axes are appended; per-axis keywords are for the shape given.
    with pytest.raises(ValueError) as excinfo:
        FUNCS[fname]((3, 4), ("f8", (2,)), aligned_index=(0, 0, 0))
    check(excinfo, gb.GridbufValueError, ValueError, "aligned_index")
    assert FUNCS[fname]((3, 4), ("f8", (2,)), aligned_index=(1, 1), halo=(1, 0)).shape == (3, 4, 2)


# --------------------------------------------------------------------------------------------
# dtype
# --------------------------------------------------------------------------------------------
BAD_DTYPES = [
    (object, "O"),
    (np.dtype(object), "O"),
    ("U3", "U3"),
    (str, "U"),
    ("S4", "S4"),
    ([("a", "f8"), ("b", "i4")], "('a'"),
    ("M8[s]", "M8"),
    ("m8[ns]", "m8"),
    ("V8", "V8"),
    ("notadtype", "notadtype"),
    (("U2", (3,)), "U2"),
]


@pytest.mark.parametrize("fname", sorted(FUNCS))
@pytest.mark.parametrize("dtype, fragment", BAD_DTYPES, ids=[repr(d) for d, _ in BAD_DTYPES])
def test_unsupported_dtype(fname, dtype, fragment):
    with pytest.raises(TypeError) as excinfo:
        FUNCS[fname]((3, 4), dtype)
    check(excinfo, gb.GridbufTypeError, TypeError, "dtype", fragment)


@pytest.mark.parametrize("source", [np.array(["a", "b"]), np.array([object(), None]), np.array(["2020-01-01"], "M8[D]")])
def test_from_array_of_unsupported_dtype(source):
    with pytest.raises(TypeError) as excinfo:
        gb.from_array(source)
    check(excinfo, gb.GridbufTypeError, TypeError, "dtype", repr(source.dtype))
    with pytest.raises(TypeError) as excinfo:
        gb.zeros_like(source)
    check(excinfo, gb.GridbufTypeError, TypeError, "dtype")


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, dtype, cls, builtin, fragment",
    [
        (-1, np.uint8, gb.GridbufOverflowError, OverflowError, "-1"),
        (300, np.int8, gb.GridbufOverflowError, OverflowError, "300"),
        ("abc", np.float64, gb.GridbufValueError, ValueError, "'abc'"),
        ([1, 2, 3], np.float64, gb.GridbufTypeError, TypeError, "[1, 2, 3]"),
    ],
)
def test_full_with_unconvertible_fill_value(value, dtype, cls, builtin, fragment):
    with pytest.raises(builtin) as excinfo:
        gb.full((3,), value, dtype)
    check(excinfo, cls, builtin, "fill_value", fragment)
    with pytest.raises(builtin) as excinfo:
        gb.full_like(np.zeros(3, dtype), value)
    check(excinfo, cls, builtin, "fill_value", fragment)


def test_from_array_errors():
    with pytest.raises(ValueError) as excinfo:
        gb.from_array(np.zeros((2, 3)), ("f8", (2,)))
    check(excinfo, gb.GridbufValueError, ValueError, "data", "2, 3")
    with pytest.raises(ValueError) as excinfo:
        gb.from_array(["x", "y"], np.float64)
    check(excinfo, gb.GridbufValueError, ValueError, "data", "'x'")
    # A ragged list is not an array: NumPy says ValueError, gridbuf may say either.
    with pytest.raises((TypeError, ValueError)) as excinfo:
        gb.from_array([[1, 2], [3]])
    check(excinfo, gb.GridbufError, Exception, "data", "[[1, 2], [3]]")


def test_like_of_something_not_array_like():
    with pytest.raises(TypeError) as excinfo:
        gb.zeros_like(object())
    check(excinfo, gb.GridbufTypeError, TypeError, "dtype")


def test_like_override_errors():
    a = gb.zeros((3, 4), backend="gt:cpu_ifirst")
    with pytest.raises(ValueError) as excinfo:
        gb.empty_like(a, alignment=3)
    check(excinfo, gb.GridbufValueError, ValueError, "alignment", "3")
    with pytest.raises(ValueError) as excinfo:
        gb.empty_like(a, layout=(0, 0))
    check(excinfo, gb.GridbufValueError, ValueError, "layout")
    with pytest.raises(ValueError) as excinfo:
        gb.empty_like(a, backend="nope")
    check(excinfo, gb.UnknownPresetError, ValueError, "nope")
    with pytest.raises(TypeError) as excinfo:
        gb.empty_like(a, shape=(3, 4), nope=1)
    check(excinfo, gb.GridbufTypeError, TypeError, "nope")


# --------------------------------------------------------------------------------------------
# Layout maps
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "dims, base, cls, builtin, fragments",
    [
        ("X", (0, 1, 2), gb.GridbufValueError, ValueError, ("X",)),
        ("II", (0, 1, 2), gb.GridbufValueError, ValueError, ("'I', 'I'",)),
        ("IJ", (0, 0, 1), gb.GridbufValueError, ValueError, ("base_layout", "0, 0, 1")),
        ("IJ", "Z", gb.GridbufValueError, ValueError, ("base_layout", "Z")),
        ("IJ", (0, 1), gb.GridbufValueError, ValueError, ("base_layout", "0, 1")),
        (5, (0, 1, 2), gb.GridbufTypeError, TypeError, ("5",)),
    ],
)
def test_layout_map_errors(dims, base, cls, builtin, fragments):
    with pytest.raises(builtin) as excinfo:
        gb.layout_map(dims, base)
    param = ("base_layout",) if "base_layout" in fragments else ("dims", "dimensions")
    check(excinfo, cls, builtin, *fragments, any_of=param)


def test_preset_layout_map_errors():
    p = gb.preset("gt:cpu_ifirst")
    with pytest.raises(ValueError) as excinfo:
        p.layout_map("IJX")
    check(excinfo, gb.GridbufValueError, ValueError, "IJX", any_of=("dims", "dimensions"))
    with pytest.raises(ValueError) as excinfo:
        p.layout_map(("K", "K"))
    check(excinfo, gb.GridbufValueError, ValueError, "'K', 'K'", any_of=("dims", "dimensions"))
