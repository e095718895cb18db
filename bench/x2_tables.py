"""Side-by-side tables of a two-GPU visit (bench/device_x2_final.sh): linkscope beside nvbandwidth at the
same buffer sizes, the remote-read latency beside nvbandwidth's pointer chase, NCCL small sizes beside
nccl-tests -G 10, and NCCL's own estimate (ncclGroupSimulateEnd) per size.

    python3 bench/x2_tables.py DIR          (DIR = the unpacked fin/ folder)   -> markdown on stdout
"""
from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

MIB = 1024 * 1024
PAIRS = {"ce": "device_to_device_memcpy_write_ce", "sm-push": "device_to_device_memcpy_write_sm",
         "sm-pull": "device_to_device_memcpy_read_sm"}


def nvbandwidth_matrix(text: str) -> dict[str, list[float]]:
    """{testcase: off-diagonal values} from nvbandwidth's text output (N/A cells skipped)."""
    out: dict[str, list[float]] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"Running (\S+)\.", line)
        if m:
            current = m.group(1)
            out[current] = []
            continue
        cells = line.split()
        if current and len(cells) >= 3 and cells[0].isdigit():
            out[current] += [float(c) for c in cells[1:] if c != "N/A"]
    return out


def linkscope_rows(path: Path) -> dict[tuple[str, int], list[float]]:
    doc = json.loads(path.read_text())
    rows: dict[tuple[str, int], list[float]] = {}
    for m in doc["measurements"]:
        if m.get("status") == "ok" and m.get("direction", "uni") == "uni" and m.get("median_gb_per_s"):
            rows.setdefault((m["method"], m["size_bytes"]), []).append(m["median_gb_per_s"])
    return rows


def copies(d: Path) -> list[str]:
    ls = linkscope_rows(d / "linkscope/bench-sizes.json")
    lines = ["| method (nvbandwidth testcase) | size | nvbandwidth GB/s | linkscope GB/s | ratio |", "|---|---|---|---|---|"]
    for mib in (1, 16, 64):
        f = d / f"peers/nvbandwidth-b{mib}.txt"
        if not f.exists():
            continue
        nvb = nvbandwidth_matrix(f.read_text())
        for method, case in PAIRS.items():
            a, b = nvb.get(case), ls.get((method, mib * MIB))
            if a and b:
                x, y = statistics.median(a), statistics.median(b)
                lines.append(f"| {method} ({case}) | {mib} MiB | {x:.1f} | {y:.1f} | {y / x:.3f} |")
    return lines


def latency(d: Path) -> list[str]:
    nvb = nvbandwidth_matrix((d / "peers/nvbandwidth-latency.txt").read_text()).get("device_to_device_latency_sm", [])
    doc = json.loads((d / "linkscope/latency.json").read_text())
    ours = [m["latency_us"] for m in doc["measurements"] if m.get("latency_us") and m.get("status") == "ok"]
    if not nvb or not ours:
        return ["(latency: missing)"]
    a, b = statistics.median(nvb) / 1000, statistics.median(ours)
    return ["| remote-read latency | nvbandwidth device_to_device_latency_sm | linkscope bench latency | nvbandwidth/linkscope |",
            "|---|---|---|---|", f"| GPU0<->GPU1 median | {a:.3f} us | {b:.3f} us | {a / b:.3f} |"]


def nccl_tests_times(text: str) -> dict[int, float]:
    rows = {}
    for line in text.splitlines():
        c = line.split()
        if len(c) >= 8 and c[0].isdigit() and not line.startswith("#"):
            rows[int(c[0])] = float(c[5])  # out-of-place time (us)
    return rows


def nccl_small(d: Path) -> list[str]:
    ref = nccl_tests_times((d / "nccl/all_reduce_G10.txt").read_text())
    f2 = d / "nccl/all_reduce_G10_cupylib.txt"
    ref2 = nccl_tests_times(f2.read_text()) if f2.exists() else {}
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
