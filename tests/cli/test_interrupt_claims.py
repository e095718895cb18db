"""Ctrl-C of a single-process sweep names only the partial files that were written."""
import pytest

from linkscope.cli import main


def _interrupt(after_checkpoints):
    def fake_run_bench(*args, on_partial=None, **kwargs):
        from linkscope.results.schema import RunProvenance, RunRecord

        for _ in range(after_checkpoints):
            on_partial(RunRecord("bench", RunProvenance.SIMULATED, "2026-11-23T00:00:00+00:00", complete=False))
        raise KeyboardInterrupt

    return fake_run_bench


@pytest.mark.parametrize("checkpoints", [0, 1])
def test_interrupt_claims_only_files_that_exist(tmp_path, monkeypatch, capsys, checkpoints):
    from linkscope.measure import (
        runner,  # cmd_bench imports run_bench from here when it runs
    )

    monkeypatch.setattr(runner, "run_bench", _interrupt(checkpoints))
    part_json, part_csv = tmp_path / "part.json", tmp_path / "part.csv"
    code = main(["bench", "--backend", "sim", "--preset", "hgx-h200-4", "--sizes", "1MiB",
                 "--json", str(part_json), "--csv", str(part_csv)])
    err = capsys.readouterr().err
    assert code == 130 and "interrupted" in err
    side_json, side_csv = tmp_path / "part.partial.json", tmp_path / "part.partial.csv"
    assert not part_json.exists() and not part_csv.exists()  # only a complete run writes these
    if checkpoints:
        assert side_json.exists() and side_csv.exists()
        assert f"partial results written to {side_json}, {side_csv}" in " ".join(err.split())
    else:
        assert not side_json.exists() and not side_csv.exists()
        assert "partial results written" not in err
