"""The schema of a RunRecord JSON file (``linkscope.run``), checked by ``results.io.from_dict``
before any value is used (``userschema``: finite numbers in range, text without control
characters, enums from their tables). Bounds are generous physical limits, not expectations."""
from __future__ import annotations

from ..endpoints import ALL, HOST
from ..userschema import Flag, Free, List, Number, OneOf, Record, Text
from .schema import RunProvenance, Status

MAX_SIZE_BYTES = 2**50
"""One transfer's size at most (1 PiB), the bound ``units.parse_size`` puts on ``--sizes``."""
MAX_GB_PER_S = 1e9
"""A bandwidth at most (GB/s): the sum over 32,768 GPUs at 900 GB/s each is 3e7."""
MAX_LATENCY_US = 1e9
"""A latency at most (µs): 1,000 s."""

DIRECTIONS = ("uni", "bi")
"""``patterns.base.DIRECTIONS`` (a layer above results): a record's directions are those of its plans."""

_NAME = Text(name=True)
_ENDPOINT = OneOf((Number(0, 2**31, integer=True), Text(choices=(HOST, ALL)), _NAME),
                  label=f'a GPU index, "{HOST}" or "{ALL}"')
_BW = Number(0, MAX_GB_PER_S, null=True)
_LAT = Number(0, MAX_LATENCY_US, null=True)

MEASUREMENT = Record(
    fields={
        "src": _ENDPOINT,
        "dst": _ENDPOINT,
        "method": _NAME,
        "pattern": _NAME,
        "direction": Text(choices=DIRECTIONS),
        "size_bytes": Number(0, MAX_SIZE_BYTES, integer=True),
        "moved_bytes": Number(0, 2.0**62, integer=True, null=True),
        **{f"{key}_gb_per_s": _BW for key in ("median", "min", "max", "mean", "stddev")},
        "cv": Number(0, 1e6, null=True),
        "n": Number(0, 2**31, integer=True, null=True),
        "latency_us": _LAT,
        **{f"latency_{key}_us": _LAT for key in ("min", "max", "mean", "stddev")},
        "latency_n": Number(0, 2**31, integer=True, null=True),
        "status": Text(choices=tuple(s.value for s in Status)),
        "reason": Free(),
        "provenance": Text(choices=tuple(p.value for p in RunProvenance)),
        "scope": _NAME,
        "group": Number(0, 2**31, integer=True, null=True),
        "verified": Flag(null=True),
        "extra": Free(),
    },
    required=("src", "dst", "method", "pattern", "size_bytes"),
)

RUN_RECORD = Record(
    fields={
        "kind": _NAME,
        "provenance": Text(choices=tuple(p.value for p in RunProvenance)),
        "created_utc": Text(max_len=64),
        "complete": Flag(),
        "context": Free(),
        "options": Free(),
        "topology": Free(),
        "findings": List(Free()),
        "measurements": List(MEASUREMENT),
        "extra": Free(),
    },
    required=("measurements",),
)
