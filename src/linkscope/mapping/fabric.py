"""The ``model`` metric: mapping costs from the fabric model (``linkscope.model.FabricModel``).

One model, used two ways:

* **pairwise** (for the QAP solvers, which need a GPU-pair cost matrix): each ordered GPU pair's
  transfer is predicted *alone* with the chosen method, at 0 bytes (its latency) and at
  ``SLOPE_PROBE_BYTES`` (its time per byte). A mapping's pairwise cost is then
  ``sum over rank pairs of messages x latency_us + bytes x us_per_byte``: the sum of every
  message's predicted time alone (exact for a model that is latency + size / rate). Each GPU pair
  is predicted once (two ``predict`` calls), so building the matrices costs ~2 n^2 calls.
* **exchange** (to compare candidate mappings): the traffic matrix taken as one step: every
  talking rank pair's bytes as one transfer (its messages merged), all launched together on the
  assigned GPUs, predicted with max-min fair contention and event-driven completion; the exchange
  takes as long as its slowest transfer. (A captured matrix of many iterations is then one big
  step: per-message latency counts once per pair there, but once per message in the pairwise cost.)

Parameters come from ``Topology.model_params`` (``linkscope model calibrate`` writes them), so a
calibrated topology (``--from calibrated.json``) is used automatically.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError, UserError
from ..model.predict import FabricModel
from ..patterns.methods import DEFAULT_METHOD as METHOD_TABLE_DEFAULT
from ..patterns.methods import keys_where
from ..topology.model import Topology
from .cost import CostModel

DEFAULT_METHOD = METHOD_TABLE_DEFAULT.key
GPU_METHODS = keys_where(peer=True)  # from the one method table (patterns/methods.py)
"""GPU-to-GPU transfer methods the exchange can use (see linkscope.model.predict)."""
SLOPE_PROBE_BYTES = 64 * 1024 * 1024
"""Size of the alone-transfer probe whose time per byte gives the pairwise bandwidth term."""


@dataclass(frozen=True)
class ExchangePredictor:
    """Predicted time of one step of a traffic pattern on one fabric, contention included.

    Attributes:
        model: the topology's FabricModel (graph, routes, parameters).
        method: transfer method of every transfer of the exchange.
    """

    model: FabricModel = field(compare=False)
    method: str = DEFAULT_METHOD

    def __call__(self, transfers: Sequence[tuple[int, int, float]]) -> float:
        """Seconds until the last of ``[(src_gpu, dst_gpu, bytes), ...]`` (all started together)
        has finished; 0.0 for no transfer."""
        items = [(int(a), int(b), round(size)) for a, b, size in transfers if a != b and size > 0]
        if not items:
            return 0.0
        return max(p.finish_s for p in self.model.predict(items, self.method))


def exchange_transfers(bytes_: np.ndarray) -> list[tuple[int, int, float]]:
    """The exchange of a traffic matrix, in rank numbering: one transfer ``(r, s, bytes)`` per
    talking pair (the pair's messages merged), all launched together."""
    rs, ss = np.nonzero(bytes_)
    return [(int(r), int(s), float(bytes_[r, s])) for r, s in zip(rs, ss) if r != s]


def _params_note(model: FabricModel) -> str:
    calibrated = sorted(k for k, v in model.params.provenance.items() if v == "calibrated")
    user = sorted(k for k, v in model.params.provenance.items() if v == "user")
    if calibrated:
        return (f"fabric model with {len(calibrated)} calibrated parameter(s) from the topology's "
                f"model_params ({', '.join(calibrated[:4])}{', ...' if len(calibrated) > 4 else ''})")
    if user:
        return f"fabric model with {len(user)} parameter(s) set in the topology's model_params"
    return "fabric model with default parameters (calibrate with: linkscope model calibrate)"


def _pair_terms(model: FabricModel, method: str, gpus: int) -> tuple[np.ndarray, np.ndarray]:
    """latency (µs) and µs per byte of each ordered GPU pair's transfer alone."""
    latency_us = np.zeros((gpus, gpus))
    us_per_byte = np.zeros((gpus, gpus))
    for i in range(gpus):
        for j in range(gpus):
            if i == j:
                continue
            try:
                empty = model.predict([(i, j, 0)], method)[0].elapsed_s
                big = model.predict([(i, j, SLOPE_PROBE_BYTES)], method)[0].elapsed_s
            except ConfigError as exc:
                raise ConfigError(f"the fabric model cannot predict method {method!r} from GPU {i} to GPU {j}: "
                                  f"{exc}", hint="choose another --method, e.g. ce-nopeer or staged") from None
            latency_us[i, j] = empty * 1e6
            us_per_byte[i, j] = max(big - empty, 0.0) * 1e6 / SLOPE_PROBE_BYTES
    return latency_us, us_per_byte


def fabric_cost(topology: Topology, method: str = DEFAULT_METHOD,
                params: Mapping[str, Any] | None = None) -> CostModel:
    """The ``model`` metric's CostModel for ``topology``: pairwise terms (messages x latency,
    bytes x time per byte, each GPU pair predicted alone) and the whole-exchange predictor."""
    if method not in GPU_METHODS:
        raise ConfigError(f"unknown GPU-to-GPU method {method!r} for the model metric",
                          hint=f"valid methods: {', '.join(GPU_METHODS)}")
    gpus = topology.gpu_count
    if gpus == 0:
        raise UserError(f"topology {topology.name!r} has no GPU to map onto")
    model = FabricModel(topology, dict(params) if params is not None else None, peer_fallback=True)  # cudaMemcpyPeer stages where P2P stops
    latency_us, us_per_byte = _pair_terms(model, method, gpus)
    notes: tuple[str, ...] = (_params_note(model),)
    if model.params.ignored:
        notes += (f"model_params keys that are not model parameters were ignored: {', '.join(model.params.ignored)}",)
    return CostModel("model", ("messages", "bytes"), (latency_us, us_per_byte), "µs",
                     f"model:{topology.name} ({method})", exchange_time=ExchangePredictor(model, method), notes=notes)


__all__ = [
    "DEFAULT_METHOD",
    "GPU_METHODS",
    "SLOPE_PROBE_BYTES",
    "ExchangePredictor",
    "exchange_transfers",
    "fabric_cost",
]
