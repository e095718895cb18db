"""The pure-Python half of docs/runs/scripts/device_onegpu.sh: nvbandwidth's text output read through
results.peertools.nvbandwidth, and the side-by-side table built from linkscope records. The sample
(tests/fixtures/nvbandwidth/) is SYNTHETIC: written by hand in the format of nvbandwidth's output.cpp /
inline_common.h, with illustrative numbers (not a measurement), plus a waived case, an N/A cell and
an error line; tests/fixtures/peertools/h100x2/nvbandwidth.txt is a real recording."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchtables import onegpu_compare

ROOT = Path(__file__).parents[2]
SAMPLE = ROOT / "tests" / "fixtures" / "nvbandwidth" / "onegpu_sample.txt"
H100X2 = ROOT / "tests" / "fixtures" / "peertools" / "h100x2"


@pytest.fixture(scope="module")
def tool():
    return onegpu_compare


def test_the_script_reads_nvbandwidth_through_the_library_parser(tool):
    """No second nvbandwidth parser in bench/: the numbers and statuses are results.peertools'."""
    assert not hasattr(tool, "parse_nvbandwidth") and not hasattr(tool, "NvbCase")
    run = tool.read_nvbandwidth(SAMPLE)
    assert tool.nvbandwidth_value(run, "host_to_device_memcpy_ce", 0) == 55.12
    assert tool.nvbandwidth_value(run, "host_device_latency_sm", 0) == pytest.approx(1.21055)  # ns -> µs
    assert tool.nvbandwidth_value(run, "host_to_device_memcpy_sm", 0) is None  # N/A cell
    assert tool.nvbandwidth_value(run, "host_to_device_memcpy_ce", 1) is None  # no GPU 1 in this run


def test_compare_on_the_h100x2_recording(tool, tmp_path, capsys):
    """The parsing path on a real recording (tests/fixtures/peertools/h100x2/nvbandwidth.txt, 2 x H100,
    2026-11-25): GPU 0's column of each host testcase, latency in µs; testcases it did not run say so."""
    (tmp_path / "nvbandwidth.txt").write_text((H100X2 / "nvbandwidth.txt").read_text())
    rows = {r["row"]: r for r in tool.compare(tmp_path)["rows"]}
    assert rows["H2D CE pinned"]["nvbandwidth"] == 53.98 and rows["H2D CE pinned"]["note"] == ""
    assert rows["D2H CE pinned"]["nvbandwidth"] == 55.09
    assert rows["H2D CE, both ways at once"]["nvbandwidth"] == 40.19
    assert rows["device-local copy"]["nvbandwidth"] == 1489.24
    assert rows["host<->GPU latency (SM pointer chase)"]["nvbandwidth"] == pytest.approx(1.21772)
    assert rows["H2D SM"]["nvbandwidth"] is None and rows["H2D SM"]["note"] == "nvbandwidth: not run or not found"
    (tmp_path / "nvbandwidth.txt").write_text("segfault\n\x00 junk\n")  # a crashed run: every row says so
    assert all(r["note"] == "nvbandwidth: not run or not found" for r in tool.compare(tmp_path)["rows"])
    assert "NUL bytes" in capsys.readouterr().err


def _record(path: Path, ms: list[dict]) -> None:
    path.write_text(json.dumps({"format": "linkscope.run", "measurements": ms}))


def test_compare_builds_ratios_and_says_why_a_row_is_missing(tool, tmp_path):
    (tmp_path / "nvbandwidth.txt").write_text(SAMPLE.read_text())
    ok = dict(status="ok", scope="transfer", size_bytes=512 << 20)
    _record(tmp_path / "bench_h2d.json", [dict(ok, method="h2d", src="host", dst=0, pattern="host", direction="uni",
                                               median_gb_per_s=55.5)])
    _record(tmp_path / "latency_host.json", [dict(ok, method="host-read", src="host", dst=0, pattern="latency",
                                                  size_bytes=0, latency_us=1.25, median_gb_per_s=None)])
    result = tool.compare(tmp_path)
    rows = {r["row"]: r for r in result["rows"]}
    assert rows["H2D CE pinned"]["ratio"] == pytest.approx(55.5 / 55.12)
    lat = rows["host<->GPU latency (SM pointer chase)"]
    assert lat["nvbandwidth"] == pytest.approx(1.21055) and lat["ratio"] == pytest.approx(1.25 / 1.21055)
    assert rows["D2H SM"]["note"].startswith("nvbandwidth Waived") and rows["D2H SM"]["ratio"] is None
    assert rows["H2D SM, both ways at once"]["note"] == "nvbandwidth started it but printed no result"
    assert rows["H2D SM"]["note"] == "" and rows["H2D SM"]["nvbandwidth"] is None  # ran, printed N/A
    assert result["nvbandwidth_cases"]["device_to_host_memcpy_sm"] == {"status": "Waived", "message": ""}
    assert rows["D2H CE pinned"]["linkscope"] is None  # no record: N/A, not a crash
    text = tool.table(result)
    assert "H2D CE pinned" in text and "1.007" in text and "N/A" in text
    out = tmp_path / "onegpu.json"
    assert tool.main(["x", str(tmp_path), str(out)]) == 0 and json.loads(out.read_text())["rows"]
