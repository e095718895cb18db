"""Turning an Assignment into something a launcher uses: an Open MPI rankfile, a Slurm
``--gpu-bind=map_gpu:`` line, per-rank environment files, and the environment ``launch`` sets.

All pure functions of the Assignment (and, for ``launch_environment``, of the environment the
launcher gave the process); the CLI does the reading of ``os.environ`` and the exec.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, UserError
from ..model.nics import NIC_ENV_VARS, NicSpec, as_spec, pick_named, unknown_names
from ..platforms import hardware_platforms, launch_environments, launch_of, load
from ..rankenv import LOCAL_RANK_VARS, LOCAL_SIZE_VARS, WORLD_RANK_VARS, WORLD_SIZE_VARS, first_index
from ..topology.model import Topology
from .assignment import Assignment

EMITTERS = ("env", "rankfile", "rankfile-logical", "slurm", "sbatch")

def _cpu_list(cores: tuple[int, ...]) -> str:
    """Compact CPU list: (0,1,2,3,8) -> '0-3,8'.

    >>> _cpu_list((0, 1, 2, 3, 8))
    '0-3,8'
    """
    parts = []
    cores = tuple(sorted(cores))
    i = 0
    while i < len(cores):
        j = i
        while j + 1 < len(cores) and cores[j + 1] == cores[j] + 1:
            j += 1
        parts.append(str(cores[i]) if i == j else f"{cores[i]}-{cores[j]}")
        i = j + 1
    return ",".join(parts)


def _node_nic_names(assignment: Assignment, rank: int) -> tuple[str, ...]:
    """The NICs of ``rank``'s node as the mapping lists them (older files: the NICs its ranks use)."""
    node = assignment.node_of_rank[rank] if assignment.node_of_rank is not None else 0
    if node < len(assignment.nics_of_node):
        return assignment.nics_of_node[node]
    same = [r for r in range(len(assignment.nics_of_rank))
            if (assignment.node_of_rank[r] if assignment.node_of_rank is not None else 0) == node]
    return tuple(dict.fromkeys(n for r in same for n in assignment.nics_of_rank[r]))


def rank_nics(assignment: Assignment, rank: int, nics: NicSpec | str | None = None) -> tuple[str, ...] | None:
    """NIC names for ``rank`` under ``nics`` (default the mapping's own choice): names and ``^``
    exclusions resolve, as ``model.nics`` resolves them, against the NICs the mapping lists for the
    rank's node; ``nearest`` is the mapping's nearest choice; None for ``any`` (leave the NIC
    variables unset: the library picks, as UCX_NET_DEVICES unset does)."""
    spec = as_spec(nics if nics is not None else assignment.nic_choice)
    own = as_spec(assignment.nic_choice)
    stored = assignment.nics_of_rank[rank] if assignment.nics_of_rank else ()
    if spec.rule == "any":
        return None
    if spec == own or nics is None:
        return stored
    if spec.rule == "nearest":
        raise ConfigError(f"--nic nearest: the mapping chose NICs by {own.text!r} and does not store the nearest ones",
                          hint="map again with --nic nearest (launch has no topology to find them in)")
    have = _node_nic_names(assignment, rank)
    where = assignment.host_of_rank[rank] if assignment.host_of_rank is not None else "this node"
    if not have:
        raise ConfigError(f"--nic {spec.text}: the mapping lists no NIC for {where}",
                          hint="map onto a topology with NICs, or set UCX_NET_DEVICES / NCCL_IB_HCA yourself")
    unknown = unknown_names(spec, have)
    if unknown:
        raise ConfigError(f"--nic {spec.text}: no NIC named {', '.join(unknown)} on {where} in the mapping",
                          hint=f"its NICs: {', '.join(have)}")
    return tuple(have[i] for i in pick_named(spec, [(n,) for n in have], where))


def nic_environment(nics: tuple[str, ...] | None) -> dict[str, str]:
    """UCX_NET_DEVICES and NCCL_IB_HCA naming ``nics`` (port 1; '=' asks NCCL for exact names)."""
    if not nics:
        return {}
    return {NIC_ENV_VARS[0]: ",".join(f"{n}:1" for n in nics), NIC_ENV_VARS[1]: "=" + ",".join(nics)}


