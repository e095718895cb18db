"""Is this MPI GPU-aware? Decide before any device buffer reaches it.

A device pointer handed to an MPI that is not GPU-aware is read as host memory: the rank dies
with a segmentation fault inside the library (seen with Debian Open MPI 4.1.6, which is built
``--without-cuda``). So the answer is established first, from what each library documents:

* **Open MPI**: ``MPIX_Query_cuda_support()`` / ``MPIX_Query_rocm_support()`` (mpi-ext; "returns 1
  if both the MPI library was built with CUDA and the runtime supports CUDA buffers"; must be
  called after MPI_Init). mpi4py does not wrap them, so they are looked up in the libmpi the
  process has loaded (ctypes). Fallback: ``ompi_info --parsable --all`` and its
  ``mpi_built_with_cuda_support`` parameter.
* **MPI 4.1** memory allocation kinds: ``MPI_INFO_ENV`` key ``mpi_memory_alloc_kinds`` listing
  ``cuda:device`` / ``rocm:device`` (Open MPI 6, recent MPICH).
* **MVAPICH2**: GPU support is switched on at run time with ``MV2_USE_CUDA=1``.
* **Cray MPICH**: ``MPICH_GPU_SUPPORT_ENABLED=1``.
* Anything else: unknown, treated as *not* GPU-aware unless the user says ``--gpu-aware yes``.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import platforms
from ..errors import UserError


@dataclass(frozen=True)
class GpuAwareness:
    """The verdict and how it was reached.

    Attributes:
        answers: per runtime (``MpiGpuSupport.key`` of a platform row: ``cuda``, ``rocm``) True / False,
            or None (or absent) when the library gave no answer.
        how: the evidence (``MPIX_Query_cuda_support() = 0``, ``MV2_USE_CUDA=1`` ...).
        forced: True when the user overrode detection (``--gpu-aware yes|no``).
    """

    answers: Mapping[str, bool | None]
    how: str
    forced: bool = False

    def of(self, runtime: str) -> bool | None:
        """The answer for one runtime's device buffers (``cuda``, ``rocm``)."""
        return self.answers.get(runtime)

    @property
    def device_buffers_ok(self) -> bool:
        return any(self.answers.values())

    @property
    def verdict(self) -> str:
        """``CUDA-aware``, ``ROCm-aware``, ``not CUDA-aware`` ... or ``GPU-awareness unknown``."""
        supports = platforms.mpi_supports()
        on = [s.label for s in supports if self.of(s.key)]
        if on:
            return " and ".join(f"{label}-aware" for label in on)
        off = [s.label for s in supports if self.of(s.key) is False]
        if len(off) > 1:
            return f"neither {', '.join(f'{label}-' for label in off[:-1])} nor {off[-1]}-aware"
        return f"not {off[0]}-aware" if off else "GPU-awareness unknown"

    def describe(self) -> str:
        """The verdict with its evidence, e.g. ``CUDA-aware (MPIX_Query_cuda_support() = 1)``."""
        return f"{self.verdict} ({self.how})"

    def as_dict(self) -> dict[str, Any]:
        return {**{s.key: self.of(s.key) for s in platforms.mpi_supports()}, "how": self.how, "forced": self.forced,
                "verdict": self.verdict}


def forced(value: bool) -> GpuAwareness:
    return GpuAwareness({s.key: value for s in platforms.mpi_supports()}, "forced by --gpu-aware", forced=True)


def _loaded_libmpi() -> str | None:
    """Path of the libmpi this process has mapped (mpi4py loads it with RTLD_LOCAL)."""
    try:
        with open("/proc/self/maps") as handle:
            for line in handle:
                path = line.split()[-1] if line.strip() else ""
                if path.rsplit("/", 1)[-1].startswith("libmpi.so"):
                    return path
    except OSError:
        return None
    return None


def query_mpix(symbol: str, library_path: str | None = None) -> int | None:
    """Call an Open MPI ``MPIX_Query_*_support`` function; None when the symbol does not exist."""
    path = library_path or _loaded_libmpi()
    if not path:
        return None
    try:
        lib = ctypes.CDLL(path)
        func = getattr(lib, symbol)
    except (OSError, AttributeError):
        return None
    func.restype = ctypes.c_int
    func.argtypes = []
    return int(func())


def parse_ompi_info(text: str, names: Sequence[str] | None = None) -> bool | None:
    """The first of ``names`` (default: every platform row's ``ompi_info_params``, such as
    ``mpi_built_with_cuda_support``) that ``ompi_info --parsable --all`` lists, as a boolean."""
    wanted = set(names) if names is not None else {n for s in platforms.mpi_supports() for n in s.ompi_info_params}
    for line in text.splitlines():
        parts = line.strip().split(":")
        if len(parts) >= 6 and parts[4] in wanted and parts[5] == "value":
            return parts[6].strip().lower() in ("true", "1", "yes") if len(parts) > 6 else None
    return None


