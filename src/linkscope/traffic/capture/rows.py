"""Per-rank rows written by the capture hooks, and merging them into a TrafficMatrix.

Row file ``rank-<N>.txt`` (text, one item per line)::

    linkscope-traffic-row 1
    source pmpi | mpi4py
    rank N
    size S
    host NAME
    local_rank L            (-1 when unknown)
    bytes b0 b1 ... b(S-1)  (bytes sent to each MPI_COMM_WORLD rank)
    messages m0 ... m(S-1)
    hist h0 ... h63         (message sizes, bins as traffic.matrix.histogram_bin)
    coll NAME CALLS BYTES   (zero or more)
    end
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import UserError
from ...userfiles import read_text
from ..matrix import HISTOGRAM_BINS, TrafficMatrix, from_entries

MAGIC = "linkscope-traffic-row 1"


@dataclass(frozen=True)
class Row:
    """One rank's counts."""

    rank: int
    size: int
    host: str
    local_rank: int
    bytes: tuple[int, ...]
    messages: tuple[int, ...]
    histogram: tuple[int, ...]
    collectives: dict[str, tuple[int, int]] = field(default_factory=dict)
    source: str = "pmpi"


def format_row(row: Row) -> str:
    lines = [MAGIC, f"source {row.source}", f"rank {row.rank}", f"size {row.size}", f"host {row.host}",
             f"local_rank {row.local_rank}", "bytes " + " ".join(map(str, row.bytes)),
             "messages " + " ".join(map(str, row.messages)), "hist " + " ".join(map(str, row.histogram))]
    lines += [f"coll {name} {calls} {nbytes}" for name, (calls, nbytes) in sorted(row.collectives.items())]
    lines.append("end")
    return "\n".join(lines) + "\n"


def parse_row(text: str, origin: str = "row") -> Row:
    lines = text.splitlines()
    if not lines or lines[0].strip() != MAGIC:
        raise UserError(f"{origin}: not a linkscope traffic row")
    if lines[-1].strip() != "end":
        raise UserError(f"{origin}: truncated traffic row (did the rank crash before MPI_Finalize?)")
    values: dict[str, str] = {}
    collectives: dict[str, tuple[int, int]] = {}
    for line in lines[1:-1]:
        key, _, rest = line.partition(" ")
        if key == "coll":
            name, calls, nbytes = rest.split()
            collectives[name] = (int(calls), int(nbytes))
        else:
            values[key] = rest
    try:
        size = int(values["size"])
        row = Row(
            rank=int(values["rank"]),
            size=size,
            host=values.get("host", "").strip() or "unknown",
            local_rank=int(values.get("local_rank", "-1")),
            bytes=tuple(int(x) for x in values["bytes"].split()),
            messages=tuple(int(x) for x in values["messages"].split()),
            histogram=tuple(int(x) for x in values.get("hist", "").split()),
            collectives=collectives,
            source=values.get("source", "pmpi"),
        )
    except (KeyError, ValueError) as exc:
        raise UserError(f"{origin}: malformed traffic row ({exc})") from None
    if len(row.bytes) != size or len(row.messages) != size:
        raise UserError(f"{origin}: row has {len(row.bytes)} entries for {size} ranks")
    return row


def merge_rows(rows: Sequence[Row], origin: str) -> TrafficMatrix:
    """Stack rows into a TrafficMatrix; every rank 0..S-1 must be present exactly once."""
    if not rows:
        raise UserError("no traffic rows were written",
                        hint="did the program call MPI_Init and MPI_Finalize, and was the interposer preloaded?")
    sizes = {r.size for r in rows}
    if len(sizes) != 1:
        raise UserError(f"traffic rows disagree on the number of ranks: {sorted(sizes)} (rows of several jobs mixed?)")
    size = sizes.pop()
    by_rank: dict[int, Row] = {}
    for r in rows:
        if r.rank in by_rank:
            raise UserError(f"two traffic rows for rank {r.rank} (rows of several jobs in one directory?)")
        by_rank[r.rank] = r
    missing = [k for k in range(size) if k not in by_rank]
    if missing:
        raise UserError(f"no traffic row from rank(s) {missing[:8]} of {size}",
                        hint="a rank that exits without MPI_Finalize writes no row")
    ordered = [by_rank[k] for k in range(size)]
    hist = np.zeros(HISTOGRAM_BINS, dtype=np.int64)
    for r in ordered:
        h = np.array(r.histogram[:HISTOGRAM_BINS], dtype=np.int64)
        hist[: len(h)] += h
    collectives: dict[str, dict[str, int]] = {}
    for r in ordered:
        for name, (calls, nbytes) in r.collectives.items():
            item = collectives.setdefault(name, {"calls": 0, "bytes": 0})
            item["calls"] += calls
            item["bytes"] += nbytes
    local = [r.local_rank for r in ordered]
    if any(v < 0 for v in local):
        local = _local_ranks_from_hosts([r.host for r in ordered])
    # entries from each row's non-zeros: no N x N array (sparse above DENSE_UP_TO ranks)
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    sent: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    for r in ordered:
        b, m = np.asarray(r.bytes, dtype=np.float64), np.asarray(r.messages, dtype=np.float64)
        talk = np.nonzero((b != 0) | (m != 0))[0]
        src.append(np.full(len(talk), r.rank, dtype=np.int64))
        dst.append(talk)
        sent.append(b[talk])
        counts.append(m[talk])
    return from_entries(
        size,
        np.concatenate(src),
        np.concatenate(dst),
        np.concatenate(sent),
        np.concatenate(counts),
        size_histogram=tuple(int(v) for v in hist),
        hosts=tuple(r.host for r in ordered),
        local_ranks=tuple(local),
        origin=origin,
        collectives=collectives,
    )


def _local_ranks_from_hosts(hosts: Iterable[str]) -> list[int]:
    """Local rank = order among the ranks on the same host (the usual block placement)."""
    seen: dict[str, int] = {}
    out = []
    for h in hosts:
        out.append(seen.get(h, 0))
        seen[h] = seen.get(h, 0) + 1
    return out


def read_rows(folder: Path) -> list[Row]:
    return [parse_row(read_text(p, "captured rank row"), origin=str(p)) for p in sorted(Path(folder).glob("rank-*.txt"))]
