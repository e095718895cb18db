"""Reading users' files: one-line errors for a missing or unreadable file, and strict JSON
(standard JSON has no NaN or Infinity; a missing value is null).

Every reader is bounded before it does the work: a text file larger than ``MAX_TEXT_BYTES`` is
refused from its size (``os.stat``) before it is read, and JSON nested deeper than
``MAX_JSON_DEPTH`` is refused (Python's decoder would raise RecursionError at about 1,000 levels,
and every walk over the document after it recurses too)."""
from __future__ import annotations

import functools
import json
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from .errors import SchemaError, UserError

MAX_TEXT_BYTES = 256 * 2**20
"""Largest text file read (256 MiB): parsed JSON takes about 4-5 times its text in memory, so this
keeps a reader well under 2 GB. Large traffic matrices belong in ``.npy`` files."""

MAX_JSON_DEPTH = 64
"""Deepest JSON nesting accepted. linkscope's own formats nest at most 6 levels (a run record's
measurement ``extra`` values); 64 leaves room for what users add to ``context``/``extra``."""


def _check_size(path: Path, what: str, max_bytes: int) -> None:
    try:
        st = os.stat(path)
    except OSError:
        return  # the read says what is wrong
    if stat.S_ISREG(st.st_mode) and st.st_size > max_bytes:
        raise UserError(f"{what} {path} is {st.st_size / 2**20:,.0f} MiB; linkscope reads at most "
                        f"{max_bytes / 2**20:,.0f} MiB of text", hint="large traffic matrices belong in a .npy file")


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
        raise UserError(f"cannot read {what} {path}: {exc.strerror}") from None


def require_regular_file(path: Path, what: str) -> None:
    """Refuse a missing path, and anything that is not a regular file (a folder, a FIFO that would
    block the reader), before a reader opens it."""
    if not path.is_file():
        raise UserError(f"{what} not found: {path}" if not path.exists() else f"{what} {path} is a folder, expected a file")


def read_text(path: str | Path, what: str, *, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The file's text; ``what`` names it in errors (``"topology file"``, ``"results file"``). A file
    larger than ``max_bytes`` is refused before it is read."""
    path = Path(path)
    _check_size(path, what, max_bytes)
    with user_file_errors(path, what):
        try:
            return path.read_text()
        except UnicodeDecodeError:
            raise UserError(f"{what} {path} is not a text file") from None


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
