"""The topology figure by tiers: no two texts overlap (Matplotlib's own text bounding boxes, from the
renderer) at 4, 8, 16 and 64 GPUs; pass-through bridges folded; one legend entry per link kind and
capacity; one unit (GB/s) in the whole figure."""
from __future__ import annotations

import pytest

from linkscope.report import plots
from linkscope.report.topology_figure import draw, fold_pass_through, link_legend
from linkscope.topology.presets import load_preset
from linkscope.topology.synthetic import synthetic_topology

CASES = ["hgx-h200-4", "dgx-h100", "mi250x-8gcd", "pcie-8gpu-2socket", "cluster:dgx-h100:2", "nvswitch:64"]


def _topology(spec):
    return synthetic_topology(spec) if ":" in spec else load_preset(spec)


def _texts(fig):
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or t.get_gid() == plots.WATERMARK_GID:
            continue
        out.append((t.get_text(), t.get_window_extent(renderer)))
    return out


def overlaps(fig, tolerance_px=0.5):
    texts = _texts(fig)
    found = []
    for i, (a, ba) in enumerate(texts):
        for b, bb in texts[i + 1:]:
            if (min(ba.x1, bb.x1) - max(ba.x0, bb.x0) > tolerance_px
                    and min(ba.y1, bb.y1) - max(ba.y0, bb.y0) > tolerance_px):
                found.append((a, b))
    return found


@pytest.mark.parametrize("spec", CASES)
def test_no_text_overlaps_another_and_every_text_is_inside_the_figure(spec):
    topo = _topology(spec)
    fig = draw(topo, f"Topology: {topo.name}", simulated=True)
    assert overlaps(fig) == []
    width, height = fig.canvas.get_width_height()
    for text, box in _texts(fig):
        assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= width + 1 and box.y1 <= height + 1, text


def test_the_overlap_check_finds_an_overlap():
    fig = plots.new_figure(3, 2)
    fig.text(0.5, 0.5, "GPU0 GPU1")
    fig.text(0.52, 0.5, "mlx5_0")
    assert overlaps(fig) == [("GPU0 GPU1", "mlx5_0")]


def test_pass_through_bridges_fold_into_one_link_and_fan_outs_stay():
    topo = load_preset("dgx-h100")
    devices, edges = fold_pass_through(topo)
    kinds = {d.id: d.kind.value for d in devices}
    folded = {d.id for d in topo.devices} - set(kinds)
    assert folded and all(topo.by_id[i].kind.value in ("pcie_switch", "host_bridge") for i in folded)
    degree = {i: sum(1 for e in edges if i in (e.a, e.b)) for i in kinds}
    assert all(degree[i] != 2 or any(e.kind != "pcie" for e in edges if i in (e.a, e.b))
               for i, k in kinds.items() if k in ("pcie_switch", "host_bridge"))
    # every GPU still reaches its CPU: the folded graph keeps the GPU -> switch -> CPU path
    assert all(any(g.id in (e.a, e.b) and e.kind == "pcie" for e in edges) for g in topo.gpus)


def test_one_legend_entry_per_link_kind_and_capacity_in_one_unit():
    topo = load_preset("dgx-h100")
    _, edges = fold_pass_through(topo)
    entries = [text for _, text, _ in link_legend(edges)]
    assert len(entries) == len({(e.kind, round(e.capacity_gb_per_s, 1)) for e in edges})
    fig = draw(topo, "t", simulated=False)
    texts = [t for t, _ in _texts(fig)]
    assert not any("Gb/s" in t for t in texts)  # NIC line rates in GB/s like every link
    assert sum("NVLink" in t for t in texts) == 1  # one label for the 8 NVLink bundles, not one per edge


def test_pcie_switch_layers_are_drawn_at_their_levels_and_the_legend_draws_width_as_width():
    """Issue 39: the k80-16 drawing put the boards' switches and the chassis PLX switches on one row,
    and the legend drew every xGMI width (and every PCIe rate) with the same 3 pt line."""
    from linkscope.report.topology_figure import layout, line_width, switch_levels
    from linkscope.topology.presets import load_preset

    k80 = load_preset("k80-16")
    pos, devices, edges, _, _ = layout(k80)
    levels = switch_levels(devices, edges)
    assert sorted(set(levels.values())) == [1, 2]
    rows = {lvl: {pos[d][1] for d, k in levels.items() if k == lvl and d in pos} for lvl in (1, 2)}
    assert len(rows[1]) == len(rows[2]) == 1 and rows[1] != rows[2]
    gpu_y = {pos[d.id][1] for d in devices if d.kind.value == "gpu"}
    assert next(iter(gpu_y)) > next(iter(rows[1])) > next(iter(rows[2]))  # GPUs, then level 1 under them, then level 2

    mi = load_preset("mi250x-8gcd")
    _, _, mi_edges, _, _ = layout(mi)
    xgmi = [(text, lw) for colour, text, lw in link_legend(mi_edges) if text.startswith("xGMI")]
    assert len(xgmi) >= 2 and len({lw for _, lw in xgmi}) == len(xgmi)  # one width per entry, each its own
    assert line_width(200.0) > line_width(50.0)


