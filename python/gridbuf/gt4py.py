"""gridbuf as a GT4Py backend: models that hand GT4Py a backend *name* run on gridbuf.

``import gridbuf.gt4py`` registers these names in GT4Py's backend registry (and as gridbuf
presets of the same layouts, so ``gb.zeros(..., backend="gridbuf:cpu_kfirst")`` works too):

=========================  =====================================================
name                       storage layout (the gridbuf preset of the same layout)
=========================  =====================================================
``gridbuf:cpu_ifirst``     I fastest, as ``gt:cpu_ifirst``
``gridbuf:cpu_kfirst``     K fastest, as ``gt:cpu_kfirst`` and ``numpy``
``gridbuf:cpu_jfirst``     J fastest, then K, then I, as ``dace:cpu``
=========================  =====================================================

Then ``gtscript.stencil(backend="gridbuf:cpu_kfirst", definition=...)``, ``lazy_stencil``,
``gt4py.storage.zeros(..., backend="gridbuf:cpu_kfirst")`` and every framework that passes the
name through (NDSL's and pace's ``StencilConfig``) build and run stencils with
:mod:`gridbuf.gtscript`: the definition is lowered by gridbuf's frontend and planned and
compiled by its Rust core in milliseconds. GT4Py's frontend, IR passes and disk cache do not run,
and nothing is written to disk.

The stencil objects are GT4Py ``StencilObject`` subclasses with the whole contract:
``__call__(..., origin=, domain=, validate_args=, exec_info=)``, ``run(_domain_, _origin_,
exec_info, **args)``, ``field_info``, ``parameter_info``, ``domain_info``, ``freeze()``. A
definition gridbuf cannot run raises :class:`GridbufDefinitionError`, a GT4Py
``GTScriptDefinitionError`` (and a ``ValueError``) naming the construct and the line, when the
stencil is defined; there is no fallback to another backend.

This is the only module of gridbuf that imports GT4Py.
"""

from __future__ import annotations

import hashlib
import re
import time
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from gt4py.cartesian import backend as _gt_backend
from gt4py.cartesian.definitions import AccessKind
from gt4py.cartesian.frontend.exceptions import GTScriptDefinitionError
from gt4py.cartesian.gtc.definitions import Boundary
from gt4py.cartesian.stencil_object import DomainInfo, FieldInfo, ParameterInfo, StencilObject
from gt4py.storage.cartesian.layout import layout_checker_factory, layout_maker_factory

from . import preset as _preset
from . import presets as _presets
from . import register_preset as _register_preset
from .errors import GridbufTypeError, GridbufValueError
from .gtscript import GTStencil, _checked_exec_info, literal_dtypes

__all__ = ["BACKENDS", "GridbufDefinitionError", "GridbufStencilObject"]

#: The backend names this module registers, and the gridbuf preset each one's storage follows.
BACKENDS: dict[str, str] = {
    "gridbuf:cpu_ifirst": "gt:cpu_ifirst",
    "gridbuf:cpu_kfirst": "gt:cpu_kfirst",
    "gridbuf:cpu_jfirst": "dace:cpu",
}


class GridbufDefinitionError(GridbufValueError, GTScriptDefinitionError):
    """A definition gridbuf cannot run, refused when the stencil is defined: GT4Py's
    ``GTScriptDefinitionError`` (which its callers catch) and a :class:`gridbuf.GridbufValueError`.
    The message names the construct and the line."""

    def __init__(self, message: str, name: str = "", value: Any = None) -> None:
        Exception.__init__(self, message)
        self.frontend = "gridbuf"
        self.loc = None
        self.name = name
        self.value = value


