"""Reading users' files: one-line errors for a missing or unreadable file, and strict JSON
(standard JSON has no NaN or Infinity; a missing value is null).

Every reader is bounded before it does the work: a text file larger than ``MAX_TEXT_BYTES`` is
refused from its size (``os.stat``) before it is read, and JSON nested deeper than
``MAX_JSON_DEPTH`` is refused (Python's decoder would raise RecursionError at about 1,000 levels,
and every walk over the document after it recurses too).

``open_user_file`` is the one way a user's file is opened, by every reader: it opens without
blocking (a FIFO with no writer would hang ``open``), refuses anything that is not a regular file
(FIFO, device such as /dev/zero, socket, folder) from ``fstat`` of the opened descriptor (no race
between the check and the read), and refuses a file larger than the reader's cap before a byte
is read. ``read_bytes`` / ``read_text`` also stop reading at the cap (a file that grows, or a
/proc file that reports size 0). ``extract_tar_bounded`` and ``read_zip_members`` bound
decompression: the expanded bytes are counted from the archive's own headers before each member
is written or read, and the archive is refused before the cap is passed."""
from __future__ import annotations

import fcntl
import functools
import json
import os
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

from .atomic import file_kind
from .errors import SchemaError, UserError

MAX_TEXT_BYTES = 256 * 2**20
"""Largest text file read (256 MiB): parsed JSON takes about 4-5 times its text in memory, so this
keeps a reader well under 2 GB. Large traffic matrices belong in ``.npy`` files."""

MAX_JSON_DEPTH = 64
"""Deepest JSON nesting accepted. linkscope's own formats nest at most 6 levels (a run record's
measurement ``extra`` values); 64 leaves room for what users add to ``context``/``extra``."""


MAX_ARCHIVE_EXPANDED_BYTES = 256 * 2**20
"""Most bytes an archive a user gives (a recording's ``sysfs.tar.gz``, a ``.npz``) may expand to
(256 MiB, as for text): a recorded sysfs tree is about 1 MiB (tests/fixtures/machines/*), and 256 MiB
of ``.npz`` members hold about 16 million talking pairs as CSR (int32 indices, float64 values)."""

MAX_ARCHIVE_MEMBERS = 100_000
"""Most members an archive may hold (a recorded sysfs tree has a few thousand)."""


def _mib(value: int) -> str:
    return f"{value / 2**20:,.0f} MiB" if value >= 2**20 else f"{value:,} bytes"


def _too_large(path: Path, what: str, size: int | str, max_bytes: int) -> UserError:
    size_text = size if isinstance(size, str) else _mib(size)
    return UserError(f"{what} {path} is {size_text}; linkscope reads at most {_mib(max_bytes)} of it",
                     hint="large traffic matrices belong in a .npy file")


def _not_regular(path: Path, what: str, mode: int) -> UserError:
    if stat.S_ISDIR(mode):
        return UserError(f"{what} {path} is a folder, expected a file")
    return UserError(f"{what} {path} is {file_kind(mode) or 'not a regular file'}, not a regular file; "
                     "linkscope reads regular files only")


