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


def test_calibration_fits_the_measured_latencies():
    """The 512 MiB survey measured remote-read 0.85 us and one-way flag 0.60 us; the preset-free live
    topology's default hop latencies overstate them, so calibrate scales the links and fits the bases."""
    from linkscope.model.predict import FabricModel

    record = io.load(SURVEY.with_name("survey-512MiB-h200x2-2026-11-22.json"))
    result = calibrate(record)
    model = FabricModel(result.topology)
    measured = {m.method: m.latency.median for m in record.measurements if m.latency is not None and m.src == 0}
    for kind in ("remote-read", "flag-pingpong"):
        assert abs(model.latency_us(kind, 0, 1) / measured[kind] - 1) < 0.05
    assert check(record, result.topology).worst_abs_rel_error < 0.10


def test_model_check_max_error_says_why_it_fails(capsys):
    from linkscope.cli import main

    code = main(["model", "check", str(SURVEY), "--max-error", "0.001"])
    err = capsys.readouterr().err
    assert code == 3 and "exceeds --max-error 0.001" in err
