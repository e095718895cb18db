import csv
import io
import re

from linkscope.report.textformats import to_csv, to_osu
from linkscope.results.schema import Measurement, RunProvenance, RunRecord, Status
from linkscope.results.stats import Stats


def bw(src, dst, size, gb_per_s, **kw):
    return Measurement(src=src, dst=dst, method="ce", pattern="matrix", direction="uni", size_bytes=size, moved_bytes=size,
                       bandwidth=Stats(n=5, median=gb_per_s, min=gb_per_s * 0.99, max=gb_per_s * 1.01, mean=gb_per_s, stddev=0.1),
                       extra={"theoretical_gb_per_s": 478.1, "label": f"{src}->{dst}"}, **kw)


RECORD = RunRecord(kind="bench", provenance=RunProvenance.SIMULATED, created_utc="2026-11-22T00:00:00+00:00", measurements=(
    bw(0, 1, 8, 0.0123),
    bw(0, 1, 1048576, 394.25),
    Measurement(src=0, dst=1, method="ce", pattern="matrix", direction="uni", size_bytes=1073741824,
                status=Status.WAIVED, reason="does not fit, really"),
    Measurement(src=0, dst=1, method="remote-read", pattern="latency", direction="uni", size_bytes=0,
                latency=Stats(n=20, median=0.8234, min=0.8, max=0.9, mean=0.83, stddev=0.01)),
))


def test_osu_bandwidth_uses_mb_of_1e6_and_osu_columns():
    text = to_osu(RECORD)
    lines = text.splitlines()
    header = lines.index(f"{'# Size':<10}{'Bandwidth (MB/s)':>20}")
    assert lines[header - 1].startswith("# linkscope ce matrix uni 0 -> 1 (simulated)")
    assert lines[header + 1] == f"{8:<10d}{12.30:>20.2f}"
    assert lines[header + 2] == f"{1048576:<10d}{394250.00:>20.2f}"
    assert lines[header + 3] == "# 1073741824 waived: does not fit, really"
    # every non-comment line parses as "size value"
    for line in lines:
        if line and not line.startswith("#"):
            assert re.fullmatch(r"\d+\s+\d+\.\d\d", line)


def test_osu_latency_block():
    lines = to_osu(RECORD).splitlines()
    i = lines.index(f"{'# Size':<10}{'Latency (us)':>20}")
    assert lines[i + 1].split() == ["0", "0.82"]


def test_csv_one_row_per_measurement_with_all_fields():
    rows = list(csv.DictReader(io.StringIO(to_csv(RECORD))))
    assert len(rows) == 4
    assert rows[1]["median_gb_per_s"] == "394.25" and rows[1]["status"] == "ok" and rows[1]["provenance"] == "measured"
    assert rows[1]["extra.theoretical_gb_per_s"] == "478.1" and rows[1]["extra.label"] == "0->1"
    assert rows[2]["median_gb_per_s"] == "" and rows[2]["reason"] == "does not fit, really"
    assert rows[3]["latency_us"] == "0.8234" and rows[3]["latency_n"] == "20"
    for field in ("src", "dst", "method", "pattern", "direction", "size_bytes", "moved_bytes", "cv", "n", "verified", "scope", "group"):
        assert field in rows[0]


def test_csv_of_empty_record_has_a_header():
    text = to_csv(RunRecord(kind="bench", provenance=RunProvenance.MEASURED, created_utc=""))
    assert text.startswith("src,dst,method,pattern,direction,size_bytes")


def test_csv_cells_are_plain_and_floats_rounded():
    from linkscope.results.schema import Measurement
    from linkscope.results.stats import Stats

    v = 115.48022287201577
    m = Measurement(src=0, dst=1, method="ce", pattern="matrix", direction="uni", size_bytes=1 << 20,
                    bandwidth=Stats(n=5, median=v, min=v, max=v, mean=v, stddev=0.0),
                    extra={"theoretical_gb_per_s": 478.11600000000004, "notes": ["simulated by the model", "not checked"],
                           "pcie": {"gen": 5, "width": 16}})
    row = next(csv.DictReader(io.StringIO(to_csv(RECORD.with_(measurements=(m,))))))
    assert row["median_gb_per_s"] == "115.48" and row["extra.theoretical_gb_per_s"] == "478.116"
    assert row["extra.notes"] == "simulated by the model; not checked" and row["extra.pcie"] == "gen=5; width=16"
    assert not any(cell.startswith(("[", "{")) for cell in row.values())


def test_nccl_prediction_line_says_whose_choice_and_whose_numbers():
    """Issue 39: 'ring/LL chosen' beside a list where tree/LL was faster read as a contradiction: the
    choice is NCCL's tuner's (its own estimates), the list the twin's; the line now says both."""
    from linkscope.report.textformats import _prediction_line

    def algo(busbw):
        return {"busbw_gb_per_s": busbw}

    pred = {"algorithm": "ring", "protocol": "LL", "channels": 24, "nccl_estimate_us": 21.36, "time_us": 24.29,
            "algorithms": {"tree/LL": algo(81.6), "ring/LL": algo(64.8), "ring/Simple": algo(35.2)}}
    line = _prediction_line(1 << 20, pred)
    assert "ring/LL chosen by NCCL's tuner, the least of its own estimates" in line
    assert "twin busbw GB/s per algorithm/protocol" in line
    assert "the twin rates tree/LL 26% faster than NCCL's choice" in line
    pred["algorithms"]["tree/LL"] = algo(60.0)
    assert "faster than NCCL's choice" not in _prediction_line(1 << 20, pred)
