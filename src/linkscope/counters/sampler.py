"""Sampling link counters: what to read per GPU (a plan, probed once) and a sampler that reads it
before, during (a background thread at a fixed interval) and after a command.

The sampler stores raw readings only; ``timeline`` turns them into bytes and rates. It takes the
source, the clock and the interval as arguments (C7), so tests drive it with a fake NVML and a fake
clock, calling ``sample()`` by hand.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .. import platforms
from .nvml import (
    FI_NVLINK_DATA_RX_KIB,
    FI_NVLINK_DATA_TX_KIB,
    FI_PCIE_RX_BYTES,
    FI_PCIE_TX_BYTES,
    CounterSource,
    CounterUnsupported,
    FieldRequest,
    GpuInfo,
)

#: The bus slot of the GPU-to-GPU fabric's counters, whatever the fabric (NVLink, xGMI: ``GpuPlan.fabric``
#: says which); records call it ``nvlink``. ``NVLINK``: its first name.
FABRIC = NVLINK = "nvlink"
PCIE = "pcie"
TX = "tx"
RX = "rx"

CUMULATIVE = "cumulative"  # a counter that only grows (modulo wrap): diff successive samples
RATE = "rate"  # an instantaneous rate (bytes/s): integrate over time

PCIE_FROM_COUNTERS = "nvml-field-pcie-count-bytes"
PCIE_FROM_THROUGHPUT = "nvml-pcie-throughput-20ms-integrated"


@dataclass(frozen=True, order=True)
class CounterKey:
    """One counter of one GPU: (gpu, bus, link, direction); ``link`` is None for PCIe."""

    gpu: int
    bus: str
    link: int
    direction: str

    @property
    def label(self) -> str:
        where = f"nvlink{self.link}" if self.bus == FABRIC else "pcie"
        return f"gpu{self.gpu}.{where}.{self.direction}"


@dataclass(frozen=True)
class CounterSpec:
    """How to read a counter and what its raw value means.

    Attributes:
        key: which counter.
        mode: ``cumulative`` (NVML field value, diffed) or ``rate`` (bytes/s, integrated).
        request: the NVML field to read (cumulative mode), None in rate mode.
        bytes_per_unit: raw value x this = bytes (1024 for NVLink KiB counters; 1 for PCIe bytes;
            for rate mode the raw value is KB/s and this turns it into bytes/s).
        source: a name saying where the number comes from (kept in the JSON).
    """

    key: CounterKey
    mode: str
    request: FieldRequest | None
    bytes_per_unit: int
    source: str


@dataclass(frozen=True)
class GpuPlan:
    """What will be sampled on one GPU, and what cannot be, with the reason.

    Attributes:
        info: identity of the GPU.
        counters: the counters that answered the probe.
        links: active NVLinks (may be empty).
        nvlink_unsupported: why NVLink counters cannot be read ("" when they can).
        pcie_source: PCIE_FROM_COUNTERS, PCIE_FROM_THROUGHPUT or "" (unsupported).
        pcie_unsupported: why PCIe counters cannot be read ("" when they can).
        unsupported: per-counter reasons for counters that a driver refused (link-level detail).
        fabric: which GPU fabric the link counters are (``LinkFabric.key`` of the platform row:
            ``nvlink`` from NVML, ``xgmi`` from amdsmi); each sits in the ``FABRIC`` bus slot.
    """

    info: GpuInfo
    counters: tuple[CounterSpec, ...]
    links: tuple[int, ...]
    nvlink_unsupported: str = ""
    pcie_source: str = ""
    pcie_unsupported: str = ""
    unsupported: tuple[tuple[CounterKey, str], ...] = ()
    fabric: str = FABRIC

    @property
    def gpu(self) -> int:
        return self.info.nvml_index


@dataclass(frozen=True)
class Point:
    """One reading: time (s, sampler clock), raw value or None with the error, counter modulus."""

    t_s: float
    raw: int | None
    error: str = ""
    modulus: int | None = None


@dataclass
class CounterSeries:
    """All readings of one counter, in time order (mutable while sampling; read after stop)."""

    spec: CounterSpec
    points: list[Point] = field(default_factory=list)


def plan_gpu(source: CounterSource, gpu: int) -> GpuPlan:
    """Probe which counters this GPU answers. Unsupported counters are recorded with NVML's reason."""
    info = source.gpu_info(gpu)
    link_fabric = platforms.link_fabric(getattr(source, "fabric", None))  # a source naming none is NVML's
    fabric, fabric_name = link_fabric.key, link_fabric.label
    fabric_source = getattr(source, "counter_source", None) or link_fabric.counter_source
    unsupported: list[tuple[CounterKey, str]] = []
    specs: list[CounterSpec] = []
    nvlink_reason = ""
    try:
        links = source.active_nvlinks(gpu)
    except CounterUnsupported as exc:
        links, nvlink_reason = (), str(exc)
    if links:
        requests = []
        keys = []
        for link in links:
            for direction, fid in ((TX, FI_NVLINK_DATA_TX_KIB), (RX, FI_NVLINK_DATA_RX_KIB)):
                requests.append(FieldRequest(fid, link))
                keys.append(CounterKey(gpu, FABRIC, link, direction))
        for key, req, reading in zip(keys, requests, source.read_fields(gpu, requests)):
            if reading.ok:
                specs.append(CounterSpec(key, CUMULATIVE, req, 1024, fabric_source))
            else:
                unsupported.append((key, reading.error or "not supported"))
        if not any(s.key.bus == FABRIC for s in specs):
            reasons = sorted({r for _, r in unsupported})
            nvlink_reason = f"{fabric_name} data counters not supported ({', '.join(reasons)})"
    elif not nvlink_reason:
        nvlink_reason = link_fabric.no_links

    pcie_source, pcie_reason = "", ""
    requests = [FieldRequest(FI_PCIE_TX_BYTES, 0), FieldRequest(FI_PCIE_RX_BYTES, 0)]
    readings = source.read_fields(gpu, requests)
    if all(r.ok for r in readings):
        pcie_source = PCIE_FROM_COUNTERS
        for direction, req in zip((TX, RX), requests):
            specs.append(CounterSpec(CounterKey(gpu, PCIE, -1, direction), CUMULATIVE, req, 1, pcie_source))
    else:
        field_reason = ", ".join(sorted({r.error for r in readings if not r.ok}))
        try:
            source.pcie_throughput_kb_per_s(gpu, True)
            source.pcie_throughput_kb_per_s(gpu, False)
        except CounterUnsupported as exc:
            pcie_reason = f"PCIe byte counters not supported ({field_reason}); {exc}"
        else:
            pcie_source = PCIE_FROM_THROUGHPUT
            # NVML documents the rate as KB/s; nvidia-smi and nvtop treat the K as 1024.
            for direction in (TX, RX):
                specs.append(CounterSpec(CounterKey(gpu, PCIE, -1, direction), RATE, None, 1024, pcie_source))
    return GpuPlan(info=info, counters=tuple(specs), links=tuple(links), nvlink_unsupported=nvlink_reason,
                   pcie_source=pcie_source, pcie_unsupported=pcie_reason, unsupported=tuple(unsupported),
                   fabric=fabric)


