"""Cost models for mapping: what it costs to send between two GPUs, from a Topology, the
(calibrated) fabric model, a pair-time predictor or a measured RunRecord.

Metrics (``METRICS``), each a list of (flow, per-unit cost matrix) terms:

* ``distance``:   bytes x (max level − pair level)        (hop-bytes, the classic metric)
* ``bandwidth``:  bytes x 1 / bandwidth                   (µs per byte; objective in µs)
* ``latency``:    messages x latency (µs)                 (route latency summed over links)
* ``alpha-beta``: messages x latency + bytes / bandwidth  (µs; the per-message alpha-beta time)
* ``model``:      messages x latency + bytes x time per byte, both predicted by the fabric model
  for each GPU pair alone, plus the whole-exchange predictor (contention) that picks among
  candidate mappings (``fabric.fabric_cost``).

Message counts come from the TrafficMatrix; where unknown, each talking pair counts one message.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UserError
from ..patterns.methods import DEFAULT_METHOD
from ..topology import query
from ..topology.model import LinkKind, Topology

METRICS = ("bandwidth", "latency", "distance", "alpha-beta", "model")

DEFAULT_LINK_LATENCY_US = {
    LinkKind.NVLINK: 0.7,
    LinkKind.XGMI: 0.7,
    LinkKind.PCIE: 0.5,
    LinkKind.UPI: 0.3,
    LinkKind.NETWORK: 1.5,
}
"""Per-hop latency used when a link has none (rough orders of magnitude, labelled as such)."""

PairTime = Callable[[int, int, int], float]
"""``predict(src_gpu, dst_gpu, size_bytes) -> seconds`` for one transfer alone on the fabric."""
ExchangeTime = Callable[[Sequence[tuple[int, int, float]]], float]
"""``predict([(src_gpu, dst_gpu, bytes), ...]) -> seconds`` for all transfers at once
(``fabric.ExchangePredictor``)."""


@dataclass(frozen=True)
class CostModel:
    """Cost matrices over GPU pairs for one metric.

    Attributes:
        metric: one of METRICS.
        flows: what each term multiplies: ``"bytes"`` or ``"messages"``.
        costs: one GPUs x GPUs matrix per term (per byte or per message).
        unit: unit of the objective (``µs``, ``hop-bytes``).
        source: where the numbers came from (``topology:NAME``, ``results:FILE``,
            ``model:NAME (METHOD)``, ``predictor``).
        exchange_time: whole-exchange predictor (contention included) that picks among candidate
            mappings; set by the ``model`` metric.
        notes: caveats (defaulted latencies, missing pairs filled by symmetry).
    """

    metric: str
    flows: tuple[str, ...]
    costs: tuple[np.ndarray, ...]
    unit: str
    source: str
    exchange_time: ExchangeTime | None = field(default=None, compare=False)
    notes: tuple[str, ...] = ()

    @property
    def gpus(self) -> int:
        return int(self.costs[0].shape[0])

    def flow_matrices(self, bytes_: np.ndarray, messages: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(bytes_ if f == "bytes" else messages for f in self.flows)

    def is_uniform(self) -> bool:
        """Every off-diagonal entry of every term equal: no mapping differs from another."""
        n = self.gpus
        off = ~np.eye(n, dtype=bool)
        return all(np.allclose(c[off], c[off][0], rtol=1e-9, atol=0) for c in self.costs) if n > 1 else True


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise UserError(f"unknown metric {metric!r}", hint=f"valid metrics: {', '.join(METRICS)}")


def _us_per_byte(bw_gb_per_s: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        out = np.where(np.isfinite(bw_gb_per_s) & (bw_gb_per_s > 0), 1e6 / (bw_gb_per_s * 1e9), 0.0)
    np.fill_diagonal(out, 0.0)
    return out


def topology_matrices(topology: Topology) -> dict[str, np.ndarray]:
    """distance, bandwidth (GB/s) and latency (µs) matrices over the topology's GPUs."""
    gpus = topology.gpus
    n = len(gpus)
    if n == 0:
        raise UserError(f"topology {topology.name!r} has no GPU to map onto")
    distance = np.zeros((n, n))
    bandwidth = np.full((n, n), np.inf)
    latency = np.zeros((n, n))
    defaulted = False
    # bandwidth from the fabric model where the topology is node-sized: it knows per-element transit
    # costs and where P2P stops (a K80 node's levels); raw link rates alone cannot tell them apart
    modelled = None
    if n <= 64 and not any(link.kind.value == "network" for link in topology.links):
        from ..model.pairs import pair_matrices

        modelled = pair_matrices(topology)["bandwidth_gb_per_s"]
    for i, g in enumerate(gpus):
        for j, h in enumerate(gpus):
            if i == j:
                continue
            distance[i, j] = query.distance(topology, g, h)
            bandwidth[i, j] = query.theoretical_gb_per_s(topology, g, h) if modelled is None else modelled[i, j]
            total = 0.0
            for link in query.route(topology, g, h):
                if link.latency_us is None:
                    defaulted = True
                    total += DEFAULT_LINK_LATENCY_US[link.kind]
                else:
                    total += link.latency_us
            latency[i, j] = total
    out: dict[str, np.ndarray] = {"distance": distance, "bandwidth_gb_per_s": bandwidth, "latency_us": latency}
    if defaulted:
        out["defaulted_latency"] = np.ones(1)
    return out


