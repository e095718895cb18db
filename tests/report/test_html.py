"""The HTML report: self-contained, complete, SIMULATED labelled, PNGs, CLI and bad input."""
from __future__ import annotations

import json
import re

import pytest

from linkscope.cli import main
from linkscope.report.figures import comparisons, pattern_totals, run_labels, size_series
from linkscope.report.html import render_html, write_report
from linkscope.results.io import save
from linkscope.results.schema import RunProvenance
from tests.report.report_samples import measured_record, simulated_record

pytestmark = pytest.mark.xdist_group("html-report")  # the module's one full render, in one worker


@pytest.fixture(scope="module")
def records():
    return [measured_record(), simulated_record()]


@pytest.fixture(scope="module")
def written(records, tmp_path_factory):
    """One full render for the whole module (rendering takes seconds on a small CI machine)."""
    folder = tmp_path_factory.mktemp("report")
    return write_report(records, folder / "r.html", png_dir=folder / "png")


@pytest.fixture(scope="module")
def rendered(written):
    from linkscope.report.figures import FigureItem

    items = [FigureItem(name, "", "", "", None) for name in written.figures]
    return written.path.read_text(), items, list(written.notes)


def _small(record):
    """The latency entries only: a cheap record for tests that do not need every figure."""
    return record.with_(measurements=tuple(m for m in record.measurements if m.method == "latency"), topology=None)


def test_report_is_self_contained(rendered):
    text, _, _ = rendered
    assert text.startswith("<!DOCTYPE html>")
    assert "<script" not in text.lower()
    # no external resource: every src/href is a data: URI or an in-page anchor
    for ref in re.findall(r'(?:src|href)="([^"]*)"', text):
        assert ref.startswith("data:image/png;base64,") or ref.startswith("#"), ref
    assert "http://" not in text and "https://" not in text
    assert "@import" not in text and "url(" not in text


def test_report_has_every_section_and_figure(rendered):
    text, items, notes = rendered
    names = [i.name for i in items]
    assert notes == []
    for section in ("runs", "findings", "topology", "heatmaps", "curves", "model", "concurrency", "mapping", "problems"):
        assert f'id="{section}"' in text, section
    assert {"topology-nvswitch-4", "topology-pcie-2x4"} <= set(names)
    assert any(n.startswith("latency-") for n in names)
    assert sum(1 for n in names if n.startswith("bandwidth-node-a")) == 2  # ce and sm-push matrices
    assert "bandwidth-vs-size-transfer-1" in names and "bandwidth-vs-size-total-1" in names
    # the matrices are tables in the page (their PNGs are drawn for --png only); every other figure an image
    heat = [n for n in names if n.startswith(("bandwidth-node", "bandwidth-pcie", "latency-"))]
    assert text.count("<img ") == len(items) - len(heat)
    assert all(f'<figure id="fig-{n}"><table class="heat">' in text for n in heat)
    assert "CUDA error 700" in text and "pageable staging skipped" in text  # error and waived rows
    assert "All GPU pairs reach 82% of NVLink capacity" in text
    assert "branch-and-bound" in text and "20.8%" in text  # mapping table: saved fraction


def test_simulated_is_labelled(rendered, records):
    text, _, _ = rendered
    assert 'id="simulated-banner"' in text and "pcie:2x4 (sim)" in text
    figures = {chunk.split('"', 1)[0]: chunk.split("</figure>", 1)[0] for chunk in text.split('<figure id="fig-')[1:]}
    sim_figures = {name for name, body in figures.items() if re.search(r'<figcaption>[^<]*<span class="tag sim">', body)}
    assert {"topology-pcie-2x4", "bandwidth-pcie-2x4-sim-ce-uni"} <= sim_figures
    assert "topology-nvswitch-4" not in sim_figures
    measured_only, _, _ = render_html([_small(records[0])])
    assert "simulated-banner" not in measured_only and "SIMULATED" not in measured_only


