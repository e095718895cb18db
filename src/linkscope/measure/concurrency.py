"""Concurrent patterns on a machine where some GPU pairs have no peer access (a 2-socket PCIe box).

A ring, all-to-one or all-to-all over every GPU needs peer access between the pairs it joins; one pair
without it waives the whole group. So the survey runs each pattern with ``ce`` on every *peer island*
(GPUs with peer access between each other, e.g. the GPUs of one socket) and once more over every GPU
with a host-staged method (``ce-nopeer``: the driver stages through host memory, what an application
gets without P2P), so such a machine still has a concurrency section.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..engines.base import TransferEngine
from ..patterns.base import Pattern
from ..patterns.methods import CE, CE_NOPEER, STAGED_PINNED
from ..topology.model import Topology
from .runner import BenchSpec, pair_peer_waiver


def peer_islands(gpus: Sequence[int], lacking: set[frozenset[int]]) -> list[tuple[int, ...]]:
    """GPUs grouped so that every pair within a group has peer access: each GPU, in order, joins the
    first group it has peer access with entirely, else starts one."""
    groups: list[list[int]] = []
    for g in gpus:
        for group in groups:
            if all(frozenset((g, h)) not in lacking for h in group):
                group.append(g)
                break
        else:
            groups.append([g])
    return [tuple(group) for group in groups]


def _span(gpus: Sequence[int]) -> str:
    if len(gpus) > 2 and list(gpus) == list(range(gpus[0], gpus[-1] + 1)):
        return f"GPUs {gpus[0]}-{gpus[-1]}"
    return "GPUs " + ",".join(str(g) for g in gpus)


def concurrent_specs(engine: TransferEngine, topology: Topology, pattern: Pattern, offered: set[str],
                     method: str = CE.key) -> list[tuple[str, BenchSpec]]:
    """(step name, spec) for one concurrent pattern: over every GPU where every pair has peer access;
    else on each peer island large enough for the pattern, plus over every GPU with the host-staged
    method the engine offers (``ce-nopeer``, else ``staged-pinned``)."""
    gpus = list(range(topology.gpu_count))
    lacking = {frozenset((a, b)) for i, a in enumerate(gpus) for b in gpus[i + 1:]
               if pair_peer_waiver(engine, topology, a, b) is not None}
    if not lacking:
        return [(f"{method} {pattern.key}", BenchSpec(pattern, (method,), "uni"))]
    need = getattr(pattern, "min_gpus", 2)
    out = [(f"{method} {pattern.key} {_span(island)}", BenchSpec(pattern, (method,), "uni", gpus=island))
           for island in peer_islands(gpus, lacking) if len(island) >= need]
    staged = next((m for m in (CE_NOPEER.key, STAGED_PINNED.key) if m in offered), None)
    if staged is not None:
        out.append((f"{staged} {pattern.key}", BenchSpec(pattern, (staged,), "uni")))
    return out
