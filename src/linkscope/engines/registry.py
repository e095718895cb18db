"""Transfer engines by name, imported lazily (STYLE.md C6).

* ``cuda``: ``linkscope.engines.cuda.CudaEngine(topology)`` — real NVIDIA GPUs through CuPy; it
  measures *this* machine, so it refuses a topology with ``is_this_system`` False;
* ``sim``: ``linkscope.engines.sim.SimEngine(topology)`` — hardware-free twin; numbers are
  labelled ``simulated``;
* ``rocm``: not implemented yet;
* ``auto``: ``cuda`` when it is usable and the topology is this system, else ``sim`` with a note.

The method catalogue below describes every method key linkscope knows (for ``bench --list`` and
for messages naming valid keys); each engine says in its capabilities which ones it offers.
"""
from __future__ import annotations

import importlib
from typing import Callable

from ..errors import BackendUnavailable, UserError
from ..topology.model import Topology
from .base import MethodInfo, TransferEngine

NoteFn = Callable[[str], None]

BACKENDS = ("auto", "cuda", "rocm", "sim")

#: Every transfer method key, with its meaning (engines offer a subset).
METHOD_CATALOGUE: tuple[MethodInfo, ...] = (
    MethodInfo("ce", "copy engine peer copy (cudaMemcpyPeerAsync) with peer access enabled", needs_peer_access=True),
    MethodInfo("ce-read", "copy engine peer copy issued by the destination GPU (it reads)", needs_peer_access=True),
    MethodInfo("ce-write", "copy engine peer copy issued by the source GPU (it writes)", needs_peer_access=True),
    MethodInfo("ce-nopeer", "the same copy with peer access disabled (the driver stages through the host)"),
    MethodInfo("sm-push", "SM kernel writing into peer memory", needs_peer_access=True),
    MethodInfo("sm-pull", "SM kernel reading from peer memory", needs_peer_access=True),
    MethodInfo("staged", "naive path through pageable host memory (D2H then H2D)"),
    MethodInfo("staged-pinned", "double-buffered pinned host chunks, D2H of chunk k+1 overlapped with H2D of chunk k"),
    MethodInfo("h2d", "host (pinned) to device copy engine copy", peer=False, host_endpoint=True),
    MethodInfo("d2h", "device to host (pinned) copy engine copy", peer=False, host_endpoint=True),
    MethodInfo("h2d-pageable", "host (pageable) to device copy", peer=False, host_endpoint=True),
    MethodInfo("d2h-pageable", "device to host (pageable) copy", peer=False, host_endpoint=True),
    MethodInfo("local", "device-local copy within one GPU's memory", peer=False),
)


def method_keys() -> tuple[str, ...]:
    return tuple(m.key for m in METHOD_CATALOGUE)


def catalogue_method(key: str) -> MethodInfo | None:
    return next((m for m in METHOD_CATALOGUE if m.key == key), None)


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
        probe = getattr(importlib.import_module("linkscope.engines.cuda.probe"), "probe", None)
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
    try:
        return factory(topology)
    except UserError:
        raise
    except Exception as exc:  # CUDA runtime errors while starting up: not usable here
        raise BackendUnavailable(f"the cuda engine could not start: {type(exc).__name__}: {exc}", hint="use --backend sim") from exc


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
    raise BackendUnavailable("the rocm engine is not implemented yet; use --backend sim")


_FACTORIES: dict[str, Callable[[Topology], TransferEngine]] = {"cuda": _cuda, "sim": _sim, "rocm": _rocm}


def create_engine(backend: str, topology: Topology, *, on_note: NoteFn | None = None) -> TransferEngine:
    """The engine for ``backend`` (one of ``engine_names()``) over ``topology``.

    ``auto`` picks ``cuda`` when the topology was discovered on this machine and the cuda engine
    starts; otherwise ``sim``, telling ``on_note`` why (the CLI prints it on stderr).
    """
    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r}", hint=f"valid backends: {', '.join(BACKENDS)}")
    if backend != "auto":
        return _FACTORIES[backend](topology)
    if topology.is_this_system:
        try:
            return _cuda(topology)
        except BackendUnavailable as exc:
            reason = exc.one_line()
    else:
        reason = f"topology {topology.name!r} is not this machine ({topology.source or 'not discovered'})"
    if on_note is not None:
        on_note(f"using the SIMULATED engine: {reason}")
    return _sim(topology)
