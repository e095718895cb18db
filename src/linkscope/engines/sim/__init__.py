"""The ``sim`` engine: the fabric model behind the TransferEngine protocol (no GPU needed).

Every number it returns is a model prediction labelled ``simulated`` (provenance of the engine's
capabilities); runs are deterministic unless ``noise_rel`` > 0, in which case each repetition's
time is multiplied by a seeded log-normal factor of that relative spread.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import ConfigError, TopologyError, UserError
from ...model.host_copies import SERIAL_NOTE
from ...model.params import ModelParams
from ...model.predict import FabricModel, group_elapsed_s
from ...patterns.methods import (
    LATENCY_FLAG,
    LATENCY_HOST_READ,
    LATENCY_KINDS,
    LATENCY_REMOTE_READ,
    METHODS,
    VENDORS,
    Method,
    methods_for,
)
from ...patterns.plan import HOST, TransferPlan
from ...topology.model import Topology
from ..base import NOT_CHECKED, EngineCapabilities, GroupResult, TransferTiming, plan_waiver

DEFAULT_MEMORY_BYTES = 80 * 1024**3  # a GPU whose topology entry has no memory size


def simulated_methods(topology: Topology) -> tuple[Method, ...]:
    """The methods the real engine of this topology's vendor offers (all of them for a machine of
    several or unknown vendors): the sim engine offers the same, so its waivers match."""
    vendors = {(g.vendor or "").lower() for g in topology.gpus}
    if len(vendors) == 1 and next(iter(vendors)) in VENDORS:
        return methods_for(next(iter(vendors)))
    return METHODS


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
        self._methods = simulated_methods(topology)

    # ---- protocol -----------------------------------------------------------------------------------
    def capabilities(self) -> EngineCapabilities:
        # vendor None: a simulated runtime needs no environment of its own (no child processes)
        return EngineCapabilities(
            name="sim",
            provenance="simulated",
            methods=self._methods,
            latency_kinds=LATENCY_KINDS,
            concurrent=True,
        )

    def gpu_count(self) -> int:
        return self.topology.gpu_count

    def free_memory_bytes(self, gpu: int) -> int:
        """The GPU's memory size from the topology (an idle simulated GPU has it all free)."""
        device = self.model.gpu(gpu)
        return int(device.memory_bytes) if device.memory_bytes else DEFAULT_MEMORY_BYTES

    def _table_waiver(self, plan: TransferPlan) -> str | None:
        """The shared waiver (engines.base.plan_waiver, as the GPU engine gives it) with the
        topology's GPUs, peer access and memory."""
        return plan_waiver(plan, gpu_count=self.topology.gpu_count, offered=[m.key for m in self._methods],
                           peer_ok=lambda a, b: self.model.peer_access(a, b) is None,
                           free_bytes=self.free_memory_bytes)

    def waiver(self, plan: TransferPlan) -> str | None:
        """The shared waiver, then a route the model cannot find."""
        reason = self._table_waiver(plan)
        if reason:
            return reason
        for t in plan.transfers:
            try:
                self.model.stages(t.src, t.dst, t.size_bytes, plan.method)
            except TopologyError as exc:
                return f"no route from {t.src} to {t.dst}: {exc.one_line()}"
        return None

    def run(self, plan: TransferPlan, reps: int, *, warmup: int, verify: bool,
            chunk_bytes: int | None = None) -> GroupResult:
        reason = self._table_waiver(plan)  # (a missing route raises from the model itself)
        if reason:
            raise ConfigError(reason)
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
        one_after_another = any(p.start_s > 0 for p in predictions)  # pageable copies (model.host_copies)
        group = tuple(float(row.sum() if one_after_another else row.max()) if row.size else 0.0 for row in samples)
        notes = [f"simulated by the linkscope fabric model ({self.topology.name})"]
        queue = next((p.queue for p in predictions if p.queue is not None), None)
        if queue is not None and elapsed.size and elapsed.max() > 0:  # copies queued: the median order's time
            scale = group_elapsed_s(predictions) / float(elapsed.max())
            group = tuple(g * scale for g in group)
            notes.append(queue.text())
        if one_after_another:
            notes.append(SERIAL_NOTE)
        if verify:
            notes.append(f"{NOT_CHECKED} simulated transfers move no bytes")
        return GroupResult(timings=timings, group_elapsed_s=group, notes=tuple(notes))

    def latency_us(self, kind: str, src: int | str, dst: int | str, *, method: str | None = None,
                   size_bytes: int = 8, reps: int = 1, warmup: int = 0) -> Sequence[float]:
        if kind not in LATENCY_KINDS:
            raise ConfigError(f"unknown latency kind {kind!r}", hint=f"valid kinds: {', '.join(LATENCY_KINDS)}")
        for end in (src, dst):
            if end != HOST and not (isinstance(end, int) and not isinstance(end, bool) and 0 <= end < self.topology.gpu_count):
                raise UserError(f"GPU {end!r} does not exist", hint=f"valid GPU indices: 0..{self.topology.gpu_count - 1}")
        if kind == LATENCY_FLAG.key and not (isinstance(src, int) and isinstance(dst, int) and src != dst):
            raise ConfigError(f"{kind} latency needs two different GPUs; got {src}->{dst}")
        if kind == LATENCY_REMOTE_READ.key and not isinstance(dst, int):
            raise ConfigError(f"{kind} latency needs a GPU as the reader (dst); got {src}->{dst}")
        if kind == LATENCY_HOST_READ.key:  # the pointer chase through pinned host memory, over the PCIe path
            if src != HOST or not isinstance(dst, int):
                raise ConfigError(f"{kind} latency reads host memory from a GPU: src must be 'host', dst a GPU; got {src}->{dst}")
            kind = LATENCY_REMOTE_READ.key
        value = self.model.latency_us(kind, src, dst, method=method, size_bytes=size_bytes)
        values = np.full(max(int(reps), 1), value)
        if self.noise_rel > 0:
            values = values * self._rng.lognormal(0.0, self.noise_rel, size=values.shape)
        return [float(v) for v in values]

    def close(self) -> None:
        return None


__all__ = ["SimEngine"]
