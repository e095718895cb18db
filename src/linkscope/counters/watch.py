"""``linkscope watch``: run a command while sampling NVLink and PCIe counters, then say where its
traffic went.

Sequence: resolve the command (before anything else, so a typo fails fast with exit 127), plan the
counters per GPU, read the link state and error counters (``linkerrors.take``, where the source has
them), sample an idle baseline (``baseline_s``: the background chatter each GPU's counters show
with nothing running, judged away per GPU by ``verdict.decide``), take one sample, start the sampler thread, run the command with inherited
stdin/stdout/stderr, stop the thread, wait ``settle_s`` (counters are updated asynchronously by the
driver), take the last sample, read the link error counters again, and build a ``WatchResult``
(links whose error counters grew during the command, or that run below their width, are named).

Exit codes (documented in docs/watch-and-report.md):

* the command's own exit code (128 + N when a signal N killed it, like a shell);
* ``EXIT_EXPECT_FAILED`` (3, linkscope's "finished with errors") when the command exited 0 but
  ``--expect`` failed;
* 127 when the command does not exist, 126 when it is not executable (like a shell);
* 1 for linkscope's own user errors (no NVML, a GPU index that does not exist).
"""
from __future__ import annotations

import datetime as _dt
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .. import platforms
from ..errors import UserError
from ..procwait import signals_held, wait_in_slices
from . import linkerrors
from .nvml import CounterSource, GpuInfo, check_gpu_indices
from .sampler import FABRIC, PCIE, RX, TX, CounterKey, GpuPlan, Sampler, plan_gpu
from .timeline import CounterTotal, timeline_rows, total
from .verdict import EXPECTATIONS, FABRIC_WORD, ExpectResult, GpuVerdict, decide

WATCH_FORMAT = "linkscope.watch"
WATCH_SCHEMA_VERSION = 1
EXIT_EXPECT_FAILED = 3
EXPECT_CHOICES = tuple(EXPECTATIONS)


class CommandNotFound(UserError):
    """The command to watch does not exist (exit 127) or is not executable (exit 126)."""

    def __init__(self, message: str, exit_code: int = 127) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class WatchOptions:
    """What to run and how to sample.

    Attributes:
        command: argv of the command (no shell).
        interval_s: sampling period of the background thread.
        gpus: NVML indices to watch; None = all.
        expect: ``nvlink`` or None.
        settle_s: wait after the command before the last sample (counters lag a little).
    """

    command: tuple[str, ...]
    interval_s: float = 0.1
    gpus: tuple[int, ...] | None = None
    expect: str | None = None
    settle_s: float = 0.2
    baseline_s: float = 1.0

    def __post_init__(self) -> None:
        if self.expect is not None and self.expect not in EXPECT_CHOICES:
            raise UserError(f"unknown --expect value {self.expect!r}", hint=f"valid: {', '.join(EXPECT_CHOICES)}")
        if not self.interval_s > 0:
            raise UserError(f"sampling interval must be positive, got {self.interval_s} s")
        if self.settle_s < 0:
            raise UserError(f"settle time must not be negative, got {self.settle_s} s")
        if not 0 <= self.baseline_s <= 60:
            raise UserError(f"idle baseline must be between 0 and 60 s, got {self.baseline_s} s")


@dataclass(frozen=True)
class GpuReport:
    """Everything measured on one GPU."""

    info: GpuInfo
    plan: GpuPlan
    nvlink_links: tuple[tuple[int, CounterTotal | None, CounterTotal | None], ...]
    nvlink_tx: CounterTotal | None
    nvlink_rx: CounterTotal | None
    pcie_tx: CounterTotal | None
    pcie_rx: CounterTotal | None
    verdict: GpuVerdict


@dataclass(frozen=True)
class Background:
    """One GPU's counters with nothing running (the idle baseline), as rates.

    Attributes:
        gpu: NVML index.
        window_s: how long the baseline was sampled.
        nvlink_bytes_per_s, pcie_bytes_per_s: TX + RX over the window; None when unsupported or
            incomplete (then nothing is subtracted).
    """

    gpu: int
    window_s: float
    nvlink_bytes_per_s: float | None
    pcie_bytes_per_s: float | None


@dataclass(frozen=True)
class WatchResult:
    command: tuple[str, ...]
    exit_code: int | None
    started_utc: str
    duration_s: float
    interval_s: float
    samples: int
    gpus: tuple[GpuReport, ...]
    timeline: tuple[dict, ...]
    expect: ExpectResult | None
    interrupted: bool = False
    notes: tuple[str, ...] = field(default=())
    link_errors: dict[str, Any] | None = None  # before/after snapshots, issues, summary (see counters.linkerrors)
    baseline: tuple[Background, ...] = field(default=())

    @property
    def link_issues(self) -> list[str]:
        """Sentences naming the links whose errors grew during the command, went down, or run narrow."""
        return [i["sentence"] for i in (self.link_errors or {}).get("issues", [])]

    @property
    def final_exit_code(self) -> int:
        """The code ``linkscope watch`` exits with (see the module docstring)."""
        if self.interrupted:
            return 130
        code = self.exit_code if self.exit_code is not None else 1
        if code == 0 and self.expect is not None and self.expect.passed is False:
            return EXIT_EXPECT_FAILED
        return code


