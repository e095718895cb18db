"""The ``sim`` engine: the fabric model behind the TransferEngine protocol (no GPU needed).

Every number it returns is a model prediction labelled ``simulated`` (provenance of the engine's
capabilities); runs are deterministic unless ``noise_rel`` > 0, in which case each repetition's
time is multiplied by a seeded log-normal factor of that relative spread.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...errors import ConfigError, TopologyError
from ...model.params import METHODS, ModelParams
from ...model.predict import NEEDS_PEER_ACCESS, FabricModel
from ...patterns.plan import HOST, TransferPlan
from ...topology.model import Topology
from ..base import LATENCY_KINDS, EngineCapabilities, GroupResult, MethodInfo, TransferTiming

_DESCRIPTIONS = {
    "ce": "copy engine peer copy (cudaMemcpyPeerAsync-like), simulated",
    "ce-read": "copy engine, destination pulls, simulated",
    "ce-write": "copy engine, source pushes, simulated",
    "ce-nopeer": "copy without peer access: staged through host memory by the driver, simulated",
    "sm-push": "kernel copy writing to the peer, simulated",
    "sm-pull": "kernel copy reading from the peer, simulated",
    "staged": "D2H then H2D through pageable host memory, simulated",
    "staged-pinned": "double-buffered staging through pinned host memory, simulated",
    "h2d": "pinned host to device, simulated",
    "d2h": "device to pinned host, simulated",
    "h2d-pageable": "pageable host to device, simulated",
    "d2h-pageable": "device to pageable host, simulated",
    "local": "copy inside one GPU's memory, simulated",
}


def _method_info(key: str) -> MethodInfo:
    host = key in ("h2d", "d2h", "h2d-pageable", "d2h-pageable")
    return MethodInfo(
        key=key,
        description=_DESCRIPTIONS[key],
        peer=not host and key != "local",
        needs_peer_access=key in NEEDS_PEER_ACCESS,
        host_endpoint=host,
    )


class SimEngine:
    """TransferEngine over the fabric model of ``topology``.

    Args:
        topology: the machine to simulate (a preset, a file, a synthetic spec, a discovered one).
        params: model parameters overriding the defaults and ``topology.model_params``.
        noise_rel: relative spread of seeded per-repetition noise (0 = deterministic, the default).
        seed: seed of that noise.
    """

    name = "sim"

    def __init__(self, topology: Topology, params: ModelParams | dict | None = None, *,
                 noise_rel: float = 0.0, seed: int = 0) -> None:
        if noise_rel < 0:
            raise ConfigError(f"noise_rel must be >= 0, got {noise_rel}")
        self.topology = topology
        self.model = FabricModel(topology, params)
        self.noise_rel = float(noise_rel)
        self._rng = np.random.default_rng(seed)

    # ---- protocol -----------------------------------------------------------------------------------
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(
            name="sim",
            provenance="simulated",
            methods=tuple(_method_info(k) for k in METHODS),
            latency_kinds=LATENCY_KINDS,
            concurrent=True,
        )

    def gpu_count(self) -> int:
        return self.topology.gpu_count

    def free_memory_bytes(self, gpu: int) -> int:
        device = self.model.gpu(gpu)
        return int(device.memory_bytes) if device.memory_bytes else 80 * 1024**3

    def waiver(self, plan: TransferPlan) -> str | None:
        """Why this plan cannot run here (no peer access, no route), or None. Bad input (a GPU
        that does not exist, a transfer to itself, an unknown method) raises a UserError instead."""
        if plan.method not in METHODS:
            raise ConfigError(f"unknown transfer method {plan.method!r}", hint=f"valid methods: {', '.join(METHODS)}")
        for t in plan.transfers:
            for end in (t.src, t.dst):
                if end != HOST:
                    self.model.gpu(end)
            if plan.method in NEEDS_PEER_ACCESS and HOST not in (t.src, t.dst) and t.src != t.dst:
                reason = self.model.peer_access(t.src, t.dst)
                if reason:
                    return reason
            try:
                self.model.stages(t.src, t.dst, t.size_bytes, plan.method)
            except TopologyError as exc:
                if "disconnected" in str(exc) or "no route" in str(exc):
                    return f"no route from {t.src} to {t.dst}: {exc}"
                raise
        return None

    def run(self, plan: TransferPlan, reps: int, *, warmup: int, verify: bool,
            chunk_bytes: int | None = None) -> GroupResult:
        if reps < 1:
            raise ConfigError(f"reps must be >= 1, got {reps}")
        predictions = self.model.predict(plan, chunk_bytes=chunk_bytes)
        elapsed = np.array([p.elapsed_s for p in predictions], dtype=float)
        samples = np.tile(elapsed, (reps, 1))
        if self.noise_rel > 0:
            samples = samples * self._rng.lognormal(0.0, self.noise_rel, size=samples.shape)
        timings = tuple(
            TransferTiming(elapsed_s=tuple(float(x) for x in samples[:, k]), moved_bytes=int(t.size_bytes), verified=None)
            for k, t in enumerate(plan.transfers)
        )
        group = tuple(float(row.max()) if row.size else 0.0 for row in samples)
        note = f"simulated by the linkscope fabric model ({self.topology.name})"
        return GroupResult(timings=timings, group_elapsed_s=group, notes=(note,))

    def latency_us(self, kind: str, src: int | str, dst: int | str, *, method: str | None = None,
                   size_bytes: int = 8, reps: int = 1, warmup: int = 0) -> Sequence[float]:
        if kind not in LATENCY_KINDS:
            raise ConfigError(f"unknown latency kind {kind!r}", hint=f"valid: {', '.join(LATENCY_KINDS)}")
        value = self.model.latency_us(kind, src, dst, method=method, size_bytes=size_bytes)
        values = np.full(max(int(reps), 1), value)
        if self.noise_rel > 0:
            values = values * self._rng.lognormal(0.0, self.noise_rel, size=values.shape)
        return [float(v) for v in values]

    def close(self) -> None:
        return None


__all__ = ["SimEngine"]
