"""Per GPU pair, what the fabric model says one transfer alone gets: for costs that need a number per pair
(the mapping's bandwidth and latency metrics), from the same facts the predictions use.

A pair without peer access (beyond the topology's ``peer_access.max_level``, e.g. across QPI on a K80 node)
gets the host-staged method's figures instead: what the driver does for cudaMemcpyPeer there.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..patterns.methods import CE_NOPEER, DEFAULT_METHOD
from ..topology.model import Topology
from .predict import FabricModel


def pair_matrices(topology: Topology | FabricModel, method: str = DEFAULT_METHOD.key, *,
                  fallback_method: str = CE_NOPEER.key) -> dict[str, np.ndarray]:
    """``bandwidth_gb_per_s`` (rate of one large transfer alone, GB/s) and ``latency_us`` (fixed part:
    overhead + route latency + per-device transit latency, µs) over the topology's GPUs, GPU index order."""
    model = topology if isinstance(topology, FabricModel) else FabricModel(topology, peer_fallback=True)
    n = model.topology.gpu_count
    bandwidth = np.full((n, n), np.inf)
    latency = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            try:
                stages = model.stages(i, j, 1, method)
            except ConfigError:  # a kernel copy where P2P stops: the host-staged copy instead
                stages = model.stages(i, j, 1, fallback_method)
            bandwidth[i, j] = min(s.cap_gb_per_s for s in stages)
            latency[i, j] = sum(s.latency_s for s in stages) * 1e6
    return {"bandwidth_gb_per_s": bandwidth, "latency_us": latency}