def rank_environment(assignment: Assignment, rank: int, nics: NicSpec | str | None = None) -> dict[str, str]:
    """The variables ``launch`` sets for ``rank`` (device, NIC, and a note of the cores); ``nics``
    overrides the mapping's NIC choice (``rank_nics``)."""
    if not 0 <= rank < assignment.ranks:
        raise UserError(f"rank {rank} is not in the mapping (ranks 0..{assignment.ranks - 1})",
                        hint="run with as many ranks as the traffic matrix had")
    env: dict[str, str] = {}
    visible = assignment.visible_device_of_rank[rank] if assignment.visible_device_of_rank \
        else str(assignment.gpu_of_rank[rank])
    launch = launch_of(assignment.gpu_vendor)  # a mapping of no known vendor sets every platform's variable
    for each in (launch,) if launch is not None else launch_environments():
        env[each.visible_devices_var] = visible
    env.update(nic_environment(rank_nics(assignment, rank, nics)))
    if assignment.cores_of_rank and assignment.cores_of_rank[rank]:
        env["LINKSCOPE_CPUS"] = _cpu_list(assignment.cores_of_rank[rank])
    env["LINKSCOPE_GPU"] = str(assignment.gpu_of_rank[rank])
    if assignment.new_rank_of_rank is not None:
        env["LINKSCOPE_RANK_KEY"] = str(assignment.new_rank_of_rank[rank])
    return env


@dataclass(frozen=True)
class LaunchPlan:
    """What ``launch`` does for this process: which mapping rank, the variables it sets, those it
    removes (``unset``: the NIC variables under the NIC choice ``any``), the cores, and a sentence
    saying how the device was chosen (``device_says``, AMD)."""

    rank: int
    rank_source: str
    env: dict[str, str]
    cores: tuple[int, ...]
    unset: tuple[str, ...] = ()
    device_says: str = ""


def _unset(assignment: Assignment, nics: NicSpec | str | None) -> tuple[str, ...]:
    return NIC_ENV_VARS if as_spec(nics if nics is not None else assignment.nic_choice).rule == "any" else ()


def launch_plan(assignment: Assignment, environ: Mapping[str, str], nics: NicSpec | str | None = None,
                live_gpus: Any = None) -> LaunchPlan:
    """Pick this process's entry: the global rank for a multi-node mapping, else the local rank
    (Open MPI, MPICH/Hydra, PMI, Slurm, torchrun variables, in that order). ``nics`` (``launch
    --nic``) overrides the mapping's NICs for it (``rank_nics``). On an AMD mapping the device
    variables come from the vendor's launch environment (``LaunchEnvironment.place``: on AMD by PCI
    address in ``live_gpus``, this node's KFD table, ``node_device_table``)."""
    spec = as_spec(nics) if nics is not None else None  # a bad choice is refused before the rank is sought
    names = WORLD_RANK_VARS if assignment.node_of_rank is not None else LOCAL_RANK_VARS
    found = first_index(environ, names)
    if found is None:
        raise UserError(f"cannot tell this process's {'global' if assignment.node_of_rank is not None else 'local'} rank: "
                        f"none of {', '.join(names)} is set",
                        hint="run linkscope launch under mpirun, srun or torchrun")
    rank, name = found
    cores = assignment.cores_of_rank[rank] if assignment.cores_of_rank and rank < assignment.ranks else ()
    env = rank_environment(assignment, rank, spec)
    says = ""
    launch = launch_of(assignment.gpu_vendor)
    placed = launch.place(assignment, rank, environ, live_gpus) if launch is not None else None
    if placed is not None:
        env.update(placed[0])
        says = placed[1]
    return LaunchPlan(rank, name, env, tuple(cores), _unset(assignment, spec), says)


def size_mismatch(assignment: Assignment, environ: Mapping[str, str]) -> str | None:
    """A warning when the job has another number of ranks than the mapping was made for (2 ranks with
    a 16-rank mapping use GPUs 0 and 1 of a layout chosen for 16: not what the mapping optimised);
    None when they agree or the launcher does not say. Per node for a one-node mapping."""
    multi = assignment.node_of_rank is not None
    found = first_index(environ, WORLD_SIZE_VARS) if multi else (first_index(environ, LOCAL_SIZE_VARS)
                                                                   or first_index(environ, WORLD_SIZE_VARS))
    if found is None or found[0] == assignment.ranks:
        return None
    size, name = found
    where = "" if multi else " on this node"
    return (f"the job has {size} rank{'s' if size != 1 else ''}{where} ({name}) but the mapping was made for "
            f"{assignment.ranks}: its placement was chosen for {assignment.ranks} ranks; map again with the job's traffic "
            f"(linkscope map --ranks/traffic of {size} ranks)")


