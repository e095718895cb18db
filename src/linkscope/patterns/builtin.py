"""The built-in patterns: which transfers run at the same time.

>>> from linkscope.topology.synthetic import synthetic_topology
>>> topo = synthetic_topology("nvswitch:4")
>>> [p.label for p in MATRIX.plan(topo, (0, 1, 2), 1024, "ce", "uni")][:3]
['0->1', '0->2', '1->0']
>>> [p.label for p in MATRIX.plan(topo, (0, 1, 2), 1024, "ce", "bi")]
['0<->1', '0<->2', '1<->2']
>>> [(t.src, t.dst) for t in RING.plan(topo, (0, 1, 2, 3), 8, "ce", "uni")[0].transfers]
[(0, 1), (1, 2), (2, 3), (3, 0)]
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..topology.model import Topology
from .base import both_ways, check_direction, host_kind, host_method_waiver, one_way, peer_method_waiver, too_few_gpus
from .methods import D2H as D2H_METHOD
from .methods import LOCAL as LOCAL_METHOD
from .methods import endpoint_reason
from .plan import HOST, Aggregate, Transfer, TransferPlan, Waiver

if TYPE_CHECKING:
    from .methods import Method as MethodInfo


@dataclass(frozen=True)
class _PeerPattern:
    """Shared checks of GPU-to-GPU patterns."""

    key: str
    description: str
    min_gpus: int = 2

    def applies_to(self, topology: Topology, gpus: Sequence[int], method_info: MethodInfo | None) -> Waiver | None:
        return too_few_gpus(self.key, gpus, self.min_gpus) or peer_method_waiver(self.key, method_info)


@dataclass(frozen=True)
class MatrixPattern(_PeerPattern):
    """Every ordered pair, one pair at a time (``bi``: both directions of each unordered pair at once)."""

    def plan(self, topology: Topology, gpus: Sequence[int], size_bytes: int, method: str, direction: str) -> list[TransferPlan]:
        check_direction(direction)
        plans = []
        if direction == "uni":
            for a in gpus:
                for b in gpus:
                    if a != b:
                        plans.append(TransferPlan(self.key, "uni", method, one_way([(a, b)], size_bytes), "none", f"{a}->{b}"))
        else:
            for i, a in enumerate(gpus):
                for b in gpus[i + 1:]:
                    plans.append(TransferPlan(self.key, "bi", method, both_ways([(a, b)], size_bytes), "sum", f"{a}<->{b}"))
        return plans


@dataclass(frozen=True)
class PairsPattern(_PeerPattern):
    """Disjoint pairs at once: 0<->1, 2<->3 ... in selection order (an odd GPU out sits idle)."""

    def plan(self, topology: Topology, gpus: Sequence[int], size_bytes: int, method: str, direction: str) -> list[TransferPlan]:
        check_direction(direction)
        pairs = [(gpus[i], gpus[i + 1]) for i in range(0, len(gpus) - 1, 2)]
        transfers = one_way(pairs, size_bytes) if direction == "uni" else both_ways(pairs, size_bytes)
        label = " ".join(f"{a}{'->' if direction == 'uni' else '<->'}{b}" for a, b in pairs)
        return [TransferPlan(self.key, direction, method, transfers, "sum", f"pairs({label})")]


@dataclass(frozen=True)
class RingPattern(_PeerPattern):
    """Each GPU sends to the next in selection order, all at once (``bi``: to both neighbours)."""

    def plan(self, topology: Topology, gpus: Sequence[int], size_bytes: int, method: str, direction: str) -> list[TransferPlan]:
        check_direction(direction)
        n = len(gpus)
        pairs = [(gpus[i], gpus[(i + 1) % n]) for i in range(n)]
        if n == 2:  # a ring of two is one pair; do not send the same direction twice
            pairs = pairs[:1] if direction == "bi" else pairs
        transfers = one_way(pairs, size_bytes) if direction == "uni" else both_ways(pairs, size_bytes)
        return [TransferPlan(self.key, direction, method, transfers, "sum", f"ring({n})")]


@dataclass(frozen=True)
class HubPattern(_PeerPattern):
    """Every other GPU with one hub GPU at once; one group per hub. ``to_hub`` (all-to-one): the others
    send to the hub, total per receiver; else (one-to-all) the hub sends to the others, total per
    sender. ``bi``: both directions of every pair, total of the group."""

    to_hub: bool = True

    def plan(self, topology: Topology, gpus: Sequence[int], size_bytes: int, method: str, direction: str) -> list[TransferPlan]:
        check_direction(direction)
        plans = []
        for hub in gpus:
            others = [g for g in gpus if g != hub]
            pairs = [(g, hub) for g in others] if self.to_hub else [(hub, g) for g in others]
            if direction == "uni":
                aggregate: Aggregate = "per_dst" if self.to_hub else "per_src"
                label = f"all->{hub}" if self.to_hub else f"{hub}->all"
                plans.append(TransferPlan(self.key, "uni", method, one_way(pairs, size_bytes), aggregate, label))
            else:
                label = f"all<->{hub}" if self.to_hub else f"{hub}<->all"
                plans.append(TransferPlan(self.key, "bi", method, both_ways(pairs, size_bytes), "sum", label))
        return plans


@dataclass(frozen=True)
class AllToAllPattern(_PeerPattern):
    """Every ordered pair at once (already both directions; ``direction`` is only recorded)."""

    def plan(self, topology: Topology, gpus: Sequence[int], size_bytes: int, method: str, direction: str) -> list[TransferPlan]:
        check_direction(direction)
        pairs = [(a, b) for a in gpus for b in gpus if a != b]
        return [TransferPlan(self.key, direction, method, one_way(pairs, size_bytes), "sum", f"all-to-all({len(gpus)})")]


@dataclass(frozen=True)
class HostGroupPattern:
    """Every GPU with host memory at once (``to_host``: GPU -> host, else host -> GPU); ``bi`` adds the
    other direction. "host" is the host memory of the NUMA node nearest each GPU."""

    key: str
    description: str
    to_host: bool

    def applies_to(self, topology: Topology, gpus: Sequence[int], method_info: MethodInfo | None) -> Waiver | None:
        if not gpus:
            return Waiver(f"pattern {self.key!r} needs at least 1 GPU; none selected")
        return host_method_waiver(self.key, method_info, to_host=self.to_host)

    def plan(self, topology: Topology, gpus: Sequence[int], size_bytes: int, method: str, direction: str) -> list[TransferPlan]:
        check_direction(direction)
        pairs = [(g, HOST) if self.to_host else (HOST, g) for g in gpus]
        transfers = one_way(pairs, size_bytes) if direction == "uni" else both_ways(pairs, size_bytes)
        return [TransferPlan(self.key, direction, method, transfers, "sum", f"{self.key}({len(gpus)})")]


@dataclass(frozen=True)
class HostReferencePattern:
    """Reference line: each GPU with its nearest host memory, one GPU at a time. The method sets the
    direction (``h2d*``: host -> GPU, ``d2h*``: GPU -> host, any other host-capable method: host -> GPU);
    ``bi`` runs both directions of one GPU at once."""

    key: str = "host"
    description: str = "each GPU with its nearest host memory, one GPU at a time (h2d/d2h reference lines)"

    def applies_to(self, topology: Topology, gpus: Sequence[int], method_info: MethodInfo | None) -> Waiver | None:
        if not gpus:
            return Waiver("pattern 'host' needs at least 1 GPU; none selected")
        return host_method_waiver(self.key, method_info, to_host=None)

    def plan(self, topology: Topology, gpus: Sequence[int], size_bytes: int, method: str, direction: str) -> list[TransferPlan]:
        check_direction(direction)
        to_host = host_kind(method) == D2H_METHOD.key
        plans = []
        for g in gpus:
            a, b = (g, HOST) if to_host else (HOST, g)
            if direction == "uni":
                plans.append(TransferPlan(self.key, "uni", method, (Transfer(a, b, size_bytes),), "none",
                                          f"{'host' if a == HOST else a}->{'host' if b == HOST else b}"))
            else:
                plans.append(TransferPlan(self.key, "bi", method, both_ways([(a, b)], size_bytes), "sum", f"{g}<->host"))
        return plans


@dataclass(frozen=True)
class LocalPattern:
    """Reference line: a copy within each GPU's own memory, one GPU at a time."""

    key: str = "local"
    description: str = "device-local copy on each GPU, one at a time (reference line)"

    def applies_to(self, topology: Topology, gpus: Sequence[int], method_info: MethodInfo | None) -> Waiver | None:
        if not gpus:
            return Waiver("pattern 'local' needs at least 1 GPU; none selected")
        if method_info is not None and endpoint_reason(method_info, 0, 0):
            return Waiver(f"pattern 'local' copies within one GPU; method {method_info.key!r} does not "
                          f"(use {LOCAL_METHOD.key!r})")
        return None

    def plan(self, topology: Topology, gpus: Sequence[int], size_bytes: int, method: str, direction: str) -> list[TransferPlan]:
        check_direction(direction)
        return [TransferPlan(self.key, "uni", method, (Transfer(g, g, size_bytes),), "none", f"{g}->{g}") for g in gpus]


