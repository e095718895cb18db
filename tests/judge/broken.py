"""Broken nodes made from a healthy recording (the 4 x H200 survey of 2026-11-28), for the verdict tests.

Each transform changes the numbers a known fault changes, by a rule from real recordings, and returns
the record with the indices of the numbers it broke and the cause a verdict should name:

* ``peer_access_off``: every GPU-to-GPU copy at what host staging gives. The staged rate is the node's own
  pinned h2d rate x 37.2 / 55.0: on the lent 2 x H100 (PCIe Gen5 x16) p2pBandwidthLatencyTest with
  P2P=Disabled gives 37.2 GB/s where nvbandwidth's h2d gives ~55 (tests/fixtures/peertools/h100x2/
  p2pBandwidthLatencyTest.txt, nvbandwidth.txt); both directions at once total 52.5 there (Bidirectional
  P2P=Disabled), 1.41 x one direction. Cause ``no-peer-access``.
* ``link_down``: one pair's copies (both directions, every method and size) at half: half its NVLinks
  down (nvidia-smi nvlink -s shows them inactive) or a PCIe path trained to half width. Cause
  ``link-degraded``.
* ``noisy_neighbour``: one flow of a concurrent ring at half (another tenant's traffic on its link), the
  group's total recomputed as bytes / the slowest flow, as linkscope computes it. Cause ``slow-flow``
  on the total; the flow itself is low.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

SURVEY = Path(__file__).resolve().parents[1] / "fixtures" / "recordings" / "h200x4-2026-11-28" / "linkscope" / "survey.json"
STAGED_OVER_H2D = 37.2 / 55.0  # see the module docstring
STAGED_BI_OVER_UNI = 52.5 / 37.2


def healthy() -> dict[str, Any]:
    return json.loads(SURVEY.read_text())


def _scale(m: dict[str, Any], factor: float) -> None:
    for k in ("median_gb_per_s", "min_gb_per_s", "max_gb_per_s", "mean_gb_per_s", "stddev_gb_per_s"):
        if m.get(k) is not None:
            m[k] = m[k] * factor


def _peer(m: dict[str, Any]) -> bool:
    return isinstance(m["src"], int) and isinstance(m["dst"], int) and m["src"] != m["dst"] \
        and m["method"] in ("ce", "sm-push", "sm-pull") and m.get("median_gb_per_s") is not None


def peer_access_off(record: dict[str, Any]) -> tuple[dict[str, Any], list[int], str]:
    ms = record["measurements"]
    h2d = statistics.median(m["median_gb_per_s"] for m in ms if m["method"] == "h2d" and m["size_bytes"] == 512 << 20
                            and m["src"] == "host" and m["direction"] == "uni")
    staged = h2d * STAGED_OVER_H2D
    broken = []
    for i, m in enumerate(ms):
        if _peer(m) and m["pattern"] == "matrix" and m["size_bytes"] >= 16 << 20:
            bi = m["direction"] == "bi"
            per = staged * (STAGED_BI_OVER_UNI if bi else 1) / (2 if bi and m["scope"] != "total" else 1)
            _scale(m, per / m["median_gb_per_s"])
            broken.append(i)
    return record, broken, "no-peer-access"


def link_down(record: dict[str, Any], pair: tuple[int, int] = (0, 1)) -> tuple[dict[str, Any], list[int], str]:
    broken = []
    for i, m in enumerate(record["measurements"]):
        if _peer(m) and {m["src"], m["dst"]} == set(pair) and m["pattern"] == "matrix" and m["size_bytes"] >= 16 << 20:
            _scale(m, 0.5)
            broken.append(i)
    return record, broken, "link-degraded"


def noisy_neighbour(record: dict[str, Any], pattern: str = "ring") -> tuple[dict[str, Any], list[int], str]:
    ms = record["measurements"]
    group = [i for i, m in enumerate(ms) if m["pattern"] == pattern and m.get("median_gb_per_s") is not None]
    flows = [i for i in group if ms[i]["src"] != "*"]
    total = next(i for i in group if ms[i]["src"] == "*")
    _scale(ms[flows[0]], 0.5)
    size = ms[total]["size_bytes"]
    slowest_s = max(ms[i]["size_bytes"] / (ms[i]["median_gb_per_s"] * 1e9) for i in flows)
    ms[total]["median_gb_per_s"] = len(flows) * size / slowest_s / 1e9
    return record, [flows[0], total], "slow-flow"


def host_link_down(record: dict[str, Any], gpu: int = 2) -> tuple[dict[str, Any], list[int], str]:
    """One GPU's pinned host copies at half: its PCIe link trained down to half width (x8) or one generation
    lower. Cause ``pcie-link-degraded``."""
    broken = []
    for i, m in enumerate(record["measurements"]):
        if m["method"] in ("h2d", "d2h") and gpu in (m["src"], m["dst"]) and m.get("median_gb_per_s") is not None \
                and m["size_bytes"] >= 16 << 20 and m["direction"] == "uni":
            _scale(m, 0.5)
            broken.append(i)
    return record, broken, "pcie-link-degraded"