def resolve_command(argv: Sequence[str]) -> list[str]:
    """argv with the program resolved like a shell would; CommandNotFound (127/126) otherwise."""
    if not argv:
        raise UserError("no command to watch", hint="usage: linkscope watch [OPTIONS] -- COMMAND [ARGS...]")
    program = argv[0]
    if os.sep in program:
        if not os.path.exists(program):
            raise CommandNotFound(f"command not found: {program}")
        if os.path.isdir(program) or not os.access(program, os.X_OK):
            raise CommandNotFound(f"command is not executable: {program}", exit_code=126)
        return list(argv)
    found = shutil.which(program)
    if found is None:
        raise CommandNotFound(f"command not found: {program}")
    return [found, *argv[1:]]


def _sum_totals(parts: list[CounterTotal], peak_gb_per_s: float | None) -> CounterTotal | None:
    """Sum of several counters (NVLink links); unknown parts keep the sum incomplete, never zero."""
    if not parts:
        return None
    known = [p for p in parts if p.bytes is not None]
    return CounterTotal(
        key=parts[0].key,
        source=parts[0].source,
        bytes=sum(p.bytes for p in known) if known else None,  # type: ignore[misc]
        complete=len(known) == len(parts) and all(p.complete for p in parts),
        estimate=any(p.estimate for p in parts),
        peak_gb_per_s=peak_gb_per_s,
        wraps=sum(p.wraps for p in parts),
        notes=tuple(dict.fromkeys(n for p in parts for n in p.notes)),
    )


def _peak_sum_rate(rows: list[dict], gpu: int, bus: str, direction: str) -> float | None:
    """Peak of the summed rate over links in one sampling interval."""
    per_interval: dict[float, float] = {}
    for r in rows:
        if r["gpu"] == gpu and r["bus"] == bus and r["direction"] == direction and r["rate_gb_per_s"] is not None:
            per_interval[r["t_start_s"]] = per_interval.get(r["t_start_s"], 0.0) + r["rate_gb_per_s"]
    return max(per_interval.values()) if per_interval else None


def build_reports(sampler: Sampler, t_origin_s: float,
                  background: Mapping[int, Background] | None = None) -> tuple[list[GpuReport], list[dict]]:
    """Per-GPU totals and verdicts; ``background`` (per GPU) lets the verdict discount the idle chatter
    over the sampled window (first to last sample)."""
    series = sampler.series()
    times = [p.t_s for s in series for p in s.points]
    window_s = max(times) - min(times) if times else None
    rows = timeline_rows(series, t_origin_s)
    totals = {s.spec.key: total(s) for s in series}
    for plan in sampler.plans:  # counters the driver refused stay visible as unknown, never as zero
        for key, why in plan.unsupported:
            totals[key] = CounterTotal(key, "unsupported", None, False, False, None, 0, (f"unsupported: {why}",))
    reports = []
    for plan in sampler.plans:
        gpu = plan.gpu
        link_rows = []
        for link in plan.links:
            link_rows.append((link, totals.get(CounterKey(gpu, FABRIC, link, TX)),
                              totals.get(CounterKey(gpu, FABRIC, link, RX))))
        agg: dict[tuple[str, str], CounterTotal | None] = {}
        for bus in (FABRIC, PCIE):
            for direction in (TX, RX):
                parts = [t for k, t in totals.items() if k.gpu == gpu and k.bus == bus and k.direction == direction]
                summed: CounterTotal | None
                if bus == PCIE and len(parts) == 1:
                    summed = parts[0]
                else:
                    summed = _sum_totals(parts, _peak_sum_rate(rows, gpu, bus, direction))
                agg[(bus, direction)] = summed

        def both(bus: str, agg: dict[tuple[str, str], CounterTotal | None] = agg) -> tuple[int | None, bool]:
            tx, rx = agg[(bus, TX)], agg[(bus, RX)]
            if tx is None or rx is None or tx.bytes is None or rx.bytes is None:
                return None, False
            return tx.bytes + rx.bytes, tx.complete and rx.complete

        nv_bytes, nv_complete = both(FABRIC)
        pc_bytes, pc_complete = both(PCIE)
        nv_reason = plan.nvlink_unsupported or ("" if nv_bytes is not None else "no complete NVLink reading")
        pc_reason = plan.pcie_unsupported or ("" if pc_bytes is not None else "no complete PCIe reading")
        idle = (background or {}).get(gpu)

        def expected(rate: float | None) -> float | None:
            return None if rate is None or window_s is None else rate * window_s

        verdict = decide(gpu, nv_bytes, pc_bytes, nvlink_complete=nv_complete, pcie_complete=pc_complete,
                         nvlink_reason=nv_reason, pcie_reason=pc_reason,
                         background_nvlink_bytes=expected(idle.nvlink_bytes_per_s) if idle else None,
                         background_pcie_bytes=expected(idle.pcie_bytes_per_s) if idle else None)
        # the sentence names the GPU's own fabric
        verdict = replace(verdict, message=verdict.message.replace(FABRIC_WORD, platforms.link_fabric(plan.fabric).label))
        reports.append(GpuReport(plan.info, plan, tuple(link_rows), agg[(FABRIC, TX)], agg[(FABRIC, RX)],
                                 agg[(PCIE, TX)], agg[(PCIE, RX)], verdict))
    fabric_of = {plan.gpu: plan.fabric for plan in sampler.plans}
    rows = [{**r, "bus": fabric_of.get(r["gpu"], r["bus"])} if r["bus"] == FABRIC else r for r in rows]
    return reports, rows


