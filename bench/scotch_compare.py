"""linkscope's mapping against Scotch's ``gmap`` on many cases, both scored by linkscope's cost.

Cases (seeded, reproducible): sparse heavy-tailed graphs, stencils with odd shapes and unequal
axis weights (with and without wraparound), all-to-all with hot pairs, trees, scattered cliques
and fewer ranks than GPUs; on every shipped preset and on 32-, 64-, 256- and 4,096-GPU fat trees
(``fattree:4x8``, ``8x8``, ``32x8``, ``512x8``), with the distance, bandwidth, latency and
alpha-beta metrics.

linkscope runs as ``linkscope map`` does (``mapping.api.map_onto``: the flat solver on one node,
the hierarchical one on a fat tree). Scotch (Debian package ``scotch``: ``scotch_gmap``,
``amk_grf``) gets the traffic as a graph (edge weight: each term's flow scaled by its mean cost,
as linkscope's partitioner sees it; padded with silent ranks so that every GPU gets one) and the
best of several targets and strategies: a decomposition-defined target from the complete graph
of the integer-scaled GPU-pair costs (``amk_grf``, up to 256 GPUs) and, on fat trees, a tree-leaf
target (``tleaf``) with the cost of each level; strategies ``-cq`` (quality), ``-cb`` (balance)
and ``-cq -b0`` (no load imbalance). Scotch's balance is a tolerance, so it may put two ranks on
one GPU; such a mapping is repaired (each extra rank to the free GPU where its traffic costs
least) and counted. The best Scotch mapping by linkscope's cost is compared with linkscope's.

    PYTHONPATH=src python bench/scotch_compare.py [out.json] [--quick] [--no-4096] [--only=fattree:4x8,k80-16]
        [--metric=latency,distance] [--case=63x65]   (metrics, and cases whose name contains a string)
    PYTHONPATH=src python bench/scotch_compare.py [out.json] --scale [--metric=latency]
        (only the 32,768-rank cases on fattree:4096x8: the 32x32x32 stencil and the random graph of 16
        neighbours per rank, issue 28; latency and bandwidth)

Prints a table per target (wins / ties / losses, times) and writes JSON to the path given, else
``$OUT/scotch_compare.json``, else ``scotch_compare.json``. Exit status 1 when linkscope loses a case.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from linkscope.mapping.api import map_onto
from linkscope.mapping.cluster import ClusterCost, split_hosts, topology_cluster_cost
from linkscope.mapping.cost import CostModel, topology_cost
from linkscope.mapping.hierarchical import host_groups
from linkscope.mapping.problem import MappingProblem
from linkscope.topology.presets import load_preset, preset_names
from linkscope.topology.synthetic import synthetic_topology
from linkscope.traffic.matrix import TrafficMatrix
from linkscope.traffic.synthetic import random_graph, stencil, tree

METRICS = ("distance", "bandwidth", "latency", "alpha-beta")
FATTREES = ("fattree:4x8", "fattree:8x8", "fattree:32x8", "fattree:512x8")
AMK_UP_TO = 256
BIG_WEIGHTS_UP_TO = 4096
"""Up to this many GPUs Scotch's edge weights are scaled to 1e6, above to 1e3 (see scotch_best)."""
GMAP_TIMEOUT_S = 120
SCOTCH_CONTEXT = "-Cd"
"""Scotch's execution context: deterministic (fixed random seed). Debian's build otherwise draws a
new seed on every run, so the same case maps differently from run to run (fattree:512x8, latency,
stencil 63x65: 120354 to 120638 over 9 runs of -cq / -cb / -cq -b0, and once 119926)."""
RTOL = 1e-9
KIB = 1024


# ---- cases ----------------------------------------------------------------------------------------
def _matrix(bytes_: np.ndarray, messages: np.ndarray, origin: str) -> TrafficMatrix:
    np.fill_diagonal(bytes_, 0)
    np.fill_diagonal(messages, 0)
    return TrafficMatrix(bytes=bytes_, messages=messages, origin=f"synthetic:{origin}")


