"""The Assignment: where each rank goes (GPU, host, NIC, cores), what it costs, and how sure we are.

JSON fields scripts rely on (CLI.md): ``gpu_of_rank``, ``cost``, ``default_cost``, ``metric``,
``solver``, ``optimal``. The rest is additive.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..atomic import write_json_atomic
from ..errors import SchemaError, UserError
from ..userfiles import loads_strict, read_text, refuse_malformed

NOT_TIME = {
    "distance": "hop-bytes, not a time prediction",
    "bandwidth": "each message's transfer alone, summed: not a time prediction (no overlap, no contention)",
    "latency": "each message's latency alone, fixed software cost included, summed: not a time prediction "
               "(no overlap)",
    "alpha-beta": "each message's time alone, summed: not a time prediction (no overlap, no contention)",
}
"""Why a metric's saving is not a time prediction (``--metric model`` predicts the exchange time)."""

FORMAT = "linkscope.mapping"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Assignment:
    """A rank -> device mapping with its cost.

    Attributes:
        gpu_of_rank: GPU index of each rank (the topology's numbering; within its node when
            ``node_of_rank`` is set).
        cost: objective of this mapping under ``metric`` (unit ``unit``); for ``model``, the
            predicted time of the whole exchange with contention (= ``exchange_time_us``).
        default_cost: objective of the default mapping (rank r on GPU r).
        metric: bandwidth | latency | distance | alpha-beta | model.
        solver: which solver produced it.
        optimal: True only when the solver proved no mapping is cheaper.
        unit: unit of cost (``µs``, ``hop-bytes``).
        topology: name of the topology mapped onto.
        mode: ``map`` (move ranks to GPUs) or ``reorder`` (keep devices, renumber ranks).
        new_rank_of_rank: reorder mode: the key each process passes to MPI_Comm_split.
        node_of_rank, host_of_rank: multi-node mappings.
        nics_of_rank: OS names of the NIC(s) each rank should use under ``nic_choice``
            (``model.nics``: by default the nearest, a GPU spread over equally near NICs).
        nic_choice: the NIC choice nics_of_rank follow (``nearest``, ``any``, ``mlx5_0,mlx5_1``,
            ``^mlx5_1``: UCX_NET_DEVICES / NCCL_IB_HCA style); None without a topology.
        nics_of_node: OS names of every NIC of each node (``node_of_rank`` indexes it; one entry
            for a single-node mapping): what ``launch --nic`` resolves names against.
        cores_of_rank: logical CPUs (OS numbers) each rank should bind to: whole physical cores,
            SMT siblings together, never shared with another rank when there are enough cores.
        core_index_of_rank: the same cores as logical core indexes (hwloc's order), for Open MPI
            rankfiles read without the physical flag (Open MPI 5's ``--map-by rankfile:file=``).
        visible_device_of_rank: value for CUDA_VISIBLE_DEVICES (NVIDIA: UUID where known) or
            HIP_VISIBLE_DEVICES (AMD: the HIP ordinal with no visibility variable set, never amdsmi's
            UUID, which HIP rejects; ``launch`` makes it relative to the inherited variables).
        pci_bus_id_of_rank: PCI address of each rank's GPU where known (``launch`` finds the GPU by it
            in the KFD topology on AMD nodes and checks it).
        gpu_vendor: ``nvidia``, ``amd`` or None when unknown.
        uniform: the fabric gives every GPU pair the same cost (mapping cannot help).
        lower_bound: proven lower bound on the cost, where known.
        elapsed_s: solver wall time.
        notes: human remarks (uniform fabric, defaults used).
        pairwise_cost, default_pairwise_cost: ``model`` metric: sum of every message's predicted
            time alone (µs), the objective the QAP solvers minimise; None for other metrics.
        exchange_time_us, default_exchange_time_us: ``model`` metric: predicted time of the whole
            exchange (every talking pair's transfers launched together, contention included), µs.
    """

    gpu_of_rank: tuple[int, ...]
    cost: float
    default_cost: float
    metric: str
    solver: str
    optimal: bool
    unit: str = ""
    topology: str = ""
    mode: str = "map"
    new_rank_of_rank: tuple[int, ...] | None = None
    node_of_rank: tuple[int, ...] | None = None
    host_of_rank: tuple[str, ...] | None = None
    nics_of_rank: tuple[tuple[str, ...], ...] = ()
    nic_choice: str | None = None
    nics_of_node: tuple[tuple[str, ...], ...] = ()
    cores_of_rank: tuple[tuple[int, ...], ...] = ()
    core_index_of_rank: tuple[tuple[int, ...], ...] = ()
    visible_device_of_rank: tuple[str, ...] = ()
    pci_bus_id_of_rank: tuple[str, ...] = ()
    gpu_vendor: str | None = None
    uniform: bool = False
    lower_bound: float | None = None
    elapsed_s: float = 0.0
    notes: tuple[str, ...] = field(default=(), compare=False)
    pairwise_cost: float | None = None
    default_pairwise_cost: float | None = None
    exchange_time_us: float | None = None
    default_exchange_time_us: float | None = None

    @property
    def ranks(self) -> int:
        return len(self.gpu_of_rank)

    @property
    def saved_fraction(self) -> float | None:
        """1 − cost / default_cost; None when the default costs nothing."""
        if self.default_cost <= 0:
            return None
        return 1.0 - self.cost / self.default_cost

    def summary(self) -> str:
        """One line for humans: what was saved, or why nothing could be."""
        if self.uniform:
            return self.notes[0] if self.notes else "mapping cannot help on this fabric: every GPU pair costs the same"
        saved = self.saved_fraction
        if saved is None:
            return "no traffic between distinct ranks: every mapping costs 0"
        proof = " (proven optimal)" if self.optimal else ""
        if saved <= 1e-12:
            if self.optimal:
                return "the default mapping is already optimal" + proof.replace(" (proven optimal)", " (proven)")
            return "no better mapping than the default was found"
        if self.exchange_time_us is not None:
            return f"saves {saved * 100:.1f}% of the default mapping's predicted exchange time{proof}"
        return f"saves {saved * 100:.1f}% of the default mapping's {self.metric} cost{proof} ({NOT_TIME[self.metric]})" \
            if self.metric in NOT_TIME else f"saves {saved * 100:.1f}% of the default mapping's cost{proof}"


