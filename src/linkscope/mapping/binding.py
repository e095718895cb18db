"""CPU binding: which logical CPUs each rank gets, one physical core set at a time.

A CPU device lists its logical CPUs (``cores``); on an SMT machine several logical CPUs are
hardware threads of one physical core. They are grouped here into physical core sets:

* from the CPU's ``core_sets`` attribute where discovery recorded them (lists of sibling ids);
* else from ``physical_cores`` = p when the CPU has t x p logical CPUs: Linux numbers the first
  thread of every core first, so the sorted list's i-th, (i+p)-th, ... entries are siblings
  (k80-16's socket 0: ``0-11,24-35`` gives cores ``{0,24}``, ``{1,25}``, ...);
* else each logical CPU is its own set.

Ranks that share a CPU get disjoint runs of whole sets, so two ranks never get hyperthread
siblings of the same physical core.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..topology.model import Device


def core_sets(cpu: Device) -> tuple[tuple[int, ...], ...]:
    """Physical core sets of a CPU device (see the module doc), in core order."""
    explicit = cpu.attributes.get("core_sets") if cpu.attributes else None
    if explicit:
        return tuple(tuple(sorted(int(c) for c in group)) for group in explicit)
    cores = sorted(cpu.cores)
    physical = cpu.attributes.get("physical_cores") if cpu.attributes else None
    if isinstance(physical, int) and 0 < physical < len(cores) and len(cores) % physical == 0:
        threads = len(cores) // physical
        return tuple(tuple(cores[i + k * physical] for k in range(threads)) for i in range(physical))
    return tuple((c,) for c in cores)


def share(sets: Sequence[tuple[int, ...]], members: int, k: int) -> tuple[int, ...]:
    """Logical CPUs of the ``k``-th of ``members`` ranks sharing ``sets``: an equal run of whole
    core sets (all sets, shared, when there are more ranks than physical cores)."""
    if members > len(sets):
        return tuple(sorted(c for group in sets for c in group))
    per = len(sets) // members
    return tuple(sorted(c for group in sets[k * per:(k + 1) * per] for c in group))


def logical_cores(cpus: Sequence[Device]) -> dict[int, int]:
    """Logical CPU id -> logical core index as hwloc (and Open MPI's rankfile) counts cores: all
    physical core sets of the node ordered by package (socket, else NUMA node), then by their
    lowest logical CPU id."""
    sets = []
    for cpu in cpus:
        package = cpu.socket if cpu.socket is not None else cpu.numa_node if cpu.numa_node is not None else 0
        sets += [(package, min(group), group) for group in core_sets(cpu) if group]
    out: dict[int, int] = {}
    for index, (_, _, group) in enumerate(sorted(sets)):
        for c in group:
            out[c] = index
    return out


__all__ = ["core_sets", "logical_cores", "share"]
