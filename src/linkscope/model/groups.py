"""``model predict`` as one call: the concurrent groups to predict (given flows, or a built-in
pattern's plans as ``bench --pattern`` runs them), a memory estimate before any plan is made, and one
row per predicted transfer (labelled predicted). The CLI parses the options and prints the rows."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from ..topology.model import Topology
from .predict import FabricModel

#: A transfer to predict: (source, destination, size in bytes); an end is a GPU index or "host".
Flow = tuple[Any, Any, int]


def pattern_groups(topology: Topology, pattern: str, gpus: Sequence[int] | None, size_bytes: int,
                   method: str) -> list[tuple[str, list[Flow]]]:
    """The concurrent groups of a built-in pattern (``patterns``) at one size, as ``bench --pattern`` runs them."""
    from ..patterns.base import select_gpus
    from ..patterns.methods import find_method
    from ..patterns.registry import get_pattern

    chosen = select_gpus(topology, gpus)
    pat = get_pattern(pattern)
    waiver = pat.applies_to(topology, chosen, find_method(method))
    if waiver is not None:
        raise ConfigError(waiver.reason)
    return [(plan.label, [(t.src, t.dst, t.size_bytes) for t in plan.transfers])
            for plan in pat.plan(topology, chosen, size_bytes, method, "uni")]


def predict_groups(model: FabricModel, sizes: Sequence[int], method: str, *,
                   flows: Sequence[tuple[Any, Any]] | None = None, pattern: str = "pairs",
                   gpus: Sequence[int] | None = None, rtol: float | None = None,
                   command: str = "model predict") -> list[dict[str, Any]]:
    """One row per transfer: ``flows`` (each size one concurrent group labelled "flows"), else each
    concurrent group of ``pattern`` over ``gpus``; each group predicted alone on ``model``."""
    topology = model.topology
    if not flows:  # a memory estimate before any plan is made (model/budget.py)
        from ..patterns.base import select_gpus
        from ..patterns.registry import get_pattern
        from .budget import check_pattern_budget

        check_pattern_budget(get_pattern(pattern), topology, select_gpus(topology, gpus), list(sizes), [method], "uni",
                             command)
    groups: list[tuple[str, list[Flow]]] = []
    for size in sizes:
        if flows:
            groups.append(("flows", [(a, b, size) for a, b in flows]))
        else:
            groups.extend(pattern_groups(topology, pattern, gpus, size, method))
    rows: list[dict[str, Any]] = []
    for label, group in groups:
        for p in model.predict(group, method, rtol=rtol):
            rows.append({"group": label, "src": p.src, "dst": p.dst, "method": method, "size_bytes": p.size_bytes,
                         "predicted_gb_per_s": p.gb_per_s, "elapsed_us": p.elapsed_s * 1e6, "start_us": p.start_s * 1e6,
                         "latency_us": p.latency_us, "theoretical_gb_per_s": p.theoretical_gb_per_s,
                         "limited_by": p.limited_by or None, "provenance": "predicted"})
    return rows
