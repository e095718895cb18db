"""A memory estimate before the work: predictions, simulated benches and mappings on large fabrics.

``fattree:4096x8`` all-to-all is 32,768 x 32,767 = 1.07e9 concurrent transfers; every one becomes a
Transfer, a route and a rate in the flow model, and the command grew past several GB before it
was stopped. Here the work is estimated first and refused in one line above ``MEMORY_BUDGET_BYTES``.

* Transfers of a pattern: counted on 8 and on 16 of the selected GPUs (cheap plans), then
  extrapolated to all of them with the power law those two counts give (all-to-all grows with
  n^2, a ring with n, hub patterns with n^2 over n plans); exact when there are 16 GPUs or fewer.
* Bytes: ``BASE_BYTES + transfers x BYTES_PER_FLOW``; both fitted to peak RSS (``/usr/bin/time
  %M``) of ``model predict --pattern all-to-all --sizes 1MiB --json -`` on fattree:16x8, 32x8 and
  64x8 on this 2-core CPU machine (2026-11-25): 16,256 flows 283 MiB, 65,280 flows 384 MiB,
  261,632 flows 1,005 MiB, i.e. about 3.2 KiB per flow above a 240 MiB base (interpreter,
  NumPy/SciPy/Numba, the topology). An estimate, rounded up, not a guarantee.
* Mapping: ``BASE_BYTES + gpus x BYTES_PER_GPU_MAPPED``; the per-GPU figure from ``map`` of 4 ranks
  on fattree:4096x8 (1.64 GB peak for 32,768 GPUs, 2026-11-25). The largest synthetic fabric
  (``MAX_CLUSTER_GPUS``) fits the budget, so today this refuses only larger topology files. The
  traffic's own matrices are bounded by its rank limit (``traffic.matrix.MAX_RANKS``), not here.
* The fabric model itself (``estimate_model_bytes``, checked by ``FabricModel`` before it builds
  anything, so every simulated command and every prediction passes through it): about
  ``BYTES_PER_ELEMENT`` per device and link. Its build no longer holds a distance per (CPU, device)
  pair: the duplex ends come from one multi-source search (issue 41; the model of fattree:4096x8,
  107,552 devices, built in 0.92 s at 0.88 GB peak with a million flows routed, docs/benchmarks.md).
* Simulated collectives (``estimate_collective_bytes``): every rank's send, receive and reference
  buffers, each at most the simulated data limit (``comm.nccl_backend.SIM_DATA_LIMIT_BYTES``):
  ``bench nccl --backend sim`` on the 1,024 GPUs of fattree:128x8 reached 4.3 GB for one size; the
  buffer size is the largest size asked for, capped at that limit.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import ConfigError
from ..topology.model import DeviceKind, Topology

MEMORY_BUDGET_BYTES = 2 * 2**30
"""What one command may use for a model, a simulated bench or a mapping (2 GiB)."""
BASE_BYTES = 300 * 2**20
BYTES_PER_FLOW = 3300
BYTES_PER_GPU_MAPPED = 52_000
BYTES_PER_ELEMENT = 2048
"""Graph, routes and capacities per device and link of the fabric model (fit above: (332 - 89 MB -
the distance tables) over the devices and links added, rounded up)."""
BUFFERS_PER_SIMULATED_RANK = 3
"""Send, receive and the NumPy reference: fitted to peak RSS of ``bench nccl --backend sim --synthetic
fattree:32x8 --op allreduce --sizes 4MiB --iters 1 --warmup 0 --runs 1`` (256 ranks, 3.29 GB: 12.5 MiB a
rank, about 3 buffers of 4 MiB) on this machine, 2026-11-28; allgather at the same size peaked at 1.2 GB."""

__all__ = ["MEMORY_BUDGET_BYTES", "check_budget", "check_model_budget", "estimate_collective_bytes", "estimate_flow_bytes",
           "estimate_map_bytes", "estimate_model_bytes", "pattern_transfer_count"]


def pattern_transfer_count(pattern: object, topology: Topology, gpus: Sequence[int], size_bytes: int, method: str,
                           direction: str = "uni") -> int:
    """Transfers ``pattern`` plans on ``gpus`` (all plans together), without planning all of them
    when there are more than 16 GPUs (see the module text)."""
    def count(subset: Sequence[int]) -> int:
        plans = pattern.plan(topology, list(subset), size_bytes, method, direction)  # type: ignore[attr-defined]
        return sum(len(p.transfers) for p in plans)

    n = len(gpus)
    if n <= 16:
        return count(gpus)
    small, large = count(gpus[:8]), count(gpus[:16])
    if small <= 0 or large <= 0:
        return max(large, 0)
    power = max(0.0, math.log(large / small) / math.log(2.0))
    return math.ceil(large * (n / 16) ** power)


def estimate_flow_bytes(transfers: int) -> int:
    return BASE_BYTES + transfers * BYTES_PER_FLOW


def estimate_map_bytes(gpus: int) -> int:
    return BASE_BYTES + gpus * BYTES_PER_GPU_MAPPED


def estimate_model_bytes(topology: Topology) -> int:
    """Peak memory of building the fabric model of ``topology`` (module text)."""
    return BASE_BYTES + BYTES_PER_ELEMENT * (len(topology.devices) + len(topology.links))


def estimate_collective_bytes(topology: Topology, ranks: int, buffer_bytes: int) -> int:
    """Peak memory of simulating a collective over ``ranks`` ranks whose buffers hold at most
    ``buffer_bytes`` each (module text), the fabric model included."""
    return estimate_model_bytes(topology) + ranks * BUFFERS_PER_SIMULATED_RANK * buffer_bytes


def check_model_budget(topology: Topology, extra_bytes: int = 0, what: str = "") -> None:
    """Refuse a fabric model (and ``extra_bytes`` of work on it) that would not fit the budget: the
    one guard every simulated command and every prediction passes (``FabricModel`` calls it)."""
    gpus = int((topology.columns().device_kind == list(DeviceKind).index(DeviceKind.GPU)).sum())
    check_budget(estimate_model_bytes(topology) + extra_bytes,
                 what or f"the fabric model of {topology.name} ({gpus:,} GPUs, {len(topology.devices):,} devices)",
                 hint="simulate a smaller fabric (fewer nodes of a fat tree)")


def check_budget(estimate_bytes: int, what: str, hint: str) -> None:
    """Refuse work estimated above the budget, in one line naming the estimate and the budget."""
    if estimate_bytes > MEMORY_BUDGET_BYTES:
        raise ConfigError(f"{what} would need about {_gib(estimate_bytes)} of memory; the budget is "
                          f"{_gib(MEMORY_BUDGET_BYTES)}", hint=hint)


def _gib(value: int) -> str:
    gib = value / 2**30
    return f"{gib:,.0f} GiB" if gib >= 10 else f"{gib:.1f} GiB"


def check_pattern_budget(pattern: object, topology: Topology, gpus: Sequence[int], sizes: Sequence[int],
                         methods: Sequence[str], direction: str, command: str) -> None:
    """Refuse, before planning, a pattern whose transfers over every size and method would not fit
    the budget (``command`` names the work in the message)."""
    if not gpus or not sizes or not methods:
        return
    try:
        per = pattern_transfer_count(pattern, topology, gpus, sizes[0], methods[0], direction)
    except Exception:  # a pattern that cannot plan here says so itself, later, with its reason
        return
    total = per * len(sizes) * len(methods)
    key = getattr(pattern, "key", "pattern")
    check_budget(estimate_flow_bytes(total), f"{command} --pattern {key} on {len(gpus):,} GPUs of {topology.name} "
                 f"({total:,} transfers)", hint="select fewer GPUs (--gpus), fewer sizes, or a smaller fabric")