def test_series_and_efficiency(records):
    labels = run_labels(records)
    assert labels == ["node-a survey", "pcie:2x4 (sim)"]
    series = {s.label: s for s in size_series(records, labels)}
    ce = series["node-a survey: ce (matrix, uni)"]
    assert ce.pairs == 12 and len(ce.sizes) == 10 and list(ce.sizes) == sorted(ce.sizes)
    assert series["pcie:2x4 (sim): ce (matrix, uni) [simulated]"].simulated
    comp = [c for c in comparisons(records, labels) if c.run == "node-a survey" and c.group == "ce matrix uni"]
    assert len(comp) == 12 and all(c.size_bytes == 2**30 for c in comp)
    assert all(0.78 < c.efficiency < 0.83 for c in comp)
    totals = {t.pattern: t for t in pattern_totals(records, labels)}
    assert totals["ring"].total_gb_per_s > 1500 and totals["ring"].entries == 10
    assert totals["all-to-one all→GPU0"].theoretical_gb_per_s == pytest.approx(478.1)


def test_write_report_with_pngs(written):
    result = written
    assert result.path.read_text().startswith("<!DOCTYPE html>")
    assert len(result.png_files) == len(result.figures) >= 10
    for f in result.png_files:
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_extras_and_missing_topology_do_not_break(tmp_path):
    rec = _small(measured_record()).with_(topology={"format": "linkscope.topology", "schema_version": 1, "name": "bad",
                                            "devices": [], "links": [{"a": "x"}]}, extra={"mapping": "junk"})
    text, items, notes = render_html([rec])
    assert notes and "embedded topology not drawn" in notes[0]
    assert "topology" not in {i.section for i in items}
    empty = measured_record().with_(measurements=(), topology=None, extra={}, findings=())
    text, items, _ = render_html([empty])
    assert items == [] and "No figure" in text


def test_cli_report(tmp_path, records, capfd):
    paths = []
    for i, r in enumerate([_small(records[0]), records[1]]):
        p = tmp_path / f"run{i}.json"
        save(r, p)
        paths.append(str(p))
    out = tmp_path / "report.html"
    code = main(["report", *paths, "-o", str(out), "--png", str(tmp_path / "figs")])
    err = capfd.readouterr().err
    assert code == 0 and out.exists() and "wrote" in err
    assert len(list((tmp_path / "figs").glob("*.png"))) >= 4


def test_cli_report_wrong_schema_is_one_line(tmp_path, capfd):
    bad = tmp_path / "topo.json"
    bad.write_text(json.dumps({"format": "linkscope.topology", "schema_version": 1}))
    code = main(["report", str(bad), "-o", str(tmp_path / "r.html")])
    err = capfd.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert "this is a topology file ('linkscope.topology'), not a linkscope run record" in err
    newer = tmp_path / "new.json"
    newer.write_text(json.dumps({"format": "linkscope.run", "schema_version": 99, "measurements": []}))
    assert main(["report", str(newer)]) == 1
    assert "newer than this linkscope understands" in capfd.readouterr().err
    assert main(["report", str(tmp_path / "missing.json")]) == 1
    assert "results file not found" in capfd.readouterr().err


def test_provenance_enum_roundtrip_keeps_simulated(tmp_path):
    from linkscope.results.io import load

    p = tmp_path / "s.json"
    save(simulated_record(), p)
    assert load(p).provenance is RunProvenance.SIMULATED


def test_results_vs_model_table_lists_only_predicted_entries_and_says_simulated():
    from dataclasses import replace

    from linkscope.results.schema import Measurement

    sim = simulated_record()
    text, _, _ = render_html([sim])
    assert "simulated (GB/s)" in text and "measured (GB/s)" not in text  # never "measured" for model numbers
    no_pred = sim.with_(measurements=tuple(
        replace(m, extra={k: v for k, v in m.extra.items() if k != "predicted_gb_per_s"}) for m in sim.measurements
        if isinstance(m, Measurement)))
    text, _, _ = render_html([no_pred])
    assert "No entry of these runs carries a model prediction" in text and "<td class=\"num\">N/A</td>" not in text


def test_topology_caption_explains_confidence_marks_and_no_preset_speaks_of_this_project():
    from linkscope.report.figures import topology_figure
    from linkscope.topology.presets import load_preset, preset_names

    item = topology_figure(load_preset("mi250x-8gcd"), "t", simulated=True)
    assert "[H] xGMI graph" in item.caption and "Confidence marks: [H] = taken from a vendor" in item.caption
    for name in preset_names():
        assert "this project" not in (load_preset(name).description or "").lower(), name


