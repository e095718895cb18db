"""Predicted vs measured: re-predict every bandwidth entry of a RunRecord with the model.

Entries that ran at the same time share ``group`` (and size, method): each such group is
rebuilt as one concurrent plan (a ``bi`` pair entry that moved twice its size stands for both
directions) and predicted at once, so contention is part of the check. Aggregate entries
(``scope`` total, ``src`` or ``dst`` ``"*"``) are compared with the predicted total of the
matching transfers (bytes / time of the slowest).

Collective entries (``nccl.<op>``, pattern ``collective``, from ``bench nccl``) are compared with
``CollectiveModel.predict`` of the op over the record's GPUs (``options["gpus"]``, else the devices
each process drove): the predicted algbw ``S / t`` against the measured one, launched as the entry
says (``extra.cuda_graph``: from a CUDA graph, or eager with the host's per-operation cost).
"""
from __future__ import annotations

import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import LinkscopeError, UserError
from ..results.schema import ALL, HOST, Measurement, RunProvenance, RunRecord
from ..topology import io as topo_io
from ..topology.model import Topology
from .collectives import LAUNCH_MODES, CollectiveModel
from .params import METHODS, ModelParams
from .predict import FabricModel, TransferPrediction

_GB = 1e9


@dataclass(frozen=True)
class MeasuredGroup:
    """Entries of one concurrent group and the transfers they imply."""

    key: tuple
    method: str
    size_bytes: int
    entries: tuple[tuple[int, Measurement], ...]  # (index in the record, measurement)
    transfers: tuple[tuple[Any, Any], ...]


def _is_total(m: Measurement) -> bool:
    return m.scope != "transfer" or m.src == ALL or m.dst == ALL


def _is_pair_bi(m: Measurement) -> bool:
    return m.direction == "bi" and m.src != m.dst and m.moved_bytes >= 1.5 * m.size_bytes > 0


def measured_groups(record: RunRecord) -> tuple[list[MeasuredGroup], list[tuple[int, str]]]:
    """Concurrent groups of the record's bandwidth entries, and (index, reason) of entries skipped."""
    groups: dict[tuple, list[tuple[int, Measurement]]] = {}
    skipped: list[tuple[int, str]] = []
    for i, m in enumerate(record.measurements):
        if not m.ok:
            skipped.append((i, f"status {m.status.value}"))
            continue
        if m.bandwidth is None:
            skipped.append((i, "no bandwidth (latency entry)"))
            continue
        if _is_collective(m):
            continue  # compared by collective_entries
        if m.method not in METHODS:
            skipped.append((i, f"method {m.method!r} is not modelled"))
            continue
        key = (m.group, m.size_bytes, m.method, m.pattern, m.direction) if m.group is not None else ("solo", i)
        groups.setdefault(key, []).append((i, m))
    out = []
    for key, entries in groups.items():
        transfers: list[tuple[Any, Any]] = []
        for _, m in entries:
            if _is_total(m):
                continue
            pairs = [(m.src, m.dst), (m.dst, m.src)] if _is_pair_bi(m) else [(m.src, m.dst)]
            for pair in pairs:
                if pair not in transfers:
                    transfers.append(pair)
        if not transfers:
            for i, _ in entries:
                skipped.append((i, "aggregate without its transfers"))
            continue
        first = entries[0][1]
        out.append(MeasuredGroup(key, first.method, first.size_bytes, tuple(entries), tuple(transfers)))
    return out, skipped


def _is_collective(m: Measurement) -> bool:
    return m.pattern == "collective" and m.method.startswith("nccl.")


def record_gpus(record: RunRecord) -> list[int]:
    """The GPUs (rank order) a collective record ran on."""
    gpus = (record.options or {}).get("gpus")
    if not gpus:
        gpus = [g for devices in (record.context or {}).get("devices_per_process", []) for g in devices]
    return [int(g) for g in gpus]


def entry_launch(m: Measurement) -> str:
    """How a measured ``bench nccl`` entry's operations were launched: its ``extra.cuda_graph`` says
    whether the timed loop ran from a CUDA graph (the simulated backend times it the same way: eager
    unless captured); older records without it are taken as graphs."""
    used = (m.extra or {}).get("cuda_graph")
    return "eager" if used is False else "graph"


def record_gpus_per_thread(record: RunRecord) -> int | None:
    """The most GPUs one process drove (``context.devices_per_process``; one thread each in ``bench
    nccl``): what an eager launch's host time grows with. None when the record does not say."""
    per = (record.context or {}).get("devices_per_process")
    sizes = [len(d) for d in per if isinstance(d, list)] if isinstance(per, list) else []
    return max(sizes) if sizes and max(sizes) > 0 else None


