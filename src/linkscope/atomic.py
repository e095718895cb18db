"""Atomic file writes: a reader sees the old file or the new one, never half of one."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path | str, text: str) -> None:
    _write_atomic(Path(path), text, "w")


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    _write_atomic(Path(path), data, "wb")


def _write_atomic(path: Path, content: str | bytes, mode: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json_atomic(path: Path | str, data: Any) -> None:
    """JSON with ``allow_nan=False``: a NaN is a bug (missing values are null)."""
    write_text_atomic(path, json.dumps(data, indent=2, allow_nan=False) + "\n")
