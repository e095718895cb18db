"""NVIDIA GPUs and NVLink through NVML (nvidia-ml-py, ``import pynvml``, imported lazily).

Two layers:

* ``read_facts(nvml)`` is the only code that calls NVML. It returns a JSON-able dump of everything
  read (per GPU: name, UUID, PCI bus id, memory, NUMA node, CPU affinity, PCIe generation/width, and
  per NVLink: state, version, remote PCI bus id, remote device type, speed; BAR1 size and use; the
  link health (``read_link_health``: NVLink state and error counters per link, PCIe state and error
  counters); per GPU pair: P2P status for read/write/nvlink/atomics/pci and the common-ancestor
  level). Calls a driver does not support are
  recorded under ``errors`` and the rest goes on. Tests drive it with a FakeNVML double.
* ``facts_to_topology(facts, sysfs_facts=None)`` works only from that dump, so recorded dumps
  (``tests/fixtures/machines/<name>/nvml.json``) rebuild the same Topology anywhere.

GPU numbering: the topology index of a GPU is its position when GPUs are sorted by PCI bus id,
which is the CUDA ordinal under ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` with no ``CUDA_VISIBLE_DEVICES``
(CUDA's default order, FASTEST_FIRST, can differ). ``ordinals["nvidia"]`` holds that position and
``nvml_index`` NVML's own index; the PCI bus id is the stable key.

NVLink model: active links to the same peer GPU are one bonded link (``count`` = number of links,
checked from both ends); links to NVSwitches become one bonded link per GPU to one logical
``nvswitch`` device (``attributes["physical_switches"]`` = number of distinct switch PCI ids).
Per-link rate: NVML field ``NVML_FI_DEV_NVLINK_GET_SPEED`` (MB/s, scopeId = link; the NVML headers
say "NVLink Speed in MBps"; H100/H200 report 26562, i.e. 26.562 GB/s per link per direction),
falling back to ``NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON``, then to a datasheet value per NVLink
version (labelled ``datasheet``).
"""
from __future__ import annotations

import functools
import os
import socket
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import BackendUnavailable
from ..topology.model import Device, DeviceKind, Link, LinkKind, Provenance, Topology
from ..topology.pcie import GT_OF_GEN, pcie_gb_per_s, pcie_generation
from .base import Availability
from .merge import GpuPart, assemble
from .sysfs import normalise_bdf

FACTS_FORMAT = "linkscope.nvml-facts"
FACTS_VERSION = 1

# NVML enums (nvml.h). pynvml spells NVML_P2P_CAPS_INDEX_READ as ``0,`` (a tuple), so the
# values are written out here.
P2P_CAPS = {"read": 0, "write": 1, "nvlink": 2, "atomics": 3, "pci": 4}  # 4: NVML_P2P_CAPS_INDEX_PCI
P2P_STATUS = {0: "OK", 1: "CHIPSET_NOT_SUPPORTED", 2: "GPU_NOT_SUPPORTED", 3: "IOH_TOPOLOGY_NOT_SUPPORTED",
              4: "DISABLED_BY_REGKEY", 5: "NOT_SUPPORTED", 6: "UNKNOWN"}
TOPOLOGY_LEVEL = {0: "INTERNAL", 10: "SINGLE", 20: "MULTIPLE", 30: "HOSTBRIDGE", 40: "NODE", 50: "SYSTEM"}
REMOTE_TYPE = {0: "GPU", 1: "IBMNPU", 2: "SWITCH", 255: "UNKNOWN"}
# nvmlNvlinkVersion_t: 1=1.0, 2=2.0, 3=2.2, 4=3.0, 5=3.1, 6=4.0, 7=5.0, 8=6.0
NVLINK_GENERATION = {1: "NVLink1", 2: "NVLink2", 3: "NVLink2", 4: "NVLink3", 5: "NVLink3", 6: "NVLink4",
                     7: "NVLink5", 8: "NVLink6"}
