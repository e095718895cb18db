"""The per-set eager times of both tools in one call directory's eager_sets/ (nccl-tests: one process = one set,
`nt_OP_rK_sJ.txt`; linkscope: `ls_OP_rK.json` of `bench nccl --comm-sets N`, each set's median in `set_times_us`):
per op and size, each tool's quartiles over all its sets and the two-sided Mann-Whitney p of the two samples.
2026-11-28, issue 36.    /work/venv/bin/python dist.py CALLDIR [FOLDER: eager_sets (default) or mpi_eager_sets]"""
import collections
import json
import pathlib
import statistics
import sys

from scipy.stats import mannwhitneyu

folder = pathlib.Path(sys.argv[1]) / (sys.argv[2] if len(sys.argv) > 2 else "eager_sets")
nt: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
ls: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
for path in folder.glob("nt_*_s*.txt"):
    op = path.stem[3:].rsplit("_r", 1)[0]
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) > 6 and f[0].isdigit() and int(f[0]) > 0:
            nt[(op, int(f[0]))].append(float(f[5]))
for path in folder.glob("ls_*.json"):
    op = path.stem[3:].rsplit("_r", 1)[0]
    for m in json.loads(path.read_text())["measurements"]:
        if not m["extra"].get("inplace"):
            ls[(op, m["size_bytes"])] += m["extra"].get("set_times_us") or [m["latency_us"]]
print("op size: nccl-tests sets, q25 / median / q75 us | linkscope sets, q25 / median / q75 | Mann-Whitney p")
for key in sorted(set(nt) & set(ls)):
    a, b = nt[key], ls[key]
    qa, qb = statistics.quantiles(a, n=4), statistics.quantiles(b, n=4)
    print(f"{key[0]} {key[1]}: {len(a)}, {qa[0]:.1f} / {qa[1]:.1f} / {qa[2]:.1f} | {len(b)}, {qb[0]:.1f} / {qb[1]:.1f} / "
          f"{qb[2]:.1f} | p={mannwhitneyu(a, b).pvalue:.2g}")