def background_total(rates: Mapping[str, Any]) -> float:
    """Bytes per second of one GPU's background window as a record keeps it (every ``*_bytes_per_s`` field:
    the GPU fabric and PCIe, TX + RX; an unsupported one, None, adds nothing)."""
    return float(sum(v for k, v in rates.items() if k.endswith("_bytes_per_s") and isinstance(v, (int, float))))


def measure_background(source: CounterSource, plans: Sequence[GpuPlan], baseline_s: float, interval_s: float, *,
                       clock: Callable[[], float], sleep: Callable[[float], None]) -> dict[int, Background]:
    """Sample every planned counter for ``baseline_s`` with nothing started by us: each GPU's idle rate.

    Samples by hand every ``interval_s`` (rate-mode PCIe counters are integrated, so one pair of
    samples is not enough). A window that did not advance the clock gives no baseline.
    """
    if baseline_s <= 0:
        return {}
    sampler = Sampler(source, plans, interval_s, clock=clock)
    steps = max(1, round(baseline_s / interval_s))
    t_start = clock()
    sampler.sample()
    for _ in range(steps):
        sleep(min(interval_s, baseline_s))
        sampler.sample()
    window_s = clock() - t_start
    if window_s <= 0:
        return {}
    reports, _ = build_reports(sampler, t_start)
    out = {}
    for r in reports:
        def rate(tx: CounterTotal | None, rx: CounterTotal | None) -> float | None:
            if tx is None or rx is None or tx.bytes is None or rx.bytes is None or not (tx.complete and rx.complete):
                return None
            return (tx.bytes + rx.bytes) / window_s
        out[r.plan.gpu] = Background(r.plan.gpu, round(window_s, 6), rate(r.nvlink_tx, r.nvlink_rx),
                                     rate(r.pcie_tx, r.pcie_rx))
    return out


