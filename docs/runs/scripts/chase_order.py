"""Remote-read latency by chase order, size and stride beside nvbandwidth's chase (issue 27).

nvbandwidth's device_to_device_latency_sm walks its buffer in order (node i -> i+16 words, 128 B apart,
testcase.cpp latencyHelper) from the start of the buffer in every kernel; linkscope's chase follows a
random cycle of 256 B-strided nodes through a 2 MiB buffer. This runs both orders at both strides and
at 2 MiB and 64 MiB on the real engine, in interleaved rounds, and prints the median µs per hop of each
(GPU1 reading GPU0's memory and back). nvbandwidth also launches one block per SM and lets block k
chase in its k-th launch, so its figure is the mean over all SMs; the "per SM" rows do the same (one
sample per SM) and print the spread. Needs CuPy and two GPUs with peer access.
  PYTHONPATH=src python3 bench/chase_order.py [ROUNDS] [OUT.json]
"""
from __future__ import annotations

import json
import statistics
import sys

MiB = 1024 * 1024
CASES = [  # (order, chain bytes, stride bytes)
    ("random", 2 * MiB, 256),      # linkscope's default
    ("random", 64 * MiB, 256),
    ("sequential", 2 * MiB, 128),  # nvbandwidth's walk over a hot region
    ("sequential", 64 * MiB, 128),
    ("random", 2 * MiB, 128),
    ("sequential", 2 * MiB, 256),
]


def main() -> int:
    from linkscope.engines.cuda import CudaEngine
    from linkscope.engines.gpu.latency import HOPS, remote_read_us

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    eng = CudaEngine(None)
    samples: dict[str, list[float]] = {}
    try:
        ctx, gate = eng._ctx, eng._gate
        for a, b in ((0, 1), (1, 0)):
            ctx.peer.enable(b, a)
        for _ in range(rounds):
            for order, size, stride in CASES:
                for owner, reader in ((0, 1), (1, 0)):
                    key = f"{order} {size // MiB} MiB stride {stride} B, GPU{reader} reads GPU{owner}"
                    got = remote_read_us(ctx, gate, owner, reader, size, 10, 2, stride_bytes=stride, order=order)
                    samples.setdefault(key, []).extend(got)
        for owner, reader in ((0, 1), (1, 0)):  # one sample per SM, as nvbandwidth's latency test
            sms = int(ctx.sm_count.get(reader, 132))
            for _ in range(rounds):
                got = remote_read_us(ctx, gate, owner, reader, 2 * MiB, sms, 1, hops=HOPS, spread="in-turn", sms=sms)
                samples.setdefault(f"random 2 MiB, block k on SM k ({sms} SMs), GPU{reader} reads GPU{owner}", []).extend(got)
    finally:
        eng.close()
    rows = {k: {"median_us": statistics.median(v), "mean_us": statistics.fmean(v), "min_us": min(v), "max_us": max(v),
                "n": len(v)} for k, v in samples.items()}
    print(f"{'case':72s} {'median us':>9s} {'mean us':>8s} {'min us':>7s} {'max us':>7s}")
    for k, r in rows.items():
        print(f"{k:72s} {r['median_us']:9.4f} {r['mean_us']:8.4f} {r['min_us']:7.4f} {r['max_us']:7.4f}")
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