class Sampler:
    """Reads every planned counter of every GPU; ``start``/``stop`` run ``sample`` in a thread.

    ``sample`` may be called by hand (before and after the command, and in tests).
    """

    def __init__(
        self,
        source: CounterSource,
        plans: Sequence[GpuPlan],
        interval_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("interval must be positive")
        self._source = source
        self._plans = tuple(plans)
        self.interval_s = interval_s
        self._clock = clock
        self._series = {spec.key: CounterSeries(spec) for plan in self._plans for spec in plan.counters}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.thread_error: BaseException | None = None

    @property
    def plans(self) -> tuple[GpuPlan, ...]:
        return self._plans

    def sample(self) -> None:
        for plan in self._plans:
            cumulative = [s for s in plan.counters if s.mode == CUMULATIVE]
            if cumulative:
                readings = self._source.read_fields(plan.gpu, [s.request for s in cumulative])  # type: ignore[misc]
                t_s = self._clock()
                with self._lock:
                    for spec, reading in zip(cumulative, readings):
                        self._series[spec.key].points.append(
                            Point(t_s, reading.value if reading.ok else None, reading.error, reading.modulus))
            for spec in (s for s in plan.counters if s.mode == RATE):
                try:
                    raw: int | None = self._source.pcie_throughput_kb_per_s(plan.gpu, spec.key.direction == TX)
                    error = ""
                except CounterUnsupported as exc:
                    raw, error = None, str(exc)
                t_s = self._clock()  # the 20 ms window ends when the call returns
                with self._lock:
                    self._series[spec.key].points.append(Point(t_s, raw, error, None))

    def _loop(self) -> None:
        try:
            deadline = self._clock() + self.interval_s
            # Fixed-rate schedule: a slow read (PCIe throughput blocks ~20 ms) does not stretch the period.
            while not self._stop.wait(max(0.0, deadline - self._clock())):
                self.sample()
                deadline = max(deadline + self.interval_s, self._clock())
        except BaseException as exc:
            self.thread_error = exc

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="linkscope-watch-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def series(self) -> list[CounterSeries]:
        with self._lock:
            return [CounterSeries(s.spec, list(s.points)) for _, s in sorted(self._series.items())]
