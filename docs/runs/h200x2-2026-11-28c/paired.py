"""The paired eager comparison of call 3 (visit3.sh): each round ran nccl-tests and linkscope back to back (order
swapped every round). Per op and size: the paired ratio nccl-tests time / linkscope time of each round, its median
over rounds (the figure the issue's bar reads: >= 0.97 means linkscope at least 0.97x of nccl-tests), the range of
the paired ratios, and both tools' own spread over rounds (max/min of their per-round times).
    python3 docs/runs/h200x2-2026-11-28c/paired.py docs/runs/h200x2-2026-11-28c/call3
"""
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

root = Path(sys.argv[1])


def nccl_tests(path: Path) -> dict[int, float]:
    out = {}
    for line in path.read_text().splitlines():
        p = line.split()
        if len(p) > 6 and p[0].isdigit() and int(p[0]) > 0:
            out[int(p[0])] = float(p[5])
    return out


def linkscope(path: Path) -> dict[int, float]:
    return {m["size_bytes"]: m["latency_us"] for m in json.loads(path.read_text())["measurements"]}


MODES = (("one process, both GPUs", "nt/*_r*.txt", lambda f: root / "ls" / (f.stem + ".json")),
         ("per GPU (mpirun -n 2)", "mpi/nt_*_r*.txt", lambda f: root / "mpi" / (f.stem.replace("nt_", "ls_", 1) + ".json")),
         # call 5: each linkscope rank seeing only its own GPU (CUDA_VISIBLE_DEVICES per rank)
         ("per GPU, one GPU visible per rank", "mpi/nt_*_r*.txt",
          lambda f: root / "mpi" / (f.stem.replace("nt_", "lsiso_", 1) + ".json")),
         # call 7: mpi4py's MPI started with MPI_THREAD_SINGLE (MPI4PY_RC_THREAD_LEVEL=single)
         ("per GPU, MPI_THREAD_SINGLE", "mpi/nt_*_r*.txt",
          lambda f: root / "mpi" / (f.stem.replace("nt_", "lssingle_", 1) + ".json")))
for mode, nt_glob, ls_of in MODES:
    pairs: dict = defaultdict(list)
    for f in sorted(root.glob(nt_glob)):
        op = f.stem.rsplit("_r", 1)[0].replace("nt_", "", 1)
        ls_file = ls_of(f)
        if not ls_file.exists():
            continue
        nt, ls = nccl_tests(f), linkscope(ls_file)
        for size in sorted(set(nt) & set(ls)):
            pairs[(op, size)].append((nt[size], ls[size]))
    if not pairs:
        continue
    print(f"== {mode}: nccl-tests / linkscope, eager, paired by round")
    for op in sorted({k[0] for k in pairs}):
        worst = []
        for size in sorted(s for o, s in pairs if o == op):
            p = pairs[(op, size)]
            ratios = [a / b for a, b in p]
            med = statistics.median(ratios)
            nts, lss = [a for a, _ in p], [b for _, b in p]
            worst.append(med)
            print(f"  {op:15s} {size:>9d} B  n={len(p)}  paired median {med:5.2f}  range {min(ratios):4.2f}-{max(ratios):4.2f}"
                  f"  nccl-tests {statistics.median(nts):7.2f} us (spread {max(nts) / min(nts):4.2f})"
                  f"  linkscope {statistics.median(lss):7.2f} us (spread {max(lss) / min(lss):4.2f})")
        print(f"  {op}: lowest paired median {min(worst):.2f}, rows >= 0.97: {sum(w >= 0.97 for w in worst)} of {len(worst)}")
