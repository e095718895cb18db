"""One schema per hand-editable format, checked before the document is used.

Run records, mappings and traffic files are JSON a user may edit by hand; their readers turn them
into typed objects and trust the values afterwards (a ``size_bytes`` of 1e30 reaches NumPy, a
negative bandwidth reaches a division, a ``/`` in ``direction`` reaches a file name, a newline in a
device name reaches an environment variable). Each format declares its fields once, with these
building blocks, and ``validate`` refuses the first value that breaks them, naming its JSON path:

* ``Number``: finite, in ``low .. high``, whole where ``integer``;
* ``Text``: a string without control characters (``name=True``: a one-word name: no whitespace, no
  ``/`` or ``\\``, at most 128 characters), from ``choices`` where the format has a table;
* ``Flag`` (true/false), ``List`` (of one spec, at most ``max_len`` items), ``Record`` (named
  fields, and ``values`` for maps whose keys are names), ``OneOf`` (the first spec that fits),
  ``Free`` (any JSON: only its strings are checked), ``Skip`` (a matrix the reader checks itself).

Every string anywhere in a checked document, free-form fields included, is refused when it holds a
control character other than tab, newline and carriage return (an ESC sequence in a finding would
drive the terminal that prints it). Fields a format does not name are checked as ``Free``: formats
are additive.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import SchemaError

__all__ = ["Flag", "Free", "List", "Number", "OneOf", "Record", "Skip", "Spec", "Text", "validate"]

_FREE_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAME_BAD = re.compile(r"[\s/\\\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Number:
    low: float = 0.0
    high: float = 2.0**63
    integer: bool = False
    null: bool = False


@dataclass(frozen=True)
class Text:
    choices: tuple[str, ...] | None = None
    name: bool = False
    max_len: int = 4096
    null: bool = False


@dataclass(frozen=True)
class Flag:
    null: bool = False


@dataclass(frozen=True)
class List:
    item: Spec
    max_len: int | None = None
    null: bool = False


@dataclass(frozen=True)
class Record:
    fields: Mapping[str, Spec] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    values: Spec | None = None  # a map: every value (keys are checked as names)
    null: bool = False


@dataclass(frozen=True)
class OneOf:
    options: tuple[Spec, ...]
    label: str = "one of the allowed forms"  # what the value must be, in words
    null: bool = False


@dataclass(frozen=True)
class Free:
    null: bool = True


@dataclass(frozen=True)
class Skip:
    """A value the format's own reader checks element by element (a dense N x N matrix: walking
    67 million numbers here would cost more than the reader's vectorised checks)."""

    null: bool = True


Spec = Number | Text | Flag | List | Record | OneOf | Free | Skip


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _key(path: str) -> str:
    """The last name of a JSON path (``$.measurements[0].size_bytes`` -> ``size_bytes``)."""
    if path == "$":
        return "the file's top level"
    return re.split(r"[.\[]", path.rstrip("]"))[-1].rstrip("]") or "the value"


def _fail(what: str, message: str, path: str) -> SchemaError:
    return SchemaError(f"{what}: {_key(path)} {message}", path=path)


def _check_free(value: Any, what: str, path: str) -> None:
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _FREE_CONTROL.search(item):
                raise _fail(what, f"holds a control character ({_show(item)})", where)
        elif isinstance(item, float) and not math.isfinite(item):
            raise _fail(what, f"must be a finite number, got {item}", where)
        elif isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str) and _FREE_CONTROL.search(key):
                    raise _fail(what, f"has a key with a control character ({_show(key)})", where)
                stack.append((sub, f"{where}.{key}"))
        elif isinstance(item, list):
            stack.extend((sub, f"{where}[{i}]") for i, sub in enumerate(item))


def _check_text(value: Any, spec: Text, what: str, path: str) -> None:
    if not isinstance(value, str):
        raise _fail(what, f"must be text, got {_show(value)}", path)
    if len(value) > (128 if spec.name else spec.max_len):
        raise _fail(what, f"is {len(value)} characters long; at most {128 if spec.name else spec.max_len}", path)
    bad = _NAME_BAD if spec.name else _ANY_CONTROL
    found = bad.search(value)
    if found:
        kind = "a control character" if _ANY_CONTROL.match(found.group()) else f"{found.group()!r}"
        raise _fail(what, f"must be {'a one-word name' if spec.name else 'one line of text'}, got {_show(value)} "
                          f"(it holds {kind})", path)
    if spec.choices is not None and value not in spec.choices:
        raise _fail(what, f"must be one of {', '.join(spec.choices)}, got {_show(value)}", path)


def _check_number(value: Any, spec: Number, what: str, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(what, f"must be a number, got {_show(value)}", path)
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(what, f"must be a finite number, got {value}", path)
    if spec.integer and not (isinstance(value, int) or float(value).is_integer()):
        raise _fail(what, f"must be a whole number, got {value}", path)
    if not spec.low <= value <= spec.high:
        raise _fail(what, f"must be between {spec.low:g} and {spec.high:g}, got {value:g}", path)


def validate(data: Any, spec: Spec, what: str, path: str = "$") -> None:
    """Raise SchemaError (``what: message at $.path``) for the first value that breaks ``spec``."""
    if data is None:
        if spec.null:
            return
        raise _fail(what, "must have a value, got null", path)
    if isinstance(spec, Skip):
        return
    if isinstance(spec, Free):
        _check_free(data, what, path)
    elif isinstance(spec, Number):
        _check_number(data, spec, what, path)
    elif isinstance(spec, Text):
        _check_text(data, spec, what, path)
    elif isinstance(spec, Flag):
        if not isinstance(data, bool):
            raise _fail(what, f"must be true or false, got {_show(data)}", path)
    elif isinstance(spec, List):
        if not isinstance(data, list):
            raise _fail(what, f"must be a list, got {_show(data)}", path)
        if spec.max_len is not None and len(data) > spec.max_len:
            raise _fail(what, f"has {len(data):,} items; at most {spec.max_len:,}", path)
        for i, item in enumerate(data):
            validate(item, spec.item, what, f"{path}[{i}]")
    elif isinstance(spec, Record):
        if not isinstance(data, dict):
            raise _fail(what, f"must be an object, got {_show(data)}", path)
        for key in spec.required:
            if key not in data:
                raise SchemaError(f"{what}: missing field {key!r}", path=path)
        for key, value in data.items():
            sub = spec.fields.get(key)
            if sub is None and spec.values is not None:
                _check_text(key, Text(name=True), what, f"{path}.{key}")
                sub = spec.values
            validate(value, sub if sub is not None else Free(), what, f"{path}.{key}")
    elif isinstance(spec, OneOf):
        for option in spec.options:
            try:
                validate(data, option, what, path)
                return
            except SchemaError:
                continue
        raise _fail(what, f"must be {spec.label}, got {_show(data)}", path)
    else:  # pragma: no cover - every Spec kind is handled above
        raise TypeError(f"not a schema spec: {spec!r}")
