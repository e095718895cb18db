"""Medians of the interleaved rounds of docs/runs/h200x2-2026-11-28b/visit2.sh: nccl-tests time / linkscope time per
size (>= 1: linkscope as fast or faster), per launch mode, and the host launch cost per op of each eager loop.
    python3 docs/runs/h200x2-2026-11-28b/medians.py DIR      (DIR: the visit's nccl/ and linkscope/ folders' parent)"""
import glob
import json
import re
import statistics as st
import sys

OPS = (("allgather", "all_gather"), ("alltoall", "alltoall"), ("sendrecv", "sendrecv"), ("allreduce", "all_reduce"),
       ("reduce_scatter", "reduce_scatter"))


def nccl_tests(path):
    """size -> out-of-place time (us) of one nccl-tests output."""
    rows = {}
    for line in open(path):
        t = line.split()
        if len(t) >= 12 and t[0].isdigit():
            try:
                rows[int(t[0])] = float(t[5])
            except ValueError:
                pass
    return rows


def linkscope(path):
    """size -> time (us), and the rows' launch paths, of one bench nccl --json."""
    d = json.load(open(path))
    rows = [m for m in d["measurements"] if not m["extra"].get("inplace")]
    return {m["size_bytes"]: m["extra"]["time_us"] for m in rows}, {m["extra"].get("launch_path") for m in rows}


def rounds(pattern):
    """Round number -> file, for a glob with r* at the round's place."""
    return {int(re.search(r"_r(\d+)\.", f).group(1)): f for f in glob.glob(pattern)}


def compare(d, label, nt_main, nt_extra, ls_pat):
    nt = {}
    for k, f in rounds(f"{d}/{nt_main}").items():
        nt[k] = nccl_tests(f)
        extra = f"{d}/{nt_extra.replace('r*', f'r{k}')}" if nt_extra else ""
        if extra and glob.glob(extra):
            nt[k].update(nccl_tests(extra))
    ls = {k: linkscope(f) for k, f in rounds(f"{d}/{ls_pat}").items()}
    if not nt or not ls:
        print(f"{label:30s} missing (nccl-tests rounds {len(nt)}, linkscope rounds {len(ls)})")
        return
    paths = set().union(*(p for _, p in ls.values()))
    sizes = sorted(set.intersection(*[set(x) for x in nt.values()], *[set(x) for x, _ in ls.values()]))
    ratios = []
    for s in sizes:
        a = st.median(x[s] for x in nt.values())
        b = st.median(x[s] for x, _ in ls.values())
        ratios.append((s, a, b, a / b))
    low = [f"{s}:{r:.2f}" for s, _, _, r in ratios if r < 0.97]
    print(f"{label:30s} rounds {len(nt)}/{len(ls)} launch {'/'.join(sorted(map(str, paths)))} "
          f"min {min(r for *_, r in ratios):.2f} median {st.median(r for *_, r in ratios):.2f} "
          f"at 1 GiB {next((f'{r:.2f}' for s, _, _, r in ratios if s == 1 << 30), 'n/a')}; "
          f"below 0.97: {' '.join(low) or 'none'}")


def launch_cost(d):
    """Median over sizes of each row's launch_us (host time to enqueue one eager op), per op and loop."""
    for f in sorted(glob.glob(f"{d}/linkscope/launch_*.json")):
        data = json.load(open(f))
        rows = [m["extra"] for m in data["measurements"] if not m["extra"].get("inplace")]
        us = [r["launch_us"] for r in rows if r.get("launch_us") is not None]
        paths = sorted({str(r.get("launch_path")) for r in rows})
        if us:
            print(f"launch cost {f.split('/')[-1][7:-5]:24s} loop {'/'.join(paths):7s} median {st.median(us):6.2f} us/op "
                  f"(min {min(us):.2f}, max {max(us):.2f}, {len(us)} sizes)")


def main(d):
    for op, b in OPS:
        compare(d, f"{op} eager 1 proc", f"nccl/{b}_g0_r*.txt", f"nccl/{b}_1g_g0_r*.txt", f"nccl/ls_{op}_g0_r*.json")
    for op, b in OPS[:3]:
        for g, mode in ((0, "eager"), (20, "-G 20")):
            compare(d, f"{op} {mode} per GPU", f"nccl/mpi_{b}_g{g}_r*.txt", "", f"nccl/mpi_ls_{op}_g{g}_r*.json")
    launch_cost(d)


if __name__ == "__main__":
    main(sys.argv[1])
