"""The model against the 2 x H100 (NV18) survey of 2026-11-25 (nvidia-h100-x2, driver 580.159.04, CuPy 14.2.0,
`python3 -m linkscope survey -o survey.json --no-report` at main 240c13a; copied from /work/device-data/linkscope/
into docs/runs/survey-h100x2-2026-11-25.json), pageable host copies included, and against a second record of the
same machine and day (`linkscope bench --method ce,sm-push,sm-pull --gpus 0,1 --sizes 1MiB,4MiB,16MiB,64MiB`,
docs/runs/bench-sizes-h100x2-2026-11-25.json). Numbers and their reading: docs/benchmarks.md."""
from pathlib import Path

import pytest

from linkscope.model.calibrate import calibrate
from linkscope.model.check import check
from linkscope.results import io

RUNS = Path(__file__).parents[2] / "docs" / "runs"
SURVEY = RUNS / "survey-h100x2-2026-11-25.json"
BENCH = RUNS / "bench-sizes-h100x2-2026-11-25.json"


def _worst(report, methods):
    return max(abs(e.rel_error) for e in report.entries if e.rel_error is not None and e.method in methods)


def test_calibrated_on_the_h100_survey_the_model_predicts_it_pageable_rows_included():
    record = io.load(SURVEY)
    result = calibrate(record)
    report = result.check
    assert report.n_compared >= 60 and report.median_abs_rel_error < 0.05
    # pinned and pageable host-to-device within 15% (the cached-source step at 16 MiB included)
    assert _worst(report, {"h2d", "d2h", "h2d-pageable"}) < 0.15
    assert 1.2 < result.fitted["host_copy_cache_speedup"] < 1.8
    # every peer row and the concurrent patterns within 25% (both host directions at once: +24.6% before
    # pcie_duplex_efficiency_down, -8.0% with it)
    assert _worst(report, {"ce", "sm-push", "local"}) < 0.25
    # pageable d2h within 25%: small copies are staged then copied, one after the other (the staging fill);
    # the same 512 MiB copy measured 13.95 in the host step and 9.84 GB/s in the sweep, so one rate is +-17% at best
    assert _worst(report, {"d2h-pageable"}) < 0.25
    # issue 22's bar for this survey, pageable rows included
    assert report.median_abs_rel_error <= 0.05 and report.worst_abs_rel_error <= 0.25


def test_the_survey_calibration_predicts_another_record_of_the_same_machine():
    result = calibrate(io.load(SURVEY))
    report = check(io.load(BENCH), None, dict(result.topology.model_params))
    assert _worst(report, {"ce"}) < 0.05  # CE at 1-64 MiB, sizes the survey fitted through
    assert report.median_abs_rel_error < 0.05


def test_the_default_host_copy_rates_come_within_about_20_percent_of_the_h100_host_uncalibrated():
    report = check(io.load(SURVEY))
    large = [e for e in report.entries if e.rel_error is not None and "pageable" in e.method and e.size_bytes >= 256 << 20]
    assert len(large) == 8
    h2d = [abs(e.rel_error) for e in large if e.method.startswith("h2d")]
    d2h = [abs(e.rel_error) for e in large if e.method.startswith("d2h")]
    assert max(h2d) < 0.25 and max(d2h) < 0.25  # now +21.7% / -22.4% at worst; before (20 GB/s): +212% / +103%


RUN2 = RUNS / "survey-h100x2-2026-11-25-run2.json"  # same machine, 19:11 UTC, merged main (docs/runs/scripts/device_x2_final.sh)


def test_calibrated_on_one_h100_survey_the_model_predicts_the_other():
    one, two = io.load(SURVEY), io.load(RUN2)
    first, second = calibrate(one), calibrate(two)
    # run 2 with run 1's parameters: every pageable row within 20%, the median within 5%
    report = check(two, None, dict(first.topology.model_params))
    assert report.median_abs_rel_error < 0.05
    assert _worst(report, {"h2d-pageable", "d2h-pageable", "h2d", "d2h", "sm-push", "local"}) < 0.20
    # both host directions at once: H2D drops to 40.8-42.8 GB/s while D2H runs. With the PCIe directions
    # independent the twin was +27.3% / +33.6% there; pcie_duplex_efficiency_down (fitted to nvbandwidth's
    # bidirectional host copy, not to these surveys) brings every such row within 15%
    bi = [abs(e.rel_error) for e in report.entries if e.rel_error is not None and (e.method, e.pattern) == ("ce", "host")
          and e.direction == "bi"]
    assert len(bi) == 6 and max(bi) < 0.15
    assert report.worst_abs_rel_error <= 0.25  # issue 22's bar, out of sample (was 33.6%)
    # run 1 with run 2's parameters: issue 22's bar, out of sample
    back = check(one, None, dict(second.topology.model_params))
    assert back.median_abs_rel_error <= 0.05 and back.worst_abs_rel_error <= 0.25


def test_both_directions_of_a_gpus_pcie_link_share_it_as_measured():
    """nvbandwidth on the same VM: H2D 40.2-40.4 GB/s while D2H runs, 54.0-54.5 alone
    (tests/fixtures/peertools/h100x2/nvbandwidth.txt). Max-min sharing alone keeps the two directions of
    a link independent (H2D stayed at its 54.5 alone). A one-way staged-pinned copy 0 -> 1, whose legs use
    GPU 0's link up and GPU 1's link down, is not slowed (49.9 GB/s measured in run 2)."""
    from linkscope.model.predict import FabricModel
    from linkscope.patterns.plan import HOST

    model = FabricModel(calibrate(io.load(RUN2)).topology)
    size = 512 << 20
    alone = model.predict([(HOST, 0, size)], "ce")[0].gb_per_s
    h2d, d2h = (p.gb_per_s for p in model.predict([(HOST, 0, size), (0, HOST, size)], "ce"))
    assert h2d / alone == pytest.approx(model.params["pcie_duplex_efficiency_down"], rel=0.02)
    assert abs(h2d / 40.3 - 1) < 0.05 and d2h > 0.95 * alone
    other = model.predict([(HOST, 0, size), (1, HOST, size)], "ce")  # different GPUs' links: independent
    assert other[0].gb_per_s == pytest.approx(alone, rel=0.01)
    staged = model.predict([(0, 1, size)], "staged-pinned")[0].gb_per_s
    assert abs(staged / 49.9 - 1) < 0.10


def test_peer_traffic_both_ways_on_a_pcie_link_keeps_its_full_rate():
    """The duplex share was measured on host copies (h2d and d2h of one GPU at once); peer copies both
    ways through a PCIe switch are not slowed by it (a stencil mapped on pcie-8gpu-2socket lost its
    advantage over the default order when they were)."""
    from linkscope.model.predict import FabricModel
    from linkscope.topology.presets import load_preset

    model = FabricModel(load_preset("pcie-8gpu-2socket"))
    one = model.predict([(0, 1, 1 << 28)], "ce")[0].gb_per_s
    both = model.predict([(0, 1, 1 << 28), (1, 0, 1 << 28)], "ce")
    assert all(p.gb_per_s == pytest.approx(one, rel=1e-6) for p in both)
