"""The schema of a traffic JSON file (``linkscope.traffic``), checked by ``traffic.io.from_dict``
before any value is used (``userschema``). The byte and message matrices are checked by
``TrafficMatrix`` itself (numeric, finite, non-negative, square), vectorised; the rank count is
bounded by the sparse limit here (a CSR file may hold up to ``MAX_SPARSE_RANKS``), and ``TrafficMatrix``
refuses a dense matrix above its own limit."""
from __future__ import annotations

from ..userschema import List, Number, Record, Skip, Text
from .matrix import HISTOGRAM_BINS, MAX_SPARSE_RANKS

_COUNT = Number(0, 2.0**63, integer=True)

TRAFFIC = Record(
    fields={
        "ranks": Number(1, MAX_SPARSE_RANKS, integer=True),
        "origin": Text(max_len=4096, null=True),
        "bytes": Skip(),
        "messages": Skip(),
        "size_histogram": List(_COUNT, max_len=HISTOGRAM_BINS, null=True),
        "hosts": List(Text(name=True), max_len=MAX_SPARSE_RANKS, null=True),
        "local_ranks": List(Number(0, MAX_SPARSE_RANKS, integer=True), max_len=MAX_SPARSE_RANKS, null=True),
        # collective name -> {"calls": int, "bytes": int}, summed over ranks (captured)
        "collectives": Record(values=Record(fields={"calls": _COUNT, "bytes": _COUNT}, required=("calls",)),
                              null=True),
    },
)
