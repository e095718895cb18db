"""A hardware-free ``CounterSource`` for tests: GPUs with NVLink and PCIe counters you move by hand."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from linkscope.counters.nvml import (
    FI_NVLINK_DATA_RX_KIB,
    FI_NVLINK_DATA_TX_KIB,
    FI_PCIE_RX_BYTES,
    FI_PCIE_TX_BYTES,
    CounterUnsupported,
    FieldReading,
    FieldRequest,
    GpuInfo,
)


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    links: int = 18  # active NVLinks; 0 = no NVLink
    nvlink_supported: bool = True
    pcie_counters: bool = True  # fields 197/198 answer; else only the throughput API
    pcie_throughput: bool = True
    modulus: int = 2**64
    refuse: set[tuple[int, int]] = field(default_factory=set)  # (field_id, scope) -> NOT_SUPPORTED
    fail_reads: int = 0  # the next N read_fields calls fail for every field
    counters: dict[tuple[int, int], int] = field(default_factory=dict)  # raw units
    pcie_rate_kb_per_s: tuple[int, int] = (0, 0)


class FakeNVML:
    def __init__(self, gpus: Sequence[FakeGpu]) -> None:
        self.gpus = list(gpus)
        self.closed = False
        self.reads = 0

    # helpers to move data ---------------------------------------------------------------
    def nvlink(self, gpu: int, link: int, tx_bytes: int = 0, rx_bytes: int = 0) -> None:
        g = self.gpus[gpu]
        for fid, amount in ((FI_NVLINK_DATA_TX_KIB, tx_bytes), (FI_NVLINK_DATA_RX_KIB, rx_bytes)):
            key = (fid, link)
            g.counters[key] = (g.counters.get(key, 0) + amount // 1024) % g.modulus

    def pcie(self, gpu: int, tx_bytes: int = 0, rx_bytes: int = 0) -> None:
        g = self.gpus[gpu]
        for fid, amount in ((FI_PCIE_TX_BYTES, tx_bytes), (FI_PCIE_RX_BYTES, rx_bytes)):
            g.counters[(fid, 0)] = (g.counters.get((fid, 0), 0) + amount) % g.modulus

    def set_raw(self, gpu: int, field_id: int, scope: int, value: int) -> None:
        self.gpus[gpu].counters[(field_id, scope)] = value

    # CounterSource ------------------------------------------------------------------------
    def device_count(self) -> int:
        return len(self.gpus)

    def gpu_info(self, index: int) -> GpuInfo:
        return GpuInfo(index, self.gpus[index].name, f"0000:{0x10 + index:02x}:00.0", f"GPU-fake-{index}")

    def active_nvlinks(self, index: int) -> tuple[int, ...]:
        g = self.gpus[index]
        if not g.nvlink_supported:
            raise CounterUnsupported("NVLink not supported (Not Supported)")
        return tuple(range(g.links))

    def read_fields(self, index: int, requests: Sequence[FieldRequest]) -> list[FieldReading]:
        self.reads += 1
        g = self.gpus[index]
        if g.fail_reads > 0:
            g.fail_reads -= 1
            return [FieldReading(r.field_id, r.scope_id, None, False, "GPU_IS_LOST", None) for r in requests]
        out = []
        for r in requests:
            key = (r.field_id, r.scope_id)
            nvlink_field = r.field_id in (FI_NVLINK_DATA_TX_KIB, FI_NVLINK_DATA_RX_KIB)
            pcie_field = r.field_id in (FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES)
            if key in g.refuse or (nvlink_field and not g.nvlink_supported) or (pcie_field and not g.pcie_counters):
                out.append(FieldReading(r.field_id, r.scope_id, None, False, "NOT_SUPPORTED", None))
            else:
                out.append(FieldReading(r.field_id, r.scope_id, g.counters.get(key, 0), True, "", g.modulus))
        return out

    def pcie_throughput_kb_per_s(self, index: int, tx: bool) -> int:
        g = self.gpus[index]
        if not g.pcie_throughput:
            raise CounterUnsupported("nvmlDeviceGetPcieThroughput: Not Supported")
        return g.pcie_rate_kb_per_s[0 if tx else 1]

    def close(self) -> None:
        self.closed = True


class FakeClock:
    def __init__(self, start: float = 100.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds
