"""``map_traffic``: one call from a TrafficMatrix and a cost model to an Assignment.

Solver choice (``solver="auto"``): up to ``EXACT_UP_TO`` GPUs the heuristic answer seeds a
branch-and-bound that proves it optimal (or improves it) within ``EXACT_NODE_BUDGET`` explored
nodes; up to ``PROOF_UP_TO`` GPUs the proof is attempted within ``PROOF_NODE_BUDGET``; above that
the heuristic alone. Budgets count explored nodes, not seconds, so the same input gives the same
answer and the same ``optimal`` flag on any machine. A cluster (a topology of several hosts, or
``--nodes K``) is mapped hierarchically (``map_cluster``).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..errors import ConfigError, UserError
from ..model.nics import NicSpec, nic_choice_of, nics_by_gpu
from ..patterns.methods import DEFAULT_METHOD
from ..platforms import launch_of
from ..topology import query
from ..topology.model import Device, DeviceKind, Topology
from ..traffic.matrix import TrafficMatrix
from .assignment import Assignment
from .binding import core_sets, logical_cores, share
from .cluster import ClusterCost
from .cost import CostModel
from .exact import solve_exact
from .exchange import choose_by_exchange
from .heuristic import solve_heuristic, two_opt
from .problem import MappingProblem, swap_delta
from .result import SolveResult

EXACT_UP_TO = 12
"""Up to this many GPUs ``auto`` runs branch-and-bound within ``EXACT_NODE_BUDGET``."""
EXACT_NODE_BUDGET = 200_000
PROOF_UP_TO = 16
PROOF_NODE_BUDGET = 20_000
"""Between EXACT_UP_TO and PROOF_UP_TO GPUs, ``auto`` tries for a proof within this many explored
nodes (a few seconds on a slow machine; see docs/mapping.md for what is proven quickly)."""
MODEL_PROOF_NODE_BUDGET = 4_000
"""The same attempt for the ``model`` metric, whose answer is chosen by predicted exchange time
(a proof of the pairwise optimum is not the last word there)."""
SOLVER_NODE_BUDGET = 2_000_000
"""``--solver exact``'s default budget."""
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


def _solve(problem: MappingProblem, solver: str, node_limit: int | None, seed: int,
           proof_budget: int = PROOF_NODE_BUDGET, time_limit_s: float | None = None) -> SolveResult:
    if solver not in SOLVERS:
        raise ConfigError(f"unknown solver {solver!r}", hint=f"valid solvers: {', '.join(SOLVERS)}")
    n = problem.size
    if solver == "exact" and n > 16:
        raise ConfigError(f"the exact solver handles up to 16 GPUs, this problem has {n}",
                          hint="use --solver heuristic or auto")
    heuristic = solve_heuristic(problem, seed=seed)
    if solver == "heuristic" or (solver == "auto" and n > PROOF_UP_TO):
        return heuristic
    if node_limit is None:
        node_limit = SOLVER_NODE_BUDGET if solver == "exact" else EXACT_NODE_BUDGET if n <= EXACT_UP_TO else proof_budget
    exact = solve_exact(problem, incumbent=heuristic.perm, node_limit=node_limit, time_limit_s=time_limit_s)
    alternatives = tuple(p for p in (heuristic.perm,) + heuristic.alternatives if p != exact.perm)
    if exact.optimal:
        return replace(exact, alternatives=alternatives)
    return SolveResult(exact.perm, exact.cost, False, "faq+2opt, branch-and-bound stopped",
                       exact.lower_bound, exact.nodes, heuristic.elapsed_s + exact.elapsed_s, alternatives)


def _nics_and_cores(topology: Topology | None, gpus: Sequence[int], groups: Sequence[int] | None = None,
                    nic_names: Sequence[Sequence[str]] | None = None, nics: NicSpec | str | None = None,
                    ) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[int, ...], ...]]:
    """The NIC(s) of each rank's GPU under the NIC choice ``nics`` (``model.nics.nics_by_gpu``,
    the rule the fabric model's routes and ``bench --nic`` use: by default the nearest NIC, a GPU
    spread over equally near NICs by its position on its node, since UCX picks one NIC per process
    otherwise, openucx/ucx#8401), and a disjoint share of whole physical cores of its local CPU
    (``binding``). ``groups`` is the host of each rank; ``nic_names[h]`` renames the topology's
    NICs (host 0 of a cluster) to host h's, by position."""
    if topology is None:
        return (), ()
    groups = list(groups) if groups is not None else [0] * len(gpus)
    local_nics = list(_nic_names(topology))
    chosen = {g: tuple(n.device_name or n.id for n in found)
              for g, found in nics_by_gpu(topology, gpus, nics).items()}
    cpu_of_gpu: dict[int, Device | None] = {gpu: query.local_cpu(topology, gpu) for gpu in set(int(g) for g in gpus)}
    nics_out: list[tuple[str, ...]] = []
    sharers: dict[tuple[int, str], list[int]] = {}
    for rank, gpu in enumerate(gpus):
        names = chosen[int(gpu)]
        if nic_names is not None:
            names = tuple(nic_names[groups[rank]][local_nics.index(n)] if n in local_nics else n for n in names)
        nics_out.append(names)
        cpu = cpu_of_gpu[int(gpu)]
        if cpu is not None and cpu.cores:
            sharers.setdefault((groups[rank], cpu.id), []).append(rank)
    cores_out: list[tuple[int, ...]] = [() for _ in gpus]
    for (_, cpu_id), members in sharers.items():
        sets = core_sets(topology.device(cpu_id))
        members = sorted(members, key=lambda r: (int(gpus[r]), r))  # cores in the order of the GPUs
        for k, rank in enumerate(members):
            cores_out[rank] = share(sets, len(members), k)
    if not any(nics_out):
        nics_out = []
    return tuple(nics_out), tuple(cores_out)


def _nic_names(topology: Topology) -> tuple[str, ...]:
    """OS names of a node's NICs, in topology order (what ``launch --nic`` resolves names against)."""
    return tuple(d.device_name or d.id for d in topology.devices if d.kind is DeviceKind.NIC)