def test_matrix_cells_are_coloured_by_efficiency_with_the_absolute_value_printed():
    """Issue 39: 50 GB/s on a 200 GB/s xGMI link looked good on an absolute scale; the colour is now
    measured / the route's bottleneck, the number in the cell stays the GB/s."""
    from linkscope.report.figures import HeatPanel, heat_scales
    from linkscope.report.html import _heat_table

    def panel(value, eff):
        return HeatPanel("p", "p", "", ("GPU0", "GPU1"), ((None, value), (value, None)), (("–", ""), ("", "–")),
                         "bandwidth", "GB/s", "{:.0f}", False, ((None, eff), (eff, None)))

    capped, full = panel(50.0, 0.25), panel(50.0, 1.0)
    scale = heat_scales([capped, full])["bandwidth"]
    colour = re.compile(r'style="background:#([0-9a-f]{2})([0-9a-f]{2})')
    (r1, g1), (r2, g2) = (colour.findall(_heat_table(p, scale))[0] for p in (capped, full))
    assert int(r1, 16) > int(g1, 16) and int(g2, 16) > int(r2, 16)  # red-ish at 25%, green at 100%
    assert ">50</td>" in _heat_table(capped, scale) and "25% of the route" in _heat_table(capped, scale)
    assert "colour = measured / route bottleneck" in _heat_table(capped, scale)


def test_topology_section_has_the_topo_m_matrix():
    from linkscope.results.schema import RunRecord
    from linkscope.topology.io import to_dict
    from linkscope.topology.presets import load_preset

    rec = RunRecord(kind="bench", provenance=RunProvenance.SIMULATED, created_utc="",
                    topology=to_dict(load_preset("pcie-8gpu-2socket")))
    text, _, _ = render_html([rec])
    assert "pcie-8gpu-2socket: nvidia-smi topo -m layout" in text
    assert "<th>CPU Affinity</th><th>NUMA Affinity</th>" in text and "NIC0: mlx5_0" in text


def test_runs_table_drops_a_column_no_run_fills():
    from linkscope.results.schema import RunRecord

    bare = RunRecord(kind="bench", provenance=RunProvenance.SIMULATED, created_utc="", context={"host": "vm"})
    text, _, _ = render_html([bare])
    runs = text.split('<section id="runs">', 1)[1].split("</section>", 1)[0]
    assert "<th>driver</th>" not in runs and "<th>host</th>" in runs
    with_driver = bare.with_(context={"host": "vm", "driver": "580.95"})
    text, _, _ = render_html([with_driver])
    assert "<th>driver</th>" in text and "580.95" in text


def test_contention_bar_label_sits_at_its_bar_and_equal_groups_are_one_row():
    from linkscope.report.figures import PatternTotal, contention_figure

    totals = [PatternTotal("r", f"all-to-one all→GPU{g}", "ce", "uni", 1 << 29, 27.7, 31.5, 8, True, "ok", "")
              for g in range(8)] + [PatternTotal("r", "ring", "ce", "uni", 1 << 29, 107.6, None, 1, True, "ok", "")]
    item = contention_figure(totals)
    ax = item.fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["all-to-one ×8 (all→GPU0 … all→GPU7, each) ce uni", "ring ce uni"]
    values = {t.get_text().strip(): t.get_position()[0] for t in ax.texts if t.get_text().strip()[:1].isdigit()}
    assert values == {"27.7": 27.7, "107.6": 107.6}  # not at the theoretical tick (31.5)


def test_coinciding_size_series_are_one_line_with_one_legend_entry():
    from linkscope.report.figures import Series, merge_identical

    a = Series("run: h2d (sweep, uni)", (4096, 1 << 20), (7.3, 27.7), True, 1)
    b = Series("run: d2h (sweep, uni)", (4096, 1 << 20), (7.3, 27.7), True, 1)
    c = Series("run: ce (sweep, uni)", (4096, 1 << 20), (7.1, 26.9), True, 1)
    merged = merge_identical([a, b, c])
    assert [s.label for s in merged] == ["run: h2d, d2h (sweep, uni)", "run: ce (sweep, uni)"]


