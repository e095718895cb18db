"""The measurement runner: expand patterns into plans, refuse sizes that do not fit, run each plan on
an engine until its statistics are tight (or its time budget ends), and record every result —
measured, waived or failed — in a RunRecord.

Methodology (the engine does the device side: start gate, device events, its own warm-up):

* everything is planned, waived and checked against free memory **before** the first allocation;
* each (plan, size) runs in batches: ``min_reps`` first (with ``warmup`` untimed iterations and the
  data check), then growing batches until the 95% confidence half-width of the mean time of every
  measured transfer (and of the group) is below ``target_ci_rel``, or ``time_budget_s`` (wall clock,
  ``clock``) is spent, or ``max_reps`` is reached;
* bandwidth per repetition = moved bytes / device elapsed time of that transfer; an aggregate
  (per receiver, per sender, group sum, ``bi`` pair total) = its total bytes / the group's elapsed
  time (first start to last end) in the same repetition;
* an exception from the engine for one plan becomes ``error`` entries with its message (the run goes
  on); ``BackendUnavailable`` becomes ``waived``; a failed data check is an ``error``;
* after every job (one size of one group; every ``jobs // MAX_CHECKPOINTS`` jobs in long runs) the
  runner calls ``on_partial(record)`` with what was measured so far and ``complete=False`` (the
  sweep's checkpoint, ``measure.sweep.Checkpoint``); on KeyboardInterrupt it calls it once more and
  re-raises;
* waivers are the same for every engine: the pattern's, the topology's peer access, then the
  engine's ``waiver`` (a UserError from it is a waiver too, never an abort);
* a method whose runtime needs an environment this engine's runtime did not start with (the method
  table's ``env``, e.g. ``ce-blit`` on AMD: ``HSA_ENABLE_SDMA=0``) runs in a child process with it
  (``measure.child``); its entries are merged in run order.

Nothing here reads the environment or prints: progress goes to the injected ``progress`` callback.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

from ..engines.base import EngineCapabilities, GroupResult, MethodInfo, TransferEngine
from ..errors import BackendUnavailable, ConfigError, MeasurementError, TopologyError, UserError
from ..patterns.base import Pattern, peer_waiver, select_gpus
from ..patterns.methods import CE, DEFAULT_METHOD, LATENCY_COPY, LATENCY_KINDS_TABLE
from ..patterns.plan import ALL, HOST, Endpoint, Transfer, TransferPlan
from ..results.schema import Measurement, RunProvenance, RunRecord, Status, now_utc
from ..results.stats import Stats
from ..topology import query
from ..topology.model import LinkKind, Topology
from ..units import GB, format_size
from .options import MeasureOptions

ProgressFn = Callable[[int, int, str], None]
PartialFn = Callable[[RunRecord], None]
Clock = Callable[[], float]


@dataclass(frozen=True)
class BenchSpec:
    """A pattern to expand for each method.

    Attributes:
        pattern: the pattern (``patterns.registry.resolve_pattern``).
        methods: method keys, in run order.
        direction: ``uni`` or ``bi``.
        gpus: GPU selection (topology indices); None = all.
    """

    pattern: Pattern
    methods: tuple[str, ...] = (DEFAULT_METHOD.key,)
    direction: str = "uni"
    gpus: tuple[int, ...] | None = None


@dataclass(frozen=True)
class _Job:
    plan: TransferPlan
    size_bytes: int
    waiver: str | None = None
    env: tuple[tuple[str, str], ...] = ()  # run in a child process with this environment


@dataclass
class _Samples:
    elapsed_s: list[list[float]]
    group_elapsed_s: list[float] = field(default_factory=list)
    moved_bytes: list[int] = field(default_factory=list)
    verified: list[bool | None] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ---- expansion --------------------------------------------------------------------------------
def _method_missing(caps: EngineCapabilities, method: str) -> str:
    offered = ", ".join(m.key for m in caps.methods) or "none"
    return f"method {method!r} is not offered by the {caps.name} engine (it offers: {offered})"


def _resize(plan: TransferPlan, size_bytes: int) -> TransferPlan:
    return replace(plan, transfers=tuple(replace(t, size_bytes=size_bytes) for t in plan.transfers))


def _plan_waiver(engine: TransferEngine, topology: Topology, plan: TransferPlan, info: MethodInfo,
                 *, in_child: bool = False) -> str | None:
    """Why one plan of an offered method cannot run here (peer access, engine), or None. A plan
    that runs in a child process is asked of the child's engine there (``in_child``)."""
    w = peer_waiver(topology, plan, info)
    if w:
        return w.reason
    if in_child:
        return None
    try:
        return engine.waiver(plan)
    except UserError as exc:  # every engine's bad plan is a waived row, never an abort
        return exc.one_line()


