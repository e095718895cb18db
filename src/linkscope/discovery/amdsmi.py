"""AMD GPUs (GCDs), xGMI links, NUMA nodes and PCIe links through the ``amdsmi`` Python package.

Used before the ``rocm-smi`` / ``amd-smi`` text parsers (``rocm.py``), which stay the fallback when
the package is missing or its library does not initialise. Only this module (and
``counters/amdsmi.py`` for the xGMI counters) imports ``amdsmi``, lazily.

Calls (amdsmi Python API, ROCm/amdsmi ``py-interface/amdsmi_interface.py`` and the amdsmi
"Hardware Topology Functions" reference):

* ``amdsmi_init()``, ``amdsmi_get_processor_handles()``, ``amdsmi_shut_down()``;
* per GPU: ``amdsmi_get_gpu_device_bdf`` (``"0000:c1:00.0"``), ``amdsmi_get_gpu_device_uuid``,
  ``amdsmi_get_gpu_asic_info`` (``market_name``), ``amdsmi_topo_get_numa_node_number``,
  ``amdsmi_get_pcie_info`` (``pcie_metric``: ``pcie_width``, ``pcie_speed`` in MT/s);
* per pair: ``amdsmi_topo_get_link_type`` → ``{"hops", "type"}`` (``AmdSmiIoLinkType.XGMI``),
  ``amdsmi_topo_get_link_weight``, ``amdsmi_get_minmax_bandwidth_between_processors`` →
  ``{"min_bandwidth", "max_bandwidth"}`` in MB/s (amdkfd io_link: min = one xGMI link, max = links ×
  min, 0 for a routed peer);
* ``amdsmi_get_gpu_enumeration_info`` (7.x only; 7.0.2 wheel ``amdsmi_interface.py:1959-1996``) →
  ``hip_id`` (the HIP ordinal with no visibility variable: KFD node id minus the smallest GPU node
  id; "N/A" when unknown) and ``hip_uuid`` (``GPU-%016x``, what HIP_VISIBLE_DEVICES accepts from
  ROCm 6.2); see ``hipdevices``;
* ``amdsmi_get_link_metrics`` (Python layer from 7.x: the 6.x ``py-interface/amdsmi_interface.py``
  has no such function at rocm-6.0.0 … rocm-6.2.2, though the C library has it from 6.1.0,
  ``include/amd_smi/amdsmi.h:3951`` at rocm-6.1.0; so 6.x always takes the bandwidth fallback)
  → ``{"num_links", "links": [{"bdf", "bit_rate",
  "max_bandwidth", "link_type", "read", "write"}]}``, always 8 slots, every one typed XGMI; the
  peer's ``bdf`` is a placeholder (6.x: never set; 7.x: all ones) unless the kernel exposes the
  xgmi port map. Link counts come from it only where every GPU's slots name real peers; else from
  max/min bandwidth (each pair records which: ``link_count_from``). Placeholders are read by the
  one rule of ``amdsmi_values``.

The 6.x and 7.x enum layouts differ (``xgmi_type_values``): 6.x ``AmdSmiIoLinkType.XGMI`` = 2 for
the pair type and ``AmdSmiLinkType`` XGMI = 1 for link slots; 7.x only ``AmdSmiLinkType``, XGMI = 2.

NICs are not amdsmi's business: they come from sysfs, as on the rocm-smi path.

No AMD GPU was available while this was written: it is tested against a fake module that returns
what the amdsmi 6.x and 7.x code returns on MI200 and MI300 (tests/discovery/fake_amdsmi.py names
the upstream lines), never on real hardware.
"""
from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import BackendUnavailable
from ..topology.model import Topology
from . import rocm
from .amdsmi_values import reading, unresolved_bdf
from .base import Availability
from .hipdevices import kfd_facts, read_kfd_gpus
from .rocm import facts_to_topology
from .sysfs import normalise_bdf

IOLINK_TYPE_XGMI = 2  # 6.x amdsmi_io_link_type_t (UNDEFINED 0, PCIEXPRESS 1, XGMI 2): topo_get_link_type
LINK_TYPE_XGMI_6 = 1  # 6.x amdsmi_link_type_t (INTERNAL 0, XGMI 1, PCIE 2): link metrics' link_type
LINK_TYPE_XGMI_7 = 2  # 7.x amdsmi_link_type_t (INTERNAL 0, PCIE 1, XGMI 2): both calls (7.0.2 amdsmi_wrapper.py:1231-1235)
LINK_TYPE_XGMI = LINK_TYPE_XGMI_7
FACTS_FORMAT = "linkscope.rocm-facts"


