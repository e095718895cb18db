"""The one placeholder rule for amdsmi values (discovery, watch counters, error counters)."""
from __future__ import annotations

import pytest

from linkscope.discovery.amdsmi_values import UINT16_MAX, UINT32_MAX, UINT64_MAX, is_placeholder, reading, unresolved_bdf
from tests.discovery.fake_amdsmi import BDF_ONES, BDF_ZERO, format_bdf


@pytest.mark.parametrize("value,bits", [(UINT64_MAX, 64), (UINT32_MAX, 32), (UINT16_MAX, 16), ("N/A", None), (None, None)])
def test_all_ones_and_na_are_placeholders(value, bits) -> None:
    assert is_placeholder(value, bits) and reading(value, bits) is None


def test_real_readings_pass_and_width_matters() -> None:
    assert reading(0, 64) == 0 and reading(123456, 64) == 123456
    assert reading(UINT32_MAX, 64) == UINT32_MAX  # a 64-bit counter may pass 2**32-1
    assert is_placeholder(UINT32_MAX) and reading(True) is None and reading("12") is None
    with pytest.raises(ValueError):
        is_placeholder(1, 8)


def test_unset_peer_addresses_are_unresolved() -> None:
    assert BDF_ZERO == "0000:00:00.0" and BDF_ONES == "ffffffffffff:ff:1f.7"
    assert unresolved_bdf(BDF_ZERO) and unresolved_bdf(BDF_ONES) and unresolved_bdf("") and unresolved_bdf(None)
    assert not unresolved_bdf(format_bdf(0, 0xC1, 0, 0)) and not unresolved_bdf("0000:c1:00.0")
