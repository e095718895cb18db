"""The twin against public and measured NCCL collectives (issue 22): one table, CPU only.

Run from the repository root (no GPU, a few seconds):

    PYTHONPATH=src python bench/twin_vs_collectives.py            # markdown table on stdout
    PYTHONPATH=src python bench/twin_vs_collectives.py --json out.json

Every row names the machine (a preset), the GPUs, the NCCL environment the reference ran with, the
reference figure and where it comes from; the script predicts the same case with
``CollectiveModel`` (the twin: NCCL's algorithm and protocol choice timed on the fabric model) and
prints NCCL's own estimate (its tuner's formula, ``model.nccl_tuning``) beside it. The error is
twin / reference - 1 on the quantity the reference gives (busbw, or time). Targets (issue 22):
within 10% at >= 64 MiB, within 25% at 1 MiB.

Rows whose reference is a range (e.g. 476-480 GB/s) are scored against the middle of the range and
pass when the twin lies within the target of any point of it.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from linkscope.atomic import write_text_atomic
from linkscope.model.collectives import CollectiveModel
from linkscope.topology.presets import load_preset

MIB, GIB = 1 << 20, 1 << 30
NVLS_OFF = {"NCCL_NVLS_ENABLE": "0"}


@dataclass(frozen=True)
class Case:
    name: str
    preset: str
    gpus: tuple[int, ...]
    op: str
    size_bytes: int
    env: dict[str, str]
    quantity: str  # busbw (GB/s) or time (us)
    low: float
    high: float
    source: str
    launch: str = "graph"  # graph (nccl-tests -G, CUDA graphs) or eager (each operation launched by the host)


CASES = (
    Case("DGX H100, 8 GPUs, allreduce, NCCL default (NVLS on)", "dgx-h100", tuple(range(8)), "allreduce", 4 * GIB, {},
         "busbw", 476.0, 480.0,
         "nccl-tests#212 (NCCL maintainer: 'peak busBw of ~480GB/s' on 8 x H100 with NVLS); nccl#2140 (8 x H100: "
         "480 GB/s NVLS on); nccl#1374 (GTC S62129: 480 GB/s); nccl-tests#290 as cited by issue 22"),
    Case("same, NCCL_NVLS_ENABLE=0", "dgx-h100", tuple(range(8)), "allreduce", 4 * GIB, NVLS_OFF, "busbw", 330.0, 370.0,
         "nccl#1221 (8 x H100, NCCL 2.19.3: 330 GB/s with NVLS off); nccl#2140 (8 x H100: 370 GB/s NVLS off); "
         "nccl-tests#212 (maintainer: 370 GB/s with NCCL_ALGO=RING); nccl-tests#326 as cited by issue 22"),
    Case("DGX A100, 8 GPUs, allreduce", "dgx-a100", tuple(range(8)), "allreduce", 4 * GIB, {}, "busbw", 232.5, 232.5,
         "nccl-tests#175 (-b 8 -e 4G -g 8), as cited by issue 22 (not found in the search corpus)"),
    Case("2 x H100 (NV18), allreduce 1 MiB", "dgx-h100", (0, 1), "allreduce", MIB, NVLS_OFF, "busbw", 51.6, 51.6,
         "issue 22: nccl-tests 2.19.6 measured on the lent 2 x H100 machine (20.3 us)", "eager"),
    Case("2 x H100 (NV18), allreduce 1 MiB, time", "dgx-h100", (0, 1), "allreduce", MIB, NVLS_OFF, "time", 20.3, 20.3,
         "issue 22: nccl-tests 2.19.6 measured on the lent 2 x H100 machine", "eager"),
    Case("2 x H100 (NV18), allreduce 64 MiB", "dgx-h100", (0, 1), "allreduce", 64 * MIB, NVLS_OFF, "busbw", 265.9,
         265.9, "issue 22: nccl-tests 2.19.6 measured on the lent 2 x H100 machine", "eager"),
    Case("2 x H100 (NV18), allreduce 512 MiB", "dgx-h100", (0, 1), "allreduce", 512 * MIB, NVLS_OFF, "busbw", 316.8,
         316.8, "issue 22: nccl-tests 2.19.6 measured on the lent 2 x H100 machine", "eager"),
    Case("2 x H200 (NV18), alltoall 64 MiB", "hgx-h200-4", (0, 1), "alltoall", 64 * MIB, NVLS_OFF, "busbw", 242.8,
         242.8, "docs/benchmarks.md, issue 7 (linkscope bench nccl, NCCL 2.28.9, 2026-11-22): 138 us"),
    Case("2 x H200 (NV18), allreduce 1 GiB", "hgx-h200-4", (0, 1), "allreduce", GIB, NVLS_OFF, "busbw", 326.8, 326.8,
         "docs/benchmarks.md, issue 7 (NCCL 2.28.9, 2026-11-22); nccl_reduce_efficiency is fitted to this row"),
    Case("2 x H200 (NV18), sendrecv 1 GiB", "hgx-h200-4", (0, 1), "sendrecv", GIB, NVLS_OFF, "busbw", 360.1, 361.1,
         "docs/benchmarks.md, issue 7 (NCCL 2.28.9, 2026-11-22)"),
)


FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "nccl" / "h100x2-2026-11-25"
H100X2 = "2 x H100 (NV18), nccl-tests 2.19.6, NCCL 2.28.9, 2026-11-25"


def nccl_tests_rows(path: Path) -> dict[int, tuple[float, float]]:
    """size -> (out-of-place time us, busbw GB/s) of an nccl-tests text table."""
    out = {}
    for line in path.read_text().splitlines():
        cols = line.split()
        if len(cols) >= 8 and cols[0].isdigit() and not line.startswith("#"):
            out[int(cols[0])] = (float(cols[5]), float(cols[7]))
    return out


def measured_cases() -> list[Case]:
    """The lent 2 x H100 recordings (tests/fixtures/nccl/h100x2-2026-11-25/): NCCL's own choice per
    operation, CUDA graphs at 1 MiB, and every forced algorithm x protocol of allreduce."""
    specs: list[tuple[str, str, dict[str, str], str]] = [
        ("all_reduce.txt", "allreduce", {}, "eager"),
        ("all_reduce_G10.txt", "allreduce", {}, "CUDA graph"),
        ("all_gather.txt", "allgather", {}, "eager"),
        ("reduce_scatter.txt", "reduce_scatter", {}, "eager"),
        ("broadcast.txt", "broadcast", {}, "eager"),
        ("sendrecv.txt", "sendrecv", {}, "eager"),
        ("alltoall.txt", "alltoall", {}, "eager"),
    ]
    for algo in ("Ring", "Tree"):
        for proto in ("LL", "LL128", "Simple"):
            specs.append((f"all_reduce_{algo}_{proto}.txt", "allreduce", {"NCCL_ALGO": algo, "NCCL_PROTO": proto},
                          f"NCCL_ALGO={algo} NCCL_PROTO={proto}"))
    cases = []
    for name, op, env, how in specs:
        rows = nccl_tests_rows(FIXTURE / name)
        for size in (MIB, 64 * MIB, GIB):
            if size not in rows:
                continue
            time_us, busbw = rows[size]
            quantity, value = ("time", time_us) if size == MIB else ("busbw", busbw)
            cases.append(Case(f"2 x H100 {op} {size // MIB} MiB, {how}", "dgx-h100", (0, 1), op, size,
                              {**NVLS_OFF, **env}, quantity, value, value, f"{H100X2}: fixture {name}",
                              "graph" if name.endswith("_G10.txt") else "eager"))
    return cases


@dataclass(frozen=True)
class Row:
    name: str
    reference: str
    twin: float
    nccl_estimate: float | None
    chosen: str
    channels: int
    error: float
    target: float
    passed: bool
    source: str


def _value(quantity: str, size_bytes: int, busbw: float, time_us: float) -> float:
    return busbw if quantity == "busbw" else time_us


def evaluate(case: Case) -> Row:
    model = CollectiveModel.of(load_preset(case.preset), env=case.env, launch=case.launch)
    pred = model.predict(case.op, list(case.gpus), case.size_bytes)
    c = pred.chosen
    twin = _value(case.quantity, case.size_bytes, c.busbw_gb_per_s, c.time_us)
    estimate = None
    if c.nccl_estimate_us:
        est_busbw = c.busbw_gb_per_s * c.time_us / c.nccl_estimate_us
        estimate = _value(case.quantity, case.size_bytes, est_busbw, c.nccl_estimate_us)
    mid = (case.low + case.high) / 2
    nearest = min(max(twin, case.low), case.high)
    target = 0.10 if case.size_bytes >= 64 * MIB else 0.25
    ref = f"{case.low:g}" if case.low == case.high else f"{case.low:g}-{case.high:g}"
    unit = "GB/s" if case.quantity == "busbw" else "us"
    return Row(case.name, f"{ref} {unit}", twin, estimate, f"{c.algorithm}/{c.protocol}", c.channels,
               twin / mid - 1, target, abs(twin / nearest - 1) <= target, case.source)


def markdown(rows: list[Row]) -> str:
    lines = ["| case | reference | twin | NCCL's estimate | twin's choice (channels) | twin error | target | source |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        est = f"{r.nccl_estimate:.1f}" if r.nccl_estimate is not None else "n/a"
        verdict = "met" if r.passed else "**missed**"
        lines.append(f"| {r.name} | {r.reference} | {r.twin:.1f} | {est} | {r.chosen} ({r.channels}) | "
                     f"{r.error * 100:+.1f}% | {r.target * 100:.0f}%: {verdict} | {r.source} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    rows = [evaluate(c) for c in CASES]
    measured = [evaluate(c) for c in measured_cases()]
    sys.stdout.write("Public and issue 22 figures:\n\n" + markdown(rows))
    sys.stdout.write("\nThe lent 2 x H100, every size 1 MiB (time) / 64 MiB / 1 GiB (busbw):\n\n" + markdown(measured))
    met = sum(r.passed for r in rows + measured)
    sys.stdout.write(f"\n{met} of {len(rows) + len(measured)} rows within target\n")
    if args.json:
        write_text_atomic(args.json, json.dumps([asdict(r) for r in rows + measured], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
