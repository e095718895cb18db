"""Build synthetic "measured" RunRecords from the sim engine (a stand-in for the runner)."""
from __future__ import annotations

from linkscope.engines.sim import SimEngine
from linkscope.patterns.plan import Transfer, TransferPlan
from linkscope.results.schema import ALL, Measurement, RunProvenance, RunRecord
from linkscope.results.stats import Stats
from linkscope.topology import io as topo_io


def plan(method, pairs, pattern="pairs", direction="uni", aggregate="none"):
    return pattern, direction, method, tuple(pairs), aggregate


def record_from(engine: SimEngine, specs, sizes, *, strip_params=True, reps=3) -> RunRecord:
    """specs: (pattern, direction, method, ((src, dst), ...), aggregate) groups run at every size."""
    measurements = []
    group = 0
    for pattern, direction, method, pairs, aggregate in specs:
        for size in sizes:
            p = TransferPlan(pattern, direction, method, tuple(Transfer(s, d, size) for s, d in pairs), aggregate)
            result = engine.run(p, reps, warmup=1, verify=False)
            for t, timing in zip(p.transfers, result.timings):
                bw = [size / e / 1e9 for e in timing.elapsed_s]
                measurements.append(Measurement(t.src, t.dst, method, pattern, direction, size, size,
                                                bandwidth=Stats.from_samples(bw), provenance=RunProvenance.MEASURED,
                                                group=group))
            if aggregate != "none":
                total = size * len(p.transfers)
                bw = [total / g / 1e9 for g in result.group_elapsed_s]
                dst = p.transfers[0].dst if aggregate == "per_dst" else ALL
                src = p.transfers[0].src if aggregate == "per_src" else ALL
                measurements.append(Measurement(src, dst, method, pattern, direction, size, total,
                                                bandwidth=Stats.from_samples(bw), scope="total", group=group))
            group += 1
    topology = engine.topology.replace(model_params={}) if strip_params else engine.topology
    return RunRecord(kind="bench", provenance=RunProvenance.MEASURED, created_utc="2026-11-22T00:00:00Z",
                     topology=topo_io.to_dict(topology), measurements=tuple(measurements))
