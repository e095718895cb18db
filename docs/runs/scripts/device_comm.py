"""GPU check of the comm path (issue 12): ``bench nccl`` on the real GPU in one process, then the
GPU/NCCL-marked comm tests; prints a short table and writes one JSON file.

    PYTHONPATH=src python3 bench/device_comm.py OUT.json [--backend cuda|sim] [--no-tests]

Each step has its own time limit, so the whole run stays under ~110 s on one GPU. ``--backend sim``
runs the same steps without a GPU (used by the CPU tests of this script).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OPS = ("allreduce", "sendrecv")
SIZES = "8,4KiB,1MiB,64MiB,1GiB"
STEP_TIMEOUT_S = 40
TESTS_TIMEOUT_S = 45


def _linkscope(args: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "linkscope", *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(cmd, 124, exc.stdout or "", f"timed out after {timeout_s} s")


def run_op(op: str, backend: str, sizes: str, workdir: Path) -> dict:
    """One ``bench nccl`` run on GPU 0; the record's rows, or why it was skipped."""
    path = workdir / f"{op}.json"
    args = ["bench", "nccl", "--backend", backend, "--gpus", "0", "--op", op, "--sizes", sizes,
            "--iters", "20", "--warmup", "5", "--json", str(path)]
    if backend == "sim":
        args += ["--synthetic", "nvswitch:1", "--iters", "2", "--warmup", "0"]
    t0 = time.perf_counter()
    proc = _linkscope(args, STEP_TIMEOUT_S)
    wall_s = time.perf_counter() - t0
    if proc.returncode != 0 or not path.exists():
        reason = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        if op == "sendrecv":
            reason = f"sendrecv to itself on one GPU is not supported here: {reason}"
        return {"op": op, "status": "skipped", "reason": reason, "exit": proc.returncode, "wall_s": wall_s}
    record = json.loads(path.read_text())
    rows = [{"size_bytes": m["size_bytes"], "time_us": m["extra"]["time_us"],
             "algbw_gb_per_s": m["extra"]["algbw_gb_per_s"], "busbw_gb_per_s": m["extra"]["busbw_gb_per_s"],
             "wrong": m["extra"]["wrong"]} for m in record["measurements"]]
    return {"op": op, "status": "ok", "exit": 0, "wall_s": wall_s, "provenance": record["provenance"],
            "nccl_version": record["context"].get("nccl_version"), "gpus": record["context"].get("gpus"),
            "rows": rows, "table": proc.stdout}


def run_tests(timeout_s: float) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gpu or nccl", "-p", "no:cacheprovider", "tests/comm"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "summary": f"timed out after {timeout_s} s"}
    lines = [line for line in proc.stdout.strip().splitlines() if line.strip()]
    return {"status": "ok" if proc.returncode in (0, 5) else "failed", "exit": proc.returncode,
            "summary": lines[-1] if lines else proc.stderr.strip()[-300:]}


def table(results: list[dict]) -> str:
    lines = [f"{'op':<10} {'size (B)':>12} {'time (us)':>11} {'algbw':>8} {'busbw':>8} {'#wrong':>7}"]
    for r in results:
        if r["status"] != "ok":
            lines.append(f"{r['op']:<10} skipped: {r['reason']}")
            continue
        for row in r["rows"]:
            wrong = "N/A" if row["wrong"] is None else row["wrong"]
            lines.append(f"{r['op']:<10} {row['size_bytes']:>12d} {row['time_us']:>11.2f} "
                         f"{row['algbw_gb_per_s']:>8.2f} {row['busbw_gb_per_s']:>8.2f} {wrong!s:>7}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--no-tests", action="store_true")
    args = parser.parse_args(argv)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with tempfile.TemporaryDirectory() as tmp:
        results = [run_op(op, args.backend, args.sizes, Path(tmp)) for op in OPS]
    tests = {"status": "not run"} if args.no_tests else run_tests(TESTS_TIMEOUT_S)
    print(table(results))
    print(f"GPU/NCCL tests: {tests.get('summary', tests['status'])}")
    summary = {"format": "linkscope.device_comm", "started_utc": started, "backend": args.backend,
               "env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
               "ops": [{k: v for k, v in r.items() if k != "table"} for r in results], "tests": tests}
    Path(args.out).write_text(json.dumps(summary, indent=2))
    ok = all(r["status"] == "ok" or r["op"] == "sendrecv" for r in results) and tests["status"] in ("ok", "not run")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
