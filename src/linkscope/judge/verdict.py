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
        upto: ``value`` is a ceiling, not a value: the cause explains any number at or below it (a
            path slower than every modelled one, such as NCCL's socket transport), ahead of closer values.
    """

    label: str
    value: float
    cause: str
    key: str = ""
    upto: bool = False


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
        reference: the median of the shipped reference for this kind of number (``judge.references``),
            or None; where given it is what the number is judged against, with ``band``.
        band: the reference's relative half-width (normal within ``reference / (1 + band)`` ..
            ``reference * (1 + band)``); without a reference, the twin's band (never narrower than the
            thresholds).
        reference_text: where the reference came from (key, n, leases, how the band was set).
        plausible_max: the most the hardware can give for a rate (the route's theoretical bottleneck,
            a GPU's memory bandwidth for a local copy), or None: above it a number is implausible
            ("check the units"); below it a high number is only faster than expected.
        bound_note: a note on what limits the number (``copy-engine bound, the links carry 1412``),
            printed after the verdict.
        one_sided: where set, a number above the band (and within ``plausible_max``) is ok, and this says
            why: the reference is of a number something outside its key decides (the host of a host copy,
            ``references.host_decided``), so the reference is a floor of healthy, not a centre.
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
    reference: float | None = None
    band: float | None = None
    reference_text: str = ""
    plausible_max: float | None = None
    bound_note: str = ""
    one_sided: str = ""

    @property
    def higher_is_better(self) -> bool:
        return self.unit != "us"

    @property
    def expected(self) -> float | None:
        """The value judged against: the reference where there is one, else the calibrated twin
        where given, else the twin."""
        if self.reference is not None:
            return self.reference
        return self.calibrated if self.calibrated is not None else self.twin

    @property
    def source(self) -> str:
        if self.reference is not None:
            return "reference"
        return "calibrated twin" if self.calibrated is not None else "twin"

    def as_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "theoretical": self.theoretical, "twin": self.twin, "calibrated": self.calibrated,
                "expected": self.expected, "route": self.route, "detail": self.detail, "note": self.note,
                "fixed_share": self.fixed_share, "source": self.source, "reference": self.reference, "band": self.band,
                "reference_text": self.reference_text, "plausible_max": self.plausible_max, "bound_note": self.bound_note,
                "one_sided": self.one_sided,
                "alternatives": [{"label": a.label, "value": a.value, "cause": a.cause, "key": a.key, "upto": a.upto}
                                 for a in self.alternatives]}


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
        if alt.upto:
            if measured <= alt.value:
                return alt
            continue
        distance = abs(math.log(measured / alt.value))
        if distance <= math.log1p(within) and (best is None or distance < best[0]):
            best = (distance, alt)
    return best[1] if best else None


def decide(subject: str, measured: float | None, expectation: Expectation,
           thresholds: Thresholds | None = None) -> Judgement:
    """The verdict on ``measured`` (in ``expectation.unit``) against ``expectation``: its reference
    and band where it has one, else the (calibrated) twin and ``thresholds``."""
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
    if exp.reference is not None and exp.band is not None:
        low_below, high_above = 1.0 / (1.0 + exp.band), 1.0 + exp.band
        where = f"{exp.route} " if exp.route else ""
        head = f"{where}reference {_num(expected)}{unit} +-{exp.band:.0%} ({exp.reference_text})"
        within = f"more than {exp.band:.0%} from the reference"
    else:
        low_below, high_above = t.low_below, t.high_above
        if exp.band is not None:  # the twin's band (judge.expect): never narrower than the thresholds
            low_below, high_above = min(low_below, 1.0 / (1.0 + exp.band)), max(high_above, 1.0 + exp.band)
        if exp.route:
            head = f"{exp.route} route expects ~{_num(expected)}{unit} ({exp.source}{', ' + exp.detail if exp.detail else ''})"
        else:
            head = f"{exp.source} {_num(expected)}{unit}{f' ({exp.detail})' if exp.detail else ''}"
        within = f"more than {high_above - 1:.0%} above the {exp.source}"
        if exp.band is not None:
            head += f" +-{high_above - 1:.0%}"
    tail = f"; {exp.bound_note}" if exp.bound_note else ""
    pct = f"{fraction:.0%}" if math.isfinite(fraction) else "inf"
    bound = exp.reference is None and exp.fixed_share is not None and exp.fixed_share > t.latency_bound
    latency_note = ""
    if bound and exp.fixed_share is not None:
        latency_note = (f"; latency-bound at this size ({exp.fixed_share:.0%} of the {exp.source}'s time is fixed cost: "
                        "overhead, launch, latency), so that cost decides it, not the links" +
                        ("" if exp.calibrated is not None else ": calibrate the twin (model calibrate) first"))
    ceiling = exp.plausible_max if exp.plausible_max is not None else exp.theoretical
    if exp.higher_is_better and ceiling is not None and measured > ceiling * t.theoretical_margin:
        what = "the route's theoretical bottleneck" if exp.plausible_max is None else "what the hardware can give"
        reason = (f"{head} -> {pct}: suspicious-high; above {what} {_num(ceiling)}{unit}: check the units, the size and "
                  "the GPUs it ran on")
        return Judgement(subject, measured, exp, Verdict.HIGH, fraction, reason)
    if fraction > high_above and exp.reference is not None and exp.one_sided:
        return Judgement(subject, measured, exp, Verdict.OK, fraction, f"{head} -> {pct}: ok; {exp.one_sided}{tail}")
    if fraction > high_above:
        if bound:
            return Judgement(subject, measured, exp, Verdict.HIGH, fraction, f"{head} -> {pct}: suspicious-high{latency_note}")
        if exp.higher_is_better:
            word = "higher than expected"
            how = (f"{within}, within what the hardware can give ({_num(ceiling)}{unit})" if ceiling is not None else within)
        else:
            word = "faster than expected"
            how = f"{_num(measured)}{unit} where {_num(expected)}{unit} was expected"
        fix = "" if exp.reference is not None else ("" if exp.calibrated is not None else ": the twin underestimates it "
                                                                                      "(model calibrate)")
        reason = f"{head} -> {pct}: {word}; {how}{fix}{tail}"
        return Judgement(subject, measured, exp, Verdict.HIGH, fraction, reason)
    if fraction < low_below:
        if bound:
            return Judgement(subject, measured, exp, Verdict.LOW, fraction, f"{head} -> {pct}: low{latency_note}")
        slow = "low" if exp.higher_is_better else "low (slower than expected)"
        alt = _explained(measured, exp, t.explain_within) if measured > 0 else None
        if alt is not None:
            gives = (f"is below {alt.label} (~{_num(alt.value)}{unit})" if alt.upto
                     else f"is what {alt.label} gives (~{_num(alt.value)}{unit})")
            reason = f"{head} -> {pct}: {slow}; {_num(measured)}{unit} {gives}: {alt.cause}{tail}"
            return Judgement(subject, measured, exp, Verdict.LOW, fraction, reason, alt.cause, alt.key)
        return Judgement(subject, measured, exp, Verdict.LOW, fraction, f"{head} -> {pct}: {slow}{tail}")
    return Judgement(subject, measured, exp, Verdict.OK, fraction, f"{head} -> {pct}: ok{tail}")