class GridbufStencilObject(StencilObject):
    """A GT4Py stencil object whose stencil gridbuf runs. One subclass per stencil, made by the
    backend's ``generate()``; its calls go to the :class:`gridbuf.gtscript.GTStencil` it holds,
    whose binder checks every argument in Rust before anything runs."""

    _gt_impl_: ClassVar[GTStencil]
    _gt_backend_: ClassVar[str]
    _gt_source_: ClassVar[str]
    _gt_domain_info_: ClassVar[DomainInfo]
    _gt_field_info_: ClassVar[dict[str, FieldInfo]]
    _gt_parameter_info_: ClassVar[dict[str, ParameterInfo]]
    _gt_constants_: ClassVar[dict[str, Any]]
    _gt_options_: ClassVar[dict[str, Any]]

    @property
    def backend(self) -> str:
        return type(self)._gt_backend_

    @property
    def source(self) -> str:
        return type(self)._gt_source_

    @property
    def domain_info(self) -> DomainInfo:
        return type(self)._gt_domain_info_

    @property
    def field_info(self) -> dict[str, FieldInfo]:
        return type(self)._gt_field_info_

    @property
    def parameter_info(self) -> dict[str, ParameterInfo]:
        return type(self)._gt_parameter_info_

    @property
    def constants(self) -> dict[str, Any]:
        return type(self)._gt_constants_

    @property
    def options(self) -> dict[str, Any]:
        return type(self)._gt_options_

    def __call__(self, *args: Any, domain: Any = None, origin: Any = None, validate_args: bool = True, exec_info: dict[str, Any] | None = None, **kwargs: Any) -> None:
        exec_info = _checked_exec_info(type(self).__name__, exec_info)
        if exec_info is None:
            type(self)._gt_impl_._call(args, kwargs, origin, domain, validate_args, None)
            return
        exec_info["call_start_time"] = exec_info["call_run_start_time"] = exec_info["run_start_time"] = time.perf_counter()
        # (The call sets exec_info's "domain" and "origin" from its own binding.)
        type(self)._gt_impl_._call(args, kwargs, origin, domain, validate_args, exec_info)
        exec_info["run_end_time"] = exec_info["call_run_end_time"] = time.perf_counter()
        exec_info["call_end_time"] = time.perf_counter()
        if exec_info.setdefault("__aggregate_data", False):
            _aggregate(exec_info, type(self).__name__)

    def run(self, _domain_: Any, _origin_: Any, exec_info: dict[str, Any] | None, **kwargs: Any) -> None:
        """GT4Py's unchecked entry (``FrozenStencil`` calls it): domain and origins given. The
        binder's bounds and memory checks still run; only the dtype agreement is skipped."""
        exec_info = _checked_exec_info(type(self).__name__, exec_info)
        if exec_info is not None:
            exec_info["domain"], exec_info["origin"] = _domain_, _origin_
            exec_info["run_start_time"] = time.perf_counter()
        type(self)._gt_impl_._call((), kwargs, _origin_, _domain_, False, None)
        if exec_info is not None:
            exec_info["run_end_time"] = time.perf_counter()


def _aggregate(exec_info: dict[str, Any], name: str) -> None:
    """GT4Py's per-stencil counters of ``exec_info["__aggregate_data"]``."""
    info = exec_info.setdefault(name, {})
    info["call_start_time"], info["call_end_time"] = exec_info["call_start_time"], exec_info["call_end_time"]
    info["call_time"] = info["call_end_time"] - info["call_start_time"]
    info["total_call_time"] = info.get("total_call_time", 0.0) + info["call_time"]
    info["ncalls"] = info.get("ncalls", 0) + 1
    info["run_time"] = exec_info["run_end_time"] - exec_info["run_start_time"]
    info["total_run_time"] = info.get("total_run_time", 0.0) + info["run_time"]


_ACCESS = {"read": AccessKind.READ, "write": AccessKind.WRITE, "readwrite": AccessKind.READ_WRITE}


def _infos(impl: GTStencil) -> tuple[dict[str, FieldInfo], dict[str, ParameterInfo], DomainInfo]:
    """GT4Py's ``field_info``, ``parameter_info`` and ``domain_info`` from gridbuf's plan: the
    access kinds, the I, J and K boundaries the fields are read at beyond the domain, and the
    fewest K levels the intervals need."""
    planned = {f["name"]: f for f in impl.fields}
    field_info: dict[str, FieldInfo] = {}
    for name, ftype in impl.field_types.items():
        axes = tuple(ftype.axes)
        f = planned.get(name)
        if f is None:
            access, boundary = AccessKind.NONE, Boundary.zeros(ndims=3)
        else:
            # A field every statement of which the core dropped as without effect was noted by
            # no statement the lowering kept: its planned intent says.
            access = _ACCESS[impl.field_access.get(name, "write" if f["intent"] == "inout" else "read")]
            extent = dict(zip(axes, f["extent"]))
            boundary = Boundary(extent.get("I", (0, 0)), extent.get("J", (0, 0)), tuple(f["k_boundary"]))
        field_info[name] = FieldInfo(access=access, boundary=boundary, axes=axes, data_dims=tuple(ftype.data_shape), dtype=ftype.dtype)
    used = set(impl.scalar_names)
    parameter_info = {
        name: ParameterInfo(access=AccessKind.READ if name in used else AccessKind.NONE, dtype=dtype)
        for name, dtype in impl.scalar_types.items()
    }
    domain_info = DomainInfo(parallel_axes=("I", "J"), sequential_axis="K", min_sequential_axis_size=impl.min_k, ndim=3)
    return field_info, parameter_info, domain_info


