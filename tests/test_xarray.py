"""xarray DataArrays: the accessors gridbuf registers, and GT4Py reading them."""

import subprocess
import sys

import numpy as np
import pytest

import gridbuf as gb

xr = pytest.importorskip("xarray")


def test_importing_gridbuf_does_not_import_optional_dependencies():
    code = "import sys, gridbuf; print(any(m in sys.modules for m in ('xarray', 'cupy', 'gt4py')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_accessor_registered_when_xarray_is_imported_after_gridbuf():
    code = "import gridbuf, numpy as np, xarray as xr; print(xr.DataArray(np.zeros((2, 3)), dims=('J', 'I')).__gt_dims__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "('J', 'I')"


@pytest.mark.parametrize("dims", [("I", "J", "K"), ("J", "I", "K"), ("K", "J", "I"), ("K", "I", "J"), ("I", "K", "J"), ("J", "K", "I")])
def test_dims_in_every_order(dims):
    da = xr.DataArray(np.zeros((4, 5, 6)), dims=dims)
    assert gb.get_dims(da) == dims
    assert da.__gt_dims__ == dims
    iface = da.__gt_data_interface__
    assert iface[None]["dims"] == dims
    assert iface[None]["data"][0] == da.data.__array_interface__["data"][0]
    assert gb.Field(da).dims == dims


def test_other_dim_names_declare_nothing():
    da = xr.DataArray(np.zeros((4, 5)), dims=("lat", "lon"))
    assert da.__gt_dims__ is None
    assert gb.get_dims(da) is None


class DuckArray:
    """A minimal duck array xarray keeps as its data (instead of converting it to NumPy)."""

    def __init__(self, a, **attrs):
        self.a = a
        self.shape, self.dtype, self.ndim = a.shape, a.dtype, a.ndim
        for k, v in attrs.items():
            setattr(self, k, v)

    def __array__(self, dtype=None, copy=None):
        return self.a

    def __array_function__(self, func, types, args, kwargs):
        return NotImplemented

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return NotImplemented


def test_disagreeing_dims_are_an_error():
    inner = DuckArray(np.zeros((2, 3)), __gt_dims__=("I", "J"))
    da = xr.DataArray(inner, dims=("J", "I"))
    assert da.data is inner
    with pytest.raises(gb.GridbufValueError, match="dims"):
        gb.get_dims(da)
    with pytest.raises(gb.GridbufValueError, match="dims"):
        da.__gt_data_interface__


def test_data_with_its_own_interface_gets_the_dataarray_dims():
    log = []

    class Synced(DuckArray):
        @property
        def __gt_data_interface__(self):
            return {None: {**self.a.__array_interface__, "acquire": lambda: log.append("acquire")}}

    s = Synced(np.arange(6.0).reshape(2, 3))
    da = xr.DataArray(s, dims=("K", "I"))
    assert da.data is s
    iface = da.__gt_data_interface__
    assert iface[None]["dims"] == ("K", "I")
    iface[None]["acquire"]()
    assert log == ["acquire"]


def test_gt4py_copy_stencil_writes_a_dataarray_with_permuted_dims():
    pytest.importorskip("gt4py.cartesian")
    from gt4py.cartesian import gtscript

    def copy_defn(in_field: gtscript.Field[np.float64], out_field: gtscript.Field[np.float64]):  # type: ignore[valid-type]
        with computation(PARALLEL), interval(...):  # noqa: F821
            out_field = in_field  # noqa: F841

    copy_stencil = gtscript.stencil(backend="numpy", definition=copy_defn)
    in_field = np.arange(1.0, 9.0).reshape(2, 2, 2)
    out = xr.DataArray(np.zeros((2, 2, 2)), dims=("J", "I", "K"))
    copy_stencil(in_field, out, origin=(0, 0, 0))
    np.testing.assert_array_equal(out.transpose("I", "J", "K").values, in_field)
