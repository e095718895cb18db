"""tests/benchtables/mpi_osu_table.py on a real recording (tests/fixtures/mpi/h100x2-2026-11-25: OSU 5.3 beside
`linkscope bench mpi`, 2 x H100, round 1 of the lead's visit 2): both tools' text is read by
results.peertools.osu, and the table is docs/benchmarks.md's "GPU-aware MPI between GPU0 and GPU1" r1 column."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchtables import mpi_osu_table

ROOT = Path(__file__).parents[2]
R1 = ROOT / "tests" / "fixtures" / "mpi" / "h100x2-2026-11-25" / "r1"


@pytest.fixture(scope="module")
def tool():
    return mpi_osu_table


def test_table_of_the_recorded_round(tool, tmp_path):
    assert not hasattr(tool, "parse_rows")  # no second OSU parser in bench/
    rows = {(r["test"], r["buffers"], r["size_bytes"]): r for r in tool.build(R1)["rows"]}
    bw = rows[("bw", "DD", 1 << 20)]
    assert (bw["osu"], bw["linkscope"], bw["verified"]) == (163386.42, 161400.38, True)
    assert bw["linkscope_over_osu"] == pytest.approx(0.988, abs=5e-4)
    assert (rows[("bibw", "DD", 64 << 10)]["osu"], rows[("bibw", "DD", 64 << 10)]["linkscope"]) == (17163.70, 17187.79)
    assert (rows[("latency", "DD", 8)]["osu"], rows[("latency", "DD", 8)]["linkscope"]) == (10.59, 12.11)
    assert (rows[("latency", "HH", 1024)]["osu"], rows[("latency", "HH", 1024)]["linkscope"]) == (1.41, 2.05)
    assert (rows[("allreduce", "HH", 8)]["osu"], rows[("allreduce", "HH", 8)]["linkscope"]) == (1.25, 2.82)
    assert rows[("bw", "DD", 256 << 20)]["osu"] is None and rows[("bw", "DD", 256 << 20)]["verified"] is None  # not run
    out = tmp_path / "t.json"
    assert tool.main(["x", str(R1), str(out)]) == 0
    assert json.loads(out.read_text())["rows"][3]["linkscope"] == 161400.38


def test_a_step_without_a_table_is_empty_and_says_why(tool, tmp_path, capsys):
    assert tool.osu_values(tmp_path / "missing.txt") == {}
    failed = tmp_path / "osu_bw_DD.txt"
    failed.write_text("mpirun noticed that process rank 0 exited on signal 11\n")
    assert tool.osu_values(failed) == {} and "no OSU result" in capsys.readouterr().err
