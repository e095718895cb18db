"""The pure-Python half of bench/device_onegpu.sh: nvbandwidth's text output parsed, and the
side-by-side table built from linkscope records. The sample (tests/fixtures/nvbandwidth/) is
SYNTHETIC: written by hand in the format of nvbandwidth's output.cpp / inline_common.h, with
illustrative numbers (not a measurement), plus a waived case, an N/A cell and an error line."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SAMPLE = ROOT / "tests" / "fixtures" / "nvbandwidth" / "onegpu_sample.txt"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("onegpu_compare", ROOT / "bench" / "onegpu_compare.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_parse_every_case_status_unit_and_cell(tool):
    cases = tool.parse_nvbandwidth(SAMPLE.read_text())
    h2d = cases["host_to_device_memcpy_ce"]
    assert h2d.status == "Passed" and h2d.unit == "GB/s" and h2d.cell(0, 0) == 55.12 and h2d.sum == 55.12
    assert h2d.description == "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)" and h2d.columns == ["0"]
    assert cases["host_device_latency_sm"].unit == "ns" and cases["host_device_latency_sm"].cell(0, 0) == 1210.55
    assert cases["host_to_device_memcpy_sm"].cell(0, 0) is None  # N/A cell
    assert cases["device_to_host_memcpy_sm"].status == "Waived" and not cases["device_to_host_memcpy_sm"].rows
    broken = cases["host_to_device_bidirectional_memcpy_sm"]
    assert broken.status == "Running" and not broken.rows  # started, never finished: no number
    assert cases["device_local_copy"].cell(0, 0) == 1512.30


def test_parse_tolerates_garbage_truncation_and_several_gpus(tool):
    assert tool.parse_nvbandwidth("") == {}
    assert tool.parse_nvbandwidth("segfault\n\x00\x01 junk\n") == {}
    text = SAMPLE.read_text()
    truncated = text[: text.index("SUM device_to_host_memcpy_ce")]
    cases = tool.parse_nvbandwidth(truncated)
    assert cases["device_to_host_memcpy_ce"].cell(0, 0) == 55.34 and cases["device_to_host_memcpy_ce"].sum is None
    two = ("Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n"
           "           0         1\n 0     55.10     54.90\n\nSUM host_to_device_memcpy_ce 110.00\n")
    assert tool.parse_nvbandwidth(two)["host_to_device_memcpy_ce"].rows == [[55.10, 54.90]]


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
    assert rows["D2H CE pinned"]["linkscope"] is None  # no record: N/A, not a crash
    text = tool.table(result)
    assert "H2D CE pinned" in text and "1.007" in text and "N/A" in text
    out = tmp_path / "onegpu.json"
    assert tool.main(["x", str(tmp_path), str(out)]) == 0 and json.loads(out.read_text())["rows"]
