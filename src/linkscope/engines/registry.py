"""Transfer engines by name, imported lazily (STYLE.md C6).

* ``cuda``: ``linkscope.engines.cuda.CudaEngine(topology)`` — real NVIDIA GPUs through CuPy; it
  measures *this* machine, so it refuses a topology with ``is_this_system`` False;
* ``sim``: ``linkscope.engines.sim.SimEngine(topology)`` — hardware-free twin; numbers are
  labelled ``simulated``;
* ``rocm``: ``linkscope.engines.rocm.RocmEngine(topology)`` — AMD GPUs through CuPy's ROCm build;
  on a machine without them it says in one line why it cannot run;
* ``auto``: ``cuda`` (else ``rocm``) when it is usable and the topology is this system, else ``sim``
  with a note.

Every method key linkscope knows is in the one method table (``patterns.methods``); each engine
says in its capabilities which ones it offers.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable

from ..errors import BackendUnavailable, UserError
from ..topology.model import Topology
from .base import TransferEngine

NoteFn = Callable[[str], None]

BACKENDS = ("auto", "cuda", "rocm", "sim")

def engine_names() -> tuple[str, ...]:
    return BACKENDS


def _refuse_foreign(name: str, topology: Topology) -> None:
    if not topology.is_this_system:
        raise BackendUnavailable(
            f"the {name} engine measures this machine, but topology {topology.name!r} ({topology.source or 'not discovered'}) "
            f"does not describe it",
            hint="drop --preset/--from/--synthetic to discover this machine, or use --backend sim",
        )


def _cuda(topology: Topology) -> TransferEngine:
    _refuse_foreign("cuda", topology)
    try:
        module = importlib.import_module("linkscope.engines.cuda")
    except ImportError as exc:
        raise BackendUnavailable(f"the cuda engine cannot be loaded: {exc}", hint="install cupy-cuda12x, or use --backend sim") from exc
    try:  # the engine's own cheap check (CuPy importable, a device visible), where it has one
        probe = getattr(importlib.import_module("linkscope.engines.gpu.probe"), "probe", None)
    except ImportError:
        probe = None
    if callable(probe):
        availability = probe()
        if not getattr(availability, "ok", True):
            raise BackendUnavailable(f"the cuda engine is not usable here: {getattr(availability, 'reason', '')}",
                                     hint="use --backend sim")
    factory = getattr(module, "CudaEngine", None)
    if factory is None:
        raise BackendUnavailable("the cuda engine is not available in this linkscope build (no CudaEngine)", hint="use --backend sim")
    return _start("cuda", factory, topology)


def _start(name: str, factory: Callable[[Topology], TransferEngine], topology: Topology) -> TransferEngine:
    """Build a GPU engine; a runtime error while it starts means "not usable here"."""
    try:
        return factory(topology)
    except UserError:
        raise
    except Exception as exc:  # CUDA / HIP runtime errors while starting up
        raise BackendUnavailable(f"the {name} engine could not start: {type(exc).__name__}: {exc}", hint="use --backend sim") from exc


def _sim(topology: Topology) -> TransferEngine:
    try:
        module = importlib.import_module("linkscope.engines.sim")
    except ImportError as exc:
        raise BackendUnavailable(f"the sim engine cannot be loaded: {exc}") from exc
    factory = getattr(module, "SimEngine", None)
    if factory is None:
        raise BackendUnavailable("the sim engine is not available in this linkscope build (no SimEngine)")
    return factory(topology)


def _rocm(topology: Topology) -> TransferEngine:
    try:
        module = importlib.import_module("linkscope.engines.rocm")
    except ImportError as exc:
        raise BackendUnavailable(f"the rocm engine cannot be loaded: {exc}", hint="use --backend sim") from exc
    probe, factory = getattr(module, "probe", None), getattr(module, "RocmEngine", None)
    if not callable(probe) or factory is None:
        raise BackendUnavailable("the rocm engine is not available in this linkscope build", hint="use --backend sim")
    why = probe()
    if why:
        raise BackendUnavailable(f"the rocm engine cannot run here: {why}", hint="use --backend sim")
    _refuse_foreign("rocm", topology)
    return _start("rocm", factory, topology)


_FACTORIES: dict[str, Callable[[Topology], TransferEngine]] = {"cuda": _cuda, "sim": _sim, "rocm": _rocm}


def create_engine(backend: str, topology: Topology, *, on_note: NoteFn | None = None) -> TransferEngine:
    """The engine for ``backend`` (one of ``engine_names()``) over ``topology``.

    ``auto`` picks ``cuda`` (else ``rocm``) when the topology was discovered on this machine and that
    engine starts; otherwise ``sim``, telling ``on_note`` why (the CLI prints it on stderr).
    """
    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r}", hint=f"valid backends: {', '.join(BACKENDS)}")
    if backend != "auto":
        return _FACTORIES[backend](topology)
    if topology.is_this_system:
        reasons = []
        for factory in (_cuda, _rocm):
            try:
                return factory(topology)
            except BackendUnavailable as exc:
                reasons.append(exc.one_line())
        reason = "; ".join(reasons)
    else:
        reason = f"topology {topology.name!r} is not this machine ({topology.source or 'not discovered'})"
    from ..discovery.auto import is_fallback

    if on_note is not None and not is_fallback(topology):  # the fallback's own note already said it
        on_note(f"using the SIMULATED engine: {reason}")
    return _sim(topology)
