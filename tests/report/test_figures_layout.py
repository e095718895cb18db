"""Issue 39: no text of a report figure overlaps another (a bar's value ran into the legend, tick
labels into each other), at 4, 8 and 16 GPUs; the SIMULATED watermark is meant to lie under text."""
from __future__ import annotations

import pytest

from linkscope.report.html import build_figures
from linkscope.report.plots import SIMULATED_NOTE
from tests.report.report_samples import measured_record


def text_overlaps(fig) -> list[tuple[str, str]]:
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and t.get_text() != SIMULATED_NOTE]
    boxes = [(t.get_text()[:40], t.get_window_extent(renderer)) for t in texts]
    out = []
    for i, (name_a, a) in enumerate(boxes):
        for name_b, b in boxes[i + 1:]:
            if min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1:
                out.append((name_a, name_b))
    return out


def _sim_survey(preset: str):
    from linkscope.engines.sim import SimEngine
    from linkscope.measure.survey import SurveyOptions, run_survey
    from linkscope.topology.presets import load_preset

    topo = load_preset(preset)
    return run_survey(SimEngine(topo, params=None), topo, SurveyOptions(size_bytes=1 << 24, sweep_sizes_bytes=(1 << 20, 1 << 24)))


@pytest.mark.parametrize("make", [measured_record, lambda: _sim_survey("mi250x-8gcd"), lambda: _sim_survey("k80-16")],
                         ids=["4-gpus-measured", "8-gcds", "16-gpus"])
def test_no_figure_text_overlaps_another(make):
    items, _, _ = build_figures([make()], heatmap_pngs=False)
    assert items
    found = {item.name: text_overlaps(item.fig) for item in items}
    assert {k: v for k, v in found.items() if v} == {}


def test_a_bar_value_never_runs_into_the_legend():
    """The 4 x H200 survey of 2026-11-28 (/work/shared/recordings/h200x4-2026-11-28/linkscope/survey.json):
    the ring's 1542.8 GB/s bar, bottom row, was labelled under the legend in the lower right corner."""
    from linkscope.report.figures import PatternTotal, contention_figure

    def total(pattern, method, direction, gb, theo):
        return PatternTotal("vm survey", pattern, method, direction, 1 << 29, gb, theo, 1, False, "ok", "")

    totals = [total("all-to-all", "ce", "uni", 730.8, None)]
    totals += [total(f"all-to-one all→GPU{g}", "ce", "uni", 397.6, 478.1) for g in range(4)]
    totals += [total(f"host host→GPU{g}", "ce", "bi", v, 126.0) for g, v in enumerate((97.4, 101.7, 101.3, 101.6))]
    totals += [total(f"matrix GPU{a}→GPU{b}", m, "bi", v, 956.2) for m, v in (("ce", 773.9), ("sm-push", 724.6))
               for a in range(4) for b in range(a + 1, 4)]
    totals.append(total("ring", "ce", "uni", 1542.8, None))
    fig = contention_figure(totals)
    assert fig is not None and text_overlaps(fig.fig) == []
