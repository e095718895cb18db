"""Which AMD GPU a HIP program sees as device N, under the environment it inherits.

HIP numbers GPUs in layers, each read from the source at the release named:

1. **KFD order.** libhsakmt walks ``/sys/devices/virtual/kfd/kfd/topology/nodes/<n>`` (the same
   directory as ``/sys/class/kfd/kfd/topology``) in node-number order and keeps a node only when its
   DRM render node opens (rocm-systems release/rocm-rel-7.0 ``projects/rocr-runtime/libhsakmt/src/
   topology.c:648-722``: ``-EPERM``/``-ENOENT`` drop the node, which is how a cgroup that hides a GPU
   from a job, as Slurm's ``ConstrainDevices`` does, removes it from every index). A node is a GPU
   when ``simd_count`` (``NumFComputeCores``, topology.c:1137) is not 0; ``unique_id`` and
   ``domain``/``location_id`` (topology.c:1185-1201) give its UUID and PCI address.
2. **ROCR_VISIBLE_DEVICES** (ROCr, rocm-systems release/rocm-rel-7.0 = 64cf36de, ``core/runtime/amd_topology.cpp:286-376`` and
   ``amd_filter_device.cpp:75-207`` at release/rocm-rel-7.0): set to "" shows no GPU; otherwise
   comma-separated tokens, upper-cased and trimmed; a token starting with ``G`` is a UUID prefix that
   must match exactly one ``GPU-<16 hex>`` (5-20 characters), any other an integer (``strtol`` base 0)
   into the KFD GPUs; the first bad, out-of-range or repeated token ends the list. The agents come out
   in the token order.
3. **HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES** (clr ``rocclr/device/rocm/rocdevice.cpp``,
   rocm-6.2.2:500-551; rocm-6.1.2:491-525; rocm-5.7.0:461-495): HIP takes ``HIP_VISIBLE_DEVICES``
   when it is non-empty, else ``CUDA_VISIBLE_DEVICES``; each token is a decimal index into the agents
   ROCr gave (``str(int(token)) == token``); from **ROCm 6.2** a token containing ``GPU-`` is first
   replaced by the index of the agent whose UUID contains it (case-sensitive; ROCr writes the UUID as
   ``GPU-`` + 16 lower-case hex digits, ``amd_gpu_agent.cpp:1571-1589``); before 6.2 such a token is
   invalid. The first invalid token ends the list; a repeated index is skipped. clr keeps ROCr's agent
   order (``iterateAgentCallback``, rocdevice.cpp:364-382 at rocm-6.2.2: no sorting).

So a HIP ordinal is a position among the GPUs ROCR_VISIBLE_DEVICES leaves, never amdsmi's index or
UUID (``amdsmi_get_gpu_device_uuid`` is another format: HIP rejects it and the rank sees no GPU).
amdsmi 7.x states the ordinal itself: ``amdsmi_get_gpu_enumeration_info`` ``hip_id`` = the GPU's KFD
node id minus the smallest GPU node id, ``hip_uuid`` = ``GPU-%016x`` of the unique id (amdsmi 7.0.2
wheel ``amdsmi_interface.py:1959-1996``; ROCm/amdsmi ``src/amd_smi/amd_smi.cc``
``amdsmi_get_gpu_enumeration_info``, amd-staging 1991c5ce): both ignore the environment.

Pure functions over ``KfdGpu`` lists, plus ``read_kfd_gpus`` (sysfs, injectable root) for the live
table; ``launch``, ``map`` and ``audit`` use them.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError

KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")
DEV_DRI = Path("/dev/dri")
#: clr accepts ``GPU-`` tokens in HIP_VISIBLE_DEVICES from this ROCm release (see the module doc).
HIP_UUID_TOKENS_FROM = (6, 2)
HIP_VARS = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
ROCR_VAR = "ROCR_VISIBLE_DEVICES"


@dataclass(frozen=True)
class KfdGpu:
    """One GPU as ROCr sees it: KFD node number, 64-bit unique id (0 = none), PCI address."""

    node_id: int
    unique_id: int = 0
    pci_bus_id: str | None = None

    @property
    def hip_uuid(self) -> str | None:
        """The UUID HIP and ROCr match (``GPU-`` + 16 lower-case hex), None where the GPU has none."""
        return f"GPU-{self.unique_id:016x}" if self.unique_id else None


def bdf_of(domain: int, location_id: int) -> str:
    """KFD ``domain`` + ``location_id`` (bus << 8 | device << 3 | function) as ``0000:c1:00.0``.

    >>> bdf_of(0, 0xc100)
    '0000:c1:00.0'
    """
    return f"{domain:04x}:{(location_id >> 8) & 0xFF:02x}:{(location_id >> 3) & 0x1F:02x}.{location_id & 0x7:x}"


def parse_properties(text: str) -> dict[str, int]:
    """A KFD node's ``properties`` file (``name value`` lines, as libhsakmt's ``%s %llu``)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return out