# Datasheet per-link, per-direction rates (GB/s), used only when NVML gives no speed:
# NVLink1 20 (P100), NVLink2 25 (V100), NVLink3 25 (A100, 600 GB/s bidir over 12 links),
# NVLink4 25 (H100, 900 GB/s bidir over 18), NVLink5 50 (B200, 1.8 TB/s bidir over 18).
NVLINK_DATASHEET_GB_PER_S = {"NVLink1": 20.0, "NVLink2": 25.0, "NVLink3": 25.0, "NVLink4": 25.0, "NVLink5": 50.0}
FI_NVLINK_SPEED_MBPS_COMMON = 90
FI_NVLINK_LINK_COUNT = 91
FI_NVLINK_GET_SPEED = 164
NVML_SUCCESS = 0
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_NO_PERMISSION = 4
MAX_LINKS = 18 * 2  # NVML_NVLINK_MAX_LINKS in recent headers


def _import_pynvml() -> Any:
    import pynvml

    return pynvml


def _reason(exc: Exception) -> str:
    code = getattr(exc, "value", None)
    if code == NVML_ERROR_LIBRARY_NOT_FOUND:
        return "NVML library not found: counters and live discovery need an NVIDIA driver"
    if code == NVML_ERROR_DRIVER_NOT_LOADED:
        return "NVIDIA driver not loaded: NVML cannot see any GPU"
    if code == NVML_ERROR_NO_PERMISSION:
        return "no permission to use NVML (check /dev/nvidia* access)"
    return f"NVML initialisation failed: {exc}"


def probe(nvml: Any | None = None) -> Availability:
    """Whether NVML works here; never raises."""
    if nvml is None:
        try:
            nvml = _import_pynvml()
        except ImportError:
            return Availability("nvml", False, "nvidia-ml-py is not installed (pip install nvidia-ml-py)")
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return Availability("nvml", False, _reason(exc))
    try:
        count = nvml.nvmlDeviceGetCount()
        version = _text(nvml.nvmlSystemGetDriverVersion())
    except Exception as exc:
        return Availability("nvml", False, f"NVML query failed: {exc}")
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass
    if count == 0:
        return Availability("nvml", False, "NVML works but sees no GPU", version=version)
    return Availability("nvml", True, version=version)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _field_value(fv: Any) -> int | float | None:
    if getattr(fv, "nvmlReturn", 1) != NVML_SUCCESS:
        return None
    kind = getattr(fv, "valueType", 1)
    attr = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}.get(kind, "uiVal")
    return getattr(fv.value, attr)


def _cpus_from_mask(words: Any) -> list[int]:
    cpus = []
    for w, word in enumerate(list(words)):
        word = int(word)
        for bit in range(64):
            if word >> bit & 1:
                cpus.append(w * 64 + bit)
    return cpus


def read_facts(nvml: Any, *, cpu_count: int | None = None, hostname: str | None = None) -> dict[str, Any]:
    """Dump what NVML says about every GPU and GPU pair (initialises and shuts NVML down itself).

    Raises BackendUnavailable when NVML cannot be initialised.
    """
    return _session(nvml, lambda error_type: _read(nvml, error_type, cpu_count or os.cpu_count() or 64,
                                                    hostname or socket.gethostname()))


def _session(nvml: Any, body: Callable[[type[BaseException]], Any]) -> Any:
    """Initialise NVML, run ``body(error_type)``, shut NVML down; NVML failures become
    BackendUnavailable (a call every GPU must answer, such as count, handle or PCI info, failed)."""
    error_type: type[BaseException] = getattr(nvml, "NVMLError", Exception)
    try:
        nvml.nvmlInit()
    except error_type as exc:
        raise BackendUnavailable(_reason(exc)) from exc  # type: ignore[arg-type]
    try:
        return body(error_type)
    except error_type as exc:
        raise BackendUnavailable(f"NVML query failed: {exc}") from exc
    finally:
        try:
            nvml.nvmlShutdown()
        except error_type:
            pass


