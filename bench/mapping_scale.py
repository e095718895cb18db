"""Mapping time and memory at scale: 3D stencils (and a sparse heavy-tailed graph) on fat trees
of 32, 64, 256 and 4,096 GPUs, as ``linkscope map`` runs them (hierarchical).

Each case runs in a fresh Python process: building the topology and the traffic matrix are not
timed; ``map_onto`` is timed twice (cold: first call with its imports and caches; warm: the
second). Memory: the process's peak resident set (ru_maxrss) before and after mapping, and the
peak of Python allocations during the warm call (tracemalloc; NumPy reports its buffers to it).

    PYTHONPATH=src python bench/mapping_scale.py [out.json]

Targets (issue 13): 4,096 ranks on 512 x 8 GPUs in <= 5 s, 256 ranks in <= 1 s on the 2-core
development machine.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

CASES = (
    ("fattree:4x8", "stencil3d 2x4x4", "latency"),
    ("fattree:8x8", "stencil3d 4x4x4", "latency"),
    ("fattree:32x8", "stencil3d 8x8x4", "latency"),
    ("fattree:32x8", "stencil3d 8x8x4", "bandwidth"),
    ("fattree:512x8", "stencil3d 16x16x16", "latency"),
    ("fattree:512x8", "stencil3d 16x16x16", "bandwidth"),
    ("fattree:512x8", "random 4096", "alpha-beta"),
)

CHILD = r"""
import json, resource, sys, time, tracemalloc
from linkscope.topology.synthetic import synthetic_topology
from linkscope.traffic.synthetic import random_sparse, stencil
from linkscope.mapping.api import map_onto
spec, pattern, metric = sys.argv[1:4]
topology = synthetic_topology(spec)
kind, arg = pattern.split()
if kind == "stencil3d":
    traffic = stencil(tuple(int(x) for x in arg.split("x")), periodic=True)
else:
    traffic = random_sparse(int(arg), density=4.0 / int(arg), seed=1)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter(); a = map_onto(traffic, topology, metric); cold = time.perf_counter() - t0
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
t0 = time.perf_counter(); b = map_onto(traffic, topology, metric); warm = time.perf_counter() - t0
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"cold_s": cold, "warm_s_traced": warm, "rss_before_mib": rss0 / 1024, "rss_after_mib": rss1 / 1024,
                  "traced_peak_mib": peak / 2**20, "ranks": traffic.ranks, "gpus": topology.gpu_count,
                  "cost": a.cost, "default_cost": a.default_cost, "same_answer_twice": a.gpu_of_rank == b.gpu_of_rank
                  and a.node_of_rank == b.node_of_rank, "solver": a.solver}))
"""


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path(os.environ.get("OUT", ".")) / "mapping_scale.json"
    rows = []
    print(f"{'topology':15} {'traffic':20} {'metric':10} {'ranks':>5} {'cold s':>7} {'warm s*':>7} "
          f"{'RSS MiB':>8} {'+MiB':>6} {'traced':>7} {'saved':>6}")
    for spec, pattern, metric in CASES:
        proc = subprocess.run([sys.executable, "-c", CHILD, spec, pattern, metric], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{spec} {pattern} {metric}: failed\n{proc.stderr[-1500:]}")
            return 1
        row = {"topology": spec, "traffic": pattern, "metric": metric, **json.loads(proc.stdout.strip().splitlines()[-1])}
        rows.append(row)
        print(f"{spec:15} {pattern:20} {metric:10} {row['ranks']:5d} {row['cold_s']:7.2f} {row['warm_s_traced']:7.2f} "
              f"{row['rss_after_mib']:8.0f} {row['rss_after_mib'] - row['rss_before_mib']:6.0f} "
              f"{row['traced_peak_mib']:7.0f} {(1 - row['cost'] / row['default_cost']) * 100:5.1f}%", flush=True)
    print("* the warm call runs under tracemalloc, which slows Python allocations: read cold_s as the time")
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
              "command": "PYTHONPATH=src python bench/mapping_scale.py", "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
