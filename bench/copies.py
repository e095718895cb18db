"""Copies suite: every copy method between the GPUs of any machine, and between each GPU and the host.

    PYTHONPATH=src python bench/copies.py --out DIR [--gpus 0,1] [--quick] [--dry-run] [--backend sim --preset P]

Steps (each writes DIR/NAME.json; a step that needs more GPUs than the machine has is skipped):
survey (the whole-machine summary, HTML report beside it), host (each GPU's host link, both ways),
latency (GPU pairs, or host <-> GPU on one GPU), matrix (every ordered pair alone, each copy method:
ce, ce-write, sm-pull, sm-push), bidirectional (each pair both ways at once), all-to-one and all-to-all
(concurrency: the copy engines and the fabric shared). Sizes follow --quick (a smoke run) or the
anchors' buffer size (nvbandwidth's 512 MiB). The harness (bench/harness.py) writes DIR/suite.json.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Machine, Step, run

METHODS = "ce,ce-write,sm-pull,sm-push"


def steps(m: Machine) -> list[Step]:
    size = "4MiB" if m.quick else "512MiB"
    sweep = "1MiB,4MiB" if m.quick else "1MiB:1GiB"
    reps = ("--reps", "3") if m.quick else ()
    gpus = ("--gpus", m.gpu_list)
    return [
        Step("survey", ("survey", "-o", "{out}/survey.json", "--sizes", size), timeout_s=1800),
        Step("host", ("bench", "--pattern", "host", *gpus, "--sizes", sweep, *reps, "--json", "{out}/host.json")),
        Step("latency", ("bench", "latency", *gpus, "--json", "{out}/latency.json")),
        Step("matrix", ("bench", "--pattern", "matrix", "--method", METHODS, *gpus, "--sizes", size, *reps,
                        "--json", "{out}/matrix.json"), min_gpus=2),
        Step("bidirectional", ("bench", "--pattern", "matrix", "--direction", "bi", *gpus, "--sizes", size, *reps,
                               "--json", "{out}/bidirectional.json"), min_gpus=2),
        Step("all-to-one", ("bench", "--pattern", "all-to-one", *gpus, "--sizes", size, *reps,
                            "--json", "{out}/all-to-one.json"), min_gpus=3),
        Step("all-to-all", ("bench", "--pattern", "all-to-all", *gpus, "--sizes", size, *reps,
                            "--json", "{out}/all-to-all.json"), min_gpus=3),
    ]


if __name__ == "__main__":
    sys.exit(run("copies", steps, description=__doc__.split("\n\n")[0]))
