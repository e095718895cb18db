"""The bad-input table: every command, fed what users (and typos) feed it.

Each row is run in-process through ``linkscope.cli.main`` (fast: no interpreter start-up) and must
end with a non-zero exit code, exactly one ``linkscope: error:`` line on stderr (other stderr lines
may only be ``note:`` lines), no traceback, no temporary file left behind, and every input file
byte-for-byte as it was (no command destroys an input or another output of the same invocation).

``{fx}`` in a row is a fresh copy of the fixture folder (traffic, topology, run, mapping files and
broken variants of each, built once per session); ``{tmp}`` is the test's empty output folder.

docs/bad-inputs.md is generated from this table (exit code and the error line of every row):
    PYTHONPATH=src python tests/cli/test_bad_input_table.py > docs/bad-inputs.md
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from linkscope.cli import main
from linkscope.topology import io as topo_io
from linkscope.topology.presets import load_preset


@dataclass(frozen=True)
class Case:
    id: str
    argv: str                      # shell words; {fx} fixture copy, {tmp} empty output folder
    needle: str = ""               # a piece of the error line
    code: int | None = None        # expected exit code (None: any non-zero)
    env: dict[str, str] = field(default_factory=dict)
    setup: Callable[[Path], None] | None = None  # makes special files (FIFO, link, huge .npy) in {tmp}


def _fifo(name: str) -> Callable[[Path], None]:
    return lambda tmp: os.mkfifo(tmp / name)


def _link(name: str, target: str) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (tmp / target).write_text("keep me\n")
        (tmp / name).symlink_to(tmp / target)
    return make


def _file(name: str, text: str = "keep me\n") -> Callable[[Path], None]:
    return lambda tmp: (tmp / name).write_text(text)


def _recording(name: str, files: dict[str, str]) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (tmp / name).mkdir()
        for file, text in files.items():
            (tmp / name / file).write_text(text)
    return make


def _huge_npy(tmp: Path) -> None:
    """A 60,000-rank .npy (sparse on disk): refused from its header, before 27 GiB are read."""
    array = np.lib.format.open_memmap(tmp / "huge.npy", mode="w+", dtype=np.uint8, shape=(60000, 60000))
    del array


def _hard_link(tmp: Path) -> None:
    (tmp / "a.json").write_text("{}\n")
    os.link(tmp / "a.json", tmp / "b.json")


LONG = "x" * 300
SIM = "--backend sim --preset hgx-h200-4"

CASES: list[Case] = [
    # ---- top level and usage -------------------------------------------------------------------
    Case("unknown-command", "frobnicate", "No such command", 2),
    Case("unknown-option", "topo --bogus", "No such option: --bogus", 2),
    Case("missing-argument", "map", "Missing argument", 2),
    Case("int-option-text", "map {fx}/t.json --preset hgx-h200-4 --nodes many", "--nodes", 2),
    Case("float-option-text", "map {fx}/t.json --preset hgx-h200-4 --time-limit soon", "--time-limit", 2),
    # ---- env -----------------------------------------------------------------------------------
    Case("env-extra-argument", "env extra", "unexpected extra argument", 2),
    Case("env-json-no-value", "env --json", "Option '--json' requires an argument", 2),  # the old switch: --json -
    Case("env-json-option-as-file", "env --json --help", "--json takes a file name", 2),
    Case("topo-json-option-as-file", "topo --synthetic pcie:2x4 --json --gpus 0,1", "--json takes a file name", 2),
    Case("map-json-no-value", "map {fx}/t.json --preset hgx-h200-4 --json", "Option '--json' requires an argument", 2),
    Case("model-check-json-folder", "model check {fx}/run.json --json {tmp}/", "ends with '/'"),
    Case("traffic-show-json-over-input", "traffic show {fx}/t.json --json {fx}/t.json", "same file as input"),
    # ---- topo ----------------------------------------------------------------------------------
    Case("topo-unknown-preset", "topo --preset nope", "unknown preset 'nope'"),
    Case("topo-empty-preset", "topo --preset ''", "preset"),
    Case("topo-two-sources", "topo --preset hgx-h200-4 --synthetic nvswitch:4", ""),
    Case("topo-missing-file", "topo --from {fx}/missing.json", "not found"),
    Case("topo-folder-as-file", "topo --from {fx}/folder", ""),
    Case("topo-empty-file", "topo --from {fx}/empty.json", "not valid JSON"),
    Case("topo-bad-json", "topo --from {fx}/bad.json", "not valid JSON"),
    Case("topo-binary-file", "topo --from {fx}/binary.json", ""),
    Case("topo-json-list", "topo --from {fx}/list.json", "JSON object"),
    Case("topo-traffic-file", "topo --from {fx}/t.json", "not a linkscope topology"),
    Case("topo-link-1e308", "topo --from {fx}/topo-1e308.json", "not a physical link"),
    Case("topo-link-zero", "topo --from {fx}/topo-zero.json", "no positive bandwidth"),
    Case("topo-link-count", "topo --from {fx}/topo-count.json", "bonded links"),
    Case("topo-health-preset", "topo --health --preset hgx-h200-4", "--health reads this machine or a folder recorded"),
    Case("topo-health-file", "topo --health --from {fx}/t.json", "--health reads this machine or a folder recorded"),
    Case("topo-health-folder-not-recording", "topo --health --from {fx}/folder", "holds no recorded GPU discovery"),
    Case("topo-run-without-health", "topo --preset hgx-h200-4 --run {fx}/run.json", "--run goes with --health"),
    Case("topo-health-run-missing", "topo --health --from {fx}/folder --run {fx}/missing.json", "not found"),
    Case("topo-link-latency", "topo --from {fx}/topo-latency.json", "latency"),
    Case("topo-link-nan", "topo --from {fx}/topo-nan.json", "NaN"),
    Case("topo-link-negative-latency", "topo --from {fx}/topo-neglat.json", "must not be negative"),
    Case("topo-memory-negative", "topo --from {fx}/topo-mem.json", "memory_bytes"),
    Case("topo-dangling-link", "topo --from {fx}/topo-dangling.json", "does not exist"),
    Case("topo-duplicate-device", "topo --from {fx}/topo-dup.json", "appears twice"),
    Case("topo-schema-99", "topo --from {fx}/topo-v99.json", "newer"),
    Case("topo-amd-smi-json-unknown-layout", "topo --from {tmp}/rec", "unrecognised layout",
         setup=_recording("rec", {"amd-smi-topology.json": '[{"gpu": 0, "peers": []}]'})),
    Case("topo-amd-smi-json-no-gpu", "topo --from {tmp}/rec", "names no GPU",
         setup=_recording("rec", {"amd-smi-topology.json": "[]"})),
    Case("topo-missing-links", "topo --from {fx}/topo-nolinks.json", "missing field 'links'"),
    Case("topo-synthetic-bad", "topo --synthetic banana", ""),
    Case("topo-synthetic-zero", "topo --synthetic nvswitch:0", ""),
    Case("topo-synthetic-huge", "topo --synthetic nvswitch:100000", ""),
    Case("topo-gpus-out-of-range", "topo --preset hgx-h200-4 --gpus 9", "9"),
    Case("topo-gpus-negative", "topo --preset hgx-h200-4 --gpus -1", ""),
    Case("topo-gpus-text", "topo --preset hgx-h200-4 --gpus a,b", "not a GPU index"),
    Case("topo-gpus-twice", "topo --preset hgx-h200-4 --gpus 0,0", "listed twice"),
    Case("topo-gpus-empty", "topo --preset hgx-h200-4 --gpus ,", "empty GPU list"),
    Case("topo-output-proc", "topo --preset hgx-h200-4 -o /proc/x.json", "/proc"),
    Case("topo-output-long-name", f"topo --preset hgx-h200-4 -o {{tmp}}/{LONG}.json", "file name is"),
    Case("topo-output-no-folder", "topo --preset hgx-h200-4 -o {tmp}/no/such/t.json", "does not exist"),
    Case("topo-output-folder", "topo --preset hgx-h200-4 -o {tmp}", "is a folder"),
    Case("topo-output-fifo", "topo --preset hgx-h200-4 -o {tmp}/fifo", "FIFO", setup=_fifo("fifo")),
    Case("topo-output-symlink", "topo --preset hgx-h200-4 -o {tmp}/link.json", "symbolic link",
         setup=_link("link.json", "real.json")),
    Case("topo-output-dev-null", "topo --preset hgx-h200-4 -o /dev/null", "device"),
    Case("topo-output-is-input", "topo --from {fx}/topo.json -o {fx}/topo.json", "same file as input --from"),
    Case("topo-output-is-input-dotdot", "topo --from {fx}/topo.json -o {fx}/folder/../topo.json", "same file"),
    Case("topo-output-empty-name", "topo --preset hgx-h200-4 -o ''", ""),
    Case("topo-sysfs-root-with-preset", "topo --preset hgx-h200-4 --sysfs-root /", "--sysfs-root"),
    Case("topo-nccl-xml-of-preset-without-bus-ids", "topo --preset dgx-h100 --export nccl-xml -o {tmp}/n.xml",
         "no PCI bus id"),
    Case("topo-export-raw-is-file", "topo export --raw {fx}/t.json", "not a folder"),
    Case("topo-export-raw-no-parent", "topo export --raw {tmp}/no/such/dir", "does not exist"),
    Case("topo-export-missing-raw", "topo export", "Missing option", 2),
    # ---- bench (bandwidth) -----------------------------------------------------------------------
    Case("bench-unknown-backend", "bench --backend warp", "unknown backend"),
    Case("bench-cuda-here", "bench --backend cuda --preset hgx-h200-4 --sizes 1MiB", ""),
    Case("bench-empty-method", f"bench {SIM} --method ''", "method"),
    Case("bench-comma-method", f"bench {SIM} --method ,", "empty list"),
    Case("bench-unknown-method", f"bench {SIM} --method warp", "unknown method"),
    Case("bench-method-twice", f"bench {SIM} --method ce,ce", "listed twice"),
    Case("bench-unknown-pattern", f"bench {SIM} --pattern spiral", ""),
    Case("bench-bad-direction", f"bench {SIM} --direction sideways", ""),
    Case("bench-sizes-empty", f"bench {SIM} --sizes ''", "size"),
    Case("bench-sizes-zero", f"bench {SIM} --sizes 0", "positive"),
    Case("bench-sizes-negative", f"bench {SIM} --sizes -1", ""),
    Case("bench-sizes-junk", f"bench {SIM} --sizes lots", "not a size"),
    Case("bench-sizes-suffix", f"bench {SIM} --sizes 4XB", "suffix"),
    Case("bench-sizes-fraction", f"bench {SIM} --sizes 1.5", "whole number"),
    Case("bench-sizes-huge", f"bench {SIM} --sizes 99999999TiB", "1 PiB"),
    Case("bench-sizes-range-reversed", f"bench {SIM} --sizes 1GiB:8", "bad size range"),
    Case("bench-sizes-nan", f"bench {SIM} --sizes nan", "not a size"),
    Case("bench-reps-zero", f"bench {SIM} --reps 0", "--reps", 2),
    Case("bench-reps-huge", f"bench {SIM} --reps 100000000 --sizes 1MiB", "100,000"),
    Case("bench-warmup-negative", f"bench {SIM} --warmup -1", "--warmup", 2),
    Case("bench-warmup-huge", f"bench {SIM} --warmup 100000000", "warmup"),
    Case("bench-time-budget-junk", f"bench {SIM} --time-budget soon", "not a duration"),
    Case("bench-time-budget-zero", f"bench {SIM} --time-budget 0", "positive"),
    Case("bench-time-budget-negative", f"bench {SIM} --time-budget -1s", "not a duration"),
    Case("bench-time-budget-year", f"bench {SIM} --time-budget 600000min", "week"),
    Case("bench-target-ci-zero", f"bench {SIM} --target-ci 0", "--target-ci"),
    Case("bench-target-ci-nan", f"bench {SIM} --target-ci nan", "--target-ci"),
    Case("bench-chunk-zero", f"bench {SIM} --chunk 0", "--chunk"),
    Case("bench-gpus-out-of-range", f"bench {SIM} --gpus 0,7", "7"),
    Case("bench-gpus-text", f"bench {SIM} --gpus all", "not a GPU index"),
    Case("bench-json-and-csv-same", f"bench {SIM} --sizes 1MiB --json {{tmp}}/x.json --csv {{tmp}}/x.json",
         "same file as output --json"),
    Case("bench-json-csv-hard-link", f"bench {SIM} --sizes 1MiB --json {{tmp}}/a.json --csv {{tmp}}/b.json",
         "same file", setup=_hard_link),
    Case("bench-both-stdout", f"bench {SIM} --json - --csv -", "stdout"),
    Case("bench-stdout-and-osu", f"bench {SIM} --json - --osu", "stdout"),
    Case("bench-json-is-topology", "bench --backend sim --from {fx}/topo.json --json {fx}/topo.json", "same file"),
    Case("bench-json-is-pattern", f"bench {SIM} --pattern {{fx}}/pattern.json --json {{fx}}/pattern.json", "same file"),
    Case("bench-json-proc", f"bench {SIM} --json /proc/x.json", "/proc"),
    Case("bench-csv-long-name", f"bench {SIM} --csv {{tmp}}/{LONG}.csv", "file name is"),
    Case("bench-json-fifo", f"bench {SIM} --json {{tmp}}/fifo", "FIFO", setup=_fifo("fifo")),
    Case("bench-csv-symlink", f"bench {SIM} --csv {{tmp}}/l.csv", "symbolic link", setup=_link("l.csv", "r.csv")),
    Case("bench-pattern-file-bad-json", f"bench {SIM} --pattern {{fx}}/bad.json", "not valid JSON"),
    Case("bench-pattern-file-empty", f"bench {SIM} --pattern {{fx}}/list.json", "non-empty list"),
    Case("bench-pattern-file-gpu-99", f"bench {SIM} --pattern {{fx}}/pattern-99.json", "99"),
    Case("bench-pattern-file-bad-end", f"bench {SIM} --pattern {{fx}}/pattern-end.json", "bad transfer end"),
    Case("bench-pattern-file-bad-size", f"bench {SIM} --pattern {{fx}}/pattern-size.json", ""),
    Case("bench-pattern-csv-junk", f"bench {SIM} --pattern {{fx}}/pattern.csv", "expected src,dst"),
    Case("bench-from-traffic", "bench --backend sim --from {fx}/t.json", "not a linkscope topology"),
    Case("bench-list-unknown-backend", "bench --list --backend warp", "unknown backend"),
    Case("bench-nic-unknown", "bench --backend sim --preset v100-4-nvlink-ib --nic mlx5_7", "no NIC named mlx5_7"),
    Case("bench-nic-no-name", "bench --backend sim --preset v100-4-nvlink-ib --nic ,", "no NIC name"),
    Case("bench-nic-on-nicless-node", f"bench {SIM} --nic mlx5_0", "no NIC named mlx5_0"),
    Case("bench-nic-env-unknown", "bench --backend sim --preset v100-4-nvlink-ib", "UCX_NET_DEVICES='mlx5_9:1' from the environment",
         env={"UCX_NET_DEVICES": "mlx5_9:1"}),
    # ---- bench latency ---------------------------------------------------------------------------
    Case("latency-unknown-kind", f"bench latency {SIM} --kind warp", "unknown latency kind"),
    Case("latency-kind-twice", f"bench latency {SIM} --kind copy,copy", "listed twice"),
    Case("latency-kind-empty", f"bench latency {SIM} --kind ''", ""),
    Case("latency-size-zero", f"bench latency {SIM} --kind copy --size 0", "--size"),
    Case("latency-size-junk", f"bench latency {SIM} --kind copy --size big", "not a size"),
    Case("latency-sizes-list", f"bench latency {SIM} --kind copy --sizes 8,64", "takes one size", 1),
    Case("latency-copy-bad-method", f"bench latency {SIM} --kind copy --method warp", "unknown method"),
    Case("latency-reps-zero", f"bench latency {SIM} --reps 0", "--reps", 2),
    Case("latency-reps-huge", f"bench latency {SIM} --reps 100000000", "100,000"),
    Case("latency-gpus-one", f"bench latency {SIM} --gpus 9", "9"),
    Case("latency-json-csv-same", f"bench latency {SIM} --json {{tmp}}/l.json --csv {{tmp}}/l.json", "same file"),
    Case("latency-json-is-topology", "bench latency --backend sim --from {fx}/topo.json --json {fx}/topo.json", "same file"),
    # ---- bench mpi / nccl / stencil / p2p: the CLI surface ---------------------------------------
    Case("mpi-bad-test", "bench mpi --test warp", ""),
    Case("mpi-bad-buffers", "bench mpi --buffers XY", ""),
    Case("mpi-bad-sizes", "bench mpi --sizes lots", "not a size"),
    Case("mpi-iterations-zero", "bench mpi --iterations 0", "--iterations", 2),
    Case("mpi-window-zero", "bench mpi --window 0", "--window", 2),
    Case("mpi-bad-gpu-aware", "bench mpi --gpu-aware maybe", ""),
    Case("mpi-json-proc", "bench mpi --json /proc/x.json", "/proc"),
    Case("mpi-json-folder", "bench mpi --json {tmp}", "is a folder"),
    Case("nccl-bad-op", "bench nccl --backend sim --op scatterall", ""),
    Case("nccl-bad-backend", "bench nccl --backend warp", ""),
    Case("nccl-iters-zero", "bench nccl --iters 0", "--iters", 2),
    Case("nccl-env-bad-algo", "bench nccl --backend sim --preset dgx-h100 --sizes 8", "NCCL_ALGO='rings'", 1,
         env={"NCCL_ALGO": "rings"}),
    Case("nccl-env-bad-proto-prefix", "bench nccl --backend sim --preset dgx-h100 --sizes 8", "function prefix", 1,
         env={"NCCL_PROTO": "LL;Simple"}),
    Case("nccl-env-no-algorithm", "bench nccl --backend sim --preset dgx-h100 --op broadcast --sizes 8",
         "no NCCL algorithm", 1, env={"NCCL_ALGO": "broadcast:tree"}),
    Case("nccl-env-channels-text", "bench nccl --backend sim --preset dgx-h100 --sizes 8", "NCCL_MAX_NCHANNELS", 1,
         env={"NCCL_MAX_NCHANNELS": "many"}),
    Case("nccl-bad-sizes", "bench nccl --backend sim --sizes 0", ""),
    Case("nccl-gpus-text", "bench nccl --backend sim --gpus x", "not a GPU index"),
    Case("nccl-json-long-name", f"bench nccl --backend sim --json {{tmp}}/{LONG}.json", "file name is"),
    Case("stencil-bad-dims", "bench stencil --backend sim --dims 4", "--dims"),
    Case("stencil-bad-grid", "bench stencil --backend sim --grid 2y2", ""),
    Case("stencil-bad-slow-pairs", "bench stencil --backend sim --emulate-slow-pairs 0+1", ""),
    Case("stencil-mapping-missing", "bench stencil --backend sim --mapping {fx}/missing.json", ""),
    Case("stencil-json-is-mapping", "bench stencil --backend sim --mapping {fx}/m.json --json {fx}/m.json", "same file"),
    Case("stencil-json-is-topology", "bench stencil --backend sim --from {fx}/topo.json --json {fx}/topo.json", "same file"),
    Case("stencil-runs-zero", "bench stencil --runs 0", "--runs", 2),
    Case("p2p-without-mpi", "bench p2p --backend sim", ""),
    Case("p2p-bad-buffers", "bench p2p --mpi --buffers Q", ""),
    Case("p2p-json-fifo", "bench p2p --mpi --json {tmp}/fifo", "FIFO", setup=_fifo("fifo")),
    # ---- survey ----------------------------------------------------------------------------------
    Case("survey-same-json-and-report", "survey --preset hgx-h200-4 -o {tmp}/same.json --report {tmp}/same.json",
         "same file as output --output"),
    Case("survey-html-output-default-report", "survey --preset hgx-h200-4 -o {tmp}/s.html", "default name"),
    Case("survey-output-is-topology", "survey --from {fx}/topo.json -o {fx}/topo.json", "same file as input --from"),
    Case("survey-output-proc", "survey --preset hgx-h200-4 -o /proc/s.json", "/proc"),
    Case("survey-report-long-name", f"survey --preset hgx-h200-4 -o {{tmp}}/s.json --report {{tmp}}/{LONG}.html", "file name is"),
    Case("survey-report-symlink", "survey --preset hgx-h200-4 -o {tmp}/s.json --report {tmp}/r.html",
         "symbolic link", setup=_link("r.html", "shared.html")),
    Case("survey-size-zero", "survey --preset hgx-h200-4 -o {tmp}/s.json --size 0", "positive"),
    Case("survey-size-junk", "survey --preset hgx-h200-4 -o {tmp}/s.json --size big", "not a size"),
    Case("survey-sizes-list", "survey --preset hgx-h200-4 -o {tmp}/s.json --sizes 64MiB,256MiB", "takes one size", 1),
    Case("survey-sizes-zero", "survey --preset hgx-h200-4 -o {tmp}/s.json --sizes 0", "--sizes must be positive", 1),
    Case("survey-unknown-backend", "survey --backend warp", "unknown backend"),
    Case("survey-cuda-here", "survey --backend cuda --preset hgx-h200-4 -o {tmp}/s.json", ""),
    Case("survey-time-budget-junk", "survey --preset hgx-h200-4 -o {tmp}/s.json --time-budget x", "not a duration"),
    # ---- model -----------------------------------------------------------------------------------
    Case("predict-bad-method", "model predict --preset hgx-h200-4 --method warp", "unknown transfer method"),
    Case("predict-empty-method", "model predict --preset hgx-h200-4 --method ''", "method"),
    Case("predict-bad-flow", "model predict --preset hgx-h200-4 --flows 0-1", "bad flow"),
    Case("predict-flow-endpoint", "model predict --preset hgx-h200-4 --flows a->1", "bad endpoint"),
    Case("predict-flow-gpu-99", "model predict --preset hgx-h200-4 --flows 0->99", "99"),
    Case("predict-nic-unknown", "model predict --preset v100-4-nvlink-ib --nic mlx5_7", "no NIC named mlx5_7"),
    Case("predict-nic-no-name", "model predict --preset v100-4-nvlink-ib --nic ,", "no NIC name"),
    Case("predict-nic-env-unknown", "model predict --preset v100-4-nvlink-ib", "UCX_NET_DEVICES='mlx5_9:1' from the environment",
         env={"UCX_NET_DEVICES": "mlx5_9:1"}),
    Case("predict-rtol-negative", "model predict --preset hgx-h200-4 --rtol -0.1", "rtol"),
    Case("predict-rtol-nan", "model predict --preset hgx-h200-4 --rtol nan", "rtol"),
    Case("predict-rtol-huge", "model predict --preset hgx-h200-4 --rtol 3", "rtol"),
    Case("predict-empty-flows", "model predict --preset hgx-h200-4 --flows ,", "empty"),
    Case("predict-pattern-one-gpu", "model predict --preset hgx-h200-4 --pattern pairs --gpus 0", "needs at least 2 GPUs"),
    Case("predict-unknown-pattern", "model predict --preset hgx-h200-4 --pattern spiral", ""),
    Case("predict-sizes-zero", "model predict --preset hgx-h200-4 --sizes 0", "positive"),
    Case("predict-host-method-mismatch", "model predict --preset hgx-h200-4 --method h2d --flows 0->1", "host"),
    Case("calibrate-missing", "model calibrate {fx}/missing.json", "not found"),
    Case("calibrate-bad-json", "model calibrate {fx}/bad.json", "not valid JSON"),
    Case("calibrate-topology-file", "model calibrate {fx}/topo.json", ""),
    Case("calibrate-output-is-input", "model calibrate {fx}/run.json -o {fx}/run.json", "same file as input RESULTS"),
    Case("calibrate-output-is-topology", "model calibrate {fx}/run.json --topology {fx}/topo.json -o {fx}/topo.json",
         "same file as input --topology"),
    Case("calibrate-json-needs-output", "model calibrate {fx}/run.json --json -", "-o FILE"),
    Case("calibrate-bad-topology", "model calibrate {fx}/run.json --topology nope", "not a file, a preset"),
    Case("calibrate-output-proc", "model calibrate {fx}/run.json -o /proc/c.json", "/proc"),
    Case("check-missing", "model check {fx}/missing.json", "not found"),
    Case("check-traffic-file", "model check {fx}/t.json", ""),
    Case("check-record-v99", "model check {fx}/run-v99.json", ""),
    Case("check-record-truncated", "model check {fx}/run-truncated.json", "not valid JSON"),
    Case("check-max-error-negative", "model check {fx}/run.json --max-error -1", "--max-error", 2),
    Case("check-bad-topology", "model check {fx}/run.json --topology banana:7", ""),
    Case("check-params-from-missing", "model check {fx}/run.json --params-from {fx}/missing.json", "not found"),
    Case("check-params-from-no-params", "model check {fx}/run.json --params-from {fx}/topo.json", "has no model_params"),
    Case("check-params-from-and-topology", "model check {fx}/run.json --params-from {fx}/topo.json --topology hgx-h200-4",
         "not both"),
    # ---- traffic ---------------------------------------------------------------------------------
    Case("gen-unknown-pattern", "traffic gen spiral --ranks 4 -o {tmp}/t.json", "unknown traffic pattern"),
    Case("gen-ring-no-ranks", "traffic gen ring -o {tmp}/t.json", "needs --ranks"),
    Case("gen-ring-one-rank", "traffic gen ring --ranks 1 -o {tmp}/t.json", "at least 2"),
    Case("gen-ranks-negative", "traffic gen ring --ranks -4 -o {tmp}/t.json", ""),
    Case("gen-all-to-all-60000", "traffic gen all-to-all --ranks 60000 -o {tmp}/t.npy", "8192"),
    Case("gen-grid-huge", "traffic gen stencil3d --grid 1000x1000x1000 -o {tmp}/t.npy", "1048576"),
    Case("gen-grid-sparse-to-npy", "traffic gen stencil3d --grid 32x32x32 -o {tmp}/t.npy", "stored sparse"),
    Case("gen-random-graph-degree", "traffic gen random-graph --ranks 4 --degree 4 -o {tmp}/t.json", "degree"),
    Case("show-edges-junk", "traffic show {fx}/junk.edges", "SRC DST BYTES"),
    Case("show-npz-not-zip", "traffic show {fx}/notzip.npz", "not a zip"),
    Case("show-npz-dense", "traffic show {fx}/dense.npz", "scipy.sparse"),
    Case("show-csr-bad-indptr", "traffic show {fx}/csr-indptr.json", "indptr"),
    Case("show-csr-no-ranks", "traffic show {fx}/csr-noranks.json", "needs 'ranks'"),
    # ---- audit -----------------------------------------------------------------------------------
    Case("audit-no-records", "audit --preset dgx-h100 -- true", "no rank wrote"),
    Case("audit-gpus-junk", "audit --preset dgx-h100 --gpus zero -- env", "--gpus"),
    Case("audit-gpus-too-big", "audit --preset dgx-h100 --gpus 9 -- env", "has 8 GPUs"),
    Case("audit-launcher-missing", "audit --preset dgx-h100 -- no-such-launcher -n 2", "command not found"),
    Case("gen-grid-overflow", "traffic gen stencil2d --grid 99999999999999999999x2 -o {tmp}/t.npy", ""),
    Case("gen-grid-junk", "traffic gen stencil2d --grid 4by4 -o {tmp}/t.json", "not a process grid"),
    Case("gen-grid-zero", "traffic gen stencil2d --grid 0x4 -o {tmp}/t.json", "below 1"),
    Case("gen-grid-wrong-dims", "traffic gen stencil2d --grid 2x2x2 -o {tmp}/t.json", "2-D grid"),
    Case("gen-grid-ranks-mismatch", "traffic gen stencil2d --grid 4x4 --ranks 8 -o {tmp}/t.json", "not --ranks 8"),
    Case("gen-weights-nan", "traffic gen stencil2d --grid 2x2 --weights nan,1 -o {tmp}/t.json", "finite"),
    Case("gen-weights-inf", "traffic gen stencil2d --grid 2x2 --weights 1,inf -o {tmp}/t.json", "finite"),
    Case("gen-weights-negative", "traffic gen stencil2d --grid 2x2 --weights 1,-1 -o {tmp}/t.json", "non-negative"),
    Case("gen-weights-count", "traffic gen stencil2d --grid 2x2 --weights 1,1,1 -o {tmp}/t.json", "2 finite"),
    Case("gen-weights-junk", "traffic gen stencil2d --grid 2x2 --weights a,b -o {tmp}/t.json", "bad axis weights"),
    Case("gen-weights-huge", "traffic gen stencil2d --grid 2x2 --weights 1e300,1 -o {tmp}/t.json", "byte count"),
    Case("gen-bytes-junk", "traffic gen ring --ranks 4 --bytes lots -o {tmp}/t.json", "not a size"),
    Case("gen-bytes-huge", "traffic gen ring --ranks 4 --bytes 99999999TiB -o {tmp}/t.json", "1 PiB"),
    Case("gen-density-nan", "traffic gen random --ranks 4 --density nan -o {tmp}/t.json", "density"),
    Case("gen-density-zero", "traffic gen random --ranks 4 --density 0 -o {tmp}/t.json", "density"),
    Case("gen-seed-negative", "traffic gen random --ranks 4 --seed -1 -o {tmp}/t.json", ""),
    Case("gen-tree-bad-op", "traffic gen tree --ranks 4 --op scatter -o {tmp}/t.json", "unknown tree operation"),
    Case("gen-graph-no-edges", "traffic gen graph -o {tmp}/t.json", "needs edges"),
    Case("gen-graph-edges-missing", "traffic gen graph --edges {fx}/missing.txt -o {tmp}/t.json", "not found"),
    Case("gen-graph-edges-empty", "traffic gen graph --edges {fx}/empty.json -o {tmp}/t.json", "at least one edge"),
    Case("gen-graph-edge-nan", "traffic gen graph --edges {fx}/e-nan.txt -o {tmp}/t.json", "not a rank number"),
    Case("gen-graph-weight-nan", "traffic gen graph --edges {fx}/e-wnan.txt -o {tmp}/t.json", "finite"),
    Case("gen-graph-weight-negative", "traffic gen graph --edges {fx}/e-wneg.txt -o {tmp}/t.json", "finite"),
    Case("gen-graph-edge-fraction", "traffic gen graph --edges {fx}/e-frac.txt -o {tmp}/t.json", "not a rank number"),
    Case("gen-graph-edge-negative", "traffic gen graph --edges {fx}/e-neg.txt -o {tmp}/t.json", "not a rank number"),
    Case("gen-graph-edge-junk", "traffic gen graph --edges {fx}/e-junk.txt -o {tmp}/t.json", "expected 'a b [weight]'"),
    Case("gen-graph-edge-four-fields", "traffic gen graph --edges {fx}/e-four.txt -o {tmp}/t.json", "(a, b)"),
    Case("gen-graph-edge-rank-99-gap", "traffic gen graph --edges {fx}/e-99.txt -o {tmp}/t.json", "--ranks 100"),
    Case("gen-graph-edge-outside-ranks", "traffic gen graph --ranks 4 --edges {fx}/e-99.txt -o {tmp}/t.json", "outside 0..3"),
    Case("gen-graph-edge-huge-rank", "traffic gen graph --edges {fx}/e-huge.txt -o {tmp}/t.json", "8192"),
    Case("gen-output-suffix", "traffic gen ring --ranks 4 -o {tmp}/t.txt", "unknown traffic file type"),
    Case("gen-output-proc", "traffic gen ring --ranks 4 -o /proc/t.json", "/proc"),
    Case("gen-output-long-name", f"traffic gen ring --ranks 4 -o {{tmp}}/{LONG}.json", "file name is"),
    Case("gen-output-is-edges", "traffic gen graph --edges {fx}/e-ok.csv -o {fx}/e-ok.csv", "same file as input --edges"),
    Case("gen-output-symlink", "traffic gen ring --ranks 4 -o {tmp}/l.json", "symbolic link", setup=_link("l.json", "r.json")),
    Case("gen-missing-output", "traffic gen ring --ranks 4", "Missing option", 2),
    Case("show-missing", "traffic show {fx}/missing.json", "not found"),
    Case("show-suffix", "traffic show {fx}/file.txt", "unknown traffic file type"),
    Case("show-bad-json", "traffic show {fx}/bad.json", "not valid JSON"),
    Case("show-topology-json", "traffic show {fx}/topo.json", "not a linkscope traffic file"),
    Case("show-nan-json", "traffic show {fx}/t-nan.json", "NaN"),
    Case("show-string-cells", "traffic show {fx}/t-strings.json", "not numeric"),
    Case("show-ranks-mismatch", "traffic show {fx}/t-ranks.json", "'ranks' says"),
    Case("show-csv-not-square", "traffic show {fx}/nonsquare.csv", "N lines of N"),
    Case("show-csv-negative", "traffic show {fx}/negative.csv", "negative"),
    Case("show-csv-text", "traffic show {fx}/text.csv", "not a list of numbers"),
    Case("show-csv-inf", "traffic show {fx}/inf.csv", "non-finite"),
    Case("show-csv-empty", "traffic show {fx}/empty.csv", "no rows"),
    Case("show-npy-complex", "traffic show {fx}/complex.npy", "complex"),
    Case("show-npy-strings", "traffic show {fx}/strings.npy", "text"),
    Case("show-npy-bool", "traffic show {fx}/bool.npy", "true/false"),
    Case("show-npy-3d", "traffic show {fx}/cube.npy", "square"),
    Case("show-npy-object", "traffic show {fx}/object.npy", "not a plain NumPy array"),
    Case("show-npy-not-numpy", "traffic show {fx}/fake.npy", "not a NumPy .npy file"),
    Case("show-npy-archive", "traffic show {fx}/archive.npy", "not a NumPy .npy file"),
    Case("show-npy-60000-ranks", "traffic show {tmp}/huge.npy", "8192", setup=_huge_npy),
    Case("show-folder", "traffic show {fx}/folder.json", ""),
    # ---- map -------------------------------------------------------------------------------------
    Case("map-missing-traffic", "map {fx}/missing.json --preset hgx-h200-4", "not found"),
    Case("map-no-topology", "map {fx}/t.json", ""),
    Case("map-unknown-metric", "map {fx}/t.json --preset hgx-h200-4 --metric speed", "unknown metric"),
    Case("map-unknown-solver", "map {fx}/t.json --preset hgx-h200-4 --solver magic", ""),
    Case("map-unknown-mode", "map {fx}/t.json --preset hgx-h200-4 --mode shuffle", ""),
    Case("map-method-without-model", "map {fx}/t.json --preset hgx-h200-4 --method ce", "--metric model only"),
    Case("map-empty-method", "map {fx}/t.json --preset hgx-h200-4 --metric model --method ''", "unknown --method"),
    Case("map-unknown-method", "map {fx}/t.json --preset hgx-h200-4 --metric model --method warp", "unknown --method"),
    Case("map-time-limit-negative", "map {fx}/t.json --preset hgx-h200-4 --time-limit -1", "--time-limit"),
    Case("map-time-limit-nan", "map {fx}/t.json --preset hgx-h200-4 --time-limit nan", "--time-limit"),
    Case("map-time-limit-inf", "map {fx}/t.json --preset hgx-h200-4 --time-limit inf", "--time-limit"),
    Case("map-nodes-zero", "map {fx}/t.json --preset hgx-h200-4 --nodes 0", "--nodes"),
    Case("map-nodes-100000", "map {fx}/t.json --preset hgx-h200-4 --nodes 100000", "more nodes than"),
    Case("map-hosts-too-few", "map {fx}/t.json --preset hgx-h200-4 --nodes 2 --hosts a", "--hosts"),
    Case("map-hosts-empty-name", "map {fx}/t.json --preset hgx-h200-4 --nodes 2 --hosts a,,b", "--hosts"),
    Case("map-hosts-duplicate", "map {fx}/t.json --preset hgx-h200-4 --nodes 2 --hosts a,a", "distinct"),
    Case("map-too-many-ranks", "map {fx}/t16.json --preset hgx-h200-4", ""),
    Case("map-unknown-emit", "map {fx}/t.json --preset hgx-h200-4 --emit yaml", "unknown --emit"),
    Case("map-emit-to-without-emit", "map {fx}/t.json --preset hgx-h200-4 --emit-to {tmp}/x", "--emit-to needs --emit"),
    Case("map-emit-env-to-file", "map {fx}/t.json --preset hgx-h200-4 --emit env --emit-to {fx}/file.txt", "not a folder"),
    Case("map-emit-rankfile-is-output", "map {fx}/t.json --preset hgx-h200-4 -o {tmp}/me.json --emit rankfile --emit-to {tmp}/me.json",
         "same file as output --output"),
    Case("map-output-is-traffic", "map {fx}/t.json --preset hgx-h200-4 -o {fx}/t.json", "same file as input TRAFFIC"),
    Case("map-output-is-traffic-symlink", "map {tmp}/tl.json --preset hgx-h200-4 -o {fx}/t.json", "same file",
         setup=lambda tmp: (tmp / "tl.json").symlink_to(tmp.parent / "fx" / "t.json")),
    Case("map-output-is-topology", "map {fx}/t.json --from {fx}/topo.json -o {fx}/topo.json", "same file as input --from"),
    Case("map-output-is-results", "map {fx}/t.json --results {fx}/run.json -o {fx}/run.json", "same file as input --results"),
    Case("map-output-proc", "map {fx}/t.json --preset hgx-h200-4 -o /proc/x.json", "/proc"),
    Case("map-output-long-name", f"map {{fx}}/t.json --preset hgx-h200-4 -o {{tmp}}/{LONG}.json", "file name is"),
    Case("map-output-fifo", "map {fx}/t.json --preset hgx-h200-4 -o {tmp}/fifo", "FIFO", setup=_fifo("fifo")),
    Case("map-emit-slurm-symlink", "map {fx}/t.json --preset hgx-h200-4 --emit slurm --emit-to {tmp}/s.txt", "symbolic link",
         setup=_link("s.txt", "real.txt")),
    Case("map-traffic-complex", "map {fx}/complex.npy --preset hgx-h200-4", "complex"),
    Case("map-traffic-nan", "map {fx}/t-nan.json --preset hgx-h200-4", "NaN"),
    Case("map-results-not-record", "map {fx}/t.json --results {fx}/topo.json", ""),
    Case("map-topology-1e308", "map {fx}/t.json --from {fx}/topo-1e308.json", "not a physical link"),
    Case("map-nic-unknown", "map {fx}/t.json --preset v100-4-nvlink-ib --nic mlx5_7", "no NIC named mlx5_7"),
    Case("map-nic-exclude-all", "map {fx}/t.json --preset v100-4-nvlink-ib --nic ^mlx5_0,mlx5_1", "matches no NIC"),
    Case("map-nic-no-name", "map {fx}/t.json --preset v100-4-nvlink-ib --nic =", "no NIC name"),
    Case("map-nic-env-unknown", "map {fx}/t.json --preset v100-4-nvlink-ib", "NCCL_IB_HCA='=mlx5_9'",
         env={"NCCL_IB_HCA": "=mlx5_9"}),
    Case("map-nic-without-topology", "map {fx}/t.json --results {fx}/run.json --nic mlx5_0", "needs a topology"),
    # ---- launch ----------------------------------------------------------------------------------
    Case("launch-no-command", "launch --mapping {fx}/m.json", "Missing argument", 2),
    Case("launch-not-executable", "launch --mapping {fx}/m.json -- {fx}/script.sh", "not executable",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("launch-command-missing", "launch --mapping {fx}/m.json -- no-such-program-linkscope", "command not found",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("launch-folder-as-command", "launch --mapping {fx}/m.json -- {fx}/folder", "",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("launch-no-local-rank", "launch --mapping {fx}/m.json -- true", "local rank",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "", "MPI_LOCALRANKID": "", "PMI_LOCAL_RANK": "", "SLURM_LOCALID": "",
              "LOCAL_RANK": ""}),
    Case("launch-local-rank-junk", "launch --mapping {fx}/m.json -- true", "", env={"OMPI_COMM_WORLD_LOCAL_RANK": "x"}),
    Case("launch-local-rank-too-big", "launch --mapping {fx}/m.json -- true", "", env={"OMPI_COMM_WORLD_LOCAL_RANK": "99"}),
    Case("launch-mapping-missing", "launch --mapping {fx}/missing.json -- true", "not found",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("launch-mapping-bad-json", "launch --mapping {fx}/bad.json -- true", "not valid JSON",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("launch-mapping-is-traffic", "launch --mapping {fx}/t.json -- true", "", env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("launch-nic-unknown", "launch --mapping {fx}/m-nic.json --nic mlx5_7 -- true", "no NIC named mlx5_7",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("launch-nic-no-name", "launch --mapping {fx}/m-nic.json --nic , -- true", "no NIC name",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("launch-nic-nearest-unknown", "launch --mapping {fx}/m-nic.json --nic nearest -- true", "nearest",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("launch-nic-mapping-without-nics", "launch --mapping {fx}/m.json --nic mlx5_0 -- true", "lists no NIC",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    # ---- profile ---------------------------------------------------------------------------------
    Case("profile-no-command", "profile -o {tmp}/t.json", "Missing argument", 2),
    Case("profile-bad-inject", "profile --inject magic -o {tmp}/t.json -- true", ""),
    Case("profile-output-suffix", "profile -o {tmp}/t.txt -- true", "unknown traffic file type"),
    Case("profile-output-proc", "profile -o /proc/t.json -- true", "/proc"),
    Case("profile-rows-dir-is-file", "profile -o {tmp}/t.json --rows-dir {fx}/file.txt -- true", "not a folder"),
    Case("profile-bad-mpicc", "profile -o {tmp}/t.json --mpicc no-such-mpicc-linkscope -- true", ""),
    # ---- watch -----------------------------------------------------------------------------------
    Case("watch-no-command", "watch", "Missing argument", 2),
    Case("watch-json-stdout", "watch --json - -- true", "stdout belongs to the command"),
    Case("watch-json-csv-same", "watch --json {tmp}/w.json --csv {tmp}/w.json -- true", "same file"),
    Case("watch-json-proc", "watch --json /proc/w.json -- true", "/proc"),
    Case("watch-bad-interval", "watch --interval soon -- true", "not a duration"),
    Case("watch-interval-zero", "watch --interval 0 -- true", "positive"),
    Case("watch-interval-year", "watch --interval 9999999min -- true", "week"),
    Case("watch-bad-gpus", "watch --gpus x -- true", "not a GPU index"),
    Case("watch-no-driver", "watch -- true", ""),
    # ---- check (peer tools' outputs) -------------------------------------------------------------
    Case("check-no-files", "check --preset dgx-h100", "Missing argument", 2),
    Case("check-missing-file", "check {fx}/missing.txt --preset dgx-h100", "not found"),
    Case("check-folder", "check {fx}/folder --preset dgx-h100", "is a folder"),
    Case("check-empty", "check {fx}/empty.json --preset dgx-h100", "is empty"),
    Case("check-binary", "check {fx}/binary.json --preset dgx-h100", ""),
    Case("check-not-a-tool", "check {fx}/file.txt --preset dgx-h100", "not the output of a tool"),
    Case("check-bad-json", "check {fx}/bad.json --preset dgx-h100", "not valid JSON"),
    Case("check-traffic-json", "check {fx}/t.json --preset dgx-h100", "no tool linkscope reads"),
    Case("check-run-v99", "check {fx}/run-v99.json", "newer than this linkscope"),
    Case("check-unknown-format", "check {fx}/nvb.txt --format excel --preset dgx-h100", "unknown --format 'excel'"),
    Case("check-forced-wrong-format", "check {fx}/nvb.txt --format osu --preset dgx-h100", "before any"),
    Case("check-json-forced-text", "check {fx}/bad-nvb.json --format osu --preset dgx-h100", "this file is JSON"),
    Case("check-nvbandwidth-ragged", "check {fx}/nvb-ragged.txt --preset dgx-h100", "1 values under 2 columns"),
    Case("check-nvbandwidth-not-number", "check {fx}/nvb-word.txt --preset dgx-h100", "'fast' is not a number"),
    Case("check-nvbandwidth-huge-rate", "check {fx}/nvb-huge.txt --preset dgx-h100", "outside 0"),
    Case("check-nvbandwidth-huge-gpu", "check {fx}/nvb-gpu.txt --preset dgx-h100", "larger than"),
    Case("check-nvbandwidth-json-bad", "check {fx}/bad-nvb.json --preset dgx-h100", "testcases must be a list"),
    Case("check-nvbandwidth-nothing", "check {fx}/nvb-header.txt --preset dgx-h100", "no nvbandwidth result"),
    Case("check-nccl-bad-number", "check {fx}/nccl-word.txt --preset dgx-h100", "is not a number"),
    Case("check-nccl-short-row", "check {fx}/nccl-short.txt --preset dgx-h100", "fit no nccl-tests layout"),
    Case("check-nccl-json-bad-size", "check {fx}/bad-nccl.json --preset dgx-h100", "not a whole number"),
    Case("check-osu-no-table", "check {fx}/osu-empty.txt --preset dgx-h100", "no OSU result"),
    Case("check-osu-row-before-title", "check {fx}/osu-headless.txt --format osu --preset dgx-h100", "before any"),
    Case("check-p2p-ragged", "check {fx}/p2p-ragged.txt --preset dgx-h100", "1 values under 2 columns"),
    Case("check-nccl-interleaved", "check {fx}/nccl-interleaved.txt --preset dgx-h100", "interleaved", 1),
    Case("check-osu-cut-number", "check {fx}/osu-cut.txt --preset dgx-h100", "no final newline", 1),
    Case("check-nvb-cut-matrix", "check {fx}/nvb-cut.txt --preset dgx-h100", "no final newline", 1),
    Case("check-transferbench-nothing", "check {fx}/tb-empty.txt --preset dgx-h100", "no TransferBench result"),
    Case("check-too-many-gpus", "check {fx}/p2p8.txt --preset hgx-h200-4", "uses 8 GPUs"),
    Case("check-gpus-too-few", "check {fx}/p2p8.txt --preset dgx-h100 --gpus 0,1", "uses 8 GPUs"),
    Case("check-gpus-missing", "check {fx}/nvb.txt --preset dgx-h100 --gpus 9", "GPU 9 does not exist"),
    Case("check-gpus-junk", "check {fx}/nvb.txt --preset dgx-h100 --gpus a", "not a GPU index"),
    Case("check-two-topologies", "check {fx}/nvb.txt --preset dgx-h100 --synthetic nvswitch:2", "choose one topology source"),
    Case("check-unknown-preset", "check {fx}/nvb.txt --preset dgx-z900", "dgx-z900"),
    Case("check-fail-below-zero", "check {fx}/nvb.txt --preset dgx-h100 --fail-below 0", "must be a fraction"),
    Case("check-low-below-above-one", "check {fx}/nvb.txt --preset dgx-h100 --low-below 1.5", "fraction in (0, 1]"),
    Case("check-high-above-below-one", "check {fx}/nvb.txt --preset dgx-h100 --high-above 0.5", "at least 1"),
    Case("check-size-zero", "check {fx}/nvb.txt --preset dgx-h100 --size 0", "positive"),
    Case("check-sizes-range", "check {fx}/nvb.txt --preset dgx-h100 --sizes 8:1GiB", "takes one size", 1),
    Case("check-sizes-and-size", "check {fx}/nvb.txt --preset dgx-h100 --sizes 1GiB --size 1GiB", "give it once", 1),
    Case("check-calibration-missing", "check {fx}/nvb.txt --preset dgx-h100 --calibration {fx}/missing.json", "not found"),
    Case("check-calibration-other-machine", "check {fx}/nvb.txt --preset dgx-h100 --calibration {fx}/topo.json",
         "calibrated topology"),
    Case("check-json-is-input", "check {fx}/nvb.txt --preset dgx-h100 --json {fx}/nvb.txt", "same file as input FILE"),
    Case("check-json-proc", "check {fx}/nvb.txt --preset dgx-h100 --json /proc/c.json", "/proc"),
    # ---- report ----------------------------------------------------------------------------------
    Case("report-no-runs", "report", "Missing argument", 2),
    Case("report-missing-run", "report {fx}/missing.json -o {tmp}/r.html", "not found"),
    Case("report-traffic-file", "report {fx}/t.json -o {tmp}/r.html", ""),
    Case("report-bad-json", "report {fx}/bad.json -o {tmp}/r.html", "not valid JSON"),
    Case("report-output-is-run", "report {fx}/run.json -o {fx}/run.json", "same file as input RUN.json"),
    Case("report-output-is-second-run", "report {fx}/run.json {fx}/run2.json -o {fx}/run2.json", "same file"),
    Case("report-output-proc", "report {fx}/run.json -o /proc/r.html", "/proc"),
    Case("report-output-long-name", f"report {{fx}}/run.json -o {{tmp}}/{LONG}.html", "file name is"),
    Case("report-png-is-file", "report {fx}/run.json -o {tmp}/r.html --png {fx}/file.txt", "not a folder"),
    Case("report-png-no-parent", "report {fx}/run.json -o {tmp}/r.html --png {tmp}/no/such", "does not exist"),
    Case("report-output-symlink", "report {fx}/run.json -o {tmp}/r.html", "symbolic link", setup=_link("r.html", "team.html")),
]


# ---- issue 25: nothing unbounded (nesting, counts, digits, .npy headers, schemas, outputs) ---------
def _sparse(name: str, size_bytes: int) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        with open(tmp / name, "wb") as handle:
            handle.truncate(size_bytes)  # sparse on disk: nothing is written
    return make


def _npy_header(name: str, shape: tuple[int, ...]) -> Callable[[Path], None]:
    """A .npy file of only a header describing ``shape`` (float64): refused from the header."""
    def make(tmp: Path) -> None:
        with open(tmp / name, "wb") as handle:
            np.lib.format.write_array_header_1_0(handle, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return make


ROBUST_CASES: list[Case] = [
    Case("topo-json-nested-5000", "topo --from {fx}/deep.json", "nested more than 64 levels"),
    Case("map-traffic-nested-5000", "map {fx}/deep.json --preset hgx-h200-4", "nested more than 64 levels"),
    Case("report-run-nested-5000", "report {fx}/deep-object.json -o {tmp}/r.html", "nested more than 64 levels"),
    Case("launch-mapping-nested-5000", "launch --mapping {fx}/deep.json -- true", "nested more than 64 levels",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("topo-json-300mib", "topo --from {tmp}/big.json", "reads at most 256 MiB", setup=_sparse("big.json", 300 * 2**20)),
    Case("topo-xml-nested-100000", "topo --from {fx}/deep.xml", "nested more than 64 deep"),
    Case("topo-xml-2000-gpus", "topo --from {fx}/gpus-2000.xml", "more than 1024 GPUs"),
    Case("topo-xml-bitmap-huge", "topo --from {fx}/bitmap.xml", "hwloc bitmap"),
    Case("topo-nccl-xml-cpulist-huge", "topo --from {fx}/nccl-cpus.xml", "beyond the 65536 CPUs"),
    Case("topo-synthetic-superscript", "topo --synthetic nvswitch:²", "ASCII digits"),
    Case("topo-synthetic-arabic-digit", "topo --synthetic nvswitch:٣", "ASCII digits"),
    Case("topo-synthetic-cluster-superscript", "topo --synthetic cluster:k80-16:²", "ASCII digits"),
    Case("topo-synthetic-links-text", "topo --synthetic nvswitch:4:abc", "nvswitch LINKS"),
    Case("topo-synthetic-fattree-nan", "topo --synthetic fattree:2x8:64:nan", "NIC_GBIT"),
    Case("bench-sizes-arabic-digit", f"bench {SIM} --sizes ٤MiB", "not a size"),
    Case("nccl-iters-1e9", "bench nccl --backend sim -n 1000000000", "--iters", 2),
    Case("nccl-warmup-1e9", "bench nccl --backend sim -w 1000000000", "--warmup", 2),
    Case("nccl-runs-1e9", "bench nccl --backend sim --runs 1000000000", "--runs", 2),
    Case("mpi-iterations-1e9", "bench mpi --iterations 1000000000", "--iterations", 2),
    Case("stencil-runs-1e9", "bench stencil --backend sim --runs 1000000000", "--runs", 2),
    Case("p2p-iters-1e9", "bench p2p --mpi --iters 1000000000", "--iters", 2),
    Case("show-npy-3d-header-1e15", "traffic show {tmp}/cube.npy", "3-D", setup=_npy_header("cube.npy", (10**5,) * 3)),
    Case("show-npy-1d-3gib", "traffic show {tmp}/line.npy", "1-D", setup=_npy_header("line.npy", (3 * 2**30,))),
    Case("show-npy-truncated", "traffic show {tmp}/short.npy", "truncated", setup=_npy_header("short.npy", (64, 64))),
    Case("traffic-collectives-lots", "traffic show {fx}/t-collectives.json", "allreduce must be an object"),
    Case("traffic-hosts-newline", "traffic show {fx}/t-hosts.json", "one-word name"),
    Case("report-size-1e30", "report {fx}/run-1e30.json -o {tmp}/r.html", "size_bytes must be between"),
    Case("report-finding-escape", "report {fx}/run-escape.json -o {tmp}/r.html", "control character"),
    Case("report-png-direction-slash", "report {fx}/run-slash.json -o {tmp}/r.html --png {tmp}/png",
         "direction must be one of uni, bi"),
    Case("calibrate-negative-bandwidth", "model calibrate {fx}/run-negative.json", "median_gb_per_s must be between"),
    Case("check-status-unknown", "model check {fx}/run-status.json", "status must be one of"),
    Case("launch-mapping-device-newline", "launch --mapping {fx}/m-newline.json -- true", "one-word name",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("launch-mapping-nic-escape", "launch --mapping {fx}/m-nic-escape.json -- true", "one-word name",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("launch-mapping-metric-junk", "launch --mapping {fx}/m-metric.json -- true", "metric must be one of",
         env={"OMPI_COMM_WORLD_LOCAL_RANK": "0"}),
    Case("predict-fattree-all-to-all-budget", "model predict --synthetic fattree:128x8 --pattern all-to-all",
         "the budget is 2.0 GiB"),
    Case("bench-sim-fattree-matrix-budget", "bench --backend sim --synthetic fattree:128x8 --pattern all-to-all",
         "the budget is 2.0 GiB"),
    Case("bench-sizes-1tb-nothing-measured", f"bench {SIM} --sizes 1TB", "nothing was measured", 3),
    Case("topo-output-trailing-slash", "topo --preset hgx-h200-4 -o {tmp}/newdir/", "names a folder"),
    Case("bench-json-trailing-slash", f"bench {SIM} --sizes 1MiB --json {{tmp}}/newdir/", "names a folder"),
    Case("survey-output-trailing-slash", "survey --preset hgx-h200-4 -o {tmp}/newdir/", "names a folder"),
    Case("traffic-gen-output-trailing-slash", "traffic gen ring --ranks 4 --output={tmp}/newdir/", "names a folder"),
]
CASES.extend(ROBUST_CASES)


# ---- issue 40: every reader bounded (regular files, size caps, bounded archives), recordings and
# .npz arrays checked before use ------------------------------------------------------------------
def _dev_zero_link(name: str) -> Callable[[Path], None]:
    return lambda tmp: (tmp / name).symlink_to("/dev/zero")


def _tar_bomb(folder: str) -> Callable[[Path], None]:
    """A recording whose sysfs.tar.gz has a member header promising 2 GiB (a few KiB on disk)."""
    def make(tmp: Path) -> None:
        import gzip
        import tarfile

        (tmp / folder).mkdir()
        info = tarfile.TarInfo("bus/pci/devices/huge")
        info.size = 2 * 2**30
        (tmp / folder / "sysfs.tar.gz").write_bytes(gzip.compress(info.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 8192))
        (tmp / folder / "nvml.json").write_text('{"gpus": []}')
    return make


def _npz(name: str, fmt: bytes = b"csr", **arrays: object) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        import zipfile

        with zipfile.ZipFile(tmp / name, "w") as archive:
            for key, value in {"format": np.array(fmt), "shape": np.array([4, 4]), **arrays}.items():
                buffer = io.BytesIO()
                np.save(buffer, value)
                archive.writestr(f"{key}.npy", buffer.getvalue())
    return make


def _fifo_in(folder: str, name: str, files: dict[str, str] | None = None) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (tmp / folder).mkdir()
        for file, text in (files or {}).items():
            (tmp / folder / file).write_text(text)
        os.mkfifo(tmp / folder / name)
    return make


_IDX = np.array([1, 2, 3, 0])
_PTR = np.array([0, 1, 2, 3, 4])
BOUNDED_CASES: list[Case] = [
    Case("check-dev-zero", "check /dev/zero --preset dgx-h100", "is a device, not a regular file"),
    Case("check-fifo", "check {tmp}/out.txt --preset dgx-h100", "FIFO", setup=_fifo("out.txt")),
    Case("topo-health-run-dev-zero", "topo --health --from {tmp}/rec --run /dev/zero", "is a device",
         setup=_recording("rec", {"nvml.json": '{"gpus": []}'})),
    Case("topo-from-fifo", "topo --from {tmp}/t.json", "FIFO", setup=_fifo("t.json")),
    Case("traffic-show-npy-fifo", "traffic show {tmp}/t.npy", "FIFO", setup=_fifo("t.npy")),
    Case("traffic-show-npz-fifo", "traffic show {tmp}/t.npz", "FIFO", setup=_fifo("t.npz")),
    Case("traffic-show-edges-dev-zero", "traffic show {tmp}/t.edges", "is a device", setup=_dev_zero_link("t.edges")),
    Case("recording-nvml-dev-zero", "topo --from {tmp}/rec", "is a device",
         setup=lambda tmp: (_recording("rec", {})(tmp), _dev_zero_link("rec/nvml.json")(tmp))),
    Case("recording-nvml-fifo", "topo --health --from {tmp}/rec", "FIFO", setup=_fifo_in("rec", "nvml.json")),
    Case("recording-lspci-fifo", "topo --health --from {tmp}/rec", "FIFO",
         setup=_fifo_in("rec", "lspci.txt", {"nvml.json": '{"gpus": []}', "pcihealth.json": '{"devices": {}}'})),
    Case("recording-lspci-dev-zero", "topo --health --from {tmp}/rec", "is a device",
         setup=lambda tmp: (_recording("rec", {"nvml.json": '{"gpus": []}', "pcihealth.json": '{"devices": {}}'})(tmp),
                            _dev_zero_link("rec/lspci.txt")(tmp))),
    Case("recording-sysfs-tar-2gib", "topo --health --from {tmp}/rec", "expands to more than 256 MiB",
         setup=_tar_bomb("rec")),
    Case("recording-nvml-list", "topo --health --from {tmp}/rec", "must be an object",
         setup=_recording("rec", {"nvml.json": "[]"})),
    Case("recording-nvml-gpus-none", "topo --health --from {tmp}/rec", "gpus must be a list",
         setup=_recording("rec", {"nvml.json": '{"gpus": "none"}'})),
    Case("recording-nvml-index-text", "topo --from {tmp}/rec", "index must be a number",
         setup=_recording("rec", {"nvml.json": '{"gpus": [{"index": "abc", "pci_bus_id": "0000:01:00.0"}]}'})),
    Case("recording-pcihealth-list", "topo --health --from {tmp}/rec", "must be an object",
         setup=_recording("rec", {"nvml.json": '{"gpus": []}', "pcihealth.json": "[1]"})),
    Case("map-npz-indptr-bad", "map {tmp}/z_indptr_bad.npz --preset hgx-h200-4", "indptr must be offsets",
         setup=_npz("z_indptr_bad.npz", indptr=np.array([0, 5, 2, 9, 3]), indices=np.array([1, 2, 3]), data=np.ones(3))),
    Case("map-npz-negative-index", "map {tmp}/neg.npz --preset hgx-h200-4", "found -2",
         setup=_npz("neg.npz", indptr=_PTR, indices=np.array([1, -2, 3, 0]), data=np.ones(4) * 2**20)),
    Case("show-npz-index-out-of-range", "traffic show {tmp}/oor.npz", "found 7",
         setup=_npz("oor.npz", indptr=_PTR, indices=np.array([1, 7, 3, 0]), data=np.ones(4) * 2**20)),
    Case("show-npz-negative-bytes", "traffic show {tmp}/nb.npz", "negative byte count",
         setup=_npz("nb.npz", indptr=_PTR, indices=_IDX, data=-np.ones(4))),
    Case("show-npz-nan-bytes", "traffic show {tmp}/nan.npz", "non-finite",
         setup=_npz("nan.npz", indptr=_PTR, indices=_IDX, data=np.array([1.0, np.nan, 1, 1]))),
    Case("show-npz-values-short", "traffic show {tmp}/vs.npz", "but 3 values",
         setup=_npz("vs.npz", indptr=_PTR, indices=_IDX, data=np.ones(3))),
    Case("show-npz-coo-row-out-of-range", "traffic show {tmp}/coo.npz", "row must be ranks 0..3",
         setup=_npz("coo.npz", b"coo", row=np.array([0, 9]), col=np.array([1, 2]), data=np.ones(2))),
    Case("show-npz-dia", "traffic show {tmp}/dia.npz", "not read; save CSR",
         setup=_npz("dia.npz", b"dia", offsets=np.array([1]), data=np.ones((1, 4)))),
    # embedded topologies: one loader for every command that reads a run record
    Case("model-check-topology-string", "model check {fx}/run-topology-string.json", "topology embedded in the run record"),
    Case("check-record-topology-list", "check {fx}/run-topology-list.json", "topology embedded in the run record"),
    Case("report-topology-string", "report {fx}/run-topology-string.json -o {tmp}/r.html", "topology embedded"),
    Case("calibrate-topology-not-topology", "model calibrate {fx}/run-topology-empty.json", "topology embedded"),
    Case("topo-health-run-topology-string", "topo --health --from {tmp}/rec --run {fx}/run-topology-string.json",
         "topology embedded", setup=_recording("rec", {"nvml.json": '{"gpus": []}'})),
    # audit: its numbers, the launcher's status
    Case("audit-timeout-nan", "audit --preset dgx-h100 --timeout nan -- true", "--timeout nan"),
    Case("audit-timeout-negative", "audit --preset dgx-h100 --timeout -1 -- true", "--timeout -1"),
    Case("audit-timeout-inf", "audit --preset dgx-h100 --timeout inf -- true", "--timeout inf"),
    Case("audit-launcher-fails", "audit --preset dgx-h100 -- false", "the launcher exited with status 1"),
    Case("audit-dir-is-file", "audit --preset dgx-h100 --dir {fx}/file.txt -- true", "not a folder"),
    # the simulator's size guard
    Case("nccl-sim-1024-gpus-budget", "bench nccl --backend sim --synthetic fattree:128x8 --op allreduce --sizes 4MiB",
         "on 1,024 GPUs of fattree:128x8 would need about"),
]
CASES.extend(BOUNDED_CASES)


def _robust_fixtures(folder: Path) -> None:
    """Inputs of ROBUST_CASES: deep nesting, huge counts, hand-edited records and mappings."""
    depth = 5000
    (folder / "deep.json").write_text("[" * depth + "]" * depth)
    (folder / "deep-object.json").write_text('{"a":' * depth + "1" + "}" * depth)
    (folder / "deep.xml").write_text('<?xml version="1.0"?><topology version="2.0">' + '<object type="Group">' * 100000
                                     + "</object>" * 100000 + "</topology>")
    gpus = "".join(f'<object type="PCIDev" pci_busid="0000:{i // 256:02x}:{i % 256 // 8:02x}.{i % 8}" '
                   f'pci_type="0302 [10de:2330] [10de:16c1] a1"/>' for i in range(2000))
    (folder / "gpus-2000.xml").write_text(f'<?xml version="1.0"?><topology version="2.0"><object type="Machine">'
                                          f'{gpus}</object></topology>')
    words = ",".join(["0xffffffff"] * 100000)
    (folder / "bitmap.xml").write_text(f'<?xml version="1.0"?><topology version="2.0"><object type="Machine" '
                                       f'cpuset="{words}" nodeset="{words}"></object></topology>')
    (folder / "nccl-cpus.xml").write_text('<system version="1"><cpu numaid="0" affinity="0-99999999999" arch="x86_64">'
                                          "</cpu></system>")
    traffic = json.loads((folder / "t.json").read_text())
    (folder / "t-collectives.json").write_text(json.dumps({**traffic, "collectives": {"allreduce": "lots"}}))
    (folder / "t-hosts.json").write_text(json.dumps({**traffic, "hosts": ["node1\nrm -rf /"] * traffic["ranks"]}))
    run = json.loads((folder / "run.json").read_text())

    def run_variant(name: str, key: str, value: object) -> None:
        first = {**run["measurements"][0], key: value}
        (folder / name).write_text(json.dumps({**run, "measurements": [first, *run["measurements"][1:]]}))

    for name, value in {"run-topology-string.json": "hgx-h200-4", "run-topology-list.json": [1],
                        "run-topology-empty.json": {"devices": "x"}}.items():
        (folder / name).write_text(json.dumps({**run, "topology": value}))
    run_variant("run-1e30.json", "size_bytes", 1e30)
    run_variant("run-negative.json", "median_gb_per_s", -5.0)
    run_variant("run-slash.json", "direction", "../../etc")
    run_variant("run-status.json", "status", "fine")
    (folder / "run-escape.json").write_text(json.dumps({**run, "findings": ["\x1b[2J\x1b[31mall good"]}))
    mapping = json.loads((folder / "m.json").read_text())
    (folder / "m-newline.json").write_text(json.dumps({**mapping, "visible_device_of_rank": [
        "0\nLD_PRELOAD=/tmp/x.so"] * len(mapping["gpu_of_rank"])}))
    (folder / "m-metric.json").write_text(json.dumps({**mapping, "metric": "vibes"}))
    nic = json.loads((folder / "m-nic.json").read_text())
    (folder / "m-nic-escape.json").write_text(json.dumps({**nic, "nics_of_rank": [["mlx5_0\x1b]0;owned\x07"]]
                                                             * len(nic["gpu_of_rank"])}))


# ---- fixtures -------------------------------------------------------------------------------------

def _topology_variant(folder: Path, name: str, change: Callable[[dict], None]) -> None:
    data = topo_io.to_dict(load_preset("hgx-h200-4"))
    change(data)
    (folder / name).write_text(json.dumps(data))


def build_fixtures(folder: Path) -> None:
    """Every input file the table names (good ones to misuse, broken ones to refuse)."""
    folder.mkdir(parents=True, exist_ok=True)
    quiet = contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO())
    with quiet[0], quiet[1]:
        assert main(["traffic", "gen", "ring", "--ranks", "4", "-o", str(folder / "t.json")]) == 0
        assert main(["traffic", "gen", "ring", "--ranks", "16", "-o", str(folder / "t16.json")]) == 0
        assert main(["topo", "--preset", "hgx-h200-4", "-o", str(folder / "topo.json")]) == 0
        assert main(["map", str(folder / "t.json"), "--preset", "hgx-h200-4", "-o", str(folder / "m.json")]) == 0
        assert main(["map", str(folder / "t.json"), "--preset", "v100-4-nvlink-ib", "--nic", "mlx5_1",
                     "-o", str(folder / "m-nic.json")]) == 0
        for run in ("run.json", "run2.json"):
            assert main(["bench", "--backend", "sim", "--preset", "hgx-h200-4", "--sizes", "1MiB", "--reps", "3",
                         "--json", str(folder / run)]) == 0
    (folder / "folder").mkdir()
    (folder / "folder.json").mkdir()
    (folder / "file.txt").write_text("hello\n")
    (folder / "junk.edges").write_text("0 1 lots\n")
    (folder / "notzip.npz").write_text("not a zip")
    np.savez(folder / "dense.npz", a=np.ones((2, 2)))
    head = '"format": "linkscope.traffic", "schema_version": 1'
    (folder / "csr-indptr.json").write_text('{' + head + ', "ranks": 2, "bytes": {"indptr": [0, 2], "indices": [1], '
                                            '"data": [5]}}')
    (folder / "csr-noranks.json").write_text('{' + head + ', "bytes": {"indptr": [0, 1, 1], "indices": [1], '
                                             '"data": [5]}}')
    (folder / "empty.json").write_text("")
    (folder / "empty.csv").write_text("# nothing\n")
    (folder / "bad.json").write_text("{bad")
    (folder / "list.json").write_text("[]")
    (folder / "binary.json").write_bytes(bytes(range(256)))
    (folder / "script.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(folder / "script.sh", 0o644)
    run = json.loads((folder / "run.json").read_text())
    (folder / "run-v99.json").write_text(json.dumps({**run, "schema_version": 99}))
    (folder / "run-truncated.json").write_text((folder / "run.json").read_text()[:200])
    for name, change in {
        "topo-1e308.json": lambda d: d["links"][0].update(link_gb_per_s=1e308),
        "topo-zero.json": lambda d: d["links"][0].update(link_gb_per_s=0),
        "topo-count.json": lambda d: d["links"][0].update(count=100000),
        "topo-latency.json": lambda d: d["links"][0].update(latency_us=1e12),
        "topo-nan.json": lambda d: d["links"][0].update(link_gb_per_s=math.nan),
        "topo-neglat.json": lambda d: d["links"][0].update(latency_us=-1),
        "topo-mem.json": lambda d: next(x for x in d["devices"] if x["kind"] == "gpu").update(memory_bytes=-1),
        "topo-dangling.json": lambda d: d["links"][0].update(b="gpu99"),
        "topo-dup.json": lambda d: d["devices"].append(dict(d["devices"][0])),
        "topo-v99.json": lambda d: d.update(schema_version=99),
        "topo-nolinks.json": lambda d: d.pop("links"),
    }.items():
        _topology_variant(folder, name, change)
    traffic = json.loads((folder / "t.json").read_text())
    (folder / "t-nan.json").write_text(json.dumps({**traffic, "bytes": [[0, math.nan], [1, 0]], "ranks": 2,
                                                   "messages": None}))
    (folder / "t-strings.json").write_text(json.dumps({**traffic, "bytes": [["0", "1"], ["1", "0"]], "ranks": 2,
                                                       "messages": None}))
    (folder / "t-ranks.json").write_text(json.dumps({**traffic, "ranks": 5}))
    (folder / "nonsquare.csv").write_text("0,1\n1,0,2\n")
    (folder / "negative.csv").write_text("0,-1\n1,0\n")
    (folder / "text.csv").write_text("a,b\nc,d\n")
    (folder / "inf.csv").write_text("0,inf\n1,0\n")
    np.save(folder / "complex.npy", np.ones((4, 4)) * (1 + 1j))
    np.save(folder / "strings.npy", np.array([["1", "2"], ["3", "4"]]))
    np.save(folder / "bool.npy", np.ones((2, 2), dtype=bool))
    np.save(folder / "cube.npy", np.ones((2, 2, 2)))
    np.save(folder / "object.npy", np.array([[None, 1], [1, None]], dtype=object), allow_pickle=True)
    (folder / "fake.npy").write_text("not numpy\n")
    np.savez(folder / "archive.npz", a=np.ones((2, 2)))
    (folder / "archive.npz").rename(folder / "archive.npy")
    (folder / "pattern.json").write_text(json.dumps({"groups": [[[0, 1]]]}))
    (folder / "pattern-99.json").write_text(json.dumps({"groups": [[[0, 99]]]}))
    (folder / "pattern-end.json").write_text(json.dumps({"groups": [[["gpu0", 1]]]}))
    (folder / "pattern-size.json").write_text(json.dumps({"groups": [[[0, 1, "-5"]]]}))
    (folder / "pattern.csv").write_text("0;1\n")
    nvb = "nvbandwidth Version: v0.8\nRunning device_local_copy.\nmemcpy local GPU(column) bandwidth (GB/s)\n"
    p2p8 = (Path(__file__).resolve().parents[1] / "fixtures" / "peertools" / "p2p-h100x8-disabled-nccl1264.txt").read_text()
    nccl_head = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor)\n"
    for name, text in {"nvb.txt": nvb + "           0\n 0   1512.30\n", "nvb-ragged.txt": nvb + "   0   1\n 0  12.0\n",
                       "nvb-word.txt": nvb + "   0\n 0  fast\n", "nvb-huge.txt": nvb + "   0\n 0  1e9\n",
                       "nvb-gpu.txt": nvb + "   99999\n 0  1.0\n", "nvb-header.txt": "nvbandwidth Version: v0.8\n",
                       "bad-nvb.json": '{"nvbandwidth": {"testcases": 3}}', "bad-nccl.json": '{"results": [{"size": -1}]}',
                       "nccl-word.txt": nccl_head + "        8      2   float   sum   -1   1.0  x  y   0\n",
                       "nccl-short.txt": nccl_head + "        8      2   float   sum   -1   1.0  2.0  3.0\n",
                       "osu-empty.txt": "# OSU MPI Bandwidth Test v5.3\n12 34\n", "osu-headless.txt": "65536   7585.54\n",
                       "p2p-ragged.txt": "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D  0  1\n  0  1.0\n",
                       "tb-empty.txt": "TransferBench v1.52\n", "p2p8.txt": p2p8,
                       # two runs' lines alternating (#40); an OSU / nvbandwidth number cut at end of file (#40)
                       "nccl-interleaved.txt": "# Collective test starting: all_reduce_perf\n"
                                               "# Collective test starting: all_gather_perf\n" + nccl_head,
                       "osu-cut.txt": "# OSU MPI-CUDA Bandwidth Test v7.1\n# Size      Bandwidth (MB/s)\n4194304     135",
                       "nvb-cut.txt": nvb + "           0\n 0     39"}.items():
        (folder / name).write_text(text)
    for name, text in {"e-nan.txt": "0 nan\n", "e-wnan.txt": "0 1 nan\n", "e-wneg.txt": "0 1 -2\n",
                       "e-frac.txt": "0.5 1\n", "e-neg.txt": "-1 2\n", "e-junk.txt": "a b\n",
                       "e-four.txt": "0 1 2 3\n", "e-99.txt": "0 1\n1 99\n", "e-huge.txt": "0 1\n1 60000\n",
                       "e-ok.csv": "0,1\n1,2\n"}.items():
        (folder / name).write_text(text)
    _robust_fixtures(folder)


def _digest(folder: Path) -> dict[str, str]:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="session")
def master_fixtures(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bad-input-fixtures") / "fx"
    build_fixtures(folder)
    return folder


@pytest.fixture(scope="session")
def master_digest(master_fixtures: Path) -> Iterator[dict[str, str]]:
    """The fixtures' digest, taken once (5.6 MB hashed: 7 ms a row when each row took it again). Rows
    run on a copy; at the end of the session the master itself must still be as it was."""
    digest = _digest(master_fixtures)
    yield digest
    assert _digest(master_fixtures) == digest, "a row changed the master fixtures, not only its copy"


def _copy(src: str, dst: str) -> None:
    """A fixture into a row's copy: the few large inputs (the 2.2-3 MB XML files, 92% of the bytes)
    are hard links, not copies (436 rows wrote 2.4 GB otherwise, and waited on the disk). The row's
    digest still reads every one, so a command that wrote into one still fails its row (and the
    master's check at the end of the session)."""
    if os.path.getsize(src) > 1 << 20:
        try:
            os.link(src, dst)
            return
        except OSError:  # a file system without hard links: copy
            pass
    shutil.copy2(src, dst)


def run_case(case: Case, fx_master: Path, work: Path) -> tuple[int, str, str]:
    """Run one row in ``work`` (``work/fx`` a copy of the fixtures, ``work/tmp`` empty); returns
    (exit code, stdout, stderr)."""
    fx, tmp = work / "fx", work / "tmp"
    shutil.copytree(fx_master, fx, symlinks=True, copy_function=_copy)
    tmp.mkdir()
    if case.setup is not None:
        case.setup(tmp)
    argv = [word.format(fx=fx, tmp=tmp) for word in shlex.split(case.argv)]
    saved = {k: os.environ.get(k) for k in case.env}
    os.environ.update(case.env)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, master_fixtures: Path, master_digest: dict[str, str], tmp_path: Path) -> None:
    code, _, err = run_case(case, master_fixtures, tmp_path)
    assert "Traceback" not in err, err
    assert code != 0, err
    if case.code is not None:
        assert code == case.code, err
    lines = err.splitlines()
    errors = [line for line in lines if line.startswith("linkscope: error: ")]
    assert len(errors) == 1, err
    assert all(line.startswith(("linkscope: error: ", "note: ")) for line in lines), err
    assert case.needle in errors[0], err
    assert _digest(tmp_path / "fx") == master_digest, "an input file was changed"
    leftovers = [p for p in tmp_path.rglob(".linkscope-*")]
    assert not leftovers, leftovers