def _env_of(caps: EngineCapabilities, method: str, allow_child: bool) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(caps.env_missing(method).items())) if allow_child else ()


def expand(
    engine: TransferEngine,
    topology: Topology,
    plans_or_spec: BenchSpec | Pattern | Sequence[TransferPlan],
    sizes: Sequence[int] | None,
    *,
    allow_child: bool = True,
) -> list[_Job]:
    """Every (plan, size) in run order, with its waiver (pattern, peer access, engine) or None, and
    the environment of a child process where the method needs one."""
    caps = engine.capabilities()
    jobs: list[_Job] = []
    if isinstance(plans_or_spec, (list, tuple)):
        size_list: list[int | None] = list(sizes) if sizes else [None]
        for size in size_list:
            for plan in plans_or_spec:
                sized = _resize(plan, size) if size is not None else plan
                size_bytes = size if size is not None else max((t.size_bytes for t in plan.transfers), default=0)
                info = caps.method(sized.method)
                env = _env_of(caps, sized.method, allow_child) if info is not None else ()
                waiver = (_method_missing(caps, sized.method) if info is None
                          else _plan_waiver(engine, topology, sized, info, in_child=bool(env)))
                jobs.append(_Job(sized, size_bytes, waiver, env if waiver is None else ()))
        return jobs
    # lists and tuples of plans returned above: what is left is a spec or a pattern
    spec = plans_or_spec if isinstance(plans_or_spec, BenchSpec) else BenchSpec(cast("Pattern", plans_or_spec))
    gpus = select_gpus(topology, spec.gpus)
    if not sizes:
        raise ConfigError("no sizes to measure")
    for method in spec.methods:
        info = caps.method(method)
        pattern_waiver = _method_missing(caps, method) if info is None else None
        if pattern_waiver is None:  # does not depend on the size: asked once per method
            w = spec.pattern.applies_to(topology, gpus, info)
            pattern_waiver = w.reason if w else None
        for size in sizes:
            if pattern_waiver is not None:
                # one entry standing for the whole pattern: it could not be planned here
                plan = TransferPlan(spec.pattern.key, spec.direction, method, (Transfer(ALL, ALL, size),), "none", spec.pattern.key)
                jobs.append(_Job(plan, size, pattern_waiver))
                continue
            assert info is not None  # a method the engine lacks has its pattern_waiver
            env = _env_of(caps, method, allow_child)
            for plan in spec.pattern.plan(topology, gpus, size, method, spec.direction):
                waiver = _plan_waiver(engine, topology, plan, info, in_child=bool(env))
                jobs.append(_Job(plan, size, waiver, env if waiver is None else ()))
    return jobs


