"""Issue 39: the report opens with the verdict, then what is wrong, then the evidence; repeated
per-link facts are one line; concurrency and waivers fold under one summary row per pattern/reason."""
from __future__ import annotations

from pathlib import Path

from linkscope.judge.headline import with_verdict
from linkscope.report.html import render_html, report_findings
from linkscope.results.io import load

H100X2 = Path(__file__).resolve().parents[1] / "fixtures" / "peertools" / "h100x2-visits11-13" / "visit13" / "linkscope" / "survey.json"


def test_the_report_opens_with_the_verdict_then_what_is_wrong_then_the_evidence():
    record = with_verdict(load(H100X2))
    page, _, _ = render_html([record])
    order = [page.index(f'<section id="{s}"') for s in ("verdict", "findings", "runs", "topology", "heatmaps")]
    assert order == sorted(order)
    verdict = record.extra["verdict"]
    assert f'<p class="verdict">{verdict["line"]}</p>'.replace("'", "&#x27;") in page
    if verdict["problems"]:
        assert "What is wrong" in page


def test_a_record_written_before_the_collapse_shows_one_link_error_line():
    record = load(H100X2)
    old = [f for f in record.findings if " corrected-error counters grew " in f]
    assert len(old) == 2  # one per GPU, each listing 18 link numbers
    new = [f for f in report_findings(record) if " corrected-error counters grew " in f]
    assert len(new) == 1 and new[0].startswith("NVLink corrected-error counters grew on 18 links of each of 2 GPUs")


def test_concurrency_has_one_summary_row_per_pattern_and_folds_the_groups(tmp_path):
    from linkscope.engines.sim import SimEngine
    from linkscope.measure.survey import SurveyOptions, run_survey
    from linkscope.topology.presets import load_preset

    topo = load_preset("pcie-8gpu-2socket")
    record = run_survey(SimEngine(topo, params=None), topo, SurveyOptions(size_bytes=1 << 24, sweep_sizes_bytes=(1 << 24,)))
    page, _, _ = render_html([record])
    section = page[page.index('<section id="concurrency"'):]
    section = section[:section.index("</section>")]
    summary = section[:section.index("<details>")]
    assert summary.count("<td>all-to-one</td>") == 2  # ce on the islands, ce-nopeer over all: one row each
    assert "<summary>every group (" in section
    problems = page[page.index('<section id="problems"'):]
    summary = problems[:problems.index("<details>")]
    assert summary.count("no peer access between GPU # and GPU #") >= 1
    assert summary.count("<tr>") < 12  # one row per method and reason, not one per waived entry
