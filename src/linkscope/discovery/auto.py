"""Which topology a command works on: a preset, a file, a synthetic spec, or this machine.

``discover_live`` asks the hardware platforms of the platform table in order (NVIDIA: NVML; AMD:
amdsmi, then ROCm SMI text) and merges what they find with the sysfs PCIe tree.
``resolve_topology`` is what the CLI calls for ``--preset / --from / --synthetic`` or none of them
(live, falling back to a simulated preset when asked to).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .. import platforms
from ..errors import BackendUnavailable, ConfigError, UserError
from ..topology.io import load as load_file
from ..topology.model import Topology
from ..topology.presets import load_preset
from ..topology.synthetic import synthetic_topology
from . import amdsmi, nvml, rocm, sysfs  # noqa: F401  (nvml, amdsmi, rocm: the platforms' discovery; tests patch them here)

DEFAULT_FALLBACK_PRESET = "hgx-h200-4"

#: how the note of the no-GPU fallback starts; the fallback topology carries the note in ``notes``
FALLBACK_NOTE_START = "no GPU discovered here"


def is_fallback(topology: Topology) -> bool:
    """True for the simulated default preset put in place of a machine without GPUs (its note has
    already told the user that the run is simulated: later layers need not say it again)."""
    return any(note.startswith(FALLBACK_NOTE_START) for note in topology.notes)

def _sysfs_facts(root: Path, notes: list[str], *, strict: bool = False) -> dict | None:
    """Sysfs facts under ``root``; a missing or incomplete tree is a note, or with ``strict`` (a root
    the user named) a UserError naming the missing file."""
    if not strict and not sysfs.probe(root).ok:
        notes.append(f"no sysfs PCI tree under {root}: PCIe switches, NICs and NUMA nodes are not modelled")
        return None
    try:
        return sysfs.read_facts(root)
    except UserError as exc:
        if strict:
            raise
        notes.append(f"sysfs not used: {exc.one_line()}")
        return None


def discover_live(sysfs_root: Path | None = None, *, strict_sysfs: bool = False) -> Topology:
    """This machine's topology (``is_this_system`` True). Raises BackendUnavailable with the reason
    of every GPU backend when none works. With ``strict_sysfs`` (``--sysfs-root``) the sysfs tree is
    read first and a missing or incomplete one is a UserError, not a note."""
    root = Path(sysfs_root) if sysfs_root is not None else Path("/")
    notes: list[str] = []
    host_facts = _sysfs_facts(root, notes, strict=True) if strict_sysfs else None

    def host() -> dict | None:
        return host_facts if strict_sysfs else _sysfs_facts(root, notes)

    reasons = []
    for platform in platforms.hardware_platforms():  # NVIDIA, then AMD (the platform table's order)
        if not platform.discover:
            continue
        try:
            topology = platforms.load(platform.discover)(host, notes)
            break
        except BackendUnavailable as exc:
            reasons.append(str(exc))
    else:
        raise BackendUnavailable(f"no GPU discovered here ({'; '.join(reasons)})")
    source = topology.source
    return topology.replace(is_this_system=True, source=source, notes=tuple(notes) + topology.notes)


def resolve_topology(
    preset: str | None = None,
    from_file: str | None = None,
    synthetic: str | None = None,
    *,
    allow_fallback: bool,
    fallback_preset: str = DEFAULT_FALLBACK_PRESET,
    discover: Callable[[], Topology] = discover_live,
    gpu_model: str | None = None,
) -> tuple[Topology, str | None]:
    """The topology named by at most one of ``preset`` / ``from_file`` / ``synthetic``, else this
    machine's. Returns (topology, note): the note is set when live discovery failed and the
    simulated ``fallback_preset`` was used instead (only with ``allow_fallback``).

    ``gpu_model`` names the GPUs of a synthetic topology (a GPU facts table name, key or PCI id).

    Raises ConfigError when more than one source is given or ``gpu_model`` comes without ``synthetic``,
    UserError for an unknown preset (listing
    the valid ones), a bad file or spec, and BackendUnavailable when discovery fails without fallback.
    """
    given = [(flag, value) for flag, value in (("--preset", preset), ("--from", from_file), ("--synthetic", synthetic))
             if value is not None]
    if len(given) > 1:
        raise ConfigError(f"choose one topology source, got {' and '.join(f'{f} {v}' for f, v in given)}",
                          hint="use one of --preset NAME, --from FILE, --synthetic SPEC (or none for this machine)")
    if gpu_model is not None and synthetic is None:
        raise ConfigError("--gpu-model names the GPUs of a synthetic topology; it needs --synthetic SPEC",
                          hint="a preset, a file and this machine name their own GPUs")
    if preset is not None:
        return load_preset(preset), None
    if from_file is not None:
        if Path(from_file).is_dir():  # a folder recorded by ``topo export --raw``
            from .raw import load_recording

            return load_recording(Path(from_file)), None
        from . import xmlfile

        if xmlfile.looks_like_xml(Path(from_file)):  # hwloc (lstopo --of xml) or NCCL topology XML
            return xmlfile.load(from_file), None
        return load_file(from_file), None
    if synthetic is not None:
        return synthetic_topology(synthetic, gpu_model), None
    try:
        return discover(), None
    except BackendUnavailable as exc:
        if not allow_fallback:
            raise
        reason = str(exc)
        prefix = f"{FALLBACK_NOTE_START} ("
        if reason.startswith(prefix) and reason.endswith(")"):
            reason = reason[len(prefix):-1]
        note = f"{FALLBACK_NOTE_START} ({reason}): using the simulated default preset {fallback_preset}"
        topology = load_preset(fallback_preset)
        return topology.replace(notes=topology.notes + (note,)), note
