"""``topo --health`` as one call: gather the facts (live or recorded), build the P2P routing report,
read the link state and error counters and, with a measured RunRecord, find the pairs whose copies
bounce through the host and the suspect element behind slow pairs. The CLI prints the result."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..counters import linkerrors
from ..topology.model import Topology
from . import bounce, gather, suspect
from .health import HealthReport


@dataclass(frozen=True)
class HealthExam:
    """What ``examine`` found. ``proofs``/``suspects`` are empty without a record; ``notes`` say where
    the record and the topology disagree (fewer GPUs, a simulated record)."""

    inputs: gather.HealthInputs
    report: HealthReport
    snapshot: dict[str, Any]
    issues: tuple[linkerrors.LinkIssue, ...]
    with_record: bool = False
    proofs: tuple[str, ...] = ()
    suspects: tuple[suspect.Suspect, ...] = ()
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"health": self.report.to_dict(), "link_health": self.snapshot,
                                "link_issues": [i.as_dict() for i in self.issues]}
        if self.with_record:
            data["host_bounce"] = list(self.proofs)
            data["suspects"] = [{"element": s.element, "evidence": list(s.evidence)} for s in self.suspects]
        return data


def examine(topology: Topology, *, recording: Path | None = None, sysfs_root: Path = Path("/"),
            record: Any = None, record_name: str = "the run") -> HealthExam:
    """The health of ``topology``'s machine: of the folder ``recording`` (``topo export --raw``), else
    live under ``sysfs_root``; with ``record`` (a RunRecord measured there), what it proves."""
    inputs = gather.recorded(recording) if recording is not None else gather.live(sysfs_root)
    report = inputs.report(topology)
    snapshot = inputs.link_snapshot(topology)
    issues = tuple(linkerrors.state_issues(snapshot))
    if record is None:
        return HealthExam(inputs, report, snapshot, issues)
    from ..judge.expect import max_gpu_used

    notes: list[str] = []
    need = max_gpu_used(record.measurements)
    if need > topology.gpu_count:
        notes.append(f"{record_name} uses {need} GPUs, {topology.name!r} has {topology.gpu_count}: the pairs "
                     "beyond are left out (was it measured on this machine?)")
    if record.provenance.value == "simulated":
        notes.append(f"{record_name} is SIMULATED: it proves nothing about this machine's links")
    found = bounce.find_bounces(record, topology)
    proofs = tuple(bounce.explain(b, report) for b in found)
    suspects = tuple(suspect.suspects(record, topology, report=report, issues=list(issues), bounces=found))
    return HealthExam(inputs, report, snapshot, issues, True, proofs, suspects, tuple(notes))
