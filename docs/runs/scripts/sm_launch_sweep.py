"""SM copy kernel launch shapes between two GPUs at 16 and 64 MiB (issue 27): GB/s of sm-push and sm-pull
(GPU0 -> GPU1) for each (threads, blocks per SM, unroll, bulk), median of 10 regions after 2 warm-up
regions, with the engine's timing (gated regions, lead-in, in-kernel loops). The default shape is
SmLaunch() (engines/gpu/ops.py). Needs CuPy and two GPUs with peer access.
  PYTHONPATH=src python3 bench/sm_launch_sweep.py [OUT.json] [SIZES_MIB (comma list, default 16,64)] [short]
"short": the default shape and the best of visit 5's full sweep only; "pull": sm-pull only, with unrolls 12 and 16.
"""
from __future__ import annotations

import itertools
import json
import statistics
import sys

MiB = 1024 * 1024


def main() -> int:
    from linkscope.engines.cuda import CudaEngine
    from linkscope.engines.gpu.ops import SmLaunch
    from linkscope.patterns.plan import Transfer, TransferPlan

    shapes = [SmLaunch()] + [SmLaunch(unroll=u, threads=t, blocks_per_sm=b)
                             for t, b, u in itertools.product((256, 512, 1024), (1, 2, 4), (4, 8))
                             if (u, t, b) != (4, 512, 4) and t * b <= 2048]
    shapes += [SmLaunch(bulk=(16384, 2)), SmLaunch(bulk=(8192, 4))]
    if len(sys.argv) > 3 and sys.argv[3] == "short":
        shapes = [SmLaunch(), SmLaunch(threads=256, blocks_per_sm=1), SmLaunch(threads=256, blocks_per_sm=1, unroll=8),
                  SmLaunch(threads=1024, blocks_per_sm=2, unroll=8), SmLaunch(threads=512, blocks_per_sm=2, unroll=8)]
    if len(sys.argv) > 3 and sys.argv[3] == "pull":  # the default, the push shape, deeper unrolls
        shapes = [SmLaunch(), SmLaunch(threads=256, blocks_per_sm=1), SmLaunch(threads=1024, blocks_per_sm=2, unroll=8),
                  SmLaunch(threads=512, blocks_per_sm=1, unroll=12), SmLaunch(threads=512, blocks_per_sm=2, unroll=12),
                  SmLaunch(threads=512, blocks_per_sm=1, unroll=16), SmLaunch(threads=256, blocks_per_sm=2, unroll=16),
                  SmLaunch(threads=256, blocks_per_sm=4, unroll=12)]
    methods = ("sm-pull",) if len(sys.argv) > 3 and sys.argv[3] == "pull" else ("sm-push", "sm-pull")
    sizes = [int(x) * MiB for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else [16 * MiB, 64 * MiB]
    rows = []
    with CudaEngine(None) as eng:
        for size in sizes:
            for method in methods:
                for shape in shapes:
                    eng.sm_launch = shape
                    plan = TransferPlan("pair", "uni", method, (Transfer(0, 1, size),))
                    try:
                        res = eng.run(plan, 10, warmup=2, verify=False)
                    except Exception as exc:  # a shape the kernel set lacks
                        print(f"{method} {size // MiB} MiB {shape}: {exc}")
                        continue
                    gbps = size / statistics.median(res.timings[0].elapsed_s) / 1e9
                    rows.append({"method": method, "size_mib": size // MiB, "threads": shape.threads,
                                 "blocks_per_sm": shape.blocks_per_sm, "unroll": shape.unroll,
                                 "bulk": list(shape.bulk) if shape.bulk else None, "gb_per_s": gbps})
                    print(f"{method:8s} {size // MiB:3d} MiB threads {shape.threads:4d} blocks/SM {shape.blocks_per_sm} "
                          f"unroll {shape.unroll} bulk {shape.bulk}: {gbps:7.1f} GB/s", flush=True)
    if len(sys.argv) > 1 and sys.argv[1] != "-":
        with open(sys.argv[1], "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
