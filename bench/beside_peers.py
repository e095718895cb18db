"""bench nccl beside nccl-tests, launch mode for launch mode: the table of a device call, printed by one command.

A call's directory holds one folder per launch mode (those present are read):
    graph/      one process drives every GPU, CUDA graphs (nccl-tests -g N -G 20, linkscope --cuda-graph 20)
    eager/      one process, no graphs (nccl-tests -g N, linkscope --cuda-graph 0)
    mpi_graph/  one process per GPU under mpirun (nccl-tests -g 1 -G 20, linkscope --cuda-graph 20)
    mpi_eager/  one process per GPU, no graphs
    eager_sets/, mpi_eager_sets/   eager, several sets of communicators a round: nccl-tests run J times
                (`nt_OP_rK_sJ.txt`, one process = one set) beside one `bench nccl --comm-sets J` (`ls_OP_rK.json`)
and in each, per op and round, nccl-tests' output `nt_OP_rK.txt` beside linkscope's record `ls_OP_rK.json`
(`bench nccl --json`). Per mode, op and size: the paired ratio nccl-tests time / linkscope time of each round
(>= 1: linkscope at least as fast), its median over rounds, and both tools' times (out-of-place, median over
rounds). Sizes are those both tools ran (nccl-tests rounds small sizes to whole elements per rank and peer).
With sets, a round's time of each tool is the median of its sets (`--statistic min`: the fastest set, the time
of the fast mode a set can draw: docs/benchmarks.md "The eager draw is the communicator set's").

    python3 bench/beside_peers.py docs/runs/h200x4-2026-11-28d/call1 [more call directories] [--bar 0.97]

The calls' rows are pooled per mode (a mode's rounds may come from several calls).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

MODES = {
    "graph": "one process, CUDA graphs of 20 (nccl-tests -G 20)",
    "eager": "one process, eager launches",
    "mpi_graph": "one process per GPU (mpirun), CUDA graphs of 20",
    "mpi_eager": "one process per GPU (mpirun), eager launches",
    "eager_sets": "one process, eager launches, several communicator sets a round",
    "mpi_eager_sets": "one process per GPU (mpirun), eager launches, several communicator sets a round",
}
STATISTICS = {"median": statistics.median, "min": min}
OPS = ("allreduce", "allgather", "reduce_scatter", "alltoall", "sendrecv", "broadcast", "reduce", "gather", "scatter")


def nccl_tests_times_us(path: Path) -> dict[int, float]:
    """Out-of-place time (us) per size of one nccl-tests output; rows of zero bytes and unparsable lines skipped."""
    times: dict[int, float] = {}
    for line in path.read_text(errors="replace").splitlines():
        fields = line.split()
        if len(fields) > 6 and fields[0].isdigit() and int(fields[0]) > 0:
            try:
                times[int(fields[0])] = float(fields[5])
            except ValueError:
                continue
    return times


def linkscope_times_us(path: Path, statistic: str = "median") -> dict[int, float]:
    """Time (us) per size of one `bench nccl --json` record (out-of-place rows); of its communicator sets
    (`set_times_us`, `--comm-sets`) the median (the row's time) or, with ``statistic`` "min", the fastest."""
    record = json.loads(path.read_text())
    times = {}
    for m in record["measurements"]:
        extra = m.get("extra", {})
        if m.get("latency_us") is None or extra.get("inplace", False):
            continue
        sets = extra.get("set_times_us")
        times[m["size_bytes"]] = STATISTICS[statistic](sets) if sets and statistic != "median" else m["latency_us"]
    return times


def paired_rows(calls: list[Path], mode: str, statistic: str = "median") -> dict[tuple[str, int], list[tuple[float, float]]]:
    """(op, size) -> [(nccl-tests us, linkscope us) per round] over every call's folder of this mode; a round run
    as several nccl-tests processes (`nt_OP_rK_sJ.txt`) counts their ``statistic`` per size."""
    pairs: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    of_round: dict[Path, list[Path]] = defaultdict(list)
    for call in calls:
        for nt_file in sorted((call / mode).glob("nt_*_r*.txt")):
            stem = nt_file.stem[len("nt_"):]
            if "_s" in stem.rsplit("_r", 1)[1]:
                stem = stem.rsplit("_s", 1)[0]
            of_round[nt_file.with_name(f"ls_{stem}.json")].append(nt_file)
    for ls_file, nt_files in of_round.items():
        if not ls_file.exists():
            continue
        op = ls_file.stem[len("ls_"):].rsplit("_r", 1)[0]
        runs = [nccl_tests_times_us(f) for f in nt_files]
        ls = linkscope_times_us(ls_file, statistic)
        for size in sorted(set.intersection(*(set(r) for r in runs)) & set(ls)):
            pairs[(op, size)].append((STATISTICS[statistic]([r[size] for r in runs]), ls[size]))
    return pairs


def size_label(size_bytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size_bytes >= scale and size_bytes % scale == 0:
            return f"{size_bytes // scale} {unit}"
    return f"{size_bytes} B"


def table(calls: list[Path], bar: float, statistic: str = "median") -> str:
    lines: list[str] = []
    for mode, title in MODES.items():
        pairs = paired_rows(calls, mode, statistic)
        if not pairs:
            continue
        ops = [op for op in OPS if any(k[0] == op for k in pairs)]
        sizes = sorted({k[1] for k in pairs})
        if statistic != "median" and mode.endswith("_sets"):
            title += f" (each tool's {statistic} over its sets)"
        lines += [f"### {title}", "",
                  "nccl-tests time / linkscope time, paired by round (median over rounds; rounds in brackets when more "
                  f"than one); **bold** under {bar:.2f}.", ""]
        lines.append("| size | " + " | ".join(ops) + " |")
        lines.append("| --- |" + " --- |" * len(ops))
        below: list[str] = []
        for size in sizes:
            cells = []
            for op in ops:
                rounds = pairs.get((op, size))
                if not rounds:
                    cells.append("-")
                    continue
                ratio = statistics.median(a / b for a, b in rounds)
                nt_us = statistics.median(a for a, _ in rounds)
                ls_us = statistics.median(b for _, b in rounds)
                text = f"{ratio:.2f} ({nt_us:.1f} / {ls_us:.1f} us)" + (f" [{len(rounds)}]" if len(rounds) > 1 else "")
                if ratio < bar:
                    text = f"**{text}**"
                    below.append(f"{op} {size_label(size)}")
                cells.append(text)
            lines.append(f"| {size_label(size)} | " + " | ".join(cells) + " |")
        count = sum(1 for _ in pairs)
        lines += ["", f"{count - len(below)} of {count} rows >= {bar:.2f}"
                  + (f"; under: {', '.join(below)}" if below else "") + ".", ""]
    return "\n".join(lines) if lines else "no paired nccl-tests / linkscope files found"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("calls", nargs="+", type=Path, help="a call's directory (folders graph/, eager/, ...)")
    parser.add_argument("--bar", type=float, default=0.97, help="the ratio the issue asks for (default 0.97)")
    parser.add_argument("--statistic", choices=sorted(STATISTICS), default="median",
                        help="of a round's communicator sets: the median (default) or the fastest")
    args = parser.parse_args()
    missing = [str(c) for c in args.calls if not c.is_dir()]
    if missing:
        raise SystemExit(f"beside_peers: not a directory: {', '.join(missing)}")
    print(table(args.calls, args.bar, args.statistic))


if __name__ == "__main__":
    main()
