"""Memory the GPU engine moves: device buffers, pinned host buffers (NUMA-local where the machine
has several nodes), pageable host buffers, and peer-access state between GPUs.

Every buffer is allocated through the device runtime (``runtime.py``: plain ``cudaMalloc`` /
``cudaHostAlloc`` / ``cudaHostRegister`` or their HIP twins)
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
from .mempolicy import mempolicy


@dataclass
class DeviceBuffer:
    """``size_bytes`` of device memory on CUDA device ``ordinal`` (at least 1 byte is allocated)."""

    ordinal: int
    size_bytes: int
    ptr: int = 0
    rt: Any = field(default=None, repr=False)
    uncached: bool = False

    @classmethod
    def allocate(cls, rt: Any, ordinal: int, size_bytes: int, *, uncached: bool = False) -> DeviceBuffer:
        """``uncached``: memory another GPU's stores become visible in while a kernel polls it
        (``runtime.malloc_uncached``: hipDeviceMallocUncached on ROCm)."""
        try:
            n = max(size_bytes, 256)
            ptr = rt.malloc_uncached(ordinal, n) if uncached else rt.malloc(ordinal, n)
        except Exception as exc:
            raise MeasurementError(f"device allocation of {size_bytes} bytes on device {ordinal} failed: {exc}") from exc
        return cls(ordinal, size_bytes, ptr, rt, uncached)

    @property
    def kind(self) -> str:
        return "device"

    def free(self) -> None:
        if self.ptr:
            self.rt.free(self.ordinal, self.ptr)
            self.ptr = 0


@dataclass
class PinnedHostBuffer:
    """Page-locked host memory, portable (usable from every GPU) and mapped (a kernel can read and
    write it through the same address, as UVA guarantees for mapped pinned memory).

    When ``numa_node`` is given and the machine has several NUMA nodes, the pages are placed on that
    node: anonymous mmap + ``mbind(MPOL_PREFERRED)`` + first touch + ``cudaHostRegister``; where the
    runtime refuses to register (CuPy's HIP build), the thread's policy is set to prefer the node
    and ``hipHostMalloc(hipHostMallocNumaUser)`` allocates under it (TransferBench's way,
    src/TransferBench.cpp:1377-1396). Else ``cudaHostAlloc`` places them where the OS likes.
    ``numa_placed`` says whether placement was asked and done; ``numa_landed`` is the node the first
    page is on (``get_mempolicy(MPOL_F_NODE|MPOL_F_ADDR)``), None where it cannot be read.
    """

    size_bytes: int
    ptr: int = 0
    numa_node: int | None = None
    numa_placed: bool = False
    _mmap: Any = field(default=None, repr=False)
    rt: Any = field(default=None, repr=False)
    numa_landed: int | None = None

    @classmethod
    def allocate(cls, rt: Any, size_bytes: int, numa_node: int | None = None) -> PinnedHostBuffer:
        n = max(size_bytes, 4096)
        if numa_node is not None and numa_node >= 0 and numa_node_count() > 1:
            placed = _mmap_on_node(n, numa_node)
            if placed is not None:
                mm, ptr = placed
                try:
                    rt.host_register(ptr, n)
                    return cls(size_bytes, ptr, numa_node, True, mm, rt, page_node(ptr))
                except Exception:
                    mm.close()
            if _prefer_node(numa_node):
                try:
                    ptr = rt.host_alloc(n, numa_user=True)
                except Exception:
                    ptr = 0
                finally:
                    _prefer_node(None)
                if ptr:
                    ctypes.memset(ptr, 0, n)
                    return cls(size_bytes, ptr, numa_node, True, None, rt, page_node(ptr))
        try:
            ptr = rt.host_alloc(n)
        except Exception as exc:
            raise MeasurementError(f"pinned host allocation of {size_bytes} bytes failed: {exc}") from exc
        return cls(size_bytes, ptr, numa_node, False, None, rt, page_node(ptr) if numa_node_count() > 1 else None)

    @property
    def kind(self) -> str:
        return "pinned"

    def view_u32(self, count: int) -> np.ndarray:
        """A numpy view of the first ``count`` 32-bit words (host side of the mapping)."""
        return np.ctypeslib.as_array((ctypes.c_uint32 * count).from_address(self.ptr))

    def free(self) -> None:
        if not self.ptr:
            return
        if self._mmap is not None:
            self.rt.host_unregister(self.ptr)
            self._mmap.close()
            self._mmap = None
        else:
            self.rt.free_host(self.ptr)
        self.ptr = 0


@dataclass
class PageableHostBuffer:
    """Ordinary (pageable) host memory held by a numpy array."""

    size_bytes: int
    array: np.ndarray | None = None

    @classmethod
    def allocate(cls, size_bytes: int) -> PageableHostBuffer:
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
    """Anonymous mapping whose pages prefer NUMA node ``node``; None where mbind is unavailable
    (``mempolicy``: libnuma, else this architecture's syscall numbers)."""
    policy = mempolicy()
    if not policy.available:
        return None
    try:
        mm = mmap.mmap(-1, size_bytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        ptr = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        if not policy.mbind_preferred(ptr, size_bytes, node):
            mm.close()
            return None
        ctypes.memset(ptr, 0, size_bytes)  # first touch places the pages
        return mm, ptr
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _prefer_node(node: int | None) -> bool:
    """Make this thread's allocations prefer NUMA ``node`` (None: back to the default policy)."""
    try:
        return mempolicy().prefer(node)
    except (OSError, ValueError, TypeError, AttributeError):
        return False


def page_node(ptr: int) -> int | None:
    """The NUMA node the page at ``ptr`` is on, or None where the kernel does not say."""
    try:
        return mempolicy().node_of(ptr)
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def placement_unavailable() -> str:
    """Why pinned buffers cannot be NUMA-placed in this process ("" when they can)."""
    return mempolicy().why_not


class PeerAccess:
    """Peer-access state between devices: queried once, enabled on demand, disabled and restored
    around ``ce-nopeer`` runs. ``enabled`` holds (accessor, owner) ordinal pairs."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt
        self._can: dict[tuple[int, int], bool] = {}
        self.enabled: set[tuple[int, int]] = set()

    def can_access(self, accessor: int, owner: int) -> bool:
        if accessor == owner:
            return True
        key = (accessor, owner)
        if key not in self._can:
            self._can[key] = bool(self.rt.can_access_peer(accessor, owner))
        return self._can[key]

    def enable(self, accessor: int, owner: int) -> None:
        if accessor == owner or (accessor, owner) in self.enabled:
            return
        if not self.can_access(accessor, owner):
            raise MeasurementError(f"no peer access from device {accessor} to {owner}")
        self.rt.enable_peer(accessor, owner)
        self.enabled.add((accessor, owner))

    def disable(self, accessor: int, owner: int) -> bool:
        """Disable access; True when it had been enabled (so the caller restores it)."""
        if accessor == owner:
            return False
        was = self.rt.disable_peer(accessor, owner)
        self.enabled.discard((accessor, owner))
        return was