def _render_opens(dev_dri: Path, minor: int) -> bool:
    path = dev_dri / f"renderD{minor}"
    return path.exists() and os.access(path, os.R_OK | os.W_OK)


def read_kfd_gpus(root: Path = KFD_NODES, dev_dri: Path = DEV_DRI,
                  render_opens: Callable[[Path, int], bool] = _render_opens) -> list[KfdGpu] | None:
    """The GPUs libhsakmt would give ROCr, in its order; None where there is no KFD topology here.
    A GPU whose render node this process cannot open is left out, as libhsakmt leaves it out."""
    try:
        names = [n for n in os.listdir(root) if n.isdigit()]
    except OSError:
        return None
    gpus = []
    for name in sorted(names, key=int):
        try:
            props = parse_properties((root / name / "properties").read_text())
        except OSError:
            continue
        if not props.get("simd_count"):
            continue
        minor = props.get("drm_render_minor")
        if not minor or not render_opens(dev_dri, minor):
            continue
        bus = bdf_of(props.get("domain", 0), props["location_id"]) if "location_id" in props else None
        gpus.append(KfdGpu(int(name), props.get("unique_id", 0), bus))
    return gpus


def strtol0(token: str) -> int:
    """A whole token as C ``strtol(token, &end, 0)`` reads it when ``*end`` must be the end: 0x hex,
    leading-0 octal, else decimal; ValueError otherwise.

    >>> strtol0("0x1"), strtol0("010"), strtol0("7")
    (1, 8, 7)
    """
    text = token.strip()
    body = text.lstrip("+-")
    if body[:2].lower() == "0x":
        return int(text, 16)
    if len(body) > 1 and body.startswith("0"):
        return int(text, 8)
    return int(text, 10)


def rocr_visible(value: str | None, gpus: Sequence[KfdGpu]) -> list[int]:
    """Indices into ``gpus`` (KFD order) that ROCR_VISIBLE_DEVICES=``value`` surfaces, in its order
    (None: unset, every GPU)."""
    if value is None:
        return list(range(len(gpus)))
    uuids = [(g.hip_uuid or "Invalid-UUID").upper() for g in gpus]
    chosen: list[int] = []
    for raw in value.split(",")[:len(gpus)]:
        token = raw.strip().upper()
        if token.startswith("G"):
            if not 5 <= len(token) <= 20:
                break
            hits = [i for i, u in enumerate(uuids) if len(token) <= len(u) and u.startswith(token)]
            if len(hits) != 1:
                break
            index = hits[0]
        else:
            try:
                index = strtol0(token)
            except ValueError:
                break
        if not 0 <= index < len(gpus) or index in chosen:
            break
        chosen.append(index)
    return chosen


def hip_visible(value: str, agents: Sequence[KfdGpu], *, uuid_tokens: bool = True) -> list[int]:
    """Indices into ``agents`` (what ROCr surfaced) that HIP keeps for HIP_VISIBLE_DEVICES (or
    CUDA_VISIBLE_DEVICES) = ``value``; ``uuid_tokens``: the runtime translates ``GPU-`` tokens
    (ROCm >= 6.2)."""
    if not value:
        return list(range(len(agents)))
    chosen: list[int] = []
    for token in value.split(","):
        if uuid_tokens and "GPU-" in token:
            token = next((str(i) for i, a in enumerate(agents) if a.hip_uuid and token in a.hip_uuid), token)
        try:
            index = int(token)
        except ValueError:
            break
        if index < 0 or index >= len(agents) or str(index) != token:
            break
        if index not in chosen:
            chosen.append(index)
    return chosen


def hip_selector(environ: Mapping[str, str]) -> tuple[str | None, str]:
    """(name, value) of the variable HIP reads: HIP_VISIBLE_DEVICES when non-empty, else
    CUDA_VISIBLE_DEVICES; (None, "") when neither is set."""
    for name in HIP_VARS:
        if environ.get(name):
            return name, environ[name]
    return None, ""


