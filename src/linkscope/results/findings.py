"""Plain-language findings from a run: the slowest pair and by how much, efficiency against the
topology's theoretical bandwidth, contention factors (a flow's bandwidth in a concurrent pattern /
its bandwidth alone), missing peer access, latency, host links, and whether the fabric is uniform.

Pure: reads a RunRecord (and optionally its Topology), returns sentences.
"""
from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence

from ..patterns.methods import (
    D2H,
    D2H_PAGEABLE,
    DEFAULT_METHOD,
    H2D,
    H2D_PAGEABLE,
    LATENCY_KINDS_TABLE,
    find_method,
    keys_where,
    latency_timing,
    unit_name,
)
from ..results.schema import Measurement, RunProvenance, RunRecord, Status
from ..units import format_size

UNIFORM_SPREAD = 0.05  # pairs within 5% of the median count as alike
CONCURRENT_PATTERNS = ("pairs", "ring", "all-to-one", "one-to-all", "all-to-all", "file")


def _ok_bw(ms: Iterable[Measurement]) -> list[Measurement]:
    return [m for m in ms if m.status is Status.OK and m.bandwidth is not None]


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _gb(x: float) -> str:
    return f"{x:.1f} GB/s"


def _matrix_entries(record: RunRecord, method: str, direction: str) -> list[Measurement]:
    """OK matrix entries of one method and direction at the largest size measured."""
    scope = "total" if direction == "bi" else "transfer"
    ms = _ok_bw(m for m in record.measurements
                if m.pattern == "matrix" and m.method == method and m.direction == direction and m.scope == scope
                and isinstance(m.src, int) and isinstance(m.dst, int))
    if not ms:
        return []
    size = max(m.size_bytes for m in ms)
    return [m for m in ms if m.size_bytes == size]


def _methods_in_order(record: RunRecord) -> list[str]:
    seen: list[str] = []
    for m in record.measurements:
        if m.pattern == "matrix" and m.method not in seen:
            seen.append(m.method)
    return sorted(seen, key=lambda k: (k != DEFAULT_METHOD.key, seen.index(k)))


PairClasses = Mapping[tuple[int, int], tuple[str, float]]


def _pair_list(pairs: Iterable[tuple[int, int]], limit: int = 8) -> str:
    """``GPU0–GPU4, GPU0–GPU5 …`` (unordered pairs, sorted, the first ``limit``)."""
    ordered = sorted(pairs)
    return ", ".join(f"GPU{a}–GPU{b}" for a, b in ordered[:limit]) + (" …" if len(ordered) > limit else "")


def _unmeasured_pairs(record: RunRecord, measured: Iterable[tuple[int | str, int | str]]) -> set[tuple[int, int]]:
    """Unordered GPU pairs of the record's GPUs that have no entry in ``measured``."""
    gpus = sorted({e for m in record.measurements for e in (m.src, m.dst) if isinstance(e, int) and not isinstance(e, bool)})
    seen = {(min(a, b), max(a, b)) for a, b in measured if isinstance(a, int) and isinstance(b, int)}
    return {(a, b) for i, a in enumerate(gpus) for b in gpus[i + 1:] if (a, b) not in seen}


PREDICTED_RATIO_KEPT = 0.75  # a measured fastest/slowest ratio of at least this part of the links' ratio is "as predicted"
ENGINE_CAPPED_BELOW = 0.6  # the widest links' pairs below this part of their links: the method, not the fabric, limits


def _below_prediction(ms: Sequence[Measurement], pair_classes: PairClasses | None, method: str, vendor: str | None) -> str:
    """How the measured spread compares with the spread of the links' theoretical rates over the same
    pairs, and why it is smaller where the widest links' pairs are capped by what moves the bytes."""
    if not pair_classes:
        return ""
    theo = {(m.src, m.dst): pair_classes[(m.src, m.dst)][1] for m in ms  # type: ignore[index]
            if (m.src, m.dst) in pair_classes}
    if len(theo) < 2:
        return ""
    lo, hi = min(theo.values()), max(theo.values())
    values = [m.bandwidth.median for m in ms]  # type: ignore[union-attr]
    s, f = min(values), max(values)
    if not lo or not s:
        return ""
    if hi <= lo * (1 + UNIFORM_SPREAD):
        by_level: dict[str, list[float]] = {}
        for m in ms:
            if (m.src, m.dst) in pair_classes:
                by_level.setdefault(pair_classes[(m.src, m.dst)][0], []).append(m.bandwidth.median)  # type: ignore[index,union-attr]
        if len(by_level) < 2:
            return ""
        medians = sorted(((statistics.median(v), lvl) for lvl, v in by_level.items()), reverse=True)
        return (f"; every route's narrowest link is {_gb(hi)}, but the link levels differ: "
                + ", ".join(f"{lvl} {_gb(gb)}" for gb, lvl in medians) + " (median per level)")
    predicted, measured = hi / lo, f / s
    text = (f"; the topology's link levels predict {_gb(lo)} to {_gb(hi)} ({predicted:.1f}x), "
            f"measured {measured:.1f}x")
    if measured >= PREDICTED_RATIO_KEPT * predicted:
        return text + ", as predicted"
    widest = [m.bandwidth.median for m in ms if theo.get((m.src, m.dst)) == hi]  # type: ignore[union-attr]
    top = statistics.median(widest)
    info = find_method(method)
    if top < ENGINE_CAPPED_BELOW * hi and info is not None:
        return (text + f": {method} reaches only {_pct(top / hi)} of the widest links ({_gb(hi)}): each copy is capped near "
                f"{top:.0f} GB/s by the {unit_name(info.unit, vendor)} that moves it, not by the fabric")
    return text + ": the narrow routes lose less than their links predict"


