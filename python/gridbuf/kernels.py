"""Native stencil kernels written in Rust, behind gridbuf's argument binder.

Every kernel takes float64 or float32 fields with dims ``"IJK"`` in any layout and runs in
parallel over ``GRIDBUF_NUM_THREADS`` threads (default: all cores) with the GIL released:

- ``copy(inp, out)``: ``out = inp``.
- ``laplacian(inp, out)``: ``out = -4 inp + inp[i-1] + inp[i+1] + inp[j-1] + inp[j+1]``.
- ``hdiff(inp, coeff, out)``: COSMO horizontal diffusion with flux limiter.
- ``tridiag(a, b, c, d, x)``: Thomas algorithm along K in every column.
- ``noop(inp, out)``: does nothing; calling it times the binder alone (extraction, checks or
  cache lookup, hand-over), which is what a stencil call costs on top of its kernel.

Call them like any stencil: ``gb.kernels.hdiff(a, coeff, b, origin=(2, 2, 0), domain=(64, 64, 80))``,
or bind once with ``.bind(...)`` and rerun the returned callable.
"""

from __future__ import annotations

from . import _gridbuf

#: ``copy(inp, out)``: ``out = inp`` on the domain, also across a layout change.
copy = _gridbuf.native_stencil("copy")
#: ``laplacian(inp, out)``: the 5-point horizontal laplacian,
#: ``out = -4 inp + inp[i-1] + inp[i+1] + inp[j-1] + inp[j+1]``; reads ``inp`` one
#: point beyond the domain in I and J.
laplacian = _gridbuf.native_stencil("laplacian")
#: ``hdiff(inp, coeff, out)``: COSMO's horizontal diffusion with a monotonic flux limiter;
#: reads ``inp`` two points beyond the domain in I and J.
hdiff = _gridbuf.native_stencil("hdiff")
#: ``tridiag(a, b, c, d, x)``: solves ``a x[k-1] + b x[k] + c x[k+1] = d`` along K in every column
#: with the Thomas algorithm (no pivoting); ``x`` is the output.
tridiag = _gridbuf.native_stencil("tridiag")
#: ``noop(inp, out)``: does nothing, with the signature of :data:`copy`; calling it times the binder alone.
noop = _gridbuf.native_stencil("noop")

#: Every native kernel by name.
ALL = {name: _gridbuf.native_stencil(name) for name in _gridbuf.native_kernel_names()}

__all__ = ["ALL", "copy", "hdiff", "laplacian", "noop", "tridiag"]
