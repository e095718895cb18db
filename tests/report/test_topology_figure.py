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


def test_overlapping_arcs_over_a_row_never_share_a_peak():
    """Issue 39: the MI250X drawing's xGMI arcs of equal span lay on top of each other."""
    from linkscope.report.topology_figure import arc_rises

    spans = [(0.0, 1.0), (0.5, 1.5), (1.0, 2.0), (3.0, 4.0), (0.0, 1.0)]
    rises = arc_rises(spans)
    for i, (a, ra) in enumerate(zip(spans, rises)):
        for b, rb in zip(spans[i + 1:], rises[i + 1:]):
            if min(a[1], b[1]) > max(a[0], b[0]):  # the spans overlap
                assert abs(ra - rb) >= 0.03
    assert rises[3] == rises[0]  # a span apart from the others keeps its natural height