def test_a_ring_is_a_row_of_flows_not_a_mostly_grey_matrix():
    from linkscope.report.figures import HeatPanel
    from linkscope.report.html import _heat_table

    names = ("GPU0", "GPU1", "GPU2", "GPU3")
    ring = {(0, 1), (1, 2), (2, 3), (3, 0)}
    values = tuple(tuple(26.9 if (i, j) in ring else None for j in range(4)) for i in range(4))
    marks = tuple(tuple("–" if i == j else "N/A" for j in range(4)) for i in range(4))
    html = _heat_table(HeatPanel("ring", "ce ring", "", names, values, marks, "bandwidth", "GB/s", "{:.1f}", True), (0.0, 26.9))
    assert "one row per flow" in html and "N/A" not in html
    assert [h for h in re.findall(r"<th>([^<]*)</th>", html) if "→" in h] == ["GPU0→GPU1", "GPU1→GPU2", "GPU2→GPU3", "GPU3→GPU0"]


def test_flows_and_totals_sort_numerically():
    """Issue 39: GPU10 sorted before GPU2 (text order) in the 16-GPU tables."""
    from linkscope.report.figures import HeatPanel, natural_key
    from linkscope.report.html import _heat_table

    assert sorted(["GPU10", "GPU2", "all→GPU11", "all→GPU9"], key=natural_key) == ["GPU2", "GPU10", "all→GPU9", "all→GPU11"]
    n = 12
    names = tuple(f"GPU{i}" for i in range(n))
    values = tuple(tuple(9.0 if j == (i + 1) % n else None for j in range(n)) for i in range(n))
    marks = tuple(tuple("–" if i == j else "N/A" for j in range(n)) for i in range(n))
    html = _heat_table(HeatPanel("ring", "ce ring", "", names, values, marks, "bandwidth", "GB/s", "{:.1f}", True), (0.0, 9.0))
    flows = [h for h in re.findall(r"<th>([^<]*)</th>", html) if "→" in h]
    assert flows.index("GPU2→GPU3") < flows.index("GPU10→GPU11")


def test_the_report_draws_no_image_for_a_matrix_unless_pngs_are_asked(tmp_path):
    """The 8-GPU report's time went to drawing 9 heatmap images (6 s of an 8.5 s survey): the
    matrices are HTML tables; Matplotlib draws them only for --png."""
    from linkscope.engines.sim import SimEngine
    from linkscope.measure.survey import SurveyOptions, run_survey
    from linkscope.topology.presets import load_preset

    topo = load_preset("dgx-h100")
    record = run_survey(SimEngine(topo, params=None), topo, SurveyOptions(size_bytes=1 << 24, sweep_sizes_bytes=(4096, 1 << 24)))
    result = write_report([record], tmp_path / "r.html")
    assert not [n for n in result.figures if n.startswith(("bandwidth-dgx", "latency-"))]
    assert len(result.figures) <= 5
    text = result.path.read_text()
    assert text.count('<table class="heat">') >= 6
    # --png draws the matrices as images: shown on the latency entries alone (all 8 GPUs' matrices
    # drawn took 3.1 s of this test's 5.5; the drawing code is the same)
    latency_only = record.with_(measurements=tuple(m for m in record.measurements if m.latency_us is not None))
    with_pngs = write_report([latency_only], tmp_path / "p.html", png_dir=tmp_path / "png")
    assert any(n.startswith("latency-") for n in with_pngs.figures)


def test_report_of_an_old_record_states_todays_findings_and_verdict(tmp_path, capfd):
    """issue 39: a survey written by an older linkscope (the 4 x H200 of 2026-11-28: "total for the group")
    with an older judge's verdict stored: the report derives both again from the record's numbers."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "fixtures" / "recordings" / "h200x4-2026-11-28" / "linkscope" / "survey.json"
    data = json.loads(src.read_text())
    data.setdefault("extra", {})["verdict"] = {"line": "problems found: stale verdict of an older judge",
                                               "problems": ["low: stale problem"], "counts": {}}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    out = tmp_path / "r.html"
    assert main(["report", str(old), "-o", str(out)]) == 0
    capfd.readouterr()
    html = out.read_text()
    assert "total for the group" not in html and "stale" not in html
    assert "aggregate rate (bytes / elapsed) 1542.8 GB/s" in html
    assert "Derived again from the record&#x27;s numbers" in html or "Derived again from the record's numbers" in html
    assert '<p class="verdict">healthy' in html
    assert "Re-measured d2h-pageable" in html  # the run's own notes are kept