def import_amdsmi() -> Any:
    """The amdsmi module, initialised; BackendUnavailable with the reason otherwise."""
    try:
        import amdsmi
    except ImportError as exc:
        raise BackendUnavailable(f"amdsmi Python package not installed ({exc})",
                                 hint="it ships with ROCm (/opt/rocm/share/amd_smi) or pip install amdsmi") from None
    try:
        amdsmi.amdsmi_init()
    except Exception as exc:
        raise BackendUnavailable(f"amdsmi did not initialise: {exc}") from None
    return amdsmi


def probe(module: Any | None = None) -> Availability:
    try:
        mod = module if module is not None else import_amdsmi()
        if module is not None:
            mod.amdsmi_init()
        count = len(mod.amdsmi_get_processor_handles())
    except BackendUnavailable as exc:
        return Availability("amdsmi", False, str(exc))
    except Exception as exc:
        return Availability("amdsmi", False, f"amdsmi failed: {type(exc).__name__}: {exc}")
    if count == 0:
        return Availability("amdsmi", False, "amdsmi sees no AMD GPU")
    return Availability("amdsmi", True, f"{count} AMD GPU(s) through amdsmi", version=_version(mod))


def _version(mod: Any) -> str | None:
    try:
        info = mod.amdsmi_get_lib_version()
        return ".".join(str(info.get(k)) for k in ("major", "minor", "release") if info.get(k) is not None) or None
    except Exception:
        return None


def _enum(mod: Any, enum: str, member: str, default: int) -> int:
    holder = getattr(mod, enum, None)
    value = getattr(holder, member, None) if holder is not None else None
    return int(value) if value is not None else default


def _try(call: Any, *args: Any) -> Any:
    try:
        return call(*args)
    except Exception:
        return None


def xgmi_type_values(mod: Any) -> tuple[int, int]:
    """(xGMI value of ``amdsmi_topo_get_link_type``'s ``type``, xGMI value of a link-metrics slot's
    ``link_type``), from the module's own enums: 6.x has ``AmdSmiIoLinkType`` for the first and an
    ``AmdSmiLinkType`` with XGMI = 1 for the second; 7.x dropped ``AmdSmiIoLinkType`` and uses
    ``AmdSmiLinkType`` (XGMI = 2) for both."""
    link_xgmi = _enum(mod, "AmdSmiLinkType", "AMDSMI_LINK_TYPE_XGMI", LINK_TYPE_XGMI_7)
    if getattr(mod, "AmdSmiIoLinkType", None) is not None:
        return _enum(mod, "AmdSmiIoLinkType", "XGMI", IOLINK_TYPE_XGMI), link_xgmi
    return link_xgmi, link_xgmi


def _metric_slots(metrics: Any) -> list[dict[str, Any]]:
    if not isinstance(metrics, dict) or not isinstance(metrics.get("links"), list):
        return []
    slots = [s for s in metrics["links"] if isinstance(s, dict)]
    num = reading(metrics.get("num_links"), 32)
    return slots[:num] if num is not None else slots


def link_counts_from_metrics(mod: Any, handles: list[Any], bdfs: list[str | None],
                             link_xgmi: int) -> tuple[dict[tuple[int, int], int] | None, str]:
    """xGMI links per GPU pair counted from ``amdsmi_get_link_metrics``'s peer addresses, or None
    with the reason when they cannot be counted there. Upstream fills all 8 slots, types every one
    XGMI and leaves the peer's address unset (6.x: zero) or all ones (7.x) unless the kernel
    exposes the xgmi port map, so only slots whose address names one of this node's GPUs count;
    a GPU none of whose slots does makes the whole answer unknown (the bandwidth fallback decides)."""
    fn = getattr(mod, "amdsmi_get_link_metrics", None)
    if not callable(fn):
        return None, "amdsmi_get_link_metrics not available (older amdsmi)"
    index_of = {b: i for i, b in enumerate(bdfs) if b}
    counts: dict[tuple[int, int], int] = {}
    placeholders = 0
    for i, h in enumerate(handles):
        slots = _metric_slots(_try(fn, h))
        resolved = 0
        for slot in slots:
            if reading(slot.get("link_type"), 32) != link_xgmi:
                continue
            if unresolved_bdf(slot.get("bdf")):
                placeholders += 1
                continue
            j = index_of.get(normalise_bdf(str(slot["bdf"])))
            if j is None:
                continue
            resolved += 1
            if i < j:  # each physical link once, from its lower-numbered end
                counts[(i, j)] = counts.get((i, j), 0) + 1
        if not resolved:
            why = (f"its {placeholders} xGMI slots name no peer (unset address: amdsmi placeholder)" if placeholders
                   else "no slot names a GPU of this node")
            return None, f"amdsmi_get_link_metrics cannot count xGMI links on GPU {i}: {why}"
    return counts, ""


