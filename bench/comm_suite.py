"""Device-machine suite for the comm runners: NCCL table vs nccl-tests anchors, stencil default vs
auto vs emulated, MPI host latency vs ``python -m mpi4py.bench pingpong``, multi-process NCCL.

Run from the repository root:  PYTHONPATH=src python bench/comm_suite.py --out DIR
Prints a short table and writes every RunRecord plus summary.json under DIR. Until ``bench
mpi|nccl|stencil|p2p`` are wired into ``linkscope bench``, commands go through tests/comm/cli_app.py.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, str(ROOT / "tests" / "comm" / "cli_app.py")]
ANCHORS = {  # nccl-tests 2.19.6, NCCL 2.28.9, 4 x H200 (-g 4), 2026-11-22 (issue 7)
    "allreduce_busbw_1GiB_4gpu": 356.7, "sendrecv_busbw_1GiB_4gpu": 360.5,
    "allreduce_time_8B_4gpu_us": 22.6, "sendrecv_time_8B_gpu0_1_us": 12.4,
}


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.update({"PYTHONPATH": str(ROOT / "src"), "NCCL_NVLS_ENABLE": "0", "OMPI_ALLOW_RUN_AS_ROOT": "1",
              "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    return e


def run(cmd: list[str], timeout: float = 240) -> tuple[int, str, str, float]:
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env(), cwd=ROOT)
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as exc:
        return 124, str(exc.stdout or ""), f"TIMEOUT after {timeout} s\n{exc.stderr or ''}", time.time() - t0


def mpirun(n: int, args: list[str]) -> list[str]:
    return ["mpirun", "--oversubscribe", "--bind-to", "none", "-n", str(n)] + args


def step(name: str, cmd: list[str], out: Path, summary: dict, timeout: float = 240) -> str:
    rc, so, se, wall = run(cmd, timeout)
    (out / f"{name}.txt").write_text(f"$ {' '.join(cmd)}\nrc={rc} wall={wall:.1f}s\n--- stdout\n{so}\n--- stderr\n{se[-6000:]}")
    summary["steps"][name] = {"rc": rc, "wall_s": round(wall, 1)}
    print(f"== {name}: rc={rc} ({wall:.1f} s)", flush=True)
    print(so[-3000:], flush=True)
    if rc != 0:
        print(se[-1500:], flush=True)
    return so


def nccl_rows(text: str) -> dict[int, dict[str, float]]:
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 9 and parts[0].isdigit():
            rows[int(parts[0])] = {"time_us": float(parts[5]), "algbw": float(parts[6]), "busbw": float(parts[7]),
                                   "wrong": parts[8]}
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="comm_suite_out")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"anchors": ANCHORS, "steps": {}, "compare": {}}
    bench = CLI + ["bench"]

    # 1. NCCL, one process driving both GPUs (nccl-tests -g 2)
    for op, sizes, extra in [("allreduce", "8,1GiB", []), ("sendrecv", "8,1GiB", []),
                             ("allreduce", "8", ["--cuda-graph", "20", "--iters", "200"]),
                             ("sendrecv", "8", ["--cuda-graph", "20", "--iters", "200"])]:
        tag = f"nccl_{op}" + ("_graph" if extra else "")
        so = step(tag, bench + ["nccl", "--op", op, "--sizes", sizes, "--runs", "3", "--json",
                                str(out / f"{tag}.json")] + extra, out, summary)
        summary["compare"][tag] = nccl_rows(so)
    so = step("nccl_all_ops", ["bash", "-c", " ; ".join(
        f"{' '.join(bench)} nccl --op {op} --sizes 8,1MiB,64MiB --json {out}/nccl_{op}_check.json"
        for op in ("allgather", "reduce_scatter", "broadcast", "reduce", "alltoall"))], out, summary)
    # 2. NCCL multi-process (unique id over MPI), sendrecv 8 B and allreduce 1 GiB
    so = step("nccl_mpi_sendrecv", mpirun(2, bench + ["nccl", "--op", "sendrecv", "--sizes", "8,1GiB", "--runs", "3",
                                                      "--json", str(out / "nccl_mpi_sendrecv.json")]), out, summary)
    summary["compare"]["nccl_mpi_sendrecv"] = nccl_rows(so)
    # 3. p2p matrix over the MPI job (NCCL between GPU ranks)
    step("p2p_mpi_nccl", mpirun(2, bench + ["p2p", "--mpi", "--sizes", "8,1MiB,256MiB", "--json",
                                            str(out / "p2p_mpi_nccl.json")]), out, summary)
    # 4. stencil: default vs auto on the uniform NVLink pair, then with the pair emulated slow
    for tag, extra in [("stencil_uniform", ["--mapping", "auto", "--synthetic", "nvswitch:2"]),
                       ("stencil_emulated", ["--mapping", "auto", "--synthetic", "nvswitch:2",
                                             "--emulate-slow-pairs", "0-1"]),
                       ("stencil_3d_periodic", ["--dims", "3", "--periodic", "--weighted"])]:
        step(tag, bench + ["stencil", "--sizes", "1KiB,64KiB,1MiB,16MiB", "--json", str(out / f"{tag}.json")] + extra,
             out, summary)
    # 5. MPI host latency vs mpi4py's own benchmark; device buffers staged; D refused
    lat = step("mpi_latency_hh", mpirun(2, bench + ["mpi", "--test", "latency", "--sizes", "1:4096", "--runs", "3",
                                                    "--json", str(out / "mpi_latency_hh.json")]), out, summary)
    ref = step("mpi4py_pingpong", mpirun(2, [sys.executable, "-m", "mpi4py.bench", "pingpong", "-m", "1", "-n", "4096"]),
               out, summary)
    ours = {int(p[0]): float(p[1]) for p in (l.split() for l in lat.splitlines() if l and not l.startswith("#"))}
    theirs = {}
    for line in ref.splitlines():
        m = re.match(r"\s*(\d+)\s+[\d.]+\s+\|\s+([\d.eE+-]+)", line)
        if m:
            theirs[int(m.group(1))] = float(m.group(2)) * 1e6
    summary["compare"]["mpi_latency_vs_mpi4py"] = {s: {"linkscope_us": ours[s], "mpi4py_us": theirs.get(s),
                                                       "ratio": ours[s] / theirs[s] if theirs.get(s) else None}
                                                   for s in ours}
    step("mpi_bw_hh", mpirun(2, bench + ["mpi", "--test", "bw", "--sizes", "1:64MiB", "--json",
                                         str(out / "mpi_bw_hh.json")]), out, summary)
    step("mpi_bw_dd_staged", mpirun(2, bench + ["mpi", "--test", "bw", "--buffers", "DD", "--stage-through-host",
                                                "--sizes", "1:64MiB", "--json", str(out / "mpi_bw_dd_staged.json")]),
         out, summary)
    step("mpi_dd_refused", mpirun(2, bench + ["mpi", "--test", "bw", "--buffers", "DD", "--sizes", "8"]), out, summary)
    # 6. GPU tests
    step("pytest_gpu", [sys.executable, "-m", "pytest", "-q", "-m", "gpu or nccl", "tests/comm", "-p", "no:cacheprovider"],
         out, summary, timeout=200)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary["compare"], indent=1)[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
