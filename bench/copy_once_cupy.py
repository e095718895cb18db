"""Copy SIZE bytes once from GPU SRC to GPU DST with CuPy (peer copy, or staged through host memory).

Usage: python bench/copy_once_cupy.py SRC DST SIZE [--via-host]

A target for ``linkscope watch``: with peer access the copy engine moves the data over NVLink (when
the GPUs are NVLink-connected), so NVML should count about SIZE bytes on SRC's NVLink TX and DST's
NVLink RX; ``--via-host`` stages through pinned host memory, so the bytes cross PCIe instead.
Buffers are filled on the device (no PCIe traffic before the copy). Prints one line per run.
"""
from __future__ import annotations

import argparse
import sys
import time


def parse_size(text: str) -> int:
    units = {"": 1, "k": 1024, "kib": 1024, "m": 1024**2, "mib": 1024**2, "g": 1024**3, "gib": 1024**3}
    number = text.rstrip("KMGBikmgb")  # a set of unit letters, not a suffix
    return int(float(number) * units[text[len(number):].lower()])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=int)
    parser.add_argument("dst", type=int)
    parser.add_argument("size", type=parse_size)
    parser.add_argument("--via-host", action="store_true", help="stage through pinned host memory (PCIe)")
    args = parser.parse_args()

    import cupy as cp

    rt = cp.cuda.runtime
    n = rt.getDeviceCount()
    for d in (args.src, args.dst):
        if d >= n:
            print(f"copy_once_cupy: GPU {d} does not exist (CUDA sees {n})", file=sys.stderr)
            return 1
    with cp.cuda.Device(args.src):
        a = cp.empty(args.size, dtype=cp.uint8)
        a.fill(7)
        cp.cuda.Device(args.src).synchronize()
    with cp.cuda.Device(args.dst):
        b = cp.zeros(args.size, dtype=cp.uint8)
        cp.cuda.Device(args.dst).synchronize()
    bus = {d: cp.cuda.Device(d).pci_bus_id for d in (args.src, args.dst)}
    start = time.perf_counter()
    if args.via_host:
        host = cp.cuda.alloc_pinned_memory(args.size)
        with cp.cuda.Device(args.src):
            rt.memcpy(host.ptr, a.data.ptr, args.size, rt.memcpyDeviceToHost)
        with cp.cuda.Device(args.dst):
            rt.memcpy(b.data.ptr, host.ptr, args.size, rt.memcpyHostToDevice)
        how = "via pinned host memory"
    else:
        for x, y in ((args.dst, args.src), (args.src, args.dst)):
            if not rt.deviceCanAccessPeer(x, y):
                print(f"copy_once_cupy: no peer access between GPU {x} and GPU {y}", file=sys.stderr)
                return 1
            with cp.cuda.Device(x):
                try:
                    rt.deviceEnablePeerAccess(y)
                except cp.cuda.runtime.CUDARuntimeError as exc:  # already enabled
                    if "PeerAccessAlreadyEnabled" not in str(exc):
                        raise
        with cp.cuda.Device(args.src):
            rt.memcpyPeer(b.data.ptr, args.dst, a.data.ptr, args.src, args.size)
            cp.cuda.Device(args.src).synchronize()
        how = "peer copy (cudaMemcpyPeer)"
    for d in (args.src, args.dst):
        cp.cuda.Device(d).synchronize()
    elapsed = time.perf_counter() - start
    with cp.cuda.Device(args.dst):
        ok = bool((b[:: max(1, args.size // 4096)] == 7).all())
    print(f"copied {args.size} B from GPU {args.src} ({bus[args.src]}) to GPU {args.dst} ({bus[args.dst]}) "
          f"{how} in {elapsed * 1e3:.2f} ms = {args.size / elapsed / 1e9:.1f} GB/s, data ok: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
