"""A traffic matrix from a NumPy ``.npy`` file, judged from its header before any data is read.

The ``.npy`` header (NumPy's format description, ``numpy.lib.format``) states the array's shape,
dtype and order in a few hundred bytes. This reader reads only that header
(``read_magic`` / ``read_array_header_1_0`` / ``read_array_header_2_0``) and refuses, before a
single element is read or mapped:

* a file that is not ``.npy`` (magic), or a header NumPy cannot parse;
* an array that is not 2-D and square (a 3-D array of 10^12 elements, a 1-D array of 3 GB);
* more ranks than ``check_rank_count`` allows;
* a dtype that holds Python objects (pickles: never loaded) or is not a plain number/bool/text
  type (the matrix's own checks name complex, bool and text values);
* a file shorter than the header's shape needs (a truncated copy).

Only then is the array read (memory-mapped, then copied once into the matrix).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..userfiles import open_user_file
from .matrix import TrafficError, check_rank_count

__all__ = ["read_npy_header", "read_npy_matrix"]

_MAGIC = b"\x93NUMPY"
_ANY_SIZE = 2**62  # the header's shape, not the file's size, bounds what is read (checked below)


def read_npy_header(path: Path) -> tuple[tuple[int, ...], np.dtype, int]:
    """(shape, dtype, offset of the data) of a ``.npy`` file, from its header alone."""
    fmt = np.lib.format
    try:
        with open_user_file(path, "traffic file", max_bytes=_ANY_SIZE) as handle:
            if handle.read(6) != _MAGIC:
                raise TrafficError(f"{path}: not a NumPy .npy file (it does not start with the .npy header)")
            handle.seek(0)
            version = fmt.read_magic(handle)
            if version == (1, 0):
                shape, _, dtype = fmt.read_array_header_1_0(handle)
            elif version in ((2, 0), (3, 0)):
                shape, _, dtype = fmt.read_array_header_2_0(handle)
            else:
                raise TrafficError(f"{path}: .npy format version {version[0]}.{version[1]} is not one NumPy writes")
            offset = handle.tell()
    except (ValueError, SyntaxError, TypeError, EOFError) as exc:
        raise TrafficError(f"{path}: not a plain NumPy array file (its header: {str(exc)[:100]})") from None
    return tuple(int(n) for n in shape), np.dtype(dtype), offset


def read_npy_matrix(path: Path | str) -> np.ndarray:
    """The N x N array of a ``.npy`` traffic file, after its header passed every check above."""
    path = Path(path)
    shape, dtype, offset = read_npy_header(path)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise TrafficError(f"{path}: the array is {len(shape)}-D of shape {shape}; a traffic matrix is a square "
                           "N x N array (row = sender)")
    check_rank_count(shape[0], str(path))
    if dtype.hasobject:
        raise TrafficError(f"{path}: not a plain NumPy array file: it holds Python objects (a pickle), "
                           "which linkscope does not load",
                           hint="save byte counts as numbers: np.save(path, matrix.astype(float))")
    if dtype.kind not in "biufcUS":
        raise TrafficError(f"{path}: the array holds {dtype} values; a traffic matrix holds byte counts")
    need = offset + shape[0] * shape[1] * dtype.itemsize
    size = path.stat().st_size
    if size < need:
        raise TrafficError(f"{path}: the file is {size:,} bytes but its header describes {need:,} (truncated?)")
    try:
        return np.array(np.load(path, allow_pickle=False, mmap_mode="r"))
    except (ValueError, EOFError, OSError) as exc:
        raise TrafficError(f"{path}: not a plain NumPy array file ({exc})") from None