def known_host_name(topology: Topology) -> str | None:
    """The host name a single-node topology knows for itself, else ``None`` (then ``localhost``):

    * discovered live here: this machine's name (``socket.gethostname()``);
    * read from NVML facts (a recording by ``topo export --raw``, or a linkscope JSON saved from
      one): the ``hostname`` NVML discovery recorded, which became the topology's name (``nvml``
      when the facts had none);
    * read from hwloc XML: the ``HostName`` info of its Machine object, which became the name
      (the file's stem when the XML had none).

    Presets, synthetic specs and NCCL XML name no host."""
    import socket
    from pathlib import PurePath

    if topology.is_this_system:
        return socket.gethostname()
    source = topology.source or ""
    for platform in hardware_platforms():  # a vendor's discovery facts may name the host (NVML's do)
        named = load(platform.facts).host_name(topology) if platform.facts else None
        if named is not None:
            return named
    if source.startswith("hwloc-xml:"):
        return topology.name if topology.name != PurePath(source.removeprefix("hwloc-xml:")).stem else None
    return None


def _host(assignment: Assignment, rank: int, hosts: list[str] | None) -> str:
    if assignment.host_of_rank is not None:
        return assignment.host_of_rank[rank]
    return hosts[0] if hosts else "localhost"


def first_threads(assignment: Assignment, rank: int) -> tuple[int, ...]:
    """One OS CPU number per physical core of ``rank``: its cores' first hardware threads. Linux
    numbers the first thread of every core before the second ones, so of a rank's sorted CPUs the
    first (CPUs / threads per core) are one per core (binding.core_sets makes the same assumption
    where discovery recorded no sibling sets)."""
    cpus = tuple(sorted(assignment.cores_of_rank[rank])) if assignment.cores_of_rank else ()
    physical = len(assignment.core_index_of_rank[rank]) if assignment.core_index_of_rank else 0
    if physical and len(cpus) > physical and len(cpus) % physical == 0:
        return cpus[:physical]
    return cpus


def rankfile(assignment: Assignment, hosts: list[str] | None = None) -> str:
    """Open MPI 4 rankfile with OS CPU numbers (``mpirun --rankfile FILE --mca
    rmaps_rank_file_physical 1``): each rank on its host with one hardware thread per physical core
    it gets (Open MPI binds the core of each listed thread, so SMT siblings come along). Listing a
    core and its sibling (``slot=6,30``) reads as two cores in Open MPI's logical numbering when the
    physical flag is missing; one thread per core means the same cores either way only where the
    OS numbers equal the logical ones, so the header says which flag it needs."""
    lines = ["# linkscope rankfile (Open MPI 4, OS CPU numbers, one hardware thread per physical core): "
             "mpirun --rankfile THIS --mca rmaps_rank_file_physical 1 linkscope launch --mapping MAPPING -- ./app"]
    for rank in range(assignment.ranks):
        cores = first_threads(assignment, rank)
        slot = _cpu_list(cores) if cores else "*"
        lines.append(f"rank {rank}={_host(assignment, rank, hosts)} slot={slot}")
    return "\n".join(lines) + "\n"


def rankfile_logical(assignment: Assignment, hosts: list[str] | None = None) -> str:
    """Rankfile with logical core indexes (hwloc's order): Open MPI 5 reads rankfiles this way
    (``mpirun --map-by rankfile:file=FILE``), and so does Open MPI 4 without the physical flag."""
    if not assignment.core_index_of_rank:
        raise UserError("the mapping has no logical core indexes (its topology lists no CPU cores)",
                        hint="map onto a topology with CPU cores, or use --emit rankfile")
    lines = ["# linkscope rankfile (logical core indexes): Open MPI 5: mpirun --map-by rankfile:file=THIS "
             "linkscope launch --mapping MAPPING -- ./app ; Open MPI 4: mpirun --rankfile THIS ..."]
    for rank in range(assignment.ranks):
        cores = assignment.core_index_of_rank[rank]
        lines.append(f"rank {rank}={_host(assignment, rank, hosts)} slot={_cpu_list(cores) if cores else '*'}")
    return "\n".join(lines) + "\n"


def slurm_line(assignment: Assignment) -> str:
    """Slurm options. ``map_gpu`` indexes and ``mask_cpu`` masks count the node's GPUs and CPUs
    as the topology numbers them, so they are right only when the job holds the whole node
    (``--exclusive``); with GPU UUIDs known, the line says to let ``linkscope launch`` pick
    each rank's GPU by UUID instead, which holds in any allocation."""
    launch = "srun ... linkscope launch --mapping MAPPING -- ./app"
    has_uuid = bool(assignment.visible_device_of_rank) and all(
        v.startswith(("GPU-", "MIG-")) for v in assignment.visible_device_of_rank)
    head = [f"# by GPU UUID (any allocation): {launch}"] if has_uuid else []
    head.append("# the indexes below count the node's GPUs and CPUs in topology order: they need the whole "
                "node (--exclusive)")
    if assignment.node_of_rank is not None:
        per_node: dict[int, list[int]] = {}
        for rank, node in enumerate(assignment.node_of_rank):
            per_node.setdefault(node, []).append(assignment.gpu_of_rank[rank])
        lists = {tuple(v) for v in per_node.values()}
        if len(lists) > 1:
            lines = head + ["# the GPU order differs between nodes; Slurm applies one map_gpu list to every node,",
                            f"# so launch with: {launch}"]
            for node, gpus in sorted(per_node.items()):
                lines.append(f"# node {node}: --gpu-bind=map_gpu:{','.join(map(str, gpus))}")
            return "\n".join(lines) + "\n"
        gpus = list(next(iter(lists)))
    else:
        gpus = list(assignment.gpu_of_rank)
    line = f"--exclusive --gpu-bind=map_gpu:{','.join(map(str, gpus))}"
    if assignment.cores_of_rank and all(assignment.cores_of_rank) and assignment.node_of_rank is None:
        masks = [hex(sum(1 << c for c in cores)) for cores in assignment.cores_of_rank]
        line += f" --cpu-bind=mask_cpu:{','.join(masks)}"
    return "\n".join(head + [line]) + "\n"


