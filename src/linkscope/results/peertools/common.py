"""What every peer-tool parser shares: the parsed run, the Measurement of one printed number with its
provenance, and the bounds every input is held to.

A parser reads a tool's output (text already read, never a path) and returns a :class:`PeerRun`:
the tool, its version where printed, the GPUs it names, and one Measurement per number it
printed. Each Measurement's ``extra`` keeps where the number came from (``tool``, ``tool_version``,
``source_file``, ``source_line``, and the tool's own name for the test in ``test``); numbers the
tool printed as unavailable (``N/A``) are left out. A file that is not the tool's output at all is a one-line
SchemaError naming the file and line, never another exception (``refuse_malformed`` is the net);
a row that cannot be read is left out with its reason (``PeerRun.unread``, said in one line by
``unread_line``), never the whole file.

Before a parser sees the text, :class:`Lines` takes off what the launcher or the paste put in front
of each line (``srun --label``'s ``  0: ``, ``mpirun --tag-output``'s ``[1,0]<stdout>:``, ``> ``
quoting from a forum or mail) and holds back a last line with no final newline when it carries a
number (it may be cut: "395.14" cut to "39" must never be read as 39).
"""
from __future__ import annotations

import math
import re
from collections import Counter
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

_SRUN_LABEL = re.compile(r"^\s{0,6}(\d{1,6}): ")
"""``srun --label`` writes the task number, right-aligned, and ": " before each line."""
_TAG_OUTPUT = re.compile(r"^\[(\d{1,6}),(\d{1,6})\]<(?:stdout|stderr)>:\s?")
"""``mpirun --tag-output`` (Open MPI) writes ``[jobid,rank]<stdout>:``."""
_QUOTE = re.compile(r"^ {0,3}(?:> ?)+")
"""``> `` quoting (mail, forum replies, Markdown block quotes), possibly nested."""
_PREPEND_RANK = re.compile(r"^\[(\d{1,6})\]\s?")
"""MPICH / Intel MPI ``-prepend-rank`` (``-l``): ``[0]`` before each write, so also inside a line
where the tool printed one row in several writes (``-1[0]    1626.5``)."""
_LINE_NUMBER = re.compile(r"^\s*(\d{1,7})(?:\s|$)")
"""``cat -n`` or an editor's line numbers: 1, 2, 3 ... on every line, in order."""
_ISO_STAMP = re.compile(r"^\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]? "
                        r"(?:(?:stdout|stderr) [FP] )?")
"""A time stamp before each line: CI logs and ``kubectl logs --timestamps`` (ISO 8601, ``T``), a container
runtime's log file (CRI: ``<ISO time> stdout F ``), Python logging / log4j (``[2024-05-01 12:00:00,123]``)."""
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""Terminal colour and cursor codes (a log captured from a terminal, ``script``, CI consoles)."""
_SERVICE = re.compile(r"^([A-Za-z0-9][\w.-]*\s*\|) ?")
"""``docker compose`` (and ``docker-compose``) logs: the service's name, padded, and ``| `` before each line."""
_SYSLOG_STAMP = r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?"
"""The syslog time (``May  1 10:00:00``, ``%b %e %H:%M:%S``), optionally with fractions (``ts %.S``)."""
_JOURNAL = re.compile(rf"^(?:{_SYSLOG_STAMP}|\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?) "
                      r"\S+ [^\s:\[]+(?:\[\d+\])?: ")
"""``journalctl`` (``-o short``: ``May 01 10:00:00 host ident[pid]: ``; ``-o short-iso``: an ISO time first)
and syslog files: time, host, the program and its pid."""
_TS_STAMP = re.compile(rf"^(?:{_SYSLOG_STAMP}|\d\d:\d\d:\d\d(?:\.\d+)?) ")
"""moreutils ``ts``: ``%b %d %H:%M:%S`` by default, ``%H:%M:%.S`` with ``-s`` / ``-i`` (elapsed time)."""
_POD_PREFIX = re.compile(r"^\[pod/[^\]\s]+\] ")
"""``kubectl logs --prefix``: ``[pod/NAME/CONTAINER] `` before each line."""
_MAJORITY_LAYERS = (("journalctl", _JOURNAL), ("timestamps", _ISO_STAMP), ("ts timestamps", _TS_STAMP),
                    ("kubectl --prefix", _POD_PREFIX))