def heavy_tailed(n: int, seed: int) -> TrafficMatrix:
    """Sparse graph, Pareto-distributed degrees and volumes."""
    rng = np.random.default_rng(seed)
    b = np.zeros((n, n))
    m = np.zeros((n, n))
    degree = np.minimum(np.ceil(rng.pareto(1.5, n) + 1).astype(int), n - 1)
    for r in range(n):
        for s in rng.choice(n, size=degree[r], replace=False):
            if s != r:
                volume = float(np.ceil((rng.pareto(1.2) + 1) * 64 * KIB))
                count = float(np.ceil(rng.pareto(1.5) + 1))
                b[r, s] += volume
                b[s, r] += volume
                m[r, s] += count
                m[s, r] += count
    return _matrix(b, m, f"heavy-tailed n={n} seed={seed}")


def odd_stencil(grid: tuple[int, ...], periodic: bool, weights: tuple[float, ...]) -> TrafficMatrix:
    t = stencil(grid, periodic=periodic, size_bytes=256 * KIB, weights=weights)
    return TrafficMatrix(bytes=t.bytes, messages=t.messages,
                         origin=f"synthetic:stencil {'x'.join(map(str, grid))} w={weights} wrap={periodic}")


def hot_all_to_all(n: int, seed: int) -> TrafficMatrix:
    rng = np.random.default_rng(seed)
    b = np.full((n, n), 4.0 * KIB)
    m = np.ones((n, n))
    hot = rng.choice(n * n, size=max(n // 2, 1), replace=False)
    r, s = np.divmod(hot, n)
    b[r, s] += 2 * 1024 * KIB
    b[s, r] += 2 * 1024 * KIB
    m[r, s] += 20
    m[s, r] += 20
    return _matrix(b, m, f"all-to-all + hot pairs n={n} seed={seed}")


def random_tree(n: int, seed: int) -> TrafficMatrix:
    rng = np.random.default_rng(seed)
    b = np.zeros((n, n))
    for child in range(1, n):
        parent = int(rng.integers(0, child))
        volume = float(rng.integers(1, 9)) * 128 * KIB
        b[parent, child] = b[child, parent] = volume
    return _matrix(b, (b > 0).astype(float) * 4, f"random tree n={n} seed={seed}")


def scattered_cliques(n: int, size: int, seed: int) -> TrafficMatrix:
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    b = np.zeros((n, n))
    for start in range(0, n - size + 1, size):
        members = order[start:start + size]
        b[np.ix_(members, members)] = 512 * KIB
    return _matrix(b, (b > 0).astype(float) * 2, f"{n // size} scattered {size}-cliques n={n} seed={seed}")


def _grid_near(n: int, dims: int) -> tuple[int, ...]:
    """An odd-shaped grid of at most n ranks (unequal, often odd sides)."""
    if dims == 2:
        a = max(int(np.sqrt(n)) - 1, 1) | 1
        return (a, max(n // a, 1))
    a = max(round(n ** (1 / 3)) - 1, 1) | 1
    b = max(int(np.sqrt(n // a)), 1)
    return (a, b, max(n // (a * b), 1))


def cases(gpus: int, quick: bool, seed: int = 0) -> list[TrafficMatrix]:
    """The cases for a target of ``gpus`` GPUs (fewer for 4,096 GPUs)."""
    big = gpus >= 1024
    fewer = max(2, (gpus * 3) // 4)
    out = [heavy_tailed(gpus, seed + 1), odd_stencil(_grid_near(gpus, 2), False, (1.0, 3.0)),
           odd_stencil(_grid_near(gpus, 3), True, (1.0, 2.0, 5.0)) if gpus >= 8 else
           odd_stencil((gpus,), True, (1.0,)),
           hot_all_to_all(min(gpus, 512), seed + 2) if not big else scattered_cliques(gpus, 8, seed + 9),
           tree(gpus, size_bytes=256 * KIB), random_tree(gpus, seed + 3),
           scattered_cliques(gpus, 4 if gpus >= 8 else 2, seed + 4), heavy_tailed(fewer, seed + 5)]
    if not quick and not big:
        out += [odd_stencil(_grid_near(fewer, 2), True, (2.0, 1.0)), scattered_cliques(fewer, 3, seed + 6),
                random_tree(fewer, seed + 7), heavy_tailed(gpus, seed + 8)]
    return out


# ---- Scotch ---------------------------------------------------------------------------------------
def write_grf(path: Path, weights: sp.csr_matrix) -> None:
    """Scotch source graph (symmetric, integer edge weights >= 1, no vertex weights)."""
    w = sp.csr_matrix(weights)
    w.setdiag(0)
    w.eliminate_zeros()
    lines = ["0", f"{w.shape[0]} {w.nnz}", "0 010"]
    for v in range(w.shape[0]):
        lo, hi = w.indptr[v], w.indptr[v + 1]
        pairs = " ".join(f"{int(x)} {int(u)}" for u, x in zip(w.indices[lo:hi], w.data[lo:hi]))
        lines.append(f"{hi - lo} {pairs}".rstrip())
    path.write_text("\n".join(lines) + "\n")


def integer_weights(w: sp.csr_matrix, top: float = 1e6) -> sp.csr_matrix:
    w = sp.csr_matrix(w, dtype=np.float64)
    if w.nnz:
        w.data = np.maximum(np.rint(w.data / w.data.max() * top), 1)
    return w


def integer_costs(c: np.ndarray) -> np.ndarray:
    positive = c[c > 0]
    if positive.size == 0:
        return np.ones_like(c, dtype=int)
    scaled = np.rint(c / positive.min() * 10).astype(int)
    np.fill_diagonal(scaled, 0)
    return np.maximum(scaled, 1 - np.eye(len(c), dtype=int))


LAST_GMAP_ERROR: list[str] = [""]
"""Why the last failed scotch_gmap run failed (its stderr's last line, or the timeout)."""


def run_gmap(source: Path, target: Path, strategy: str, folder: Path, vertices: int) -> tuple[np.ndarray | None, float]:
    out = folder / "out.map"
    t0 = time.perf_counter()
    try:  # scotch_gmap 7.0.3 once hung (0 % CPU) on a 4,096-vertex tree-leaf target with -b0
        proc = subprocess.run(["scotch_gmap", SCOTCH_CONTEXT, *strategy.split(), str(source), str(target), str(out)],
                              capture_output=True, text=True, timeout=GMAP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        LAST_GMAP_ERROR[0] = f"timed out after {GMAP_TIMEOUT_S} s"
        return None, time.perf_counter() - t0
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        LAST_GMAP_ERROR[0] = ((proc.stderr or proc.stdout).strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return None, seconds
    part = np.full(vertices, -1, dtype=int)
    for line in out.read_text().split("\n")[1:]:
        if line.strip():
            v, p = map(int, line.split())
            part[v] = p
    return part, seconds


# ---- scoring --------------------------------------------------------------------------------------
class Scorer:
    """linkscope's cost of a mapping (GPU index of each rank, the topology's numbering)."""

    def __init__(self, topology, metric: str, traffic: TrafficMatrix, cluster: ClusterCost | None,
                 node: CostModel | None) -> None:
        self.cluster, self.node = cluster, node
        b, m = traffic.sparse_offdiagonal_bytes(), traffic.sparse_offdiagonal_messages()  # no N x N array
        base = cluster.node if cluster is not None else node
        self.flows = [sp.csr_matrix(f) for f in base.flow_matrices(b, m)]
        self.ranks = traffic.ranks
        if cluster is not None:
            g = cluster.gpus_per_host
            host = np.zeros(cluster.hosts * g, dtype=int)
            local = np.zeros(cluster.hosts * g, dtype=int)
            for h, row in enumerate(cluster.gpu_of_host):
                host[row] = h
                local[row] = np.arange(g)
            self.host, self.local = host, local
        else:
            self.problem = MappingProblem(tuple(f.toarray() for f in self.flows), node.costs, traffic.ranks)

    def __call__(self, gpu_of_rank: np.ndarray) -> float:
        if self.cluster is not None:
            return self.cluster.objective(self.flows, self.host[gpu_of_rank], self.local[gpu_of_rank])
        return self.problem.objective(self.problem.complete(gpu_of_rank))

    def surrogate_weight(self) -> tuple[sp.csr_matrix, list[float]]:
        """One graph for Scotch: each term's flow times its mean cost; and the terms' factors."""
        costs = self.cluster.node.costs if self.cluster is not None else self.node.costs
        factors = []
        weight = sp.csr_matrix(self.flows[0].shape)
        for term, f in enumerate(self.flows):
            if self.cluster is not None:
                mean = float(self.cluster.host_cost(term)[0, 1:].mean()) if self.cluster.hosts > 1 else costs[term].mean()
            else:
                mean = float(costs[term][~np.eye(len(costs[term]), dtype=bool)].mean())
            factors.append(mean)
            weight = weight + f * mean
        return (weight + weight.T).tocsr(), factors


def dense_cost(scorer: Scorer, factors: list[float]) -> np.ndarray:
    """GPU x GPU cost of the surrogate (each term's cost times its flow's share)."""
    totals = [float(f.sum()) for f in scorer.flows]
    base = max(sum(t * fac for t, fac in zip(totals, factors)), 1e-300)
    share = [t / base for t in totals]
    if scorer.cluster is not None:
        c = scorer.cluster
        n = c.hosts * c.gpus_per_host
        a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        out = np.zeros((n, n))
        for term in range(len(c.node.costs)):
            out += share[term] * c.pair_cost(term, scorer.host[a], scorer.local[a], scorer.host[b], scorer.local[b])
    else:
        out = sum(s * c for s, c in zip(share, scorer.node.costs))
    np.fill_diagonal(out, 0)
    return out


def tleaf(scorer: Scorer, factors: list[float]) -> tuple[str, np.ndarray] | None:
    """A tree-leaf target for a fat tree: hosts in groups of near hosts, GPUs in hosts."""
    c = scorer.cluster
    if c is None:
        return None
    totals = [float(f.sum()) for f in scorer.flows]
    hc = sum(c.host_cost(t) * totals[t] for t in range(len(totals)))
    groups = host_groups(hc, range(c.hosts))
    g = c.gpus_per_host

    def level_cost(ha: int, hb: int, xa: int, xb: int) -> float:
        return sum(totals[t] * float(c.pair_cost(t, np.array([ha]), np.array([xa]), np.array([hb]), np.array([xb]))[0])
                   for t in range(len(totals)))

    intra = level_cost(0, 0, 0, 1)
    if len(groups) == c.hosts or len(groups) == 1:
        costs = [level_cost(0, 1, 0, 0), intra]
        spec = [c.hosts, g]
    else:
        if len({len(gr) for gr in groups}) != 1:
            return None
        far = level_cost(groups[0][0], groups[1][0], 0, 0)
        near = level_cost(groups[0][0], groups[0][1], 0, 0)
        costs = [far, near, intra]
        spec = [len(groups), len(groups[0]), g]
    low = min(x for x in costs if x > 0)
    ints = [max(round(x / low * 10), 1) for x in costs]
    order = np.array([c.gpu_of_host[h, x] for group in groups for h in group for x in range(g)])
    return "tleaf " + str(len(spec)) + " " + " ".join(f"{a} {w}" for a, w in zip(spec, ints)), order


def repair(gpu: np.ndarray, weight: sp.csr_matrix, gpus: int, cost: np.ndarray | None) -> tuple[np.ndarray, int]:
    """Scotch may put two ranks on one GPU (its balance is a tolerance): move each extra rank to
    the free GPU where its traffic costs least (the first free GPU without a cost matrix)."""
    gpu = gpu.copy()
    seen: set[int] = set()
    extras = []
    for r, g in enumerate(gpu.tolist()):
        if g in seen:
            extras.append(r)
        seen.add(g)
    free = [g for g in range(gpus) if g not in seen]
    w = sp.csr_matrix(weight)
    for r in extras:
        if cost is None:
            gpu[r] = free.pop(0)
            continue
        lo, hi = w.indptr[r], w.indptr[r + 1]
        nbr = [u for u in w.indices[lo:hi] if u < len(gpu)]
        vals = w.data[lo:hi][[k for k, u in enumerate(w.indices[lo:hi]) if u < len(gpu)]]
        scores = [float((vals * cost[f, gpu[nbr]]).sum()) if nbr else 0.0 for f in free]
        gpu[r] = free.pop(int(np.argmin(scores)))
    return gpu, len(extras)


def scotch_best(scorer: Scorer, gpus: int) -> dict:
    """Scotch's best mapping over targets and strategies, scored by linkscope."""
    weight, factors = scorer.surrogate_weight()
    padded = sp.csr_matrix(weight)
    padded.resize((gpus, gpus))
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # 32,768 vertices: edge weights up to 1e6 times the tree-leaf level costs overflowed inside
        # scotch_gmap 7.0 (SIGSEGV on the bandwidth stencil); 1e3 keeps 3 digits of the weights
        write_grf(folder / "src.grf", integer_weights(padded, top=1e6 if gpus <= BIG_WEIGHTS_UP_TO else 1e3))
        targets = []
        cost_matrix = dense_cost(scorer, factors) if gpus <= AMK_UP_TO else None
        if cost_matrix is not None:
            cost = integer_costs(cost_matrix)
            write_grf(folder / "tgt.grf", sp.csr_matrix(cost))
            t0 = time.perf_counter()
            subprocess.run(["amk_grf", str(folder / "tgt.grf"), str(folder / "cmplt.tgt")], check=True, capture_output=True)
            targets.append(("amk", folder / "cmplt.tgt", None, time.perf_counter() - t0))
        leaf = tleaf(scorer, factors)
        if leaf is not None:
            (folder / "tleaf.tgt").write_text(leaf[0] + "\n")
            targets.append(("tleaf", folder / "tleaf.tgt", leaf[1], 0.0))
        for name, path, order, build_s in targets:
            for strategy in ("-cq", "-cb", "-cq -b0"):
                part, seconds = run_gmap(folder / "src.grf", path, strategy, folder, gpus)
                if part is None or (part < 0).any():
                    runs.append({"target": name, "strategy": strategy, "failed": True, "seconds": seconds,
                                 "error": LAST_GMAP_ERROR[0] if part is None else "ranks left unmapped"})
                    continue
                gpu = order[part] if order is not None else part  # tleaf terminal -> GPU index
                real, repaired = repair(gpu[: scorer.ranks], weight, gpus, cost_matrix)
                runs.append({"target": name, "strategy": strategy, "seconds": seconds + build_s, "repaired": repaired,
                             "cost": scorer(real)})
    good = [r for r in runs if r.get("cost") is not None]
    best = min(good, key=lambda r: r["cost"]) if good else None
    return {"runs": runs, "best": best, "seconds": sum(r["seconds"] for r in runs)}


# ---- main -----------------------------------------------------------------------------------------
SCALE_TARGET = "fattree:4096x8"


def scale_cases() -> list[TrafficMatrix]:
    """The 32,768-rank cases (issue 28), built sparse as bench/mapping_scale.py builds them."""
    return [stencil((32, 32, 32), periodic=True), random_graph(32768, degree=16, seed=1)]


def targets(include_4096: bool) -> list[tuple[str, object]]:
    out = [(name, load_preset(name)) for name in preset_names()]
    for spec in FATTREES:
        if spec.endswith("512x8") and not include_4096:
            continue
        out.append((spec, synthetic_topology(spec)))
    return out


def compare(label: str, topology, metric: str, traffic: TrafficMatrix) -> dict:
    layout = split_hosts(topology)
    cluster = topology_cluster_cost(topology, metric, hosts=layout) if len(layout.gpus) > 1 else None
    node = None if cluster is not None else topology_cost(topology, metric)
    t0 = time.perf_counter()
    a = map_onto(traffic, topology, metric)
    ls_s = time.perf_counter() - t0
    scorer = Scorer(topology, metric, traffic, cluster, node)
    if a.node_of_rank is not None:
        gpu = cluster.gpu_of_host[np.array(a.node_of_rank), np.array(a.gpu_of_rank)]
    else:
        gpu = np.array(a.gpu_of_rank)
    ours = scorer(gpu)
    scotch = scotch_best(scorer, topology.gpu_count)
    best = scotch["best"]
    row = {"target": label, "gpus": topology.gpu_count, "metric": metric, "case": traffic.origin.removeprefix("synthetic:"),
           "ranks": traffic.ranks, "linkscope": ours, "linkscope_reported": a.cost, "default": a.default_cost,
           "linkscope_s": ls_s, "proven": a.optimal, "solver": a.solver, "scotch_s": scotch["seconds"],
           "scotch": best["cost"] if best else None, "scotch_runs": scotch["runs"]}
    if best is None:
        row["verdict"] = "scotch failed"
    else:
        tol = RTOL * max(abs(ours), abs(best["cost"]), 1e-300)
        row["verdict"] = "win" if ours < best["cost"] - tol else "loss" if ours > best["cost"] + tol else "tie"
    return row


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    args = [a for a in argv if not a.startswith("--")]
    out = Path(args[0]) if args else Path(os.environ.get("OUT", ".")) / "scotch_compare.json"
    if not (shutil.which("scotch_gmap") and shutil.which("amk_grf")):
        print("scotch_gmap / amk_grf not found: apt-get install -y scotch", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows = []
    only = next((a.split("=", 1)[1].split(",") for a in argv if a.startswith("--only=")), None)
    only_metrics = next((a.split("=", 1)[1].split(",") for a in argv if a.startswith("--metric=")), None)
    only_case = next((a.split("=", 1)[1] for a in argv if a.startswith("--case=")), None)
    scale = "--scale" in argv
    chosen = [(SCALE_TARGET, synthetic_topology(SCALE_TARGET))] if scale else targets("--no-4096" not in argv)
    for label, topology in chosen:
        if only and label not in only:
            continue
        n = topology.gpu_count
        metrics = ("latency", "bandwidth") if scale else METRICS if n < 1024 or not quick else ("bandwidth", "latency")
        for metric in metrics:
            if only_metrics and metric not in only_metrics:
                continue
            for traffic in scale_cases() if scale else cases(n, quick):
                if only_case and only_case not in traffic.origin:
                    continue
                row = compare(label, topology, metric, traffic)
                rows.append(row)
                if row["verdict"] == "loss":
                    print(f"  LOSS {label} {metric} {row['case']}: linkscope {row['linkscope']:.6g} "
                          f"scotch {row['scotch']:.6g}", flush=True)
        mine = [r for r in rows if r["target"] == label]
        if not mine:
            continue
        count = {v: sum(r["verdict"] == v for r in mine) for v in ("win", "tie", "loss", "scotch failed")}
        print(f"{label:20} {n:5d} GPUs {len(mine):4d} cases  win {count['win']:3d} tie {count['tie']:3d} "
              f"loss {count['loss']:3d}  linkscope max {max(r['linkscope_s'] for r in mine):6.2f} s "
              f"(median {np.median([r['linkscope_s'] for r in mine]):5.2f})  scotch max "
              f"{max(r['scotch_s'] for r in mine):6.2f} s", flush=True)
    total = {v: sum(r["verdict"] == v for r in rows) for v in ("win", "tie", "loss", "scotch failed")}
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
              "command": "PYTHONPATH=src python bench/scotch_compare.py " + " ".join(argv),
              "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
              "totals": total, "cases": len(rows), "rows": rows, "total_s": time.perf_counter() - started}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=float) + "\n")
    print(f"\n{len(rows)} cases: win {total['win']}, tie {total['tie']}, loss {total['loss']}, "
          f"scotch failed {total['scotch failed']}; wrote {out} ({report['total_s']:.0f} s)")
    return 1 if total["loss"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