def sbatch_script(assignment: Assignment, gpus_per_node: int | None = None, hosts: list[str] | None = None) -> str:
    """A runnable ``sbatch`` script: nodes, tasks, ``--gres=gpu:N`` (and ``--gpus-per-node``, the
    same request for sites with GPU types configured by count), the whole node (the indexes count
    its GPUs in topology order), then ``srun`` with the GPU and CPU binding of ``slurm_line``, or,
    where the GPU order differs between nodes or GPU UUIDs are known, ``linkscope launch`` choosing
    each rank's GPU. ``./app`` and ``mapping.json`` are the two words to change. ``hosts`` (the
    user's ``--hosts``, or the host the topology knows: ``known_host_name``) become ``--nodelist``:
    the mapping was made for those machines."""
    node_of = assignment.node_of_rank if assignment.node_of_rank is not None else (0,) * assignment.ranks
    nodes = len(set(node_of))
    # the GPUs each node must hold: the highest GPU index used there + 1 (map_gpu counts the node's GPUs)
    per_node = gpus_per_node or max(1, max(max(g for g, n in zip(assignment.gpu_of_rank, node_of) if n == node) + 1
                                           for node in set(node_of)))
    tasks_per_node = -(-assignment.ranks // nodes)
    options = slurm_line(assignment)
    binding = next((line for line in options.splitlines() if line.startswith("--exclusive")), None)
    lines = ["#!/bin/bash",
             "# linkscope: sbatch THIS (edit ./app and mapping.json); written by linkscope map --emit sbatch",
             f"#SBATCH --nodes={nodes}",
             f"#SBATCH --ntasks={assignment.ranks}",
             f"#SBATCH --ntasks-per-node={tasks_per_node}",
             f"#SBATCH --gres=gpu:{per_node}",
             f"#SBATCH --gpus-per-node={per_node}",
             "#SBATCH --exclusive"]
    if hosts:
        lines += ["# the machines this mapping was made for (drop the line to run on any node of the same kind)",
                  f"#SBATCH --nodelist={','.join(hosts[:nodes])}"]
    lines += ["set -euo pipefail"]
    lines += [line for line in options.splitlines() if line.startswith("#")]
    if binding is not None:
        lines.append(f"srun {binding.replace('--exclusive ', '')} ./app")
    else:
        lines.append("srun linkscope launch --mapping mapping.json -- ./app")
    return "\n".join(lines) + "\n"


def node_device_table(assignment: Assignment) -> Any:
    """This node's device table that the mapping's vendor places ranks by (AMD: the KFD topology),
    None where it needs none or none is readable."""
    launch = launch_of(assignment.gpu_vendor)
    return launch.live_table() if launch is not None else None


def check_devices(assignment: Assignment, node_gpus: int | None = None, live_gpus: Any = None) -> Assignment:
    """The mapping with its device numbers checked against this node (``LaunchEnvironment.check``:
    on AMD the HIP ordinals against the KFD table, corrected where they differ, with a note);
    unchanged for a vendor with nothing to check. ``live_gpus``: the table (default: read now)."""
    launch = launch_of(assignment.gpu_vendor)
    if launch is None:
        return assignment
    return launch.check(assignment, launch.live_table() if live_gpus is None else live_gpus, node_gpus)


def env_files(assignment: Assignment) -> dict[str, str]:
    """File name -> contents: one ``rank<N>.env`` per rank (``export`` lines for a shell)."""
    launch = launch_of(assignment.gpu_vendor)
    head = launch.env_file_head(assignment) if launch is not None else ""
    out = {}
    for rank in range(assignment.ranks):
        env = rank_environment(assignment, rank)
        out[f"rank{rank}.env"] = head + "".join(f"unset {k}\n" for k in _unset(assignment, None)) + \
            "".join(f"export {k}={v}\n" for k, v in env.items())
    return out
