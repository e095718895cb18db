"""Collectives suite: every collective linkscope runs, nccl-tests style, on all the GPUs of any machine,
each judged by ``linkscope check`` against the twin.

    PYTHONPATH=src python bench/collectives.py --out DIR [--gpus 0,1,2,3] [--quick] [--dry-run] [--backend sim --preset P]

Steps: nccl-OP for each op of ``bench nccl --op`` (out-of-place and in-place, CUDA graphs of 20 operations
as nccl-tests -G 20), then check-OP (each number against the route's bottleneck and the twin's
prediction). One GPU runs too (NCCL's single-rank collectives are copies). Writes DIR/suite.json.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Machine, Step, run


def steps(m: Machine) -> list[Step]:
    from linkscope.model.collectives import OPS

    sizes = "8,1MiB" if m.quick else "8:1GiB"
    timing = ("--iters", "5", "--warmup", "2") if m.quick else ("--iters", "20", "--warmup", "5", "--inplace")
    out: list[Step] = []
    for op in OPS:
        out.append(Step(f"nccl-{op}", ("bench", "nccl", "--op", op, "--gpus", m.gpu_list, "--sizes", sizes, *timing,
                                       "--json", f"{{out}}/nccl-{op}.json"), min_gpus=1, timeout_s=900))
        out.append(Step(f"check-{op}", ("check", f"{{out}}/nccl-{op}.json", "--json", f"{{out}}/check-{op}.json"),
                        topology=False))
    return out


if __name__ == "__main__":
    sys.exit(run("collectives", steps, description=__doc__.split("\n\n")[0]))