def _pair_findings(record: RunRecord, method: str, uniform_topology: bool | None,
                   pair_classes: PairClasses | None = None, vendor: str | None = None) -> list[str]:
    """The slowest pair and whether the pairs are alike, over the pairs measured (the others are named:
    a pair without peer access is waived, so "uniform" never speaks for it)."""
    out: list[str] = []
    ms = _matrix_entries(record, method, "uni")
    if len(ms) < 2:
        return out
    if pair_classes:  # the topology's verdict over the measured pairs only
        classes = {pair_classes.get((m.src, m.dst)) for m in ms if isinstance(m.src, int) and isinstance(m.dst, int)}
        uniform_topology = None if None in classes else len(classes) <= 1
    size = format_size(ms[0].size_bytes)
    values = [m.bandwidth.median for m in ms]  # type: ignore[union-attr]
    slow = min(ms, key=lambda m: m.bandwidth.median)  # type: ignore[union-attr]
    fast = max(ms, key=lambda m: m.bandwidth.median)  # type: ignore[union-attr]
    s, f = slow.bandwidth.median, fast.bandwidth.median  # type: ignore[union-attr]
    median = statistics.median(values)
    spread = (f - s) / median if median else 0.0
    missing = _unmeasured_pairs(record, ((m.src, m.dst) for m in ms))
    not_measured = (f"; not measured: {len(missing)} GPU pair{'s' if len(missing) != 1 else ''} ({_pair_list(missing)}), "
                    f"see the waived entries" if missing else "")
    below = _below_prediction(ms, pair_classes, method, vendor)
    if spread > UNIFORM_SPREAD:  # a "slowest pair" among equals would be noise
        out.append(f"Slowest GPU pair ({method}, one way, {size}): GPU{slow.src} -> GPU{slow.dst} at {_gb(s)}, "
                   f"{_pct(1 - s / f)} below the fastest (GPU{fast.src} -> GPU{fast.dst}, {_gb(f)}).")
    if spread <= UNIFORM_SPREAD:
        tail = "" if uniform_topology is not False else f" although the topology has different link levels{below}"
        every = "all" if not missing else "the"
        out.append(f"The fabric looks uniform for {method} over the pairs measured: {every} {len(ms)} ordered pairs are within "
                   f"{_pct(spread)} of each other (median {_gb(median)}){tail}{not_measured}.")
    else:
        why = (" while the topology says every pair is alike: look at the slow pairs (a degraded link, clocks, or another job)"
               if uniform_topology else below if uniform_topology is False else "")
        out.append(f"The fabric is not uniform for {method}: pairs range from {_gb(s)} to {_gb(f)} ({_pct(spread)} spread){why}"
                   f"{not_measured}.")
    return out


def _efficiency_findings(record: RunRecord, method: str) -> list[str]:
    out = []
    for direction, what in (("uni", "one-way copies"), ("bi", "bidirectional pair totals")):
        ms = [m for m in _matrix_entries(record, method, direction) if m.extra.get("theoretical_gb_per_s")]
        if not ms:
            continue
        effs = [m.bandwidth.median / float(m.extra["theoretical_gb_per_s"]) for m in ms]  # type: ignore[union-attr]
        theos = sorted({round(float(m.extra["theoretical_gb_per_s"]), 1) for m in ms})
        theo_text = _gb(theos[0]) if len(theos) == 1 else f"{_gb(theos[0])}–{_gb(theos[-1])}"
        spread = f"; {_pct(min(effs))}–{_pct(max(effs))}" if len(effs) > 1 else ""
        out.append(f"{method} {what} reach {_pct(statistics.median(effs))} of the theoretical {theo_text} "
                   f"(median over {len(ms)} pair{'s' if len(ms) != 1 else ''}{spread}).")
    return out


