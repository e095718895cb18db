"""Run some plans in a child process started with extra environment, and bring their entries back.

Some methods need their runtime to start with a given environment (the method table's ``env``:
``ce-blit`` on AMD needs ``HSA_ENABLE_SDMA=0``, which ROCr reads once at start). The runner sends
such plans here: one child per distinct environment runs ``python -m linkscope.measure.child``,
reads a JSON job on stdin (the engine's factory and arguments, the topology, the plans, the
options), builds its own engine (which now starts with that environment), runs the plans with the
same runner, and writes the entries as JSON on stdout. The parent merges them into its record.

The general mechanism serves any method with an ``env``; only the engine's ``child_factory``
(``"module:callable"``, keyword arguments) is vendor-specific.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from ..errors import MeasurementError
from ..patterns.plan import Transfer, TransferPlan
from ..results.schema import Measurement
from .options import MeasureOptions

CHILD_TIMEOUT_S = 3600.0


def plan_to_dict(plan: TransferPlan) -> dict[str, Any]:
    return {"pattern": plan.pattern, "direction": plan.direction, "method": plan.method, "aggregate": plan.aggregate,
            "label": plan.label, "transfers": [[t.src, t.dst, t.size_bytes, t.role] for t in plan.transfers]}


def plan_from_dict(data: Mapping[str, Any]) -> TransferPlan:
    return TransferPlan(pattern=data["pattern"], direction=data["direction"], method=data["method"],
                        transfers=tuple(Transfer(s, d, int(n), r) for s, d, n, r in data["transfers"]),
                        aggregate=data["aggregate"], label=data["label"])


def child_job(factory: tuple[str, Mapping[str, Any]], topology: Any, plans: Sequence[TransferPlan],
              options: MeasureOptions) -> dict[str, Any]:
    from ..topology.io import to_dict

    path, kwargs = factory
    return {"factory": path, "kwargs": dict(kwargs), "topology": to_dict(topology),
            "plans": [plan_to_dict(p) for p in plans], "options": asdict(options)}


def run_child(job: Mapping[str, Any], env: Mapping[str, str], *, timeout_s: float = CHILD_TIMEOUT_S) -> list[list[Measurement]]:
    """Run ``job`` in ``python -m linkscope.measure.child`` with ``env`` added to this process's
    environment; the entries of each plan, in order. Raises MeasurementError when the child fails."""
    from ..results.io import measurement_from_dict

    child_env = dict(os.environ)  # the child inherits this process's environment, plus the method's
    child_env.update(env)
    what = ", ".join(f"{k}={v}" for k, v in env.items())
    try:
        done = subprocess.run([sys.executable, "-m", "linkscope.measure.child"], input=json.dumps(job),
                              capture_output=True, text=True, env=child_env, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MeasurementError(f"child process with {what} failed: {exc}") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise MeasurementError(f"child process with {what} exited {done.returncode}: {last}")
    try:
        groups = json.loads(done.stdout)
        return [[measurement_from_dict(m, f"child[{i}][{k}]") for k, m in enumerate(g)] for i, g in enumerate(groups)]
    except (ValueError, KeyError, TypeError) as exc:
        raise MeasurementError(f"child process with {what} wrote unreadable output: {exc}") from exc


def _main() -> int:
    import importlib

    from ..results.io import measurement_to_dict
    from ..topology.io import from_dict
    from .runner import run_bench

    job = json.load(sys.stdin)
    module, _, name = job["factory"].partition(":")
    topology = from_dict(job["topology"])
    engine = getattr(importlib.import_module(module), name)(topology, **job.get("kwargs", {}))
    try:
        plans = [plan_from_dict(p) for p in job["plans"]]
        record = run_bench(engine, topology, plans, None, MeasureOptions(**job["options"]), allow_child=False)
    finally:
        engine.close()
    groups: list[list[dict[str, Any]]] = [[] for _ in plans]
    for m in record.measurements:
        groups[int(m.group or 0)].append(measurement_to_dict(m))
    json.dump(groups, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
