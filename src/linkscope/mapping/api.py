"""``map_traffic``: one call from a TrafficMatrix and a cost model to an Assignment.

Solver choice (``solver="auto"``): up to ``EXACT_UP_TO`` GPUs the heuristic answer seeds a
branch-and-bound that proves it optimal (or improves it) within ``time_limit_s``; up to
``PROOF_UP_TO`` GPUs the proof is attempted for ``PROOF_ATTEMPT_S``; above that the heuristic
alone. A cluster of several nodes is mapped hierarchically (``map_cluster``).
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Sequence

import numpy as np

from ..errors import ConfigError, UserError
from ..topology import query
from ..topology.model import Topology
from ..traffic.matrix import TrafficMatrix
from .assignment import Assignment
from .cost import CostModel
from .exact import solve_exact
from .exchange import choose_by_exchange
from .heuristic import solve_heuristic, two_opt
from .problem import MappingProblem, swap_delta
from .result import SolveResult

EXACT_UP_TO = 12
"""Up to this many GPUs ``auto`` runs branch-and-bound for the whole time limit."""
PROOF_UP_TO = 16
PROOF_ATTEMPT_S = 5.0
"""Between EXACT_UP_TO and PROOF_UP_TO GPUs, ``auto`` tries for a proof this long (symmetric
fabrics such as k80-16 are often proven in well under a second)."""
MODEL_PROOF_ATTEMPT_S = 1.0
"""The same attempt for the ``model`` metric, whose answer is chosen by predicted exchange time
(a proof of the pairwise optimum is not the last word there)."""
SOLVERS = ("auto", "exact", "heuristic")
MODES = ("map", "reorder")


def uniform_note(topology: Topology | None, cost: CostModel) -> str | None:
    """The 'mapping cannot help' sentence when every GPU pair costs the same, else None."""
    if cost.gpus < 2:
        return "mapping cannot help: there is only one GPU"
    uniform = cost.is_uniform()
    if topology is not None and topology.gpu_count == cost.gpus and topology.gpu_count > 1:
        if cost.source.startswith("topology:") and query.is_uniform(topology):
            uniform = True
        if uniform:
            level = query.pair_level(topology, 0, 1).code
            return f"mapping cannot help on this fabric: every GPU pair is {level} (uniform)"
    return "mapping cannot help on this fabric: every GPU pair costs the same (uniform)" if uniform else None


def _solve(problem: MappingProblem, solver: str, time_limit_s: float, seed: int,
           proof_attempt_s: float = PROOF_ATTEMPT_S) -> SolveResult:
    if solver not in SOLVERS:
        raise ConfigError(f"unknown solver {solver!r}", hint=f"valid solvers: {', '.join(SOLVERS)}")
    n = problem.size
    if solver == "exact" and n > 16:
        raise ConfigError(f"the exact solver handles up to 16 GPUs, this problem has {n}",
                          hint="use --solver heuristic or auto")
    heuristic = solve_heuristic(problem, seed=seed)
    if solver == "heuristic" or (solver == "auto" and n > PROOF_UP_TO):
        return heuristic
    limit = time_limit_s if solver == "exact" or n <= EXACT_UP_TO else min(time_limit_s, proof_attempt_s)
    exact = solve_exact(problem, incumbent=heuristic.perm, time_limit_s=limit)
    alternatives = tuple(p for p in (heuristic.perm,) + heuristic.alternatives if p != exact.perm)
    if exact.optimal:
        return replace(exact, alternatives=alternatives)
    return SolveResult(exact.perm, exact.cost, False, "faq+2opt, branch-and-bound stopped",
                       exact.lower_bound, exact.nodes, heuristic.elapsed_s + exact.elapsed_s, alternatives)


def _nics_and_cores(topology: Topology | None, gpus: Sequence[int], groups: Sequence[int] | None = None
                    ) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[int, ...], ...]]:
    """Nearest NIC of each rank's GPU (spread over equally near NICs: UCX picks one NIC per
    process otherwise, openucx/ucx#8401), and a disjoint share of its local CPU's cores."""
    if topology is None:
        return (), ()
    groups = list(groups) if groups is not None else [0] * len(gpus)
    nic_use: dict[tuple[int, str], int] = {}
    nics_out: list[tuple[str, ...]] = []
    sharers: dict[tuple[int, str], list[int]] = {}
    cpu_of: list[tuple[str, tuple[int, ...]] | None] = []
    for rank, gpu in enumerate(gpus):
        near = query.nearest_nics(topology, int(gpu))
        if near:
            names = [n.device_name or n.id for n in near]
            pick = min(names, key=lambda name: (nic_use.get((groups[rank], name), 0), names.index(name)))
            nic_use[(groups[rank], pick)] = nic_use.get((groups[rank], pick), 0) + 1
            nics_out.append((pick,))
        else:
            nics_out.append(())
        cpu = query.local_cpu(topology, int(gpu))
        if cpu is not None and cpu.cores:
            cpu_of.append((cpu.id, cpu.cores))
            sharers.setdefault((groups[rank], cpu.id), []).append(rank)
        else:
            cpu_of.append(None)
    cores_out: list[tuple[int, ...]] = []
    for rank, entry in enumerate(cpu_of):
        if entry is None:
            cores_out.append(())
            continue
        cpu_id, cores = entry
        members = sharers[(groups[rank], cpu_id)]
        k, share = members.index(rank), max(len(cores) // len(members), 1)
        cores_out.append(tuple(cores[k * share:(k + 1) * share]) if len(cores) >= len(members) else tuple(cores))
    if not any(nics_out):
        nics_out = []
    return tuple(nics_out), tuple(cores_out)


def _visible_devices(topology: Topology | None, gpus: Sequence[int]) -> tuple[tuple[str, ...], str | None]:
    if topology is None:
        return tuple(str(g) for g in gpus), None
    out = []
    vendors = set()
    for g in gpus:
        device = topology.gpu(int(g))
        vendors.add(device.vendor)
        if device.uuid:
            out.append(device.uuid)
        elif device.cuda_ordinal is not None and device.vendor != "amd":
            out.append(str(device.cuda_ordinal))
        elif device.hip_ordinal is not None:
            out.append(str(device.hip_ordinal))
        else:
            out.append(str(device.index))
    vendor = vendors.pop() if len(vendors) == 1 else None
    return tuple(out), vendor


def map_traffic(
    traffic: TrafficMatrix,
    cost: CostModel,
    topology: Topology | None = None,
    *,
    solver: str = "auto",
    mode: str = "map",
    time_limit_s: float = 30.0,
    seed: int = 0,
) -> Assignment:
    """Map the ranks of ``traffic`` onto the GPUs ``cost`` describes (one node)."""
    if mode not in MODES:
        raise ConfigError(f"unknown mapping mode {mode!r}", hint=f"valid modes: {', '.join(MODES)}")
    t0 = time.perf_counter()
    ranks, gpus = traffic.ranks, cost.gpus
    if ranks > gpus:
        raise UserError(f"{ranks} ranks but {gpus} GPUs in {cost.source}",
                        hint="map onto a topology with at least as many GPUs, or use a multi-node mapping (--nodes)")
    if mode == "reorder" and ranks != gpus:
        raise ConfigError(f"rank reordering needs one rank per GPU ({ranks} ranks, {gpus} GPUs)")
    bytes_, messages = traffic.offdiagonal_bytes(), traffic.offdiagonal_messages()
    problem = MappingProblem(cost.flow_matrices(bytes_, messages), cost.costs, ranks)
    identity = np.arange(gpus)
    default_cost = problem.objective(identity)
    notes = list(cost.notes)
    note = uniform_note(topology, cost)
    if note is not None:
        result = SolveResult(tuple(range(gpus)), default_cost, True, "none (uniform fabric)", default_cost)
        notes.insert(0, note)
    else:
        proof_s = PROOF_ATTEMPT_S if cost.exchange_time is None else MODEL_PROOF_ATTEMPT_S
        result = _solve(problem, solver, time_limit_s, seed, proof_s)
    perm = np.array(result.perm)
    cost_value, optimal, solver_name, lower_bound = result.cost, result.optimal, result.solver, result.lower_bound
    pairwise: tuple[float, float] | None = None
    exchange_us: tuple[float, float] | None = None
    if cost.exchange_time is not None:
        # the model metric: the pairwise answer and its runner-ups compete on predicted exchange time
        starts = [identity] if note is not None else [perm] + [np.array(p) for p in result.alternatives]
        choice = choose_by_exchange(problem, cost.exchange_time, bytes_, starts, polish=note is None)
        perm = np.array(choice.perm)
        pairwise = (choice.pairwise_cost, default_cost)
        cost_value, default_cost = choice.exchange_time_us, choice.default_exchange_time_us
        exchange_us = (cost_value, default_cost)
        if note is None:
            solver_name += f" + exchange-time choice among {choice.evaluated} mappings (fabric model)"
            if optimal:
                notes.append("the solver proved its answer optimal for the pairwise model cost; the predicted "
                             "exchange time (contention included) then chose the mapping")
            optimal, lower_bound = False, None
        else:
            lower_bound = cost_value
    if cost_value > default_cost:  # never worse than the default (the exchange choice scores it already)
        perm, cost_value, optimal = identity, default_cost, False
    gpu_of_rank = tuple(int(g) for g in perm[:ranks])
    new_rank = None
    if mode == "reorder":
        inverse = np.empty(gpus, dtype=int)
        inverse[perm] = np.arange(gpus)
        new_rank = tuple(int(x) for x in inverse)  # process on GPU g (old rank g) takes this rank
    device_ranks = tuple(range(ranks)) if mode == "reorder" else gpu_of_rank
    nics, cores = _nics_and_cores(topology, device_ranks)
    visible, vendor = _visible_devices(topology, device_ranks)
    return Assignment(
        gpu_of_rank=device_ranks if mode == "reorder" else gpu_of_rank,
        cost=float(cost_value),
        default_cost=float(default_cost),
        metric=cost.metric,
        solver=solver_name,
        optimal=bool(optimal),
        unit=cost.unit,
        topology=topology.name if topology is not None else cost.source,
        mode=mode,
        new_rank_of_rank=new_rank,
        nics_of_rank=nics,
        cores_of_rank=cores,
        visible_device_of_rank=visible,
        gpu_vendor=vendor,
        uniform=note is not None,
        lower_bound=lower_bound,
        elapsed_s=time.perf_counter() - t0,
        notes=tuple(notes),
        pairwise_cost=None if pairwise is None else pairwise[0],
        default_pairwise_cost=None if pairwise is None else pairwise[1],
        exchange_time_us=None if exchange_us is None else exchange_us[0],
        default_exchange_time_us=None if exchange_us is None else exchange_us[1],
    )


def map_cluster(
    traffic: TrafficMatrix,
    node_cost: CostModel,
    node_topology: Topology | None,
    nodes: int,
    network_costs: Sequence[float],
    hosts: Sequence[str] | None = None,
) -> Assignment:
    """Hierarchical mapping onto ``nodes`` identical nodes described by ``node_cost``."""
    import scipy.sparse as sp

    from .hierarchical import solve_cluster

    t0 = time.perf_counter()
    bytes_, messages = traffic.offdiagonal_bytes(), traffic.offdiagonal_messages()
    flows = [sp.csr_matrix(f) for f in node_cost.flow_matrices(bytes_, messages)]
    result = solve_cluster(flows, node_cost.costs, network_costs, nodes)
    model = node_cost.exchange_time is not None
    seen = traffic.hosts_in_rank_order()
    notes: tuple[str, ...] = ()
    if hosts:
        host_names = tuple(hosts)
    elif len(seen) == nodes:
        host_names = seen
        notes = (f"hosts from the traffic matrix: {', '.join(seen)}",)
    else:
        host_names = tuple(f"node{k}" for k in range(nodes))
        if seen:
            notes = ((f"the traffic matrix saw {len(seen)} host(s) ({', '.join(seen)}) for {nodes} nodes: "
                      "nodes named node0.. (--hosts names them)"),)
    if len(host_names) < nodes:
        raise UserError(f"{len(host_names)} host names for {nodes} nodes")
    nics, cores = _nics_and_cores(node_topology, result.gpu_of_rank, result.node_of_rank)
    visible, vendor = _visible_devices(node_topology, result.gpu_of_rank)
    return Assignment(
        gpu_of_rank=result.gpu_of_rank,
        cost=result.cost,
        default_cost=result.default_cost,
        metric=node_cost.metric,
        solver="hierarchical (recursive bisection + KL, then per-node " +
               ("branch-and-bound)" if result.optimal_within_nodes else "faq+2opt)"),
        optimal=False,
        unit=node_cost.unit,
        topology=f"{nodes} x {node_topology.name if node_topology else node_cost.source}",
        node_of_rank=result.node_of_rank,
        host_of_rank=tuple(host_names[k] for k in result.node_of_rank),
        nics_of_rank=nics,
        cores_of_rank=cores,
        visible_device_of_rank=visible,
        gpu_vendor=vendor,
        elapsed_s=time.perf_counter() - t0,
        notes=tuple(node_cost.notes) + notes + ((
            "multi-node: the cluster mapping minimises the pairwise model cost; the whole-exchange "
            "prediction (contention) covers one node and is not used here",) if model else ()),
        pairwise_cost=result.cost if model else None,
        default_pairwise_cost=result.default_cost if model else None,
    )


def network_costs(cost: CostModel, node_topology: Topology | None, latency_us: float = 2.0) -> tuple[float, ...]:
    """Per-term cost of a pair on different nodes: distance NET (8); the NIC line rate (the
    smallest NIC in the node, 200 Gb/s without one) for bandwidth; ``latency_us`` per message."""
    from ..topology.levels import DISTANCE_OF_CODE
    from ..topology.model import DeviceKind

    rate_gbit = 200.0
    if node_topology is not None:
        rates = [d.line_rate_gbit_per_s for d in node_topology.of_kind(DeviceKind.NIC) if d.line_rate_gbit_per_s]
        if rates:
            rate_gbit = min(rates)
    us_per_byte = 1e6 / (rate_gbit / 8 * 1e9)
    out = []
    for flow, matrix in zip(cost.flows, cost.costs):
        if cost.metric == "distance":
            out.append(float(DISTANCE_OF_CODE["NET"]))
        elif flow == "messages":
            out.append(max(latency_us, float(matrix.max())))
        else:
            out.append(max(us_per_byte, float(matrix.max())))
    return tuple(out)


__all__ = ["map_traffic", "map_cluster", "network_costs", "uniform_note", "EXACT_UP_TO", "SOLVERS", "MODES",
           "two_opt", "swap_delta"]
