"""Small pinned host copies are set by the host (driver, IOMMU, VM), not the GPU: their band family
(``host-small``) pools the spread seen between hosts of one host-link class, across GPU models."""
from __future__ import annotations

from pathlib import Path

from linkscope.judge.refbuild import Recording, build
from linkscope.judge.references import RefKey, family_of

ROOT = Path(__file__).resolve().parents[2]


def test_small_host_copies_form_their_own_family():
    small = RefKey("h200", "host PCIe Gen5 x16", "d2h", "pair", "uni", 4096, "", "GB/s")
    assert family_of(small) == "host-small"
    assert family_of(RefKey("h200", "host PCIe Gen5 x16", "d2h", "pair", "uni", 512 << 20, "", "GB/s")) == "copy"
    assert family_of(RefKey("h200", "host PCIe Gen5 x16", "d2h-pageable", "pair", "uni", 4096, "", "GB/s")) == "pageable"
    assert family_of(RefKey("h200", "NV18", "ce", "pair", "uni", 4096, "", "GB/s")) == "copy-small"


def test_the_host_small_spread_is_taken_between_hosts_of_other_gpu_models():
    # one lease each of two hosts with different GPUs (2 x H100, 4 x H200): no key is seen on two leases,
    # yet the host-small family has a spread, from the same small host copies on the two hosts
    table = build(ROOT, (Recording(("tests/fixtures/peertools/h100x2/linkscope-survey.json",), "h100 host", "2026-11-25"),
                         Recording(("tests/fixtures/recordings/h200x4-2026-11-28/linkscope/survey.json",), "h200 host",
                                   "2026-11-28")))
    family = table["families"]["host-small"]
    assert family["keys_with_leases"] >= 4 and family["spread_p90"] is not None
    assert table["families"]["copy-small"]["keys_with_leases"] == 0
