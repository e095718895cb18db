"""Device-machine suite for the comm runners: NCCL table vs nccl-tests anchors, stencil default vs
auto vs emulated, MPI host latency vs ``python -m mpi4py.bench pingpong``, multi-process NCCL.

Run from the repository root:

    NCCL_NVLS_ENABLE=0 PYTHONPATH=src python bench/comm_suite.py --out DIR [--parts ...] [--rounds 5]

Prints a short table per step and writes every RunRecord, each step's output and summary.json
under DIR. ``--parts latency --rounds 5`` runs only the MPI latency comparison (no GPU needed).

MPI latency comparison (the issue's "within 10% of mpi4py's own pingpong"): both tools run under
the same launcher line (``mpirun --bind-to core --map-by core -n 2``: one rank per core, pinned),
with the same iteration counts (``--iterations/--warmup`` = mpi4py's ``-l/-s``, 10000/100 by
default for every size up to 4 KiB, which is also both tools' default there). Rounds are
interleaved A B, B A, A B, ... so drift in the machine's state hits both tools alike; each
size's figure is the median over the rounds, and the ratio linkscope / mpi4py is reported per
size with the spread (min-max over rounds) of each tool and, as a noise-robust diagnostic, the
ratio of the two tools' best rounds. Both report the mean half round trip
of the timed iterations: linkscope times the whole loop (elapsed / 2n), mpi4py times each
iteration and averages.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "linkscope"]
ANCHORS = {  # nccl-tests 2.19.6, NCCL 2.28.9, 4 x H200 (-g 4), 2026-11-22 (issue 7)
    "allreduce_busbw_1GiB_4gpu": 356.7, "sendrecv_busbw_1GiB_4gpu": 360.5,
    "allreduce_time_8B_4gpu_us": 22.6, "sendrecv_time_8B_gpu0_1_us": 12.4,
}
PARTS = ("nccl", "p2p", "stencil", "latency", "mpi", "pytest")
PINNED = ["--bind-to", "core", "--map-by", "core"]
LATENCY_TARGET = 0.10


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


def mpirun(n: int, args: list[str], binding: list[str] | None = None) -> list[str]:
    """Unpinned (``--bind-to none``, oversubscribe allowed) unless ``binding`` is given."""
    if binding is None:
        return ["mpirun", "--oversubscribe", "--bind-to", "none", "-n", str(n)] + args
    return ["mpirun"] + binding + ["-n", str(n)] + args


def step(name: str, cmd: list[str], out: Path, summary: dict, timeout: float = 240, echo: bool = True) -> str:
    rc, so, se, wall = run(cmd, timeout)
    (out / f"{name}.txt").write_text(
        f"$ {' '.join(cmd)}\nrc={rc} wall={wall:.1f}s\n--- stdout\n{so}\n--- stderr\n{se[-6000:]}")
    summary["steps"][name] = {"rc": rc, "wall_s": round(wall, 1)}
    print(f"== {name}: rc={rc} ({wall:.1f} s)", flush=True)
    if echo:
        print(so[-3000:], flush=True)
    if rc != 0:
        print(se[-1500:], flush=True)
    return so


def nccl_rows(text: str) -> dict[int, dict[str, object]]:
    """Data lines of ``bench nccl`` (9 columns, or 13 with --inplace) → per size."""
    rows: dict[int, dict[str, object]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) in (9, 13) and parts[0].isdigit():
            row: dict[str, object] = {"time_us": float(parts[5]), "algbw": float(parts[6]),
                                      "busbw": float(parts[7]), "wrong": parts[8]}
            if len(parts) == 13 and parts[9] != "N/A":
                row.update({"inplace_time_us": float(parts[9]), "inplace_busbw": float(parts[11]),
                            "inplace_wrong": parts[12]})
            rows[int(parts[0])] = row
    return rows


def osu_latency_rows(text: str) -> dict[int, float]:
    """``# Size  Latency (us)`` table → {size: µs}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            out[int(parts[0])] = float(parts[1])
    return out