def _alone(record: RunRecord, method: str) -> dict[tuple[int | str, int | str], dict[int, float]]:
    out: dict[tuple[int | str, int | str], dict[int, float]] = {}
    for m in _ok_bw(record.measurements):
        if (m.pattern == "matrix" and m.direction == "uni" and m.method == method and m.scope == "transfer"
                and m.bandwidth is not None):  # always so after _ok_bw; says so to the type checker
            out.setdefault((m.src, m.dst), {})[m.size_bytes] = m.bandwidth.median
    return out


#: Where a run's verdict lives (``RunRecord.extra[VERDICT_KEY]``, made by ``judge.headline``, read by the report).
VERDICT_KEY = "verdict"

#: The one definition of a concurrent group's total, read by the findings, the report's tables and
#: captions and the guide (tests/docs checks that the guide quotes it).
AGGREGATE_RATE = "aggregate rate"
AGGREGATE_RATE_MEANING = ("aggregate rate = all bytes the group moved / the group's elapsed time (first start to last end); "
                          "not the sum of the flows' own rates, which is larger when the flows end at different times")
#: The unit line of every table and report header: what a GB/s figure is, and the two exceptions.
RATE_UNIT_NOTE = ("GB/s = 10^9 B/s per direction, except where marked pair total (both directions of a pair) "
                  "or aggregate rate (a concurrent group's bytes / its elapsed time)")


def _gpu_span(gpus: Iterable[int]) -> str:
    return _gpu_set(sorted(set(gpus)))


def _group_parts(flows: list[Measurement], totals: list[Measurement], pattern: str) -> tuple[float | None, float | None, list[int]]:
    """(sum of the flows' median rates, median aggregate rate, GPUs) of one concurrent group."""
    gpus = [e for m in flows for e in (m.src, m.dst) if isinstance(e, int) and not isinstance(e, bool)]
    flow_rates = [m.bandwidth.median for m in flows if m.bandwidth is not None]
    total_rates = [m.bandwidth.median for m in totals if m.bandwidth is not None]
    flow_sum = float(sum(flow_rates)) if flow_rates else None
    aggregate = statistics.median(total_rates) if total_rates else None
    return flow_sum, aggregate, gpus


def _contention_findings(record: RunRecord) -> list[str]:
    """Per concurrent pattern: how much of its bandwidth alone each flow keeps, what the flows add to
    and the aggregate rate (``AGGREGATE_RATE_MEANING``), per group where the pattern ran as several
    groups one after another (the peer islands of a two-socket box, one receiver at a time)."""
    out = []
    keys: list[tuple[str, str, str]] = []
    for m in record.measurements:
        key = (m.pattern, m.method, m.direction)
        if m.pattern in CONCURRENT_PATTERNS and key not in keys:
            keys.append(key)
    all_gpus = {e for m in record.measurements for e in (m.src, m.dst) if isinstance(e, int) and not isinstance(e, bool)}
    no_peer = {frozenset(p) for p in _missing_peer_pairs(record)}
    for pattern, method, direction in keys:
        ms = [m for m in _ok_bw(record.measurements) if (m.pattern, m.method, m.direction) == (pattern, method, direction)]
        if not ms:
            continue
        size = max(m.size_bytes for m in ms)
        at_size = [m for m in ms if m.size_bytes == size]
        flows = [m for m in at_size if m.scope == "transfer"]
        alone = _alone(record, method)
        factors = []
        for m in flows:
            by_size = alone.get((m.src, m.dst))
            if by_size:
                ref = by_size.get(m.size_bytes) or by_size[max(by_size)]
                factors.append(m.bandwidth.median / ref)  # type: ignore[union-attr]
        by_group: dict[object, tuple[list[Measurement], list[Measurement]]] = {}
        for m in at_size:
            entry = by_group.setdefault(m.group if m.group is not None else (m.extra or {}).get("label"), ([], []))
            entry[0 if m.scope == "transfer" else 1].append(m)
        groups = [_group_parts(f, t, pattern) for f, t in by_group.values()]
        hub = {"all-to-one": "receiver", "one-to-all": "sender"}.get(pattern)
        label = f"{pattern} ({method}{', bi' if direction == 'bi' else ''}, {format_size(size)})"
        spans = [_gpu_span(g) for _, _, g in groups if g]
        if len(groups) > 1 and hub:
            where = f", one {hub} at a time ({len(groups)} {hub}s)"
        elif len(groups) > 1:
            sets = [set(g) for _, _, g in groups]
            islands = bool(no_peer) and all(frozenset((a, b)) in no_peer for i, x in enumerate(sets)
                                            for y in sets[i + 1:] for a in x for b in y)
            where = (f" on {len(groups)} GPU groups one after another ({'; '.join(spans)}"
                     f"{', the peer islands: no peer access between them' if islands else ''}): "
                     f"the figures are per group (median over the groups)")
        elif spans and len({e for _, _, g in groups for e in g}) < len(all_gpus):
            where = f" on {spans[0]} only"
        else:
            where = ""
        parts = []
        if factors:
            parts.append(f"each flow gets {statistics.median(factors):.2f}× its bandwidth alone "
                         f"(median over {len(factors)} flow{'s' if len(factors) != 1 else ''})")
        sums = [s for s, _, _ in groups if s is not None]
        aggs = [a for _, a, _ in groups if a is not None]
        per = f" per {hub}" if hub else ""
        if sums and len(flows) > 1:
            parts.append(f"the flows' rates add to {_gb(statistics.median(sums))}{per}")
        if aggs:
            agg = statistics.median(aggs)
            text = f"{AGGREGATE_RATE}{per} (bytes / elapsed) {_gb(agg)}"
            theos = [float(m.extra["theoretical_gb_per_s"]) for m in at_size if m.scope == "total" and m.extra.get("theoretical_gb_per_s")]
            if theos:
                text += f" ({_pct(agg / statistics.median(theos))} of the theoretical {_gb(statistics.median(theos))})"
            if sums and agg < 0.97 * statistics.median(sums):
                text += ", lower than the sum because the slowest flow sets the elapsed time"
            parts.append(text)
        if parts:
            out.append(f"{label[0].upper()}{label[1:]}{where}: {'; '.join(parts)}.")
    return out


