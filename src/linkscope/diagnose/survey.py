"""The survey's diagnosis: the P2P routing health section, link error counters sampled before the
first step and after each one, the host-bounce check (``ce`` vs ``ce-nopeer`` / ``staged-pinned`` on
every pair) and the suspect element behind slow pairs. ``measure.survey.run_survey`` calls it through
four methods (``peer_check_methods``, ``start``, ``after_step``, ``finish``), so the survey keeps one
small hook and all the logic lives here.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..counters import linkerrors
from ..counters.sampler import plan_gpu
from ..counters.watch import background_total, measure_background
from ..patterns.methods import CE_NOPEER, STAGED_PINNED
from ..results.schema import RunRecord
from ..topology.model import Topology
from .bounce import explain, find_bounces
from .gather import HealthInputs
from .health import HealthReport
from .suspect import suspects

#: the methods of the peer check: the driver's own staging (peer access off) and staging by hand.
PEER_CHECK_METHODS = (CE_NOPEER.key, STAGED_PINNED.key)

#: A GPU whose links carry more than this (NVLink/xGMI + PCIe, TX + RX) while nothing of the survey runs shares
#: them with another load (a noisy neighbour). Idle GPUs show tens of MB/s of driver and NVML chatter (~28 MB/s of
#: PCIe per GPU, busy or idle, in the 4 x H200 recording's watch: shared/recordings/h200x4-2026-11-28/linkscope/
#: watch.txt); a copy or a collective moves tens to hundreds of GB/s. 1 GB/s is ~35x the chatter and under 2% of one
#: PCIe Gen4 x16 link: a decision, not a fit.
BUSY_BYTES_PER_S = 1e9
#: How long the link counters are sampled with nothing of ours running, before the first step and after the last.
BACKGROUND_S = 0.5
BACKGROUND_INTERVAL_S = 0.1


class SurveyDiagnostics:
    """State of one survey's diagnosis.

    Args:
        topology: the surveyed topology (GPU ``i`` is ``gpu{i}``).
        inputs: the health facts (live or recorded), None to skip the health section.
        source: a counter source with ``link_health`` (NVML/amdsmi), None to skip the counters.
        counter_gpus: the source's GPU indices to sample (default all GPUs of the topology, matched
            by PCI bus id).
        peer_check: add the host-bounce step (ce-nopeer and staged-pinned on every pair).
        background_s: how long the link counters are sampled with nothing of the survey running, before
            the first step and after the last (another load on the links shows there); 0 skips it.
        clock, sleep: time for the background windows (tests pass a fake clock).
    """

    def __init__(self, topology: Topology, *, inputs: HealthInputs | None = None, source: Any | None = None,
                 counter_gpus: Sequence[int] | None = None, peer_check: bool = True,
                 background_s: float = BACKGROUND_S, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.topology = topology
        self.background_s = background_s
        self._clock, self._sleep = clock, sleep
        self.background: dict[str, Any] = {}
        self.inputs = inputs
        self.source = source
        self.peer_check = peer_check
        self.report: HealthReport | None = inputs.report(topology) if inputs is not None else None
        self._gpus, self._names, self._to_topology = self._match(counter_gpus)
        self._last: dict[str, Any] | None = None
        self.start_snapshot: dict[str, Any] | None = None
        self.issues: list[linkerrors.LinkIssue] = []
        self.steps: list[dict[str, Any]] = []

    def _match(self, counter_gpus: Sequence[int] | None) -> tuple[list[int], dict[int, str], dict[int, int]]:
        """Counter-source indices to sample, their names as the topology numbers GPUs, and the map."""
        if self.source is None:
            return [], {}, {}
        indices = list(counter_gpus) if counter_gpus is not None else list(range(self.source.device_count()))
        by_bus = {(g.pci_bus_id or "").lower(): g.index for g in self.topology.gpus if g.index is not None}
        to_topology: dict[int, int] = {}
        for i in indices:
            try:
                bus = self.source.gpu_info(i).pci_bus_id.lower()
            except Exception:
                bus = ""
            if bus in by_bus:
                to_topology[i] = by_bus[bus]
        if len(to_topology) != len(indices):  # no bus ids to match: same order as the topology
            to_topology = {i: pos for pos, i in enumerate(indices)}
        return indices, {i: f"GPU{to_topology[i]}" for i in indices}, to_topology

    def peer_check_methods(self, offered: Sequence[str]) -> tuple[str, ...]:
        """The peer-check methods to run (those the engine offers), none when disabled."""
        if not self.peer_check or self.topology.gpu_count < 2:
            return ()
        return tuple(m for m in PEER_CHECK_METHODS if m in offered)

    def _snapshot(self) -> dict[str, Any] | None:
        if self.source is None:
            return None
        return linkerrors.take(self.source, self._gpus)

    def start(self) -> None:
        """Sample the counters before the first step; the link state found then is judged once."""
        snap = self._snapshot()
        self.start_snapshot = self._last = snap
        if snap is not None:
            self.issues.extend(linkerrors.state_issues(snap, "", names=self._names))
        self._sample_background("before")

    def _sample_background(self, when: str) -> None:
        """Each GPU's link traffic over ``background_s`` with nothing of the survey running (``when``:
        before the first step or after the last), kept in ``self.background[when]`` by GPU name."""
        if self.source is None or self.background_s <= 0 or not self._gpus:
            return
        try:
            plans = [plan_gpu(self.source, g) for g in self._gpus]
            found = measure_background(self.source, plans, self.background_s, BACKGROUND_INTERVAL_S,
                                       clock=self._clock, sleep=self._sleep)
        except Exception as exc:  # advisory: a counter that stops answering must not cost the survey its numbers
            self.background[when] = {"error": f"{type(exc).__name__}: {exc}"}
            return
        self.background[when] = {self._names[g]: {"gpu": self._to_topology[g], "window_s": b.window_s,
                                                  "fabric_bytes_per_s": b.nvlink_bytes_per_s,
                                                  "pcie_bytes_per_s": b.pcie_bytes_per_s}
                                 for g, b in sorted(found.items())}

    def _background_result(self) -> tuple[dict[str, Any], list[str]]:
        """(extra["background"], its finding): the GPUs whose links carried more than BUSY_BYTES_PER_S
        in a window with nothing of ours running."""
        busy: dict[str, tuple[int, float, str]] = {}
        for when in ("before", "after"):
            for name, rates in (self.background.get(when) or {}).items():
                if not isinstance(rates, Mapping):
                    continue
                total = background_total(rates)
                if total > BUSY_BYTES_PER_S and total > busy.get(name, (0, 0.0, ""))[1]:
                    busy[name] = (rates["gpu"], total, when)
        extra = {**self.background, "busy_threshold_bytes_per_s": BUSY_BYTES_PER_S,
                 "busy_gpus": sorted(g for g, _, _ in busy.values())}
        if not busy:
            return extra, []
        said = ", ".join(f"{name} {total / 1e9:.1f} GB/s ({'before the first step' if when == 'before' else 'after the last'})"
                         for name, (_, total, when) in sorted(busy.items(), key=lambda kv: kv[1][0]))
        line = (f"Another load shared the links: with nothing of the survey running, {said} of link traffic "
                f"(idle GPUs carry tens of MB/s); numbers on {'that GPU' if len(busy) == 1 else 'those GPUs'} were "
                "measured beside it and read low (nvidia-smi / amd-smi list the processes).")
        return extra, [line]

    def after_step(self, name: str, *, loaded: bool = False) -> None:
        """Sample after step ``name``; ``loaded``: the step drove the host links (its PCIe generation counts)."""
        snap = self._snapshot()
        if snap is None:
            return
        found = linkerrors.changes(self._last or snap, snap, name, names=self._names)
        if loaded:
            known = {(i.gpu, i.kind) for i in self.issues}
            found += [i for i in linkerrors.state_issues(snap, name, loaded=True, names=self._names)
                      if i.kind == linkerrors.BELOW_SPEED and (i.gpu, i.kind) not in known]
        self.issues.extend(found)
        self.steps.append({"step": name, "issues": [i.as_dict() for i in found]})
        self._last = snap

    def finish(self, record: RunRecord) -> tuple[dict[str, Any], list[str]]:
        """(extra for the RunRecord, findings sentences) from what was sampled and measured."""
        extra: dict[str, Any] = {}
        lines: list[str] = []
        self._sample_background("after")
        if self.background:
            extra["background"], busy_lines = self._background_result()
            lines.extend(busy_lines)
        if self.report is not None:
            extra["health"] = self.report.to_dict()
            summary = self.report.summary_lines()
            lines.extend(line if line.startswith("P2P routing health") else f"P2P health: {line}" for line in summary)
        if self.source is not None:
            extra["link_errors"] = {"start": self.start_snapshot, "end": self._last, "steps": self.steps,
                                    "issues": [i.as_dict() for i in self.issues],
                                    "summary": linkerrors.summary(self._last or {}, self._names)}
            judged = linkerrors.judge_growth(self.start_snapshot or {}, self._last or {}, names=self._names)
            extra["link_errors"]["judged"] = [j.as_dict() for j in judged]
            if self.issues:
                lines.extend(linkerrors.judged_lines(judged))
                lines.extend(_issue_lines([i for i in self.issues if i.kind not in linkerrors.GROWTH_ISSUE_KINDS]))
            elif (self._last or {}).get("gpus"):
                lines.append(f"Link error counters (read before the first step and after each of the {len(self.steps)} "
                             "steps): none grew, no link down or below its width.")
            elif (self._last or {}).get("unsupported"):
                lines.append(f"Link error counters not read: {self._last['unsupported']}.")  # type: ignore[index]
        bounces = find_bounces(record, self.topology)
        lines.extend(explain(b, self.report) for b in bounces)
        if bounces:
            extra["host_bounce"] = [{"src": b.src, "dst": b.dst, "size_bytes": b.size_bytes, "ce_gb_per_s": b.ce_gb_per_s,
                                     "reference": b.reference, "reference_gb_per_s": b.reference_gb_per_s} for b in bounces]
        found = suspects(record, self.topology, report=self.report, issues=self.issues, bounces=bounces,
                         gpu_of_counter_index=self._to_topology)
        lines.extend(s.sentence for s in found)
        if found:
            extra["suspects"] = [{"element": s.element, "evidence": list(s.evidence)} for s in found]
        return extra, lines

    def close(self) -> None:
        if self.source is not None:
            try:
                self.source.close()
            except Exception:
                pass



def _issue_lines(issues: Sequence[linkerrors.LinkIssue], limit: int = 8) -> list[str]:
    """The issues as findings: corrected-error growth as one line per fabric for the whole run
    (``linkerrors.corrected_lines``), the rest one line each (at most ``limit`` lines, then how many more)."""
    lines = [i.sentence for i in issues if not (i.kind == linkerrors.CORRECTED_GREW and i.link is not None)]
    lines += linkerrors.corrected_lines(issues)
    if len(lines) > limit:
        lines = lines[:limit] + [f"... and {len(lines) - limit} more link issues (extra['link_errors'])."]
    return lines
