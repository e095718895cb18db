"""Print the eager small-size comparison of call 1 (visit1.sh): per op, size and configuration, the median time per
operation over every round and run, and its ratio nccl-tests / configuration (>= 1: at least as fast as nccl-tests).
    python3 docs/runs/h200x2-2026-11-28c/medians.py docs/runs/h200x2-2026-11-28c/call1
"""
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

root = Path(sys.argv[1])
times: dict = defaultdict(list)  # (op, config, size) -> [us]
for f in sorted(root.glob("nt/*_r*.txt")):
    op = f.name.split("_r")[0]
    for line in f.read_text().splitlines():
        parts = line.split()
        if parts and parts[0].isdigit() and len(parts) > 6 and int(parts[0]) > 0:
            times[(op, "nt", int(parts[0]))].append(float(parts[5]))
for f in sorted(root.glob("drv/*_r*.txt")):
    op, cfg = f.name.split("_")[:2]
    for line in f.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1].isdigit():
            times[(op, "drv/" + cfg, int(parts[1]))].append(float(parts[3]))
for f in sorted(root.glob("ls/*.json")):
    stem = f.stem.rsplit("_r", 1)[0]
    op, _, variant = stem.partition("_")
    for m in json.loads(f.read_text())["measurements"]:
        for t in m.get("extra", {}).get("times_us", []) or [m["latency_us"]]:
            times[(op, "ls" + variant, m["size_bytes"])].append(t)
ops = sorted({k[0] for k in times})
configs = sorted({k[1] for k in times}, key=lambda c: (c != "nt", c))
for op in ops:
    sizes = sorted({k[2] for k in times if k[0] == op})
    print(f"{op}: median us per op (n) and nccl-tests/config")
    print("size".rjust(8) + "".join(c.rjust(17) for c in configs))
    for s in sizes:
        nt = statistics.median(times[(op, "nt", s)]) if times[(op, "nt", s)] else None
        cells = []
        for c in configs:
            v = times.get((op, c, s))
            if not v:
                cells.append("-".rjust(17))
                continue
            med = statistics.median(v)
            ratio = f"{nt / med:.2f}" if nt else "-"
            cells.append(f"{med:7.2f}({len(v):2d}) {ratio:>5}".rjust(17))
        print(f"{s:8d}" + "".join(cells))