@contextmanager
def user_file_errors(path: str | Path, what: str) -> Iterator[None]:
    """The one translation of a user file's OS errors into one line: missing, a folder, unreadable.
    ``what`` names the file (``"traffic file"``, ``"results file"``)."""
    try:
        yield
    except FileNotFoundError:
        raise UserError(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise UserError(f"{what} {path} is a folder, expected a file") from None
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def open_regular(path: str | Path, what: str, *, max_bytes: int = MAX_TEXT_BYTES) -> IO[bytes]:
    """``path`` opened for binary reading, after it proved a regular file of at most ``max_bytes``
    (see the module text); a UserError when it is not, the OSError itself when it cannot be opened
    (``open_user_file`` turns that into one line too). The caller closes it."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, what, st.st_mode)
        if st.st_size > max_bytes:
            raise _too_large(path, what, st.st_size, max_bytes)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_user_file(path: str | Path, what: str, *, max_bytes: int = MAX_TEXT_BYTES) -> IO[bytes]:
    """``open_regular`` with its OS errors as one line (missing, unreadable): the one way a reader
    opens a user's file (``with open_user_file(path, "traffic file") as handle``)."""
    with user_file_errors(path, what):
        return open_regular(path, what, max_bytes=max_bytes)


def require_regular_file(path: Path, what: str, *, max_bytes: int = MAX_TEXT_BYTES) -> None:
    """Refuse a missing path, anything that is not a regular file (a folder, a FIFO that would block
    the reader, a device) and a file over ``max_bytes``, before a reader that opens it by name
    (NumPy, SciPy) does."""
    open_user_file(path, what, max_bytes=max_bytes).close()


def read_bytes(path: str | Path, what: str, *, max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The file's bytes, read through ``open_user_file``; never more than ``max_bytes`` are read."""
    path = Path(path)
    with open_user_file(path, what, max_bytes=max_bytes) as handle, user_file_errors(path, what):
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(path, what, f"more than {_mib(max_bytes)}", max_bytes)
    return data


def read_text(path: str | Path, what: str, *, max_bytes: int = MAX_TEXT_BYTES, errors: str = "strict") -> str:
    """The file's text (UTF-8); ``what`` names it in errors (``"topology file"``, ``"results file"``).
    A file that is not regular or larger than ``max_bytes`` is refused before it is read;
    ``errors="replace"`` for machine outputs whose odd bytes do not matter (lspci dumps)."""
    path = Path(path)
    data = read_bytes(path, what, max_bytes=max_bytes)
    try:
        return data.decode("utf-8", errors=errors).replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as open() reads
    except UnicodeDecodeError:
        raise UserError(f"{what} {path} is not a text file") from None


def extract_tar_bounded(archive: str | Path, destination: Path, what: str, *,
                        max_bytes: int = MAX_ARCHIVE_EXPANDED_BYTES, max_members: int = MAX_ARCHIVE_MEMBERS) -> None:
    """Extract a (gzip-compressed) tar archive into ``destination``, streaming: each member's size
    comes from its header and is added up before the member is written, so an archive that would
    expand past ``max_bytes`` (or hold more than ``max_members``) is refused having written at most
    ``max_bytes``. Members that would land outside ``destination``, device files and links out of it
    are refused (the ``data`` extraction filter)."""
    archive = Path(archive)
    total = 0
    count = 0
    with open_user_file(archive, what, max_bytes=max_bytes) as handle:
        try:
            with tarfile.open(fileobj=handle, mode="r|*") as tar:
                for member in tar:
                    count += 1
                    total += max(member.size, 0)
                    if count > max_members:
                        raise UserError(f"{what} {archive} holds more than {max_members:,} members; "
                                        "not a recording linkscope wrote")
                    if total > max_bytes:
                        raise UserError(f"{what} {archive} expands to more than {_mib(max_bytes)}; linkscope "
                                        f"extracts at most {_mib(max_bytes)} (a recording's tree is about 1 MiB)")
                    tar.extract(member, destination, filter="data")
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
            raise UserError(f"cannot read {what} {archive}: {exc}") from None


def read_zip_members(archive: str | Path, what: str, *,
                     max_bytes: int = MAX_ARCHIVE_EXPANDED_BYTES) -> dict[str, bytes]:
    """Every member of a zip archive (``.npz``), by name, read whole. The expanded
    sizes the archive declares are added up and refused above ``max_bytes`` before anything is
    decompressed, and each member is read no further than its declared size (zipfile stops there and
    checks the CRC), so a member that lies about its size cannot expand past the cap either."""
    archive = Path(archive)
    with open_user_file(archive, what, max_bytes=max_bytes) as handle:
        try:
            with zipfile.ZipFile(handle) as zf:
                infos = zf.infolist()
                if len(infos) > MAX_ARCHIVE_MEMBERS:
                    raise UserError(f"{what} {archive} holds {len(infos):,} members")
                declared = sum(info.file_size for info in infos)
                if declared > max_bytes:
                    raise UserError(f"{what} {archive} expands to {_mib(declared)}; linkscope reads at most "
                                    f"{_mib(max_bytes)} of it")
                out: dict[str, bytes] = {}
                for info in infos:
                    with zf.open(info) as member:
                        data = member.read(info.file_size + 1)
                    if len(data) > info.file_size:
                        raise UserError(f"{what} {archive}: member {info.filename} is longer than it declares")
                    out[info.filename] = data
                return out
        except zipfile.BadZipFile as exc:
            raise UserError(f"{what} {archive} is not a readable zip archive ({exc})") from None
        except (OSError, EOFError, ValueError, NotImplementedError) as exc:
            raise UserError(f"cannot read {what} {archive}: {exc}") from None


class _NonFinite(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


def json_depth_over(data: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when ``data`` (parsed JSON) nests lists/objects deeper than ``limit``; iterative, so it
    never recurses itself."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        values = item.values() if isinstance(item, dict) else item
        for value in values:
            if isinstance(value, (list, dict)):
                if depth + 1 > limit:
                    return True
                stack.append((value, depth + 1))
    return False


def loads_strict(text: str, origin: str) -> Any:
    """``json.loads`` that refuses NaN / Infinity (Python accepts them, JSON does not) and nesting
    deeper than ``MAX_JSON_DEPTH``."""
    too_deep = False
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:  # Python's decoder gives up at about 1,000 levels
        data, too_deep = None, True
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{origin} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except _NonFinite as exc:
        raise SchemaError(f"{origin} is not valid JSON: {exc} is not a number JSON allows (use null for a missing value)") from None
    if too_deep or (isinstance(data, (list, dict)) and json_depth_over(data)):
        raise SchemaError(f"{origin}: JSON nested more than {MAX_JSON_DEPTH} levels deep; no linkscope file nests "
                          "like that")
    return data


_F = TypeVar("_F", bound=Callable[..., Any])


def refuse_malformed(what: str) -> Callable[[_F], _F]:
    """Decorator for a parser of a user's document: a value of a shape its explicit checks did not
    foresee (a list where a number belongs, a number where a list belongs) becomes a one-line
    SchemaError naming ``what`` instead of a TypeError traceback. The explicit checks, with their JSON
    paths, still say it better where they exist; this is the net under them (fuzzed in
    tests/test_parsers_fuzz.py)."""
    def wrap(parse: _F) -> _F:
        @functools.wraps(parse)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return parse(*args, **kwargs)
            except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
                raise SchemaError(f"malformed {what}: a value has the wrong type or form ({type(exc).__name__}: "
                                  f"{str(exc)[:120]})") from exc
        return guarded  # type: ignore[return-value]
    return wrap
