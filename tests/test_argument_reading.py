"""How often the binder looks at an argument: a stencil call reads each argument once
(crates/gridbuf-python/src/argument.rs), so an argument's ``__gt_data_interface__`` (a Python
property on a ``MirroredField``) is evaluated once per argument and call."""

from __future__ import annotations

import numpy as np

import gridbuf as gb
from gridbuf import mirrored

SHAPE = (6, 7, 4)


def test_a_mirrored_fields_data_interface_is_evaluated_once_per_argument(monkeypatch):
    inp = mirrored.from_array(np.arange(np.prod(SHAPE), dtype=float).reshape(SHAPE), device="host")
    out = mirrored.zeros(SHAPE, device="host")
    cls = type(inp)
    prop = cls.__dict__["__gt_data_interface__"]
    calls = []

    def counted(self):
        calls.append(self)
        return prop.fget(self)

    monkeypatch.setattr(cls, "__gt_data_interface__", property(counted))
    gb.kernels.copy(inp, out)
    assert len(calls) == 2
    calls.clear()
    gb.kernels.copy(inp, out)  # a cache hit reads the arguments the same way
    assert len(calls) == 2
    assert np.array_equal(out.host(write=False), inp.host(write=False))


class _Declaring:
    """An array behind a data interface whose host entry declares dims and a halo."""

    def __init__(self, array, dims, halo):
        self.array = array
        self.evaluations = 0
        self._entry = dict(array.__array_interface__, dims=dims, halo=halo)

    @property
    def __gt_data_interface__(self):
        self.evaluations += 1
        return {"cpu": self._entry}


def test_what_a_data_interface_declares_is_read_with_its_memory():
    # The halo's lower sides are the default origin; the dims are checked against the stencil.
    inp = _Declaring(np.arange(np.prod(SHAPE), dtype=float).reshape(SHAPE), "IJK", ((1, 1), (1, 1), (0, 0)))
    out = _Declaring(np.zeros(SHAPE), "IJK", ((1, 1), (1, 1), (0, 0)))
    gb.kernels.laplacian(inp, out)
    assert inp.evaluations == 1 and out.evaluations == 1
    a = inp.array
    expected = -4 * a[1:-1, 1:-1] + a[2:, 1:-1] + a[:-2, 1:-1] + a[1:-1, 2:] + a[1:-1, :-2]
    assert np.array_equal(out.array[1:-1, 1:-1], expected)
