"""Host-read and remote-read latency by how the chase is spread over the SMs (issue 27), beside
nvbandwidth's host_device_latency_sm / device_to_device_latency_sm run in the same call.

nvbandwidth (kernels.cu latencyPtrChaseKernel) launches one block per SM and lets only block k chase in
its k-th launch: its figure is the mean over the SMs of one SM chasing alone. On 2 x H100 (2026-11-25,
visit 10) linkscope's chase on every SM at once read remote memory at 1.003x of nvbandwidth but host
memory 2.7-3% slower (1.21-1.28 against 1.18-1.21 us): 132 chasers at once through one PCIe link. This
runs, per reader GPU and memory (host, the other GPU), in interleaved rounds:

    every-sm      every SM at once (NVIDIA remote-read since visit 6), median of 10 samples
    one-block     block 0 alone, median of 10 samples
    in-turn H     block k alone in launch k, H hops a launch, the mean over the SMs (nvbandwidth's method;
                  NVIDIA host-read since visit 12)

    PYTHONPATH=src python3 bench/chase_modes.py [ROUNDS] [OUT.json]
"""
from __future__ import annotations

import json
import statistics
import sys

MiB = 1024 * 1024


def main() -> int:
    from linkscope.engines.cuda import CudaEngine
    from linkscope.engines.gpu.latency import HOST, remote_read_us

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    eng = CudaEngine(None)
    samples: dict[str, list[float]] = {}
    try:
        ctx, gate = eng._ctx, eng._gate
        n = len(ctx.sm_count) if ctx.sm_count else 2
        for a in range(n):
            for b in range(n):
                if a != b:
                    ctx.peer.enable(b, a)
        for _ in range(rounds):
            for reader in range(n):
                sms = int(ctx.sm_count.get(reader, 132))
                for memory in [HOST] + [m for m in range(n) if m != reader]:
                    where = "host" if memory == HOST else f"GPU{memory}"
                    key = f"GPU{reader} reads {where}"
                    got = remote_read_us(ctx, gate, memory, reader, 2 * MiB, 10, 2, spread="every-sm", sms=sms)
                    samples.setdefault(f"{key}: every-sm", []).append(statistics.median(got))
                    got = remote_read_us(ctx, gate, memory, reader, 2 * MiB, 10, 2)
                    samples.setdefault(f"{key}: one-block", []).append(statistics.median(got))
                    for hops in (10_000, 2_000):
                        got = remote_read_us(ctx, gate, memory, reader, 2 * MiB, sms, 1, hops=hops, spread="in-turn", sms=sms)
                        samples.setdefault(f"{key}: in-turn {hops}", []).append(statistics.fmean(got))
    finally:
        eng.close()
    print(f"{'case':44s} {'rounds (us)':>40s}")
    for k, v in samples.items():
        print(f"{k:44s} {' / '.join(f'{x:.4f}' for x in v):>40s}")
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as fh:
            json.dump(samples, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