def to_dict(assignment: Assignment) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "gpu_of_rank": list(assignment.gpu_of_rank),
        "cost": assignment.cost,
        "default_cost": assignment.default_cost,
        "saved_fraction": assignment.saved_fraction,
        "metric": assignment.metric,
        "solver": assignment.solver,
        "optimal": assignment.optimal,
        "unit": assignment.unit,
        "topology": assignment.topology,
        "mode": assignment.mode,
        "new_rank_of_rank": None if assignment.new_rank_of_rank is None else list(assignment.new_rank_of_rank),
        "node_of_rank": None if assignment.node_of_rank is None else list(assignment.node_of_rank),
        "host_of_rank": None if assignment.host_of_rank is None else list(assignment.host_of_rank),
        "nics_of_rank": [list(n) for n in assignment.nics_of_rank],
        "nic_choice": assignment.nic_choice,
        "nics_of_node": [list(n) for n in assignment.nics_of_node],
        "cores_of_rank": [list(c) for c in assignment.cores_of_rank],
        "core_index_of_rank": [list(c) for c in assignment.core_index_of_rank],
        "visible_device_of_rank": list(assignment.visible_device_of_rank),
        "pci_bus_id_of_rank": list(assignment.pci_bus_id_of_rank),
        "gpu_vendor": assignment.gpu_vendor,
        "uniform": assignment.uniform,
        "lower_bound": assignment.lower_bound,
        "elapsed_s": assignment.elapsed_s,
        "notes": list(assignment.notes),
        "pairwise_cost": assignment.pairwise_cost,
        "default_pairwise_cost": assignment.default_pairwise_cost,
        "exchange_time_us": assignment.exchange_time_us,
        "default_exchange_time_us": assignment.default_exchange_time_us,
    }


