"""model/fits.py: every fitted parameter names its machine, rows and scope; predictions say which fits
they used and when one is applied outside its scope; `linkscope model params` lists them."""
import json

from linkscope.cli import main
from linkscope.model.collectives import CollectiveModel
from linkscope.model.fits import FITS, Context, outside_scope
from linkscope.model.params import ModelParams, recording
from linkscope.topology.presets import load_preset

NVLS_OFF = {"NCCL_NVLS_ENABLE": "0"}


def test_every_fit_is_a_default_whose_source_says_how_it_was_fitted():
    params = ModelParams.defaults()
    for key, fit in FITS.items():
        assert key in params.values and params.is_default(key)
        assert fit.gpu_count >= 1 and fit.rows and fit.machine
        assert "fitted" in params.sources[key] or "fit" in params.sources[key], key


def test_recording_sees_the_keys_read_and_nests():
    params = ModelParams.defaults()
    with recording() as outer:
        params["nccl_launch_us"]
        with recording() as inner:
            params["nccl_p2p_fanout_efficiency"]
    assert inner == {"nccl_p2p_fanout_efficiency"} and outer == {"nccl_launch_us", "nccl_p2p_fanout_efficiency"}


def test_a_prediction_names_its_fits_and_those_outside_their_scope():
    """The 4-GPU alltoall on H200 (sm90) uses the fan-out share inside its scope; on 8 x A100 (sm80) the
    same fit (made on 4 x H200) is outside it, and the prediction says so. A 2-GPU alltoall sends to one
    peer and reads no fan-out share."""
    h200 = CollectiveModel.of(load_preset("hgx-h200-4"), env=NVLS_OFF, launch="eager").predict("alltoall", [0, 1, 2, 3], 64 << 20)
    assert "nccl_p2p_fanout_efficiency" in h200.chosen.fits and h200.chosen.outside_scope == ()
    pair = CollectiveModel.of(load_preset("hgx-h200-4"), env=NVLS_OFF).predict("alltoall", [0, 1], 64 << 20)
    assert "nccl_p2p_fanout_efficiency" not in pair.chosen.fits
    a100 = CollectiveModel.of(load_preset("dgx-a100"), env=NVLS_OFF).predict("alltoall", list(range(8)), 64 << 20)
    notes = " ".join(a100.chosen.outside_scope)
    assert "nccl_p2p_fanout_efficiency was fitted on 4 x H200" in notes and "sm80, not sm90" in notes
    assert a100.as_dict()["outside_scope"] == list(a100.chosen.outside_scope)


def test_a_value_set_by_the_user_is_not_the_fit_any_more():
    params = ModelParams.defaults().with_values({"nccl_p2p_fanout_efficiency": 0.9}, provenance="user")
    pred = CollectiveModel.of(load_preset("dgx-a100"), params, env=NVLS_OFF).predict("alltoall", list(range(8)), 64 << 20)
    assert "nccl_p2p_fanout_efficiency" not in pred.chosen.fits


def test_outside_scope_reasons():
    fit = FITS["nccl_p2p_fanout_efficiency"]
    assert outside_scope(fit, Context(90, "nvlink", 4, 1)) is None
    assert outside_scope(fit, Context(90, "nvlink", 16, 2)) == "16 GPUs; 2 nodes"
    assert "pcie, not nvlink" in (outside_scope(fit, Context(90, "pcie", 4, 1)) or "")


def test_model_params_lists_every_fit_with_its_scope(capsys):
    assert main(["model", "params", "--fitted", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    keys = {r["key"] for r in doc["parameters"]}
    assert keys == set(FITS)
    row = next(r for r in doc["parameters"] if r["key"] == "nccl_p2p_registered_channel_factor")
    assert row["fit"]["gpu_count"] == 4 and "sendrecv-G20.txt" in row["fit"]["rows"]
    assert row["fit"]["scope"]["text"].startswith("sm90, nvlink")
    assert main(["model", "params"]) == 0
    text = capsys.readouterr().out
    assert "fitted)" in text and "nccl_launch_us" in text


def test_model_params_bad_topology_is_one_line(capsys):
    assert main(["model", "params", "--topology", "no-such-thing"]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "no-such-thing" in err


def test_every_default_whose_source_says_fitted_is_listed():
    params = ModelParams.defaults()
    fitted = {k for k, src in params.sources.items() if src.lower().startswith("fitted")}
    assert fitted <= set(FITS), sorted(fitted - set(FITS))
