"""The topology drawn by tiers: fabric switches (NVSwitch) above the GPUs, then the NICs beside their
GPUs, PCIe switches, host bridges, CPUs / NUMA nodes and, for clusters, the network switches.

Readable at 8, 16 and 64 GPUs (tests/report/test_topology_figure.py reads every text's bounding box
from Matplotlib's renderer and fails on an overlap):
- pass-through bridges (a PCIe switch or host bridge with exactly two PCIe links) are folded into
  one link, so a chain root port -> bridge -> switch -> GPU reads as one line;
- links carry no per-edge text: one legend entry per link kind and capacity;
- one unit in the figure: GB/s (10^9 B/s per direction), NIC line rates converted from Gb/s;
- positions are in inches (the axes fill the figure), so spacing follows the text sizes: a row is
  swept left to right with at least the width of its widest label between neighbours;
- switches and bridges have no per-device label (their tier says what they are).
"""
from __future__ import annotations

import functools
import math
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import plots

#: tier of each device kind, top to bottom
TIERS: tuple[tuple[str, str], ...] = (
    ("nvswitch", "NVSwitch fabric"),
    ("gpu", "GPUs"),
    ("nic", "NICs"),
    ("pcie_switch", "PCIe switches"),
    ("host_bridge", "host bridges"),
    ("cpu", "CPUs / NUMA"),
    ("network_switch", "network switches"),
)
FOLDABLE = ("pcie_switch", "host_bridge")
PT = 1 / 72  # inches per point
LEFT_IN = 1.45  # room for the tier names
ROW_IN = 0.95
KIND_NAMES = {"nvlink": "NVLink", "xgmi": "xGMI", "pcie": "PCIe", "upi": "CPU-CPU link", "network": "network"}


@dataclass(frozen=True)
class Edge:
    a: str
    b: str
    kind: str
    count: int
    capacity_gb_per_s: float


def fold_pass_through(topology: Any) -> tuple[list[Any], list[Edge]]:
    """Devices and links with every pass-through bridge folded: a PCIe switch or host bridge with
    exactly two links, both PCIe, becomes one PCIe link of the smaller capacity (repeated, so a chain
    folds into one link)."""
    devices = {d.id: d for d in topology.devices}
    edges = [Edge(link.a, link.b, link.kind.value, link.count, link.capacity_gb_per_s) for link in topology.links]
    changed = True
    while changed:
        changed = False
        touching: dict[str, list[Edge]] = defaultdict(list)
        for e in edges:
            touching[e.a].append(e)
            touching[e.b].append(e)
        for dev_id, dev in list(devices.items()):
            mine = touching.get(dev_id, [])
            if dev.kind.value not in FOLDABLE or len(mine) != 2 or any(e.kind != "pcie" for e in mine):
                continue
            ends = [e.b if e.a == dev_id else e.a for e in mine]
            if ends[0] == ends[1]:
                continue
            merged = Edge(ends[0], ends[1], "pcie", min(e.count for e in mine),
                          min(e.capacity_gb_per_s for e in mine))
            edges = [e for e in edges if e not in mine] + [merged]
            del devices[dev_id]
            changed = True
            break
    return list(devices.values()), edges


def _label(d: Any, many_gpus: bool) -> str:
    kind = d.kind.value
    if kind == "gpu":
        return str(d.index) if many_gpus and d.index is not None else d.label
    if kind == "cpu":
        numa = f" · NUMA {d.numa_node}" if d.numa_node is not None else ""
        return f"{d.label}{numa}"
    if kind in ("nic", "nvswitch", "network_switch"):
        return d.device_name or d.label
    return ""


def _text_width_in(text: str, size_pt: float, bold: bool = False) -> float:
    # DejaVu Sans: about 0.62 em per character (digits and lower case), 0.72 in bold
    return (0.72 if bold else 0.62) * size_pt * PT * len(text)


@dataclass(frozen=True)
class _Style:
    font_pt: float
    rotate: bool  # labels vertical (narrow rows of many devices)


