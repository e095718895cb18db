"""Reading and writing TrafficMatrix files: CSV, NumPy ``.npy`` and versioned JSON.

* CSV: N lines of N comma-separated byte counts, row = sender (``#`` lines are comments);
* ``.npy``: one N x N array of bytes;
* JSON: ``{"format": "linkscope.traffic", "schema_version": 1, "bytes": [[...]], ...}`` with
  message counts, histogram, hosts, local ranks, origin and collectives when known;
* sparse forms (``sparse_io``): CSR-like JSON (written when smaller), SciPy ``.npz``, ``.edges``.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import write_bytes_atomic, write_json_atomic, write_text_atomic
from ..errors import SchemaError, UserError
from ..userfiles import loads_strict, read_text, refuse_malformed
from .matrix import TrafficError, TrafficMatrix
from .sparse_io import SPARSE_SUFFIXES, csr_fields, csr_is_smaller, csr_matrix_of, is_csr_dict, load_sparse, save_sparse

FORMAT = "linkscope.traffic"
SCHEMA_VERSION = 1
SUFFIXES = (".csv", ".npy", ".json") + SPARSE_SUFFIXES


def _number(value: float) -> int | float:
    """Whole numbers as ints in files (byte counts), others as floats."""
    return int(value) if float(value).is_integer() and abs(value) < 2**63 else float(value)


def _matrix_rows(array: np.ndarray) -> list[list[int | float]]:
    return [[_number(v) for v in row] for row in array]


def to_dict(matrix: TrafficMatrix) -> dict[str, Any]:
    """The JSON object; the byte and message matrices in the CSR form where that is smaller."""
    matrices = csr_fields(matrix) if csr_is_smaller(matrix) else {
        "bytes": _matrix_rows(matrix.dense_bytes()),
        "messages": None if (messages := matrix.dense_messages()) is None else _matrix_rows(messages)}
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "ranks": matrix.ranks,
        "origin": matrix.origin,
        **matrices,
        "size_histogram": None if matrix.size_histogram is None else list(matrix.size_histogram),
        "hosts": None if matrix.hosts is None else list(matrix.hosts),
        "local_ranks": None if matrix.local_ranks is None else list(matrix.local_ranks),
        "collectives": {k: dict(v) for k, v in matrix.collectives.items()},
    }


@refuse_malformed("traffic file")
def from_dict(data: Any, origin: str = "") -> TrafficMatrix:
    if not isinstance(data, dict):
        raise SchemaError(f"{origin or 'traffic JSON'}: expected an object", path="$")
    if data.get("format") != FORMAT:
        raise SchemaError(f"{origin or 'traffic JSON'}: not a linkscope traffic file "
                          f"(format is {data.get('format')!r}, expected {FORMAT!r})", path="$.format")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise SchemaError(f"{origin or 'traffic JSON'}: unsupported schema_version {version!r} "
                          f"(this linkscope reads {SCHEMA_VERSION})", path="$.schema_version")
    if "bytes" not in data:
        raise SchemaError(f"{origin or 'traffic JSON'}: missing the byte matrix", path="$.bytes")
    _check_schema(data, origin)
    bytes_, messages = csr_matrix_of(data, origin) if is_csr_dict(data) else (data["bytes"], data.get("messages"))
    matrix = TrafficMatrix(
        bytes=bytes_,
        messages=messages,
        size_histogram=data.get("size_histogram"),
        hosts=data.get("hosts"),
        local_ranks=data.get("local_ranks"),
        origin=data.get("origin") or origin,
        collectives=data.get("collectives") or {},
    )
    if "ranks" in data and data["ranks"] != matrix.ranks:
        raise SchemaError(f"{origin or 'traffic JSON'}: 'ranks' says {data['ranks']} but the matrix is "
                          f"{matrix.ranks} x {matrix.ranks}", path="$.ranks")
    return matrix


def _check_schema(data: dict[str, Any], origin: str) -> None:
    """The traffic format's schema (traffic/schema.py) before any value is used."""
    from ..userschema import validate
    from .schema import TRAFFIC

    validate(data, TRAFFIC, origin or "traffic JSON")


def loads_csv(text: str, origin: str = "") -> TrafficMatrix:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            rows.append([float(cell) for cell in line.split(",")])
        except ValueError:
            raise TrafficError(f"{origin or 'CSV'} line {number}: not a list of numbers: {line[:60]!r}") from None
    if not rows:
        raise TrafficError(f"{origin or 'CSV'}: no rows")
    widths = {len(r) for r in rows}
    if len(widths) != 1 or widths.pop() != len(rows):
        raise TrafficError(f"{origin or 'CSV'}: {len(rows)} rows with {sorted({len(r) for r in rows})} "
                           "columns; a traffic CSV is N lines of N comma-separated byte counts")
    return TrafficMatrix(bytes=np.array(rows, dtype=float), origin=origin)


def dumps_csv(matrix: TrafficMatrix) -> str:
    return "".join(",".join(str(_number(v)) for v in row) + "\n" for row in matrix.dense_bytes())


def check_suffix(path: Path | str, option: str | None = None) -> str:
    """The traffic format of ``path`` from its suffix (``.csv``, ``.npy``, ``.json``); any other is
    refused (commands check their output name before running anything)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        where = f"{option} {path}" if option else str(path)
        raise UserError(f"unknown traffic file type {path.suffix!r} for {where}",
                        hint="use .csv, .npy, .json, .npz (scipy.sparse) or .edges")
    return suffix


def load_traffic(path: Path | str) -> TrafficMatrix:
    """Read a traffic matrix; the format follows the suffix (.csv, .npy, .json, .npz, .edges)."""
    path = Path(path)
    suffix = check_suffix(path)
    origin = f"file:{path.name}"
    if suffix in SPARSE_SUFFIXES:
        return load_sparse(path, suffix)
    if suffix == ".npy":  # shape and dtype judged from the header before any data is read
        from .npyfile import read_npy_matrix

        return TrafficMatrix(bytes=read_npy_matrix(path), origin=origin)
    text = read_text(path, "traffic file")
    if suffix == ".csv":
        return loads_csv(text, origin=origin)
    return from_dict(loads_strict(text, str(path)), origin=origin)


def save_traffic(matrix: TrafficMatrix, path: Path | str) -> None:
    """Write atomically; the format follows the suffix. CSV, .npy and .npz keep only the byte matrix."""
    path = Path(path)
    suffix = check_suffix(path)
    if suffix in SPARSE_SUFFIXES:
        save_sparse(matrix, path, suffix)
    elif suffix == ".csv":
        write_text_atomic(path, dumps_csv(matrix))
    elif suffix == ".npy":
        buffer = io.BytesIO()
        np.save(buffer, matrix.dense_bytes())
        write_bytes_atomic(path, buffer.getvalue())
    else:
        write_json_atomic(path, to_dict(matrix))


__all__ = [
    "FORMAT",
    "SCHEMA_VERSION",
    "check_suffix",
    "dumps_csv",
    "from_dict",
    "load_traffic",
    "loads_csv",
    "save_traffic",
    "to_dict",
]