MATRIX = MatrixPattern("matrix", "every ordered GPU pair, one pair at a time (bi: both directions of a pair at once)")
PAIRS = PairsPattern("pairs", "disjoint pairs at once: 0<->1, 2<->3 ... (total of the group)")
RING = RingPattern("ring", "each GPU to the next, all at once (total of the group)")
ALL_TO_ONE = HubPattern("all-to-one", "every other GPU to one receiver at once; one group per receiver (total per receiver)", to_hub=True)
ONE_TO_ALL = HubPattern("one-to-all", "one sender to every other GPU at once; one group per sender (total per sender)", to_hub=False)
ALL_TO_ALL = AllToAllPattern("all-to-all", "every ordered pair at once (total of the group)")
ALL_TO_HOST = HostGroupPattern("all-to-host", "every GPU to host memory at once (total)", to_host=True)
HOST_TO_ALL = HostGroupPattern("host-to-all", "host memory to every GPU at once (total)", to_host=False)
HOST_REFERENCE = HostReferencePattern()
LOCAL = LocalPattern()

BUILTIN = (MATRIX, PAIRS, RING, ALL_TO_ONE, ONE_TO_ALL, ALL_TO_ALL, ALL_TO_HOST, HOST_TO_ALL, HOST_REFERENCE, LOCAL)
