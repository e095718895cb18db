"""RCCL's rings on AMD Instinct GPUs, replayed from RCCL's source (ROCm/rccl, tag rocm-6.2.2).

NCCL's tuner (``model.nccl_tuning``) does not describe AMD GPUs; RCCL, its fork, chooses differently
where it matters most for large collectives: the rings.

* On a node whose GPUs match one of RCCL's hand-made machine models (src/graph/rome_models.cc), RCCL
  takes that model's rings (``ringBase``) instead of searching (``parseRome4P2H`` / ``parseChordalRing``
  match the node's GPU connectivity and NUMA pattern against the table, rome_models.cc:1495 and :1420
  permuteGpuIds, called from search.cc:959-969). For
  8 x MI300X (gfx942, every pair one xGMI link, no NIC in the pattern) that is ``rome_model_79``
  (rome_models.cc:549-561): 14 distinct rings (each listed twice, 28 channels), 7 and their reverses,
  which together use each of the 56 directed xGMI links exactly twice, so an allreduce drives all seven
  links of every GPU at once.
* Elsewhere RCCL's graph search (src/graph/search.cc, as NCCL's) looks for as many rings as the links
  carry; ``rings`` approximates it with arc-disjoint Hamiltonian cycles over the direct xGMI links (each
  with its reverse where that is free too), so the MI250X's 8 GCDs get the rings their links allow rather
  than one ring over one link.

The links' usable rate is the topology's (its ``link_efficiency``: 48 of 64 GB/s per MI300X xGMI link per
AMD's "Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X", ROCm blog, 2025-03-02);
the rings' flows share them in the fabric model.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# rome_models.cc:559 (rocm-6.2.2), rome_model_79 ringBase, each distinct ring once (the string repeats them)
ROME_MODEL_79_RINGS: tuple[tuple[int, ...], ...] = (
    (0, 1, 2, 3, 4, 5, 6, 7), (0, 1, 2, 3, 4, 5, 7, 6), (0, 2, 4, 1, 3, 6, 5, 7), (0, 2, 4, 6, 1, 7, 3, 5),
    (0, 3, 1, 5, 2, 7, 4, 6), (0, 3, 5, 1, 6, 2, 7, 4), (0, 4, 1, 7, 3, 6, 2, 5), (7, 6, 5, 4, 3, 2, 1, 0),
    (6, 7, 5, 4, 3, 2, 1, 0), (7, 5, 6, 3, 1, 4, 2, 0), (5, 3, 7, 1, 6, 4, 2, 0), (6, 4, 7, 2, 5, 1, 3, 0),
    (4, 7, 2, 6, 1, 5, 3, 0), (5, 2, 6, 3, 7, 1, 4, 0),
)
ROME_MODEL_79_CHANNELS = 28  # the ringBase lists 28 rings (each distinct one twice)
ROME_MODEL_79_TUNING = 5  # its options "...,tuning=5,..." (rome_models.cc:560): rcclTuningModel[5] times its calls

#: Per-step latency (us) of a ring on one node's xGMI (RCCL types xGMI as LINK_NVL, so hwLat[NCCL_HW_NVLINK]) by
#: protocol, for each tuning model the twin knows: tuning_model_5 as RCCL 2.21.5 has it (branch develop at 0cbce2a7,
#: 2024-10-24, and release-staging/rocm-rel-6.3 at 99b8561b: src/graph/tuning.cc:224-227, Ring LL 0.8, LL128 0.0,
#: Simple 2.1), the newest table in the ROCm/rccl snapshot and the nearest to the 2.22.3 of AMD's published MI300X
#: runs (no 2.22.3 or rocm-6.3.0 tag is in it: what 2.22.3 reads is belief). rocm-6.2.2 (RCCL 2.20.5) had Simple 3.6
#: there; the twin is not per version. RCCL's tuner adds nsteps x this to a ring's latency (tuning.cc:436-453; nsteps
#: = 2(n-1) for allreduce, n-1 for allgather / reduce_scatter, :352). LL128 is off on gfx942 (tuning.cc:511-517 at
#: rocm-6.2.2, :512-514 at 2.21.5: on by default only on gfx90a), so a ring there is LL or Simple.
RING_STEP_LATENCY_US: dict[int, dict[str, float]] = {5: {"LL": 0.8, "Simple": 2.1}}

_GFX_BY_NAME = (("mi300x", "gfx942"), ("mi325x", "gfx942"), ("mi300a", "gfx942"), ("mi250", "gfx90a"),
                ("mi210", "gfx90a"), ("mi100", "gfx908"))
MAX_SEARCH_STEPS = 200_000  # bound on the ring search's DFS steps (8 GPUs need a few thousand)


def gfx_of(gpu: Any) -> str | None:
    """The GPU's gfx target: its ``gfx`` attribute (presets, amdsmi discovery), else from its name."""
    attrs = getattr(gpu, "attributes", None) or {}
    if isinstance(attrs.get("gfx"), str):
        return str(attrs["gfx"])
    name = (getattr(gpu, "name", None) or "").lower().replace(" ", "")
    return next((gfx for key, gfx in _GFX_BY_NAME if key in name), None)


