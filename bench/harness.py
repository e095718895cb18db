"""The one harness of the bench suites (bench/README.md lists them).

A suite is data: a function from the machine (``Machine``: how many GPUs, which backend and topology)
to a list of ``Step``s, each one linkscope command line (optionally under a launcher such as
``mpirun -n 2``) that writes its own JSON. The harness sizes the suite to the machine it runs on (any
GPU count: a step that needs more GPUs, or a program that is not here, is skipped with its reason),
runs each step under a time limit with its output in ``OUT/NAME.log``, and writes ``OUT/suite.json``:
the machine, every step's command line, exit status, seconds, files and skip reason. Nothing in a
suite names a visit, a machine or a number; what one visit ran and got lives under docs/runs/.

    PYTHONPATH=src python bench/copies.py --out DIR [--gpus 0,1] [--quick] [--dry-run]
    PYTHONPATH=src python bench/copies.py --out DIR --backend sim --preset hgx-h200-4   # anywhere, SIMULATED

Exit status: 0 when every step that ran succeeded, 3 when one failed, 2 on bad options.
(bench/device_steps.sh is the shell step runner of the recorded visits under docs/runs/; it stays.)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXIT_STEP_FAILED = 3
EXIT_USAGE = 2


@dataclass(frozen=True)
class Step:
    """One command of a suite. ``args``: linkscope's arguments (``bench nccl --op allreduce ...``), each
    ``{out}`` replaced by the output folder; ``launcher``: what runs ``python -m linkscope`` (``mpirun
    -n 2``), empty for a plain process; ``min_gpus``: skipped below; ``needs``: programs that must be
    on PATH; ``topology``: append the suite's ``--backend`` and topology options."""

    name: str
    args: tuple[str, ...]
    min_gpus: int = 1
    needs: tuple[str, ...] = ()
    launcher: tuple[str, ...] = ()
    topology: bool = True
    timeout_s: int = 600


@dataclass(frozen=True)
class Machine:
    """What the suite runs on: the GPUs it may use and how linkscope reaches them."""

    gpus: tuple[int, ...]
    backend: str
    topology_args: tuple[str, ...]
    topology_name: str
    quick: bool = False

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    @property
    def gpu_list(self) -> str:
        return ",".join(map(str, self.gpus))


@dataclass
class StepResult:
    name: str
    command: list[str]
    status: str  # ok | failed | skipped | planned
    rc: int | None = None
    seconds: float | None = None
    reason: str = ""
    files: list[str] = field(default_factory=list)


def parser(description: str, prog: str) -> argparse.ArgumentParser:
    """The options every suite takes."""
    p = argparse.ArgumentParser(description=description, prog=prog)
    p.add_argument("--out", type=Path, required=True, help="Folder for every step's JSON and log, and suite.json.")
    p.add_argument("--gpus", help="GPUs to use, e.g. 0,1 (default: all of the machine or topology).")
    p.add_argument("--backend", default="auto", help="auto | cuda | rocm | sim (sim: labelled SIMULATED, runs anywhere).")
    p.add_argument("--preset", help="A shipped preset (with --backend sim: the machine simulated).")
    p.add_argument("--synthetic", help="A synthetic topology, e.g. nvswitch:4 (with --backend sim).")
    p.add_argument("--quick", action="store_true", help="Few sizes and repetitions: a smoke run.")
    p.add_argument("--only", help="Run only these steps (comma-separated names).")
    p.add_argument("--dry-run", action="store_true", help="Write suite.json with the planned commands; run nothing.")
    return p


