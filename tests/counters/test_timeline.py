"""Deltas, wrap-around, resets, failed readings and rate integration."""
from __future__ import annotations

import pytest

from linkscope.counters.sampler import CUMULATIVE, RATE, CounterKey, CounterSeries, CounterSpec, Point
from linkscope.counters.timeline import intervals, timeline_rows, total

KEY = CounterKey(0, "nvlink", 3, "tx")


def _series(points, mode=CUMULATIVE, unit=1024):
    return CounterSeries(CounterSpec(KEY, mode, None, unit, "test"), [Point(*p) for p in points])


def test_kib_counter_diffs_to_bytes_and_peak():
    s = _series([(0.0, 100, "", 2**64), (0.1, 100 + 1_048_576, "", 2**64), (0.3, 100 + 1_048_576, "", 2**64)])
    t = total(s)
    assert t.bytes == 1024**3 and t.complete and not t.estimate
    assert t.peak_gb_per_s == pytest.approx(1024**3 / 0.1 / 1e9)
    assert [iv.bytes for iv in intervals(s)] == [1024**3, 0.0]


def test_32bit_wrap_is_corrected_and_counted():
    s = _series([(0.0, 2**32 - 100, "", 2**32), (1.0, 50, "", 2**32)], unit=1)
    t = total(s)
    assert (t.bytes, t.wraps, t.complete) == (150, 1, True)


def test_64bit_backwards_step_is_a_reset_not_a_huge_number():
    s = _series([(0.0, 10_000, "", 2**64), (0.1, 20_000, "", 2**64), (0.2, 5, "", 2**64), (0.3, 105, "", 2**64)], unit=1)
    t = total(s)
    assert t.bytes == 10_000 + 100
    assert not t.complete
    assert any("reset" in n for n in t.notes)


def test_failed_reading_is_unknown_not_zero():
    s = _series([(0.0, None, "NOT_SUPPORTED"), (0.1, None, "NOT_SUPPORTED")])
    t = total(s)
    assert t.bytes is None and not t.complete and t.peak_gb_per_s is None
    assert "NOT_SUPPORTED" in t.notes[0]
    s = _series([(0.0, 0, "", 2**64), (0.1, None, "GPU_IS_LOST"), (0.2, 2048, "", 2**64)])
    t = total(s)
    assert t.bytes is None and not t.complete  # the gap hides where the bytes went: unknown


def test_rate_counter_is_integrated_with_trapezoid():
    # KB/s samples: 0, 1,000,000 KB/s (~1 GB/s), 0; 0.5 s apart.
    s = _series([(0.0, 0), (0.5, 1_000_000), (1.0, 0)], mode=RATE, unit=1024)
    t = total(s)
    assert t.estimate
    assert t.bytes == round(1_000_000 * 1024 * 0.5)  # two triangles of height r, width 0.5
    assert t.peak_gb_per_s == pytest.approx(1_000_000 * 1024 / 1e9)


def test_single_reading_is_incomplete():
    t = total(_series([(0.0, 5, "", 2**64)]))
    assert t.bytes is None and not t.complete and "fewer than two readings" in t.notes


def test_timeline_rows_relative_time_and_cumulative():
    s = _series([(10.0, 0, "", 2**64), (10.1, 1, "", 2**64), (10.2, 3, "", 2**64)])
    rows = timeline_rows([s], 10.0)
    assert [(r["t_start_s"], r["bytes"], r["cumulative_bytes"]) for r in rows] == [(0.0, 1024, 1024), (0.1, 2048, 3072)]
    assert rows[0]["link"] == 3 and rows[0]["bus"] == "nvlink" and rows[0]["direction"] == "tx"
