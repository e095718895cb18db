"""What ``linkscope map`` asks for, checked in one place, and the run of it (``map_request``): the
options' rules, the memory estimate before mapping, the host name of a one-node mapping, measured costs
from a RunRecord, the solver (``api.map_onto``) and the HIP ordinals of an AMD mapping. The CLI parses,
calls ``MapRequest(...)`` then ``map_request`` and prints; it decides nothing here."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..patterns.methods import DEFAULT_METHOD, method_keys
from ..topology.model import Topology
from ..traffic.matrix import TrafficMatrix
from . import emit as emitters
from .api import MODES, SOLVERS, map_onto
from .assignment import Assignment
from .cost import METRICS, results_cost

#: --emit kinds that write one file, and its default name.
_DEFAULT_EMIT_FILE = {"rankfile": "rankfile", "rankfile-logical": "rankfile", "sbatch": "job.sbatch"}
DEFAULT_ENV_FOLDER = Path("linkscope-env")


@dataclass(frozen=True)
class MapRequest:
    """The options of one mapping; a value that breaks a rule is refused when the request is made
    (``ConfigError`` naming the option), before any file is read."""

    metric: str = "bandwidth"
    method: str | None = None
    solver: str = "auto"
    mode: str = "map"
    nodes: int = 1
    hosts: str | None = None
    node_limit: int | None = None
    time_limit_s: float | None = None
    emit: str | None = None
    emit_to: Path | None = None

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ConfigError(f"unknown metric {self.metric!r}", hint=f"valid metrics: {', '.join(METRICS)}")
        if self.solver not in SOLVERS:
            raise ConfigError(f"unknown solver {self.solver!r}", hint=f"valid solvers: {', '.join(SOLVERS)}")
        if self.mode not in MODES:
            raise ConfigError(f"unknown mapping mode {self.mode!r}", hint=f"valid modes: {', '.join(MODES)}")
        if self.method is not None and self.metric != "model":
            raise ConfigError(f"--method {self.method} applies to --metric model only (got --metric {self.metric})")
        if self.emit is not None and self.emit not in emitters.EMITTERS:
            raise ConfigError(f"unknown --emit {self.emit!r}", hint=f"valid: {', '.join(emitters.EMITTERS)}")
        if self.nodes < 1:
            raise ConfigError(f"--nodes must be at least 1, got {self.nodes}")
        if self.node_limit is not None and self.node_limit < 1:
            raise ConfigError(f"--node-limit must be at least 1, got {self.node_limit}")
        limit = self.time_limit_s
        if limit is not None and (not math.isfinite(limit) or limit <= 0):
            raise ConfigError(f"--time-limit must be a positive number of seconds, got {limit:g}", hint="e.g. --time-limit 30")
        if self.method is not None and self.method not in method_keys():
            raise ConfigError(f"unknown --method {self.method!r}", hint=f"valid methods: {', '.join(method_keys())}")
        if self.emit_to is not None and self.emit is None:
            raise ConfigError("--emit-to needs --emit (env, rankfile or slurm)")
        host_list = self.host_list
        if host_list is not None and (not all(host_list) or len(set(host_list)) != len(host_list)):
            raise ConfigError(f"--hosts {self.hosts!r}: host names must be non-empty and distinct")
        if host_list is not None and len(host_list) < self.nodes:
            raise ConfigError(f"--hosts names {len(host_list)} host(s) for --nodes {self.nodes}")

    @property
    def host_list(self) -> list[str] | None:
        return [h.strip() for h in self.hosts.split(",")] if self.hosts is not None else None

    @property
    def method_key(self) -> str:
        return DEFAULT_METHOD.key if self.method is None else self.method

    @property
    def emit_target(self) -> Path | None:
        """Where ``--emit`` writes: ``--emit-to``, else the kind's default file or folder; None for
        Slurm options on stdout (and without --emit)."""
        if self.emit_to is not None:
            return self.emit_to
        if self.emit == "env":
            return DEFAULT_ENV_FOLDER
        default = _DEFAULT_EMIT_FILE.get(self.emit or "")
        return Path(default) if default else None

    def emit_outputs(self) -> tuple[dict[str, Path | None], dict[str, Path | None]]:
        """``--emit-to`` as an output file and as an output folder (``atomic.check_paths``'s arguments)."""
        target = self.emit_target
        folder = self.emit == "env"
        return {"--emit-to": None if folder else target}, {"--emit-to": target if folder else None}

    def check_traffic(self, matrix: TrafficMatrix) -> None:
        if self.nodes > matrix.ranks:
            raise ConfigError(f"--nodes {self.nodes} is more nodes than the traffic has ranks ({matrix.ranks})",
                              hint="a node would hold no rank")


@dataclass(frozen=True)
class MapOutcome:
    """The mapping and the host names it was made for (this machine's name on one node when none was given)."""

    assignment: Assignment
    hosts: list[str] | None


def map_request(matrix: TrafficMatrix, topology: Topology | None, request: MapRequest, *,
                results: Mapping[str, Any] | None = None, results_name: str = "results",
                nic_choice: str | None = None) -> MapOutcome:
    """Map ``matrix`` onto ``topology`` (None: measured costs from ``results`` alone) as ``request`` says."""
    request.check_traffic(matrix)
    host_list = request.host_list
    if topology is not None:
        from ..model.budget import check_budget, estimate_map_bytes  # a memory estimate before mapping

        gpus = topology.gpu_count * request.nodes
        check_budget(estimate_map_bytes(gpus), f"map of {matrix.ranks:,} ranks onto {request.nodes} x {topology.name} ({gpus:,} GPUs)",
                     hint="map onto a smaller fabric")
        known = emitters.known_host_name(topology) if host_list is None and request.nodes == 1 else None
        if known is not None:
            host_list = [known]  # this machine's (or the recorded machine's) name, not "localhost"
    measured = None
    if results is not None:
        measured = results_cost(dict(results), request.metric, gpus=topology.gpu_count if topology is not None else None,
                                source=f"results:{results_name}")
    assignment = map_onto(matrix, topology, request.metric, method=request.method_key, results_cost=measured,
                          nodes=request.nodes, hosts=host_list, solver=request.solver, mode=request.mode,
                          node_limit=request.node_limit, time_limit_s=request.time_limit_s, nics=nic_choice)
    # the vendor's device numbers against this node (AMD: HIP ordinals against the KFD table)
    assignment = emitters.check_devices(assignment, topology.gpu_count if topology is not None else None)
    return MapOutcome(assignment, host_list)
