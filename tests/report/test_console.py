
from rich.console import Console

from fakes import FakeEngine  # noqa: E402

from linkscope.measure.options import MeasureOptions  # noqa: E402
from linkscope.measure.runner import BenchSpec, run_bench, run_latency  # noqa: E402
from linkscope.patterns.registry import get_pattern  # noqa: E402
from linkscope.report.console import efficiency_style, render_record  # noqa: E402
from linkscope.topology.synthetic import synthetic_topology  # noqa: E402

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
    assert "total of both directions" in plain
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