def _model_needs_topology() -> UserError:
    return UserError("the model metric predicts with a topology's fabric model, not from measured or predicted "
                     "pair costs", hint="map onto a topology (--preset, --from, --synthetic); measurements feed the "
                     "model through linkscope model calibrate RUN.json -o calibrated.json, then --from calibrated.json")


def _from_matrices(metric: str, distance: np.ndarray | None, bandwidth: np.ndarray, latency: np.ndarray,
                   source: str, notes: tuple[str, ...]) -> CostModel:
    if metric == "distance":
        if distance is None:
            raise UserError("the distance metric needs a topology (measured results carry no levels)",
                            hint="use --metric bandwidth, latency or alpha-beta with --results")
        return CostModel(metric, ("bytes",), (distance,), "hop-bytes", source, notes=notes)
    if metric == "bandwidth":
        return CostModel(metric, ("bytes",), (_us_per_byte(bandwidth),), "µs", source, notes=notes)
    if metric == "latency":
        return CostModel(metric, ("messages",), (latency,), "µs", source, notes=notes)
    if metric == "alpha-beta":
        return CostModel(metric, ("messages", "bytes"), (latency, _us_per_byte(bandwidth)), "µs", source, notes=notes)
    raise _model_needs_topology()


def software_latency_us(topology: Topology, method: str = DEFAULT_METHOD.key) -> tuple[float, str]:
    """The fixed per-message software cost (API call, launch, completion) the latency metric adds
    to every GPU pair: the fabric model's ``overhead_us.<method>`` (calibrated where the topology's
    model_params hold it), with its provenance."""
    from ..model.params import ModelParams

    params = ModelParams.for_topology(topology)
    key = f"overhead_us.{method}"
    return float(params.overhead_us(method)), params.provenance.get(key, "default")


def topology_cost(topology: Topology, metric: str, method: str = DEFAULT_METHOD.key) -> CostModel:
    """Cost matrices for ``metric`` from a Topology's levels, theoretical bandwidth and link latency
    (plus the fixed per-message software cost, ``software_latency_us``); for ``model``, from its
    fabric model (``model_params`` included) with transfer ``method``."""
    _check_metric(metric)
    if metric == "model":
        from .fabric import fabric_cost

        return fabric_cost(topology, method)
    m = topology_matrices(topology)
    notes: tuple[str, ...] = ("some links have no latency; per-kind defaults were used",) \
        if "defaulted_latency" in m else ()
    latency = m["latency_us"]
    if metric in ("latency", "alpha-beta"):
        software_us, provenance = software_latency_us(topology, method)
        latency = latency + software_us
        np.fill_diagonal(latency, 0.0)
        notes += (f"latency per message = route latency + {software_us:g} µs fixed software cost "
                  f"(overhead_us.{method}, {provenance})",)
    return _from_matrices(metric, m["distance"], m["bandwidth_gb_per_s"], latency,
                          f"topology:{topology.name}", notes)


def predictor_cost(gpus: int, metric: str, predict_pair_time_s: PairTime, large_bytes: int = 1 << 26) -> CostModel:
    """Bandwidth, latency or alpha-beta costs from any pair-time predictor (a calibrated model):
    latency is the predicted time of an 8-byte transfer, bandwidth the large-transfer rate."""
    _check_metric(metric)
    latency = np.zeros((gpus, gpus))
    bandwidth = np.full((gpus, gpus), np.inf)
    for i in range(gpus):
        for j in range(gpus):
            if i != j:
                small = predict_pair_time_s(i, j, 8)
                latency[i, j] = small * 1e6
                big = predict_pair_time_s(i, j, large_bytes)
                bandwidth[i, j] = large_bytes / max(big - small, 1e-15) / 1e9
    return _from_matrices(metric, None, bandwidth, latency, "predictor", ())