def _styles(n_gpus: int) -> dict[str, _Style]:
    many = n_gpus > 16
    return {"gpu": _Style(7.5 if many else 8.5, many), "nic": _Style(7, True), "cpu": _Style(8, False),
            "nvswitch": _Style(8, False), "network_switch": _Style(7, True), "pcie_switch": _Style(7, False),
            "host_bridge": _Style(7, False)}


def _box_width_in(d: Any, label: str, style: _Style) -> float:
    """Width of a GPU box (its label inside, bold) or of a device's label, in inches."""
    text_h = style.font_pt * PT * 1.25
    if style.rotate:
        return text_h + (0.05 if d.kind.value == "gpu" else 0.0)
    return _text_width_in(label, style.font_pt, bold=d.kind.value == "gpu") + (0.12 if d.kind.value == "gpu" else 0.0)


def _footprint_in(d: Any, label: str, style: _Style) -> float:
    """The horizontal room one device needs in its row, in inches."""
    if not label:
        return 0.26
    return max(_box_width_in(d, label, style), 0.14 if style.rotate else 0.26) + (0.05 if style.rotate else 0.12)


def switch_levels(devices: Sequence[Any], edges: Sequence[Edge]) -> dict[str, int]:
    """Level of each PCIe switch: 1 for one a GPU hangs off, 2 for the switch above it (a chassis PLX
    over the boards' switches), ...: hops from the nearest GPU through PCIe switches."""
    kind = {d.id: d.kind.value for d in devices}
    neighbours: dict[str, list[str]] = defaultdict(list)
    for e in edges:
        neighbours[e.a].append(e.b)
        neighbours[e.b].append(e.a)
    level: dict[str, int] = {}
    frontier = deque((n, 1) for g, k in kind.items() if k == "gpu" for n in neighbours[g] if kind.get(n) == "pcie_switch")
    while frontier:
        cur, depth = frontier.popleft()
        if cur in level:
            continue
        level[cur] = depth
        frontier.extend((n, depth + 1) for n in neighbours[cur] if kind.get(n) == "pcie_switch" and n not in level)
    for d, k in kind.items():  # a switch no GPU reaches (a NIC's alone): the first level
        if k == "pcie_switch":
            level.setdefault(d, 1)
    return level


def _tier(d: Any, levels: dict[str, int]) -> str:
    """The row of a device: its kind, a PCIe switch's kind and level (``pcie_switch:2``) when there are several."""
    kind = d.kind.value
    if kind == "pcie_switch" and len(set(levels.values())) > 1:
        return f"pcie_switch:{levels.get(d.id, 1)}"
    return kind


def tier_rows(devices: Sequence[Any], levels: dict[str, int]) -> list[tuple[str, str]]:
    """(tier key, name) of every row drawn, top to bottom: PCIe switches one row per level."""
    rows = []
    for kind, name in TIERS:
        if kind == "pcie_switch" and len(set(levels.values())) > 1:
            rows += [(f"pcie_switch:{k}", f"PCIe switches, level {k}") for k in sorted(set(levels.values()))]
        elif any(d.kind.value == kind for d in devices):
            rows.append((kind, name))
    return rows


