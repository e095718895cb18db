"""Sizes, rates and durations: parsing and formatting.

The only module that knows 10**9 and 2**30. Conventions (STYLE.md C1):

* sizes are integer bytes; binary suffixes (KiB, MiB, GiB, TiB; K, M, G, T mean the same);
* rates are decimal GB/s (1 GB = 10**9 B) per direction;
* durations are seconds internally; ``_us`` fields are microseconds.

>>> parse_size("64MiB")
67108864
>>> parse_size("4K")
4096
>>> format_size(1073741824)
'1 GiB'
>>> parse_sizes("8:64")
[8, 16, 32, 64]
>>> parse_sizes("4K,64M")
[4096, 67108864]
>>> gb_per_s(2_000_000_000, 1.0)
2.0
"""
from __future__ import annotations

import math
import re

from .errors import UserError

KiB = 1024
MiB = 1024**2
GiB = 1024**3
TiB = 1024**4
GB = 10**9

_SUFFIX = {
    "": 1,
    "b": 1,
    "k": KiB, "kb": KiB, "kib": KiB,
    "m": MiB, "mb": MiB, "mib": MiB,
    "g": GiB, "gb": GiB, "gib": GiB,
    "t": TiB, "tb": TiB, "tib": TiB,
}
MAX_SIZE_BYTES = 1024**5
"""One transfer or message of at most 1 PiB: larger is a typo (and would overflow the byte counters)."""

_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_size(text: str | int) -> int:
    """Bytes from ``"64MiB"``, ``"4K"``, ``"1G"`` or a plain integer. Rejects negatives and junk."""
    if isinstance(text, int):
        if text < 0:
            raise UserError(f"size must not be negative: {text}")
        if text > MAX_SIZE_BYTES:
            raise UserError(f"size {text} is above the 1 PiB limit")
        return text
    match = _SIZE_RE.match(str(text))
    if not match:
        raise UserError(f"not a size: {text!r}", hint="use bytes or a binary suffix, e.g. 4096, 64KiB, 1GiB")
    number, suffix = match.groups()
    factor = _SUFFIX.get(suffix.lower())
    if factor is None:
        raise UserError(f"unknown size suffix {suffix!r} in {text!r}", hint="use KiB, MiB, GiB (K/M/G mean the same)")
    value = float(number) * factor
    if value > MAX_SIZE_BYTES:
        raise UserError(f"size {text!r} is above the 1 PiB limit")
    if value != int(value):
        raise UserError(f"size is not a whole number of bytes: {text!r}")
    return int(value)


def parse_sizes(text: str) -> list[int]:
    """A size list: ``"8,4KiB,16MiB"`` or a powers-of-two range ``"8:1GiB"`` (both ends included)."""
    text = str(text).strip()
    if not text:
        raise UserError("empty size list")
    if ":" in text:
        lo_text, _, hi_text = text.partition(":")
        lo, hi = parse_size(lo_text), parse_size(hi_text)
        if lo <= 0 or hi < lo:
            raise UserError(f"bad size range {text!r}: need 0 < start <= end")
        sizes = []
        size = lo
        while size <= hi:
            sizes.append(size)
            size *= 2
        return sizes
    sizes = [parse_size(part) for part in text.split(",") if part.strip()]
    if any(s <= 0 for s in sizes):
        raise UserError(f"sizes must be positive: {text!r}")
    return sizes


def format_size(size_bytes: int | float) -> str:
    """Binary units, integer where exact: 1 GiB, 64 MiB, 1.5 KiB, 8 B."""
    size = float(size_bytes)
    for unit, factor in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(size) >= factor:
            value = size / factor
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.3g} {unit}"
    return f"{int(size)} B"


def gb_per_s(moved_bytes: int | float, elapsed_s: float) -> float:
    """Decimal GB/s from bytes and seconds."""
    if elapsed_s <= 0:
        raise ValueError(f"elapsed time must be positive, got {elapsed_s}")
    return float(moved_bytes) / elapsed_s / GB


def format_rate(value_gb_per_s: float | None, digits: int = 1) -> str:
    """``'394.2'`` or ``'N/A'`` for a missing value (missing is not zero)."""
    if value_gb_per_s is None or (isinstance(value_gb_per_s, float) and math.isnan(value_gb_per_s)):
        return "N/A"
    return f"{value_gb_per_s:.{digits}f}"


MAX_DURATION_S = 7 * 24 * 3600.0
_DURATION_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(us|µs|ms|s|m|min)?\s*$")
_DURATION_FACTOR = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0, "m": 60.0, "min": 60.0}


def parse_duration_s(text: str) -> float:
    """Seconds from ``"100ms"``, ``"2s"``, ``"0.5"`` (seconds), ``"250us"``."""
    match = _DURATION_RE.match(str(text))
    if not match:
        raise UserError(f"not a duration: {text!r}", hint="e.g. 100ms, 2s, 250us")
    value = float(match.group(1)) * _DURATION_FACTOR[match.group(2)]
    if value <= 0:
        raise UserError(f"duration must be positive: {text!r}")
    if value > MAX_DURATION_S:
        raise UserError(f"duration {text!r} is longer than a week", hint="e.g. 100ms, 2s, 5min")
    return value