def _core_indexes(topology: Topology | None, cores: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    """Logical core indexes (hwloc order) of each rank's logical CPUs, for logical rankfiles."""
    if topology is None or not any(cores):
        return ()
    index = logical_cores(topology.of_kind(DeviceKind.CPU))
    return tuple(tuple(sorted({index[c] for c in cs if c in index})) for cs in cores)


def _visible_devices(topology: Topology | None, gpus: Sequence[int]
                     ) -> tuple[tuple[str, ...], str | None, tuple[str, ...]]:
    """(what each rank's device variable names, the vendor, each rank's GPU PCI address): the token
    the vendor's launch environment gives the GPU (``LaunchEnvironment.device_tokens``: NVIDIA the
    UUID, else the CUDA ordinal; AMD the HIP ordinal); a GPU of no known platform, its UUID, else its
    index. ``launch`` makes it relative to the variables the job inherits."""
    if topology is None:
        return tuple(str(g) for g in gpus), None, ()
    tokens: dict[str | None, dict[int | None, str]] = {}
    out = []
    vendors = set()
    for g in gpus:
        device = topology.gpu(int(g))
        vendors.add(device.vendor)
        if device.vendor not in tokens:
            launch = launch_of(device.vendor)
            ours = [d for d in topology.gpus if d.vendor == device.vendor]
            tokens[device.vendor] = dict(zip((d.index for d in ours), launch.device_tokens(ours))) if launch else {}
        out.append(tokens[device.vendor].get(device.index) or device.uuid or str(device.index))
    vendor = vendors.pop() if len(vendors) == 1 else None
    buses = tuple(topology.gpu(int(g)).pci_bus_id or "" for g in gpus)
    return tuple(out), vendor, buses if all(buses) else ()


def map_traffic(
    traffic: TrafficMatrix,
    cost: CostModel,
    topology: Topology | None = None,
    *,
    solver: str = "auto",
    mode: str = "map",
    node_limit: int | None = None,
    time_limit_s: float | None = None,
    seed: int = 0,
    nics: NicSpec | str | None = None,
) -> Assignment:
    """Map the ranks of ``traffic`` onto the GPUs ``cost`` describes (one node). ``node_limit``
    overrides the exact search's budget of explored nodes; ``time_limit_s`` adds a wall-clock
    stop (its answer may then differ between machines); ``nics``: the NIC choice (``model.nics``;
    default the topology's, else nearest)."""
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
        proof = PROOF_NODE_BUDGET if cost.exchange_time is None else MODEL_PROOF_NODE_BUDGET
        result = _solve(problem, solver, node_limit, seed, proof, time_limit_s)
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
    spec = nic_choice_of(topology, nics)
    nics_out, cores = _nics_and_cores(topology, device_ranks, nics=spec)
    visible, vendor, buses = _visible_devices(topology, device_ranks)
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
        nics_of_rank=nics_out,
        nic_choice=spec.text if topology is not None else None,
        nics_of_node=(_nic_names(topology),) if topology is not None else (),
        cores_of_rank=cores,
        core_index_of_rank=_core_indexes(topology, cores),
        visible_device_of_rank=visible,
        pci_bus_id_of_rank=buses,
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
    cost: ClusterCost,
    node_topology: Topology | None,
    *,
    node_limit: int = 20_000,
    seed: int = 0,
    nics: NicSpec | str | None = None,
) -> Assignment:
    """Hierarchical mapping onto the hosts ``cost`` describes (``cluster.topology_cluster_cost``
    for a multi-host topology, ``cluster.copies`` for ``--nodes K``). ``node_topology`` is one
    host (NICs and cores); gpu_of_rank is the GPU within its host; ``nics`` the NIC choice (the
    one ``cost`` was built with)."""
    from .hierarchical import solve_cluster

    t0 = time.perf_counter()
    # sparse end to end: no N x N array (a 32,768-rank job's dense matrix would be 8 GiB)
    bytes_, messages = traffic.sparse_offdiagonal_bytes(), traffic.sparse_offdiagonal_messages()
    flows = list(cost.node.flow_matrices(bytes_, messages))
    result = solve_cluster(flows, cost, node_budget=node_limit, seed=seed)
    model = cost.node.exchange_time is not None
    spec = nic_choice_of(node_topology, nics)
    nics_out, cores = _nics_and_cores(node_topology, result.gpu_of_rank, result.node_of_rank, cost.nic_names, spec)
    node_nics = cost.nic_names or ((_nic_names(node_topology),) * cost.hosts if node_topology is not None else ())
    visible, vendor, buses = _visible_devices(node_topology, result.gpu_of_rank)
    launch = launch_of(vendor)
    if cost.uuids is not None and (launch is None or launch.accepts_node_uuids):  # AMD's are amdsmi's: HIP rejects them
        visible = tuple(cost.uuids[h][g] or v for h, g, v in zip(result.node_of_rank, result.gpu_of_rank, visible))
    node_name = node_topology.name if node_topology else cost.node.source
    return Assignment(
        gpu_of_rank=result.gpu_of_rank,
        cost=result.cost,
        default_cost=result.default_cost,
        metric=cost.node.metric,
        solver="hierarchical (METIS along the network's hierarchy, then per-node " +
               ("branch-and-bound)" if not cost.node.is_uniform() else "identity: uniform node)"),
        optimal=False,
        unit=cost.node.unit,
        topology=cost.topology or f"{cost.hosts} x {node_name}",
        node_of_rank=result.node_of_rank,
        host_of_rank=tuple(cost.host_names[k] for k in result.node_of_rank),
        nics_of_rank=nics_out,
        nic_choice=spec.text if node_topology is not None else None,
        nics_of_node=tuple(tuple(names) for names in node_nics),
        cores_of_rank=cores,
        core_index_of_rank=_core_indexes(node_topology, cores),
        visible_device_of_rank=visible,
        pci_bus_id_of_rank=buses,
        gpu_vendor=vendor,
        elapsed_s=time.perf_counter() - t0,
        notes=tuple(cost.notes) + ((
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


def is_cluster(topology: Topology | None) -> bool:
    """True for a topology of several hosts (parts joined only by network links)."""
    if topology is None:
        return False
    from .cluster import split_hosts

    return len(split_hosts(topology).gpus) > 1


def map_onto(
    traffic: TrafficMatrix,
    topology: Topology | None,
    metric: str,
    *,
    method: str = DEFAULT_METHOD.key,
    results_cost: CostModel | None = None,
    nodes: int = 1,
    hosts: Sequence[str] | None = None,
    solver: str = "auto",
    mode: str = "map",
    node_limit: int | None = None,
    time_limit_s: float | None = None,
    nics: str | None = None,
) -> Assignment:
    """The one entry for the CLI: a multi-host topology or ``nodes > 1`` is mapped hierarchically
    (the flat solver only within a node), anything else by ``map_traffic``. ``results_cost``
    (measured pair costs) replaces the topology's costs on one node. ``nics``: the NIC choice
    (UCX_NET_DEVICES / NCCL_IB_HCA style, ``model.nics``) that each rank's NICs and the
    cross-host costs follow; default the topology's, else nearest."""
    if nics is not None and topology is None:
        raise UserError(f"--nic {nics} needs a topology to choose NICs in",
                        hint="give --preset, --from or --synthetic with --results")
    spec = nic_choice_of(topology, nics)
    from .cluster import copies, node_topology, split_hosts, topology_cluster_cost
    from .cost import topology_cost

    layout = split_hosts(topology) if topology is not None else None
    multi_host = layout is not None and len(layout.gpus) > 1
    if multi_host:
        assert topology is not None and layout is not None
        if nodes > 1:
            raise UserError(f"--nodes {nodes} with a topology of {len(layout.gpus)} hosts",
                            hint="a multi-host topology is already a cluster: drop --nodes")
        if results_cost is not None:
            raise UserError("--results holds one node's measured pair costs; this topology has several hosts",
                            hint="map onto one node's topology with --nodes K, or drop --results")
        if mode != "map":
            raise ConfigError("--mode reorder works on one node only")
        if solver == "exact":
            raise ConfigError("the exact solver works within one node; a multi-host topology is mapped "
                              "hierarchically", hint="use --solver auto")
        cluster = topology_cluster_cost(topology, metric, method, layout, hosts, nics=spec)
        budget = node_limit if node_limit is not None else PROOF_NODE_BUDGET
        return map_cluster(traffic, cluster, node_topology(topology, layout), node_limit=budget, nics=spec)
    cost = results_cost if results_cost is not None else topology_cost(topology, metric, method) \
        if topology is not None else None
    if cost is None:
        raise UserError("nothing to map onto", hint="give --preset, --from, --synthetic or --results")
    if nodes > 1:
        if mode != "map":
            raise ConfigError("--mode reorder works on one node only")
        seen = traffic.hosts_in_rank_order()
        host_notes: tuple[str, ...] = ()
        names = hosts
        if not hosts and len(seen) == nodes:
            names = seen
            host_notes = (f"hosts from the traffic matrix: {', '.join(seen)}",)
        elif not hosts and seen:
            host_notes = ((f"the traffic matrix saw {len(seen)} host(s) ({', '.join(seen)}) for {nodes} nodes: "
                           "nodes named node0.. (--hosts names them)"),)
        cluster = copies(cost, nodes, network_costs(cost, topology), names)
        cluster = replace(cluster, notes=cluster.notes + host_notes)
        budget = node_limit if node_limit is not None else PROOF_NODE_BUDGET
        return map_cluster(traffic, cluster, topology, node_limit=budget, nics=spec)
    return map_traffic(traffic, cost, topology, solver=solver, mode=mode, node_limit=node_limit,
                       time_limit_s=time_limit_s, nics=spec)


__all__ = [
    "EXACT_NODE_BUDGET",
    "EXACT_UP_TO",
    "MODES",
    "PROOF_NODE_BUDGET",
    "SOLVERS",
    "is_cluster",
    "map_cluster",
    "map_onto",
    "map_traffic",
    "network_costs",
    "swap_delta",
    "two_opt",
    "uniform_note",
]