def _opt_float(data: dict, key: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(f"mapping: {key} must be a number or null, got {value!r}", path=f"$.{key}")
    return float(value)


@refuse_malformed("mapping file")
def from_dict(data: Any, origin: str = "mapping") -> Assignment:
    if not isinstance(data, dict):
        raise SchemaError(f"{origin}: expected a JSON object", path="$")
    if data.get("format", FORMAT) != FORMAT:
        raise SchemaError(f"{origin}: not a linkscope mapping (format {data.get('format')!r})", path="$.format")
    if data.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise SchemaError(f"{origin}: unsupported schema_version {data.get('schema_version')!r}", path="$.schema_version")
    for key in ("gpu_of_rank", "cost", "default_cost", "metric", "solver", "optimal"):
        if key not in data:
            raise SchemaError(f"{origin}: missing {key!r}", path=f"$.{key}")
    gpus = data["gpu_of_rank"]
    if not isinstance(gpus, list) or not all(isinstance(g, int) and g >= 0 for g in gpus):
        raise SchemaError(f"{origin}: gpu_of_rank must be a list of GPU indices", path="$.gpu_of_rank")
    from ..userschema import validate
    from .schema import MAPPING  # imported here: mapping.schema reads the metric and mode tables of api/cost

    validate(data, MAPPING, origin)

    def opt_tuple(key: str) -> tuple | None:
        value = data.get(key)
        return None if value is None else tuple(value)

    return Assignment(
        gpu_of_rank=tuple(gpus),
        cost=float(data["cost"]),
        default_cost=float(data["default_cost"]),
        metric=str(data["metric"]),
        solver=str(data["solver"]),
        optimal=bool(data["optimal"]),
        unit=data.get("unit", ""),
        topology=data.get("topology", ""),
        mode=data.get("mode", "map"),
        new_rank_of_rank=opt_tuple("new_rank_of_rank"),
        node_of_rank=opt_tuple("node_of_rank"),
        host_of_rank=opt_tuple("host_of_rank"),
        nics_of_rank=tuple(tuple(n) for n in data.get("nics_of_rank") or ()),
        nic_choice=data.get("nic_choice"),
        nics_of_node=tuple(tuple(str(x) for x in n) for n in data.get("nics_of_node") or ()),
        cores_of_rank=tuple(tuple(int(c) for c in cs) for cs in data.get("cores_of_rank") or ()),
        core_index_of_rank=tuple(tuple(int(c) for c in cs) for cs in data.get("core_index_of_rank") or ()),
        visible_device_of_rank=tuple(str(v) for v in data.get("visible_device_of_rank") or ()),
        pci_bus_id_of_rank=tuple(str(v) for v in data.get("pci_bus_id_of_rank") or ()),
        gpu_vendor=data.get("gpu_vendor"),
        uniform=bool(data.get("uniform", False)),
        lower_bound=data.get("lower_bound"),
        elapsed_s=float(data.get("elapsed_s") or 0.0),
        notes=tuple(data.get("notes") or ()),
        pairwise_cost=_opt_float(data, "pairwise_cost"),
        default_pairwise_cost=_opt_float(data, "default_pairwise_cost"),
        exchange_time_us=_opt_float(data, "exchange_time_us"),
        default_exchange_time_us=_opt_float(data, "default_exchange_time_us"),
    )


def save_assignment(assignment: Assignment, path: Path | str) -> None:
    write_json_atomic(path, to_dict(assignment))


def load_assignment(path: Path | str) -> Assignment:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"mapping file not found: {path}", hint="create one with linkscope map TRAFFIC -o mapping.json")
    return from_dict(loads_strict(read_text(path, "mapping file"), str(path)), origin=str(path))
