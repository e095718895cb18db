"""linkscope's flow model beside SimGrid: the same links, routes and flows, completion times and wall time.

Builds concurrent GPU-to-GPU copies between random GPU pairs of ``fattree:NODESxGPUS`` with
linkscope (routes, effective capacities, per-flow caps and start latencies), exports the flow problem
as JSON, runs it in SimGrid (bench/simgrid_run.py under the system python3 with Debian's
python3-simgrid: ``apt-get install -y python3-simgrid``) and in linkscope (exact and batched), and
prints a table: flows, sizes, wall seconds of each, max / median relative difference of completion
times against linkscope exact. SimGrid runs that pass ``--timeout`` are reported as not finished.

    PYTHONPATH=src python bench/simgrid_compare.py --flows 1000,2000 --mixed [--optim Full,Lazy] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def build(nodes: int, gpus: int, flows: int, mixed: bool, size_bytes: int, seed: int):
    from linkscope.model.predict import FabricModel
    from linkscope.topology.synthetic import synthetic_topology

    topo = synthetic_topology(f"fattree:{nodes}x{gpus}")
    model = FabricModel(topo)
    rng = np.random.default_rng(seed)
    n = topo.gpu_count
    src = rng.integers(0, n, flows)
    dst = rng.integers(0, n - 1, flows)
    dst = np.where(dst >= src, dst + 1, dst)
    if mixed:
        sizes = np.exp(rng.uniform(np.log(4096), np.log(size_bytes), flows)).astype(np.int64)
    else:
        sizes = np.full(flows, size_bytes, dtype=np.int64)
    return topo, model.peer_problem(src, dst, sizes)


def export(problem, optim: str) -> dict:
    """The problem as SimGrid input: links used (B/s) and each flow's size, start latency, cap and route."""
    A = problem.A.tocsc()
    if A.nnz and not np.all(A.data == 1.0):
        raise SystemExit("only single-weight (peer copy) problems export to SimGrid")
    used = np.unique(A.indices)
    local = np.full(A.shape[0], -1, dtype=np.int64)
    local[used] = np.arange(used.size)
    links = [[f"r{int(r)}", float(problem.capacity_gb_per_s[r]) * 1e9] for r in used]
    flows = []
    for j in range(A.shape[1]):
        route = local[A.indices[A.indptr[j]:A.indptr[j + 1]]].tolist()
        cap = float(problem.stage_cap_gb_per_s[j]) * 1e9
        flows.append([float(problem.stage_bytes[j]), float(problem.stage_latency_s[j]), cap if np.isfinite(cap) else 1e30, route])
    return {"links": links, "flows": flows, "optim": optim}


def run_simgrid(data: dict, timeout_s: float) -> dict | None:
    t = time.perf_counter()
    try:
        out = subprocess.run(["/usr/bin/python3", str(HERE / "simgrid_run.py")], input=json.dumps(data), text=True,
                             capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        raise SystemExit(f"SimGrid run failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
    result = json.loads(out.stdout)
    result["total_s"] = time.perf_counter() - t
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--flows", default="1000,2000", help="comma-separated flow counts")
    ap.add_argument("--size-bytes", type=int, default=64 * 2**20)
    ap.add_argument("--mixed", action="store_true", help="log-uniform sizes from 4 KiB to --size-bytes")
    ap.add_argument("--optim", default="Full", help="SimGrid network/optim values, comma-separated (Full, Lazy)")
    ap.add_argument("--rtol", type=float, default=0.01, help="linkscope batched completion tolerance")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds allowed to each SimGrid run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    from linkscope.model.contention import simulate

    rows = []
    for flows in [int(x) for x in args.flows.split(",") if x]:
        topo, problem = build(args.nodes, args.gpus, flows, args.mixed, args.size_bytes, args.seed)
        row: dict = {"flows": flows, "topology": topo.name, "sizes": "mixed" if args.mixed else args.size_bytes}
        t = time.perf_counter()
        exact = simulate(problem, rtol=0.0)
        row["linkscope_exact_s"] = time.perf_counter() - t
        t = time.perf_counter()
        batched = simulate(problem, rtol=args.rtol)
        row["linkscope_batched_s"] = time.perf_counter() - t
        rel = np.abs(batched.finish_s / exact.finish_s - 1)
        row["batched_max_rel"], row["batched_median_rel"] = float(rel.max()), float(np.median(rel))
        for optim in [o for o in args.optim.split(",") if o]:
            sg = run_simgrid(export(problem, optim), args.timeout)
            if sg is None:
                row[f"simgrid_{optim}_s"] = None
                continue
            fin = np.asarray(sg["finish_s"])
            diff = np.abs(fin / exact.finish_s - 1)
            row[f"simgrid_{optim}_s"] = sg["wall_s"]
            row[f"simgrid_{optim}_max_rel"], row[f"simgrid_{optim}_median_rel"] = float(diff.max()), float(np.median(diff))
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n{'flows':>7} {'exact s':>8} {'batched s':>9} {'batched max rel':>15}" +
          "".join(f" {'SimGrid ' + o + ' s':>16} {'max rel':>9}" for o in args.optim.split(",")))
    for r in rows:
        line = f"{r['flows']:>7} {r['linkscope_exact_s']:>8.2f} {r['linkscope_batched_s']:>9.2f} {r['batched_max_rel']:>15.2e}"
        for o in args.optim.split(","):
            s = r.get(f"simgrid_{o}_s")
            line += f" {'not finished' if s is None else f'{s:.2f}':>16} {r.get(f'simgrid_{o}_max_rel', float('nan')):>9.1e}"
        print(line)
    if args.json:
        out = {"benchmark": "simgrid_compare", "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
               "args": vars(args), "rows": rows}
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
