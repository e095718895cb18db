"""Discovery backends: each says whether it can run here (probe) and, if so, what it found.

``probe()`` never raises for "not installed": it returns ``Availability(ok=False, reason=...)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Availability:
    """Whether a backend can be used here, and why not. ``version`` where known."""

    name: str
    ok: bool
    reason: str = ""
    version: str | None = None


class Discoverer(Protocol):
    name: str

    def probe(self) -> Availability: ...