def collective_entries(record: RunRecord, model: FabricModel) -> list[CheckEntry]:
    """Measured vs predicted algbw of every ok collective entry with a bandwidth."""
    env = (record.context or {}).get("env")  # the NCCL_* variables the run had (NCCL_NVLS_ENABLE, NCCL_ALGO ...)
    env = env if isinstance(env, dict) else None
    per_thread = record_gpus_per_thread(record)
    models = {launch: CollectiveModel(model, env=env, launch=launch, gpus_per_thread=per_thread)
              for launch in LAUNCH_MODES}
    gpus = record_gpus(record)
    out = []
    for i, m in enumerate(record.measurements):
        if not _is_collective(m) or not m.ok or m.bandwidth is None:
            continue
        op = m.method.split(".", 1)[1]
        note, predicted = "", None
        try:
            launch = entry_launch(m)
            pred = models[launch].predict(op, gpus, m.size_bytes)
            predicted = pred.chosen.algbw_gb_per_s
            note = f"{pred.chosen.algorithm} ({pred.chosen.protocol}) on GPUs {','.join(map(str, gpus))}, {launch} launch"
        except LinkscopeError as exc:
            note = str(exc)
        measured = m.median_gb_per_s
        rel = predicted / measured - 1 if predicted is not None and measured else None
        out.append(CheckEntry(i, m.src, m.dst, m.method, m.pattern, m.direction, m.size_bytes, m.scope,
                              measured, predicted, rel, note))
    return out


def entry_prediction(m: Measurement, group: MeasuredGroup, preds: list[TransferPrediction]) -> float:
    """Predicted GB/s of one entry, given the predictions of its group's transfers (same order)."""
    by_pair = {pair: p for pair, p in zip(group.transfers, preds)}
    if _is_pair_bi(m):  # a pair's both-directions total (scope total, moved_bytes = 2 x size)
        chosen = [by_pair[(m.src, m.dst)], by_pair[(m.dst, m.src)]]
    elif _is_total(m):
        chosen = [p for p in preds if (m.src in (ALL, p.src)) and (m.dst in (ALL, p.dst))]
    else:
        chosen = [by_pair[(m.src, m.dst)]]
    if len(chosen) == 1:
        return chosen[0].gb_per_s
    total = sum(p.size_bytes for p in chosen)
    slowest = max(p.finish_s for p in chosen) - min(p.start_s for p in chosen)
    return total / slowest / _GB if slowest > 0 else 0.0


@dataclass(frozen=True)
class CheckEntry:
    index: int
    src: Any
    dst: Any
    method: str
    pattern: str
    direction: str
    size_bytes: int
    scope: str
    measured_gb_per_s: float | None
    predicted_gb_per_s: float | None
    rel_error: float | None  # predicted / measured - 1
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CheckReport:
    """Every compared entry, and the summary (absolute relative errors)."""

    entries: tuple[CheckEntry, ...]
    n_compared: int
    median_abs_rel_error: float | None
    worst_abs_rel_error: float | None
    worst_index: int | None
    by_method: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    topology: str = ""
    mismatches: tuple[str, ...] = ()  # how the record's machine differs from the topology (see ``mismatches``)
    record_provenance: str = "measured"  # "simulated": the model is compared with its own numbers

    @property
    def compares_model_with_itself(self) -> bool:
        return self.record_provenance != RunProvenance.MEASURED.value

    def as_dict(self) -> dict[str, Any]:
        return {
            "topology": self.topology,
            "record_provenance": self.record_provenance,
            "mismatches": list(self.mismatches),
            "summary": {
                "n_compared": self.n_compared,
                "median_abs_rel_error": self.median_abs_rel_error,
                "worst_abs_rel_error": self.worst_abs_rel_error,
                "worst_index": self.worst_index,
                "by_method": {k: dict(v) for k, v in self.by_method.items()},
            },
            "entries": [e.as_dict() for e in self.entries],
        }


def topology_of(record: RunRecord, topology: Topology | None = None) -> Topology:
    """The topology to use: the given one, else the one embedded in the record."""
    if topology is not None:
        return topology
    if not record.topology:
        raise UserError("the results file has no embedded topology", hint="pass --topology FILE|PRESET")
    return topo_io.from_dict(dict(record.topology))


_MODEL_TOKEN = re.compile(r"(?<![a-z0-9])([a-z]{1,3}\d{2,4}[a-z]?)(?![a-z0-9])")


def model_token(name: str) -> str | None:
    """The GPU model token of a device name (``"NVIDIA H100 80GB HBM3"`` -> ``h100``), or None."""
    match = _MODEL_TOKEN.search(str(name).lower())
    return match.group(1) if match else None


def _model_tokens(names: Any) -> set[str]:
    """GPU model tokens (``h200``, ``a100``, ``mi250x``) of a list of names; empty when none is recognisable."""
    out: set[str] = set()
    for name in names or ():
        name = name.get("name", "") if isinstance(name, Mapping) else name  # some records keep {"name": ...}
        token = model_token(name)
        if token:
            out.add(token)
    return out


