"""What to move: transfers that run at the same time, independent of how they are moved.

A ``TransferPlan`` is one concurrent group: every transfer in it starts together (behind the
engine's start gate) and the group is repeated for statistics. Patterns (``patterns.registry``)
expand a named pattern against a Topology into a list of plans, or a waiver with its reason.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..endpoints import ALL, HOST, Endpoint

Role = Literal["measured", "interference"]
Aggregate = Literal["none", "per_dst", "per_src", "sum"]

__all__ = ["ALL", "HOST", "Endpoint", "Transfer", "TransferPlan", "Waiver"]


@dataclass(frozen=True)
class Transfer:
    """Move ``size_bytes`` from ``src`` to ``dst`` (GPU index or ``"host"``: the host memory of the
    NUMA node nearest the GPU end). ``role`` interference transfers only load the fabric."""

    src: Endpoint
    dst: Endpoint
    size_bytes: int
    role: Role = "measured"

    def __post_init__(self) -> None:
        if self.size_bytes < 0:
            from ..errors import ConfigError

            raise ConfigError(f"transfer size must not be negative: {self.size_bytes}")


@dataclass(frozen=True)
class TransferPlan:
    """One group of concurrent transfers with one method.

    Attributes:
        pattern: pattern key (``matrix``, ``pairs``, ``ring`` ...).
        direction: ``uni`` or ``bi`` (``bi`` plans hold both directions of each pair).
        method: transfer method key.
        transfers: the transfers that run together.
        aggregate: which totals to report besides each transfer: ``per_dst`` (all-to-one),
            ``per_src`` (one-to-all), ``sum`` (whole group), ``none``.
        label: short human label, e.g. ``0->1`` or ``ring(4)``.
    """

    pattern: str
    direction: str
    method: str
    transfers: tuple[Transfer, ...]
    aggregate: Aggregate = "none"
    label: str = ""

    @property
    def measured(self) -> tuple[Transfer, ...]:
        return tuple(t for t in self.transfers if t.role == "measured")

    def gpus(self) -> set[int]:
        return {e for t in self.transfers for e in (t.src, t.dst) if isinstance(e, int)}


@dataclass(frozen=True)
class Waiver:
    """Why a pattern or plan cannot run here (reported as status ``waived``, never as zero)."""

    reason: str
