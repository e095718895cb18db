"""A noisy neighbour for the broken-node recordings (issue 33): copy engines busy both ways between two GPUs.

Usage: python3 noisy.py SECONDS [SRC DST]   (defaults 0 1)
Copies 1 GiB SRC->DST and DST->SRC over peer access on two streams, back to back, until SECONDS have passed or it is
killed; prints the GB/s it got once at the end (so the recording shows how much of the link it took).
"""
from __future__ import annotations

import sys
import time

import cupy as cp


def main() -> int:
    seconds = float(sys.argv[1])
    src, dst = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (0, 1)
    size = 1 << 30
    rt = cp.cuda.runtime
    bufs, streams = {}, {}
    for d, peer in ((src, dst), (dst, src)):
        with cp.cuda.Device(d):
            rt.deviceEnablePeerAccess(peer)
            bufs[d] = (cp.ones(size, dtype=cp.uint8), cp.zeros(size, dtype=cp.uint8))
            streams[d] = cp.cuda.Stream(non_blocking=True)
    moved = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for d, peer in ((src, dst), (dst, src)):
            with cp.cuda.Device(d):
                rt.memcpyPeerAsync(bufs[peer][1].data.ptr, peer, bufs[d][0].data.ptr, d, size, streams[d].ptr)
        for s in streams.values():
            s.synchronize()
        moved += 2 * size
    elapsed = time.perf_counter() - t0
    print(f"noisy: {moved / elapsed / 1e9:.1f} GB/s both ways for {elapsed:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