def _meetings(a, b) -> int:
    """Points where two drawn arcs meet. Each is the graph of a parabola over x (``Arc.points``), so they
    meet where the difference of the two quadratics is zero over the x both span; one curve drawn on the
    other (a shared path) counts as many."""
    import numpy as np

    def coeffs(arc):
        lo, hi = sorted((arc.x0, arc.x1))
        k = 4 * arc.rise / (hi - lo) ** 2  # y - arc.y = k (x - lo)(hi - x)
        return np.array([-k, k * (lo + hi), -k * lo * hi]), lo, hi

    (ca, la, ha), (cb, lb, hb) = coeffs(a), coeffs(b)
    left, right = max(la, lb), min(ha, hb)
    if left > right + 1e-9:
        return 0
    diff = ca - cb
    if np.allclose(diff, 0, atol=1e-12):
        return 10**6
    roots = np.roots(np.trim_zeros(diff, "f")) if np.any(diff) else []
    inside = sorted({round(float(r.real), 6) for r in roots if abs(r.imag) < 1e-9 and left - 1e-9 <= r.real <= right + 1e-9})
    return len(inside)


def _interleaving(order, pairs) -> int:
    rank = {d: k for k, d in enumerate(order)}
    spans = [tuple(sorted((rank[a], rank[b]))) for a, b in pairs]
    return sum(1 for i, (a, b) in enumerate(spans) for c, d in spans[i + 1:] if a < c < b < d or c < a < d < b)


def test_mi250x_arcs_meet_only_where_they_must_cross_and_cross_the_fewest_times():
    """Issue 39: the MI250X drawing's xGMI arcs lay on top of each other and crossed 9 times (index order).
    Now: every arc has its own ends, two arcs meet only where their ends interleave (once), and the
    GPU order gives the fewest such crossings any order of the row allows (all 40,320 tried here)."""
    import itertools

    from linkscope.report.topology_figure import drawn_arcs, layout
    from linkscope.topology.presets import load_preset

    pos, devices, edges, _, _ = layout(load_preset("mi250x-8gcd"))
    index = {d.id: d.index for d in devices if d.kind.value == "gpu"}
    gpus = sorted(index, key=index.get)
    arcs = [a for a in drawn_arcs(pos, devices, edges) if a.edge.a in gpus]
    assert len(arcs) == 12
    order = sorted(gpus, key=lambda g: pos[g][0])
    pairs = [(a.edge.a, a.edge.b) for a in arcs]
    for i, a in enumerate(arcs):
        for b in arcs[i + 1:]:
            assert _meetings(a, b) == _interleaving(order, [(a.edge.a, a.edge.b), (b.edge.a, b.edge.b)]), (a.edge, b.edge)
    fewest = min(_interleaving(p, pairs) for p in itertools.permutations(gpus))
    assert _interleaving(order, pairs) == fewest < _interleaving(gpus, pairs)  # the index order


@pytest.mark.parametrize("seed", range(6))
def test_arcs_of_any_row_meet_only_where_their_ends_interleave(seed):
    """Nested arcs, arcs side by side and arcs sharing a device never touch; interleaving ones cross once."""
    import random

    from linkscope.report.topology_figure import Edge, row_arcs

    rng = random.Random(seed)
    ids = [f"d{k}" for k in range(7)]
    pos = {d: (1.0 + 0.7 * k, 2.0) for k, d in enumerate(ids)}
    pairs = rng.sample([(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]], 10)
    arcs = row_arcs([Edge(a, b, "xgmi", 1, 50.0) for a, b in pairs], pos, {d: 0.2 for d in ids}, cap_in=1.3, lift_in=0.15)
    assert max(a.rise for a in arcs) <= 1.3 + 1e-9
    for i, a in enumerate(arcs):
        for b in arcs[i + 1:]:
            assert _meetings(a, b) == _interleaving(ids, [(a.edge.a, a.edge.b), (b.edge.a, b.edge.b)])
