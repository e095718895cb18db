"""Sparse traffic files: CSR-like JSON, SciPy ``.npz`` and edge lists (``traffic.io`` calls these).

* JSON: the linkscope traffic object (``traffic.io``) whose ``bytes`` (and ``messages``) is
  ``{"indptr": [N + 1 ints], "indices": [column of each entry], "data": [value of each entry]}``
  (SciPy's CSR: row r's entries are ``indptr[r]:indptr[r + 1]``) instead of a list of N rows.
  ``to_dict`` writes this form when it holds fewer numbers than the dense one (``csr_is_smaller``).
* ``.npz``: ``scipy.sparse.save_npz`` of the byte matrix (any SciPy sparse format); read with
  ``allow_pickle=False``, its shape and uncompressed member sizes checked before loading.
* ``.edges``: one ``SRC DST BYTES [MESSAGES]`` line per talking pair (spaces or commas; ``#``
  comments; repeated pairs add up); ranks are 0..max+1 unless a ``# ranks N`` line says more.

A sparse file of more than ``matrix.DENSE_UP_TO`` ranks stays sparse in memory; the cluster mapper
reads it without building an N x N array.
"""
from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..atomic import write_bytes_atomic, write_text_atomic
from ..errors import SchemaError
from ..userfiles import read_text, read_zip_members
from .matrix import MAX_NONZEROS, TrafficError, TrafficMatrix, check_sparse_rank_count, from_entries

SPARSE_SUFFIXES = (".npz", ".edges")
NPZ_MEMBERS = {"data.npy", "indices.npy", "indptr.npy", "format.npy", "shape.npy", "row.npy", "col.npy",
               "offsets.npy"}
"""What ``scipy.sparse.save_npz`` writes (CSR/CSC: indptr; COO: row/col; DIA: offsets)."""


# ---- JSON ------------------------------------------------------------------------------------------
def is_csr_dict(data: Any) -> bool:
    """True when a traffic JSON object holds its byte matrix in the CSR form."""
    return isinstance(data, dict) and isinstance(data.get("bytes"), dict)


def _int_list(value: Any, where: str) -> np.ndarray:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise SchemaError(f"traffic JSON: {where} must be a list of whole numbers", path=where)
    return np.asarray(value, dtype=np.int64)


def csr_from_dict(value: Any, ranks: int, where: str) -> sp.csr_matrix:
    """A CSR matrix from ``{"indptr", "indices", "data"}``, every part checked (clear errors, no
    SciPy traceback)."""
    if not isinstance(value, dict) or set(value) != {"indptr", "indices", "data"}:
        raise SchemaError(f"traffic JSON: {where} must be an object with exactly indptr, indices and data",
                          path=where)
    indptr = _int_list(value["indptr"], f"{where}.indptr")
    indices = _int_list(value["indices"], f"{where}.indices")
    data = value["data"]
    if not isinstance(data, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in data):
        raise SchemaError(f"traffic JSON: {where}.data must be a list of numbers", path=f"{where}.data")
    if len(indptr) != ranks + 1 and len(indptr) >= 1:
        raise SchemaError(f"traffic JSON: 'ranks' says {ranks} but {where}.indptr has {len(indptr)} offsets "
                          f"({len(indptr) - 1} rows)", path=f"{where}.indptr")
    if len(indptr) != ranks + 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != len(indices):
        raise SchemaError(f"traffic JSON: {where}.indptr must be {ranks + 1} non-decreasing offsets from 0 to "
                          f"the {len(indices)} entries", path=f"{where}.indptr")
    if len(data) != len(indices):
        raise SchemaError(f"traffic JSON: {where} has {len(indices)} indices but {len(data)} values", path=f"{where}.data")
    if len(indices) and (indices.min() < 0 or indices.max() >= ranks):
        raise SchemaError(f"traffic JSON: {where}.indices must be columns 0..{ranks - 1}", path=f"{where}.indices")
    if len(indices) > MAX_NONZEROS:
        raise TrafficError(f"traffic JSON: {where} holds {len(indices)} entries; linkscope handles up to {MAX_NONZEROS}")
    return sp.csr_matrix((np.asarray(data, dtype=np.float64), indices, indptr), shape=(ranks, ranks))


def csr_matrix_of(data: dict[str, Any], origin: str) -> tuple[sp.csr_matrix, sp.csr_matrix | None]:
    """The byte and message matrices of a CSR-form traffic object (``ranks`` is required)."""
    ranks = data.get("ranks")
    if not isinstance(ranks, int) or isinstance(ranks, bool):
        raise SchemaError(f"{origin or 'traffic JSON'}: the CSR form needs 'ranks' (the number of ranks)",
                          path="$.ranks")
    check_sparse_rank_count(ranks, origin or "traffic JSON")
    messages = data.get("messages")
    return (csr_from_dict(data["bytes"], ranks, "$.bytes"),
            None if messages is None else csr_from_dict(messages, ranks, "$.messages"))


