"""Memory the CUDA engine moves: device buffers, pinned host buffers (NUMA-local where the machine
has several nodes), pageable host buffers, and peer-access state between GPUs.

Every buffer is allocated with plain ``cudaMalloc`` / ``cudaHostAlloc`` / ``cudaHostRegister``
(never CuPy's pools, never managed memory) and freed explicitly by ``free()``, so ``run()`` can
allocate once per (plan, size) and give the memory back when it returns.
"""
from __future__ import annotations

import ctypes
import mmap
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import MeasurementError

CUDA_HOST_ALLOC_PORTABLE = 1
CUDA_HOST_ALLOC_MAPPED = 2
CUDA_HOST_REGISTER_PORTABLE = 1
CUDA_HOST_REGISTER_MAPPED = 2
CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704
CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705
MPOL_PREFERRED = 1
SYS_MBIND_X86_64 = 237


def _runtime() -> Any:
    import cupy.cuda.runtime as runtime

    return runtime


def _device(ordinal: int) -> Any:
    import cupy

    return cupy.cuda.Device(ordinal)


@dataclass
class DeviceBuffer:
    """``size_bytes`` of device memory on CUDA device ``ordinal`` (at least 1 byte is allocated)."""

    ordinal: int
    size_bytes: int
    ptr: int = 0

    @classmethod
    def allocate(cls, ordinal: int, size_bytes: int) -> "DeviceBuffer":
        runtime = _runtime()
        with _device(ordinal):
            try:
                ptr = runtime.malloc(max(size_bytes, 256))
            except Exception as exc:
                raise MeasurementError(f"cudaMalloc of {size_bytes} bytes on CUDA device {ordinal} failed: {exc}") from exc
        return cls(ordinal, size_bytes, ptr)

    @property
    def kind(self) -> str:
        return "device"

    def free(self) -> None:
        if self.ptr:
            with _device(self.ordinal):
                _runtime().free(self.ptr)
            self.ptr = 0


@dataclass
class PinnedHostBuffer:
    """Page-locked host memory, portable (usable from every GPU) and mapped (a kernel can read and
    write it through the same address, as UVA guarantees for mapped pinned memory).

    When ``numa_node`` is given and the machine has several NUMA nodes, the pages are placed on that
    node (anonymous mmap + ``mbind(MPOL_PREFERRED)`` + first touch + ``cudaHostRegister``); else
    ``cudaHostAlloc`` places them where the OS likes. ``numa_placed`` says which happened.
    """

    size_bytes: int
    ptr: int = 0
    numa_node: int | None = None
    numa_placed: bool = False
    _mmap: Any = field(default=None, repr=False)

    @classmethod
    def allocate(cls, size_bytes: int, numa_node: int | None = None) -> "PinnedHostBuffer":
        runtime = _runtime()
        n = max(size_bytes, 4096)
        if numa_node is not None and numa_node >= 0 and numa_node_count() > 1:
            placed = _mmap_on_node(n, numa_node)
            if placed is not None:
                mm, ptr = placed
                try:
                    runtime.hostRegister(ptr, n, CUDA_HOST_REGISTER_PORTABLE | CUDA_HOST_REGISTER_MAPPED)
                    return cls(size_bytes, ptr, numa_node, True, mm)
                except Exception:
                    mm.close()
        try:
            ptr = runtime.hostAlloc(n, CUDA_HOST_ALLOC_PORTABLE | CUDA_HOST_ALLOC_MAPPED)
        except Exception as exc:
            raise MeasurementError(f"cudaHostAlloc of {size_bytes} pinned bytes failed: {exc}") from exc
        return cls(size_bytes, ptr, numa_node, False, None)

    @property
    def kind(self) -> str:
        return "pinned"

    def view_u32(self, count: int) -> np.ndarray:
        """A numpy view of the first ``count`` 32-bit words (host side of the mapping)."""
        return np.ctypeslib.as_array((ctypes.c_uint32 * count).from_address(self.ptr))

    def free(self) -> None:
        if not self.ptr:
            return
        runtime = _runtime()
        if self._mmap is not None:
            runtime.hostUnregister(self.ptr)
            self._mmap.close()
            self._mmap = None
        else:
            runtime.freeHost(self.ptr)
        self.ptr = 0


