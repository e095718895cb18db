from linkscope.measure.stats import Stats
from linkscope.results.findings import findings
from linkscope.results.schema import Measurement, RunProvenance, RunRecord, Status


def bw(src, dst, value, *, pattern="matrix", direction="uni", scope="transfer", method="ce", theo=478.0, size=256 << 20, **kw):
    return Measurement(src=src, dst=dst, method=method, pattern=pattern, direction=direction, size_bytes=size,
                       bandwidth=Stats(n=5, median=value, min=value, max=value, mean=value, stddev=0.0), scope=scope,
                       extra={"theoretical_gb_per_s": theo} if theo else {}, **kw)


def record(*ms, provenance=RunProvenance.MEASURED):
    return RunRecord(kind="survey", provenance=provenance, created_utc="", measurements=tuple(ms))


def test_slowest_pair_efficiency_and_uniformity():
    r = record(bw(0, 1, 400.0), bw(1, 0, 396.0), bw(0, 2, 300.0), bw(2, 0, 398.0))
    text = findings(r, uniform_topology=True)
    assert text[0] == ("Slowest GPU pair (ce, one way, 256 MiB): GPU0 -> GPU2 at 300.0 GB/s, 25% below the fastest "
                       "(GPU0 -> GPU1, 400.0 GB/s).")
    assert "not uniform for ce" in text[1] and "degraded link" in text[1]
    assert text[2].startswith("ce one-way copies reach 83% of the theoretical 478.0 GB/s (median over 4 pairs; 63%–84%)")


def test_uniform_fabric_and_simulated_label():
    r = record(bw(0, 1, 400.0), bw(1, 0, 398.0), provenance=RunProvenance.SIMULATED)
    text = findings(r, uniform_topology=True)
    assert text[0].startswith("SIMULATED")
    assert any("looks uniform for ce" in t for t in text)


def test_contention_factor_against_alone():
    r = record(bw(0, 1, 400.0), bw(2, 1, 400.0), bw(0, 1, 200.0, pattern="all-to-one"), bw(2, 1, 200.0, pattern="all-to-one"),
               bw("*", 1, 400.0, pattern="all-to-one", scope="total"))
    line = next(t for t in findings(r) if t.startswith("All-to-one"))
    assert "each flow gets 0.50× its bandwidth alone (median over 2 flows)" in line
    assert "total per receiver 400.0 GB/s (84% of the theoretical 478.0 GB/s)" in line


def test_missing_peer_access_latency_and_errors():
    r = record(
        Measurement(src=0, dst=3, method="ce", pattern="matrix", direction="uni", size_bytes=8, status=Status.WAIVED,
                    reason="no peer access between GPU 0 and GPU 3"),
        Measurement(src=0, dst=1, method="remote-read", pattern="latency", direction="uni", size_bytes=0,
                    latency=Stats(n=3, median=0.82, min=0.8, max=0.9, mean=0.83, stddev=0.01)),
        Measurement(src=1, dst=0, method="ce", pattern="matrix", direction="uni", size_bytes=8, status=Status.ERROR,
                    reason="CUDARuntimeError: boom"),
    )
    text = findings(r)
    assert any(t.startswith("Peer access (P2P) is missing for 1 GPU pair (GPU0–GPU3)") for t in text)
    assert "Device remote-read latency: median 0.82 us." in text
    assert text[-1] == "1 entry failed; the first: ce 1 -> 0: CUDARuntimeError: boom"


def test_a_reason_that_only_mentions_ce_nopeer_is_not_missing_peer_access():
    r = record(
        bw(0, 1, 400.0),
        Measurement(src=0, dst=1, method="sm-pull", pattern="matrix", direction="uni", size_bytes=8, status=Status.WAIVED,
                    reason="method 'sm-pull' is not offered by the sim engine (it offers: ce, ce-nopeer, staged)"),
    )
    text = findings(r)
    assert not any(t.startswith("Peer access (P2P) is missing") for t in text)
    assert "Peer access works between every GPU pair measured." in text
