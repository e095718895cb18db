"""AMD's launch environment (its platform row's ``launch``): which number HIP_VISIBLE_DEVICES gives
each rank's GPU, how a mapping's HIP ordinals are checked against this node's KFD table, and how
``launch`` finds the GPU by PCI address under the visibility variables a job inherits
(``discovery/hipdevices``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..discovery import hipdevices
from ..discovery.hipdevices import HipChoice, KfdGpu, choose_by_ordinal, choose_device, ordinals_by_bus, same_bus
from ..vendors.amd import parse_rocm_version
from .assignment import Assignment

#: the note prefix of ``check_hip_ordinals`` that env files repeat
NOTE_PREFIX = "HIP ordinals"


def amd_device(assignment: Assignment, rank: int, environ: Mapping[str, str],
               kfd_gpus: Sequence[KfdGpu] | None) -> HipChoice:
    """HIP_VISIBLE_DEVICES (and CUDA_VISIBLE_DEVICES where inherited) for ``rank``'s AMD GPU under
    the environment the launcher gave: found by PCI address in this node's KFD topology
    (``kfd_gpus``) and numbered among the GPUs the inherited ROCR_VISIBLE_DEVICES leaves
    (``hipdevices.choose_device``); without a KFD table, the mapping's ordinal made relative to an
    integer ROCR_VISIBLE_DEVICES."""
    bus = assignment.pci_bus_id_of_rank[rank] if assignment.pci_bus_id_of_rank else None
    stored = assignment.visible_device_of_rank[rank] if assignment.visible_device_of_rank else None
    ordinal = int(stored) if stored is not None and stored.isdigit() else assignment.gpu_of_rank[rank]
    if kfd_gpus:
        return choose_device(environ, kfd_gpus, pci_bus_id=bus, ordinal=None if bus else ordinal)
    return choose_by_ordinal(environ, ordinal)


def check_hip_ordinals(assignment: Assignment, kfd_gpus: Sequence[KfdGpu] | None,
                       node_gpus: int | None = None) -> tuple[Assignment, str]:
    """Cross-check an AMD mapping's HIP ordinals (what its env files export as HIP_VISIBLE_DEVICES:
    the topology's HIP ordinal, ``Device.ordinals["amd"]``, from discovery) against this node's live KFD table
    (``hipdevices.read_kfd_gpus``: the order HIP numbers GPUs in with no visibility variable), by
    each rank's PCI address. Returns the mapping, with the KFD positions where they differ, and one
    sentence saying what was checked, corrected or assumed (also added to the mapping's notes).
    ``node_gpus``: the node's GPU count (the
    topology's); a shorter table means this process cannot open every GPU (a cgroup), so its
    positions are not the node's and are not used."""
    stored = assignment.visible_device_of_rank or tuple(str(g) for g in assignment.gpu_of_rank)
    buses = assignment.pci_bus_id_of_rank
    if not buses:
        said = ("HIP ordinals assumed: the topology gives no PCI address for its GPUs, so HIP_VISIBLE_DEVICES "
                "is its hip_ordinal (or GPU number), checked against no KFD table; launch cannot find the GPUs by "
                "bus id either")
    elif kfd_gpus is None:
        said = ("HIP ordinals assumed: HIP_VISIBLE_DEVICES is discovery's HIP ordinal, not checked against a KFD "
                "table (none readable here; run map on the node to check, or let linkscope launch find each GPU "
                "by PCI address there)")
    else:
        positions = [next((i for i, g in enumerate(kfd_gpus) if same_bus(g.pci_bus_id, bus)), None) for bus in buses]
        missing = sorted({bus for bus, pos in zip(buses, positions) if pos is None})
        if node_gpus is not None and 0 < len(kfd_gpus) < node_gpus:
            said = (f"HIP ordinals not checked: this process can open {len(kfd_gpus)} of the node's {node_gpus} GPUs "
                    "(the others' render nodes are hidden from it), so KFD positions here are not the node's; "
                    "HIP_VISIBLE_DEVICES is discovery's HIP ordinal")
        elif missing:
            said = (f"HIP ordinals not checked: this node's KFD table lists no GPU at {', '.join(missing)} (the "
                    "mapping's topology is another node's); HIP_VISIBLE_DEVICES is discovery's HIP ordinal")
        else:
            live = tuple(str(p) for p in positions)
            wrong = [r for r in range(assignment.ranks) if live[r] != stored[r]]
            if not wrong:
                said = (f"HIP ordinals checked against this node's KFD table by PCI address: all {assignment.ranks} "
                        "ranks agree")
            else:
                shown = "; ".join(f"rank {r} ({buses[r]}): {stored[r]} -> {live[r]}" for r in wrong[:8])
                said = (f"HIP ordinals corrected from this node's KFD table by PCI address (discovery's order was not "
                        f"HIP's): {shown}{' ...' if len(wrong) > 8 else ''}")
                assignment = replace(assignment, visible_device_of_rank=live)
    return replace(assignment, notes=(*assignment.notes, said)), said


def probed_gpu(record: Mapping[str, Any], topology: Any) -> tuple[int | None, str] | None:
    """(topology GPU index, how it was found) of a rank ``audit``'s placement probe recorded on an
    AMD node (a topology of AMD GPUs, or a probe that read a KFD table and no NVML GPU): HIP device
    ``local rank modulo the devices HIP shows`` under the rank's visibility variables
    (``hipdevices.hip_view``) in the KFD table it recorded, else in the topology's HIP order. None
    for a rank on another vendor's GPUs."""
    if not (topology.gpus and all(d.vendor == "amd" for d in topology.gpus)) \
            and not (record.get("kfd_gpus") and not record.get("gpus")):
        return None
    raw_env = record.get("visible_env")
    env = {str(k): str(v) for k, v in raw_env.items()} if isinstance(raw_env, dict) else {}
    table = hipdevices.kfd_from_facts(record.get("kfd_gpus"))
    if table:
        index_of = [next((int(d.index or 0) for d in topology.gpus if same_bus(d.pci_bus_id, g.pci_bus_id)), None)
                    for g in table]
        basis = "the rank's KFD table"
        if all(i is None for i in index_of) and not any(d.pci_bus_id for d in topology.gpus) \
                and len(table) == topology.gpu_count:
            index_of = list(hipdevices.table_from_topology(topology.gpus)[1])
            basis = "the rank's KFD table, in the topology's HIP order (the topology has no PCI addresses)"
    else:
        table, known = hipdevices.table_from_topology(topology.gpus)
        index_of = list(known)
        basis = "the topology's HIP order (assumed: the probe read no KFD table)"
    text = record.get("rocm_version")
    version = parse_rocm_version(text) if isinstance(text, str) else None
    uuid_tokens = version is None or version >= hipdevices.HIP_UUID_TOKENS_FROM
    seen = hipdevices.hip_view(env, table, uuid_tokens=uuid_tokens)
    named = "+".join(n for n in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES") if n in env)
    rules = f"HIP rules on {named or 'no visibility variable'}, {basis}"
    if not seen:
        shown = ", ".join(f"{k}={v!r}" for k, v in env.items() if k.endswith("VISIBLE_DEVICES"))
        return None, f"HIP shows this rank no GPU ({shown or 'no visibility variable'}; {basis})"
    local = record.get("local_rank")
    pick = seen[(local if isinstance(local, int) else 0) % len(seen)]
    gpu = index_of[pick]
    if gpu is None:
        return None, f"{rules}: its GPU {table[pick].pci_bus_id} is not in topology {topology.name}"
    return gpu, rules


class AmdLaunch:
    """``LaunchEnvironment`` of AMD GPUs. The HIP ordinal with no visibility variable set, never
    amdsmi's UUID, which HIP_VISIBLE_DEVICES rejects (clr rocdevice.cpp:518 at rocm-6.2.2
    translates only ``GPU-`` tokens); ``launch`` makes it relative to the variables the job inherits."""

    visible_devices_var = "HIP_VISIBLE_DEVICES"
    accepts_node_uuids = False  # a node file's UUIDs are amdsmi's

    def device_tokens(self, gpus: Sequence[Any]) -> list[str]:
        """Discovery's HIP ordinal (the KFD order), else ascending bus id (``ordinals_by_bus``), else the index."""
        by_bus = ordinals_by_bus([d.pci_bus_id for d in gpus])
        out = []
        for device, fallback in zip(gpus, by_bus):
            ordinal = device.ordinals.get("amd", fallback)
            out.append(str(ordinal if ordinal is not None else device.index))
        return out

    def live_table(self) -> list[KfdGpu] | None:
        return hipdevices.read_kfd_gpus()

    def check(self, assignment: Assignment, live: Any, node_gpus: int | None) -> Assignment:
        return check_hip_ordinals(assignment, live, node_gpus)[0]

    def place(self, assignment: Assignment, rank: int, environ: Mapping[str, str], live: Any) -> tuple[dict[str, str], str]:
        choice = amd_device(assignment, rank, environ, live)
        return choice.env, choice.says

    def env_file_head(self, assignment: Assignment) -> str:
        head = ("# HIP_VISIBLE_DEVICES below counts every GPU of the node in KFD order (no ROCR_VISIBLE_DEVICES);\n"
                "# under an inherited ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES (Slurm sets the first) run the rank\n"
                "# as: linkscope launch --mapping MAPPING -- APP (it numbers the GPU among those the job was given)\n")
        return head + "".join(f"# {n}\n" for n in assignment.notes if n.startswith(NOTE_PREFIX))

    def probed_gpu(self, record: Any, topology: Any) -> tuple[int | None, str] | None:
        return probed_gpu(record, topology)


LAUNCH = AmdLaunch()
