"""What an amdsmi value means: a reading, or a placeholder for "not supported on this GPU".

amdsmi never raises for a metric the GPU lacks: it fills the field with the all-ones value of its C
type and returns success. Read that as a number and an MI250X's xGMI links look idle (or, diffed,
carry nothing). The rule, one home for every amdsmi reader (discovery, ``watch`` counters, error
counters):

* an integer equal to 2**16-1, 2**32-1 or 2**64-1 for a field of that width is a placeholder;
* the Python layer's own placeholder, the string ``"N/A"`` (``_validate_if_max_uint`` turns
  all-ones into it for ``amdsmi_get_gpu_metrics_info``, but not for ``amdsmi_get_link_metrics``),
  is one too;
* a PCI address that is all zero or all ones is an unresolved peer.

Upstream evidence (amdsmi 7.0.2 wheel from PyPI, and the C library it wraps):

* ``amdsmi_interface.py:38-40`` (``MaxUIntegerTypes``: UINT16_T 0xFFFF, UINT32_T 0xFFFFFFFF,
  UINT64_T 0xFFFFFFFFFFFFFFFF) and ``:751-772`` (``_validate_if_max_uint`` -> "N/A");
* ``amdsmi_interface.py:3260-3288``: ``amdsmi_get_link_metrics`` returns the raw struct fields
  of all ``AMDSMI_MAX_NUM_XGMI_LINKS`` (8) slots, placeholders included;
* ROCm/amdsmi rocm-6.2 ``rocm_smi/src/rocm_smi_gpu_metrics.cc:1572-1646``
  (``init_max_public_gpu_matrics``: every field starts at its type's max, ``xgmi_*_data_acc``
  included) and ``:2600`` (``GpuMetricsBase_v13_t``, MI200, never fills the xGMI accumulators);
* ROCm/amdsmi rocm-6.2 ``src/amd_smi/amd_smi.cc:1340-1359``: link metrics = gpu metrics
  accumulators, every slot typed XGMI, ``bdf`` never set (all zero);
* amdsmi 7.x ``amd_smi.cc`` ``amdsmi_get_link_metrics``: ``bdf`` memset to 0xFF unless the
  xgmi port map resolves it, ``bit_rate`` / ``max_bandwidth`` left at UINT32_MAX when the link
  speed is unknown (ROCm/rocm-systems#2053: "provide MaxUint32 for unsupported XGMI bit_rate &
  max_bandwidth").
"""
from __future__ import annotations

from typing import Any

UINT16_MAX = 2**16 - 1
UINT32_MAX = 2**32 - 1
UINT64_MAX = 2**64 - 1
NOT_AVAILABLE = "N/A"
_MAX_OF_BITS = {16: UINT16_MAX, 32: UINT32_MAX, 64: UINT64_MAX}
#: How an "unsupported" reason that comes from placeholders begins (watch keeps such GPUs out of
#: ``--expect``: the library said "no counter", not "no traffic").
PLACEHOLDER_REASON = "amdsmi placeholder"


def is_placeholder(value: Any, bits: int | None = None) -> bool:
    """True for amdsmi's "not supported" fillers: "N/A", None, or an all-ones integer (of width
    ``bits`` when given, else of any of the 16/32/64-bit widths amdsmi uses)."""
    if value is None or (isinstance(value, str) and value.strip().upper() == NOT_AVAILABLE):
        return True
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    if bits is not None:
        if bits not in _MAX_OF_BITS:
            raise ValueError(f"amdsmi fields are 16, 32 or 64 bits wide, not {bits}")
        return value == _MAX_OF_BITS[bits]
    return value in _MAX_OF_BITS.values()


def reading(value: Any, bits: int | None = None) -> int | None:
    """The integer amdsmi reported, or None where it is a placeholder or not an integer at all."""
    if is_placeholder(value, bits) or isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def unresolved_bdf(bdf: Any) -> bool:
    """True when a PCI address from amdsmi names no device: empty, all zero (6.x link metrics
    never set it) or all ones (7.x memsets it to 0xFF when the peer is unknown)."""
    if not isinstance(bdf, str) or not bdf.strip():
        return True
    digits = [c for c in bdf.lower() if c not in ":."]
    if not digits or not all(c in "0123456789abcdef" for c in digits):
        return True
    if all(c == "0" for c in digits):
        return True
    parts = bdf.lower().replace(".", ":").split(":")
    if len(parts) != 4:
        return True
    domain, bus, device, function = parts
    # all ones through amdsmi's _format_bdf: domain 48 bits of f, bus ff, device 1f, function 7
    return set(domain) == {"f"} and bus == "ff" and device == "1f" and function == "7"
