import pytest
from fakes import FakeEngine
from rich.console import Console

from linkscope.measure.options import MeasureOptions
from linkscope.measure.runner import BenchSpec, run_bench, run_latency
from linkscope.patterns.registry import get_pattern
from linkscope.report.console import efficiency_style, render_record
from linkscope.topology.synthetic import synthetic_topology

TOPO = synthetic_topology("nvswitch:3")
OPTS = MeasureOptions(min_reps=3, max_reps=3)


def render(record) -> str:
    console = Console(record=True, width=160, force_terminal=True, color_system="truecolor")
    render_record(console, record)
    return console.export_text(styles=False, clear=False), console.export_text(styles=True)


def test_efficiency_thresholds():
    assert [efficiency_style(x) for x in (0.9, 0.85, 0.7, 0.6, 0.59, None)] == ["green", "green", "yellow", "yellow", "red", ""]


def test_matrix_rows_are_sources_with_na_for_unmeasured():
    engine = FakeEngine(TOPO, efficiency=0.5, fail_on=lambda plan: plan.label == "2->0")
    record = run_bench(engine, TOPO, BenchSpec(get_pattern("matrix")), [1 << 20], OPTS)
    plain, styled = render(record)
    assert "ce one way, 1 MiB: GB/s (measured)" in plain
    row2 = next(line for line in plain.splitlines() if line.strip().startswith("│") and "GPU2 │" in line.split("│")[1] + "│")
    assert [c.strip() for c in row2.split("│")[1:5]] == ["GPU2", "N/A", "239.1", "-"]
    assert "error (ce, 1 entry): RuntimeError: fake failure on 2->0" in plain
    assert "colour = measured / theoretical" in plain
    assert "\x1b[31m239.1" in styled  # 50% of theoretical: red


def test_bi_matrix_shows_pair_totals_mirrored_and_simulated_banner():
    engine = FakeEngine(TOPO, provenance="simulated")
    record = run_bench(engine, TOPO, BenchSpec(get_pattern("matrix"), ("ce",), "bi"), [1 << 20], OPTS)
    plain, styled = render(record)
    assert plain.startswith("SIMULATED")
    assert "pair total (both directions)" in plain
    assert plain.count("860.6") == 6  # three pairs, each shown at [a][b] and [b][a]
    assert "\x1b[32m860.6" in styled  # 90%: green


def test_size_sweep_and_pattern_tables_and_latency():
    engine = FakeEngine(TOPO)
    sweep = run_bench(engine, TOPO, BenchSpec(get_pattern("matrix"), gpus=(0, 1)), [4096, 1 << 20], OPTS)
    plain, _ = render(sweep)
    assert "GB/s by size" in plain and "4 KiB" in plain and "0->1" in plain
    ring = run_bench(engine, TOPO, BenchSpec(get_pattern("all-to-one")), [1 << 20], OPTS)
    plain, _ = render(ring)
    assert "ce all-to-one uni (measured)" in plain and "* -> 0" in plain and "total" in plain
    lat = run_latency(engine, "remote-read", None, MeasureOptions(latency_reps=3), topology=TOPO)
    plain, _ = render(lat)
    assert "remote-read latency: us, median (measured)" in plain and "0.81" in plain


def _numbers(record) -> set[str]:
    """Every number a table of ``record`` shows (medians, min/max, theoretical, latency)."""
    from linkscope.units import format_rate

    out = set()
    for m in record.measurements:
        if m.bandwidth is not None and m.status.value == "ok":
            out |= {format_rate(m.bandwidth.median), format_rate(m.bandwidth.min), format_rate(m.bandwidth.max)}
        if m.latency is not None and m.status.value == "ok":
            out.add(f"{m.latency.median:.2f}")
    return out


@pytest.fixture(scope="module")
def wide_record():
    from linkscope.engines.sim import SimEngine
    from linkscope.measure.survey import SurveyOptions, run_survey

    topo = synthetic_topology("nvswitch:12")
    opts = SurveyOptions(size_bytes=1 << 20, sweep_sizes_bytes=(4096, 1 << 20), peer_methods=("ce",),
                         concurrent_patterns=("ring",), latency_kinds=("remote-read",), host_methods=("h2d",), host_bi_method="",
                         local_method="", host_latency_kind="", measure=MeasureOptions(min_reps=2, max_reps=2, latency_reps=2))
    return run_survey(SimEngine(topo), topo, opts)


@pytest.mark.parametrize("width", [80, 100])
def test_no_table_cuts_a_number_at_80_or_100_columns(width, wide_record):
    """Wide matrices (12 GPUs, 4-digit totals) and the 11-column entry tables split into blocks
    instead of ending numbers in an ellipsis."""
    import re

    record = wide_record
    console = Console(record=True, width=width, file=__import__("io").StringIO())
    render_record(console, record)
    text = console.export_text()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines() if "│" in line) <= width
    cells = {c.strip() for line in text.splitlines() if "│" in line for c in line.split("│")}
    missing = {n for n in _numbers(record) if n not in cells}
    assert not missing, missing
    assert re.search(r"\[part 1 of \d+: columns GPU0 to GPU\d+\]", text)  # the 16 x 16 matrix is split


