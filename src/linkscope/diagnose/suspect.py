"""Which link is bad: when a GPU pair (or a pattern) is slow, combine its route, the link counters
sampled around each step and the per-method results to name the suspect element (a GPU, an NVLink
port, a PCIe link or switch port, a NIC) in one sentence with the evidence.

"Slow" here: a pair's ``ce`` one-way median judged low by the verdict core of ``linkscope check``
(``judge``: below 80 % of the twin's expectation for that route, with the cause when an alternative
such as staging through host memory explains the number); where the twin has no opinion, below
``SLOW_VS_PEERS`` of the median of the pairs at the same level or below ``SLOW_VS_THEORY`` of the
route's theoretical bandwidth; or a pair the bounce check names. The evidence, strongest first: error
counters that grew on one of the pair's links during a step; a link down or fewer active links; a
PCIe link below its width; an ACS redirect on the path; the one GPU or PCIe switch every slow pair
shares and no fast pair does.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..counters.linkerrors import (
    BELOW_SPEED,
    BELOW_WIDTH,
    CORRECTED_GREW,
    ERRORS_GREW,
    FEWER_LINKS,
    LINK_DOWN,
    LinkIssue,
)
from ..patterns.methods import CE
from ..results.schema import RunRecord, Status
from ..topology import query
from ..topology.model import DeviceKind, Topology
from .bounce import Bounce, effective_method
from .health import HealthReport

SLOW_VS_PEERS = 0.85  # 15 % below the pairs of the same level (survey copies repeat within ~1 %)
SLOW_VS_THEORY = 0.5  # half of the route's theoretical bandwidth: no copy engine loses that much on a healthy link


@dataclass(frozen=True)
class SlowPair:
    src: int
    dst: int
    level: str
    gb_per_s: float
    reference_gb_per_s: float
    why: str
    cause: str = ""  # the verdict core's diagnosis when an alternative explains the number ("peer access likely off")

    @property
    def text(self) -> str:
        return f"GPU{self.src}->GPU{self.dst} ({self.level}) {self.gb_per_s:.1f} GB/s, {self.why}"


@dataclass(frozen=True)
class Suspect:
    element: str
    evidence: tuple[str, ...]

    @property
    def sentence(self) -> str:
        return f"Suspect: {self.element} ({'; '.join(self.evidence)})."


def _judge(topology: Topology) -> Any | None:
    """The verdict core (``judge.Judge``: the twin's expectation per measurement), None where the
    twin cannot model this topology."""
    from ..judge.expect import Judge

    try:
        return Judge(topology)
    except Exception:  # a topology the fabric model cannot route: fall back to the peer rule
        return None


def slow_pairs(record: RunRecord, topology: Topology, method: str = CE.key, *, judge: Any | None = None) -> list[SlowPair]:
    """Pairs of ``method``'s one-way matrix (largest size) that are slow: judged low by the verdict
    core (``judge.verdict.decide`` against the twin's expectation; its reason is the evidence), or,
    where the twin has no opinion, below ``SLOW_VS_PEERS`` of their level's median or
    ``SLOW_VS_THEORY`` of the route's theoretical bandwidth."""
    from ..judge.verdict import Verdict

    entries = [m for m in record.measurements
               if m.pattern == "matrix" and effective_method(m) == method and m.direction == "uni" and m.scope == "transfer"
               and m.status is Status.OK and m.bandwidth is not None and isinstance(m.src, int) and isinstance(m.dst, int)]
    if not entries:
        return []
    entries = [m for m in entries if 0 <= m.src < topology.gpu_count and 0 <= m.dst < topology.gpu_count]  # type: ignore[operator]
    if not entries:
        return []
    judge = judge if judge is not None else _judge(topology)
    size = max(m.size_bytes for m in entries)
    entries = [m for m in entries if m.size_bytes == size]
    levels = {(m.src, m.dst): query.pair_level(topology, m.src, m.dst).code for m in entries}
    by_level: dict[str, list[float]] = {}
    for m in entries:
        by_level.setdefault(levels[(m.src, m.dst)], []).append(m.bandwidth.median)  # type: ignore[union-attr]
    out = []
    for m in entries:
        bw = m.bandwidth.median  # type: ignore[union-attr]
        level = levels[(m.src, m.dst)]
        verdict = judge.judge(m) if judge is not None else None
        if verdict is not None and verdict.verdict is not Verdict.UNJUDGED:
            if verdict.verdict is Verdict.LOW:
                out.append(SlowPair(m.src, m.dst, level, bw, verdict.expectation.expected or 0.0,  # type: ignore[arg-type]
                                    f"judged low: {verdict.reason}", verdict.cause))
            continue
        peers = by_level[level]
        median = statistics.median(peers)
        theory = float(m.extra.get("theoretical_gb_per_s") or 0) or query.theoretical_gb_per_s(topology, m.src, m.dst)
        if len(peers) >= 3 and bw < SLOW_VS_PEERS * median:
            out.append(SlowPair(m.src, m.dst, level, bw, median,  # type: ignore[arg-type]
                                f"{1 - bw / median:.0%} below the median of the {len(peers)} {level} pairs ({median:.1f} GB/s)"))
        elif theory and bw < SLOW_VS_THEORY * theory:
            out.append(SlowPair(m.src, m.dst, level, bw, theory,  # type: ignore[arg-type]
                                f"{bw / theory:.0%} of the route's theoretical {theory:.1f} GB/s"))
    return out


def _gpu_index(element_gpu: int, names: Mapping[int, int] | None) -> int:
    return (names or {}).get(element_gpu, element_gpu)


def _switches_on(topology: Topology, a: int, b: int) -> set[str]:
    if not (0 <= a < topology.gpu_count and 0 <= b < topology.gpu_count):
        return set()  # a pair of a record measured on a larger machine
    return {d for d in query.route_devices(topology, a, b)[1:-1]
            if topology.by_id[d].kind is DeviceKind.PCIE_SWITCH}


def suspects(record: RunRecord, topology: Topology, *, report: HealthReport | None = None,
             issues: Iterable[LinkIssue] = (), bounces: Sequence[Bounce] = (),
             gpu_of_counter_index: Mapping[int, int] | None = None) -> list[Suspect]:
    """The suspect elements behind the slow pairs, one per element, strongest evidence first.
    ``gpu_of_counter_index`` maps the counters' GPU numbering (NVML's) to the topology's."""
    slow = slow_pairs(record, topology)
    slow_keys = {(p.src, p.dst) for p in slow} | {(b.src, b.dst) for b in bounces}
    issues = list(issues)
    found: dict[str, list[str]] = {}

    def add(element: str, evidence: str) -> None:
        found.setdefault(element, [])
        if evidence not in found[element]:
            found[element].append(evidence)

    staged = [(b.src, b.dst, f"{b.evidence}: peer traffic bounces through the host") for b in bounces]
    staged += [(p.src, p.dst, f"{p.text}, as staging through host memory would give")
               for p in slow if "peer access" in p.cause and (p.src, p.dst) not in {(b.src, b.dst) for b in bounces}]
    for src, dst, evidence in staged:  # a pair whose copies go through the host: what on its path sends them there
        path = report.path(f"gpu{src}", f"gpu{dst}") if report is not None else None
        redirect = [q for q in (path.ports if path else ()) if q.redirect and q.decides]
        refused = {k: v for k, v in (path.p2p if path else {}).items() if v not in (None, "OK") and k in ("read", "write")}
        if redirect:
            q = redirect[0]
            add(f"PCIe {q.role} {q.bdf}", f"ACS {'+'.join(q.redirect)} set on it and {evidence}")
        elif refused:
            add(f"the platform's P2P support between GPU{src} and GPU{dst}",
                f"the driver reports P2P {', '.join(f'{k} {v}' for k, v in refused.items())} and {evidence}")
        elif report is not None and report.iommu.get("mode") == "translated":
            add("the IOMMU (DMA translation on)", f"{evidence}")
    slow_text = {(p.src, p.dst): p.text for p in slow}
    tails: dict[str, str] = {}
    for issue in issues:  # counters name links whatever the timing says
        g = _gpu_index(issue.gpu, gpu_of_counter_index)
        involved = [k for k in slow_keys if g in k]
        if issue.kind == CORRECTED_GREW and not involved:
            continue  # corrected errors alone on a link whose pairs are not slow: named in the findings, not suspected
        if issue.kind in (ERRORS_GREW, CORRECTED_GREW, LINK_DOWN) and issue.link is not None:
            element = f"GPU{g} {issue.element.split()[-2]} port {issue.link}"
        elif issue.kind in (BELOW_WIDTH, BELOW_SPEED) or (issue.kind in (ERRORS_GREW, CORRECTED_GREW) and issue.link is None):
            element = f"the PCIe link of GPU{g} (slot, riser or cable)"
        elif issue.kind == FEWER_LINKS:
            element = f"GPU{g}'s {issue.element.split()[-1]} ports"
        else:
            continue
        add(element, issue.sentence.rstrip("."))
        if involved:
            tails[element] = "slow pairs through it: " + ", ".join(
                slow_text.get(k, f"GPU{k[0]}->GPU{k[1]}") for k in sorted(involved)[:4])
    for element, tail in tails.items():
        add(element, tail)
    if slow and not found:
        gpus_in = [set(k) for k in slow_keys]
        common = set.intersection(*gpus_in) if gpus_in else set()
        all_pairs = {(m.src, m.dst) for m in record.measurements if m.pattern == "matrix" and isinstance(m.src, int)
                     and isinstance(m.dst, int) and m.src != m.dst}
        fast = all_pairs - slow_keys
        evidence = "; ".join(p.text for p in slow[:4])
        for g in sorted(common) if fast else ():  # with no fast pair to compare, sharing a GPU proves nothing
            if not any(g in k for k in fast):
                add(f"GPU{g} (every slow pair involves it, no fast pair does)", evidence)
        if not found and fast:
            switch_sets = [_switches_on(topology, a, b) for a, b in slow_keys]
            shared = set.intersection(*switch_sets) if switch_sets else set()
            for s in sorted(shared):
                if not any(s in _switches_on(topology, a, b) for a, b in fast):
                    dev = topology.by_id[s]
                    add(f"PCIe switch {s}{f' ({dev.pci_bus_id})' if dev.pci_bus_id else ''}",
                        f"every slow pair crosses it and no fast pair does: {evidence}")
        if not found:
            add("no single element (slow pairs share no GPU, link or switch)", evidence)
    return [Suspect(element, tuple(ev)) for element, ev in found.items()]


def issues_from_record(extra: Mapping[str, Any]) -> list[LinkIssue]:
    """The link issues a survey stored in ``extra["link_errors"]``."""
    out = []
    for entry in (extra.get("link_errors") or {}).get("issues", []):
        out.append(LinkIssue(int(entry["gpu"]), str(entry["element"]), str(entry["kind"]), str(entry.get("step", "")),
                             str(entry.get("detail", "")), entry.get("link")))
    return out
