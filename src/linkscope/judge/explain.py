"""``linkscope check --explain``: the chain behind one verdict, in lines.

For one judged number: what was measured, the GPU facts used (with their source), the route, the
reference key and the reference (median, band and how it was set, every file with its lease and
date) or the twin (its prediction, the thresholds used as its band, and why it was or was not
trusted), the alternatives (causes), and the verdict.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..errors import LinkscopeError, UserError
from ..results.schema import Measurement
from ..topology.gpufacts import facts_of_device
from .expect import TWIN_ERROR, Judge
from .runs import JudgedRun
from .verdict import Judgement

__all__ = ["explain", "explained", "select"]

#: At most this many numbers are explained for one match string.
MAX_EXPLAINED = 5


def select(judged: Sequence[JudgedRun], selector: str) -> list[tuple[JudgedRun, int]]:
    """The numbers ``selector`` names: ``N`` is the N-th number in the order check prints them
    (1-based, over every file), anything else a case-insensitive piece of the printed line (its
    subject, reason or ``[file:line]``). A UserError when nothing matches."""
    flat = [(jr, i) for jr in judged for i in range(len(jr.judgements))]
    text = selector.strip()
    if text.isdigit():
        index = int(text)
        if not 1 <= index <= len(flat):
            raise UserError(f"--explain {text}: there are {len(flat)} numbers (1..{len(flat)})")
        return [flat[index - 1]]
    if not text:
        raise UserError("--explain needs a number's position (1..N) or a piece of its line")
    needle = text.lower()
    found = [(jr, i) for jr, i in flat if needle in f"{jr.judgements[i].line}  [{jr.where(i)}]".lower()]
    if not found:
        raise UserError(f"--explain {selector!r}: no judged number's line contains it",
                        hint="give its position (1..N, in the order check prints them) or a piece of the printed line")
    return found


def _facts_lines(judge: Judge, m: Measurement) -> list[str]:
    out = []
    seen = set()
    for g in judge._gpus_of(m):  # the GPUs the number ran on
        device = judge.topology.gpu(g)
        facts = facts_of_device(device)
        if facts is None:
            if device.name not in seen:
                out.append(f"  facts: {device.name!r}: none (the table does not know this model)")
            seen.add(device.name)
            continue
        if facts.key in seen:
            continue
        seen.add(facts.key)
        parts = [f"memory {facts.memory_bw_gb_per_s:g} GB/s" if facts.memory_bw_gb_per_s else "",
                 f"local copy {facts.local_copy_gb_per_s:g} GB/s ({facts.local_copy_provenance})" if facts.local_copy_gb_per_s else "",
                 f"PCIe Gen{facts.pcie_generation} x{facts.pcie_lanes}" if facts.pcie_generation else "",
                 f"NVLink{facts.nvlink_generation} x{facts.nvlink_links}" if facts.nvlink_generation else "",
                 f"copy engines {facts.copy_engines}" if facts.copy_engines else "",
                 f"latency class {facts.latency_class}" if facts.latency_class else ""]
        out.append(f"  facts: {facts.name} ({facts.key}): {', '.join(p for p in parts if p)} "
                   "(each cited: linkscope topo facts / docs/guide.md)")
    return out


def _stats(m: Measurement) -> str:
    stats = m.bandwidth if m.bandwidth is not None else m.latency
    if stats is None:
        return ""
    cv = getattr(stats, "cv", None)
    return f" (median of n={stats.n}{f', CV {cv:.1%}' if isinstance(cv, (int, float)) else ''})"


def explain(judge: Judge, jr: JudgedRun, index: int, position: int | None = None) -> list[str]:
    """The chain behind the verdict on number ``index`` of ``jr``, as lines."""
    from .runs import prepared

    m = prepared(jr.run)[index]
    j: Judgement = jr.judgements[index]
    exp = j.expectation
    unit = exp.unit
    where = f"#{position} " if position is not None else ""
    lines = [f"explain {where}{j.subject}  [{jr.where(index)}]",
             f"  measured: {f'{j.measured:.4g}' if j.measured is not None else 'N/A'} {unit}{_stats(m)}, by {jr.run.tool}"]
    launch = judge.launch(m)
    if launch:
        lines.append(f"  launched: {launch} (from the output's header or the record's options)")
    lines += _facts_lines(judge, m)
    if exp.route:
        theo = f", theoretical bottleneck {exp.theoretical:.1f} {unit}" if exp.theoretical else ""
        lines.append(f"  route: {exp.route}{theo}")
    if exp.plausible_max is not None:
        lines.append(f"  most the hardware can give: {exp.plausible_max:.0f} {unit} (facts)")
    try:
        key = judge.ref_key(m)
    except LinkscopeError:
        key = None
    lines.append(f"  reference key: {key.text() if key is not None else 'none (no kind of number references are kept for)'}")
    ref = judge.references.get(key)
    if ref is not None:
        used = "used" if exp.reference is not None else \
            f"not used: {exp.note}" if exp.note else "not used: a calibration of this machine was given"
        lines.append(f"  reference ({used}): median {ref.median:g} {unit}, band +-{ref.band:.1%} "
                     f"({ref.median / (1 + ref.band):.4g} .. {ref.median * (1 + ref.band):.4g}), {ref.provenance()}")
        lines.append(f"    band: {ref.band_from}")
        for s in ref.sources[:8]:
            lines.append(f"    from {s.file} ({s.lease}, {s.date}): median {s.median:g}, n={s.n}")
        if len(ref.sources) > 8:
            lines.append(f"    ... {len(ref.sources) - 8} more files")
    else:
        lines.append("  reference: none for this key")
    twin = exp.calibrated if exp.calibrated is not None else exp.twin
    fresh = judge.expect(m)
    predicted = fresh.calibrated if fresh.calibrated is not None else fresh.twin
    if exp.reference is not None:
        lines.append(f"  twin: {predicted:.4g} {unit} ({fresh.detail or fresh.source}; not used: the reference goes first)"
                     if predicted is not None else f"  twin: none ({fresh.note})")
    elif twin is not None:
        t = judge.thresholds
        low, high = t.low_below, t.high_above
        if exp.band is not None:
            low, high = min(low, 1 / (1 + exp.band)), max(high, 1 + exp.band)
        lines.append(f"  twin (used): {twin:.4g} {unit} ({exp.detail or exp.source}); band: ok from {low:.0%} to "
                     f"{high:.0%} of it (the kind's run-to-run band + the twin's own error {TWIN_ERROR:.0%}, at least "
                     "--low-below/--high-above)")
    else:
        shown = f"{predicted:.4g} {unit}" if predicted is not None else "none"
        lines.append(f"  twin (not used): {shown}; {exp.note or fresh.note}")
    for alt in exp.alternatives:
        lines.append(f"  alternative: {alt.label}: {alt.value:.4g} {unit} -> {alt.cause} [{alt.key}]")
    if exp.bound_note:
        lines.append(f"  limit: {exp.bound_note}")
    frac = f" ({j.fraction:.0%} of the {exp.source})" if j.fraction is not None else ""
    reason = j.reason[len("not judged: "):] if j.reason.startswith("not judged: ") else j.reason
    lines.append(f"  verdict: {j.verdict.value}{frac}: {reason}")
    return lines


def explained(judge: Judge, judged: Sequence[JudgedRun], selector: str) -> list[str]:
    """Lines explaining every number ``selector`` names (at most :data:`MAX_EXPLAINED`)."""
    flat: dict[tuple[int, int], int] = {}
    n = 0
    for r, jr in enumerate(judged):
        for i in range(len(jr.judgements)):
            n += 1
            flat[(r, i)] = n
    chosen = select(judged, selector)
    lines: list[str] = []
    for jr, i in chosen[:MAX_EXPLAINED]:
        position = flat[(judged.index(jr), i)]
        lines += explain(judge, jr, i, position) + [""]
    if len(chosen) > MAX_EXPLAINED:
        lines.append(f"({len(chosen) - MAX_EXPLAINED} more numbers match {selector!r}: narrow it, or give a position)")
    return lines
