"""Reference distributions: what a number measured on real, healthy machines of one kind.

A reference answers "what did this number measure on healthy machines like this one?" for one
:class:`RefKey` (GPU model, link class, method or collective, pattern, direction, size, launch
mode, quantity). The shipped table (``references.json`` beside this module) is written by
``python -m linkscope.judge.refbuild`` from the recordings it lists (every value keeps its file,
lease and date), and a test checks the shipped file equals what the script writes.

Each reference has a median (over the runs that set it) and a *band*: the relative distance
from the median within which a number is normal. The band comes from the spread seen between
leases (fresh machines) of the same key where there were several, else from the spread pooled
over the keys of its family that had several leases; never below the family's floor
(:data:`BAND_RULE`). ``judge.expect`` judges against the reference first, and falls back to the
twin with the wider thresholds where there is none.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ..errors import SchemaError

__all__ = ["BAND_RULE", "FORMAT", "RefKey", "RefSource", "Reference", "ReferenceTable", "family_of", "family_of_pool",
           "host_decided", "pool_of", "shipped"]

FORMAT = "linkscope.references"
VERSION = 1

#: How a band is set (written into the file, so a reader sees the rule with the numbers). The spread
#: of a key is the largest |ln(value / median)| over every run of it (other leases, other files of a
#: lease, the other GPUs or pairs of the node); where its family's keys seen on two or more leases
#: spread more (90th percentile), the family's; where the repetitions within a run vary more (median
#: CV), that. band = max(floor of the family, exp(``spread_factor`` x spread) - 1).
#: ``spread_factor`` 2: the largest deviation among a few leases understates what the next lease does
#: (the range of n normal draws grows with n); it is a choice, not fitted to any verdict.
#: ``host-small``: pinned copies to or from host memory below ``small_below_bytes`` are latency-bound,
#: and their fixed cost is the host's (driver path, IOMMU, virtualisation), not the GPU's: their family's
#: spread is also taken between hosts, across GPU models of one host-link class (refbuild), so a new
#: host is judged with the variation seen between hosts, not between two leases of one.
#: The pageable floor: a pageable copy is the host's memcpy through a staging buffer (host memory and
#: the OS decide it, not the link; docs/benchmarks.md "pageable"), repeatable to no better than ~10%;
#: the other floors are the resolution of the tools' printed numbers and of a median over 5-30
#: repetitions (copies are repeatable to ~1% within a lease, docs/benchmarks.md), not fitted either.
#: Latencies pool their spread per kind (``pool_of``): a pointer chase, a flag polled by a spinning
#: kernel and a copy call are different mechanisms, and one kind can move between leases where another
#: does not (on Hopper the flag ping-pong gave 0.68-0.87 us between leases, the chase 0.825-0.830 on seven).
BAND_RULE: Mapping[str, Any] = {
    "spread_factor": 2.0,
    "floor": {"copy": 0.05, "copy-small": 0.10, "host-small": 0.10, "pageable": 0.15, "latency": 0.08, "collective": 0.06,
              "collective-small": 0.12, "mpi": 0.08, "mpi-small": 0.15},
    "small_below_bytes": 8 * 1024 * 1024,
    "no_spread_factor": 2.0,  # a family without any key seen on two leases: twice its floor
}


@dataclass(frozen=True, order=True)
class RefKey:
    """What makes two numbers comparable.

    Attributes:
        gpu: the GPU model token (``h200``, ``h100``; ``model.check.model_token``).
        link: the link class: the pair's level (``NV18``, ``PIX``, ``SYS``) for a GPU pair, ``host
            PCIe Gen5 x16`` (the GPU's host link) for host copies, ``local`` for a device-local copy,
            ``4xNV18`` (ranks x the levels between ring neighbours) for a collective or a concurrent
            pattern.
        quantity: the method (``ce``, ``sm-push``, ``h2d`` ...), ``nccl.<op>``, ``mpi.<test>`` or
            ``latency.<kind>``.
        pattern: ``pair`` (one transfer or a both-ways pair), the concurrent pattern's name
            (``ring``, ``all-to-all`` ...) or ``collective``.
        direction: ``uni``, ``bi`` (one direction while both run) or ``bi-total``; for a concurrent
            pattern ``total`` or ``flow``; for a collective ``out-of-place`` or ``in-place`` (on one rank
            an in-place operation moves nothing).
        size_bytes: the size asked for (exact: no interpolation between sizes).
        launch: ``graph`` / ``eager`` and the GPUs one thread drives (``eager 4/thread``) for
            collectives, ``""`` otherwise.
        unit: ``busbw GB/s``, ``algbw GB/s``, ``GB/s`` or ``us``.
    """

    gpu: str
    link: str
    quantity: str
    pattern: str
    direction: str
    size_bytes: int
    launch: str
    unit: str

    def text(self) -> str:
        launch = f", {self.launch}" if self.launch else ""
        return (f"{self.gpu.upper()} {self.link} {self.quantity} {self.pattern} {self.direction} "
                f"{self.size_bytes} B{launch} ({self.unit})")

    def as_dict(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "link": self.link, "quantity": self.quantity, "pattern": self.pattern,
                "direction": self.direction, "size_bytes": self.size_bytes, "launch": self.launch, "unit": self.unit}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RefKey:
        return cls(str(data["gpu"]), str(data["link"]), str(data["quantity"]), str(data["pattern"]), str(data["direction"]),
                   int(data["size_bytes"]), str(data["launch"]), str(data["unit"]))


def family_of(key: RefKey) -> str:
    """The family whose leases' spread sets a band when the key has one lease (``BAND_RULE``)."""
    small = key.size_bytes < int(BAND_RULE["small_below_bytes"])
    if key.unit == "us":
        return "latency"
    if key.pattern == "collective":
        return "collective-small" if small else "collective"
    if "pageable" in key.quantity:  # the host's memcpy into a staging buffer decides it, not the link
        return "pageable"
    if key.quantity.startswith("mpi."):
        return "mpi-small" if small else "mpi"
    if small and key.link.startswith("host"):  # a small pinned host copy: the host (driver, IOMMU, VM) sets it
        return "host-small"
    return "copy-small" if small else "copy"


def host_decided(key: RefKey) -> bool:
    """Whether the host, not the GPU, decides ``key``'s number: a copy with a host end that is small
    (the copy's fixed cost: the driver's submission, the host's PCIe root complex, IOMMU and
    virtualisation), pageable (the host's memcpy into a staging buffer) or both ways at once (the root
    complex and host memory serve both directions; one direction alone fills the GPU's link on every
    host recorded). Such keys are keyed by the GPU's latency class, not its SKU (``judge.expect``),
    and judged one-sided: the reference gives the hosts seen, and a faster host within what the
    hardware can give is no fault (no recording names its host's CPU, memory or IOMMU: all say ``vm``).
    """
    if key.unit != "GB/s" or key.pattern != "pair" or not key.link.startswith("host"):
        return False
    return family_of(key) in ("host-small", "pageable") or key.direction in ("bi", "bi-total")


def pool_of(key: RefKey) -> str:
    """The group whose spread between leases a key of one lease borrows: its family, or for a latency its
    kind (``latency/latency.flag-pingpong``), or ``copy/host`` for a large host copy the host decides (its
    spread is between hosts, not a GPU link's between leases); the family where the group has none."""
    family = family_of(key)
    if family == "latency":
        return f"{family}/{key.quantity}"
    return f"{family}/host" if family == "copy" and host_decided(key) else family


def family_of_pool(pool: str) -> str:
    return pool.split("/", 1)[0]


@dataclass(frozen=True)
class RefSource:
    """One file's contribution: its median of the key's values, how many, and where it came from."""

    file: str
    lease: str
    date: str
    median: float
    n: int


@dataclass(frozen=True)
class Reference:
    """The reference of one key.

    Attributes:
        key: what it is the reference for.
        median: the median of the files' medians.
        band: relative half-width: normal within ``median / (1 + band)`` .. ``median * (1 + band)``.
        band_from: how the band was set, in words (the spread, over how many leases, or the floor).
        spread: the largest relative distance of a lease's median from ``median`` (None: one lease).
        sources: every file behind it.
    """

    key: RefKey
    median: float
    band: float
    band_from: str
    spread: float | None
    sources: tuple[RefSource, ...]

    @property
    def n(self) -> int:
        return sum(s.n for s in self.sources)

    @property
    def leases(self) -> tuple[str, ...]:
        return tuple(sorted({s.lease for s in self.sources}))

    def provenance(self) -> str:
        """``n=12 over 2 leases (h200x4-...: 2026-11-28; ...)``."""
        leases = self.leases
        shown = ", ".join(leases[:3]) + (f" +{len(leases) - 3}" if len(leases) > 3 else "")
        return f"n={self.n} from {len(self.sources)} file{'s' if len(self.sources) != 1 else ''}, " \
               f"{len(leases)} lease{'s' if len(leases) != 1 else ''} ({shown})"

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key.as_dict(), "median": self.median, "band": self.band, "band_from": self.band_from,
                "spread": self.spread,
                "sources": [[s.file, s.lease, s.date, s.median, s.n] for s in self.sources]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reference:
        sources = tuple(RefSource(str(f), str(lease), str(date), float(med), int(n)) for f, lease, date, med, n in data["sources"])
        spread = data.get("spread")
        return cls(RefKey.from_dict(data["key"]), float(data["median"]), float(data["band"]), str(data["band_from"]),
                   None if spread is None else float(spread), sources)


@dataclass(frozen=True)
class ReferenceTable:
    """Every reference, looked up by key."""

    references: Mapping[RefKey, Reference]
    families: Mapping[str, Mapping[str, Any]]

    def get(self, key: RefKey | None) -> Reference | None:
        return None if key is None else self.references.get(key)

    def family_band(self, key: RefKey) -> float:
        """The band a reference of ``key``'s family gets when seen on one lease (its floor, or its spread
        between leases), the run-to-run part of a twin's band."""
        family = family_of(key)
        floor = float(BAND_RULE["floor"][family])
        spread = (self.families.get(pool_of(key)) or self.families.get(family) or {}).get("spread_p90")
        if not isinstance(spread, (int, float)):
            return floor
        return max(floor, math.expm1(float(BAND_RULE["spread_factor"]) * float(spread)))

    def __len__(self) -> int:
        return len(self.references)

    @classmethod
    def from_dict(cls, data: Any, source: str = "references") -> ReferenceTable:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise SchemaError(f"{source}: not a linkscope reference table (format {FORMAT!r})")
        if data.get("version") != VERSION:
            raise SchemaError(f"{source}: reference table version {data.get('version')!r}, this linkscope reads {VERSION}")
        try:
            refs = [Reference.from_dict(r) for r in data["references"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise SchemaError(f"{source}: a malformed reference ({exc})") from None
        for r in refs:
            if not (math.isfinite(r.median) and r.median > 0 and math.isfinite(r.band) and r.band > 0):
                raise SchemaError(f"{source}: reference {r.key.text()} needs a positive median and band")
        return cls({r.key: r for r in refs}, dict(data.get("families") or {}))


def table_dict(references: Sequence[Reference], families: Mapping[str, Mapping[str, Any]],
               recordings: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON form of a table (``refbuild`` writes it; sorted, so the file is reproducible)."""
    return {"format": FORMAT, "version": VERSION,
            "generated_by": "python -m linkscope.judge.refbuild (from the repository root)",
            "band_rule": dict(BAND_RULE), "families": {k: dict(v) for k, v in sorted(families.items())},
            "recordings": list(recordings),
            "references": [r.as_dict() for r in sorted(references, key=lambda r: r.key)]}


@lru_cache(maxsize=1)
def shipped() -> ReferenceTable:
    """The table shipped with linkscope (empty when the file is missing)."""
    try:
        text = resources.files(__package__).joinpath("references.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        return ReferenceTable({}, {})
    return ReferenceTable.from_dict(json.loads(text), "linkscope/judge/references.json")
