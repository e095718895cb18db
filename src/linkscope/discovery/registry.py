"""Discovery backends by name, and their availability here (for ``linkscope env``)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .base import Availability

NAMES = ("nvml", "sysfs", "amdsmi", "rocm")


def _probe_nvml() -> Availability:
    from . import nvml

    return nvml.probe()


def _probe_sysfs() -> Availability:
    from . import sysfs

    return sysfs.probe(Path("/"))


def _probe_amdsmi() -> Availability:
    from . import amdsmi

    return amdsmi.probe()


def _probe_rocm() -> Availability:
    from . import rocm

    return rocm.probe()


PROBES: dict[str, Callable[[], Availability]] = {"nvml": _probe_nvml, "sysfs": _probe_sysfs, "amdsmi": _probe_amdsmi,
                                                 "rocm": _probe_rocm}

# Where each path has run. No AMD GPU was available: the AMD paths are tested against a real
# rocm-smi recording and a fake amdsmi that reproduces the upstream code, never on real hardware.
TESTED_ON: dict[str, str] = {
    "nvml": "real hardware (NVIDIA H100/H200)",
    "sysfs": "real hardware (GPU machine, CPU machine)",
    "amdsmi": "fake amdsmi returning what upstream 6.x/7.x returns on MI200/MI300 (no AMD GPU)",
    "rocm": "recorded rocm-smi output of a real node + outputs built as amd-smi builds them (no AMD GPU)",
    "amdsmi counters (watch)": "fake amdsmi returning what upstream returns on MI200/MI300 (no AMD GPU)",
}


def probes() -> list[Availability]:
    """One Availability per discovery backend (nvml, sysfs, amdsmi, rocm); never raises."""
    out = []
    for name in NAMES:
        try:
            out.append(PROBES[name]())
        except Exception as exc:
            out.append(Availability(name, False, f"probe failed: {type(exc).__name__}: {exc}"))
    return out
