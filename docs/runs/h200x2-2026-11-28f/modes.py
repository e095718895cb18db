"""Per-generation medians of drv.c's eager time (docs/runs/h200x2-2026-11-28c/drv.c, DRV_GENERATIONS), per
environment: one file per (environment, process) named drv/ENV_pP.txt. Prints one line per environment
(the generations' medians, us per op, and their max/min) and, last, the environment whose generations agree best
(max/min under 1.12, the fastest of those; "default" when none). 2026-11-28, issue 36.
    python3 modes.py DIR"""
import collections
import pathlib
import statistics
import sys

by_env: dict[str, list[float]] = collections.defaultdict(list)
for path in sorted(pathlib.Path(sys.argv[1]).glob("*_p*.txt")):
    env = path.stem.rsplit("_p", 1)[0]
    gens: dict[int, list[float]] = collections.defaultdict(list)
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[0] in ("allreduce", "sendrecv", "allgather"):
            gens[int(parts[4])].append(float(parts[3]))
    by_env[env] += [statistics.median(v) for _, v in sorted(gens.items())]
best, best_median = "default", float("inf")
for env, medians in by_env.items():
    if not medians:
        print(f"{env}: no result")
        continue
    ratio = max(medians) / min(medians)
    print(f"{env}: {len(medians)} generations, medians {' '.join(f'{m:.1f}' for m in medians)} us; max/min {ratio:.2f}")
    if env != "default" and ratio < 1.12 and statistics.median(medians) < best_median:
        best, best_median = env, statistics.median(medians)
print(best)