def check_memory(engine: TransferEngine, jobs: Iterable[_Job]) -> None:
    """Refuse, before anything is allocated, a plan whose buffers do not fit in a GPU's free memory."""
    need: dict[int, tuple[int, int, set[int]]] = {}
    for job in jobs:
        if job.waiver is not None:
            continue
        per_gpu: dict[int, tuple[int, int, set[int]]] = {}
        for t in job.plan.transfers:
            for end in {t.src, t.dst} if t.src != t.dst else (t.src, t.dst):
                if isinstance(end, int):
                    total, count, sizes = per_gpu.get(end, (0, 0, set()))
                    per_gpu[end] = (total + t.size_bytes, count + 1, sizes | {t.size_bytes})
        for gpu, value in per_gpu.items():
            if value[0] > need.get(gpu, (0, 0, set()))[0]:
                need[gpu] = value
    for gpu in sorted(need):
        total, count, sizes = need[gpu]
        free = engine.free_memory_bytes(gpu)
        if total > free:
            buffers = f"{count} buffer{'s' if count != 1 else ''}"
            what = (f"{format_size(next(iter(sizes)))} × {buffers}" if len(sizes) == 1
                    else f"{format_size(total)} in {buffers}")
            raise ConfigError(
                f"{what} does not fit in GPU {gpu}'s free memory ({format_size(free)} free)",
                hint="use a smaller size or fewer concurrent transfers",
            )


# ---- theoretical ------------------------------------------------------------------------------
def _host_device_id(topology: Topology, gpu: int) -> str | None:
    cpu = query.local_cpu(topology, gpu)
    return cpu.id if cpu else None


def theoretical_transfer_gb_per_s(topology: Topology, src: Endpoint, dst: Endpoint) -> float | None:
    """Per-direction bottleneck of the route (GB/s), None where it does not apply (local, unknown)."""
    try:
        if src == dst:
            return None
        if src == HOST and isinstance(dst, int):
            host = _host_device_id(topology, dst)
            value = query.theoretical_gb_per_s(topology, host, dst) if host else None
        elif dst == HOST and isinstance(src, int):
            host = _host_device_id(topology, src)
            value = query.theoretical_gb_per_s(topology, src, host) if host else None
        elif isinstance(src, int) and isinstance(dst, int):
            value = query.theoretical_gb_per_s(topology, src, dst)
        else:
            return None
    except TopologyError:
        return None
    if value is None or math.isinf(value) or math.isnan(value):
        return None
    return float(value)


def _hub_capacity_gb_per_s(topology: Topology, gpu: Endpoint) -> float | None:
    """Per-direction capacity of a GPU's fabric links (NVLink/xGMI), else of all its links."""
    if not isinstance(gpu, int):
        return None
    try:
        device = topology.gpu(gpu)
    except TopologyError:
        return None
    links = topology.links_of(device.id)
    fabric = [l.capacity_gb_per_s for l in links if l.kind in (LinkKind.NVLINK, LinkKind.XGMI)]
    chosen = fabric or [l.capacity_gb_per_s for l in links]
    return float(sum(chosen)) if chosen else None


# ---- aggregates -------------------------------------------------------------------------------
def _common(values: Sequence[Endpoint]) -> Endpoint:
    return values[0] if values and all(v == values[0] for v in values) else ALL


def aggregate_keys(plan: TransferPlan) -> list[tuple[Endpoint, Endpoint, tuple[int, ...], str]]:
    """Totals to report for a plan: (src, dst, indices into plan.transfers, kind)."""
    measured = [i for i, t in enumerate(plan.transfers) if t.role == "measured"]
    if plan.aggregate == "none" or len(measured) < 2:
        return []
    ts = plan.transfers
    if plan.aggregate in ("per_dst", "per_src"):
        attr = "dst" if plan.aggregate == "per_dst" else "src"
        groups: dict[Endpoint, list[int]] = {}
        for i in measured:
            groups.setdefault(getattr(ts[i], attr), []).append(i)
        out: list[tuple[Endpoint, Endpoint, tuple[int, ...], str]] = []
        for hub, idx in groups.items():
            other = _common([getattr(ts[i], "src" if attr == "dst" else "dst") for i in idx])
            src, dst = (other, hub) if attr == "dst" else (hub, other)
            out.append((src, dst, tuple(idx), plan.aggregate))
        return out
    ends = {frozenset((ts[i].src, ts[i].dst)) for i in measured}
    if plan.direction == "bi" and len(ends) == 1:
        first = ts[measured[0]]
        return [(first.src, first.dst, tuple(measured), "pair")]
    return [(_common([ts[i].src for i in measured]), _common([ts[i].dst for i in measured]), tuple(measured), "sum")]


