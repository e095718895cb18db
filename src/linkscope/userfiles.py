"""Reading users' files: one-line errors for a missing or unreadable file, and strict JSON
(standard JSON has no NaN or Infinity; a missing value is null)."""
from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .errors import SchemaError, UserError


def read_text(path: str | Path, what: str) -> str:
    """The file's text; ``what`` names it in errors (``"topology file"``, ``"results file"``)."""
    path = Path(path)
    try:
        return path.read_text()
    except FileNotFoundError:
        raise UserError(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise UserError(f"{what} {path} is a folder, expected a file") from None
    except UnicodeDecodeError:
        raise UserError(f"{what} {path} is not a text file") from None
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror}") from None


class _NonFinite(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


def loads_strict(text: str, origin: str) -> Any:
    """``json.loads`` that refuses NaN / Infinity (Python accepts them, JSON does not)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{origin} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except _NonFinite as exc:
        raise SchemaError(f"{origin} is not valid JSON: {exc} is not a number JSON allows (use null for a missing value)") from None


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
            except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as exc:
                raise SchemaError(f"malformed {what}: a value has the wrong type or form ({type(exc).__name__}: "
                                  f"{str(exc)[:120]})") from exc
        return guarded  # type: ignore[return-value]
    return wrap