def _csr_dict(matrix: sp.csr_matrix) -> dict[str, list]:
    m = sp.csr_matrix(matrix)
    return {"indptr": [int(v) for v in m.indptr], "indices": [int(v) for v in m.indices],
            "data": [int(v) if float(v).is_integer() and abs(v) < 2**63 else float(v) for v in m.data]}


def csr_is_smaller(matrix: TrafficMatrix) -> bool:
    """The CSR form writes fewer numbers than N x N (per matrix: N + 1 offsets and two per entry)."""
    n = matrix.ranks
    nnz = sp.csr_matrix(matrix.bytes).nnz
    return n + 1 + 2 * nnz < n * n


def csr_fields(matrix: TrafficMatrix) -> dict[str, Any]:
    """The ``bytes`` and ``messages`` members of the CSR form."""
    return {"bytes": _csr_dict(matrix.bytes),
            "messages": None if matrix.messages is None else _csr_dict(matrix.messages)}


# ---- .npz ------------------------------------------------------------------------------------------
def _npz_array(members: dict[str, bytes], name: str, path: Path) -> np.ndarray:
    try:
        array = np.load(io.BytesIO(members[name]), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise TrafficError(f"{path}: unreadable .npz member {name} ({str(exc)[:100]})") from None
    if not isinstance(array, np.ndarray):
        raise TrafficError(f"{path}: .npz member {name} is not an array")
    return array


def _npz_index(members: dict[str, bytes], name: str, path: Path) -> np.ndarray:
    array = _npz_array(members, name, path)
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise TrafficError(f"{path}: {name} must be a 1-D array of whole numbers, got {array.dtype} of shape "
                           f"{array.shape}")
    return array.astype(np.int64)


def check_csr_arrays(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, rows: int, columns: int,
                     origin: str) -> None:
    """Refuse compressed-sparse arrays SciPy's native code would trust (it reads ``indices[k]`` as a
    column without checking, and ``indptr`` as bounds into the arrays): ``rows + 1`` offsets from 0,
    never decreasing, ending at the number of entries; as many values as indices; every index in
    ``0 .. columns - 1``; values finite and non-negative. Nothing is dropped: a bad entry is refused."""
    if len(indptr) != rows + 1:
        raise TrafficError(f"{origin}: indptr has {len(indptr)} offsets; a {rows}-row matrix needs {rows + 1}")
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != len(indices):
        raise TrafficError(f"{origin}: indptr must be offsets from 0, never decreasing, ending at the {len(indices)} "
                           f"entries (got first {int(indptr[0])}, last {int(indptr[-1])})")
    _check_entries(indices, values, columns, "indices", origin)


def _check_entries(indices: np.ndarray, values: np.ndarray, columns: int, name: str, origin: str) -> None:
    if len(values) != len(indices):
        raise TrafficError(f"{origin}: {len(indices)} {name} but {len(values)} values")
    if len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= columns):
        bad = int(indices.min()) if int(indices.min()) < 0 else int(indices.max())
        raise TrafficError(f"{origin}: {name} must be ranks 0..{columns - 1}, found {bad}")
    if values.dtype.kind not in "biuf":
        raise TrafficError(f"{origin}: data holds {values.dtype} values; a traffic matrix holds byte counts")
    if len(values) and not np.all(np.isfinite(values)):
        raise TrafficError(f"{origin}: data holds a non-finite value (NaN or infinity)")
    if len(values) and np.any(values < 0):
        raise TrafficError(f"{origin}: data holds a negative byte count ({float(values.min()):g})")


def load_npz(path: Path) -> TrafficMatrix:
    """A ``scipy.sparse.save_npz`` file (CSR, CSC or COO), read member by member through the bounded
    zip reader (``userfiles.read_zip_members``: regular file, expanded size capped) and every array
    checked (``check_csr_arrays``) before SciPy builds a matrix from them."""
    members = read_zip_members(path, "traffic file")
    if "shape.npy" not in members or "format.npy" not in members or not set(members) <= NPZ_MEMBERS:
        raise TrafficError(f"{path}: not a scipy.sparse .npz file (members {sorted(members)[:6]})",
                           hint="write it with scipy.sparse.save_npz, or use .npy for a dense array")
    shape = _npz_array(members, "shape.npy", path)
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or shape[0] != shape[1]:
        raise TrafficError(f"{path}: the matrix must be square N x N, got shape {shape.tolist()}")
    ranks = int(shape[0])
    check_sparse_rank_count(ranks, str(path))
    fmt_array = _npz_array(members, "format.npy", path)
    item = fmt_array.item() if fmt_array.size == 1 and fmt_array.dtype.kind in "SU" else ""
    fmt = item.decode("ascii", "replace") if isinstance(item, bytes) else str(item)
    if fmt not in ("csr", "csc", "coo"):
        raise TrafficError(f"{path}: sparse format {fmt or fmt_array.tolist()!r} is not read; save CSR, CSC or COO",
                           hint="scipy.sparse.save_npz(path, matrix.tocsr())")
    values = _npz_array(members, "data.npy", path) if "data.npy" in members else np.zeros(0)
    if values.ndim != 1:
        raise TrafficError(f"{path}: data must be a 1-D array, got shape {values.shape}")
    if len(values) > MAX_NONZEROS:
        raise TrafficError(f"{path}: {len(values)} entries; linkscope handles up to {MAX_NONZEROS}")
    origin = str(path)
    if fmt == "coo":
        row, col = _npz_index(members, "row.npy", path), _npz_index(members, "col.npy", path)
        _check_entries(row, values, ranks, "row", origin)
        _check_entries(col, values, ranks, "col", origin)
        matrix = sp.coo_matrix((values.astype(np.float64), (row, col)), shape=(ranks, ranks)).tocsr()
    else:
        indptr, indices = _npz_index(members, "indptr.npy", path), _npz_index(members, "indices.npy", path)
        check_csr_arrays(indptr, indices, values, ranks, ranks, origin)
        built = (sp.csr_matrix if fmt == "csr" else sp.csc_matrix)((values.astype(np.float64), indices, indptr),
                                                                   shape=(ranks, ranks))
        matrix = sp.csr_matrix(built)
    return TrafficMatrix(bytes=matrix, origin=f"file:{path.name}")