def test_the_table_is_large_and_unique() -> None:
    assert len(CASES) >= 150
    assert len({c.id for c in CASES}) == len(CASES)


def markdown() -> str:
    """docs/bad-inputs.md: every row with its exit code and error line (run from the repo root)."""
    lines = ["# Bad inputs and what linkscope answers", "",
             "Generated from tests/cli/test_bad_input_table.py "
             "(`PYTHONPATH=src python tests/cli/test_bad_input_table.py > docs/bad-inputs.md`).",
             "`{fx}` is a folder of fixture files (good ones misused, broken variants), `{tmp}` an empty folder.",
             "Every row exits non-zero with one `linkscope: error:` line and no traceback.", "",
             "| # | case | command | exit | error line |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as base:
        master = Path(base) / "fx"
        build_fixtures(master)
        for number, case in enumerate(CASES, start=1):
            work = Path(base) / f"case{number}"
            work.mkdir()
            code, _, err = run_case(case, master, work)
            line = next((x for x in err.splitlines() if x.startswith("linkscope: error: ")), err.strip())
            line = line.replace(str(work), "").replace("linkscope: error: ", "").replace("|", "\\|")
            env = " ".join(f"{k}={v}" for k, v in case.env.items())
            command = (f"{env} " if env else "") + "linkscope " + case.argv.replace(LONG, "x" * 8 + "…(300)")
            lines.append(f"| {number} | {case.id} | `{command.replace('|', '¦')}` | {code} | {line} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