def read_facts(mod: Any) -> dict[str, Any]:
    """What amdsmi says, as JSON-able facts (the same shape ``rocm.parse_outputs`` returns, so
    ``rocm.facts_to_topology`` builds the Topology). Each pair says where its link count came from."""
    handles = list(mod.amdsmi_get_processor_handles())
    xgmi_io, xgmi_link = xgmi_type_values(mod)
    notes: list[str] = []
    gpus = []
    bdfs: list[str | None] = []
    unknown_numa = []
    for i, h in enumerate(handles):
        bdf = _try(mod.amdsmi_get_gpu_device_bdf, h)
        bdfs.append(None if unresolved_bdf(bdf) else normalise_bdf(str(bdf)))
        asic = _try(mod.amdsmi_get_gpu_asic_info, h) or {}
        name = asic.get("market_name") if isinstance(asic, dict) else None
        numa = reading(_try(mod.amdsmi_topo_get_numa_node_number, h), 32)  # c_uint32: -1 arrives as 2**32-1
        if numa is None:
            unknown_numa.append(i)
        pcie = _try(mod.amdsmi_get_pcie_info, h) or {}
        metric = pcie.get("pcie_metric", {}) if isinstance(pcie, dict) else {}
        speed_mt, width = reading(metric.get("pcie_speed"), 32), reading(metric.get("pcie_width"), 16)
        enum = _try(getattr(mod, "amdsmi_get_gpu_enumeration_info", None) or (lambda *_: None), h)
        hip_id = reading(enum.get("hip_id"), 32) if isinstance(enum, dict) else None
        hip_uuid = enum.get("hip_uuid") if isinstance(enum, dict) else None
        gpus.append({"index": i, "pci_bus_id": bdfs[-1], "name": name if name and name != "N/A" else None,
                     # amdsmi 7.x: HIP's ordinal and UUID (KFD order, no environment); 6.x has no such call
                     "hip_id": hip_id,
                     "hip_uuid": hip_uuid if isinstance(hip_uuid, str) and hip_uuid.startswith("GPU-")
                     and hip_uuid != "GPU-0000000000000000" else None,
                     "uuid": _try(mod.amdsmi_get_gpu_device_uuid, h),
                     "numa_node": numa if numa is not None and numa >= 0 else None,
                     "pcie": {"speed_gt_per_s": speed_mt / 1000, "width": width}
                     if speed_mt and width else None})
    if unknown_numa:
        notes.append(f"amdsmi reports no NUMA node for GPU(s) {', '.join(map(str, unknown_numa))} "
                     "(4294967295 = the kernel's -1, no affinity): NUMA unknown")
    link_counts, why = link_counts_from_metrics(mod, handles, bdfs, xgmi_link)
    if link_counts is None:
        notes.append(f"{why}; xGMI link counts from max/min bandwidth (amdkfd: max = links x min)")
    pairs = []
    for a in range(len(handles)):
        for b in range(a + 1, len(handles)):
            kind = _try(mod.amdsmi_topo_get_link_type, handles[a], handles[b]) or {}
            bw = _try(mod.amdsmi_get_minmax_bandwidth_between_processors, handles[a], handles[b]) or {}
            is_xgmi = reading(kind.get("type"), 32) == xgmi_io
            lo, hi = (reading(bw.get("min_bandwidth"), 64), reading(bw.get("max_bandwidth"), 64)) \
                if isinstance(bw, dict) else (None, None)
            pair: dict[str, Any] = {
                "a": a, "b": b, "link_type": "XGMI" if is_xgmi else ("PCIE" if kind else None),
                "weight": reading(_try(mod.amdsmi_topo_get_link_weight, handles[a], handles[b]), 64),
                "hops": reading(kind.get("hops"), 64),
                "bandwidth_mbps": [lo, hi] if lo is not None and hi is not None else None,
                # amdsmi_is_P2P_accessible: the driver's "can these two map each other's memory"
                "p2p_accessible": _try(getattr(mod, "amdsmi_is_P2P_accessible", None) or (lambda *_: None),
                                       handles[a], handles[b]),
            }
            if is_xgmi and link_counts is not None:
                pair["link_count"] = link_counts.get((a, b), 0)
                pair["link_count_from"] = "amdsmi_get_link_metrics peer addresses"
            elif is_xgmi:
                pair["link_count_from"] = "amdsmi max/min bandwidth"
            pairs.append(pair)
    return {"format": FACTS_FORMAT, "version": 1, "from": ["amdsmi"], "gpus": gpus, "pairs": pairs,
            "xgmi_rate_from_min_bandwidth": True, "notes": notes}


