import pytest

from linkscope.engines.sim import SimEngine
from linkscope.errors import UserError
from linkscope.model.check import check
from linkscope.model.predict import FabricModel
from linkscope.topology.presets import load_preset
from model.model_records import plan, record_from


def test_check_numbers_against_a_known_distortion():
    topo = load_preset("hgx-h200-4")
    # "measured" with NVLink efficiency 0.75; checked against defaults (0.826): large copies 10% high
    truth = {"link_efficiency.nvlink": 0.75}
    rec = record_from(SimEngine(topo, truth), [plan("ce", [(0, 1)]), plan("ce", [(1, 0), (2, 0)], "all-to-one", aggregate="per_dst")],
                      [1 << 30])
    report = check(rec)
    model = FabricModel(topo)
    expected = model.predict([(0, 1, 1 << 30)], "ce")[0].gb_per_s / rec.measurements[0].median_gb_per_s - 1
    assert report.entries[0].rel_error == pytest.approx(expected, rel=1e-9)
    assert report.entries[0].rel_error == pytest.approx(0.826 / 0.75 - 1, rel=0.01)
    totals = [e for e in report.entries if e.scope == "total"]
    assert len(totals) == 1 and totals[0].rel_error == pytest.approx(0.826 / 0.75 - 1, rel=0.01)
    assert report.n_compared == 4
    errs = sorted(abs(e.rel_error) for e in report.entries)
    assert report.median_abs_rel_error == pytest.approx((errs[1] + errs[2]) / 2)
    assert report.worst_abs_rel_error == errs[-1]
    data = report.as_dict()
    assert data["summary"]["n_compared"] == 4 and len(data["entries"]) == 4
    # the same record checked against its own truth: no error
    assert check(rec, topo.replace(model_params=truth)).worst_abs_rel_error < 1e-9


def test_check_needs_a_topology():
    rec = record_from(SimEngine(load_preset("hgx-h200-4")), [plan("ce", [(0, 1)])], [1 << 20]).with_(topology=None)
    with pytest.raises(UserError, match="no embedded topology"):
        check(rec)
    assert check(rec, load_preset("hgx-h200-4")).n_compared == 1


def test_mismatches_name_gpu_count_models_and_links():
    from linkscope.model.check import mismatches
    from linkscope.topology.synthetic import synthetic_topology

    rec = record_from(SimEngine(load_preset("hgx-h200-4")), [plan("ce", [(0, 1)])], [1 << 20])
    assert mismatches(rec, load_preset("hgx-h200-4")) == ()
    found = mismatches(rec, load_preset("dgx-a100"))
    assert any("4 GPUs" in m and "has 8" in m for m in found)
    assert any("GPU models differ" in m and "H200" in m and "A100" in m for m in found)
    assert any("GPU0-GPU1 NV18 vs NV12" in m for m in found)
    # same count, generic names: only the links can tell
    pcie = synthetic_topology("pcie:1x4")
    assert any("links differ" in m for m in mismatches(rec.with_(context={}), pcie))
    report = check(rec, load_preset("dgx-a100"))
    assert report.mismatches == found
