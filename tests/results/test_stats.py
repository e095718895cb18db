import pytest

from linkscope.results.stats import Stats


def test_stats_values():
    s = Stats.from_samples([4.0, 1.0, 3.0, 2.0])
    assert (s.n, s.median, s.min, s.max, s.mean) == (4, 2.5, 1.0, 4.0, 2.5)
    assert s.stddev == pytest.approx(1.2909944)
    assert s.cv == pytest.approx(s.stddev / 2.5)
    assert s.ci_half_width_rel() < float("inf")


def test_stats_rejects_empty_and_nan():
    with pytest.raises(ValueError):
        Stats.from_samples([])
    with pytest.raises(ValueError):
        Stats.from_samples([1.0, float("nan")])
