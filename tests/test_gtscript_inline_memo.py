"""The lowering keeps the value of an inlined ``gtscript.function`` call by the function and its
arguments, for calls that changed nothing else: every definition lowers to the IR text that
lowering every call gives, and computes what NumPy computes.

The memo is switched off by making every argument unkeyable (``CallsMixin._bytes`` answering
None), which is what an argument that cannot be pickled does.
"""

import numpy as np
import pytest

import gridbuf as gb
from gridbuf import gtscript
from gridbuf.gtscript import PARALLEL, Field, computation, exp, interval, log
from gridbuf.gtscript import _frontend, _lower_calls
from gridbuf.gtscript._values import TableType, _Ref, _Table

F = Field[np.float64]


@gtscript.function
def _scaled(x):
    return x * 3.0


@gtscript.function
def _table(t):
    return exp(2.5 * log(t / 273.16))


@gtscript.function
def _twice_table(t):
    return _table(t) + _table(t)


@gtscript.function
def _clipped(x):
    y = x
    if x > 0.5:
        y = x * 2.0
    return y


@gtscript.function
def _spread(q):
    d = q * q + q * 2.0 + _table(q) * q + q / 7.0 + q * q * q
    return d[1, 0, 0] - d[-1, 0, 0]


def _constants(inp: F, out: F, out2: F):
    # The same function of 1 and 1.0, and of a float32 and a float64 constant that print alike
    # under NumPy 1: each call keeps its own argument's type and value.
    from __externals__ import A32, A64

    with computation(PARALLEL), interval(...):
        out = _scaled(A32) + _scaled(1) * inp
        out2 = _scaled(A64) + _scaled(1.0) * inp


def _repeated(inp: F, out: F, out2: F):
    with computation(PARALLEL), interval(...):
        out = _table(inp) + _twice_table(inp) * 2.0
        out2 = _table(inp[1, 0, 0]) + _table(inp)


def _masked(inp: F, out: F, out2: F):
    with computation(PARALLEL), interval(...):
        out = _clipped(inp) + _clipped(inp)
        if inp < 0.3:
            out2 = _table(inp) + _clipped(inp)
        else:
            out2 = _table(inp)


def _shifted(inp: F, out: F, out2: F):
    with computation(PARALLEL), interval(...):
        out = _spread(inp)
        out2 = _spread(inp) + _spread(inp * 2.0)


DEFINITIONS = [_constants, _repeated, _masked, _shifted]
EXTERNALS = {"A32": np.float32(0.1), "A64": 0.1}


def _ir(definition, monkeypatch, memo: bool) -> tuple[str, int]:
    with monkeypatch.context() as m:
        if not memo:
            m.setattr(_lower_calls.CallsMixin, "_bytes", lambda self, v: None)
        lowering = _frontend.Lowering(definition, EXTERNALS, None)
        return lowering.lower(), len(lowering.inlined)


@pytest.mark.parametrize("definition", DEFINITIONS, ids=lambda d: d.__name__)
def test_memo_gives_the_ir_of_lowering_every_call(definition, monkeypatch):
    with_memo, kept = _ir(definition, monkeypatch, memo=True)
    without, none = _ir(definition, monkeypatch, memo=False)
    assert none == 0
    assert kept > 0  # the memo was used
    assert with_memo == without


def _reference(name: str, inp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy (I offsets wrap around: compare the interior only)."""

    def table(q):
        return np.exp(2.5 * np.log(q / 273.16))

    if name == "_constants":
        return np.float64(np.float32(0.1)) * 3.0 + 3 * inp, 0.1 * 3.0 + 3.0 * inp
    if name == "_repeated":
        return table(inp) + (table(inp) + table(inp)) * 2.0, table(np.roll(inp, -1, axis=0)) + table(inp)
    if name == "_masked":
        clipped = np.where(inp > 0.5, inp * 2.0, inp)
        return clipped + clipped, np.where(inp < 0.3, table(inp) + clipped, table(inp))

    def spread(q):
        d = q * q + q * 2.0 + table(q) * q + q / 7.0 + q * q * q
        return np.roll(d, -1, axis=0) - np.roll(d, 1, axis=0)

    return spread(inp), spread(inp) + spread(inp * 2.0)


@pytest.mark.parametrize("definition", DEFINITIONS, ids=lambda d: d.__name__)
def test_memo_computes_what_numpy_computes(definition):
    rng = np.random.default_rng(7)
    shape = (8, 5, 3)
    inp = rng.uniform(0.0, 1.0, shape) if definition is _masked else rng.uniform(250.0, 300.0, shape)
    st = gtscript.stencil(backend="gt:cpu_ifirst", definition=definition, externals=EXTERNALS)
    fields = {n: gb.from_array(inp if n == "inp" else np.zeros(shape), backend="gt:cpu_ifirst") for n in ("inp", "out", "out2")}
    st(**fields, origin=(1, 0, 0), domain=(shape[0] - 2, shape[1], shape[2]))
    want = _reference(definition.__name__, inp)
    np.testing.assert_allclose(np.asarray(fields["out"])[1:-1], want[0][1:-1], rtol=1e-13)
    np.testing.assert_allclose(np.asarray(fields["out2"])[1:-1], want[1][1:-1], rtol=1e-13)


def test_argument_keys_refuse_other_objects_and_leave_classes_untouched():
    """A GlobalTable argument is not keyed (the call is lowered every time), a reference is, by
    its fields; neither leaves the `__slotnames__` that `copyreg` stores on the class of an
    object pickled by its default reduction (a new public name of `TableType`)."""
    lowering = _frontend.Lowering(_constants, EXTERNALS, None)
    assert lowering._bytes(_Table("t", TableType(np.dtype(np.float64), (3,)))) is None
    ref = lowering._bytes(_Ref("f", 0, (1, 0, 0)))
    assert ref is not None and ref != lowering._bytes(_Ref("f", 0, (0, 0, 0)))
    assert lowering._bytes(("c", np.float32(0.1))) != lowering._bytes(("c", 0.1))
    for cls in (TableType, _Table, _Ref):
        assert "__slotnames__" not in vars(cls)
