"""Scale benchmark of the fabric model: many concurrent flows over a synthetic fat-tree cluster.

Default: 100,000 concurrent GPU-to-GPU copy-engine flows between random GPU pairs of a
512-node x 8-GPU fat tree (``fattree:512x8``: 4,096 GPUs, 4,096 NICs, 128 leaves, 32 spines),
predicted end to end: build the topology and the model, route every flow, solve max-min fair
sharing, and run the event-driven completion (with the model's default completion batching at
this size, ``--rtol`` to choose it; ``--engine numpy`` for the pure-NumPy path). Prints a short
table and writes JSON.

    PYTHONPATH=src python bench/model_scale.py [--flows 100000] [--nodes 512] [--json out.json] [--exact]

``--exact`` also runs the unbatched event-driven simulation and reports how far the batched finish
times are from it (a few seconds for equal sizes; with ``--mixed`` about 25 s for 20,000 flows and
far longer for 100,000). Results on the development machine: docs/benchmarks.md, "Fabric model at scale".
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=512)
    ap.add_argument("--gpus", type=int, default=8, help="GPUs per node")
    ap.add_argument("--radix", type=int, default=64)
    ap.add_argument("--flows", type=int, default=100_000)
    ap.add_argument("--size-bytes", type=int, default=64 * 2**20, help="bytes per flow (with --mixed: the largest)")
    ap.add_argument("--mixed", action="store_true", help="log-uniform sizes from 4 KiB to --size-bytes")
    ap.add_argument("--method", default="ce")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--exact", action="store_true", help="also run the exact (unbatched) simulation")
    ap.add_argument("--rtol", type=float, default=None, help="completion batching (default: the model's auto_rtol)")
    ap.add_argument("--engine", default="auto", help="auto, compiled (Numba) or numpy")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)

    from linkscope.model.contention import simulate
    from linkscope.model.predict import FabricModel, auto_rtol
    from linkscope.topology.synthetic import synthetic_topology

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    topo = synthetic_topology(f"fattree:{args.nodes}x{args.gpus}:{args.radix}")
    timings["topology_s"] = time.perf_counter() - t0
    t = time.perf_counter()
    model = FabricModel(topo)
    timings["model_s"] = time.perf_counter() - t
    rng = np.random.default_rng(args.seed)
    n_gpu = topo.gpu_count
    src = rng.integers(0, n_gpu, args.flows)
    dst = rng.integers(0, n_gpu - 1, args.flows)
    dst = np.where(dst >= src, dst + 1, dst)
    if args.mixed:
        sizes = np.exp(rng.uniform(np.log(4096), np.log(args.size_bytes), args.flows)).astype(np.int64)
    else:
        sizes = np.full(args.flows, args.size_bytes, dtype=np.int64)
    t = time.perf_counter()
    problem = model.peer_problem(src, dst, sizes, args.method)
    timings["routes_s"] = time.perf_counter() - t
    rtol = auto_rtol(args.flows, args.rtol)
    # load the compiled kernel first (two flows: the stage renumbering before the event loop runs too)
    warm = problem.__class__(problem.A[:, :2], problem.capacity_gb_per_s, problem.stage_bytes[:2],
                             problem.stage_cap_gb_per_s[:2], problem.stage_latency_s[:2], problem.stage_next[:2],
                             problem.flow_first[:2])
    simulate(warm, rtol=rtol, engine=args.engine)
    if args.exact:
        simulate(warm, rtol=0.0, engine=args.engine)
    t = time.perf_counter()
    cpu = time.process_time()
    result = simulate(problem, rtol=rtol, engine=args.engine)
    timings["event_driven_cpu_s"] = time.process_time() - cpu
    rates = result.first_rate_gb_per_s
    timings["event_driven_s"] = time.perf_counter() - t
    timings["total_predict_s"] = timings["topology_s"] + timings["model_s"] + timings["routes_s"] + timings["event_driven_s"]
    timings["total_predict_cpu_s"] = time.process_time() - cpu0
    out: dict = {
        "benchmark": "model_scale",
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
                    "processor": platform.processor() or platform.machine()},
        "topology": topo.name, "gpus": n_gpu, "devices": len(topo.devices), "links": len(topo.links),
        "flows": args.flows, "method": args.method, "sizes": "mixed" if args.mixed else args.size_bytes,
        "seed": args.seed, "resources_used": int((np.diff(problem.A.tocsr().indptr) > 0).sum()),
        "incidence_nonzeros": int(problem.A.nnz),
        "completion_rtol": rtol, "engine": args.engine, "events": result.events,
        "distinct_first_rates": int(np.unique(np.round(rates, 9)).size),
        "rate_gb_per_s": {"min": float(rates.min()), "median": float(np.median(rates)), "max": float(rates.max())},
        "finish_ms": {"min": float(result.finish_s.min() * 1e3), "median": float(np.median(result.finish_s) * 1e3),
                      "max": float(result.finish_s.max() * 1e3)},
        "timings_s": {k: round(v, 4) for k, v in timings.items()},
    }
    if args.exact:
        t = time.perf_counter()
        exact = simulate(problem, rtol=0.0, engine=args.engine)
        out["exact"] = {"event_driven_s": round(time.perf_counter() - t, 3), "events": exact.events,
                        "max_rel_diff": float(np.abs(result.finish_s / exact.finish_s - 1).max()),
                        "median_rel_diff": float(np.median(np.abs(result.finish_s / exact.finish_s - 1)))}
    print(f"model scale: {args.flows} flows on {topo.name} ({n_gpu} GPUs, {len(topo.devices)} devices, {len(topo.links)} links)")
    print(f"{'stage':<18}{'time (s)':>10}")
    for key, value in timings.items():
        print(f"{key[:-2]:<18}{value:>10.3f}")
    print(f"events {result.events} (completion rtol {rtol}), distinct first rates {out['distinct_first_rates']}, "
          f"rates {rates.min():.2f}..{rates.max():.2f} GB/s")
    if args.exact:
        print(f"exact simulation {out['exact']['event_driven_s']} s, {out['exact']['events']} events; batched vs exact "
              f"finish times: max {out['exact']['max_rel_diff']:.2e}, median {out['exact']['median_rel_diff']:.2e}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(out, handle, indent=2)
            handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