def run_watch(
    options: WatchOptions,
    source: CounterSource,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    popen: Callable[..., Any] = subprocess.Popen,
    now_utc: Callable[[], str] | None = None,
) -> WatchResult:
    """Run ``options.command`` under the sampler. The command must already be resolved."""
    gpus = check_gpu_indices(source, options.gpus)
    plans = [plan_gpu(source, g) for g in gpus]
    sampler = Sampler(source, plans, options.interval_s, clock=clock)
    started_utc = (now_utc or (lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")))()
    errors_before = linkerrors.take(source, gpus)
    background = measure_background(source, plans, options.baseline_s, options.interval_s, clock=clock, sleep=sleep)
    sampler.sample()
    t0 = clock()
    interrupted = False
    exit_code: int | None = None
    notes: list[str] = []
    sampler.start()
    proc = None
    try:
        try:
            with signals_held():  # a signal in the command's first moments is raised below, with the handle kept
                try:
                    proc = popen(list(options.command))
                except FileNotFoundError:
                    raise CommandNotFound(f"command not found: {options.command[0]}") from None
                except PermissionError:
                    raise CommandNotFound(f"command is not executable: {options.command[0]}", exit_code=126) from None
            exit_code = wait_in_slices(proc)  # in slices: a signal reaches the handler, whatever thread got it
        except KeyboardInterrupt:
            if proc is None:
                raise
            interrupted = True
            try:  # the child got the same SIGINT (same process group); give it a moment, then stop it
                exit_code = proc.wait(timeout=5)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                proc.kill()
                exit_code = proc.wait()
    finally:
        sampler.stop()
    t1 = clock()
    sleep(options.settle_s)
    sampler.sample()
    if sampler.thread_error is not None:
        notes.append(f"sampler thread stopped early: {sampler.thread_error!r}")
    if exit_code is not None and exit_code < 0:
        exit_code = 128 - exit_code  # killed by signal N -> 128 + N, like a shell
    errors_after = linkerrors.take(source, gpus)
    step = "the command"
    issues = linkerrors.state_issues(errors_before) + linkerrors.changes(errors_before, errors_after, step)
    reports, rows = build_reports(sampler, t0, background)
    moved = {r.plan.gpu: float(r.verdict.nvlink_bytes) for r in reports if r.verdict.nvlink_bytes}
    link_errors = {"before": errors_before, "after": errors_after, "issues": [i.as_dict() for i in issues],
                   "summary": linkerrors.summary(errors_after),
                   "judged": [j.as_dict() for j in linkerrors.judge_growth(errors_before, errors_after, step,
                                                                            moved_bytes=moved)]}
    check = EXPECTATIONS.get(options.expect or "")
    expect = check([r.verdict for r in reports]) if check is not None else None
    samples = max((len(s.points) for s in sampler.series()), default=0)
    return WatchResult(tuple(options.command), exit_code, started_utc, round(t1 - t0, 6), options.interval_s,
                       samples, tuple(reports), tuple(rows), expect, interrupted, tuple(notes), link_errors,
                       tuple(background[g] for g in sorted(background)))


# ---- serialisation -------------------------------------------------------------------------

def _total_dict(t: CounterTotal | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {
        "bytes": t.bytes,
        "complete": t.complete,
        "estimate": t.estimate,
        "peak_gb_per_s": None if t.peak_gb_per_s is None else round(t.peak_gb_per_s, 6),
        "wraps": t.wraps,
        "source": t.source,
        "notes": list(t.notes),
    }


def to_dict(result: WatchResult) -> dict[str, Any]:
    """The JSON form (format ``linkscope.watch``, schema_version 1). Unsupported is null, never 0."""
    gpus = []
    for r in result.gpus:
        gpus.append({
            "nvml_index": r.info.nvml_index,
            "name": r.info.name,
            "pci_bus_id": r.info.pci_bus_id,
            "uuid": r.info.uuid,
            "nvlink": {
                "fabric": r.plan.fabric,
                "supported": not r.plan.nvlink_unsupported,
                "reason": r.plan.nvlink_unsupported,
                "active_links": list(r.plan.links),
                "tx": _total_dict(r.nvlink_tx),
                "rx": _total_dict(r.nvlink_rx),
                "links": [{"link": link, "tx": _total_dict(tx), "rx": _total_dict(rx)} for link, tx, rx in r.nvlink_links],
                "unsupported_counters": [{"counter": k.label, "reason": why} for k, why in r.plan.unsupported],
            },
            "pcie": {
                "supported": bool(r.plan.pcie_source),
                "reason": r.plan.pcie_unsupported,
                "source": r.plan.pcie_source,
                "tx": _total_dict(r.pcie_tx),
                "rx": _total_dict(r.pcie_rx),
            },
            "verdict": {
                "kind": r.verdict.kind,
                "nvlink_bytes": r.verdict.nvlink_bytes,
                "pcie_bytes": r.verdict.pcie_bytes,
                "message": r.verdict.message,
            },
        })
    return {
        "format": WATCH_FORMAT,
        "schema_version": WATCH_SCHEMA_VERSION,
        "command": list(result.command),
        "exit_code": result.exit_code,
        "linkscope_exit_code": result.final_exit_code,
        "interrupted": result.interrupted,
        "started_utc": result.started_utc,
        "duration_s": result.duration_s,
        "interval_s": result.interval_s,
        "samples": result.samples,
        "expect": None if result.expect is None else {
            "expected": result.expect.expected, "passed": result.expect.passed, "reason": result.expect.reason},
        "gpus": gpus,
        "timeline": list(result.timeline),
        "notes": list(result.notes),
        "link_errors": result.link_errors,
        "baseline": [{"gpu": b.gpu, "window_s": b.window_s, "nvlink_bytes_per_s": b.nvlink_bytes_per_s,
                      "pcie_bytes_per_s": b.pcie_bytes_per_s} for b in result.baseline],
    }


CSV_COLUMNS = ("t_start_s", "t_end_s", "gpu", "bus", "link", "direction", "bytes", "rate_gb_per_s",
               "cumulative_bytes", "note")


def timeline_csv(result: WatchResult) -> str:
    """The timeline as CSV (header + one row per counter and interval); empty cells for unknown."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in result.timeline:
        writer.writerow(["" if row[c] is None else row[c] for c in CSV_COLUMNS])
    return buf.getvalue()
