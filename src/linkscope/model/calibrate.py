"""Fit model parameters from a measured RunRecord.

1. Uncontended entries (transfers sharing no modelled resource with the rest of their concurrent
   group: a single pair, or 0->1 beside 2->3) are grouped by (method, route class); for each
   class ``scipy.optimize.least_squares`` fits ``time = latency + size / rate`` over the sizes
   measured (relative residuals, so small and large messages weigh alike).
2. The fitted latency minus the route's hop latencies is the method's overhead; the fitted rate,
   against the route's theoretical bottleneck, gives the efficiency the method determines:
   ``ce`` (else ``ce-write``/``ce-read``) -> ``link_efficiency.<bottleneck kind>``; ``h2d``/``d2h``
   -> ``link_efficiency`` of the host link; ``sm-push``/``sm-pull``/``ce-nopeer``/``staged-pinned``
   -> ``method_efficiency.<method>``; pageable copies -> ``host_memcpy_gb_per_s.h2d`` / ``.d2h`` (their
   rate where it is below the pinned DMA rate: ``model.host_copies``); ``local`` ->
   ``device_memory_bw_gb_per_s``. A vendor copy-engine cap is fitted when ``ce`` reaches the same
   rate over routes of clearly different capacity.
3. Everything else keeps its previous value and is listed as not fitted, with the reason.

Works with any subset of methods and patterns: what the record does not measure is not fitted.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from ..errors import UserError
from ..patterns.methods import D2H, H2D, LOCAL, STAGED, get_method, host_direction, keys_where
from ..results.schema import RunRecord
from ..topology.model import Provenance, Topology
from .check import CheckReport, check, measured_groups, topology_of
from .graph import KIND_CODE
from .host_copies import staging_fill_s
from .params import LINK_KINDS, METHODS, ModelParams, default_keys
from .predict import COPY_ENGINE_METHODS, PEER_METHODS, FabricModel

_GB = 1e9
_KIND_OF_CODE = {v: k for k, v in KIND_CODE.items()}


@dataclass(frozen=True)
class ClassFit:
    """Fit of one (method, route class): ``time = latency_us + size / rate``."""

    method: str
    route: str
    n_points: int
    n_sizes: int
    latency_us: float | None
    rate_gb_per_s: float
    theoretical_gb_per_s: float
    rms_rel_error: float
    note: str = ""


@dataclass(frozen=True)
class CalibrationResult:
    params: ModelParams
    fitted: dict[str, float]
    not_fitted: dict[str, str]
    fits: tuple[ClassFit, ...]
    topology: Topology
    check: CheckReport | None = None
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return {
            "fitted": self.fitted,
            "not_fitted": self.not_fitted,
            "fits": [f.__dict__ for f in self.fits],
            "notes": list(self.notes),
            "check": self.check.as_dict()["summary"] if self.check else None,
        }


@dataclass
class _Class:
    method: str
    route: str
    raw_gb_per_s: float
    transit: float
    bottleneck_kind: str
    hop_latency_us: float
    vendor: str | None
    sizes: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)


def _fit_line(sizes: np.ndarray, times: np.ndarray) -> tuple[float | None, float, float]:
    """(latency_s or None, rate B/s, rms relative error) of time = latency + size / rate."""
    if np.unique(sizes).size < 2:
        rate = float(np.median(sizes / times))
        return None, rate, 0.0
    big, small = sizes.argmax(), sizes.argmin()
    slope0 = max((times[big] - times[small]) / max(sizes[big] - sizes[small], 1.0), 1e-15)
    lat0 = max(times[small] - sizes[small] * slope0, 0.0)
    scale_t = float(times.max())

    def residuals(x: np.ndarray) -> np.ndarray:
        return (x[0] * scale_t + sizes * x[1] * slope0) / times - 1.0

    fit = least_squares(residuals, x0=[lat0 / scale_t, 1.0], bounds=([0.0, 1e-9], [np.inf, np.inf]), x_scale="jac")
    lat, slope = fit.x[0] * scale_t, fit.x[1] * slope0
    return float(lat), float(1.0 / slope), float(np.sqrt(np.mean(fit.fun**2)))


def _route_info(model: FabricModel, src: Any, dst: Any, method: str) -> tuple[str, float, float, str, float, str | None]:
    stages = model.stages(src, dst, 1, method)
    res = np.concatenate([s.resources for s in stages])
    edges = res[res < model.graph.n_edges]
    raw = min(s.raw_gb_per_s for s in stages)
    if edges.size:
        eff_cap = model.capacity[edges]
        bottleneck = int(edges[np.argmin(eff_cap)])
        kind = _KIND_OF_CODE[int(model.graph.edge_kind[bottleneck])]
        hops_us = float(model.edge_latency_s[edges].sum() * 1e6)
        transit = model._transit(edges) if method in PEER_METHODS else 1.0
    else:
        kind, hops_us, transit = "memory", 0.0, 1.0
    gpu_end = dst if src == "host" else src
    vendor = model.gpu(gpu_end).vendor if gpu_end != "host" else None
    route = f"{kind}:{raw:g}GB/s:{edges.size}hops"
    return route, raw, transit, kind, hops_us, vendor


def _uncontended(model: FabricModel, groups) -> list:
    """(group, src, dst, measurement) of single-transfer entries that share no modelled resource
    with the other transfers of their group (e.g. 0->1 and 2->3 of a pairs pattern)."""
    out = []
    for g in groups:
        if g.size_bytes <= 0:
            continue
        try:
            used = [set(np.concatenate([st.resources for st in model.stages(a, b, 1, g.method)]).tolist())
                    for a, b in g.transfers]
        except UserError:
            continue
        for _, m in g.entries:
            if m.scope != "transfer" or (m.src, m.dst) not in g.transfers or m.src == "*" or m.dst == "*":
                continue
            if m.direction == "bi" and (m.dst, m.src) in g.transfers:
                continue  # a pair entry of a bidirectional run, or one direction of it
            k = g.transfers.index((m.src, m.dst))
            others = set().union(*(u for j, u in enumerate(used) if j != k)) if len(used) > 1 else set()
            if not (used[k] & others):
                out.append((g, m.src, m.dst, m))
    return out


def calibrate(record: RunRecord, topology: Topology | None = None, *, source: str = "") -> CalibrationResult:
    topo = topology_of(record, topology)
    model = FabricModel(topo)
    base = model.params
    groups, _ = measured_groups(record)
    classes: dict[tuple[str, str], _Class] = {}
    notes: list[str] = []
    pinned: dict[str, float] = {}  # method -> its pinned DMA rate (the staging fill of pageable copies)
    for g, src, dst, m in _uncontended(model, groups):
        try:
            route, raw, transit, kind, hops_us, vendor = _route_info(model, src, dst, g.method)
        except UserError as exc:
            notes.append(f"skipped {g.method} {src}->{dst}: {exc}")
            continue
        moved = m.moved_bytes or m.size_bytes
        t = moved / (m.median_gb_per_s * _GB)
        if _cached_h2d(g.method, moved, base):  # its own class: the host copy reads the source from cache
            route += _CACHED
        if get_method(g.method).pageable and get_method(g.method).host_ends != "none":
            # the staging pipeline's fill (host_copies): fit latency + size / rate to what is left
            dma = pinned.get(g.method)
            if dma is None:
                dma = pinned[g.method] = _pinned_rate(model, g.method)
            t -= staging_fill_s(base, moved, dma)
        c = classes.setdefault((g.method, route), _Class(g.method, route, raw, transit, kind, hops_us, vendor))
        c.sizes.append(float(moved))
        c.times.append(t)
    if not classes:
        raise UserError("nothing to calibrate from: the results hold no uncontended bandwidth entry of a modelled method",
                        hint="measure e.g. linkscope bench --pattern pairs --sizes 4KiB:256MiB")
    latency_fits: dict[str, float] = {}
    latency_scale = _fit_latency_bases(model, record, latency_fits, notes)
    if latency_scale != 1.0:  # links without latency_us take hop_latency_us: scale it alike
        latency_fits["hop_latency_us"] = base["hop_latency_us"] * latency_scale
    fits: list[ClassFit] = []
    overheads: dict[str, list[float]] = {}
    rates: dict[str, list[tuple[_Class, float]]] = {}
    for (method, route), c in sorted(classes.items()):
        sizes, times = np.array(c.sizes), np.array(c.times)
        if sizes.min() >= _LATENCY_FIT_MAX_BYTES:  # latency is noise here: the rate is the median of the sizes' rates
            lat_s, rate_bps, rms = None, float(np.median(sizes / times)), 0.0
        else:
            lat_s, rate_bps, rms = _fit_line(sizes, times)
        note = ""
        if lat_s is None:
            note = ("one size only" if np.unique(sizes).size < 2 else "large sizes only") + ": rate from them, latency not fitted"
        lat_us = None if lat_s is None else lat_s * 1e6
        rate = rate_bps / _GB
        if lat_s is None:  # no latency fit: take the model's latency out of the single size's rate
            lat_model = (base.overhead_us(method) + c.hop_latency_us) * 1e-6
            t_bw = times - lat_model
            if (t_bw > 0).all():
                rate = float(np.median(sizes / t_bw)) / _GB
        fits.append(ClassFit(method, route, len(c.sizes), int(np.unique(sizes).size), lat_us, rate, c.raw_gb_per_s, rms, note))
        if lat_us is not None:
            overheads.setdefault(method, []).append(max(lat_us - c.hop_latency_us * latency_scale, 0.0))
        rates.setdefault(method, []).append((c, rate))
    fitted: dict[str, float] = dict(latency_fits)
    for method, values in overheads.items():
        fitted[f"overhead_us.{method}"] = statistics.median(values)
    # link efficiencies and engine caps from copy-engine methods
    ce_peer = sorted(keys_where(needs_peer_access=True, unit=("copy-engine",)), key=lambda k: get_method(k).issuer == "dst")
    link_sources = ([m for m in ce_peer if m in rates][:1]
                    + [m for m in (H2D.key, D2H.key) if m in rates])
    eff_by_kind: dict[str, list[float]] = {}
    for method in link_sources:
        per_kind: dict[str, list[tuple[_Class, float]]] = {}
        for c, rate in rates[method]:
            per_kind.setdefault(c.bottleneck_kind, []).append((c, rate))
        for kind, items in per_kind.items():
            if kind not in LINK_KINDS:
                continue
            caps = {c.vendor for c, _ in items if c.vendor and math.isfinite(base.engine_cap_gb_per_s(c.vendor))}
            raws = [c.raw_gb_per_s for c, _ in items]
            vals = [r for _, r in items]
            if caps and len(items) > 1 and max(raws) / min(raws) > 1.3 and max(vals) / min(vals) < 1.1:
                for vendor in caps:
                    fitted[f"engine_cap_gb_per_s.{vendor}"] = statistics.median(vals)
                notes.append(f"{method}: the same rate over routes of {min(raws):g}..{max(raws):g} GB/s: fitted as the copy-engine cap")
                continue
            if caps:  # only routes whose rate stays clearly under the engine cap say something about the link
                items = [(c, r) for c, r in items if r < 0.9 * base.engine_cap_gb_per_s(c.vendor)]
            eff_by_kind.setdefault(kind, []).extend(r / (c.raw_gb_per_s * c.transit) for c, r in items)
    for kind, effs in eff_by_kind.items():
        if effs:
            fitted[f"link_efficiency.{kind}"] = min(statistics.median(effs), 1.0)
    # method caps relative to the raw bottleneck
    for method in keys_where(peer=True, pageable=False):
        if method not in rates or method in link_sources:
            continue
        effs = [r / (c.raw_gb_per_s * c.transit) for c, r in rates[method]]
        fitted[f"method_efficiency.{method}"] = statistics.median(effs)
    # pageable copies run at min(host copy, pinned DMA) (model.host_copies): below the DMA, the rate is the copy's
    for method in keys_where(peer=False, pageable=True):
        if method not in rates:
            continue
        direction = host_direction(method)
        dma = _pinned_rate(model, method)
        below = [r for c, r in rates[method] if r < 0.95 * dma and not c.route.endswith(_CACHED)]
        cached = [r for c, r in rates[method] if r < 0.95 * dma and c.route.endswith(_CACHED)]
        key = f"host_memcpy_gb_per_s.{direction}"
        if below:
            fitted[key] = statistics.median(below)
        elif cached:
            fitted[key] = statistics.median(cached) / base["host_copy_cache_speedup"]
            notes.append(f"{method}: every size fits in the host cache ({base['host_cache_bytes'] / 2**20:g} MiB): "
                         f"{key} is that rate over the host_copy_cache_speedup default")
        else:
            notes.append(f"{method}: at the pinned DMA rate; the host copy rate is not below it and is not fitted")
        if below and cached:
            fitted["host_copy_cache_speedup"] = statistics.median(cached) / fitted[key]
    if not any(k.startswith("host_memcpy_gb_per_s.") for k in fitted) and STAGED.key in rates:
        fitted["host_memcpy_gb_per_s"] = 2 * statistics.median(r for _, r in rates[STAGED.key])
        notes.append(f"host_memcpy_gb_per_s from {STAGED.key!r} assuming its two hops are memcpy-bound")
    if LOCAL.key in rates:
        fitted["device_memory_bw_gb_per_s"] = 2 * statistics.median(r for _, r in rates[LOCAL.key])
    label = f"fitted by linkscope model calibrate{' from ' + source if source else ''}"
    params = base.with_values(fitted, provenance="calibrated", sources={k: label for k in fitted})
    # second pass: the overheads were fitted with the old efficiencies' routes; re-check
    kept = {k: v for k, v in (topo.model_params or {}).items()}
    kept.update(params.to_model_params(keys=fitted))
    links = topo.links
    if latency_scale != 1.0:
        links = tuple(
            replace(link, latency_us=link.latency_us * latency_scale, provenance=Provenance.CALIBRATED)
            if link.latency_us is not None else link
            for link in topo.links
        )
    calibrated = topo.replace(
        links=links,
        model_params=kept,
        notes=tuple(topo.notes) + (f"model_params calibrated ({len(fitted)} parameters) {label}",),
    )
    present = {m for m, _ in classes}
    not_fitted: dict[str, str] = {}
    for key in default_keys():
        if key in fitted:
            continue
        prefix, _, rest = key.partition(".")
        if prefix in ("overhead_us", "method_efficiency") and rest not in present:
            reason = f"no uncontended {rest!r} entries"
        elif prefix == "overhead_us":
            reason = "only one size measured"
        elif prefix == "link_efficiency":
            reason = f"no ce/h2d/d2h entry whose bottleneck is a {rest} link"
        elif prefix == "engine_cap_gb_per_s":
            reason = "ce not measured over routes of different capacity"
        elif prefix == "host_memcpy_gb_per_s":
            reason = (f"no uncontended {rest}-pageable entry below the pinned rate" if rest
                      else "the direction keys (host_memcpy_gb_per_s.h2d / .d2h) are fitted instead")
        elif key in _LATENCY_BASES.values():
            reason = "no remote-read / flag-pingpong latency entries"
        else:
            reason = "not determined by bandwidth entries of single transfers"
        not_fitted[key] = reason
    report = check(record, calibrated)
    return CalibrationResult(params, fitted, not_fitted, tuple(fits), calibrated, report, tuple(notes))


_LATENCY_BASES = {"remote-read": "remote_read_base_us", "flag-pingpong": "flag_base_us"}
_CACHED = ":cached"  # route-class suffix: host-to-device pageable copies whose source fits in the host cache
_LATENCY_FIT_MAX_BYTES = 64 * 2**20  # a class measured only above this says nothing about a per-copy overhead


def _cached_h2d(method: str, size_bytes: int, params: ModelParams) -> bool:
    """A pageable host-to-device copy small enough that its source stays in the host cache (host_copies, fact 5)."""
    m = get_method(method)
    return m.pageable and host_direction(m) == H2D.key and size_bytes <= params["host_cache_bytes"]


def _pinned_rate(model: FabricModel, method: str) -> float:
    """What the pinned copy of a pageable method's direction reaches on GPU 0 (the DMA half of the staging)."""
    pinned = H2D.key if get_method(method).host_ends == "src" else D2H.key
    ends = ("host", 0) if pinned == H2D.key else (0, "host")
    return model.predict([(*ends, 1 << 30)], pinned)[0].gb_per_s


