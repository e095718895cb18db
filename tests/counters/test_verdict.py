"""Verdict sentences and the --expect nvlink rule."""
from __future__ import annotations

from linkscope.counters.verdict import (
    IDLE,
    MIXED,
    UNKNOWN,
    VIA_NVLINK,
    VIA_PCIE,
    decide,
    expect_nvlink,
)


def test_nvlink_sentence():
    v = decide(0, 1_070_000_000, 3_000_000)
    assert v.kind == VIA_NVLINK
    assert v.message == "NVLink carried 1.07 GB, PCIe 3 MB: traffic went over NVLink"


def test_pcie_mixed_idle():
    assert decide(0, 1_000_000, 2_000_000_000).kind == VIA_PCIE
    assert decide(0, 1_000_000_000, 1_000_000_000).kind == MIXED
    assert decide(0, 1_000, 2_000_000).kind == IDLE


def test_unsupported_is_unknown_and_says_so():
    v = decide(0, None, 5_000_000_000, nvlink_reason="NVLink data counters not supported (NOT_SUPPORTED)")
    assert v.kind == UNKNOWN and v.nvlink_bytes is None
    assert "unsupported (NVLink data counters not supported (NOT_SUPPORTED))" in v.message
    assert decide(0, None, None).kind == UNKNOWN
    # a GPU with no NVLink at all: PCIe is the only way, so the verdict is PCIe
    assert decide(0, None, 5_000_000_000, nvlink_reason="no active NVLink").kind == VIA_PCIE


def test_incomplete_is_marked():
    v = decide(0, 2_000_000_000, 0, nvlink_complete=False)
    assert "(incomplete)" in v.message and v.kind == VIA_NVLINK


def test_expect_nvlink():
    nv, idle = decide(0, 2_000_000_000, 0), decide(1, 0, 0)
    assert expect_nvlink([nv, idle]).passed
    assert not expect_nvlink([idle]).passed
    r = expect_nvlink([nv, decide(2, 0, 2_000_000_000)])
    assert not r.passed and "GPU 2 went over PCIe" in r.reason
    r = expect_nvlink([decide(0, None, None)])
    assert r.passed is False and "cannot confirm" in r.reason
    # amdsmi placeholders (MI200): neither passed nor failed (issue 21 item 3)
    amd = decide(0, None, None, nvlink_reason="amdsmi placeholders for every xGMI counter")
    assert amd.placeholder and expect_nvlink([amd]).passed is None and "undecided" in expect_nvlink([amd]).reason
    assert expect_nvlink([decide(0, 1_000_000_000, 1_000_000_000)]).passed  # mixed passes
