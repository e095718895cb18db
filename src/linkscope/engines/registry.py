"""Transfer engines by name, imported lazily (STYLE.md C6).

* ``cuda``: ``linkscope.engines.cuda.CudaEngine(topology)`` — real NVIDIA GPUs through CuPy; it
  measures *this* machine, so it refuses a topology with ``is_this_system`` False;
* ``sim``: ``linkscope.engines.sim.SimEngine(topology)`` — hardware-free twin; numbers are
  labelled ``simulated``;
* ``rocm``: ``linkscope.engines.rocm.RocmEngine(topology)`` — AMD GPUs through CuPy's ROCm build;
  on a machine without them it says in one line why it cannot run;
* ``auto``: the hardware platforms of the platform table (``linkscope.platforms``: cuda, then
  rocm) when one is usable and the topology is this system, else ``sim`` with a note.

Which engines exist, and where each lives, is the platform table's business; this module only
builds them.

Every method key linkscope knows is in the one method table (``patterns.methods``); each engine
says in its capabilities which ones it offers.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable

from .. import platforms
from ..errors import BackendUnavailable, UserError
from ..topology.model import Topology
from .base import TransferEngine

NoteFn = Callable[[str], None]

BACKENDS = platforms.engine_names()


def engine_names() -> tuple[str, ...]:
    return BACKENDS


def _refuse_foreign(name: str, topology: Topology) -> None:
    if not topology.is_this_system:
        raise BackendUnavailable(
            f"the {name} engine cannot run here: it measures this machine, but topology {topology.name!r} "
            f"({topology.source or 'not discovered'}) does not describe it",
            hint="drop --preset/--from/--synthetic to discover this machine, or use --backend sim",
        )


def _probe_reason(probe: object) -> str | None:
    """A platform probe's verdict as one reason (None: usable): probes return None / "" when
    usable, else a reason, or an object with ``ok`` and ``reason``."""
    if not callable(probe):
        return None
    verdict = probe()
    if verdict is None or verdict == "":
        return None
    if isinstance(verdict, str):
        return verdict
    return None if getattr(verdict, "ok", True) else str(getattr(verdict, "reason", "not usable"))


def _hardware(platform: platforms.Platform, topology: Topology) -> TransferEngine:
    """A platform's GPU engine on this machine: refuse a foreign topology, load the engine module,
    run its cheap probe, then start it; each failure is one BackendUnavailable line."""
    name = platform.engine
    _refuse_foreign(name, topology)
    module_name, _, factory_name = platform.engine_factory.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(f"the {name} engine cannot be loaded: {exc}",
                                 hint=f"install {platform.cupy_wheel}, or use --backend sim") from exc
    probe = None
    if platform.engine_probe:
        probe_module, _, probe_name = platform.engine_probe.partition(":")
        try:
            probe = getattr(importlib.import_module(probe_module), probe_name, None)
        except ImportError:
            probe = None
    why = _probe_reason(probe)
    if why:
        raise BackendUnavailable(f"the {name} engine cannot run here: {why}", hint="use --backend sim")
    factory = getattr(module, factory_name, None)
    if factory is None:
        raise BackendUnavailable(f"the {name} engine is not available in this linkscope build (no {factory_name})",
                                 hint="use --backend sim")
    return _start(name, factory, topology)


def _start(name: str, factory: Callable[[Topology], TransferEngine], topology: Topology) -> TransferEngine:
    """Build a GPU engine; a runtime error while it starts means "not usable here"."""
    try:
        return factory(topology)
    except UserError:
        raise
    except Exception as exc:  # CUDA / HIP runtime errors while starting up
        raise BackendUnavailable(f"the {name} engine could not start: {type(exc).__name__}: {exc}", hint="use --backend sim") from exc


def _simulated(platform: platforms.Platform, topology: Topology) -> TransferEngine:
    module_name, _, factory_name = platform.engine_factory.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(f"the {platform.engine} engine cannot be loaded: {exc}") from exc
    factory = getattr(module, factory_name, None)
    if factory is None:
        raise BackendUnavailable(f"the {platform.engine} engine is not available in this linkscope build (no {factory_name})")
    return factory(topology)


def _create(platform: platforms.Platform, topology: Topology) -> TransferEngine:
    return _hardware(platform, topology) if platform.hardware else _simulated(platform, topology)


def create_engine(backend: str, topology: Topology, *, on_note: NoteFn | None = None) -> TransferEngine:
    """The engine for ``backend`` (one of ``engine_names()``) over ``topology``.

    ``auto`` tries the hardware platforms of the platform table in order when the topology was
    discovered on this machine; otherwise (or when none starts) the simulated engine, telling
    ``on_note`` why (the CLI prints it on stderr).
    """
    platform = platforms.by_engine(backend)
    if backend != "auto" and platform is None:
        raise UserError(f"unknown backend {backend!r}", hint=f"valid backends: {', '.join(BACKENDS)}")
    if platform is not None:
        return _create(platform, topology)
    if topology.is_this_system:
        reasons = []
        for hardware in platforms.hardware_platforms():
            try:
                return _hardware(hardware, topology)
            except BackendUnavailable as exc:
                reasons.append(exc.one_line())
        reason = "; ".join(reasons)
    else:
        reason = f"topology {topology.name!r} is not this machine ({topology.source or 'not discovered'})"
    from ..discovery.auto import is_fallback

    if on_note is not None and not is_fallback(topology):  # the fallback's own note already said it
        on_note(f"using the SIMULATED engine: {reason}")
    return _create(platforms.SIM, topology)