def layout(topology: Any) -> tuple[dict[str, tuple[float, float]], list[Any], list[Edge], float, float]:
    """(position in inches of every drawn device, devices, folded edges, width, height of the drawing)."""
    from ..topology import query

    devices, edges = fold_pass_through(topology)
    by_id = {d.id: d for d in devices}
    gpus = [d for d in devices if d.kind.value == "gpu"]
    many = len(gpus) > 16
    styles = _styles(len(gpus))
    levels = switch_levels(devices, edges)
    tiers = [key for key, _ in tier_rows(devices, levels)]
    y_of = {kind: (len(tiers) - 1 - i) * ROW_IN for i, kind in enumerate(tiers)}
    try:
        nodes = query.node_labels(topology)
        node_of = {d.id: int(n) for d, n in zip(topology.devices, nodes)}
    except Exception:  # a topology that cannot be split: one node
        node_of = {}
    pos: dict[str, tuple[float, float]] = {}
    # GPUs: one row, by node then index, a gap between nodes
    gpu_step = max(_footprint_in(g, _label(g, many), styles["gpu"]) for g in gpus) if gpus else 0.6
    x = LEFT_IN + gpu_step / 2
    previous_node = None
    gpu_ids = {g.id for g in gpus}
    direct = [(e.a, e.b) for e in edges if e.a in gpu_ids and e.b in gpu_ids]  # drawn as arcs over the GPU row
    by_node: dict[int, list[Any]] = defaultdict(list)
    for g in sorted(gpus, key=lambda d: (node_of.get(d.id, 0), d.index if d.index is not None else 0)):
        by_node[node_of.get(g.id, 0)].append(g)
    ordered = [by_id[i] for node in sorted(by_node) for i in arc_order([g.id for g in by_node[node]], direct)]
    for g in ordered:
        node = node_of.get(g.id, 0)
        if previous_node is not None and node != previous_node:
            x += gpu_step * 0.8
        previous_node = node
        pos[g.id] = (x, y_of["gpu"])
        x += gpu_step
    # every other device: under (or over) the GPUs it is nearest to (fewest links, not across a
    # fabric or network switch), then each row swept apart
    neighbours: dict[str, list[str]] = defaultdict(list)
    for e in edges:
        neighbours[e.a].append(e.b)
        neighbours[e.b].append(e.a)

    def nearest_gpu_x(start: str) -> float | None:
        if by_id[start].kind.value == "nvswitch" or by_id[start].kind.value == "network_switch":
            xs = [pos[n][0] for n in neighbours[start] if n in pos]
            if xs:
                return sum(xs) / len(xs)
        seen = {start}
        frontier = deque([(start, 0)])
        found: list[float] = []
        best = None
        while frontier:
            cur, dist = frontier.popleft()
            if best is not None and dist > best:
                break
            if cur in pos and by_id[cur].kind.value == "gpu":
                found.append(pos[cur][0])
                best = dist
                continue
            for n in neighbours[cur]:
                if n not in seen and by_id[n].kind.value not in ("nvswitch", "network_switch"):
                    seen.add(n)
                    frontier.append((n, dist + 1))
        return sum(found) / len(found) if found else None

    width_gpus = x if gpus else LEFT_IN + 1.0
    order = ["nvswitch", "nic"] + [t for t in tiers if t.startswith("pcie_switch")] + ["host_bridge", "cpu", "network_switch"]
    for kind in order:
        members = [d for d in devices if _tier(d, levels) == kind]
        if not members:
            continue
        wanted = []
        for d in members:
            gx = nearest_gpu_x(d.id)
            if gx is None:  # e.g. network switches: over the NICs they connect
                xs = [pos[n][0] for n in neighbours[d.id] if n in pos]
                gx = sum(xs) / len(xs) if xs else (LEFT_IN + width_gpus) / 2
            wanted.append((gx, d.index or 0, d.id))
        wanted.sort()
        room = [_footprint_in(by_id[i], _label(by_id[i], many), styles[kind.split(":")[0]]) for _, _, i in wanted]
        placed: list[float] = []
        for k, (gx, _, _) in enumerate(wanted):
            if placed:
                gx = max(gx, placed[-1] + (room[k - 1] + room[k]) / 2)
            placed.append(gx)
        shift = sum(w[0] for w in wanted) / len(wanted) - sum(placed) / len(placed)
        left_most = placed[0] + shift - room[0] / 2
        if left_most < LEFT_IN:
            shift += LEFT_IN - left_most
        for (_, _, dev_id), px in zip(wanted, placed):
            y = y_of[kind]
            if kind == "network_switch" and not any(by_id[n].kind.value == "nic" for n in neighbours[dev_id]):
                y -= ROW_IN * 0.6  # a spine: below the leaves it joins
            pos[dev_id] = (px + shift, y)
    right = max(p[0] for p in pos.values()) + 0.6 if pos else LEFT_IN + 1
    lowest = min((p[1] for p in pos.values()), default=0.0)
    if lowest < 0:  # a spine row below the last tier: lift everything
        pos = {k: (px, py - lowest) for k, (px, py) in pos.items()}
    height = (len(tiers) - 1) * ROW_IN - min(lowest, 0.0)
    return pos, devices, edges, right, height


