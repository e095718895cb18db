"""linkscope's CUDA engine against the issue-3 targets (nvbandwidth v0.8 etc. on H200, NV18).

Runs on the GPU machine, from the repository root:

    NCCL_NVLS_ENABLE=0 PYTHONPATH=src python bench/h200_suite.py [--no-tests] [--quick]

(a) runs the GPU tests (tests/engines/test_cuda.py), (b) measures on every GPU present, driving
the engine directly (warm-up, reps, median/min/max, CV): CE one-way and bidirectional per pair
(ce, ce-read, ce-write), SM push/pull one-way and bidirectional (and a small launch-shape sweep),
all-to-one CE per receiver (with 2 GPUs that is 1->0), remote-read and one-way flag latency,
ce-nopeer, staged and staged-pinned one-way (chunk sweep), h2d/d2h pinned, and the suite's wall
time. Prints the target table last and writes JSON to $OUT (or the current directory).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from datetime import date

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from linkscope.engines.cuda import CudaEngine, SmLaunch
from linkscope.patterns.plan import Transfer, TransferPlan
from linkscope.results.stats import Stats

MiB = 1024 * 1024
SIZE = 512 * MiB  # nvbandwidth's anchor buffer size
RESULTS: dict = {"date": str(date.today()), "size_bytes": SIZE, "rows": {}, "errors": [], "sweeps": {}}


def stats_gb(bytes_per_rep: int, seconds: list[float]) -> Stats:
    return Stats.from_samples([bytes_per_rep / s / 1e9 for s in seconds])


def measure(method: str, pairs: list[tuple], size: int = SIZE, reps: int = 15, warmup: int = 3, verify: bool = True,
            chunk: int | None = None, eng: CudaEngine | None = None) -> dict:
    """Per-transfer GB/s stats, sum of per-transfer medians, and total bytes / group time."""
    plan = TransferPlan(pattern="bench", direction="uni" if len(pairs) == 1 else "bi", method=method,
                        transfers=tuple(Transfer(s, d, size) for s, d in pairs))
    res = eng.run(plan, reps, warmup=warmup, verify=verify, chunk_bytes=chunk)
    per = [stats_gb(t.moved_bytes, list(t.elapsed_s)) for t in res.timings]
    total_bytes = sum(t.moved_bytes for t in res.timings)
    group = stats_gb(total_bytes, list(res.group_elapsed_s))
    return {
        "method": method, "pairs": pairs, "size_bytes": size,
        "per_transfer_median_gb_per_s": [p.median for p in per],
        "per_transfer_min_gb_per_s": [p.min for p in per],
        "per_transfer_max_gb_per_s": [p.max for p in per],
        "per_transfer_cv": [p.cv for p in per],
        "sum_of_medians_gb_per_s": sum(p.median for p in per),
        "group_total_median_gb_per_s": group.median, "group_cv": group.cv,
        "verified": [t.verified for t in res.timings], "notes": list(res.notes), "n": per[0].n,
    }


def guarded(name: str, fn):
    try:
        t0 = time.perf_counter()
        out = fn()
        RESULTS["rows"][name] = out
        print(f"  {name}: {short(out)}  ({time.perf_counter() - t0:.2f} s)", flush=True)
        return out
    except Exception as exc:  # keep going: one failing measurement must not lose the suite
        RESULTS["errors"].append({"name": name, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()})
        print(f"  {name}: ERROR {type(exc).__name__}: {exc}", flush=True)
        return None


def short(out) -> str:
    if isinstance(out, dict) and "per_transfer_median_gb_per_s" in out:
        per = ", ".join(f"{v:.1f}" for v in out["per_transfer_median_gb_per_s"])
        cvs = ", ".join(f"{100 * v:.2f}%" for v in out["per_transfer_cv"])
        return (f"per-transfer {per} GB/s (cv {cvs}); sum {out['sum_of_medians_gb_per_s']:.1f}; "
                f"group {out['group_total_median_gb_per_s']:.1f}; verified {out['verified']}")
    if isinstance(out, dict) and "median_us" in out:
        return f"median {out['median_us']:.3f} us (min {out['min_us']:.3f}, max {out['max_us']:.3f}, n {out['n']})"
    return str(out)[:200]


def lat(eng: CudaEngine, kind: str, src, dst, reps: int = 10) -> dict:
    s = Stats.from_samples(list(eng.latency_us(kind, src, dst, method=None, size_bytes=8, reps=reps, warmup=2)))
    return {"median_us": s.median, "min_us": s.min, "max_us": s.max, "cv": s.cv, "n": s.n}


def parse_shape(spec: str) -> SmLaunch:
    """``UxTxB`` (unroll x threads x blocks/SM) or ``bulkPxSxB`` (piece bytes x stages x blocks/SM)."""
    if spec.startswith("bulk"):
        piece, stages, bps = (int(x) for x in spec[4:].split("x"))
        return SmLaunch(blocks_per_sm=bps, bulk=(piece, stages))
    u, t, b = (int(x) for x in spec.split("x"))
    return SmLaunch(unroll=u, threads=t, blocks_per_sm=b)


def run_tests() -> dict:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/engines/test_cuda.py"],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": "src"}, timeout=240)
    except subprocess.TimeoutExpired as exc:
        return {"rc": -1, "summary": "GPU tests timed out after 240 s", "wall_s": time.perf_counter() - t0,
                "output_tail": str(exc.stdout)[-3000:]}
    tail = (proc.stdout + proc.stderr).strip().splitlines()
    print("\n".join(tail[-25:]), flush=True)
    return {"rc": proc.returncode, "summary": tail[-1] if tail else "", "wall_s": time.perf_counter() - t0,
            "output_tail": "\n".join(tail[-60:])}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-tests", action="store_true")
    ap.add_argument("--quick", action="store_true", help="fewer sweeps")
    ap.add_argument("--sm-sweep", default="4x512x4,8x256x4,4x256x8,"
                    "bulk4096x4x4,bulk4096x4x8,bulk8192x4x2,bulk8192x4x4,bulk8192x4x6,bulk16384x2x4,bulk8192x2x8")
    ap.add_argument("--sm-default", default="", help="launch shape for the table rows, e.g. bulk8192x4x4 or 4x512x4")
    args = ap.parse_args()
    out_dir = os.environ.get("OUT", ".")
    wall0 = time.perf_counter()
    if not args.no_tests:
        print("== GPU tests", flush=True)
        RESULTS["tests"] = run_tests()

    print("== suite", flush=True)
    t_suite = time.perf_counter()
    eng = CudaEngine()
    RESULTS["engine_init_s"] = time.perf_counter() - t_suite
    n = eng.gpu_count()
    RESULTS["gpus"] = [eng.device_name(i) for i in range(n)]
    RESULTS["peer"] = [[eng.can_access_peer(i, j) if i != j else True for j in range(n)] for i in range(n)]
    print(f"  {n} GPUs: {RESULTS['gpus']}; peer {RESULTS['peer']}; engine init {RESULTS['engine_init_s']:.2f} s", flush=True)
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    upairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    m = lambda *a, **k: measure(*a, eng=eng, **k)  # noqa: E731
    if args.sm_default:
        eng.sm_launch = parse_shape(args.sm_default)
    RESULTS["sm_launch"] = str(eng.sm_launch)

    for g in range(n):
        guarded(f"h2d {g}", lambda g=g: m("h2d", [("host", g)]))
        guarded(f"d2h {g}", lambda g=g: m("d2h", [(g, "host")]))
    if n >= 2:
        for method in ("ce", "ce-write", "ce-read", "sm-push", "sm-pull"):
            for a, b in pairs:
                guarded(f"{method} {a}->{b}", lambda a=a, b=b, method=method: m(method, [(a, b)]))
            for a, b in upairs:
                guarded(f"{method} {a}<->{b}", lambda a=a, b=b, method=method: m(method, [(a, b), (b, a)]))
        for method in ("ce-write", "ce-read"):
            for r in range(n if not args.quick else 1):
                senders = [(s, r) for s in range(n) if s != r]
                guarded(f"all-to-one {method} ->{r}", lambda senders=senders, method=method: m(method, senders))
        for a, b in pairs:
            guarded(f"remote-read {a}->{b}", lambda a=a, b=b: lat(eng, "remote-read", a, b))
        for a, b in upairs:
            guarded(f"flag-pingpong {a}<->{b}", lambda a=a, b=b: lat(eng, "flag-pingpong", a, b))
        guarded("copy-latency ce 8B 0->1", lambda: lat(eng, "copy", 0, 1))
        guarded("ce-nopeer 0->1", lambda: m("ce-nopeer", [(0, 1)], reps=5, warmup=1))
        guarded("staged 0->1", lambda: m("staged", [(0, 1)], size=256 * MiB, reps=3, warmup=1))
        chunks = (2, 4, 8, 16, 32) if not args.quick else (8,)
        for c in chunks:
            guarded(f"staged-pinned 0->1 chunk {c}MiB", lambda c=c: m("staged-pinned", [(0, 1)], reps=5, warmup=1, chunk=c * MiB))
        guarded("staged-pinned 0<->1 chunk 8MiB", lambda: m("staged-pinned", [(0, 1), (1, 0)], reps=5, warmup=1, chunk=8 * MiB))
    RESULTS["suite_wall_s"] = time.perf_counter() - t_suite

    if n >= 2 and not args.quick:
        print("== remote-read latency sweep (stride, buffer)", flush=True)
        from linkscope.engines.gpu.latency import remote_read_us

        for stride, buf in ((64, 2 * MiB), (128, 2 * MiB), (256, 2 * MiB), (1024, 2 * MiB), (4096, 2 * MiB),
                            (256, 64 * 1024), (256, 256 * 1024), (256, 32 * MiB)):
            def chase(stride=stride, buf=buf):
                xs = remote_read_us(eng._ctx, eng._gate, 1, 0, buf, 5, 1, stride_bytes=stride)
                st = Stats.from_samples(xs)
                return {"median_us": st.median, "min_us": st.min, "max_us": st.max, "n": st.n}
            guarded(f"sweep remote-read stride {stride} buffer {buf // 1024}KiB", chase)
        print("== SM launch-shape sweep (unroll x threads x blocks/SM), 512 MiB", flush=True)
        default = eng.sm_launch
        sweep = {}
        for spec in args.sm_sweep.split(","):
            eng.sm_launch = parse_shape(spec)
            row = {}
            for method in ("sm-push", "sm-pull"):
                r1 = guarded(f"sweep {spec} {method} 0->1", lambda method=method: m(method, [(0, 1)], reps=8, warmup=2, verify=False))
                r2 = guarded(f"sweep {spec} {method} 0<->1",
                             lambda method=method: m(method, [(0, 1), (1, 0)], reps=8, warmup=2, verify=False))
                row[method] = [r1 and r1["per_transfer_median_gb_per_s"][0], r2 and r2["sum_of_medians_gb_per_s"]]
            sweep[spec] = row
        RESULTS["sweeps"]["sm_launch"] = sweep
        eng.sm_launch = default
    eng.close()
    RESULTS["total_wall_s"] = time.perf_counter() - wall0
    table = target_table(n)
    RESULTS["table"] = table
    with open(os.path.join(out_dir, "h200_suite.json"), "w") as fh:
        json.dump(RESULTS, fh, indent=1, default=str)
    print("\n" + table)
    return 0


def fmt(rng, unit="GB/s") -> str:
    if not rng:
        return "N/A"
    lo, hi = rng
    digits = 3 if unit == "µs" else 1
    return f"{lo:.{digits}f} {unit}" if abs(hi - lo) < 0.5 * 10**-digits else f"{lo:.{digits}f}–{hi:.{digits}f} {unit}"


def target_table(n: int) -> str:
    r = RESULTS["rows"]

    def sel(pred, key, f=lambda x: x):
        vals = [f(v[key]) for k, v in r.items() if v and pred(k)]
        flat = [x for v in vals for x in (v if isinstance(v, list) else [v])]
        return (min(flat), max(flat)) if flat else None

    ce_uni = sel(lambda k: k.startswith("ce ") and "->" in k and "<->" not in k, "per_transfer_median_gb_per_s")
    ce_bi = sel(lambda k: k.startswith("ce ") and "<->" in k, "sum_of_medians_gb_per_s")
    smw = sel(lambda k: k.startswith("sm-push ") and "<->" not in k, "per_transfer_median_gb_per_s")
    smr = sel(lambda k: k.startswith("sm-pull ") and "<->" not in k, "per_transfer_median_gb_per_s")
    smw_bi = sel(lambda k: k.startswith("sm-push ") and "<->" in k, "sum_of_medians_gb_per_s")
    smr_bi = sel(lambda k: k.startswith("sm-pull ") and "<->" in k, "sum_of_medians_gb_per_s")
    a2o_w = sel(lambda k: k.startswith("all-to-one ce-write"), "group_total_median_gb_per_s")
    a2o_r = sel(lambda k: k.startswith("all-to-one ce-read"), "group_total_median_gb_per_s")
    rr = sel(lambda k: k.startswith("remote-read"), "median_us")  # the default chase, not the sweep
    fl = sel(lambda k: k.startswith("flag-pingpong"), "median_us")
    sp = sel(lambda k: k.startswith("staged-pinned 0->1"), "per_transfer_median_gb_per_s")
    nop = sel(lambda k: k.startswith("ce-nopeer"), "per_transfer_median_gb_per_s")
    h2d = sel(lambda k: k.startswith("h2d "), "per_transfer_median_gb_per_s")
    d2h = sel(lambda k: k.startswith("d2h "), "per_transfer_median_gb_per_s")
    big_cv = [c for k, v in r.items() if v and "per_transfer_cv" in v and not k.startswith(("sweep", "staged "))
              for c in v["per_transfer_cv"]]
    sweep = RESULTS["sweeps"].get("sm_launch", {})
    best = {}
    for i, key in enumerate(("sm-push one-way", "sm-push bidir")):
        cands = [(row["sm-push"][i], spec) for spec, row in sweep.items() if row["sm-push"][i]]
        best[key] = max(cands) if cands else None
    for i, key in enumerate(("sm-pull one-way", "sm-pull bidir")):
        cands = [(row["sm-pull"][i], spec) for spec, row in sweep.items() if row["sm-pull"][i]]
        best[key] = max(cands) if cands else None
    best_txt = "; ".join(f"{k} {v[0]:.1f} ({v[1]})" for k, v in best.items() if v) or "not run"
    a2o_note = " (2 GPUs: 1->0 only)" if n == 2 else ""
    lines = [
        f"linkscope CUDA engine, {n}× {RESULTS.get('gpus', ['?'])[0] if RESULTS.get('gpus') else '?'}, {RESULTS['date']}, 512 MiB, median; "
        f"SM rows: {RESULTS.get('sm_launch')}",
        "| quantity | anchor | target | linkscope |",
        "| --- | --- | --- | --- |",
        f"| CE one-way, per pair (ce) | nvbandwidth 394–396 GB/s | ≥ 394 | {fmt(ce_uni)} |",
        f"| CE bidirectional, total per pair | nvbandwidth 779–784 GB/s | ≥ 779 | {fmt(ce_bi)} |",
        f"| SM copy one-way (push / pull) | nvbandwidth 370 (write) / 376 (read) | ≥ 390 | {fmt(smw)} / {fmt(smr)} |",
        f"| SM copy bidirectional, total (push / pull) | nvbandwidth 731 (write) / 677 (read) | ≥ 760 | {fmt(smw_bi)} / {fmt(smr_bi)} |",
        f"| all-to-one CE per receiver (write / read){a2o_note} | nvbandwidth 399 / 338 | ≥ 399 both | {fmt(a2o_w)} / {fmt(a2o_r)} |",
        f"| remote-read latency | nvbandwidth 0.82–0.83 µs | ≤ 0.83 µs | {fmt(rr, 'µs')} |",
        f"| one-way flag latency | (report) | — | {fmt(fl, 'µs')} |",
        f"| P2P disabled one-way (ce-nopeer) | p2pBandwidthLatencyTest 38–39 | (reference) | {fmt(nop)} |",
        f"| staged-pinned one-way (best chunk) | H2D/D2H 55.5 | ≥ 50 | {fmt(sp)} |",
        f"| h2d / d2h pinned | 55.5 | — | {fmt(h2d)} / {fmt(d2h)} |",
        f"| SM copy, best launch shape of the sweep | — | ≥ 390 / ≥ 760 | {best_txt} |",
        f"| suite wall time ({n} GPUs, excl. tests & sweep) | nvbandwidth 58 s (4 GPUs, 21 cases) | ≤ 20 s | "
        f"{RESULTS.get('suite_wall_s', 0):.1f} s |",
        (f"| CV on large transfers (max over rows, host-timed staged excluded) | — | ≤ 1% | {100 * max(big_cv):.2f}% |"
         if big_cv else "| CV | — | ≤ 1% | N/A |"),
        f"| GPU tests | — | pass | {RESULTS.get('tests', {}).get('summary', 'not run')} |",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
