"""The topology a command works on, as the user named it: the one option type and the one resolver.

Every command that takes a machine declares ``--preset / --from / --synthetic / --gpu-model`` with the
factories below (only the help sentence differs by command), gathers them into a ``TopologyInput`` and
asks it for the topology (``TopologyInput.resolve``); ``model`` commands take the same choice as one
``--topology`` value (``TopologyInput.from_value``). Underneath there is one library resolver,
``discovery.auto.resolve_topology``; this module only adds what a terminal needs: where the fallback
note goes and which hint a refusal carries.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from ..errors import BackendUnavailable, UserError
from .common import stderr_console

#: What every command's --from accepts (discovery/auto resolves it).
FROM_HELP = ("A topology file: linkscope JSON, hwloc XML (lstopo --of xml), NCCL topology XML "
             "(NCCL_TOPO_DUMP_FILE), or a folder recorded by 'topo export --raw'.")
GPU_MODEL_HELP = ("GPU model of a --synthetic topology (a name, key or PCI id of the GPU facts table: H100, "
                  "'NVIDIA A100 80GB PCIe', mi300x, 10de:2335); its links, PCIe and memory follow the model.")
_SPECS_HINT = "specs: nvswitch:N, pcie:SxG, fattree:NxG"


def preset_option(help: str = "A shipped preset.") -> Any:
    return typer.Option(None, "--preset", help=help)


def from_option(help: str = FROM_HELP) -> Any:
    return typer.Option(None, "--from", help=help)


def synthetic_option(help: str = "A synthetic topology, e.g. nvswitch:8, pcie:2x4.") -> Any:
    return typer.Option(None, "--synthetic", help=help)


def gpu_model_option() -> Any:
    return typer.Option(None, "--gpu-model", help=GPU_MODEL_HELP)


@dataclass(frozen=True)
class TopologyInput:
    """``--preset / --from / --synthetic [--gpu-model]`` of one command; none given means this machine
    (or, where the command allows it, the simulated default preset)."""

    preset: str | None = None
    from_file: str | Path | None = None
    synthetic: str | None = None
    gpu_model: str | None = None

    @property
    def given(self) -> bool:
        """True when the user named a machine (a preset, a file or a synthetic spec)."""
        return any(v is not None for v in (self.preset, self.from_file, self.synthetic))

    @classmethod
    def from_value(cls, value: str, option: str = "--topology") -> TopologyInput:
        """One value naming a machine (``model --topology``): an existing file or recorded folder, a
        preset name (or ``preset:NAME``), or a synthetic spec (``nvswitch:8``, ``pcie:2x4``, ``fattree:4x8``)."""
        from ..topology.presets import preset_names

        name = value[len("preset:"):] if value.startswith("preset:") else value
        if Path(value).exists():
            return cls(from_file=value)
        if name in preset_names():
            return cls(preset=name)
        if ":" in value and not value.startswith("preset:"):
            return cls(synthetic=value)
        raise UserError(f"{option} {value!r} is not a file, a preset or a synthetic spec",
                        hint=f"presets: {', '.join(preset_names())}; {_SPECS_HINT}")

    def flag(self, resolved_name: str) -> str:
        """The option that names this machine again (``--preset NAME`` of the resolved topology when none was given)."""
        if self.preset:
            return f"--preset {self.preset}"
        if self.from_file:
            return f"--from {self.from_file}"
        if self.synthetic:
            return f"--synthetic {self.synthetic}"
        return f"--preset {resolved_name}"

    def resolve(self, *, allow_fallback: bool, discover: Callable[[], Any] | None = None,
                fallback_note: str | None = "why", recorded: Mapping[str, Any] | None = None,
                missing_hint: str | None = None):
        """The topology through ``discovery.auto.resolve_topology``. ``recorded``: a topology the input
        files carry, used when no machine is named. A simulated fallback's note goes to stderr once:
        ``fallback_note`` ``"why"`` says why no GPU was found (a run that wanted this machine), ``"sim"``
        only which preset is simulated (``--backend sim`` asked for it), None nothing (the command shows
        the topology's notes itself). ``discover`` replaces live discovery (``topo --sysfs-root``);
        ``missing_hint`` replaces the hint when no machine can be found."""
        from ..discovery.auto import resolve_topology

        if recorded is not None and not self.given:
            from ..topology.io import from_dict

            return from_dict(dict(recorded))
        kwargs: dict[str, Any] = {} if discover is None else {"discover": discover}
        try:
            topology, note = resolve_topology(self.preset, str(self.from_file) if self.from_file else None, self.synthetic,
                                              allow_fallback=allow_fallback, gpu_model=self.gpu_model, **kwargs)
        except BackendUnavailable as exc:
            if missing_hint is None:
                raise
            raise BackendUnavailable(str(exc), hint=missing_hint) from None
        if note and fallback_note == "sim":
            stderr_console().print(f"note: simulating the default preset {topology.name} (no --preset, --from or --synthetic "
                                   "and no GPU here)", style="yellow", markup=False)
        elif note and fallback_note == "why":
            stderr_console().print(f"note: {note}", style="yellow", markup=False)
        return topology

    def lazy(self, **kwargs: Any) -> Callable[[], Any]:
        """``resolve(**kwargs)`` deferred and done once: for commands that need the topology only on
        some paths (a simulated backend, ``--mapping auto``)."""
        cache: list[Any] = []

        def resolve() -> Any:
            if not cache:
                cache.append(self.resolve(**kwargs))
            return cache[0]

        return resolve


def fallback_note_for(backend: str) -> str:
    """``TopologyInput.resolve``'s note for a ``--backend``: ``sim`` asked for a simulation, so no 'no GPU' reason."""
    return "sim" if backend == "sim" else "why"
