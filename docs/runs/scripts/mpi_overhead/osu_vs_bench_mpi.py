"""OSU 5.3 (host buffers) vs `linkscope bench mpi --buffers HH` in interleaved rounds, same mpirun flags
(issue 27). One or more source trees of linkscope run in every round (e.g. before/after a change).

    OSU_BIN=/tmp/anchors/bin [OSU_LATENCY=/tmp/osu_latency_1k] [TESTS=latency,allreduce] \\
      python bench/mpi_overhead/osu_vs_bench_mpi.py ROUNDS before=/tmp/old/src after=src

OSU_BIN holds osu_latency, osu_bw, osu_bibw, osu_allreduce (`bash ../shared/anchors/build.sh /tmp/anchors`
builds them with the mpicc on PATH). OSU_LATENCY may name an osu_latency built with MAX_MSG_SIZE = 1 KiB
(the same loop, sizes up to 1 KiB only: 3 s a run instead of 40 on a loaded machine). Latency runs 2000
iterations (`-i 2000 -x 100`, and the same for linkscope) so that some rounds pass between preemptions.
Prints per test and size: each tool's best round (min latency, max MB/s), best/best, and the median of
the per-round ratios linkscope / OSU (latency: above 1 = linkscope slower; MB/s: below 1 = slower).
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

osu_bin = os.environ.get("OSU_BIN", "/tmp/anchors/bin")
trees = dict(arg.split("=", 1) for arg in sys.argv[2:]) or {"this": "src"}
rounds = int(sys.argv[1])
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
mpirun = ["mpirun", "-n", "2", "--bind-to", "none"]
tests = {  # test: (OSU command, linkscope options, sizes compared, latency?)
    "latency": ([os.environ.get("OSU_LATENCY", f"{osu_bin}/osu_latency"), "-i", "2000", "-x", "100"],
                ["--iterations", "2000", "--warmup", "100"], [8, 1024], True),
    "allreduce": ([f"{osu_bin}/osu_allreduce", "-m", "8", "-i", "1000", "-x", "200"], [], [8], True),
    "bw": ([f"{osu_bin}/osu_bw"], [], [65536, 1048576], False),
    "bibw": ([f"{osu_bin}/osu_bibw"], [], [65536, 1048576], False),
}
if os.environ.get("TESTS"):
    tests = {k: v for k, v in tests.items() if k in os.environ["TESTS"].split(",")}


def osu(cmd: list[str]) -> dict[int, float]:
    out = subprocess.run(mpirun + cmd, env=env, capture_output=True, text=True, timeout=300).stdout
    return {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"^(\d+)\s+([\d.]+)\s*$", out, re.M)}


def linkscope(tree: str, test: str, options: list[str], sizes: list[int]) -> dict[int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.json")
        subprocess.run(mpirun + [sys.executable, "-m", "linkscope", "bench", "mpi", "--test", test, "--buffers", "HH",
                                 "--sizes", ",".join(map(str, sizes)), "--json", path, *options],
                       env=dict(env, PYTHONPATH=tree), capture_output=True, text=True, timeout=300, check=True)
        with open(path) as f:
            record = json.load(f)
    return {m["size_bytes"]: float(m["extra"]["osu_value"]) for m in record["measurements"]}


values: dict[tuple[str, int, str], list[float]] = {}
t_start = time.time()
for _ in range(rounds):
    for test, (command, options, sizes, _latency) in tests.items():
        got = {"osu": osu(command)} | {name: linkscope(tree, test, options, sizes) for name, tree in trees.items()}
        for size in sizes:
            for name, by_size in got.items():
                values.setdefault((test, size, name), []).append(by_size.get(size, float("nan")))
print(f"# {rounds} rounds in {time.time() - t_start:.0f} s, load average {os.getloadavg()}")
for test, (_, _, sizes, latency) in tests.items():
    best = min if latency else max
    for size in sizes:
        ref = values[(test, size, "osu")]
        line = f"{test:9s} {size:8d}  osu best {best(ref):10.3f}"
        for name in trees:
            mine = values[(test, size, name)]
            ratio = statistics.median(a / b for a, b in zip(mine, ref))
            line += f" | {name} best {best(mine):10.3f} best/best {best(mine) / best(ref):5.2f} median {ratio:5.2f}"
        print(line)