def _aggregate_theoretical(topology: Topology, plan: TransferPlan, src: Endpoint, dst: Endpoint,
                           idx: Sequence[int], kind: str) -> float | None:
    flows = [theoretical_transfer_gb_per_s(topology, plan.transfers[i].src, plan.transfers[i].dst) for i in idx]
    if any(f is None for f in flows):
        return None
    total = float(sum(flows))  # type: ignore[arg-type]
    if kind == "pair":
        return total
    if kind in ("per_dst", "per_src"):
        hub = dst if kind == "per_dst" else src
        cap = _hub_capacity_gb_per_s(topology, hub)
        return min(total, cap) if cap else total
    return None


# ---- measuring one plan -----------------------------------------------------------------------
def _worst_ci(samples: _Samples, measured: Sequence[int]) -> float:
    series = [samples.elapsed_s[i] for i in measured]
    if len(measured) > 1:
        series.append(samples.group_elapsed_s)
    worst = 0.0
    for values in series:
        if len(values) < 2:
            return float("inf")
        worst = max(worst, Stats.from_samples(values).ci_half_width_rel())
    return worst


def _check_result(plan: TransferPlan, result: GroupResult, reps: int) -> None:
    if len(result.timings) != len(plan.transfers):
        raise MeasurementError(f"engine returned {len(result.timings)} timings for {len(plan.transfers)} transfers")
    for timing in result.timings:
        if len(timing.elapsed_s) != reps:
            raise MeasurementError(f"engine returned {len(timing.elapsed_s)} repetitions, asked for {reps}")
        if any(not (e > 0) or math.isinf(e) for e in timing.elapsed_s):
            raise MeasurementError(f"engine reported a non-positive or infinite time: {list(timing.elapsed_s)[:4]}")
    if len(result.group_elapsed_s) != reps or any(not (e > 0) for e in result.group_elapsed_s):
        raise MeasurementError("engine returned bad group times")


def measure_plan(engine: TransferEngine, plan: TransferPlan, options: MeasureOptions, clock: Clock) -> _Samples:
    """Repetitions in growing batches until the CI target, the time budget or max_reps."""
    measured = [i for i, t in enumerate(plan.transfers) if t.role == "measured"]
    samples = _Samples(elapsed_s=[[] for _ in plan.transfers])
    start = clock()
    batch = max(1, min(options.min_reps, options.max_reps))
    warmup, verify = options.warmup, options.verify
    n = 0
    while True:
        result = engine.run(plan, batch, warmup=warmup, verify=verify, chunk_bytes=options.chunk_bytes)
        _check_result(plan, result, batch)
        for i, timing in enumerate(result.timings):
            samples.elapsed_s[i].extend(timing.elapsed_s)
        samples.group_elapsed_s.extend(result.group_elapsed_s)
        if not samples.moved_bytes:
            samples.moved_bytes = [t.moved_bytes for t in result.timings]
            samples.verified = [t.verified for t in result.timings]
        samples.notes.extend(n for n in result.notes if n not in samples.notes)
        n += batch
        warmup, verify = min(options.warmup, 1), False  # data checked once; later batches only time
        if n >= options.max_reps:
            break
        spent = clock() - start
        if spent >= options.time_budget_s or _worst_ci(samples, measured) <= options.target_ci_rel:
            break
        per_rep = spent / n
        fit = int((options.time_budget_s - spent) / per_rep) if per_rep > 0 else n
        batch = max(1, min(options.max_reps - n, n, fit))
    return samples