def hip_view(environ: Mapping[str, str], gpus: Sequence[KfdGpu], *, uuid_tokens: bool = True) -> list[int]:
    """Indices into ``gpus`` (KFD order) of HIP devices 0, 1, ... under ``environ``."""
    agents = rocr_visible(environ.get(ROCR_VAR), gpus)
    _, value = hip_selector(environ)
    return [agents[i] for i in hip_visible(value, [gpus[a] for a in agents], uuid_tokens=uuid_tokens)]


def _norm_bus(bus: str | None) -> str:
    text = (bus or "").lower()
    return text[4:] if len(text.split(":")[0]) == 8 else text


def _described(environ: Mapping[str, str]) -> str:
    names = [ROCR_VAR, *HIP_VARS]
    shown = [f"{n}={environ[n]!r}" for n in names if n in environ]
    return ", ".join(shown) if shown else "no visibility variable set"


@dataclass(frozen=True)
class HipChoice:
    """What ``launch`` exports for one AMD GPU, and the sentence that says why."""

    env: dict[str, str]
    says: str


def choose_device(environ: Mapping[str, str], gpus: Sequence[KfdGpu], *, pci_bus_id: str | None,
                  ordinal: int | None = None) -> HipChoice:
    """Select the GPU at ``pci_bus_id`` (else KFD position ``ordinal``) for a HIP program started
    with ``environ``: HIP_VISIBLE_DEVICES = its index among the GPUs the inherited
    ROCR_VISIBLE_DEVICES leaves (an integer: every ROCm release accepts it). An inherited
    HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES is the job's allocation: the GPU must be in it. Where
    CUDA_VISIBLE_DEVICES was inherited it is set to the same value (HIP reads HIP_VISIBLE_DEVICES
    first, clr rocdevice.cpp:500-502 at rocm-6.2.2; other readers see the same device)."""
    if pci_bus_id:
        at = [i for i, g in enumerate(gpus) if _norm_bus(g.pci_bus_id) == _norm_bus(pci_bus_id)]
        if not at:
            listed = ", ".join(g.pci_bus_id or "?" for g in gpus) or "none"
            raise UserError(f"the mapping's GPU {pci_bus_id} is not among the GPUs this process can open "
                            f"(KFD topology: {listed})",
                            hint="map on this node's topology, or check the job's GPU allocation")
        target = at[0]
    elif ordinal is not None and 0 <= ordinal < len(gpus):
        target = ordinal
    else:
        raise UserError(f"the mapping's GPU {ordinal} is not among the {len(gpus)} GPUs this process can open")
    agents = rocr_visible(environ.get(ROCR_VAR), gpus)
    where = gpus[target].pci_bus_id or f"KFD node {gpus[target].node_id}"
    if target not in agents:
        raise UserError(f"GPU {where} is outside the GPUs this job was given ({_described(environ)})",
                        hint="map onto the job's GPUs, or launch in an allocation that holds the mapping's GPUs")
    name, value = hip_selector(environ)
    if name is not None:
        allowed = [agents[i] for i in hip_visible(value, [gpus[a] for a in agents])]
        if target not in allowed:
            raise UserError(f"GPU {where} is outside the GPUs this job was given ({_described(environ)})",
                            hint="map onto the job's GPUs, or launch in an allocation that holds the mapping's GPUs")
    index = str(agents.index(target))
    env = {"HIP_VISIBLE_DEVICES": index}
    if "CUDA_VISIBLE_DEVICES" in environ:
        env["CUDA_VISIBLE_DEVICES"] = index
    relative = (f"HIP device {index} of the {len(agents)} GPUs {ROCR_VAR}={environ[ROCR_VAR]!r} leaves"
                if ROCR_VAR in environ else f"HIP device {index} of the node's {len(gpus)} GPUs in KFD order")
    return HipChoice(env, f"GPU {where} is {relative}")


