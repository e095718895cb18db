"""Engine check on GPU 0 after the device-runtime refactor: host copies (pinned and pageable),
the local copy and the latency kinds at 256 MiB, through the same runner as ``linkscope bench``
(default measurement options). Prints a table; writes one JSON file.

    PYTHONPATH=src python3 bench/device_engine.py OUT.json            # the cuda engine
    PYTHONPATH=src python3 bench/device_engine.py OUT.json --fake     # the fake runtime (CPU check)
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any

from linkscope.measure.options import MeasureOptions
from linkscope.measure.runner import run_bench, run_latency
from linkscope.patterns.methods import (
    D2H,
    D2H_PAGEABLE,
    H2D,
    H2D_PAGEABLE,
    LATENCY_COPY,
    LATENCY_FLAG,
    LATENCY_HOST_READ,
    LATENCY_REMOTE_READ,
    LOCAL,
)
from linkscope.patterns.plan import HOST, Transfer, TransferPlan
from linkscope.units import MiB

SIZE = 256 * MiB


def plans() -> list[TransferPlan]:
    ends = {H2D.key: (HOST, 0), D2H.key: (0, HOST), H2D_PAGEABLE.key: (HOST, 0), D2H_PAGEABLE.key: (0, HOST), LOCAL.key: (0, 0)}
    return [TransferPlan("engine", "uni", m, (Transfer(s, d, SIZE),), "none", f"{s}->{d}") for m, (s, d) in ends.items()]


def latency_jobs(gpus: int) -> list[tuple[str, Any, Any]]:
    jobs = [(LATENCY_HOST_READ.key, HOST, 0), (LATENCY_REMOTE_READ.key, 0, 0), (LATENCY_COPY.key, HOST, 0)]
    if gpus >= 2:
        jobs += [(LATENCY_REMOTE_READ.key, 1, 0), (LATENCY_FLAG.key, 0, 1)]
    return jobs


def main(argv: list[str]) -> int:
    out = argv[1] if len(argv) > 1 else "engine.json"
    if "--fake" in argv:
        from linkscope.engines.gpu.fake import FakeEngine

        engine = FakeEngine(gpus=2, memory_bytes=8 * 1024**3)
    else:
        from linkscope.engines.cuda import CudaEngine

        engine = CudaEngine(None)
    from linkscope.topology.synthetic import synthetic_topology

    # the runner needs a topology for its records; the engine's own GPUs in CUDA order (theoretical
    # columns of this stand-in are not used here)
    topology = synthetic_topology(f"nvswitch:{max(engine.gpu_count(), 1)}")
    rows: list[dict[str, Any]] = []
    try:
        name = engine.device_name(0)
        t0 = time.perf_counter()
        record = run_bench(engine, topology, plans(), None, MeasureOptions())
        for m in record.measurements:
            bw = m.bandwidth
            rows.append({"what": m.method, "flow": f"{m.src}->{m.dst}", "size_bytes": m.size_bytes, "status": m.status.value,
                         "reason": m.reason, "gb_per_s_median": bw.median if bw else None, "cv": bw.cv if bw else None,
                         "n": bw.n if bw else 0, "verified": m.verified})
        for kind, a, b in latency_jobs(engine.gpu_count()):
            rec = run_latency(engine, kind, [(a, b)], MeasureOptions(), topology=topology,
                              method=H2D.key if kind == LATENCY_COPY.key else None, size_bytes=8)
            m = rec.measurements[0]
            lat = m.latency
            rows.append({"what": f"latency {kind}", "flow": f"{a}->{b}", "size_bytes": m.size_bytes, "status": m.status.value,
                         "reason": m.reason, "us_median": lat.median if lat else None, "n": lat.n if lat else 0})
        wall_s = time.perf_counter() - t0
    finally:
        engine.close()
    print(f"engine check on GPU 0 ({name}), {SIZE // MiB} MiB, default bench options; wall {wall_s:.1f} s")
    print(f"{'what':28} {'flow':10} {'median':>12} {'n':>4}  status")
    for r in rows:
        value = (f"{r['gb_per_s_median']:.2f} GB/s" if r.get("gb_per_s_median") is not None
                 else f"{r['us_median']:.3f} us" if r.get("us_median") is not None else "-")
        print(f"{r['what']:28} {r['flow']:10} {value:>12} {r['n']:>4}  {r['status']} {r['reason']}")
    with open(out, "w") as fh:
        json.dump({"device": name, "size_bytes": SIZE, "wall_s": wall_s, "rows": rows}, fh, indent=1)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
