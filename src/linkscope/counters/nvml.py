"""A thin NVML reader for link counters, behind a small protocol (``CounterSource``).

Only this module imports ``pynvml`` (nvidia-ml-py), lazily inside ``open_nvml``. Everything above it
(sampler, timeline, verdict, watch) talks to the protocol, and the tests drive it with a fake.

Counters read (facts from the NVML API reference, ``nvml.h`` and nvidia-ml-py 13):

* NVLink data bytes per link: ``nvmlDeviceGetFieldValues`` with ``NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX``
  (138) / ``_RX`` (139) and ``scopeId`` = link index. Cumulative counters of payload data in **KiB**
  ("NVLink TX Data throughput in KiB"); the same quantity DCGM exposes as
  ``DCGM_FI_PROF_NVLINK_TX_BYTES`` / ``RX_BYTES`` (fields 1011/1012). We diff successive samples.
* PCIe bytes: preferred ``NVML_FI_DEV_PCIE_COUNT_TX_BYTES`` (197) / ``RX_BYTES`` (198), cumulative byte
  counters (newer drivers, may wrap). Where the driver does not support them we fall back to
  ``nvmlDeviceGetPcieThroughput`` (TX/RX), a KB/s rate measured over a 20 ms window at the time of
  the call (and blocking about 20 ms per direction), which the timeline integrates over time: an
  estimate, labelled as such.

Every field value carries its own ``nvmlReturn``: a field the driver does not support comes back as
``FieldReading(ok=False, error=...)``, never as a zero.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import BackendUnavailable, UserError

# Field ids (nvml.h; nvidia-ml-py names them the same).
FI_NVLINK_DATA_TX_KIB = 138  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, KiB, scopeId = link
FI_NVLINK_DATA_RX_KIB = 139  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX
FI_PCIE_TX_BYTES = 197  # NVML_FI_DEV_PCIE_COUNT_TX_BYTES, bytes
FI_PCIE_RX_BYTES = 198  # NVML_FI_DEV_PCIE_COUNT_RX_BYTES
MAX_NVLINKS = 36  # NVML_NVLINK_MAX_LINKS in nvml.h (r570+); older headers say 12 or 18

# nvmlValueType_t -> counter modulus for wrap-around (the width of the C type NVML filled in).
_VALUE_TYPE_MODULUS = {1: 2**32, 2: 2**64, 3: 2**64, 6: 2**16}
_RETURN_NAMES = {0: "SUCCESS", 1: "UNINITIALIZED", 2: "INVALID_ARGUMENT", 3: "NOT_SUPPORTED",
                 4: "NO_PERMISSION", 13: "FUNCTION_NOT_FOUND", 15: "GPU_IS_LOST", 999: "UNKNOWN"}
NOT_SUPPORTED = 3


@dataclass(frozen=True)
class FieldRequest:
    """One field to read: ``field_id`` with ``scope_id`` (the link index for NVLink fields)."""

    field_id: int
    scope_id: int = 0


@dataclass(frozen=True)
class FieldReading:
    """One field value as NVML returned it.

    Attributes:
        field_id, scope_id: what was asked.
        value: the raw counter value (NVML's units: KiB for NVLink data, bytes for PCIe counts);
            None when not ok.
        ok: NVML returned success for this field.
        error: NVML's reason when not ok (``NOT_SUPPORTED`` ...).
        modulus: the counter wraps at this value (from NVML's value type), None if unknown.
    """

    field_id: int
    scope_id: int
    value: int | None
    ok: bool
    error: str = ""
    modulus: int | None = 2**64


@dataclass(frozen=True)
class GpuInfo:
    """Identity of one GPU as NVML numbers it (``nvml_index`` is not a CUDA ordinal)."""

    nvml_index: int
    name: str = ""
    pci_bus_id: str = ""
    uuid: str = ""


class CounterUnsupported(Exception):
    """A counter call the driver or GPU does not support (NVML_ERROR_NOT_SUPPORTED and friends)."""


class CounterSource(Protocol):
    """What the sampler needs from NVML. All indices are NVML indices."""

    def device_count(self) -> int: ...

    def gpu_info(self, index: int) -> GpuInfo: ...

    def active_nvlinks(self, index: int) -> tuple[int, ...]:
        """Links that are up; raises CounterUnsupported when the GPU has no NVLink support."""

    def read_fields(self, index: int, requests: Sequence[FieldRequest]) -> list[FieldReading]: ...

    def pcie_throughput_kb_per_s(self, index: int, tx: bool) -> int:
        """KB/s over a 20 ms window ending now; raises CounterUnsupported."""

    def close(self) -> None: ...


def return_name(code: int) -> str:
    return _RETURN_NAMES.get(int(code), f"NVML error {int(code)}")


class PynvmlSource:
    """``CounterSource`` over nvidia-ml-py. Build it with ``open_nvml()``."""

    def __init__(self, pynvml: Any) -> None:
        self._nv = pynvml
        self._handles: dict[int, Any] = {}

    def _handle(self, index: int) -> Any:
        if index not in self._handles:
            self._handles[index] = self._nv.nvmlDeviceGetHandleByIndex(index)
        return self._handles[index]

    def device_count(self) -> int:
        return int(self._nv.nvmlDeviceGetCount())

    def gpu_info(self, index: int) -> GpuInfo:
        nv, handle = self._nv, self._handle(index)

        def text(value: Any) -> str:
            return value.decode() if isinstance(value, bytes) else str(value)

        try:
            name = text(nv.nvmlDeviceGetName(handle))
        except nv.NVMLError:
            name = ""
        try:
            bus = text(nv.nvmlDeviceGetPciInfo(handle).busId).lower()
            # NVML gives 8 hex digits of domain (00000000:07:00.0); normalise to 0000:07:00.0 (C2).
            if len(bus.split(":")[0]) == 8:
                bus = bus[4:]
        except nv.NVMLError:
            bus = ""
        try:
            uuid = text(nv.nvmlDeviceGetUUID(handle))
        except nv.NVMLError:
            uuid = ""
        return GpuInfo(nvml_index=index, name=name, pci_bus_id=bus, uuid=uuid)

    def active_nvlinks(self, index: int) -> tuple[int, ...]:
        nv, handle = self._nv, self._handle(index)
        limit = int(getattr(nv, "NVML_NVLINK_MAX_LINKS", MAX_NVLINKS))
        links = []
        any_answer = False
        for link in range(limit):
            try:
                state = nv.nvmlDeviceGetNvLinkState(handle, link)
            except nv.NVMLError as exc:
                code = getattr(exc, "value", None)
                if code == NOT_SUPPORTED and not any_answer and link == 0:
                    raise CounterUnsupported(f"NVLink not supported ({exc})") from None
                continue  # INVALID_ARGUMENT past the last link, or a link that is not there
            any_answer = True
            if state == 1:  # NVML_FEATURE_ENABLED: link is up
                links.append(link)
        return tuple(links)

    def read_fields(self, index: int, requests: Sequence[FieldRequest]) -> list[FieldReading]:
        nv = self._nv
        if not requests:
            return []
        try:
            values = nv.nvmlDeviceGetFieldValues(self._handle(index), [(r.field_id, r.scope_id) for r in requests])
        except nv.NVMLError as exc:
            return [FieldReading(r.field_id, r.scope_id, None, False, f"nvmlDeviceGetFieldValues: {exc}") for r in requests]
        out = []
        for req, val in zip(requests, values):
            ret = int(val.nvmlReturn)
            if ret != 0:
                out.append(FieldReading(req.field_id, req.scope_id, None, False, return_name(ret), None))
                continue
            vtype = int(val.valueType)
            raw = _value_of(val.value, vtype)
            if raw is None:
                out.append(FieldReading(req.field_id, req.scope_id, None, False, f"unexpected value type {vtype}", None))
            else:
                out.append(FieldReading(req.field_id, req.scope_id, raw, True, "", _VALUE_TYPE_MODULUS.get(vtype)))
        return out

    def pcie_throughput_kb_per_s(self, index: int, tx: bool) -> int:
        nv = self._nv
        counter = nv.NVML_PCIE_UTIL_TX_BYTES if tx else nv.NVML_PCIE_UTIL_RX_BYTES
        try:
            return int(nv.nvmlDeviceGetPcieThroughput(self._handle(index), counter))
        except nv.NVMLError as exc:
            raise CounterUnsupported(f"nvmlDeviceGetPcieThroughput: {exc}") from None

    def link_health(self, index: int) -> dict[str, Any]:
        """NVLink state and error counters per link, PCIe state and error counters, now
        (``discovery.nvml.read_link_health``, the one reader, also used by recordings)."""
        from ..discovery.nvml import read_link_health

        return read_link_health(self._nv, self._handle(index), self._nv.NVMLError)

    def close(self) -> None:
        try:
            self._nv.nvmlShutdown()
        except Exception:
            pass


def _value_of(value: Any, vtype: int) -> int | None:
    if vtype == 1:
        return int(value.uiVal)
    if vtype == 2:
        return int(value.ulVal)
    if vtype == 3:
        return int(value.ullVal)
    if vtype == 4:
        return int(value.sllVal)
    if vtype == 5:
        return int(value.siVal)
    if vtype == 6:
        return int(value.usVal)
    if vtype == 0:
        return int(value.dVal)
    return None


def open_nvml() -> PynvmlSource:
    """Initialise NVML; ``BackendUnavailable`` with the reason when it cannot be used here."""
    try:
        import pynvml
    except ImportError as exc:
        raise BackendUnavailable(f"counters need an NVIDIA driver (NVML not found: {exc})",
                                 hint="pip install nvidia-ml-py") from None
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        raise BackendUnavailable(f"counters need an NVIDIA driver (NVML not found: {exc})",
                                 hint="run on a machine with the NVIDIA driver loaded") from None
    return PynvmlSource(pynvml)


def check_gpu_indices(source: CounterSource, gpus: Sequence[int] | None) -> tuple[int, ...]:
    """The NVML indices to watch: all when ``gpus`` is None; a UserError naming a missing one."""
    count = source.device_count()
    if gpus is None:
        if count == 0:
            raise UserError("NVML sees no GPU on this machine")
        return tuple(range(count))
    if not gpus:
        raise UserError("empty GPU list", hint="e.g. --gpus 0,1 (NVML indices), or leave --gpus out for all")
    for g in gpus:
        if g < 0 or g >= count:
            valid = f"0..{count - 1}" if count else "none"
            raise UserError(f"GPU {g} does not exist", hint=f"NVML sees {count} GPU(s): valid indices {valid}")
    return tuple(dict.fromkeys(gpus))