def is_amd(gpu: Any) -> bool:
    return (getattr(gpu, "vendor", None) or "").lower() == "amd" or gfx_of(gpu) is not None


def _rome_model_79(arcs: set[tuple[int, int]], n: int, gfx: str | None) -> bool:
    """Whether RCCL matches these ranks to rome_model_79: 8 gfx94x GPUs, every pair one direct xGMI link."""
    return n == 8 and len(arcs) == n * (n - 1) and gfx is not None and gfx.startswith("gfx94")


def tuning_model(arcs: set[tuple[int, int]], n: int, gfx: str | None) -> int | None:
    """The rcclTuningModel index RCCL times these ranks' calls with, where the twin knows it (rome_model_79's
    8 fully connected gfx94x GPUs: 5), else None."""
    return ROME_MODEL_79_TUNING if _rome_model_79(arcs, n, gfx) else None


def rings(arcs: set[tuple[int, int]], n: int, gfx: str | None) -> tuple[list[tuple[int, ...]], int]:
    """RCCL's rings over ranks 0..n-1 whose direct xGMI links are ``arcs`` (both directions listed), and
    the channels they run on: rome_model_79's for 8 fully connected gfx94x GPUs, else arc-disjoint
    Hamiltonian cycles (module doc). ([], 0) when no ring uses direct links only."""
    if _rome_model_79(arcs, n, gfx):
        return [tuple(r) for r in ROME_MODEL_79_RINGS], ROME_MODEL_79_CHANNELS
    free = set(arcs)
    found: list[tuple[int, ...]] = []
    while True:
        cycle = _hamiltonian(free, n)
        if cycle is None:
            break
        found.append(cycle)
        free -= _arcs(cycle)
        back = tuple(reversed(cycle))
        if _arcs(back) <= free:
            found.append(back)
            free -= _arcs(back)
    return found, 2 * len(found)


def _arcs(ring: Sequence[int]) -> set[tuple[int, int]]:
    return {(ring[i], ring[(i + 1) % len(ring)]) for i in range(len(ring))}


def _hamiltonian(free: set[tuple[int, int]], n: int) -> tuple[int, ...] | None:
    """A directed Hamiltonian cycle over ``free`` arcs from rank 0 (depth-first, bounded)."""
    out: dict[int, list[int]] = {}
    for a, b in sorted(free):
        out.setdefault(a, []).append(b)
    path, seen, steps = [0], {0}, 0
    stack = [iter(out.get(0, []))]
    while stack:
        steps += 1
        if steps > MAX_SEARCH_STEPS:
            return None
        nxt = next(stack[-1], None)
        if nxt is None:
            stack.pop()
            seen.discard(path.pop())
            continue
        if len(path) == n and nxt == 0:
            return tuple(path)
        if nxt in seen:
            continue
        path.append(nxt)
        seen.add(nxt)
        stack.append(iter(out.get(nxt, [])))
    return None
