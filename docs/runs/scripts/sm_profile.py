"""Launch each SM copy kernel once (512 MiB, GPU 0 -> 1, no start gate) so Nsight Compute can read
its NVLink and DRAM counters:

    ncu --clock-control none -k regex:copy_ --metrics nvltx__bytes.sum,... python3 bench/sm_profile.py
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from linkscope.engines.cuda import CudaEngine

SIZE = 512 * 1024 * 1024

with CudaEngine() as eng:
    eng._set_peer("ce", {(0, 1)})
    for method in ("sm-push", "sm-pull"):
        eng._ctx.reset_lanes()
        op = eng._build(method, 0, 1, SIZE, None)
        op.enqueue(1)
        for lane in op.lanes:
            lane.stream.synchronize()
        op.free()
        print(f"{method}: launched {op.kernel} grid {op.grid} x {op.threads}")
