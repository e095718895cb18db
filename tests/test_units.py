import doctest

import pytest

import linkscope.units as units
from linkscope.errors import UserError


def test_doctests():
    assert doctest.testmod(units).failed == 0


@pytest.mark.parametrize("text,expected", [("8", 8), ("4K", 4096), ("4KiB", 4096), ("64M", 64 << 20), ("1GiB", 1 << 30), ("1.5KiB", 1536)])
def test_parse_size(text, expected):
    assert units.parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "-4", "4XB", "1.3"])
def test_parse_size_rejects(bad):
    with pytest.raises(UserError):
        units.parse_size(bad)


def test_parse_sizes_range_and_list():
    assert units.parse_sizes("8:1KiB") == [8, 16, 32, 64, 128, 256, 512, 1024]
    assert units.parse_sizes("4K,64M,1G") == [4096, 64 << 20, 1 << 30]
    with pytest.raises(UserError):
        units.parse_sizes("1KiB:8")
    with pytest.raises(UserError):
        units.parse_sizes("0,8")


def test_rates_and_durations():
    assert units.gb_per_s(394e9, 1.0) == pytest.approx(394.0)
    assert units.format_rate(None) == "N/A"
    assert units.parse_duration_s("100ms") == pytest.approx(0.1)
    assert units.parse_duration_s("250us") == pytest.approx(250e-6)
    with pytest.raises(UserError):
        units.parse_duration_s("soon")
