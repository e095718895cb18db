"""Message buffers for the MPI runners: host (NumPy), device (CuPy), and a fake device for tests.

A ``BufferSpace`` allocates byte buffers of one kind and knows how to fill them with the check
pattern, verify them, and copy to/from host memory (for explicit staging). What MPI receives is
``space.view(buffer, nbytes)``: a NumPy array (buffer protocol) for host memory, an object with
``__cuda_array_interface__`` for device memory (mpi4py reads it; no CuPy-specific MPI code).

``FakeDeviceSpace`` exposes ``__cuda_array_interface__`` over *host* memory, as mpi4py's own test
suite does (``FakeGPUArrayBasic``): the device-buffer logic (GPU-awareness refusal, staging
copies, data checks) runs on machines without GPUs.

Check pattern: byte i of a message of a given seed is ``(i mod 4099) * 7 + seed  (mod 251)``; the
period 4099 is prime so a chunk landing at a wrong 4 KiB-aligned offset is detected.
"""
from __future__ import annotations

import os
from typing import Any, Protocol

import numpy as np

_PERIOD = 4099
POISON = 0xEE


def pattern_block(seed: int) -> np.ndarray:
    return ((np.arange(_PERIOD, dtype=np.int64) * 7 + seed) % 251).astype(np.uint8)


def host_pattern(nbytes: int, seed: int) -> np.ndarray:
    return np.resize(pattern_block(seed), nbytes)


