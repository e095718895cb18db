"""What every peer-tool parser shares: the parsed run, the Measurement of one printed number with its
provenance, and the bounds every input is held to.

A parser reads a tool's output (text already read, never a path) and returns a :class:`PeerRun`:
the tool, its version where printed, the GPUs it names, and one Measurement per number it
printed. Each Measurement's ``extra`` keeps where the number came from (``tool``, ``tool_version``,
``source_file``, ``source_line``, and the tool's own name for the test in ``test``); numbers the
tool printed as unavailable (``N/A``) are left out. A malformed file is a one-line SchemaError
naming the file and line, never another exception (``refuse_malformed`` is the net).
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import SchemaError
from ..schema import RUN_FORMAT, Endpoint, Measurement, RunProvenance, RunRecord, Status, now_utc
from ..stats import Stats

MAX_TEXT_CHARS = 32 * 1024 * 1024
"""Larger outputs are refused before parsing (a full nvbandwidth run on 8 GPUs is about 40 KB)."""
MAX_NUMBERS = 200_000
"""At most this many numbers per file (an 8-GPU nvbandwidth run prints about 3,000)."""
MAX_GPUS = 4096
"""GPU indices above this are refused (no node has more; a typo or a corrupt file does)."""
MAX_SIZE_BYTES = 1 << 50
"""Transfer sizes above 1 PiB are refused."""
MAX_GB_PER_S = 1e6
"""Rates above 1 PB/s are refused (no link comes near; a unit mistake does)."""

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class Outcome:
    """How one of a tool's test cases ended, as the tool said it.

    Attributes:
        status: the tool's own word (nvbandwidth: ``Passed``, ``Waived``, ``Error``, ``Not Found``), or
            ``Running`` for a case the tool started and printed no result for (a crash, a cut output).
        message: what the tool printed after the status ("" when nothing).
    """

    status: str
    message: str = ""


@dataclass(frozen=True)
class PeerRun:
    """One peer tool's output, parsed.

    Attributes:
        tool: ``nvbandwidth``, ``nccl-tests``, ``rccl-tests``, ``osu``, ``p2pBandwidthLatencyTest``,
            ``TransferBench`` or ``linkscope``.
        version: the tool's version where it printed one, else "".
        source: the file it was read from.
        measurements: one per printed number (GPU indices are the tool's: 0..n-1 of what it saw).
        gpus: GPU names the tool printed, in its index order (may be empty).
        context: other facts it printed (driver, CUDA/NCCL version, command line ...).
        notes: what was left out and why (waived tests, unknown tests).
        record: the RunRecord itself when the input was a linkscope run record.
        outcomes: each test case the tool started or gave a status, by the tool's name for it (nvbandwidth;
            empty for tools that print no per-case status).
    """

    tool: str
    version: str
    source: str
    measurements: tuple[Measurement, ...]
    gpus: tuple[str, ...] = ()
    context: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    record: RunRecord | None = None
    outcomes: Mapping[str, Outcome] = field(default_factory=dict)

    def to_record(self) -> RunRecord:
        """The imported run as a RunRecord (``kind`` import), so report, model check and model
        calibrate read it like linkscope's own runs."""
        if self.record is not None:
            return self.record
        context = {"gpus": list(self.gpus), "tool": self.tool, "tool_version": self.version, **dict(self.context)}
        options = {"command": f"check (imported {self.tool} output)", "source_file": self.source}
        return RunRecord("import", RunProvenance.MEASURED, now_utc(), context, options,
                         measurements=self.measurements, findings=self.notes,
                         extra={"imported": {"tool": self.tool, "version": self.version, "source": self.source,
                                             "format": RUN_FORMAT}})


class Lines:
    """The lines of one text with 1-based numbers, for errors that point at the line."""

    def __init__(self, text: str, source: str) -> None:
        if len(text) > MAX_TEXT_CHARS:
            raise SchemaError(f"{source}: {len(text):,} characters is more than the {MAX_TEXT_CHARS:,} a tool output is "
                              "allowed", hint="pass the tool's output file, not a concatenation of many")
        if "\x00" in text:
            raise SchemaError(f"{source} is not a text file (it contains NUL bytes)")
        self.source = source
        self.lines = text.splitlines()

    def __iter__(self):
        return iter(enumerate(self.lines, start=1))

    def error(self, line: int, message: str) -> SchemaError:
        return SchemaError(f"{self.source}:{line}: {message}")


def number(text: str, lines: Lines | None = None, line: int = 0, what: str = "value") -> float:
    """A finite decimal number; a clear error naming the line otherwise."""
    token = text.strip()
    if not _NUMBER.match(token):
        raise _err(lines, line, f"{what} {token[:40]!r} is not a number")
    value = float(token)
    if not math.isfinite(value):
        raise _err(lines, line, f"{what} {token[:40]!r} is not a finite number")
    return value


def integer(text: str, lines: Lines | None = None, line: int = 0, what: str = "value", *, limit: int = MAX_SIZE_BYTES) -> int:
    token = text.strip()
    if not token.isascii() or not token.isdigit():
        raise _err(lines, line, f"{what} {token[:40]!r} is not a whole number")
    if len(token) > 20 or int(token) > limit:
        raise _err(lines, line, f"{what} {token[:40]} is larger than {limit:,}")
    return int(token)


def gpu_index(text: str, lines: Lines | None = None, line: int = 0) -> int:
    return integer(text, lines, line, "GPU index", limit=MAX_GPUS)


def _err(lines: Lines | None, line: int, message: str) -> SchemaError:
    return lines.error(line, message) if lines is not None else SchemaError(message)


def check_rate(value: float, lines: Lines | None, line: int) -> float:
    if value < 0 or value > MAX_GB_PER_S:
        raise _err(lines, line, f"rate {value:g} GB/s is outside 0 .. {MAX_GB_PER_S:g}")
    return value


class Collector:
    """Measurements of one file, with the provenance every one carries and the file's number limit."""

    def __init__(self, tool: str, version: str, source: str) -> None:
        self.tool, self.version, self.source = tool, version, source
        self.items: list[Measurement] = []

    def add(self, line: int, src: Endpoint, dst: Endpoint, method: str, pattern: str, size_bytes: int, *,
            gb_per_s: float | None = None, latency_us: float | None = None, direction: str = "uni",
            scope: str = "transfer", group: int | None = None, extra: Mapping[str, Any] | None = None,
            status: Status = Status.OK, reason: str = "", samples: Sequence[float] | None = None) -> None:
        if len(self.items) >= MAX_NUMBERS:
            raise SchemaError(f"{self.source}: more than {MAX_NUMBERS:,} numbers; is this one tool's output?")
        moved = size_bytes * (2 if direction == "bi" and scope == "total" else 1)
        bw = None if gb_per_s is None else Stats.single(gb_per_s)
        if samples:
            bw = Stats.from_samples(list(samples))
        lat = None if latency_us is None else Stats.single(latency_us)
        info = {"tool": self.tool, "tool_version": self.version, "source_file": self.source, "source_line": line}
        info.update(extra or {})
        self.items.append(Measurement(src, dst, method, pattern, direction, size_bytes, moved, bw, lat, status, reason,
                                      RunProvenance.MEASURED, scope, group, None, info))
