"""The model against a real measurement: the survey of 2 x H200 (NV18), 2026-11-22, kept in docs/runs/.
Calibrated on that record, the model must predict every bandwidth entry within 10% (issue 4's bar),
including the pair totals of both directions and the concurrent ring / all-to-one / all-to-all."""
from pathlib import Path

from linkscope.model.calibrate import calibrate
from linkscope.model.check import check
from linkscope.results import io

SURVEY = Path(__file__).parents[2] / "docs" / "runs" / "survey-h200x2-2026-11-22.json"


def test_calibrated_model_predicts_the_real_survey_within_10_percent():
    record = io.load(SURVEY)
    result = calibrate(record)
    assert 0.78 < result.fitted["link_efficiency.nvlink"] < 0.86  # 392 GB/s of 478 theoretical
    report = check(record, result.topology)
    assert report.n_compared >= 25
    assert report.worst_abs_rel_error < 0.10
    patterns = {e.pattern for e in report.entries if e.rel_error is not None}
    assert {"matrix", "ring", "all-to-one", "all-to-all"} <= patterns
    bi_totals = [e for e in report.entries if e.direction == "bi" and e.scope == "total"]
    assert bi_totals and all(abs(e.rel_error) < 0.05 for e in bi_totals)
