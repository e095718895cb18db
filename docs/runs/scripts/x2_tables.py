"""Side-by-side tables of a two-GPU visit (bench/device_x2_final.sh): linkscope beside nvbandwidth at the
same buffer sizes, the remote-read latency beside nvbandwidth's pointer chase, NCCL small sizes beside
nccl-tests -G 10, and NCCL's own estimate (ncclGroupSimulateEnd) per size.

    PYTHONPATH=src python3 bench/x2_tables.py DIR   (DIR = the unpacked fin/ folder)   -> markdown on stdout

The tools' outputs are read by linkscope's own parsers (results.peertools), as `linkscope check` reads them.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from linkscope.patterns.methods import CE, CE_WRITE, SM_PULL, SM_PUSH
from linkscope.results.peertools.nccltests import parse_text as parse_nccl_tests
from linkscope.results.peertools.nvbandwidth import parse_text as parse_nvbandwidth

MIB = 1024 * 1024
#: linkscope's method -> the nvbandwidth method it is compared with (write_ce, write_sm, read_sm)
PAIRS = {CE.key: CE_WRITE.key, SM_PUSH.key: SM_PUSH.key, SM_PULL.key: SM_PULL.key}


def nvbandwidth_rows(path: Path, size_bytes: int = MIB) -> dict[str, list[float]]:
    """{method: GB/s of every GPU pair} of one nvbandwidth text output (the project's parser,
    results.peertools.nvbandwidth; ``size_bytes``: the run's -b)."""
    rows: dict[str, list[float]] = {}
    for m in parse_nvbandwidth(path.read_text(), str(path), size_bytes).measurements:
        if m.pattern == "matrix" and m.direction == "uni" and m.median_gb_per_s:
            rows.setdefault(m.method, []).append(m.median_gb_per_s)
    return rows


def linkscope_rows(path: Path) -> dict[tuple[str, int], list[float]]:
    doc = json.loads(path.read_text())
    rows: dict[tuple[str, int], list[float]] = {}
    for m in doc["measurements"]:
        if m.get("status") == "ok" and m.get("direction", "uni") == "uni" and m.get("median_gb_per_s"):
            rows.setdefault((m["method"], m["size_bytes"]), []).append(m["median_gb_per_s"])
    return rows


def copies(d: Path) -> list[str]:
    ls = linkscope_rows(d / "linkscope/bench-sizes.json")
    lines = ["| method (nvbandwidth method) | size | nvbandwidth GB/s | linkscope GB/s | ratio |", "|---|---|---|---|---|"]
    for mib in (1, 16, 64):
        f = d / f"peers/nvbandwidth-b{mib}.txt"
        if not f.exists():
            continue
        nvb = nvbandwidth_rows(f, mib * MIB)
        for method, theirs in PAIRS.items():
            a, b = nvb.get(theirs), ls.get((method, mib * MIB))
            if a and b:
                x, y = statistics.median(a), statistics.median(b)
                lines.append(f"| {method} ({theirs}) | {mib} MiB | {x:.1f} | {y:.1f} | {y / x:.3f} |")
    return lines


def latency(d: Path) -> list[str]:
    runs = parse_nvbandwidth((d / "peers/nvbandwidth-latency.txt").read_text(), "nvbandwidth-latency.txt").measurements
    nvb = [m.latency_us for m in runs if m.latency_us and m.pattern == "latency"]
    doc = json.loads((d / "linkscope/latency.json").read_text())
    ours = [m["latency_us"] for m in doc["measurements"] if m.get("latency_us") and m.get("status") == "ok"]
    if not nvb or not ours:
        return ["(latency: missing)"]
    a, b = statistics.median(nvb), statistics.median(ours)
    return ["| remote-read latency | nvbandwidth device_to_device_latency_sm | linkscope bench latency | nvbandwidth/linkscope |",
            "|---|---|---|---|", f"| GPU0<->GPU1 median | {a:.3f} us | {b:.3f} us | {a / b:.3f} |"]


def nccl_tests_times(path: Path) -> dict[int, float]:
    """{size: out-of-place time in us} of one nccl-tests text output (results.peertools.nccltests)."""
    return {m.size_bytes: m.latency_us for m in parse_nccl_tests(path.read_text(), str(path)).measurements
            if not m.extra.get("inplace") and m.latency_us is not None}


def nccl_small(d: Path) -> list[str]:
    ref = nccl_tests_times(d / "nccl/all_reduce_G10.txt")
    f2 = d / "nccl/all_reduce_G10_cupylib.txt"
    ref2 = nccl_tests_times(f2) if f2.exists() else {}
    doc = json.loads((d / "linkscope/nccl-small.json").read_text())
    ours = {m["size_bytes"]: m["latency_us"] for m in doc["measurements"] if m.get("latency_us")}
    lines = ["| size B | nccl-tests -G 10 us (wheel NCCL) | nccl-tests -G 10 us (CuPy's NCCL) | linkscope us | ratio (ref/linkscope) |",
             "|---|---|---|---|---|"]
    for s in sorted(ours):
        r = ref2.get(s) or ref.get(s)
        lines.append(f"| {s} | {ref.get(s, float('nan')):.2f} | {ref2.get(s, float('nan')):.2f} | {ours[s]:.2f} | "
                     f"{(r / ours[s]) if r else float('nan'):.3f} |")
    return lines


def estimates(d: Path) -> list[str]:
    out = ["| file | op | size B | NCCL estimate us |", "|---|---|---|---|"]
    for f in sorted((d / "nccl").glob("estimate-*.txt")):
        for line in f.read_text().splitlines():
            c = line.split()
            if len(c) == 3 and c[1].isdigit() and int(c[1]) in (1 << 20, 64 << 20, 512 << 20):
                out.append(f"| {f.stem} | {c[0]} | {c[1]} | {c[2]} |")
    return out


def main(argv: list[str]) -> int:
    d = Path(argv[1])
    for title, fn in (("Copies 1-64 MiB", copies), ("Latency", latency), ("NCCL small sizes", nccl_small),
                      ("NCCL estimate", estimates)):
        print(f"\n### {title}\n")
        try:
            print("\n".join(fn(d)))
        except (OSError, KeyError, ValueError) as e:
            print(f"(missing: {e})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