def test_fitted_uses_short_headers_before_splitting():
    from linkscope.report.console import Column, fitted

    columns = [Column("key", key=True), Column("a very long header indeed", "a"), Column("another long header", "b")]
    (group,) = fitted("t", columns, [["k", "1.0", "2.0"]], 30)
    console = Console(record=True, width=30, file=__import__("io").StringIO())
    console.print(group)
    text = console.export_text()
    assert "a very long" not in text and "1.0" in text and "2.0" in text


def test_topo_view_at_80_columns_is_whole_and_explains_confidence_marks():
    import io

    from linkscope.report.topology_view import build_view, render_rich
    from linkscope.topology.presets import load_preset

    console = Console(record=True, width=80, file=io.StringIO())
    render_rich(build_view(load_preset("dgx-h100")), console)  # 8 GPUs + 12 NICs: a 20-column level matrix
    text = console.export_text()
    assert "…" not in text and "[part 1 of" in text
    assert "confidence marks: [H] = taken from a vendor" in text


def test_topo_matrix_has_nvidia_smi_layout_with_cpu_numa_and_nic_columns():
    import io

    from linkscope.report.topology_view import build_view, render_rich
    from linkscope.topology.presets import load_preset

    view = build_view(load_preset("pcie-8gpu-2socket"))
    header = view.topo_m[0]
    assert header[-2:] == ("CPU Affinity", "NUMA Affinity") and header[9:11] == ("NIC0", "NIC1")
    gpu4 = next(r for r in view.topo_m if r[0] == "GPU4")
    assert gpu4[-1] == "1" and gpu4[1] == "SYS" and gpu4[10] == "PIX"  # socket 1: its own NIC, the other socket's GPUs
    assert view.nic_legend == (("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"))
    console = Console(record=True, width=200, file=io.StringIO())
    render_rich(view, console)
    text = console.export_text()
    assert "CPU Affinity" in text and "NUMA Affinity" in text and "NIC Legend: NIC0: mlx5_0, NIC1: mlx5_1" in text


def test_a_concurrent_flow_shows_its_share_uncoloured_and_a_pair_its_efficiency():
    import io

    from linkscope.report.console import entries_table
    from linkscope.results.schema import Measurement
    from linkscope.results.stats import Stats

    def m(pattern, value):
        return Measurement(src=1, dst=0, method="ce", pattern=pattern, direction="uni", size_bytes=1 << 28,
                           bandwidth=Stats(n=5, median=value, min=value, max=value, mean=value, stddev=0.0),
                           extra={"theoretical_gb_per_s": 478.1})

    console = Console(record=True, width=160, file=io.StringIO())
    for group in entries_table([m("all-to-one", 57.4), m("matrix", 57.4)], "t", 160):
        console.print(group)
    text = console.export_text(styles=True)
    assert "12% share" in text
    share_line = next(line for line in text.splitlines() if "12% share" in line)
    assert "\x1b[31m" not in share_line  # not red
    pair_line = next(line for line in text.splitlines() if "12%" in line and "share" not in line)
    assert "\x1b[31m" in pair_line  # the pair matrix entry keeps its efficiency colour


def test_header_and_tables_use_one_wording_for_totals():
    """Issue 39: the HTML header said "unless marked bidir" while the tables said "pair total"; both now
    read the one note, and a concurrent group's total row is called an aggregate rate."""
    from linkscope.report.html import render_html
    from linkscope.results.findings import AGGREGATE_RATE, RATE_UNIT_NOTE
    from linkscope.results.schema import Measurement, RunProvenance, RunRecord
    from linkscope.results.stats import Stats

    st = Stats(n=3, median=60.0, min=60.0, max=60.0, mean=60.0, stddev=0.0)
    ms = (Measurement(src=0, dst=1, method="ce", pattern="ring", direction="uni", size_bytes=1 << 20, bandwidth=st, group=1),
          Measurement(src=1, dst=0, method="ce", pattern="ring", direction="uni", size_bytes=1 << 20, bandwidth=st, group=1),
          Measurement(src="*", dst="*", method="ce", pattern="ring", direction="uni", size_bytes=1 << 20, bandwidth=st,
                      scope="total", group=1))
    record = RunRecord(kind="bench", provenance=RunProvenance.MEASURED, created_utc="", measurements=ms)
    console = Console(record=True, width=200)
    render_record(console, record)
    plain = console.export_text()
    assert f"* -> * {AGGREGATE_RATE}" in plain and RATE_UNIT_NOTE in plain.replace("\n", " ")
    page, _, _ = render_html([record])
    assert "unless marked bidir" not in page and RATE_UNIT_NOTE.replace("'", "&#x27;") in page


def test_the_console_opens_with_the_verdict():
    from pathlib import Path

    from linkscope.judge.headline import with_verdict
    from linkscope.results.io import load

    fixture = (Path(__file__).resolve().parents[1] / "fixtures" / "peertools" / "h100x2-visits11-13" / "visit13"
               / "linkscope" / "survey.json")
    record = with_verdict(load(fixture))
    console = Console(record=True, width=200)
    render_record(console, record)
    plain = console.export_text()
    assert plain.startswith(f"verdict: {record.extra['verdict']['line']}")