def run_ompi_info(timeout_s: float = 20.0) -> str | None:
    exe = shutil.which("ompi_info")
    if not exe:
        return None
    try:
        done = subprocess.run([exe, "--parsable", "--all"], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _flag(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").strip().lower() in ("1", "yes", "true", "on", "enabled")


def detect(
    library_version: str,
    environ: Mapping[str, str],
    *,
    mpix: Callable[[str], int | None] = query_mpix,
    memory_kinds: str | None = None,
    ompi_info: Callable[[], str | None] = run_ompi_info,
) -> GpuAwareness:
    """Decide from the library's own answers (call after MPI_Init, on every rank).

    ``library_version`` is ``MPI_Get_library_version()``; ``memory_kinds`` the value of the
    ``mpi_memory_alloc_kinds`` info key (or None); ``mpix`` and ``ompi_info`` are injectable.
    """
    lib = library_version.lower()
    supports = platforms.mpi_supports()
    if memory_kinds:
        kinds = [k.strip().lower() for k in memory_kinds.split(",")]
        found = {s.key: any(k.startswith(s.memory_kind) for k in kinds) for s in supports}
        if any(found.values()):
            return GpuAwareness(found, f"mpi_memory_alloc_kinds={memory_kinds}")
    if "open mpi" in lib:
        queried = [(s, mpix(s.mpix_query)) for s in supports if s.mpix_query]
        if any(value is not None for _, value in queried):
            how = ", ".join(f"{s.mpix_query}() = {value}" for s, value in queried if value is not None)
            return GpuAwareness({s.key: bool(value) if value is not None else None for s, value in queried}, how)
        text = ompi_info()
        listed = [s for s in supports if s.ompi_info_params]
        built = [(s, parse_ompi_info(text, s.ompi_info_params) if text else None) for s in listed]
        if any(value is not None for _, value in built):
            return GpuAwareness({s.key: value for s, value in built if value is not None},
                                ", ".join(f"ompi_info: {s.ompi_info_params[0]}={str(value).lower()}"
                                          for s, value in built if value is not None))
        without = " / ".join(s.mpix_query for s in listed)
        return GpuAwareness({}, f"Open MPI without {without} or ompi_info: unknown")
    if "mvapich" in lib:
        switched = [s for s in supports if s.mvapich_switch]
        return GpuAwareness({s.key: _flag(environ, s.mvapich_switch) for s in switched},
                            "MVAPICH2: " + ", ".join(f"{s.mvapich_switch}={environ.get(s.mvapich_switch, '(unset)')}"
                                                     for s in switched))
    if "cray" in lib:
        on = _flag(environ, "MPICH_GPU_SUPPORT_ENABLED")
        return GpuAwareness({s.key: on for s in supports},
                            f"Cray MPICH: MPICH_GPU_SUPPORT_ENABLED={environ.get('MPICH_GPU_SUPPORT_ENABLED', '(unset)')}")
    first = library_version.strip().splitlines()[0] if library_version.strip() else "unknown MPI"
    return GpuAwareness({}, f"{first}: no documented query; assuming not GPU-aware")


def memory_alloc_kinds() -> str | None:
    """``MPI_INFO_ENV['mpi_memory_alloc_kinds']`` (MPI 4.1) or None (after MPI_Init)."""
    try:
        from mpi4py import MPI

        return MPI.INFO_ENV.Get("mpi_memory_alloc_kinds")
    except Exception:
        return None


def is_device_buffer(obj: Any) -> bool:
    """True for arrays living in GPU memory: ``__cuda_array_interface__``, or DLPack device not CPU."""
    if hasattr(obj, "__cuda_array_interface__"):
        return True
    dev = getattr(obj, "__dlpack_device__", None)
    if callable(dev):
        try:
            kind, _ = dev()
        except Exception:
            return False
        return int(kind) not in (1, 3)  # kDLCPU = 1, kDLCUDAHost = 3 (pinned host memory is CPU-readable)
    return False


def check_device_buffers(buffers: str, awareness: GpuAwareness, stage_through_host: bool) -> None:
    """Refuse ``D`` buffers on an MPI that is not known to be GPU-aware unless staging was asked for.

    Raised identically on every rank (every rank computed the same verdict), before any device
    buffer exists.
    """
    if "D" not in buffers or stage_through_host or awareness.device_buffers_ok:
        return
    from .launch import CollectiveError

    raise CollectiveError(
        f"--buffers {buffers} needs a GPU-aware MPI, and this one is {awareness.describe()}",
        hint="use --stage-through-host to copy through host memory explicitly, --buffers HH, "
        "or a CUDA-aware MPI (Open MPI + UCX built with CUDA, MVAPICH2 with MV2_USE_CUDA=1, "
        "Cray MPICH with MPICH_GPU_SUPPORT_ENABLED=1); --gpu-aware yes overrides detection",
    )


def parse_gpu_aware_choice(text: str) -> bool | None:
    value = text.strip().lower()
    if value == "auto":
        return None
    if value in ("yes", "true", "1"):
        return True
    if value in ("no", "false", "0"):
        return False
    raise UserError(f"--gpu-aware {text!r} is not valid", hint="valid choices: auto, yes, no")