def _fit_latency_bases(model: FabricModel, record: RunRecord, fitted: dict[str, float], notes: list[str]) -> float:
    """Fixed parts of the pointer-chase and flag latencies, and a scale for the links' latency_us.

    The model predicts remote-read = base + route there and back, flag = base + route one way.
    When the measured remote-read is below the route's link latencies alone, the links' latency_us
    overstate this machine: they are scaled down (returned factor) so the round trip fits with a zero
    base. The bases are then the measured medians minus the (scaled) route part, over the pairs."""
    samples: dict[str, list[tuple[float, float]]] = {}
    for kind in _LATENCY_BASES:
        for m in record.measurements:
            if m.method != kind or not m.ok or m.latency is None:
                continue
            try:
                route_part = model.latency_us(kind, m.src, m.dst) - model.latency_base_us(kind, m.src)
            except UserError:
                continue
            samples.setdefault(kind, []).append((m.latency.median, route_part))
    scale = 1.0
    rr = samples.get("remote-read", [])
    if rr and all(route > 0 for _, route in rr):
        ratio = statistics.median(measured / route for measured, route in rr)
        if ratio < 1.0:
            scale = ratio
            notes.append(f"remote-read: the links' latency_us overstate this machine; scaled by {ratio:.3f} (calibrated)")
    for kind, pairs in samples.items():
        rest = statistics.median(measured - scale * route for measured, route in pairs)
        if rest < 0:
            notes.append(f"{kind}: measured {-rest:.3f} us below the route's link latencies; base set to 0")
        fitted[_LATENCY_BASES[kind]] = round(max(rest, 0.0), 6)
    return scale

__all__ = ["COPY_ENGINE_METHODS", "METHODS", "CalibrationResult", "ClassFit", "calibrate"]