class _GridbufBackend(_gt_backend.Backend):
    """A GT4Py backend that builds stencils with :mod:`gridbuf.gtscript`."""

    # GT4Py's own backend options are accepted (a framework passes them by backend name) and
    # have no effect: gridbuf has no OIR pipeline, no build step and no disk cache.
    options: ClassVar[dict[str, Any]] = {
        name: {"versioning": False, "type": object}
        for name in ("oir_pipeline", "verbose", "clean", "debug_mode", "add_profile_info", "ignore_np_errstate")
    }
    languages: ClassVar[dict[str, Any]] = {"computation": "rust", "bindings": ["python"]}
    preset_name: ClassVar[str]

    def load(self) -> type[StencilObject] | None:
        return None  # no disk cache: a definition is lowered and compiled in milliseconds

    def generate(self) -> type[StencilObject]:
        builder = self.builder
        opts = builder.options
        unknown = set(opts.backend_opts) - set(self.options)
        if unknown:
            warnings.warn(f"Unknown options '{unknown}' for backend '{self.name}'", RuntimeWarning, stacklevel=2)
        start = time.perf_counter()
        definition = builder._definition  # not builder.definition: that runs GT4Py's frontend
        dtypes = literal_dtypes(builder.dtypes, opts.literal_int_precision, opts.literal_float_precision)
        try:
            layout_map = self.storage_info["layout_map"]  # as is_optimal_layout judges
            impl = GTStencil(definition, dict(builder.externals), opts.name or definition.__name__, dtypes, layout_map=layout_map, warnings="gt4py")
        except (GridbufValueError, GridbufTypeError) as exc:
            raise GridbufDefinitionError(str(exc), name=opts.name or definition.__name__, value=definition) from None
        field_info, parameter_info, domain_info = _infos(impl)
        fingerprint = hashlib.sha256(impl.ir.encode()).hexdigest()[:10]
        members = {
            "__module__": opts.module or __name__,
            "__doc__": definition.__doc__,
            "_gt_impl_": impl,
            "_gt_backend_": self.name,
            "_gt_source_": impl.ir,
            "_gt_domain_info_": domain_info,
            "_gt_field_info_": field_info,
            "_gt_parameter_info_": parameter_info,
            "_gt_constants_": {},
            "_gt_options_": {"name": opts.name, "module": opts.module, **opts.backend_opts},
            "_gt_id_": fingerprint,
            "definition_func": staticmethod(definition),
        }
        lowered = time.perf_counter()
        # Named as GT4Py names its stencil classes, name, backend and a fingerprint (here of the
        # IR, which says everything the stencil computes): exec_info's per-stencil counters are
        # keyed by the class name, so two stencils of one name must not share it.
        slug = re.sub(r"\W", "", self.name)
        cls = type(f"{opts.name or definition.__name__}____{slug}_{fingerprint}", (GridbufStencilObject,), members)
        if opts.build_info is not None:
            # parse_time: lowering, planning and compiling (gridbuf's whole build); module_time:
            # making the stencil class; no code generation, build or load steps of their own.
            opts.build_info.update(parse_time=lowered - start, module_time=time.perf_counter() - lowered, codegen_time=0.0, build_time=0.0, load_time=0.0)
        return cls


def _layout_info(preset_name: str) -> dict[str, Any]:
    """GT4Py's storage info for the preset's layout. The layout map is GT4Py's own layout maker
    over the preset's base layout, not the preset's ``layout_map``: GT4Py and the frameworks call
    it with any dimension names and take every name other than ``I``, ``J``, ``K`` for a data
    dimension (NDSL's ``Quantity`` asks ``is_optimal_layout(data, ("8", "6", "6"))`` for a field
    whose dims are not spatial, names repeated), where gridbuf's ``layout_map`` refuses names
    that repeat or are not dims. So the strides are those of GT4Py's backend of the same layout
    for every dimension tuple, permuted ones included."""
    p = _preset(preset_name)
    base = p.base_layout
    if isinstance(base, str):  # "C"/"F": index order, no layout over I, J, K (no backend has one)
        raise GridbufValueError(f"preset {preset_name!r} has no base layout over I, J, K: {base!r}")
    layout_map: Callable[[tuple[str, ...]], tuple[int, ...]] = layout_maker_factory(tuple(base))
    return {"alignment": p.alignment, "device": p.device, "layout_map": layout_map, "is_optimal_layout": layout_checker_factory(layout_map)}


def _register() -> None:
    for name, preset_name in BACKENDS.items():
        if name not in _presets():
            # The backend name is a gridbuf preset too, so gridbuf's allocations take it as
            # GT4Py's do: gb.zeros(..., backend="gridbuf:cpu_kfirst").
            p = _preset(preset_name)
            _register_preset(name, device=p.device, base_layout=p.base_layout, alignment=p.alignment)
        if name in _gt_backend.REGISTRY:
            continue
        cls = type(
            "GridbufBackend_" + name.split(":")[1],
            (_GridbufBackend,),
            {"name": name, "preset_name": preset_name, "storage_info": _layout_info(name), "__module__": __name__},
        )
        _gt_backend.register(cls)


_register()
