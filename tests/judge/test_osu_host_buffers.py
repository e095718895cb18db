"""OSU point-to-point with one buffer in host memory (``D H``, ``H D``): judged over the GPU's host route
at the pageable rate (OSU's host buffers are posix_memalign'd), not "host to host is not modelled"."""
from __future__ import annotations

from pathlib import Path

from linkscope.judge.expect import Judge
from linkscope.judge.runs import judge_runs
from linkscope.judge.verdict import Verdict
from linkscope.results.peertools.detect import read
from linkscope.results.schema import HOST
from linkscope.topology.presets import load_preset

PUBLIC = Path(__file__).resolve().parents[1] / "fixtures" / "public"


def _osu_bw(tmp_path: Path, buffers: str, mb_per_s: float) -> Path:
    send, recv = buffers.split()
    names = {"D": "DEVICE (D)", "H": "HOST (H)"}
    lines = ["# OSU MPI-CUDA Bandwidth Test v7.3", f"# Send Buffer on {names[send]} and Receive Buffer on {names[recv]}",
             "# Size      Bandwidth (MB/s)"]
    lines += [f"{1 << k:<20d}{mb_per_s:.2f}" for k in range(20, 25)]  # 1-16 MiB: bandwidth-bound sizes
    path = tmp_path / f"osu_bw_{send}{recv}.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _judged(path: Path):
    run = judge_runs([read(path)], Judge(load_preset("dgx-h100")))[0]
    return list(zip(run.run.measurements, run.judgements))


def test_the_public_d_h_bibw_of_ucx9462_is_low_at_large_sizes():
    judged = _judged(PUBLIC / "osu-h100-bibw-DH-ucx9462.txt")
    large = [j for m, j in judged if m.size_bytes >= 1 << 20]
    assert large and all(j.verdict is Verdict.LOW for j in large)
    assert all("host memory to host memory" not in j.reason for _, j in judged)
    small = [j for m, j in judged if m.size_bytes <= 1024]
    assert all(j.verdict is Verdict.UNJUDGED and "latency-bound" in j.reason for j in small)


def test_healthy_and_broken_d_h_and_h_d_bandwidths(tmp_path):
    for buffers in ("D H", "H D"):
        ok = _judged(_osu_bw(tmp_path, buffers, 9500.0))
        assert ok and all(j.verdict is Verdict.OK for _, j in ok), [j.line for _, j in ok]
        assert all(j.expectation.theoretical is not None and j.expectation.theoretical < 64 for _, j in ok)  # Gen5 x16
        low = _judged(_osu_bw(tmp_path, buffers, 1400.0))
        assert all(j.verdict is Verdict.LOW for _, j in low)
    ends = {(m.src, m.dst) for m, _ in _judged(_osu_bw(tmp_path, "H D", 9500.0))}
    assert ends == {(HOST, 1)}