"""Prefixes taken off when most non-empty lines carry them, in any order around each other and the
``docker compose`` column (``docker compose logs -t``: the service, then an ISO time); journalctl first,
as its ISO form starts like a bare time stamp."""
_TAGS = {"mpirun --tag-output": (_TAG_OUTPUT, 2), "mpiexec -prepend-rank": (_PREPEND_RANK, 1),
         "srun --label": (_SRUN_LABEL, 1)}
"""Launchers' rank tags: the pattern and its group that holds the rank."""

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
class RunContext:
    """What the output says (or the user said, ``check --ranks/--hosts/--launch``) about how the tool ran.

    Attributes:
        ranks: how many ranks (GPUs) a collective ran on, or None when neither the output nor an
            option says (never assumed to be 1).
        ranks_from: where ``ranks`` came from: ``"output"`` (the tool printed it), ``"option"``, or "".
        gpus_per_process: GPUs each process drove (nccl-tests ``-g``), or None.
        processes: how many processes (MPI ranks) printed themselves, or None.
        hosts: the host names the output names (empty when it names none).
        launch: ``"graph"`` (nccl-tests ``-G``/CUDA graphs), ``"eager"``, or "" when unknown.
        buffers: OSU's buffer kinds per table, e.g. ``("D D", "H D")`` (send then receive side).
        default_size_bytes: the tool version's default buffer size where the output does not print
            it (nvbandwidth: 64 MiB up to v0.6, 512 MiB from v0.7), or None.
        size_from: ``"output"``, ``"option"`` (``--sizes``), ``"default of <version>"`` or "".
        launcher: the prefix taken off each line (``srun --label``, ``mpirun --tag-output``,
            ``> quoting``, ``timestamps``), "" when none.
        layout: the tool's output layout where it changed across versions (nccl-tests ``1.x``,
            ``2.0-2.12``, ``2.13+``; nvbandwidth ``before v0.6`` ...), "" when the newest.
        env: environment variables the run was launched with that change what moves the bytes
            (``HSA_ENABLE_SDMA=0``: ROCm copies on blit kernels, not SDMA engines), as (name, value)
            pairs: from ``check --env``, and from nccl-tests / rccl-tests output run with NCCL_DEBUG=INFO
            ("NCCL_ALGO set by environment to Tree"; the output's win over the option's).
    """

    ranks: int | None = None
    ranks_from: str = ""
    gpus_per_process: int | None = None
    processes: int | None = None
    hosts: tuple[str, ...] = ()
    launch: str = ""
    buffers: tuple[str, ...] = ()
    default_size_bytes: int | None = None
    size_from: str = ""
    launcher: str = ""
    layout: str = ""
    env: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {k: (dict(v) if k == "env" else list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


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
        unread: (line, reason) of every printed result the parser could not read (a cut row, a row
            with too few columns, a value out of bounds); the rest of the file is read.
        complete: False when the output is cut or lacks the tool's closing lines (``incomplete`` says
            which); its numbers are read, but a health check (``--fail-below``) fails on it.
        incomplete: why the output is not complete, in words ("" when complete).
        run_context: ranks, hosts, launch mode, buffer kinds, default size ... (:class:`RunContext`).
        digest: SHA-256 of the text read (the same file given twice is counted once).
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
    unread: tuple[tuple[int, str], ...] = ()
    complete: bool = True
    incomplete: str = ""
    run_context: RunContext = field(default_factory=RunContext)
    digest: str = ""

    def unread_line(self) -> str:
        """What could not be read, in one line ("" when everything was)."""
        return unread_line(self.unread)

    def to_record(self) -> RunRecord:
        """The imported run as a RunRecord (``kind`` import), so report, model check and model
        calibrate read it like linkscope's own runs."""
        if self.record is not None:
            return self.record
        context = {"gpus": list(self.gpus), "tool": self.tool, "tool_version": self.version, **dict(self.context),
                   "run_context": self.run_context.as_dict()}
        options = {"command": f"check (imported {self.tool} output)", "source_file": self.source}
        return RunRecord("import", RunProvenance.MEASURED, now_utc(), context, options,
                         measurements=self.measurements, findings=self.notes,
                         extra={"imported": {"tool": self.tool, "version": self.version, "source": self.source,
                                             "format": RUN_FORMAT}})


class Lines:
    """The lines of one text with 1-based numbers, for errors that point at the line.

    Launcher prefixes and quoting are taken off (``launcher`` names which); a last line without a
    final newline that holds a digit is held back (``cut_line``: it may be a number cut short).
    """

    def __init__(self, text: str, source: str) -> None:
        if len(text) > MAX_TEXT_CHARS:
            raise SchemaError(f"{source}: {len(text):,} characters is more than the {MAX_TEXT_CHARS:,} a tool output is "
                              "allowed", hint="pass the tool's output file, not a concatenation of many")
        if "\x00" in text:
            raise SchemaError(f"{source} is not a text file (it contains NUL bytes)")
        self.source = source
        raw = text.splitlines()
        self.lines, self.launcher, self.tags = strip_prefixes(raw)
        self.cut_line: int | None = None
        if raw and not text.endswith(("\n", "\r")) and any(ch.isdigit() for ch in self.lines[-1]):
            self.cut_line = len(raw)

    def __iter__(self):
        for n, line in enumerate(self.lines, start=1):
            if n == self.cut_line:
                return
            yield n, line

    def error(self, line: int, message: str) -> SchemaError:
        return SchemaError(f"{self.source}:{line}: {message}")


def strip_prefixes(lines: list[str]) -> tuple[list[str], str, tuple[str, ...]]:
    """``lines`` without the launcher's or the paste's prefix, the prefix's name, and the rank tags
    seen (``srun --label`` task numbers, ``--tag-output`` ranks). A ``srun --label`` prefix is taken
    only when most non-empty lines carry it (a tool's own ``0: ...`` line stays)."""
    names: list[str] = []
    if any("\x1b[" in ln for ln in lines):
        lines = [_ANSI.sub("", ln) for ln in lines]
        names.append("terminal colour codes")
    out = list(lines)
    tags: dict[str, None] = {}
    numbered = [_LINE_NUMBER.match(ln) for ln in lines]
    if len(lines) > 2 and all(m is not None and int(m.group(1)) == i for i, m in enumerate(numbered, start=1)):
        out = [ln[m.end():] if m else ln for ln, m in zip(lines, numbered)]  # ``cat -n`` / an editor's numbers
        names.append("line numbers")
    out[:1] = [ln.removeprefix("\ufeff") for ln in out[:1]]  # a byte-order mark (GitHub Actions' raw logs)
    while (name := _outer_layer(out, names)) is not None:  # each prefix once, in whatever order they nest
        names.append(name)
        if name == "docker compose":
            column = _service_column(out) or ""
            out = [ln[len(column):].removeprefix(" ") if ln.startswith(column) else ln for ln in out]
        elif name == "> quoting":
            out = [_QUOTE.sub("", ln, count=1) for ln in out]
        elif name in _TAGS:
            pattern, group = _TAGS[name]
            out = _untag(out, pattern, group, tags)
        else:
            out = [dict(_MAJORITY_LAYERS)[name].sub("", ln, count=1) for ln in out]
    return out, ", ".join(names), tuple(tags)


def _service_column(lines: list[str]) -> str | None:
    """The ``docker compose`` service column that starts most non-empty ``lines``, or None."""
    filled = [ln for ln in lines if ln.strip()]
    service = Counter(m.group(1) for m in map(_SERVICE.match, filled) if m)
    if not service:
        return None
    name, count = service.most_common(1)[0]  # one container's name (a tool's own '|' tables start otherwise)
    return name if count * 2 > len(filled) else None


def _outer_layer(lines: list[str], done: list[str]) -> str | None:
    """The name of a prefix not in ``done`` that starts ``lines`` (most non-empty ones; any one for
    quoting and ``--tag-output``, which a tool's own line never starts with), or None."""
    filled = [ln for ln in lines if ln.strip()]
    if not filled:
        return None
    for name, pattern in _MAJORITY_LAYERS:
        if name not in done and sum(1 for ln in filled if pattern.match(ln)) * 2 > len(filled):
            return name
    if "docker compose" not in done and _service_column(lines) is not None:
        return "docker compose"
    if "> quoting" not in done and any(_QUOTE.match(ln) for ln in filled):
        return "> quoting"
    if "mpirun --tag-output" not in done and any(_TAG_OUTPUT.match(ln) for ln in filled):
        return "mpirun --tag-output"
    for name in ("mpiexec -prepend-rank", "srun --label"):
        if name not in done and sum(1 for ln in filled if _TAGS[name][0].match(ln)) * 2 > len(filled):
            return name
    return None


def _untag(lines: list[str], pattern: re.Pattern[str], group: int, tags: dict[str, None]) -> list[str]:
    """``lines`` with ``pattern``'s prefix taken off where it starts one (its rank tag kept in ``tags``);
    a ``-prepend-rank`` tag glued inside a row (one row printed in several writes) becomes a space."""
    out = []
    for ln in lines:
        m = pattern.match(ln)
        if m:
            tags[m.group(group)] = None
            ln = ln[m.end():]
            if pattern is _PREPEND_RANK:
                ln = re.sub(r"(?<=\S)\[\d{1,6}\](?=\s)", " ", ln)
        out.append(ln)
    return out


def matrix_values(out: Collector, lines: Lines, n: int, cells: Sequence[str], columns: int, *,
                  rates: bool = True, what: str = "a matrix") -> list[float | None] | None:
    """The values of one matrix row (``N/A`` as None), or None with the reason recorded as unread: a
    row with another count of cells than the header has columns (cut, or two rows run together), a
    cell that is not a number, a rate out of bounds (``rates``)."""
    if len(cells) != columns:
        out.skip(n, f"{len(cells)} values under {columns} columns in {what}")
        return None
    try:
        values = [None if tok == "N/A" else number(tok, lines, n) for tok in cells]
    except SchemaError as exc:
        out.skip(n, str(exc).split(": ", 1)[-1])
        return None
    if rates and any(v is not None and not rate_in_bounds(v) for v in values):
        out.skip(n, f"a rate outside 0 .. {MAX_GB_PER_S:g} GB/s (a unit mistake or a corrupt file)")
        return None
    return values


def unread_line(unread: Sequence[tuple[int, str]]) -> str:
    """``unread`` in one line: how many, and each line number with its reason (reasons grouped)."""
    if not unread:
        return ""
    by_reason: dict[str, list[int]] = {}
    for line, reason in unread:
        by_reason.setdefault(reason, []).append(line)
    parts = []
    for reason, where in by_reason.items():
        shown = ", ".join(str(n) for n in where[:6]) + (f" (+{len(where) - 6})" if len(where) > 6 else "")
        parts.append(f"line{'s' if len(where) > 1 else ''} {shown}: {reason}")
    return f"not read: {len(unread)} row{'s' if len(unread) != 1 else ''} ({'; '.join(parts)})"


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
    if not rate_in_bounds(value):
        raise _err(lines, line, f"rate {value:g} GB/s is outside 0 .. {MAX_GB_PER_S:g}")
    return value


def rate_in_bounds(value: float) -> bool:
    return 0 <= value <= MAX_GB_PER_S


class Collector:
    """Measurements of one file, with the provenance every one carries and the file's number limit."""

    def __init__(self, tool: str, version: str, source: str) -> None:
        self.tool, self.version, self.source = tool, version, source
        self.items: list[Measurement] = []
        self.unread: list[tuple[int, str]] = []

    def skip(self, line: int, reason: str) -> None:
        """A printed result that could not be read (the rest of the file is)."""
        if len(self.unread) >= MAX_NUMBERS:
            raise SchemaError(f"{self.source}: more than {MAX_NUMBERS:,} rows could not be read; is this one tool's output?")
        self.unread.append((line, reason))

    def cut(self, lines: Lines) -> None:
        """Record the held-back last line (no final newline) as unread."""
        if lines.cut_line is not None:
            self.skip(lines.cut_line, "the last line has no final newline: a number there may be cut short")

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
