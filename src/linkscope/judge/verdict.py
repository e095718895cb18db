"""The verdict core: is one measured number normal? Pure data and one pure function.

A number is judged against an :class:`Expectation` (what the route's theoretical bottleneck allows,
what the twin predicts, and the calibrated twin where one is given, plus the *alternatives*: what
the number would be under a known cause, such as peer access being off). :func:`decide` turns the
measured value, the expectation and the :class:`Thresholds` into a :class:`Judgement`: a verdict
(ok / low / suspicious-high / not judged), the fraction of the expectation reached, and the reason
in words, e.g.::

    allreduce 512 MiB busbw 316.8 GB/s on 2 x H100 NV18: twin 325 (ring, NVLS off) -> 97%: ok
    GPU0->GPU1 ce 512 MiB 37.0 GB/s: NV18 route expects ~393 (twin ce) -> 9%: low; 37 is what
        PCIe staging through host memory gives (~38.5): peer access likely off

The fraction is always "how good": measured / expected for rates (GB/s), expected / measured for
times (µs), so one set of thresholds serves both. ``judge.expect`` builds expectations from a
topology with the fabric model; this module needs no model and is the stable API others build on
(``linkscope check``, the "which link is bad" diagnosis):

* :class:`Verdict`, :class:`Thresholds`, :class:`Alternative`, :class:`Expectation`,
  :class:`Judgement` (frozen dataclasses), and :func:`decide`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..errors import ConfigError

__all__ = ["Alternative", "Expectation", "Judgement", "Thresholds", "Verdict", "decide"]


class Verdict(str, Enum):
    OK = "ok"
    LOW = "low"
    HIGH = "suspicious-high"
    UNJUDGED = "not judged"


@dataclass(frozen=True)
class Thresholds:
    """When a number is ok, low or suspiciously high (fractions of the expectation).

    Attributes:
        low_below: below this fraction of the expected value: low (default 0.8).
        high_above: above this fraction: suspicious-high (default 1.15; the twin is within about
            10% of measured on the recorded H100/H200 runs, docs/benchmarks.md).
        theoretical_margin: a rate above the route's theoretical bottleneck x this is
            suspicious-high whatever the twin says (default 1.02: rounding, clocks).
        explain_within: an alternative explains a low number within this relative distance
            (default 0.3: 37 GB/s is "what staging gives" when staging gives 29 to 48).
        latency_bound: a size whose predicted time is more than this share fixed cost is
            latency-bound (default 0.5; ``Expectation.fixed_share``).
    """

    low_below: float = 0.8
    high_above: float = 1.15
    theoretical_margin: float = 1.02
    explain_within: float = 0.3
    latency_bound: float = 0.5

    def __post_init__(self) -> None:
        values = (self.low_below, self.high_above, self.theoretical_margin, self.explain_within)
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
            raise ConfigError("verdict thresholds must be finite numbers")
        if not 0.0 < self.low_below <= 1.0:
            raise ConfigError(f"the low threshold must be a fraction in (0, 1], got {self.low_below:g}",
                              hint="e.g. 0.8: below 80% of the expected value is low")
        if self.high_above < 1.0:
            raise ConfigError(f"the suspicious-high threshold must be at least 1, got {self.high_above:g}",
                              hint="e.g. 1.15: above 115% of the expected value is suspicious")
        if self.theoretical_margin < 1.0 or self.explain_within <= 0.0 or not 0.0 < self.latency_bound <= 1.0:
            raise ConfigError("the theoretical margin must be >= 1, the explanation window > 0 and the latency-bound "
                              "share in (0, 1]")

    def text(self) -> str:
        """The thresholds in words (printed under every verdict table)."""
        return (f"ok from {self.low_below:.0%} to {self.high_above:.0%} of the expected value; low below "
                f"{self.low_below:.0%}; suspicious-high above {self.high_above:.0%} or above the route's theoretical "
                f"bottleneck (x{self.theoretical_margin:g}); a cause is named when its value is within "
                f"{self.explain_within:.0%} of the number")


@dataclass(frozen=True)
class Alternative:
    """What the number would be under a known cause.

    Attributes:
        label: what gives it, e.g. ``"PCIe staging through host memory"``.
        value: the twin's value under that cause, in the expectation's unit.
        cause: the diagnosis in words, e.g. ``"peer access likely off"``.
        key: the diagnosis as a stable identifier for programs (``"no-peer-access"``,
            ``"collective-no-p2p"``, ``"pageable-host-memory"``, ``"pcie-link-degraded"``), or "".
    """

    label: str
    value: float
    cause: str
    key: str = ""


@dataclass(frozen=True)
class Expectation:
    """What one measured number should be on its topology.

    Attributes:
        unit: ``"GB/s"`` (a rate: higher is better) or ``"us"`` (a time: lower is better).
        theoretical: the route's theoretical bottleneck in ``unit`` (rates only), or None.
        twin: the twin's (fabric model's) prediction, or None when it has none.
        calibrated: the calibrated twin's prediction (``--calibration``), or None.
        route: the route in nvidia-smi words (``"NV18"``, ``"PIX"``), or "" (collectives say it
            in their subject).
        detail: how the twin got it (``ring``, the ``ce`` method).
        alternatives: values under known causes (used to explain a low number).
        note: why there is no prediction (the verdict is then "not judged").
        fixed_share: the share of the twin's predicted time that is fixed cost (per-copy overhead,
            launch, route latency), or None; above ``Thresholds.latency_bound`` the size is
            latency-bound: a verdict away from ok then points first at the twin's uncalibrated fixed
            costs, and no cause is named from bandwidth alternatives.
    """

    unit: str = "GB/s"
    theoretical: float | None = None
    twin: float | None = None
    calibrated: float | None = None
    route: str = ""
    detail: str = ""
    alternatives: tuple[Alternative, ...] = ()
    note: str = ""
    fixed_share: float | None = None

    @property
    def higher_is_better(self) -> bool:
        return self.unit != "us"

    @property
    def expected(self) -> float | None:
        """The value judged against: the calibrated twin where given, else the twin."""
        return self.calibrated if self.calibrated is not None else self.twin

    @property
    def source(self) -> str:
        return "calibrated twin" if self.calibrated is not None else "twin"

    def as_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "theoretical": self.theoretical, "twin": self.twin, "calibrated": self.calibrated,
                "expected": self.expected, "route": self.route, "detail": self.detail, "note": self.note,
                "fixed_share": self.fixed_share,
                "alternatives": [{"label": a.label, "value": a.value, "cause": a.cause, "key": a.key} for a in self.alternatives]}


@dataclass(frozen=True)
class Judgement:
    """The verdict on one number.

    Attributes:
        subject: what was measured, with its value (``"GPU0->GPU1 ce 512 MiB 37.0 GB/s"``).
        measured: the value in the expectation's unit, or None.
        expectation: what it was judged against.
        verdict: ok | low | suspicious-high | not judged.
        fraction: how good, as a fraction of the expected value (measured / expected for rates,
            expected / measured for times), or None when not judged.
        reason: the verdict in words (the part of the line after the subject).
        cause: the diagnosis of a low number when an alternative explains it, else "".
        cause_key: that alternative's ``key`` (a stable identifier), else "".
    """

    subject: str
    measured: float | None
    expectation: Expectation
    verdict: Verdict
    fraction: float | None
    reason: str
    cause: str = ""
    cause_key: str = ""

    @property
    def line(self) -> str:
        return f"{self.subject}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "measured": self.measured, "verdict": self.verdict.value,
                "fraction": self.fraction, "reason": self.reason, "cause": self.cause, "cause_key": self.cause_key,
                "expectation": self.expectation.as_dict()}


def _num(value: float) -> str:
    """A value as people read it: 3 significant digits, no exponent for usual rates."""
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


def _explained(measured: float, exp: Expectation, within: float) -> Alternative | None:
    """The alternative closest to ``measured`` (in ratio), when within ``within`` of it."""
    best: tuple[float, Alternative] | None = None
    for alt in exp.alternatives:
        if alt.value <= 0 or not math.isfinite(alt.value):
            continue
        distance = abs(math.log(measured / alt.value))
        if distance <= math.log1p(within) and (best is None or distance < best[0]):
            best = (distance, alt)
    return best[1] if best else None


def decide(subject: str, measured: float | None, expectation: Expectation,
           thresholds: Thresholds | None = None) -> Judgement:
    """The verdict on ``measured`` (in ``expectation.unit``) against ``expectation``."""
    t = thresholds or Thresholds()
    exp = expectation
    expected = exp.expected
    if measured is None or not math.isfinite(measured) or measured < 0:
        return Judgement(subject, None, exp, Verdict.UNJUDGED, None, "not judged: no measured value")
    if expected is None or not math.isfinite(expected) or expected <= 0:
        why = exp.note or "the twin has no prediction for it"
        return Judgement(subject, measured, exp, Verdict.UNJUDGED, None, f"not judged: {why}")
    if exp.higher_is_better:
        fraction = measured / expected
    else:
        fraction = expected / measured if measured > 0 else math.inf
    unit = "" if exp.unit == "GB/s" else f" {exp.unit}"
    if exp.route:
        head = f"{exp.route} route expects ~{_num(expected)}{unit} ({exp.source}{', ' + exp.detail if exp.detail else ''})"
    else:
        head = f"{exp.source} {_num(expected)}{unit}{f' ({exp.detail})' if exp.detail else ''}"
    pct = f"{fraction:.0%}" if math.isfinite(fraction) else "inf"
    bound = exp.fixed_share is not None and exp.fixed_share > t.latency_bound
    latency_note = ""
    if bound and exp.fixed_share is not None:
        latency_note = (f"; latency-bound at this size ({exp.fixed_share:.0%} of the {exp.source}'s time is fixed cost: "
                        "overhead, launch, latency), so that cost decides it, not the links" +
                        ("" if exp.calibrated is not None else ": calibrate the twin (model calibrate) first"))
    if exp.higher_is_better and exp.theoretical is not None and measured > exp.theoretical * t.theoretical_margin:
        reason = (f"{head} -> {pct}: suspicious-high; above the route's theoretical bottleneck "
                  f"{_num(exp.theoretical)}: check the units, the size and the GPUs it ran on")
        return Judgement(subject, measured, exp, Verdict.HIGH, fraction, reason)
    if fraction > t.high_above:
        reason = (f"{head} -> {pct}: suspicious-high" + latency_note if bound else
                  f"{head} -> {pct}: suspicious-high; more than {t.high_above - 1:.0%} above the {exp.source}: "
                  "check the units, the size and the GPUs it ran on, or calibrate the twin")
        return Judgement(subject, measured, exp, Verdict.HIGH, fraction, reason)
    if fraction < t.low_below:
        if bound:
            return Judgement(subject, measured, exp, Verdict.LOW, fraction, f"{head} -> {pct}: low{latency_note}")
        alt = _explained(measured, exp, t.explain_within) if measured > 0 else None
        if alt is not None:
            reason = f"{head} -> {pct}: low; {_num(measured)}{unit} is what {alt.label} gives (~{_num(alt.value)}): {alt.cause}"
            return Judgement(subject, measured, exp, Verdict.LOW, fraction, reason, alt.cause, alt.key)
        return Judgement(subject, measured, exp, Verdict.LOW, fraction, f"{head} -> {pct}: low")
    return Judgement(subject, measured, exp, Verdict.OK, fraction, f"{head} -> {pct}: ok")
