"""Topology as tables (neutral model) for the console: nvidia-smi-like level matrix, theoretical
bandwidth matrix, per-GPU affinity. Renderers (Rich, JSON) sit on top of these rows."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..topology import query
from ..topology.levels import LEGEND
from ..topology.model import DeviceKind, Topology


def format_cpu_list(cores: tuple[int, ...] | list[int]) -> str:
    """``0-55,112-167`` from a list of core ids.

    >>> format_cpu_list([0, 1, 2, 3, 8, 10, 11])
    '0-3,8,10-11'
    """
    values = sorted(set(cores))
    if not values:
        return ""
    parts = []
    start = prev = values[0]
    ends: list[int | None] = [*values[1:], None]
    for v in ends:
        if v is not None and v == prev + 1:
            prev = v
            continue
        parts.append(f"{start}-{prev}" if prev != start else f"{start}")
        if v is not None:
            start = prev = v
    return ",".join(parts)


#: What the confidence marks of preset notes and sources mean (docs/presets.md).
CONFIDENCE_MARKS = ("[H] = taken from a vendor or site document or a published nvidia-smi/NCCL dump of that machine; "
                    "[M] = derived from such sources with one inference; [L] = an assumption or a typical value, "
                    "to be replaced by discovery on a real node")


def confidence_legend(texts: tuple[str, ...] | list[str]) -> str | None:
    """The legend of the [H]/[M]/[L] marks when any of ``texts`` uses them."""
    return CONFIDENCE_MARKS if any(mark in t for t in texts for mark in ("[H]", "[M]", "[L]")) else None


@dataclass(frozen=True)
class TopologyView:
    """Everything ``linkscope topo`` shows, as plain data."""

    title: str
    labels: tuple[str, ...]  # GPUs then NICs
    levels: tuple[tuple[str, ...], ...]  # label x label level codes
    gpu_labels: tuple[str, ...]
    bandwidth_gb_per_s: tuple[tuple[float | None, ...], ...]  # GPU x GPU, per direction
    gpu_rows: tuple[tuple[str, ...], ...]  # label, name, pci, numa, cores, nearest NICs
    legend: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]
    topo_m: tuple[tuple[str, ...], ...] = ()  # nvidia-smi topo -m layout: header row, then one row per GPU and NIC
    nic_legend: tuple[tuple[str, str], ...] = ()  # (NIC0, mlx5_0)


def build_view(topology: Topology, gpus: list[int] | None = None) -> TopologyView:
    selected = [topology.gpu(i) for i in gpus] if gpus is not None else list(topology.gpus)
    nics = list(topology.of_kind(DeviceKind.NIC))
    devices = selected + nics
    levels = tuple(tuple(query.pair_level(topology, a, b).code for b in devices) for a in devices)
    bandwidth = tuple(
        tuple(None if a.id == b.id else query.theoretical_gb_per_s(topology, a, b) for b in selected) for a in selected
    )
    rows = []
    for g in selected:
        cpu = query.local_cpu(topology, g)
        numa = g.numa_node if g.numa_node is not None else (cpu.numa_node if cpu else None)
        rows.append(
            (
                g.label,
                g.name or "",
                g.pci_bus_id or "",
                "N/A" if numa is None else str(numa),
                format_cpu_list(query.nearest_cores(topology, g)) or "N/A",
                ",".join(n.label for n in query.nearest_nics(topology, g)) or "-",
            )
        )
    topo_m, nic_legend = topo_m_rows(topology, selected, nics)
    where = "this system" if topology.is_this_system else "NOT this system"
    title = f"{topology.name} ({topology.source or 'unknown source'}; {where})"
    return TopologyView(
        title=title,
        labels=tuple(d.label for d in devices),
        levels=levels,
        gpu_labels=tuple(g.label for g in selected),
        bandwidth_gb_per_s=bandwidth,
        gpu_rows=tuple(rows),
        legend=LEGEND,
        notes=topology.notes,
        topo_m=topo_m,
        nic_legend=nic_legend,
    )


def topo_m_rows(topology: Topology, gpus: list, nics: list) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, str], ...]]:
    """The matrix in ``nvidia-smi topo -m``'s layout: GPUs then NICs (named NIC0, NIC1 ... with a NIC
    legend, as nvidia-smi does) as rows and columns, then CPU Affinity and NUMA Affinity (the cores and
    NUMA node of the CPU each device hangs from; N/A where the topology does not say)."""
    devices = gpus + nics
    names = [g.label for g in gpus] + [f"NIC{i}" for i in range(len(nics))]
    header = ("", *names, "CPU Affinity", "NUMA Affinity")
    rows = [header]
    for name, a in zip(names, devices):
        cpu = query.local_cpu(topology, a)
        numa = a.numa_node if a.numa_node is not None else (cpu.numa_node if cpu else None)
        cores = format_cpu_list(cpu.cores) if cpu and cpu.cores else "N/A"
        rows.append((name, *(query.pair_level(topology, a, b).code for b in devices), cores, "N/A" if numa is None else str(numa)))
    legend = tuple((f"NIC{i}", n.label) for i, n in enumerate(nics))
    return tuple(rows), legend


def render_rich(view: TopologyView, console) -> None:
    from .console import Column, print_fitted

    console.print(f"[bold]{view.title}[/bold]")
    header = view.topo_m[0]
    print_fitted(console, "topology matrix (nvidia-smi topo -m layout: pair levels, CPU and NUMA affinity)",
                 [Column("", key=True, justify="left")] + [Column(h, justify="center") for h in header[1:-2]]
                 + [Column(header[-2], "CPUs", justify="left"), Column(header[-1], "NUMA", justify="left")],
                 [list(row) for row in view.topo_m[1:]])
    if view.nic_legend:
        console.print("NIC Legend: " + ", ".join(f"{n}: {name}" for n, name in view.nic_legend), markup=False)
    print_fitted(console, "theoretical bandwidth per direction (GB/s, bottleneck of the route)",
                 [Column("src \\ dst", "src\\dst", key=True, justify="left")] + [Column(label) for label in view.gpu_labels],
                 [[label, *["-" if v is None else f"{v:.1f}" for v in row]]
                  for label, row in zip(view.gpu_labels, view.bandwidth_gb_per_s)])
    print_fitted(console, "GPU affinity",
                 [Column("GPU", key=True, justify="left"), Column("name", justify="left", wrap=True),
                  Column("PCI bus id", "PCI", justify="left"), Column("NUMA", justify="left"),
                  Column("cores", justify="left"), Column("nearest NIC", "NIC", justify="left", wrap=True)],
                 [list(row) for row in view.gpu_rows])
    console.print("Legend: " + "; ".join(f"{code} = {text}" for code, text in view.legend), style="dim")
    for note in view.notes:
        console.print(f"note: {note}", style="yellow", markup=False)
    legend = confidence_legend(view.notes)
    if legend:
        console.print(f"confidence marks: {legend}", style="dim", markup=False)


@dataclass(frozen=True)
class EmbeddedTopology:
    """One distinct topology embedded in a list of RunRecords: the first record's label, the topology
    (None when it does not load) and, then, the one-line reason."""

    label: str
    record: Any
    topology: Topology | None
    error: str = ""


def embedded_topologies(records: Sequence[Any], labels: Sequence[str] | None = None) -> list[EmbeddedTopology]:
    """Each distinct embedded topology of ``records`` once (same name, device and link counts: the same
    machine), in record order; the report's drawing and its ``topo -m`` tables read the same list."""
    from ..errors import UserError
    from ..topology.io import from_dict

    out: list[EmbeddedTopology] = []
    seen: set[tuple[Any, int, int]] = set()
    for i, record in enumerate(records):
        raw = record.topology
        if not raw:
            continue
        key = (raw.get("name"), len(raw.get("devices") or ()), len(raw.get("links") or ()))
        if key in seen:
            continue
        seen.add(key)
        label = labels[i] if labels is not None else str(raw.get("name"))
        try:
            out.append(EmbeddedTopology(label, record, from_dict(raw)))
        except UserError as exc:
            out.append(EmbeddedTopology(label, record, None, exc.one_line()))
    return out