# ---- measured results -------------------------------------------------------------------------
def _get(item: Any, key: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(key)
    value: Any = getattr(item, key, None)
    return value.value if hasattr(value, "value") and not isinstance(value, (int, float, str)) else value


def results_matrices(record: Any, gpus: int | None = None) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Bandwidth (GB/s, largest size, best method) and latency (µs, smallest value) per GPU pair
    from a RunRecord or its JSON dict. Missing pairs are filled from the reverse direction;
    a pair missing both ways is an error naming it."""
    measurements = _get(record, "measurements")
    if measurements is None:
        raise UserError("results file has no 'measurements' list")
    best_bw: dict[tuple[int, int], tuple[int, float]] = {}
    best_lat: dict[tuple[int, int], float] = {}
    for m in measurements:
        status = _get(m, "status")
        if status not in (None, "ok"):
            continue
        src, dst = _get(m, "src"), _get(m, "dst")
        if not isinstance(src, int) or not isinstance(dst, int) or src == dst:
            continue
        size = _get(m, "size_bytes") or 0
        bw = _get(m, "median_gb_per_s")
        if bw is not None and bw > 0:
            old = best_bw.get((src, dst))
            if old is None or size > old[0] or (size == old[0] and bw > old[1]):
                best_bw[(src, dst)] = (size, float(bw))
        lat = _get(m, "latency_us")
        if lat is not None and lat > 0:
            best_lat[(src, dst)] = min(float(lat), best_lat.get((src, dst), float("inf")))
    seen = {p for p in best_bw} | {p for p in best_lat}
    if not seen:
        raise UserError("results hold no usable GPU-to-GPU measurement (status ok, src and dst GPU indices)")
    n = gpus if gpus is not None else 1 + max(max(p) for p in seen)
    bandwidth = np.full((n, n), np.inf)
    latency = np.zeros((n, n))
    notes: list[str] = []
    missing_bw: list[tuple[int, int]] = []
    missing_lat: list[tuple[int, int]] = []
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            if (i, j) in best_bw:
                bandwidth[i, j] = best_bw[(i, j)][1]
            elif (j, i) in best_bw:
                bandwidth[i, j] = best_bw[(j, i)][1]
                notes.append(f"bandwidth {i}->{j} taken from {j}->{i}")
            else:
                missing_bw.append((i, j))
            if (i, j) in best_lat:
                latency[i, j] = best_lat[(i, j)]
            elif (j, i) in best_lat:
                latency[i, j] = best_lat[(j, i)]
            else:
                missing_lat.append((i, j))
    if missing_bw and best_bw:
        i, j = missing_bw[0]
        raise UserError(f"results have no bandwidth for GPU pair {i}->{j} ({len(missing_bw)} pairs missing)",
                        hint="measure all pairs, e.g. linkscope bench --pattern matrix")
    if missing_lat and best_lat:
        i, j = missing_lat[0]
        raise UserError(f"results have no latency for GPU pair {i}->{j} ({len(missing_lat)} pairs missing)",
                        hint="run linkscope bench latency --pattern matrix")
    if not best_bw:
        bandwidth = np.full((n, n), np.nan)
    if not best_lat:
        latency = np.full((n, n), np.nan)
    return bandwidth, latency, tuple(notes[:3]) + ((f"... {len(notes) - 3} more",) if len(notes) > 3 else ())


def results_cost(record: Any, metric: str, gpus: int | None = None, source: str = "results") -> CostModel:
    """Cost matrices from a measured (or simulated) RunRecord, object or JSON dict."""
    _check_metric(metric)
    if metric == "model":
        raise _model_needs_topology()
    bandwidth, latency, notes = results_matrices(record, gpus)
    needs_bw = metric in ("bandwidth", "alpha-beta")
    needs_lat = metric in ("latency", "alpha-beta")
    if needs_bw and np.isnan(bandwidth).any():
        raise UserError(f"metric {metric!r} needs bandwidth measurements; the results have only latencies")
    if needs_lat and np.isnan(latency).any():
        raise UserError(f"metric {metric!r} needs latency measurements; the results have only bandwidths",
                        hint="run linkscope bench latency, or use --metric bandwidth")
    return _from_matrices(metric, None, bandwidth, np.nan_to_num(latency), source, notes)
