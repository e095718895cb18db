"""xGMI link counters of AMD GPUs through the ``amdsmi`` Python package, behind the same
``CounterSource`` protocol as NVML, so ``linkscope watch`` samples them the way it samples NVLink.

Counters (amdsmi reference, ``amdsmi_link_metrics_t``: per physical link ``read`` = "total data
received for each link in KB", ``write`` = "total data transferred for each link in KB"; both
cumulative uint64): TX = ``write``, RX = ``read``, diffed between samples like NVML's NVLink KiB
counters (KB taken as 1024 bytes, as NVML's KiB). Where ``amdsmi_get_link_metrics`` is missing
(older amdsmi), ``amdsmi_get_gpu_metrics_info``'s ``xgmi_write_data_acc`` / ``xgmi_read_data_acc``
per-link accumulators (KB) are read instead. Placeholders (all ones, "N/A": ``discovery/amdsmi_values``)
are "no counter", never a value: MI200 (gpu metrics v1.3) has no xGMI accumulators at all, so every
slot is 2**64-1 and watch reports the GPU's xGMI counters unsupported (its verdict neither passes
nor fails ``--expect``). PCIe byte counters are not read on AMD (unsupported, never zero).

The link index is the position in amdsmi's link list; a link counts as active when its type is
xGMI (link metrics) or its accumulator is reported (gpu metrics). Only this module and
``discovery/amdsmi.py`` import ``amdsmi``. No AMD GPU was available: tested with a fake module that
returns what upstream returns on MI200 and MI300 (tests/discovery/fake_amdsmi.py), never on hardware.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..discovery.amdsmi import import_amdsmi, read_link_health, xgmi_type_values
from ..discovery.amdsmi_values import PLACEHOLDER_REASON, reading
from ..errors import BackendUnavailable
from .nvml import (
    FI_NVLINK_DATA_RX_KIB,
    FI_NVLINK_DATA_TX_KIB,
    CounterUnsupported,
    FieldReading,
    FieldRequest,
    GpuInfo,
)

FABRIC = "xgmi"
SOURCE_LINK_METRICS = "amdsmi-link-metrics-xgmi-kb"
SOURCE_GPU_METRICS = "amdsmi-gpu-metrics-xgmi-data-acc-kb"


class AmdsmiSource:
    """``CounterSource`` over amdsmi; GPU indices are amdsmi's processor order."""

    fabric = FABRIC

    def __init__(self, amdsmi: Any) -> None:
        self._amd = amdsmi
        self._handles = list(amdsmi.amdsmi_get_processor_handles())
        self._xgmi = xgmi_type_values(amdsmi)[1]  # 6.x: 1, 7.x: 2
        self.counter_source = SOURCE_LINK_METRICS if getattr(amdsmi, "amdsmi_get_link_metrics", None) \
            else SOURCE_GPU_METRICS

    def device_count(self) -> int:
        return len(self._handles)

    def gpu_info(self, index: int) -> GpuInfo:
        h, amd = self._handles[index], self._amd
        name = bdf = uuid = ""
        try:
            name = str(amd.amdsmi_get_gpu_asic_info(h).get("market_name") or "")
        except Exception:
            pass
        try:
            bdf = str(amd.amdsmi_get_gpu_device_bdf(h)).lower()
        except Exception:
            pass
        try:
            uuid = str(amd.amdsmi_get_gpu_device_uuid(h))
        except Exception:
            pass
        return GpuInfo(nvml_index=index, name=name, pci_bus_id=bdf, uuid=uuid)

    def _per_link(self, index: int) -> list[tuple[int | None, int | None]]:
        """(write KB, read KB) per link index; None for a link without a counter."""
        amd, h = self._amd, self._handles[index]
        if self.counter_source == SOURCE_LINK_METRICS:
            try:
                metrics = amd.amdsmi_get_link_metrics(h)
            except Exception as exc:
                raise CounterUnsupported(f"amdsmi_get_link_metrics: {exc}") from None
            links = metrics.get("links", [])[: reading(metrics.get("num_links"), 32) or len(metrics.get("links", []))]
            per_link = [(reading(l.get("write"), 64), reading(l.get("read"), 64))
                        if reading(l.get("link_type"), 32) == self._xgmi else (None, None) for l in links]
        else:
            try:
                info = amd.amdsmi_get_gpu_metrics_info(h)
            except Exception as exc:
                raise CounterUnsupported(f"amdsmi_get_gpu_metrics_info: {exc}") from None
            writes, reads = info.get("xgmi_write_data_acc"), info.get("xgmi_read_data_acc")
            if not isinstance(writes, list) or not isinstance(reads, list):
                raise CounterUnsupported("amdsmi gpu metrics have no xgmi_*_data_acc counters on this GPU")
            per_link = [(reading(w, 64), reading(r, 64)) for w, r in zip(writes, reads)]
        if per_link and all(w is None and r is None for w, r in per_link):
            raise CounterUnsupported(f"{PLACEHOLDER_REASON}s (all ones / N/A) for every xGMI byte counter of "
                                     "this GPU: it has no xGMI accumulators (MI200: gpu metrics v1.3)")
        return per_link

    def active_nvlinks(self, index: int) -> tuple[int, ...]:
        """Active xGMI links (the protocol's name is NVML's); CounterUnsupported without counters."""
        return tuple(i for i, (w, r) in enumerate(self._per_link(index)) if w is not None and r is not None)

    def read_fields(self, index: int, requests: Sequence[FieldRequest]) -> list[FieldReading]:
        wanted = [r for r in requests if r.field_id in (FI_NVLINK_DATA_TX_KIB, FI_NVLINK_DATA_RX_KIB)]
        per_link: list[tuple[int | None, int | None]] = []
        error = ""
        if wanted:
            try:
                per_link = self._per_link(index)
            except CounterUnsupported as exc:
                error = str(exc)
        out = []
        for req in requests:
            if req.field_id not in (FI_NVLINK_DATA_TX_KIB, FI_NVLINK_DATA_RX_KIB):
                out.append(FieldReading(req.field_id, req.scope_id, None, False, "NOT_SUPPORTED on AMD (amdsmi)", None))
                continue
            if error or req.scope_id >= len(per_link):
                out.append(FieldReading(req.field_id, req.scope_id, None, False, error or "no such xGMI link", None))
                continue
            value = per_link[req.scope_id][0 if req.field_id == FI_NVLINK_DATA_TX_KIB else 1]
            out.append(FieldReading(req.field_id, req.scope_id, value, value is not None,
                                    "" if value is not None else "N/A", 2**64))
        return out

    def pcie_throughput_kb_per_s(self, index: int, tx: bool) -> int:
        raise CounterUnsupported("PCIe byte counters are not read on AMD GPUs")

    def link_health(self, index: int) -> dict[str, Any]:
        """PCIe state and error counters and the xGMI error status (``discovery.amdsmi.read_link_health``)."""
        try:
            links = list(self.active_nvlinks(index))
        except CounterUnsupported:
            links = []
        return read_link_health(self._amd, self._handles[index], links)

    def close(self) -> None:
        try:
            self._amd.amdsmi_shut_down()
        except Exception:
            pass


def open_amdsmi() -> AmdsmiSource:
    """``AmdsmiSource`` over the real package; BackendUnavailable with the reason otherwise."""
    amd = import_amdsmi()
    source = AmdsmiSource(amd)
    if source.device_count() == 0:
        source.close()
        raise BackendUnavailable("amdsmi sees no AMD GPU")
    return source
