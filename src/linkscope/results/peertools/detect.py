"""Which tool wrote a file (from its content), and the one entry point that reads any of them.

``read(path, fmt=None)`` returns a :class:`~.common.PeerRun`: a linkscope RunRecord (JSON with
``format: linkscope.run``), nvbandwidth (text or ``-j`` JSON), nccl-tests / rccl-tests (text or
``-J`` JSON), OSU, p2pBandwidthLatencyTest or TransferBench output. ``fmt`` (``--format``) forces
one of ``FORMATS``. Every failure is a one-line UserError naming the file.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...errors import SchemaError, UserError
from ...userfiles import loads_strict, read_text, user_file_errors
from . import nccltests, nvbandwidth, osu, p2p_sample, transferbench
from .common import MAX_TEXT_CHARS, PeerRun, RunContext, strip_prefixes

FORMATS = ("linkscope", "nvbandwidth", "nccl-tests", "osu", "p2p", "transferbench")
"""``--format`` values (rccl-tests is read as nccl-tests; JSON or text is told from the content)."""

_TEXT: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("nvbandwidth", nvbandwidth.looks_like),
    ("nccl-tests", nccltests.looks_like),
    ("p2p", p2p_sample.looks_like),
    ("transferbench", transferbench.looks_like),
    ("osu", osu.looks_like),
)


def _load_json(text: str, source: str) -> Any:
    try:
        return loads_strict(text, source)
    except RecursionError:
        raise SchemaError(f"{source}: JSON nested too deeply") from None


def _from_json(data: Any, source: str, fmt: str | None, size_bytes: int | None) -> PeerRun:
    kind = fmt
    if kind is None:
        if isinstance(data, dict) and data.get("format") == "linkscope.run":
            kind = "linkscope"
        elif isinstance(data, dict) and "nvbandwidth" in data:
            kind = "nvbandwidth"
        elif isinstance(data, dict) and "results" in data:
            kind = "nccl-tests"
        else:
            raise SchemaError(f"{source}: a JSON file of no tool linkscope reads",
                              hint="linkscope check reads linkscope run records, nvbandwidth -j and nccl-tests -J JSON")
    if kind == "linkscope":
        from .. import io as run_io

        record = run_io.from_dict(data)
        return PeerRun("linkscope", str((record.context or {}).get("linkscope_version", "")), source,
                       record.measurements, tuple(str(g) for g in (record.context or {}).get("gpus") or ()),
                       record=record)
    if kind == "nvbandwidth":
        return nvbandwidth.parse_json(data, source, size_bytes)
    if kind == "nccl-tests":
        return nccltests.parse_json(data, source)
    raise SchemaError(f"{source}: --format {kind} output is text, but this file is JSON")


def parse(text: str, source: str, fmt: str | None = None, size_bytes: int | None = None,
          stated: RunContext | None = None) -> PeerRun:
    """The PeerRun of ``text`` (the content of ``source``); ``stated``: what the user said of the run
    (``check --ranks/--hosts/--launch/--env``) where the output does not say it."""
    run = _parse(text, source, fmt, size_bytes, stated)
    return _with_stated(replace(run, digest=hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()), stated)


def _with_stated(run: PeerRun, stated: RunContext | None) -> PeerRun:
    """``run`` with the user's statements filling what its output left unsaid (the output wins)."""
    if stated is None:
        return run
    ctx = run.run_context
    changes: dict = {}
    if ctx.ranks is None and stated.ranks is not None:
        changes.update(ranks=stated.ranks, ranks_from="option")
    if not ctx.hosts and stated.hosts:
        changes["hosts"] = stated.hosts
    if not ctx.launch and stated.launch:
        changes["launch"] = stated.launch
    if stated.env:
        changes["env"] = tuple({**dict(stated.env), **dict(ctx.env)}.items())
    return replace(run, run_context=replace(ctx, **changes)) if changes else run


def _parse(text: str, source: str, fmt: str | None, size_bytes: int | None, stated: RunContext | None) -> PeerRun:
    if fmt is not None and fmt not in FORMATS:
        raise UserError(f"unknown --format {fmt!r}", hint=f"valid formats: {', '.join(FORMATS)}")
    if text.lstrip().startswith("{"):
        return _from_json(_load_json(text, source), source, fmt, size_bytes)
    kind = fmt
    if kind is None:
        head = "\n".join(strip_prefixes(text[:20000].splitlines())[0])  # as the parser will see it
        kind = next((name for name, sniff in _TEXT if sniff(head)), None)
        if kind is None:
            raise SchemaError(f"{source}: not the output of a tool linkscope check reads",
                              hint="it reads linkscope run records, nvbandwidth, nccl-tests / rccl-tests, OSU, "
                                   "p2pBandwidthLatencyTest and TransferBench output; --format forces one")
    if kind == "linkscope":
        raise SchemaError(f"{source}: a linkscope run record is JSON; this file is not")
    if kind == "nvbandwidth":
        return nvbandwidth.parse_text(text, source, size_bytes)
    if kind == "nccl-tests":
        return nccltests.parse_text(text, source, stated)
    if kind == "p2p":
        return p2p_sample.parse_text(text, source, size_bytes)
    if kind == "transferbench":
        return transferbench.parse_text(text, source)
    return osu.parse_text(text, source)


def read(path: str | Path, fmt: str | None = None, size_bytes: int | None = None,
         stated: RunContext | None = None) -> PeerRun:
    """Read and parse one results file (size-checked before it is read)."""
    path = Path(path)
    with user_file_errors(path, "results file"):
        size = os.stat(path).st_size
    if path.is_file() and size > MAX_TEXT_CHARS:
        raise SchemaError(f"{path}: {size:,} bytes is more than the {MAX_TEXT_CHARS:,} a tool output is allowed")
    text = read_text(path, "results file")
    if not text.strip():
        raise SchemaError(f"{path} is empty")
    return parse(text, str(path), fmt, size_bytes, stated)


def read_all(paths: Sequence[str | Path], fmt: str | None = None, size_bytes: int | None = None,
             stated: RunContext | None = None) -> tuple[list[PeerRun], list[str]]:
    """Each file parsed once: a file given twice (the same path, or the same content under another
    name) is counted once; the second list says which were left out."""
    runs: list[PeerRun] = []
    dropped: list[str] = []
    seen: dict[str, str] = {}
    for path in paths:
        run = read(path, fmt, size_bytes, stated)
        key = run.digest or str(Path(path).resolve())
        if key in seen:
            dropped.append(f"{path}: the same output as {seen[key]}: counted once")
            continue
        seen[key] = str(path)
        runs.append(run)
    return runs, dropped


__all__ = ["FORMATS", "PeerRun", "RunContext", "parse", "read", "read_all"]
