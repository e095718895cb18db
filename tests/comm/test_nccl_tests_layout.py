"""`bench nccl` writes nccl-tests' text layout: a reader written for nccl-tests' output (checked first on
a real nccl-tests recording) reads linkscope's text the same way; the column header lines are byte
for byte nccl-tests'; "# Avg bus bandwidth" is the mean busbw of the timed lines, as nccl-tests computes it."""
from __future__ import annotations

from pathlib import Path

import pytest

from linkscope.cli import main

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "nccl" / "h100x2-2026-11-25" / "all_reduce.txt"


def read_nccl_tests(text: str) -> dict:
    """What scripts take from nccl-tests output: the rows (size, count, type, redop, root, then time,
    algbw, busbw, #wrong out of place and in place), the average busbw and the out-of-bounds verdict."""
    rows, avg, bounds = [], None, None
    for line in text.splitlines():
        if line.startswith("# Avg bus bandwidth"):
            avg = float(line.split(":", 1)[1].split()[0])
        elif line.startswith("# Out of bounds values"):
            bounds = line.split(":", 1)[1].split()
        elif line.strip() and not line.startswith("#"):
            fields = line.split()
            assert len(fields) == 13, line
            rows.append({"size": int(fields[0]), "count": int(fields[1]), "type": fields[2], "redop": fields[3],
                         "root": int(fields[4]), "busbw": float(fields[7]), "in_place_busbw": fields[11]})
    return {"rows": rows, "avg": avg, "bounds": bounds}


def _header(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#  ") or line.startswith("#        ")
            or line.startswith("#       size")][-3:]


def test_the_reader_reads_real_nccl_tests_output():
    parsed = read_nccl_tests(REAL.read_text())
    assert len(parsed["rows"]) == 28 and parsed["rows"][-1]["size"] == 1 << 30
    assert parsed["avg"] == pytest.approx(83.8212) and parsed["bounds"] == ["0", "OK"]


def test_bench_nccl_text_reads_like_nccl_tests(capsys):
    assert main(["bench", "nccl", "--backend", "sim", "--preset", "dgx-h100", "--op", "allreduce", "--sizes", "8:1MiB",
                 "--iters", "2", "--warmup", "0"]) == 0
    captured = capsys.readouterr()
    text = captured.out
    parsed = read_nccl_tests(text)
    assert [r["size"] for r in parsed["rows"]] == [8 << k for k in range(18)]
    assert all(r["type"] == "float" and r["redop"] == "sum" and r["root"] == -1 for r in parsed["rows"])
    assert parsed["bounds"] == ["0", "OK"]
    # nccl-tests averages the busbw of every timed line; here only out of place was run (in place: N/A)
    busbw = [r["busbw"] for r in parsed["rows"]]
    assert parsed["avg"] == pytest.approx(sum(busbw) / len(busbw), abs=0.01)
    assert all(r["in_place_busbw"] == "N/A" for r in parsed["rows"])
    real = REAL.read_text()
    for line in ("# Using devices", "#", "# Collective test starting: linkscope_all_reduce",
                 "# nThread 1 nGpus 8 minBytes 8 maxBytes 1048576 step: 2(factor)"):
        assert any(x.startswith(line) for x in text.splitlines()), line
    assert _header(text)[-2:] == _header(real)[-2:]  # the column names and units, byte for byte
    # linkscope's own reader of nccl-tests output (check) takes it, with its 8 rank lines
    from linkscope.results.peertools import nccltests

    ranks = [line for line in text.splitlines() if nccltests._RANK.match(line)]
    assert len(ranks) == 8
    program = next(nccltests._STARTING.match(line).group(1) for line in text.splitlines() if nccltests._STARTING.match(line))
    assert nccltests.op_of_program(program) == "allreduce"  # the operation, as from all_reduce_perf
    # each size's row is on stdout once: no echo of it on stderr
    assert "allreduce 8 B" not in captured.err and "us" not in captured.err
