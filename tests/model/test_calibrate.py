import pytest

from linkscope.engines.sim import SimEngine
from linkscope.model.calibrate import calibrate
from linkscope.model.check import check
from linkscope.topology.presets import load_preset
from model.model_records import plan, record_from

TRUTH = {
    "link_efficiency.nvlink": 0.80, "link_efficiency.pcie": 0.85,
    "method_efficiency.sm-push": 0.72, "method_efficiency.sm-pull": 0.75, "method_efficiency.ce-nopeer": 0.55,
    "overhead_us.ce": 9.0, "overhead_us.sm-push": 3.5, "overhead_us.sm-pull": 4.0,
    "overhead_us.h2d": 4.0, "overhead_us.d2h": 4.5, "overhead_us.ce-nopeer": 15.0,
}
SIZES = [2**k for k in range(10, 29, 3)]


def _h200_record():
    eng = SimEngine(load_preset("hgx-h200-4"), TRUTH)
    specs = [plan("ce", [(0, 1), (2, 3)]), plan("sm-push", [(0, 2)]), plan("sm-pull", [(0, 2)]),
             plan("h2d", [("host", 0)]), plan("d2h", [(0, "host")]), plan("ce-nopeer", [(0, 1)]),
             plan("ce", [(0, 1), (1, 2), (2, 3), (3, 0)], "ring"),
             plan("ce", [(1, 0), (2, 0), (3, 0)], "all-to-one", aggregate="per_dst"),
             plan("ce", [(0, 1), (1, 0)], "pairs", "bi")]
    return record_from(eng, specs, SIZES)


def test_calibrate_recovers_ground_truth():
    rec = _h200_record()
    assert not rec.topology.get("model_params")
    res = calibrate(rec)
    for key, value in TRUTH.items():
        assert res.fitted[key] == pytest.approx(value, rel=1e-3), key
    assert res.params.provenance["link_efficiency.nvlink"] == "calibrated"
    assert res.topology.model_params["overhead_us.ce"]["provenance"] == "calibrated"
    # what the record cannot tell is listed with a reason
    assert "link_efficiency.xgmi" in res.not_fitted and "overhead_us.staged" in res.not_fitted
    assert "no uncontended 'staged' entries" in res.not_fitted["overhead_us.staged"]
    # the calibrated topology predicts every entry, contended ones included
    assert res.check.worst_abs_rel_error < 1e-6
    assert check(rec, res.topology).worst_abs_rel_error < 1e-6


def test_calibrate_with_a_subset_and_single_size():
    eng = SimEngine(load_preset("hgx-h200-4"), TRUTH)
    rec = record_from(eng, [plan("ce", [(0, 1)])], [1 << 28])
    res = calibrate(rec)
    assert res.fitted["link_efficiency.nvlink"] == pytest.approx(0.80, rel=0.02)  # model latency taken out
    assert "overhead_us.ce" in res.not_fitted and res.not_fitted["overhead_us.ce"] == "only one size measured"
    assert any(f.note.startswith("one size only") for f in res.fits)


def test_calibrate_amd_engine_cap():
    truth = {"engine_cap_gb_per_s.amd": 42.0, "link_efficiency.xgmi": 0.9}
    eng = SimEngine(load_preset("mi250x-8gcd"), truth)
    rec = record_from(eng, [plan("ce", [(0, 1)]), plan("ce", [(0, 6)])], [1 << 26, 1 << 28])
    res = calibrate(rec)
    assert res.fitted["engine_cap_gb_per_s.amd"] == pytest.approx(42.0, rel=1e-3)


def test_calibrate_refuses_a_record_without_usable_entries():
    from linkscope.errors import UserError

    rec = record_from(SimEngine(load_preset("hgx-h200-4")), [plan("ce", [(0, 1), (2, 1)], "all-to-one")], [1 << 20])
    with pytest.raises(UserError, match="nothing to calibrate"):
        calibrate(rec)


def test_calibrate_fits_the_host_copy_rate_of_each_direction_from_pageable_rows():
    # pageable rates below the pinned DMA are the host thread's copy rate, one per direction (model.host_copies);
    # the old fit put one median of both directions into host_memcpy_gb_per_s
    truth = {"host_memcpy_gb_per_s.h2d": 9.0, "host_memcpy_gb_per_s.d2h": 13.5}
    eng = SimEngine(load_preset("hgx-h200-4"), truth)
    rec = record_from(eng, [plan("h2d-pageable", [("host", 0)], "host"), plan("d2h-pageable", [(0, "host")], "host"),
                            plan("h2d", [("host", 0)], "host"), plan("d2h", [(0, "host")], "host"),
                            plan("d2h-pageable", [(0, "host"), (1, "host")], "all-to-host", aggregate="total")],
                      [1 << 28])
    res = calibrate(rec)
    assert res.fitted["host_memcpy_gb_per_s.h2d"] == pytest.approx(9.0, rel=2e-3)
    assert res.fitted["host_memcpy_gb_per_s.d2h"] == pytest.approx(13.5, rel=2e-3)
    assert "host_memcpy_gb_per_s" not in res.fitted
    assert res.check.worst_abs_rel_error < 3e-3  # the serialised all-to-host group total included


def test_calibrate_fits_the_cache_speedup_from_a_sweep_across_the_cache_size():
    truth = {"host_memcpy_gb_per_s.h2d": 7.3, "host_copy_cache_speedup": 1.5, "host_memcpy_gb_per_s.d2h": 11.0,
             "overhead_us.h2d-pageable": 7.0}
    eng = SimEngine(load_preset("hgx-h200-4"), truth)
    rec = record_from(eng, [plan("h2d-pageable", [("host", 0)], "sweep"), plan("d2h-pageable", [(0, "host")], "sweep"),
                            plan("h2d", [("host", 0)], "sweep"), plan("d2h", [(0, "host")], "sweep")],
                      [4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 512 << 20])
    res = calibrate(rec)
    assert res.fitted["host_memcpy_gb_per_s.h2d"] == pytest.approx(7.3, rel=2e-3)
    assert res.fitted["host_copy_cache_speedup"] == pytest.approx(1.5, rel=5e-3)
    assert res.fitted["overhead_us.h2d-pageable"] == pytest.approx(7.0, rel=2e-2)
    assert res.check.worst_abs_rel_error < 0.01