def line_width(capacity_gb_per_s: float, thin: float = 1.0) -> float:
    """A link's drawn width in points: wider for more GB/s (log scale), the same in the legend."""
    return thin * (0.4 + 0.55 * math.log2(max(capacity_gb_per_s, 1.0)))  # 8 GB/s 2.0 pt, 50 GB/s 3.5, 200 GB/s 4.6


#: Orders of a row searched exhaustively up to this many devices (8: 40,320 orders, about 0.3 s in NumPy);
#: above, pair swaps from the index order while the score improves, up to ``SWAP_ORDER_MAX``.
EXHAUSTIVE_ORDER_MAX = 8
EXHAUSTIVE_PAIR_CHECKS = 4_000_000  # orders x pairs of arcs compared, at most (MI250X: 40,320 x 66; a full xGMI mesh is not searched)
SWAP_ORDER_MAX = 32  # rows longer than this keep the index order (a pass of pair swaps grows as n^2 x links^2)
TOP_ARC_IN = 1.3  # the highest arc over a row that has room above it (the GPU row without NVSwitches)
ARC_RISE_PER_IN = 0.35  # an arc's rise per inch of span, at most (less when the row's widest arc would pass its cap)


def _crossings_and_span(rank: Any, pairs: Any) -> tuple[Any, Any]:
    """Crossings (pairs of arcs over one row whose ends interleave: such arcs cross once, any others never)
    and total span, per order: ``rank`` is orders x devices (each device's place), ``pairs`` edges x 2."""
    import numpy as np

    a, b = rank[:, pairs[:, 0]], rank[:, pairs[:, 1]]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    i, j = np.triu_indices(len(pairs), 1)
    cross = (((lo[:, i] < lo[:, j]) & (lo[:, j] < hi[:, i]) & (hi[:, i] < hi[:, j]))
             | ((lo[:, j] < lo[:, i]) & (lo[:, i] < hi[:, j]) & (hi[:, j] < hi[:, i])))
    return cross.sum(axis=1), (hi - lo).sum(axis=1)