def _read(nvml: Any, error_type: type[BaseException], cpu_count: int, hostname: str) -> dict[str, Any]:
    def attempt(errors: dict[str, str], key: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except error_type as exc:
            errors[key] = str(exc)
            return None

    top_errors: dict[str, str] = {}
    facts: dict[str, Any] = {
        "format": FACTS_FORMAT,
        "version": FACTS_VERSION,
        "hostname": hostname,
        "driver_version": attempt(top_errors, "driver_version", lambda: _text(nvml.nvmlSystemGetDriverVersion())),
        "nvml_version": attempt(top_errors, "nvml_version", lambda: _text(nvml.nvmlSystemGetNVMLVersion())),
        "cuda_driver_version": attempt(top_errors, "cuda_driver_version", nvml.nvmlSystemGetCudaDriverVersion),
        "gpus": [],
        "pairs": [],
        "errors": top_errors,
    }
    count = nvml.nvmlDeviceGetCount()
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    words = max(1, (cpu_count + 63) // 64)
    for i, h in enumerate(handles):
        errors: dict[str, str] = {}
        pci = nvml.nvmlDeviceGetPciInfo(h)
        memory = attempt(errors, "memory", functools.partial(nvml.nvmlDeviceGetMemoryInfo, h))
        uuid = attempt(errors, "uuid", functools.partial(nvml.nvmlDeviceGetUUID, h))
        gpu: dict[str, Any] = {
            "index": i,
            "name": _text(nvml.nvmlDeviceGetName(h)),
            "uuid": _text(uuid) if uuid is not None else None,
            "pci_bus_id": normalise_bdf(_text(pci.busId)),
            "pci_device_id": f"0x{int(pci.pciDeviceId):08x}",
            "memory_bytes": int(memory.total) if memory is not None else None,
            "numa_node": attempt(errors, "numa_node", functools.partial(nvml.nvmlDeviceGetNumaNodeId, h)),
            "cpu_affinity": None,
            "pcie": None,
            "nvlinks": [],
            "errors": errors,
        }
        mask = attempt(errors, "cpu_affinity", functools.partial(nvml.nvmlDeviceGetCpuAffinity, h, words))
        if mask is not None:
            gpu["cpu_affinity"] = _cpus_from_mask(mask)
        gpu["pcie"] = _read_pcie(nvml, h, functools.partial(attempt, errors))
        gpu["nvlinks"] = _read_links(nvml, error_type, h, errors)
        gpu["bar1"] = read_bar1(nvml, h, error_type, errors)
        gpu["link_health"] = read_link_health(nvml, h, error_type)
        facts["gpus"].append(gpu)
    for i in range(count):
        for j in range(i + 1, count):
            errors = {}
            pair: dict[str, Any] = {"a": i, "b": j, "p2p": {}, "common_ancestor": None, "errors": errors}
            for cap, index in P2P_CAPS.items():
                status = attempt(errors, f"p2p_{cap}", functools.partial(nvml.nvmlDeviceGetP2PStatus, handles[i], handles[j], index))
                pair["p2p"][cap] = P2P_STATUS.get(status, str(status)) if status is not None else None
            level = attempt(errors, "common_ancestor",
                            functools.partial(nvml.nvmlDeviceGetTopologyCommonAncestor, handles[i], handles[j]))
            pair["common_ancestor"] = TOPOLOGY_LEVEL.get(level, str(level)) if level is not None else None
            facts["pairs"].append(pair)
    return facts


#: NVML calls of the PCIe link state: current and maximum (device and system) generation and width,
#: and the GPU's own maximum generation (newer drivers; absent calls are skipped).
PCIE_CALLS = (("gen", "nvmlDeviceGetCurrPcieLinkGeneration"), ("width", "nvmlDeviceGetCurrPcieLinkWidth"),
              ("max_gen", "nvmlDeviceGetMaxPcieLinkGeneration"), ("max_width", "nvmlDeviceGetMaxPcieLinkWidth"),
              ("gpu_max_gen", "nvmlDeviceGetGpuMaxPcieLinkGeneration"))


def _read_pcie(nvml: Any, h: Any, attempt: Callable[[str, Callable[[], Any]], Any]) -> dict[str, int] | None:
    """The PCIe link state of one GPU (``gen``/``width`` current, ``max_*`` what device and system
    allow, ``gpu_max_gen`` what the GPU allows), or None when NVML gives no current state."""
    out: dict[str, int] = {}
    for key, name in PCIE_CALLS:
        fn = getattr(nvml, name, None)
        if fn is None:
            continue
        value = attempt(f"pcie_{key}", functools.partial(fn, h))
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[key] = int(value)
    return out if out.get("gen") and out.get("width") else None


def read_bar1(nvml: Any, h: Any, error_type: type[BaseException], errors: dict[str, str]) -> dict[str, int] | None:
    """BAR1 of one GPU (``nvmlDeviceGetBAR1MemoryInfo``: ``bar1Total``/``bar1Used``/``bar1Free`` in
    bytes), None with the reason in ``errors`` where NVML does not answer."""
    fn = getattr(nvml, "nvmlDeviceGetBAR1MemoryInfo", None)
    if fn is None:
        errors["bar1"] = "nvmlDeviceGetBAR1MemoryInfo not in this nvidia-ml-py"
        return None
    try:
        info = fn(h)
    except error_type as exc:
        errors["bar1"] = str(exc)
        return None
    return {"total_bytes": int(info.bar1Total), "used_bytes": int(info.bar1Used), "free_bytes": int(info.bar1Free)}


# ---- link health: NVLink state and error counters, PCIe link state and error counters ---------------

#: nvmlNvLinkErrorCounter_t (nvml.h; pynvml ``NVML_NVLINK_ERROR_DL_*``), read per link with
#: ``nvmlDeviceGetNvLinkErrorCounter(handle, link, counter)``.
NVLINK_ERROR_COUNTERS = {"replay": 0, "recovery": 1, "crc_flit": 2, "crc_data": 3, "ecc_data": 4}
#: the per-link field values with ``scopeId`` = link (``NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY`` 161,
#: ``_RECOVERY`` 162, ``_CRC`` 163): the fallback where the per-link call is not supported. On the
#: recorded 2 x H100 (driver 580.159.04) they answer for all 18 links while the legacy ``_L0``..``_L11``
#: ids below and the ``_TOTAL`` ids return NOT_SUPPORTED; 163 read 0 on every link where the call's
#: DL_CRC_FLIT read 0 and DL_CRC_DATA read 3-16, so 163 is taken as the flit CRC count.
NVLINK_ERROR_SCOPED_FIELDS = {"replay": 161, "recovery": 162, "crc_flit": 163}
#: the same counters as field values, per link for links 0-11 only (pynvml
#: ``NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L0`` = 32 ... ``_L5`` = 37, ``_L6`` = 96 ... ``_L11`` = 101;
#: CRC_DATA 39-44/102-107; REPLAY 46-51/108-113; RECOVERY 53-58/114-119): the fallback where the
#: per-link call is not supported.
NVLINK_ERROR_FIELDS = {name: tuple(range(low, low + 6)) + tuple(range(high, high + 6))
                       for name, low, high in (("crc_flit", 32, 96), ("crc_data", 39, 102),
                                               ("replay", 46, 108), ("recovery", 53, 114))}
#: totals over all links (``NVML_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL``).
NVLINK_ERROR_TOTAL_FIELDS = {"crc_flit": 38, "crc_data": 45, "replay": 52, "recovery": 59}
#: PCIe error counters as field values (``NVML_FI_DEV_PCIE_REPLAY_COUNTER`` 94 and
#: ``_REPLAY_ROLLOVER_COUNTER`` 95; ``NVML_FI_DEV_PCIE_L0_TO_RECOVERY_COUNTER`` 169;
#: ``NVML_FI_DEV_PCIE_COUNT_*`` 173-182, newer GPUs only). The replay count is read first with
#: ``nvmlDeviceGetPcieReplayCounter``.
PCIE_ERROR_FIELDS = {"replay_rollover": 95, "l0_to_recovery": 169, "correctable": 173, "naks_received": 174,
                     "receiver_error": 175, "bad_tlp": 176, "naks_sent": 177, "bad_dllp": 178,
                     "non_fatal": 179, "fatal": 180, "lcrc": 182}
FI_PCIE_REPLAY_COUNTER = 94


def _fields(nvml: Any, h: Any, error_type: type[BaseException], requests: list[tuple[int, int]]) -> list[int | None]:
    try:
        values = nvml.nvmlDeviceGetFieldValues(h, requests)
    except error_type:
        return [None] * len(requests)
    out: list[int | None] = []
    for fv in values:
        value = _field_value(fv)
        out.append(int(value) if value is not None else None)
    return out


def read_link_health(nvml: Any, h: Any, error_type: type[BaseException]) -> dict[str, Any]:
    """One GPU's link state and error counters now (JSON-able; a counter NVML refuses is None, its
    reason under ``errors``, never 0). ``nvlink``: per link ``active`` and the error counters
    (replay, recovery, CRC flit, CRC data), the active count and NVML's totals; ``pcie``: the
    current and maximum generation/width and the PCIe error counters."""
    errors: dict[str, str] = {}

    def attempt(key: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except error_type as exc:
            errors[key] = str(exc)
            return None

    links: list[dict[str, Any]] = []
    limit = MAX_LINKS
    reported = _fields(nvml, h, error_type, [(FI_NVLINK_LINK_COUNT, 0)])[0]
    if reported:
        limit = int(reported)
    for link in range(limit):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(h, link)
        except error_type as exc:
            if link == 0:
                errors["nvlink"] = str(exc)
            break
        links.append({"link": link, "active": bool(state), "errors": {}})
    counter_fn = getattr(nvml, "nvmlDeviceGetNvLinkErrorCounter", None)
    for entry in links:
        if not entry["active"]:
            continue
        link = entry["link"]
        remote_fn = getattr(nvml, "nvmlDeviceGetNvLinkRemotePciInfo_v2", None) or \
            getattr(nvml, "nvmlDeviceGetNvLinkRemotePciInfo", None)
        if remote_fn is not None:  # the far end (a GPU, or an NVSwitch port): names the link's peer
            remote = attempt(f"nvlink{link}_remote", functools.partial(remote_fn, h, link))
            bus = getattr(remote, "busId", None) if remote is not None else None
            if isinstance(bus, bytes):
                bus = bus.decode(errors="replace")
            entry["remote_pci_bus_id"] = bus.rstrip("\x00").lower() if isinstance(bus, str) and bus else None
            errors.pop(f"nvlink{link}_remote", None)
        for name, counter in NVLINK_ERROR_COUNTERS.items():
            value = None
            if counter_fn is not None:
                value = attempt(f"nvlink{link}_{name}", functools.partial(counter_fn, h, link, counter))
            if value is None and name in NVLINK_ERROR_SCOPED_FIELDS:
                value = _fields(nvml, h, error_type, [(NVLINK_ERROR_SCOPED_FIELDS[name], link)])[0]
            if value is None and link < 12 and name in NVLINK_ERROR_FIELDS:
                value = _fields(nvml, h, error_type, [(NVLINK_ERROR_FIELDS[name][link], 0)])[0]
            if value is not None:
                errors.pop(f"nvlink{link}_{name}", None)
            entry["errors"][name] = int(value) if value is not None else None
    totals = {}
    if links:
        names = list(NVLINK_ERROR_TOTAL_FIELDS)
        totals = dict(zip(names, _fields(nvml, h, error_type, [(NVLINK_ERROR_TOTAL_FIELDS[n], 0) for n in names])))
    pcie: dict[str, Any] = dict(_read_pcie(nvml, h, attempt) or {})
    counters: dict[str, int | None] = {}
    replay_fn = getattr(nvml, "nvmlDeviceGetPcieReplayCounter", None)
    counters["replay"] = attempt("pcie_replay", functools.partial(replay_fn, h)) if replay_fn else None
    if counters["replay"] is None:
        counters["replay"] = _fields(nvml, h, error_type, [(FI_PCIE_REPLAY_COUNTER, 0)])[0]
    names = list(PCIE_ERROR_FIELDS)
    counters.update(zip(names, _fields(nvml, h, error_type, [(PCIE_ERROR_FIELDS[n], 0) for n in names])))
    pcie["counters"] = counters
    return {"nvlink": {"links": links, "active_count": sum(1 for e in links if e["active"]), "link_count": len(links),
                       "totals": totals},
            "pcie": pcie, "errors": errors}


def pcie_link_states(nvml: Any | None = None) -> dict[int, dict[str, int]]:
    """The PCIe link state of every GPU now, by topology index (GPUs sorted by PCI bus id, as in
    ``facts_to_topology``). For the survey, which reads it right after the host copies (idle GPUs
    lower the PCIe generation). Raises BackendUnavailable when NVML does not work."""
    nvml = nvml or _import_pynvml()

    def rows(error_type: type[BaseException]) -> list[tuple[str, dict[str, int] | None]]:
        def attempt(_key: str, fn: Callable[[], Any]) -> Any:
            try:
                return fn()
            except error_type:
                return None

        out = []
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            out.append((normalise_bdf(_text(nvml.nvmlDeviceGetPciInfo(h).busId)), _read_pcie(nvml, h, attempt)))
        return out

    ordered = sorted(_session(nvml, rows), key=lambda r: r[0])
    return {pos: state for pos, (_bus, state) in enumerate(ordered) if state}


def _read_links(nvml: Any, error_type: type[BaseException], h: Any, errors: dict[str, str]) -> list[dict[str, Any]]:
    links: list[dict[str, Any]] = []
    limit = MAX_LINKS
    try:
        values = nvml.nvmlDeviceGetFieldValues(h, [FI_NVLINK_LINK_COUNT])
        reported = _field_value(values[0])
        if reported:
            limit = int(reported)
    except error_type:
        pass
    for link in range(limit):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(h, link)
        except error_type as exc:
            if link == 0:
                errors["nvlink"] = str(exc)  # usually "Not Supported": no NVLink on this GPU
            break
        entry: dict[str, Any] = {"link": link, "active": bool(state), "version": None,
                                 "remote_pci_bus_id": None, "remote_device_type": None, "speed_mbps": None}
        if state:
            try:
                entry["version"] = int(nvml.nvmlDeviceGetNvLinkVersion(h, link))
            except error_type as exc:
                errors[f"nvlink{link}_version"] = str(exc)
            try:
                entry["remote_pci_bus_id"] = normalise_bdf(_text(nvml.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId))
            except error_type as exc:
                errors[f"nvlink{link}_remote_pci"] = str(exc)
            try:
                kind = nvml.nvmlDeviceGetNvLinkRemoteDeviceType(h, link)
                entry["remote_device_type"] = REMOTE_TYPE.get(int(kind), str(kind))
            except (error_type, AttributeError) as exc:
                errors[f"nvlink{link}_remote_type"] = str(exc)
        links.append(entry)
    active = [e for e in links if e["active"]]
    if active:
        try:
            values = nvml.nvmlDeviceGetFieldValues(h, [(FI_NVLINK_GET_SPEED, e["link"]) for e in active])
            for e, fv in zip(active, values):
                e["speed_mbps"] = _field_value(fv)
        except error_type as exc:
            errors["nvlink_speed"] = str(exc)
        if any(e["speed_mbps"] is None for e in active):
            try:
                common = _field_value(nvml.nvmlDeviceGetFieldValues(h, [FI_NVLINK_SPEED_MBPS_COMMON])[0])
            except error_type:
                common = None
            for e in active:
                if e["speed_mbps"] is None and common:
                    e["speed_mbps"] = common
    return links


#: facts keys -> the GPU attribute ``pcie_link`` (read by the survey findings).
PCIE_LINK_KEYS = {"gen": "current_generation", "width": "current_width", "max_gen": "max_generation",
                  "max_width": "max_width", "gpu_max_gen": "gpu_max_generation"}


# ---- facts → Topology ----------------------------------------------------------------------------

def _rate(entries: list[dict[str, Any]]) -> tuple[float, Provenance, str, str | None]:
    """Per-link GB/s of a bundle of links, where it came from, and the generation label."""
    versions = [e["version"] for e in entries if e.get("version")]
    generation = NVLINK_GENERATION.get(max(versions)) if versions else None
    speeds = [e["speed_mbps"] for e in entries if e.get("speed_mbps")]
    if speeds:
        return min(speeds) / 1000.0, Provenance.OS, "NVML NVLINK_GET_SPEED (MB/s per link per direction)", generation
    rate = NVLINK_DATASHEET_GB_PER_S.get(generation or "", 25.0)
    return rate, Provenance.DATASHEET, f"NVML gave no link speed: datasheet rate for {generation or 'NVLink'}", generation


def facts_to_topology(facts: Mapping[str, Any], sysfs_facts: Mapping[str, Any] | None = None) -> Topology:
    """Topology from an NVML dump (and optionally sysfs facts); pure, no NVML call."""
    records = sorted(facts.get("gpus", []), key=lambda g: g["pci_bus_id"])
    by_nvml = {g["index"]: pos for pos, g in enumerate(records)}
    by_bus = {g["pci_bus_id"]: pos for pos, g in enumerate(records)}
    notes: list[str] = []
    p2p: dict[int, dict[str, Any]] = {pos: {} for pos in range(len(records))}
    ancestors: dict[int, dict[str, Any]] = {pos: {} for pos in range(len(records))}
    for pair in facts.get("pairs", []):
        a, b = by_nvml.get(pair["a"]), by_nvml.get(pair["b"])
        if a is None or b is None:
            continue
        for x, y in ((a, b), (b, a)):
            p2p[x][f"gpu{y}"] = dict(pair.get("p2p", {}))
            if pair.get("common_ancestor"):
                ancestors[x][f"gpu{y}"] = pair["common_ancestor"]
    gpus = []
    host_links: dict[str, Link] = {}
    cores: dict[int, set[int]] = {}
    for pos, g in enumerate(records):
        attrs: dict[str, Any] = {}
        if p2p[pos]:
            attrs["p2p"] = p2p[pos]
        if ancestors[pos]:
            attrs["nvml_common_ancestor"] = ancestors[pos]
        numa = g.get("numa_node")
        numa = numa if isinstance(numa, int) and numa >= 0 else None
        gpus.append(Device(id=f"gpu{pos}", kind=DeviceKind.GPU, name=g.get("name") or "NVIDIA GPU", index=pos,
                           vendor="nvidia", uuid=g.get("uuid"), pci_bus_id=g["pci_bus_id"],
                           memory_bytes=g.get("memory_bytes"), numa_node=numa, ordinals={"nvidia": pos},
                           nvml_index=g["index"], attributes=attrs))
        if g.get("cpu_affinity"):
            cores.setdefault(numa if numa is not None else 0, set()).update(g["cpu_affinity"])
        pcie = g.get("pcie")
        if pcie:
            attrs["pcie_link"] = {PCIE_LINK_KEYS[k]: int(v) for k, v in pcie.items() if k in PCIE_LINK_KEYS and v}
        if pcie and pcie.get("gen") and pcie.get("width"):
            gt = GT_OF_GEN.get(int(pcie["gen"]))
            if gt:
                host_links[f"gpu{pos}"] = Link(f"gpu{pos}", "", LinkKind.PCIE, 1, pcie_gb_per_s(gt, int(pcie["width"])),
                                               provenance=Provenance.OS, source="NVML current PCIe generation/width",
                                               generation=pcie_generation(gt, int(pcie["width"])))
    links, extra_devices = _nvlinks(records, by_bus, notes)
    part = GpuPart(gpus=tuple(gpus), devices=tuple(extra_devices), links=tuple(links), host_links=host_links,
                   cores={n: tuple(sorted(c)) for n, c in cores.items()}, notes=tuple(notes),
                   sources=("NVML (nvidia-ml-py): GPUs, NVLink state/version/remote/speed, P2P status",))
    n = len(gpus)
    fabric = "NVSwitch" if extra_devices else ("NVLink" if links else "PCIe")
    return assemble(str(facts.get("hostname") or "nvml"), part, sysfs_facts,
                    source="nvml+sysfs" if sysfs_facts is not None else "nvml",
                    description=f"{n} × {gpus[0].name if gpus else 'GPU'} ({fabric}), discovered through NVML")


def _nvlinks(records: list[Mapping[str, Any]], by_bus: Mapping[str, int],
             notes: list[str]) -> tuple[list[Link], list[Device]]:
    peer_links: dict[tuple[int, int], list[dict[str, Any]]] = {}
    switch_links: dict[int, list[dict[str, Any]]] = {}
    switch_ids: set[str] = set()
    for pos, g in enumerate(records):
        for e in g.get("nvlinks", []):
            if not e.get("active"):
                continue
            kind = e.get("remote_device_type")
            remote = e.get("remote_pci_bus_id")
            if kind == "SWITCH":
                switch_links.setdefault(pos, []).append(e)
                if remote:
                    switch_ids.add(remote)
            elif remote in by_bus and (kind in (None, "GPU")):
                peer_links.setdefault((pos, by_bus[remote]), []).append(e)
            elif kind == "IBMNPU":
                notes.append(f"gpu{pos} NVLink {e['link']} goes to an IBM NPU (CPU NVLink): not modelled")
            else:
                notes.append(f"gpu{pos} NVLink {e['link']} goes to an unknown device {remote}: not modelled")
    links: list[Link] = []
    for (a, b), entries in sorted(peer_links.items()):
        if a > b:
            continue
        reverse = peer_links.get((b, a), [])
        count = len(entries)
        if reverse and len(reverse) != count:
            notes.append(f"gpu{a} reports {count} NVLinks to gpu{b} but gpu{b} reports {len(reverse)}: using the smaller")
            count = min(count, len(reverse))
        rate, provenance, source, generation = _rate(entries + reverse)
        links.append(Link(f"gpu{a}", f"gpu{b}", LinkKind.NVLINK, count, rate, provenance=provenance, source=source,
                          generation=generation))
    for (a, b), entries in sorted(peer_links.items()):
        if a > b and (b, a) not in peer_links:
            rate, provenance, source, generation = _rate(entries)
            links.append(Link(f"gpu{b}", f"gpu{a}", LinkKind.NVLINK, len(entries), rate, provenance=provenance,
                              source=source, generation=generation))
    devices: list[Device] = []
    if switch_links:
        devices.append(Device(id="nvswitch", kind=DeviceKind.NVSWITCH, name="NVSwitch plane", vendor="nvidia",
                              attributes={"physical_switches": len(switch_ids)}))
        for pos, entries in sorted(switch_links.items()):
            rate, provenance, source, generation = _rate(entries)
            links.append(Link(f"gpu{pos}", "nvswitch", LinkKind.NVLINK, len(entries), rate, provenance=provenance,
                              source=source, generation=generation))
    return links, devices


def live_facts() -> dict[str, Any]:
    """``read_facts`` of this machine (the platform table's ``health_facts``); BackendUnavailable
    when nvidia-ml-py or the driver is missing."""
    try:
        module = _import_pynvml()
    except ImportError:
        raise BackendUnavailable("nvidia-ml-py is not installed (pip install nvidia-ml-py)") from None
    return read_facts(module)


def discover(sysfs_facts: Mapping[str, Any] | None = None) -> Topology:
    """Live: read NVML now and build the Topology (``is_this_system`` is set by the caller)."""
    return facts_to_topology(read_facts(_import_pynvml()), sysfs_facts)


def driver_version() -> str:
    """The NVIDIA driver version (the run context's ``nvidia_driver``, a platform-table version probe)."""
    pynvml = _import_pynvml()
    pynvml.nvmlInit()
    try:
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    finally:
        pynvml.nvmlShutdown()


def discover_platform(host_facts: Callable[[], Mapping[str, Any] | None], notes: list[str]) -> Topology:
    """The NVIDIA row of the platform table: this machine's GPUs through NVML, merged with the sysfs
    facts ``host_facts()`` gives; BackendUnavailable ("NVML: why") where NVML sees none."""
    nv = probe()
    if not nv.ok:
        raise BackendUnavailable(f"NVML: {nv.reason}")
    topology = facts_to_topology(read_facts(_import_pynvml()), host_facts())
    return topology.replace(source="nvml+sysfs" if topology.source == "nvml+sysfs" else "nvml")


class NvmlFacts:
    """NVIDIA's discovery facts (the platform row's ``facts``): the NVML dump ``live_facts`` returns
    and ``topo export --raw`` records as ``nvml.json``, read for the P2P health check."""

    recorded_file = "nvml.json"
    vram_bar_in_sysfs = False  # BAR1 comes from NVML (bar_records)
    unrecorded_link_health = "not in these NVML facts (recorded before linkscope read link error counters)"

    def p2p_pairs(self, facts: Mapping[str, Any] | None) -> dict[frozenset[str], dict[str, Any]]:
        """Driver P2P status (NVML's read, write, nvlink, ... -> OK or a refusal) by pair of PCI bus ids."""
        if not facts:
            return {}
        bus_of = {g["index"]: normalise_bdf(g["pci_bus_id"]) for g in facts.get("gpus", [])}
        out: dict[frozenset[str], dict[str, Any]] = {}
        for pair in facts.get("pairs", []):
            a, b = bus_of.get(pair["a"]), bus_of.get(pair["b"])
            if a and b:
                out[frozenset((a, b))] = dict(pair.get("p2p") or {})
        return out

    def host_name(self, topology: Topology) -> str | None:
        """The host a topology read from NVML facts names: the recorded ``hostname`` became its name
        (``nvml`` when the facts had none); None for a topology from elsewhere."""
        if (topology.source or "").split("+")[0] != "nvml":
            return None
        return topology.name if topology.name != "nvml" else None

    def gpu_records(self, facts: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
        """Each GPU's record (BAR1, errors) by PCI bus id."""
        return {normalise_bdf(g["pci_bus_id"]): g for g in (facts or {}).get("gpus", [])}

    def link_health(self, facts: Mapping[str, Any] | None) -> list[tuple[str, Any, Mapping[str, Any]]]:
        """(PCI bus id, NVML index, recorded link health) of each GPU that has one."""
        return [(str(g.get("pci_bus_id") or ""), g.get("index"), g["link_health"])
                for g in (facts or {}).get("gpus", []) if g.get("link_health")]


FACTS = NvmlFacts()
