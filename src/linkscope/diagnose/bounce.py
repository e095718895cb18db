"""Proof from measurements that peer traffic bounces through the host: for a GPU pair, ``ce`` (copy
engine with peer access) no faster than ``staged-pinned`` (the copy staged by hand through pinned host
memory), or ``ce`` no faster than ``ce-nopeer`` (the same copy with peer access disabled, which the
driver stages through the host). Either means the "direct" path is not direct. The likely cause is
named from the health report's path (ACS redirect bits, IOMMU translation, the driver's P2P status).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..patterns.methods import CE, CE_NOPEER, STAGED_PINNED
from ..results.schema import Measurement, RunRecord, Status
from ..topology import query
from ..topology.model import Topology
from .health import FIX_ACS, FIX_IOMMU, HealthReport

#: ``ce`` counts as "no faster" than a host-staged method when it is below this factor of it
#: (5 %: the run-to-run spread of the survey's copies is well under that).
NO_FASTER = 1.05


@dataclass(frozen=True)
class Bounce:
    """A pair whose ``ce`` copies are no faster than a path through the host."""

    src: int
    dst: int
    size_bytes: int
    ce_gb_per_s: float
    reference: str  # the host-staged method ce was compared with
    reference_gb_per_s: float

    @property
    def evidence(self) -> str:
        return (f"ce GPU{self.src}->GPU{self.dst} {self.ce_gb_per_s:.1f} GB/s vs {self.reference} "
                f"{self.reference_gb_per_s:.1f} GB/s")


def effective_method(m: Measurement) -> str:
    """The method as far as peer access goes: a copy a tool declares it ran with peer access off
    (``extra["peer_access"] is False``, e.g. p2pBandwidthLatencyTest's P2P=Disabled matrix) is the
    driver's staging, i.e. ``ce-nopeer``."""
    if m.method == CE.key and (m.extra or {}).get("peer_access") is False:
        return CE_NOPEER.key
    return m.method


def _medians(ms: Iterable[Measurement]) -> dict[tuple[str, int, int, int], float]:
    """One-way medians by (method, src, dst, size); a pair measured by several patterns (the matrix
    and the sweep) keeps its matrix entry."""
    out: dict[tuple[str, int, int, int], float] = {}
    from_matrix: set[tuple[str, int, int, int]] = set()
    for m in ms:
        if (m.status is Status.OK and m.bandwidth is not None and m.scope == "transfer" and m.direction == "uni"
                and isinstance(m.src, int) and isinstance(m.dst, int) and m.src != m.dst):
            key = (effective_method(m), m.src, m.dst, m.size_bytes)
            if key in from_matrix:
                continue
            out[key] = m.bandwidth.median
            if m.pattern == "matrix":
                from_matrix.add(key)
    return out


#: on a PCIe route, staging through host memory uses the same two GPU links a direct peer copy
#: does, so a healthy direct copy may be only a little faster than ``staged-pinned``: there the
#: comparison with ``staged-pinned`` counts only when ``ce`` also falls below this share of the route's
#: theoretical bandwidth (the comparison with ``ce-nopeer``, the driver's own staging, always counts).
PCIE_STAGED_CE_CEILING = 0.75


def find_bounces(record: RunRecord, topology: Topology | None = None) -> list[Bounce]:
    """Pairs where ``ce`` is no faster than ``ce-nopeer`` or ``staged-pinned`` at the same size
    (largest size measured by both), one per ordered pair. With ``topology``, a PCIe pair compared
    with ``staged-pinned`` must also be below ``PCIE_STAGED_CE_CEILING`` of its route."""
    med = _medians(record.measurements)
    found: dict[tuple[int, int], Bounce] = {}
    for (method, src, dst, size), ce in sorted(med.items(), key=lambda kv: -kv[0][3]):
        if method != CE.key or (src, dst) in found:
            continue
        if topology is not None and not (src < topology.gpu_count and dst < topology.gpu_count):
            continue  # measured on a larger machine than this topology
        for ref in (CE_NOPEER.key, STAGED_PINNED.key):
            other = med.get((ref, src, dst, size))
            if other is None:
                continue
            if ce < other * NO_FASTER and _counts(topology, src, dst, ce, ref):
                found[(src, dst)] = Bounce(src, dst, size, ce, ref, other)
                break
    return [found[k] for k in sorted(found)]


def _counts(topology: Topology | None, src: int, dst: int, ce: float, reference: str) -> bool:
    if topology is None or reference != STAGED_PINNED.key:
        return True
    try:
        level = query.pair_level(topology, src, dst)
        theory = query.theoretical_gb_per_s(topology, src, dst)
    except Exception:  # a pair the topology cannot route: judge by the numbers alone
        return True
    return level.over_fabric or not theory or ce < PCIE_STAGED_CE_CEILING * theory


def explain(bounce: Bounce, report: HealthReport | None) -> str:
    """One sentence: the pair bounces through the host, the evidence, the likely cause on its path and the fix."""
    head = (f"GPU{bounce.src}->GPU{bounce.dst}: peer copies bounce through the host ({bounce.evidence} at "
            f"{bounce.size_bytes // 1024**2} MiB; a direct path would be clearly faster)")
    if report is None:
        return head + "; no health facts to name a cause (run 'linkscope topo --health' on the machine)."
    path = report.path(f"gpu{bounce.src}", f"gpu{bounce.dst}")
    if path is not None:
        redirecting = [q for q in path.ports if q.redirect and q.decides]
        if redirecting:
            q = redirecting[0]
            return (head + f". Likely cause: ACS {'+'.join(q.redirect)} on {q.role} {q.bdf} redirects peer requests to the "
                    f"root complex. Fix: {FIX_ACS.format(bdf=q.bdf)}.")
        bad = {k: v for k, v in path.p2p.items() if v not in (None, "OK")}
        if bad and path.over == "pcie":
            k, v = next(iter(bad.items()))
            return head + f". Likely cause: the driver reports P2P {k} {v} for this pair, so CUDA stages through host memory."
    if report.iommu.get("mode") == "translated":
        return head + f". Likely cause: the IOMMU translates the GPUs' DMA. Fix: {FIX_IOMMU}."
    if report.virtual_machine.get("detected"):
        return (head + ". Likely cause: this is a virtual machine; the hypervisor (its ACS/IOMMU settings, or no P2P "
                "pass-through) routes peer traffic through the host. Ask the provider for a P2P-capable instance.")
    unreadable = [q for q in (path.ports if path else ()) if q.decides and q.status in ("not-readable", "unknown", "missing")]
    if unreadable:
        return (head + f". Cause not found: ACS on {', '.join(q.bdf for q in unreadable)} could not be read; rerun "
                "'sudo linkscope topo --health' (or 'sudo lspci -vvv | grep ACSCtl') to check it.")
    return head + ". No cause found on the path (ACS off, IOMMU not translating, driver P2P OK): check the BIOS P2P settings."
