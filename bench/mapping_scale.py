"""Mapping time and memory at scale: 3D stencils (and sparse random graphs) on fat trees of 32,
64, 256, 4,096 and 32,768 GPUs, as ``linkscope map`` runs them (hierarchical).

Each case runs in a fresh Python process: building the topology and the traffic matrix are not
timed; ``map_onto`` is timed twice (cold: first call with its imports and caches; warm: the
second) in wall-clock and CPU seconds (the CPU time does not grow when other users load the
machine; the load average is recorded with each row). Memory: the process's peak resident set
(ru_maxrss: the whole process, topology and traffic included) before and after mapping, and the
peak of Python allocations during the warm call (tracemalloc; NumPy reports its buffers to it).
The 32,768-rank cases run the warm call only with ``--warm`` (tracemalloc doubles their time).

    PYTHONPATH=src python bench/mapping_scale.py [-o out.json] [--only 32768] [--warm]

Targets: issue 13, 4,096 ranks on 512 x 8 GPUs in <= 5 s and 256 ranks in <= 1 s; issue 28,
32,768 ranks on 4,096 x 8 GPUs in <= 10 s and <= 2 GB, on the 2-core development machine.
"""
from __future__ import annotations

import argparse
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
    ("fattree:4096x8", "stencil3d 32x32x32", "latency"),
    ("fattree:4096x8", "stencil3d 32x32x32", "bandwidth"),
    ("fattree:4096x8", "random-graph 32768", "latency"),
    ("fattree:4096x8", "random-graph 32768", "bandwidth"),
)

CHILD = r"""
import json, os, resource, sys, time, tracemalloc
from linkscope.topology.synthetic import synthetic_topology
from linkscope.traffic.synthetic import random_graph, random_sparse, stencil
from linkscope.mapping.api import map_onto
spec, pattern, metric, warm_too = sys.argv[1:5]
topology = synthetic_topology(spec)
kind, arg = pattern.split()
if kind == "stencil3d":
    traffic = stencil(tuple(int(x) for x in arg.split("x")), periodic=True)
elif kind == "random-graph":
    traffic = random_graph(int(arg), degree=16, seed=1)
else:
    traffic = random_sparse(int(arg), density=4.0 / int(arg), seed=1)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
load0 = os.getloadavg()
c0 = time.process_time(); t0 = time.perf_counter(); a = map_onto(traffic, topology, metric)
cold, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
row = {"cold_s": cold, "cold_cpu_s": cold_cpu, "load_average_1min": [load0[0], os.getloadavg()[0]],
       "rss_before_mib": rss0 / 1024, "rss_after_mib": rss1 / 1024, "ranks": traffic.ranks,
       "gpus": topology.gpu_count, "sparse": traffic.is_sparse, "cost": a.cost, "default_cost": a.default_cost,
       "solver": a.solver}
if warm_too == "1":
    tracemalloc.start()
    t0 = time.perf_counter(); b = map_onto(traffic, topology, metric); warm = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    row.update(warm_s_traced=warm, traced_peak_mib=peak / 2**20,
               same_answer_twice=a.gpu_of_rank == b.gpu_of_rank and a.node_of_rank == b.node_of_rank)
print(json.dumps(row))
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="bench/mapping_scale.py")
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help="JSON to write (default $OUT/mapping_scale.json, else ./mapping_scale.json)")
    parser.add_argument("legacy_output", nargs="?", type=Path, help=argparse.SUPPRESS)  # the old positional form
    parser.add_argument("--only", default="", help="run the cases whose topology, traffic or ranks contain this")
    parser.add_argument("--warm", action="store_true", help="also the traced warm call of the 32,768-rank cases")
    args = parser.parse_args(argv)
    out = args.output or args.legacy_output or Path(os.environ.get("OUT", ".")) / "mapping_scale.json"
    rows = []
    print(f"{'topology':15} {'traffic':20} {'metric':10} {'ranks':>6} {'cold s':>7} {'cpu s':>6} {'load':>5} "
          f"{'warm s*':>7} {'RSS MiB':>8} {'+MiB':>6} {'traced':>7} {'saved':>6}")
    for spec, pattern, metric in CASES:
        if args.only and not any(args.only in text for text in (spec, pattern)):
            continue
        big = pattern.endswith("32768") or "32x32x32" in pattern
        warm = "0" if big and not args.warm else "1"
        proc = subprocess.run([sys.executable, "-c", CHILD, spec, pattern, metric, warm], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            print(f"{spec} {pattern} {metric}: failed\n{proc.stderr[-1500:]}")
            return 1
        row = {"topology": spec, "traffic": pattern, "metric": metric, **json.loads(proc.stdout.strip().splitlines()[-1])}
        rows.append(row)
        warm_text = f"{row['warm_s_traced']:7.2f}" if "warm_s_traced" in row else f"{'-':>7}"
        traced = f"{row['traced_peak_mib']:7.0f}" if "traced_peak_mib" in row else f"{'-':>7}"
        print(f"{spec:15} {pattern:20} {metric:10} {row['ranks']:6d} {row['cold_s']:7.2f} {row['cold_cpu_s']:6.2f} "
              f"{row['load_average_1min'][0]:5.1f} {warm_text} {row['rss_after_mib']:8.0f} "
              f"{row['rss_after_mib'] - row['rss_before_mib']:6.0f} {traced} "
              f"{(1 - row['cost'] / row['default_cost']) * 100:5.1f}%", flush=True)
    print("* the warm call runs under tracemalloc, which slows Python allocations: read cold_s as the time")
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
              "command": "PYTHONPATH=src python bench/mapping_scale.py " + " ".join(argv), "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