def mismatches(record: RunRecord, topology: Topology) -> tuple[str, ...]:
    """How the machine that produced ``record`` differs from ``topology``: GPU count, GPU models, and
    the level (link kind and count) of each measured GPU pair in the record's own topology. Empty
    when they agree or when the record says too little to tell."""
    out: list[str] = []
    embedded = None
    if record.topology:
        try:
            embedded = topo_io.from_dict(dict(record.topology))
        except LinkscopeError:
            embedded = None
    names = list(record.context.get("gpus") or ()) or ([g.name for g in embedded.gpus] if embedded else [])
    count = len(names) if names else (embedded.gpu_count if embedded else None)
    if count is not None and count != topology.gpu_count:
        out.append(f"the record has {count} GPU{'s' if count != 1 else ''}, {topology.name!r} has {topology.gpu_count}")
    used = {e for m in record.measurements for e in (m.src, m.dst) if isinstance(e, int) and not isinstance(e, bool)}
    beyond = sorted(g for g in used if g >= topology.gpu_count)
    if beyond and count is None:
        out.append(f"the record measures GPU{beyond[0]}, {topology.name!r} has {topology.gpu_count} GPUs")
    mine, theirs = _model_tokens(names), _model_tokens(g.name for g in topology.gpus)
    if mine and theirs and mine != theirs:
        out.append(f"GPU models differ: the record ran on {', '.join(sorted(mine)).upper()}, "
                   f"{topology.name!r} has {', '.join(sorted(theirs)).upper()}")
    if embedded is not None and not beyond:
        from ..topology import query

        pairs = sorted({(min(m.src, m.dst), max(m.src, m.dst)) for m in record.measurements
                        if isinstance(m.src, int) and isinstance(m.dst, int)
                        and not isinstance(m.src, bool) and m.src != m.dst and max(m.src, m.dst) < embedded.gpu_count})
        differ = []
        for a, b in pairs:
            try:
                was, now = query.pair_level(embedded, a, b).code, query.pair_level(topology, a, b).code
            except LinkscopeError:
                continue
            if was != now:
                differ.append(f"GPU{a}-GPU{b} {was} vs {now}")
        if differ:
            more = f" (and {len(differ) - 3} more)" if len(differ) > 3 else ""
            out.append(f"links differ (record's topology vs {topology.name!r}): {'; '.join(differ[:3])}{more}")
    return tuple(out)


def check(record: RunRecord, topology: Topology | None = None, params: ModelParams | dict | None = None) -> CheckReport:
    """Predicted vs measured for every bandwidth entry. A given ``topology`` is compared with the record
    first (``CheckReport.mismatches``); a simulated record is marked (``record_provenance``)."""
    topo = topology_of(record, topology)
    differences = mismatches(record, topo) if topology is not None else ()
    provenance = record.provenance.value
    model = FabricModel(topo, params)
    groups, skipped = measured_groups(record)
    entries: list[CheckEntry] = []
    for group in groups:
        try:
            preds = model.predict([(s, d, group.size_bytes) for s, d in group.transfers], group.method)
            error = ""
        except LinkscopeError as exc:
            preds, error = None, str(exc)
        for i, m in group.entries:
            measured = m.median_gb_per_s
            predicted = None if preds is None else entry_prediction(m, group, preds)
            rel = predicted / measured - 1 if predicted is not None and measured else None
            entries.append(CheckEntry(i, m.src, m.dst, m.method, m.pattern, m.direction, m.size_bytes, m.scope,
                                      measured, predicted, rel, error))
    entries.extend(collective_entries(record, model))
    for i, reason in skipped:
        m = record.measurements[i]
        entries.append(CheckEntry(i, m.src, m.dst, m.method, m.pattern, m.direction, m.size_bytes, m.scope,
                                  m.median_gb_per_s, None, None, f"not compared: {reason}"))
    entries.sort(key=lambda e: e.index)
    errors = [(abs(e.rel_error), e.index) for e in entries if e.rel_error is not None]
    by_method: dict[str, dict[str, float]] = {}
    for method in sorted({e.method for e in entries if e.rel_error is not None}):
        errs = [abs(e.rel_error) for e in entries if e.method == method and e.rel_error is not None]
        by_method[method] = {"n": len(errs), "median_abs_rel_error": statistics.median(errs), "worst_abs_rel_error": max(errs)}
    if errors:
        worst = max(errors)
        return CheckReport(tuple(entries), len(errors), statistics.median(e for e, _ in errors), worst[0], worst[1],
                           by_method, topo.name, differences, provenance)
    return CheckReport(tuple(entries), 0, None, None, None, by_method, topo.name, differences, provenance)


__all__ = ["HOST", "CheckEntry", "CheckReport", "check", "entry_prediction", "measured_groups", "mismatches", "model_token",
           "topology_of"]