def arc_order(ids: Sequence[str], pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The order of ``ids`` along a row that gives the arcs of ``pairs`` (drawn on one side of the row) the
    fewest crossings, then the shortest total span, then the order nearest the given one (MI250X: the
    index order crossed its xGMI arcs 9 times, this order 5, the fewest one side allows)."""
    ids = list(ids)
    place = {d: k for k, d in enumerate(ids)}
    edges = tuple(sorted({(place[a], place[b]) for a, b in pairs if a in place and b in place and a != b}))
    if len(ids) < 3 or len(edges) < 2 or len(ids) > SWAP_ORDER_MAX:
        return ids
    return [ids[k] for k in _best_order(len(ids), edges)]


@functools.lru_cache(maxsize=64)
def _best_order(n: int, edges: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    """``arc_order`` on places 0..n-1 (cached: the nodes of a cluster share one answer)."""
    import itertools

    import numpy as np

    pairs = np.array(edges, dtype=np.int64)
    if n <= EXHAUSTIVE_ORDER_MAX and math.factorial(n) * len(pairs) * (len(pairs) - 1) // 2 <= EXHAUSTIVE_PAIR_CHECKS:
        orders = np.array(list(itertools.permutations(range(n))), dtype=np.int64)  # the given order first
        cross, span = _crossings_and_span(np.argsort(orders, axis=1), pairs)
        best = int(np.argmin(cross * (n * n * len(pairs) + 1) + span))  # crossings first, then span
        return tuple(int(k) for k in orders[best])
    order = list(range(n))

    def score(o: list[int]) -> tuple[int, int]:
        c, sp = _crossings_and_span(np.argsort(np.array([o]), axis=1), pairs)
        return int(c[0]), int(sp[0])

    current, improved = score(order), True
    while improved:
        improved = False
        for i in range(n):
            for j in range(i + 1, n):
                trial = order[:]
                trial[i], trial[j] = trial[j], trial[i]
                got = score(trial)
                if got < current:
                    order, current, improved = trial, got, True
    return tuple(order)


@dataclass(frozen=True)
class Arc:
    """A link drawn as an arc over its row: from ``x0`` to ``x1`` at height ``y`` (inches), peaking ``rise``
    above it (a quadratic Bézier whose control point is at twice the rise)."""

    edge: Edge
    x0: float
    x1: float
    y: float
    rise: float

    def points(self, n: int = 49) -> list[tuple[float, float]]:
        """The drawn curve, sampled: a parabola through both ends with its peak at ``rise``."""
        return [(self.x0 + (self.x1 - self.x0) * t, self.y + 4 * self.rise * t * (1 - t))
                for t in (k / (n - 1) for k in range(n))]


def row_arcs(edges: Sequence[Edge], pos: dict[str, tuple[float, float]], port_half_in: dict[str, float],
             cap_in: float, lift_in: float = 0.0) -> list[Arc]:
    """The arcs of the links whose ends sit on one row. Each end gets its own port along its device
    (links to the left on the left half, the longer ones nearer the middle; to the right mirrored), and
    every rise is the same multiple of the span (at most ``ARC_RISE_PER_IN``, and the widest arc at
    most ``cap_in``): then nested arcs never touch, arcs side by side never meet, and two arcs cross
    only where their ends interleave, once. The arcs leave ``lift_in`` above the row (a GPU box's top)."""
    in_row = [e for e in edges if e.a in pos and e.b in pos and e.a != e.b and abs(pos[e.a][1] - pos[e.b][1]) <= 1e-6]
    if not in_row:
        return []
    at: dict[str, list[tuple[int, Edge, float]]] = defaultdict(list)  # device -> (side, edge, span)
    for e in in_row:
        span = abs(pos[e.a][0] - pos[e.b][0])
        for here, there in ((e.a, e.b), (e.b, e.a)):
            at[here].append((-1 if pos[there][0] < pos[here][0] else 1, e, span))
    port: dict[tuple[int, str], float] = {}
    for dev, ends in at.items():
        left = sorted((x for x in ends if x[0] < 0), key=lambda x: (x[2], pos[x[1].a][0] + pos[x[1].b][0]))
        right = sorted((x for x in ends if x[0] > 0), key=lambda x: (-x[2], pos[x[1].a][0] + pos[x[1].b][0]))
        ordered = left + right
        half = port_half_in.get(dev, 0.05)
        for k, (_, e, _) in enumerate(ordered):
            port[(id(e), dev)] = pos[dev][0] - half + (k + 0.5) * 2 * half / len(ordered)
    widest = max(abs(port[(id(e), e.a)] - port[(id(e), e.b)]) for e in in_row)
    per_in = min(ARC_RISE_PER_IN, cap_in / widest) if widest > 0 else ARC_RISE_PER_IN
    return [Arc(e, port[(id(e), e.a)], port[(id(e), e.b)], pos[e.a][1] + lift_in,
                per_in * abs(port[(id(e), e.a)] - port[(id(e), e.b)])) for e in in_row]


def _rate_text(gb_per_s: float) -> str:
    return f"{gb_per_s:.0f}" if gb_per_s >= 100 else f"{gb_per_s:.3g}"


def link_legend(edges: Sequence[Edge]) -> list[tuple[str, str, float]]:
    """(colour, text, line width) per link kind and capacity: the kind is the colour, the capacity the
    line's width (as drawn), one entry per width."""
    groups: dict[tuple[str, int, float], int] = defaultdict(int)
    for e in edges:
        groups[(e.kind, e.count if e.kind in ("nvlink", "xgmi") else 1, round(e.capacity_gb_per_s, 1))] += 1
    out = []
    for (kind, count, cap), n in sorted(groups.items(), key=lambda kv: (kv[0][0], -kv[0][2])):
        bond = f" ×{count}" if count > 1 else ""
        out.append((plots.LINK_COLOURS.get(kind, "#444444"),
                    f"{KIND_NAMES.get(kind, kind)}{bond}: {_rate_text(cap)} GB/s ({n} link{'s' if n != 1 else ''})",
                    line_width(cap)))
    return out


def gpu_box_height_in(many: bool) -> float:
    return 0.42 if many else 0.3


def drawn_arcs(pos: dict[str, tuple[float, float]], devices: Sequence[Any], edges: Sequence[Edge]) -> list[Arc]:
    """Every arc of the drawing, row by row: the GPU row without NVSwitches above it rises up to
    ``TOP_ARC_IN``, any other row up to 0.6 of the room to the row above."""
    gpus = [d for d in devices if d.kind.value == "gpu"]
    styles = _styles(len(gpus))
    many = len(gpus) > 16
    on_top = bool(gpus) and not any(d.kind.value == "nvswitch" for d in devices)
    half = {d.id: (_box_width_in(d, _label(d, many), styles["gpu"]) * 0.35 if d.kind.value == "gpu" else 0.05)
            for d in devices}
    out: list[Arc] = []
    for y in sorted({p[1] for p in pos.values()}):
        row = [e for e in edges if e.a in pos and e.b in pos and pos[e.a][1] == y == pos[e.b][1]]
        gpu_row = any(pos[g.id][1] == y for g in gpus if g.id in pos)
        out += row_arcs(row, pos, half, TOP_ARC_IN if on_top and gpu_row else ROW_IN * 0.6,
                        lift_in=gpu_box_height_in(many) / 2 if gpu_row else 0.0)
    return out


def draw(topology: Any, title: str, simulated: bool) -> Any:
    """The Matplotlib figure of ``topology`` (see the module docstring)."""
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle
    from matplotlib.path import Path

    pos, devices, edges, width_in, height_in = layout(topology)
    by_id = {d.id: d for d in devices}
    gpus = [d for d in devices if d.kind.value == "gpu"]
    many = len(gpus) > 16
    styles = _styles(len(gpus))
    legend = link_legend(edges)
    nics = [d for d in devices if d.kind.value == "nic" and d.line_rate_gbit_per_s]
    rates = sorted({d.line_rate_gbit_per_s / 8 for d in nics})
    entries = [*legend] + ([("#fdae6b", "NIC line rate: " + ", ".join(f"{_rate_text(r)} GB/s" for r in rates), 3.0)]
                           if rates else [])
    cols = max(1, min(3, int((width_in - 0.4) // 3.3)))
    legend_rows = math.ceil(len(entries) / cols) if entries else 0
    bottom_in = 0.45 + 0.22 * legend_rows + 0.35  # legend, plus room for vertical labels under the last row
    top_in = 0.55
    gpu_row_on_top = bool(gpus) and not any(d.kind.value == "nvswitch" for d in devices)
    arcs = drawn_arcs(pos, devices, edges)
    top_rise = max((a.rise for a in arcs if by_id[a.edge.a].kind.value == "gpu"), default=0.0)
    if gpu_row_on_top and top_rise:
        top_in += top_rise + 0.1  # room for the arcs over the GPU row
    fig_w, fig_h = max(width_in, 6.5), height_in + bottom_in + top_in + 0.45
    fig = plots.new_figure(fig_w, fig_h)
    fig.set_layout_engine(None)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, fig_w)
    ax.set_ylim(-bottom_in, height_in + top_in + 0.45)
    ax.axis("off")
    # links: one collection per kind (fast, and drawn under the devices); links within a row are
    # arcs over their row so they do not run through the devices between
    for kind in sorted({e.kind for e in edges}):
        mine = [e for e in edges if e.kind == kind and e.a in pos and e.b in pos]
        thin = 0.45 if len(mine) > 40 else 1.0
        colour = plots.LINK_COLOURS.get(kind, "#444444")
        alpha = 0.55 if kind in ("pcie", "network") else 0.8
        dash = "dashed" if kind == "network" else "solid"
        straight, widths = [], []
        for e in mine:
            (x0, y0), (x1, y1) = pos[e.a], pos[e.b]
            if abs(y0 - y1) > 1e-6:
                straight.append(((x0, y0), (x1, y1)))
                widths.append(line_width(e.capacity_gb_per_s, thin))
        # over the row: labels sit under their devices, so an arc above them crosses no text
        for a in (a for a in arcs if a.edge.kind == kind):
            path = Path([(a.x0, a.y), ((a.x0 + a.x1) / 2, a.y + 2 * a.rise), (a.x1, a.y)], [Path.MOVETO, Path.CURVE3, Path.CURVE3])
            ax.add_patch(PathPatch(path, fill=False, edgecolor=colour, lw=line_width(a.edge.capacity_gb_per_s, thin),
                                   alpha=alpha, zorder=1, linestyle=dash))
        ax.add_collection(LineCollection(straight, colors=colour, linewidths=widths, alpha=alpha, zorder=1, linestyles=dash))
    # devices
    for d in devices:
        if d.id not in pos:
            continue
        x, y = pos[d.id]
        kind = d.kind.value
        label = _label(d, many)
        style = styles.get(kind, _Style(7, False))
        face, marker = plots.DEVICE_STYLE.get(kind, ("#dddddd", "o"))
        if kind == "gpu":
            w = _box_width_in(d, label, style)
            h = gpu_box_height_in(many)
            ax.add_patch(Rectangle((x - w / 2, y - h / 2), w, h, facecolor=face, edgecolor="#333333", lw=0.8, zorder=3))
            ax.text(x, y, label, ha="center", va="center", fontsize=style.font_pt, weight="bold", zorder=4,
                    rotation=90 if style.rotate else 0, color="white")
            continue
        ax.scatter([x], [y], s=110, c=face, marker=marker, edgecolors="#333333", linewidths=0.7, zorder=3)
        if label:
            box = dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.85)
            if style.rotate:
                ax.text(x, y - 0.12, label, ha="center", va="top", rotation=90, fontsize=style.font_pt, zorder=4, bbox=box)
            elif kind == "nvswitch":
                ax.text(x, y + 0.12, label, ha="center", va="bottom", fontsize=style.font_pt, zorder=4, bbox=box)
            else:
                ax.text(x, y - 0.14, label, ha="center", va="top", fontsize=style.font_pt, zorder=4, bbox=box)
    # tier names, left
    levels = switch_levels(devices, edges)
    for kind, name in tier_rows(devices, levels):
        count = sum(1 for d in devices if _tier(d, levels) == kind)
        y = next(pos[d.id][1] for d in devices if _tier(d, levels) == kind and d.id in pos)
        ax.text(0.12, y, f"{name} ({count})", ha="left", va="center", fontsize=8, color="#444444", style="italic")
    folded = len(topology.devices) - len(devices)
    ax.text(fig_w / 2, height_in + top_in + 0.3, title, ha="center", va="center", fontsize=10)
    if folded:
        ax.text(fig_w / 2, height_in + top_in + 0.05, f"{folded} pass-through bridge{'s' if folded != 1 else ''} folded into their links",
                ha="center", va="center", fontsize=7.5, color="#666666")
    handles = [Line2D([0], [0], color=c, lw=lw, label=t) for c, t, lw in entries]
    if handles:
        fig.legend(handles=handles, loc="lower center", ncols=cols, fontsize=7.5, frameon=False,
                   bbox_to_anchor=(0.5, 0.01), handlelength=1.6, columnspacing=1.2)
    if simulated:
        plots.stamp_simulated(fig)
    return fig