def machine(args: argparse.Namespace) -> Machine:
    """The GPUs and topology options of this run (this machine's, or the named preset/synthetic)."""
    from linkscope.cli.common import parse_gpu_list
    from linkscope.discovery.auto import resolve_topology

    topology_args: tuple[str, ...] = ()
    if args.preset:
        topology_args = ("--preset", args.preset)
    elif args.synthetic:
        topology_args = ("--synthetic", args.synthetic)
    topology, _ = resolve_topology(args.preset, None, args.synthetic, allow_fallback=args.backend == "sim")
    chosen = parse_gpu_list(args.gpus)
    gpus = tuple(chosen) if chosen is not None else tuple(range(topology.gpu_count))
    missing = [g for g in gpus if g >= topology.gpu_count]
    if missing:
        raise SystemExit(f"bench: --gpus {args.gpus}: {topology.name} has {topology.gpu_count} GPU(s)")
    return Machine(gpus, args.backend, topology_args, topology.name, args.quick)


def command_of(step: Step, m: Machine, out: Path) -> list[str]:
    args = [a.replace("{out}", str(out)) for a in step.args]
    if step.topology:
        args += ["--backend", m.backend, *m.topology_args]
    return [*step.launcher, sys.executable, "-m", "linkscope", *args]


def skip_reason(step: Step, m: Machine) -> str:
    if m.gpu_count < step.min_gpus:
        return f"needs {step.min_gpus} GPUs, {m.gpu_count} here"
    absent = [p for p in step.needs if shutil.which(p) is None]
    return f"{', '.join(absent)} not on PATH" if absent else ""


def run(suite: str, steps_of: Callable[[Machine], Sequence[Step]], argv: Sequence[str] | None = None,
        description: str = "") -> int:
    """Parse the common options, size the suite to the machine, run (or plan) its steps, write suite.json."""
    args = parser(description or suite, f"bench/{suite}.py").parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from linkscope.atomic import write_json_atomic
    from linkscope.errors import LinkscopeError

    try:
        m = machine(args)
    except LinkscopeError as exc:
        print(f"bench/{suite}.py: {exc}", file=sys.stderr)
        return EXIT_USAGE
    args.out.mkdir(parents=True, exist_ok=True)
    steps = list(steps_of(m))
    only = set(args.only.split(",")) if args.only else None
    if only is not None and only - {s.name for s in steps}:
        print(f"bench/{suite}.py: --only {args.only}: no step named {', '.join(sorted(only - {s.name for s in steps}))}; "
              f"steps: {', '.join(s.name for s in steps)}", file=sys.stderr)
        return EXIT_USAGE
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NCCL_NVLS_ENABLE": "0", "PYTHONUNBUFFERED": "1"}
    results: list[StepResult] = []
    for step in steps:
        if only is not None and step.name not in only:
            continue
        command = command_of(step, m, args.out)
        result = StepResult(step.name, command, "planned", reason=skip_reason(step, m))
        if result.reason:
            result.status = "skipped"
        elif not args.dry_run:
            result = _run_step(step, command, args.out, env)
        results.append(result)
        print(f"{result.name}: {result.status}{' (' + result.reason + ')' if result.reason else ''}", file=sys.stderr)
    summary = {"suite": suite, "schema": 1, "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "host": platform.node(), "backend": m.backend, "topology": m.topology_name, "gpus": list(m.gpus),
               "quick": m.quick, "dry_run": args.dry_run, "steps": [asdict(r) for r in results]}
    write_json_atomic(args.out / "suite.json", summary)
    print(f"wrote {args.out / 'suite.json'}", file=sys.stderr)
    return EXIT_STEP_FAILED if any(r.status == "failed" for r in results) else 0


def _run_step(step: Step, command: list[str], out: Path, env: dict[str, str]) -> StepResult:
    log = out / f"{step.name}.log"
    before = set(out.iterdir())
    start = time.monotonic()
    try:
        with open(log, "w") as handle:
            rc = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                timeout=step.timeout_s, check=False).returncode
        reason = ""
    except subprocess.TimeoutExpired:
        rc, reason = 124, f"timed out after {step.timeout_s} s"
    seconds = round(time.monotonic() - start, 2)
    files = sorted(str(p.name) for p in set(out.iterdir()) - before)
    return StepResult(step.name, command, "ok" if rc == 0 else "failed", rc, seconds, reason, files)


def dump(path: Path) -> dict:
    """A suite.json read back (for tests and tables)."""
    return json.loads(path.read_text())