_NO_PEER = re.compile(r"no peer access between GPU (\d+) and GPU (\d+)", re.IGNORECASE)


def _peer_measured_pairs(record: RunRecord) -> set[tuple[int, int]]:
    """Unordered GPU pairs measured OK with a method (or latency kind) that needs peer access."""
    peer_methods = set(keys_where(needs_peer_access=True)) | {k.key for k in LATENCY_KINDS_TABLE if k.needs_peer_access}
    out = set()
    for m in record.measurements:
        if (m.status is Status.OK and m.method in peer_methods and isinstance(m.src, int) and isinstance(m.dst, int)
                and not isinstance(m.src, bool) and not isinstance(m.dst, bool) and m.src != m.dst):
            out.add((min(m.src, m.dst), max(m.src, m.dst)))
    return out


def _peer_groups(gpus: Iterable[int], pairs: set[tuple[int, int]]) -> list[list[int]]:
    """GPUs joined by peer access measured (connected components, each sorted; singletons left out)."""
    parent = {g: g for g in gpus}

    def root(g: int) -> int:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    for a, b in pairs:
        if a in parent and b in parent:
            parent[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for g in sorted(parent):
        groups.setdefault(root(g), []).append(g)
    return sorted((grp for grp in groups.values() if len(grp) > 1), key=lambda grp: grp[0])


def _gpu_set(gpus: Sequence[int]) -> str:
    if len(gpus) > 2 and list(gpus) == list(range(gpus[0], gpus[-1] + 1)):
        return f"GPU{gpus[0]}–GPU{gpus[-1]}"
    return ", ".join(f"GPU{g}" for g in gpus)


def _missing_peer_pairs(record: RunRecord) -> set[tuple[int, int]]:
    """Unordered GPU pairs a waiver names as lacking peer access, less those measured with it."""
    missing: set[tuple[int, int]] = set()
    for m in record.measurements:
        if m.status is not Status.OK:
            for a, b in _NO_PEER.findall(m.reason or ""):
                missing.add((min(int(a), int(b)), max(int(a), int(b))))
    return missing - _peer_measured_pairs(record)


def _peer_findings(record: RunRecord) -> list[str]:
    """Which pairs lack peer access: the pair a waiver names (not the entry's ends: a ring is waived for one
    pair of its group), less every pair that was measured with peer access."""
    methods = {m.method for m in record.measurements if m.status is not Status.OK and _NO_PEER.search(m.reason or "")}
    measured = _peer_measured_pairs(record)
    missing = _missing_peer_pairs(record)
    if missing:
        gpus = {g for pair in missing | measured for g in pair}
        groups = _peer_groups(gpus, measured)
        within = (f"; peer access works within {' and within '.join(_gpu_set(g) for g in groups)}"
                  if groups and len(groups) > 1 else "")
        return [f"Peer access (P2P) is missing for {len(missing)} GPU pair{'s' if len(missing) != 1 else ''} "
                f"({_pair_list(missing)}){within}: {', '.join(sorted(methods))} could not run there; "
                f"ce-nopeer or staged-pinned still move data through the host."]
    if measured:
        return ["Peer access works between every GPU pair measured."]
    return []


HOST_LATENCY_KINDS = ("host-read",)  # reported with the host link (``_host_findings``)


def _latency_findings(record: RunRecord) -> list[str]:
    out = []
    by_method: dict[str, list[float]] = {}
    for m in record.measurements:
        if m.pattern == "latency" and m.status is Status.OK and m.latency is not None and m.method not in HOST_LATENCY_KINDS:
            by_method.setdefault(m.method, []).append(m.latency.median)
    names = {"remote-read": "Device remote-read latency", "flag-pingpong": "Flag latency"}
    for method, values in by_method.items():
        name = f"{names.get(method, f'{method} copy latency')} ({latency_timing(method)})"
        rng = f" ({min(values):.2f}–{max(values):.2f} over {len(values)} pairs)" if len(values) > 1 else ""
        out.append(f"{name}: median {statistics.median(values):.2f} us{rng}.")
    return out


def _gpu_end(m: Measurement) -> int | None:
    for end in (m.src, m.dst):
        if isinstance(end, int) and not isinstance(end, bool):
            return end
    return None


def _per_gpu(ms: Iterable[Measurement], *, latency: bool = False) -> dict[int, Measurement]:
    """The largest-size entry of each GPU (bandwidth entries, or latency entries)."""
    out: dict[int, Measurement] = {}
    for m in ms:
        ok = m.status is Status.OK and (m.latency is not None if latency else m.bandwidth is not None)
        g = _gpu_end(m)
        if ok and g is not None and (g not in out or m.size_bytes > out[g].size_bytes):
            out[g] = m
    return out


HOST_LINES = ((H2D.key, "pinned h2d"), (D2H.key, "pinned d2h"), (H2D_PAGEABLE.key, "pageable h2d"), (D2H_PAGEABLE.key, "pageable d2h"))


def _gpu_names(record: RunRecord) -> set[str]:
    """Product names of the embedded topology's GPUs."""
    return {str(d.get("name") or "") for d in (record.topology or {}).get("devices", [])
            if isinstance(d, dict) and d.get("kind") == "gpu"}


def _local_copy_note(record: RunRecord, median_gb_per_s: float) -> str:
    """A device-local copy rate against what this GPU model reaches (the facts table,
    ``topology.gpufacts``: measured or assumed, it says which); a GPU model without facts says so, and
    a simulated run then used the model's default memory bandwidth."""
    from ..topology.gpufacts import gpu_facts, no_facts_reason

    names = _gpu_names(record)
    facts = {gpu_facts(n) for n in names}
    if len(facts) == 1 and None not in facts:
        row = next(iter(facts))
        if row is not None and row.local_copy_gb_per_s:
            return (f" ({_pct(median_gb_per_s / row.local_copy_gb_per_s)} of the {_gb(row.local_copy_gb_per_s)} "
                    f"listed for {row.name}, {row.local_copy_provenance})")
    if record.provenance is RunProvenance.SIMULATED:
        unknown = sorted(n for n in names if gpu_facts(n) is None)
        why = no_facts_reason(unknown[0]) if unknown else "the GPUs differ"
        return f" (the model's default memory bandwidth: {why})"
    return ""


def _host_findings(record: RunRecord) -> list[str]:
    """What each GPU gets from the host: pinned and pageable one way, both ways at once, the
    device-local copy and the host latency (medians over GPUs; the slowest GPU where they differ)."""
    host = [m for m in record.measurements if m.pattern == "host"]
    lines: list[tuple[str, dict[int, Measurement], bool]] = []
    known = {k for k, _ in HOST_LINES}
    for key, name in HOST_LINES + tuple((k, k) for k in sorted({m.method for m in host} - known)):
        lines.append((name, _per_gpu(m for m in host if m.method == key and m.direction == "uni" and m.scope == "transfer"), False))
    lines.append(("both ways at once (pair total)", _per_gpu(m for m in host if m.direction == "bi" and m.scope == "total"), False))
    lines.append(("device-local copy", _per_gpu(m for m in record.measurements if m.pattern == "local"), False))
    host_read = (m for m in record.measurements if m.pattern == "latency" and m.method == "host-read")
    lines.append((f"host-read latency ({latency_timing('host-read')})", _per_gpu(host_read, latency=True), True))
    parts = []
    for name, by_gpu, is_latency in lines:
        if not by_gpu:
            continue
        values = {g: (m.latency.median if is_latency else m.bandwidth.median) for g, m in by_gpu.items()}  # type: ignore[union-attr]
        med = statistics.median(values.values())
        text = f"{name} {med:.2f} us" if is_latency else f"{name} {_gb(med)}"
        if name == "device-local copy":
            text += _local_copy_note(record, med)
        if not is_latency and name.startswith("pinned"):
            theos = [float(m.extra["theoretical_gb_per_s"]) for m in by_gpu.values() if m.extra.get("theoretical_gb_per_s")]
            if theos:
                text += f" ({_pct(med / statistics.median(theos))} of {_gb(statistics.median(theos))})"
        if len(values) > 1 and med and (max(values.values()) - min(values.values())) / med > UNIFORM_SPREAD:
            worst = max(values, key=values.get) if is_latency else min(values, key=values.get)  # type: ignore[arg-type]
            text += f" (slowest GPU{worst} at {values[worst]:.2f} us)" if is_latency else f" (slowest GPU{worst} at {_gb(values[worst])})"
        parts.append(text)
    if not parts:
        return []
    gpus = {g for _, by_gpu, _ in lines for g in by_gpu}
    who = f"GPU{next(iter(gpus))}" if len(gpus) == 1 else f"per GPU (median over {len(gpus)})"
    return [f"Host <-> device, {who}: {', '.join(parts)}."]


def _gpu_pcie_states(record: RunRecord) -> dict[int, dict[str, int]]:
    """``pcie_link`` of each GPU of the embedded topology, with the current state read right after
    the host copies (``extra["pcie_after_host_copies"]``) where the survey has it."""
    out: dict[int, dict[str, int]] = {}
    for d in (record.topology or {}).get("devices", []):
        attrs = d.get("attributes") or {}
        if d.get("kind") == "gpu" and isinstance(d.get("index"), int) and isinstance(attrs.get("pcie_link"), dict):
            out[d["index"]] = dict(attrs["pcie_link"])
    loaded = (record.extra or {}).get("pcie_after_host_copies") or {}
    for key, state in loaded.items():
        try:
            g = int(key)
        except ValueError:
            continue
        entry = out.setdefault(g, {})
        if state.get("gen"):
            entry["loaded_generation"] = int(state["gen"])
        if state.get("width"):
            entry["loaded_width"] = int(state["width"])
        for src, dst in (("max_gen", "max_generation"), ("max_width", "max_width"), ("gpu_max_gen", "gpu_max_generation")):
            if state.get(src) and dst not in entry:
                entry[dst] = int(state[src])
    return out


def _healthy_pcie_text(st: dict[str, int]) -> str:
    loaded = "loaded_generation" in st
    gen = st.get("loaded_generation") or st.get("current_generation")
    width = st.get("loaded_width") or st.get("current_width")
    max_gen, max_width = st.get("max_generation"), st.get("max_width") or width
    if not max_gen:
        return f"Gen{gen} x{width} (NVML gave no maximum to compare with)"
    if (gen, width) == (max_gen, max_width):
        return f"Gen{gen} x{width}, its maximum{' (read right after the host copies)' if loaded else ''}"
    return (f"Gen{gen} x{width} at discovery, Gen{max_gen} x{max_width} possible: idle GPUs lower the PCIe generation, "
            f"and the host copies show no loss")


FULL_WIDTH = 16  # datacenter and workstation GPUs are x16 parts


def _pcie_findings(record: RunRecord) -> list[str]:
    """Is each GPU's PCIe link at the generation and width it could have? (NVML's current vs maximum,
    read at discovery and, in a survey, again right after the host copies, when an idle GPU's
    power-saving lower generation has gone back up.)"""
    from ..topology.pcie import pcie_gen_gb_per_s

    states = _gpu_pcie_states(record)
    if not states:
        return []
    pinned = _per_gpu(m for m in record.measurements if m.pattern == "host" and m.method in (H2D.key, D2H.key)
                      and m.direction == "uni" and m.scope == "transfer")
    out: list[str] = []
    healthy: list[int] = []
    for g, st in sorted(states.items()):
        gen = st.get("loaded_generation") or st.get("current_generation")
        width = st.get("loaded_width") or st.get("current_width")
        max_gen, max_width, gpu_gen = st.get("max_generation"), st.get("max_width"), st.get("gpu_max_generation")
        if not gen or not width:
            continue
        problems = []
        if max_width and width < max_width:
            problems.append(f"runs x{width} of x{max_width} possible: the link trained narrower (reseat the card, check the riser or slot)")
        elif (max_width or width) < FULL_WIDTH:
            problems.append(f"can link at most x{max_width or width}: if this is an x{FULL_WIDTH} GPU it sits in a narrower slot or riser")
        if max_gen and gen < max_gen:
            under_load = "loaded_generation" in st
            measured = pinned.get(g)
            full = pcie_gen_gb_per_s(max_gen, max_width or width)
            measured_gb_per_s = measured.bandwidth.median if measured is not None and measured.bandwidth is not None else None
            low = measured_gb_per_s is not None and full and measured_gb_per_s < 0.6 * full
            if under_load or low:
                seen = "right after the host copies" if under_load else "at discovery"
                got = ""
                if measured_gb_per_s is not None and full:
                    got = (f"; pinned copies reach {_gb(measured_gb_per_s)} of the {_gb(full)} "
                           f"a Gen{max_gen} x{max_width or width} link gives")
                problems.append(f"runs Gen{gen} of Gen{max_gen} possible ({seen}){got}: the link is downtrained")
        if gpu_gen and max_gen and max_gen < gpu_gen:
            problems.append(f"the GPU supports Gen{gpu_gen} but the slot or platform allows only Gen{max_gen}")
        if problems:
            out.append(f"GPU{g} PCIe link: " + "; ".join(problems) + ".")
        else:
            healthy.append(g)
    by_text: dict[str, list[int]] = {}
    for g in healthy:
        by_text.setdefault(_healthy_pcie_text(states[g]), []).append(g)
    for text, gs in by_text.items():
        who = f"GPU{gs[0]}'s PCIe link" if len(gs) == 1 else (
            f"All {len(gs)} GPUs' PCIe links" if len(gs) == len(states) else f"PCIe links of {', '.join(f'GPU{g}' for g in gs)}")
        out.append(f"{who}: {text}.")
    return out


def _vendor(record: RunRecord) -> str | None:
    """The one vendor of the embedded topology's GPUs (None when mixed or unknown)."""
    vendors = {str(d.get("vendor") or "").lower() for d in (record.topology or {}).get("devices", [])
               if isinstance(d, dict) and d.get("kind") == "gpu"}
    return next(iter(vendors)) if len(vendors) == 1 and "" not in vendors else None


def findings(record: RunRecord, *, uniform_topology: bool | None = None,
             pair_classes: PairClasses | None = None) -> tuple[str, ...]:
    """Sentences for the survey; ``uniform_topology`` is ``topology.query.is_uniform`` where known;
    ``pair_classes`` (ordered GPU pair -> (level, theoretical GB/s)) lets the uniformity finding judge
    the topology over the pairs measured only."""
    out: list[str] = []
    if record.provenance is RunProvenance.SIMULATED:
        out.append("SIMULATED: these numbers come from the fabric model, not from hardware.")
    gpus = {e for m in record.measurements for e in (m.src, m.dst) if isinstance(e, int) and not isinstance(e, bool)}
    if len(gpus) == 1 and record.kind == "survey":
        out.append(f"One GPU (GPU{next(iter(gpus))}): no GPU pair to measure; the survey checks its host link and memory.")
    methods = _methods_in_order(record)
    vendor = _vendor(record)
    for i, method in enumerate(methods):
        if i == 0:
            out.extend(_pair_findings(record, method, uniform_topology, pair_classes, vendor))
        out.extend(_efficiency_findings(record, method))
    out.extend(_contention_findings(record))
    out.extend(_peer_findings(record))
    out.extend(_latency_findings(record))
    out.extend(_host_findings(record))
    out.extend(_pcie_findings(record))
    errors = [m for m in record.measurements if m.status is Status.ERROR]
    if errors:
        out.append(f"{len(errors)} entr{'y' if len(errors) == 1 else 'ies'} failed; the first: {errors[0].method} "
                   f"{errors[0].src} -> {errors[0].dst}: {errors[0].reason}")
    if not record.complete:
        out.append("The run was interrupted: these findings cover only what was measured.")
    return tuple(out)


def findings_for(record: RunRecord, topology: object | None = None) -> tuple[str, ...]:
    """``findings`` with the uniformity of ``topology`` (a Topology) filled in where given."""
    uniform: bool | None = None
    classes: dict[tuple[int, int], tuple[str, float]] = {}
    if topology is not None:
        from ..topology import query

        try:
            uniform = query.is_uniform(topology)  # type: ignore[arg-type]
            gpus = [g for g in topology.gpus if g.index is not None]  # type: ignore[attr-defined]
            for g in gpus:
                for h in gpus:
                    if g.index != h.index:
                        classes[(g.index, h.index)] = (query.pair_level(topology, g, h).code,  # type: ignore[arg-type]
                                                       round(query.theoretical_gb_per_s(topology, g, h), 6))  # type: ignore[arg-type]
        except Exception:  # a topology that cannot route: no opinion
            uniform, classes = None, {}
    return findings(record, uniform_topology=uniform, pair_classes=classes or None)


#: The openings of the sentences ``findings`` derives from a record's numbers, in this version's and the
#: earlier wordings ("Host <-> device per GPU (median)", "One-way flag latency", "total for the group"):
#: what a report re-derives. Any other stored line is a note of what happened while the run was taken
#: (a re-measurement, the health section, link errors, an interruption) and is kept as written.
#: tests/results/test_findings.py checks that every sentence ``findings`` makes matches.
_DERIVED = re.compile(
    r"(SIMULATED: these numbers |One GPU \(GPU\d+\)|Slowest GPU pair \(|The fabric (looks uniform|is not uniform) for "
    r"|\S+ (one-way copies|bidirectional pair totals) reach "
    r"|(" + "|".join(re.escape(p[0].upper() + p[1:]) for p in CONCURRENT_PATTERNS) + r") \("
    r"|Peer access (works between|\(P2P\) is missing)|(Device remote-read|One-way flag|Flag) latency|\S+ copy latency \("
    r"|Host <-> device|GPU\d+ PCIe link: (runs |can link |the GPU supports )|GPU\d+'s PCIe link: |All \d+ GPUs' PCIe links: "
    r"|PCIe links of GPU|\d+ entr(y|ies) failed; the first: |The run was interrupted: these findings )")


def is_derived(line: str) -> bool:
    """Whether ``line`` is a sentence ``findings`` derives from the numbers (``_DERIVED``)."""
    return _DERIVED.match(line) is not None


def rederived(record: RunRecord) -> tuple[str, ...]:
    """The findings of ``record`` as this version states them: derived again from its numbers, its own
    topology and today's facts table (an old record's "total for the group" or borrowed device-local
    figure is not repeated), then the record's notes as stored. A record that never had derived
    findings (a bench or a peer tool's output, kind other than survey) keeps what it stored."""
    if record.kind != "survey" and not any(is_derived(f) for f in record.findings):
        return tuple(record.findings)
    topology = None
    if record.topology:
        from ..errors import UserError
        from ..topology.io import from_dict

        try:
            topology = from_dict(dict(record.topology))
        except UserError:
            topology = None
    return (*findings_for(record, topology), *(f for f in record.findings if not is_derived(f)))


__all__: Sequence[str] = ("findings", "findings_for", "is_derived", "rederived")


def method_comparison_lines(record: RunRecord, topology: object) -> list[str]:
    """One line per method of a multi-method record: what moves the bytes on this vendor (the method
    table), the median per pair level (e.g. XGMI4 / XGMI2 / XGMI1) and why the method's numbers
    differ from the others': a method whose best pairs reach only a small part of their links, and
    no more on wider links than on narrow ones, is capped by its engine, not by the fabric."""
    from ..patterns.methods import UNIT_TEXT, find_method
    from ..topology import query

    gpus = list(topology.gpus)  # type: ignore[attr-defined]
    vendors = {(g.vendor or "").lower() for g in gpus}
    vendor = next(iter(vendors)) if len(vendors) == 1 else None
    per_method: dict[str, dict[str, list[float]]] = {}
    theory: dict[str, list[float]] = {}
    for m in _ok_bw(record.measurements):
        if m.scope != "transfer" or not isinstance(m.src, int) or not isinstance(m.dst, int) or m.src == m.dst:
            continue
        level = query.pair_level(topology, m.src, m.dst).code  # type: ignore[arg-type]
        per_method.setdefault(m.method, {}).setdefault(level, []).append(m.bandwidth.median)  # type: ignore[union-attr]
        theo = m.extra.get("theoretical_gb_per_s") if m.extra else None
        if theo:
            theory.setdefault(level, []).append(float(theo))
    best_of = {key: max(statistics.median(v) for v in levels.values()) for key, levels in per_method.items()}
    lines: list[str] = []
    seen = list(dict.fromkeys(m.method for m in record.measurements))
    for key in seen:
        info = find_method(key)
        if info is None:
            continue
        meaning = info.meaning.get(vendor, info.description) if vendor else info.description
        line = f"{key}: {meaning}; moved by the {UNIT_TEXT[info.unit]}"
        levels = per_method.get(key)
        if levels and len(levels) > 1:
            medians = sorted(((statistics.median(v), lvl) for lvl, v in levels.items()), reverse=True)
            line += "; " + ", ".join(f"{lvl} {gb:.1f}" for gb, lvl in medians) + " GB/s"
            top_gb, top_level = medians[0]
            low_gb, _ = medians[-1]
            link_gb = statistics.median(theory[top_level]) if theory.get(top_level) else None
            spread = top_gb / low_gb if low_gb > 0 else 1.0
            if link_gb and top_gb < 0.6 * link_gb and spread < 1.5:
                line += (f": capped near {top_gb:.0f} GB/s whatever the link width ({top_gb / link_gb:.0%} of the "
                         f"{top_level} links): the engine, not the fabric, is the limit")
            elif spread >= 1.5:
                line += f": scales with the links ({spread:.1f}x from the narrowest to the widest pairs)"
            others = [best_of[k] for k in best_of if k != key]
            if others and top_gb > 0 and max(others) > 1.3 * top_gb:
                line += f"; the fastest method here is {max(others) / top_gb:.1f}x faster on its best pairs"
        lines.append(line)
    return lines