def live_facts() -> dict[str, Any]:
    """``read_facts`` of this machine (the platform table's ``health_facts``); BackendUnavailable
    when the amdsmi package is missing or sees no GPU."""
    return read_facts_and_shut_down(import_amdsmi())


def read_facts_and_shut_down(mod: Any) -> dict[str, Any]:
    """``read_facts`` of an initialised module, then ``amdsmi_shut_down`` whatever happened (the
    recorder and the health check both read once and let go)."""
    try:
        return read_facts(mod)
    finally:
        try:
            mod.amdsmi_shut_down()
        except Exception:
            pass


def discover(sysfs_facts: Mapping[str, Any] | None = None, module: Any | None = None) -> Topology:
    """Live: ask amdsmi now (``module`` replaces the real package in tests)."""
    mod = module if module is not None else import_amdsmi()
    try:
        facts = read_facts(mod)
    finally:
        _try(mod.amdsmi_shut_down)
    return facts_to_topology(facts, sysfs_facts, name=socket.gethostname())


def discover_platform(host_facts: Callable[[], Mapping[str, Any] | None], notes: list[str]) -> Topology:
    """The AMD row of the platform table: the amdsmi package first, the rocm-smi / amd-smi text
    parsers as the fallback (with a note); BackendUnavailable naming both reasons where neither works."""
    facts = None
    try:
        module = import_amdsmi()
    except BackendUnavailable as exc:
        reason = str(exc)
    else:
        try:
            if module.amdsmi_get_processor_handles():
                facts = read_facts(module)
                reason = ""
            else:
                reason = "amdsmi sees no AMD GPU"
        except Exception as exc:
            reason = f"amdsmi failed: {type(exc).__name__}: {exc}"
        finally:
            _try(module.amdsmi_shut_down)
    if facts is None:
        text = rocm.probe()
        if not text.ok:
            raise BackendUnavailable(f"amdsmi: {reason}; ROCm: {text.reason}")
        facts = rocm.parse_outputs(rocm.read_outputs())
        notes.append(f"amdsmi not used ({reason}): ROCm SMI text output parsed instead")
    facts["kfd_gpus"] = kfd_facts(read_kfd_gpus())  # HIP's order, live: ordinals follow it by PCI address
    return rocm.facts_to_topology(facts, host_facts(), name=socket.gethostname())


#: amdsmi_pcie_info_t pcie_metric fields (amdsmi.h: "total number of the replays issued on the PCIe
#: link", "... transitioned from L0 to the recovery state", "... replay rollovers", "NAKs issued on the
#: PCIe link by the device" / "by the receiver") -> the counter names NVML's link health uses.
PCIE_METRIC_COUNTERS = {"pcie_replay_count": "replay", "pcie_l0_to_recovery_count": "l0_to_recovery",
                        "pcie_replay_roll_over_count": "replay_rollover", "pcie_nak_sent_count": "naks_sent",
                        "pcie_nak_received_count": "naks_received"}
#: amdsmi_gpu_xgmi_error_status: AMDSMI_XGMI_STATUS_NO_ERRORS 0, _ERROR 1, _MULTIPLE_ERRORS 2.
XGMI_STATUS_ERROR_COUNT = {0: 0, 1: 1, 2: 2}


