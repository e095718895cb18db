"""Discovery backends by name, and their availability here (for ``linkscope env``)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from .base import Availability

NAMES = ("nvml", "sysfs", "rocm")


def _probe_nvml() -> Availability:
    from . import nvml

    return nvml.probe()


def _probe_sysfs() -> Availability:
    from . import sysfs

    return sysfs.probe(Path("/"))


def _probe_rocm() -> Availability:
    from . import rocm

    return rocm.probe()


PROBES: dict[str, Callable[[], Availability]] = {"nvml": _probe_nvml, "sysfs": _probe_sysfs, "rocm": _probe_rocm}


def probes() -> list[Availability]:
    """One Availability per discovery backend (nvml, sysfs, rocm); never raises."""
    out = []
    for name in NAMES:
        try:
            out.append(PROBES[name]())
        except Exception as exc:  # noqa: BLE001  (a probe must never take `linkscope env` down)
            out.append(Availability(name, False, f"probe failed: {type(exc).__name__}: {exc}"))
    return out
