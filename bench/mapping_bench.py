"""Mapping benchmark: exact-solver speed and proofs, heuristic quality, scale, peers, and the
model metric (predicted exchange time with contention, against the default mapping and the
bandwidth metric's mapping, all scored by the same fabric model).

Runs on a CPU (no GPU needed). Prints a short table per part and writes JSON to the path given
as the first argument, else ``$OUT/mapping_bench.json``, else ``mapping_bench.json``.

    PYTHONPATH=src python bench/mapping_bench.py [out.json] [--quick]

Peers (skipped with a note when absent): Scotch's ``scotch_gmap`` (Debian package ``scotch``;
through bench/scotch_compare.py, which holds the full comparison) and KaHIP (PyPI ``kahip``; its Python module
offers only ``kaffpa`` partitioning, so it is compared on the ranks -> nodes stage).
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from linkscope.mapping.api import map_traffic, network_costs
from linkscope.mapping.cluster import copies
from linkscope.mapping.cost import CostModel, topology_cost
from linkscope.mapping.exact import solve_exact
from linkscope.mapping.fabric import exchange_transfers
from linkscope.mapping.heuristic import solve_heuristic
from linkscope.mapping.hierarchical import solve_cluster
from linkscope.mapping.partition import cut_weight
from linkscope.mapping.problem import MappingProblem
from linkscope.topology.presets import load_preset, preset_names
from linkscope.topology.synthetic import synthetic_topology
from linkscope.traffic.synthetic import random_sparse, ring, stencil

PRESETS = ("k80-16", "pcie-8gpu-2socket", "mi250x-8gcd", "dgx-a100", "v100-4-nvlink-ib")


def patterns(n: int) -> list:
    grids2 = {4: (2, 2), 8: (2, 4), 10: (2, 5), 16: (4, 4)}
    grids3 = {4: (1, 2, 2), 8: (2, 2, 2), 16: (2, 2, 4)}
    out = []
    if n in grids2:
        out += [stencil(grids2[n], False), stencil(grids2[n], True)]
    if n in grids3:
        out += [stencil(grids3[n], False), stencil(grids3[n], True)]
    out += [ring(n)] + [random_sparse(n, density=0.4, seed=s) for s in (1, 2, 3)]
    return out


def problem_of(traffic, cost: CostModel) -> MappingProblem:
    return MappingProblem(cost.flow_matrices(traffic.offdiagonal_bytes(), traffic.offdiagonal_messages()), cost.costs,
                          traffic.ranks)


def sub_cost(cost: CostModel, gpus: list[int], name: str) -> CostModel:
    idx = np.ix_(gpus, gpus)
    return CostModel(cost.metric, cost.flows, tuple(c[idx] for c in cost.costs), cost.unit, name)


# ---- part 1 and 2: exact and heuristic on 8-10 GPUs ---------------------------------------------
def exact_cases(quick: bool) -> list[dict]:
    machines = []
    for name in ("pcie-8gpu-2socket", "mi250x-8gcd"):
        if name in preset_names():
            machines.append((name, load_preset(name)))
    machines.append(("pcie:2x5 (synthetic)", synthetic_topology("pcie:2x5")))
    rows = []
    for label, topo in machines:
        for metric in ("distance", "bandwidth"):
            cost = topology_cost(topo, metric)
            rows += _exact_rows(label, cost, metric)
    if "k80-16" in preset_names():
        k80 = load_preset("k80-16")
        for metric in ("distance", "bandwidth"):
            cost = sub_cost(topology_cost(k80, metric), list(range(10)), "k80-16 GPUs 0-9")
            rows += _exact_rows("k80-16 GPUs 0-9", cost, metric)
    return rows[:8] if quick else rows


def _exact_rows(label: str, cost: CostModel, metric: str) -> list[dict]:
    rows = []
    for traffic in patterns(cost.gpus):
        problem = problem_of(traffic, cost)
        t0 = time.perf_counter()
        cold = solve_exact(problem, node_limit=2_000_000)
        cold_s = time.perf_counter() - t0
        heur = solve_heuristic(problem)
        warm = solve_exact(problem, incumbent=heur.perm, node_limit=2_000_000)
        optimum = min(cold.cost, warm.cost)
        rows.append({
            "machine": label, "gpus": cost.gpus, "metric": metric, "pattern": traffic.origin.removeprefix("synthetic:"),
            "exact_s": cold_s, "exact_nodes": cold.nodes, "proven": cold.optimal,
            "heuristic_then_exact_s": heur.elapsed_s + warm.elapsed_s,
            "heuristic_s": heur.elapsed_s, "heuristic_gap": heur.cost / optimum - 1 if optimum > 0 else 0.0,
            "default_gap": problem.objective(range(cost.gpus)) / optimum - 1 if optimum > 0 else 0.0,
        })
    return rows


# ---- part 3: 16 GPUs heuristic ----------------------------------------------------------------------
def sixteen_cases() -> list[dict]:
    if "k80-16" not in preset_names():
        return []
    topo = load_preset("k80-16")
    rows = []
    for metric in ("distance", "bandwidth"):
        cost = topology_cost(topo, metric)
        for traffic in patterns(16):
            problem = problem_of(traffic, cost)
            heur = solve_heuristic(problem)
            rows.append({"machine": "k80-16", "gpus": 16, "metric": metric,
                         "pattern": traffic.origin.removeprefix("synthetic:"), "heuristic_s": heur.elapsed_s,
                         "saved": 1 - heur.cost / problem.objective(range(16))})
    return rows


# ---- part 4: 4096 ranks on 512 nodes x 8 GPUs --------------------------------------------------------
def cluster_case(quick: bool) -> dict:
    node_name = "pcie-8gpu-2socket" if "pcie-8gpu-2socket" in preset_names() else None
    node = load_preset(node_name) if node_name else synthetic_topology("pcie:2x4")
    grid = (8, 8, 8) if quick else (16, 16, 16)
    nodes = int(np.prod(grid)) // 8
    traffic = stencil(grid, True)
    cost = topology_cost(node, "distance")
    net = network_costs(cost, node)
    cluster = copies(cost, nodes, net)
    flows = [sp.csr_matrix(traffic.offdiagonal_bytes())]
    t0 = time.perf_counter()
    result = solve_cluster(flows, cluster)
    elapsed = time.perf_counter() - t0
    out = {"ranks": traffic.ranks, "nodes": nodes, "gpus_per_node": 8, "node": node_name or "pcie:2x4 (synthetic)",
           "pattern": traffic.origin, "metric": "distance", "seconds": elapsed, "cost": result.cost,
           "default_cost": result.default_cost, "saved": 1 - result.cost / result.default_cost,
           "inter_node_bytes": cut_weight(flows[0], np.array(result.node_of_rank)),
           "default_inter_node_bytes": cut_weight(flows[0], np.arange(traffic.ranks) // 8)}
    out["kahip"] = kahip_partition(flows[0], nodes, cost, net, result)
    return out


def kahip_partition(w: sp.csr_matrix, nodes: int, cost: CostModel, net, ours) -> dict:
    try:
        import kahip
    except ImportError:
        return {"available": False, "note": "pip install kahip failed or is absent"}
    sym = ((w + w.T) / 2).tocsr()
    sym.setdiag(0)
    sym.eliminate_zeros()
    scale = 1.0 / sym.data.min()
    t0 = time.perf_counter()
    _, blocks = kahip.kaffpa([1] * sym.shape[0], sym.indptr.tolist(), np.rint(sym.data * scale).astype(int).tolist(),
                             sym.indices.tolist(), nodes, 0.0, True, 0, kahip.STRONG)
    seconds = time.perf_counter() - t0
    parts = np.array(blocks)
    sizes = np.bincount(parts, minlength=nodes)
    entry = {"available": True, "mode": "kaffpa STRONG, imbalance 0", "seconds": seconds,
             "inter_node_bytes": cut_weight(w, parts), "balanced": bool((sizes == 8).all()),
             "max_ranks_per_node": int(sizes.max())}
    if entry["balanced"]:
        gpu = np.zeros(len(parts), dtype=int)
        for k in range(nodes):
            gpu[parts == k] = np.arange(8)
        entry["cost_with_identity_inside_nodes"] = copies(cost, nodes, net).objective([w], parts, gpu)
    entry["ratio_inter_node_bytes_vs_linkscope"] = entry["inter_node_bytes"] / cut_weight(w, np.array(ours.node_of_rank))
    return entry


# ---- part 6: the model metric ----------------------------------------------------------------------
def model_cases(quick: bool) -> list[dict]:
    """Predicted exchange time of the model metric's mapping vs the default and vs the bandwidth
    metric's mapping (scored by the same fabric model), and the model metric's wall time."""
    rows = []
    for name in ("pcie-8gpu-2socket", "k80-16", "mi250x-8gcd", "v100-4-nvlink-ib"):
        if name not in preset_names():
            continue
        topo = load_preset(name)
        t0 = time.perf_counter()
        model_cost = topology_cost(topo, "model")
        build_s = time.perf_counter() - t0
        bandwidth_cost = topology_cost(topo, "bandwidth")
        for traffic in patterns(topo.gpu_count)[: (2 if quick else 5)]:
            t0 = time.perf_counter()
            chosen = map_traffic(traffic, model_cost, topo, time_limit_s=10)
            seconds = time.perf_counter() - t0
            by_bandwidth = map_traffic(traffic, bandwidth_cost, topo, time_limit_s=10)
            g = by_bandwidth.gpu_of_rank
            bandwidth_us = model_cost.exchange_time(
                [(g[r], g[s], b) for r, s, b in exchange_transfers(traffic.offdiagonal_bytes())]) * 1e6
            rows.append({"machine": name, "pattern": traffic.origin.removeprefix("synthetic:"),
                         "cost_build_s": build_s, "seconds": seconds, "uniform": chosen.uniform,
                         "exchange_us": chosen.exchange_time_us, "default_exchange_us": chosen.default_exchange_time_us,
                         "bandwidth_metric_exchange_us": bandwidth_us,
                         "pairwise_us": chosen.pairwise_cost, "default_pairwise_us": chosen.default_pairwise_cost})
    return rows


# ---- part 5: peers on the presets -------------------------------------------------------------------
def peer_cases(quick: bool) -> list[dict]:
    """The presets against Scotch, by bench/scotch_compare.py's own comparison (one home)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import scotch_compare

    if not (shutil.which("scotch_gmap") and shutil.which("amk_grf")):
        return []
    rows = []
    for name in PRESETS:
        if name not in preset_names():
            continue
        topo = load_preset(name)
        for metric in ("distance", "bandwidth"):
            for traffic in patterns(topo.gpu_count)[: (3 if quick else None)]:
                row = scotch_compare.compare(name, topo, metric, traffic)
                rows.append({"machine": name, "metric": metric, "pattern": row["case"], "linkscope": row["linkscope"],
                             "default": row["default"], "proven": row["proven"], "uniform": False,
                             "scotch": row["scotch"], "scotch_vs_linkscope":
                             row["scotch"] / row["linkscope"] if row["scotch"] and row["linkscope"] else 1.0})
    return rows


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    args = [a for a in argv if not a.startswith("--")]
    out = Path(args[0]) if args else Path(os.environ.get("OUT", ".")) / "mapping_bench.json"
    started = time.perf_counter()
    report = {
        "date": datetime.date.today().isoformat(), "host": platform.node(), "python": platform.python_version(),
        "cpus": os.cpu_count(), "command": "PYTHONPATH=src python bench/mapping_bench.py " + " ".join(argv),
    }
    exact = exact_cases(quick)
    report["exact"] = exact
    print("exact + heuristic, 8-10 GPUs")
    print(f"{'machine':24} {'metric':9} {'pattern':34} {'exact s':>8} {'proven':>6} {'heur gap':>8} {'default gap':>11}")
    for r in exact:
        print(f"{r['machine']:24} {r['metric']:9} {r['pattern'][:34]:34} {r['exact_s']:8.3f} {r['proven']!s:>6} "
              f"{r['heuristic_gap'] * 100:7.2f}% {r['default_gap'] * 100:10.1f}%")
    sixteen = sixteen_cases()
    report["sixteen"] = sixteen
    if sixteen:
        print(f"\nheuristic on k80-16: max {max(r['heuristic_s'] for r in sixteen):.3f} s over {len(sixteen)} cases")
    cluster = cluster_case(quick)
    report["cluster"] = cluster
    print(f"\n{cluster['ranks']} ranks on {cluster['nodes']} nodes x 8 GPUs ({cluster['node']}): {cluster['seconds']:.1f} s, "
          f"saved {cluster['saved'] * 100:.1f}% vs block mapping; inter-node bytes {cluster['inter_node_bytes']:.3g} "
          f"(default {cluster['default_inter_node_bytes']:.3g})")
    if cluster["kahip"].get("available"):
        k = cluster["kahip"]
        print(f"  KaHIP kaffpa: inter-node bytes {k['inter_node_bytes']:.3g} ({k['ratio_inter_node_bytes_vs_linkscope']:.3f}x "
              f"linkscope), balanced={k['balanced']}, {k['seconds']:.1f} s")
    model = model_cases(quick)
    report["model"] = model
    print(f"\n{'machine':18} {'pattern':30} {'exchange us':>11} {'default':>9} {'bw-metric':>9} {'s':>5}")
    for r in model:
        print(f"{r['machine'][:18]:18} {r['pattern'][:30]:30} {r['exchange_us']:11.1f} {r['default_exchange_us']:9.1f} "
              f"{r['bandwidth_metric_exchange_us']:9.1f} {r['seconds']:5.2f}")
    peers = peer_cases(quick)
    report["peers"] = peers
    print(f"\n{'machine':22} {'metric':9} {'pattern':34} {'default/ls':>10} {'scotch/ls':>9} proven")
    for r in peers:
        scotch = f"{r['scotch_vs_linkscope']:.3f}" if "scotch_vs_linkscope" in r else "n/a"
        default = f"{r['default'] / r['linkscope']:.3f}" if r["linkscope"] else "1.000"
        print(f"{r['machine'][:22]:22} {r['metric']:9} {r['pattern'][:34]:34} {default:>10} {scotch:>9} "
              f"{'uniform' if r['uniform'] else r['proven']}")
    worse = [r for r in peers if r.get("scotch_vs_linkscope", 1.0) < 1 - 1e-9]
    report["linkscope_worse_than_scotch"] = len(worse)
    report["total_s"] = time.perf_counter() - started
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nlinkscope worse than Scotch on {len(worse)} of {len(peers)} cases; wrote {out} "
          f"({report['total_s']:.0f} s)")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