def _bw_stats(moved_bytes: int, elapsed: Sequence[float]) -> Stats:
    return Stats.from_samples([moved_bytes / e / GB for e in elapsed])


def plan_measurements(
    topology: Topology,
    job: _Job,
    group: int,
    provenance: RunProvenance,
    *,
    samples: _Samples | None = None,
    status: Status = Status.OK,
    reason: str = "",
) -> list[Measurement]:
    """The entries of one (plan, size): one per measured transfer, then its totals."""
    plan = job.plan
    out: list[Measurement] = []
    base: dict[str, Any] = dict(method=plan.method, pattern=plan.pattern, direction=plan.direction, provenance=provenance, group=group)
    for i, t in enumerate(plan.transfers):
        if t.role != "measured":
            continue
        extra: dict[str, Any] = {"label": plan.label}
        theo = theoretical_transfer_gb_per_s(topology, t.src, t.dst)
        if theo is not None:
            extra["theoretical_gb_per_s"] = theo
        if samples is None:
            out.append(Measurement(src=t.src, dst=t.dst, size_bytes=t.size_bytes, status=status, reason=reason,
                                   scope="transfer", extra=extra, **base))
            continue
        verified = samples.verified[i]
        st, why = ((Status.ERROR, "data check failed: the destination did not hold the source data") if verified is False
                   else (Status.OK, ""))
        if samples.notes:
            extra["notes"] = list(samples.notes)
        out.append(Measurement(src=t.src, dst=t.dst, size_bytes=t.size_bytes, moved_bytes=samples.moved_bytes[i],
                               bandwidth=_bw_stats(samples.moved_bytes[i], samples.elapsed_s[i]) if samples.moved_bytes[i] > 0 else None,
                               status=st, reason=why, scope="transfer", verified=verified, extra=extra, **base))
    for src, dst, idx, kind in aggregate_keys(plan):
        extra = {"label": plan.label, "aggregate": kind, "flows": len(idx)}
        theo = _aggregate_theoretical(topology, plan, src, dst, idx, kind)
        if theo is not None:
            extra["theoretical_gb_per_s"] = theo
        if samples is None:
            out.append(Measurement(src=src, dst=dst, size_bytes=job.size_bytes, status=status, reason=reason,
                                   scope="total", extra=extra, **base))
            continue
        moved = sum(samples.moved_bytes[i] for i in idx)
        checks = [samples.verified[i] for i in idx]
        verified = None if all(v is None for v in checks) else all(v is not False for v in checks)
        st, why = (Status.ERROR, "data check failed in one of the transfers") if verified is False else (Status.OK, "")
        out.append(Measurement(src=src, dst=dst, size_bytes=job.size_bytes, moved_bytes=moved,
                               bandwidth=_bw_stats(moved, samples.group_elapsed_s) if moved > 0 else None,
                               status=st, reason=why, scope="total", verified=verified, extra=extra, **base))
    return out


# ---- the run ----------------------------------------------------------------------------------
def _provenance(caps: EngineCapabilities) -> RunProvenance:
    try:
        return RunProvenance(caps.provenance)
    except ValueError:
        return RunProvenance.MEASURED


def _topology_dict(topology: Topology) -> dict[str, Any]:
    from ..topology.io import to_dict

    return to_dict(topology)


def _error_reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _failure(exc: Exception) -> tuple[Status, str]:
    """What an exception from the engine records: ``waived`` when the backend cannot do it, else ``error``."""
    if isinstance(exc, BackendUnavailable):
        return Status.WAIVED, exc.one_line()
    return Status.ERROR, _error_reason(exc)


_J = TypeVar("_J")


MAX_CHECKPOINTS = 64
"""At most this many checkpoints per run (one every ``jobs // 64`` jobs, at least every job), so a
run of thousands of jobs does not rewrite a growing file thousands of times."""