def read_link_health(mod: Any, h: Any, xgmi_links: list[int] | None = None) -> dict[str, Any]:
    """One AMD GPU's link state and error counters, in the shape of ``nvml.read_link_health``:
    ``pcie`` from ``amdsmi_get_pcie_info`` (current/max width, speed in MT/s as a generation, the
    replay/recovery/NAK counters), and the xGMI error status (``amdsmi_gpu_xgmi_error_status``: 0 no
    errors, 1 an error, 2 several; a GPU-wide status, kept as ``xgmi_error`` on every active link) for
    the active xGMI links ``xgmi_links`` (the counter source's link indices)."""
    from ..topology.pcie import GT_OF_GEN

    gen_of_mt = {int(gt * 1000): gen for gen, gt in GT_OF_GEN.items()}
    errors: dict[str, str] = {}
    pcie: dict[str, Any] = {}
    try:
        info = mod.amdsmi_get_pcie_info(h)
    except Exception as exc:
        errors["pcie"] = str(exc)
        info = {}
    metric = info.get("pcie_metric", {}) if isinstance(info, dict) else {}
    static = info.get("pcie_static", {}) if isinstance(info, dict) else {}
    # field widths of amdsmi_pcie_info_t (amdsmi.h): speeds uint32 (MT/s), widths uint16, counters uint64;
    # an all-ones value or "N/A" is amdsmi's "not supported" (discovery.amdsmi_values.reading)
    for key, source, bits, table in (("gen", metric.get("pcie_speed"), 32, gen_of_mt),
                                     ("max_gen", static.get("max_pcie_speed"), 32, gen_of_mt),
                                     ("width", metric.get("pcie_width"), 16, None),
                                     ("max_width", static.get("max_pcie_width"), 16, None)):
        raw = reading(source, bits)
        value = (table.get(raw) if table is not None else raw) if raw else None
        if value:
            pcie[key] = int(value)
    pcie["counters"] = {name: reading(metric.get(key), 64) for key, name in PCIE_METRIC_COUNTERS.items()}
    status = None
    fn = getattr(mod, "amdsmi_gpu_xgmi_error_status", None)
    if fn is not None:
        try:
            status = XGMI_STATUS_ERROR_COUNT.get(int(fn(h)))
        except Exception as exc:
            errors["xgmi_error_status"] = str(exc)
    links = [{"link": k, "active": True, "errors": {"xgmi_error": status}} for k in (xgmi_links or [])]
    return {"fabric": "xgmi", "nvlink": {"links": links, "active_count": len(links), "link_count": len(links), "totals": {}},
            "pcie": pcie, "errors": errors}


class AmdFacts:
    """AMD's discovery facts (the platform row's ``facts``): the amdsmi/ROCm dump ``live_facts``
    returns and ``topo export --raw`` records as ``amdsmi.json``, read for the P2P health check."""

    recorded_file = "amdsmi.json"
    vram_bar_in_sysfs = True  # the largest sysfs BAR of the GPU is its VRAM BAR
    unrecorded_link_health = "not recorded (amdsmi's link health is read live, not recorded)"

    def p2p_pairs(self, facts: Mapping[str, Any] | None) -> dict[frozenset[str], dict[str, Any]]:
        """amdsmi's P2P accessibility (``accessible`` -> OK / NOT_ACCESSIBLE) by pair of PCI bus ids."""
        if not facts:
            return {}
        bus_of = {g["index"]: normalise_bdf(g["pci_bus_id"]) for g in facts.get("gpus", []) if g.get("pci_bus_id")}
        out: dict[frozenset[str], dict[str, Any]] = {}
        for pair in facts.get("pairs", []):
            a, b = bus_of.get(pair["a"]), bus_of.get(pair["b"])
            if a and b and pair.get("p2p_accessible") is not None:
                out[frozenset((a, b))] = {"accessible": "OK" if pair["p2p_accessible"] else "NOT_ACCESSIBLE"}
        return out

    def host_name(self, topology: Topology) -> str | None:
        return None  # amdsmi discovery does not name the topology after the host

    def gpu_records(self, facts: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
        return {}  # no BAR1 record: the VRAM BAR is read from sysfs

    def link_health(self, facts: Mapping[str, Any] | None) -> list[tuple[str, Any, Mapping[str, Any]]]:
        return []  # read live through the counter source, not recorded


FACTS = AmdFacts()
