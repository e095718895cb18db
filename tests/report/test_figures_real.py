"""Figures built from a real survey (2 x H200, 2026-11-22, docs/runs/): a heatmap shows one pattern's
cells, never another pattern's flows written over them."""
from pathlib import Path

from linkscope.report.figures import heatmap_figures
from linkscope.results import io

SURVEY = Path(__file__).parents[2] / "docs" / "runs" / "survey-h200x2-2026-11-22.json"


def test_pair_matrix_heatmap_is_not_overwritten_by_ring_flows():
    record = io.load(SURVEY)
    titles = [f.title for f in heatmap_figures([record], ["h200"])]
    assert titles.index("h200: ce one way, 256 MiB") < titles.index("h200: ce ring one way, 256 MiB")
    matrix = {(m.src, m.dst): m.median_gb_per_s for m in record.measurements
              if m.method == "ce" and m.pattern == "matrix" and m.direction == "uni" and m.scope == "transfer"}
    ring = {(m.src, m.dst): m.median_gb_per_s for m in record.measurements
            if m.method == "ce" and m.pattern == "ring" and m.scope == "transfer"}
    assert matrix and ring and matrix != ring  # the two patterns measured different numbers


def test_simulated_run_is_labelled_by_its_topology_not_the_host():
    from linkscope.report.figures import run_labels
    from linkscope.results.schema import RunProvenance

    real = io.load(SURVEY)
    simulated = real.with_(provenance=RunProvenance.SIMULATED, topology=dict(real.topology, name="dgx-h100"))
    assert run_labels([simulated, real]) == ["dgx-h100 survey", "vm survey"]


def test_bi_heatmap_shows_the_pair_total_like_the_console():
    """The console's 'ce total of both directions' (762.3 GB/s on that machine) is what the bi heatmap
    shows, mirrored, and its title says so; latency heatmaps carry no '0 B' size and readable colours."""
    import numpy as np

    record = io.load(SURVEY)
    figures = {f.title: f for f in heatmap_figures([record], ["h200"])}
    bi = figures["h200: ce both ways (pair total), 256 MiB"]
    texts = [t.get_text() for t in bi.fig.axes[0].texts]
    assert texts.count("762") == 2 and "pair" in bi.caption
    latency = [f for title, f in figures.items() if "latency" in title]
    assert latency and not any(" 0 B" in f.title for f in latency)
    for f in latency:
        image = f.fig.axes[0].images[0]
        rgba = image.cmap(image.norm(np.ma.masked_invalid(image.get_array()).compressed()))
        assert (rgba[:, :3].sum(axis=1) > 0.6).all()  # no solid-black cell