def _run_jobs(
    record: RunRecord,
    jobs: Sequence[_J],
    label: Callable[[_J], str],
    entries: Callable[[int, _J], list[Measurement]],
    progress: ProgressFn | None,
    on_partial: PartialFn | None,
) -> RunRecord:
    """``record`` with the entries of every job, in order, reporting progress; after every job and on
    KeyboardInterrupt ``on_partial`` gets what was measured so far (``complete=False``); the
    interrupt goes on."""
    measurements: list[Measurement] = []
    every = max(1, len(jobs) // MAX_CHECKPOINTS)
    try:
        for i, job in enumerate(jobs):
            if progress is not None:
                progress(i, len(jobs), label(job))
            measurements.extend(entries(i, job))
            if on_partial is not None and i + 1 < len(jobs) and (i + 1) % every == 0:
                on_partial(record.with_(measurements=tuple(measurements), complete=False))
        if progress is not None:
            progress(len(jobs), len(jobs), "done")
    except KeyboardInterrupt:
        if on_partial is not None:
            on_partial(record.with_(measurements=tuple(measurements), complete=False))
        raise
    return record.with_(measurements=tuple(measurements))


def _job_label(job: _Job) -> str:
    return f"{job.plan.method} {job.plan.pattern} {job.plan.label} {format_size(job.size_bytes)}"


def run_bench(
    engine: TransferEngine,
    topology: Topology,
    plans_or_pattern: BenchSpec | Pattern | Sequence[TransferPlan],
    sizes: Sequence[int] | None,
    options: MeasureOptions,
    *,
    progress: ProgressFn | None = None,
    clock: Clock = time.perf_counter,
    on_partial: PartialFn | None = None,
    kind: str = "bench",
    context: Mapping[str, Any] | None = None,
    run_options: Mapping[str, Any] | None = None,
    group_offset: int = 0,
    allow_child: bool = True,
) -> RunRecord:
    """Run every plan at every size; one Measurement per measured transfer plus the plan's totals.

    Raises ConfigError (a UserError) before anything runs when a size does not fit in free memory.
    ``allow_child`` False: never start a child process (the child itself runs with it off).
    """
    caps = engine.capabilities()
    provenance = _provenance(caps)
    jobs = expand(engine, topology, plans_or_pattern, sizes, allow_child=allow_child)
    check_memory(engine, jobs)
    opts: dict[str, Any] = options.as_dict()
    opts.update({"engine": caps.name, "sizes_bytes": list(sizes or [])})
    if isinstance(plans_or_pattern, BenchSpec):
        opts.update({"pattern": plans_or_pattern.pattern.key, "methods": list(plans_or_pattern.methods),
                     "direction": plans_or_pattern.direction,
                     "gpus": list(plans_or_pattern.gpus) if plans_or_pattern.gpus is not None else None})
    opts.update(run_options or {})
    record = RunRecord(kind=kind, provenance=provenance, created_utc=now_utc(), context=dict(context or {}),
                       options=opts, topology=_topology_dict(topology))

    from_child = _run_children(engine, topology, jobs, options)

    def entries(i: int, job: _Job) -> list[Measurement]:
        group = group_offset + i
        if job.waiver is not None:
            return plan_measurements(topology, job, group, provenance, status=Status.WAIVED, reason=job.waiver)
        if job.env:
            got = from_child[i]
            if isinstance(got, str):
                return plan_measurements(topology, job, group, provenance, status=Status.ERROR, reason=got)
            # the environment the child's runtime started with stays beside the numbers
            return [replace(m, group=group, extra={**dict(m.extra or {}), "process_env": dict(job.env)}) for m in got]
        try:
            samples = measure_plan(engine, job.plan, options, clock)
        except Exception as exc:  # one failing plan must not lose the run (STYLE.md C5)
            status, reason = _failure(exc)
            return plan_measurements(topology, job, group, provenance, status=status, reason=reason)
        return plan_measurements(topology, job, group, provenance, samples=samples)

    return _run_jobs(record, jobs, _job_label, entries, progress, on_partial)


def _run_children(engine: TransferEngine, topology: Topology, jobs: Sequence[_Job],
                  options: MeasureOptions) -> dict[int, list[Measurement] | str]:
    """Entries of the jobs that need a child process (one child per distinct environment), by job
    index; a string is the reason the child could not give them."""
    by_env: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for i, job in enumerate(jobs):
        if job.env and job.waiver is None:
            by_env.setdefault(job.env, []).append(i)
    out: dict[int, list[Measurement] | str] = {}
    if not by_env:
        return out
    from .child import child_job, run_child

    factory = getattr(engine, "child_factory", None)
    for env, idx in by_env.items():
        if factory is None:
            why = f"the {engine.name} engine cannot start a child process for {', '.join(f'{k}={v}' for k, v in env)}"
            out.update({i: why for i in idx})
            continue
        try:
            groups = run_child(child_job(factory, topology, [jobs[i].plan for i in idx], options), dict(env))
        except (MeasurementError, UserError) as exc:
            out.update({i: _error_reason(exc) for i in idx})
            continue
        for i, entries in zip(idx, groups):
            out[i] = entries
    return out


# ---- latency ----------------------------------------------------------------------------------
def all_ordered_pairs(gpus: Sequence[int]) -> list[tuple[int, int]]:
    return [(a, b) for a in gpus for b in gpus if a != b]


def latency_pairs(kind: str, gpus: Sequence[int]) -> list[tuple[Endpoint, Endpoint]]:
    """The ends a latency kind runs between: host-read chases through host memory from each GPU; on
    one GPU a copy runs both ways between the host and the GPU; the other kinds run on GPU pairs."""
    from ..patterns.methods import LATENCY_HOST_READ

    if kind == LATENCY_HOST_READ.key:
        return [(HOST, g) for g in gpus]
    if len(gpus) < 2:
        return [(HOST, g) for g in gpus] + [(g, HOST) for g in gpus]
    return list(all_ordered_pairs(gpus))


_PEER_LATENCY_KINDS = frozenset(k.key for k in LATENCY_KINDS_TABLE if k.needs_peer_access)


def pair_peer_waiver(engine: TransferEngine, topology: Topology | None, a: int, b: int) -> str | None:
    """Why GPUs ``a`` and ``b`` have no peer access (the topology's recorded pairs, then the engine's own
    answer for a peer copy: the one truth the matrices are waived by), or None when they have it."""
    probe = TransferPlan("probe", "uni", CE.key, (Transfer(a, b, 8),), "none", f"{a}->{b}")
    recorded = peer_waiver(topology, probe, CE) if topology is not None else None
    if recorded is not None:
        return recorded.reason.split(";")[0]
    try:
        answer = engine.waiver(probe)
    except UserError:
        return None
    return answer if answer and "no peer access" in answer.lower() else None


def _latency_peer_waiver(engine: TransferEngine, topology: Topology | None, kind: str, a: Endpoint, b: Endpoint) -> str | None:
    """Why latency ``kind`` cannot run between GPUs ``a`` and ``b``: it goes through a peer mapping
    (the latency table's ``needs_peer_access``) and the pair has none; else None."""
    if kind not in _PEER_LATENCY_KINDS or not (isinstance(a, int) and isinstance(b, int)) or a == b:
        return None
    reason = pair_peer_waiver(engine, topology, a, b)
    if reason is None:
        return None
    return f"{reason}; latency kind {kind!r} needs a peer mapping (the staged path: bench latency --kind copy --method ce-nopeer)"


def run_latency(
    engine: TransferEngine,
    kind: str | Sequence[str],
    pairs: Sequence[tuple[Endpoint, Endpoint]] | Mapping[str, Sequence[tuple[Endpoint, Endpoint]]] | None,
    options: MeasureOptions,
    *,
    topology: Topology | None = None,
    method: str | None = None,
    size_bytes: int = 8,
    progress: ProgressFn | None = None,
    clock: Clock = time.perf_counter,
    on_partial: PartialFn | None = None,
    context: Mapping[str, Any] | None = None,
    run_options: Mapping[str, Any] | None = None,
    group_offset: int = 0,
) -> RunRecord:
    """Latency in microseconds per (kind, pair): ``remote-read`` (device pointer chase over peer memory),
    ``flag-pingpong`` (one-way flag latency between two GPUs), ``copy`` (host-issued copy of
    ``size_bytes`` with ``method``), ``host-read`` (pointer chase from GPU ``dst`` through pinned host
    memory, src ``host``). Entries have pattern ``latency`` and method = the kind (or the copy method
    for ``copy``). ``pairs``: one list for every kind, or a list per kind (``host-read`` runs from the
    host, the pair kinds between GPUs); None: every ordered GPU pair."""
    caps = engine.capabilities()
    provenance = _provenance(caps)
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    if pairs is None:
        count = topology.gpu_count if topology is not None else engine.gpu_count()
        pairs = all_ordered_pairs(range(count))
    pairs_of = {k: list(pairs[k] if isinstance(pairs, Mapping) else pairs) for k in kinds}
    if topology is not None:
        for a, b in (pair for listed in pairs_of.values() for pair in listed):
            for end in (a, b):
                if isinstance(end, int):
                    topology.gpu(end)
    jobs = [(k, a, b) for k in kinds for a, b in pairs_of[k]]
    opts: dict[str, Any] = options.as_dict()
    opts.update({"engine": caps.name, "latency_kinds": list(kinds), "method": method, "size_bytes": size_bytes})
    opts.update(run_options or {})
    record = RunRecord(kind="latency", provenance=provenance, created_utc=now_utc(), context=dict(context or {}),
                       options=opts, topology=_topology_dict(topology) if topology is not None else None)

    def entries(i: int, job: tuple[str, Endpoint, Endpoint]) -> list[Measurement]:
        k, a, b = job
        entry_method = (method or DEFAULT_METHOD.key) if k == LATENCY_COPY.key else k
        common: dict[str, Any] = dict(src=a, dst=b, method=entry_method, pattern="latency", direction="uni",
                      size_bytes=size_bytes if k == LATENCY_COPY.key else 0, provenance=provenance,
                      group=group_offset + i, scope="transfer", extra={"latency_kind": k})
        if k not in caps.latency_kinds:
            offered = ", ".join(caps.latency_kinds) or "none"
            return [Measurement(status=Status.WAIVED, reason=f"latency kind {k!r} is not offered by the {caps.name} engine (it offers: "
                                                             f"{offered})", **common)]
        if k == LATENCY_COPY.key and caps.method(entry_method) is None:
            return [Measurement(status=Status.WAIVED, reason=_method_missing(caps, entry_method), **common)]
        no_peer = _latency_peer_waiver(engine, topology, k, a, b)
        if no_peer is not None:
            return [Measurement(status=Status.WAIVED, reason=no_peer, **common)]
        try:
            values = engine.latency_us(k, a, b, method=entry_method if k == LATENCY_COPY.key else method, size_bytes=size_bytes,
                                       reps=options.latency_reps, warmup=options.warmup)
            stats = Stats.from_samples(values)
            if stats.min <= 0:
                raise MeasurementError(f"non-positive latency sample {stats.min}")
        except Exception as exc:
            status, reason = _failure(exc)
            return [Measurement(status=status, reason=reason, **common)]
        return [Measurement(latency=stats, moved_bytes=size_bytes if k == LATENCY_COPY.key else 0, **common)]

    return _run_jobs(record, jobs, lambda job: f"latency {job[0]} {job[1]}->{job[2]}", entries, progress, on_partial)