def host_available_bytes() -> int:
    """MemAvailable from /proc/meminfo (falls back to free pages)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


class BufferSpace(Protocol):
    kind: str  # "H" or "D"
    name: str

    def alloc(self, nbytes: int) -> Any: ...
    def view(self, buf: Any, nbytes: int) -> Any: ...
    def fill(self, buf: Any, nbytes: int, seed: int) -> None: ...
    def poison(self, buf: Any, nbytes: int) -> None: ...
    def wrong_bytes(self, buf: Any, nbytes: int, seed: int) -> int: ...
    def to_host(self, buf: Any, host: np.ndarray, nbytes: int) -> None: ...
    def from_host(self, host: np.ndarray, buf: Any, nbytes: int) -> None: ...
    def free_bytes(self) -> int: ...
    def sync(self) -> None: ...


class HostSpace:
    """Pageable host memory (NumPy uint8)."""

    kind = "H"
    name = "host"

    def alloc(self, nbytes: int) -> np.ndarray:
        return np.empty(max(nbytes, 1), dtype=np.uint8)

    def view(self, buf: np.ndarray, nbytes: int) -> np.ndarray:
        return buf[:nbytes]

    def fill(self, buf: np.ndarray, nbytes: int, seed: int) -> None:
        buf[:nbytes] = host_pattern(nbytes, seed)

    def poison(self, buf: np.ndarray, nbytes: int) -> None:
        buf[:nbytes] = POISON

    def wrong_bytes(self, buf: np.ndarray, nbytes: int, seed: int) -> int:
        return int(np.count_nonzero(buf[:nbytes] != host_pattern(nbytes, seed)))

    def to_host(self, buf: np.ndarray, host: np.ndarray, nbytes: int) -> None:
        host[:nbytes] = buf[:nbytes]

    def from_host(self, host: np.ndarray, buf: np.ndarray, nbytes: int) -> None:
        buf[:nbytes] = host[:nbytes]

    def free_bytes(self) -> int:
        return host_available_bytes()

    def sync(self) -> None:
        return None


class FakeDeviceArray:
    """Host bytes that claim to be a CUDA array (``__cuda_array_interface__`` v3) — tests only."""

    def __init__(self, host: np.ndarray) -> None:
        self.host = host

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": (int(self.host.size),),
            "typestr": "|u1",
            "data": (int(self.host.ctypes.data), False),
            "version": 3,
            "strides": None,
            "stream": None,
        }

    def __len__(self) -> int:
        return int(self.host.size)


class FakeDeviceSpace(HostSpace):
    """A 'device' that is host memory behind ``__cuda_array_interface__`` (mpi4py test idea)."""

    kind = "D"
    name = "fake-device"

    def __init__(self, free_bytes: int | None = None) -> None:
        self._free = free_bytes

    def alloc(self, nbytes: int) -> FakeDeviceArray:  # type: ignore[override]
        return FakeDeviceArray(np.empty(max(nbytes, 1), dtype=np.uint8))

    def view(self, buf: FakeDeviceArray, nbytes: int) -> FakeDeviceArray:  # type: ignore[override]
        return FakeDeviceArray(buf.host[:nbytes])

    def fill(self, buf: FakeDeviceArray, nbytes: int, seed: int) -> None:  # type: ignore[override]
        super().fill(buf.host, nbytes, seed)

    def poison(self, buf: FakeDeviceArray, nbytes: int) -> None:  # type: ignore[override]
        super().poison(buf.host, nbytes)

    def wrong_bytes(self, buf: FakeDeviceArray, nbytes: int, seed: int) -> int:  # type: ignore[override]
        return super().wrong_bytes(buf.host, nbytes, seed)

    def to_host(self, buf: FakeDeviceArray, host: np.ndarray, nbytes: int) -> None:  # type: ignore[override]
        host[:nbytes] = buf.host[:nbytes]

    def from_host(self, host: np.ndarray, buf: FakeDeviceArray, nbytes: int) -> None:  # type: ignore[override]
        buf.host[:nbytes] = host[:nbytes]

    def free_bytes(self) -> int:
        return self._free if self._free is not None else host_available_bytes()


class CupyDeviceSpace:
    """Device memory of the current CUDA device through CuPy (imported lazily)."""

    kind = "D"
    name = "cuda"

    def __init__(self, cuda_ordinal: int) -> None:
        from ..engines.gpu.runtime import cupy_module

        cupy = cupy_module()
        self._cp = cupy
        self.cuda_ordinal = cuda_ordinal
        cupy.cuda.Device(cuda_ordinal).use()

    def alloc(self, nbytes: int) -> Any:
        return self._cp.empty(max(nbytes, 1), dtype=self._cp.uint8)

    def view(self, buf: Any, nbytes: int) -> Any:
        return buf[:nbytes]

    def _expected(self, nbytes: int, seed: int) -> Any:
        block = self._cp.asarray(pattern_block(seed))
        reps = -(-nbytes // _PERIOD)
        return self._cp.tile(block, reps)[:nbytes]

    def fill(self, buf: Any, nbytes: int, seed: int) -> None:
        buf[:nbytes] = self._expected(nbytes, seed)
        self.sync()

    def poison(self, buf: Any, nbytes: int) -> None:
        buf[:nbytes].fill(POISON)
        self.sync()

    def wrong_bytes(self, buf: Any, nbytes: int, seed: int) -> int:
        return int(self._cp.count_nonzero(buf[:nbytes] != self._expected(nbytes, seed)))

    def to_host(self, buf: Any, host: np.ndarray, nbytes: int) -> None:
        # cudaMemcpy D2H (synchronous for the caller: staging must finish before MPI reads it)
        self._cp.cuda.runtime.memcpy(host.ctypes.data, buf.data.ptr, nbytes, self._cp.cuda.runtime.memcpyDeviceToHost)

    def from_host(self, host: np.ndarray, buf: Any, nbytes: int) -> None:
        self._cp.cuda.runtime.memcpy(buf.data.ptr, host.ctypes.data, nbytes, self._cp.cuda.runtime.memcpyHostToDevice)

    def free_bytes(self) -> int:
        free, _total = self._cp.cuda.runtime.memGetInfo()
        return int(free)

    def sync(self) -> None:
        self._cp.cuda.Device().synchronize()


def pinned_host(nbytes: int, device_space: Any) -> np.ndarray:
    """Page-locked host memory for staging when CuPy is the device space, else plain NumPy."""
    if isinstance(device_space, CupyDeviceSpace):
        from ..engines.gpu.runtime import cupy_module

        return cupy_module("cupyx").empty_pinned((max(nbytes, 1),), dtype=np.uint8)
    return np.empty(max(nbytes, 1), dtype=np.uint8)