def mpi4py_pingpong_rows(text: str) -> dict[int, float]:
    """``python -m mpi4py.bench pingpong`` lines ``size  MB/s | mean ± stdev  samples`` → {size: µs}."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\d+)\s+[\d.]+\s+\|\s+([\d.eE+-]+)", line)
        if m:
            out[int(m.group(1))] = float(m.group(2)) * 1e6
    return out


def latency_table(ours: dict[int, list[float]], theirs: dict[int, list[float]]) -> dict[int, dict[str, object]]:
    """Median over rounds per size, the ratio linkscope / mpi4py, the spreads, and the verdict."""
    table: dict[int, dict[str, object]] = {}
    for size in sorted(set(ours) & set(theirs)):
        a, b = ours[size], theirs[size]
        med_a, med_b = statistics.median(a), statistics.median(b)
        ratio = med_a / med_b if med_b > 0 else None
        table[size] = {"linkscope_us": round(med_a, 3), "mpi4py_us": round(med_b, 3),
                       "ratio": None if ratio is None else round(ratio, 3),
                       "ratio_of_minima": round(min(a) / min(b), 3) if min(b) > 0 else None,
                       "within_10pct": None if ratio is None else abs(ratio - 1.0) <= LATENCY_TARGET,
                       "linkscope_range_us": [round(min(a), 3), round(max(a), 3)],
                       "mpi4py_range_us": [round(min(b), 3), round(max(b), 3)], "rounds": min(len(a), len(b))}
    return table


def compare_latency(out: Path, summary: dict, rounds: int, binding: list[str], max_size: int, iters: int,
                    skip: int) -> dict[int, dict[str, object]]:
    """Interleaved rounds of linkscope and mpi4py ping-pong under one pinned launcher line."""
    ours_cmd = CLI + ["bench", "mpi", "--test", "latency", "--sizes", f"1:{max_size}", "--iterations", str(iters),
                      "--warmup", str(skip)]
    theirs_cmd = [sys.executable, "-m", "mpi4py.bench", "pingpong", "-m", "1", "-n", str(max_size), "-l", str(iters),
                  "-s", str(skip), "--loop-large", str(iters), "--skip-large", str(skip)]
    ours: dict[int, list[float]] = {}
    theirs: dict[int, list[float]] = {}
    for r in range(rounds):
        order = [("linkscope", ours_cmd, osu_latency_rows, ours), ("mpi4py", theirs_cmd, mpi4py_pingpong_rows, theirs)]
        if r % 2:
            order.reverse()
        for tool, cmd, parse, into in order:
            bind = binding + (["--report-bindings"] if r == 0 else [])
            text = step(f"latency_r{r}_{tool}", mpirun(2, cmd, bind), out, summary, timeout=300, echo=False)
            for size, us in parse(text).items():
                into.setdefault(size, []).append(us)
    table = latency_table(ours, theirs)
    print(f"== MPI ping-pong latency, host buffers, {rounds} interleaved rounds, median per size, "
          f"`mpirun {' '.join(binding)} -n 2`, {iters} iterations / {skip} warm-up")
    print(f"{'size (B)':>9} {'linkscope (us)':>15} {'mpi4py (us)':>12} {'ratio':>6}  {'ok':>3}  "
          f"{'linkscope min-max':>18} {'mpi4py min-max':>16} {'min ratio':>9}")
    for size, row in table.items():
        lr, mr = row["linkscope_range_us"], row["mpi4py_range_us"]
        print(f"{size:>9d} {row['linkscope_us']:>15.3f} {row['mpi4py_us']:>12.3f} {row['ratio']:>6.3f}  "
              f"{'yes' if row['within_10pct'] else 'NO':>3}  {lr[0]:>8.3f}-{lr[1]:<9.3f} {mr[0]:>7.3f}-{mr[1]:<8.3f}"
              f" {row['ratio_of_minima']:>9.3f}")
    verdict = all(row["within_10pct"] for row in table.values()) if table else False
    print(f"== within 10% at every size: {'yes' if verdict else 'NO'}", flush=True)
    result = {"binding": binding, "rounds": rounds, "iterations": iters, "warmup": skip, "sizes": table,
              "all_within_10pct": verdict,
              "raw_us": {"linkscope": {str(k): v for k, v in ours.items()},
                         "mpi4py": {str(k): v for k, v in theirs.items()}}}
    (out / "latency_compare.json").write_text(json.dumps(result, indent=2))
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="comm_suite_out")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {', '.join(PARTS)}")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved latency rounds per tool (>= 5 for a verdict)")
    ap.add_argument("--bind", default=" ".join(PINNED), help="mpirun binding options for the latency comparison")
    ap.add_argument("--latency-max-size", type=int, default=4096)
    ap.add_argument("--latency-iters", type=int, default=10000)
    ap.add_argument("--latency-warmup", type=int, default=100)
    a = ap.parse_args()
    parts = {p.strip() for p in a.parts.split(",") if p.strip()}
    unknown = parts - set(PARTS)
    if unknown:
        ap.error(f"unknown parts {sorted(unknown)}; valid: {', '.join(PARTS)}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"anchors": ANCHORS, "steps": {}, "compare": {}, "parts": sorted(parts)}
    bench = CLI + ["bench"]
    t_start = time.time()

    if "nccl" in parts:  # one process driving both GPUs (nccl-tests -g 2), then 2 MPI ranks
        for op, sizes, extra in [("allreduce", "8,1GiB", []), ("sendrecv", "8,1GiB", []),
                                 ("allreduce", "8,1MiB,1GiB", ["--inplace"]),
                                 ("allreduce", "8", ["--cuda-graph", "20", "--iters", "200"]),
                                 ("sendrecv", "8", ["--cuda-graph", "20", "--iters", "200"])]:
            tag = f"nccl_{op}" + ("_inplace" if "--inplace" in extra else "_graph" if extra else "")
            so = step(tag, bench + ["nccl", "--op", op, "--sizes", sizes, "--runs", "3", "--json",
                                    str(out / f"{tag}.json")] + extra, out, summary)
            summary["compare"][tag] = nccl_rows(so)
        step("nccl_all_ops", ["bash", "-c", " ; ".join(
            f"{' '.join(bench)} nccl --op {op} --sizes 8,1MiB,64MiB --inplace --json {out}/nccl_{op}_check.json"
            for op in ("allgather", "reduce_scatter", "broadcast", "reduce", "alltoall"))], out, summary)
        so = step("nccl_mpi_sendrecv", mpirun(2, bench + ["nccl", "--op", "sendrecv", "--sizes", "8,1GiB", "--runs",
                                                          "3", "--json", str(out / "nccl_mpi_sendrecv.json")]),
                  out, summary)
        summary["compare"]["nccl_mpi_sendrecv"] = nccl_rows(so)
    if "p2p" in parts:  # p2p matrix over the MPI job (NCCL between GPU ranks)
        step("p2p_mpi_nccl", mpirun(2, bench + ["p2p", "--mpi", "--sizes", "8,1MiB,256MiB", "--json",
                                                str(out / "p2p_mpi_nccl.json")]), out, summary)
    if "stencil" in parts:  # default vs auto on the uniform NVLink pair, then the pair emulated slow
        for tag, extra in [("stencil_uniform", ["--mapping", "auto", "--synthetic", "nvswitch:2"]),
                           ("stencil_emulated", ["--mapping", "auto", "--synthetic", "nvswitch:2",
                                                 "--emulate-slow-pairs", "0-1"]),
                           ("stencil_3d_periodic", ["--dims", "3", "--periodic", "--weighted"])]:
            step(tag, bench + ["stencil", "--sizes", "1KiB,64KiB,1MiB,16MiB", "--json", str(out / f"{tag}.json")]
                 + extra, out, summary)
    if "latency" in parts:  # MPI host latency vs mpi4py's own benchmark, pinned and interleaved
        summary["compare"]["mpi_latency_vs_mpi4py"] = compare_latency(
            out, summary, a.rounds, a.bind.split(), a.latency_max_size, a.latency_iters, a.latency_warmup)
    if "mpi" in parts:  # OSU bandwidth, device buffers staged, D refused
        step("mpi_bw_hh", mpirun(2, bench + ["mpi", "--test", "bw", "--sizes", "1:64MiB", "--json",
                                             str(out / "mpi_bw_hh.json")]), out, summary)
        staged = ["mpi", "--test", "bw", "--buffers", "DD", "--stage-through-host", "--sizes", "1:64MiB", "--json",
                  str(out / "mpi_bw_dd_staged.json")]
        step("mpi_bw_dd_staged", mpirun(2, bench + staged), out, summary)
        step("mpi_dd_refused", mpirun(2, bench + ["mpi", "--test", "bw", "--buffers", "DD", "--sizes", "8"]), out,
             summary)
    if "pytest" in parts:
        step("pytest_gpu", [sys.executable, "-m", "pytest", "-q", "-m", "gpu or nccl", "tests/comm", "-p",
                            "no:cacheprovider"], out, summary, timeout=200)
    summary["wall_s"] = round(time.time() - t_start, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: v for k, v in summary["compare"].items() if k != "mpi_latency_vs_mpi4py"}, indent=1)[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
