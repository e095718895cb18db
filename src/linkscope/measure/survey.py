"""The default survey: one run that answers "how are these GPUs linked and what do the links deliver".

Steps (each skipped or waived with its reason where the engine or the machine cannot do it):

1. copy engine (``ce``) and SM (``sm-push``) matrices at ``size_bytes``, one way and bidirectional;
2. the latency matrix: device remote-read and one-way flag ping-pong, every ordered pair;
3. host <-> device per GPU, one GPU at a time (pattern ``host``): pinned (``h2d``, ``d2h``) and
   pageable (``h2d-pageable``, ``d2h-pageable``) one way, and both directions at once (``ce``,
   ``bi``: the pair total); then the PCIe link state is read (``pcie_probe``, e.g. NVML) while the
   link is still up to speed;
4. a device-local copy on each GPU (pattern ``local``): the memory reference line;
5. host <-> device latency per GPU: latency kind ``host-read`` (a GPU pointer chase through pinned
   host memory, like nvbandwidth's host_device_latency_sm), waived where the engine lacks it;
6. concurrent patterns with ``ce``: ``ring``, ``all-to-one``, ``all-to-all``; where some GPU pairs
   lack peer access, on each peer island and over every GPU with ``ce-nopeer`` (``concurrency``);
7. coarse size sweeps (pattern key ``sweep``): ``ce`` between GPU 0 and GPU 1, and every host
   method between the host and GPU 0.

With a diagnosis (``diagnose.survey.SurveyDiagnostics``: the CLI passes one on real GPUs of this
machine) a **p2p routing check** step follows the matrices (``ce-nopeer`` and ``staged-pinned`` on
every pair a->b, a<b), link error counters are read before the first step and after each one, and
the health section, the link issues and the suspects join the findings (docs/diagnose.md).

On one GPU the GPU-pair steps are left out and steps 3-5 and the host sweep answer "is this GPU's
PCIe link healthy and what do I get"; the findings compare the link state with its maximum.

The measurement options are chosen so the whole suite on 4 GPUs fits in about 20 s on real GPUs:
small per-plan time budgets, few warm-up iterations, and early stop once the 95% confidence
interval of the mean is within 0.5%.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..engines.base import TransferEngine
from ..errors import ConfigError
from ..patterns.base import Pattern
from ..patterns.builtin import ALL_TO_ALL, ALL_TO_ONE, HOST_REFERENCE, LOCAL, MATRIX, RING
from ..patterns.methods import (
    CE,
    D2H,
    D2H_PAGEABLE,
    H2D,
    H2D_PAGEABLE,
    LATENCY_FLAG,
    LATENCY_HOST_READ,
    LATENCY_REMOTE_READ,
    SM_PUSH,
    host_direction,
)
from ..patterns.methods import LOCAL as LOCAL_COPY
from ..patterns.plan import ALL, HOST, Transfer, TransferPlan
from ..results.findings import findings_for
from ..results.schema import Measurement, RunRecord, Status, now_utc
from ..topology.model import Topology
from ..units import KiB, MiB
from .concurrency import concurrent_specs
from .consistency import check_consistency
from .options import MeasureOptions
from .runner import (
    BenchSpec,
    Clock,
    PartialFn,
    ProgressFn,
    _provenance,
    _topology_dict,
    run_bench,
    run_latency,
)

SURVEY_MEASURE_OPTIONS = MeasureOptions(warmup=2, min_reps=5, max_reps=30, target_ci_rel=0.005,
                                        time_budget_s=0.15, verify=True, latency_reps=20)


@dataclass(frozen=True)
class SurveyOptions:
    """What the survey measures.

    Attributes:
        size_bytes: transfer size of the matrices, host lines and concurrent patterns.
        sweep_sizes_bytes: sizes of the one-pair sweep.
        peer_methods: GPU-to-GPU methods of the matrices (those the engine offers).
        host_methods: host<->device reference methods (one way, one GPU at a time).
        host_bi_method: method of the both-directions-at-once host line (a method with host ends).
        local_method: method of the device-local reference line.
        latency_kinds: device latency kinds measured over every ordered pair.
        host_latency_kind: latency kind measured between the host and each GPU.
        concurrent_patterns: pattern keys run with ``ce``.
        measure: repetition policy.
    """

    size_bytes: int = 512 * MiB  # nvbandwidth's buffer size, so numbers compare one to one
    sweep_sizes_bytes: tuple[int, ...] = (4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 256 * MiB, 512 * MiB)
    peer_methods: tuple[str, ...] = (CE.key, SM_PUSH.key)
    host_methods: tuple[str, ...] = (H2D.key, D2H.key, H2D_PAGEABLE.key, D2H_PAGEABLE.key)
    host_bi_method: str = CE.key
    local_method: str = LOCAL_COPY.key
    latency_kinds: tuple[str, ...] = (LATENCY_REMOTE_READ.key, LATENCY_FLAG.key)
    host_latency_kind: str = LATENCY_HOST_READ.key
    concurrent_patterns: tuple[str, ...] = ("ring", "all-to-one", "all-to-all")
    measure: MeasureOptions = field(default=SURVEY_MEASURE_OPTIONS)

    def as_dict(self) -> dict[str, Any]:
        return {
            "size_bytes": self.size_bytes,
            "sweep_sizes_bytes": list(self.sweep_sizes_bytes),
            "peer_methods": list(self.peer_methods),
            "host_methods": list(self.host_methods),
            "host_bi_method": self.host_bi_method,
            "local_method": self.local_method,
            "latency_kinds": list(self.latency_kinds),
            "host_latency_kind": self.host_latency_kind,
            "concurrent_patterns": list(self.concurrent_patterns),
        }


#: steps that load the host links; the PCIe probe runs after the last of them.
HOST_BANDWIDTH_STEPS = ("host", "host both ways")

_CONCURRENT: dict[str, Pattern] = {"ring": RING, "all-to-one": ALL_TO_ONE, "all-to-all": ALL_TO_ALL}

Step = Callable[[int, ProgressFn | None, PartialFn], RunRecord]
#: (method, pattern, direction) a step's entries carry; used for the waived entry of a step that cannot run.
StepEntry = tuple[str, str, str]


def _steps(engine: TransferEngine, topology: Topology, opts: SurveyOptions, clock: Clock,
           peer_check: tuple[str, ...] = ()) -> list[tuple[str, StepEntry, Step]]:
    """(name, entry, step) in run order. ``peer_check``: methods of the host-bounce check (every pair
    a->b, a<b, with each), run after the matrices where a diagnosis asks for it."""
    caps = engine.capabilities()
    offered = {m.key for m in caps.methods}
    m_opts = opts.measure
    size = opts.size_bytes
    steps: list[tuple[str, StepEntry, Step]] = []

    def bench(spec: BenchSpec | list[TransferPlan], sizes: list[int]) -> Step:
        return lambda offset, progress, partial: run_bench(engine, topology, spec, sizes, m_opts, progress=progress,
                                                           clock=clock, on_partial=partial, group_offset=offset)

    peer = [m for m in opts.peer_methods if m in offered] or list(opts.peer_methods[:1])
    for method in peer if topology.gpu_count >= 2 else ():  # one GPU: no pair to measure
        for direction in ("uni", "bi"):
            steps.append((f"{method} matrix {direction}", (method, "matrix", direction),
                          bench(BenchSpec(MATRIX, (method,), direction), [size])))
    if peer_check and topology.gpu_count >= 2:
        n = topology.gpu_count
        plans = [TransferPlan("p2p-check", "uni", m, (Transfer(a, b, size),), "none", f"{a}->{b}")
                 for m in peer_check for a in range(n) for b in range(a + 1, n)]
        steps.append(("p2p routing check", (peer_check[0], "p2p-check", "uni"), bench(plans, [size])))
    kinds = [k for k in opts.latency_kinds if k in caps.latency_kinds]
    if kinds and topology.gpu_count >= 2:
        steps.append(("latency", (kinds[0], "latency", "uni"), lambda offset, progress, partial: run_latency(
            engine, kinds, None, m_opts, topology=topology, progress=progress, clock=clock, on_partial=partial,
            group_offset=offset)))
    gpus = list(range(topology.gpu_count))
    host = tuple(m for m in opts.host_methods if m in offered)
    if host:
        steps.append(("host", (host[0], "host", "uni"), bench(BenchSpec(HOST_REFERENCE, host, "uni"), [size])))
    if opts.host_bi_method in offered and gpus:
        both = [TransferPlan("host", "bi", opts.host_bi_method, (Transfer(HOST, g, size), Transfer(g, HOST, size)), "sum",
                             f"{g}<->host") for g in gpus]
        steps.append(("host both ways", (opts.host_bi_method, "host", "bi"), bench(both, [size])))
    if opts.local_method in offered and gpus:
        steps.append(("local", (opts.local_method, "local", "uni"), bench(BenchSpec(LOCAL, (opts.local_method,), "uni"), [size])))
    if opts.host_latency_kind and gpus:
        # run_latency waives the kind (with the reason) where this engine does not offer it
        steps.append(("host latency", (opts.host_latency_kind, "latency", "uni"), lambda offset, progress, partial: run_latency(
            engine, [opts.host_latency_kind], [(HOST, g) for g in gpus], m_opts, topology=topology, progress=progress,
            clock=clock, on_partial=partial, group_offset=offset)))
    if topology.gpu_count >= 2:
        for key in opts.concurrent_patterns:
            pattern = _CONCURRENT.get(key)
            if pattern is not None:  # per peer island, and host-staged over every GPU, where some pairs lack P2P
                for name, spec in concurrent_specs(engine, topology, pattern, offered):
                    steps.append((name, (spec.methods[0], key, "uni"), bench(spec, [size])))
        sweep = [TransferPlan("sweep", "uni", CE.key, (Transfer(0, 1, size),), "none", "0->1")]
        steps.append((f"{CE.key} sweep 0->1", (CE.key, "sweep", "uni"), bench(sweep, list(opts.sweep_sizes_bytes))))
    if host and gpus:
        to_host = {m: host_direction(m) == D2H.key for m in host}
        host_sweep = [TransferPlan("sweep", "uni", m, (Transfer(0, HOST, size) if to_host[m] else Transfer(HOST, 0, size),),
                                   "none", "0->host" if to_host[m] else "host->0") for m in host]
        steps.append(("host sweep GPU0", (host[0], "sweep", "uni"), bench(host_sweep, list(opts.sweep_sizes_bytes))))
    return steps


def _merge(parts: list[RunRecord], base: RunRecord, complete: bool) -> RunRecord:
    measurements = tuple(m for part in parts for m in part.measurements)
    return base.with_(measurements=measurements, complete=complete and all(p.complete for p in parts))


def run_survey(
    engine: TransferEngine,
    topology: Topology,
    opts: SurveyOptions = SurveyOptions(),
    *,
    progress: ProgressFn | None = None,
    clock: Clock = time.perf_counter,
    on_partial: PartialFn | None = None,
    context: Mapping[str, Any] | None = None,
    pcie_probe: Callable[[], Mapping[str, Any]] | None = None,
    diagnostics: Any | None = None,
) -> RunRecord:
    """Run every step; one RunRecord of kind ``survey`` with findings. ``on_partial`` gets what was
    measured so far (complete=False) after every step (a checkpoint per job would rewrite the whole
    survey file hundreds of times), and on KeyboardInterrupt, with the interrupted step's finished
    jobs and the findings, before the interrupt propagates.

    ``pcie_probe`` (e.g. NVML's current PCIe generation and width per GPU index, see
    ``discovery.nvml.pcie_link_states``) is called right after the host copies, while the links are
    still up to speed (GPUs lower the PCIe generation when idle); its answer is kept in
    ``extra["pcie_after_host_copies"]`` for the findings.

    ``diagnostics`` (``diagnose.survey.SurveyDiagnostics``) samples link error counters before the
    first step and after each one, may add the host-bounce step, and adds the health section, the
    link issues and the suspects to ``extra`` and the findings."""
    caps = engine.capabilities()
    peer_check = diagnostics.peer_check_methods([m.key for m in caps.methods]) if diagnostics is not None else ()
    steps = _steps(engine, topology, opts, clock, peer_check)
    host_steps = [i for i, (name, _, _) in enumerate(steps) if name in HOST_BANDWIDTH_STEPS]
    probe_after = host_steps[-1] if host_steps and pcie_probe is not None else None
    extra: dict[str, Any] = {}
    run_options = {"survey": opts.as_dict(), "steps": [name for name, _, _ in steps], "engine": caps.name,
                   **opts.measure.as_dict()}

    base = RunRecord(kind="survey", provenance=_provenance(caps), created_utc=now_utc(), context=dict(context or {}),
                     options=run_options, topology=_topology_dict(topology))
    parts: list[RunRecord] = []
    step_of: dict[int, str] = {}  # group -> the step that measured it (self-consistency, measure/consistency.py)
    offset = 0
    if diagnostics is not None:
        diagnostics.start()
    for index, (name, entry, step) in enumerate(steps):
        captured: list[RunRecord] = []

        def step_progress(done: int, total: int, label: str, _i: int = index, _name: str = name) -> None:
            if progress is not None:  # counted in steps; the step's own transfers in its label
                inner = f" ({min(done + 1, total)} of {total})" if total > 1 and done < total else ""
                progress(_i, len(steps), f"{_name}: {label}{inner}")

        try:
            part = step(offset, step_progress, captured.append)
        except ConfigError as exc:  # e.g. this step's buffers do not fit: waive the step, keep what was measured
            if not parts:
                raise  # nothing measured yet: say so at once (exit 1), as bench does
            method, pattern, direction = entry
            size = max(opts.sweep_sizes_bytes) if pattern == "sweep" else opts.size_bytes
            waived = Measurement(src=ALL, dst=ALL, method=method, pattern=pattern, direction=direction, size_bytes=size,
                                 status=Status.WAIVED, reason=f"survey step '{name}' not run: {exc.one_line()}",
                                 provenance=base.provenance, group=offset, extra={"label": name})
            part = base.with_(measurements=(waived,))
        except KeyboardInterrupt:
            if on_partial is not None:
                partial = _merge(parts + captured[-1:], base, complete=False)
                on_partial(partial.with_(findings=findings_for(partial, topology), complete=False))
            raise
        parts.append(part)
        step_of.update({m.group: name for m in part.measurements if m.group is not None})
        if diagnostics is not None:
            diagnostics.after_step(name, loaded=name in HOST_BANDWIDTH_STEPS)
        if index == probe_after:
            try:
                extra["pcie_after_host_copies"] = {str(k): dict(v) for k, v in pcie_probe().items()}  # type: ignore[misc]
            except Exception as exc:
                extra["pcie_after_host_copies_error"] = str(exc)
        if on_partial is not None and index + 1 < len(steps):
            on_partial(_merge(parts, base, complete=False))
        groups = [m.group for m in part.measurements if m.group is not None]
        offset = max(groups) + 1 if groups else offset
    if progress is not None:
        progress(len(steps), len(steps), "done")
    record = _merge(parts, base, complete=True)
    if extra:
        record = record.with_(extra={**dict(record.extra), **extra})
    try:
        record = check_consistency(record, step_of, _remeasure(engine, topology, opts.measure, clock))
    except KeyboardInterrupt:
        if on_partial is not None:
            on_partial(record.with_(findings=findings_for(record, topology), complete=False))
        raise
    # the consistency findings (if any) come after the ones computed from the (re-measured) entries
    found = (*findings_for(record, topology), *record.findings)
    if diagnostics is not None:  # the diagnosis's own findings come after the survey's
        diag_extra, diag_lines = diagnostics.finish(record)
        record = record.with_(extra={**dict(record.extra), **diag_extra})
        found = (*found, *diag_lines)
    from ..judge.headline import with_verdict  # the run's verdict, which the report opens with

    return with_verdict(record.with_(findings=found), topology)


def _remeasure(engine: TransferEngine, topology: Topology, options: MeasureOptions, clock: Clock):
    """Time one entry's transfer again, alone, as its step did (one plan, one size)."""
    def again(m: Measurement) -> Measurement | None:
        plan = TransferPlan(m.pattern, m.direction, m.method, (Transfer(m.src, m.dst, m.size_bytes),), "none",
                            f"{m.src}->{m.dst} again")
        rerun = run_bench(engine, topology, [plan], [m.size_bytes], options, clock=clock)
        return next((e for e in rerun.measurements if e.scope == "transfer"), None)
    return again