def dump_npz(matrix: TrafficMatrix) -> bytes:
    buffer = io.BytesIO()
    sp.save_npz(buffer, sp.csr_matrix(matrix.bytes), compressed=True)
    return buffer.getvalue()


# ---- edge lists ------------------------------------------------------------------------------------
_RANKS_LINE = re.compile(r"#\s*ranks\s*[:=]?\s*(\d+)\s*$")


def loads_edges(text: str, origin: str = "") -> TrafficMatrix:
    """``SRC DST BYTES [MESSAGES]`` lines into a TrafficMatrix (repeated pairs summed)."""
    src: list[int] = []
    dst: list[int] = []
    values: list[float] = []
    counts: list[float] = []
    declared: int | None = None
    widths: set[int] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            match = _RANKS_LINE.fullmatch(line)
            if match:
                declared = int(match.group(1))
            continue
        cells = line.replace(",", " ").split()
        widths.add(len(cells))
        try:
            if len(cells) not in (3, 4) or len(widths) > 1:
                raise ValueError
            a, b = int(cells[0]), int(cells[1])
            value = float(cells[2])
            count = float(cells[3]) if len(cells) == 4 else 1.0
        except ValueError:
            raise TrafficError(f"{origin or 'edge list'} line {number}: expected 'SRC DST BYTES [MESSAGES]' "
                               f"(whole rank numbers, the same columns on every line): {line[:60]!r}") from None
        if a < 0 or b < 0:
            raise TrafficError(f"{origin or 'edge list'} line {number}: rank numbers start at 0: {line[:60]!r}")
        src.append(a)
        dst.append(b)
        values.append(value)
        counts.append(count)
        if len(src) > MAX_NONZEROS:
            raise TrafficError(f"{origin or 'edge list'}: more than {MAX_NONZEROS} lines")
    if not src:
        raise TrafficError(f"{origin or 'edge list'}: no 'SRC DST BYTES' line")
    ranks = max(max(src), max(dst)) + 1
    if declared is not None:
        if declared < ranks:
            raise TrafficError(f"{origin or 'edge list'}: '# ranks {declared}' but an edge names rank {ranks - 1}")
        ranks = declared
    return from_entries(ranks, src, dst, values, counts if widths == {4} else None, origin=origin)


def dumps_edges(matrix: TrafficMatrix) -> str:
    b = sp.coo_matrix(matrix.bytes)
    m = None if matrix.messages is None else sp.csr_matrix(matrix.messages)
    lines = [f"# ranks {matrix.ranks}", f"# {matrix.origin}" if matrix.origin else "# linkscope traffic",
             "# src dst bytes" + (" messages" if m is not None else "")]
    counts = None if m is None else np.asarray(m[b.row, b.col]).ravel().tolist()

    def number(v: float) -> str:
        return str(int(v)) if float(v).is_integer() else repr(float(v))

    for k, (r, c, v) in enumerate(zip(b.row.tolist(), b.col.tolist(), b.data.tolist())):
        lines.append(f"{r} {c} {number(v)}" + (f" {number(counts[k])}" if counts is not None else ""))
    return "\n".join(lines) + "\n"


# ---- the two entries traffic.io calls ---------------------------------------------------------------
def load_sparse(path: Path, suffix: str) -> TrafficMatrix:
    if suffix == ".npz":
        return load_npz(path)
    return loads_edges(read_text(path, "traffic file"), origin=f"file:{path.name}")


def save_sparse(matrix: TrafficMatrix, path: Path, suffix: str) -> None:
    if suffix == ".npz":
        write_bytes_atomic(path, dump_npz(matrix))
    else:
        write_text_atomic(path, dumps_edges(matrix))


__all__ = ["SPARSE_SUFFIXES", "csr_fields", "csr_is_smaller", "csr_matrix_of", "is_csr_dict", "load_sparse",
           "loads_edges", "save_sparse"]
