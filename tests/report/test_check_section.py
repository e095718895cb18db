"""The report's "Checked numbers" section: imported runs judged by ``linkscope check``, per tool,
with the verdicts beside linkscope's own runs."""
from __future__ import annotations

from pathlib import Path

from linkscope.judge.expect import Judge
from linkscope.judge.runs import judge_runs, to_record
from linkscope.report.checks import check_section
from linkscope.report.html import render_html
from linkscope.results.peertools.detect import read
from linkscope.topology.presets import load_preset

FX = Path(__file__).resolve().parents[1] / "fixtures" / "peertools"


def _checked(tmp: Path):
    """The nccl#1264 P2P=Disabled numbers printed as peer copies (P2P=Enabled): an HGX whose peer copies
    bounce through the host, 56 low with the cause, and a healthy nccl-tests run."""
    staged = tmp / "p2p-staged-as-peer.txt"
    staged.write_text((FX / "p2p-h100x8-disabled-nccl1264.txt").read_text().replace("P2P=Disabled", "P2P=Enabled"))
    judge = Judge(load_preset("dgx-h100"))
    runs = [read(staged), read(FX / "nccl-tests-h200x1-smbi.txt")]
    return to_record(judge_runs(runs, judge), judge)


def test_section_lists_each_tool_with_its_verdicts(tmp_path):
    html = check_section([_checked(tmp_path)], ["checked"])
    assert html.startswith('<section id="checks">')
    assert "<h3>p2pBandwidthLatencyTest (" in html and "<h3>nccl-tests (" in html
    assert '<span class="error">56 low</span>' in html
    assert "peer access likely off" in html
    assert html.index("low</td>") < html.index(">ok</td>")  # problems first


def test_report_has_the_section_only_for_checked_runs(tmp_path):
    checked = _checked(tmp_path)
    page, _, _ = render_html([checked])
    assert 'id="checks"' in page and 'id="runs"' in page
    plain = checked.with_(extra={})
    assert check_section([plain], ["plain"]) == ""