def choose_by_ordinal(environ: Mapping[str, str], ordinal: int) -> HipChoice:
    """Without a KFD table (no ``/sys/class/kfd`` here): the mapping's HIP ordinal (KFD order, no
    environment), made relative to an inherited integer ROCR_VISIBLE_DEVICES. A UUID token cannot be
    resolved without the table, and is refused."""
    value = environ.get(ROCR_VAR)
    position = ordinal
    if value is not None:
        tokens = [t.strip() for t in value.split(",")]
        if any(t.upper().startswith("G") for t in tokens):
            raise UserError(f"{ROCR_VAR}={value!r} names GPUs by UUID; resolving that needs the KFD topology "
                            f"({KFD_NODES}), which is not readable here")
        indexes = []
        for t in tokens:
            try:
                indexes.append(strtol0(t))
            except ValueError:
                break
        if ordinal not in indexes:
            raise UserError(f"HIP GPU {ordinal} is outside the GPUs this job was given ({_described(environ)})")
        position = indexes.index(ordinal)
    env = {"HIP_VISIBLE_DEVICES": str(position)}
    if "CUDA_VISIBLE_DEVICES" in environ:
        env["CUDA_VISIBLE_DEVICES"] = str(position)
    return HipChoice(env, f"HIP GPU {ordinal} (the mapping's ordinal; no KFD topology here to check its bus id) "
                          f"is HIP device {position}")


def ordinals_by_bus(bus_ids: Sequence[str | None]) -> list[int | None]:
    """KFD order assumed to be ascending PCI address (amdkfd adds GPUs as the driver probes them,
    normally in bus order; not guaranteed): position of each bus id, None where unknown.

    >>> ordinals_by_bus(["0000:c1:00.0", "0000:05:00.0", None])
    [1, 0, None]
    """
    known = sorted(_norm_bus(b) for b in bus_ids if b)
    return [known.index(_norm_bus(b)) if b else None for b in bus_ids]


def kfd_facts(gpus: Sequence[KfdGpu] | None) -> list[dict[str, object]] | None:
    """JSON-able KFD table (discovery facts, the audit probe's record)."""
    if gpus is None:
        return None
    return [{"node_id": g.node_id, "unique_id": g.unique_id, "pci_bus_id": g.pci_bus_id} for g in gpus]


def kfd_from_facts(rows: object) -> list[KfdGpu] | None:
    """The inverse of ``kfd_facts``; None for anything that is not such a list."""
    if not isinstance(rows, list):
        return None
    out = []
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("node_id"), int):
            return None
        unique = row.get("unique_id")
        bus = row.get("pci_bus_id")
        out.append(KfdGpu(row["node_id"], unique if isinstance(unique, int) else 0, bus if isinstance(bus, str) else None))
    return out


def unique_id_of(hip_uuid: object) -> int:
    """The 64-bit unique id inside ROCr's ``GPU-<16 hex>`` UUID; 0 for anything else.

    >>> hex(unique_id_of("GPU-5a1f000100001111")), unique_id_of("1eff740c-0000-1000-80ea-a1b2c3d4e500")
    ('0x5a1f000100001111', 0)
    """
    text = str(hip_uuid or "")
    try:
        return int(text[4:], 16) if text.startswith("GPU-") and len(text) == 20 else 0
    except ValueError:
        return 0


def table_from_topology(gpus: Sequence[Any]) -> tuple[list[KfdGpu], list[int]]:
    """A topology's GPUs (``Device``) as the KFD table HIP would number with every GPU openable:
    ordered by their HIP ordinal (``Device.ordinals["amd"]``: discovery's KFD order), else by ascending PCI address
    (``ordinals_by_bus``), else in topology order; and the topology index of each entry. Used where
    no live table was read (the assumption is the caller's to state)."""
    by_bus = ordinals_by_bus([getattr(d, "pci_bus_id", None) for d in gpus])
    hip = [getattr(d, "ordinals", {}).get("amd") for d in gpus]
    ordinals = [hip[i] if hip[i] is not None else by_bus[i] for i in range(len(gpus))]
    if sorted(o for o in ordinals if o is not None) != list(range(len(gpus))):
        ordinals = list(range(len(gpus)))
    order = sorted(range(len(gpus)), key=lambda i: ordinals[i] or 0)
    table = [KfdGpu(pos, unique_id_of((gpus[i].attributes or {}).get("hip_uuid")), gpus[i].pci_bus_id)
             for pos, i in enumerate(order)]
    return table, [int(gpus[i].index if gpus[i].index is not None else i) for i in order]


def same_bus(a: str | None, b: str | None) -> bool:
    """Two PCI addresses name one device (domain written with 4 or 8 digits, any case)."""
    return bool(a and b) and _norm_bus(a) == _norm_bus(b)
