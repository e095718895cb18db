"""Realistic RunRecords for report tests, built straight from the schema (no engine needed)."""
from __future__ import annotations

import math

from linkscope.results.schema import ALL, HOST, Measurement, RunProvenance, RunRecord, Status
from linkscope.results.stats import Stats
from linkscope.topology.io import to_dict
from linkscope.topology.synthetic import synthetic_topology

SIZES = [2**k for k in range(12, 31, 2)]  # 4 KiB .. 1 GiB


def _bw(peak: float, size: int, half: int = 2**21) -> float:
    """A saturating curve: peak * size / (size + half)."""
    return peak * size / (size + half)


def _stats(value: float) -> Stats:
    return Stats(n=5, median=value, min=value * 0.97, max=value * 1.02, mean=value, stddev=value * 0.01)


def measured_record() -> RunRecord:
    topo = synthetic_topology("nvswitch:4")
    prov = RunProvenance.MEASURED
    ms: list[Measurement] = []
    for method, peak in (("ce", 390.0), ("sm-push", 420.0)):
        for s in range(4):
            for d in range(4):
                if s == d:
                    continue
                for size in SIZES:
                    bw = _bw(peak - 3 * s - d, size)
                    extra = {"theoretical_gb_per_s": 478.1, "predicted_gb_per_s": 400.0} if method == "ce" else {}
                    ms.append(Measurement(s, d, method, "matrix", "uni", size, size, _stats(bw), provenance=prov, extra=extra))
    for s in range(4):  # latency matrix, 8 B
        for d in range(4):
            if s != d:
                ms.append(Measurement(s, d, "latency", "matrix", "uni", 8, 8, None, _stats(2.1 + 0.1 * (s + d)), provenance=prov))
    for size in SIZES:  # host staged, with a waived and an error entry
        ms.append(Measurement(0, HOST, "staged-pinned", "pairs", "uni", size, size, _stats(_bw(52.0, size)), provenance=prov))
    ms.append(Measurement(1, HOST, "staged", "pairs", "uni", 2**30, 0, status=Status.WAIVED,
                          reason="pageable staging skipped: no pinned buffer of 1 GiB", provenance=prov))
    ms.append(Measurement(2, 3, "sm-pull", "matrix", "uni", 2**30, 0, status=Status.ERROR,
                          reason="CUDA error 700: an illegal memory access was encountered", provenance=prov))
    for i, size in enumerate(SIZES):  # ring aggregate: per-flow entries + a total per size
        ms.append(Measurement(ALL, ALL, "ce", "ring", "uni", size, 4 * size, _stats(4 * _bw(380.0, size)), scope="total",
                              group=i, provenance=prov, extra={"theoretical_gb_per_s": 4 * 478.1}))
        ms.append(Measurement(ALL, 0, "ce", "all-to-one", "uni", size, 3 * size, _stats(_bw(395.0, size)), scope="total",
                              group=100 + i, provenance=prov, extra={"theoretical_gb_per_s": 478.1}))
    mapping = {
        "default": {"gpu_of_rank": [0, 1, 2, 3], "cost": 12.0, "default_cost": 12.0, "metric": "bandwidth",
                    "solver": "identity", "optimal": False, "unit": "s"},
        "auto": {"gpu_of_rank": [0, 2, 1, 3], "cost": 9.5, "default_cost": 12.0, "metric": "bandwidth",
                 "solver": "branch-and-bound", "optimal": True, "unit": "s"},
    }
    return RunRecord(kind="survey", provenance=prov, created_utc="2026-11-22T10:00:00+00:00",
                     context={"host": "node-a", "driver": "580.159.04", "gpus": [{"name": "NVIDIA H200"}] * 4},
                     options={"sizes": SIZES}, topology=to_dict(topo), measurements=tuple(ms),
                     findings=("All GPU pairs reach 82% of NVLink capacity with the copy engine.",
                               "GPU 2 → GPU 3 sm-pull failed (see errors)."),
                     extra={"mapping": mapping})


def simulated_record() -> RunRecord:
    topo = synthetic_topology("pcie:2x4")
    prov = RunProvenance.SIMULATED
    ms = []
    for s in range(8):
        for d in range(8):
            if s == d:
                continue
            same = (s < 4) == (d < 4)
            peak = 24.0 if same else 17.5
            for size in SIZES[::2]:
                ms.append(Measurement(s, d, "ce", "matrix", "uni", size, size, _stats(_bw(peak, size)), provenance=prov,
                                      extra={"theoretical_gb_per_s": 31.5, "predicted_gb_per_s": peak}))
    return RunRecord(kind="bench", provenance=prov, created_utc="2026-11-22T11:00:00+00:00",
                     context={"host": "pcie-model", "label": "pcie:2x4 (sim)"}, topology=to_dict(topo),
                     measurements=tuple(ms), findings=("Cross-socket pairs are limited by UPI.",))


def assert_finite(values) -> None:
    assert all(math.isfinite(v) for v in values)
