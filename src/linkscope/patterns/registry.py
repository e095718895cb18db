"""Patterns by stable key, and resolution of a user's ``--pattern`` value (a key or a file).

>>> pattern_keys()[:3]
('matrix', 'pairs', 'ring')
"""
from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from .base import Pattern
from .builtin import BUILTIN
from .pattern_file import load_pattern_file

_PATTERNS: dict[str, Pattern] = {p.key: p for p in BUILTIN}


def pattern_keys() -> tuple[str, ...]:
    return tuple(_PATTERNS)


def patterns() -> tuple[Pattern, ...]:
    return tuple(_PATTERNS.values())


def get_pattern(key: str) -> Pattern:
    try:
        return _PATTERNS[key]
    except KeyError:
        raise UserError(f"unknown pattern {key!r}",
                        hint=f"valid patterns: {', '.join(_PATTERNS)}, or a pattern file (see: linkscope bench --list)") from None


def resolve_pattern(value: str) -> Pattern:
    """A built-in key, else a path to a pattern file (JSON or CSV), else a one-line UserError."""
    if value in _PATTERNS:
        return _PATTERNS[value]
    if Path(value).is_file():
        return load_pattern_file(value)
    if any(sep in value for sep in ("/", "\\", ".")):
        raise UserError(f"pattern file not found: {value}",
                        hint=f"valid patterns: {', '.join(_PATTERNS)}, or an existing pattern file")
    return get_pattern(value)