@dataclass
class PageableHostBuffer:
    """Ordinary (pageable) host memory held by a numpy array."""

    size_bytes: int
    array: np.ndarray | None = None

    @classmethod
    def allocate(cls, size_bytes: int) -> "PageableHostBuffer":
        arr = np.empty(max(size_bytes, 1), dtype=np.uint8)
        arr[:: 4096] = 0  # touch every page now, not inside a timed copy
        return cls(size_bytes, arr)

    @property
    def kind(self) -> str:
        return "pageable"

    @property
    def ptr(self) -> int:
        assert self.array is not None
        return int(self.array.ctypes.data)

    def free(self) -> None:
        self.array = None


Buffer = DeviceBuffer | PinnedHostBuffer | PageableHostBuffer


def numa_node_count() -> int:
    try:
        return sum(1 for name in os.listdir("/sys/devices/system/node") if name.startswith("node") and name[4:].isdigit())
    except OSError:
        return 1


def numa_node_of_pci(pci_bus_id: str | None) -> int | None:
    """NUMA node of a PCI device from sysfs, or None (unknown, or -1 = no affinity)."""
    if not pci_bus_id:
        return None
    bus = pci_bus_id.lower()
    if len(bus.split(":")[0]) == 8:  # CUDA's 00000000:07:00.0 -> sysfs 0000:07:00.0
        bus = bus[4:]
    try:
        with open(f"/sys/bus/pci/devices/{bus}/numa_node") as fh:
            node = int(fh.read().strip())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def _mmap_on_node(size_bytes: int, node: int) -> tuple[mmap.mmap, int] | None:
    """Anonymous mapping whose pages prefer NUMA node ``node``; None where mbind is unavailable."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        mm = mmap.mmap(-1, size_bytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        ptr = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        mask = ctypes.c_ulong(1 << node)
        rc = libc.syscall(SYS_MBIND_X86_64, ctypes.c_void_p(ptr), ctypes.c_ulong(size_bytes), MPOL_PREFERRED,
                          ctypes.byref(mask), ctypes.c_ulong(64), 0)
        if rc != 0:
            mm.close()
            return None
        ctypes.memset(ptr, 0, size_bytes)  # first touch places the pages
        return mm, ptr
    except (OSError, ValueError, TypeError, AttributeError):
        return None


class PeerAccess:
    """Peer-access state between CUDA devices: queried once, enabled on demand, disabled and
    restored around ``ce-nopeer`` runs. ``enabled`` holds (accessor, owner) ordinal pairs."""

    def __init__(self) -> None:
        self._can: dict[tuple[int, int], bool] = {}
        self.enabled: set[tuple[int, int]] = set()

    def can_access(self, accessor: int, owner: int) -> bool:
        if accessor == owner:
            return True
        key = (accessor, owner)
        if key not in self._can:
            self._can[key] = bool(_runtime().deviceCanAccessPeer(accessor, owner))
        return self._can[key]

    def enable(self, accessor: int, owner: int) -> None:
        if accessor == owner or (accessor, owner) in self.enabled:
            return
        if not self.can_access(accessor, owner):
            raise MeasurementError(f"no peer access from CUDA device {accessor} to {owner}")
        runtime = _runtime()
        with _device(accessor):
            try:
                runtime.deviceEnablePeerAccess(owner)
            except runtime.CUDARuntimeError as exc:
                if getattr(exc, "status", None) != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
                    raise MeasurementError(f"cudaDeviceEnablePeerAccess({accessor} -> {owner}) failed: {exc}") from exc
        self.enabled.add((accessor, owner))

    def disable(self, accessor: int, owner: int) -> bool:
        """Disable access; True when it had been enabled (so the caller restores it)."""
        if accessor == owner:
            return False
        runtime = _runtime()
        with _device(accessor):
            try:
                runtime.deviceDisablePeerAccess(owner)
                was = True
            except runtime.CUDARuntimeError as exc:
                if getattr(exc, "status", None) != CUDA_ERROR_PEER_ACCESS_NOT_ENABLED:
                    raise MeasurementError(f"cudaDeviceDisablePeerAccess({accessor} -> {owner}) failed: {exc}") from exc
                was = False
        self.enabled.discard((accessor, owner))
        return was
