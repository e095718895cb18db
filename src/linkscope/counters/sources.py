"""The link-counter source ``watch`` samples: the first platform of the platform table whose
counters open here (NVML on NVIDIA, amdsmi on AMD), or one BackendUnavailable naming every reason."""
from __future__ import annotations

from typing import Any

from .. import platforms
from ..errors import BackendUnavailable


def open_counter_source() -> Any:
    """A ``CounterSource`` of this machine's GPUs (``counters.nvml`` / ``counters.amdsmi``)."""
    reasons = []
    for platform in platforms.hardware_platforms():
        if not platform.counters:
            continue
        try:
            return platforms.load(platform.counters)()
        except BackendUnavailable as exc:
            reasons.append(f"{platform.label}: {exc}")
    raise BackendUnavailable(f"no link counters here: {'; '.join(reasons)}",
                             hint="watch needs an NVIDIA driver (NVML) or the amdsmi package on an AMD node")
